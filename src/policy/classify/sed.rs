//! A scanner for sed scripts that finds what makes sed more than a filter: the `e` command and
//! the `e` flag of `s` (run shell commands), `w`/`W` and the `w` flag (write files), `r`/`R`
//! (read files). Anything it does not understand is reported as such, so the caller can refuse
//! to call the script safe.

/// What a sed script does besides filtering text.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct SedScan {
    /// Shell commands run by `e command`.
    pub commands: Vec<String>,
    /// `e` with no command or `s///e`: runs text taken from the input as a command.
    pub runs_input: bool,
    pub writes: Vec<String>,
    pub reads: Vec<String>,
    /// Something in the script could not be read; the scan is incomplete.
    pub unparsed: bool,
}

/// Scans `script` (GNU sed syntax).
pub(crate) fn scan(script: &str) -> SedScan {
    let mut out = SedScan::default();
    let s: Vec<char> = script.chars().collect();
    let mut i = 0;
    loop {
        while i < s.len() && (s[i].is_whitespace() || s[i] == ';') {
            i += 1;
        }
        if i >= s.len() {
            break;
        }
        if s[i] == '#' {
            i = line_end(&s, i);
            continue;
        }
        let Some(next) = address(&s, i) else {
            out.unparsed = true;
            return out;
        };
        i = next;
        skip_blank(&s, &mut i);
        if i < s.len() && s[i] == ',' {
            i += 1;
            skip_blank(&s, &mut i);
            let Some(next) = address(&s, i) else {
                out.unparsed = true;
                return out;
            };
            i = next;
            skip_blank(&s, &mut i);
        }
        while i < s.len() && s[i] == '!' {
            i += 1;
            skip_blank(&s, &mut i);
        }
        let Some(&cmd) = s.get(i) else {
            out.unparsed = true;
            return out;
        };
        i += 1;
        match cmd {
            '{' | '}' | '=' | 'd' | 'D' | 'g' | 'G' | 'h' | 'H' | 'n' | 'N' | 'p' | 'P' | 'x'
            | 'z' | 'F' => {}
            'l' | 'L' | 'q' | 'Q' => {
                skip_blank(&s, &mut i);
                while i < s.len() && s[i].is_ascii_digit() {
                    i += 1;
                }
            }
            ':' | 'b' | 't' | 'T' | 'v' => {
                while i < s.len() && s[i] != ';' && s[i] != '\n' {
                    i += 1;
                }
            }
            'a' | 'i' | 'c' => i = text_end(&s, i),
            'r' | 'R' | 'w' | 'W' => {
                let (name, end) = filename(&s, i);
                i = end;
                if cmd == 'r' || cmd == 'R' {
                    out.reads.push(name);
                } else {
                    out.writes.push(name);
                }
            }
            'e' => {
                let (command, end) = filename(&s, i);
                i = end;
                if command.is_empty() {
                    out.runs_input = true;
                } else {
                    out.commands.push(command);
                }
            }
            's' => {
                let Some(&delim) = s.get(i) else {
                    out.unparsed = true;
                    return out;
                };
                if delim == '\n' || delim == '\\' {
                    out.unparsed = true;
                    return out;
                }
                i += 1;
                for _ in 0..2 {
                    let Some(end) = delimited(&s, i, delim) else {
                        out.unparsed = true;
                        return out;
                    };
                    i = end + 1;
                }
                // Flags.
                while let Some(&f) = s.get(i) {
                    match f {
                        'g' | 'p' | 'i' | 'I' | 'm' | 'M' | '0'..='9' => i += 1,
                        'e' => {
                            out.runs_input = true;
                            i += 1;
                        }
                        'w' => {
                            let (name, end) = filename(&s, i + 1);
                            out.writes.push(name);
                            i = end;
                            break;
                        }
                        ';' | '\n' | '}' | '#' | ' ' | '\t' => break,
                        _ => {
                            out.unparsed = true;
                            return out;
                        }
                    }
                }
            }
            'y' => {
                let Some(&delim) = s.get(i) else {
                    out.unparsed = true;
                    return out;
                };
                i += 1;
                for _ in 0..2 {
                    let Some(end) = delimited(&s, i, delim) else {
                        out.unparsed = true;
                        return out;
                    };
                    i = end + 1;
                }
            }
            _ => {
                out.unparsed = true;
                return out;
            }
        }
    }
    out
}

fn skip_blank(s: &[char], i: &mut usize) {
    while *i < s.len() && (s[*i] == ' ' || s[*i] == '\t') {
        *i += 1;
    }
}

fn line_end(s: &[char], mut i: usize) -> usize {
    while i < s.len() && s[i] != '\n' {
        i += 1;
    }
    i
}

/// Parses an optional address at `i`; returns the index after it.
fn address(s: &[char], mut i: usize) -> Option<usize> {
    match s.get(i) {
        Some(c) if c.is_ascii_digit() => {
            while i < s.len() && (s[i].is_ascii_digit() || s[i] == '~') {
                i += 1;
            }
        }
        Some('$') => i += 1,
        Some('+' | '~') => {
            i += 1;
            while i < s.len() && s[i].is_ascii_digit() {
                i += 1;
            }
        }
        Some('/') => {
            i = delimited(s, i + 1, '/')? + 1;
            while i < s.len() && (s[i] == 'I' || s[i] == 'M') {
                i += 1;
            }
        }
        Some('\\') => {
            let d = *s.get(i + 1)?;
            i = delimited(s, i + 2, d)? + 1;
            while i < s.len() && (s[i] == 'I' || s[i] == 'M') {
                i += 1;
            }
        }
        _ => {}
    }
    Some(i)
}

/// Finds the unescaped `delim` at or after `i`.
fn delimited(s: &[char], mut i: usize, delim: char) -> Option<usize> {
    while i < s.len() {
        if s[i] == '\\' {
            i += 2;
            continue;
        }
        if s[i] == delim {
            return Some(i);
        }
        i += 1;
    }
    None
}

/// Reads a file name or command: from after leading blanks to the end of the line.
fn filename(s: &[char], mut i: usize) -> (String, usize) {
    skip_blank(s, &mut i);
    let end = line_end(s, i);
    (s[i.min(end)..end].iter().collect(), end)
}

/// The end of `a`/`i`/`c` text, which may continue over lines ending in a backslash.
fn text_end(s: &[char], mut i: usize) -> usize {
    while i < s.len() {
        if s[i] == '\\' && s.get(i + 1) == Some(&'\n') {
            i += 2;
            continue;
        }
        if s[i] == '\n' {
            return i;
        }
        i += 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_exec_write_and_read() {
        assert_eq!(scan("1e rm x").commands, ["rm x"]);
        assert!(scan("s/a/b/e").runs_input);
        assert!(scan("e").runs_input);
        assert_eq!(scan("s/a/b/w out.txt").writes, ["out.txt"]);
        assert_eq!(scan("/x/w /etc/passwd").writes, ["/etc/passwd"]);
        assert_eq!(scan("1r /etc/shadow").reads, ["/etc/shadow"]);
        assert_eq!(scan("$!{N;s/\\n/ /}; p").writes.len(), 0);
    }

    #[test]
    fn plain_scripts_are_clean() {
        for s in [
            "p",
            "1,5p",
            "s/foo/bar/g",
            "/^#/d",
            "s|a|b|2",
            "y/abc/xyz/",
            "10q",
            "$=",
            "/x/,/y/{p}",
        ] {
            assert_eq!(scan(s), SedScan::default(), "{s}");
        }
    }
}
