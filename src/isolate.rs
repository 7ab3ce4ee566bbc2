//! The namespaces `exec_cmd` runs in (DESIGN §4): what a command may see and reach, beyond
//! what Landlock limits it to write.
//!
//! Guarantees, for a command started with an [`Isolation`]:
//! - It runs in its own user and mount namespace, created unprivileged (user namespace first,
//!   mapping only the caller's own uid and gid), so nothing here needs root.
//! - Every path in `hide` is covered by an empty read-only tmpfs (folders) or a read-only
//!   `/dev/null` (files): ground-link's own state, secrets, `$XDG_RUNTIME_DIR` and the X11
//!   socket folder cannot be read or written by any spelling, symlink or program, because the
//!   kernel resolves every path in the new namespace.
//! - Every path in `read_only` is bind-mounted onto itself read-only (run-later files).
//! - Without `network`, it runs in a fresh network namespace whose only interface is `lo`, up:
//!   local servers the command starts itself work; nothing outside (not even the host's
//!   127.0.0.1) is reachable. Abstract Unix sockets are per network namespace, so the host's
//!   (D-Bus, X11) are out of reach too.
//! - Files in `reveal` (below a covered folder, named by a rule) stay readable, read-only,
//!   through the cover; nothing else of that folder does.
//! - It runs in its own PID namespace, as its init: when the command's shell ends, the kernel
//!   kills every process left in it (`setsid`, `nohup`, double forks, fork loops alike). Where
//!   the kernel allows it, `/proc` is that namespace's own, listing no other process.
//! - The covers cannot be removed, in any mode and whatever uid the command has: once they are
//!   set up the command moves into a nested user and mount namespace (the kernel locks mounts
//!   inherited from a more privileged namespace: no `umount`, no remount read-write), its
//!   capability bounding set is emptied (even uid 0 gains nothing at `exec`), and, where
//!   `/proc/sys` is writable, it may not create user namespaces of its own.
//! - With [`Isolation::home_cover`], the home folder is an allow-list: an empty read-only
//!   tmpfs through which only the root (writable) and [`HomeCover::visible`] (read-only, never
//!   through a link) are bound back, at their own paths.
//! - With `private_temp`, `/tmp`, `/var/tmp` and `/dev/shm` are fresh and `/run` is covered,
//!   also when the root lies below one of them (it is bound back in).
//! - It has its own IPC namespace and its own devpts instance (`/dev/ptmx` opens into it): the
//!   host's System V IPC and the person's terminals are not there (where the kernel refuses a
//!   devpts, `/dev/pts` is covered empty and `/dev/ptmx` by `/dev/null`).
//! - Every cover is a tmpfs named [`EXEC_MARK`], so a program can tell it runs inside
//!   `exec_cmd` from the mount table, which the command cannot change ([`inside_exec`]).
//! - The order is fixed: user + PID namespace → mounts → network → lock → (the caller then
//!   applies Landlock) → exec. Landlock forbids mounting once applied, so it must come last.
//! - Any step that fails stops the command before it runs (fail closed).

use std::ffi::CString;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};

use rustix::mount::{
    MountFlags, MountPropagationFlags, mount, mount_bind, mount_bind_recursive, mount_change,
    mount_remount,
};
use rustix::process::{Signal, WaitOptions};
use rustix::thread::UnshareFlags;
use serde::{Deserialize, Serialize};

use crate::signals::{self, Fork};

/// `argv[1]` that makes the supervisor binary only probe for namespace support.
pub const PROBE_ARG: &str = "__ground-link-probe-namespaces";
/// What a probe that got through prints: a binary that merely exits 0 on an unknown argument
/// (a test harness, another program) must not count as "namespaces work".
const PROBE_OK: &str = "ground-link: namespaces ok";
/// Set to anything non-empty to force the "namespaces unavailable" path (tests; packagers on
/// kernels that misreport). It can only make ground-link stricter: every `exec_cmd` asks.
pub const NO_NAMESPACES_ENV: &str = "GROUND_LINK_NO_NAMESPACES";
/// Set in the namespace probe's environment (see [`status`]).
const PROBING_ENV: &str = "GROUND_LINK_PROBING_NAMESPACES";
/// The source name of every tmpfs the namespace mounts: what [`inside_exec`] looks for.
pub const EXEC_MARK: &str = "ground-link-exec";

/// Below the home folder, what a command in `workspace-write` or `read-only` still sees
/// (read-only) when the root is not the home folder: toolchains and the programs installed
/// for the person alone, and git's own settings (name, e-mail, ignore rules). Caches that
/// hold sockets or session data (`.cache`: ssh control masters, browsers) are not here.
/// [`HOME_VISIBLE_ENV`] adds more.
pub const HOME_VISIBLE: &[&str] = &[
    ".cargo",
    ".rustup",
    ".local/bin",
    ".local/lib",
    ".npm",
    ".nvm",
    ".pyenv",
    ".rbenv",
    ".volta",
    ".bun",
    ".deno",
    ".sdkman",
    "go/bin",
    "go/pkg/mod",
    ".gitconfig",
    ".config/git/config",
    ".config/git/ignore",
    ".config/git/attributes",
];

/// Comma-separated home-relative paths a command may see besides [`HOME_VISIBLE`].
pub const HOME_VISIBLE_ENV: &str = "GROUND_LINK_HOME_VISIBLE";

/// [`HOME_VISIBLE`] and `extra` below `home`: relative paths only, none climbing out.
pub fn home_visible(home: &Path, extra: &[String]) -> Vec<PathBuf> {
    HOME_VISIBLE
        .iter()
        .map(|s| s.to_string())
        .chain(extra.iter().cloned())
        .map(PathBuf::from)
        .filter(|rel| {
            !rel.as_os_str().is_empty()
                && rel
                    .components()
                    .all(|c| matches!(c, std::path::Component::Normal(_)))
        })
        .map(|rel| home.join(rel))
        .collect()
}

/// What an `exec_cmd` child may see and reach.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Isolation {
    /// Covered by empty read-only mounts.
    pub hide: Vec<PathBuf>,
    /// Made read-only in place.
    pub read_only: Vec<PathBuf>,
    /// Below a folder in `hide`, still readable (read-only): the one file a rule named.
    #[serde(default)]
    pub reveal: Vec<PathBuf>,
    /// Keep the host's network.
    pub network: bool,
    /// Fresh, empty `/tmp`, `/var/tmp` and `/dev/shm`, and `/run` covered: the host's Unix
    /// sockets there (tmux, ssh-agent, screen, docker) cannot be reached, and nothing a
    /// command leaves behind reaches the next one. A root below one of them is bound back in
    /// at its own path; only a root that is one of them keeps it.
    #[serde(default)]
    pub private_temp: bool,
    /// The sandbox root, so the private folders never cover it: a root below one of them is
    /// bound back in, writable, at its own path.
    #[serde(default)]
    pub root: PathBuf,
    /// The home folder becomes an allow-list: covered by an empty read-only tmpfs, with the
    /// root (when it is inside) bound back writable and [`HomeCover::visible`] read-only.
    #[serde(default)]
    pub home_cover: Option<HomeCover>,
}

/// The command's view of the home folder when the root is not the home folder itself (or a
/// folder holding it): nothing of it but the root and the tool folders commands need to run.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HomeCover {
    /// The home folder (resolved).
    pub home: PathBuf,
    /// Below `home`: folders and files that stay readable (read-only) through the cover.
    pub visible: Vec<PathBuf>,
}

/// A path to bind back into a cover, opened (`O_PATH`) before any mount hid it.
struct Kept {
    path: PathBuf,
    fd: OwnedFd,
    writable: bool,
}

/// `None` when `path` is gone or is a symbolic link: the engine passes resolved paths, so a
/// link is one swapped in since, which could show a covered place (`~/.local/bin -> /run/…`).
fn keep(path: &Path, writable: bool) -> Option<Kept> {
    let fd = rustix::fs::open(
        path,
        rustix::fs::OFlags::PATH | rustix::fs::OFlags::CLOEXEC | rustix::fs::OFlags::NOFOLLOW,
        rustix::fs::Mode::empty(),
    )
    .ok()?;
    let st = rustix::fs::fstat(&fd).ok()?;
    if rustix::fs::FileType::from_raw_mode(st.st_mode).is_symlink() {
        return None;
    }
    Some(Kept {
        path: path.to_path_buf(),
        fd,
        writable,
    })
}

/// Enter the namespaces and set up the mounts. Runs in the forked child before exec (the
/// supervisor is single-threaded, so allocating here is safe), with the caller's `uid`/`gid`.
/// Returns in a new process, the init of a fresh PID namespace; the process that called it
/// waits for that one and exits with its status, never returning.
pub fn enter(iso: &Isolation, uid: u32, gid: u32) -> Result<(), String> {
    // IPC: the host's System V shared memory, semaphores and message queues are out of reach.
    let mut flags =
        UnshareFlags::NEWUSER | UnshareFlags::NEWNS | UnshareFlags::NEWPID | UnshareFlags::NEWIPC;
    if !iso.network {
        flags |= UnshareFlags::NEWNET;
    }
    // SAFETY: no `FILES` in the flags, so no thread is left with a descriptor table of another.
    unsafe { rustix::thread::unshare_unsafe(flags) }
        .map_err(|e| format!("unshare (user, mount, PID, IPC, network namespaces): {e}"))?;
    // Map only ourselves: the command keeps its own identity and gains nothing on the host.
    map_ids(uid, gid)?;
    become_init()?;
    // Our mounts must not propagate back to the host.
    mount_change(
        "/",
        MountPropagationFlags::REC | MountPropagationFlags::PRIVATE,
    )
    .map_err(|e| format!("make mounts private: {e}"))?;
    // What is bound back into covers is opened before any cover hides it (and after the
    // unshare: a bind source must be a mount of this namespace).
    let root = keep(&iso.root, true);
    if root.is_none() && (iso.private_temp || iso.home_cover.is_some()) {
        return Err(format!("open the root {}", iso.root.display()));
    }
    let home_kept: Vec<Kept> = match &iso.home_cover {
        Some(cover) => {
            let mut kept: Vec<Kept> = cover
                .visible
                .iter()
                .filter(|v| v.starts_with(&cover.home) && !iso.root.starts_with(v.as_path()))
                .filter(|v| !v.starts_with(&iso.root))
                .filter_map(|v| keep(v, false))
                .collect();
            if iso.root.starts_with(&cover.home) && iso.root != cover.home {
                kept.extend(keep(&iso.root, true));
            }
            kept
        }
        None => Vec::new(),
    };
    own_proc();
    private_pts()?;
    private_mqueue()?;
    if iso.private_temp {
        // A root below a temp folder (or /run) no longer keeps that folder shared: it is
        // bound back in at its own path, and nothing else of the folder is there. Only a
        // root that is the folder itself keeps it.
        let inside = |t: &str| root.as_ref().filter(|_| iso.root.starts_with(t));
        for t in ["/tmp", "/var/tmp", "/dev/shm"] {
            if iso.root != Path::new(t) && Path::new(t).is_dir() {
                let flags = MountFlags::NOSUID | MountFlags::NODEV;
                mount(EXEC_MARK, t, "tmpfs", flags, c"mode=1777")
                    .map_err(|e| format!("a private {t}: {e}"))?;
                if let Some(k) = inside(t) {
                    bind_back(k)?;
                }
            }
        }
        if iso.root != Path::new("/run") && Path::new("/run").is_dir() {
            cover(
                Path::new("/run"),
                &inside("/run").into_iter().collect::<Vec<_>>(),
            )?;
        }
    }
    if let Some(home) = &iso.home_cover {
        if std::fs::metadata(&home.home).is_ok_and(|m| m.is_dir()) {
            cover(&home.home, &home_kept.iter().collect::<Vec<_>>())?;
        }
    }
    pin_ancestors(iso)?;
    for p in &iso.hide {
        hide(p, &iso.reveal)?;
    }
    for p in &iso.read_only {
        make_read_only(p)?;
    }
    // The working folder was entered before these mounts and still points below them: enter
    // it again, so relative paths meet the covers too.
    if let Ok(cwd) = std::env::current_dir() {
        std::env::set_current_dir(&cwd).map_err(|e| format!("re-enter {}: {e}", cwd.display()))?;
    }
    if !iso.network {
        loopback_up()?;
    }
    lock(uid, gid)
}

/// The terminals of the person's other programs live in the host's `/dev/pts`: a command that
/// opened one could read what is typed there. It gets a devpts instance of its own (its own
/// ptys still work, `/dev/ptmx` opens into it); where the kernel refuses one, `/dev/pts` is
/// covered empty and `/dev/ptmx` by `/dev/null`.
fn private_pts() -> Result<(), String> {
    let pts = Path::new("/dev/pts");
    if !pts.is_dir() {
        return Ok(());
    }
    let flags = MountFlags::NOSUID | MountFlags::NOEXEC;
    let fresh = mount(
        "devpts",
        pts,
        "devpts",
        flags,
        c"newinstance,ptmxmode=0666,mode=0620",
    );
    let ptmx = Path::new("/dev/ptmx");
    match fresh {
        Ok(()) => {
            if std::fs::symlink_metadata(ptmx).is_ok_and(|m| !m.file_type().is_symlink()) {
                mount_bind("/dev/pts/ptmx", ptmx)
                    .map_err(|e| format!("point /dev/ptmx at the private /dev/pts: {e}"))?;
            }
            Ok(())
        }
        Err(_) => {
            hide(pts, &[])?;
            if std::fs::symlink_metadata(ptmx).is_ok_and(|m| !m.file_type().is_symlink()) {
                hide(ptmx, &[])?;
            }
            Ok(())
        }
    }
}

/// `/dev/mqueue` shows the POSIX message queues of the IPC namespace that mounted it (the
/// host's), and a queue opened there with `open(2)` can be read with `mq_receive`: the command
/// gets one of its own IPC namespace instead, or an empty cover where the kernel refuses it.
fn private_mqueue() -> Result<(), String> {
    let mq = Path::new("/dev/mqueue");
    if !mq.is_dir() {
        return Ok(());
    }
    let flags = MountFlags::NOSUID | MountFlags::NODEV | MountFlags::NOEXEC;
    match mount("mqueue", mq, "mqueue", flags, None) {
        Ok(()) => Ok(()),
        Err(_) => hide(mq, &[]),
    }
}

/// Covers the folder `p` with an empty read-only tmpfs and binds `kept` (below it) back in at
/// their own paths, writable or read-only as each says, parents before children.
fn cover(p: &Path, kept: &[&Kept]) -> Result<(), String> {
    let ro = MountFlags::NOSUID | MountFlags::NODEV | MountFlags::NOEXEC | MountFlags::RDONLY;
    let mut kept: Vec<&&Kept> = kept
        .iter()
        .filter(|k| k.path.starts_with(p) && k.path != p)
        .collect();
    if kept.is_empty() {
        return mount(EXEC_MARK, p, "tmpfs", ro, c"size=4k,mode=0555")
            .map_err(|e| format!("hide {}: {e}", p.display()));
    }
    kept.sort_by_key(|k| k.path.components().count());
    mount(
        EXEC_MARK,
        p,
        "tmpfs",
        ro - MountFlags::RDONLY,
        c"size=64k,mode=0755",
    )
    .map_err(|e| format!("hide {}: {e}", p.display()))?;
    for k in kept {
        bind_back(k)?;
    }
    mount_remount(p, ro, "mode=0555")
        .map_err(|e| format!("make the cover of {} read-only: {e}", p.display()))
}

/// Binds what `k` opened onto the same path, read-only unless it is writable (the root).
fn bind_back(k: &Kept) -> Result<(), String> {
    let path = &k.path;
    let fail = |e: &dyn std::fmt::Display| format!("reveal {}: {e}", path.display());
    let is_dir = rustix::fs::fstat(&k.fd)
        .map(|st| rustix::fs::FileType::from_raw_mode(st.st_mode).is_dir())
        .map_err(|e| fail(&e))?;
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|e| fail(&e))?;
    }
    if std::fs::symlink_metadata(path).is_err() {
        let made = if is_dir {
            std::fs::create_dir(path)
        } else {
            std::fs::File::create(path).map(drop)
        };
        made.map_err(|e| fail(&e))?;
    }
    let source = format!("/proc/self/fd/{}", k.fd.as_raw_fd());
    mount_bind_recursive(source.as_str(), path).map_err(|e| fail(&e))?;
    if k.writable {
        Ok(())
    } else {
        remount_read_only(path)
    }
}

fn map_ids(uid: u32, gid: u32) -> Result<(), String> {
    write_proc("/proc/self/setgroups", "deny")?;
    write_proc("/proc/self/uid_map", &format!("{uid} {uid} 1\n"))?;
    write_proc("/proc/self/gid_map", &format!("{gid} {gid} 1\n"))
}

/// Forks the first process of the new PID namespace. The child returns and goes on to become
/// the command; this process only waits for it and leaves with its status, so the supervisor
/// sees the command's exit code. When the command's shell ends, the kernel kills whatever it
/// left in the namespace; when the supervisor kills this process, the parent-death signal
/// takes the child (and with it the namespace) along.
fn become_init() -> Result<(), String> {
    // SAFETY: the caller is a single-threaded, freshly forked child (see `enter`).
    match unsafe { signals::fork() }.map_err(|e| format!("fork the namespace's init: {e}"))? {
        Fork::Child => {
            // A waiter killed before this prctl leaves the child to the supervisor, which is
            // the subreaper and kills every descendant it finds (it cannot tell from here:
            // the waiter is outside this PID namespace, invisible).
            rustix::process::set_parent_process_death_signal(Some(Signal::KILL))
                .map_err(|e| format!("PR_SET_PDEATHSIG: {e}"))
        }
        Fork::Parent(child) => {
            // Hold nothing open: std's exec-status pipe must close when the child execs (or
            // `spawn` would wait for the whole command), and the output pipes when it ends.
            // SAFETY: plain syscalls; nothing below uses a descriptor.
            unsafe {
                if libc::syscall(libc::SYS_close_range, 0u32, u32::MAX, 0u32) != 0 {
                    for fd in 0..4096 {
                        libc::close(fd);
                    }
                }
            }
            let code = loop {
                let status = match rustix::process::waitpid(Some(child), WaitOptions::empty()) {
                    Ok(Some((_, status))) => status,
                    Ok(None) | Err(rustix::io::Errno::INTR) => continue,
                    Err(_) => break 126,
                };
                if let Some(code) = status.exit_status() {
                    break code;
                }
                if let Some(raw) = status.terminating_signal() {
                    // Only a named signal is raised again; a real-time one ends in 126.
                    let Some(signal) = Signal::from_named_raw(raw) else {
                        break 126;
                    };
                    // Die of the same signal, so the report says "killed by signal N".
                    let _ = signals::unblock_all();
                    let _ = signals::reset_to_default(signal);
                    let _ = signals::raise(signal);
                    break 128 + raw;
                }
            };
            // SAFETY: leaves without running destructors or atexit handlers of the parent's
            // copy of the supervisor's state.
            unsafe { libc::_exit(code) }
        }
    }
}

/// A `/proc` of the command's own PID namespace: it lists only the command's processes, so the
/// `/proc/<pid>/root`, `cwd` and `environ` of the person's other processes (which see the
/// host's mounts, not the covers, and hold their environment) are not there to open. The
/// kernel refuses this where the host's `/proc` is partly masked (containers); there the
/// command still runs, and those entries stay guarded as before: Landlock lets no command open
/// another domain's `/proc/<pid>` entries (every mode, where a domain is applied), and without
/// capabilities a command cannot open a more privileged process's.
fn own_proc() {
    let flags = MountFlags::NOSUID | MountFlags::NODEV | MountFlags::NOEXEC;
    let _ = mount("proc", "/proc", "proc", flags, None);
}

/// Every folder above a cover is pinned (bound onto itself): a mount point cannot be renamed,
/// so `mv ~/.config ~/.config.old` cannot carry ground-link's own state out from under its
/// cover and put a command-written one in its place.
fn pin_ancestors(iso: &Isolation) -> Result<(), String> {
    let mut above: Vec<&Path> = iso
        .hide
        .iter()
        .chain(&iso.read_only)
        .flat_map(|p| p.ancestors().skip(1))
        .filter(|a| a.parent().is_some())
        .collect();
    above.sort_by_key(|a| a.components().count());
    above.dedup();
    for a in above {
        if a.is_dir() {
            mount_bind_recursive(a, a).map_err(|e| format!("pin {}: {e}", a.display()))?;
        }
    }
    Ok(())
}

/// Makes the mounts permanent for the command (DESIGN §4: covers hold in every mode, also
/// for a command running as uid 0). A user + mount namespace made now is less privileged
/// than the one that mounted, so the kernel locks every mount it inherits; the emptied
/// bounding set leaves the command no capability after `exec`, whatever its uid.
fn lock(uid: u32, gid: u32) -> Result<(), String> {
    // SAFETY: no `FILES` in the flags (see `enter`).
    unsafe { rustix::thread::unshare_unsafe(UnshareFlags::NEWUSER | UnshareFlags::NEWNS) }
        .map_err(|e| format!("unshare (nested user and mount namespace): {e}"))?;
    map_ids(uid, gid)?;
    // A second line, where the kernel lets us: no user namespace of its own means no
    // capability anywhere, so not even a mount on top of a cover. /proc/sys is read-only in
    // some containers; the lock above holds without it.
    let _ = std::fs::write("/proc/sys/user/max_user_namespaces", "0");
    use rustix::thread::CapabilitySet;
    for cap in 0..64u32 {
        // Capabilities past the kernel's last one fail with EINVAL: nothing to drop.
        let one = CapabilitySet::from_bits_retain(1u64 << cap);
        match rustix::thread::remove_capability_from_bounding_set(one) {
            Ok(()) | Err(rustix::io::Errno::INVAL) => {}
            Err(e) => return Err(format!("drop capability {cap} from the bounding set: {e}")),
        }
    }
    let mut sets =
        rustix::thread::capabilities(None).map_err(|e| format!("read the capabilities: {e}"))?;
    sets.inheritable = CapabilitySet::empty();
    rustix::thread::set_capabilities(None, sets)
        .map_err(|e| format!("clear the inheritable capabilities: {e}"))?;
    rustix::thread::clear_ambient_capability_set()
        .map_err(|e| format!("clear the ambient capabilities: {e}"))
}

fn write_proc(path: &str, text: &str) -> Result<(), String> {
    std::fs::write(path, text).map_err(|e| format!("write {path}: {e}"))
}

/// Cover `p` with something empty and read-only; a path that is gone needs no cover. Files
/// of `reveal` below `p` are bound back in, read-only, before the cover turns read-only.
fn hide(p: &Path, reveal: &[PathBuf]) -> Result<(), String> {
    // The engine passes resolved paths; mount(2) follows a link swapped in since, so the type
    // is taken from what it points to (a mismatch fails the command, closed).
    let Ok(md) = std::fs::metadata(p) else {
        return Ok(());
    };
    if !md.is_dir() {
        mount_bind("/dev/null", p).map_err(|e| format!("hide {}: {e}", p.display()))?;
        return remount_read_only(p);
    }
    // Opened before the cover hides them (an O_PATH descriptor reads nothing by itself).
    let kept: Vec<Kept> = reveal
        .iter()
        .filter(|r| r.starts_with(p) && *r != p)
        .filter_map(|r| keep(r, false))
        .collect();
    cover(p, &kept.iter().collect::<Vec<_>>())
}

fn make_read_only(p: &Path) -> Result<(), String> {
    if std::fs::metadata(p).is_err() {
        return Ok(());
    }
    mount_bind_recursive(p, p).map_err(|e| format!("bind {}: {e}", p.display()))?;
    remount_read_only(p)
}

/// A bind mount becomes read-only by a remount. In a user namespace the kernel refuses to
/// drop flags the outer mount had (nosuid, nodev, noexec, atime), so they are carried over.
fn remount_read_only(p: &Path) -> Result<(), String> {
    use rustix::fs::StatVfsMountFlags as F;
    let have = rustix::fs::statvfs(p)
        .map_err(|e| format!("statvfs {}: {e}", p.display()))?
        .f_flag;
    let mut flags = MountFlags::BIND | MountFlags::RDONLY;
    for (st, ms) in [
        (F::NOSUID, MountFlags::NOSUID),
        (F::NODEV, MountFlags::NODEV),
        (F::NOEXEC, MountFlags::NOEXEC),
        (F::NOATIME, MountFlags::NOATIME),
        (F::NODIRATIME, MountFlags::NODIRATIME),
        (F::RELATIME, MountFlags::RELATIME),
    ] {
        if have.contains(st) {
            flags |= ms;
        }
    }
    // The data is ignored for a bind remount.
    mount_remount(p, flags, "").map_err(|e| format!("make {} read-only: {e}", p.display()))
}

/// Bring `lo` up in the fresh network namespace (it starts down).
fn loopback_up() -> Result<(), String> {
    let name = CString::new("lo").map_err(|e| e.to_string())?;
    // SAFETY: plain syscalls on a socket we own and a zeroed `ifreq` whose name we fill
    // within its bounds ("lo" plus NUL is 3 of IFNAMSIZ bytes).
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
        if fd < 0 {
            return Err(format!("socket: {}", std::io::Error::last_os_error()));
        }
        let mut ifr: libc::ifreq = std::mem::zeroed();
        for (i, b) in name.as_bytes_with_nul().iter().enumerate() {
            ifr.ifr_name[i] = *b as libc::c_char;
        }
        let mut result = libc::ioctl(fd, libc::SIOCGIFFLAGS, &mut ifr);
        if result == 0 {
            ifr.ifr_ifru.ifru_flags |= (libc::IFF_UP | libc::IFF_RUNNING) as libc::c_short;
            result = libc::ioctl(fd, libc::SIOCSIFFLAGS, &ifr);
        }
        let err = std::io::Error::last_os_error();
        libc::close(fd);
        if result != 0 {
            return Err(format!("bring lo up: {err}"));
        }
    }
    Ok(())
}

/// The supervisor binary's probe: enter namespaces like a command would (hiding a fresh
/// temp folder) and report. Exit code 0 means `exec_cmd` can be isolated here.
pub fn run_probe_if_asked() {
    let mut args = std::env::args_os().skip(1);
    if args.next().as_deref() != Some(std::ffi::OsStr::new(PROBE_ARG)) {
        return;
    }
    let dir = std::env::temp_dir().join(format!("gl-ns-probe-{}", std::process::id()));
    let code = match std::fs::create_dir_all(&dir) {
        Ok(()) => probe_in_child(&dir),
        Err(e) => {
            eprintln!("create {}: {e}", dir.display());
            1
        }
    };
    let _ = std::fs::remove_dir(&dir);
    std::process::exit(code);
}

/// Everything a command's set-up does, in a child (so this process can remove the probe
/// folder afterwards), so a kernel that refuses any step is found here rather than in a
/// command. The probe folder counts as the root. Called first thing in main: single-threaded,
/// so forking and unshare(CLONE_NEWUSER) work.
fn probe_in_child(dir: &Path) -> i32 {
    let iso = Isolation {
        hide: vec![dir.to_path_buf()],
        read_only: vec![],
        reveal: vec![],
        network: false,
        private_temp: true,
        root: dir.to_path_buf(),
        home_cover: None,
    };
    let uid = rustix::process::getuid().as_raw();
    let gid = rustix::process::getgid().as_raw();
    // SAFETY: single-threaded (see above); the child only sets up namespaces and exits.
    match unsafe { signals::fork() } {
        Ok(Fork::Child) => {
            // Like a command, the probe works in its root (the folder it started in may be
            // covered, a private /tmp for one).
            if let Err(e) = std::env::set_current_dir(dir) {
                eprintln!("enter {}: {e}", dir.display());
                std::process::exit(1);
            }
            let code = match enter(&iso, uid, gid) {
                Ok(()) => {
                    println!("{PROBE_OK}");
                    0
                }
                Err(e) => {
                    eprintln!("{e}");
                    1
                }
            };
            std::process::exit(code);
        }
        Ok(Fork::Parent(child)) => {
            match rustix::process::waitpid(Some(child), WaitOptions::empty()) {
                Ok(Some((_, status))) => status.exit_status().unwrap_or(1),
                _ => 1,
            }
        }
        Err(e) => {
            eprintln!("fork: {e}");
            1
        }
    }
}

/// Whether this process runs inside an `exec_cmd` (a command the model started): the
/// engine's variable says so, and so does a mount the command cannot remove or hide
/// ([`EXEC_MARK`] in `/proc/self/mountinfo`). `ground-link` and the app refuse to act there.
pub fn inside_exec() -> bool {
    if std::env::var_os(crate::tools::exec::IN_EXEC_ENV).is_some() {
        return true;
    }
    let Ok(table) = std::fs::read_to_string("/proc/self/mountinfo") else {
        return false;
    };
    // Fields after " - " are: type, source, super options.
    table.lines().any(|line| {
        line.split_once(" - ")
            .is_some_and(|(_, tail)| tail.split(' ').nth(1) == Some(EXEC_MARK))
    })
}

/// Whether `exec_cmd` can be isolated on this machine, probed once per supervisor binary by
/// running it with [`PROBE_ARG`]; `Err` says why not.
pub fn status(supervisor_exe: &Path) -> Result<(), String> {
    if std::env::var_os(NO_NAMESPACES_ENV).is_some_and(|v| !v.is_empty()) {
        return Err(format!(
            "namespaces are switched off ({NO_NAMESPACES_ENV} is set)"
        ));
    }
    static CACHE: std::sync::Mutex<Vec<(PathBuf, Result<(), String>)>> =
        std::sync::Mutex::new(Vec::new());
    let mut cache = CACHE.lock().unwrap_or_else(|p| p.into_inner());
    if let Some((_, r)) = cache.iter().find(|(p, _)| p == supervisor_exe) {
        return r.clone();
    }
    // A binary that does not answer the probe (one that never calls `run_probe_if_asked`)
    // would run its whole `main` again, build an engine and probe again: a fork bomb. The
    // probe's own environment says it is one, so such a child refuses to probe further.
    if std::env::var_os(PROBING_ENV).is_some() {
        return Err(format!(
            "{} does not answer the namespace probe; point supervisor_exe at ground-link",
            supervisor_exe.display()
        ));
    }
    let result = match std::process::Command::new(supervisor_exe)
        .arg(PROBE_ARG)
        .env(PROBING_ENV, "1")
        .stdin(std::process::Stdio::null())
        .output()
    {
        Ok(out)
            if out.status.success() && String::from_utf8_lossy(&out.stdout).trim() == PROBE_OK =>
        {
            Ok(())
        }
        Ok(out) => Err(format!(
            "unprivileged user namespaces are not available ({})",
            String::from_utf8_lossy(&out.stderr).trim()
        )),
        Err(e) => Err(format!(
            "could not run {} to probe for namespaces: {e}",
            supervisor_exe.display()
        )),
    };
    cache.push((supervisor_exe.to_path_buf(), result.clone()));
    result
}

/// What every `exec_cmd` hides whatever the mode: the session's sockets (D-Bus, Wayland, the
/// keyring, ssh-agent live under `$XDG_RUNTIME_DIR`) and the X11 socket folder.
pub fn session_sockets() -> Vec<PathBuf> {
    let mut out = vec![PathBuf::from("/tmp/.X11-unix")];
    if let Some(run) = std::env::var_os("XDG_RUNTIME_DIR").map(PathBuf::from) {
        if run.is_absolute() {
            out.push(run);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn home_visible_takes_only_plain_relative_paths() {
        let home = Path::new("/h");
        let got = home_visible(
            home,
            &[
                ".m2".into(),
                "../etc".into(),
                "/etc".into(),
                "a/../b".into(),
                "./x".into(),
                String::new(),
            ],
        );
        assert!(got.contains(&PathBuf::from("/h/.cargo")));
        assert!(got.contains(&PathBuf::from("/h/.m2")));
        assert!(
            got.iter().all(|p| p.starts_with(home) && p != home),
            "{got:?}"
        );
        for bad in ["/etc", "/h/../etc", "/h/a/../b", "/h/x"] {
            assert!(!got.contains(&PathBuf::from(bad)), "{bad}: {got:?}");
        }
    }
}
