// Pure helpers of the settings window: building rules and hooks from the form, telling a
// shorthand from JSON, and summarising a decision. The engine validates everything again.
import type { Decision, Hook, Rule, RuleAction, RuleEdit } from "../gen/types";
import { t } from "../i18n";
import { matchFrom } from "../rule";

export interface RuleFields {
  id: string;
  action: RuleAction;
  tool: string;
  commandPrefix: string;
  pathGlob: string;
  origin: string;
  description: string;
}

export function slug(s: string): string {
  return s.toLowerCase().replace(/[^a-z0-9]+/g, "-").replace(/^-+|-+$/g, "").slice(0, 48);
}

export function ruleFromFields(f: RuleFields): Rule {
  const match = matchFrom(f.commandPrefix, f.pathGlob, f.origin);
  const tool = f.tool.trim() || "*";
  const id = f.id.trim() || `${f.action}-${slug([tool === "*" ? "any" : tool, match.commandPrefix ?? match.pathGlob ?? match.origin ?? ""].join(" "))}`;
  const rule: Rule = { id, action: f.action, tool, match };
  if (f.description.trim()) rule.description = f.description.trim();
  return rule;
}

export function fieldsFromRule(r: Rule): RuleFields {
  return {
    id: r.id,
    action: r.action,
    tool: r.tool,
    commandPrefix: r.match?.commandPrefix ?? "",
    pathGlob: r.match?.pathGlob ?? "",
    origin: r.match?.origin ?? "",
    description: r.description ?? "",
  };
}

/** `Bash(npm test *)`, `Read(src/**)`, `Edit` — a Claude Code-style rule string. */
export function isShorthand(text: string): boolean {
  return /^[A-Za-z_]+(\(.*\))?$/.test(text.trim());
}

/** What the "add" box means: a shorthand for the chosen action, or a JSON rule. */
export function editFromText(text: string, action: RuleAction): RuleEdit {
  const trimmed = text.trim();
  if (isShorthand(trimmed)) return { type: "addShorthand", action, text: trimmed };
  let parsed: unknown;
  try {
    parsed = JSON.parse(trimmed);
  } catch {
    throw new Error(t("ruleTextInvalid", { shorthand: "Bash(npm test *)", json: '{"id":…,"action":"deny","tool":"exec_cmd",…}' }));
  }
  return { type: "add", rule: parsed as Rule };
}

export function decisionLines(d: Decision): string[] {
  const lines = [t("decisionHead", { verdict: d.decision.toUpperCase(), risk: d.risk, reason: d.reason })];
  if (d.rule) lines.push(t("decisionRule", { id: d.rule.id, layer: d.rule.layer }));
  for (const s of d.steps) lines.push(`  ${s.step}${s.outcome ? ` → ${s.outcome}` : ""}: ${s.detail}`);
  return lines;
}

export function hookFromFields(id: string, toolMatch: string, command: string, timeout: string, onFailure: string): Hook {
  const ms = Number.parseInt(timeout, 10);
  return {
    id: id.trim(),
    toolMatch: toolMatch.trim() || "*",
    command,
    timeout: Number.isFinite(ms) ? ms : 5000,
    onFailure: onFailure === "skip" ? "skip" : "block",
  };
}
