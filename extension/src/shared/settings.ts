/**
 * User settings (options page) with their defaults, and the one function that turns whatever is
 * in storage into a well-formed `Settings` — a missing or mangled value falls back to its default
 * rather than breaking the extension.
 */

import { SITE_IDS, type AdapterOverrides, type SiteId } from "./adapters";
import { DEFAULT_PORT } from "./gen/bridge";

export interface Settings {
  /** Where the bridge listens; only loopback addresses are accepted. */
  bridgeUrl: string;
  /** Send the results message automatically after pasting it. */
  autoSend: boolean;
  /** Automatic rounds per conversation before the extension stops and asks. */
  stepBudget: number;
  /** Sites the extension acts on. */
  sites: Record<SiteId, boolean>;
  /** Selector lists replacing the shipped ones, per site. */
  overrides: AdapterOverrides;
  /** Instruction language for "Insert instructions". */
  promptLang: "en" | "zh";
}

export const DEFAULT_BRIDGE_URL = `http://127.0.0.1:${DEFAULT_PORT}`;
export const DEFAULT_STEP_BUDGET = 25;

export function defaultSettings(): Settings {
  return {
    bridgeUrl: DEFAULT_BRIDGE_URL,
    autoSend: true,
    stepBudget: DEFAULT_STEP_BUDGET,
    sites: Object.fromEntries(SITE_IDS.map((id) => [id, true])) as Record<SiteId, boolean>,
    overrides: {},
    promptLang: "en",
  };
}

/**
 * A loopback bridge URL (`http://127.0.0.1:P`, `http://localhost:P`, `http://[::1]:P`) normalised to
 * origin form, or an error saying what to enter instead. Anything else is refused: the token must
 * never be sent off this machine.
 */
export function parseBridgeUrl(input: string): { ok: true; url: string } | { ok: false; message: string } {
  let u: URL;
  try {
    u = new URL(input.trim());
  } catch {
    return { ok: false, message: `"${input}" is not a URL; enter e.g. ${DEFAULT_BRIDGE_URL}` };
  }
  if (u.protocol !== "http:") return { ok: false, message: `the bridge speaks plain http on loopback; use http://, not ${u.protocol}//` };
  if (!["127.0.0.1", "localhost", "[::1]"].includes(u.hostname)) {
    return { ok: false, message: `"${u.hostname}" is not a loopback address; the bridge only listens on 127.0.0.1 (or localhost)` };
  }
  if (u.pathname !== "/" || u.search || u.hash || u.username || u.password) {
    return { ok: false, message: `enter only scheme, host and port, e.g. ${DEFAULT_BRIDGE_URL}` };
  }
  return { ok: true, url: u.origin };
}

export function normaliseSettings(raw: unknown): Settings {
  const d = defaultSettings();
  if (typeof raw !== "object" || raw === null) return d;
  const r = raw as Record<string, unknown>;
  const out: Settings = { ...d };
  if (typeof r.bridgeUrl === "string") {
    const p = parseBridgeUrl(r.bridgeUrl);
    if (p.ok) out.bridgeUrl = p.url;
  }
  if (typeof r.autoSend === "boolean") out.autoSend = r.autoSend;
  if (typeof r.stepBudget === "number" && Number.isInteger(r.stepBudget) && r.stepBudget >= 0 && r.stepBudget <= 1000) {
    out.stepBudget = r.stepBudget;
  }
  if (typeof r.sites === "object" && r.sites !== null) {
    const s = r.sites as Record<string, unknown>;
    out.sites = { ...d.sites };
    for (const id of SITE_IDS) if (typeof s[id] === "boolean") out.sites[id] = s[id] as boolean;
  }
  if (typeof r.overrides === "object" && r.overrides !== null && !Array.isArray(r.overrides)) {
    out.overrides = r.overrides as AdapterOverrides;
  }
  if (r.promptLang === "zh" || r.promptLang === "en") out.promptLang = r.promptLang;
  return out;
}
