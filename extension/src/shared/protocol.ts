/**
 * Types every execution context agrees on: the bridge's wire types (mirroring `src/protocol.rs`,
 * camelCase) and the extension's internal messages, each a discriminated union on `type` so a
 * handler can never receive a shape it did not name.
 */

// ---- bridge wire types (DESIGN §6): generated from the Rust types, never written here ----

import type { CallResult, Event, Provenance, ToolCall } from "./gen/bridge";
import type { HealthReport } from "./health";

export type { CallRequest, CallResult, CallStatus, Decision, ErrorBody, Health, PendingAnswer, Provenance, Risk, ToolCall, ToolName, Verdict } from "./gen/bridge";

/** One `data:` line of `GET /events` (the bridge's `broker::Event`, tagged by `type`). */
export type BridgeEvent = Event;

// ---- connection state the worker keeps in chrome.storage ----

export type ConnectionState =
  | { kind: "connected"; port: number; dir: string | null; sandbox: string | null; mode: string | null; version: string; checkedAt: number; pending: number }
  | { kind: "notPaired"; port: number; version: string; checkedAt: number; detail: string }
  /** Something answered on the port without the paired bridge's signature (DESIGN §6). */
  | { kind: "impostor"; port: number; checkedAt: number; detail: string }
  | { kind: "noBridge"; detail: string; checkedAt: number; retryInMs: number };

// ---- a call's life as the card shows it (DESIGN §7) ----

export type CardState =
  | { kind: "queued" }
  | { kind: "budget"; budget: number }
  | { kind: "running" }
  | { kind: "waitingApproval" }
  | { kind: "done"; result: CallResult }
  | { kind: "denied"; result: CallResult }
  | { kind: "error"; message: string; result?: CallResult }
  | { kind: "ignored" }
  | { kind: "parseError"; message: string }
  | { kind: "paused" }
  /** Found by the generic fallback: waits for the person's trusted click ("this is the model's reply"). */
  | { kind: "unconfirmed" };

// ---- messages: content script -> service worker ----

export type ContentRequest =
  | { type: "config" }
  /** `provenance`: set for a call the generic fallback found (the bridge then always asks). */
  | { type: "exec"; callId: string; session: string; reply: string; call: ToolCall; provenance?: Provenance }
  | { type: "await"; callId: string }
  /** A `<tool>` block the parser rejected: the bridge writes its result for the model. */
  | { type: "invalidCall"; report: import("./gen/bridge").InvalidCallReport }
  | { type: "cancel"; callId: string }
  | { type: "claim"; key: string }
  | { type: "markSeen"; keys: string[] }
  | { type: "takeRound"; session: string }
  | { type: "resetRounds"; session: string }
  | { type: "prompt"; lang?: "en" | "zh" }
  | { type: "status" }
  /** A selector override the person made with the picker on this site (trusted clicks only). */
  | { type: "saveOverrides"; site: string; overrides: import("./adapters").SelectorOverrides }
  /** The page's adapter health check (shown in the popup and badge, passed on to the bridge). */
  | { type: "health"; report: HealthReport }
  /** A frame's page tools (WebMCP and skills), sanitised; the worker stamps tab and frame. */
  | { type: "pageTools"; report: Omit<import("./webmcp").FrameReport, "frameId"> }
  /** The frame is going away (page hidden): its tools are gone. */
  | { type: "pageToolsGone" }
  /** The valid, enabled skills whose `match` covers this URL. */
  | { type: "skillsFor"; url: string };

// ---- messages: popup/options -> service worker ----

export type UiRequest =
  | { type: "pair"; token: string }
  /** Ask ground-link for the key over native messaging (it asks the person first). */
  | { type: "pairNative" }
  | { type: "unpair" }
  | { type: "checkNow" }
  | { type: "setPaused"; paused: boolean }
  | { type: "setBridgeUrl"; url: string }
  | { type: "tabHealth"; tabId: number }
  /** Side panel: the person granted this site; run page tools there from now on. */
  | { type: "enablePageTools"; origin: string; tabId: number }
  /** Side panel: store (or, with "", forget) a provider's API key; it is never read back. */
  | { type: "setProviderKey"; provider: import("./providers").ProviderId; key: string }
  | { type: "keyStatus" }
  /** Side panel: a call made by hand in the inspector has ended; audit it when paired. */
  | { type: "auditPanelCall"; report: import("./gen/bridge").PanelCallReport };

export type Request = ContentRequest | UiRequest;

/** What the worker answers to each request. */
export type FailureKind = "noBridge" | "notPaired" | "impostor" | "paused" | "unknownCall" | "http" | "bad";

export type Reply =
  | { type: "config"; settings: ContentSettings; paused: boolean }
  | { type: "claimed"; owner: boolean }
  | { type: "round"; ok: boolean; used: number; budget: number }
  | { type: "result"; result: CallResult }
  | { type: "failed"; message: string; kind: FailureKind }
  | { type: "prompt"; text: string }
  /** A `<tool_result>` block the bridge wrote (for a broken block). */
  | { type: "formatted"; formatted: string }
  | { type: "status"; connection: ConnectionState | null; paused: boolean }
  | { type: "health"; report: HealthReport | null }
  | { type: "skills"; skills: import("./skills").Skill[] }
  | { type: "keyStatus"; set: Record<string, boolean> }
  /** `audit`: "audited", "not audited: <why>", or null when not paired (nothing was sent). */
  | { type: "audited"; audit: string | null }
  | { type: "ok" };

/** What a content script may know of the settings: everything but secrets (there are none in Settings). */
export type ContentSettings = import("./settings").Settings & { perfMarks: boolean };

// ---- messages: popup -> content script ----

export type TabRequest =
  | { type: "insertPrompt" }
  /** "Fix this site": start the element picker on the page. */
  | { type: "startPicker" }
  /** An adapter pack's turn selectors, checked against this page's turns before an import. */
  | { type: "checkSelectors"; site: string; assistantMessage: string[]; userMessage: string[] }
  /** Side panel -> a frame's page-tools script: list again (skills reloaded) and report. */
  | { type: "webmcpList" }
  /**
   * Side panel (or the worker, for the bridge) -> a frame: run one page tool by name with a
   * deadline; with `expectOrigin`, only while the frame is still at that origin.
   */
  | { type: "webmcpCall"; callId: string; name: string; input: unknown; timeoutMs: number; expectOrigin?: string }
  | { type: "webmcpCancel"; callId: string };
export type TabReply =
  | { type: "ok" }
  | { type: "pageTools"; report: Omit<import("./webmcp").FrameReport, "frameId"> }
  | { type: "callOutcome"; outcome: import("./webmcp").CallOutcome }
  | { type: "failed"; message: string }
  | { type: "selectorCheck"; site: string; assistantMatches: number; userTurns: number; overlapping: number };

// ---- events: service worker -> content scripts (over a port) ----

export type WorkerEvent =
  | { type: "callEvent"; event: BridgeEvent }
  | { type: "connection"; connection: ConnectionState };

/** The port name content scripts use to hear worker events and keep it awake during calls. */
export const EVENTS_PORT = "ground-link-events";

// ---- page world -> content script (window.postMessage) ----

export const PAGE_MESSAGE_TAG = "ground-link/main-world";

export type PageMessage =
  | { tag: typeof PAGE_MESSAGE_TAG; type: "streamStart"; streamId: string; decoder: string; at: number }
  | { tag: typeof PAGE_MESSAGE_TAG; type: "streamEnd"; streamId: string; decoder: string; text: string; at: number };

export function isPageMessage(v: unknown): v is PageMessage {
  if (typeof v !== "object" || v === null) return false;
  const m = v as Record<string, unknown>;
  if (m.tag !== PAGE_MESSAGE_TAG || typeof m.streamId !== "string" || typeof m.decoder !== "string") return false;
  if (m.type === "streamStart") return typeof m.at === "number";
  if (m.type === "streamEnd") return typeof m.text === "string" && typeof m.at === "number";
  return false;
}
