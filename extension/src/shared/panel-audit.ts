/**
 * The report of one finished side-panel call for the bridge's audit log (`POST /panel-calls`,
 * DESIGN §12: "with the bridge, its calls are audited too"). Pure: the service worker sends
 * what this builds, and only when paired. The bridge checks every field again and refuses what
 * does not fit, so this keeps each field inside its limits rather than letting one long page
 * error cost the whole line.
 */

import type { PanelCallReport, PanelDecision } from "./gen/bridge";
import { cap, type CallOutcome } from "./webmcp";

export type { PanelCallReport, PanelDecision } from "./gen/bridge";

/** The bridge's limits (src/bridge/panel.rs). */
const MAX_URL = 2048;
const MAX_WHY = 200;
const MAX_SESSION = 256;
const MAX_ERROR = 1000;

export interface PanelCallFacts {
  callId: string;
  tool: string;
  origin: string;
  /** The tab's address when the call ran. */
  url?: string;
  /** The arguments as the tool got them (or, when they did not parse, the raw text). */
  args: unknown;
  decision: PanelDecision;
  why?: string;
  /** What the page answered; `null`, or a failure saying why, when it never reached the page. */
  outcome: CallOutcome | null;
  durationMs: number;
  /** The panel's conversation id. */
  session?: string;
}

// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

function oneLine(s: string | undefined, max: number): string | undefined {
  if (s === undefined || s === "" || s.length > max || CONTROL.test(s)) return undefined;
  return s;
}

function httpUrl(s: string | undefined): string | undefined {
  const u = oneLine(s, MAX_URL);
  return u !== undefined && /^https?:\/\//i.test(u) ? u : undefined;
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

export function buildPanelReport(f: PanelCallFacts): PanelCallReport {
  const o = f.outcome;
  const status: PanelCallReport["status"] =
    f.decision === "refused" ? "denied" : f.decision === "failed" || o === null ? "error" : o.ok ? "success" : o.timedOut === true ? "timeout" : "error";
  const error = o !== null && !o.ok ? o.error : f.decision === "refused" ? "the person declined this call" : o === null ? "the call did not reach the page" : undefined;
  const report: PanelCallReport = {
    callId: f.callId,
    tool: f.tool,
    origin: f.origin,
    args: isPlainObject(f.args) ? f.args : { value: f.args ?? null },
    decision: f.decision,
    status,
    durationMs: Math.max(0, Math.round(Number.isFinite(f.durationMs) ? f.durationMs : 0)),
    outputBytes: o !== null && o.ok ? Math.max(0, o.bytes) : 0,
  };
  const url = httpUrl(f.url);
  if (url !== undefined) report.url = url;
  const why = oneLine(f.why, MAX_WHY);
  if (why !== undefined) report.why = why;
  const session = oneLine(f.session, MAX_SESSION);
  if (session !== undefined) report.session = session;
  if (error !== undefined && error !== "") report.error = cap(error, MAX_ERROR).text;
  return report;
}

/** What the operation log says about the report: nothing when not paired (nothing was sent). */
export type AuditMark = { ok: true } | { ok: false; reason: string };

export function auditLabel(mark: AuditMark | undefined): string | undefined {
  if (mark === undefined) return undefined;
  return mark.ok ? "audited" : `not audited: ${mark.reason}`;
}
