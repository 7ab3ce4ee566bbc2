// Extension-side parser cases beyond the shared vectors: what rendered chat DOM text looks like.
import { describe, expect, it } from "vitest";
import { parseToolBlocks, normaliseName } from "../src/shared/parser";

const summary = (text: string) =>
  parseToolBlocks(text).map((b) => (b.kind === "call" ? `call:${b.call.name}:${JSON.stringify(b.call.args)}` : `error:${b.error}`));

describe("parser on rendered chat text", () => {
  const cases: [string, string, string[]][] = [
    ["plain block", '<tool>{"name":"read_file","args":{"path":"a"}}</tool>', ['call:read_file:{"path":"a"}']],
    ["code-block header text before the JSON", 'xmlCopy code<tool>jsonCopy code{"name":"ls"}</tool>', ["call:list_dir:{}"]],
    ["Chinese copy label", '<tool>json复制代码{"name":"ls"}</tool>', ["call:list_dir:{}"]],
    ["fence inside the block", '<tool>\n```json\n{"name":"Read","args":{"path":"x"}}\n```\n</tool>', ['call:read_file:{"path":"x"}']],
    ["closer inside a JSON string", '<tool>{"name":"write_file","args":{"path":"a","content":"</tool> x"}}</tool>', ['call:write_file:{"path":"a","content":"</tool> x"}']],
    ["two blocks with prose between", 'a <tool>{"name":"ls"}</tool> b <tool>{"name":"cmd","args":{"command":"ls"}}</tool>', ["call:list_dir:{}", 'call:exec_cmd:{"command":"ls"}']],
    ["bad JSON is reported, next block still parsed", '<tool>{name: x}</tool><tool>{"name":"ls"}</tool>', ["error:invalidJson", "call:list_dir:{}"]],
    ["unbalanced object ends at the closer", '<tool>{"name":"ls"</tool>', ["error:invalidJson"]],
    ["no closer", '<tool>{"name":"ls"}', ["error:unterminated"]],
    ["array", "<tool>[1]</tool>", ["error:notAnObject"]],
    ["no name", '<tool>{"args":{}}</tool>', ["error:missingName"]],
    ["args not an object", '<tool>{"name":"ls","args":[]}</tool>', ["error:badField"]],
    ["trailing text", '<tool>{"name":"ls"} and more</tool>', ["error:trailingText"]],
    ["no blocks", "just prose about tools", []],
  ];
  for (const [name, input, want] of cases) it(name, () => expect(summary(input)).toEqual(want));

  it("keeps the reason", () => {
    const [b] = parseToolBlocks('<tool>{"name":"ls","reason":"look"}</tool>');
    expect(b?.kind === "call" && b.call.reason).toBe("look");
  });
  it("normalises only exact aliases", () => {
    expect([normaliseName("Bash"), normaliseName("bash"), normaliseName("exec"), normaliseName("Edit")]).toEqual(["exec_cmd", "bash", "exec_cmd", "edit_file"]);
  });
});
