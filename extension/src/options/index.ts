/**
 * The options page: bridge address, pairing, which sites are on, per-site selector overrides
 * (checked before saving, so a typo cannot silently switch a site off), step budget, auto-send.
 */

import { ADAPTERS, SITE_IDS, optionalHosts, validateOverrides, type AdapterOverrides } from "../shared/adapters";
import { t } from "../shared/i18n";
import { applyPack, checkPack, exportPack, sitesNeedingPageCheck, type AdapterPack } from "../shared/packs";
import type { ConnectionState, Reply, TabReply } from "../shared/protocol";
import { normaliseSettings, parseBridgeUrl, type Settings } from "../shared/settings";
import { $, connectionLabel, localise, worker } from "../shared/ui";

/**
 * Status answers can arrive out of order (a health check made with the old address or before
 * pairing may finish after the one made with the key): only the answer to the latest request
 * is shown, so an earlier "not paired" never overwrites a later "connected".
 */
let asked = 0;
function statusOf(req: Parameters<typeof worker>[0]): Promise<Reply | null> {
  const mine = ++asked;
  return worker(req).then((r) => (mine === asked ? r : null));
}

function showStatus(r: Reply | null): void {
  if (r === null) return;
  if (r.type === "failed") {
    setMessage(r.message, true);
    return;
  }
  if (r.type !== "status") return;
  const label = connectionLabel(r.connection);
  const state = $("state");
  state.textContent = label.text;
  state.dataset.kind = label.kind;
  $("detail").textContent = r.connection && r.connection.kind !== "connected" ? r.connection.detail : "";
}

function setMessage(text: string, error = false): void {
  const m = $("message");
  m.textContent = text;
  m.className = error ? "error" : "muted";
}

function isValidSelector(s: string): boolean {
  try {
    document.createDocumentFragment().querySelector(s);
    return true;
  } catch {
    return false;
  }
}

async function load(): Promise<Settings> {
  const got = await chrome.storage.local.get(["settings"]);
  return normaliseSettings(got.settings);
}

function render(s: Settings): void {
  ($("bridgeUrl") as HTMLInputElement).value = s.bridgeUrl;
  ($("autoSend") as HTMLInputElement).checked = s.autoSend;
  ($("stepBudget") as HTMLInputElement).value = String(s.stepBudget);
  ($("promptLang") as HTMLSelectElement).value = s.promptLang;
  ($("overrides") as HTMLTextAreaElement).value = Object.keys(s.overrides).length ? JSON.stringify(s.overrides, null, 2) : "";
  const sites = $("sites");
  sites.replaceChildren();
  for (const id of SITE_IDS) {
    const label = document.createElement("label");
    const box = document.createElement("input");
    box.type = "checkbox";
    box.dataset.site = id;
    box.checked = s.sites[id];
    label.append(box, ` ${ADAPTERS[id].name}`);
    sites.append(label);
  }
}

async function save(): Promise<void> {
  const current = await load();
  const url = parseBridgeUrl(($("bridgeUrl") as HTMLInputElement).value);
  if (!url.ok) return setMessage(url.message, true);
  const budgetText = ($("stepBudget") as HTMLInputElement).value.trim();
  const stepBudget = Number(budgetText);
  if (!/^\d+$/.test(budgetText) || stepBudget > 1000) return setMessage(t("invalidBudget"), true);
  const raw = ($("overrides") as HTMLTextAreaElement).value.trim();
  let overrides: AdapterOverrides = {};
  if (raw !== "") {
    let parsed: unknown;
    try {
      parsed = JSON.parse(raw);
    } catch (e) {
      return setMessage(`overrides: ${String(e)}`, true);
    }
    const problems = validateOverrides(parsed, isValidSelector);
    if (problems.length) return setMessage(problems.join("\n"), true);
    overrides = parsed as AdapterOverrides;
  }
  const sites = { ...current.sites };
  document.querySelectorAll<HTMLInputElement>("#sites input[data-site]").forEach((box) => {
    const id = box.dataset.site as (typeof SITE_IDS)[number];
    sites[id] = box.checked;
  });
  const next: Settings = {
    bridgeUrl: url.url,
    autoSend: ($("autoSend") as HTMLInputElement).checked,
    stepBudget,
    sites,
    overrides,
    promptLang: ($("promptLang") as HTMLSelectElement).value === "zh" ? "zh" : "en",
  };
  await chrome.storage.local.set({ settings: next });
  setMessage(t("saved"));
  showStatus(await statusOf({ type: "checkNow" }));
}

/** Grok on X: an optional permission, asked for from this click (Chrome needs a user gesture). */
async function setGrokOnX(on: boolean): Promise<void> {
  const origins = optionalHosts().map((h) => `https://${h}/*`);
  const box = $("grokOnX") as HTMLInputElement;
  if (on) {
    const granted = await chrome.permissions.request({ origins });
    box.checked = granted;
    if (!granted) setMessage(t("permissionRefused"), true);
  } else {
    await chrome.permissions.remove({ origins });
    box.checked = false;
  }
}

// ---- adapter packs ----

let checkedPack: AdapterPack | null = null;

function showPackReport(lines: string[], error: boolean): void {
  const list = $("packReport");
  list.replaceChildren();
  for (const line of lines) {
    const li = document.createElement("li");
    li.textContent = line;
    if (error) li.className = "error";
    list.append(li);
  }
}

/**
 * A pack that changes how a site's turns are found is checked on an open page of that site:
 * refused when its reply selectors would also match the person's own messages there, and
 * refused when no such page is open to check it on.
 */
async function checkOnPages(pack: AdapterPack): Promise<string[]> {
  const problems: string[] = [];
  for (const site of sitesNeedingPageCheck(pack)) {
    if (site === "generic") continue;
    const fields = pack.sites[site] ?? {};
    const adapter = ADAPTERS[site];
    const tabs = await chrome.tabs.query({ url: adapter.hosts.map((h) => `https://${h}/*`) });
    let checked = false;
    for (const tab of tabs) {
      if (tab.id === undefined) continue;
      try {
        const r = (await chrome.tabs.sendMessage(tab.id, {
          type: "checkSelectors",
          site,
          assistantMessage: fields.assistantMessage ?? adapter.assistantMessage,
          userMessage: fields.userMessage ?? [],
        })) as TabReply | undefined;
        if (r?.type !== "selectorCheck") continue;
        checked = true;
        if (r.overlapping > 0) problems.push(`sites.${site}.assistantMessage also matches ${r.overlapping} of your own messages on the open ${adapter.name} page; refused`);
        break;
      } catch {
        // no content script in that tab (not loaded yet, or the site is switched off)
      }
    }
    if (!checked) problems.push(`sites.${site} changes how turns are found: open a ${adapter.name} conversation in a tab so the pack can be checked against it, then check again`);
  }
  return problems;
}

async function checkPackText(): Promise<void> {
  checkedPack = null;
  $("applyPack").hidden = true;
  const current = (await load()).overrides;
  const r = checkPack(($("pack") as HTMLTextAreaElement).value, current, isValidSelector);
  if (!r.ok) return showPackReport(r.problems, true);
  const onPage = await checkOnPages(r.pack);
  if (onPage.length > 0) return showPackReport(onPage, true);
  if (r.changes.length === 0) return showPackReport([t("packNoChanges")], false);
  showPackReport(
    [
      ...(r.pack.name ? [r.pack.name] : []),
      ...r.changes.map((c) => `${c.site}.${c.field}: ${c.before ? JSON.stringify(c.before) : "(shipped)"} → ${JSON.stringify(c.after)}`),
    ],
    false,
  );
  checkedPack = r.pack;
  $("applyPack").hidden = false;
}

async function applyCheckedPack(): Promise<void> {
  if (!checkedPack) return;
  const s = await load();
  const next: Settings = { ...s, overrides: applyPack(s.overrides, checkedPack) };
  await chrome.storage.local.set({ settings: next });
  checkedPack = null;
  $("applyPack").hidden = true;
  render(next);
  showPackReport([t("packApplied")], false);
}

async function exportCurrentPack(): Promise<void> {
  const text = exportPack((await load()).overrides);
  ($("pack") as HTMLTextAreaElement).value = text;
  const a = document.createElement("a");
  a.href = URL.createObjectURL(new Blob([text], { type: "application/json" }));
  a.download = "ground-link-adapter-pack.json";
  a.click();
  setTimeout(() => URL.revokeObjectURL(a.href), 1000);
}

document.addEventListener("DOMContentLoaded", () => {
  localise(document);
  $("exportPack").addEventListener("click", () => void exportCurrentPack());
  $("checkPack").addEventListener("click", () => void checkPackText());
  $("applyPack").addEventListener("click", () => void applyCheckedPack());
  const grokBox = $("grokOnX") as HTMLInputElement;
  void chrome.permissions.contains({ origins: optionalHosts().map((h) => `https://${h}/*`) }).then((has) => (grokBox.checked = has));
  grokBox.addEventListener("change", () => void setGrokOnX(grokBox.checked));
  // The settings stay disabled until the stored ones are shown: typed before that, an address
  // would be overwritten by the stored one, and Save would store an empty step budget.
  void load().then(
    (s) => {
      render(s);
      document.querySelectorAll<HTMLFieldSetElement>("fieldset.settings").forEach((f) => (f.disabled = false));
      ($("save") as HTMLButtonElement).disabled = false;
    },
    (e: unknown) => setMessage(`could not read the saved settings: ${String(e)} — reload this page`, true),
  );
  void statusOf({ type: "status" }).then(showStatus);
  // The worker checks the bridge on its own too (a retry after a check that met the old address,
  // the bridge coming back): whatever it found last is shown, so the state never stays stale.
  chrome.storage.onChanged.addListener((changes, area) => {
    const next = changes.connection?.newValue as ConnectionState | undefined;
    if (area === "local" && next && typeof next === "object") showStatus({ type: "status", connection: next, paused: false });
  });
  $("save").addEventListener("click", () => void save());
  $("pair").addEventListener("click", () => {
    const input = $("token") as HTMLInputElement;
    void statusOf({ type: "pair", token: input.value }).then((r) => {
      input.value = "";
      showStatus(r);
      if (r?.type === "status" && r.connection?.kind === "connected") setMessage(t("paired"));
    });
  });
  $("unpair").addEventListener("click", () => void statusOf({ type: "unpair" }).then(showStatus));
});
