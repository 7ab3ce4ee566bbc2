//! git: read subcommands are safe in the sandbox root's own repository when no option makes
//! them write files or run programs; the permission PRD's write subcommands stay dangerous.

use std::path::Path;

use crate::protocol::Risk::{Dangerous, Moderate, Safe};

use super::paths::Place;
use super::words::Word;
use super::{Acc, Analyzer};

/// Subcommands that only read the repository.
const READ: &[&str] = &[
    "status",
    "log",
    "diff",
    "show",
    "blame",
    "annotate",
    "rev-parse",
    "rev-list",
    "ls-files",
    "ls-tree",
    "cat-file",
    "describe",
    "shortlog",
    "grep",
    "whatchanged",
    "name-rev",
    "merge-base",
    "for-each-ref",
    "show-ref",
    "show-branch",
    "count-objects",
    "check-ignore",
    "check-attr",
    "check-ref-format",
    "diff-tree",
    "diff-files",
    "diff-index",
    "version",
    "range-diff",
    "cherry",
    "verify-pack",
    "fsck",
];

/// Read subcommands that print file contents (of the work tree's changes or of history):
/// what they print can be a secret committed long ago, so they are not silent.
const PRINTS_CONTENTS: &[&str] = &["show", "diff", "grep", "cat-file", "range-diff"];
/// Read subcommands that print contents only with a patch option (`git log -p`).
const PRINTS_WITH_PATCH: &[&str] = &[
    "log",
    "whatchanged",
    "diff-tree",
    "diff-files",
    "diff-index",
];

/// Subcommands the permission PRD calls dangerous, plus those that delete or rewrite work.
const DANGEROUS: &[&str] = &[
    "push",
    "commit",
    "checkout",
    "switch",
    "restore",
    "reset",
    "rebase",
    "merge",
    "pull",
    "cherry-pick",
    "revert",
    "am",
    "clean",
    "rm",
    "filter-branch",
    "filter-repo",
    "update-ref",
    "gc",
    "prune",
    "bisect",
    "send-email",
    "daemon",
    "credential",
    "credential-store",
    "credential-cache",
    "replace",
    "request-pull",
    "imap-send",
    "p4",
    "svn",
    "cvsimport",
    "cvsserver",
    "upload-pack",
    "receive-pack",
    "shell",
    "http-backend",
    "instaweb",
];

impl Analyzer {
    pub(super) fn git(&mut self, acc: &mut Acc, args: &[Word]) {
        let mut j = 0;
        let mut foreign = {
            let cw = self.cwds_for(acc);
            cw.unknown || cw.dirs.iter().any(|d| self.foreign_repo(d))
        };
        while let Some(w) = args.get(j) {
            let t = w.text.as_str();
            if !w.is_option() {
                break;
            }
            j += 1;
            match t {
                "-C" | "--git-dir" | "--work-tree" => {
                    if let Some(d) = args.get(j) {
                        foreign |= self.git_dir_option(acc, t, d);
                    }
                    j += 1;
                }
                "-c" | "--config-env" => {
                    acc.raise(
                        Dangerous,
                        "git -c can set options that run programs (core.pager, core.sshCommand, alias.*)",
                    );
                    j += 1;
                }
                "--namespace" | "--super-prefix" | "--list-cmds" | "--attr-source" => j += 1,
                "-p"
                | "--paginate"
                | "-P"
                | "--no-pager"
                | "--bare"
                | "--no-replace-objects"
                | "--literal-pathspecs"
                | "--glob-pathspecs"
                | "--noglob-pathspecs"
                | "--icase-pathspecs"
                | "--no-optional-locks"
                | "--no-advice"
                | "--version"
                | "-v"
                | "--help"
                | "-h"
                | "--html-path"
                | "--man-path"
                | "--info-path"
                | "--exec-path"
                | "--no-lazy-fetch" => {}
                _ if t.starts_with("--exec-path=") => acc.raise(
                    Dangerous,
                    "git --exec-path runs git's helper programs from another directory",
                ),
                _ if t.starts_with("--config-env")
                    || (t.starts_with("-c") && !t.starts_with("--")) =>
                {
                    acc.raise(
                        Dangerous,
                        "git -c can set options that run programs (core.pager, core.sshCommand, alias.*)",
                    );
                }
                _ if t.starts_with("--git-dir=") || t.starts_with("--work-tree=") => {
                    let (opt, v) = t.split_once('=').unwrap_or((t, ""));
                    let d = Word::literal(v);
                    let d = if w.dynamic { dynamic_word(v) } else { d };
                    foreign |= self.git_dir_option(acc, opt, &d);
                }
                _ if t.starts_with("-C") => {
                    let v = &t[2..];
                    let d = if w.dynamic {
                        dynamic_word(v)
                    } else {
                        Word::literal(v)
                    };
                    foreign |= self.git_dir_option(acc, "-C", &d);
                }
                _ if t.starts_with("--namespace=")
                    || t.starts_with("--list-cmds=")
                    || t.starts_with("--attr-source=") => {}
                _ => acc.raise(
                    Moderate,
                    format!("git option {t} is not one ground-link knows"),
                ),
            }
        }
        let Some(sub) = args.get(j) else {
            return;
        };
        if sub.dynamic {
            acc.raise(
                Dangerous,
                format!(
                    "the git subcommand `{}` is only known when the command runs",
                    sub.text
                ),
            );
            return;
        }
        let rest = &args[j + 1..];
        let s = sub.text.as_str();
        let before = acc.risk;
        acc.risk = Safe;
        match s {
            "branch" => self.git_branch(acc, rest),
            "tag" => {
                let listing = rest.is_empty()
                    || rest
                        .iter()
                        .any(|a| matches!(a.text.as_str(), "-l" | "--list"))
                    || rest.iter().all(|a| {
                        a.is_option()
                            && !matches!(
                                a.text.as_str(),
                                "-d" | "--delete"
                                    | "-f"
                                    | "--force"
                                    | "-a"
                                    | "-s"
                                    | "-m"
                                    | "-F"
                                    | "-v"
                                    | "--verify"
                            )
                    });
                if !listing {
                    acc.raise(Moderate, "git tag creates, deletes or verifies tags");
                }
            }
            "remote" => {
                let first = rest
                    .iter()
                    .find(|a| !a.is_option())
                    .map(|a| a.text.as_str());
                let verbose = rest
                    .iter()
                    .any(|a| a.text == "-v" || long(a.text.as_str(), "--verbose"));
                match first {
                    None if !verbose => {}
                    None | Some("get-url") => acc.raise(
                        Moderate,
                        "git remote -v / get-url print remote URLs, which may hold tokens",
                    ),
                    Some("show") => acc.raise(Moderate, "git remote show contacts the remote"),
                    Some(_) => acc.raise(
                        Moderate,
                        "git remote changes where the repository fetches and pushes",
                    ),
                }
            }
            "stash" => match rest.first().map(|a| a.text.as_str()) {
                Some("show") if rest.iter().any(|a| patch_option(&a.text)) => acc.raise(
                    Moderate,
                    "git stash show -p prints file contents, which can hold secrets",
                ),
                Some("list") | Some("show") => {}
                Some("drop") | Some("pop") | Some("clear") => {
                    acc.raise(Dangerous, "git stash drop/pop/clear can lose stashed work")
                }
                _ => acc.raise(Moderate, "git stash changes the working tree"),
            },
            "config" => {
                let read = rest.iter().any(|a| {
                    matches!(
                        a.text.as_str(),
                        "--get"
                            | "--get-all"
                            | "--get-regexp"
                            | "-l"
                            | "--list"
                            | "--get-urlmatch"
                            | "get"
                            | "list"
                    )
                });
                if read {
                    acc.raise(
                        Moderate,
                        "git config prints settings, which may hold tokens",
                    );
                } else {
                    acc.raise(Dangerous, "git config can set options that run programs");
                }
            }
            "var" => acc.raise(
                Moderate,
                "git var prints settings (git var -l: all of them), which may hold tokens",
            ),
            "fsck" => {
                if rest.iter().any(|a| long(a.text.as_str(), "--lost-found")) {
                    acc.raise(Moderate, "git fsck --lost-found writes into .git");
                }
            }
            "reflog" => match rest.first().map(|a| a.text.as_str()) {
                Some("expire") | Some("delete") => {
                    acc.raise(Dangerous, "git reflog expire/delete drops history")
                }
                _ => {}
            },
            "worktree" => match rest.first().map(|a| a.text.as_str()) {
                Some("list") => {}
                _ => acc.raise(Moderate, "git worktree changes working trees"),
            },
            "submodule" => match rest.first().map(|a| a.text.as_str()) {
                Some("status") | None => {}
                _ => acc.raise(Moderate, "git submodule fetches or changes submodules"),
            },
            _ if (PRINTS_CONTENTS.contains(&s) && !summary_only(s, rest))
                || (PRINTS_WITH_PATCH.contains(&s)
                    && rest.iter().any(|a| patch_option(&a.text))) =>
            {
                acc.raise(
                    Moderate,
                    format!(
                        "git {s} prints file contents from the repository, whose history can \
                         hold secrets (a .env committed once)"
                    ),
                )
            }
            _ if READ.contains(&s) => {}
            _ if DANGEROUS.contains(&s) => acc.raise(
                Dangerous,
                format!("git {s} changes or discards history or work"),
            ),
            "add" | "mv" | "init" | "clone" | "fetch" | "apply" | "notes" | "update-index"
            | "symbolic-ref" | "archive" | "format-patch" | "bundle" | "lfs" | "hook"
            | "maintenance" | "sparse-checkout" | "stage" | "citool" | "gui" | "difftool"
            | "mergetool" | "ls-remote" | "help" | "repack" | "pack-refs" | "commit-tree"
            | "write-tree" | "read-tree" | "mktag" | "mktree" | "hash-object" => acc.raise(
                Moderate,
                format!("git {s} changes the repository or runs helper programs"),
            ),
            _ => acc.raise(
                Moderate,
                format!("git {s} is not a git subcommand ground-link knows (it may be an alias)"),
            ),
        }
        self.git_args(acc, s, rest);
        if foreign && acc.risk == Safe {
            acc.raise(
                Moderate,
                "git runs in a repository other than the sandbox root's, whose configuration can run programs",
            );
        }
        acc.risk = acc.risk.max(before);
    }

    /// `-C dir`, `--git-dir`, `--work-tree`: records the path; true when it names another
    /// repository than the root's.
    fn git_dir_option(&self, acc: &mut Acc, opt: &str, d: &Word) -> bool {
        self.read_path(acc, d);
        let loc = self.jail.locate(d, self.cwds_for(acc));
        if loc.place != Place::Inside {
            return true;
        }
        if opt != "-C" {
            return true;
        }
        match self.jail.candidates(d, self.cwds_for(acc)) {
            Some(c) => c.iter().any(|(n, _)| self.foreign_repo(n)),
            None => true,
        }
    }

    /// Whether `dir` (inside the root) belongs to a repository nested below the root.
    fn foreign_repo(&self, dir: &Path) -> bool {
        let mut d = dir;
        loop {
            if d == self.jail.root.as_path() {
                return false;
            }
            if !d.starts_with(&self.jail.root) {
                return true;
            }
            if d.join(".git").symlink_metadata().is_ok() || looks_like_git_dir(d) {
                return true;
            }
            match d.parent() {
                Some(p) => d = p,
                None => return true,
            }
        }
    }

    fn git_branch(&mut self, acc: &mut Acc, rest: &[Word]) {
        let mut listing = false;
        let mut positional = false;
        for a in rest {
            let t = a.text.as_str();
            match t {
                "-l" | "--list" | "-a" | "--all" | "-r" | "--remotes" | "--show-current"
                | "--merged" | "--no-merged" | "--contains" | "--no-contains" | "--points-at" => {
                    listing = true
                }
                "-D" | "-M" | "-C" | "-f" | "--force" => {
                    acc.raise(Dangerous, "git branch with force can lose commits")
                }
                "-d" | "--delete" | "-m" | "--move" | "-c" | "--copy" | "-u"
                | "--set-upstream-to" | "--unset-upstream" | "--edit-description" | "-t"
                | "--track" | "--no-track" | "--create-reflog" => {
                    acc.raise(Moderate, "git branch changes branches")
                }
                _ if t.starts_with("--set-upstream-to=") || t.starts_with("--track=") => {
                    acc.raise(Moderate, "git branch changes branches")
                }
                // Options that only shape a listing; anything else (an abbreviation such as
                // `--uns` for `--unset-upstream` included) is not taken for read-only.
                "-v" | "-vv" | "--verbose" | "-q" | "--quiet" | "-i" | "--ignore-case"
                | "--column" | "--no-column" | "--color" | "--no-color" | "--no-abbrev"
                | "--omit-empty" => {}
                _ if t.starts_with("--format=")
                    || t.starts_with("--sort=")
                    || t.starts_with("--abbrev")
                    || t.starts_with("--color=")
                    || t.starts_with("--column=")
                    || t.starts_with("--contains=")
                    || t.starts_with("--no-contains=")
                    || t.starts_with("--merged=")
                    || t.starts_with("--no-merged=")
                    || t.starts_with("--points-at=") => {}
                _ if a.is_option() => acc.raise(
                    Moderate,
                    format!("git branch option {t} is not one ground-link knows to only list"),
                ),
                _ => positional = true,
            }
        }
        if positional && !listing {
            acc.raise(Moderate, "git branch NAME creates a branch");
        }
    }

    /// Options of any subcommand that write files or run programs, and path operands.
    fn git_args(&mut self, acc: &mut Acc, sub: &str, rest: &[Word]) {
        let mut i = 0;
        let mut ended = false;
        while let Some(w) = rest.get(i) {
            let t = w.text.as_str();
            i += 1;
            if ended || !w.is_option() {
                self.read_path(acc, w);
                // `HEAD:.env`, `:0:.env`, `v1.2:keys/a.pem`: the path in a revision is read too.
                if let Some(path) = revision_path(w) {
                    self.read_path(acc, &path);
                }
                continue;
            }
            if t == "--" {
                ended = true;
                continue;
            }
            let name = t.split_once('=').map_or(t, |(n, _)| n);
            let value = || -> Option<Word> {
                t.split_once('=').map(|(_, v)| {
                    if w.dynamic {
                        dynamic_word(v)
                    } else {
                        Word::literal(v)
                    }
                })
            };
            if long(name, "--output") {
                match value() {
                    Some(v) => self.write_path(acc, &v),
                    None => {
                        if let Some(v) = rest.get(i) {
                            self.write_path(acc, v);
                        }
                        i += 1;
                    }
                }
            } else if long(name, "--ext-diff") {
                acc.raise(Moderate, "git --ext-diff runs an external diff program");
            } else if long(name, "--open-files-in-pager")
                || (sub == "grep" && grep_pager_in_cluster(t).is_some())
            {
                acc.raise(Moderate, "git grep -O opens files in a pager program");
                // The value is a shell command: judge it as one (`--op='rm -rf ~;:'`, `-iOcmd`).
                let program = if t.starts_with("--") {
                    t.split_once('=').map(|(_, v)| v)
                } else {
                    grep_pager_in_cluster(t).filter(|v| !v.is_empty())
                };
                if let Some(program) = program {
                    self.script(program, 1);
                }
            } else if long(name, "--upload-pack")
                || long(name, "--receive-pack")
                || long(name, "--exec")
            {
                acc.raise(Dangerous, format!("git {name} runs a program"));
            } else if (sub == "format-patch" || sub == "archive")
                && (t == "-o" || name == "--output-directory")
            {
                if let Some(v) = value().or_else(|| rest.get(i).cloned()) {
                    self.write_path(acc, &v);
                }
                i += 1;
            } else if let Some(v) = value() {
                if matches!(
                    name,
                    "--contents"
                        | "--ignore-revs-file"
                        | "--exclude-from"
                        | "--pathspec-from-file"
                        | "--file"
                ) {
                    self.read_path(acc, &v);
                }
            }
        }
    }
}

/// A folder git would take for a repository by itself (a bare-style directory with `HEAD`
/// and `objects/` or `config`): a committed one runs its own `core.fsmonitor`, `core.pager`
/// and drivers when git is started inside it.
fn looks_like_git_dir(d: &Path) -> bool {
    d.join("HEAD").symlink_metadata().is_ok()
        && (d.join("objects").symlink_metadata().is_ok()
            || d.join("config").symlink_metadata().is_ok()
            || d.join("refs").symlink_metadata().is_ok())
}

/// Whether `name` is `full` or a prefix git would take for it: git accepts any unambiguous
/// abbreviation of a long option (`--op` for `--open-files-in-pager`), and an ambiguous one
/// is refused by git itself, so every prefix counts.
fn long(name: &str, full: &str) -> bool {
    name == full || (name.len() >= 3 && name.starts_with("--") && full.starts_with(name))
}

/// The path part of a `<rev>:<path>` or `:<stage>:<path>` argument.
fn revision_path(w: &Word) -> Option<Word> {
    if w.dynamic {
        return None;
    }
    let t = w.text.as_str();
    let path = match t.strip_prefix(':') {
        Some(rest) => match rest.split_once(':') {
            Some((stage, p)) if stage.len() == 1 && stage.bytes().all(|b| b.is_ascii_digit()) => p,
            _ => rest,
        },
        None => t.split_once(':')?.1,
    };
    let path = path.strip_prefix("./").unwrap_or(path);
    (!path.is_empty()).then(|| Word::literal(path))
}

/// `git diff --stat`, `git show --name-only`: names and counts, no contents (unless a patch
/// option asks for them too).
fn summary_only(sub: &str, rest: &[Word]) -> bool {
    if !matches!(sub, "diff" | "show") || rest.iter().any(|a| patch_option(&a.text)) {
        return false;
    }
    rest.iter().any(|a| {
        let t = a.text.as_str();
        let name = t.split_once('=').map_or(t, |(n, _)| n);
        matches!(
            name,
            "--stat"
                | "--numstat"
                | "--shortstat"
                | "--name-only"
                | "--name-status"
                | "--quiet"
                | "--dirstat"
                | "--summary"
                | "--no-patch"
                | "-s"
        )
    })
}

/// An option that makes a log-like subcommand print patches (file contents).
fn patch_option(t: &str) -> bool {
    let name = t.split_once('=').map_or(t, |(n, _)| n);
    matches!(t, "-p" | "-u" | "--cc" | "-c" | "--full-diff")
        || t.starts_with("-L")
        || long(name, "--patch")
        || long(name, "--patch-with-stat")
        || long(name, "--patch-with-raw")
        || long(name, "--word-diff")
        || long(name, "--color-words")
        || (t.starts_with('-') && !t.starts_with("--") && t[1..].contains(['p', 'u']))
}

fn dynamic_word(text: &str) -> Word {
    let mut b = super::words::WordBuilder::default();
    b.push_dynamic(text, None);
    b.finish()
}

/// In a cluster of `git grep` short options (`-iO'cmd'`, `-nOcmd`), what follows `-O`: the
/// pager program. A value-taking option before it (`-e`, `-f`, `-A`, `-B`, `-C`, `-m`) takes
/// the rest of the cluster as its value instead.
fn grep_pager_in_cluster(t: &str) -> Option<&str> {
    let cluster = t.strip_prefix('-').filter(|c| !c.starts_with('-'))?;
    for (i, c) in cluster.char_indices() {
        match c {
            'O' => return Some(&cluster[i + 1..]),
            'e' | 'f' | 'A' | 'B' | 'C' | 'm' => return None,
            _ => {}
        }
    }
    None
}
