//! The bridge's own answer bodies (DESIGN §6), as typed structs so the extension's copies are
//! generated from them (`src/tsgen.rs`) rather than written twice. Call bodies and results are
//! the shared protocol types of `src/protocol.rs`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::protocol::{ApprovalMode, CallStatus, SandboxMode};

/// `GET /health`. Anyone may ask whether ground-link is there; only a caller that proved the
/// pairing key (a signed request, or the bearer token) learns where it works and how.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Health {
    /// Always `"ok"`.
    pub status: String,
    /// Always `"ground-link"`.
    pub app: String,
    pub version: String,
    /// The sandbox root (authenticated callers only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dir: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<ApprovalMode>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<SandboxMode>,
    /// Calls waiting for the person's approval (authenticated callers only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending: Option<u64>,
    /// The last adapter problem the extension reported per chat site (authenticated callers
    /// only: which sites a person uses is nobody else's business).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub adapters: Option<Vec<AdapterProblem>>,
}

/// `POST /adapter-health` (token): what the extension's health check found wrong with a chat
/// site's adapter on the page it last checked. An empty `problems` says the site is fine again.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AdapterReport {
    /// The adapter id, e.g. `deepseek`.
    pub site: String,
    /// One sentence per problem, e.g. "DeepSeek: send button not found — using Enter".
    pub problems: Vec<String>,
}

/// A site's last reported adapter problems and when they came (Unix ms).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AdapterProblem {
    pub site: String,
    pub problems: Vec<String>,
    pub at_ms: u64,
}

/// The answer to `POST /adapter-health`: every site with a problem now.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AdapterProblems {
    pub adapters: Vec<AdapterProblem>,
}

/// `202` from `POST /exec`, `GET /calls/{id}` and `DELETE /calls/{id}`: the call is not over;
/// long-poll `GET /calls/{callId}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PendingAnswer {
    /// Always `"pending"`.
    pub status: String,
    pub call_id: String,
}

/// Every 4xx/5xx body: what was wrong and what to do instead.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ErrorBody {
    pub error: String,
}

/// `POST /panel-calls` (signed, like `/exec`): one page-tool call the extension's side panel ran
/// itself, reported once it ended so the audit log holds it too (DESIGN §12). The engine decided
/// nothing here; the line records what the panel and the person did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PanelCallReport {
    /// The panel's own id for the call (letters, digits, `_.:-`; at most 128).
    pub call_id: String,
    /// The page tool's name as the page registered it.
    pub tool: String,
    /// The origin of the frame that offers the tool, e.g. `http://127.0.0.1:8080`.
    pub origin: String,
    /// The tab's URL when the call ran (at most 2048 characters).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// The arguments as the tool got them; long strings are summarised with a hash in the log.
    pub args: serde_json::Map<String, serde_json::Value>,
    pub decision: PanelDecision,
    /// Why the panel asked or did not ask, e.g. "read-only" (at most 200 characters).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
    /// How it ended: `success`, `error`, `denied` (the person refused) or `timeout`.
    pub status: CallStatus,
    pub duration_ms: u64,
    /// Size of the page's result before the panel cut it.
    pub output_bytes: u64,
    /// The panel's conversation id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// What went wrong, for a call that did not succeed (at most 1000 characters).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Who let a panel call run, or why it did not.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum PanelDecision {
    // The person confirmed the agent's call on the panel's card.
    Confirmed,
    // The panel ran it without a card (a read-only tool, or the panel's auto mode).
    AutoRun,
    // The person called the tool from the panel's inspector form.
    ByHand,
    // The person declined the card (or the turn ended while it waited).
    Refused,
    // Never reached the page: its arguments did not parse.
    Failed,
}

/// `POST /invalid-call`: a `<tool>` block the extension's parser rejected, for the core to
/// format (DESIGN §2.1: the model is told, in the one text every path uses).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct InvalidCallReport {
    pub kind: crate::parser::BlockErrorKind,
    /// The parser's message; it quotes the model's text, so it is treated as untrusted.
    pub detail: String,
}

/// The answer to `POST /invalid-call`: the `<tool_result>` block, ready to paste.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InvalidCallFormatted {
    pub formatted: String,
}

/// The answer to `POST /panel-calls`: the line is in the audit log file by now.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PanelCallAudited {
    pub call_id: String,
}
