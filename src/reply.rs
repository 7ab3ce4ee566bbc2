//! Running a whole copied reply: the tray's "Run tool calls from clipboard", the fallback when
//! a site adapter breaks. The reply is parsed with the same parser as the extension's, each
//! call runs through the same engine (and the same approvals) as calls from the bridge, and
//! the results come back as one text to paste into the chat.

use crate::engine::Engine;
use crate::format::tool_result;
use crate::parser::parse_tool_blocks;
use crate::protocol::{CallRequest, CallStatus, Source};

/// What running a reply did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplyRun {
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
    source: Source,
) -> Option<ReplyRun> {
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
                out.push(engine.call(req, source).await.formatted);
            }
            Err(e) => {
                broken += 1;
                out.push(tool_result("tool", CallStatus::Error, &e.message, false));
            }
        }
    }
    Some(ReplyRun {
        text: out.join("\n"),
        calls,
        broken_blocks: broken,
    })
}
