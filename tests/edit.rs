//! Suite: editing rule files from the settings window (`policy::edit`). Every edit is
//! validated with the engine's own parser before it is written, takes effect at once, keeps
//! the rest of the file, keeps project trust as it was, and never writes the managed file or
//! through a symlink out of the root.

use ground_link::policy::edit::{self, EditError, RuleEdit, ShorthandEntry};
use ground_link::protocol::{Hook, Hooks, Layer, OnFailure, Rule, RuleAction, RuleMatch, Verdict};

use crate::util::{Fixture, check};

fn rule(
    id: &str,
    action: RuleAction,
    tool: &str,
    prefix: Option<&str>,
    glob: Option<&str>,
) -> Rule {
    Rule {
        id: id.to_string(),
        action,
        tool: tool.to_string(),
        matches: RuleMatch {
            command_prefix: prefix.map(str::to_string),
            path_glob: glob.map(str::to_string),
            origin: None,
        },
        description: None,
        examples: None,
        network: false,
    }
}

fn deny_curl() -> Rule {
    rule("no-curl", RuleAction::Deny, "exec_cmd", Some("curl"), None)
}

fn allow_npm_test() -> Rule {
    rule(
        "npm-test",
        RuleAction::Allow,
        "exec_cmd",
        Some("npm test"),
        None,
    )
}

fn exec(cmd: &str) -> String {
    serde_json::json!({"name": "exec_cmd", "args": {"command": cmd}}).to_string()
}

const START: &str = r#"{"version":1,"rules":[{"id":"no-curl","action":"deny","tool":"exec_cmd","match":{"commandPrefix":"curl"}}],"deny":["Read(.env)"],"ask":["Bash(git push *)"]}"#;

/// What one edit on a file that starts as `START` should leave: rule ids, or an error text.
enum Want {
    Ids(&'static [&'static str]),
    Shorthand(&'static [(RuleAction, &'static str)]),
    Err(&'static str),
}

#[test]
fn edits_table() {
    let cases: Vec<(&str, RuleEdit, Want)> = vec![
        (
            "add",
            RuleEdit::Add {
                rule: allow_npm_test(),
            },
            Want::Ids(&["no-curl", "npm-test"]),
        ),
        (
            "add a duplicate id",
            RuleEdit::Add { rule: deny_curl() },
            Want::Err("used twice"),
        ),
        (
            "add a bad glob",
            RuleEdit::Add {
                rule: rule("g", RuleAction::Deny, "*", None, Some("a[")),
            },
            Want::Err("not a valid glob"),
        ),
        (
            "add an unknown tool",
            RuleEdit::Add {
                rule: rule("t", RuleAction::Deny, "rm_rf", None, None),
            },
            Want::Err("rm_rf"),
        ),
        (
            "add an empty id",
            RuleEdit::Add {
                rule: rule(" ", RuleAction::Deny, "*", None, None),
            },
            Want::Err("`id` is empty"),
        ),
        (
            "update",
            RuleEdit::Update {
                id: "no-curl".into(),
                rule: rule("no-wget", RuleAction::Deny, "exec_cmd", Some("wget"), None),
            },
            Want::Ids(&["no-wget"]),
        ),
        (
            "update a missing id",
            RuleEdit::Update {
                id: "nope".into(),
                rule: deny_curl(),
            },
            Want::Err("not found"),
        ),
        (
            "delete",
            RuleEdit::Delete {
                id: "no-curl".into(),
            },
            Want::Ids(&[]),
        ),
        (
            "delete a missing id",
            RuleEdit::Delete { id: "nope".into() },
            Want::Err("not found"),
        ),
        (
            "add shorthand",
            RuleEdit::AddShorthand {
                action: RuleAction::Allow,
                text: "Bash(npm test *)".into(),
            },
            Want::Shorthand(&[
                (RuleAction::Allow, "Bash(npm test *)"),
                (RuleAction::Deny, "Read(.env)"),
                (RuleAction::Ask, "Bash(git push *)"),
            ]),
        ),
        (
            "add bad shorthand",
            RuleEdit::AddShorthand {
                action: RuleAction::Deny,
                text: "Frobnicate(x)".into(),
            },
            Want::Err("not understood"),
        ),
        (
            "add a shorthand twice",
            RuleEdit::AddShorthand {
                action: RuleAction::Deny,
                text: "Read(.env)".into(),
            },
            Want::Err("already in the deny list"),
        ),
        (
            "delete shorthand",
            RuleEdit::DeleteShorthand {
                action: RuleAction::Deny,
                text: "Read(.env)".into(),
            },
            Want::Shorthand(&[(RuleAction::Ask, "Bash(git push *)")]),
        ),
        (
            "delete shorthand from the wrong list",
            RuleEdit::DeleteShorthand {
                action: RuleAction::Allow,
                text: "Read(.env)".into(),
            },
            Want::Err("not found"),
        ),
        (
            "replace with broken JSON",
            RuleEdit::ReplaceText { text: "{".into() },
            Want::Err("invalid permission file"),
        ),
        (
            "replace with version 2",
            RuleEdit::ReplaceText {
                text: r#"{"version":2}"#.into(),
            },
            Want::Err("unsupported \"version\""),
        ),
        (
            "replace with a valid file",
            RuleEdit::ReplaceText {
                text: r#"{"version":1,"rules":[]}"#.into(),
            },
            Want::Ids(&[]),
        ),
        (
            "hooks with an unknown toolMatch",
            RuleEdit::SetHooks {
                hooks: hooks("h", "Frob", "true"),
            },
            Want::Err("not a tool"),
        ),
        (
            "hooks with an empty command",
            RuleEdit::SetHooks {
                hooks: hooks("h", "*", " "),
            },
            Want::Err("non-empty id and command"),
        ),
    ];
    for (name, e, want) in cases {
        for layer in [Layer::Global, Layer::Project] {
            let f = Fixture::new();
            let path = match layer {
                Layer::Global => f.paths.global_rules(),
                _ => f.root.join(".ground-link/permissions.json"),
            };
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, START).unwrap();
            let engine = f.denying();
            let got = edit::apply(engine.policy(), engine.jail(), layer, e.clone());
            let on_disk = std::fs::read_to_string(&path).unwrap();
            match want {
                Want::Ids(ids) => {
                    let view = got.unwrap_or_else(|e| panic!("{name} ({layer:?}): {e}"));
                    let got: Vec<&str> = view.rules.iter().map(|r| r.id.as_str()).collect();
                    assert_eq!(got, ids, "{name} ({layer:?})");
                    assert_eq!(view.text.as_deref(), Some(on_disk.as_str()), "{name}");
                    assert!(view.error.is_none(), "{name}: {:?}", view.error);
                }
                Want::Shorthand(list) => {
                    let view = got.unwrap_or_else(|e| panic!("{name} ({layer:?}): {e}"));
                    let want: Vec<ShorthandEntry> = list
                        .iter()
                        .map(|(action, text)| ShorthandEntry {
                            action: *action,
                            text: text.to_string(),
                        })
                        .collect();
                    assert_eq!(view.shorthand, want, "{name} ({layer:?})");
                    assert!(
                        on_disk.contains("Bash(git push *)"),
                        "{name}: the rest of the file is kept"
                    );
                }
                Want::Err(text) => {
                    let e = got
                        .err()
                        .unwrap_or_else(|| panic!("{name} ({layer:?}) should fail"));
                    assert!(e.to_string().contains(text), "{name} ({layer:?}): {e}");
                    assert_eq!(
                        on_disk, START,
                        "{name} ({layer:?}): a refused edit writes nothing"
                    );
                }
            }
        }
    }
}

fn hooks(id: &str, tool_match: &str, command: &str) -> Hooks {
    Hooks {
        pre_tool_use: vec![Hook {
            id: id.to_string(),
            tool_match: tool_match.to_string(),
            command: command.to_string(),
            timeout: 5000,
            on_failure: OnFailure::Block,
        }],
        post_tool_use: vec![],
    }
}

#[test]
fn a_deny_rule_added_takes_effect_at_once() {
    let f = Fixture::new();
    let engine = f.permissive();
    assert_eq!(check(&engine, &exec("curl x")).decision, Verdict::Ask);
    for layer in [Layer::Global, Layer::Project] {
        let view = edit::apply(
            engine.policy(),
            engine.jail(),
            layer,
            RuleEdit::Add { rule: deny_curl() },
        )
        .unwrap();
        assert!(view.exists);
        let d = check(&engine, &exec("curl x"));
        assert_eq!(d.decision, Verdict::Deny, "{layer:?}");
        assert_eq!(d.rule.unwrap().layer, layer);
        edit::apply(
            engine.policy(),
            engine.jail(),
            layer,
            RuleEdit::Delete {
                id: "no-curl".into(),
            },
        )
        .unwrap();
        assert_eq!(
            check(&engine, &exec("curl x")).decision,
            Verdict::Ask,
            "{layer:?}"
        );
    }
}

#[test]
fn managed_and_session_layers_are_not_written() {
    let f = Fixture::new();
    let managed = f.put("managed/permissions.json", START);
    let engine = f.denying();
    for layer in [Layer::Managed, Layer::Session] {
        let e = edit::apply(
            engine.policy(),
            engine.jail(),
            layer,
            RuleEdit::Delete {
                id: "no-curl".into(),
            },
        );
        assert!(matches!(e, Err(EditError::NotEditable(_))), "{layer:?}");
    }
    assert_eq!(std::fs::read_to_string(managed).unwrap(), START);
    let view = edit::view(engine.policy(), engine.jail(), Layer::Managed).unwrap();
    assert!(!view.editable);
    assert_eq!(view.rules.len(), 1);
}

#[test]
fn project_trust_is_kept_as_it_was() {
    // A trusted file stays trusted after an edit in the app.
    let f = Fixture::new();
    let engine = f.denying();
    edit::apply(
        engine.policy(),
        engine.jail(),
        Layer::Project,
        RuleEdit::Add {
            rule: allow_npm_test(),
        },
    )
    .unwrap();
    assert!(
        engine.policy().snapshot().project_trusted,
        "a new file made in the app is trusted"
    );
    assert_eq!(check(&engine, &exec("npm test")).decision, Verdict::Allow);
    let view = edit::apply(
        engine.policy(),
        engine.jail(),
        Layer::Project,
        RuleEdit::AddShorthand {
            action: RuleAction::Allow,
            text: "Bash(make)".into(),
        },
    )
    .unwrap();
    assert_eq!(view.trusted, Some(true));
    assert_eq!(check(&engine, &exec("make")).decision, Verdict::Allow);

    // Someone else changes the file: an edit in the app does not bless that change.
    let path = f.root.join(".ground-link/permissions.json");
    let mut text = std::fs::read_to_string(&path).unwrap();
    text = text.replace("\"Bash(make)\"", "\"Bash(make)\", \"Bash\"");
    std::fs::write(&path, text).unwrap();
    let view = edit::apply(
        engine.policy(),
        engine.jail(),
        Layer::Project,
        RuleEdit::Add { rule: deny_curl() },
    )
    .unwrap();
    assert_eq!(view.trusted, Some(false));
    assert_eq!(
        check(&engine, &exec("touch x")).decision,
        Verdict::Ask,
        "the foreign allow-all stays ignored"
    );
    assert_eq!(
        check(&engine, &exec("curl x")).decision,
        Verdict::Deny,
        "deny rules apply untrusted"
    );
    let trust = edit::trust_view(engine.policy());
    assert!(!trust.trusted);
    assert!(
        trust.diff.contains("+") && trust.diff.contains("\"Bash\""),
        "{}",
        trust.diff
    );
    // A file changed after its diff was shown is refused, and nothing is trusted.
    let shown = trust.content.clone().unwrap();
    let rules = f.root.join(".ground-link/permissions.json");
    let swapped = shown.replace("\"Bash\"", "\"Bash(rm *)\", \"Bash\"");
    assert_ne!(swapped, shown);
    std::fs::write(&rules, &swapped).unwrap();
    let err = engine.policy().trust_project_as_shown(&shown).unwrap_err();
    assert!(
        err.to_string().contains("changed after it was shown"),
        "{err}"
    );
    assert!(!edit::trust_view(engine.policy()).trusted);
    // What is shown now can be trusted.
    let now = edit::trust_view(engine.policy()).content.unwrap();
    assert_eq!(now, swapped);
    engine.policy().trust_project_as_shown(&now).unwrap();
    assert_eq!(edit::trust_view(engine.policy()).diff, "");
    assert!(edit::trust_view(engine.policy()).trusted);
}

#[test]
fn a_broken_file_is_shown_and_can_be_fixed() {
    let f = Fixture::new();
    let path = f.put(
        "config/ground-link/permissions.json",
        &START.replace("curl", "wget"),
    );
    let engine = f.denying();
    std::fs::write(&path, "{ not json").unwrap();
    let view = edit::view(engine.policy(), engine.jail(), Layer::Global).unwrap();
    assert!(
        view.error
            .as_deref()
            .unwrap_or("")
            .contains("invalid permission file"),
        "{:?}",
        view.error
    );
    assert!(view.rules.is_empty());
    assert_eq!(
        check(&engine, &exec("wget x")).decision,
        Verdict::Deny,
        "last good rules stay"
    );
    let e = edit::apply(
        engine.policy(),
        engine.jail(),
        Layer::Global,
        RuleEdit::Add {
            rule: allow_npm_test(),
        },
    );
    assert!(
        e.unwrap_err()
            .to_string()
            .contains("fix it in the text editor")
    );
    let view = edit::apply(
        engine.policy(),
        engine.jail(),
        Layer::Global,
        RuleEdit::ReplaceText {
            text: START.to_string(),
        },
    )
    .unwrap();
    assert!(view.error.is_none());
    assert_eq!(check(&engine, &exec("curl x")).decision, Verdict::Deny);
}

#[test]
fn a_symlinked_project_folder_is_not_written_through() {
    let f = Fixture::new();
    let outside = f.base().join("elsewhere");
    std::fs::create_dir_all(&outside).unwrap();
    std::os::unix::fs::symlink(&outside, f.root.join(".ground-link")).unwrap();
    let engine = f.denying();
    let e = edit::apply(
        engine.policy(),
        engine.jail(),
        Layer::Project,
        RuleEdit::Add { rule: deny_curl() },
    );
    assert!(e.is_err(), "{e:?}");
    assert!(!outside.join("permissions.json").exists());
}

#[test]
fn validate_uses_the_engines_messages() {
    let table: &[(&str, Option<&str>)] = &[
        (r#"{"version":1}"#, None),
        (r#"{"version":1,"allow":["Bash(npm test *)"]}"#, None),
        (
            r#"{"version":1,"rules":[{"id":"a","action":"allow","tool":"*","match":{"commandPrefix":"x"},"examples":{"match":["y"]}}]}"#,
            Some("a"),
        ),
        (
            r#"{"version":1,"hooks":{"PreToolUse":[{"id":"h","toolMatch":"Nope","command":"true"}]}}"#,
            Some("not a tool"),
        ),
        (r#"{"version":1,"bogus":1}"#, Some("bogus")),
    ];
    for (text, want) in table {
        let got = edit::validate(text, Layer::Global);
        match want {
            None => assert!(got.is_ok(), "{text}: {got:?}"),
            Some(w) => assert!(got.unwrap_err().contains(w), "{text}"),
        }
    }
}

/// The settings window and scoped approvals write the same files; under one write lock neither
/// loses the other's rules, however they interleave.
#[test]
fn edits_and_approved_rules_written_at_once_all_survive() {
    let f = Fixture::new();
    let engine = std::sync::Arc::new(f.permissive());
    const EACH: usize = 12;
    for layer in [Layer::Global, Layer::Project] {
        let editor = {
            let engine = std::sync::Arc::clone(&engine);
            std::thread::spawn(move || {
                for i in 0..EACH {
                    let prefix = format!("edited-{i}");
                    let r = rule(&prefix, RuleAction::Deny, "exec_cmd", Some(&prefix), None);
                    edit::apply(
                        engine.policy(),
                        engine.jail(),
                        layer,
                        RuleEdit::Add { rule: r },
                    )
                    .unwrap();
                }
            })
        };
        let approver = {
            let engine = std::sync::Arc::clone(&engine);
            std::thread::spawn(move || {
                for i in 0..EACH {
                    let prefix = format!("approved-{i}");
                    let r = rule(&prefix, RuleAction::Deny, "exec_cmd", Some(&prefix), None);
                    engine.policy().append_rule(layer, r).unwrap();
                }
            })
        };
        editor.join().unwrap();
        approver.join().unwrap();
        let view = edit::view(engine.policy(), engine.jail(), layer).unwrap();
        let ids: Vec<&str> = view.rules.iter().map(|r| r.id.as_str()).collect();
        for i in 0..EACH {
            for who in ["edited", "approved"] {
                let id = format!("{who}-{i}");
                assert!(
                    ids.contains(&id.as_str()),
                    "{layer:?}: {id} was lost; have {ids:?}"
                );
            }
        }
        assert_eq!(ids.len(), 2 * EACH, "{layer:?}: {ids:?}");
    }
}
