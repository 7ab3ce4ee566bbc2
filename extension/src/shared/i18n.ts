/**
 * UI strings. `_locales/en` and `_locales/zh_CN` are the one source: Chrome serves them through
 * `chrome.i18n`, and `t` falls back to the bundled English where that is unavailable (unit tests).
 */

import EN from "../_locales/en/messages.json";

export type MessageKey = keyof typeof EN;

interface Entry {
  message: string;
  placeholders?: Record<string, { content: string }>;
}

export function t(key: MessageKey, ...subs: string[]): string {
  try {
    const got = globalThis.chrome?.i18n?.getMessage(key, subs);
    if (got) return got;
  } catch {
    // fall back to the bundled English
  }
  const e = EN[key] as Entry;
  let s = e.message;
  for (const [name, p] of Object.entries(e.placeholders ?? {})) {
    const n = Number(p.content.slice(1));
    s = s.replace(new RegExp(`\\$${name}\\$`, "gi"), subs[n - 1] ?? "");
  }
  return s;
}
