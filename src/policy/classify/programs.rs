//! What each program does with its arguments: which wrappers to look through, which programs
//! only read (and with which options they stop being read-only), which write, delete, talk to
//! the network or run code. Programs not named here are `moderate`.

use std::borrow::Cow;
use std::path::Path;

use crate::protocol::Risk::{Dangerous, Moderate};

use super::catastrophic;
use super::paths::{Cwds, Jail, Place};
use super::sed;
use super::tables::{
    Changer, FOLLOWS, INTERPRETERS, NETWORK, QUIET, RUNNERS, Reader, SHELLS, changer_of,
    controller, judged_by_name, package_manager, reader, sensitive_var,
};
use super::words::{Word, WordBuilder};
use super::{Acc, Analyzer, Io};

/// Programs that read `@FILE` as a file of arguments (binutils).
const RESPONSE_FILES: &[&str] = &[
    "strings",
    "nm",
    "objdump",
    "readelf",
    "size",
    "addr2line",
    "c++filt",
    "ar",
    "objcopy",
];

/// rustup's proxies: which binary they run is chosen by a `rust-toolchain` file.
const RUSTUP_PROXIES: &[&str] = &[
    "cargo",
    "rustc",
    "rustup",
    "rustdoc",
    "rustfmt",
    "cargo-fmt",
    "cargo-clippy",
    "clippy-driver",
    "rust-analyzer",
    "rust-gdb",
    "rust-lldb",
];

/// The program name and whether it was given with a path (`./ls`, `/bin/ls`).
pub(crate) fn program_name(text: &str) -> (&str, bool) {
    match text.rfind('/') {
        Some(i) if i + 1 < text.len() => (&text[i + 1..], true),
        Some(_) => (text, true),
        None => (text, false),
    }
}

/// `--long` given as `name` matches `full`, allowing GNU-style unambiguous abbreviations.
fn long_is(name: &str, full: &str) -> bool {
    name == full || (full.starts_with("--") && name.len() >= 4 && full.starts_with(name))
}

pub(super) fn opt_is(name: &str, full: &str) -> bool {
    if full.starts_with("--") {
        long_is(name, full)
    } else {
        name == full
    }
}

/// Why writing `shown` (inside the root) touches a protected path (DESIGN §4), if it does.
pub(crate) fn protected(jail: &Jail, shown: &str) -> Option<&'static str> {
    let p = Path::new(shown);
    let rel = p
        .strip_prefix(&jail.root)
        .ok()
        .or_else(|| {
            jail.root_real
                .as_deref()
                .and_then(|r| p.strip_prefix(r).ok())
        })
        .unwrap_or(p);
    // The one matcher the jail uses too (crate::protect); own state and run-later files
    // outside projects are judged by the engine on the resolved path.
    crate::protect::project_protected(rel)
        .then_some("a protected path that can make code run later")
}

/// Options and operands of a command, GNU style (options may follow operands until `--`).
pub(super) struct Parsed<'w> {
    pub(super) opts: Vec<(Cow<'w, str>, Option<Cow<'w, Word>>)>,
    pub(super) pos: Vec<&'w Word>,
}

/// `-c` for a short option letter; borrowed for ASCII letters and digits (options are parsed
/// for every command classified).
fn short_name(c: char) -> Cow<'static, str> {
    const NAMES: &str = "-0-1-2-3-4-5-6-7-8-9-A-B-C-D-E-F-G-H-I-J-K-L-M-N-O-P-Q-R-S-T-U-V-W-X-Y-Z\
                         -a-b-c-d-e-f-g-h-i-j-k-l-m-n-o-p-q-r-s-t-u-v-w-x-y-z";
    let index = match c {
        '0'..='9' => Some(c as usize - '0' as usize),
        'A'..='Z' => Some(10 + c as usize - 'A' as usize),
        'a'..='z' => Some(36 + c as usize - 'a' as usize),
        _ => None,
    };
    match index {
        Some(i) => Cow::Borrowed(&NAMES[2 * i..2 * i + 2]),
        None => Cow::Owned(format!("-{c}")),
    }
}

impl Parsed<'_> {
    fn has(&self, full: &str) -> bool {
        self.opts.iter().any(|(n, _)| opt_is(n, full))
    }
}

/// The part of `w` from byte `from` on, keeping it dynamic if `w` was.
fn tail_word(w: &Word, from: usize) -> Word {
    let text = w.text.get(from..).unwrap_or("");
    if w.dynamic {
        let mut b = WordBuilder::default();
        b.push_dynamic(text, None);
        b.finish()
    } else {
        Word {
            text: text.to_owned(),
            glob: w.glob && super::paths::is_glob(text),
            ..Word::default()
        }
    }
}

pub(super) fn parse_args<'w>(args: &'w [Word], val_short: &str, val_long: &[&str]) -> Parsed<'w> {
    let mut p = Parsed {
        opts: Vec::new(),
        pos: Vec::new(),
    };
    let mut i = 0;
    let mut ended = false;
    while i < args.len() {
        let w = &args[i];
        let t = w.text.as_str();
        i += 1;
        if ended || !w.is_option() {
            p.pos.push(w);
            continue;
        }
        if t == "--" {
            ended = true;
            continue;
        }
        if t.starts_with("--") {
            if let Some((name, _)) = t.split_once('=') {
                p.opts.push((
                    Cow::Borrowed(name),
                    Some(Cow::Owned(tail_word(w, name.len() + 1))),
                ));
            } else if val_long.iter().any(|l| long_is(t, l)) {
                p.opts
                    .push((Cow::Borrowed(t), args.get(i).map(Cow::Borrowed)));
                i += 1;
            } else {
                p.opts.push((Cow::Borrowed(t), None));
            }
            continue;
        }
        for (k, c) in t.char_indices().skip(1) {
            if val_short.contains(c) {
                let rest = k + c.len_utf8();
                if rest < t.len() {
                    p.opts
                        .push((short_name(c), Some(Cow::Owned(tail_word(w, rest)))));
                } else {
                    p.opts.push((short_name(c), args.get(i).map(Cow::Borrowed)));
                    i += 1;
                }
                break;
            }
            p.opts.push((short_name(c), None));
        }
    }
    p
}

/// Skips a wrapper's own options (they come before its command); returns the index of the
/// first operand.
fn skip_opts(args: &[Word], val_short: &str, val_long: &[&str]) -> usize {
    let mut j = 0;
    while j < args.len() {
        let t = args[j].text.as_str();
        if t == "--" {
            return j + 1;
        }
        if !args[j].is_option() {
            return j;
        }
        if t.starts_with("--") {
            j += if !t.contains('=') && val_long.contains(&t) {
                2
            } else {
                1
            };
            continue;
        }
        let cl = &t[1..];
        let mut next = false;
        for (k, c) in cl.char_indices() {
            if val_short.contains(c) {
                next = k + c.len_utf8() == cl.len();
                break;
            }
        }
        j += if next { 2 } else { 1 };
    }
    j.min(args.len())
}

/// A word that looks like a path: has a slash, starts with `~` or `.`, or starts with `$HOME`.
fn path_like(w: &Word) -> bool {
    let t = w.text.as_str();
    t.contains('/')
        || t.starts_with('~')
        || t.starts_with('.')
        || w.after_lead_var().is_some_and(|(n, _)| n == "HOME")
}

/// What a wrapper did.
enum Wrapped {
    /// The wrapped command starts this many words after the wrapper's name.
    Inner(usize),
    /// The wrapper runs nothing further (or ran a script we already analysed).
    Done,
    /// Not a wrapper.
    No,
}

impl Analyzer {
    /// Strips wrappers and judges the program that really runs; returns its index in `words`.
    pub(crate) fn command(&mut self, acc: &mut Acc, words: &[Word], io: &Io, depth: u32) -> usize {
        let mut i = 0;
        while let Some(w) = words.get(i) {
            // Reserved words tree-sitter sometimes leaves inside a command (`time { rm x; }`):
            // look past them at what follows.
            if matches!(
                w.text.as_str(),
                "{" | "}" | "(" | ")" | "!" | "then" | "do" | "else" | "fi" | "done" | "esac"
            ) && !w.dynamic
            {
                i += 1;
                continue;
            }
            if w.dynamic || w.glob || w.text.contains('{') {
                acc.raise(
                    Dangerous,
                    format!(
                        "the program `{}` is only known when the command runs",
                        w.text
                    ),
                );
                return i;
            }
            let (name, qualified) = program_name(&w.text);
            if qualified {
                acc.raise(
                    Moderate,
                    format!(
                        "runs {} by its path; only programs found on PATH are trusted by name",
                        w.text
                    ),
                );
            }
            match self.wrapper(acc, name, &words[i + 1..], io, depth) {
                Wrapped::Inner(skip) => {
                    if i + 1 + skip >= words.len() {
                        return i;
                    }
                    i += 1 + skip;
                }
                Wrapped::Done => return i,
                Wrapped::No => {
                    self.program(acc, name, &words[i + 1..], io, depth);
                    return i;
                }
            }
        }
        i
    }

    fn wrapper(
        &mut self,
        acc: &mut Acc,
        name: &str,
        args: &[Word],
        io: &Io,
        depth: u32,
    ) -> Wrapped {
        let inner = |j: usize| {
            if j < args.len() {
                Wrapped::Inner(j)
            } else {
                Wrapped::Done
            }
        };
        match name {
            "env" => self.env(acc, args, depth),
            "timeout" => {
                let j = skip_opts(args, "sk", &["--signal", "--kill-after"]);
                inner(j + 1)
            }
            "nice" => inner(skip_opts(args, "n", &["--adjustment"])),
            "nohup" => {
                if !args.is_empty() {
                    acc.raise(
                        Moderate,
                        "nohup keeps the program running after the call ends",
                    );
                }
                inner(skip_opts(args, "", &[]))
            }
            "setsid" => {
                acc.raise(
                    Moderate,
                    format!("{name} detaches the program from this call"),
                );
                inner(skip_opts(args, "", &[]))
            }
            "coproc" => {
                acc.raise(Moderate, "coproc runs the command in the background");
                inner(0)
            }
            "time" => {
                let p = parse_args(
                    &args[..skip_opts(args, "fo", &["--format", "--output"])],
                    "fo",
                    &["--format", "--output"],
                );
                for (n, v) in &p.opts {
                    if let (true, Some(v)) = (opt_is(n, "-o") || opt_is(n, "--output"), v) {
                        self.write_path(acc, v);
                    }
                }
                inner(skip_opts(args, "fo", &["--format", "--output"]))
            }
            "command" => {
                if args
                    .iter()
                    .take_while(|a| a.is_option())
                    .any(|a| a.text.contains('v') || a.text.contains('V'))
                {
                    return Wrapped::Done;
                }
                inner(skip_opts(args, "", &[]))
            }
            "builtin" | "busybox" | "toybox" => inner(0),
            "exec" => {
                let j = skip_opts(args, "a", &[]);
                if j < args.len() {
                    acc.raise(Moderate, "exec replaces the shell with another program");
                }
                inner(j)
            }
            "stdbuf" => inner(skip_opts(args, "ioe", &[])),
            "ionice" => {
                if args.iter().any(|a| {
                    a.is_option()
                        && (a.text.contains('p') || a.text.contains('P') || a.text.contains('u'))
                }) {
                    return Wrapped::Done;
                }
                inner(skip_opts(args, "cn", &[]))
            }
            "chroot" => {
                acc.raise(
                    Dangerous,
                    "chroot runs a program with another root directory",
                );
                let j = skip_opts(args, "", &["--userspec", "--groups"]);
                if let Some(dir) = args.get(j) {
                    self.read_path(acc, dir);
                }
                inner(j + 1)
            }
            "xargs" => {
                acc.raise(
                    Moderate,
                    "xargs runs a command with arguments read from its input, which cannot be checked",
                );
                let j = skip_opts(
                    args,
                    "IELnPsda",
                    &[
                        "--arg-file",
                        "--delimiter",
                        "--max-args",
                        "--max-procs",
                        "--max-chars",
                        "--process-slot-var",
                    ],
                );
                let p = parse_args(&args[..j.min(args.len())], "IELnPsda", &["--arg-file"]);
                for (n, v) in &p.opts {
                    if let (true, Some(v)) = (opt_is(n, "-a") || opt_is(n, "--arg-file"), v) {
                        self.read_path(acc, v);
                    }
                }
                // `echo / | xargs rm -rf`: judge the command with the arguments it will get.
                if let (Some(input), true) = (&io.stdin_script, j < args.len()) {
                    let mut words = args[j..].to_vec();
                    words.extend(input.split_whitespace().take(64).map(Word::literal));
                    self.nested(words, depth);
                }
                inner(j)
            }
            "sudo" | "doas" | "pkexec" | "run0" => {
                acc.raise(
                    Dangerous,
                    format!("{name} runs the command as another user, usually root"),
                );
                let mut j = skip_opts(
                    args,
                    "ugCDhpRrtTUc",
                    &[
                        "--user",
                        "--group",
                        "--close-from",
                        "--chdir",
                        "--host",
                        "--prompt",
                        "--chroot",
                        "--role",
                        "--type",
                        "--other-user",
                        "--command-timeout",
                    ],
                );
                while args.get(j).is_some_and(|a| is_assignment(&a.text)) {
                    if let Some((n, v)) = args[j].text.split_once('=') {
                        if let Some(why) = sensitive_var(n, v) {
                            acc.raise(Moderate, format!("sets {n}, {why}"));
                        }
                    }
                    j += 1;
                }
                inner(j)
            }
            "su" => {
                acc.raise(Dangerous, "su runs commands as another user");
                let p = parse_args(
                    args,
                    "csgGw",
                    &[
                        "--command",
                        "--shell",
                        "--group",
                        "--supp-group",
                        "--whitelist-environment",
                    ],
                );
                for (n, v) in &p.opts {
                    if let (true, Some(v)) = (n == "-c" || long_is(n, "--command"), v) {
                        let script = v.text.clone();
                        self.script(&script, depth + 1);
                    }
                }
                Wrapped::Done
            }
            "watch" => {
                acc.raise(Moderate, "watch runs a command again and again");
                let j = skip_opts(args, "nq", &["--interval"]);
                let exec = args[..j.min(args.len())].iter().any(|a| {
                    a.text == "-x"
                        || a.text == "--exec"
                        || (a.is_option() && !a.text.starts_with("--") && a.text.contains('x'))
                });
                if exec {
                    return inner(j);
                }
                let script = join_words(&args[j.min(args.len())..]);
                if !script.is_empty() {
                    self.script(&script, depth + 1);
                }
                Wrapped::Done
            }
            _ => Wrapped::No,
        }
    }

    fn env(&mut self, acc: &mut Acc, args: &[Word], depth: u32) -> Wrapped {
        let mut j = 0;
        let mut split: Option<Word> = None;
        while j < args.len() {
            let w = &args[j];
            let t = w.text.as_str();
            if t == "--" {
                j += 1;
                break;
            }
            if t == "-" {
                j += 1;
                continue;
            }
            if !w.is_option() {
                break;
            }
            let (opt, glued) =
                if let Some((n, _)) = t.split_once('=').filter(|_| t.starts_with("--")) {
                    (n, Some(tail_word(w, n.len() + 1)))
                } else if !t.starts_with("--")
                    && t.len() > 2
                    && matches!(t.get(1..2), Some("u" | "C" | "S"))
                {
                    (&t[..2], Some(tail_word(w, 2)))
                } else {
                    (t, None)
                };
            let takes = matches!(opt, "-u" | "-C" | "-S")
                || long_is(opt, "--unset")
                || long_is(opt, "--chdir")
                || long_is(opt, "--split-string");
            let value = if takes {
                match glued {
                    Some(v) => Some(v),
                    None => {
                        j += 1;
                        args.get(j).cloned()
                    }
                }
            } else {
                None
            };
            if let Some(v) = value {
                if opt == "-C" || long_is(opt, "--chdir") {
                    let cwds = self.chdir(acc, &v);
                    acc.cwds = Some(cwds);
                } else if opt == "-S" || long_is(opt, "--split-string") {
                    split = Some(v);
                }
            }
            j += 1;
        }
        while args.get(j).is_some_and(|a| is_assignment(&a.text)) {
            if let Some((n, v)) = args[j].text.split_once('=') {
                if let Some(why) = sensitive_var(n, v) {
                    acc.raise(Moderate, format!("sets {n}, {why}"));
                }
            }
            j += 1;
        }
        if let Some(s) = split {
            acc.raise(Moderate, "env -S runs a command line split from a string");
            let mut script = s.text.clone();
            let rest = join_words(&args[j.min(args.len())..]);
            if !rest.is_empty() {
                script.push(' ');
                script.push_str(&rest);
            }
            self.script(&script, depth + 1);
            return Wrapped::Done;
        }
        if j >= args.len() {
            acc.raise(
                Moderate,
                "env prints every environment variable, which may hold secrets, into the chat",
            );
            return Wrapped::Done;
        }
        acc.raise(Moderate, "env runs a program with a changed environment");
        Wrapped::Inner(j)
    }

    /// The working directories after changing to `dir` (for one command or for the rest).
    /// Directories outside the root are kept, so later relative paths are judged where they
    /// really point (`cd ~ && rm -rf *`).
    fn chdir(&self, acc: &mut Acc, dir: &Word) -> Cwds {
        let base = self.cwds_for(acc).clone();
        let loc = self.jail.locate(dir, &base);
        if loc.place != Place::Harmless && !acc.paths.contains(&loc.shown) {
            acc.paths.push(loc.shown.clone());
        }
        if loc.place != Place::Inside {
            acc.raise(
                Moderate,
                format!("changes to {}, outside the sandbox root", loc.shown),
            );
        }
        match self.jail.candidates(dir, &base) {
            Some(c) => Cwds {
                dirs: c.into_iter().map(|(n, _)| n).collect(),
                unknown: false,
            },
            None => Cwds {
                dirs: Vec::new(),
                unknown: true,
            },
        }
    }

    /// Judges one program (wrappers already stripped).
    fn program(&mut self, acc: &mut Acc, name: &str, args: &[Word], io: &Io, depth: u32) {
        if catastrophic::has_catastrophic_form(name) {
            if let Some(why) =
                catastrophic::check(&self.jail, self.cwds_for(acc), &self.vars, name, args)
            {
                acc.doom(why);
            }
        }
        if RUSTUP_PROXIES.contains(&name)
            && self.config_file_here(acc, &["rust-toolchain", "rust-toolchain.toml"])
        {
            acc.raise(
                Moderate,
                "a rust-toolchain file here chooses which cargo and rustc run, and it can name \
                 any folder",
            );
        }
        if name == "yarn" && self.config_file_here(acc, &[".yarnrc", ".yarnrc.yml"]) {
            acc.raise(
                Moderate,
                "a .yarnrc here can name the script yarn runs (yarnPath) for every command",
            );
        }
        if args.len() == 1
            && matches!(args[0].text.as_str(), "--version" | "-V" | "-v" | "version")
            && io.stdin_script.is_none()
            && !io.piped_stdin
            && versioned(name)
        {
            return;
        }
        if let Some(r) = reader(name) {
            // xxd takes long options after one dash (`-cols 16`): spell them as the short
            // ones the table knows, so the output file is still the second operand.
            let xxd;
            let args = if name == "xxd" {
                xxd = xxd_args(args);
                &xxd[..]
            } else {
                args
            };
            self.reader(acc, name, &r, args);
            return;
        }
        if QUIET.contains(&name) {
            return;
        }
        if SHELLS.contains(&name) {
            self.shell(acc, name, args, io, depth);
            return;
        }
        if INTERPRETERS.contains(&name) || name.starts_with("python") {
            self.interpreter(acc, name, args);
            return;
        }
        if RUNNERS.contains(&name) {
            acc.raise(
                Moderate,
                format!("{name} runs project code (builds, tests, scripts) the agent can edit"),
            );
            self.loose_paths(acc, args);
            return;
        }
        if let Some(by_name) = judged_by_name(name) {
            acc.raise(by_name.risk, by_name.why.replace("{name}", name));
            if by_name.reads_paths {
                self.loose_paths(acc, args);
            }
            return;
        }
        if let Some(c) = changer_of(name) {
            self.change(acc, name, &c, args);
            return;
        }
        if let Some(c) = controller(name) {
            let sub = args
                .iter()
                .find(|a| !a.is_option())
                .map_or("", |a| a.text.as_str());
            let looks = c.looks.iter().any(|l| match l.strip_suffix('*') {
                Some(prefix) => sub.starts_with(prefix),
                None => sub == *l,
            });
            let (risk, why) = if looks {
                (Moderate, c.looks_why)
            } else {
                (Dangerous, c.changes_why)
            };
            acc.raise(risk, why.replace("{name}", name).replace("{sub}", sub));
            return;
        }
        if NETWORK.contains(&name) {
            acc.raise(
                Dangerous,
                format!("{name} talks to the network: it can upload files or download code"),
            );
            self.transfer(acc, name, args);
            return;
        }
        if self.builtin(acc, name, args, io, depth) {
            return;
        }
        match name {
            "date" => {
                let p = parse_args(args, "dfrsI", &["--date", "--file", "--reference", "--set"]);
                for (n, v) in &p.opts {
                    let Some(v) = v else { continue };
                    if opt_is(n, "-s") || long_is(n, "--set") {
                        acc.raise(Moderate, "date -s sets the system clock");
                    } else if n == "-f"
                        || n == "-r"
                        || long_is(n, "--file")
                        || long_is(n, "--reference")
                    {
                        self.read_path(acc, v);
                    }
                }
                if p.pos.iter().any(|w| !w.text.starts_with('+')) {
                    acc.raise(Moderate, "date with a time operand sets the system clock");
                }
            }
            "hostname" => {
                if args
                    .iter()
                    .any(|a| !a.is_option() || a.text == "-F" || a.text.starts_with("--file"))
                {
                    acc.raise(Moderate, "hostname with an argument sets the host name");
                }
            }
            "ps" => {
                if args
                    .iter()
                    .any(|a| !a.text.starts_with('-') && a.text.contains('e'))
                {
                    acc.raise(
                        Moderate,
                        "ps e shows the environment of processes, which may hold secrets",
                    );
                }
            }
            "cd" | "pushd" => self.cd(acc, name, args),
            "test" | "[" => self.test_paths(acc, args),
            "jq" | "gojq" | "jaq" => self.jq(acc, args),
            "sed" | "gsed" => self.sed(acc, args, depth),
            "find" | "gfind" => self.find(acc, args, depth),
            "git" => self.git(acc, args),
            "cp" | "install" => self.copy(acc, name, args),
            "ln" => self.link(acc, args),
            "dd" => {
                acc.raise(Dangerous, "dd copies raw data and can overwrite disks");
                for a in args {
                    if let Some(v) = a.text.strip_prefix("if=") {
                        self.read_path(acc, &tail_word(a, a.text.len() - v.len()));
                    } else if let Some(v) = a.text.strip_prefix("of=") {
                        self.write_path(acc, &tail_word(a, a.text.len() - v.len()));
                    }
                }
            }
            n if n.starts_with("mkfs") => acc.raise(Dangerous, format!("{name} formats a disk")),
            "crontab" => {
                if args.len() == 1 && args[0].text == "-l" {
                    acc.raise(Moderate, "crontab -l prints your scheduled jobs");
                } else {
                    acc.raise(Dangerous, "crontab changes your scheduled jobs");
                }
            }
            "tar" | "gtar" | "bsdtar" => self.tar(acc, args),
            "unzip" => {
                acc.raise(Moderate, "unzip writes the files of an archive");
                let p = parse_args(args, "dxP", &[]);
                self.opt_paths(acc, &p, &[], &["-d"]);
                if let Some(archive) = p.pos.first() {
                    self.read_path(acc, archive);
                }
            }
            "cargo" => self.cargo(acc, args),
            "go" => self.go(acc, args),
            _ if self.package(acc, name, args) => {}
            _ => self.unknown(acc, name, args, depth),
        }
    }

    /// A program we know nothing about: moderate, and if its arguments contain a dangerous
    /// program it may be a wrapper we do not know (`strace rm -rf /`), so that is judged too.
    fn unknown(&mut self, acc: &mut Acc, name: &str, args: &[Word], depth: u32) {
        acc.raise(
            Moderate,
            format!("{name} is not a program ground-link knows; it may do anything"),
        );
        self.loose_paths(acc, args);
        if let Some(k) = args
            .iter()
            .position(|w| !w.is_option() && !w.dynamic && notable(program_name(&w.text).0))
        {
            self.nested(args[k..].to_vec(), depth);
        }
    }

    /// Records path-looking arguments and `--opt=value` values as reads.
    fn loose_paths(&self, acc: &mut Acc, args: &[Word]) {
        for w in args {
            if w.is_option() {
                if let Some((n, _)) = w.text.split_once('=') {
                    let v = tail_word(w, n.len() + 1);
                    if path_like(&v) {
                        self.read_path(acc, &v);
                    }
                }
            } else if path_like(w) {
                self.read_path(acc, w);
            }
        }
    }

    fn writes(&self, acc: &mut Acc, targets: &[&Word]) {
        for t in targets {
            self.write_path(acc, t);
        }
    }

    /// A program from the changers' table: its own risk first, then the paths it reads and
    /// writes.
    fn change(&self, acc: &mut Acc, name: &str, c: &Changer, args: &[Word]) {
        if let Some((risk, why)) = c.risk {
            acc.raise(risk, why.replace("{name}", name));
        }
        let p = parse_args(args, c.val_short, c.val_long);
        self.opt_paths(acc, &p, c.reads, c.writes);
        let skip = c
            .mode_first
            .is_some_and(|given_by| !given_by.iter().any(|o| p.has(o)));
        self.writes(acc, &p.pos[usize::from(skip).min(p.pos.len())..]);
    }

    /// Reads and writes named by option values.
    fn opt_paths(&self, acc: &mut Acc, p: &Parsed, reads: &[&str], writes: &[&str]) {
        for (n, v) in &p.opts {
            let Some(v) = v else { continue };
            if reads.iter().any(|r| opt_is(n, r)) {
                self.read_path(acc, v);
            } else if writes.iter().any(|r| opt_is(n, r)) {
                self.write_path(acc, v);
            }
        }
    }

    fn reader(&mut self, acc: &mut Acc, name: &str, r: &Reader, args: &[Word]) {
        let p = parse_args(args, r.val_short, r.val_long);
        for (n, v) in &p.opts {
            if let Some((_, why)) = r.unsafe_opts.iter().find(|(o, _)| opt_is(n, o)) {
                acc.raise(Moderate, *why);
            }
            // GNU long options take any unambiguous prefix.
            if n.len() >= 5 && "--files0-from".starts_with(n.as_ref()) {
                acc.raise(
                    Moderate,
                    format!(
                        "{name} --files0-from reads the files a list names, known only when it runs"
                    ),
                );
            }
            let Some(v) = v else { continue };
            if r.reads.iter().any(|o| opt_is(n, o)) {
                self.read_path(acc, v);
            } else if r.writes.iter().any(|o| opt_is(n, o)) {
                self.write_path(acc, v);
            } else if n.starts_with("--") && path_like(v) {
                self.read_path(acc, v);
            }
        }
        let skip = match r.pattern_first {
            Some(given) if !given.iter().any(|g| p.has(g)) => 1,
            _ => 0,
        };
        for (k, w) in p.pos.iter().enumerate().skip(skip) {
            // binutils read `@FILE` as more arguments, and echo its lines in their errors.
            if RESPONSE_FILES.contains(&name) && w.text.starts_with('@') {
                self.read_path(acc, &tail_word(w, 1));
                continue;
            }
            if r.plus_runs && w.text.starts_with('+') {
                acc.raise(Moderate, format!("{name} +command runs a pager command"));
                continue;
            }
            if r.second_writes && k == skip + 1 {
                self.write_path(acc, w);
            } else {
                self.read_path(acc, w);
            }
        }
    }

    /// `[ -f path ]`: file tests only look at metadata, so only static paths outside count.
    fn test_paths(&self, acc: &mut Acc, args: &[Word]) {
        const UNARY: &[&str] = &[
            "-e", "-f", "-d", "-r", "-w", "-x", "-s", "-L", "-h", "-b", "-c", "-p", "-S", "-O",
            "-G", "-N", "-k", "-u", "-g", "-a",
        ];
        for (i, a) in args.iter().enumerate() {
            let t = a.text.as_str();
            let mut targets: Vec<&Word> = Vec::new();
            if UNARY.contains(&t) {
                targets.extend(args.get(i + 1));
            } else if matches!(t, "-nt" | "-ot" | "-ef") {
                targets.extend(args.get(i + 1));
                if i > 0 {
                    targets.push(&args[i - 1]);
                }
            }
            for w in targets {
                if w.text == "]" || w.dynamic {
                    continue;
                }
                let loc = self.jail.locate(w, self.cwds_for(acc));
                if matches!(loc.place, Place::Outside { .. }) {
                    acc.paths.push(loc.shown.clone());
                    acc.raise(
                        Moderate,
                        format!("looks at {} outside the sandbox root", loc.shown),
                    );
                }
            }
        }
    }

    fn cd(&mut self, acc: &mut Acc, name: &str, args: &[Word]) {
        let target = args.iter().find(|w| !w.is_option() || w.text == "-");
        match target {
            None if name == "pushd" => {}
            None => {
                self.cwds.unknown = true;
                acc.raise(
                    Moderate,
                    "cd without a directory goes to the home directory, outside the sandbox root",
                );
            }
            Some(w) if w.text == "-" => {
                self.cwds.unknown = true;
                acc.raise(
                    Moderate,
                    "cd - goes back to a directory that cannot be checked",
                );
            }
            Some(w) if name == "pushd" && (w.text.starts_with('+') || w.text.starts_with('-')) => {}
            Some(w) => {
                let cwds = self.chdir(acc, w);
                if cwds.unknown {
                    self.cwds.unknown = true;
                } else {
                    for d in cwds.dirs {
                        if !self.cwds.dirs.contains(&d) {
                            self.cwds.dirs.push(d);
                        }
                    }
                }
            }
        }
    }

    fn shell(&mut self, acc: &mut Acc, name: &str, args: &[Word], io: &Io, depth: u32) {
        acc.raise(Moderate, format!("{name} runs shell commands"));
        let mut j = 0;
        let mut has_c = false;
        let mut stdin_mode = false;
        while j < args.len() {
            let t = args[j].text.as_str();
            if t == "--" || t == "-" {
                j += 1;
                break;
            }
            if t.starts_with("--") {
                if t == "--rcfile" || t == "--init-file" {
                    if let Some(f) = args.get(j + 1) {
                        self.read_path(acc, f);
                    }
                    j += 2;
                } else {
                    j += 1;
                }
                continue;
            }
            if (t.starts_with('-') || t.starts_with('+')) && t.len() > 1 {
                has_c |= t[1..].contains('c');
                stdin_mode |= t[1..].contains('s');
                j += if t.ends_with('o') || t.ends_with('O') {
                    2
                } else {
                    1
                };
                continue;
            }
            break;
        }
        if has_c {
            if let Some(w) = args.get(j) {
                if w.dynamic {
                    acc.raise(
                        Dangerous,
                        format!("{name} -c runs a command string built at run time"),
                    );
                }
                let script = w.text.clone();
                self.script(&script, depth + 1);
            }
            return;
        }
        if !stdin_mode {
            if let Some(f) = args.get(j) {
                acc.raise(Moderate, format!("{name} runs the script {}", f.text));
                self.read_path(acc, f);
                return;
            }
        }
        self.stdin_script(acc, name, io, depth);
    }

    /// A program that runs its standard input as shell commands.
    pub(super) fn stdin_script(&mut self, acc: &mut Acc, name: &str, io: &Io, depth: u32) {
        if let Some(s) = &io.stdin_script {
            let s = s.clone();
            self.script(&s, depth + 1);
        } else if io.piped_stdin {
            acc.raise(Dangerous, format!("{name} runs whatever is piped into it"));
        }
    }

    fn interpreter(&mut self, acc: &mut Acc, name: &str, args: &[Word]) {
        if name.starts_with("python") || name.starts_with("pypy") {
            if let Some(k) = args.iter().position(|a| a.text == "-m") {
                if args.get(k + 1).is_some_and(|m| m.text == "pip") {
                    self.package(acc, "pip", &args[k + 2..]);
                    return;
                }
            }
        }
        acc.raise(
            Moderate,
            format!("{name} runs a program, which can do anything you can"),
        );
        self.loose_paths(acc, args);
    }

    /// Whether one of the config files `names` applies where the command runs (the working
    /// folder or a folder above it inside the root): a `rust-toolchain` file chooses which
    /// binaries rustup's proxies run, a `.yarnrc` which script yarn runs.
    fn config_file_here(&self, acc: &Acc, names: &[&str]) -> bool {
        let cwds = self.cwds_for(acc);
        cwds.unknown
            || cwds.dirs.iter().any(|d| {
                d.ancestors()
                    .take_while(|a| a.starts_with(&self.jail.root))
                    .any(|a| names.iter().any(|n| a.join(n).symlink_metadata().is_ok()))
            })
    }

    fn jq(&mut self, acc: &mut Acc, args: &[Word]) {
        let mut i = 0;
        let mut filter_given = false;
        let mut files_allowed = true;
        let mut ended = false;
        while i < args.len() {
            let w = &args[i];
            let t = w.text.as_str();
            i += 1;
            if !ended && w.is_option() {
                match t {
                    "--" => ended = true,
                    // `-nf prog.jq`, `--from-file=prog.jq`: a program ground-link cannot read.
                    _ if t.starts_with("--from-file")
                        || (!t.starts_with("--") && t.len() > 2 && t.contains('f')) =>
                    {
                        acc.raise(
                            Moderate,
                            "the jq program is in a file ground-link does not read (it may read \
                             environment variables)",
                        );
                        if !t.contains('=') {
                            i += 1;
                        }
                    }
                    "--arg" | "--argjson" => i += 2,
                    "--slurpfile" | "--rawfile" => {
                        if let Some(f) = args.get(i + 1) {
                            self.read_path(acc, f);
                        }
                        i += 2;
                    }
                    "-f" | "--from-file" => {
                        if let Some(f) = args.get(i) {
                            self.read_path(acc, f);
                        }
                        acc.raise(
                            Moderate,
                            "the jq program is in a file ground-link does not read (it may read \
                             environment variables)",
                        );
                        filter_given = true;
                        i += 1;
                    }
                    "-L" | "--library-path" => {
                        acc.raise(
                            Moderate,
                            "jq -L reads modules from a folder (import/include read files)",
                        );
                        i += 1;
                    }
                    "--indent" => i += 1,
                    _ if t.starts_with("-L") => acc.raise(
                        Moderate,
                        "jq -L reads modules from a folder (import/include read files)",
                    ),
                    "--args" | "--jsonargs" => files_allowed = false,
                    _ => {}
                }
                continue;
            }
            if !filter_given {
                filter_given = true;
                if t.contains("import") || t.contains("include") || t.contains("modulemeta") {
                    acc.raise(
                        Moderate,
                        "the jq program imports modules, which reads files it names",
                    );
                }
                if t.contains("$ENV")
                    || t.split(|c: char| !c.is_alphanumeric() && c != '_')
                        .any(|x| x == "env")
                {
                    acc.raise(
                        Moderate,
                        "the jq program reads environment variables, which may hold secrets",
                    );
                }
                continue;
            }
            if files_allowed {
                self.read_path(acc, w);
            }
        }
    }

    fn sed(&mut self, acc: &mut Acc, args: &[Word], depth: u32) {
        let mut scripts: Vec<&Word> = Vec::new();
        let mut owned: Vec<Word> = Vec::new();
        let mut files: Vec<&Word> = Vec::new();
        let mut in_place = false;
        let mut ended = false;
        let mut i = 0;
        while i < args.len() {
            let w = &args[i];
            let t = w.text.as_str();
            i += 1;
            if ended || !w.is_option() {
                files.push(w);
                continue;
            }
            if t == "--" {
                ended = true;
                continue;
            }
            if let Some(long) = t.strip_prefix("--") {
                let (n, v) = match long.split_once('=') {
                    Some((n, _)) => (n, Some(tail_word(w, n.len() + 3))),
                    None => (long, None),
                };
                let is = |full: &str| {
                    !n.is_empty() && full.starts_with(n) && (n == full || n.len() >= 2)
                };
                if is("in-place") && n.starts_with('i') {
                    in_place = true;
                } else if is("expression") && n.starts_with('e') {
                    match v {
                        Some(v) => owned.push(v),
                        None => {
                            if let Some(s) = args.get(i) {
                                scripts.push(s);
                            }
                            i += 1;
                        }
                    }
                } else if is("file") && n.starts_with('f') && !n.starts_with("fo") {
                    let f = v.or_else(|| {
                        i += 1;
                        args.get(i - 1).cloned()
                    });
                    if let Some(f) = f {
                        acc.raise(
                            Moderate,
                            "sed runs a script from a file, which cannot be checked",
                        );
                        self.read_path(acc, &f);
                    }
                } else if (is("line-length") && n.starts_with('l')) && v.is_none() {
                    i += 1;
                }
                continue;
            }
            for (k, c) in t.char_indices().skip(1) {
                let rest = k + 1;
                match c {
                    'i' => {
                        in_place = true;
                        break;
                    }
                    'e' | 'f' | 'l' => {
                        let v = if rest < t.len() {
                            Some(tail_word(w, rest))
                        } else {
                            i += 1;
                            args.get(i - 1).cloned()
                        };
                        if let Some(v) = v {
                            match c {
                                'e' => owned.push(v),
                                'f' => {
                                    acc.raise(
                                        Moderate,
                                        "sed runs a script from a file, which cannot be checked",
                                    );
                                    self.read_path(acc, &v);
                                }
                                _ => {}
                            }
                        }
                        break;
                    }
                    _ => {}
                }
            }
        }
        if scripts.is_empty() && owned.is_empty() && !files.is_empty() {
            scripts.push(files.remove(0));
        }
        let all: Vec<Word> = scripts.into_iter().cloned().chain(owned).collect();
        for s in &all {
            if s.dynamic {
                acc.raise(
                    Moderate,
                    "the sed script is only known when the command runs",
                );
            }
            let scan = sed::scan(&s.text);
            if scan.unparsed {
                acc.raise(Moderate, "the sed script could not be checked");
            }
            if scan.runs_input {
                acc.raise(
                    Dangerous,
                    "sed runs text from its input as shell commands (e)",
                );
            }
            for c in &scan.commands {
                acc.raise(Moderate, "sed runs a shell command (e)");
                self.script(c, depth + 1);
            }
            for f in &scan.writes {
                self.write_path(acc, &Word::literal(f));
            }
            for f in &scan.reads {
                self.read_path(acc, &Word::literal(f));
            }
        }
        for f in &files {
            if in_place {
                self.write_path(acc, f);
            } else {
                self.read_path(acc, f);
            }
        }
    }

    fn find(&mut self, acc: &mut Acc, args: &[Word], depth: u32) {
        const VALUE_TESTS: &[&str] = &[
            "-name",
            "-iname",
            "-path",
            "-ipath",
            "-wholename",
            "-iwholename",
            "-regex",
            "-iregex",
            "-type",
            "-xtype",
            "-perm",
            "-user",
            "-group",
            "-size",
            "-mtime",
            "-mmin",
            "-atime",
            "-amin",
            "-ctime",
            "-cmin",
            "-maxdepth",
            "-mindepth",
            "-printf",
            "-fstype",
            "-inum",
            "-links",
            "-uid",
            "-gid",
            "-used",
            "-context",
            "-regextype",
            "-lname",
            "-ilname",
        ];
        let mut i = 0;
        while let Some(w) = args.get(i) {
            match w.text.as_str() {
                "-H" | "-P" => i += 1,
                "-L" => {
                    acc.raise(Moderate, format!("find -L {FOLLOWS}"));
                    i += 1;
                }
                "-D" => i += 2,
                t if t.starts_with("-O") => i += 1,
                _ => break,
            }
        }
        while let Some(w) = args.get(i) {
            let t = w.text.as_str();
            if (t.starts_with('-') && t.len() > 1) || matches!(t, "(" | "!" | ")" | ",") {
                break;
            }
            self.read_path(acc, w);
            i += 1;
        }
        while let Some(w) = args.get(i) {
            let t = w.text.as_str();
            match t {
                "-exec" | "-execdir" | "-ok" | "-okdir" => {
                    acc.raise(
                        Moderate,
                        format!("find {t} runs a command on each file it finds"),
                    );
                    let start = i + 1;
                    let mut end = start;
                    while end < args.len() && args[end].text != ";" && args[end].text != "+" {
                        end += 1;
                    }
                    if end > start {
                        self.nested(args[start..end].to_vec(), depth);
                    }
                    i = end + 1;
                }
                "-delete" => {
                    acc.raise(Dangerous, "find -delete deletes every file it matches");
                    i += 1;
                }
                "-fprint" | "-fprint0" | "-fls" | "-fprintf" => {
                    if let Some(f) = args.get(i + 1) {
                        self.write_path(acc, f);
                    }
                    i += if t == "-fprintf" { 3 } else { 2 };
                }
                "-follow" => {
                    acc.raise(Moderate, format!("find -follow {FOLLOWS}"));
                    i += 1;
                }
                "-newer" | "-anewer" | "-cnewer" | "-samefile" | "-files0-from" => {
                    if let Some(f) = args.get(i + 1) {
                        self.read_path(acc, f);
                    }
                    i += 2;
                }
                _ if t.starts_with("-newer") => {
                    if let Some(f) = args.get(i + 1) {
                        self.read_path(acc, f);
                    }
                    i += 2;
                }
                _ if VALUE_TESTS.contains(&t) => i += 2,
                _ => i += 1,
            }
        }
    }

    fn copy(&mut self, acc: &mut Acc, name: &str, args: &[Word]) {
        let p = parse_args(
            args,
            "tSmog",
            &[
                "--target-directory",
                "--suffix",
                "--mode",
                "--owner",
                "--group",
            ],
        );
        acc.raise(
            Moderate,
            format!("{name} copies files, replacing any file at the target"),
        );
        let target_dir = p
            .opts
            .iter()
            .find(|(n, _)| n == "-t" || long_is(n, "--target-directory"))
            .and_then(|(_, v)| v.clone());
        if name == "install" && p.has("-d") {
            self.writes(acc, &p.pos);
            return;
        }
        match target_dir {
            Some(t) => {
                self.write_path(acc, &t);
                for s in &p.pos {
                    self.read_path(acc, s);
                }
            }
            None => {
                if let Some((last, sources)) = p.pos.split_last() {
                    for s in sources {
                        self.read_path(acc, s);
                    }
                    self.write_path(acc, last);
                }
            }
        }
    }

    fn link(&mut self, acc: &mut Acc, args: &[Word]) {
        let p = parse_args(args, "tS", &["--target-directory", "--suffix"]);
        acc.raise(Moderate, "ln creates links");
        let symbolic = p.has("-s") || p.has("--symbolic");
        let target_dir = p
            .opts
            .iter()
            .find(|(n, _)| n == "-t" || long_is(n, "--target-directory"))
            .and_then(|(_, v)| v.clone());
        let (targets, link): (Vec<&Word>, Option<Word>) = match (target_dir, p.pos.len()) {
            (Some(d), _) => (p.pos.clone(), Some(d.into_owned())),
            (None, 0) => (Vec::new(), None),
            (None, 1) => (p.pos.clone(), None),
            (None, _) => {
                let (last, rest) = p
                    .pos
                    .split_last()
                    .map(|(l, r)| (Some((*l).clone()), r.to_vec()))
                    .unwrap_or((None, Vec::new()));
                (rest, last)
            }
        };
        if let Some(l) = &link {
            self.write_path(acc, l);
        }
        let cwds = self.cwds_for(acc).clone();
        for t in targets {
            // A relative symlink target is resolved from the link's directory, not from here.
            let word = match (
                &link,
                symbolic && !t.text.starts_with('/') && !t.text.starts_with('~') && !t.dynamic,
            ) {
                (Some(l), true) if !l.dynamic => {
                    let link_dir = match self.jail.candidates(l, &cwds) {
                        Some(c) => c.into_iter().next().map(|(n, _)| {
                            if n.is_dir() {
                                n
                            } else {
                                n.parent().map(Path::to_path_buf).unwrap_or(n)
                            }
                        }),
                        None => None,
                    };
                    match link_dir {
                        Some(d) => Word::literal(&format!("{}/{}", d.display(), t.text)),
                        None => t.clone(),
                    }
                }
                _ => t.clone(),
            };
            let loc = self.jail.locate(&word, &cwds);
            acc.paths.push(loc.shown.clone());
            match loc.place {
                Place::Inside | Place::Harmless => {}
                _ => acc.raise(
                    Dangerous,
                    format!("creates a link to {}, outside the sandbox root", loc.shown),
                ),
            }
        }
    }

    fn transfer(&mut self, acc: &mut Acc, name: &str, args: &[Word]) {
        let (writes, reads): (&[&str], &[&str]) = if name == "wget" {
            (
                &[
                    "-O",
                    "--output-document",
                    "-o",
                    "--output-file",
                    "-a",
                    "--append-output",
                    "-P",
                    "--directory-prefix",
                ],
                &["-i", "--input-file", "--post-file", "--body-file"],
            )
        } else {
            (
                &[
                    "-o",
                    "--output",
                    "-D",
                    "--dump-header",
                    "-c",
                    "--cookie-jar",
                    "--trace",
                    "--trace-ascii",
                    "--libcurl",
                    "--stderr",
                    "--output-dir",
                ],
                &["-T", "--upload-file", "-K", "--config"],
            )
        };
        let mut i = 0;
        while i < args.len() {
            let t = args[i].text.as_str();
            let value = args.get(i + 1);
            if writes.contains(&t) {
                if let Some(v) = value {
                    self.write_path(acc, v);
                }
                i += 2;
                continue;
            }
            if reads.contains(&t) {
                if let Some(v) = value {
                    self.read_path(acc, v);
                }
                i += 2;
                continue;
            }
            if matches!(
                t,
                "-d" | "--data" | "--data-binary" | "--data-urlencode" | "-F" | "--form"
            ) {
                if let Some(v) = value {
                    if let Some(at) = v.text.find(['@', '<']) {
                        self.read_path(acc, &tail_word(v, at + 1));
                    }
                }
                i += 2;
                continue;
            }
            i += 1;
        }
    }

    /// tar: the archive is written when creating and read otherwise; `-C dir` is where files
    /// are extracted to (written) or taken from (read).
    fn tar(&mut self, acc: &mut Acc, args: &[Word]) {
        acc.raise(
            Moderate,
            "tar reads and writes archives and the files in them",
        );
        let mut create = false;
        let mut extract = false;
        let mut archives: Vec<Word> = Vec::new();
        let mut dirs: Vec<Word> = Vec::new();
        let mut members: Vec<&Word> = Vec::new();
        let mut i = 0;
        while i < args.len() {
            let w = &args[i];
            let t = w.text.as_str();
            i += 1;
            if t == "--" {
                members.extend(&args[i..]);
                break;
            }
            if let Some(long) = t.strip_prefix("--") {
                let (n, v) = match long.split_once('=') {
                    Some((n, _)) => (n, Some(tail_word(w, n.len() + 3))),
                    None => (long, None),
                };
                let value = |i: &mut usize| {
                    v.clone().or_else(|| {
                        *i += 1;
                        args.get(*i - 1).cloned()
                    })
                };
                match n {
                    "file" => archives.extend(value(&mut i)),
                    "directory" => dirs.extend(value(&mut i)),
                    "create" | "append" | "update" | "concatenate" => create = true,
                    "extract" | "get" => extract = true,
                    "to-command"
                    | "use-compress-program"
                    | "checkpoint-action"
                    | "info-script"
                    | "new-volume-script"
                    | "rsh-command"
                    | "rmt-command" => {
                        acc.raise(Moderate, format!("tar --{n} runs a program"));
                    }
                    _ => {}
                }
                continue;
            }
            let old_style =
                i == 1 && !t.starts_with('-') && t.chars().all(|c| c.is_ascii_alphabetic());
            if !(old_style || (t.starts_with('-') && t.len() > 1)) {
                members.push(w);
                continue;
            }
            let cluster = if old_style { t } else { &t[1..] };
            for (k, c) in cluster.char_indices() {
                match c {
                    'c' | 'r' | 'u' | 'A' => create = true,
                    'x' => extract = true,
                    'f' | 'C' | 'I' | 'F' | 'T' | 'X' | 'g' | 'K' | 'N' | 'b' | 'H' | 'V' | 'L' => {
                        let rest = k + 1;
                        let v = if !old_style && rest < cluster.len() {
                            Some(tail_word(w, rest + 1))
                        } else {
                            i += 1;
                            args.get(i - 1).cloned()
                        };
                        match c {
                            'f' => archives.extend(v),
                            'C' => dirs.extend(v),
                            'I' | 'F' => acc.raise(Moderate, format!("tar -{c} runs a program")),
                            _ => {}
                        }
                        if !old_style {
                            break;
                        }
                    }
                    _ => {}
                }
            }
        }
        for a in &archives {
            if create {
                self.write_path(acc, a);
            } else {
                self.read_path(acc, a);
            }
        }
        for d in &dirs {
            if extract || !create {
                self.write_path(acc, d);
            } else {
                self.read_path(acc, d);
            }
        }
        if create {
            for m in members {
                self.read_path(acc, m);
            }
        }
    }

    fn cargo(&mut self, acc: &mut Acc, args: &[Word]) {
        let sub = args
            .iter()
            .find(|a| !a.is_option() && !a.text.starts_with('+'))
            .map(|a| a.text.as_str())
            .unwrap_or("");
        match sub {
            "install" | "uninstall" | "publish" | "login" | "logout" | "owner" | "yank" | "add" => {
                acc.raise(
                    Dangerous,
                    format!("cargo {sub} installs, publishes or adds packages"),
                );
            }
            "" => {}
            _ => acc.raise(
                Moderate,
                format!("cargo {sub} builds and runs project code (build scripts, tests)"),
            ),
        }
        self.loose_paths(acc, args);
    }

    fn go(&mut self, acc: &mut Acc, args: &[Word]) {
        let sub = args
            .iter()
            .find(|a| !a.is_option())
            .map(|a| a.text.as_str())
            .unwrap_or("");
        match sub {
            "version" => {}
            "install" | "get" => acc.raise(Dangerous, format!("go {sub} installs packages")),
            "env" => acc.raise(Moderate, "go env prints environment settings"),
            _ => acc.raise(Moderate, format!("go {sub} builds and runs project code")),
        }
        self.loose_paths(acc, args);
    }

    /// Package managers. Returns false when `name` is not one.
    fn package(&mut self, acc: &mut Acc, name: &str, args: &[Word]) -> bool {
        let Some((safe, danger, runner)) = package_manager(name) else {
            return false;
        };
        let sub_at = args.iter().position(|a| !a.is_option());
        let sub = sub_at.map(|k| args[k].text.as_str()).unwrap_or("");
        let next = sub_at
            .and_then(|k| args.get(k + 1))
            .map(|a| a.text.as_str())
            .unwrap_or("");
        let installs_by_flag = match name {
            "pacman" | "yay" | "paru" => args.iter().any(|a| {
                let t = a.text.as_str();
                (t.starts_with('-')
                    && !t.starts_with("--")
                    && (t.contains('S') || t.contains('R') || t.contains('U')))
                    || matches!(t, "--sync" | "--remove" | "--upgrade" | "--database")
            }),
            "nix-env" => args.iter().any(|a| {
                matches!(
                    a.text.as_str(),
                    "-i" | "--install" | "-e" | "--uninstall" | "-u" | "--upgrade" | "-iA"
                )
            }),
            _ => false,
        };
        if matches!(name, "npx" | "bunx" | "pnpx") {
            acc.raise(
                Moderate,
                format!("{name} runs a package's program, downloading it first if needed"),
            );
            self.loose_paths(acc, args);
            return true;
        }
        let bare_install = name == "yarn" && args.is_empty();
        let pip_like =
            name == "uv" && sub == "pip" && matches!(next, "install" | "uninstall" | "sync");
        if installs_by_flag || bare_install || pip_like || danger.contains(&sub) {
            acc.raise(
                Dangerous,
                format!("{name} {sub} installs, removes or publishes packages (install scripts run code)")
                    .replace("  ", " "),
            );
        } else if sub_at == Some(0)
            && (safe.contains(&sub) || (name == "bun" && sub == "pm" && next == "ls"))
        {
            // Read-only queries from the permission PRD's safe list.
        } else if runner.contains(&sub) {
            acc.raise(
                Moderate,
                format!("{name} {sub} runs the project's scripts, which the agent can edit"),
            );
        } else {
            acc.raise(
                Moderate,
                format!("{name} {sub} may change the project or its dependencies")
                    .replace("  ", " "),
            );
        }
        self.loose_paths(acc, args);
        true
    }
}

/// Programs whose `--version` / `-V` / `version` only prints a version.
fn versioned(name: &str) -> bool {
    INTERPRETERS.contains(&name)
        || RUNNERS.contains(&name)
        || name.starts_with("python")
        || package_manager(name).is_some()
        || matches!(
            name,
            "git"
                | "cargo"
                | "go"
                | "docker"
                | "podman"
                | "kubectl"
                | "gh"
                | "rg"
                | "jq"
                | "curl"
                | "wget"
        )
        || SHELLS.contains(&name)
}

/// Names worth looking for among the arguments of an unknown program.
fn notable(name: &str) -> bool {
    catastrophic::has_catastrophic_form(name)
        || SHELLS.contains(&name)
        || matches!(
            name,
            "rmdir"
                | "shred"
                | "truncate"
                | "sudo"
                | "su"
                | "doas"
                | "curl"
                | "wget"
                | "ssh"
                | "scp"
                | "rsync"
                | "nc"
                | "ncat"
                | "netcat"
                | "socat"
                | "pkill"
                | "killall"
                | "mv"
                | "cp"
                | "eval"
                | "xargs"
                | "env"
                | "git"
                | "npm"
                | "pip"
                | "pip3"
                | "docker"
        )
}

fn is_assignment(t: &str) -> bool {
    match t.split_once('=') {
        Some((n, _)) => {
            !n.is_empty()
                && n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                && !n.starts_with(|c: char| c.is_ascii_digit())
        }
        None => false,
    }
}

/// Joins words back into a command line the way `eval` and `watch` do (with spaces).
pub(super) fn join_words(words: &[Word]) -> String {
    words
        .iter()
        .map(|w| w.text.as_str())
        .collect::<Vec<_>>()
        .join(" ")
}

/// xxd's words with its single-dash long options (`-cols`, `-len`, `-seek`...) written as the
/// short ones (`-c`, `-l`, `-s`): xxd accepts any prefix of the long names after one dash.
fn xxd_args(args: &[Word]) -> Vec<Word> {
    const LONG: &[(&str, &str)] = &[
        ("cols", "-c"),
        ("groupsize", "-g"),
        ("len", "-l"),
        ("offset", "-o"),
        ("seek", "-s"),
        ("name", "-n"),
        ("autoskip", "-a"),
        ("bits", "-b"),
        ("capitalize", "-C"),
        ("EBCDIC", "-E"),
        ("include", "-i"),
        ("postscript", "-p"),
        ("plain", "-p"),
        ("ps", "-p"),
        ("revert", "-r"),
        ("version", "-v"),
        ("help", "-h"),
    ];
    args.iter()
        .map(|w| {
            let Some(body) = w
                .text
                .strip_prefix('-')
                .filter(|b| b.len() > 1 && !b.starts_with('-'))
            else {
                return w.clone();
            };
            match LONG.iter().find(|(long, _)| long.starts_with(body)) {
                Some((_, short)) if !w.dynamic => Word::literal(short),
                _ => w.clone(),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_options_may_be_abbreviated() {
        assert!(long_is("--outp", "--output"));
        assert!(long_is("--output", "--output"));
        assert!(!long_is("--o", "--output"));
        assert!(!long_is("--output-indicator-new", "--output"));
    }

    #[test]
    fn short_option_names() {
        for c in ('0'..='9')
            .chain('A'..='Z')
            .chain('a'..='z')
            .chain(['?', 'é', '-'])
        {
            assert_eq!(short_name(c), format!("-{c}"));
        }
    }

    #[test]
    fn parse_args_splits_clusters() {
        let words: Vec<Word> = ["-rnA3", "foo", "-e", "bar", "--file=x", "--", "-y"]
            .iter()
            .map(|s| Word::literal(s))
            .collect();
        let p = parse_args(&words, "Ae", &[]);
        let names: Vec<&str> = p.opts.iter().map(|(n, _)| n.as_ref()).collect();
        assert_eq!(names, ["-r", "-n", "-A", "-e", "--file"]);
        assert_eq!(p.opts[2].1.as_ref().map(|w| w.text.as_str()), Some("3"));
        assert_eq!(p.opts[3].1.as_ref().map(|w| w.text.as_str()), Some("bar"));
        let pos: Vec<&str> = p.pos.iter().map(|w| w.text.as_str()).collect();
        assert_eq!(pos, ["foo", "-y"]);
    }
}
