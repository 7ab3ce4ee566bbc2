//! Suite: `/mcp` with the official Rust MCP client (rmcp) over real HTTP — the tool list, calls
//! through the same engine as `POST /exec` (denials, catastrophic commands, audit), and the
//! guards that keep web pages and token-less clients out.

use std::os::unix::fs::PermissionsExt;
use std::sync::Arc;
use std::time::Duration;

use ground_link::approval::DenyApprover;
use ground_link::protocol::ApprovalMode;
use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, ClientConfig, ContentBlock};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::json;

use ground_link::bridge::sign;

use crate::bridge::{Server, TOKEN, audit_lines, raw};
use crate::util::Fixture;

pub(crate) fn text_of(content: &[ContentBlock]) -> String {
    content
        .iter()
        .filter_map(|c| match c {
            ContentBlock::Text(t) => Some(t.text.clone()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

pub(crate) fn args(v: serde_json::Value) -> serde_json::Map<String, serde_json::Value> {
    match v {
        serde_json::Value::Object(m) => m,
        _ => unreachable!("arguments are an object"),
    }
}

#[test]
fn an_mcp_client_lists_the_tools_and_every_call_goes_through_the_engine() {
    let f = Fixture::new();
    std::fs::write(f.root.join("notes.txt"), "hello from the sandbox\n").unwrap();
    let mut server = Server::start(
        &f,
        Arc::new(DenyApprover {
            reason: Some("not now".into()),
        }),
        ApprovalMode::Ask,
        Duration::from_secs(5),
    );
    let url = format!("{}/mcp", server.base);
    server.runtime.block_on(async {
        let transport = StreamableHttpClientTransport::from_config(
            StreamableHttpClientTransportConfig::with_uri(url).auth_header(TOKEN),
        );
        let client = ClientConfig::default().serve(transport).await.unwrap();

        // The seven sandbox tools, with the hints `GET /tools` gives.
        let tools = client.list_all_tools().await.unwrap();
        let mut names: Vec<String> = tools.iter().map(|t| t.name.to_string()).collect();
        names.sort();
        let mut want: Vec<String> = ground_link::tools::registry()
            .iter()
            .map(|t| t.name.as_str().to_owned())
            .collect();
        want.sort();
        assert_eq!(names, want);
        let read = tools.iter().find(|t| t.name == "read_file").unwrap();
        assert_eq!(
            read.annotations.as_ref().and_then(|a| a.read_only_hint),
            Some(true)
        );
        assert!(read.input_schema.contains_key("properties"), "{read:?}");

        // A safe read runs and comes back formatted, as on every other path.
        let r = client
            .call_tool(
                CallToolRequestParams::new("read_file")
                    .with_arguments(args(json!({"path": "notes.txt"}))),
            )
            .await
            .unwrap();
        let text = text_of(&r.content);
        assert_ne!(r.is_error, Some(true), "{text}");
        assert!(text.contains("hello from the sandbox"), "{text}");
        assert!(text.contains("<tool_result"), "{text}");

        // A write asks the person; the answer here is no, with a reason the model reads.
        let r = client
            .call_tool(
                CallToolRequestParams::new("write_file")
                    .with_arguments(args(json!({"path": "new.txt", "content": "x"}))),
            )
            .await
            .unwrap();
        let text = text_of(&r.content);
        assert_eq!(r.is_error, Some(true), "{text}");
        assert!(text.contains("not now"), "{text}");
        assert!(!f.root.join("new.txt").exists());

        // A catastrophic command is denied without a question, however it is asked for.
        let marker = f.root.join("src");
        std::fs::create_dir_all(&marker).unwrap();
        let r = client
            .call_tool(
                CallToolRequestParams::new("exec_cmd")
                    .with_arguments(args(json!({"command": "echo ${a:-`rm -rf ~ src`}"}))),
            )
            .await
            .unwrap();
        assert_eq!(r.is_error, Some(true), "{}", text_of(&r.content));
        assert!(marker.exists());

        // An unknown tool is a protocol error naming the tools there are.
        let e = client
            .call_tool(CallToolRequestParams::new("format_disk"))
            .await
            .unwrap_err();
        assert!(e.to_string().contains("read_file"), "{e}");

        // Bad arguments reach the engine, which says what is wrong.
        let r = client
            .call_tool(
                CallToolRequestParams::new("read_file").with_arguments(args(json!({"path": 7}))),
            )
            .await
            .unwrap();
        assert_eq!(r.is_error, Some(true));
        assert!(
            text_of(&r.content).contains("path"),
            "{}",
            text_of(&r.content)
        );

        let _ = client.cancel().await;
    });
    server.shutdown();
    // Each call the engine saw is audited, as coming from MCP.
    let lines = audit_lines(&f);
    let from_mcp: Vec<_> = lines
        .iter()
        .filter(|l| l["source"] == "mcp")
        .map(|l| l["tool"].as_str().unwrap_or("").to_owned())
        .collect();
    for tool in ["read_file", "write_file", "exec_cmd"] {
        assert!(
            from_mcp.iter().any(|t| t == tool),
            "{tool} not audited as mcp: {lines:?}"
        );
    }
}

#[test]
fn web_pages_and_clients_without_the_token_cannot_use_mcp() {
    let f = Fixture::new();
    let mut server = Server::start(
        &f,
        Arc::new(DenyApprover { reason: None }),
        ApprovalMode::Ask,
        Duration::from_secs(5),
    );
    let port = server.port;
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}"#;
    let request = |headers: &str| {
        format!(
            "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\n{headers}Content-Length: {}\r\n\
             Connection: close\r\n\r\n{body}",
            body.len()
        )
    };
    // No token.
    let (code, text) = raw(port, &request(""));
    assert_eq!(code, 401, "{text}");
    // A wrong token.
    let (code, _) = raw(port, &request("Authorization: Bearer nope\r\n"));
    assert_eq!(code, 401);
    // A web page, even one that somehow holds the token.
    for origin in ["https://evil.example", "null", "http://127.0.0.1:8000"] {
        let (code, text) = raw(
            port,
            &request(&format!(
                "Authorization: Bearer {TOKEN}\r\nOrigin: {origin}\r\n"
            )),
        );
        assert_eq!(code, 403, "{origin}: {text}");
    }
    // DNS rebinding: a foreign Host.
    let rebound = request(&format!("Authorization: Bearer {TOKEN}\r\n"))
        .replace(&format!("Host: 127.0.0.1:{port}"), "Host: evil.example");
    let (code, _) = raw(port, &rebound);
    assert_eq!(code, 403);
    // The token alone, as an MCP client sends it: served.
    let (code, text) = raw(
        port,
        &request(&format!("Authorization: Bearer {TOKEN}\r\n")),
    );
    assert_eq!(code, 200, "{text}");
    assert!(text.contains("ground-link"), "{text}");
    server.shutdown();
}

#[test]
fn a_cancelled_mcp_call_withdraws_its_question() {
    let f = Fixture::new();
    // Nobody ever answers: only the client's cancellation can end the question in time.
    let mut server = Server::start(
        &f,
        Arc::new(crate::bridge::Silent),
        ApprovalMode::Ask,
        Duration::from_secs(120),
    );
    let url = format!("{}/mcp", server.base);
    let started = std::time::Instant::now();
    server.runtime.block_on(async {
        let transport = StreamableHttpClientTransport::from_config(
            StreamableHttpClientTransportConfig::with_uri(url).auth_header(TOKEN),
        );
        let client = ClientConfig::default().serve(transport).await.unwrap();
        let request = rmcp::model::ClientRequest::CallToolRequest(rmcp::model::Request::new(
            CallToolRequestParams::new("write_file")
                .with_arguments(args(json!({"path": "late.txt", "content": "x"}))),
        ));
        let handle = client
            .send_cancellable_request(request, rmcp::service::PeerRequestOptions::no_options())
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(500)).await;
        handle
            .cancel(Some("the person closed the chat".into()))
            .await
            .unwrap();
        // The engine records the withdrawn question as a denial.
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        loop {
            let denied = audit_lines(&f)
                .iter()
                .any(|l| l["tool"] == "write_file" && l["source"] == "mcp");
            if denied || std::time::Instant::now() > deadline {
                assert!(denied, "no audit line for the cancelled call");
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let _ = client.cancel().await;
    });
    assert!(started.elapsed() < Duration::from_secs(60));
    assert!(!f.root.join("late.txt").exists());
    let line = audit_lines(&f)
        .into_iter()
        .find(|l| l["tool"] == "write_file")
        .unwrap();
    assert_ne!(line["status"], "success", "{line}");
    server.shutdown();
}

/// The pids of processes whose command line holds `marker`.
fn processes_with(marker: &str) -> Vec<u32> {
    let mut pids = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        if String::from_utf8_lossy(&cmdline).contains(marker) {
            pids.push(pid);
        }
    }
    pids
}

#[test]
fn a_cancelled_mcp_call_kills_its_running_command_tree() {
    let f = Fixture::new();
    let mut server = Server::start(
        &f,
        Arc::new(ground_link::approval::AllowOnceApprover),
        ApprovalMode::Ask,
        Duration::from_secs(10),
    );
    let url = format!("{}/mcp", server.base);
    // A tree: a background sleep, a nested shell's sleep, and the foreground one.
    let marker = format!("{}", 4242 + std::process::id() % 1000);
    let command =
        format!("sleep 31{marker} & sh -c 'sleep 32{marker}' & sleep 33{marker}; echo never");
    server.runtime.block_on(async {
        let transport = StreamableHttpClientTransport::from_config(
            StreamableHttpClientTransportConfig::with_uri(url).auth_header(TOKEN),
        );
        let client = ClientConfig::default().serve(transport).await.unwrap();
        let request = rmcp::model::ClientRequest::CallToolRequest(rmcp::model::Request::new(
            CallToolRequestParams::new("exec_cmd")
                .with_arguments(args(json!({"command": command, "timeoutSec": 300}))),
        ));
        let handle = client
            .send_cancellable_request(request, rmcp::service::PeerRequestOptions::no_options())
            .await
            .unwrap();
        // Running: all three sleeps are there.
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while processes_with(&marker).len() < 3 {
            assert!(
                std::time::Instant::now() < deadline,
                "the command never started"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        handle
            .cancel(Some("the person stopped it".into()))
            .await
            .unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        loop {
            let left = processes_with(&marker);
            if left.is_empty() {
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "still running 20 s after the cancel: {left:?}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let _ = client.cancel().await;
    });
    // The call still ends on the record, saying it was cancelled.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let line = loop {
        if let Some(l) = audit_lines(&f)
            .into_iter()
            .find(|l| l["tool"] == "exec_cmd")
        {
            break l;
        }
        assert!(std::time::Instant::now() < deadline, "no audit line");
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_ne!(line["status"], "success", "{line}");
    server.shutdown();
}

#[test]
fn a_named_client_token_is_its_own_and_revoking_it_leaves_the_others() {
    let f = Fixture::new();
    std::fs::write(f.root.join("notes.txt"), "hello\n").unwrap();
    let clients = clients_of(&f);
    let claude = clients.add("claude-code").unwrap();
    let cursor = clients.add("cursor").unwrap();
    let mut server = Server::start(
        &f,
        Arc::new(DenyApprover { reason: None }),
        ApprovalMode::Ask,
        Duration::from_secs(5),
    );
    let url = format!("{}/mcp", server.base);
    let read = |token: &str| {
        let url = url.clone();
        let token = token.to_owned();
        async move {
            let transport = StreamableHttpClientTransport::from_config(
                StreamableHttpClientTransportConfig::with_uri(url).auth_header(token),
            );
            let client = ClientConfig::default().serve(transport).await?;
            let r = client
                .call_tool(
                    CallToolRequestParams::new("read_file")
                        .with_arguments(args(json!({"path": "notes.txt"}))),
                )
                .await?;
            let _ = client.cancel().await;
            anyhow::Ok(text_of(&r.content))
        }
    };
    server.runtime.block_on(async {
        assert!(read(&claude).await.unwrap().contains("hello"));
        assert!(read(&cursor).await.unwrap().contains("hello"));
        // Revoked while the bridge runs: refused at once; the other client and the bridge
        // token go on working.
        assert!(clients.revoke("claude-code").unwrap());
        assert!(read(&claude).await.is_err());
        assert!(read(&cursor).await.unwrap().contains("hello"));
        assert!(read(TOKEN).await.unwrap().contains("hello"));
    });
    let (code, _) = raw(
        server.port,
        &format!(
            "GET /tools HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nAuthorization: Bearer {claude}\r\nConnection: close\r\n\r\n",
            server.port
        ),
    );
    assert_eq!(code, 401);
    server.shutdown();
    // The audit log names each client by its token's name.
    let lines = audit_lines(&f);
    let client_of = |name: &str| {
        lines
            .iter()
            .filter(|l| l["client"] == name && l["tool"] == "read_file")
            .count()
    };
    assert_eq!(client_of("claude-code"), 1, "{lines:?}");
    assert_eq!(client_of("cursor"), 2, "{lines:?}");
    assert!(lines.iter().any(|l| l.get("client").is_none()));
}

#[test]
fn token_add_list_and_revoke_on_the_command_line() {
    let f = Fixture::new();
    let run = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_ground-link"))
            .args(args)
            .env("XDG_CONFIG_HOME", f.base().join("config"))
            .env("XDG_DATA_HOME", f.base().join("data"))
            .output()
            .unwrap()
    };
    let out = run(&["token", "add", "claude-code"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let secret = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    assert!(secret.starts_with("glc_") && secret.len() > 60, "{secret}");
    let out = run(&["token", "add", "claude-code"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("exists already"));
    let out = run(&["token", "add", "bad name"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a client name"));
    let out = run(&["token", "list"]);
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("claude-code\t"));
    // The file keeps a digest, never the token.
    let file = std::fs::read_to_string(f.base().join("config/ground-link/clients.json")).unwrap();
    assert!(!file.contains(&secret[4..]));
    let out = run(&["token", "revoke", "claude-code"]);
    assert!(out.status.success());
    let out = run(&["token", "revoke", "claude-code"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("token list"));
}

/// `ground-link mcp` as a stdio MCP client starts it: through rmcp's child-process transport.
fn stdio_relay(f: &Fixture, port: u16, token_file: &std::path::Path) -> tokio::process::Command {
    let mut c = tokio::process::Command::new(env!("CARGO_BIN_EXE_ground-link"));
    c.args(["mcp", "--port", &port.to_string(), "--token-file"])
        .arg(token_file)
        .env("XDG_CONFIG_HOME", f.base().join("config"))
        .env("XDG_DATA_HOME", f.base().join("data"));
    c
}

#[test]
fn the_stdio_relay_reaches_the_same_engine_with_a_client_token() {
    use rmcp::transport::TokioChildProcess;
    let f = Fixture::new();
    std::fs::write(f.root.join("notes.txt"), "hello over stdio\n").unwrap();
    let clients = clients_of(&f);
    let token_file = f.base().join("codex.token");
    std::fs::write(&token_file, clients.add("codex").unwrap()).unwrap();
    let approver = Arc::new(NamingApprover::default());
    let mut server = Server::start(
        &f,
        approver.clone(),
        ApprovalMode::Ask,
        Duration::from_secs(5),
    );
    let port = server.port;
    server.runtime.block_on(async {
        let transport = TokioChildProcess::new(stdio_relay(&f, port, &token_file)).unwrap();
        let client = ClientConfig::default().serve(transport).await.unwrap();
        let tools = client.list_all_tools().await.unwrap();
        assert_eq!(tools.len(), ground_link::tools::registry().len());
        let r = client
            .call_tool(
                CallToolRequestParams::new("read_file")
                    .with_arguments(args(json!({"path": "notes.txt"}))),
            )
            .await
            .unwrap();
        assert!(text_of(&r.content).contains("hello over stdio"));
        let r = client
            .call_tool(
                CallToolRequestParams::new("write_file")
                    .with_arguments(args(json!({"path": "x.txt", "content": "x"}))),
            )
            .await
            .unwrap();
        assert_eq!(r.is_error, Some(true));
        assert!(text_of(&r.content).contains("not today"));
        let _ = client.cancel().await;
    });
    server.shutdown();
    assert!(!f.root.join("x.txt").exists());
    // The relay signs with the client's key: the person's question and the audit log name the
    // client, as they do for its bearer token.
    assert_eq!(
        *approver.asked.lock().unwrap(),
        vec![Some("codex".to_owned())]
    );
    let lines = audit_lines(&f);
    assert!(
        lines
            .iter()
            .any(|l| l["client"] == "codex" && l["tool"] == "read_file"),
        "{lines:?}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l["client"] == "codex" && l["tool"] == "write_file"),
        "{lines:?}"
    );
}

/// Denies every question ("not today"), keeping the client each one named.
#[derive(Default)]
struct NamingApprover {
    asked: std::sync::Mutex<Vec<Option<String>>>,
}

#[async_trait::async_trait]
impl ground_link::approval::Approver for NamingApprover {
    async fn ask(
        &self,
        request: ground_link::protocol::ApprovalRequest,
    ) -> ground_link::protocol::ApprovalAnswer {
        self.asked.lock().unwrap().push(request.client.clone());
        ground_link::protocol::ApprovalAnswer::Deny {
            reason: Some("not today".into()),
        }
    }
    fn name(&self) -> &'static str {
        "naming-test"
    }
}

/// A loopback listener of this user's, standing in for a program squatting on the port while
/// ground-link is down: it keeps every request it is sent and answers each in the bridge's
/// form, but without the bridge's signature (an SSE stream first, then JSON).
fn squatter(port_log: &std::path::Path) -> (u16, std::thread::JoinHandle<()>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let log = port_log.to_owned();
    let handle = std::thread::spawn(move || {
        use std::io::{Read, Write};
        for (i, conn) in listener.incoming().take(2).enumerate() {
            let Ok(mut c) = conn else { return };
            c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
            let mut seen = Vec::new();
            let mut buf = [0u8; 65536];
            // Headers, then the body its Content-Length announces.
            loop {
                let n = c.read(&mut buf).unwrap_or(0);
                seen.extend_from_slice(&buf[..n]);
                let text = String::from_utf8_lossy(&seen).to_string();
                if let Some((head, body)) = text.split_once("\r\n\r\n") {
                    let len = head
                        .lines()
                        .find_map(|l| {
                            let (k, v) = l.split_once(':')?;
                            k.eq_ignore_ascii_case("content-length")
                                .then(|| v.trim().parse::<usize>().ok())
                                .flatten()
                        })
                        .unwrap_or(0);
                    if body.len() >= len {
                        break;
                    }
                }
                if n == 0 {
                    break;
                }
            }
            let mut f = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
            f.write_all(&seen).unwrap();
            f.write_all(b"\n----\n").unwrap();
            let init = r#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"ground-link","version":"9"}}}"#;
            let answer = if i == 0 {
                let body = format!("data: {init}\n\n");
                format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nMcp-Session-Id: s1\r\n\
                     X-Ground-Link-Answer: {}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    "0".repeat(64),
                    body.len()
                )
            } else {
                format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nMcp-Session-Id: s1\r\n\
                     Content-Length: {}\r\nConnection: close\r\n\r\n{init}",
                    init.len()
                )
            };
            let _ = c.write_all(answer.as_bytes());
        }
    });
    (port, handle)
}

/// The named client tokens of the fixture's bridge.
fn clients_of(f: &Fixture) -> ground_link::bridge::clients::Clients {
    ground_link::bridge::clients::Clients::new(ground_link::bridge::clients::default_location(
        &f.paths,
    ))
}

#[test]
fn the_stdio_relay_signs_so_a_squatter_gets_no_token_and_cannot_answer() {
    use rmcp::transport::TokioChildProcess;
    let f = Fixture::new();
    let clients = clients_of(&f);
    let token = clients.add("codex").unwrap();
    let token_file = f.base().join("codex.token");
    std::fs::write(&token_file, &token).unwrap();
    let log = f.base().join("squatter.log");
    std::fs::write(&log, "").unwrap();
    let (port, squatter) = squatter(&log);
    let rt = crate::util::runtime();
    rt.block_on(async {
        let transport = TokioChildProcess::new(stdio_relay(&f, port, &token_file)).unwrap();
        let client = ClientConfig::default().serve(transport).await.unwrap();
        // Answers without ground-link's signature (a stream, then JSON) are errors that say
        // so, never results.
        for _ in 0..2 {
            let e = client.list_all_tools().await.unwrap_err().to_string();
            assert!(e.contains("does not carry ground-link's signature"), "{e}");
        }
        let _ = client.cancel().await;
    });
    squatter.join().unwrap();
    let seen = std::fs::read_to_string(&log).unwrap();
    let requests: Vec<&str> = seen.split("\n----\n").filter(|r| !r.is_empty()).collect();
    assert_eq!(requests.len(), 2, "{seen}");
    let key = ground_link::bridge::clients::signing_key(&token);
    for r in requests {
        let lower = r.to_ascii_lowercase();
        assert!(lower.starts_with("post /mcp "), "{r}");
        assert!(lower.contains("x-ground-link-signature: "), "{r}");
        assert!(!lower.contains("authorization"), "{r}");
        // No token bytes anywhere: not the token, not its secret part, not the signing key.
        assert!(
            !r.contains(&token[4..]) && !r.contains("glc_") && !r.contains(&key),
            "{r}"
        );
    }
}

/// A `/mcp` request signed with `key` as the relay signs it (no Origin: not a browser), as raw
/// HTTP, with its nonce.
fn signed_mcp(
    key: &str,
    port: u16,
    method: &str,
    path: &str,
    session: Option<&str>,
    body: &str,
) -> (String, String) {
    let host = format!("127.0.0.1:{port}");
    let h = sign::sign_request(key.as_bytes(), method, path, &host, body.as_bytes()).unwrap();
    let session = session
        .map(|s| format!("Mcp-Session-Id: {s}\r\n"))
        .unwrap_or_default();
    let request = format!(
        "{method} {path} HTTP/1.1\r\nHost: {host}\r\n{}: {}\r\n{}: {}\r\n{}: {}\r\n\
         Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
         {session}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        sign::HEADER_NONCE,
        h.nonce,
        sign::HEADER_TIME,
        h.time_ms,
        sign::HEADER_SIGNATURE,
        h.signature,
        body.len()
    );
    (request, h.nonce)
}

/// Whether `answer` (raw HTTP) carries the answer MAC of `key` over `nonce`, its status and a
/// streamed body.
fn stream_answer_signed(key: &str, nonce: &str, answer: &str) -> bool {
    let status: u16 = answer.split_whitespace().nth(1).unwrap().parse().unwrap();
    let want = sign::answer_mac(key.as_bytes(), nonce, status, sign::STREAM_BODY);
    answer.lines().any(|l| {
        l.split_once(':').is_some_and(|(k, v)| {
            k.eq_ignore_ascii_case(sign::HEADER_ANSWER) && sign::same(&want, v.trim())
        })
    })
}

#[test]
fn a_client_key_signs_for_mcp_only_once_per_nonce_and_not_after_revocation() {
    let f = Fixture::new();
    let clients = clients_of(&f);
    let claude = clients.add("claude-code").unwrap();
    let cursor = clients.add("cursor").unwrap();
    let claude_key = ground_link::bridge::clients::signing_key(&claude);
    let cursor_key = ground_link::bridge::clients::signing_key(&cursor);
    let mut server = Server::start(
        &f,
        Arc::new(DenyApprover { reason: None }),
        ApprovalMode::Ask,
        Duration::from_secs(5),
    );
    let port = server.port;
    // Signed with a client's key: served, and the answer is signed back with that key.
    let (request, nonce) = signed_mcp(&claude_key, port, "POST", "/mcp", None, INITIALIZE);
    let (code, answer) = raw(port, &request);
    assert_eq!(code, 200, "{answer}");
    assert!(
        stream_answer_signed(&claude_key, &nonce, &answer),
        "{answer}"
    );
    let sid = session_id(&answer);
    // The session is claude's, as with its bearer token: cursor's key does not reach it.
    let list = r#"{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}"#;
    let (request, _) = signed_mcp(&cursor_key, port, "POST", "/mcp", Some(&sid), list);
    assert_eq!(raw(port, &request).0, 404);
    // The same request again is a replay.
    let (request, _) = signed_mcp(&cursor_key, port, "POST", "/mcp", None, INITIALIZE);
    assert_eq!(raw(port, &request).0, 200);
    let (code, text) = raw(port, &request);
    assert_eq!(code, 401, "{text}");
    assert!(text.contains("replayed"), "{text}");
    // A client key opens /mcp only, as its bearer token: elsewhere its signature is refused,
    // as before.
    for (method, path) in [
        ("GET", "/events"),
        ("GET", "/calls/c-1"),
        ("POST", "/exec"),
        ("GET", "/tools"),
        ("POST", "/panel-calls"),
        ("POST", "/invalid-call"),
        ("GET", "/health"),
    ] {
        let (request, _) = signed_mcp(
            &cursor_key,
            port,
            method,
            path,
            None,
            r#"{"name":"list_dir"}"#,
        );
        let (code, text) = raw(port, &request);
        assert_eq!(code, 401, "{method} {path}: {text}");
    }
    // Nor from an extension's origin, where a client key has no business.
    let (request, _) = signed_mcp(&cursor_key, port, "POST", "/mcp", None, INITIALIZE);
    let request = request.replacen(
        "\r\n",
        "\r\nOrigin: chrome-extension://abcdefghijklmnopabcdefghijklmnop\r\n",
        1,
    );
    assert_eq!(raw(port, &request).0, 401);
    assert!(server.bridge().paired().is_empty());
    // Nor is the token itself a signing key (only its key is), nor is the key a bearer token.
    let (request, _) = signed_mcp(&cursor, port, "POST", "/mcp", None, INITIALIZE);
    assert_eq!(raw(port, &request).0, 401);
    let (code, _) = mcp_raw(port, "POST", "/mcp", &cursor_key, None, INITIALIZE);
    assert_eq!(code, 401);
    // Revoked while the bridge runs: its signatures are refused at once; the other client's
    // still work.
    assert!(clients.revoke("claude-code").unwrap());
    let (request, _) = signed_mcp(&claude_key, port, "POST", "/mcp", None, INITIALIZE);
    let (code, text) = raw(port, &request);
    assert_eq!(code, 401, "{text}");
    let (request, _) = signed_mcp(&claude_key, port, "POST", "/mcp", Some(&sid), list);
    assert_eq!(raw(port, &request).0, 401);
    let (request, _) = signed_mcp(&cursor_key, port, "POST", "/mcp", None, INITIALIZE);
    assert_eq!(raw(port, &request).0, 200);
    server.shutdown();
}

#[test]
fn the_stdio_relay_says_when_nothing_is_running() {
    use rmcp::transport::TokioChildProcess;
    let f = Fixture::new();
    let token_file = f.base().join("t");
    std::fs::write(&token_file, "glc_0000").unwrap();
    // A port nothing listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let rt = crate::util::runtime();
    rt.block_on(async {
        let transport = TokioChildProcess::new(stdio_relay(&f, port, &token_file)).unwrap();
        let client = ClientConfig::default().serve(transport).await.unwrap();
        let e = client.list_all_tools().await.unwrap_err().to_string();
        assert!(e.contains("not answering") && e.contains("serve"), "{e}");
        let _ = client.cancel().await;
    });
    // A missing token file is refused before anything starts, saying what to do.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_ground-link"))
        .args(["mcp", "--token-file", "/nonexistent/token"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("token add"));
}

/// Raw HTTP to `/mcp` (or another route) with `token`, a session id and a body.
fn mcp_raw(
    port: u16,
    method: &str,
    path: &str,
    token: &str,
    session: Option<&str>,
    body: &str,
) -> (u16, String) {
    let session = session
        .map(|s| format!("Mcp-Session-Id: {s}\r\n"))
        .unwrap_or_default();
    raw(
        port,
        &format!(
            "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {token}\r\n\
             Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
             {session}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        ),
    )
}

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}"#;

fn session_id(answer: &str) -> String {
    answer
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("mcp-session-id")
                .then(|| v.trim().to_owned())
        })
        .unwrap_or_else(|| panic!("no session id in {answer}"))
}

#[test]
fn named_clients_cannot_see_or_ride_on_each_others_work() {
    let f = Fixture::new();
    let clients = clients_of(&f);
    let claude = clients.add("claude-code").unwrap();
    let cursor = clients.add("cursor").unwrap();
    let mut server = Server::start(
        &f,
        Arc::new(DenyApprover { reason: None }),
        ApprovalMode::Ask,
        Duration::from_secs(5),
    );
    let port = server.port;
    // A client token opens /mcp only: not the routes that see every call.
    for (method, path) in [
        ("GET", "/events"),
        ("GET", "/calls/c-1"),
        ("DELETE", "/calls/c-1"),
        ("POST", "/exec"),
        ("GET", "/tools"),
    ] {
        let (code, text) = mcp_raw(port, method, path, &cursor, None, r#"{"name":"list_dir"}"#);
        assert_eq!(code, 403, "{method} {path}: {text}");
    }
    // claude's session is claude's: cursor presenting its id is told it does not exist, and
    // cannot end it.
    let (code, answer) = mcp_raw(port, "POST", "/mcp", &claude, None, INITIALIZE);
    assert_eq!(code, 200, "{answer}");
    let sid = session_id(&answer);
    let list = r#"{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}"#;
    let (code, _) = mcp_raw(port, "POST", "/mcp", &cursor, Some(&sid), list);
    assert_eq!(code, 404);
    let (code, _) = mcp_raw(port, "DELETE", "/mcp", &cursor, Some(&sid), "");
    assert_eq!(code, 404);
    // A made-up session id is no one's.
    let (code, _) = mcp_raw(port, "POST", "/mcp", &claude, Some("forged-123"), list);
    assert_eq!(code, 404);
    // One token cannot open sessions without end.
    let mut refused = 0;
    for _ in 0..40 {
        let (code, _) = mcp_raw(port, "POST", "/mcp", &cursor, None, INITIALIZE);
        if code == 429 {
            refused += 1;
        }
    }
    assert!(refused >= 8, "only {refused} of 40 initializes refused");
    // Another client is not held back by cursor's sessions.
    let (code, _) = mcp_raw(port, "POST", "/mcp", &claude, None, INITIALIZE);
    assert_eq!(code, 200);
    server.shutdown();
}

#[test]
fn the_stdio_relay_never_sends_its_token_to_another_users_listener() {
    if rustix::process::getuid().as_raw() != 0 {
        eprintln!("skipped: needs root to listen as another user");
        return;
    }
    let f = Fixture::new();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let log = f.base().join("squatter.log");
    std::fs::write(&log, "").unwrap();
    let mut perms = std::fs::metadata(&log).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o666);
    std::fs::set_permissions(&log, perms).unwrap();
    let dir_perms = std::fs::Permissions::from_mode(0o755);
    std::fs::set_permissions(f.base(), dir_perms).unwrap();
    // Another user's program squats on the port and records whatever it is sent.
    let squat = format!(
        "import socket\ns=socket.socket()\ns.setsockopt(socket.SOL_SOCKET,socket.SO_REUSEADDR,1)\n\
         s.bind(('127.0.0.1',{port}))\ns.listen(5)\ns.settimeout(8)\n\
         try:\n  c,_=s.accept()\n  open('{}','a').write(c.recv(65536).decode('latin1'))\nexcept Exception:\n  pass\n",
        log.display()
    );
    let mut squatter = std::process::Command::new("setpriv")
        .args([
            "--reuid=nobody",
            "--regid=nogroup",
            "--clear-groups",
            "/usr/bin/python3",
            "-c",
            &squat,
        ])
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while ground_link::bridge::relay::listener_uid(port).is_none()
        && std::time::Instant::now() < deadline
    {
        std::thread::sleep(Duration::from_millis(50));
    }
    let token_file = f.base().join("client.token");
    std::fs::write(&token_file, "glc_secret_that_must_not_leave").unwrap();
    let rt = crate::util::runtime();
    rt.block_on(async {
        let transport =
            rmcp::transport::TokioChildProcess::new(stdio_relay(&f, port, &token_file)).unwrap();
        let client = ClientConfig::default().serve(transport).await.unwrap();
        let e = client.list_all_tools().await.unwrap_err().to_string();
        assert!(e.contains("another user"), "{e}");
        let _ = client.cancel().await;
    });
    let _ = squatter.kill();
    let _ = squatter.wait();
    let seen = std::fs::read_to_string(&log).unwrap();
    assert!(!seen.contains("glc_secret"), "the squatter got: {seen}");
    // The bridge token never goes to a relay at all.
    let bridge_token = f.base().join("bridge.token");
    std::fs::write(&bridge_token, TOKEN).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_ground-link"))
        .args(["mcp", "--token-file"])
        .arg(&bridge_token)
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("client token"));
}

/// A named client that floods `/mcp` with calls waiting for the person hits its own cap; the
/// extension's calls (the pairing key's count) are not refused because of it.
#[test]
fn a_flooding_client_does_not_use_up_the_extensions_calls() {
    let f = Fixture::new();
    let clients = clients_of(&f);
    let flood = clients.add("flood").unwrap();
    // Nobody answers: every write waits, holding its slot.
    let mut server = Server::start(
        &f,
        Arc::new(crate::bridge::Silent),
        ApprovalMode::Ask,
        Duration::from_secs(120),
    );
    let max = ground_link::bridge::MAX_IN_FLIGHT;
    let base = server.base.clone();
    let (refused, extension) = server.runtime.block_on(async {
        let transport = StreamableHttpClientTransport::from_config(
            StreamableHttpClientTransportConfig::with_uri(format!("{base}/mcp"))
                .auth_header(flood.clone()),
        );
        let client = ClientConfig::default().serve(transport).await.unwrap();
        let mut handles = Vec::new();
        for i in 0..max {
            let request = rmcp::model::ClientRequest::CallToolRequest(rmcp::model::Request::new(
                CallToolRequestParams::new("write_file")
                    .with_arguments(args(json!({"path": format!("f{i}.txt"), "content": "x"}))),
            ));
            handles.push(
                client
                    .send_cancellable_request(
                        request,
                        rmcp::service::PeerRequestOptions::no_options(),
                    )
                    .await
                    .unwrap(),
            );
        }
        // Once all of them are waiting, the next call of this client is refused...
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        let refused = loop {
            let r = client
                .call_tool(CallToolRequestParams::new("list_dir").with_arguments(args(json!({}))))
                .await
                .unwrap();
            let text = text_of(&r.content);
            if text.contains("still running or waiting") || std::time::Instant::now() > deadline {
                break text;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        // ...while the extension, with the pairing key, still gets its call taken.
        let extension = reqwest::Client::new()
            .post(format!("{base}/exec"))
            .bearer_auth(TOKEN)
            .json(&json!({"name": "write_file", "args": {"path": "ext.txt", "content": "x"}, "waitMs": 0}))
            .send()
            .await
            .unwrap()
            .status();
        for h in handles {
            let _ = h.cancel(None).await;
        }
        let _ = client.cancel().await;
        (refused, extension)
    });
    assert!(refused.contains("still running or waiting"), "{refused}");
    assert_eq!(extension, reqwest::StatusCode::ACCEPTED);
    server.shutdown();
}

/// Progress so far and its message, as notified.
type Notes = Arc<std::sync::Mutex<Vec<(f64, Option<String>)>>>;

/// Records progress notifications.
#[derive(Clone, Default)]
struct ProgressWatcher(Notes);

impl rmcp::ClientHandler for ProgressWatcher {
    async fn on_progress(
        &self,
        params: rmcp::model::ProgressNotificationParam,
        _context: rmcp::service::NotificationContext<rmcp::service::RoleClient>,
    ) {
        self.0
            .lock()
            .unwrap()
            .push((params.progress, params.message));
    }
}

#[test]
fn a_long_call_sends_progress_to_a_client_that_asked() {
    let f = Fixture::new();
    let mut server = Server::start(
        &f,
        Arc::new(ground_link::approval::AllowOnceApprover),
        ApprovalMode::Ask,
        Duration::from_secs(10),
    );
    let url = format!("{}/mcp", server.base);
    let watcher = ProgressWatcher::default();
    let seen = Arc::clone(&watcher.0);
    server.runtime.block_on(async {
        let transport = StreamableHttpClientTransport::from_config(
            StreamableHttpClientTransportConfig::with_uri(url).auth_header(TOKEN),
        );
        let client = watcher.serve(transport).await.unwrap();
        let request = rmcp::model::ClientRequest::CallToolRequest(rmcp::model::Request::new(
            CallToolRequestParams::new("exec_cmd")
                .with_arguments(args(json!({"command": "sleep 3; echo done"}))),
        ));
        let mut meta = rmcp::model::RequestMetaObject::default();
        meta.set_progress_token(rmcp::model::ProgressToken(
            rmcp::model::NumberOrString::String("p-1".into()),
        ));
        let mut options = rmcp::service::PeerRequestOptions::no_options();
        options.meta = Some(meta);
        let handle = client
            .send_cancellable_request(request, options)
            .await
            .unwrap();
        let answer = handle.await_response().await.unwrap();
        assert!(format!("{answer:?}").contains("done"), "{answer:?}");
        let _ = client.cancel().await;
    });
    let seen = seen.lock().unwrap().clone();
    assert!(seen.len() >= 2, "{seen:?}");
    assert!(
        seen.iter().any(|(_, m)| m.as_deref() == Some("running")),
        "{seen:?}"
    );
    // Progress only grows.
    assert!(seen.windows(2).all(|w| w[1].0 > w[0].0), "{seen:?}");
    server.shutdown();
}
