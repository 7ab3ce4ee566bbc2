// @vitest-environment jsdom
// The in-page card: statuses as DESIGN §7 names them, text-only rendering, and buttons that
// ignore synthetic clicks from page script.
import { describe, expect, it } from "vitest";
import { ReplyCard, argPreview, statusText } from "../src/content/card";
import type { CallResult } from "../src/shared/protocol";

const result = (status: CallResult["status"]): CallResult => ({ status, output: "<b>out</b>", formatted: "f", callId: "c", decision: null, durationMs: 1, truncated: false });

describe("card", () => {
  it("names every state", () => {
    expect(statusText({ kind: "waitingApproval" })).toBe("Waiting for approval in ground-link");
    expect(statusText({ kind: "running" })).toBe("Running…");
    expect(statusText({ kind: "done", result: result("success") })).toBe("Done");
    expect(statusText({ kind: "denied", result: result("denied") })).toBe("Denied");
    expect(statusText({ kind: "budget", budget: 25 })).toContain("step budget of 25 automatic rounds");
    expect(statusText({ kind: "parseError", message: "bad" })).toBe("Not a valid call: bad");
  });

  it("mirrors its rows on the host and renders text, never HTML", () => {
    const ignored: number[] = [];
    const card = new ReplyCard(document, { ignore: (i) => ignored.push(i), retry: () => undefined, runAnyway: () => undefined });
    document.body.append(card.host);
    const a = card.addRow({ name: "read_file", args: { path: "<img src=x onerror=alert(1)>" } }, "read_file", { kind: "queued" });
    card.addRow(null, "invalid_call", { kind: "parseError", message: "no name" });
    card.setState(a, { kind: "done", result: result("success") });
    card.setFooter("Results sent to the chat.");
    expect(card.host.dataset.states).toBe("done parseError");
    expect(card.host.dataset.footer).toBe("Results sent to the chat.");
    expect(card.debugText()).toContain("<img src=x onerror=alert(1)>");
    expect(card.host.shadowRoot).toBeNull(); // closed to page script
  });

  it("previews the telling argument, shortened", () => {
    expect(argPreview({ name: "exec_cmd", args: { command: "npm test", timeoutSec: 5 } })).toBe("npm test");
    expect(argPreview({ name: "write_file", args: { path: "a".repeat(200) } }).length).toBe(81);
  });
});
