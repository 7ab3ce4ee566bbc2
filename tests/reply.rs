//! Suite: a whole reply through the core reply runner (the clipboard fallback) — at most 20
//! calls of one reply run, the person's denial stops the rest, and every call that did not run
//! still comes back to the model as a `not run` result, in order.

use std::sync::Arc;

use ground_link::approval::DenyApprover;
use ground_link::protocol::{ApprovalMode, SandboxMode, Source};
use ground_link::reply::{MAX_CALLS_PER_REPLY, run_reply};

use crate::util::{Fixture, runtime};

fn block(name: &str, args: &str) -> String {
    format!("<tool>{{\"name\":\"{name}\",\"args\":{args}}}</tool>\n")
}

#[test]
fn a_300_block_reply_runs_20_calls_and_reports_the_rest_not_run() {
    let f = Fixture::new();
    f.put("root/a.txt", "a\n");
    let engine = f.permissive();
    let reply: String = (0..300)
        .map(|_| block("read_file", r#"{"path":"a.txt"}"#))
        .collect();
    let run = runtime()
        .block_on(run_reply(&engine, &reply, None, Source::Clipboard))
        .unwrap();
    assert_eq!(
        (run.calls, run.not_run),
        (MAX_CALLS_PER_REPLY, 300 - MAX_CALLS_PER_REPLY)
    );
    let results: Vec<&str> = run
        .text
        .split("</tool_result>")
        .filter(|r| !r.trim().is_empty())
        .collect();
    assert_eq!(results.len(), 300, "every block gets a result");
    for (i, r) in results.iter().enumerate() {
        if i < MAX_CALLS_PER_REPLY {
            assert!(r.contains("status=\"success\""), "result {i}: {r}");
        } else {
            assert!(
                r.trim_start().starts_with("<tool_result name=\"read_file\" status=\"error\">\nnot run: one reply may run at most 20 tool calls"),
                "result {i}: {r}"
            );
        }
    }
    // Nothing beyond the cap reached the engine (its audit log has one entry per call it ran).
    let audited: usize = std::fs::read_dir(f.paths.audit_dir())
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".jsonl"))
        .map(|e| {
            std::fs::read_to_string(e.path())
                .unwrap()
                .lines()
                .filter(|l| l.contains("\"callId\""))
                .count()
        })
        .sum();
    assert_eq!(audited, MAX_CALLS_PER_REPLY);
}

#[test]
fn the_persons_denial_stops_the_rest_of_the_reply() {
    let f = Fixture::new();
    f.put("root/a.txt", "a\n");
    let engine = f.engine_with(
        SandboxMode::WorkspaceWrite,
        ApprovalMode::Ask,
        Arc::new(DenyApprover {
            reason: Some("not this".into()),
        }),
    );
    let reply = [
        block("read_file", r#"{"path":"a.txt"}"#),
        // a policy denial (outside the sandbox) is not the person's: the reply goes on
        block("read_file", r#"{"path":"../outside.txt"}"#),
        block("write_file", r#"{"path":"w.txt","content":"x"}"#),
        block("write_file", r#"{"path":"later.txt","content":"x"}"#),
        block("list_dir", "{}"),
    ]
    .concat();
    let run = runtime()
        .block_on(run_reply(&engine, &reply, None, Source::Clipboard))
        .unwrap();
    assert_eq!((run.calls, run.not_run), (3, 2), "{}", run.text);
    let results: Vec<&str> = run
        .text
        .split("</tool_result>")
        .filter(|r| !r.trim().is_empty())
        .collect();
    assert!(results[0].contains("status=\"success\""), "{}", results[0]);
    assert!(
        !results[1].contains("status=\"success\"") && !results[1].contains("not run"),
        "{}",
        results[1]
    );
    assert!(
        results[2].contains("The user denied the \"write_file\" tool call. Reason: not this"),
        "{}",
        results[2]
    );
    for r in &results[3..] {
        assert!(
            r.contains("status=\"error\">\nnot run: the user denied an earlier call of this reply (write_file)"),
            "{r}"
        );
    }
    assert!(!f.root.join("later.txt").exists());
}
