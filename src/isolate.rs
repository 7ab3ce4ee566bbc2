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
//! - The order is fixed: user namespace → mounts → network → (the caller then applies
//!   Landlock) → exec. Landlock forbids mounting once applied, so it must come last.
//! - Any step that fails stops the command before it runs (fail closed).

use std::ffi::CString;
use std::path::{Path, PathBuf};

use nix::mount::{MsFlags, mount};
use nix::sched::{CloneFlags, unshare};
use serde::{Deserialize, Serialize};

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

/// What an `exec_cmd` child may see and reach.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Isolation {
    /// Covered by empty read-only mounts.
    pub hide: Vec<PathBuf>,
    /// Made read-only in place.
    pub read_only: Vec<PathBuf>,
    /// Keep the host's network.
    pub network: bool,
    /// Fresh, empty `/tmp`, `/var/tmp` and `/dev/shm`, and `/run` covered: the host's Unix
    /// sockets there (tmux, ssh-agent, screen, docker) cannot be reached, and nothing a
    /// command leaves behind reaches the next one. Folders holding the sandbox root stay.
    #[serde(default)]
    pub private_temp: bool,
    /// The sandbox root, so the private folders never cover it.
    #[serde(default)]
    pub root: PathBuf,
}

/// Enter the namespaces and set up the mounts. Runs in the forked child before exec (the
/// supervisor is single-threaded, so allocating here is safe), with the caller's `uid`/`gid`.
pub fn enter(iso: &Isolation, uid: u32, gid: u32) -> Result<(), String> {
    let mut flags = CloneFlags::CLONE_NEWUSER | CloneFlags::CLONE_NEWNS;
    if !iso.network {
        flags |= CloneFlags::CLONE_NEWNET;
    }
    unshare(flags).map_err(|e| format!("unshare (user, mount, network namespaces): {e}"))?;
    // Map only ourselves: the command keeps its own identity and gains nothing on the host.
    write_proc("/proc/self/setgroups", "deny")?;
    write_proc("/proc/self/uid_map", &format!("{uid} {uid} 1\n"))?;
    write_proc("/proc/self/gid_map", &format!("{gid} {gid} 1\n"))?;
    // Our mounts must not propagate back to the host.
    mount(
        None::<&str>,
        "/",
        None::<&str>,
        MsFlags::MS_REC | MsFlags::MS_PRIVATE,
        None::<&str>,
    )
    .map_err(|e| format!("make mounts private: {e}"))?;
    if iso.private_temp {
        for t in ["/tmp", "/var/tmp", "/dev/shm"] {
            if !iso.root.starts_with(t) && Path::new(t).is_dir() {
                let flags = MsFlags::MS_NOSUID | MsFlags::MS_NODEV;
                mount(Some("tmpfs"), t, Some("tmpfs"), flags, Some("mode=1777"))
                    .map_err(|e| format!("a private {t}: {e}"))?;
            }
        }
        if !iso.root.starts_with("/run") && Path::new("/run").is_dir() {
            hide(Path::new("/run"))?;
        }
    }
    // Every folder above a cover is pinned (bound onto itself): a mount point cannot be
    // renamed, so `mv ~/.config ~/.config.old` cannot carry ground-link's own state out from
    // under its cover and put a command-written one in its place.
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
            mount(
                Some(a),
                a,
                None::<&str>,
                MsFlags::MS_BIND | MsFlags::MS_REC,
                None::<&str>,
            )
            .map_err(|e| format!("pin {}: {e}", a.display()))?;
        }
    }
    for p in &iso.hide {
        hide(p)?;
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
    Ok(())
}

fn write_proc(path: &str, text: &str) -> Result<(), String> {
    std::fs::write(path, text).map_err(|e| format!("write {path}: {e}"))
}

/// Cover `p` with something empty and read-only; a path that is gone needs no cover.
fn hide(p: &Path) -> Result<(), String> {
    // The engine passes resolved paths; mount(2) follows a link swapped in since, so the type
    // is taken from what it points to (a mismatch fails the command, closed).
    let Ok(md) = std::fs::metadata(p) else {
        return Ok(());
    };
    let ro = MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC | MsFlags::MS_RDONLY;
    if md.is_dir() {
        mount(
            Some("tmpfs"),
            p,
            Some("tmpfs"),
            ro,
            Some("size=4k,mode=0555"),
        )
        .map_err(|e| format!("hide {}: {e}", p.display()))
    } else {
        mount(
            Some("/dev/null"),
            p,
            None::<&str>,
            MsFlags::MS_BIND,
            None::<&str>,
        )
        .map_err(|e| format!("hide {}: {e}", p.display()))?;
        remount_read_only(p)
    }
}

fn make_read_only(p: &Path) -> Result<(), String> {
    if std::fs::metadata(p).is_err() {
        return Ok(());
    }
    mount(
        Some(p),
        p,
        None::<&str>,
        MsFlags::MS_BIND | MsFlags::MS_REC,
        None::<&str>,
    )
    .map_err(|e| format!("bind {}: {e}", p.display()))?;
    remount_read_only(p)
}

/// A bind mount becomes read-only by a remount. In a user namespace the kernel refuses to
/// drop flags the outer mount had (nosuid, nodev, noexec, atime), so they are carried over.
fn remount_read_only(p: &Path) -> Result<(), String> {
    use rustix::fs::StatVfsMountFlags as F;
    let have = rustix::fs::statvfs(p)
        .map_err(|e| format!("statvfs {}: {e}", p.display()))?
        .f_flag;
    let mut flags = MsFlags::MS_BIND | MsFlags::MS_REMOUNT | MsFlags::MS_RDONLY;
    for (st, ms) in [
        (F::NOSUID, MsFlags::MS_NOSUID),
        (F::NODEV, MsFlags::MS_NODEV),
        (F::NOEXEC, MsFlags::MS_NOEXEC),
        (F::NOATIME, MsFlags::MS_NOATIME),
        (F::NODIRATIME, MsFlags::MS_NODIRATIME),
        (F::RELATIME, MsFlags::MS_RELATIME),
    ] {
        if have.contains(st) {
            flags |= ms;
        }
    }
    mount(None::<&str>, p, None::<&str>, flags, None::<&str>)
        .map_err(|e| format!("make {} read-only: {e}", p.display()))
}

/// Bring `lo` up in the fresh network namespace (it starts down).
fn loopback_up() -> Result<(), String> {
    use nix::libc;
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
        Ok(()) => {
            // Everything a command's set-up does, so a kernel that refuses any step is found
            // here rather than in a command (the probe folder counts as the root).
            let iso = Isolation {
                hide: vec![dir.clone()],
                read_only: vec![],
                network: false,
                private_temp: true,
                root: dir.clone(),
            };
            // Called first thing in main: single-threaded, so unshare(CLONE_NEWUSER) works.
            let uid = rustix::process::getuid().as_raw();
            let gid = rustix::process::getgid().as_raw();
            match enter(&iso, uid, gid) {
                Ok(()) => {
                    println!("{PROBE_OK}");
                    0
                }
                Err(e) => {
                    eprintln!("{e}");
                    1
                }
            }
        }
        Err(e) => {
            eprintln!("create {}: {e}", dir.display());
            1
        }
    };
    let _ = std::fs::remove_dir(&dir);
    std::process::exit(code);
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
