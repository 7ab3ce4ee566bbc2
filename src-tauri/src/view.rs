//! What the approval dialog renders, computed here rather than in the web page, from the core's
//! one description of a call ([`ground_link::approval::describe_call`], which the terminal
//! approver prints too): single-line fields keep newlines and control characters visible (`⏎`,
//! `\u{…}`), long values are cut with their size, multi-line content comes only as framed
//! blocks, and the diff is split into typed lines. The page only sets `textContent`; it never
//! interprets anything.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use ground_link::approval::{BLOCK_LINES, ShownBlock, describe_call, one_line};
use ground_link::protocol::{
    ApprovalRequest, Language, Risk, Rule, RuleAction, RuleMatch, Scope, Source, ToolName,
};

/// Longest diff shown, in lines.
pub const DIFF_SHOWN_LINES: usize = BLOCK_LINES;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ArgLine {
    pub name: String,
    /// On one line: strings in quotes, newlines as `⏎`, control characters as `\u{…}`.
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
    /// The tool asked about; none for a pairing question.
    pub tool: Option<ToolName>,
    /// A pairing question (DESIGN §8.2): the browser extension's origin, escaped. The dialog
    /// then asks whether to pair it, with "Pair" (allow once) and "Refuse" only.
    pub pairing: Option<String>,
    pub args: Vec<ArgLine>,
    pub reason: Option<String>,
    pub risk: Risk,
    /// Why the engine asks (the decision's reason), escaped.
    pub why: String,
    pub command_parts: Vec<String>,
    /// Browser tools: what the call does on which page, escaped.
    pub page: Option<String>,
    pub diff: Vec<DiffLine>,
    /// Lines of the diff left out.
    pub diff_cut: usize,
    /// Multi-line arguments in full (when there is no diff), framed line by line.
    pub blocks: Vec<ShownBlock>,
    /// The chat the call came from (the extension's session id), escaped.
    pub chat: Option<String>,
    pub source: Source,
    pub proposed_rule: Rule,
    pub scopes: Vec<Scope>,
    pub timeout_ms: u64,
    /// The command would run with no network: the dialog shows "network: off" and a switch.
    pub network_off: bool,
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
            text: one_line(line),
        });
    }
    (out, total.saturating_sub(DIFF_SHOWN_LINES))
}

impl ApprovalView {
    pub fn new(request: &ApprovalRequest, arrived_unix_ms: u64) -> ApprovalView {
        let (diff, diff_cut) = request.diff.as_deref().map(diff_lines).unwrap_or_default();
        let d = describe_call(request);
        ApprovalView {
            call_id: request.call_id.clone(),
            tool: Some(request.tool),
            pairing: None,
            args: d
                .args
                .into_iter()
                .map(|a| ArgLine {
                    name: a.name,
                    value: a.value,
                    cut: a.cut,
                })
                .collect(),
            reason: d.reason,
            risk: request.risk,
            why: d.why,
            command_parts: d.command_parts,
            page: d.page,
            diff,
            diff_cut,
            // The diff is drawn from its typed lines above; the other blocks as they are.
            blocks: d.blocks.into_iter().filter(|b| b.title != "diff").collect(),
            chat: d.chat,
            source: request.source,
            proposed_rule: request.proposed_rule.clone(),
            scopes: request.scopes.clone(),
            timeout_ms: request.timeout_ms,
            network_off: request.network_off,
            deadline_ms: arrived_unix_ms.saturating_add(request.timeout_ms),
        }
    }
}

impl ApprovalView {
    /// The question asked before the pairing key is handed to the extension `origin`.
    pub fn pairing(
        call_id: String,
        origin: &str,
        timeout_ms: u64,
        arrived_unix_ms: u64,
    ) -> ApprovalView {
        ApprovalView {
            call_id,
            tool: None,
            pairing: Some(one_line(origin)),
            args: Vec::new(),
            reason: None,
            risk: Risk::Dangerous,
            why: one_line(&ground_link::approval::pairing_question(origin)),
            command_parts: Vec::new(),
            page: None,
            diff: Vec::new(),
            diff_cut: 0,
            blocks: Vec::new(),
            chat: None,
            source: Source::Bridge,
            // Never shown: "once" is the only answer, so there is no rule to remember.
            proposed_rule: Rule {
                id: "pair".into(),
                action: RuleAction::Allow,
                tool: "*".into(),
                matches: RuleMatch::default(),
                description: None,
                examples: None,
                network: false,
            },
            scopes: vec![Scope::Once],
            timeout_ms,
            network_off: false,
            deadline_ms: arrived_unix_ms.saturating_add(timeout_ms),
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
    use serde_json::Value;

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
            page: None,
            diff: Some("--- a/x\n+++ b/x\n@@ -1 +1 @@\n-old\n+new\u{202E}\n same\n".into()),
            session: Some("chat.example/c/1".into()),
            source: Source::Bridge,
            client: None,
            proposed_rule: Rule {
                id: "allow-write_file-src".into(),
                action: RuleAction::Allow,
                tool: "write_file".into(),
                matches: RuleMatch {
                    command_prefix: None,
                    path_glob: Some("src/**".into()),
                    origin: None,
                },
                description: None,
                examples: None,
                network: false,
            },
            scopes: vec![Scope::Once, Scope::Session, Scope::Project, Scope::Global],
            timeout_ms: 120_000,
            network_off: false,
        }
    }

    #[test]
    fn model_text_is_escaped_and_cut() {
        let long = "x".repeat(ground_link::approval::INLINE_CHARS + 10);
        let mut r = request(
            "c-1",
            serde_json::json!({"path": "a\u{200B}b<tool>", "line": "one\u{1b}[31m\ntwo", "content": long, "n": 3}),
        );
        r.reason = Some("fix\u{200B} it\ncommand: rm -rf ~".into());
        let v = ApprovalView::new(&r, 1000);
        let arg = |n: &str| v.args.iter().find(|a| a.name == n).unwrap().clone();
        let table = [
            ("path", "\"a[U+200B]b‹tool>\"", false),
            ("line", "\"one\\u{001b}[31m⏎two\"", false),
            ("n", "3", false),
        ];
        for (name, want, cut) in table {
            assert_eq!(arg(name).value, want, "{name}");
            assert_eq!(arg(name).cut, cut, "{name}");
        }
        assert!(arg("content").cut);
        assert!(arg("content").value.ends_with(&format!(
            "({} characters in all)\"",
            ground_link::approval::INLINE_CHARS + 10
        )));
        // No model text reaches the page with a line break in it.
        assert_eq!(
            v.reason.as_deref(),
            Some("fix[U+200B] it⏎command: rm -rf ~")
        );
        assert!(v.args.iter().all(|a| !a.value.contains('\n')));
        assert_eq!(v.deadline_ms, 121_000);
        assert_eq!(v.chat.as_deref(), Some("chat.example/c/1"));
        // A diff shows the change, so the content is not repeated as a block.
        assert!(v.blocks.is_empty());
        r.diff = None;
        let v = ApprovalView::new(&r, 1000);
        assert_eq!(v.blocks.len(), 1);
        assert_eq!(v.blocks[0].title, "line");
        assert_eq!(v.blocks[0].lines, ["one\\u{001b}[31m", "two"]);
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
