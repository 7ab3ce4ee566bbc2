/**
 * The HTTP client for the ground-link bridge (DESIGN §6). Only the service worker uses it; it
 * turns every transport and protocol outcome into a typed value that says what went wrong and
 * what to do, so callers never see a raw exception.
 *
 * Requests stay well under Chrome's 30 s limit for an open request in an extension worker:
 * `POST /exec` asks the bridge to answer within `EXEC_WAIT_MS` (then 202 `pending`), and each
 * `GET /calls/{id}` long-poll is bounded by the bridge (≤ 20 s) and by our own timeout.
 */

import { SseReader } from "../shared/decoders";
import type { CallRequest, CallResult, FailureKind, Health } from "../shared/protocol";

export const EXEC_WAIT_MS = 15_000;
const EXEC_TIMEOUT_MS = EXEC_WAIT_MS + 8_000;
const POLL_TIMEOUT_MS = 27_000;
const SHORT_TIMEOUT_MS = 4_000;

export type BridgeOutcome<T> = { ok: true; value: T } | { ok: false; kind: FailureKind; message: string; status?: number };

export type Fetch = (input: string, init?: RequestInit) => Promise<Response>;

export type CallEventState = "waitingApproval" | "running" | "resolved" | "done";

export class BridgeClient {
  constructor(
    readonly baseUrl: string,
    private readonly token: string | null,
    private readonly fetchImpl: Fetch = (i, init) => fetch(i, init),
  ) {}

  private headers(json: boolean): Record<string, string> {
    const h: Record<string, string> = {};
    if (this.token) h.Authorization = `Bearer ${this.token}`;
    if (json) h["Content-Type"] = "application/json";
    return h;
  }

  private async request(method: string, path: string, body: unknown, timeoutMs: number, needsToken = true): Promise<BridgeOutcome<Response>> {
    if (needsToken && !this.token) {
      return { ok: false, kind: "notPaired", message: "no pairing token yet; paste the output of `ground-link token` in the extension popup" };
    }
    let resp: Response;
    try {
      resp = await this.fetchImpl(`${this.baseUrl}${path}`, {
        method,
        headers: this.headers(body !== undefined),
        body: body === undefined ? null : JSON.stringify(body),
        signal: AbortSignal.timeout(timeoutMs),
        cache: "no-store",
        credentials: "omit",
      });
    } catch (e) {
      const why = e instanceof Error && e.name === "TimeoutError" ? "it did not answer in time" : "nothing is listening there";
      return { ok: false, kind: "noBridge", message: `${this.baseUrl}: ${why}; start it with \`ground-link serve --dir <folder>\` (or the ground-link app)` };
    }
    if (resp.status === 401) {
      return { ok: false, kind: "notPaired", status: 401, message: "the bridge did not accept the token (401); paste the current output of `ground-link token` in the popup" };
    }
    if (resp.status === 403) {
      return { ok: false, kind: "http", status: 403, message: "the bridge refused this extension (403: Host or Origin check); check the bridge address in the options" };
    }
    return { ok: true, value: resp };
  }

  async health(): Promise<BridgeOutcome<Health>> {
    const r = await this.request("GET", "/health", undefined, SHORT_TIMEOUT_MS, false);
    if (!r.ok) return r;
    const body = await readJson(r.value);
    if (!r.value.ok || !isRecord(body) || body.app !== "ground-link") {
      return { ok: false, kind: "noBridge", status: r.value.status, message: `${this.baseUrl} answered, but not as ground-link (HTTP ${r.value.status}); check the bridge address` };
    }
    return { ok: true, value: body as unknown as Health };
  }

  async exec(req: CallRequest): Promise<BridgeOutcome<CallResult>> {
    const r = await this.request("POST", "/exec", { ...req, waitMs: req.waitMs ?? EXEC_WAIT_MS }, EXEC_TIMEOUT_MS);
    if (!r.ok) return r;
    return resultFrom(r.value, req.callId);
  }

  async poll(callId: string): Promise<BridgeOutcome<CallResult>> {
    const r = await this.request("GET", `/calls/${encodeURIComponent(callId)}`, undefined, POLL_TIMEOUT_MS);
    if (!r.ok) return r;
    if (r.value.status === 404) {
      return { ok: false, kind: "unknownCall", status: 404, message: `the bridge has no call ${callId}` };
    }
    return resultFrom(r.value, callId);
  }

  async cancel(callId: string): Promise<BridgeOutcome<null>> {
    const r = await this.request("DELETE", `/calls/${encodeURIComponent(callId)}`, undefined, SHORT_TIMEOUT_MS);
    if (!r.ok) return r;
    if (!r.value.ok) return { ok: false, kind: "http", status: r.value.status, message: `cancel failed (HTTP ${r.value.status})` };
    return { ok: true, value: null };
  }

  async prompt(lang: "en" | "zh"): Promise<BridgeOutcome<string>> {
    const r = await this.request("GET", `/prompt?lang=${lang}`, undefined, SHORT_TIMEOUT_MS);
    if (!r.ok) return r;
    if (!r.value.ok) return { ok: false, kind: "http", status: r.value.status, message: `GET /prompt failed (HTTP ${r.value.status})` };
    const raw = await r.value.text();
    try {
      const j = JSON.parse(raw) as unknown;
      if (isRecord(j)) for (const k of ["prompt", "text", "instructions"]) if (typeof j[k] === "string") return { ok: true, value: j[k] as string };
      if (typeof j === "string") return { ok: true, value: j };
    } catch {
      // plain text
    }
    return { ok: true, value: raw };
  }

  /**
   * Follows `GET /events` until `signal` aborts or the stream ends; each event about a call is
   * reported with the call id and a card state. Resolves with why it stopped.
   */
  async events(onEvent: (callId: string, state: CallEventState) => void, signal: AbortSignal): Promise<BridgeOutcome<null>> {
    if (!this.token) return { ok: false, kind: "notPaired", message: "no pairing token yet" };
    let resp: Response;
    try {
      resp = await this.fetchImpl(`${this.baseUrl}/events`, { headers: { ...this.headers(false), Accept: "text/event-stream" }, signal, cache: "no-store", credentials: "omit" });
    } catch (e) {
      return { ok: false, kind: "noBridge", message: `events stream: ${String(e)}` };
    }
    if (!resp.ok || !resp.body) return { ok: false, kind: resp.status === 401 ? "notPaired" : "http", status: resp.status, message: `GET /events: HTTP ${resp.status}` };
    const sse = new SseReader((e) => {
      const ev = callEventFrom(e.event, e.data);
      if (ev) onEvent(ev.callId, ev.state);
    });
    const reader = resp.body.getReader();
    const td = new TextDecoder();
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        sse.push(td.decode(value, { stream: true }));
      }
    } catch (e) {
      if (signal.aborted) return { ok: true, value: null };
      return { ok: false, kind: "noBridge", message: `events stream broke: ${String(e)}` };
    }
    sse.finish();
    return { ok: false, kind: "noBridge", message: "events stream ended" };
  }
}

async function readJson(resp: Response): Promise<unknown> {
  try {
    return await resp.json();
  } catch {
    return undefined;
  }
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

const STATUSES = new Set(["success", "error", "denied", "timeout", "pending"]);

async function resultFrom(resp: Response, callId: string | undefined): Promise<BridgeOutcome<CallResult>> {
  const body = await readJson(resp);
  if (resp.status === 202) {
    const id = isRecord(body) && typeof body.callId === "string" ? body.callId : callId;
    if (!id) return { ok: false, kind: "bad", status: 202, message: "the bridge said pending but gave no call id" };
    return { ok: true, value: pendingResult(id) };
  }
  if (!resp.ok) {
    const detail = isRecord(body) && typeof body.error === "string" ? `: ${body.error}` : "";
    return { ok: false, kind: resp.status === 400 || resp.status === 413 ? "bad" : "http", status: resp.status, message: `the bridge answered HTTP ${resp.status}${detail}` };
  }
  if (!isRecord(body) || typeof body.status !== "string" || !STATUSES.has(body.status)) {
    return { ok: false, kind: "bad", status: resp.status, message: "the bridge's answer is not a result object" };
  }
  const r: CallResult = {
    status: body.status as CallResult["status"],
    output: typeof body.output === "string" ? body.output : "",
    formatted: typeof body.formatted === "string" ? body.formatted : "",
    callId: typeof body.callId === "string" ? body.callId : (callId ?? ""),
    decision: isRecord(body.decision) ? (body.decision as unknown as CallResult["decision"]) : null,
    durationMs: typeof body.durationMs === "number" ? body.durationMs : 0,
    truncated: body.truncated === true,
  };
  return { ok: true, value: r };
}

export function pendingResult(callId: string): CallResult {
  return { status: "pending", output: "", formatted: "", callId, decision: null, durationMs: 0, truncated: false };
}

/**
 * A card state from one `/events` event. The event's type may be in the SSE `event:` field or in
 * the JSON's `type`/`event`/`state`/`status`; anything unrecognised is ignored.
 */
export function callEventFrom(eventName: string, data: string): { callId: string; state: CallEventState } | null {
  let j: unknown;
  try {
    j = JSON.parse(data);
  } catch {
    return null;
  }
  if (!isRecord(j)) return null;
  const inner = isRecord(j.call) ? j.call : isRecord(j.data) ? j.data : j;
  const callId = [j.callId, inner.callId, j.id, inner.id].find((v): v is string => typeof v === "string");
  if (!callId) return null;
  const words = [eventName, j.type, j.event, j.state, j.kind, j.status, inner.status].filter((v): v is string => typeof v === "string").join(" ").toLowerCase();
  // most specific first: "approvalResolved" is a resolution, not a wait
  if (/resolved/.test(words)) return { callId, state: "resolved" };
  if (/done|finished|result|success|denied|error|timeout|complete/.test(words)) return { callId, state: "done" };
  if (/approval|pending|ask/.test(words)) return { callId, state: "waitingApproval" };
  if (/running|started|start/.test(words)) return { callId, state: "running" };
  return null;
}
