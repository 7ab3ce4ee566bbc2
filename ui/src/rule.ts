// What the approval dialog and the settings window share about rules.
import type { Rule } from "./gen/types";

/**
 * A rule's `match` from its form fields: blank fields are left out, the rest trimmed. Every
 * field of `match` has a form field: one without would be dropped by an edit and widen the rule
 * (an `origin` lost turns "this site" into "every site").
 */
export function matchFrom(commandPrefix: string, pathGlob: string, origin: string): NonNullable<Rule["match"]> {
  const match: NonNullable<Rule["match"]> = {};
  if (commandPrefix.trim()) match.commandPrefix = commandPrefix.trim();
  if (pathGlob.trim()) match.pathGlob = pathGlob.trim();
  if (origin.trim()) match.origin = origin.trim();
  return match;
}
