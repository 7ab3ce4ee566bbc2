//! Shell words as the classifier sees them: quotes removed, escapes undone, and every part whose
//! value is only known when the shell runs (`$X`, `$(..)`, `` `..` ``) kept as its source text
//! and flagged, so later checks can treat it as "could be anything".

/// How many words one brace expansion may produce before the word is treated as unknown.
const MAX_BRACE_WORDS: usize = 64;

/// One shell word after quote removal.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Word {
    /// The text with quotes removed; dynamic parts appear as their source text (`$HOME`).
    pub text: String,
    /// Some part of the word is only known at run time.
    pub dynamic: bool,
    /// An unquoted glob character (`*`, `?`, `[`) appears, so the shell may expand it.
    pub glob: bool,
    /// An unquoted `{` appears, so brace expansion may apply.
    pub brace: bool,
    /// The word starts with a plain `$NAME` or `${NAME}` expansion: the name and the length of
    /// its source text (so `$HOME/x` can be read as "home, then /x").
    pub lead_var: Option<(String, usize)>,
    /// How many dynamic segments the word has.
    pub dyn_segments: u16,
}

impl Word {
    /// A word with no quoting and no expansions, as produced inside the classifier.
    pub fn literal(text: &str) -> Word {
        let mut b = WordBuilder::default();
        b.push_unquoted_raw(text);
        b.finish()
    }

    /// The word looks like an option (`-x`, `--long`); a lone `-` is an operand.
    pub fn is_option(&self) -> bool {
        self.text.len() > 1 && self.text.starts_with('-')
    }

    /// The literal part after a leading plain variable, when there is exactly one dynamic
    /// segment and it is that variable.
    pub fn after_lead_var(&self) -> Option<(&str, &str)> {
        let (name, len) = self.lead_var.as_ref()?;
        if self.dyn_segments != 1 {
            return None;
        }
        self.text.get(*len..).map(|rest| (name.as_str(), rest))
    }
}

/// Builds a [`Word`] segment by segment.
#[derive(Debug, Default)]
pub(crate) struct WordBuilder {
    word: Word,
}

impl WordBuilder {
    /// Appends the raw text of an unquoted word: backslash escapes are undone and unescaped
    /// glob and brace characters are noted. Runs of ordinary text are copied whole (every word
    /// of every command goes through here).
    pub fn push_unquoted_raw(&mut self, raw: &str) {
        let word = &mut self.word;
        word.text.reserve(raw.len());
        let mut rest = raw;
        // The special characters are ASCII, so their byte positions are character boundaries.
        while let Some(i) = rest
            .bytes()
            .position(|b| matches!(b, b'\\' | b'*' | b'?' | b'[' | b'{'))
        {
            word.text.push_str(&rest[..i]);
            let special = rest.as_bytes()[i];
            rest = &rest[i + 1..];
            match special {
                b'\\' => {
                    let mut chars = rest.chars();
                    match chars.next() {
                        Some('\n') | None => {}
                        Some(n) => word.text.push(n),
                    }
                    rest = chars.as_str();
                }
                b'{' => {
                    word.brace = true;
                    word.text.push('{');
                }
                glob => {
                    word.glob = true;
                    word.text.push(char::from(glob));
                }
            }
        }
        word.text.push_str(rest);
    }

    /// Appends text that was quoted: taken literally.
    pub fn push_quoted(&mut self, text: &str) {
        self.word.text.push_str(text);
    }

    /// Appends the content of a double-quoted string segment, undoing the escapes that are
    /// special inside double quotes.
    pub fn push_double_quoted_raw(&mut self, raw: &str) {
        let mut chars = raw.chars().peekable();
        while let Some(c) = chars.next() {
            if c == '\\' {
                match chars.peek() {
                    Some('"' | '\\' | '$' | '`') => {
                        if let Some(n) = chars.next() {
                            self.word.text.push(n);
                        }
                    }
                    Some('\n') => {
                        chars.next();
                    }
                    _ => self.word.text.push('\\'),
                }
            } else {
                self.word.text.push(c);
            }
        }
    }

    /// Appends a part whose value is only known at run time; `var` names a plain `$NAME`.
    pub fn push_dynamic(&mut self, source: &str, var: Option<&str>) {
        if self.word.text.is_empty() && self.word.dyn_segments == 0 {
            if let Some(name) = var {
                self.word.lead_var = Some((name.to_owned(), source.len()));
            }
        }
        self.word.dynamic = true;
        self.word.dyn_segments = self.word.dyn_segments.saturating_add(1);
        self.word.text.push_str(source);
    }

    pub fn finish(self) -> Word {
        self.word
    }
}

/// Decodes the body of an ANSI-C quoted string (`$'...'`, without the `$'` and `'`).
/// Returns `None` when an escape cannot be decoded; the caller then treats the word as unknown.
pub(crate) fn decode_ansi_c(body: &str) -> Option<String> {
    let mut out = String::with_capacity(body.len());
    let bytes: Vec<char> = body.chars().collect();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        i += 1;
        if c != '\\' {
            out.push(c);
            continue;
        }
        let e = *bytes.get(i)?;
        i += 1;
        match e {
            'a' => out.push('\u{7}'),
            'b' => out.push('\u{8}'),
            'e' | 'E' => out.push('\u{1b}'),
            'f' => out.push('\u{c}'),
            'n' => out.push('\n'),
            'r' => out.push('\r'),
            't' => out.push('\t'),
            'v' => out.push('\u{b}'),
            '\\' | '\'' | '"' | '?' => out.push(e),
            'c' => {
                let ctl = *bytes.get(i)?;
                i += 1;
                out.push(char::from((ctl as u32 & 0x1f) as u8));
            }
            '0'..='7' => {
                let mut v = e.to_digit(8)?;
                let mut n = 1;
                while n < 3 {
                    match bytes.get(i).and_then(|d| d.to_digit(8)) {
                        Some(d) => {
                            v = v * 8 + d;
                            i += 1;
                            n += 1;
                        }
                        None => break,
                    }
                }
                out.push(char::from_u32(v & 0xff)?);
            }
            'x' | 'u' | 'U' => {
                let max = match e {
                    'x' => 2,
                    'u' => 4,
                    _ => 8,
                };
                let mut v: u32 = 0;
                let mut n = 0;
                while n < max {
                    match bytes.get(i).and_then(|d| d.to_digit(16)) {
                        Some(d) => {
                            v = v.checked_mul(16)?.checked_add(d)?;
                            i += 1;
                            n += 1;
                        }
                        None => break,
                    }
                }
                if n == 0 {
                    return None;
                }
                out.push(char::from_u32(v)?);
            }
            other => {
                out.push('\\');
                out.push(other);
            }
        }
    }
    Some(out)
}

/// Applies brace expansion (`{a,b}`) to a word. Sequence expressions (`{1..9}`) and anything
/// too large or unbalanced leave the word as one word marked dynamic.
pub(crate) fn brace_expand(word: Word) -> Vec<Word> {
    if !word.brace || word.dynamic {
        return vec![word];
    }
    if has_sequence_braces(&word.text) {
        let mut w = word;
        w.dynamic = true;
        w.dyn_segments = w.dyn_segments.saturating_add(1);
        return vec![w];
    }
    let mut out = Vec::new();
    if !expand_into(&word.text, &mut out) {
        let mut w = word;
        w.dynamic = true;
        w.dyn_segments = w.dyn_segments.saturating_add(1);
        return vec![w];
    }
    if out.len() == 1 {
        return vec![word];
    }
    out.iter()
        .map(|t| {
            let mut w = Word::literal(t);
            w.glob |= word.glob;
            w.brace = false;
            w
        })
        .collect()
}

/// `{a..b}` with no comma inside: a sequence we do not expand.
fn has_sequence_braces(s: &str) -> bool {
    let mut start = None;
    for (i, c) in s.char_indices() {
        match c {
            '{' => start = Some(i),
            '}' => {
                if let Some(st) = start.take() {
                    let inner = &s[st + 1..i];
                    if inner.contains("..") && !inner.contains(',') {
                        return true;
                    }
                }
            }
            _ => {}
        }
    }
    false
}

/// Expands the first expandable brace group of `s` recursively. Returns false on overflow.
fn expand_into(s: &str, out: &mut Vec<String>) -> bool {
    let Some((open, close, commas)) = find_group(s) else {
        if out.len() >= MAX_BRACE_WORDS {
            return false;
        }
        out.push(s.to_owned());
        return true;
    };
    let prefix = &s[..open];
    let suffix = &s[close + 1..];
    let mut last = open + 1;
    let mut pieces: Vec<&str> = Vec::with_capacity(commas.len() + 1);
    for &c in &commas {
        pieces.push(&s[last..c]);
        last = c + 1;
    }
    pieces.push(&s[last..close]);
    for p in pieces {
        let mut next = String::with_capacity(prefix.len() + p.len() + suffix.len());
        next.push_str(prefix);
        next.push_str(p);
        next.push_str(suffix);
        if !expand_into(&next, out) {
            return false;
        }
    }
    true
}

/// Finds the first `{...}` group with a top-level comma: (open, close, comma positions).
fn find_group(s: &str) -> Option<(usize, usize, Vec<usize>)> {
    let bytes = s.as_bytes();
    let mut from = 0;
    while let Some(rel) = s.get(from..)?.find('{') {
        let open = from + rel;
        let mut depth = 0usize;
        let mut commas = Vec::new();
        let mut close = None;
        for (i, &b) in bytes.iter().enumerate().skip(open) {
            match b {
                b'{' => depth += 1,
                b'}' => {
                    depth -= 1;
                    if depth == 0 {
                        close = Some(i);
                        break;
                    }
                }
                b',' if depth == 1 => commas.push(i),
                _ => {}
            }
        }
        match close {
            Some(c) if !commas.is_empty() => return Some((open, c, commas)),
            _ => from = open + 1,
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ansi_c_decodes_hex_octal_and_unicode() {
        let cases = [
            (r"\x72m", "rm"),
            (r"\162m", "rm"),
            (r"\u0072m", "rm"),
            (r"a\tb", "a\tb"),
            (r"\'", "'"),
        ];
        for (input, want) in cases {
            assert_eq!(decode_ansi_c(input).as_deref(), Some(want), "{input}");
        }
    }

    #[test]
    fn brace_expansion_splits_words() {
        let got: Vec<String> = brace_expand(Word::literal("{rm,-rf,/}"))
            .into_iter()
            .map(|w| w.text)
            .collect();
        assert_eq!(got, ["rm", "-rf", "/"]);
        let got: Vec<String> = brace_expand(Word::literal("a{b,c{d,e}}f"))
            .into_iter()
            .map(|w| w.text)
            .collect();
        assert_eq!(got, ["abf", "acdf", "acef"]);
        let seq = brace_expand(Word::literal("{1..3}"));
        assert_eq!(seq.len(), 1);
        assert!(seq[0].dynamic);
        let none = brace_expand(Word::literal("{}"));
        assert_eq!(none[0].text, "{}");
        assert!(!none[0].dynamic);
    }
}
