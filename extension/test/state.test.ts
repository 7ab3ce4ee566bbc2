// Dedupe, step budget, settings and results formatting: the state that decides whether a call
// runs, and the text that goes back to the model.
import { describe, expect, it } from "vitest";
import { Budget } from "../src/shared/budget";
import { Dedupe, MAX_ENTRIES, TTL_MS, replyKey } from "../src/shared/dedupe";
import { combineResults } from "../src/shared/format";
import { parseToolBlocks } from "../src/shared/parser";
import { DEFAULT_STEP_BUDGET, defaultSettings, normaliseSettings, parseBridgeUrl } from "../src/shared/settings";
import { MemoryKV } from "../src/shared/store";

describe("dedupe", () => {
  it("a reply is claimed exactly once, even by concurrent callers", async () => {
    const d = new Dedupe(new MemoryKV());
    const key = replyKey("chat.deepseek.com:abc", 3, "[calls]");
    const results = await Promise.all([d.claim(key), d.claim(key), d.claim(key)]);
    expect(results.filter(Boolean).length).toBe(1);
    expect(await d.claim(key)).toBe(false);
  });

  it("survives a new worker: the table lives in storage", async () => {
    const kv = new MemoryKV();
    const key = replyKey("s", 0, "x");
    expect(await new Dedupe(kv).claim(key)).toBe(true);
    expect(await new Dedupe(kv).claim(key)).toBe(false);
  });

  it("history marked seen never runs", async () => {
    const d = new Dedupe(new MemoryKV());
    const key = replyKey("s", 1, "y");
    await d.markSeen([key]);
    expect(await d.claim(key)).toBe(false);
  });

  it("keys differ by session, position and calls", () => {
    const keys = new Set([replyKey("a", 0, "x"), replyKey("b", 0, "x"), replyKey("a", 1, "x"), replyKey("a", 0, "z")]);
    expect(keys.size).toBe(4);
  });

  it("old entries expire and the table is capped", async () => {
    let now = 1_000_000;
    const kv = new MemoryKV();
    const cap = 40;
    const d = new Dedupe(kv, () => now, cap);
    await d.claim("old");
    now += TTL_MS + 1;
    expect(await d.claim("old")).toBe(true);
    for (let i = 0; i < cap + 10; i++) {
      now++;
      await d.markSeen([`k${i}`]);
    }
    const table = (await kv.get(["dedupe"])).dedupe as Record<string, number>;
    expect(Object.keys(table).length).toBe(cap);
    expect("k0" in table).toBe(false);
    expect(`k${cap + 9}` in table).toBe(true);
    expect(MAX_ENTRIES).toBeGreaterThanOrEqual(1000);
  });
});

describe("step budget", () => {
  it("allows N automatic rounds per conversation, then stops", async () => {
    const b = new Budget(new MemoryKV());
    const got: boolean[] = [];
    for (let i = 0; i < 4; i++) got.push((await b.take("s1", 3)).ok);
    expect(got).toEqual([true, true, true, false]);
    expect(await b.take("s2", 3)).toEqual({ ok: true, used: 1 });
  });

  it("reset (a message the person sent, or Run anyway) starts counting again", async () => {
    const b = new Budget(new MemoryKV());
    await b.take("s", 1);
    expect((await b.take("s", 1)).ok).toBe(false);
    await b.reset("s");
    expect((await b.take("s", 1)).ok).toBe(true);
  });

  it("a budget of 0 never runs automatically; the default is 25", async () => {
    expect((await new Budget(new MemoryKV()).take("s", 0)).ok).toBe(false);
    expect(DEFAULT_STEP_BUDGET).toBe(25);
    expect(defaultSettings().stepBudget).toBe(25);
  });
});

describe("settings", () => {
  it("fills defaults and drops bad values", () => {
    const s = normaliseSettings({ autoSend: "yes", stepBudget: -1, bridgeUrl: "https://evil.example", sites: { deepseek: false, nope: true } });
    expect(s.autoSend).toBe(true);
    expect(s.stepBudget).toBe(25);
    expect(s.bridgeUrl).toBe("http://127.0.0.1:18080");
    expect(s.sites.deepseek).toBe(false);
    expect(s.sites.chatgpt).toBe(true);
  });

  it("accepts only loopback bridge addresses", () => {
    const table: [string, string | null][] = [
      ["http://127.0.0.1:18080", "http://127.0.0.1:18080"],
      ["http://localhost:9000/", "http://localhost:9000"],
      ["http://[::1]:18080", "http://[::1]:18080"],
      ["https://127.0.0.1:18080", null],
      ["http://192.168.1.5:18080", null],
      ["http://127.0.0.1.evil.example:18080", null],
      ["http://127.0.0.1:18080/exec", null],
      ["not a url", null],
    ];
    for (const [input, want] of table) {
      const p = parseBridgeUrl(input);
      expect(p.ok ? p.url : null, input).toBe(want);
    }
  });
});

describe("results message", () => {
  it("joins every result of one reply, in order, in one message", () => {
    const a = '<tool_result name="list_dir" status="success">\nx\n</tool_result>';
    const b = '<tool_result name="read_file" status="denied">\n[Tool Denied] …\n</tool_result>';
    expect(combineResults([a, "", b])).toBe(`${a}\n\n${b}`);
  });

  it("a malformed block carries what the bridge needs to tell the model (kind and message)", () => {
    const [block] = parseToolBlocks('<tool>{"name":"ls"} and <tool>{"name":"write_file"}</tool>');
    if (!block || block.kind !== "error") throw new Error("expected an error block");
    expect(block.error).toBe("trailingText");
    expect(block.message).toContain("<tool>");
  });
});
