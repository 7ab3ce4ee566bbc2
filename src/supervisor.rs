//! The per-call process supervisor for `exec_cmd` (DESIGN §3, §4): child subreaper, Landlock,
//! tree kill.
//!
//! The engine never forks `sh` itself. For every call it re-executes a binary whose `main` calls
//! [`run_if_supervisor`] first, with [`SUPERVISOR_ARG`] and the engine's pid as arguments: the
//! `ground-link` CLI, also for the tray app. It must be single-threaded, and a binary that links
//! WebKit is not (JavaScriptCore starts a thread from a library constructor, before `main`):
//! a signal could then land on that thread and be lost, so a supervisor that finds another
//! thread refuses to run anything. That small, single-threaded process then:
//!
//! 1. blocks the signals it cares about and reads them from a `signalfd`;
//! 2. sets `PR_SET_PDEATHSIG` (SIGUSR1) and `PR_SET_CHILD_SUBREAPER`, and starts a new session,
//!    so the command has no controlling terminal (it cannot read from or draw on the terminal
//!    where `serve --approval tty` asks the user; `/dev/tty` fails with ENXIO);
//! 3. reads one JSON request line from its stdin, which is one end of a Unix socket pair;
//! 4. when asked, builds a Landlock ruleset that leaves reads alone and allows writes only
//!    beneath the given roots, `/tmp`, `/var/tmp`, `$TMPDIR`, `/dev/shm` and `/dev/null`, and
//!    applies it in the forked child just before `exec` — so the command is confined and the
//!    supervisor is not. With Landlock ABI ≥ 6 the domain is also signal-scoped: the command
//!    cannot signal (let alone kill) its supervisor, the engine, or any other process outside
//!    its own tree;
//! 5. runs `bash --noprofile --norc -c COMMAND` in the sandbox root, in a new process group,
//!    stdin `/dev/null`, stdout and stderr inherited (the engine's pipes); when asked, the child
//!    first joins a fresh, empty session keyring (never the person's), then enters its own
//!    user, mount, PID, IPC and network namespaces ([`crate::isolate`]: the
//!    child stays behind as a waiter that relays the exit status, and a grandchild, the PID
//!    namespace's init, becomes the shell) and only then applies Landlock (which forbids
//!    mounting afterwards);
//! 6. waits for `sh` to exit, the deadline, SIGTERM/SIGINT/SIGHUP (cancel), the engine's death
//!    (EOF on the socket, or the parent-death signal once the engine process — not merely the
//!    thread that spawned us — is gone);
//! 7. kills every remaining descendant, in every case, also after a normal exit: background
//!    jobs and daemons do not outlive the call, which is also what makes the output pipes close.
//!    Descendants are found by walking `/proc` along parent links from the supervisor; orphans,
//!    including `setsid` and double-forked ones, are reparented to the supervisor because it is
//!    the subreaper. Each is pinned with a pidfd and re-checked before SIGKILL (so a recycled
//!    pid is never hit), and the walk repeats until `waitpid` reports no children, which also
//!    catches processes forked while the previous pass ran. No cgroup is needed;
//! 8. writes one JSON [`Report`] line back on the socket and exits.
//!
//! Limits, by construction: a process that leaves the tree through another service (e.g.
//! `systemd-run --user`, a D-Bus activated daemon) is not ours to kill; a setuid program that
//! gained privileges cannot be killed by an unprivileged supervisor (in `workspace-write` mode
//! `no_new_privs` prevents the elevation); without Landlock signal scoping, a command that
//! deliberately SIGKILLs its own supervisor escapes the clean-up, and the engine reports that the
//! supervisor died without a report.

use std::ffi::OsStr;
use std::io::{Read, Write};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use landlock::{
    ABI, AccessFs, CompatLevel, Compatible, LandlockStatus, PathBeneath, PathFd, RestrictSelf,
    Ruleset, RulesetAttr, RulesetCreated, RulesetCreatedAttr, RulesetStatus, Scope,
};
use rustix::process::{Pid, Signal, WaitOptions, WaitStatus};
use serde::{Deserialize, Serialize};

use crate::signals::{self, SigSet};
use crate::tools::exec::Confinement;

/// `argv[1]` that turns a host binary into a supervisor.
pub const SUPERVISOR_ARG: &str = "__ground-link-supervise";

/// Largest request line the supervisor accepts (the command is capped well below this).
const MAX_REQUEST_BYTES: u64 = 4 << 20;

/// How long the clean-up keeps killing before it reports what it could not kill (processes
/// stuck in uninterruptible sleep, or setuid ones).
const CLEANUP_LIMIT: Duration = Duration::from_secs(5);

/// Signal the kernel sends when the engine thread that spawned us exits.
const PDEATH_SIGNAL: Signal = Signal::USR1;

/// Signals the supervisor takes from its signalfd instead of dying of them.
const WATCHED_SIGNALS: [Signal; 6] = [
    Signal::CHILD,
    Signal::TERM,
    Signal::INT,
    Signal::HUP,
    Signal::QUIT,
    PDEATH_SIGNAL,
];

/// What the engine asks the supervisor to run. Sent as one JSON line on the socket. The
/// supervisor is a separate binary (the CLI next to the tray app), so a stale one must refuse
/// rather than half-understand: unknown fields and another version are errors.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct Request {
    /// The engine's ground-link version; the supervisor runs only for its own.
    pub version: String,
    pub command: String,
    pub cwd: PathBuf,
    pub timeout_ms: u64,
    /// `None`: no Landlock. `Some(roots)`: writes only beneath these roots and the temp dirs.
    pub confine_writes: Option<Vec<PathBuf>>,
    /// The shell: `bash`, run as `bash --noprofile --norc -c` (the dialect the classifier
    /// models); any other shell gets only `-c`.
    pub shell: PathBuf,
    /// Namespaces to enter before Landlock (see [`crate::isolate`]); `None`: none.
    pub isolation: Option<crate::isolate::Isolation>,
}

/// The supervisor's last word, one JSON line on the socket, written after every descendant is
/// gone (or [`CLEANUP_LIMIT`] passed).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    tag = "type",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
pub(crate) enum Report {
    Finished {
        exit_code: Option<i32>,
        signal: Option<i32>,
        timed_out: bool,
        /// Ended early on SIGTERM or the engine's death; nobody is normally listening.
        cancelled: bool,
        /// Descendants still alive when the clean-up gave up (normally 0).
        leftover: usize,
        confinement: Confinement,
    },
    /// The command never ran.
    Failed { error: String },
}

/// Called first thing by every binary that can host the engine. When `argv[1]` is
/// [`SUPERVISOR_ARG`], runs the supervisor and exits the process; otherwise returns at once.
pub fn run_if_supervisor() {
    let mut args = std::env::args_os().skip(1);
    if args.next().as_deref() != Some(OsStr::new(SUPERVISOR_ARG)) {
        return;
    }
    let engine_pid = args
        .next()
        .and_then(|arg| arg.to_str().and_then(|s| s.parse::<i32>().ok()));
    let code = match engine_pid {
        Some(pid) => supervise(pid),
        None => {
            eprintln!(
                "{SUPERVISOR_ARG} is internal to ground-link: it expects the engine's pid and a \
                 request on stdin; run `ground-link --help` instead"
            );
            2
        }
    };
    std::process::exit(code);
}

/// The supervisor's whole life. Returns the process exit code.
fn supervise(engine_pid: i32) -> i32 {
    // The socket pair end the engine gave us as stdin. A dup of it is our report channel.
    let control = match std::io::stdin().as_fd().try_clone_to_owned() {
        Ok(fd) => UnixStream::from(fd),
        Err(_) => return 2,
    };
    let outcome = match Setup::new(engine_pid) {
        Ok(setup) => match read_request(&control) {
            Ok(Some(request)) => setup.run(&control, &request),
            // The engine went away before sending anything: nothing ran, nobody to tell.
            Ok(None) => return 0,
            Err(error) => Report::Failed { error },
        },
        Err(error) => Report::Failed { error },
    };
    match serde_json::to_vec(&outcome) {
        Ok(mut line) => {
            line.push(b'\n');
            // The engine may be gone (cancel); then there is nobody to tell.
            let _ = (&control).write_all(&line);
        }
        Err(_) => return 2,
    }
    0
}

/// Process-level state established before the request is read.
struct Setup {
    engine_pid: i32,
    signals: OwnedFd,
}

/// Threads in this process, from `/proc/self/task`.
fn thread_count() -> Result<usize, String> {
    std::fs::read_dir("/proc/self/task")
        .map(|dir| dir.count())
        .map_err(|e| format!("supervisor: cannot count its threads in /proc/self/task: {e}"))
}

/// Fail closed unless this process has exactly one thread: signals blocked here would otherwise
/// be delivered to (and discarded by) another thread, and forking would copy its locks.
fn require_single_thread() -> Result<(), String> {
    match thread_count()? {
        1 => Ok(()),
        n => Err(format!(
            "supervisor: this binary runs {n} threads before any command starts (a library \
             started them before main), so signals and fork cannot be trusted; the supervisor \
             must be the `ground-link` CLI"
        )),
    }
}

impl Setup {
    fn new(engine_pid: i32) -> Result<Self, String> {
        require_single_thread()?;
        let mut mask = SigSet::empty();
        for signal in WATCHED_SIGNALS {
            // An ignored signal never reaches the signalfd (a host started under `nohup`
            // ignores SIGHUP), and an ignored SIGCHLD would make the kernel auto-reap `sh`
            // before we learn its status.
            signals::reset_to_default(signal).map_err(|e| {
                format!(
                    "supervisor: could not reset {}: {e}",
                    signals::name(signal.as_raw()).unwrap_or("a signal")
                )
            })?;
            mask.add(signal)
                .map_err(|e| format!("supervisor: could not watch a signal: {e}"))?;
        }
        // Single-threaded process: the process mask is this thread's mask. The shell's child
        // clears it again before exec (see `spawn_shell`).
        signals::block(&mask).map_err(|e| format!("supervisor: could not block signals: {e}"))?;
        let signals = signals::signalfd(&mask)
            .map_err(|e| format!("supervisor: could not create a signalfd: {e}"))?;
        rustix::process::set_parent_process_death_signal(Some(PDEATH_SIGNAL))
            .map_err(|e| format!("supervisor: PR_SET_PDEATHSIG failed: {e}"))?;
        // The engine may have died before the prctl above took effect.
        if !engine_alive(engine_pid) {
            return Err("supervisor: the engine exited before the command started".to_owned());
        }
        let me = rustix::process::getpid();
        rustix::process::set_child_subreaper(Some(me))
            .map_err(|e| format!("supervisor: PR_SET_CHILD_SUBREAPER failed: {e}"))?;
        // Fails only when we already lead a process group (not the case when the engine spawns
        // us); the command then merely keeps our terminal.
        let _ = rustix::process::setsid();
        mark_inherited_fds_cloexec();
        Ok(Setup {
            engine_pid,
            signals,
        })
    }

    fn run(self, control: &UnixStream, request: &Request) -> Report {
        if !request.cwd.is_dir() {
            return Report::Failed {
                error: format!(
                    "the working directory {} is not a directory; pass the sandbox root or a \
                     directory inside it",
                    request.cwd.display()
                ),
            };
        }
        let (ruleset, confinement) = match &request.confine_writes {
            // full-access: writes are not confined, but a command in namespaces still may not
            // reach the session's abstract sockets (D-Bus, X11) where the kernel can say so.
            None if request.isolation.is_some() => match socket_scope_only() {
                Ok(ruleset) => (ruleset, Confinement::NotRequested),
                Err(error) => return Report::Failed { error },
            },
            None => (None, Confinement::NotRequested),
            Some(roots) => match prepare_landlock(roots) {
                Ok(prepared) => prepared,
                Err(error) => return Report::Failed { error },
            },
        };
        // Landlock rules name folders by the object they are when the rules are made: a
        // private /tmp mounted later is another object, and a covered mount point counts for
        // nothing. So with private temp folders the child builds its rules again after its
        // mounts (the ruleset above already proved the kernel accepts them).
        let rebuild = match (&request.confine_writes, &request.isolation, &ruleset) {
            (Some(roots), Some(iso), Some(_)) if iso.private_temp => {
                kernel_landlock_abi().ok().map(|abi| (abi, roots.clone()))
            }
            _ => None,
        };
        let sh = match spawn_shell(request, ruleset, rebuild) {
            Ok(pid) => pid,
            Err(error) => return Report::Failed { error },
        };
        // From here on the tree exists, so every path ends in `kill_tree`.
        let mut state = ShState::new(sh);
        // `None`: a timeout too large to represent, i.e. none.
        let deadline = Instant::now().checked_add(Duration::from_millis(request.timeout_ms));
        let end = if control.set_nonblocking(true).is_ok() {
            self.wait(control, &mut state, deadline)
        } else {
            // Without a non-blocking socket we cannot watch for the engine's death; fail safe.
            End::Cancelled
        };
        let leftover = kill_tree(&mut state);
        state.finished(
            end == End::TimedOut,
            end == End::Cancelled,
            leftover,
            confinement,
        )
    }

    /// Waits until `sh` exits, the deadline passes, or the call is cancelled.
    fn wait(&self, control: &UnixStream, state: &mut ShState, deadline: Option<Instant>) -> End {
        loop {
            if reap(state).is_err() || state.status.is_some() {
                return End::Exited;
            }
            let now = Instant::now();
            let wait_ms = match deadline {
                Some(deadline) if now >= deadline => return End::TimedOut,
                // Rounded up, so the last wait does not spin at 0 ms.
                Some(deadline) => (deadline - now)
                    .as_micros()
                    .div_ceil(1000)
                    .min(i32::MAX as u128) as i32,
                None => -1,
            };
            let (signal_ready, control_ready) = match poll2(&self.signals, control, wait_ms) {
                Ok(ready) => ready,
                // poll itself failing leaves us blind: stop the command rather than let it run
                // unwatched.
                Err(_) => return End::Cancelled,
            };
            if signal_ready {
                while let Ok(Some(signo)) = signals::next_signal(&self.signals) {
                    if signo == Signal::CHILD.as_raw() {
                        continue;
                    }
                    if signo == PDEATH_SIGNAL.as_raw() && engine_alive(self.engine_pid) {
                        // Only the engine thread that spawned us exited; the engine lives on.
                        continue;
                    }
                    return End::Cancelled;
                }
            }
            if control_ready {
                let mut buf = [0u8; 512];
                match (&*control).read(&mut buf) {
                    // EOF: the engine dropped the call or died.
                    Ok(0) => return End::Cancelled,
                    Ok(_) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(_) => return End::Cancelled,
                }
            }
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum End {
    Exited,
    TimedOut,
    Cancelled,
}

/// The `sh` child and, once reaped, how it ended.
struct ShState {
    me: Pid,
    sh: Pid,
    status: Option<WaitStatus>,
}

impl ShState {
    fn new(sh: Pid) -> Self {
        ShState {
            me: rustix::process::getpid(),
            sh,
            status: None,
        }
    }

    fn finished(
        &self,
        timed_out: bool,
        cancelled: bool,
        leftover: usize,
        confinement: Confinement,
    ) -> Report {
        Report::Finished {
            exit_code: self.status.and_then(|s| s.exit_status()),
            signal: self.status.and_then(|s| s.terminating_signal()),
            timed_out,
            cancelled,
            leftover,
            confinement,
        }
    }
}

/// True while our parent is still the engine process (after its death we are reparented).
fn engine_alive(engine_pid: i32) -> bool {
    rustix::process::getppid()
        .map(Pid::as_raw_nonzero)
        .map(|p| p.get())
        == Some(engine_pid)
}

/// Stray descriptors a host (a GUI toolkit, say) left inheritable must not reach the command.
fn mark_inherited_fds_cloexec() {
    let Ok(entries) = std::fs::read_dir("/proc/self/fd") else {
        return;
    };
    let fds: Vec<i32> = entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .filter(|fd| *fd > 2)
        .collect();
    for fd in fds {
        // SAFETY: the descriptor is only borrowed for the fcntl; a number that was the
        // read_dir handle (already closed) just makes fcntl fail with EBADF.
        let borrowed = unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) };
        let _ = rustix::io::fcntl_setfd(borrowed, rustix::io::FdFlags::CLOEXEC);
    }
}

/// Reads one JSON request line. `Ok(None)` when the engine closed the socket first.
fn read_request(control: &UnixStream) -> Result<Option<Request>, String> {
    let mut line = Vec::new();
    let mut limited = control.take(MAX_REQUEST_BYTES);
    let mut byte = [0u8; 4096];
    loop {
        let n = match limited.read(&mut byte) {
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(format!("supervisor: could not read the request: {e}")),
        };
        if n == 0 {
            if line.is_empty() {
                return Ok(None);
            }
            break;
        }
        line.extend_from_slice(&byte[..n]);
        if line.ends_with(b"\n") {
            break;
        }
    }
    let request: Request = serde_json::from_slice(&line).map_err(|e| {
        format!(
            "supervisor: the request is not understood ({e}); is {} as new as the engine? \
             reinstall ground-link",
            exe_shown()
        )
    })?;
    check_version(&request.version)?;
    Ok(Some(request))
}

fn exe_shown() -> String {
    std::env::current_exe()
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| "the supervisor binary".to_string())
}

/// The engine and the supervisor must be the same ground-link.
fn check_version(engine: &str) -> Result<(), String> {
    let mine = env!("CARGO_PKG_VERSION");
    if engine == mine {
        return Ok(());
    }
    Err(format!(
        "supervisor: {} is ground-link {mine} but the engine is {engine}; install the same \
         version of both (the package ships them together)",
        exe_shown()
    ))
}

/// Waits for either descriptor to become readable (or hang up). Returns which ones did.
fn poll2(
    signals: &OwnedFd,
    control: &UnixStream,
    timeout_ms: i32,
) -> std::io::Result<(bool, bool)> {
    let mut fds = [
        libc::pollfd {
            fd: signals.as_fd().as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        },
        libc::pollfd {
            fd: control.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        },
    ];
    // SAFETY: `fds` is a valid array of two initialised pollfd structs that outlives the call,
    // and both descriptors stay open (borrowed from live owners) for its duration.
    let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout_ms) };
    if n < 0 {
        let err = std::io::Error::last_os_error();
        if err.kind() == std::io::ErrorKind::Interrupted {
            return Ok((false, false));
        }
        return Err(err);
    }
    let ready = |revents: i16| revents & (libc::POLLIN | libc::POLLHUP | libc::POLLERR) != 0;
    Ok((ready(fds[0].revents), ready(fds[1].revents)))
}

/// Reaps every child that has ended, remembering `sh`'s status. `Err` means "no children left".
fn reap(state: &mut ShState) -> Result<(), ()> {
    loop {
        match rustix::process::wait(WaitOptions::NOHANG) {
            Ok(Some((pid, status))) => {
                if pid == state.sh && (status.exited() || status.signaled()) {
                    state.status = Some(status);
                }
            }
            Ok(None) => return Ok(()),
            Err(rustix::io::Errno::INTR) => continue,
            Err(_) => return Err(()),
        }
    }
}

/// Kills every descendant of the supervisor and reaps them. Returns how many could not be
/// killed within [`CLEANUP_LIMIT`].
fn kill_tree(state: &mut ShState) -> usize {
    // One atomic shot at `sh`'s process group first: most of an ordinary tree (pipelines, a fork
    // loop's children) dies at once. Only while `sh` is unreaped: its zombie keeps the group id
    // from being recycled.
    if state.status.is_none() {
        let _ = rustix::process::kill_process_group(state.sh, rustix::process::Signal::KILL);
    }
    let started = Instant::now();
    let mut pause = Duration::from_micros(500);
    loop {
        let table = scan_proc();
        let tree = descendants(state.me, &table);
        for entry in &tree {
            kill_verified(state.me, entry, &tree);
        }
        if reap(state).is_err() {
            return 0;
        }
        if started.elapsed() >= CLEANUP_LIMIT {
            return descendants(state.me, &scan_proc()).len();
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(20));
    }
}

/// One line of `/proc/<pid>/stat`, reduced to what identifies a process and its parent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct ProcEntry {
    pid: i32,
    ppid: i32,
    start_time: u64,
}

fn scan_proc() -> Vec<ProcEntry> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| {
        let pid: i32 = e.ok()?.file_name().to_str()?.parse().ok()?;
        read_stat(pid)
    })
    .collect()
}

fn read_stat(pid: i32) -> Option<ProcEntry> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_stat(&text)
}

/// Parses `pid (comm) state ppid … starttime …`. `comm` may contain spaces and parentheses, so
/// fields are counted from the last `)`.
fn parse_stat(text: &str) -> Option<ProcEntry> {
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let pid = text.get(..open)?.trim().parse().ok()?;
    let mut fields = text.get(close + 1..)?.split_whitespace();
    // Field 3 is the state; ppid is field 4, starttime field 22.
    let ppid = fields.nth(1)?.parse().ok()?;
    let start_time = fields.nth(17)?.parse().ok()?;
    Some(ProcEntry {
        pid,
        ppid,
        start_time,
    })
}

/// Everyone whose chain of parents leads to `root`.
fn descendants(root: Pid, table: &[ProcEntry]) -> Vec<ProcEntry> {
    let mut found = Vec::new();
    let mut frontier = vec![root.as_raw_nonzero().get()];
    while let Some(parent) = frontier.pop() {
        for entry in table.iter().filter(|e| e.ppid == parent && e.pid != parent) {
            if !found.iter().any(|f: &ProcEntry| f.pid == entry.pid) {
                found.push(*entry);
                frontier.push(entry.pid);
            }
        }
    }
    found
}

/// SIGKILLs `entry` if it is still the process the scan saw (or has since been reparented to
/// us). The pidfd pins the process, so a pid recycled after the scan is never signalled.
fn kill_verified(me: Pid, entry: &ProcEntry, tree: &[ProcEntry]) {
    let Some(pid) = Pid::from_raw(entry.pid) else {
        return;
    };
    match rustix::process::pidfd_open(pid, rustix::process::PidfdFlags::empty()) {
        Ok(pidfd) => {
            let Some(now) = read_stat(entry.pid) else {
                return;
            };
            let same = now.start_time == entry.start_time
                && (now.ppid == entry.ppid
                    || now.ppid == me.as_raw_nonzero().get()
                    || tree.iter().any(|t| t.pid == now.ppid));
            if same {
                let _ = rustix::process::pidfd_send_signal(&pidfd, rustix::process::Signal::KILL);
            }
        }
        // Kernels before 5.3: fall back to plain kill (the scan just saw this pid in our tree).
        Err(rustix::io::Errno::NOSYS) => {
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
        }
        Err(_) => {}
    }
}

/// Builds the Landlock ruleset for `roots` (plus temp dirs and `/dev/null`) and says what it
/// will enforce. Without Landlock the command still runs, reported as unconfined.
fn prepare_landlock(roots: &[PathBuf]) -> Result<(Option<RulesetCreated>, Confinement), String> {
    let abi = match kernel_landlock_abi() {
        Ok(abi) => abi,
        Err(why) => return Ok((None, Confinement::Unavailable(why))),
    };
    let plan = LandlockPlan::for_kernel(abi);
    let ruleset = build_ruleset(&plan, roots)?;
    Ok((Some(ruleset), plan.confinement()))
}

/// What this kernel's Landlock can do for us.
struct LandlockPlan {
    kernel_abi: u32,
    /// The newest ABI whose write rights we handle (V5 adds `IoctlDev`; later ones add nothing
    /// about writes that we use).
    fs_abi: ABI,
    /// ABI 6: the command may not signal processes outside its domain.
    scope_signal: bool,
}

impl LandlockPlan {
    fn for_kernel(kernel_abi: u32) -> Self {
        let fs_abi = match kernel_abi {
            1 => ABI::V1,
            2 => ABI::V2,
            3 => ABI::V3,
            4 => ABI::V4,
            _ => ABI::V5,
        };
        LandlockPlan {
            kernel_abi,
            fs_abi,
            scope_signal: kernel_abi >= 6,
        }
    }

    fn confinement(&self) -> Confinement {
        if self.kernel_abi >= 3 {
            Confinement::Landlock {
                abi: self.kernel_abi,
            }
        } else {
            Confinement::Unavailable(format!(
                "this kernel's Landlock (ABI {}) cannot stop truncating files outside the \
                 sandbox (that needs ABI 3, Linux 6.2), so writes are only partly confined",
                self.kernel_abi
            ))
        }
    }
}

/// Directories every confined command may write to besides its roots. Missing ones are skipped.
fn temp_dirs() -> Vec<PathBuf> {
    let mut dirs = vec![
        PathBuf::from("/tmp"),
        PathBuf::from("/var/tmp"),
        // POSIX shared memory and semaphores (Python multiprocessing, browsers) live here.
        PathBuf::from("/dev/shm"),
        PathBuf::from("/dev/null"),
    ];
    if let Some(tmpdir) = std::env::var_os("TMPDIR").map(PathBuf::from)
        && tmpdir.is_absolute()
    {
        dirs.push(tmpdir);
    }
    dirs
}

fn build_ruleset(plan: &LandlockPlan, roots: &[PathBuf]) -> Result<RulesetCreated, String> {
    let write = AccessFs::from_write(plan.fs_abi);
    let fail = |what: &str, e: &dyn std::fmt::Display| {
        format!("could not set up the Landlock sandbox ({what}: {e}); the command was not run")
    };
    // HardRequirement: the plan asks only for what this kernel supports, so anything less than
    // full enforcement is a bug to report, never a silent downgrade.
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(write)
        .map_err(|e| fail("handled accesses", &e))?;
    if plan.scope_signal {
        // Same ABI (6): no signals out of the domain, and no abstract Unix sockets outside
        // it (the session bus, X11, an agent's control socket).
        ruleset = ruleset
            .scope(Scope::Signal)
            .map_err(|e| fail("signal scope", &e))?
            .scope(Scope::AbstractUnixSocket)
            .map_err(|e| fail("abstract unix socket scope", &e))?;
    }
    let mut created = ruleset.create().map_err(|e| fail("create", &e))?;
    let required = roots.iter().map(|r| (r.as_path(), true));
    let temps = temp_dirs();
    let optional = temps.iter().map(|t| (t.as_path(), false));
    for (path, must_exist) in required.chain(optional) {
        let fd = match PathFd::new(path) {
            Ok(fd) => fd,
            Err(e) if must_exist => {
                return Err(format!(
                    "the writable root {} cannot be opened ({e}); pass an existing directory",
                    path.display()
                ));
            }
            Err(_) => continue,
        };
        let access = if is_dir(&fd) {
            write
        } else {
            write & AccessFs::from_file(plan.fs_abi)
        };
        created = created
            .add_rule(PathBeneath::new(fd, access))
            .map_err(|e| fail(&path.display().to_string(), &e))?;
    }
    Ok(created)
}

/// A ruleset that only scopes abstract Unix sockets (Landlock ABI 6+), for commands whose
/// writes are not confined; `None` on older kernels (the network namespace, when there is one,
/// separates abstract sockets anyway).
fn socket_scope_only() -> Result<Option<RulesetCreated>, String> {
    match kernel_landlock_abi() {
        Ok(abi) if abi >= 6 => Ruleset::default()
            .set_compatibility(CompatLevel::HardRequirement)
            .scope(Scope::AbstractUnixSocket)
            .and_then(|r| r.create())
            .map(Some)
            .map_err(|e| {
                format!("could not set up the abstract-socket scope ({e}); the command was not run")
            }),
        _ => Ok(None),
    }
}

fn is_dir(fd: &PathFd) -> bool {
    rustix::fs::fstat(fd)
        .map(|st| {
            rustix::fs::FileType::from_raw_mode(st.st_mode) == rustix::fs::FileType::Directory
        })
        .unwrap_or(false)
}

/// The running kernel's Landlock ABI, or why there is none.
pub(crate) fn kernel_landlock_abi() -> Result<u32, String> {
    // With nothing requested and no_new_privs off, `apply` only reports the kernel's support.
    let status = RestrictSelf::default()
        .no_new_privs(false)
        .apply()
        .map_err(|e| format!("could not query Landlock support: {e}"))?;
    match status.landlock {
        LandlockStatus::Available {
            effective_abi,
            kernel_abi,
        } => {
            let abi = match kernel_abi {
                Some(newer) => u32::try_from(newer).unwrap_or(0),
                None => effective_abi.to_string().parse().unwrap_or(0),
            };
            if abi == 0 {
                Err("Landlock reported an unknown ABI version".to_owned())
            } else {
                Ok(abi)
            }
        }
        LandlockStatus::NotEnabled => Err("Landlock is built into this kernel but not enabled; \
             add `landlock` to the `lsm=` kernel boot parameter"
            .to_owned()),
        LandlockStatus::NotImplemented => Err("this kernel has no Landlock (it needs Linux 5.13+ \
             built with CONFIG_SECURITY_LANDLOCK, and no seccomp filter blocking it)"
            .to_owned()),
    }
}

/// What `exec_cmd` in `workspace-write` mode would get on this kernel (uncached).
pub(crate) fn probe_confinement() -> Confinement {
    match kernel_landlock_abi() {
        Ok(abi) => LandlockPlan::for_kernel(abi).confinement(),
        Err(why) => Confinement::Unavailable(why),
    }
}

/// The command gets a fresh, empty session keyring of its own: the one it would inherit is
/// the person's (`keyctl` on `@s` would read the keys their login session holds). A kernel
/// without keyrings has nothing to leave; any other failure stops the command (fail closed).
fn leave_session_keyring() -> Result<(), String> {
    const KEYCTL_JOIN_SESSION_KEYRING: libc::c_long = 1;
    // SAFETY: a plain syscall; a null name asks for a new anonymous keyring.
    let r = unsafe {
        libc::syscall(
            libc::SYS_keyctl,
            KEYCTL_JOIN_SESSION_KEYRING,
            std::ptr::null::<libc::c_char>(),
        )
    };
    if r >= 0 {
        return Ok(());
    }
    let err = std::io::Error::last_os_error();
    if err.raw_os_error() == Some(libc::ENOSYS) {
        return Ok(());
    }
    Err(format!("join a fresh session keyring: {err}"))
}

/// Spawns the shell, entering the namespaces and then applying `ruleset` in the child right
/// before `exec`.
fn spawn_shell(
    request: &Request,
    ruleset: Option<RulesetCreated>,
    rebuild: Option<(u32, Vec<PathBuf>)>,
) -> Result<Pid, String> {
    let mut command = Command::new(&request.shell);
    if request.shell.file_name() == Some(OsStr::new("bash")) {
        command.arg("--noprofile").arg("--norc");
    }
    command
        .arg("-c")
        .arg(&request.command)
        .env_remove("BASH_ENV")
        .env_remove("ENV")
        .current_dir(&request.cwd)
        .stdin(Stdio::null())
        .process_group(0);
    // The child reports a Landlock failure here (std only forwards an errno).
    let (err_rx, err_tx) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)
        .map_err(|e| format!("supervisor: could not create a pipe: {e}"))?;
    let mut slot = ruleset;
    let isolation = request.isolation.clone();
    let uid = rustix::process::getuid().as_raw();
    let gid = rustix::process::getgid().as_raw();
    // SAFETY: the supervisor is single-threaded, so allocating in the forked child cannot
    // deadlock on a lock held by another thread; the closure only changes the child's own
    // signal mask and Landlock domain, and writes to a pipe it owns.
    unsafe {
        command.pre_exec(move || {
            // posix_spawn would hand our blocked-signal mask to `sh` (std does not reset it),
            // and a shell with SIGTERM blocked ignores `kill`.
            signals::unblock_all()?;
            if let Err(e) = leave_session_keyring() {
                let _ = rustix::io::write(&err_tx, e.as_bytes());
                return Err(std::io::Error::from_raw_os_error(libc::EPERM));
            }
            if let Some(iso) = &isolation {
                if let Err(e) = crate::isolate::enter(iso, uid, gid) {
                    let error = format!("namespaces: {e}");
                    let _ = rustix::io::write(&err_tx, error.as_bytes());
                    return Err(std::io::Error::from_raw_os_error(libc::EPERM));
                }
            }
            if let Some((abi, roots)) = &rebuild {
                match build_ruleset(&LandlockPlan::for_kernel(*abi), roots) {
                    Ok(fresh) => slot = Some(fresh),
                    Err(e) => {
                        let _ = rustix::io::write(&err_tx, e.as_bytes());
                        return Err(std::io::Error::from_raw_os_error(libc::EPERM));
                    }
                }
            }
            let Some(ruleset) = slot.take() else {
                return Ok(());
            };
            let error = match ruleset.restrict_self() {
                Ok(status) if status.ruleset == RulesetStatus::FullyEnforced => return Ok(()),
                Ok(status) => format!("Landlock was only {:?}", status.ruleset),
                Err(e) => e.to_string(),
            };
            let _ = rustix::io::write(&err_tx, error.as_bytes());
            Err(std::io::Error::from_raw_os_error(libc::EPERM))
        });
    }
    let spawned = command.spawn();
    // Drops the parent's copy of the error pipe's write end.
    drop(command);
    match spawned {
        Ok(child) => Pid::from_raw(child.id() as i32)
            .ok_or_else(|| "supervisor: the shell got an invalid pid".to_owned()),
        Err(e) => {
            let mut buf = [0u8; 1024];
            let n = rustix::io::read(&err_rx, &mut buf).unwrap_or(0);
            if n > 0 {
                Err(format!(
                    "could not set up the sandbox ({}); the command was not run",
                    String::from_utf8_lossy(&buf[..n])
                ))
            } else {
                Err(format!(
                    "could not start {} in {}: {e}",
                    request.shell.display(),
                    request.cwd.display()
                ))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn parse_stat_handles_hostile_comm() {
        let cases = [
            (
                "12 (sleep) S 7 12 12 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 1 0 555 0",
                12,
                7,
                555,
            ),
            (
                "13 (a) b) (c) R 1 13 13 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 99 0 0",
                13,
                1,
                99,
            ),
            (
                "14 (x y z) Z 14 0 0 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 7 0",
                14,
                14,
                7,
            ),
        ];
        for (text, pid, ppid, start) in cases {
            let entry = parse_stat(text).expect(text);
            assert_eq!(
                (entry.pid, entry.ppid, entry.start_time),
                (pid, ppid, start),
                "{text}"
            );
        }
        assert_eq!(parse_stat("garbage"), None);
        assert_eq!(parse_stat("1 (x) S"), None);
    }

    #[test]
    fn a_supervisor_with_other_threads_refuses_to_run() {
        // This test process has at least two threads while this one runs (the harness's
        // main thread waits for it); the supervisor's check must see them and refuse.
        let start = std::sync::Barrier::new(2);
        std::thread::scope(|s| {
            s.spawn(|| start.wait());
            assert!(thread_count().unwrap() >= 2);
            let err = require_single_thread().unwrap_err();
            assert!(err.contains("must be the `ground-link` CLI"), "{err}");
            start.wait();
        });
    }

    #[test]
    fn requests_from_another_version_or_with_unknown_fields_are_refused() {
        assert!(check_version(env!("CARGO_PKG_VERSION")).is_ok());
        let err = check_version("0.0.1-other").unwrap_err();
        assert!(err.contains("install the same version"), "{err}");
        let line = serde_json::json!({
            "version": env!("CARGO_PKG_VERSION"), "command": "true", "cwd": "/",
            "timeoutMs": 1000, "confineWrites": null, "newConfinement": true
        });
        assert!(
            serde_json::from_value::<Request>(line).is_err(),
            "unknown field accepted"
        );
    }

    #[test]
    fn descendants_follow_parent_chains_only() {
        let e = |pid, ppid| ProcEntry {
            pid,
            ppid,
            start_time: 0,
        };
        let table = [
            e(1, 0),
            e(10, 1),
            e(11, 10),
            e(12, 11),
            e(13, 10),
            e(20, 1),
            e(21, 20),
        ];
        let root = Pid::from_raw(10).expect("pid");
        let mut pids: Vec<i32> = descendants(root, &table).iter().map(|p| p.pid).collect();
        pids.sort_unstable();
        assert_eq!(pids, vec![11, 12, 13]);
    }

    #[test]
    fn plan_reports_partial_landlock_as_unavailable() {
        let cases = [
            (1, false, false),
            (2, false, false),
            (3, true, false),
            (5, true, false),
            (6, true, true),
            (7, true, true),
        ];
        for (abi, confined, scoped) in cases {
            let plan = LandlockPlan::for_kernel(abi);
            assert_eq!(
                matches!(plan.confinement(), Confinement::Landlock { abi: a } if a == abi),
                confined,
                "abi {abi}"
            );
            assert_eq!(plan.scope_signal, scoped, "abi {abi}");
        }
    }

    #[test]
    fn temp_dirs_are_the_documented_ones() {
        let dirs = temp_dirs();
        for expected in ["/tmp", "/var/tmp", "/dev/shm", "/dev/null"] {
            assert!(dirs.iter().any(|d| d == Path::new(expected)), "{expected}");
        }
        assert!(dirs.iter().all(|d| d.is_absolute()));
    }
}
