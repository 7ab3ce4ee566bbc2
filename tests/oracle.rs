//! Suite: oracle. The classifier is checked against bash itself (DESIGN §5.2: "the shell
//! decides what runs"). For every command of the corpus, of the attack list and of a
//! property-generated stream:
//!
//! - `bash -n` refusing the command while the classifier calls it `safe` is a failure (the
//!   parser and the shell disagree on what the text is);
//! - when the classifier calls it `safe`, bash runs it for real inside a jail with `-x`, and
//!   every simple command bash traced must be one the classifier saw — same program, and the
//!   same words wherever the classifier's words are static text.
//!
//! The jail never lets the corpus (which holds fork bombs and `mkfs`) touch the machine: an
//! unprivileged user (`setpriv` to nobody), `bwrap --unshare-all` with a read-only root and an
//! empty `/tmp`, `prlimit --nproc`, a hard timeout, and a `PATH` with no programs in it — a
//! `command_not_found_handle` answers success for every external program, so control flow
//! goes on as if it had run, and only builtins really execute.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use ground_link::policy::classify::{ClassifyContext, CommandAnalysis, classify, parser_reading};
use ground_link::protocol::Risk;
use proptest::prelude::*;
use proptest::strategy::ValueTree;

/// A sandbox the jailed bash can read as `nobody`: the corpus layout of `commands.tsv`.
pub struct OracleBox {
    _dir: tempfile::TempDir,
    base: PathBuf,
    pub home: PathBuf,
    pub root: PathBuf,
    env_file: PathBuf,
}

impl OracleBox {
    pub fn new() -> OracleBox {
        let dir = tempfile::Builder::new()
            .prefix("gl-oracle-")
            .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
            .unwrap();
        let base = fs::canonicalize(dir.path()).unwrap();
        let (home, root) = crate::classifier::corpus_layout(&base);
        // Every external program "succeeds" without running: only builtins execute.
        let env_file = base.join("oracle-env.sh");
        fs::write(&env_file, "command_not_found_handle() { return 0; }\n").unwrap();
        // `nobody` must be able to walk in (tempfile makes 0700 folders).
        for entry in walk(&base) {
            let mode = if entry.is_dir() { 0o755 } else { 0o644 };
            if !entry.is_symlink() {
                fs::set_permissions(&entry, fs::Permissions::from_mode(mode)).unwrap();
            }
        }
        OracleBox {
            _dir: dir,
            base,
            home,
            root,
            env_file,
        }
    }

    pub fn classify(&self, command: &str) -> CommandAnalysis {
        classify(
            command,
            &ClassifyContext {
                root: &self.root,
                home: Some(&self.home),
            },
        )
    }

    /// Runs `command` under `bash -x` in the jail and returns the simple commands it traced,
    /// each as its expanded words (leading assignments removed). `None` when the jail itself
    /// could not start (reported by the caller, never ignored).
    pub fn trace(&self, command: &str) -> Result<Vec<Vec<String>>, String> {
        self.trace_as(command, 65534)
    }

    /// [`OracleBox::trace`] as user `uid`, whose process count the nproc limit caps.
    pub fn trace_as(&self, command: &str, uid: u32) -> Result<Vec<Vec<String>>, String> {
        // The processes of the previous jail leave asynchronously; while they do, the
        // kernel may refuse a new namespace's first fork (EAGAIN). Try again a few times.
        let mut last = String::new();
        for attempt in 0..8 {
            match self.trace_once(command, uid) {
                Err(e) if e.contains("Can't fork") => {
                    last = e;
                    std::thread::sleep(std::time::Duration::from_millis(20 << attempt));
                }
                other => return other,
            }
        }
        Err(last)
    }

    fn trace_once(&self, command: &str, uid: u32) -> Result<Vec<Vec<String>>, String> {
        let trace_file = tempfile::NamedTempFile::new_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
        // As root, become an unprivileged user first (root ignores the process limit); a
        // normal user already is one.
        let mut cmd = if rustix::process::geteuid().is_root() {
            let mut c = Command::new("setpriv");
            c.arg(format!("--reuid={uid}"))
                .arg(format!("--regid={uid}"))
                .args(["--clear-groups", "--", "prlimit"]);
            c
        } else {
            Command::new("prlimit")
        };
        let out = cmd
            .args(["--nproc=256", "--fsize=1048576", "--"])
            .args(["timeout", "-s", "KILL", "5"])
            .args([
                "bwrap",
                "--unshare-all",
                "--die-with-parent",
                "--new-session",
            ])
            .args(["--ro-bind", "/", "/", "--tmpfs", "/tmp", "--dev", "/dev"])
            .args(["--proc", "/proc"])
            // The box itself, again over the empty /tmp (a checkout may live under /tmp).
            .arg("--ro-bind")
            .arg(&self.base)
            .arg(&self.base)
            .arg("--chdir")
            .arg(&self.root)
            .args(["--clearenv", "--setenv", "HOME"])
            .arg(&self.home)
            .args(["--setenv", "PATH", "/nonexistent/ground-link-oracle"])
            .args(["--setenv", "BASH_ENV"])
            .arg(&self.env_file)
            .args(["--setenv", "BASH_XTRACEFD", "3", "--setenv", "PS4", "+ "])
            .args([
                "--",
                "/bin/bash",
                "--noprofile",
                "--norc",
                "-x",
                "-c",
                command,
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .fd3(trace_file.as_file())
            .output()
            .map_err(|e| format!("could not start the jail: {e}"))?;
        let stderr = String::from_utf8_lossy(&out.stderr);
        if stderr.contains("bwrap:") || stderr.contains("setpriv:") || stderr.contains("prlimit:") {
            return Err(format!("the jail failed: {stderr}"));
        }
        let text = fs::read(trace_file.path()).unwrap();
        Ok(String::from_utf8_lossy(&text)
            .lines()
            .filter_map(trace_line)
            .collect())
    }
}

/// Lets a child process inherit `file` as its fd 3 (bash's `BASH_XTRACEFD`).
trait Fd3 {
    fn fd3(&mut self, file: &fs::File) -> &mut Self;
}

impl Fd3 for Command {
    fn fd3(&mut self, file: &fs::File) -> &mut Self {
        use std::os::fd::AsRawFd;
        use std::os::unix::process::CommandExt;
        let fd = file.as_raw_fd();
        // SAFETY: dup2 is async-signal-safe; the closure touches nothing else.
        unsafe {
            self.pre_exec(move || {
                // dup2 onto itself would leave close-on-exec set.
                let r = if fd == 3 {
                    libc::fcntl(3, libc::F_SETFD, 0)
                } else {
                    libc::dup2(fd, 3)
                };
                if r < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        self
    }
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = vec![dir.to_path_buf()];
    for e in fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() && !p.is_symlink() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

/// Whether bash itself accepts the command's syntax (`bash -n` reads, never runs).
pub fn bash_accepts(command: &str) -> bool {
    Command::new("/bin/bash")
        .args(["--noprofile", "--norc", "-n", "-c", command])
        .env_clear()
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}

/// One `bash -x` line as words, or `None` for lines that are not a simple command (compound
/// keywords, the not-found handler's own `return`, bare assignments).
fn trace_line(line: &str) -> Option<Vec<String>> {
    let body = line.trim_start_matches('+').strip_prefix(' ')?;
    let mut words = split_xtrace(body);
    while words.first().is_some_and(|w| is_assignment(w)) {
        words.remove(0);
    }
    let first = words.first()?;
    if matches!(
        first.as_str(),
        "[[" | "[" | "((" | "for" | "case" | "select" | "]]" | "))"
    ) || words == ["return", "0"]
    {
        return None;
    }
    Some(words)
}

fn is_assignment(w: &str) -> bool {
    let Some((name, _)) = w.split_once('=') else {
        return false;
    };
    let name = name.trim_end_matches('+');
    let name = name.split('[').next().unwrap_or("");
    !name.is_empty()
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Splits one xtrace line the way bash quoted it: `'…'`, `\x`, and `$'…'` for control bytes.
fn split_xtrace(s: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut it = s.chars().peekable();
    while let Some(c) = it.next() {
        match c {
            ' ' => {
                if in_word {
                    words.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            '\'' => {
                in_word = true;
                for c in it.by_ref() {
                    if c == '\'' {
                        break;
                    }
                    cur.push(c);
                }
            }
            '\\' => {
                in_word = true;
                if let Some(n) = it.next() {
                    cur.push(n);
                }
            }
            '$' if it.peek() == Some(&'\'') => {
                in_word = true;
                it.next();
                while let Some(c) = it.next() {
                    match c {
                        '\'' => break,
                        '\\' => match it.next() {
                            Some('n') => cur.push('\n'),
                            Some('t') => cur.push('\t'),
                            Some('r') => cur.push('\r'),
                            Some('e' | 'E') => cur.push('\u{1b}'),
                            Some(o) => cur.push(o),
                            None => {}
                        },
                        o => cur.push(o),
                    }
                }
            }
            o => {
                in_word = true;
                cur.push(o);
            }
        }
    }
    if in_word {
        words.push(cur);
    }
    words
}

/// A classifier word we can compare with what bash expanded: no expansion, glob or quote
/// left in it.
fn is_static(w: &str) -> bool {
    !w.contains([
        '$', '`', '~', '*', '?', '[', '{', '\\', '\'', '"', '\n', '<', '>', '(',
    ])
}

/// Words of a part with the leading assignments removed.
fn command_words(words: &[String]) -> &[String] {
    let skip = words.iter().take_while(|w| is_assignment(w)).count();
    &words[skip..]
}

/// What the classifier missed of what bash ran, if anything.
pub fn missed(analysis: &CommandAnalysis, traced: &[Vec<String>]) -> Vec<String> {
    // A part judged through its wrapper (`time ls`, `env X=1 cat`) covers the wrapped one.
    let seen: Vec<&[String]> = analysis
        .parts
        .iter()
        .flat_map(|p| [command_words(&p.words), p.effective.as_slice()])
        .filter(|w| !w.is_empty())
        .collect();
    let mut out = Vec::new();
    for t in traced {
        let ok = seen.iter().any(|s| {
            if s[0] != t[0] {
                return false;
            }
            if s.iter().all(|w| is_static(w)) {
                s == &t.as_slice()
            } else {
                true
            }
        });
        if !ok {
            out.push(t.join(" "));
        }
    }
    out
}

fn oracle_box() -> &'static OracleBox {
    static BOX: OnceLock<OracleBox> = OnceLock::new();
    BOX.get_or_init(OracleBox::new)
}

/// The disagreements of the classifier with bash over `commands`, as readable lines.
pub fn disagreements(commands: &[String]) -> Vec<String> {
    let ob = oracle_box();
    let mut out = Vec::new();
    for command in commands {
        let a = ob.classify(command);
        if a.risk != Risk::Safe {
            continue;
        }
        if !bash_accepts(command) {
            out.push(format!(
                "{command:?}: bash refuses its syntax, the classifier calls it safe"
            ));
            continue;
        }
        match ob.trace(command) {
            Ok(traced) => {
                let m = missed(&a, &traced);
                if !m.is_empty() {
                    out.push(format!(
                        "{command:?}: bash ran {m:?}, which the classifier did not see (parts: {:?})",
                        a.parts.iter().map(|p| &p.words).collect::<Vec<_>>()
                    ));
                }
            }
            Err(e) => out.push(format!("{command:?}: {e}")),
        }
    }
    out
}

/// The corpus commands with `{root}`/`{home}` filled in for the oracle's box.
fn corpus_commands() -> Vec<String> {
    let ob = oracle_box();
    include_str!("vectors/commands.tsv")
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .filter_map(|l| l.split('\t').next())
        .map(|c| {
            c.replace('␤', "\n")
                .replace('␉', "\t")
                .replace("{root}", &ob.root.to_string_lossy())
                .replace("{home}", &ob.home.to_string_lossy())
        })
        .collect()
}

#[test]
fn the_jail_runs_bash_and_traces_what_ran() {
    // The oracle must be able to see a miss, or its silence means nothing.
    let ob = oracle_box();
    let traced = ob
        .trace("echo $'\\\\'; cat ~/.ssh/id_rsa; #'")
        .expect("the oracle's jail must work on this machine (setpriv, prlimit, bwrap)");
    assert_eq!(traced.len(), 2, "{traced:?}");
    assert_eq!(traced[1][0], "cat");
    // And nothing it runs reaches the real files: a write in the root is refused.
    ob.trace("echo x > written-by-oracle").unwrap();
    assert!(!ob.root.join("written-by-oracle").exists());
    // A fork bomb ends (nproc limit and timeout) instead of taking the machine. It runs as
    // a user of its own, so its leftovers cannot use up the other traces' process limit.
    ob.trace_as(":(){ :|:& };:", 65533).unwrap();
}

#[test]
fn the_oracle_notices_a_command_the_classifier_missed() {
    let ob = oracle_box();
    let a = ob.classify("echo hi");
    let traced = ob.trace("echo hi; cat secret").unwrap();
    assert_eq!(missed(&a, &traced), vec!["cat secret".to_owned()]);
}

#[test]
fn the_corpus_agrees_with_bash() {
    let d = disagreements(&corpus_commands());
    assert!(d.is_empty(), "{} disagreements:\n{}", d.len(), d.join("\n"));
}

/// Pieces of shell that parsers tend to disagree on, for generated commands.
const PIECES: &[&str] = &[
    "ls",
    "cat",
    "echo",
    "printf",
    "git status",
    "grep -n x",
    "wc -l",
    "README.md",
    "src",
    " ",
    " ",
    " ",
    ";",
    ";;",
    "&&",
    "||",
    "|",
    "&",
    "\n",
    "#",
    "'",
    "\"",
    "\\",
    "$'\\''",
    "$'\\\\'",
    "$'",
    "$\"",
    "$(",
    ")",
    "`",
    "${a:-",
    "${a#",
    "${#a}",
    "}",
    "{",
    "}",
    "(",
    "<<E\n",
    "\nE\n",
    "<<'E'\n",
    "<<-E\n",
    "<<<",
    "$((",
    "))",
    "[[",
    "]]",
    "a[",
    "]",
    "=",
    "x=1",
    "if true; then",
    "fi",
    "then",
    "do",
    "done",
    "case x in",
    "esac",
    "x)",
    "function",
    "f()",
    "!",
    "*",
    "~",
    "$x",
    "$HOME",
    "<(",
    ">(",
    "2>&1",
    ">/dev/null",
    "\\\n",
    "$'\\x27'",
    "$'\\047'",
];

fn generated() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(PIECES), 1..12).prop_map(|v| v.concat())
}

proptest! {
    #![proptest_config(ProptestConfig {
        // Each case may start bash twice; `make fuzz` raises the count.
        cases: ground_link::testing::proptest_cases(256),
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn oracle_proptest_generated_commands_agree_with_bash(cmd in generated()) {
        let d = disagreements(std::slice::from_ref(&cmd));
        prop_assert!(d.is_empty(), "{}", d.join("\n"));
    }
}

/// Whether a parser's reading shows every command bash ran (by program name; a name only
/// known at run time matches anything).
fn reading_covers(reading: &[Vec<Option<String>>], traced: &[Vec<String>]) -> bool {
    traced.iter().all(|t| {
        reading.iter().any(|r| {
            // `time` is a keyword to bash; a reading that keeps it as a command name is fine.
            let r = match r.first() {
                Some(Some(t)) if t == "time" && r.len() > 1 => &r[1..],
                _ => &r[..],
            };
            match r.first() {
                Some(Some(name)) => name == &t[0],
                Some(None) => true,
                None => false,
            }
        })
    })
}

/// The parser's report card (run with `cargo test --release --test main -- --ignored
/// oracle_parser_report --nocapture`; `ORACLE_GENERATED` sets how many generated commands join
/// the corpus): how often the classifier's parser accepts what `bash -n` refuses, refuses what
/// bash accepts, and — where bash accepts — misses a command that `bash -x` shows ran. The
/// figures that chose brush-parser over tree-sitter-bash are in docs/security.md.
#[test]
#[ignore]
fn oracle_parser_report() {
    let ob = oracle_box();
    let mut commands = corpus_commands();
    let n: usize = std::env::var("ORACLE_GENERATED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2000);
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let strategy = generated();
    for _ in 0..n {
        commands.push(strategy.new_tree(&mut runner).unwrap().current());
    }
    let (mut accepts_refused, mut refuses_accepted, mut misses) = (0usize, 0usize, 0usize);
    let mut examples: Vec<String> = Vec::new();
    let mut bash_ok = 0;
    let started = std::time::Instant::now();
    let mut parsing = std::time::Duration::ZERO;
    for c in &commands {
        let ok = bash_accepts(c);
        bash_ok += usize::from(ok);
        let t = std::time::Instant::now();
        let reading = parser_reading(c);
        parsing += t.elapsed();
        let traced = if ok { ob.trace(c).ok() } else { None };
        match (ok, &reading) {
            (false, Ok(_)) => {
                accepts_refused += 1;
                if examples.len() < 30 {
                    examples.push(format!("accepts what bash refuses: {c:?}"));
                }
            }
            (true, Err(e)) => {
                refuses_accepted += 1;
                if examples.len() < 30 {
                    examples.push(format!("refuses what bash accepts: {c:?} ({e})"));
                }
            }
            (true, Ok(reading)) => {
                if let Some(t) = &traced {
                    if !reading_covers(reading, t) {
                        misses += 1;
                        examples.push(format!("misses what bash ran: {c:?} ran {t:?}"));
                    }
                }
            }
            (false, Err(_)) => {}
        }
    }
    println!(
        "{} commands ({} from the corpus and the attack list, {n} generated); bash -n accepts {bash_ok}",
        commands.len(),
        commands.len() - n
    );
    println!(
        "brush-parser: accepts what bash refuses: {accepts_refused}   refuses what bash accepts: \
         {refuses_accepted}   misses a command bash ran: {misses}   (parsing took {:?} of {:?})",
        parsing,
        started.elapsed()
    );
    for e in &examples {
        println!("    {e}");
    }
}
