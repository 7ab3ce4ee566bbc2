/**
 * The adapter health check's report (issue 14): what the content script could not find on a
 * supported page once it settled, as data, and the one sentence the popup, the toolbar badge's
 * tooltip and the bridge show for each problem. Nothing here touches the DOM.
 */

import type { AdapterId } from "./adapters";
import { t } from "./i18n";

/** The roles the check looks for. */
export type HealthRole = "assistantMessage" | "userMessage" | "composer" | "sendButton";

export type HealthProblem =
  /** Not found at all: no composer means results cannot be pasted; no send button means Enter. */
  | { kind: "missing"; role: "composer" | "sendButton" }
  /** Found, but only by the generic fallback's selectors: the site's own are stale. */
  | { kind: "generic"; role: HealthRole }
  /** The person's messages are there, the replies are not: the assistant selectors are stale. */
  | { kind: "noReplies" }
  /** A conversation URL with no turns at all. */
  | { kind: "noTurns" }
  /** A reply grew while no streaming signal was seen: detection waits for quiet time instead. */
  | { kind: "noStreamingSignal" };

export interface HealthReport {
  site: AdapterId;
  siteName: string;
  checkedAt: number;
  problems: HealthProblem[];
}

const ROLE_KEY = {
  assistantMessage: "roleAssistantMessage",
  userMessage: "roleUserMessage",
  composer: "roleComposer",
  sendButton: "roleSendButton",
} as const;

export function problemText(siteName: string, p: HealthProblem): string {
  switch (p.kind) {
    case "missing":
      return p.role === "composer" ? t("healthComposerMissing", siteName) : t("healthSendMissing", siteName);
    case "generic":
      return t("healthGeneric", siteName, t(ROLE_KEY[p.role]));
    case "noReplies":
      return t("healthNoReplies", siteName);
    case "noTurns":
      return t("healthNoTurns", siteName);
    case "noStreamingSignal":
      return t("healthNoStreaming", siteName);
  }
}

export function reportLines(r: HealthReport): string[] {
  return r.problems.map((p) => problemText(r.siteName, p));
}

/** The same problem once: a report is a set. */
export function addProblem(r: HealthReport, p: HealthProblem): boolean {
  const key = JSON.stringify(p);
  if (r.problems.some((q) => JSON.stringify(q) === key)) return false;
  r.problems.push(p);
  return true;
}

/** Checks a value from a content script before the worker keeps or forwards it. */
export function isHealthReport(v: unknown): v is HealthReport {
  if (typeof v !== "object" || v === null) return false;
  const r = v as Record<string, unknown>;
  if (typeof r.site !== "string" || typeof r.siteName !== "string" || typeof r.checkedAt !== "number" || !Array.isArray(r.problems)) return false;
  const roles = ["assistantMessage", "userMessage", "composer", "sendButton"];
  return r.problems.every((p: unknown) => {
    if (typeof p !== "object" || p === null) return false;
    const q = p as Record<string, unknown>;
    if (q.kind === "missing") return q.role === "composer" || q.role === "sendButton";
    if (q.kind === "generic") return typeof q.role === "string" && roles.includes(q.role);
    return q.kind === "noReplies" || q.kind === "noTurns" || q.kind === "noStreamingSignal";
  });
}
