//! Rule files and their layers (DESIGN §5.3): loading, the last good version, project trust,
//! hot reload, session grants and appending rules.
//!
//! Guarantees:
//! - A file that fails to parse or validate never loosens anything: the last good version stays
//!   in force and the error is reported. A file broken since start-up (no good version yet)
//!   puts the policy in *degraded* mode, where nothing is allowed without asking.
//! - The project file is attacker input. Its deny and ask rules always apply; its allow rules
//!   and hooks apply only while its content equals what the user last trusted.
//! - The project file is read and written through the jail, so a symlinked `.ground-link`
//!   cannot redirect ground-link's own writes outside the root.

use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock, Weak};

use notify::{RecursiveMode, Watcher};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::jail::{Jail, JailError};
use crate::paths::{ConfigPaths, PROJECT_RULES_REL};
use crate::policy::rules::{CompiledRule, RuleIndex, expand_shorthand};
use crate::protocol::{Hooks, Layer, PermissionFile, Rule, RuleAction};

#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    #[error("{path}: {msg}")]
    File { path: String, msg: String },
    #[error("the {0} layer cannot be written by ground-link")]
    ReadOnlyLayer(&'static str),
    #[error(transparent)]
    Jail(#[from] JailError),
}

/// One loaded layer.
#[derive(Debug, Clone)]
pub struct LayerState {
    pub layer: Layer,
    /// Shown in messages (root-relative for the project file).
    pub path: String,
    pub rules: Vec<CompiledRule>,
    pub hooks: Hooks,
    /// The content of the version in force, if the file exists and a version ever loaded.
    pub content: Option<String>,
    /// The current error, if the file on disk is broken (the last good version stays in force).
    pub error: Option<String>,
    /// Broken with no good version to fall back on.
    pub degraded: bool,
    /// Extra `"sensitive"` path globs this file adds to the built-in secret table.
    pub sensitive: Vec<String>,
}

impl LayerState {
    fn empty(layer: Layer, path: String) -> LayerState {
        LayerState {
            layer,
            path,
            rules: Vec::new(),
            hooks: Hooks::default(),
            content: None,
            error: None,
            degraded: false,
            sensitive: Vec::new(),
        }
    }
}

/// An immutable view of every file layer; swapped whole on reload.
#[derive(Debug, Clone)]
pub struct Snapshot {
    pub managed: LayerState,
    pub global: LayerState,
    pub project: LayerState,
    pub project_trusted: bool,
    /// Deny rules of every layer, trusted or not.
    pub deny: RuleIndex,
    /// Ask rules of every layer, trusted or not.
    pub ask: RuleIndex,
    /// Allow rules of the managed and global layers, and of the project while it is trusted.
    pub allow: RuleIndex,
    /// Every layer's extra sensitive globs, compiled once (`None` when there are none).
    pub sensitive: Option<globset::GlobSet>,
}

impl Snapshot {
    fn new(
        managed: LayerState,
        global: LayerState,
        project: LayerState,
        project_trusted: bool,
    ) -> Snapshot {
        let pick = |action: RuleAction, with_project: bool| {
            let project: &[CompiledRule] = if with_project { &project.rules } else { &[] };
            let rules = managed
                .rules
                .iter()
                .chain(&global.rules)
                .chain(project)
                .filter(|r| r.action() == action)
                .cloned()
                .collect();
            RuleIndex::new(rules)
        };
        let deny = pick(RuleAction::Deny, true);
        let ask = pick(RuleAction::Ask, true);
        let allow = pick(RuleAction::Allow, project_trusted);
        let mut set = globset::GlobSetBuilder::new();
        let mut any = false;
        for glob in managed
            .sensitive
            .iter()
            .chain(&global.sensitive)
            .chain(&project.sensitive)
        {
            if let Ok(g) = globset::GlobBuilder::new(glob)
                .literal_separator(true)
                .build()
            {
                set.add(g);
                any = true;
            }
        }
        let sensitive = if any { set.build().ok() } else { None };
        Snapshot {
            sensitive,
            managed,
            global,
            project,
            project_trusted,
            deny,
            ask,
            allow,
        }
    }

    pub fn layers(&self) -> [&LayerState; 3] {
        [&self.managed, &self.global, &self.project]
    }

    /// Hooks in force: managed and global always, the project's only while trusted.
    pub fn hooks(&self) -> Hooks {
        let mut all = Hooks::default();
        let project = if self.project_trusted {
            Some(&self.project)
        } else {
            None
        };
        for layer in [Some(&self.managed), Some(&self.global), project]
            .into_iter()
            .flatten()
        {
            all.pre_tool_use
                .extend(layer.hooks.pre_tool_use.iter().cloned());
            all.post_tool_use
                .extend(layer.hooks.post_tool_use.iter().cloned());
        }
        all
    }

    /// Files that are broken right now, with their errors.
    pub fn errors(&self) -> Vec<(Layer, String, String)> {
        self.layers()
            .iter()
            .filter_map(|l| {
                l.error
                    .as_ref()
                    .map(|e| (l.layer, l.path.clone(), e.clone()))
            })
            .collect()
    }

    pub fn degraded(&self) -> Option<String> {
        self.layers().iter().find(|l| l.degraded).map(|l| {
            format!(
                "{} rule file {} is broken ({}); every call asks until it is fixed",
                l.layer.as_str(),
                l.path,
                l.error.clone().unwrap_or_default()
            )
        })
    }
}

/// Parse and validate one permission file.
pub fn parse_file(text: &str, layer: Layer) -> Result<(Vec<CompiledRule>, Hooks), String> {
    let mut value: serde_json::Value =
        serde_json::from_str(text).map_err(|e| format!("invalid permission file: {e}"))?;
    // Checked here so a bad glob makes the file fail to load (and keep its last good version).
    if let Some(obj) = value.as_object_mut() {
        obj.remove("sensitive");
    }
    sensitive_globs(text)?;
    let file: PermissionFile =
        serde_json::from_value(value).map_err(|e| format!("invalid permission file: {e}"))?;
    if file.version != 1 {
        return Err(format!(
            "unsupported \"version\": {}; this ground-link reads version 1",
            file.version
        ));
    }
    let mut rules = Vec::new();
    for rule in file.rules {
        rules.push(CompiledRule::compile(rule, layer).map_err(|e| e.to_string())?);
    }
    for (list, action) in [
        (&file.allow, RuleAction::Allow),
        (&file.deny, RuleAction::Deny),
        (&file.ask, RuleAction::Ask),
    ] {
        for text in list {
            for rule in expand_shorthand(text, action).map_err(|e| e.to_string())? {
                rules.push(CompiledRule::compile(rule, layer).map_err(|e| e.to_string())?);
            }
        }
    }
    let mut seen = std::collections::HashSet::new();
    for r in &rules {
        if !seen.insert((r.id().to_string(), r.action())) {
            return Err(format!(
                "rule id {:?} is used twice; ids must be unique",
                r.id()
            ));
        }
    }
    let mut hook_ids = std::collections::HashSet::new();
    for h in file
        .hooks
        .pre_tool_use
        .iter()
        .chain(&file.hooks.post_tool_use)
    {
        if h.id.trim().is_empty() || h.command.trim().is_empty() {
            return Err(format!("hook {:?} needs a non-empty id and command", h.id));
        }
        if !hook_ids.insert(h.id.clone()) {
            return Err(format!(
                "hook id {:?} is used twice; ids must be unique",
                h.id
            ));
        }
        if h.timeout == 0 {
            return Err(format!("hook {:?}: timeout must be at least 1 ms", h.id));
        }
    }
    Ok((rules, file.hooks))
}

/// The file as the wire type sees it: without the engine-only `"sensitive"` list, so the
/// settings window can show a file that uses it.
pub fn wire_file(text: &str) -> Option<PermissionFile> {
    let mut value: Value = serde_json::from_str(text).ok()?;
    value.as_object_mut()?.remove("sensitive");
    serde_json::from_value(value).ok()
}

/// The file's `"sensitive": ["glob", …]`: paths (root-relative, as `pathGlob`) that count as
/// secrets on top of the built-in table. Any layer may add them, trusted or not: a secret more
/// only makes ground-link stricter.
pub fn sensitive_globs(text: &str) -> Result<Vec<String>, String> {
    let value: Value =
        serde_json::from_str(text).map_err(|e| format!("invalid permission file: {e}"))?;
    let Some(list) = value.get("sensitive") else {
        return Ok(Vec::new());
    };
    let items = list
        .as_array()
        .ok_or("invalid permission file: \"sensitive\" must be a list of path globs")?;
    let mut out = Vec::new();
    for item in items {
        let glob = item
            .as_str()
            .ok_or("invalid permission file: \"sensitive\" must be a list of path globs")?;
        globset::Glob::new(glob)
            .map_err(|e| format!("invalid permission file: sensitive glob {glob:?}: {e}"))?;
        out.push(glob.to_string());
    }
    Ok(out)
}

/// The permission engine's view of the rule files, kept current.
pub struct Policy {
    paths: ConfigPaths,
    jail: Arc<Jail>,
    snapshot: RwLock<Arc<Snapshot>>,
    grants: RwLock<HashMap<String, Vec<CompiledRule>>>,
    watcher: Mutex<Option<notify::RecommendedWatcher>>,
    /// Serialises reloads and appends so two writers never interleave.
    write_lock: Mutex<()>,
}

impl std::fmt::Debug for Policy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Policy")
            .field("paths", &self.paths)
            .finish_non_exhaustive()
    }
}

enum FileRead {
    Missing,
    Text(String),
    Error(String),
}

impl Policy {
    /// Load every layer. Never fails: a broken file is reported in the snapshot.
    pub fn load(paths: ConfigPaths, jail: Arc<Jail>) -> Policy {
        let empty = Snapshot::new(
            LayerState::empty(Layer::Managed, paths.managed.display().to_string()),
            LayerState::empty(Layer::Global, paths.global_rules().display().to_string()),
            LayerState::empty(Layer::Project, PROJECT_RULES_REL.to_string()),
            false,
        );
        let policy = Policy {
            paths,
            jail,
            snapshot: RwLock::new(Arc::new(empty)),
            grants: RwLock::new(HashMap::new()),
            watcher: Mutex::new(None),
            write_lock: Mutex::new(()),
        };
        policy.reload();
        policy
    }

    pub fn paths(&self) -> &ConfigPaths {
        &self.paths
    }

    pub fn snapshot(&self) -> Arc<Snapshot> {
        match self.snapshot.read() {
            Ok(s) => Arc::clone(&s),
            Err(poisoned) => Arc::clone(&poisoned.into_inner()),
        }
    }

    /// Re-read the files; unchanged files keep their compiled rules.
    pub fn reload(&self) {
        let _guard = self.write_lock.lock().unwrap_or_else(|p| p.into_inner());
        self.reload_locked();
    }

    fn reload_locked(&self) {
        let old = self.snapshot();
        let managed = next_layer(&old.managed, read_plain(&self.paths.managed));
        let global = next_layer(&old.global, read_plain(&self.paths.global_rules()));
        let project = next_layer(&old.project, self.read_project());
        let project_trusted = match &project.content {
            Some(content) => self.trusted_content().as_deref() == Some(content.as_str()),
            None => false,
        };
        let snap = Snapshot::new(managed, global, project, project_trusted);
        // The extra secrets reach every walker, the classifier and the exec namespace through
        // the one matcher.
        if let Some(prot) = self.jail.protection() {
            prot.set_extra_sensitive(snap.sensitive.clone());
            prot.set_hook_files(self.hook_files(&snap));
        }
        match self.snapshot.write() {
            Ok(mut s) => *s = Arc::new(snap),
            Err(poisoned) => *poisoned.into_inner() = Arc::new(snap),
        }
    }

    /// Files inside the root that the hooks in force name: each word of a hook's command
    /// that is an existing file there (`sh scripts/check.sh`, `./lint.sh`). Hooks run as the
    /// person, outside any command's isolation; a model that could rewrite such a file would
    /// run its code there at the next call, so they are protected like `.git/hooks`.
    fn hook_files(&self, snap: &Snapshot) -> Vec<PathBuf> {
        let hooks = snap.hooks();
        let mut out = Vec::new();
        for hook in hooks.pre_tool_use.iter().chain(&hooks.post_tool_use) {
            for word in hook
                .command
                .split(|c: char| c.is_whitespace() || ";&|()<>".contains(c))
            {
                let word = word.trim_matches(|c| c == '"' || c == '\'');
                // `--config=lint.toml`, `X=./a.sh`: the value is a path as well.
                let value = word.split_once('=').map(|(_, v)| v);
                for w in [Some(word), value].into_iter().flatten() {
                    if w.is_empty() || w.starts_with('-') {
                        continue;
                    }
                    if let Ok(r) = self.jail.resolve(w) {
                        if r.inside && r.abs.is_file() {
                            out.push(r.abs);
                        }
                    }
                }
            }
        }
        out.sort();
        out.dedup();
        out
    }

    fn read_project(&self) -> FileRead {
        let resolved = match self.jail.resolve(PROJECT_RULES_REL) {
            Ok(r) => r,
            Err(JailError::NotFound(_)) => return FileRead::Missing,
            Err(e) => return FileRead::Error(e.to_string()),
        };
        if !resolved.inside {
            return FileRead::Error(format!(
                "{PROJECT_RULES_REL} resolves outside the sandbox root; it is ignored"
            ));
        }
        match self.jail.open_read(&resolved) {
            Ok(mut f) => {
                let mut s = String::new();
                match f.read_to_string(&mut s) {
                    Ok(_) => FileRead::Text(s),
                    Err(e) => FileRead::Error(format!("cannot read: {e}")),
                }
            }
            Err(JailError::NotFound(_)) => FileRead::Missing,
            Err(e) => FileRead::Error(e.to_string()),
        }
    }

    // ---- trust -----------------------------------------------------------------------------

    fn trust_file(&self) -> PathBuf {
        let digest = Sha256::digest(self.jail.root().as_os_str().as_encoded_bytes());
        self.paths
            .trust_dir()
            .join(format!("{}.json", &hex::encode(digest)[..32]))
    }

    /// The project file content the user last trusted for this root.
    pub fn trusted_content(&self) -> Option<String> {
        let text = std::fs::read_to_string(self.trust_file()).ok()?;
        let v: Value = serde_json::from_str(&text).ok()?;
        if v.get("root")?.as_str()? != self.jail.root().to_string_lossy() {
            return None;
        }
        v.get("content")?.as_str().map(str::to_string)
    }

    /// Trust the project file as it is in force now.
    pub fn trust_project(&self) -> Result<(), PolicyError> {
        self.trust_in_force(None)
    }

    /// Trust the project file only if it is still exactly the text the person was shown (the
    /// settings window's diff, `ground-link trust`): a file changed after it was shown — say
    /// by a command the model ran — is refused, to be reviewed again.
    pub fn trust_project_as_shown(&self, shown: &str) -> Result<(), PolicyError> {
        self.trust_in_force(Some(shown))
    }

    fn trust_in_force(&self, shown: Option<&str>) -> Result<(), PolicyError> {
        let _guard = self.write_lock.lock().unwrap_or_else(|p| p.into_inner());
        self.reload_locked();
        let snap = self.snapshot();
        let content = snap
            .project
            .content
            .clone()
            .ok_or_else(|| PolicyError::File {
                path: PROJECT_RULES_REL.to_string(),
                msg: match &snap.project.error {
                    Some(e) => format!("cannot be trusted while it is broken: {e}"),
                    None => "does not exist; there is nothing to trust".to_string(),
                },
            })?;
        if snap.project.error.is_some() {
            return Err(PolicyError::File {
                path: PROJECT_RULES_REL.to_string(),
                msg: "is broken on disk; fix it before trusting it".to_string(),
            });
        }
        if shown.is_some_and(|shown| shown != content) {
            return Err(PolicyError::File {
                path: PROJECT_RULES_REL.to_string(),
                msg: "changed after it was shown to you; nothing was trusted, review the new \
                      diff"
                    .to_string(),
            });
        }
        self.write_trust(&content)?;
        self.reload_locked();
        Ok(())
    }

    fn write_trust(&self, content: &str) -> Result<(), PolicyError> {
        let path = self.trust_file();
        let body =
            serde_json::json!({"root": self.jail.root().to_string_lossy(), "content": content});
        write_atomic_plain(&path, body.to_string().as_bytes())
    }

    // ---- grants and appends ------------------------------------------------------------------

    /// Remember an allow rule for one conversation (in memory only).
    pub fn grant_session(&self, session: &str, rule: CompiledRule) {
        let mut g = self.grants.write().unwrap_or_else(|p| p.into_inner());
        g.entry(session.to_string()).or_default().push(rule);
    }

    pub fn session_grants(&self, session: &str) -> Vec<CompiledRule> {
        let g = self.grants.read().unwrap_or_else(|p| p.into_inner());
        g.get(session).cloned().unwrap_or_default()
    }

    /// Append a rule to the global or project file atomically (see [`Policy::rewrite`]).
    /// Returns whether the project file is trusted afterwards.
    pub fn append_rule(&self, layer: Layer, rule: Rule) -> Result<bool, PolicyError> {
        CompiledRule::compile(rule.clone(), layer).map_err(|e| PolicyError::File {
            path: layer.as_str().to_string(),
            msg: e.to_string(),
        })?;
        let shown = match layer {
            Layer::Global => self.paths.global_rules().display().to_string(),
            _ => PROJECT_RULES_REL.to_string(),
        };
        self.rewrite(layer, |current| with_rule(current, rule, &shown))
    }

    /// Read-modify-write the global or project rule file under the policy's write lock, so the
    /// settings window's edits, scoped approvals and trust never lose each other's updates:
    /// `change` gets the text on disk (`None` when there is none) and returns the new text,
    /// which is written atomically (the project file through the jail) and loaded. The project
    /// file is re-trusted only if it was trusted before (or held nothing that needs trust), so
    /// one approved rule never blesses changes the person has not reviewed. Returns whether
    /// the project file is trusted afterwards.
    pub fn rewrite<E: From<PolicyError>>(
        &self,
        layer: Layer,
        change: impl FnOnce(Option<&str>) -> Result<String, E>,
    ) -> Result<bool, E> {
        let _guard = self.write_lock.lock().unwrap_or_else(|p| p.into_inner());
        let (shown, current) = match layer {
            Layer::Managed | Layer::Session => {
                return Err(PolicyError::ReadOnlyLayer(layer.as_str()).into());
            }
            Layer::Global => {
                let path = self.paths.global_rules();
                (path.display().to_string(), read_plain(&path))
            }
            Layer::Project => (PROJECT_RULES_REL.to_string(), self.read_project()),
        };
        let current = match current {
            FileRead::Missing => None,
            FileRead::Text(t) => Some(t),
            FileRead::Error(msg) => return Err(PolicyError::File { path: shown, msg }.into()),
        };
        let text = change(current.as_deref())?;
        if layer == Layer::Global {
            write_atomic_plain(&self.paths.global_rules(), text.as_bytes())?;
        } else {
            // Decided from the very text being replaced, not from an earlier read of the file,
            // so a file swapped in meanwhile (a running command can write the project folder)
            // is never blessed along with the new rule.
            let was_trusted = match current.as_deref() {
                None => true,
                Some(old) => {
                    self.trusted_content().as_deref() == Some(old)
                        || parse_file(old, Layer::Project).is_ok_and(|(rules, hooks)| {
                            rules.iter().all(|r| r.action() != RuleAction::Allow)
                                && hooks.pre_tool_use.is_empty()
                                && hooks.post_tool_use.is_empty()
                        })
                }
            };
            let resolved = self
                .jail
                .resolve(PROJECT_RULES_REL)
                .map_err(PolicyError::from)?;
            if !resolved.inside {
                return Err(PolicyError::File {
                    path: shown,
                    msg: "resolves outside the sandbox root; refusing to write it".to_string(),
                }
                .into());
            }
            self.jail
                .write_atomic(&resolved, text.as_bytes())
                .map_err(PolicyError::from)?;
            if was_trusted {
                self.write_trust(&text)?;
            }
        }
        self.reload_locked();
        Ok(self.snapshot().project_trusted)
    }

    // ---- hot reload ----------------------------------------------------------------------------

    /// Watch the rule files and reload on change. Watches folders (files may not exist yet).
    pub fn watch(self: &Arc<Self>) -> Result<(), PolicyError> {
        let weak: Weak<Policy> = Arc::downgrade(self);
        let files: Vec<PathBuf> = vec![
            self.paths.managed.clone(),
            self.paths.global_rules(),
            self.jail.root().join(PROJECT_RULES_REL),
            self.jail.root().join(".ground-link"),
        ];
        // The watcher's callback runs on notify's own thread, which must not call back into
        // the watcher (adding a watch from there deadlocks): a small thread does the work.
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        std::thread::Builder::new()
            .name("ground-link-rules".into())
            .spawn(move || {
                while rx.recv().is_ok() {
                    while rx.try_recv().is_ok() {} // one reload for a burst of events
                    let Some(policy) = weak.upgrade() else { break };
                    // Watch a new `.ground-link/` first, then read: a file written before the
                    // watch existed is picked up by this reload, later ones raise their own event.
                    policy.rewatch_project();
                    policy.reload();
                }
            })
            .map_err(|e| PolicyError::File {
                path: "watcher".into(),
                msg: e.to_string(),
            })?;
        let mut watcher = notify::recommended_watcher(move |res: notify::Result<notify::Event>| {
            let Ok(event) = res else { return };
            if event
                .paths
                .iter()
                .any(|p| files.iter().any(|f| p == f || p.starts_with(f)))
            {
                let _ = tx.send(());
            }
        })
        .map_err(|e| PolicyError::File {
            path: "watcher".into(),
            msg: e.to_string(),
        })?;
        let _ = std::fs::create_dir_all(&self.paths.config_dir);
        for dir in [
            self.paths.managed.parent(),
            Some(self.paths.config_dir.as_path()),
            Some(self.jail.root()),
        ]
        .into_iter()
        .flatten()
        {
            if dir.is_dir() {
                let _ = watcher.watch(dir, RecursiveMode::NonRecursive);
            }
        }
        *self.watcher.lock().unwrap_or_else(|p| p.into_inner()) = Some(watcher);
        self.rewatch_project();
        Ok(())
    }

    /// `.ground-link/` may appear after start-up; watch it once it does.
    fn rewatch_project(&self) {
        let dir = self.jail.root().join(".ground-link");
        if let Some(w) = self
            .watcher
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_mut()
        {
            if dir.is_dir() && !dir.is_symlink() {
                let _ = w.watch(&dir, RecursiveMode::NonRecursive);
            }
        }
    }
}

fn read_plain(path: &Path) -> FileRead {
    match std::fs::read_to_string(path) {
        Ok(t) => FileRead::Text(t),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => FileRead::Missing,
        Err(e) => FileRead::Error(format!("cannot read: {e}")),
    }
}

fn next_layer(old: &LayerState, read: FileRead) -> LayerState {
    match read {
        FileRead::Missing => LayerState::empty(old.layer, old.path.clone()),
        FileRead::Text(text)
            if old.content.as_deref() == Some(text.as_str()) && old.error.is_none() =>
        {
            old.clone()
        }
        FileRead::Text(text) => match parse_file(&text, old.layer) {
            Ok((rules, hooks)) => LayerState {
                layer: old.layer,
                path: old.path.clone(),
                rules,
                hooks,
                sensitive: sensitive_globs(&text).unwrap_or_default(),
                content: Some(text),
                error: None,
                degraded: false,
            },
            Err(e) => keep_last_good(old, e),
        },
        FileRead::Error(e) => keep_last_good(old, e),
    }
}

fn keep_last_good(old: &LayerState, error: String) -> LayerState {
    let mut kept = old.clone();
    kept.degraded = old.content.is_none();
    kept.error = Some(error);
    kept
}

/// The file text with one more rule, keeping everything else as it was.
fn with_rule(current: Option<&str>, rule: Rule, shown: &str) -> Result<String, PolicyError> {
    let mut doc: Value = match current {
        None => serde_json::json!({"version": 1, "rules": []}),
        Some(t) => serde_json::from_str(t).map_err(|e| PolicyError::File {
            path: shown.to_string(),
            msg: format!("is not valid JSON ({e}); fix it before adding rules"),
        })?,
    };
    let rules = doc
        .as_object_mut()
        .ok_or_else(|| PolicyError::File {
            path: shown.to_string(),
            msg: "is not a JSON object".into(),
        })?
        .entry("rules")
        .or_insert_with(|| Value::Array(Vec::new()));
    let list = rules.as_array_mut().ok_or_else(|| PolicyError::File {
        path: shown.to_string(),
        msg: "\"rules\" is not an array".into(),
    })?;
    let mut rule = rule;
    let taken: std::collections::HashSet<String> = list
        .iter()
        .filter_map(|r| r.get("id").and_then(Value::as_str).map(str::to_string))
        .collect();
    if taken.contains(&rule.id) {
        let base = rule.id.clone();
        let mut n = 2;
        while taken.contains(&format!("{base}-{n}")) {
            n += 1;
        }
        rule.id = format!("{base}-{n}");
    }
    list.push(serde_json::to_value(&rule).map_err(|e| PolicyError::File {
        path: shown.to_string(),
        msg: e.to_string(),
    })?);
    let mut text = serde_json::to_string_pretty(&doc).map_err(|e| PolicyError::File {
        path: shown.to_string(),
        msg: e.to_string(),
    })?;
    text.push('\n');
    Ok(text)
}

/// Atomic write for ground-link's own files outside any sandbox (config and data dirs).
pub fn write_atomic_plain(path: &Path, bytes: &[u8]) -> Result<(), PolicyError> {
    let err = |e: std::io::Error| PolicyError::File {
        path: path.display().to_string(),
        msg: e.to_string(),
    };
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(err)?;
    let tmp = dir.join(format!(
        ".{}.tmp-{}",
        path.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
        crate::random::unique_hex(6)
    ));
    let result = (|| {
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if let Err(e) = result {
        let _ = std::fs::remove_file(&tmp);
        return Err(err(e));
    }
    Ok(())
}
