/**
 * The message that goes back to the model: every result of one reply, in call order, in one
 * message (DESIGN §2.1). Results are the bridge's `formatted` blocks verbatim — also for a block
 * the parser rejected, which the bridge writes from the parser's message (`POST /invalid-call`).
 */

/** The results of one reply joined into one message. */
export function combineResults(blocks: string[]): string {
  return blocks.map((b) => b.trim()).filter((b) => b !== "").join("\n\n");
}
