import { afterEach, describe, expect, it } from "vitest";
import { TEXTS, format, language, locale, setLanguage, t, type Key } from "./i18n";

const keys = Object.keys(TEXTS.en) as Key[];
const names = (s: string) => [...s.matchAll(/\{(\w+)\}/g)].map((m) => m[1]).sort();

describe("the text tables", () => {
  afterEach(() => setLanguage("en"));

  it("zh uses the same {names} as en in every text", () => {
    expect(keys.filter((k) => JSON.stringify(names(TEXTS.en[k])) !== JSON.stringify(names(TEXTS.zh[k])))).toEqual([]);
  });

  it("zh translates every text but the language names", () => {
    expect(keys.filter((k) => TEXTS.zh[k] === TEXTS.en[k])).toEqual(["langEn", "langZh"]);
  });

  it.each([
    ["en", "diffCut", { n: 3 }, "3 more lines not shown"],
    ["zh", "diffCut", { n: 3 }, "还有 3 行未显示"],
    ["en", "auditCount", { shown: 1, matched: 2, dir: "/a/{dir}" }, "1 of 2 matching entries, newest first (/a/{dir})"],
    ["zh", "decisionHead", { verdict: "DENY", risk: "safe", reason: "r" }, "DENY（风险 safe）：r"],
  ] as const)("%s %s", (lang, key, vars, want) => {
    setLanguage(lang);
    // A union of keys has no single set of names; each call site is checked on its own.
    const untyped = t as (k: Key, v: Record<string, string | number>) => string;
    expect(untyped(key, vars)).toBe(want);
  });

  it("switches language, page language and locale together", () => {
    setLanguage("zh");
    expect([language(), document.documentElement.lang, locale(), t("save")]).toEqual(["zh", "zh-CN", "zh-CN", "保存"]);
    setLanguage("en");
    expect([language(), document.documentElement.lang, locale(), t("save")]).toEqual(["en", "en", undefined, "Save"]);
  });

  it("leaves a {name} without a value visible, and values are not read as names", () => {
    expect(format("{a} and {b}", { a: "{b}" })).toBe("{b} and {b}");
  });

  it("checks the values at compile time", () => {
    // @ts-expect-error: diffCut needs {n}
    expect(t("diffCut")).toBe("{n} more lines not shown");
    // @ts-expect-error: save takes no values
    expect(t("save", { n: 1 })).toBe("Save");
    // @ts-expect-error: queued has {n}, not {count}
    expect(t("queued", { count: 1 })).toBe("+{n} more waiting");
    // @ts-expect-error: no such key
    expect(() => t("nope")).toThrow();
  });
});
