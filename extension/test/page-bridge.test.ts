// Page tools at the bridge (DESIGN §12 "Exposure", issue 13 item 5): the browser.pageTools list —
// API-safe unique stable names, the extension's origin, caps, the 128 cap, debounce, empty when
// switched off — and browser.call op:"page" through the dispatcher: every refusal a sentence, a
// success the page's text, exactly one answer per call.
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { ANNOUNCE_DEBOUNCE_MS, buildRegistry, capBytes, MAX_BRIDGE_TOOLS, PageBridge, type PageToolsMessage, type TabFrames } from "../src/background/page-bridge";
import { BrowserTools, CALL_DEADLINE_MS, SWITCHED_OFF, type BrowserApi, type BrowserResult } from "../src/background/browser-tools";
import { BrowserHello } from "../src/background/browser-hello";
import { bridgeToolName } from "../src/shared/tool-names";
import { DEFAULT_CALL_TIMEOUT_MS, MAX_SCHEMA, type CallOutcome, type FrameReport, type PageTool } from "../src/shared/webmcp";
import type { OpLogEntry } from "../src/shared/oplog";
import type { TabReply, TabRequest } from "../src/shared/protocol";

const API_SAFE = /^[A-Za-z0-9_-]{1,64}$/;
const SHOP = "http://127.0.0.1:8080";

function tool(name: string, extra: Partial<PageTool> = {}): PageTool {
  return { name, title: "", description: `does ${name}`, inputSchema: { type: "object", properties: {} }, annotations: {}, origin: SHOP, source: "polyfill", ...extra };
}

function frame(frameId: number, tools: PageTool[], origin = SHOP): FrameReport {
  return { frameId, url: `${origin}/`, origin, api: "polyfill", tools: tools.map((t) => ({ ...t, origin: t.origin === SHOP ? origin : t.origin })), skills: [], problems: [], at: 0 };
}

describe("the browser.pageTools list", () => {
  it("names every tool API-safe, unique across tabs and frames, and stable while it stays registered", () => {
    const tabs: TabFrames[] = [
      { tabId: 7, frames: [frame(0, [tool("search"), tool("cart.add"), tool("x".repeat(128))]), frame(3, [tool("search")])] },
      { tabId: 9, frames: [frame(0, [tool("search")])] },
    ];
    const r = buildRegistry(tabs);
    const names = r.tools.map((t) => t.name);
    expect(names.every((n) => API_SAFE.test(n))).toBe(true);
    expect(new Set(names).size).toBe(names.length);
    expect(r.tools.map((t) => [t.tabId, t.frameId, t.tool])).toEqual([
      [7, 0, "search"],
      [7, 0, "cart.add"],
      [7, 0, "x".repeat(128)],
      [7, 3, "search"],
      [9, 0, "search"],
    ]);
    expect(names[0]).toMatch(/^page__[a-z0-9]{6}__search$/);
    // a name that is not API-safe keeps a readable stem and gets its own hash
    expect(names[1]).toMatch(/^page__[a-z0-9]{6}__cart_add_[a-z0-9]{6}$/);
    // another tab opening (or closing) renames nothing
    const more = buildRegistry([{ tabId: 2, frames: [frame(0, [tool("search")], "https://other.example")] }, ...tabs]);
    for (const t of r.tools) expect(more.tools.find((m) => m.tabId === t.tabId && m.frameId === t.frameId && m.tool === t.tool)?.name).toBe(t.name);
    expect(bridgeToolName({ tabId: 7, frameId: 0, origin: SHOP, name: "search" })).toBe(names[0]);
  });

  it("carries the frame's origin, never one a tool entry claims; hints as booleans; title only when there is one", () => {
    const r = buildRegistry([{ tabId: 1, frames: [frame(0, [tool("a", { title: "Tool\u202eA", annotations: { readOnlyHint: true } }), tool("forged", { origin: "https://bank.example" })])] }]);
    expect(r.tools).toHaveLength(1);
    expect(r.tools[0]).toEqual({
      name: r.tools[0]!.name,
      tool: "a",
      origin: SHOP,
      tabId: 1,
      frameId: 0,
      title: "ToolA",
      description: "does a",
      inputSchema: { type: "object", properties: {} },
      annotations: { readOnlyHint: true, consequentialHint: false, untrustedContentHint: false },
    });
    expect("title" in buildRegistry([{ tabId: 1, frames: [frame(0, [tool("b")])] }]).tools[0]!).toBe(false);
  });

  it("caps descriptions at 2 KiB of UTF-8 with control characters stripped, drops schemas over 16 KiB, and lists 128 tools at most", () => {
    const long = "界".repeat(2000) + "\u0007";
    const big = { type: "object", properties: { p: { type: "string", description: "y".repeat(MAX_SCHEMA) } } };
    const r = buildRegistry([{ tabId: 1, frames: [frame(0, [tool("long", { description: long }), tool("big", { inputSchema: big })])] }]);
    expect(r.tools.map((t) => t.tool)).toEqual(["long"]);
    const d = r.tools[0]!.description;
    expect(new TextEncoder().encode(d).length).toBeLessThanOrEqual(2048);
    expect(d).toBe("界".repeat(682));
    expect(r.left[0]).toContain("big in tab 1: its inputSchema is over 16384 bytes");
    expect(capBytes("aé", 2)).toBe("a");

    const many = Array.from({ length: 3 }, (_, i) => ({ tabId: i + 1, frames: [frame(0, Array.from({ length: 60 }, (_, j) => tool(`t${j}`)))] }));
    const capped = buildRegistry(many);
    expect(capped.tools).toHaveLength(MAX_BRIDGE_TOOLS);
    expect(capped.left).toEqual([`52 of 180 page tools over the cap of ${MAX_BRIDGE_TOOLS}`]);
  });
});

// ---- the announcer and the call, with a scripted worker ----

let tabs: TabFrames[];
let switchOn: boolean;
let ready: boolean;
let portUp: boolean;
let sent: PageToolsMessage[];
let warnings: string[];
let logged: OpLogEntry[];
let frameMsgs: { tabId: number; frameId: number; m: TabRequest }[];
/** How a frame answers a webmcpCall; a never-settling promise is a page that hangs. */
let answer: (tabId: number, frameId: number, m: TabRequest) => Promise<TabReply | undefined>;
let bridge: PageBridge;

beforeEach(() => {
  vi.useFakeTimers();
  tabs = [{ tabId: 7, frames: [frame(0, [tool("set_status", { annotations: { consequentialHint: true } })])] }];
  switchOn = true;
  ready = true;
  portUp = true;
  sent = [];
  warnings = [];
  logged = [];
  frameMsgs = [];
  answer = async () => ({ type: "callOutcome", outcome: { ok: true, result: '{"ok":true}', truncated: false, bytes: 11, ms: 3 } });
  let n = 0;
  bridge = new PageBridge({
    readTabs: async () => structuredClone(tabs),
    enabled: async () => switchOn,
    ready: () => ready,
    send: (m) => {
      if (!portUp) return false;
      sent.push(structuredClone(m));
      return true;
    },
    toFrame: (tabId, frameId, m) => {
      frameMsgs.push({ tabId, frameId, m });
      return answer(tabId, frameId, m);
    },
    log: async (e) => void logged.push(e),
    warn: (m) => void warnings.push(m),
    newId: () => `call-${++n}`,
    setTimer: (f, ms) => setTimeout(f, ms),
    clearTimer: (t) => clearTimeout(t as ReturnType<typeof setTimeout>),
    now: () => Date.now(),
  });
});

afterEach(() => vi.useRealTimers());

const nameOf = (tool: string) => buildRegistry(tabs).tools.find((t) => t.tool === tool)!.name;

describe("announcing the list", () => {
  it("sends once ~300 ms after a burst of changes, and not again while nothing changed", async () => {
    for (let i = 0; i < 5; i++) {
      bridge.changed();
      await vi.advanceTimersByTimeAsync(100);
    }
    expect(sent).toHaveLength(0);
    await vi.advanceTimersByTimeAsync(ANNOUNCE_DEBOUNCE_MS);
    expect(sent).toHaveLength(1);
    expect(sent[0]!.type).toBe("browser.pageTools");
    expect(sent[0]!.tools.map((t) => [t.tool, t.origin, t.tabId, t.frameId])).toEqual([["set_status", SHOP, 7, 0]]);
    bridge.changed();
    await vi.advanceTimersByTimeAsync(ANNOUNCE_DEBOUNCE_MS + 10);
    expect(sent).toHaveLength(1);
    tabs[0]!.frames[0]!.tools.push(tool("get_status"));
    bridge.changed();
    await vi.advanceTimersByTimeAsync(ANNOUNCE_DEBOUNCE_MS + 10);
    expect(sent.map((m) => m.tools.length)).toEqual([1, 2]);
    // a hello answered or the switch changed: the whole list again, even unchanged
    await bridge.announceNow();
    expect(sent).toHaveLength(3);
  });

  it("sends the empty list when switched off (even before the hello is answered), and says when 128 cut the list", async () => {
    switchOn = false;
    ready = false;
    await bridge.announceNow();
    expect(sent).toEqual([{ type: "browser.pageTools", tools: [] }]);
    // tools to list but no acknowledged hello: held back, and sent in full once the hello is answered
    switchOn = true;
    await bridge.announceNow();
    expect(sent).toHaveLength(1);
    expect(bridge.history.at(-1)!.outcome).toMatch(/not sent: the bridge has not acknowledged the hello/);
    tabs = Array.from({ length: 3 }, (_, i) => ({ tabId: i + 1, frames: [frame(0, Array.from({ length: 50 }, (_, j) => tool(`t${j}`)))] }));
    ready = true;
    await bridge.announceNow();
    expect(sent.at(-1)!.tools).toHaveLength(128);
    expect(warnings.join("\n")).toContain(`22 of 150 page tools over the cap of ${MAX_BRIDGE_TOOLS}`);
  });

  it("follows the hello: an acknowledged hello sends the list", async () => {
    const hello = new BrowserHello({ send: () => true, enabled: async () => true, onAcknowledged: () => void bridge.announceNow(), setTimer: (f, ms) => setTimeout(f, ms), clearTimer: (t) => clearTimeout(t as ReturnType<typeof setTimeout>), now: () => Date.now() });
    hello.restart();
    await vi.advanceTimersByTimeAsync(0);
    expect(sent).toHaveLength(0);
    hello.onMessage({ type: "browser.hello", ok: true });
    await vi.advanceTimersByTimeAsync(0);
    expect(sent).toHaveLength(1);
    expect(sent[0]!.tools[0]!.tool).toBe("set_status");
  });

  it("after a send that found no port, the next change sends again", async () => {
    portUp = false;
    bridge.changed();
    await vi.advanceTimersByTimeAsync(ANNOUNCE_DEBOUNCE_MS + 10);
    portUp = true;
    bridge.changed();
    await vi.advanceTimersByTimeAsync(ANNOUNCE_DEBOUNCE_MS + 10);
    expect(sent).toHaveLength(1);
  });
});

// ---- op:"page" through the dispatcher, as the bridge sends it ----

const noApi = {} as BrowserApi;
function dispatcher(): BrowserTools {
  return new BrowserTools({ api: noApi, enabled: async () => switchOn, pageTools: bridge, setTimer: (f, ms) => setTimeout(f, ms), clearTimer: (t) => clearTimeout(t as ReturnType<typeof setTimeout>), now: () => Date.now() });
}

let seq = 0;
async function pageCall(m: Record<string, unknown>, settle = async () => undefined): Promise<BrowserResult[]> {
  const answers: BrowserResult[] = [];
  const id = `b-${++seq}`;
  void dispatcher()
    .handle({ type: "browser.call", id, op: "page", ...m })
    .then((r) => answers.push(r));
  await settle();
  await vi.advanceTimersByTimeAsync(0);
  await vi.advanceTimersByTimeAsync(CALL_DEADLINE_MS * 2);
  for (const a of answers) {
    expect(a.type).toBe("browser.result");
    expect(a.id).toBe(id);
  }
  return answers;
}

const errorOf = (rs: BrowserResult[]): string => {
  expect(rs).toHaveLength(1);
  const r = rs[0]!;
  if (r.ok) throw new Error(`expected ok:false, got ${JSON.stringify(r)}`);
  return r.error;
};

describe('browser.call op:"page"', () => {
  it("runs the tool in its frame through the panel's call (10 s, the frame's origin) and answers its text once", async () => {
    const rs = await pageCall({ tool: nameOf("set_status"), args: { text: "hi" }, expect: { tabId: 7, origin: SHOP } });
    expect(rs).toEqual([{ type: "browser.result", id: rs[0]!.id, ok: true, text: '{"ok":true}' }]);
    expect(frameMsgs).toEqual([{ tabId: 7, frameId: 0, m: { type: "webmcpCall", callId: "call-1", name: "set_status", input: { text: "hi" }, timeoutMs: DEFAULT_CALL_TIMEOUT_MS, expectOrigin: SHOP } }]);
    expect(logged.map((e) => [e.by, e.tool, e.origin, e.outcome.ok])).toEqual([["bridge", "set_status", SHOP, true]]);
  });

  it("strips control characters from the result and caps it at 64 KiB, saying so (no delimiters of its own)", async () => {
    answer = async () => ({ type: "callOutcome", outcome: { ok: true, result: "A\u0007\u202e" + "B".repeat(70_000), truncated: false, bytes: 70_003, ms: 1 } satisfies CallOutcome });
    const rs = await pageCall({ tool: nameOf("set_status"), args: {}, expect: { tabId: 7, origin: SHOP } });
    const r = rs[0]!;
    if (!r.ok) throw new Error(r.error);
    expect(r.text!.startsWith("AB")).toBe(true);
    expect(r.text).toContain("[truncated to 65536 characters by ground-link; the page returned 70003]");
    expect(r.text).not.toContain("untrusted-page-content");
  });

  // one line per refusal: what the bridge sends, what the extension's world looks like, what the answer must say
  const refusals: { why: string; call: () => Record<string, unknown>; before?: () => void; says: RegExp; ran: boolean }[] = [
    { why: "unknown name", call: () => ({ tool: "page__zzzzzz__nope", args: {}, expect: { tabId: 7, origin: SHOP } }), says: /the page changed: no page tool named "page__zzzzzz__nope" is registered any more.*list the tools again/, ran: false },
    { why: "tab gone", call: () => ({ tool: nameOf("set_status"), args: {}, expect: { tabId: 7, origin: SHOP } }), before: () => (tabs = []), says: /no page tool named .* is registered any more/, ran: false },
    {
      why: "frame gone",
      call: () => ({ tool: nameOf("set_status"), args: {}, expect: { tabId: 7, origin: SHOP } }),
      before: () => (tabs = [{ tabId: 7, frames: [frame(2, [tool("set_status")])] }]),
      says: /no page tool named .* is registered any more/,
      ran: false,
    },
    { why: "another tab approved", call: () => ({ tool: nameOf("set_status"), args: {}, expect: { tabId: 8, origin: SHOP } }), says: /is in tab 7, but the call was approved for tab 8.*list the tools again/, ran: false },
    { why: "origin approved is not the frame's", call: () => ({ tool: nameOf("set_status"), args: {}, expect: { tabId: 7, origin: "https://evil.example" } }), says: /now at http:\/\/127\.0\.0\.1:8080 \(the call was approved for https:\/\/evil\.example\).*list the tools again/, ran: false },
    {
      why: "the frame navigated after the list was read",
      call: () => ({ tool: nameOf("set_status"), args: {}, expect: { tabId: 7, origin: SHOP } }),
      before: () => (answer = async () => ({ type: "callOutcome", outcome: { ok: false, error: "the page changed: this frame is now at https://elsewhere.example, not http://127.0.0.1:8080; nothing was run", ms: 0 } })),
      says: /the page changed: this frame is now at https:\/\/elsewhere\.example/,
      ran: true,
    },
    { why: "no content script answers", call: () => ({ tool: nameOf("set_status"), args: {}, expect: { tabId: 7, origin: SHOP } }), before: () => (answer = async () => undefined), says: /the page in tab 7 did not answer \(it navigated, reloaded or closed meanwhile\)/, ran: true },
    {
      why: "the page's tool times out",
      call: () => ({ tool: nameOf("set_status"), args: {}, expect: { tabId: 7, origin: SHOP } }),
      before: () => (answer = async () => ({ type: "callOutcome", outcome: { ok: false, error: "timed out after 10000 ms", ms: 10_000 } })),
      says: /page tool "set_status" on http:\/\/127\.0\.0\.1:8080 failed: timed out after 10000 ms/,
      ran: true,
    },
    { why: "the frame never answers at all", call: () => ({ tool: nameOf("set_status"), args: {}, expect: { tabId: 7, origin: SHOP } }), before: () => (answer = (_t, _f, m) => (m.type === "webmcpCancel" ? Promise.resolve({ type: "ok" }) : new Promise(() => undefined))), says: /did not answer within 12 s; the call was cancelled/, ran: true },
    { why: "switched off", call: () => ({ tool: nameOf("set_status"), args: {}, expect: { tabId: 7, origin: SHOP } }), before: () => (switchOn = false), says: new RegExp(SWITCHED_OFF), ran: false },
    { why: "no expect", call: () => ({ tool: nameOf("set_status"), args: {} }), says: /needs expect \{tabId, origin\}/, ran: false },
    { why: "a name that is no API name", call: () => ({ tool: "a b", args: {}, expect: { tabId: 7, origin: SHOP } }), says: /must be a name from the last browser\.pageTools list/, ran: false },
    { why: "args not an object", call: () => ({ tool: nameOf("set_status"), args: [1], expect: { tabId: 7, origin: SHOP } }), says: /must be a JSON object/, ran: false },
  ];
  for (const c of refusals) {
    it(`refuses with a sentence, once: ${c.why}`, async () => {
      const call = c.call();
      c.before?.();
      const rs = await pageCall(call);
      expect(errorOf(rs)).toMatch(c.says);
      expect(frameMsgs.some((f) => f.m.type === "webmcpCall")).toBe(c.ran);
    });
  }

  it("a hanging frame is told to cancel the call", async () => {
    answer = (_t, _f, m) => (m.type === "webmcpCancel" ? Promise.resolve({ type: "ok" }) : new Promise(() => undefined));
    await pageCall({ tool: nameOf("set_status"), args: {}, expect: { tabId: 7, origin: SHOP } });
    expect(frameMsgs.map((f) => f.m.type)).toEqual(["webmcpCall", "webmcpCancel"]);
    expect((frameMsgs[1]!.m as { callId: string }).callId).toBe((frameMsgs[0]!.m as { callId: string }).callId);
  });
});
