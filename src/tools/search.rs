//! `glob` and `grep` (DESIGN §3): find paths by pattern and lines by regex inside the sandbox.
//!
//! Both walk the tree in parallel with ripgrep's own crates (`ignore`, `globset`, `grep-regex`,
//! `grep-searcher`), stop as soon as `maxResults` results are kept, then sort what they kept.
//!
//! What they see, chosen to match `rg`'s defaults so the two compare like with like:
//! - `.gitignore` and `.ignore` files are honoured from the sandbox root down, whether or not
//!   the tree is a git repository (`rg --no-require-git`). The walk goes from the root towards
//!   `path`, so the rules of the directories above `path` apply exactly as in a walk from the
//!   root. The root's `.git/info/exclude` applies too, as a final filter (a `!` in a
//!   `.gitignore` cannot re-include what it excludes). Ignore files above the root and the
//!   user's global git excludes are never read.
//! - Hidden entries (names starting with `.`) are skipped, as `rg` does.
//! - Naming a hidden or ignored directory or file as `path` searches it (as `rg` does with a
//!   named path); the rules of the directories above it then act as a final filter too.
//! - Symlinks met while walking are neither listed nor followed nor searched, wherever they
//!   point. A `path` through a symlink inside the root walks its target, shown by its real path.
//! - A glob without `/` matches file names at any depth (`*.md` finds `docs/a.md`, like `rg -g`);
//!   one with `/` matches the root-relative path (`src/*.ts`, `**/*.rs`) or the path relative to
//!   `path`. `*` never crosses a `/`; `**` does. Matching is case-sensitive.
//! - A file with a NUL byte is binary and skipped whole, even when the NUL comes after some
//!   matches; only when the cap is reached inside a file before its NUL was read can such a file
//!   contribute lines (as in `rg`).
//! - Paths whose names are not UTF-8 are skipped: they could not be shown or opened by name.
//!
//! Guarantees:
//! - No name or content from outside the root reaches a result. Every file `grep` reads is
//!   opened through [`Jail::open_read`] (`openat2` beneath the root, no symlinks), so a directory
//!   swapped for a symlink mid-walk makes the open fail instead of leaking content; every path
//!   `glob` returns is re-checked with [`Jail::still_beneath`] before it is kept. Walker errors,
//!   which carry host paths, are dropped, never shown. (The walker itself reads `.gitignore`
//!   files by path, so one that is a symlink, or sits in a directory swapped mid-walk, is read
//!   as rules; its text never appears in results.)
//! - Results are root-relative and sorted (`grep` by path, then line); a capped result says so.
//! - Regexes run in linear time (Rust syntax) and their compiled size is bounded.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use globset::{GlobBuilder, GlobMatcher};
use grep_matcher::Matcher;
use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkMatch};
use ignore::gitignore::{Gitignore, GitignoreBuilder};
use ignore::{
    DirEntry, ParallelVisitor, ParallelVisitorBuilder, WalkBuilder, WalkParallel, WalkState,
};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::jail::{Jail, JailError, Resolved};

/// Largest `maxResults` for `glob`.
pub const GLOB_MAX_RESULTS: u32 = 1000;
/// Largest `maxResults` for `grep`.
pub const GREP_MAX_RESULTS: u32 = 500;
/// A matching line longer than this (in bytes) is cut to a window of this size around its first
/// match, with a marker; it is never dropped.
pub const MAX_LINE_BYTES: usize = 500;
/// How much of a cut line is kept before its first match.
const CUT_LEAD_BYTES: usize = 120;
/// Compiled-regex budget: a pattern that needs more is an error, not a slow or huge search.
const REGEX_SIZE_LIMIT: usize = 8 << 20;
const REGEX_DFA_SIZE_LIMIT: usize = 32 << 20;
/// Ignore files larger than this above `path` are not loaded (a rule file is never this big).
const MAX_IGNORE_FILE_BYTES: u64 = 1 << 20;
/// Longest slice of a bad pattern echoed back in an error.
const ECHO_CHARS: usize = 120;

fn dot() -> String {
    ".".to_string()
}

fn glob_default_max() -> u32 {
    200
}

fn grep_default_max() -> u32 {
    100
}

/// Arguments of `glob`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GlobArgs {
    /// Glob matched against root-relative paths, e.g. `**/*.rs`, `src/*.ts`; without `/` it
    /// matches file names at any depth (`*.md`).
    pub pattern: String,
    /// Directory to search, relative to the sandbox root.
    #[serde(default = "dot")]
    pub path: String,
    /// Also list directories that match.
    #[serde(default)]
    pub include_dirs: bool,
    /// Stop after this many paths (at most 1000).
    #[serde(default = "glob_default_max")]
    #[schemars(range(min = 1, max = 1000))]
    pub max_results: u32,
}

/// Arguments of `grep`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GrepArgs {
    /// Regex in Rust syntax (linear time; no look-around or backreferences), or plain text
    /// with `literal`.
    pub pattern: String,
    /// Directory or file to search, relative to the sandbox root.
    #[serde(default = "dot")]
    pub path: String,
    /// Only search files matching this glob (`*.rs`, `src/**/*.ts`).
    #[serde(default)]
    pub glob: Option<String>,
    /// Treat `pattern` as plain text, not a regex.
    #[serde(default)]
    pub literal: bool,
    /// Match case exactly (default: ignore case).
    #[serde(default)]
    pub case_sensitive: bool,
    /// Stop after this many matching lines (at most 500).
    #[serde(default = "grep_default_max")]
    #[schemars(range(min = 1, max = 500))]
    pub max_results: u32,
}

/// What `glob` and `grep` return: result lines, whether the cap cut them, and a notice line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchOutput {
    pub lines: Vec<String>,
    pub truncated: bool,
    pub notice: Option<String>,
}

impl SearchOutput {
    /// The text shown to the model: one result per line, then the notice, if any.
    pub fn render(&self) -> String {
        let mut out = self.lines.join("\n");
        if let Some(notice) = &self.notice {
            if !out.is_empty() {
                out.push('\n');
            }
            out.push_str(notice);
        }
        out
    }
}

#[derive(Debug, thiserror::Error)]
pub enum SearchError {
    #[error(transparent)]
    Jail(#[from] JailError),
    #[error("`path` {0:?} is outside the sandbox root; use a path inside it")]
    Outside(String),
    #[error("`{field}` is empty; give {what}")]
    Empty {
        field: &'static str,
        what: &'static str,
    },
    #[error(
        "`maxResults` is {value}, more than the maximum of {max}; ask for at most {max} and narrow the pattern or the path"
    )]
    TooMany { value: u32, max: u32 },
    #[error("`maxResults` is 0; ask for at least 1 result")]
    Zero,
    #[error(
        "`{field}` {pattern:?} is not a valid glob: {reason}; use a glob such as \"**/*.rs\" or \"src/*.ts\""
    )]
    BadGlob {
        field: &'static str,
        pattern: String,
        reason: String,
    },
    #[error(
        "`{field}` {pattern:?} is absolute; globs match root-relative paths, e.g. \"src/**/*.rs\""
    )]
    AbsoluteGlob {
        field: &'static str,
        pattern: String,
    },
    #[error("`pattern` {pattern:?} is not a valid regex: {reason}; {hint}")]
    BadRegex {
        pattern: String,
        reason: String,
        hint: &'static str,
    },
}

/// Find paths matching a glob under `args.path`.
pub fn glob(jail: &Jail, args: &GlobArgs) -> Result<SearchOutput, SearchError> {
    let cap = check_cap(args.max_results, GLOB_MAX_RESULTS)?;
    let filter = PathFilter::new("pattern", &args.pattern)?;
    let plan = WalkPlan::new(jail, &args.path)?;
    let shared = Shared::new(cap);
    let mut builder = GlobVisitorBuilder {
        jail,
        plan: &plan,
        filter: &filter,
        include_dirs: args.include_dirs,
        shared: &shared,
        stage: Stage::default(),
    };
    plan.run(jail, &shared.reached, &mut |walker, stage| {
        builder.stage = stage;
        walker.visit(&mut builder);
    });
    let truncated = shared.truncated.load(Ordering::Relaxed);
    let mut lines = shared.into_results();
    lines.sort_unstable();
    let notice = if truncated {
        Some(format!(
            "[results truncated at {cap} paths; narrow the pattern or the path]"
        ))
    } else if lines.is_empty() {
        Some(format!(
            "[no paths matched {:?} under {:?}; hidden and ignored files are skipped]",
            echo(&args.pattern),
            echo(&plan.shown)
        ))
    } else {
        None
    };
    Ok(SearchOutput {
        lines,
        truncated,
        notice,
    })
}

/// Find lines matching a regex (or text) in the files under `args.path`.
pub fn grep(jail: &Jail, args: &GrepArgs) -> Result<SearchOutput, SearchError> {
    let cap = check_cap(args.max_results, GREP_MAX_RESULTS)?;
    let matcher = build_matcher(args)?;
    let filter = match args.glob.as_deref() {
        Some(g) => Some(PathFilter::new("glob", g)?),
        None => None,
    };
    let plan = WalkPlan::new(jail, &args.path)?;
    let shared = Shared::new(cap);
    let mut builder = GrepVisitorBuilder {
        jail,
        plan: &plan,
        filter: filter.as_ref(),
        matcher: &matcher,
        searcher: {
            let mut b = SearcherBuilder::new();
            b.line_number(true)
                .binary_detection(BinaryDetection::quit(0));
            b
        },
        shared: &shared,
        stage: Stage::default(),
    };
    plan.run(jail, &shared.reached, &mut |walker, stage| {
        builder.stage = stage;
        walker.visit(&mut builder);
    });
    let truncated = shared.truncated.load(Ordering::Relaxed);
    let mut hits = shared.into_results();
    hits.sort_unstable_by(|a, b| a.path.cmp(&b.path).then(a.line.cmp(&b.line)));
    let lines: Vec<String> = hits
        .iter()
        .map(|h| format!("{}:{}: {}", h.path, h.line, h.text))
        .collect();
    let notice = if truncated {
        Some(format!(
            "[results truncated at {cap} matches; narrow the pattern or the path]"
        ))
    } else if lines.is_empty() {
        Some(format!(
            "[no matches for {:?} under {:?}; hidden, ignored and binary files are skipped]",
            echo(&args.pattern),
            echo(&plan.shown)
        ))
    } else {
        None
    };
    Ok(SearchOutput {
        lines,
        truncated,
        notice,
    })
}

fn check_cap(value: u32, max: u32) -> Result<usize, SearchError> {
    match value {
        0 => Err(SearchError::Zero),
        v if v > max => Err(SearchError::TooMany { value: v, max }),
        // u32 always fits a usize on the 32- and 64-bit targets we build for.
        v => Ok(v as usize),
    }
}

fn echo(pattern: &str) -> String {
    if pattern.chars().count() <= ECHO_CHARS {
        pattern.to_string()
    } else {
        let mut s: String = pattern.chars().take(ECHO_CHARS).collect();
        s.push('…');
        s
    }
}

fn build_matcher(args: &GrepArgs) -> Result<RegexMatcher, SearchError> {
    if args.pattern.is_empty() {
        return Err(SearchError::Empty {
            field: "pattern",
            what: "the text or regex to search for",
        });
    }
    RegexMatcherBuilder::new()
        .case_insensitive(!args.case_sensitive)
        .fixed_strings(args.literal)
        // Lets the searcher scan whole buffers instead of line by line, and rejects a pattern
        // that could only match across lines (grep results are single lines).
        .line_terminator(Some(b'\n'))
        .size_limit(REGEX_SIZE_LIMIT)
        .dfa_size_limit(REGEX_DFA_SIZE_LIMIT)
        .build(&args.pattern)
        .map_err(|e| regex_error(&args.pattern, e))
}

fn regex_error(pattern: &str, err: grep_regex::Error) -> SearchError {
    // grep-regex reports syntax errors against its rewritten pattern (e.g. wrapped in a
    // group); the plain parser's message points into what the model actually wrote.
    let reason = match regex::RegexBuilder::new(pattern)
        .size_limit(REGEX_SIZE_LIMIT)
        .build()
    {
        Err(regex::Error::Syntax(msg)) => msg,
        _ => err.to_string(),
    };
    let hint = if reason.contains("size limit") {
        "use a shorter pattern (fewer or smaller repetitions, or narrower classes than \\w)"
    } else if reason.contains("not allowed") {
        "grep matches within single lines; search for one line's text at a time"
    } else {
        "use Rust regex syntax (no look-around or backreferences), or set \"literal\": true to search for the text as it is"
    };
    SearchError::BadRegex {
        pattern: echo(pattern),
        reason: reason.trim().to_string(),
        hint,
    }
}

/// A compiled glob and how to apply it (see the module docs).
#[derive(Debug)]
struct PathFilter {
    matcher: GlobMatcher,
    name_only: bool,
}

impl PathFilter {
    fn new(field: &'static str, pattern: &str) -> Result<PathFilter, SearchError> {
        if pattern.is_empty() {
            return Err(SearchError::Empty {
                field,
                what: "a glob such as \"**/*.rs\"",
            });
        }
        if pattern.starts_with('/') {
            return Err(SearchError::AbsoluteGlob {
                field,
                pattern: echo(pattern),
            });
        }
        let trimmed = pattern.strip_prefix("./").unwrap_or(pattern);
        let glob = GlobBuilder::new(trimmed)
            .literal_separator(true)
            .build()
            .map_err(|e| SearchError::BadGlob {
                field,
                pattern: echo(pattern),
                reason: e.kind().to_string(),
            })?;
        Ok(PathFilter {
            matcher: glob.compile_matcher(),
            name_only: !trimmed.contains('/'),
        })
    }

    /// `rel` is root-relative; `sub` is relative to the walk's start when that is not the root.
    fn is_match(&self, rel: &str, sub: Option<&str>) -> bool {
        if self.name_only {
            let name = rel.rsplit('/').next().unwrap_or(rel);
            return self.matcher.is_match(name);
        }
        self.matcher.is_match(rel) || sub.is_some_and(|s| !s.is_empty() && self.matcher.is_match(s))
    }
}

/// Where a walk starts, and the ignore rules the walker cannot read itself.
struct WalkPlan {
    /// What the caller asked for, for messages.
    shown: String,
    root: PathBuf,
    start: PathBuf,
    /// Root-relative start, `""` for the root.
    start_rel: String,
    /// `start_rel` with a trailing `/`, `""` for the root.
    start_prefix: String,
    /// Number of components in `start_rel`: the depth of the start in a walk from the root.
    start_depth: usize,
    /// Skips ground-link's own state always, and secrets unless the start itself is one.
    guard: Option<Guard>,
    /// The root's `.git/info/exclude`, if any.
    exclude: Option<Arc<Gitignore>>,
}

/// Which part of a walk is in scope for the visitors.
#[derive(Debug, Clone, Copy, Default)]
struct Stage {
    /// Entries above this depth are the directories leading to the start: walked, not results.
    base_depth: usize,
    /// Record whether the walk reached the start (it may be hidden or ignored).
    watch_start: bool,
}

/// What a tree walk never enters (DESIGN §4): own state, and sensitive files the caller did
/// not name (a `grep` of the home folder must not sweep `.ssh` or `server.pem` into a chat).
#[derive(Clone)]
struct Guard {
    protection: Arc<crate::protect::Protection>,
    root: PathBuf,
    secrets_named: bool,
}

impl Guard {
    fn skips(&self, path: &Path) -> bool {
        match self.protection.class(path, &self.root) {
            Some(crate::protect::PathClass::OwnState) => true,
            Some(crate::protect::PathClass::Sensitive) => !self.secrets_named,
            _ => false,
        }
    }
}

impl WalkPlan {
    fn new(jail: &Jail, path: &str) -> Result<WalkPlan, SearchError> {
        let resolved = jail.resolve(path)?;
        if !resolved.inside {
            return Err(SearchError::Outside(path.to_string()));
        }
        // `resolve` continues lexically past a missing component; the walk needs it to exist.
        if std::fs::symlink_metadata(&resolved.abs).is_err() {
            return Err(JailError::NotFound(path.to_string()).into());
        }
        let start_rel = if resolved.rel == "." {
            String::new()
        } else {
            resolved.rel
        };
        let start_prefix = if start_rel.is_empty() {
            String::new()
        } else {
            format!("{start_rel}/")
        };
        let guard = jail.protection().map(|p| Guard {
            protection: Arc::clone(p),
            root: jail.root().to_path_buf(),
            secrets_named: jail.class(&resolved.abs) == Some(crate::protect::PathClass::Sensitive),
        });
        Ok(WalkPlan {
            guard,
            shown: path.to_string(),
            root: jail.root().to_path_buf(),
            start: resolved.abs,
            start_depth: start_rel.split('/').filter(|c| !c.is_empty()).count(),
            start_rel,
            start_prefix,
            exclude: load_rules(jail, "", ".git/info/exclude").map(Arc::new),
        })
    }

    /// Walk from the root, descending only towards and below the start, so that every ignore
    /// file on the way applies exactly as the walker applies its own. If the start itself is
    /// hidden or ignored the walker never reaches it; then walk from the start, with the rules
    /// of the directories above it applied as a filter (as `rg` does with a named path).
    fn run(&self, jail: &Jail, reached: &AtomicBool, visit: &mut dyn FnMut(WalkParallel, Stage)) {
        let stage = Stage {
            base_depth: self.start_depth,
            watch_start: self.start_depth > 0,
        };
        visit(self.walk_from_root(), stage);
        if stage.watch_start && !reached.load(Ordering::Relaxed) {
            let rules = outer_rules(jail, &self.start_rel, self.exclude.as_ref());
            visit(self.walk_from_start(rules), Stage::default());
        }
    }

    fn builder(dir: &Path) -> WalkBuilder {
        let mut b = WalkBuilder::new(dir);
        b.hidden(true)
            .follow_links(false)
            // The crate's own git options read ignore files in every ancestor up to `/`;
            // reading them as custom names keeps every read inside the walked tree.
            .parents(false)
            .ignore(false)
            .git_ignore(false)
            .git_global(false)
            .git_exclude(false)
            .require_git(false)
            .add_custom_ignore_filename(".gitignore")
            .add_custom_ignore_filename(".ignore");
        b
    }

    fn walk_from_root(&self) -> WalkParallel {
        let mut b = WalkPlan::builder(&self.root);
        let (start, depth, exclude) = (self.start.clone(), self.start_depth, self.exclude.clone());
        let guard = self.guard.clone();
        if depth > 0 || exclude.is_some() || guard.is_some() {
            b.filter_entry(move |dent| {
                if guard.as_ref().is_some_and(|g| g.skips(dent.path())) {
                    return false;
                }
                // Above the start, only the directories leading to it.
                if dent.depth() <= depth && !start.starts_with(dent.path()) {
                    return false;
                }
                !exclude.as_deref().is_some_and(|gi| {
                    let is_dir = dent.file_type().is_some_and(|t| t.is_dir());
                    gi.matched(dent.path(), is_dir).is_ignore()
                })
            });
        }
        b.build_parallel()
    }

    fn walk_from_start(&self, rules: Vec<Gitignore>) -> WalkParallel {
        let mut b = WalkPlan::builder(&self.start);
        let guard = self.guard.clone();
        if !rules.is_empty() || guard.is_some() {
            b.filter_entry(move |dent| {
                !guard.as_ref().is_some_and(|g| g.skips(dent.path()))
                    && !outer_ignored(&rules, dent)
            });
        }
        b.build_parallel()
    }

    /// Root-relative path of a walker entry, `None` if it is not valid UTF-8.
    fn rel<'p>(&self, path: &'p Path) -> Option<&'p str> {
        path.strip_prefix(&self.root).ok()?.to_str()
    }

    /// The path relative to the start, when the start is not the root.
    fn sub<'r>(&self, rel: &'r str) -> Option<&'r str> {
        if self.start_prefix.is_empty() {
            None
        } else {
            rel.strip_prefix(self.start_prefix.as_str())
        }
    }

    /// Whether a walker entry is the start or below it (not a directory leading to it), and
    /// note when the walk reaches the start.
    fn admit(&self, stage: Stage, dent: &DirEntry, reached: &AtomicBool) -> bool {
        let depth = dent.depth();
        if depth < stage.base_depth {
            return false;
        }
        if stage.watch_start && depth == stage.base_depth {
            if dent.path() != self.start {
                return false;
            }
            reached.store(true, Ordering::Relaxed);
        }
        true
    }
}

/// Rules in precedence order: the first that matches decides.
fn outer_ignored(rules: &[Gitignore], dent: &DirEntry) -> bool {
    let is_dir = dent.file_type().is_some_and(|t| t.is_dir());
    for gi in rules {
        let m = gi.matched(dent.path(), is_dir);
        if m.is_ignore() {
            return true;
        }
        if m.is_whitelist() {
            return false;
        }
    }
    false
}

/// The rules of the directories from the root down to (not including) the start, deepest
/// first and `.ignore` before `.gitignore`, then the git excludes. Each file is read through the
/// jail; a missing or unreadable one adds no rules, as in git.
fn outer_rules(jail: &Jail, start_rel: &str, exclude: Option<&Arc<Gitignore>>) -> Vec<Gitignore> {
    let comps: Vec<&str> = start_rel.split('/').filter(|c| !c.is_empty()).collect();
    let mut rules = Vec::new();
    // The start's own files are read by the walker (a file start has none, so its parent's are
    // loaded here).
    for i in (0..comps.len()).rev() {
        let dir = comps[..i].join("/");
        for name in [".ignore", ".gitignore"] {
            let file = if dir.is_empty() {
                name.to_string()
            } else {
                format!("{dir}/{name}")
            };
            rules.extend(load_rules(jail, &dir, &file));
        }
    }
    rules.extend(exclude.map(|gi| Gitignore::clone(gi)));
    rules
}

fn load_rules(jail: &Jail, dir_rel: &str, file_rel: &str) -> Option<Gitignore> {
    let r = inside(file_rel.to_string(), jail.root().join(file_rel));
    let file = jail.open_read(&r).ok()?;
    let mut text = String::new();
    io::Read::read_to_string(&mut io::Read::take(&file, MAX_IGNORE_FILE_BYTES), &mut text).ok()?;
    let mut b = GitignoreBuilder::new(jail.root().join(dir_rel));
    for line in text.lines() {
        // A bad line is skipped, as git does; the rest still apply.
        let _ = b.add_line(None, line);
    }
    let gi = b.build().ok()?;
    (!gi.is_empty()).then_some(gi)
}

/// A walker entry known to lie under the root by construction; the jail's `openat2` still
/// re-checks every component when it is opened.
fn inside(rel: String, abs: PathBuf) -> Resolved {
    Resolved {
        shown: String::new(),
        rel,
        abs,
        inside: true,
    }
}

/// State shared by the walker threads. Results are appended once per thread, at its end.
struct Shared<T> {
    cap: usize,
    kept: AtomicUsize,
    truncated: AtomicBool,
    reached: AtomicBool,
    results: Mutex<Vec<T>>,
}

impl<T> Shared<T> {
    fn new(cap: usize) -> Shared<T> {
        Shared {
            cap,
            kept: AtomicUsize::new(0),
            truncated: AtomicBool::new(false),
            reached: AtomicBool::new(false),
            results: Mutex::new(Vec::new()),
        }
    }

    /// Claim a result slot; `false` (and the truncated flag) once the cap is reached.
    fn claim(&self) -> bool {
        if self.kept.fetch_add(1, Ordering::Relaxed) < self.cap {
            true
        } else {
            self.truncated.store(true, Ordering::Relaxed);
            false
        }
    }

    fn flush(&self, local: &mut Vec<T>) {
        if local.is_empty() {
            return;
        }
        let mut all = self.results.lock().unwrap_or_else(PoisonError::into_inner);
        all.append(local);
    }

    fn into_results(self) -> Vec<T> {
        self.results
            .into_inner()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

/// What a walker entry is, for the two tools: symlinks and anything odd are skipped.
enum Kind {
    File,
    Dir,
    Skip,
}

fn kind(dent: &DirEntry) -> Kind {
    match dent.file_type() {
        Some(t) if t.is_file() => Kind::File,
        Some(t) if t.is_dir() => Kind::Dir,
        _ => Kind::Skip,
    }
}

struct GlobVisitorBuilder<'a> {
    jail: &'a Jail,
    plan: &'a WalkPlan,
    filter: &'a PathFilter,
    include_dirs: bool,
    shared: &'a Shared<String>,
    stage: Stage,
}

impl<'a> ParallelVisitorBuilder<'a> for GlobVisitorBuilder<'a> {
    fn build(&mut self) -> Box<dyn ParallelVisitor + 'a> {
        Box::new(GlobVisitor {
            jail: self.jail,
            plan: self.plan,
            filter: self.filter,
            include_dirs: self.include_dirs,
            shared: self.shared,
            stage: self.stage,
            local: Vec::new(),
        })
    }
}

struct GlobVisitor<'a> {
    jail: &'a Jail,
    plan: &'a WalkPlan,
    filter: &'a PathFilter,
    include_dirs: bool,
    shared: &'a Shared<String>,
    stage: Stage,
    local: Vec<String>,
}

impl ParallelVisitor for GlobVisitor<'_> {
    fn visit(&mut self, entry: Result<DirEntry, ignore::Error>) -> WalkState {
        // Errors name host paths; an unreadable entry is simply not a result.
        let Ok(dent) = entry else {
            return WalkState::Continue;
        };
        if !self.plan.admit(self.stage, &dent, &self.shared.reached) {
            return WalkState::Continue;
        }
        match kind(&dent) {
            Kind::File => {}
            // The start directory itself is where the search happens, not a result.
            Kind::Dir if self.include_dirs && dent.depth() > self.stage.base_depth => {}
            Kind::Dir | Kind::Skip => return WalkState::Continue,
        }
        let Some(rel) = self.plan.rel(dent.path()) else {
            return WalkState::Continue;
        };
        if rel.is_empty() || !self.filter.is_match(rel, self.plan.sub(rel)) {
            return WalkState::Continue;
        }
        // The listing may have come through a directory that was swapped for a symlink.
        if !self.jail.still_beneath(rel) {
            return WalkState::Continue;
        }
        if !self.shared.claim() {
            return WalkState::Quit;
        }
        self.local.push(rel.to_string());
        WalkState::Continue
    }
}

impl Drop for GlobVisitor<'_> {
    fn drop(&mut self) {
        self.shared.flush(&mut self.local);
    }
}

/// One matching line.
struct Hit {
    path: Arc<str>,
    line: u64,
    text: String,
}

struct GrepVisitorBuilder<'a> {
    jail: &'a Jail,
    plan: &'a WalkPlan,
    filter: Option<&'a PathFilter>,
    matcher: &'a RegexMatcher,
    searcher: SearcherBuilder,
    shared: &'a Shared<Hit>,
    stage: Stage,
}

impl<'a> ParallelVisitorBuilder<'a> for GrepVisitorBuilder<'a> {
    fn build(&mut self) -> Box<dyn ParallelVisitor + 'a> {
        Box::new(GrepVisitor {
            jail: self.jail,
            plan: self.plan,
            filter: self.filter,
            // One matcher and searcher per thread: the regex caches and read buffer are reused
            // for every file the thread searches.
            matcher: self.matcher.clone(),
            searcher: self.searcher.build(),
            shared: self.shared,
            stage: self.stage,
            local: Vec::new(),
            pending: Vec::new(),
        })
    }
}

struct GrepVisitor<'a> {
    jail: &'a Jail,
    plan: &'a WalkPlan,
    filter: Option<&'a PathFilter>,
    matcher: RegexMatcher,
    searcher: Searcher,
    shared: &'a Shared<Hit>,
    stage: Stage,
    local: Vec<Hit>,
    pending: Vec<Hit>,
}

impl ParallelVisitor for GrepVisitor<'_> {
    fn visit(&mut self, entry: Result<DirEntry, ignore::Error>) -> WalkState {
        let Ok(dent) = entry else {
            return WalkState::Continue;
        };
        if !self.plan.admit(self.stage, &dent, &self.shared.reached)
            || !matches!(kind(&dent), Kind::File)
        {
            return WalkState::Continue;
        }
        let Some(rel) = self.plan.rel(dent.path()) else {
            return WalkState::Continue;
        };
        if let Some(filter) = self.filter
            && !filter.is_match(rel, self.plan.sub(rel))
        {
            return WalkState::Continue;
        }
        let rel = rel.to_string();
        let resolved = inside(rel, dent.into_path());
        // openat2 beneath the root with no symlinks: a swapped parent fails here.
        let Ok(file) = self.jail.open_read(&resolved) else {
            return WalkState::Continue;
        };
        let mut sink = FileSink {
            matcher: &self.matcher,
            shared: self.shared,
            rel: &resolved.rel,
            path: None,
            pending: &mut self.pending,
            claimed: 0,
            overflow: false,
            binary: false,
        };
        // A read error midway keeps the lines found so far: they are real.
        let _ = self.searcher.search_file(&self.matcher, &file, &mut sink);
        let (claimed, overflow, binary) = (sink.claimed, sink.overflow, sink.binary);
        if binary {
            // Binary files are skipped whole, even when the NUL byte came after some matches.
            self.shared.kept.fetch_sub(claimed, Ordering::Relaxed);
            self.pending.clear();
        } else {
            if overflow {
                self.shared.truncated.store(true, Ordering::Relaxed);
            }
            self.local.append(&mut self.pending);
        }
        // Quit only once a match beyond the cap was seen: reaching the cap exactly does not
        // yet say whether the results are complete.
        if self.shared.truncated.load(Ordering::Relaxed) {
            WalkState::Quit
        } else {
            WalkState::Continue
        }
    }
}

impl Drop for GrepVisitor<'_> {
    fn drop(&mut self) {
        self.shared.flush(&mut self.local);
    }
}

/// Collects one file's matching lines; they are committed only once the file proved textual.
struct FileSink<'s> {
    matcher: &'s RegexMatcher,
    shared: &'s Shared<Hit>,
    rel: &'s str,
    path: Option<Arc<str>>,
    pending: &'s mut Vec<Hit>,
    claimed: usize,
    overflow: bool,
    binary: bool,
}

impl Sink for FileSink<'_> {
    type Error = io::Error;

    fn matched(&mut self, _: &Searcher, mat: &SinkMatch<'_>) -> Result<bool, io::Error> {
        // Not `Shared::claim`: whether this overflow counts depends on the file being text.
        self.claimed += 1;
        if self.shared.kept.fetch_add(1, Ordering::Relaxed) >= self.shared.cap {
            self.overflow = true;
            return Ok(false);
        }
        let path = self.path.get_or_insert_with(|| Arc::from(self.rel)).clone();
        self.pending.push(Hit {
            path,
            line: mat.line_number().unwrap_or(0),
            text: show_line(self.matcher, mat.bytes()),
        });
        Ok(true)
    }

    fn binary_data(&mut self, _: &Searcher, _: u64) -> Result<bool, io::Error> {
        self.binary = true;
        Ok(false)
    }
}

/// The text of a matching line without its terminator; a long line becomes a window around its
/// first match with `…` where it was cut and a note of the full length.
fn show_line(matcher: &RegexMatcher, line: &[u8]) -> String {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    if line.len() <= MAX_LINE_BYTES {
        return String::from_utf8_lossy(line).into_owned();
    }
    let first = matcher.find(line).ok().flatten().map_or(0, |m| m.start());
    let mut start = first.saturating_sub(CUT_LEAD_BYTES);
    while start < line.len() && is_continuation(line[start]) {
        start += 1;
    }
    let mut end = (start + MAX_LINE_BYTES).min(line.len());
    while end < line.len() && end > start && is_continuation(line[end]) {
        end -= 1;
    }
    let mut out = String::with_capacity(MAX_LINE_BYTES + 48);
    if start > 0 {
        out.push('…');
    }
    out.push_str(&String::from_utf8_lossy(&line[start..end]));
    if end < line.len() {
        out.push('…');
    }
    out.push_str(&format!(" [line truncated: {} bytes]", line.len()));
    out
}

fn is_continuation(b: u8) -> bool {
    b & 0b1100_0000 == 0b1000_0000
}
