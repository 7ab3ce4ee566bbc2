/**
 * The service worker: the only code that talks to the bridge (DESIGN §7). It holds the pairing
 * token (never handed to a content script or page), answers the content scripts' typed requests,
 * watches the bridge's health with backoff, and relays `/events` to the cards.
 *
 * Chrome may stop this worker at any moment, so every listener is registered synchronously at
 * top level, and everything that must survive — token, settings, connection state, dedupe table,
 * step counts, pause — lives in `chrome.storage.local`.
 */

import { BridgeClient } from "./bridge";
import { syncOptionalScripts as syncOptional } from "./optional";
import { Budget } from "../shared/budget";
import { Dedupe } from "../shared/dedupe";
import { adapterForHost, validateOverrides } from "../shared/adapters";
import { applyPack, PACK_FORMAT, PACK_VERSION } from "../shared/packs";
import { isHealthReport, reportLines, type HealthReport } from "../shared/health";
import { parseBridgeUrl, normaliseSettings, type Settings } from "../shared/settings";
import { chromeLocal, type KV } from "../shared/store";
import { HealthRelay } from "../shared/healthrelay";
import { skillsForUrl } from "../shared/skill-store";
import { AGENT_PORT, AgentSession, type AgentIn } from "./agent";
import { auditLabel, type AuditMark, type PanelCallReport } from "../shared/panel-audit";
import { keysSet, writeKey } from "./keys";
import { dropFrame, dropTab, originPattern, storeFrameReport, syncPageToolScripts } from "./page-tools";
import { startNative } from "./native-wire";
import { BROWSER_TOOLS_KEY } from "../shared/browser-switch";
import {
  EVENTS_PORT,
  type ConnectionState,
  type ContentRequest,
  type Reply,
  type Request,
  type UiRequest,
  type WorkerEvent,
} from "../shared/protocol";

const kv = chromeLocal();
const dedupe = new Dedupe(kv);
const budget = new Budget(kv);
const ports = new Set<chrome.runtime.Port>();
const HEALTH_ALARM = "ground-link-health";
const MAX_BACKOFF_MS = 60_000;

// Content scripts get nothing from storage directly (the token lives there): where the browser
// supports it, storage.local is closed to them.
void (chrome.storage.local as unknown as { setAccessLevel?: (o: { accessLevel: string }) => Promise<void> })
  .setAccessLevel?.({ accessLevel: "TRUSTED_CONTEXTS" })
  ?.catch(() => undefined);

// ---- native messaging (./native.ts): connect, reconnect with backoff, pair without a pasted token;
// browser tools (./browser-tools.ts) arrive and are answered on the same port ----

const native = startNative(kv);

// ---- top-level listeners ----

chrome.runtime.onMessage.addListener((msg: Request, sender, sendResponse: (r: Reply) => void) => {
  if (!isRequest(msg)) return false;
  if (isUiRequest(msg) && !fromExtensionPage(sender)) {
    sendResponse({ type: "failed", kind: "bad", message: "only the extension's own pages may change pairing or settings" });
    return false;
  }
  handle(msg, sender).then(sendResponse, (e: unknown) => sendResponse({ type: "failed", kind: "bad", message: String(e) }));
  return true;
});

chrome.tabs.onRemoved.addListener((tabId) => {
  void chrome.storage.session.remove(healthKey(tabId));
  void dropTab(tabId);
});

// a new document in the tab: its frames report their tools afresh as they load
chrome.tabs.onUpdated.addListener((tabId, info) => {
  if (info.status === "loading" && info.url !== undefined) void dropTab(tabId);
});

chrome.runtime.onConnect.addListener((port) => {
  if (port.name === AGENT_PORT) {
    // the agent answers only the extension's own panel: a content script's port is closed at once
    if (!port.sender || !fromExtensionPage(port.sender)) return port.disconnect();
    const session = new AgentSession(
      kv,
      (m) => {
        try {
          port.postMessage(m);
        } catch {
          // the panel went away mid-turn
        }
      },
      auditPanelCall,
    );
    port.onMessage.addListener((m: AgentIn) => session.onMessage(m));
    port.onDisconnect.addListener(() => session.close());
    return;
  }
  if (port.name !== EVENTS_PORT) return;
  ports.add(port);
  port.onDisconnect.addListener(() => {
    ports.delete(port);
    if (ports.size === 0) stopEvents();
  });
  // a port message is an event, so the worker stays awake while content scripts have calls out
  port.onMessage.addListener(() => undefined);
  void startEvents();
});

chrome.alarms.onAlarm.addListener((a) => {
  if (a.name === HEALTH_ALARM) void checkHealth();
});

chrome.runtime.onInstalled.addListener(() => {
  void chrome.alarms.create(HEALTH_ALARM, { periodInMinutes: 0.5 });
  void checkHealth();
  void syncOptionalScripts();
  void syncPageToolScripts(kv);
});

chrome.runtime.onStartup.addListener(() => {
  void chrome.alarms.create(HEALTH_ALARM, { periodInMinutes: 0.5 });
  void checkHealth();
  void syncOptionalScripts();
});

chrome.permissions.onAdded.addListener(() => {
  void syncOptionalScripts();
  void syncPageToolScripts(kv);
});
chrome.permissions.onRemoved.addListener(() => {
  void syncOptionalScripts();
  void syncPageToolScripts(kv);
});

chrome.storage.onChanged.addListener((changes, area) => {
  if (area === "local" && (changes.token || changes.settings)) void checkHealth();
  // the bridge lists browser tools only while the switch is on: tell it at once (./browser-hello.ts);
  // the page-tools list follows the hello's answer (./page-bridge.ts)
  if (area === "local" && changes[BROWSER_TOOLS_KEY]) {
    native.hello.restart();
    // switched off: the empty list goes at once (it needs no answer to the hello first)
    if (changes[BROWSER_TOOLS_KEY].newValue !== true) void native.pageTools.announceNow();
  }
  if (area === "session" && Object.keys(changes).some((k) => k.startsWith("pageTools:"))) native.pageTools.changed();
});

// ---- optional hosts (Grok on x.com): see ./optional.ts ----

async function syncOptionalScripts(): Promise<void> {
  await syncOptional(chrome);
}

// ---- request handling ----

function isRequest(m: unknown): m is Request {
  return typeof m === "object" && m !== null && typeof (m as { type?: unknown }).type === "string";
}

function isUiRequest(m: Request): m is UiRequest {
  return ["pair", "pairNative", "unpair", "checkNow", "setPaused", "setBridgeUrl", "tabHealth", "enablePageTools", "setProviderKey", "keyStatus", "auditPanelCall"].includes(m.type);
}

function fromExtensionPage(sender: chrome.runtime.MessageSender): boolean {
  return sender.id === chrome.runtime.id && (sender.url ?? "").startsWith(`chrome-extension://${chrome.runtime.id}/`);
}

async function loadSettings(): Promise<Settings> {
  const got = await kv.get(["settings"]);
  return normaliseSettings(got.settings);
}

async function client(): Promise<BridgeClient> {
  const got = await kv.get(["settings", "token"]);
  const settings = normaliseSettings(got.settings);
  const token = typeof got.token === "string" && got.token !== "" ? got.token : null;
  return new BridgeClient(settings.bridgeUrl, token);
}

/**
 * One finished side-panel call to the paired bridge's audit log (DESIGN §12). Not paired:
 * nothing is sent and nothing is said. One attempt; what went wrong goes to the panel's
 * operation log instead of a retry.
 */
async function auditPanelCall(report: PanelCallReport): Promise<AuditMark | undefined> {
  const c = await client();
  if (!c.paired) return undefined;
  const r = await c.reportPanelCall(report);
  return r.ok ? { ok: true } : { ok: false, reason: r.message };
}

async function isPaused(): Promise<boolean> {
  return (await kv.get(["paused"])).paused === true;
}

/** Timestamps for the e2e's latency figure; only kept when the hidden `perfMarks` flag is on. */
const perfLog: { callId: string; sentAt: number }[] = [];
(globalThis as unknown as { __groundLinkPerf: typeof perfLog }).__groundLinkPerf = perfLog;

async function handle(msg: Request, sender: chrome.runtime.MessageSender): Promise<Reply> {
  switch (msg.type) {
    case "health": {
      const tabId = sender.tab?.id;
      if (tabId === undefined || !isHealthReport(msg.report)) return { type: "failed", kind: "bad", message: "a health report comes from a chat tab, in the report's shape" };
      await chrome.storage.session.set({ [healthKey(tabId)]: msg.report });
      await showTabHealth(tabId, msg.report);
      void forwardHealth(msg.report);
      return { type: "ok" };
    }
    case "saveOverrides": {
      // only a content script on that site's own page, after the person's trusted clicks
      const host = sender.tab?.url ? new URL(sender.tab.url).host : "";
      const site = adapterForHost(host);
      if (!site || site.id !== msg.site) return { type: "failed", kind: "bad", message: `overrides for ${msg.site} come only from a ${msg.site} page` };
      // the page already checked each selector against its DOM; here: the shape
      const problems = validateOverrides({ [msg.site]: msg.overrides }, () => true);
      if (problems.length > 0) return { type: "failed", kind: "bad", message: problems.join("; ") };
      const s = await loadSettings();
      const overrides = applyPack(s.overrides, { format: PACK_FORMAT, version: PACK_VERSION, sites: { [site.id]: msg.overrides } });
      await kv.set({ settings: { ...s, overrides } });
      return { type: "ok" };
    }
    case "pageTools": {
      const tabId = sender.tab?.id;
      if (tabId === undefined || sender.frameId === undefined) return { type: "failed", kind: "bad", message: "page tools are reported by a tab's frame" };
      // the origin is Chrome's word for the frame (the content script reads its own location;
      // this holds even a compromised renderer to it): every tool carries that origin
      const origin = typeof sender.origin === "string" ? sender.origin : msg.report.origin;
      await storeFrameReport(tabId, sender.frameId, { ...msg.report, origin, tools: msg.report.tools.map((t) => ({ ...t, origin })) });
      return { type: "ok" };
    }
    case "pageToolsGone": {
      if (sender.tab?.id !== undefined && sender.frameId !== undefined) await dropFrame(sender.tab.id, sender.frameId);
      return { type: "ok" };
    }
    case "skillsFor": {
      // the frame's own URL as Chrome knows it, not the one the message names
      const url = sender.url ?? msg.url;
      return { type: "skills", skills: await skillsForUrl(kv, url) };
    }
    case "setProviderKey": {
      if (typeof msg.key !== "string" || msg.key.length > 500 || /\s/.test(msg.key.trim()) || !["deepseek", "qwen", "glm", "kimi", "openai", "custom"].includes(msg.provider)) {
        return { type: "failed", kind: "bad", message: "an API key is one word of at most 500 characters, for one of the listed providers" };
      }
      await writeKey(kv, msg.provider, msg.key.trim());
      return { type: "keyStatus", set: await keysSet(kv) };
    }
    case "keyStatus":
      return { type: "keyStatus", set: await keysSet(kv) };
    case "auditPanelCall": {
      const mark = await auditPanelCall(msg.report);
      return { type: "audited", audit: auditLabel(mark) ?? null };
    }
    case "enablePageTools": {
      const pattern = originPattern(msg.origin);
      if (!pattern) return { type: "failed", kind: "bad", message: `page tools work on http(s) sites, not on ${msg.origin}` };
      if (!(await chrome.permissions.contains({ origins: [pattern] }))) return { type: "failed", kind: "bad", message: `Chrome has not granted ${pattern}; allow it when Chrome asks` };
      const got = (await kv.get(["webmcpSites"])).webmcpSites;
      const sites = Array.isArray(got) ? got.filter((x): x is string => typeof x === "string") : [];
      if (!sites.includes(pattern)) await kv.set({ webmcpSites: [...sites, pattern] });
      await syncPageToolScripts(kv);
      // this page is already loaded: start the scripts in it now (the polyfill then sees the
      // page's tools only if the page registers after this point or through its forms)
      await chrome.scripting.executeScript({ target: { tabId: msg.tabId, allFrames: true }, files: ["webmcp-main.js"], world: "MAIN" });
      await chrome.scripting.executeScript({ target: { tabId: msg.tabId, allFrames: true }, files: ["webmcp.js"] });
      return { type: "ok" };
    }
    case "tabHealth": {
      const got = (await chrome.storage.session.get(healthKey(msg.tabId)))[healthKey(msg.tabId)];
      return { type: "health", report: isHealthReport(got) ? got : null };
    }
    case "config": {
      const got = await kv.get(["settings", "paused", "perfMarks"]);
      return { type: "config", settings: { ...normaliseSettings(got.settings), perfMarks: got.perfMarks === true }, paused: got.paused === true };
    }
    case "exec": {
      if (await isPaused()) return { type: "failed", kind: "paused", message: "paused in this browser" };
      const c = await client();
      const got = await kv.get(["perfMarks"]);
      // the card learns "waiting for approval" from /events: be subscribed before the call exists
      await eventsSubscribed(EVENTS_READY_MAX_MS);
      if (got.perfMarks === true) perfLog.push({ callId: msg.callId, sentAt: Date.now() });
      // a fallback call keeps its mark to the bridge, which then always asks (never the reverse:
      // no message field can remove a mark the bridge would want)
      const r = await c.exec({ ...msg.call, session: msg.session, callId: msg.callId, reply: msg.reply, ...(msg.provenance ? { provenance: msg.provenance } : {}) });
      return afterCall(r);
    }
    case "invalidCall": {
      const r = await (await client()).formatInvalid(msg.report);
      return r.ok ? { type: "formatted", formatted: r.value } : { type: "failed", kind: r.kind, message: r.message };
    }
    case "await": {
      const r = await (await client()).poll(msg.callId);
      return afterCall(r);
    }
    case "cancel": {
      // 200/202: cancelled; 409: it had already finished. Either way its result comes through
      // the running long-poll, so the card needs nothing more from this answer.
      const r = await (await client()).cancel(msg.callId);
      return r.ok ? { type: "ok" } : { type: "failed", kind: r.kind, message: r.message };
    }
    case "claim":
      return { type: "claimed", owner: await dedupe.claim(msg.key) };
    case "markSeen":
      await dedupe.markSeen(msg.keys);
      return { type: "ok" };
    case "takeRound": {
      const s = await loadSettings();
      const d = await budget.take(msg.session, s.stepBudget);
      return { type: "round", ok: d.ok, used: d.used, budget: s.stepBudget };
    }
    case "resetRounds":
      await budget.reset(msg.session);
      return { type: "ok" };
    case "prompt": {
      const s = await loadSettings();
      const r = await (await client()).prompt(msg.lang ?? s.promptLang);
      return r.ok ? { type: "prompt", text: r.value } : { type: "failed", kind: r.kind, message: r.message };
    }
    case "status":
    case "checkNow": {
      const connection = await checkHealth();
      return { type: "status", connection, paused: await isPaused() };
    }
    case "pair": {
      const token = msg.token.trim();
      if (!/^[\x21-\x7e]{16,512}$/.test(token)) {
        return { type: "failed", kind: "bad", message: "that does not look like a ground-link token: paste exactly what `ground-link token` prints" };
      }
      await kv.set({ token });
      const connection = await checkHealth();
      return { type: "status", connection, paused: await isPaused() };
    }
    case "pairNative": {
      native.link.start();
      const r = await native.pairNow(true);
      if (!r.ok) return { type: "failed", kind: "notPaired", message: r.message };
      return { type: "status", connection: await checkHealth(), paused: await isPaused() };
    }
    case "unpair":
      await kv.remove(["token"]);
      return { type: "status", connection: await checkHealth(), paused: await isPaused() };
    case "setPaused":
      await kv.set({ paused: msg.paused });
      return { type: "status", connection: await currentConnection(), paused: msg.paused };
    case "setBridgeUrl": {
      const p = parseBridgeUrl(msg.url);
      if (!p.ok) return { type: "failed", kind: "bad", message: p.message };
      const s = await loadSettings();
      await kv.set({ settings: { ...s, bridgeUrl: p.url } });
      return { type: "status", connection: await checkHealth(), paused: await isPaused() };
    }
  }
}

function afterCall(r: Awaited<ReturnType<BridgeClient["exec"]>>): Reply {
  if (r.ok) return { type: "result", result: r.value };
  if (r.kind === "noBridge") void checkHealth();
  return { type: "failed", kind: r.kind, message: r.message };
}

// ---- health, with backoff while the bridge is away ----

let backoffMs = 1000;
let retryTimer: ReturnType<typeof setTimeout> | null = null;

async function currentConnection(): Promise<ConnectionState | null> {
  const got = (await kv.get(["connection"])).connection;
  return typeof got === "object" && got !== null ? (got as ConnectionState) : null;
}

/** Checks started, and the newest whose result was kept: checks overlap (saving the address,
 * pairing, storage changes each start one), and one made with an old address or no key can
 * finish last; only a check newer than the one already kept may replace it. */
let checksStarted = 0;
let checkKept = 0;

async function checkHealth(): Promise<ConnectionState> {
  const mine = ++checksStarted;
  const c = await client();
  const h = await c.health();
  const now = Date.now();
  const port = Number(new URL(c.baseUrl).port || 80);
  let state: ConnectionState;
  if (!h.ok && h.kind === "impostor") {
    state = { kind: "impostor", port, checkedAt: now, detail: h.message };
  } else if (!h.ok && h.kind === "notPaired") {
    state = { kind: "notPaired", port, version: "", checkedAt: now, detail: h.message };
  } else if (!h.ok) {
    state = { kind: "noBridge", detail: h.message, checkedAt: now, retryInMs: backoffMs };
  } else if (typeof h.value.dir !== "string") {
    const token = (await kv.get(["token"])).token;
    const detail = typeof token === "string" ? "the bridge did not accept the token; paste the current output of `ground-link token`" : "paste the output of `ground-link token` to pair";
    state = { kind: "notPaired", port, version: h.value.version, checkedAt: now, detail };
  } else {
    const pending = typeof h.value.pending === "number" && Number.isInteger(h.value.pending) && h.value.pending >= 0 ? h.value.pending : 0;
    state = { kind: "connected", port, dir: h.value.dir, sandbox: h.value.sandbox ?? null, mode: h.value.mode ?? null, version: h.value.version, checkedAt: now, pending };
  }
  if (mine < checkKept) return state;
  checkKept = mine;
  await kv.set({ connection: state });
  // no key yet and the native host is there: ask ground-link for one (it asks the person)
  if (state.kind === "notPaired" && native.link.connected) void native.pairNow(false);
  // (back) at the bridge: the adapter reports it lacks (made while it was away, or forgotten in
  // a restart), judged by what its authenticated /health says it holds
  if (h.ok && state.kind === "connected") void healthRelay.flush((h.value.adapters ?? []).map((a) => ({ site: a.site, problems: a.problems })));
  void chrome.action.setBadgeText({ text: connectionBadge(state) });
  void chrome.action.setBadgeBackgroundColor({ color: state.kind === "notPaired" ? "#9a6700" : "#cf222e" });
  broadcast({ type: "connection", connection: state });
  if (retryTimer !== null) clearTimeout(retryTimer);
  retryTimer = null;
  // a squatter may go away and the bridge come back: keep looking, with backoff, as when absent
  if (state.kind === "noBridge" || state.kind === "impostor") {
    retryTimer = setTimeout(() => void checkHealth(), backoffMs);
    backoffMs = Math.min(backoffMs * 2, MAX_BACKOFF_MS);
  } else {
    backoffMs = 1000;
    if (ports.size > 0) void startEvents();
  }
  return state;
}

function connectionBadge(state: ConnectionState | null): string {
  if (!state) return "";
  return state.kind === "connected" ? "" : state.kind === "notPaired" ? "!" : state.kind === "impostor" ? "?!" : "off";
}

// ---- adapter health (issue 14): per tab in the badge and popup, per site at the bridge ----

function healthKey(tabId: number): string {
  return `health:${tabId}`;
}

/** A tab whose chat site's adapter has a problem gets its own badge and a tooltip that says what. */
async function showTabHealth(tabId: number, report: HealthReport): Promise<void> {
  const lines = reportLines(report);
  try {
    if (lines.length > 0) {
      await chrome.action.setBadgeText({ tabId, text: "⚠" });
      await chrome.action.setBadgeBackgroundColor({ tabId, color: "#9a6700" });
      await chrome.action.setTitle({ tabId, title: ["ground-link", ...lines].join("\n") });
    } else {
      await chrome.action.setBadgeText({ tabId, text: connectionBadge(await currentConnection()) });
      await chrome.action.setTitle({ tabId, title: "ground-link" });
    }
  } catch {
    // the tab went away meanwhile
  }
}

/**
 * Tells the bridge (behind the pairing key) a site's problems when they changed, so the tray
 * can show them; a site that is fine again clears its entry there. A report made while the
 * bridge is away is kept and sent when it is back (`checkHealth` flushes on every connection).
 */
const healthRelay = new HealthRelay(chrome.storage.session as unknown as KV, async (r) => (await (await client()).reportAdapterHealth(r)).ok);

async function forwardHealth(report: HealthReport): Promise<void> {
  const conn = await currentConnection();
  await healthRelay.record({ site: report.site, problems: reportLines(report) }, conn?.kind === "connected");
}

// ---- /events relay to the content scripts' ports ----

let eventsAbort: AbortController | null = null;
let eventsBackoffMs = 1000;
/** Settles once the current `/events` request is subscribed (true) or has failed (false). */
let eventsReady: Promise<boolean> | null = null;
/** How long a call waits for the events subscription before it goes ahead without it. */
const EVENTS_READY_MAX_MS = 1500;

function broadcast(ev: WorkerEvent): void {
  for (const p of ports) {
    try {
      p.postMessage(ev);
    } catch {
      ports.delete(p);
    }
  }
}

async function startEvents(): Promise<void> {
  if (eventsAbort || ports.size === 0) return;
  const ctrl = new AbortController();
  eventsAbort = ctrl;
  let settle: (subscribed: boolean) => void = () => undefined;
  const ready = new Promise<boolean>((r) => (settle = r));
  eventsReady = ready;
  const c = await client();
  const out = await c.events(
    (event) => broadcast({ type: "callEvent", event }),
    ctrl.signal,
    () => {
      eventsBackoffMs = 1000;
      settle(true);
    },
  );
  settle(false);
  if (eventsReady === ready) eventsReady = null;
  if (eventsAbort === ctrl) eventsAbort = null;
  if (!ctrl.signal.aborted && ports.size > 0 && !(out.ok === false && out.kind === "notPaired")) {
    setTimeout(() => void startEvents(), eventsBackoffMs);
    eventsBackoffMs = Math.min(eventsBackoffMs * 2, MAX_BACKOFF_MS);
  }
}

/** Waits (at most `maxMs`) until the bridge has subscribed us to `/events`, when a card listens. */
async function eventsSubscribed(maxMs: number): Promise<void> {
  if (ports.size === 0) return;
  void startEvents();
  const ready = eventsReady;
  if (!ready) return;
  let timer: ReturnType<typeof setTimeout> | undefined;
  await Promise.race([ready, new Promise<void>((r) => (timer = setTimeout(r, maxMs)))]);
  clearTimeout(timer);
}

function stopEvents(): void {
  eventsAbort?.abort();
  eventsAbort = null;
}
