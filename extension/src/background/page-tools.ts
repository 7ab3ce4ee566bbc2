/**
 * The worker's part in page tools: it keeps each tab's latest frame reports in
 * `chrome.storage.session` (the side panel renders from there; content scripts cannot read it),
 * hands content scripts the skills for their URL, and keeps the page-tools content scripts
 * registered on the sites the person enabled from the panel (and granted in Chrome's prompt).
 */

import type { FrameReport } from "../shared/webmcp";
import { Mutex, type KV } from "../shared/store";

export const pageToolsKey = (tabId: number) => `pageTools:${tabId}`;

// Frames report at the same moment (a native toolchange fires in every frame of the page): each
// read-modify-write of a tab's entry runs alone, or one frame's report would overwrite another's.
const tabLock = new Mutex();
const SCRIPT_IDS = { main: "ground-link-webmcp-main", isolated: "ground-link-webmcp" };

export function storeFrameReport(tabId: number, frameId: number, report: Omit<FrameReport, "frameId">): Promise<void> {
  return tabLock.run(() => storeUnlocked(tabId, frameId, report));
}

async function storeUnlocked(tabId: number, frameId: number, report: Omit<FrameReport, "frameId">): Promise<void> {
  const key = pageToolsKey(tabId);
  const got = ((await chrome.storage.session.get(key))[key] ?? {}) as Record<string, FrameReport>;
  got[String(frameId)] = { ...report, frameId };
  await chrome.storage.session.set({ [key]: got });
}

export function dropFrame(tabId: number, frameId: number): Promise<void> {
  return tabLock.run(() => dropUnlocked(tabId, frameId));
}

async function dropUnlocked(tabId: number, frameId: number): Promise<void> {
  const key = pageToolsKey(tabId);
  const got = ((await chrome.storage.session.get(key))[key] ?? {}) as Record<string, FrameReport>;
  if (!(String(frameId) in got)) return;
  delete got[String(frameId)];
  await chrome.storage.session.set({ [key]: got });
}

export function dropTab(tabId: number): Promise<void> {
  return tabLock.run(() => chrome.storage.session.remove(pageToolsKey(tabId)));
}

/** `https://shop.example` → the match pattern the permission and the scripts use. */
export function originPattern(origin: string): string | null {
  try {
    const u = new URL(origin);
    if (u.protocol !== "https:" && u.protocol !== "http:") return null;
    return `${u.protocol}//${u.hostname}/*`;
  } catch {
    return null;
  }
}

/**
 * Registers the page-tools scripts for the enabled sites Chrome has granted (a site whose
 * permission was taken back in chrome://extensions drops out here). Default sites are in the
 * manifest and need nothing.
 */
export async function syncPageToolScripts(kv: KV): Promise<string[]> {
  const raw = (await kv.get(["webmcpSites"])).webmcpSites;
  const wanted = Array.isArray(raw) ? raw.filter((s): s is string => typeof s === "string") : [];
  const granted: string[] = [];
  for (const p of wanted) if (await chrome.permissions.contains({ origins: [p] })) granted.push(p);
  const ids = [SCRIPT_IDS.main, SCRIPT_IDS.isolated];
  const existing = await chrome.scripting.getRegisteredContentScripts({ ids });
  if (existing.length > 0) await chrome.scripting.unregisterContentScripts({ ids: existing.map((s) => s.id) });
  if (granted.length === 0) return granted;
  await chrome.scripting.registerContentScripts([
    { id: SCRIPT_IDS.isolated, matches: granted, js: ["webmcp.js"], runAt: "document_start", allFrames: true, persistAcrossSessions: true },
    { id: SCRIPT_IDS.main, matches: granted, js: ["webmcp-main.js"], runAt: "document_start", allFrames: true, world: "MAIN", persistAcrossSessions: true },
  ]);
  return granted;
}
