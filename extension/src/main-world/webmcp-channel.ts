/**
 * The polyfill's side of the channel to the isolated content script: a private MessagePort
 * handed over once at document_start (before any page script runs, so no page listener can catch
 * it there). It answers only `list`, `call` and `cancel` from the content script; it never asks
 * the extension for anything, and it has nothing to ask with (no ids, no `chrome.*`).
 */

import { HANDSHAKE_EVENT, READY_EVENT, stringifyResult, type FromChannel } from "../shared/webmcp";
import type { PolyfillModelContext } from "./webmcp-polyfill";

export function serveChannel(ctx: PolyfillModelContext, port: MessagePort): void {
  const running = new Map<number, AbortController>();
  const send = (m: FromChannel) => {
    try {
      port.postMessage(m);
    } catch {
      // an unclonable value was already turned into a string; nothing else can fail here
    }
  };
  const list = async () => send({ type: "tools", tools: await ctx.getTools() });
  ctx.addEventListener("toolchange", () => send({ type: "changed" }));
  port.onmessage = (e: MessageEvent) => {
    const m = e.data as { type?: unknown; id?: unknown; name?: unknown; input?: unknown };
    if (m?.type === "list") void list();
    else if (m?.type === "cancel" && typeof m.id === "number") running.get(m.id)?.abort();
    else if (m?.type === "call" && typeof m.id === "number" && typeof m.name === "string") {
      const id = m.id;
      const ac = new AbortController();
      running.set(id, ac);
      ctx
        .executeTool({ name: m.name }, m.input, { signal: ac.signal })
        .then(
          (value) => send({ type: "result", id, ok: true, value: value === null ? null : stringifyResult(value) }),
          (err: unknown) => send({ type: "result", id, ok: false, error: err instanceof Error ? `${err.name}: ${err.message}` : String(err) }),
        )
        .finally(() => running.delete(id));
    }
  };
}

/**
 * Hands `port` to the content script: now, for a content script already listening, and again
 * when it says it is ready (it may start after us). The content script keeps the first port.
 */
export function handOverPort(doc: Document, port: MessagePort): void {
  let given = false;
  const give = () => {
    if (given) return;
    const ev = new MessageEvent(HANDSHAKE_EVENT, { ports: [port], cancelable: true });
    doc.dispatchEvent(ev);
    // a listener that took it marks the event; until then, wait for READY
    if ((ev as MessageEvent & { defaultPrevented: boolean }).defaultPrevented) given = true;
  };
  doc.addEventListener(READY_EVENT, give);
  give();
}
