// @vitest-environment jsdom
// Degrade, don't die (issue 14): with no reply the adapter recognises, the generic fallback finds
// calls in the page's text — never in the composer, the person's turns or a reasoning pane — and
// offers them only behind a "this is the model's reply" click that a page script cannot make;
// the calls then go to the bridge marked, so ground-link asks about each one.
import { afterEach, describe, expect, it, vi } from "vitest";
import { ADAPTERS } from "../src/shared/adapters";
import { assistantMessages } from "../src/content/dom";
import { fallbackCandidates } from "../src/content/fallback";
import { runCall } from "../src/content/messaging";
import { ReplyRun } from "../src/content/runner";
import { parseToolBlocks } from "../src/shared/parser";
import type { ContentRequest } from "../src/shared/protocol";

const call = (name: string, path: string) => `&lt;tool&gt;{"name":"${name}","args":{"path":"${path}"}}&lt;/tool&gt;`;
const chatgpt = ADAPTERS.chatgpt;

/** A ChatGPT page after a redesign that none of our selectors (site or generic) match. */
function renamedPage(): void {
  document.body.innerHTML = `
    <main>
      <div class="turn-x"><div class="who">You</div><div class="txt">old ${call("read_file", "old.txt")}</div></div>
      <div class="turn-y"><div class="txt"><p>Let me look.</p><pre>${call("read_file", "a.txt")}</pre><pre>${call("list_dir", ".")}</pre></div></div>
      <div class="turn-y"><div class="thinking">maybe ${call("write_file", "think.txt")}</div></div>
      <div data-message-author-role="user">${call("write_file", "user.txt")}</div>
    </main>
    <form><textarea>${"<tool>"}{"name":"exec_cmd","args":{"command":"x"}}${"</tool>"}</textarea><button>Send</button></form>`;
}

afterEach(() => {
  vi.unstubAllGlobals();
  document.body.innerHTML = "";
});

describe("generic fallback", () => {
  it("finds calls no adapter role explains, one reply per element, never in the composer, the person's turns or reasoning", () => {
    renamedPage();
    expect(assistantMessages(document, chatgpt)).toHaveLength(0);
    const found = fallbackCandidates(document, chatgpt);
    const texts = found.map((el) => parseToolBlocks(el.textContent ?? "").flatMap((b) => (b.kind === "call" ? [b.call.args.path] : [])));
    // the two calls split over two <pre> blocks are one reply; the first turn is its own
    expect(texts).toEqual([["old.txt"], ["a.txt", "."]]);
    const all = texts.flat();
    for (const never of ["think.txt", "user.txt"]) expect(all).not.toContain(never);
  });

  it("never offers what it already knew (history), and never grows a new reply over it", () => {
    renamedPage();
    const known = new Set(fallbackCandidates(document, chatgpt));
    const main = document.querySelector("main") as HTMLElement;
    main.insertAdjacentHTML("beforeend", `<div class="turn-y"><div class="txt"><pre>${call("read_file", "new.txt")}</pre></div></div>`);
    const found = fallbackCandidates(document, chatgpt, (el) => known.has(el));
    expect(found).toHaveLength(1);
    expect(found[0]?.textContent).toContain("new.txt");
    expect(found[0]?.textContent).not.toContain("a.txt");
  });
});

describe("confirming a fallback reply", () => {
  function stubWorker(sent: ContentRequest[]): void {
    vi.stubGlobal("chrome", {
      runtime: {
        sendMessage: async (m: ContentRequest) => {
          sent.push(m);
          if (m.type === "exec") return { type: "result", result: { status: "denied", output: "no", formatted: "<tool_result>no</tool_result>", callId: m.callId, decision: null, durationMs: 1, truncated: false } };
          if (m.type === "takeRound") return { type: "round", ok: true, budget: 25 };
          return { type: "ok" };
        },
      },
    });
  }

  it("ignores a page script's .click() and synthetic clicks: nothing is sent", async () => {
    const sent: ContentRequest[] = [];
    stubWorker(sent);
    renamedPage();
    const el = fallbackCandidates(document, chatgpt).at(-1) as Element;
    const run = new ReplyRun(
      { doc: document, adapter: chatgpt, settings: { autoSend: false } as never, paused: false, session: "s", onOwnMessage: () => undefined, provenance: "genericFallback" },
      el,
      parseToolBlocks(el.textContent ?? ""),
    );
    let confirmed = false;
    void run.waitForConfirmation().then(() => {
      confirmed = true;
    });
    expect(run.card.host.dataset.states).toBe("unconfirmed unconfirmed");
    expect(run.card.host.dataset.confirm).toBe("asking");
    const button = run.card.debugButtons().find((b) => b.dataset.role === "confirm");
    if (!button) throw new Error("no confirm button");
    button.click();
    button.dispatchEvent(new MouseEvent("click", { bubbles: true, composed: true }));
    run.card.host.click();
    await new Promise((r) => setTimeout(r, 50));
    expect(confirmed).toBe(false);
    expect(run.card.host.dataset.confirm).toBe("asking");
    expect(sent.filter((m) => m.type === "exec")).toHaveLength(0);
  });

  it("sends a confirmed fallback call to the worker with its mark, and an ordinary one without", async () => {
    const sent: ContentRequest[] = [];
    stubWorker(sent);
    const c = { name: "read_file", args: { path: "a.txt" } };
    await runCall("id-1", "s", "r", c, "genericFallback");
    await runCall("id-2", "s", "r", c);
    const execs = sent.filter((m): m is Extract<ContentRequest, { type: "exec" }> => m.type === "exec");
    expect(execs.map((m) => m.provenance ?? null)).toEqual(["genericFallback", null]);
    expect("provenance" in (execs[1] as object)).toBe(false);
  });
});
