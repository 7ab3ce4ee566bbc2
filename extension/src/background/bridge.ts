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
import { SIGNING, TOOL_NAMES, type AdapterProblems, type AdapterReport, type InvalidCallReport, type PanelCallAudited, type PanelCallReport } from "../shared/gen/bridge";
import type { BridgeEvent, CallRequest, CallResult, CallStatus, FailureKind, Health, Risk, ToolName } from "../shared/protocol";
import { answerMac, eventMac, importKey, same, sha256Hex, signRequest } from "./sign";

export const EXEC_WAIT_MS = 15_000;
const EXEC_TIMEOUT_MS = EXEC_WAIT_MS + 8_000;
/** Each long-poll asks the bridge to answer within this (it caps it at 20 s). */
export const POLL_WAIT_MS = 20_000;
const POLL_AFTER_DUPLICATE_MS = 5_000;
const SHORT_TIMEOUT_MS = 4_000;

export type BridgeOutcome<T> = { ok: true; value: T } | { ok: false; kind: FailureKind; message: string; status?: number };

export type Fetch = (input: string, init?: RequestInit) => Promise<Response>;

/** An answer read in full and — when we signed the request — proven to come from the paired bridge. */
interface Answer {
  status: number;
  contentType: string;
  text: string;
}

export class BridgeClient {
  private key: Promise<CryptoKey> | null;

  constructor(
    readonly baseUrl: string,
    token: string | null,
    private readonly fetchImpl: Fetch = (i, init) => fetch(i, init),
  ) {
    // The raw key stays here: requests carry only MACs made with it (DESIGN §6).
    this.key = token ? importKey(token) : null;
  }

  /** Whether there is a pairing key to sign with (requests that need one are not sent without). */
  get paired(): boolean {
    return this.key !== null;
  }

  get port(): number {
    const u = new URL(this.baseUrl);
    return Number(u.port || 80);
  }

  private impostor(): { ok: false; kind: FailureKind; message: string } {
    return { ok: false, kind: "impostor", message: `something else is on port ${this.port}: its answer is not signed with the pairing key, so it was dropped; stop that program, or move ground-link and this extension to another port` };
  }

  /**
   * One signed request and its answer, read in full and checked: an answer without a valid
   * signature over our nonce, its status and its body never reaches the caller. A 401 without
   * one is the real bridge refusing a key it no longer knows (or a squatter pretending so):
   * either way, pairing again is the remedy, and nothing was learnt from it.
   */
  private async request(method: string, path: string, body: unknown, timeoutMs: number, needsToken = true): Promise<BridgeOutcome<Answer>> {
    if (needsToken && !this.key) {
      return { ok: false, kind: "notPaired", message: "no pairing key yet; paste the output of `ground-link token` in the extension popup" };
    }
    const url = new URL(`${this.baseUrl}${path}`);
    const text = body === undefined ? "" : JSON.stringify(body);
    const headers: Record<string, string> = {};
    if (body !== undefined) headers["Content-Type"] = "application/json";
    let nonce: string | null = null;
    if (this.key) {
      const s = await signRequest(await this.key, method, url, text);
      Object.assign(headers, s.headers);
      nonce = s.nonce;
    }
    let answer: Answer;
    let signature: string | null;
    try {
      const resp = await this.fetchImpl(url.toString(), {
        method,
        headers,
        body: body === undefined ? null : text,
        signal: AbortSignal.timeout(timeoutMs),
        cache: "no-store",
        credentials: "omit",
      });
      signature = resp.headers.get(SIGNING.headerAnswer);
      answer = { status: resp.status, contentType: resp.headers.get("content-type") ?? "", text: await resp.text() };
    } catch (e) {
      const why = e instanceof Error && e.name === "TimeoutError" ? "it did not answer in time" : "nothing is listening there";
      return { ok: false, kind: "noBridge", message: `${this.baseUrl}: ${why}; start it with \`ground-link serve --dir <folder>\` (or the ground-link app)` };
    }
    if (this.key && nonce !== null) {
      const want = await answerMac(await this.key, nonce, answer.status, await sha256Hex(answer.text));
      if (signature === null || !same(want, signature)) {
        if (answer.status === 401) {
          return { ok: false, kind: "notPaired", status: 401, message: `the answer on port ${this.port} is not signed with this pairing key: the key changed (paste the current output of \`ground-link token\` in the popup), or something else is on port ${this.port}` };
        }
        return this.impostor();
      }
    }
    if (answer.status === 401) {
      return { ok: false, kind: "notPaired", status: 401, message: "the bridge did not accept the pairing key (401); paste the current output of `ground-link token` in the popup" };
    }
    if (answer.status === 403) {
      return { ok: false, kind: "http", status: 403, message: "the bridge refused this extension (403: Host or Origin check); check the bridge address in the options" };
    }
    return { ok: true, value: answer };
  }

  async health(): Promise<BridgeOutcome<Health>> {
    const r = await this.request("GET", "/health", undefined, SHORT_TIMEOUT_MS, false);
    if (!r.ok) return r;
    const body = readJson(r.value);
    if (r.value.status !== 200 || !isRecord(body) || body.app !== "ground-link") {
      return { ok: false, kind: "noBridge", status: r.value.status, message: `${this.baseUrl} answered, but not as ground-link (HTTP ${r.value.status}); check the bridge address` };
    }
    return { ok: true, value: body as unknown as Health };
  }

  /**
   * `POST /exec`. A 409 for our own call id means the bridge already has this call (a worker
   * that died after sending it, a retried message): follow that call instead of failing it.
   */
  async exec(req: CallRequest): Promise<BridgeOutcome<CallResult>> {
    const r = await this.request("POST", "/exec", { ...req, waitMs: req.waitMs ?? EXEC_WAIT_MS }, EXEC_TIMEOUT_MS);
    if (!r.ok) return r;
    if (r.value.status === 409 && req.callId) {
      return this.poll(req.callId, POLL_AFTER_DUPLICATE_MS);
    }
    return resultFrom(r.value, req.callId ?? undefined);
  }

  /** `GET /calls/{id}?waitMs=…`: the result, or `pending` when the bridge's wait ran out. */
  async poll(callId: string, waitMs = POLL_WAIT_MS): Promise<BridgeOutcome<CallResult>> {
    const r = await this.request("GET", `/calls/${encodeURIComponent(callId)}?waitMs=${waitMs}`, undefined, waitMs + 7_000);
    if (!r.ok) return r;
    if (r.value.status === 404) {
      return { ok: false, kind: "unknownCall", status: 404, message: `the bridge has no call ${callId}` };
    }
    return resultFrom(r.value, callId);
  }

  /**
   * `DELETE /calls/{id}`: a call waiting for approval ends as denied ("cancelled by the client");
   * its result reaches whoever long-polls it. 200 (the denied result) and 202 (not over yet)
   * both mean the bridge took the cancel; 409 means the call had already finished, which is not
   * a failure either: its real result is on its way.
   */
  async cancel(callId: string): Promise<BridgeOutcome<"cancelled" | "finished">> {
    const r = await this.request("DELETE", `/calls/${encodeURIComponent(callId)}`, undefined, SHORT_TIMEOUT_MS + 5_000);
    if (!r.ok) return r;
    const s = r.value.status;
    if (s === 200 || s === 202) return { ok: true, value: "cancelled" };
    if (s === 409) return { ok: true, value: "finished" };
    if (s === 404) return { ok: false, kind: "unknownCall", status: 404, message: `the bridge has no call ${callId} to cancel` };
    return { ok: false, kind: "http", status: s, message: `cancel failed (HTTP ${s}${errorSuffix(readJson(r.value))})` };
  }

  /** `POST /adapter-health`: a site's adapter problems (an empty list: the site is fine again). */
  async reportAdapterHealth(report: AdapterReport): Promise<BridgeOutcome<AdapterProblems>> {
    const r = await this.request("POST", "/adapter-health", report, SHORT_TIMEOUT_MS);
    if (!r.ok) return r;
    const body = readJson(r.value);
    if (r.value.status !== 200 || !isRecord(body) || !Array.isArray(body.adapters)) {
      return { ok: false, kind: "http", status: r.value.status, message: `POST /adapter-health failed (HTTP ${r.value.status}${errorSuffix(body)})` };
    }
    return { ok: true, value: body as unknown as AdapterProblems };
  }

  /**
   * `POST /panel-calls`: one finished side-panel call for the audit log (DESIGN §12). The bridge
   * answers 200 only once the line is written; anything else says why it was not. One attempt:
   * the panel shows the reason instead of retrying.
   */
  async reportPanelCall(report: PanelCallReport): Promise<BridgeOutcome<PanelCallAudited>> {
    const r = await this.request("POST", "/panel-calls", report, SHORT_TIMEOUT_MS);
    if (!r.ok) return r;
    const body = readJson(r.value);
    if (r.value.status !== 200 || !isRecord(body) || body.callId !== report.callId) {
      return { ok: false, kind: r.value.status === 400 || r.value.status === 413 ? "bad" : "http", status: r.value.status, message: `POST /panel-calls failed (HTTP ${r.value.status}${errorSuffix(body)})` };
    }
    return { ok: true, value: { callId: report.callId } };
  }

  /**
   * `POST /invalid-call`: the result a `<tool>` block the parser rejected gets, written by the
   * core like every other result (the detail quotes the model's text, so the core escapes it).
   */
  async formatInvalid(report: InvalidCallReport): Promise<BridgeOutcome<string>> {
    const r = await this.request("POST", "/invalid-call", report, SHORT_TIMEOUT_MS);
    if (!r.ok) return r;
    const body = readJson(r.value);
    if (r.value.status !== 200 || !isRecord(body) || typeof body.formatted !== "string") {
      return { ok: false, kind: r.value.status === 400 || r.value.status === 413 ? "bad" : "http", status: r.value.status, message: `POST /invalid-call failed (HTTP ${r.value.status}${errorSuffix(body)})` };
    }
    return { ok: true, value: body.formatted };
  }

  /** `GET /prompt?lang=…`: the instruction text, served as text/plain. */
  async prompt(lang: "en" | "zh"): Promise<BridgeOutcome<string>> {
    const r = await this.request("GET", `/prompt?lang=${lang}`, undefined, SHORT_TIMEOUT_MS);
    if (!r.ok) return r;
    if (r.value.status !== 200) return { ok: false, kind: "http", status: r.value.status, message: `GET /prompt failed (HTTP ${r.value.status}${errorSuffix(readJson(r.value))})` };
    const type = r.value.contentType;
    if (!/^text\/plain\b/i.test(type)) return { ok: false, kind: "bad", status: r.value.status, message: `GET /prompt answered ${type || "no content type"}, not text/plain; is that ground-link?` };
    const text = r.value.text;
    if (!text.includes("<tool>")) return { ok: false, kind: "bad", status: r.value.status, message: "GET /prompt gave text without the <tool> format; is that ground-link?" };
    return { ok: true, value: text };
  }

  /**
   * Follows `GET /events` until `signal` aborts or the stream ends. `onOpen` fires once the bridge
   * answered 200 — from then on it has subscribed us, so no event of a later call is missed. Each
   * well-formed event is handed to `onEvent`; anything else is skipped. Resolves with why it
   * stopped.
   */
  async events(onEvent: (event: BridgeEvent) => void, signal: AbortSignal, onOpen: () => void = () => undefined): Promise<BridgeOutcome<null>> {
    if (!this.key) return { ok: false, kind: "notPaired", message: "no pairing key yet" };
    const key = await this.key;
    const url = new URL(`${this.baseUrl}/events`);
    const signed = await signRequest(key, "GET", url, "");
    let resp: Response;
    try {
      resp = await this.fetchImpl(url.toString(), { headers: { ...signed.headers, Accept: "text/event-stream" }, signal, cache: "no-store", credentials: "omit" });
    } catch (e) {
      return { ok: false, kind: "noBridge", message: `events stream: ${String(e)}` };
    }
    // the stream's header is signed over our nonce and its status; each event over its place
    const want = await answerMac(key, signed.nonce, resp.status, SIGNING.streamBody);
    const got = resp.headers.get(SIGNING.headerAnswer);
    if (got === null || !same(want, got)) {
      void resp.body?.cancel().catch(() => undefined);
      if (resp.status === 401) return { ok: false, kind: "notPaired", status: 401, message: `GET /events: the answer on port ${this.port} is not signed with this pairing key` };
      return this.impostor();
    }
    if (!resp.ok || !resp.body) return { ok: false, kind: "http", status: resp.status, message: `GET /events: HTTP ${resp.status}` };
    if (!/^text\/event-stream\b/i.test(resp.headers.get("content-type") ?? "")) {
      void resp.body.cancel().catch(() => undefined);
      return { ok: false, kind: "bad", status: resp.status, message: "GET /events did not answer with an event stream" };
    }
    onOpen();
    // events are checked one at a time, in order: a MAC is async, and the count must not skip
    let seq = 0;
    let forged = false;
    let checked = Promise.resolve();
    const sse = new SseReader((e) => {
      checked = checked.then(async () => {
        if (forged) return;
        const mac = await eventMac(key, signed.nonce, seq, e.data);
        seq++;
        if (!same(mac, e.id)) {
          forged = true;
          return;
        }
        const ev = bridgeEventFrom(e.event, e.data);
        if (ev) onEvent(ev);
      });
    });
    const reader = resp.body.getReader();
    const td = new TextDecoder();
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        sse.push(td.decode(value, { stream: true }));
        await checked;
        if (forged) {
          void reader.cancel().catch(() => undefined);
          return this.impostor();
        }
      }
    } catch (e) {
      if (signal.aborted) return { ok: true, value: null };
      return { ok: false, kind: "noBridge", message: `events stream broke: ${String(e)}` };
    }
    sse.finish();
    await checked;
    if (forged) return this.impostor();
    return { ok: false, kind: "noBridge", message: "events stream ended" };
  }
}

function readJson(answer: Answer): unknown {
  try {
    return JSON.parse(answer.text) as unknown;
  } catch {
    return undefined;
  }
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** The statuses a call ends with (a result body, a `done` event). */
const FINAL = new Set(["success", "error", "denied", "timeout"]);

/**
 * A result object from `POST /exec` or `GET /calls/{id}`: 200 with a final result, or 202
 * `{"status":"pending","callId"}`. A result for another call than the one asked about, or a
 * shape that is not the bridge's, is an error rather than something to paste into the chat.
 */
function resultFrom(resp: Answer, callId: string | undefined): BridgeOutcome<CallResult> {
  const body = readJson(resp);
  if (resp.status === 202) {
    if (!isRecord(body) || body.status !== "pending" || typeof body.callId !== "string" || body.callId === "") {
      return { ok: false, kind: "bad", status: 202, message: "the bridge answered 202 without {\"status\":\"pending\",\"callId\"}" };
    }
    if (callId !== undefined && body.callId !== callId) {
      return { ok: false, kind: "bad", status: 202, message: `the bridge answered about call ${body.callId}, not ${callId}` };
    }
    return { ok: true, value: pendingResult(body.callId) };
  }
  if (resp.status !== 200) {
    const detail = errorSuffix(body);
    return { ok: false, kind: resp.status === 400 || resp.status === 413 ? "bad" : "http", status: resp.status, message: `the bridge answered HTTP ${resp.status}${detail}` };
  }
  if (!isRecord(body) || typeof body.status !== "string" || !FINAL.has(body.status) || typeof body.formatted !== "string" || typeof body.callId !== "string") {
    return { ok: false, kind: "bad", status: resp.status, message: "the bridge's answer is not a result object" };
  }
  if (callId !== undefined && body.callId !== callId) {
    return { ok: false, kind: "bad", status: resp.status, message: `the bridge answered with the result of call ${body.callId}, not ${callId}` };
  }
  const r: CallResult = {
    status: body.status as CallResult["status"],
    output: typeof body.output === "string" ? body.output : "",
    formatted: body.formatted,
    callId: body.callId,
    decision: isRecord(body.decision) ? (body.decision as unknown as CallResult["decision"]) : null,
    durationMs: typeof body.durationMs === "number" ? body.durationMs : 0,
    truncated: body.truncated === true,
  };
  return { ok: true, value: r };
}

export function pendingResult(callId: string): CallResult {
  return { status: "pending", output: "", formatted: "", callId, decision: null, durationMs: 0, truncated: false };
}

const RISKS = new Set(["safe", "moderate", "dangerous"]);

function isToolName(name: string): name is ToolName {
  return (TOOL_NAMES as readonly string[]).includes(name);
}
const MAX_CALL_ID = 128;

/**
 * One `/events` event, exactly as the bridge sends it: an unnamed SSE event whose data is one JSON
 * object tagged by `type` — `pending` {callId, tool, risk, session}, `resolved` {callId, allowed},
 * `done` {callId, status}. Anything else (another event name, other JSON, a field of the wrong
 * type) is ignored rather than guessed at: a card only changes on an event it fully understood.
 */
export function bridgeEventFrom(eventName: string, data: string): BridgeEvent | null {
  if (eventName !== "message") return null;
  let j: unknown;
  try {
    j = JSON.parse(data);
  } catch {
    return null;
  }
  if (!isRecord(j)) return null;
  const callId = j.callId;
  if (typeof callId !== "string" || callId === "" || callId.length > MAX_CALL_ID) return null;
  switch (j.type) {
    case "pending":
      if (typeof j.tool !== "string" || !isToolName(j.tool) || typeof j.risk !== "string" || !RISKS.has(j.risk)) return null;
      if (j.session !== null && j.session !== undefined && typeof j.session !== "string") return null;
      return { type: "pending", callId, tool: j.tool, risk: j.risk as Risk, session: typeof j.session === "string" ? j.session : null };
    case "resolved":
      if (typeof j.allowed !== "boolean") return null;
      return { type: "resolved", callId, allowed: j.allowed };
    case "done":
      if (typeof j.status !== "string" || !FINAL.has(j.status)) return null;
      return { type: "done", callId, status: j.status as Exclude<CallStatus, "pending"> };
    default:
      return null;
  }
}

/** `: <the bridge's error message>`, or nothing when the body has none. */
function errorSuffix(body: unknown): string {
  return isRecord(body) && typeof body.error === "string" ? `: ${body.error}` : "";
}
