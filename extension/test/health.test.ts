// The adapter health check (issue 14) on the site fixtures: a page where everything is found
// reports nothing; each missing role gives the sentence the popup, the badge and the bridge show.
import { readdirSync, readFileSync } from "node:fs";
import { JSDOM } from "jsdom";
import { describe, expect, it } from "vitest";
import { ADAPTERS, GENERIC, type SiteAdapter, type SiteId } from "../src/shared/adapters";
import { isHealthReport, reportLines } from "../src/shared/health";
import { checkPage } from "../src/content/health";

function load(name: string): { doc: Document; adapter: SiteAdapter; path: string; sendVia: string } {
  const html = readFileSync(new URL(`./fixtures/${name}.html`, import.meta.url), "utf8");
  const meta = JSON.parse(/id="fixture-meta">(.*?)<\/script>/s.exec(html)?.[1] ?? "{}") as { adapter: string; url: string; sendVia?: string };
  const dom = new JSDOM(html, { url: meta.url });
  const u = new URL(meta.url);
  return { doc: dom.window.document, adapter: meta.adapter === "generic" ? GENERIC : ADAPTERS[meta.adapter as SiteId], path: u.pathname + u.search, sendVia: meta.sendVia ?? "button" };
}

const FIXTURES = readdirSync(new URL("./fixtures/", import.meta.url)).filter((f) => f.endsWith(".html")).map((f) => f.slice(0, -5));

describe("health check on every fixture", () => {
  it.each(FIXTURES)("%s: only what the site really lacks", (name) => {
    const { doc, adapter, path, sendVia } = load(name);
    const lines = reportLines(checkPage(doc, adapter, path));
    if (sendVia === "enter") expect(lines).toEqual([`${adapter.name}: send button not found — using Enter`]);
    else expect(lines).toEqual([]);
  });
});

describe("health check messages", () => {
  it("DeepSeek without its send control: using Enter", () => {
    const { doc, adapter, path } = load("deepseek");
    doc.querySelector("div[role=button].ds-button--primary")?.remove();
    expect(reportLines(checkPage(doc, adapter, path))).toEqual(["DeepSeek: send button not found — using Enter"]);
  });

  it("ChatGPT (rebuilt UI) whose replies no selector finds: no replies found", () => {
    const { doc, adapter, path } = load("chatgpt-transcript");
    for (const li of Array.from(doc.querySelectorAll('li[data-message-role="assistant"]'))) li.setAttribute("data-message-role", "model");
    expect(reportLines(checkPage(doc, adapter, path))).toContain("ChatGPT: no replies found on this page");
  });

  it("a conversation page with no turns at all says so; a new chat does not", () => {
    const { doc, adapter } = load("claude");
    for (const el of Array.from(doc.querySelectorAll("[data-test-render-count]"))) el.remove();
    expect(reportLines(checkPage(doc, adapter, "/chat/0b8e6f7a-1234"))).toContain("Claude.ai: no messages found on this conversation page");
    expect(reportLines(checkPage(doc, adapter, "/new"))).toEqual([]);
  });

  it("a composer found only by the generic fallback is named; none at all means results cannot be pasted", () => {
    const { doc, adapter, path } = load("deepseek");
    const ta = doc.querySelector("textarea");
    ta?.setAttribute("name", "q");
    ta?.setAttribute("placeholder", "Ask");
    expect(reportLines(checkPage(doc, adapter, path))).toContain("DeepSeek: the input box found only by the generic fallback");
    ta?.remove();
    expect(reportLines(checkPage(doc, adapter, path))[0]).toMatch(/^DeepSeek: input box not found — results cannot be pasted/);
  });

  it("while a reply streams, a send button turned stop is not reported missing", () => {
    const { doc, adapter, path } = load("chatgpt-transcript");
    const b = doc.querySelector("button[data-composer-submit]");
    b?.setAttribute("data-stop-generating", "");
    b?.setAttribute("type", "button");
    expect(reportLines(checkPage(doc, adapter, path))).toEqual([]);
  });

  it("the worker keeps only well-formed reports", () => {
    const good = checkPage(load("perplexity").doc, ADAPTERS.perplexity, "/search/x");
    expect(isHealthReport(good)).toBe(true);
    expect(isHealthReport({ ...good, problems: [{ kind: "missing", role: "everything" }] })).toBe(false);
    expect(isHealthReport({ ...good, problems: [{ kind: "exfiltrate" }] })).toBe(false);
    expect(isHealthReport({ site: "x" })).toBe(false);
    expect(reportLines({ ...good, problems: [{ kind: "noStreamingSignal" }] })).toEqual(["Perplexity: streaming signal not seen — waiting for quiet time"]);
  });
});
