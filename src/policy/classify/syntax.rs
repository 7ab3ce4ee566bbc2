//! Reads a command line the way bash will, with brush-parser (a bash-compatible parser written
//! for a shell that must run what it parses), and flattens it into the simple commands the
//! classifier judges. Every simple command is found wherever it hides: in lists and pipelines,
//! subshells, brace groups, `if`/`for`/`while`/`case` bodies, function bodies, `$(..)`,
//! backquotes, `<(..)`/`>(..)`, parameter-expansion operands (`${a:-$(cmd)}`), arithmetic and
//! unquoted here-documents. Redirections stay with the commands whose output they capture.
//!
//! Why brush-parser: the differential oracle (tests/oracle.rs) measured it against real bash
//! with tree-sitter-bash, which this module used before. tree-sitter-bash is written for
//! editors: it recovers from errors silently and read `echo $'\\'; cat ~/.ssh/id_rsa; #'` as
//! one string where bash runs three commands. See docs/security.md for the figures.
//!
//! What the reading also reports, for the classifier to judge: every variable expanded (an
//! environment variable may hold a secret), every variable set by any means (`for PATH in .`,
//! `read CDPATH`), and constructs no static reading can follow — arithmetic over a variable
//! (bash evaluates its value as arithmetic again, and `a[$(cmd)]` there runs `cmd`), `declare
//! -n`, `${x@P}`, `coproc`. Text brush-parser refuses is an error: the command is then not safe.

use brush_parser::ast::{
    self, AndOr, Command, CommandPrefixOrSuffixItem, CompoundCommand, CompoundList,
    ExtendedTestExpr, IoFileRedirectKind, IoFileRedirectTarget, IoRedirect, SeparatorOperator,
    SourceLocation,
};
use brush_parser::word::{self, WordPiece, WordPieceWithSource};
use brush_parser::{Parser, ParserOptions, SourceSpan};

use super::words::{Word, WordBuilder, brace_expand, decode_ansi_c};

/// How deeply substitutions and nested compound commands may nest before the reading gives up
/// (the command is then not safe).
const MAX_DEPTH: u32 = 16;

/// brush-parser recurses once per level of nesting (brackets, compound keywords), using tens of
/// KiB of stack per level in a debug build: 500 nested `if`s overflow a 2 MiB worker thread and
/// abort the process. So the text's openers are counted first (all of them, not their depth:
/// a bound that quoting or `case` patterns cannot get under). Up to [`FEW_OPENERS`] it is read
/// on the caller's stack; up to [`MAX_OPENERS`] on a stack of [`DEEP_STACK`] bytes of its own
/// (mapped for the call, touched only as deep as it goes); beyond that it is refused.
const FEW_OPENERS: usize = 24;
const MAX_OPENERS: usize = 1024;
const DEEP_STACK: usize = 256 << 20;

/// What kind of simple command a [`RawPart`] is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum RawKind {
    /// A command with a name (and maybe prefix assignments and redirections).
    Command,
    /// Only assignments (`X=1`, `export X=1`, `local x`), or `unset`.
    Assignment,
    /// Only redirections (`> file`, `$(< file)`), with no command.
    RedirectOnly,
    /// Not a command: the values a `for` loop gives its variable (kept for variable tracking).
    Bind,
}

/// Where a redirection points and what it does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum RedirKind {
    /// `< file`
    Read,
    /// `> file`, `>> file`, `&> file`, `>| file`, `>& file`, `<> file`
    Write,
    /// `2>&1`, `>&2`, `<&3`, `>&-`: only moves file descriptors around.
    Dup,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Redirect {
    pub kind: RedirKind,
    pub target: Word,
}

/// One simple command as written, before any judgement.
#[derive(Debug, Clone)]
pub(crate) struct RawPart {
    pub kind: RawKind,
    pub text: String,
    /// Prefix assignments (`X=1 cmd`) or, for [`RawKind::Assignment`], the assignments made.
    pub assigns: Vec<Word>,
    /// The command's words; for declarations (`export`, `local`, `unset`) the command word, its
    /// flags and the names it is given without values.
    pub words: Vec<Word>,
    pub redirects: Vec<Redirect>,
    /// The script fed on standard input, when known (here-document, here-string, `echo .. |`).
    pub stdin_script: Option<String>,
    /// Standard input comes from a pipe whose content we do not know.
    pub piped_stdin: bool,
    pub in_pipeline: bool,
    pub background: bool,
    /// How many command or process substitutions enclose this command.
    pub nest: u32,
}

impl RawPart {
    pub(crate) fn new(kind: RawKind, text: String, nest: u32) -> RawPart {
        RawPart {
            kind,
            text,
            assigns: Vec::new(),
            words: Vec::new(),
            redirects: Vec::new(),
            stdin_script: None,
            piped_stdin: false,
            in_pipeline: false,
            background: false,
            nest,
        }
    }
}

/// What reading one command line found.
#[derive(Debug, Default)]
pub(crate) struct Syntax {
    pub parts: Vec<RawPart>,
    /// Functions that call themselves in a pipeline or in the background (fork bombs).
    pub fork_bombs: Vec<String>,
    /// Constructs that can run code no static reading follows, each with why.
    pub unmodeled: Vec<String>,
    /// Every parameter expanded anywhere (`HOME`, `1`, `@`; `!x` for an indirect one), with
    /// when it is expanded (an order of events that follows bash's).
    pub variables: Vec<(String, usize)>,
    /// Every variable the command line names as one to set, declare or unset: `X=1`, `for`,
    /// `read`, `mapfile`, `getopts`, `printf -v`, `export X`...
    pub assigned: Vec<String>,
    /// Variables the command line gives a value of its own, and when: a later expansion of one
    /// is not the environment's. Not prefix assignments (`X=1 cmd` sets X for cmd alone), not
    /// `export X`/`unset X`/`test -v X`, not inside function bodies (they may never run).
    pub own: Vec<(String, usize)>,
    /// Arithmetic that names variables: already not safe, and scanned crudely for catastrophic
    /// commands too (brush-parser reads `( ( rm -rf ~ ) )` as arithmetic; bash as subshells).
    pub arithmetic: Vec<String>,
}

/// Builtins whose arguments are names and assignments rather than words to run.
const DECLARATIONS: &[&str] = &["declare", "typeset", "export", "readonly", "local", "unset"];

/// Reads `src` as bash would. `Err` says why it cannot be read (the command is then not safe).
pub(crate) fn read(src: &str) -> Result<Syntax, String> {
    // A plain line nests nothing: there is no stack to measure.
    if let Some(program) = super::plain::program(src) {
        return read_here(src, Some(program));
    }
    let openers = openers(src);
    if openers > MAX_OPENERS {
        return Err(format!(
            "the command opens more than {MAX_OPENERS} brackets and compound commands; write it \
             more plainly"
        ));
    }
    if openers > FEW_OPENERS {
        return stacker::grow(DEEP_STACK, || read_here(src, None));
    }
    read_here(src, None)
}

/// Reads `src`, already parsed when `parsed` is given.
fn read_here(src: &str, parsed: Option<ast::Program>) -> Result<Syntax, String> {
    // A panic inside the parser (hostile input it did not expect) must end in "not safe",
    // never in a dead worker thread.
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let mut r = Reader::new();
        // About one simple command per separator: room for them up front, so the parts (large
        // structs) are not copied as the list grows.
        let separators = src
            .bytes()
            .filter(|b| matches!(b, b';' | b'|' | b'&' | b'\n'))
            .count();
        r.out.parts.reserve((separators + 1).min(super::MAX_PARTS));
        match parsed {
            Some(program) => r.walk(src, &program, 0)?,
            None => r.program(src, 0)?,
        }
        Ok(r.out)
    }))
    .unwrap_or_else(|_| Err("the bash-compatible parser failed on this text".to_owned()))
}

/// The parser as `bash -c` runs: extended globs are off (bash refuses `@(a|b)` then).
pub(super) fn options() -> ParserOptions {
    ParserOptions {
        enable_extended_globbing: false,
        ..ParserOptions::default()
    }
}

/// How many brackets, backquotes and compound keywords `src` has, quoted or not: at least as
/// many as the levels bash and brush-parser can nest them.
fn openers(src: &str) -> usize {
    let keywords = src
        .split(|c: char| c.is_ascii_whitespace() || matches!(c, ';' | '&' | '|' | '(' | ')'))
        .filter(|t| {
            matches!(
                *t,
                "if" | "case"
                    | "while"
                    | "until"
                    | "for"
                    | "select"
                    | "function"
                    | "coproc"
                    | "[["
                    | "!"
                    | "time"
                    | "then"
                    | "do"
                    | "else"
                    | "elif"
            )
        })
        .count();
    let brackets = src
        .bytes()
        .filter(|b| matches!(b, b'(' | b'{' | b'[' | b'`'))
        .count();
    // Inside `[[ ]]` each `&&` and `||` is a level of brush-parser's recursion.
    let operators = src.matches("&&").count() + src.matches("||").count();
    keywords + brackets + operators
}

struct Reader {
    out: Syntax,
    options: ParserOptions,
    /// The text being read (a substitution's body while its commands are read).
    src: String,
    /// The order of variable events so far (see [`Syntax::variables`]).
    seq: usize,
    /// How many function bodies enclose what is being read.
    in_function: u32,
    /// Whether `src` is ASCII, where character positions are byte offsets.
    ascii: bool,
    nest: u32,
}

impl Reader {
    fn new() -> Reader {
        Reader {
            out: Syntax::default(),
            options: options(),
            src: String::new(),
            seq: 0,
            in_function: 0,
            ascii: true,
            nest: 0,
        }
    }

    fn program(&mut self, src: &str, depth: u32) -> Result<(), String> {
        if depth > MAX_DEPTH {
            return Err(format!(
                "substitutions nest more than {MAX_DEPTH} levels deep; write them out plainly"
            ));
        }
        let program = match super::plain::program(src) {
            Some(program) => program,
            None => Parser::new(src.as_bytes(), &self.options)
                .parse_program()
                .map_err(|e| format!("the shell parser could not read the command: {e}"))?,
        };
        self.walk(src, &program, depth)
    }

    /// Walks the commands of `program`, the syntax tree of `src`.
    fn walk(&mut self, src: &str, program: &ast::Program, depth: u32) -> Result<(), String> {
        let outer = std::mem::replace(&mut self.src, src.to_owned());
        let outer_ascii = std::mem::replace(&mut self.ascii, src.is_ascii());
        let walked = program
            .complete_commands
            .iter()
            .try_for_each(|c| self.list(c, depth));
        self.src = outer;
        self.ascii = outer_ascii;
        walked
    }

    /// The source text of a span of the text being read.
    fn text(&self, span: Option<&SourceSpan>) -> String {
        match span {
            Some(span) => self.slice(span.start.index, span.end.index),
            None => String::new(),
        }
    }

    /// The text between two positions, which count characters.
    fn slice(&self, start: usize, end: usize) -> String {
        if self.ascii {
            return self.src.get(start..end).unwrap_or("").to_owned();
        }
        self.src
            .chars()
            .skip(start)
            .take(end.saturating_sub(start))
            .collect()
    }

    /// A simple command's source text. brush-parser knows where words are but not where
    /// redirections are: the span runs from the first to the last word (a redirection's target
    /// is a word), widened back over a leading redirection's operator (`2>x cmd`).
    fn simple_text(&self, s: &ast::SimpleCommand) -> String {
        let items = s
            .prefix
            .iter()
            .flat_map(|p| &p.0)
            .chain(s.suffix.iter().flat_map(|p| &p.0));
        let (start, end) = s
            .word_or_name
            .iter()
            .filter_map(|w| w.loc.as_ref().map(|l| (l.start.index, l.end.index)))
            .chain(items.filter_map(item_span))
            .fold((usize::MAX, 0), |(a, b), (s, e)| (a.min(s), b.max(e)));
        if start == usize::MAX {
            return s.to_string();
        }
        let leading_redirect = s
            .prefix
            .as_ref()
            .and_then(|p| p.0.first())
            .is_some_and(|i| matches!(i, CommandPrefixOrSuffixItem::IoRedirect(_)));
        let mut from = start;
        if leading_redirect {
            let before: Vec<char> = self.slice(0, start).chars().collect();
            let operator = before
                .iter()
                .rev()
                .take_while(|c| matches!(c, '<' | '>' | '&' | '|' | ' ' | '\t' | '0'..='9'))
                .count();
            from = start - operator;
        }
        let text = self.slice(from, end);
        let trimmed = text.trim_start_matches(['&', '|', ' ', '\t']).trim_end();
        if trimmed.len() == text.len() {
            return text;
        }
        trimmed.to_owned()
    }

    fn list(&mut self, l: &CompoundList, depth: u32) -> Result<(), String> {
        for item in &l.0 {
            let start = self.out.parts.len();
            let and_or = &item.0;
            self.pipeline(&and_or.first, depth)?;
            for next in &and_or.additional {
                match next {
                    AndOr::And(p) | AndOr::Or(p) => self.pipeline(p, depth)?,
                }
            }
            if matches!(item.1, SeparatorOperator::Async) {
                for p in &mut self.out.parts[start..] {
                    p.background = true;
                }
            }
        }
        Ok(())
    }

    fn pipeline(&mut self, p: &ast::Pipeline, depth: u32) -> Result<(), String> {
        let start = self.out.parts.len();
        let nest = self.nest;
        let mut echoed: Option<String> = None;
        for (index, c) in p.seq.iter().enumerate() {
            let from = self.out.parts.len();
            self.command(c, depth)?;
            if index > 0 {
                for part in &mut self.out.parts[from..] {
                    if part.nest == nest {
                        part.piped_stdin = true;
                        if part.stdin_script.is_none() {
                            part.stdin_script.clone_from(&echoed);
                        }
                    }
                }
            }
            echoed = self.out.parts[from..]
                .iter()
                .find(|part| part.nest == nest)
                .and_then(echoed_text);
        }
        if p.seq.len() > 1 {
            for part in &mut self.out.parts[start..] {
                part.in_pipeline = true;
            }
        }
        Ok(())
    }

    fn command(&mut self, c: &Command, depth: u32) -> Result<(), String> {
        if depth > MAX_DEPTH {
            return Err(format!(
                "commands nest more than {MAX_DEPTH} levels deep; write them out plainly"
            ));
        }
        match c {
            Command::Simple(s) => self.simple(s, depth),
            Command::Compound(cc, redirects) => {
                let start = self.out.parts.len();
                self.compound(cc, depth)?;
                self.redirected(start, redirects.as_ref(), c, depth)
            }
            Command::Function(f) => {
                let name = self.word(&f.fname.value, depth)?.text;
                let start = self.out.parts.len();
                self.in_function += 1;
                let body = self.compound(&f.body.0, depth);
                self.in_function -= 1;
                body?;
                self.redirected(start, f.body.1.as_ref(), c, depth)?;
                let recursive = self.out.parts[start..].iter().any(|p| {
                    p.kind == RawKind::Command
                        && (p.in_pipeline || p.background)
                        && p.words.first().is_some_and(|w| w.text == name)
                });
                if recursive && !name.is_empty() {
                    self.out.fork_bombs.push(name);
                }
                Ok(())
            }
            Command::ExtendedTest(t, redirects) => {
                let start = self.out.parts.len();
                self.test_expr(&t.expr, depth)?;
                self.redirected(start, redirects.as_ref(), c, depth)
            }
        }
    }

    /// Gives a compound command's redirections to the commands collected since `start` at this
    /// nesting level, or records a redirection-only command when there are none.
    fn redirected(
        &mut self,
        start: usize,
        list: Option<&ast::RedirectList>,
        c: &Command,
        depth: u32,
    ) -> Result<(), String> {
        let Some(list) = list else {
            return Ok(());
        };
        let mut redirects = Vec::new();
        let mut stdin = None;
        for r in &list.0 {
            self.redirect(r, &mut redirects, &mut stdin, depth)?;
        }
        let nest = self.nest;
        let mut any = false;
        for p in &mut self.out.parts[start..] {
            if p.nest == nest && matches!(p.kind, RawKind::Command | RawKind::RedirectOnly) {
                p.redirects.extend(redirects.iter().cloned());
                if p.stdin_script.is_none() {
                    p.stdin_script.clone_from(&stdin);
                }
                any = true;
            }
        }
        let nothing = redirects.is_empty() && stdin.is_none();
        if !any && !nothing {
            let mut p = RawPart::new(
                RawKind::RedirectOnly,
                self.text(c.location().as_ref()),
                nest,
            );
            p.redirects = redirects;
            p.stdin_script = stdin;
            self.out.parts.push(p);
        }
        Ok(())
    }

    fn compound(&mut self, c: &CompoundCommand, depth: u32) -> Result<(), String> {
        let depth = depth + 1;
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
                // `for d in a b c`: records `d=a`, `d=b`, `d=c` for variable tracking.
                let mut bind = RawPart::new(RawKind::Bind, String::new(), self.nest);
                for w in f.values.iter().flatten() {
                    for w in brace_expand(self.word(&w.value, depth)?) {
                        if !w.dynamic {
                            let text = format!("{}={}", f.variable_name, w.text);
                            bind.assigns.push(Word::literal(&text));
                        }
                    }
                }
                if !bind.assigns.is_empty() {
                    self.out.parts.push(bind);
                }
                self.out.assigned.push(f.variable_name.clone());
                self.own(&f.variable_name);
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
            CompoundCommand::Coprocess(cp) => {
                self.out
                    .unmodeled
                    .push("coproc starts a background process".to_owned());
                self.command(&cp.body, depth)
            }
        }
    }

    fn simple(&mut self, s: &ast::SimpleCommand, depth: u32) -> Result<(), String> {
        let text = self.simple_text(s);
        let declaration = s
            .word_or_name
            .as_ref()
            .is_some_and(|w| DECLARATIONS.contains(&w.value.as_str()));
        let kind = match (&s.word_or_name, declaration) {
            (Some(_), false) => RawKind::Command,
            (Some(_), true) => RawKind::Assignment,
            (None, _) => {
                let assigns = s
                    .prefix
                    .iter()
                    .flat_map(|p| &p.0)
                    .any(|i| matches!(i, CommandPrefixOrSuffixItem::AssignmentWord(..)));
                if assigns {
                    RawKind::Assignment
                } else {
                    RawKind::RedirectOnly
                }
            }
        };
        let mut part = RawPart::new(kind, text, self.nest);
        let suffix_len = s.suffix.as_ref().map_or(0, |x| x.0.len());
        part.words.reserve(1 + suffix_len);
        let mut stdin = None;
        // Commands inside words (`$(..)`) are read as the words are, and land after this part.
        let at = self.out.parts.len();
        // `X=1` alone sets X for what follows; `X=1 cmd` only for cmd.
        let alone = s.word_or_name.is_none();
        for item in s.prefix.iter().flat_map(|p| &p.0) {
            match item {
                CommandPrefixOrSuffixItem::AssignmentWord(a, w) => {
                    let w = self.word(&w.value, depth)?;
                    self.assignment(a, alone, depth)?;
                    part.assigns.push(w);
                }
                other => self.item(other, &mut part, &mut stdin, depth)?,
            }
        }
        let mut sources: Vec<&str> = Vec::with_capacity(1 + suffix_len);
        if let Some(name) = &s.word_or_name {
            // `[` is the test builtin's name, not a glob.
            let w = if name.value == "[" {
                quoted("[")
            } else {
                self.word(&name.value, depth)?
            };
            part.words.push(w);
            sources.push(&name.value);
        }
        for item in s.suffix.iter().flat_map(|p| &p.0) {
            match item {
                // `declare x=1`, `export y=$(cmd)`: an assignment for a declaration, a plain
                // argument for any other command.
                CommandPrefixOrSuffixItem::AssignmentWord(a, w) => {
                    let word = self.word(&w.value, depth)?;
                    if declaration {
                        self.assignment(a, true, depth)?;
                        if matches!(a.value, ast::AssignmentValue::Scalar(_)) {
                            self.rereads_array(&word);
                        }
                        part.assigns.push(word);
                    } else {
                        part.words.push(word);
                        sources.push(&w.value);
                    }
                }
                CommandPrefixOrSuffixItem::Word(w) => {
                    let word = self.word(&w.value, depth)?;
                    if declaration {
                        self.rereads_array(&word);
                    }
                    part.words.push(word);
                    sources.push(&w.value);
                }
                other => self.item(other, &mut part, &mut stdin, depth)?,
            }
        }
        self.builtin_names(&part.words, &sources, depth)?;
        if part.words.iter().any(|w| w.brace) {
            part.words = std::mem::take(&mut part.words)
                .into_iter()
                .flat_map(brace_expand)
                .collect();
        }
        part.stdin_script = stdin;
        self.out.parts.insert(at, part);
        Ok(())
    }

    /// A redirection or process substitution among a simple command's words.
    fn item(
        &mut self,
        item: &CommandPrefixOrSuffixItem,
        part: &mut RawPart,
        stdin: &mut Option<String>,
        depth: u32,
    ) -> Result<(), String> {
        match item {
            CommandPrefixOrSuffixItem::IoRedirect(r) => {
                self.redirect(r, &mut part.redirects, stdin, depth)
            }
            CommandPrefixOrSuffixItem::ProcessSubstitution(kind, sub) => {
                let text = format!("{kind}{}", self.text(Some(&sub.loc)));
                part.words.push(process_word(&text));
                self.substituted(&sub.list, depth)
            }
            CommandPrefixOrSuffixItem::Word(w) => {
                let w = self.word(&w.value, depth)?;
                part.words.push(w);
                Ok(())
            }
            CommandPrefixOrSuffixItem::AssignmentWord(a, w) => {
                let w = self.word(&w.value, depth)?;
                self.assignment(a, false, depth)?;
                part.assigns.push(w);
                Ok(())
            }
        }
    }

    /// The commands of a process substitution, one level deeper.
    fn substituted(&mut self, list: &CompoundList, depth: u32) -> Result<(), String> {
        self.nest += 1;
        let walked = self.list(list, depth + 1);
        self.nest -= 1;
        walked
    }

    /// Builtins that take variable names, or arithmetic, as arguments. bash evaluates a
    /// subscript in a name (`read 'a[$(cmd)]'`, `printf -v`, `test -v`, `unset`, `declare`,
    /// `wait -p`) and every argument of `let` as arithmetic, so those are read as arithmetic
    /// here; the names are recorded as assigned, so setting `PATH`, `CDPATH`, `PS4` or
    /// `BASH_CMDS` through them is judged like an assignment.
    fn builtin_names(
        &mut self,
        words: &[Word],
        sources: &[&str],
        depth: u32,
    ) -> Result<(), String> {
        let Some(name) = words.first().filter(|w| !w.dynamic) else {
            return Ok(());
        };
        let name = name.text.as_str();
        // Which arguments name variables, for the builtins that take names; nothing else is
        // looked at (most commands are not builtins).
        enum Names {
            Operands,
            AfterFlag(&'static str),
            Arithmetic,
        }
        let how = match name {
            "read" | "mapfile" | "readarray" | "getopts" | "unset" | "local" | "declare"
            | "typeset" | "export" | "readonly" => Names::Operands,
            "printf" | "test" | "[" => Names::AfterFlag("-v"),
            "wait" => Names::AfterFlag("-p"),
            "let" => Names::Arithmetic,
            _ => return Ok(()),
        };
        // `export PATH=/x:$PATH`: the value is only known at run time, the name is not.
        let args: Vec<Option<&str>> = words[1..]
            .iter()
            .zip(sources.iter().skip(1))
            .map(|(w, src)| {
                (!w.dynamic && !w.glob)
                    .then_some(w.text.as_str())
                    .or_else(|| static_name(src))
            })
            .collect();
        // Builtins that give the names a value of the command line's own.
        let gives_value = matches!(
            name,
            "read" | "mapfile" | "readarray" | "getopts" | "printf" | "wait"
        );
        let names: Vec<Option<&str>> = match how {
            Names::Operands => args
                .iter()
                .copied()
                .filter(|a| !a.is_some_and(|a| a.starts_with(['-', '+'])))
                .collect(),
            Names::AfterFlag(flag) => args
                .windows(2)
                .filter(|w| w[0] == Some(flag))
                .map(|w| w[1])
                .collect(),
            Names::Arithmetic => {
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
        };
        // `declare -p NAME` prints the variable (an environment secret, too).
        let printing = matches!(
            name,
            "local" | "declare" | "typeset" | "export" | "readonly"
        ) && args
            .iter()
            .flatten()
            .any(|a| a.starts_with('-') && a.contains('p'));
        if matches!(name, "local" | "declare" | "typeset") {
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
                self.variable(base);
            } else {
                self.out.assigned.push(base.to_owned());
                if gives_value {
                    self.own(base);
                }
            }
        }
        Ok(())
    }

    /// Records an assignment (its value was read already, as bash evaluates it first); `sets`
    /// when it gives the variable a value for what follows.
    fn assignment(&mut self, a: &ast::Assignment, sets: bool, depth: u32) -> Result<(), String> {
        let name = match &a.name {
            ast::AssignmentName::VariableName(n) => n,
            ast::AssignmentName::ArrayElementName(n, index) => {
                self.arithmetic(index, depth)?;
                n
            }
        };
        if let ast::AssignmentValue::Array(items) = &a.value {
            // `a=([k]=v)`: bash evaluates an indexed array's keys as arithmetic (an
            // associative array's as words; which one is only known at run time).
            for (k, _) in items {
                if let Some(k) = k {
                    self.word(&k.value, depth)?;
                    self.arithmetic(&k.value, depth)?;
                }
            }
        }
        self.out.assigned.push(name.clone());
        if sets {
            self.own(name);
        }
        Ok(())
    }

    /// A declaration builtin re-reads an argument of the form `x=(…)` as a compound assignment,
    /// quoted or not (`declare -a 'x=($(cmd))'` runs cmd): such text is not followed here.
    fn rereads_array(&mut self, word: &Word) {
        let rereads = match word.text.split_once('=') {
            Some((_, value)) => value.starts_with('('),
            None => false,
        };
        if rereads {
            self.out.unmodeled.push(format!(
                "`{}` is re-read by the declaration as an array assignment, which can run \
                 commands inside it; write the array unquoted (`x=(a b)`)",
                word.text
            ));
        }
    }

    /// Where brush-parser may end a here-document on another line than bash does, the rest of
    /// the document could be commands bash runs: such documents are not followed here. bash
    /// removes quotes and backslashes from the end word as from any word, decoding `$'…'`
    /// (brush-parser only drops them), and with an unquoted end word it joins lines ending in
    /// a backslash before comparing (brush-parser compares raw lines).
    fn here_end(&mut self, doc: &ast::IoHereDocument) {
        let tag = doc.here_end.value.as_str();
        let plain = |t: &str| {
            !t.is_empty()
                && t.chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '!'))
        };
        let simple = plain(tag)
            || [('\'', '\''), ('"', '"')].iter().any(|(open, close)| {
                tag.strip_prefix(*open)
                    .and_then(|t| t.strip_suffix(*close))
                    .is_some_and(plain)
            })
            || tag.strip_prefix('\\').is_some_and(plain);
        if !simple {
            self.out.unmodeled.push(format!(
                "the here-document's end word `{tag}` is quoted in a way bash and ground-link \
                 may read differently; end it with a plain word like EOF or 'EOF'"
            ));
        } else if doc.requires_expansion && doc.doc.value.contains("\\\n") {
            self.out.unmodeled.push(
                "a line of the here-document ends in a backslash, which joins it to the next \
                 line when bash looks for the end word; quote the end word ('EOF')"
                    .to_owned(),
            );
        }
    }

    /// `ls <<<2>&1`, `cat <2>x`: bash reads digits right before `<` or `>` as a file
    /// descriptor, which leaves the first operator without a target, and refuses the line;
    /// brush-parser takes the digits as the target. Such text is not safe.
    fn digits_before_operator(&mut self, w: &ast::Word) {
        let digits = !w.value.is_empty() && w.value.bytes().all(|b| b.is_ascii_digit());
        let Some(loc) = &w.loc else {
            return;
        };
        let next = self.slice(loc.end.index, loc.end.index + 1);
        if digits && (next == "<" || next == ">") {
            self.out.unmodeled.push(format!(
                "bash reads `{}` before `{next}` as a file descriptor and refuses the line",
                w.value
            ));
        }
    }

    /// Notes an expansion of `name`, in order.
    fn variable(&mut self, name: &str) {
        self.seq += 1;
        self.out.variables.push((name.to_owned(), self.seq));
    }

    /// Notes that the command line gives `name` a value of its own from here on.
    fn own(&mut self, name: &str) {
        if self.in_function == 0 {
            self.seq += 1;
            self.out.own.push((name.to_owned(), self.seq));
        }
    }

    /// Reads one redirection into `out` (or, for here-documents and here-strings, `stdin`).
    fn redirect(
        &mut self,
        r: &IoRedirect,
        out: &mut Vec<Redirect>,
        stdin: &mut Option<String>,
        depth: u32,
    ) -> Result<(), String> {
        match r {
            IoRedirect::File(_, kind, target) => {
                let duplicate = matches!(
                    kind,
                    IoFileRedirectKind::DuplicateInput | IoFileRedirectKind::DuplicateOutput
                );
                let input = matches!(
                    kind,
                    IoFileRedirectKind::Read | IoFileRedirectKind::DuplicateInput
                );
                let (kind, target) = match target {
                    IoFileRedirectTarget::Fd(_) => (RedirKind::Dup, Word::default()),
                    IoFileRedirectTarget::Filename(w) | IoFileRedirectTarget::Duplicate(w) => {
                        self.digits_before_operator(w);
                        let w = self.word(&w.value, depth)?;
                        let t = w.text.as_str();
                        let fd =
                            t == "-" || (!t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()));
                        if duplicate && fd && !w.dynamic {
                            (RedirKind::Dup, w)
                        } else if input {
                            (RedirKind::Read, w)
                        } else {
                            (RedirKind::Write, w)
                        }
                    }
                    IoFileRedirectTarget::ProcessSubstitution(kind, sub) => {
                        let text = format!("{kind}{}", self.text(Some(&sub.loc)));
                        self.substituted(&sub.list, depth)?;
                        (RedirKind::Read, process_word(&text))
                    }
                };
                out.push(Redirect { kind, target });
            }
            IoRedirect::HereDocument(_, doc) => {
                self.here_end(doc);
                if doc.requires_expansion {
                    let pieces = word::parse_heredoc(&doc.doc.value, &self.options)
                        .map_err(|e| format!("a here-document could not be read: {e}"))?;
                    self.pieces(
                        &doc.doc.value,
                        &pieces,
                        &mut WordBuilder::default(),
                        false,
                        depth,
                    )?;
                }
                *stdin = Some(doc.doc.value.clone());
            }
            IoRedirect::HereString(_, w) => {
                self.digits_before_operator(w);
                let w = self.word(&w.value, depth)?;
                *stdin = Some(w.text);
            }
            IoRedirect::OutputAndError(w, _) => {
                let target = self.word(&w.value, depth)?;
                out.push(Redirect {
                    kind: RedirKind::Write,
                    target,
                });
            }
        }
        Ok(())
    }

    fn test_expr(&mut self, e: &ExtendedTestExpr, depth: u32) -> Result<(), String> {
        if depth > MAX_DEPTH {
            return Err(format!(
                "a [[ ]] test nests more than {MAX_DEPTH} levels deep; split it up"
            ));
        }
        match e {
            ExtendedTestExpr::And(a, b) | ExtendedTestExpr::Or(a, b) => {
                self.test_expr(a, depth + 1)?;
                self.test_expr(b, depth + 1)
            }
            ExtendedTestExpr::Not(a) | ExtendedTestExpr::Parenthesized(a) => {
                self.test_expr(a, depth + 1)
            }
            ExtendedTestExpr::UnaryTest(op, w) => {
                let text = self.word(&w.value, depth)?;
                if matches!(
                    op,
                    ast::UnaryPredicate::ShellVariableIsSetAndAssigned
                        | ast::UnaryPredicate::ShellVariableIsSetAndNameRef
                ) {
                    let words = [quoted("test"), quoted("-v"), text];
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
    /// read as commands; any variable (or `$`) is evaluated by bash as arithmetic again, which
    /// runs array subscripts — not followed statically.
    fn arithmetic(&mut self, text: &str, depth: u32) -> Result<(), String> {
        if text.contains("$(") || text.contains('`') {
            let pieces = word::parse(text, &self.options)
                .map_err(|e| format!("an arithmetic expression could not be read: {e}"))?;
            self.pieces(text, &pieces, &mut WordBuilder::default(), false, depth)?;
        }
        let names_a_variable = text
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .any(|t| t.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_'))
            || text.contains('$');
        if names_a_variable {
            self.out.arithmetic.push(text.to_owned());
            self.out.unmodeled.push(format!(
                "`{}` is evaluated as arithmetic: bash evaluates a variable's value there as \
                 arithmetic too, and an array subscript in it (`a[$(cmd)]`) runs a command",
                text.trim()
            ));
        }
        Ok(())
    }

    /// Reads one shell word: the commands hidden in it are collected as parts, and the word
    /// itself comes back with quotes removed and expansions kept as their source text.
    fn word(&mut self, text: &str, depth: u32) -> Result<Word, String> {
        if let Some(w) = quoted_at_most_singly(text) {
            return Ok(w);
        }
        self.parsed_word(text, depth)
    }

    /// A word read by brush-parser's word parser.
    fn parsed_word(&mut self, text: &str, depth: u32) -> Result<Word, String> {
        let mut b = WordBuilder::default();
        let pieces = word::parse(text, &self.options)
            .map_err(|e| format!("the word `{text}` could not be read: {e}"))?;
        self.pieces(text, &pieces, &mut b, false, depth)?;
        Ok(b.finish())
    }

    /// Walks word pieces into `b`; `quoted` inside double quotes.
    fn pieces(
        &mut self,
        src: &str,
        pieces: &[WordPieceWithSource],
        b: &mut WordBuilder,
        quoted: bool,
        depth: u32,
    ) -> Result<(), String> {
        for p in pieces {
            let piece_src = src.get(p.start_index..p.end_index).unwrap_or("");
            match &p.piece {
                WordPiece::Text(t) | WordPiece::EscapeSequence(t) => {
                    if quoted {
                        b.push_double_quoted_raw(t);
                    } else {
                        b.push_unquoted_raw(t);
                    }
                }
                WordPiece::SingleQuotedText(t) => b.push_quoted(t),
                WordPiece::AnsiCQuotedText(t) => match decode_ansi_c(t) {
                    Some(s) => b.push_quoted(&s),
                    None => b.push_dynamic(piece_src, None),
                },
                WordPiece::DoubleQuotedSequence(inner)
                | WordPiece::GettextDoubleQuotedSequence(inner) => {
                    // Inner positions index the whole word, like the outer ones.
                    self.pieces(src, inner, b, true, depth)?;
                }
                WordPiece::TildeExpansion(_) => b.push_unquoted_raw(piece_src),
                WordPiece::ParameterExpansion(_) => {
                    let var = self.parameter(piece_src, depth)?;
                    b.push_dynamic(piece_src, var.as_deref());
                }
                WordPiece::CommandSubstitution(body) => {
                    b.push_dynamic(piece_src, None);
                    self.command_substitution(body, depth)?;
                }
                WordPiece::BackquotedCommandSubstitution(_) => {
                    b.push_dynamic(piece_src, None);
                    // Inside backquotes bash undoes `\\`, `\$` and `` \` `` before parsing the
                    // body (brush-parser keeps `\\` and `\$`): read what bash reads.
                    let raw = piece_src
                        .strip_prefix('`')
                        .and_then(|s| s.strip_suffix('`'))
                        .unwrap_or(piece_src);
                    self.command_substitution(&unescape_backquoted(raw, quoted), depth)?;
                }
                WordPiece::ArithmeticExpression(e) => {
                    b.push_dynamic(piece_src, None);
                    self.arithmetic(&e.value, depth)?;
                }
            }
        }
        Ok(())
    }

    /// The commands of `$(body)` or a backquoted body, one level deeper. `$(< file)` reads a
    /// file with no command at all.
    fn command_substitution(&mut self, body: &str, depth: u32) -> Result<(), String> {
        self.nest += 1;
        let read = self.program(body, depth + 1);
        self.nest -= 1;
        read
    }

    /// `${…}` or `$name`: records the variable, reads operands bash expands (`${a:-$(cmd)}`
    /// runs `cmd`; offsets and subscripts are arithmetic). Returns the name when the expansion
    /// is a plain variable.
    fn parameter(&mut self, src: &str, depth: u32) -> Result<Option<String>, String> {
        let Some(inner) = src.strip_prefix("${").and_then(|s| s.strip_suffix('}')) else {
            // `$name`, `$1`, `$@`: a plain value.
            let name = src.strip_prefix('$').unwrap_or(src);
            self.variable(name);
            return Ok(Some(name.to_owned()));
        };
        let indirect = inner.starts_with('!') && inner.len() > 1;
        let length = inner.starts_with('#') && inner.len() > 1;
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
        if indirect {
            self.variable(&format!("!{name}"));
        } else {
            self.variable(name);
        }
        let mut rest = &inner[name_len..];
        let plain = rest.is_empty() && !indirect && !length;
        if indirect && matches!(rest, "*" | "@") {
            // `${!prefix*}`: the names of variables, recorded above as indirect.
            return Ok(None);
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
            return Ok(plain.then(|| name.to_owned()));
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
                return Ok(None);
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
            return Ok(None);
        }
        if op.starts_with('/') {
            // `${a/pattern/replacement}`: both halves are expanded like words.
            for part in operand.splitn(2, '/') {
                self.word(part, depth)?;
            }
        } else {
            self.word(operand, depth)?;
        }
        Ok(None)
    }
}

/// Where a prefix or suffix item is, when brush-parser says (for a redirection, its target).
/// A word with no expansion, escape or double quote in it, read without the word parser: its
/// unquoted and single-quoted runs simply alternate (`-n`, `'fn '`, `a'b c'd`).
fn quoted_at_most_singly(text: &str) -> Option<Word> {
    let mut quotes = 0usize;
    for b in text.bytes() {
        match b {
            b'$' | b'`' | b'\\' | b'"' | b'~' | b'<' | b'>' | b'(' => return None,
            b'\'' => quotes += 1,
            _ => {}
        }
    }
    if quotes % 2 == 1 {
        return None;
    }
    let mut b = WordBuilder::default();
    if quotes == 0 {
        b.push_unquoted_raw(text);
        return Some(b.finish());
    }
    for (i, run) in text.split('\'').enumerate() {
        if i % 2 == 1 {
            b.push_quoted(run);
        } else if !run.is_empty() {
            b.push_unquoted_raw(run);
        }
    }
    Some(b.finish())
}

/// Where an item of a simple command starts and ends (character positions).
fn item_span(item: &CommandPrefixOrSuffixItem) -> Option<(usize, usize)> {
    let span = match item {
        CommandPrefixOrSuffixItem::Word(w) | CommandPrefixOrSuffixItem::AssignmentWord(_, w) => {
            w.loc.as_ref()
        }
        CommandPrefixOrSuffixItem::ProcessSubstitution(_, sub) => Some(&sub.loc),
        CommandPrefixOrSuffixItem::IoRedirect(r) => match r {
            IoRedirect::File(_, _, IoFileRedirectTarget::Filename(w))
            | IoRedirect::File(_, _, IoFileRedirectTarget::Duplicate(w))
            | IoRedirect::HereString(_, w)
            | IoRedirect::OutputAndError(w, _) => w.loc.as_ref(),
            IoRedirect::File(_, _, IoFileRedirectTarget::ProcessSubstitution(_, sub)) => {
                Some(&sub.loc)
            }
            IoRedirect::HereDocument(_, doc) => doc.here_end.loc.as_ref(),
            IoRedirect::File(_, _, IoFileRedirectTarget::Fd(_)) => None,
        },
    };
    span.map(|s| (s.start.index, s.end.index))
}

/// A word taken literally (no glob, no brace).
fn quoted(text: &str) -> Word {
    let mut b = WordBuilder::default();
    b.push_quoted(text);
    b.finish()
}

/// The word a process substitution stands for (`<(cmd)`): a pipe to a command judged on its own.
fn process_word(text: &str) -> Word {
    let mut b = WordBuilder::default();
    b.push_dynamic(text, None);
    b.finish()
}

/// The `NAME=` (or `NAME+=`) that starts an assignment word written plainly, if it does.
fn static_name(src: &str) -> Option<&str> {
    let (name, _) = src.split_once('=')?;
    let name = name.strip_suffix('+').unwrap_or(name);
    let plain = name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    plain.then_some(name)
}

/// The text `echo a b` or `printf 'a b'` writes, when it is static.
fn echoed_text(p: &RawPart) -> Option<String> {
    if p.kind != RawKind::Command || !p.assigns.is_empty() || !p.redirects.is_empty() {
        return None;
    }
    let (name, args) = p.words.split_first()?;
    if p.words.iter().any(|w| w.dynamic) {
        return None;
    }
    match name.text.as_str() {
        "echo" => Some(
            args.iter()
                .skip_while(|w| w.text == "-n" || w.text == "-e" || w.text == "-E")
                .map(|w| w.text.as_str())
                .collect::<Vec<_>>()
                .join(" "),
        ),
        "printf" => args.first().map(|f| f.text.replace("\\n", "\n")),
        _ => None,
    }
}

/// Undoes the escapes the shell removes inside backquotes before parsing their body (inside
/// double quotes, `\"` too).
fn unescape_backquoted(s: &str, in_double_quotes: bool) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.peek() {
                Some('\\' | '$' | '`') => {
                    if let Some(n) = chars.next() {
                        out.push(n);
                    }
                }
                Some('"') if in_double_quotes => {
                    if let Some(n) = chars.next() {
                        out.push(n);
                    }
                }
                _ => out.push('\\'),
            }
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::{Reader, quoted_at_most_singly};

    proptest! {
        #![proptest_config(ProptestConfig {
            cases: crate::testing::proptest_cases(2000),
            failure_persistence: Some(Box::new(
                proptest::test_runner::FileFailurePersistence::Direct(
                    "tests/proptest-regressions/syntax.txt",
                ),
            )),
            ..ProptestConfig::default()
        })]

        /// Words read without the word parser read as the word parser reads them.
        #[test]
        fn singly_quoted_words_read_as_the_word_parser_reads_them(
            text in "[a'{},*?\\[\\] .=!#%-]{0,12}"
        ) {
            if let Some(fast) = quoted_at_most_singly(&text) {
                let slow = Reader::new().parsed_word(&text, 0);
                prop_assert_eq!(Ok(fast), slow, "{:?}", text);
            }
        }
    }
}
