// @vitest-environment jsdom
// Insertion strategies: a React-style textarea (state follows input events, not the property),
// a ProseMirror-style editor (handles paste itself), a Lexical-style editor (handles beforeinput
// only), and a plain contenteditable; then sending by button or Enter.
import { beforeEach, describe, expect, it } from "vitest";
import { composerText, insertIntoComposer, send } from "../src/content/insert";
import { GENERIC } from "../src/shared/adapters";

const TEXT = '<tool_result name="read_file" status="success">\nline one\nline two\n</tool_result>';

beforeEach(() => {
  document.body.innerHTML = "";
});

/** A textarea whose "app state" only changes on input events, like React's onChange. */
function reactTextarea(): { el: HTMLTextAreaElement; state: () => string } {
  const el = document.createElement("textarea");
  let state = "";
  el.addEventListener("input", () => (state = el.value));
  document.body.append(el);
  return { el, state: () => state };
}

/** An editor that takes text only from paste events and renders it itself. */
function pasteEditor(): HTMLElement {
  const el = document.createElement("div");
  el.contentEditable = "true";
  el.addEventListener("paste", (e) => {
    const data = (e as ClipboardEvent).clipboardData?.getData("text/plain") ?? "";
    e.preventDefault();
    el.replaceChildren(...data.split("\n").map((l) => Object.assign(document.createElement("p"), { textContent: l })));
  });
  document.body.append(el);
  return el;
}

/** An editor that ignores paste and reads beforeinput insertText, like Lexical's handler. */
function beforeInputEditor(): HTMLElement {
  const el = document.createElement("div");
  el.contentEditable = "true";
  el.addEventListener("beforeinput", (e) => {
    const ie = e as InputEvent;
    if (ie.inputType !== "insertText") return;
    e.preventDefault();
    el.textContent = ie.data ?? "";
  });
  document.body.append(el);
  return el;
}

describe("insertIntoComposer", () => {
  it("textarea: native setter + input event reaches the app's state", () => {
    const { el, state } = reactTextarea();
    const out = insertIntoComposer(el, TEXT);
    expect(out).toEqual({ ok: true, strategy: "textarea" });
    expect(el.value).toBe(TEXT);
    expect(state()).toBe(TEXT);
  });

  it("textarea: a draft is kept and the results appended", () => {
    const { el } = reactTextarea();
    el.value = "my draft";
    insertIntoComposer(el, TEXT);
    expect(el.value.startsWith("my draft\n\n")).toBe(true);
    expect(el.value.endsWith(TEXT)).toBe(true);
  });

  it("ProseMirror-style editor: through its paste handler", () => {
    const el = pasteEditor();
    expect(insertIntoComposer(el, TEXT)).toEqual({ ok: true, strategy: "paste" });
    expect([...el.querySelectorAll("p")].map((p) => p.textContent)).toEqual(TEXT.split("\n"));
    expect(composerText(el)).not.toBe("");
  });

  it("Lexical-style editor: through beforeinput when paste is not handled", () => {
    const el = beforeInputEditor();
    expect(insertIntoComposer(el, TEXT)).toEqual({ ok: true, strategy: "beforeinput" });
    expect(el.textContent).toBe(TEXT);
  });

  it("plain contenteditable: paragraphs plus an input event as the last resort", () => {
    const el = document.createElement("div");
    el.contentEditable = "true";
    let inputs = 0;
    el.addEventListener("input", () => inputs++);
    document.body.append(el);
    expect(insertIntoComposer(el, TEXT)).toEqual({ ok: true, strategy: "domText" });
    expect(el.querySelectorAll("p").length).toBe(4);
    expect(inputs).toBe(1);
  });

  it("reports failure when the editor swallows the text", () => {
    const el = document.createElement("div");
    el.contentEditable = "true";
    // an editor that reverts every change
    new MutationObserver(() => {
      if (el.childNodes.length) el.replaceChildren();
    }).observe(el, { childList: true });
    el.addEventListener("input", () => el.replaceChildren());
    document.body.append(el);
    const out = insertIntoComposer(el, TEXT);
    expect(out.ok).toBe(false);
  });
});

describe("send", () => {
  it("waits for the send button to enable, clicks it once", async () => {
    const { el } = reactTextarea();
    const button = document.createElement("button");
    button.setAttribute("aria-label", "Send");
    button.disabled = true;
    let clicks = 0;
    button.addEventListener("click", () => {
      clicks++;
      el.value = "";
    });
    document.body.append(button);
    el.value = "x";
    setTimeout(() => (button.disabled = false), 120);
    const out = await send(document, GENERIC, el, 2000);
    expect(out).toEqual({ ok: true, via: "button" });
    expect(clicks).toBe(1);
  });

  it("presses Enter when there is no button", async () => {
    const { el } = reactTextarea();
    el.value = "x";
    el.addEventListener("keydown", (e) => {
      if (e.key === "Enter") el.value = "";
    });
    expect(await send(document, GENERIC, el, 1000)).toEqual({ ok: true, via: "enter" });
  });

  it("says so when the message does not leave the composer", async () => {
    const { el } = reactTextarea();
    el.value = "stuck";
    const out = await send(document, GENERIC, el, 300);
    expect(out.ok).toBe(false);
  });
});
