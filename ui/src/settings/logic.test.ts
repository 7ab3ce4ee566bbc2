import { describe, expect, it } from "vitest";
import type { Decision } from "../gen/types";
import { decisionLines, editFromText, fieldsFromRule, hookFromFields, isShorthand, ruleFromFields } from "./logic";

describe("rules from the form", () => {
  it.each([
    [{ id: "", action: "deny", tool: "exec_cmd", commandPrefix: "curl", pathGlob: "", origin: "", description: "" }, { id: "deny-exec-cmd-curl", action: "deny", tool: "exec_cmd", match: { commandPrefix: "curl" } }],
    [{ id: "", action: "deny", tool: "", commandPrefix: "", pathGlob: "**/.env*", origin: "", description: "secrets" }, { id: "deny-any-env", action: "deny", tool: "*", match: { pathGlob: "**/.env*" }, description: "secrets" }],
    [{ id: " mine ", action: "allow", tool: "Bash", commandPrefix: " npm test ", pathGlob: "", origin: "", description: "" }, { id: "mine", action: "allow", tool: "Bash", match: { commandPrefix: "npm test" } }],
    // A site rule keeps its site through an edit: without it the rule would cover every site.
    [{ id: "", action: "allow", tool: "click_element", commandPrefix: "", pathGlob: "", origin: " https://*.shop.test ", description: "" }, { id: "allow-click-element-https-shop-test", action: "allow", tool: "click_element", match: { origin: "https://*.shop.test" } }],
  ] as const)("%j", (fields, want) => {
    const rule = ruleFromFields({ ...fields });
    expect(rule).toEqual(want);
    expect(ruleFromFields(fieldsFromRule(rule))).toEqual(rule);
  });
});

describe("the add box", () => {
  it.each([
    ["Bash(npm test *)", true],
    ["Read(src/**)", true],
    ["Edit", true],
    ['{"id":"x"}', false],
    ["rm -rf /", false],
  ])("%s is shorthand: %s", (text, want) => {
    expect(isShorthand(text)).toBe(want);
  });

  it("makes the right edit", () => {
    expect(editFromText(" Bash(curl *) ", "deny")).toEqual({ type: "addShorthand", action: "deny", text: "Bash(curl *)" });
    expect(editFromText('{"id":"a","action":"ask","tool":"*"}', "deny")).toEqual({ type: "add", rule: { id: "a", action: "ask", tool: "*" } });
    expect(() => editFromText("curl everything", "deny")).toThrow(/shorthand/);
  });
});

describe("decisions and hooks", () => {
  it("says the decision, the rule and the steps", () => {
    const d: Decision = {
      decision: "deny", risk: "moderate", reason: "denied by global rule \"no-curl\"",
      rule: { id: "no-curl", layer: "global" },
      steps: [{ step: "jail", outcome: null, detail: "inside" }, { step: "denyRule", outcome: "deny", detail: "no-curl" }],
    };
    expect(decisionLines(d)).toEqual([
      "DENY (risk moderate): denied by global rule \"no-curl\"",
      "rule no-curl from the global file",
      "  jail: inside",
      "  denyRule → deny: no-curl",
    ]);
  });

  it.each([
    [["h", "", "true", "abc", "skip"], { id: "h", toolMatch: "*", command: "true", timeout: 5000, onFailure: "skip" }],
    [["h", "Bash|Write", "x", "250", "block"], { id: "h", toolMatch: "Bash|Write", command: "x", timeout: 250, onFailure: "block" }],
  ] as const)("hook %j", ([id, tools, command, timeout, onFailure], want) => {
    expect(hookFromFields(id, tools, command, timeout, onFailure)).toEqual(want);
  });
});
