/**
 * Provider API keys: in `chrome.storage.local` under `providerKeys`, written and read only by the
 * service worker (DESIGN §12). Never `sync`; content scripts cannot open `storage.local` (the
 * worker sets its access level to trusted contexts), and no message answers with a key — the
 * panel learns only whether one is set.
 */

import type { KV } from "../shared/store";
import type { ProviderId } from "../shared/providers";

const KEY = "providerKeys";

export async function readKey(kv: KV, provider: ProviderId): Promise<string | null> {
  const all = (await kv.get([KEY]))[KEY];
  const k = typeof all === "object" && all !== null ? (all as Record<string, unknown>)[provider] : undefined;
  return typeof k === "string" && k !== "" ? k : null;
}

export async function writeKey(kv: KV, provider: ProviderId, key: string): Promise<void> {
  const all = ((await kv.get([KEY]))[KEY] ?? {}) as Record<string, string>;
  const next = { ...all };
  if (key === "") delete next[provider];
  else next[provider] = key;
  await kv.set({ [KEY]: next });
}

export async function keysSet(kv: KV): Promise<Record<string, boolean>> {
  const all = ((await kv.get([KEY]))[KEY] ?? {}) as Record<string, unknown>;
  return Object.fromEntries(Object.entries(all).map(([p, k]) => [p, typeof k === "string" && k !== ""]));
}
