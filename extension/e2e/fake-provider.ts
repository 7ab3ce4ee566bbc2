/**
 * A fake OpenAI-compatible model server on loopback, served over HTTPS so that the real provider
 * host (api.deepseek.com) can be mapped onto it with --host-resolver-rules: the extension's
 * DeepSeek preset, its host permission and its key handling are what runs. It streams scripted
 * answers in DeepSeek's chunk shapes (reasoning_content, tool calls split across events).
 */

import { createServer, type Server } from "node:https";
import { selfSignedCert } from "./fake-site";

export const GOOD_KEY = "sk-test-0123456789abcdef";

export interface ProviderRequest {
  auth: string;
  body: { model: string; messages: { role: string; content: string | null; reasoning_content?: string; tool_calls?: unknown[]; tool_call_id?: string }[]; tools?: { function: { name: string; description: string } }[]; tool_choice?: string; thinking?: unknown };
}

export interface FakeProvider {
  port: number;
  requests: ProviderRequest[];
  /** "ok": scripted tool call then an answer; "rateLimit": 429 with retry-after. */
  mode: "ok" | "rateLimit";
  close(): Promise<void>;
}

const chunk = (delta: Record<string, unknown>, finish: string | null = null) => `data: ${JSON.stringify({ id: "x", object: "chat.completion.chunk", choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;

export async function startFakeProvider(): Promise<FakeProvider> {
  const { key, cert } = selfSignedCert();
  const state: FakeProvider = { port: 0, requests: [], mode: "ok", close: async () => undefined };
  const server: Server = createServer({ key, cert }, (req, res) => {
    let raw = "";
    req.on("data", (d: Buffer) => (raw += d.toString("utf8")));
    // the extension's host permission for api.deepseek.com is asked through Chrome's prompt, which
    // a headless test cannot answer; like a provider that allows browser requests, we answer CORS
    res.setHeader("access-control-allow-origin", "*");
    res.setHeader("access-control-allow-headers", "authorization, content-type, accept");
    res.setHeader("access-control-allow-methods", "POST, OPTIONS");
    res.setHeader("access-control-expose-headers", "retry-after");
    req.on("end", () => {
      if (req.method === "OPTIONS") {
        res.writeHead(204);
        return res.end();
      }
      if (req.method !== "POST" || req.url !== "/chat/completions") {
        res.writeHead(404, { "content-type": "application/json" });
        return res.end(JSON.stringify({ error: { message: `no route ${req.method} ${req.url}` } }));
      }
      const body = JSON.parse(raw) as ProviderRequest["body"];
      state.requests.push({ auth: req.headers.authorization ?? "", body });
      if (req.headers.authorization !== `Bearer ${GOOD_KEY}`) {
        res.writeHead(401, { "content-type": "application/json" });
        return res.end(JSON.stringify({ error: { message: "Authentication Fails, Your api key is invalid", type: "authentication_error" } }));
      }
      if (state.mode === "rateLimit") {
        res.writeHead(429, { "content-type": "application/json", "retry-after": "17" });
        return res.end(JSON.stringify({ error: { message: "Rate limit reached" } }));
      }
      res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
      const last = body.messages[body.messages.length - 1];
      const events =
        last?.role === "tool" || !body.tools
          ? [chunk({ role: "assistant", content: "" }), chunk({ content: "Done: the status " }), chunk({ content: "now says what you asked." }), chunk({}, "stop"), "data: [DONE]\n\n"]
          : [
              chunk({ role: "assistant", content: null, reasoning_content: "The person wants " }),
              chunk({ reasoning_content: "the status changed." }),
              chunk({ tool_calls: [{ index: 0, id: "call_0_fake", type: "function", function: { name: "set_", arguments: "" } }] }),
              chunk({ tool_calls: [{ index: 0, function: { name: "status", arguments: '{"te' } }] }),
              chunk({ tool_calls: [{ index: 0, function: { arguments: 'xt": "set by the ' } }] }),
              chunk({ tool_calls: [{ index: 0, function: { arguments: 'model"}' } }] }),
              chunk({}, "tool_calls"),
              "data: [DONE]\n\n",
            ];
      // in pieces with small pauses, like a real stream
      let i = 0;
      const next = () => {
        if (i >= events.length) return res.end();
        res.write(events[i++]);
        setTimeout(next, 15);
      };
      next();
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const addr = server.address();
  state.port = typeof addr === "object" && addr ? addr.port : 0;
  state.close = () =>
    new Promise<void>((r) => {
      // Chrome keeps its connection open; end it, or close would wait for it
      server.closeAllConnections();
      server.close(() => r());
    });
  return state;
}
