// MCP with the official TypeScript SDK (DESIGN §8.1, issue 12): the real `ground-link serve`,
// a named client token made by `ground-link token add`, and the SDK's own transports —
// Streamable HTTP with a bearer header, and stdio through `ground-link mcp` (what Claude
// Desktop, Cursor and Codex CLI run). Every call goes through the engine: the audit log names
// the client by its token, never by what the client says it is.
import { expect, test } from "@playwright/test";
import { spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { bridgeBin, launch, startBridge, type Bridge } from "../harness";
import { HIDDEN_VALUE, PASSWORD_VALUE, startBrowserSite } from "../browser-site";
import { startWebmcpSite } from "../webmcp-site";
import { removeTempDirs, tempDir } from "../tmp";

let bridge: Bridge | null = null;

test.afterEach(async ({}, info) => {
  if (bridge && info.status !== info.expectedStatus) console.log(`--- bridge log (${info.title}) ---\n${bridge.log()}`);
  await bridge?.stop();
  bridge = null;
  removeTempDirs(info.status !== info.expectedStatus);
});

function bin(): string {
  const b = bridgeBin();
  if (!b) throw new Error("no ground-link binary: set GROUND_LINK_BIN (or build target/debug/ground-link)");
  return b;
}

/** `ground-link token add NAME` for this bridge: the client's token, shown once. */
function addClient(b: Bridge, name: string): string {
  const r = spawnSync(bin(), ["token", "add", name], { env: b.env, encoding: "utf8" });
  expect(r.status, r.stderr).toBe(0);
  const token = r.stdout.trim().split("\n").pop() ?? "";
  expect(token.length).toBeGreaterThanOrEqual(32);
  return token;
}

function textOf(result: unknown): string {
  const content = (result as { content?: { type: string; text?: string }[] }).content ?? [];
  return content.map((c) => c.text ?? "").join("\n");
}

function http(b: Bridge, token: string): StreamableHTTPClientTransport {
  return new StreamableHTTPClientTransport(new URL(`${b.url}/mcp`), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  });
}

test("the TypeScript SDK over Streamable HTTP: tools, a read, a denial with the person's reason, the client named in the audit", async () => {
  const dir = tempDir("sandbox");
  writeFileSync(join(dir, "notes.txt"), "hello from the sandbox\n");
  bridge = await startBridge(dir, { approval: "deny", denyReason: "not on Fridays" });
  const token = addClient(bridge, "sdk-http");
  const client = new Client({ name: "claims-to-be-claude", version: "1.0.0" });
  await client.connect(http(bridge, token));

  const { tools } = await client.listTools();
  const names = tools.map((t) => t.name).sort();
  expect(names).toEqual(["edit_file", "exec_cmd", "glob", "grep", "list_dir", "read_file", "write_file"]);
  expect(tools.find((t) => t.name === "read_file")?.annotations?.readOnlyHint).toBe(true);
  expect(tools.find((t) => t.name === "exec_cmd")?.annotations?.destructiveHint).toBe(true);

  const read = await client.callTool({ name: "read_file", arguments: { path: "notes.txt" } });
  expect(read.isError ?? false).toBe(false);
  expect(textOf(read)).toContain("hello from the sandbox");

  const write = await client.callTool({ name: "write_file", arguments: { path: "x.txt", content: "no" } });
  expect(write.isError).toBe(true);
  expect(textOf(write)).toContain("not on Fridays");

  // An unknown tool is a protocol error that lists the real ones.
  await expect(client.callTool({ name: "rm_everything", arguments: {} })).rejects.toThrow(/read_file/);
  await client.close();

  const lines = bridge.audit();
  const mine = lines.filter((l) => (l as unknown as { client?: string }).client === "sdk-http");
  expect(mine.map((l) => l.tool).sort()).toEqual(["read_file", "write_file"]);
  expect(lines.some((l) => JSON.stringify(l).includes("claims-to-be-claude"))).toBe(false);
});

test("the TypeScript SDK over stdio through `ground-link mcp`, and a revoked client is refused", async () => {
  const dir = tempDir("sandbox");
  writeFileSync(join(dir, "notes.txt"), "stdio works\n");
  bridge = await startBridge(dir, { approval: "deny" });
  const token = addClient(bridge, "sdk-stdio");
  const tokenFile = join(tempDir("client"), "token");
  writeFileSync(tokenFile, `${token}\n`, { mode: 0o600 });

  const stdio = new StdioClientTransport({
    command: bin(),
    args: ["mcp", "--port", String(bridge.port), "--token-file", tokenFile],
    env: bridge.env as Record<string, string>,
    stderr: "pipe",
  });
  const client = new Client({ name: "stdio-client", version: "1.0.0" });
  await client.connect(stdio);
  const { tools } = await client.listTools();
  expect(tools.map((t) => t.name)).toContain("exec_cmd");
  const read = await client.callTool({ name: "read_file", arguments: { path: "notes.txt" } });
  expect(textOf(read)).toContain("stdio works");
  await client.close();
  expect(bridge.audit().some((l) => (l as unknown as { client?: string }).client === "sdk-stdio")).toBe(true);

  // Revoked: the next connection is refused (401), and the extension's key still works.
  const r = spawnSync(bin(), ["token", "revoke", "sdk-stdio"], { env: bridge.env, encoding: "utf8" });
  expect(r.status, r.stderr).toBe(0);
  await expect
    .poll(async () => {
      const again = new Client({ name: "again", version: "1.0.0" });
      try {
        await again.connect(http(bridge!, token));
        await again.close();
        return "connected";
      } catch (e) {
        return String(e);
      }
    }, { timeout: 10_000 })
    .toMatch(/missing or wrong token/);
  // The other holders of keys are untouched: the bridge's own token still lists the tools.
  const other = new Client({ name: "other", version: "1.0.0" });
  await other.connect(http(bridge, bridge.token));
  expect((await other.listTools()).tools.length).toBe(7);
  await other.close();
});

test("an MCP client drives the browser through ground-link: the extension over native messaging, every call through the engine", async () => {
  const runtimeDir = tempDir("run");
  const site = await startBrowserSite();
  const dir = tempDir("sandbox");
  bridge = await startBridge(dir, { approval: "allow", env: { XDG_RUNTIME_DIR: runtimeDir } });
  const env = await launch({ nativeHost: bin(), env: { XDG_RUNTIME_DIR: runtimeDir } });
  try {
    await env.sw.evaluate(() => chrome.storage.local.set({ browserTools: true }));
    const page = await env.ctx.newPage();
    await page.goto(`${site.origin}/form.html`);
    await page.bringToFront();

    const client = new Client({ name: "browser-driver", version: "1.0.0" });
    const changed: string[] = [];
    const token = addClient(bridge, "sdk-browser");
    await client.connect(http(bridge, token));
    const { ToolListChangedNotificationSchema } = await import("@modelcontextprotocol/sdk/types.js");
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => void changed.push("tools"));
    // The browser's tools appear once the extension has said hello over the native host.
    await expect.poll(async () => (await client.listTools()).tools.map((t) => t.name), { timeout: 20_000 }).toContain("snapshot_page");

    const outline = textOf(await client.callTool({ name: "snapshot_page", arguments: {} }));
    expect(outline).toContain("UNTRUSTED_CONTENT");
    expect(outline).toMatch(/textbox "Your name" \[ref=e\d+\]/);
    expect(outline).not.toContain(PASSWORD_VALUE);
    expect(outline).not.toContain(HIDDEN_VALUE);
    const name = /textbox "Your name" \[ref=(e\d+)\]/.exec(outline)?.[1] ?? "";

    const typed = await client.callTool({ name: "input_text", arguments: { ref: name, text: "Ada via MCP" } });
    expect(typed.isError ?? false, textOf(typed)).toBe(false);
    expect(await page.inputValue("#q")).toBe("Ada via MCP");
    const sent = await client.callTool({ name: "submit_form", arguments: { ref: name } });
    expect(sent.isError ?? false, textOf(sent)).toBe(false);
    await expect.poll(() => site.posts.length).toBe(1);
    expect(new URLSearchParams(site.posts[0]).get("q")).toBe("Ada via MCP");

    // Never: the browser's own pages, whatever the approver says.
    const settings = await client.callTool({ name: "navigate_to", arguments: { url: "chrome://settings/" } });
    expect(settings.isError).toBe(true);
    expect(textOf(settings)).toMatch(/never/);

    // The tab list is a resource, read through the engine as well.
    const tabs = await client.readResource({ uri: "browser://tabs" });
    const text = tabs.contents.map((c) => ("text" in c ? c.text : "")).join("");
    expect(text).toContain(`${site.origin}/submit`);

    // The switch goes off in the popup: the tools leave the list, and the client is told.
    await env.sw.evaluate(() => chrome.storage.local.set({ browserTools: false }));
    await expect.poll(async () => (await client.listTools()).tools.map((t) => t.name), { timeout: 20_000 }).not.toContain("snapshot_page");
    await expect.poll(() => changed.length, { timeout: 10_000 }).toBeGreaterThan(0);
    await client.close();

    const audit = bridge.audit() as unknown as { tool: string; status: string; client?: string }[];
    const mine = audit.filter((l) => l.client === "sdk-browser");
    expect(mine.map((l) => `${l.tool}:${l.status}`)).toEqual(
      expect.arrayContaining(["snapshot_page:success", "input_text:success", "submit_form:success", "navigate_to:denied", "read_resource:success"]),
    );
  } finally {
    await env.close();
    await site.close();
  }
});

test("an MCP client calls a page's own WebMCP tool through ground-link: listed as the page's, asked, run in the page", async () => {
  const runtimeDir = tempDir("run");
  const site = await startWebmcpSite();
  bridge = await startBridge(tempDir("sandbox"), { approval: "allow", env: { XDG_RUNTIME_DIR: runtimeDir } });
  const env = await launch({ nativeHost: bin(), env: { XDG_RUNTIME_DIR: runtimeDir } });
  try {
    await env.sw.evaluate(() => chrome.storage.local.set({ browserTools: true }));
    const page = await env.ctx.newPage();
    await page.goto(`${site.origin}/tools.html`);
    const client = new Client({ name: "page-tool-user", version: "1.0.0" });
    await client.connect(http(bridge, addClient(bridge, "sdk-pages")));
    let setStatus = "";
    await expect
      .poll(async () => {
        const { tools } = await client.listTools();
        const t = tools.find((x) => x.name.startsWith("page__") && x.name.endsWith("set_status"));
        setStatus = t?.name ?? "";
        return t?.description ?? "";
      }, { timeout: 20_000 })
      .toMatch(/UNTRUSTED_CONTENT[\s\S]*Sets the page's status heading/);
    const r = await client.callTool({ name: setStatus, arguments: { text: "set over MCP" } });
    expect(r.isError ?? false, textOf(r)).toBe(false);
    expect(textOf(r)).toContain("set over MCP");
    await expect(page.locator("#status")).toHaveText("set over MCP");
    // The page went elsewhere: its tool is gone from the list, and calling it says so.
    await page.goto(`${site.origin}/blank.html`);
    await expect.poll(async () => (await client.listTools()).tools.some((t) => t.name === setStatus), { timeout: 20_000 }).toBe(false);
    await expect(client.callTool({ name: setStatus, arguments: { text: "again" } })).rejects.toThrow();
    await client.close();
    const audit = bridge.audit() as unknown as { tool: string; status: string; client?: string }[];
    expect(audit.some((l) => l.client === "sdk-pages" && l.tool === setStatus && l.status === "success")).toBe(true);
  } finally {
    await env.close();
    await site.close();
  }
});
