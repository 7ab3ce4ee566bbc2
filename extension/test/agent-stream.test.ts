// The agent's provider layer without a network: streamed tool calls rebuilt from pieces split
// across events (and across network reads), reasoning_content, strict arguments, the request each
// preset's switches make, errors a person can act on, and the name table.
import { describe, expect, it } from "vitest";
import { buildRequest, describeHttpError, MessageAccumulator, parseArguments, SseParser, StreamError } from "../src/shared/chat-stream";
import { defaultAgentSettings, normaliseAgentSettings, parseBaseUrl, PRESETS } from "../src/shared/providers";
import { API_NAME_RE, NameTable } from "../src/shared/tool-names";

const sse = (chunks: unknown[]) => chunks.map((c) => `data: ${typeof c === "string" ? c : JSON.stringify(c)}\n\n`).join("");
const delta = (d: Record<string, unknown>, finish: string | null = null) => ({ choices: [{ index: 0, delta: d, finish_reason: finish }] });

/** Streams shaped like each provider's (recorded shapes, our own text). */
const STREAMS: Record<string, string> = {
  deepseek: sse([
    delta({ role: "assistant", content: null, reasoning_content: "The person wants " }),
    delta({ reasoning_content: "the status set." }),
    delta({ tool_calls: [{ index: 0, id: "call_0_ab", type: "function", function: { name: "set_", arguments: "" } }] }),
    delta({ tool_calls: [{ index: 0, function: { name: "status", arguments: '{"te' } }] }),
    delta({ tool_calls: [{ index: 0, function: { arguments: 'xt": "he' } }] }),
    delta({ tool_calls: [{ index: 0, function: { arguments: 'llo"}' } }] }),
    delta({}, "tool_calls"),
    "[DONE]",
  ]),
  qwen: sse([
    delta({ content: "", tool_calls: [{ index: 0, id: "call_q1", type: "function", function: { name: "set_status", arguments: "" } }] }),
    delta({ tool_calls: [{ index: 0, id: "", type: "function", function: { arguments: '{"text": ' } }] }),
    delta({ tool_calls: [{ index: 0, id: "", type: "function", function: { arguments: '"hello"}' } }] }),
    delta({ content: "" }, "tool_calls"),
    "[DONE]",
  ]),
  glm: sse([delta({ role: "assistant", tool_calls: [{ id: "call_g1", index: 0, type: "function", function: { name: "set_status", arguments: '{"text":"hello"}' } }] }, "tool_calls"), "[DONE]"]),
  kimi: sse([
    delta({ role: "assistant", reasoning_content: "thinking" }),
    delta({ tool_calls: [{ index: 0, id: "set_status:0", type: "function", function: { name: "set_status", arguments: "" } }] }),
    delta({ tool_calls: [{ index: 0, function: { arguments: '{"text":"hello"}' } }] }),
    delta({}, "tool_calls"),
    "[DONE]",
  ]),
  openai: sse([
    delta({ role: "assistant", content: null, tool_calls: [{ index: 0, id: "call_o1", type: "function", function: { name: "set_status", arguments: "" } }] }),
    delta({ tool_calls: [{ index: 0, function: { arguments: '{"text"' } }] }),
    delta({ tool_calls: [{ index: 0, function: { arguments: ':"hello"}' } }] }),
    delta({}, "tool_calls"),
    "[DONE]",
  ]),
};

function replay(text: string, pieceSize: number): MessageAccumulator {
  const p = new SseParser();
  const acc = new MessageAccumulator();
  for (let i = 0; i < text.length; i += pieceSize) for (const d of p.push(text.slice(i, i + pieceSize))) acc.push(d);
  for (const d of p.end()) acc.push(d);
  return acc;
}

describe("streamed tool calls", () => {
  for (const [provider, text] of Object.entries(STREAMS)) {
    it(`${provider}: one set_status call with its arguments whole, however the bytes are split`, () => {
      for (const size of [1, 7, 64, text.length]) {
        const acc = replay(text, size);
        const calls = acc.toolCalls();
        expect(calls.length).toBe(1);
        expect(calls[0]?.function.name).toBe("set_status");
        expect(parseArguments(calls[0]?.function.arguments ?? "")).toEqual({ ok: true, value: { text: "hello" } });
        expect(acc.finishReason).toBe("tool_calls");
        expect(acc.done).toBe(true);
      }
    });
  }

  it("keeps reasoning_content apart from the answer and in the message for replay", () => {
    const acc = replay(STREAMS.deepseek ?? "", 5);
    expect(acc.reasoning).toBe("The person wants the status set.");
    expect(acc.message()).toMatchObject({ role: "assistant", content: null, reasoning_content: "The person wants the status set.", tool_calls: [{ id: "call_0_ab" }] });
  });

  it("two parallel calls by index, and CRLF events", () => {
    const text = sse([
      delta({ tool_calls: [{ index: 0, id: "a", function: { name: "get_status", arguments: "" } }, { index: 1, id: "b", function: { name: "set_status", arguments: '{"text":' } }] }),
      delta({ tool_calls: [{ index: 1, function: { arguments: '"x"}' } }] }),
    ]).replace(/\n/g, "\r\n");
    const calls = replay(text, 3).toolCalls();
    expect(calls.map((c) => [c.id, c.function.name, c.function.arguments])).toEqual([["a", "get_status", ""], ["b", "set_status", '{"text":"x"}']]);
  });

  it("an error event mid-stream is an error, not an empty answer", () => {
    const acc = new MessageAccumulator();
    expect(() => acc.push(JSON.stringify({ error: { message: "Content Exists Risk" } }))).toThrow(StreamError);
    expect(() => acc.push("{not json")).toThrow("not JSON");
  });
});

describe("arguments are parsed strictly", () => {
  it.each([
    ['{"a":1}', { ok: true, value: { a: 1 } }],
    ["", { ok: true, value: {} }],
    ["[1,2]", { ok: false, error: "the arguments must be a JSON object" }],
    ['"{\\"a\\":1}"', { ok: false, error: "the arguments must be a JSON object" }],
  ])("%s", (s, want) => expect(parseArguments(s)).toEqual(want));

  it("refuses broken JSON rather than repairing it", () => {
    const r = parseArguments('{"text": "hello"');
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.error).toMatch(/^the arguments are not valid JSON/);
  });
});

describe("requests per preset", () => {
  const msgs = [{ role: "user" as const, content: "hi" }, { role: "assistant" as const, content: null, reasoning_content: "r", tool_calls: [] }];
  const tools = [{ type: "function" as const, function: { name: "t", description: "d", parameters: { type: "object" } } }];
  it("DeepSeek replays reasoning and switches thinking by type", () => {
    const b = buildRequest({ ...defaultAgentSettings(), thinking: true }, msgs, tools);
    expect(b).toMatchObject({ model: "deepseek-chat", stream: true, tool_choice: "auto", thinking: { type: "enabled" } });
    expect((b.messages as { reasoning_content?: string }[])[1]?.reasoning_content).toBe("r");
    expect(b.parallel_tool_calls).toBeUndefined();
  });
  it("Qwen uses enable_thinking and parallel calls; OpenAI never sees reasoning_content", () => {
    const q = buildRequest({ ...defaultAgentSettings(), provider: "qwen", switches: PRESETS.qwen.switches }, msgs, tools);
    expect(q).toMatchObject({ enable_thinking: false, parallel_tool_calls: true });
    const o = buildRequest({ ...defaultAgentSettings(), provider: "openai", switches: PRESETS.openai.switches }, msgs, tools);
    expect((o.messages as { reasoning_content?: string }[])[1]?.reasoning_content).toBeUndefined();
    expect(o.thinking).toBeUndefined();
  });
  it("no tools: no tool fields", () => {
    expect(buildRequest(defaultAgentSettings(), msgs, [])).not.toHaveProperty("tool_choice");
  });
});

describe("settings", () => {
  it("base URLs: https, or http only on loopback", () => {
    expect(parseBaseUrl("https://api.deepseek.com/")).toEqual({ ok: true, url: "https://api.deepseek.com", origin: "https://api.deepseek.com" });
    expect(parseBaseUrl("http://api.example.com/v1")).toMatchObject({ ok: false });
    expect(parseBaseUrl("http://127.0.0.1:8000/v1")).toMatchObject({ ok: true, url: "http://127.0.0.1:8000/v1" });
  });
  it("limits default to 10 calls, 10 s, 60 s and stay within bounds", () => {
    expect(normaliseAgentSettings(undefined).limits).toEqual({ callsPerTurn: 10, callTimeoutMs: 10_000, turnTimeoutMs: 60_000 });
    expect(normaliseAgentSettings({ limits: { callsPerTurn: 1000, callTimeoutMs: 5000 } }).limits).toEqual({ callsPerTurn: 10, callTimeoutMs: 5000, turnTimeoutMs: 60_000 });
  });
});

describe("provider errors", () => {
  it("names a wrong key, a rate limit with its retry-after, a missing model", () => {
    expect(describeHttpError(401, null, '{"error":{"message":"Authentication Fails (no such user)"}}', "DeepSeek")).toBe("DeepSeek refused the API key (401: Authentication Fails (no such user)); check the key in the panel's settings");
    expect(describeHttpError(429, "20", "{}", "Kimi")).toBe("Kimi is rate-limiting this key (429) — retry after 20 s");
    expect(describeHttpError(404, null, "not found", "OpenAI")).toContain("check the base URL and the model name");
  });
});

describe("tool names for LLM APIs", () => {
  it("keeps valid names, maps the rest to ^[A-Za-z0-9_-]{1,64}$ and back", () => {
    const refs = [
      { frameId: 0, origin: "http://127.0.0.1:1", name: "search" },
      { frameId: 3, origin: "https://ads.example", name: "search" },
      { frameId: 0, origin: "http://127.0.0.1:1", name: "cart.add-item" },
      { frameId: 0, origin: "http://127.0.0.1:1", name: "x".repeat(128) },
    ];
    const table = new NameTable(refs);
    const names = table.entries().map(([api]) => api);
    expect(names[0]).toBe("search");
    expect(names[1]).toMatch(/^search_[a-z0-9]{6}$/);
    expect(names[2]).toMatch(/^cart_add-item_[a-z0-9]{6}$/);
    for (const n of names) expect(n).toMatch(API_NAME_RE);
    expect(new Set(names).size).toBe(4);
    for (const r of refs) expect(table.resolve(table.apiName(r) ?? "")).toEqual(r);
    expect(table.resolve("nope")).toBeUndefined();
  });
});
