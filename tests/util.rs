//! Shared fixtures: a sandbox root in its own temp dir (outside /tmp, which `exec_cmd` may
//! write), config and data folders beside it, and an engine over them.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use ground_link::approval::{AllowOnceApprover, Approver, DenyApprover};
use ground_link::engine::{Engine, EngineConfig, parse_request};
use ground_link::paths::ConfigPaths;
use ground_link::protocol::{ApprovalMode, CallResult, Decision, SandboxMode, Source};

pub struct Fixture {
    pub base: tempfile::TempDir,
    pub root: PathBuf,
    pub paths: ConfigPaths,
}

impl Fixture {
    pub fn new() -> Fixture {
        let base = tempfile::Builder::new()
            .prefix("gl-test-")
            .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
            .unwrap();
        let root = base.path().join("root");
        std::fs::create_dir_all(&root).unwrap();
        let paths = ConfigPaths::under(base.path());
        Fixture { base, root, paths }
    }

    pub fn base(&self) -> &Path {
        self.base.path()
    }

    /// Write a file relative to the base folder (not the root), creating parents.
    pub fn put(&self, rel: &str, content: &str) -> PathBuf {
        let p = self.base().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, content).unwrap();
        p
    }

    pub fn config(&self, sandbox: SandboxMode, mode: ApprovalMode) -> EngineConfig {
        let mut c = EngineConfig::new(self.root.clone(), self.paths.clone());
        c.sandbox = sandbox;
        c.mode = mode;
        c.supervisor_exe = PathBuf::from(env!("CARGO_BIN_EXE_ground-link"));
        c
    }

    pub fn engine_with(
        &self,
        sandbox: SandboxMode,
        mode: ApprovalMode,
        approver: Arc<dyn Approver>,
    ) -> Engine {
        Engine::new(self.config(sandbox, mode), approver).unwrap()
    }

    /// workspace-write, ask mode, every question answered "allow once": whatever still fails
    /// failed because of the jail or the policy, not the person.
    pub fn permissive(&self) -> Engine {
        self.engine_with(
            SandboxMode::WorkspaceWrite,
            ApprovalMode::Ask,
            Arc::new(AllowOnceApprover),
        )
    }

    pub fn denying(&self) -> Engine {
        self.engine_with(
            SandboxMode::WorkspaceWrite,
            ApprovalMode::Ask,
            Arc::new(DenyApprover {
                reason: Some("test says no".into()),
            }),
        )
    }
}

/// Where test folders go: never under a temp dir that `exec_cmd` may always write (`/tmp`,
/// `/var/tmp`, `$TMPDIR`, `/dev/shm`), or Landlock tests could not tell inside from outside.
/// Cargo's own temp dir is used unless the checkout itself lives under one of those (a CI
/// clone in /tmp); then a folder under `$HOME/.cache` is.
pub fn scratch_parent() -> PathBuf {
    let target = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let mut temp_dirs = vec![
        PathBuf::from("/tmp"),
        PathBuf::from("/var/tmp"),
        PathBuf::from("/dev/shm"),
    ];
    if let Some(t) = std::env::var_os("TMPDIR") {
        temp_dirs.push(PathBuf::from(t));
    }
    let canonical = std::fs::canonicalize(&target).unwrap_or(target.clone());
    if !temp_dirs
        .iter()
        .any(|t| canonical.starts_with(std::fs::canonicalize(t).unwrap_or(t.clone())))
    {
        return target;
    }
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .expect("HOME must be set when the checkout is under a temp dir");
    let dir = home.join(".cache/ground-link-tests");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

pub fn call(engine: &Engine, json: &str) -> CallResult {
    let req = parse_request(json).unwrap();
    runtime().block_on(engine.call(req, Source::Cli))
}

pub fn check(engine: &Engine, json: &str) -> Decision {
    engine.check(&parse_request(json).unwrap())
}

pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// Every file under `dir` with its content, for "nothing outside changed" checks.
pub fn snapshot_tree(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    for entry in walk(dir) {
        let content = std::fs::read(&entry).unwrap_or_default();
        out.push((
            entry.strip_prefix(dir).unwrap().display().to_string(),
            content,
        ));
    }
    out.sort();
    out
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            let p = e.path();
            let ft = e.file_type().unwrap();
            if ft.is_dir() {
                out.push(p.clone());
                out.extend(walk(&p));
            } else {
                out.push(p);
            }
        }
    }
    out
}
