//! One reply's calls, and the limits that keep a reply from flooding (DESIGN §5.2): at most
//! [`MAX_CALLS_PER_REPLY`] calls of one reply run, and once the person denies one, the rest
//! of that reply do not run. Calls that do not run still come back to the model, as
//! `status="error"` results saying `not run: …` and why, so it never waits for an answer.
//!
//! [`ReplyLedger`] is the rule; the clipboard runner ([`run_reply`]) and the bridge (per
//! `reply` id the extension sends) both follow it. [`run_reply`] is the tray's "Run tool calls
//! from clipboard", the fallback when a site adapter breaks: the reply is parsed with the same
//! parser as the extension's, each call runs through the same engine (and the same approvals)
//! as calls from the bridge, and the results come back as one text to paste into the chat.

use crate::engine::Engine;
use crate::format::{invalid_call_result, tool_result};
use crate::parser::parse_tool_blocks;
use crate::protocol::{CallRequest, CallResult, CallStatus, Source, ToolName, Verdict};

/// Calls of one reply that may run; later ones are answered `not run`.
pub const MAX_CALLS_PER_REPLY: usize = 20;

/// What running a reply did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplyRun {
    /// All results, in order, ready to paste into the chat.
    pub text: String,
    /// Calls that ran (through the engine, whatever their outcome).
    pub calls: usize,
    /// Calls answered `not run` (over the cap, or after the person's denial).
    pub not_run: usize,
    pub broken_blocks: usize,
}

/// Whether a result is the person's "no": the call asked, and it ended denied (the person
/// denied it, or nobody answered in time).
pub fn denied_by_person(result: &CallResult) -> bool {
    result.status == CallStatus::Denied
        && result
            .decision
            .as_ref()
            .is_some_and(|d| d.decision == Verdict::Ask)
}

/// The `<tool_result>` of a call that was not run, formatted by the core like every result.
pub fn not_run(name: &str, why: &str) -> String {
    tool_result(
        &shown_name(name),
        CallStatus::Error,
        &format!("not run: {why}"),
        false,
    )
}

/// The same as a whole result object, for the bridge.
pub fn not_run_result(call_id: &str, name: &str, why: &str) -> CallResult {
    CallResult {
        status: CallStatus::Error,
        output: crate::format::sanitize(&format!("not run: {why}")),
        formatted: not_run(name, why),
        call_id: call_id.to_string(),
        decision: None,
        duration_ms: 0,
        truncated: false,
    }
}

fn shown_name(name: &str) -> String {
    ToolName::from_alias(name)
        .map(|t| t.as_str().to_string())
        .unwrap_or_else(|| name.to_string())
}

/// The calls of one reply so far: how many ran, and whether the person stopped the rest.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReplyLedger {
    ran: usize,
    stopped_by: Option<String>,
}

impl ReplyLedger {
    /// May the next call of this reply run? `Err` holds why not, for [`not_run`].
    pub fn admit(&mut self) -> Result<(), String> {
        if let Some(tool) = &self.stopped_by {
            return Err(format!(
                "the user denied an earlier call of this reply ({tool}), so the rest of it was not run; adjust your approach before calling tools again"
            ));
        }
        if self.ran >= MAX_CALLS_PER_REPLY {
            return Err(format!(
                "one reply may run at most {MAX_CALLS_PER_REPLY} tool calls; the first {MAX_CALLS_PER_REPLY} ran. Send the rest in your next reply, after reading these results"
            ));
        }
        self.ran += 1;
        Ok(())
    }

    /// Note how an admitted call ended.
    pub fn record(&mut self, name: &str, result: &CallResult) {
        if self.stopped_by.is_none() && denied_by_person(result) {
            self.stopped_by = Some(shown_name(name));
        }
    }
}

/// Run every `<tool>` block in `reply`. Broken blocks are reported to the model, not dropped.
/// `None` when the text has no block at all (nothing is copied back then).
pub async fn run_reply(
    engine: &Engine,
    reply: &str,
    session: Option<String>,
    source: Source,
) -> Option<ReplyRun> {
    let blocks = parse_tool_blocks(reply);
    if blocks.is_empty() {
        return None;
    }
    let mut out = Vec::new();
    let (mut calls, mut skipped, mut broken) = (0, 0, 0);
    let mut ledger = ReplyLedger::default();
    for block in blocks {
        match block.call {
            Ok(call) => {
                if let Err(why) = ledger.admit() {
                    skipped += 1;
                    out.push(not_run(&call.name, &why));
                    continue;
                }
                calls += 1;
                let name = call.name.clone();
                let mut req = CallRequest::from(call);
                req.session = session.clone();
                let result = engine.call(req, source).await;
                ledger.record(&name, &result);
                out.push(result.formatted);
            }
            Err(e) => {
                broken += 1;
                out.push(invalid_call_result(e.kind, &e.message));
            }
        }
    }
    Some(ReplyRun {
        text: out.join("\n"),
        calls,
        not_run: skipped,
        broken_blocks: broken,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{Decision, Risk};

    fn result(status: CallStatus, verdict: Option<Verdict>) -> CallResult {
        CallResult {
            status,
            output: String::new(),
            formatted: String::new(),
            call_id: "c".into(),
            decision: verdict.map(|decision| Decision {
                decision,
                risk: Risk::Moderate,
                reason: String::new(),
                rule: None,
                steps: Vec::new(),
            }),
            duration_ms: 0,
            truncated: false,
        }
    }

    #[test]
    fn the_ledger_admits_twenty_then_refuses() {
        let mut l = ReplyLedger::default();
        for _ in 0..MAX_CALLS_PER_REPLY {
            assert_eq!(l.admit(), Ok(()));
        }
        let why = l.admit().unwrap_err();
        assert!(why.contains("at most 20"), "{why}");
    }

    #[test]
    fn only_the_persons_denial_stops_the_reply() {
        let table = [
            (CallStatus::Denied, Some(Verdict::Ask), true),
            (CallStatus::Denied, Some(Verdict::Deny), false),
            (CallStatus::Error, Some(Verdict::Ask), false),
            (CallStatus::Success, Some(Verdict::Ask), false),
            (CallStatus::Denied, None, false),
        ];
        for (status, verdict, stops) in table {
            let mut l = ReplyLedger::default();
            l.admit().unwrap();
            l.record("write", &result(status, verdict));
            assert_eq!(l.admit().is_err(), stops, "{status:?} {verdict:?}");
        }
    }

    #[test]
    fn not_run_is_an_error_result_the_core_formats() {
        let text = not_run("cmd", "because\nreasons");
        assert!(
            text.starts_with("<tool_result name=\"exec_cmd\" status=\"error\">\nnot run: because"),
            "{text}"
        );
        assert!(text.ends_with("</tool_result>"));
        let r = not_run_result("c1", "read", "x");
        assert_eq!(
            (r.status, r.call_id.as_str(), r.output.as_str()),
            (CallStatus::Error, "c1", "not run: x")
        );
    }
}
