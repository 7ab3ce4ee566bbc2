/**
 * The `<tool>{json}</tool>` parser of DESIGN §2.1, the TypeScript twin of the Rust parser
 * (`src/parser.rs`); both are held to `tests/vectors/tool_blocks.json`.
 *
 * Guarantees: one forward pass; every opening tag yields exactly one entry — a call, or an error
 * that tells the model what was wrong — so a bad block is reported, never dropped; text inside a
 * JSON string never opens or closes a block; a string or bracket still open at the end of the
 * text makes the block `unterminated` and runs nothing (it may still be streaming).
 *
 * Rules, in short: tags are `<tool` + optional whitespace + `>` (and `</tool …>`), lowercase, no
 * attributes. Before the JSON: whitespace, one fence, one language label, up to two code-block
 * button labels (what a page's text puts before the code). The JSON value starts at `{`, `[` or
 * `"`; outside strings a `<` or a mismatched bracket breaks it. After it: whitespace, at most one
 * fence, then the closing tag. A broken block ends after the first closing tag past the failure,
 * or before the next opening tag, whichever comes first. Field checks: `name` (required, a
 * non-blank string), `args` (object, `{}` when absent), `reason` (string), no other keys.
 */

import type { ToolCall } from "./protocol";


export type ParseErrorKind =
  | "invalidJson"
  | "notAnObject"
  | "missingName"
  | "badField"
  | "trailingText"
  | "unterminated";

export type ParsedBlock =
  | { kind: "call"; call: ToolCall; start: number; end: number }
  | { kind: "error"; error: ParseErrorKind; message: string; start: number; end: number };

/** Alias table of DESIGN §2.1; exact spelling only, so a typo is reported rather than guessed. */
const ALIASES: Readonly<Record<string, string>> = {
  list_dir: "list_dir",
  ls: "list_dir",
  LS: "list_dir",
  read_file: "read_file",
  read: "read_file",
  Read: "read_file",
  glob: "glob",
  Glob: "glob",
  grep: "grep",
  Grep: "grep",
  write_file: "write_file",
  write: "write_file",
  Write: "write_file",
  edit_file: "edit_file",
  Edit: "edit_file",
  exec_cmd: "exec_cmd",
  cmd: "exec_cmd",
  exec: "exec_cmd",
  Bash: "exec_cmd",
};

/** The canonical tool name, or the name as written when it is not a known alias. */
export function normaliseName(name: string): string {
  return Object.prototype.hasOwnProperty.call(ALIASES, name) ? (ALIASES[name] as string) : name;
}

/** Code-block language labels skipped before the JSON (ASCII case-insensitive). */
export const LANGUAGE_LABELS = ["plaintext", "json", "xml", "tool", "text"];
/** Code-block button labels skipped before the JSON; a longer label before its prefix. */
export const BUTTON_LABELS = ["copy code", "copied!", "copied", "copy", "复制代码", "已复制", "复制", "download", "下载"];
/** Sites show at most a copy and a download button; more labels than that is not noise. */
const MAX_BUTTON_LABELS = 2;
const KNOWN_FIELDS = new Set(["name", "args", "reason"]);
const EXAMPLE = '<tool>{"name": "read_file", "args": {"path": "notes.txt"}, "reason": "why"}</tool>';

/** Whether `text` contains an opening tag at all; cheap pre-check for the DOM observer. */
export function mentionsTool(text: string): boolean {
  return text.includes("<tool") && nextOpenTag(text, 0) !== null;
}

/** Every block in `text`, in order. */
export function parseToolBlocks(text: string): ParsedBlock[] {
  const out: ParsedBlock[] = [];
  let pos = 0;
  for (;;) {
    const open = nextOpenTag(text, pos);
    if (!open) return out;
    const [end, outcome] = parseBlock(text, open.end);
    out.push(outcome.ok ? { kind: "call", call: outcome.call, start: open.start, end } : { kind: "error", error: outcome.error, message: outcome.message, start: open.start, end });
    pos = Math.max(end, open.end);
  }
}

/** Only the well-formed calls. */
export function parseToolCalls(text: string): ToolCall[] {
  return parseToolBlocks(text).flatMap((b) => (b.kind === "call" ? [b.call] : []));
}

type Outcome = { ok: true; call: ToolCall } | { ok: false; error: ParseErrorKind; message: string };

function fail(error: ParseErrorKind, message: string): Outcome {
  return { ok: false, error, message };
}

function parseBlock(text: string, content: number): [number, Outcome] {
  const len = text.length;
  const jsonStart = skipNoise(text, content);
  const first = text[jsonStart];
  if (first === undefined) return [len, unterminated()];
  if (first !== "{" && first !== "[" && first !== '"') {
    const stop = nextStop(text, jsonStart);
    if (stop.kind === "eof") return [len, unterminated()];
    const inner = text.slice(jsonStart, stop.at);
    return [stop.kind === "close" ? stop.end : stop.at, notJson(inner)];
  }
  const scan = scanValue(text, jsonStart);
  if (scan.kind === "incomplete") return [len, unterminated()];
  if (scan.kind === "broken") {
    const stop = nextStop(text, scan.at);
    if (stop.kind === "eof") return [len, unterminated()];
    const problem = invalidJson(text.slice(jsonStart, scan.at));
    return [stop.kind === "close" ? stop.end : stop.at, problem];
  }
  let after = skipWs(text, scan.end);
  if (text.startsWith("```", after)) after = skipWs(text, after + 3);
  const close = tagEnd(text, after, "</tool");
  if (close !== null) return [close, validate(text.slice(jsonStart, scan.end))];
  const stop = nextStop(text, scan.end);
  if (stop.kind === "eof") return [len, unterminated()];
  return [stop.kind === "close" ? stop.end : stop.at, trailing(text.slice(scan.end, stop.at))];
}

function validate(json: string): Outcome {
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch (e) {
    return invalidJsonError(e instanceof Error ? e.message : String(e));
  }
  // JSON.parse accepts lone surrogate escapes; they are not valid Unicode text (serde_json agrees)
  if (hasLoneSurrogate(value)) return invalidJsonError("a \\u escape is a lone surrogate");
  if (typeof value !== "object" || value === null || Array.isArray(value)) return notAnObject(value);
  const fields = value as Record<string, unknown>;
  if (!Object.prototype.hasOwnProperty.call(fields, "name")) return missingName(fields);
  const name = fields.name;
  if (typeof name !== "string" || name.trim() === "") {
    return fail("badField", `"name" must be a non-empty string naming the tool, found ${valueSnippet(name)}. Write e.g. "name": "read_file".`);
  }
  let args: Record<string, unknown> = {};
  if (Object.prototype.hasOwnProperty.call(fields, "args")) {
    const a = fields.args;
    if (typeof a !== "object" || a === null || Array.isArray(a)) {
      return fail("badField", `"args" must be a JSON object holding the tool's arguments, found ${valueSnippet(a)}. Write e.g. "args": {"path": "notes.txt"}, or leave "args" out when the tool needs none.`);
    }
    args = a as Record<string, unknown>;
  }
  let reason: string | undefined;
  if (Object.prototype.hasOwnProperty.call(fields, "reason")) {
    if (typeof fields.reason !== "string") {
      return fail("badField", `"reason" must be a string, found ${valueSnippet(fields.reason)}. Write e.g. "reason": "see the port", or leave it out.`);
    }
    reason = fields.reason;
  }
  const unknown = Object.keys(fields).find((k) => !KNOWN_FIELDS.has(k));
  if (unknown !== undefined) {
    return fail("badField", `Unknown field ${JSON.stringify(unknown)} in the call: only "name", "args" and "reason" belong at the top level. Put the tool's arguments inside "args", e.g. ${EXAMPLE}.`);
  }
  const call: ToolCall = { name: normaliseName(name), args };
  if (reason !== undefined) call.reason = reason;
  return { ok: true, call };
}

function unterminated(): Outcome {
  return fail(
    "unterminated",
    "This <tool> block has no closing </tool> tag, so it was not run. Close the block with </tool> right after the JSON object. If you did close it, look for a string with a missing or unescaped quote (write \\\" inside strings): it makes the rest of the text part of the JSON.",
  );
}

function notJson(content: string): Outcome {
  const c = content.replace(/^[ \t\r\n]+|[ \t\r\n]+$/g, "");
  if (c === "") return fail("invalidJson", `This <tool> block is empty. Put one JSON object between <tool> and </tool>, e.g. ${EXAMPLE}.`);
  try {
    return notAnObject(JSON.parse(c));
  } catch {
    return fail("invalidJson", `Expected a JSON object right after <tool>, found ${snippet(c)}. Put one JSON object between <tool> and </tool>, e.g. ${EXAMPLE}. To mention the tag in prose, write it without angle brackets.`);
  }
}

function invalidJson(json: string): Outcome {
  try {
    JSON.parse(json);
  } catch (e) {
    return invalidJsonError(e instanceof Error ? e.message : String(e));
  }
  return fail("invalidJson", `The JSON in this <tool> block is not closed before ${snippet(json)}. Close every string, object and array, e.g. ${EXAMPLE}.`);
}

function invalidJsonError(detail: string): Outcome {
  return fail(
    "invalidJson",
    `The JSON in this <tool> block does not parse (${detail}). Write one valid JSON object: double-quoted keys and strings, no trailing commas, every brace and bracket closed, and inside strings write quotes as \\" and backslashes as \\\\. For example: ${EXAMPLE}.`,
  );
}

function trailing(text: string): Outcome {
  const t = text.replace(/^[ \t\r\n]+/, "");
  const found = t === "" ? "the next <tool> tag" : snippet(t);
  return fail("trailingText", `Found ${found} after the JSON object where </tool> was expected. Put exactly one JSON object in each block and close it with </tool>; for several calls write several <tool> blocks.`);
}

function notAnObject(value: unknown): Outcome {
  const what = value === null ? "null" : Array.isArray(value) ? "an array" : typeof value === "string" ? "a string" : typeof value === "number" ? "a number" : typeof value === "boolean" ? "a boolean" : "a value";
  return fail("notAnObject", `This <tool> block holds ${what} (${valueSnippet(value)}), not a JSON object. Write one object with "name" and "args", e.g. ${EXAMPLE}; for several calls write several <tool> blocks.`);
}

function missingName(fields: Record<string, unknown>): Outcome {
  const keys = Object.keys(fields);
  const found = keys.length === 0 ? "the object is empty" : `found fields ${keys.map((k) => JSON.stringify(k)).join(", ")}`;
  return fail("missingName", `The call has no "name" field (${found}). Name the tool in "name" and put its arguments in "args", e.g. ${EXAMPLE}.`);
}

function snippet(text: string): string {
  const chars = Array.from(text);
  const cut = chars.slice(0, 60).join("").replace(/\n/g, "\\n").replace(/\r/g, "\\r").replace(/\t/g, "\\t");
  return `\`${cut}${chars.length > 60 ? "…" : ""}\``;
}

function valueSnippet(v: unknown): string {
  return snippet(v === undefined ? "undefined" : JSON.stringify(v));
}

function hasLoneSurrogate(v: unknown): boolean {
  const lone = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
  if (typeof v === "string") return lone.test(v);
  if (Array.isArray(v)) return v.some(hasLoneSurrogate);
  if (typeof v === "object" && v !== null) return Object.entries(v).some(([k, x]) => lone.test(k) || hasLoneSurrogate(x));
  return false;
}

// ---- scanning ----

const isWs = (c: string | undefined) => c === " " || c === "\t" || c === "\r" || c === "\n";

function skipWs(text: string, i: number): number {
  while (isWs(text[i])) i++;
  return i;
}

/** If `name` (`<tool` or `</tool`) + whitespace + `>` starts at `i`, the index after it. */
function tagEnd(text: string, i: number, name: string): number | null {
  if (!text.startsWith(name, i)) return null;
  const close = skipWs(text, i + name.length);
  return text[close] === ">" ? close + 1 : null;
}

function nextOpenTag(text: string, from: number): { start: number; end: number } | null {
  let i = from;
  for (;;) {
    const lt = text.indexOf("<", i);
    if (lt < 0) return null;
    const end = tagEnd(text, lt, "<tool");
    if (end !== null) return { start: lt, end };
    i = lt + 1;
  }
}

type Stop = { kind: "close"; at: number; end: number } | { kind: "open"; at: number } | { kind: "eof" };

/** The first closing or opening tag at or after `from`. */
function nextStop(text: string, from: number): Stop {
  let i = from;
  for (;;) {
    const lt = text.indexOf("<", i);
    if (lt < 0) return { kind: "eof" };
    const end = tagEnd(text, lt, "</tool");
    if (end !== null) return { kind: "close", at: lt, end };
    if (tagEnd(text, lt, "<tool") !== null) return { kind: "open", at: lt };
    i = lt + 1;
  }
}

function skipLabel(text: string, i: number, labels: string[]): number | null {
  for (const label of labels) {
    const cand = text.slice(i, i + label.length);
    if (cand.length === label.length && asciiLower(cand) === label) return i + label.length;
  }
  return null;
}

function asciiLower(s: string): string {
  return s.replace(/[A-Z]/g, (c) => c.toLowerCase());
}

/** Whitespace, a fence, a language label and button labels, in that order. */
function skipNoise(text: string, i: number): number {
  i = skipWs(text, i);
  if (text.startsWith("```", i)) i = skipWs(text, i + 3);
  const lang = skipLabel(text, i, LANGUAGE_LABELS);
  if (lang !== null) i = skipWs(text, lang);
  for (let n = 0; n < MAX_BUTTON_LABELS; n++) {
    const next = skipLabel(text, i, BUTTON_LABELS);
    if (next === null) break;
    i = skipWs(text, next);
  }
  return i;
}

type Scan = { kind: "complete"; end: number } | { kind: "broken"; at: number } | { kind: "incomplete" };

/** The extent of the JSON value at `start` (`{`, `[` or `"`), string-aware, without parsing it. */
export function scanValue(text: string, start: number): Scan {
  const open: string[] = [];
  let inString = false;
  for (let i = start; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      if (c === "\\") i++;
      else if (c === '"') {
        inString = false;
        if (open.length === 0) return { kind: "complete", end: i + 1 };
      }
      continue;
    }
    if (c === '"') inString = true;
    else if (c === "{") open.push("}");
    else if (c === "[") open.push("]");
    else if (c === "}" || c === "]") {
      if (open.pop() !== c) return { kind: "broken", at: i + 1 };
      if (open.length === 0) return { kind: "complete", end: i + 1 };
    } else if (c === "<") return { kind: "broken", at: i };
  }
  return { kind: "incomplete" };
}
