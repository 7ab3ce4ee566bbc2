/**
 * A local HTTPS stand-in for chat.deepseek.com (the browser maps the real host name here with
 * --host-resolver-rules, so the extension's shipped manifest and DeepSeek adapter are what run).
 * It has DeepSeek's markup of today (issue 14): a textarea with `name="search"` and no id, whose
 * one round `ds-button--primary` control only enables on `input` events (like a React app) and
 * is the stop control while a reply streams (only its icon changes); Enter sends too. It pushes
 * a conversation URL on the first message and streams each reply from `/api/v0/chat/completion`
 * in DeepSeek's event format in small chunks, reasoning first.
 *
 * The same server answers for chatgpt.com and claude.ai with the replicas of `replicas.ts`
 * (their replies come as plain text chunks from `/replica/reply`, so the DOM path is what is
 * tested there), and serves a hostile page for another host name.
 *
 * The "model" is a function the test sets; every prompt the page sends is recorded with the time
 * its reply stream ended. The same server also serves a hostile page for another host name.
 */

import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:https";
import type { IncomingMessage, ServerResponse } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { replicaHtml } from "./replicas";

export interface Turn {
  prompt: string;
  conversation: string;
  receivedAt: number;
  streamEndAt?: number;
}

export type Model = (prompt: string, turn: number) => { thinking?: string; answer: string };

export interface FakeSite {
  port: number;
  /** Which ChatGPT UI chatgpt.com serves: the ProseMirror one or the rebuilt transcript one. */
  chatgptUi: "chatgpt-1" | "chatgpt-2";
  turns: Turn[];
  setModel(m: Model): void;
  /** History for `/a/chat/s/<id>` page loads: [role, text] pairs rendered server-side. */
  setHistory(id: string, messages: [("user" | "assistant"), string][]): void;
  chunkSize: number;
  chunkDelayMs: number;
  close(): Promise<void>;
}

export function selfSignedCert(): { key: Buffer; cert: Buffer } {
  const dir = mkdtempSync(join(tmpdir(), "gl-e2e-cert-"));
  const key = join(dir, "key.pem");
  const cert = join(dir, "cert.pem");
  execFileSync("openssl", [
    "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert, "-days", "2",
    "-subj", "/CN=chat.deepseek.com",
    "-addext", "subjectAltName=DNS:chat.deepseek.com,DNS:chatgpt.com,DNS:claude.ai,DNS:evil.example,DNS:localhost,IP:127.0.0.1",
  ], { stdio: "ignore" });
  const out = { key: readFileSync(key), cert: readFileSync(cert) };
  rmSync(dir, { recursive: true, force: true });
  return out;
}

let cached: { key: Buffer; cert: Buffer } | null = null;

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c] as string);

/** Server-side twin of the page's renderer: fenced code in <pre>, other lines in <p>. */
function renderMarkdown(text: string): string {
  const out: string[] = [];
  const lines = text.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] as string;
    if (line.startsWith("```")) {
      const lang = line.slice(3).trim();
      const code: string[] = [];
      for (i++; i < lines.length && !(lines[i] as string).startsWith("```"); i++) code.push(lines[i] as string);
      out.push(`<div class="md-code-block"><div class="md-code-block-banner"><span>${escapeHtml(lang)}</span><button class="copy">Copy</button></div><pre>${escapeHtml(code.join("\n"))}</pre></div>`);
    } else if (line.trim() !== "") {
      out.push(`<p>${escapeHtml(line)}</p>`);
    }
  }
  return out.join("");
}

function pageHtml(history: [string, string][]): string {
  const msgs = history
    .map(([role, text]) =>
      role === "user"
        ? `<div class="ds-message"><div class="fbb737a4">${escapeHtml(text)}</div></div>`
        : `<div class="ds-message"><div class="ds-markdown ds-markdown--block">${renderMarkdown(text)}</div></div>`,
    )
    .join("\n");
  return `<!doctype html><html><head><meta charset="utf-8"><title>DeepSeek (fake)</title>
<style>body{font:14px sans-serif;margin:0} #list{padding:10px;max-width:800px} .ds-message{margin:8px 0;padding:6px;border-radius:6px}
.fbb737a4{background:#eef} .ds-think-content{color:#888;font-size:12px} #composer{position:sticky;bottom:0;background:#fff;padding:8px;display:flex;gap:6px}
textarea{flex:1;height:60px} [role=button]{border:1px solid #888;padding:4px 10px;cursor:pointer} [aria-disabled=true]{opacity:.4}</style></head>
<body><div id="root"><div id="list">${msgs}</div>
<div id="composer"><textarea name="search" placeholder="Message DeepSeek "></textarea>
<div role="button" class="ds-button ds-button--primary ds-button--filled ds-button--circle ds-button--disabled">↑</div></div></div>
<script>${PAGE_SCRIPT}</script></body></html>`;
}

// The page's own code: plain DOM, like a site's bundle would do it.
const PAGE_SCRIPT = String.raw`
(() => {
  const list = document.getElementById("list");
  const input = document.querySelector('textarea[name="search"]');
  const composer = document.getElementById("composer");
  const send = composer.querySelector(".ds-button--primary");
  let busy = false;
  let conv = (location.pathname.match(/^\/a\/chat\/s\/([\w-]+)/) || [])[1] || null;
  let value = "";
  // like React: the app's state follows input events, not the DOM property
  input.addEventListener("input", () => { value = input.value; refresh(); });
  input.addEventListener("keydown", (e) => { if (e.key === "Enter" && !e.shiftKey) { e.preventDefault(); submit(); } });
  // one control: send when idle, stop while a reply streams (only the icon changes)
  send.addEventListener("click", () => { if (!busy) submit(); });
  function refresh() {
    const idleEmpty = !busy && value.trim() === "";
    send.classList.toggle("ds-button--disabled", idleEmpty);
    if (idleEmpty) send.removeAttribute("tabindex"); else send.setAttribute("tabindex", "0");
    send.textContent = busy ? "■" : "↑";
  }
  function esc(s) { const d = document.createElement("div"); d.textContent = s; return d.innerHTML; }
  function render(text) {
    const out = []; const lines = text.split("\n");
    for (let i = 0; i < lines.length; i++) {
      const line = lines[i];
      if (line.startsWith("\u0060\u0060\u0060")) {
        const lang = line.slice(3).trim(); const code = [];
        for (i++; i < lines.length && !lines[i].startsWith("\u0060\u0060\u0060"); i++) code.push(lines[i]);
        out.push('<div class="md-code-block"><div class="md-code-block-banner"><span>' + esc(lang) + '</span><button class="copy">Copy</button></div><pre>' + esc(code.join("\n")) + '</pre></div>');
      } else if (line.trim() !== "") out.push("<p>" + esc(line) + "</p>");
    }
    return out.join("");
  }
  async function submit() {
    if (busy || value.trim() === "") return;
    const prompt = value;
    busy = true; value = ""; input.value = ""; refresh();
    const u = document.createElement("div"); u.className = "ds-message";
    const ut = document.createElement("div"); ut.className = "fbb737a4"; ut.textContent = prompt; u.appendChild(ut);
    list.appendChild(u);
    if (!conv) { conv = crypto.randomUUID(); history.pushState({}, "", "/a/chat/s/" + conv); }
    const msg = document.createElement("div"); msg.className = "ds-message";
    const think = document.createElement("div"); think.className = "ds-think-content";
    const md = document.createElement("div"); md.className = "ds-markdown ds-markdown--block";
    msg.append(think, md); list.appendChild(msg);
    const resp = await fetch("/api/v0/chat/completion", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ prompt, chat_session_id: conv }) });
    const reader = resp.body.getReader(); const td = new TextDecoder();
    let buf = "", frags = [], lastP = "", lastO = "";
    const apply = (p, o, v) => {
      if (p === "response/fragments" && o === "APPEND") { frags.push(...v.map((f) => ({ type: f.type, content: f.content || "" }))); return; }
      const m = /^response\/fragments\/(-?\d+)\/content$/.exec(p);
      if (m && typeof v === "string") { const i = Number(m[1]); const f = frags[i < 0 ? frags.length + i : i]; if (f) f.content += v; }
    };
    for (;;) {
      const { value: chunk, done } = await reader.read();
      if (done) break;
      buf += td.decode(chunk, { stream: true });
      let nl;
      while ((nl = buf.indexOf("\n")) >= 0) {
        const line = buf.slice(0, nl); buf = buf.slice(nl + 1);
        if (!line.startsWith("data: ")) continue;
        let j; try { j = JSON.parse(line.slice(6)); } catch { continue; }
        if (j.v && j.v.response) { frags = (j.v.response.fragments || []).map((f) => ({ type: f.type, content: f.content || "" })); continue; }
        if (typeof j.p === "string") { lastP = j.p; lastO = j.o || "SET"; }
        apply(lastP, lastO, j.v);
      }
      think.textContent = frags.filter((f) => f.type === "THINK").map((f) => f.content).join("");
      md.innerHTML = render(frags.filter((f) => f.type === "RESPONSE").map((f) => f.content).join(""));
    }
    // when the page itself saw its reply stream end (browser clock, for the latency figure)
    (window.__streamEnds = window.__streamEnds || []).push(Date.now());
    busy = false; refresh();
  }
})();
`;

function hostilePage(): string {
  return `<!doctype html><html><head><meta charset="utf-8"><title>evil</title></head><body><h1>Totally harmless</h1>
<script>
window.attackResults = [];
(async () => {
  const q = new URLSearchParams(location.search);
  const base = "http://127.0.0.1:" + q.get("port");
  const token = q.get("token");
  const body = JSON.stringify({ name: "write_file", args: { path: "pwned-by-web.txt", content: "owned" } });
  const attempts = [
    ["cors+token", () => fetch(base + "/exec", { method: "POST", headers: { Authorization: "Bearer " + token, "Content-Type": "application/json" }, body })],
    ["no-cors text/plain", () => fetch(base + "/exec", { method: "POST", mode: "no-cors", headers: { "Content-Type": "text/plain" }, body })],
    ["health", () => fetch(base + "/health")],
  ];
  for (const [name, go] of attempts) {
    try { const r = await go(); window.attackResults.push(name + ": status " + r.status + " type " + r.type); }
    catch (e) { window.attackResults.push(name + ": blocked " + String(e)); }
  }
  try { navigator.sendBeacon(base + "/exec", body); window.attackResults.push("beacon: sent"); } catch (e) { window.attackResults.push("beacon: " + e); }
  window.attackDone = true;
})();
</script></body></html>`;
}

export async function startFakeSite(): Promise<FakeSite> {
  // one certificate per test run: making an RSA key for every test would only cost time
  cached ??= selfSignedCert();
  const { key, cert } = cached;
  const turns: Turn[] = [];
  const histories = new Map<string, [string, string][]>();
  let model: Model = () => ({ answer: "Hello." });
  const site: FakeSite = {
    port: 0,
    chatgptUi: "chatgpt-1",
    turns,
    chunkSize: 12,
    chunkDelayMs: 15,
    setModel: (m) => {
      model = m;
    },
    setHistory: (id, messages) => {
      histories.set(id, messages);
    },
    close: () => new Promise((r) => server.close(() => r())),
  };

  const handler = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const url = new URL(req.url ?? "/", `https://${req.headers.host ?? "localhost"}`);
    const host = (req.headers.host ?? "").split(":")[0];
    if (host === "evil.example") {
      res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
      res.end(hostilePage());
      return;
    }
    if (host === "chatgpt.com" || host === "claude.ai") {
      if (req.method === "POST" && url.pathname === "/replica/reply") {
        const body = await readBody(req);
        const { prompt, conversation } = JSON.parse(body) as { prompt: string; conversation: string };
        const turn: Turn = { prompt, conversation, receivedAt: Date.now() };
        turns.push(turn);
        const reply = model(prompt, turns.length - 1);
        res.writeHead(200, { "content-type": "text/plain; charset=utf-8", "cache-control": "no-cache" });
        for (let i = 0; i < reply.answer.length; i += site.chunkSize) {
          res.write(reply.answer.slice(i, i + site.chunkSize));
          await sleep(site.chunkDelayMs);
        }
        res.end();
        turn.streamEndAt = Date.now();
        return;
      }
      if (req.method === "GET" && !url.pathname.startsWith("/replica/")) {
        res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
        res.end(replicaHtml(host === "claude.ai" ? "claude" : site.chatgptUi));
        return;
      }
    }
    if (req.method === "POST" && url.pathname === "/api/v0/chat/completion") {
      const body = await new Promise<string>((r) => {
        let s = "";
        req.on("data", (c: Buffer) => (s += c.toString("utf8")));
        req.on("end", () => r(s));
      });
      const { prompt, chat_session_id } = JSON.parse(body) as { prompt: string; chat_session_id: string };
      const turn: Turn = { prompt, conversation: chat_session_id, receivedAt: Date.now() };
      turns.push(turn);
      const reply = model(prompt, turns.length - 1);
      await streamReply(res, reply, site.chunkSize, site.chunkDelayMs);
      turn.streamEndAt = Date.now();
      return;
    }
    if (req.method === "GET" && (url.pathname === "/" || url.pathname.startsWith("/a/chat/s/"))) {
      const id = url.pathname.split("/")[4] ?? "";
      res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
      res.end(pageHtml(histories.get(id) ?? []));
      return;
    }
    res.writeHead(404);
    res.end();
  };

  const server: Server = createServer({ key, cert }, (req, res) => {
    handler(req, res).catch((e) => {
      res.writeHead(500);
      res.end(String(e));
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  const addr = server.address();
  site.port = typeof addr === "object" && addr ? addr.port : 0;
  return site;
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise<string>((r) => {
    let s = "";
    req.on("data", (c: Buffer) => (s += c.toString("utf8")));
    req.on("end", () => r(s));
  });
}

/** DeepSeek's stream shape: an init event, THINK then RESPONSE fragments, status FINISHED, close. */
async function streamReply(res: ServerResponse, reply: { thinking?: string; answer: string }, size: number, delay: number): Promise<void> {
  res.writeHead(200, { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache" });
  const send = (obj: unknown) => res.write(`data: ${JSON.stringify(obj)}\n\n`);
  const thinking = reply.thinking ?? "";
  send({ v: { response: { message_id: 2, parent_id: 1, role: "ASSISTANT", status: "WIP", fragments: thinking ? [{ id: 1, type: "THINK", content: "" }] : [] } } });
  const stream = async (text: string) => {
    let first = true;
    for (let i = 0; i < text.length; i += size) {
      const piece = text.slice(i, i + size);
      if (first) send({ p: "response/fragments/-1/content", o: "APPEND", v: piece });
      else send({ v: piece });
      first = false;
      await sleep(delay);
    }
  };
  if (thinking) await stream(thinking);
  send({ p: "response/fragments", o: "APPEND", v: [{ id: 2, type: "RESPONSE", content: "" }] });
  await stream(reply.answer);
  send({ p: "response/status", o: "SET", v: "FINISHED" });
  res.write(`event: close\ndata: {"click_behavior":"none"}\n\n`);
  res.end();
}
