/**
 * The isolated world's view of a frame's page tools: the browser's native `document.modelContext`
 * when it has one, else the MAIN-world polyfill over its private port, plus the tools of the
 * skills that match this page. Everything the page says goes through `sanitiseTools` and
 * `capResult`; every call has a timeout and can be cancelled, end to end.
 */

import { capResult, parseChannelMessage, sanitiseTools, MAX_CHANNEL_MESSAGE, type CallOutcome, type PageTool, type SkillStatus, type ToChannel } from "../shared/webmcp";
import type { Skill, SkillTool } from "../shared/skills";
import { healthProblem, runSkillTool } from "./skill-runner";

/** The page side of a frame: list tools, run one. Both may be slow or lie. */
export interface PageApi {
  readonly kind: "native" | "polyfill";
  list(): Promise<unknown[]>;
  call(name: string, input: Record<string, unknown>, signal: AbortSignal): Promise<unknown>;
  onChange(f: () => void): void;
}

interface NativeModelContext extends EventTarget {
  getTools(): Promise<unknown[]>;
  executeTool(tool: unknown, input: Record<string, unknown>, options: { signal: AbortSignal }): Promise<unknown>;
}

/** The browser's own API, seen from the isolated world (the page cannot replace it here). */
export function nativeApi(doc: Document): PageApi | null {
  const mc = (doc as unknown as { modelContext?: NativeModelContext }).modelContext;
  if (!mc || typeof mc.getTools !== "function") return null;
  let last = new Map<string, unknown>();
  const list = async (): Promise<unknown[]> => {
    // Chromium's getTools() answers for the whole page: each RegisteredTool names the frame
    // (`window`) that registered it. Every frame's script reports only its own, so a tool is
    // listed once and run in the frame that owns it.
    const all = await mc.getTools();
    const own = (Array.isArray(all) ? all : []).filter((t) => {
      const w = (t as { window?: unknown }).window;
      return w === undefined || w === null || w === doc.defaultView;
    });
    last = new Map(own.map((t) => [String((t as { name?: unknown }).name), t]));
    return own;
  };
  return {
    kind: "native",
    list,
    call: async (name, input, signal) => {
      if (!last.has(name)) await list();
      const tool = last.get(name);
      if (!tool) throw new Error(`the page has no tool named "${name}" (any more)`);
      return mc.executeTool(tool, input, { signal });
    },
    onChange: (f) => mc.addEventListener("toolchange", f),
  };
}

const LIST_TIMEOUT_MS = 3000;

/** The polyfill in the page's world, over the port it handed us. */
export class PolyfillApi implements PageApi {
  readonly kind = "polyfill" as const;
  private nextId = 1;
  private readonly calls = new Map<number, (m: { ok: true; value: string | null } | { ok: false; error: string }) => void>();
  private listWaiters: ((tools: unknown[]) => void)[] = [];
  private changeListeners: (() => void)[] = [];

  constructor(private readonly port: MessagePort) {
    port.onmessage = (e: MessageEvent) => this.receive(e.data);
  }

  private receive(data: unknown): void {
    // size first: a page can post anything, and we only read what fits the caps
    let size = 0;
    try {
      size = typeof data === "string" ? data.length : JSON.stringify(data)?.length ?? 0;
    } catch {
      return;
    }
    const m = size <= MAX_CHANNEL_MESSAGE ? parseChannelMessage(data) : null;
    if (!m) {
      // an oversized result still has to end its call, or the caller would wait for the timeout
      const id = (data as { id?: unknown } | null)?.id;
      if (size > MAX_CHANNEL_MESSAGE && typeof id === "number") this.calls.get(id)?.({ ok: false, error: `the page's answer was over ${MAX_CHANNEL_MESSAGE} bytes and was dropped` });
      return;
    }
    if (m.type === "tools") {
      const ws = this.listWaiters;
      this.listWaiters = [];
      ws.forEach((w) => w(m.tools));
    } else if (m.type === "changed") this.changeListeners.forEach((f) => f());
    else {
      // only ids we issued and still wait for: a forged result for another id changes nothing
      const done = this.calls.get(m.id);
      if (done) done(m.ok ? { ok: true, value: m.value } : { ok: false, error: m.error });
    }
  }

  private send(m: ToChannel): void {
    this.port.postMessage(m);
  }

  list(): Promise<unknown[]> {
    return new Promise((resolve, reject) => {
      const t = setTimeout(() => reject(new Error(`the page's polyfill did not list its tools within ${LIST_TIMEOUT_MS} ms`)), LIST_TIMEOUT_MS);
      this.listWaiters.push((tools) => {
        clearTimeout(t);
        resolve(tools);
      });
      this.send({ type: "list" });
    });
  }

  call(name: string, input: Record<string, unknown>, signal: AbortSignal): Promise<unknown> {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      const finish = () => {
        this.calls.delete(id);
        signal.removeEventListener("abort", onAbort);
      };
      const onAbort = () => {
        finish();
        this.send({ type: "cancel", id });
        reject(new Error("cancelled"));
      };
      signal.addEventListener("abort", onAbort, { once: true });
      this.calls.set(id, (r) => {
        finish();
        if (r.ok) resolve(r.value);
        else reject(new Error(r.error));
      });
      this.send({ type: "call", id, name, input });
    });
  }

  onChange(f: () => void): void {
    this.changeListeners.push(f);
  }
}

export interface Listing {
  tools: PageTool[];
  skills: SkillStatus[];
  problems: string[];
}

/**
 * A frame's tools: the page's (native or polyfill) first, then the skills' tools whose names the
 * page does not use (native tools win), each skill only if its health check passes.
 */
export class FrameTools {
  private skillTools = new Map<string, SkillTool>();
  private pageNames = new Set<string>();
  private readonly running = new Map<string, AbortController>();

  constructor(
    private readonly doc: Document,
    private readonly origin: string,
    public api: PageApi | null,
    public skills: Skill[],
  ) {}

  async list(): Promise<Listing> {
    const problems: string[] = [];
    let tools: PageTool[] = [];
    if (this.api) {
      try {
        const s = sanitiseTools(await this.api.list(), this.origin, this.api.kind);
        tools = s.tools;
        problems.push(...s.problems);
      } catch (e) {
        problems.push(`could not list the page's tools: ${e instanceof Error ? e.message : String(e)}`);
      }
    }
    this.pageNames = new Set(tools.map((t) => t.name));
    const skills: SkillStatus[] = [];
    this.skillTools = new Map();
    for (const skill of this.skills) {
      const problem = healthProblem(this.doc, skill);
      if (problem) {
        skills.push({ name: skill.name, ok: false, problem, tools: [], shadowed: [] });
        continue;
      }
      const status: SkillStatus = { name: skill.name, ok: true, tools: [], shadowed: [] };
      for (const t of skill.tools) {
        if (this.pageNames.has(t.name) || this.skillTools.has(t.name)) {
          status.shadowed.push(t.name);
          continue;
        }
        this.skillTools.set(t.name, t);
        status.tools.push(t.name);
        tools.push({
          name: t.name,
          title: t.title ?? "",
          description: t.description,
          inputSchema: t.inputSchema as unknown as Record<string, unknown>,
          annotations: { ...(t.annotations ?? {}) },
          origin: this.origin,
          source: "skill",
          skill: skill.name,
        });
      }
      skills.push(status);
    }
    return { tools, skills, problems };
  }

  /** Runs a tool with a deadline; `callId` lets the panel cancel it. */
  async call(callId: string, name: string, input: unknown, timeoutMs: number): Promise<CallOutcome> {
    const started = performance.now();
    const ms = () => Math.round(performance.now() - started);
    if (typeof input !== "object" || input === null || Array.isArray(input)) return { ok: false, error: "the input must be a JSON object", ms: 0 };
    const ac = new AbortController();
    this.running.set(callId, ac);
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      ac.abort(new Error(`timed out after ${timeoutMs} ms`));
    }, timeoutMs);
    try {
      const aborted = new Promise<never>((_, rej) =>
        ac.signal.addEventListener("abort", () => rej(ac.signal.reason instanceof Error ? ac.signal.reason : new Error("cancelled")), { once: true }),
      );
      const skill = this.pageNames.has(name) ? undefined : this.skillTools.get(name);
      let raw: unknown;
      if (skill) raw = await Promise.race([runSkillTool(this.doc, skill, input, ac.signal), aborted]);
      else if (this.api) raw = await Promise.race([this.api.call(name, input as Record<string, unknown>, ac.signal), aborted]);
      else return { ok: false, error: `no tool named "${name}" on this page`, ms: ms() };
      const capped = capResult(raw);
      if (!capped.ok) return { ok: false, error: capped.error, ms: ms() };
      return { ok: true, result: capped.result, truncated: capped.truncated, bytes: capped.bytes, ms: ms() };
    } catch (e) {
      const msg = e instanceof Error ? e.message : String(e);
      const error = ac.signal.aborted && ac.signal.reason instanceof Error ? ac.signal.reason.message : msg;
      return timedOut ? { ok: false, error, ms: ms(), timedOut } : { ok: false, error, ms: ms() };
    } finally {
      clearTimeout(timer);
      this.running.delete(callId);
    }
  }

  cancel(callId: string): boolean {
    const ac = this.running.get(callId);
    ac?.abort(new Error("cancelled by the person"));
    return ac !== undefined;
  }
}
