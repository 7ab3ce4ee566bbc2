/**
 * Wires {@link NativeLink} to Chrome: one native port for the worker's lifetime (an open native
 * port also keeps an MV3 worker alive), its state kept in `chrome.storage.local` under `native`
 * for the popup, and pairing through it when the extension has no key.
 *
 * A key received this way is stored exactly where a pasted `ground-link token` goes
 * (`token` in storage.local), so everything after pairing is the same either way.
 *
 * Pairing is asked for on its own only while there is no key, and not again after the person
 * refused (until they press "Pair through ground-link" in the popup): a refusal must not turn
 * into a stream of questions.
 */

import { NativeLink, type NativeState, type PairOutcome } from "./native";
import { BrowserHello } from "./browser-hello";
import { BrowserTools, chromeBrowserApi, type BrowserResult } from "./browser-tools";
import { PageBridge, type PageToolsMessage, type TabFrames } from "./page-bridge";
import { pageToolsKey } from "./page-tools";
import type { KV } from "../shared/store";
import { BROWSER_TOOLS_KEY } from "../shared/browser-switch";
import { appendLog } from "../shared/oplog";
import type { FrameReport } from "../shared/webmcp";
import type { TabReply } from "../shared/protocol";

export interface NativeStatus {
  state: NativeState;
  /** The last pairing attempt's outcome, when it failed. */
  pairError?: string;
  /** The person refused: no automatic pairing until they ask for it. */
  refused?: boolean;
}

const TOKEN_SHAPE = /^[\x21-\x7e]{16,512}$/;

/**
 * Where a message from the host that is not a pairing or call answer goes: a `browser.call` to
 * the dispatcher (its one answer back on the port), `relay.down` restarts the hello, anything
 * else may answer the hello.
 */
export function routeNative(
  m: Record<string, unknown>,
  to: { browser: Pick<BrowserTools, "handle">; hello: Pick<BrowserHello, "restart" | "onMessage">; send(r: BrowserResult): boolean },
): void {
  if (m.type === "browser.call") {
    // the answer goes on whatever port is open when it is ready (the bridge holds calls for a
    // reconnecting browser for a few seconds)
    void to.browser.handle(m).then((r) => {
      if (!to.send(r)) console.warn(`ground-link: no native port for the answer to browser call ${r.id}`);
    });
    return;
  }
  if (m.type === "relay.down") {
    to.hello.restart();
    return;
  }
  to.hello.onMessage(m);
}

export interface NativeWiring {
  link: NativeLink;
  pairNow(manual: boolean): Promise<PairOutcome>;
  hello: BrowserHello;
  browser: BrowserTools;
  pageTools: PageBridge;
}

/** Every tab's frame reports from storage.session, for tabs that still exist. */
async function readTabFrames(): Promise<TabFrames[]> {
  const [all, tabs] = await Promise.all([chrome.storage.session.get(null), chrome.tabs.query({})]);
  const open = new Set(tabs.map((t) => t.id).filter((id): id is number => id !== undefined));
  const out: TabFrames[] = [];
  for (const tabId of open) {
    const got = all[pageToolsKey(tabId)] as Record<string, FrameReport> | undefined;
    if (got && typeof got === "object") out.push({ tabId, frames: Object.values(got) });
  }
  return out;
}

export function startNative(kv: KV): NativeWiring {
  let status: NativeStatus = { state: { kind: "connecting", attempt: 0 } };
  const save = (s: Partial<NativeStatus>): void => {
    status = { ...status, ...s };
    void kv.set({ native: status });
  };

  let inFlight: Promise<PairOutcome> | null = null;
  const pairNow = async (manual: boolean): Promise<PairOutcome> => {
    if (inFlight) return inFlight;
    if (!manual) {
      const got = await kv.get(["token", "native"]);
      const had = got.native as NativeStatus | undefined;
      if (typeof got.token === "string" && TOKEN_SHAPE.test(got.token)) return { ok: true, key: got.token };
      if (had?.refused) return { ok: false, message: had.pairError ?? "pairing was refused" };
    }
    inFlight = (async () => {
      const r = await link.pair();
      if (r.ok) {
        // the same place a pasted token goes: storage.onChanged re-checks the bridge with it
        await kv.set({ token: r.key });
        save({ pairError: undefined, refused: false });
      } else {
        // a refusal by the person (or by --approval deny) stops automatic retries; a host or
        // app that is away does not
        save({ pairError: r.message, refused: /refused/i.test(r.message) });
      }
      return r;
    })();
    try {
      return await inFlight;
    } finally {
      inFlight = null;
    }
  };

  const timers = {
    setTimer: (f: () => void, ms: number): unknown => setTimeout(f, ms),
    clearTimer: (t: unknown) => clearTimeout(t as ReturnType<typeof setTimeout>),
    now: () => Date.now(),
  };
  const enabled = async (): Promise<boolean> => (await kv.get([BROWSER_TOOLS_KEY]))[BROWSER_TOOLS_KEY] === true;
  const pageTools = new PageBridge({
    readTabs: readTabFrames,
    enabled,
    ready: () => hello.acknowledged,
    send: (m) => link.send(m),
    toFrame: (tabId, frameId, m) => chrome.tabs.sendMessage(tabId, m, { frameId }) as Promise<TabReply | undefined>,
    log: (e) => appendLog(kv, e),
    warn: (m) => console.warn(m),
    newId: () => crypto.randomUUID(),
    ...timers,
  });
  const browser = new BrowserTools({ api: chromeBrowserApi(), enabled, pageTools, ...timers });
  const hello: BrowserHello = new BrowserHello({ send: (m) => link.send(m), enabled, onAcknowledged: () => void pageTools.announceNow(), ...timers });

  const onOther = (m: Record<string, unknown>): void => routeNative(m, { browser, hello, send: (r) => link.send(r) });

  const link: NativeLink = new NativeLink({
    connect: (name) => chrome.runtime.connectNative(name),
    lastError: () => chrome.runtime.lastError?.message,
    ...timers,
    onState: (state) => {
      if (state.kind !== "connected") hello.stop();
      save({ state });
    },
    onConnected: () => {
      hello.restart();
      void pairNow(false);
    },
    onOther,
  });
  (globalThis as unknown as { __groundLinkNative: NativeLink }).__groundLinkNative = link;
  // for the e2e, like __groundLinkNative: the dispatcher as the bridge would call it, and the hellos sent
  // and the page-tools list as it would be sent now, and the lists built for the bridge so far
  (globalThis as unknown as { __groundLinkBrowser: { handle(m: unknown): Promise<BrowserResult>; hello: BrowserHello; pageTools(): Promise<PageToolsMessage>; pageTools_: PageBridge } }).__groundLinkBrowser = {
    handle: (m) => browser.handle(m),
    hello,
    pageTools: async () => (await pageTools.message()).message,
    pageTools_: pageTools,
  };
  link.start();
  return { link, pairNow, hello, browser, pageTools };
}
