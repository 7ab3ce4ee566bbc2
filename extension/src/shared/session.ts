/**
 * Session ids (DESIGN §7): site host + the conversation id from the URL, so "allow for this
 * conversation" ends with the chat. A page with no conversation id yet (a fresh chat) gets a
 * one-off id for this page load, never a shared "new chat" id that would carry grants across chats.
 */

import type { SiteAdapter } from "./adapters";

/** The conversation id in `pathAndSearch`, or `null`. */
export function conversationId(adapter: SiteAdapter, pathAndSearch: string): string | null {
  for (const source of adapter.conversation) {
    let re: RegExp;
    try {
      re = new RegExp(source);
    } catch {
      continue;
    }
    const m = re.exec(pathAndSearch);
    if (m?.[1]) return m[1];
  }
  return null;
}

/**
 * `host:conversation`, e.g. `chat.deepseek.com:8f0c…`; `host:new-<fallback>` while the URL names
 * no conversation (`fallback` is random per page load).
 */
export function sessionId(adapter: SiteAdapter, url: URL, fallback: string): string {
  const id = conversationId(adapter, url.pathname + url.search);
  return `${url.host}:${id ?? `new-${fallback}`}`;
}
