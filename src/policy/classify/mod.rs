//! Shell command classification (DESIGN §5.2).
//!
//! [`classify`] parses a command line with brush-parser, as bash would read it (never by
//! matching prefixes of the raw text), finds every simple command in it — in lists and pipelines, subshells and brace
//! groups, control-flow and function bodies, `$(..)`, backquotes, `<(..)`/`>(..)`, `eval`,
//! `sh -c` strings, here-documents fed to shells, `find -exec`, `xargs` — strips wrappers
//! (`env`, `timeout`, `nice`, `nohup`, `time`, `command`, `xargs`, `sudo`...), and judges each
//! one: the program and its arguments, the paths it reads and writes (checked against the
//! sandbox root lexically and through symlinks), and its redirections.
//!
//! Guarantees: the risk of the whole is the highest of its parts; a command that does not
//! parse cleanly is `dangerous`, one longer than [`MAX_SAFE_LEN`] is never `safe`; a program
//! named by path (`./ls`) never inherits the trust of its name; `catastrophic` is set for the
//! DESIGN §5.1 list however the command is spelled or nested. The function never panics and
//! never runs anything; it only reads directory metadata under the root (to see symlinks and
//! expand globs).
//!
//! Decisions (so the docs can quote them):
//! - Reads: a path outside the root (lexically, or through a symlink inside the root) is
//!   `moderate`; a place that holds secrets (`~/.ssh`, `~/.aws`, `~/.netrc`, `/etc/shadow`,
//!   `/proc/*/environ`...) is `dangerous`. A path only known at run time (`cat "$f"`) is
//!   `moderate`. `/dev/null`, `/dev/std*`, `/dev/fd/N` and `<(..)` are harmless.
//! - Writes (redirections, `tee`, `cp`/`mv`/`ln` targets, `sed -i`, `sort -o`, `git --output`,
//!   `find -fprint`, `tar -C`...): inside the root `moderate`, inside a protected path
//!   (`.git/`, `.ground-link/`, `.husky/`, `.envrc`, `.vscode/tasks.json`) `dangerous`, outside
//!   or unknown `dangerous`, to a raw disk (`/dev/sda`) or `/proc/sysrq-trigger` catastrophic.
//! - `moderate`: unknown programs; interpreters and shells (even `bash -c 'ls'`); test and
//!   build runners (`npm test`, `cargo test`, `make`, `pytest`: DESIGN's change to the PRD);
//!   `env`/`printenv`/`set`/`declare -p`; `awk`; `xargs`, `find -exec`, `eval`, `source`,
//!   `exec`; `touch`, `mkdir`, `cp`/`mv`/`ln`/`tee` inside the root; `git add`/`fetch`/`stash`/
//!   `branch NAME`/`config --get`; `cd` outside the root (and git in a nested repository);
//!   anything run by path (`./x`, `bin/x`, and also `/bin/ls`: one rule is easier to trust
//!   than a list of directories); variables that change what programs load (`PATH`,
//!   `LD_PRELOAD`, `GIT_*`...); options that follow symlinks (`grep -R`, `rg -L`, `find -L`).
//! - `dangerous`: the PRD's list — `rm`/`rmdir`/`shred`/`truncate`, `chmod`/`chown`, `sudo`/
//!   `su`/`doas`, `kill`/`pkill`, `curl`/`wget` (any use), package installs and publishing
//!   (`npm install`, `pip install`, `cargo add`...), `git commit`/`push`/`checkout`/`reset`/
//!   `rebase`/`merge`/`clean`, `git stash drop|pop|clear`, `git -c`, `git config` writes — and
//!   network tools (`ssh`, `scp`, `rsync`, `nc`), disks, services, containers, cloud CLIs; a
//!   computed program name (`$X y`); a shell fed by a pipe we cannot read (`curl .. | sh`);
//!   a command that does not parse.
//! - `safe`: read-only programs with read-only arguments inside the root (`ls`, `cat`,
//!   `grep`, `rg`, `find` without actions, `sed` without `e`/`w`/`-i`, git read subcommands in
//!   the root's own repository, `npm ls`...), `echo`/`printf`, shell plumbing (`cd` inside,
//!   `test`, `true`, assignments of harmless variables).
//! - Catastrophic (DESIGN §5.1 step 4): `rm -r` (any spelling, `-f` or not) or `chmod`/
//!   `chown -R` or `find -delete`/`-exec rm` on `/`, a top-level system directory, the home
//!   directory or anything holding it or the sandbox root, `~user`, `$VAR/` with `$VAR`
//!   possibly empty, or everything in one of those (`/*`, `~/*`); `mkfs*`, `mke2fs`,
//!   `wipefs -a`, `mkswap /dev/..`; `dd of=/dev/..`; writes to raw disks; fork bombs (a
//!   function that starts itself in a pipeline or in the background); `shutdown`/`reboot`/
//!   `halt`/`poweroff`, `init 0|6`, `systemctl poweroff|reboot|...`; `kill -1`; commands
//!   longer than [`MAX_LEN`]. A catastrophic command is also `dangerous`.

mod builtins;
mod catastrophic;
mod git;
mod paths;
mod plain;
mod programs;
mod sed;
mod syntax;
#[rustfmt::skip]
mod tables;
mod words;

use std::path::Path;

use serde::Serialize;

use crate::protocol::Risk;
use paths::{Cwds, Jail, Place};
use syntax::{RawKind, RawPart, RedirKind};
use words::{Word, WordBuilder, brace_expand};

/// Commands longer than this (in bytes) are never classified `safe`: a person cannot review
/// them at a glance.
pub const MAX_SAFE_LEN: usize = 4096;
/// Commands longer than this are not analysed at all and are treated as catastrophic.
pub const MAX_LEN: usize = 256 * 1024;
/// How deeply `sh -c`, `eval` and friends may nest before we stop following them.
const MAX_SCRIPT_DEPTH: u32 = 8;
/// How many simple commands one command line may contain.
const MAX_PARTS: usize = 1024;

/// What the classifier needs to know about where the command runs.
#[derive(Debug, Clone, Copy)]
pub struct ClassifyContext<'a> {
    /// The sandbox root, which is also the command's working directory.
    pub root: &'a Path,
    /// The user's home directory, for `~` and `$HOME`.
    pub home: Option<&'a Path>,
}

/// The verdict on one command line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CommandAnalysis {
    /// The highest risk of the parts (and of the parse itself).
    pub risk: Risk,
    /// Set when the command is on the catastrophic list: the engine denies it, and no rule,
    /// grant or approval can allow it.
    pub catastrophic: Option<String>,
    /// Every simple command, including those inside substitutions, `sh -c` strings, function
    /// bodies and the like, in the order they appear.
    pub parts: Vec<CommandPart>,
    /// Why the command could not be fully analysed (parse error, too long, too deep).
    pub parse_error: Option<String>,
    /// Human explanations for the risk, most important first.
    pub reasons: Vec<String>,
}

/// One simple command inside a command line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CommandPart {
    /// The source text of this simple command.
    pub text: String,
    /// The words as written, quotes removed; expansions keep their source text (`$HOME`).
    pub words: Vec<String>,
    /// The words after stripping wrappers (`env X=1`, `timeout 5`, `sudo -u x`, `xargs -0`...):
    /// the program that really runs, then its arguments. Empty for a bare assignment or a
    /// redirection with no command.
    pub effective: Vec<String>,
    pub risk: Risk,
    /// Paths the command reads or writes, including redirection targets: absolute when they
    /// can be resolved (`~` expanded, joined to the working directory), otherwise as written.
    pub paths: Vec<String>,
    /// The subset of `paths` the command writes.
    pub writes: Vec<String>,
    /// Why this part has its risk.
    pub reasons: Vec<String>,
    /// Set when this part is on the catastrophic list.
    pub catastrophic: Option<String>,
}

/// Classifies a shell command line that would run in `ctx.root`.
pub fn classify(command: &str, ctx: &ClassifyContext) -> CommandAnalysis {
    let mut a = Analyzer::new(ctx);
    if command.len() > MAX_LEN {
        let why = format!(
            "the command is {} bytes long, over the {MAX_LEN}-byte limit; put long content in a \
             file with write_file and run a short command",
            command.len()
        );
        a.fail(Risk::Dangerous, why.clone());
        a.catastrophic.get_or_insert(why);
        return a.finish();
    }
    if command.contains('\0') {
        a.fail(
            Risk::Dangerous,
            "the command contains a NUL byte, which a shell cannot run; remove it".to_owned(),
        );
    }
    a.script(command, 0);
    if command.len() > MAX_SAFE_LEN {
        a.fail(
            Risk::Moderate,
            format!(
                "the command is {} bytes long; commands over {MAX_SAFE_LEN} bytes are never \
                 classified safe",
                command.len()
            ),
        );
    }
    a.finish()
}

/// The simple commands the parser reads in `command` on its own, without judging them: the
/// words of each (`None` for a word only known at run time), or why the parser refused the
/// text. For the differential oracle (tests/oracle.rs), which measures it against bash.
#[doc(hidden)]
pub fn parser_reading(command: &str) -> Result<Vec<Vec<Option<String>>>, String> {
    let syn = syntax::read(command)?;
    Ok(syn
        .parts
        .iter()
        .filter(|p| {
            p.kind == RawKind::Command || (p.kind == RawKind::Assignment && !p.words.is_empty())
        })
        .map(|p| {
            p.words
                .iter()
                .map(|w| {
                    (!w.dynamic && !w.glob && !w.text.starts_with('~')).then(|| w.text.clone())
                })
                .collect()
        })
        .collect())
}

/// What a command gets on standard input, as far as we know.
#[derive(Debug, Clone, Default)]
pub(crate) struct Io {
    /// The text of a here-document, here-string or `echo ... |` feeding the command.
    pub stdin_script: Option<String>,
    /// Standard input is a pipe from a command whose output we do not know.
    pub piped_stdin: bool,
}

/// The judgement of one part, built up while looking at it.
#[derive(Debug)]
pub(crate) struct Acc {
    pub risk: Risk,
    pub reasons: Vec<String>,
    pub paths: Vec<String>,
    pub writes: Vec<String>,
    pub catastrophic: Option<String>,
    /// Working directories for this command only (`env -C dir`, `sudo -D dir`).
    pub cwds: Option<Cwds>,
}

impl Acc {
    fn new() -> Acc {
        Acc {
            risk: Risk::Safe,
            reasons: Vec::new(),
            paths: Vec::new(),
            writes: Vec::new(),
            catastrophic: None,
            cwds: None,
        }
    }

    /// Raises the risk to at least `risk`, recording why (reasons are only kept above safe).
    pub fn raise(&mut self, risk: Risk, why: impl Into<String>) {
        if risk == Risk::Safe {
            return;
        }
        let why = why.into();
        if !self.reasons.contains(&why) {
            self.reasons.push(why);
        }
        self.risk = self.risk.max(risk);
    }

    /// Marks the part catastrophic.
    pub fn doom(&mut self, why: String) {
        self.raise(Risk::Dangerous, why.clone());
        self.catastrophic.get_or_insert(why);
    }
}

/// Walks one command line (and the scripts nested in it), judging each simple command.
pub(crate) struct Analyzer {
    pub jail: Jail,
    pub cwds: Cwds,
    /// Static values given to shell variables so far (`X=rm`, `for d in / ~`).
    pub vars: catastrophic::Vars,
    parts: Vec<CommandPart>,
    catastrophic: Option<String>,
    errors: Vec<String>,
    floor: Risk,
    floor_reasons: Vec<String>,
    too_many: bool,
}

impl Analyzer {
    fn new(ctx: &ClassifyContext) -> Analyzer {
        let jail = Jail::new(ctx.root, ctx.home);
        let cwds = jail.initial_cwds();
        Analyzer {
            jail,
            cwds,
            vars: catastrophic::Vars::default(),
            parts: Vec::new(),
            catastrophic: None,
            errors: Vec::new(),
            floor: Risk::Safe,
            floor_reasons: Vec::new(),
            too_many: false,
        }
    }

    /// Records a reason the command cannot be fully trusted as analysed.
    fn fail(&mut self, risk: Risk, why: String) {
        self.floor = self.floor.max(risk);
        if !self.errors.contains(&why) {
            self.errors.push(why.clone());
        }
        if !self.floor_reasons.contains(&why) {
            self.floor_reasons.push(why);
        }
    }

    /// Raises the whole command's risk for a reason that is not a failure to analyse it.
    fn flag(&mut self, risk: Risk, why: String) {
        self.floor = self.floor.max(risk);
        if !self.floor_reasons.contains(&why) {
            self.floor_reasons.push(why);
        }
    }

    fn finish(self) -> CommandAnalysis {
        let mut risk = self.floor;
        let mut reasons = self.floor_reasons;
        let mut catastrophic = self.catastrophic;
        for p in &self.parts {
            risk = risk.max(p.risk);
            if catastrophic.is_none() {
                catastrophic.clone_from(&p.catastrophic);
            }
        }
        if let Some(c) = &catastrophic {
            risk = Risk::Dangerous;
            if !reasons.contains(c) {
                reasons.insert(0, c.clone());
            }
        }
        // Reasons of the riskiest parts first.
        for level in [Risk::Dangerous, Risk::Moderate] {
            for p in self.parts.iter().filter(|p| p.risk == level) {
                for r in &p.reasons {
                    if !reasons.contains(r) {
                        reasons.push(r.clone());
                    }
                }
            }
        }
        CommandAnalysis {
            risk,
            catastrophic,
            parts: self.parts,
            parse_error: if self.errors.is_empty() {
                None
            } else {
                Some(self.errors.join("; "))
            },
            reasons,
        }
    }

    /// Parses `src` and judges every simple command in it. `depth` counts nested scripts.
    pub(crate) fn script(&mut self, src: &str, depth: u32) {
        if depth > MAX_SCRIPT_DEPTH {
            self.fail(
                Risk::Dangerous,
                format!(
                    "commands nest more than {MAX_SCRIPT_DEPTH} levels deep (sh -c, eval...); \
                     write them out plainly"
                ),
            );
            self.fallback(src);
            return;
        }
        let syn = match syntax::read(src) {
            Ok(syn) => syn,
            Err(e) => {
                // Still look for catastrophic commands, so a syntax error cannot hide `rm -rf ~`.
                self.fail(Risk::Dangerous, e);
                self.fallback(src);
                return;
            }
        };
        for f in &syn.fork_bombs {
            let why = format!(
                "`{f}` is a fork bomb: the function starts copies of itself in a pipeline or \
                 in the background"
            );
            self.fail(Risk::Dangerous, why.clone());
            self.catastrophic.get_or_insert(why);
        }
        self.variables(&syn);
        for text in &syn.arithmetic {
            self.fallback(text);
        }
        self.parts.reserve(syn.parts.len().min(MAX_PARTS));
        for raw in syn.parts {
            self.eval_raw(raw, depth);
        }
    }

    /// Judges what the reading found about variables, and what it could not follow.
    fn variables(&mut self, syn: &syntax::Syntax) {
        for why in &syn.unmodeled {
            self.fail(Risk::Dangerous, why.clone());
        }
        // Variables set by any means (`for PATH in .`, `read -a CDPATH`, `mapfile PS4`) are
        // judged as assignments are; those that make the shell run code are dangerous.
        for name in &syn.assigned {
            if let Some(why) = tables::sensitive_var(name, "") {
                let risk = if why == tables::RUNS_CODE || why == tables::CHANGES_CWD {
                    Risk::Dangerous
                } else {
                    Risk::Moderate
                };
                self.flag(risk, format!("sets {name}, {why}"));
            }
        }
        // A variable this command line gave a value before expanding it is its own (a secret
        // copied into one was expanded, and flagged, where it was read); any other one comes
        // from the environment, where secrets live.
        for (name, at) in &syn.variables {
            let own = syn.own.iter().any(|(n, set)| n == name && set < at);
            if !tables::harmless_var(name) && !own {
                self.flag(
                    Risk::Moderate,
                    format!(
                        "expands ${name}, which comes from the environment and may hold a \
                         secret that would go to the model"
                    ),
                );
            }
        }
    }

    /// Judges one simple command and records it as a part.
    pub(crate) fn eval_raw(&mut self, raw: RawPart, depth: u32) {
        if raw.kind == RawKind::Bind {
            self.bind(&raw.assigns);
            return;
        }
        if self.parts.len() >= MAX_PARTS {
            if !self.too_many {
                self.too_many = true;
                self.fail(
                    Risk::Dangerous,
                    format!("the command has more than {MAX_PARTS} simple commands; split it up"),
                );
            }
            return;
        }
        let idx = self.parts.len();
        self.parts.push(CommandPart {
            text: String::new(),
            words: Vec::new(),
            effective: Vec::new(),
            risk: Risk::Safe,
            paths: Vec::new(),
            writes: Vec::new(),
            reasons: Vec::new(),
            catastrophic: None,
        });
        let mut acc = Acc::new();
        let mut words: Vec<String> = Vec::with_capacity(raw.assigns.len() + raw.words.len());
        let mut effective: Vec<String> = Vec::new();
        // With the values variables were given, the command may be worse than it looks.
        let mut alternatives = Vec::new();
        match raw.kind {
            RawKind::Assignment => {
                words.extend(raw.words.iter().map(|w| w.text.clone()));
                words.extend(raw.assigns.iter().map(|w| w.text.clone()));
                self.assignments(&mut acc, &raw.assigns);
                self.bind(&raw.assigns);
                if let Some(first) = raw.words.first() {
                    effective.clone_from(&words);
                    let named = raw.words.iter().skip(1).any(|w| !w.is_option());
                    if first.text != "unset" && raw.assigns.is_empty() && !named {
                        acc.raise(
                            Risk::Moderate,
                            format!(
                                "{} without names prints variables, which may hold secrets",
                                first.text
                            ),
                        );
                    }
                }
            }
            RawKind::RedirectOnly => {}
            RawKind::Command => {
                self.assignments(&mut acc, &raw.assigns);
                let io = Io {
                    stdin_script: raw.stdin_script,
                    piped_stdin: raw.piped_stdin,
                };
                let start = self.command(&mut acc, &raw.words, &io, depth);
                alternatives = self.substituted(&raw.words);
                // The words are not needed any more: their texts move into the part.
                let assigned = raw.assigns.len();
                words.extend(raw.assigns.into_iter().map(|w| w.text));
                words.extend(raw.words.into_iter().map(|w| w.text));
                effective = words[(assigned + start).min(words.len())..].to_vec();
            }
            RawKind::Bind => {}
        }
        for r in &raw.redirects {
            match r.kind {
                RedirKind::Dup => {}
                RedirKind::Read => self.read_path(&mut acc, &r.target),
                RedirKind::Write => self.write_path(&mut acc, &r.target),
            }
        }
        self.parts[idx] = CommandPart {
            text: raw.text,
            words,
            effective,
            risk: acc.risk,
            paths: acc.paths,
            writes: acc.writes,
            reasons: acc.reasons,
            catastrophic: acc.catastrophic,
        };
        for alt in alternatives {
            self.nested(alt, depth);
        }
    }

    /// Remembers static values given to variables, for [`Analyzer::substituted`].
    fn bind(&mut self, assigns: &[Word]) {
        for a in assigns {
            if a.dynamic {
                continue;
            }
            let Some((name, value)) = a.text.split_once('=') else {
                continue;
            };
            if value.starts_with('(') || name.contains('[') {
                continue;
            }
            let values = self
                .vars
                .entry(name.trim_end_matches('+').to_owned())
                .or_default();
            if values.len() < 8 && !values.iter().any(|v| v == value) {
                values.push(value.to_owned());
            }
        }
    }

    /// The command's words with known variables replaced by their values (split on blanks,
    /// as an unquoted expansion would be); empty when nothing changes.
    fn substituted(&self, words: &[Word]) -> Vec<Vec<Word>> {
        const MAX_ALTERNATIVES: usize = 8;
        if self.vars.is_empty() || !words.iter().any(|w| w.dynamic) {
            return Vec::new();
        }
        let mut alts: Vec<Vec<Word>> = vec![Vec::with_capacity(words.len())];
        let mut changed = false;
        for w in words {
            let known = w
                .after_lead_var()
                .and_then(|(name, rest)| self.vars.get(name).map(|vals| (vals, rest)));
            let options: Vec<Vec<Word>> = match known {
                Some((vals, rest)) => {
                    changed = true;
                    vals.iter()
                        .map(|v| {
                            let text = format!("{v}{rest}");
                            if rest.is_empty() {
                                text.split_whitespace().map(Word::literal).collect()
                            } else {
                                vec![Word::literal(&text)]
                            }
                        })
                        .collect()
                }
                None => vec![vec![w.clone()]],
            };
            let mut next = Vec::new();
            for a in &alts {
                for o in &options {
                    if next.len() < MAX_ALTERNATIVES {
                        let mut n = a.clone();
                        n.extend(o.iter().cloned());
                        next.push(n);
                    }
                }
            }
            alts = next;
        }
        if changed { alts } else { Vec::new() }
    }

    /// Judges a command that another command runs (`find -exec`, a wrapper we only guess).
    pub(crate) fn nested(&mut self, words: Vec<Word>, depth: u32) {
        let text = words
            .iter()
            .map(|w| w.text.as_str())
            .collect::<Vec<_>>()
            .join(" ");
        let mut raw = RawPart {
            kind: RawKind::Command,
            text,
            assigns: Vec::new(),
            words,
            redirects: Vec::new(),
            stdin_script: None,
            piped_stdin: false,
            in_pipeline: false,
            background: false,
            nest: 0,
        };
        raw.words = raw.words.into_iter().flat_map(brace_expand).collect();
        self.eval_raw(raw, depth + 1);
    }

    /// Variables that change what later commands do when set.
    fn assignments(&mut self, acc: &mut Acc, assigns: &[Word]) {
        for a in assigns {
            let (name, value) = a.text.split_once('=').unwrap_or((a.text.as_str(), ""));
            let name = name.split('[').next().unwrap_or("").trim_end_matches('+');
            if let Some(why) = tables::sensitive_var(name, value) {
                acc.raise(Risk::Moderate, format!("sets {name}, {why}"));
            }
            // A variable whose value a program runs as a command (`GREP='rm -rf ~' zgrep`):
            // judge the value as one.
            if tables::COMMAND_VARS.contains(&name) && !value.is_empty() {
                if a.dynamic {
                    acc.raise(
                        Risk::Dangerous,
                        format!(
                            "sets {name}, a command run later, to a value only known at run time"
                        ),
                    );
                } else {
                    let v = value.to_owned();
                    self.script(&v, 1);
                }
            }
        }
    }

    pub(crate) fn cwds_for<'a>(&'a self, acc: &'a Acc) -> &'a Cwds {
        acc.cwds.as_ref().unwrap_or(&self.cwds)
    }

    /// Records a path the command reads and raises the risk if it is outside the root.
    pub(crate) fn read_path(&self, acc: &mut Acc, w: &Word) {
        let loc = self.jail.locate(w, self.cwds_for(acc));
        if loc.place == Place::Harmless {
            return;
        }
        push_unique(&mut acc.paths, &loc.shown);
        match loc.place {
            Place::Inside | Place::Harmless => {}
            Place::Outside { sensitive: true } => acc.raise(
                Risk::Dangerous,
                format!(
                    "reads {}, which holds secrets, outside the sandbox root",
                    loc.shown
                ),
            ),
            Place::Outside { sensitive: false } => acc.raise(
                Risk::Moderate,
                format!("reads {} outside the sandbox root", loc.shown),
            ),
            Place::Unknown => acc.raise(
                Risk::Moderate,
                format!(
                    "reads `{}`, a path only known when the command runs",
                    w.text
                ),
            ),
            Place::RawDevice => acc.raise(
                Risk::Dangerous,
                format!("reads the raw device {}", loc.shown),
            ),
            Place::Network => acc.raise(
                Risk::Dangerous,
                format!("opens a network connection through {}", loc.shown),
            ),
            Place::Device => acc.raise(Risk::Moderate, format!("reads the device {}", loc.shown)),
        }
    }

    /// Records a path the command writes and raises the risk accordingly.
    pub(crate) fn write_path(&self, acc: &mut Acc, w: &Word) {
        let loc = self.jail.locate(w, self.cwds_for(acc));
        if loc.place == Place::Harmless {
            return;
        }
        push_unique(&mut acc.paths, &loc.shown);
        push_unique(&mut acc.writes, &loc.shown);
        match loc.place {
            Place::Inside | Place::Harmless => {
                if let Some(what) = programs::protected(&self.jail, &loc.shown) {
                    acc.raise(Risk::Dangerous, format!("writes {}, {what}", loc.shown));
                } else {
                    acc.raise(Risk::Moderate, format!("writes {}", loc.shown));
                }
            }
            Place::Outside { .. } if loc.shown == "/proc/sysrq-trigger" => acc.doom(
                "writes /proc/sysrq-trigger, which can crash or restart the machine at once"
                    .to_owned(),
            ),
            Place::Outside { .. } | Place::Device => acc.raise(
                Risk::Dangerous,
                format!("writes {} outside the sandbox root", loc.shown),
            ),
            Place::Unknown => acc.raise(
                Risk::Dangerous,
                format!(
                    "writes `{}`, a path only known when the command runs",
                    w.text
                ),
            ),
            Place::RawDevice => {
                acc.doom(format!("writes straight to the raw device {}", loc.shown));
            }
            Place::Network => acc.raise(
                Risk::Dangerous,
                format!("sends data over the network through {}", loc.shown),
            ),
        }
    }

    /// When the parser could not make sense of a command, looks for catastrophic commands in
    /// a crude split of the raw text, so a syntax error cannot hide `rm -rf ~`.
    fn fallback(&mut self, src: &str) {
        for segment in src.split([';', '&', '|', '\n', '(', ')', '`']) {
            let words: Vec<Word> = segment
                .split_whitespace()
                .map(crude_word)
                .flat_map(brace_expand)
                .collect();
            for i in 0..words.len() {
                let name = words[i].text.rsplit('/').next().unwrap_or("");
                if catastrophic::has_catastrophic_form(name) {
                    if let Some(why) = catastrophic::check(
                        &self.jail,
                        &self.cwds,
                        &self.vars,
                        name,
                        &words[i + 1..],
                    ) {
                        self.fail(Risk::Dangerous, why.clone());
                        self.catastrophic.get_or_insert(why);
                        return;
                    }
                }
            }
        }
    }
}

/// A token of the crude fallback split: quotes and backslashes dropped, a leading `$NAME`
/// kept as a variable.
fn crude_word(token: &str) -> Word {
    let cleaned: String = token
        .chars()
        .filter(|c| !matches!(c, '\'' | '"' | '\\'))
        .collect();
    let mut b = WordBuilder::default();
    if let Some(after) = cleaned.strip_prefix('$') {
        let (name, len) = if let Some(braced) = after.strip_prefix('{') {
            match braced.find('}') {
                Some(end) => (&braced[..end], end + 3),
                None => ("", 0),
            }
        } else {
            let end = after
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(after.len());
            (&after[..end], end + 1)
        };
        if !name.is_empty() && len <= cleaned.len() {
            b.push_dynamic(&cleaned[..len], Some(name));
            let rest = &cleaned[len..];
            if rest.contains('$') {
                b.push_dynamic(rest, None);
            } else {
                b.push_unquoted_raw(rest);
            }
            return b.finish();
        }
        b.push_dynamic(&cleaned, None);
        return b.finish();
    }
    if cleaned.contains('$') {
        b.push_dynamic(&cleaned, None);
    } else {
        b.push_unquoted_raw(&cleaned);
    }
    b.finish()
}

fn push_unique(v: &mut Vec<String>, s: &str) {
    if !v.iter().any(|x| x == s) {
        v.push(s.to_owned());
    }
}
