//! Turns a tree-sitter-bash syntax tree into the flat list of simple commands the classifier
//! judges. Every simple command is found wherever it hides: in lists and pipelines, subshells,
//! brace groups, `if`/`for`/`while`/`case` bodies, function bodies, `$(..)`, backticks,
//! `<(..)`/`>(..)`, here-strings and unquoted here-documents. Redirections are attached to the
//! commands whose output they capture.

use tree_sitter::{Node, Tree};

use super::words::{Word, WordBuilder, brace_expand, decode_ansi_c};

/// Deeper trees than this are not walked (the command is then reported as unparseable).
const MAX_TREE_DEPTH: usize = 400;

/// What kind of simple command a [`RawPart`] is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum RawKind {
    /// A command with a name (and maybe prefix assignments and redirections).
    Command,
    /// Only assignments (`X=1`, `export X=1`, `local x`), or `unset`.
    Assignment,
    /// Only redirections (`> file`), or a compound statement whose redirection has no command.
    RedirectOnly,
    /// Text the shell will parse again (backquotes with escapes inside): analysed as a script.
    Script(String),
    /// Not a command: the values a `for` loop gives its variable (kept for variable tracking).
    Bind,
}

/// Where a redirection points and what it does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum RedirKind {
    /// `< file`
    Read,
    /// `> file`, `>> file`, `&> file`, `>| file`, `>& file`
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
    /// For declarations (`export`, `local`, `unset`): the command word and its flags.
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
    fn new(kind: RawKind, text: String, nest: u32) -> RawPart {
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

/// The result of walking one syntax tree.
#[derive(Debug, Default)]
pub(crate) struct Syntax {
    pub parts: Vec<RawPart>,
    /// Why the tree is not clean (ERROR/MISSING nodes, too deep), if it is not.
    pub error: Option<String>,
    /// Functions that call themselves in a pipeline or in the background (fork bombs).
    pub fork_bombs: Vec<String>,
}

/// Walks `tree` (parsed from `src`) and collects its simple commands.
pub(crate) fn collect(tree: &Tree, src: &str) -> Syntax {
    let root = tree.root_node();
    let mut w = Walker {
        src,
        out: Syntax::default(),
        depth: 0,
        nest: 0,
    };
    if root.has_error() {
        w.out.error = Some(describe_error(root, src));
    }
    w.walk(root);
    w.out
}

/// Names the first ERROR or MISSING node and where it is.
fn describe_error(root: Node, src: &str) -> String {
    let mut cursor = root.walk();
    let mut stack = vec![root];
    while let Some(n) = stack.pop() {
        if n.is_error() || n.is_missing() {
            let at = n.start_byte();
            let snippet: String = src.get(at..).unwrap_or("").chars().take(24).collect();
            return if n.is_missing() {
                format!(
                    "the shell parser expected `{}` at byte {at} (near {snippet:?})",
                    n.kind()
                )
            } else {
                format!(
                    "the shell parser could not read the command at byte {at} (near {snippet:?})"
                )
            };
        }
        if n.has_error() {
            let mut kids: Vec<Node> = n.children(&mut cursor).collect();
            kids.reverse();
            stack.extend(kids);
        }
    }
    "the shell parser could not read the command".to_owned()
}

struct Walker<'s> {
    src: &'s str,
    out: Syntax,
    depth: usize,
    nest: u32,
}

impl<'s> Walker<'s> {
    fn text(&self, n: Node) -> &'s str {
        self.src.get(n.start_byte()..n.end_byte()).unwrap_or("")
    }

    fn too_deep(&mut self) -> bool {
        if self.depth > MAX_TREE_DEPTH {
            if self.out.error.is_none() {
                self.out.error = Some(format!(
                    "the command nests more than {MAX_TREE_DEPTH} levels deep; split it up"
                ));
            }
            return true;
        }
        false
    }

    fn walk(&mut self, n: Node) {
        if self.too_deep() {
            return;
        }
        self.depth += 1;
        match n.kind() {
            "command" => self.command(n),
            "redirected_statement" => self.redirected(n),
            "variable_assignment" | "variable_assignments" => self.bare_assignment(n),
            "declaration_command" | "unset_command" => self.declaration(n),
            "function_definition" => self.function(n),
            "pipeline" => self.pipeline(n),
            "command_substitution" => self.substitution(n),
            "process_substitution" => {
                self.nest += 1;
                self.container(n);
                self.nest -= 1;
            }
            "for_statement" => {
                self.for_values(n);
                self.container(n);
            }
            "comment" | "heredoc_start" | "heredoc_end" | "heredoc_content" => {}
            _ => self.container(n),
        }
        self.depth -= 1;
    }

    /// Walks the children of a node that only groups statements, noting `&` (background).
    fn container(&mut self, n: Node) {
        let mut cur = n.walk();
        if !cur.goto_first_child() {
            return;
        }
        let mut last_start = self.out.parts.len();
        loop {
            let child = cur.node();
            if child.is_named() {
                last_start = self.out.parts.len();
                self.walk(child);
            } else if child.kind() == "&" {
                for p in &mut self.out.parts[last_start..] {
                    p.background = true;
                }
            }
            if !cur.goto_next_sibling() {
                break;
            }
        }
    }

    /// `for d in a b c`: records `d=a`, `d=b`, `d=c` for variable tracking.
    fn for_values(&mut self, n: Node) {
        let Some(var) = n.child_by_field_name("variable") else {
            return;
        };
        let name = self.text(var);
        let mut bind = RawPart::new(RawKind::Bind, String::new(), self.nest);
        let mut cur = n.walk();
        if cur.goto_first_child() {
            loop {
                if cur.field_name() == Some("value") {
                    for w in brace_expand(self.word(cur.node())) {
                        if !w.dynamic {
                            bind.assigns
                                .push(Word::literal(&format!("{name}={}", w.text)));
                        }
                    }
                }
                if !cur.goto_next_sibling() {
                    break;
                }
            }
        }
        if !bind.assigns.is_empty() {
            self.out.parts.push(bind);
        }
    }

    fn substitution(&mut self, n: Node) {
        // Inside backquotes the shell undoes `\\`, `\$` and `` \` `` before parsing again, so
        // escaped backquotes nest; tree-sitter does not model that, so such bodies are parsed
        // again as scripts of their own.
        let text = self.text(n);
        let body = text
            .strip_prefix('`')
            .map(|t| t.strip_suffix('`').unwrap_or(t));
        if let Some(body) = body.filter(|b| b.contains('\\')) {
            let inner = unescape_backquoted(body);
            self.out.parts.push(RawPart::new(
                RawKind::Script(inner),
                text.to_owned(),
                self.nest + 1,
            ));
            return;
        }
        self.nest += 1;
        self.container(n);
        self.nest -= 1;
    }

    fn pipeline(&mut self, n: Node) {
        let start = self.out.parts.len();
        let mut cur = n.walk();
        let mut index = 0usize;
        let mut echoed: Option<String> = None;
        if cur.goto_first_child() {
            loop {
                let child = cur.node();
                if child.is_named() && child.kind() != "comment" {
                    let from = self.out.parts.len();
                    self.walk(child);
                    if index > 0 {
                        for p in &mut self.out.parts[from..] {
                            if p.nest == self.nest {
                                p.piped_stdin = true;
                                if p.stdin_script.is_none() {
                                    p.stdin_script.clone_from(&echoed);
                                }
                            }
                        }
                    }
                    echoed = self.echoed_text(child);
                    index += 1;
                }
                if !cur.goto_next_sibling() {
                    break;
                }
            }
        }
        for p in &mut self.out.parts[start..] {
            p.in_pipeline = true;
        }
    }

    /// The text `echo a b` or `printf 'a b'` writes, when it is static.
    fn echoed_text(&self, n: Node) -> Option<String> {
        if n.kind() != "command" {
            return None;
        }
        let mut words = Vec::new();
        let mut cur = n.walk();
        if cur.goto_first_child() {
            loop {
                let child = cur.node();
                match cur.field_name() {
                    Some("name") | Some("argument") => words.push(self.word(child)),
                    Some(_) => return None,
                    None if child.kind() == "variable_assignment" => return None,
                    None => {}
                }
                if !cur.goto_next_sibling() {
                    break;
                }
            }
        }
        let (name, args) = words.split_first()?;
        if words.iter().any(|w| w.dynamic) {
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

    fn function(&mut self, n: Node) {
        let name = n
            .child_by_field_name("name")
            .map(|x| self.word(x).text)
            .unwrap_or_default();
        let start = self.out.parts.len();
        if let Some(body) = n.child_by_field_name("body") {
            self.walk(body);
        }
        let mut redirects = Vec::new();
        let mut cur = n.walk();
        if cur.goto_first_child() {
            loop {
                if cur.field_name() == Some("redirect") {
                    self.redirect(cur.node(), &mut redirects, &mut None::<String>);
                }
                if !cur.goto_next_sibling() {
                    break;
                }
            }
        }
        self.attach(start, redirects, None, n);
        if !name.is_empty() {
            let recursive = self.out.parts[start..].iter().any(|p| {
                p.kind == RawKind::Command
                    && (p.in_pipeline || p.background)
                    && p.words.first().is_some_and(|w| w.text == name)
            });
            if recursive {
                self.out.fork_bombs.push(name);
            }
        }
    }

    /// A redirected statement: the body's commands get the redirections.
    fn redirected(&mut self, n: Node) {
        let start = self.out.parts.len();
        let body = n.child_by_field_name("body");
        if let Some(b) = body {
            self.walk(b);
        }
        let mut redirects = Vec::new();
        let mut stdin: Option<String> = None;
        let mut later: Vec<Node> = Vec::new();
        let mut cur = n.walk();
        if cur.goto_first_child() {
            loop {
                let child = cur.node();
                if cur.field_name() != Some("body") {
                    match child.kind() {
                        "file_redirect" | "herestring_redirect" => {
                            self.redirect(child, &mut redirects, &mut stdin)
                        }
                        "heredoc_redirect" => {
                            self.heredoc(child, &mut redirects, &mut stdin, &mut later)
                        }
                        _ if child.is_named() => later.push(child),
                        _ => {}
                    }
                }
                if !cur.goto_next_sibling() {
                    break;
                }
            }
        }
        let body_is_command = body.is_some_and(|b| b.kind() == "command");
        if body_is_command && self.out.parts.len() > start {
            self.out.parts[start].text = self.text(n).to_owned();
        }
        self.attach(start, redirects, stdin, n);
        for l in later {
            self.walk(l);
        }
    }

    /// Gives `redirects` and `stdin` to the commands collected since `start` at this nesting
    /// level, or records a redirection-only command when there are none.
    fn attach(&mut self, start: usize, redirects: Vec<Redirect>, stdin: Option<String>, n: Node) {
        if redirects.is_empty() && stdin.is_none() {
            return;
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
        if !any {
            let mut p = RawPart::new(RawKind::RedirectOnly, self.text(n).to_owned(), nest);
            p.redirects = redirects;
            p.stdin_script = stdin;
            self.out.parts.push(p);
        }
    }

    fn heredoc<'t>(
        &mut self,
        n: Node<'t>,
        redirects: &mut Vec<Redirect>,
        stdin: &mut Option<String>,
        later: &mut Vec<Node<'t>>,
    ) {
        let mut cur = n.walk();
        if cur.goto_first_child() {
            loop {
                let child = cur.node();
                match child.kind() {
                    "file_redirect" | "herestring_redirect" => {
                        self.redirect(child, redirects, stdin)
                    }
                    "heredoc_body" => {
                        *stdin = Some(self.text(child).to_owned());
                        later.push(child);
                    }
                    "heredoc_start" | "heredoc_end" => {}
                    _ if child.is_named() => later.push(child),
                    _ => {}
                }
                if !cur.goto_next_sibling() {
                    break;
                }
            }
        }
    }

    /// Reads one `file_redirect` / `herestring_redirect` node.
    fn redirect(&mut self, n: Node, out: &mut Vec<Redirect>, stdin: &mut Option<String>) {
        if n.kind() == "herestring_redirect" {
            let mut cur = n.walk();
            let mut word: Option<Word> = None;
            if cur.goto_first_child() {
                loop {
                    let child = cur.node();
                    if child.is_named() && child.kind() != "file_descriptor" {
                        word = Some(self.word(child));
                        self.walk_nested(child);
                    }
                    if !cur.goto_next_sibling() {
                        break;
                    }
                }
            }
            if let Some(w) = word {
                *stdin = Some(w.text);
            }
            return;
        }
        let mut op = "";
        let mut target: Option<Node> = None;
        let mut cur = n.walk();
        if cur.goto_first_child() {
            loop {
                let child = cur.node();
                if cur.field_name() == Some("destination") {
                    target = Some(child);
                } else if !child.is_named() {
                    op = child.kind();
                }
                if !cur.goto_next_sibling() {
                    break;
                }
            }
        }
        let target_word = target.map(|t| self.word(t)).unwrap_or_default();
        if let Some(t) = target {
            self.walk_nested(t);
        }
        let kind = match op {
            "<" => RedirKind::Read,
            ">&-" | "<&-" => RedirKind::Dup,
            ">&" | "<&" => {
                let t = target_word.text.as_str();
                if t == "-" || (!t.is_empty() && t.bytes().all(|b| b.is_ascii_digit())) {
                    RedirKind::Dup
                } else if op == "<&" {
                    RedirKind::Read
                } else {
                    RedirKind::Write
                }
            }
            _ => RedirKind::Write,
        };
        out.push(Redirect {
            kind,
            target: target_word,
        });
    }

    /// Walks a word-like node only for the commands hidden inside it (`$(..)`, `<(..)`).
    fn walk_nested(&mut self, n: Node) {
        match n.kind() {
            "command_substitution" | "process_substitution" => self.walk(n),
            _ => {
                if n.child_count() == 0 {
                    return;
                }
                if self.too_deep() {
                    return;
                }
                self.depth += 1;
                let mut cur = n.walk();
                if cur.goto_first_child() {
                    loop {
                        let child = cur.node();
                        if child.kind() == "variable_assignment" {
                            if let Some(v) = child.child_by_field_name("value") {
                                self.walk_nested(v);
                            }
                        } else {
                            self.walk_nested(child);
                        }
                        if !cur.goto_next_sibling() {
                            break;
                        }
                    }
                }
                self.depth -= 1;
            }
        }
    }

    fn command(&mut self, n: Node) {
        let mut part = RawPart::new(RawKind::Command, self.text(n).to_owned(), self.nest);
        let mut words: Vec<Word> = Vec::new();
        let mut last_end: Option<usize> = None;
        let mut stdin = None;
        let mut redirects = Vec::new();
        let mut nested: Vec<Node> = Vec::new();
        let mut cur = n.walk();
        if cur.goto_first_child() {
            loop {
                let child = cur.node();
                match (cur.field_name(), child.kind()) {
                    (Some("name") | Some("argument"), _) => {
                        let w = self.word(child);
                        // Nodes with no space between them are one shell word (`$"x"`).
                        if last_end == Some(child.start_byte()) {
                            if let Some(prev) = words.pop() {
                                let mut b = WordBuilder::default();
                                b.append(prev);
                                b.append(w);
                                words.push(b.finish());
                            }
                        } else {
                            words.push(w);
                        }
                        last_end = Some(child.end_byte());
                        nested.push(child);
                    }
                    (Some("redirect"), _) => {
                        self.redirect(child, &mut redirects, &mut stdin);
                    }
                    (_, "variable_assignment") => {
                        part.assigns.push(self.word(child));
                        if let Some(v) = child.child_by_field_name("value") {
                            nested.push(v);
                        }
                    }
                    (_, "comment") => {}
                    _ if child.is_named() => nested.push(child),
                    _ => {}
                }
                if !cur.goto_next_sibling() {
                    break;
                }
            }
        }
        part.words = words.into_iter().flat_map(brace_expand).collect();
        part.redirects = redirects;
        part.stdin_script = stdin;
        self.out.parts.push(part);
        for c in nested {
            self.walk_nested(c);
        }
    }

    fn bare_assignment(&mut self, n: Node) {
        let mut part = RawPart::new(RawKind::Assignment, self.text(n).to_owned(), self.nest);
        if n.kind() == "variable_assignment" {
            part.assigns.push(self.word(n));
        } else {
            let mut cur = n.walk();
            if cur.goto_first_child() {
                loop {
                    let child = cur.node();
                    if child.kind() == "variable_assignment" {
                        part.assigns.push(self.word(child));
                    }
                    if !cur.goto_next_sibling() {
                        break;
                    }
                }
            }
        }
        self.out.parts.push(part);
        self.walk_nested(n);
    }

    fn declaration(&mut self, n: Node) {
        let mut part = RawPart::new(RawKind::Assignment, self.text(n).to_owned(), self.nest);
        let mut cur = n.walk();
        if cur.goto_first_child() {
            loop {
                let child = cur.node();
                if child.kind() == "variable_assignment" {
                    part.assigns.push(self.word(child));
                } else if child.kind() != "comment" {
                    part.words.push(self.word(child));
                }
                if !cur.goto_next_sibling() {
                    break;
                }
            }
        }
        self.out.parts.push(part);
        self.walk_nested(n);
    }

    /// Converts a word-like node to a [`Word`].
    fn word(&self, n: Node) -> Word {
        let mut b = WordBuilder::default();
        self.word_into(n, &mut b, 0);
        b.finish()
    }

    fn word_into(&self, n: Node, b: &mut WordBuilder, depth: usize) {
        let text = self.text(n);
        if depth > 64 {
            b.push_dynamic(text, None);
            return;
        }
        match n.kind() {
            "word" | "command_name" if n.child_count() == 0 => b.push_unquoted_raw(text),
            "number"
            | "variable_name"
            | "file_descriptor"
            | "test_operator"
            | "regex"
            | "special_variable_name" => b.push_quoted(text),
            "extglob_pattern" => b.push_glob(text),
            "raw_string" => {
                let inner = text
                    .strip_prefix('\'')
                    .and_then(|t| t.strip_suffix('\''))
                    .unwrap_or(text);
                b.push_quoted(inner);
            }
            "ansi_c_string" => {
                let inner = text
                    .strip_prefix("$'")
                    .and_then(|t| t.strip_suffix('\''))
                    .and_then(decode_ansi_c);
                match inner {
                    Some(s) => b.push_quoted(&s),
                    None => b.push_dynamic(text, None),
                }
            }
            "string" => {
                let mut cur = n.walk();
                if cur.goto_first_child() {
                    loop {
                        let child = cur.node();
                        match child.kind() {
                            "\"" => {}
                            "string_content" => b.push_double_quoted_raw(self.text(child)),
                            _ if child.is_named() => self.word_into(child, b, depth + 1),
                            _ => b.push_quoted(self.text(child)),
                        }
                        if !cur.goto_next_sibling() {
                            break;
                        }
                    }
                }
            }
            "simple_expansion" => {
                let var = n
                    .named_child(0)
                    .filter(|c| c.kind() == "variable_name")
                    .map(|c| self.text(c));
                b.push_dynamic(text, var);
            }
            "expansion" => {
                // Only `${NAME}` with nothing else is a plain variable.
                let plain = n.named_child_count() == 1
                    && n.child_count() == 3
                    && n.named_child(0)
                        .is_some_and(|c| c.kind() == "variable_name");
                let var = if plain {
                    n.named_child(0).map(|c| self.text(c))
                } else {
                    None
                };
                b.push_dynamic(text, var);
            }
            "$" => {}
            "concatenation" | "command_name" | "translated_string" | "variable_assignment" => {
                let mut cur = n.walk();
                if cur.goto_first_child() {
                    loop {
                        let child = cur.node();
                        if n.kind() == "translated_string" && child.kind() == "$" {
                            // `$"..."` is a translated string: the text is the string.
                        } else if child.is_named() {
                            self.word_into(child, b, depth + 1);
                        } else {
                            b.push_unquoted_raw(self.text(child));
                        }
                        if !cur.goto_next_sibling() {
                            break;
                        }
                    }
                }
            }
            _ => b.push_dynamic(text, None),
        }
    }
}

/// Undoes the escapes the shell removes inside backquotes before parsing their body.
fn unescape_backquoted(s: &str) -> String {
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
                _ => out.push('\\'),
            }
        } else {
            out.push(c);
        }
    }
    out
}
