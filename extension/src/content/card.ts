/**
 * The in-page card (DESIGN §7): one per reply, under the assistant message, in a closed Shadow
 * DOM so the site's CSS cannot restyle it and the site's script cannot reach into it. One row per
 * call: tool, argument preview, status, View (full arguments and result), Ignore. Everything is
 * set with `textContent`, never parsed as HTML, and buttons act only on trusted (real) clicks.
 *
 * The card never approves anything: approvals happen in ground-link itself.
 */

import { CARD_TAG } from "./dom";
import { t } from "../shared/i18n";
import type { CardState, ToolCall } from "../shared/protocol";

const STYLE = `
:host { all: initial; display: block; margin: 6px 0 10px; font: 13px/1.4 system-ui, sans-serif; }
.card { border: 1px solid #c9ced6; border-radius: 8px; background: #f7f8fa; color: #1f2328; padding: 6px 10px; max-width: 760px; }
@media (prefers-color-scheme: dark) { .card { background: #22262c; color: #e6e6e6; border-color: #444b55; } }
.title { font-weight: 600; font-size: 12px; opacity: .75; margin-bottom: 2px; }
.row { display: flex; flex-wrap: wrap; align-items: center; gap: 6px; padding: 3px 0; border-top: 1px dashed rgba(127,127,127,.3); }
.row:first-of-type { border-top: 0; }
.tool { font-family: ui-monospace, monospace; font-weight: 600; }
.preview { font-family: ui-monospace, monospace; opacity: .8; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; max-width: 380px; }
.status { margin-left: auto; }
.status[data-kind="done"] { color: #1a7f37; }
.status[data-kind="denied"], .status[data-kind="error"], .status[data-kind="parseError"] { color: #cf222e; }
.status[data-kind="waitingApproval"], .status[data-kind="budget"], .status[data-kind="paused"] { color: #9a6700; }
button { font: inherit; font-size: 12px; padding: 1px 8px; border-radius: 6px; border: 1px solid rgba(127,127,127,.5); background: transparent; color: inherit; cursor: pointer; }
pre { width: 100%; max-height: 260px; overflow: auto; margin: 4px 0; padding: 6px; background: rgba(127,127,127,.12); border-radius: 6px; white-space: pre-wrap; word-break: break-word; font-size: 12px; }
.footer { padding-top: 4px; font-size: 12px; }
.footer:empty { display: none; }
`;

export interface CardActions {
  ignore(index: number): void;
  retry(): void;
  runAnyway(): void;
}

interface Row {
  el: HTMLElement;
  status: HTMLElement;
  ignore: HTMLButtonElement;
  details: HTMLPreElement;
  view: HTMLButtonElement;
  call: ToolCall | null;
  state: CardState;
}

/** A short, single-line view of a call's most telling argument. */
export function argPreview(call: ToolCall): string {
  const a = call.args;
  const pick = ["command", "path", "pattern", "oldString"].find((k) => typeof a[k] === "string");
  const s = pick ? String(a[pick]) : JSON.stringify(a);
  const one = s.replace(/\s+/g, " ");
  return one.length > 80 ? `${one.slice(0, 80)}…` : one;
}

export function statusText(state: CardState): string {
  switch (state.kind) {
    case "queued":
      return t("cardQueued");
    case "running":
      return t("cardRunning");
    case "waitingApproval":
      return t("cardWaiting");
    case "done":
      return t("cardDone");
    case "denied":
      return t("cardDenied");
    case "error":
      return state.message;
    case "ignored":
      return t("cardIgnored");
    case "parseError":
      return t("cardParseError", state.message);
    case "budget":
      return t("cardBudget", String(state.budget));
    case "paused":
      return t("cardPaused");
    case "unconfirmed":
      return t("cardUnconfirmed");
  }
}

export class ReplyCard {
  readonly host: HTMLElement;
  private readonly root: ShadowRoot;
  private readonly rows: Row[] = [];
  private readonly footer: HTMLElement;
  private readonly actionsBar: HTMLElement;

  constructor(doc: Document, private readonly actions: CardActions) {
    this.host = doc.createElement(CARD_TAG);
    this.root = this.host.attachShadow({ mode: "closed" });
    const style = doc.createElement("style");
    style.textContent = STYLE;
    const card = doc.createElement("div");
    card.className = "card";
    card.setAttribute("part", "card");
    const title = doc.createElement("div");
    title.className = "title";
    title.textContent = t("cardTitle");
    this.footer = doc.createElement("div");
    this.footer.className = "footer";
    this.actionsBar = doc.createElement("div");
    this.actionsBar.className = "footer";
    card.append(title);
    this.root.append(style, card);
    this.cardEl = card;
  }

  private readonly cardEl: HTMLElement;

  addRow(call: ToolCall | null, label: string, state: CardState): number {
    const doc = this.host.ownerDocument;
    const el = doc.createElement("div");
    el.className = "row";
    const tool = doc.createElement("span");
    tool.className = "tool";
    tool.textContent = call ? call.name : label;
    const preview = doc.createElement("span");
    preview.className = "preview";
    preview.textContent = call ? argPreview(call) : "";
    const status = doc.createElement("span");
    status.className = "status";
    const view = doc.createElement("button");
    view.textContent = t("btnView");
    const ignore = doc.createElement("button");
    ignore.textContent = t("btnIgnore");
    const details = doc.createElement("pre");
    details.hidden = true;
    const index = this.rows.length;
    view.addEventListener("click", (ev) => {
      if (!ev.isTrusted) return;
      details.hidden = !details.hidden;
      view.textContent = details.hidden ? t("btnView") : t("btnHide");
    });
    ignore.addEventListener("click", (ev) => {
      if (!ev.isTrusted) return;
      this.actions.ignore(index);
    });
    el.append(tool, preview, status, view, ignore, details);
    this.cardEl.insertBefore(el, null);
    const row: Row = { el, status, ignore, details, view, call, state };
    this.rows.push(row);
    this.setState(index, state);
    this.cardEl.append(this.footer, this.actionsBar);
    return index;
  }

  setState(index: number, state: CardState): void {
    const row = this.rows[index];
    if (!row) return;
    row.state = state;
    row.status.dataset.kind = state.kind;
    row.status.textContent = statusText(state);
    const live = state.kind === "queued" || state.kind === "running" || state.kind === "waitingApproval" || state.kind === "budget";
    row.ignore.hidden = !live;
    const parts: string[] = [];
    if (row.call) parts.push(`${t("labelArgs")}:\n${JSON.stringify(row.call.args, null, 2)}`);
    if (row.call?.reason) parts.push(`reason: ${row.call.reason}`);
    if (state.kind === "done" || state.kind === "denied" || (state.kind === "error" && state.result)) {
      const r = state.result as NonNullable<typeof state.result>;
      parts.push(`${t("labelResult")} (${r.status}):\n${r.output}`);
    }
    if (state.kind === "parseError") parts.push(state.message);
    row.details.textContent = parts.join("\n\n");
    // the shadow root is closed; the host's attributes say what the card shows (no secrets)
    this.host.dataset.states = this.rows.map((r) => r.state.kind).join(" ");
  }

  state(index: number): CardState | undefined {
    return this.rows[index]?.state;
  }

  /** A line under the rows: sent / in composer / budget / errors. */
  setFooter(text: string): void {
    this.footer.textContent = text;
    this.host.dataset.footer = text;
  }

  /** Offers Retry or Run anyway under the rows (or nothing). */
  offer(what: "retry" | "runAnyway" | null): void {
    this.actionsBar.replaceChildren();
    if (!what) return;
    const b = this.host.ownerDocument.createElement("button");
    b.textContent = what === "retry" ? t("btnRetry") : t("btnRunAnyway");
    b.addEventListener("click", (ev) => {
      if (!ev.isTrusted) return;
      this.actionsBar.replaceChildren();
      if (what === "retry") this.actions.retry();
      else this.actions.runAnyway();
    });
    this.actionsBar.append(b);
  }

  /**
   * Asks the person whether the text above is the model's reply (the generic fallback found
   * calls outside any reply the adapter recognises). Only a trusted click confirms: a page
   * script's synthetic click or `.click()` has `isTrusted` false and is ignored. Even then,
   * ground-link asks again in its own dialog for every call (the page could have arranged the
   * click), so this button never approves anything.
   */
  askConfirm(onConfirm: () => void): void {
    this.actionsBar.replaceChildren();
    const doc = this.host.ownerDocument;
    const q = doc.createElement("span");
    q.textContent = `${t("cardConfirmQuestion")} `;
    const b = doc.createElement("button");
    b.textContent = t("btnConfirmReply");
    b.dataset.role = "confirm";
    b.addEventListener("click", (ev) => {
      if (!ev.isTrusted) return;
      this.actionsBar.replaceChildren();
      this.host.dataset.confirm = "confirmed";
      onConfirm();
    });
    this.actionsBar.append(q, b);
    this.host.dataset.confirm = "asking";
  }

  /** The card's buttons, for unit tests (the shadow root is closed to the page). */
  debugButtons(): HTMLButtonElement[] {
    return Array.from(this.cardEl.querySelectorAll("button"));
  }

  /** Text of the card for tests and the e2e harness (the shadow root is closed to the page). */
  debugText(): string {
    return this.cardEl.textContent ?? "";
  }
}
