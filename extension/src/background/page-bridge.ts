/**
 * Page tools at the bridge (DESIGN §12 "Exposure", issue 13 item 5): the extension tells the
 * bridge which page tools it knows — `{"type":"browser.pageTools","tools":[…]}` over the native
 * port, the full list each time — and runs the bridge's `browser.call` with `op:"page"`.
 *
 * Guarantees:
 * - the list is built from the frame reports the worker keeps for the side panel (every field
 *   already sanitised by the content script); the origin is the frame's own (`location.origin`,
 *   checked against Chrome's sender by the worker), never the page's word; names are API-safe,
 *   unique in the list and stable for a (tab, frame, origin, tool) while it stays registered
 *   (`bridgeToolName`); text and schemas are re-capped here; at most {@link MAX_BRIDGE_TOOLS};
 * - switched off, the list is empty; a change is sent at most once per {@link ANNOUNCE_DEBOUNCE_MS}
 *   and only when it differs from the last one sent, except after a hello or a switch change,
 *   which always send;
 * - a call runs only a tool that is registered right now under that name, in the approved tab, at
 *   the approved origin — checked here and again by the frame itself when it runs it — through
 *   the very path the side panel uses (`webmcpCall` to the frame's content script: 10 s timeout,
 *   64 KiB cap, cancellation); it always settles, once, with text or a sentence.
 *
 * Nothing here decides whether a call may run: the bridge's engine did, and the page's hints
 * only ever add caution there.
 */

import { bridgeToolName } from "../shared/tool-names";
import { DEFAULT_CALL_TIMEOUT_MS, MAX_DESCRIPTION, MAX_RESULT, MAX_SCHEMA, MAX_TITLE, cap, stripControl, type CallOutcome, type FrameReport, type ToolSource } from "../shared/webmcp";
import type { OpLogEntry } from "../shared/oplog";
import type { TabReply, TabRequest } from "../shared/protocol";

/** Page tools listed to the bridge at most; the rest are left out (and a log line says so). */
export const MAX_BRIDGE_TOOLS = 128;
export const ANNOUNCE_DEBOUNCE_MS = 300;
/** The frame has the call's own 10 s; this is how much longer the worker waits for its answer. */
export const CALL_GRACE_MS = 2_000;

export interface BridgeAnnotations {
  readOnlyHint: boolean;
  consequentialHint: boolean;
  untrustedContentHint: boolean;
}

/** One entry of `browser.pageTools` (the wire contract with the bridge). */
export interface BridgePageTool {
  name: string;
  tool: string;
  origin: string;
  tabId: number;
  frameId: number;
  title?: string;
  description: string;
  inputSchema: Record<string, unknown>;
  annotations: BridgeAnnotations;
}

export interface PageToolsMessage {
  type: "browser.pageTools";
  tools: BridgePageTool[];
}

/** A tab's frame reports as the worker keeps them (`pageTools:<tabId>` in storage.session). */
export interface TabFrames {
  tabId: number;
  frames: FrameReport[];
}

export interface Registry {
  tools: BridgePageTool[];
  byName: Map<string, { tool: BridgePageTool; source: ToolSource }>;
  /** Tools left out, each with the reason (over the cap, a schema too big). */
  left: string[];
}

const utf8 = new TextEncoder();

/** `s` cut to at most `max` UTF-8 bytes, on a character boundary. */
export function capBytes(s: string, max: number): string {
  if (utf8.encode(s).length <= max) return s;
  let out = "";
  let n = 0;
  for (const ch of s) {
    const b = utf8.encode(ch).length;
    if (n + b > max) break;
    out += ch;
    n += b;
  }
  return out;
}

/** The list the bridge gets, from every tab's frame reports, in tab, frame and page order. */
export function buildRegistry(tabs: TabFrames[]): Registry {
  const tools: BridgePageTool[] = [];
  const byName = new Map<string, { tool: BridgePageTool; source: ToolSource }>();
  const left: string[] = [];
  let total = 0;
  const sortedTabs = [...tabs].sort((a, b) => a.tabId - b.tabId);
  for (const { tabId, frames } of sortedTabs) {
    for (const frame of [...frames].sort((a, b) => a.frameId - b.frameId)) {
      for (const t of frame.tools) {
        // the frame's origin, as the content script read it from its own location (and the
        // worker held it to Chrome's sender): a tool claiming another is not this frame's
        if (t.origin !== frame.origin) continue;
        total += 1;
        if (tools.length >= MAX_BRIDGE_TOOLS) continue;
        const inputSchema = t.inputSchema && typeof t.inputSchema === "object" && !Array.isArray(t.inputSchema) ? t.inputSchema : { type: "object", properties: {} };
        if (utf8.encode(JSON.stringify(inputSchema)).length > MAX_SCHEMA) {
          left.push(`${t.name} in tab ${tabId}: its inputSchema is over ${MAX_SCHEMA} bytes`);
          continue;
        }
        let name = bridgeToolName({ tabId, frameId: frame.frameId, origin: frame.origin, name: t.name });
        // two tools whose hashes collide: the later one gets a counter (rare; then only its name may change)
        for (let n = 2; byName.has(name); n++) name = `${name.slice(0, 60)}_${n}`;
        const title = cap(stripControl(t.title ?? ""), MAX_TITLE).text;
        const a = t.annotations ?? {};
        const entry: BridgePageTool = {
          name,
          tool: t.name,
          origin: frame.origin,
          tabId,
          frameId: frame.frameId,
          ...(title !== "" ? { title } : {}),
          description: capBytes(stripControl(t.description ?? ""), MAX_DESCRIPTION),
          inputSchema,
          annotations: { readOnlyHint: a.readOnlyHint === true, consequentialHint: a.consequentialHint === true, untrustedContentHint: a.untrustedContentHint === true },
        };
        tools.push(entry);
        byName.set(name, { tool: entry, source: t.source });
      }
    }
  }
  if (total > tools.length + left.length) left.unshift(`${total - tools.length - left.length} of ${total} page tools over the cap of ${MAX_BRIDGE_TOOLS}`);
  return { tools, byName, left };
}

export type PageCallOutcome = { ok: true; text: string } | { ok: false; error: string };

/** The result text the bridge gets: the page's string, control characters stripped, capped (the bridge delimits it). */
export function resultText(outcome: CallOutcome & { ok: true }): string {
  if (outcome.result === null) return "null (the tool navigated the page and returned nothing)";
  const body = cap(stripControl(outcome.result), MAX_RESULT).text;
  return outcome.truncated || body.length < outcome.result.length ? `${body}\n[truncated to ${MAX_RESULT} characters by ground-link; the page returned ${outcome.bytes}]` : body;
}

export interface PageBridgeDeps {
  /** Every tab's frame reports (tabs that are gone left out). */
  readTabs(): Promise<TabFrames[]>;
  /** The popup's switch. */
  enabled(): Promise<boolean>;
  /** Whether the bridge acknowledged the current hello (a list before that is sent again after it). */
  ready(): boolean;
  /** Posts on the native port; false when there is no port. */
  send(m: PageToolsMessage): boolean;
  /** `chrome.tabs.sendMessage` to one frame; undefined when it did not answer. */
  toFrame(tabId: number, frameId: number, m: TabRequest): Promise<TabReply | undefined>;
  log(e: OpLogEntry): Promise<void>;
  warn(message: string): void;
  newId(): string;
  setTimer(f: () => void, ms: number): unknown;
  clearTimer(t: unknown): void;
  now(): number;
}

export interface AnnounceRecord {
  at: number;
  message: PageToolsMessage;
  /** `sent`, or why not. */
  outcome: string;
}

export class PageBridge {
  private debounce: unknown = null;
  private chain: Promise<void> = Promise.resolve();
  private lastSent: string | null = null;
  /** The last lists built for the bridge (at most 20), for the e2e. */
  readonly history: AnnounceRecord[] = [];

  constructor(private deps: PageBridgeDeps) {}

  /** The list as it would be sent now ([] when switched off). */
  async message(): Promise<{ message: PageToolsMessage; registry: Registry }> {
    const on = await this.deps.enabled().catch(() => false);
    const registry = on ? buildRegistry(await this.deps.readTabs()) : { tools: [], byName: new Map(), left: [] };
    return { message: { type: "browser.pageTools", tools: registry.tools }, registry };
  }

  /** A frame report changed: send the list once things settle. */
  changed(): void {
    if (this.debounce !== null) this.deps.clearTimer(this.debounce);
    this.debounce = this.deps.setTimer(() => {
      this.debounce = null;
      void this.announce(false);
    }, ANNOUNCE_DEBOUNCE_MS);
  }

  /** The hello was acknowledged or the switch changed: send the whole list now, even if unchanged. */
  announceNow(): Promise<void> {
    if (this.debounce !== null) this.deps.clearTimer(this.debounce);
    this.debounce = null;
    return this.announce(true);
  }

  private announce(force: boolean): Promise<void> {
    // one at a time, in order: a slow read must not let an older list overtake a newer one
    this.chain = this.chain.then(() => this.announceOne(force)).catch((e: unknown) => this.deps.warn(`ground-link: could not list page tools for the bridge (${String(e)})`));
    return this.chain;
  }

  private async announceOne(force: boolean): Promise<void> {
    const { message, registry } = await this.message();
    const json = JSON.stringify(message);
    if (!force && json === this.lastSent) return;
    if (registry.left.length > 0) this.deps.warn(`ground-link: page tools left out of the bridge's list: ${registry.left.join("; ")}`);
    let outcome = "sent";
    // an empty list is always safe to send (switched off: at once, without waiting for the hello)
    if (message.tools.length > 0 && !this.deps.ready()) outcome = "not sent: the bridge has not acknowledged the hello (the list goes out when it does)";
    else if (!this.deps.send(message)) outcome = "not sent: no native port";
    this.lastSent = outcome === "sent" ? json : null;
    this.history.push({ at: this.deps.now(), message, outcome });
    if (this.history.length > 20) this.history.shift();
  }

  /**
   * Runs the bridge's approved call of page tool `name` (a name from the list). Never throws;
   * `ok:false` says what changed and what to do.
   */
  async call(name: string, args: Record<string, unknown>, expect: { tabId: number; origin: string }): Promise<PageCallOutcome> {
    const { registry } = await this.message();
    const hit = registry.byName.get(name);
    const again = "nothing was run — list the tools again (the page changed) and call the current one";
    if (!hit) return { ok: false, error: `the page changed: no page tool named "${name}" is registered any more (its page navigated, reloaded, closed or removed the tool); ${again}` };
    const t = hit.tool;
    if (t.tabId !== expect.tabId) return { ok: false, error: `the page changed: page tool "${name}" is in tab ${t.tabId}, but the call was approved for tab ${expect.tabId}; ${again}` };
    if (t.origin !== expect.origin) return { ok: false, error: `the page changed: the frame of page tool "${name}" is now at ${t.origin} (the call was approved for ${expect.origin}); ${again}` };
    const callId = this.deps.newId();
    const started = this.deps.now();
    let timer: unknown = null;
    const late = new Promise<"late">((resolve) => {
      timer = this.deps.setTimer(() => resolve("late"), DEFAULT_CALL_TIMEOUT_MS + CALL_GRACE_MS);
    });
    const reply = await Promise.race([this.deps.toFrame(t.tabId, t.frameId, { type: "webmcpCall", callId, name: t.tool, input: args, timeoutMs: DEFAULT_CALL_TIMEOUT_MS, expectOrigin: t.origin }).catch(() => undefined), late]);
    this.deps.clearTimer(timer);
    let outcome: CallOutcome;
    if (reply === "late") {
      // the frame should have ended it at 10 s: end it there now too, so the page's tool sees the abort
      void this.deps.toFrame(t.tabId, t.frameId, { type: "webmcpCancel", callId }).catch(() => undefined);
      outcome = { ok: false, error: `the page did not answer within ${(DEFAULT_CALL_TIMEOUT_MS + CALL_GRACE_MS) / 1000} s; the call was cancelled`, ms: this.deps.now() - started };
    } else if (reply?.type === "callOutcome") outcome = reply.outcome;
    else outcome = { ok: false, error: `the page in tab ${t.tabId} did not answer (it navigated, reloaded or closed meanwhile); ${again}`, ms: this.deps.now() - started };
    await this.deps.log({ at: this.deps.now(), by: "bridge", tabId: t.tabId, frameId: t.frameId, origin: t.origin, tool: t.tool, source: hit.source, input: args, outcome }).catch(() => undefined);
    if (outcome.ok) return { ok: true, text: resultText(outcome) };
    // the error may be the page's own words (what its tool threw): quoted, stripped, short
    return { ok: false, error: `page tool "${t.tool}" on ${t.origin} failed: ${cap(stripControl(outcome.error), 600).text}` };
  }
}
