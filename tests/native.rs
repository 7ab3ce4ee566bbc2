//! Suite: native messaging through the real binary (DESIGN §8.2) — Chrome's framing on the
//! host's stdin/stdout, the relay over the bridge's Unix socket, chunked big answers, refused
//! origins, oversized and malformed messages, nothing running, another uid, and the manifest
//! `install-native-host` writes.

use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::Arc;
use std::sync::mpsc;
use std::time::Duration;

use ground_link::approval::AllowOnceApprover;
use ground_link::bridge::native::{self, NativeListener};
use ground_link::protocol::ApprovalMode;
use serde_json::{Value, json};

use crate::bridge::Server;
use crate::util::Fixture;

const BIN: &str = env!("CARGO_BIN_EXE_ground-link");

/// A bridge with its native-messaging socket under `<base>/run/ground-link/`.
pub(crate) struct Running {
    pub(crate) server: Server,
    _listener: NativeListener,
    pub(crate) run_dir: PathBuf,
}

fn start(f: &Fixture) -> Running {
    start_with(f, Arc::new(AllowOnceApprover))
}

pub(crate) fn start_with(
    f: &Fixture,
    approver: Arc<dyn ground_link::approval::Approver>,
) -> Running {
    let server = Server::start(f, approver, ApprovalMode::Ask, Duration::from_secs(10));
    let run_dir = f.base().join("run");
    let listener = {
        let _guard = server.runtime.enter();
        native::listen(
            Arc::clone(server.bridge()),
            &run_dir.join("ground-link").join(native::SOCKET_NAME),
        )
        .unwrap()
    };
    Running {
        server,
        _listener: listener,
        run_dir,
    }
}

/// The host as Chrome runs it: `path` plus the caller origin, frames on stdin and stdout.
pub(crate) struct Host {
    child: Child,
    stdin: Option<ChildStdin>,
    pub(crate) frames: mpsc::Receiver<Vec<u8>>,
}

pub(crate) fn spawn_host(run_dir: &Path, args: &[&str]) -> Host {
    let mut child = Command::new(BIN)
        .args(args)
        .env("XDG_RUNTIME_DIR", run_dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let (tx, frames) = mpsc::channel();
    std::thread::spawn(move || {
        loop {
            let mut len = [0u8; 4];
            if stdout.read_exact(&mut len).is_err() {
                return;
            }
            let len = u32::from_le_bytes(len) as usize;
            let mut body = vec![0u8; len];
            if stdout.read_exact(&mut body).is_err() || tx.send(body).is_err() {
                return;
            }
        }
    });
    let stdin = child.stdin.take();
    Host {
        child,
        stdin,
        frames,
    }
}

pub(crate) fn origin() -> String {
    native::allowed_origin()
}

impl Host {
    fn send_raw(&mut self, body: &[u8]) {
        let w = self.stdin.as_mut().unwrap();
        w.write_all(&(body.len() as u32).to_le_bytes()).unwrap();
        w.write_all(body).unwrap();
        w.flush().unwrap();
    }

    pub(crate) fn send(&mut self, v: Value) {
        self.send_raw(v.to_string().as_bytes());
    }

    pub(crate) fn frame(&self) -> Vec<u8> {
        self.frames
            .recv_timeout(Duration::from_secs(60))
            .expect("the host answered within 60 s")
    }

    /// The next whole answer, with the number of frames it came in; chunks are joined.
    pub(crate) fn answer(&self) -> (Value, usize) {
        let first = self.frame();
        assert!(
            first.len() <= native::MAX_OUT,
            "a frame of {} bytes",
            first.len()
        );
        let v: Value = serde_json::from_slice(&first).unwrap();
        if v["type"] != "chunk" {
            return (v, 1);
        }
        let count = v["count"].as_u64().unwrap() as usize;
        let mut text = v["data"].as_str().unwrap().to_owned();
        for i in 1..count {
            let f = self.frame();
            assert!(f.len() <= native::MAX_OUT, "chunk {i} is {} bytes", f.len());
            let c: Value = serde_json::from_slice(&f).unwrap();
            assert_eq!(
                (c["type"].as_str(), c["index"].as_u64()),
                (Some("chunk"), Some(i as u64))
            );
            assert_eq!(c["id"], v["id"]);
            text.push_str(c["data"].as_str().unwrap());
        }
        (serde_json::from_str(&text).unwrap(), count)
    }

    /// Close stdin as Chrome does when the port closes; the host must then exit on its own.
    pub(crate) fn close(mut self) -> std::process::ExitStatus {
        drop(self.stdin.take());
        for _ in 0..200 {
            if let Some(s) = self.child.try_wait().unwrap() {
                return s;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        panic!("the host did not exit within 10 s of stdin closing");
    }
}

#[test]
fn a_call_round_trips_through_the_host_and_the_bridge() {
    let f = Fixture::new();
    std::fs::write(f.root.join("hello.txt"), "hi from the sandbox\n").unwrap();
    let r = start(&f);
    let mut host = spawn_host(&r.run_dir, &[&origin()]);
    for i in 0..2 {
        host.send(json!({"name":"read_file","args":{"path":"hello.txt"},"callId":format!("c{i}"),"session":"s1"}));
        let (v, frames) = host.answer();
        assert_eq!(frames, 1);
        assert_eq!(v["status"], "success", "{v}");
        assert_eq!(v["callId"], format!("c{i}"));
        assert!(
            v["output"]
                .as_str()
                .unwrap()
                .contains("hi from the sandbox")
        );
        assert!(v["formatted"].as_str().unwrap().contains("<tool_result"));
    }
    // A denied call answers the same result object as POST /exec would.
    host.send(json!({"name":"read_file","args":{"path":"../outside"},"callId":"c9"}));
    let (v, _) = host.answer();
    assert_eq!(v["callId"], "c9");
    assert_ne!(v["status"], "success", "{v}");
    assert!(host.close().success());
    // The same engine: the calls are in the audit log.
    let audited = crate::bridge::audit_lines(&f);
    assert!(audited.len() >= 2, "{audited:?}");
    drop(r.server);
}

#[test]
fn a_wrong_caller_origin_exits_with_a_message() {
    let f = Fixture::new();
    for args in [
        vec!["chrome-extension://abcdefghijklmnopabcdefghijklmnop/"],
        vec![
            "native-host",
            "chrome-extension://abcdefghijklmnopabcdefghijklmnop/",
        ],
        vec!["native-host", "https://example.com/"],
    ] {
        let out = Command::new(BIN)
            .args(&args)
            .env("XDG_RUNTIME_DIR", f.base())
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(out.stdout.is_empty());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("refusing caller origin"), "{err}");
        assert!(err.contains(&origin()), "{err}");
    }
}

#[test]
fn an_oversized_message_is_refused_and_the_host_goes_on() {
    let f = Fixture::new();
    std::fs::write(f.root.join("a.txt"), "still here\n").unwrap();
    let r = start(&f);
    let mut host = spawn_host(&r.run_dir, &["native-host", &origin()]);
    let big = vec![b' '; native::MAX_IN + 1];
    host.send_raw(&big);
    let (v, _) = host.answer();
    let e = v["error"].as_str().unwrap();
    assert!(
        e.contains(&format!("{} bytes", native::MAX_IN + 1)) && e.contains("limit"),
        "{e}"
    );
    host.send(json!({"name":"read_file","args":{"path":"a.txt"},"callId":"after"}));
    let (v, _) = host.answer();
    assert_eq!(
        (v["status"].as_str(), v["callId"].as_str()),
        (Some("success"), Some("after"))
    );
    assert!(host.close().success());
}

#[test]
fn malformed_messages_get_error_answers() {
    let f = Fixture::new();
    let r = start(&f);
    let mut host = spawn_host(&r.run_dir, &[&origin()]);
    host.send_raw(b"{not json");
    let (v, _) = host.answer();
    assert!(
        v["error"].as_str().unwrap().contains("not valid JSON"),
        "{v}"
    );
    // JSON, but not a call: the bridge says what is missing, naming the call.
    host.send(json!({"args":{},"callId":"x1"}));
    let (v, _) = host.answer();
    assert!(v["error"].as_str().unwrap().contains("\"name\""), "{v}");
    assert_eq!(v["callId"], "x1");
    host.send(json!({"name":"no_such_tool","args":{},"callId":"x2"}));
    let (v, _) = host.answer();
    assert_eq!(v["callId"], "x2", "{v}");
    assert!(v.get("status").is_some() || v.get("error").is_some(), "{v}");
    assert!(host.close().success());
}

#[test]
fn a_big_result_arrives_in_chunks_that_join_back() {
    let f = Fixture::new();
    // Control characters are shown as `[U+0001]`, quotes and backslashes double when escaped,
    // in `output` and in `formatted`: the answer
    // to reading this (over 1 MiB) file is well over Chrome's 1 MiB.
    let line = "\u{1}\"\\".repeat(700) + "\n";
    let content = line.repeat(1_200_000 / line.len() + 1);
    assert!(content.len() > 1024 * 1024);
    std::fs::write(f.root.join("big.txt"), &content).unwrap();
    let r = start(&f);
    let mut host = spawn_host(&r.run_dir, &[&origin()]);
    host.send(json!({"name":"read_file","args":{"path":"big.txt"},"callId":"big"}));
    let (v, frames) = host.answer();
    assert!(
        frames > 1,
        "one frame for a big answer: {}",
        v.to_string().len()
    );
    assert_eq!(
        v["status"],
        "success",
        "{}",
        v["output"]
            .as_str()
            .unwrap_or("")
            .chars()
            .take(300)
            .collect::<String>()
    );
    assert_eq!(v["callId"], "big");
    let out = v["output"].as_str().unwrap();
    assert!(out.len() > 512 * 1024, "{}", out.len());
    assert!(out.contains("[U+0001]\"\\[U+0001]"), "{}", &out[..200]);
    // And the next answer is whole again.
    host.send(json!({"name":"list_dir","args":{"path":"."},"callId":"small"}));
    let (v, frames) = host.answer();
    assert_eq!((frames, v["callId"].as_str()), (1, Some("small")));
    assert!(host.close().success());
}

#[test]
fn nothing_running_is_answered_with_how_to_start_ground_link() {
    let f = Fixture::new();
    let run_dir = f.base().join("empty-run");
    std::fs::create_dir_all(&run_dir).unwrap();
    let mut host = spawn_host(&run_dir, &[&origin()]);
    for id in ["n1", "n2"] {
        host.send(json!({"name":"list_dir","args":{},"callId":id}));
        let (v, _) = host.answer();
        let e = v["error"].as_str().unwrap();
        assert!(
            e.contains("ground-link is not running") && e.contains("ground-link serve"),
            "{e}"
        );
        assert_eq!(v["callId"], id);
    }
    assert!(host.close().success());
}

#[test]
fn the_socket_is_private_and_another_uid_is_refused() {
    let f = Fixture::new();
    let r = start(&f);
    let sock = r.run_dir.join("ground-link").join(native::SOCKET_NAME);
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&sock), 0o600);
    assert_eq!(mode(sock.parent().unwrap()), 0o700);
    // A second bridge does not steal the socket of a running one.
    {
        let _guard = r.server.runtime.enter();
        let e = native::listen(Arc::clone(r.server.bridge()), &sock)
            .err()
            .unwrap();
        assert!(e.to_string().contains("already listens"), "{e}");
    }
    if !rustix::process::geteuid().is_root() {
        eprintln!("skipped the other-uid half: it needs root to act as nobody");
        return;
    }
    let out = send_as_nobody(&f, &sock, r#"{"name":"list_dir","args":{}}"#);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("refused") && text.contains("uid 65534"),
        "{text}"
    );
    assert!(!text.contains("\"status\""), "{text}");
}

#[test]
fn install_native_host_writes_and_removes_the_manifest() {
    let f = Fixture::new();
    let dir = f.base().join("NativeMessagingHosts");
    let out = Command::new(BIN)
        .args(["install-native-host", "--dir"])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let file = dir.join("dev.groundlink.host.json");
    let m: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let exe = std::fs::canonicalize(BIN).unwrap();
    assert_eq!(m["name"], "dev.groundlink.host");
    assert_eq!(m["type"], "stdio");
    assert_eq!(m["path"], exe.display().to_string());
    assert!(Path::new(m["path"].as_str().unwrap()).is_absolute());
    assert_eq!(
        m["allowed_origins"],
        json!([format!("chrome-extension://{}/", native::EXTENSION_ID)])
    );
    assert!(m["description"].as_str().is_some_and(|d| !d.is_empty()));
    let out = Command::new(BIN)
        .args(["install-native-host", "--uninstall", "--dir"])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(!file.exists());
    // Into a browser's folder under ~/.config: named browser, by XDG_CONFIG_HOME.
    let config = f.base().join("xdg-config");
    let out = Command::new(BIN)
        .args(["install-native-host", "--browser", "brave"])
        .env("XDG_CONFIG_HOME", &config)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        config
            .join("BraveSoftware/Brave-Browser/NativeMessagingHosts/dev.groundlink.host.json")
            .is_file()
    );
    assert!(!config.join("google-chrome").exists());
}

#[test]
fn a_reply_over_native_messaging_is_held_to_the_same_ledger_as_over_http() {
    let f = Fixture::new();
    std::fs::write(f.root.join("hello.txt"), "hi\n").unwrap();
    let r = start(&f);
    let mut host = spawn_host(&r.run_dir, &[&origin()]);
    // At most 20 calls of one reply run.
    let mut ran = 0;
    for i in 0..25 {
        host.send(json!({"name":"read_file","args":{"path":"hello.txt"},"callId":format!("q{i}"),"reply":"r2"}));
        let (v, _) = host.answer();
        if v["status"] == "success" {
            ran += 1;
        }
    }
    assert_eq!(ran, 20);
    assert!(host.close().success());
    drop(r.server);
}

/// Pairing over native messaging (DESIGN §8.2): the person says yes through the approver, and
/// the key that comes back is the one signed HTTP requests need — the bridge accepts a call
/// signed with it and signs its answer with it.
#[test]
fn pairing_approved_hands_out_the_key_that_signs_requests() {
    let f = Fixture::new();
    std::fs::write(f.root.join("hello.txt"), "paired hello\n").unwrap();
    let r = start(&f);
    let mut host = spawn_host(&r.run_dir, &[&origin()]);
    host.send(json!({"type":"pair"}));
    let (v, _) = host.answer();
    assert_eq!(v["type"], "paired", "{v}");
    let key = v["key"].as_str().unwrap();
    assert_eq!(key, crate::bridge::TOKEN);
    let body = json!({"name":"read_file","args":{"path":"hello.txt"},"callId":"p1"}).to_string();
    let (status, answer, verifies) =
        crate::bridge::signed_with_key(key, r.server.port, "POST", "/exec", &body);
    assert_eq!(status, 200, "{answer}");
    assert!(answer.contains("paired hello"), "{answer}");
    assert!(verifies, "the answer is signed with the paired key");
    // The same connection goes on carrying calls after pairing.
    host.send(json!({"name":"read_file","args":{"path":"hello.txt"},"callId":"p2"}));
    let (v, _) = host.answer();
    assert_eq!(v["status"], "success", "{v}");
    assert!(host.close().success());
    // The pairing is on record, and the key is not.
    let audited = crate::bridge::audit_lines(&f);
    let pairing = audited
        .iter()
        .find(|l| l["tool"] == "pair")
        .expect("a pairing line in the audit log");
    assert_eq!(pairing["answer"], "allow once", "{pairing}");
    assert_eq!(pairing["status"], "success", "{pairing}");
    assert_eq!(pairing["args"]["origin"], origin(), "{pairing}");
    assert!(
        !audited.iter().any(|l| l.to_string().contains(key)),
        "the key is in the audit log"
    );
    assert!(
        ground_link::audit::verify(&f.paths.audit_dir())
            .unwrap()
            .is_ok(),
        "the chain verifies with the pairing line in it"
    );
}

/// A refusal (here `--approval deny`) or the default approver answer is an error that says
/// what happened and what to do — and no key anywhere in it.
#[test]
fn pairing_denied_is_an_error_without_the_key() {
    let f = Fixture::new();
    let r = start_with(
        &f,
        Arc::new(ground_link::approval::DenyApprover { reason: None }),
    );
    let mut host = spawn_host(&r.run_dir, &[&origin()]);
    host.send(json!({"type":"pair"}));
    let (v, _) = host.answer();
    let text = v.to_string();
    assert_eq!(v["type"], "pair", "{v}");
    let e = v["error"].as_str().unwrap();
    assert!(
        e.contains("pairing refused") && e.contains("ground-link token"),
        "{e}"
    );
    assert!(v.get("key").is_none(), "{v}");
    assert!(!text.contains(crate::bridge::TOKEN), "{text}");
    assert!(host.close().success());
    let audited = crate::bridge::audit_lines(&f);
    let pairing = audited
        .iter()
        .find(|l| l["tool"] == "pair")
        .expect("the refused pairing is on record");
    assert_eq!(pairing["status"], "denied", "{pairing}");
    assert!(
        pairing["answer"].as_str().unwrap().starts_with("deny:"),
        "{pairing}"
    );
}

/// An approver that cannot ask this question (the trait's default) refuses: nothing is
/// approved by default.
#[test]
fn pairing_with_an_approver_that_cannot_ask_is_refused() {
    struct CallsOnly;
    #[async_trait::async_trait]
    impl ground_link::approval::Approver for CallsOnly {
        async fn ask(
            &self,
            _request: ground_link::protocol::ApprovalRequest,
        ) -> ground_link::protocol::ApprovalAnswer {
            ground_link::protocol::ApprovalAnswer::Allow {
                scope: ground_link::protocol::Scope::Once,
                rule: None,
                network: false,
            }
        }
        fn name(&self) -> &'static str {
            "calls-only"
        }
    }
    let f = Fixture::new();
    let r = start_with(&f, Arc::new(CallsOnly));
    let mut host = spawn_host(&r.run_dir, &[&origin()]);
    host.send(json!({"type":"pair"}));
    let (v, _) = host.answer();
    assert!(v.get("key").is_none(), "{v}");
    let e = v["error"].as_str().unwrap();
    assert!(e.contains("cannot ask about pairing"), "{e}");
    assert!(host.close().success());
}

/// The key is handed out over the native socket only: the same message sent over HTTP (to
/// `/exec`, signed with a wrong key or unsigned, and to a made-up `/pair`) never carries it.
#[test]
fn pairing_is_not_reachable_over_http() {
    let f = Fixture::new();
    let r = start(&f);
    let port = r.server.port;
    let pair = json!({"type":"pair"}).to_string();
    let wrong = "f".repeat(64);
    for path in ["/exec", "/pair"] {
        let (status, body, _) = crate::bridge::signed_with_key(&wrong, port, "POST", path, &pair);
        assert!(status == 401 || status == 404, "{path}: {status} {body}");
        assert!(!body.contains(crate::bridge::TOKEN), "{body}");
        let req = format!(
            "POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{pair}",
            pair.len()
        );
        let (status, text) = crate::bridge::raw(port, &req);
        assert_ne!(status, 200, "{text}");
        assert!(!text.contains(crate::bridge::TOKEN), "{text}");
    }
    // Even signed with the real key, /exec treats it as a call without a name, not a pairing.
    let (status, body, _) =
        crate::bridge::signed_with_key(crate::bridge::TOKEN, port, "POST", "/exec", &pair);
    assert_eq!(status, 400, "{body}");
    assert!(!body.contains(crate::bridge::TOKEN), "{body}");
}

/// Another local user cannot get the key: the peer-uid check refuses the pairing message
/// before reading it, even with the folder and socket opened up.
#[test]
fn another_uid_cannot_pair() {
    let f = Fixture::new();
    let r = start(&f);
    if !rustix::process::geteuid().is_root() {
        eprintln!("skipped: it needs root to act as nobody");
        return;
    }
    let sock = r.run_dir.join("ground-link").join(native::SOCKET_NAME);
    let out = send_as_nobody(&f, &sock, r#"{"type":"pair"}"#);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("refused") && text.contains("uid 65534"),
        "{text}"
    );
    assert!(!text.contains(crate::bridge::TOKEN), "{text}");
    assert!(!text.contains("paired"), "{text}");
}

/// Opens the way to `sock` for `nobody` (as a careless chmod would: the peer-uid check must
/// stand on its own), then sends `message` as one frame from a process running as `nobody` and
/// prints the answer frame. Needs root.
fn send_as_nobody(f: &Fixture, sock: &Path, message: &str) -> std::process::Output {
    let mut p = sock.to_path_buf();
    while p != f.base().parent().unwrap() {
        let m = if p == sock { 0o666 } else { 0o711 };
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(m)).unwrap();
        p = p.parent().unwrap().to_path_buf();
    }
    let client = "import socket,struct,sys\n\
        s=socket.socket(socket.AF_UNIX);s.connect(sys.argv[1])\n\
        b=sys.argv[2].encode()\n\
        try: s.sendall(struct.pack('<I',len(b))+b)\n\
        except OSError: pass\n\
        n=struct.unpack('<I',s.recv(4))[0];d=b''\n\
        while len(d)<n:\n  c=s.recv(n-len(d))\n  if not c: break\n  d+=c\n\
        print(d.decode())\n";
    Command::new("setpriv")
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "/usr/bin/python3",
            "-c",
            client,
        ])
        .arg(sock)
        .arg(message)
        .output()
        .unwrap()
}

#[test]
fn install_native_host_system_writes_the_etc_folders_of_installed_browsers() {
    let f = Fixture::new();
    let etc = f.base().join("etc");
    // Chromium is installed (its /etc folder exists), Chrome and Edge are not.
    std::fs::create_dir_all(etc.join("chromium")).unwrap();
    let run = |args: &[&str]| {
        Command::new(BIN)
            .arg("install-native-host")
            .args(args)
            .env("GROUND_LINK_ETC", &etc)
            .output()
            .unwrap()
    };
    let out = run(&["--system"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let file = etc.join("chromium/native-messaging-hosts/dev.groundlink.host.json");
    let m: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(
        m["allowed_origins"],
        json!([format!("chrome-extension://{}/", native::EXTENSION_ID)])
    );
    assert!(
        !etc.join("opt").exists(),
        "nothing for browsers that are not there"
    );
    // Brave has no system folder: said, not guessed.
    let out = run(&["--system", "--browser", "brave"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("leave out --system"));
    // --system and --dir together are refused.
    let out = run(&["--system", "--dir", "/tmp/x"]);
    assert!(!out.status.success());
    let out = run(&["--system", "--uninstall"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!file.exists());
}
