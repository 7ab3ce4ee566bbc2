/**
 * The end-to-end harness: the real `ground-link serve` (from $GROUND_LINK_BIN), Debian Chromium
 * through playwright-core with the unpacked extension exactly as built, the fake chat site mapped
 * onto chat.deepseek.com, and helpers to pair and drive a chat like a person would.
 */

import { chromium, type BrowserContext, type Page, type Worker } from "@playwright/test";
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { startFakeSite, type FakeSite } from "./fake-site";
import { REPLICA_HOSTS, REPLICA_UI, type ReplicaKind } from "./replicas";
import { tempDir } from "./tmp";

const here = dirname(fileURLToPath(import.meta.url));
export const EXT_DIR = resolve(here, "..", "dist");
export const EXT_ID = "nahlngkebpicfgggkehbcdnlkfhhejod";
export const CHROMIUM = process.env.CHROMIUM_BIN ?? "/usr/bin/chromium";

/**
 * The bridge binary: $GROUND_LINK_BIN, else the newest `ground-link` under $CARGO_TARGET_DIR
 * (relative to the repository root, as cargo run there would read it) or the repository's
 * `target/`, debug or release.
 */
export function bridgeBin(): string | null {
  const env = process.env.GROUND_LINK_BIN;
  if (env) return existsSync(env) ? resolve(env) : null;
  const repo = resolve(here, "..", "..");
  const targets = [process.env.CARGO_TARGET_DIR ? resolve(repo, process.env.CARGO_TARGET_DIR) : null, join(repo, "target")].filter((d): d is string => !!d);
  const found = targets.flatMap((t) => ["debug", "release"].map((p) => join(t, p, "ground-link"))).filter((f) => existsSync(f));
  found.sort((a, b) => statSync(b).mtimeMs - statSync(a).mtimeMs);
  return found[0] ?? null;
}

let announced = false;

export interface Bridge {
  url: string;
  port: number;
  token: string;
  /** The environment `serve` runs with (its own config and data folders): other `ground-link`
   * commands for this bridge (`token add`, `mcp`) need the same. */
  env: NodeJS.ProcessEnv;
  dir: string;
  log(): string;
  proc: ChildProcess;
  write(input: string): void;
  /** The bridge's audit log lines so far (its own data folder): when each call ended, and how long it ran. */
  audit(): AuditLine[];
  /** Waits until the bridge's output (from `since`, a log length) matches `re`. */
  waitForLog(re: RegExp, since?: number, timeoutMs?: number): Promise<string>;
  stop(): Promise<void>;
}

export interface AuditLine {
  time: string;
  callId: string;
  tool: string;
  status: string;
  durationMs: number;
}

function readAudit(dir: string): AuditLine[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((f) => f.endsWith(".jsonl"))
    .sort()
    .flatMap((f) => readFileSync(join(dir, f), "utf8").split("\n"))
    .filter((l) => l.trim() !== "")
    .map((l) => JSON.parse(l) as AuditLine);
}

/** The end of `--approval tty`'s question: the bridge is now reading the answer. */
export const TTY_MENU = /\[o\] allow once.*\[d\] deny {2}> /;
/** Its follow-up after `d`: the reason for the model. */
export const TTY_REASON = /reason for the model \(optional, Enter to skip\) > /;

export interface BridgeOptions {
  approval?: "deny" | "allow" | "tty";
  denyReason?: string;
  extra?: string[];
  /** A fixed port (default: a free one) and pairing key (default: a fresh one). */
  port?: number;
  token?: string;
  /** More environment for `serve` (e.g. the XDG_RUNTIME_DIR its native-messaging socket goes in). */
  env?: Record<string, string>;
}

export async function startBridge(dir: string, opts: BridgeOptions = {}): Promise<Bridge> {
  const bin = bridgeBin();
  if (!bin) throw new Error("no ground-link binary: build it (cargo build) or set GROUND_LINK_BIN to its path");
  if (!announced) console.log(`bridge: ${bin}`);
  announced = true;
  const token = opts.token ?? randomBytes(32).toString("hex");
  // its own config and data folders: no rules or audit files of the person running the tests
  const home = tempDir("home");
  const tokenFile = join(home, "token");
  writeFileSync(tokenFile, `${token}\n`, { mode: 0o600 });
  const args = ["serve", "--dir", dir, "--port", String(opts.port ?? 0), "--token-file", tokenFile, "--approval", opts.approval ?? "allow"];
  if (opts.denyReason) args.push("--deny-reason", opts.denyReason);
  args.push(...(opts.extra ?? []));
  // --approval tty needs a terminal: `script` gives the bridge one, and we type into it
  const env = {
    ...process.env,
    XDG_CONFIG_HOME: join(home, "config"),
    XDG_DATA_HOME: join(home, "data"),
    GROUND_LINK_MANAGED_FILE: join(home, "managed-permissions.json"),
    RUST_LOG: process.env.RUST_LOG ?? "warn",
    ...(opts.env ?? {}),
  };
  const proc =
    opts.approval === "tty"
      ? spawn("script", ["-qfec", [bin, ...args].map(shellQuote).join(" "), "/dev/null"], { stdio: ["pipe", "pipe", "pipe"], env })
      : spawn(bin, args, { stdio: ["pipe", "pipe", "pipe"], env });
  let log = "";
  proc.stdout?.on("data", (d: Buffer) => (log += d.toString("utf8")));
  proc.stderr?.on("data", (d: Buffer) => (log += d.toString("utf8")));
  const url = await new Promise<string>((res, rej) => {
    const timer = setTimeout(() => rej(new Error(`the bridge printed no address within 15 s; its output:\n${log}`)), 15_000);
    const look = () => {
      const m = /^ground-link listening on (http:\/\/127\.0\.0\.1:(\d+))\r?$/m.exec(log);
      if (m?.[1] && m[2] !== "0") {
        clearTimeout(timer);
        res(m[1]);
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
    env,
    dir,
    proc,
    log: () => log,
    write: (input) => proc.stdin?.write(input),
    audit: () => readAudit(join(home, "data", "ground-link", "audit")),
    waitForLog: async (re, since = 0, timeoutMs = 20_000) => {
      const end = Date.now() + timeoutMs;
      for (;;) {
        const m = re.exec(log.slice(since));
        if (m) return m[0];
        if (Date.now() > end) throw new Error(`the bridge never printed ${re} within ${timeoutMs} ms; its output since then:\n${log.slice(since)}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    },
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

export interface LaunchOptions {
  /** More environment for the browser (and so for the native host it starts). */
  env?: Record<string, string>;
  /**
   * The ground-link binary whose host manifest goes into the profile's own
   * `NativeMessagingHosts/` (written by `install-native-host --dir`), before the browser starts.
   */
  nativeHost?: string;
  /** More Chromium switches (e.g. `--enable-features=WebMCP` for the native page-tools path). */
  args?: string[];
  /** More `--host-resolver-rules` entries (`MAP api.deepseek.com 127.0.0.1:PORT`). */
  hostRules?: string[];
}

export async function launch(opts: LaunchOptions = {}): Promise<Env> {
  const site = await startFakeSite();
  const profile = tempDir("profile");
  if (opts.nativeHost) {
    const r = spawnSync(opts.nativeHost, ["install-native-host", "--dir", join(profile, "NativeMessagingHosts")], { encoding: "utf8" });
    if (r.status !== 0) throw new Error(`install-native-host failed (${r.status}): ${r.stderr}`);
  }
  const ctx = await chromium.launchPersistentContext(profile, {
    ...(opts.env ? { env: { ...process.env, ...opts.env } as Record<string, string> } : {}),
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
      `--host-resolver-rules=MAP chat.deepseek.com 127.0.0.1:${site.port}, MAP chatgpt.com 127.0.0.1:${site.port}, MAP claude.ai 127.0.0.1:${site.port}, MAP evil.example 127.0.0.1:${site.port}${(opts.hostRules ?? []).map((r) => `, ${r}`).join("")}`,
      "--ignore-certificate-errors",
      ...(opts.args ?? []),
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
  await page.waitForSelector(DEEPSEEK_COMPOSER);
  return page;
}

/** DeepSeek's composer today: a textarea without an id. */
export const DEEPSEEK_COMPOSER = 'textarea[name="search"]';

/** Types into the composer and presses the send button, like a person. */
export async function say(page: Page, text: string): Promise<void> {
  await page.click(DEEPSEEK_COMPOSER);
  await page.keyboard.insertText(text);
  await page.click('div[role="button"].ds-button--primary:not(.ds-button--disabled)');
}

/** Opens a replica of another site (ChatGPT's two UIs, Claude.ai) at its real host name. */
export async function openReplica(env: Env, kind: ReplicaKind, path = "/"): Promise<Page> {
  if (kind !== "claude") env.site.chatgptUi = kind;
  const page = await env.ctx.newPage();
  await page.goto(`https://${REPLICA_HOSTS[kind]}${path}`);
  await page.waitForSelector(REPLICA_UI[kind].composer);
  return page;
}

/** Types into a replica's composer and clicks its send button, like a person. */
export async function sayIn(page: Page, kind: ReplicaKind, text: string): Promise<void> {
  await page.click(REPLICA_UI[kind].composer);
  await page.keyboard.insertText(text);
  await page.click(REPLICA_UI[kind].send);
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

interface CdpNode {
  nodeId: number;
  nodeName: string;
  nodeValue?: string;
  children?: CdpNode[];
  shadowRoots?: CdpNode[];
}

/**
 * Clicks a button inside a card like a person: the card's shadow root is closed to scripts, so
 * the button is found through the DevTools protocol (which sees closed roots) and clicked with
 * the real mouse at its place on screen, which makes a trusted click.
 */
export async function clickCardButton(page: Page, cardIndex: number, label: string): Promise<void> {
  return clickShadowButton(page, "GROUND-LINK-CARD", cardIndex, label);
}

/** The same for any of our closed-shadow hosts (`GROUND-LINK-PICKER`: the Fix this site panel). */
export async function clickShadowButton(page: Page, hostName: string, hostIndex: number, label: string): Promise<void> {
  const cdp = await page.context().newCDPSession(page);
  try {
    const { root } = (await cdp.send("DOM.getDocument", { depth: -1, pierce: true })) as { root: CdpNode };
    const hosts: CdpNode[] = [];
    const walk = (n: CdpNode, into: (n: CdpNode) => void) => {
      into(n);
      for (const c of [...(n.children ?? []), ...(n.shadowRoots ?? [])]) walk(c, into);
    };
    walk(root, (n) => {
      if (n.nodeName === hostName) hosts.push(n);
    });
    const host = hosts[hostIndex];
    if (!host) throw new Error(`no ${hostName} #${hostIndex} (the page has ${hosts.length})`);
    let button: CdpNode | undefined;
    for (const sr of host.shadowRoots ?? []) {
      walk(sr, (n) => {
        if (!button && n.nodeName === "BUTTON" && (n.children ?? []).some((c) => c.nodeValue === label)) button = n;
      });
    }
    if (!button) throw new Error(`${hostName} #${hostIndex} has no "${label}" button`);
    await cdp.send("DOM.scrollIntoViewIfNeeded", { nodeId: button.nodeId });
    const { model } = (await cdp.send("DOM.getBoxModel", { nodeId: button.nodeId })) as { model: { content: number[] } };
    const q = model.content;
    const x = ((q[0] ?? 0) + (q[2] ?? 0) + (q[4] ?? 0) + (q[6] ?? 0)) / 4;
    const y = ((q[1] ?? 0) + (q[3] ?? 0) + (q[5] ?? 0) + (q[7] ?? 0)) / 4;
    await page.mouse.click(x, y);
  } finally {
    await cdp.detach().catch(() => undefined);
  }
}

/** Side panel: the DeepSeek preset with `key`, saved the way a person does in the chat settings. */
export async function configurePanelAgent(panel: Page, key: string): Promise<void> {
  await panel.click('nav [data-view="chat"]');
  await panel.evaluate(() => {
    (document.getElementById("agentSettings") as HTMLDetailsElement).open = true;
    (document.getElementById("agentSaved") as HTMLElement).textContent = "";
  });
  await panel.selectOption("#provider", "deepseek");
  await panel.fill("#apiKey", key);
  await panel.click("#agentSave");
  await panel.waitForSelector("#agentSaved:text('Saved.')");
}

/** Side panel: how many agent turns have ended. */
export const panelTurnsDone = (panel: Page): Promise<number> => panel.getAttribute("#chat", "data-turns").then((v) => Number(v ?? "0"));
