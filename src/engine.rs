//! The engine: one call through validation, the jail, the permission pipeline, approval, hooks,
//! the tool itself, the sanitiser and the audit log (DESIGN §5.1).
//!
//! Every host — the CLI, the bridge, the tray app — calls [`Engine::check`] or [`Engine::call`];
//! none of them decides anything itself. Mutating calls run one at a time in arrival order
//! (tokio's mutex is fair); safe reads run concurrently.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use crate::approval::Approver;
use crate::audit::{AuditConfig, AuditEntry, AuditLog, summarize_args};
use crate::format::{denied_text, sanitize, tool_result};
use crate::hooks::{HookContext, HookOutcome, HookPhase, run_hooks};
use crate::jail::{Jail, JailError};
use crate::paths::ConfigPaths;
use crate::policy::classify::{ClassifyContext, CommandAnalysis, classify};
use crate::policy::layers::Policy;
use crate::policy::rules::CompiledRule;
use crate::policy::{CallFacts, Outcome, PathFact, PolicySettings, decide};
use crate::protect::{PathClass, Protection, RootScan, ScanLimit};
use crate::protocol::{
    ApprovalAnswer, ApprovalMode, ApprovalRequest, CallRequest, CallResult, CallStatus, Decision,
    Layer, Risk, Rule, RuleAction, RuleMatch, SandboxMode, Scope, Source, Step, StepKind, ToolName,
    Verdict,
};
use crate::tools::browser::{self, BrowserFacts, Target};
use crate::tools::exec::{self, Confinement, ExecRequest};
use crate::tools::{ToolArgs, fs, parse_args, search, spec};

#[derive(Debug, Clone)]
pub struct EngineConfig {
    pub root: PathBuf,
    pub sandbox: SandboxMode,
    pub mode: ApprovalMode,
    pub approval_timeout: Duration,
    /// Upper bound for `exec_cmd`'s `timeoutSec`.
    pub exec_timeout_max: Duration,
    pub paths: ConfigPaths,
    /// The binary that runs the per-call `exec_cmd` supervisor (this one, usually).
    pub supervisor_exe: PathBuf,
    /// Watch rule files and reload them (long-running hosts); one-shot commands read once.
    pub watch: bool,
    /// Write the audit log (`check` runs nothing and writes none).
    pub audit: bool,
    pub audit_max_age_days: u32,
    pub audit_max_total_bytes: u64,
    /// Secret-looking environment variables passed on to `exec_cmd` anyway (by name).
    pub pass_env: Vec<String>,
    /// `exec_cmd` keeps the network in `workspace-write` (a person's setting; `full-access`
    /// always has it).
    pub network: bool,
    /// Use namespaces for `exec_cmd` where the kernel allows them; `false` forces the
    /// "unavailable" path (every command asks), as [`crate::isolate::NO_NAMESPACES_ENV`] does.
    pub namespaces: bool,
    /// The person's home folder: anchors `~` in commands and the run-later files
    /// (`.bashrc`, autostart, …). `$HOME` unless a test points it at a fake home.
    pub home: Option<PathBuf>,
    /// How far the walk of the root that finds secrets and run-later files for a command's
    /// namespace goes before every command asks instead (DESIGN §4).
    pub root_scan: ScanLimit,
    /// Home-relative paths a confined command sees besides
    /// [`crate::isolate::HOME_VISIBLE`] (from [`crate::isolate::HOME_VISIBLE_ENV`]).
    pub home_visible: Vec<String>,
}

impl EngineConfig {
    /// The defaults' configuration (`Settings::default()`).
    pub fn new(root: PathBuf, paths: ConfigPaths) -> EngineConfig {
        EngineConfig::with_settings(root, paths, &crate::protocol::Settings::default())
    }

    /// The configuration for the person's settings: the one mapping from settings to the
    /// engine, for the CLI and the tray app alike. Timeouts below a second count as one.
    pub fn with_settings(
        root: PathBuf,
        paths: ConfigPaths,
        settings: &crate::protocol::Settings,
    ) -> EngineConfig {
        EngineConfig {
            root,
            sandbox: settings.sandbox,
            mode: settings.mode,
            approval_timeout: Duration::from_secs(settings.approval_timeout_sec.max(1)),
            exec_timeout_max: Duration::from_secs(settings.exec_timeout_max_sec.max(1)),
            paths,
            supervisor_exe: std::env::current_exe()
                .unwrap_or_else(|_| PathBuf::from("ground-link")),
            watch: false,
            audit: true,
            audit_max_age_days: settings.audit_max_age_days,
            audit_max_total_bytes: settings.audit_max_total_mb.saturating_mul(1024 * 1024),
            home: dirs::home_dir(),
            pass_env: std::env::var(PASS_ENV_VAR)
                .map(|v| {
                    v.split(',')
                        .map(|s| s.trim().to_string())
                        .filter(|s| !s.is_empty())
                        .collect()
                })
                .unwrap_or_default(),
            network: false,
            namespaces: true,
            root_scan: ScanLimit::default(),
            home_visible: std::env::var(crate::isolate::HOME_VISIBLE_ENV)
                .map(|v| {
                    v.split(',')
                        .map(|s| s.trim().to_string())
                        .filter(|s| !s.is_empty())
                        .collect()
                })
                .unwrap_or_default(),
        }
    }
}

/// Comma-separated names of secret-looking variables `exec_cmd` may still see (DESIGN §5.2).
pub const PASS_ENV_VAR: &str = "GROUND_LINK_PASS_ENV";

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("sandbox root: {0}")]
    Root(#[from] JailError),
    #[error("audit log: {0}; ground-link does not run calls it cannot record")]
    Audit(String),
    #[error("rule files: {0}")]
    Policy(String),
}

pub struct Engine {
    config: EngineConfig,
    /// Ask or auto; starts as `config.mode` and may change while the engine runs (the tray's
    /// toggle), without ending pending approvals or conversation grants.
    mode: std::sync::RwLock<ApprovalMode>,
    jail: Arc<Jail>,
    policy: Arc<Policy>,
    audit: Option<AuditLog>,
    approver: Arc<dyn Approver>,
    mutating: tokio::sync::Mutex<()>,
    confinement: Confinement,
    home: Option<PathBuf>,
    /// bash, or `None` (then every command asks).
    shell: Option<PathBuf>,
    /// Why `exec_cmd` cannot be isolated with namespaces here, if it cannot.
    not_isolated: Option<String>,
    /// Why every `exec_cmd` asks here, if it does.
    exec_must_ask: Option<String>,
    /// The extension's end of browser calls, once a bridge has set it (DESIGN §8.3).
    browser: std::sync::RwLock<Option<Arc<dyn BrowserLink>>>,
}

/// What runs browser tools: the connected browser's extension, over native messaging. The
/// engine decides; the link only looks and acts.
#[async_trait::async_trait]
pub trait BrowserLink: Send + Sync {
    /// Look at the page a call would act on, changing nothing.
    async fn inspect(&self, tool: ToolName, args: &Map<String, Value>) -> Result<Target, String>;
    /// Act, provided the tab is still `expect` (its id and origin) — checked by the extension
    /// at the moment it acts, so a tab that navigated since the decision is not driven.
    async fn run(
        &self,
        tool: ToolName,
        args: &Map<String, Value>,
        expect: Option<(u32, String)>,
    ) -> Result<String, String>;
    /// Read a `browser://` resource (its text).
    async fn read(&self, uri: &str) -> Result<String, String>;
    /// The page tool listed as `name`, as a target: its tab, origin and hints.
    fn page_tool(&self, name: &str) -> Option<Target>;
    /// Call the page tool `name`, provided its tab still has the origin in `expect`.
    async fn run_page(
        &self,
        name: &str,
        args: &Map<String, Value>,
        expect: Option<(u32, String)>,
    ) -> Result<String, String>;
}

/// What the engine learned about a call before deciding.
struct Prepared {
    tool: ToolName,
    args: ToolArgs,
    paths: Vec<PathFact>,
    path_errors: Vec<String>,
    analysis: Option<CommandAnalysis>,
    /// For `exec_cmd`: the resolved working directory.
    cwd: Option<PathBuf>,
    /// For `exec_cmd` where commands run in namespaces: secrets and run-later files in the
    /// root, to hide (and keep read-only), and to compare with afterwards.
    scan: Option<RootScan>,
    /// Browser tools: what the page makes of the call (from the extension's look at it).
    browser: Option<BrowserCall>,
}

/// A browser call after the look at its page.
struct BrowserCall {
    facts: BrowserFacts,
    /// The arguments as the model wrote them (checked), for the extension.
    args: Map<String, Value>,
}

impl Engine {
    pub fn new(config: EngineConfig, approver: Arc<dyn Approver>) -> Result<Engine, EngineError> {
        // ground-link's own folders exist before any command runs: a folder that does not
        // exist cannot be covered in a command's namespace, and a command could plant a rule
        // file there that another engine reads while the command still runs (red team 2,
        // finding 13). Made private; where that fails, the quarantine still catches it after.
        for dir in [&config.paths.config_dir, &config.paths.data_dir] {
            use std::os::unix::fs::DirBuilderExt;
            let _ = std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir);
        }
        let programs: Vec<PathBuf> = std::env::current_exe()
            .into_iter()
            .chain([config.supervisor_exe.clone()])
            .collect();
        let protection =
            Protection::new(&config.paths, config.home.as_deref()).with_programs(&programs);
        let jail = Arc::new(Jail::new(&config.root, config.sandbox)?.with_protection(protection));
        let policy = Arc::new(Policy::load(config.paths.clone(), Arc::clone(&jail)));
        if config.watch {
            policy
                .watch()
                .map_err(|e| EngineError::Policy(e.to_string()))?;
        }
        let audit = if config.audit {
            Some(
                AuditLog::open(AuditConfig {
                    dir: config.paths.audit_dir(),
                    max_age_days: config.audit_max_age_days,
                    max_total_bytes: config.audit_max_total_bytes,
                })
                .map_err(|e| EngineError::Audit(e.to_string()))?,
            )
        } else {
            None
        };
        let confinement = match config.sandbox {
            SandboxMode::FullAccess => Confinement::NotRequested,
            _ => exec::landlock_status(),
        };
        let shell = exec::find_bash();
        let not_isolated = if config.namespaces {
            crate::isolate::status(&config.supervisor_exe).err()
        } else {
            Some("namespaces are switched off in this engine's configuration".to_string())
        };
        let exec_must_ask = match (&shell, &not_isolated) {
            (None, _) => Some(
                "bash is not installed, and the commands were classified as bash would run them"
                    .to_string(),
            ),
            (_, Some(why)) => Some(format!(
                "commands cannot be isolated ({why}), so ground-link's own state, your secrets \
                 and the network would be within their reach"
            )),
            _ => None,
        };
        Ok(Engine {
            shell,
            not_isolated,
            exec_must_ask,
            home: config.home.clone(),
            mode: std::sync::RwLock::new(config.mode),
            config,
            jail,
            policy,
            audit,
            approver,
            mutating: tokio::sync::Mutex::new(()),
            confinement,
            browser: std::sync::RwLock::new(None),
        })
    }

    /// Give the engine the browser link browser tools run through (the bridge bound to it
    /// does; a later bridge replaces it).
    pub fn set_browser(&self, link: Arc<dyn BrowserLink>) {
        *self.browser.write().unwrap_or_else(|p| p.into_inner()) = Some(link);
    }

    fn browser_link(&self) -> Option<Arc<dyn BrowserLink>> {
        self.browser
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// The approver the engine asks (also asked before pairing over native messaging).
    pub fn approver(&self) -> &Arc<dyn Approver> {
        &self.approver
    }

    pub fn jail(&self) -> &Jail {
        &self.jail
    }

    pub fn policy(&self) -> &Arc<Policy> {
        &self.policy
    }

    pub fn config(&self) -> &EngineConfig {
        &self.config
    }

    /// The approval mode now in force (the config's until [`Engine::set_mode`]).
    pub fn mode(&self) -> ApprovalMode {
        *self.mode.read().unwrap_or_else(|p| p.into_inner())
    }

    /// Switch ask/auto for the calls decided from now on; nothing else is restarted.
    pub fn set_mode(&self, mode: ApprovalMode) {
        *self.mode.write().unwrap_or_else(|p| p.into_inner()) = mode;
    }

    pub fn audit(&self) -> Option<&AuditLog> {
        self.audit.as_ref()
    }

    /// Why `exec_cmd` cannot run in namespaces here (own state, secrets and the network are
    /// then reachable, and every command asks), or `None` when it can.
    pub fn not_isolated(&self) -> Option<&str> {
        self.not_isolated.as_deref()
    }

    /// Whether `exec_cmd` writes are confined by the OS here, and if not, why.
    pub fn confinement(&self) -> &Confinement {
        &self.confinement
    }

    fn settings(&self) -> PolicySettings<'_> {
        PolicySettings {
            sandbox: self.config.sandbox,
            mode: self.mode(),
            exec_confined: matches!(self.confinement, Confinement::Landlock { .. }),
            exec_must_ask: self.exec_must_ask.as_deref(),
        }
    }

    /// The decision and why; runs nothing (DESIGN §9 `check`).
    pub fn check(&self, req: &CallRequest) -> Decision {
        match self.prepare(req) {
            Ok(p) => self.decide(&p, req).decision,
            Err(d) => d,
        }
    }

    /// The strictest class among the paths a call touches (`check` prints it as
    /// `"pathClass"`), `None` for ordinary paths.
    pub fn path_class(&self, req: &CallRequest) -> Option<PathClass> {
        let p = self.prepare(req).ok()?;
        p.paths
            .iter()
            .filter_map(|f| match f.class {
                // A secret is only a class for reads; writing one is an ordinary write.
                Some(PathClass::Sensitive) if f.write => None,
                c => c,
            })
            .min()
    }

    /// What `serve` and the tray warn about a broad root (the home folder, `/`, a folder
    /// holding ground-link's own state), with what stays protected; `None` for a plain root.
    pub fn broad_root_warning(&self) -> Option<String> {
        let mut text = self
            .jail
            .protection()?
            .broad_root_warning(self.jail.root())?;
        if let Some(why) = &self.not_isolated {
            text.push_str(&format!(
                "; but commands cannot be isolated here ({why}), so every exec_cmd asks"
            ));
        }
        Some(text)
    }

    fn prepare(&self, req: &CallRequest) -> Result<Prepared, Decision> {
        let args = parse_args(&req.name, &req.args).map_err(|e| invalid_decision(e.to_string()))?;
        let tool = args.tool();
        let mut paths = Vec::new();
        let mut path_errors = Vec::new();
        let writes = matches!(tool, ToolName::WriteFile | ToolName::EditFile);
        // list_dir shows names and sizes, never contents: a secret's name is not the secret.
        let names_only = tool == ToolName::ListDir;
        let tool_class = |c: Option<PathClass>| match c {
            Some(PathClass::Sensitive) if names_only => None,
            other => other,
        };
        for p in args.paths() {
            match self.jail.resolve_any(p) {
                Ok(r) => paths.push(PathFact {
                    shown: p.to_string(),
                    class: tool_class(self.class_of(&r.abs, writes)),
                    rel: r.rel,
                    inside: r.inside,
                    write: writes,
                    from_command: false,
                }),
                Err(JailError::Outside(_)) => paths.push(PathFact {
                    shown: p.to_string(),
                    rel: p.to_string(),
                    inside: false,
                    class: tool_class(self.class_of_unresolved(p, writes)),
                    write: writes,
                    from_command: false,
                }),
                Err(e) => path_errors.push(e.to_string()),
            }
        }
        let mut analysis = None;
        let mut cwd = None;
        let mut scan = None;
        if let ToolArgs::ExecCmd(a) = &args {
            let dir = match &a.cwd {
                Some(c) => self
                    .jail
                    .resolve_any(c)
                    .map(|r| r.abs)
                    .unwrap_or_else(|_| self.jail.root().to_path_buf()),
                None => self.jail.root().to_path_buf(),
            };
            let ctx = ClassifyContext {
                root: self.jail.root(),
                home: self.home.as_deref(),
            };
            let found = classify(&a.command, &ctx);
            for part in &found.parts {
                let mut dirs = Vec::new();
                for p in &part.paths {
                    let write = part.writes.contains(p);
                    let fact = self.command_path(&dir, p, write, &a.command);
                    if !write && fact.inside && fact.class.is_none() {
                        dirs.push(self.jail.root().join(&fact.rel));
                    }
                    paths.push(fact);
                }
                // A recursive read of a tree reads every secret in it (`grep -r KEY .`).
                if reads_recursively(part) {
                    if dirs.is_empty() {
                        dirs.push(dir.clone());
                    }
                    for d in dirs.iter().filter(|d| d.is_dir()) {
                        if let Some(fact) = self.secret_in_tree(d) {
                            paths.push(fact);
                        }
                    }
                }
            }
            analysis = Some(found);
            cwd = Some(dir);
            scan = self.scan_root();
            if let Some(why) = scan.as_ref().and_then(|s| s.incomplete.clone()) {
                // Secrets the walk did not reach would be within the command's reach: ask.
                paths.push(PathFact {
                    shown: format!(
                        "the whole sandbox root (it cannot be checked for secrets to hide from \
                         the command: {why}; a project folder as the root avoids this)"
                    ),
                    rel: ".".to_string(),
                    inside: true,
                    class: Some(PathClass::Sensitive),
                    write: false,
                    from_command: true,
                });
            }
        }
        Ok(Prepared {
            tool,
            args,
            paths,
            path_errors,
            analysis,
            cwd,
            scan,
            browser: None,
        })
    }

    /// A path argument of a command, resolved from the command's working directory.
    fn command_path(&self, cwd: &Path, p: &str, write: bool, command: &str) -> PathFact {
        // The classifier resolves `~` and `cd` into host paths; messages may only repeat a
        // path the model wrote itself.
        let shown = if command.contains(p) {
            p.to_string()
        } else {
            "a path outside the sandbox root".to_string()
        };
        let outside = PathFact {
            shown,
            rel: p.to_string(),
            inside: false,
            class: self.class_of_unresolved(p, write),
            write,
            from_command: true,
        };
        if matches!(
            p,
            "/dev/null" | "/dev/stdout" | "/dev/stderr" | "/dev/stdin"
        ) {
            return PathFact {
                inside: true,
                rel: p.to_string(),
                ..outside
            };
        }
        // A path built from variables or substitutions cannot be known before it runs.
        if p.contains('$') || p.contains('`') || p.contains('\0') {
            return outside;
        }
        let joined = if Path::new(p).is_absolute() {
            PathBuf::from(p)
        } else {
            cwd.join(p)
        };
        match self.jail.resolve_any(&joined.to_string_lossy()) {
            Ok(r) if r.inside => PathFact {
                class: self.class_of(&r.abs, write),
                shown: r.rel.clone(),
                rel: r.rel,
                inside: true,
                ..outside
            },
            Ok(r) => PathFact {
                class: self.class_of(&r.abs, write),
                rel: r.rel,
                ..outside
            },
            Err(_) => outside,
        }
    }

    /// The walk of the root a command's namespace is built from (see [`Protection::scan_root`]),
    /// where commands run in namespaces.
    fn scan_root(&self) -> Option<RootScan> {
        if self.not_isolated.is_some() {
            return None;
        }
        let prot = self.jail.protection()?;
        Some(prot.scan_root(self.jail.root(), self.config.root_scan))
    }

    /// The first secret or own-state file in a tree a command reads recursively, as a path
    /// fact; a tree too large to check counts as holding one (fail closed).
    fn secret_in_tree(&self, dir: &Path) -> Option<PathFact> {
        let fact = |shown: String, rel: String, class| PathFact {
            shown,
            rel,
            inside: true,
            class: Some(class),
            write: false,
            from_command: true,
        };
        let limit = ScanLimit {
            entries: TREE_SCAN_LIMIT,
            ..self.config.root_scan
        };
        let scan = self.jail.protection()?.scan(dir, self.jail.root(), limit);
        if let Some(why) = scan.incomplete {
            let rel = self.jail.display(dir);
            return Some(fact(
                format!("{rel} (not checked for secrets: {why})"),
                rel,
                PathClass::Sensitive,
            ));
        }
        // A secret asks; own state (hidden from the command anyway) denies only a read of a
        // tree that holds no secret to ask about.
        let (path, class) = scan
            .secrets
            .first()
            .map(|p| (p, PathClass::Sensitive))
            .or_else(|| scan.own_state.first().map(|p| (p, PathClass::OwnState)))?;
        let rel = self.jail.display(path);
        Some(fact(rel.clone(), rel, class))
    }

    /// The class of a resolved absolute path (the one matcher, DESIGN §4).
    fn class_of(&self, abs: &Path, write: bool) -> Option<PathClass> {
        let class = self.jail.class(abs);
        // A protected file that also holds secrets (`.git/config` with a token in a remote
        // URL, `~/.ssh/config`): writing it is protected, reading it is a secret read.
        match (class, self.jail.protection()) {
            (Some(PathClass::Protected), Some(p))
                if !write && p.holds_secrets(abs, self.jail.root()) =>
            {
                Some(PathClass::Sensitive)
            }
            _ => class,
        }
    }

    /// The class of a path the jail could not resolve (`~/…`, a path outside): resolved
    /// lexically against the home folder, so `~/.config/ground-link/token` is still own state.
    fn class_of_unresolved(&self, p: &str, write: bool) -> Option<PathClass> {
        let abs = match (p.strip_prefix('~'), &self.home) {
            (Some(rest), Some(home)) if rest.is_empty() || rest.starts_with('/') => {
                home.join(rest.trim_start_matches('/'))
            }
            (Some(_), _) => {
                return crate::protect::sensitive_path(Path::new(p))
                    .then_some(PathClass::Sensitive);
            }
            (None, _) => PathBuf::from(p),
        };
        let abs = crate::protect::normalize(&abs);
        self.class_of(&abs, write)
    }

    /// The matcher this engine uses (for the exec namespace and the broad-root warning).
    pub fn protection(&self) -> Option<&Arc<Protection>> {
        self.jail.protection()
    }

    fn decide(&self, p: &Prepared, req: &CallRequest) -> Outcome {
        let session = req.session.as_deref();
        let grants: Vec<CompiledRule> = session
            .map(|s| self.policy.session_grants(s))
            .unwrap_or_default();
        let facts = CallFacts {
            tool: p.tool,
            paths: &p.paths,
            path_errors: &p.path_errors,
            analysis: p.analysis.as_ref(),
            session,
            provenance: req.provenance,
            browser: p.browser.as_ref().map(|b| &b.facts),
        };
        let base = spec(p.tool).map(|s| s.risk).unwrap_or(Risk::Dangerous);
        decide(
            &facts,
            base,
            &self.policy.snapshot(),
            &grants,
            &self.settings(),
        )
    }

    /// Run one call to the end: decide, ask, hook, run, sanitise, audit.
    pub async fn call(&self, req: CallRequest, source: Source) -> CallResult {
        self.call_until(req, source, CancellationToken::new()).await
    }

    /// [`Engine::call`] that `cancel` can end: a running command's whole tree is killed (and
    /// the call still ends audited, saying so); a browser call stops waiting for the browser.
    /// Withdrawing a question still waiting for the person is the approver's side (the
    /// bridge's broker does it with the same token).
    pub async fn call_until(
        &self,
        req: CallRequest,
        source: Source,
        cancel: CancellationToken,
    ) -> CallResult {
        let started = Instant::now();
        let call_id = req.call_id.clone().unwrap_or_else(new_call_id);
        let mut record = Record {
            answer: None,
            note: None,
        };
        let (status, output, truncated, untrusted, decision) = self
            .run_call(&req, &call_id, source, &mut record, &cancel)
            .await;
        let output = sanitize(&output);
        let name = ToolName::from_alias(&req.name)
            .map(|t| t.as_str().to_string())
            .unwrap_or_else(|| req.name.clone());
        let formatted = tool_result(&name, status, &output, untrusted);
        let duration_ms = started.elapsed().as_millis() as u64;
        if let Some(audit) = &self.audit {
            let entry = AuditEntry {
                time: String::new(),
                source,
                client: req.client.clone(),
                session: req.session.clone(),
                call_id: call_id.clone(),
                tool: name.clone(),
                origin: None,
                url: None,
                args: summarize_args(&req.args),
                decision: decision.clone(),
                answer: record.answer,
                duration_ms,
                status,
                output_bytes: output.len() as u64,
                note: record.note,
            };
            if let Err(e) = audit.append(&entry) {
                tracing::error!("audit log append failed: {e}");
            }
        }
        CallResult {
            status,
            output,
            formatted,
            call_id,
            decision,
            duration_ms,
            truncated,
        }
    }

    async fn run_call(
        &self,
        req: &CallRequest,
        call_id: &str,
        source: Source,
        record: &mut Record,
        cancel: &CancellationToken,
    ) -> (CallStatus, String, bool, bool, Option<Decision>) {
        let mut prepared = match self.prepare(req) {
            Ok(p) => p,
            Err(d) => return (CallStatus::Error, d.reason.clone(), false, false, Some(d)),
        };
        if let ToolArgs::Browser(args) = &prepared.args {
            // The page decides as much as the tool: look at it first (nothing changes yet).
            // A resource is read from the active tab: looked at as a snapshot of it.
            let (tool, look_args) = match args.resource() {
                Some(_) => (ToolName::SnapshotPage, Map::new()),
                None => (prepared.tool, req.args.clone()),
            };
            // A destination no tool may go to is refused here, without asking the browser.
            let looked = match (args.never_destination(), self.browser_link()) {
                (Some(url), _) => Ok(Target {
                    destination: Some(url),
                    ..Target::default()
                }),
                // A page tool is judged on what its page registered; the extension checks the
                // tab still holds that page when it runs.
                (None, Some(link)) if args.page().is_some() => {
                    let name = args.page().map(|p| p.name.as_str()).unwrap_or_default();
                    link.page_tool(name).ok_or_else(|| {
                        format!(
                            "no page tool {name:?} now: its page has gone or changed; list the \
                             tools again (tools/list)"
                        )
                    })
                }
                (None, Some(link)) => link.inspect(tool, &look_args).await,
                (None, None) => Err(NO_BROWSER.to_string()),
            };
            match looked {
                Ok(target) => {
                    prepared.browser = Some(BrowserCall {
                        facts: browser::facts(args, &target),
                        args: req.args.clone(),
                    })
                }
                Err(e) => return (CallStatus::Error, e, false, true, None),
            }
        }
        let session = req.session.as_deref();
        let outcome = self.decide(&prepared, req);
        let tool = prepared.tool;
        let mut decision = outcome.decision.clone();
        let mut network_granted = false;
        match decision.decision {
            Verdict::Allow => {}
            Verdict::Deny => {
                return (
                    CallStatus::Denied,
                    denied_text(tool.as_str(), Some(&decision.reason), false),
                    false,
                    false,
                    Some(decision),
                );
            }
            Verdict::Ask => {
                let request = self.approval_request(req, call_id, source, &prepared, &outcome);
                let network_off = request.network_off;
                let answer = match tokio::time::timeout(
                    self.config.approval_timeout,
                    self.approver.ask(request),
                )
                .await
                {
                    Ok(a) => a,
                    Err(_) => {
                        let secs = self.config.approval_timeout.as_secs();
                        record.answer = Some("timeout".to_string());
                        let reason = format!("no answer within {secs} s");
                        return (
                            CallStatus::Denied,
                            denied_text(tool.as_str(), Some(&reason), true),
                            false,
                            false,
                            Some(decision),
                        );
                    }
                };
                match answer {
                    ApprovalAnswer::Deny { reason } => {
                        record.answer = Some(match &reason {
                            Some(r) => format!("deny: {r}"),
                            None => "deny".to_string(),
                        });
                        return (
                            CallStatus::Denied,
                            denied_text(tool.as_str(), reason.as_deref(), true),
                            false,
                            false,
                            Some(decision),
                        );
                    }
                    ApprovalAnswer::Allow {
                        scope,
                        mut rule,
                        network,
                    } => {
                        // The network switch counts only where the call would be without it.
                        let network = network && network_off;
                        record.answer = Some(format!(
                            "allow {}{}",
                            scope_name(scope),
                            if network { " with network" } else { "" }
                        ));
                        if let (true, Some(r)) = (network, rule.as_mut()) {
                            // A remembered answer keeps the network for what it covers.
                            r.network = ToolName::from_alias(&r.tool) == Some(ToolName::ExecCmd);
                        }
                        network_granted = network;
                        if let Some(note) = self.remember(scope, rule, session, &outcome) {
                            record.note = Some(note);
                        }
                        // The rules may have changed while the person looked (a new deny rule,
                        // a revoked file): a deny now still wins over the answer.
                        let again = self.decide(&prepared, req).decision;
                        if again.decision == Verdict::Deny {
                            return (
                                CallStatus::Denied,
                                denied_text(tool.as_str(), Some(&again.reason), false),
                                false,
                                false,
                                Some(again),
                            );
                        }
                        decision.steps.push(Step {
                            step: StepKind::Default,
                            outcome: Some(Verdict::Allow),
                            detail: format!("approved: allow {}", scope_name(scope)),
                        });
                    }
                }
            }
        }

        let hooks = self.policy.snapshot().hooks();
        let root = self.jail.root().to_path_buf();
        if !hooks.pre_tool_use.is_empty() {
            let ctx = HookContext {
                tool,
                call_id,
                args: &req.args,
                root: &root,
                output: None,
            };
            if let HookOutcome::Block { hook_id, reason } =
                run_hooks(HookPhase::Pre, &hooks.pre_tool_use, &ctx).await
            {
                record.note = Some(format!("blocked by PreToolUse hook {hook_id:?}"));
                let why = format!("blocked by PreToolUse hook {hook_id:?}: {reason}");
                return (
                    CallStatus::Denied,
                    denied_text(tool.as_str(), Some(&why), false),
                    false,
                    false,
                    Some(decision),
                );
            }
        }

        let mutating = match tool {
            ToolName::WriteFile | ToolName::EditFile => true,
            ToolName::ExecCmd => decision.risk != Risk::Safe,
            _ => false,
        };
        let _turn = if mutating {
            Some(self.mutating.lock().await)
        } else {
            None
        };
        let safe = decision.risk == Risk::Safe;
        let by_rule = decision.rule.is_some() && decision.decision == Verdict::Allow;
        let grants = Grants {
            git_safe: safe,
            secrets_by_rule: by_rule,
            network: outcome.network || network_granted,
        };
        let (status, output, truncated) = self
            .run_tool(prepared, grants, call_id, &mut record.note, cancel)
            .await;
        drop(_turn);

        if !hooks.post_tool_use.is_empty() {
            let ctx = HookContext {
                tool,
                call_id,
                args: &req.args,
                root: &root,
                output: Some(&output),
            };
            if let HookOutcome::Block { hook_id, reason } =
                run_hooks(HookPhase::Post, &hooks.post_tool_use, &ctx).await
            {
                record.note = Some(format!("output withheld by PostToolUse hook {hook_id:?}"));
                let text = format!(
                    "the tool ran, but PostToolUse hook {hook_id:?} withheld its output: {reason}"
                );
                return (CallStatus::Error, text, false, false, Some(decision));
            }
        }
        // A browser's errors can quote the page (what its tool threw): delimited like its text.
        let untrusted =
            status != CallStatus::Error || tool == ToolName::ExecCmd || tool.is_browser();
        (status, output, truncated, untrusted, Some(decision))
    }

    /// Remember a scoped allow. Returns a note when the rule could not be kept as asked.
    fn remember(
        &self,
        scope: Scope,
        rule: Option<Rule>,
        session: Option<&str>,
        outcome: &Outcome,
    ) -> Option<String> {
        if scope == Scope::Once || !outcome.scopes.contains(&scope) {
            return (scope != Scope::Once).then(|| {
                format!(
                    "scope {} is not offered for this call; allowed once",
                    scope_name(scope)
                )
            });
        }
        let rule = rule?;
        let rule = Rule {
            action: RuleAction::Allow,
            ..rule
        };
        match scope {
            Scope::Once => None,
            Scope::Session => {
                let session = session?;
                match CompiledRule::compile(rule, Layer::Session) {
                    Ok(c) => {
                        self.policy.grant_session(session, c);
                        None
                    }
                    Err(e) => Some(format!("rule not kept: {e}")),
                }
            }
            Scope::Project => match self.policy.append_rule(Layer::Project, rule.clone()) {
                Ok(true) => None,
                Ok(false) => {
                    // The file has changes the person has not reviewed: keep the new rule for
                    // this conversation, and leave trusting the file to the settings window.
                    if let (Some(s), Ok(c)) = (session, CompiledRule::compile(rule, Layer::Session))
                    {
                        self.policy.grant_session(s, c);
                    }
                    Some("rule appended to the project file, which has unreviewed changes and stays untrusted until you trust it".to_string())
                }
                Err(e) => Some(format!("rule not kept: {e}")),
            },
            Scope::Global => match self.policy.append_rule(Layer::Global, rule) {
                Ok(_) => None,
                Err(e) => Some(format!("rule not kept: {e}")),
            },
        }
    }

    fn approval_request(
        &self,
        req: &CallRequest,
        call_id: &str,
        source: Source,
        p: &Prepared,
        outcome: &Outcome,
    ) -> ApprovalRequest {
        let diff = match &p.args {
            ToolArgs::WriteFile(a) => fs::planned_write(&self.jail, a).ok().map(|(old, new)| {
                let old = old
                    .map(|o| String::from_utf8_lossy(&o).into_owned())
                    .unwrap_or_default();
                fs::diff_text(&a.path, &old, &String::from_utf8_lossy(&new))
            }),
            ToolArgs::EditFile(a) => fs::planned_edit(&self.jail, a)
                .ok()
                .map(|(old, new, _)| fs::diff_text(&a.path, &old, &new)),
            _ => None,
        };
        ApprovalRequest {
            call_id: call_id.to_string(),
            tool: p.tool,
            args: req.args.clone(),
            reason: req.reason.clone(),
            risk: outcome.decision.risk,
            decision: outcome.decision.clone(),
            command_parts: p
                .analysis
                .as_ref()
                .map(|a| a.parts.iter().map(|x| x.text.clone()).collect())
                .unwrap_or_default(),
            diff,
            page: p.browser.as_ref().map(|b| b.facts.summary.clone()),
            session: req.session.clone(),
            source,
            client: req.client.clone(),
            proposed_rule: proposed_rule(p),
            scopes: outcome.scopes.clone(),
            timeout_ms: self.config.approval_timeout.as_millis() as u64,
            network_off: p.tool == ToolName::ExecCmd
                && self.config.sandbox != SandboxMode::FullAccess
                && !self.config.network
                && !outcome.network,
        }
    }

    /// The namespaces a command runs in (DESIGN §4): own state, secrets (except the files this
    /// call was allowed to read by a rule naming them) and the session's sockets hidden in
    /// every mode; in `workspace-write` and `read-only` also run-later files read-only, private
    /// temp folders and no network.
    fn isolation(&self, p: &Prepared, grants: Grants) -> Option<crate::isolate::Isolation> {
        if self.not_isolated.is_some() {
            return None;
        }
        let prot = self.jail.protection()?;
        let root = self.jail.root();
        let confined = self.config.sandbox != SandboxMode::FullAccess;
        // ground-link's data folder always exists and is always covered: one mount that
        // marks the namespace, by which `ground-link` knows it runs inside a command
        // (`isolate::inside_exec`), whatever else exists.
        let _ = std::fs::create_dir_all(&self.config.paths.data_dir);
        let mut hide: Vec<PathBuf> = prot
            .own_state()
            .iter()
            .filter(|o| o.exists())
            .cloned()
            .collect();
        hide.extend(
            crate::isolate::session_sockets()
                .into_iter()
                .filter(|s| s.exists()),
        );
        let mut read_only = Vec::new();
        let mut reveal = Vec::new();
        // Secrets a rule naming them let through stay visible (the person wrote that rule
        // on purpose), and only they: the folder around a named file stays covered. Every
        // other secret is covered, also after "allow once": the parsed paths are not all
        // a program may open (`python3 -c …`).
        let named: Vec<PathBuf> = p
            .paths
            .iter()
            .filter(|f| grants.secrets_by_rule && f.sensitive_read())
            .map(|f| {
                if Path::new(&f.rel).is_absolute() {
                    PathBuf::from(&f.rel)
                } else {
                    root.join(&f.rel)
                }
            })
            .collect();
        let secrets = prot
            .hidden_in_exec()
            .into_iter()
            .chain(p.scan.iter().flat_map(|s| s.secrets.iter().cloned()));
        for h in secrets {
            if named.iter().any(|n| h.starts_with(n)) {
                continue;
            }
            reveal.extend(named.iter().filter(|n| n.starts_with(&h)).cloned());
            hide.push(h);
        }
        // full-access may write run-later files (the person is asked each time, DESIGN §4).
        if confined {
            read_only = prot.read_only_in_exec(root);
            read_only.extend(p.scan.iter().flat_map(|s| s.protected.iter().cloned()));
            // Host listeners inside the root (an agent's, docker's) are covered like the
            // ones in the temp folders.
            hide.extend(p.scan.iter().flat_map(|s| s.sockets.iter().cloned()));
        }
        // Confined, the home folder is an allow-list unless the root is the home folder or
        // holds it: the root, the tool folders, and the secrets a rule named.
        let home_cover = match prot.home() {
            Some(home) if confined && !home.starts_with(root) => {
                let mut visible = crate::isolate::home_visible(home, &self.config.home_visible);
                visible.extend(named.iter().filter(|n| n.starts_with(home)).cloned());
                // Only where no link leads elsewhere: a `~/.local/bin` made a link to `~`
                // (or to `/run/user/…`) by an earlier command would show what is covered.
                visible.retain(|v| std::fs::canonicalize(v).is_ok_and(|c| c == *v));
                Some(crate::isolate::HomeCover {
                    home: home.to_path_buf(),
                    visible,
                })
            }
            _ => None,
        };
        // Mounts follow symlinks, so decide on real paths: a `.aws` the model made into a link
        // to `/` must not cover the root (or everything).
        let real = |v: Vec<PathBuf>| -> Vec<PathBuf> {
            v.into_iter()
                .filter_map(|p| std::fs::canonicalize(p).ok())
                .collect()
        };
        let mut hide = real(hide);
        let mut read_only = real(read_only);
        let mut reveal = real(reveal);
        reveal.sort();
        reveal.dedup();
        // A folder that holds the root cannot be covered without hiding the root itself.
        hide.retain(|h| !root.starts_with(h));
        read_only.retain(|r| !root.starts_with(r) && !hide.iter().any(|h| r.starts_with(h)));
        hide.sort();
        hide.dedup();
        read_only.sort();
        read_only.dedup();
        Some(crate::isolate::Isolation {
            hide,
            read_only,
            reveal,
            network: !confined || self.config.network || grants.network,
            private_temp: confined,
            root: root.to_path_buf(),
            home_cover,
        })
    }

    async fn run_tool(
        &self,
        p: Prepared,
        grants: Grants,
        call_id: &str,
        note: &mut Option<String>,
        cancel: &CancellationToken,
    ) -> (CallStatus, String, bool) {
        if let ToolArgs::ExecCmd(a) = &p.args {
            return self.run_exec(&p, a, grants, call_id, note, cancel).await;
        }
        if let Some(call) = &p.browser {
            let (resource, page) = match &p.args {
                ToolArgs::Browser(a) => (a.resource(), a.page()),
                _ => (None, None),
            };
            let ran = match self.browser_link() {
                Some(link) => tokio::select! {
                    r = async {
                        match (resource, page) {
                            (Some(uri), _) => link.read(uri).await,
                            (None, Some(pg)) => {
                                link.run_page(&pg.name, &pg.args, call.facts.expect.clone()).await
                            }
                            (None, None) => {
                                link.run(p.tool, &call.args, call.facts.expect.clone()).await
                            }
                        }
                    } => r,
                    () = cancel.cancelled() => Err(
                        "cancelled: ground-link stopped waiting for the browser (what it had \
                         started may still finish; take a snapshot_page to see)"
                            .to_string(),
                    ),
                },
                None => Err(NO_BROWSER.to_string()),
            };
            return match ran {
                Ok(text) => (CallStatus::Success, text, false),
                Err(e) => (CallStatus::Error, e, false),
            };
        }
        // A read is capped at 256 KiB of page cache: cheaper inline than a hop to the blocking
        // pool (which costs more than the read). Walks and writes may take long: off the runtime.
        if matches!(p.args, ToolArgs::ReadFile(_)) {
            return match run_file_tool(&self.jail, &p.args) {
                Ok((text, truncated)) => (CallStatus::Success, text, truncated),
                Err(e) => (CallStatus::Error, e, false),
            };
        }
        let jail = Arc::clone(&self.jail);
        let joined = tokio::task::spawn_blocking(move || run_file_tool(&jail, &p.args)).await;
        match joined {
            Ok(Ok((text, truncated))) => (CallStatus::Success, text, truncated),
            Ok(Err(e)) => (CallStatus::Error, e, false),
            Err(e) => (
                CallStatus::Error,
                format!("the tool stopped unexpectedly: {e}"),
                false,
            ),
        }
    }

    async fn run_exec(
        &self,
        p: &Prepared,
        a: &crate::tools::ExecCmdArgs,
        grants: Grants,
        call_id: &str,
        note: &mut Option<String>,
        cancel: &CancellationToken,
    ) -> (CallStatus, String, bool) {
        let timeout = a
            .timeout_sec
            .map(Duration::from_secs)
            .unwrap_or(exec::DEFAULT_TIMEOUT)
            .min(self.config.exec_timeout_max)
            .max(Duration::from_secs(1));
        let confine_writes = match self.config.sandbox {
            SandboxMode::FullAccess => None,
            SandboxMode::WorkspaceWrite => Some(vec![self.jail.root().to_path_buf()]),
            SandboxMode::ReadOnly => Some(Vec::new()),
        };
        let isolation = self.isolation(p, grants);
        // full-access may create run-later files (asked each time, DESIGN §4); the other
        // modes may not, and a mount cannot stop what does not exist yet.
        let confined = self.config.sandbox != SandboxMode::FullAccess;
        let before = match (&isolation, &p.scan, self.jail.protection()) {
            (Some(_), Some(scan), Some(prot)) if confined => {
                Some(crate::quarantine::Before::new(prot, self.jail.root(), scan))
            }
            _ => None,
        };
        let request = ExecRequest {
            command: a.command.clone(),
            cwd: p
                .cwd
                .clone()
                .unwrap_or_else(|| self.jail.root().to_path_buf()),
            timeout,
            confine_writes,
            supervisor_exe: self.config.supervisor_exe.clone(),
            max_output: exec::MAX_OUTPUT,
            shell: self
                .shell
                .clone()
                .unwrap_or_else(|| PathBuf::from("/bin/sh")),
            isolation,
            git_safe: grants.git_safe,
            pass_env: self.config.pass_env.clone(),
            cancel: cancel.clone(),
        };
        let ran = exec::run(request).await;
        // The command's whole tree is gone by now (its PID namespace died with its shell), so
        // nothing of it is left to recreate what is moved away.
        let quarantined = before
            .map(|b| self.quarantine_created(&b, call_id))
            .unwrap_or_default();
        if !quarantined.is_empty() {
            *note = Some(format!(
                "moved what the command created in protected places: {}",
                quarantined
                    .iter()
                    .map(|(_, audit)| audit.as_str())
                    .collect::<Vec<_>>()
                    .join("; ")
            ));
        }
        match ran {
            Ok(mut out) => {
                out.not_isolated = self.not_isolated.clone();
                out.quarantined = quarantined.into_iter().map(|(shown, _)| shown).collect();
                let (text, truncated) = out.render();
                let status = if out.timed_out {
                    CallStatus::Timeout
                } else if out.exit_code == Some(0)
                    && out.leftover_processes == 0
                    && out.quarantined.is_empty()
                {
                    CallStatus::Success
                } else {
                    CallStatus::Error
                };
                (status, text, truncated)
            }
            Err(e) => {
                let mut text = format!("could not run the command: {e}");
                for (shown, _) in &quarantined {
                    text.push_str(&format!("\n[{shown}]"));
                }
                (CallStatus::Error, text, false)
            }
        }
    }

    /// Moves run-later files and own state the command created (they did not exist before,
    /// so no mount could keep them read-only) into `<data dir>/quarantine/<call id>`.
    /// Returns, per path, what the model reads (root-relative, no host path) and what the
    /// audit line keeps (where it went).
    fn quarantine_created(
        &self,
        before: &crate::quarantine::Before,
        call_id: &str,
    ) -> Vec<(String, String)> {
        use crate::quarantine::{Fate, created_since, move_away};
        let Some(prot) = self.jail.protection() else {
            return Vec::new();
        };
        let root = self.jail.root();
        let created = created_since(prot, root, before, self.config.root_scan);
        let dir = self.config.paths.data_dir.join("quarantine").join(call_id);
        move_away(&created, &dir)
            .into_iter()
            .map(|(path, fate)| {
                let shown = self.jail.display(&path);
                let (said, kept) = match &fate {
                    Fate::Moved(to) => (
                        "moved it into ground-link's quarantine folder".to_string(),
                        format!("{} -> {}", path.display(), to.display()),
                    ),
                    Fate::Deleted => (
                        "deleted it (it could not be moved)".to_string(),
                        format!("{} deleted", path.display()),
                    ),
                    Fate::Left(e) => (
                        format!("could NOT remove it ({e}); check it yourself"),
                        format!("{} left in place: {e}", path.display()),
                    ),
                };
                (
                    format!(
                        "ground-link: the command created {shown:?}, a place that makes code \
                         run later or holds ground-link's own state, which commands may not \
                         create; ground-link {said}"
                    ),
                    kept,
                )
            })
            .collect()
    }
}

/// Entries a recursive-read check looks at before it gives up and asks.
const TREE_SCAN_LIMIT: usize = 20_000;

/// Whether a simple command reads whole trees: recursive flags, or programs that always do.
fn reads_recursively(part: &crate::policy::classify::CommandPart) -> bool {
    let Some(program) = part.effective.first() else {
        return false;
    };
    let name = program.rsplit('/').next().unwrap_or(program);
    if matches!(name, "rg" | "ag" | "ack" | "tar" | "zip" | "rsync" | "scp") {
        return true;
    }
    // These list names (`ls -R`, `find`, `du`, `tree`) or read only what git tracks; no file's
    // contents reach the model through them (programs they run are not safe anyway).
    if matches!(name, "ls" | "find" | "du" | "tree" | "git") {
        return false;
    }
    part.effective.iter().skip(1).any(|w| {
        w == "--recursive"
            || w == "-r"
            || w == "-R"
            || (w.starts_with('-')
                && !w.starts_with("--")
                && w.len() > 2
                && w[1..].chars().all(|c| c.is_ascii_alphabetic())
                && w.contains(['r', 'R']))
            || w.starts_with("--directories=recurse")
            || w == "-a" && name == "cp"
    })
}

fn run_file_tool(jail: &Jail, args: &ToolArgs) -> Result<(String, bool), String> {
    let text = |r: Result<fs::ToolText, fs::FsError>| {
        r.map(|t| (t.text, t.truncated)).map_err(|e| e.to_string())
    };
    let found = |r: Result<search::SearchOutput, search::SearchError>| {
        r.map(|o| (o.render(), o.truncated))
            .map_err(|e| e.to_string())
    };
    match args {
        ToolArgs::ListDir(a) => text(fs::list_dir(jail, a)),
        ToolArgs::ReadFile(a) => text(fs::read_file(jail, a)),
        ToolArgs::WriteFile(a) => text(fs::write_file(jail, a)),
        ToolArgs::EditFile(a) => text(fs::edit_file(jail, a)),
        ToolArgs::Glob(a) => found(search::glob(jail, a)),
        ToolArgs::Grep(a) => found(search::grep(jail, a)),
        ToolArgs::ExecCmd(_) => Err("exec_cmd runs through the supervisor".to_string()),
        ToolArgs::Browser(_) => Err("browser tools run in the extension".to_string()),
    }
}

/// What the decision allowed beyond running the command.
#[derive(Debug, Clone, Copy)]
struct Grants {
    /// Classified `safe`: git runs with config that cannot execute code.
    git_safe: bool,
    /// Allowed by a rule: secrets that rule names stay visible in the mount namespace.
    secrets_by_rule: bool,
    /// An allow rule with `"network": true` covers the command.
    network: bool,
}

struct Record {
    answer: Option<String>,
    note: Option<String>,
}

fn invalid_decision(reason: String) -> Decision {
    Decision {
        decision: Verdict::Deny,
        risk: Risk::Safe,
        reason: reason.clone(),
        rule: None,
        steps: vec![Step {
            step: StepKind::Validate,
            outcome: Some(Verdict::Deny),
            detail: reason,
        }],
    }
}

fn scope_name(scope: Scope) -> &'static str {
    match scope {
        Scope::Once => "once",
        Scope::Session => "session",
        Scope::Project => "project",
        Scope::Global => "global",
    }
}

/// What a browser call answers when no browser is there to run it.
const NO_BROWSER: &str = "no browser is connected: open Chrome with the ground-link extension, \
     switch on browser tools in its popup, and make sure the native host is installed \
     (`ground-link install-native-host`)";

pub fn new_call_id() -> String {
    format!("c-{}", crate::random::unique_hex(8))
}

/// The narrowest useful rule for a scoped allow (DESIGN §5.4): for commands the program and
/// its subcommand (`npm install`), for file tools the tool narrowed to the folder.
fn proposed_rule(p: &Prepared) -> Rule {
    let tool = p.tool;
    let (id, matches) = match (&p.analysis, p.paths.iter().find(|x| !x.from_command)) {
        (Some(a), _) => {
            let words = a.parts.first().map(|x| x.words.clone()).unwrap_or_default();
            let mut prefix: Vec<String> = words.iter().take(1).cloned().collect();
            if let Some(sub) = words.get(1) {
                let plain = sub
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == ':')
                    && !sub.starts_with('-');
                if plain {
                    prefix.push(sub.clone());
                }
            }
            let prefix = prefix.join(" ");
            (
                format!("allow-{}", slug(&prefix)),
                RuleMatch {
                    command_prefix: Some(prefix).filter(|p| !p.is_empty()),
                    ..RuleMatch::default()
                },
            )
        }
        (None, Some(path)) => {
            let glob = match path.rel.rsplit_once('/') {
                Some((dir, _)) if path.inside => format!("{dir}/**"),
                _ => path.rel.clone(),
            };
            (
                format!("allow-{}-{}", tool.as_str(), slug(&glob)),
                RuleMatch {
                    path_glob: Some(glob),
                    ..RuleMatch::default()
                },
            )
        }
        // A browser call: this tool on this origin (a rule for every site is the person's
        // own edit to make).
        (None, None) => match p.browser.as_ref().and_then(|b| b.facts.origin.clone()) {
            Some(origin) => (
                format!("allow-{}-{}", tool.as_str(), slug(&origin)),
                RuleMatch {
                    origin: Some(origin),
                    ..RuleMatch::default()
                },
            ),
            None => (format!("allow-{}", tool.as_str()), RuleMatch::default()),
        },
    };
    Rule {
        id,
        action: RuleAction::Allow,
        tool: tool.as_str().to_string(),
        matches,
        description: None,
        examples: None,
        network: false,
    }
}

fn slug(s: &str) -> String {
    let mut out: String = s
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    while out.contains("--") {
        out = out.replace("--", "-");
    }
    out.trim_matches('-').chars().take(48).collect()
}

/// Parse `--json` text or a request body into a [`CallRequest`], with a message that says
/// what was wrong.
pub fn parse_request(text: &str) -> Result<CallRequest, String> {
    let value: Value =
        serde_json::from_str(text).map_err(|e| format!("the call is not valid JSON: {e}"))?;
    if !value.is_object() {
        return Err("the call must be a JSON object like {\"name\":\"read_file\",\"args\":{\"path\":\"README.md\"}}".into());
    }
    if value.get("name").is_none() {
        return Err(
            "the call has no \"name\"; say which tool to run, e.g. {\"name\":\"list_dir\"}".into(),
        );
    }
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        format!("the call's field `{path}` is wrong: {}", e.into_inner())
    })
}
