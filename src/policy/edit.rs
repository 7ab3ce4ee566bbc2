//! Editing rule files from the settings window (DESIGN §5.3): list, add, update and delete
//! rules, shorthand strings and hooks in the global or the project file.
//!
//! Guarantees:
//! - Every edit is validated with the engine's own [`parse_file`] (plus the hook checks of
//!   [`check_hook`]) before anything is written; an edit that would not load is refused with
//!   the engine's message and the file stays as it was.
//! - Writes are atomic (temp file and rename). The project file is written through the jail,
//!   like [`Policy::append_rule`] does, so a symlinked `.ground-link` cannot redirect it.
//! - The managed file is never written, and neither is the session layer.
//! - Editing the project file keeps its trust as it was: a file that was trusted (or had
//!   nothing that needs trust) is trusted again after the edit; one with unreviewed changes
//!   stays untrusted, so editing one rule never blesses changes the user has not looked at.
//! - Everything else in a file (unknown order, other members) is kept as it was.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::hooks::check_hook;
use crate::jail::{Jail, JailError};
use crate::paths::PROJECT_RULES_REL;
use crate::policy::layers::{LayerState, Policy, PolicyError, parse_file};
use crate::protocol::{Hooks, Layer, PermissionFile, Rule, RuleAction};

#[derive(Debug, thiserror::Error)]
pub enum EditError {
    #[error(
        "the {0} rule file cannot be edited here; the managed file belongs to the administrator and session grants live in memory"
    )]
    NotEditable(&'static str),
    #[error("{path}: {msg}")]
    File { path: String, msg: String },
    #[error("{path}: the edit was not saved because the file would not load: {msg}")]
    Invalid { path: String, msg: String },
    #[error("{path}: {what} not found; reload the list and try again")]
    NotFound { path: String, what: String },
    #[error(transparent)]
    Jail(#[from] JailError),
    #[error(transparent)]
    Policy(#[from] PolicyError),
}

/// A Claude Code-style rule string as it stands in a file's `allow`/`deny`/`ask` list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ShorthandEntry {
    pub action: RuleAction,
    pub text: String,
}

/// One rule file as the settings window shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RuleFileView {
    pub layer: Layer,
    /// Host path for the global and managed files, root-relative for the project file.
    pub path: String,
    pub exists: bool,
    /// Whether the app may write it (global and project).
    pub editable: bool,
    /// The file's text on disk, if it exists and can be read.
    pub text: Option<String>,
    /// The `rules` list of the file on disk (empty when it does not parse).
    pub rules: Vec<Rule>,
    pub shorthand: Vec<ShorthandEntry>,
    pub hooks: Hooks,
    /// Why the file on disk does not load (the last good version stays in force meanwhile).
    pub error: Option<String>,
    /// Project file only: whether its allow rules and hooks apply (its content is trusted).
    pub trusted: Option<bool>,
}

/// One change to a rule file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum RuleEdit {
    /// Append a rule to `rules`.
    Add { rule: Rule },
    /// Replace the rule whose id is `id` (the new rule may carry a new id).
    #[serde(rename_all = "camelCase")]
    Update { id: String, rule: Rule },
    /// Remove the rule whose id is `id`.
    Delete { id: String },
    /// Append a shorthand string such as `Bash(npm test *)` to the action's list.
    AddShorthand { action: RuleAction, text: String },
    /// Remove a shorthand string from the action's list.
    DeleteShorthand { action: RuleAction, text: String },
    /// Replace the file's hooks.
    SetHooks { hooks: Hooks },
    /// Replace the whole file with `text` (the raw editor; also how a broken file is fixed).
    ReplaceText { text: String },
}

fn editable(layer: Layer) -> Result<(), EditError> {
    match layer {
        Layer::Global | Layer::Project => Ok(()),
        Layer::Managed | Layer::Session => Err(EditError::NotEditable(layer.as_str())),
    }
}

fn layer_state(policy: &Policy, layer: Layer) -> Option<LayerState> {
    let snap = policy.snapshot();
    match layer {
        Layer::Managed => Some(snap.managed.clone()),
        Layer::Global => Some(snap.global.clone()),
        Layer::Project => Some(snap.project.clone()),
        Layer::Session => None,
    }
}

fn shown_path(policy: &Policy, layer: Layer) -> String {
    match layer {
        Layer::Managed => policy.paths().managed.display().to_string(),
        Layer::Global => policy.paths().global_rules().display().to_string(),
        Layer::Project | Layer::Session => PROJECT_RULES_REL.to_string(),
    }
}

/// The file's text on disk: `Ok(None)` when it does not exist.
fn read_text(policy: &Policy, jail: &Jail, layer: Layer) -> Result<Option<String>, EditError> {
    let path = shown_path(policy, layer);
    match layer {
        Layer::Project => {
            let resolved = match jail.resolve(PROJECT_RULES_REL) {
                Ok(r) => r,
                Err(JailError::NotFound(_)) => return Ok(None),
                Err(e) => return Err(e.into()),
            };
            if !resolved.inside {
                return Err(EditError::File {
                    path,
                    msg: "resolves outside the sandbox root; refusing to use it".to_string(),
                });
            }
            let mut f = match jail.open_read(&resolved) {
                Ok(f) => f,
                Err(JailError::NotFound(_)) => return Ok(None),
                Err(e) => return Err(e.into()),
            };
            let mut s = String::new();
            std::io::Read::read_to_string(&mut f, &mut s).map_err(|e| EditError::File {
                path,
                msg: format!("cannot read: {e}"),
            })?;
            Ok(Some(s))
        }
        Layer::Managed | Layer::Global => {
            let file = match layer {
                Layer::Managed => policy.paths().managed.clone(),
                _ => policy.paths().global_rules(),
            };
            match std::fs::read_to_string(&file) {
                Ok(t) => Ok(Some(t)),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
                Err(e) => Err(EditError::File {
                    path,
                    msg: format!("cannot read: {e}"),
                }),
            }
        }
        Layer::Session => Err(EditError::NotEditable(layer.as_str())),
    }
}

/// The file as the settings window shows it. Works for the managed file too (read-only).
pub fn view(policy: &Policy, jail: &Jail, layer: Layer) -> Result<RuleFileView, EditError> {
    if layer == Layer::Session {
        return Err(EditError::NotEditable(layer.as_str()));
    }
    policy.reload();
    let text = read_text(policy, jail, layer)?;
    let state = layer_state(policy, layer);
    let parsed: Option<PermissionFile> = text.as_deref().and_then(super::layers::wire_file);
    let mut view = RuleFileView {
        layer,
        path: shown_path(policy, layer),
        exists: text.is_some(),
        editable: matches!(layer, Layer::Global | Layer::Project),
        text: text.clone(),
        rules: Vec::new(),
        shorthand: Vec::new(),
        hooks: Hooks::default(),
        error: state.and_then(|s| s.error),
        trusted: (layer == Layer::Project).then(|| policy.snapshot().project_trusted),
    };
    if let Some(file) = parsed {
        view.rules = file.rules;
        for (list, action) in [
            (file.allow, RuleAction::Allow),
            (file.deny, RuleAction::Deny),
            (file.ask, RuleAction::Ask),
        ] {
            view.shorthand
                .extend(list.into_iter().map(|text| ShorthandEntry { action, text }));
        }
        view.hooks = file.hooks;
    }
    Ok(view)
}

/// Apply one edit: validate the result with the engine's own parser, write it atomically,
/// reload the policy, and return the file as it is now.
pub fn apply(
    policy: &Policy,
    jail: &Jail,
    layer: Layer,
    edit: RuleEdit,
) -> Result<RuleFileView, EditError> {
    editable(layer)?;
    let path = shown_path(policy, layer);
    policy.rewrite(layer, |current| {
        let new_text = edited_text(current, edit, &path)?;
        validate(&new_text, layer).map_err(|msg| EditError::Invalid {
            path: path.clone(),
            msg,
        })?;
        Ok::<_, EditError>(new_text)
    })?;
    view(policy, jail, layer)
}

/// Validate a file's text as the engine would load it, hooks included.
pub fn validate(text: &str, layer: Layer) -> Result<(), String> {
    let (_, hooks) = parse_file(text, layer)?;
    for h in hooks.pre_tool_use.iter().chain(&hooks.post_tool_use) {
        check_hook(h).map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// What the project file's trust would change: the text last trusted and the text in force,
/// as a unified diff (empty when they agree).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TrustView {
    pub exists: bool,
    pub trusted: bool,
    /// Unified diff from the trusted text to the text in force.
    pub diff: String,
    /// The text in force, which is what trusting it now would trust (sent back with the
    /// request to trust, so a file changed since is refused).
    pub content: Option<String>,
    pub error: Option<String>,
}

pub fn trust_view(policy: &Policy) -> TrustView {
    policy.reload();
    let snap = policy.snapshot();
    let current = snap.project.content.clone();
    let before = policy.trusted_content().unwrap_or_default();
    let diff = match &current {
        Some(c) if *c != before => crate::tools::fs::diff_text(PROJECT_RULES_REL, &before, c),
        _ => String::new(),
    };
    TrustView {
        exists: current.is_some(),
        trusted: snap.project_trusted,
        diff,
        error: snap.project.error.clone(),
        content: current,
    }
}

fn file_err(path: &str, msg: impl Into<String>) -> EditError {
    EditError::File {
        path: path.to_string(),
        msg: msg.into(),
    }
}

fn list_key(action: RuleAction) -> &'static str {
    match action {
        RuleAction::Allow => "allow",
        RuleAction::Deny => "deny",
        RuleAction::Ask => "ask",
    }
}

fn array<'a>(
    doc: &'a mut Map<String, Value>,
    key: &str,
    path: &str,
) -> Result<&'a mut Vec<Value>, EditError> {
    doc.entry(key.to_string())
        .or_insert_with(|| Value::Array(Vec::new()))
        .as_array_mut()
        .ok_or_else(|| file_err(path, format!("\"{key}\" is not an array")))
}

fn to_value<T: Serialize>(v: &T, path: &str) -> Result<Value, EditError> {
    serde_json::to_value(v).map_err(|e| file_err(path, e.to_string()))
}

/// The file text after one edit, keeping everything else as it was.
fn edited_text(current: Option<&str>, edit: RuleEdit, path: &str) -> Result<String, EditError> {
    if let RuleEdit::ReplaceText { text } = edit {
        return Ok(text);
    }
    let mut doc: Value = match current {
        None => serde_json::json!({"version": 1, "rules": []}),
        Some(t) => serde_json::from_str(t).map_err(|e| {
            file_err(
                path,
                format!("is not valid JSON ({e}); fix it in the text editor first"),
            )
        })?,
    };
    let obj = doc.as_object_mut().ok_or_else(|| {
        file_err(
            path,
            "is not a JSON object; fix it in the text editor first",
        )
    })?;
    let id_of = |v: &Value| v.get("id").and_then(Value::as_str).map(str::to_string);
    match edit {
        RuleEdit::ReplaceText { .. } => {}
        RuleEdit::Add { rule } => {
            let v = to_value(&rule, path)?;
            array(obj, "rules", path)?.push(v);
        }
        RuleEdit::Update { id, rule } => {
            let v = to_value(&rule, path)?;
            let list = array(obj, "rules", path)?;
            let at = only_index(list, &id, path, id_of)?;
            list[at] = v;
        }
        RuleEdit::Delete { id } => {
            let list = array(obj, "rules", path)?;
            let at = only_index(list, &id, path, id_of)?;
            list.remove(at);
        }
        RuleEdit::AddShorthand { action, text } => {
            let text = text.trim().to_string();
            let list = array(obj, list_key(action), path)?;
            if list.iter().any(|v| v.as_str() == Some(text.as_str())) {
                return Err(file_err(
                    path,
                    format!("{text:?} is already in the {} list", list_key(action)),
                ));
            }
            list.push(Value::String(text));
        }
        RuleEdit::DeleteShorthand { action, text } => {
            let list = array(obj, list_key(action), path)?;
            let at = list
                .iter()
                .position(|v| v.as_str() == Some(text.as_str()))
                .ok_or_else(|| EditError::NotFound {
                    path: path.to_string(),
                    what: format!("{} shorthand {text:?}", list_key(action)),
                })?;
            list.remove(at);
            if list.is_empty() {
                obj.remove(list_key(action));
            }
        }
        RuleEdit::SetHooks { hooks } => {
            let v = to_value(&hooks, path)?;
            obj.insert("hooks".to_string(), v);
        }
    }
    let mut text = serde_json::to_string_pretty(&doc).map_err(|e| file_err(path, e.to_string()))?;
    text.push('\n');
    Ok(text)
}

fn only_index(
    list: &[Value],
    id: &str,
    path: &str,
    id_of: impl Fn(&Value) -> Option<String>,
) -> Result<usize, EditError> {
    let found: Vec<usize> = list
        .iter()
        .enumerate()
        .filter(|(_, v)| id_of(v).as_deref() == Some(id))
        .map(|(i, _)| i)
        .collect();
    match found.as_slice() {
        [one] => Ok(*one),
        [] => Err(EditError::NotFound {
            path: path.to_string(),
            what: format!("rule {id:?}"),
        }),
        _ => Err(file_err(
            path,
            format!("rule id {id:?} is used more than once; edit the file's text instead"),
        )),
    }
}
