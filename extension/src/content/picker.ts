/**
 * "Fix this site" (issue 14): an element picker on the chat page. The person clicks a reply,
 * the input box and the send button; each pick becomes a selector that is checked on this page
 * before it is offered (a reply selector must match the picked reply and none of the person's
 * own messages; the input box must be editable; the send button must be a button outside the
 * turns) and saved as that site's override through the worker.
 *
 * Only trusted clicks count (`isTrusted`): a page script cannot pick, or save, for the person.
 * The picker's panel lives in a closed Shadow DOM the site's script cannot reach.
 */

import { GENERIC, type SelectorOverrides, type SiteAdapter } from "../shared/adapters";
import { t } from "../shared/i18n";
import { CARD_TAG, userMessages } from "./dom";

export type PickRole = "assistantMessage" | "composer" | "sendButton";
export const PICK_ORDER: PickRole[] = ["assistantMessage", "composer", "sendButton"];

/** Class names that look generated (hashes, utility classes) make brittle selectors. */
function stableClass(c: string): boolean {
  const digits = (c.match(/\d/g) ?? []).length;
  return /^[a-zA-Z][\w-]{1,40}$/.test(c) && digits < 2 && !/^(?:css|sc|jsx|svelte|emotion)-/.test(c);
}

function stableValue(v: string): boolean {
  return v.length > 0 && v.length <= 60 && !/\d{3,}/.test(v) && !/[0-9a-f]{8}-[0-9a-f]{4}/i.test(v);
}

const cssEscape = (s: string): string => (typeof CSS !== "undefined" && CSS.escape ? CSS.escape(s) : s.replace(/[^\w-]/g, (c) => `\\${c}`));

/** Candidate selectors for one element, most specific and stable first. */
export function candidates(el: Element): string[] {
  const tag = el.tagName.toLowerCase();
  const out: string[] = [];
  if (el.id && stableValue(el.id)) out.push(`${tag}#${cssEscape(el.id)}`);
  for (const a of Array.from(el.attributes)) {
    if (!a.name.startsWith("data-") && !["role", "name", "aria-roledescription"].includes(a.name)) continue;
    if (a.name === "data-fixture") continue;
    if (a.value === "" || a.value === "true" || a.value === "false") out.push(`${tag}[${a.name}]`);
    if (a.value !== "" && stableValue(a.value)) out.push(`${tag}[${a.name}="${a.value.replace(/"/g, '\\"')}"]`);
  }
  const classes = Array.from(el.classList).filter(stableClass);
  if (classes.length > 0) out.push(`${tag}.${classes.map(cssEscape).join(".")}`);
  for (const c of classes) out.push(`${tag}.${cssEscape(c)}`);
  const parent = el.parentElement;
  if (parent && parent.tagName !== "BODY") {
    for (const p of candidates(parent).slice(0, 3)) out.push(`${p} > ${tag}`);
  }
  out.push(tag);
  return [...new Set(out)];
}

function safeAll(doc: ParentNode, sel: string): Element[] {
  try {
    return Array.from(doc.querySelectorAll(sel));
  } catch {
    return [];
  }
}

/**
 * The turn around a click inside a reply: the highest ancestor that holds neither one of the
 * person's own messages nor the composer (the turn list's child, on the sites we know).
 */
export function turnAround(el: Element, doc: Document, adapter: SiteAdapter): Element {
  const users = userMessages(doc, adapter);
  const editable = (e: Element) => e.querySelector('textarea, [contenteditable="true"]') !== null || e.matches('textarea, [contenteditable="true"]');
  let cur = el;
  for (let p = el.parentElement; p && p !== doc.body && p !== doc.documentElement; p = p.parentElement) {
    if (users.some((u) => p.contains(u)) || editable(p)) break;
    cur = p;
  }
  return cur;
}

export interface Proposal {
  overrides: SelectorOverrides;
  /** Per role, why no selector could be offered. */
  problems: Partial<Record<PickRole, string>>;
}

function isEditable(el: Element): boolean {
  return el instanceof el.ownerDocument.defaultView!.HTMLTextAreaElement || el.getAttribute("contenteditable") === "true";
}

/**
 * Turns the picked elements into a checked override: for each role, the first candidate that
 * matches the picked element and passes the role's check on this page.
 */
export function propose(doc: Document, adapter: SiteAdapter, picks: Partial<Record<PickRole, Element>>): Proposal {
  const out: Proposal = { overrides: {}, problems: {} };
  const users = userMessages(doc, adapter);
  const touchesUser = (e: Element) => users.some((u) => u === e || u.contains(e) || e.contains(u));
  const reply = picks.assistantMessage;
  if (reply) {
    // from the click up to the turn: the selector that finds the most replies, one per turn,
    // none of them the person's own message (ties go to the outer element: the whole turn)
    const turn = turnAround(reply, doc, adapter);
    // the turns' list: every match must be in it (an artifact viewer beside the chat may share
    // the reply's class, but not its place)
    const list = turn.parentElement ?? doc.body;
    let best: { sel: string; count: number } | null = null;
    for (let el: Element | null = reply; el; el = el === turn ? null : el.parentElement) {
      // per element its most specific valid candidate; between elements the one finding more
      for (const s of candidates(el)) {
        if (s === el.tagName.toLowerCase()) continue;
        const m = safeAll(doc, s);
        if (!m.includes(el) || m.some(touchesUser) || m.some((e) => e.closest(CARD_TAG) || !list.contains(e))) continue;
        if (m.filter((x) => turn.contains(x)).length !== 1) continue;
        if (!best || m.length >= best.count) best = { sel: s, count: m.length };
        break;
      }
    }
    if (best) out.overrides.assistantMessage = [best.sel];
    else out.problems.assistantMessage = "no selector for that reply leaves out your own messages";
  }
  const box = picks.composer;
  if (box) {
    const target = isEditable(box) ? box : (box.closest('textarea, [contenteditable="true"]') ?? box.querySelector('textarea, [contenteditable="true"]'));
    const sel = target ? candidates(target).find((s) => safeAll(doc, s)[0] === target) : undefined;
    if (target && sel) out.overrides.composer = [sel];
    else out.problems.composer = "that is not a box you can type in";
  }
  const send = picks.sendButton;
  if (send) {
    const button = send.closest('button, [role="button"]');
    const inTurn = (e: Element) => touchesUser(e) || safeAll(doc, [...adapter.assistantMessage, ...GENERIC.assistantMessage].join(",")).some((a) => a.contains(e));
    const sel = button && !inTurn(button) ? candidates(button).find((s) => safeAll(doc, s)[0] === button) : undefined;
    if (button && sel) out.overrides.sendButton = [sel];
    else out.problems.sendButton = "that is not a button outside the messages";
  }
  return out;
}

const STYLE = `
:host { all: initial; position: fixed; top: 8px; left: 50%; transform: translateX(-50%); z-index: 2147483647; font: 13px/1.4 system-ui, sans-serif; }
.panel { background: #fff8c5; color: #1f2328; border: 1px solid #9a6700; border-radius: 8px; padding: 8px 12px; box-shadow: 0 2px 8px rgba(0,0,0,.2); max-width: 520px; }
.row { display: flex; gap: 6px; margin-top: 6px; flex-wrap: wrap; }
button { font: inherit; padding: 2px 10px; border-radius: 6px; border: 1px solid #9a6700; background: #fff; cursor: pointer; }
ul { margin: 4px 0; padding-left: 18px; font-family: ui-monospace, monospace; font-size: 12px; }
`;
const OUTLINE = "ground-link-picking";

/** The picker on a live page; `save` hands the checked override to the worker. */
export class Picker {
  private readonly host: HTMLElement;
  private readonly root: ShadowRoot;
  private step = 0;
  private readonly picks: Partial<Record<PickRole, Element>> = {};
  private hovered: Element | null = null;

  constructor(
    private readonly doc: Document,
    private readonly adapter: SiteAdapter,
    private readonly save: (o: SelectorOverrides) => Promise<void>,
  ) {
    this.host = doc.createElement("ground-link-picker");
    this.root = this.host.attachShadow({ mode: "closed" });
  }

  start(): void {
    const style = this.doc.createElement("style");
    style.textContent = `[${OUTLINE}] { outline: 2px solid #9a6700 !important; outline-offset: 2px !important; }`;
    style.id = "ground-link-picker-style";
    this.doc.head.append(style);
    this.doc.documentElement.append(this.host);
    this.doc.addEventListener("click", this.onClick, true);
    this.doc.addEventListener("mouseover", this.onHover, true);
    this.render();
  }

  private stop(): void {
    this.doc.removeEventListener("click", this.onClick, true);
    this.doc.removeEventListener("mouseover", this.onHover, true);
    this.hovered?.removeAttribute(OUTLINE);
    this.doc.getElementById("ground-link-picker-style")?.remove();
    this.host.remove();
  }

  private readonly onHover = (ev: Event): void => {
    const el = ev.target instanceof Element ? ev.target : null;
    if (!el || el === this.host) return;
    this.hovered?.removeAttribute(OUTLINE);
    this.hovered = el;
    el.setAttribute(OUTLINE, "");
  };

  /** A pick: only a real click by the person, never one a page script dispatched. */
  private readonly onClick = (ev: MouseEvent): void => {
    if (ev.target === this.host || this.step >= PICK_ORDER.length) return;
    ev.preventDefault();
    ev.stopPropagation();
    ev.stopImmediatePropagation();
    if (!ev.isTrusted || !(ev.target instanceof Element)) return;
    const role = PICK_ORDER[this.step];
    if (role) this.picks[role] = ev.target;
    this.step++;
    this.render();
  };

  private button(label: string, act: () => void): HTMLButtonElement {
    const b = this.doc.createElement("button");
    b.textContent = label;
    b.addEventListener("click", (ev) => {
      if (ev.isTrusted) act();
    });
    return b;
  }

  private render(): void {
    const panel = this.doc.createElement("div");
    panel.className = "panel";
    const text = this.doc.createElement("div");
    const row = this.doc.createElement("div");
    row.className = "row";
    if (this.step < PICK_ORDER.length) {
      const keys = { assistantMessage: "pickerStepReply", composer: "pickerStepComposer", sendButton: "pickerStepSend" } as const;
      const role = PICK_ORDER[this.step] as PickRole;
      text.textContent = `${this.step + 1}/3 · ${t(keys[role])}`;
      row.append(
        this.button(t("pickerSkip"), () => {
          this.step++;
          this.render();
        }),
        this.button(t("pickerCancel"), () => this.stop()),
      );
      panel.append(text, row);
    } else {
      const p = propose(this.doc, this.adapter, this.picks);
      const list = this.doc.createElement("ul");
      for (const [field, sels] of Object.entries(p.overrides)) {
        const li = this.doc.createElement("li");
        li.textContent = `${field}: ${(sels ?? []).join(", ")}`;
        list.append(li);
      }
      for (const [field, why] of Object.entries(p.problems)) {
        const li = this.doc.createElement("li");
        li.textContent = `${field}: ${why}`;
        list.append(li);
      }
      const has = Object.keys(p.overrides).length > 0;
      text.textContent = has ? this.adapter.name : t("pickerNothing");
      if (has) {
        row.append(
          this.button(t("pickerSave"), () => {
            void this.save(p.overrides).then(() => {
              text.textContent = t("pickerSaved", this.adapter.name);
              row.replaceChildren(this.button(t("pickerCancel"), () => this.stop()));
            });
          }),
        );
      }
      row.append(this.button(t("pickerCancel"), () => this.stop()));
      panel.append(text, list, row);
    }
    const style = this.doc.createElement("style");
    style.textContent = STYLE;
    this.root.replaceChildren(style, panel);
  }
}
