/**
 * The content script's line to the service worker. The worker may be asleep or killed at any
 * moment, so a request whose reply is lost is retried, and a call is followed up by id
 * (`await`) rather than sent twice; the call id is chosen here, before the first attempt.
 */

import type { InvalidCallReport } from "../shared/gen/bridge";
import type { CallResult, ContentRequest, FailureKind, Provenance, Reply, ToolCall } from "../shared/protocol";

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export class ContextGone extends Error {}

/** One request to the worker; retries when the worker died before answering. */
export async function ask(req: ContentRequest, attempts = 3): Promise<Reply> {
  let last: unknown;
  for (let i = 0; i < attempts; i++) {
    try {
      const reply = (await chrome.runtime.sendMessage(req)) as Reply | undefined;
      if (reply && typeof reply === "object" && "type" in reply) return reply;
      last = new Error("the service worker gave no answer");
    } catch (e) {
      last = e;
      if (String(e).includes("Extension context invalidated")) throw new ContextGone("the extension was reloaded; reload this page");
    }
    await sleep(150 * (i + 1));
  }
  return { type: "failed", kind: "bad", message: `the extension's service worker did not answer (${String(last)})` };
}

export type CallOutcome = { ok: true; result: CallResult } | { ok: false; kind: FailureKind; message: string };

/**
 * Runs one call through the worker: `exec`, then `await` while the bridge says `pending` (an
 * approval can take minutes; each long-poll stays under the worker's 30 s limit). `replyId` names
 * the model reply the call came from: the bridge runs at most 20 calls of one reply and none
 * after the person denied one, answering the rest `not run` (DESIGN §5.2).
 */
/** The result the bridge writes for a block the parser rejected. */
export async function formatInvalid(report: InvalidCallReport): Promise<{ ok: true; formatted: string } | { ok: false; kind: FailureKind; message: string }> {
  const reply = await ask({ type: "invalidCall", report });
  if (reply.type === "formatted") return { ok: true, formatted: reply.formatted };
  if (reply.type === "failed") return { ok: false, kind: reply.kind, message: reply.message };
  return { ok: false, kind: "bad", message: `unexpected reply "${reply.type}" from the service worker` };
}

export async function runCall(callId: string, session: string, replyId: string, call: ToolCall, provenance?: Provenance): Promise<CallOutcome> {
  const exec: ContentRequest = { type: "exec", callId, session, reply: replyId, call, ...(provenance ? { provenance } : {}) };
  let reply = await ask(exec);
  for (let rounds = 0; rounds < 10_000; rounds++) {
    if (reply.type === "result") {
      if (reply.result.status !== "pending") return { ok: true, result: reply.result };
      reply = await ask({ type: "await", callId });
      continue;
    }
    if (reply.type === "failed") {
      // the worker died between our exec and the bridge: the bridge never saw the call
      if (reply.kind === "unknownCall") {
        reply = await ask(exec);
        if (reply.type === "failed" && reply.kind === "unknownCall") return { ok: false, kind: "bad", message: reply.message };
        continue;
      }
      return { ok: false, kind: reply.kind, message: reply.message };
    }
    return { ok: false, kind: "bad", message: `unexpected reply "${reply.type}" from the service worker` };
  }
  return { ok: false, kind: "bad", message: "the call never finished" };
}
