/**
 * The `<tool>{json}</tool>` parser of DESIGN §2.1, the TypeScript twin of the Rust parser.
 *
 * Guarantees: parsing is JSON-aware (a `</tool>` inside a JSON string never ends a block), every
 * `<tool>` opener yields exactly one entry — a call or an error naming what was wrong — so a bad
 * block is reported to the model instead of being dropped, and names are normalised through the
 * alias table. Both parsers are checked against `tests/vectors/tool_blocks.json`.
 */

import type { ToolCall } from "./protocol";

const OPEN = "<tool>";
const CLOSE = "</tool>";

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

/** Whether `text` contains an opener at all; cheap pre-check for the DOM observer. */
export function mentionsTool(text: string): boolean {
  return text.includes(OPEN);
}

/** Every block in `text`, in order. */
export function parseToolBlocks(text: string): ParsedBlock[] {
  const out: ParsedBlock[] = [];
  let from = 0;
  for (;;) {
    const start = text.indexOf(OPEN, from);
    if (start < 0) return out;
    const block = parseOne(text, start);
    out.push(block);
    from = block.end;
  }
}

/** Only the well-formed calls. */
export function parseToolCalls(text: string): ToolCall[] {
  return parseToolBlocks(text).flatMap((b) => (b.kind === "call" ? [b.call] : []));
}

function parseOne(text: string, start: number): ParsedBlock {
  let i = skipPreamble(text, start + OPEN.length);
  const valueEnd = scanJsonValue(text, i);
  if (valueEnd === null) return recoverAfterBadJson(text, start, i);
  const raw = text.slice(i, valueEnd);
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch (e) {
    return recoverAfterBadJson(text, start, i, e instanceof Error ? e.message : String(e));
  }
  i = skipTrailer(text, valueEnd);
  if (!text.startsWith(CLOSE, i)) {
    const close = text.indexOf(CLOSE, i);
    if (close < 0) {
      return err("unterminated", `the block opened at offset ${start} has no closing </tool>; end every call with </tool>`, start, text.length);
    }
    return err(
      "trailingText",
      `unexpected text after the JSON object: ${quote(text.slice(i, close))}; put exactly one JSON object between <tool> and </tool>`,
      start,
      close + CLOSE.length,
    );
  }
  const end = i + CLOSE.length;
  return toCall(value, start, end);
}

function toCall(value: unknown, start: number, end: number): ParsedBlock {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    const what = value === null ? "null" : Array.isArray(value) ? "an array" : `a ${typeof value}`;
    return err("notAnObject", `the block holds ${what}, not a JSON object; write {"name": ..., "args": {...}}`, start, end);
  }
  const obj = value as Record<string, unknown>;
  if (!("name" in obj) || obj.name === "" ) {
    return err("missingName", `the call has no "name"; add the tool name, e.g. {"name": "read_file", "args": {...}}`, start, end);
  }
  if (typeof obj.name !== "string") {
    return err("badField", `"name" must be a string, got ${describe(obj.name)}`, start, end);
  }
  let args: Record<string, unknown> = {};
  if ("args" in obj && obj.args !== undefined) {
    if (typeof obj.args !== "object" || obj.args === null || Array.isArray(obj.args)) {
      return err("badField", `"args" must be a JSON object, got ${describe(obj.args)}`, start, end);
    }
    args = obj.args as Record<string, unknown>;
  }
  const call: ToolCall = { name: normaliseName(obj.name), args };
  if ("reason" in obj && obj.reason !== undefined && obj.reason !== null) {
    if (typeof obj.reason !== "string") {
      return err("badField", `"reason" must be a string, got ${describe(obj.reason)}`, start, end);
    }
    call.reason = obj.reason;
  }
  return { kind: "call", call, start, end };
}

function recoverAfterBadJson(text: string, start: number, at: number, detail?: string): ParsedBlock {
  const close = text.indexOf(CLOSE, at);
  if (close < 0) {
    return err("unterminated", `the block opened at offset ${start} has no closing </tool>; end every call with </tool>`, start, text.length);
  }
  const why = detail ? ` (${detail})` : "";
  return err("invalidJson", `the text between <tool> and </tool> is not valid JSON${why}; write one JSON object`, start, close + CLOSE.length);
}

function err(error: ParseErrorKind, message: string, start: number, end: number): ParsedBlock {
  return { kind: "error", error, message, start, end };
}

const LABEL = /^(?:[A-Za-z]{1,12}[ \t]*)?(?:Copy code|Copy|复制代码|复制)/;
/** A code block's language label on its own line, as rendered chat pages show it. */
const LANG_LINE = /^(?:json|jsonc|xml|tool|javascript|js|text|plaintext)[ \t]*\r?\n/i;

/**
 * Skips what may sit between `<tool>` and the JSON: whitespace, a Markdown fence opener
 * (```` ```json ````), and a site's code-block header ("jsonCopy code").
 */
function skipPreamble(text: string, i: number): number {
  for (;;) {
    const before = i;
    i = skipWs(text, i);
    if (text.startsWith("```", i)) {
      const nl = text.indexOf("\n", i);
      const lineEnd = nl < 0 ? text.length : nl + 1;
      // only a fence opener (``` + an optional language word), never JSON on the same line
      if (/^```[\w+-]*[ \t]*\r?\n?$/.test(text.slice(i, lineEnd))) i = lineEnd;
    }
    const m = LABEL.exec(text.slice(i, i + 40)) ?? LANG_LINE.exec(text.slice(i, i + 40));
    if (m && !text.startsWith("{", i)) i += m[0].length;
    if (i === before) return i;
  }
}

/** Skips whitespace and a closing Markdown fence between the JSON and `</tool>`. */
function skipTrailer(text: string, i: number): number {
  i = skipWs(text, i);
  if (text.startsWith("```", i)) i = skipWs(text, i + 3);
  return i;
}

function skipWs(text: string, i: number): number {
  while (i < text.length && /\s/.test(text[i] as string)) i++;
  return i;
}

/**
 * End (exclusive) of the JSON value starting at `i`, honouring strings and escapes; `null` when
 * the text ends first. Validity is left to `JSON.parse`; this only finds where the value stops.
 */
export function scanJsonValue(text: string, i: number): number | null {
  const c = text[i];
  if (c === undefined) return null;
  if (c === "{" || c === "[") {
    let depth = 0;
    let inString = false;
    for (let j = i; j < text.length; j++) {
      const ch = text[j];
      if (inString) {
        if (ch === "\\") j++;
        else if (ch === '"') inString = false;
        continue;
      }
      if (ch === '"') inString = true;
      else if (ch === "{" || ch === "[") depth++;
      else if (ch === "}" || ch === "]") {
        depth--;
        if (depth === 0) return j + 1;
      } else if (ch === "<" && text.startsWith(CLOSE, j)) {
        // an unbalanced value: the closer outside any string ends the block
        return null;
      }
    }
    return null;
  }
  if (c === '"') {
    for (let j = i + 1; j < text.length; j++) {
      const ch = text[j];
      if (ch === "\\") j++;
      else if (ch === '"') return j + 1;
    }
    return null;
  }
  // a scalar: runs up to whitespace or the closer
  let j = i;
  while (j < text.length && !/\s/.test(text[j] as string) && !text.startsWith(CLOSE, j)) j++;
  return j === i ? null : j;
}

function describe(v: unknown): string {
  if (v === null) return "null";
  if (Array.isArray(v)) return "an array";
  return `${typeof v} ${quote(JSON.stringify(v) ?? String(v))}`;
}

function quote(s: string): string {
  const t = s.length > 60 ? `${s.slice(0, 60)}…` : s;
  return JSON.stringify(t);
}
