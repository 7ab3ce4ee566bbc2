//! Suite: the bridge over real HTTP — every route and status code, an attack table, concurrent
//! writes, approvals that time out, are cancelled or die with the server, long approvals
//! through `GET /calls/{id}`, and `kill -9` under load.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use ground_link::approval::{AllowOnceApprover, Approver, DenyApprover};
use ground_link::bridge::broker::Broker;
use ground_link::bridge::token::Token;
use ground_link::engine::Engine;
use ground_link::protocol::{ApprovalAnswer, ApprovalMode, ApprovalRequest, SandboxMode, Scope};
use reqwest::StatusCode;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::util::Fixture;

pub(crate) const TOKEN: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
const EXT: &str = "chrome-extension://abcdefghijklmnopabcdefghijklmnop";

pub(crate) struct Server {
    pub(crate) base: String,
    pub(crate) port: u16,
    pub(crate) runtime: tokio::runtime::Runtime,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    done: Option<tokio::task::JoinHandle<()>>,
    bridge: Arc<ground_link::bridge::Bridge>,
}

impl Server {
    pub(crate) fn start(
        f: &Fixture,
        approver: Arc<dyn Approver>,
        mode: ApprovalMode,
        approval_timeout: Duration,
    ) -> Server {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let mut config = f.config(SandboxMode::WorkspaceWrite, mode);
        config.approval_timeout = approval_timeout;
        let broker = Broker::new(approver);
        let engine = Arc::new(Engine::new(config, broker.approver()).unwrap());
        let token = Token::from_secret(TOKEN.to_string(), "a test");
        let bound = runtime
            .block_on(ground_link::bridge::bind(engine, broker, token, 0))
            .unwrap();
        let port = bound.addr().port();
        let bridge = Arc::clone(&bound.bridge);
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let done = runtime.spawn(async move {
            bound
                .serve(async move {
                    let _ = rx.await;
                })
                .await
                .unwrap();
        });
        Server {
            base: format!("http://127.0.0.1:{port}"),
            port,
            runtime,
            stop: Some(tx),
            done: Some(done),
            bridge,
        }
    }

    pub(crate) fn bridge(&self) -> &Arc<ground_link::bridge::Bridge> {
        &self.bridge
    }

    fn client(&self) -> reqwest::Client {
        reqwest::Client::builder()
            .timeout(Duration::from_secs(60))
            .build()
            .unwrap()
    }

    fn exec(&self, body: Value) -> (StatusCode, Value) {
        self.runtime.block_on(async {
            let r = self
                .client()
                .post(format!("{}/exec", self.base))
                .bearer_auth(TOKEN)
                .json(&body)
                .send()
                .await
                .unwrap();
            let status = r.status();
            (status, r.json().await.unwrap_or(Value::Null))
        })
    }

    /// Open `/events` with the token; the stream stays open while the response lives.
    fn events(&self, c: &reqwest::Client) -> reqwest::Response {
        let r = self.runtime.block_on(async {
            c.get(format!("{}/events", self.base))
                .bearer_auth(TOKEN)
                .send()
                .await
                .unwrap()
        });
        assert_eq!(r.status(), 200);
        r
    }

    pub(crate) fn shutdown(&mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        if let Some(done) = self.done.take() {
            self.runtime.block_on(done).unwrap();
        }
    }
}

pub(crate) fn audit_lines(f: &Fixture) -> Vec<Value> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(f.paths.audit_dir())
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".jsonl"))
    {
        for line in std::fs::read_to_string(e.path())
            .unwrap()
            .lines()
            .filter(|l| !l.trim().is_empty())
        {
            out.push(serde_json::from_str(line).unwrap());
        }
    }
    out
}

/// Lines in the audit files so far (the last may be half-written while a server runs).
fn count_audit_lines(f: &Fixture) -> usize {
    let Ok(dir) = std::fs::read_dir(f.paths.audit_dir()) else {
        return 0;
    };
    dir.flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".jsonl"))
        .map(|e| {
            std::fs::read(e.path())
                .map(|b| b.iter().filter(|c| **c == b'\n').count())
                .unwrap_or(0)
        })
        .sum()
}

/// Raw HTTP, so the test controls every header (Host included).
pub(crate) fn raw(port: u16, request: &str) -> (u16, String) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(request.as_bytes()).unwrap();
    let mut buf = Vec::new();
    let _ = s.read_to_end(&mut buf);
    let text = String::from_utf8_lossy(&buf).into_owned();
    let code = text
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    (code, text)
}

#[test]
fn routes_and_status_codes() {
    let f = Fixture::new();
    f.put("root/hello.txt", "hello bridge\n");
    let mut s = Server::start(
        &f,
        Arc::new(DenyApprover {
            reason: Some("nope".into()),
        }),
        ApprovalMode::Ask,
        Duration::from_secs(5),
    );
    let c = s.client();
    s.runtime.block_on(async {
        // /health without and with a token.
        let v: Value = c
            .get(format!("{}/health", s.base))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(
            (v["status"].as_str(), v["app"].as_str()),
            (Some("ok"), Some("ground-link"))
        );
        assert!(
            v.get("dir").is_none(),
            "health leaks the root without a token: {v}"
        );
        let v: Value = c
            .get(format!("{}/health", s.base))
            .bearer_auth(TOKEN)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert!(v["dir"].as_str().unwrap().ends_with("/root"));
        assert_eq!(
            (v["sandbox"].as_str(), v["mode"].as_str()),
            (Some("workspace-write"), Some("ask"))
        );
        // /tools
        let v: Value = c
            .get(format!("{}/tools", s.base))
            .bearer_auth(TOKEN)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let tools = v["tools"].as_array().unwrap();
        assert_eq!(tools.len(), 7);
        for t in tools {
            assert!(
                t["inputSchema"].is_object()
                    && t["annotations"]["readOnlyHint"].is_boolean()
                    && t["risk"].is_string(),
                "{t}"
            );
        }
        // /prompt
        let r = c
            .get(format!("{}/prompt?lang=zh", s.base))
            .bearer_auth(TOKEN)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
        assert!(r.text().await.unwrap().contains("工具"));
        let r = c
            .get(format!("{}/prompt?lang=fr", s.base))
            .bearer_auth(TOKEN)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 400);
        // /calls of nothing
        let r = c
            .get(format!("{}/calls/nope", s.base))
            .bearer_auth(TOKEN)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 404);
        let r = c
            .delete(format!("{}/calls/nope", s.base))
            .bearer_auth(TOKEN)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 404);
        // Malformed bodies are 400 and say why.
        for (body, needle) in [
            ("{", "not valid JSON"),
            ("{\"args\":{}}", "no \"name\""),
            ("[]", "JSON object"),
            ("{\"name\":1}", "name"),
        ] {
            let r = c
                .post(format!("{}/exec", s.base))
                .bearer_auth(TOKEN)
                .body(body)
                .send()
                .await
                .unwrap();
            assert_eq!(r.status(), 400, "{body}");
            let v: Value = r.json().await.unwrap();
            assert!(v["error"].as_str().unwrap().contains(needle), "{body}: {v}");
        }
        let r = c
            .get(format!("{}/nowhere", s.base))
            .bearer_auth(TOKEN)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 404);
    });
    // Tool outcomes are 200 with a status.
    let (code, v) = s.exec(json!({"name": "read_file", "args": {"path": "hello.txt"}}));
    assert_eq!(
        (code, v["status"].as_str()),
        (StatusCode::OK, Some("success"))
    );
    assert!(v["output"].as_str().unwrap().contains("hello bridge"));
    assert!(
        v["formatted"]
            .as_str()
            .unwrap()
            .contains("<tool_result name=\"read_file\" status=\"success\">")
    );
    let (code, v) = s.exec(json!({"name": "write_file", "args": {"path": "x", "content": "y"}}));
    assert_eq!(
        (code, v["status"].as_str()),
        (StatusCode::OK, Some("denied"))
    );
    assert!(v["output"].as_str().unwrap().contains("Reason: nope"));
    let (code, v) = s.exec(json!({"name": "warp_drive"}));
    assert_eq!(
        (code, v["status"].as_str()),
        (StatusCode::OK, Some("error"))
    );
    let (code, v) = s.exec(json!({"name": "list_dir", "callId": "fixed-1"}));
    assert_eq!(
        (code, v["callId"].as_str()),
        (StatusCode::OK, Some("fixed-1"))
    );
    // A result delivered in the POST response is not kept (memory stays flat under load).
    s.runtime.block_on(async {
        let r = c
            .get(format!("{}/calls/fixed-1", s.base))
            .bearer_auth(TOKEN)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 404);
    });
    // 413 before the body is buffered: the server answers while the client is still sending.
    let (code, _) = raw(
        s.port,
        &format!(
            "POST /exec HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nAuthorization: Bearer {TOKEN}\r\nContent-Type: application/json\r\nContent-Length: 67108864\r\nConnection: close\r\n\r\n{{\"name\":",
            s.port
        ),
    );
    assert_eq!(code, 413);
    s.shutdown();
}

#[test]
fn attack_table_nothing_gets_through() {
    let f = Fixture::new();
    let marker = f.root.join("pwned.txt");
    let mut s = Server::start(
        &f,
        Arc::new(AllowOnceApprover),
        ApprovalMode::Auto,
        Duration::from_secs(5),
    );
    let p = s.port;
    let body = r#"{"name":"write_file","args":{"path":"pwned.txt","content":"x"}}"#;
    let host = format!("127.0.0.1:{p}");
    let auth = format!("Bearer {TOKEN}");
    let prefix = format!("Bearer {}", &TOKEN[..40]);
    let longer = format!("Bearer {TOKEN}0");
    let basic = format!("Basic {}", "Z3JvdW5kOmxpbms=");
    let lower = format!("bearer {TOKEN}");
    // (name, method, path, headers, expected status)
    type Case<'a> = (&'a str, &'a str, String, Vec<(&'a str, String)>, u16);
    let cases: Vec<Case> = vec![
        (
            "no token",
            "POST",
            "/exec".into(),
            vec![("Host", host.clone())],
            401,
        ),
        (
            "wrong token",
            "POST",
            "/exec".into(),
            vec![
                ("Host", host.clone()),
                ("Authorization", "Bearer wrong".into()),
            ],
            401,
        ),
        (
            "token prefix",
            "POST",
            "/exec".into(),
            vec![("Host", host.clone()), ("Authorization", prefix.clone())],
            401,
        ),
        (
            "token plus a char",
            "POST",
            "/exec".into(),
            vec![("Host", host.clone()), ("Authorization", longer.clone())],
            401,
        ),
        (
            "empty bearer",
            "POST",
            "/exec".into(),
            vec![("Host", host.clone()), ("Authorization", "Bearer ".into())],
            401,
        ),
        (
            "lowercase scheme",
            "POST",
            "/exec".into(),
            vec![("Host", host.clone()), ("Authorization", lower.clone())],
            401,
        ),
        (
            "basic auth",
            "POST",
            "/exec".into(),
            vec![("Host", host.clone()), ("Authorization", basic.clone())],
            401,
        ),
        (
            "token in query",
            "POST",
            format!("/exec?token={TOKEN}"),
            vec![("Host", host.clone())],
            401,
        ),
        (
            "token in access_token query",
            "POST",
            format!("/exec?access_token={TOKEN}"),
            vec![("Host", host.clone())],
            401,
        ),
        (
            "two auth headers",
            "POST",
            "/exec".into(),
            vec![
                ("Host", host.clone()),
                ("Authorization", "Bearer wrong".into()),
                ("Authorization", auth.clone()),
            ],
            401,
        ),
        (
            "evil host",
            "POST",
            "/exec".into(),
            vec![
                ("Host", format!("evil.example:{p}")),
                ("Authorization", auth.clone()),
            ],
            403,
        ),
        (
            "rebinding host",
            "POST",
            "/exec".into(),
            vec![
                ("Host", format!("127.0.0.1.evil.example:{p}")),
                ("Authorization", auth.clone()),
            ],
            403,
        ),
        (
            "wrong port",
            "POST",
            "/exec".into(),
            vec![
                ("Host", format!("127.0.0.1:{}", p.wrapping_add(1))),
                ("Authorization", auth.clone()),
            ],
            403,
        ),
        (
            "host without port",
            "POST",
            "/exec".into(),
            vec![
                ("Host", "127.0.0.1".into()),
                ("Authorization", auth.clone()),
            ],
            403,
        ),
        (
            "no host",
            "POST",
            "/exec".into(),
            vec![("Authorization", auth.clone())],
            403,
        ),
        (
            "web origin",
            "POST",
            "/exec".into(),
            vec![
                ("Host", host.clone()),
                ("Authorization", auth.clone()),
                ("Origin", "https://evil.example".into()),
            ],
            403,
        ),
        (
            "null origin",
            "POST",
            "/exec".into(),
            vec![
                ("Host", host.clone()),
                ("Authorization", auth.clone()),
                ("Origin", "null".into()),
            ],
            403,
        ),
        (
            "localhost page",
            "POST",
            "/exec".into(),
            vec![
                ("Host", host.clone()),
                ("Authorization", auth.clone()),
                ("Origin", "http://localhost:3000".into()),
            ],
            403,
        ),
        (
            "loopback page same port",
            "POST",
            "/exec".into(),
            vec![
                ("Host", host.clone()),
                ("Authorization", auth.clone()),
                ("Origin", format!("http://127.0.0.1:{p}")),
            ],
            403,
        ),
        (
            "chat site",
            "POST",
            "/exec".into(),
            vec![
                ("Host", host.clone()),
                ("Authorization", auth.clone()),
                ("Origin", "https://chat.deepseek.com".into()),
            ],
            403,
        ),
        (
            "chatgpt",
            "POST",
            "/exec".into(),
            vec![
                ("Host", host.clone()),
                ("Authorization", auth.clone()),
                ("Origin", "https://chatgpt.com".into()),
            ],
            403,
        ),
        (
            "extension prefix trick",
            "POST",
            "/exec".into(),
            vec![
                ("Host", host.clone()),
                ("Authorization", auth.clone()),
                (
                    "Origin",
                    "chrome-extension://abcdefghijklmnopabcdefghijklmnop.evil.example".into(),
                ),
            ],
            403,
        ),
        (
            "extension short id",
            "POST",
            "/exec".into(),
            vec![
                ("Host", host.clone()),
                ("Authorization", auth.clone()),
                ("Origin", "chrome-extension://abc".into()),
            ],
            403,
        ),
        (
            "moz extension",
            "POST",
            "/exec".into(),
            vec![
                ("Host", host.clone()),
                ("Authorization", auth.clone()),
                (
                    "Origin",
                    "moz-extension://abcdefghijklmnopabcdefghijklmnop".into(),
                ),
            ],
            403,
        ),
        (
            "preflight from web",
            "OPTIONS",
            "/exec".into(),
            vec![
                ("Host", host.clone()),
                ("Origin", "https://evil.example".into()),
                ("Access-Control-Request-Method", "POST".into()),
            ],
            403,
        ),
        (
            "preflight no origin",
            "OPTIONS",
            "/exec".into(),
            vec![
                ("Host", host.clone()),
                ("Access-Control-Request-Method", "POST".into()),
            ],
            401,
        ),
        (
            "health from web page",
            "GET",
            "/health".into(),
            vec![
                ("Host", host.clone()),
                ("Origin", "https://evil.example".into()),
            ],
            403,
        ),
        (
            "events from web page",
            "GET",
            "/events".into(),
            vec![
                ("Host", host.clone()),
                ("Origin", "https://evil.example".into()),
                ("Authorization", auth.clone()),
            ],
            403,
        ),
        (
            "approve path",
            "POST",
            "/approve".into(),
            vec![("Host", host.clone()), ("Authorization", auth.clone())],
            404,
        ),
        (
            "approvals path",
            "POST",
            "/approvals/c-1".into(),
            vec![("Host", host.clone()), ("Authorization", auth.clone())],
            404,
        ),
        (
            "answer a call",
            "POST",
            "/calls/c-1".into(),
            vec![("Host", host.clone()), ("Authorization", auth.clone())],
            405,
        ),
        (
            "put a call",
            "PUT",
            "/calls/c-1/answer".into(),
            vec![("Host", host.clone()), ("Authorization", auth.clone())],
            404,
        ),
        (
            "settings path",
            "POST",
            "/settings".into(),
            vec![("Host", host.clone()), ("Authorization", auth.clone())],
            404,
        ),
    ];
    assert!(cases.len() >= 30);
    for (name, method, path, headers, want) in cases {
        let mut req = format!("{method} {path} HTTP/1.1\r\n");
        for (k, v) in &headers {
            req.push_str(&format!("{k}: {v}\r\n"));
        }
        req.push_str(&format!("Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}", body.len()));
        let (code, text) = raw(p, &req);
        assert_eq!(code, want, "{name}: {text}");
        assert!(
            !text.to_ascii_lowercase().contains("access-control-allow"),
            "{name}: CORS header in {text}"
        );
        assert!(!marker.exists(), "{name}: the call ran");
    }
    // The same request with the token, no Origin, and a good Host does run (the table is not vacuous).
    let (code, text) = raw(
        p,
        &format!(
            "POST /exec HTTP/1.1\r\nHost: {host}\r\nAuthorization: {auth}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        ),
    );
    assert_eq!(code, 200, "{text}");
    assert!(marker.exists());
    // The extension's origin with the bearer token is refused: a browser must sign, so the raw
    // key never travels from one (signed requests are paired: see the signing tests).
    let (code, _) = raw(
        p,
        &format!(
            "GET /health HTTP/1.1\r\nHost: localhost:{p}\r\nAuthorization: {auth}\r\nOrigin: {EXT}\r\nConnection: close\r\n\r\n"
        ),
    );
    assert_eq!(code, 401);
    assert!(!s.bridge.paired().contains_key(EXT));
    s.shutdown();
}

#[test]
fn fifty_concurrent_appends_lose_nothing() {
    let f = Fixture::new();
    let mut s = Server::start(
        &f,
        Arc::new(DenyApprover { reason: None }),
        ApprovalMode::Auto,
        Duration::from_secs(5),
    );
    let c = s.client();
    let results = s.runtime.block_on(async {
        let mut tasks = Vec::new();
        for i in 0..50 {
            let c = c.clone();
            let url = format!("{}/exec", s.base);
            tasks.push(tokio::spawn(async move {
                let line = format!("line {i:02} {}\n", "x".repeat(200));
                let body = json!({"name": "write_file", "args": {"path": "log.txt", "content": line, "mode": "append"}});
                let r = c.post(url).bearer_auth(TOKEN).json(&body).send().await.unwrap();
                r.json::<Value>().await.unwrap()["status"].as_str().unwrap().to_string()
            }));
        }
        let mut out = Vec::new();
        for t in tasks {
            out.push(t.await.unwrap());
        }
        out
    });
    assert!(results.iter().all(|r| r == "success"), "{results:?}");
    let text = std::fs::read_to_string(f.root.join("log.txt")).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 50, "{text}");
    lines.sort();
    for (i, l) in lines.iter().enumerate() {
        assert_eq!(*l, format!("line {i:02} {}", "x".repeat(200)));
    }
    s.shutdown();
}

/// Never answers: only timeouts, cancels and shutdown end its questions.
pub(crate) struct Silent;

#[async_trait]
impl Approver for Silent {
    async fn ask(&self, _r: ApprovalRequest) -> ApprovalAnswer {
        std::future::pending().await
    }
    fn name(&self) -> &'static str {
        "silent"
    }
}

#[test]
fn approval_timeout_denies_and_is_audited() {
    let f = Fixture::new();
    let mut s = Server::start(
        &f,
        Arc::new(Silent),
        ApprovalMode::Ask,
        Duration::from_millis(600),
    );
    let (code, v) = s.exec(
        json!({"name": "write_file", "args": {"path": "a", "content": "b"}, "callId": "t-1"}),
    );
    assert_eq!(code, StatusCode::OK);
    assert_eq!(v["status"], "denied");
    assert!(
        v["output"].as_str().unwrap().contains("no answer within"),
        "{v}"
    );
    s.shutdown();
    let line = audit_lines(&f)
        .into_iter()
        .find(|l| l["callId"] == "t-1")
        .unwrap();
    assert_eq!(line["answer"], "timeout");
    assert_eq!(line["status"], "denied");
}

#[test]
fn client_cancel_denies_and_is_audited() {
    let f = Fixture::new();
    let mut s = Server::start(
        &f,
        Arc::new(Silent),
        ApprovalMode::Ask,
        Duration::from_secs(60),
    );
    let (code, v) = s.exec(json!({"name": "write_file", "args": {"path": "a", "content": "b"}, "callId": "c-1", "waitMs": 300}));
    assert_eq!(
        (code, v["status"].as_str()),
        (StatusCode::ACCEPTED, Some("pending")),
        "{v}"
    );
    let c = s.client();
    let v: Value = s.runtime.block_on(async {
        let r = c
            .delete(format!("{}/calls/c-1", s.base))
            .bearer_auth(TOKEN)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
        r.json().await.unwrap()
    });
    assert_eq!(v["status"], "denied");
    assert!(
        v["output"]
            .as_str()
            .unwrap()
            .contains("cancelled by the client"),
        "{v}"
    );
    assert!(!f.root.join("a").exists());
    s.shutdown();
    let line = audit_lines(&f)
        .into_iter()
        .find(|l| l["callId"] == "c-1")
        .unwrap();
    assert_eq!(line["answer"], "deny: cancelled by the client");
}

#[test]
fn shutdown_with_a_pending_call_denies_it() {
    let f = Fixture::new();
    let mut s = Server::start(
        &f,
        Arc::new(Silent),
        ApprovalMode::Ask,
        Duration::from_secs(60),
    );
    let (code, _) = s.exec(json!({"name": "write_file", "args": {"path": "a", "content": "b"}, "callId": "s-1", "waitMs": 200}));
    assert_eq!(code, StatusCode::ACCEPTED);
    s.shutdown();
    assert!(!f.root.join("a").exists());
    let line = audit_lines(&f)
        .into_iter()
        .find(|l| l["callId"] == "s-1")
        .expect("shutdown must audit the pending call");
    assert_eq!(line["status"], "denied");
    assert!(
        line["answer"].as_str().unwrap().contains("shut down"),
        "{line}"
    );
}

/// Answers when the test says so.
struct Gate {
    rx: tokio::sync::Mutex<mpsc::UnboundedReceiver<ApprovalAnswer>>,
}

#[async_trait]
impl Approver for Gate {
    async fn ask(&self, _r: ApprovalRequest) -> ApprovalAnswer {
        self.rx
            .lock()
            .await
            .recv()
            .await
            .unwrap_or(ApprovalAnswer::Deny { reason: None })
    }
    fn name(&self) -> &'static str {
        "gate"
    }
}

#[test]
fn a_slow_approval_is_delivered_through_calls_and_events() {
    let f = Fixture::new();
    let (tx, rx) = mpsc::unbounded_channel();
    let mut s = Server::start(
        &f,
        Arc::new(Gate {
            rx: tokio::sync::Mutex::new(rx),
        }),
        ApprovalMode::Ask,
        Duration::from_secs(60),
    );
    let c = s.client();
    // Listen to the event stream first.
    let events = s.events(&c);
    let (code, v) = s.exec(json!({"name": "write_file", "args": {"path": "slow.txt", "content": "ok"}, "callId": "w-1", "waitMs": 200}));
    assert_eq!(
        (code, v["status"].as_str(), v["callId"].as_str()),
        (StatusCode::ACCEPTED, Some("pending"), Some("w-1"))
    );
    // The id of a call in flight cannot be reused.
    let (code, _) = s.exec(json!({"name": "list_dir", "callId": "w-1"}));
    assert_eq!(code, StatusCode::CONFLICT);
    // A long-poll that ends before the answer is still pending.
    let r = s.runtime.block_on(async {
        c.get(format!("{}/calls/w-1?waitMs=300", s.base))
            .bearer_auth(TOKEN)
            .send()
            .await
            .unwrap()
    });
    assert_eq!(r.status(), 202);
    tx.send(ApprovalAnswer::Allow {
        scope: Scope::Once,
        rule: None,
        network: false,
    })
    .unwrap();
    let v: Value = s.runtime.block_on(async {
        c.get(format!("{}/calls/w-1", s.base))
            .bearer_auth(TOKEN)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    });
    assert_eq!(v["status"], "success", "{v}");
    assert_eq!(
        std::fs::read_to_string(f.root.join("slow.txt")).unwrap(),
        "ok"
    );
    // The stream told the story: pending, resolved, done.
    let seen = s.runtime.block_on(async {
        let mut stream = events.bytes_stream();
        let mut text = String::new();
        use futures_util::StreamExt;
        while !text.contains("\"done\"") {
            match tokio::time::timeout(Duration::from_secs(5), stream.next()).await {
                Ok(Some(Ok(b))) => text.push_str(&String::from_utf8_lossy(&b)),
                _ => break,
            }
        }
        text
    });
    let p = seen.find("\"type\":\"pending\"").expect(&seen);
    let r = seen.find("\"type\":\"resolved\"").expect(&seen);
    let d = seen.find("\"type\":\"done\"").expect(&seen);
    assert!(p < r && r < d, "{seen}");
    s.shutdown();
}

#[test]
fn kill_nine_under_load_leaves_a_verifiable_audit_log() {
    use std::process::{Command, Stdio};
    let f = Fixture::new();
    f.put("root/data.txt", &"some text\n".repeat(400));
    let token_file = f.base().join("token");
    std::fs::write(&token_file, format!("{TOKEN}\n")).unwrap();
    let env = |c: &mut Command| {
        c.env("XDG_CONFIG_HOME", f.base().join("config"))
            .env("XDG_DATA_HOME", f.base().join("data"))
            .env(
                "GROUND_LINK_MANAGED_FILE",
                f.base().join("managed/permissions.json"),
            );
    };
    for round in 0..2 {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_ground-link"));
        cmd.args([
            "serve",
            "--dir",
            f.root.to_str().unwrap(),
            "--port",
            "0",
            "--token-file",
            token_file.to_str().unwrap(),
            "--approval",
            "deny",
        ]);
        env(&mut cmd);
        let mut child = cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // Read the address, then close our end of stdout: the server must keep serving.
        let mut first = String::new();
        std::io::BufRead::read_line(
            &mut std::io::BufReader::new(child.stdout.take().unwrap()),
            &mut first,
        )
        .unwrap();
        let base = first.trim().rsplit(' ').next().unwrap().to_string();
        assert!(base.starts_with("http://127.0.0.1:"), "{first}");
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let c = reqwest::Client::new();
            let mut tasks = Vec::new();
            for _ in 0..8 {
                let c = c.clone();
                let url = format!("{base}/exec");
                tasks.push(tokio::spawn(async move {
                    for _ in 0..10_000 {
                        let body = json!({"name": "read_file", "args": {"path": "data.txt"}});
                        if c.post(&url)
                            .bearer_auth(TOKEN)
                            .json(&body)
                            .send()
                            .await
                            .is_err()
                        {
                            break;
                        }
                    }
                }));
            }
            // Kill once the load is really flowing (a slow machine takes a while to get there).
            let start = std::time::Instant::now();
            while count_audit_lines(&f) < 100 * (round + 1)
                && start.elapsed() < Duration::from_secs(30)
            {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            child.kill().unwrap(); // SIGKILL, mid-load
            for t in tasks {
                let _ = t.await;
            }
        });
        let _ = child.wait();
        let mut verify = Command::new(env!("CARGO_BIN_EXE_ground-link"));
        verify.args(["audit", "verify"]);
        env(&mut verify);
        let out = verify.output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "round {round}: {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    assert!(
        audit_lines(&f).len() > 20,
        "the load did not reach the server"
    );
}

#[test]
fn a_running_call_cannot_be_cancelled_and_bad_queries_say_why() {
    let f = Fixture::new();
    let mut s = Server::start(
        &f,
        Arc::new(AllowOnceApprover),
        ApprovalMode::Ask,
        Duration::from_secs(5),
    );
    let (code, v) = s.exec(json!({"name": "exec_cmd", "args": {"command": "sleep 2; echo finished"}, "callId": "r-1", "waitMs": 300}));
    assert_eq!(
        (code, v["status"].as_str()),
        (StatusCode::ACCEPTED, Some("pending")),
        "{v}"
    );
    let c = s.client();
    s.runtime.block_on(async {
        let started = std::time::Instant::now();
        let r = c
            .delete(format!("{}/calls/r-1", s.base))
            .bearer_auth(TOKEN)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 409);
        assert!(
            started.elapsed() < Duration::from_secs(1),
            "the answer must not wait"
        );
        let v: Value = r.json().await.unwrap();
        assert!(
            v["error"].as_str().unwrap().contains("already running"),
            "{v}"
        );
        let v: Value = c
            .get(format!("{}/calls/r-1", s.base))
            .bearer_auth(TOKEN)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(v["status"], "success", "{v}");
        assert!(v["output"].as_str().unwrap().contains("finished"));
        let r = c
            .get(format!("{}/calls/r-1?waitMs=abc", s.base))
            .bearer_auth(TOKEN)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 400);
        let v: Value = r.json().await.unwrap();
        assert!(v["error"].as_str().unwrap().contains("waitMs"), "{v}");
    });
    s.shutdown();
}

#[test]
fn connected_means_a_recent_authenticated_request_or_an_open_event_stream() {
    let f = Fixture::new();
    let mut s = Server::start(
        &f,
        Arc::new(DenyApprover { reason: None }),
        ApprovalMode::Ask,
        Duration::from_secs(5),
    );
    let c = s.client();
    let window = Duration::from_secs(60);
    // Requests without the token, or with a wrong one, connect nobody.
    s.runtime.block_on(async {
        let _ = c.get(format!("{}/health", s.base)).send().await.unwrap();
        let r = c
            .get(format!("{}/events", s.base))
            .bearer_auth("f".repeat(64))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 401);
    });
    assert!(!s.bridge.connected(window));
    assert_eq!(s.bridge.listeners(), 0);

    // An authenticated request connects for the window, and only for it.
    s.runtime.block_on(async {
        let r = c
            .get(format!("{}/health", s.base))
            .bearer_auth(TOKEN)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
    });
    assert!(s.bridge.connected(window));
    std::thread::sleep(Duration::from_millis(2100));
    assert!(!s.bridge.connected(Duration::ZERO), "the window has passed");

    // A held event stream keeps the extension connected however old its last request is.
    let events = s.events(&c);
    assert_eq!(s.bridge.listeners(), 1);
    std::thread::sleep(Duration::from_millis(2100));
    assert!(
        s.bridge.connected(Duration::ZERO),
        "the stream is still open"
    );

    // Closing the stream (the client goes away) ends it; the server notices within its
    // keep-alive interval at the latest.
    drop(events);
    drop(c);
    let start = std::time::Instant::now();
    while s.bridge.listeners() != 0 && start.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(s.bridge.listeners(), 0);
    assert!(!s.bridge.connected(Duration::ZERO));
    s.shutdown();
}

/// Shutting down ends open event streams, so the server stops at once and the client sees the
/// end (and reconnects to whatever serves next) instead of holding a dead stream.
#[test]
fn shutdown_ends_event_streams() {
    let f = Fixture::new();
    let mut s = Server::start(
        &f,
        Arc::new(DenyApprover { reason: None }),
        ApprovalMode::Ask,
        Duration::from_secs(5),
    );
    let c = s.client();
    let events = s.events(&c);
    let _ = s.stop.take().unwrap().send(());
    let done = s.done.take().unwrap();
    let stopped = s.runtime.block_on(async {
        tokio::time::timeout(Duration::from_secs(5), done)
            .await
            .is_ok()
    });
    assert!(stopped, "the server kept waiting for the open event stream");
    let ended = s.runtime.block_on(async {
        use futures_util::StreamExt;
        let mut stream = events.bytes_stream();
        tokio::time::timeout(Duration::from_secs(5), async {
            while let Some(Ok(_)) = stream.next().await {}
        })
        .await
        .is_ok()
    });
    assert!(ended, "the event stream did not end");
    assert_eq!(s.bridge.listeners(), 0);
}

// ---- signed requests and answers (DESIGN §6), floods (DESIGN §5.2) ----

use ground_link::bridge::sign;

/// A signed request as the extension sends it, to `port`, signed for `signed_host`; the
/// answer's status, its `x-ground-link-answer` header and body, and the nonce used.
struct SignedAnswer {
    status: u16,
    answer_mac: Option<String>,
    body: String,
    nonce: String,
}

fn signed_headers(method: &str, path: &str, host: &str, body: &str) -> Vec<(String, String)> {
    let h = sign::sign_request(TOKEN.as_bytes(), method, path, host, body.as_bytes()).unwrap();
    vec![
        (sign::HEADER_NONCE.into(), h.nonce),
        (sign::HEADER_TIME.into(), h.time_ms.to_string()),
        (sign::HEADER_SIGNATURE.into(), h.signature),
    ]
}

/// Raw HTTP/1.1 with the given headers (the test controls Host and every signed field).
fn raw_request(
    port: u16,
    method: &str,
    path: &str,
    headers: &[(String, String)],
    body: &str,
) -> (u16, String) {
    let mut req = format!("{method} {path} HTTP/1.1\r\nConnection: close\r\n");
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    if !body.is_empty() {
        req.push_str(&format!(
            "Content-Type: application/json\r\nContent-Length: {}\r\n",
            body.len()
        ));
    }
    req.push_str("\r\n");
    req.push_str(body);
    raw(port, &req)
}

fn parse_answer(text: &str, nonce: String) -> SignedAnswer {
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((text, ""));
    let answer_mac = head.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        k.eq_ignore_ascii_case(sign::HEADER_ANSWER)
            .then(|| v.trim().to_string())
    });
    SignedAnswer {
        status,
        answer_mac,
        body: body.to_string(),
        nonce,
    }
}

fn signed(port: u16, method: &str, path: &str, body: &str) -> SignedAnswer {
    let host = format!("127.0.0.1:{port}");
    let mut headers = signed_headers(method, path, &host, body);
    let nonce = headers[0].1.clone();
    headers.push(("Host".into(), host));
    headers.push(("Origin".into(), EXT.into()));
    let (_, text) = raw_request(port, method, path, &headers, body);
    parse_answer(&text, nonce)
}

/// A signed `method path` with `key` (e.g. one handed out by native-messaging pairing): the
/// status, the body, and whether the answer is signed back with that same key.
pub(crate) fn signed_with_key(
    key: &str,
    port: u16,
    method: &str,
    path: &str,
    body: &str,
) -> (u16, String, bool) {
    let host = format!("127.0.0.1:{port}");
    let h = sign::sign_request(key.as_bytes(), method, path, &host, body.as_bytes()).unwrap();
    let nonce = h.nonce.clone();
    let headers = vec![
        (sign::HEADER_NONCE.to_string(), h.nonce),
        (sign::HEADER_TIME.to_string(), h.time_ms.to_string()),
        (sign::HEADER_SIGNATURE.to_string(), h.signature),
        ("Host".to_string(), host),
        ("Origin".to_string(), EXT.to_string()),
    ];
    let (_, text) = raw_request(port, method, path, &headers, body);
    let a = parse_answer(&text, nonce);
    let want = sign::answer_mac(
        key.as_bytes(),
        &a.nonce,
        a.status,
        &sign::body_digest(a.body.as_bytes()),
    );
    let verifies = a
        .answer_mac
        .as_deref()
        .is_some_and(|m| sign::same(&want, m));
    (a.status, a.body, verifies)
}

impl SignedAnswer {
    fn verifies(&self) -> bool {
        let want = sign::answer_mac(
            TOKEN.as_bytes(),
            &self.nonce,
            self.status,
            &sign::body_digest(self.body.as_bytes()),
        );
        self.answer_mac
            .as_deref()
            .is_some_and(|m| sign::same(&want, m))
    }
}

/// The extension's way in: every request signed, every answer signed back over the nonce —
/// and the raw key appears in no request at all.
#[test]
fn signed_requests_are_served_and_every_answer_is_signed() {
    let f = Fixture::new();
    std::fs::write(f.root.join("notes.txt"), "hello\n").unwrap();
    let mut s = Server::start(
        &f,
        Arc::new(DenyApprover { reason: None }),
        ApprovalMode::Ask,
        Duration::from_secs(5),
    );
    let health = signed(s.port, "GET", "/health", "");
    assert_eq!(health.status, 200, "{}", health.body);
    assert!(health.verifies(), "unsigned or mis-signed answer");
    let h: ground_link::bridge::wire::Health = serde_json::from_str(&health.body).unwrap();
    assert!(h.dir.is_some(), "a signed request is authenticated: {h:?}");
    assert_eq!(s.bridge.paired().keys().collect::<Vec<_>>(), vec![EXT]);

    let body = r#"{"name":"read_file","args":{"path":"notes.txt"},"callId":"s-1"}"#;
    let r = signed(s.port, "POST", "/exec", body);
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(r.verifies());
    assert!(r.body.contains("hello"), "{}", r.body);
    // The MAC covers the body: the same header over another body does not verify.
    let forged = SignedAnswer {
        body: r.body.replace("hello", "HELLO"),
        ..r
    };
    assert!(!forged.verifies());

    // A 404 and a 202 are signed too: whatever the bridge says, the client can check it.
    let r = signed(s.port, "GET", "/calls/nope?waitMs=10", "");
    assert_eq!((r.status, r.verifies()), (404, true));

    // The event stream: its header covers the nonce and status, each message its place.
    let host = format!("127.0.0.1:{}", s.port);
    let headers = signed_headers("GET", "/events", &host, "");
    let nonce = headers[0].1.clone();
    let c = s.client();
    let events = s.runtime.block_on(async {
        let mut b = c.get(format!("{}/events", s.base)).header("Origin", EXT);
        for (k, v) in &headers {
            b = b.header(k, v);
        }
        b.send().await.unwrap()
    });
    assert_eq!(events.status(), 200);
    let head = events
        .headers()
        .get(sign::HEADER_ANSWER)
        .and_then(|v| v.to_str().ok())
        .unwrap()
        .to_string();
    assert!(sign::same(
        &sign::answer_mac(TOKEN.as_bytes(), &nonce, 200, sign::STREAM_BODY),
        &head
    ));
    let (code, _) = s.exec(
        json!({"name": "write_file", "args": {"path": "x.txt", "content": "x"}, "callId": "w-9"}),
    );
    assert_eq!(code, StatusCode::OK);
    let text = s.runtime.block_on(async {
        use futures_util::StreamExt;
        let mut stream = events.bytes_stream();
        let mut text = String::new();
        while !text.contains("\"done\"") {
            match tokio::time::timeout(Duration::from_secs(5), stream.next()).await {
                Ok(Some(Ok(b))) => text.push_str(&String::from_utf8_lossy(&b)),
                _ => break,
            }
        }
        text
    });
    let mut seq = 0;
    for block in text.split("\n\n").filter(|b| b.contains("data:")) {
        let id = block
            .lines()
            .find_map(|l| l.strip_prefix("id:"))
            .unwrap()
            .trim();
        let data = block
            .lines()
            .find_map(|l| l.strip_prefix("data:"))
            .unwrap()
            .trim();
        assert!(
            sign::same(&sign::event_mac(TOKEN.as_bytes(), &nonce, seq, data), id),
            "event {seq} is not signed: {block}"
        );
        seq += 1;
    }
    assert_eq!(seq, 3, "pending, resolved, done: {text}");
    s.shutdown();
}

/// What a squatter or a replaying process could try with a captured signed request.
#[test]
fn replayed_stale_tampered_and_unsigned_extension_requests_are_refused() {
    let f = Fixture::new();
    // Stamped before the bridge started: what a squatter captured while the port was its own.
    let before_start = sign::now_ms();
    std::thread::sleep(Duration::from_millis(5));
    let mut s = Server::start(
        &f,
        Arc::new(AllowOnceApprover),
        ApprovalMode::Auto,
        Duration::from_secs(5),
    );
    let p = s.port;
    let host = format!("127.0.0.1:{p}");
    let body = r#"{"name":"write_file","args":{"path":"log.txt","content":"x","mode":"append"}}"#;
    let mut headers = signed_headers("POST", "/exec", &host, body);
    headers.push(("Host".into(), host.clone()));
    let (code, text) = raw_request(p, "POST", "/exec", &headers, body);
    assert_eq!(code, 200, "{text}");
    // The very same bytes again: a replay. Refused, and the file was appended to once.
    let (code, text) = raw_request(p, "POST", "/exec", &headers, body);
    assert_eq!(code, 401, "{text}");
    assert!(text.contains("already used"), "{text}");
    assert_eq!(
        std::fs::read_to_string(f.root.join("log.txt")).unwrap(),
        "x"
    );
    // A refused request gets no signed answer: nothing a client could take for the bridge's.
    assert!(
        !text.to_ascii_lowercase().contains(sign::HEADER_ANSWER),
        "{text}"
    );

    let with = |h: &[(String, String)], name: &str, value: String| {
        let mut h: Vec<(String, String)> = h.iter().filter(|(k, _)| k != name).cloned().collect();
        h.push((name.to_string(), value));
        h
    };
    let fresh = || {
        let mut h = signed_headers("POST", "/exec", &host, body);
        h.push(("Host".into(), host.clone()));
        h
    };
    // Correctly signed with the pairing key, at `time_ms`.
    let signed_at = |time_ms: u64| {
        let nonce = sign::fresh_nonce().unwrap();
        let sig = sign::request_mac(
            TOKEN.as_bytes(),
            &sign::RequestParts {
                method: "POST",
                path: "/exec",
                host: &host,
                nonce: &nonce,
                time_ms,
                body_digest: &sign::body_digest(body.as_bytes()),
            },
        );
        vec![
            (sign::HEADER_NONCE.to_string(), nonce),
            (sign::HEADER_TIME.to_string(), time_ms.to_string()),
            (sign::HEADER_SIGNATURE.to_string(), sig),
            ("Host".to_string(), host.clone()),
        ]
    };
    // Too far from the bridge's clock (too old is also "before the bridge started", below;
    // the window itself is unit-tested in src/bridge/sign.rs).
    let stale = signed_at(sign::now_ms() + sign::MAX_SKEW_MS + 5_000);
    let other_key = {
        let h = sign::sign_request(
            b"not the pairing key",
            "POST",
            "/exec",
            &host,
            body.as_bytes(),
        )
        .unwrap();
        vec![
            (sign::HEADER_NONCE.to_string(), h.nonce),
            (sign::HEADER_TIME.to_string(), h.time_ms.to_string()),
            (sign::HEADER_SIGNATURE.to_string(), h.signature),
            ("Host".to_string(), host.clone()),
        ]
    };
    let captured_earlier = signed_at(before_start);
    type Case = (&'static str, Vec<(String, String)>, String, &'static str);
    let tampered = body.replace("\"x\"", "\"y\"");
    let cases: Vec<Case> = vec![
        (
            "timestamp from the future",
            stale,
            body.to_string(),
            "away from the bridge's clock",
        ),
        ("another key", other_key, body.to_string(), "does not match"),
        (
            "signed before the bridge started",
            captured_earlier,
            body.to_string(),
            "before this bridge started",
        ),
        ("tampered body", fresh(), tampered, "does not match"),
        (
            "no signature",
            with(&fresh(), sign::HEADER_SIGNATURE, String::new())
                .into_iter()
                .filter(|(k, _)| k != sign::HEADER_SIGNATURE)
                .collect(),
            body.to_string(),
            "without",
        ),
        (
            "short nonce",
            with(&fresh(), sign::HEADER_NONCE, "abc".into()),
            body.to_string(),
            "malformed",
        ),
        (
            "time not a number",
            with(&fresh(), sign::HEADER_TIME, "soon".into()),
            body.to_string(),
            "malformed",
        ),
        (
            "signature and bearer both",
            with(&fresh(), "Authorization", format!("Bearer {TOKEN}")),
            body.to_string(),
            "not both",
        ),
        (
            "extension origin with the bearer token",
            vec![
                ("Host".into(), host.clone()),
                ("Origin".into(), EXT.into()),
                ("Authorization".into(), format!("Bearer {TOKEN}")),
            ],
            body.to_string(),
            "must sign",
        ),
    ];
    for (name, headers, b, says) in cases {
        let (code, text) = raw_request(p, "POST", "/exec", &headers, &b);
        assert_eq!(code, 401, "{name}: {text}");
        assert!(text.contains(says), "{name}: {text}");
    }
    assert_eq!(
        std::fs::read_to_string(f.root.join("log.txt")).unwrap(),
        "x"
    );
    s.shutdown();
}

/// A relay on the port the extension dials, forwarding to a bridge on another port: forwarded
/// as is, the Host names the relay's port (403); with Host rewritten, the signature (over the
/// dialled port) no longer matches (401). Either way nothing runs and no answer is signed.
#[test]
fn a_relay_to_a_bridge_on_another_port_fails() {
    let f = Fixture::new();
    let mut s = Server::start(
        &f,
        Arc::new(AllowOnceApprover),
        ApprovalMode::Auto,
        Duration::from_secs(5),
    );
    for rewrite_host in [false, true] {
        let relay = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let relay_port = relay.local_addr().unwrap().port();
        let bridge_port = s.port;
        let worker = std::thread::spawn(move || {
            let (mut inbound, _) = relay.accept().unwrap();
            inbound
                .set_read_timeout(Some(Duration::from_secs(5)))
                .unwrap();
            let mut buf = vec![0u8; 65536];
            let n = inbound.read(&mut buf).unwrap();
            let mut request = String::from_utf8_lossy(&buf[..n]).into_owned();
            if rewrite_host {
                request = request.replace(
                    &format!("127.0.0.1:{relay_port}"),
                    &format!("127.0.0.1:{bridge_port}"),
                );
            }
            let mut out = TcpStream::connect(("127.0.0.1", bridge_port)).unwrap();
            out.write_all(request.as_bytes()).unwrap();
            let mut answer = Vec::new();
            let _ = out.read_to_end(&mut answer);
            inbound.write_all(&answer).unwrap();
        });
        let body = r#"{"name":"write_file","args":{"path":"relayed.txt","content":"x"}}"#;
        let r = signed(relay_port, "POST", "/exec", body);
        worker.join().unwrap();
        let want = if rewrite_host { 401 } else { 403 };
        assert_eq!(r.status, want, "rewrite_host={rewrite_host}: {}", r.body);
        assert!(r.answer_mac.is_none(), "the refusal must not be signed");
        assert!(!f.root.join("relayed.txt").exists());
    }
    s.shutdown();
}

/// 2,000 pending calls are not held: past MAX_IN_FLIGHT unfinished calls the token gets 429
/// with a JSON error, and a slot frees when a call ends.
#[test]
fn pending_calls_per_token_are_bounded_with_429() {
    let f = Fixture::new();
    let (tx, rx) = mpsc::unbounded_channel();
    let mut s = Server::start(
        &f,
        Arc::new(Gate {
            rx: tokio::sync::Mutex::new(rx),
        }),
        ApprovalMode::Ask,
        Duration::from_secs(120),
    );
    let max = ground_link::bridge::MAX_IN_FLIGHT;
    for i in 0..max {
        let (code, v) = s.exec(json!({"name": "write_file", "args": {"path": format!("f{i}.txt"), "content": "x"}, "callId": format!("p-{i}"), "waitMs": 0}));
        assert_eq!(code, StatusCode::ACCEPTED, "call {i}: {v}");
    }
    let (code, v) = s.exec(json!({"name": "list_dir", "args": {}, "waitMs": 0}));
    assert_eq!(code, StatusCode::TOO_MANY_REQUESTS, "{v}");
    assert!(
        v["error"]
            .as_str()
            .unwrap()
            .contains("wait for some to finish"),
        "{v}"
    );
    // One answer ends one call; its slot is free again.
    tx.send(ApprovalAnswer::Deny { reason: None }).unwrap();
    let start = std::time::Instant::now();
    let mut code = StatusCode::TOO_MANY_REQUESTS;
    while code == StatusCode::TOO_MANY_REQUESTS && start.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(50));
        code = s.exec(json!({"name": "list_dir", "args": {}})).0;
    }
    assert_eq!(code, StatusCode::OK);
    s.shutdown();
}

/// A service worker restarted again and again leaves streams behind: past MAX_STREAMS, a new
/// stream ends the oldest, so they are never all held.
#[test]
fn event_streams_per_token_evict_the_oldest() {
    let f = Fixture::new();
    let mut s = Server::start(
        &f,
        Arc::new(DenyApprover { reason: None }),
        ApprovalMode::Ask,
        Duration::from_secs(5),
    );
    let max = ground_link::bridge::MAX_STREAMS;
    let c = s.client();
    let mut streams: Vec<reqwest::Response> = (0..max).map(|_| s.events(&c)).collect();
    assert_eq!(s.bridge.listeners(), max);
    streams.push(s.events(&c));
    let oldest = streams.remove(0);
    let ended = s.runtime.block_on(async {
        use futures_util::StreamExt;
        let mut stream = oldest.bytes_stream();
        tokio::time::timeout(Duration::from_secs(5), async {
            while let Some(Ok(_)) = stream.next().await {}
        })
        .await
        .is_ok()
    });
    assert!(ended, "the oldest stream was not ended");
    assert_eq!(s.bridge.listeners(), max);
    // The newest streams still carry events.
    let (code, _) =
        s.exec(json!({"name": "write_file", "args": {"path": "e.txt", "content": "x"}}));
    assert_eq!(code, StatusCode::OK);
    let newest = streams.pop().unwrap();
    let text = s.runtime.block_on(async {
        use futures_util::StreamExt;
        let mut stream = newest.bytes_stream();
        let mut text = String::new();
        while !text.contains("\"done\"") {
            match tokio::time::timeout(Duration::from_secs(5), stream.next()).await {
                Ok(Some(Ok(b))) => text.push_str(&String::from_utf8_lossy(&b)),
                _ => break,
            }
        }
        text
    });
    assert!(text.contains("\"done\""), "{text}");
    s.shutdown();
}

/// One reply's calls over the bridge: at most 20 run, the rest come back `not run`; after the
/// person's denial the rest of that reply do not run; another reply is not affected.
#[test]
fn a_reply_runs_at_most_20_calls_and_stops_at_the_persons_denial() {
    let f = Fixture::new();
    std::fs::write(f.root.join("a.txt"), "a\n").unwrap();
    let mut s = Server::start(
        &f,
        Arc::new(DenyApprover {
            reason: Some("no".into()),
        }),
        ApprovalMode::Ask,
        Duration::from_secs(5),
    );
    let max = ground_link::reply::MAX_CALLS_PER_REPLY;
    for i in 0..max + 5 {
        let (code, v) =
            s.exec(json!({"name": "read_file", "args": {"path": "a.txt"}, "reply": "r-1"}));
        assert_eq!(code, StatusCode::OK);
        if i < max {
            assert_eq!(v["status"], "success", "call {i}: {v}");
        } else {
            assert_eq!(v["status"], "error", "call {i}: {v}");
            let formatted = v["formatted"].as_str().unwrap();
            assert!(
                formatted
                    .starts_with("<tool_result name=\"read_file\" status=\"error\">\nnot run: "),
                "{formatted}"
            );
            assert!(formatted.contains("at most 20 tool calls"), "{formatted}");
        }
    }
    assert_eq!(
        audit_lines(&f).len(),
        max,
        "only the admitted calls reached the engine"
    );

    let (_, v) = s.exec(
        json!({"name": "write_file", "args": {"path": "w.txt", "content": "x"}, "reply": "r-2"}),
    );
    assert_eq!(v["status"], "denied", "{v}");
    let (_, v) = s.exec(json!({"name": "read_file", "args": {"path": "a.txt"}, "reply": "r-2"}));
    assert_eq!(v["status"], "error", "{v}");
    assert!(
        v["output"]
            .as_str()
            .unwrap()
            .contains("not run: the user denied an earlier call of this reply (write_file)"),
        "{v}"
    );
    let (_, v) = s.exec(json!({"name": "read_file", "args": {"path": "a.txt"}, "reply": "r-3"}));
    assert_eq!(v["status"], "success", "{v}");
    s.shutdown();
}

/// Issue 14: the extension reports a chat site's broken adapter to the bridge. Which sites a
/// person uses is private: `/health` without the token says nothing about them, and nobody
/// without the token can report (or overwrite) a problem.
#[test]
fn adapter_problems_are_kept_behind_the_token() {
    let f = Fixture::new();
    let s = Server::start(
        &f,
        Arc::new(DenyApprover { reason: None }),
        ApprovalMode::Ask,
        Duration::from_secs(5),
    );
    let c = s.client();
    s.runtime.block_on(async {
        let report = json!({"site": "deepseek", "problems": ["DeepSeek: send button not found — using Enter"]});
        // without the token: refused, and nothing is kept
        let r = c
            .post(format!("{}/adapter-health", s.base))
            .json(&report)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
        // with it: kept, and the answer lists it
        let v: Value = c
            .post(format!("{}/adapter-health", s.base))
            .bearer_auth(TOKEN)
            .json(&report)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(v["adapters"][0]["site"], "deepseek");
        assert_eq!(
            v["adapters"][0]["problems"][0],
            "DeepSeek: send button not found — using Enter"
        );
        // /health without a token: not a word about sites
        let text = c
            .get(format!("{}/health", s.base))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        let v: Value = serde_json::from_str(&text).unwrap();
        assert!(v.get("adapters").is_none(), "health leaks sites: {text}");
        for leak in ["deepseek", "DeepSeek", "Enter"] {
            assert!(!text.contains(leak), "health without a token mentions {leak}: {text}");
        }
        // with the token: the site and its problem
        let v: Value = c
            .get(format!("{}/health", s.base))
            .bearer_auth(TOKEN)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(v["adapters"][0]["site"], "deepseek");
        assert!(v["adapters"][0]["atMs"].as_u64().unwrap() > 0);
        // malformed reports say what is wrong
        for (bad, want) in [
            (json!({"site": "Deep Seek", "problems": []}), "not an adapter id"),
            (json!({"site": "deepseek", "problems": ["a\nb"]}), "one line"),
            (json!({"site": "deepseek"}), "missing field"),
            (json!({"site": "deepseek", "problems": [], "url": "https://x"}), "unknown field"),
        ] {
            let r = c
                .post(format!("{}/adapter-health", s.base))
                .bearer_auth(TOKEN)
                .json(&bad)
                .send()
                .await
                .unwrap();
            assert_eq!(r.status(), StatusCode::BAD_REQUEST, "{bad}");
            let body = r.text().await.unwrap();
            assert!(body.contains(want), "{bad}: {body}");
        }
        // an empty report clears the site
        let v: Value = c
            .post(format!("{}/adapter-health", s.base))
            .bearer_auth(TOKEN)
            .json(&json!({"site": "deepseek", "problems": []}))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(v["adapters"], json!([]));
    });
}

/// Denies every question and keeps what the dialog would have shown.
struct DenyAndRecord(std::sync::Mutex<Vec<ApprovalRequest>>);

#[async_trait]
impl Approver for DenyAndRecord {
    async fn ask(&self, r: ApprovalRequest) -> ApprovalAnswer {
        self.0.lock().unwrap().push(r);
        ApprovalAnswer::Deny { reason: None }
    }
    fn name(&self) -> &'static str {
        "deny"
    }
}

/// Issue 14, "degrade, don't die": a call the extension found only through its generic
/// fallback (`"provenance": "genericFallback"`) always asks the person — even a read the engine
/// calls safe, even one an allow rule covers — while a deny rule still denies without asking.
/// The same calls unmarked are decided as before. The marker cannot loosen anything: an
/// unknown value or `null` is refused (400) and nothing runs.
#[test]
fn a_call_found_by_the_generic_fallback_always_asks() {
    let f = Fixture::new();
    std::fs::write(f.root.join("notes.txt"), "the notes\n").unwrap();
    std::fs::write(f.root.join("secret.txt"), "hidden\n").unwrap();
    f.put(
        "config/ground-link/permissions.json",
        r#"{"version": 1, "allow": ["Write(out/**)"], "deny": ["Read(secret.txt)"]}"#,
    );
    assert!(
        f.paths.global_rules().exists(),
        "the rules file is where the engine reads it"
    );
    let approver = Arc::new(DenyAndRecord(std::sync::Mutex::new(Vec::new())));
    let mut s = Server::start(
        &f,
        approver.clone(),
        ApprovalMode::Ask,
        Duration::from_secs(5),
    );
    let asked = || approver.0.lock().unwrap().len();
    let fallback = |mut body: Value| {
        body["provenance"] = json!("genericFallback");
        body
    };
    let read = json!({"name": "read_file", "args": {"path": "notes.txt"}, "session": "s1"});
    let write = json!({"name": "write_file", "args": {"path": "out/a.txt", "content": "ran"}, "session": "s1"});

    // Unmarked: a safe read and a rule-allowed write run without a question.
    let (code, v) = s.exec(read.clone());
    assert_eq!(code, StatusCode::OK);
    assert_eq!(v["status"], "success", "{v}");
    assert!(v["output"].as_str().unwrap().contains("the notes"), "{v}");
    let (_, v) = s.exec(write.clone());
    assert_eq!(v["status"], "success", "{v}");
    assert!(f.root.join("out/a.txt").exists());
    std::fs::remove_file(f.root.join("out/a.txt")).unwrap();
    assert_eq!(asked(), 0, "unmarked calls asked nobody");

    // Marked: both ask, the denial stands, and nothing ran.
    let (code, v) = s.exec(fallback(read.clone()));
    assert_eq!(code, StatusCode::OK);
    assert_eq!(v["status"], "denied", "{v}");
    assert!(!v["output"].as_str().unwrap().contains("the notes"), "{v}");
    assert_eq!(v["decision"]["decision"], "ask", "{v}");
    assert_eq!(v["decision"]["risk"], "safe", "{v}");
    assert!(
        v["decision"]["reason"]
            .as_str()
            .unwrap()
            .contains("generic fallback"),
        "{v}"
    );
    let (_, v) = s.exec(fallback(write.clone()));
    assert_eq!(v["status"], "denied", "{v}");
    assert!(
        !f.root.join("out/a.txt").exists(),
        "a denied write wrote nothing"
    );
    assert_eq!(asked(), 2, "both marked calls were asked about");
    for r in approver.0.lock().unwrap().iter() {
        assert_eq!(
            r.scopes,
            vec![Scope::Once],
            "the dialog offers no rule that would skip the next question"
        );
        assert!(r.decision.reason.contains("generic fallback"));
    }

    // A deny rule still denies, without a question.
    let (_, v) = s.exec(fallback(
        json!({"name": "read_file", "args": {"path": "secret.txt"}}),
    ));
    assert_eq!(v["status"], "denied", "{v}");
    assert_eq!(v["decision"]["decision"], "deny", "{v}");
    assert_eq!(asked(), 2, "a denied call is not asked about");

    // Fail closed: an unknown marker, or null, is refused and nothing runs.
    let before = audit_lines(&f).len();
    for bad in [
        json!("adapter"),
        json!("GenericFallback"),
        Value::Null,
        json!(true),
    ] {
        let mut body = write.clone();
        body["provenance"] = bad.clone();
        let (code, v) = s.exec(body);
        assert_eq!(code, StatusCode::BAD_REQUEST, "{bad}: {v}");
        let e = v["error"].as_str().unwrap();
        assert!(e.contains("`provenance`"), "{bad}: {e}");
        assert!(e.contains("genericFallback"), "{bad}: {e}");
    }
    assert!(!f.root.join("out/a.txt").exists());
    assert_eq!(
        audit_lines(&f).len(),
        before,
        "refused bodies reach no tool"
    );
    assert_eq!(asked(), 2);
    s.shutdown();
}

/// `POST /invalid-call`: the extension's broken blocks get the core's text (the shared vectors,
/// invisible characters made visible), signed like every answer; bad bodies say what is wrong.
#[test]
fn a_broken_block_is_formatted_by_the_core_for_the_extension() {
    let f = Fixture::new();
    let s = Server::start(
        &f,
        Arc::new(DenyApprover { reason: None }),
        ApprovalMode::Ask,
        Duration::from_secs(5),
    );
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/vectors/invalid_call.json"
    );
    let file: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    for case in file["cases"].as_array().unwrap() {
        let body = json!({"kind": case["kind"], "detail": case["detail"]}).to_string();
        let a = signed(s.port, "POST", "/invalid-call", &body);
        assert_eq!(a.status, 200, "{}", a.body);
        assert!(a.answer_mac.is_some(), "the answer is signed");
        let v: Value = serde_json::from_str(&a.body).unwrap();
        assert_eq!(v["formatted"], case["expect"], "{}", case["name"]);
    }
    let refused = [
        (
            json!({"kind": "madeUp", "detail": "x"}),
            400,
            "one of invalidJson",
        ),
        (json!({"kind": "invalidJson"}), 400, "detail"),
        (
            json!({"kind": "invalidJson", "detail": "x", "extra": 1}),
            400,
            "extra",
        ),
        (
            json!({"kind": "invalidJson", "detail": "x".repeat(5000)}),
            413,
            "at most 4096",
        ),
    ];
    for (body, status, says) in refused {
        let a = signed(s.port, "POST", "/invalid-call", &body.to_string());
        assert_eq!(a.status, status, "{body}: {}", a.body);
        assert!(a.body.contains(says), "{body}: {}", a.body);
    }
    // Unsigned, from the extension's origin: refused like every route but /health.
    let c = s.client();
    s.runtime.block_on(async {
        let r = c
            .post(format!("{}/invalid-call", s.base))
            .json(&json!({"kind": "invalidJson", "detail": "x"}))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    });
}
