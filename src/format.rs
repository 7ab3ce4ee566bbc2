//! Results as the model sees them (DESIGN §2.2), and the untrusted-content sanitiser.
//!
//! Everything that came from a file, a command or a web page is untrusted: it is wrapped in
//! delimiters with a fresh random id (so content cannot forge the closing delimiter), invisible
//! and format characters are made visible, and any `<tool>`-like tag is neutralised so it can
//! never be parsed as a call — by our parser, the extension's, or the model's habits.

use std::fmt::Write as _;

use crate::parser::BlockErrorKind;
use crate::protocol::CallStatus;

/// Make untrusted text safe to show to the model.
///
/// - zero-width, bidi controls, Unicode tags, private-use and other invisible format characters
///   become a visible `[U+XXXX]`, so hidden instructions show up as what they are;
/// - control characters other than newline and tab (ANSI escapes, bells, carriage returns
///   that overwrite text) are made visible the same way;
/// - `<tool`, `</tool`, `< tool` and case variants get their `<` replaced by `‹`, which no
///   parser treats as a tag.
pub fn sanitize(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some((i, c)) = rest.char_indices().find(|&(_, c)| needs_attention(c)) {
        out.push_str(&rest[..i]);
        if c == '<' {
            if looks_like_tool_tag(&rest[i + 1..]) {
                out.push('‹');
            } else {
                out.push('<');
            }
        } else {
            let _ = write!(out, "[U+{:04X}]", c as u32);
        }
        rest = &rest[i + c.len_utf8()..];
    }
    out.push_str(rest);
    out
}

fn needs_attention(c: char) -> bool {
    c == '<' || is_hidden(c)
}

/// Characters that render as nothing (or rearrange what is around them).
pub fn is_hidden(c: char) -> bool {
    let u = c as u32;
    (c.is_control() && c != '\n' && c != '\t')
        || matches!(u,
            0x00AD | 0x034F | 0x061C | 0x115F | 0x1160 | 0x17B4 | 0x17B5 | 0x180B..=0x180F
            | 0x200B..=0x200F | 0x202A..=0x202E | 0x2060..=0x206F | 0x3164 | 0xFE00..=0xFE0F
            | 0xFEFF | 0xFFA0 | 0xFFF0..=0xFFFB
            | 0xE000..=0xF8FF | 0xE0000..=0xE0FFF | 0xF0000..=0xFFFFD | 0x100000..=0x10FFFD)
}

/// After a `<`: optional `/`, optional whitespace, then `tool` in any case.
fn looks_like_tool_tag(after: &str) -> bool {
    let s = after.strip_prefix('/').unwrap_or(after);
    let s = s.trim_start_matches([' ', '\t', '\n', '\r']);
    s.len() >= 4 && s.as_bytes()[..4].eq_ignore_ascii_case(b"tool")
}

/// Escape for an attribute value in the `<tool_result>` tag.
fn attr(value: &str) -> String {
    sanitize(value)
        .replace('&', "&amp;")
        .replace('"', "&quot;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

fn fresh_id() -> String {
    crate::random::unique_hex(6)
}

/// The result a `<tool>` block that is not a call gets (DESIGN §2.1: reported to the model,
/// never dropped). The one text for every path: the clipboard fallback here, the extension
/// through `POST /invalid-call`; tests/vectors/invalid_call.json holds it. The detail quotes the
/// model's text, so it is untrusted: every `<` is escaped (a quoted `<tool>` must never parse as
/// a call, nor a quoted `</tool_result>` end the result) and invisible characters are made
/// visible as in any output.
pub fn invalid_call_result(kind: BlockErrorKind, detail: &str) -> String {
    format!(
        "<tool_result name=\"invalid_call\" status=\"error\">\nThe tool call was not run: {} \
         ({kind}).\n</tool_result>",
        sanitize(&detail.replace('<', "&lt;"))
    )
}

/// The whole `<tool_result>` block. `untrusted` output is wrapped in delimiters; ground-link's
/// own messages (policy denials, argument errors) are not, but are still sanitised.
pub fn tool_result(name: &str, status: CallStatus, output: &str, untrusted: bool) -> String {
    let mut s = String::with_capacity(output.len() + 160);
    let _ = writeln!(
        s,
        "<tool_result name=\"{}\" status=\"{}\">",
        attr(name),
        status.as_str()
    );
    if untrusted {
        let id = fresh_id();
        let _ = writeln!(s, "<<<UNTRUSTED_CONTENT id={id}>>>");
        s.push_str(output);
        if !output.ends_with('\n') {
            s.push('\n');
        }
        let _ = writeln!(s, "<<<END_UNTRUSTED_CONTENT id={id}>>>");
    } else {
        s.push_str(output);
        if !output.ends_with('\n') {
            s.push('\n');
        }
    }
    s.push_str("</tool_result>");
    s
}

/// `text` between untrusted-content delimiters with a fresh id, labelled with where it came
/// from (a page tool's description, say): what a page wrote cannot close the frame early.
pub fn untrusted_block(label: &str, text: &str) -> String {
    let id = fresh_id();
    let text = sanitize(text);
    format!(
        "<<<UNTRUSTED_CONTENT id={id} from={}>>>\n{text}\n<<<END_UNTRUSTED_CONTENT id={id}>>>",
        attr(label)
    )
}

/// The text a denied call returns (DESIGN §2.2). `by_user` distinguishes the person's "Deny"
/// from a policy denial, so the model knows whether asking again could ever help.
pub fn denied_text(tool: &str, reason: Option<&str>, by_user: bool) -> String {
    let reason = reason
        .map(str::trim)
        .filter(|r| !r.is_empty())
        .map(sanitize);
    let who = if by_user {
        format!("The user denied the \"{tool}\" tool call.")
    } else {
        format!("ground-link's permission policy denied the \"{tool}\" tool call.")
    };
    match reason {
        Some(r) => format!(
            "[Tool Denied] {who} Reason: {r}. Please adjust your approach; do not retry the same call."
        ),
        None => format!(
            "[Tool Denied] {who} Please try a different approach or ask the user for guidance."
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sanitize_table() {
        for (input, want) in [
            ("plain text\nline 2\ttab", "plain text\nline 2\ttab"),
            ("<tool>{}</tool>", "‹tool>{}‹/tool>"),
            ("< TOOL >", "‹ TOOL >"),
            ("</ tool_result>", "‹/ tool_result>"),
            ("a <b> c", "a <b> c"),
            ("x\u{200B}y", "x[U+200B]y"),
            ("\u{202E}evil", "[U+202E]evil"),
            ("tag\u{E0041}", "tag[U+E0041]"),
            ("pua\u{E000}", "pua[U+E000]"),
            ("\u{1b}[31mred", "[U+001B][31mred"),
            ("cr\rover", "cr[U+000D]over"),
            ("中文 ok", "中文 ok"),
            ("<", "<"),
            ("<too", "<too"),
        ] {
            assert_eq!(sanitize(input), want, "{input:?}");
        }
    }

    #[test]
    fn result_block_wraps_untrusted_with_fresh_ids() {
        let a = tool_result("read_file", CallStatus::Success, "hello", true);
        let b = tool_result("read_file", CallStatus::Success, "hello", true);
        assert!(a.starts_with(
            "<tool_result name=\"read_file\" status=\"success\">\n<<<UNTRUSTED_CONTENT id="
        ));
        assert!(a.ends_with(">>>\n</tool_result>"));
        assert_ne!(a, b, "ids must be fresh");
        let id = a.split("id=").nth(1).unwrap().split(">>>").next().unwrap();
        assert!(a.contains(&format!("<<<END_UNTRUSTED_CONTENT id={id}>>>")));
    }

    #[test]
    fn denied_texts() {
        assert_eq!(
            denied_text("write_file", Some("not now"), true),
            "[Tool Denied] The user denied the \"write_file\" tool call. Reason: not now. Please adjust your approach; do not retry the same call."
        );
        assert_eq!(
            denied_text("write_file", None, true),
            "[Tool Denied] The user denied the \"write_file\" tool call. Please try a different approach or ask the user for guidance."
        );
        assert!(denied_text("exec_cmd", Some(" "), false).contains("policy denied"));
    }
}
