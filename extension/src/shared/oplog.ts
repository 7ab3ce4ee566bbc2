/**
 * The side panel's operation log: every page-tool call with its tool, origin, arguments and
 * outcome, newest last, in `chrome.storage.local` (key `opLog`) so it survives the panel closing.
 * Bounded: the newest MAX_ENTRIES, each result cut to MAX_LOGGED_RESULT characters.
 */

import type { KV } from "./store";
import type { CallOutcome, ToolSource } from "./webmcp";

export const MAX_ENTRIES = 200;
export const MAX_LOGGED_RESULT = 4096;

export interface OpLogEntry {
  at: number;
  /** Who asked: the person with the panel's form, the side panel agent, or the bridge (an MCP client or web chat, approved there). */
  by: "hand" | "agent" | "bridge";
  tabId: number;
  frameId: number;
  origin: string;
  tool: string;
  source: ToolSource;
  input: unknown;
  outcome: CallOutcome;
  /** The panel's own calls while paired: "audited", or "not audited: <why>" (DESIGN §12). */
  audit?: string;
}

export async function readLog(kv: KV): Promise<OpLogEntry[]> {
  const got = (await kv.get(["opLog"])).opLog;
  return Array.isArray(got) ? (got as OpLogEntry[]) : [];
}

export async function appendLog(kv: KV, e: OpLogEntry): Promise<void> {
  const entry: OpLogEntry =
    e.outcome.ok && e.outcome.result !== null && e.outcome.result.length > MAX_LOGGED_RESULT
      ? { ...e, outcome: { ...e.outcome, result: `${e.outcome.result.slice(0, MAX_LOGGED_RESULT)}…` } }
      : e;
  const all = [...(await readLog(kv)), entry];
  await kv.set({ opLog: all.slice(-MAX_ENTRIES) });
}

export async function clearLog(kv: KV): Promise<void> {
  await kv.set({ opLog: [] });
}
