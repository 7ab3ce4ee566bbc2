//! Rules: compiling, matching, shorthand strings and self-checking examples (DESIGN §5.3).
//!
//! Matching is asymmetric on purpose. A deny or ask rule fires if it matches *any* part of a
//! command (as written, or with wrappers such as `timeout` stripped) or *any* path. An allow
//! rule must cover *every* part of a command as written and every path, so `ls; rm -rf x` is
//! never covered by an allow for `ls`, and `sudo npm test` is not covered by `npm test`.

use std::collections::HashMap;

use globset::{Glob, GlobBuilder, GlobMatcher, GlobSet, GlobSetBuilder};

use crate::policy::classify::{ClassifyContext, CommandPart, classify};
use crate::protocol::{Layer, Rule, RuleAction, RuleMatch, ToolName};

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum RuleError {
    #[error("rule {id:?}: {msg}")]
    Invalid { id: String, msg: String },
    #[error(
        "shorthand {0:?} is not understood; write it like Bash(npm test *), Read(src/**) or Edit(*.md)"
    )]
    Shorthand(String),
}

fn invalid(id: &str, msg: impl Into<String>) -> RuleError {
    RuleError::Invalid {
        id: id.to_string(),
        msg: msg.into(),
    }
}

/// A rule ready for matching.
#[derive(Debug, Clone)]
pub struct CompiledRule {
    pub rule: Rule,
    pub layer: Layer,
    /// `None` means every tool (`*`).
    tool: Option<ToolName>,
    prefix: Option<Vec<String>>,
    glob: Option<(Glob, GlobMatcher)>,
    /// Browser tools: the origin glob.
    origin: Option<GlobMatcher>,
}

/// What a call looks like to the rules.
#[derive(Debug, Clone, Copy)]
pub struct Subject<'a> {
    pub tool: ToolName,
    /// Resolved root-relative paths (absolute when outside the root in `full-access`).
    pub paths: &'a [String],
    /// For `exec_cmd`: the simple commands of the line.
    pub parts: &'a [CommandPart],
    /// For `exec_cmd`: whether the line parsed cleanly (an allow never covers one that did not).
    pub parsed: bool,
    /// For browser tools: the origin of the page acted on (none when it has no origin).
    pub origin: Option<&'a str>,
}

impl CompiledRule {
    pub fn compile(rule: Rule, layer: Layer) -> Result<CompiledRule, RuleError> {
        let id = rule.id.trim();
        if id.is_empty() {
            return Err(invalid(
                &rule.id,
                "`id` is empty; give every rule a short unique id",
            ));
        }
        let tool = if rule.tool == "*" {
            None
        } else {
            Some(ToolName::from_alias(&rule.tool).ok_or_else(|| {
                invalid(id, format!("unknown tool {:?}; use a tool name such as exec_cmd or read_file, or \"*\"", rule.tool))
            })?)
        };
        let prefix = match &rule.matches.command_prefix {
            None => None,
            Some(p) => {
                if tool.is_some_and(|t| t != ToolName::ExecCmd) {
                    return Err(invalid(
                        id,
                        "`commandPrefix` only applies to exec_cmd rules",
                    ));
                }
                let words: Vec<String> = p.split_whitespace().map(str::to_string).collect();
                if words.is_empty() {
                    return Err(invalid(
                        id,
                        "`commandPrefix` is empty; leave it out to match every command",
                    ));
                }
                Some(words)
            }
        };
        let glob = match &rule.matches.path_glob {
            None => None,
            Some(g) => {
                let glob = compile_glob(g).map_err(|e| invalid(id, e))?;
                let matcher = glob.compile_matcher();
                Some((glob, matcher))
            }
        };
        let origin = match &rule.matches.origin {
            None => None,
            Some(o) => {
                if tool.is_some_and(|t| !t.is_browser()) {
                    return Err(invalid(
                        id,
                        "`origin` only applies to browser tools (navigate_to, click_element, …)",
                    ));
                }
                Some(compile_origin(o).map_err(|e| invalid(id, e))?)
            }
        };
        if rule.network && (rule.action != RuleAction::Allow || tool != Some(ToolName::ExecCmd)) {
            return Err(invalid(
                id,
                "\"network\": true only means something on an allow rule for exec_cmd",
            ));
        }
        let compiled = CompiledRule {
            rule,
            layer,
            tool,
            prefix,
            glob,
            origin,
        };
        compiled.check_examples()?;
        Ok(compiled)
    }

    pub fn id(&self) -> &str {
        &self.rule.id
    }

    pub fn action(&self) -> RuleAction {
        self.rule.action
    }

    fn applies_to(&self, tool: ToolName) -> bool {
        self.tool.is_none_or(|t| t == tool)
    }

    /// Deny/ask semantics: does the rule fire for any part or any path?
    pub fn matches_any(&self, s: &Subject<'_>) -> bool {
        if !self.applies_to(s.tool) {
            return false;
        }
        let prefix_ok = match &self.prefix {
            None => true,
            Some(p) => s
                .parts
                .iter()
                .any(|part| starts_with(&part.words, p) || starts_with(&part.effective, p)),
        };
        let glob_ok = match &self.glob {
            None => true,
            Some((_, g)) => s.paths.iter().any(|path| g.is_match(path)),
        };
        prefix_ok && glob_ok && self.origin_ok(s)
    }

    /// A rule with an origin glob matches only a call on a page whose origin it names.
    fn origin_ok(&self, s: &Subject<'_>) -> bool {
        match &self.origin {
            None => true,
            Some(g) => s.origin.is_some_and(|o| g.is_match(o)),
        }
    }

    /// Allow semantics: does the rule cover every part and every path?
    pub fn covers_all(&self, s: &Subject<'_>) -> bool {
        if !self.applies_to(s.tool) {
            return false;
        }
        if s.tool == ToolName::ExecCmd && !s.parsed {
            return false;
        }
        let prefix_ok = match &self.prefix {
            None => true,
            Some(p) => {
                !s.parts.is_empty() && s.parts.iter().all(|part| starts_with(&part.words, p))
            }
        };
        let glob_ok = match &self.glob {
            None => true,
            Some((_, g)) => !s.paths.is_empty() && s.paths.iter().all(|path| g.is_match(path)),
        };
        prefix_ok && glob_ok && self.origin_ok(s)
    }

    /// Check the rule against its own `examples`; a rule that disagrees with them is refused.
    fn check_examples(&self) -> Result<(), RuleError> {
        let Some(ex) = &self.rule.examples else {
            return Ok(());
        };
        let as_command = self.prefix.is_some() || self.tool == Some(ToolName::ExecCmd);
        let as_origin = self.origin.is_some();
        let root = std::path::Path::new("/nonexistent-ground-link-example-root");
        let check = |example: &str| -> bool {
            if as_origin {
                let subject = Subject {
                    tool: self.tool.unwrap_or(ToolName::ClickElement),
                    paths: &[],
                    parts: &[],
                    parsed: true,
                    origin: Some(example),
                };
                match self.rule.action {
                    RuleAction::Allow => self.covers_all(&subject),
                    RuleAction::Deny | RuleAction::Ask => self.matches_any(&subject),
                }
            } else if as_command {
                let analysis = classify(example, &ClassifyContext { root, home: None });
                let subject = Subject {
                    tool: ToolName::ExecCmd,
                    paths: &[],
                    parts: &analysis.parts,
                    parsed: analysis.parse_error.is_none(),
                    origin: None,
                };
                match self.rule.action {
                    RuleAction::Allow => self.covers_all(&subject),
                    RuleAction::Deny | RuleAction::Ask => self.matches_any(&subject),
                }
            } else {
                let paths = [example.trim_start_matches("./").to_string()];
                let subject = Subject {
                    tool: self.tool.unwrap_or(ToolName::ReadFile),
                    paths: &paths,
                    parts: &[],
                    parsed: true,
                    origin: None,
                };
                match self.rule.action {
                    RuleAction::Allow => self.covers_all(&subject),
                    RuleAction::Deny | RuleAction::Ask => self.matches_any(&subject),
                }
            }
        };
        for m in &ex.matches {
            if !check(m) {
                return Err(invalid(
                    self.id(),
                    format!("example {m:?} should match this rule but does not"),
                ));
            }
        }
        for m in &ex.not_match {
            if check(m) {
                return Err(invalid(
                    self.id(),
                    format!("example {m:?} should not match this rule but does"),
                ));
            }
        }
        Ok(())
    }
}

fn starts_with(words: &[String], prefix: &[String]) -> bool {
    words.len() >= prefix.len() && words.iter().zip(prefix).all(|(w, p)| w == p)
}

/// Rules of one action, indexed so that a decision with a thousand rules only looks closely at
/// the few that could match: path globs go into one `GlobSet` (one pass per path), command
/// prefixes into a map keyed by their first word. Order is kept: the first matching rule in
/// layer order (managed, global, project) is the one reported.
#[derive(Debug, Clone, Default)]
pub struct RuleIndex {
    rules: Vec<CompiledRule>,
    globs: GlobSet,
    glob_owner: Vec<usize>,
    /// Globs whose first path component is a literal folder name (`secrets/**`), by that name:
    /// a `GlobSet` that has to report *which* of many globs matched is slow, a map is not.
    by_dir: HashMap<String, Vec<usize>>,
    by_word: HashMap<String, Vec<usize>>,
    rest: Vec<usize>,
}

impl RuleIndex {
    pub fn new(rules: Vec<CompiledRule>) -> RuleIndex {
        let mut builder = GlobSetBuilder::new();
        let mut glob_owner = Vec::new();
        let mut by_word: HashMap<String, Vec<usize>> = HashMap::new();
        let mut by_dir: HashMap<String, Vec<usize>> = HashMap::new();
        let mut rest = Vec::new();
        for (i, r) in rules.iter().enumerate() {
            match (&r.prefix, &r.glob) {
                (Some(p), _) => by_word.entry(p[0].clone()).or_default().push(i),
                (None, Some((g, _))) => match literal_first_dir(g.glob()) {
                    Some(dir) => by_dir.entry(dir.to_string()).or_default().push(i),
                    None => {
                        builder.add(g.clone());
                        glob_owner.push(i);
                    }
                },
                (None, None) => rest.push(i),
            }
        }
        // Every glob already compiled on its own, so the set compiles too; if it somehow did
        // not, fall back to checking those rules one by one rather than dropping them.
        let globs = match builder.build() {
            Ok(set) => set,
            Err(_) => {
                rest.append(&mut glob_owner);
                rest.sort_unstable();
                GlobSet::empty()
            }
        };
        RuleIndex {
            rules,
            globs,
            glob_owner,
            by_dir,
            by_word,
            rest,
        }
    }

    pub fn rules(&self) -> &[CompiledRule] {
        &self.rules
    }

    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    fn candidates(&self, paths: &[String], words: &[&str]) -> Vec<usize> {
        let mut out = self.rest.clone();
        for p in paths {
            if !self.glob_owner.is_empty() {
                out.extend(
                    self.globs
                        .matches(p)
                        .into_iter()
                        .map(|i| self.glob_owner[i]),
                );
            }
            if let Some(ids) = p.split('/').next().and_then(|first| self.by_dir.get(first)) {
                out.extend_from_slice(ids);
            }
        }
        for w in words {
            if let Some(ids) = self.by_word.get(*w) {
                out.extend_from_slice(ids);
            }
        }
        out.sort_unstable();
        out.dedup();
        out
    }

    /// Deny/ask: the first rule that fires for any part or path.
    pub fn first_matching_any(&self, s: &Subject<'_>) -> Option<&CompiledRule> {
        let words: Vec<&str> = s
            .parts
            .iter()
            .flat_map(|p| [p.words.first(), p.effective.first()])
            .flatten()
            .map(String::as_str)
            .collect();
        self.candidates(s.paths, &words)
            .into_iter()
            .map(|i| &self.rules[i])
            .find(|r| r.matches_any(s))
    }

    /// Allow: the first rule that covers every part and path. Such a rule must cover the first
    /// part and the first path, so those alone pick the candidates.
    /// Whether an allow rule that covers the whole call grants it the network.
    pub fn grants_network(&self, s: &Subject<'_>) -> bool {
        self.rules.iter().any(|r| r.rule.network && r.covers_all(s))
    }

    pub fn first_covering_all(&self, s: &Subject<'_>) -> Option<&CompiledRule> {
        let words: Vec<&str> = s
            .parts
            .first()
            .and_then(|p| p.words.first())
            .map(String::as_str)
            .into_iter()
            .collect();
        let paths = s.paths.get(..1).unwrap_or(&[]);
        self.candidates(paths, &words)
            .into_iter()
            .map(|i| &self.rules[i])
            .find(|r| r.covers_all(s))
    }
}

/// An origin glob (`https://*.example.com`, `http://127.0.0.1:*`): a scheme, `://` and a host
/// part, no path; `*` never crosses a `/`, and hosts compare without regard to case.
fn compile_origin(g: &str) -> Result<GlobMatcher, String> {
    let Some((scheme, host)) = g.split_once("://") else {
        return Err(format!(
            "`origin` {g:?} needs a scheme, like https://example.com or https://*.example.com"
        ));
    };
    if scheme.is_empty() || host.is_empty() || host.contains('/') {
        return Err(format!(
            "`origin` {g:?} must be scheme://host[:port] with no path, like https://*.example.com"
        ));
    }
    GlobBuilder::new(g)
        .literal_separator(true)
        .case_insensitive(true)
        .build()
        .map(|glob| glob.compile_matcher())
        .map_err(|e| format!("`origin` {g:?} is not a valid glob: {e}"))
}

/// The first component of a glob when it is a plain folder name and more components follow.
fn literal_first_dir(glob: &str) -> Option<&str> {
    let (first, rest) = glob.split_once('/')?;
    let plain = !first.is_empty()
        && !rest.is_empty()
        && !first.contains(['*', '?', '[', ']', '{', '}', '\\']);
    plain.then_some(first)
}

/// Globs use `/` as a real separator (`*` stays within one folder). Like `.gitignore`, a glob
/// without any `/` matches a file name at any depth: `*.pem` also catches `keys/a.pem`.
pub fn compile_glob(glob: &str) -> Result<Glob, String> {
    let g = glob.trim().trim_start_matches("./");
    if g.is_empty() {
        return Err("`pathGlob` is empty; leave it out to match every path".to_string());
    }
    let pattern = if g.contains('/') {
        g.to_string()
    } else {
        format!("**/{g}")
    };
    GlobBuilder::new(&pattern)
        .literal_separator(true)
        .backslash_escape(true)
        .build()
        .map_err(|e| format!("`pathGlob` {glob:?} is not a valid glob: {e}"))
}

/// Expand a Claude Code-style rule string into rules. `Read(...)` covers every tool that reads
/// files (read_file, grep, glob, list_dir) and `Edit(...)` every tool that changes them
/// (edit_file, write_file), as in Claude Code, so a `deny` of `Read(.env)` cannot be sidestepped
/// with grep.
pub fn expand_shorthand(text: &str, action: RuleAction) -> Result<Vec<Rule>, RuleError> {
    let s = text.trim();
    let (name, arg) = match s.find('(') {
        Some(open) => {
            let close = s
                .strip_suffix(')')
                .ok_or_else(|| RuleError::Shorthand(text.to_string()))?;
            (&s[..open], Some(close[open + 1..].trim()))
        }
        None => (s, None),
    };
    let tools: Vec<ToolName> = match name {
        "Read" => vec![
            ToolName::ReadFile,
            ToolName::Grep,
            ToolName::Glob,
            ToolName::ListDir,
        ],
        "Edit" => vec![ToolName::EditFile, ToolName::WriteFile],
        other => vec![
            ToolName::from_alias(other).ok_or_else(|| RuleError::Shorthand(text.to_string()))?,
        ],
    };
    let arg = arg.filter(|a| !a.is_empty() && *a != "*" && *a != "**");
    let matches = match (tools[0], arg) {
        (_, None) => RuleMatch::default(),
        (ToolName::ExecCmd, Some(a)) => {
            let prefix = a
                .strip_suffix(":*")
                .or_else(|| a.strip_suffix(" *"))
                .unwrap_or(a)
                .trim();
            if prefix.is_empty() || prefix.contains('*') {
                return Err(RuleError::Shorthand(text.to_string()));
            }
            RuleMatch {
                command_prefix: Some(prefix.to_string()),
                ..RuleMatch::default()
            }
        }
        (_, Some(a)) => RuleMatch {
            path_glob: Some(a.to_string()),
            ..RuleMatch::default()
        },
    };
    Ok(tools
        .into_iter()
        .map(|t| Rule {
            id: if name == "Read" || name == "Edit" {
                format!("{s} [{t}]")
            } else {
                s.to_string()
            },
            action,
            tool: t.as_str().to_string(),
            matches: matches.clone(),
            description: Some(format!("shorthand {s}")),
            examples: None,
            network: false,
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn part(words: &[&str]) -> CommandPart {
        let analysis = classify(
            &words.join(" "),
            &ClassifyContext {
                root: std::path::Path::new("/r"),
                home: None,
            },
        );
        analysis.parts.into_iter().next().unwrap()
    }

    #[test]
    fn prefix_matches_whole_words_only() {
        let rule = Rule {
            id: "t".into(),
            action: RuleAction::Allow,
            tool: "exec_cmd".into(),
            matches: RuleMatch {
                command_prefix: Some("npm test".into()),
                path_glob: None,
                origin: None,
            },
            description: None,
            examples: None,
            network: false,
        };
        let r = CompiledRule::compile(rule, Layer::Global).unwrap();
        for (cmd, want) in [
            (&["npm", "test"][..], true),
            (&["npm", "test", "-x"], true),
            (&["npm", "tests"], false),
            (&["npm"], false),
        ] {
            let parts = [part(cmd)];
            let s = Subject {
                tool: ToolName::ExecCmd,
                paths: &[],
                parts: &parts,
                parsed: true,
                origin: None,
            };
            assert_eq!(r.covers_all(&s), want, "{cmd:?}");
        }
    }

    #[test]
    fn shorthand_forms() {
        let r = expand_shorthand("Bash(npm test *)", RuleAction::Allow).unwrap();
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].matches.command_prefix.as_deref(), Some("npm test"));
        let r = expand_shorthand("Bash(git log:*)", RuleAction::Allow).unwrap();
        assert_eq!(r[0].matches.command_prefix.as_deref(), Some("git log"));
        let r = expand_shorthand("Read(src/**)", RuleAction::Deny).unwrap();
        assert_eq!(r.len(), 4);
        assert!(
            r.iter()
                .all(|x| x.matches.path_glob.as_deref() == Some("src/**"))
        );
        let r = expand_shorthand("Edit(*.config.*)", RuleAction::Allow).unwrap();
        assert_eq!(
            r.iter().map(|x| x.tool.as_str()).collect::<Vec<_>>(),
            ["edit_file", "write_file"]
        );
        assert_eq!(
            expand_shorthand("Bash", RuleAction::Ask).unwrap()[0].matches,
            RuleMatch::default()
        );
        for bad in ["Bash(npm test", "Frobnicate(x)", "Bash(np*m)", "(x)"] {
            assert!(expand_shorthand(bad, RuleAction::Allow).is_err(), "{bad}");
        }
    }

    #[test]
    fn globs_without_slash_match_at_any_depth() {
        let g = compile_glob("*.pem").unwrap().compile_matcher();
        assert!(g.is_match("a.pem") && g.is_match("keys/a.pem"));
        let g = compile_glob("**/.env*").unwrap().compile_matcher();
        assert!(g.is_match(".env") && g.is_match("app/.env.local") && !g.is_match("env"));
        let g = compile_glob("src/*.rs").unwrap().compile_matcher();
        assert!(g.is_match("src/a.rs") && !g.is_match("src/x/a.rs"));
        assert!(compile_glob("a[").is_err());
    }

    /// The index must pick exactly the rule a plain scan in order would.
    #[test]
    fn index_agrees_with_a_linear_scan() {
        use proptest::prelude::*;
        let words = ["git", "npm", "rm", "cat", "ls"];
        let globs = [
            "src/**",
            "**/.env*",
            "*.pem",
            "docs/*.md",
            "src/*.rs",
            "keys/**/*.key",
            "{a,b}/**",
        ];
        let paths = [
            "src/a.rs",
            "src/x/y.rs",
            ".env",
            "app/.env.local",
            "keys/k/a.key",
            "docs/r.md",
            "a/z",
            "b.pem",
            "other",
        ];
        let rule_strategy = (
            0usize..3,
            prop::option::of(0..words.len()),
            prop::option::of(0..globs.len()),
            0usize..3,
        );
        let cfg = ProptestConfig {
            cases: crate::testing::proptest_cases(300),
            // Failing seeds are kept with the integration tests', not in a folder at the top.
            failure_persistence: Some(Box::new(
                proptest::test_runner::FileFailurePersistence::Direct(
                    "tests/proptest-regressions/rules.txt",
                ),
            )),
            ..ProptestConfig::default()
        };
        proptest!(cfg, |(specs in prop::collection::vec(rule_strategy, 0..12), p in 0..paths.len(), cmd in prop::collection::vec(0..words.len(), 1..3), tool in 0usize..3)| {
            let tools = ["*", "exec_cmd", "read_file"];
            let rules: Vec<CompiledRule> = specs
                .iter()
                .enumerate()
                .filter_map(|(i, (action, w, g, t))| {
                    let tool = if w.is_some() && *t == 2 { "exec_cmd" } else { tools[*t] };
                    let rule = Rule {
                        id: format!("r{i}"),
                        action: [RuleAction::Allow, RuleAction::Deny, RuleAction::Ask][*action],
                        tool: tool.into(),
                        matches: RuleMatch { command_prefix: w.map(|w| words[w].to_string()), path_glob: g.map(|g| globs[g].to_string()), origin: None },
                        description: None,
                        examples: None,
                        network: false,
                    };
                    CompiledRule::compile(rule, Layer::Global).ok()
                })
                .collect();
            let index = RuleIndex::new(rules.clone());
            let command = cmd.iter().map(|w| words[*w]).collect::<Vec<_>>().join(" x; ");
            let analysis = classify(&command, &ClassifyContext { root: std::path::Path::new("/r"), home: None });
            let path_list = [paths[p].to_string()];
            let subject = Subject {
                tool: [ToolName::ExecCmd, ToolName::ReadFile, ToolName::WriteFile][tool],
                paths: &path_list,
                parts: &analysis.parts,
                parsed: analysis.parse_error.is_none(),
                origin: None,
            };
            let any = rules.iter().find(|r| r.matches_any(&subject)).map(|r| r.id().to_string());
            let all = rules.iter().find(|r| r.covers_all(&subject)).map(|r| r.id().to_string());
            prop_assert_eq!(index.first_matching_any(&subject).map(|r| r.id().to_string()), any);
            prop_assert_eq!(index.first_covering_all(&subject).map(|r| r.id().to_string()), all);
        });
    }
}
