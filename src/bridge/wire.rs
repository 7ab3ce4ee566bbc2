//! The bridge's own answer bodies (DESIGN §6), as typed structs so the extension's copies are
//! generated from them (`src/tsgen.rs`) rather than written twice. Call bodies and results are
//! the shared protocol types of `src/protocol.rs`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::protocol::{ApprovalMode, SandboxMode};

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
