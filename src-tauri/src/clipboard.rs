//! "Run tool calls from clipboard": the fallback when a site adapter breaks. A copied reply is
//! parsed with the core's parser, each call runs through the same engine (and the same
//! approvals) as calls from the extension, and the results come back as one text to paste.

use ground_link::engine::Engine;
use ground_link::format::tool_result;
use ground_link::parser::parse_tool_blocks;
use ground_link::protocol::{CallRequest, CallStatus, Source};

/// What a clipboard run did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClipboardRun {
    /// All results, in order, ready to paste into the chat.
    pub text: String,
    pub calls: usize,
    pub broken_blocks: usize,
}

/// Run every `<tool>` block in `reply`. Broken blocks are reported to the model, not dropped.
/// `None` when the text has no block at all (nothing is copied back then).
pub async fn run_reply(
    engine: &Engine,
    reply: &str,
    session: Option<String>,
) -> Option<ClipboardRun> {
    let blocks = parse_tool_blocks(reply);
    if blocks.is_empty() {
        return None;
    }
    let mut out = Vec::new();
    let (mut calls, mut broken) = (0, 0);
    for block in blocks {
        match block.call {
            Ok(call) => {
                calls += 1;
                let mut req = CallRequest::from(call);
                req.session = session.clone();
                out.push(engine.call(req, Source::Clipboard).await.formatted);
            }
            Err(e) => {
                broken += 1;
                out.push(tool_result("tool", CallStatus::Error, &e.message, false));
            }
        }
    }
    Some(ClipboardRun {
        text: out.join("\n"),
        calls,
        broken_blocks: broken,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use ground_link::approval::DenyApprover;
    use ground_link::engine::EngineConfig;
    use ground_link::paths::ConfigPaths;
    use std::sync::Arc;

    #[tokio::test]
    async fn runs_each_block_through_the_engine() {
        let base = tempfile::tempdir().unwrap();
        let root = base.path().join("root");
        std::fs::create_dir_all(&root).unwrap();
        std::fs::write(root.join("notes.txt"), "hello from the sandbox\n").unwrap();
        let engine = Engine::new(
            EngineConfig::new(root, ConfigPaths::under(base.path())),
            Arc::new(DenyApprover {
                reason: Some("not now".into()),
            }),
        )
        .unwrap();
        let reply = concat!(
            "Let me look.\n<tool>{\"name\":\"read_file\",\"args\":{\"path\":\"notes.txt\"}}</tool>\n",
            "<tool>{\"name\":\"write_file\",\"args\":{\"path\":\"x.txt\",\"content\":\"hi\"}}</tool>\n",
            "<tool>{\"args\":{}}</tool>"
        );
        let run = run_reply(&engine, reply, None).await.unwrap();
        assert_eq!((run.calls, run.broken_blocks), (2, 1));
        let table = [
            "<tool_result name=\"read_file\" status=\"success\">",
            "hello from the sandbox",
            "<tool_result name=\"write_file\" status=\"denied\">",
            "Reason: not now",
            "status=\"error\"",
        ];
        for want in table {
            assert!(
                run.text.contains(want),
                "{want:?} missing in:\n{}",
                run.text
            );
        }
        assert!(!base.path().join("root/x.txt").exists());
        assert_eq!(run_reply(&engine, "no calls here", None).await, None);
    }
}
