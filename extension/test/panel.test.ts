// @vitest-environment jsdom
// The side panel's pure parts: where page tools are on by default (Chrome match patterns without
// a port match every port), the call form built from a page's schema, and strict input parsing.
import { describe, expect, it } from "vitest";
import { matchesPattern, sitePattern } from "../src/panel/coverage";
import { buildForm, parseInput } from "../src/panel/schema-form";
import { appendLog, MAX_ENTRIES, MAX_LOGGED_RESULT, readLog } from "../src/shared/oplog";
import { MemoryKV } from "../src/shared/store";

describe("coverage", () => {
  it("a pattern without a port matches every port, and nothing else", () => {
    expect(matchesPattern("http://127.0.0.1/*", "http://127.0.0.1:5173/app?x=1")).toBe(true);
    expect(matchesPattern("http://localhost/*", "http://localhost/")).toBe(true);
    expect(matchesPattern("http://127.0.0.1/*", "https://127.0.0.1/")).toBe(false);
    expect(matchesPattern("http://127.0.0.1/*", "http://127.0.0.1.evil.example/")).toBe(false);
    expect(matchesPattern("https://chat.deepseek.com/*", "https://chat.deepseek.com/a/chat")).toBe(true);
  });
  it("asks for one origin's host, never more", () => {
    expect(sitePattern("https://shop.example:8443/cart?id=1")).toBe("https://shop.example/*");
    expect(sitePattern("file:///etc/passwd")).toBeNull();
    expect(sitePattern("chrome://settings")).toBeNull();
  });
});

describe("the call form", () => {
  it("draws the schema's parameters as text and writes the JSON that is sent", () => {
    const form = document.createElement("form");
    let last: Record<string, unknown> = {};
    buildForm(form, { type: "object", properties: { q: { type: "string", description: "<b>query</b>" }, n: { type: "integer" }, kind: { enum: ["a", "b"] }, exact: { type: "boolean" } }, required: ["q"] }, (v) => (last = v));
    expect(form.querySelector("b")).toBeNull();
    expect(form.textContent).toContain("q * — <b>query</b>");
    (form.querySelector('[data-param="q"]') as HTMLInputElement).value = "tea";
    (form.querySelector('[data-param="n"]') as HTMLInputElement).value = "3";
    (form.querySelector('[data-param="kind"]') as HTMLSelectElement).value = "b";
    (form.querySelector('[data-param="exact"]') as HTMLInputElement).checked = true;
    form.dispatchEvent(new Event("change"));
    expect(last).toEqual({ q: "tea", n: 3, kind: "b", exact: true });
  });
  it("input must be a JSON object", () => {
    expect(parseInput("")).toEqual({ ok: true, value: {} });
    expect(parseInput("[1]")).toMatchObject({ ok: false });
    expect(parseInput("{bad")).toMatchObject({ ok: false });
  });
});

describe("the operation log", () => {
  it("keeps the newest entries and cuts long results", async () => {
    const kv = new MemoryKV();
    for (let i = 0; i < MAX_ENTRIES + 5; i++) {
      await appendLog(kv, { at: i, by: "hand", tabId: 1, frameId: 0, origin: "http://127.0.0.1:1", tool: "t", source: "polyfill", input: {}, outcome: { ok: true, result: "r".repeat(i === MAX_ENTRIES + 4 ? 10_000 : 1), truncated: false, bytes: 1, ms: 1 } });
    }
    const log = await readLog(kv);
    expect(log.length).toBe(MAX_ENTRIES);
    expect(log[0]?.at).toBe(5);
    const last = log.at(-1);
    expect(last?.outcome.ok && last.outcome.result?.length).toBe(MAX_LOGGED_RESULT + 1);
  });
});
