/**
 * Adapter packs (issue 14): a person's selector overrides as a small JSON file they can export
 * and someone else can import. An import is checked field by field (an invalid pack is refused
 * with the field that is wrong), shown as a list of changes before it applies, and merged into
 * the overrides per site and field. Nothing here touches the DOM: CSS validity is injected.
 */

import { SELECTOR_FIELDS, SITE_IDS, type AdapterId, type AdapterOverrides, type SelectorField } from "./adapters";

export const PACK_FORMAT = "ground-link-adapter-pack";
export const PACK_VERSION = 1;
/** Enough for any real site; a pack is a handful of selectors, not a place to hide data. */
export const MAX_SELECTORS_PER_FIELD = 20;
export const MAX_SELECTOR_CHARS = 500;

export interface AdapterPack {
  format: typeof PACK_FORMAT;
  version: typeof PACK_VERSION;
  /** Who made it and for what, shown before an import applies. */
  name?: string;
  sites: AdapterOverrides;
}

export interface PackChange {
  site: AdapterId;
  field: SelectorField;
  before: string[] | null;
  after: string[];
}

export type PackCheck = { ok: true; pack: AdapterPack; changes: PackChange[] } | { ok: false; problems: string[] };

export function exportPack(overrides: AdapterOverrides, name?: string): string {
  const pack: AdapterPack = { format: PACK_FORMAT, version: PACK_VERSION, ...(name ? { name } : {}), sites: overrides };
  return JSON.stringify(pack, null, 2);
}

/**
 * Checks a pack's text against the current overrides: every problem names its field
 * (`sites.deepseek.composer[1]`); a valid pack comes with the changes it would make.
 */
export function checkPack(text: string, current: AdapterOverrides, isValidSelector: (s: string) => boolean): PackCheck {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (e) {
    return { ok: false, problems: [`the pack is not JSON: ${e instanceof Error ? e.message : String(e)}`] };
  }
  const problems: string[] = [];
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) return { ok: false, problems: ["the pack must be a JSON object"] };
  const r = raw as Record<string, unknown>;
  if (r.format !== PACK_FORMAT) problems.push(`"format" must be "${PACK_FORMAT}", not ${JSON.stringify(r.format ?? null)}`);
  if (r.version !== PACK_VERSION) problems.push(`"version" must be ${PACK_VERSION}, not ${JSON.stringify(r.version ?? null)}`);
  if (r.name !== undefined && (typeof r.name !== "string" || r.name.length > 100)) problems.push(`"name" must be a text of at most 100 characters`);
  for (const k of Object.keys(r)) if (!["format", "version", "name", "sites"].includes(k)) problems.push(`"${k}" is not a pack field; use format, version, name, sites`);
  const sites = r.sites;
  if (typeof sites !== "object" || sites === null || Array.isArray(sites)) {
    problems.push(`"sites" must be an object keyed by site id, e.g. {"deepseek": {"composer": ["textarea"]}}`);
    return { ok: false, problems };
  }
  const changes: PackChange[] = [];
  for (const [site, fields] of Object.entries(sites as Record<string, unknown>)) {
    const at = `sites.${site}`;
    if (site !== "generic" && !(SITE_IDS as readonly string[]).includes(site)) {
      problems.push(`${at}: unknown site; use one of ${[...SITE_IDS, "generic"].join(", ")}`);
      continue;
    }
    if (typeof fields !== "object" || fields === null || Array.isArray(fields)) {
      problems.push(`${at} must map field names to lists of selectors`);
      continue;
    }
    for (const [field, list] of Object.entries(fields as Record<string, unknown>)) {
      const fat = `${at}.${field}`;
      if (!(SELECTOR_FIELDS as readonly string[]).includes(field)) {
        problems.push(`${fat} is not a selector field; use one of ${SELECTOR_FIELDS.join(", ")}`);
        continue;
      }
      if (!Array.isArray(list) || list.length === 0) {
        problems.push(`${fat} must be a non-empty list of selector strings`);
        continue;
      }
      if (list.length > MAX_SELECTORS_PER_FIELD) problems.push(`${fat} has ${list.length} selectors; at most ${MAX_SELECTORS_PER_FIELD}`);
      list.forEach((s: unknown, i: number) => {
        if (typeof s !== "string" || s.trim() === "") problems.push(`${fat}[${i}] must be a non-empty selector string`);
        else if (s.length > MAX_SELECTOR_CHARS) problems.push(`${fat}[${i}] is ${s.length} characters; at most ${MAX_SELECTOR_CHARS}`);
        else if (!isValidSelector(s)) problems.push(`${fat}[${i}]: ${JSON.stringify(s)} is not a valid CSS selector`);
      });
      const before = current[site as AdapterId]?.[field as SelectorField] ?? null;
      const after = list as string[];
      if (JSON.stringify(before) !== JSON.stringify(after)) changes.push({ site: site as AdapterId, field: field as SelectorField, before, after });
    }
  }
  if (problems.length > 0) return { ok: false, problems };
  return { ok: true, pack: r as unknown as AdapterPack, changes };
}

/** The overrides after an import: the pack's fields replace the same fields, others stay. */
export function applyPack(current: AdapterOverrides, pack: AdapterPack): AdapterOverrides {
  const out: AdapterOverrides = JSON.parse(JSON.stringify(current)) as AdapterOverrides;
  for (const [site, fields] of Object.entries(pack.sites) as [AdapterId, Partial<Record<SelectorField, string[]>>][]) {
    out[site] = { ...(out[site] ?? {}), ...fields };
  }
  return out;
}

/** The sites whose turn selectors a pack changes: those must be checked against a live page. */
export function sitesNeedingPageCheck(pack: AdapterPack): AdapterId[] {
  return (Object.entries(pack.sites) as [AdapterId, Partial<Record<SelectorField, string[]>>][])
    .filter(([, f]) => f.assistantMessage !== undefined || f.userMessage !== undefined || f.exclude !== undefined)
    .map(([site]) => site);
}
