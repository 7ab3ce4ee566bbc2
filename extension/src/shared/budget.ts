/**
 * The step budget (DESIGN §7): at most N automatic rounds per conversation, counted in extension
 * storage so a reload or a worker restart does not reset it. A message the person sends themselves
 * resets the count; so does "Run anyway" on a stopped card.
 */

import { Mutex, type KV } from "./store";

const KEY = "rounds";

export type RoundDecision = { ok: true; used: number } | { ok: false; used: number; budget: number };

export class Budget {
  private readonly lock = new Mutex();
  constructor(private readonly kv: KV) {}

  /** Takes one automatic round for `session` if the budget allows it. */
  take(session: string, budget: number): Promise<RoundDecision> {
    return this.lock.run(async () => {
      const table = await this.load();
      const used = table[session] ?? 0;
      if (used >= budget) return { ok: false, used, budget };
      table[session] = used + 1;
      await this.kv.set({ [KEY]: table });
      return { ok: true, used: used + 1 };
    });
  }

  reset(session: string): Promise<void> {
    return this.lock.run(async () => {
      const table = await this.load();
      if (!(session in table)) return;
      delete table[session];
      await this.kv.set({ [KEY]: table });
    });
  }

  used(session: string): Promise<number> {
    return this.lock.run(async () => (await this.load())[session] ?? 0);
  }

  private async load(): Promise<Record<string, number>> {
    const got = (await this.kv.get([KEY]))[KEY];
    return typeof got === "object" && got !== null ? { ...(got as Record<string, number>) } : {};
  }
}
