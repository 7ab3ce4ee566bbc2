// browser.hello over the native port (DESIGN §8.3): sent on connect, on a switch change and
// after relay.down, with the switch's current value; retried after 1 s doubling to 30 s while
// the host answers an error (never faster), and stopped by the bridge's acknowledgement. Also
// the routing of the host's other messages: a browser.call gets exactly one browser.result.
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { BrowserHello, HELLO_ANSWER_MS } from "../src/background/browser-hello";
import { routeNative } from "../src/background/native-wire";
import type { BrowserResult } from "../src/background/browser-tools";

let sent: { at: number; m: unknown }[];
let switchOn: boolean;
let portUp: boolean;
let hello: BrowserHello;

beforeEach(() => {
  vi.useFakeTimers();
  sent = [];
  switchOn = false;
  portUp = true;
  hello = new BrowserHello({
    send: (m) => {
      if (!portUp) return false;
      sent.push({ at: Date.now(), m });
      return true;
    },
    enabled: async () => switchOn,
    setTimer: (f, ms) => setTimeout(f, ms),
    clearTimer: (t) => clearTimeout(t as ReturnType<typeof setTimeout>),
    now: () => Date.now(),
  });
});

afterEach(() => vi.useRealTimers());

const NOT_RUNNING = { error: "ground-link is not running (nothing answers on /run/user/1/ground-link/native.sock : No such file); start the ground-link app" };
const hellos = () => sent.filter((s) => (s.m as { type?: string }).type === "browser.hello");

describe("browser.hello", () => {
  it("retries after errors at 1, 2, 4, 8, 16, 30, 30 s — never sooner — then stops once acknowledged", async () => {
    const t0 = Date.now();
    hello.restart();
    await vi.advanceTimersByTimeAsync(0);
    expect(sent.map((s) => s.m)).toEqual([{ type: "browser.hello", tools: false }]);
    const gaps: number[] = [];
    for (let i = 0; i < 7; i++) {
      const before = hellos().length;
      const last = hellos().at(-1)!.at;
      expect(hello.onMessage(NOT_RUNNING)).toBe(true);
      // nothing goes out before the wait is over
      const expected = [1000, 2000, 4000, 8000, 16000, 30000, 30000][i]!;
      await vi.advanceTimersByTimeAsync(expected - 1);
      expect(hellos().length).toBe(before);
      await vi.advanceTimersByTimeAsync(1);
      expect(hellos().length).toBe(before + 1);
      gaps.push(hellos().at(-1)!.at - last);
    }
    expect(gaps).toEqual([1000, 2000, 4000, 8000, 16000, 30000, 30000]);
    expect(hello.onMessage({ type: "browser.hello", ok: true })).toBe(true);
    expect(hello.acknowledged).toBe(true);
    await vi.advanceTimersByTimeAsync(120_000);
    expect(hellos().length).toBe(8);
    expect(Date.now() - t0).toBeGreaterThan(90_000);
    expect(hello.history.at(-1)?.answer).toBe("ok");
    expect(hello.history[0]?.answer).toContain("ground-link is not running");
  });

  it("an old bridge's error for the unknown message is retried the same way (no spinning)", async () => {
    hello.restart();
    await vi.advanceTimersByTimeAsync(0);
    for (let i = 0; i < 20; i++) {
      hello.onMessage({ error: "unknown variant `browser.hello`" });
      await vi.advanceTimersByTimeAsync(500);
    }
    // 20 errors in 10 s: at most the hellos the backoff allows (t=0, 1 s, 3 s, 7 s)
    expect(hellos().length).toBeLessThanOrEqual(4);
  });

  it("a hello with no answer at all is sent again after the answer wait", async () => {
    hello.restart();
    await vi.advanceTimersByTimeAsync(HELLO_ANSWER_MS - 1);
    expect(hellos()).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(1 + 1000);
    expect(hellos()).toHaveLength(2);
  });

  it("a switch change says hello again at once with the new value, and backoff starts over", async () => {
    hello.restart();
    await vi.advanceTimersByTimeAsync(0);
    for (let i = 0; i < 4; i++) {
      hello.onMessage(NOT_RUNNING);
      await vi.advanceTimersByTimeAsync(30_000);
    }
    const before = hellos().length;
    switchOn = true;
    hello.restart();
    await vi.advanceTimersByTimeAsync(0);
    expect(hellos().length).toBe(before + 1);
    expect(hellos().at(-1)?.m).toEqual({ type: "browser.hello", tools: true });
    hello.onMessage(NOT_RUNNING);
    await vi.advanceTimersByTimeAsync(1000);
    expect(hellos().length).toBe(before + 2);
  });

  it("leaves errors that belong to a call (callId) or a pairing (type) alone, and errors when no hello waits", async () => {
    hello.restart();
    await vi.advanceTimersByTimeAsync(0);
    expect(hello.onMessage({ error: "x", callId: "c1" })).toBe(false);
    expect(hello.onMessage({ type: "pair", error: "pairing refused" })).toBe(false);
    hello.onMessage({ type: "browser.hello", ok: true });
    expect(hello.onMessage(NOT_RUNNING)).toBe(false);
    await vi.advanceTimersByTimeAsync(60_000);
    expect(hellos()).toHaveLength(1);
  });

  it("no port: nothing is retried until the next connect restarts it", async () => {
    portUp = false;
    hello.restart();
    await vi.advanceTimersByTimeAsync(60_000);
    expect(sent).toEqual([]);
    expect(hello.history.at(-1)?.answer).toBe("no native port");
    portUp = true;
    hello.restart();
    await vi.advanceTimersByTimeAsync(0);
    expect(hellos()).toHaveLength(1);
  });
});

describe("routing the host's messages", () => {
  it("relay.down says hello again at once (the host reconnects to the bridge on it)", async () => {
    hello.restart();
    await vi.advanceTimersByTimeAsync(0);
    hello.onMessage({ type: "browser.hello", ok: true });
    const browser = { handle: vi.fn() };
    routeNative({ type: "relay.down" }, { browser, hello, send: () => true });
    await vi.advanceTimersByTimeAsync(0);
    expect(hellos()).toHaveLength(2);
    expect(hello.acknowledged).toBe(false);
    // the bridge is still away: the error answer backs off from 1 s again
    routeNative(NOT_RUNNING, { browser, hello, send: () => true });
    await vi.advanceTimersByTimeAsync(999);
    expect(hellos()).toHaveLength(2);
    await vi.advanceTimersByTimeAsync(1);
    expect(hellos()).toHaveLength(3);
    expect(browser.handle).not.toHaveBeenCalled();
  });

  it("a browser.call goes to the dispatcher and its one answer back on the port", async () => {
    const answer: BrowserResult = { type: "browser.result", id: "b7", ok: false, error: "browser tools are switched off in the ground-link extension" };
    const browser = { handle: vi.fn(async () => answer) };
    const out: unknown[] = [];
    const call = { type: "browser.call", id: "b7", op: "read", uri: "browser://tabs" };
    routeNative(call, { browser, hello, send: (r) => (out.push(r), true) });
    await vi.advanceTimersByTimeAsync(0);
    expect(browser.handle).toHaveBeenCalledWith(call);
    expect(out).toEqual([answer]);
    expect(hellos()).toHaveLength(0);
  });
});
