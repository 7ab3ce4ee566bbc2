/**
 * Native messaging (DESIGN §8.2): the worker's link to `ground-link native-host`, which Chrome
 * starts for `chrome.runtime.connectNative` and which relays to the running app or
 * `ground-link serve` over a private Unix socket (docs/native-messaging.md).
 *
 * - connects to `dev.groundlink.host`; when the port drops (host killed, app restarted, host
 *   not installed) it connects again after a backoff that doubles up to {@link MAX_BACKOFF_MS};
 * - joins `{"type":"chunk"}` pieces back into the answer they split (Chrome caps a host message
 *   at 1 MiB);
 * - pairs without a pasted token: `{"type":"pair"}` makes ground-link ask the person, and on a
 *   yes it answers `{"type":"paired","key"}`, the same key a pasted `ground-link token` is;
 * - knows Chrome's "host not found" error and turns it into the command that installs the host.
 *
 * The pieces are plain functions and a class with its Chrome parts passed in, so Vitest drives
 * them without a browser; index.ts wires them to `chrome.*`.
 */

export const HOST_NAME = "dev.groundlink.host";
export const FIRST_BACKOFF_MS = 1000;
export const MAX_BACKOFF_MS = 30_000;
/** How long a pairing request may wait for the person (ground-link's own approval timeout ends it first). */
export const PAIR_WAIT_MS = 10 * 60_000;

/** The wait before reconnect attempt `attempt` (0-based): 1 s, 2 s, 4 s … capped. */
export function backoffDelay(attempt: number): number {
  const n = Math.max(0, Math.min(attempt, 30));
  return Math.min(FIRST_BACKOFF_MS * 2 ** n, MAX_BACKOFF_MS);
}

export const INSTALL_COMMAND = "ground-link install-native-host";

/** Whether Chrome's `lastError` says the host manifest is missing (or names no runnable host). */
export function isHostMissing(lastError: string | undefined): boolean {
  return typeof lastError === "string" && /native messaging host not found/i.test(lastError);
}

/** What the popup says about a dropped port, from Chrome's `lastError`. */
export function describeDisconnect(lastError: string | undefined): { missing: boolean; detail: string } {
  if (isHostMissing(lastError)) {
    return {
      missing: true,
      detail: `the ground-link native host is not installed for this browser (Chrome: "${lastError}"); run \`${INSTALL_COMMAND}\` in a terminal, then reopen this popup`,
    };
  }
  if (typeof lastError === "string" && /forbidden/i.test(lastError)) {
    return {
      missing: false,
      detail: `Chrome refused the native host (${lastError}): its manifest does not list this extension; run \`${INSTALL_COMMAND}\` again`,
    };
  }
  return { missing: false, detail: `the native host stopped (${lastError ?? "no reason given"}); connecting again` };
}

export interface Chunk {
  type: "chunk";
  id: string;
  index: number;
  count: number;
  data: string;
}

function isChunk(m: unknown): m is Chunk {
  if (typeof m !== "object" || m === null) return false;
  const c = m as Record<string, unknown>;
  return (
    c.type === "chunk" &&
    typeof c.id === "string" &&
    typeof c.data === "string" &&
    Number.isInteger(c.index) &&
    Number.isInteger(c.count) &&
    (c.count as number) > 0 &&
    (c.index as number) >= 0 &&
    (c.index as number) < (c.count as number)
  );
}

/** Largest joined answer kept (a 16 MiB file is at most ~96 MiB escaped twice). */
export const MAX_JOINED_CHARS = 128 * 1024 * 1024;

/**
 * Joins chunked answers. The host never interleaves two answers' pieces, so a piece out of
 * order, of another id, or past the size cap throws away what was gathered and is reported.
 */
export class ChunkJoiner {
  private id: string | null = null;
  private next = 0;
  private count = 0;
  private parts: string[] = [];
  private size = 0;

  /** A whole message, `null` while pieces are still missing; throws on a broken sequence. */
  feed(message: unknown): unknown {
    if (typeof message === "object" && message !== null && (message as { type?: unknown }).type === "chunk") {
      if (!isChunk(message)) {
        this.reset();
        throw new Error("a malformed chunk from the native host");
      }
      if (this.id === null) {
        if (message.index !== 0) throw new Error(`chunk ${message.index} of ${message.id} arrived without chunk 0`);
        this.id = message.id;
        this.count = message.count;
      } else if (message.id !== this.id || message.index !== this.next || message.count !== this.count) {
        const want = `${this.id} #${this.next}`;
        this.reset();
        throw new Error(`chunk ${message.id} #${message.index} arrived while ${want} was expected`);
      }
      this.size += message.data.length;
      if (this.size > MAX_JOINED_CHARS) {
        this.reset();
        throw new Error("a chunked answer over the size limit");
      }
      this.parts.push(message.data);
      this.next = message.index + 1;
      if (this.next < this.count) return null;
      const text = this.parts.join("");
      this.reset();
      return JSON.parse(text) as unknown;
    }
    if (this.id !== null) {
      const want = `${this.id} #${this.next}`;
      this.reset();
      throw new Error(`a whole message arrived while chunk ${want} was expected`);
    }
    return message;
  }

  reset(): void {
    this.id = null;
    this.next = 0;
    this.count = 0;
    this.parts = [];
    this.size = 0;
  }
}

/** The part of `chrome.runtime.Port` used here. */
export interface PortLike {
  postMessage(m: unknown): void;
  disconnect(): void;
  onMessage: { addListener(f: (m: unknown) => void): void };
  onDisconnect: { addListener(f: () => void): void };
}

export type NativeState =
  | { kind: "connecting"; attempt: number }
  | { kind: "connected"; since: number }
  /** Chrome has no manifest for the host: the person must install it. */
  | { kind: "missing"; detail: string; retryInMs: number }
  | { kind: "disconnected"; detail: string; retryInMs: number };

export type PairOutcome = { ok: true; key: string } | { ok: false; message: string };

export interface NativeDeps {
  connect(name: string): PortLike;
  /** `chrome.runtime.lastError?.message`, read inside onDisconnect. */
  lastError(): string | undefined;
  setTimer(f: () => void, ms: number): unknown;
  clearTimer(t: unknown): void;
  now(): number;
  onState(s: NativeState): void;
  /** Called on every (re)connection: pair here when there is no key yet. */
  onConnected(): void;
  /**
   * Every whole message that is neither a pairing answer nor the answer to a pending call:
   * browser-tool calls, `browser.hello` answers, `relay.down`, errors for messages without a
   * callId (./native-wire.ts routes them).
   */
  onOther?(m: Record<string, unknown>): void;
}

interface Waiter {
  resolve(v: unknown): void;
  timer: unknown;
}

/** One native port, reconnected with backoff; answers matched by `callId`, pairing by type. */
export class NativeLink {
  private port: PortLike | null = null;
  private attempt = 0;
  private retry: unknown = null;
  private joiner = new ChunkJoiner();
  private calls = new Map<string, Waiter>();
  private pairing: Waiter | null = null;
  private stopped = false;
  state: NativeState = { kind: "connecting", attempt: 0 };

  constructor(private deps: NativeDeps) {}

  start(): void {
    this.stopped = false;
    if (this.port || this.retry !== null) return;
    this.open();
  }

  stop(): void {
    this.stopped = true;
    if (this.retry !== null) this.deps.clearTimer(this.retry);
    this.retry = null;
    const p = this.port;
    this.port = null;
    p?.disconnect();
    this.failAll("the native link was stopped");
  }

  get connected(): boolean {
    return this.port !== null && this.state.kind === "connected";
  }

  private setState(s: NativeState): void {
    this.state = s;
    this.deps.onState(s);
  }

  private open(): void {
    this.retry = null;
    this.setState({ kind: "connecting", attempt: this.attempt });
    let port: PortLike;
    try {
      port = this.deps.connect(HOST_NAME);
    } catch (e) {
      this.dropped(String(e instanceof Error ? e.message : e));
      return;
    }
    this.port = port;
    this.joiner.reset();
    let alive = true;
    port.onMessage.addListener((m) => {
      if (!alive) return;
      // the first message proves the host runs (a missing host never sends one)
      if (this.state.kind !== "connected") this.markConnected();
      this.receive(m);
    });
    port.onDisconnect.addListener(() => {
      if (!alive) return;
      alive = false;
      const err = this.deps.lastError();
      if (this.port === port) this.port = null;
      this.dropped(err);
    });
    // Chrome reports a missing host only through onDisconnect, so the port counts as connected
    // once a tick passed without that (or at the first message).
    this.deps.setTimer(() => {
      if (alive && this.port === port && this.state.kind !== "connected") this.markConnected();
    }, 250);
  }

  private markConnected(): void {
    this.attempt = 0;
    this.setState({ kind: "connected", since: this.deps.now() });
    this.deps.onConnected();
  }

  private dropped(lastError: string | undefined): void {
    const d = describeDisconnect(lastError);
    this.failAll(d.missing ? d.detail : `the native host went away before answering (${lastError ?? "no reason given"}); the call did not finish — try it again once reconnected`);
    if (this.stopped) return;
    const wait = backoffDelay(this.attempt);
    this.attempt += 1;
    this.setState(d.missing ? { kind: "missing", detail: d.detail, retryInMs: wait } : { kind: "disconnected", detail: d.detail, retryInMs: wait });
    this.retry = this.deps.setTimer(() => this.open(), wait);
  }

  private failAll(message: string): void {
    for (const [id, w] of this.calls) {
      this.deps.clearTimer(w.timer);
      w.resolve({ error: message, callId: id });
    }
    this.calls.clear();
    if (this.pairing) {
      this.deps.clearTimer(this.pairing.timer);
      this.pairing.resolve({ type: "pair", error: message });
      this.pairing = null;
    }
  }

  private receive(raw: unknown): void {
    let m: unknown;
    try {
      m = this.joiner.feed(raw);
    } catch (e) {
      console.warn(`ground-link native: ${String(e)}`);
      return;
    }
    if (m === null || typeof m !== "object") return;
    const o = m as Record<string, unknown>;
    if ((o.type === "paired" || o.type === "pair") && this.pairing) {
      const w = this.pairing;
      this.pairing = null;
      this.deps.clearTimer(w.timer);
      w.resolve(o);
      return;
    }
    const id = typeof o.callId === "string" ? o.callId : null;
    const w = id !== null ? this.calls.get(id) : undefined;
    if (id !== null && w) {
      this.calls.delete(id);
      this.deps.clearTimer(w.timer);
      w.resolve(o);
      return;
    }
    this.deps.onOther?.(o);
  }

  /** Posts one message on the port (a browser-tool answer, a hello); false when there is no port. */
  send(message: unknown): boolean {
    if (!this.port) return false;
    try {
      this.port.postMessage(message);
      return true;
    } catch {
      return false;
    }
  }

  /** Send a call in the shape of POST /exec (with a callId) and wait for its answer. */
  call(message: { callId: string } & Record<string, unknown>, timeoutMs: number): Promise<Record<string, unknown>> {
    return new Promise((resolve) => {
      if (!this.port) {
        resolve({ error: "the native host is not connected", callId: message.callId });
        return;
      }
      const timer = this.deps.setTimer(() => {
        this.calls.delete(message.callId);
        resolve({ error: `no answer from the native host within ${Math.round(timeoutMs / 1000)} s`, callId: message.callId });
      }, timeoutMs);
      this.calls.set(message.callId, { resolve: (v) => resolve(v as Record<string, unknown>), timer });
      try {
        this.port.postMessage(message);
      } catch (e) {
        this.calls.delete(message.callId);
        this.deps.clearTimer(timer);
        resolve({ error: `could not send to the native host: ${String(e)}`, callId: message.callId });
      }
    });
  }

  /** Ask ground-link for the pairing key; it asks the person first. One request at a time. */
  pair(timeoutMs = PAIR_WAIT_MS): Promise<PairOutcome> {
    return new Promise((resolve) => {
      const done = (v: unknown): void => {
        const o = (typeof v === "object" && v !== null ? v : {}) as Record<string, unknown>;
        if (o.type === "paired" && typeof o.key === "string" && /^[\x21-\x7e]{16,512}$/.test(o.key)) resolve({ ok: true, key: o.key });
        else resolve({ ok: false, message: typeof o.error === "string" ? o.error : "ground-link answered the pairing request with something that is not a key" });
      };
      if (!this.port) {
        done({ error: this.state.kind === "missing" ? this.state.detail : "the native host is not connected; is ground-link running?" });
        return;
      }
      if (this.pairing) {
        done({ error: "a pairing request is already waiting for an answer in ground-link" });
        return;
      }
      const timer = this.deps.setTimer(() => {
        this.pairing = null;
        done({ error: "ground-link did not answer the pairing request in time" });
      }, timeoutMs);
      this.pairing = { resolve: done, timer };
      try {
        this.port.postMessage({ type: "pair" });
      } catch (e) {
        this.pairing = null;
        this.deps.clearTimer(timer);
        done({ error: `could not send to the native host: ${String(e)}` });
      }
    });
  }
}

/** What the popup shows of the native host's state as the worker keeps it (./native-wire.ts). */
export function nativeView(status: unknown): { show: boolean; missing: boolean; detail: string } {
  const st = (typeof status === "object" && status !== null ? status : {}) as { state?: { kind?: unknown; detail?: unknown }; pairError?: unknown };
  const kind = st.state?.kind;
  const missing = kind === "missing";
  const parts: string[] = [];
  if (kind === "disconnected" && typeof st.state?.detail === "string") parts.push(st.state.detail);
  if (typeof st.pairError === "string" && st.pairError !== "") parts.push(st.pairError);
  return { show: missing || parts.length > 0, missing, detail: parts.join(" ") };
}
