//! `list_dir`, `read_file`, `write_file` and `edit_file`: the file tools, all through the jail.
//!
//! Every open goes through [`Jail`], every path in output is root-relative, and every write is
//! atomic (temp file + rename in the same directory).

use std::io::{BufRead, BufReader, Read};

use schemars::JsonSchema;
use serde::Deserialize;

use crate::jail::{Jail, JailError, Resolved};

/// `read_file` stops after this many lines unless `limit` says otherwise.
pub const READ_MAX_LINES: u64 = 2000;
/// … and after this many bytes, whatever `limit` says.
pub const READ_MAX_BYTES: usize = 256 * 1024;
/// `list_dir` lists at most this many entries.
pub const LIST_MAX_ENTRIES: usize = 1000;
/// `list_dir` depth limit.
pub const LIST_MAX_DEPTH: u32 = 5;
/// Largest file `write_file` and `edit_file` accept, and largest file `edit_file` reads.
pub const WRITE_MAX_BYTES: usize = 16 * 1024 * 1024;

fn dot() -> String {
    ".".to_string()
}
fn one() -> u32 {
    1
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ListDirArgs {
    /// Directory to list, relative to the sandbox root.
    #[serde(default = "dot")]
    pub path: String,
    /// How deep to descend (1 = only this directory; at most 5).
    #[serde(default = "one")]
    pub depth: u32,
    /// Include hidden and git-ignored entries.
    #[serde(default)]
    pub all: bool,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReadFileArgs {
    /// File to read, relative to the sandbox root.
    pub path: String,
    /// First line to return (1-based).
    #[serde(default)]
    pub offset: Option<u64>,
    /// How many lines to return (default and maximum 2000).
    #[serde(default)]
    pub limit: Option<u64>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum WriteMode {
    #[default]
    Overwrite,
    Append,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WriteFileArgs {
    /// File to write, relative to the sandbox root; missing parent folders are created.
    pub path: String,
    /// The whole new content (or the text to append).
    pub content: String,
    #[serde(default)]
    pub mode: WriteMode,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EditFileArgs {
    /// File to edit, relative to the sandbox root.
    pub path: String,
    /// Exact text to replace (must occur exactly once unless replaceAll).
    pub old_string: String,
    /// Replacement text.
    pub new_string: String,
    #[serde(default)]
    pub replace_all: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum FsError {
    #[error(transparent)]
    Jail(#[from] JailError),
    #[error("{0:?} is a directory; give a file path (use list_dir to see what is inside)")]
    IsDir(String),
    #[error("{0:?} is not a directory; use read_file for files")]
    NotDir(String),
    #[error("{0:?} looks like a binary file; read_file shows text only")]
    Binary(String),
    #[error("`depth` is {0}; use a depth from 1 to {LIST_MAX_DEPTH}")]
    Depth(u32),
    #[error("`offset` is 0; lines are numbered from 1")]
    ZeroOffset,
    #[error("`limit` is 0; ask for at least one line")]
    ZeroLimit,
    #[error("{path:?} has {lines} lines; `offset` {offset} is past the end")]
    PastEnd {
        path: String,
        lines: u64,
        offset: u64,
    },
    #[error(
        "`oldString` is empty; give the exact text to replace (use write_file to replace the whole file)"
    )]
    EmptyOld,
    #[error("`oldString` and `newString` are the same; nothing would change")]
    SameStrings,
    #[error(
        "`oldString` was not found in {0:?}; read the file and copy the exact text, including whitespace"
    )]
    NotFound(String),
    #[error(
        "`oldString` occurs {count} times in {path:?}; add surrounding lines to make it unique, or set `replaceAll` to true"
    )]
    Ambiguous { path: String, count: usize },
    #[error("{path:?} would be {size} bytes; the limit is {WRITE_MAX_BYTES} bytes")]
    TooLarge { path: String, size: usize },
    #[error("{path:?}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
}

/// What a file tool produced: text for the model and whether it was cut short.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolText {
    pub text: String,
    pub truncated: bool,
}

pub fn list_dir(jail: &Jail, args: &ListDirArgs) -> Result<ToolText, FsError> {
    if args.depth == 0 || args.depth > LIST_MAX_DEPTH {
        return Err(FsError::Depth(args.depth));
    }
    let dir = jail.resolve(&args.path)?;
    // Opening through the jail proves the directory is beneath the root right now.
    drop(jail.open_dir(&dir).map_err(|e| match e {
        JailError::Io { path, source } if source.raw_os_error() == Some(20) => {
            FsError::NotDir(path)
        }
        other => FsError::Jail(other),
    })?);
    let mut walker = ignore::WalkBuilder::new(&dir.abs);
    walker
        .max_depth(Some(args.depth as usize))
        .follow_links(false)
        .hidden(!args.all)
        .ignore(!args.all)
        .git_ignore(!args.all)
        .git_exclude(!args.all)
        .git_global(!args.all)
        .parents(!args.all)
        .require_git(false)
        .sort_by_file_name(|a, b| a.cmp(b));
    // Names only, never contents, for secrets; ground-link's own state is not listed at all.
    if let Some(p) = jail.protection() {
        let (p, root) = (std::sync::Arc::clone(p), jail.root().to_path_buf());
        walker.filter_entry(move |e| {
            p.class(e.path(), &root) != Some(crate::protect::PathClass::OwnState)
        });
    }
    let mut lines = Vec::new();
    let mut truncated = false;
    for entry in walker.build().flatten() {
        if entry.depth() == 0 {
            continue;
        }
        // In full-access a listing outside the root was asked for by its absolute path.
        let rel = if dir.inside {
            jail.display(entry.path())
        } else {
            entry.path().display().to_string()
        };
        // Drop entries a concurrent directory-for-symlink swap smuggled in from outside.
        if dir.inside && !jail.still_beneath(&rel) {
            continue;
        }
        if lines.len() >= LIST_MAX_ENTRIES {
            truncated = true;
            break;
        }
        let ft = entry.file_type();
        let line = match ft {
            Some(t) if t.is_dir() => format!("{rel}/"),
            Some(t) if t.is_symlink() => format!("{rel}@ (symlink)"),
            _ => {
                let size = entry.metadata().map(|m| m.len()).unwrap_or(0);
                format!("{rel}  ({})", human_size(size))
            }
        };
        lines.push(line);
    }
    let mut text = if lines.is_empty() {
        format!("{} is empty", dir.rel)
    } else {
        lines.join("\n")
    };
    if truncated {
        text.push_str(&format!(
            "\n[listing truncated at {LIST_MAX_ENTRIES} entries; list a subdirectory or use glob]"
        ));
    }
    Ok(ToolText { text, truncated })
}

pub fn read_file(jail: &Jail, args: &ReadFileArgs) -> Result<ToolText, FsError> {
    let offset = args.offset.unwrap_or(1);
    if offset == 0 {
        return Err(FsError::ZeroOffset);
    }
    let limit = args.limit.unwrap_or(READ_MAX_LINES).min(READ_MAX_LINES);
    if limit == 0 {
        return Err(FsError::ZeroLimit);
    }
    let r = jail.resolve(&args.path)?;
    let file = open_file(jail, &r)?;
    let mut reader = BufReader::with_capacity(64 * 1024, file);
    let io_err = |e: std::io::Error| FsError::Io {
        path: r.rel.clone(),
        source: e,
    };

    let mut out = String::new();
    let mut line = Vec::new();
    let mut number = 0u64;
    let mut shown = 0u64;
    let mut more = false;
    let mut byte_cut = false;
    loop {
        line.clear();
        let n = reader.read_until(b'\n', &mut line).map_err(io_err)?;
        if n == 0 {
            break;
        }
        number += 1;
        if line.contains(&0) {
            return Err(FsError::Binary(r.rel.clone()));
        }
        if number < offset {
            continue;
        }
        if shown == limit || out.len() >= READ_MAX_BYTES {
            more = true;
            break;
        }
        let text = std::str::from_utf8(&line).map_err(|_| FsError::Binary(r.rel.clone()))?;
        let text = text.strip_suffix('\n').unwrap_or(text);
        let text = text.strip_suffix('\r').unwrap_or(text);
        let room = READ_MAX_BYTES.saturating_sub(out.len());
        if text.len() > room {
            let cut = floor_char_boundary(text, room);
            out.push_str(&format!("{number:>6}\t{}", &text[..cut]));
            out.push_str(" [line cut]\n");
            shown += 1;
            more = true;
            byte_cut = true;
            break;
        }
        out.push_str(&format!("{number:>6}\t{text}\n"));
        shown += 1;
    }
    if shown == 0 {
        if number == 0 && offset == 1 {
            return Ok(ToolText {
                text: format!("{} is empty", r.rel),
                truncated: false,
            });
        }
        return Err(FsError::PastEnd {
            path: r.rel.clone(),
            lines: number,
            offset,
        });
    }
    if more {
        let next = if byte_cut {
            offset + shown - 1
        } else {
            offset + shown
        };
        out.push_str(&format!(
            "[showing lines {offset}-{}; more follows: call read_file with offset {next} to continue]",
            offset + shown - 1
        ));
    } else if out.ends_with('\n') {
        out.pop();
    }
    Ok(ToolText {
        text: out,
        truncated: more,
    })
}

fn open_file(jail: &Jail, r: &Resolved) -> Result<std::fs::File, FsError> {
    let file = jail.open_read(r)?;
    let md = file.metadata().map_err(|e| FsError::Io {
        path: r.rel.clone(),
        source: e,
    })?;
    if md.is_dir() {
        return Err(FsError::IsDir(r.rel.clone()));
    }
    Ok(file)
}

/// Current content of a file for write/edit, or `None` if it does not exist yet.
fn current_content(jail: &Jail, r: &Resolved) -> Result<Option<Vec<u8>>, FsError> {
    match open_file(jail, r) {
        Ok(file) => {
            let mut buf = Vec::new();
            file.take(WRITE_MAX_BYTES as u64 + 1)
                .read_to_end(&mut buf)
                .map_err(|e| FsError::Io {
                    path: r.rel.clone(),
                    source: e,
                })?;
            if buf.len() > WRITE_MAX_BYTES {
                return Err(FsError::TooLarge {
                    path: r.rel.clone(),
                    size: buf.len(),
                });
            }
            Ok(Some(buf))
        }
        Err(FsError::Jail(JailError::NotFound(_))) => Ok(None),
        Err(e) => Err(e),
    }
}

/// The content `write_file` would leave behind, and the content it replaces.
pub fn planned_write(
    jail: &Jail,
    args: &WriteFileArgs,
) -> Result<(Option<Vec<u8>>, Vec<u8>), FsError> {
    let r = jail.resolve(&args.path)?;
    let old = current_content(jail, &r)?;
    let new = match (args.mode, &old) {
        (WriteMode::Append, Some(old)) => {
            let mut v = old.clone();
            v.extend_from_slice(args.content.as_bytes());
            v
        }
        _ => args.content.as_bytes().to_vec(),
    };
    if new.len() > WRITE_MAX_BYTES {
        return Err(FsError::TooLarge {
            path: r.rel.clone(),
            size: new.len(),
        });
    }
    Ok((old, new))
}

pub fn write_file(jail: &Jail, args: &WriteFileArgs) -> Result<ToolText, FsError> {
    let r = jail.resolve(&args.path)?;
    // Append is read-modify-rename rather than O_APPEND, so a kill mid-write never tears it.
    let (old, new) = planned_write(jail, args)?;
    jail.write_atomic(&r, &new)?;
    let verb = match (args.mode, old.is_some()) {
        (_, false) => "created",
        (WriteMode::Append, true) => "appended to",
        (WriteMode::Overwrite, true) => "overwrote",
    };
    Ok(ToolText {
        text: format!(
            "{verb} {} ({} bytes written, {} bytes now)",
            r.rel,
            args.content.len(),
            new.len()
        ),
        truncated: false,
    })
}

/// The content `edit_file` would leave behind, the content it replaces, and the match count.
pub fn planned_edit(jail: &Jail, args: &EditFileArgs) -> Result<(String, String, usize), FsError> {
    if args.old_string.is_empty() {
        return Err(FsError::EmptyOld);
    }
    if args.old_string == args.new_string {
        return Err(FsError::SameStrings);
    }
    let r = jail.resolve(&args.path)?;
    let old = current_content(jail, &r)?
        .ok_or_else(|| FsError::Jail(JailError::NotFound(r.rel.clone())))?;
    let old = String::from_utf8(old).map_err(|_| FsError::Binary(r.rel.clone()))?;
    let count = old.matches(&args.old_string).count();
    match count {
        0 => Err(FsError::NotFound(r.rel.clone())),
        n if n > 1 && !args.replace_all => Err(FsError::Ambiguous {
            path: r.rel.clone(),
            count: n,
        }),
        n => {
            let new = if args.replace_all {
                old.replace(&args.old_string, &args.new_string)
            } else {
                old.replacen(&args.old_string, &args.new_string, 1)
            };
            if new.len() > WRITE_MAX_BYTES {
                return Err(FsError::TooLarge {
                    path: r.rel.clone(),
                    size: new.len(),
                });
            }
            Ok((old, new, n))
        }
    }
}

pub fn edit_file(jail: &Jail, args: &EditFileArgs) -> Result<ToolText, FsError> {
    let r = jail.resolve(&args.path)?;
    let (_, new, count) = planned_edit(jail, args)?;
    jail.write_atomic(&r, new.as_bytes())?;
    let noun = if count == 1 {
        "occurrence"
    } else {
        "occurrences"
    };
    Ok(ToolText {
        text: format!("replaced {count} {noun} in {}", r.rel),
        truncated: false,
    })
}

/// A unified diff of what a write or edit would change, for the approval dialog.
pub fn diff_text(path: &str, old: &str, new: &str) -> String {
    similar::TextDiff::from_lines(old, new)
        .unified_diff()
        .context_radius(3)
        .header(&format!("a/{path}"), &format!("b/{path}"))
        .to_string()
}

pub fn human_size(n: u64) -> String {
    const UNITS: [&str; 4] = ["B", "KiB", "MiB", "GiB"];
    let mut v = n as f64;
    let mut unit = 0;
    while v >= 1024.0 && unit < UNITS.len() - 1 {
        v /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{n} B")
    } else {
        format!("{v:.1} {}", UNITS[unit])
    }
}

pub(crate) fn floor_char_boundary(s: &str, mut i: usize) -> usize {
    if i >= s.len() {
        return s.len();
    }
    while i > 0 && !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}
