/**
 * Local replicas of chat sites for the end-to-end tests (issue 14), served at the real host
 * names through --host-resolver-rules so the shipped manifest and adapters are what run. Each
 * replica has the structure of one UI generation as the fixtures record it (test/fixtures, with
 * their sources in extension/README.md): ChatGPT's ProseMirror UI, ChatGPT's rebuilt transcript
 * UI, and Claude.ai (with an artifact viewer that carries the reply font class).
 *
 * The page's own script behaves like the site: it follows its composer through input and paste
 * events (not the DOM property), sends on its button or Enter, changes the URL on the first
 * message, shows the site's streaming signal while it writes the reply into the DOM chunk by
 * chunk from `POST /replica/reply`, and takes it away when the reply is complete.
 */

export type ReplicaKind = "chatgpt-1" | "chatgpt-2" | "claude";

export const REPLICA_HOSTS: Record<ReplicaKind, string> = {
  "chatgpt-1": "chatgpt.com",
  "chatgpt-2": "chatgpt.com",
  claude: "claude.ai",
};

/** Where a person types, and what they click to send, in each replica. */
export const REPLICA_UI: Record<ReplicaKind, { composer: string; send: string }> = {
  "chatgpt-1": { composer: "#prompt-textarea", send: 'button[data-testid="send-button"]:not([disabled])' },
  "chatgpt-2": { composer: "textarea#mobile-composer-prompt", send: 'button[data-composer-submit][aria-disabled="false"]' },
  claude: { composer: 'div.ProseMirror[contenteditable="true"]', send: 'button[aria-label="Send message"]:not([disabled])' },
};

const BODY: Record<ReplicaKind, string> = {
  "chatgpt-1": `<main><div id="thread" class="flex flex-col text-sm"></div>
<form data-type="unified-composer" onsubmit="return false"><div id="prompt-textarea" class="ProseMirror" contenteditable="true" role="textbox"><p><br></p></div>
<span id="sendSlot"><button data-testid="send-button" id="composer-submit-button" aria-label="Send prompt" type="button" disabled>Send</button></span></form></main>`,
  "chatgpt-2": `<section data-web-mobile-conversation><div data-mobile-thread><div data-swipable-detail-body>
<ol id="thread" aria-label="Conversation" data-conversation-transcript></ol></div></div></section>
<form data-mobile-composer onsubmit="return false"><div data-composer-dock><textarea id="mobile-composer-prompt" name="prompt" data-mobile-composer-prompt aria-label="Chat with ChatGPT"></textarea>
<button data-composer-submit type="submit" aria-label="Send message" data-send-label="Send message" data-stop-label="Stop generating" aria-disabled="true" data-visually-disabled>↑</button></div></form>`,
  claude: `<div class="flex-1 flex flex-col"><div id="thread"></div>
<fieldset><div class="ProseMirror break-words" contenteditable="true" translate="no"><p><br></p></div>
<span id="sendSlot"><button aria-label="Send message" type="button" disabled>Send</button></span></fieldset></div>
<aside id="artifact-panel" class="artifact-panel" hidden><div class="font-claude-response"></div></aside>`,
};

export function replicaHtml(kind: ReplicaKind): string {
  return `<!doctype html><html><head><meta charset="utf-8"><title>${kind} (replica)</title>
<style>body{font:14px sans-serif;margin:0} #thread{padding:10px;max-width:800px;min-height:300px}
[contenteditable]{border:1px solid #888;min-height:40px;padding:4px} textarea{width:500px;height:60px}</style></head>
<body>${BODY[kind]}<script>window.__REPLICA = ${JSON.stringify(kind)};</script><script>${PAGE_SCRIPT}</script></body></html>`;
}

// The sites' own code, reduced to what matters here: plain DOM, as a bundle would do it.
const PAGE_SCRIPT = String.raw`
(() => {
  const kind = window.__REPLICA;
  const thread = document.getElementById("thread");
  const esc = (s) => { const d = document.createElement("div"); d.textContent = s; return d.innerHTML; };
  const uuid = () => crypto.randomUUID();
  const fence = "\u0060\u0060\u0060";
  function render(text) {
    const out = []; const lines = text.split("\n");
    for (let i = 0; i < lines.length; i++) {
      const line = lines[i];
      if (line.startsWith(fence)) {
        const lang = line.slice(3).trim(); const code = [];
        for (i++; i < lines.length && !lines[i].startsWith(fence); i++) code.push(lines[i]);
        out.push('<pre><code class="language-' + esc(lang) + '">' + esc(code.join("\n")) + '</code></pre>');
      } else if (line.trim() !== "") out.push("<p>" + esc(line) + "</p>");
    }
    return out.join("");
  }

  // ---- the composer: a textarea (rebuilt ChatGPT) or a ProseMirror-like editor ----
  const editor = document.querySelector('[contenteditable="true"]');
  const textarea = document.querySelector("textarea");
  let value = "";
  let busy = false;
  let conv = null;
  const readEditor = () => Array.from(editor.querySelectorAll("p")).map((p) => p.textContent).join("\n");
  if (editor) {
    editor.addEventListener("input", () => { value = readEditor() || editor.textContent; refresh(); });
    // like ProseMirror: a paste is handled by the editor itself, as paragraphs
    editor.addEventListener("paste", (e) => {
      const text = e.clipboardData && e.clipboardData.getData("text/plain");
      if (!text) return;
      e.preventDefault();
      editor.innerHTML = text.split("\n").map((l) => "<p>" + (esc(l) || "<br>") + "</p>").join("");
      value = text; refresh();
    });
  }
  if (textarea) textarea.addEventListener("input", () => { value = textarea.value; refresh(); });
  const composer = editor || textarea;
  composer.addEventListener("keydown", (e) => { if (e.key === "Enter" && !e.shiftKey) { e.preventDefault(); submit(); } });
  function clearComposer() {
    value = "";
    if (editor) editor.innerHTML = "<p><br></p>"; else textarea.value = "";
  }

  // ---- send / stop controls, per UI ----
  const slot = document.getElementById("sendSlot");
  const sendButton = slot ? slot.querySelector("button") : document.querySelector("button[data-composer-submit]");
  sendButton.addEventListener("click", () => { if (!busy) submit(); });
  function refresh() {
    const empty = value.trim() === "";
    if (kind === "chatgpt-2") {
      if (busy) return;
      sendButton.setAttribute("aria-disabled", empty ? "true" : "false");
      if (empty) sendButton.setAttribute("data-visually-disabled", ""); else sendButton.removeAttribute("data-visually-disabled");
    } else {
      sendButton.disabled = busy || empty;
    }
  }
  function setBusy(on) {
    busy = on;
    if (kind === "chatgpt-1" || kind === "claude") {
      slot.replaceChildren();
      if (on) {
        const stop = document.createElement("button");
        stop.type = "button";
        if (kind === "chatgpt-1") { stop.setAttribute("data-testid", "stop-button"); stop.setAttribute("aria-label", "Stop streaming"); }
        else stop.setAttribute("aria-label", "Stop response");
        stop.textContent = "Stop";
        slot.appendChild(stop);
      } else slot.appendChild(sendButton);
    } else {
      // the rebuilt ChatGPT: one control, send and stop
      if (on) {
        sendButton.setAttribute("aria-label", sendButton.dataset.stopLabel);
        sendButton.type = "button";
        sendButton.setAttribute("data-stop-generating", "");
        sendButton.setAttribute("aria-disabled", "false");
        sendButton.removeAttribute("data-visually-disabled");
      } else {
        sendButton.setAttribute("aria-label", sendButton.dataset.sendLabel);
        sendButton.type = "submit";
        sendButton.removeAttribute("data-stop-generating");
      }
    }
    refresh();
  }

  // ---- turns, per UI ----
  let n = 0;
  function addUser(text) {
    n++;
    if (kind === "chatgpt-1") {
      thread.insertAdjacentHTML("beforeend", '<section data-testid="conversation-turn-' + n + '" data-turn="user"><div data-message-author-role="user" data-message-id="' + uuid() + '"><div class="whitespace-pre-wrap">' + esc(text) + '</div></div></section>');
    } else if (kind === "chatgpt-2") {
      thread.insertAdjacentHTML("beforeend", '<li data-message-role="user" id="' + uuid() + '"><h4 data-message-attribution>You said:</h4><button data-user-message-bubble><p data-user-message-copy>' + esc(text) + '</p></button></li>');
    } else {
      thread.insertAdjacentHTML("beforeend", '<div data-test-render-count="1"><div data-testid="user-message"><p class="whitespace-pre-wrap">' + esc(text) + '</p></div></div>');
    }
  }
  function startAssistant() {
    n++;
    const id = uuid();
    if (kind === "chatgpt-1") {
      thread.insertAdjacentHTML("beforeend", '<section data-testid="conversation-turn-' + n + '" data-turn="assistant"><div data-message-author-role="assistant" data-message-id="' + id + '"><div class="markdown prose"></div></div></section>');
      const body = thread.lastElementChild.querySelector(".markdown");
      return { update: (html) => (body.innerHTML = html), finish: () => {} };
    }
    if (kind === "chatgpt-2") {
      // a test can play "the site changed its markup" with another role name
      thread.insertAdjacentHTML("beforeend", '<li data-message-role="' + (window.__ASSISTANT_ROLE || "assistant") + '" id="pending-' + id + '" data-message-streaming><h4 data-message-attribution>ChatGPT said:</h4><div data-assistant-placeholder-slot></div><div data-assistant-markdown></div></li>');
      const li = thread.lastElementChild;
      const body = li.querySelector("[data-assistant-markdown]");
      return {
        update: (html) => { li.setAttribute("data-assistant-content-started", ""); body.innerHTML = html; },
        finish: () => { li.id = id; li.removeAttribute("data-message-streaming"); li.setAttribute("data-message-complete", ""); },
      };
    }
    thread.insertAdjacentHTML("beforeend", '<div data-test-render-count="1"><div data-is-streaming="true" class="group"><div class="font-claude-response"><div class="standard-markdown"></div></div></div></div>');
    const turn = thread.lastElementChild.firstElementChild;
    const body = turn.querySelector(".standard-markdown");
    return { update: (html) => (body.innerHTML = html), finish: () => turn.setAttribute("data-is-streaming", "false") };
  }

  async function submit() {
    if (busy || value.trim() === "") return;
    const prompt = value;
    clearComposer();
    addUser(prompt);
    if (!conv) {
      conv = uuid();
      history.pushState({}, "", (kind === "chatgpt-1" ? "/c/" : kind === "chatgpt-2" ? "/uc/" : "/chat/") + conv);
    }
    setBusy(true);
    const reply = startAssistant();
    const resp = await fetch("/replica/reply", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ prompt, conversation: conv }) });
    const reader = resp.body.getReader(); const td = new TextDecoder();
    let text = "";
    for (;;) {
      const { value: chunk, done } = await reader.read();
      if (done) break;
      text += td.decode(chunk, { stream: true });
      reply.update(render(text));
      // Claude opens the artifact viewer next to a reply; it carries the reply font class too
      const panel = document.getElementById("artifact-panel");
      if (panel && panel.hidden && text.length > 20) {
        panel.hidden = false;
        panel.firstElementChild.innerHTML = "<p>" + esc(window.__ARTIFACT || "") + "</p>";
      }
    }
    reply.finish();
    (window.__streamEnds = window.__streamEnds || []).push(Date.now());
    setBusy(false);
  }
})();
`;
