// Adapter health reports and the bridge (issue 14): a report made while the bridge is away is
// kept and sent when it is back; a bridge that restarted and forgot the reports gets them again;
// nothing is sent twice while the bridge holds it.
import { describe, expect, it } from "vitest";
import { HealthRelay, type SiteReport } from "../src/shared/healthrelay";
import { MemoryKV } from "../src/shared/store";

function bridge() {
  const held = new Map<string, string[]>();
  const posts: SiteReport[] = [];
  let up = true;
  return {
    held,
    posts,
    setUp(v: boolean) {
      up = v;
    },
    /** What `/health` lists: sites with problems. */
    health: (): SiteReport[] => [...held].map(([site, problems]) => ({ site, problems })),
    send: async (r: SiteReport) => {
      if (!up) return false;
      posts.push(r);
      if (r.problems.length === 0) held.delete(r.site);
      else held.set(r.site, r.problems);
      return true;
    },
  };
}

const SEND = "DeepSeek: send button not found — using Enter";

describe("health relay", () => {
  it("keeps a report made while the bridge is away and sends it on reconnection", async () => {
    const b = bridge();
    const relay = new HealthRelay(new MemoryKV(), b.send);
    await relay.record({ site: "deepseek", problems: [SEND] }, false);
    expect(b.posts).toEqual([]);
    await relay.flush(b.health());
    expect(b.held.get("deepseek")).toEqual([SEND]);
    // still connected, same report: not sent again
    await relay.flush(b.health());
    await relay.record({ site: "deepseek", problems: [SEND] }, true);
    expect(b.posts).toHaveLength(1);
  });

  it("a send that fails (the bridge went away meanwhile) is tried again at the next flush", async () => {
    const b = bridge();
    const relay = new HealthRelay(new MemoryKV(), b.send);
    b.setUp(false);
    await relay.record({ site: "deepseek", problems: [SEND] }, true);
    expect(b.held.size).toBe(0);
    b.setUp(true);
    await relay.flush(b.health());
    expect(b.held.get("deepseek")).toEqual([SEND]);
  });

  it("a bridge that restarted and forgot the reports gets them again; a site that is fine again is cleared", async () => {
    const b = bridge();
    const kv = new MemoryKV();
    const relay = new HealthRelay(kv, b.send);
    await relay.record({ site: "deepseek", problems: [SEND] }, true);
    await relay.record({ site: "chatgpt", problems: ["ChatGPT: no replies found on this page"] }, true);
    expect(b.posts).toHaveLength(2);
    b.held.clear(); // restarted
    // a new worker (the old one was killed) with the same storage
    const again = new HealthRelay(kv, b.send);
    await again.flush(b.health());
    expect([...b.held.keys()].sort()).toEqual(["chatgpt", "deepseek"]);
    await again.record({ site: "chatgpt", problems: [] }, false);
    await again.flush(b.health());
    expect([...b.held.keys()]).toEqual(["deepseek"]);
    expect(b.posts.at(-1)).toEqual({ site: "chatgpt", problems: [] });
  });
});
