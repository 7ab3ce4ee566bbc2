/**
 * What the bridge knows of each chat site's adapter problems (issue 14). The worker keeps every
 * site's latest report and what the bridge last acknowledged, in storage (the worker can die any
 * time), so a report made while the bridge was away — not running, not paired yet, restarted —
 * reaches it once it is back: `flush` on every health check that finds the bridge sends each site
 * whose latest report differs from what the bridge says it holds (its authenticated `/health`
 * lists them), so a bridge that restarted and forgot them gets them again too.
 */

import { Mutex, type KV } from "./store";

const LATEST = "healthLatest";
const SENT = "healthSent";

/** One site's problem lines, as `POST /adapter-health` takes them. */
export interface SiteReport {
  site: string;
  problems: string[];
}

type Table = Record<string, string[]>;

function table(v: unknown): Table {
  if (typeof v !== "object" || v === null) return {};
  const out: Table = {};
  for (const [k, p] of Object.entries(v as Record<string, unknown>)) if (Array.isArray(p) && p.every((x) => typeof x === "string")) out[k] = p as string[];
  return out;
}

const same = (a: string[] | undefined, b: string[] | undefined) => JSON.stringify(a ?? null) === JSON.stringify(b ?? null);

export class HealthRelay {
  private readonly lock = new Mutex();

  /** `send` posts one report and says whether the bridge took it. */
  constructor(
    private readonly kv: KV,
    private readonly send: (r: SiteReport) => Promise<boolean>,
  ) {}

  /** A site's new report: kept as its latest, and sent now when connected and the bridge lacks it. */
  record(r: SiteReport, connected: boolean): Promise<void> {
    return this.lock.run(async () => {
      const latest = table((await this.kv.get([LATEST]))[LATEST]);
      latest[r.site] = r.problems;
      await this.kv.set({ [LATEST]: latest });
      if (connected) await this.sendMissing();
    });
  }

  /**
   * Connected: send every site's latest report the bridge lacks. `atBridge`: what the bridge's
   * `/health` says it holds now (sites without problems are absent there), which replaces what
   * we believed it had acknowledged.
   */
  flush(atBridge: SiteReport[]): Promise<void> {
    return this.lock.run(async () => {
      const held: Table = {};
      for (const r of atBridge) held[r.site] = r.problems;
      const latest = table((await this.kv.get([LATEST]))[LATEST]);
      for (const site of Object.keys(latest)) held[site] ??= [];
      await this.kv.set({ [SENT]: held });
      await this.sendMissing();
    });
  }

  private async sendMissing(): Promise<void> {
    const got = await this.kv.get([LATEST, SENT]);
    const latest = table(got[LATEST]);
    const sent = table(got[SENT]);
    for (const [site, problems] of Object.entries(latest)) {
      // an empty list is sent too when the bridge may still hold problems from before
      if (same(sent[site], problems)) continue;
      if (!(await this.send({ site, problems }))) continue;
      sent[site] = problems;
    }
    await this.kv.set({ [SENT]: sent });
  }
}
