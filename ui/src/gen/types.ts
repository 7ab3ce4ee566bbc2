// Generated from the Rust types by src-tauri/src/tsgen.rs; do not edit by hand.
// Regenerate: GL_WRITE_TYPES=1 cargo test -p ground-link-app tsgen
/* eslint-disable */

export type AppSettings = {
  /** Start the app when the person logs in. */
  autostart: boolean;
  /** Sandbox mode, approval mode, port, approval timeout, language, audit retention. */
  core: Settings;
  /** The sandbox root; `None` until the person picks one. */
  root: string | null;
};

/** The answer to an approval request. A missing answer (timeout, closed dialog) is a deny. */
export type ApprovalAnswer = {
  /**
   * The person switched the network on for this answer's scope (an `exec_cmd` that
   * would otherwise run with no network, [`ApprovalRequest::network_off`]).
   */
  network?: boolean;
  /** The rule to remember for scoped answers (the proposed one, possibly edited). */
  rule?: Rule | null;
  scope: Scope;
  type: "allow";
} | {
  reason?: string | null;
  type: "deny";
};

/** `ask` (default) or `auto` (moderate calls run without a dialog; dangerous still asks). */
export type ApprovalMode = "ask" | "auto";

/** One pending approval, ready to render. */
export type ApprovalView = {
  args: ArgLine[];
  /** Multi-line arguments in full (when there is no diff), framed line by line. */
  blocks: ShownBlock[];
  callId: string;
  /** The chat the call came from (the extension's session id), escaped. */
  chat: string | null;
  commandParts: string[];
  /** Unix milliseconds after which the engine denies on its own. */
  deadlineMs: number;
  diff: DiffLine[];
  /** Lines of the diff left out. */
  diffCut: number;
  /** The command would run with no network: the dialog shows "network: off" and a switch. */
  networkOff: boolean;
  /** Browser tools: what the call does on which page, escaped. */
  page: string | null;
  /**
   * A pairing question (DESIGN §8.2): the browser extension's origin, escaped. The dialog
   * then asks whether to pair it, with "Pair" (allow once) and "Refuse" only.
   */
  pairing: string | null;
  proposedRule: Rule;
  reason: string | null;
  risk: Risk;
  scopes: Scope[];
  source: Source;
  timeoutMs: number;
  /** The tool asked about; none for a pairing question. */
  tool: ToolName | null;
  /** Why the engine asks (the decision's reason), escaped. */
  why: string;
};

export type ArgLine = {
  /** Whether `value` was cut. */
  cut: boolean;
  name: string;
  /** On one line: strings in quotes, newlines as `⏎`, control characters as `\u{…}`. */
  value: string;
};

export type AuditFilter = {
  /** At most this many rows, newest first (default 200). */
  limit: number | null;
  status: CallStatus | null;
  /** Matched (case-insensitively) against tool, session, arguments, answer and reason. */
  text: string;
};

export type AuditPage = {
  dir: string;
  /** Lines that matched before the limit cut them. */
  matched: number;
  rows: AuditRow[];
};

export type AuditRow = {
  answer: string | null;
  args: string;
  callId: string;
  decision: Verdict | null;
  durationMs: number;
  /**
   * Who made the call: the source, and the named MCP client or the page's origin
   * (`mcp · codex`, `panel · http://127.0.0.1:5173`).
   */
  from: string;
  note: string | null;
  session: string | null;
  status: CallStatus;
  time: string;
  tool: string;
  why: string | null;
};

export type CallStatus = "success" | "error" | "denied" | "timeout" | "pending";

export type ChainCheck = {
  ok: boolean;
  /** One sentence: lines and files checked, or where the chain breaks. */
  summary: string;
};

/** A client just made: the view, and its token, shown this once. */
export type ClientAdded = {
  pairing: PairingView;
  token: string;
};

/**
 * A named MCP client (`ground-link token add NAME`): its name and when its token was made.
 * The token itself is shown once, when it is made, and never kept (only its digest).
 */
export type ClientView = {
  /** Unix seconds. */
  created: number;
  name: string;
};

/** A command's failure as the UI receives it. */
export type CommandError = {
  kind: CommandErrorKind;
  /** What went wrong and what to do instead. */
  message: string;
};

/** What kind of failure a command met, so the UI can act on it. */
export type CommandErrorKind = "invalidInput" | "notFound" | "notRunning" | "engine" | "io";

/** A decision with its explanation; `ground-link check` prints exactly this. */
export type Decision = {
  decision: Verdict;
  reason: string;
  risk: Risk;
  rule: RuleRef | null;
  steps: Step[];
};

/** The dialog's whole state: the call on show and how many wait behind it. */
export type DialogState = {
  current: ApprovalView | null;
  /** The language the person chose in the settings window. */
  language: Language;
  queued: number;
};

export type DiffKind = "header" | "hunk" | "add" | "remove" | "context";

export type DiffLine = {
  kind: DiffKind;
  text: string;
};

/** A PreToolUse / PostToolUse hook (DESIGN §5.5). */
export type Hook = {
  /** Run with `sh -c` in the sandbox root. */
  command: string;
  id: string;
  onFailure: OnFailure;
  /** Milliseconds. */
  timeout: number;
  /** A tool name, an alias, or `*`. */
  toolMatch: string;
};

/** What trying one hook found (the settings window's "run now"). */
export type HookRun = {
  /** Whether the hook would block the call. */
  blocked: boolean;
  /** What happened, in one sentence. */
  summary: string;
};

export type Hooks = {
  PostToolUse: Hook[];
  PreToolUse: Hook[];
};

export type Language = "en" | "zh";

/** The rule layers of DESIGN §5.3, strictest first. */
export type Layer = "managed" | "global" | "project" | "session";

export type OnFailure = "block" | "skip";

export type PairedExtension = {
  /** Unix seconds of its last authenticated request. */
  lastSeen: number;
  origin: string;
};

export type PairingView = {
  /** Named MCP clients, oldest first. */
  clients: ClientView[];
  /** Why the client list could not be read, if it could not. */
  clientsError: string | null;
  connected: boolean;
  keptIn: string;
  paired: PairedExtension[];
  port: number | null;
  token: string;
  warning: string | null;
};

export type Risk = "safe" | "moderate" | "dangerous";

/** What the settings window says about a proposed sandbox root. */
export type RootCheck = {
  /** Why it cannot be used; `None` when it can. */
  error: string | null;
  /** The folder as it will be used (absolute, symlinks resolved). */
  resolved: string | null;
  /** Things worth a second look (the home folder, `/`). */
  warnings: string[];
};

/** One permission rule (DESIGN §5.3). */
export type Rule = {
  action: RuleAction;
  description?: string | null;
  examples?: RuleExamples | null;
  id: string;
  match: RuleMatch;
  /**
   * On an `exec_cmd` allow rule: the commands it covers keep the network in
   * `workspace-write` (DESIGN §4). Counted only from layers whose allow rules apply.
   */
  network?: boolean;
  /** A tool name, an alias, or `*`. */
  tool: string;
};

export type RuleAction = "allow" | "deny" | "ask";

/** One change to a rule file. */
export type RuleEdit = {
  rule: Rule;
  type: "add";
} | {
  id: string;
  rule: Rule;
  type: "update";
} | {
  id: string;
  type: "delete";
} | {
  action: RuleAction;
  text: string;
  type: "addShorthand";
} | {
  action: RuleAction;
  text: string;
  type: "deleteShorthand";
} | {
  hooks: Hooks;
  type: "setHooks";
} | {
  text: string;
  type: "replaceText";
};

export type RuleExamples = {
  /** Commands (for `exec_cmd` rules) or root-relative paths that the rule must match. */
  match: string[];
  notMatch: string[];
};

/** One rule file as the settings window shows it. */
export type RuleFileView = {
  /** Whether the app may write it (global and project). */
  editable: boolean;
  /** Why the file on disk does not load (the last good version stays in force meanwhile). */
  error: string | null;
  exists: boolean;
  hooks: Hooks;
  layer: Layer;
  /** Host path for the global and managed files, root-relative for the project file. */
  path: string;
  /** The `rules` list of the file on disk (empty when it does not parse). */
  rules: Rule[];
  shorthand: ShorthandEntry[];
  /** The file's text on disk, if it exists and can be read. */
  text: string | null;
  /** Project file only: whether its allow rules and hooks apply (its content is trusted). */
  trusted: boolean | null;
};

export type RuleMatch = {
  /**
   * Whole words at the start of each simple command (`npm test` matches `npm test -x`, not
   * `npm tests`).
   */
  commandPrefix?: string | null;
  /**
   * Browser tools only: matched against the origin of the page the call acts on
   * (`https://*.example.com`), checked when the call runs (DESIGN §8.3).
   */
  origin?: string | null;
  /** Matched against the resolved path relative to the sandbox root. */
  pathGlob?: string | null;
};

export type RuleRef = {
  id: string;
  layer: Layer;
};

/** How the sandbox confines tools (DESIGN §4). */
export type SandboxMode = "read-only" | "workspace-write" | "full-access";

/** How far an "allow" answer reaches (DESIGN §5.4). */
export type Scope = "once" | "session" | "project" | "global";

/** Settings shared by the CLI, the bridge and the app. */
export type Settings = {
  approvalTimeoutSec: number;
  auditMaxAgeDays: number;
  auditMaxTotalMb: number;
  /** Upper bound for `exec_cmd`'s `timeoutSec`. */
  execTimeoutMaxSec: number;
  language: Language;
  mode: ApprovalMode;
  port: number;
  sandbox: SandboxMode;
};

export type SettingsView = {
  auditDir: string;
  globalRules: string;
  /** The folder of the app's diagnostic log (empty when there is none). */
  logDir: string;
  managedRules: string;
  settings: AppSettings;
  status: StatusView;
  version: string;
};

/** A Claude Code-style rule string as it stands in a file's `allow`/`deny`/`ask` list. */
export type ShorthandEntry = {
  action: RuleAction;
  text: string;
};

/**
 * Multi-line content (a diff, a file's new content, a multi-line command): only ever shown
 * framed, every line on its own, so none of it can pass for the approver's own text.
 */
export type ShownBlock = {
  /** Lines left out after [`BLOCK_LINES`]. */
  cutLines: number;
  /** Each line with its control characters visible (a line never contains a line break). */
  lines: string[];
  /** `diff`, or the argument's name. */
  title: string;
};

/** Where a call came from; recorded in the audit log and shown in the approval dialog. */
export type Source = "cli" | "bridge" | "clipboard" | "mcp" | "panel";

/** The state the tray and the settings window show. */
export type StatusView = {
  /**
   * Set when `exec_cmd` is not confined by the OS or cannot run in its own namespaces
   * (then every command asks): why.
   */
  confinement: string | null;
  connected: boolean;
  paused: boolean;
  pending: number;
  port: number | null;
  /** Why the bridge is not running, or a broken rule file. */
  problem: string | null;
  root: string | null;
  /** The sandbox root is broad (home, `/`, ground-link's own state): what stays protected. */
  rootWarning: string | null;
  running: boolean;
  /**
   * The extension's last adapter problem per chat site ("DeepSeek: send button not found —
   * using Enter"), as it reported them to the bridge.
   */
  siteProblems: string[];
};

/** One step that looked at the call, and what it concluded (`None`: it passed the call on). */
export type Step = {
  detail: string;
  outcome: Verdict | null;
  step: StepKind;
};

/** The pipeline steps of DESIGN §5.1, in order. */
export type StepKind = "validate" | "jail" | "sandbox" | "protected" | "catastrophic" | "denyRule" | "askRule" | "classify" | "allowRule" | "sessionGrant" | "mode" | "default";

/**
 * The seven sandbox tools of DESIGN §3, and the browser tools of §8.3 (run by the extension
 * over native messaging, decided by the same engine).
 */
export type ToolName = "list_dir" | "read_file" | "glob" | "grep" | "write_file" | "edit_file" | "exec_cmd" | "navigate_to" | "click_element" | "input_text" | "submit_form" | "open_tab" | "close_tab" | "switch_tab" | "snapshot_page" | "read_resource" | "page_tool";

/**
 * What the project file's trust would change: the text last trusted and the text in force,
 * as a unified diff (empty when they agree).
 */
export type TrustView = {
  /**
   * The text in force, which is what trusting it now would trust (sent back with the
   * request to trust, so a file changed since is refused).
   */
  content: string | null;
  /** Unified diff from the trusted text to the text in force. */
  diff: string;
  error: string | null;
  exists: boolean;
  trusted: boolean;
};

/** What the permission engine decided. */
export type Verdict = "allow" | "ask" | "deny";


/** Every app command (src-tauri/src/command_names.rs). */
export const COMMANDS = [
  "approval_subscribe",
  "approval_answer",
  "approval_rendered",
  "settings_get",
  "settings_save",
  "status_get",
  "root_check",
  "root_pick",
  "root_open",
  "rules_view",
  "rules_apply",
  "rules_check_call",
  "trust_get",
  "trust_project",
  "hook_run",
  "pairing_get",
  "token_copy",
  "token_rotate",
  "client_add",
  "client_revoke",
  "audit_read",
  "audit_verify",
] as const;
export type Command = (typeof COMMANDS)[number];
