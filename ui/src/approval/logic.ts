// The approval dialog's decisions that are worth testing on their own: what an answer looks
// like, how the edited rule is built, how the countdown reads. Nothing here approves by itself.
import type { ApprovalAnswer, Rule, Scope } from "../gen/types";
import { matchFrom } from "../rule";

export interface RuleForm {
  id: string;
  tool: string;
  commandPrefix: string;
  pathGlob: string;
  origin: string;
}

export function formFromRule(r: Rule): RuleForm {
  return {
    id: r.id,
    tool: r.tool,
    commandPrefix: r.match?.commandPrefix ?? "",
    pathGlob: r.match?.pathGlob ?? "",
    origin: r.match?.origin ?? "",
  };
}

/** The proposed rule with the person's edits; blank fields are left out, the action is allow. */
export function ruleFromForm(base: Rule, f: RuleForm): Rule {
  return { ...base, id: f.id.trim(), tool: f.tool.trim(), action: "allow", match: matchFrom(f.commandPrefix, f.pathGlob, f.origin) };
}

/** `network`: the person switched the network on for this answer (DESIGN §4). */
export function allowAnswer(scope: Scope, rule: Rule | null, network = false): ApprovalAnswer {
  const base: ApprovalAnswer = scope === "once" || rule === null ? { type: "allow", scope } : { type: "allow", scope, rule };
  return network ? { ...base, network: true } : base;
}

export function denyAnswer(reason: string): ApprovalAnswer {
  const r = reason.trim();
  return r ? { type: "deny", reason: r } : { type: "deny" };
}

/** `m:ss` left until the engine denies on its own; never negative. */
export function countdown(deadlineMs: number, nowMs: number): string {
  const left = Math.max(0, Math.ceil((deadlineMs - nowMs) / 1000));
  const m = Math.floor(left / 60);
  const s = left % 60;
  return `${m}:${String(s).padStart(2, "0")}`;
}

export const SCOPE_BUTTONS: { scope: Scope; id: string; label: "allowOnce" | "allowSession" | "allowProject" | "allowGlobal" }[] = [
  { scope: "once", id: "allow-once", label: "allowOnce" },
  { scope: "session", id: "allow-session", label: "allowSession" },
  { scope: "project", id: "allow-project", label: "allowProject" },
  { scope: "global", id: "allow-global", label: "allowGlobal" },
];
