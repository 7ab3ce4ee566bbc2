// The worker's bridge client against scripted HTTP answers: every protocol outcome of DESIGN §6
// becomes a typed value that says what went wrong and what to do.
import { describe, expect, it } from "vitest";
import { BridgeClient, EXEC_WAIT_MS, POLL_WAIT_MS, bridgeEventFrom, type Fetch } from "../src/background/bridge";
import { answerMac, eventMac, importKey, requestMac, sha256Hex } from "../src/background/sign";
import { SIGNING } from "../src/shared/gen/bridge";

interface Seen {
  url: string;
  init: RequestInit | undefined;
}

const TOKEN = "tok-0123456789abcdef0123456789abcdef";

/**
 * A scripted bridge that signs its answers with the pairing key, over the nonce of the request
 * it answers, like the real one (`sign`: false makes it a squatter that cannot).
 */
function fake(respond: (url: string, init?: RequestInit) => Response | Promise<Response>, signWith: string | null = TOKEN): { fetch: Fetch; seen: Seen[] } {
  const seen: Seen[] = [];
  return {
    seen,
    fetch: async (url, init) => {
      seen.push({ url, init });
      const r = await respond(url, init);
      if (signWith === null) return r;
      const nonce = (init?.headers as Record<string, string> | undefined)?.[SIGNING.headerNonce] ?? "";
      const text = await r.text();
      const headers = new Headers(r.headers);
      headers.set(SIGNING.headerAnswer, await answerMac(await importKey(signWith), nonce, r.status, await sha256Hex(text)));
      return new Response(r.status === 204 ? null : text, { status: r.status, headers });
    },
  };
}

const json = (status: number, body: unknown) => new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json" } });
const RESULT = { status: "success", output: "1: hi", formatted: '<tool_result name="read_file" status="success">…</tool_result>', callId: "c1", decision: null, durationMs: 3, truncated: false };

describe("BridgeClient", () => {
  it("POST /exec sends the signed call with session, id, reply and waitMs, and never the key", async () => {
    const f = fake(() => json(200, RESULT));
    const c = new BridgeClient("http://127.0.0.1:18080", TOKEN, f.fetch);
    const r = await c.exec({ name: "read_file", args: { path: "a" }, session: "chat.deepseek.com:x", callId: "c1", reply: "r1" });
    expect(r).toEqual({ ok: true, value: RESULT });
    expect(f.seen[0]?.url).toBe("http://127.0.0.1:18080/exec");
    const headers = f.seen[0]?.init?.headers as Record<string, string>;
    expect(headers.Authorization).toBeUndefined();
    expect(JSON.stringify(f.seen[0])).not.toContain(TOKEN);
    const body = String(f.seen[0]?.init?.body);
    expect(JSON.parse(body)).toEqual({ name: "read_file", args: { path: "a" }, session: "chat.deepseek.com:x", callId: "c1", reply: "r1", waitMs: EXEC_WAIT_MS });
    // the signature is the bridge's check: method, path, host:port, nonce, time, body digest
    const want = await requestMac(await importKey(TOKEN), { method: "POST", path: "/exec", host: "127.0.0.1:18080", nonce: headers[SIGNING.headerNonce] ?? "", timeMs: Number(headers[SIGNING.headerTime]), bodyDigest: await sha256Hex(body) });
    expect(headers[SIGNING.headerSignature]).toBe(want);
    expect(EXEC_WAIT_MS).toBeLessThan(30_000);
  });

  // What a process squatting on the port can answer: nothing it says is taken as the bridge's.
  const squats: [string, () => Response, string | null, string][] = [
    ["unsigned result", () => json(200, RESULT), null, "impostor"],
    ["result signed with another key", () => json(200, RESULT), "another key entirely", "impostor"],
    ["unsigned 202", () => json(202, { status: "pending", callId: "c1" }), null, "impostor"],
    ["unsigned 500", () => json(500, { error: "x" }), null, "impostor"],
    ["unsigned 401", () => json(401, { error: "x" }), null, "notPaired"],
  ];
  for (const [name, respond, key, want] of squats) {
    it(`a squatter's ${name} is dropped (${want})`, async () => {
      const r = await new BridgeClient("http://127.0.0.1:18080", TOKEN, fake(respond, key).fetch).exec({ name: "ls", args: {}, callId: "c1" });
      expect(r.ok ? "accepted" : r.kind).toBe(want);
      if (!r.ok) expect(r.message).toContain("port 18080");
    });
  }

  it("an answer signed over another request's nonce is dropped (no replaying old answers)", async () => {
    const old = "0".repeat(32);
    const forged = async () => {
      const text = JSON.stringify(RESULT);
      return new Response(text, { status: 200, headers: { [SIGNING.headerAnswer]: await answerMac(await importKey(TOKEN), old, 200, await sha256Hex(text)) } });
    };
    const r = await new BridgeClient("http://127.0.0.1:18080", TOKEN, fake(forged, null).fetch).exec({ name: "ls", args: {}, callId: "c1" });
    expect(r.ok ? "accepted" : r.kind).toBe("impostor");
  });

  it("health with the key is signed; unpaired health carries nothing secret", async () => {
    const f = fake(() => json(200, { status: "ok", app: "ground-link", version: "0.1.0" }), null);
    await new BridgeClient("http://127.0.0.1:18080", null, f.fetch).health();
    const h = f.seen[0]?.init?.headers as Record<string, string>;
    expect(h.Authorization).toBeUndefined();
    expect(h[SIGNING.headerSignature]).toBeUndefined();
    const g = fake(() => json(200, { status: "ok", app: "ground-link", version: "0.1.0" }), null);
    const r = await new BridgeClient("http://127.0.0.1:18080", TOKEN, g.fetch).health();
    expect(r.ok ? "" : r.kind).toBe("impostor");
    expect(JSON.stringify(g.seen)).not.toContain(TOKEN);
    expect((g.seen[0]?.init?.headers as Record<string, string>)[SIGNING.headerSignature]).toMatch(/^[0-9a-f]{64}$/);
  });

  const outcomes: [string, () => Response | Promise<Response>, string][] = [
    ["202 pending", () => json(202, { status: "pending", callId: "c1" }), "pending"],
    ["202 for another call", () => json(202, { status: "pending", callId: "c2" }), "bad"],
    ["202 without a call id", () => json(202, { status: "pending" }), "bad"],
    ["200 with status pending", () => json(200, { ...RESULT, status: "pending" }), "bad"],
    ["200 for another call", () => json(200, { ...RESULT, callId: "c2" }), "bad"],
    ["200 without formatted", () => json(200, { ...RESULT, formatted: undefined }), "bad"],
    ["500", () => json(500, { error: "boom" }), "http"],
    ["401", () => json(401, {}), "notPaired"],
    ["403", () => json(403, {}), "http"],
    ["400", () => json(400, { error: "missing name" }), "bad"],
    ["413", () => json(413, {}), "bad"],
    ["not a result", () => json(200, { hello: 1 }), "bad"],
    ["connection refused", () => Promise.reject(new TypeError("Failed to fetch")), "noBridge"],
  ];
  for (const [name, respond, want] of outcomes) {
    it(`exec: ${name} -> ${want}`, async () => {
      const r = await new BridgeClient("http://127.0.0.1:1", TOKEN, fake(respond).fetch).exec({ name: "ls", args: {}, callId: "c1" });
      expect(r.ok ? r.value.status : r.kind).toBe(want);
      if (!r.ok) expect(r.message.length).toBeGreaterThan(10);
    });
  }

  it("without a token nothing is sent and the answer says how to pair", async () => {
    const f = fake(() => json(200, RESULT));
    const r = await new BridgeClient("http://127.0.0.1:1", null, f.fetch).exec({ name: "ls", args: {} });
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.message).toContain("ground-link token");
    expect(f.seen.length).toBe(0);
  });

  it("GET /calls/{id} long-polls with waitMs; 404 means the bridge never saw the call", async () => {
    const f = fake((url) => (url.includes("/calls/c%2F1?") ? json(404, { error: "no call" }) : json(200, RESULT)));
    const c = new BridgeClient("http://127.0.0.1:1", TOKEN, f.fetch);
    expect((await c.poll("c1")).ok).toBe(true);
    expect(f.seen[0]?.url).toBe(`http://127.0.0.1:1/calls/c1?waitMs=${POLL_WAIT_MS}`);
    expect(POLL_WAIT_MS).toBeLessThanOrEqual(20_000);
    const r = await c.poll("c/1");
    expect(r.ok ? "" : r.kind).toBe("unknownCall");
  });

  it("exec: 409 for our own call id follows that call instead of failing", async () => {
    const f = fake((url) => (url.endsWith("/exec") ? json(409, { error: 'callId "c1" is already in use' }) : json(200, RESULT)));
    const r = await new BridgeClient("http://127.0.0.1:1", TOKEN, f.fetch).exec({ name: "read_file", args: { path: "a" }, callId: "c1" });
    expect(r).toEqual({ ok: true, value: RESULT });
    expect(f.seen.map((s) => `${s.init?.method} ${new URL(s.url).pathname}`)).toEqual(["POST /exec", "GET /calls/c1"]);
  });

  const cancels: [string, () => Response, string][] = [
    ["200 denied result", () => json(200, { ...RESULT, status: "denied" }), "cancelled"],
    ["202 still going", () => json(202, { status: "pending", callId: "c1" }), "cancelled"],
    ["409 already finished", () => json(409, { error: "the call has already finished" }), "finished"],
    ["404 unknown", () => json(404, { error: "no call" }), "unknownCall"],
    ["500", () => json(500, {}), "http"],
  ];
  for (const [name, respond, want] of cancels) {
    it(`DELETE /calls/{id}: ${name} -> ${want}`, async () => {
      const f = fake(respond);
      const r = await new BridgeClient("http://127.0.0.1:1", TOKEN, f.fetch).cancel("c1");
      expect(r.ok ? r.value : r.kind).toBe(want);
      expect(f.seen[0]?.init?.method).toBe("DELETE");
      expect(f.seen[0]?.url).toBe("http://127.0.0.1:1/calls/c1");
    });
  }

  it("health: connected with dir, or not our bridge", async () => {
    const ok = await new BridgeClient("http://127.0.0.1:1", TOKEN, fake(() => json(200, { status: "ok", app: "ground-link", version: "0.1.0", dir: "/home/u/p", mode: "ask", sandbox: "workspace-write" })).fetch).health();
    expect(ok.ok && ok.value.dir).toBe("/home/u/p");
    const other = await new BridgeClient("http://127.0.0.1:1", TOKEN, fake(() => json(200, { status: "ok" })).fetch).health();
    expect(other.ok ? "" : other.kind).toBe("noBridge");
  });

  it("prompt: text/plain with the <tool> format, anything else refused", async () => {
    const text = (body: string, type: string) => () => new Response(body, { headers: { "content-type": type } });
    const c = (respond: () => Response) => new BridgeClient("http://127.0.0.1:1", TOKEN, fake(respond).fetch).prompt("zh");
    expect(await c(text("Write <tool>{…}</tool> …", "text/plain; charset=utf-8"))).toEqual({ ok: true, value: "Write <tool>{…}</tool> …" });
    expect((await c(text("<html>", "text/html"))).ok).toBe(false);
    expect((await c(text("no format here", "text/plain"))).ok).toBe(false);
    expect((await c(() => json(400, { error: "lang" }))).ok).toBe(false);
  });

  /** An event stream as the bridge sends it: the header signed over the nonce, each event's id over its place. */
  function stream(events: { data: string; event?: string; forge?: boolean }[], extra = ""): Fetch {
    return async (_url, init) => {
      const nonce = (init?.headers as Record<string, string>)[SIGNING.headerNonce] ?? "";
      const key = await importKey(TOKEN);
      let body = "";
      let seq = 0;
      for (const e of events) {
        const id = e.forge ? "f".repeat(64) : await eventMac(key, nonce, seq, e.data);
        seq++;
        body += `${e.event ? `event: ${e.event}\n` : ""}id: ${id}\ndata: ${e.data}\n\n${extra}`;
      }
      return new Response(body, { headers: { "content-type": "text/event-stream", [SIGNING.headerAnswer]: await answerMac(key, nonce, 200, SIGNING.streamBody) } });
    };
  }

  it("events: the bridge's signed pending/resolved/done lines, after onOpen; others skipped", async () => {
    const events = [
      { data: JSON.stringify({ type: "pending", callId: "c1", tool: "write_file", risk: "moderate", session: "chat.deepseek.com:x" }) },
      { event: "other", data: JSON.stringify({ type: "done", callId: "c9", status: "success" }) },
      { data: JSON.stringify({ type: "resolved", callId: "c1", allowed: true }) },
      { data: "not json" },
      { data: JSON.stringify({ type: "done", callId: "c1", status: "success" }) },
    ];
    const got: string[] = [];
    let opened = 0;
    const c = new BridgeClient("http://127.0.0.1:1", TOKEN, stream(events, ": keep-alive\n\n"));
    await c.events((e) => got.push(`${e.callId}:${e.type}:${opened}`), new AbortController().signal, () => opened++);
    expect(got).toEqual(["c1:pending:1", "c1:resolved:1", "c1:done:1"]);
  });

  it("events: a forged, dropped or unsigned event ends the stream as an impostor's", async () => {
    const ev = (callId: string) => ({ data: JSON.stringify({ type: "resolved", callId, allowed: true }) });
    const got: string[] = [];
    const c = new BridgeClient("http://127.0.0.1:1", TOKEN, stream([ev("a"), { ...ev("b"), forge: true }, ev("c")]));
    const r = await c.events((e) => got.push(e.callId), new AbortController().signal);
    expect(r.ok ? "" : r.kind).toBe("impostor");
    expect(got).toEqual(["a"]);
    // a stream whose header is not signed is never opened
    let opened = false;
    const unsigned: Fetch = async () => new Response(`data: ${ev("x").data}\n\n`, { headers: { "content-type": "text/event-stream" } });
    const r2 = await new BridgeClient("http://127.0.0.1:1", TOKEN, unsigned).events(() => undefined, new AbortController().signal, () => (opened = true));
    expect(r2.ok ? "" : r2.kind).toBe("impostor");
    expect(opened).toBe(false);
  });

  it("events: an answer that is not an event stream is refused", async () => {
    const c = new BridgeClient("http://127.0.0.1:1", TOKEN, fake(() => json(200, {})).fetch);
    let opened = false;
    const r = await c.events(() => undefined, new AbortController().signal, () => (opened = true));
    expect(r.ok ? "" : r.kind).not.toBe("");
    expect(opened).toBe(false);
  });
});

describe("bridgeEventFrom", () => {
  const ok = { callId: "a" };
  const table: [string, string, unknown, unknown][] = [
    ["pending", "message", { type: "pending", ...ok, tool: "exec_cmd", risk: "dangerous", session: "s" }, { type: "pending", ...ok, tool: "exec_cmd", risk: "dangerous", session: "s" }],
    ["pending, no session", "message", { type: "pending", ...ok, tool: "read_file", risk: "safe", session: null }, { type: "pending", ...ok, tool: "read_file", risk: "safe", session: null }],
    ["resolved allowed", "message", { type: "resolved", ...ok, allowed: true }, { type: "resolved", ...ok, allowed: true }],
    ["resolved denied", "message", { type: "resolved", ...ok, allowed: false }, { type: "resolved", ...ok, allowed: false }],
    ["done", "message", { type: "done", ...ok, status: "denied" }, { type: "done", ...ok, status: "denied" }],
    ["named SSE event", "pending", { type: "pending", ...ok, tool: "x", risk: "safe", session: null }, null],
    ["unknown risk", "message", { type: "pending", ...ok, tool: "x", risk: "weird", session: null }, null],
    ["session not a string", "message", { type: "pending", ...ok, tool: "x", risk: "safe", session: 3 }, null],
    ["allowed not a boolean", "message", { type: "resolved", ...ok, allowed: "yes" }, null],
    ["done while pending", "message", { type: "done", ...ok, status: "pending" }, null],
    ["no call id", "message", { type: "done", status: "success" }, null],
    ["empty call id", "message", { type: "done", callId: "", status: "success" }, null],
    ["call id too long", "message", { type: "done", callId: "x".repeat(129), status: "success" }, null],
    ["guessed old shape", "message", { type: "approvalResolved", ...ok }, null],
    ["nested", "message", { call: { callId: "a", status: "denied" } }, null],
    ["not an object", "message", "pending", null],
    ["an array", "message", [1], null],
  ];
  for (const [name, ev, data, want] of table) {
    it(name, () => expect(bridgeEventFrom(ev, JSON.stringify(data))).toEqual(want));
  }
  it("not JSON", () => expect(bridgeEventFrom("message", "{")).toBeNull());
});
