//! The settings window's audit log viewer: the newest entries, filtered, and the chain check.
//! Reading only; the log is written by the engine (`ground_link::audit`).

use std::path::Path;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use ground_link::audit::AuditEntry;
use ground_link::protocol::{CallStatus, Source, Verdict};

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
pub struct AuditFilter {
    /// Matched (case-insensitively) against tool, session, arguments, answer and reason.
    pub text: String,
    pub status: Option<CallStatus>,
    /// At most this many rows, newest first (default 200).
    pub limit: Option<usize>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AuditRow {
    pub time: String,
    /// Who made the call: the source, and the named MCP client or the page's origin
    /// (`mcp · codex`, `panel · http://127.0.0.1:5173`).
    pub from: String,
    pub tool: String,
    pub session: Option<String>,
    pub call_id: String,
    pub status: CallStatus,
    pub decision: Option<Verdict>,
    pub why: Option<String>,
    pub answer: Option<String>,
    pub args: String,
    pub duration_ms: u64,
    pub note: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AuditPage {
    pub rows: Vec<AuditRow>,
    /// Lines that matched before the limit cut them.
    pub matched: usize,
    pub dir: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ChainCheck {
    pub ok: bool,
    /// One sentence: lines and files checked, or where the chain breaks.
    pub summary: String,
}

fn row(e: AuditEntry) -> AuditRow {
    let source = match e.source {
        Source::Cli => "cli",
        Source::Bridge => "bridge",
        Source::Clipboard => "clipboard",
        Source::Mcp => "mcp",
        Source::Panel => "panel",
    };
    let from = match e.client.as_deref().or(e.origin.as_deref()) {
        Some(who) => format!("{source} · {who}"),
        None => source.to_owned(),
    };
    AuditRow {
        time: e.time,
        from,
        tool: e.tool,
        session: e.session,
        call_id: e.call_id,
        status: e.status,
        decision: e.decision.as_ref().map(|d| d.decision),
        why: e.decision.map(|d| d.reason),
        answer: e.answer,
        args: e.args.to_string(),
        duration_ms: e.duration_ms,
        note: e.note,
    }
}

fn matches(r: &AuditRow, f: &AuditFilter) -> bool {
    if f.status.is_some_and(|s| s != r.status) {
        return false;
    }
    let needle = f.text.trim().to_lowercase();
    if needle.is_empty() {
        return true;
    }
    [
        Some(&r.tool),
        Some(&r.from),
        r.session.as_ref(),
        Some(&r.args),
        r.answer.as_ref(),
        r.why.as_ref(),
        Some(&r.call_id),
    ]
    .into_iter()
    .flatten()
    .any(|s| s.to_lowercase().contains(&needle))
}

/// The newest entries first. Lines that do not parse are skipped here; the chain check
/// reports them.
pub fn read(dir: &Path, filter: &AuditFilter) -> AuditPage {
    let limit = filter.limit.unwrap_or(200).clamp(1, 5000);
    let mut rows = Vec::new();
    let mut matched = 0;
    // An unreadable folder shows as an empty page; the chain check says what is wrong.
    let _ = ground_link::audit::for_each_newest_first(dir, |entry| {
        let r = row(entry);
        if matches(&r, filter) {
            matched += 1;
            if rows.len() < limit {
                rows.push(r);
            }
        }
    });
    AuditPage {
        rows,
        matched,
        dir: dir.display().to_string(),
    }
}

pub fn verify(dir: &Path) -> ChainCheck {
    match ground_link::audit::verify(dir) {
        Ok(report) => ChainCheck {
            ok: report.is_ok(),
            summary: report.to_string(),
        },
        Err(e) => ChainCheck {
            ok: false,
            summary: format!("the audit log could not be read: {e}"),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ground_link::audit::{AuditConfig, AuditLog};

    fn log_in(dir: &Path) -> AuditLog {
        AuditLog::open(AuditConfig {
            dir: dir.to_path_buf(),
            max_age_days: 0,
            max_total_bytes: 0,
        })
        .unwrap()
    }

    fn entry(tool: &str, status: CallStatus, session: &str) -> AuditEntry {
        AuditEntry {
            time: String::new(),
            source: Source::Bridge,
            client: None,
            session: Some(session.into()),
            call_id: format!("c-{tool}"),
            tool: tool.into(),
            origin: None,
            url: None,
            args: serde_json::json!({"path": "src/main.rs"}),
            decision: None,
            answer: Some("deny: not today".into()),
            duration_ms: 3,
            status,
            output_bytes: 0,
            note: None,
        }
    }

    #[test]
    fn filters_newest_first_and_verifies() {
        let dir = tempfile::tempdir().unwrap();
        let log = log_in(dir.path());
        log.append(&entry("read_file", CallStatus::Success, "chat-a"))
            .unwrap();
        log.append(&entry("write_file", CallStatus::Denied, "chat-b"))
            .unwrap();
        log.append(&entry("exec_cmd", CallStatus::Success, "chat-a"))
            .unwrap();
        let all = read(dir.path(), &AuditFilter::default());
        let tools: Vec<&str> = all.rows.iter().map(|r| r.tool.as_str()).collect();
        assert_eq!(tools, ["exec_cmd", "write_file", "read_file"]);
        let table: [(AuditFilter, &[&str]); 4] = [
            (
                AuditFilter {
                    text: "CHAT-A".into(),
                    ..Default::default()
                },
                &["exec_cmd", "read_file"],
            ),
            (
                AuditFilter {
                    status: Some(CallStatus::Denied),
                    ..Default::default()
                },
                &["write_file"],
            ),
            (
                AuditFilter {
                    text: "not today".into(),
                    limit: Some(1),
                    ..Default::default()
                },
                &["exec_cmd"],
            ),
            (
                AuditFilter {
                    text: "nothing like it".into(),
                    ..Default::default()
                },
                &[],
            ),
        ];
        for (f, want) in table {
            let got: Vec<String> = read(dir.path(), &f)
                .rows
                .into_iter()
                .map(|r| r.tool)
                .collect();
            assert_eq!(got, want, "{f:?}");
        }
        assert_eq!(
            read(
                dir.path(),
                &AuditFilter {
                    text: "not today".into(),
                    limit: Some(1),
                    ..Default::default()
                }
            )
            .matched,
            3
        );
        assert!(verify(dir.path()).ok);

        // Tampering shows.
        let file = std::fs::read_dir(dir.path())
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .find(|p| p.extension().is_some_and(|x| x == "jsonl"))
            .unwrap();
        let text = std::fs::read_to_string(&file)
            .unwrap()
            .replace("write_file", "read_file");
        std::fs::write(&file, text).unwrap();
        let c = verify(dir.path());
        assert!(!c.ok);
        assert!(c.summary.contains("damaged"), "{}", c.summary);
    }

    #[test]
    fn each_row_says_who_made_the_call_and_can_be_found_by_it() {
        let dir = tempfile::tempdir().unwrap();
        let log = log_in(dir.path());
        log.append(&entry("read_file", CallStatus::Success, "chat-a"))
            .unwrap();
        log.append(&AuditEntry {
            source: Source::Mcp,
            client: Some("codex".into()),
            ..entry("write_file", CallStatus::Success, "s-1")
        })
        .unwrap();
        log.append(&AuditEntry {
            source: Source::Panel,
            origin: Some("http://127.0.0.1:5173".into()),
            ..entry("search_docs", CallStatus::Success, "panel:1")
        })
        .unwrap();
        let all = read(dir.path(), &AuditFilter::default());
        let from: Vec<&str> = all.rows.iter().map(|r| r.from.as_str()).collect();
        assert_eq!(
            from,
            ["panel · http://127.0.0.1:5173", "mcp · codex", "bridge"]
        );
        let codex = read(
            dir.path(),
            &AuditFilter {
                text: "codex".into(),
                ..Default::default()
            },
        );
        let tools: Vec<&str> = codex.rows.iter().map(|r| r.tool.as_str()).collect();
        assert_eq!(tools, ["write_file"]);
    }
}
