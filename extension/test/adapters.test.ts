// Every adapter against a DOM fixture modelled on its site: which turns are the assistant's,
// what text is parsed (never the user's quoted call, never the reasoning pane's), where the
// composer and send button are, when the page is streaming, and the session id from the URL.
import { readFileSync } from "node:fs";
import { JSDOM } from "jsdom";
import { describe, expect, it } from "vitest";
import { ADAPTERS, GENERIC, SITE_IDS, adapterForHost, applyOverrides, validateOverrides, type SiteAdapter } from "../src/shared/adapters";
import { parseToolCalls } from "../src/shared/parser";
import { sessionId } from "../src/shared/session";
import { assistantMessages, findComposer, findSendButton, isStreaming, messageText, userMessages, userTurnsIn } from "../src/content/dom";

interface Meta {
  url: string;
  session: string;
  assistantCount: number;
  userCount: number;
  streaming: string;
  expectCalls: { name: string; args: Record<string, unknown> }[];
}

function load(name: string): { doc: Document; meta: Meta } {
  const html = readFileSync(new URL(`./fixtures/${name}.html`, import.meta.url), "utf8");
  const meta = JSON.parse(/<script type="application\/json" id="fixture-meta">(.*?)<\/script>/s.exec(html)?.[1] ?? "{}") as Meta;
  const dom = new JSDOM(html, { url: meta.url });
  return { doc: dom.window.document, meta };
}

const cases: [string, SiteAdapter][] = [...SITE_IDS.map((id) => [id, ADAPTERS[id]] as [string, SiteAdapter]), ["generic", GENERIC]];

describe.each(cases)("adapter %s against its fixture", (name, adapter) => {
  const { doc, meta } = load(name);

  it("finds exactly the assistant turns, none of them a user turn", () => {
    const msgs = assistantMessages(doc, adapter);
    expect(msgs.length).toBe(meta.assistantCount);
    for (const m of msgs) expect(messageText(m, adapter)).not.toContain("user.txt");
    expect(userMessages(doc, adapter).length).toBe(meta.userCount);
  });

  it("parses only the answer's call: not the user's, not the reasoning pane's", () => {
    const calls = assistantMessages(doc, adapter).flatMap((m) => parseToolCalls(messageText(m, adapter)));
    expect(calls).toEqual(meta.expectCalls);
  });

  it("spots a user turn in a subtree added to the page, never an assistant turn", () => {
    const u = userMessages(doc, adapter)[0];
    const a = assistantMessages(doc, adapter)[0];
    if (!u || !a) throw new Error("fixture without turns");
    const userCopy = u.cloneNode(true) as Element;
    u.after(userCopy);
    expect(userTurnsIn(userCopy, adapter)).toEqual([userCopy]);
    const wrapper = doc.createElement("div");
    const inner = u.cloneNode(true) as Element;
    wrapper.append(inner);
    u.after(wrapper);
    expect(userTurnsIn(wrapper, adapter)).toEqual([inner]);
    const asstCopy = a.cloneNode(true) as Element;
    a.after(asstCopy);
    expect(userTurnsIn(asstCopy, adapter)).toEqual([]);
    for (const e of [userCopy, wrapper, asstCopy]) e.remove();
    expect(userTurnsIn(userCopy, adapter)).toEqual([]);
  });

  it("finds the composer and the send button", () => {
    expect(findComposer(doc, adapter)?.dataset.fixture).toBe("composer");
    expect(findSendButton(doc, adapter)?.dataset.fixture).toBe("send");
  });

  it("sees the streaming signal only while it is there", () => {
    expect(isStreaming(doc, adapter)).toBe(false);
    const holder = doc.createElement("div");
    holder.innerHTML = meta.streaming;
    doc.body.append(holder);
    expect(isStreaming(doc, adapter)).toBe(true);
    holder.remove();
    expect(isStreaming(doc, adapter)).toBe(false);
  });

  it("derives the session id from the URL", () => {
    expect(sessionId(adapter, new URL(meta.url), "x")).toBe(meta.session);
  });
});

describe("adapter selection and overrides", () => {
  it("maps every host of every site to its adapter, and nothing else", () => {
    for (const id of SITE_IDS) for (const h of ADAPTERS[id].hosts) expect(adapterForHost(h)?.id).toBe(id);
    expect(adapterForHost("evil.example")).toBeNull();
    expect(adapterForHost("chat.deepseek.com.evil.example")).toBeNull();
  });

  it("a new chat without an id gets a per-page session, never a shared one", () => {
    expect(sessionId(ADAPTERS.deepseek, new URL("https://chat.deepseek.com/"), "p1")).toBe("chat.deepseek.com:new-p1");
    expect(sessionId(ADAPTERS.deepseek, new URL("https://chat.deepseek.com/"), "p2")).not.toBe(sessionId(ADAPTERS.deepseek, new URL("https://chat.deepseek.com/"), "p1"));
  });

  it("a user override replaces the shipped selectors and still works on the page", () => {
    const { doc } = load("deepseek");
    // the site renamed its textarea: the shipped selector now misses, the override finds it
    doc.querySelector("#chat-input")?.setAttribute("id", "renamed-input");
    const shipped = ADAPTERS.deepseek;
    expect(findComposer(doc, { ...shipped, composer: ["textarea#chat-input"] })?.id).toBe("renamed-input"); // generic fallback
    const o = applyOverrides(shipped, { deepseek: { composer: ["#renamed-input"], sendButton: [] } });
    expect(o.composer).toEqual(["#renamed-input"]);
    expect(o.sendButton).toEqual(shipped.sendButton);
    expect(findComposer(doc, o)?.id).toBe("renamed-input");
  });

  it("an invalid override selector is skipped, not fatal", () => {
    const { doc } = load("chatgpt");
    const o = applyOverrides(ADAPTERS.chatgpt, { chatgpt: { assistantMessage: ["[[[", '[data-message-author-role="assistant"]'] } });
    expect(assistantMessages(doc, o).length).toBe(2);
  });

  it("validates overrides before they are saved", () => {
    const valid = (s: string) => !s.includes("[[");
    expect(validateOverrides({ deepseek: { composer: ["textarea"] } }, valid)).toEqual([]);
    const problems: [unknown, string][] = [
      [[], "JSON object"],
      [{ nosuchsite: {} }, 'unknown site "nosuchsite"'],
      [{ deepseek: { composr: ["x"] } }, '"deepseek.composr" is not a selector field'],
      [{ deepseek: { composer: "textarea" } }, "must be a list"],
      [{ deepseek: { composer: ["[[x"] } }, "not a valid CSS selector"],
    ];
    for (const [value, want] of problems) expect(validateOverrides(value, valid).join("\n")).toContain(want);
  });
});

describe("manifest", () => {
  const manifest = JSON.parse(readFileSync(new URL("../src/manifest.json", import.meta.url), "utf8")) as {
    host_permissions: string[];
    content_scripts: { matches: string[]; world?: string }[];
    key: string;
  };
  const hosts = SITE_IDS.flatMap((id) => ADAPTERS[id].hosts).map((h) => `https://${h}/*`);

  it("asks for the chat sites and the loopback bridge only", () => {
    expect([...manifest.host_permissions].sort()).toEqual([...hosts, "http://127.0.0.1/*", "http://localhost/*"].sort());
  });
  it("injects into exactly the adapters' hosts", () => {
    for (const cs of manifest.content_scripts) expect([...cs.matches].sort()).toEqual([...hosts].sort());
    expect(manifest.content_scripts.some((cs) => cs.world === "MAIN")).toBe(true);
  });
  it("fixes the extension id with its key", async () => {
    const { createHash } = await import("node:crypto");
    const digest = createHash("sha256").update(Buffer.from(manifest.key, "base64")).digest("hex").slice(0, 32);
    const id = [...digest].map((c) => String.fromCharCode("a".charCodeAt(0) + parseInt(c, 16))).join("");
    expect(id).toBe("nahlngkebpicfgggkehbcdnlkfhhejod");
  });
});
