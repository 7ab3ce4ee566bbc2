//! Suite: `POST /panel-calls` over real HTTP — the side panel's own page-tool calls reach the
//! audit log (DESIGN §12) only with the pairing key, a bad report writes nothing, long
//! arguments are kept as a hash, and `ground-link audit verify` still checks the whole chain.

use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use ground_link::approval::AllowOnceApprover;
use ground_link::bridge::sign;
use ground_link::protocol::ApprovalMode;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::bridge::{Server, TOKEN, audit_lines, raw, signed_with_key};
use crate::util::Fixture;

const EXT: &str = "chrome-extension://abcdefghijklmnopabcdefghijklmnop";

fn start(f: &Fixture) -> Server {
    Server::start(
        f,
        Arc::new(AllowOnceApprover),
        ApprovalMode::Ask,
        Duration::from_secs(5),
    )
}

fn report() -> Value {
    json!({
        "callId": "4f1c2b7e-0000-4000-8000-000000000001",
        "tool": "search_items",
        "origin": "http://127.0.0.1:8123",
        "url": "http://127.0.0.1:8123/shop.html",
        "args": {"query": "green tea"},
        "decision": "confirmed",
        "why": "not marked read-only",
        "status": "success",
        "durationMs": 14,
        "outputBytes": 52,
        "session": "panel:7d0e"
    })
}

/// `ground-link audit verify` on the fixture's log, as a person would run it.
fn cli_verify(f: &Fixture) -> (bool, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_ground-link"))
        .args(["audit", "verify"])
        .env("XDG_CONFIG_HOME", f.base().join("config"))
        .env("XDG_DATA_HOME", f.base().join("data"))
        .output()
        .unwrap();
    (
        out.status.success(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

fn panel_lines(f: &Fixture) -> Vec<Value> {
    audit_lines(f)
        .into_iter()
        .filter(|l| l["source"] == "panel")
        .collect()
}

fn audit_bytes(f: &Fixture) -> usize {
    std::fs::read_dir(f.paths.audit_dir())
        .map(|d| {
            d.flatten()
                .filter(|e| e.file_name().to_string_lossy().ends_with(".jsonl"))
                .map(|e| std::fs::read(e.path()).unwrap().len())
                .sum()
        })
        .unwrap_or(0)
}

/// A report signed with the pairing key, as the extension's worker sends it, becomes one line
/// with `source: panel` in the same chain as the engine's own calls, written before the answer.
#[test]
fn a_signed_panel_report_is_one_audit_line_and_the_chain_verifies() {
    let f = Fixture::new();
    let s = start(&f);
    // An engine call first, so the panel's line has to link into an existing chain.
    let (code, body) = s.runtime.block_on(async {
        let r = reqwest::Client::new()
            .post(format!("{}/exec", s.base))
            .bearer_auth(TOKEN)
            .json(&json!({"name": "list_dir", "args": {"path": "."}}))
            .send()
            .await
            .unwrap();
        (r.status(), r.text().await.unwrap())
    });
    assert_eq!(code, 200, "{body}");

    let (status, body, verifies) =
        signed_with_key(TOKEN, s.port, "POST", "/panel-calls", &report().to_string());
    assert_eq!(status, 200, "{body}");
    assert!(verifies, "the answer must be signed like every answer");
    let answer: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(answer["callId"], "4f1c2b7e-0000-4000-8000-000000000001");

    // On disk by the time the answer came.
    let lines = panel_lines(&f);
    assert_eq!(lines.len(), 1, "{lines:?}");
    let l = &lines[0];
    assert_eq!(l["tool"], "search_items");
    assert_eq!(l["origin"], "http://127.0.0.1:8123");
    assert_eq!(l["url"], "http://127.0.0.1:8123/shop.html");
    assert_eq!(l["args"], json!({"query": "green tea"}));
    assert_eq!(l["session"], "panel:7d0e");
    assert_eq!(l["status"], "success");
    assert_eq!(l["durationMs"], 14);
    assert_eq!(l["outputBytes"], 52);
    assert_eq!(
        l["answer"],
        "confirmed in the side panel (not marked read-only)"
    );
    assert_eq!(l["decision"], Value::Null, "the engine decided nothing");
    assert_eq!(audit_lines(&f).len(), 2);

    // A refusal and a timeout too; every kind of line keeps the chain whole.
    let mut refused = report();
    refused["callId"] = json!("c-refused");
    refused["decision"] = json!("refused");
    refused["status"] = json!("denied");
    refused["outputBytes"] = json!(0);
    refused["error"] = json!("the person declined this call");
    let mut timed_out = report();
    timed_out["callId"] = json!("c-timeout");
    timed_out["decision"] = json!("autoRun");
    timed_out["status"] = json!("timeout");
    timed_out["error"] = json!("timed out after 10000 ms");
    for r in [refused, timed_out] {
        let (status, body, _) =
            signed_with_key(TOKEN, s.port, "POST", "/panel-calls", &r.to_string());
        assert_eq!(status, 200, "{body}");
    }
    let lines = panel_lines(&f);
    assert_eq!(lines.len(), 3);
    assert_eq!(lines[1]["status"], "denied");
    assert_eq!(lines[1]["note"], "the person declined this call");
    assert_eq!(lines[2]["status"], "timeout");

    let report = ground_link::audit::verify(&f.paths.audit_dir()).unwrap();
    assert!(report.is_ok(), "{report}");
    assert_eq!(report.lines, 4);
    let (ok, out) = cli_verify(&f);
    assert!(ok, "ground-link audit verify failed: {out}");
    assert!(out.contains("4 lines"), "{out}");
}

/// Only the paired extension (or the bearer token outside a browser) may write to the log:
/// every other caller is refused, and not a byte is written.
#[test]
fn an_unauthenticated_panel_report_writes_nothing() {
    let f = Fixture::new();
    let s = start(&f);
    let body = report().to_string();
    let before = audit_bytes(&f);
    let host = format!("127.0.0.1:{}", s.port);
    let post = |headers: &[(&str, String)]| {
        let mut req =
            format!("POST /panel-calls HTTP/1.1\r\nConnection: close\r\nHost: {host}\r\n");
        for (k, v) in headers {
            req.push_str(&format!("{k}: {v}\r\n"));
        }
        req.push_str(&format!(
            "Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        ));
        raw(s.port, &req).0
    };
    // No proof at all.
    assert_eq!(post(&[]), 401);
    // A wrong bearer token; the right one from a browser extension (which must sign).
    assert_eq!(
        post(&[("Authorization", format!("Bearer {}", "f".repeat(64)))]),
        401
    );
    assert_eq!(
        post(&[
            ("Authorization", format!("Bearer {TOKEN}")),
            ("Origin", EXT.to_string())
        ]),
        401
    );
    // A web page, even with the token.
    assert_eq!(
        post(&[
            ("Authorization", format!("Bearer {TOKEN}")),
            ("Origin", "http://evil.example".to_string())
        ]),
        403
    );
    // Signed with another key (an old pairing, a guess).
    let (status, _, verifies) =
        signed_with_key(&"0".repeat(64), s.port, "POST", "/panel-calls", &body);
    assert_eq!(status, 401);
    assert!(!verifies);
    // Signed for another body than the one sent.
    let h = sign::sign_request(
        TOKEN.as_bytes(),
        "POST",
        "/panel-calls",
        &host,
        b"{\"other\":1}",
    )
    .unwrap();
    assert_eq!(
        post(&[
            (sign::HEADER_NONCE, h.nonce),
            (sign::HEADER_TIME, h.time_ms.to_string()),
            (sign::HEADER_SIGNATURE, h.signature),
            ("Origin", EXT.to_string()),
        ]),
        401
    );
    assert_eq!(audit_bytes(&f), before, "a refused report wrote to the log");
    assert!(panel_lines(&f).is_empty());
}

/// A report that does not check out is a 400 naming the field (413 when too large), and
/// writes nothing: no partial line, no line at all.
#[test]
fn a_malformed_panel_report_is_refused_and_writes_nothing() {
    let f = Fixture::new();
    let s = start(&f);
    let with = |k: &str, v: Value| {
        let mut r = report();
        r[k] = v;
        r.to_string()
    };
    let without = |k: &str| {
        let mut r = report();
        r.as_object_mut().unwrap().remove(k);
        r.to_string()
    };
    let cases: Vec<(String, u16, &str)> = vec![
        ("not json".into(), 400, "panel call report"),
        ("{\"callId\":\"a\"".into(), 400, "panel call report"),
        ("[]".into(), 400, "panel call report"),
        (
            with("approved", json!(true)),
            400,
            "unknown field `approved`",
        ),
        (without("origin"), 400, "missing field `origin`"),
        (with("args", json!("q=tea")), 400, "`args`"),
        (with("status", json!("pending")), 400, "pending"),
        (with("status", json!("allowed")), 400, "`status`"),
        (
            with("decision", json!("approvedByModel")),
            400,
            "`decision`",
        ),
        (
            with("origin", json!("https://a.example/x")),
            400,
            "`origin`",
        ),
        (with("url", json!("javascript:alert(1)")), 400, "`url`"),
        (with("tool", json!("x".repeat(200))), 400, "`tool`"),
        (
            with("session", json!("s\n{\"forged\":1}")),
            400,
            "`session`",
        ),
        (with("durationMs", json!(1.5)), 400, "`durationMs`"),
        (with("error", json!("e".repeat(5000))), 400, "`error`"),
        (
            with("args", json!({"blob": "x".repeat(300 * 1024)})),
            413,
            "at most",
        ),
    ];
    for (body, want_status, want) in cases {
        let (status, answer, _) = signed_with_key(TOKEN, s.port, "POST", "/panel-calls", &body);
        let shown: String = body.chars().take(120).collect();
        assert_eq!(status, want_status, "{shown}: {answer}");
        assert!(answer.contains(want), "{shown}: {answer}");
    }
    assert_eq!(audit_bytes(&f), 0, "a refused report wrote to the log");
    let report = ground_link::audit::verify(&f.paths.audit_dir()).unwrap();
    assert!(report.is_ok(), "{report}");
    assert_eq!(report.lines, 0);
}

/// Long argument strings are kept as their length, SHA-256 and first characters, like any
/// call's: the log stays small and keeps no page content, yet pins it exactly.
#[test]
fn long_panel_arguments_are_summarised_with_a_hash() {
    let f = Fixture::new();
    let s = start(&f);
    let text = "lorem ipsum dolor sit amet ".repeat(2000);
    let mut r = report();
    r["args"] = json!({"note": text, "nested": {"items": ["short", text]}, "n": 3});
    let (status, body, _) = signed_with_key(TOKEN, s.port, "POST", "/panel-calls", &r.to_string());
    assert_eq!(status, 200, "{body}");
    let lines = panel_lines(&f);
    assert_eq!(lines.len(), 1);
    let args = &lines[0]["args"];
    let digest = hex::encode(Sha256::digest(text.as_bytes()));
    assert_eq!(args["note"]["len"], text.len());
    assert_eq!(args["note"]["sha256"], digest);
    assert!(
        args["note"]["head"]
            .as_str()
            .unwrap()
            .starts_with("lorem ipsum")
    );
    assert_eq!(args["nested"]["items"][0], "short");
    assert_eq!(args["nested"]["items"][1]["sha256"], digest);
    assert_eq!(args["n"], 3);
    // The page's text is not in the log, and the line fits one page (no torn line on kill -9).
    let raw_log = std::fs::read_to_string(
        std::fs::read_dir(f.paths.audit_dir())
            .unwrap()
            .flatten()
            .find(|e| e.file_name().to_string_lossy().ends_with(".jsonl"))
            .unwrap()
            .path(),
    )
    .unwrap();
    assert!(!raw_log.contains(&text[..300]));
    assert!(raw_log.trim_end().len() < 4096, "{}", raw_log.len());
    let (ok, out) = cli_verify(&f);
    assert!(ok, "ground-link audit verify failed: {out}");
}
