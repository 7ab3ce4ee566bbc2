/**
 * Content script (isolated world) on a supported chat site: waits for the page to settle, treats
 * every reply already on the page as history (never run), then watches for the *next* assistant
 * reply, and once it has stopped streaming and its blocks are complete, hands its calls to a
 * `ReplyRun` exactly once (dedupe in extension storage via the worker).
 *
 * Signals that the reply has ended, fastest first: the MAIN-world stream observer's `streamEnd`
 * (when the DOM already shows the same calls), the adapter's streaming signal going away plus a
 * short quiet period, or a longer quiet period when the site gives no signal at all.
 */

import { adapterActiveAt, adapterForHost, applyOverrides, type SiteAdapter } from "../shared/adapters";
import { replyKey } from "../shared/dedupe";
import { t } from "../shared/i18n";
import { mentionsTool, parseToolBlocks, type ParsedBlock } from "../shared/parser";
import { EVENTS_PORT, isPageMessage, type ContentSettings, type Provenance, type TabReply, type TabRequest, type WorkerEvent } from "../shared/protocol";
import { sessionId } from "../shared/session";
import { addProblem } from "../shared/health";
import { assistantMessages, CARD_TAG, findComposer, isStreaming, messageText, overlapWithUserTurns, userTurnsIn } from "./dom";
import { checkPage } from "./health";
import { fallbackCandidates, fallbackReader } from "./fallback";
import { Picker } from "./picker";
import { insertIntoComposer } from "./insert";
import { ask, ContextGone } from "./messaging";
import { onWorkerEvent, ReplyRun } from "./runner";

/** New nodes are checked for user turns this long after they appear (off the observer's path). */
const USER_CHECK_DELAY_MS = 150;
/** At most this many added nodes wait for that check; a bigger burst keeps the newest. */
const MAX_PENDING_ADDED = 2000;
/** Quiet time after the site's streaming signal went away. */
const QUIET_AFTER_SIGNAL_MS = 120;
/** Quiet time when no streaming signal was ever seen for this reply. */
const QUIET_NO_SIGNAL_MS = 1000;
/** A block still open at the end looks like a reply that is still coming: wait longer. */
const QUIET_UNTERMINATED_MS = 4000;
/** The health check runs this long after the page settled (late panels, lazy composers)… */
const HEALTH_AFTER_SETTLE_MS = 1500;
/** …and this long after the URL changed (another conversation). */
const HEALTH_AFTER_URL_MS = 2500;
/** …and this long after a reply's results went out. */
const HEALTH_AFTER_ROUND_MS = 500;
/** The generic fallback looks for calls once the page has been quiet this long… */
const FALLBACK_QUIET_MS = 1000;
/** …or this long after it first had reason to, on a page that never stops changing. */
const FALLBACK_MAX_WAIT_MS = 5000;
/** Hydration: the DOM must be still this long before we touch it… */
const SETTLE_QUIET_MS = 400;
/** …or this long after start, whichever comes first. */
const SETTLE_MAX_MS = 6000;

interface Candidate {
  el: Element;
  ordinal: number;
  text: string;
  lastChange: number;
  /** Seen streaming (signal, network or growth) while it was the last reply. */
  active: boolean;
  /** First seen after the page settled, not as part of the history. */
  fresh: boolean;
  /** The adapter's streaming signal was seen while this was the last reply. */
  sawSignal: boolean;
  /** When it became the last reply (performance.now()): a network stream that ended before
   * then belongs to an earlier reply. */
  seenAt: number;
}

const base = adapterForHost(location.host);
if (base) void whenActive(base).then(() => boot(base)).catch((e) => console.debug("[ground-link] stopped:", e));

/** On a host where only some paths are a chat (x.com: `/i/grok`), waits until the page is on one. */
function whenActive(adapter: SiteAdapter): Promise<void> {
  return new Promise((resolve) => {
    const check = (): boolean => adapterActiveAt(adapter, location.host, location.pathname);
    if (check()) return resolve();
    // a single-page app changes its path without an event we can hear from here: look every second
    const timer = setInterval(() => {
      if (!check()) return;
      clearInterval(timer);
      resolve();
    }, 1000);
  });
}

async function boot(baseAdapter: SiteAdapter): Promise<void> {
  const cfg = await ask({ type: "config" });
  if (cfg.type !== "config") return;
  const settings: ContentSettings = cfg.settings;
  if (baseAdapter.id !== "generic" && settings.sites[baseAdapter.id] === false) return;
  const adapter = applyOverrides(baseAdapter, settings.overrides);
  const det = new Detector(document, adapter, settings, cfg.paused);
  det.listenPage();
  await det.settle();
  await det.start();
}

class Detector {
  private readonly history = new WeakSet<Element>();
  private readonly handled = new Set<string>();
  /**
   * The blocks each message element already dispatched. The dedupe key names a reply by its
   * position among the turns, and a site that inserts the next turn out of order can shift that
   * position for a moment: the same element with the same blocks never dispatches twice (a
   * second run would get a fresh reply id, and with it a fresh 20-call cap at the bridge).
   */
  private readonly dispatchedBy = new WeakMap<Element, Set<string>>();
  private readonly ownMessages = new Set<string>();
  private readonly openStreams = new Set<string>();
  private lastStream: { text: string; endedAt: number } | null = null;
  private cand: Candidate | null = null;
  private url = location.pathname + location.search;
  private readonly pageNonce = crypto.randomUUID().slice(0, 8);
  private session: string;
  private timer: ReturnType<typeof setTimeout> | null = null;
  /** Nodes added since the last user-turn check, in mutation order. */
  private added: Element[] = [];
  private userCheck: ReturnType<typeof setTimeout> | null = null;
  private port: chrome.runtime.Port | null = null;
  private activeRuns = 0;
  /** Set once the page has settled and the observer runs; nothing is evaluated before. */
  private started = false;
  /** The reply whose stream began and ended while the page was still settling (see `start`). */
  private liveAtStart: Element | null = null;
  private healthTimer: ReturnType<typeof setTimeout> | null = null;
  /** Seen while running: a reply that grew with no streaming signal from the page. */
  private noSignalSeen = false;
  /** Elements the generic fallback already saw (history at start, or offered): never offered again. */
  private readonly fallbackKnown = new WeakSet<Element>();
  private fallbackTimer: ReturnType<typeof setTimeout> | null = null;
  private fallbackSince = 0;

  constructor(
    private readonly doc: Document,
    private readonly adapter: SiteAdapter,
    private readonly settings: ContentSettings,
    private paused: boolean,
  ) {
    this.session = sessionId(adapter, new URL(location.href), this.pageNonce);
  }

  /** Stream signals from the MAIN-world observer. Page script can post these too; they only
   * ever speed up or feed detection of what the page shows, which the page controls anyway. */
  listenPage(): void {
    window.addEventListener("message", (ev: MessageEvent) => {
      if (ev.source !== window || !isPageMessage(ev.data)) return;
      const m = ev.data;
      if (m.type === "streamStart") {
        this.openStreams.add(m.streamId);
        this.lastStream = null;
        if (this.cand) this.cand.active = true;
      } else {
        this.openStreams.delete(m.streamId);
        this.lastStream = { text: m.text, endedAt: performance.now() };
        if (this.cand) this.cand.active = true;
      }
      // before the page has settled only the stream's state is kept; `start` looks at it
      if (this.started) this.schedule(0);
    });
    chrome.runtime.onMessage.addListener((msg: TabRequest, _sender, reply: (r: TabReply) => void) => {
      if (msg?.type === "insertPrompt") {
        void this.insertPrompt().then(reply);
        return true;
      }
      if (msg?.type === "startPicker") {
        new Picker(this.doc, this.adapter, async (overrides) => {
          const r = await ask({ type: "saveOverrides", site: this.adapter.id, overrides });
          if (r.type === "failed") throw new Error(r.message);
          this.scheduleHealth(HEALTH_AFTER_ROUND_MS);
        }).start();
        reply({ type: "ok" });
        return false;
      }
      if (msg?.type === "checkSelectors" && msg.site === this.adapter.id) {
        reply({ type: "selectorCheck", site: msg.site, ...overlapWithUserTurns(this.doc, this.adapter, msg.assistantMessage, msg.userMessage) });
        return false;
      }
      return false;
    });
  }

  /** Waits until the page has hydrated: no DOM changes for a while (or a time cap). */
  settle(): Promise<void> {
    return new Promise((resolve) => {
      const started = performance.now();
      let last = performance.now();
      const mo = new MutationObserver(() => {
        last = performance.now();
      });
      mo.observe(this.doc.documentElement, { childList: true, subtree: true, characterData: true });
      const tick = (): void => {
        const now = performance.now();
        if ((this.doc.readyState === "complete" && now - last >= SETTLE_QUIET_MS) || now - started >= SETTLE_MAX_MS) {
          mo.disconnect();
          resolve();
        } else setTimeout(tick, 100);
      };
      tick();
    });
  }

  /**
   * The page has settled: every reply on it is history, except one whose network stream began
   * after this script loaded and has already ended with exactly the calls that reply shows (the
   * person sent a message while the page was still settling). A reply still streaming now is
   * history as far as it has come; only what it adds from here on can make it run.
   */
  async start(): Promise<void> {
    // the URL may have changed while the page settled (a new chat gets its id with its first
    // message): the page as it is now is one view, seen from the URL it has now
    this.syncUrl();
    const msgs = assistantMessages(this.doc, this.adapter);
    const last = msgs[msgs.length - 1] ?? null;
    const ended = this.lastStream;
    if (last && ended && this.openStreams.size === 0 && mentionsTool(ended.text)) {
      const shown = blocksKey(parseToolBlocks(messageText(last, this.adapter)));
      if (shown === blocksKey(parseToolBlocks(ended.text))) this.liveAtStart = last;
    }
    await this.markHistory(this.liveAtStart);
    this.started = true;
    const mo = new MutationObserver((records) => this.onMutations(records));
    mo.observe(this.doc.body ?? this.doc.documentElement, { childList: true, subtree: true, characterData: true, attributes: true, attributeFilter: ["class", "aria-label", "data-is-streaming", "disabled", "aria-disabled", "data-stop-generating", "data-message-streaming"] });
    this.evaluate(true);
    this.scheduleHealth(HEALTH_AFTER_SETTLE_MS);
  }

  private scheduleHealth(ms: number): void {
    if (this.healthTimer !== null) clearTimeout(this.healthTimer);
    this.healthTimer = setTimeout(() => {
      this.healthTimer = null;
      void this.reportHealth();
    }, ms);
  }

  /** Checks the roles on the page as it is now and tells the worker (popup, badge, bridge). */
  private async reportHealth(): Promise<void> {
    if (!adapterActiveAt(this.adapter, location.host, location.pathname)) return;
    const report = checkPage(this.doc, this.adapter, location.pathname + location.search);
    if (this.noSignalSeen && !this.adapter.decoder) addProblem(report, { kind: "noStreamingSignal" });
    await ask({ type: "health", report });
  }

  /** Everything on the page now is history: its calls are never run. `keep` stays live. */
  private async markHistory(keep: Element | null): Promise<void> {
    const keys: string[] = [];
    const replying = this.openStreams.size > 0 || isStreaming(this.doc, this.adapter);
    assistantMessages(this.doc, this.adapter).forEach((el, i) => {
      if (el === keep) return;
      const text = messageText(el, this.adapter);
      // while the site says a reply is coming, an empty turn is that reply (a new chat gets its
      // URL as its first reply starts), not history; without that signal it may be an old turn
      // not filled in yet, so it stays history
      if (replying && text.trim() === "") return;
      this.history.add(el);
      if (!mentionsTool(text)) return;
      const key = replyKey(this.session, i, blocksKey(parseToolBlocks(text)));
      this.handled.add(key);
      keys.push(key);
    });
    // with no reply the adapter recognises, calls in other page text are history too
    if (assistantMessages(this.doc, this.adapter).length === 0) {
      for (const el of fallbackCandidates(this.doc, this.adapter, (e) => this.fallbackKnown.has(e))) this.fallbackKnown.add(el);
    }
    // turns on the page now are not new messages from the person
    this.added = [];
    if (keys.length > 0) await ask({ type: "markSeen", keys });
  }

  private onMutations(records: MutationRecord[]): void {
    const t0 = performance.now();
    let relevant = false;
    let structural = false;
    const inside = this.cand?.el;
    for (const r of records) {
      const target = r.target instanceof Element ? r.target : r.target.parentElement;
      if (target?.closest(CARD_TAG)) continue;
      if (r.type === "childList" && isOnlyOurs(r.addedNodes) && isOnlyOurs(r.removedNodes)) continue;
      relevant = true;
      // nodes added or removed outside the reply being watched may be new turns: rescan the list
      if (r.type === "childList" && !(inside && target && inside.contains(target))) {
        structural = true;
        for (const n of Array.from(r.addedNodes)) if (n instanceof Element && n.tagName.toLowerCase() !== CARD_TAG) this.added.push(n);
      }
    }
    if (this.added.length > 0) this.scheduleUserCheck();
    if (relevant) this.evaluate(structural);
    if (this.settings.perfMarks) performance.measure("ground-link:observer", { start: t0, end: performance.now(), detail: { records: records.length, relevant, structural } });
  }

  private schedule(ms: number): void {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = null;
      const t0 = performance.now();
      // the observer has already seen every mutation up to now (its callbacks run before any
      // timer), so the watched reply is current: only a gone or missing one needs a rescan
      this.evaluate(false);
      if (this.settings.perfMarks) performance.measure("ground-link:evaluate", { start: t0, end: performance.now() });
    }, ms);
  }

  /**
   * Looks at the last assistant reply and decides whether it is ready to dispatch. `full`
   * rescans the page's turns; otherwise only the watched reply changed, and on a long chat the
   * cheap path is what keeps each mutation batch well under the 2 ms budget.
   */
  /** Take the page's URL as it is now; true when it changed (a session id follows the URL). */
  private syncUrl(): boolean {
    const url = location.pathname + location.search;
    if (url === this.url) return false;
    this.url = url;
    this.session = sessionId(this.adapter, new URL(location.href), this.pageNonce);
    return true;
  }

  private evaluate(full: boolean): void {
    // off the chat's own paths (X outside /i/grok) nothing is read or run
    if (!adapterActiveAt(this.adapter, location.host, location.pathname)) return;
    const now = performance.now();
    if (this.syncUrl()) {
      // another conversation's history may now be on the page; the reply streaming right now stays live
      const keep = this.cand && (this.cand.active || this.openStreams.size > 0) ? this.cand.el : null;
      void this.markHistory(keep);
      full = true;
      this.scheduleHealth(HEALTH_AFTER_URL_MS);
    }
    let last: Element | undefined;
    let count: number;
    if (!full && this.cand?.el.isConnected) {
      last = this.cand.el;
      count = this.cand.ordinal + 1;
    } else {
      const msgs = assistantMessages(this.doc, this.adapter);
      last = msgs[msgs.length - 1];
      count = msgs.length;
    }
    if (!last) {
      this.scheduleFallback();
      return;
    }
    const signal = isStreaming(this.doc, this.adapter);
    const streaming = signal || this.openStreams.size > 0;
    if (!this.cand || this.cand.el !== last) {
      const text = messageText(last, this.adapter);
      const prev = this.cand;
      // a site that swaps the streaming element for a final one at the same place: still live
      const replaced = prev !== null && !prev.el.isConnected && prev.active && prev.ordinal === count - 1;
      this.cand = {
        el: last,
        ordinal: count - 1,
        text,
        lastChange: now,
        active: streaming || replaced || last === this.liveAtStart,
        fresh: !this.history.has(last),
        sawSignal: signal || (replaced && prev.sawSignal),
        seenAt: replaced ? prev.seenAt : now,
      };
    } else {
      const text = messageText(last, this.adapter);
      if (text !== this.cand.text) {
        this.cand.text = text;
        this.cand.lastChange = now;
        if (this.cand.fresh) this.cand.active = true;
      }
      this.cand.ordinal = count - 1;
    }
    const c = this.cand;
    if (streaming) {
      c.active = true;
      if (signal) c.sawSignal = true;
      return;
    }
    if (!c.active) return;
    let text = c.text;
    // The network stream speaks for this reply only if it ended while this reply was the last
    // one (or it is the reply that ended while the page settled). A page can finish drawing a
    // short reply before our stream-start message arrives: the stream still on record then is
    // the previous reply's, and its calls must never be taken for this reply's.
    const ours = this.lastStream !== null && (this.lastStream.endedAt >= c.seenAt || c.el === this.liveAtStart);
    const streamText = ours ? (this.lastStream?.text ?? "") : "";
    // a site that renders <tool> as markup hides the tags: fall back to the stream's own text
    if (!mentionsTool(text) && mentionsTool(streamText)) text = streamText;
    if (!mentionsTool(text)) return;
    const blocks = parseToolBlocks(text);
    const key = blocksKey(blocks);
    const streamAgrees = ours && blocksKey(parseToolBlocks(streamText)) === key;
    const unterminated = blocks.some((b) => b.kind === "error" && b.error === "unterminated");
    let quiet = c.sawSignal || ours ? QUIET_AFTER_SIGNAL_MS : QUIET_NO_SIGNAL_MS;
    if (unterminated) quiet = Math.max(quiet, QUIET_UNTERMINATED_MS);
    const waited = now - c.lastChange;
    if (!streamAgrees && waited < quiet) {
      this.schedule(quiet - waited + 5);
      return;
    }
    const dedupeKey = replyKey(this.session, c.ordinal, key);
    // The calls alone: a late re-render that only changes a broken block or the text around
    // the calls is the same reply.
    const callsKey = JSON.stringify(blocks.flatMap((b) => (b.kind === "call" ? [[b.call.name, b.call.args]] : [])));
    const byElement = this.dispatchedBy.get(c.el) ?? new Set<string>();
    if (this.handled.has(dedupeKey) || byElement.has(callsKey)) return;
    this.handled.add(dedupeKey);
    this.dispatchedBy.set(c.el, byElement.add(callsKey));
    // a new reply grew and ended without the page ever showing its streaming signal: the
    // adapter's signal is stale (or the site has none), and quiet time is what decided
    if (c.fresh && !c.sawSignal && !ours && !this.noSignalSeen) {
      this.noSignalSeen = true;
      this.scheduleHealth(0);
    }
    void this.dispatch(c.el, blocks, dedupeKey);
  }

  /**
   * No reply the adapter recognises is on the page: once the page has been quiet for a while,
   * look for calls in the text the generic fallback can see, and offer the newest — for the
   * person to confirm, never to run on their own.
   */
  private scheduleFallback(): void {
    const now = performance.now();
    if (this.fallbackTimer === null) this.fallbackSince = now;
    else clearTimeout(this.fallbackTimer);
    const wait = Math.max(0, Math.min(FALLBACK_QUIET_MS, this.fallbackSince + FALLBACK_MAX_WAIT_MS - now));
    this.fallbackTimer = setTimeout(() => {
      this.fallbackTimer = null;
      this.evaluateFallback();
    }, wait);
  }

  private evaluateFallback(): void {
    if (!adapterActiveAt(this.adapter, location.host, location.pathname)) return;
    if (assistantMessages(this.doc, this.adapter).length > 0) return;
    if (isStreaming(this.doc, this.adapter) || this.openStreams.size > 0) {
      this.scheduleFallback();
      return;
    }
    const found = fallbackCandidates(this.doc, this.adapter, (e) => this.fallbackKnown.has(e));
    for (const el of found) this.fallbackKnown.add(el);
    const el = found[found.length - 1];
    if (!el) return;
    const blocks = parseToolBlocks(messageText(el, fallbackReader(this.adapter)));
    const key = replyKey(this.session, -1, `fallback:${blocksKey(blocks)}`);
    if (this.handled.has(key)) return;
    this.handled.add(key);
    void this.dispatch(el, blocks, key, "genericFallback");
  }

  private scheduleUserCheck(): void {
    if (this.added.length > MAX_PENDING_ADDED) this.added = this.added.slice(-MAX_PENDING_ADDED);
    if (this.userCheck !== null) return;
    this.userCheck = setTimeout(() => {
      this.userCheck = null;
      void this.checkUserTurns();
    }, USER_CHECK_DELAY_MS);
  }

  /**
   * A message the person sent (not our pasted results) resets the step budget. Only nodes added
   * since the last check are looked at — never the whole chat — and only a while after they
   * appeared, when a site that adds an empty turn first has filled it in.
   */
  private async checkUserTurns(): Promise<void> {
    if (this.userCheck !== null) clearTimeout(this.userCheck);
    this.userCheck = null;
    const added = this.added;
    this.added = [];
    const t0 = performance.now();
    let last: Element | undefined;
    for (const el of added) {
      const turns = userTurnsIn(el, this.adapter);
      if (turns.length > 0) last = turns[turns.length - 1];
    }
    if (this.settings.perfMarks) performance.measure("ground-link:userCheck", { start: t0, end: performance.now(), detail: { added: added.length } });
    const text = last?.textContent ?? "";
    if (text.trim() === "" || text.includes("<tool_result") || [...this.ownMessages].some((m) => sameText(m, text))) return;
    await ask({ type: "resetRounds", session: this.session });
  }

  private async dispatch(el: Element, blocks: ParsedBlock[], key: string, provenance?: Provenance): Promise<void> {
    // a message the person just sent must reset the budget before this reply takes a round
    if (this.added.length > 0 || this.userCheck !== null) await this.checkUserTurns();
    const claim = await ask({ type: "claim", key });
    if (claim.type !== "claimed" || !claim.owner) return;
    const ctx = {
      doc: this.doc,
      adapter: this.adapter,
      settings: this.settings,
      paused: this.paused,
      session: this.session,
      onOwnMessage: (text: string) => this.ownMessages.add(text),
      ...(provenance ? { provenance } : {}),
    };
    const run = new ReplyRun(ctx, el, blocks);
    // found by the generic fallback: nothing happens until the person's own click says this
    // is the model's reply (and then ground-link still asks about each call)
    if (provenance) await run.waitForConfirmation();
    this.ensurePort();
    this.activeRuns++;
    const cfg = await ask({ type: "config" });
    if (cfg.type === "config") {
      this.paused = cfg.paused;
      ctx.settings = cfg.settings;
      ctx.paused = cfg.paused;
    }
    try {
      await run.start();
    } catch (e) {
      if (e instanceof ContextGone) run.card.setFooter(e.message);
      else run.card.setFooter(t("cardError", String(e)));
    } finally {
      this.activeRuns--;
      if (this.activeRuns === 0) this.dropPort();
      // the page as it is after a round (a reply, our results message): check the roles again
      this.scheduleHealth(HEALTH_AFTER_ROUND_MS);
    }
  }

  /** While calls run, a port keeps the worker awake and brings its call events. */
  private ensurePort(): void {
    if (this.port) return;
    try {
      const port = chrome.runtime.connect({ name: EVENTS_PORT });
      port.onMessage.addListener((ev: WorkerEvent) => onWorkerEvent(ev));
      port.onDisconnect.addListener(() => {
        this.port = null;
        if (this.activeRuns > 0) setTimeout(() => this.ensurePort(), 500);
      });
      this.port = port;
    } catch {
      this.port = null;
    }
  }

  private dropPort(): void {
    const p = this.port;
    this.port = null;
    p?.disconnect();
  }

  private async insertPrompt(): Promise<TabReply> {
    const got = await ask({ type: "prompt" });
    if (got.type !== "prompt") return { type: "failed", message: got.type === "failed" ? got.message : "no instructions" };
    const composer = findComposer(this.doc, this.adapter);
    if (!composer) return { type: "failed", message: "no composer found on this page" };
    const ins = insertIntoComposer(composer, got.text);
    return ins.ok ? { type: "ok" } : { type: "failed", message: ins.message };
  }
}

function isOnlyOurs(nodes: NodeList): boolean {
  for (const n of Array.from(nodes)) if (!(n instanceof Element && n.tagName.toLowerCase() === CARD_TAG)) return false;
  return true;
}

function sameText(a: string, b: string): boolean {
  const n = (s: string) => s.replace(/\s+/g, " ").trim();
  return n(a) === n(b);
}

/** What identifies a reply's calls: the parsed blocks, not the rendered text around them. */
export function blocksKey(blocks: ParsedBlock[]): string {
  return JSON.stringify(blocks.map((b) => (b.kind === "call" ? [b.call.name, b.call.args, b.call.reason ?? null] : [b.error])));
}
