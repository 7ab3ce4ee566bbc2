// The shared parser vectors (tests/vectors/tool_blocks.json at the repository top level): the
// TypeScript parser must agree with every case the Rust parser is held to.
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { parseToolBlocks } from "../src/shared/parser";

type Expect = { call: { name: string; args: Record<string, unknown>; reason?: string } } | { error: string };
interface Vectors {
  version: number;
  cases: { name: string; input: string; expect: Expect[] }[];
}

const path = fileURLToPath(new URL("../../tests/vectors/tool_blocks.json", import.meta.url));
const vectors = JSON.parse(readFileSync(path, "utf8")) as Vectors;

describe("shared tool_blocks vectors", () => {
  it("is version 1 and has cases", () => {
    expect(vectors.version).toBe(1);
    expect(vectors.cases.length).toBeGreaterThan(0);
  });
  for (const c of vectors.cases) {
    it(c.name, () => {
      const got: Expect[] = parseToolBlocks(c.input).map((b) => {
        if (b.kind === "error") return { error: b.error };
        const call: { name: string; args: Record<string, unknown>; reason?: string } = { name: b.call.name, args: b.call.args };
        if (b.call.reason !== undefined) call.reason = b.call.reason;
        return { call };
      });
      expect(got).toEqual(c.expect);
    });
  }
});
