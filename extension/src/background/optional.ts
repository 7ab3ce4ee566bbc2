/**
 * Content scripts on optional hosts (Grok on x.com, issue 14). The manifest never injects into
 * x.com: its host permission is optional, and only once the person grants it (Options, "Grok on
 * X", which asks Chrome from their click) is the content script registered there — and removed
 * again when they take it back. X changes pages without loading them, so the script is on all
 * of x.com and the adapter itself acts only on `/i/grok` (`pathsByHost`). No page-world hook: no
 * decoder exists for X.
 */

import { optionalHosts } from "../shared/adapters";

export const OPTIONAL_SCRIPT_ID = "ground-link-optional-hosts";

/** The parts of `chrome` this needs, so a test can stand in for the browser. */
export interface OptionalScriptsApi {
  permissions: { contains(p: { origins: string[] }): Promise<boolean> };
  scripting: {
    getRegisteredContentScripts(f: { ids: string[] }): Promise<{ id: string }[]>;
    unregisterContentScripts(f: { ids: string[] }): Promise<void>;
    registerContentScripts(s: chrome.scripting.RegisteredContentScript[]): Promise<void>;
  };
}

/** Registers the content script for exactly the optional hosts granted now (none: no script). */
export async function syncOptionalScripts(api: OptionalScriptsApi): Promise<string[]> {
  const granted: string[] = [];
  for (const h of optionalHosts()) {
    const origin = `https://${h}/*`;
    if (await api.permissions.contains({ origins: [origin] })) granted.push(origin);
  }
  const existing = await api.scripting.getRegisteredContentScripts({ ids: [OPTIONAL_SCRIPT_ID] });
  if (existing.length > 0) await api.scripting.unregisterContentScripts({ ids: [OPTIONAL_SCRIPT_ID] });
  if (granted.length === 0) return [];
  await api.scripting.registerContentScripts([{ id: OPTIONAL_SCRIPT_ID, matches: granted, js: ["content.js"], runAt: "document_idle", allFrames: false, persistAcrossSessions: true }]);
  return granted;
}
