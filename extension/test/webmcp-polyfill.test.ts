// @vitest-environment jsdom
// The MAIN-world polyfill against the WebMCP draft as Chromium 156 implements it natively
// (probed by hand: InvalidStateError for bad and duplicate names, TypeError for a missing
// description or execute, string results passed through, others JSON-stringified).
import { beforeEach, describe, expect, it } from "vitest";
import { formSchema, hasNativeWebMcp, installPolyfill, PolyfillModelContext } from "../src/main-world/webmcp-polyfill";
import { handOverPort, serveChannel } from "../src/main-world/webmcp-channel";
import { HANDSHAKE_EVENT } from "../src/shared/webmcp";

let ctx: PolyfillModelContext;

beforeEach(() => {
  document.body.innerHTML = "";
  delete (document as unknown as { modelContext?: unknown }).modelContext;
  delete (navigator as unknown as { modelContext?: unknown }).modelContext;
  const c = installPolyfill(window);
  if (!c) throw new Error("jsdom has no native WebMCP: the polyfill must install");
  ctx = c;
});

const errName = async (p: Promise<unknown>) => p.then(() => "resolved", (e: unknown) => (e as Error).name);

describe("polyfill install", () => {
  it("installs document.modelContext and the legacy navigator alias to the same object", () => {
    expect((document as unknown as { modelContext: unknown }).modelContext).toBe(ctx);
    expect((navigator as unknown as { modelContext: unknown }).modelContext).toBe(ctx);
    expect(hasNativeWebMcp(window)).toBe(false);
  });

  it("does not treat a page-made imitation as native", () => {
    const fake = { getTools: () => [] };
    expect(/native code/.test(Function.prototype.toString.call(fake.getTools))).toBe(false);
  });

  it("installs only once per document", () => {
    expect(installPolyfill(window)).toBe(ctx);
  });
});

describe("registerTool", () => {
  const tool = (name: string, extra: Record<string, unknown> = {}) => ({ name, description: "d", execute: () => "ok", ...extra });

  it("rejects bad and duplicate names with InvalidStateError", async () => {
    await ctx.registerTool(tool("add"));
    expect(await errName(ctx.registerTool(tool("add")))).toBe("InvalidStateError");
    for (const bad of ["", "a b", "a".repeat(129), "ünï", "x/y"]) expect(await errName(ctx.registerTool(tool(bad)))).toBe("InvalidStateError");
    expect(await errName(ctx.registerTool(tool("a.b-c_d")))).toBe("resolved");
  });

  it("rejects a tool without description or execute, or with a non-object schema, with TypeError", async () => {
    expect(await errName(ctx.registerTool({ name: "x", execute: () => 1 }))).toBe("TypeError");
    expect(await errName(ctx.registerTool({ name: "x", description: "d" }))).toBe("TypeError");
    expect(await errName(ctx.registerTool(tool("x", { inputSchema: "nope" })))).toBe("TypeError");
  });

  it("refuses exposedTo (a polyfill cannot enforce it)", async () => {
    expect(await errName(ctx.registerTool(tool("x"), { exposedTo: ["https://a.example"] }))).toBe("NotSupportedError");
  });

  it("unregisters when the signal aborts, and fires toolchange each time", async () => {
    let changes = 0;
    ctx.addEventListener("toolchange", () => changes++);
    const ac = new AbortController();
    await ctx.registerTool(tool("temp"), { signal: ac.signal });
    await Promise.resolve();
    expect((await ctx.getTools()).map((t) => t.name)).toEqual(["temp"]);
    ac.abort();
    await Promise.resolve();
    expect(await ctx.getTools()).toEqual([]);
    expect(changes).toBe(2);
    // the name is free again
    expect(await errName(ctx.registerTool(tool("temp")))).toBe("resolved");
  });

  it("does not register with an already aborted signal", async () => {
    const ac = new AbortController();
    ac.abort();
    await ctx.registerTool(tool("never"), { signal: ac.signal });
    expect(await ctx.getTools()).toEqual([]);
  });
});

describe("getTools and executeTool", () => {
  it("returns the RegisteredTool shape with the page's origin", async () => {
    await ctx.registerTool({ name: "add", title: "Add", description: "adds", inputSchema: { type: "object", properties: { a: { type: "number" } } }, annotations: { readOnlyHint: true }, execute: () => 1 });
    expect(await ctx.getTools()).toEqual([
      { name: "add", title: "Add", description: "adds", origin: location.origin, inputSchema: { type: "object", properties: { a: { type: "number" } } }, annotations: { readOnlyHint: true } },
    ]);
  });

  it("stringifies results (strings pass as they are) and passes a signal to execute", async () => {
    let gotSignal: unknown;
    await ctx.registerTool({ name: "sum", description: "d", execute: (i: { a: number }, c: { signal: AbortSignal }) => ((gotSignal = c.signal), { sum: i.a + 1 }) });
    await ctx.registerTool({ name: "str", description: "d", execute: () => "plain" });
    const [sum, str] = await ctx.getTools();
    expect(await ctx.executeTool(sum, { a: 2 })).toBe('{"sum":3}');
    expect(await ctx.executeTool(str, {})).toBe("plain");
    expect(gotSignal).toBeInstanceOf(AbortSignal);
  });

  it("refuses non-object input and unknown tools", async () => {
    await ctx.registerTool({ name: "t", description: "d", execute: () => 1 });
    const [t] = await ctx.getTools();
    expect(await errName(ctx.executeTool(t, '{"a":1}'))).toBe("TypeError");
    expect(await errName(ctx.executeTool({ name: "missing" }, {}))).toBe("InvalidStateError");
  });

  it("rejects with AbortError when the call's signal aborts, and the tool sees it", async () => {
    let toolSawAbort = false;
    await ctx.registerTool({ name: "slow", description: "d", execute: (_: unknown, c: { signal: AbortSignal }) => new Promise((r) => c.signal.addEventListener("abort", () => ((toolSawAbort = true), r("late")))) });
    const [t] = await ctx.getTools();
    const ac = new AbortController();
    const p = ctx.executeTool(t, {}, { signal: ac.signal });
    ac.abort();
    expect(await errName(p)).toBe("AbortError");
    expect(toolSawAbort).toBe(true);
  });
});

describe("declarative forms", () => {
  it("turns <form toolname> into a tool with a schema from its controls", async () => {
    document.body.innerHTML = `<form toolname="find" tooldescription="Find things" toolautosubmit>
      <input name="q" required toolparamdescription="what to find"><select name="kind"><option>a</option><option>b</option></select>
      <input type="number" name="n"><input type="checkbox" name="exact"><input type="hidden" name="csrf" value="x"><button>Go</button></form>`;
    ctx.syncForms(document);
    const [t] = await ctx.getTools();
    expect(t?.name).toBe("find");
    expect(t?.description).toBe("Find things");
    expect(t?.inputSchema).toEqual({
      type: "object",
      properties: { q: { type: "string", description: "what to find" }, kind: { type: "string", enum: ["a", "b"] }, n: { type: "number" }, exact: { type: "boolean" } },
      required: ["q"],
    });
  });

  it("fills and submits the form; the page answers through respondWith", async () => {
    document.body.innerHTML = `<form toolname="find" tooldescription="d" toolautosubmit><input name="q"></form>`;
    const form = document.querySelector("form") as HTMLFormElement;
    let invoked: unknown;
    form.addEventListener("submit", (e) => {
      e.preventDefault();
      const ev = e as Event & { agentInvoked?: boolean; respondWith?: (p: unknown) => void };
      invoked = ev.agentInvoked;
      ev.respondWith?.(Promise.resolve({ found: (form.elements.namedItem("q") as HTMLInputElement).value }));
    });
    ctx.syncForms(document);
    const [t] = await ctx.getTools();
    expect(await ctx.executeTool(t, { q: "tea" })).toBe('{"found":"tea"}');
    expect(invoked).toBe(true);
  });

  it("only fills a form without toolautosubmit (the person submits)", async () => {
    document.body.innerHTML = `<form toolname="draft" tooldescription="d"><input name="q"></form>`;
    let submitted = false;
    document.querySelector("form")?.addEventListener("submit", () => (submitted = true));
    ctx.syncForms(document);
    const [t] = await ctx.getTools();
    const r = JSON.parse((await ctx.executeTool(t, { q: "x" })) ?? "null") as { submitted: boolean };
    expect(r.submitted).toBe(false);
    expect(submitted).toBe(false);
    expect((document.querySelector("input") as HTMLInputElement).value).toBe("x");
  });

  it("drops the tool when its form leaves the page", async () => {
    document.body.innerHTML = `<form toolname="gone" tooldescription="d"><input name="q"></form>`;
    ctx.syncForms(document);
    expect((await ctx.getTools()).length).toBe(1);
    document.body.innerHTML = "";
    ctx.syncForms(document);
    expect(await ctx.getTools()).toEqual([]);
  });

  it("formSchema has no required list when nothing is required", () => {
    document.body.innerHTML = `<form><input name="a"></form>`;
    expect(formSchema(document.querySelector("form") as HTMLFormElement)).toEqual({ type: "object", properties: { a: { type: "string" } } });
  });
});

describe("the channel to the isolated world", () => {
  it("hands its port to a listener that takes it, and answers list and call over it", async () => {
    const { port1, port2 } = new MessageChannel();
    serveChannel(ctx, port1);
    let taken: MessagePort | undefined;
    document.addEventListener(HANDSHAKE_EVENT, (e) => {
      taken = (e as MessageEvent).ports[0];
      e.preventDefault();
    }, { once: true });
    handOverPort(document, port2);
    expect(taken).toBe(port2);
    await ctx.registerTool({ name: "echo", description: "d", execute: (i: unknown) => i });
    const got: unknown[] = [];
    // the polyfill also says "changed" when tools come and go: wait for the answer of one type
    const next = (type = "tools") => new Promise<unknown>((r) => ((port2.onmessage = (e) => (e.data as { type: string }).type === type && r(e.data)), undefined));
    let p = next();
    port2.postMessage({ type: "list" });
    got.push(await p);
    p = next("result");
    port2.postMessage({ type: "call", id: 7, name: "echo", input: { x: 1 } });
    got.push(await p);
    expect(got[0]).toMatchObject({ type: "tools", tools: [{ name: "echo" }] });
    expect(got[1]).toEqual({ type: "result", id: 7, ok: true, value: '{"x":1}' });
    port2.close();
  });
});
