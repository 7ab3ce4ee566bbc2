// Grok on X (issue 14): x.com is an optional host. The content script is registered there only
// while the person has granted it, for exactly that origin, and removed when they take it back;
// on x.com the adapter acts only on /i/grok. Chrome's own permission prompt cannot be answered
// from a test (no switch accepts it in a headless browser), so the worker's side of the grant is
// driven here through the same `permissions`/`scripting` calls Chrome's events lead to.
import { describe, expect, it } from "vitest";
import { OPTIONAL_SCRIPT_ID, syncOptionalScripts, type OptionalScriptsApi } from "../src/background/optional";
import { adapterActiveAt, adapterForHost } from "../src/shared/adapters";

function fakeChrome(): OptionalScriptsApi & { granted: Set<string>; scripts: Map<string, chrome.scripting.RegisteredContentScript> } {
  const granted = new Set<string>();
  const scripts = new Map<string, chrome.scripting.RegisteredContentScript>();
  return {
    granted,
    scripts,
    permissions: { contains: async ({ origins }) => origins.every((o) => granted.has(o)) },
    scripting: {
      getRegisteredContentScripts: async ({ ids }) => ids.filter((id) => scripts.has(id)).map((id) => ({ id })),
      unregisterContentScripts: async ({ ids }) => {
        for (const id of ids) scripts.delete(id);
      },
      registerContentScripts: async (list) => {
        for (const s of list) {
          if (scripts.has(s.id)) throw new Error(`Duplicate script ID '${s.id}'`);
          scripts.set(s.id, s);
        }
      },
    },
  };
}

describe("Grok on X: optional host", () => {
  it("no grant, no script on x.com", async () => {
    const c = fakeChrome();
    expect(await syncOptionalScripts(c)).toEqual([]);
    expect(c.scripts.size).toBe(0);
  });

  it("a grant registers the content script for x.com only; taking it back removes it", async () => {
    const c = fakeChrome();
    c.granted.add("https://x.com/*");
    expect(await syncOptionalScripts(c)).toEqual(["https://x.com/*"]);
    const s = c.scripts.get(OPTIONAL_SCRIPT_ID);
    expect(s?.matches).toEqual(["https://x.com/*"]);
    expect(s?.js).toEqual(["content.js"]);
    // the worker syncs again on every start and permission event: no duplicate, no error
    await syncOptionalScripts(c);
    expect(c.scripts.size).toBe(1);
    c.granted.delete("https://x.com/*");
    expect(await syncOptionalScripts(c)).toEqual([]);
    expect(c.scripts.size).toBe(0);
  });

  it("on x.com the Grok adapter acts only on /i/grok", () => {
    const grok = adapterForHost("x.com");
    expect(grok?.id).toBe("grok");
    if (!grok) return;
    for (const p of ["/i/grok", "/i/grok/", "/i/grok?conversation=1"].map((u) => new URL(u, "https://x.com").pathname)) expect(adapterActiveAt(grok, "x.com", p)).toBe(true);
    for (const p of ["/home", "/i/grokking", "/elonmusk/status/1", "/i/bookmarks"]) expect(adapterActiveAt(grok, "x.com", p)).toBe(false);
    expect(adapterActiveAt(grok, "grok.com", "/chat/abc")).toBe(true);
  });
});
