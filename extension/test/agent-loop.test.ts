// The agent loop in the worker, with a scripted provider (fetch) and a fake tab: the limit of
// calls per turn, hints that can only add confirmation (consequential always asks, even in auto
// mode; read-only skips the card), unknown names and bad arguments going back to the model as
// errors, and no key → a clear message and no request.
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { AgentSession, type AgentOut } from "../src/background/agent";
import { MemoryKV } from "../src/shared/store";
import { defaultAgentSettings } from "../src/shared/providers";
import type { PageTool } from "../src/shared/webmcp";
import type { PanelCallReport } from "../src/shared/panel-audit";
import { readLog } from "../src/shared/oplog";

const tool = (name: string, annotations: PageTool["annotations"] = {}): PageTool => ({ name, title: "", description: `${name} tool`, inputSchema: { type: "object", properties: {} }, annotations, origin: "http://127.0.0.1:9", source: "polyfill" });
const TOOLS = [tool("read_it", { readOnlyHint: true }), tool("change_it"), tool("buy_it", { readOnlyHint: true, consequentialHint: true })];

let ran: string[];
let requests: { messages: { role: string; content: string | null }[] }[];
let script: ((n: number) => string)[];

const sse = (deltas: Record<string, unknown>[], finish: string) =>
  [...deltas.map((d) => ({ choices: [{ index: 0, delta: d, finish_reason: null }] })), { choices: [{ index: 0, delta: {}, finish_reason: finish }] }].map((c) => `data: ${JSON.stringify(c)}\n\n`).join("") + "data: [DONE]\n\n";
const calls = (list: [string, string][]) => sse([{ tool_calls: list.map(([name, args], index) => ({ index, id: `c${index}`, type: "function", function: { name, arguments: args } })) }], "tool_calls");
const answer = (text: string) => sse([{ content: text }], "stop");

beforeEach(() => {
  ran = [];
  requests = [];
  script = [];
  vi.stubGlobal("chrome", {
    permissions: { contains: async () => true },
    storage: { session: { get: async (k: string) => ({ [k]: { "0": { frameId: 0, tools: TOOLS } } }) } },
    tabs: {
      sendMessage: async (_tab: number, msg: { type: string; name: string }) => {
        if (msg.type !== "webmcpCall") return { type: "ok" };
        ran.push(msg.name);
        return { type: "callOutcome", outcome: { ok: true, result: `${msg.name} done`, truncated: false, bytes: 9, ms: 1 } };
      },
    },
  });
  vi.stubGlobal("fetch", async (_url: string, init: { body: string }) => {
    const body = JSON.parse(init.body) as { messages: { role: string; content: string | null }[] };
    requests.push(body);
    const next = script[requests.length - 1] ?? (() => answer("ok"));
    return new Response(next(requests.length), { status: 200, headers: { "content-type": "text/event-stream" } });
  });
});
afterEach(() => vi.unstubAllGlobals());

async function turn(mode: "auto" | "confirm", answerConfirm: (e: Extract<AgentOut, { type: "toolCall" }>) => boolean, key: string | null = "sk-x"): Promise<AgentOut[]> {
  const kv = new MemoryKV();
  await kv.set({ agentSettings: { ...defaultAgentSettings(), mode } });
  if (key) await kv.set({ providerKeys: { deepseek: key } });
  const out: AgentOut[] = [];
  return new Promise((resolve) => {
    const session: AgentSession = new AgentSession(kv, (m) => {
      out.push(m);
      if (m.type === "toolCall" && m.confirm) setTimeout(() => session.onMessage({ type: "confirm", id: m.id, allow: answerConfirm(m) }), 0);
      if (m.type === "turnDone") resolve(out);
    });
    session.onMessage({ type: "run", tabId: 1, text: "go", history: [] });
  });
}

const toolMessages = () => (requests.at(-1)?.messages ?? []).filter((m) => m.role === "tool").map((m) => m.content ?? "");

describe("the agent loop", () => {
  it("runs at most 10 calls in a turn and tells the model about the rest", async () => {
    script = [() => calls(Array.from({ length: 12 }, () => ["read_it", "{}"] as [string, string])), () => answer("done")];
    const out = await turn("auto", () => true);
    expect(ran.length).toBe(10);
    const msgs = toolMessages();
    expect(msgs.length).toBe(12);
    expect(msgs[10]).toBe("error: not run: the limit of 10 tool calls per turn was reached; answer with what you have");
    expect(msgs[0]).toContain('<untrusted-page-content origin="http://127.0.0.1:9" tool="read_it" kind="result">');
    // after the limit the model is asked again without tools, so it has to answer
    expect(out.at(-1)?.type).toBe("turnDone");
  });

  it("consequentialHint always asks, even in auto mode and even with readOnlyHint; declining runs nothing", async () => {
    script = [() => calls([["buy_it", "{}"]]), () => answer("ok")];
    const out = await turn("auto", () => false);
    const card = out.find((m) => m.type === "toolCall");
    expect(card).toMatchObject({ tool: "buy_it", confirm: true, why: "the page marks this tool consequential" });
    expect(ran).toEqual([]);
    expect(toolMessages()).toEqual(["error: the person declined this call"]);
  });

  it("confirm mode asks for a call without readOnlyHint and skips the card for a read-only one", async () => {
    script = [() => calls([["read_it", "{}"], ["change_it", '{"x":1}']]), () => answer("ok")];
    const asked: string[] = [];
    const out = await turn("confirm", (e) => (asked.push(e.tool), true));
    expect(asked).toEqual(["change_it"]);
    expect(out.filter((m) => m.type === "toolCall").map((m) => (m as { confirm: boolean }).confirm)).toEqual([false, true]);
    expect(ran).toEqual(["read_it", "change_it"]);
  });

  it("an unknown tool and broken arguments go back to the model as errors, never guessed", async () => {
    script = [() => calls([["delete_everything", "{}"], ["change_it", '{"x": 1']]), () => answer("ok")];
    await turn("auto", () => true);
    const [unknown, broken] = toolMessages();
    expect(unknown).toBe('error: there is no tool named "delete_everything"; use one of read_it, change_it, buy_it');
    expect(broken).toMatch(/^error: the arguments are not valid JSON/);
    expect(ran).toEqual([]);
  });

  it("auto mode runs a call that is not read-only without a card, and logs it", async () => {
    script = [() => calls([["change_it", "{}"]]), () => answer("ok")];
    const out = await turn("auto", () => true);
    expect(out.find((m) => m.type === "toolCall")).toMatchObject({ tool: "change_it", confirm: false, why: "auto mode" });
    expect(ran).toEqual(["change_it"]);
  });

  it("a turn that runs past its time is stopped, and the panel is told why", async () => {
    vi.stubGlobal("fetch", (_url: string, init: { signal: AbortSignal }) => new Promise((_, reject) => init.signal.addEventListener("abort", () => reject(new Error("aborted")))));
    const kv = new MemoryKV();
    await kv.set({ agentSettings: { ...defaultAgentSettings(), limits: { callsPerTurn: 10, callTimeoutMs: 10_000, turnTimeoutMs: 5000 } }, providerKeys: { deepseek: "sk-x" } });
    const out: AgentOut[] = [];
    const started = Date.now();
    await new Promise<void>((resolve) => {
      const session = new AgentSession(kv, (m) => (out.push(m), m.type === "turnDone" && resolve()));
      session.onMessage({ type: "run", tabId: 1, text: "go", history: [] });
    });
    expect(Date.now() - started).toBeGreaterThanOrEqual(4900);
    expect(out.find((m) => m.type === "error")).toEqual({ type: "error", message: "the turn took longer than 5 s and was stopped" });
  }, 10_000);

  it("without a key: a clear message and no request", async () => {
    const out = await turn("auto", () => true, null);
    expect(out.find((m) => m.type === "error")).toEqual({ type: "error", message: "no API key for DeepSeek; enter it in the panel's model settings" });
    expect(requests).toEqual([]);
  });

  it("reports each call that reached a page tool to the auditor, and the log says whether it was audited", async () => {
    script = [() => calls([["read_it", "{}"], ["change_it", '{"x":1}'], ["buy_it", "{}"], ["change_it", '{"x": 1'], ["nope", "{}"]]), () => answer("ok")];
    const kv = new MemoryKV();
    await kv.set({ agentSettings: { ...defaultAgentSettings(), mode: "confirm" }, providerKeys: { deepseek: "sk-x" } });
    const reports: PanelCallReport[] = [];
    // the bridge takes the first two and is gone for the rest: the turn goes on regardless
    const auditor = async (r: PanelCallReport) => (reports.push(r), reports.length <= 2 ? { ok: true as const } : { ok: false as const, reason: "nothing is listening there" });
    await new Promise<void>((resolve) => {
      const session: AgentSession = new AgentSession(
        kv,
        (m) => {
          if (m.type === "toolCall" && m.confirm) setTimeout(() => session.onMessage({ type: "confirm", id: m.id, allow: m.tool === "change_it" }), 0);
          if (m.type === "turnDone") resolve();
        },
        auditor,
      );
      session.onMessage({ type: "run", tabId: 1, text: "go", history: [], conversation: "panel:t1" });
    });
    expect(reports.map((r) => [r.tool, r.decision, r.status])).toEqual([
      ["read_it", "autoRun", "success"],
      ["change_it", "confirmed", "success"],
      ["buy_it", "refused", "denied"],
      ["change_it", "failed", "error"],
    ]);
    expect(reports.every((r) => r.session === "panel:t1" && r.origin === "http://127.0.0.1:9")).toBe(true);
    expect(reports[1]).toMatchObject({ args: { x: 1 }, outputBytes: 9, why: "not marked read-only" });
    const log = await readLog(kv);
    expect(log.map((e) => e.audit)).toEqual(["audited", "audited", "not audited: nothing is listening there", "not audited: nothing is listening there", undefined]);
    expect(toolMessages().length).toBe(5);
  });

  it("without a pairing nothing is reported and the log says nothing about auditing", async () => {
    script = [() => calls([["read_it", "{}"]]), () => answer("ok")];
    const kv = new MemoryKV();
    await kv.set({ agentSettings: defaultAgentSettings(), providerKeys: { deepseek: "sk-x" } });
    await new Promise<void>((resolve) => {
      const session = new AgentSession(kv, (m) => m.type === "turnDone" && resolve(), async () => undefined);
      session.onMessage({ type: "run", tabId: 1, text: "go", history: [] });
    });
    const log = await readLog(kv);
    expect(log.length).toBe(1);
    expect("audit" in log[0]!).toBe(false);
  });
});
