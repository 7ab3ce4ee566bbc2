//! What the approval dialog renders, computed here rather than in the web page: arguments and
//! every other model-controlled text go through the core's sanitiser (invisible and bidi
//! characters become visible `[U+XXXX]`), long values are cut with their size, and the diff is
//! split into typed lines. The page only sets `textContent`; it never interprets anything.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use ground_link::format::sanitize;
use ground_link::protocol::{ApprovalRequest, Language, Risk, Rule, Scope, Source, ToolName};

/// Longest argument value shown in full; longer ones are cut and their size given.
pub const ARG_SHOWN_CHARS: usize = 4000;
/// Longest diff shown, in lines.
pub const DIFF_SHOWN_LINES: usize = 400;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ArgLine {
    pub name: String,
    /// Escaped: strings in quotes with hidden characters made visible.
    pub value: String,
    /// Whether `value` was cut.
    pub cut: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum DiffKind {
    Header,
    Hunk,
    Add,
    Remove,
    Context,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DiffLine {
    pub kind: DiffKind,
    pub text: String,
}

/// One pending approval, ready to render.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApprovalView {
    pub call_id: String,
    pub tool: ToolName,
    pub args: Vec<ArgLine>,
    pub reason: Option<String>,
    pub risk: Risk,
    /// Why the engine asks (the decision's reason), escaped.
    pub why: String,
    pub command_parts: Vec<String>,
    pub diff: Vec<DiffLine>,
    /// Lines of the diff left out.
    pub diff_cut: usize,
    /// The chat the call came from (the extension's session id), escaped.
    pub chat: Option<String>,
    pub source: Source,
    pub proposed_rule: Rule,
    pub scopes: Vec<Scope>,
    pub timeout_ms: u64,
    /// Unix milliseconds after which the engine denies on its own.
    pub deadline_ms: u64,
}

/// The dialog's whole state: the call on show and how many wait behind it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DialogState {
    pub current: Option<ApprovalView>,
    pub queued: usize,
    /// The language the person chose in the settings window.
    pub language: Language,
}

fn shown_value(v: &Value) -> (String, bool) {
    let text = match v {
        // Shown as written (newlines kept), with hidden characters made visible below.
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let chars = text.chars().count();
    if chars > ARG_SHOWN_CHARS {
        let head: String = text.chars().take(ARG_SHOWN_CHARS).collect();
        (
            format!("{}… ({} characters in all)", sanitize(&head), chars),
            true,
        )
    } else {
        (sanitize(&text), false)
    }
}

pub fn diff_lines(diff: &str) -> (Vec<DiffLine>, usize) {
    let mut out = Vec::new();
    let total = diff.lines().count();
    for line in diff.lines().take(DIFF_SHOWN_LINES) {
        let kind = if line.starts_with("+++") || line.starts_with("---") {
            DiffKind::Header
        } else if line.starts_with("@@") {
            DiffKind::Hunk
        } else if line.starts_with('+') {
            DiffKind::Add
        } else if line.starts_with('-') {
            DiffKind::Remove
        } else {
            DiffKind::Context
        };
        out.push(DiffLine {
            kind,
            text: sanitize(line),
        });
    }
    (out, total.saturating_sub(DIFF_SHOWN_LINES))
}

impl ApprovalView {
    pub fn new(request: &ApprovalRequest, arrived_unix_ms: u64) -> ApprovalView {
        let (diff, diff_cut) = request.diff.as_deref().map(diff_lines).unwrap_or_default();
        ApprovalView {
            call_id: request.call_id.clone(),
            tool: request.tool,
            args: request
                .args
                .iter()
                .map(|(k, v)| {
                    let (value, cut) = shown_value(v);
                    ArgLine {
                        name: sanitize(k),
                        value,
                        cut,
                    }
                })
                .collect(),
            reason: request.reason.as_deref().map(sanitize),
            risk: request.risk,
            why: sanitize(&request.decision.reason),
            command_parts: request.command_parts.iter().map(|p| sanitize(p)).collect(),
            diff,
            diff_cut,
            chat: request.session.as_deref().map(sanitize),
            source: request.source,
            proposed_rule: request.proposed_rule.clone(),
            scopes: request.scopes.clone(),
            timeout_ms: request.timeout_ms,
            deadline_ms: arrived_unix_ms.saturating_add(request.timeout_ms),
        }
    }
}

pub fn unix_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use ground_link::protocol::{Decision, RuleAction, RuleMatch, Verdict};

    pub fn request(call_id: &str, args: Value) -> ApprovalRequest {
        ApprovalRequest {
            call_id: call_id.to_string(),
            tool: ToolName::WriteFile,
            args: args.as_object().cloned().unwrap_or_default(),
            reason: Some("fix\u{200B} it".into()),
            risk: Risk::Moderate,
            decision: Decision {
                decision: Verdict::Ask,
                risk: Risk::Moderate,
                reason: "moderate call needs approval".into(),
                rule: None,
                steps: vec![],
            },
            command_parts: vec![],
            diff: Some("--- a/x\n+++ b/x\n@@ -1 +1 @@\n-old\n+new\u{202E}\n same\n".into()),
            session: Some("chat.example/c/1".into()),
            source: Source::Bridge,
            proposed_rule: Rule {
                id: "allow-write_file-src".into(),
                action: RuleAction::Allow,
                tool: "write_file".into(),
                matches: RuleMatch {
                    command_prefix: None,
                    path_glob: Some("src/**".into()),
                },
                description: None,
                examples: None,
            },
            scopes: vec![Scope::Once, Scope::Session, Scope::Project, Scope::Global],
            timeout_ms: 120_000,
        }
    }

    #[test]
    fn model_text_is_escaped_and_cut() {
        let long = "x".repeat(ARG_SHOWN_CHARS + 10);
        let r = request(
            "c-1",
            serde_json::json!({"path": "a\u{200B}b<tool>", "line": "one\u{1b}[31m\ntwo", "content": long, "n": 3}),
        );
        let v = ApprovalView::new(&r, 1000);
        let arg = |n: &str| v.args.iter().find(|a| a.name == n).unwrap().clone();
        let table = [
            ("path", "a[U+200B]b‹tool>", false),
            ("line", "one[U+001B][31m\ntwo", false),
            ("n", "3", false),
        ];
        for (name, want, cut) in table {
            assert_eq!(arg(name).value, want, "{name}");
            assert_eq!(arg(name).cut, cut, "{name}");
        }
        assert!(arg("content").cut);
        assert!(
            arg("content")
                .value
                .ends_with(&format!("({} characters in all)", ARG_SHOWN_CHARS + 10))
        );
        assert_eq!(v.reason.as_deref(), Some("fix[U+200B] it"));
        assert_eq!(v.deadline_ms, 121_000);
        assert_eq!(v.chat.as_deref(), Some("chat.example/c/1"));
    }

    #[test]
    fn diff_lines_are_typed() {
        let (lines, cut) = diff_lines("--- a/x\n+++ b/x\n@@ -1 +1 @@\n-old\n+new\u{202E}\n same\n");
        let kinds: Vec<DiffKind> = lines.iter().map(|l| l.kind).collect();
        assert_eq!(
            kinds,
            [
                DiffKind::Header,
                DiffKind::Header,
                DiffKind::Hunk,
                DiffKind::Remove,
                DiffKind::Add,
                DiffKind::Context
            ]
        );
        assert_eq!(lines[4].text, "+new[U+202E]");
        assert_eq!(cut, 0);
        let big: String = (0..DIFF_SHOWN_LINES + 5)
            .map(|i| format!("+{i}\n"))
            .collect();
        assert_eq!(diff_lines(&big).1, 5);
    }
}
