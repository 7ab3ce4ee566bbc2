//! The `<tool>{json}</tool>` block parser (DESIGN §2.1).
//!
//! Finds every tool-call block in a model's reply, in order, and turns each into a [`ToolCall`]
//! or a [`BlockError`] whose message tells the model what was wrong and what to write instead.
//!
//! Guarantees: it never panics; it runs in time linear in the input (one forward pass, no
//! regex); spans are byte offsets on char boundaries, in order, never overlapping; a malformed
//! block is reported, never dropped; text inside a JSON string (`"…</tool>…"`) never opens or
//! closes a block. The extension's TypeScript parser follows the same rules; both are checked
//! against `tests/vectors/tool_blocks.json`, which pins each rule below to a case.
//!
//! The rules:
//! - **Tags.** An opening tag is `<tool`, optional whitespace, `>` — lowercase, no attributes
//!   (`<tool >` counts; `<Tool>`, `<tools>`, `<tool_result …>`, `<tool name="x">`, `‹tool›`
//!   do not). A closing tag is `</tool`, optional whitespace, `>`. Whitespace outside JSON is
//!   space, tab, CR and LF only. A closing tag with no block open is prose.
//! - **Noise before the JSON.** After the opening tag the parser skips, in this order: whitespace;
//!   one Markdown fence (three backticks); one language label from [`LANGUAGE_LABELS`]; up to two
//!   code-block button labels from [`BUTTON_LABELS`] (what a page's `textContent` puts before
//!   the code, as in `jsonCopy code{…}`); whitespace between each. Labels match ASCII
//!   case-insensitively and need no word boundary. Anything else is an error, not a guess.
//! - **The JSON value** starts at `{`, `[` or `"` and its extent is found by a string-aware
//!   bracket scanner, then parsed by `serde_json`. Outside strings, `<` can never be JSON, so it
//!   ends a broken value there (`{"name": "ls"</tool>` is `invalidJson`, not a block that
//!   swallows the rest of the reply); so does a mismatched bracket.
//! - **After the value**: whitespace, at most one fence, whitespace, then the closing tag.
//!   The inner fences are independent: either may appear without the other.
//! - **Where a broken block ends**: at the end of the first closing tag after the point where
//!   parsing failed, or just before the next opening tag, whichever comes first; parsing then
//!   continues from there. A block that reaches the end of the input without its closing tag is
//!   `unterminated` (the extension reads that as "still streaming"). A string or bracket still
//!   open at the end of the input makes the block run to the end: the parser cannot tell file
//!   content from markup there, so it runs nothing rather than guess (fail closed).
//! - **Checks, in order**: text before the JSON; trailing text after it; JSON syntax; an
//!   object; then `name` (required, a string that is not blank; missing key → `missingName`,
//!   anything else wrong → `badField`), `args` (optional object, `{}` when absent), `reason`
//!   (optional string), and unknown top-level keys (an error naming the key: a model that
//!   writes `{"name": "ls", "path": "src"}` must learn to use `args` rather than list `.`).
//!   `null` counts as present. Duplicate keys: the last one wins, as in `JSON.parse`.
//! - **Names** are normalised with [`ToolName::from_alias`]; unknown names are kept as
//!   written (not trimmed), so the engine can report them by name.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::protocol::{ToolCall, ToolName};

/// Code-block language labels a chat page renders above the code, skipped before the JSON.
pub const LANGUAGE_LABELS: &[&str] = &["plaintext", "json", "xml", "tool", "text"];

/// Code-block button labels a chat page renders above the code (ChatGPT's "Copy code",
/// DeepSeek's "复制" and "下载", Claude's "Copy", …), skipped before the JSON. Where one label is
/// a prefix of another, the longer comes first.
pub const BUTTON_LABELS: &[&str] = &[
    "copy code",
    "copied!",
    "copied",
    "copy",
    "复制代码",
    "已复制",
    "复制",
    "download",
    "下载",
];

/// Sites show at most a copy and a download button; more labels than that is not noise.
const MAX_BUTTON_LABELS: usize = 2;

const OPEN_TAG: &[u8] = b"<tool";
const CLOSE_TAG: &[u8] = b"</tool";
const FENCE: &[u8] = b"```";
const KNOWN_FIELDS: [&str; 3] = ["name", "args", "reason"];
/// The JSON alone, not a whole block: a model that echoes an error message back must not
/// thereby make a call.
const EXAMPLE: &str = r#"{"name": "read_file", "args": {"path": "notes.txt"}, "reason": "why"}"#;
/// How much of the offending text an error message quotes.
const SNIPPET_CHARS: usize = 60;

/// One `<tool>` block found in the text.
#[derive(Debug, Clone, PartialEq)]
pub struct ParsedBlock {
    /// Byte offset of the `<` of the opening tag.
    pub start: usize,
    /// Byte offset just past the block: after the closing tag's `>`, before the next opening
    /// tag (a broken block cut short), or the input's length (unterminated).
    pub end: usize,
    pub call: Result<ToolCall, BlockError>,
}

/// Why a block is not a call. `message` is written for the model: what was wrong and how to
/// write it instead.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema, thiserror::Error)]
#[serde(rename_all = "camelCase")]
#[error("{message}")]
pub struct BlockError {
    pub kind: BlockErrorKind,
    pub message: String,
    /// The block's text, exactly `text[start..end]`.
    pub raw: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum BlockErrorKind {
    /// No JSON where one was expected, or JSON that does not parse.
    InvalidJson,
    /// Valid JSON, but an array, string, number, boolean or null.
    NotAnObject,
    /// An object without a `name` key.
    MissingName,
    /// A top-level field with the wrong type, a blank name, or an unknown field.
    BadField,
    /// Something other than the closing tag after the JSON value.
    TrailingText,
    /// The input ends before the block's closing tag.
    Unterminated,
}

impl BlockErrorKind {
    /// The wire name, as in the test vectors.
    pub fn as_str(self) -> &'static str {
        match self {
            BlockErrorKind::InvalidJson => "invalidJson",
            BlockErrorKind::NotAnObject => "notAnObject",
            BlockErrorKind::MissingName => "missingName",
            BlockErrorKind::BadField => "badField",
            BlockErrorKind::TrailingText => "trailingText",
            BlockErrorKind::Unterminated => "unterminated",
        }
    }
}

impl std::fmt::Display for BlockErrorKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Every `<tool>` block in `text`, in order (see the module docs for the exact rules).
pub fn parse_tool_blocks(text: &str) -> Vec<ParsedBlock> {
    let bytes = text.as_bytes();
    let mut blocks = Vec::new();
    let mut pos = 0;
    while let Some((start, content)) = next_open_tag(bytes, pos) {
        let (end, outcome) = parse_block(text, content);
        let call = outcome.map_err(|(kind, message)| BlockError {
            kind,
            message,
            raw: slice(text, start, end).to_string(),
        });
        blocks.push(ParsedBlock { start, end, call });
        // Every block ends past its opening tag, so this always moves forward.
        pos = end.max(content);
    }
    blocks
}

type Outcome = Result<ToolCall, (BlockErrorKind, String)>;

/// Parses one block whose opening tag ends at `content`; returns where the block ends.
fn parse_block(text: &str, content: usize) -> (usize, Outcome) {
    let bytes = text.as_bytes();
    let len = bytes.len();
    let json_start = skip_code_block_noise(bytes, content);
    let Some(&first) = bytes.get(json_start) else {
        return (len, Err(unterminated()));
    };
    if !matches!(first, b'{' | b'[' | b'"') {
        return match next_stop(bytes, json_start) {
            Stop::Eof => (len, Err(unterminated())),
            Stop::Close { at, end } => (end, Err(not_json(slice(text, json_start, at)))),
            Stop::Open { at } => (at, Err(not_json(slice(text, json_start, at)))),
        };
    }
    match scan_value(bytes, json_start) {
        Scan::Incomplete => (len, Err(unterminated())),
        Scan::Broken(cut) => {
            let problem = || invalid_json(slice(text, json_start, cut));
            match next_stop(bytes, cut) {
                Stop::Eof => (len, Err(unterminated())),
                Stop::Close { end, .. } => (end, Err(problem())),
                Stop::Open { at } => (at, Err(problem())),
            }
        }
        Scan::Complete(json_end) => {
            let mut after = skip_ws(bytes, json_end);
            if bytes
                .get(after..)
                .is_some_and(|rest| rest.starts_with(FENCE))
            {
                after = skip_ws(bytes, after + FENCE.len());
            }
            if let Some(end) = tag_end(bytes, after, CLOSE_TAG) {
                return (end, validate(slice(text, json_start, json_end)));
            }
            match next_stop(bytes, json_end) {
                Stop::Eof => (len, Err(unterminated())),
                Stop::Close { at, end } => (end, Err(trailing(slice(text, json_end, at)))),
                Stop::Open { at } => (at, Err(trailing(slice(text, json_end, at)))),
            }
        }
    }
}

/// Turns the text of one JSON value into a call, checking the fields of DESIGN §2.1.
fn validate(json: &str) -> Outcome {
    let value: Value = serde_json::from_str(json).map_err(|e| invalid_json_error(&e))?;
    let Value::Object(mut fields) = value else {
        return Err(not_an_object(&value));
    };
    let name = match fields.get("name") {
        None => return Err(missing_name(&fields)),
        Some(Value::String(name)) if !name.trim().is_empty() => name.clone(),
        Some(other) => {
            return Err(bad_field(format!(
                "\"name\" must be a non-empty string naming the tool, found {}. Write e.g. \
                 \"name\": \"read_file\".",
                value_snippet(other)
            )));
        }
    };
    let args = match fields.remove("args") {
        None => Map::new(),
        Some(Value::Object(args)) => args,
        Some(other) => {
            return Err(bad_field(format!(
                "\"args\" must be a JSON object holding the tool's arguments, found {}. Write \
                 e.g. \"args\": {{\"path\": \"notes.txt\"}}, or leave \"args\" out when the tool \
                 needs none.",
                value_snippet(&other)
            )));
        }
    };
    let reason = match fields.remove("reason") {
        None => None,
        Some(Value::String(reason)) => Some(reason),
        Some(other) => {
            return Err(bad_field(format!(
                "\"reason\" must be a string, found {}. Write e.g. \"reason\": \"see the port\", \
                 or leave it out.",
                value_snippet(&other)
            )));
        }
    };
    if let Some(unknown) = fields
        .keys()
        .find(|key| !KNOWN_FIELDS.contains(&key.as_str()))
    {
        return Err(bad_field(format!(
            "Unknown field {} in the call: only \"name\", \"args\" and \"reason\" belong at the \
             top level. Put the tool's arguments inside \"args\", e.g. {EXAMPLE}.",
            quoted(unknown)
        )));
    }
    let name = match ToolName::from_alias(&name) {
        Some(tool) => tool.as_str().to_string(),
        None => name,
    };
    Ok(ToolCall { name, args, reason })
}

fn unterminated() -> (BlockErrorKind, String) {
    (
        BlockErrorKind::Unterminated,
        "This <tool> block has no closing </tool> tag, so it was not run. Close the block with \
         </tool> right after the JSON object. If you did close it, look for a string with a \
         missing or unescaped quote (write \\\" inside strings): it makes the rest of the text \
         part of the JSON."
            .to_string(),
    )
}

/// The block holds no JSON value where one should start: it is empty, holds a bare scalar,
/// or holds prose.
fn not_json(content: &str) -> (BlockErrorKind, String) {
    let content = content.trim_matches(|c| matches!(c, ' ' | '\t' | '\r' | '\n'));
    if content.is_empty() {
        return (
            BlockErrorKind::InvalidJson,
            format!(
                "This <tool> block is empty. Put one JSON object between <tool> and </tool>, \
                 e.g. {EXAMPLE}."
            ),
        );
    }
    if let Ok(value) = serde_json::from_str::<Value>(content) {
        return not_an_object(&value);
    }
    (
        BlockErrorKind::InvalidJson,
        format!(
            "Expected a JSON object right after <tool>, found {}. Put one JSON object between \
             <tool> and </tool>, e.g. {EXAMPLE}. To mention the tag in prose, write it without \
             angle brackets.",
            snippet(content)
        ),
    )
}

/// For a value the scanner cut short: at a `<` outside any string, or at a mismatched bracket.
fn invalid_json(json: &str) -> (BlockErrorKind, String) {
    match serde_json::from_str::<Value>(json) {
        // serde_json only sees the text before the cut, so its "EOF" would mislead.
        Err(e) if e.is_eof() => (
            BlockErrorKind::InvalidJson,
            format!(
                "The JSON in this <tool> block stops before all its objects and arrays are \
                 closed (it ends with {}). Close every brace and bracket before </tool>, e.g. \
                 {EXAMPLE}.",
                snippet_tail(json)
            ),
        ),
        Err(e) => invalid_json_error(&e),
        // The scanner only cuts a value short where JSON cannot continue, so serde_json
        // always rejects the cut text; this arm keeps the report honest if that ever changes.
        Ok(_) => (
            BlockErrorKind::InvalidJson,
            format!(
                "The JSON in this <tool> block is not closed before {}. Close every string, \
                 object and array, e.g. {EXAMPLE}.",
                snippet(json)
            ),
        ),
    }
}

fn invalid_json_error(error: &serde_json::Error) -> (BlockErrorKind, String) {
    (
        BlockErrorKind::InvalidJson,
        format!(
            "The JSON in this <tool> block does not parse ({error}). Write one valid JSON object: \
             double-quoted keys and strings, no trailing commas, every brace and bracket closed, \
             and inside strings write quotes as \\\" and backslashes as \\\\. For example: \
             {EXAMPLE}."
        ),
    )
}

fn trailing(text: &str) -> (BlockErrorKind, String) {
    let text = text.trim_start_matches([' ', '\t', '\r', '\n']);
    // Empty only when the next block's opening tag came first.
    let found = if text.is_empty() {
        "the next <tool> tag".to_string()
    } else {
        snippet(text)
    };
    (
        BlockErrorKind::TrailingText,
        format!(
            "Found {found} after the JSON object where </tool> was expected. Put exactly one \
             JSON object in each block and close it with </tool>; for several calls write \
             several <tool> blocks."
        ),
    )
}

fn not_an_object(value: &Value) -> (BlockErrorKind, String) {
    let what = match value {
        Value::Array(_) => "an array",
        Value::String(_) => "a string",
        Value::Number(_) => "a number",
        Value::Bool(_) => "a boolean",
        Value::Null => "null",
        Value::Object(_) => "an object",
    };
    (
        BlockErrorKind::NotAnObject,
        format!(
            "This <tool> block holds {what} ({}), not a JSON object. Write one object with \
             \"name\" and \"args\", e.g. {EXAMPLE}; for several calls write several <tool> \
             blocks.",
            value_snippet(value)
        ),
    )
}

fn missing_name(fields: &Map<String, Value>) -> (BlockErrorKind, String) {
    let found = if fields.is_empty() {
        "the object is empty".to_string()
    } else {
        let keys: Vec<String> = fields.keys().map(|key| quoted(key)).collect();
        format!("found fields {}", keys.join(", "))
    };
    (
        BlockErrorKind::MissingName,
        format!(
            "The call has no \"name\" field ({found}). Name the tool in \"name\" and put its \
             arguments in \"args\", e.g. {EXAMPLE}."
        ),
    )
}

fn bad_field(message: String) -> (BlockErrorKind, String) {
    (BlockErrorKind::BadField, message)
}

/// `text` shortened for a message, in backticks, with line breaks shown as `\n`.
fn snippet(text: &str) -> String {
    let mut out = String::from("`");
    for (i, c) in text.chars().enumerate() {
        if i == SNIPPET_CHARS {
            out.push('…');
            break;
        }
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c => out.push(c),
        }
    }
    out.push('`');
    out
}

/// The end of `text`, shortened for a message like [`snippet`].
fn snippet_tail(text: &str) -> String {
    let skip = text.chars().count().saturating_sub(SNIPPET_CHARS);
    let tail: String = text.chars().skip(skip).collect();
    let shown = snippet(&tail);
    if skip == 0 {
        shown
    } else {
        shown.replacen('`', "`…", 1)
    }
}

fn value_snippet(value: &Value) -> String {
    snippet(&value.to_string())
}

fn quoted(key: &str) -> String {
    Value::String(key.to_string()).to_string()
}

/// `text[start..end]`, or `""` if the range is not a valid one (it always is; this keeps the
/// parser panic-free by construction rather than by argument).
fn slice(text: &str, start: usize, end: usize) -> &str {
    text.get(start..end).unwrap_or_default()
}

fn is_ws(byte: u8) -> bool {
    matches!(byte, b' ' | b'\t' | b'\r' | b'\n')
}

fn skip_ws(bytes: &[u8], mut i: usize) -> usize {
    while bytes.get(i).is_some_and(|&b| is_ws(b)) {
        i += 1;
    }
    i
}

/// If the tag `name` (`<tool` or `</tool`) + whitespace + `>` starts at `i`, the index after it.
fn tag_end(bytes: &[u8], i: usize, name: &[u8]) -> Option<usize> {
    if !bytes.get(i..)?.starts_with(name) {
        return None;
    }
    let close = skip_ws(bytes, i + name.len());
    (bytes.get(close) == Some(&b'>')).then_some(close + 1)
}

fn next_lt(bytes: &[u8], from: usize) -> Option<usize> {
    let offset = bytes.get(from..)?.iter().position(|&b| b == b'<')?;
    Some(from + offset)
}

/// The next opening tag at or after `from`: its start and the index just past it.
fn next_open_tag(bytes: &[u8], from: usize) -> Option<(usize, usize)> {
    let mut i = from;
    while let Some(lt) = next_lt(bytes, i) {
        if let Some(end) = tag_end(bytes, lt, OPEN_TAG) {
            return Some((lt, end));
        }
        i = lt + 1;
    }
    None
}

/// Where a broken block stops.
enum Stop {
    /// A closing tag from `at` to `end`.
    Close {
        at: usize,
        end: usize,
    },
    /// The next opening tag starts at `at`.
    Open {
        at: usize,
    },
    Eof,
}

/// The first closing or opening tag at or after `from`, in one pass (searching for each
/// separately could rescan the rest of the input once per block).
fn next_stop(bytes: &[u8], from: usize) -> Stop {
    let mut i = from;
    while let Some(lt) = next_lt(bytes, i) {
        if let Some(end) = tag_end(bytes, lt, CLOSE_TAG) {
            return Stop::Close { at: lt, end };
        }
        if tag_end(bytes, lt, OPEN_TAG).is_some() {
            return Stop::Open { at: lt };
        }
        i = lt + 1;
    }
    Stop::Eof
}

fn skip_label(bytes: &[u8], i: usize, labels: &[&str]) -> Option<usize> {
    labels.iter().find_map(|label| {
        let candidate = bytes.get(i..i + label.len())?;
        candidate
            .eq_ignore_ascii_case(label.as_bytes())
            .then_some(i + label.len())
    })
}

/// Skips what may stand between `<tool>` and the JSON: whitespace, a fence, a language label
/// and code-block button labels, in that order.
fn skip_code_block_noise(bytes: &[u8], mut i: usize) -> usize {
    i = skip_ws(bytes, i);
    if bytes.get(i..).is_some_and(|rest| rest.starts_with(FENCE)) {
        i = skip_ws(bytes, i + FENCE.len());
    }
    if let Some(next) = skip_label(bytes, i, LANGUAGE_LABELS) {
        i = skip_ws(bytes, next);
    }
    for _ in 0..MAX_BUTTON_LABELS {
        match skip_label(bytes, i, BUTTON_LABELS) {
            Some(next) => i = skip_ws(bytes, next),
            None => break,
        }
    }
    i
}

enum Scan {
    /// The value ends just before this index.
    Complete(usize),
    /// The value cannot be JSON past this index (a `<` outside strings, or a mismatched
    /// bracket); the text before it is what serde_json will be asked about.
    Broken(usize),
    /// The input ends inside a string or an open object or array.
    Incomplete,
}

/// Finds the extent of the JSON value starting at `start` (at `{`, `[` or `"`) without
/// parsing it. All the bytes it stops at are ASCII, so every index it returns is a char
/// boundary.
fn scan_value(bytes: &[u8], start: usize) -> Scan {
    let mut open: Vec<u8> = Vec::new();
    let mut in_string = false;
    let mut i = start;
    while let Some(&byte) = bytes.get(i) {
        if in_string {
            match byte {
                // The escaped byte may be the lead byte of a multi-byte char; its
                // continuation bytes are never `"` or `\`, so skipping one byte is enough.
                b'\\' => i += 1,
                b'"' => {
                    in_string = false;
                    if open.is_empty() {
                        return Scan::Complete(i + 1);
                    }
                }
                _ => {}
            }
        } else {
            match byte {
                b'"' => in_string = true,
                b'{' => open.push(b'}'),
                b'[' => open.push(b']'),
                b'}' | b']' => {
                    if open.pop() != Some(byte) {
                        return Scan::Broken(i + 1);
                    }
                    if open.is_empty() {
                        return Scan::Complete(i + 1);
                    }
                }
                b'<' => return Scan::Broken(i),
                _ => {}
            }
        }
        i += 1;
    }
    Scan::Incomplete
}
