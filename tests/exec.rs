//! Suite: exec. `exec_cmd` through the real supervisor binary: exit codes, signals, timeouts
//! that leave no process behind, cancel, output caps, Landlock.

use std::io::{BufRead, BufReader, Write};
use std::os::fd::OwnedFd;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use ground_link::tools::exec::{
    self, Confinement, ExecError, ExecOutcome, ExecRequest, MAX_COMMAND_BYTES, MAX_OUTPUT,
};

fn supervisor_exe() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_ground-link"))
}

/// A directory that is NOT under /tmp or another always-writable temp dir, so Landlock tests
/// can tell "inside the root" from "outside".
fn scratch_dir() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("exec-")
        .tempdir_in(crate::util::scratch_parent())
        .unwrap()
}

fn request(command: &str, cwd: &Path) -> ExecRequest {
    ExecRequest::new(command, cwd, supervisor_exe())
}

/// A sleep duration no other process on the machine uses; it shows up in argv (of `sleep` and
/// of every `sh -c` that mentions it), so `/proc/*/cmdline` finds everything the call started.
fn marker() -> String {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    format!(
        "31337{}.{:03}",
        std::process::id() % 100_000,
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// Live (not yet reaped) processes whose command line contains `marker`.
fn processes_with(marker: &str) -> Vec<String> {
    let me = std::process::id().to_string();
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name == me || !name.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if cmdline.contains(marker) {
            found.push(format!("{name}: {cmdline}"));
        }
    }
    found
}

async fn run_ok(req: ExecRequest) -> ExecOutcome {
    exec::run(req).await.unwrap()
}

#[tokio::test]
async fn exit_codes_and_streams_come_through() {
    let dir = scratch_dir();
    // (command, exit code, stdout, stderr)
    let cases = [
        ("true", 0, "", ""),
        ("false", 1, "", ""),
        ("exit 3", 3, "", ""),
        ("echo out; echo err >&2; exit 2", 2, "out\n", "err\n"),
        ("printf 'a\\nb'", 0, "a\nb", ""),
        ("cat", 0, "", ""),
        // SIGPIPE is back to its default for the command: `yes` dies quietly.
        ("yes | head -c 4", 0, "y\ny\n", ""),
        ("readlink /proc/self/fd/0", 0, "/dev/null\n", ""),
        (
            "( : </dev/tty ) 2>/dev/null && echo tty || echo no-tty",
            0,
            "no-tty\n",
            "",
        ),
        ("nonexistent-command-xyz", 127, "", "not found"),
    ];
    for (command, code, stdout, stderr) in cases {
        let out = run_ok(request(command, dir.path())).await;
        assert_eq!(out.exit_code, Some(code), "{command}: {out:?}");
        assert_eq!(out.signal, None, "{command}");
        assert!(!out.timed_out, "{command}");
        assert_eq!(out.stdout, stdout, "{command}");
        if stderr.is_empty() {
            assert_eq!(out.stderr, "", "{command}");
        } else {
            assert!(out.stderr.contains(stderr), "{command}: {:?}", out.stderr);
        }
        assert_eq!(out.truncated_bytes, 0, "{command}");
        assert_eq!(out.confinement, Confinement::NotRequested, "{command}");
    }
}

#[tokio::test]
async fn runs_in_the_given_directory() {
    let dir = scratch_dir();
    std::fs::write(dir.path().join("here.txt"), "x").unwrap();
    let out = run_ok(request("pwd; ls", dir.path())).await;
    let canonical = dir.path().canonicalize().unwrap();
    assert_eq!(out.stdout, format!("{}\nhere.txt\n", canonical.display()));
}

#[tokio::test]
async fn an_enormous_timeout_means_no_timeout() {
    let dir = scratch_dir();
    let mut req = request("echo ok", dir.path());
    req.timeout = Duration::MAX;
    let out = run_ok(req).await;
    assert_eq!(
        (out.exit_code, out.timed_out, &*out.stdout),
        (Some(0), false, "ok\n")
    );
}

#[tokio::test]
async fn signal_death_is_reported() {
    let dir = scratch_dir();
    // (command, signal). SIGTERM also proves the supervisor's blocked mask is not inherited.
    let cases = [
        ("kill -KILL $$", 9),
        ("kill -TERM $$", 15),
        ("kill -SEGV $$", 11),
    ];
    for (command, signal) in cases {
        let out = run_ok(request(command, dir.path())).await;
        assert_eq!(out.signal, Some(signal), "{command}: {out:?}");
        assert_eq!(out.exit_code, None, "{command}");
        assert!(!out.timed_out, "{command}");
        let (text, _) = out.render();
        assert!(
            text.contains(&format!("[killed by signal {signal} (SIG")),
            "{text}"
        );
    }
}

#[tokio::test]
async fn rendered_text_has_sections_and_status() {
    let dir = scratch_dir();
    let out = run_ok(request("echo hello; echo oops >&2; exit 2", dir.path())).await;
    let (text, truncated) = out.render();
    assert_eq!(text, "hello\n[stderr]\noops\n[exit code: 2]\n");
    assert!(!truncated);
}

/// Every way a command can try to outlive its timeout; after each, nothing tagged remains.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timeout_kills_the_whole_tree() {
    let dir = scratch_dir();
    let timeout = Duration::from_secs(1);
    // (name, command with {M} for the marker)
    let cases = [
        ("plain sleep", "sleep {M}"),
        ("setsid child", "setsid sleep {M} & sleep {M}"),
        ("double fork", "(sh -c 'sleep {M} &' &); sleep {M}"),
        ("nohup", "nohup sleep {M} >/dev/null 2>&1 & sleep {M}"),
        (
            "ignores TERM and HUP",
            "trap '' TERM HUP; sh -c \"trap '' TERM HUP; sleep {M}\" & wait",
        ),
        ("fork loop", "while :; do sleep {M} & done"),
        (
            "setsid fork loop",
            "while :; do setsid sleep {M} & sleep 0.01; done",
        ),
        (
            "new session holding the pipes",
            "setsid sh -c 'sleep {M}; echo late' & wait",
        ),
    ];
    for (name, template) in cases {
        let m = marker();
        let command = template.replace("{M}", &m);
        let mut req = request(&command, dir.path());
        req.timeout = timeout;
        let started = Instant::now();
        let out = run_ok(req).await;
        let elapsed = started.elapsed();
        eprintln!(
            "{name}: finished {:?} after the deadline",
            elapsed.saturating_sub(timeout)
        );
        assert!(out.timed_out, "{name}: {out:?}");
        assert_eq!(out.leftover_processes, 0, "{name}");
        assert!(
            elapsed < timeout + Duration::from_millis(1500),
            "{name}: took {elapsed:?} for a {timeout:?} timeout"
        );
        let left = processes_with(&m);
        assert!(left.is_empty(), "{name}: processes survived: {left:#?}");
        let (text, _) = out.render();
        assert!(
            text.ends_with("[timed out after 1 s; the whole process tree was killed]\n"),
            "{name}: {text}"
        );
    }
}

/// Background jobs and daemons do not outlive a normal exit, and the call returns promptly even
/// when they hold the output pipes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn normal_exit_kills_leftovers_and_returns_promptly() {
    let dir = scratch_dir();
    let cases = [
        ("background job", "sleep {M} & echo started"),
        (
            "silenced background job",
            "sleep {M} >/dev/null 2>&1 & echo started",
        ),
        ("setsid daemon", "setsid sleep {M} & echo started"),
        (
            "double-forked daemon",
            "(setsid sh -c 'sleep {M} &' &); echo started",
        ),
        ("forking chain", "f() { sleep {M} & f & }; f; echo started"),
    ];
    for (name, template) in cases {
        let m = marker();
        let started = Instant::now();
        let out = run_ok(request(&template.replace("{M}", &m), dir.path())).await;
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{name}: {:?}",
            started.elapsed()
        );
        assert_eq!(out.exit_code, Some(0), "{name}: {out:?}");
        assert_eq!(out.stdout, "started\n", "{name}");
        assert!(!out.timed_out, "{name}");
        let left = processes_with(&m);
        assert!(left.is_empty(), "{name}: processes survived: {left:#?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_the_future_kills_the_tree() {
    let dir = scratch_dir();
    let m = marker();
    let command = format!("setsid sleep {m} & (sh -c 'sleep {m} &' &); sleep {m}");
    let call = exec::run(request(&command, dir.path()));
    // Cancel mid-run once the tree is surely up.
    let result = tokio::time::timeout(Duration::from_millis(700), call).await;
    assert!(result.is_err(), "the call should still have been running");
    let deadline = Instant::now() + Duration::from_secs(3);
    let mut left = processes_with(&m);
    while !left.is_empty() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
        left = processes_with(&m);
    }
    assert!(left.is_empty(), "processes survived the cancel: {left:#?}");
}

/// Polls until `done` holds or `limit` passes; returns whether it held.
fn eventually(limit: Duration, mut done: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    while !done() {
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    true
}

/// The engine dying (parent-death signal) or dropping its end of the control socket ends the
/// call too. A shell stands in for the engine: the supervisor is its child, as in `exec::run`.
#[test]
fn engine_death_kills_the_tree() {
    // (case, kill the engine instead of closing the socket)
    let cases = [("engine killed", true), ("control socket closed", false)];
    for (name, kill_engine) in cases {
        let dir = scratch_dir();
        let m = marker();
        let (ours, theirs) = UnixStream::pair().unwrap();
        // A non-interactive shell gives background jobs /dev/null as stdin, so pass the socket
        // through fd 3.
        let mut engine = Command::new("/bin/sh")
            .arg("-c")
            .arg("exec 3<&0; \"$0\" __ground-link-supervise $$ <&3 3<&- & wait")
            .arg(supervisor_exe())
            .stdin(Stdio::from(OwnedFd::from(theirs)))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let request = serde_json::json!({
            "version": env!("CARGO_PKG_VERSION"),
            "command": format!("setsid sleep {m} & sleep {m}"),
            "cwd": dir.path(),
            "timeoutMs": 60_000,
            "confineWrites": null,
            "shell": "/bin/bash",
        });
        (&ours)
            .write_all(format!("{request}\n").as_bytes())
            .unwrap();
        assert!(
            eventually(Duration::from_secs(5), || processes_with(&m).len() >= 2),
            "{name}: the command did not start"
        );
        let supervisor_tag = format!("__ground-link-supervise {}", engine.id());
        assert_eq!(processes_with(&supervisor_tag).len(), 1, "{name}");
        if kill_engine {
            engine.kill().unwrap();
        } else {
            ours.shutdown(std::net::Shutdown::Both).unwrap();
        }
        assert!(
            eventually(Duration::from_secs(3), || processes_with(&m).is_empty()),
            "{name}: processes survived: {:#?}",
            processes_with(&m)
        );
        assert!(
            eventually(Duration::from_secs(3), || processes_with(&supervisor_tag)
                .is_empty()),
            "{name}: the supervisor lingers"
        );
        if kill_engine {
            // Nobody listens in real life, but the report still says what happened.
            let mut line = String::new();
            BufReader::new(&ours).read_line(&mut line).unwrap();
            assert!(line.contains("\"cancelled\":true"), "{name}: {line}");
        }
        engine.wait().unwrap();
    }
}

#[tokio::test]
async fn output_flood_keeps_head_and_tail() {
    let dir = scratch_dir();
    let total: u64 = 50_000_000;
    let command = format!("yes | head -c {total}");
    let out = run_ok(request(&command, dir.path())).await;
    assert_eq!(out.exit_code, Some(0));
    assert_eq!(out.truncated_bytes, total - MAX_OUTPUT as u64);
    assert!(out.stdout.starts_with("y\ny\ny\n"));
    assert!(out.stdout.ends_with("y\ny\n"));
    let cut_line = format!("[... {} bytes cut here", total - MAX_OUTPUT as u64);
    assert!(out.stdout.contains(&cut_line));
    assert!(out.stdout.len() <= MAX_OUTPUT + 100, "{}", out.stdout.len());
    let (text, truncated) = out.render();
    assert!(truncated);
    assert!(text.ends_with("y\n[exit code: 0]\n"));
}

#[tokio::test]
async fn both_streams_share_the_cap() {
    let dir = scratch_dir();
    let command = "head -c 3000 /dev/zero | tr '\\0' o; head -c 3000 /dev/zero | tr '\\0' e >&2";
    let o = "o".repeat(3000);
    // Cap 4000: stdout fills the 2000-byte head first; the 2000-byte tail budget goes 1000 to
    // stdout's remaining bytes and 1000 to the end of stderr.
    let cut = "[... 2000 bytes cut here: output exceeded the cap ...]\n";
    // (cap, stdout, stderr, bytes cut)
    let cases = [
        (100_000, o.clone(), "e".repeat(3000), 0),
        (4000, o.clone(), format!("{cut}{}", "e".repeat(1000)), 2000),
    ];
    for (cap, stdout, stderr, truncated) in cases {
        let mut req = request(command, dir.path());
        req.max_output = cap;
        let out = run_ok(req).await;
        assert_eq!(out.stdout, stdout, "cap {cap}");
        assert_eq!(out.stderr, stderr, "cap {cap}");
        assert_eq!(out.truncated_bytes, truncated, "cap {cap}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn endless_output_until_timeout_stays_bounded() {
    let dir = scratch_dir();
    let mut req = request("yes", dir.path());
    req.timeout = Duration::from_secs(2);
    let out = run_ok(req).await;
    assert!(out.timed_out);
    assert!(
        out.truncated_bytes > 10 * MAX_OUTPUT as u64,
        "{}",
        out.truncated_bytes
    );
    assert!(out.stdout.len() <= MAX_OUTPUT + 100);
    assert!(out.stdout.starts_with("y\n") && out.stdout.ends_with("y\n"));
    // Hundreds of MB went through; the process never held more than a few MB of it.
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let peak_kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap();
    assert!(peak_kb < 256 * 1024, "peak RSS {peak_kb} kB");
}

#[tokio::test]
async fn invalid_utf8_is_replaced() {
    let dir = scratch_dir();
    let out = run_ok(request("printf 'a\\377b'", dir.path())).await;
    assert_eq!(out.stdout, "a\u{FFFD}b");
}

#[tokio::test]
async fn bad_requests_are_refused_before_running() {
    let dir = scratch_dir();
    let missing = dir.path().join("missing");
    let long = "x".repeat(MAX_COMMAND_BYTES + 1);
    let mut zero = request("true", dir.path());
    zero.timeout = Duration::ZERO;
    type Expect = fn(&ExecError) -> bool;
    let cases: Vec<(ExecRequest, Expect)> = vec![
        (request("true", &missing), |e| {
            matches!(e, ExecError::BadCwd { .. })
        }),
        (request("true", Path::new("relative")), |e| {
            matches!(e, ExecError::BadCwd { .. })
        }),
        (request("echo \0", dir.path()), |e| {
            matches!(e, ExecError::CommandHasNul)
        }),
        (request(&long, dir.path()), |e| {
            matches!(e, ExecError::CommandTooLong { .. })
        }),
        (zero, |e| matches!(e, ExecError::ZeroTimeout)),
        (
            ExecRequest::new("true", dir.path(), dir.path().join("no-such-binary")),
            |e| matches!(e, ExecError::Spawn { .. }),
        ),
        (
            // A binary that is not a supervisor never reports.
            ExecRequest::new("true", dir.path(), "/bin/true"),
            |e| matches!(e, ExecError::SupervisorDied { .. }),
        ),
    ];
    for (req, expected) in cases {
        let command = req.command.chars().take(20).collect::<String>();
        let err = exec::run(req).await.unwrap_err();
        assert!(expected(&err), "{command}: {err}");
        assert!(!err.to_string().is_empty());
    }
}

#[test]
fn landlock_status_is_cached_and_meaningful() {
    let first = exec::landlock_status();
    assert_eq!(first, exec::landlock_status());
    match &first {
        Confinement::Landlock { abi } => assert!(*abi >= 3),
        Confinement::Unavailable(why) => assert!(!why.is_empty()),
        Confinement::NotRequested => panic!("the probe never answers NotRequested"),
    }
}

#[tokio::test]
async fn landlock_confines_writes_to_the_root_and_temp_dirs() {
    let root = scratch_dir();
    let outside = scratch_dir();
    let root_path = root.path().canonicalize().unwrap();
    let outside_path = outside.path().canonicalize().unwrap();
    std::fs::write(outside_path.join("readme"), "outside content\n").unwrap();
    let tmp_name = format!("/tmp/gl-exec-landlock-{}", marker());
    let o = outside_path.display().to_string();
    let status = exec::landlock_status();
    let enforced = matches!(status, Confinement::Landlock { .. });
    if !enforced {
        eprintln!("Landlock unavailable here ({status:?}): checking only that it is reported");
    }
    // (command, confined, should succeed)
    let cases = [
        ("touch inside", true, true),
        ("mkdir -p sub/dir && echo x > sub/dir/f", true, true),
        (&*format!("touch {o}/new"), true, false),
        (&*format!("echo x >> {o}/readme"), true, false),
        (&*format!("truncate -s 0 {o}/readme"), true, false),
        (&*format!("rm {o}/readme"), true, false),
        (&*format!("mkdir {o}/d"), true, false),
        (&*format!("cat {o}/readme"), true, true),
        (
            &*format!("echo t > {tmp_name} && rm {tmp_name}"),
            true,
            true,
        ),
        ("echo x > /dev/null", true, true),
        ("echo to-stderr > /dev/stderr", true, true),
        (&*format!("touch {o}/unconfined"), false, true),
    ];
    for (command, confined, succeeds) in cases {
        let mut req = request(command, &root_path);
        if confined {
            req.confine_writes = Some(vec![root_path.clone()]);
        }
        let out = run_ok(req).await;
        if !confined {
            assert_eq!(out.confinement, Confinement::NotRequested, "{command}");
            assert_eq!(out.exit_code, Some(0), "{command}: {out:?}");
            continue;
        }
        assert_eq!(out.confinement, status, "{command}");
        if !enforced {
            continue;
        }
        if succeeds {
            assert_eq!(out.exit_code, Some(0), "{command}: {out:?}");
        } else {
            assert_ne!(out.exit_code, Some(0), "{command} should fail: {out:?}");
            assert!(
                out.stderr.contains("Permission denied"),
                "{command}: {:?}",
                out.stderr
            );
        }
    }
    assert!(root_path.join("inside").exists());
    assert!(root_path.join("sub/dir/f").exists());
    assert!(outside_path.join("unconfined").exists());
    if enforced {
        assert!(!outside_path.join("new").exists());
        assert!(!outside_path.join("d").exists());
        assert_eq!(
            std::fs::read_to_string(outside_path.join("readme")).unwrap(),
            "outside content\n"
        );
    }
}

/// With signal scoping (Landlock ABI 6+), a confined command cannot kill its supervisor to
/// escape the clean-up.
#[tokio::test]
async fn confined_command_cannot_signal_its_supervisor() {
    let Confinement::Landlock { abi } = exec::landlock_status() else {
        eprintln!("no Landlock here; nothing to check");
        return;
    };
    if abi < 6 {
        eprintln!("Landlock ABI {abi} has no signal scoping; nothing to check");
        return;
    }
    let root = scratch_dir();
    let root_path = root.path().canonicalize().unwrap();
    let m = marker();
    let command = format!("sleep {m} & kill -KILL $PPID; echo kill=$?");
    let mut req = request(&command, &root_path);
    req.confine_writes = Some(vec![root_path.clone()]);
    let out = run_ok(req).await;
    assert_eq!(out.stdout, "kill=1\n", "{out:?}");
    assert!(processes_with(&m).is_empty());
}
