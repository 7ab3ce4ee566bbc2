// The browser-tools dispatcher (DESIGN §8.3) with a scripted Chrome: every field of a
// browser.call checked (errors name the field), exactly one answer per call — within the
// deadline even when the page never answers or the tab closes — the switch, the never-list, the
// approved tab and origin, and the resources.
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { BrowserTools, CALL_DEADLINE_MS, SWITCHED_OFF, TOOL_NAMES, type BrowserApi, type BrowserResult, type TabInfo } from "../src/background/browser-tools";
import type { PageRequest } from "../src/background/page-ops";

class FakeApi implements BrowserApi {
  tabs_: Map<number, TabInfo> = new Map();
  calls: string[] = [];
  nextId = 100;
  focusedWindow = 1;
  /** What the page answers; a never-settling promise stands for a page that hangs. */
  page: (tabId: number, req: PageRequest) => Promise<unknown> = async () => ({ ok: true, text: "" });
  /** How a navigation goes: the states the tab passes through on the next gets. */
  loadSteps: Partial<TabInfo>[] = [{ status: "loading" }, { status: "complete" }];

  add(t: Partial<TabInfo> & { id: number }): void {
    this.tabs_.set(t.id, { active: false, windowId: 1, status: "complete", ...t });
  }

  tabs = {
    get: async (id: number): Promise<TabInfo> => {
      this.calls.push(`get ${id}`);
      const t = this.tabs_.get(id);
      if (!t) throw new Error(`No tab with id: ${id}.`);
      const step = (t as TabInfo & { steps?: Partial<TabInfo>[] }).steps?.shift();
      if (step) Object.assign(t, step);
      return { ...t };
    },
    query: async (q: { active?: boolean; windowId?: number }): Promise<TabInfo[]> =>
      [...this.tabs_.values()].filter((t) => (q.active === undefined || t.active === q.active) && (q.windowId === undefined || t.windowId === q.windowId)).map((t) => ({ ...t })),
    update: async (id: number, p: { url?: string; active?: boolean }): Promise<TabInfo | undefined> => {
      this.calls.push(`update ${id} ${JSON.stringify(p)}`);
      const t = this.tabs_.get(id);
      if (!t) throw new Error(`No tab with id: ${id}.`);
      if (p.url) (t as TabInfo & { steps?: Partial<TabInfo>[] }).steps = [...this.loadSteps.slice(0, -1), { ...this.loadSteps.at(-1), url: p.url, title: "Loaded page" }];
      if (p.active) t.active = true;
      return { ...t };
    },
    create: async (p: { url: string; active: boolean }): Promise<TabInfo> => {
      this.calls.push(`create ${p.url}`);
      const id = this.nextId++;
      this.add({ id, url: "", status: "loading", active: true });
      (this.tabs_.get(id) as TabInfo & { steps?: Partial<TabInfo>[] }).steps = [{ status: "complete", url: p.url, title: "New page" }];
      return { id, active: true, windowId: 1 };
    },
    remove: async (id: number): Promise<void> => {
      this.calls.push(`remove ${id}`);
      this.tabs_.delete(id);
    },
  };
  windows = {
    getLastFocused: async () => ({ id: this.focusedWindow }),
    update: async (id: number) => {
      this.calls.push(`focus window ${id}`);
      return {};
    },
  };
  runInPage = (tabId: number, req: PageRequest): Promise<unknown> => {
    this.calls.push(`page ${tabId} ${req.op}`);
    return this.page(tabId, req);
  };
}

let api: FakeApi;
let on: boolean;
let tools: BrowserTools;

beforeEach(() => {
  vi.useFakeTimers();
  api = new FakeApi();
  api.add({ id: 1, url: "http://127.0.0.1:8123/form.html", title: "Form", active: true });
  api.add({ id: 2, url: "https://chat.deepseek.com/a/chat/s/1", title: "DeepSeek" });
  api.add({ id: 3, title: "Settings" }); // no host access: Chrome hides url and title
  api.add({ id: 4, url: "file:///etc/passwd", title: "passwd" });
  on = true;
  tools = new BrowserTools({ api, enabled: async () => on, setTimer: (f, ms) => setTimeout(f, ms), clearTimer: (t) => clearTimeout(t as ReturnType<typeof setTimeout>), now: () => Date.now() });
});

afterEach(() => vi.useRealTimers());

/** Runs a call to its answer, moving the fake clock along (page polls, load waits, the deadline). */
async function call(m: Record<string, unknown>): Promise<BrowserResult> {
  let answers = 0;
  let out: BrowserResult | null = null;
  void tools.handle(m).then((r) => {
    answers += 1;
    out = r;
  });
  for (let i = 0; i < 400 && !out; i++) await vi.advanceTimersByTimeAsync(100);
  await vi.advanceTimersByTimeAsync(CALL_DEADLINE_MS + 1000);
  expect(answers).toBe(1);
  expect(out).not.toBeNull();
  return out as unknown as BrowserResult;
}

const errorOf = (r: BrowserResult): string => (r.ok ? `(ok: ${JSON.stringify(r)})` : r.error);
const bc = (m: Record<string, unknown>) => ({ type: "browser.call", id: "c1", ...m });
const exp = (tabId = 1, origin = "http://127.0.0.1:8123") => ({ tabId, origin });

describe("validation: every field checked, the answer names it and keeps the id", () => {
  const CASES: [what: string, msg: unknown, error: RegExp, id?: string][] = [
    ["not an object", "hello", /must be a JSON object/, ""],
    ["an array", [1], /must be a JSON object/, ""],
    ["wrong type", { type: "browser.calls", id: "c1", op: "read", uri: "browser://tabs" }, /type must be "browser.call"/],
    ["no id", { type: "browser.call", op: "read", uri: "browser://tabs" }, /id must be a non-empty string/, ""],
    ["numeric id", { type: "browser.call", id: 7, op: "read", uri: "browser://tabs" }, /id must be/, ""],
    ["unknown op", bc({ op: "execute", tool: "snapshot_page", args: {} }), /op must be "inspect", "run", "read" or "page", not "execute"/],
    ["missing op", bc({ tool: "snapshot_page", args: {} }), /op must be/],
    ["unknown tool", bc({ op: "inspect", tool: "exec_cmd", args: {} }), /tool "exec_cmd" is not a browser tool; the browser tools are navigate_to, click_element/],
    ["missing tool", bc({ op: "inspect", args: {} }), /tool undefined is not a browser tool/],
    ["args not an object", bc({ op: "inspect", tool: "snapshot_page", args: "x" }), /args of snapshot_page must be a JSON object/],
    ["navigate_to without url", bc({ op: "inspect", tool: "navigate_to", args: {} }), /navigate_to needs args.url/],
    ["url not a string", bc({ op: "inspect", tool: "open_tab", args: { url: 5 } }), /open_tab needs args.url/],
    ["tabId a string", bc({ op: "inspect", tool: "snapshot_page", args: { tabId: "1" } }), /args.tabId of snapshot_page must be a tab id/],
    ["tabId negative", bc({ op: "inspect", tool: "navigate_to", args: { url: "https://a.example/", tabId: -1 } }), /args.tabId of navigate_to/],
    ["tabId fractional", bc({ op: "inspect", tool: "close_tab", args: { tabId: 1.5 } }), /args.tabId of close_tab/],
    ["close_tab without tabId", bc({ op: "inspect", tool: "close_tab", args: {} }), /close_tab needs args.tabId/],
    ["switch_tab without tabId", bc({ op: "inspect", tool: "switch_tab" }), /switch_tab needs args.tabId/],
    ["click without ref or selector", bc({ op: "inspect", tool: "click_element", args: {} }), /click_element needs args.ref .* or args.selector/],
    ["a ref of the wrong shape", bc({ op: "inspect", tool: "click_element", args: { ref: "12" } }), /args.ref of click_element must be a ref from snapshot_page/],
    ["a selector not a string", bc({ op: "inspect", tool: "submit_form", args: { selector: 3 } }), /args.selector of submit_form must be a CSS selector/],
    ["input_text without text", bc({ op: "inspect", tool: "input_text", args: { ref: "e1" } }), /input_text needs args.text/],
    ["input_text with numeric text", bc({ op: "inspect", tool: "input_text", args: { ref: "e1", text: 5 } }), /input_text needs args.text/],
    ["run without expect", bc({ op: "run", tool: "click_element", args: { ref: "e1" } }), /a run of click_element needs expect \{tabId, origin\}/],
    ["expect without origin", bc({ op: "run", tool: "click_element", args: { ref: "e1" }, expect: { tabId: 1 } }), /expect.origin must be/],
    ["expect with a bad tabId", bc({ op: "run", tool: "close_tab", args: { tabId: 1 }, expect: { tabId: "1", origin: "x" } }), /expect.tabId must be/],
    ["read without uri", bc({ op: "read" }), /a read needs uri, one of browser:\/\/tabs, browser:\/\/current\/state, browser:\/\/current\/dom/],
    ["read of an unknown uri", bc({ op: "read", uri: "browser://history" }), /unknown resource "browser:\/\/history"; the browser resources are browser:\/\/tabs/],
  ];
  it.each(CASES)("%s", async (_what, msg, error, id = "c1") => {
    const r = await call(msg as Record<string, unknown>);
    expect(r.type).toBe("browser.result");
    expect(r.id).toBe(id);
    expect(r.ok).toBe(false);
    expect(errorOf(r)).toMatch(error);
  });
});

describe("the switch", () => {
  it("off: every call of every op is refused, and Chrome is not touched", async () => {
    on = false;
    const msgs = [
      ...TOOL_NAMES.map((tool) => bc({ op: "inspect", tool, args: { url: "https://a.example/", tabId: 1, ref: "e1", text: "x" } })),
      ...TOOL_NAMES.map((tool) => bc({ op: "run", tool, args: { url: "https://a.example/", tabId: 1, ref: "e1", text: "x" }, expect: exp() })),
      bc({ op: "read", uri: "browser://tabs" }),
      bc({ op: "read", uri: "browser://current/dom" }),
      // malformed calls too: what the bridge needs to hear is that the switch is off
      bc({ op: "inspect", tool: "exec_cmd", args: {} }),
      bc({ op: "fly" }),
    ];
    for (const m of msgs) {
      const r = await call(m);
      expect(errorOf(r), JSON.stringify(m)).toBe(SWITCHED_OFF);
    }
    expect(api.calls).toEqual([]);
  });
});

describe("inspect", () => {
  it("navigate_to: the tab, its origin's URL and the destination resolved against it", async () => {
    const r = await call(bc({ op: "inspect", tool: "navigate_to", args: { url: "/next?x=1" } }));
    expect(r).toEqual({ type: "browser.result", id: "c1", ok: true, target: { tabId: 1, url: "http://127.0.0.1:8123/form.html", title: "Form", destination: "http://127.0.0.1:8123/next?x=1", chatTab: false } });
  });

  it("marks a chat site's tab, and reports the element a ref resolves to now", async () => {
    api.page = async (_t, req) => (req.op === "describe" ? { ok: true, text: "", element: { tag: "input", role: "textbox", name: "Password", inputType: "password", inForm: true } } : { ok: false, error: "?" });
    const r = await call(bc({ op: "inspect", tool: "input_text", args: { ref: "e3", text: "x", tabId: 2 } }));
    expect(r.ok && r.target).toEqual({ tabId: 2, url: "https://chat.deepseek.com/a/chat/s/1", title: "DeepSeek", chatTab: true, element: { tag: "input", role: "textbox", name: "Password", inputType: "password", inForm: true } });
    expect(api.calls).toContain("page 2 describe");
  });

  it("open_tab: no tab yet, the destination only", async () => {
    const r = await call(bc({ op: "inspect", tool: "open_tab", args: { url: "https://example.com/a b" } }));
    expect(r.ok && r.target).toEqual({ tabId: null, url: null, title: "", destination: "https://example.com/a%20b", chatTab: false });
  });

  it("refuses never-URLs as a destination and tabs that show one, and tabs it cannot see", async () => {
    for (const url of ["chrome://settings", "file:///etc/passwd", " javascript:alert(1)", "https://chromewebstore.google.com/detail/x", "about:config", "data:text/html,x"]) {
      expect(errorOf(await call(bc({ op: "inspect", tool: "navigate_to", args: { url } }))), url).toMatch(/never|http\(s\)/);
      expect(errorOf(await call(bc({ op: "inspect", tool: "open_tab", args: { url } }))), url).toMatch(/never|http\(s\)/);
    }
    expect(errorOf(await call(bc({ op: "inspect", tool: "snapshot_page", args: { tabId: 4 } })))).toMatch(/tab 4 shows a page browser tools never touch: .*file:/);
    expect(errorOf(await call(bc({ op: "inspect", tool: "click_element", args: { tabId: 3, ref: "e1" } })))).toBe(
      "ground-link has no access to tab 3; switch on browser tools for all sites in the ground-link popup, or use a site it can reach",
    );
    expect(errorOf(await call(bc({ op: "inspect", tool: "snapshot_page", args: { tabId: 99 } })))).toMatch(/there is no tab 99/);
    expect(api.calls.filter((c) => c.startsWith("page"))).toEqual([]);
  });

  it("a stale ref is the page's own error (take a new snapshot)", async () => {
    api.page = async () => ({ ok: false, error: "ref e9 is not on this page any more (…); take a new snapshot_page and use a ref from it" });
    expect(errorOf(await call(bc({ op: "inspect", tool: "click_element", args: { ref: "e9" } })))).toMatch(/take a new snapshot_page/);
  });
});

describe("run", () => {
  it("does nothing when the tab is at another origin than the approved one", async () => {
    const r = await call(bc({ op: "run", tool: "click_element", args: { ref: "e1" }, expect: exp(1, "https://bank.example") }));
    expect(errorOf(r)).toBe("the tab is now at http://127.0.0.1:8123 (it was https://bank.example when the call was approved); nothing was done — call the tool again");
    expect(api.calls.filter((c) => c.startsWith("page") || c.startsWith("update"))).toEqual([]);
  });

  it("acts on the approved tab only", async () => {
    const r = await call(bc({ op: "run", tool: "snapshot_page", args: { tabId: 2 }, expect: exp(1) }));
    expect(errorOf(r)).toMatch(/names tab 2 but tab 1 was approved; nothing was done/);
    expect(errorOf(await call(bc({ op: "run", tool: "close_tab", args: { tabId: 3 }, expect: exp(3, "null") })))).toMatch(/no access to tab 3/);
    expect(errorOf(await call(bc({ op: "run", tool: "close_tab", args: { tabId: 4 }, expect: exp(4, "null") })))).toMatch(/never touch/);
    expect(api.calls.filter((c) => c.startsWith("remove"))).toEqual([]);
  });

  it("navigate_to waits for the load and says the final URL and title", async () => {
    api.loadSteps = [{ status: "loading" }, { status: "loading" }, { status: "loading" }, { status: "complete" }];
    const r = await call(bc({ op: "run", tool: "navigate_to", args: { url: "/done" }, expect: exp() }));
    expect(r).toEqual({ type: "browser.result", id: "c1", ok: true, text: 'loaded http://127.0.0.1:8123/done, title "Loaded page"' });
    expect(api.calls).toContain('update 1 {"url":"http://127.0.0.1:8123/done"}');
    // never, whatever was approved
    expect(errorOf(await call(bc({ op: "run", tool: "navigate_to", args: { url: "chrome://settings" }, expect: exp() })))).toMatch(/never open or act on chrome:/);
    expect(api.calls.filter((c) => c.includes("chrome://"))).toEqual([]);
  });

  it("navigate_to keeps waiting while a slow server leaves the tab complete at its old URL", async () => {
    // without the tabs permission Chrome shows no pendingUrl: the tab looks idle until the answer
    api.loadSteps = [...Array.from({ length: 20 }, () => ({ status: "complete" })), { status: "complete" }];
    const r = await call(bc({ op: "run", tool: "navigate_to", args: { url: "/slow" }, expect: exp() }));
    expect(r).toMatchObject({ ok: true, text: 'loaded http://127.0.0.1:8123/slow, title "Loaded page"' });
  });

  it("open_tab, switch_tab, close_tab", async () => {
    expect(await call(bc({ op: "run", tool: "open_tab", args: { url: "https://example.com/" } }))).toMatchObject({ ok: true, text: 'opened tab 100 at https://example.com/, title "New page"' });
    expect(await call(bc({ op: "run", tool: "switch_tab", args: { tabId: 2 }, expect: exp(2, "https://chat.deepseek.com") }))).toMatchObject({ ok: true, text: "switched to tab 2 (https://chat.deepseek.com/a/chat/s/1)" });
    expect(api.calls).toContain('update 2 {"active":true}');
    expect(await call(bc({ op: "run", tool: "close_tab", args: { tabId: 2 }, expect: exp(2, "https://chat.deepseek.com") }))).toMatchObject({ ok: true });
    expect(api.tabs_.has(2)).toBe(false);
    expect(errorOf(await call(bc({ op: "run", tool: "close_tab", args: { tabId: 2 }, expect: exp(2, "https://chat.deepseek.com") })))).toMatch(/there is no tab 2/);
  });

  it("a page that never answers still gets exactly one answer, at the deadline", async () => {
    api.page = () => new Promise(() => undefined);
    const start = Date.now();
    const r = await call(bc({ op: "run", tool: "snapshot_page", args: {}, expect: exp() }));
    expect(errorOf(r)).toMatch(/did not finish snapshot_page within 19 s/);
    expect(Date.now() - start).toBeGreaterThanOrEqual(CALL_DEADLINE_MS);
  });

  it("a tab closed while the tool runs: a clear error, no hang", async () => {
    api.page = async (tabId) => {
      api.tabs_.delete(tabId);
      throw new Error("No tab with id: 1.");
    };
    expect(errorOf(await call(bc({ op: "run", tool: "click_element", args: { ref: "e1" }, expect: exp() })))).toBe(
      "tab 1 was closed while the tool ran; nothing more was done — read browser://tabs for the open tabs",
    );
    // closed while it loads
    api.add({ id: 5, url: "http://127.0.0.1:8123/", title: "x" });
    api.loadSteps = [{ status: "loading" }, { status: "loading" }, { status: "loading" }, { status: "complete" }];
    const pending = tools.handle(bc({ op: "run", tool: "navigate_to", args: { url: "/slow", tabId: 5 }, expect: exp(5) }));
    await vi.advanceTimersByTimeAsync(150);
    api.tabs_.delete(5);
    await vi.advanceTimersByTimeAsync(500);
    expect(errorOf(await pending)).toMatch(/tab 5 was closed while its page loaded/);
  });

  it("click_element says what was clicked and where the tab is now, and asks for a new snapshot", async () => {
    api.page = async () => ({ ok: true, text: 'clicked link "Next"' });
    const r = await call(bc({ op: "run", tool: "click_element", args: { ref: "e2" }, expect: exp() }));
    expect(r.ok && r.text).toMatch(/^clicked link "Next"; the tab is now at http:\/\/127.0.0.1:8123\/form.html\. Take a new snapshot_page/);
  });

  it("anything Chrome throws becomes an answer, never an exception", async () => {
    api.tabs.query = async () => {
      throw new Error("boom");
    };
    expect(errorOf(await call(bc({ op: "read", uri: "browser://tabs" })))).toMatch(/failed unexpectedly \(boom\)/);
  });
});

describe("read", () => {
  it("browser://tabs lists every tab, url null where the extension cannot see it", async () => {
    const r = await call(bc({ op: "read", uri: "browser://tabs" }));
    const tabs = JSON.parse(r.ok ? (r.text ?? "") : "[]") as { tabId: number; url: string | null; title: string }[];
    expect(tabs.map((t) => [t.tabId, t.url])).toEqual([
      [1, "http://127.0.0.1:8123/form.html"],
      [2, "https://chat.deepseek.com/a/chat/s/1"],
      [3, null],
      [4, "file:///etc/passwd"],
    ]);
    expect(tabs[2]?.title).toBe("");
  });

  it("browser://current/state is the active tab with its ready state and the tab list", async () => {
    api.page = async (_t, req) => (req.op === "readyState" ? { ok: true, text: "interactive" } : { ok: false, error: "?" });
    const r = await call(bc({ op: "read", uri: "browser://current/state" }));
    const s = JSON.parse(r.ok ? (r.text ?? "") : "{}") as Record<string, unknown>;
    expect(s).toMatchObject({ tabId: 1, url: "http://127.0.0.1:8123/form.html", title: "Form", readyState: "interactive" });
    expect((s.tabs as unknown[]).length).toBe(4);
  });

  it("browser://current/dom needs a tab it may read", async () => {
    api.page = async (_t, req) => (req.op === "dom" ? { ok: true, text: "<form>" } : { ok: false, error: "?" });
    expect(await call(bc({ op: "read", uri: "browser://current/dom" }))).toMatchObject({ ok: true, text: "tab 1 at http://127.0.0.1:8123/form.html\n<form>" });
    api.tabs_.get(1)!.active = false;
    api.tabs_.get(3)!.active = true;
    expect(errorOf(await call(bc({ op: "read", uri: "browser://current/dom" })))).toMatch(/no access to tab 3/);
  });
});
