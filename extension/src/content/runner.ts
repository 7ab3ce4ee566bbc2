/**
 * One reply's calls, from dispatch to the results message: a card under the message, the calls
 * run in order through the worker, and — once every call has an answer — all results pasted into
 * the composer as one message and sent (DESIGN §2.1, §7). A reply whose calls cannot reach the
 * bridge sends nothing; the card says why and offers Retry.
 */

import { ReplyCard } from "./card";
import { findComposer } from "./dom";
import { insertIntoComposer, send } from "./insert";
import { ask, formatInvalid, runCall } from "./messaging";
import { combineResults } from "../shared/format";
import { t } from "../shared/i18n";
import type { InvalidCallReport } from "../shared/gen/bridge";
import type { ParsedBlock } from "../shared/parser";
import type { ContentSettings, FailureKind, Provenance, WorkerEvent } from "../shared/protocol";
import type { SiteAdapter } from "../shared/adapters";

export interface ReplyContext {
  doc: Document;
  adapter: SiteAdapter;
  settings: ContentSettings;
  paused: boolean;
  session: string;
  /** Called with the text we paste, so the observer knows that user message is ours. */
  onOwnMessage(text: string): void;
  /** Set when the generic fallback found these calls: the person confirms the reply first, and
   * the bridge asks about every call (DESIGN §5.1, issue 14 "degrade, don't die"). */
  provenance?: Provenance;
}

type Slot =
  | { kind: "call"; row: number; callId: string | null; formatted: string | null; ignored: boolean }
  /** A block the parser rejected: the bridge writes what the model is told (`formatted`). */
  | { kind: "error"; row: number; formatted: string | null; report: InvalidCallReport };

/** Live runs by call id, so worker events can update the right row. */
const byCallId = new Map<string, { run: ReplyRun; row: number }>();

/**
 * A bridge event about one of our calls: `pending` means ground-link is asking the person;
 * `resolved` means they (or a timeout, or a cancel) answered and the call goes on; `done` needs
 * nothing here, since the result itself arrives through the call's own request.
 */
export function onWorkerEvent(ev: WorkerEvent): void {
  if (ev.type !== "callEvent") return;
  const hit = byCallId.get(ev.event.callId);
  if (!hit) return;
  const st = hit.run.card.state(hit.row);
  if (!st || (st.kind !== "running" && st.kind !== "waitingApproval")) return;
  if (ev.event.type === "pending") hit.run.card.setState(hit.row, { kind: "waitingApproval" });
  else if (ev.event.type === "resolved") hit.run.card.setState(hit.row, { kind: "running" });
}

export function failureText(kind: FailureKind, message: string): string {
  if (kind === "notPaired") return t("cardNotPaired");
  if (kind === "noBridge") return t("cardNoBridge", message);
  if (kind === "paused") return t("cardPaused");
  return t("cardError", message);
}

export class ReplyRun {
  readonly card: ReplyCard;
  private readonly slots: Slot[] = [];
  private running = false;
  private finished = false;
  /** Names this reply to the bridge, which caps its calls and stops them after a denial. */
  private readonly replyId = crypto.randomUUID();

  constructor(private readonly ctx: ReplyContext, anchor: Element, private readonly blocks: ParsedBlock[]) {
    this.card = new ReplyCard(ctx.doc, {
      ignore: (i) => void this.ignore(i),
      retry: () => void this.go(false),
      runAnyway: () => void this.go(true),
    });
    anchor.after(this.card.host);
    for (const b of blocks) {
      if (b.kind === "call") {
        const row = this.card.addRow(b.call, b.call.name, { kind: "queued" });
        this.slots.push({ kind: "call", row, callId: null, formatted: null, ignored: false });
      } else {
        const row = this.card.addRow(null, "invalid_call", { kind: "parseError", message: b.message });
        this.slots.push({ kind: "error", row, formatted: null, report: { kind: b.error, detail: b.message } });
      }
    }
  }

  /**
   * A reply found by the generic fallback: its rows wait, and the promise resolves only on the
   * person's trusted click on "This is the model's reply" (a page script cannot make one).
   */
  waitForConfirmation(): Promise<void> {
    for (const s of this.slots) if (s.kind === "call") this.card.setState(s.row, { kind: "unconfirmed" });
    return new Promise((resolve) => this.card.askConfirm(resolve));
  }

  /** Starts the reply: checks pause and the step budget, then runs the calls. */
  async start(): Promise<void> {
    if (this.ctx.paused) {
      for (const s of this.slots) if (s.kind === "call") this.card.setState(s.row, { kind: "paused" });
      this.card.offer("retry");
      return;
    }
    const round = await ask({ type: "takeRound", session: this.ctx.session });
    if (round.type === "round" && !round.ok) {
      for (const s of this.slots) if (s.kind === "call") this.card.setState(s.row, { kind: "budget", budget: round.budget });
      this.card.setFooter(t("cardBudget", String(round.budget)));
      this.card.offer("runAnyway");
      return;
    }
    await this.runCalls();
  }

  /** Retry after a failure, or Run anyway after the budget stopped the reply (resets the count). */
  private async go(resetBudget: boolean): Promise<void> {
    if (resetBudget) {
      await ask({ type: "resetRounds", session: this.ctx.session });
      await ask({ type: "takeRound", session: this.ctx.session });
    }
    const cfg = await ask({ type: "config" });
    if (cfg.type === "config") this.ctx.paused = cfg.paused;
    if (this.ctx.paused) {
      this.card.offer("retry");
      return;
    }
    this.card.setFooter("");
    await this.runCalls();
  }

  private async ignore(index: number): Promise<void> {
    const slot = this.slots.find((s) => s.row === index);
    if (!slot || slot.kind !== "call" || slot.formatted !== null) return;
    slot.ignored = true;
    if (slot.callId) {
      // the bridge ends the call as denied; its result comes back through the running poll
      const r = await ask({ type: "cancel", callId: slot.callId });
      if (r.type === "failed") {
        slot.ignored = false;
        this.card.setFooter(failureText(r.kind, r.message));
      }
      return;
    }
    this.card.setState(index, { kind: "ignored" });
    if (this.slots.every((s) => s.kind === "error" || s.ignored)) {
      this.card.offer(null);
      this.card.setFooter("");
      return;
    }
    if (!this.running) await this.maybeFinish();
  }

  private async runCalls(): Promise<void> {
    if (this.running || this.finished) return;
    this.running = true;
    try {
      for (const slot of this.slots) {
        if (slot.kind === "error") {
          if (slot.formatted !== null) continue;
          const out = await formatInvalid(slot.report);
          if (!out.ok) {
            this.card.setFooter(failureText(out.kind, out.message));
            this.card.offer("retry");
            return;
          }
          slot.formatted = out.formatted;
          continue;
        }
        if (slot.formatted !== null || (slot.ignored && !slot.callId)) continue;
        const call = this.callAt(slot.row);
        slot.callId ??= crypto.randomUUID();
        byCallId.set(slot.callId, { run: this, row: slot.row });
        this.card.setState(slot.row, { kind: "running" });
        // "waiting for approval" comes from the bridge's events, not from a 202: a 202 only
        // says the call is not over yet (a long command is not waiting for anyone)
        const out = await runCall(slot.callId, this.ctx.session, this.replyId, call, this.ctx.provenance);
        if (!out.ok) {
          this.card.setState(slot.row, { kind: "error", message: failureText(out.kind, out.message) });
          // a call the bridge never ran gets a fresh id on retry
          byCallId.delete(slot.callId);
          if (out.kind !== "http") slot.callId = null;
          this.card.offer("retry");
          return;
        }
        byCallId.delete(slot.callId);
        const r = out.result;
        if (!r.formatted) {
          this.card.setState(slot.row, { kind: "error", message: t("cardError", "the bridge sent no formatted result"), result: r });
          this.card.offer("retry");
          slot.callId = null;
          return;
        }
        slot.formatted = r.formatted;
        const kind = r.status === "success" ? "done" : r.status === "denied" ? "denied" : "error";
        this.card.setState(slot.row, kind === "error" ? { kind, message: t("cardError", r.status), result: r } : { kind, result: r });
      }
    } finally {
      this.running = false;
    }
    await this.maybeFinish();
  }

  private callAt(row: number) {
    const b = this.blocks[row];
    if (!b || b.kind !== "call") throw new Error(`row ${row} is not a call`);
    return b.call;
  }

  /** When every slot has an answer: one message with all results, pasted and (maybe) sent. */
  private async maybeFinish(): Promise<void> {
    if (this.finished) return;
    const pending = this.slots.some((s) => s.formatted === null && !(s.kind === "call" && s.ignored && !s.callId));
    if (pending) return;
    const blocks = this.slots.flatMap((s) => (s.formatted ? [s.formatted] : []));
    if (blocks.length === 0) return;
    this.finished = true;
    const text = combineResults(blocks);
    const composer = findComposer(this.ctx.doc, this.ctx.adapter);
    if (!composer) {
      this.card.setFooter(t("cardInsertFailed", "no composer found on this page"));
      return;
    }
    const hadDraft = (composer instanceof HTMLTextAreaElement ? composer.value : composer.textContent ?? "").trim() !== "";
    this.ctx.onOwnMessage(text);
    const ins = insertIntoComposer(composer, text);
    if (!ins.ok) {
      this.card.setFooter(t("cardInsertFailed", ins.message));
      return;
    }
    if (!this.ctx.settings.autoSend || hadDraft) {
      this.card.setFooter(t("cardInComposer"));
      return;
    }
    const sent = await send(this.ctx.doc, this.ctx.adapter, composer);
    this.card.setFooter(sent.ok ? t("cardSent") : t("cardSendFailed", sent.message));
  }
}
