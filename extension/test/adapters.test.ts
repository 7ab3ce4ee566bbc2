// Every adapter against a DOM fixture modelled on its site: which turns are the assistant's,
// what text is parsed (never the user's quoted call, never the reasoning pane's), where the
// composer and send button are, when the page is streaming, and the session id from the URL.
import { readdirSync, readFileSync } from "node:fs";
import { JSDOM } from "jsdom";
import { describe, expect, it } from "vitest";
import { ADAPTERS, GENERIC, SITE_IDS, adapterForHost, adapterForLocation, applyOverrides, optionalHosts, validateOverrides, type SiteAdapter, type SiteId } from "../src/shared/adapters";
import { parseToolCalls } from "../src/shared/parser";
import { sessionId } from "../src/shared/session";
import { assistantMessages, findComposer, findSendButton, isStreaming, locateRoles, messageText, userMessages, userTurnsIn } from "../src/content/dom";

interface Meta {
  /** The adapter the fixture is for; one fixture per UI generation of a site. */
  adapter: string;
  generation: string;
  url: string;
  session: string;
  assistantCount: number;
  userCount: number;
  /** Markup that, added to the page, is the site's "still streaming" signal… */
  streaming?: string;
  /** …or a change to an element already there (the send button turning into stop). */
  streamingToggle?: { selector: string; setAttr?: [string, string]; addClass?: string; removeClass?: string };
  /** "enter" where the site has no send button we use (Enter sends). */
  sendVia?: "button" | "enter";
  expectCalls: { name: string; args: Record<string, unknown> }[];
}

const FIXTURES = readdirSync(new URL("./fixtures/", import.meta.url)).filter((f) => f.endsWith(".html")).map((f) => f.slice(0, -5)).sort();

function load(name: string): { doc: Document; meta: Meta } {
  const html = readFileSync(new URL(`./fixtures/${name}.html`, import.meta.url), "utf8");
  const meta = JSON.parse(/<script type="application\/json" id="fixture-meta">(.*?)<\/script>/s.exec(html)?.[1] ?? "{}") as Meta;
  const dom = new JSDOM(html, { url: meta.url });
  return { doc: dom.window.document, meta };
}

function adapterOf(meta: Meta): SiteAdapter {
  if (meta.adapter === "generic") return GENERIC;
  const a = ADAPTERS[meta.adapter as SiteId];
  if (!a) throw new Error(`fixture names unknown adapter ${meta.adapter}`);
  return a;
}

/** Turns the page's streaming signal on; returns how to turn it off again. */
function startStreaming(doc: Document, meta: Meta): () => void {
  if (meta.streaming !== undefined) {
    const holder = doc.createElement("div");
    holder.innerHTML = meta.streaming;
    doc.body.append(holder);
    return () => holder.remove();
  }
  const tg = meta.streamingToggle;
  if (!tg) throw new Error("fixture without a streaming signal");
  const el = doc.querySelector(tg.selector);
  if (!el) throw new Error(`streamingToggle selector ${tg.selector} matches nothing`);
  const before = el.getAttribute("class");
  const attrBefore = tg.setAttr ? el.getAttribute(tg.setAttr[0]) : null;
  if (tg.setAttr) el.setAttribute(tg.setAttr[0], tg.setAttr[1]);
  if (tg.addClass) el.classList.add(tg.addClass);
  if (tg.removeClass) el.classList.remove(tg.removeClass);
  return () => {
    if (before === null) el.removeAttribute("class");
    else el.setAttribute("class", before);
    if (tg.setAttr) {
      if (attrBefore === null) el.removeAttribute(tg.setAttr[0]);
      else el.setAttribute(tg.setAttr[0], attrBefore);
    }
  };
}

describe.each(FIXTURES)("fixture %s", (name) => {
  const { doc, meta } = load(name);
  const adapter = adapterOf(meta);

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

  it("finds every role through the site's own selectors, not the generic fallback", () => {
    const found = locateRoles(doc, adapter);
    expect(found.assistantMessage).toBe(adapter.id === "generic" ? "generic" : "site");
    expect(found.userMessage).toBe(adapter.id === "generic" ? "generic" : "site");
    expect(found.composer).toBe(adapter.id === "generic" ? "generic" : "site");
    if ((meta.sendVia ?? "button") === "button") expect(found.sendButton).toBe(adapter.id === "generic" ? "generic" : "site");
    else expect(found.sendButton).toBeNull();
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

  it("finds the composer and the send button (or knows Enter sends)", () => {
    expect(findComposer(doc, adapter)?.dataset.fixture).toBe("composer");
    if ((meta.sendVia ?? "button") === "button") expect(findSendButton(doc, adapter)?.dataset.fixture).toBe("send");
    else expect(findSendButton(doc, adapter)).toBeNull();
  });

  it.runIf(meta.streaming !== undefined || meta.streamingToggle !== undefined)("sees the streaming signal only while it is there", () => {
    expect(isStreaming(doc, adapter)).toBe(false);
    const stop = startStreaming(doc, meta);
    expect(isStreaming(doc, adapter)).toBe(true);
    // the send button never doubles as the stop button
    const send = findSendButton(doc, adapter);
    if (send && adapter.id === "chatgpt") expect(send.hasAttribute("data-stop-generating")).toBe(false);
    stop();
    expect(isStreaming(doc, adapter)).toBe(false);
  });

  it("derives the session id from the URL", () => {
    expect(sessionId(adapter, new URL(meta.url), "x")).toBe(meta.session);
  });
});

describe("fixtures", () => {
  it("every site has at least one fixture, and every fixture says which UI generation it is", () => {
    const metas = FIXTURES.map((f) => load(f).meta);
    for (const id of SITE_IDS) expect(metas.some((m) => m.adapter === id), id).toBe(true);
    for (const m of metas) expect(m.generation, m.url).toBeTruthy();
  });

  it("ChatGPT: both UI generations have a fixture", () => {
    const gens = FIXTURES.map((f) => load(f).meta).filter((m) => m.adapter === "chatgpt");
    expect(gens.length).toBeGreaterThanOrEqual(2);
  });
});

describe("site findings of issue 14", () => {
  it("Doubao: the break button in the DOM with !hidden is not streaming", () => {
    const { doc } = load("doubao");
    expect(doc.querySelector('[data-testid="chat_input_local_break_button"]')).not.toBeNull();
    expect(isStreaming(doc, ADAPTERS.doubao)).toBe(false);
  });

  it("Claude.ai: the artifact viewer is not a reply", () => {
    const { doc } = load("claude");
    const texts = assistantMessages(doc, ADAPTERS.claude).map((m) => messageText(m, ADAPTERS.claude));
    expect(texts.join("\n")).not.toContain("artifact.txt");
  });

  it("AI Studio: a turn's own re-run button is never the send button, and new_chat is not a conversation", () => {
    const { doc } = load("aistudio");
    expect(findSendButton(doc, ADAPTERS.aistudio)?.closest("ms-chat-turn")).toBeNull();
    expect(sessionId(ADAPTERS.aistudio, new URL("https://aistudio.google.com/prompts/new_chat"), "p")).toBe("aistudio.google.com:new-p");
    expect(sessionId(ADAPTERS.aistudio, new URL("https://aistudio.google.com/prompts/new_chat?model=x"), "p")).toBe("aistudio.google.com:new-p");
  });

  it("ChatGPT: /uc/<id> is a conversation, the moment's /c/WEB:<client id> is not", () => {
    expect(sessionId(ADAPTERS.chatgpt, new URL("https://chatgpt.com/uc/69e1f0a2-83ea-7c11-9d2e-5b4c3a291807"), "p")).toBe("chatgpt.com:69e1f0a2-83ea-7c11-9d2e-5b4c3a291807");
    expect(sessionId(ADAPTERS.chatgpt, new URL("https://chatgpt.com/g/g-abc-my-gpt/c/6820a1b2-c3d4-8000-9e8f-a1b2c3d4e5f6"), "p")).toBe("chatgpt.com:6820a1b2-c3d4-8000-9e8f-a1b2c3d4e5f6");
    expect(sessionId(ADAPTERS.chatgpt, new URL("https://chatgpt.com/c/WEB:1a2b3c4d"), "p")).toBe("chatgpt.com:new-p");
  });

  it("Gemini: no selector depends on an English label", () => {
    const a = ADAPTERS.gemini;
    for (const sel of [...a.sendButton, ...a.streaming, ...a.composer]) expect(sel).not.toMatch(/aria-label/);
  });

  it("Grok on X: only /i/grok paths, and only as an optional host", () => {
    expect(adapterForLocation("x.com", "/i/grok")?.id).toBe("grok");
    expect(adapterForLocation("x.com", "/i/grok/share/abc")?.id).toBe("grok");
    expect(adapterForLocation("x.com", "/home")).toBeNull();
    expect(adapterForLocation("x.com", "/i/grokking")).toBeNull();
    expect(adapterForLocation("grok.com", "/anything")?.id).toBe("grok");
    expect(ADAPTERS.grok.hosts).not.toContain("x.com");
    expect(optionalHosts()).toEqual(["x.com"]);
  });

  it("new hosts: www.kimi.ai is Kimi; qianwen.com has its own adapter", () => {
    expect(adapterForHost("www.kimi.ai")?.id).toBe("kimi");
    expect(adapterForHost("www.qianwen.com")?.id).toBe("qianwen");
    expect(adapterForHost("qianwen.com")?.id).toBe("qianwen");
    expect(adapterForHost("chat.qwen.ai")?.id).toBe("qwen");
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
    const { doc } = load("deepseek-legacy");
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
    optional_host_permissions: string[];
    permissions: string[];
    content_scripts: { matches: string[]; js: string[]; world?: string }[];
    key: string;
  };
  const hosts = SITE_IDS.flatMap((id) => ADAPTERS[id].hosts).map((h) => `https://${h}/*`);

  it("asks for the chat sites and the loopback bridge only", () => {
    expect([...manifest.host_permissions].sort()).toEqual([...hosts, "http://127.0.0.1/*", "http://localhost/*"].sort());
  });
  it("injects into exactly the adapters' hosts; x.com is optional, never injected by the manifest", () => {
    const chat = manifest.content_scripts.filter((cs) => !cs.js.some((f: string) => f.startsWith("webmcp")));
    expect(chat.length).toBe(2);
    for (const cs of chat) expect([...cs.matches].sort()).toEqual([...hosts].sort());
    // page tools (issue 13): the chat sites plus local development origins (any port), nothing else
    const pageTools = manifest.content_scripts.filter((cs) => cs.js.some((f: string) => f.startsWith("webmcp")));
    expect(pageTools.map((cs) => cs.js[0]).sort()).toEqual(["webmcp-main.js", "webmcp.js"]);
    for (const cs of pageTools) expect([...cs.matches].sort()).toEqual([...hosts, "http://127.0.0.1/*", "http://localhost/*"].sort());
    // any other site only when the person grants it from the side panel: optional, never at install
    expect(manifest.optional_host_permissions).toEqual(["https://x.com/*", "https://*/*", "http://*/*"]);
    // `scripting` only registers the content script on x.com once the person granted it
    // `sidePanel`: the page-tools panel; `nativeMessaging`: the link to `ground-link native-host`
    // (pairing without a pasted token)
    expect(manifest.permissions).toEqual(["storage", "alarms", "scripting", "sidePanel", "nativeMessaging"]);
    expect(manifest.host_permissions).not.toContain("https://x.com/*");
    expect(manifest.host_permissions.some((h: string) => h.includes("*://") || h.startsWith("https://*") || h === "<all_urls>")).toBe(false);
    expect(manifest.content_scripts.some((cs) => cs.world === "MAIN")).toBe(true);
  });
  it("fixes the extension id with its key", async () => {
    const { createHash } = await import("node:crypto");
    const digest = createHash("sha256").update(Buffer.from(manifest.key, "base64")).digest("hex").slice(0, 32);
    const id = [...digest].map((c) => String.fromCharCode("a".charCodeAt(0) + parseInt(c, 16))).join("");
    expect(id).toBe("nahlngkebpicfgggkehbcdnlkfhhejod");
  });
});
