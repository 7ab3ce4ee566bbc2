//! Turns a tree-sitter-bash syntax tree into the flat list of simple commands the classifier
//! judges. Every simple command is found wherever it hides: in lists and pipelines, subshells,
//! brace groups, `if`/`for`/`while`/`case` bodies, function bodies, `$(..)`, backticks,
//! `<(..)`/`>(..)`, here-strings and unquoted here-documents. Redirections are attached to the
//! commands whose output they capture.

use std::sync::OnceLock;

use tree_sitter::{Language, Node, Tree, TreeCursor};

use super::words::{Word, WordBuilder, brace_expand, decode_ansi_c};

/// Deeper trees than this are not walked (the command is then reported as unparseable).
const MAX_TREE_DEPTH: usize = 150;

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

/// The node kinds the walker looks at, resolved from the grammar's symbol ids once (comparing
/// ids is much cheaper than comparing kind names).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum K {
    Command,
    Redirected,
    Assignment,
    Assignments,
    Declaration,
    Unset,
    Function,
    Pipeline,
    CommandSub,
    ProcessSub,
    Skip,
    HeredocBody,
    For,
    FileRedirect,
    HerestringRedirect,
    HeredocRedirect,
    Word,
    CommandName,
    Literal,
    Extglob,
    RawString,
    AnsiC,
    Str,
    StringContent,
    SimpleExpansion,
    Expansion,
    Concatenation,
    Translated,
    VariableName,
    FileDescriptor,
    Dollar,
    Amp,
    Quote,
    Other,
}

fn kind_of(name: &str, named: bool) -> K {
    if !named {
        return match name {
            "$" => K::Dollar,
            "&" => K::Amp,
            "\"" => K::Quote,
            _ => K::Other,
        };
    }
    match name {
        "command" => K::Command,
        "redirected_statement" => K::Redirected,
        "variable_assignment" => K::Assignment,
        "variable_assignments" => K::Assignments,
        "declaration_command" => K::Declaration,
        "unset_command" => K::Unset,
        "function_definition" => K::Function,
        "pipeline" => K::Pipeline,
        "command_substitution" => K::CommandSub,
        "process_substitution" => K::ProcessSub,
        "comment" | "heredoc_start" | "heredoc_end" | "heredoc_content" => K::Skip,
        "heredoc_body" => K::HeredocBody,
        "for_statement" => K::For,
        "file_redirect" => K::FileRedirect,
        "herestring_redirect" => K::HerestringRedirect,
        "heredoc_redirect" => K::HeredocRedirect,
        "word" => K::Word,
        "command_name" => K::CommandName,
        "number" | "test_operator" | "regex" | "special_variable_name" => K::Literal,
        "variable_name" => K::VariableName,
        "file_descriptor" => K::FileDescriptor,
        "extglob_pattern" => K::Extglob,
        "raw_string" => K::RawString,
        "ansi_c_string" => K::AnsiC,
        "string" => K::Str,
        "string_content" => K::StringContent,
        "simple_expansion" => K::SimpleExpansion,
        "expansion" => K::Expansion,
        "concatenation" => K::Concatenation,
        "translated_string" => K::Translated,
        _ => K::Other,
    }
}

fn kinds() -> &'static [K] {
    static KINDS: OnceLock<Vec<K>> = OnceLock::new();
    KINDS.get_or_init(|| {
        let lang: Language = tree_sitter_bash::LANGUAGE.into();
        (0..lang.node_kind_count())
            .map(|id| {
                let id = u16::try_from(id).unwrap_or(u16::MAX);
                kind_of(
                    lang.node_kind_for_id(id).unwrap_or(""),
                    lang.node_kind_is_named(id),
                )
            })
            .collect()
    })
}

fn kind(n: Node) -> K {
    kinds()
        .get(usize::from(n.kind_id()))
        .copied()
        .unwrap_or(K::Other)
}

/// Walks `tree` (parsed from `src`) and collects its simple commands.
pub(crate) fn collect(tree: &Tree, src: &str) -> Syntax {
    let root = tree.root_node();
    let mut w = Walker {
        src,
        out: Syntax::default(),
        depth: 0,
        nest: 0,
        cursors: Vec::new(),
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

struct Walker<'s, 't> {
    src: &'s str,
    out: Syntax,
    depth: usize,
    nest: u32,
    /// Cursors to reuse: creating one allocates.
    cursors: Vec<TreeCursor<'t>>,
}

impl<'s, 't> Walker<'s, 't> {
    fn text(&self, n: Node) -> &'s str {
        self.src.get(n.start_byte()..n.end_byte()).unwrap_or("")
    }

    /// Whether the source between `end` and `start` is empty or only `\<newline>` pairs.
    fn joined(&self, end: usize, start: usize) -> bool {
        let gap = self.src.as_bytes().get(end..start).unwrap_or(b" ");
        gap.len() % 2 == 0 && gap.chunks(2).all(|c| c == b"\\\n")
    }

    fn cursor(&mut self, n: Node<'t>) -> TreeCursor<'t> {
        match self.cursors.pop() {
            Some(mut c) => {
                c.reset(n);
                c
            }
            None => n.walk(),
        }
    }

    fn done(&mut self, c: TreeCursor<'t>) {
        self.cursors.push(c);
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

    fn walk(&mut self, n: Node<'t>) {
        if self.too_deep() {
            return;
        }
        self.depth += 1;
        match kind(n) {
            K::Command => self.command(n),
            K::Redirected => self.redirected(n),
            K::Assignment | K::Assignments => self.bare_assignment(n),
            K::Declaration | K::Unset => self.declaration(n),
            K::Function => self.function(n),
            K::Pipeline => self.pipeline(n),
            K::CommandSub => self.substitution(n),
            K::ProcessSub => {
                self.nest += 1;
                self.container(n);
                self.nest -= 1;
            }
            K::For => {
                self.for_values(n);
                self.container(n);
            }
            K::Skip => {}
            _ => self.container(n),
        }
        self.depth -= 1;
    }

    /// Walks the children of a node that only groups statements, noting `&` (background).
    fn container(&mut self, n: Node<'t>) {
        let mut cur = self.cursor(n);
        if cur.goto_first_child() {
            let mut last_start = self.out.parts.len();
            loop {
                let child = cur.node();
                if child.is_named() {
                    last_start = self.out.parts.len();
                    self.walk(child);
                } else if kind(child) == K::Amp {
                    for p in &mut self.out.parts[last_start..] {
                        p.background = true;
                    }
                }
                if !cur.goto_next_sibling() {
                    break;
                }
            }
        }
        self.done(cur);
    }

    /// `for d in a b c`: records `d=a`, `d=b`, `d=c` for variable tracking.
    fn for_values(&mut self, n: Node<'t>) {
        let Some(var) = n.child_by_field_name("variable") else {
            return;
        };
        let name = self.text(var);
        let mut bind = RawPart::new(RawKind::Bind, String::new(), self.nest);
        let mut cur = self.cursor(n);
        if cur.goto_first_child() {
            loop {
                if cur.field_name() == Some("value") {
                    let w = self.word(cur.node());
                    for w in brace_expand(w) {
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
        self.done(cur);
        if !bind.assigns.is_empty() {
            self.out.parts.push(bind);
        }
    }

    fn substitution(&mut self, n: Node<'t>) {
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
        // `$(< file)` reads the file with no command at all.
        let mut redirects = Vec::new();
        let mut cur = self.cursor(n);
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
        self.done(cur);
        if !redirects.is_empty() {
            let mut p = RawPart::new(RawKind::RedirectOnly, text.to_owned(), self.nest);
            p.redirects = redirects;
            self.out.parts.push(p);
        }
        self.container(n);
        self.nest -= 1;
    }

    fn pipeline(&mut self, n: Node<'t>) {
        let start = self.out.parts.len();
        let mut index = 0usize;
        let mut echoed: Option<String> = None;
        let mut cur = self.cursor(n);
        if cur.goto_first_child() {
            loop {
                let child = cur.node();
                if !child.is_named() && index == 0 {
                    // `cat <<EOF | sh`: the pipeline starts inside the here-document's
                    // redirection, so its first command is already reading a pipe.
                    index = 1;
                } else if child.is_named() && kind(child) != K::Skip {
                    let from = self.out.parts.len();
                    self.walk(child);
                    let nest = self.nest;
                    if index > 0 {
                        for p in &mut self.out.parts[from..] {
                            if p.nest == nest {
                                p.piped_stdin = true;
                                if p.stdin_script.is_none() {
                                    p.stdin_script.clone_from(&echoed);
                                }
                            }
                        }
                    }
                    echoed = self.out.parts[from..]
                        .iter()
                        .find(|p| p.nest == nest)
                        .and_then(echoed_text);
                    index += 1;
                }
                if !cur.goto_next_sibling() {
                    break;
                }
            }
        }
        self.done(cur);
        for p in &mut self.out.parts[start..] {
            p.in_pipeline = true;
        }
    }

    fn function(&mut self, n: Node<'t>) {
        let name = match n.child_by_field_name("name") {
            Some(x) => self.word(x).text,
            None => String::new(),
        };
        let start = self.out.parts.len();
        if let Some(body) = n.child_by_field_name("body") {
            self.walk(body);
        }
        let mut redirects = Vec::new();
        let mut cur = self.cursor(n);
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
        self.done(cur);
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
    fn redirected(&mut self, n: Node<'t>) {
        let start = self.out.parts.len();
        let body = n.child_by_field_name("body");
        if let Some(b) = body {
            self.walk(b);
        }
        let mut redirects = Vec::new();
        let mut stdin: Option<String> = None;
        let mut later: Vec<Node<'t>> = Vec::new();
        let mut cur = self.cursor(n);
        if cur.goto_first_child() {
            loop {
                let child = cur.node();
                if cur.field_name() != Some("body") {
                    match kind(child) {
                        K::FileRedirect | K::HerestringRedirect => {
                            self.redirect(child, &mut redirects, &mut stdin)
                        }
                        K::HeredocRedirect => {
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
        self.done(cur);
        let body_is_command = body.is_some_and(|b| kind(b) == K::Command);
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

    fn heredoc(
        &mut self,
        n: Node<'t>,
        redirects: &mut Vec<Redirect>,
        stdin: &mut Option<String>,
        later: &mut Vec<Node<'t>>,
    ) {
        let mut cur = self.cursor(n);
        if cur.goto_first_child() {
            loop {
                let child = cur.node();
                match kind(child) {
                    K::FileRedirect | K::HerestringRedirect => {
                        self.redirect(child, redirects, stdin)
                    }
                    K::HeredocBody => {
                        *stdin = Some(self.text(child).to_owned());
                        later.push(child);
                    }
                    K::Skip => {}
                    _ if child.is_named() => later.push(child),
                    _ => {}
                }
                if !cur.goto_next_sibling() {
                    break;
                }
            }
        }
        self.done(cur);
    }

    /// Reads one `file_redirect` / `herestring_redirect` node.
    fn redirect(&mut self, n: Node<'t>, out: &mut Vec<Redirect>, stdin: &mut Option<String>) {
        let mut cur = self.cursor(n);
        if kind(n) == K::HerestringRedirect {
            let mut word: Option<Word> = None;
            if cur.goto_first_child() {
                loop {
                    let child = cur.node();
                    if child.is_named() && kind(child) != K::FileDescriptor {
                        word = Some(self.word(child));
                        self.walk_nested(child);
                    }
                    if !cur.goto_next_sibling() {
                        break;
                    }
                }
            }
            self.done(cur);
            if let Some(w) = word {
                *stdin = Some(w.text);
            }
            return;
        }
        let mut op = "";
        let mut target: Option<Node<'t>> = None;
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
        self.done(cur);
        let target_word = match target {
            Some(t) => {
                let w = self.word(t);
                self.walk_nested(t);
                w
            }
            None => Word::default(),
        };
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
    fn walk_nested(&mut self, n: Node<'t>) {
        match kind(n) {
            K::CommandSub | K::ProcessSub => self.walk(n),
            _ => {
                if n.child_count() == 0 || self.too_deep() {
                    return;
                }
                self.depth += 1;
                let mut cur = self.cursor(n);
                if cur.goto_first_child() {
                    loop {
                        self.walk_nested(cur.node());
                        if !cur.goto_next_sibling() {
                            break;
                        }
                    }
                }
                self.done(cur);
                self.depth -= 1;
            }
        }
    }

    fn command(&mut self, n: Node<'t>) {
        let mut part = RawPart::new(RawKind::Command, self.text(n).to_owned(), self.nest);
        let mut words: Vec<Word> = Vec::new();
        let mut last_end: Option<usize> = None;
        let mut stdin = None;
        let mut redirects = Vec::new();
        let mut nested: Vec<Node<'t>> = Vec::new();
        let mut cur = self.cursor(n);
        if cur.goto_first_child() {
            loop {
                let child = cur.node();
                match (cur.field_name(), kind(child)) {
                    (Some("name") | Some("argument"), _) => {
                        let w = self.word(child);
                        // Nodes with no space between them are one shell word (`$"x"`); so
                        // are nodes separated only by line continuations (`r\<newline>m` is
                        // `rm` to bash, two words to tree-sitter).
                        if last_end.is_some_and(|e| self.joined(e, child.start_byte())) {
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
                        if child.child_count() > 0 {
                            nested.push(child);
                        }
                    }
                    (Some("redirect"), _) => {
                        self.redirect(child, &mut redirects, &mut stdin);
                    }
                    (_, K::Assignment) => {
                        let w = self.word(child);
                        part.assigns.push(w);
                        // Both sides: `a[$(cmd)]=1` runs cmd too.
                        nested.push(child);
                    }
                    (_, K::Skip) => {}
                    _ if child.is_named() => nested.push(child),
                    _ => {}
                }
                if !cur.goto_next_sibling() {
                    break;
                }
            }
        }
        self.done(cur);
        part.words = if words.iter().any(|w| w.brace) {
            words.into_iter().flat_map(brace_expand).collect()
        } else {
            words
        };
        part.redirects = redirects;
        part.stdin_script = stdin;
        self.out.parts.push(part);
        for c in nested {
            self.walk_nested(c);
        }
    }

    fn bare_assignment(&mut self, n: Node<'t>) {
        let mut part = RawPart::new(RawKind::Assignment, self.text(n).to_owned(), self.nest);
        if kind(n) == K::Assignment {
            let w = self.word(n);
            part.assigns.push(w);
        } else {
            let mut cur = self.cursor(n);
            if cur.goto_first_child() {
                loop {
                    let child = cur.node();
                    if kind(child) == K::Assignment {
                        let w = self.word(child);
                        part.assigns.push(w);
                    }
                    if !cur.goto_next_sibling() {
                        break;
                    }
                }
            }
            self.done(cur);
        }
        self.out.parts.push(part);
        self.walk_nested(n);
    }

    fn declaration(&mut self, n: Node<'t>) {
        let mut part = RawPart::new(RawKind::Assignment, self.text(n).to_owned(), self.nest);
        let mut cur = self.cursor(n);
        if cur.goto_first_child() {
            loop {
                let child = cur.node();
                match kind(child) {
                    K::Assignment => {
                        let w = self.word(child);
                        part.assigns.push(w);
                    }
                    K::Skip => {}
                    _ => {
                        let w = self.word(child);
                        part.words.push(w);
                    }
                }
                if !cur.goto_next_sibling() {
                    break;
                }
            }
        }
        self.done(cur);
        self.out.parts.push(part);
        self.walk_nested(n);
    }

    /// Converts a word-like node to a [`Word`].
    fn word(&mut self, n: Node<'t>) -> Word {
        let mut b = WordBuilder::default();
        self.word_into(n, &mut b, 0);
        b.finish()
    }

    fn word_into(&mut self, n: Node<'t>, b: &mut WordBuilder, depth: usize) {
        let text = self.text(n);
        if depth > 64 {
            b.push_dynamic(text, None);
            return;
        }
        match kind(n) {
            K::Word | K::CommandName if n.child_count() == 0 => b.push_unquoted_raw(text),
            K::Literal | K::VariableName | K::FileDescriptor => b.push_quoted(text),
            K::Extglob => b.push_glob(text),
            K::RawString => {
                let inner = text
                    .strip_prefix('\'')
                    .and_then(|t| t.strip_suffix('\''))
                    .unwrap_or(text);
                b.push_quoted(inner);
            }
            K::AnsiC => {
                let inner = text
                    .strip_prefix("$'")
                    .and_then(|t| t.strip_suffix('\''))
                    .and_then(decode_ansi_c);
                match inner {
                    Some(s) => b.push_quoted(&s),
                    None => b.push_dynamic(text, None),
                }
            }
            K::Str => {
                let mut cur = self.cursor(n);
                if cur.goto_first_child() {
                    loop {
                        let child = cur.node();
                        match kind(child) {
                            K::Quote => {}
                            K::StringContent => b.push_double_quoted_raw(self.text(child)),
                            _ if child.is_named() => self.word_into(child, b, depth + 1),
                            _ => b.push_quoted(self.text(child)),
                        }
                        if !cur.goto_next_sibling() {
                            break;
                        }
                    }
                }
                self.done(cur);
            }
            K::SimpleExpansion => {
                let var = n
                    .named_child(0)
                    .filter(|c| kind(*c) == K::VariableName)
                    .map(|c| self.text(c));
                b.push_dynamic(text, var);
            }
            K::Expansion => {
                // Only `${NAME}` with nothing else is a plain variable.
                let plain = n.named_child_count() == 1
                    && n.child_count() == 3
                    && n.named_child(0).is_some_and(|c| kind(c) == K::VariableName);
                let var = if plain {
                    n.named_child(0).map(|c| self.text(c))
                } else {
                    None
                };
                b.push_dynamic(text, var);
            }
            K::Dollar => {}
            K::Concatenation | K::CommandName | K::Translated | K::Assignment => {
                let translated = kind(n) == K::Translated;
                let mut cur = self.cursor(n);
                if cur.goto_first_child() {
                    loop {
                        let child = cur.node();
                        if translated && kind(child) == K::Dollar {
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
                self.done(cur);
            }
            _ => b.push_dynamic(text, None),
        }
    }
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
