// For tests: what a page shows a person, and what in it is not Chinese when it should be.
// Two checks, because each misses what the other catches: `englishFromTable` finds English
// prose from the en table (a `t` call that reads the wrong table, or a key that the zh table
// copied untranslated); `strayWords` finds Latin words that are neither data nor a known code
// value, which is what a string left hard-coded in the page looks like.
import { TEXTS } from "./i18n";

/** Values kept as they are in every language (mode names, actions, layers, statuses, …). */
const CODE_WORDS: readonly string[] = [
  "read-only", "workspace-write", "full-access", "ask", "auto", "allow", "deny", "DENY", "ASK", "ALLOW",
  "global", "project", "managed", "PreToolUse", "PostToolUse", "block", "skip",
  "success", "denied", "error", "timeout", "safe", "moderate", "dangerous", "denyRule",
  "JSON", "English", "ground-link", "exec_cmd", "write_file", "sh", "http", "Esc",
  // Names of protocols and products, the same in every language.
  "MCP", "Claude", "Code", "Cursor", "Codex", "CLI", "Authorization", "mcp",
];

/** Code and examples that the UI itself shows unchanged in every language. */
const UI_DATA: readonly string[] = [
  "/home/you/project", "npm test", "**/.env*", "Bash(curl *)", "./scripts/check.sh",
  ".ground-link/permissions.json", "Bash(npm test *)", '{"id":…,"action":"deny","tool":"exec_cmd",…}', "127.0.0.1",
];

/** Text nodes and the placeholder, title and aria-label attributes under `root`, and the title. */
export function visibleTexts(root: Element = document.body): string[] {
  const out: string[] = [];
  if (document.title) out.push(document.title);
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    const text = n.textContent?.trim();
    if (text && !n.parentElement?.closest("script, style")) out.push(text);
  }
  for (const el of root.querySelectorAll("[placeholder], [title], [aria-label]")) {
    for (const a of ["placeholder", "title", "aria-label"]) {
      const v = el.getAttribute(a)?.trim();
      if (v) out.push(v);
    }
  }
  return out;
}

function escape(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/** `text` without any of `data` (longest first, so a path is not cut up by a shorter value). */
function scrub(text: string, data: readonly string[]): string {
  let out = text;
  for (const d of [...data].sort((a, b) => b.length - a.length)) if (d) out = out.split(d).join(" ");
  return out;
}

/**
 * The English pieces of the en table: each text cut at its `{name}`s and trimmed to letters,
 * leaving out the values that are the same in both languages (`CODE_WORDS`: "read-only",
 * "English", …). A zh entry copied from en is therefore caught, not excused.
 */
function englishFragments(): string[] {
  const pieces = new Set<string>();
  for (const text of Object.values(TEXTS.en)) {
    for (const part of text.split(/\{\w+\}/)) {
      const piece = part.replace(/^[^A-Za-z]+|[^A-Za-z]+$/g, "");
      if (/[A-Za-z]{2}/.test(piece) && !CODE_WORDS.includes(piece)) pieces.add(piece);
    }
  }
  return [...pieces];
}

/** `"piece" in "text"` for every en piece found as whole words in a text (after scrubbing data). */
export function englishFromTable(texts: readonly string[], data: readonly string[] = []): string[] {
  const found: string[] = [];
  const fragments = englishFragments().map((f) => [f, new RegExp(`(?<![A-Za-z])${escape(f)}(?![A-Za-z])`)] as const);
  for (const text of texts) {
    const clean = scrub(text, [...UI_DATA, ...data]);
    for (const [f, re] of fragments) if (re.test(clean)) found.push(`${JSON.stringify(f)} in ${JSON.stringify(text)}`);
  }
  return found;
}

/** `"word" in "text"` for every Latin word that is neither in `data` nor a code value. */
export function strayWords(texts: readonly string[], data: readonly string[] = []): string[] {
  const found: string[] = [];
  const allowed = new Set(CODE_WORDS);
  for (const text of texts) {
    for (const word of scrub(text, [...UI_DATA, ...data]).match(/[A-Za-z][A-Za-z0-9_-]*/g) ?? []) {
      if (word.length > 1 && !allowed.has(word)) found.push(`${JSON.stringify(word)} in ${JSON.stringify(text)}`);
    }
  }
  return found;
}
