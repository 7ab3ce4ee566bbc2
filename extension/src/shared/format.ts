/**
 * The message that goes back to the model: every result of one reply, in call order, in one
 * message (DESIGN §2.1). Results are the bridge's `formatted` blocks verbatim; the only text made
 * here is the error for a block the parser rejected, which never reached the bridge.
 */

import type { ParseErrorKind } from "./parser";

/** The results of one reply joined into one message. */
export function combineResults(blocks: string[]): string {
  return blocks.map((b) => b.trim()).filter((b) => b !== "").join("\n\n");
}

/**
 * A `<tool_result>` for a malformed block, so the model learns what to fix. Any `<` in the detail
 * is escaped: the detail can quote the model's text, and a `<tool>` in it must never parse as a call.
 * The core writes the same text (`invalid_call_result` in src/format.rs): both are held to
 * tests/vectors/invalid_call.json.
 */
export function parseErrorResult(kind: ParseErrorKind, detail: string): string {
  const safe = detail.replace(/</g, "&lt;");
  return `<tool_result name="invalid_call" status="error">\nThe tool call was not run: ${safe} (${kind}).\n</tool_result>`;
}
