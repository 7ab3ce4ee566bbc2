//! Audit lines for the side panel's own page-tool calls (`POST /panel-calls`, DESIGN §12: "with
//! the bridge, its calls are audited too").
//!
//! The panel runs page tools itself, without the engine; when the extension is paired it reports
//! each finished call here, and the bridge appends one line with `source: panel` to the same
//! hash-chained log as every other call. Nothing is run and nothing is decided: the line says what
//! the panel and the person did.
//!
//! Guarantees: a report is parsed and checked in full before anything is written (unknown fields,
//! wrong types, oversized or malformed values are refused with the field's name), so a bad body
//! writes nothing and cannot tear a line; long argument strings are summarised with their SHA-256
//! like any call's (`audit::summarize_args`).

use url::Url;

use crate::audit::{AuditEntry, summarize_args};
use crate::bridge::wire::{PanelCallReport, PanelDecision};
use crate::protocol::{CallStatus, Source};

/// Largest report body. Arguments are summarised in the log anyway; this only stops a body
/// that is clearly not a report from being parsed at all.
pub const MAX_REPORT_BYTES: usize = 256 * 1024;
const MAX_CALL_ID: usize = 128;
const MAX_TOOL: usize = 128;
const MAX_ORIGIN: usize = 256;
const MAX_URL: usize = 2048;
const MAX_WHY: usize = 200;
const MAX_SESSION: usize = 256;
const MAX_ERROR: usize = 1000;
/// A day: no panel call lasts longer (the panel stops a turn after a minute by default).
const MAX_DURATION_MS: u64 = 86_400_000;
/// 2^53: the largest size a JavaScript number holds exactly.
const MAX_OUTPUT_BYTES: u64 = 1 << 53;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReportError {
    #[error(
        "the panel call report is {0} bytes; at most {MAX_REPORT_BYTES} are accepted (long arguments are summarised anyway: send the call's own arguments, not more)"
    )]
    TooLarge(usize),
    #[error("panel call report: {0}")]
    Bad(String),
}

fn bad(message: impl Into<String>) -> ReportError {
    ReportError::Bad(message.into())
}

/// The audit line for a report body, or why the body is not a valid report.
pub fn entry_from_body(body: &[u8]) -> Result<AuditEntry, ReportError> {
    if body.len() > MAX_REPORT_BYTES {
        return Err(ReportError::TooLarge(body.len()));
    }
    let mut de = serde_json::Deserializer::from_slice(body);
    let report: PanelCallReport = serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        if path == "." || path.is_empty() {
            bad(format!(
                "{inner}; send one JSON object with callId, tool, origin, args, decision, status, durationMs, outputBytes"
            ))
        } else {
            bad(format!("field `{path}` is wrong: {inner}"))
        }
    })?;
    de.end()
        .map_err(|e| bad(format!("trailing data after the JSON object: {e}")))?;
    entry(report)
}

/// One line of text of 1..=`max` characters with no control characters.
fn one_line(field: &str, value: &str, max: usize) -> Result<(), ReportError> {
    let n = value.chars().count();
    if n == 0 || n > max {
        return Err(bad(format!(
            "field `{field}` must be 1 to {max} characters, not {n}"
        )));
    }
    if value.chars().any(char::is_control) {
        return Err(bad(format!(
            "field `{field}` contains a control character; send it on one line without them"
        )));
    }
    Ok(())
}

fn check_origin(origin: &str) -> Result<(), ReportError> {
    one_line("origin", origin, MAX_ORIGIN)?;
    let canonical = Url::parse(origin)
        .ok()
        .filter(|u| matches!(u.scheme(), "http" | "https"))
        .map(|u| u.origin().ascii_serialization());
    if canonical.as_deref() != Some(origin) {
        return Err(bad(format!(
            "field `origin` is {origin:?}, not an http(s) origin; send scheme://host[:port] without a path, e.g. http://127.0.0.1:8080"
        )));
    }
    Ok(())
}

fn check_url(url: &str) -> Result<(), ReportError> {
    one_line("url", url, MAX_URL)?;
    match Url::parse(url) {
        Ok(u) if matches!(u.scheme(), "http" | "https") => Ok(()),
        _ => Err(bad(
            "field `url` is not an http(s) URL; send the tab's address, or leave the field out",
        )),
    }
}

/// What the panel did, in the words of the log's `answer` column.
fn answer(decision: PanelDecision) -> &'static str {
    match decision {
        PanelDecision::Confirmed => "confirmed in the side panel",
        PanelDecision::AutoRun => "run by the side panel without asking",
        PanelDecision::ByHand => "called by hand in the side panel",
        PanelDecision::Refused => "refused in the side panel",
        PanelDecision::Failed => "not run: the panel could not make the call",
    }
}

fn entry(r: PanelCallReport) -> Result<AuditEntry, ReportError> {
    let id_ok = (1..=MAX_CALL_ID).contains(&r.call_id.len())
        && r.call_id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b':' | b'-'));
    if !id_ok {
        return Err(bad(format!(
            "field `callId` must be 1 to {MAX_CALL_ID} letters, digits or `_.:-`, e.g. a UUID"
        )));
    }
    // The extension's rule for page tool names (shared/webmcp.ts TOOL_NAME_RE).
    let tool_ok = (1..=MAX_TOOL).contains(&r.tool.len())
        && r.tool
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'));
    if !tool_ok {
        return Err(bad(format!(
            "field `tool` is {:?}; a page tool name is 1 to {MAX_TOOL} letters, digits or `_.-`",
            r.tool.chars().take(MAX_TOOL + 1).collect::<String>()
        )));
    }
    check_origin(&r.origin)?;
    if let Some(u) = &r.url {
        check_url(u)?;
    }
    if let Some(w) = &r.why {
        one_line("why", w, MAX_WHY)?;
    }
    if let Some(s) = &r.session {
        one_line("session", s, MAX_SESSION)?;
    }
    if let Some(e) = &r.error {
        let n = e.chars().count();
        if n == 0 || n > MAX_ERROR {
            return Err(bad(format!(
                "field `error` must be 1 to {MAX_ERROR} characters, not {n}; cut it"
            )));
        }
    }
    if r.duration_ms > MAX_DURATION_MS {
        return Err(bad(format!(
            "field `durationMs` is {} ms, more than a day ({MAX_DURATION_MS}); send the call's own duration",
            r.duration_ms
        )));
    }
    if r.output_bytes > MAX_OUTPUT_BYTES {
        return Err(bad(format!(
            "field `outputBytes` is {}, more than {MAX_OUTPUT_BYTES}",
            r.output_bytes
        )));
    }
    // The decision and the status must tell one story: a refusal is the only denial, and a
    // call that never reached the page cannot have succeeded.
    match (r.decision, r.status) {
        (_, CallStatus::Pending) => {
            return Err(bad(
                "field `status` is pending; report a call once it has ended (success, error, denied or timeout)",
            ));
        }
        (PanelDecision::Refused, CallStatus::Denied) => {}
        (PanelDecision::Refused, s) => {
            return Err(bad(format!(
                "field `status` is {} but the decision is refused; a refused call is denied",
                s.as_str()
            )));
        }
        (_, CallStatus::Denied) => {
            return Err(bad(
                "field `status` is denied but the decision is not refused; only the person's refusal denies a panel call",
            ));
        }
        (PanelDecision::Failed, s) if s != CallStatus::Error => {
            return Err(bad(format!(
                "field `status` is {} but the decision is failed; a call that could not be made is an error",
                s.as_str()
            )));
        }
        _ => {}
    }
    let answer = match &r.why {
        Some(w) => format!("{} ({w})", answer(r.decision)),
        None => answer(r.decision).to_string(),
    };
    Ok(AuditEntry {
        time: String::new(),
        source: Source::Panel,
        client: None,
        session: r.session,
        call_id: r.call_id,
        tool: r.tool,
        origin: Some(r.origin),
        url: r.url,
        args: summarize_args(&r.args),
        decision: None,
        answer: Some(answer),
        duration_ms: r.duration_ms,
        status: r.status,
        output_bytes: r.output_bytes,
        note: r.error,
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    fn report() -> serde_json::Value {
        json!({
            "callId": "c-1", "tool": "search_items", "origin": "http://127.0.0.1:8080",
            "url": "http://127.0.0.1:8080/shop?q=1", "args": {"q": "tea"},
            "decision": "confirmed", "status": "success", "durationMs": 12, "outputBytes": 40,
            "session": "panel:1"
        })
    }

    fn with(k: &str, v: serde_json::Value) -> Vec<u8> {
        let mut r = report();
        r[k] = v;
        r.to_string().into_bytes()
    }

    #[test]
    fn a_valid_report_becomes_a_panel_line() {
        let e = entry_from_body(report().to_string().as_bytes()).unwrap();
        assert_eq!(e.source, Source::Panel);
        assert_eq!(e.origin.as_deref(), Some("http://127.0.0.1:8080"));
        assert_eq!(e.answer.as_deref(), Some("confirmed in the side panel"));
        assert!(e.decision.is_none());
    }

    #[test]
    fn bad_reports_name_the_field() {
        for (body, want) in [
            (with("extra", json!(1)), "unknown field `extra`"),
            (with("origin", json!("http://a.example/path")), "`origin`"),
            (with("origin", json!("file:///etc")), "`origin`"),
            (with("tool", json!("a b")), "`tool`"),
            (with("callId", json!("")), "`callId`"),
            (with("args", json!([1])), "`args`"),
            (with("status", json!("pending")), "pending"),
            (with("status", json!("denied")), "not refused"),
            (with("decision", json!("maybe")), "`decision`"),
            (with("durationMs", json!(-1)), "`durationMs`"),
            (with("session", json!("a\nb")), "`session`"),
            (with("url", json!("javascript:alert(1)")), "`url`"),
            (b"{\"callId\":".to_vec(), "panel call report"),
            (b"[]".to_vec(), "panel call report"),
        ] {
            let err = entry_from_body(&body).unwrap_err().to_string();
            assert!(
                err.contains(want),
                "{}: {err}",
                String::from_utf8_lossy(&body)
            );
        }
        let big = vec![b' '; MAX_REPORT_BYTES + 1];
        assert!(matches!(
            entry_from_body(&big),
            Err(ReportError::TooLarge(_))
        ));
    }
}
