// English and 简体中文 stay in step: every UI string exists in both, with the same placeholders
// (Chrome shows the raw key for a missing one, and drops a substitution it has no placeholder for).
import { describe, expect, it } from "vitest";
import EN from "../src/_locales/en/messages.json";
import ZH from "../src/_locales/zh_CN/messages.json";

type Entry = { message: string; placeholders?: Record<string, { content: string }> };

describe("locales", () => {
  it("have the same keys and placeholders, and every $NAME$ used is defined", () => {
    const en = EN as Record<string, Entry>;
    const zh = ZH as Record<string, Entry>;
    expect(Object.keys(zh).sort()).toEqual(Object.keys(en).sort());
    for (const [k, e] of Object.entries(en)) {
      const z = zh[k] as Entry;
      expect(z.placeholders ?? {}, k).toEqual(e.placeholders ?? {});
      for (const entry of [e, z]) {
        for (const m of entry.message.matchAll(/\$([A-Za-z_]+)\$/g)) expect(Object.keys(entry.placeholders ?? {}), `${k}: $${m[1]}$`).toContain((m[1] ?? "").toLowerCase());
      }
      expect(z.message.trim(), k).not.toBe("");
    }
  });
});
