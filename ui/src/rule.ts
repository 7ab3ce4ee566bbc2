// What the approval dialog and the settings window share about rules.
import type { Rule } from "./gen/types";

/** A rule's `match` from two form fields: blank fields are left out, the rest trimmed. */
export function matchFrom(commandPrefix: string, pathGlob: string): NonNullable<Rule["match"]> {
  const match: NonNullable<Rule["match"]> = {};
  if (commandPrefix.trim()) match.commandPrefix = commandPrefix.trim();
  if (pathGlob.trim()) match.pathGlob = pathGlob.trim();
  return match;
}
