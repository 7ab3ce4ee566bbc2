/**
 * The options page: bridge address, pairing, which sites are on, per-site selector overrides
 * (checked before saving, so a typo cannot silently switch a site off), step budget, auto-send.
 */

import { ADAPTERS, SITE_IDS, optionalHosts, validateOverrides, type AdapterOverrides } from "../shared/adapters";
import { t } from "../shared/i18n";
import type { Reply } from "../shared/protocol";
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

document.addEventListener("DOMContentLoaded", () => {
  localise(document);
  const grokBox = $("grokOnX") as HTMLInputElement;
  void chrome.permissions.contains({ origins: optionalHosts().map((h) => `https://${h}/*`) }).then((has) => (grokBox.checked = has));
  grokBox.addEventListener("change", () => void setGrokOnX(grokBox.checked));
  void load().then(render);
  void statusOf({ type: "status" }).then(showStatus);
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
