/**
 * Putting text into a site's composer through a path its editor accepts, and sending it.
 *
 * A textarea gets the native value setter plus an `input` event (React tracks the value through
 * the prototype setter, so assigning `.value` alone is ignored). A contenteditable editor
 * (ProseMirror, Lexical, Quill, plain) is tried through the editor's own paste handling first,
 * then `insertText`, then a `beforeinput` the editor may handle, and only then direct DOM text;
 * after each path the composer is read back, and the first path whose text arrived wins.
 */

import { findSendButton, isDisabled } from "./dom";
import type { SiteAdapter } from "../shared/adapters";

export type InsertStrategy = "textarea" | "paste" | "execCommand" | "beforeinput" | "domText";

export type InsertOutcome = { ok: true; strategy: InsertStrategy } | { ok: false; message: string };

/** The composer's current text, normalised for comparison. */
export function composerText(el: HTMLElement): string {
  const raw = el instanceof HTMLTextAreaElement || el instanceof HTMLInputElement ? el.value : (el.innerText ?? el.textContent ?? "");
  return norm(raw);
}

function norm(s: string): string {
  return s.replace(/\u00a0/g, " ").replace(/\s+/g, " ").trim();
}

/**
 * Whether `text` arrived: its start and end are both in the composer. Whitespace is ignored,
 * since editors turn line breaks into paragraphs and `innerText` spacing differs between them.
 */
function arrived(el: HTMLElement, text: string): boolean {
  const squash = (s: string) => s.replace(/\s+/g, "");
  const have = squash(composerText(el));
  const want = squash(text);
  if (want === "") return true;
  const head = want.slice(0, 60);
  const tail = want.slice(-60);
  return have.includes(head) && have.includes(tail);
}

function setTextareaValue(el: HTMLTextAreaElement | HTMLInputElement, value: string): void {
  const proto = el instanceof HTMLTextAreaElement ? HTMLTextAreaElement.prototype : HTMLInputElement.prototype;
  const setter = Object.getOwnPropertyDescriptor(proto, "value")?.set;
  if (setter) setter.call(el, value);
  else el.value = value;
  el.dispatchEvent(new Event("input", { bubbles: true }));
  el.dispatchEvent(new Event("change", { bubbles: true }));
}

function selectAllIn(el: HTMLElement): void {
  const sel = el.ownerDocument.getSelection();
  if (!sel) return;
  const range = el.ownerDocument.createRange();
  range.selectNodeContents(el);
  sel.removeAllRanges();
  sel.addRange(range);
}

function makeDataTransfer(text: string): DataTransfer | null {
  try {
    const dt = new DataTransfer();
    dt.setData("text/plain", text);
    return dt;
  } catch {
    return null;
  }
}

/** A paste event carrying `text`, as the editor's own paste handler reads it. */
function pasteEvent(text: string): Event {
  const dt = makeDataTransfer(text);
  if (dt) {
    try {
      return new ClipboardEvent("paste", { clipboardData: dt, bubbles: true, cancelable: true });
    } catch {
      // fall through to a plain event
    }
  }
  const ev = new Event("paste", { bubbles: true, cancelable: true });
  const data = dt ?? {
    types: ["text/plain"],
    getData: (type: string) => (type === "text/plain" || type === "text" ? text : ""),
    items: [],
    files: [],
  };
  Object.defineProperty(ev, "clipboardData", { value: data });
  return ev;
}

/**
 * Replaces the composer's content with `text` (an empty composer) or appends to it (a draft is
 * kept). `append` is reported so the caller can avoid sending a person's draft unasked.
 */
export function insertIntoComposer(el: HTMLElement, text: string): InsertOutcome {
  el.focus();
  if (el instanceof HTMLTextAreaElement || el instanceof HTMLInputElement) {
    const draft = el.value.trim();
    setTextareaValue(el, draft === "" ? text : `${el.value}\n\n${text}`);
    return arrived(el, text) ? { ok: true, strategy: "textarea" } : { ok: false, message: "the composer did not accept the text" };
  }
  const hadDraft = composerText(el) !== "";
  const place = (): void => {
    el.focus();
    if (hadDraft) {
      // caret at the end, keeping the draft
      const sel = el.ownerDocument.getSelection();
      if (sel) {
        const r = el.ownerDocument.createRange();
        r.selectNodeContents(el);
        r.collapse(false);
        sel.removeAllRanges();
        sel.addRange(r);
      }
    } else {
      selectAllIn(el);
    }
  };
  const payload = hadDraft ? `\n\n${text}` : text;

  place();
  const paste = pasteEvent(payload);
  el.dispatchEvent(paste);
  if (paste.defaultPrevented && arrived(el, text)) return { ok: true, strategy: "paste" };

  place();
  try {
    if (el.ownerDocument.execCommand("insertText", false, payload) && arrived(el, text)) return { ok: true, strategy: "execCommand" };
  } catch {
    // not supported here
  }

  place();
  try {
    const bi = new InputEvent("beforeinput", { inputType: "insertText", data: payload, bubbles: true, cancelable: true });
    el.dispatchEvent(bi);
    if (bi.defaultPrevented && arrived(el, text)) return { ok: true, strategy: "beforeinput" };
  } catch {
    // InputEvent missing
  }

  // last resort for plain contenteditables: write the text as paragraphs
  const doc = el.ownerDocument;
  if (!hadDraft) el.replaceChildren();
  for (const line of payload.split("\n")) {
    const p = doc.createElement("p");
    p.textContent = line;
    el.appendChild(p);
  }
  el.dispatchEvent(new InputEvent("input", { bubbles: true, inputType: "insertText", data: payload }));
  return arrived(el, text) ? { ok: true, strategy: "domText" } : { ok: false, message: "the composer did not accept the text through any input path" };
}

export type SendOutcome = { ok: true; via: "button" | "enter" } | { ok: false; message: string };

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/**
 * Sends what is in the composer: clicks the send button once it is enabled, or presses Enter
 * when the site has no button we can find; then waits for the composer to empty.
 */
export async function send(doc: Document, adapter: SiteAdapter, composer: HTMLElement, timeoutMs = 4000): Promise<SendOutcome> {
  const deadline = Date.now() + timeoutMs;
  let button = findSendButton(doc, adapter);
  while (button && isDisabled(button) && Date.now() < deadline) {
    await sleep(50);
    button = findSendButton(doc, adapter);
  }
  let via: "button" | "enter";
  if (button && !isDisabled(button)) {
    button.click();
    via = "button";
  } else {
    composer.focus();
    const init = { key: "Enter", code: "Enter", keyCode: 13, which: 13, bubbles: true, cancelable: true };
    composer.dispatchEvent(new KeyboardEvent("keydown", init));
    composer.dispatchEvent(new KeyboardEvent("keypress", init));
    composer.dispatchEvent(new KeyboardEvent("keyup", init));
    via = "enter";
  }
  while (Date.now() < deadline) {
    if (composerText(composer) === "" || !composer.isConnected) return { ok: true, via };
    await sleep(50);
  }
  return { ok: false, message: "the message did not leave the composer; press send yourself" };
}
