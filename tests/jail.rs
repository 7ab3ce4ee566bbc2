//! Suite: sandbox escapes. Every tool is attacked with `..`, absolute paths, sibling-prefix
//! roots, symlinked files, directories and parents, dangling links, links to `/`,
//! `/proc/self/root`, NUL bytes and loops — with every question answered "allow", so only the
//! jail stands in the way. Nothing outside the root may be read or changed.

use std::os::unix::fs::symlink;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use ground_link::protocol::CallStatus;

use crate::util::{Fixture, call, snapshot_tree};

const SECRET: &str = "TOPSECRET-7c1f";

/// base/
///   root/            the sandbox
///     sub/inner.txt
///     link_out -> ../outside          (dir link pointing out)
///     file_link -> ../outside/secret.txt
///     dangling -> ../outside/new-by-link.txt
///     root_link -> /
///     loop_a -> loop_b, loop_b -> loop_a
///     sub/up -> ../..                  (points at base)
///     ok_link -> sub                   (inside: allowed)
///   root2/secret.txt  (sibling whose name has the root as a prefix)
///   outside/secret.txt
fn fixture() -> Fixture {
    let f = Fixture::new();
    f.put("outside/secret.txt", &format!("{SECRET}\n"));
    f.put("root2/secret.txt", &format!("{SECRET}\n"));
    f.put("root/sub/inner.txt", "inner\n");
    f.put("root/readme.txt", "hello\n");
    let r = &f.root;
    symlink("../outside", r.join("link_out")).unwrap();
    symlink("../outside/secret.txt", r.join("file_link")).unwrap();
    symlink("../outside/new-by-link.txt", r.join("dangling")).unwrap();
    symlink("/", r.join("root_link")).unwrap();
    symlink("loop_b", r.join("loop_a")).unwrap();
    symlink("loop_a", r.join("loop_b")).unwrap();
    symlink("../..", r.join("sub/up")).unwrap();
    symlink("sub", r.join("ok_link")).unwrap();
    f
}

#[test]
fn escape_attempts_never_read_or_change_anything_outside() {
    let f = fixture();
    let engine = f.permissive();
    let base = f.base().display().to_string();
    let outside = format!("{base}/outside");
    let root2 = format!("{base}/root2");
    let before_outside = snapshot_tree(&f.base().join("outside"));
    let before_root2 = snapshot_tree(&f.base().join("root2"));

    // (tool, args) — each must not succeed in escaping. One line per case.
    let cases: Vec<(&str, String)> = vec![
        ("read_file", r#"{"path":"../outside/secret.txt"}"#.into()),
        ("read_file", format!(r#"{{"path":"{outside}/secret.txt"}}"#)),
        ("read_file", format!(r#"{{"path":"{root2}/secret.txt"}}"#)),
        ("read_file", r#"{"path":"../root2/secret.txt"}"#.into()),
        ("read_file", r#"{"path":"/etc/passwd"}"#.into()),
        ("read_file", r#"{"path":"link_out/secret.txt"}"#.into()),
        ("read_file", r#"{"path":"file_link"}"#.into()),
        ("read_file", r#"{"path":"root_link/etc/passwd"}"#.into()),
        (
            "read_file",
            r#"{"path":"/proc/self/root/etc/passwd"}"#.into(),
        ),
        (
            "read_file",
            r#"{"path":"/proc/self/cwd/Cargo.toml"}"#.into(),
        ),
        (
            "read_file",
            r#"{"path":"sub/up/outside/secret.txt"}"#.into(),
        ),
        (
            "read_file",
            r#"{"path":"sub/../../outside/secret.txt"}"#.into(),
        ),
        (
            "read_file",
            r#"{"path":"./sub/./../../outside/secret.txt"}"#.into(),
        ),
        (
            "read_file",
            r#"{"path":"ok_link/../../outside/secret.txt"}"#.into(),
        ),
        ("read_file", r#"{"path":"loop_a"}"#.into()),
        // Regression: a missing component then `..` used to skip checking what followed.
        (
            "read_file",
            r#"{"path":"nope/../link_out/secret.txt"}"#.into(),
        ),
        (
            "write_file",
            r#"{"path":"nope/../link_out/new.txt","content":"pwned"}"#.into(),
        ),
        (
            "read_file",
            r#"{"path":"readme.txt\u0000../../outside/secret.txt"}"#.into(),
        ),
        ("read_file", r#"{"path":"~/.bashrc"}"#.into()),
        ("list_dir", r#"{"path":".."}"#.into()),
        ("list_dir", r#"{"path":"link_out"}"#.into()),
        ("list_dir", r#"{"path":"root_link"}"#.into()),
        ("list_dir", r#"{"path":"/"}"#.into()),
        ("list_dir", r#"{"path":"sub/up"}"#.into()),
        ("list_dir", format!(r#"{{"path":"{root2}"}}"#)),
        ("list_dir", r#"{"path":"/proc/self/root"}"#.into()),
        ("glob", r#"{"pattern":"**/*","path":".."}"#.into()),
        ("glob", r#"{"pattern":"**/*","path":"link_out"}"#.into()),
        ("glob", r#"{"pattern":"**/secret*"}"#.into()),
        (
            "glob",
            r#"{"pattern":"**/*","path":"root_link/etc"}"#.into(),
        ),
        // The pattern matches the secret without containing it, so an echo of it is no leak.
        ("grep", r#"{"pattern":"TOP[S]ECRET"}"#.into()),
        ("grep", r#"{"pattern":"TOP[S]ECRET","path":".."}"#.into()),
        (
            "grep",
            r#"{"pattern":"TOP[S]ECRET","path":"link_out"}"#.into(),
        ),
        (
            "grep",
            r#"{"pattern":"TOP[S]ECRET","path":"file_link"}"#.into(),
        ),
        (
            "grep",
            r#"{"pattern":"TOP[S]ECRET","path":"sub/up"}"#.into(),
        ),
        (
            "write_file",
            r#"{"path":"../outside/new.txt","content":"pwned"}"#.into(),
        ),
        (
            "write_file",
            format!(r#"{{"path":"{outside}/new.txt","content":"pwned"}}"#),
        ),
        (
            "write_file",
            format!(r#"{{"path":"{root2}/new.txt","content":"pwned"}}"#),
        ),
        (
            "write_file",
            r#"{"path":"link_out/new.txt","content":"pwned"}"#.into(),
        ),
        (
            "write_file",
            r#"{"path":"link_out/deep/new.txt","content":"pwned"}"#.into(),
        ),
        (
            "write_file",
            r#"{"path":"file_link","content":"pwned"}"#.into(),
        ),
        (
            "write_file",
            r#"{"path":"file_link","content":"pwned","mode":"append"}"#.into(),
        ),
        (
            "write_file",
            r#"{"path":"dangling","content":"pwned"}"#.into(),
        ),
        (
            "write_file",
            r#"{"path":"root_link/tmp/gl-pwned","content":"pwned"}"#.into(),
        ),
        (
            "write_file",
            r#"{"path":"sub/up/outside/new.txt","content":"pwned"}"#.into(),
        ),
        (
            "write_file",
            r#"{"path":"loop_a/x","content":"pwned"}"#.into(),
        ),
        (
            "write_file",
            r#"{"path":"a\u0000b","content":"pwned"}"#.into(),
        ),
        (
            "edit_file",
            r#"{"path":"file_link","oldString":"TOPSECRET","newString":"x"}"#.into(),
        ),
        (
            "edit_file",
            r#"{"path":"../outside/secret.txt","oldString":"TOPSECRET","newString":"x"}"#.into(),
        ),
        (
            "edit_file",
            r#"{"path":"link_out/secret.txt","oldString":"TOPSECRET","newString":"x"}"#.into(),
        ),
        ("exec_cmd", r#"{"command":"ls","cwd":".."}"#.into()),
        ("exec_cmd", r#"{"command":"ls","cwd":"link_out"}"#.into()),
        // The static check sees an inside path; the OS sandbox must still stop the write.
        (
            "exec_cmd",
            r#"{"command":"cd .. && echo pwned > outside/evil.txt"}"#.into(),
        ),
        (
            "exec_cmd",
            r#"{"command":"cd link_out && echo pwned > evil2.txt"}"#.into(),
        ),
        (
            "exec_cmd",
            r#"{"command":"echo pwned > link_out/evil3.txt"}"#.into(),
        ),
        (
            "exec_cmd",
            r#"{"command":"d=..; echo pwned > $d/outside/evil4.txt"}"#.into(),
        ),
        (
            "exec_cmd",
            r#"{"command":"cp readme.txt ../outside/copied.txt"}"#.into(),
        ),
        (
            "exec_cmd",
            r#"{"command":"rm -f ../outside/secret.txt"}"#.into(),
        ),
    ];
    assert!(cases.len() >= 40);
    for (tool, args) in &cases {
        let json = format!(r#"{{"name":"{tool}","args":{args}}}"#);
        let result = call(&engine, &json);
        assert!(
            !result.output.contains(SECRET),
            "{json}: leaked the secret: {}",
            result.output
        );
        // Host paths may only appear where the model itself wrote them.
        if !args.contains(&base) {
            assert!(
                !result.output.contains(&base),
                "{json}: leaked a host path: {}",
                result.output
            );
        }
        if *tool != "grep" && *tool != "glob" && *tool != "exec_cmd" {
            assert_ne!(
                result.status,
                CallStatus::Success,
                "{json}: succeeded: {}",
                result.output
            );
        }
        assert_eq!(
            snapshot_tree(&f.base().join("outside")),
            before_outside,
            "{json}: changed outside/"
        );
        assert_eq!(
            snapshot_tree(&f.base().join("root2")),
            before_root2,
            "{json}: changed root2/"
        );
        assert!(
            !std::path::Path::new("/tmp/gl-pwned").exists(),
            "{json}: wrote /tmp via root_link"
        );
    }
}

#[test]
fn inside_links_and_plain_paths_still_work() {
    let f = fixture();
    let engine = f.permissive();
    for (json, want) in [
        (
            r#"{"name":"read_file","args":{"path":"ok_link/inner.txt"}}"#,
            "inner",
        ),
        (
            r#"{"name":"read_file","args":{"path":"sub/../readme.txt"}}"#,
            "hello",
        ),
        (
            r#"{"name":"list_dir","args":{"path":"sub"}}"#,
            "sub/inner.txt",
        ),
        (
            r#"{"name":"write_file","args":{"path":"ok_link/new.txt","content":"x"}}"#,
            "sub/new.txt",
        ),
    ] {
        let r = call(&engine, json);
        assert_eq!(r.status, CallStatus::Success, "{json}: {}", r.output);
        assert!(r.output.contains(want), "{json}: {}", r.output);
    }
    // The write through the inside link landed inside.
    assert_eq!(
        std::fs::read_to_string(f.root.join("sub/new.txt")).unwrap(),
        "x"
    );
}

/// A directory is swapped for a symlink to an outside directory, over and over, while reads,
/// writes, listings and searches run. Nothing outside may be read or changed.
#[test]
fn swapping_a_directory_for_a_symlink_never_escapes() {
    let f = Fixture::new();
    f.put("root/d/f.txt", "inside\n");
    f.put("outside/d/f.txt", &format!("{SECRET}\n"));
    let engine = f.permissive();
    let before = snapshot_tree(&f.base().join("outside"));
    let stop = Arc::new(AtomicBool::new(false));
    let swapped = Arc::new(std::sync::atomic::AtomicU32::new(0));
    let swapper = {
        let stop = Arc::clone(&stop);
        let swapped = Arc::clone(&swapped);
        let d = f.root.join("d");
        let real = f.root.join("d_real");
        let target = f.base().join("outside/d");
        let aside = f.root.clone();
        std::thread::spawn(move || {
            let mut swaps = 0u32;
            let mut kept = 0u32;
            while !stop.load(Ordering::Relaxed) {
                // A write_file that ran while `d` was away made a new `d` (it creates folders),
                // so the original could not come back: put that one aside and go on swapping,
                // or the swapper would stall for the rest of the test.
                if real.exists() {
                    let _ = std::fs::remove_file(&d);
                    if d.exists() {
                        kept += 1;
                        let _ = std::fs::rename(&d, aside.join(format!("made-while-away-{kept}")));
                    }
                    let _ = std::fs::rename(&real, &d);
                }
                // Leave each state in place for a moment, so calls meet both.
                if std::fs::rename(&d, &real).is_ok() {
                    let _ = symlink(&target, &d);
                    std::thread::sleep(std::time::Duration::from_micros(200));
                    let _ = std::fs::remove_file(&d);
                    let _ = std::fs::rename(&real, &d);
                    swaps += 1;
                    swapped.store(swaps, Ordering::Relaxed);
                }
                std::thread::sleep(std::time::Duration::from_micros(300));
            }
            swaps
        })
    };
    let calls = [
        r#"{"name":"read_file","args":{"path":"d/f.txt"}}"#,
        r#"{"name":"write_file","args":{"path":"d/new.txt","content":"w\n","mode":"append"}}"#,
        r#"{"name":"edit_file","args":{"path":"d/f.txt","oldString":"TOPSECRET-7c1f","newString":"gotcha"}}"#,
        r#"{"name":"list_dir","args":{"path":"d"}}"#,
        r#"{"name":"grep","args":{"pattern":"TOPSECRET"}}"#,
        r#"{"name":"glob","args":{"pattern":"**/*"}}"#,
    ];
    let mut outcomes = std::collections::HashMap::new();
    // 600 calls, and more while the swapper has barely run (a loaded machine starves it).
    let started = std::time::Instant::now();
    let mut i = 0;
    while i < 600
        || (swapped.load(Ordering::Relaxed) <= 10
            && started.elapsed() < std::time::Duration::from_secs(60))
    {
        let json = calls[i % calls.len()];
        i += 1;
        let r = call(&engine, json);
        assert!(
            !r.output.contains(SECRET),
            "{json}: leaked through the swap: {}",
            r.output
        );
        *outcomes
            .entry((json, r.status == CallStatus::Success))
            .or_insert(0u32) += 1;
    }
    stop.store(true, Ordering::Relaxed);
    let swaps = swapper.join().unwrap();
    assert!(swaps > 10, "the swapper barely ran ({swaps} swaps)");
    assert_eq!(
        snapshot_tree(&f.base().join("outside")),
        before,
        "something outside changed"
    );
    // The race was real: some reads succeeded and the secret was never among them.
    assert!(
        outcomes.get(&(calls[0], true)).copied().unwrap_or(0) > 0,
        "no read ever succeeded: {outcomes:?}"
    );
}

/// Property: whatever path the model writes, a path the jail calls "inside" really is inside
/// the root once the filesystem resolves it, and nothing panics.
#[test]
fn proptest_resolver_never_admits_an_outside_path() {
    use ground_link::jail::Jail;
    use ground_link::protocol::SandboxMode;
    use proptest::prelude::*;
    let f = fixture();
    symlink(f.root.join("sub"), f.root.join("abs_in")).unwrap();
    let jail = Jail::new(&f.root, SandboxMode::WorkspaceWrite).unwrap();
    let root = std::fs::canonicalize(&f.root).unwrap();
    let parts = [
        "sub",
        "..",
        ".",
        "link_out",
        "file_link",
        "dangling",
        "root_link",
        "loop_a",
        "ok_link",
        "abs_in",
        "up",
        "inner.txt",
        "new",
        "etc",
        "/",
        "~",
        "\0",
        "outside",
        "root2",
        "secret.txt",
    ];
    // Failing seeds are kept beside the tests (the `missing/..` bug's seed is one of them).
    let persistence = proptest::test_runner::FileFailurePersistence::Direct(
        "tests/proptest-regressions/jail.txt",
    );
    let cfg = ProptestConfig {
        cases: ground_link::testing::proptest_cases(2000),
        failure_persistence: Some(Box::new(persistence)),
        ..ProptestConfig::default()
    };
    proptest!(cfg, |(picks in prop::collection::vec(0..parts.len(), 1..8), absolute in any::<bool>())| {
        let mut path = picks.iter().map(|i| parts[*i]).collect::<Vec<_>>().join("/");
        if absolute {
            path = format!("{}/{path}", f.root.display());
        }
        if let Ok(r) = jail.resolve(&path) {
            prop_assert!(r.inside, "{path}: resolve() returned an outside path in workspace-write");
            prop_assert!(r.abs.starts_with(&root), "{path}: {:?}", r.abs);
            prop_assert!(!r.rel.starts_with('/') && !r.rel.split('/').any(|c| c == ".."), "{path}: rel {}", r.rel);
            // Where the path exists, the kernel agrees it is inside.
            if let Ok(real) = std::fs::canonicalize(&r.abs) {
                prop_assert!(real.starts_with(&root), "{path}: really {real:?}");
            }
            // Opening it can never land outside either.
            if let Ok(file) = jail.open_read(&r) {
                let fd_path = std::fs::read_link(format!("/proc/self/fd/{}", std::os::fd::AsRawFd::as_raw_fd(&file))).unwrap();
                prop_assert!(fd_path.starts_with(&root), "{path}: opened {fd_path:?}");
            }
        }
    });
}

/// A FIFO in the root once hung `read_file` until someone wrote to it (the red team held a
/// call for 15 s): only regular files are read, and opening one cannot block.
#[test]
fn reading_a_fifo_or_a_device_is_an_error_not_a_hang() {
    let f = crate::util::Fixture::new();
    let fifo = f.root.join("pipe");
    let st = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(st.success());
    let (tx, rx) = std::sync::mpsc::channel();
    let engine = f.engine_with(
        ground_link::protocol::SandboxMode::FullAccess,
        ground_link::protocol::ApprovalMode::Ask,
        std::sync::Arc::new(ground_link::approval::AllowOnceApprover),
    );
    std::thread::spawn(move || {
        for path in ["pipe", "/dev/zero"] {
            let r = crate::util::call(
                &engine,
                &serde_json::json!({"name":"read_file","args":{"path":path}}).to_string(),
            );
            let _ = tx.send((path, r));
        }
    });
    for _ in 0..2 {
        let (path, r) = rx
            .recv_timeout(std::time::Duration::from_secs(20))
            .expect("read_file of a FIFO or a device returned");
        assert_eq!(
            r.status,
            ground_link::protocol::CallStatus::Error,
            "{path}: {}",
            r.output
        );
        assert!(
            r.output.contains("not a regular file"),
            "{path}: {}",
            r.output
        );
    }
}
