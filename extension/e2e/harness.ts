/**
 * The end-to-end harness: the real `ground-link serve` (from $GROUND_LINK_BIN), Debian Chromium
 * through playwright-core with the unpacked extension exactly as built, the fake chat site mapped
 * onto chat.deepseek.com, and helpers to pair and drive a chat like a person would.
 */

import { chromium, type BrowserContext, type Page, type Worker } from "@playwright/test";
import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { startFakeSite, type FakeSite } from "./fake-site";

const here = dirname(fileURLToPath(import.meta.url));
export const EXT_DIR = resolve(here, "..", "dist");
export const EXT_ID = "nahlngkebpicfgggkehbcdnlkfhhejod";
export const CHROMIUM = process.env.CHROMIUM_BIN ?? "/usr/bin/chromium";

/** The bridge binary: $GROUND_LINK_BIN, else the usual cargo output paths. */
export function bridgeBin(): string | null {
  const env = process.env.GROUND_LINK_BIN;
  if (env) return existsSync(env) ? env : null;
  const targets = [process.env.CARGO_TARGET_DIR, resolve(here, "..", "..", "target")].filter((d): d is string => !!d);
  for (const t of targets) for (const p of ["debug", "release"]) if (existsSync(join(t, p, "ground-link"))) return join(t, p, "ground-link");
  return null;
}

export interface Bridge {
  url: string;
  port: number;
  token: string;
  dir: string;
  log(): string;
  proc: ChildProcess;
  write(input: string): void;
  stop(): Promise<void>;
}

export interface BridgeOptions {
  approval?: "deny" | "allow" | "tty";
  denyReason?: string;
  extra?: string[];
}

export async function startBridge(dir: string, opts: BridgeOptions = {}): Promise<Bridge> {
  const bin = bridgeBin();
  if (!bin) throw new Error("no ground-link binary: build it (cargo build) or set GROUND_LINK_BIN to its path");
  const token = randomBytes(32).toString("hex");
  const tokenFile = join(mkdtempSync(join(tmpdir(), "gl-e2e-token-")), "token");
  writeFileSync(tokenFile, `${token}\n`, { mode: 0o600 });
  const args = ["serve", "--dir", dir, "--port", "0", "--token-file", tokenFile, "--approval", opts.approval ?? "allow"];
  if (opts.denyReason) args.push("--deny-reason", opts.denyReason);
  args.push(...(opts.extra ?? []));
  // --approval tty needs a terminal: `script` gives the bridge one, and we type into it
  const proc =
    opts.approval === "tty"
      ? spawn("script", ["-qfec", [bin, ...args].map(shellQuote).join(" "), "/dev/null"], { stdio: ["pipe", "pipe", "pipe"] })
      : spawn(bin, args, { stdio: ["pipe", "pipe", "pipe"] });
  let log = "";
  proc.stdout?.on("data", (d: Buffer) => (log += d.toString("utf8")));
  proc.stderr?.on("data", (d: Buffer) => (log += d.toString("utf8")));
  const url = await new Promise<string>((res, rej) => {
    const timer = setTimeout(() => rej(new Error(`the bridge printed no address within 15 s; its output:\n${log}`)), 15_000);
    const look = () => {
      const m = /http:\/\/127\.0\.0\.1:(\d+)/.exec(log);
      if (m && m[1] !== "0") {
        clearTimeout(timer);
        res(m[0]);
      }
    };
    proc.stdout?.on("data", look);
    proc.stderr?.on("data", look);
    proc.on("exit", (code) => {
      clearTimeout(timer);
      rej(new Error(`the bridge exited (${code}) before printing its address:\n${log}`));
    });
  });
  return {
    url,
    port: Number(new URL(url).port),
    token,
    dir,
    proc,
    log: () => log,
    write: (input) => proc.stdin?.write(input),
    stop: () =>
      new Promise<void>((r) => {
        if (proc.exitCode !== null || proc.signalCode !== null) return r();
        proc.once("exit", () => r());
        proc.kill("SIGTERM");
        setTimeout(() => proc.kill("SIGKILL"), 3000);
      }),
  };
}

function shellQuote(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

export interface Env {
  site: FakeSite;
  ctx: BrowserContext;
  sw: Worker;
  close(): Promise<void>;
}

export async function launch(): Promise<Env> {
  const site = await startFakeSite();
  const profile = mkdtempSync(join(tmpdir(), "gl-e2e-profile-"));
  const ctx = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: false,
    ignoreDefaultArgs: ["--disable-extensions"],
    args: [
      "--headless=new",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      `--disable-extensions-except=${EXT_DIR}`,
      `--load-extension=${EXT_DIR}`,
      `--host-resolver-rules=MAP chat.deepseek.com 127.0.0.1:${site.port}, MAP evil.example 127.0.0.1:${site.port}`,
      "--ignore-certificate-errors",
    ],
    viewport: { width: 1100, height: 800 },
  });
  let sw = ctx.serviceWorkers().find((w) => w.url().startsWith(`chrome-extension://${EXT_ID}/`));
  sw ??= await ctx.waitForEvent("serviceworker", { timeout: 15_000, predicate: (w) => w.url().startsWith(`chrome-extension://${EXT_ID}/`) });
  return {
    site,
    ctx,
    sw,
    close: async () => {
      await ctx.close();
      await site.close();
    },
  };
}

/** Pairs the extension the way a person does: options page, bridge address, paste token, Pair. */
export async function pair(env: Env, bridge: Bridge, extra: { stepBudget?: number; autoSend?: boolean } = {}): Promise<void> {
  const page = await env.ctx.newPage();
  await page.goto(`chrome-extension://${EXT_ID}/options/options.html`);
  await page.fill("#bridgeUrl", bridge.url);
  if (extra.stepBudget !== undefined) await page.fill("#stepBudget", String(extra.stepBudget));
  if (extra.autoSend === false) await page.uncheck("#autoSend");
  await page.click("#save");
  await page.waitForSelector("#message:text('Saved.')");
  await page.fill("#token", bridge.token);
  await page.click("#pair");
  await page.waitForSelector('#state[data-kind="connected"]', { timeout: 10_000 });
  await page.close();
}

/** Turns on the hidden timing marks the measurements read. */
export async function enablePerf(env: Env): Promise<void> {
  await env.sw.evaluate(() => chrome.storage.local.set({ perfMarks: true }));
}

export async function openChat(env: Env, path = "/"): Promise<Page> {
  const page = await env.ctx.newPage();
  await page.goto(`https://chat.deepseek.com${path}`);
  await page.waitForSelector("#chat-input");
  return page;
}

/** Types into the composer and presses the send button, like a person. */
export async function say(page: Page, text: string): Promise<void> {
  await page.click("#chat-input");
  await page.keyboard.insertText(text);
  await page.click('div[role="button"].ds-send-button[aria-disabled="false"]');
}

export async function waitFor<T>(what: string, f: () => T | Promise<T>, timeoutMs = 20_000, everyMs = 100): Promise<NonNullable<T>> {
  const end = Date.now() + timeoutMs;
  let last: T | undefined;
  while (Date.now() < end) {
    last = await f();
    if (last) return last as NonNullable<T>;
    await new Promise((r) => setTimeout(r, everyMs));
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what} (last: ${JSON.stringify(last)})`);
}

/** The card hosts' visible state (the shadow root is closed; the host mirrors it in attributes). */
export async function cards(page: Page): Promise<{ states: string; footer: string }[]> {
  return page.$$eval("ground-link-card", (els) => els.map((e) => ({ states: (e as HTMLElement).dataset.states ?? "", footer: (e as HTMLElement).dataset.footer ?? "" })));
}

export function toolCall(name: string, args: Record<string, unknown>, reason?: string): string {
  return `<tool>${JSON.stringify(reason ? { name, args, reason } : { name, args })}</tool>`;
}
