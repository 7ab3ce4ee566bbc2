//! Plain command lines — words of ordinary characters and single quotes, joined by `;`, `|`,
//! `&&`, `||` and newlines — are most of what models run, and a grammar with one reading. For
//! them this module builds the very syntax tree brush-parser builds, positions included (a
//! property test below compares the two over generated lines), several times faster: brush-parser
//! tokenizes character by character and tries every word as an assignment. Anything outside that
//! grammar — a quote other than `'`, `$`, a glob, a redirection, a keyword, an assignment, a
//! comment, non-ASCII text — returns `None`, and brush-parser reads the line as before.

use std::sync::Arc;

use brush_parser::ast::{
    AndOr, AndOrList, Command, CommandPrefixOrSuffixItem, CommandSuffix, CompoundList,
    CompoundListItem, Pipeline, Program, SeparatorOperator, SimpleCommand, Word,
};
use brush_parser::{SourcePosition, SourceSpan};

/// Command names whose line is left to brush-parser: bash's reserved words (they open compound
/// commands or time a pipeline) and the declaration builtins (brush-parser reads their arguments
/// as assignments).
const NOT_PLAIN_NAMES: &[&str] = &[
    "if", "then", "else", "elif", "fi", "do", "done", "case", "esac", "while", "until", "for",
    "in", "select", "function", "time", "coproc", "declare", "typeset", "export", "readonly",
    "local", "unset",
];

/// The syntax tree brush-parser would build for `src`, when `src` is a plain command line.
pub(crate) fn program(src: &str) -> Option<Program> {
    // Positions count characters; in ASCII text they are byte offsets.
    if !src.is_ascii() {
        return None;
    }
    let mut lexer = Lexer {
        src: src.as_bytes(),
        at: 0,
        line: 1,
        line_start: 0,
    };
    let mut b = Builder::default();
    loop {
        match lexer.next()? {
            Token::Word(word) => b.words.push(word),
            Token::Pipe => b.end_command()?,
            Token::And => b.connect(AndOrOp::And)?,
            Token::Or => b.connect(AndOrOp::Or)?,
            Token::Semi => b.end_item()?,
            Token::Newline => b.end_line()?,
            Token::End => {
                b.end_line()?;
                return Some(Program {
                    complete_commands: b.lines,
                });
            }
        }
    }
}

enum Token {
    Word(Word),
    Pipe,
    And,
    Or,
    Semi,
    Newline,
    End,
}

struct Lexer<'a> {
    src: &'a [u8],
    at: usize,
    line: usize,
    line_start: usize,
}

impl Lexer<'_> {
    fn position(&self) -> Arc<SourcePosition> {
        Arc::new(SourcePosition {
            index: self.at,
            line: self.line,
            column: self.at - self.line_start + 1,
        })
    }

    /// The next token, or `None` for text outside the plain grammar.
    fn next(&mut self) -> Option<Token> {
        while matches!(self.src.get(self.at), Some(b' ' | b'\t')) {
            self.at += 1;
        }
        let Some(&c) = self.src.get(self.at) else {
            return Some(Token::End);
        };
        let next = self.src.get(self.at + 1).copied();
        let (token, len) = match c {
            b'\n' => {
                self.at += 1;
                self.line += 1;
                self.line_start = self.at;
                return Some(Token::Newline);
            }
            // `;;` ends a `case` item; `|&` pipes standard error too; a lone `&` runs in the
            // background: all left to brush-parser.
            b';' if next != Some(b';') && next != Some(b'&') => (Token::Semi, 1),
            b'|' if next == Some(b'|') => (Token::Or, 2),
            b'|' if next != Some(b'&') => (Token::Pipe, 1),
            b'&' if next == Some(b'&') => (Token::And, 2),
            c if word_byte(c) || c == b'\'' => return self.word(),
            _ => return None,
        };
        self.at += len;
        Some(token)
    }

    fn word(&mut self) -> Option<Token> {
        let start = self.position();
        let from = self.at;
        loop {
            match self.src.get(self.at) {
                Some(&c) if word_byte(c) => self.at += 1,
                Some(b'\'') => {
                    // Single quotes keep everything literal; a line break inside would move the
                    // line count, so such a word is left to brush-parser.
                    let body = self.src[self.at + 1..].iter().position(|&c| c == b'\'')?;
                    let quoted = &self.src[self.at + 1..self.at + 1 + body];
                    if !quoted
                        .iter()
                        .all(|&c| c == b'\t' || (b' '..=b'~').contains(&c))
                    {
                        return None;
                    }
                    self.at += body + 2;
                }
                Some(b' ' | b'\t' | b'\n' | b';' | b'|' | b'&') | None => break,
                Some(_) => return None,
            }
        }
        let value = std::str::from_utf8(&self.src[from..self.at])
            .ok()?
            .to_owned();
        if assignment_like(&value) {
            return None;
        }
        Some(Token::Word(Word {
            value,
            loc: Some(SourceSpan {
                start,
                end: self.position(),
            }),
        }))
    }
}

/// Characters bash gives no meaning to in an unquoted word.
fn word_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric()
        || matches!(
            c,
            b'_' | b'.' | b'/' | b':' | b',' | b'+' | b'%' | b'@' | b'=' | b'-'
        )
}

/// `NAME=…` or `NAME+=…`: an assignment where bash expects one, which brush-parser marks as such.
fn assignment_like(word: &str) -> bool {
    let name_end = word
        .bytes()
        .position(|c| !(c.is_ascii_alphanumeric() || c == b'_'))
        .unwrap_or(word.len());
    let name = &word[..name_end];
    let rest = &word[name_end..];
    !name.is_empty()
        && !name.as_bytes()[0].is_ascii_digit()
        && (rest.starts_with('=') || rest.starts_with("+="))
}

#[derive(Clone, Copy)]
enum AndOrOp {
    And,
    Or,
}

/// Collects tokens into brush-parser's tree: words into simple commands, commands into
/// pipelines, pipelines into and-or lists, those into one list per line.
#[derive(Default)]
struct Builder {
    lines: Vec<CompoundList>,
    items: Vec<CompoundListItem>,
    and_or: Option<AndOrList>,
    /// The operator before the pipeline being collected, when it is not the first.
    op: Option<AndOrOp>,
    pipeline: Vec<Command>,
    words: Vec<Word>,
}

impl Builder {
    /// Ends a simple command; `None` when there is none (`| x`, `a | | b`).
    fn end_command(&mut self) -> Option<()> {
        // Drained, so the next command's words reuse the buffer.
        let mut words = self.words.drain(..);
        let name = words.next()?;
        if name.value.contains('=') || NOT_PLAIN_NAMES.contains(&name.value.as_str()) {
            return None;
        }
        let mut suffix = Vec::with_capacity(words.len());
        suffix.extend(words.map(CommandPrefixOrSuffixItem::Word));
        self.pipeline.push(Command::Simple(SimpleCommand {
            prefix: None,
            word_or_name: Some(name),
            suffix: (!suffix.is_empty()).then_some(CommandSuffix(suffix)),
        }));
        Some(())
    }

    fn end_pipeline(&mut self) -> Option<()> {
        self.end_command()?;
        let pipeline = Pipeline {
            timed: None,
            bang: false,
            seq: std::mem::take(&mut self.pipeline),
        };
        match (self.op.take(), &mut self.and_or) {
            (None, None) => {
                self.and_or = Some(AndOrList {
                    first: pipeline,
                    additional: Vec::new(),
                });
            }
            (Some(op), Some(list)) => list.additional.push(match op {
                AndOrOp::And => AndOr::And(pipeline),
                AndOrOp::Or => AndOr::Or(pipeline),
            }),
            _ => return None,
        }
        Some(())
    }

    fn connect(&mut self, op: AndOrOp) -> Option<()> {
        self.end_pipeline()?;
        self.op = Some(op);
        Some(())
    }

    /// `;` ends an item of the line's list; there must be one (`; a`, `a;;` are errors).
    fn end_item(&mut self) -> Option<()> {
        self.end_pipeline()?;
        let and_or = self.and_or.take()?;
        self.items
            .push(CompoundListItem(and_or, SeparatorOperator::Sequence));
        Some(())
    }

    /// A line break ends the line's list, if it has one (blank lines and a trailing `;` are
    /// fine; a line ending in `|`, `&&` or `||` continues, which is left to brush-parser).
    fn end_line(&mut self) -> Option<()> {
        if !self.words.is_empty() || !self.pipeline.is_empty() || self.op.is_some() {
            self.end_item()?;
        } else if self.and_or.is_some() {
            return None;
        }
        if !self.items.is_empty() {
            self.lines
                .push(CompoundList(std::mem::take(&mut self.items)));
        }
        Some(())
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::program;

    fn brush(src: &str) -> Option<String> {
        brush_parser::Parser::new(src.as_bytes(), &super::super::syntax::options())
            .parse_program()
            .ok()
            .map(|p| format!("{p:?}"))
    }

    /// What the fast path builds must be what brush-parser builds, character positions and all.
    fn agrees(src: &str) -> Result<bool, TestCaseError> {
        let Some(fast) = program(src) else {
            return Ok(false);
        };
        let slow = brush(src);
        prop_assert_eq!(
            Some(format!("{fast:?}")),
            slow,
            "the fast path read {:?} differently",
            src
        );
        Ok(true)
    }

    #[test]
    fn plain_lines_are_read_as_brush_parser_reads_them() {
        for src in [
            "ls",
            "cat a | grep -n 'fn ' && ls -la src ; git log --oneline | head -n 5 ; wc -l README.md ; ",
            "a;b\n\nc",
            "a b\nc;",
            "a&&b||c",
            "  a\t'b c'd'' ;\n",
            "make --jobs=2 CC",
            "date +%Y-%m-%d",
            "",
            "\n\n",
        ] {
            assert!(agrees(src).unwrap(), "{src:?} should take the fast path");
        }
    }

    #[test]
    fn everything_else_is_left_to_brush_parser() {
        for src in [
            "a=1 ls",
            "make CC=gcc",
            "ls &",
            "ls # note",
            "echo $HOME",
            "echo \"x\"",
            "ls *.rs",
            "ls ~",
            "cat <a",
            "if true; then ls; fi",
            "time ls",
            "export A",
            "ls |& cat",
            "a &&\nb",
            "a |\nb",
            "; a",
            "a;;",
            "a | | b",
            "echo 'a\nb'",
            "echo é",
            "{ ls; }",
            "ls\r",
            "echo 'unterminated",
        ] {
            assert!(program(src).is_none(), "{src:?} is not plain");
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig {
            cases: crate::testing::proptest_cases(2000),
            failure_persistence: Some(Box::new(
                proptest::test_runner::FileFailurePersistence::Direct(
                    "tests/proptest-regressions/plain.txt",
                ),
            )),
            ..ProptestConfig::default()
        })]

        /// Lines of plain words and operators, with the near misses mixed in: wherever the fast
        /// path answers, brush-parser answers the same.
        #[test]
        fn generated_lines_agree(pieces in proptest::collection::vec(prop_oneof![
            4 => prop::sample::select(vec![
                "ls", "cat", "a", "-n", "--f=2", "x", "1", "%y", "@b", "a,b", "./p:q", "+1",
                "'fn '", "a'b c'd", "''", "'$x'", "'\"'", "'a;b'", "in", "do", "time", "if",
                "declare", "x=1", "x+=1", "_a=", "1=2", "=", "a=b", "-", "--", ":", ".", "@",
                "%", "_", "0", "a:=b", "then", "fi", "esac", "select", "export", "unset",
            ]),
            4 => prop::sample::select(vec![" ", "  ", "\t", ";", " ; ", "|", " | ", "&&", " || "]),
            1 => prop::sample::select(vec![
                "\n", "&", ";;", "|&", "#", "'", "$", "\"", "é", "\r", "*", "~", "<", "{", "}",
                "!", "(", "\\",
            ]),
        ], 0..24)) {
            let src: String = pieces.concat();
            agrees(&src)?;
        }

        /// Well-formed plain lines always take the fast path (so the test above is not vacuous).
        #[test]
        fn well_formed_lines_take_the_fast_path(commands in proptest::collection::vec(
            (
                prop::sample::select(vec!["ls", "cat", "git", "wc", "head"]),
                proptest::collection::vec(
                    prop::sample::select(vec!["-n", "5", "src/a.rs", "'x y'", "--a=b", "%s"]),
                    0..4,
                ),
                prop::sample::select(vec![" | ", " && ", " || ", " ; ", "\n", ";\n"]),
            ),
            1..8,
        )) {
            let mut src = String::new();
            for (name, args, op) in &commands {
                src.push_str(name);
                for a in args {
                    src.push(' ');
                    src.push_str(a);
                }
                src.push_str(op);
            }
            // End on a complete command.
            src.push_str("ls");
            prop_assert!(agrees(&src)?, "{:?} should take the fast path", src);
        }
    }
}
