//! The hash-chained audit log (DESIGN §5.6).
//!
//! Every call the engine handles becomes one JSON line in `<dir>/YYYY-MM-DD.jsonl` (UTC date of
//! the append). Each line carries `"prev"`, the `"hash"` of the line before it (across files),
//! and ends with its own `"hash"`: the SHA-256 of the line's exact bytes with the trailing
//! `,"hash":"…"` member removed. Editing, deleting, inserting or reordering a line therefore
//! breaks the chain at that spot, and [`verify`] names the file and line.
//!
//! Guarantees:
//! - **No torn lines after a process crash.** A line is written with a single `write(2)` on an
//!   `O_APPEND` descriptor while holding both an in-process mutex and an exclusive `flock` on
//!   `<dir>/.lock`, so lines from threads or processes never interleave and the chain stays
//!   linear. Linux checks for a fatal signal between the pages of one write, so a line that
//!   would straddle a 4 KiB page boundary is moved to the next page behind a padding line of
//!   spaces (which [`verify`] skips): a `kill -9` loses at most the line being written, never
//!   half of one (lines over 4 KiB cannot be protected this way; summarised args keep lines
//!   well below). Found by `tests/audit.rs` `kill_9_never_leaves_a_torn_line`.
//! - **No fsync per line** (that would cap us far below 10,000 appends/s). The trade-off: a power
//!   loss may lose the last lines still in the page cache, and may leave a torn tail; earlier
//!   lines are never rewritten. [`AuditLog::open`] moves such a tail aside into
//!   `<file>.torn` so the chain can continue, and [`verify`] reports it until then.
//! - **Bounded size.** Files older than `max_age_days` and, oldest first, files beyond
//!   `max_total_bytes` are deleted at open and at each daily rotation. The file being written is
//!   never deleted, so one very busy day can exceed the budget until the next rotation. The
//!   oldest retained line is the chain's anchor: its `prev` may name a pruned line.
//!
//! What a hash chain without a secret cannot do: stop someone with write access from rewriting
//! *every* line after an edit, or from cutting lines off the end. Keep [`AuditLog::head`]
//! somewhere else if that matters.

use std::fs::{self, File, OpenOptions};
use std::io::{self, BufRead, BufReader, Read, Write};
use std::os::unix::fs::{DirBuilderExt, FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use chrono::{DateTime, NaiveDate, SecondsFormat, Utc};
use rustix::fs::FlockOperation;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::protocol::{CallStatus, Decision, Settings, Source};

/// `prev` of the very first line of a log: no line came before it.
pub const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// Strings longer than this many characters are replaced by a summary in the log.
pub const SUMMARY_THRESHOLD_CHARS: usize = 256;
/// How many leading characters a summary keeps.
pub const SUMMARY_HEAD_CHARS: usize = 64;

const LOCK_FILE: &str = ".lock";
const TORN_SUFFIX: &str = ".torn";
/// `,"hash":"` + 64 hex digits + `"}`.
const HASH_SUFFIX_LEN: usize = 9 + 64 + 2;
const HASH_PREFIX: &[u8] = b",\"hash\":\"";

/// Where the log lives and how much of it to keep.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditConfig {
    /// Usually [`AuditConfig::default_dir`]: `$XDG_DATA_HOME/ground-link/audit` on Linux.
    pub dir: PathBuf,
    /// Files whose date is more than this many days before today are deleted; 0 keeps all ages.
    pub max_age_days: u32,
    /// Oldest files are deleted while the total is above this; 0 means no size limit.
    pub max_total_bytes: u64,
}

impl AuditConfig {
    /// The platform's data directory plus `ground-link/audit` (`None` if there is no home).
    pub fn default_dir() -> Option<PathBuf> {
        dirs::data_dir().map(|d| d.join("ground-link").join("audit"))
    }

    /// The retention limits of `settings` for a log in `dir`.
    pub fn from_settings(dir: PathBuf, settings: &Settings) -> AuditConfig {
        AuditConfig {
            dir,
            max_age_days: settings.audit_max_age_days,
            max_total_bytes: settings.audit_max_total_mb.saturating_mul(1024 * 1024),
        }
    }
}

/// One call as recorded. `args` must already be summarised ([`summarize_args`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AuditEntry {
    /// RFC 3339 UTC with milliseconds. Left empty, [`AuditLog::append`] fills in the append
    /// time from its clock.
    #[serde(default)]
    pub time: String,
    pub source: Source,
    /// The named client (its token's name), for calls from MCP clients with their own token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<String>,
    pub session: Option<String>,
    pub call_id: String,
    pub tool: String,
    /// The page's origin, for page-tool calls the side panel reports (`source: panel`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin: Option<String>,
    /// The tab's URL when the call ran, for the same.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    pub args: Value,
    pub decision: Option<Decision>,
    /// The approver's answer: `"allow once"`, `"allow session"`, `"deny: <reason>"`,
    /// `"timeout"`, `"cancelled"`, `"shutdown"`, …; `None` when nobody was asked.
    pub answer: Option<String>,
    pub duration_ms: u64,
    pub status: CallStatus,
    pub output_bytes: u64,
    /// Anything else worth keeping, e.g. the hook that blocked the call.
    pub note: Option<String>,
}

/// The line as written: the entry's fields in a fixed order, then `prev`; `hash` is appended
/// after hashing these bytes.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct LineOut<'a> {
    time: &'a str,
    source: Source,
    // Absent when unset, so lines written before the field existed hash as they did.
    #[serde(skip_serializing_if = "Option::is_none")]
    client: &'a Option<String>,
    session: &'a Option<String>,
    call_id: &'a str,
    tool: &'a str,
    // Absent unless set, like `client`.
    #[serde(skip_serializing_if = "Option::is_none")]
    origin: &'a Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    url: &'a Option<String>,
    args: &'a Value,
    decision: &'a Option<Decision>,
    answer: &'a Option<String>,
    duration_ms: u64,
    status: CallStatus,
    output_bytes: u64,
    note: &'a Option<String>,
    prev: &'a str,
}

/// `args` with every string longer than [`SUMMARY_THRESHOLD_CHARS`] (at any depth) replaced by
/// `{"len": <bytes>, "sha256": "<hex>", "head": "<first 64 chars>…"}`, so the log stays small
/// and does not keep file contents, while the hash still ties an entry to the exact content.
pub fn summarize_args(args: &Map<String, Value>) -> Value {
    Value::Object(
        args.iter()
            .map(|(k, v)| (k.clone(), summarize_value(v)))
            .collect(),
    )
}

fn summarize_value(v: &Value) -> Value {
    match v {
        Value::String(s) if s.chars().count() > SUMMARY_THRESHOLD_CHARS => {
            let mut head: String = s.chars().take(SUMMARY_HEAD_CHARS).collect();
            head.push('…');
            let mut m = Map::new();
            m.insert("len".into(), Value::from(s.len() as u64));
            m.insert(
                "sha256".into(),
                Value::from(hex::encode(Sha256::digest(s.as_bytes()))),
            );
            m.insert("head".into(), Value::from(head));
            Value::Object(m)
        }
        Value::Array(items) => Value::Array(items.iter().map(summarize_value).collect()),
        Value::Object(map) => summarize_args(map),
        other => other.clone(),
    }
}

/// Where "now" comes from; injectable so rotation and pruning can be tested.
pub trait Clock: Send + Sync {
    fn now(&self) -> DateTime<Utc>;
}

/// The real UTC clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> DateTime<Utc> {
        Utc::now()
    }
}

#[derive(Debug, thiserror::Error)]
pub enum AuditError {
    #[error(
        "cannot create the audit directory {dir}: {source}; make its parent writable or configure another audit directory"
    )]
    CreateDir { dir: PathBuf, source: io::Error },
    #[error("cannot list the audit directory {dir}: {source}; check its permissions")]
    ListDir { dir: PathBuf, source: io::Error },
    #[error("cannot open audit file {path}: {source}; check the directory's permissions")]
    Open { path: PathBuf, source: io::Error },
    #[error("cannot read audit file {path}: {source}; check its permissions")]
    Read { path: PathBuf, source: io::Error },
    #[error(
        "cannot write audit file {path}: {source}; calls must not run unaudited, so free disk space or fix the permissions"
    )]
    Write { path: PathBuf, source: io::Error },
    #[error(
        "short write to audit file {path}: {written} of {len} bytes; the partial line was removed, free disk space and retry"
    )]
    ShortWrite {
        path: PathBuf,
        written: usize,
        len: usize,
    },
    #[error(
        "cannot lock {path}: {source}; another process may hold it, or the file system lacks flock"
    )]
    Lock { path: PathBuf, source: io::Error },
    #[error("cannot serialise the audit entry of call {call_id}: {source}")]
    Serialize {
        call_id: String,
        source: serde_json::Error,
    },
}

/// The file currently appended to.
struct Current {
    date: NaiveDate,
    path: PathBuf,
    file: File,
    /// Its length as of our last write; a different length means another process wrote.
    len: u64,
}

struct State {
    current: Option<Current>,
    /// `hash` of the last line in the chain.
    head: String,
    /// Bytes in all date files, as last listed plus what we wrote since.
    total_bytes: u64,
    /// Set when a size prune could not get under budget (only the current file is left):
    /// listing again before the next rotation would be wasted work.
    over_budget: bool,
}

/// An open audit log. `Send + Sync`: share it in an `Arc` and append from any thread. Appends
/// block briefly (a mutex, a `flock`, one `write`); from async code that is cheap enough to
/// call inline, or use `spawn_blocking` if the directory is on a slow file system.
pub struct AuditLog {
    cfg: AuditConfig,
    clock: Arc<dyn Clock>,
    lock_path: PathBuf,
    lock_file: File,
    state: Mutex<State>,
}

impl std::fmt::Debug for AuditLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuditLog").field("cfg", &self.cfg).finish()
    }
}

/// Holds the directory's `flock` until dropped.
struct DirLock<'a>(&'a File);

impl<'a> DirLock<'a> {
    fn exclusive(file: &'a File, path: &Path) -> Result<DirLock<'a>, AuditError> {
        flock_retry(file, FlockOperation::LockExclusive).map_err(|source| AuditError::Lock {
            path: path.to_path_buf(),
            source,
        })?;
        Ok(DirLock(file))
    }
}

impl Drop for DirLock<'_> {
    fn drop(&mut self) {
        // Closing the descriptor would also release it; nothing useful to do on failure.
        let _ = rustix::fs::flock(self.0, FlockOperation::Unlock);
    }
}

fn flock_retry(file: &File, op: FlockOperation) -> io::Result<()> {
    loop {
        match rustix::fs::flock(file, op) {
            Ok(()) => return Ok(()),
            Err(rustix::io::Errno::INTR) => continue,
            Err(e) => return Err(e.into()),
        }
    }
}

impl AuditLog {
    /// Opens (creating with mode 0700) the log directory, finds the chain head from the newest
    /// file's last line, moves a torn tail aside, and prunes old files.
    pub fn open(cfg: AuditConfig) -> Result<AuditLog, AuditError> {
        AuditLog::open_with_clock(cfg, Arc::new(SystemClock))
    }

    /// [`AuditLog::open`] with another clock (tests, replay).
    pub fn open_with_clock(
        cfg: AuditConfig,
        clock: Arc<dyn Clock>,
    ) -> Result<AuditLog, AuditError> {
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&cfg.dir)
            .map_err(|source| AuditError::CreateDir {
                dir: cfg.dir.clone(),
                source,
            })?;
        let lock_path = cfg.dir.join(LOCK_FILE);
        let lock_file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(&lock_path)
            .map_err(|source| AuditError::Open {
                path: lock_path.clone(),
                source,
            })?;
        let log = AuditLog {
            state: Mutex::new(State {
                current: None,
                head: GENESIS.to_string(),
                total_bytes: 0,
                over_budget: false,
            }),
            cfg,
            clock,
            lock_path,
            lock_file,
        };
        {
            let mut st = log.lock_state();
            let _lock = DirLock::exclusive(&log.lock_file, &log.lock_path)?;
            // Head first: pruning may delete the file that holds it, and the next line must
            // still link to it.
            if let Some(head) = find_head(&log.cfg.dir, None)? {
                st.head = head;
            }
            let today = log.clock.now().date_naive();
            log.prune(&mut st, today, None)?;
        }
        Ok(log)
    }

    pub fn dir(&self) -> &Path {
        &self.cfg.dir
    }

    /// The `hash` of the newest line this log knows of ([`GENESIS`] for an empty log). Keeping a
    /// copy elsewhere lets a later [`verify`] prove nothing was rewritten before it.
    pub fn head(&self) -> String {
        self.lock_state().head.clone()
    }

    /// Appends one line for `entry` (see the module docs for the format and guarantees).
    pub fn append(&self, entry: &AuditEntry) -> Result<(), AuditError> {
        let mut st = self.lock_state();
        let _lock = DirLock::exclusive(&self.lock_file, &self.lock_path)?;
        // Read the clock under the lock so that lock order is time order across processes:
        // no process writes an older day's file after another has started the next one.
        let now = self.clock.now();
        let mut date = now.date_naive();
        if let Some(cur) = &st.current {
            // A clock stepping back must not reopen an older file behind the chain's head.
            date = date.max(cur.date);
        }
        self.ensure_current(&mut st, date)?;
        let time = now.to_rfc3339_opts(SecondsFormat::Millis, true);
        let mut line = build_line(entry, &time, &st.head)?;
        if line.bytes.len() as u64 > PAGE {
            // Only a line that fits one page is safe from `kill -9` (see PAGE): keep the
            // arguments and the explanation as digests, which still pin the exact content.
            let compact = compact_entry(entry);
            line = build_line(&compact, &time, &st.head)?;
        }
        let State {
            current,
            head,
            total_bytes,
            ..
        } = &mut *st;
        let Some(cur) = current.as_mut() else {
            // ensure_current always leaves a file open; treat the impossible as an I/O error.
            return Err(AuditError::Write {
                path: self.cfg.dir.clone(),
                source: io::Error::other("no audit file is open"),
            });
        };
        // Linux checks for a fatal signal between the pages of one write(2), so a `kill -9`
        // can cut a line that spans two pages. A line that fits one page is made to start on a
        // fresh one, after a padding line of spaces that `verify` skips.
        let at = cur.file.metadata().map(|m| m.len()).unwrap_or(cur.len);
        let len = line.bytes.len() as u64;
        let room = PAGE - at % PAGE;
        if len > room && len <= PAGE {
            let mut pad = vec![b' '; room as usize];
            if let Some(last) = pad.last_mut() {
                *last = b'\n';
            }
            if room == 1 {
                // One byte left: a lone newline would read as an edited (empty) line, so the
                // padding runs into the next page instead; then the line starts right after.
                pad = vec![b' '; 1];
                pad.extend(std::iter::repeat_n(b' ', PAGE as usize - 1));
                pad.push(b'\n');
            }
            if write_once(&cur.file, &pad).is_ok() {
                cur.len = at + pad.len() as u64;
                *total_bytes += pad.len() as u64;
            }
        }
        match write_once(&cur.file, line.bytes.as_bytes()) {
            Ok(()) => {
                cur.len += line.bytes.len() as u64;
                *total_bytes += line.bytes.len() as u64;
                *head = line.hash;
            }
            Err(err) => {
                let path = cur.path.clone();
                // Remove whatever part reached the file; we still hold the lock, so nobody
                // appended after it. Then force a fresh look at the file next time.
                let _ = cur.file.set_len(cur.len);
                *current = None;
                return Err(match err {
                    WriteErr::Io(source) => AuditError::Write { path, source },
                    WriteErr::Short(written) => AuditError::ShortWrite {
                        path,
                        written,
                        len: line.bytes.len(),
                    },
                });
            }
        }
        if self.cfg.max_total_bytes > 0
            && st.total_bytes > self.cfg.max_total_bytes
            && !st.over_budget
        {
            self.prune(&mut st, date, Some(date))?;
            st.over_budget = st.total_bytes > self.cfg.max_total_bytes;
        }
        Ok(())
    }

    fn lock_state(&self) -> std::sync::MutexGuard<'_, State> {
        // A panic while holding the lock cannot leave a torn line (the write is one syscall),
        // and the length check in ensure_current resynchronises the head, so keep going.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Makes `st.current` the file for `date`, with `st.head` matching its last line.
    fn ensure_current(&self, st: &mut State, date: NaiveDate) -> Result<(), AuditError> {
        let rotated = st.current.as_ref().is_none_or(|c| c.date != date);
        if rotated {
            let path = self.cfg.dir.join(file_name(date));
            let file = OpenOptions::new()
                .append(true)
                .create(true)
                .mode(0o600)
                .open(&path)
                .map_err(|source| AuditError::Open {
                    path: path.clone(),
                    source,
                })?;
            // u64::MAX never equals a real length: forces the resync below.
            st.current = Some(Current {
                date,
                path,
                file,
                len: u64::MAX,
            });
            st.over_budget = false;
            self.prune(st, date, Some(date))?;
        }
        let Some(cur) = st.current.as_mut() else {
            return Ok(());
        };
        let actual = cur
            .file
            .metadata()
            .map_err(|source| AuditError::Read {
                path: cur.path.clone(),
                source,
            })?
            .len();
        if actual != cur.len {
            // First use of this file, or another process appended: the head is in the files.
            // If every file is gone (pruned), the head we remember is still the right `prev`.
            if let Some(head) = find_head(&self.cfg.dir, Some(date))? {
                st.head = head;
            }
            // find_head may have cut a torn tail off this very file.
            cur.len = cur
                .file
                .metadata()
                .map_err(|source| AuditError::Read {
                    path: cur.path.clone(),
                    source,
                })?
                .len();
        }
        Ok(())
    }

    /// Deletes files older than the age limit, then oldest files while over the size limit.
    /// `keep` (the file being written, or at open the newest file) is never deleted.
    fn prune(
        &self,
        st: &mut State,
        today: NaiveDate,
        keep: Option<NaiveDate>,
    ) -> Result<(), AuditError> {
        let mut files = list_files(&self.cfg.dir)?;
        let keep = keep.or_else(|| files.last().map(|f| f.date));
        if self.cfg.max_age_days > 0 {
            let cutoff = today - chrono::Days::new(u64::from(self.cfg.max_age_days));
            files.retain(|f| {
                if f.date < cutoff && Some(f.date) != keep {
                    remove_file(&f.path);
                    false
                } else {
                    true
                }
            });
        }
        let mut total: u64 = files.iter().map(|f| f.len).sum();
        if self.cfg.max_total_bytes > 0 {
            for f in &files {
                if total <= self.cfg.max_total_bytes {
                    break;
                }
                if Some(f.date) == keep || f.date > today {
                    continue;
                }
                remove_file(&f.path);
                total -= f.len;
            }
        }
        st.total_bytes = total;
        Ok(())
    }
}

fn remove_file(path: &Path) {
    if let Err(err) = fs::remove_file(path) {
        tracing::warn!(path = %path.display(), %err, "could not prune audit file");
    }
    let mut torn = path.as_os_str().to_owned();
    torn.push(TORN_SUFFIX);
    let _ = fs::remove_file(PathBuf::from(torn));
}

struct Line {
    bytes: String,
    hash: String,
}

fn build_line(entry: &AuditEntry, now: &str, prev: &str) -> Result<Line, AuditError> {
    let out = LineOut {
        time: if entry.time.is_empty() {
            now
        } else {
            &entry.time
        },
        source: entry.source,
        client: &entry.client,
        session: &entry.session,
        call_id: &entry.call_id,
        tool: &entry.tool,
        origin: &entry.origin,
        url: &entry.url,
        args: &entry.args,
        decision: &entry.decision,
        answer: &entry.answer,
        duration_ms: entry.duration_ms,
        status: entry.status,
        output_bytes: entry.output_bytes,
        note: &entry.note,
        prev,
    };
    let mut bytes = serde_json::to_string(&out).map_err(|source| AuditError::Serialize {
        call_id: entry.call_id.clone(),
        source,
    })?;
    let hash = hex::encode(Sha256::digest(bytes.as_bytes()));
    // serde_json escapes control characters, so the line holds no newline of its own.
    bytes.pop();
    bytes.reserve(HASH_SUFFIX_LEN + 1);
    bytes.push_str(",\"hash\":\"");
    bytes.push_str(&hash);
    bytes.push_str("\"}\n");
    Ok(Line { bytes, hash })
}

enum WriteErr {
    Io(io::Error),
    Short(usize),
}

/// Exactly one successful `write(2)`: appending in pieces could interleave with another writer
/// or leave a torn line if we die between them.
/// `entry` with its arguments (and, if need be, its decision) replaced by digests, so the line
/// fits one page.
fn compact_entry(entry: &AuditEntry) -> AuditEntry {
    let digest = |v: &Value| {
        let text = v.to_string();
        let head: String = text.chars().take(SUMMARY_HEAD_CHARS).collect();
        serde_json::json!({"len": text.len(), "sha256": hex::encode(Sha256::digest(text.as_bytes())), "head": head})
    };
    let mut compact = entry.clone();
    compact.args = serde_json::json!({"compacted": digest(&entry.args)});
    if let Some(d) = &mut compact.decision {
        d.reason = d.reason.chars().take(300).collect();
        for step in &mut d.steps {
            step.detail = step.detail.chars().take(120).collect();
        }
    }
    if let Some(n) = &mut compact.note {
        *n = n.chars().take(300).collect();
    }
    if let Some(a) = &mut compact.answer {
        *a = a.chars().take(300).collect();
    }
    // Client-supplied names: an unknown tool or a session id can be anything.
    compact.tool = compact.tool.chars().take(100).collect();
    if let Some(sn) = &mut compact.session {
        *sn = sn.chars().take(200).collect();
    }
    if let Some(u) = &mut compact.url {
        *u = u.chars().take(300).collect();
    }
    if let Some(o) = &mut compact.origin {
        *o = o.chars().take(200).collect();
    }
    compact
}

/// The smallest unit the kernel copies a write in without checking for a fatal signal.
const PAGE: u64 = 4096;

fn write_once(file: &File, bytes: &[u8]) -> Result<(), WriteErr> {
    let mut f = file;
    loop {
        match f.write(bytes) {
            Ok(n) if n == bytes.len() => return Ok(()),
            Ok(n) => return Err(WriteErr::Short(n)),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(WriteErr::Io(e)),
        }
    }
}

fn file_name(date: NaiveDate) -> String {
    format!("{}.jsonl", date.format("%Y-%m-%d"))
}

/// The date of a log file name, `None` for anything else (the lock file, `.torn` files).
fn parse_file_name(name: &str) -> Option<NaiveDate> {
    let stem = name.strip_suffix(".jsonl")?;
    if stem.len() != 10 {
        return None;
    }
    NaiveDate::parse_from_str(stem, "%Y-%m-%d").ok()
}

struct LogFile {
    date: NaiveDate,
    path: PathBuf,
    len: u64,
}

/// Log files in date order.
fn list_files(dir: &Path) -> Result<Vec<LogFile>, AuditError> {
    let list_err = |source| AuditError::ListDir {
        dir: dir.to_path_buf(),
        source,
    };
    let mut files = Vec::new();
    for item in fs::read_dir(dir).map_err(list_err)? {
        let item = item.map_err(list_err)?;
        let Some(date) = item.file_name().to_str().and_then(parse_file_name) else {
            continue;
        };
        let path = item.path();
        let meta = match fs::symlink_metadata(&path) {
            Ok(m) => m,
            // Pruned by another process between the listing and now.
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(source) => return Err(AuditError::Read { path, source }),
        };
        if !meta.is_file() {
            continue;
        }
        files.push(LogFile {
            date,
            path,
            len: meta.len(),
        });
    }
    files.sort_by_key(|f| f.date);
    Ok(files)
}

/// The `hash` of the last complete line in the newest non-empty file dated `upto` or earlier
/// (`None`: no such line). A torn tail found on the way is moved into `<file>.torn`; callers
/// hold the directory lock.
fn find_head(dir: &Path, upto: Option<NaiveDate>) -> Result<Option<String>, AuditError> {
    let files = list_files(dir)?;
    for f in files
        .iter()
        .rev()
        .filter(|f| upto.is_none_or(|u| f.date <= u))
    {
        let read_err = |source| AuditError::Read {
            path: f.path.clone(),
            source,
        };
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(&f.path)
            .map_err(read_err)?;
        let len = file.metadata().map_err(read_err)?.len();
        let last_nl = find_newline_before(&file, len).map_err(read_err)?;
        let complete = last_nl.map_or(0, |p| p + 1);
        if complete < len {
            set_aside_torn_tail(&file, &f.path, complete, len)?;
        }
        let Some(mut end) = last_nl else { continue };
        // Step back over padding lines (spaces only) to the last entry.
        let line = loop {
            let start = find_newline_before(&file, end)
                .map_err(read_err)?
                .map_or(0, |p| p + 1);
            let mut line = vec![0u8; usize::try_from(end - start).unwrap_or(usize::MAX)];
            file.read_exact_at(&mut line, start).map_err(read_err)?;
            if line.first() == Some(&b' ') && line.iter().all(|b| *b == b' ') && start > 0 {
                end = start - 1;
                continue;
            }
            break line;
        };
        return Ok(Some(line_hash(&line).unwrap_or_else(|| {
            // The last line is damaged; verify will say so. Chain to its raw bytes so new lines
            // still link to something that pins what was there.
            tracing::warn!(path = %f.path.display(), "last audit line has no valid hash");
            hex::encode(Sha256::digest(&line))
        })));
    }
    Ok(None)
}

/// Moves bytes `[from, len)` into `<path>.torn` and truncates them away: they were never a
/// complete line (power loss), and leaving them would glue the next line onto them.
fn set_aside_torn_tail(file: &File, path: &Path, from: u64, len: u64) -> Result<(), AuditError> {
    let mut tail = vec![0u8; usize::try_from(len - from).unwrap_or(usize::MAX)];
    file.read_exact_at(&mut tail, from)
        .map_err(|source| AuditError::Read {
            path: path.to_path_buf(),
            source,
        })?;
    let mut torn_path = path.as_os_str().to_owned();
    torn_path.push(TORN_SUFFIX);
    let torn_path = PathBuf::from(torn_path);
    let mut torn = OpenOptions::new()
        .append(true)
        .create(true)
        .mode(0o600)
        .open(&torn_path)
        .map_err(|source| AuditError::Open {
            path: torn_path.clone(),
            source,
        })?;
    tail.push(b'\n');
    torn.write_all(&tail).map_err(|source| AuditError::Write {
        path: torn_path.clone(),
        source,
    })?;
    tracing::warn!(
        path = %path.display(),
        bytes = len - from,
        moved_to = %torn_path.display(),
        "audit file ended in a torn line; moved it aside"
    );
    file.set_len(from).map_err(|source| AuditError::Write {
        path: path.to_path_buf(),
        source,
    })
}

/// Position of the last `\n` strictly before `end`.
fn find_newline_before(file: &File, end: u64) -> io::Result<Option<u64>> {
    const CHUNK: u64 = 8192;
    let mut buf = vec![0u8; CHUNK as usize];
    let mut hi = end;
    while hi > 0 {
        let lo = hi.saturating_sub(CHUNK);
        let n = (hi - lo) as usize;
        file.read_exact_at(&mut buf[..n], lo)?;
        if let Some(i) = buf[..n].iter().rposition(|&b| b == b'\n') {
            return Ok(Some(lo + i as u64));
        }
        hi = lo;
    }
    Ok(None)
}

/// The hash a line claims (its trailing `"hash"` member), if it has a well-formed one.
fn line_hash(line: &[u8]) -> Option<String> {
    split_line(line).map(|(_, h)| h.to_string())
}

/// `(bytes that were hashed minus the closing brace, claimed hash)`.
fn split_line(line: &[u8]) -> Option<(&[u8], &str)> {
    if line.len() < HASH_SUFFIX_LEN + 1 || !line.ends_with(b"\"}") {
        return None;
    }
    let cut = line.len() - HASH_SUFFIX_LEN;
    let (body, suffix) = line.split_at(cut);
    let hash = suffix.strip_prefix(HASH_PREFIX)?.strip_suffix(b"\"}")?;
    if !hash.iter().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
        return None;
    }
    Some((body, std::str::from_utf8(hash).ok()?))
}

/// What [`verify`] found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct VerifyReport {
    /// Log files looked at.
    pub files: usize,
    /// Lines that checked out (all of them when `problem` is `None`).
    pub lines: u64,
    /// The first problem, in chain order.
    pub problem: Option<VerifyProblem>,
    /// `hash` of the last good line.
    pub head: Option<String>,
    /// Whether the oldest retained line is the very first of the log (nothing pruned).
    pub starts_at_genesis: bool,
}

impl VerifyReport {
    pub fn is_ok(&self) -> bool {
        self.problem.is_none()
    }
}

impl std::fmt::Display for VerifyReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.problem {
            None => write!(
                f,
                "audit log ok: {} lines in {} files{}",
                self.lines,
                self.files,
                if self.starts_at_genesis || self.lines == 0 {
                    ""
                } else {
                    " (older files were pruned; the chain starts at the oldest kept line)"
                }
            ),
            Some(p) => write!(f, "audit log damaged: {p}"),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct VerifyProblem {
    pub file: PathBuf,
    /// 1-based line number within `file`.
    pub line: u64,
    pub kind: ProblemKind,
}

impl std::fmt::Display for VerifyProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} line {}: {}",
            self.file.display(),
            self.line,
            self.kind
        )
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum ProblemKind {
    /// The file ends without a newline: a write was cut short (power loss) or the file was cut.
    TornLine,
    EmptyLine,
    InvalidJson {
        error: String,
    },
    /// No well-formed trailing `"hash"` member.
    MissingHash,
    MissingPrev,
    /// The line's content differs from what was hashed: it was edited.
    HashMismatch {
        claimed: String,
        actual: String,
    },
    /// `prev` does not name the line before: a line was deleted, inserted or moved.
    BrokenChain {
        prev: String,
        expected: String,
    },
}

impl std::fmt::Display for ProblemKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ProblemKind::TornLine => f.write_str(
                "torn last line (no trailing newline): a write was cut short; opening the log moves it aside",
            ),
            ProblemKind::EmptyLine => f.write_str("empty line: lines were edited"),
            ProblemKind::InvalidJson { error } => write!(f, "not valid JSON ({error})"),
            ProblemKind::MissingHash => f.write_str("no trailing \"hash\" member"),
            ProblemKind::MissingPrev => f.write_str("no \"prev\" member"),
            ProblemKind::HashMismatch { claimed, actual } => write!(
                f,
                "content was changed: it hashes to {actual}, the line claims {claimed}"
            ),
            ProblemKind::BrokenChain { prev, expected } => write!(
                f,
                "chain broken: prev is {prev} but the line before hashes to {expected}; a line was deleted, inserted or moved"
            ),
        }
    }
}

/// Every entry in `dir`, newest first (files by date, lines from the end), for viewers. Lines
/// that do not parse (padding, a torn tail) are skipped, and so is a file that vanished or
/// cannot be read; [`verify`] is what reports them. A missing directory is an empty log.
pub fn for_each_newest_first(
    dir: &Path,
    mut visit: impl FnMut(AuditEntry),
) -> Result<(), AuditError> {
    if !dir.exists() {
        return Ok(());
    }
    for f in list_files(dir)?.iter().rev() {
        let Ok(text) = fs::read_to_string(&f.path) else {
            continue;
        };
        text.lines()
            .rev()
            .filter_map(|line| serde_json::from_str::<AuditEntry>(line).ok())
            .for_each(&mut visit);
    }
    Ok(())
}

/// Checks every log file in `dir` in date order: each line parses, its hash matches its
/// content, and its `prev` names the line before (across files). The oldest retained line is
/// the anchor and may point at a pruned line. Lines appended while this runs are not looked at.
/// A missing directory is an empty log.
pub fn verify(dir: &Path) -> Result<VerifyReport, AuditError> {
    let mut report = VerifyReport {
        files: 0,
        lines: 0,
        problem: None,
        head: None,
        starts_at_genesis: true,
    };
    if !dir.exists() {
        return Ok(report);
    }
    // Take the sizes under the writers' lock so no half-copied line is read as torn: Linux can
    // expose part of a multi-page write to a concurrent reader.
    let files = {
        let lock_path = dir.join(LOCK_FILE);
        let lock = File::open(&lock_path).ok();
        if let Some(l) = &lock {
            flock_retry(l, FlockOperation::LockShared).map_err(|source| AuditError::Lock {
                path: lock_path.clone(),
                source,
            })?;
        }
        let files = list_files(dir);
        if let Some(l) = &lock {
            let _ = rustix::fs::flock(l, FlockOperation::Unlock);
        }
        files?
    };
    let mut expected: Option<String> = None;
    for f in &files {
        report.files += 1;
        let read_err = |source| AuditError::Read {
            path: f.path.clone(),
            source,
        };
        let file = match File::open(&f.path) {
            Ok(file) => file,
            // Pruned while we looked: the chain restarts at the next file.
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(source) => return Err(read_err(source)),
        };
        let mut reader = BufReader::new(file.take(f.len));
        let mut buf = Vec::new();
        let mut line_no = 0u64;
        loop {
            buf.clear();
            let n = reader.read_until(b'\n', &mut buf).map_err(read_err)?;
            if n == 0 {
                break;
            }
            line_no += 1;
            let problem = |kind| VerifyProblem {
                file: f.path.clone(),
                line: line_no,
                kind,
            };
            // Spaces alone are padding (see `PAGE`): a whole padding line, or one that a crash
            // cut short at the very end; neither carries an entry.
            if buf.iter().all(|b| *b == b' ' || *b == b'\n') && buf.first() == Some(&b' ') {
                continue;
            }
            let Some(line) = buf.strip_suffix(b"\n") else {
                report.problem = Some(problem(ProblemKind::TornLine));
                return Ok(report);
            };
            match check_line(line, expected.as_deref()) {
                Ok((hash, prev)) => {
                    if expected.is_none() {
                        report.starts_at_genesis = prev == GENESIS;
                    }
                    report.lines += 1;
                    report.head = Some(hash.clone());
                    expected = Some(hash);
                }
                Err(kind) => {
                    report.problem = Some(problem(kind));
                    return Ok(report);
                }
            }
        }
    }
    Ok(report)
}

/// `(hash, prev)` of a line that checks out.
fn check_line(line: &[u8], expected_prev: Option<&str>) -> Result<(String, String), ProblemKind> {
    if line.is_empty() {
        return Err(ProblemKind::EmptyLine);
    }
    let value: Value = serde_json::from_slice(line).map_err(|e| ProblemKind::InvalidJson {
        error: e.to_string(),
    })?;
    let Some((body, claimed)) = split_line(line) else {
        return Err(ProblemKind::MissingHash);
    };
    let mut hasher = Sha256::new();
    hasher.update(body);
    hasher.update(b"}");
    let actual = hex::encode(hasher.finalize());
    if actual != claimed {
        return Err(ProblemKind::HashMismatch {
            claimed: claimed.to_string(),
            actual,
        });
    }
    let Some(prev) = value.get("prev").and_then(Value::as_str) else {
        return Err(ProblemKind::MissingPrev);
    };
    if let Some(expected) = expected_prev
        && prev != expected
    {
        return Err(ProblemKind::BrokenChain {
            prev: prev.to_string(),
            expected: expected.to_string(),
        });
    }
    Ok((actual, prev.to_string()))
}
