// The side panel agent end to end (issue 13 item 4): the DeepSeek preset talking to a fake
// OpenAI-compatible server mapped onto api.deepseek.com, a full turn with a streamed tool call
// that waits for the person's confirmation and changes the page, the key kept where neither the
// page nor a content script can read it, and the errors a person sees.
import { expect, test, type Page } from "@playwright/test";
import { configurePanelAgent, EXT_ID, launch, panelTurnsDone, waitFor, type Env } from "../harness";
import { startWebmcpSite, type WebmcpSite } from "../webmcp-site";
import { GOOD_KEY, startFakeProvider, type FakeProvider } from "../fake-provider";
import { removeTempDirs } from "../tmp";

let env: Env;
let site: WebmcpSite;
let provider: FakeProvider;

test.afterEach(async ({}, info) => {
  await env?.close();
  await site?.close();
  await provider?.close();
  removeTempDirs(info.status !== info.expectedStatus);
});

async function start(native: boolean): Promise<{ page: Page; panel: Page; tabId: number }> {
  site = await startWebmcpSite();
  provider = await startFakeProvider();
  env = await launch({ args: native ? ["--enable-features=WebMCP"] : [], hostRules: [`MAP api.deepseek.com 127.0.0.1:${provider.port}`] });
  const page = await env.ctx.newPage();
  await page.goto(`${site.origin}/tools.html`);
  const tabId = await env.sw.evaluate(async (u) => (await chrome.tabs.query({ url: u }))[0]?.id ?? -1, `${site.origin}/tools.html`);
  const panel = await env.ctx.newPage();
  await panel.goto(`chrome-extension://${EXT_ID}/panel/panel.html?tabId=${tabId}`);
  await panel.waitForSelector('#tools li[data-tool="set_status"]');
  await panel.waitForSelector('#tools li[data-tool="frame_echo"]');
  return { page, panel, tabId };
}


async function say(panel: Page, text: string): Promise<void> {
  const before = Number((await panel.getAttribute("#chat", "data-turns")) ?? "0");
  await panel.fill("#chatInput", text);
  await panel.click("#chatSend");
  return void (await waitFor("the turn to start", async () => !(await panel.isEnabled("#chatSend")) || Number((await panel.getAttribute("#chat", "data-turns")) ?? "0") > before, 5000));
}


for (const native of [false, true]) {
  test(`${native ? "native" : "polyfill"}: a full agent turn — streamed tool call, confirmation, the page changes, the answer`, async () => {
    const { page, panel } = await start(native);
    await configurePanelAgent(panel, GOOD_KEY);
    expect(await panel.textContent("#keyState")).toBe("A key is set.");
    expect(await panel.inputValue("#apiKey")).toBe("");

    await say(panel, "Please set the status.");
    // set_status is not read-only: the call waits for the person
    const card = await panel.waitForSelector('.call[data-tool="set_status"][data-state="waiting"]');
    expect(await card.textContent()).toContain('{"text":"set by the model"}');
    await page.waitForTimeout(300);
    expect(await page.textContent("#status")).toBe("idle");
    await panel.click('.call[data-tool="set_status"] button.allow');
    await waitFor("the page to change", async () => (await page.textContent("#status")) === "set by the model");
    await waitFor("the turn to end", async () => (await panelTurnsDone(panel)) === 1);
    expect(await panel.$eval(".call", (e) => (e as HTMLElement).dataset.state)).toBe("done");
    expect(await panel.textContent("#chat")).toContain("Done: the status now says what you asked.");
    expect(await panel.textContent("#chat .reasoning")).toBe("The person wants the status changed.");

    // what the provider got: the preset's request, tools with delimited descriptions, and on the
    // second request the tool result (delimited) and the reasoning replayed (DeepSeek needs it)
    expect(provider.requests.length).toBe(2);
    const first = provider.requests[0]!.body;
    expect(first.model).toBe("deepseek-chat");
    expect(first.tool_choice).toBe("auto");
    expect(first.tools?.map((t) => t.function.name).sort()).toEqual(["add_note", "frame_echo", "get_status", "set_status", "slow_wait"]);
    expect(first.tools?.[0]?.function.description.startsWith("<untrusted-page-content origin=")).toBe(true);
    const second = provider.requests[1]!.body.messages;
    const assistant = second.find((m) => m.role === "assistant");
    expect(assistant?.reasoning_content).toBe("The person wants the status changed.");
    const tool = second.find((m) => m.role === "tool");
    expect(tool?.tool_call_id).toBe("call_0_fake");
    expect(tool?.content).toContain(`<untrusted-page-content origin="${site.origin}" tool="set_status" kind="result">`);
    expect(tool?.content).toContain('{"ok":true,"status":"set by the model"}');

    // the operation log has the agent's call
    await panel.click('nav [data-view="log"]');
    await panel.waitForSelector('#log li[data-tool="set_status"]');
  });
}

test("a declined call goes back to the model as declined and the page stays as it was", async () => {
  const { page, panel } = await start(false);
  await configurePanelAgent(panel, GOOD_KEY);
  await say(panel, "Please set the status.");
  await panel.waitForSelector('.call[data-tool="set_status"][data-state="waiting"]');
  await panel.click('.call[data-tool="set_status"] button.deny');
  await waitFor("the turn to end", async () => (await panelTurnsDone(panel)) === 1);
  expect(await page.textContent("#status")).toBe("idle");
  expect(provider.requests[1]?.body.messages.find((m) => m.role === "tool")?.content).toBe("error: the person declined this call");
});

test("the key: neither the page nor a content script can read it, and no message hands it out", async () => {
  const { page, panel } = await start(false);
  await configurePanelAgent(panel, GOOD_KEY);
  // the page world has no extension API at all
  expect(await page.evaluate(() => typeof (globalThis as { chrome?: { runtime?: unknown; storage?: unknown } }).chrome?.storage)).toBe("undefined");
  // the content script's own world (found through DevTools): storage.local is closed to it, and
  // asking the worker for the key status is refused (it is a panel-only request)
  const cdp = await page.context().newCDPSession(page);
  const contexts: { id: number; name: string; auxData?: { type?: string } }[] = [];
  cdp.on("Runtime.executionContextCreated", (e: { context: { id: number; name: string; auxData?: { type?: string } } }) => contexts.push(e.context));
  await cdp.send("Runtime.enable");
  const isolated = await waitFor("the content script's world", () => contexts.find((c) => c.auxData?.type === "isolated" && c.name === "ground-link"), 5000);
  const run = async (expression: string) =>
    ((await cdp.send("Runtime.evaluate", { expression, contextId: isolated.id, awaitPromise: true, returnByValue: true })) as { result: { value?: unknown } }).result.value;
  const storage = await run(`chrome.storage.local.get(null).then((v) => "read: " + JSON.stringify(v), (e) => "refused: " + e.message)`);
  expect(String(storage)).toMatch(/^refused: /);
  expect(String(storage)).not.toContain(GOOD_KEY);
  const asked = await run(`chrome.runtime.sendMessage({ type: "keyStatus" }).then((r) => JSON.stringify(r))`);
  expect(String(asked)).toContain("only the extension's own pages");
  const agentPort = await run(`new Promise((res) => { const p = chrome.runtime.connect({ name: "ground-link-agent" }); p.onDisconnect.addListener(() => res("closed")); p.onMessage.addListener((m) => res("got " + JSON.stringify(m))); p.postMessage({ type: "run", tabId: 1, text: "x", history: [] }); setTimeout(() => res("open"), 2000); })`);
  expect(agentPort).toBe("closed");
  expect(provider.requests.length).toBe(0);
  await cdp.detach();
  // and the key is in the worker's storage.local, not in sync
  expect(await env.sw.evaluate(async () => JSON.stringify(await chrome.storage.sync.get(null)))).not.toContain(GOOD_KEY);
  expect(await env.sw.evaluate(async () => ((await chrome.storage.local.get("providerKeys")).providerKeys as Record<string, string>).deepseek)).toBe(GOOD_KEY);
});

test("clear errors: a wrong key, a rate limit with its retry-after, an unreachable provider", async () => {
  const { panel } = await start(false);
  await configurePanelAgent(panel, "sk-wrong");
  await say(panel, "hello");
  await waitFor("the turn to end", async () => (await panelTurnsDone(panel)) === 1);
  expect(await panel.textContent('#chat [data-kind="error"]')).toContain("DeepSeek refused the API key (401: Authentication Fails, Your api key is invalid); check the key in the panel's settings");
  await configurePanelAgent(panel, GOOD_KEY);
  provider.mode = "rateLimit";
  await say(panel, "hello again");
  await waitFor("the turn to end", async () => (await panelTurnsDone(panel)) === 2);
  expect(await panel.$$eval('#chat [data-kind="error"]', (els) => els.map((e) => e.textContent).join("\n"))).toContain("DeepSeek is rate-limiting this key (429) — retry after 17 s: Rate limit reached");
  // the provider gone: unreachable, named with its address
  await provider.close();
  await say(panel, "are you there?");
  await waitFor("the turn to end", async () => (await panelTurnsDone(panel)) === 3);
  expect(await panel.$$eval('#chat [data-kind="error"]', (els) => els.map((e) => e.textContent).join("\n"))).toMatch(/could not reach DeepSeek at https:\/\/api\.deepseek\.com \(.*\); check the base URL and the connection/);
});

test("a page without tools: the model answers without them, and the panel says so", async () => {
  site = await startWebmcpSite();
  provider = await startFakeProvider();
  env = await launch({ hostRules: [`MAP api.deepseek.com 127.0.0.1:${provider.port}`] });
  const page = await env.ctx.newPage();
  await page.goto(`${site.origin}/blank.html`);
  const tabId = await env.sw.evaluate(async (u) => (await chrome.tabs.query({ url: u }))[0]?.id ?? -1, `${site.origin}/blank.html`);
  const panel = await env.ctx.newPage();
  await panel.goto(`chrome-extension://${EXT_ID}/panel/panel.html?tabId=${tabId}`);
  await configurePanelAgent(panel, GOOD_KEY);
  await say(panel, "hello");
  await waitFor("the turn to end", async () => (await panelTurnsDone(panel)) === 1);
  expect(await panel.textContent("#chat")).toContain("this page offers no tools; the model answers without them");
  expect(provider.requests[0]?.body.tools).toBeUndefined();
});
