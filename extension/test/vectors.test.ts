// The shared parser vectors (tests/vectors/tool_blocks.json at the repository top level): the
// TypeScript parser must agree with every case the Rust parser is held to.
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { parseToolBlocks, type ParseErrorKind } from "../src/shared/parser";

type Expect = ({ call: { name: string; args: Record<string, unknown>; reason?: string } } | { error: string }) & { block?: string };
interface Vectors {
  version: number;
  cases: { name: string; input: string; expect: Expect[] }[];
}

// GL_VECTORS may point at another checkout's copy while the file is being written.
const path = process.env.GL_VECTORS ?? fileURLToPath(new URL("../../tests/vectors/tool_blocks.json", import.meta.url));
const vectors = JSON.parse(readFileSync(path, "utf8")) as Vectors;

describe("shared tool_blocks vectors", () => {
  it("is version 1 and has cases", () => {
    expect(vectors.version).toBe(1);
    expect(vectors.cases.length).toBeGreaterThan(0);
  });
  for (const c of vectors.cases) {
    it(c.name, () => {
      const blocks = parseToolBlocks(c.input);
      const got: Expect[] = blocks.map((b, i) => {
        // `block` (the block's exact text) is pinned only where a case names it
        const block = c.expect[i]?.block !== undefined ? { block: c.input.slice(b.start, b.end) } : {};
        if (b.kind === "error") return { error: b.error, ...block };
        const call: { name: string; args: Record<string, unknown>; reason?: string } = { name: b.call.name, args: b.call.args };
        if (typeof b.call.reason === "string") call.reason = b.call.reason;
        return { call, ...block };
      });
      expect(got).toEqual(c.expect);
    });
  }
});

// The result a broken block gets, as the core writes it (tests/vectors/invalid_call.json; the
// bridge serves it through POST /invalid-call, tests/bridge.rs): pasted back, it must not parse
// as a call here either, whatever the model's text quoted.
const invalid = JSON.parse(readFileSync(fileURLToPath(new URL("../../tests/vectors/invalid_call.json", import.meta.url)), "utf8")) as {
  cases: { name: string; kind: ParseErrorKind; detail: string; expect: string }[];
};

describe("shared invalid_call vectors", () => {
  it("has cases", () => expect(invalid.cases.length).toBeGreaterThanOrEqual(5));
  for (const c of invalid.cases) {
    it(c.name, () => {
      expect(parseToolBlocks(c.expect)).toEqual([]);
    });
  }
});
