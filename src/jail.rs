//! The sandbox jail (DESIGN §4): every path a tool touches is resolved here.
//!
//! Guarantees:
//! - A path is inside the root only if, after resolving every symlink, it lies under the root on
//!   path-component boundaries (`/a/proj` never admits `/a/proj2`). A symlink inside the root
//!   that points out is outside; so is a dangling link whose target would be outside, and a new
//!   file under a symlinked parent that points out.
//! - NUL bytes are rejected, symlink loops end in an error.
//! - Files inside the root are opened with `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)`
//!   relative to a descriptor of the root, so swapping a directory for a symlink between the
//!   check and the use fails instead of escaping. Where the kernel lacks `openat2`, opens fall
//!   back to `O_NOFOLLOW` on the final component (the check-then-use window is then the parents).
//! - Paths shown to the model are root-relative; host absolute paths never appear in messages.

use std::collections::VecDeque;
use std::ffi::OsStr;
use std::fs::File;
use std::io;
use std::os::fd::OwnedFd;
use std::path::{Component, Path, PathBuf};

use rustix::fs::{AtFlags, Mode, OFlags, ResolveFlags};

use crate::protocol::SandboxMode;

/// More links than this in one resolution is treated as a loop (Linux's own limit is 40).
const MAX_SYMLINKS: usize = 40;

#[derive(Debug, thiserror::Error)]
pub enum JailError {
    #[error("path {0:?} contains a NUL byte; use a plain path inside the sandbox")]
    Nul(String),
    #[error("path {0:?} is empty; give a path inside the sandbox (\".\" is its root)")]
    Empty(String),
    #[error("path {0:?} is outside the sandbox root; use a path inside it")]
    Outside(String),
    #[error("path {0:?} has too many levels of symbolic links (a loop?)")]
    Loop(String),
    #[error("{0:?} does not exist in the sandbox")]
    NotFound(String),
    #[error("{0:?} changed while it was being opened (a symlink appeared); try again")]
    Raced(String),
    #[error("{path:?}: {source}")]
    Io { path: String, source: io::Error },
    #[error("sandbox root {0:?} is not a directory that exists; pick an existing folder")]
    BadRoot(String),
    #[error("{0:?} is not a regular file (a FIFO, socket or device); only files can be read")]
    NotAFile(String),
    #[error("{0:?} is a directory; list it with list_dir")]
    IsDirectory(String),
}

impl JailError {
    fn io(path: &str, source: io::Error) -> JailError {
        if source.kind() == io::ErrorKind::NotFound {
            JailError::NotFound(path.to_string())
        } else {
            JailError::Io {
                path: path.to_string(),
                source,
            }
        }
    }
}

/// A path after resolution.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    /// What the caller asked for, for messages.
    pub shown: String,
    /// Root-relative with `/` separators, symlinks resolved; `"."` is the root itself. For a
    /// path outside the root (only possible in `full-access`) this is the absolute path.
    pub rel: String,
    /// Absolute host path; for opening only, never for output.
    pub abs: PathBuf,
    pub inside: bool,
}

impl Resolved {
    /// Whether this path is one of the protected paths of DESIGN §4: writing it would make
    /// something run later (git hooks, direnv, editor tasks) or change ground-link's own rules.
    pub fn is_protected(&self) -> bool {
        self.inside && is_protected_rel(&self.rel)
    }
}

/// Root-relative paths that stay read-only in `workspace-write`: the project half of the one
/// matcher in [`crate::protect`].
pub fn is_protected_rel(rel: &str) -> bool {
    crate::protect::project_protected(Path::new(rel))
}

#[derive(Debug)]
pub struct Jail {
    root: PathBuf,
    root_fd: OwnedFd,
    mode: SandboxMode,
    has_openat2: bool,
    /// The one protected-path matcher, when the engine set one (tree walks consult it to
    /// skip ground-link's own state and, unless named, secrets).
    protection: Option<std::sync::Arc<crate::protect::Protection>>,
}

impl Jail {
    pub fn new(root: &Path, mode: SandboxMode) -> Result<Jail, JailError> {
        let shown = root.display().to_string();
        let root = std::fs::canonicalize(root).map_err(|_| JailError::BadRoot(shown.clone()))?;
        if !root.is_dir() {
            return Err(JailError::BadRoot(shown));
        }
        let root_fd = rustix::fs::open(
            &root,
            OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| JailError::io(&shown, e.into()))?;
        let has_openat2 = rustix::fs::openat2(
            &root_fd,
            ".",
            OFlags::PATH | OFlags::CLOEXEC,
            Mode::empty(),
            ResolveFlags::BENEATH,
        )
        .is_ok();
        Ok(Jail {
            root,
            root_fd,
            mode,
            has_openat2,
            protection: None,
        })
    }

    /// Attach the protected-path matcher the engine decides with.
    pub fn with_protection(mut self, protection: crate::protect::Protection) -> Jail {
        self.protection = Some(std::sync::Arc::new(protection));
        self
    }

    pub fn protection(&self) -> Option<&std::sync::Arc<crate::protect::Protection>> {
        self.protection.as_ref()
    }

    /// The class of a resolved absolute path under this jail's matcher (`None` without one).
    pub fn class(&self, abs: &Path) -> Option<crate::protect::PathClass> {
        self.protection.as_ref()?.class(abs, &self.root)
    }

    /// The canonical root. Host path: for opening and for the tray, never for tool output.
    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn mode(&self) -> SandboxMode {
        self.mode
    }

    /// Resolve a path as the model wrote it. Relative paths are relative to the root. Outside
    /// paths are an error unless the sandbox is `full-access`.
    pub fn resolve(&self, path: &str) -> Result<Resolved, JailError> {
        let resolved = self.resolve_any(path)?;
        if !resolved.inside && self.mode != SandboxMode::FullAccess {
            return Err(JailError::Outside(path.to_string()));
        }
        Ok(resolved)
    }

    /// Resolve without the mode check: `inside` says where the path lands.
    pub fn resolve_any(&self, path: &str) -> Result<Resolved, JailError> {
        if path.contains('\0') {
            return Err(JailError::Nul(path.escape_debug().to_string()));
        }
        if path.is_empty() {
            return Err(JailError::Empty(path.to_string()));
        }
        let p = Path::new(path);
        // `~` is the model's shorthand for a home directory: never inside the root.
        if path == "~" || path.starts_with("~/") {
            return Err(JailError::Outside(path.to_string()));
        }
        let (start, rest) = if p.is_absolute() {
            (PathBuf::from("/"), p)
        } else {
            (self.root.clone(), p)
        };
        let abs = walk(start, rest).map_err(|e| match e {
            WalkError::Loop => JailError::Loop(path.to_string()),
            WalkError::Io(err) => JailError::io(path, err),
        })?;
        let inside = abs.starts_with(&self.root);
        let rel = if inside {
            rel_string(&self.root, &abs)
        } else {
            abs.display().to_string()
        };
        Ok(Resolved {
            shown: path.to_string(),
            rel,
            abs,
            inside,
        })
    }

    /// Show a host path the way results may: root-relative, or a placeholder when outside.
    pub fn display(&self, abs: &Path) -> String {
        if abs.starts_with(&self.root) {
            rel_string(&self.root, abs)
        } else {
            "<outside the sandbox>".to_string()
        }
    }

    /// Open a resolved file for reading without following symlinks out of the root. Only a
    /// regular file: a FIFO would block the call until someone writes to it (opened
    /// non-blocking, so even the open cannot hang), a device could read forever.
    pub fn open_read(&self, r: &Resolved) -> Result<File, JailError> {
        let fd = self.open(
            r,
            OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NOFOLLOW | OFlags::NONBLOCK,
            Mode::empty(),
        )?;
        let kind = rustix::fs::fstat(&fd)
            .map(|st| rustix::fs::FileType::from_raw_mode(st.st_mode))
            .map_err(|e| JailError::io(&r.rel, e.into()))?;
        match kind {
            rustix::fs::FileType::RegularFile => Ok(File::from(fd)),
            rustix::fs::FileType::Directory => Err(JailError::IsDirectory(r.rel.clone())),
            _ => Err(JailError::NotAFile(r.rel.clone())),
        }
    }

    /// Open a resolved directory (for listing) without following symlinks out of the root.
    pub fn open_dir(&self, r: &Resolved) -> Result<OwnedFd, JailError> {
        self.open(
            r,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC | OFlags::NOFOLLOW,
            Mode::empty(),
        )
    }

    /// Check that a root-relative path found by a walker still lies beneath the root with no
    /// symlink on the way (used to drop entries a concurrent swap could have smuggled in).
    pub fn still_beneath(&self, rel: &str) -> bool {
        if !self.has_openat2 {
            return true;
        }
        rustix::fs::openat2(
            &self.root_fd,
            rel,
            OFlags::PATH | OFlags::CLOEXEC | OFlags::NOFOLLOW,
            Mode::empty(),
            ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS,
        )
        .is_ok()
    }

    fn open(&self, r: &Resolved, flags: OFlags, mode: Mode) -> Result<OwnedFd, JailError> {
        if r.inside && self.has_openat2 {
            let rel = if r.rel.is_empty() {
                "."
            } else {
                r.rel.as_str()
            };
            return rustix::fs::openat2(
                &self.root_fd,
                rel,
                flags,
                mode,
                ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS,
            )
            .map_err(|e| match e {
                // ELOOP: a component became a symlink after the check; EXDEV: it now escapes.
                rustix::io::Errno::LOOP | rustix::io::Errno::XDEV => {
                    JailError::Raced(r.shown.clone())
                }
                other => JailError::io(&r.shown, other.into()),
            });
        }
        rustix::fs::open(&r.abs, flags, mode).map_err(|e| match e {
            rustix::io::Errno::LOOP => JailError::Raced(r.shown.clone()),
            other => JailError::io(&r.shown, other.into()),
        })
    }

    /// Write `content` to a resolved path atomically: a temp file in the same directory, then
    /// rename over the target. Creates missing parent directories (each through the jail).
    /// A crash at any point leaves either the old file or the new one, never a torn one.
    pub fn write_atomic(&self, r: &Resolved, content: &[u8]) -> Result<(), JailError> {
        let (parent_rel, name) = split_parent(&r.rel);
        if name.is_empty() || name == "." || name == ".." {
            return Err(JailError::Io {
                path: r.shown.clone(),
                source: io::Error::new(io::ErrorKind::InvalidInput, "not a file name"),
            });
        }
        let dir = self.make_dirs(r, parent_rel)?;
        let tmp_name = format!(".{name}.gl-tmp-{}", random_suffix());
        let tmp = rustix::fs::openat(
            &dir,
            tmp_name.as_str(),
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o644),
        )
        .map_err(|e| JailError::io(&r.shown, e.into()))?;
        let result = (|| -> io::Result<()> {
            // Keep the permission bits of a file we replace (an executable script stays one).
            if let Ok(st) = rustix::fs::statat(&dir, name, AtFlags::SYMLINK_NOFOLLOW) {
                let perm = Mode::from_raw_mode(st.st_mode & 0o7777);
                rustix::fs::fchmod(&tmp, perm)?;
            }
            let mut file = File::from(tmp);
            io::Write::write_all(&mut file, content)?;
            file.sync_all()?;
            rustix::fs::renameat(&dir, tmp_name.as_str(), &dir, name)?;
            Ok(())
        })();
        if let Err(e) = result {
            let _ = rustix::fs::unlinkat(&dir, tmp_name.as_str(), AtFlags::empty());
            return Err(JailError::io(&r.shown, e));
        }
        Ok(())
    }

    /// Open (creating as needed) the directory `parent_rel` of `r`, one component at a time,
    /// never following a symlink.
    fn make_dirs(&self, r: &Resolved, parent_rel: &str) -> Result<OwnedFd, JailError> {
        if !r.inside {
            // full-access outside the root: plain path operations, still no-follow on the last step.
            let parent = r.abs.parent().unwrap_or(Path::new("/"));
            std::fs::create_dir_all(parent).map_err(|e| JailError::io(&r.shown, e))?;
            return rustix::fs::open(
                parent,
                OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
                Mode::empty(),
            )
            .map_err(|e| JailError::io(&r.shown, e.into()));
        }
        let mut dir = rustix::fs::openat(
            &self.root_fd,
            ".",
            OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| JailError::io(&r.shown, e.into()))?;
        for comp in parent_rel.split('/').filter(|c| !c.is_empty() && *c != ".") {
            if comp == ".." {
                return Err(JailError::Outside(r.shown.clone()));
            }
            match rustix::fs::mkdirat(&dir, comp, Mode::from_raw_mode(0o755)) {
                Ok(()) | Err(rustix::io::Errno::EXIST) => {}
                Err(e) => return Err(JailError::io(&r.shown, e.into())),
            }
            dir = rustix::fs::openat(
                &dir,
                comp,
                OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::empty(),
            )
            .map_err(|e| match e {
                // The component is a symlink (or became one): refuse rather than follow it.
                rustix::io::Errno::LOOP | rustix::io::Errno::NOTDIR => {
                    JailError::Raced(r.shown.clone())
                }
                other => JailError::io(&r.shown, other.into()),
            })?;
        }
        Ok(dir)
    }
}

enum WalkError {
    Loop,
    Io(io::Error),
}

/// Resolve `rest` against `start` one component at a time, following symlinks like the kernel
/// would, and continuing lexically once a component does not exist (a file about to be created).
fn walk(start: PathBuf, rest: &Path) -> Result<PathBuf, WalkError> {
    let mut queue: VecDeque<PathBuf> = rest.components().filter_map(component_name).collect();
    let mut cur = start;
    let mut links = 0usize;
    let mut missing = false;
    while let Some(name) = queue.pop_front() {
        let name_os: &OsStr = name.as_os_str();
        if name_os == ".." {
            // `missing/..` does not exist for the kernel either; resolving it lexically would
            // step back onto real components (`nope/../link_out`) without checking them.
            if missing {
                return Err(WalkError::Io(io::Error::from(io::ErrorKind::NotFound)));
            }
            cur.pop();
            continue;
        }
        if name_os == "/" {
            cur = PathBuf::from("/");
            continue;
        }
        let next = cur.join(&name);
        if missing {
            cur = next;
            continue;
        }
        match std::fs::symlink_metadata(&next) {
            Ok(md) if md.file_type().is_symlink() => {
                links += 1;
                if links > MAX_SYMLINKS {
                    return Err(WalkError::Loop);
                }
                let target = std::fs::read_link(&next).map_err(WalkError::Io)?;
                // An absolute target starts with a "/" marker that resets `cur` to the host root.
                let mut parts: VecDeque<PathBuf> =
                    target.components().filter_map(component_name).collect();
                while let Some(p) = parts.pop_back() {
                    queue.push_front(p);
                }
            }
            Ok(_) => cur = next,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                missing = true;
                cur = next;
            }
            Err(e) if e.raw_os_error() == Some(rustix::io::Errno::NOTDIR.raw_os_error()) => {
                missing = true;
                cur = next;
            }
            Err(e) => return Err(WalkError::Io(e)),
        }
    }
    Ok(cur)
}

fn component_name(c: Component<'_>) -> Option<PathBuf> {
    match c {
        Component::Normal(n) => Some(PathBuf::from(n)),
        Component::ParentDir => Some(PathBuf::from("..")),
        Component::RootDir => Some(PathBuf::from("/")),
        Component::CurDir | Component::Prefix(_) => None,
    }
}

fn rel_string(root: &Path, abs: &Path) -> String {
    match abs.strip_prefix(root) {
        Ok(r) if r.as_os_str().is_empty() => ".".to_string(),
        Ok(r) => r.to_string_lossy().into_owned(),
        Err(_) => abs.display().to_string(),
    }
}

fn split_parent(rel: &str) -> (&str, &str) {
    match rel.rsplit_once('/') {
        Some((parent, name)) => (parent, name),
        None => ("", rel),
    }
}

fn random_suffix() -> String {
    // A collision only makes O_EXCL fail with a clear error; it never overwrites anything.
    crate::random::unique_hex(6)
}
