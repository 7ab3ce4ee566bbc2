//! Where a path argument of a shell command points, relative to the sandbox root.
//!
//! A path is inside only if it is inside both lexically (component-wise, so root `/a/proj`
//! never contains `/a/proj2`; `..` is followed; `~`, `$HOME` and any other expansion count as
//! outside or unknown) and physically: every existing component under the root is checked for
//! symlinks, and a symlink whose target leaves the root makes the path outside. Globs are
//! expanded (bounded) so `cat docs/*` is judged by what it would really read.

use foldhash::HashMap;
use std::cell::RefCell;
use std::fs;
use std::path::{Component, Path, PathBuf};
use std::time::{Duration, Instant};

use super::words::Word;

/// Directory entries a glob may look at before we give up and call the path unknown.
const MAX_GLOB_ENTRIES: usize = 2_000;
/// Paths a glob may expand to before we give up and call the path unknown.
const MAX_GLOB_MATCHES: usize = 256;

/// Where a path points.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Place {
    /// Inside the sandbox root, lexically and physically.
    Inside,
    /// `/dev/null`, `/dev/stdout`, `-` and similar: no file is touched.
    Harmless,
    /// Outside the root; `sensitive` when it is (under) a place that holds secrets.
    Outside { sensitive: bool },
    /// Built from expansions whose value is only known at run time, or after a `cd` we could
    /// not follow.
    Unknown,
    /// A raw disk or memory device (`/dev/sda`, `/dev/nvme0n1`, `/dev/mem`).
    RawDevice,
    /// Bash's `/dev/tcp/host/port` and `/dev/udp/...`: a network connection.
    Network,
    /// Some other device node.
    Device,
}

/// A located path: how to show it, and where it is.
#[derive(Debug, Clone)]
pub(crate) struct Located {
    pub shown: String,
    pub place: Place,
}

/// The working directories a command may run in: the root, plus every directory a `cd` earlier
/// in the command line may have moved to (a `cd` inside a subshell does not leak out, but we do
/// not track scopes, so we keep all of them and require a path to be inside from each).
#[derive(Debug, Clone)]
pub(crate) struct Cwds {
    pub dirs: Vec<PathBuf>,
    /// A `cd` went somewhere we cannot tell (outside, or to a computed path).
    pub unknown: bool,
}

/// How long a resolved sandbox root is reused before it is resolved again.
const ROOT_CACHE_TTL: Duration = Duration::from_secs(1);

thread_local! {
    /// The last root resolved on this thread: resolving it costs a syscall per component,
    /// and the engine classifies many commands for the same root.
    static ROOT_REAL: RefCell<Option<(PathBuf, Option<PathBuf>, Instant)>> =
        const { RefCell::new(None) };
}

/// The sandbox root and home directory, resolved once per classification.
#[derive(Debug)]
pub(crate) struct Jail {
    /// The root as given, lexically normalised.
    pub root: PathBuf,
    /// The root with symlinks resolved, when it exists.
    pub root_real: Option<PathBuf>,
    pub home: Option<PathBuf>,
    /// Physical checks already made during this classification (commands repeat paths).
    memo: RefCell<HashMap<(PathBuf, bool), Option<bool>>>,
    /// Static words already located from the root during this classification, by text and
    /// then by whether they glob (`cat src/a.rs | … ; wc -l src/a.rs`).
    located: RefCell<HashMap<String, [Option<Located>; 2]>>,
}

impl Jail {
    pub fn new(root: &Path, home: Option<&Path>) -> Jail {
        // Containment is decided on absolute paths; a relative root is taken from the
        // current directory, as the shell would.
        let absolute = |p: &Path| {
            if p.is_absolute() {
                normalize(p)
            } else {
                normalize(&std::env::current_dir().unwrap_or_default().join(p))
            }
        };
        let root_n = absolute(root);
        let root_real = ROOT_REAL.with(|cell| {
            let Ok(mut slot) = cell.try_borrow_mut() else {
                return fs::canonicalize(&root_n).ok();
            };
            match slot.as_ref() {
                Some((r, real, at)) if *r == root_n && at.elapsed() < ROOT_CACHE_TTL => {
                    real.clone()
                }
                _ => {
                    let real = fs::canonicalize(&root_n).ok();
                    *slot = Some((root_n.clone(), real.clone(), Instant::now()));
                    real
                }
            }
        });
        Jail {
            root: root_n,
            root_real,
            home: home.map(absolute),
            memo: RefCell::new(HashMap::default()),
            located: RefCell::new(HashMap::default()),
        }
    }

    pub fn initial_cwds(&self) -> Cwds {
        Cwds {
            dirs: vec![self.root.clone()],
            unknown: false,
        }
    }

    /// The absolute candidates `word` may name (one per working directory), each as
    /// (lexically normalised, as joined), or `None` when the word is not static.
    pub fn candidates(&self, word: &Word, cwds: &Cwds) -> Option<Vec<(PathBuf, PathBuf)>> {
        let (base, rest) = self.split_home(word)?;
        let both = |raw: PathBuf| (normalize(&raw), raw);
        match base {
            Base::Home(h) => Some(vec![both(join_rel(&h, rest))]),
            Base::Abs => Some(vec![both(PathBuf::from(rest))]),
            Base::Rel => {
                if cwds.unknown {
                    return None;
                }
                Some(cwds.dirs.iter().map(|d| both(join_rel(d, rest))).collect())
            }
        }
    }

    /// Splits off a leading `~` / `$HOME` / `${HOME}`. `None`: not static or an unknown home.
    fn split_home<'w>(&self, word: &'w Word) -> Option<(Base, &'w str)> {
        if let Some((name, rest)) = word.after_lead_var() {
            if name == "HOME" && (rest.is_empty() || rest.starts_with('/')) {
                return self.home.clone().map(|h| (Base::Home(h), rest));
            }
            return None;
        }
        if word.dynamic {
            return None;
        }
        let t = word.text.as_str();
        if let Some(after) = t.strip_prefix('~') {
            let (user, rest) = match after.find('/') {
                Some(i) => (&after[..i], &after[i..]),
                None => (after, ""),
            };
            if !user.is_empty() {
                return None;
            }
            return self.home.clone().map(|h| (Base::Home(h), rest));
        }
        if t.starts_with('/') {
            Some((Base::Abs, t))
        } else {
            Some((Base::Rel, t))
        }
    }

    /// Locates `word` as a path the command reads or writes.
    pub fn locate(&self, word: &Word, cwds: &Cwds) -> Located {
        // Where a static word points depends only on its text, whether it globs and the
        // working directories; the usual ones (no `cd`) are remembered.
        let from_root =
            !word.dynamic && !cwds.unknown && cwds.dirs.len() == 1 && cwds.dirs[0] == self.root;
        if !from_root {
            return self.locate_uncached(word, cwds);
        }
        let glob = usize::from(word.glob);
        let known = self
            .located
            .try_borrow()
            .ok()
            .and_then(|m| m.get(word.text.as_str()).and_then(|l| l[glob].clone()));
        if let Some(known) = known {
            return known;
        }
        let located = self.locate_uncached(word, cwds);
        if let Ok(mut memo) = self.located.try_borrow_mut() {
            if memo.len() < 512 {
                memo.entry(word.text.clone()).or_default()[glob] = Some(located.clone());
            }
        }
        located
    }

    fn locate_uncached(&self, word: &Word, cwds: &Cwds) -> Located {
        let t = word.text.as_str();
        // `<(cmd)` and `>(cmd)` name a pipe to a command that is judged on its own.
        let substituted = word.dynamic
            && word.dyn_segments == 1
            && (t.starts_with("<(") || t.starts_with(">("))
            && t.ends_with(')');
        if t == "-" || substituted {
            return Located {
                shown: t.to_owned(),
                place: Place::Harmless,
            };
        }
        let Some(cands) = self.candidates(word, cwds) else {
            // `~user` and `~` without a known home are outside; expansions are unknown.
            let home_like = !word.dynamic && t.starts_with('~')
                || word
                    .after_lead_var()
                    .is_some_and(|(n, r)| n == "HOME" && (r.is_empty() || r.starts_with('/')));
            let place = if home_like {
                Place::Outside {
                    sensitive: home_sensitive(t.split_once('/').map_or("", |(_, r)| r)),
                }
            } else {
                Place::Unknown
            };
            return Located {
                shown: t.to_owned(),
                place,
            };
        };
        let mut worst: Option<Place> = None;
        let mut shown = String::new();
        for (norm, raw) in &cands {
            let place = self.place_of(norm, raw, word.glob);
            if worst.is_none_or(|w| rank(place) > rank(w)) {
                worst = Some(place);
            }
            shown = norm.to_string_lossy().into_owned();
        }
        let worst = worst.unwrap_or(Place::Unknown);
        Located {
            shown,
            place: worst,
        }
    }

    /// Where an absolute path is, given normalised and as joined (the kernel follows a
    /// symlink before applying a `..` after it, so the physical walk uses the joined form).
    fn place_of(&self, norm: &Path, raw: &Path, glob: bool) -> Place {
        if let Ok(dev) = norm.strip_prefix("/dev") {
            return device_place(dev);
        }
        let outside = || Place::Outside {
            sensitive: self.sensitive(norm),
        };
        let lexically_inside = norm.starts_with(&self.root)
            || self
                .root_real
                .as_deref()
                .is_some_and(|rr| norm.starts_with(rr));
        if !lexically_inside {
            return outside();
        }
        let rel = if let Ok(r) = raw.strip_prefix(&self.root) {
            r
        } else if let Some(r) = self
            .root_real
            .as_deref()
            .and_then(|rr| raw.strip_prefix(rr).ok())
        {
            r
        } else {
            return outside();
        };
        let key = (rel.to_path_buf(), glob);
        let known = self
            .memo
            .try_borrow()
            .ok()
            .and_then(|m| m.get(&key).copied());
        let physical = match known {
            Some(v) => v,
            None => {
                let v = self.physically_inside(rel, glob);
                if let Ok(mut memo) = self.memo.try_borrow_mut() {
                    if memo.len() < 512 {
                        memo.insert(key, v);
                    }
                }
                v
            }
        };
        match physical {
            Some(true) => Place::Inside,
            Some(false) => outside(),
            None => Place::Unknown,
        }
    }

    /// Walks `rel` below the real root, resolving symlinks and globs. `Some(false)` when any
    /// reachable component leads outside, `None` when a glob is too large to check.
    fn physically_inside(&self, rel: &Path, glob: bool) -> Option<bool> {
        let Some(root) = self.root_real.as_deref() else {
            return Some(true);
        };
        let mut current: Vec<PathBuf> = vec![root.to_path_buf()];
        let mut budget = MAX_GLOB_ENTRIES;
        for comp in rel.components() {
            let os = match comp {
                Component::Normal(os) => os,
                Component::ParentDir => {
                    for p in &mut current {
                        if p.as_path() == root || !p.pop() {
                            return Some(false);
                        }
                    }
                    continue;
                }
                _ => continue,
            };
            let name = os.to_string_lossy();
            let mut next = Vec::new();
            if glob && is_glob(&name) {
                if glob_match(&name, "..") {
                    return Some(false);
                }
                // POSIX classes, collating symbols and equivalence classes (`[[:lower:]]`)
                // are not in the matcher below: it cannot tell what bash would expand.
                if name.contains("[:") || name.contains("[.") || name.contains("[=") {
                    return None;
                }
                for dir in &current {
                    let Ok(rd) = fs::read_dir(dir) else {
                        continue;
                    };
                    for entry in rd.flatten() {
                        budget = budget.checked_sub(1)?;
                        let fname = entry.file_name();
                        if glob_match(&name, &fname.to_string_lossy()) {
                            match step(root, &dir.join(&fname)) {
                                Step::Inside(p) => next.push(p),
                                Step::Missing => {}
                                Step::Outside => return Some(false),
                            }
                            if next.len() > MAX_GLOB_MATCHES {
                                return None;
                            }
                        }
                    }
                }
            } else {
                for dir in &current {
                    match step(root, &dir.join(&*name)) {
                        Step::Inside(p) => next.push(p),
                        Step::Missing => {}
                        Step::Outside => return Some(false),
                    }
                }
            }
            if next.is_empty() {
                return Some(true);
            }
            current = next;
        }
        Some(true)
    }

    /// Is `p` (absolute, normalised, outside the root) a place that holds secrets? The one
    /// table in [`crate::protect`]; the engine adds ground-link's own state and the rule
    /// files' extra globs on the resolved path.
    pub fn sensitive(&self, p: &Path) -> bool {
        crate::protect::sensitive_path(p)
    }

    /// The real path of `p` when it exists, for checks that must see through symlinks.
    pub fn real(p: &Path) -> Option<PathBuf> {
        fs::canonicalize(p).ok()
    }
}

/// Secret places under the home directory, given the path relative to it.
fn home_sensitive(rel: &str) -> bool {
    crate::protect::sensitive_path(Path::new(rel))
}

fn rank(p: Place) -> u8 {
    match p {
        Place::Inside | Place::Harmless => 0,
        Place::Device => 1,
        Place::Unknown => 2,
        Place::Outside { sensitive: false } => 3,
        Place::Outside { sensitive: true } => 4,
        Place::Network => 5,
        Place::RawDevice => 6,
    }
}

enum Base {
    Home(PathBuf),
    Abs,
    Rel,
}

enum Step {
    Inside(PathBuf),
    Missing,
    Outside,
}

/// One step of the physical walk: `p` is a real directory's child.
fn step(root: &Path, p: &Path) -> Step {
    match fs::symlink_metadata(p) {
        Err(_) => Step::Missing,
        Ok(m) if m.file_type().is_symlink() => match fs::canonicalize(p) {
            Ok(real) if real.starts_with(root) => Step::Inside(real),
            // A dangling symlink: writing through it creates its target, wherever that is.
            _ => Step::Outside,
        },
        Ok(_) => Step::Inside(p.to_path_buf()),
    }
}

/// Where a path under `/dev` (given relative to `/dev`) is.
fn device_place(dev: &Path) -> Place {
    let s = dev.to_string_lossy();
    match s.as_ref() {
        "null" | "zero" | "full" | "random" | "urandom" | "stdin" | "stdout" | "stderr" | "tty" => {
            return Place::Harmless;
        }
        _ => {}
    }
    if let Some(fd) = s.strip_prefix("fd/") {
        if fd.bytes().all(|b| b.is_ascii_digit()) {
            return Place::Harmless;
        }
    }
    if s.starts_with("tcp/") || s.starts_with("udp/") {
        return Place::Network;
    }
    if is_raw_device(&s) {
        return Place::RawDevice;
    }
    Place::Device
}

/// Disk, partition and memory devices (names relative to `/dev`).
pub(crate) fn is_raw_device(name: &str) -> bool {
    const PREFIXES: &[&str] = &[
        "sd", "hd", "vd", "xvd", "nvme", "mmcblk", "dm-", "md", "loop", "sr", "disk", "rdisk",
        "mapper/", "nbd", "zram", "bcache", "rbd",
    ];
    const EXACT: &[&str] = &["mem", "kmem", "port"];
    EXACT.contains(&name) || PREFIXES.iter().any(|p| name.starts_with(p))
}

/// Lexically normalises a path (one implementation, shared with the engine).
pub(crate) fn normalize(p: &Path) -> PathBuf {
    crate::protect::normalize(p)
}

/// Joins `rest` (which may start with `/` after `~`) below `base`.
pub(crate) fn join_rel(base: &Path, rest: &str) -> PathBuf {
    let mut p = base.to_path_buf();
    for piece in rest.split('/') {
        if !piece.is_empty() {
            p.push(piece);
        }
    }
    p
}

pub(crate) fn is_glob(s: &str) -> bool {
    s.contains(['*', '?', '['])
}

/// Shell glob matching of one path component (`*`, `?`, `[...]` with ranges and `!`/`^`).
/// Unlike the shell, a leading `*` may match a leading dot: that only makes us stricter.
pub(crate) fn glob_match(pattern: &str, name: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let n: Vec<char> = name.chars().collect();
    let (mut pi, mut ni) = (0usize, 0usize);
    let (mut star_p, mut star_n): (Option<usize>, usize) = (None, 0);
    while ni < n.len() {
        if pi < p.len() {
            match p[pi] {
                '*' => {
                    star_p = Some(pi);
                    star_n = ni;
                    pi += 1;
                    continue;
                }
                '?' => {
                    pi += 1;
                    ni += 1;
                    continue;
                }
                '[' => {
                    if let Some((matched, len)) = class_match(&p[pi..], n[ni]) {
                        if matched {
                            pi += len;
                            ni += 1;
                            continue;
                        }
                    } else if n[ni] == '[' {
                        pi += 1;
                        ni += 1;
                        continue;
                    }
                }
                c if c == n[ni] => {
                    pi += 1;
                    ni += 1;
                    continue;
                }
                _ => {}
            }
        }
        match star_p {
            Some(sp) => {
                pi = sp + 1;
                star_n += 1;
                ni = star_n;
            }
            None => return false,
        }
    }
    while pi < p.len() && p[pi] == '*' {
        pi += 1;
    }
    pi == p.len()
}

/// Matches `c` against the bracket expression at the start of `p`: (matched, length).
fn class_match(p: &[char], c: char) -> Option<(bool, usize)> {
    let mut i = 1;
    let negate = matches!(p.get(1), Some('!' | '^'));
    if negate {
        i += 1;
    }
    let mut matched = false;
    let mut first = true;
    while i < p.len() {
        if p[i] == ']' && !first {
            return Some((matched != negate, i + 1));
        }
        first = false;
        if i + 2 < p.len() && p[i + 1] == '-' && p[i + 2] != ']' {
            if p[i] <= c && c <= p[i + 2] {
                matched = true;
            }
            i += 3;
        } else {
            if p[i] == c {
                matched = true;
            }
            i += 1;
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn glob_matching() {
        let cases = [
            ("*", "abc", true),
            (".*", "..", true),
            ("*.rs", "main.rs", true),
            ("*.rs", "main.rc", false),
            ("a?c", "abc", true),
            ("[a-c]x", "bx", true),
            ("[!a-c]x", "bx", false),
            ("[", "[", true),
        ];
        for (p, n, want) in cases {
            assert_eq!(glob_match(p, n), want, "{p} vs {n}");
        }
    }

    #[test]
    fn normalize_stays_below_slash() {
        assert_eq!(
            normalize(Path::new("/a/../../b/./c//")),
            PathBuf::from("/b/c")
        );
        assert_eq!(
            normalize(Path::new("/a/proj/../proj2")),
            PathBuf::from("/a/proj2")
        );
    }
}
