/**
 * The side panel (DESIGN §12): the page tools of the tab it follows (inspector with schema,
 * origin, hints and a form to call a tool by hand, showing the raw result and the delimited form
 * a model would get), the skill manager, and the operation log.
 *
 * It follows the active tab of its window; opened as a tab itself (tests, or a person who wants
 * it wide) it takes `?tabId=N`. Page text is only ever set as `textContent`.
 */

import { t } from "../shared/i18n";
import { $, localise, worker } from "../shared/ui";
import { chromeLocal } from "../shared/store";
import { appendLog, clearLog, readLog } from "../shared/oplog";
import { buildPanelReport } from "../shared/panel-audit";
import { loadSkills, putSkill, saveSkills } from "../shared/skill-store";
import { validateSkill } from "../shared/skills";
import { delimitUntrusted, DEFAULT_CALL_TIMEOUT_MS, type FrameReport, type PageTool } from "../shared/webmcp";
import type { TabReply, TabRequest } from "../shared/protocol";
import { buildForm, parseInput } from "./schema-form";
import { pageToolsCovered, sitePattern } from "./coverage";
import { setupChat } from "./chat";

const kv = chromeLocal();
const EXAMPLES = ["local-search", "local-shop", "local-todo"];
const fixedTab = Number(new URLSearchParams(location.search).get("tabId") ?? NaN);

let tabId: number | null = null;
let tabUrl = "";
let frames: Record<string, FrameReport> = {};
let selected: { frameId: number; tool: PageTool } | null = null;
let running: { callId: string; frameId: number } | null = null;

// ---- which tab ----

async function resolveTab(): Promise<void> {
  let tab: chrome.tabs.Tab | undefined;
  if (Number.isInteger(fixedTab)) tab = await chrome.tabs.get(fixedTab).catch(() => undefined);
  else [tab] = await chrome.tabs.query({ active: true, currentWindow: true });
  tabId = tab?.id ?? null;
  tabUrl = tab?.url ?? "";
  $("target").textContent = tabUrl ? safeOrigin(tabUrl) : t("panelNoTab");
  await renderCoverage();
  await loadFrames();
  void relist();
}

function safeOrigin(u: string): string {
  try {
    return new URL(u).origin;
  } catch {
    return u;
  }
}

async function renderCoverage(): Promise<void> {
  const covered = tabUrl ? await pageToolsCovered(tabUrl) : true;
  $("enableBox").hidden = covered || !/^https?:/.test(tabUrl);
  $("enableText").textContent = t("panelNotEnabled", safeOrigin(tabUrl));
}

function toTab(msg: TabRequest, frameId?: number): Promise<TabReply | undefined> {
  if (tabId === null) return Promise.resolve(undefined);
  const opts = frameId === undefined ? {} : { frameId };
  return (chrome.tabs.sendMessage(tabId, msg, opts) as Promise<TabReply | undefined>).catch(() => undefined);
}

/** Asks every frame to list again (they report to the worker; we render from storage). */
async function relist(): Promise<void> {
  await toTab({ type: "webmcpList" });
}

async function loadFrames(): Promise<void> {
  if (tabId === null) return;
  const key = `pageTools:${tabId}`;
  frames = ((await chrome.storage.session.get(key))[key] ?? {}) as Record<string, FrameReport>;
  renderTools();
  renderSkillsHere();
}

// ---- tools ----

function badge(text: string, cls = ""): HTMLElement {
  const b = document.createElement("span");
  b.className = `badge ${cls}`;
  b.textContent = text;
  return b;
}

function renderTools(): void {
  const list = $("tools");
  list.replaceChildren();
  const all = Object.values(frames).flatMap((f) => f.tools.map((tool) => ({ frameId: f.frameId, tool })));
  const apis = [...new Set(Object.values(frames).map((f) => f.api))];
  $("apiLine").textContent = apis.length > 0 ? t("panelApi", apis.join(", ")) : "";
  $("noTools").hidden = all.length > 0;
  for (const { frameId, tool } of all) {
    const li = document.createElement("li");
    li.dataset.tool = tool.name;
    li.dataset.frame = String(frameId);
    const name = document.createElement("strong");
    name.textContent = tool.name;
    li.append(name, badge(tool.source));
    if (tool.annotations.readOnlyHint) li.append(badge("readOnly", "ro"));
    if (tool.annotations.consequentialHint) li.append(badge("consequential", "conseq"));
    const desc = document.createElement("div");
    desc.className = "small muted";
    desc.textContent = tool.description.slice(0, 160);
    const open = document.createElement("button");
    open.textContent = t("panelOpen");
    open.className = "open";
    open.addEventListener("click", () => select(frameId, tool));
    li.append(desc, open);
    list.append(li);
  }
  const problems = Object.values(frames).flatMap((f) => f.problems);
  $("problemsBox").hidden = problems.length === 0;
  $("problems").replaceChildren(...problems.map((p) => Object.assign(document.createElement("li"), { textContent: p })));
  // keep the open tool's details in step with the page (it may have gone)
  if (selected) {
    const still = all.find((x) => x.frameId === selected?.frameId && x.tool.name === selected.tool.name);
    if (!still) $("detail").hidden = true;
  }
}

function select(frameId: number, tool: PageTool): void {
  selected = { frameId, tool };
  $("detail").hidden = false;
  $("detailName").textContent = tool.title ? `${tool.name} — ${tool.title}` : tool.name;
  $("detailSource").textContent = tool.skill ? `${tool.source} (${tool.skill})` : tool.source;
  $("detailOrigin").textContent = tool.origin;
  $("detailFrame").textContent = frameId === 0 ? "top" : String(frameId);
  $("detailAnnotations").textContent = JSON.stringify(tool.annotations);
  $("detailDescription").textContent = tool.description;
  $("detailSchema").textContent = JSON.stringify(tool.inputSchema, null, 2);
  const input = $("callInput") as HTMLTextAreaElement;
  input.value = "{}";
  buildForm($("callForm") as HTMLFormElement, tool.inputSchema, (v) => (input.value = JSON.stringify(v, null, 2)));
  $("callStatus").textContent = "";
  $("callResult").textContent = "";
  $("callDelimited").textContent = "";
}

async function callSelected(): Promise<void> {
  if (!selected || tabId === null || running) return;
  const { frameId, tool } = selected;
  const parsed = parseInput(($("callInput") as HTMLTextAreaElement).value);
  const status = $("callStatus");
  if (!parsed.ok) {
    status.textContent = t("panelBadInput", parsed.message);
    status.className = "error";
    return;
  }
  const callId = crypto.randomUUID();
  running = { callId, frameId };
  status.className = "";
  status.textContent = t("panelCalling");
  ($("cancelBtn") as HTMLButtonElement).disabled = false;
  const started = performance.now();
  const reply = await toTab({ type: "webmcpCall", callId, name: tool.name, input: parsed.value, timeoutMs: DEFAULT_CALL_TIMEOUT_MS }, frameId);
  const roundTrip = Math.round(performance.now() - started);
  running = null;
  ($("cancelBtn") as HTMLButtonElement).disabled = true;
  const outcome = reply?.type === "callOutcome" ? reply.outcome : { ok: false as const, error: "the page did not answer (it may have navigated or been closed)", ms: roundTrip };
  status.dataset.roundTripMs = String(roundTrip);
  if (outcome.ok) {
    status.textContent = outcome.truncated ? t("panelCallTruncated", String(outcome.ms), String(outcome.bytes)) : t("panelCallDone", String(outcome.ms));
    status.dataset.state = "done";
    $("callResult").textContent = outcome.result ?? "null";
    $("callDelimited").textContent = delimitUntrusted(tool.origin, tool.name, "result", outcome.result ?? "null (the page navigated)", outcome.truncated);
  } else {
    status.textContent = t("panelCallFailed", outcome.error);
    status.dataset.state = "failed";
    status.className = "error";
    $("callResult").textContent = "";
    $("callDelimited").textContent = "";
  }
  // the worker sends it to the paired bridge's audit log (this page never talks to the bridge)
  const report = buildPanelReport({ callId, tool: tool.name, origin: tool.origin, url: tabUrl, args: parsed.value, decision: "byHand", outcome, durationMs: roundTrip });
  const audited = await worker({ type: "auditPanelCall", report });
  const audit = audited.type === "audited" ? audited.audit : `not audited: ${audited.type === "failed" ? audited.message : "no answer from the service worker"}`;
  await appendLog(kv, { at: Date.now(), by: "hand", tabId, frameId, origin: tool.origin, tool: tool.name, source: tool.source, input: parsed.value, outcome, ...(audit === null ? {} : { audit }) });
}

// ---- skills ----

function renderSkillsHere(): void {
  const ul = $("skillsHere");
  ul.replaceChildren();
  for (const s of Object.values(frames).flatMap((f) => f.skills)) {
    const li = document.createElement("li");
    li.dataset.skill = s.name;
    li.dataset.ok = String(s.ok);
    li.className = s.ok ? "" : "warn";
    li.textContent = s.ok ? t("panelHealthOk", s.name, s.tools.join(", ") || "—") : (s.problem ?? s.name);
    if (s.shadowed.length > 0) li.append(document.createElement("br"), t("panelShadowed", s.shadowed.join(", ")));
    ul.append(li);
  }
}

async function renderSkills(): Promise<void> {
  const all = await loadSkills(kv);
  const ul = $("skills");
  ul.replaceChildren();
  $("noSkills").hidden = all.length > 0;
  for (const [i, s] of all.entries()) {
    const li = document.createElement("li");
    li.dataset.skill = s.skill.name;
    const title = document.createElement("strong");
    title.textContent = `${s.skill.name} ${s.skill.version}`;
    const on = document.createElement("input");
    on.type = "checkbox";
    on.checked = s.enabled;
    on.title = t("panelEnabled");
    on.addEventListener("change", async () => {
      all[i] = { ...s, enabled: on.checked };
      await saveSkills(kv, all);
      void relist();
    });
    const exp = document.createElement("button");
    exp.textContent = t("panelExport");
    exp.addEventListener("click", () => download(`${s.skill.name}.json`, JSON.stringify(s.skill, null, 2)));
    const del = document.createElement("button");
    del.textContent = t("panelDelete");
    del.addEventListener("click", async () => {
      await saveSkills(kv, all.filter((_, j) => j !== i));
      await renderSkills();
      void relist();
    });
    const desc = document.createElement("div");
    desc.className = "small muted";
    desc.textContent = `${s.skill.match.join(" ")} — ${s.skill.tools.map((x) => x.name).join(", ")}`;
    li.append(on, " ", title, " ", exp, " ", del, desc);
    ul.append(li);
  }
}

function download(name: string, text: string): void {
  const a = document.createElement("a");
  a.href = URL.createObjectURL(new Blob([text], { type: "application/json" }));
  a.download = name;
  a.click();
  setTimeout(() => URL.revokeObjectURL(a.href), 1000);
}

async function importText(text: string, example = false): Promise<boolean> {
  const errors = $("skillErrors");
  errors.replaceChildren();
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (e) {
    errors.textContent = `${t("panelInvalidSkill")}\n${e instanceof Error ? e.message : String(e)}`;
    return false;
  }
  const v = validateSkill(raw);
  if (!v.ok) {
    errors.textContent = `${t("panelInvalidSkill")}\n${v.errors.join("\n")}`;
    return false;
  }
  await putSkill(kv, v.value, example);
  $("message").textContent = t("panelImported", v.value.name);
  return true;
}

// ---- log ----

async function renderLog(): Promise<void> {
  const entries = await readLog(kv);
  $("logEmpty").hidden = entries.length > 0;
  const ol = $("log");
  ol.replaceChildren();
  for (const e of [...entries].reverse()) {
    const li = document.createElement("li");
    li.dataset.tool = e.tool;
    li.dataset.ok = String(e.outcome.ok);
    li.dataset.by = e.by;
    if (e.audit !== undefined) li.dataset.audit = e.audit;
    const head = document.createElement("div");
    head.textContent = `${new Date(e.at).toLocaleTimeString()} · ${e.tool} · ${e.origin} · ${e.source} · ${e.by} · ${e.outcome.ok ? `ok ${e.outcome.ms} ms` : `failed: ${e.outcome.error}`}${e.audit === undefined ? "" : ` · ${e.audit}`}`;
    const body = document.createElement("pre");
    body.textContent = `${JSON.stringify(e.input)}\n→ ${e.outcome.ok ? (e.outcome.result ?? "null") : e.outcome.error}`;
    li.append(head, body);
    ol.append(li);
  }
}

// ---- wiring ----

function show(view: string): void {
  document.querySelectorAll<HTMLButtonElement>("nav [data-view]").forEach((b) => b.setAttribute("aria-selected", String(b.dataset.view === view)));
  for (const v of ["chat", "tools", "skills", "log"]) $(`view-${v}`).hidden = v !== view;
  if (view === "skills") void renderSkills();
  if (view === "log") void renderLog();
}

localise(document);
setupChat(() => tabId);
document.querySelectorAll<HTMLButtonElement>("nav [data-view]").forEach((b) => b.addEventListener("click", () => show(b.dataset.view ?? "tools")));
$("refresh").addEventListener("click", () => void relist());
$("callBtn").addEventListener("click", () => void callSelected());
$("cancelBtn").addEventListener("click", () => {
  if (running) void toTab({ type: "webmcpCancel", callId: running.callId }, running.frameId);
});
$("enable").addEventListener("click", async () => {
  const pattern = sitePattern(tabUrl);
  if (!pattern || tabId === null) return;
  // the person's click is the gesture Chrome needs for the prompt; only this one site is asked
  const granted = await chrome.permissions.request({ origins: [pattern] });
  if (!granted) return void ($("message").textContent = `Chrome did not grant ${pattern}`);
  const r = await worker({ type: "enablePageTools", origin: safeOrigin(tabUrl), tabId });
  $("message").textContent = r.type === "failed" ? r.message : "";
  await renderCoverage();
  setTimeout(() => void relist(), 300);
});
$("importSkill").addEventListener("click", async () => {
  const file = ($("skillFile") as HTMLInputElement).files?.[0];
  const text = file ? await file.text() : ($("skillJson") as HTMLTextAreaElement).value;
  if (await importText(text)) {
    await renderSkills();
    void relist();
  }
});
$("addExamples").addEventListener("click", async () => {
  for (const name of EXAMPLES) {
    const text = await (await fetch(chrome.runtime.getURL(`skills/examples/${name}.json`))).text();
    if (!(await importText(text, true))) return;
  }
  await renderSkills();
  void relist();
});
$("clearLog").addEventListener("click", async () => {
  await clearLog(kv);
  await renderLog();
});

chrome.storage.onChanged.addListener((changes, area) => {
  if (area === "session" && tabId !== null && changes[`pageTools:${tabId}`]) void loadFrames();
  if (area === "local" && changes.opLog && !$("view-log").hidden) void renderLog();
  if (area === "local" && changes.skills && !$("view-skills").hidden) void renderSkills();
});
if (!Number.isInteger(fixedTab)) {
  // a side panel follows its window's active tab
  chrome.tabs.onActivated.addListener(() => void resolveTab());
}
chrome.tabs.onUpdated.addListener((id, info) => {
  if (id === tabId && info.status === "complete") void resolveTab();
});
void resolveTab();
