// Browser tools end to end (DESIGN §8.3): the built extension in Debian Chromium, a local site on
// http://127.0.0.1 (an install-time host permission of the extension, so no permission prompt),
// and the dispatcher called exactly as the bridge's `browser.call` messages reach it, through
// `__groundLinkBrowser.handle` in the service worker. The last test goes through the real native
// host and `ground-link serve` and checks the hello and its backoff.
import { expect, test, type Page } from "@playwright/test";
import { bridgeBin, launch, startBridge, waitFor, type Bridge, type Env } from "../harness";
import { HIDDEN_VALUE, PASSWORD_VALUE, startBrowserSite, type BrowserSite } from "../browser-site";
import { removeTempDirs, tempDir } from "../tmp";

let env: Env | null = null;
let site: BrowserSite | null = null;
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

interface Result {
  type: string;
  id: string;
  ok: boolean;
  error?: string;
  text?: string;
  target?: { tabId: number | null; url: string | null; title: string; destination?: string; chatTab: boolean; element?: { tag: string; role: string; name: string; inputType?: string; inForm: boolean } };
}

let seq = 0;

/** One browser.call, as the bridge sends it; the answer as the extension would post it back. */
async function call(e: Env, m: Record<string, unknown>): Promise<Result> {
  const id = `e2e-${++seq}`;
  const r = (await e.sw.evaluate(
    (msg) => (globalThis as unknown as { __groundLinkBrowser: { handle(m: unknown): Promise<unknown> } }).__groundLinkBrowser.handle(msg),
    { type: "browser.call", id, ...m },
  )) as Result;
  expect(r.type).toBe("browser.result");
  expect(r.id).toBe(id);
  return r;
}

const ok = (r: Result): string => {
  if (!r.ok) throw new Error(`expected ok, got: ${r.error}`);
  return r.text ?? "";
};
const err = (r: Result): string => {
  if (r.ok) throw new Error(`expected an error, got: ${JSON.stringify(r)}`);
  return r.error ?? "";
};

function refOf(outline: string, pattern: RegExp): string {
  const line = outline.split("\n").find((l) => pattern.test(l));
  const m = line ? /\[ref=(e\d+)\]/.exec(line) : null;
  if (!m?.[1]) throw new Error(`no ref on a line matching ${pattern} in:\n${outline}`);
  return m[1];
}

async function start(toolsOn = true): Promise<void> {
  site = await startBrowserSite();
  env = await launch();
  await env.sw.evaluate((v) => chrome.storage.local.set({ browserTools: v }), toolsOn);
}

async function openTab(path: string): Promise<{ page: Page; tabId: number }> {
  const page = await env!.ctx.newPage();
  const url = `${site!.origin}${path}`;
  await page.goto(url);
  const tabId = await env!.sw.evaluate(async (u) => (await chrome.tabs.query({ url: u }))[0]?.id ?? -1, url);
  expect(tabId).toBeGreaterThan(0);
  return { page, tabId };
}

test("browser tools: snapshot hides secrets, input by ref, submit reaches the site, click navigates, old refs go stale", async () => {
  await start();
  const e = env!;
  const s = site!;
  const { page, tabId } = await openTab("/form.html");
  const expectHere = { tabId, origin: s.origin };

  // before any snapshot: the refs the page planted in its own world mean nothing
  expect(err(await call(e, { op: "run", tool: "click_element", args: { tabId, ref: "e1" }, expect: expectHere }))).toMatch(/ref e1 is not on this page.*take a new snapshot_page/);
  expect(await page.evaluate(() => (window as unknown as { trapped: number }).trapped)).toBe(0);

  const seen = await call(e, { op: "inspect", tool: "snapshot_page", args: { tabId } });
  expect(seen.target).toEqual({ tabId, url: `${s.origin}/form.html`, title: "Sign in — fixture", chatTab: false });

  const outline = ok(await call(e, { op: "run", tool: "snapshot_page", args: { tabId }, expect: expectHere }));
  expect(outline).toMatch(/heading "Sign in" \[level=1\]/);
  expect(outline).toMatch(/textbox "Your name" \[ref=e\d+\]/);
  expect(outline).toMatch(/textbox "Password" \[ref=e\d+\] type=password value=\(hidden\)/);
  expect(outline).toMatch(/button "Send" \[ref=e\d+\]/);
  expect(outline).toMatch(/link "Go to the next page" \[ref=e\d+\] href="http:\/\/127\.0\.0\.1:\d+\/next\.html"/);
  expect(outline).not.toContain(PASSWORD_VALUE);
  expect(outline).not.toContain(HIDDEN_VALUE);
  const dom = ok(await call(e, { op: "read", uri: "browser://current/dom" }));
  expect(dom.startsWith(`tab ${tabId} at ${s.origin}/form.html\n`)).toBe(true);
  expect(dom).toContain('<input id="q" name="q" type="text">');
  expect(dom).not.toContain(PASSWORD_VALUE);
  expect(dom).not.toContain(HIDDEN_VALUE);
  // the page's own scripts see no trace of the refs (only what the page itself planted)
  expect(await page.evaluate(() => document.documentElement.outerHTML.replace(/<script>[\s\S]*<\/script>/, "").replace(' data-ref="e1"', ""))).not.toMatch(/\bref=|\be\d+\b|groundLink/);
  expect(await page.evaluate(() => [...(window as unknown as { __groundLinkRefs: { map: Map<string, Element> } }).__groundLinkRefs.map.values()].every((el) => el.id === "trap"))).toBe(true);

  const name = refOf(outline, /textbox "Your name"/);
  const pw = refOf(outline, /textbox "Password"/);
  const pwSeen = await call(e, { op: "inspect", tool: "input_text", args: { tabId, ref: pw, text: "x" } });
  expect(pwSeen.target?.element).toEqual({ tag: "input", role: "textbox", name: "Password", inputType: "password", inForm: true });

  const typed = ok(await call(e, { op: "run", tool: "input_text", args: { tabId, ref: name, text: "Ada from ground-link" }, expect: expectHere }));
  expect(typed).toBe('typed "Ada from ground-link" into textbox "Your name"');
  expect(await page.inputValue("#q")).toBe("Ada from ground-link");
  const secret = ok(await call(e, { op: "run", tool: "input_text", args: { tabId, ref: pw, text: "n3w-s3cret-typed" }, expect: expectHere }));
  expect(secret).not.toContain("n3w-s3cret-typed");

  const submitted = ok(await call(e, { op: "run", tool: "submit_form", args: { tabId, ref: name }, expect: expectHere }));
  expect(submitted).toMatch(/^submitted the form; the tab is now at http:\/\/127\.0\.0\.1:\d+\/submit \(it navigated\)\. Take a new snapshot_page/);
  expect(s.posts).toHaveLength(1);
  expect(new URLSearchParams(s.posts[0]).get("q")).toBe("Ada from ground-link");

  // a ref from before the navigation
  expect(err(await call(e, { op: "run", tool: "click_element", args: { tabId, ref: name }, expect: expectHere }))).toMatch(/ref e\d+ is not on this page any more.*take a new snapshot_page/);
  expect(err(await call(e, { op: "inspect", tool: "click_element", args: { tabId, ref: name } }))).toMatch(/take a new snapshot_page/);

  // navigate_to waits for the load and says where it landed
  const back = ok(await call(e, { op: "run", tool: "navigate_to", args: { tabId, url: "/form.html" }, expect: expectHere }));
  expect(back).toBe(`loaded ${s.origin}/form.html, title "Sign in — fixture"`);
  const again = ok(await call(e, { op: "run", tool: "snapshot_page", args: { tabId }, expect: expectHere }));
  const link = refOf(again, /link "Go to the next page"/);
  const clicked = ok(await call(e, { op: "run", tool: "click_element", args: { tabId, ref: link }, expect: expectHere }));
  expect(clicked).toMatch(/^clicked link "Go to the next page"; the tab is now at http:\/\/127\.0\.0\.1:\d+\/next\.html \(it navigated\)/);
  expect(page.url()).toBe(`${s.origin}/next.html`);
  expect(refOf(again, /button "Trap"/)).not.toBe(link);

  // approved for another origin: nothing is done
  const stale = await call(e, { op: "run", tool: "navigate_to", args: { tabId, url: "/form.html" }, expect: { tabId, origin: "https://example.com" } });
  expect(err(stale)).toBe(`the tab is now at ${s.origin} (it was https://example.com when the call was approved); nothing was done — call the tool again`);
  expect(page.url()).toBe(`${s.origin}/next.html`);

  // never-URLs, even when "approved"
  for (const url of ["chrome://settings", "file:///etc/passwd"]) {
    expect(err(await call(e, { op: "inspect", tool: "navigate_to", args: { tabId, url } }))).toMatch(/never open or act on (chrome|file): URLs/);
    expect(err(await call(e, { op: "run", tool: "navigate_to", args: { tabId, url }, expect: expectHere }))).toMatch(/never open or act on (chrome|file): URLs/);
    expect(err(await call(e, { op: "run", tool: "open_tab", args: { url } }))).toMatch(/never open or act on/);
  }
  expect(page.url()).toBe(`${s.origin}/next.html`);

  // a form whose fields shadow its methods (an input named "requestSubmit") is still submitted
  ok(await call(e, { op: "run", tool: "navigate_to", args: { tabId, url: "/named.html" }, expect: expectHere }));
  expect(ok(await call(e, { op: "run", tool: "submit_form", args: { tabId, selector: "form" }, expect: expectHere }))).toMatch(/^submitted the form; the tab is now at .*\/submit \(it navigated\)/);
  expect(s.posts).toHaveLength(2);
  expect(new URLSearchParams(s.posts[1]).get("requestSubmit")).toBe("a");

  const tabs = JSON.parse(ok(await call(e, { op: "read", uri: "browser://tabs" }))) as { url: string | null }[];
  expect(tabs.some((t) => t.url?.startsWith("chrome://settings") || t.url?.startsWith("file:"))).toBe(false);
});

test("browser tools: open_tab, switch_tab and close_tab; a tab closed mid-call is a clear error", async () => {
  await start();
  const e = env!;
  const s = site!;
  const { tabId: first } = await openTab("/form.html");
  // a chat site's tab is marked, for the bridge's "not the chat the call came from" rule
  const chat = await e.ctx.newPage();
  await chat.goto("https://chat.deepseek.com/");
  const chatTab = await e.sw.evaluate(async () => (await chrome.tabs.query({ url: "https://chat.deepseek.com/*" }))[0]?.id ?? -1);
  expect((await call(e, { op: "inspect", tool: "snapshot_page", args: { tabId: chatTab } })).target).toMatchObject({ tabId: chatTab, chatTab: true, url: "https://chat.deepseek.com/" });
  expect((await call(e, { op: "inspect", tool: "snapshot_page", args: { tabId: first } })).target?.chatTab).toBe(false);
  await chat.close();
  const opened = ok(await call(e, { op: "run", tool: "open_tab", args: { url: `${s.origin}/next.html` } }));
  const m = /^opened tab (\d+) at (\S+), title "Next page"$/.exec(opened);
  expect(m?.[2]).toBe(`${s.origin}/next.html`);
  const second = Number(m?.[1]);
  let tabs = JSON.parse(ok(await call(e, { op: "read", uri: "browser://tabs" }))) as { tabId: number; url: string | null; title: string; active: boolean; windowId: number }[];
  expect(tabs.find((t) => t.tabId === second)).toMatchObject({ url: `${s.origin}/next.html`, title: "Next page", active: true });
  expect(tabs.find((t) => t.tabId === first)?.active).toBe(false);

  const state = JSON.parse(ok(await call(e, { op: "read", uri: "browser://current/state" }))) as { tabId: number; readyState: string; tabs: unknown[] };
  expect(state).toMatchObject({ tabId: second, url: `${s.origin}/next.html`, readyState: "complete" });

  expect(ok(await call(e, { op: "run", tool: "switch_tab", args: { tabId: first }, expect: { tabId: first, origin: s.origin } }))).toBe(`switched to tab ${first} (${s.origin}/form.html)`);
  tabs = JSON.parse(ok(await call(e, { op: "read", uri: "browser://tabs" })));
  expect(tabs.find((t) => t.tabId === first)?.active).toBe(true);
  // no tabId: the active tab
  const inspected = await call(e, { op: "inspect", tool: "snapshot_page", args: {} });
  expect(inspected.target?.tabId).toBe(first);

  expect(ok(await call(e, { op: "run", tool: "close_tab", args: { tabId: second }, expect: { tabId: second, origin: s.origin } }))).toBe(`closed tab ${second} (${s.origin}/next.html)`);
  tabs = JSON.parse(ok(await call(e, { op: "read", uri: "browser://tabs" })));
  expect(tabs.some((t) => t.tabId === second)).toBe(false);
  expect(err(await call(e, { op: "run", tool: "switch_tab", args: { tabId: second }, expect: { tabId: second, origin: s.origin } }))).toMatch(new RegExp(`there is no tab ${second}`));

  // closed while its navigation is still loading (the slow page answers after 8 s)
  const t0 = Date.now();
  const pending = call(e, { op: "run", tool: "navigate_to", args: { tabId: first, url: "/slow.html" }, expect: { tabId: first, origin: s.origin } });
  await new Promise((r) => setTimeout(r, 700));
  await e.sw.evaluate((id) => chrome.tabs.remove(id), first);
  expect(err(await pending)).toBe(`tab ${first} was closed while its page loaded; read browser://tabs for the open tabs`);
  expect(Date.now() - t0).toBeLessThan(5000);
});

test("browser tools: with the switch off every call is refused", async () => {
  await start(false);
  const e = env!;
  const s = site!;
  const { tabId, page } = await openTab("/form.html");
  const here = { tabId, origin: s.origin };
  const calls: Record<string, unknown>[] = [
    { op: "inspect", tool: "snapshot_page", args: { tabId } },
    { op: "run", tool: "snapshot_page", args: { tabId }, expect: here },
    { op: "run", tool: "navigate_to", args: { tabId, url: "/next.html" }, expect: here },
    { op: "run", tool: "click_element", args: { tabId, selector: "a" }, expect: here },
    { op: "run", tool: "input_text", args: { tabId, selector: "#q", text: "x" }, expect: here },
    { op: "run", tool: "submit_form", args: { tabId, selector: "form" }, expect: here },
    { op: "run", tool: "open_tab", args: { url: `${s.origin}/next.html` } },
    { op: "run", tool: "switch_tab", args: { tabId }, expect: here },
    { op: "run", tool: "close_tab", args: { tabId }, expect: here },
    { op: "read", uri: "browser://tabs" },
    { op: "read", uri: "browser://current/state" },
    { op: "read", uri: "browser://current/dom" },
  ];
  for (const c of calls) expect(err(await call(e, c)), JSON.stringify(c)).toBe("browser tools are switched off in the ground-link extension");
  expect(page.url()).toBe(`${s.origin}/form.html`);
  expect(await page.inputValue("#q")).toBe("");
  expect(e.ctx.pages().length).toBe(2); // the first blank page and ours: no tab opened, none closed
  expect(s.posts).toEqual([]);
  // on again: the same call works
  await e.sw.evaluate(() => chrome.storage.local.set({ browserTools: true }));
  expect(ok(await call(e, { op: "run", tool: "snapshot_page", args: { tabId }, expect: here }))).toMatch(/textbox "Your name"/);
});

test("browser tools: the extension says browser.hello through the real native host, backs off while it is not acknowledged, and is acknowledged once ground-link runs", async () => {
  const bin = bridgeBin();
  if (!bin) throw new Error("no ground-link binary: set GROUND_LINK_BIN");
  const runtimeDir = tempDir("run");
  // no ground-link yet: the native host answers every hello with an error
  env = await launch({ nativeHost: bin, env: { XDG_RUNTIME_DIR: runtimeDir } });
  const e = env;
  type Rec = { at: number; tools: boolean; answer: string | null };
  type Hello = { history: Rec[]; acknowledged: boolean };
  const hello = () => e.sw.evaluate(() => {
    const h = (globalThis as unknown as { __groundLinkBrowser: { hello: Hello } }).__groundLinkBrowser.hello;
    return { history: h.history.map((r) => ({ ...r })), acknowledged: h.acknowledged };
  });
  const first = await waitFor("the first hello and its answer", async () => {
    const h = await hello();
    return h.history[0]?.answer ? h.history : null;
  }, 20_000);
  expect(first[0]?.tools).toBe(false);
  expect(first[0]?.answer).toMatch(/ground-link is not running/);
  // the extension keeps asking, but no faster than 1 s, 2 s, 4 s … after each answer
  const retried = await waitFor("two retries", async () => {
    const h = await hello();
    return h.history.length >= 3 && h.history[2]!.answer ? h : null;
  }, 10_000);
  expect(retried.acknowledged).toBe(false);
  for (let i = 1; i < 3; i++) {
    const gap = retried.history[i]!.at - retried.history[i - 1]!.at;
    expect(gap, `gap ${i}`).toBeGreaterThanOrEqual(1000 * 2 ** (i - 1) - 50);
    expect(retried.history[i]!.answer).toMatch(/ground-link is not running/);
  }
  // ground-link starts and the switch turns on: a hello with tools:true goes out at once and is
  // acknowledged (backoff starts over on a switch change)
  bridge = await startBridge(tempDir("sandbox"), { env: { XDG_RUNTIME_DIR: runtimeDir } });
  const switched = Date.now();
  await e.sw.evaluate(() => chrome.storage.local.set({ browserTools: true }));
  const acked = await waitFor("the acknowledged hello with tools on", async () => {
    const h = await hello();
    const last = h.history.at(-1);
    return last?.tools && last.answer ? h : null;
  }, 5_000);
  expect(acked.history.at(-1)?.answer).toBe("ok");
  expect(acked.acknowledged).toBe(true);
  expect(acked.history.at(-1)!.at - switched).toBeLessThan(1000); // at once, not after the backoff
});
