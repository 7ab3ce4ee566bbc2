// End-to-end scenarios of issue 14: one per UI generation of the biggest sites, each a local
// replica served at the real host name (ChatGPT's ProseMirror UI and its rebuilt transcript UI,
// Claude.ai, DeepSeek's markup of today), with the built extension and the real bridge: a new
// reply with a <tool> block runs once, and its result is inserted into that site's composer and
// sent. Then the health check, seen where a person sees it: the toolbar tooltip, and the bridge
// behind its token.
import { expect, test, type Page } from "@playwright/test";
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { bridgeBin, cards, clickCardButton, clickShadowButton, launch, openChat, openReplica, pair, sayIn, startBridge, toolCall, TTY_MENU, waitFor, type Bridge, type Env } from "../harness";
import { REPLICA_UI, type ReplicaKind } from "../replicas";
import { ADAPTERS } from "../../src/shared/adapters";
import { removeTempDirs, tempDir } from "../tmp";

const needBridge = () => {
  if (bridgeBin()) return;
  if (process.env.E2E_SKIP_BRIDGE === "1") test.skip(true, "no ground-link binary (E2E_SKIP_BRIDGE=1)");
  throw new Error("no ground-link binary: set GROUND_LINK_BIN (or build target/debug/ground-link); E2E_SKIP_BRIDGE=1 skips these tests");
};

let env: Env;
let bridge: Bridge | null = null;
let dir: string;

test.beforeEach(async () => {
  dir = tempDir("sandbox");
  env = await launch();
});

test.afterEach(async ({}, info) => {
  if (bridge && info.status !== info.expectedStatus) console.log(`--- bridge log (${info.title}) ---\n${bridge.log()}`);
  await bridge?.stop();
  bridge = null;
  await env.close();
  removeTempDirs(info.status !== info.expectedStatus);
});

const prompts = () => env.site.turns.map((t) => t.prompt);

/** The model reads notes.txt once, then answers in words. */
function readNotesModel(): void {
  env.site.setModel((_p, turn) => (turn === 0 ? { answer: `Let me look.\n${toolCall("read_file", { path: "notes.txt" }, "see the notes")}\nOne moment.` } : { answer: "The file says hello." }));
}

/** The result went back as the next message, once, and nothing else ran. */
async function expectRanOnceAndSent(page: Page, composer: string, userTurns: string): Promise<void> {
  await waitFor("the results message", () => env.site.turns.length >= 2, 25_000);
  const sent = prompts()[1] ?? "";
  expect(sent).toContain('<tool_result name="read_file" status="success">');
  expect(sent).toContain("hello from disk");
  await waitFor("card done", async () => (await cards(page))[0]?.states === "done");
  await waitFor("the model's second answer on the page", () => env.site.turns[1]?.streamEndAt !== undefined);
  // a while later: still exactly one call at the bridge and one results message
  await page.waitForTimeout(2000);
  const audit = bridge?.audit() ?? [];
  expect(audit.map((l) => `${l.tool} ${l.status}`)).toEqual(["read_file success"]);
  expect(env.site.turns.length).toBe(2);
  // the results message is on the page as the person's turn, and the composer is empty again
  expect(await page.locator(userTurns).count()).toBe(2);
  const left = await page.$eval(composer, (el) => (el instanceof HTMLTextAreaElement ? el.value : (el.textContent ?? "")).trim());
  expect(left).toBe("");
}

/** The health report the worker keeps for the chat tab (issue 14), once it is newer than `after`. */
async function tabReport(e: Env, urlPattern: string, after: number): Promise<{ problems: unknown[]; checkedAt: number }> {
  return waitFor("a health report for the tab", () =>
    e.sw.evaluate(async ([pattern, since]) => {
      const [tab] = await chrome.tabs.query({ url: pattern as string });
      if (tab?.id === undefined) return null;
      const key = `health:${tab.id}`;
      const r = (await chrome.storage.session.get(key))[key] as { problems: unknown[]; checkedAt: number } | undefined;
      return r && r.checkedAt > (since as number) ? r : null;
    }, [urlPattern, after] as const),
  10_000);
}

const REPLICA_USER_TURNS: Record<ReplicaKind, string> = {
  "chatgpt-1": '[data-message-author-role="user"]',
  "chatgpt-2": 'li[data-message-role="user"]',
  claude: '[data-testid="user-message"]',
};

for (const kind of ["chatgpt-1", "chatgpt-2", "claude"] as const) {
  test(`${kind}: a reply's <tool> block runs once, and its result is pasted into the composer and sent`, async () => {
    needBridge();
    writeFileSync(join(dir, "notes.txt"), "hello from disk\n");
    bridge = await startBridge(dir);
    await pair(env, bridge);
    readNotesModel();
    const page = await openReplica(env, kind);
    if (kind === "claude") {
      // the artifact viewer carries the reply font class and opens next to the reply: its
      // text is not a reply, and a call in it must never run
      await page.evaluate((t) => ((window as unknown as { __ARTIFACT: string }).__ARTIFACT = t), toolCall("write_file", { path: "from-artifact.txt", content: "x" }));
    }
    await page.waitForTimeout(1000);
    await sayIn(page, kind, "what is in notes.txt?");
    await expectRanOnceAndSent(page, REPLICA_UI[kind].composer, REPLICA_USER_TURNS[kind]);
    // the health check after the round, on a page with turns: every role found by the site's
    // own selectors, and the reply ended on the site's streaming signal (not on quiet time)
    const report = await tabReport(env, `https://${kind === "claude" ? "claude.ai" : "chatgpt.com"}/*`, env.site.turns[1]?.receivedAt ?? 0);
    expect(report.problems).toEqual([]);
    // the conversation got its id from the URL the replica pushed (/c/, /uc/, /chat/)
    expect(env.site.turns[0]?.conversation).toMatch(/^[0-9a-f-]{36}$/);
    if (kind === "claude") {
      expect(await page.locator("#artifact-panel .font-claude-response").textContent()).toContain("from-artifact.txt");
      expect(existsSync(join(dir, "from-artifact.txt"))).toBe(false);
    }
  });
}

test("deepseek (today's markup): a reply's <tool> block runs once, and its result is pasted and sent", async () => {
  needBridge();
  writeFileSync(join(dir, "notes.txt"), "hello from disk\n");
  bridge = await startBridge(dir);
  await pair(env, bridge);
  readNotesModel();
  const page = await openChat(env);
  // the shipped streaming selector, read in the real browser (`:placeholder-shown` follows the
  // textarea's value here, which jsdom cannot show): on while the reply streams, off otherwise
  const signal = ADAPTERS.deepseek.streaming[0] as string;
  await page.evaluate((sel) => {
    const w = window as unknown as { __sig: boolean[] };
    w.__sig = [];
    setInterval(() => w.__sig.push(document.querySelector(sel) !== null), 10);
  }, signal);
  await page.waitForTimeout(1000);
  await page.click('textarea[name="search"]');
  await page.keyboard.insertText("what is in notes.txt?");
  expect(await page.evaluate((sel) => document.querySelector(sel) !== null, signal)).toBe(false); // typed, not sent: idle
  await page.click('div[role="button"].ds-button--primary:not(.ds-button--disabled)');
  await expectRanOnceAndSent(page, 'textarea[name="search"]', ".ds-message:not(:has(.ds-markdown))");
  const seen = await page.evaluate(() => (window as unknown as { __sig: boolean[] }).__sig);
  expect(seen.some((on) => on)).toBe(true);
  expect(seen[seen.length - 1]).toBe(false);
  expect((await tabReport(env, "https://chat.deepseek.com/*", env.site.turns[1]?.receivedAt ?? 0)).problems).toEqual([]);
});

/** The toolbar tooltip the worker set for the chat tab. */
async function tabTitle(e: Env, urlPattern: string): Promise<string> {
  return e.sw.evaluate(async (pattern) => {
    const [tab] = await chrome.tabs.query({ url: pattern });
    return tab?.id === undefined ? "" : chrome.action.getTitle({ tabId: tab.id });
  }, urlPattern);
}

test("health check: a DeepSeek page without its send control says so (badge tooltip, bridge behind the token), and Enter still sends", async () => {
  needBridge();
  writeFileSync(join(dir, "notes.txt"), "hello from disk\n");
  bridge = await startBridge(dir);
  await pair(env, bridge);
  readNotesModel();
  const page = await openChat(env);
  // the site "changed": its send control is gone before the page settles (the check runs after)
  await page.evaluate(() => document.querySelector("div[role=button].ds-button--primary")?.remove());
  const title = await waitFor("the health line in the tooltip", async () => {
    const t = await tabTitle(env, "https://chat.deepseek.com/*");
    return t.includes("send button not found") ? t : null;
  }, 15_000);
  expect(title).toContain("DeepSeek: send button not found — using Enter");

  // the bridge has it, behind the token only
  const b = bridge;
  const withToken = await waitFor("the report at the bridge", async () => {
    const v = (await (await fetch(`${b.url}/health`, { headers: { Authorization: `Bearer ${b.token}` } })).json()) as { adapters?: { site: string; problems: string[] }[] };
    return v.adapters?.find((a) => a.site === "deepseek") ?? null;
  }, 10_000);
  expect(withToken.problems).toEqual(["DeepSeek: send button not found — using Enter"]);
  const anonymous = await (await fetch(`${b.url}/health`)).text();
  expect(anonymous).not.toMatch(/deepseek|adapters/i);

  // degrade, don't die: with no button the results go out with Enter
  await page.click('textarea[name="search"]');
  await page.keyboard.insertText("what is in notes.txt?");
  await page.keyboard.press("Enter");
  await waitFor("the results message sent with Enter", () => env.site.turns.length >= 2, 25_000);
  expect(prompts()[1]).toContain("hello from disk");
});

/** ChatGPT's rebuilt UI after the site renamed the assistant role: no shipped or generic selector
 * finds a reply on it. */
async function openRenamedChatgpt(): Promise<Page> {
  env.site.chatgptUi = "chatgpt-2";
  const page = await env.ctx.newPage();
  await page.addInitScript(() => ((window as unknown as { __ASSISTANT_ROLE: string }).__ASSISTANT_ROLE = "model"));
  await page.goto("https://chatgpt.com/");
  await page.waitForSelector(REPLICA_UI["chatgpt-2"].composer);
  await page.waitForTimeout(1000);
  return page;
}

test("Fix this site: after ChatGPT changed its markup, the picker's override (trusted clicks) makes its replies count again", async () => {
  needBridge();
  writeFileSync(join(dir, "notes.txt"), "hello from disk\n");
  bridge = await startBridge(dir);
  await pair(env, bridge);
  env.site.setModel((_p, turn) => (turn === 0 ? { answer: "Hello there." } : turn === 1 ? { answer: `Let me look.\n${toolCall("read_file", { path: "notes.txt" })}` } : { answer: "ok" }));
  const page = await openRenamedChatgpt();
  await sayIn(page, "chatgpt-2", "hi");
  await waitFor("the first answer", () => env.site.turns[0]?.streamEndAt !== undefined);
  const title = await waitFor("the health line", async () => {
    const t = await tabTitle(env, "https://chatgpt.com/*");
    return t.includes("no replies found") ? t : null;
  }, 15_000);
  expect(title).toContain("ChatGPT: no replies found on this page");

  // Fix this site (the popup's button sends this message to the tab)
  await env.sw.evaluate(async () => {
    const [tab] = await chrome.tabs.query({ url: "https://chatgpt.com/*" });
    if (tab?.id !== undefined) await chrome.tabs.sendMessage(tab.id, { type: "startPicker" });
  });
  await page.waitForSelector("ground-link-picker", { state: "attached" });
  // a click a page script makes picks nothing
  await page.evaluate(() => document.querySelector('li[data-message-role="model"] p')?.dispatchEvent(new MouseEvent("click", { bubbles: true })));
  await page.click('li[data-message-role="model"] [data-assistant-markdown] p');
  await page.click(REPLICA_UI["chatgpt-2"].composer);
  await page.click("button[data-composer-submit]", { force: true }); // aria-disabled while the box is empty
  expect(env.site.turns.length).toBe(1); // the picked send button did not send
  await clickShadowButton(page, "GROUND-LINK-PICKER", 0, "Save for this site");
  const saved = await waitFor("the saved override", () =>
    env.sw.evaluate(async () => ((await chrome.storage.local.get("settings")).settings as { overrides?: Record<string, Record<string, string[]>> } | undefined)?.overrides?.chatgpt ?? null),
  );
  expect(saved.assistantMessage).toEqual(['li[data-message-role="model"]']);
  expect(saved.composer).toEqual(["textarea#mobile-composer-prompt"]);
  expect(saved.sendButton).toEqual(["button[data-composer-submit]"]);

  // with the override the next reply's call runs, once, and its result goes back
  await page.reload();
  await page.waitForSelector(REPLICA_UI["chatgpt-2"].composer);
  await page.waitForTimeout(1000);
  await sayIn(page, "chatgpt-2", "what is in notes.txt?");
  await waitFor("the results message", () => env.site.turns.length >= 3, 25_000);
  expect(prompts()[2]).toContain("hello from disk");
  expect((bridge.audit() ?? []).length).toBe(1);
});

test("degrade, don't die: with no reply recognised, a page script cannot confirm a fallback card, a real click does, and the safe call still asks", async () => {
  needBridge();
  writeFileSync(join(dir, "notes.txt"), "hello from disk\n");
  bridge = await startBridge(dir, { approval: "tty" });
  await pair(env, bridge);
  readNotesModel();
  const page = await openRenamedChatgpt();
  const since = bridge.log().length;
  await sayIn(page, "chatgpt-2", "what is in notes.txt?");
  await waitFor("the answer", () => env.site.turns[0]?.streamEndAt !== undefined);
  const card = await waitFor("a card asking for confirmation", async () => {
    const c = await page.$$eval("ground-link-card", (els) => els.map((e) => ({ states: (e as HTMLElement).dataset.states ?? "", confirm: (e as HTMLElement).dataset.confirm ?? "" })));
    return c[0]?.confirm === "asking" ? c[0] : null;
  }, 15_000);
  expect(card.states).toBe("unconfirmed");

  // the page's own script tries every click it can make: on the card's host, at the button's
  // place on screen, and through a shadow root that is closed to it
  const attempts = await page.evaluate(() => {
    const host = document.querySelector("ground-link-card") as HTMLElement;
    host.click();
    const r = host.getBoundingClientRect();
    const tried: string[] = [];
    for (let x = r.left + 2; x < r.right; x += 12) {
      for (let y = r.top + 2; y < r.bottom; y += 6) {
        const el = document.elementFromPoint(x, y);
        if (!el) continue;
        for (const type of ["pointerdown", "mousedown", "pointerup", "mouseup", "click"]) el.dispatchEvent(new MouseEvent(type, { bubbles: true, composed: true, clientX: x, clientY: y }));
        if (el instanceof HTMLElement) el.click();
        tried.push(el.tagName);
      }
    }
    return { shadowRoot: host.shadowRoot === null ? "closed" : "open", tried: tried.length };
  });
  expect(attempts.shadowRoot).toBe("closed");
  expect(attempts.tried).toBeGreaterThan(10);
  await page.waitForTimeout(1500);
  expect(await page.$eval("ground-link-card", (e) => (e as HTMLElement).dataset.confirm)).toBe("asking");
  expect(bridge.audit()).toEqual([]);
  expect(bridge.log().slice(since)).not.toMatch(TTY_MENU);

  // the person's own click confirms; ground-link then asks about the call although a
  // read_file is safe (it would run without a question in a recognised reply)
  await clickCardButton(page, 0, "This is the model's reply");
  await bridge.waitForLog(TTY_MENU, since, 15_000);
  const question = bridge.log().slice(since);
  expect(question).toContain("generic fallback");
  expect(question).toContain("read_file");
  await waitFor("waiting card", async () => (await cards(page))[0]?.states === "waitingApproval", 10_000);
  bridge.write("o\n");
  await waitFor("the results message", () => env.site.turns.length >= 2, 25_000);
  expect(prompts()[1]).toContain("hello from disk");
  const audit = bridge.audit() as unknown as { tool: string; status: string; decision: { decision: string; risk: string; reason: string } }[];
  expect(audit.map((l) => `${l.tool} ${l.status} ${l.decision.decision} ${l.decision.risk}`)).toEqual(["read_file success ask safe"]);
  expect(audit[0]?.decision.reason).toContain("generic fallback");
});

test("health reports made while the bridge was away reach it when it is back, and the popup lists the tab's problems", async () => {
  needBridge();
  // a fixed port and key, so the bridge can go away and come back as the same one
  const first = await startBridge(dir);
  const { port, token } = first;
  bridge = first;
  await pair(env, bridge);
  await bridge.stop();
  bridge = null;
  const page = await openChat(env);
  // the site "changed": its send control is gone before the page settles (the check runs after)
  await page.evaluate(() => document.querySelector("div[role=button].ds-button--primary")?.remove());
  await waitFor("the health line in the tooltip", async () => (await tabTitle(env, "https://chat.deepseek.com/*")).includes("send button not found"), 15_000);

  bridge = await startBridge(dir, { port, token });
  const b = bridge;
  // nobody opens the popup or reloads the page: the worker's own next health check finds the
  // bridge back (its alarm runs every 30 s) and sends what it kept
  const atBridge = await waitFor("the kept report at the bridge", async () => {
    const v = (await (await fetch(`${b.url}/health`, { headers: { Authorization: `Bearer ${b.token}` } })).json()) as { adapters?: { site: string; problems: string[] }[] };
    return v.adapters?.find((a) => a.site === "deepseek") ?? null;
  }, 45_000, 500);
  expect(atBridge.problems).toEqual(["DeepSeek: send button not found — using Enter"]);

  // the popup (opened the way the toolbar opens it, with the chat tab still the active one)
  const opened = env.ctx.waitForEvent("page");
  await env.sw.evaluate(() => chrome.tabs.create({ url: chrome.runtime.getURL("popup/popup.html"), active: false }));
  const popup = await opened;
  await popup.waitForSelector("#siteHealth:not([hidden]) #healthLines li", { timeout: 10_000 });
  const lines = await popup.$$eval("#healthLines li", (els) => els.map((e) => ({ text: e.textContent ?? "", warn: e.classList.contains("warn") })));
  expect(lines).toEqual([{ text: "DeepSeek: send button not found — using Enter", warn: true }]);
  expect(await popup.textContent("#state")).toBe("Connected");
});
