// Page tools end to end (issue 13): the built extension in Debian Chromium, a local test site on
// 127.0.0.1, the side panel opened as a tab at its extension URL. Each scenario runs on the
// native WebMCP path (`--enable-features=WebMCP`) and on the polyfill path (flag off). No bridge.
import { expect, test, type Page } from "@playwright/test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { EXT_DIR, EXT_ID, launch, waitFor, type Env } from "../harness";
import { startWebmcpSite, type WebmcpSite } from "../webmcp-site";
import { removeTempDirs } from "../tmp";

let env: Env;
let site: WebmcpSite;

test.afterEach(async ({}, info) => {
  await env?.close();
  await site?.close();
  removeTempDirs(info.status !== info.expectedStatus);
});

async function start(native: boolean): Promise<void> {
  site = await startWebmcpSite();
  env = await launch({ args: native ? ["--enable-features=WebMCP"] : [] });
}

async function openPage(path: string): Promise<{ page: Page; tabId: number }> {
  const page = await env.ctx.newPage();
  const url = `${site.origin}${path}`;
  await page.goto(url);
  const tabId = await env.sw.evaluate(async (u) => (await chrome.tabs.query({ url: u }))[0]?.id ?? -1, url);
  expect(tabId).toBeGreaterThan(0);
  return { page, tabId };
}

async function openPanel(tabId: number): Promise<Page> {
  const panel = await env.ctx.newPage();
  await panel.goto(`chrome-extension://${EXT_ID}/panel/panel.html?tabId=${tabId}`);
  return panel;
}

/** Opens a tool's details in the panel, types its input as JSON and presses Call. */
async function callByHand(panel: Page, tool: string, input: unknown): Promise<{ state: string; status: string; raw: string; delimited: string; roundTripMs: number }> {
  await panel.click(`#tools li[data-tool="${tool}"] button.open`);
  await panel.fill("#callInput", JSON.stringify(input));
  await panel.click("#callBtn");
  await panel.waitForSelector("#callStatus[data-state]");
  const out = await panel.evaluate(() => {
    const s = document.getElementById("callStatus") as HTMLElement;
    return { state: s.dataset.state ?? "", status: s.textContent ?? "", raw: document.getElementById("callResult")?.textContent ?? "", delimited: document.getElementById("callDelimited")?.textContent ?? "", roundTripMs: Number(s.dataset.roundTripMs) };
  });
  await panel.evaluate(() => delete (document.getElementById("callStatus") as HTMLElement).dataset.state);
  return out;
}

const frameApis = (e: Env, tabId: number) =>
  e.sw.evaluate(async (id) => {
    const got = (await chrome.storage.session.get(`pageTools:${id}`))[`pageTools:${id}`] as Record<string, { api: string; tools: { name: string }[] }> | undefined;
    return Object.values(got ?? {}).map((f) => f.api);
  }, tabId);

for (const native of [true, false]) {
  const path = native ? "native" : "polyfill";

  test(`${path}: the panel lists imperative and declarative tools, calls them by hand, and the page changes`, async () => {
    await start(native);
    const { page, tabId } = await openPage("/tools.html");
    // the page itself sees the API either way (native, or our polyfill in its world)
    expect(await page.evaluate(() => typeof (document as unknown as { modelContext?: { registerTool?: unknown } }).modelContext?.registerTool)).toBe("function");
    expect(await page.evaluate(() => "modelContext" in navigator)).toBe(!native);
    const panel = await openPanel(tabId);
    await panel.waitForSelector('#tools li[data-tool="set_status"]');
    await panel.waitForSelector('#tools li[data-tool="add_note"]');
    await panel.waitForSelector('#tools li[data-tool="frame_echo"]');
    // the top page and its frame each report their own tools
    expect(await frameApis(env, tabId)).toEqual([path, path]);
    expect(await panel.$$eval("#tools li", (els) => els.map((e) => (e as HTMLElement).dataset.tool).sort())).toEqual(["add_note", "frame_echo", "get_status", "set_status", "slow_wait"]);
    expect(await panel.$eval('#tools li[data-tool="frame_echo"]', (e) => (e as HTMLElement).dataset.frame)).not.toBe("0");
    // the inspector shows origin, hints and schema
    await panel.click('#tools li[data-tool="get_status"] button.open');
    expect(await panel.textContent("#detailOrigin")).toBe(site.origin);
    // native Chromium fills in every hint (false by default); the polyfill passes only what was given
    expect(JSON.parse((await panel.textContent("#detailAnnotations")) ?? "{}")).toMatchObject({ readOnlyHint: true });
    await panel.click('#tools li[data-tool="set_status"] button.open');
    expect(JSON.parse((await panel.textContent("#detailSchema")) ?? "{}")).toEqual({ type: "object", properties: { text: { type: "string", description: "new status" } }, required: ["text"] });
    // the form from the schema writes the JSON that is sent
    await panel.fill('#callForm input[data-param="text"]', "typed in the form");
    expect(JSON.parse(await panel.inputValue("#callInput"))).toEqual({ text: "typed in the form" });

    const set = await callByHand(panel, "set_status", { text: "changed by the panel" });
    expect(set.state).toBe("done");
    expect(JSON.parse(set.raw)).toEqual({ ok: true, status: "changed by the panel" });
    expect(await page.textContent("#status")).toBe("changed by the panel");
    expect(set.delimited).toContain(`<untrusted-page-content origin="${site.origin}" tool="set_status" kind="result">`);

    const note = await callByHand(panel, "add_note", { text: "a declarative note" });
    expect(note.state).toBe("done");
    expect(JSON.parse(note.raw)).toEqual({ added: "a declarative note", count: 1 });
    expect(await page.textContent("#notes li")).toBe("a declarative note");

    // input that is not a JSON object never reaches the page
    await panel.fill("#callInput", '["not", "an", "object"]');
    await panel.click("#callBtn");
    await panel.waitForSelector("#callStatus.error");
    expect(await panel.textContent("#callStatus")).toContain("The input is not a JSON object");
    expect(await page.textContent("#status")).toBe("changed by the panel");

    // a tool in the frame runs in the frame
    const echo = await callByHand(panel, "frame_echo", { words: "hello frame" });
    expect(echo.raw).toBe("the frame said hello frame");
    expect(await page.frameLocator("iframe").locator("#said").textContent()).toBe("hello frame");

    // Cancel reaches the page: the tool's own signal aborts, and the panel says the call was cancelled
    await panel.click('#tools li[data-tool="slow_wait"] button.open');
    await panel.fill("#callInput", "{}");
    await panel.click("#callBtn");
    await panel.waitForSelector("#cancelBtn:enabled");
    await page.waitForTimeout(200);
    await panel.click("#cancelBtn");
    await panel.waitForSelector('#callStatus[data-state="failed"]');
    expect(await panel.textContent("#callStatus")).toBe("Failed: cancelled by the person");
    await waitFor("the page's tool to see the abort", () => page.evaluate(() => (window as unknown as { __slowAborted?: boolean }).__slowAborted === true), 3000);
    await panel.evaluate(() => delete (document.getElementById("callStatus") as HTMLElement).dataset.state);

    // a tool registered later shows up without a refresh (toolchange)
    // timed inside the browser (page and panel share the machine's clock): from the page's
    // registerTool to the panel's list showing it, without the test driver's own round trips
    await panel.evaluate(() => {
      const w = window as unknown as { __shownAt?: number };
      new MutationObserver(() => {
        if (!w.__shownAt && document.querySelector('#tools li[data-tool="late_tool"]')) w.__shownAt = Date.now();
      }).observe(document.getElementById("tools") as HTMLElement, { childList: true, subtree: true });
    });
    const registeredAt = await page.evaluate(() => {
      const at = Date.now();
      void (window as unknown as { addLater: () => Promise<void> }).addLater();
      return at;
    });
    await panel.waitForSelector('#tools li[data-tool="late_tool"]');
    const shownAt = await panel.evaluate(() => (window as unknown as { __shownAt: number }).__shownAt);
    console.log(`MEASURE ${path}: registerTool -> panel shows it ${shownAt - registeredAt} ms (goal ≤ 50 ms; includes a 25 ms debounce)`);
    const rt: number[] = [];
    for (let i = 0; i < 10; i++) rt.push((await callByHand(panel, "get_status", {})).roundTripMs);
    rt.sort((a, b) => a - b);
    console.log(`MEASURE ${path}: page-tool call round trip from the panel p50 ${rt[5]} ms, max ${rt[9]} ms (goal ≤ 20 ms)`);

    // every call is in the operation log with its arguments and outcome
    await panel.click('nav [data-view="log"]');
    await panel.waitForSelector('#log li[data-tool="add_note"]');
    expect(await panel.textContent('#log li[data-tool="add_note"] pre')).toContain('{"text":"a declarative note"}');
  });

  test(`${path}: a hostile page's injected description and 1 MiB result are capped and delimited, and it cannot reach the extension`, async () => {
    await start(native);
    const { page, tabId } = await openPage("/hostile.html");
    const panel = await openPanel(tabId);
    await panel.waitForSelector('#tools li[data-tool="leak"]');
    await panel.click('#tools li[data-tool="leak"] button.open');
    const desc = (await panel.textContent("#detailDescription")) ?? "";
    expect(desc.length).toBe(2048);
    expect(desc).not.toContain("\u0007");
    // a hint given as the string "true": the polyfill path drops it (never read as true); the
    // native path hands us what the browser's own IDL conversion made of it, a boolean
    const hints = JSON.parse((await panel.textContent("#detailAnnotations")) ?? "{}") as Record<string, unknown>;
    if (native) expect(Object.values(hints).every((v) => typeof v === "boolean")).toBe(true);
    else expect(hints).toEqual({});
    expect(await panel.textContent("#detailName")).toBe("leak — Leak");
    // no tool from the forged handshake
    expect(await panel.$$eval("#tools li", (els) => els.map((e) => (e as HTMLElement).dataset.tool))).toEqual(["leak"]);

    const r = await callByHand(panel, "leak", {});
    expect(r.state).toBe("done");
    expect(r.raw.length).toBe(64 * 1024);
    // 1 MiB of B plus the closing delimiter and "tail": the size is reported, the text is cut
    expect(r.status).toContain(String(1024 * 1024 + "</untrusted-page-content>tail".length));
    expect(r.delimited.match(/<\/untrusted-page-content>/g)?.length).toBe(1);
    expect(r.delimited.endsWith("</untrusted-page-content>")).toBe(true);
    expect(r.delimited).toContain("[truncated to 65536 characters by ground-link]");

    const attack = await page.evaluate(() => (window as unknown as { __attack: Record<string, unknown> }).__attack);
    expect(attack.chromeRuntime).toBe(false);
    expect(attack.storage).toBe(false);
    expect(attack.fakeHandshakeTaken).toBe(false);
    await waitFor("the fetch attempt to settle", () => page.evaluate(() => (window as unknown as { __attack: { fetchedExtension?: boolean } }).__attack.fetchedExtension !== undefined));
    expect(attack.fetchedExtension ?? (await page.evaluate(() => (window as unknown as { __attack: { fetchedExtension?: boolean } }).__attack.fetchedExtension))).toBe(false);
    // the forged postMessage call never ran (the log holds only the panel's own call)
    await panel.click('nav [data-view="log"]');
    await panel.waitForSelector("#log li");
    expect(await panel.$$eval("#log li", (els) => els.length)).toBe(1);
  });
}

test("skills: the examples register tools on their fixture pages and run; export, delete and import from the file; a changed page's health check fails", async () => {
  await start(false);
  const { page: shop, tabId } = await openPage("/skills/shop.html");
  const panel = await openPanel(tabId);
  await panel.click('nav [data-view="skills"]');
  await panel.click("#addExamples");
  await panel.waitForSelector('#skills li[data-skill="local-todo"]');
  await panel.click('nav [data-view="tools"]');
  await panel.waitForSelector('#tools li[data-tool="add_to_cart"]');
  expect(await panel.$$eval("#tools li", (els) => els.map((e) => (e as HTMLElement).dataset.tool))).toEqual(["list_products", "add_to_cart"]);
  const list = await callByHand(panel, "list_products", {});
  expect(JSON.parse(list.raw).products[0]).toEqual({ id: "p1", name: "Teapot", price: "12.00" });
  const add = await callByHand(panel, "add_to_cart", { id: "p3" });
  expect(JSON.parse(add.raw)).toEqual({ cartCount: "1" });
  expect(await shop.textContent("#cart-count")).toBe("1");
  const wrong = await callByHand(panel, "add_to_cart", { sku: "p3" });
  expect(wrong.state).toBe("failed");
  expect(wrong.status).toContain('missing parameter "id"');

  // export, delete (its tools leave the page), import the exported file (they come back)
  await panel.click('nav [data-view="skills"]');
  const [download] = await Promise.all([panel.waitForEvent("download"), panel.click('#skills li[data-skill="local-shop"] button:text("Export")')]);
  const exportedPath = await download.path();
  const exported = JSON.parse(readFileSync(exportedPath, "utf8")) as { name: string };
  expect(exported).toEqual(JSON.parse(readFileSync(join(EXT_DIR, "skills/examples/local-shop.json"), "utf8")));
  expect(download.suggestedFilename()).toBe("local-shop.json");
  await panel.click('#skills li[data-skill="local-shop"] button:text("Delete")');
  await panel.click('nav [data-view="tools"]');
  await panel.waitForSelector("#noTools:visible");
  await panel.click('nav [data-view="skills"]');
  await panel.setInputFiles("#skillFile", exportedPath);
  await panel.click("#importSkill");
  await panel.waitForSelector('#skills li[data-skill="local-shop"]');
  expect(await panel.textContent("#message")).toBe("Imported skill local-shop.");
  await panel.click('nav [data-view="tools"]');
  await panel.waitForSelector('#tools li[data-tool="add_to_cart"]');
  await panel.setInputFiles("#skillFile", []);

  // the same skill on the changed page: nothing registered, and the panel says why
  const { tabId: changedTab } = await openPage("/skills/search.html?v=2");
  const panel2 = await openPanel(changedTab);
  await panel2.click('nav [data-view="skills"]');
  await panel2.waitForSelector('#skillsHere li[data-skill="local-search"][data-ok="false"]');
  expect(await panel2.textContent('#skillsHere li[data-skill="local-search"]')).toContain('"form#search" is not on this page');
  await panel2.click('nav [data-view="tools"]');
  expect(await panel2.isVisible("#noTools")).toBe(true);

  // an invalid skill is refused with the field named
  await panel2.click('nav [data-view="skills"]');
  await panel2.fill("#skillJson", JSON.stringify({ format: "ground-link-skill", formatVersion: 1, name: "x", version: "1", match: ["http://127.0.0.1:*/*"], healthCheck: ["body"], tools: [{ name: "t", description: "d", inputSchema: { type: "object", properties: {} }, steps: [{ do: "eval", code: "alert(1)" }] }] }));
  await panel2.click("#importSkill");
  expect(await panel2.textContent("#skillErrors")).toContain('tools[0].steps[0].do: "eval" is not a step');
});

test("polyfill install cost on page load", async () => {
  await start(false);
  const { page } = await openPage("/blank.html");
  const src = readFileSync(join(EXT_DIR, "webmcp-main.js"), "utf8");
  // The bundle as the browser runs it at document_start, each run in a fresh frame: while its
  // document is still loading (document.open(), as at document_start: the form scan waits for
  // DOMContentLoaded), and once it is complete (an injection after load, which scans at once).
  // The same eval of an empty script is the baseline.
  const measure = (code: string, check: boolean, loading: boolean) =>
    page.evaluate(
      async ([c, chk, ld]) => {
        const out: number[] = [];
        for (let i = 0; i < 21; i++) {
          const f = document.createElement("iframe");
          document.body.append(f);
          const w = f.contentWindow as Window & { eval(s: string): unknown };
          if (ld) w.document.open();
          const t0 = performance.now();
          w.eval(c as string);
          out.push(performance.now() - t0);
          if (chk && !("modelContext" in (w.document as object))) throw new Error("the polyfill did not install");
          if (ld) w.document.close();
          f.remove();
        }
        return out.sort((a, b) => a - b);
      },
      [code, check, loading] as const,
    );
  const times = await measure(src, true, true);
  const late = await measure(src, true, false);
  const base = await measure("void 0;", false, true);
  console.log(
    `MEASURE polyfill install (webmcp-main.js, ${src.length} bytes minified) at document_start: p50 ${times[10]?.toFixed(2)} ms, max ${times[20]?.toFixed(2)} ms (goal ≤ 1 ms); ` +
      `into a loaded document (scans forms at once): p50 ${late[10]?.toFixed(2)} ms; an empty eval in a fresh frame: ${base[10]?.toFixed(2)} ms`,
  );
  expect(times.length).toBe(21);
});
