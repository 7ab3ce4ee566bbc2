// The settings window in a DOM, in each language: every tab is opened and its buttons that
// add text are pressed; in zh nothing English from the text table (or hard-coded) may show,
// in en the English labels are there, and saving another language redraws the window in it.
import { beforeEach, describe, expect, it, vi } from "vitest";
import type { AuditPage, CommandError, Decision, HookRun, Language, PairingView, RootCheck, RuleFileView, SettingsView, StatusView, TrustView } from "../gen/types";
import { englishFromTable, strayWords, visibleTexts } from "../i18n-check";

let lang: Language = "en";
const calls: { cmd: string; args: Record<string, unknown> }[] = [];
// What some commands answer next; the walk changes them to reach the window's other states.
const RUNNING: StatusView = { confinement: "landlock", connected: false, paused: false, pending: 2, port: 8787, problem: null, root: "/srv/sb", rootWarning: null, running: true, siteProblems: [] };
const PAIRED: PairingView = {
  connected: false, keptIn: "K-keyring", paired: [{ origin: "chrome-extension://abc", lastSeen: 1_700_000_000 }], port: 8787, token: "tok", warning: "W-keyring",
  clients: [{ name: "cursor-ide", created: 1_700_000_000 }], clientsError: null,
};
let clients = PAIRED.clients;
let status: StatusView = RUNNING;
let trust: TrustView = { exists: true, trusted: false, diff: "@@ -1 +1 @@\n-a\n+b", error: "E-trust", content: "b" };
let getFails = false;
/** A command's next answer is this rejection (what the app sends: a `CommandError`). */
const failNext = new Map<string, CommandError>();

vi.mock("@tauri-apps/api/core", () => ({
  Channel: class {},
  invoke: vi.fn(async (cmd: string, args: Record<string, unknown> = {}) => answer(cmd, args)),
}));

// What the engine and the files say: made-up tokens, so that any English on the page is the UI's.
const DATA = [
  "T-once-4b2c", "E-client-name", "cursor-ide", "claude-code",
  "/srv/sb", "/cfg/gl/permissions.json", "/etc/gl/managed.json", "/data/gl/log", "/state/gl", "0.1.0", "landlock", "W-home",
  "E-parse", "h-lint", "./lint.sh", "h-fmt", "./fmt.sh", "no-curl", "curl", "D-net", "Bash(git push *)",
  "S-hook", "R-engine", "E-trust", "K-keyring", "W-keyring", "chrome-extension://abc", "S-chain", "https://*.example.com",
  '{"command":"curl x"}', "c-1", "chat.example/c/1", "2024-01-01T00:00:00Z", "E-load", "mcp · codex",
];

/** Keys of the approval dialog (tested in approval/main.test.ts), never shown in this window. */
const APPROVAL_ONLY = [
  "risk", "reason", "why", "args", "parts", "page", "diff", "diffCut", "ruleTitle", "allowOnce", "allowSession",
  "allowProject", "allowGlobal", "deny", "denyReason", "queued", "timeLeft", "escHint", "networkOff", "networkAllow",
  "approvalLoadFailed", "pairTitle", "pairQuestion", "pairRefuse",
];

function settingsView(): SettingsView {
  return {
    auditDir: "/data/gl/log", logDir: "/state/gl", globalRules: "/cfg/gl/permissions.json", managedRules: "/etc/gl/managed.json", version: "0.1.0",
    settings: {
      autostart: false, root: "/srv/sb",
      core: { approvalTimeoutSec: 120, auditMaxAgeDays: 30, auditMaxTotalMb: 100, execTimeoutMaxSec: 600, language: lang, mode: "ask", port: 8787, sandbox: "workspace-write" },
    },
    status,
  };
}

function rulesView(layer: string): RuleFileView {
  if (layer === "managed") {
    return { editable: false, error: null, exists: true, hooks: { PreToolUse: [], PostToolUse: [] }, layer, path: "/etc/gl/managed.json", rules: [], shorthand: [], text: "{}", trusted: null };
  }
  return {
    editable: true, error: "E-parse", exists: false, layer: "global", path: "/cfg/gl/permissions.json", text: "{}", trusted: false,
    hooks: {
      PreToolUse: [{ id: "h-lint", command: "./lint.sh", toolMatch: "curl", timeout: 5000, onFailure: "block" }],
      PostToolUse: [{ id: "h-fmt", command: "./fmt.sh", toolMatch: "*", timeout: 250, onFailure: "skip" }],
    },
    rules: [{ id: "no-curl", action: "deny", tool: "exec_cmd", match: { commandPrefix: "curl", pathGlob: "**/.env*" }, description: "D-net" }],
    shorthand: [{ action: "ask", text: "Bash(git push *)" }],
  };
}

function answer(cmd: string, args: Record<string, unknown>): unknown {
  calls.push({ cmd, args });
  const fail = failNext.get(cmd);
  if (fail) {
    failNext.delete(cmd);
    throw fail;
  }
  switch (cmd) {
    case "settings_get":
      clients = PAIRED.clients; // a window that loads anew starts from the stored list
      // Not a command error: Tauri's own refusal is a bare string.
      if (getFails) throw "E-load";
      return settingsView();
    case "settings_save":
      lang = (args.settings as SettingsView["settings"]).core.language;
      return settingsView();
    case "root_check":
      return { error: null, resolved: "/srv/sb", warnings: ["W-home"] } satisfies RootCheck;
    case "rules_view":
    case "rules_apply":
      return rulesView(String(args.layer));
    case "rules_check_call":
      return {
        decision: "deny", risk: "moderate", reason: "R-engine", rule: { id: "no-curl", layer: "global" },
        steps: [{ step: "denyRule", outcome: "deny", detail: "no-curl" }],
      } satisfies Decision;
    case "hook_run":
      return { blocked: true, summary: "S-hook" } satisfies HookRun;
    case "trust_get":
      return trust;
    case "trust_project":
      return { ...trust, trusted: true, error: null };
    case "pairing_get":
      return { ...PAIRED, clients };
    case "client_add":
      if (!args.name) throw { kind: "invalidInput", message: "E-client-name" } satisfies CommandError;
      clients = [...clients, { name: String(args.name), created: 1_700_000_100 }];
      return { pairing: { ...PAIRED, clients }, token: "T-once-4b2c" };
    case "client_revoke":
      clients = clients.filter((c) => c.name !== args.name);
      return { ...PAIRED, clients } satisfies PairingView;
    case "token_rotate":
      return { ...PAIRED, connected: true, port: null, paired: [], warning: null } satisfies PairingView;
    case "audit_read":
      return {
        dir: "/data/gl/log", matched: 3,
        rows: [{ answer: "allow", args: '{"command":"curl x"}', callId: "c-1", decision: "ask", durationMs: 5, from: "mcp · codex", note: null, session: "chat.example/c/1", status: "success", time: "2024-01-01T00:00:00Z", tool: "exec_cmd", why: null }],
      } satisfies AuditPage;
    case "audit_verify":
      return { ok: true, summary: "S-chain" };
    default:
      return null;
  }
}

const text = (id: string) => document.getElementById(id)?.textContent ?? "";
const el = <T extends HTMLElement = HTMLElement>(css: string) => {
  const e = document.querySelector<T>(css);
  if (!e) throw new Error(`${css} is not on the page`);
  return e;
};
const settle = () => new Promise((r) => setTimeout(r, 0));

/** A fresh settings window in `language` (the module draws itself when it is imported). */
async function load(language: Language): Promise<void> {
  lang = language;
  status = RUNNING;
  trust = { exists: true, trusted: false, diff: "@@ -1 +1 @@\n-a\n+b", error: "E-trust", content: "b" };
  getFails = false;
  failNext.clear();
  calls.length = 0;
  vi.resetModules();
  document.title = "";
  document.body.innerHTML = '<main id="app"></main>';
  await import("./main");
  await vi.waitFor(() => expect(text("root-check")).not.toBe(""));
}

/** Every tab, with the actions that put more text on it; returns all text shown on the way. */
async function walk(): Promise<string[]> {
  const seen: string[] = [];
  const look = () => seen.push(...visibleTexts());
  look();
  el("#settings-save").click();
  look(); // "saving…" until the answer comes
  const saving = text("settings-msg");
  await vi.waitFor(() => expect(text("settings-msg")).not.toBe(saving));
  look();
  const root = el<HTMLInputElement>("#root-input");
  root.value = " ";
  root.dispatchEvent(new Event("input"));
  look();
  for (const s of [{ ...RUNNING, connected: true }, { ...RUNNING, running: false, paused: true }, { ...RUNNING, running: false }]) {
    status = s;
    // The tab is drawn anew once its settings come back; until then the old one shows.
    const before = text("status");
    el("#tab-general").click();
    await vi.waitFor(() => expect(text("status")).not.toBe(before));
    look();
  }
  status = RUNNING;

  el("#tab-rules").click();
  await vi.waitFor(() => expect(document.querySelector("#rules-list li[data-id]")).not.toBeNull());
  await vi.waitFor(() => expect(text("rules-error")).not.toBe(""));
  look();
  el("#rules-list li[data-id] button:not([data-delete])").click(); // edit: the add button names the rule
  el<HTMLInputElement>("#rule-text").value = "curl everything";
  el("#rule-add-text").click(); // neither a shorthand nor JSON: the UI's own message
  el("#check-run").click();
  await vi.waitFor(() => expect(text("check-result")).not.toBe(""));
  look();
  el("#rules-list [data-delete]").click();
  await vi.waitFor(() => expect(document.querySelector("#rules-error.ok")?.textContent).toBeTruthy());
  look();
  const layer = el<HTMLSelectElement>("#layer-select");
  layer.value = "managed";
  layer.dispatchEvent(new Event("change"));
  await vi.waitFor(() => expect(document.querySelector("#rules-list li.muted")).not.toBeNull());
  look();

  el("#tab-hooks").click();
  await vi.waitFor(() => expect(document.querySelector("#hooks-list li button")).not.toBeNull());
  el("#hooks-list li button").click(); // run now
  await vi.waitFor(() => expect(text("hooks-msg")).not.toBe(""));
  look();
  el("#hook-add").click();
  await vi.waitFor(() => expect(document.querySelector("#hooks-msg.ok")).not.toBeNull());
  look();
  const hooksLayer = el<HTMLSelectElement>("#hooks-layer");
  hooksLayer.value = "managed";
  hooksLayer.dispatchEvent(new Event("change"));
  await vi.waitFor(() => expect(document.querySelector("#hooks-list li.muted")).not.toBeNull());
  look();

  el("#tab-trust").click();
  await vi.waitFor(() => expect(text("trust-msg")).not.toBe(""));
  look();
  el("#trust-do").click();
  await vi.waitFor(() => expect(document.querySelector("#trust-msg.ok")).not.toBeNull());
  // Trusting sends back the text whose diff was shown, so a file changed since is refused.
  expect(calls.find((c) => c.cmd === "trust_project")?.args).toEqual({ shown: "b" });
  look();
  const trusted = text("trust-msg");
  trust = { exists: false, trusted: false, diff: "", error: null, content: null };
  el("#tab-trust").click();
  await vi.waitFor(() => expect(text("trust-msg")).not.toBe(trusted));
  await vi.waitFor(() => expect(text("trust-msg")).not.toBe(""));
  look();

  el("#tab-pairing").click();
  await vi.waitFor(() => expect(document.getElementById("token")).not.toBeNull());
  el("#token-copy").click();
  await vi.waitFor(() => expect(text("pairing-msg")).not.toBe(""));
  look();
  el("#token-rotate").click();
  await vi.waitFor(() => expect(document.querySelector("#paired li.muted")).not.toBeNull());
  await vi.waitFor(() => expect(text("pairing-msg")).not.toBe(""));
  look();
  // Named MCP clients: an empty name is refused with the engine's words; a made token is
  // shown once; revoking removes the client.
  el("#client-add").click();
  await vi.waitFor(() => expect(text("clients-msg")).toBe("E-client-name"));
  expect(el("#client-name").getAttribute("aria-invalid")).toBe("true");
  el<HTMLInputElement>("#client-name").value = "claude-code";
  el("#client-add").click();
  await vi.waitFor(() => expect(text("client-token-value")).toBe("T-once-4b2c"));
  expect(calls.filter((c) => c.cmd === "client_add").at(-1)?.args).toEqual({ name: "claude-code" });
  expect(document.querySelector('[data-client="claude-code"]')).not.toBeNull();
  look();
  el('[data-revoke="cursor-ide"]').click();
  await vi.waitFor(() => expect(document.querySelector('[data-client="cursor-ide"]')).toBeNull());
  expect(calls.filter((c) => c.cmd === "client_revoke").at(-1)?.args).toEqual({ name: "cursor-ide" });
  look();

  el("#tab-audit").click();
  await vi.waitFor(() => expect(document.querySelector("#audit-table th")).not.toBeNull());
  // each row says who made the call, in its own column
  const headers = [...document.querySelectorAll("#audit-table th")].map((th) => th.textContent);
  const cells = [...document.querySelectorAll("#audit-table td")].map((td) => td.textContent);
  expect(cells[headers.indexOf(lang === "zh" ? "来源" : "from")]).toBe("mcp · codex");
  look();
  el("#audit-verify").click();
  await vi.waitFor(() => expect(text("audit-msg")).toBe("S-chain"));
  look();

  getFails = true;
  el("#tab-general").click();
  await vi.waitFor(() => expect(text("panel")).toContain("E-load"));
  look();
  await settle();
  return seen;
}

describe("the settings window's language", () => {
  beforeEach(() => {
    calls.length = 0;
  });

  it("in zh shows no English: neither from the en table nor hard-coded", async () => {
    await load("zh");
    const seen = await walk();
    expect(document.documentElement.lang).toBe("zh-CN");
    expect(seen).toContain("沙箱目录");
    expect(seen).toContain("ask（默认）");
    expect(englishFromTable(seen, DATA)).toEqual([]);
    expect(strayWords(seen, DATA)).toEqual([]);
  });

  it("in en shows the English labels", async () => {
    await load("en");
    const seen = await walk();
    expect(document.documentElement.lang).toBe("en");
    expect(seen.some((s) => s.includes("diagnostic log: /state/gl"))).toBe(true);
    // The walk reaches every text of this window, so the zh test above checks them all.
    const { TEXTS } = await import("../i18n");
    const unseen = Object.entries(TEXTS.en).filter(([, v]) => !v.split(/\{\w+\}/).every((p) => seen.some((s) => s.includes(p.trim())))).map(([k]) => k);
    expect(unseen).toEqual(APPROVAL_ONLY);
    for (const want of [
      "General", "Rules", "Hooks", "Project trust", "Pairing", "Audit log", "Sandbox folder", "Sandbox mode",
      "ask (default)", "auto: moderate calls run without asking", "Start at login", "Save", "Add or edit a rule",
      "Save rule no-curl", "Check (runs nothing)", "DENY (risk moderate): R-engine\nrule no-curl from the global file\n  denyRule → deny: no-curl",
      "Saved; in force now.", "no rules", "Add a hook", "PreToolUse (may block)", "Trust this file as it is",
      "Copied. Paste it into the extension's options.", "Verify the chain", "time", "from", "tool, client, chat, path, reason…",
    ]) expect(seen).toContain(want);
    expect(seen.some((s) => s.startsWith("This file does not load: E-parse."))).toBe(true);
    // The same walk in zh finds nothing; here the detector must find plenty, or it sees nothing.
    expect(englishFromTable(seen, DATA).length).toBeGreaterThan(60);
    expect(strayWords(seen, DATA).length).toBeGreaterThan(60);
  });

  it("a broad root's warning from the engine is shown on the general tab", async () => {
    await load("en");
    expect(document.getElementById("root-warning")).toBeNull();
    status = { ...RUNNING, rootWarning: "the sandbox root /home/u is broad" };
    el("#tab-general").click();
    await vi.waitFor(() => expect(text("root-warning")).toBe("the sandbox root /home/u is broad"));
  });

  it("saving another language redraws the window in it, tab names included", async () => {
    await load("en");
    expect(text("tab-general")).toBe("General");
    el<HTMLSelectElement>("#language").value = "zh";
    el("#settings-save").click();
    await vi.waitFor(() => expect(text("settings-msg")).toBe("已保存。"));
    expect(calls.find((c) => c.cmd === "settings_save")?.args).toMatchObject({ settings: { core: { language: "zh" } } });
    expect(text("tab-general")).toBe("常规");
    expect(text("tab-audit")).toBe("审计日志");
    expect(document.documentElement.lang).toBe("zh-CN");
    await settle();
    const seen = visibleTexts();
    expect(englishFromTable(seen, DATA)).toEqual([]);
    expect(strayWords(seen, DATA)).toEqual([]);
  });
});

describe("a command error's kind is acted on", () => {
  it("invalid input is shown next to the field it is about, until the field changes", async () => {
    await load("en");
    el("#tab-pairing").click();
    await vi.waitFor(() => expect(document.getElementById("client-add")).not.toBeNull());
    const name = el<HTMLInputElement>("#client-name");
    name.value = "cursor-ide";
    failNext.set("client_add", { kind: "invalidInput", message: "a client named \"cursor-ide\" exists already; revoke it first or pick another name" });
    el("#client-add").click();
    await vi.waitFor(() => expect(text("clients-msg")).toContain("exists already"));
    expect(el("#clients-msg").className).toBe("error");
    expect(name.getAttribute("aria-invalid")).toBe("true");
    expect(name.getAttribute("aria-describedby")).toBe("clients-msg");
    expect(document.activeElement).toBe(name);
    name.value = "cursor-2";
    name.dispatchEvent(new Event("input"));
    expect(name.hasAttribute("aria-invalid")).toBe(false);

    // Any other kind says what went wrong without blaming the field.
    failNext.set("client_add", { kind: "io", message: "client tokens file /x: disk full" });
    el("#client-add").click();
    await vi.waitFor(() => expect(text("clients-msg")).toBe("client tokens file /x: disk full"));
    expect(name.hasAttribute("aria-invalid")).toBe(false);
  });

  it("a call that is not valid JSON marks the call's box; a stopped engine does not", async () => {
    await load("en");
    el("#tab-rules").click();
    await vi.waitFor(() => expect(document.getElementById("check-run")).not.toBeNull());
    failNext.set("rules_check_call", { kind: "invalidInput", message: "the call is not valid JSON: EOF" });
    el("#check-run").click();
    await vi.waitFor(() => expect(text("check-result")).toBe("the call is not valid JSON: EOF"));
    expect(el("#check-input").getAttribute("aria-invalid")).toBe("true");
    failNext.set("rules_check_call", { kind: "notRunning", message: "ground-link is paused; resume it from the tray" });
    el("#check-run").click();
    await vi.waitFor(() => expect(text("check-result")).toBe("ground-link is paused; resume it from the tray"));
    expect(el("#check-input").hasAttribute("aria-invalid")).toBe(false);
  });

  it("a rule removed meanwhile reloads the list, then says why the edit was refused", async () => {
    await load("en");
    el("#tab-rules").click();
    await vi.waitFor(() => expect(document.querySelector("#rules-list [data-delete]")).not.toBeNull());
    const views = () => calls.filter((c) => c.cmd === "rules_view").length;
    const before = views();
    failNext.set("rules_apply", { kind: "notFound", message: "/cfg/gl/permissions.json: rule \"no-curl\" not found; reload the list and try again" });
    el("#rules-list [data-delete]").click();
    await vi.waitFor(() => expect(text("rules-error")).toContain("not found"));
    expect(views()).toBe(before + 1);
    expect(el("#rules-error").className).toBe("error");

    // Refused for another reason: nothing to reload.
    failNext.set("rules_apply", { kind: "io", message: "/cfg/gl/permissions.json: permission denied" });
    el("#rules-list [data-delete]").click();
    await vi.waitFor(() => expect(text("rules-error")).toContain("permission denied"));
    expect(views()).toBe(before + 1);
  });

  it("a client revoked meanwhile is taken off the list", async () => {
    await load("en");
    el("#tab-pairing").click();
    await vi.waitFor(() => expect(document.querySelector('[data-client="cursor-ide"]')).not.toBeNull());
    // `ground-link token revoke cursor-ide` ran in a terminal while the window was open.
    clients = [];
    failNext.set("client_revoke", { kind: "notFound", message: 'there is no client named "cursor-ide"; it may be revoked already' });
    el('[data-revoke="cursor-ide"]').click();
    await vi.waitFor(() => expect(document.querySelector('[data-client="cursor-ide"]')).toBeNull());
    expect(text("clients-msg")).toContain("no client named");
  });

  it("settings kept but not started with: the window shows the stopped state and why", async () => {
    await load("en");
    el<HTMLInputElement>("#port").value = "8080";
    failNext.set("settings_save", { kind: "engine", message: "cannot listen on 127.0.0.1:8080: address in use; is another ground-link running? pick another --port" });
    status = { ...RUNNING, running: false, port: null, problem: "cannot listen on 127.0.0.1:8080" };
    el("#settings-save").click();
    await vi.waitFor(() => expect(text("settings-msg")).toContain("address in use"));
    expect(text("status")).toContain("cannot listen on 127.0.0.1:8080");
    expect(el("#status").className).toBe("error");

    // Refused before anything was saved: the window stays as it was.
    status = RUNNING;
    const gets = calls.filter((c) => c.cmd === "settings_get").length;
    failNext.set("settings_save", { kind: "invalidInput", message: "port 80 needs root; use one above 1023, e.g. 18080" });
    el("#settings-save").click();
    await vi.waitFor(() => expect(text("settings-msg")).toContain("needs root"));
    expect(calls.filter((c) => c.cmd === "settings_get").length).toBe(gets);
  });
});
