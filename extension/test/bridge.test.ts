// The worker's bridge client against scripted HTTP answers: every protocol outcome of DESIGN §6
// becomes a typed value that says what went wrong and what to do.
import { describe, expect, it } from "vitest";
import { BridgeClient, EXEC_WAIT_MS, callEventFrom, type Fetch } from "../src/background/bridge";

interface Seen {
  url: string;
  init: RequestInit | undefined;
}

function fake(respond: (url: string, init?: RequestInit) => Response | Promise<Response>): { fetch: Fetch; seen: Seen[] } {
  const seen: Seen[] = [];
  return {
    seen,
    fetch: async (url, init) => {
      seen.push({ url, init });
      return respond(url, init);
    },
  };
}

const json = (status: number, body: unknown) => new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json" } });
const RESULT = { status: "success", output: "1: hi", formatted: '<tool_result name="read_file" status="success">…</tool_result>', callId: "c1", decision: null, durationMs: 3, truncated: false };

describe("BridgeClient", () => {
  it("POST /exec sends the call with token, session, id and waitMs", async () => {
    const f = fake(() => json(200, RESULT));
    const c = new BridgeClient("http://127.0.0.1:18080", "tok", f.fetch);
    const r = await c.exec({ name: "read_file", args: { path: "a" }, session: "chat.deepseek.com:x", callId: "c1" });
    expect(r).toEqual({ ok: true, value: RESULT });
    expect(f.seen[0]?.url).toBe("http://127.0.0.1:18080/exec");
    expect((f.seen[0]?.init?.headers as Record<string, string>).Authorization).toBe("Bearer tok");
    expect(JSON.parse(String(f.seen[0]?.init?.body))).toEqual({ name: "read_file", args: { path: "a" }, session: "chat.deepseek.com:x", callId: "c1", waitMs: EXEC_WAIT_MS });
    expect(EXEC_WAIT_MS).toBeLessThan(30_000);
  });

  const outcomes: [string, () => Response | Promise<Response>, string][] = [
    ["202 pending", () => json(202, { status: "pending", callId: "c1" }), "pending"],
    ["401", () => json(401, {}), "notPaired"],
    ["403", () => json(403, {}), "http"],
    ["400", () => json(400, { error: "missing name" }), "bad"],
    ["413", () => json(413, {}), "bad"],
    ["not a result", () => json(200, { hello: 1 }), "bad"],
    ["connection refused", () => Promise.reject(new TypeError("Failed to fetch")), "noBridge"],
  ];
  for (const [name, respond, want] of outcomes) {
    it(`exec: ${name} -> ${want}`, async () => {
      const r = await new BridgeClient("http://127.0.0.1:1", "tok", fake(respond).fetch).exec({ name: "ls", args: {}, callId: "c1" });
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

  it("GET /calls/{id} long-polls; 404 means the bridge never saw the call", async () => {
    const c = new BridgeClient("http://127.0.0.1:1", "t", fake((url) => (url.endsWith("/calls/c%2F1") ? json(404, {}) : json(200, RESULT))).fetch);
    expect((await c.poll("c1")).ok).toBe(true);
    const r = await c.poll("c/1");
    expect(r.ok ? "" : r.kind).toBe("unknownCall");
  });

  it("DELETE /calls/{id} cancels", async () => {
    const f = fake(() => new Response(null, { status: 204 }));
    expect((await new BridgeClient("http://127.0.0.1:1", "t", f.fetch).cancel("c1")).ok).toBe(true);
    expect(f.seen[0]?.init?.method).toBe("DELETE");
  });

  it("health: connected with dir, or not our bridge", async () => {
    const ok = await new BridgeClient("http://127.0.0.1:1", "t", fake(() => json(200, { status: "ok", app: "ground-link", version: "0.1.0", dir: "/home/u/p", mode: "ask", sandbox: "workspace-write" })).fetch).health();
    expect(ok.ok && ok.value.dir).toBe("/home/u/p");
    const other = await new BridgeClient("http://127.0.0.1:1", "t", fake(() => json(200, { status: "ok" })).fetch).health();
    expect(other.ok ? "" : other.kind).toBe("noBridge");
  });

  it("prompt: JSON or plain text", async () => {
    const j = await new BridgeClient("http://127.0.0.1:1", "t", fake(() => json(200, { prompt: "Use <tool>…" })).fetch).prompt("zh");
    expect(j).toEqual({ ok: true, value: "Use <tool>…" });
    const p = await new BridgeClient("http://127.0.0.1:1", "t", fake(() => new Response("plain text")).fetch).prompt("en");
    expect(p).toEqual({ ok: true, value: "plain text" });
  });

  it("events: call states from the SSE stream", async () => {
    const body = [
      `event: approvalPending\ndata: ${JSON.stringify({ callId: "c1", tool: "write_file" })}\n\n`,
      `data: ${JSON.stringify({ type: "resolved", callId: "c1", decision: "allow" })}\n\n`,
      `data: ${JSON.stringify({ type: "done", callId: "c1", status: "success" })}\n\n`,
    ].join("");
    const got: string[] = [];
    const c = new BridgeClient("http://127.0.0.1:1", "t", fake(() => new Response(body, { headers: { "content-type": "text/event-stream" } })).fetch);
    await c.events((id, state) => got.push(`${id}:${state}`), new AbortController().signal);
    expect(got).toEqual(["c1:waitingApproval", "c1:resolved", "c1:done"]);
  });
});

describe("callEventFrom", () => {
  const table: [string, unknown, string | null][] = [
    ["message", { type: "pendingApproval", callId: "a" }, "waitingApproval"],
    ["message", { type: "approvalResolved", callId: "a" }, "resolved"],
    ["done", { call: { callId: "a", status: "denied" } }, "done"],
    ["message", { type: "started", id: "a" }, "running"],
    ["message", { type: "hello" }, null],
    ["message", "not an object", null],
  ];
  for (const [ev, data, want] of table) {
    it(`${ev} ${JSON.stringify(data)}`, () => expect(callEventFrom(ev, JSON.stringify(data))?.state ?? null).toBe(want));
  }
});
