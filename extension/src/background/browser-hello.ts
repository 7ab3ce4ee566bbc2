/**
 * Tells the bridge whether this browser offers browser tools (DESIGN §8.3):
 * `{"type":"browser.hello","tools":<switch>}` over the native port, until the bridge answers
 * `{"type":"browser.hello","ok":true}`.
 *
 * It says hello when the port connects, when the switch changes, and after the host reports
 * `{"type":"relay.down"}` (its link to the bridge dropped; the host reconnects on the next
 * message). An answer with `error` and no `type` means the host could not reach the bridge (or
 * the bridge does not know the message): the hello is sent again after 1 s, doubling to 30 s,
 * so a missing bridge never makes the extension spin. A hello with no answer at all is retried
 * the same way after {@link HELLO_ANSWER_MS}.
 */

import { backoffDelay } from "./native";

export const HELLO_ANSWER_MS = 10_000;

export interface HelloDeps {
  /** Posts on the native port; false when there is no port. */
  send(m: unknown): boolean;
  /** The switch, read when each hello goes out (so a retry carries the current value). */
  enabled(): Promise<boolean>;
  setTimer(f: () => void, ms: number): unknown;
  clearTimer(t: unknown): void;
  now(): number;
  /** The bridge acknowledged a hello (the page-tools list follows it: ./page-bridge.ts). */
  onAcknowledged?(): void;
}

export interface HelloRecord {
  at: number;
  tools: boolean;
  /** `ok`, the error the host or bridge answered, or null while none came. */
  answer: string | null;
}

export class BrowserHello {
  /** Consecutive failed hellos since the last (re)start: the next wait is backoffDelay(failures - 1). */
  private failures = 0;
  private timer: unknown = null;
  private answerTimer: unknown = null;
  private gen = 0;
  private waiting = false;
  acknowledged = false;
  /** The last hellos sent (at most 20), for the popup and the e2e. */
  readonly history: HelloRecord[] = [];

  constructor(private deps: HelloDeps) {}

  /** Say hello now (connect, switch change, relay.down): earlier retries are dropped, backoff starts over. */
  restart(): void {
    this.failures = 0;
    this.acknowledged = false;
    void this.sendNow();
  }

  /** The port is gone: nothing to retry until it is back (the next connect restarts). */
  stop(): void {
    this.gen += 1;
    this.clear();
    this.waiting = false;
  }

  private clear(): void {
    if (this.timer !== null) this.deps.clearTimer(this.timer);
    if (this.answerTimer !== null) this.deps.clearTimer(this.answerTimer);
    this.timer = null;
    this.answerTimer = null;
  }

  private async sendNow(): Promise<void> {
    const gen = ++this.gen;
    this.clear();
    let tools = false;
    try {
      tools = await this.deps.enabled();
    } catch {
      tools = false;
    }
    if (gen !== this.gen) return; // a newer hello took over while the switch was read
    this.waiting = true;
    const rec: HelloRecord = { at: this.deps.now(), tools, answer: null };
    this.history.push(rec);
    if (this.history.length > 20) this.history.shift();
    if (!this.deps.send({ type: "browser.hello", tools })) {
      rec.answer = "no native port";
      this.waiting = false;
      return;
    }
    this.answerTimer = this.deps.setTimer(() => {
      this.answerTimer = null;
      if (gen !== this.gen || !this.waiting) return;
      rec.answer = "no answer";
      this.retryLater();
    }, HELLO_ANSWER_MS);
  }

  private retryLater(): void {
    this.waiting = false;
    const wait = backoffDelay(this.failures);
    this.failures += 1;
    this.timer = this.deps.setTimer(() => {
      this.timer = null;
      void this.sendNow();
    }, wait);
  }

  /**
   * A message from the port that may answer the hello. Returns true when it did: the bridge's
   * `{"type":"browser.hello","ok":true}`, or an `{"error"}` without `type` or `callId` while a
   * hello waits.
   */
  onMessage(m: Record<string, unknown>): boolean {
    const last = this.history.at(-1);
    if (m.type === "browser.hello") {
      if (!this.waiting) return true;
      this.waiting = false;
      this.clear();
      if (m.ok === true) {
        this.acknowledged = true;
        this.failures = 0;
        if (last) last.answer = "ok";
        this.deps.onAcknowledged?.();
      } else {
        if (last) last.answer = typeof m.error === "string" ? m.error : "not acknowledged";
        this.retryLater();
      }
      return true;
    }
    if (m.type === undefined && m.callId === undefined && typeof m.error === "string" && this.waiting) {
      this.clear();
      if (last) last.answer = m.error;
      this.retryLater();
      return true;
    }
    return false;
  }
}
