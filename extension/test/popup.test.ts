// @vitest-environment jsdom
// The popup's "This page" list (issue 14): the active chat tab's adapter problems as the worker
// keeps them, one line each, a single "found" line when the check found nothing wrong, and no
// section at all on a tab without a report.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { HealthReport } from "../src/shared/health";

const HTML = readFileSync(join(process.cwd(), "src", "popup", "popup.html"), "utf8");

async function openPopup(report: HealthReport | null, stored: Record<string, unknown> = {}, grants = { all: false, answer: false }): Promise<{ asked: unknown[] }> {
  const asked: unknown[] = [];
  vi.stubGlobal("chrome", {
    i18n: { getMessage: () => "", getUILanguage: () => "en" },
    storage: {
      local: {
        get: async (keys: string[]) => Object.fromEntries(keys.filter((k) => k in stored).map((k) => [k, stored[k]])),
        set: async (items: Record<string, unknown>) => void Object.assign(stored, items),
      },
      onChanged: { addListener: () => undefined },
    },
    permissions: {
      contains: async () => grants.all,
      request: async (p: unknown) => {
        asked.push({ permissionsRequest: p });
        grants.all = grants.answer;
        return grants.answer;
      },
    },
    tabs: { query: async () => [{ id: 42 }] },
    runtime: {
      sendMessage: async (m: { type: string }) => {
        asked.push(m);
        if (m.type === "tabHealth") return { type: "health", report };
        if (m.type === "status") return { type: "status", connection: null, paused: false };
        return { type: "ok" };
      },
    },
  });
  document.documentElement.innerHTML = /<html>([\s\S]*)<\/html>/.exec(HTML)?.[1] ?? "";
  vi.resetModules();
  await import("../src/popup/index");
  document.dispatchEvent(new Event("DOMContentLoaded"));
  await new Promise((r) => setTimeout(r, 20));
  return { asked };
}

const lines = () => Array.from(document.querySelectorAll("#healthLines li")).map((li) => [li.textContent, li.className]);

afterEach(() => vi.unstubAllGlobals());

describe("popup: the active tab's adapter health", () => {
  it("lists each problem of the tab's site, as a warning", async () => {
    const { asked } = await openPopup({
      site: "deepseek",
      siteName: "DeepSeek",
      checkedAt: 1,
      problems: [{ kind: "missing", role: "sendButton" }, { kind: "noStreamingSignal" }],
    });
    expect(asked).toContainEqual({ type: "tabHealth", tabId: 42 });
    expect((document.getElementById("siteHealth") as HTMLElement).hidden).toBe(false);
    expect(lines()).toEqual([
      ["DeepSeek: send button not found — using Enter", "warn"],
      ["DeepSeek: streaming signal not seen — waiting for quiet time", "warn"],
    ]);
  });

  it("says the roles were found when nothing is wrong", async () => {
    await openPopup({ site: "chatgpt", siteName: "ChatGPT", checkedAt: 1, problems: [] });
    expect(lines()).toEqual([["ChatGPT: replies, input box and send button found", ""]]);
  });

  it("shows no section on a tab without a report", async () => {
    await openPopup(null);
    expect((document.getElementById("siteHealth") as HTMLElement).hidden).toBe(true);
    expect(lines()).toEqual([]);
  });
});

describe("popup: the native host", () => {
  const shown = (id: string) => !(document.getElementById(id) as HTMLElement).hidden;

  it("says the host is missing and gives the command that installs it", async () => {
    await openPopup(null, {
      native: { state: { kind: "missing", detail: "not installed", retryInMs: 1000 } },
    });
    expect(shown("native")).toBe(true);
    expect(shown("nativeMissing")).toBe(true);
    expect(document.getElementById("nativeCommand")?.textContent).toBe("ground-link install-native-host");
  });

  it("shows why pairing through ground-link failed", async () => {
    await openPopup(null, {
      native: { state: { kind: "connected", since: 1 }, pairError: "pairing refused: the person refused to pair this extension" },
    });
    expect(shown("native")).toBe(true);
    expect(shown("nativeMissing")).toBe(false);
    expect(document.getElementById("nativeDetail")?.textContent).toContain("pairing refused");
  });

  it("shows nothing while the host is connected and fine", async () => {
    await openPopup(null, { native: { state: { kind: "connected", since: 1 } } });
    expect(shown("native")).toBe(false);
  });
});

describe("popup: the browser-tools switch", () => {
  const box = () => document.getElementById("browserTools") as HTMLInputElement;
  const note = () => document.getElementById("browserToolsNote")?.textContent ?? "";
  const flip = async () => {
    box().click();
    await new Promise((r) => setTimeout(r, 20));
  };

  it("is off by default; turning it on asks Chrome for all sites from the click and stores the switch", async () => {
    const stored: Record<string, unknown> = {};
    const { asked } = await openPopup(null, stored, { all: false, answer: true });
    expect(box().checked).toBe(false);
    expect(note()).toBe("");
    await flip();
    expect(asked).toContainEqual({ permissionsRequest: { origins: ["https://*/*", "http://*/*"] } });
    expect(stored.browserTools).toBe(true);
    expect(note()).toMatch(/^On: AI clients/);
    await flip();
    expect(stored.browserTools).toBe(false);
    expect(note()).toBe("");
  });

  it("declined: still on for the sites already granted, and the popup says so", async () => {
    const stored: Record<string, unknown> = {};
    await openPopup(null, stored, { all: false, answer: false });
    await flip();
    expect(stored.browserTools).toBe(true);
    expect(box().checked).toBe(true);
    expect(note()).toMatch(/Chrome did not grant access to all sites: browser tools work only on sites ground-link can already reach/);
  });
});
