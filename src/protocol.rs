//! Wire types shared by the bridge, the CLI, the tray app, the UI and the extension.
//!
//! Plain serde types with no behaviour beyond small conversions: camelCase on the wire, unions
//! tagged with `"type"`, JSON Schema from `schemars`. Anything that decides or runs lives
//! elsewhere; this module is what every side agrees on.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The seven sandbox tools of DESIGN §3, and the browser tools of §8.3 (run by the extension
/// over native messaging, decided by the same engine).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ToolName {
    ListDir,
    ReadFile,
    Glob,
    Grep,
    WriteFile,
    EditFile,
    ExecCmd,
    NavigateTo,
    ClickElement,
    InputText,
    SubmitForm,
    OpenTab,
    CloseTab,
    SwitchTab,
    SnapshotPage,
    // Reading a `browser://` resource (MCP `resources/read`); not listed as a tool. (A plain
    // comment: a doc comment on one variant turns the generated enum into a oneOf.)
    ReadResource,
    // A page's own tool (WebMCP or a skill, DESIGN §12), called by its listed name
    // `page__…`; rules name them all as `page_tool` (with `origin`).
    PageTool,
}

impl ToolName {
    pub const ALL: [ToolName; 7] = [
        ToolName::ListDir,
        ToolName::ReadFile,
        ToolName::Glob,
        ToolName::Grep,
        ToolName::WriteFile,
        ToolName::EditFile,
        ToolName::ExecCmd,
    ];

    /// The browser tools (DESIGN §8.3), listed only while a browser is connected.
    pub const BROWSER: [ToolName; 8] = [
        ToolName::NavigateTo,
        ToolName::ClickElement,
        ToolName::InputText,
        ToolName::SubmitForm,
        ToolName::OpenTab,
        ToolName::CloseTab,
        ToolName::SwitchTab,
        ToolName::SnapshotPage,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ToolName::ListDir => "list_dir",
            ToolName::ReadFile => "read_file",
            ToolName::Glob => "glob",
            ToolName::Grep => "grep",
            ToolName::WriteFile => "write_file",
            ToolName::EditFile => "edit_file",
            ToolName::ExecCmd => "exec_cmd",
            ToolName::NavigateTo => "navigate_to",
            ToolName::ClickElement => "click_element",
            ToolName::InputText => "input_text",
            ToolName::SubmitForm => "submit_form",
            ToolName::OpenTab => "open_tab",
            ToolName::CloseTab => "close_tab",
            ToolName::SwitchTab => "switch_tab",
            ToolName::SnapshotPage => "snapshot_page",
            ToolName::ReadResource => "read_resource",
            ToolName::PageTool => "page_tool",
        }
    }

    /// The canonical tool for a name as a model may write it: the canonical name, an alias from
    /// the original documents (`ls`, `read`, `write`, `cmd`, `exec`) or a Claude-style name
    /// (`LS`, `Read`, `Write`, `Edit`, `Glob`, `Grep`, `Bash`). Exact spelling only: `READ` or
    /// `bash` are not aliases, so a typo is reported instead of guessed.
    pub fn from_alias(name: &str) -> Option<ToolName> {
        Some(match name {
            "list_dir" | "ls" | "LS" => ToolName::ListDir,
            "read_file" | "read" | "Read" => ToolName::ReadFile,
            "glob" | "Glob" => ToolName::Glob,
            "grep" | "Grep" => ToolName::Grep,
            "write_file" | "write" | "Write" => ToolName::WriteFile,
            "edit_file" | "Edit" => ToolName::EditFile,
            "exec_cmd" | "cmd" | "exec" | "Bash" => ToolName::ExecCmd,
            "navigate_to" => ToolName::NavigateTo,
            "click_element" => ToolName::ClickElement,
            "input_text" => ToolName::InputText,
            "submit_form" => ToolName::SubmitForm,
            "open_tab" => ToolName::OpenTab,
            "close_tab" => ToolName::CloseTab,
            "switch_tab" => ToolName::SwitchTab,
            "snapshot_page" => ToolName::SnapshotPage,
            "read_resource" => ToolName::ReadResource,
            "page_tool" => ToolName::PageTool,
            _ => return None,
        })
    }

    /// The tool a call's name means: a name or alias, or a page tool's listed name
    /// (`page__<origin hash>__<tool>`, DESIGN §12).
    pub fn of_call(name: &str) -> Option<ToolName> {
        ToolName::from_alias(name).or_else(|| {
            crate::tools::browser::is_page_tool_name(name).then_some(ToolName::PageTool)
        })
    }

    /// A browser tool, run by the extension (DESIGN §8.3).
    pub fn is_browser(self) -> bool {
        Self::BROWSER.contains(&self) || matches!(self, ToolName::ReadResource | ToolName::PageTool)
    }

    /// Tools that change files or run programs; they run one at a time (DESIGN §6).
    pub fn is_mutating(self) -> bool {
        matches!(
            self,
            ToolName::WriteFile | ToolName::EditFile | ToolName::ExecCmd
        )
    }
}

impl std::fmt::Display for ToolName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One call as the model wrote it (DESIGN §2.1). `name` is kept as written (after alias
/// normalisation by the parser) so an unknown tool can be reported by name.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolCall {
    pub name: String,
    #[serde(default)]
    pub args: Map<String, Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// A call as it reaches the engine: `POST /exec` bodies, `ground-link check/call --json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CallRequest {
    pub name: String,
    #[serde(default)]
    pub args: Map<String, Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Conversation id from the extension; scopes "allow for this conversation".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
    /// How long `POST /exec` waits before answering 202 `pending` (bridge only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wait_ms: Option<u64>,
    /// The model reply this call came from (bridge only): at most 20 calls of one reply run,
    /// and the person's denial stops the rest of it (DESIGN §5.2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reply: Option<String>,
    /// How the extension found this call when not in a reply its site adapter recognised
    /// (bridge only). It can only tighten: a marked call is always asked about (DESIGN §5.1).
    /// An unknown value, or `null`, is refused rather than read as unmarked.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "some_provenance"
    )]
    #[schemars(with = "Provenance")]
    pub provenance: Option<Provenance>,
    /// The named client whose token the bridge authenticated (`ground-link token add`). Set
    /// by the bridge only: a client cannot claim a name in the call's JSON.
    #[serde(skip)]
    pub client: Option<String>,
}

impl CallRequest {
    pub fn tool_call(&self) -> ToolCall {
        ToolCall {
            name: self.name.clone(),
            args: self.args.clone(),
            reason: self.reason.clone(),
        }
    }
}

impl From<ToolCall> for CallRequest {
    fn from(call: ToolCall) -> Self {
        CallRequest {
            name: call.name,
            args: call.args,
            reason: call.reason,
            session: None,
            call_id: None,
            wait_ms: None,
            reply: None,
            provenance: None,
            client: None,
        }
    }
}

/// Where a call was found, when it was not inside a model reply that the chat site's adapter
/// recognised. There is deliberately no value meaning "trusted": absent is the ordinary case,
/// and every value here makes the call ask the person, whatever rules, grants or mode say.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum Provenance {
    /// Found by the extension's generic fallback in page text that no adapter role matched;
    /// the person confirmed in the page (a trusted click) that it is the model's reply, which
    /// the page itself could have arranged, so ground-link asks again in its own dialog.
    GenericFallback,
}

impl Provenance {
    /// Why such a call is asked about: the approver shows it as the decision's reason.
    pub fn why_ask(self) -> &'static str {
        match self {
            Provenance::GenericFallback => {
                "found by the extension's generic fallback, outside any reply the chat site's \
                 adapter recognises (the page itself could have written it): no rule, grant or \
                 mode skips the question"
            }
        }
    }
}

/// `"provenance": null` is refused like an unknown value: a marker that fails to parse must
/// never be read as "no marker" (which is the looser case).
fn some_provenance<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Provenance>, D::Error> {
    let v = Value::deserialize(d)?;
    match serde_json::from_value::<Provenance>(v.clone()) {
        Ok(p) => Ok(Some(p)),
        Err(_) => Err(serde::de::Error::custom(format!(
            "{v} is not a known provenance; the only one is \"genericFallback\" (a call found \
             by the extension's generic fallback); leave the field out for any other call"
        ))),
    }
}

/// Where a call came from; recorded in the audit log and shown in the approval dialog.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum Source {
    Cli,
    Bridge,
    Clipboard,
    Mcp,
    // The extension's side panel, reporting a page-tool call it ran itself (the engine decided
    // nothing: the line records what the panel and the person did). `//`, not `///`: a doc on
    // one variant turns the generated TS union into an object list.
    Panel,
}

#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "camelCase")]
pub enum Risk {
    Safe,
    Moderate,
    Dangerous,
}

impl Risk {
    pub fn as_str(self) -> &'static str {
        match self {
            Risk::Safe => "safe",
            Risk::Moderate => "moderate",
            Risk::Dangerous => "dangerous",
        }
    }
}

/// What the permission engine decided.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "camelCase")]
pub enum Verdict {
    Allow,
    Ask,
    Deny,
}

/// The rule layers of DESIGN §5.3, strictest first.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "camelCase")]
pub enum Layer {
    Managed,
    Global,
    Project,
    Session,
}

impl Layer {
    pub fn as_str(self) -> &'static str {
        match self {
            Layer::Managed => "managed",
            Layer::Global => "global",
            Layer::Project => "project",
            Layer::Session => "session",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RuleRef {
    pub id: String,
    pub layer: Layer,
}

/// The pipeline steps of DESIGN §5.1, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum StepKind {
    Validate,
    Jail,
    Sandbox,
    Protected,
    Catastrophic,
    DenyRule,
    AskRule,
    Classify,
    AllowRule,
    SessionGrant,
    Mode,
    Default,
}

/// One step that looked at the call, and what it concluded (`None`: it passed the call on).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Step {
    pub step: StepKind,
    pub outcome: Option<Verdict>,
    pub detail: String,
}

/// A decision with its explanation; `ground-link check` prints exactly this.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Decision {
    pub decision: Verdict,
    pub risk: Risk,
    pub reason: String,
    pub rule: Option<RuleRef>,
    pub steps: Vec<Step>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum CallStatus {
    Success,
    Error,
    Denied,
    Timeout,
    Pending,
}

impl CallStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            CallStatus::Success => "success",
            CallStatus::Error => "error",
            CallStatus::Denied => "denied",
            CallStatus::Timeout => "timeout",
            CallStatus::Pending => "pending",
        }
    }
}

/// The result object of `POST /exec`, `GET /calls/{id}` and `ground-link call` (DESIGN §6).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CallResult {
    pub status: CallStatus,
    /// The tool's sanitised text, with a truncation notice where one applies.
    pub output: String,
    /// The whole `<tool_result>` block of DESIGN §2.2, ready to paste.
    pub formatted: String,
    pub call_id: String,
    pub decision: Option<Decision>,
    pub duration_ms: u64,
    pub truncated: bool,
}

/// How the sandbox confines tools (DESIGN §4).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema, clap::ValueEnum,
)]
#[serde(rename_all = "kebab-case")]
pub enum SandboxMode {
    ReadOnly,
    #[default]
    WorkspaceWrite,
    FullAccess,
}

impl SandboxMode {
    pub fn as_str(self) -> &'static str {
        match self {
            SandboxMode::ReadOnly => "read-only",
            SandboxMode::WorkspaceWrite => "workspace-write",
            SandboxMode::FullAccess => "full-access",
        }
    }
}

/// `ask` (default) or `auto` (moderate calls run without a dialog; dangerous still asks).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema, clap::ValueEnum,
)]
#[serde(rename_all = "camelCase")]
pub enum ApprovalMode {
    #[default]
    Ask,
    Auto,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum RuleAction {
    Allow,
    Deny,
    Ask,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RuleMatch {
    /// Whole words at the start of each simple command (`npm test` matches `npm test -x`, not
    /// `npm tests`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command_prefix: Option<String>,
    /// Matched against the resolved path relative to the sandbox root.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path_glob: Option<String>,
    /// Browser tools only: matched against the origin of the page the call acts on
    /// (`https://*.example.com`), checked when the call runs (DESIGN §8.3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RuleExamples {
    /// Commands (for `exec_cmd` rules) or root-relative paths that the rule must match.
    #[serde(default, rename = "match")]
    pub matches: Vec<String>,
    #[serde(default)]
    pub not_match: Vec<String>,
}

/// One permission rule (DESIGN §5.3).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Rule {
    pub id: String,
    pub action: RuleAction,
    /// A tool name, an alias, or `*`.
    pub tool: String,
    #[serde(default, rename = "match")]
    pub matches: RuleMatch,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub examples: Option<RuleExamples>,
    /// On an `exec_cmd` allow rule: the commands it covers keep the network in
    /// `workspace-write` (DESIGN §4). Counted only from layers whose allow rules apply.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub network: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum OnFailure {
    #[default]
    Block,
    Skip,
}

fn default_hook_timeout() -> u64 {
    5000
}

/// A PreToolUse / PostToolUse hook (DESIGN §5.5).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Hook {
    pub id: String,
    /// A tool name, an alias, or `*`.
    #[serde(default = "star")]
    pub tool_match: String,
    /// Run with `sh -c` in the sandbox root.
    pub command: String,
    /// Milliseconds.
    #[serde(default = "default_hook_timeout")]
    pub timeout: u64,
    #[serde(default)]
    pub on_failure: OnFailure,
}

fn star() -> String {
    "*".to_string()
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "PascalCase", deny_unknown_fields)]
pub struct Hooks {
    #[serde(default)]
    pub pre_tool_use: Vec<Hook>,
    #[serde(default)]
    pub post_tool_use: Vec<Hook>,
}

/// A permission file: managed, global or project (DESIGN §5.3). `allow`/`deny`/`ask` take
/// Claude Code-style shorthand strings such as `Bash(npm test *)` or `Read(src/**)`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PermissionFile {
    pub version: u32,
    #[serde(default)]
    pub rules: Vec<Rule>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allow: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub deny: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ask: Vec<String>,
    #[serde(default)]
    pub hooks: Hooks,
}

impl Default for PermissionFile {
    fn default() -> Self {
        PermissionFile {
            version: 1,
            rules: Vec::new(),
            allow: Vec::new(),
            deny: Vec::new(),
            ask: Vec::new(),
            hooks: Hooks::default(),
        }
    }
}

/// How far an "allow" answer reaches (DESIGN §5.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum Scope {
    Once,
    Session,
    Project,
    Global,
}

/// What the approval dialog (or terminal) shows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApprovalRequest {
    pub call_id: String,
    pub tool: ToolName,
    pub args: Map<String, Value>,
    /// The model's stated reason, if any.
    pub reason: Option<String>,
    pub risk: Risk,
    pub decision: Decision,
    /// For `exec_cmd`: the simple commands the line is made of.
    pub command_parts: Vec<String>,
    /// For writes and edits: a unified diff of what would change.
    pub diff: Option<String>,
    /// For browser tools: what the call does on which page (`click_element button "Pay" on
    /// https://shop.test/cart`), from the extension's look at the tab.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page: Option<String>,
    pub session: Option<String>,
    pub source: Source,
    /// The named client the call came from (its token's name, never what the client says).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<String>,
    /// The narrowest useful rule for a scoped allow; the user may edit it.
    pub proposed_rule: Rule,
    /// Scoped answers that make sense here (a protected path only allows `once`).
    pub scopes: Vec<Scope>,
    pub timeout_ms: u64,
    /// An `exec_cmd` that would run with no network (`workspace-write`): the approver shows
    /// "network: off" and a switch that turns it on for the answer's scope.
    #[serde(default)]
    pub network_off: bool,
}

/// The answer to an approval request. A missing answer (timeout, closed dialog) is a deny.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum ApprovalAnswer {
    #[serde(rename_all = "camelCase")]
    Allow {
        scope: Scope,
        /// The rule to remember for scoped answers (the proposed one, possibly edited).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        rule: Option<Rule>,
        /// The person switched the network on for this answer's scope (an `exec_cmd` that
        /// would otherwise run with no network, [`ApprovalRequest::network_off`]).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        network: bool,
    },
    #[serde(rename_all = "camelCase")]
    Deny {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
}

/// Settings shared by the CLI, the bridge and the app.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
pub struct Settings {
    pub sandbox: SandboxMode,
    pub mode: ApprovalMode,
    pub port: u16,
    pub approval_timeout_sec: u64,
    /// Upper bound for `exec_cmd`'s `timeoutSec`.
    pub exec_timeout_max_sec: u64,
    pub language: Language,
    pub audit_max_age_days: u32,
    pub audit_max_total_mb: u64,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            sandbox: SandboxMode::WorkspaceWrite,
            mode: ApprovalMode::Ask,
            port: 18080,
            approval_timeout_sec: 120,
            exec_timeout_max_sec: 600,
            language: Language::En,
            audit_max_age_days: 30,
            audit_max_total_mb: 100,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum Language {
    #[default]
    En,
    Zh,
}
