//! The bridge's own cost (issue "MCP endpoint…", DESIGN §10): an auto-allowed `read_file` of a
//! 4 KiB file through MCP (`tools/call` over Streamable HTTP, the official rmcp client) against
//! the same call through `POST /exec`, in the same run, at 1 and 8 concurrent clients — p50/p99
//! latency and calls per second. Goal: MCP's p50 at most 1.5× `/exec`'s, with MCP sent by the
//! same HTTP client as `/exec` (the server's cost); through the rmcp client too, for reference.
//!
//! `cargo bench --bench bridge` (or `make bench`). Figures go into notes, never into tests.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::sync::Arc;
use std::time::{Duration, Instant};

use ground_link::approval::DenyApprover;
use ground_link::bridge::broker::Broker;
use ground_link::bridge::token::Token;
use ground_link::engine::{Engine, EngineConfig};
use ground_link::paths::ConfigPaths;
use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, ClientConfig};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;

const TOKEN: &str = "bench-token-0123456789abcdef0123456789abcdef";
const CALLS: usize = 1500;
const ROUNDS: usize = 5;

fn percentiles(mut v: Vec<f64>) -> (f64, f64) {
    v.sort_by(|a, b| a.total_cmp(b));
    (v[v.len() / 2], v[v.len() * 99 / 100])
}

/// The median of each figure over the rounds.
fn median(runs: Vec<(f64, f64, f64)>) -> (f64, f64, f64) {
    let mid = |f: fn(&(f64, f64, f64)) -> f64| {
        let mut v: Vec<f64> = runs.iter().map(f).collect();
        v.sort_by(|a, b| a.total_cmp(b));
        v[v.len() / 2]
    };
    (mid(|r| r.0), mid(|r| r.1), mid(|r| r.2))
}

/// `calls` calls split over `clients` concurrent workers: (p50 µs, p99 µs, calls/s).
async fn run<F, Fut>(clients: usize, calls: usize, one: F) -> (f64, f64, f64)
where
    F: Fn(usize) -> Fut + Clone + Send + 'static,
    Fut: std::future::Future<Output = ()> + Send,
{
    let started = Instant::now();
    let mut tasks = Vec::new();
    for c in 0..clients {
        let one = one.clone();
        tasks.push(tokio::spawn(async move {
            let mut times = Vec::with_capacity(calls / clients);
            for _ in 0..calls / clients {
                let t = Instant::now();
                one(c).await;
                times.push(t.elapsed().as_secs_f64() * 1e6);
            }
            times
        }));
    }
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await.unwrap());
    }
    let secs = started.elapsed().as_secs_f64();
    let n = all.len() as f64;
    let (p50, p99) = percentiles(all);
    (p50, p99, n / secs)
}

/// One MCP POST with the bearer token; the answer's text (JSON, or the SSE stream's events).
async fn mcp_post(http: &reqwest::Client, url: &str, session: Option<&str>, body: &str) -> String {
    mcp_send(http, url, session, body)
        .await
        .text()
        .await
        .unwrap()
}

/// One MCP POST with the bearer token, answered with success.
async fn mcp_send(
    http: &reqwest::Client,
    url: &str,
    session: Option<&str>,
    body: &str,
) -> reqwest::Response {
    let mut req = http
        .post(url)
        .bearer_auth(TOKEN)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(body.to_owned());
    if let Some(s) = session {
        req = req.header("mcp-session-id", s);
    }
    let r = req.send().await.unwrap();
    assert!(r.status().is_success(), "{}", r.status());
    r
}

/// An MCP session opened by hand: `initialize`, then `notifications/initialized`.
async fn raw_session(http: &reqwest::Client, base: &str) -> String {
    let url = format!("{base}/mcp");
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}"#;
    let r = mcp_send(http, &url, None, init).await;
    let session = r.headers()["mcp-session-id"].to_str().unwrap().to_owned();
    let _ = r.text().await.unwrap();
    mcp_post(
        http,
        &url,
        Some(&session),
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
    )
    .await;
    session
}

fn main() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::write(root.join("f.txt"), "x".repeat(4095) + "\n").unwrap();
    let mut config = EngineConfig::new(root, ConfigPaths::under(dir.path()));
    config.supervisor_exe = std::path::PathBuf::from(env!("CARGO_BIN_EXE_ground-link"));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async move {
        let broker = Broker::new(Arc::new(DenyApprover { reason: None }));
        let engine = Arc::new(Engine::new(config, broker.approver()).unwrap());
        let token = Token::from_secret(TOKEN.into(), "a bench");
        let bound = ground_link::bridge::bind(engine, broker, token, 0).await.unwrap();
        let base = format!("http://{}", bound.addr());
        let stop = tokio_util::sync::CancellationToken::new();
        let halt = stop.clone();
        tokio::spawn(bound.serve(async move { halt.cancelled().await }));

        let http = reqwest::Client::new();
        let exec_url = format!("{base}/exec");
        let body = r#"{"name":"read_file","args":{"path":"f.txt"}}"#;
        let exec = {
            let (http, url) = (http.clone(), exec_url.clone());
            move |_c: usize| {
                let (http, url) = (http.clone(), url.clone());
                async move {
                    let r = http
                        .post(url)
                        .bearer_auth(TOKEN)
                        .header("content-type", "application/json")
                        .body(body)
                        .send()
                        .await
                        .unwrap();
                    assert!(r.status().is_success(), "{}", r.status());
                    let _ = r.bytes().await.unwrap();
                }
            }
        };
        let mut clients = Vec::new();
        for _ in 0..8 {
            let transport = StreamableHttpClientTransport::from_config(
                StreamableHttpClientTransportConfig::with_uri(format!("{base}/mcp"))
                    .auth_header(TOKEN),
            );
            clients.push(Arc::new(ClientConfig::default().serve(transport).await.unwrap()));
        }
        let clients = Arc::new(clients);
        let mcp = {
            let clients = Arc::clone(&clients);
            move |c: usize| {
                let clients = Arc::clone(&clients);
                async move {
                    let args = serde_json::json!({"path": "f.txt"});
                    let r = clients[c]
                        .call_tool(
                            CallToolRequestParams::new("read_file")
                                .with_arguments(args.as_object().cloned().unwrap()),
                        )
                        .await
                        .unwrap();
                    assert_ne!(r.is_error, Some(true));
                }
            }
        };
        // The same MCP calls sent by the HTTP client `/exec` uses (one session each), so the
        // ratio is the server's: the rmcp client's own tasks and channels are not ours.
        let mut sessions = Vec::new();
        for _ in 0..8 {
            sessions.push(raw_session(&http, &base).await);
        }
        let sessions = Arc::new(sessions);
        let raw = {
            let (http, url, sessions) = (http.clone(), format!("{base}/mcp"), Arc::clone(&sessions));
            move |c: usize| {
                let (http, url, sessions) = (http.clone(), url.clone(), Arc::clone(&sessions));
                async move {
                    let call = r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"f.txt"}}}"#;
                    let text = mcp_post(&http, &url, Some(&sessions[c]), call).await;
                    assert!(text.contains("\"result\""), "{text}");
                }
            }
        };
        // Warm every path (connections, first audit file).
        run(1, 100, exec.clone()).await;
        run(1, 100, mcp.clone()).await;
        run(1, 100, raw.clone()).await;
        // Rounds alternate the three ways, so a burst of load on the machine falls on all of
        // them alike; each figure is the median of the rounds.
        for n in [1, 8] {
            let (mut exec_runs, mut raw_runs, mut mcp_runs) = (Vec::new(), Vec::new(), Vec::new());
            for _ in 0..ROUNDS {
                exec_runs.push(run(n, CALLS, exec.clone()).await);
                raw_runs.push(run(n, CALLS, raw.clone()).await);
                mcp_runs.push(run(n, CALLS, mcp.clone()).await);
            }
            let ((e50, e99, eps), (r50, r99, rps), (m50, m99, mps)) =
                (median(exec_runs), median(raw_runs), median(mcp_runs));
            println!(
                "bridge, {n} client(s), read_file 4 KiB, median of {ROUNDS} rounds: POST /exec p50 {e50:.0} µs p99 {e99:.0} µs {eps:.0}/s; \
                 MCP tools/call, same HTTP client: p50 {r50:.0} µs p99 {r99:.0} µs {rps:.0}/s, {:.2}× /exec (goal ≤ 1.5×); \
                 through the rmcp client: p50 {m50:.0} µs p99 {m99:.0} µs {mps:.0}/s, {:.2}× /exec",
                r50 / e50,
                m50 / e50
            );
        }
        stop.cancel();
        tokio::time::sleep(Duration::from_millis(50)).await;
    });
}
