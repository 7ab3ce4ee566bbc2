// Native messaging in the worker (DESIGN §8.2): chunk joining, reconnect backoff, Chrome's
// "host not found" turned into the install command, and pairing over the port — driven through
// NativeLink with a scripted port and fake timers (no browser here; the e2e uses a real one).
import { describe, expect, it } from "vitest";
import {
  backoffDelay,
  ChunkJoiner,
  describeDisconnect,
  FIRST_BACKOFF_MS,
  HOST_NAME,
  INSTALL_COMMAND,
  MAX_BACKOFF_MS,
  NativeLink,
  nativeView,
  type NativeState,
  type PortLike,
} from "../src/background/native";

/** Splits `value`'s JSON text into chunk frames of `size` characters, as the host does. */
function chunks(value: unknown, size: number, id = "a1"): unknown[] {
  const text = JSON.stringify(value);
  const parts: string[] = [];
  for (let i = 0; i < text.length; i += size) parts.push(text.slice(i, i + size));
  return parts.map((data, index) => ({ type: "chunk", id, index, count: parts.length, data }));
}

describe("ChunkJoiner", () => {
  it("passes whole messages through and joins chunks back into the answer", () => {
    const j = new ChunkJoiner();
    expect(j.feed({ status: "success", callId: "c1" })).toEqual({ status: "success", callId: "c1" });
    const big = { status: "success", callId: "c2", output: "x€😀".repeat(5000) };
    const frames = chunks(big, 777);
    expect(frames.length).toBeGreaterThan(10);
    const out = frames.map((f) => j.feed(f));
    expect(out.slice(0, -1).every((o) => o === null)).toBe(true);
    expect(out.at(-1)).toEqual(big);
    // the joiner is ready for the next answer
    expect(j.feed({ callId: "c3" })).toEqual({ callId: "c3" });
  });

  it("refuses pieces out of order, of another answer, or a whole message in the middle", () => {
    const j = new ChunkJoiner();
    const [a0, a1, a2] = chunks({ output: "y".repeat(30) }, 12, "a1");
    expect(() => j.feed(a1)).toThrow(/without chunk 0/);
    j.feed(a0);
    expect(() => j.feed(a2)).toThrow(/a1 #1 was expected/);
    const [b0, b1] = chunks({ output: "z".repeat(20) }, 15, "b");
    j.feed(b0);
    expect(() => j.feed({ callId: "c9" })).toThrow(/whole message arrived/);
    j.feed(b0);
    expect(() => j.feed({ ...(b1 as object), id: "other" })).toThrow(/other #1 arrived while b #1/);
    expect(() => j.feed({ type: "chunk", id: "x", index: 3, count: 2, data: "" })).toThrow(/malformed/);
  });
});

describe("backoff", () => {
  it("doubles from one second and stops at the cap", () => {
    expect([0, 1, 2, 3, 4].map(backoffDelay)).toEqual([1000, 2000, 4000, 8000, 16000]);
    expect(backoffDelay(5)).toBe(MAX_BACKOFF_MS);
    expect(backoffDelay(500)).toBe(MAX_BACKOFF_MS);
    expect(backoffDelay(-3)).toBe(FIRST_BACKOFF_MS);
  });
});

describe("host not found", () => {
  it("turns Chrome's lastError into the command that installs the host", () => {
    const d = describeDisconnect("Specified native messaging host not found.");
    expect(d.missing).toBe(true);
    expect(d.detail).toContain(INSTALL_COMMAND);
    const other = describeDisconnect("Native host has exited.");
    expect(other.missing).toBe(false);
    expect(other.detail).toContain("Native host has exited.");
    expect(describeDisconnect("Access to the specified native messaging host is forbidden.").detail).toContain(INSTALL_COMMAND);
  });

  it("the popup view shows the missing host, a failed pairing, or nothing", () => {
    expect(nativeView({ state: { kind: "missing", detail: "d", retryInMs: 1 } })).toMatchObject({ show: true, missing: true });
    expect(nativeView({ state: { kind: "connected", since: 1 }, pairError: "pairing refused: no" })).toEqual({ show: true, missing: false, detail: "pairing refused: no" });
    expect(nativeView({ state: { kind: "connected", since: 1 } }).show).toBe(false);
    expect(nativeView(undefined).show).toBe(false);
  });
});

/** A scripted Chrome: ports it hands out, timers run by hand, lastError per disconnect. */
class FakeChrome {
  ports: FakePort[] = [];
  timers: { f: () => void; at: number; id: number; live: boolean }[] = [];
  time = 0;
  lastErr: string | undefined;
  states: NativeState[] = [];
  connectedCalls = 0;
  missing = false;
  /** What the link passed on as neither a pairing nor a call's answer. */
  others: Record<string, unknown>[] = [];
  private nextId = 1;

  link(): NativeLink {
    return new NativeLink({
      connect: (name) => {
        expect(name).toBe(HOST_NAME);
        const p = new FakePort();
        this.ports.push(p);
        if (this.missing) this.after(0, () => p.drop());
        return p;
      },
      lastError: () => this.lastErr,
      setTimer: (f, ms) => this.after(ms, f),
      clearTimer: (t) => {
        const x = this.timers.find((tm) => tm.id === t);
        if (x) x.live = false;
      },
      now: () => this.time,
      onState: (s) => this.states.push(s),
      onConnected: () => (this.connectedCalls += 1),
      onOther: (m) => this.others.push(m),
    });
  }

  after(ms: number, f: () => void): number {
    const id = this.nextId++;
    this.timers.push({ f, at: this.time + ms, id, live: true });
    return id;
  }

  /** Advance the clock, running due timers in order. */
  advance(ms: number): void {
    const end = this.time + ms;
    for (;;) {
      const due = this.timers.filter((t) => t.live && t.at <= end).sort((a, b) => a.at - b.at)[0];
      if (!due) break;
      due.live = false;
      this.time = due.at;
      due.f();
    }
    this.time = end;
  }
}

class FakePort implements PortLike {
  sent: unknown[] = [];
  closed = false;
  private onMsg: ((m: unknown) => void)[] = [];
  private onDrop: (() => void)[] = [];
  onMessage = { addListener: (f: (m: unknown) => void) => void this.onMsg.push(f) };
  onDisconnect = { addListener: (f: () => void) => void this.onDrop.push(f) };
  postMessage(m: unknown): void {
    if (this.closed) throw new Error("Attempting to use a disconnected port object");
    this.sent.push(m);
  }
  disconnect(): void {
    this.closed = true;
  }
  deliver(m: unknown): void {
    for (const f of this.onMsg) f(m);
  }
  drop(): void {
    this.closed = true;
    for (const f of this.onDrop) f();
  }
}

describe("NativeLink", () => {
  it("reconnects after the host dies, with growing then capped waits, and resets once connected", () => {
    const c = new FakeChrome();
    const link = c.link();
    link.start();
    c.advance(300);
    expect(link.connected).toBe(true);
    expect(c.connectedCalls).toBe(1);
    c.lastErr = "Native host has exited.";
    const waits: number[] = [];
    for (let i = 0; i < 7; i++) {
      c.ports.at(-1)?.drop();
      const s = c.states.at(-1);
      expect(s?.kind).toBe("disconnected");
      if (s?.kind === "disconnected") waits.push(s.retryInMs);
      const before = c.ports.length;
      c.advance(s?.kind === "disconnected" ? s.retryInMs - 1 : 0);
      expect(c.ports.length).toBe(before); // not before the wait is over
      c.advance(1);
      expect(c.ports.length).toBe(before + 1);
      // dropped again before it counted as connected: the wait keeps growing
    }
    expect(waits).toEqual([1000, 2000, 4000, 8000, 16000, 30000, 30000]);
    c.advance(300);
    expect(link.connected).toBe(true);
    c.ports.at(-1)?.drop();
    const s = c.states.at(-1);
    expect(s?.kind === "disconnected" && s.retryInMs).toBe(1000);
  });

  it("a missing host is reported as such and retried", () => {
    const c = new FakeChrome();
    c.missing = true;
    c.lastErr = "Specified native messaging host not found.";
    const link = c.link();
    link.start();
    c.advance(0);
    const s = c.states.at(-1);
    expect(s?.kind).toBe("missing");
    expect(s?.kind === "missing" && s.detail).toContain(INSTALL_COMMAND);
    expect(link.connected).toBe(false);
    c.advance(1000);
    expect(c.ports.length).toBe(2);
  });

  it("matches answers by callId, joins a chunked one, and fails a call whose host died", async () => {
    const c = new FakeChrome();
    const link = c.link();
    link.start();
    c.advance(300);
    const port = c.ports[0]!;
    const first = link.call({ callId: "c1", name: "read_file", args: {} }, 60_000);
    const second = link.call({ callId: "c2", name: "list_dir", args: {} }, 60_000);
    expect(port.sent).toHaveLength(2);
    const big = { callId: "c2", status: "success", output: "q".repeat(3000) };
    for (const f of chunks(big, 1000, "a7")) port.deliver(f);
    port.deliver({ callId: "c1", status: "denied" });
    expect(await second).toEqual(big);
    expect(await first).toEqual({ callId: "c1", status: "denied" });
    const third = link.call({ callId: "c3", name: "read_file", args: {} }, 60_000);
    c.lastErr = "Native host has exited.";
    port.drop();
    const r = await third;
    expect(r.callId).toBe("c3");
    expect(String(r.error)).toMatch(/went away before answering.*try it again/);
    c.advance(1000);
    c.advance(300);
    expect(link.connected).toBe(true);
    const fourth = link.call({ callId: "c4", name: "read_file", args: {} }, 60_000);
    c.ports[1]!.deliver({ callId: "c4", status: "success" });
    expect((await fourth).status).toBe("success");
  });

  it("passes on what is not a call's answer (browser calls, hello answers, relay.down), joined from chunks, and sends on the port", async () => {
    const c = new FakeChrome();
    const link = c.link();
    link.start();
    c.advance(300);
    const port = c.ports[0]!;
    const pending = link.call({ callId: "c1", name: "read_file", args: {} }, 60_000);
    const big = { type: "browser.call", id: "b1", op: "run", tool: "input_text", args: { ref: "e1", text: "t".repeat(2500) }, expect: { tabId: 1, origin: "https://a.example" } };
    for (const f of chunks(big, 1000, "a9")) port.deliver(f);
    port.deliver({ type: "relay.down" });
    port.deliver({ error: "ground-link is not running" });
    port.deliver({ callId: "c1", status: "success" });
    expect(await pending).toEqual({ callId: "c1", status: "success" });
    expect(c.others).toEqual([big, { type: "relay.down" }, { error: "ground-link is not running" }]);
    expect(link.send({ type: "browser.result", id: "b1", ok: true, text: "typed" })).toBe(true);
    expect(port.sent.at(-1)).toEqual({ type: "browser.result", id: "b1", ok: true, text: "typed" });
    c.lastErr = "Native host has exited.";
    port.drop();
    expect(link.send({ type: "browser.hello", tools: true })).toBe(false);
  });

  it("pairs: sends {type:pair}, takes the key from {type:paired}, reports a refusal", async () => {
    const c = new FakeChrome();
    const link = c.link();
    link.start();
    c.advance(300);
    const port = c.ports[0]!;
    const p = link.pair();
    expect(port.sent).toEqual([{ type: "pair" }]);
    expect(await link.pair()).toEqual({ ok: false, message: "a pairing request is already waiting for an answer in ground-link" });
    port.deliver({ type: "paired", key: "k".repeat(64) });
    expect(await p).toEqual({ ok: true, key: "k".repeat(64) });
    const refused = link.pair();
    port.deliver({ type: "pair", error: "pairing refused: the person refused to pair this extension" });
    expect(await refused).toEqual({ ok: false, message: "pairing refused: the person refused to pair this extension" });
    // a key in the wrong shape is not accepted as one
    const odd = link.pair();
    port.deliver({ type: "paired", key: "short" });
    expect((await odd).ok).toBe(false);
  });

  it("pairing without a host says the host is missing and how to install it", async () => {
    const c = new FakeChrome();
    c.missing = true;
    c.lastErr = "Specified native messaging host not found.";
    const link = c.link();
    link.start();
    c.advance(0);
    const r = await link.pair();
    expect(r.ok).toBe(false);
    expect(!r.ok && r.message).toContain(INSTALL_COMMAND);
  });
});
