//! Suite: parser. The `<tool>` block parser against the shared vectors (the same file the
//! extension's TypeScript parser is tested against), exact spans, messages, linear time, and
//! property tests that feed it arbitrary and mangled text.

use std::time::{Duration, Instant};

use ground_link::parser::{BlockError, BlockErrorKind, ParsedBlock, parse_tool_blocks};
use ground_link::protocol::ToolCall;
use proptest::prelude::*;
use serde::Deserialize;
use serde_json::{Map, Value, json};

// ---------------------------------------------------------------------------------------------
// Shared vectors

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct VectorFile {
    version: u32,
    #[allow(dead_code)]
    description: String,
    #[allow(dead_code)]
    format: Vec<String>,
    cases: Vec<VectorCase>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct VectorCase {
    name: String,
    input: String,
    expect: Vec<ExpectedBlock>,
    #[allow(dead_code)]
    #[serde(default)]
    why: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ExpectedBlock {
    #[serde(default)]
    call: Option<Value>,
    #[serde(default)]
    error: Option<BlockErrorKind>,
    #[serde(default)]
    block: Option<String>,
}

fn load_vectors() -> VectorFile {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/vectors/tool_blocks.json"
    );
    let text = std::fs::read_to_string(path).expect("read tests/vectors/tool_blocks.json");
    serde_json::from_str(&text).expect("tests/vectors/tool_blocks.json matches the vector format")
}

/// The result every broken block gets, from the vectors the extension checks too; and no result
/// parses as a call, whatever the model's text quoted.
#[test]
fn invalid_call_results_match_the_shared_vectors() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/vectors/invalid_call.json"
    );
    let file: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let cases = file["cases"].as_array().unwrap();
    assert!(cases.len() >= 5);
    for case in cases {
        let kind = serde_json::from_value(case["kind"].clone()).unwrap();
        let text = ground_link::format::invalid_call_result(kind, case["detail"].as_str().unwrap());
        assert_eq!(text, case["expect"].as_str().unwrap(), "{}", case["name"]);
        assert!(parse_tool_blocks(&text).is_empty(), "{text}");
        assert_eq!(text.matches("</tool_result>").count(), 1, "{text}");
    }
}

/// What a block parsed to, in the vector file's terms.
fn describe(block: &ParsedBlock) -> String {
    match &block.call {
        Ok(call) => format!("call {}", serde_json::to_value(call).unwrap()),
        Err(e) => format!("error {} ({})", e.kind.as_str(), e.message),
    }
}

#[test]
fn shared_vectors() {
    let file = load_vectors();
    assert_eq!(file.version, 1);
    assert!(file.cases.len() >= 45, "only {} cases", file.cases.len());
    let mut names = std::collections::HashSet::new();
    let mut failures = Vec::new();
    for case in &file.cases {
        assert!(
            names.insert(case.name.as_str()),
            "duplicate case name {:?}",
            case.name
        );
        let blocks = parse_tool_blocks(&case.input);
        assert_well_formed(&case.input, &blocks);
        if blocks.len() != case.expect.len() {
            failures.push(format!(
                "{}: expected {} blocks, got {}: {:?}",
                case.name,
                case.expect.len(),
                blocks.len(),
                blocks.iter().map(describe).collect::<Vec<_>>()
            ));
            continue;
        }
        for (i, (got, want)) in blocks.iter().zip(&case.expect).enumerate() {
            let problem = match (&want.call, want.error, &got.call) {
                (Some(want_call), None, Ok(call)) => {
                    let got_call = serde_json::to_value(call).unwrap();
                    (got_call != *want_call)
                        .then(|| format!("expected call {want_call}, got call {got_call}"))
                }
                (None, Some(kind), Err(e)) => (e.kind != kind)
                    .then(|| format!("expected error {}, got {}", kind.as_str(), describe(got))),
                (Some(want_call), None, Err(_)) => {
                    Some(format!("expected call {want_call}, got {}", describe(got)))
                }
                (None, Some(kind), Ok(_)) => Some(format!(
                    "expected error {}, got {}",
                    kind.as_str(),
                    describe(got)
                )),
                _ => Some("an expected block needs exactly one of `call` and `error`".into()),
            };
            let span_problem = want.block.as_ref().and_then(|block| {
                let got_text = &case.input[got.start..got.end];
                (got_text != block).then(|| format!("expected block {block:?}, got {got_text:?}"))
            });
            for p in problem.into_iter().chain(span_problem) {
                failures.push(format!("{} (block {i}): {p}", case.name));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "vector failures:\n{}",
        failures.join("\n")
    );
}

#[test]
fn vector_call_objects_have_the_documented_shape() {
    // The TypeScript side compares `call` as a JSON value; a vector that omitted `args` or
    // spelled `reason: null` would pass one implementation and fail the other.
    for case in load_vectors().cases {
        for want in &case.expect {
            if let Some(call) = &want.call {
                let obj = call.as_object().expect("call is an object");
                assert!(obj["name"].is_string(), "{}: name", case.name);
                assert!(
                    obj["args"].is_object(),
                    "{}: args always present",
                    case.name
                );
                assert!(
                    obj.get("reason").is_none_or(Value::is_string),
                    "{}: reason is a string when present",
                    case.name
                );
                assert!(
                    obj.keys()
                        .all(|k| ["name", "args", "reason"].contains(&k.as_str())),
                    "{}: unexpected key",
                    case.name
                );
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Spans

/// A block's span and outcome: `None` for a call, else the error kind.
type Span = (usize, usize, Option<BlockErrorKind>);

#[test]
fn spans_are_exact_byte_offsets() {
    use BlockErrorKind::*;
    let cases: &[(&str, &[Span])] = &[
        (r#"ab<tool>{"name":"ls"}</tool>cd"#, &[(2, 28, None)]),
        (r#"é<tool>{"name":"ls"}</tool>"#, &[(2, 28, None)]),
        (
            "<tool>{\"name\":\"ls\"}</tool>\n<tool>{\"name\":\"ls\"}</tool>",
            &[(0, 26, None), (27, 53, None)],
        ),
        (r#"x <tool>{"name""#, &[(2, 15, Some(Unterminated))]),
        (
            r#"<tool>{"name":"ls"} <tool>{"name":"ls"}</tool>"#,
            &[(0, 20, Some(TrailingText)), (20, 46, None)],
        ),
        (
            r#"🙂<tool>{"name":"ls","reason":"🙂"}</tool>🙂"#,
            &[(4, 46, None)],
        ),
        (r#"<tool >{"name":"ls"}</tool >"#, &[(0, 28, None)]),
        (
            r#"<tool_result><tool>{"name":"ls"}</tool>"#,
            &[(13, 39, None)],
        ),
        (r#"<tool>{"a":1</tool>tail"#, &[(0, 19, Some(InvalidJson))]),
        (
            "<tool><tool>",
            &[(0, 6, Some(InvalidJson)), (6, 12, Some(Unterminated))],
        ),
        (
            r#"<tool>{"name":"ls","x":"</tool>"}</tool>"#,
            &[(0, 40, Some(BadField))],
        ),
    ];
    for (input, want) in cases {
        let blocks = parse_tool_blocks(input);
        let got: Vec<Span> = blocks
            .iter()
            .map(|b| (b.start, b.end, b.call.as_ref().err().map(|e| e.kind)))
            .collect();
        assert_eq!(got, *want, "spans of {input:?}");
        assert_well_formed(input, &blocks);
    }
}

#[test]
fn error_raw_is_the_block_text() {
    let input = "before <tool>{oops}</tool> after";
    let blocks = parse_tool_blocks(input);
    assert_eq!(blocks.len(), 1);
    let e = blocks[0].call.as_ref().unwrap_err();
    assert_eq!(e.raw, "<tool>{oops}</tool>");
    assert_eq!(e.raw, &input[blocks[0].start..blocks[0].end]);
}

// ---------------------------------------------------------------------------------------------
// Messages: what was wrong, with the value, and what to write instead

fn only_error(input: &str) -> BlockError {
    let blocks = parse_tool_blocks(input);
    assert_eq!(blocks.len(), 1, "one block in {input:?}");
    blocks[0].call.clone().unwrap_err()
}

#[test]
fn messages_name_the_problem_and_the_fix() {
    use BlockErrorKind::*;
    let cases: &[(&str, BlockErrorKind, &[&str])] = &[
        (
            r#"<tool>{"tool":"read_file"}</tool>"#,
            MissingName,
            &[r#"no "name""#, r#""tool""#, r#""name": "read_file""#],
        ),
        (
            r#"<tool>{"name":42}</tool>"#,
            BadField,
            &[r#""name" must be"#, "`42`"],
        ),
        (
            r#"<tool>{"name":"ls","args":["src"]}</tool>"#,
            BadField,
            &[r#""args" must be a JSON object"#, r#"`["src"]`"#],
        ),
        (
            r#"<tool>{"name":"ls","reason":7}</tool>"#,
            BadField,
            &[r#""reason" must be a string"#, "`7`"],
        ),
        (
            r#"<tool>{"name":"ls","path":"src"}</tool>"#,
            BadField,
            &[r#"Unknown field "path""#, r#"inside "args""#],
        ),
        (
            r#"<tool>{"name":"ls"} please run it</tool>"#,
            TrailingText,
            &["`please run it`", "several <tool> blocks"],
        ),
        (
            "<tool>{\"name\":\"ls\"}\n<tool>{\"name\":\"ls\"}</tool>",
            TrailingText,
            &["the next <tool> tag"],
        ),
        (
            r#"<tool>{"name":"ls",}</tool>"#,
            InvalidJson,
            &["line 1 column", r#"\""#, "trailing commas"],
        ),
        (
            r#"<tool>[1,2]</tool>"#,
            NotAnObject,
            &["an array", "`[1,2]`"],
        ),
        (
            "<tool>read_file configs/a.yaml</tool>",
            InvalidJson,
            &["`read_file configs/a.yaml`", "without angle brackets"],
        ),
        ("<tool> </tool>", InvalidJson, &["empty"]),
        (
            r#"<tool>{"name":"ls","args":{}</tool>"#,
            InvalidJson,
            &["stops before", r#"`{"name":"ls","args":{}`"#],
        ),
        (
            r#"<tool>{"name":"ls"}"#,
            Unterminated,
            &["no closing </tool>", "unescaped quote"],
        ),
    ];
    for (input, kind, needles) in cases {
        let blocks = parse_tool_blocks(input);
        let e = blocks
            .iter()
            .find_map(|b| b.call.as_ref().err())
            .unwrap_or_else(|| panic!("an error in {input:?}"));
        assert_eq!(e.kind, *kind, "kind for {input:?}: {}", e.message);
        for needle in *needles {
            assert!(
                e.message.contains(needle),
                "message for {input:?} lacks {needle:?}: {}",
                e.message
            );
        }
        assert_eq!(e.to_string(), e.message);
    }
}

#[test]
fn long_offending_text_is_shortened_in_messages() {
    let junk = "x".repeat(5000);
    let e = only_error(&format!("<tool>{{\"name\":\"ls\"}} {junk}</tool>"));
    assert_eq!(e.kind, BlockErrorKind::TrailingText);
    assert!(e.message.len() < 600, "{} bytes", e.message.len());
    assert!(e.message.contains('…'));
    assert_eq!(
        e.raw.len(),
        6 + 13 + 1 + 5000 + 7,
        "raw keeps the whole block"
    );
}

#[test]
fn kind_wire_names_match_serde() {
    use BlockErrorKind::*;
    for kind in [
        InvalidJson,
        NotAnObject,
        MissingName,
        BadField,
        TrailingText,
        Unterminated,
    ] {
        assert_eq!(serde_json::to_value(kind).unwrap(), json!(kind.as_str()));
        assert_eq!(
            serde_json::from_value::<BlockErrorKind>(json!(kind.as_str())).unwrap(),
            kind
        );
    }
    let e = only_error("<tool>{}</tool>");
    let wire = serde_json::to_value(&e).unwrap();
    assert_eq!(wire["kind"], "missingName");
    assert_eq!(wire["raw"], "<tool>{}</tool>");
    assert_eq!(serde_json::from_value::<BlockError>(wire).unwrap(), e);
}

#[test]
fn nesting_deeper_than_serde_allows_is_invalid_json_not_a_crash() {
    // serde_json stops at 128 levels; the scanner itself has no limit and never recurses.
    for (depth, parses) in [(100usize, true), (200, false), (100_000, false)] {
        let args = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
        let input = format!(r#"<tool>{{"name":"ls","args":{{"x":{args}}}}}</tool>"#);
        let blocks = parse_tool_blocks(&input);
        assert_eq!(blocks.len(), 1);
        assert_eq!((blocks[0].start, blocks[0].end), (0, input.len()));
        match &blocks[0].call {
            Ok(_) => assert!(parses, "depth {depth} parsed"),
            Err(e) => {
                assert!(!parses, "depth {depth}: {}", e.message);
                assert_eq!(e.kind, BlockErrorKind::InvalidJson);
                assert!(e.message.contains("recursion limit"), "{}", e.message);
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Linear time. The bound is loose on purpose: linear work here takes milliseconds, quadratic
// work (rescanning the rest of the input per block) would take hours.

#[test]
fn adversarial_inputs_take_linear_time() {
    let mb_of_brackets = format!("<tool>{}</tool>", "[".repeat(1 << 20));
    let inputs: Vec<(String, usize)> = vec![
        ("<tool>".repeat(200_000), 200_000),
        (format!("{}</tool>", "<tool>x".repeat(150_000)), 150_000),
        ("<tool>{}".repeat(150_000), 150_000),
        ("<tool>{\"".repeat(150_000), 75_000),
        ("<tool>{\"name\":\"ls\"}</to".repeat(50_000), 50_000),
        ("<toolbox><tool_result></tool>".repeat(50_000), 0),
        (
            format!("<tool>{}{{\"name\":\"ls\"}}</tool>", " ".repeat(1 << 20)),
            1,
        ),
        (mb_of_brackets, 1),
        ("\"}{][".repeat(200_000), 0),
    ];
    for (input, count) in inputs {
        let started = Instant::now();
        let blocks = parse_tool_blocks(&input);
        let took = started.elapsed();
        assert_eq!(blocks.len(), count, "blocks in {:?}…", &input[..40]);
        assert_well_formed(&input, &blocks);
        assert!(
            took < Duration::from_secs(10),
            "{took:?} for {:?}…",
            &input[..40]
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Properties

/// What must hold for any input: spans in bounds, on char boundaries, in order, not
/// overlapping, each starting at an opening tag; `raw` is the block's text; only the last
/// block may be unterminated and it then runs to the end; and no opening tag is left
/// unreported between blocks.
fn assert_well_formed(text: &str, blocks: &[ParsedBlock]) {
    let mut prev_end = 0;
    for (i, block) in blocks.iter().enumerate() {
        assert!(block.start < block.end, "empty span {i} in {text:?}");
        assert!(block.end <= text.len(), "span {i} past the end in {text:?}");
        assert!(text.is_char_boundary(block.start) && text.is_char_boundary(block.end));
        assert!(prev_end <= block.start, "span {i} overlaps in {text:?}");
        assert!(
            !text[prev_end..block.start].contains("<tool>"),
            "an opening tag before block {i} went unreported in {text:?}"
        );
        let body = &text[block.start..block.end];
        assert!(
            body.starts_with("<tool"),
            "span {i} does not start at a tag"
        );
        match &block.call {
            Ok(call) => {
                assert!(body.ends_with('>'), "a call's span ends at its closing tag");
                assert!(!call.name.is_empty());
            }
            Err(e) => {
                assert_eq!(e.raw, body);
                assert!(!e.message.is_empty());
                // A model may echo the message back; that must never make a call.
                assert!(
                    parse_tool_blocks(&e.message)
                        .iter()
                        .all(|b| b.call.is_err()),
                    "message holds a call: {}",
                    e.message
                );
                if e.kind == BlockErrorKind::Unterminated {
                    assert_eq!(block.end, text.len(), "unterminated ends at the end");
                    assert_eq!(i, blocks.len() - 1, "only the last block is unterminated");
                }
            }
        }
        prev_end = block.end;
    }
    assert!(
        !text[prev_end..].contains("<tool>"),
        "a trailing tag went unreported in {text:?}"
    );
}

/// Pieces that matter to the parser, so random text hits its edge cases often.
const TOKENS: &[&str] = &[
    "<tool>",
    "</tool>",
    "<tool >",
    "</tool\n>",
    "<tool",
    "</to",
    "<tool_result>",
    "‹tool›",
    "{",
    "}",
    "[",
    "]",
    "\"",
    "\\",
    "\\\"",
    "\\\\",
    ":",
    ",",
    " ",
    "\n",
    "\r\n",
    "```",
    "```json\n",
    "json",
    "Copy code",
    "复制",
    "\"name\"",
    "\"args\"",
    "\"reason\"",
    "\"ls\"",
    "\"read_file\"",
    "null",
    "42",
    "é",
    "🙂",
    "中",
    "<",
    ">",
    "x",
];

fn token_soup() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(TOKENS), 0..60).prop_map(|parts| parts.concat())
}

const VALID_BLOCKS: &[&str] = &[
    r#"<tool>{"name":"read_file","args":{"path":"a.txt"},"reason":"see"}</tool>"#,
    "<tool>\n```json\n{\"name\":\"ls\",\"args\":{\"path\":\"src\"}}\n```\n</tool>",
    r#"<tool>jsonCopy code{"name":"write_file","args":{"path":"x","content":"a </tool> \"b\" \\"}}</tool>"#,
    r#"<tool>{"name":"Bash","args":{"command":"echo 中文 🙂"}}</tool> and <tool>{"name":"Grep","args":{"pattern":"[{]"}}</tool>"#,
];

/// Insert a token, delete a range, or duplicate a range, at char boundaries.
#[derive(Debug, Clone)]
enum Edit {
    Insert(prop::sample::Index, &'static str),
    Delete(prop::sample::Index, usize),
    Duplicate(prop::sample::Index, usize),
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        (any::<prop::sample::Index>(), prop::sample::select(TOKENS))
            .prop_map(|(at, t)| Edit::Insert(at, t)),
        (any::<prop::sample::Index>(), 1usize..12).prop_map(|(at, n)| Edit::Delete(at, n)),
        (any::<prop::sample::Index>(), 1usize..30).prop_map(|(at, n)| Edit::Duplicate(at, n)),
    ]
}

fn boundary_at_or_before(s: &str, mut i: usize) -> usize {
    i = i.min(s.len());
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn apply(mut s: String, edits: &[Edit]) -> String {
    for e in edits {
        match e {
            Edit::Insert(at, token) => {
                let i = boundary_at_or_before(&s, at.index(s.len() + 1));
                s.insert_str(i, token);
            }
            Edit::Delete(at, n) => {
                let i = boundary_at_or_before(&s, at.index(s.len() + 1));
                let j = boundary_at_or_before(&s, i + n);
                s.replace_range(i..j, "");
            }
            Edit::Duplicate(at, n) => {
                let i = boundary_at_or_before(&s, at.index(s.len() + 1));
                let j = boundary_at_or_before(&s, i + n);
                let copy = s[i..j].to_string();
                s.insert_str(j, &copy);
            }
        }
    }
    s
}

/// Names a model may write, with the name the parser must report.
const NAMES: &[(&str, &str)] = &[
    ("read_file", "read_file"),
    ("ls", "list_dir"),
    ("Write", "write_file"),
    ("Bash", "exec_cmd"),
    ("glob", "glob"),
    ("my_tool", "my_tool"),
];

fn arb_string() -> impl Strategy<Value = String> {
    prop_oneof![any::<String>(), token_soup()]
}

/// A call as the model writes it, and the call the parser must return for it.
fn arb_call() -> impl Strategy<Value = (Value, ToolCall)> {
    (
        prop::sample::select(NAMES),
        prop::collection::btree_map("[a-zA-Z]{1,8}", arb_string(), 0..4),
        prop::option::of(arb_string()),
        any::<bool>(),
    )
        .prop_map(|((written, canonical), args, reason, with_args)| {
            let args: Map<String, Value> = args
                .into_iter()
                .map(|(k, v)| (k, Value::String(v)))
                .collect();
            let mut obj = Map::new();
            obj.insert("name".into(), json!(written));
            if with_args || !args.is_empty() {
                obj.insert("args".into(), Value::Object(args.clone()));
            }
            if let Some(r) = &reason {
                obj.insert("reason".into(), json!(r));
            }
            let call = ToolCall {
                name: canonical.to_string(),
                args,
                reason,
            };
            (Value::Object(obj), call)
        })
}

/// How the block is wrapped: tag spelling, fences, labels, layout.
fn arb_wrapping() -> impl Strategy<Value = (usize, bool)> {
    (0usize..6, any::<bool>())
}

fn wrap(json: &Value, (style, pretty): (usize, bool)) -> String {
    let body = if pretty {
        serde_json::to_string_pretty(json).unwrap()
    } else {
        serde_json::to_string(json).unwrap()
    };
    match style {
        0 => format!("<tool>{body}</tool>"),
        1 => format!("<tool>\n{body}\n</tool>"),
        2 => format!("```xml\n<tool>\n{body}\n</tool>\n```"),
        3 => format!("<tool>\n```json\n{body}\n```\n</tool>"),
        4 => format!("<tool>jsonCopy code{body}</tool>"),
        _ => format!("<tool >\r\n{body}\r\n</tool >"),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(ground_link::testing::proptest_cases(400)))]

    #[test]
    fn arbitrary_text_never_breaks_the_invariants(text in any::<String>()) {
        assert_well_formed(&text, &parse_tool_blocks(&text));
    }

    #[test]
    fn token_soup_never_breaks_the_invariants(text in token_soup()) {
        assert_well_formed(&text, &parse_tool_blocks(&text));
    }

    #[test]
    fn mangled_blocks_never_break_the_invariants(
        base in prop::sample::select(VALID_BLOCKS),
        edits in prop::collection::vec(edit(), 1..6),
    ) {
        let text = apply(base.to_string(), &edits);
        assert_well_formed(&text, &parse_tool_blocks(&text));
    }

    /// Any call, with any string content (including `</tool>`, `<tool>`, quotes, backslashes
    /// and any Unicode), wrapped any tolerated way and surrounded by prose, parses back to
    /// itself, in order.
    #[test]
    fn calls_round_trip_through_blocks(
        calls in prop::collection::vec((arb_call(), arb_wrapping()), 1..4),
        prose in prop::collection::vec("[^<]{0,30}", 4),
    ) {
        let mut text = String::new();
        for (i, ((json, _), wrapping)) in calls.iter().enumerate() {
            text.push_str(&prose[i]);
            text.push_str(&wrap(json, *wrapping));
        }
        text.push_str(&prose[3]);
        let blocks = parse_tool_blocks(&text);
        assert_well_formed(&text, &blocks);
        let got: Vec<ToolCall> = blocks
            .into_iter()
            .map(|b| b.call.unwrap_or_else(|e| panic!("{e:?} in {text:?}")))
            .collect();
        let want: Vec<ToolCall> = calls.into_iter().map(|((_, call), _)| call).collect();
        prop_assert_eq!(got, want);
    }
}
