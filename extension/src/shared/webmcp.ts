/**
 * Page tools (WebMCP, DESIGN §12): the shapes the isolated content script, the worker and the
 * side panel agree on, and the checks that turn whatever a page says into those shapes.
 *
 * Guarantee: everything a page hands us — a native `getTools()` list or a message of the
 * MAIN-world polyfill — passes `sanitiseTool` / `parseChannelMessage` before any other code sees
 * it: unknown shapes are dropped, names are checked, text is stripped of control characters and
 * capped, schemas are size-capped, and hints are booleans or absent. The origin of a tool is
 * never taken from the page: the content script stamps its own `location.origin`.
 */

/** A tool name as the WebMCP draft accepts it (Chromium 156: 1–128 of `[A-Za-z0-9_.-]`). */
export const TOOL_NAME_RE = /^[A-Za-z0-9_.-]{1,128}$/;
/** Caps on untrusted page text (DESIGN §12). */
export const MAX_DESCRIPTION = 2 * 1024;
export const MAX_TITLE = 200;
export const MAX_RESULT = 64 * 1024;
/** An input schema bigger than this (as JSON) is refused: a page cannot flood the panel or a model. */
export const MAX_SCHEMA = 16 * 1024;
/** Tools per frame; the rest are dropped and the panel says so. */
export const MAX_TOOLS_PER_FRAME = 64;
/** Default limits of one call (settings may lower or raise them within these bounds). */
export const DEFAULT_CALL_TIMEOUT_MS = 10_000;

export interface ToolAnnotations {
  readOnlyHint?: boolean;
  untrustedContentHint?: boolean;
  consequentialHint?: boolean;
}

/** Where a tool came from: the page itself (native or polyfill API) or one of our skills. */
export type ToolSource = "native" | "polyfill" | "skill";

/** A page tool as the panel sees it, already sanitised. */
export interface PageTool {
  name: string;
  title: string;
  description: string;
  inputSchema: Record<string, unknown>;
  annotations: ToolAnnotations;
  /** The frame's origin as the content script knows it (never what the page claims). */
  origin: string;
  source: ToolSource;
  /** The skill that added it (source "skill"). */
  skill?: string;
}

/** What one frame reports: its tools, skills' health, and what was dropped and why. */
export interface FrameReport {
  frameId: number;
  url: string;
  origin: string;
  api: "native" | "polyfill" | "none";
  tools: PageTool[];
  skills: SkillStatus[];
  problems: string[];
  at: number;
}

export interface SkillStatus {
  name: string;
  ok: boolean;
  /** Why its health check failed, naming the selector that is missing. */
  problem?: string;
  tools: string[];
  /** Skill tools hidden because the page has a native tool of the same name. */
  shadowed: string[];
}

/** One call's outcome as the content script returns it. */
export type CallOutcome =
  | { ok: true; result: string | null; truncated: boolean; bytes: number; ms: number }
  /** `timedOut`: the call's deadline ended it (the audit log says timeout, not error). */
  | { ok: false; error: string; ms: number; timedOut?: boolean };

/** Control characters other than tab and newline: they hide text from a person reading the panel. */
// eslint-disable-next-line no-control-regex
const CONTROL_RE = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u200b-\u200f\u202a-\u202e\u2066-\u2069]/g;

export function stripControl(s: string): string {
  return s.replace(CONTROL_RE, "");
}

/** Cuts `s` to at most `max` UTF-16 units without splitting a surrogate pair. */
export function cap(s: string, max: number): { text: string; truncated: boolean } {
  if (s.length <= max) return { text: s, truncated: false };
  let end = max;
  const c = s.charCodeAt(end - 1);
  if (c >= 0xd800 && c <= 0xdbff) end--;
  return { text: s.slice(0, end), truncated: true };
}

/**
 * A tool description/list entry from the page, or the reason it was dropped. `raw` is whatever
 * the page produced (a native RegisteredTool or a polyfill message); nothing of it is trusted.
 */
export function sanitiseTool(raw: unknown, origin: string, source: ToolSource): { ok: true; tool: PageTool } | { ok: false; problem: string } {
  if (typeof raw !== "object" || raw === null) return { ok: false, problem: "a tool entry that is not an object was dropped" };
  const r = raw as Record<string, unknown>;
  const name = r.name;
  if (typeof name !== "string" || !TOOL_NAME_RE.test(name)) {
    return { ok: false, problem: `a tool with the name ${JSON.stringify(String(name).slice(0, 40))} was dropped: names are 1–128 of A-Z a-z 0-9 _ . -` };
  }
  const description = typeof r.description === "string" ? cap(stripControl(r.description), MAX_DESCRIPTION).text : "";
  const title = typeof r.title === "string" ? cap(stripControl(r.title), MAX_TITLE).text : "";
  let inputSchema: Record<string, unknown> = { type: "object", properties: {} };
  if (r.inputSchema !== undefined && r.inputSchema !== null) {
    let json: string | undefined;
    try {
      json = JSON.stringify(r.inputSchema);
    } catch {
      return { ok: false, problem: `tool "${name}" was dropped: its inputSchema is not JSON` };
    }
    if (json === undefined || json.length > MAX_SCHEMA) return { ok: false, problem: `tool "${name}" was dropped: its inputSchema is over ${MAX_SCHEMA} bytes` };
    const parsed = JSON.parse(json) as unknown;
    if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) return { ok: false, problem: `tool "${name}" was dropped: its inputSchema is not an object` };
    inputSchema = parsed as Record<string, unknown>;
  }
  const annotations: ToolAnnotations = {};
  if (typeof r.annotations === "object" && r.annotations !== null) {
    const a = r.annotations as Record<string, unknown>;
    // only booleans: a hint given as "false" (a string) must not read as true anywhere
    for (const k of ["readOnlyHint", "untrustedContentHint", "consequentialHint"] as const) if (typeof a[k] === "boolean") annotations[k] = a[k] as boolean;
  }
  return { ok: true, tool: { name, title, description, inputSchema, annotations, origin, source } };
}

/** Sanitises a whole list: at most MAX_TOOLS_PER_FRAME, first of each name wins. */
export function sanitiseTools(raw: unknown, origin: string, source: ToolSource): { tools: PageTool[]; problems: string[] } {
  const tools: PageTool[] = [];
  const problems: string[] = [];
  if (!Array.isArray(raw)) return { tools, problems: ["the page's tool list is not a list"] };
  const seen = new Set<string>();
  for (const entry of raw) {
    if (tools.length >= MAX_TOOLS_PER_FRAME) {
      problems.push(`the page offers ${raw.length} tools; only the first ${MAX_TOOLS_PER_FRAME} are shown`);
      break;
    }
    const s = sanitiseTool(entry, origin, source);
    if (!s.ok) problems.push(s.problem);
    else if (seen.has(s.tool.name)) problems.push(`a second tool named "${s.tool.name}" was dropped`);
    else {
      seen.add(s.tool.name);
      tools.push(s.tool);
    }
  }
  return { tools, problems };
}

/**
 * A result string from the page, capped. `null` stays null (the tool navigated the page); any
 * other non-string is refused rather than guessed at.
 */
export function capResult(raw: unknown): { ok: true; result: string | null; truncated: boolean; bytes: number } | { ok: false; error: string } {
  if (raw === null) return { ok: true, result: null, truncated: false, bytes: 0 };
  if (typeof raw !== "string") return { ok: false, error: `the page returned a ${typeof raw} where a string result was expected` };
  const c = cap(raw, MAX_RESULT);
  return { ok: true, result: c.text, truncated: c.truncated, bytes: raw.length };
}

export const UNTRUSTED_OPEN = "<untrusted-page-content";
export const UNTRUSTED_CLOSE = "</untrusted-page-content>";

/**
 * Page text as a model or a person is given it: labelled with its origin and tool, between
 * delimiters the text cannot close early (any delimiter inside is defanged), control characters
 * stripped. What is inside is data from a web page, never instructions.
 */
export function delimitUntrusted(origin: string, tool: string, kind: "result" | "description", text: string, truncated = false): string {
  const body = stripControl(text).replace(/<\/?\s*untrusted-page-content/gi, (m) => m.replace("<", "&lt;"));
  const note = truncated ? `\n[truncated to ${MAX_RESULT} characters by ground-link]` : "";
  return `${UNTRUSTED_OPEN} origin="${attr(origin)}" tool="${attr(tool)}" kind="${kind}">\n${body}${note}\n${UNTRUSTED_CLOSE}`;
}

function attr(s: string): string {
  return stripControl(s).replace(/["<>&]/g, (c) => `&#${c.charCodeAt(0)};`);
}

// ---- the MAIN-world channel (polyfill <-> isolated content script) ----

/** The DOM event type the polyfill hands its MessagePort over with (once, at document_start). */
export const HANDSHAKE_EVENT = "ground-link-webmcp-port";
/** The isolated script's "I am listening now" (for the case it started after the polyfill). */
export const READY_EVENT = "ground-link-webmcp-ready";
/** Any message over the channel bigger than this is dropped unread (a 1 MiB result is capped before). */
export const MAX_CHANNEL_MESSAGE = 2 * 1024 * 1024;

/** Isolated -> MAIN: the only things the content script ever asks of the page. */
export type ToChannel =
  | { type: "list" }
  | { type: "call"; id: number; name: string; input: Record<string, unknown> }
  | { type: "cancel"; id: number };

/** MAIN -> isolated: what the polyfill may say. Nothing here is a request to the extension. */
export type FromChannel =
  | { type: "tools"; tools: unknown[] }
  | { type: "changed" }
  | { type: "result"; id: number; ok: true; value: string | null }
  | { type: "result"; id: number; ok: false; error: string };

/** Checks a message from the MAIN world: anything outside `FromChannel` is null. */
export function parseChannelMessage(v: unknown): FromChannel | null {
  if (typeof v !== "object" || v === null) return null;
  const m = v as Record<string, unknown>;
  switch (m.type) {
    case "tools":
      return Array.isArray(m.tools) ? { type: "tools", tools: m.tools } : null;
    case "changed":
      return { type: "changed" };
    case "result":
      if (typeof m.id !== "number" || !Number.isSafeInteger(m.id)) return null;
      if (m.ok === true && (typeof m.value === "string" || m.value === null)) return { type: "result", id: m.id, ok: true, value: m.value };
      if (m.ok === false && typeof m.error === "string") return { type: "result", id: m.id, ok: false, error: cap(stripControl(m.error), 500).text };
      return null;
    default:
      return null;
  }
}

/** The JSON a page's `execute` result becomes (as Chromium's native executeTool does). */
export function stringifyResult(v: unknown): string {
  if (typeof v === "string") return v;
  try {
    return JSON.stringify(v) ?? "undefined";
  } catch (e) {
    throw new TypeError(`the tool's result cannot be turned into JSON: ${String(e)}`);
  }
}
