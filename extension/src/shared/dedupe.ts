/**
 * Dedupe of replies, in extension storage: a reply's calls are dispatched at most once, even when
 * the site re-renders the message, the content script is injected again, or the page reloads.
 *
 * The key is the session, the reply's position among the conversation's assistant messages and a
 * hash of its text, so the same call in a later reply still runs while a re-render of the same
 * reply does not. Entries expire after `TTL_MS` and the table is capped, oldest first.
 */

import { hashText } from "./hash";
import { Mutex, type KV } from "./store";

const KEY = "dedupe";
export const TTL_MS = 14 * 24 * 3600 * 1000;
export const MAX_ENTRIES = 5000;

export function replyKey(session: string, ordinal: number, text: string): string {
  return `${session}#${ordinal}#${hashText(text)}`;
}

type Table = Record<string, number>;

export class Dedupe {
  private readonly lock = new Mutex();
  constructor(
    private readonly kv: KV,
    private readonly now: () => number = Date.now,
    private readonly maxEntries: number = MAX_ENTRIES,
  ) {}

  /** True exactly once per key: the caller that gets `true` owns the dispatch. */
  claim(key: string): Promise<boolean> {
    return this.lock.run(async () => {
      const table = await this.load();
      if (key in table) return false;
      table[key] = this.now();
      await this.kv.set({ [KEY]: prune(table, this.now(), this.maxEntries) });
      return true;
    });
  }

  /** Marks keys as seen without dispatching: replies already on the page at load. */
  markSeen(keys: string[]): Promise<void> {
    return this.lock.run(async () => {
      const table = await this.load();
      const t = this.now();
      for (const k of keys) if (!(k in table)) table[k] = t;
      await this.kv.set({ [KEY]: prune(table, t, this.maxEntries) });
    });
  }

  has(key: string): Promise<boolean> {
    return this.lock.run(async () => key in (await this.load()));
  }

  private async load(): Promise<Table> {
    const got = (await this.kv.get([KEY]))[KEY];
    return typeof got === "object" && got !== null ? prune(got as Table, this.now(), this.maxEntries) : {};
  }
}

function prune(table: Table, now: number, max: number): Table {
  let entries = Object.entries(table).filter(([, t]) => typeof t === "number" && now - t < TTL_MS);
  if (entries.length > max) {
    entries.sort((a, b) => a[1] - b[1]);
    entries = entries.slice(entries.length - max);
  }
  return Object.fromEntries(entries);
}
