//! `exec_cmd` (DESIGN §3, §4, §5.2): `bash --noprofile --norc -c COMMAND` in the sandbox root
//! under a per-call supervisor.
//!
//! Guarantees:
//! - The command runs as `bash --noprofile --norc -c COMMAND` (the dialect the classifier
//!   models; never `sh`, which is dash on Debian) with `BASH_ENV` and `ENV` unset, the given
//!   directory as cwd, stdin `/dev/null` and no controlling terminal.
//! - Its environment is the engine's minus every variable that looks like a secret
//!   ([`is_secret_env`]: `*TOKEN*`, `*SECRET*`, `*KEY*`, `*PASSWORD*`, cloud credentials…)
//!   unless [`ExecRequest::pass_env`] names it, and minus the handles on the person's session
//!   (`DISPLAY`, `XAUTHORITY`, `WAYLAND_DISPLAY`, `DBUS_SESSION_BUS_ADDRESS`, `SSH_AUTH_SOCK`).
//! - Every command gets `LESSSECURE=1` and none of `less`'s program or key-file variables
//!   (`LESS_ENV`): a lesskey file cannot make a `safe` `less` run a program.
//! - A command the engine classified `safe` that runs git gets git config (environment
//!   overrides, which win over every config file) that cannot run code: see [`SAFE_GIT_CONFIG`].
//! - With [`ExecRequest::isolation`], the command runs in its own namespaces
//!   ([`crate::isolate`]): own state and secrets hidden, run-later files read-only, and no
//!   network unless granted.
//! - Nothing the command started outlives the call: on a normal exit, on the timeout (default
//!   60 s), on cancel (dropping the [`run`] future) and on the engine's death, the supervisor
//!   kills the whole process tree — `setsid` and double-forked children included — within about
//!   a second (see [`crate::supervisor`] for how); with namespaces the command is also the
//!   init of its own PID namespace, which the kernel empties when it ends. Background jobs and daemons are therefore
//!   killed when `sh` exits; that is also what lets the output pipes close promptly.
//! - stdout and stderr are read concurrently and kept together within `max_output` bytes
//!   (first half and last half; a line in the middle says how many bytes were cut). Memory
//!   stays bounded however much the command writes; invalid UTF-8 is replaced.
//! - With `confine_writes`, Landlock limits the command's writes to those roots, `/tmp`,
//!   `/var/tmp`, `$TMPDIR`, `/dev/shm` and `/dev/null`; reads stay allowed everywhere. Where the
//!   kernel cannot do that the command still runs and the outcome says
//!   [`Confinement::Unavailable`], so the engine can treat `exec_cmd` as dangerous and say so.
//!
//! The supervisor's status travels over a Unix socket pair: the engine passes one end as the
//! supervisor's stdin, writes one JSON request line on it, and keeps its own end open for the
//! whole call (its closing is the cancel signal). When the tree is gone the supervisor writes
//! one JSON report line (exit code, signal, timed out, confinement, processes it could not
//! kill) and exits; the engine reads that line after reaping the supervisor. Output never shares
//! a channel with the report, so a command cannot forge it.

use std::ffi::OsStr;
use std::fmt::Write as _;
use std::io::{Read, Write};
use std::os::fd::OwnedFd;
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use tokio::io::AsyncReadExt;

use crate::supervisor::{self, Report, Request, SUPERVISOR_ARG};

/// Default `exec_cmd` timeout.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);
/// Default cap on stdout and stderr together.
pub const MAX_OUTPUT: usize = 1 << 20;
/// Linux refuses a single argument longer than this (`MAX_ARG_STRLEN`, 128 KiB, with its NUL).
pub const MAX_COMMAND_BYTES: usize = 128 * 1024 - 1;

/// How long past the timeout the engine waits for the supervisor before stepping in itself (the
/// supervisor's own clean-up gives up after 5 s).
const BACKSTOP_GRACE: Duration = Duration::from_secs(10);
/// After the supervisor exits, the pipes should already be at EOF; don't wait on them longer.
const PIPE_GRACE: Duration = Duration::from_secs(1);
/// Reports are a few hundred bytes; anything beyond this is not a report.
const MAX_REPORT_BYTES: usize = 64 * 1024;

/// One `exec_cmd` call, already validated and resolved by the engine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecRequest {
    pub command: String,
    /// Absolute working directory (the sandbox root or a directory inside it).
    pub cwd: PathBuf,
    pub timeout: Duration,
    /// `None`: no Landlock (`full-access`). `Some(roots)`: writable roots besides the temp dirs
    /// and `/dev/null` (`workspace-write`).
    pub confine_writes: Option<Vec<PathBuf>>,
    /// A binary that calls [`crate::supervisor::run_if_supervisor`] first thing in `main`.
    pub supervisor_exe: PathBuf,
    /// Cap on stdout and stderr together, in bytes.
    pub max_output: usize,
    /// The shell (bash, found by [`find_bash`]).
    pub shell: PathBuf,
    /// Namespaces for the command; `None` runs it in the engine's own (only where they are
    /// unavailable, and then the engine has asked the person).
    pub isolation: Option<crate::isolate::Isolation>,
    /// The command was classified `safe`: run git with config that cannot execute code.
    pub git_safe: bool,
    /// Secret-looking variables the person chose to pass on anyway (a setting).
    pub pass_env: Vec<String>,
    /// Cancelled by the caller (an MCP client's `notifications/cancelled`, `DELETE /calls/{id}`,
    /// shutdown): the supervisor is told to stop and kills the whole tree, and [`run`] still
    /// waits for its report, so the call ends with the tree gone and says it was cancelled.
    pub cancel: tokio_util::sync::CancellationToken,
}

impl ExecRequest {
    /// A request with the default timeout and output cap, and no Landlock.
    pub fn new(
        command: impl Into<String>,
        cwd: impl Into<PathBuf>,
        supervisor_exe: impl Into<PathBuf>,
    ) -> Self {
        ExecRequest {
            command: command.into(),
            cwd: cwd.into(),
            timeout: DEFAULT_TIMEOUT,
            confine_writes: None,
            supervisor_exe: supervisor_exe.into(),
            max_output: MAX_OUTPUT,
            shell: find_bash().unwrap_or_else(|| PathBuf::from("/bin/bash")),
            isolation: None,
            git_safe: false,
            pass_env: Vec::new(),
            cancel: tokio_util::sync::CancellationToken::new(),
        }
    }
}

/// Where bash is, or `None` (then the engine asks before every command, and says why).
pub fn find_bash() -> Option<PathBuf> {
    ["/bin/bash", "/usr/bin/bash", "/usr/local/bin/bash"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.is_file())
}

/// Git config for commands classified `safe` (DESIGN §5.2 "git reads stay reads"), passed as
/// `GIT_CONFIG_COUNT`/`GIT_CONFIG_KEY_n`/`GIT_CONFIG_VALUE_n`, which git applies after every
/// config file, so the repository's own `.git/config` cannot override them.
pub const SAFE_GIT_CONFIG: &[(&str, &str)] = &[
    // A committed bare-style directory is not a repository unless named with --git-dir.
    ("safe.bareRepository", "explicit"),
    ("core.fsmonitor", "false"),
    ("core.hooksPath", "/dev/null"),
    ("core.pager", "cat"),
    // Attributes pick textconv, diff and filter drivers; the global file is the person's,
    // but a read must not run any driver at all.
    ("core.attributesFile", "/dev/null"),
    ("log.showSignature", "false"),
    // Not executable: signature checks fail instead of running a program.
    ("gpg.program", "/dev/null"),
    ("gpg.ssh.program", "/dev/null"),
    ("gpg.x509.program", "/dev/null"),
    // An empty value resets the list of credential helpers.
    ("credential.helper", ""),
    ("protocol.allow", "never"),
];

/// Other environment for safe git: no pager, no external diff, and attributes read from the
/// empty tree instead of the work tree's `.gitattributes` (which the model can write), so no
/// `textconv`, `filter.*.clean/smudge/process` or `diff.<driver>.command` is ever selected.
const SAFE_GIT_ENV: &[(&str, &str)] = &[
    ("GIT_PAGER", "cat"),
    ("PAGER", "cat"),
    (
        "GIT_ATTR_SOURCE",
        "4b825dc642cb6eb9a060e54bf8d69288fbee4904",
    ),
];

/// `less` variables that name programs to run or key files to read (every command: `less`
/// needs none of them without a terminal, and any command may start it).
const LESS_ENV: &[&str] = &[
    "LESSOPEN",
    "LESSCLOSE",
    "LESSKEY",
    "LESSKEYIN",
    "LESSKEY_CONTENT",
    "LESSKEYIN_SYSTEM",
    "LESSKEY_SYSTEM",
    "LESSEDIT",
    "LESSSECURE_ALLOW",
];

/// The person's session: a command that holds these can talk to the desktop, the session bus
/// (and through it the keyring and ground-link's own app) or the ssh agent.
const SESSION_ENV: &[&str] = &[
    "DISPLAY",
    "XAUTHORITY",
    "WAYLAND_DISPLAY",
    "DBUS_SESSION_BUS_ADDRESS",
    "SSH_AUTH_SOCK",
    "GPG_AGENT_INFO",
    // Start-up files bash or sh would source, and a diff program git would run.
    "BASH_ENV",
    "ENV",
    "GIT_EXTERNAL_DIFF",
];

/// Marks a process tree as started by `exec_cmd`: `ground-link` refuses to act under it.
pub const IN_EXEC_ENV: &str = "GROUND_LINK_IN_EXEC";

/// How the command's writes were confined.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", content = "detail", rename_all = "camelCase")]
pub enum Confinement {
    /// Writes were limited by Landlock; `abi` is the kernel's Landlock ABI version.
    Landlock { abi: u32 },
    /// Confinement was asked for but this kernel cannot provide it; the command ran unconfined.
    Unavailable(String),
    /// The request did not ask for confinement (`full-access`).
    NotRequested,
}

/// What happened to one command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecOutcome {
    /// `sh`'s exit code when it exited normally.
    pub exit_code: Option<i32>,
    /// The signal that ended `sh`, if one did (SIGKILL after a timeout).
    pub signal: Option<i32>,
    pub timed_out: bool,
    /// The supervisor was told to stop early (SIGTERM from outside the engine).
    pub cancelled: bool,
    pub stdout: String,
    pub stderr: String,
    /// Bytes of output dropped by the cap, over both streams.
    pub truncated_bytes: u64,
    pub confinement: Confinement,
    pub duration: Duration,
    /// The timeout the command ran under.
    pub timeout: Duration,
    /// Processes the supervisor could not kill (stuck in the kernel, or setuid); normally 0.
    pub leftover_processes: usize,
    /// The command ran in a network namespace with only `lo`.
    pub network_off: bool,
    /// Set by the engine when namespaces were unavailable: why.
    pub not_isolated: Option<String>,
    /// Set by the engine: what the command created in protected places, and what became of
    /// it (one sentence each).
    pub quarantined: Vec<String>,
}

impl ExecOutcome {
    /// Text for the model: stdout, a `[stderr]` section when there is any, then status lines.
    /// The flag says whether output was truncated.
    pub fn render(&self) -> (String, bool) {
        let mut text = String::new();
        push_section(&mut text, &self.stdout);
        if !self.stderr.is_empty() {
            text.push_str("[stderr]\n");
            push_section(&mut text, &self.stderr);
        }
        if self.stdout.is_empty() && self.stderr.is_empty() {
            text.push_str("(no output)\n");
        }
        if self.timed_out {
            let _ = writeln!(
                text,
                "[timed out after {}; the whole process tree was killed]",
                human_duration(self.timeout)
            );
        } else if self.cancelled {
            text.push_str("[cancelled; the whole process tree was killed]\n");
        } else if let Some(signal) = self.signal {
            let _ = writeln!(text, "[killed by signal {signal}{}]", signal_name(signal));
        } else if let Some(code) = self.exit_code {
            let _ = writeln!(text, "[exit code: {code}]");
        }
        if self.leftover_processes > 0 {
            let _ = writeln!(
                text,
                "[warning: {} process(es) started by the command could not be killed]",
                self.leftover_processes
            );
        }
        if self.network_off && self.exit_code.is_some_and(|c| c != 0) {
            text.push_str(
                "[network: off — the command ran without network access; if it needed the \
                 network, ask the person to allow it]\n",
            );
        }
        for line in &self.quarantined {
            let _ = writeln!(text, "[{line}]");
        }
        if let Some(why) = &self.not_isolated {
            let _ = writeln!(
                text,
                "[warning: the command was not isolated ({why}): ground-link's own state, \
                 secrets and the network were within its reach]"
            );
        }
        if let Confinement::Unavailable(why) = &self.confinement {
            let _ = writeln!(
                text,
                "[warning: the command's writes were not confined to the sandbox: {why}]"
            );
        }
        (text, self.truncated_bytes > 0)
    }
}

fn push_section(text: &mut String, section: &str) {
    text.push_str(section);
    if !section.is_empty() && !section.ends_with('\n') {
        text.push('\n');
    }
}

fn human_duration(d: Duration) -> String {
    if d.subsec_millis() == 0 {
        format!("{} s", d.as_secs())
    } else {
        format!("{:.1} s", d.as_secs_f64())
    }
}

fn signal_name(signal: i32) -> String {
    crate::signals::name(signal)
        .map(|s| format!(" ({s})"))
        .unwrap_or_default()
}

/// Why a command could not be run (or its fate is unknown).
#[derive(Debug, thiserror::Error)]
pub enum ExecError {
    #[error(
        "the command is {len} bytes long; Linux accepts at most {max}; split it or write a script file and run that"
    )]
    CommandTooLong { len: usize, max: usize },
    #[error("the command contains a NUL byte, which no shell command can; remove it")]
    CommandHasNul,
    #[error("the timeout is zero; give a timeout of at least 1 ms")]
    ZeroTimeout,
    #[error(
        "the working directory {path:?} {problem}; pass the sandbox root or a directory inside it"
    )]
    BadCwd {
        path: PathBuf,
        problem: &'static str,
    },
    #[error("the path {path:?} is not valid UTF-8, which exec_cmd cannot pass on; rename it")]
    NonUtf8Path { path: PathBuf },
    #[error(
        "could not start the exec supervisor {exe:?}: {source}; check that the binary exists and calls supervisor::run_if_supervisor() first in main"
    )]
    Spawn {
        exe: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("could not {what}: {source}")]
    Io {
        what: &'static str,
        #[source]
        source: std::io::Error,
    },
    #[error("{0}")]
    Supervisor(String),
    #[error(
        "the exec supervisor {exe:?} ended ({status}) without reporting; the command may have killed it and some of its processes may remain; check that the binary calls supervisor::run_if_supervisor() first in main"
    )]
    SupervisorDied { exe: PathBuf, status: String },
    #[error(
        "the exec supervisor did not finish {grace:?} after the timeout and was killed; some of the command's processes may remain"
    )]
    SupervisorUnresponsive { grace: Duration },
}

/// Whether `exec_cmd` in `workspace-write` mode gets Landlock on this kernel. Probed once.
pub fn landlock_status() -> Confinement {
    static STATUS: OnceLock<Confinement> = OnceLock::new();
    STATUS.get_or_init(supervisor::probe_confinement).clone()
}

/// Runs one command under a fresh supervisor. Dropping the future cancels the call: the
/// supervisor gets SIGTERM (and sees its socket close) and kills the whole tree.
pub async fn run(req: ExecRequest) -> Result<ExecOutcome, ExecError> {
    let line = encode_request(&req)?;
    let started = Instant::now();
    let (ours, theirs) = UnixStream::pair().map_err(|source| ExecError::Io {
        what: "create the supervisor's control socket",
        source,
    })?;
    let mut command = tokio::process::Command::new(&req.supervisor_exe);
    command
        .arg(SUPERVISOR_ARG)
        .arg(std::process::id().to_string())
        .stdin(Stdio::from(OwnedFd::from(theirs)))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (name, _) in std::env::vars_os() {
        let passed = req.pass_env.iter().any(|p| OsStr::new(p) == name);
        if (is_secret_env(&name) && !passed) || SESSION_ENV.iter().any(|s| OsStr::new(s) == name) {
            command.env_remove(name);
        }
    }
    command.env(IN_EXEC_ENV, "1");
    // `less` (a `safe` read) runs code from `LESSOPEN`, which a lesskey file the model can
    // write (`~/.lesskey`, `$XDG_CONFIG_HOME/lesskey`) may set in its `#env` section: secure
    // mode ignores it (the environment wins over lesskey files), and the named variables go.
    for name in LESS_ENV {
        command.env_remove(name);
    }
    command.env("LESSSECURE", "1");
    if req.git_safe {
        command.env("GIT_CONFIG_COUNT", SAFE_GIT_CONFIG.len().to_string());
        for (i, (key, value)) in SAFE_GIT_CONFIG.iter().enumerate() {
            command.env(format!("GIT_CONFIG_KEY_{i}"), key);
            command.env(format!("GIT_CONFIG_VALUE_{i}"), value);
        }
        for (key, value) in SAFE_GIT_ENV {
            command.env(key, value);
        }
    }
    let child = command.spawn().map_err(|source| ExecError::Spawn {
        exe: req.supervisor_exe.clone(),
        source,
    })?;
    let mut guard = SupervisorGuard { child };
    // A fresh socket's buffer holds the whole request (the command is under 128 KiB), so this
    // does not block. If the supervisor is already gone, its missing report says so below.
    let _ = (&ours).write_all(&line);

    let (Some(mut stdout), Some(mut stderr)) =
        (guard.child.stdout.take(), guard.child.stderr.take())
    else {
        return Err(ExecError::Supervisor(
            "the supervisor's output pipes were not set up; this is a bug".to_owned(),
        ));
    };
    let mut capture = Capture::new(req.max_output);
    let mut out_buf = vec![0u8; 64 * 1024];
    let mut err_buf = vec![0u8; 64 * 1024];
    let (mut out_open, mut err_open) = (true, true);
    let mut exit: Option<ExitStatus> = None;
    let backstop = tokio::time::sleep(req.timeout.saturating_add(BACKSTOP_GRACE));
    tokio::pin!(backstop);
    let mut escalations = 0u8;
    let mut cancel_sent = false;
    let pipe_grace = tokio::time::sleep(Duration::from_secs(86_400 * 365));
    tokio::pin!(pipe_grace);

    while out_open || err_open || exit.is_none() {
        tokio::select! {
            read = stdout.read(&mut out_buf), if out_open => match read {
                Ok(0) | Err(_) => out_open = false,
                Ok(n) => capture.push(Stream::Stdout, &out_buf[..n]),
            },
            read = stderr.read(&mut err_buf), if err_open => match read {
                Ok(0) | Err(_) => err_open = false,
                Ok(n) => capture.push(Stream::Stderr, &err_buf[..n]),
            },
            status = guard.child.wait(), if exit.is_none() => {
                let status = status.map_err(|source| ExecError::Io {
                    what: "wait for the exec supervisor",
                    source,
                })?;
                exit = Some(status);
                pipe_grace.as_mut().reset(tokio::time::Instant::now() + PIPE_GRACE);
            },
            () = &mut backstop, if exit.is_none() => {
                // The supervisor should have reported long ago. Ask again, then insist.
                escalations += 1;
                match escalations {
                    1 => guard.terminate(),
                    2 => {
                        let _ = guard.child.start_kill();
                    }
                    _ => return Err(ExecError::SupervisorUnresponsive { grace: BACKSTOP_GRACE }),
                }
                backstop.as_mut().reset(tokio::time::Instant::now() + Duration::from_secs(5));
            },
            () = req.cancel.cancelled(), if exit.is_none() && !cancel_sent => {
                cancel_sent = true;
                guard.terminate();
            },
            () = &mut pipe_grace, if exit.is_some() => break,
        }
    }
    let duration = started.elapsed();
    let (stdout, stderr, truncated_bytes) = capture.finish();
    let status = exit.map(|s| s.to_string()).unwrap_or_default();

    match read_report(&ours) {
        Some(Report::Finished {
            exit_code,
            signal,
            timed_out,
            cancelled,
            leftover,
            confinement,
        }) => Ok(ExecOutcome {
            exit_code,
            signal,
            timed_out,
            cancelled,
            stdout,
            stderr,
            truncated_bytes,
            confinement,
            duration,
            timeout: req.timeout,
            leftover_processes: leftover,
            network_off: req.isolation.as_ref().is_some_and(|i| !i.network),
            not_isolated: None,
            quarantined: Vec::new(),
        }),
        Some(Report::Failed { error }) => Err(ExecError::Supervisor(error)),
        None => Err(ExecError::SupervisorDied {
            exe: req.supervisor_exe.clone(),
            status,
        }),
    }
}

fn encode_request(req: &ExecRequest) -> Result<Vec<u8>, ExecError> {
    if req.command.len() > MAX_COMMAND_BYTES {
        return Err(ExecError::CommandTooLong {
            len: req.command.len(),
            max: MAX_COMMAND_BYTES,
        });
    }
    if req.command.contains('\0') {
        return Err(ExecError::CommandHasNul);
    }
    if req.timeout.is_zero() {
        return Err(ExecError::ZeroTimeout);
    }
    let problem = if !req.cwd.is_absolute() {
        Some("is not an absolute path")
    } else if !req.cwd.is_dir() {
        Some("is not an existing directory")
    } else {
        None
    };
    if let Some(problem) = problem {
        return Err(ExecError::BadCwd {
            path: req.cwd.clone(),
            problem,
        });
    }
    let paths = std::iter::once(&req.cwd).chain(req.confine_writes.iter().flatten());
    if let Some(path) = paths.into_iter().find(|p| p.to_str().is_none()) {
        return Err(ExecError::NonUtf8Path { path: path.clone() });
    }
    let request = Request {
        version: env!("CARGO_PKG_VERSION").to_string(),
        command: req.command.clone(),
        cwd: req.cwd.clone(),
        timeout_ms: u64::try_from(req.timeout.as_millis())
            .unwrap_or(u64::MAX)
            .max(1),
        confine_writes: req.confine_writes.clone(),
        shell: req.shell.clone(),
        isolation: req.isolation.clone(),
    };
    let mut line = serde_json::to_vec(&request).map_err(|e| ExecError::Io {
        what: "encode the supervisor request",
        source: std::io::Error::other(e),
    })?;
    line.push(b'\n');
    Ok(line)
}

/// Variables that look like secrets (DESIGN §5.2): the command's output goes to a model on
/// someone else's server, and `echo $GITHUB_TOKEN` needs no file.
pub fn is_secret_env(name: &OsStr) -> bool {
    let name = name.to_string_lossy().to_ascii_uppercase();
    const PARTS: &[&str] = &[
        "TOKEN",
        "SECRET",
        "KEY",
        "PASSWORD",
        "PASSWD",
        "PASSPHRASE",
        "CREDENTIAL",
        "AUTH",
        "COOKIE",
        "SESSION_ID",
        "DATABASE_URL",
        "_PAT",
        "_PASS",
        "_PWD",
        "PRIVATE",
    ];
    const PREFIXES: &[&str] = &[
        "AWS_",
        "AZURE_",
        "ARM_",
        "GOOGLE_",
        "GCP_",
        "GCLOUD_",
        "CLOUDSDK_",
        "DIGITALOCEAN_",
        "HCLOUD_",
        "OS_",
        "VAULT_",
    ];
    // `OLDPWD`/`PWD` end in `PWD` but are folders, not passwords.
    (PARTS.iter().any(|p| name.contains(p)) && !matches!(name.as_str(), "PWD" | "OLDPWD"))
        || PREFIXES.iter().any(|p| name.starts_with(p))
        || name.ends_with("_DSN")
}

/// Reads whatever the (exited) supervisor left on the socket; the last line is its report.
fn read_report(ours: &UnixStream) -> Option<Report> {
    ours.set_nonblocking(true).ok()?;
    let mut data = Vec::new();
    let mut buf = [0u8; 4096];
    while data.len() < MAX_REPORT_BYTES {
        match (&*ours).read(&mut buf) {
            Ok(0) => break,
            Ok(n) => data.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
    let line = data
        .split(|b| *b == b'\n')
        .rev()
        .find(|line| !line.is_empty())?;
    serde_json::from_slice(line).ok()
}

/// Owns the supervisor while the call runs; if the call is dropped first, tells it to stop.
struct SupervisorGuard {
    child: tokio::process::Child,
}

impl SupervisorGuard {
    fn terminate(&self) {
        // `id()` is `None` once the child was reaped, so the pid cannot have been recycled.
        if let Some(pid) = self.child.id().and_then(|p| i32::try_from(p).ok()) {
            if let Some(pid) = rustix::process::Pid::from_raw(pid) {
                let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
            }
        }
    }
}

impl Drop for SupervisorGuard {
    fn drop(&mut self) {
        // SIGTERM, never SIGKILL: a killed supervisor could not clean up its tree.
        self.terminate();
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stream {
    Stdout,
    Stderr,
}

/// Keeps the head and tail of both streams within one budget, in bounded memory.
///
/// The first half of the budget is filled first-come by whichever stream writes; after that each
/// stream keeps only its latest bytes in a ring of half the budget, and [`Capture::finish`]
/// shares that half between the two tails.
struct Capture {
    head_left: usize,
    tail_budget: usize,
    streams: [StreamCapture; 2],
}

#[derive(Default)]
struct StreamCapture {
    head: Vec<u8>,
    tail: std::collections::VecDeque<u8>,
    total: u64,
}

impl Capture {
    fn new(max: usize) -> Self {
        Capture {
            head_left: max / 2,
            tail_budget: max - max / 2,
            streams: [StreamCapture::default(), StreamCapture::default()],
        }
    }

    fn push(&mut self, stream: Stream, data: &[u8]) {
        let s = &mut self.streams[stream as usize];
        s.total += data.len() as u64;
        let to_head = self.head_left.min(data.len());
        s.head.extend_from_slice(&data[..to_head]);
        self.head_left -= to_head;
        let rest = &data[to_head..];
        let cap = self.tail_budget;
        if rest.len() >= cap {
            s.tail.clear();
            s.tail.extend(&rest[rest.len() - cap..]);
        } else {
            s.tail.extend(rest);
            let excess = s.tail.len().saturating_sub(cap);
            s.tail.drain(..excess);
        }
    }

    /// `(stdout, stderr, bytes cut)`.
    fn finish(self) -> (String, String, u64) {
        let [out, err] = self.streams;
        let (keep_out, keep_err) = share(self.tail_budget, out.tail.len(), err.tail.len());
        let (out_text, out_cut) = out.render(keep_out);
        let (err_text, err_cut) = err.render(keep_err);
        (out_text, err_text, out_cut + err_cut)
    }
}

/// Splits `budget` between two tails of lengths `a` and `b`, fairly, wasting nothing.
fn share(budget: usize, a: usize, b: usize) -> (usize, usize) {
    if a + b <= budget {
        return (a, b);
    }
    let half = budget / 2;
    if a <= half {
        (a, budget - a)
    } else if b <= half {
        (budget - b, b)
    } else {
        (budget - half, half)
    }
}

impl StreamCapture {
    fn render(self, keep_tail: usize) -> (String, u64) {
        let kept = self.head.len() + keep_tail;
        let cut = self.total - kept as u64;
        let mut text = String::from_utf8_lossy(&self.head).into_owned();
        if cut > 0 {
            if !text.is_empty() && !text.ends_with('\n') {
                text.push('\n');
            }
            let _ = writeln!(
                text,
                "[... {cut} bytes cut here: output exceeded the cap ...]"
            );
        }
        let skip = self.tail.len() - keep_tail;
        let tail: Vec<u8> = self.tail.into_iter().skip(skip).collect();
        text.push_str(&String::from_utf8_lossy(&tail));
        (text, cut)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn share_is_fair_and_exact() {
        // (budget, a, b) -> (keep a, keep b)
        let cases = [
            (10, 3, 4, (3, 4)),
            (10, 3, 20, (3, 7)),
            (10, 20, 2, (8, 2)),
            (10, 20, 20, (5, 5)),
            (11, 20, 20, (6, 5)),
            (10, 0, 0, (0, 0)),
        ];
        for (budget, a, b, expected) in cases {
            assert_eq!(share(budget, a, b), expected, "{budget} {a} {b}");
        }
    }

    #[test]
    fn capture_keeps_head_and_tail_of_both_streams() {
        let mut c = Capture::new(20);
        c.push(Stream::Stdout, b"0123456789abcdefghij");
        c.push(Stream::Stderr, b"ERR");
        let (out, err, cut) = c.finish();
        // Head: first 10 bytes of stdout. Tail budget 10: stderr keeps its 3, stdout 7.
        assert!(out.starts_with("0123456789\n[... 3 bytes cut"), "{out}");
        assert!(out.ends_with("defghij"), "{out}");
        assert_eq!(err, "ERR");
        assert_eq!(cut, 3);
    }

    #[test]
    fn capture_under_the_cap_keeps_everything() {
        let mut c = Capture::new(100);
        c.push(Stream::Stdout, b"hello ");
        c.push(Stream::Stderr, b"oops");
        c.push(Stream::Stdout, b"world");
        assert_eq!(c.finish(), ("hello world".to_owned(), "oops".to_owned(), 0));
    }

    #[test]
    fn secret_env_names() {
        let cases = [
            ("GROUND_LINK_TOKEN", true),
            ("ground_link_bridge_token", true),
            ("GROUND_LINK_DIR", false),
            ("TOKEN", true),
            ("GITHUB_TOKEN", true),
            ("AWS_ACCESS_KEY_ID", true),
            ("AZURE_CLIENT_ID", true),
            ("GOOGLE_APPLICATION_CREDENTIALS", true),
            ("PGPASSWORD", true),
            ("OPENAI_API_KEY", true),
            ("SENTRY_DSN", true),
            ("PATH", false),
            ("HOME", false),
            ("LANG", false),
            ("CARGO_TARGET_DIR", false),
        ];
        for (name, secret) in cases {
            assert_eq!(is_secret_env(OsStr::new(name)), secret, "{name}");
        }
    }

    #[test]
    fn render_status_lines() {
        let base = ExecOutcome {
            exit_code: Some(0),
            signal: None,
            timed_out: false,
            cancelled: false,
            stdout: "out".to_owned(),
            stderr: String::new(),
            truncated_bytes: 0,
            confinement: Confinement::NotRequested,
            duration: Duration::from_millis(5),
            timeout: DEFAULT_TIMEOUT,
            leftover_processes: 0,
            network_off: false,
            not_isolated: None,
            quarantined: Vec::new(),
        };
        let with = |f: &dyn Fn(&mut ExecOutcome)| {
            let mut o = base.clone();
            f(&mut o);
            o.render().0
        };
        let cases: [(String, &str); 8] = [
            (
                with(&|o| {
                    o.network_off = true;
                    o.exit_code = Some(7);
                }),
                "out\n[exit code: 7]\n[network: off — the command ran without network access; if it needed the network, ask the person to allow it]\n",
            ),
            (with(&|o| o.network_off = true), "out\n[exit code: 0]\n"),
            (with(&|_| {}), "out\n[exit code: 0]\n"),
            (
                with(&|o| {
                    o.exit_code = Some(2);
                    o.stderr = "bad".to_owned();
                }),
                "out\n[stderr]\nbad\n[exit code: 2]\n",
            ),
            (
                with(&|o| {
                    o.exit_code = None;
                    o.signal = Some(9);
                }),
                "out\n[killed by signal 9 (SIGKILL)]\n",
            ),
            (
                with(&|o| {
                    o.timed_out = true;
                    o.signal = Some(9);
                }),
                "out\n[timed out after 60 s; the whole process tree was killed]\n",
            ),
            (with(&|o| o.stdout.clear()), "(no output)\n[exit code: 0]\n"),
            (
                with(&|o| o.confinement = Confinement::Unavailable("no Landlock".to_owned())),
                "out\n[exit code: 0]\n[warning: the command's writes were not confined to the sandbox: no Landlock]\n",
            ),
        ];
        for (got, expected) in cases {
            assert_eq!(got, expected);
        }
    }
}
