//! Approvals (DESIGN §5.4): the [`Approver`] interface and the approvers that need no GUI.
//!
//! The engine puts a deadline around every [`Approver::ask`]; no answer in time is a deny. An
//! approver that fails (no terminal, closed dialog) answers deny. Nothing here can be reached
//! over HTTP: approvers live in the process that hosts the engine.

use std::io::{BufRead, Write};
use std::sync::Arc;

use async_trait::async_trait;
use tokio::sync::{Mutex, mpsc};

use crate::format::sanitize;
use crate::protocol::{ApprovalAnswer, ApprovalRequest, Scope};

#[async_trait]
pub trait Approver: Send + Sync {
    /// Ask the person. Dropping the future (timeout, cancel) must leave the approver usable.
    async fn ask(&self, request: ApprovalRequest) -> ApprovalAnswer;
    fn name(&self) -> &'static str;
}

/// Answers every question with a denial (scripted runs, CI).
pub struct DenyApprover {
    pub reason: Option<String>,
}

#[async_trait]
impl Approver for DenyApprover {
    async fn ask(&self, _request: ApprovalRequest) -> ApprovalAnswer {
        ApprovalAnswer::Deny {
            reason: self.reason.clone(),
        }
    }
    fn name(&self) -> &'static str {
        "deny"
    }
}

/// Approves every question once. For tests only; hosts announce it loudly at start.
pub struct AllowOnceApprover;

pub const ALLOW_APPROVER_WARNING: &str = "WARNING: --approval allow approves EVERY call that would ask, without asking. Use it for tests only.";

#[async_trait]
impl Approver for AllowOnceApprover {
    async fn ask(&self, _request: ApprovalRequest) -> ApprovalAnswer {
        ApprovalAnswer::Allow {
            scope: Scope::Once,
            rule: None,
        }
    }
    fn name(&self) -> &'static str {
        "allow"
    }
}

/// Asks on the controlling terminal (`/dev/tty`), one question at a time.
pub struct TtyApprover {
    lines: Mutex<mpsc::UnboundedReceiver<String>>,
    out: Arc<std::sync::Mutex<Box<dyn Write + Send>>>,
}

impl TtyApprover {
    /// Open `/dev/tty`; fails when there is no terminal (then use `--approval deny`).
    pub fn open() -> std::io::Result<TtyApprover> {
        let input = std::fs::File::open("/dev/tty")?;
        let output = std::fs::OpenOptions::new().write(true).open("/dev/tty")?;
        Ok(TtyApprover::from_parts(
            Box::new(std::io::BufReader::new(input)),
            Box::new(output),
        ))
    }

    /// A terminal made of any reader and writer (tests drive it through a pipe).
    pub fn from_parts(
        input: Box<dyn BufRead + Send>,
        output: Box<dyn Write + Send>,
    ) -> TtyApprover {
        let (tx, rx) = mpsc::unbounded_channel();
        // A plain thread: reading a terminal blocks, and must not hold up the runtime.
        std::thread::spawn(move || {
            let mut input = input;
            let mut line = String::new();
            loop {
                line.clear();
                match input.read_line(&mut line) {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {
                        if tx
                            .send(line.trim_end_matches(['\n', '\r']).to_string())
                            .is_err()
                        {
                            break;
                        }
                    }
                }
            }
        });
        TtyApprover {
            lines: Mutex::new(rx),
            out: Arc::new(std::sync::Mutex::new(output)),
        }
    }

    fn say(&self, text: &str) {
        say_to(&self.out, text);
    }
}

fn say_to(out: &std::sync::Mutex<Box<dyn Write + Send>>, text: &str) {
    let mut out = out.lock().unwrap_or_else(|p| p.into_inner());
    let _ = out.write_all(text.as_bytes());
    let _ = out.flush();
}

/// Prints "withdrawn" when an unanswered question is dropped.
struct Withdrawn {
    out: Arc<std::sync::Mutex<Box<dyn Write + Send>>>,
    call_id: String,
    armed: bool,
}

impl Drop for Withdrawn {
    fn drop(&mut self) {
        if self.armed {
            say_to(
                &self.out,
                &format!(
                    "\n(question for call {} withdrawn: it was cancelled or timed out and is denied)\n",
                    self.call_id
                ),
            );
        }
    }
}

/// The text shown for a request, with every argument escaped so hidden characters show.
pub fn describe(request: &ApprovalRequest) -> String {
    let mut s = String::new();
    s.push_str(&format!(
        "\n=== ground-link: approve {} ? (call {}, risk {}) ===\n",
        request.tool,
        request.call_id,
        request.risk.as_str()
    ));
    if let Some(session) = &request.session {
        s.push_str(&format!("chat:    {}\n", sanitize(session)));
    }
    if let Some(reason) = &request.reason {
        s.push_str(&format!("reason:  {}\n", sanitize(reason)));
    }
    for (k, v) in &request.args {
        let shown = match v {
            serde_json::Value::String(t) => format!("{t:?}"),
            other => other.to_string(),
        };
        let shown = if shown.len() > 2000 {
            format!(
                "{}… ({} chars)",
                &shown[..crate::tools::fs::floor_char_boundary(&shown, 2000)],
                shown.len()
            )
        } else {
            shown
        };
        s.push_str(&format!("  {k}: {}\n", sanitize(&shown)));
    }
    if !request.command_parts.is_empty() {
        s.push_str("parts:\n");
        for p in &request.command_parts {
            s.push_str(&format!("  - {}\n", sanitize(p)));
        }
    }
    s.push_str(&format!(
        "why asked: {}\n",
        sanitize(&request.decision.reason)
    ));
    if let Some(diff) = &request.diff {
        s.push_str("diff:\n");
        s.push_str(&sanitize(diff));
        if !diff.ends_with('\n') {
            s.push('\n');
        }
    }
    s
}

#[async_trait]
impl Approver for TtyApprover {
    async fn ask(&self, request: ApprovalRequest) -> ApprovalAnswer {
        // One question at a time; a question whose caller gave up releases the lock.
        let mut lines = self.lines.lock().await;
        // If the caller gives up (timeout, client cancel, shutdown), say so on the terminal, so
        // nobody types an answer to a question that is no longer there.
        let mut withdrawn = Withdrawn {
            out: Arc::clone(&self.out),
            call_id: request.call_id.clone(),
            armed: true,
        };
        let answer = self.question(&request, &mut lines).await;
        withdrawn.armed = false;
        answer
    }
    fn name(&self) -> &'static str {
        "tty"
    }
}

impl TtyApprover {
    async fn question(
        &self,
        request: &ApprovalRequest,
        lines: &mut mpsc::UnboundedReceiver<String>,
    ) -> ApprovalAnswer {
        while lines.try_recv().is_ok() {} // drop keystrokes typed before the question
        self.say(&describe(request));
        let rule = serde_json::to_string(&request.proposed_rule).unwrap_or_default();
        let scoped = request.scopes.iter().any(|s| *s != Scope::Once);
        if scoped {
            self.say(&format!("proposed rule: {}\n", sanitize(&rule)));
        }
        let mut menu = String::from("[o] allow once");
        for (scope, label) in [
            (Scope::Session, "[c] this conversation"),
            (Scope::Project, "[p] this project"),
            (Scope::Global, "[g] everywhere"),
        ] {
            if request.scopes.contains(&scope) {
                menu.push_str(&format!("  {label}"));
            }
        }
        menu.push_str("  [d] deny  > ");
        loop {
            self.say(&menu);
            let Some(answer) = lines.recv().await else {
                return ApprovalAnswer::Deny {
                    reason: Some("no terminal to ask on".to_string()),
                };
            };
            let scope = match answer.trim() {
                "o" | "O" | "once" => Scope::Once,
                "c" | "C" if request.scopes.contains(&Scope::Session) => Scope::Session,
                "p" | "P" if request.scopes.contains(&Scope::Project) => Scope::Project,
                "g" | "G" if request.scopes.contains(&Scope::Global) => Scope::Global,
                "d" | "D" | "deny" | "n" | "N" | "" => {
                    self.say("reason for the model (optional, Enter to skip) > ");
                    let reason = lines
                        .recv()
                        .await
                        .map(|r| r.trim().to_string())
                        .filter(|r| !r.is_empty());
                    return ApprovalAnswer::Deny { reason };
                }
                _ => continue,
            };
            if scope == Scope::Once {
                return ApprovalAnswer::Allow { scope, rule: None };
            }
            self.say("edit the rule as JSON, or Enter to keep it > ");
            let edited = lines.recv().await.unwrap_or_default();
            let rule = if edited.trim().is_empty() {
                request.proposed_rule.clone()
            } else {
                match serde_json::from_str(edited.trim()) {
                    Ok(r) => r,
                    Err(e) => {
                        self.say(&format!("not a valid rule ({e}); asking again\n"));
                        continue;
                    }
                }
            };
            return ApprovalAnswer::Allow {
                scope,
                rule: Some(rule),
            };
        }
    }
}
