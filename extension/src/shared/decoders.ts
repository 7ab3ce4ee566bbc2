/**
 * Decoders for chat sites' reply streams, fed by the MAIN-world observer (read-only copies of
 * the site's own responses). Each turns the site's server-sent events into the assistant's
 * visible answer text — never reasoning ("thinking") fragments, tool traffic or the echo of the
 * user's message — and says when the reply is finished.
 *
 * Chunks may split anywhere (inside a line, inside a UTF-8 sequence is handled by the caller's
 * TextDecoder), so the SSE reader buffers partial lines.
 */

import type { StreamDecoderId } from "./adapters";

export interface StreamDecoder {
  readonly id: StreamDecoderId;
  /** Feeds decoded text as it arrives. */
  push(chunk: string): void;
  /** Flushes a final partial line; call once at end of stream. */
  finish(): void;
  /** The answer text so far. */
  text(): string;
  /** Whether the stream itself said the reply is complete. */
  done(): boolean;
}

interface SseEvent {
  event: string;
  data: string;
  /** This event's own `id:` field ("" when it had none): the bridge signs each event there. */
  id: string;
}

/** A minimal server-sent-events reader: `event:`, `data:` and `id:` fields, blank line ends an event. */
export class SseReader {
  private buf = "";
  private event = "";
  private id = "";
  private data: string[] = [];
  constructor(private readonly onEvent: (e: SseEvent) => void) {}

  push(chunk: string): void {
    this.buf += chunk;
    for (;;) {
      const nl = this.buf.search(/\r\n|\n|\r/);
      if (nl < 0) return;
      const line = this.buf.slice(0, nl);
      const sepLen = this.buf.startsWith("\r\n", nl) ? 2 : 1;
      // a lone \r at the very end may be the first half of \r\n: wait for more
      if (this.buf[nl] === "\r" && sepLen === 1 && nl === this.buf.length - 1) return;
      this.buf = this.buf.slice(nl + sepLen);
      this.line(line);
    }
  }

  finish(): void {
    if (this.buf !== "") this.line(this.buf);
    this.buf = "";
    this.dispatch();
  }

  private line(line: string): void {
    if (line === "") return this.dispatch();
    if (line.startsWith(":")) return;
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "event") this.event = value;
    else if (field === "data") this.data.push(value);
    else if (field === "id") this.id = value;
  }

  private dispatch(): void {
    if (this.data.length > 0) this.onEvent({ event: this.event || "message", data: this.data.join("\n"), id: this.id });
    this.event = "";
    this.id = "";
    this.data = [];
  }
}

function parseJson(s: string): unknown {
  try {
    return JSON.parse(s);
  } catch {
    return undefined;
  }
}

function isObj(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

// ---------------------------------------------------------------------------------------------
// DeepSeek (chat.deepseek.com /api/v0/chat/completion): JSON-patch-like events
// `{"p": path, "o": op, "v": value}`; an event without `p` continues the previous path and op.
// The answer is the RESPONSE fragments (older streams: `response/content`); THINK fragments and
// `response/thinking_content` are reasoning and are left out.

interface Fragment {
  type: string;
  content: string;
}

export class DeepSeekDecoder implements StreamDecoder {
  readonly id = "deepseek" as const;
  private readonly sse = new SseReader((e) => this.onEvent(e));
  private fragments: Fragment[] = [];
  private legacy = "";
  private lastPath = "";
  private lastOp = "";
  private finished = false;

  push(chunk: string): void {
    this.sse.push(chunk);
  }
  finish(): void {
    this.sse.finish();
  }
  text(): string {
    return this.legacy + this.fragments.filter((f) => f.type === "RESPONSE").map((f) => f.content).join("");
  }
  done(): boolean {
    return this.finished;
  }

  private onEvent(e: SseEvent): void {
    if (e.event === "close" || e.event === "finish") {
      this.finished = true;
      return;
    }
    const msg = parseJson(e.data);
    if (!isObj(msg) || !("v" in msg)) return;
    const v = msg.v;
    if (typeof msg.p !== "string") {
      if (isObj(v) && isObj(v.response)) return this.init(v.response);
      if (this.lastPath !== "") this.apply(this.lastPath, this.lastOp, v);
      return;
    }
    const op = typeof msg.o === "string" ? msg.o : msg.p === this.lastPath ? this.lastOp : "SET";
    this.lastPath = msg.p;
    this.lastOp = op;
    this.apply(msg.p, op, v);
  }

  private init(resp: Record<string, unknown>): void {
    this.fragments = Array.isArray(resp.fragments) ? resp.fragments.flatMap(toFragment) : [];
    this.legacy = typeof resp.content === "string" ? resp.content : "";
    if (resp.status === "FINISHED") this.finished = true;
  }

  private apply(path: string, op: string, v: unknown): void {
    if (op === "BATCH" && Array.isArray(v)) {
      for (const item of v) {
        if (isObj(item) && typeof item.p === "string") {
          this.apply(`${path}/${item.p}`, typeof item.o === "string" ? item.o : "SET", item.v);
        }
      }
      return;
    }
    if (path === "response/content") {
      if (typeof v === "string") this.legacy = op === "APPEND" ? this.legacy + v : v;
      return;
    }
    if (path === "response/fragments") {
      const list = Array.isArray(v) ? v : [v];
      if (op === "APPEND") this.fragments.push(...list.flatMap(toFragment));
      else this.fragments = list.flatMap(toFragment);
      return;
    }
    const m = /^response\/fragments\/(-?\d+)\/content$/.exec(path);
    if (m && typeof v === "string") {
      const idx = Number(m[1]);
      const f = this.fragments[idx < 0 ? this.fragments.length + idx : idx];
      if (f) f.content = op === "SET" ? v : f.content + v;
      return;
    }
    if ((path === "response/status" || path === "response/quasi_status") && v === "FINISHED") this.finished = true;
  }
}

function toFragment(v: unknown): Fragment[] {
  if (!isObj(v)) return [];
  return [{ type: typeof v.type === "string" ? v.type : "", content: typeof v.content === "string" ? v.content : "" }];
}

// ---------------------------------------------------------------------------------------------
// ChatGPT (chatgpt.com /backend-api/conversation, /backend-api/f/conversation): either whole
// message snapshots (`{"message": {...}}`) or, with `delta_encoding` v1, JSON-pointer patches on
// the current message (`{"p": "/message/content/parts/0", "o": "append", "v": "…"}`; no `p`
// continues the previous one). Only visible assistant text counts: author `assistant`, content
// type `text`, addressed to everyone, not the `analysis`/`commentary` channels. The echo of the
// user's own message (`input_message`) is never a message here.

type Doc = Record<string, unknown>;

export class ChatGptDecoder implements StreamDecoder {
  readonly id = "chatgpt" as const;
  private readonly sse = new SseReader((e) => this.onEvent(e));
  /** Message documents in arrival order, keyed by message id (or the delta counter). */
  private readonly docs = new Map<string, Doc>();
  private current: Doc | null = null;
  private lastPath = "";
  private lastOp = "append";
  private finished = false;

  push(chunk: string): void {
    this.sse.push(chunk);
  }
  finish(): void {
    this.sse.finish();
  }
  done(): boolean {
    return this.finished;
  }
  text(): string {
    const parts: string[] = [];
    for (const doc of this.docs.values()) {
      const t = visibleAssistantText(doc.message);
      if (t !== null && t !== "") parts.push(t);
    }
    return parts.join("\n\n");
  }

  private onEvent(e: SseEvent): void {
    if (e.data === "[DONE]") {
      this.finished = true;
      return;
    }
    const msg = parseJson(e.data);
    if (!isObj(msg)) return;
    if (msg.type === "message_stream_complete") {
      this.finished = true;
      return;
    }
    if (isObj(msg.message) && !("o" in msg) && !("p" in msg)) {
      // a whole-message snapshot (no delta encoding)
      const id = typeof msg.message.id === "string" ? msg.message.id : `snap-${this.docs.size}`;
      const doc: Doc = { message: msg.message };
      this.docs.set(id, doc);
      this.current = doc;
      return;
    }
    if (!("v" in msg)) return;
    const path = typeof msg.p === "string" ? msg.p : this.lastPath;
    const op = typeof msg.o === "string" ? msg.o : typeof msg.p === "string" ? "replace" : this.lastOp;
    this.lastPath = path;
    this.lastOp = op;
    this.apply(path, op, msg.v, typeof msg.c === "number" ? msg.c : undefined);
  }

  private apply(path: string, op: string, v: unknown, counter?: number): void {
    if (op === "patch" && Array.isArray(v)) {
      for (const item of v) {
        if (isObj(item) && typeof item.p === "string" && typeof item.o === "string") this.apply(item.p, item.o, item.v);
      }
      return;
    }
    if (path === "" && (op === "add" || op === "replace")) {
      if (isObj(v) && isObj(v.message)) {
        const doc: Doc = { message: v.message };
        const id = typeof v.message.id === "string" ? v.message.id : `delta-${counter ?? this.docs.size}`;
        this.docs.set(id, doc);
        this.current = doc;
      }
      return;
    }
    if (this.current) applyPointer(this.current, path, op, v);
  }
}

/** Applies one JSON-pointer op to `doc`; unknown ops and paths are ignored (read-only observer). */
function applyPointer(doc: Doc, path: string, op: string, v: unknown): void {
  const keys = path.split("/").slice(1).map((k) => k.replace(/~1/g, "/").replace(/~0/g, "~"));
  if (keys.length === 0) return;
  let node: unknown = doc;
  for (const k of keys.slice(0, -1)) {
    if (Array.isArray(node)) node = node[Number(k)];
    else if (isObj(node)) node = node[k];
    else return;
  }
  const last = keys[keys.length - 1] as string;
  const get = (): unknown => (Array.isArray(node) ? node[Number(last)] : isObj(node) ? node[last] : undefined);
  const set = (val: unknown): void => {
    if (Array.isArray(node)) node[Number(last)] = val;
    else if (isObj(node)) node[last] = val;
  };
  if (op === "append") {
    const cur = get();
    if (typeof cur === "string" && typeof v === "string") set(cur + v);
    else if (Array.isArray(cur)) cur.push(...(Array.isArray(v) ? v : [v]));
    else if (cur === undefined) set(v);
  } else if (op === "replace" || op === "add") {
    set(v);
  } else if (op === "truncate" && typeof v === "number") {
    const cur = get();
    if (typeof cur === "string") set(cur.slice(0, v));
    else if (Array.isArray(cur)) cur.length = v;
  }
}

function visibleAssistantText(message: unknown): string | null {
  if (!isObj(message)) return null;
  const author = message.author;
  if (!isObj(author) || author.role !== "assistant") return null;
  if (message.recipient !== undefined && message.recipient !== "all") return null;
  if (message.channel !== undefined && message.channel !== null && message.channel !== "final") return null;
  const meta = message.metadata;
  if (isObj(meta) && meta.is_visually_hidden_from_conversation === true) return null;
  const content = message.content;
  if (!isObj(content) || content.content_type !== "text" || !Array.isArray(content.parts)) return null;
  return content.parts.filter((p): p is string => typeof p === "string").join("");
}

// ---------------------------------------------------------------------------------------------

export function createDecoder(id: StreamDecoderId): StreamDecoder {
  return id === "deepseek" ? new DeepSeekDecoder() : new ChatGptDecoder();
}

/** Which decoder, if any, reads the response of a request to `url` made from a page on `host`. */
export function decoderForRequest(host: string, url: URL): StreamDecoderId | null {
  if (url.host !== host) return null;
  if (host === "chat.deepseek.com" && /^\/api\/v0\/chat\/(completion|regenerate|continue|resume_stream)$/.test(url.pathname)) {
    return "deepseek";
  }
  if ((host === "chatgpt.com" || host === "chat.openai.com") && /^\/backend-(api|anon)\/(f\/)?conversation$/.test(url.pathname)) {
    return "chatgpt";
  }
  return null;
}
