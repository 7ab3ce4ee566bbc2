// Adapter packs and the "Fix this site" picker (issue 14): a pack is refused with the field that
// is wrong, shows its changes before it applies, and can never make the person's own messages
// count as replies; the picker turns clicks into selectors checked on the page, and only a
// trusted click picks.
import { readFileSync } from "node:fs";
import { JSDOM } from "jsdom";
import { describe, expect, it } from "vitest";
import { ADAPTERS, applyOverrides, type AdapterOverrides, type SiteAdapter, type SiteId } from "../src/shared/adapters";
import { applyPack, checkPack, exportPack, PACK_FORMAT, sitesNeedingPageCheck } from "../src/shared/packs";
import { assistantMessages, findComposer, findSendButton, overlapWithUserTurns, userMessages } from "../src/content/dom";
import { candidates, Picker, propose, turnAround } from "../src/content/picker";

function load(name: string): { doc: Document; adapter: SiteAdapter; win: JSDOM["window"] } {
  const html = readFileSync(new URL(`./fixtures/${name}.html`, import.meta.url), "utf8");
  const meta = JSON.parse(/id="fixture-meta">(.*?)<\/script>/s.exec(html)?.[1] ?? "{}") as { adapter: SiteId; url: string };
  const dom = new JSDOM(html, { url: meta.url });
  return { doc: dom.window.document, adapter: ADAPTERS[meta.adapter], win: dom.window };
}

const valid = (s: string): boolean => {
  try {
    new JSDOM("").window.document.querySelector(s);
    return true;
  } catch {
    return false;
  }
};

describe("adapter packs", () => {
  const current: AdapterOverrides = { deepseek: { composer: ["textarea.old"] } };

  it("exports the overrides and reads them back", () => {
    const text = exportPack(current, "my fixes");
    const r = checkPack(text, {}, valid);
    expect(r.ok).toBe(true);
    if (r.ok) {
      expect(r.pack.name).toBe("my fixes");
      expect(r.pack.sites).toEqual(current);
      expect(r.changes).toEqual([{ site: "deepseek", field: "composer", before: null, after: ["textarea.old"] }]);
    }
  });

  it("refuses an invalid pack and names the field that is wrong", () => {
    const cases: [unknown, string][] = [
      ["not json", "not JSON"],
      [{ format: "other", version: 1, sites: {} }, `"format" must be "${PACK_FORMAT}"`],
      [{ format: PACK_FORMAT, version: 2, sites: {} }, `"version" must be 1`],
      [{ format: PACK_FORMAT, version: 1, sites: [] }, `"sites" must be an object`],
      [{ format: PACK_FORMAT, version: 1, sites: {}, script: "x" }, `"script" is not a pack field`],
      [{ format: PACK_FORMAT, version: 1, sites: { nosuch: {} } }, "sites.nosuch: unknown site"],
      [{ format: PACK_FORMAT, version: 1, sites: { deepseek: { composr: ["x"] } } }, "sites.deepseek.composr is not a selector field"],
      [{ format: PACK_FORMAT, version: 1, sites: { deepseek: { composer: [] } } }, "sites.deepseek.composer must be a non-empty list"],
      [{ format: PACK_FORMAT, version: 1, sites: { deepseek: { composer: ["textarea", "[[x"] } } }, 'sites.deepseek.composer[1]: "[[x" is not a valid CSS selector'],
      [{ format: PACK_FORMAT, version: 1, sites: { deepseek: { composer: ["a".repeat(501)] } } }, "sites.deepseek.composer[0] is 501 characters"],
      [{ format: PACK_FORMAT, version: 1, sites: { deepseek: { composer: Array(21).fill("textarea") } } }, "has 21 selectors; at most 20"],
    ];
    for (const [value, want] of cases) {
      const r = checkPack(typeof value === "string" ? value : JSON.stringify(value), current, valid);
      expect(r.ok, want).toBe(false);
      if (!r.ok) expect(r.problems.join("\n")).toContain(want);
    }
  });

  it("shows what an import changes before it applies, and applies only those fields", () => {
    const text = JSON.stringify({ format: PACK_FORMAT, version: 1, sites: { deepseek: { composer: ["textarea.new"], sendButton: ["div.send"] }, claude: { composer: ["div.ed"] } } });
    const r = checkPack(text, current, valid);
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.changes).toEqual([
      { site: "deepseek", field: "composer", before: ["textarea.old"], after: ["textarea.new"] },
      { site: "deepseek", field: "sendButton", before: null, after: ["div.send"] },
      { site: "claude", field: "composer", before: null, after: ["div.ed"] },
    ]);
    expect(applyPack({ deepseek: { composer: ["textarea.old"], streaming: ["x"] } }, r.pack)).toEqual({
      deepseek: { composer: ["textarea.new"], sendButton: ["div.send"], streaming: ["x"] },
      claude: { composer: ["div.ed"] },
    });
    expect(sitesNeedingPageCheck(r.pack)).toEqual([]);
  });

  it("a pack that changes how turns are found must be checked on a page; one whose replies match the person's own messages is caught there", () => {
    const { doc, adapter } = load("deepseek");
    const evil = { format: PACK_FORMAT, version: 1, sites: { deepseek: { assistantMessage: [".ds-message"], userMessage: ["#nothing"] } } };
    const r = checkPack(JSON.stringify(evil), {}, valid);
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(sitesNeedingPageCheck(r.pack)).toEqual(["deepseek"]);
    const check = overlapWithUserTurns(doc, adapter, [".ds-message"], ["#nothing"]);
    expect(check).toEqual({ assistantMatches: 4, userTurns: 2, overlapping: 2 });
    expect(overlapWithUserTurns(doc, adapter, [".ds-message:has(.ds-assistant-message-main-content)"], []).overlapping).toBe(0);
  });

  it("even applied, an override cannot make the person's own messages count as replies", () => {
    const { doc } = load("deepseek");
    const o = applyOverrides(ADAPTERS.deepseek, { deepseek: { assistantMessage: [".ds-message"], userMessage: ["#nothing"] } });
    expect(o.userMessage).toEqual(["#nothing", ...ADAPTERS.deepseek.userMessage]);
    const found = assistantMessages(doc, o);
    expect(found.length).toBe(2);
    for (const u of userMessages(doc, ADAPTERS.deepseek)) expect(found).not.toContain(u);
  });
});

describe("Fix this site: the picker", () => {
  it("a click inside a reply becomes a selector for the whole turn that leaves out the person's messages", () => {
    for (const name of ["deepseek", "chatgpt-transcript", "claude", "qianwen"]) {
      const { doc, adapter } = load(name);
      const reply = assistantMessages(doc, adapter)[1];
      // where a person clicks: the answer's last paragraph or code block
      const inner = Array.from(reply?.querySelectorAll("p, pre") ?? []).pop() ?? reply;
      if (!inner) throw new Error(`${name}: no reply`);
      const p = propose(doc, adapter, { assistantMessage: inner });
      const sel = p.overrides.assistantMessage?.[0];
      expect(sel, `${name}: ${JSON.stringify(p.problems)}`).toBeTruthy();
      const matched = Array.from(doc.querySelectorAll(sel as string));
      expect(matched.some((m) => m === reply || m.contains(reply as Element) || (reply as Element).contains(m))).toBe(true);
      for (const u of userMessages(doc, adapter)) expect(matched.some((m) => m === u || m.contains(u) || u.contains(m)), `${name}: ${sel}`).toBe(false);
      // and the override works: the same replies are found through it
      const fixed = applyOverrides(adapter, { [adapter.id]: { assistantMessage: [sel as string] } });
      expect(assistantMessages(doc, fixed).length).toBe(assistantMessages(doc, adapter).length);
    }
  });

  it("the input box and the send button become selectors that find exactly them", () => {
    const { doc, adapter } = load("chatgpt-transcript");
    const box = findComposer(doc, adapter);
    const send = findSendButton(doc, adapter);
    if (!box || !send) throw new Error("fixture without composer or send");
    const p = propose(doc, adapter, { composer: box, sendButton: send });
    expect(doc.querySelector(p.overrides.composer?.[0] ?? "x")).toBe(box);
    expect(doc.querySelector(p.overrides.sendButton?.[0] ?? "x")).toBe(send);
    // a click on a reply is no input box, and a button inside a message is no send button
    const reply = assistantMessages(doc, adapter)[0] as Element;
    const bad = propose(doc, adapter, { composer: reply.querySelector("p") as Element, sendButton: reply.querySelector("button") as Element });
    expect(bad.overrides).toEqual({});
    expect(Object.keys(bad.problems).sort()).toEqual(["composer", "sendButton"]);
  });

  it("prefers stable attributes over generated class names", () => {
    const { doc } = load("deepseek");
    const ta = doc.querySelector("textarea") as Element;
    expect(candidates(ta)[0]).toBe('textarea[name="search"]');
    const el = doc.createElement("div");
    el.className = "a1b2c3d4 css-19xk2 ds-message";
    expect(candidates(el)).toContain("div.ds-message");
    expect(candidates(el).join(" ")).not.toContain("a1b2c3d4");
  });

  it("turnAround climbs to the turn, never to a container that holds the person's messages", () => {
    const { doc, adapter } = load("claude");
    const p = assistantMessages(doc, adapter)[1]?.querySelector("p") as Element;
    const turn = turnAround(p, doc, adapter);
    expect(turn.matches("[data-test-render-count]")).toBe(true);
  });

  it("a click a page script dispatches picks nothing (only trusted clicks count)", () => {
    const { doc, adapter, win } = load("deepseek");
    const saved: unknown[] = [];
    new Picker(doc, adapter, async (o) => void saved.push(o)).start();
    const reply = assistantMessages(doc, adapter)[0] as Element;
    const ev = new win.MouseEvent("click", { bubbles: true, cancelable: true });
    reply.dispatchEvent(ev);
    // swallowed (the page does not get the click while picking) but not taken as a pick
    expect(ev.defaultPrevented).toBe(true);
    expect(saved).toEqual([]);
    expect(doc.querySelector("ground-link-picker")).not.toBeNull();
  });
});
