// The settings window: sandbox root and modes, rules (global, project, managed read-only),
// hooks, project trust, pairing and the audit log. Every change goes through a command that
// the core validates; messages shown are the engine's own. The window's own text comes from
// ../i18n in the saved language, and saving another language redraws the window in it.
import "../style.css";
import { add, byId, clear, h } from "../dom";
import { locale, setLanguage, t } from "../i18n";
import { errorKind, message, settings as ipc } from "../ipc";
import type { AppSettings, CallStatus, Hook, Hooks, Layer, RuleAction, RuleFileView, SettingsView } from "../gen/types";
import { decisionLines, editFromText, fieldsFromRule, hookFromFields, ruleFromFields } from "./logic";

const TABS = ["general", "rules", "hooks", "trust", "pairing", "audit"] as const;
type Tab = (typeof TABS)[number];

let view: SettingsView | null = null;
let layer: Layer = "global";
let rulesFile: RuleFileView | null = null;
let editing: string | null = null;

function say(id: string, text: string, ok = false): void {
  const el = document.getElementById(id);
  if (!el) return;
  el.textContent = text;
  el.className = ok ? "ok" : "error";
}

/** Marks the field a command refused as invalid input (and points it at the message), or clears it. */
function markInvalid(id: string, msgId: string | null): void {
  const el = document.getElementById(id);
  if (!el) return;
  if (msgId) {
    el.setAttribute("aria-invalid", "true");
    el.setAttribute("aria-describedby", msgId);
    el.focus();
  } else {
    el.removeAttribute("aria-invalid");
    el.removeAttribute("aria-describedby");
  }
}

function input(id: string, value: string, extra: Record<string, string> = {}): HTMLInputElement {
  return h("input", { id, value, spellcheck: "false", autocomplete: "off", ...extra });
}

function select(id: string, options: [string, string][], value: string): HTMLSelectElement {
  const s = h("select", { id }, ...options.map(([v, label]) => h("option", { value: v, text: label })));
  s.value = value;
  return s;
}

function row(label: string, ...controls: (Node | null)[]): HTMLElement {
  return h("div", { class: "row" }, h("label", { text: label }), h("div", { class: "controls" }, ...controls));
}

function val(id: string): string {
  return byId<HTMLInputElement>(id).value;
}

// ---- general --------------------------------------------------------------------------------

function renderGeneral(el: HTMLElement): void {
  if (!view) return;
  const s = view.settings;
  const st = view.status;
  const status = st.running
    ? [t("statusRunning", { port: st.port ?? "" }), t(st.connected ? "extConnected" : "extWaiting"), st.pending ? t("statusPending", { n: st.pending }) : ""].filter(Boolean).join(" · ")
    : st.paused ? t("statusPaused") : t("statusStopped", { problem: st.problem ?? t("statusStarting") });
  add(el,
    h("p", { id: "status", class: st.running ? "ok" : "error", text: status }),
    st.problem && st.running ? h("p", { id: "status-problem", class: "error", text: st.problem }) : null,
    st.confinement ? h("p", { class: "warn", text: `exec_cmd: ${st.confinement}` }) : null,
    st.rootWarning ? h("p", { id: "root-warning", class: "warn", text: st.rootWarning }) : null,
    row(t("rootLabel"),
      input("root-input", s.root ?? "", { placeholder: "/home/you/project", size: "48" }),
      h("button", { id: "root-pick", type: "button", text: t("choose"), onclick: () => void pickRoot() }),
      h("button", { id: "root-open", type: "button", text: t("open"), onclick: () => void ipc.openRoot().catch((e) => say("settings-msg", message(e))) })),
    h("p", { id: "root-check", class: "muted" }),
    row(t("sandboxLabel"), select("sandbox", [["read-only", "read-only"], ["workspace-write", t("sandboxDefault")], ["full-access", "full-access"]], s.core.sandbox)),
    row(t("modeLabel"), select("mode", [["ask", t("modeAsk")], ["auto", t("modeAuto")]], s.core.mode)),
    row(t("portLabel"), input("port", String(s.core.port), { type: "number", min: "1024", max: "65535" })),
    row(t("timeoutLabel"), input("timeout", String(s.core.approvalTimeoutSec), { type: "number", min: "5", max: "3600" })),
    row(t("languageLabel"), select("language", [["en", t("langEn")], ["zh", t("langZh")]], s.core.language)),
    row(t("autostartLabel"), h("input", { id: "autostart", type: "checkbox", checked: s.autostart })),
    h("div", { class: "actions" }, h("button", { id: "settings-save", type: "button", class: "btn allow", text: t("save"), onclick: () => void saveGeneral() })),
    h("p", { id: "settings-msg" }),
    h("p", { class: "muted", text: t("whereThings", { global: view.globalRules, managed: view.managedRules, audit: view.auditDir, log: view.logDir, version: view.version }) }),
  );
  const rootInput = byId<HTMLInputElement>("root-input");
  rootInput.addEventListener("input", () => void checkRoot());
  void checkRoot();
}

async function checkRoot(): Promise<void> {
  const path = val("root-input");
  if (!path.trim()) return say("root-check", t("rootEmpty"));
  const c = await ipc.checkRoot(path);
  if (c.error) say("root-check", c.error);
  else say("root-check", [t("rootUses", { path: c.resolved ?? path }), ...c.warnings.map((w) => t("rootWarning", { text: w }))].join(" · "), c.warnings.length === 0);
}

async function pickRoot(): Promise<void> {
  const picked = await ipc.pickRoot().catch(() => null);
  if (picked) {
    byId<HTMLInputElement>("root-input").value = picked;
    await checkRoot();
  }
}

async function saveGeneral(): Promise<void> {
  if (!view) return;
  const core = { ...view.settings.core };
  core.sandbox = val("sandbox") as AppSettings["core"]["sandbox"];
  core.mode = val("mode") as AppSettings["core"]["mode"];
  core.port = Number.parseInt(val("port"), 10);
  core.approvalTimeoutSec = Number.parseInt(val("timeout"), 10);
  core.language = val("language") as AppSettings["core"]["language"];
  const root = val("root-input").trim();
  const next: AppSettings = { ...view.settings, root: root || null, core, autostart: byId<HTMLInputElement>("autostart").checked };
  say("settings-msg", t("saving"), true);
  try {
    view = await ipc.save(next);
    // The language may have changed: the tab names and this tab are drawn again in it.
    applyLanguage(view);
    show("general");
    say("settings-msg", t("saved"), true);
  } catch (e) {
    // The settings were saved but ground-link could not start with them: show the window as
    // it is now (the status line says what stopped it), then why.
    if (errorKind(e) === "engine") await openTab("general");
    say("settings-msg", message(e));
  }
}

// ---- rules ----------------------------------------------------------------------------------

const ACTIONS: [RuleAction, string][] = [["deny", "deny"], ["ask", "ask"], ["allow", "allow"]];

async function loadRules(): Promise<void> {
  try {
    rulesFile = await ipc.rules(layer);
    say("rules-error", rulesFile.error ? t("rulesBroken", { error: rulesFile.error }) : "", !rulesFile.error);
  } catch (e) {
    rulesFile = null;
    say("rules-error", message(e));
  }
  renderRuleList();
}

function renderRuleList(): void {
  const list = document.getElementById("rules-list");
  if (!list) return;
  clear(list);
  const f = rulesFile;
  if (!f) return;
  const ro = !f.editable;
  byId("rules-path").textContent = `${f.path}${f.exists ? "" : t("fileMissing")}${f.trusted === false ? t("fileUntrusted") : ""}${ro ? t("fileReadOnly") : ""}`;
  for (const r of f.rules) {
    const m = [r.match?.commandPrefix ? t("matchCommand", { prefix: r.match.commandPrefix }) : "", r.match?.pathGlob ? t("matchPath", { glob: r.match.pathGlob }) : "", r.match?.origin ? t("matchOrigin", { origin: r.match.origin }) : ""].filter(Boolean).join(t("listSep"));
    list.append(h("li", { class: `rule-${r.action}`, "data-id": r.id },
      h("b", { text: r.action }), ` ${r.id}: ${r.tool}${m ? t("matchNote", { match: m }) : ""}${r.description ? ` — ${r.description}` : ""} `,
      ro ? null : h("button", { type: "button", class: "small", text: t("edit"), onclick: () => startEdit(r.id) }),
      ro ? null : h("button", { type: "button", class: "small", "data-delete": r.id, text: t("delete"), onclick: () => void applyEdit({ type: "delete", id: r.id }) })));
  }
  for (const s of f.shorthand) {
    list.append(h("li", { class: `rule-${s.action}` }, h("b", { text: s.action }), ` ${s.text} `,
      ro ? null : h("button", { type: "button", class: "small", text: t("delete"), onclick: () => void applyEdit({ type: "deleteShorthand", action: s.action, text: s.text }) })));
  }
  if (f.rules.length === 0 && f.shorthand.length === 0) list.append(h("li", { class: "muted", text: t("noRules") }));
  const raw = document.getElementById("rules-text") as HTMLTextAreaElement | null;
  if (raw) {
    raw.value = f.text ?? "";
    raw.readOnly = ro;
  }
  for (const id of ["rule-add", "rule-add-text", "rules-save-text"]) {
    const b = document.getElementById(id) as HTMLButtonElement | null;
    if (b) b.disabled = ro;
  }
}

function startEdit(id: string): void {
  const r = rulesFile?.rules.find((x) => x.id === id);
  if (!r) return;
  const f = fieldsFromRule(r);
  editing = id;
  byId<HTMLInputElement>("rule-id").value = f.id;
  byId<HTMLSelectElement>("rule-action").value = f.action;
  byId<HTMLInputElement>("rule-tool").value = f.tool;
  byId<HTMLInputElement>("rule-prefix").value = f.commandPrefix;
  byId<HTMLInputElement>("rule-glob").value = f.pathGlob;
  byId<HTMLInputElement>("rule-origin").value = f.origin;
  byId<HTMLInputElement>("rule-desc").value = f.description;
  byId("rule-add").textContent = t("saveRule", { id });
}

async function applyEdit(edit: Parameters<typeof ipc.applyRule>[1]): Promise<boolean> {
  try {
    rulesFile = await ipc.applyRule(layer, edit);
    say("rules-error", t("inForce"), true);
    renderRuleList();
    return true;
  } catch (e) {
    // The rule was changed or removed meanwhile (another window, the file edited by hand):
    // show the file as it is now, then why the edit was refused.
    if (errorKind(e) === "notFound") await loadRules();
    say("rules-error", message(e));
    return false;
  }
}

async function addFromForm(): Promise<void> {
  const rule = ruleFromFields({
    id: val("rule-id"), action: val("rule-action") as RuleAction, tool: val("rule-tool"),
    commandPrefix: val("rule-prefix"), pathGlob: val("rule-glob"), origin: val("rule-origin"), description: val("rule-desc"),
  });
  const ok = await applyEdit(editing ? { type: "update", id: editing, rule } : { type: "add", rule });
  if (ok) {
    editing = null;
    byId("rule-add").textContent = t("addRule");
    for (const id of ["rule-id", "rule-prefix", "rule-glob", "rule-origin", "rule-desc"]) byId<HTMLInputElement>(id).value = "";
  }
}

async function addFromText(): Promise<void> {
  try {
    const edit = editFromText(val("rule-text"), val("rule-text-action") as RuleAction);
    if (await applyEdit(edit)) byId<HTMLInputElement>("rule-text").value = "";
  } catch (e) {
    say("rules-error", message(e));
  }
}

async function checkCall(): Promise<void> {
  const out = byId("check-result");
  markInvalid("check-input", null);
  try {
    out.textContent = decisionLines(await ipc.checkCall(val("check-input"))).join("\n");
  } catch (e) {
    out.textContent = message(e);
    if (errorKind(e) === "invalidInput") markInvalid("check-input", "check-result");
  }
}

function renderRules(el: HTMLElement): void {
  add(el,
    row(t("fileLabel"), select("layer-select", [["global", t("layerGlobal")], ["project", t("layerProject")], ["managed", t("layerManaged")]], layer)),
    h("p", { id: "rules-path", class: "muted" }),
    h("p", { id: "rules-error" }),
    h("ul", { id: "rules-list", class: "rules" }),
    h("h3", { text: t("ruleFormTitle") }),
    h("div", { class: "grid" },
      h("label", { class: "field" }, h("span", { text: t("fieldAction") }), select("rule-action", ACTIONS, "deny")),
      h("label", { class: "field" }, h("span", { text: t("fieldTool") }), input("rule-tool", "exec_cmd")),
      h("label", { class: "field" }, h("span", { text: t("rulePrefix") }), input("rule-prefix", "", { placeholder: "npm test" })),
      h("label", { class: "field" }, h("span", { text: t("ruleGlob") }), input("rule-glob", "", { placeholder: "**/.env*" })),
      h("label", { class: "field" }, h("span", { text: t("ruleOrigin") }), input("rule-origin", "", { placeholder: "https://*.example.com" })),
      h("label", { class: "field" }, h("span", { text: t("fieldIdOptional") }), input("rule-id", "")),
      h("label", { class: "field" }, h("span", { text: t("fieldDescription") }), input("rule-desc", ""))),
    h("div", { class: "actions" }, h("button", { id: "rule-add", type: "button", class: "btn", text: t("addRule"), onclick: () => void addFromForm() })),
    row(t("ruleTextLabel"), select("rule-text-action", ACTIONS, "deny"), input("rule-text", "", { placeholder: "Bash(curl *)", size: "36" }),
      h("button", { id: "rule-add-text", type: "button", text: t("add"), onclick: () => void addFromText() })),
    h("h3", { text: t("checkTitle") }),
    h("textarea", { id: "check-input", rows: "3", spellcheck: "false" }),
    h("div", { class: "actions" }, h("button", { id: "check-run", type: "button", class: "btn", text: t("checkRun"), onclick: () => void checkCall() })),
    h("pre", { id: "check-result" }),
    h("details", {}, h("summary", { text: t("editText") }),
      h("textarea", { id: "rules-text", rows: "14", spellcheck: "false" }),
      h("div", { class: "actions" }, h("button", { id: "rules-save-text", type: "button", class: "btn", text: t("saveText"), onclick: () => void applyEdit({ type: "replaceText", text: byId<HTMLTextAreaElement>("rules-text").value }) }))),
  );
  byId<HTMLTextAreaElement>("check-input").value = '{"name":"exec_cmd","args":{"command":"npm test"}}';
  byId<HTMLSelectElement>("layer-select").addEventListener("change", (e) => {
    layer = (e.target as HTMLSelectElement).value as Layer;
    editing = null;
    void loadRules();
  });
  void loadRules();
}

// ---- hooks ----------------------------------------------------------------------------------

let hooksLayer: Layer = "global";

/** Draw the hooks of `hooksLayer`: from `given` (what an edit returned), else as loaded now. */
async function renderHooksList(given?: RuleFileView): Promise<void> {
  const list = document.getElementById("hooks-list");
  if (!list) return;
  clear(list);
  let file: RuleFileView;
  try {
    file = given ?? (await ipc.rules(hooksLayer));
  } catch (e) {
    return say("hooks-msg", message(e));
  }
  const phases: [keyof Hooks, "hookBefore" | "hookAfter"][] = [["PreToolUse", "hookBefore"], ["PostToolUse", "hookAfter"]];
  for (const [phase, when] of phases) {
    for (const hk of file.hooks[phase] ?? []) {
      list.append(h("li", {}, h("b", { text: `${phase}` }), ` ${t(when, { id: hk.id, tools: hk.toolMatch ?? "*" })}`, h("code", { text: hk.command }),
        t("hookMeta", { ms: hk.timeout ?? 5000, onFailure: hk.onFailure ?? "block" }),
        h("button", { type: "button", class: "small", text: t("runNow"), onclick: () => void runHook(hk) }),
        file.editable ? h("button", { type: "button", class: "small", text: t("delete"), onclick: () => void saveHooks(file, phase, (l) => l.filter((x) => x.id !== hk.id)) }) : null));
    }
  }
  if (!list.firstChild) list.append(h("li", { class: "muted", text: t("noHooks") }));
  (byId("hook-add") as HTMLButtonElement).onclick = () => {
    const hook = hookFromForm();
    void saveHooks(file, val("hook-phase") as keyof Hooks, (l) => [...l, hook]);
  };
}

/** The hook the form describes (`fallbackId` when the id field is empty). */
function hookFromForm(fallbackId = ""): Hook {
  return hookFromFields(val("hook-id") || fallbackId, val("hook-tool"), val("hook-command"), val("hook-timeout"), val("hook-failure"));
}

async function saveHooks(file: RuleFileView, phase: keyof Hooks, change: (l: Hook[]) => Hook[]): Promise<void> {
  const hooks: Hooks = { PreToolUse: [...(file.hooks.PreToolUse ?? [])], PostToolUse: [...(file.hooks.PostToolUse ?? [])] };
  hooks[phase] = change(hooks[phase] ?? []);
  let saved: RuleFileView | undefined;
  try {
    saved = await ipc.applyRule(hooksLayer, { type: "setHooks", hooks });
    say("hooks-msg", t("inForce"), true);
  } catch (e) {
    say("hooks-msg", message(e));
  }
  await renderHooksList(saved);
}

async function runHook(hook: Hook): Promise<void> {
  try {
    const r = await ipc.runHook(hook);
    say("hooks-msg", `${hook.id}: ${r.summary}`, !r.blocked);
  } catch (e) {
    say("hooks-msg", message(e));
  }
}

function renderHooks(el: HTMLElement): void {
  add(el,
    row(t("fileLabel"), select("hooks-layer", [["global", "global"], ["project", "project"], ["managed", t("layerManagedShort")]], hooksLayer)),
    h("ul", { id: "hooks-list", class: "rules" }),
    h("p", { id: "hooks-msg" }),
    h("h3", { text: t("hookFormTitle") }),
    h("div", { class: "grid" },
      h("label", { class: "field" }, h("span", { text: t("fieldPhase") }), select("hook-phase", [["PreToolUse", t("phasePre")], ["PostToolUse", "PostToolUse"]], "PreToolUse")),
      h("label", { class: "field" }, h("span", { text: t("ruleId") }), input("hook-id", "")),
      h("label", { class: "field" }, h("span", { text: t("fieldTools") }), input("hook-tool", "*")),
      h("label", { class: "field" }, h("span", { text: t("fieldCommand") }), input("hook-command", "", { placeholder: "./scripts/check.sh" })),
      h("label", { class: "field" }, h("span", { text: t("fieldTimeoutMs") }), input("hook-timeout", "5000", { type: "number" })),
      h("label", { class: "field" }, h("span", { text: t("fieldOnFailure") }), select("hook-failure", [["block", "block"], ["skip", "skip"]], "block"))),
    h("div", { class: "actions" }, h("button", { id: "hook-add", type: "button", class: "btn", text: t("addHook") }),
      h("button", { id: "hook-try", type: "button", text: t("tryHook"), onclick: () => void runHook(hookFromForm("try")) })),
  );
  byId<HTMLSelectElement>("hooks-layer").addEventListener("change", (e) => {
    hooksLayer = (e.target as HTMLSelectElement).value as Layer;
    void renderHooksList();
  });
  void renderHooksList();
}

// ---- trust ----------------------------------------------------------------------------------

function renderTrust(el: HTMLElement): void {
  const out = h("pre", { id: "trust-diff", class: "diff" });
  const msg = h("p", { id: "trust-msg" });
  const btn = h("button", { id: "trust-do", type: "button", class: "btn allow", text: t("trustDo") });
  el.append(h("p", { class: "muted", text: t("trustExplain") }), msg, out, h("div", { class: "actions" }, btn));
  let shown = "";
  const show = (tv: Awaited<ReturnType<typeof ipc.trust>>) => {
    shown = tv.content ?? "";
    clear(out);
    msg.textContent = !tv.exists ? t("trustNoFile") : tv.trusted ? t("trustYes") : t("trustNo");
    msg.className = tv.trusted || !tv.exists ? "ok" : "warn";
    for (const line of tv.diff.split("\n")) {
      const kind = line.startsWith("+") ? "d-add" : line.startsWith("-") ? "d-remove" : line.startsWith("@@") ? "d-hunk" : "d-context";
      out.append(h("div", { class: kind, text: line || " " }));
    }
    if (tv.error) msg.textContent += t("trustBroken", { error: tv.error });
    btn.disabled = !tv.exists || tv.trusted;
  };
  btn.addEventListener("click", () => void ipc.trustProject(shown).then(show).catch((e) => (msg.textContent = message(e))));
  void ipc.trust().then(show).catch((e) => (msg.textContent = message(e)));
}

// ---- pairing --------------------------------------------------------------------------------

function renderPairing(el: HTMLElement): void {
  const body = h("div", { id: "pairing" });
  el.append(body);
  const show = (p: Awaited<ReturnType<typeof ipc.pairing>>) => {
    clear(body);
    const token = h("code", { id: "token", text: "•".repeat(16) });
    add(body,
      row(t("bridgeLabel"), h("span", { text: p.port ? `http://127.0.0.1:${p.port} · ${t(p.connected ? "extConnected" : "noExtension")}` : t("notRunning") })),
      row(t("tokenLabel"), token,
        h("button", { type: "button", text: t("show"), onclick: () => (token.textContent = p.token) }),
        h("button", { id: "token-copy", type: "button", text: t("copy"), onclick: () => void ipc.copyToken().then(() => say("pairing-msg", t("copied"), true)).catch((e) => say("pairing-msg", message(e))) }),
        h("button", { id: "token-rotate", type: "button", text: t("regenerate"), onclick: () => void ipc.rotateToken().then(show).then(() => say("pairing-msg", t("rotated"), true)).catch((e) => say("pairing-msg", message(e))) })),
      h("p", { class: "muted", text: `${t("keptIn", { place: p.keptIn })}${p.warning ? t("keptWarning", { warning: p.warning }) : ""}` }),
      h("h3", { text: t("pairedTitle") }),
      h("ul", { id: "paired" }, ...(p.paired.length ? p.paired.map((x) => h("li", { text: t("pairedSeen", { origin: x.origin, time: new Date(x.lastSeen * 1000).toLocaleString(locale()) }) })) : [h("li", { class: "muted", text: t("pairedNone") })])),
      h("p", { id: "pairing-msg" }),
      h("h3", { text: t("clientsTitle") }),
      h("p", { class: "muted", text: t("clientsHelp") }),
      p.clientsError ? h("p", { class: "error", text: p.clientsError }) : null,
      h("ul", { id: "clients" }, ...(p.clients.length
        ? p.clients.map((c) => h("li", { "data-client": c.name }, t("clientMade", { name: c.name, time: new Date(c.created * 1000).toLocaleString(locale()) }), " ",
            h("button", { type: "button", class: "small", "data-revoke": c.name, text: t("revoke"), onclick: () => void revokeClient(c.name) })))
        : [h("li", { class: "muted", text: t("clientsNone") })])),
      row(t("clientName"), input("client-name", "", { placeholder: "claude-code" }),
        h("button", { id: "client-add", type: "button", text: t("addClient"), onclick: () => void addClient() })),
      h("div", { id: "client-token" }),
      h("p", { id: "clients-msg" }),
    );
    byId("client-name").addEventListener("input", () => markInvalid("client-name", null));
  };
  const addClient = async (): Promise<void> => {
    const name = (document.getElementById("client-name") as HTMLInputElement).value.trim();
    try {
      const added = await ipc.addClient(name);
      show(added.pairing);
      // Shown this once: ground-link keeps only its digest.
      add(byId("client-token"),
        h("p", { text: t("clientTokenOnce", { name }) }),
        h("code", { id: "client-token-value", text: added.token }));
      say("clients-msg", t("clientAdded", { name }), true);
    } catch (e) {
      say("clients-msg", message(e));
      // A name the core refuses (not a name, taken already): the message points at the field.
      if (errorKind(e) === "invalidInput") markInvalid("client-name", "clients-msg");
    }
  };
  const revokeClient = async (name: string): Promise<void> => {
    try {
      show(await ipc.revokeClient(name));
      say("clients-msg", t("revoked", { name }), true);
    } catch (e) {
      // Revoked meanwhile (by `ground-link token revoke`, say): show the list as it is now.
      if (errorKind(e) === "notFound") {
        const now = await ipc.pairing().catch(() => null);
        if (now) show(now);
      }
      say("clients-msg", message(e));
    }
  };
  void ipc.pairing().then(show).catch((e) => add(body, h("p", { class: "error", text: message(e) })));
}

// ---- audit ----------------------------------------------------------------------------------

function renderAudit(el: HTMLElement): void {
  const table = h("table", { id: "audit-table" });
  add(el,
    row(t("filterLabel"), input("audit-text", "", { placeholder: t("filterHint") }),
      select("audit-status", [["", t("anyStatus")], ["success", "success"], ["denied", "denied"], ["error", "error"], ["timeout", "timeout"]], ""),
      h("button", { id: "audit-load", type: "button", text: t("show"), onclick: () => void load() }),
      h("button", { id: "audit-verify", type: "button", text: t("verifyChain"), onclick: () => void ipc.verifyAudit().then((c) => say("audit-msg", c.summary, c.ok)).catch((e) => say("audit-msg", message(e))) })),
    h("p", { id: "audit-msg" }),
    table,
  );
  const load = async () => {
    const status = val("audit-status");
    let page: Awaited<ReturnType<typeof ipc.audit>>;
    try {
      page = await ipc.audit({ text: val("audit-text"), status: status ? (status as CallStatus) : null, limit: 200 });
    } catch (e) {
      return say("audit-msg", message(e));
    }
    clear(table);
    table.append(h("tr", {}, ...(["colTime", "colFrom", "colTool", "colStatus", "colDecision", "colAnswer", "colArgs", "colChat"] as const).map((x) => h("th", { text: t(x) }))));
    for (const r of page.rows) {
      table.append(h("tr", { class: `st-${r.status}` }, ...[r.time, r.from, r.tool, r.status, r.decision ?? "", r.answer ?? "", r.args, r.session ?? ""].map((x) => h("td", { text: x, title: x }))));
    }
    say("audit-msg", t("auditCount", { shown: page.rows.length, matched: page.matched, dir: page.dir }), true);
  };
  void load();
}

// ---- shell ----------------------------------------------------------------------------------

const RENDER: Record<Tab, (el: HTMLElement) => void> = {
  general: renderGeneral, rules: renderRules, hooks: renderHooks, trust: renderTrust, pairing: renderPairing, audit: renderAudit,
};

/** Puts the saved language in force for the whole window: title, tab names, later renders. */
function applyLanguage(v: SettingsView): void {
  setLanguage(v.settings.core.language);
  document.title = t("settingsTitle");
  for (const x of TABS) byId(`tab-${x}`).textContent = t(x);
}

function show(tab: Tab): void {
  for (const x of TABS) byId(`tab-${x}`).classList.toggle("active", x === tab);
  const panel = byId("panel");
  clear(panel);
  RENDER[tab](panel);
}

/** Shows a tab with fresh settings (the status and the language may have changed meanwhile). */
async function openTab(tab: Tab): Promise<void> {
  try {
    view = await ipc.get();
  } catch (e) {
    byId("panel").textContent = t("settingsLoadFailed", { error: message(e) });
    return;
  }
  applyLanguage(view);
  show(tab);
}

function main(): void {
  add(byId("app"),
    h("nav", { class: "tabs" }, ...TABS.map((x) => h("button", { id: `tab-${x}`, type: "button", text: t(x), onclick: () => void openTab(x) }))),
    h("section", { id: "panel" }),
  );
  void openTab("general");
}

main();
