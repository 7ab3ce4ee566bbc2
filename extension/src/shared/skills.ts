/**
 * SKILLs (DESIGN §12): tools for sites without WebMCP, written as data. A skill names the pages it
 * is for (`match`, URL globs), the selectors that must exist for it to work (`healthCheck`), and
 * tools whose `steps` come from a fixed vocabulary that our own code runs — there is no field
 * that holds code, and nothing is ever evaluated.
 *
 * Guarantee: `validateSkill` accepts only that shape (unknown fields are errors, so a typo or a
 * smuggled `"script"` never passes silently), and every error names the field, the value and
 * what to write instead. The JSON Schema in `skills/skill.schema.json` describes the same format
 * for editors; this validator is the one the extension trusts.
 */

import { TOOL_NAME_RE } from "./webmcp";

export const SKILL_FORMAT = "ground-link-skill";
export const SKILL_FORMAT_VERSION = 1;
export const STEP_KINDS = ["fill", "click", "select", "press", "waitFor", "read", "readAll"] as const;
export type StepKind = (typeof STEP_KINDS)[number];
export const PRESS_KEYS = ["Enter", "Tab", "Escape", "ArrowDown", "ArrowUp", "Space"] as const;
export const SKILL_NAME_RE = /^[a-z0-9][a-z0-9-]{0,63}$/;
const INTO_RE = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;
export const MAX_WAIT_MS = 10_000;
const LIMITS = { match: 20, healthCheck: 20, tools: 20, steps: 50, readAllLimit: 200, fields: 20, selector: 500, description: 2048 };

export type Step =
  | { do: "fill"; selector: string; value: string }
  | { do: "click"; selector: string }
  | { do: "select"; selector: string; value: string }
  | { do: "press"; selector: string; key: (typeof PRESS_KEYS)[number] }
  | { do: "waitFor"; selector: string; timeoutMs?: number; gone?: boolean }
  | { do: "read"; selector: string; into: string; attr?: string }
  | { do: "readAll"; selector: string; into: string; fields?: Record<string, string>; limit?: number };

export interface SkillTool {
  name: string;
  title?: string;
  description: string;
  inputSchema: { type: "object"; properties: Record<string, ParamSchema>; required?: string[] };
  annotations?: { readOnlyHint?: boolean; consequentialHint?: boolean };
  steps: Step[];
}

export interface ParamSchema {
  type: "string" | "number" | "integer" | "boolean";
  description?: string;
  enum?: (string | number)[];
}

export interface Skill {
  format: typeof SKILL_FORMAT;
  formatVersion: typeof SKILL_FORMAT_VERSION;
  name: string;
  version: string;
  description?: string;
  match: string[];
  healthCheck: string[];
  tools: SkillTool[];
}

export type Validation<T> = { ok: true; value: T } | { ok: false; errors: string[] };

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === "object" && v !== null && !Array.isArray(v);
const show = (v: unknown) => {
  const s = JSON.stringify(v);
  return s === undefined ? String(v) : s.length > 60 ? `${s.slice(0, 57)}...` : s;
};

class Checker {
  readonly errors: string[] = [];
  err(path: string, msg: string): void {
    if (this.errors.length < 50) this.errors.push(`${path}: ${msg}`);
  }
  only(o: Obj, path: string, allowed: string[]): void {
    for (const k of Object.keys(o)) if (!allowed.includes(k)) this.err(path ? `${path}.${k}` : k, `unknown field; a skill ${path ? `${path.replace(/\[\d+\]/g, "[]")} ` : ""}has only ${allowed.join(", ")}`);
  }
  str(o: Obj, key: string, path: string, opts: { required?: boolean; max?: number; re?: RegExp; hint?: string } = {}): string | undefined {
    const v = o[key];
    const p = path ? `${path}.${key}` : key;
    if (v === undefined) {
      if (opts.required) this.err(p, `missing; ${opts.hint ?? "it is required"}`);
      return undefined;
    }
    if (typeof v !== "string") return void this.err(p, `${show(v)} is not a string`);
    if (opts.max !== undefined && v.length > opts.max) return void this.err(p, `longer than ${opts.max} characters`);
    if (opts.re && !opts.re.test(v)) return void this.err(p, `${show(v)} is not valid; ${opts.hint ?? `it must match ${opts.re}`}`);
    return v;
  }
}

/** True when `sel` parses as a CSS selector (where a DOM is at hand; the worker has none). */
function selectorOk(sel: string): boolean {
  if (typeof document === "undefined") return true;
  try {
    document.createDocumentFragment().querySelector(sel.replace(/\{[A-Za-z_][A-Za-z0-9_]*\}/g, "x"));
    return true;
  } catch {
    return false;
  }
}

/** `{param}` names used in a template. */
export function templateParams(s: string): string[] {
  return [...s.matchAll(/\{([A-Za-z_][A-Za-z0-9_]*)\}/g)].map((m) => m[1] ?? "");
}

export function validateSkill(raw: unknown): Validation<Skill> {
  const c = new Checker();
  if (!isObj(raw)) return { ok: false, errors: [`the skill is ${show(raw)}, not a JSON object`] };
  c.only(raw, "", ["format", "formatVersion", "name", "version", "description", "match", "healthCheck", "tools"]);
  if (raw.format !== SKILL_FORMAT) c.err("format", `${show(raw.format)}; a skill file says "format": "${SKILL_FORMAT}"`);
  if (raw.formatVersion !== SKILL_FORMAT_VERSION) c.err("formatVersion", `${show(raw.formatVersion)}; this extension reads formatVersion ${SKILL_FORMAT_VERSION}`);
  c.str(raw, "name", "", { required: true, re: SKILL_NAME_RE, hint: "use 1–64 lower-case letters, digits and -" });
  c.str(raw, "version", "", { required: true, max: 32 });
  c.str(raw, "description", "", { max: LIMITS.description });
  checkList(c, raw.match, "match", LIMITS.match, (v, p) => {
    if (typeof v !== "string") return c.err(p, `${show(v)} is not a string`);
    if (!/^https?:\/\/[^/]+\/.*$/.test(v)) c.err(p, `${show(v)} is not a URL glob; write e.g. "http://127.0.0.1:*/search*" (scheme, host, a path; * matches anything)`);
  });
  checkList(c, raw.healthCheck, "healthCheck", LIMITS.healthCheck, (v, p) => checkSelector(c, v, p));
  const names = new Set<string>();
  checkList(c, raw.tools, "tools", LIMITS.tools, (v, p) => {
    const name = checkTool(c, v, p);
    if (name && names.has(name)) c.err(`${p}.name`, `"${name}" is used by two tools; names must differ`);
    if (name) names.add(name);
  });
  return c.errors.length === 0 ? { ok: true, value: raw as unknown as Skill } : { ok: false, errors: c.errors };
}

function checkList(c: Checker, v: unknown, path: string, max: number, each: (v: unknown, path: string) => void): void {
  if (!Array.isArray(v)) return void c.err(path, v === undefined ? "missing; it is a list" : `${show(v)} is not a list`);
  if (v.length === 0) return void c.err(path, "empty; give at least one");
  if (v.length > max) return void c.err(path, `${v.length} entries; at most ${max}`);
  v.forEach((x, i) => each(x, `${path}[${i}]`));
}

function checkSelector(c: Checker, v: unknown, path: string): void {
  if (typeof v !== "string" || v.trim() === "") return c.err(path, `${show(v)} is not a CSS selector`);
  if (v.length > LIMITS.selector) return c.err(path, `longer than ${LIMITS.selector} characters`);
  if (!selectorOk(v)) c.err(path, `${show(v)} is not a valid CSS selector`);
}

function checkTool(c: Checker, v: unknown, p: string): string | undefined {
  if (!isObj(v)) return void c.err(p, `${show(v)} is not an object`);
  c.only(v, p, ["name", "title", "description", "inputSchema", "annotations", "steps"]);
  const name = c.str(v, "name", p, { required: true, re: TOOL_NAME_RE, hint: "use 1–128 of A-Z a-z 0-9 _ . -" });
  c.str(v, "title", p, { max: 200 });
  c.str(v, "description", p, { required: true, max: LIMITS.description, hint: "say what the tool does, for the model" });
  const params = checkInputSchema(c, v.inputSchema, `${p}.inputSchema`);
  if (v.annotations !== undefined) {
    if (!isObj(v.annotations)) c.err(`${p}.annotations`, "is not an object");
    else {
      c.only(v.annotations, `${p}.annotations`, ["readOnlyHint", "consequentialHint"]);
      for (const k of ["readOnlyHint", "consequentialHint"]) {
        const a = v.annotations[k];
        if (a !== undefined && typeof a !== "boolean") c.err(`${p}.annotations.${k}`, `${show(a)} is not true or false`);
      }
    }
  }
  checkList(c, v.steps, `${p}.steps`, LIMITS.steps, (s, sp) => checkStep(c, s, sp, params));
  return name;
}

function checkInputSchema(c: Checker, v: unknown, p: string): Set<string> {
  const params = new Set<string>();
  if (v === undefined) {
    c.err(p, 'missing; write {"type": "object", "properties": {}} for a tool without parameters');
    return params;
  }
  if (!isObj(v)) {
    c.err(p, "is not an object");
    return params;
  }
  c.only(v, p, ["type", "properties", "required", "additionalProperties"]);
  if (v.type !== "object") c.err(`${p}.type`, `${show(v.type)}; a tool's input is "object"`);
  if (!isObj(v.properties)) c.err(`${p}.properties`, "missing or not an object");
  else {
    for (const [k, s] of Object.entries(v.properties)) {
      const pp = `${p}.properties.${k}`;
      if (!INTO_RE.test(k)) c.err(pp, "a parameter name is 1–64 of A-Z a-z 0-9 _, not starting with a digit");
      if (!isObj(s)) {
        c.err(pp, "is not an object");
        continue;
      }
      c.only(s, pp, ["type", "description", "enum"]);
      if (!["string", "number", "integer", "boolean"].includes(s.type as string)) c.err(`${pp}.type`, `${show(s.type)}; use string, number, integer or boolean`);
      if (s.description !== undefined && typeof s.description !== "string") c.err(`${pp}.description`, "is not a string");
      if (s.enum !== undefined && (!Array.isArray(s.enum) || s.enum.some((e) => typeof e !== "string" && typeof e !== "number"))) c.err(`${pp}.enum`, "is not a list of strings or numbers");
      params.add(k);
    }
  }
  if (v.required !== undefined) {
    if (!Array.isArray(v.required)) c.err(`${p}.required`, "is not a list");
    else v.required.forEach((r, i) => typeof r === "string" && params.has(r) ? undefined : c.err(`${p}.required[${i}]`, `${show(r)} is not one of the properties`));
  }
  if (v.additionalProperties !== undefined && typeof v.additionalProperties !== "boolean") c.err(`${p}.additionalProperties`, "is not true or false");
  return params;
}

const STEP_FIELDS: Record<StepKind, { required: string[]; optional: string[] }> = {
  fill: { required: ["selector", "value"], optional: [] },
  click: { required: ["selector"], optional: [] },
  select: { required: ["selector", "value"], optional: [] },
  press: { required: ["selector", "key"], optional: [] },
  waitFor: { required: ["selector"], optional: ["timeoutMs", "gone"] },
  read: { required: ["selector", "into"], optional: ["attr"] },
  readAll: { required: ["selector", "into"], optional: ["fields", "limit"] },
};

function checkStep(c: Checker, v: unknown, p: string, params: Set<string>): void {
  if (!isObj(v)) return c.err(p, `${show(v)} is not an object`);
  const kind = v.do;
  if (typeof kind !== "string" || !(STEP_KINDS as readonly string[]).includes(kind)) {
    return c.err(`${p}.do`, `${show(kind)} is not a step; use one of ${STEP_KINDS.join(", ")}`);
  }
  const f = STEP_FIELDS[kind as StepKind];
  c.only(v, p, ["do", ...f.required, ...f.optional]);
  for (const r of f.required) if (v[r] === undefined) c.err(`${p}.${r}`, `missing; a ${kind} step needs ${f.required.join(" and ")}`);
  if (v.selector !== undefined) checkSelector(c, v.selector, `${p}.selector`);
  const tmpl = (key: string) => {
    const s = v[key];
    if (typeof s !== "string") return;
    for (const name of templateParams(s)) if (!params.has(name)) c.err(`${p}.${key}`, `uses {${name}}, which is not a parameter of this tool's inputSchema`);
  };
  tmpl("selector");
  if (v.value !== undefined) {
    if (typeof v.value !== "string") c.err(`${p}.value`, `${show(v.value)} is not a string (write "{param}" to use a parameter)`);
    else tmpl("value");
  }
  if (kind === "press" && !(PRESS_KEYS as readonly unknown[]).includes(v.key)) c.err(`${p}.key`, `${show(v.key)}; use one of ${PRESS_KEYS.join(", ")}`);
  if (v.timeoutMs !== undefined && (typeof v.timeoutMs !== "number" || !Number.isInteger(v.timeoutMs) || v.timeoutMs < 0 || v.timeoutMs > MAX_WAIT_MS)) {
    c.err(`${p}.timeoutMs`, `${show(v.timeoutMs)}; a whole number of milliseconds up to ${MAX_WAIT_MS}`);
  }
  if (v.gone !== undefined && typeof v.gone !== "boolean") c.err(`${p}.gone`, "is not true or false");
  if (v.into !== undefined && (typeof v.into !== "string" || !INTO_RE.test(v.into))) c.err(`${p}.into`, `${show(v.into)}; a result key is 1–64 of A-Z a-z 0-9 _`);
  if (v.attr !== undefined && (typeof v.attr !== "string" || !/^[a-zA-Z][a-zA-Z0-9_:-]{0,63}$/.test(v.attr))) c.err(`${p}.attr`, `${show(v.attr)} is not an attribute name`);
  if (v.limit !== undefined && (typeof v.limit !== "number" || !Number.isInteger(v.limit) || v.limit < 1 || v.limit > LIMITS.readAllLimit)) c.err(`${p}.limit`, `${show(v.limit)}; 1 to ${LIMITS.readAllLimit}`);
  if (v.fields !== undefined) {
    if (!isObj(v.fields)) c.err(`${p}.fields`, 'is not an object like {"title": ".title", "link": "a@href"}');
    else {
      const entries = Object.entries(v.fields);
      if (entries.length > LIMITS.fields) c.err(`${p}.fields`, `${entries.length} fields; at most ${LIMITS.fields}`);
      for (const [k, s] of entries) {
        if (!INTO_RE.test(k)) c.err(`${p}.fields.${k}`, "a field name is 1–64 of A-Z a-z 0-9 _");
        if (typeof s !== "string") c.err(`${p}.fields.${k}`, `${show(s)} is not "selector" or "selector@attribute"`);
        else {
          const sel = splitFieldSelector(s).selector;
          if (sel !== "" && !selectorOk(sel)) c.err(`${p}.fields.${k}`, `${show(s)} is not a valid CSS selector`);
        }
      }
    }
  }
}

/** `"a@href"` → selector `a`, attribute `href`; `"@href"` reads the row itself; `".t"` its text. */
export function splitFieldSelector(s: string): { selector: string; attr?: string } {
  const at = s.lastIndexOf("@");
  if (at >= 0 && /^[a-zA-Z][a-zA-Z0-9_:-]*$/.test(s.slice(at + 1))) return { selector: s.slice(0, at).trim(), attr: s.slice(at + 1) };
  return { selector: s.trim() };
}

/** URL glob: `*` matches any run of characters (also across `/` and `:`), the rest literally. */
export function globMatches(glob: string, url: string): boolean {
  const re = new RegExp(`^${glob.split("*").map((part) => part.replace(/[.+?^${}()|[\]\\]/g, "\\$&")).join(".*")}$`);
  return re.test(url);
}

export function skillMatches(skill: Skill, url: string): boolean {
  return skill.match.some((g) => globMatches(g, url));
}

/**
 * Checks a call's input against a skill tool's parameters: required present, types and enums
 * right, nothing unknown. Errors name the parameter.
 */
export function checkInput(schema: SkillTool["inputSchema"], input: unknown): { ok: true; value: Record<string, unknown> } | { ok: false; error: string } {
  if (!isObj(input)) return { ok: false, error: "the input must be a JSON object" };
  for (const r of schema.required ?? []) if (input[r] === undefined) return { ok: false, error: `missing parameter "${r}"` };
  for (const [k, v] of Object.entries(input)) {
    const s = schema.properties[k];
    if (!s) return { ok: false, error: `unknown parameter "${k}"; this tool takes ${Object.keys(schema.properties).join(", ") || "no parameters"}` };
    const okType =
      s.type === "string" ? typeof v === "string" : s.type === "boolean" ? typeof v === "boolean" : s.type === "integer" ? Number.isInteger(v) : typeof v === "number" && Number.isFinite(v);
    if (!okType) return { ok: false, error: `parameter "${k}" is ${show(v)}, not a ${s.type}` };
    if (s.enum && !s.enum.includes(v as string | number)) return { ok: false, error: `parameter "${k}" is ${show(v)}; use one of ${s.enum.map((e) => show(e)).join(", ")}` };
  }
  return { ok: true, value: input };
}
