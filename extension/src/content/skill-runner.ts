/**
 * Runs a skill's steps on the page (DESIGN §12): our own code, a fixed vocabulary, selectors with
 * `{param}` filled from the call's checked input. Nothing from the skill file is evaluated.
 *
 * A parameter put into a selector is CSS-string-escaped, so `[data-id="{id}"]` stays one
 * attribute test whatever the model sends; into a value (`fill`, `select`) it goes as text.
 */

import { checkInput, MAX_WAIT_MS, splitFieldSelector, type Skill, type SkillTool, type Step } from "../shared/skills";

export class StepError extends Error {}

/** The first health-check selector missing on the page, as a sentence, or null when all are there. */
export function healthProblem(doc: Document, skill: Skill): string | null {
  for (const sel of skill.healthCheck) {
    let found: Element | null = null;
    try {
      found = doc.querySelector(sel);
    } catch {
      return `skill "${skill.name}": health check selector "${sel}" is not valid CSS`;
    }
    if (!found) return `skill "${skill.name}": health check failed — "${sel}" is not on this page, so none of its tools were registered (the site may have changed; update the skill)`;
  }
  return null;
}

function cssString(v: string): string {
  return v.replace(/[\\"'\n\r\f]/g, (c) => `\\${c.charCodeAt(0).toString(16)} `);
}

function fill(template: string, input: Record<string, unknown>, forSelector: boolean): string {
  return template.replace(/\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (_, name: string) => {
    const v = input[name];
    const s = v === undefined || v === null ? "" : String(v);
    return forSelector ? cssString(s) : s;
  });
}

function one(doc: Document, selector: string): Element {
  const el = doc.querySelector(selector);
  if (!el) throw new StepError(`no element matches "${selector}"`);
  return el;
}

/** Sets a form control's value the way a person's typing would be seen by frameworks. */
function setValue(el: Element, value: string): void {
  const win = el.ownerDocument.defaultView;
  if (!win) throw new StepError("the page has no window");
  const proto = el instanceof win.HTMLTextAreaElement ? win.HTMLTextAreaElement.prototype : el instanceof win.HTMLSelectElement ? win.HTMLSelectElement.prototype : el instanceof win.HTMLInputElement ? win.HTMLInputElement.prototype : null;
  if (!proto) throw new StepError(`"${describe(el)}" is not an input, textarea or select`);
  // the prototype's setter, not the element's own: React-like pages shadow `value` on the element
  Object.getOwnPropertyDescriptor(proto, "value")?.set?.call(el, value);
  el.dispatchEvent(new win.Event("input", { bubbles: true }));
  el.dispatchEvent(new win.Event("change", { bubbles: true }));
}

function describe(el: Element): string {
  return `${el.tagName.toLowerCase()}${el.id ? `#${el.id}` : ""}`;
}

function readText(el: Element, attr?: string): string | null {
  if (attr) return el.getAttribute(attr);
  const win = el.ownerDocument.defaultView;
  if (win && (el instanceof win.HTMLInputElement || el instanceof win.HTMLTextAreaElement || el instanceof win.HTMLSelectElement)) return el.value;
  return (el.textContent ?? "").replace(/\s+/g, " ").trim();
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((res, rej) => {
    const t = setTimeout(res, ms);
    signal.addEventListener("abort", () => {
      clearTimeout(t);
      rej(new StepError("cancelled"));
    }, { once: true });
  });
}

async function waitFor(doc: Document, selector: string, timeoutMs: number, gone: boolean, signal: AbortSignal): Promise<void> {
  const end = Date.now() + Math.min(timeoutMs, MAX_WAIT_MS);
  for (;;) {
    const present = doc.querySelector(selector) !== null;
    if (present !== gone) return;
    if (Date.now() >= end) throw new StepError(`"${selector}" ${gone ? "was still there" : "did not appear"} within ${timeoutMs} ms`);
    await sleep(50, signal);
  }
}

const KEY_CODES: Record<string, string> = { Enter: "Enter", Tab: "Tab", Escape: "Escape", ArrowDown: "ArrowDown", ArrowUp: "ArrowUp", Space: " " };

function press(el: Element, key: string): void {
  const win = el.ownerDocument.defaultView;
  if (!win) throw new StepError("the page has no window");
  const init = { key: KEY_CODES[key] ?? key, code: key === "Space" ? "Space" : key, bubbles: true, cancelable: true };
  const down = el.dispatchEvent(new win.KeyboardEvent("keydown", init));
  el.dispatchEvent(new win.KeyboardEvent("keyup", init));
  // script-made key events have no default action; Enter in a form field submits like a person's would
  if (down && key === "Enter" && el instanceof win.HTMLInputElement && el.form) el.form.requestSubmit();
}

async function runStep(doc: Document, step: Step, input: Record<string, unknown>, out: Record<string, unknown>, signal: AbortSignal): Promise<void> {
  const selector = fill(step.selector, input, true);
  switch (step.do) {
    case "fill":
    case "select": {
      const el = one(doc, selector);
      const value = fill(step.value, input, false);
      if (step.do === "select" && el instanceof (doc.defaultView?.HTMLSelectElement ?? HTMLSelectElement) && ![...el.options].some((o) => o.value === value)) {
        throw new StepError(`"${selector}" has no option "${value}"`);
      }
      setValue(el, value);
      return;
    }
    case "click": {
      const el = one(doc, selector) as HTMLElement;
      if (typeof el.click !== "function") throw new StepError(`"${selector}" cannot be clicked`);
      el.click();
      return;
    }
    case "press":
      press(one(doc, selector), step.key);
      return;
    case "waitFor":
      await waitFor(doc, selector, step.timeoutMs ?? 3000, step.gone === true, signal);
      return;
    case "read":
      out[step.into] = readText(one(doc, selector), step.attr);
      return;
    case "readAll": {
      const rows = [...doc.querySelectorAll(selector)].slice(0, step.limit ?? 50);
      out[step.into] = rows.map((row) => {
        if (!step.fields) return readText(row);
        const rec: Record<string, string | null> = {};
        for (const [k, spec] of Object.entries(step.fields)) {
          const f = splitFieldSelector(spec);
          const el = f.selector === "" ? row : row.querySelector(f.selector);
          rec[k] = el ? readText(el, f.attr) : null;
        }
        return rec;
      });
      return;
    }
  }
}

/**
 * Runs one skill tool: checks the input, then each step in order; the first failing step stops
 * the run with an error naming its position and what was missing. The result is JSON of what the
 * `read`/`readAll` steps collected (or `{"done": true}`).
 */
export async function runSkillTool(doc: Document, tool: SkillTool, rawInput: unknown, signal: AbortSignal): Promise<string> {
  const checked = checkInput(tool.inputSchema, rawInput);
  if (!checked.ok) throw new StepError(`${tool.name}: ${checked.error}`);
  const out: Record<string, unknown> = {};
  for (const [i, step] of tool.steps.entries()) {
    if (signal.aborted) throw new StepError("cancelled");
    try {
      await runStep(doc, step, checked.value, out, signal);
    } catch (e) {
      throw new StepError(`${tool.name}: step ${i + 1} (${step.do}) failed: ${e instanceof Error ? e.message : String(e)}`);
    }
  }
  return JSON.stringify(Object.keys(out).length > 0 ? out : { done: true });
}
