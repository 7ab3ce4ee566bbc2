/**
 * The health check on a settled chat page: does the adapter find the composer, the send button
 * (or will Enter do), and the turns — through the site's own selectors or only the generic
 * fallback? The result is a `HealthReport` the worker shows in the popup and badge and passes on
 * to the bridge, instead of a site change failing silently.
 */

import type { SiteAdapter } from "../shared/adapters";
import { addProblem, type HealthReport } from "../shared/health";
import { conversationId } from "../shared/session";
import { isStreaming, locateRoles } from "./dom";

export function checkPage(doc: Document, adapter: SiteAdapter, pathAndSearch: string, now = Date.now()): HealthReport {
  const report: HealthReport = { site: adapter.id, siteName: adapter.name, checkedAt: now, problems: [] };
  const found = locateRoles(doc, adapter);
  if (found.composer === null) addProblem(report, { kind: "missing", role: "composer" });
  // while a reply streams the send button may be the stop button: only an idle page says "no button"
  if (found.sendButton === null && !isStreaming(doc, adapter)) addProblem(report, { kind: "missing", role: "sendButton" });
  if (found.assistantMessage === null && found.userMessage !== null) addProblem(report, { kind: "noReplies" });
  if (found.assistantMessage === null && found.userMessage === null && conversationId(adapter, pathAndSearch) !== null) {
    addProblem(report, { kind: "noTurns" });
  }
  if (adapter.id !== "generic") {
    for (const role of ["assistantMessage", "userMessage", "composer", "sendButton"] as const) {
      if (found[role] === "generic") addProblem(report, { kind: "generic", role });
    }
  }
  return report;
}
