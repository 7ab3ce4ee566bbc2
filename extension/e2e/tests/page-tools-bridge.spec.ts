// Page tools at the bridge (issue 13 item 5) end to end: the built extension in Debian Chromium
// with browser tools on, the local WebMCP test site on 127.0.0.1, and the worker's own hooks
// (`__groundLinkBrowser`): the browser.pageTools list as it would be sent, and browser.call
// op:"page" exactly as the bridge's message reaches the dispatcher. No bridge needed (the
// prebuilt CLI does not know page tools yet). Native WebMCP path and polyfill path.
import { expect, test, type Page } from "@playwright/test";
import { bridgeBin, launch, startBridge, waitFor, type Bridge, type Env } from "../harness";
import { startWebmcpSite, type WebmcpSite } from "../webmcp-site";
import { removeTempDirs, tempDir } from "../tmp";
import type { BridgePageTool } from "../../src/background/page-bridge";

let env: Env | null = null;
let site: WebmcpSite | null = null;
let bridge: Bridge | null = null;

test.afterEach(async ({}, info) => {
  if (bridge && info.status !== info.expectedStatus) console.log(`--- bridge log (${info.title}) ---\n${bridge.log()}`);
  await bridge?.stop();
  bridge = null;
  await env?.close();
  env = null;
  await site?.close();
  site = null;
  removeTempDirs(info.status !== info.expectedStatus);
});

type ListedTool = BridgePageTool;

interface Result {
  type: string;
  id: string;
  ok: boolean;
  text?: string;
  error?: string;
}

type Hook = { __groundLinkBrowser: { handle(m: unknown): Promise<unknown>; pageTools(): Promise<{ type: string; tools: ListedTool[] }> } };

const listed = (e: Env) => e.sw.evaluate(() => (globalThis as unknown as Hook).__groundLinkBrowser.pageTools());

let seq = 0;
async function pageCall(e: Env, m: Record<string, unknown>): Promise<Result> {
  const id = `page-${++seq}`;
  const r = (await e.sw.evaluate((msg) => (globalThis as unknown as Hook).__groundLinkBrowser.handle(msg), { type: "browser.call", id, op: "page", ...m })) as Result;
  expect(r.type).toBe("browser.result");
  expect(r.id).toBe(id);
  return r;
}

/** Waits until the list has `tool` from tab `tabId`; returns it. */
async function waitListed(e: Env, tabId: number, tool: string, origin: string): Promise<ListedTool> {
  let hit: ListedTool | undefined;
  await waitFor(`${tool} of tab ${tabId} at ${origin} in the browser.pageTools list`, async () => {
    hit = (await listed(e)).tools.find((t) => t.tabId === tabId && t.tool === tool && t.origin === origin);
    return hit !== undefined;
  });
  return hit!;
}

async function openTab(e: Env, url: string): Promise<{ page: Page; tabId: number }> {
  const page = await e.ctx.newPage();
  await page.goto(url);
  const tabId = await e.sw.evaluate(async (u) => (await chrome.tabs.query({ url: u }))[0]?.id ?? -1, url);
  expect(tabId).toBeGreaterThan(0);
  return { page, tabId };
}

for (const native of [true, false]) {
  const path = native ? "native" : "polyfill";

  test(`${path}: the bridge's list names the page's tools with the frame's origin; op:"page" runs them; after navigating away the old name is refused`, async () => {
    site = await startWebmcpSite();
    env = await launch({ args: native ? ["--enable-features=WebMCP"] : [] });
    const e = env;
    const s = site;
    await e.sw.evaluate(() => chrome.storage.local.set({ browserTools: true }));
    const { page, tabId } = await openTab(e, `${s.origin}/tools.html`);

    const set = await waitListed(e, tabId, "set_status", s.origin);
    const echo = await waitListed(e, tabId, "frame_echo", s.origin);
    await waitListed(e, tabId, "add_note", s.origin);
    const msg = await listed(e);
    expect(msg.type).toBe("browser.pageTools");
    for (const t of msg.tools) {
      expect(t.name).toMatch(/^[A-Za-z0-9_-]{1,64}$/);
      expect(t.origin).toBe(s.origin);
    }
    expect(new Set(msg.tools.map((t) => t.name)).size).toBe(msg.tools.length);
    expect(set).toMatchObject({ tool: "set_status", tabId, frameId: 0, title: "Set status", description: "Sets the page's status heading.", inputSchema: { type: "object", properties: { text: { type: "string", description: "new status" } }, required: ["text"] } });
    expect(set.name).toMatch(/^page__[a-z0-9]{6}__set_status$/);
    expect(Object.keys(set.annotations).sort()).toEqual(["consequentialHint", "readOnlyHint", "untrustedContentHint"]);
    expect(echo.frameId).not.toBe(0);

    // the approved call runs the page's own tool and returns its result as text
    const r = await pageCall(e, { tool: set.name, args: { text: "set over the native link" }, expect: { tabId, origin: s.origin } });
    if (!r.ok) throw new Error(r.error);
    expect(JSON.parse(r.text ?? "")).toEqual({ ok: true, status: "set over the native link" });
    expect(await page.textContent("#status")).toBe("set over the native link");
    // in the frame that registered it
    const inFrame = await pageCall(e, { tool: echo.name, args: { words: "from the bridge" }, expect: { tabId, origin: s.origin } });
    expect(inFrame.text).toBe("the frame said from the bridge");
    expect(await page.frameLocator("iframe").locator("#said").textContent()).toBe("from the bridge");
    // the panel's operation log has both, marked as the bridge's
    const log = await e.sw.evaluate(async () => ((await chrome.storage.local.get("opLog")).opLog ?? []) as { by: string; tool: string }[]);
    expect(log.filter((l) => l.by === "bridge").map((l) => l.tool)).toEqual(["set_status", "frame_echo"]);

    // an approval for another origin runs nothing
    const wrongOrigin = await pageCall(e, { tool: set.name, args: { text: "no" }, expect: { tabId, origin: "http://localhost:1" } });
    expect(wrongOrigin.ok).toBe(false);
    expect(wrongOrigin.error).toMatch(/the page changed.*list the tools again/);
    // and the frame itself checks again when it runs a call (a navigation the list has not seen yet)
    const stale = await e.sw.evaluate(
      (id) => chrome.tabs.sendMessage(id, { type: "webmcpCall", callId: "stale", name: "set_status", input: { text: "no" }, timeoutMs: 2000, expectOrigin: "http://localhost:1" }, { frameId: 0 }),
      tabId,
    );
    expect(stale).toEqual({ type: "callOutcome", outcome: { ok: false, error: `the page changed: this frame is now at ${s.origin}, not http://localhost:1; nothing was run`, ms: 0 } });
    expect(await page.textContent("#status")).toBe("set over the native link");

    // the tab navigates to another origin (localhost is another site for the browser): the old
    // name is refused, and the list now holds the new page's tool under a new name and origin
    const other = s.origin.replace("127.0.0.1", "localhost");
    await page.goto(`${other}/tools.html`);
    const moved = await waitListed(e, tabId, "set_status", other);
    expect(moved.name).not.toBe(set.name);
    await waitFor("the old page's tools to leave the list", async () => !(await listed(e)).tools.some((t) => t.origin === s.origin));
    const gone = await pageCall(e, { tool: set.name, args: { text: "too late" }, expect: { tabId, origin: s.origin } });
    expect(gone.ok).toBe(false);
    expect(gone.error).toMatch(/the page changed: no page tool named ".*" is registered any more.*list the tools again/);
    expect(await page.textContent("#status")).toBe("idle");

    // a page without tools: nothing of this tab is listed, and the last name is refused too
    await page.goto(`${other}/blank.html`);
    await waitFor("the tab's tools to leave the list", async () => !(await listed(e)).tools.some((t) => t.tabId === tabId));
    expect((await pageCall(e, { tool: moved.name, args: { text: "x" }, expect: { tabId, origin: other } })).error).toMatch(/is registered any more/);

    // switched off: the list is empty and a call is refused like any browser call
    await page.goto(`${s.origin}/tools.html`);
    const back = await waitListed(e, tabId, "set_status", s.origin);
    await e.sw.evaluate(() => chrome.storage.local.set({ browserTools: false }));
    expect((await listed(e)).tools).toEqual([]);
    const off = await pageCall(e, { tool: back.name, args: { text: "off" }, expect: { tabId, origin: s.origin } });
    expect(off.error).toBe("browser tools are switched off in the ground-link extension");
    expect(await page.textContent("#status")).toBe("idle");
  });
}

test("through the real native host: after the hello is acknowledged the list goes out, and a bridge that does not know it yet carries on", async () => {
  const bin = bridgeBin();
  if (!bin) throw new Error("no ground-link binary: set GROUND_LINK_BIN");
  site = await startWebmcpSite();
  const runtimeDir = tempDir("run");
  bridge = await startBridge(tempDir("sandbox"), { env: { XDG_RUNTIME_DIR: runtimeDir } });
  env = await launch({ nativeHost: bin, env: { XDG_RUNTIME_DIR: runtimeDir } });
  const e = env;
  type Sent = { outcome: string; message: { tools: ListedTool[] } };
  const sentLists = () => e.sw.evaluate(() => (globalThis as unknown as { __groundLinkBrowser: { pageTools_: { history: Sent[] } } }).__groundLinkBrowser.pageTools_.history);
  const acknowledged = () => e.sw.evaluate(() => (globalThis as unknown as { __groundLinkBrowser: { hello: { acknowledged: boolean } } }).__groundLinkBrowser.hello.acknowledged);
  await e.sw.evaluate(() => chrome.storage.local.set({ browserTools: true }));
  await waitFor("the bridge to acknowledge the hello", acknowledged, 20_000);
  const { tabId } = await openTab(e, `${site.origin}/tools.html`);
  const sent = await waitFor("a browser.pageTools with the page's tools sent on the native port", async () => {
    const h = await sentLists();
    return h.find((r) => r.outcome === "sent" && r.message.tools.some((t) => t.tabId === tabId && t.tool === "set_status")) ?? null;
  }, 10_000);
  expect(sent.message.tools.every((t) => t.origin === site!.origin)).toBe(true);
  // the bridge ignored it: the hello stays acknowledged and browser calls still work
  await new Promise((r) => setTimeout(r, 1000));
  expect(await acknowledged()).toBe(true);
  const name = sent.message.tools.find((t) => t.tool === "get_status")!.name;
  const r = await pageCall(e, { tool: name, args: {}, expect: { tabId, origin: site.origin } });
  expect(r).toMatchObject({ ok: true, text: "idle" });
  // switched off: the empty list goes out at once
  await e.sw.evaluate(() => chrome.storage.local.set({ browserTools: false }));
  await waitFor("the empty list sent", async () => (await sentLists()).at(-1)?.message.tools.length === 0 && (await sentLists()).at(-1)?.outcome === "sent", 5_000);
});
