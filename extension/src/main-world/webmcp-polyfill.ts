/**
 * A WebMCP polyfill for pages in browsers without the native API (DESIGN §12): the current
 * draft's `document.modelContext` — `registerTool(tool, {signal})`, `getTools()`,
 * `executeTool(tool, input, {signal})`, `toolchange` — plus declarative `<form toolname>` tools
 * and the legacy `navigator.modelContext` alias. Behaviour follows Chromium 156's native one
 * (checked by hand): bad or duplicate names reject with `InvalidStateError`, a missing
 * `description`/`execute` with `TypeError`, results are JSON-stringified (strings pass as they
 * are), aborting the registration signal unregisters.
 *
 * It runs in the page's own world, so it holds nothing worth stealing: no extension id, no
 * secret, no `chrome.*`. A page can replace or break it; the isolated content script treats all
 * it says as untrusted either way.
 */

import { stringifyResult, TOOL_NAME_RE } from "../shared/webmcp";

type Execute = (input: Record<string, unknown>, client: { signal: AbortSignal }) => unknown;

interface Entry {
  name: string;
  title: string;
  description: string;
  inputSchema?: Record<string, unknown>;
  annotations?: Record<string, unknown>;
  execute: Execute;
  form?: HTMLFormElement;
}

export interface RegisteredToolInfo {
  name: string;
  title: string;
  description: string;
  inputSchema?: Record<string, unknown>;
  annotations?: Record<string, unknown>;
  origin: string;
}

/** The object pages see as `document.modelContext`. */
export interface ModelContextLike extends EventTarget {
  registerTool(tool: unknown, options?: { signal?: AbortSignal; exposedTo?: unknown }): Promise<void>;
  getTools(): Promise<RegisteredToolInfo[]>;
  executeTool(tool: unknown, input: unknown, options?: { signal?: AbortSignal }): Promise<string | null>;
}

/** True when the browser (not a page script or an older polyfill of ours) provides the API. */
export function hasNativeWebMcp(win: Window): boolean {
  const d = win.document as Document & { modelContext?: unknown };
  if (!("modelContext" in d) || typeof d.modelContext !== "object" || d.modelContext === null) return false;
  // a native object's getTools is a built-in function; a page-made imitation's is not
  const gt = (d.modelContext as { getTools?: unknown }).getTools;
  return typeof gt === "function" && /\{\s*\[native code\]\s*\}/.test(Function.prototype.toString.call(gt));
}

function invalidState(win: Window, message: string): DOMException {
  return new (win as unknown as { DOMException: typeof DOMException }).DOMException(message, "InvalidStateError");
}

export class PolyfillModelContext extends EventTarget implements ModelContextLike {
  private readonly tools = new Map<string, Entry>();
  private changeQueued = false;
  ontoolchange: ((e: Event) => void) | null = null;

  constructor(private readonly win: Window) {
    super();
  }

  async registerTool(tool: unknown, options: { signal?: AbortSignal; exposedTo?: unknown } = {}): Promise<void> {
    if (typeof tool !== "object" || tool === null) throw new TypeError("registerTool: the tool must be an object");
    const t = tool as Record<string, unknown>;
    if (typeof t.description !== "string") throw new TypeError("registerTool: the tool needs a description (a string)");
    if (typeof t.execute !== "function") throw new TypeError("registerTool: the tool needs an execute function");
    if (t.inputSchema !== undefined && (typeof t.inputSchema !== "object" || t.inputSchema === null)) {
      throw new TypeError("registerTool: inputSchema must be an object");
    }
    // the polyfill cannot limit who sees a tool, so it refuses to pretend it can (DESIGN §12)
    if (options.exposedTo !== undefined) throw new (this.win as unknown as { DOMException: typeof DOMException }).DOMException("exposedTo is not supported by this polyfill", "NotSupportedError");
    const name = t.name;
    if (typeof name !== "string" || !TOOL_NAME_RE.test(name)) throw invalidState(this.win, "Invalid tool name");
    if (this.tools.has(name)) throw invalidState(this.win, "Duplicate tool name");
    if (options.signal?.aborted) return;
    this.tools.set(name, {
      name,
      title: typeof t.title === "string" ? t.title : "",
      description: t.description,
      inputSchema: t.inputSchema as Record<string, unknown> | undefined,
      annotations: typeof t.annotations === "object" && t.annotations !== null ? { ...(t.annotations as Record<string, unknown>) } : undefined,
      execute: t.execute as Execute,
    });
    const entry = this.tools.get(name);
    options.signal?.addEventListener("abort", () => {
      // only the registration this signal made: a later tool of the same name stays
      if (this.tools.get(name) === entry) {
        this.tools.delete(name);
        this.changed();
      }
    });
    this.changed();
  }

  async getTools(): Promise<RegisteredToolInfo[]> {
    return [...this.tools.values()].map((e) => {
      const info: RegisteredToolInfo = { name: e.name, title: e.title, description: e.description, origin: this.win.location.origin };
      if (e.inputSchema) info.inputSchema = e.inputSchema;
      if (e.annotations) info.annotations = e.annotations;
      return info;
    });
  }

  async executeTool(tool: unknown, input: unknown, options: { signal?: AbortSignal } = {}): Promise<string | null> {
    const name = typeof tool === "object" && tool !== null ? (tool as { name?: unknown }).name : undefined;
    if (typeof name !== "string") throw new TypeError("executeTool: the first argument must be a tool from getTools()");
    if (typeof input !== "object" || input === null || Array.isArray(input)) throw new TypeError("executeTool: invalid input object: value is not an object");
    const entry = this.tools.get(name);
    if (!entry) throw invalidState(this.win, `No tool named "${name}"`);
    const signal = options.signal ?? new AbortController().signal;
    if (signal.aborted) throw new DOMException("signal is aborted without reason", "AbortError");
    const aborted = new Promise<never>((_, reject) => signal.addEventListener("abort", () => reject(new DOMException("signal is aborted without reason", "AbortError")), { once: true }));
    // called now, not in a later microtask: the tool must see an abort that comes right after
    let run: Promise<unknown>;
    try {
      run = Promise.resolve(entry.execute(input as Record<string, unknown>, { signal }));
    } catch (e) {
      run = Promise.reject(e);
    }
    const value = await Promise.race([run, aborted]);
    if (value === null && entry.form) return null;
    return stringifyResult(value);
  }

  /** Declarative tools: the forms currently in the document with a `toolname`. */
  syncForms(doc: Document): void {
    const forms = new Map<string, HTMLFormElement>();
    doc.querySelectorAll<HTMLFormElement>("form[toolname]").forEach((f) => {
      const n = f.getAttribute("toolname") ?? "";
      if (TOOL_NAME_RE.test(n) && !forms.has(n)) forms.set(n, f);
    });
    let changed = false;
    for (const [name, e] of this.tools) {
      if (e.form && forms.get(name) !== e.form) {
        this.tools.delete(name);
        changed = true;
      }
    }
    for (const [name, form] of forms) {
      if (this.tools.has(name)) continue;
      this.tools.set(name, {
        name,
        title: "",
        description: form.getAttribute("tooldescription") ?? "",
        inputSchema: formSchema(form),
        execute: (input) => submitForm(form, input),
        form,
      });
      changed = true;
    }
    if (changed) this.changed();
  }

  private changed(): void {
    if (this.changeQueued) return;
    this.changeQueued = true;
    queueMicrotask(() => {
      this.changeQueued = false;
      const ev = new Event("toolchange");
      this.ontoolchange?.(ev);
      this.dispatchEvent(ev);
    });
  }
}

type Control = HTMLInputElement | HTMLSelectElement | HTMLTextAreaElement;

function controls(form: HTMLFormElement): Control[] {
  return [...form.elements].filter((el): el is Control => {
    const tag = el.tagName;
    if (tag !== "INPUT" && tag !== "SELECT" && tag !== "TEXTAREA") return false;
    const c = el as Control;
    return c.name !== "" && !["submit", "button", "reset", "hidden", "image", "file"].includes(c.type);
  });
}

/** The input schema of a declarative form, as Chromium builds it (names, types, enums, required). */
export function formSchema(form: HTMLFormElement): Record<string, unknown> {
  const properties: Record<string, Record<string, unknown>> = {};
  const required: string[] = [];
  for (const c of controls(form)) {
    if (properties[c.name]) continue;
    const p: Record<string, unknown> = {};
    if (c.tagName === "SELECT") {
      p.type = "string";
      p.enum = [...(c as HTMLSelectElement).options].map((o) => o.value);
    } else if (c.type === "number" || c.type === "range") p.type = "number";
    else if (c.type === "checkbox") p.type = "boolean";
    else p.type = "string";
    const d = c.getAttribute("toolparamdescription");
    if (d) p.description = d;
    properties[c.name] = p;
    if (c.required) required.push(c.name);
  }
  const schema: Record<string, unknown> = { type: "object", properties };
  if (required.length > 0) schema.required = required;
  return schema;
}

interface AgentSubmitEvent extends Event {
  agentInvoked?: boolean;
  respondWith?: (p: unknown) => void;
}

/**
 * Fills the form from `input` and, with `toolautosubmit`, submits it. The page answers through
 * `event.respondWith(promise)` in its submit handler (as with the native API); a submit nobody
 * answered navigates, which is a `null` result.
 */
async function submitForm(form: HTMLFormElement, input: Record<string, unknown>): Promise<unknown> {
  for (const c of controls(form)) {
    if (!(c.name in input)) continue;
    const v = input[c.name];
    if (c.type === "checkbox") (c as HTMLInputElement).checked = v === true;
    else c.value = v === undefined || v === null ? "" : String(v);
    c.dispatchEvent(new Event("input", { bubbles: true }));
    c.dispatchEvent(new Event("change", { bubbles: true }));
  }
  if (!form.hasAttribute("toolautosubmit")) return { filled: true, submitted: false, note: "the form was filled; the person submits it" };
  let response: unknown;
  let answered = false;
  const tag = (e: Event) => {
    const ev = e as AgentSubmitEvent;
    ev.agentInvoked = true;
    ev.respondWith = (p) => {
      answered = true;
      response = p;
    };
  };
  // capture on the window runs before the page's own submit handlers
  const win = form.ownerDocument.defaultView ?? window;
  win.addEventListener("submit", tag, { capture: true, once: true });
  try {
    form.requestSubmit();
  } finally {
    win.removeEventListener("submit", tag, { capture: true });
  }
  if (answered) return await response;
  return null;
}

/**
 * Installs the polyfill on `win` unless the browser has the API natively. Returns the installed
 * object (or null when native wins). Cost on page load: two property definitions; forms are
 * looked for only once the document has been parsed.
 */
export function installPolyfill(win: Window): PolyfillModelContext | null {
  if (hasNativeWebMcp(win)) return null;
  const doc = win.document;
  const existing = (doc as unknown as { modelContext?: unknown }).modelContext;
  if (existing instanceof PolyfillModelContext) return existing;
  const ctx = new PolyfillModelContext(win);
  const define = (target: object) => {
    try {
      Object.defineProperty(target, "modelContext", { value: ctx, configurable: true, enumerable: false, writable: false });
    } catch {
      // a page that locked the property keeps its own; we then have nothing to list
    }
  };
  define(doc);
  // legacy alias for pages written against the older draft
  define(win.navigator);
  const scan = () => ctx.syncForms(doc);
  const watch = () => {
    scan();
    let queued = false;
    new MutationObserver(() => {
      if (queued) return;
      queued = true;
      setTimeout(() => {
        queued = false;
        scan();
      }, 50);
    }).observe(doc.documentElement ?? doc, { childList: true, subtree: true, attributes: true, attributeFilter: ["toolname", "tooldescription"] });
  };
  if (doc.readyState === "loading") doc.addEventListener("DOMContentLoaded", watch, { once: true });
  else watch();
  return ctx;
}
