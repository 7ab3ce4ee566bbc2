// The side panel's report for the bridge's audit log (POST /panel-calls): each way a call ends
// maps to one decision and status the bridge accepts, fields stay inside the bridge's limits
// (a long page error is cut, not a reason to lose the line), and the log's label says whether
// it was audited.
import { describe, expect, it } from "vitest";
import { auditLabel, buildPanelReport, type PanelCallFacts } from "../src/shared/panel-audit";

const base: PanelCallFacts = {
  callId: "c-1",
  tool: "search_items",
  origin: "http://127.0.0.1:8123",
  url: "http://127.0.0.1:8123/shop.html",
  args: { query: "tea" },
  decision: "confirmed",
  why: "not marked read-only",
  outcome: { ok: true, result: '{"items":[]}', truncated: false, bytes: 12, ms: 4 },
  durationMs: 6.4,
  session: "panel:abc",
};

describe("buildPanelReport", () => {
  it("a confirmed call that succeeded", () => {
    expect(buildPanelReport(base)).toEqual({
      callId: "c-1",
      tool: "search_items",
      origin: "http://127.0.0.1:8123",
      url: "http://127.0.0.1:8123/shop.html",
      args: { query: "tea" },
      decision: "confirmed",
      why: "not marked read-only",
      status: "success",
      durationMs: 6,
      outputBytes: 12,
      session: "panel:abc",
    });
  });

  it("each ending has its status: error, timeout, refused, failed", () => {
    const err = buildPanelReport({ ...base, decision: "autoRun", outcome: { ok: false, error: "boom", ms: 1 } });
    expect(err).toMatchObject({ status: "error", error: "boom", outputBytes: 0, decision: "autoRun" });
    const slow = buildPanelReport({ ...base, outcome: { ok: false, error: "timed out after 10000 ms", ms: 10000, timedOut: true } });
    expect(slow).toMatchObject({ status: "timeout", error: "timed out after 10000 ms" });
    const refused = buildPanelReport({ ...base, decision: "refused", outcome: null, durationMs: 0 });
    expect(refused).toMatchObject({ status: "denied", error: "the person declined this call", outputBytes: 0 });
    const failed = buildPanelReport({ ...base, decision: "failed", args: '{"query": ', outcome: { ok: false, error: "the arguments are not valid JSON", ms: 0 } });
    expect(failed).toMatchObject({ status: "error", args: { value: '{"query": ' }, error: "the arguments are not valid JSON" });
  });

  it("keeps every field inside the bridge's limits instead of losing the line", () => {
    const r = buildPanelReport({
      ...base,
      url: `http://127.0.0.1:8123/${"x".repeat(3000)}`,
      why: "a\nb",
      session: "s".repeat(300),
      outcome: { ok: false, error: "e".repeat(5000), ms: 1 },
      durationMs: -5,
    });
    expect(r.url).toBeUndefined();
    expect(r.why).toBeUndefined();
    expect(r.session).toBeUndefined();
    expect(r.error?.length).toBe(1000);
    expect(r.durationMs).toBe(0);
    // only http(s) addresses: a chrome:// or javascript: tab URL is left out
    expect(buildPanelReport({ ...base, url: "javascript:alert(1)" }).url).toBeUndefined();
    // arguments that are not an object are wrapped, so the bridge's `args` is always an object
    expect(buildPanelReport({ ...base, args: [1, 2] }).args).toEqual({ value: [1, 2] });
  });
});

describe("auditLabel", () => {
  it("nothing when not paired; audited; or why not", () => {
    expect(auditLabel(undefined)).toBeUndefined();
    expect(auditLabel({ ok: true })).toBe("audited");
    expect(auditLabel({ ok: false, reason: "nothing is listening there" })).toBe("not audited: nothing is listening there");
  });
});
