/**
 * Browser tools (DESIGN §8.3), the extension's half: the bridge sends a `browser.call`
 * (`inspect`: look and report, `run`: do what was approved, `read`: a `browser://` resource,
 * `page`: run an approved page tool, ./page-bridge.ts) and this module answers it with exactly
 * one `browser.result` of the same id.
 *
 * Guarantees:
 * - every call is answered once, within {@link CALL_DEADLINE_MS}: a malformed call, an unknown
 *   tool, a closed tab, a page that never answers — each is `ok:false` with a sentence saying
 *   what went wrong and what to do; nothing throws out of {@link BrowserTools.handle};
 * - with the switch off (`browserTools` in storage.local, default false) every call is refused;
 * - never-URLs (./never-urls.ts) are refused here too, whatever the bridge approved: as a
 *   destination, and as the current URL of a tab a tool acts on;
 * - `run` acts only on the tab the bridge approved, and only while that tab is still at the
 *   approved origin (a redirect or a navigation in between means nothing is done);
 * - a tab whose URL the extension cannot see (no host access) is never acted on.
 *
 * The Chrome parts come in through {@link BrowserApi}, so Vitest drives this with a fake.
 */

import { adapterForHost } from "../shared/adapters";
import { neverReason } from "./never-urls";
import { DOM_MAX_BYTES, pageOp, SNAPSHOT_MAX_BYTES, UNSAFE_TEXT, type ElementInfo, type PageRequest, type PageResult, type PageTarget } from "./page-ops";

export const TOOL_NAMES = ["navigate_to", "click_element", "input_text", "submit_form", "open_tab", "close_tab", "switch_tab", "snapshot_page"] as const;
export type ToolName = (typeof TOOL_NAMES)[number];
export const RESOURCE_URIS = ["browser://tabs", "browser://current/state", "browser://current/dom"] as const;

/** Every call is answered within this (the bridge waits 20 s). */
export const CALL_DEADLINE_MS = 19_000;
/** How long navigate_to / open_tab wait for the page to load. */
export const LOAD_CAP_MS = 15_000;
/** How long click_element / submit_form wait for a navigation they may have started. */
export const AFTER_ACTION_CAP_MS = 8_000;

export const SWITCHED_OFF = "browser tools are switched off in the ground-link extension";

// ---- wire types (the contract with the bridge) ----

export interface Expect {
  tabId: number;
  origin: string;
}

export interface Target {
  tabId: number | null;
  url: string | null;
  title: string;
  destination?: string;
  chatTab: boolean;
  element?: ElementInfo;
}

export type BrowserResult =
  | { type: "browser.result"; id: string; ok: true; target?: Target; text?: string }
  | { type: "browser.result"; id: string; ok: false; error: string };

export type ToolArgs =
  | { tool: "navigate_to"; url: string; tabId?: number }
  | { tool: "open_tab"; url: string }
  | { tool: "click_element" | "submit_form"; target: PageTarget; tabId?: number }
  | { tool: "input_text"; target: PageTarget; text: string; tabId?: number }
  | { tool: "close_tab" | "switch_tab"; tabId: number }
  | { tool: "snapshot_page"; tabId?: number };

export type BrowserCall =
  | { id: string; op: "inspect"; args: ToolArgs }
  | { id: string; op: "run"; args: ToolArgs; expect?: Expect }
  | { id: string; op: "read"; uri: string }
  /** A page tool by its name in the last `browser.pageTools` list. */
  | { id: string; op: "page"; tool: string; args: Record<string, unknown>; expect: Expect };

/** Runs page tools for `op:"page"` (./page-bridge.ts); never throws. */
export interface PageToolRunner {
  call(name: string, args: Record<string, unknown>, expect: Expect): Promise<{ ok: true; text: string } | { ok: false; error: string }>;
}

// ---- the Chrome surface used ----

export interface TabInfo {
  id?: number;
  url?: string;
  pendingUrl?: string;
  title?: string;
  active: boolean;
  windowId: number;
  status?: string;
}

export interface BrowserApi {
  tabs: {
    get(tabId: number): Promise<TabInfo>;
    query(q: { active?: boolean; windowId?: number }): Promise<TabInfo[]>;
    update(tabId: number, p: { url?: string; active?: boolean }): Promise<TabInfo | undefined>;
    create(p: { url: string; active: boolean }): Promise<TabInfo>;
    remove(tabId: number): Promise<void>;
  };
  windows: {
    getLastFocused(o: { windowTypes: string[] }): Promise<{ id?: number }>;
    update(windowId: number, p: { focused: boolean }): Promise<unknown>;
  };
  /** `chrome.scripting.executeScript` with `func: pageOp` in the ISOLATED world of the top frame. */
  runInPage(tabId: number, req: PageRequest): Promise<unknown>;
}

export interface BrowserDeps {
  api: BrowserApi;
  /** The popup's switch (`browserTools` in storage.local). */
  enabled(): Promise<boolean>;
  setTimer(f: () => void, ms: number): unknown;
  clearTimer(t: unknown): void;
  now(): number;
  /** Page tools; without it an `op:"page"` call is refused. */
  pageTools?: PageToolRunner;
}

// ---- parsing: every field checked, errors name the field ----

type Parsed<T> = { ok: true; value: T } | { ok: false; error: string };

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
const isTabId = (v: unknown): v is number => typeof v === "number" && Number.isSafeInteger(v) && v >= 0;

function optTabId(args: Record<string, unknown>, tool: string): Parsed<number | undefined> {
  if (args.tabId === undefined || args.tabId === null) return { ok: true, value: undefined };
  if (!isTabId(args.tabId)) return { ok: false, error: `args.tabId of ${tool} must be a tab id (a whole number from browser://tabs), not ${JSON.stringify(args.tabId)}` };
  return { ok: true, value: args.tabId };
}

function urlArg(args: Record<string, unknown>, tool: string): Parsed<string> {
  const u = args.url;
  if (typeof u !== "string" || u.trim() === "") return { ok: false, error: `${tool} needs args.url, a URL string such as "https://example.com/"` };
  if (u.length > 8192) return { ok: false, error: `args.url of ${tool} is ${u.length} characters long; at most 8192` };
  return { ok: true, value: u };
}

function targetArg(args: Record<string, unknown>, tool: string): Parsed<PageTarget> {
  if (args.ref !== undefined && args.ref !== null) {
    if (typeof args.ref !== "string" || !/^e[1-9][0-9]{0,6}$/.test(args.ref)) {
      return { ok: false, error: `args.ref of ${tool} must be a ref from snapshot_page such as "e12", not ${JSON.stringify(args.ref)}` };
    }
    return { ok: true, value: { ref: args.ref } };
  }
  if (args.selector !== undefined && args.selector !== null) {
    if (typeof args.selector !== "string" || args.selector.trim() === "" || args.selector.length > 2000) {
      return { ok: false, error: `args.selector of ${tool} must be a CSS selector string (1 to 2000 characters)` };
    }
    return { ok: true, value: { selector: args.selector } };
  }
  return { ok: false, error: `${tool} needs args.ref (from snapshot_page, preferred) or args.selector (CSS)` };
}

export function parseArgs(tool: unknown, rawArgs: unknown): Parsed<ToolArgs> {
  if (typeof tool !== "string" || !(TOOL_NAMES as readonly string[]).includes(tool)) {
    return { ok: false, error: `tool ${JSON.stringify(tool)} is not a browser tool; the browser tools are ${TOOL_NAMES.join(", ")}` };
  }
  const name = tool as ToolName;
  if (rawArgs !== undefined && !isObj(rawArgs)) return { ok: false, error: `args of ${name} must be a JSON object` };
  const args = rawArgs ?? {};
  const tab = optTabId(args, name);
  if (!tab.ok) return tab;
  switch (name) {
    case "navigate_to": {
      const u = urlArg(args, name);
      if (!u.ok) return u;
      return { ok: true, value: { tool: name, url: u.value, ...(tab.value !== undefined ? { tabId: tab.value } : {}) } };
    }
    case "open_tab": {
      const u = urlArg(args, name);
      if (!u.ok) return u;
      return { ok: true, value: { tool: name, url: u.value } };
    }
    case "click_element":
    case "submit_form":
    case "input_text": {
      const t = targetArg(args, name);
      if (!t.ok) return t;
      if (name === "input_text") {
        if (typeof args.text !== "string") return { ok: false, error: "input_text needs args.text, the text to type (a string)" };
        if (args.text.length > 100_000) return { ok: false, error: `args.text of input_text is ${args.text.length} characters long; at most 100000` };
        return { ok: true, value: { tool: name, target: t.value, text: args.text, ...(tab.value !== undefined ? { tabId: tab.value } : {}) } };
      }
      return { ok: true, value: { tool: name, target: t.value, ...(tab.value !== undefined ? { tabId: tab.value } : {}) } };
    }
    case "close_tab":
    case "switch_tab":
      if (tab.value === undefined) return { ok: false, error: `${name} needs args.tabId (a tab id from browser://tabs)` };
      return { ok: true, value: { tool: name, tabId: tab.value } };
    case "snapshot_page":
      return { ok: true, value: { tool: name, ...(tab.value !== undefined ? { tabId: tab.value } : {}) } };
  }
}

/** A `browser.call` from the bridge, checked field by field; `id` is kept for the answer whenever it is a string. */
export function parseCall(raw: unknown): { ok: true; call: BrowserCall } | { ok: false; id: string; error: string } {
  if (!isObj(raw)) return { ok: false, id: "", error: "a browser.call must be a JSON object" };
  const id = typeof raw.id === "string" ? raw.id : "";
  const fail = (error: string) => ({ ok: false as const, id, error });
  if (raw.type !== "browser.call") return fail(`type must be "browser.call", not ${JSON.stringify(raw.type)}`);
  if (typeof raw.id !== "string" || raw.id === "" || raw.id.length > 200) return fail("id must be a non-empty string of at most 200 characters");
  const op = raw.op;
  if (op === "read") {
    if (typeof raw.uri !== "string") return fail(`a read needs uri, one of ${RESOURCE_URIS.join(", ")}`);
    return { ok: true, call: { id, op, uri: raw.uri } };
  }
  if (op === "page") return parsePage(raw, id);
  if (op !== "inspect" && op !== "run") return fail(`op must be "inspect", "run", "read" or "page", not ${JSON.stringify(op)}`);
  const args = parseArgs(raw.tool, raw.args);
  if (!args.ok) return fail(args.error);
  if (op === "inspect") return { ok: true, call: { id, op, args: args.value } };
  let expect: Expect | undefined;
  if (raw.expect !== undefined && raw.expect !== null) {
    const e = raw.expect;
    if (!isObj(e) || !isTabId(e.tabId)) return fail("expect.tabId must be the approved tab's id (a whole number)");
    if (typeof e.origin !== "string" || e.origin === "") return fail("expect.origin must be the approved origin, e.g. \"https://example.com\"");
    expect = { tabId: e.tabId, origin: e.origin };
  }
  if (!expect && args.value.tool !== "open_tab") return fail(`a run of ${args.value.tool} needs expect {tabId, origin}: the tab and origin that were approved`);
  return { ok: true, call: { id, op, args: args.value, ...(expect ? { expect } : {}) } };
}

const PAGE_NAME_RE = /^[A-Za-z0-9_-]{1,64}$/;

function parsePage(raw: Record<string, unknown>, id: string): { ok: true; call: BrowserCall } | { ok: false; id: string; error: string } {
  const fail = (error: string) => ({ ok: false as const, id, error });
  if (typeof raw.tool !== "string" || !PAGE_NAME_RE.test(raw.tool)) return fail(`tool of a page call must be a name from the last browser.pageTools list (1 to 64 of A-Z a-z 0-9 _ -), not ${JSON.stringify(raw.tool)?.slice(0, 100)}`);
  if (raw.args !== undefined && raw.args !== null && !isObj(raw.args)) return fail(`args of page tool ${raw.tool} must be a JSON object`);
  const e = raw.expect;
  if (!isObj(e) || !isTabId(e.tabId) || typeof e.origin !== "string" || e.origin === "") {
    return fail(`a page call of ${raw.tool} needs expect {tabId, origin}: the tab and frame origin that were approved`);
  }
  return { ok: true, call: { id, op: "page", tool: raw.tool, args: isObj(raw.args) ? raw.args : {}, expect: { tabId: e.tabId, origin: e.origin } } };
}

// ---- helpers ----

class CallError extends Error {}

const describeTab = (tabId: number): string => `tab ${tabId}`;

function noAccess(tabId: number): string {
  return `ground-link has no access to ${describeTab(tabId)}; switch on browser tools for all sites in the ground-link popup, or use a site it can reach`;
}

function originOf(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return "null";
  }
}

function isChatUrl(url: string | null): boolean {
  if (!url) return false;
  try {
    return adapterForHost(new URL(url).hostname) !== null;
  } catch {
    return false;
  }
}

/** Tab titles are page text: no control or bidi characters. */
const cleanTitle = (s: string | undefined): string => (s ?? "").replace(UNSAFE_TEXT, "").slice(0, 500);

function tabRow(t: TabInfo): { tabId: number | null; url: string | null; title: string; active: boolean; windowId: number } {
  return { tabId: t.id ?? null, url: t.url ? t.url : null, title: t.url ? cleanTitle(t.title) : "", active: t.active, windowId: t.windowId };
}

// ---- the dispatcher ----

export class BrowserTools {
  constructor(private deps: BrowserDeps) {}

  /** Answers one message from the bridge. Always resolves, once, within the deadline. */
  async handle(raw: unknown): Promise<BrowserResult> {
    const parsed = parseCall(raw);
    // switched off, every call gets the same answer, a malformed one included: the switch is
    // what the bridge should learn (only a message that is no call at all gets its shape error)
    const isCall = isObj(raw) && raw.type === "browser.call" && typeof raw.id === "string" && raw.id !== "" && raw.id.length <= 200;
    if (isCall && !(await this.deps.enabled().catch(() => false))) return { type: "browser.result", id: raw.id as string, ok: false, error: SWITCHED_OFF };
    if (!parsed.ok) return { type: "browser.result", id: parsed.id, ok: false, error: parsed.error };
    const call = parsed.call;
    const fail = (error: string): BrowserResult => ({ type: "browser.result", id: call.id, ok: false, error });
    let timer: unknown = null;
    const deadline = new Promise<BrowserResult>((resolve) => {
      timer = this.deps.setTimer(() => {
        const what = call.op === "read" ? `reading ${call.uri}` : call.op === "page" ? `page tool ${call.tool}` : call.args.tool;
        resolve(fail(`the browser did not finish ${what} within ${Math.round(CALL_DEADLINE_MS / 1000)} s; it may still complete — check with snapshot_page or browser://current/state before trying again`));
      }, CALL_DEADLINE_MS);
    });
    const work = (async (): Promise<BrowserResult> => {
      try {
        // read again: the switch may have been turned off since the call arrived
        if (!(await this.deps.enabled())) return fail(SWITCHED_OFF);
        if (call.op === "read") return { type: "browser.result", id: call.id, ok: true, text: await this.read(call.uri) };
        if (call.op === "page") {
          if (!this.deps.pageTools) return fail("this extension does not run page tools for the bridge");
          const r = await this.deps.pageTools.call(call.tool, call.args, call.expect);
          return r.ok ? { type: "browser.result", id: call.id, ok: true, text: r.text } : fail(r.error);
        }
        if (call.op === "inspect") return { type: "browser.result", id: call.id, ok: true, target: await this.inspect(call.args) };
        return { type: "browser.result", id: call.id, ok: true, text: await this.run(call.args, call.expect) };
      } catch (e) {
        if (e instanceof CallError) return fail(e.message);
        return fail(`the browser tool failed unexpectedly (${String(e instanceof Error ? e.message : e)}); try again, or take a new snapshot_page`);
      }
    })();
    try {
      return await Promise.race([work, deadline]);
    } finally {
      this.deps.clearTimer(timer);
    }
  }

  // ---- tabs ----

  private async getTab(tabId: number): Promise<TabInfo> {
    try {
      return await this.deps.api.tabs.get(tabId);
    } catch {
      throw new CallError(`there is no tab ${tabId} (it was closed, or the id is wrong); read browser://tabs for the open tabs`);
    }
  }

  /** The tab a call names, or the active tab of the last focused normal window. */
  private async tabFor(tabId: number | undefined): Promise<TabInfo> {
    if (tabId !== undefined) return this.getTab(tabId);
    const t = await this.activeTab();
    if (!t) throw new CallError("there is no active tab in a normal browser window; open one with open_tab");
    return t;
  }

  private async activeTab(): Promise<TabInfo | undefined> {
    let windowId: number | undefined;
    try {
      windowId = (await this.deps.api.windows.getLastFocused({ windowTypes: ["normal"] })).id;
    } catch {
      windowId = undefined;
    }
    const tabs = await this.deps.api.tabs.query(windowId !== undefined ? { active: true, windowId } : { active: true });
    return tabs.find((t) => t.id !== undefined);
  }

  /** The tab's URL when the extension may act on it; throws the no-access or never error. */
  private actionableUrl(tab: TabInfo): string {
    const id = tab.id ?? -1;
    if (!tab.url) throw new CallError(noAccess(id));
    const never = neverReason(tab.url);
    if (never) throw new CallError(`${describeTab(id)} shows a page browser tools never touch: ${never}`);
    return tab.url;
  }

  private target(tab: TabInfo, url: string): Target {
    return { tabId: tab.id ?? null, url, title: cleanTitle(tab.title), chatTab: isChatUrl(url) };
  }

  private async page(tabId: number, req: PageRequest): Promise<PageResult & { ok: true }> {
    let got: unknown;
    try {
      got = await this.deps.api.runInPage(tabId, req);
    } catch (e) {
      const gone = await this.deps.api.tabs.get(tabId).then(
        () => false,
        () => true,
      );
      if (gone) throw new CallError(`${describeTab(tabId)} was closed while the tool ran; nothing more was done — read browser://tabs for the open tabs`);
      throw new CallError(`could not reach the page in ${describeTab(tabId)} (${String(e instanceof Error ? e.message : e)}); it may be loading — wait a moment and try again`);
    }
    if (!isObj(got) || typeof got.ok !== "boolean") throw new CallError(`the page in ${describeTab(tabId)} gave no answer (it may have navigated meanwhile); take a new snapshot_page and try again`);
    const r = got as PageResult;
    if (!r.ok) throw new CallError(r.error);
    return r;
  }

  /**
   * Waits until the tab has loaded a new page (or `capMs`); says whether it did. Throws when the
   * tab closes. Without the `tabs` permission Chrome shows no `pendingUrl`, and a navigation whose
   * server has not answered yet leaves the tab `complete` at its old URL: so a load counts only
   * once the tab was seen loading or its URL changed — or, after an action that may not navigate
   * at all (a click), once `graceMs` passed quietly.
   */
  private async settle(tabId: number, before: string, capMs: number, graceMs = capMs): Promise<{ tab: TabInfo; loaded: boolean }> {
    const start = this.deps.now();
    let seenLoading = false;
    for (;;) {
      let tab: TabInfo;
      try {
        tab = await this.deps.api.tabs.get(tabId);
      } catch {
        throw new CallError(`${describeTab(tabId)} was closed while its page loaded; read browser://tabs for the open tabs`);
      }
      if (tab.status === "loading" || tab.pendingUrl) seenLoading = true;
      const elapsed = this.deps.now() - start;
      if (tab.status === "complete" && !tab.pendingUrl && (seenLoading || (!!tab.url && tab.url !== before) || elapsed >= graceMs)) return { tab, loaded: true };
      if (elapsed >= capMs) return { tab, loaded: false };
      await new Promise<void>((r) => this.deps.setTimer(r, 100));
    }
  }

  private async afterAction(tabId: number, before: string): Promise<string> {
    const { tab, loaded } = await this.settle(tabId, before, AFTER_ACTION_CAP_MS, 800);
    const where = tab.url ? tab.url : "a page ground-link cannot see";
    return `${loaded ? "" : "the page is still loading; "}the tab is now at ${where}${tab.url && tab.url !== before ? " (it navigated)" : ""}. Take a new snapshot_page before the next action: refs from the last one may be gone.`;
  }

  // ---- inspect ----

  private async inspect(a: ToolArgs): Promise<Target> {
    if (a.tool === "open_tab") {
      const dest = this.destination(a.url, undefined);
      return { tabId: null, url: null, title: "", destination: dest, chatTab: isChatUrl(dest) };
    }
    const tab = await this.tabFor(a.tabId);
    const url = this.actionableUrl(tab);
    const target = this.target(tab, url);
    if (a.tool === "navigate_to") target.destination = this.destination(a.url, url);
    if (a.tool === "click_element" || a.tool === "input_text" || a.tool === "submit_form") {
      const r = await this.page(tab.id ?? -1, { op: "describe", target: a.target });
      if (r.element) target.element = r.element;
    }
    return target;
  }

  /** `raw` resolved against `base`; refused when it is a never-URL. */
  private destination(raw: string, base: string | undefined): string {
    let abs: string;
    try {
      abs = new URL(raw.trim(), base).href;
    } catch {
      throw new CallError(`${JSON.stringify(raw.slice(0, 200))} is not a URL; give an absolute one such as https://example.com/`);
    }
    // an absolute `raw` resolves to itself, so this judges exactly what Chrome would open
    const never = neverReason(abs);
    if (never) throw new CallError(never);
    return abs;
  }

  // ---- run ----

  private async approvedTab(a: ToolArgs, expect: Expect): Promise<{ tab: TabInfo; url: string }> {
    if ("tabId" in a && a.tabId !== undefined && a.tabId !== expect.tabId) {
      throw new CallError(`the call names tab ${a.tabId} but tab ${expect.tabId} was approved; nothing was done — call the tool again`);
    }
    const tab = await this.getTab(expect.tabId);
    const url = this.actionableUrl(tab);
    const now = originOf(url);
    if (now !== expect.origin) {
      throw new CallError(`the tab is now at ${now} (it was ${expect.origin} when the call was approved); nothing was done — call the tool again`);
    }
    return { tab, url };
  }

  private async run(a: ToolArgs, expect: Expect | undefined): Promise<string> {
    const api = this.deps.api;
    if (a.tool === "open_tab") {
      const dest = this.destination(a.url, undefined);
      const tab = await api.tabs.create({ url: dest, active: true });
      if (tab.id === undefined) throw new CallError("Chrome opened no tab; try again");
      const { tab: done, loaded } = await this.settle(tab.id, "", LOAD_CAP_MS);
      return `opened tab ${tab.id}${loaded ? "" : " (still loading after 15 s)"} at ${done.url || dest}${done.url ? `, title ${JSON.stringify(cleanTitle(done.title))}` : ""}`;
    }
    if (!expect) throw new CallError(`a run of ${a.tool} needs expect {tabId, origin}`);
    const { tab, url } = await this.approvedTab(a, expect);
    const tabId = expect.tabId;
    switch (a.tool) {
      case "navigate_to": {
        const dest = this.destination(a.url, url);
        try {
          await api.tabs.update(tabId, { url: dest });
        } catch (e) {
          throw new CallError(`could not navigate ${describeTab(tabId)} (${String(e instanceof Error ? e.message : e)})`);
        }
        const { tab: done, loaded } = await this.settle(tabId, url, LOAD_CAP_MS);
        if (!done.url) return `${describeTab(tabId)} navigated to a page ground-link cannot see (no host access there)${loaded ? "" : "; it was still loading after 15 s"}`;
        if (!loaded) return `no page loaded within 15 s (asked for ${dest}); the tab still shows ${done.url} — the site may be slow; check with browser://current/state`;
        return `loaded ${done.url}, title ${JSON.stringify(cleanTitle(done.title))}`;
      }
      case "snapshot_page": {
        const r = await this.page(tabId, { op: "snapshot", maxBytes: SNAPSHOT_MAX_BYTES });
        return `${describeTab(tabId)} at ${url}\n${r.text}`;
      }
      case "click_element": {
        const r = await this.page(tabId, { op: "click", target: a.target });
        return `${r.text}; ${await this.afterAction(tabId, url)}`;
      }
      case "submit_form": {
        const r = await this.page(tabId, { op: "submit", target: a.target });
        return `${r.text}; ${await this.afterAction(tabId, url)}`;
      }
      case "input_text": {
        const r = await this.page(tabId, { op: "input", target: a.target, text: a.text });
        return r.text;
      }
      case "switch_tab": {
        await api.tabs.update(tabId, { active: true });
        await api.windows.update(tab.windowId, { focused: true }).catch(() => undefined);
        return `switched to ${describeTab(tabId)} (${url})`;
      }
      case "close_tab": {
        await api.tabs.remove(tabId);
        return `closed ${describeTab(tabId)} (${url})`;
      }
    }
  }

  // ---- read ----

  private async read(uri: string): Promise<string> {
    const api = this.deps.api;
    if (uri === "browser://tabs") return JSON.stringify((await api.tabs.query({})).map(tabRow));
    if (uri === "browser://current/state") {
      const tab = await this.activeTab();
      const tabs = (await api.tabs.query({})).map(tabRow);
      if (!tab || tab.id === undefined) return JSON.stringify({ tabId: null, url: null, title: "", readyState: null, tabs });
      let readyState: string | null = tab.status ?? null;
      if (tab.url && !neverReason(tab.url)) {
        const r = await this.page(tab.id, { op: "readyState" }).catch(() => null);
        if (r) readyState = r.text;
      }
      return JSON.stringify({ ...tabRow(tab), readyState, tabs });
    }
    if (uri === "browser://current/dom") {
      const tab = await this.activeTab();
      if (!tab || tab.id === undefined) throw new CallError("there is no active tab in a normal browser window");
      const url = this.actionableUrl(tab);
      const r = await this.page(tab.id, { op: "dom", maxBytes: DOM_MAX_BYTES });
      return `${describeTab(tab.id)} at ${url}\n${r.text}`;
    }
    throw new CallError(`unknown resource ${JSON.stringify(uri.slice(0, 200))}; the browser resources are ${RESOURCE_URIS.join(", ")}`);
  }
}

/** The real Chrome behind {@link BrowserApi}. */
export function chromeBrowserApi(): BrowserApi {
  return {
    tabs: {
      get: (id) => chrome.tabs.get(id) as Promise<TabInfo>,
      query: (q) => chrome.tabs.query(q) as Promise<TabInfo[]>,
      update: (id, p) => chrome.tabs.update(id, p) as Promise<TabInfo | undefined>,
      create: (p) => chrome.tabs.create(p) as Promise<TabInfo>,
      remove: (id) => chrome.tabs.remove(id),
    },
    windows: {
      getLastFocused: (o) => chrome.windows.getLastFocused(o as chrome.windows.QueryOptions),
      update: (id, p) => chrome.windows.update(id, p),
    },
    runInPage: async (tabId, req) => {
      const [r] = await chrome.scripting.executeScript({ target: { tabId, frameIds: [0] }, world: "ISOLATED", func: pageOp, args: [req] });
      return r?.result;
    },
  };
}
