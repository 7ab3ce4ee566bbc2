/**
 * Reading a chat page through an adapter: which elements are assistant turns, what text a turn
 * holds (without reasoning panes, buttons or our own card), and where the composer and send
 * button are. Every lookup tries the site's selectors first and the generic fallback second, and
 * an invalid selector (say, from a user override) is skipped instead of breaking detection.
 */

import { ALWAYS_EXCLUDE, GENERIC, type SelectorField, type SiteAdapter } from "../shared/adapters";

export const CARD_TAG = "ground-link-card";

function safeAll(root: ParentNode, selector: string): Element[] {
  try {
    return Array.from(root.querySelectorAll(selector));
  } catch {
    return [];
  }
}

function safeAny(root: ParentNode, selector: string): boolean {
  try {
    return root.querySelector(selector) !== null;
  } catch {
    return false;
  }
}

function safeMatches(el: Element, selector: string): boolean {
  try {
    return el.matches(selector);
  } catch {
    return false;
  }
}

/** The selector lists for a role: the site's own, then the generic fallback's. */
export function selectorsFor(adapter: SiteAdapter, field: SelectorField): string[][] {
  return adapter.id === "generic" ? [adapter[field]] : [adapter[field], GENERIC[field]];
}

/** Elements for the first list (site, then generic) that matches anything. */
export function findAll(root: ParentNode, adapter: SiteAdapter, field: SelectorField): Element[] {
  for (const list of selectorsFor(adapter, field)) {
    for (const sel of list) {
      const found = safeAll(root, sel);
      if (found.length > 0) return found;
    }
  }
  return [];
}

export function findFirst(root: ParentNode, adapter: SiteAdapter, field: SelectorField, usable?: (el: Element) => boolean): Element | null {
  for (const list of selectorsFor(adapter, field)) {
    for (const sel of list) {
      for (const el of safeAll(root, sel)) if (!usable || usable(el)) return el;
    }
  }
  return null;
}

/** Whether anything in `root` says a reply is still being generated. */
export function isStreaming(root: ParentNode, adapter: SiteAdapter): boolean {
  for (const sel of adapter.streaming) {
    try {
      if (root.querySelector(sel) !== null) return true;
    } catch {
      // invalid override: ignore
    }
  }
  return false;
}

function userSelectors(adapter: SiteAdapter): string[] {
  return adapter.id === "generic" ? adapter.userMessage : [...adapter.userMessage, ...GENERIC.userMessage];
}

function isUserTurn(el: Element, adapter: SiteAdapter): boolean {
  for (const sel of userSelectors(adapter)) {
    try {
      if (el.matches(sel) || el.closest(sel) !== null || el.querySelector(sel) !== null) return true;
    } catch {
      // invalid override: ignore
    }
  }
  return false;
}

/** Per adapter, whether an element found by the assistant selectors really is an assistant turn.
 * Roles do not change once rendered, so a 500-message chat is classified once, not per mutation. */
const verdicts = new WeakMap<SiteAdapter, WeakMap<Element, boolean>>();

/**
 * Assistant turns in document order: outermost matches only, never a user turn or anything
 * inside or around one, never our own card, never an editable composer.
 */
export function assistantMessages(root: ParentNode, adapter: SiteAdapter): Element[] {
  const found = findAll(root, adapter, "assistantMessage");
  let cache = verdicts.get(adapter);
  if (!cache) {
    cache = new WeakMap();
    verdicts.set(adapter, cache);
  }
  let set: Set<Element> | null = null;
  const out: Element[] = [];
  for (const el of found) {
    let ok = cache.get(el);
    if (ok === undefined) {
      set ??= new Set(found);
      ok = true;
      for (let p = el.parentElement; p && ok; p = p.parentElement) if (set.has(p)) ok = false;
      if (ok && (el.closest(CARD_TAG) || el.closest('[contenteditable="true"], textarea'))) ok = false;
      if (ok && isUserTurn(el, adapter)) ok = false;
      cache.set(el, ok);
    }
    if (ok) out.push(el);
  }
  return out;
}

/** User turns in document order (outermost). */
export function userMessages(root: ParentNode, adapter: SiteAdapter): Element[] {
  for (const sel of userSelectors(adapter)) {
    const found = safeAll(root, sel);
    if (found.length > 0) return outermost(found);
  }
  return [];
}

/**
 * User turns inside a subtree that was just added to the page (the subtree's root included), as
 * they stand now: outermost matches, minus anything that is, holds or sits in an assistant turn
 * (a site may add an empty turn container first and fill it later). Costs the subtree, not the
 * page, so the observer can afford it on a 500-message chat.
 */
export function userTurnsIn(el: Element, adapter: SiteAdapter): Element[] {
  if (!el.isConnected || el.closest(CARD_TAG)) return [];
  for (const sel of userSelectors(adapter)) {
    let found: Element[];
    try {
      found = el.matches(sel) ? [el] : Array.from(el.querySelectorAll(sel));
    } catch {
      continue;
    }
    if (found.length === 0) continue;
    const assistant = liveAssistantSelectors(el.ownerDocument, adapter);
    return outermost(found, el.parentElement).filter((u) => !touches(u, assistant));
  }
  return [];
}

/** The matches that no other match contains (`stop`: look no higher than this ancestor). */
function outermost(found: Element[], stop: Element | null = null): Element[] {
  const set = new Set(found);
  return found.filter((u) => {
    for (let p = u.parentElement; p && p !== stop; p = p.parentElement) if (set.has(p)) return false;
    return true;
  });
}

/** The assistant selectors `assistantMessages` would use on this page: the first list (the
 * site's, then the generic one) with a selector that matches something. */
function liveAssistantSelectors(doc: Document, adapter: SiteAdapter): string[] {
  for (const list of selectorsFor(adapter, "assistantMessage")) {
    const live = list.filter((sel) => safeAny(doc, sel));
    if (live.length > 0) return live;
  }
  return [];
}

/** Whether `el` is, holds or sits in an element matching one of `selectors`. */
function touches(el: Element, selectors: string[]): boolean {
  return selectors.some((sel) => el.matches(sel) || el.closest(sel) !== null || el.querySelector(sel) !== null);
}

/**
 * The text of a turn as the parser should see it: text nodes in document order, skipping
 * excluded subtrees (reasoning panes, buttons, our card). Block boundaries become newlines so
 * prose on either side of a block never runs into its JSON.
 */
export function messageText(el: Element, adapter: SiteAdapter): string {
  const exclude = [...adapter.exclude, ...ALWAYS_EXCLUDE];
  const parts: string[] = [];
  const walk = (node: Node): void => {
    for (let c = node.firstChild; c; c = c.nextSibling) {
      if (c.nodeType === 3) {
        parts.push((c as Text).data);
      } else if (c.nodeType === 1) {
        const e = c as Element;
        if (exclude.some((s) => safeMatches(e, s))) continue;
        if (e.tagName === "BR") {
          parts.push("\n");
          continue;
        }
        const block = BLOCK_TAGS.has(e.tagName);
        if (block) parts.push("\n");
        walk(e);
        if (block) parts.push("\n");
      }
    }
  };
  walk(el);
  return parts.join("");
}

const BLOCK_TAGS = new Set(["P", "DIV", "PRE", "LI", "UL", "OL", "H1", "H2", "H3", "H4", "H5", "H6", "BLOCKQUOTE", "TABLE", "TR", "SECTION", "ARTICLE"]);

/** Whether an element can be typed into and is on screen (not hidden or disabled). */
export function isUsableInput(el: Element): boolean {
  if ((el as HTMLTextAreaElement).disabled) return false;
  if (el.getAttribute("aria-hidden") === "true") return false;
  const style = el.ownerDocument.defaultView?.getComputedStyle(el);
  if (style && (style.display === "none" || style.visibility === "hidden")) return false;
  return true;
}

export function findComposer(root: ParentNode, adapter: SiteAdapter): HTMLElement | null {
  return findFirst(root, adapter, "composer", (el) => isUsableInput(el) && !el.closest(CARD_TAG)) as HTMLElement | null;
}

/** Whether `el` is itself the site's "still streaming" control (a send button that became stop). */
function isStreamingControl(el: Element, adapter: SiteAdapter): boolean {
  return adapter.streaming.some((sel) => safeMatches(el, sel));
}

/** The send button, never while it is the stop control: clicking that would cancel a reply. */
export function findSendButton(root: ParentNode, adapter: SiteAdapter): HTMLElement | null {
  return findFirst(root, adapter, "sendButton", (el) => !el.closest(CARD_TAG) && !isStreamingControl(el, adapter)) as HTMLElement | null;
}

/** Where a role was found: through the site's own selectors, only the generic fallback's, or not at all. */
export type RoleSource = "site" | "generic" | null;

export interface RoleSources {
  assistantMessage: RoleSource;
  userMessage: RoleSource;
  composer: RoleSource;
  sendButton: RoleSource;
}

function sourceOf(root: ParentNode, adapter: SiteAdapter, field: SelectorField, usable?: (el: Element) => boolean): RoleSource {
  const lists = selectorsFor(adapter, field);
  for (let i = 0; i < lists.length; i++) {
    for (const sel of lists[i] ?? []) {
      if (safeAll(root, sel).some((el) => !el.closest(CARD_TAG) && (!usable || usable(el)))) return i === 0 && adapter.id !== "generic" ? "site" : "generic";
    }
  }
  return null;
}

/** For the health check: which selector list finds each role on this page. */
export function locateRoles(root: ParentNode, adapter: SiteAdapter): RoleSources {
  const assistant = assistantMessages(root, adapter).length > 0 ? sourceOf(root, adapter, "assistantMessage") : null;
  const user = userMessages(root, adapter).length > 0 ? sourceOf(root, adapter, "userMessage") : null;
  return {
    assistantMessage: assistant,
    userMessage: user,
    composer: sourceOf(root, adapter, "composer", isUsableInput),
    sendButton: sourceOf(root, adapter, "sendButton", (el) => !isStreamingControl(el, adapter)),
  };
}

/**
 * Before a pack that changes how turns are found is imported: how many elements its assistant
 * selectors match on this page, how many of the person's own messages there are (the shipped
 * user selectors plus the pack's), and how many of the matches are, hold or sit in one of them.
 */
export function overlapWithUserTurns(doc: Document, adapter: SiteAdapter, assistant: string[], user: string[]): { assistantMatches: number; userTurns: number; overlapping: number } {
  const withUser: SiteAdapter = { ...adapter, userMessage: [...new Set([...user, ...adapter.userMessage])] };
  const users = userMessages(doc, withUser);
  const matches = new Set(assistant.flatMap((s) => safeAll(doc, s)));
  let overlapping = 0;
  for (const m of matches) if (users.some((u) => u === m || u.contains(m) || m.contains(u))) overlapping++;
  return { assistantMatches: matches.size, userTurns: users.length, overlapping };
}

export function isDisabled(el: Element): boolean {
  return (el as HTMLButtonElement).disabled === true || el.getAttribute("aria-disabled") === "true" || el.classList.contains("disabled");
}
