// Native messaging end to end (DESIGN §8.2, issue 12 item 4): the built extension in Debian
// Chromium, the host manifest written into the test profile's own NativeMessagingHosts/ by
// `ground-link install-native-host --dir`, Chromium starting the real `ground-link` as the host,
// and the real `ground-link serve` behind its private socket. Pairing happens with no token
// pasted anywhere; the popup says when the host is missing; a killed host is reconnected.
import { expect, test } from "@playwright/test";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { bridgeBin, cards, EXT_ID, launch, openChat, say, startBridge, toolCall, waitFor, type Bridge, type Env } from "../harness";
import { removeTempDirs, tempDir } from "../tmp";

let env: Env | null = null;
let bridge: Bridge | null = null;

test.afterEach(async ({}, info) => {
  if (bridge && info.status !== info.expectedStatus) console.log(`--- bridge log (${info.title}) ---\n${bridge.log()}`);
  await bridge?.stop();
  bridge = null;
  await env?.close();
  env = null;
  removeTempDirs(info.status !== info.expectedStatus);
});

function needBin(): string {
  const bin = bridgeBin();
  if (!bin) throw new Error("no ground-link binary: set GROUND_LINK_BIN (or build target/debug/ground-link)");
  return bin;
}

/** The worker's native link state (the `NativeLink` the worker keeps on globalThis). */
async function nativeState(e: Env): Promise<string> {
  return e.sw.evaluate(() => (globalThis as unknown as { __groundLinkNative: { state: { kind: string } } }).__groundLinkNative.state.kind);
}

/** The native-host processes of this test: ours only, told apart by this test's XDG_RUNTIME_DIR. */
function hostPids(runtimeDir: string): number[] {
  const pids: number[] = [];
  for (const d of readdirSync("/proc")) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const cmd = readFileSync(`/proc/${d}/cmdline`, "utf8").split("\0");
      if (!cmd.includes(`chrome-extension://${EXT_ID}/`)) continue;
      const environ = readFileSync(`/proc/${d}/environ`, "utf8").split("\0");
      if (environ.includes(`XDG_RUNTIME_DIR=${runtimeDir}`)) pids.push(Number(d));
    } catch {
      // the process went away meanwhile
    }
  }
  return pids;
}

/** Points the extension at this test's bridge (the address only: no token). */
async function setBridgeUrl(e: Env, url: string): Promise<void> {
  const page = await e.ctx.newPage();
  await page.goto(`chrome-extension://${EXT_ID}/options/options.html`);
  await page.fill("#bridgeUrl", url);
  await page.click("#save");
  await page.waitForSelector("#message:text('Saved.')");
  await page.close();
}

test("native messaging: the extension pairs with no pasted token, then runs a tool call", async () => {
  const bin = needBin();
  const runtimeDir = tempDir("run");
  const dir = tempDir("sandbox");
  writeFileSync(join(dir, "notes.txt"), "hello over native pairing\n");
  // --approval allow answers the pairing question yes (the test stands in for the person)
  bridge = await startBridge(dir, { env: { XDG_RUNTIME_DIR: runtimeDir } });
  env = await launch({ nativeHost: bin, env: { XDG_RUNTIME_DIR: runtimeDir } });
  const e = env;
  // the key arrives over native messaging, and it is the bridge's own key
  const key = await waitFor("the key from pairing", async () => (await e.sw.evaluate(() => chrome.storage.local.get(["token"]))).token as string | undefined, 20_000);
  expect(key).toBe(bridge.token);
  await bridge.waitForLog(/paired the browser extension chrome-extension:\/\/nahlngkebpicfgggkehbcdnlkfhhejod\/ over native messaging/);
  await setBridgeUrl(e, bridge.url);
  await waitFor("connected", async () => ((await e.sw.evaluate(() => chrome.storage.local.get(["connection"]))).connection as { kind?: string } | undefined)?.kind === "connected", 15_000);
  e.site.setModel((_p, turn) => (turn === 0 ? { answer: `Let me look.\n${toolCall("read_file", { path: "notes.txt" }, "see the notes")}` } : { answer: "Done." }));
  const page = await openChat(e);
  await page.waitForTimeout(1000);
  await say(page, "what is in notes.txt?");
  await waitFor("the results message", () => e.site.turns.length >= 2, 20_000);
  const sent = e.site.turns[1]?.prompt ?? "";
  expect(sent).toContain('<tool_result name="read_file" status="success">');
  expect(sent).toContain("hello over native pairing");
  await waitFor("card done", async () => (await cards(page))[0]?.states === "done");
});

test("native messaging: a refused pairing stores no key and the popup says why", async () => {
  const bin = needBin();
  const runtimeDir = tempDir("run");
  const dir = tempDir("sandbox");
  bridge = await startBridge(dir, { approval: "deny", env: { XDG_RUNTIME_DIR: runtimeDir } });
  env = await launch({ nativeHost: bin, env: { XDG_RUNTIME_DIR: runtimeDir } });
  const e = env;
  const status = await waitFor("the refusal", async () => {
    const n = (await e.sw.evaluate(() => chrome.storage.local.get(["native"]))).native as { pairError?: string; refused?: boolean } | undefined;
    return n?.pairError ? n : null;
  }, 20_000);
  expect(status.pairError).toContain("pairing refused");
  expect(status.refused).toBe(true);
  expect((await e.sw.evaluate(() => chrome.storage.local.get(["token"]))).token).toBeUndefined();
  const popup = await e.ctx.newPage();
  await popup.goto(`chrome-extension://${EXT_ID}/popup/popup.html`);
  await expect(popup.locator("#nativeDetail")).toContainText("pairing refused");
});

test("native messaging: the terminal asks; Enter refuses, then the popup's button asks again and y pairs", async () => {
  const bin = needBin();
  const runtimeDir = tempDir("run");
  const dir = tempDir("sandbox");
  bridge = await startBridge(dir, { approval: "tty", env: { XDG_RUNTIME_DIR: runtimeDir } });
  const b = bridge;
  env = await launch({ nativeHost: bin, env: { XDG_RUNTIME_DIR: runtimeDir } });
  const e = env;
  // the extension asked on its own: the question is on the bridge's terminal
  await b.waitForLog(/Pair this browser extension with ground-link\?[\s\S]*\[y\] pair {2}\[n\] refuse \(default\) {2}> /);
  const since = b.log().length;
  b.write("\r");
  const refused = await waitFor("the refusal", async () => {
    const n = (await e.sw.evaluate(() => chrome.storage.local.get(["native"]))).native as { pairError?: string; refused?: boolean } | undefined;
    return n?.refused ? n : null;
  }, 15_000);
  expect(refused.pairError).toContain("the person refused to pair this extension");
  expect((await e.sw.evaluate(() => chrome.storage.local.get(["token"]))).token).toBeUndefined();
  // no second question on its own after a refusal
  await new Promise((r) => setTimeout(r, 1500));
  expect(b.log().slice(since)).not.toMatch(/Pair this browser extension/);
  await setBridgeUrl(e, b.url);
  const popup = await e.ctx.newPage();
  await popup.goto(`chrome-extension://${EXT_ID}/popup/popup.html`);
  await expect(popup.locator("#nativeDetail")).toContainText("pairing refused");
  await expect(popup.locator("#pairNative")).toBeVisible();
  const again = b.log().length;
  await popup.click("#pairNative");
  await b.waitForLog(/Pair this browser extension with ground-link\?[\s\S]*> /, again);
  b.write("y\r");
  await expect(popup.locator("#state")).toHaveAttribute("data-kind", "connected", { timeout: 15_000 });
  expect((await e.sw.evaluate(() => chrome.storage.local.get(["token"]))).token).toBe(b.token);
});

test("native messaging: with no host manifest the popup says so and gives the install command", async () => {
  env = await launch();
  const e = env;
  await waitFor("the host-missing state", async () => (await nativeState(e)) === "missing", 15_000);
  const popup = await e.ctx.newPage();
  await popup.goto(`chrome-extension://${EXT_ID}/popup/popup.html`);
  await expect(popup.locator("#nativeMissing")).toBeVisible();
  await expect(popup.locator("#nativeCommand")).toHaveText("ground-link install-native-host");
  await expect(popup.locator("#nativeMissing")).toContainText("not installed");
});

test("native messaging: a host killed mid-call fails that call clearly, is reconnected, and the next call works", async () => {
  const bin = needBin();
  const runtimeDir = tempDir("run");
  const dir = tempDir("sandbox");
  writeFileSync(join(dir, "a.txt"), "through the native host\n");
  bridge = await startBridge(dir, { env: { XDG_RUNTIME_DIR: runtimeDir } });
  env = await launch({ nativeHost: bin, env: { XDG_RUNTIME_DIR: runtimeDir } });
  const e = env;
  await waitFor("connected to the host", async () => (await nativeState(e)) === "connected", 20_000);
  const [first] = await waitFor("the host process", () => {
    const p = hostPids(runtimeDir);
    return p.length === 1 ? p : null;
  });
  const send = (id: string, name: string, args: Record<string, unknown>) =>
    e.sw.evaluate(
      ([callId, n, a]) =>
        (globalThis as unknown as { __groundLinkNative: { call(m: unknown, t: number): Promise<Record<string, unknown>> } }).__groundLinkNative.call(
          { callId, name: n, args: a },
          30_000,
        ),
      [id, name, args] as const,
    );
  const call = (id: string) => send(id, "read_file", { path: "a.txt" });
  const before = await call("n1");
  expect(before.status).toBe("success");
  expect(String(before.output)).toContain("through the native host");
  // killed mid-call: the call fails with a clear error instead of hanging
  const running = send("n-mid", "exec_cmd", { command: "sleep 5" });
  // give the call time to reach the bridge and start its `sleep` (it runs for 5 s)
  await new Promise((r) => setTimeout(r, 500));
  process.kill(first!, "SIGKILL");
  const mid = await running;
  expect(mid.callId).toBe("n-mid");
  expect(String(mid.error)).toMatch(/native host went away before answering.*try it again/);
  await waitFor("the link saw the host go", async () => (await nativeState(e)) !== "connected", 10_000);
  await waitFor("reconnected", async () => (await nativeState(e)) === "connected", 20_000);
  const second = await waitFor("a new host process", () => {
    const p = hostPids(runtimeDir).filter((x) => x !== first);
    return p.length === 1 ? p : null;
  });
  expect(second[0]).not.toBe(first);
  const after = await call("n2");
  expect(after.status).toBe("success");
  expect(after.callId).toBe("n2");
});
