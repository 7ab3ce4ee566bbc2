//! Suite: the `ground-link` command line as scripts use it (DESIGN §9): the JSON it prints,
//! exit codes, `--deny-reason`, XDG locations, and writes that survive `kill -9`.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

use crate::util::Fixture;

const BIN: &str = env!("CARGO_BIN_EXE_ground-link");

fn run(f: &Fixture, args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .env("XDG_CONFIG_HOME", f.base().join("config"))
        .env("XDG_DATA_HOME", f.base().join("data"))
        .env(
            "GROUND_LINK_MANAGED_FILE",
            f.base().join("managed/permissions.json"),
        )
        .output()
        .unwrap()
}

fn json_out(out: &Output) -> Value {
    let text = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(text.trim()).unwrap_or_else(|e| {
        panic!(
            "stdout is not one JSON object ({e}): {text}\nstderr: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

#[test]
fn check_prints_the_decision_object() {
    let f = Fixture::new();
    let dir = f.root.to_str().unwrap();
    for (call, decision, risk) in [
        (
            r#"{"name":"read_file","args":{"path":"x"}}"#,
            "allow",
            "safe",
        ),
        (
            r#"{"name":"exec_cmd","args":{"command":"git status"}}"#,
            "allow",
            "safe",
        ),
        (
            r#"{"name":"write_file","args":{"path":"a","content":""}}"#,
            "ask",
            "moderate",
        ),
        (
            r#"{"name":"exec_cmd","args":{"command":"rm -rf /"}}"#,
            "deny",
            "dangerous",
        ),
        (
            r#"{"name":"read_file","args":{"path":"../x"}}"#,
            "deny",
            "moderate",
        ),
        (
            r#"{"name":"Bash","args":{"command":"ls; rm -rf ~"}}"#,
            "deny",
            "dangerous",
        ),
    ] {
        let out = run(&f, &["check", "--dir", dir, "--json", call]);
        assert_eq!(out.status.code(), Some(0), "{call}");
        let v = json_out(&out);
        assert_eq!(v["decision"], decision, "{call}: {v}");
        assert_eq!(v["risk"], risk, "{call}: {v}");
        assert!(
            v["reason"].as_str().is_some_and(|r| !r.is_empty()),
            "{call}: {v}"
        );
        assert!(
            v["steps"].as_array().is_some_and(|s| !s.is_empty()),
            "{call}: {v}"
        );
        assert!(
            v.get("rule").is_some(),
            "rule key must be present (null or object): {v}"
        );
    }
    // check runs nothing.
    let out = run(
        &f,
        &[
            "check",
            "--dir",
            dir,
            "--json",
            r#"{"name":"write_file","args":{"path":"made.txt","content":"x"}}"#,
        ],
    );
    assert_eq!(out.status.code(), Some(0));
    assert!(!f.root.join("made.txt").exists());
}

#[test]
fn call_prints_the_result_object_and_audits() {
    let f = Fixture::new();
    std::fs::write(f.root.join("hello.txt"), "hi there\n").unwrap();
    let dir = f.root.to_str().unwrap();
    let out = run(
        &f,
        &[
            "call",
            "--dir",
            dir,
            "--json",
            r#"{"name":"read","args":{"path":"hello.txt"}}"#,
        ],
    );
    assert_eq!(out.status.code(), Some(0));
    let v = json_out(&out);
    assert_eq!(v["status"], "success");
    assert!(v["output"].as_str().unwrap().contains("hi there"));
    assert!(
        v["formatted"]
            .as_str()
            .unwrap()
            .starts_with("<tool_result name=\"read_file\" status=\"success\">")
    );
    assert!(v["callId"].as_str().is_some_and(|s| !s.is_empty()));
    assert_eq!(v["decision"]["decision"], "allow");
    assert!(v["durationMs"].is_u64());
    assert_eq!(v["truncated"], false);
    // The audit line is in $XDG_DATA_HOME/ground-link/audit/YYYY-MM-DD.jsonl.
    let audit = f.base().join("data/ground-link/audit");
    let files: Vec<_> = std::fs::read_dir(&audit)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".jsonl"))
        .collect();
    assert_eq!(files.len(), 1);
    let name = files[0].file_name().to_string_lossy().into_owned();
    assert!(
        name.ends_with(".jsonl") && name.len() == "YYYY-MM-DD.jsonl".len(),
        "{name}"
    );
    let text = std::fs::read_to_string(files[0].path()).unwrap();
    assert!(text.contains(v["callId"].as_str().unwrap()));
    let verify = run(&f, &["audit", "verify"]);
    assert_eq!(
        verify.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&verify.stderr)
    );
}

#[test]
fn deny_reason_reaches_the_model() {
    let f = Fixture::new();
    let dir = f.root.to_str().unwrap();
    let out = run(
        &f,
        &[
            "call",
            "--dir",
            dir,
            "--approval",
            "deny",
            "--deny-reason",
            "use the staging folder",
            "--json",
            r#"{"name":"write_file","args":{"path":"a.txt","content":"x"}}"#,
        ],
    );
    assert_eq!(out.status.code(), Some(0));
    let v = json_out(&out);
    assert_eq!(v["status"], "denied");
    let formatted = v["formatted"].as_str().unwrap();
    assert!(formatted.contains("[Tool Denied] The user denied the \"write_file\" tool call. Reason: use the staging folder."), "{formatted}");
    assert!(!f.root.join("a.txt").exists());
    // --approval allow runs it, and says so loudly.
    let out = run(
        &f,
        &[
            "call",
            "--dir",
            dir,
            "--approval",
            "allow",
            "--json",
            r#"{"name":"write_file","args":{"path":"a.txt","content":"x"}}"#,
        ],
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("WARNING"));
    assert_eq!(json_out(&out)["status"], "success");
    assert_eq!(std::fs::read_to_string(f.root.join("a.txt")).unwrap(), "x");
}

#[test]
fn unusable_input_exits_non_zero_with_a_message() {
    let f = Fixture::new();
    let dir = f.root.to_str().unwrap();
    let missing = f.base().join("nope");
    for (args, needle) in [
        (
            vec!["check", "--dir", dir, "--json", "{not json"],
            "not valid JSON",
        ),
        (
            vec!["check", "--dir", dir, "--json", r#"{"args":{}}"#],
            "no \"name\"",
        ),
        (vec!["check", "--dir", dir, "--json", "[1]"], "JSON object"),
        (
            vec![
                "check",
                "--dir",
                missing.to_str().unwrap(),
                "--json",
                r#"{"name":"list_dir"}"#,
            ],
            "sandbox root",
        ),
        (vec!["check", "--json", r#"{"name":"list_dir"}"#], "--dir"),
        (vec!["call", "--dir", dir], "--json"),
        (
            vec!["check", "--dir", dir, "--sandbox", "yolo", "--json", "{}"],
            "yolo",
        ),
    ] {
        let out = run(&f, &args);
        assert_ne!(out.status.code(), Some(0), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(needle), "{args:?}: {err}");
        assert!(out.stdout.is_empty(), "{args:?}: printed to stdout");
    }
    // A tool-level problem is still a result object (exit 0).
    let out = run(
        &f,
        &["call", "--dir", dir, "--json", r#"{"name":"frobnicate"}"#],
    );
    assert_eq!(out.status.code(), Some(0));
    let v = json_out(&out);
    assert_eq!(v["status"], "error");
    assert!(
        v["output"]
            .as_str()
            .unwrap()
            .contains("unknown tool \"frobnicate\"")
    );
}

/// `kill -9` at random moments during large writes: the file is always one whole version.
#[test]
fn killing_a_write_never_leaves_a_torn_file() {
    let f = Fixture::new();
    let dir = f.root.to_str().unwrap();
    let size = 4 << 20;
    for i in 0..12u32 {
        let letter = (b'a' + (i % 26) as u8) as char;
        let content: String = std::iter::repeat_n(letter, size).collect();
        let call = serde_json::json!({"name": "write_file", "args": {"path": "big.txt", "content": content}}).to_string();
        // Large calls come on stdin (`--json -`): one argument is limited to 128 KiB.
        let mut child = Command::new(BIN)
            .args(["call", "--dir", dir, "--approval", "allow", "--json", "-"])
            .env("XDG_CONFIG_HOME", f.base().join("config"))
            .env("XDG_DATA_HOME", f.base().join("data"))
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        {
            use std::io::Write;
            let mut stdin = child.stdin.take().unwrap();
            let _ = stdin.write_all(call.as_bytes());
        }
        std::thread::sleep(std::time::Duration::from_millis(u64::from(i * 7 % 40)));
        let _ = child.kill();
        let _ = child.wait();
        assert_whole(&f.root.join("big.txt"), size);
    }
    // No temp files are left where the model would see them... except from killed runs,
    // which are hidden dotfiles named for the target.
    for e in std::fs::read_dir(&f.root).unwrap().flatten() {
        let n = e.file_name().to_string_lossy().into_owned();
        assert!(
            n == "big.txt" || n.starts_with(".big.txt.gl-tmp-"),
            "unexpected file {n}"
        );
    }
}

fn assert_whole(path: &Path, size: usize) {
    let Ok(bytes) = std::fs::read(path) else {
        return;
    };
    assert_eq!(bytes.len(), size, "torn file: {} bytes", bytes.len());
    assert!(
        bytes.iter().all(|b| *b == bytes[0]),
        "mixed versions in one file"
    );
}

#[test]
fn token_is_created_private_shown_and_rotated() {
    use std::os::unix::fs::PermissionsExt;
    let f = Fixture::new();
    let out = run(&f, &["token"]);
    assert_eq!(out.status.code(), Some(0));
    let first = String::from_utf8_lossy(&out.stdout).trim().to_string();
    assert_eq!(first.len(), 64, "256 bits, hex: {first}");
    assert!(first.chars().all(|c| c.is_ascii_hexdigit()));
    let file = f.base().join("config/ground-link/token");
    assert_eq!(
        std::fs::metadata(&file).unwrap().permissions().mode() & 0o777,
        0o600
    );
    assert_eq!(
        String::from_utf8_lossy(&run(&f, &["token"]).stdout).trim(),
        first,
        "stable across calls"
    );
    let rotated = String::from_utf8_lossy(&run(&f, &["token", "--rotate"]).stdout)
        .trim()
        .to_string();
    assert_ne!(rotated, first);
    assert_eq!(std::fs::read_to_string(&file).unwrap().trim(), rotated);
    // --token-file: a file others can read is used, with a warning rather than a refusal.
    let custom = f.put("custom-token", "abcdefabcdefabcdefabcdefabcdefabcdef\n");
    std::fs::set_permissions(&custom, std::fs::Permissions::from_mode(0o644)).unwrap();
    let out = run(&f, &["token", "--token-file", custom.to_str().unwrap()]);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "abcdefabcdefabcdefabcdefabcdefabcdef"
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("can be read by other users"));
    // A file that holds no token is an error that says what to do.
    let empty = f.put("empty-token", "\n");
    let out = run(&f, &["token", "--token-file", empty.to_str().unwrap()]);
    assert_ne!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--rotate"));
}

#[test]
fn trust_shows_the_diff_then_trusts() {
    let f = Fixture::new();
    let dir = f.root.to_str().unwrap();
    let out = run(&f, &["trust", "--dir", dir]);
    assert_ne!(
        out.status.code(),
        Some(0),
        "no project file: nothing to trust"
    );
    f.put(
        "root/.ground-link/permissions.json",
        r#"{"version":1,"allow":["Bash(npm test *)"]}"#,
    );
    let check = |f: &Fixture| {
        json_out(&run(
            f,
            &[
                "check",
                "--dir",
                dir,
                "--json",
                r#"{"name":"exec_cmd","args":{"command":"npm test"}}"#,
            ],
        ))["decision"]
            .clone()
    };
    let out = run(&f, &["trust", "--dir", dir, "--show"]);
    assert!(
        String::from_utf8_lossy(&out.stdout)
            .contains("+{\"version\":1,\"allow\":[\"Bash(npm test *)\"]}")
    );
    assert_eq!(check(&f), "ask", "--show trusts nothing");
    let out = run(&f, &["trust", "--dir", dir]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("trusted"));
    assert_eq!(check(&f), "allow");
    let out = run(&f, &["trust", "--dir", dir]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("already trusted"));
}

/// Finding 3 of issue 10, through `ground-link serve --approval tty` on a real terminal
/// (`script` gives it one): a model-written `reason` (and argument) full of newlines cannot
/// draw look-alike `command:` / `parts:` / menu lines above the real question; it stays on its
/// own labelled line with `⏎` where the newlines were, and multi-line content is framed.
#[test]
fn a_reason_with_newlines_cannot_draw_lines_of_the_terminal_question() {
    use std::io::{BufRead, Read, Write};
    if Command::new("script").arg("--version").output().is_err() {
        panic!("`script` (util-linux) is needed for the terminal approver test");
    }
    let f = Fixture::new();
    let token = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
    let token_file = f.base().join("token");
    std::fs::write(&token_file, format!("{token}\n")).unwrap();
    let command = format!(
        "{BIN} serve --dir {} --port 0 --token-file {} --approval tty",
        f.root.display(),
        token_file.display()
    );
    let mut child = Command::new("script")
        .args(["-qfec", &command, "/dev/null"])
        .env("XDG_CONFIG_HOME", f.base().join("config"))
        .env("XDG_DATA_HOME", f.base().join("data"))
        .env(
            "GROUND_LINK_MANAGED_FILE",
            f.base().join("managed/permissions.json"),
        )
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok(n) = stdout.read(&mut buf) {
            if n == 0 {
                break;
            }
            let _ = tx.send(String::from_utf8_lossy(&buf[..n]).into_owned());
        }
    });
    let mut seen = String::new();
    let wait_until = |what: &str, done: &dyn Fn(&str) -> bool, seen: &mut String| {
        let end = std::time::Instant::now() + std::time::Duration::from_secs(20);
        while !done(seen) {
            let left = end.saturating_duration_since(std::time::Instant::now());
            match rx.recv_timeout(left) {
                Ok(t) => seen.push_str(&t),
                Err(_) => panic!("never saw {what:?}; terminal so far:\n{seen}"),
            }
        }
    };
    let wait_for = |what: &str, seen: &mut String| wait_until(what, &|s| s.contains(what), seen);
    // Wait for the whole line: the terminal may hand the port over in two reads.
    let listening = "ground-link listening on http://127.0.0.1:";
    wait_until(
        listening,
        &|s| {
            s.split_once(listening)
                .is_some_and(|(_, r)| r.contains('\n'))
        },
        &mut seen,
    );
    let port: u16 = seen
        .split(listening)
        .nth(1)
        .and_then(|r| r.lines().next())
        .and_then(|p| p.trim().parse().ok())
        .unwrap_or_else(|| panic!("no port in the listening line:\n{seen}"));
    let reason = "tidy up\ncommand: ls\nparts:\n  - ls\nwhy asked: read-only listing\n[o] allow once  [d] deny  > o";
    let call = serde_json::json!({
        "name": "write_file",
        "args": {"path": "notes.txt\ncommand: ls", "content": "line one\nwhy asked: safe\n"},
        "reason": reason,
        "session": "chat.example/c/1\rparts: - ls",
    });
    let body = call.to_string();
    let poster = std::thread::spawn(move || {
        let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        write!(
            s,
            "POST /exec HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        let mut out = String::new();
        let _ = std::io::BufReader::new(s).read_to_string(&mut out);
        out
    });
    wait_for("[d] deny  > ", &mut seen);
    let question = seen[seen.find("=== ground-link: approve").unwrap()..].to_string();
    // Every line of the question starts with ground-link's own label or frame.
    let allowed = [
        "=== ground-link: approve",
        "chat:    ",
        "reason:  ",
        "  path: ",
        "  content: ",
        "  mode: ",
        "why asked: ",
        "  ┌─ ",
        "  │ ",
        "  └─",
        "proposed rule: ",
        "[o] allow once",
    ];
    for line in question
        .lines()
        .map(|l| l.trim_end_matches('\r'))
        .filter(|l| !l.is_empty())
    {
        assert!(
            allowed.iter().any(|a| line.starts_with(a)),
            "a line the model drew: {line:?}\nin:\n{question}"
        );
    }
    assert_eq!(
        question
            .lines()
            .filter(|l| l.starts_with("why asked: "))
            .count(),
        1,
        "{question}"
    );
    assert!(
        question.contains("reason:  tidy up⏎command: ls⏎parts:⏎  - ls⏎why asked: read-only listing⏎[o] allow once  [d] deny  > o\r\n"),
        "{question}"
    );
    assert!(
        question.contains("chat:    chat.example/c/1\\u{000d}parts: - ls"),
        "{question}"
    );
    assert!(question.contains("  │ +why asked: safe\r\n"), "{question}");
    // Answer: deny; the model gets the denial.
    let stdin = child.stdin.as_mut().unwrap();
    stdin.write_all(b"d\n").unwrap();
    wait_for("reason for the model", &mut seen);
    child.stdin.as_mut().unwrap().write_all(b"\n").unwrap();
    let answer = poster.join().unwrap();
    assert!(answer.contains("\"status\":\"denied\""), "{answer}");
    assert!(!f.root.join("notes.txt").exists());
    let _ = child.kill();
    let _ = child.wait();
    let _ = std::io::BufReader::new(child.stderr.take().unwrap()).lines();
}

/// The agent token in a real Secret Service (gnome-keyring on a private D-Bus session): a token
/// file the CLI made before moves into the keyring, rotating changes both, and with the keyring
/// gone the file still holds the same key — so the CLI, `serve` and the tray app (all
/// `TokenStore::open`) never hand out two different keys.
#[test]
fn the_token_moves_into_a_real_keyring_and_the_file_follows_it() {
    for tool in ["dbus-run-session", "gnome-keyring-daemon"] {
        let found = Command::new("sh")
            .args(["-c", &format!("command -v {tool}")])
            .output()
            .unwrap();
        assert!(
            found.status.success(),
            "{tool} is missing: run scripts/install-deps.sh core (it installs dbus and gnome-keyring)"
        );
    }
    let f = Fixture::new();
    let old = "0123456789abcdef".repeat(4);
    f.put("home/.config/ground-link/token", &format!("{old}\n"));
    let home = f.base().join("home");
    // One shell inside the private session: every step prints `step=token|kept in …`.
    let script = r#"
        set -e
        printf pw | gnome-keyring-daemon --foreground --unlock --components=secrets >/dev/null &
        daemon=$!
        # Wait until it owns the Secret Service name: asking earlier would D-Bus-activate a
        # second, locked daemon.
        for _ in $(seq 100); do
            dbus-send --session --print-reply --dest=org.freedesktop.DBus /org/freedesktop/DBus \
                org.freedesktop.DBus.NameHasOwner string:org.freedesktop.secrets | grep -q 'boolean true' && break
            sleep 0.05
        done
        step() { printf '%s=%s|%s\n' "$1" "$("$BIN" token $2 2>/tmp/err.$$)" "$(grep '^kept in' /tmp/err.$$)"; }
        step moved
        step again
        step rotated --rotate
        printf 'file=%s|\n' "$(cat "$XDG_CONFIG_HOME/ground-link/token")"
        kill "$daemon"; wait "$daemon" || true
        step gone
        rm -f /tmp/err.$$
    "#;
    let out = Command::new("dbus-run-session")
        .args(["--", "bash", "-c", script])
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap())
        .env("BIN", BIN)
        .env("HOME", &home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("XDG_DATA_HOME", home.join(".local/share"))
        .env(
            "GROUND_LINK_MANAGED_FILE",
            f.base().join("managed/permissions.json"),
        )
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let step = |name: &str| -> (String, String) {
        let line = text
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{name}=")))
            .unwrap_or_else(|| panic!("no {name} step in:\n{text}"));
        let (token, kept) = line.split_once('|').unwrap();
        (token.to_string(), kept.to_string())
    };
    let keyring = "kept in the OS keyring (ground-link/bridge-token)";
    assert_eq!(step("moved"), (old.clone(), keyring.to_string()));
    assert_eq!(step("again"), (old.clone(), keyring.to_string()));
    let (rotated, kept) = step("rotated");
    assert_ne!(rotated, old);
    assert!(kept.starts_with(keyring), "{kept}");
    assert_eq!(step("file").0, rotated, "the file follows a rotation");
    let (gone, kept) = step("gone");
    assert_eq!(
        gone, rotated,
        "without the keyring the file has the same key"
    );
    assert!(kept.starts_with("kept in the file "), "{kept}");
}
