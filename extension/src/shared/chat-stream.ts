/**
 * OpenAI-compatible chat completions, the parts that need no network: the request body per
 * provider switches, the server-sent-events parser, the accumulator that rebuilds a streamed
 * message (content, `reasoning_content`, tool calls whose name and `arguments` arrive in pieces
 * across events), strict `arguments` parsing, and the messages a person sees when a provider
 * answers with an error.
 */

import type { AgentSettings } from "./providers";

export interface ToolCallOut {
  id: string;
  type: "function";
  function: { name: string; arguments: string };
}

export type ChatMessage =
  | { role: "system" | "user"; content: string }
  | { role: "assistant"; content: string | null; reasoning_content?: string; tool_calls?: ToolCallOut[] }
  | { role: "tool"; tool_call_id: string; content: string };

export interface ApiTool {
  type: "function";
  function: { name: string; description: string; parameters: Record<string, unknown> };
}

export function buildRequest(s: AgentSettings, messages: ChatMessage[], tools: ApiTool[]): Record<string, unknown> {
  const body: Record<string, unknown> = {
    model: s.model,
    stream: true,
    // replaying reasoning is for providers that ask for it; everyone else never sees the field
    messages: s.switches.replayReasoning ? messages : messages.map((m) => (m.role === "assistant" && "reasoning_content" in m ? { ...m, reasoning_content: undefined } : m)),
  };
  if (tools.length > 0) {
    body.tools = tools;
    if (s.switches.toolChoice) body.tool_choice = "auto";
    if (s.switches.parallelToolCalls) body.parallel_tool_calls = true;
  }
  if (s.switches.thinking === "thinkingType") body.thinking = { type: s.thinking ? "enabled" : "disabled" };
  if (s.switches.thinking === "enableThinking") body.enable_thinking = s.thinking;
  return body;
}

/** Splits a byte stream's text into SSE `data:` payloads (events end at a blank line). */
export class SseParser {
  private buf = "";
  push(text: string): string[] {
    this.buf += text;
    const out: string[] = [];
    for (;;) {
      const m = /\r?\n\r?\n/.exec(this.buf);
      if (!m) break;
      const event = this.buf.slice(0, m.index);
      this.buf = this.buf.slice(m.index + m[0].length);
      const data = event
        .split(/\r?\n/)
        .filter((l) => l.startsWith("data:"))
        .map((l) => l.slice(5).replace(/^ /, ""));
      if (data.length > 0) out.push(data.join("\n"));
    }
    return out;
  }
  /** Whatever is left when the stream ends without a final blank line. */
  end(): string[] {
    const rest = this.buf;
    this.buf = "";
    return rest.trim() === "" ? [] : this.push(`${rest}\n\n`);
  }
}

export class StreamError extends Error {}

/** Rebuilds one assistant message from its streamed chunks. */
export class MessageAccumulator {
  content = "";
  reasoning = "";
  finishReason: string | null = null;
  done = false;
  private readonly calls: { id: string; name: string; args: string }[] = [];

  /** One `data:` payload; returns the text and reasoning it added, for the panel to show. */
  push(data: string): { content: string; reasoning: string } {
    if (data.trim() === "[DONE]") {
      this.done = true;
      return { content: "", reasoning: "" };
    }
    let chunk: unknown;
    try {
      chunk = JSON.parse(data);
    } catch {
      throw new StreamError(`the provider sent an event that is not JSON: ${data.slice(0, 120)}`);
    }
    const c = chunk as { error?: { message?: unknown }; choices?: { delta?: Record<string, unknown>; finish_reason?: unknown }[] };
    if (c.error) throw new StreamError(`the provider reported an error mid-stream: ${String(c.error.message ?? JSON.stringify(c.error)).slice(0, 300)}`);
    const choice = c.choices?.[0];
    if (!choice) return { content: "", reasoning: "" };
    if (typeof choice.finish_reason === "string") this.finishReason = choice.finish_reason;
    const d = choice.delta ?? {};
    const content = typeof d.content === "string" ? d.content : "";
    const reasoning = typeof d.reasoning_content === "string" ? d.reasoning_content : "";
    this.content += content;
    this.reasoning += reasoning;
    if (Array.isArray(d.tool_calls)) {
      for (const tc of d.tool_calls as { index?: unknown; id?: unknown; function?: { name?: unknown; arguments?: unknown } }[]) {
        // chunks name their call by index; some servers omit it when there is only one call
        const index = typeof tc.index === "number" ? tc.index : this.calls.length === 0 ? 0 : this.calls.length - 1;
        const slot = (this.calls[index] ??= { id: "", name: "", args: "" });
        if (typeof tc.id === "string" && tc.id !== "") slot.id = tc.id;
        if (typeof tc.function?.name === "string") slot.name += tc.function.name;
        if (typeof tc.function?.arguments === "string") slot.args += tc.function.arguments;
      }
    }
    return { content, reasoning };
  }

  toolCalls(): ToolCallOut[] {
    return this.calls.filter(Boolean).map((c, i) => ({ id: c.id || `call_${i}`, type: "function" as const, function: { name: c.name, arguments: c.args } }));
  }

  message(): ChatMessage {
    const calls = this.toolCalls();
    const m: ChatMessage = { role: "assistant", content: this.content === "" && calls.length > 0 ? null : this.content };
    if (this.reasoning) m.reasoning_content = this.reasoning;
    if (calls.length > 0) m.tool_calls = calls;
    return m;
  }
}

/**
 * A tool call's `arguments`: a JSON object, or the empty string for "no arguments". Anything else
 * is refused with the reason — it goes back to the model as the call's error, never guessed at.
 */
export function parseArguments(s: string): { ok: true; value: Record<string, unknown> } | { ok: false; error: string } {
  if (s.trim() === "") return { ok: true, value: {} };
  let v: unknown;
  try {
    v = JSON.parse(s);
  } catch (e) {
    return { ok: false, error: `the arguments are not valid JSON (${e instanceof Error ? e.message : String(e)}); send a JSON object` };
  }
  if (typeof v !== "object" || v === null || Array.isArray(v)) return { ok: false, error: "the arguments must be a JSON object" };
  return { ok: true, value: v as Record<string, unknown> };
}

/** What went wrong with a provider's HTTP answer, in words a person can act on. */
export function describeHttpError(status: number, retryAfter: string | null, body: string, provider: string): string {
  const detail = extractMessage(body);
  if (status === 401 || status === 403) return `${provider} refused the API key (${status}${detail ? `: ${detail}` : ""}); check the key in the panel's settings`;
  if (status === 429) {
    const wait = retryAfter ? ` — retry after ${/^\d+$/.test(retryAfter) ? `${retryAfter} s` : retryAfter}` : "";
    return `${provider} is rate-limiting this key (429)${wait}${detail ? `: ${detail}` : ""}`;
  }
  if (status === 404) return `${provider} has no such endpoint or model (404${detail ? `: ${detail}` : ""}); check the base URL and the model name`;
  if (status === 400) return `${provider} refused the request (400${detail ? `: ${detail}` : ""})`;
  return `${provider} answered ${status}${detail ? `: ${detail}` : ""}`;
}

function extractMessage(body: string): string {
  try {
    const j = JSON.parse(body) as { error?: { message?: unknown } | string; message?: unknown };
    const m = typeof j.error === "string" ? j.error : (j.error?.message ?? j.message);
    return typeof m === "string" ? m.slice(0, 200) : "";
  } catch {
    // not JSON: the start of the text
  }
  return body.trim().slice(0, 200);
}
