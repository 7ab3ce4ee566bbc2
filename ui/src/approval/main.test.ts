// The approval page itself, in a DOM: what the model wrote is shown as text, Escape denies,
// nothing is answered without a click, and a scoped allow carries the edited rule.
import { beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import type { ApprovalView, CommandError, DialogState } from "../gen/types";
import { englishFromTable, strayWords, visibleTexts } from "../i18n-check";

const calls: { cmd: string; args: Record<string, unknown> }[] = [];
let push: ((s: DialogState) => void) | null = null;
/** The next answer is refused with this (what the app sends). */
let refuseAnswer: CommandError | null = null;

const view: ApprovalView = {
  callId: "c-1",
  tool: "write_file",
  pairing: null,
  args: [{ name: "path", value: "<img src=x onerror=alert(1)>", cut: false }],
  reason: "<b>trust me</b>",
  risk: "moderate",
  why: "moderate call needs approval: write_file changes files",
  commandParts: [],
  diff: [{ kind: "add", text: "+<script>alert(1)</script>" }],
  diffCut: 0,
  blocks: [],
  chat: "chat.example/c/1",
  source: "bridge",
  proposedRule: { id: "allow-write_file-notes", action: "allow", tool: "write_file", match: { pathGlob: "notes/**" } },
  scopes: ["once", "session", "project", "global"],
  timeoutMs: 120000,
  networkOff: false,
  page: null,
  deadlineMs: Date.now() + 120000,
};

vi.mock("@tauri-apps/api/core", () => ({
  Channel: class {
    set onmessage(f: (s: DialogState) => void) {
      push = f;
    }
  },
  invoke: vi.fn(async (cmd: string, args: Record<string, unknown> = {}) => {
    calls.push({ cmd, args });
    if (cmd === "approval_subscribe") return { current: view, queued: 1, language: "en" } satisfies DialogState;
    if (cmd === "approval_answer" && refuseAnswer) {
      const e = refuseAnswer;
      refuseAnswer = null;
      throw e;
    }
    return null;
  }),
}));

// The page registers document-wide listeners once, as it does in the app: load it once.
async function load(): Promise<void> {
  document.body.innerHTML = '<main id="app"></main>';
  await import("./main");
  await vi.waitFor(() => expect(document.getElementById("tool")?.textContent).toBe("write_file"));
}

const answers = () => calls.filter((c) => c.cmd === "approval_answer").map((c) => c.args);

describe("the approval page", () => {
  beforeAll(load);
  beforeEach(() => {
    calls.length = 0;
  });

  it("shows model text as text, never as markup", () => {
    expect(document.querySelector("img")).toBeNull();
    expect(document.querySelector("script")).toBeNull();
    expect(document.querySelector("#args")?.textContent).toContain("<img src=x onerror=alert(1)>");
    expect(document.getElementById("reason")?.textContent).toBe("<b>trust me</b>");
    expect(document.getElementById("queued")?.textContent).toContain("+1");
    expect(document.getElementById("chat")?.textContent).toContain("chat.example/c/1");
  });

  it("answers nothing by itself, and Enter outside the reason field does nothing", () => {
    document.dispatchEvent(new KeyboardEvent("keydown", { key: "Enter" }));
    expect(answers()).toEqual([]);
    expect(document.activeElement?.tagName).not.toBe("BUTTON");
  });

  it("Escape denies with the typed reason", async () => {
    (document.getElementById("deny-reason") as HTMLInputElement).value = "not now";
    document.dispatchEvent(new KeyboardEvent("keydown", { key: "Escape" }));
    await vi.waitFor(() => expect(answers()).toEqual([{ callId: "c-1", answer: { type: "deny", reason: "not now" } }]));
  });

  it("keystrokes meant for another window never approve: allow sleeps, focus starts on deny", async () => {
    push?.({ current: { ...view, callId: "c-keys" }, queued: 0, language: "en" });
    expect(document.activeElement?.id).toBe("deny-reason");
    const once = document.getElementById("allow-once") as HTMLButtonElement;
    expect(once.disabled).toBe(true);
    // a disabled button takes no clicks; and even an activation that gets through is ignored
    once.click();
    once.disabled = false;
    once.click();
    once.disabled = true;
    await new Promise((r) => setTimeout(r, 100));
    expect(answers()).toEqual([]);
    await vi.waitFor(() => expect(once.disabled).toBe(false), { timeout: 2000 });
    // regaining focus puts them to sleep again
    window.dispatchEvent(new Event("focus"));
    expect(once.disabled).toBe(true);
    once.disabled = false;
    once.click();
    await new Promise((r) => setTimeout(r, 50));
    expect(answers()).toEqual([]);
    await vi.waitFor(() => expect(once.disabled).toBe(false), { timeout: 2000 });
  });

  it("multi-line content is framed line by line", () => {
    push?.({ current: { ...view, callId: "c-block", diff: [], blocks: [{ title: "command", lines: ["echo one", "why asked: safe"], cutLines: 0 }] }, queued: 0, language: "en" });
    const lines = Array.from(document.querySelectorAll("pre.block .block-line")).map((e) => e.textContent);
    expect(lines).toEqual(["echo one", "why asked: safe"]);
  });

  it("allow for this project sends the edited rule, once the buttons are awake", async () => {
    push?.({ current: { ...view, callId: "c-1b" }, queued: 1, language: "en" });
    await vi.waitFor(() => expect((document.getElementById("allow-project") as HTMLButtonElement).disabled).toBe(false), { timeout: 2000 });
    (document.getElementById("rule-glob") as HTMLInputElement).value = "notes/today.md";
    (document.getElementById("allow-project") as HTMLButtonElement).click();
    await vi.waitFor(() =>
      expect(answers()).toEqual([
        {
          callId: "c-1b",
          answer: { type: "allow", scope: "project", rule: { id: "allow-write_file-notes", action: "allow", tool: "write_file", match: { pathGlob: "notes/today.md" } } },
        },
      ]),
    );
  });

  it("a browser call shows its page, and allowing it for the project keeps the rule to that site", async () => {
    push?.({
      current: {
        ...view,
        callId: "c-page",
        tool: "click_element",
        diff: [],
        args: [{ name: "ref", value: "\"e3\"", cut: false }],
        page: 'click_element button "Pay" on https://shop.test/cart',
        proposedRule: { id: "allow-click_element-https-shop-test", action: "allow", tool: "click_element", match: { origin: "https://shop.test" } },
      },
      queued: 0,
      language: "en",
    });
    expect(document.getElementById("page")?.textContent).toBe('click_element button "Pay" on https://shop.test/cart');
    expect((document.getElementById("rule-origin") as HTMLInputElement).value).toBe("https://shop.test");
    await vi.waitFor(() => expect((document.getElementById("allow-project") as HTMLButtonElement).disabled).toBe(false), { timeout: 2000 });
    (document.getElementById("allow-project") as HTMLButtonElement).click();
    await vi.waitFor(() =>
      expect(answers()).toEqual([
        {
          callId: "c-page",
          answer: { type: "allow", scope: "project", rule: { id: "allow-click_element-https-shop-test", action: "allow", tool: "click_element", match: { origin: "https://shop.test" } } },
        },
      ]),
    );
  });

  it("the pairing question pairs only on Pair, and says which extension asks", async () => {
    const origin = "chrome-extension://nahlngkebpicfgggkehbcdnlkfhhejod/";
    const pair: ApprovalView = {
      ...view, callId: "pair-1", tool: null, pairing: origin, args: [], diff: [], risk: "dangerous",
      why: "Pair this browser extension with ground-link?", scopes: ["once"],
    };
    push?.({ current: pair, queued: 0, language: "en" });
    expect(document.getElementById("tool")?.textContent).toBe("Pair a browser extension");
    expect(document.getElementById("why")?.textContent).toContain(origin);
    expect(document.getElementById("args")).toBeNull();
    expect(document.getElementById("allow-project")).toBeNull();
    const yes = document.getElementById("allow-once") as HTMLButtonElement;
    expect(yes.textContent).toBe("Pair");
    expect(document.getElementById("deny")?.textContent).toBe("Refuse");
    expect(yes.disabled).toBe(true); // armed like any allow
    await vi.waitFor(() => expect(yes.disabled).toBe(false), { timeout: 2000 });
    yes.click();
    await vi.waitFor(() => expect(answers()).toEqual([{ callId: "pair-1", answer: { type: "allow", scope: "once" } }]));
    // The page takes one answer at a time: let the first one come back before the next.
    await new Promise((r) => setTimeout(r, 0));
    calls.length = 0;
    push?.({ current: { ...pair, callId: "pair-2" }, queued: 0, language: "zh" });
    expect(document.getElementById("tool")?.textContent).toBe("配对浏览器扩展");
    document.dispatchEvent(new KeyboardEvent("keydown", { key: "Escape" }));
    await vi.waitFor(() => expect(answers()).toEqual([{ callId: "pair-2", answer: { type: "deny" } }]));
  });

  it("network is off unless switched on, and the switch travels with the allow", async () => {
    push?.({ current: { ...view, callId: "c-net-off" }, queued: 0, language: "en" });
    expect(document.getElementById("network-on")).toBeNull();
    push?.({ current: { ...view, tool: "exec_cmd", callId: "c-net", networkOff: true }, queued: 0, language: "en" });
    expect(document.getElementById("network")?.textContent).toBe("Network: off. This command cannot connect anywhere.");
    const box = document.getElementById("network-on") as HTMLInputElement;
    expect(box.checked).toBe(false);
    box.click();
    expect(answers()).toEqual([]); // switching approves nothing
    await vi.waitFor(() => expect((document.getElementById("allow-once") as HTMLButtonElement).disabled).toBe(false), { timeout: 2000 });
    (document.getElementById("allow-once") as HTMLButtonElement).click();
    await vi.waitFor(() => expect(answers()).toEqual([{ callId: "c-net", answer: { type: "allow", scope: "once", network: true } }]));
  });

  it("a refused answer shows the app's message", async () => {
    push?.({ current: { ...view, callId: "c-gone" }, queued: 0, language: "en" });
    const gone = 'call "c-gone" is not waiting for approval (it was answered, timed out or cancelled)';
    refuseAnswer = { kind: "notFound", message: gone };
    document.dispatchEvent(new KeyboardEvent("keydown", { key: "Escape" }));
    await vi.waitFor(() => expect(document.getElementById("error")?.textContent).toBe(gone));
    expect(answers()).toEqual([{ callId: "c-gone", answer: { type: "deny" } }]);
  });

  it("hides the call when the queue empties, and keeps typed text for the same call", () => {
    push?.({ current: view, queued: 0, language: "en" });
    (document.getElementById("deny-reason") as HTMLInputElement).value = "typing";
    push?.({ current: view, queued: 0, language: "en" });
    expect((document.getElementById("deny-reason") as HTMLInputElement).value).toBe("typing");
    push?.({ current: null, queued: 0, language: "en" });
    expect(document.getElementById("tool")).toBeNull();
  });

  // What the model and the engine wrote is shown as it came, in any language.
  const DATA = [view.tool ?? "", "path", "<img src=x onerror=alert(1)>", "<b>trust me</b>", view.why, "chat.example/c/1", "+<script>alert(1)</script>", "curl x"];
  const more = (callId: string): ApprovalView => ({ ...view, callId, diffCut: 3, commandParts: ["curl x"] });

  it("in zh shows no English from the text table and nothing hard-coded", () => {
    push?.({ current: more("c-zh"), queued: 2, language: "zh" });
    const seen = visibleTexts();
    expect(seen).toContain("在此项目中允许");
    expect(seen).toContain("还有 3 行未显示");
    expect(englishFromTable(seen, DATA)).toEqual([]);
    expect(strayWords(seen, DATA)).toEqual([]);
  });

  it("in en shows the English labels", () => {
    push?.({ current: more("c-en"), queued: 2, language: "en" });
    const seen = visibleTexts();
    for (const want of ["Allow for this project", "risk: moderate", "+2 more waiting", "3 more lines not shown", "from chat.example/c/1", "Why you are asked", "Esc or closing this window denies."]) {
      expect(seen).toContain(want);
    }
    expect(document.getElementById("deny-reason")?.getAttribute("placeholder")).toBe("Reason for the model (optional)");
    expect(englishFromTable(seen, DATA).length).toBeGreaterThan(15);
  });
});
