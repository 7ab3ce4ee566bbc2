// The side panel's own calls in the bridge's audit log (DESIGN §12: "with the bridge, its calls
// are audited too"): the built extension in Debian Chromium, paired with a real `ground-link
// serve`, the local WebMCP site and the fake DeepSeek server. A confirmed agent call, a declined
// one and a call by hand each become one `source: panel` line that `ground-link audit verify`
// accepts; with the bridge gone the panel goes on and its log says "not audited: …"; unpaired,
// nothing is sent.
import { spawnSync } from "node:child_process";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { expect, test, type Page } from "@playwright/test";
import { bridgeBin, configurePanelAgent, EXT_ID, launch, pair, panelTurnsDone, startBridge, waitFor, type Bridge, type Env } from "../harness";
import { startWebmcpSite, type WebmcpSite } from "../webmcp-site";
import { GOOD_KEY, startFakeProvider, type FakeProvider } from "../fake-provider";
import { removeTempDirs, tempDir } from "../tmp";

let env: Env | null = null;
let site: WebmcpSite | null = null;
let provider: FakeProvider | null = null;
let bridge: Bridge | null = null;

test.afterEach(async ({}, info) => {
  if (bridge && info.status !== info.expectedStatus) console.log(`--- bridge log (${info.title}) ---\n${bridge.log()}`);
  await bridge?.stop();
  bridge = null;
  await env?.close();
  env = null;
  await site?.close();
  site = null;
  await provider?.close();
  provider = null;
  removeTempDirs(info.status !== info.expectedStatus);
});

type Line = Record<string, unknown> & { source: string; tool: string; status: string };

const panelLines = (b: Bridge) => (b.audit() as unknown as Line[]).filter((l) => l.source === "panel");

async function open(e: Env, s: WebmcpSite): Promise<{ page: Page; panel: Page }> {
  const page = await e.ctx.newPage();
  await page.goto(`${s.origin}/tools.html`);
  const tabId = await e.sw.evaluate(async (u) => (await chrome.tabs.query({ url: u }))[0]?.id ?? -1, `${s.origin}/tools.html`);
  const panel = await e.ctx.newPage();
  await panel.goto(`chrome-extension://${EXT_ID}/panel/panel.html?tabId=${tabId}`);
  await panel.waitForSelector('#tools li[data-tool="set_status"]');
  return { page, panel };
}


/** One agent turn: the fake model calls set_status; the person answers the card with `button`. */
async function turn(panel: Page, button: "allow" | "deny"): Promise<void> {
  const before = await panelTurnsDone(panel);
  await panel.click('nav [data-view="chat"]');
  await panel.fill("#chatInput", "Please set the status.");
  await panel.click("#chatSend");
  await panel.waitForSelector(`.call[data-tool="set_status"][data-state="waiting"]:not([data-seen])`);
  await panel.click(`.call[data-tool="set_status"][data-state="waiting"]:not([data-seen]) button.${button}`);
  await panel.$$eval(".call", (els) => els.forEach((e) => ((e as HTMLElement).dataset.seen = "1")));
  await waitFor("the turn to end", async () => (await panelTurnsDone(panel)) === before + 1);
}

/** The operation log's entries, newest first: tool, who, and what it says about auditing. */
async function logEntries(panel: Page): Promise<{ tool: string; by: string; audit: string | null; text: string }[]> {
  await panel.click('nav [data-view="log"]');
  await panel.waitForSelector("#log li");
  return panel.$$eval("#log li", (els) => els.map((e) => ({ tool: (e as HTMLElement).dataset.tool ?? "", by: (e as HTMLElement).dataset.by ?? "", audit: (e as HTMLElement).dataset.audit ?? null, text: e.textContent ?? "" })));
}

function auditVerify(b: Bridge): { code: number | null; out: string } {
  const r = spawnSync(bridgeBin()!, ["audit", "verify"], { env: b.env, encoding: "utf8" });
  return { code: r.status, out: `${r.stdout}${r.stderr}` };
}

test("paired: the panel's confirmed, declined and by-hand calls are audited lines that verify", async () => {
  site = await startWebmcpSite();
  provider = await startFakeProvider();
  bridge = await startBridge(tempDir("root"));
  env = await launch({ hostRules: [`MAP api.deepseek.com 127.0.0.1:${provider.port}`] });
  await pair(env, bridge);
  const { page, panel } = await open(env, site);
  await configurePanelAgent(panel, GOOD_KEY);

  // a confirmed call: the page changes, and the bridge has the line by the time the log says so
  await turn(panel, "allow");
  expect(await page.textContent("#status")).toBe("set by the model");
  await waitFor("the log entry to say audited", async () => (await logEntries(panel))[0]?.audit === "audited");
  let lines = panelLines(bridge);
  expect(lines.length).toBe(1);
  expect(lines[0]).toMatchObject({
    tool: "set_status",
    origin: site.origin,
    url: `${site.origin}/tools.html`,
    args: { text: "set by the model" },
    status: "success",
    answer: "confirmed in the side panel (not marked read-only)",
    decision: null,
  });
  expect(String(lines[0]!.session)).toMatch(/^panel:[0-9a-f-]{36}$/);
  expect(Number(lines[0]!.outputBytes)).toBeGreaterThan(0);

  // a declined call: nothing runs, and the refusal is on record
  await page.evaluate(() => ((document.getElementById("status") as HTMLElement).textContent = "idle"));
  await turn(panel, "deny");
  expect(await page.textContent("#status")).toBe("idle");
  await waitFor("the second line", () => panelLines(bridge!).length === 2);
  lines = panelLines(bridge);
  expect(lines[1]).toMatchObject({ tool: "set_status", status: "denied", answer: "refused in the side panel (not marked read-only)", note: "the person declined this call" });
  expect(lines[1]!.session).toBe(lines[0]!.session);

  // a call by hand from the inspector
  await panel.click('nav [data-view="tools"]');
  await panel.click('#tools li[data-tool="get_status"] button.open');
  await panel.fill("#callInput", "{}");
  await panel.click("#callBtn");
  await panel.waitForSelector('#callStatus[data-state="done"]');
  await waitFor("the by-hand line", () => panelLines(bridge!).length === 3);
  expect(panelLines(bridge)[2]).toMatchObject({ tool: "get_status", status: "success", answer: "called by hand in the side panel" });
  await waitFor("the by-hand log entry to say audited", async () => (await logEntries(panel)).find((e) => e.by === "hand")?.audit === "audited");

  const v = auditVerify(bridge);
  expect(v.code, v.out).toBe(0);
  expect(JSON.parse(v.out.split("\n")[0]!)).toMatchObject({ lines: 3, problem: null });

  // the bridge gone: the panel still works, and its log says the call was not audited
  await bridge.stop();
  await turn(panel, "allow");
  expect(await page.textContent("#status")).toBe("set by the model");
  const entries = await waitFor("the unaudited entry", async () => {
    const e = (await logEntries(panel))[0];
    return e?.audit?.startsWith("not audited: ") ? e : null;
  });
  expect(entries.audit).toContain("nothing is listening there");
  expect(entries.text).toContain("not audited: ");
  expect(panelLines(bridge).length).toBe(3);
});

test("unpaired: the panel works and sends nothing, and its log says nothing about auditing", async () => {
  site = await startWebmcpSite();
  provider = await startFakeProvider();
  // the extension knows the address (saved in the options) but holds no key: a listener there
  // records every request it gets
  const seen: string[] = [];
  const listener = createServer((req, res) => {
    seen.push(`${req.method} ${req.url}`);
    res.writeHead(404).end();
  });
  await new Promise<void>((r) => listener.listen(0, "127.0.0.1", r));
  const port = (listener.address() as AddressInfo).port;
  try {
    env = await launch({ hostRules: [`MAP api.deepseek.com 127.0.0.1:${provider.port}`] });
    const options = await env.ctx.newPage();
    await options.goto(`chrome-extension://${EXT_ID}/options/options.html`);
    await options.fill("#bridgeUrl", `http://127.0.0.1:${port}`);
    await options.click("#save");
    await options.waitForSelector("#message:text('Saved.')");
    await options.close();
    const { page, panel } = await open(env, site);
    await configurePanelAgent(panel, GOOD_KEY);
    await turn(panel, "allow");
    expect(await page.textContent("#status")).toBe("set by the model");
    const [entry] = await logEntries(panel);
    expect(entry).toMatchObject({ tool: "set_status", by: "agent", audit: null });
    expect(entry!.text).not.toContain("audited");
    // by hand too
    await panel.click('nav [data-view="tools"]');
    await panel.click('#tools li[data-tool="get_status"] button.open');
    await panel.fill("#callInput", "{}");
    await panel.click("#callBtn");
    await panel.waitForSelector('#callStatus[data-state="done"]');
    await waitFor("the by-hand entry", async () => (await logEntries(panel)).some((e) => e.by === "hand"));
    expect((await logEntries(panel)).find((e) => e.by === "hand")?.audit).toBeNull();
    // the worker did talk to that address (its health check), but never sent a report
    await waitFor("the worker's health check at the saved address", () => seen.some((r) => r.startsWith("GET /health")));
    expect(seen.filter((r) => r.includes("/panel-calls"))).toEqual([]);
  } finally {
    listener.closeAllConnections();
    await new Promise<void>((r) => listener.close(() => r()));
  }
});
