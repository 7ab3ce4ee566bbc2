// Generated from the Rust types by src/tsgen.rs; do not edit by hand.
// Regenerate: GL_WRITE_TYPES=1 cargo test --lib tsgen
/* eslint-disable */

/** A site's last reported adapter problems and when they came (Unix ms). */
export type AdapterProblem = {
  atMs: number;
  problems: string[];
  site: string;
};

/** The answer to `POST /adapter-health`: every site with a problem now. */
export type AdapterProblems = {
  adapters: AdapterProblem[];
};

/**
 * `POST /adapter-health` (token): what the extension's health check found wrong with a chat
 * site's adapter on the page it last checked. An empty `problems` says the site is fine again.
 */
export type AdapterReport = {
  /** One sentence per problem, e.g. "DeepSeek: send button not found — using Enter". */
  problems: string[];
  /** The adapter id, e.g. `deepseek`. */
  site: string;
};

/** `ask` (default) or `auto` (moderate calls run without a dialog; dangerous still asks). */
export type ApprovalMode = "ask" | "auto";

export type BlockErrorKind = "invalidJson" | "notAnObject" | "missingName" | "badField" | "trailingText" | "unterminated";

/** A call as it reaches the engine: `POST /exec` bodies, `ground-link check/call --json`. */
export type CallRequest = {
  args: Record<string, unknown>;
  callId?: string | null;
  name: string;
  /**
   * How the extension found this call when not in a reply its site adapter recognised
   * (bridge only). It can only tighten: a marked call is always asked about (DESIGN §5.1).
   * An unknown value, or `null`, is refused rather than read as unmarked.
   */
  provenance?: Provenance;
  reason?: string | null;
  /**
   * The model reply this call came from (bridge only): at most 20 calls of one reply run,
   * and the person's denial stops the rest of it (DESIGN §5.2).
   */
  reply?: string | null;
  /** Conversation id from the extension; scopes "allow for this conversation". */
  session?: string | null;
  /** How long `POST /exec` waits before answering 202 `pending` (bridge only). */
  waitMs?: number | null;
};

/** The result object of `POST /exec`, `GET /calls/{id}` and `ground-link call` (DESIGN §6). */
export type CallResult = {
  callId: string;
  decision: Decision | null;
  durationMs: number;
  /** The whole `<tool_result>` block of DESIGN §2.2, ready to paste. */
  formatted: string;
  /** The tool's sanitised text, with a truncation notice where one applies. */
  output: string;
  status: CallStatus;
  truncated: boolean;
};

export type CallStatus = "success" | "error" | "denied" | "timeout" | "pending";

/** A decision with its explanation; `ground-link check` prints exactly this. */
export type Decision = {
  decision: Verdict;
  reason: string;
  risk: Risk;
  rule: RuleRef | null;
  steps: Step[];
};

/** Every 4xx/5xx body: what was wrong and what to do instead. */
export type ErrorBody = {
  error: string;
};

/** What `GET /events` streams. */
export type Event = {
  callId: string;
  risk: Risk;
  session: string | null;
  tool: ToolName;
  type: "pending";
} | {
  allowed: boolean;
  callId: string;
  type: "resolved";
} | {
  callId: string;
  status: CallStatus;
  type: "done";
};

/**
 * `GET /health`. Anyone may ask whether ground-link is there; only a caller that proved the
 * pairing key (a signed request, or the bearer token) learns where it works and how.
 */
export type Health = {
  /**
   * The last adapter problem the extension reported per chat site (authenticated callers
   * only: which sites a person uses is nobody else's business).
   */
  adapters?: AdapterProblem[] | null;
  /** Always `"ground-link"`. */
  app: string;
  /** The sandbox root (authenticated callers only). */
  dir?: string | null;
  mode?: ApprovalMode | null;
  /** Calls waiting for the person's approval (authenticated callers only). */
  pending?: number | null;
  sandbox?: SandboxMode | null;
  /** Always `"ok"`. */
  status: string;
  version: string;
};

/** The answer to `POST /invalid-call`: the `<tool_result>` block, ready to paste. */
export type InvalidCallFormatted = {
  formatted: string;
};

/**
 * `POST /invalid-call`: a `<tool>` block the extension's parser rejected, for the core to
 * format (DESIGN §2.1: the model is told, in the one text every path uses).
 */
export type InvalidCallReport = {
  /** The parser's message; it quotes the model's text, so it is treated as untrusted. */
  detail: string;
  kind: BlockErrorKind;
};

/** The rule layers of DESIGN §5.3, strictest first. */
export type Layer = "managed" | "global" | "project" | "session";

/** The answer to `POST /panel-calls`: the line is in the audit log file by now. */
export type PanelCallAudited = {
  callId: string;
};

/**
 * `POST /panel-calls` (signed, like `/exec`): one page-tool call the extension's side panel ran
 * itself, reported once it ended so the audit log holds it too (DESIGN §12). The engine decided
 * nothing here; the line records what the panel and the person did.
 */
export type PanelCallReport = {
  /** The arguments as the tool got them; long strings are summarised with a hash in the log. */
  args: Record<string, unknown>;
  /** The panel's own id for the call (letters, digits, `_.:-`; at most 128). */
  callId: string;
  decision: PanelDecision;
  durationMs: number;
  /** What went wrong, for a call that did not succeed (at most 1000 characters). */
  error?: string | null;
  /** The origin of the frame that offers the tool, e.g. `http://127.0.0.1:8080`. */
  origin: string;
  /** Size of the page's result before the panel cut it. */
  outputBytes: number;
  /** The panel's conversation id. */
  session?: string | null;
  /** How it ended: `success`, `error`, `denied` (the person refused) or `timeout`. */
  status: CallStatus;
  /** The page tool's name as the page registered it. */
  tool: string;
  /** The tab's URL when the call ran (at most 2048 characters). */
  url?: string | null;
  /** Why the panel asked or did not ask, e.g. "read-only" (at most 200 characters). */
  why?: string | null;
};

/** Who let a panel call run, or why it did not. */
export type PanelDecision = "confirmed" | "autoRun" | "byHand" | "refused" | "failed";

/**
 * `202` from `POST /exec`, `GET /calls/{id}` and `DELETE /calls/{id}`: the call is not over;
 * long-poll `GET /calls/{callId}`.
 */
export type PendingAnswer = {
  callId: string;
  /** Always `"pending"`. */
  status: string;
};

/**
 * Where a call was found, when it was not inside a model reply that the chat site's adapter
 * recognised. There is deliberately no value meaning "trusted": absent is the ordinary case,
 * and every value here makes the call ask the person, whatever rules, grants or mode say.
 */
export type Provenance = "genericFallback";

export type Risk = "safe" | "moderate" | "dangerous";

export type RuleRef = {
  id: string;
  layer: Layer;
};

/** How the sandbox confines tools (DESIGN §4). */
export type SandboxMode = "read-only" | "workspace-write" | "full-access";

/** One step that looked at the call, and what it concluded (`None`: it passed the call on). */
export type Step = {
  detail: string;
  outcome: Verdict | null;
  step: StepKind;
};

/** The pipeline steps of DESIGN §5.1, in order. */
export type StepKind = "validate" | "jail" | "sandbox" | "protected" | "catastrophic" | "denyRule" | "askRule" | "classify" | "allowRule" | "sessionGrant" | "mode" | "default";

/**
 * One call as the model wrote it (DESIGN §2.1). `name` is kept as written (after alias
 * normalisation by the parser) so an unknown tool can be reported by name.
 */
export type ToolCall = {
  args: Record<string, unknown>;
  name: string;
  reason?: string | null;
};

/**
 * The seven sandbox tools of DESIGN §3, and the browser tools of §8.3 (run by the extension
 * over native messaging, decided by the same engine).
 */
export type ToolName = "list_dir" | "read_file" | "glob" | "grep" | "write_file" | "edit_file" | "exec_cmd" | "navigate_to" | "click_element" | "input_text" | "submit_form" | "open_tab" | "close_tab" | "switch_tab" | "snapshot_page" | "read_resource" | "page_tool";

/** What the permission engine decided. */
export type Verdict = "allow" | "ask" | "deny";

export const TOOL_NAMES: readonly ToolName[] = ["list_dir","read_file","glob","grep","write_file","edit_file","exec_cmd","navigate_to","click_element","input_text","submit_form","open_tab","close_tab","switch_tab","snapshot_page","read_resource","page_tool"];

/** The bridge's flood limits (DESIGN §5.2). */
export const LIMITS = {
  maxCallsPerReply: 20,
} as const;

/** The bridge's default port (`Settings::default`): the extension's default address. */
export const DEFAULT_PORT = 18080;

/** Header names and MAC labels of signed requests and answers (src/bridge/sign.rs). */
export const SIGNING = {
  headerNonce: "x-ground-link-nonce",
  headerTime: "x-ground-link-time",
  headerSignature: "x-ground-link-signature",
  headerAnswer: "x-ground-link-answer",
  labelRequest: "ground-link request v1",
  labelAnswer: "ground-link answer v1",
  labelEvent: "ground-link event v1",
  streamBody: "stream",
} as const;
