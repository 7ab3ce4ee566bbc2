// Stream decoders for the MAIN-world observer: DeepSeek and ChatGPT event streams, split at every
// chunk size, yield the visible answer only — never reasoning, tool traffic or the user's echo.
import { describe, expect, it } from "vitest";
import { ChatGptDecoder, DeepSeekDecoder, SseReader, decoderForRequest, type StreamDecoder } from "../src/shared/decoders";
import { parseToolCalls } from "../src/shared/parser";

const sse = (events: unknown[]) => events.map((e) => (typeof e === "string" ? e : `data: ${JSON.stringify(e)}\n\n`)).join("");

function feed(d: StreamDecoder, text: string, size: number): StreamDecoder {
  for (let i = 0; i < text.length; i += size) d.push(text.slice(i, i + size));
  d.finish();
  return d;
}

const CALL = '<tool>{"name":"read_file","args":{"path":"a.txt"}}</tool>';
const THINK_CALL = '<tool>{"name":"exec_cmd","args":{"command":"rm -rf /"}}</tool>';
const SIZES = [1, 2, 3, 7, 64, 100_000];

describe("DeepSeek decoder", () => {
  const fragments = sse([
    { v: { response: { message_id: 2, status: "WIP", fragments: [{ id: 1, type: "THINK", content: "" }] } } },
    { p: "response/fragments/-1/content", o: "APPEND", v: "I could " },
    { v: THINK_CALL },
    { p: "response/fragments", o: "APPEND", v: [{ id: 2, type: "RESPONSE", content: "Let me " }] },
    { p: "response/fragments/-1/content", o: "APPEND", v: "read it.\n" },
    { v: CALL.slice(0, 20) },
    { v: CALL.slice(20) },
    { p: "response", o: "BATCH", v: [{ p: "accumulated_token_usage", v: 41 }, { p: "quasi_status", v: "FINISHED" }] },
    { p: "response/status", o: "SET", v: "FINISHED" },
    'event: close\ndata: {"click_behavior":"none"}\n\n',
  ]);
  for (const size of SIZES) {
    it(`fragments format, chunks of ${size}`, () => {
      const d = feed(new DeepSeekDecoder(), fragments, size);
      expect(d.text()).toBe(`Let me read it.\n${CALL}`);
      expect(d.done()).toBe(true);
      expect(parseToolCalls(d.text()).map((c) => c.name)).toEqual(["read_file"]);
    });
  }

  it("older content/thinking_content format", () => {
    const legacy = sse([
      { v: { response: { message_id: 2, content: "", thinking_content: "" } } },
      { p: "response/thinking_content", o: "APPEND", v: THINK_CALL },
      { p: "response/content", o: "APPEND", v: "Sure. " },
      { v: CALL },
      { p: "response/status", v: "FINISHED" },
    ]);
    const d = feed(new DeepSeekDecoder(), legacy, 5);
    expect(d.text()).toBe(`Sure. ${CALL}`);
    expect(d.done()).toBe(true);
  });

  it("CRLF line endings and comments", () => {
    const text = `: ping\r\ndata: ${JSON.stringify({ v: { response: { fragments: [{ type: "RESPONSE", content: "ok" }] } } })}\r\n\r\n`;
    expect(feed(new DeepSeekDecoder(), text, 1).text()).toBe("ok");
  });
});

describe("ChatGPT decoder", () => {
  const delta = [
    'event: delta_encoding\ndata: "v1"\n\n',
    `data: ${JSON.stringify({ type: "input_message", input_message: { author: { role: "user" }, content: { content_type: "text", parts: [`please ${THINK_CALL}`] } } })}\n\n`,
    `event: delta\ndata: ${JSON.stringify({ p: "", o: "add", v: { message: { id: "t1", author: { role: "assistant" }, content: { content_type: "thoughts", thoughts: [{ content: THINK_CALL }] }, status: "in_progress", recipient: "all", channel: "analysis" } }, c: 0 })}\n\n`,
    `event: delta\ndata: ${JSON.stringify({ p: "", o: "add", v: { message: { id: "m1", author: { role: "assistant" }, content: { content_type: "text", parts: [""] }, status: "in_progress", recipient: "all", channel: "final" } }, c: 1 })}\n\n`,
    `event: delta\ndata: ${JSON.stringify({ p: "/message/content/parts/0", o: "append", v: "Reading. " })}\n\n`,
    `event: delta\ndata: ${JSON.stringify({ v: CALL.slice(0, 11) })}\n\n`,
    `event: delta\ndata: ${JSON.stringify({ v: CALL.slice(11) })}\n\n`,
    `event: delta\ndata: ${JSON.stringify({ p: "", o: "patch", v: [{ p: "/message/status", o: "replace", v: "finished_successfully" }] })}\n\n`,
    `data: ${JSON.stringify({ type: "message_stream_complete", conversation_id: "c1" })}\n\n`,
    "data: [DONE]\n\n",
  ].join("");
  for (const size of SIZES) {
    it(`delta v1 format, chunks of ${size}`, () => {
      const d = feed(new ChatGptDecoder(), delta, size);
      expect(d.text()).toBe(`Reading. ${CALL}`);
      expect(d.done()).toBe(true);
    });
  }

  it("whole-message snapshots; tool-addressed and hidden messages left out", () => {
    const snap = (id: string, text: string, extra: Record<string, unknown> = {}) => ({
      message: { id, author: { role: "assistant" }, content: { content_type: "text", parts: [text] }, recipient: "all", ...extra },
    });
    const text = sse([
      snap("a", "Hel"),
      snap("a", `Hello ${CALL}`),
      snap("b", THINK_CALL, { recipient: "browser" }),
      snap("c", THINK_CALL, { metadata: { is_visually_hidden_from_conversation: true } }),
      { message: { id: "u", author: { role: "user" }, content: { content_type: "text", parts: [THINK_CALL] } } },
      "data: [DONE]\n\n",
    ]);
    const d = feed(new ChatGptDecoder(), text, 9);
    expect(d.text()).toBe(`Hello ${CALL}`);
  });
});

describe("stream routing", () => {
  const table: [string, string, string | null][] = [
    ["chat.deepseek.com", "https://chat.deepseek.com/api/v0/chat/completion", "deepseek"],
    ["chat.deepseek.com", "https://chat.deepseek.com/api/v0/chat/regenerate", "deepseek"],
    ["chat.deepseek.com", "https://chat.deepseek.com/api/v0/users/current", null],
    ["chat.deepseek.com", "https://evil.example/api/v0/chat/completion", null],
    ["chatgpt.com", "https://chatgpt.com/backend-api/conversation", "chatgpt"],
    ["chatgpt.com", "https://chatgpt.com/backend-api/f/conversation", "chatgpt"],
    ["chatgpt.com", "https://chatgpt.com/backend-api/conversation/abc", null],
    // issue 14: signed out (the rebuilt UI's /uc/ chats) the reply streams from /backend-anon/f/conversation,
    // after a /prepare call that is no reply (peers' traffic notes, 2026-06)
    ["chatgpt.com", "https://chatgpt.com/backend-anon/f/conversation", "chatgpt"],
    ["chatgpt.com", "https://chatgpt.com/backend-anon/f/conversation/prepare", null],
    ["chatgpt.com", "https://chatgpt.com/backend-anon/sentinel/chat-requirements/prepare", null],
    ["claude.ai", "https://claude.ai/api/whatever", null],
  ];
  for (const [host, url, want] of table) it(`${host} ${url}`, () => expect(decoderForRequest(host, new URL(url))).toBe(want));
});

describe("SSE reader", () => {
  it("joins multi-line data, names events and keeps each event's own id", () => {
    const got: { event: string; data: string; id: string }[] = [];
    const r = new SseReader((e) => got.push(e));
    r.push("event: x\nid: 7\ndata: a\nda");
    r.push("ta: b\n\ndata: c\r");
    r.push("\n\r\n");
    r.finish();
    expect(got).toEqual([
      { event: "x", data: "a\nb", id: "7" },
      { event: "message", data: "c", id: "" },
    ]);
  });
});
