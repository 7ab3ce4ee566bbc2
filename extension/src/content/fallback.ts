/**
 * Degrade, don't die (issue 14): when neither the site's nor the generic assistant selectors find
 * a single reply on the page, `<tool>` blocks may still be in the page's text. This finds the
 * element that holds the newest complete calls, outside the composer, the person's recognised
 * turns, reasoning panes and our cards, so the content script can offer them — never run them:
 * the person must confirm with a trusted click that the text is the model's reply, and the
 * bridge then asks about every call (`provenance: "genericFallback"`), because a page can plant
 * text anywhere and arrange that click.
 */

import { ALWAYS_EXCLUDE, GENERIC, type SiteAdapter } from "../shared/adapters";
import { parseToolBlocks } from "../shared/parser";
import { CARD_TAG, messageText } from "./dom";

/** How far above the innermost element that holds complete calls a candidate may reach. */
const MAX_CLIMB = 3;

const EDITABLE = 'textarea, input, [contenteditable=""], [contenteditable="true"], [role="textbox"]';

function safeClosest(el: Element, selector: string): boolean {
  try {
    return el.closest(selector) !== null;
  } catch {
    return false;
  }
}

function safeHas(el: Element, selector: string): boolean {
  try {
    return el.matches(selector) || el.querySelector(selector) !== null;
  } catch {
    return false;
  }
}

/** The adapter the fallback reads text with: the site's exclusions plus the generic ones. */
export function fallbackReader(adapter: SiteAdapter): SiteAdapter {
  return { ...adapter, exclude: [...new Set([...adapter.exclude, ...GENERIC.exclude])] };
}

function userSelectors(adapter: SiteAdapter): string[] {
  return [...new Set([...adapter.userMessage, ...GENERIC.userMessage])];
}

/** Whether text in `el` may be offered at all: not typed by the person, not ours, not hidden. */
function readable(el: Element, adapter: SiteAdapter): boolean {
  if (el.closest(CARD_TAG) || el.closest(EDITABLE)) return false;
  const skip = [...adapter.exclude, ...GENERIC.exclude, ...ALWAYS_EXCLUDE];
  if (skip.some((s) => safeClosest(el, s))) return false;
  return !userSelectors(adapter).some((s) => safeClosest(el, s));
}

/** Whether an element holds at least one complete call and no block still open. */
function holdsCalls(el: Element, reader: SiteAdapter): boolean {
  const blocks = parseToolBlocks(messageText(el, reader));
  return blocks.some((b) => b.kind === "call") && !blocks.some((b) => b.kind === "error" && b.error === "unterminated");
}

/**
 * The elements holding `<tool>` calls that no adapter role explains, newest last. `known` says
 * whether an element was already seen (history or offered): a candidate never grows over one, so
 * a new reply is not merged with an old one.
 */
export function fallbackCandidates(doc: Document, adapter: SiteAdapter, known: (el: Element) => boolean = () => false): Element[] {
  const body = doc.body;
  if (!body) return [];
  const reader = fallbackReader(adapter);
  const out: Element[] = [];
  const walker = doc.createTreeWalker(body, NodeFilter.SHOW_TEXT);
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    if (!(n as Text).data.includes("<tool")) continue;
    const start = n.parentElement;
    if (!start || !readable(start, adapter)) continue;
    let seen = false;
    for (let p: Element | null = start; p && !seen; p = p.parentElement) seen = known(p);
    if (seen || out.some((o) => o.contains(start))) continue;
    // the innermost element whose text holds a complete call…
    let el: Element | null = start;
    while (el && el !== body && !holdsCalls(el, reader)) el = el.parentElement;
    if (!el || el === body) continue;
    // …grown a little, so calls split over sibling blocks stay one reply, but never over the
    // composer, the person's turns, an earlier candidate or the page itself
    for (let i = 0; i < MAX_CLIMB; i++) {
      const up: Element | null = el.parentElement;
      if (!up || up === body || up === doc.documentElement) break;
      if (safeHas(up, EDITABLE) || userSelectors(adapter).some((s) => safeHas(up, s)) || safeHas(up, CARD_TAG)) break;
      if (out.some((o) => up.contains(o)) || Array.from(up.querySelectorAll("*")).some((d) => known(d))) break;
      el = up;
    }
    if (known(el) || out.includes(el)) continue;
    // an earlier candidate inside this one is the same reply
    for (let i = out.length - 1; i >= 0; i--) if (el.contains(out[i] as Element)) out.splice(i, 1);
    out.push(el);
  }
  return out;
}
