import { describe, expect, it } from "vitest";
import type { Rule } from "../gen/types";
import { allowAnswer, countdown, denyAnswer, formFromRule, ruleFromForm } from "./logic";

const proposed: Rule = { id: "allow-npm-install", action: "allow", tool: "exec_cmd", match: { commandPrefix: "npm install" } };

describe("answers", () => {
  it.each([
    ["", { type: "deny" }],
    ["   ", { type: "deny" }],
    [" use pnpm ", { type: "deny", reason: "use pnpm" }],
  ])("deny with reason %j", (reason, want) => {
    expect(denyAnswer(reason)).toEqual(want);
  });

  it("allow once never carries a rule; scoped answers do", () => {
    expect(allowAnswer("once", proposed)).toEqual({ type: "allow", scope: "once" });
    expect(allowAnswer("project", proposed)).toEqual({ type: "allow", scope: "project", rule: proposed });
    expect(allowAnswer("once", proposed, true)).toEqual({ type: "allow", scope: "once", network: true });
    expect(allowAnswer("session", proposed, true)).toEqual({ type: "allow", scope: "session", rule: proposed, network: true });
  });
});

describe("the editable rule", () => {
  it("round-trips the proposed rule", () => {
    expect(ruleFromForm(proposed, formFromRule(proposed))).toEqual(proposed);
  });

  it.each([
    [{ commandPrefix: "npm" }, { commandPrefix: "npm" }],
    [{ commandPrefix: "  ", pathGlob: "src/**" }, { pathGlob: "src/**" }],
    [{ commandPrefix: "", pathGlob: "" }, {}],
    [{ commandPrefix: "", origin: " https://shop.test " }, { origin: "https://shop.test" }],
  ])("blank fields are left out: %j", (edit, match) => {
    const f = { ...formFromRule(proposed), ...edit };
    expect(ruleFromForm(proposed, f).match).toEqual(match);
  });

  it("an edit can never turn the rule into a deny or ask", () => {
    const denyish: Rule = { ...proposed, action: "deny" };
    expect(ruleFromForm(denyish, formFromRule(denyish)).action).toBe("allow");
  });
});

describe("countdown", () => {
  it.each([
    [120_000, "2:00"],
    [59_001, "1:00"],
    [59_000, "0:59"],
    [1, "0:01"],
    [0, "0:00"],
    [-5_000, "0:00"],
  ])("%d ms left reads %s", (left, want) => {
    expect(countdown(1_000_000 + left, 1_000_000)).toBe(want);
  });
});
