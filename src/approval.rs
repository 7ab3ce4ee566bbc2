//! Approvals (DESIGN §5.4): the [`Approver`] interface and the approvers that need no GUI.
//!
//! The engine puts a deadline around every [`Approver::ask`]; no answer in time is a deny. An
//! approver that fails (no terminal, closed dialog) answers deny. Nothing here can be reached
//! over HTTP: approvers live in the process that hosts the engine.

use std::io::{BufRead, Write};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tokio::sync::{Mutex, mpsc};

use crate::format::sanitize;
use crate::protocol::{ApprovalAnswer, ApprovalRequest, Scope};

#[async_trait]
pub trait Approver: Send + Sync {
    /// Ask the person. Dropping the future (timeout, cancel) must leave the approver usable.
    async fn ask(&self, request: ApprovalRequest) -> ApprovalAnswer;
    fn name(&self) -> &'static str;
    /// Ask the person whether the browser extension `origin` may be given the pairing key
    /// (native messaging, DESIGN §8.2). `Ok(())` only on an explicit yes; the default, for an
    /// approver that cannot ask this question, is a denial saying so. `timeout` is how long the
    /// caller waits for the answer (what a dialog's countdown shows).
    async fn ask_pairing(&self, origin: &str, timeout: Duration) -> Result<(), String> {
        let _ = (origin, timeout);
        Err(format!(
            "this ground-link's approver ({}) cannot ask about pairing; paste the output of `ground-link token` in the extension popup instead",
            self.name()
        ))
    }
}

/// The question asked before the pairing key is handed to a browser extension.
pub fn pairing_question(origin: &str) -> String {
    format!(
        "Pair this browser extension with ground-link?\n  extension: {}\n  It asked over native messaging (only a program of your own user can). Say yes only if you just installed or reset the ground-link extension; it will then be able to send ground-link calls, which are still decided by your rules and approvals.\n",
        one_line(origin)
    )
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
    async fn ask_pairing(&self, _origin: &str, _timeout: Duration) -> Result<(), String> {
        Err(self
            .reason
            .clone()
            .unwrap_or_else(|| "denied (ground-link runs with --approval deny)".to_string()))
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
            network: false,
        }
    }
    fn name(&self) -> &'static str {
        "allow"
    }
    async fn ask_pairing(&self, _origin: &str, _timeout: Duration) -> Result<(), String> {
        Ok(())
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

/// Longest argument value shown inline, in characters; longer ones are cut and their size given.
pub const INLINE_CHARS: usize = 300;
/// Longest framed block shown, in lines.
pub const BLOCK_LINES: usize = 400;

/// One model-supplied string made safe to show on one line: a newline becomes `⏎`, every other
/// control character (tab, carriage return, escape, …) becomes `\u{…}`, and invisible or
/// tag-like text is made visible as in results ([`sanitize`]). So a `reason` can never start a
/// line of its own that looks like ground-link's (`command:`, `parts:`, a menu).
pub fn one_line(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\n' => out.push('⏎'),
            // Line and paragraph separators break lines in some renderers: shown, not obeyed.
            c if c.is_control() || c == '\u{2028}' || c == '\u{2029}' => {
                out.push_str(&format!("\\u{{{:04x}}}", c as u32))
            }
            c => out.push(c),
        }
    }
    sanitize(&out)
}

fn cut_inline(text: &str) -> (String, bool) {
    let chars = text.chars().count();
    if chars > INLINE_CHARS {
        let head: String = text.chars().take(INLINE_CHARS).collect();
        (
            format!("{}… ({chars} characters in all)", one_line(&head)),
            true,
        )
    } else {
        (one_line(text), false)
    }
}

/// An argument as a person reads it: its value on one line (cut when long).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ShownArg {
    pub name: String,
    /// Strings in quotes; control characters and newlines visible; never a line break.
    pub value: String,
    /// Whether `value` was cut (the whole text is in a block, or too long to show).
    pub cut: bool,
}

/// Multi-line content (a diff, a file's new content, a multi-line command): only ever shown
/// framed, every line on its own, so none of it can pass for the approver's own text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ShownBlock {
    /// `diff`, or the argument's name.
    pub title: String,
    /// Each line with its control characters visible (a line never contains a line break).
    pub lines: Vec<String>,
    /// Lines left out after [`BLOCK_LINES`].
    pub cut_lines: usize,
}

/// A call described for a person: what the terminal approver prints and the dialog shows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CallDescription {
    pub chat: Option<String>,
    pub reason: Option<String>,
    pub args: Vec<ShownArg>,
    pub command_parts: Vec<String>,
    /// Browser tools: what the call does on which page.
    pub page: Option<String>,
    /// Why the engine asks (the decision's reason).
    pub why: String,
    pub blocks: Vec<ShownBlock>,
}

fn block(title: &str, text: &str) -> ShownBlock {
    let total = text.lines().count();
    ShownBlock {
        title: one_line(title),
        lines: text.lines().take(BLOCK_LINES).map(one_line).collect(),
        cut_lines: total.saturating_sub(BLOCK_LINES),
    }
}

/// The one description of a call for a person (DESIGN §5.4, "what the person reads is what
/// runs"): single-line fields keep newlines and control characters visible, and multi-line
/// content appears only in framed blocks — a diff when there is one, else each multi-line
/// string argument in full.
pub fn describe_call(request: &ApprovalRequest) -> CallDescription {
    let mut blocks = Vec::new();
    let args = request
        .args
        .iter()
        .map(|(k, v)| {
            let (value, cut) = match v {
                serde_json::Value::String(t) => {
                    let (shown, cut) = cut_inline(t);
                    if t.contains('\n') && request.diff.is_none() {
                        blocks.push(block(k, t));
                    }
                    (format!("\"{shown}\""), cut)
                }
                other => cut_inline(&other.to_string()),
            };
            ShownArg {
                name: one_line(k),
                value,
                cut,
            }
        })
        .collect();
    if let Some(diff) = &request.diff {
        blocks.insert(0, block("diff", diff));
    }
    CallDescription {
        // A named client is shown by its token's name, never by what it calls itself.
        chat: match (&request.client, &request.session) {
            (Some(client), Some(session)) => Some(format!(
                "client {} ({})",
                one_line(client),
                one_line(session)
            )),
            (Some(client), None) => Some(format!("client {}", one_line(client))),
            (None, session) => session.as_deref().map(one_line),
        },
        reason: request.reason.as_deref().map(one_line),
        args,
        command_parts: request.command_parts.iter().map(|p| one_line(p)).collect(),
        page: request.page.as_deref().map(one_line),
        why: one_line(&request.decision.reason),
        blocks,
    }
}

/// The terminal's text for a request, from [`describe_call`]: every model-supplied line starts
/// with a label or the block frame, never with text the model chose.
pub fn describe(request: &ApprovalRequest) -> String {
    let d = describe_call(request);
    let mut s = String::new();
    s.push_str(&format!(
        "\n=== ground-link: approve {} ? (call {}, risk {}) ===\n",
        request.tool,
        one_line(&request.call_id),
        request.risk.as_str()
    ));
    if let Some(chat) = &d.chat {
        s.push_str(&format!("chat:    {chat}\n"));
    }
    if let Some(reason) = &d.reason {
        s.push_str(&format!("reason:  {reason}\n"));
    }
    for a in &d.args {
        s.push_str(&format!("  {}: {}\n", a.name, a.value));
    }
    if !d.command_parts.is_empty() {
        s.push_str("parts:\n");
        for p in &d.command_parts {
            s.push_str(&format!("  - {p}\n"));
        }
    }
    if let Some(page) = &d.page {
        s.push_str(&format!("page:    {page}\n"));
    }
    s.push_str(&format!("why asked: {}\n", d.why));
    for b in &d.blocks {
        s.push_str(&format!(
            "  ┌─ {} ({} lines)\n",
            b.title,
            b.lines.len() + b.cut_lines
        ));
        for line in &b.lines {
            s.push_str(&format!("  │ {line}\n"));
        }
        if b.cut_lines > 0 {
            s.push_str(&format!("  │ … {} more lines not shown\n", b.cut_lines));
        }
        s.push_str("  └─\n");
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
    async fn ask_pairing(&self, origin: &str, _timeout: Duration) -> Result<(), String> {
        let mut lines = self.lines.lock().await;
        let mut withdrawn = Withdrawn {
            out: Arc::clone(&self.out),
            call_id: "pair".to_string(),
            armed: true,
        };
        while lines.try_recv().is_ok() {} // drop keystrokes typed before the question
        self.say(&format!("\n=== ground-link: {}", pairing_question(origin)));
        let answer = loop {
            self.say("[y] pair  [n] refuse (default)  > ");
            match lines.recv().await.as_deref().map(str::trim) {
                Some("y" | "Y" | "yes") => break Ok(()),
                Some("n" | "N" | "no" | "d" | "D" | "") => {
                    break Err("the person refused to pair this extension".to_string());
                }
                Some(_) => continue,
                None => break Err("no terminal to ask on".to_string()),
            }
        };
        withdrawn.armed = false;
        answer
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
            self.say(&format!("proposed rule: {}\n", one_line(&rule)));
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
        // The network switch (DESIGN §4): off unless the person turns it on for this answer.
        let mut network = false;
        loop {
            if request.network_off {
                self.say(if network {
                    "network: ON for this answer  [w] switch off\n"
                } else {
                    "network: off (the command cannot connect anywhere)  [w] switch on\n"
                });
            }
            self.say(&menu);
            let Some(answer) = lines.recv().await else {
                return ApprovalAnswer::Deny {
                    reason: Some("no terminal to ask on".to_string()),
                };
            };
            let scope = match answer.trim() {
                "w" | "W" if request.network_off => {
                    network = !network;
                    continue;
                }
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
                return ApprovalAnswer::Allow {
                    scope,
                    rule: None,
                    network,
                };
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
                network,
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Shared output the test can read after the approver wrote to it.
    #[derive(Clone, Default)]
    struct Shared(Arc<std::sync::Mutex<Vec<u8>>>);
    impl Write for Shared {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// The terminal's pairing question: only an explicit yes pairs; Enter, "n", and a closed
    /// terminal refuse; other input asks again.
    #[tokio::test]
    async fn the_terminal_pairs_only_on_an_explicit_yes() {
        for (typed, paired) in [
            ("y\n", true),
            ("maybe\nyes\n", true),
            ("\n", false),
            ("n\n", false),
            ("", false),
        ] {
            let out = Shared::default();
            let tty = TtyApprover::from_parts(
                Box::new(std::io::Cursor::new(typed.as_bytes().to_vec())),
                Box::new(out.clone()),
            );
            let answer = tty
                .ask_pairing("chrome-extension://abc/", Duration::from_secs(5))
                .await;
            assert_eq!(answer.is_ok(), paired, "{typed:?}: {answer:?}");
            let shown = String::from_utf8(out.0.lock().unwrap().clone()).unwrap();
            assert!(
                shown.contains("Pair this browser extension")
                    && shown.contains("chrome-extension://abc/"),
                "{shown}"
            );
        }
        assert!(
            DenyApprover { reason: None }
                .ask_pairing("x", Duration::from_secs(5))
                .await
                .is_err()
        );
        assert!(
            AllowOnceApprover
                .ask_pairing("x", Duration::from_secs(5))
                .await
                .is_ok()
        );
    }

    #[test]
    fn one_line_never_breaks_a_line() {
        let table = [
            ("a\nb", "a⏎b"),
            ("a\r\nb", "a\\u{000d}⏎b"),
            ("tab\there", "tab\\u{0009}here"),
            ("esc\u{1b}[2K", "esc\\u{001b}[2K"),
            ("zero\u{200B}width", "zero[U+200B]width"),
            ("<tool>{}</tool>", "‹tool>{}‹/tool>"),
            ("plain", "plain"),
        ];
        for (input, want) in table {
            assert_eq!(one_line(input), want, "{input:?}");
        }
        for c in ['\u{0085}', '\u{2028}', '\u{2029}', '\u{000b}', '\u{000c}'] {
            let shown = one_line(&format!("x{c}y"));
            assert!(
                !shown.contains([
                    '\n', '\r', '\u{0085}', '\u{2028}', '\u{2029}', '\u{000b}', '\u{000c}'
                ]),
                "{c:?} kept a line break: {shown:?}"
            );
        }
    }
}
