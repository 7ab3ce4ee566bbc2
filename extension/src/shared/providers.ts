/**
 * Model providers for the side panel agent (DESIGN §12): OpenAI-compatible chat completions with
 * streaming and tool calls. Presets hold each provider's address and its switches; a custom base
 * URL takes the same switches. Only https addresses (or http on loopback, for a local server).
 */

export type ProviderId = "deepseek" | "qwen" | "glm" | "kimi" | "openai" | "custom";

export interface ProviderSwitches {
  /** Send `tool_choice: "auto"` (some servers refuse the field). */
  toolChoice: boolean;
  /** Send `parallel_tool_calls` (only where the provider knows it). */
  parallelToolCalls: boolean;
  /** How thinking is switched: not at all, `thinking: {type}` (GLM, DeepSeek), or `enable_thinking` (Qwen). */
  thinking: "none" | "thinkingType" | "enableThinking";
  /** Give the model's `reasoning_content` back on tool turns (DeepSeek and Kimi thinking modes need it). */
  replayReasoning: boolean;
}

export interface ProviderPreset {
  id: ProviderId;
  label: string;
  baseUrl: string;
  model: string;
  switches: ProviderSwitches;
}

export const PRESETS: Record<Exclude<ProviderId, "custom">, ProviderPreset> = {
  deepseek: { id: "deepseek", label: "DeepSeek", baseUrl: "https://api.deepseek.com", model: "deepseek-chat", switches: { toolChoice: true, parallelToolCalls: false, thinking: "thinkingType", replayReasoning: true } },
  qwen: { id: "qwen", label: "Qwen (DashScope compatible mode)", baseUrl: "https://dashscope.aliyuncs.com/compatible-mode/v1", model: "qwen-plus", switches: { toolChoice: true, parallelToolCalls: true, thinking: "enableThinking", replayReasoning: false } },
  glm: { id: "glm", label: "GLM (Zhipu)", baseUrl: "https://open.bigmodel.cn/api/paas/v4", model: "glm-4.6", switches: { toolChoice: true, parallelToolCalls: false, thinking: "thinkingType", replayReasoning: false } },
  kimi: { id: "kimi", label: "Kimi (Moonshot)", baseUrl: "https://api.moonshot.cn/v1", model: "kimi-k2-turbo-preview", switches: { toolChoice: true, parallelToolCalls: false, thinking: "none", replayReasoning: true } },
  openai: { id: "openai", label: "OpenAI", baseUrl: "https://api.openai.com/v1", model: "gpt-4.1-mini", switches: { toolChoice: true, parallelToolCalls: true, thinking: "none", replayReasoning: false } },
};

export interface AgentLimits {
  callsPerTurn: number;
  callTimeoutMs: number;
  turnTimeoutMs: number;
}

export const DEFAULT_LIMITS: AgentLimits = { callsPerTurn: 10, callTimeoutMs: 10_000, turnTimeoutMs: 60_000 };

/** The agent's settings (no key: keys are stored apart, see background/keys.ts). */
export interface AgentSettings {
  provider: ProviderId;
  baseUrl: string;
  model: string;
  switches: ProviderSwitches;
  thinking: boolean;
  /** "confirm": non-read-only calls wait for the person; "auto": they run and are logged. */
  mode: "confirm" | "auto";
  limits: AgentLimits;
}

export function defaultAgentSettings(): AgentSettings {
  const p = PRESETS.deepseek;
  return { provider: p.id, baseUrl: p.baseUrl, model: p.model, switches: { ...p.switches }, thinking: false, mode: "confirm", limits: { ...DEFAULT_LIMITS } };
}

/** A base URL normalised (no trailing slash), or why it cannot be used. */
export function parseBaseUrl(input: string): { ok: true; url: string; origin: string } | { ok: false; message: string } {
  let u: URL;
  try {
    u = new URL(input.trim());
  } catch {
    return { ok: false, message: `"${input}" is not a URL; enter e.g. https://api.deepseek.com` };
  }
  const loopback = ["127.0.0.1", "localhost", "[::1]"].includes(u.hostname);
  if (u.protocol !== "https:" && !(u.protocol === "http:" && loopback)) return { ok: false, message: `the key would travel in clear text over ${u.protocol}//; use https:// (http only on 127.0.0.1/localhost)` };
  if (u.username || u.password || u.search || u.hash) return { ok: false, message: "enter only scheme, host and path, without user, query or fragment" };
  return { ok: true, url: `${u.origin}${u.pathname.replace(/\/+$/, "")}`, origin: u.origin };
}

export function normaliseAgentSettings(raw: unknown): AgentSettings {
  const d = defaultAgentSettings();
  if (typeof raw !== "object" || raw === null) return d;
  const r = raw as Partial<AgentSettings>;
  const out: AgentSettings = { ...d, switches: { ...d.switches }, limits: { ...d.limits } };
  if (typeof r.provider === "string" && (r.provider === "custom" || r.provider in PRESETS)) out.provider = r.provider;
  if (typeof r.baseUrl === "string" && parseBaseUrl(r.baseUrl).ok) out.baseUrl = r.baseUrl;
  if (typeof r.model === "string" && r.model.trim() !== "" && r.model.length <= 200) out.model = r.model.trim();
  if (typeof r.thinking === "boolean") out.thinking = r.thinking;
  if (r.mode === "auto" || r.mode === "confirm") out.mode = r.mode;
  if (r.switches && typeof r.switches === "object") {
    const s = r.switches;
    if (typeof s.toolChoice === "boolean") out.switches.toolChoice = s.toolChoice;
    if (typeof s.parallelToolCalls === "boolean") out.switches.parallelToolCalls = s.parallelToolCalls;
    if (s.thinking === "none" || s.thinking === "thinkingType" || s.thinking === "enableThinking") out.switches.thinking = s.thinking;
    if (typeof s.replayReasoning === "boolean") out.switches.replayReasoning = s.replayReasoning;
  }
  if (r.limits && typeof r.limits === "object") {
    const l = r.limits;
    const int = (v: unknown, lo: number, hi: number) => typeof v === "number" && Number.isInteger(v) && v >= lo && v <= hi;
    if (int(l.callsPerTurn, 1, 50)) out.limits.callsPerTurn = l.callsPerTurn;
    if (int(l.callTimeoutMs, 1000, 120_000)) out.limits.callTimeoutMs = l.callTimeoutMs;
    if (int(l.turnTimeoutMs, 5000, 600_000)) out.limits.turnTimeoutMs = l.turnTimeoutMs;
  }
  return out;
}
