/**
 * Page tools content script (isolated world, every frame, document_start) on the sites where
 * WebMCP support is on: takes the polyfill's private port (or uses the native API), adds the
 * matching skills' tools, reports the frame's sanitised list to the worker (again on every
 * `toolchange`, debounced) and runs calls the side panel sends, with a deadline and cancel.
 *
 * It answers only the extension (chrome.runtime messages); the page can reach it only through
 * the port, and over the port it can only answer calls we made.
 */

import { HANDSHAKE_EVENT, READY_EVENT, DEFAULT_CALL_TIMEOUT_MS, type FrameReport } from "../shared/webmcp";
import type { Skill } from "../shared/skills";
import type { Reply, TabReply, TabRequest } from "../shared/protocol";
import { FrameTools, nativeApi, PolyfillApi } from "./page-tools";

(() => {
  const w = window as Window & { __groundLinkPageTools?: boolean };
  if (w.__groundLinkPageTools) return;
  w.__groundLinkPageTools = true;

  const native = nativeApi(document);
  const frame = new FrameTools(document, location.origin, native, []);
  // short: several registrations in one go become one report, and the panel still follows within ~50 ms
  const CHANGE_DEBOUNCE_MS = 25;
  let reportTimer: ReturnType<typeof setTimeout> | undefined;

  if (!native) {
    // the polyfill hands over its port once; the first one wins, later ones (a page imitating
    // the handshake) are ignored
    const take = (e: Event) => {
      if (frame.api) return;
      const port = (e as MessageEvent).ports?.[0];
      if (!port) return;
      e.preventDefault();
      frame.api = new PolyfillApi(port);
      frame.api.onChange(scheduleReport);
      scheduleReport();
    };
    document.addEventListener(HANDSHAKE_EVENT, take, true);
    document.dispatchEvent(new Event(READY_EVENT));
  } else native.onChange(scheduleReport);

  const send = (req: { type: "pageTools"; report: Omit<FrameReport, "frameId"> } | { type: "pageToolsGone" } | { type: "skillsFor"; url: string }): Promise<Reply | undefined> =>
    (chrome.runtime.sendMessage(req) as Promise<Reply | undefined>).catch(() => undefined);

  async function loadSkills(): Promise<void> {
    const r = await send({ type: "skillsFor", url: location.href });
    if (r?.type === "skills") frame.skills = r.skills;
  }

  async function build(): Promise<Omit<FrameReport, "frameId">> {
    const l = await frame.list();
    return { url: location.href, origin: location.origin, api: frame.api?.kind ?? "none", tools: l.tools, skills: l.skills, problems: l.problems, at: Date.now() };
  }

  function scheduleReport(): void {
    clearTimeout(reportTimer);
    reportTimer = setTimeout(() => void build().then((report) => send({ type: "pageTools", report })), CHANGE_DEBOUNCE_MS);
  }

  chrome.runtime.onMessage.addListener((msg: TabRequest, _sender, reply: (r: TabReply) => void) => {
    if (msg?.type === "webmcpList") {
      void loadSkills()
        .then(build)
        .then((report) => {
          void send({ type: "pageTools", report });
          reply({ type: "pageTools", report });
        });
      return true;
    }
    if (msg?.type === "webmcpCall") {
      const timeout = Number.isInteger(msg.timeoutMs) && msg.timeoutMs > 0 && msg.timeoutMs <= 120_000 ? msg.timeoutMs : DEFAULT_CALL_TIMEOUT_MS;
      // a call approved for one origin never runs in whatever document the frame holds now
      if (typeof msg.expectOrigin === "string" && msg.expectOrigin !== location.origin) {
        reply({ type: "callOutcome", outcome: { ok: false, error: `the page changed: this frame is now at ${location.origin}, not ${msg.expectOrigin}; nothing was run`, ms: 0 } });
        return false;
      }
      void frame.call(msg.callId, msg.name, msg.input, timeout).then((outcome) => reply({ type: "callOutcome", outcome }));
      return true;
    }
    if (msg?.type === "webmcpCancel") {
      reply(frame.cancel(msg.callId) ? { type: "ok" } : { type: "failed", message: "no such call running in this frame" });
      return false;
    }
    return false;
  });

  const start = () => void loadSkills().then(scheduleReport);
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start, { once: true });
  else start();
  addEventListener("pagehide", () => void send({ type: "pageToolsGone" }));
})();
