//! A second, independent reading of a command line by brush-parser, a bash-compatible parser
//! written for a shell that must run what it parses (tree-sitter-bash, which the classifier
//! walks, is written for editors and recovers from errors silently).
//!
//! The classifier calls a command's parts only what both readings agree on: every simple
//! command brush-parser finds — at any depth, including inside parameter-expansion operands
//! (`${a:-$(cmd)}`), here-document bodies and arithmetic — must be among the parts the
//! classifier judged, or the command is `dangerous` ("bash would read it differently"). Text
//! brush-parser refuses is `dangerous` too. So a quoting trick that fools one parser
//! (`echo $'\\'; cat ~/.ssh/id_rsa; #'`) has to fool both the same way before anything runs
//! without a question; the differential oracle (tests/oracle.rs) measures both against bash.
//!
//! What it also reports: the bodies of command substitutions (so the classifier can judge
//! those the tree-sitter walk never saw) and arithmetic over variables, which bash evaluates
//! recursively — a variable holding `a[$(cmd)]` runs `cmd` in `$((x))`, `((x))`, `[[ x -eq
//! 1 ]]` or `${s:x}` — and which no static reading can follow.

use brush_parser::ast::{
    self, AndOr, Command, CommandPrefixOrSuffixItem, CompoundCommand, CompoundList,
    ExtendedTestExpr, IoFileRedirectTarget, IoRedirect,
};
use brush_parser::word::{self, WordPiece, WordPieceWithSource};
use brush_parser::{Parser, ParserOptions};

/// How deeply substitutions may nest before the reading gives up (and the command is then
/// not safe).
const MAX_DEPTH: u32 = 16;

/// One simple command as bash will see it: its words, `None` where a word is only known when
/// the command runs.
pub(crate) type Words = Vec<Option<String>>;

/// A word that stands for one only known when the command runs, in source form.
const UNKNOWN_SOURCE: &str = "\"$ground_link_unknown\"";

/// One simple command bash would run.
#[derive(Debug, Clone)]
pub(crate) struct BashCommand {
    pub words: Words,
    /// The command as shell text, word by word (`rm -rf ~`), to be judged on its own.
    pub source: String,
}

/// What brush-parser read in a command line.
#[derive(Debug, Default)]
pub(crate) struct Reading {
    /// Every simple command, at any depth.
    pub commands: Vec<BashCommand>,
    /// The bodies of every command and process substitution, at any depth.
    pub scripts: Vec<String>,
    /// Constructs that can run code no static reading follows, each with why.
    pub unmodeled: Vec<String>,
    /// Every parameter expanded anywhere (`HOME`, `1`, `@`; `!x` for an indirect one).
    pub variables: Vec<String>,
    /// Every variable the command line sets itself: assignments, `for`, `read`, `mapfile`,
    /// `getopts`, `printf -v`.
    pub assigned: Vec<String>,
}

/// How deeply brackets may nest in the text given to brush-parser: its recursive descent
/// would otherwise need more stack than a worker thread has (2 MiB, less in tests).
const MAX_BRACKETS: usize = 24;

/// Reads `src` as bash would. `Err` says why brush-parser could not.
pub(crate) fn read(src: &str) -> Result<Reading, String> {
    let mut open = 0usize;
    let mut deepest = 0usize;
    for b in src.bytes() {
        match b {
            b'(' | b'{' | b'[' => open += 1,
            b')' | b'}' | b']' => open = open.saturating_sub(1),
            _ => {}
        }
        deepest = deepest.max(open);
    }
    if deepest > MAX_BRACKETS || src.matches('`').count() > 2 * MAX_BRACKETS {
        return Err(format!(
            "brackets nest more than {MAX_BRACKETS} levels deep; write the command more plainly"
        ));
    }
    // A panic inside the parser (hostile input it did not expect) must end in "not safe",
    // never in a dead worker thread.
    std::panic::catch_unwind(|| {
        let mut r = Reader {
            out: Reading::default(),
            options: ParserOptions::default(),
        };
        r.program(src, 0)?;
        Ok(r.out)
    })
    .unwrap_or_else(|_| Err("the bash-compatible parser failed on this text".to_owned()))
}

struct Reader {
    out: Reading,
    options: ParserOptions,
}

impl Reader {
    fn program(&mut self, src: &str, depth: u32) -> Result<(), String> {
        if depth > MAX_DEPTH {
            return Err(format!(
                "substitutions nest more than {MAX_DEPTH} levels deep"
            ));
        }
        let program = Parser::new(src.as_bytes(), &self.options)
            .parse_program()
            .map_err(|e| format!("bash-compatible parsing failed: {e}"))?;
        for c in &program.complete_commands {
            self.list(c, depth)?;
        }
        Ok(())
    }

    fn list(&mut self, l: &CompoundList, depth: u32) -> Result<(), String> {
        for item in &l.0 {
            let and_or = &item.0;
            self.pipeline(&and_or.first, depth)?;
            for next in &and_or.additional {
                match next {
                    AndOr::And(p) | AndOr::Or(p) => self.pipeline(p, depth)?,
                }
            }
        }
        Ok(())
    }

    fn pipeline(&mut self, p: &ast::Pipeline, depth: u32) -> Result<(), String> {
        for c in &p.seq {
            self.command(c, depth)?;
        }
        Ok(())
    }

    fn command(&mut self, c: &Command, depth: u32) -> Result<(), String> {
        match c {
            Command::Simple(s) => self.simple(s, depth),
            Command::Compound(cc, redirects) => {
                self.compound(cc, depth)?;
                for r in redirects.iter().flat_map(|r| &r.0) {
                    self.redirect(r, depth)?;
                }
                Ok(())
            }
            Command::Function(f) => {
                self.compound(&f.body.0, depth)?;
                for r in f.body.1.iter().flat_map(|r| &r.0) {
                    self.redirect(r, depth)?;
                }
                Ok(())
            }
            Command::ExtendedTest(t, redirects) => {
                self.test_expr(&t.expr, depth)?;
                for r in redirects.iter().flat_map(|r| &r.0) {
                    self.redirect(r, depth)?;
                }
                Ok(())
            }
        }
    }

    fn compound(&mut self, c: &CompoundCommand, depth: u32) -> Result<(), String> {
        match c {
            CompoundCommand::Arithmetic(a) => self.arithmetic(&a.expr.value, depth),
            CompoundCommand::ArithmeticForClause(f) => {
                for e in [&f.initializer, &f.condition, &f.updater]
                    .into_iter()
                    .flatten()
                {
                    self.arithmetic(&e.value, depth)?;
                }
                self.list(&f.body.list, depth)
            }
            CompoundCommand::BraceGroup(b) => self.list(&b.list, depth),
            CompoundCommand::Subshell(s) => self.list(&s.list, depth),
            CompoundCommand::ForClause(f) => {
                self.out.assigned.push(f.variable_name.clone());
                for w in f.values.iter().flatten() {
                    self.word(&w.value, depth)?;
                }
                self.list(&f.body.list, depth)
            }
            CompoundCommand::CaseClause(cc) => {
                self.word(&cc.value.value, depth)?;
                for item in &cc.cases {
                    for p in &item.patterns {
                        self.word(&p.value, depth)?;
                    }
                    if let Some(body) = &item.cmd {
                        self.list(body, depth)?;
                    }
                }
                Ok(())
            }
            CompoundCommand::IfClause(i) => {
                self.list(&i.condition, depth)?;
                self.list(&i.then, depth)?;
                for e in i.elses.iter().flatten() {
                    if let Some(cond) = &e.condition {
                        self.list(cond, depth)?;
                    }
                    self.list(&e.body, depth)?;
                }
                Ok(())
            }
            CompoundCommand::WhileClause(w) | CompoundCommand::UntilClause(w) => {
                self.list(&w.0, depth)?;
                self.list(&w.1.list, depth)
            }
            CompoundCommand::Coprocess(_) => {
                self.out
                    .unmodeled
                    .push("coproc starts a background process".to_owned());
                Ok(())
            }
        }
    }

    fn simple(&mut self, s: &ast::SimpleCommand, depth: u32) -> Result<(), String> {
        for item in s.prefix.iter().flat_map(|p| &p.0) {
            self.item(item, depth)?;
        }
        let Some(name) = &s.word_or_name else {
            // Only assignments and redirections: nothing runs.
            return Ok(());
        };
        // `[` is the test builtin's name, not a glob.
        let first = if name.value == "[" {
            Some("[".to_owned())
        } else {
            self.word(&name.value, depth)?
        };
        let mut words: Words = vec![first];
        let mut sources: Vec<&str> = vec![&name.value];
        for item in s.suffix.iter().flat_map(|p| &p.0) {
            if let Some((w, src)) = self.item(item, depth)? {
                words.push(w);
                sources.push(src);
            }
        }
        self.builtin_names(&words, &sources, depth)?;
        let source = sources.join(" ");
        // `[ … ]` is the test builtin: it runs nothing, and its words were read above.
        if name.value != "[" {
            self.out.commands.push(BashCommand { words, source });
        }
        Ok(())
    }

    /// A prefix or suffix item; `Some` (the word and its source) for an argument.
    fn item<'a>(
        &mut self,
        item: &'a CommandPrefixOrSuffixItem,
        depth: u32,
    ) -> Result<Option<(Option<String>, &'a str)>, String> {
        Ok(match item {
            CommandPrefixOrSuffixItem::Word(w) => Some((self.word(&w.value, depth)?, &w.value)),
            CommandPrefixOrSuffixItem::IoRedirect(r) => {
                self.redirect(r, depth)?;
                None
            }
            // `declare x=1`, `export y=$(cmd)`: in a suffix the word is an argument too.
            CommandPrefixOrSuffixItem::AssignmentWord(a, w) => {
                self.assignment(a, depth)?;
                Some((self.word(&w.value, depth)?, &w.value))
            }
            CommandPrefixOrSuffixItem::ProcessSubstitution(_, sub) => {
                self.list(&sub.list, depth + 1)?;
                Some((None, UNKNOWN_SOURCE))
            }
        })
    }

    /// Builtins that take variable names, or arithmetic, as arguments. bash evaluates a
    /// subscript in a name (`read 'a[$(cmd)]'`, `printf -v`, `test -v`, `unset`, `declare`,
    /// `wait -p`) and every argument of `let` as arithmetic, so those are read as arithmetic
    /// here; the names are recorded as assigned, so setting `PATH`, `CDPATH`, `PS4` or
    /// `BASH_CMDS` through them is judged like an assignment.
    fn builtin_names(&mut self, words: &Words, sources: &[&str], depth: u32) -> Result<(), String> {
        let Some(Some(name)) = words.first() else {
            return Ok(());
        };
        // Words only known at run time cannot be checked: a name built at run time is one
        // no reading follows.
        // `export PATH=/x:$PATH`: the value is only known at run time, the name is not.
        let args: Vec<Option<&str>> = words[1..]
            .iter()
            .zip(sources.iter().skip(1))
            .map(|(w, src)| w.as_deref().or_else(|| static_name(src)))
            .collect();
        let value_of = |flag: &str| -> Vec<Option<&str>> {
            args.windows(2)
                .filter(|w| w[0] == Some(flag))
                .map(|w| w[1])
                .collect()
        };
        let names: Vec<Option<&str>> = match name.as_str() {
            "read" | "mapfile" | "readarray" | "getopts" | "unset" | "local" | "declare"
            | "typeset" | "export" | "readonly" => args
                .iter()
                .copied()
                .filter(|a| !a.is_some_and(|a| a.starts_with(['-', '+'])))
                .collect(),
            "printf" => value_of("-v"),
            "wait" => value_of("-p"),
            "test" | "[" => value_of("-v"),
            "let" => {
                for a in &args {
                    match a {
                        Some(a) => self.arithmetic(a, depth)?,
                        None => self.out.unmodeled.push(
                            "`let` evaluates an argument only known at run time as arithmetic"
                                .to_owned(),
                        ),
                    }
                }
                return Ok(());
            }
            _ => return Ok(()),
        };
        // `declare -p NAME` prints the variable (an environment secret, too).
        let printing = matches!(
            name.as_str(),
            "local" | "declare" | "typeset" | "export" | "readonly"
        ) && args
            .iter()
            .flatten()
            .any(|a| a.starts_with('-') && a.contains('p'));
        if matches!(name.as_str(), "local" | "declare" | "typeset") {
            for flag in args.iter().flatten().filter(|a| a.starts_with(['-', '+'])) {
                if flag.contains('n') {
                    self.out.unmodeled.push(format!(
                        "`{name} {flag}` makes a name reference: later assignments land in a \
                         variable named at run time"
                    ));
                }
                if flag.contains('i') {
                    self.out.unmodeled.push(format!(
                        "`{name} {flag}` makes integer variables: what is assigned to them is \
                         evaluated as arithmetic"
                    ));
                }
            }
        }
        for n in names {
            let Some(n) = n else {
                self.out.unmodeled.push(format!(
                    "`{name}` is given a variable name only known at run time"
                ));
                continue;
            };
            let n = n.split('=').next().unwrap_or(n);
            let base = match n.split_once('[') {
                Some((base, rest)) => {
                    let subscript = rest.strip_suffix(']').unwrap_or(rest);
                    self.arithmetic(subscript, depth)?;
                    base
                }
                None => n,
            };
            if printing {
                self.out.variables.push(base.to_owned());
            } else {
                self.out.assigned.push(base.to_owned());
            }
        }
        Ok(())
    }

    fn assignment(&mut self, a: &ast::Assignment, depth: u32) -> Result<(), String> {
        match &a.name {
            ast::AssignmentName::VariableName(n) | ast::AssignmentName::ArrayElementName(n, _) => {
                self.out.assigned.push(n.clone());
            }
        }
        if let ast::AssignmentName::ArrayElementName(_, index) = &a.name {
            self.arithmetic(index, depth)?;
        }
        match &a.value {
            ast::AssignmentValue::Scalar(w) => {
                self.word(&w.value, depth)?;
            }
            ast::AssignmentValue::Array(items) => {
                for (k, v) in items {
                    if let Some(k) = k {
                        self.word(&k.value, depth)?;
                    }
                    self.word(&v.value, depth)?;
                }
            }
        }
        Ok(())
    }

    fn redirect(&mut self, r: &IoRedirect, depth: u32) -> Result<(), String> {
        match r {
            IoRedirect::File(_, _, target) => match target {
                IoFileRedirectTarget::Filename(w) | IoFileRedirectTarget::Duplicate(w) => {
                    self.word(&w.value, depth).map(drop)
                }
                IoFileRedirectTarget::Fd(_) => Ok(()),
                IoFileRedirectTarget::ProcessSubstitution(_, sub) => {
                    self.list(&sub.list, depth + 1)
                }
            },
            IoRedirect::HereDocument(_, doc) => {
                if doc.requires_expansion {
                    let pieces = word::parse_heredoc(&doc.doc.value, &self.options)
                        .map_err(|e| format!("a here-document could not be read: {e}"))?;
                    self.pieces(&doc.doc.value, &pieces, depth)?;
                }
                Ok(())
            }
            IoRedirect::HereString(_, w) | IoRedirect::OutputAndError(w, _) => {
                self.word(&w.value, depth).map(drop)
            }
        }
    }

    fn test_expr(&mut self, e: &ExtendedTestExpr, depth: u32) -> Result<(), String> {
        match e {
            ExtendedTestExpr::And(a, b) | ExtendedTestExpr::Or(a, b) => {
                self.test_expr(a, depth)?;
                self.test_expr(b, depth)
            }
            ExtendedTestExpr::Not(a) | ExtendedTestExpr::Parenthesized(a) => {
                self.test_expr(a, depth)
            }
            ExtendedTestExpr::UnaryTest(op, w) => {
                let text = self.word(&w.value, depth)?;
                if matches!(
                    op,
                    ast::UnaryPredicate::ShellVariableIsSetAndAssigned
                        | ast::UnaryPredicate::ShellVariableIsSetAndNameRef
                ) {
                    let words = vec![Some("test".to_owned()), Some("-v".to_owned()), text];
                    self.builtin_names(&words, &["test", "-v", &w.value], depth)?;
                }
                Ok(())
            }
            ExtendedTestExpr::BinaryTest(op, a, b) => {
                let arithmetic = matches!(
                    op,
                    ast::BinaryPredicate::ArithmeticEqualTo
                        | ast::BinaryPredicate::ArithmeticNotEqualTo
                        | ast::BinaryPredicate::ArithmeticLessThan
                        | ast::BinaryPredicate::ArithmeticLessThanOrEqualTo
                        | ast::BinaryPredicate::ArithmeticGreaterThan
                        | ast::BinaryPredicate::ArithmeticGreaterThanOrEqualTo
                );
                for w in [a, b] {
                    if arithmetic {
                        self.arithmetic(&w.value, depth)?;
                    } else {
                        self.word(&w.value, depth)?;
                    }
                }
                Ok(())
            }
        }
    }

    /// An arithmetic context: literal numbers and operators are harmless; substitutions are
    /// read as scripts; any variable (or `$`) is evaluated by bash as arithmetic again, which
    /// runs array subscripts — not followed statically.
    fn arithmetic(&mut self, text: &str, depth: u32) -> Result<(), String> {
        if text.contains("$(") || text.contains('`') {
            let pieces = word::parse(text, &self.options)
                .map_err(|e| format!("an arithmetic expression could not be read: {e}"))?;
            self.pieces(text, &pieces, depth)?;
        }
        let names_a_variable = text
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .any(|t| t.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_'))
            || text.contains('$');
        if names_a_variable {
            self.out.unmodeled.push(format!(
                "`{}` is evaluated as arithmetic: bash evaluates a variable's value there as \
                 arithmetic too, and an array subscript in it (`a[$(cmd)]`) runs a command",
                text.trim()
            ));
        }
        Ok(())
    }

    /// Reads one shell word: the commands hidden in it, and its static text if it has one.
    fn word(&mut self, text: &str, depth: u32) -> Result<Option<String>, String> {
        if !text.contains(['$', '`', '\\', '\'', '"', '~', '*', '?', '[', '{', '<', '>']) {
            return Ok(Some(text.to_owned()));
        }
        let pieces = word::parse(text, &self.options)
            .map_err(|e| format!("the word `{text}` could not be read: {e}"))?;
        self.pieces(text, &pieces, depth)
    }

    /// Walks word pieces; returns the word's static text when every piece is static.
    fn pieces(
        &mut self,
        src: &str,
        pieces: &[WordPieceWithSource],
        depth: u32,
    ) -> Result<Option<String>, String> {
        let mut text = Some(String::new());
        for p in pieces {
            let piece_src = src.get(p.start_index..p.end_index).unwrap_or("");
            let stat: Option<String> = match &p.piece {
                WordPiece::Text(t) => {
                    if t.contains(['*', '?', '[', '{', '~']) {
                        None
                    } else {
                        Some(t.clone())
                    }
                }
                WordPiece::SingleQuotedText(t) => Some(t.clone()),
                WordPiece::EscapeSequence(e) => e.strip_prefix('\\').map(str::to_owned),
                WordPiece::DoubleQuotedSequence(inner)
                | WordPiece::GettextDoubleQuotedSequence(inner) => {
                    self.pieces(piece_src, inner, depth)?
                }
                WordPiece::AnsiCQuotedText(_) | WordPiece::TildeExpansion(_) => None,
                WordPiece::ParameterExpansion(_) => {
                    self.parameter(piece_src, depth)?;
                    None
                }
                WordPiece::CommandSubstitution(body)
                | WordPiece::BackquotedCommandSubstitution(body) => {
                    self.out.scripts.push(body.clone());
                    self.program(body, depth + 1)?;
                    None
                }
                WordPiece::ArithmeticExpression(e) => {
                    self.arithmetic(&e.value, depth)?;
                    None
                }
            };
            text = match (text, stat) {
                (Some(mut t), Some(s)) => {
                    t.push_str(&s);
                    Some(t)
                }
                _ => None,
            };
        }
        Ok(text)
    }

    /// `${…}`: a plain parameter is a value; an operator's operand is a word bash expands
    /// (`${a:-$(cmd)}` runs `cmd`), and offsets and subscripts are arithmetic.
    fn parameter(&mut self, src: &str, depth: u32) -> Result<(), String> {
        let Some(inner) = src.strip_prefix("${").and_then(|s| s.strip_suffix('}')) else {
            // `$name`, `$1`, `$@`: a plain value.
            if let Some(name) = src.strip_prefix('$') {
                self.out.variables.push(name.to_owned());
            }
            return Ok(());
        };
        let indirect = inner.starts_with('!') && inner.len() > 1;
        let inner = inner.strip_prefix(['#', '!']).unwrap_or(inner);
        let name_len = inner
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(inner.len());
        let name_len = if name_len == 0 && inner.starts_with(['@', '*', '#', '?', '$', '!', '-']) {
            1
        } else {
            name_len
        };
        let name = &inner[..name_len];
        self.out.variables.push(if indirect {
            format!("!{name}")
        } else {
            name.to_owned()
        });
        let mut rest = &inner[name_len..];
        if indirect && matches!(rest, "*" | "@") {
            // `${!prefix*}`: the names of variables, recorded above as indirect.
            return Ok(());
        }
        if let Some(sub) = rest.strip_prefix('[') {
            let end = sub
                .find(']')
                .ok_or_else(|| format!("the subscript in `{src}` has no end"))?;
            let index = &sub[..end];
            if !matches!(index, "@" | "*") {
                self.arithmetic(index, depth)?;
            }
            rest = &sub[end + 1..];
        }
        if rest.is_empty() {
            return Ok(());
        }
        const WORD_OPERATORS: &[&str] = &[
            ":-", ":=", ":?", ":+", "-", "=", "?", "+", "##", "#", "%%", "%", "//", "/#", "/%",
            "/", "^^", "^", ",,", ",", "@",
        ];
        if let Some(operand) = rest.strip_prefix(':') {
            if !operand.starts_with(['-', '=', '?', '+']) {
                // `${s:offset:length}`: both are arithmetic.
                for part in operand.splitn(2, ':') {
                    self.arithmetic(part, depth)?;
                }
                return Ok(());
            }
        }
        let (op, operand) = WORD_OPERATORS
            .iter()
            .find_map(|op| rest.strip_prefix(op).map(|operand| (*op, operand)))
            .ok_or_else(|| {
                format!("the expansion `{src}` uses an operator ground-link does not know")
            })?;
        if op == "@" && operand == "P" {
            // Prompt expansion of a value runs the command substitutions in it.
            self.out.unmodeled.push(format!(
                "`{src}` expands the value as a prompt, which runs the commands inside it"
            ));
            return Ok(());
        }
        if op.starts_with('/') {
            // `${a/pattern/replacement}`: both halves are expanded like words.
            for part in operand.splitn(2, '/') {
                self.word(part, depth)?;
            }
        } else {
            self.word(operand, depth)?;
        }
        Ok(())
    }
}

/// The `NAME=` (or `NAME+=`) that starts an assignment word written plainly, if it does.
fn static_name(src: &str) -> Option<&str> {
    let (name, _) = src.split_once('=')?;
    let name = name.strip_suffix('+').unwrap_or(name);
    let plain = name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    plain.then_some(name)
}
