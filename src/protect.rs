//! The one protected-path matcher (DESIGN §4): which paths are ground-link's own state, which
//! make code run later, and which hold secrets.
//!
//! Guarantees:
//! - The jail ([`crate::jail::Resolved::is_protected`]), the engine (every tool path and every
//!   path parsed out of an `exec_cmd` command) and the command classifier all ask this module;
//!   there is no second list.
//! - Own state is computed from the same [`ConfigPaths`] the engine loads its rules from
//!   (`XDG_CONFIG_HOME` / `XDG_DATA_HOME` overrides included), never from hard-coded strings,
//!   and is matched on resolved absolute paths, so a root of `/`, the home folder or any folder
//!   holding the config cannot reach it by another spelling.
//! - Classes are matched on path components, never substrings (`.envrc` matches, `envrc.md`
//!   does not).

use std::collections::HashSet;
use std::ffi::{OsStr, OsString};
use std::path::{Component, Path, PathBuf};
use std::sync::RwLock;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::paths::ConfigPaths;

/// What a path is, for the permission pipeline. Strictest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum PathClass {
    /// ground-link's own rules, trust store, audit log, token, app store, native-host
    /// manifests: no tool reads or writes them, whatever the answer.
    OwnState,
    /// Writing it makes code run later (`.git/hooks`, `.envrc`, `.bashrc`, autostart, …) or
    /// changes a project's rules: read-only in `workspace-write`, always asked in `full-access`.
    Protected,
    /// Credentials and keys: reading asks, and only a rule naming the file or "allow once"
    /// lets it through.
    Sensitive,
}

impl PathClass {
    pub fn as_str(self) -> &'static str {
        match self {
            PathClass::OwnState => "ownState",
            PathClass::Protected => "protected",
            PathClass::Sensitive => "sensitive",
        }
    }
}

/// Folders and files inside any project that make code run later or hold its rules.
/// Matched as path components anywhere below the root.
/// Git hooks (`.git`, and `.githooks` — the usual `core.hooksPath`), direnv, commit-hook
/// managers (husky, pre-commit, lefthook), mise's hooks and env, dev containers: each runs
/// what it names when the person commits, enters the folder or opens it.
const PROJECT_DIRS: &[&str] = &[
    ".git",
    ".ground-link",
    ".husky",
    ".githooks",
    ".devcontainer",
];
const PROJECT_FILES: &[&str] = &[
    ".envrc",
    ".pre-commit-config.yaml",
    "lefthook.yml",
    "lefthook.yaml",
    ".lefthook.yml",
    ".lefthook.yaml",
    "mise.toml",
    ".mise.toml",
    "mise.local.toml",
    ".devcontainer.json",
];
/// Two-component files (parent, name) protected anywhere: editor tasks, launch configurations
/// and workspace settings that name programs the editor starts.
const PROJECT_PAIRS: &[(&str, &str)] = &[
    (".vscode", "tasks.json"),
    (".vscode", "launch.json"),
    (".vscode", "settings.json"),
    (".mise", "config.toml"),
];
/// Name endings protected anywhere in a project (`*.code-workspace` holds tasks and settings).
const PROJECT_SUFFIXES: &[&str] = &[".code-workspace"];

/// Home-relative places that make code run later: shell start-up files, session and service
/// autostart, git's global config (hooksPath, pager, fsmonitor), ssh's forced commands.
const RUN_LATER_HOME: &[&str] = &[
    ".bashrc",
    ".bash_profile",
    ".bash_login",
    ".bash_logout",
    ".profile",
    ".zshrc",
    ".zshenv",
    ".zprofile",
    ".zlogin",
    ".zlogout",
    ".kshrc",
    ".mkshrc",
    ".tcshrc",
    ".cshrc",
    ".login",
    ".xprofile",
    ".xinitrc",
    ".xsession",
    ".xsessionrc",
    ".pam_environment",
    ".gitconfig",
    ".config/git",
    ".config/fish",
    ".config/autostart",
    ".config/systemd/user",
    ".local/share/systemd/user",
    ".config/environment.d",
    ".ssh/authorized_keys",
    ".ssh/authorized_keys2",
    ".ssh/rc",
    ".ssh/config",
    // Read by interactive shells, editors, pagers, debuggers and REPLs when they start.
    ".bash_aliases",
    ".bashrc.d",
    ".inputrc",
    // less reads these at start-up; their `#env` section sets `LESSOPEN`, a program less runs
    // (your own `less` in a terminal does not run in secure mode).
    ".config/lesskey",
    ".lesskey",
    ".less",
    ".vimrc",
    ".vim",
    ".config/nvim",
    ".tmux.conf",
    ".config/tmux",
    ".gdbinit",
    ".config/gdb",
    ".psqlrc",
    ".Rprofile",
    ".irbrc",
    ".pryrc",
    ".ipython",
    ".config/direnv",
    ".local/share/bash-completion",
    ".local/share/applications",
    // Programs found on the PATH before the system's, and Python's start-up `.pth` files.
    ".local/bin",
    "bin",
    ".local/lib",
    // Configuration that names programs to run: cargo's aliases and runners, gradle's init
    // scripts, a git include next to the global config.
    ".cargo/config.toml",
    ".cargo/config",
    ".gradle/init.d",
    ".gradle/init.gradle",
    ".gitconfig.local",
];

/// System places that make code run later (crontabs): protected wherever the root is.
const RUN_LATER_SYSTEM: &[&str] = &["/var/spool/cron", "/etc/cron.d", "/etc/crontab"];

/// Component names that hold credentials wherever they are (folders: everything below too).
const SENSITIVE_NAMES: &[&str] = &[
    ".ssh",
    ".gnupg",
    ".aws",
    ".azure",
    ".kube",
    ".password-store",
    ".netrc",
    ".git-credentials",
    ".npmrc",
    ".pypirc",
    ".pgpass",
    ".vault-token",
    ".bash_history",
    ".zsh_history",
    ".python_history",
    ".psql_history",
    ".mysql_history",
    ".env",
    // MCP clients' configurations hold bearer tokens (`Authorization` headers, `env`).
    ".mcp.json",
    ".claude.json",
    ".my.cnf",
    ".s3cfg",
    ".boto",
    ".htpasswd",
    ".dev.vars",
    ".yarnrc.yml",
    "credentials.json",
    "local.settings.json",
    "terraform.tfvars",
    "secrets.yaml",
    "secrets.yml",
    "secrets.json",
    "secrets.toml",
    "secrets.ini",
    "secrets.conf",
];

/// Name endings of files that hold keys, credentials or infrastructure state.
const SENSITIVE_SUFFIXES: &[&str] = &[
    ".pem",
    ".key",
    ".env",
    ".p12",
    ".pfx",
    ".jks",
    ".keystore",
    ".ppk",
    ".kdbx",
    ".ovpn",
    ".tfstate",
    ".tfvars",
];

/// Name beginnings of such files (`service-account-prod.json`, `.env.production`).
const SENSITIVE_PREFIXES: &[&str] = &["service-account", ".env."];

/// What editors and people append to a copy (`id_rsa.bak`, `.env~`, `#.env#`, `.#.env`): a
/// copy of a secret is a secret.
const COPY_SUFFIXES: &[&str] = &[
    "~", ".bak", ".old", ".orig", ".save", ".swp", ".swo", ".tmp", ".backup", ".copy", ".1",
];

/// Consecutive components that hold credentials wherever they appear.
const SENSITIVE_SEQUENCES: &[&str] = &[
    ".docker/config.json",
    ".cargo/credentials.toml",
    ".cargo/credentials",
    ".config/gcloud",
    ".config/gh",
    ".config/google-chrome",
    ".config/chromium",
    ".config/BraveSoftware",
    ".config/microsoft-edge",
    ".mozilla",
    ".local/share/keyrings",
    ".cursor/mcp.json",
    ".codex/config.toml",
    ".codex/auth.json",
    ".claude/.credentials.json",
    ".gemini/oauth_creds.json",
    ".config/github-copilot",
    ".config/git/credentials",
    ".config/rclone/rclone.conf",
    ".config/containers/auth.json",
    ".config/sops",
    ".terraform.d/credentials.tfrc.json",
    ".gem/credentials",
    ".pulumi/credentials.json",
    ".kaggle/kaggle.json",
    ".cache/huggingface/token",
    ".huggingface/token",
    ".local/share/fish/fish_history",
    ".android/adbkey",
    ".streamlit/secrets.toml",
    ".config/Claude/claude_desktop_config.json",
    "Library/Keychains",
];

/// Absolute system places that hold secrets.
const SENSITIVE_SYSTEM: &[&str] = &[
    "/etc/shadow",
    "/etc/gshadow",
    "/etc/sudoers",
    "/etc/sudoers.d",
    "/etc/ssh",
    "/root",
    "/proc/kcore",
];

/// `.env.*` files that by convention hold no secrets (templates committed to the repo).
const ENV_TEMPLATES: &[&str] = &[".env.example", ".env.sample", ".env.template", ".env.dist"];

/// Browsers read native-messaging host manifests from these folders (below the config home);
/// a manifest names a program the browser starts, so every one of them is ground-link's to
/// write and nobody else's.
const NATIVE_HOST_DIRS: &[&str] = &[
    "google-chrome/NativeMessagingHosts",
    "google-chrome-beta/NativeMessagingHosts",
    "chromium/NativeMessagingHosts",
    "BraveSoftware/Brave-Browser/NativeMessagingHosts",
    "microsoft-edge/NativeMessagingHosts",
    "vivaldi/NativeMessagingHosts",
];

/// The tray app's Tauri identifier: its config and data folders hold the app's store.
const APP_IDENTIFIER: &str = "app.ground-link.tray";

/// The matcher: own-state locations for one [`ConfigPaths`], the home folder, and extra
/// sensitive globs from the rule files.
#[derive(Debug)]
pub struct Protection {
    own: Vec<PathBuf>,
    home: Option<PathBuf>,
    /// The last component of every own-state and run-later place (`None` when one has none):
    /// a path can only lie below a place if it has that place's name among its components, so
    /// most paths of a tree walk skip the component-wise prefix tests (they were most of the
    /// walk's cost).
    place_names: Option<HashSet<OsString>>,
    /// The rule files' `"sensitive"` globs, replaced on every reload
    /// ([`Protection::set_extra_sensitive`]): the jail, the tree walks, the classifier and the
    /// exec namespace all read them here, so one reload reaches every one of them.
    extra_sensitive: RwLock<Option<globset::GlobSet>>,
    /// Files inside the root that the hooks in force name (`sh scripts/check.sh`): hooks run
    /// as the person, outside any command's isolation, so these are run-later files.
    hook_files: RwLock<Vec<PathBuf>>,
}

impl Protection {
    /// Own state for `paths`; `home` anchors the run-later files (shell start-up files etc.).
    pub fn new(paths: &ConfigPaths, home: Option<&Path>) -> Protection {
        let mut own = own_state(paths);
        // Match what the jail resolves: canonical paths where they exist (a config folder
        // reached through a symlinked home must still match).
        let canon: Vec<PathBuf> = own
            .iter()
            .filter_map(|p| std::fs::canonicalize(p).ok())
            .collect();
        own.extend(canon);
        own.sort();
        own.dedup();
        let home = home.map(|h| std::fs::canonicalize(h).unwrap_or_else(|_| h.to_path_buf()));
        let run_later = home
            .iter()
            .flat_map(|h| RUN_LATER_HOME.iter().map(move |r| h.join(r)))
            .chain(RUN_LATER_SYSTEM.iter().map(PathBuf::from));
        let place_names = own
            .iter()
            .cloned()
            .chain(run_later)
            .map(|p| p.file_name().map(OsStr::to_os_string))
            .collect();
        Protection {
            own,
            home,
            place_names,
            extra_sensitive: RwLock::new(None),
            hook_files: RwLock::new(Vec::new()),
        }
    }

    /// Also own state: the programs ground-link runs outside any command's isolation — its own
    /// executable and the exec supervisor. A command or a tool that replaced one would run
    /// its code unconfined at the next call.
    pub fn with_programs(mut self, programs: &[PathBuf]) -> Protection {
        for p in programs {
            let canon = std::fs::canonicalize(p).unwrap_or_else(|_| p.clone());
            for q in [p.clone(), canon] {
                if let (Some(names), Some(n)) = (self.place_names.as_mut(), q.file_name()) {
                    names.insert(n.to_os_string());
                }
                self.own.push(q);
            }
        }
        self.own.sort();
        self.own.dedup();
        self
    }

    /// False only when `abs` cannot lie at or below any own-state or run-later place.
    fn may_be_a_place(&self, abs: &Path) -> bool {
        match &self.place_names {
            Some(names) => abs.components().any(|c| match c {
                Component::Normal(n) => names.contains(n),
                _ => false,
            }),
            None => true,
        }
    }

    /// Replaces the rule files' sensitive globs (matched like `pathGlob`: root-relative inside
    /// the root, absolute outside, and against the file name); `None` clears them.
    pub fn set_extra_sensitive(&self, set: Option<globset::GlobSet>) {
        *self
            .extra_sensitive
            .write()
            .unwrap_or_else(|p| p.into_inner()) = set;
    }

    /// Replaces the files the hooks in force name (absolute, resolved), on every reload.
    pub fn set_hook_files(&self, files: Vec<PathBuf>) {
        *self.hook_files.write().unwrap_or_else(|p| p.into_inner()) = files;
    }

    fn is_hook_file(&self, abs: &Path) -> bool {
        self.hook_files
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .any(|f| f == abs)
    }

    /// What a person choosing `root` should know when it is broad: it holds the home folder
    /// or ground-link's own state, or it is `/` (DESIGN §4 allows it, with a warning that
    /// explains what stays protected). `None` for an ordinary project folder.
    pub fn broad_root_warning(&self, root: &Path) -> Option<String> {
        let holds_state = self.own.iter().any(|o| o.starts_with(root));
        let holds_home = self.home.as_deref().is_some_and(|h| h.starts_with(root));
        if !holds_state && !holds_home && root != Path::new("/") {
            return None;
        }
        Some(format!(
            "the sandbox root {} is broad (it holds your home folder or ground-link's own \
             state); ground-link's own state is denied to every tool, secrets (.ssh, .aws, \
             .env, keys…) are asked about every time, run-later files (.bashrc, autostart, \
             .git/hooks) stay read-only, and commands run with those hidden; a dedicated \
             project folder is safer",
            root.display()
        ))
    }

    /// The own-state locations (absolute), for the exec mount namespace and for warnings.
    pub fn own_state(&self) -> &[PathBuf] {
        &self.own
    }

    pub fn home(&self) -> Option<&Path> {
        self.home.as_deref()
    }

    /// The class of an absolute, resolved path; `root` is the sandbox root (for the project
    /// classes, which only apply below it).
    pub fn class(&self, abs: &Path, root: &Path) -> Option<PathClass> {
        if self.is_own_state(abs) {
            return Some(PathClass::OwnState);
        }
        if let Ok(rel) = abs.strip_prefix(root) {
            if project_protected(rel) {
                return Some(PathClass::Protected);
            }
        }
        if self.run_later(abs) {
            return Some(PathClass::Protected);
        }
        // Inside the root the table is matched below it (a root under `/root` is not all
        // secret); outside, on the whole path.
        let inside = abs.strip_prefix(root).ok();
        if self.sensitive_at(abs, inside) {
            return Some(PathClass::Sensitive);
        }
        None
    }

    /// Whether a protected path also holds secrets, so that reading it is a secret read:
    /// `.git/config` (tokens in remote URLs, `http.extraHeader`), `~/.ssh/config`, anything the
    /// sensitive table names.
    pub fn holds_secrets(&self, abs: &Path, root: &Path) -> bool {
        let git_config = abs.file_name().is_some_and(|n| n == "config")
            && abs
                .parent()
                .and_then(Path::file_name)
                .is_some_and(|n| n == ".git");
        git_config || self.sensitive_at(abs, abs.strip_prefix(root).ok())
    }

    pub fn is_own_state(&self, abs: &Path) -> bool {
        self.may_be_a_place(abs) && self.own.iter().any(|o| abs.starts_with(o))
    }

    /// Whether `abs` holds (or is a folder below which lie) secrets; `rel` is its path below
    /// the sandbox root when it is inside.
    fn sensitive_at(&self, abs: &Path, rel: Option<&Path>) -> bool {
        let at = rel.unwrap_or(abs);
        if sensitive_path(at) {
            return true;
        }
        let extra = self
            .extra_sensitive
            .read()
            .unwrap_or_else(|p| p.into_inner());
        match extra.as_ref() {
            Some(set) => {
                set.is_match(at) || abs.file_name().is_some_and(|n| set.is_match(Path::new(n)))
            }
            None => false,
        }
    }

    fn run_later(&self, abs: &Path) -> bool {
        if self.is_hook_file(abs) {
            return true;
        }
        if !self.may_be_a_place(abs) {
            return false;
        }
        if RUN_LATER_SYSTEM.iter().any(|s| abs.starts_with(s)) {
            return true;
        }
        let Some(home) = &self.home else {
            return false;
        };
        match abs.strip_prefix(home) {
            Ok(rel) => RUN_LATER_HOME.iter().any(|r| rel.starts_with(r)),
            Err(_) => false,
        }
    }

    /// Folders (existing, absolute) that hold secrets or own state directly below `dir`'s
    /// well-known places: what the exec mount namespace hides. Bounded: only the fixed
    /// locations under the home folder, plus own state.
    pub fn hidden_in_exec(&self) -> Vec<PathBuf> {
        let mut out: Vec<PathBuf> = self.own.iter().filter(|p| p.exists()).cloned().collect();
        if let Some(home) = &self.home {
            for name in SENSITIVE_NAMES.iter().chain(SENSITIVE_SEQUENCES) {
                let p = home.join(name);
                if p.exists() {
                    out.push(p);
                }
            }
        }
        out.sort();
        out.dedup();
        out
    }

    /// Run-later places that exist (absolute): mounted read-only for `exec_cmd`.
    pub fn read_only_in_exec(&self, root: &Path) -> Vec<PathBuf> {
        let mut out: Vec<PathBuf> = self
            .hook_files
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .filter(|f| f.exists())
            .cloned()
            .collect();
        if let Some(home) = &self.home {
            for r in RUN_LATER_HOME {
                let p = home.join(r);
                if p.exists() {
                    out.push(p);
                }
            }
        }
        for dir in PROJECT_DIRS.iter().chain(PROJECT_FILES) {
            let p = root.join(dir);
            if p.exists() {
                out.push(p);
            }
        }
        for (parent, name) in PROJECT_PAIRS {
            let p = root.join(parent).join(name);
            if p.exists() {
                out.push(p);
            }
        }
        out
    }

    /// One capped walk of the sandbox root (ripgrep's `ignore` walker, no ignore files: a
    /// `.env` is usually git-ignored): every secret in it (hidden from commands), and every
    /// protected or own-state path that exists (read-only or hidden for commands, and the
    /// "before" that [`crate::quarantine`] compares with).
    pub fn scan_root(&self, root: &Path, limit: ScanLimit) -> RootScan {
        self.scan(root, root, limit)
    }

    /// [`Protection::scan_root`] of the tree at `start`, below the sandbox `root`. A classified
    /// folder is reported, not entered; `start` itself is neither.
    pub fn scan(&self, start: &Path, root: &Path, limit: ScanLimit) -> RootScan {
        let mut scan = RootScan::default();
        let started = Instant::now();
        let walker = ignore::WalkBuilder::new(start)
            .standard_filters(false)
            .follow_links(false)
            .build();
        let mut skip: Option<PathBuf> = None;
        for (seen, entry) in walker.flatten().enumerate() {
            if seen >= limit.entries || started.elapsed() >= limit.time {
                scan.incomplete = Some(format!(
                    "it has more than {} entries (or took over {} ms) to check for secrets \
                     and run-later files",
                    limit.entries,
                    limit.time.as_millis()
                ));
                break;
            }
            let path = entry.path();
            if entry.depth() == 0 || skip.as_deref().is_some_and(|s| path.starts_with(s)) {
                continue;
            }
            // A listening Unix socket is a way out however little the command may write:
            // the namespace covers every one the walk finds.
            if entry.file_type().is_some_and(|t| {
                use std::os::unix::fs::FileTypeExt;
                t.is_socket()
            }) {
                scan.sockets.push(path.to_path_buf());
                continue;
            }
            let Some(class) = self.class(path, root) else {
                continue;
            };
            let found = match class {
                PathClass::Sensitive => &mut scan.secrets,
                PathClass::OwnState => &mut scan.own_state,
                PathClass::Protected => &mut scan.protected,
            };
            found.push(path.to_path_buf());
            // Everything below a classified folder has its class; the walk need not enter it.
            if entry.file_type().is_some_and(|t| t.is_dir()) {
                skip = Some(path.to_path_buf());
            }
        }
        scan
    }

    /// The project's run-later names (`.git`, `.envrc`, `.husky`, `.ground-link`,
    /// `.vscode/tasks.json`) anywhere under `root`, topmost only: the walk after a command,
    /// which only looks for what a command may have created (the fixed places are checked
    /// apart), so it matches names alone and costs less than [`Protection::scan_root`].
    pub fn project_protected_in(&self, root: &Path, limit: ScanLimit) -> Vec<PathBuf> {
        let started = Instant::now();
        let mut found: Vec<PathBuf> = Vec::new();
        let mut skip: Option<PathBuf> = None;
        let walker = ignore::WalkBuilder::new(root)
            .standard_filters(false)
            .follow_links(false)
            .build();
        for (seen, entry) in walker.flatten().enumerate() {
            // Past the cap the rest is not looked at; what was found is still moved.
            if seen >= limit.entries || started.elapsed() >= limit.time {
                break;
            }
            let path = entry.path();
            if skip.as_deref().is_some_and(|s| path.starts_with(s)) {
                continue;
            }
            // Own state is not the command's (the quarantine itself lives there): not entered.
            if self.is_own_state(path) {
                skip = Some(path.to_path_buf());
                continue;
            }
            if path.strip_prefix(root).is_ok_and(project_protected) {
                found.push(path.to_path_buf());
                skip = Some(path.to_path_buf());
            }
        }
        found
    }

    /// The fixed run-later and own-state places, whether they exist or not: the home folder's
    /// start-up and autostart files, ground-link's own folders, the browsers' native-host
    /// folders, and the project's run-later names at the root. One that does not exist cannot
    /// be mounted over; a command that creates it is caught after it ran
    /// ([`crate::quarantine`]).
    pub fn fixed_places(&self, root: &Path) -> Vec<PathBuf> {
        let mut places: Vec<PathBuf> = self.own.clone();
        if let Some(home) = &self.home {
            places.extend(RUN_LATER_HOME.iter().map(|r| home.join(r)));
        }
        places.extend(
            PROJECT_DIRS
                .iter()
                .chain(PROJECT_FILES)
                .map(|d| root.join(d)),
        );
        places.extend(PROJECT_PAIRS.iter().map(|(p, n)| root.join(p).join(n)));
        places.sort();
        places.dedup();
        places
    }

    /// Why `abs` is denied, for the model and the person: names the path as shown.
    pub fn own_state_reason(shown: &str) -> String {
        format!(
            "{shown:?} is ground-link's own state (its rules, trust store, audit log, token or \
             settings); no tool may read or change it, whatever the answer; only the settings \
             window or the `ground-link` CLI changes it"
        )
    }
}

/// What [`Protection::scan_root`] found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RootScan {
    /// Files and folders of the sensitive class (built-in and the rule files' globs).
    pub secrets: Vec<PathBuf>,
    /// Protected (run-later) paths that exist.
    pub protected: Vec<PathBuf>,
    /// ground-link's own state inside the walked tree.
    pub own_state: Vec<PathBuf>,
    /// Unix socket files (a host program's listener: docker, an agent, an ssh master).
    pub sockets: Vec<PathBuf>,
    /// Why the walk stopped before the end (then the command asks: fail closed).
    pub incomplete: Option<String>,
}

/// How far [`Protection::scan_root`] walks before it gives up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScanLimit {
    pub entries: usize,
    pub time: Duration,
}

impl Default for ScanLimit {
    /// 50,000 entries or 2 s: a project with its dependencies fits, a home folder does not.
    fn default() -> Self {
        ScanLimit {
            entries: 50_000,
            time: Duration::from_secs(2),
        }
    }
}

/// Every place ground-link keeps state, for one set of config paths.
fn own_state(paths: &ConfigPaths) -> Vec<PathBuf> {
    let mut out = vec![paths.config_dir.clone(), paths.data_dir.clone()];
    // The managed file's folder (`/etc/ground-link`): only the administrator writes it.
    match paths.managed.parent() {
        Some(dir) if dir.file_name() == Some(OsStr::new("ground-link")) => {
            out.push(dir.to_path_buf())
        }
        _ => out.push(paths.managed.clone()),
    }
    // The config and data homes the engine's own folders live in (XDG overrides included).
    let config_home = paths.config_dir.parent().map(Path::to_path_buf);
    let data_home = paths.data_dir.parent().map(Path::to_path_buf);
    for home in [&config_home, &data_home].into_iter().flatten() {
        out.push(home.join(APP_IDENTIFIER));
    }
    if let Some(ch) = &config_home {
        for d in NATIVE_HOST_DIRS {
            out.push(ch.join(d));
        }
    }
    // The native-messaging socket folder, wherever the bridge puts it (under
    // `$XDG_RUNTIME_DIR`, or the state folder where that is unset): a command that reached the
    // socket would have a tokenless way to the engine.
    if let Ok(dir) = crate::bridge::native::socket_dir() {
        out.push(dir);
    }
    // The app's diagnostic log: what went wrong, with paths and client names in it.
    if let Some(dir) = crate::logging::log_dir() {
        out.push(dir);
    }
    out
}

/// Root-relative: `.git/`, `.ground-link/`, `.husky/`, `.envrc`, `.vscode/tasks.json`.
pub fn project_protected(rel: &Path) -> bool {
    let mut prev: Option<&OsStr> = None;
    for c in rel.components() {
        let Component::Normal(n) = c else {
            continue;
        };
        if PROJECT_DIRS.iter().any(|d| n == *d) || PROJECT_FILES.iter().any(|f| n == *f) {
            return true;
        }
        let name = n.to_string_lossy();
        if PROJECT_SUFFIXES
            .iter()
            .any(|s| name.len() > s.len() && name.ends_with(s))
        {
            return true;
        }
        if PROJECT_PAIRS
            .iter()
            .any(|(p, f)| n == *f && prev.is_some_and(|x| x == *p))
        {
            return true;
        }
        prev = Some(n);
    }
    false
}

/// The built-in sensitive table, on any path (absolute or relative).
pub fn sensitive_path(p: &Path) -> bool {
    if SENSITIVE_SYSTEM.iter().any(|s| p.starts_with(s)) {
        return true;
    }
    if p.starts_with("/proc")
        && p.file_name()
            .is_some_and(|f| f == "environ" || f == "mem" || f == "cmdline")
    {
        return true;
    }
    let names: Vec<&OsStr> = p
        .components()
        .filter_map(|c| match c {
            Component::Normal(n) => Some(n),
            _ => None,
        })
        .collect();
    for n in &names {
        if SENSITIVE_NAMES.iter().any(|s| n == s) {
            return true;
        }
    }
    if let Some(last) = names.last() {
        let name = last.to_string_lossy();
        let name = uncopied(&name);
        if SENSITIVE_NAMES.contains(&name) {
            return true;
        }
        if ENV_TEMPLATES.contains(&name) {
            return false;
        }
        // Private keys: `*.pem`, `*.key`, `id_rsa`-style names (public `id_rsa.pub` is not).
        if SENSITIVE_SUFFIXES
            .iter()
            .any(|s| name.len() > s.len() && name.ends_with(s))
            || SENSITIVE_PREFIXES.iter().any(|p| name.starts_with(p))
            || (name.starts_with("id_") && !name.contains('.'))
        {
            return true;
        }
    }
    SENSITIVE_SEQUENCES.iter().any(|seq| {
        let want: Vec<&str> = seq.split('/').collect();
        names
            .windows(want.len())
            .any(|w| w.iter().zip(&want).all(|(a, b)| *a == *b))
    })
}

/// The name a copy was made from: `id_rsa.bak` → `id_rsa`, `#.env#` → `.env`, `.#.env` →
/// `.env`, `.env~` → `.env` (repeatedly: `.env.bak~`).
fn uncopied(name: &str) -> &str {
    let mut n = name;
    loop {
        let before = n;
        if let Some(inner) = n.strip_prefix('#').and_then(|x| x.strip_suffix('#')) {
            n = inner;
        }
        if let Some(rest) = n.strip_prefix(".#") {
            n = rest;
        }
        for s in COPY_SUFFIXES {
            if n.len() > s.len() {
                if let Some(rest) = n.strip_suffix(s) {
                    n = rest;
                }
            }
        }
        if n == before {
            return n;
        }
    }
}

/// Lexically normalises a path: removes `.` and empty components and applies `..` (never
/// above `/`).
pub fn normalize(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::RootDir => out.push("/"),
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() && !out.has_root() {
                    out.push("..");
                }
            }
            Component::Normal(n) => out.push(n),
            Component::Prefix(pre) => out.push(pre.as_os_str()),
        }
    }
    if out.as_os_str().is_empty() {
        out.push(".");
    }
    out
}

/// Whether a rule's path glob names one file (its last component has no wildcard): the only
/// kind of allow rule that opens a sensitive path.
pub fn glob_names_a_file(glob: &str) -> bool {
    let last = glob.rsplit('/').next().unwrap_or(glob);
    !last.is_empty() && !last.contains(['*', '?', '[', '{'])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn project_protected_table() {
        for (rel, want) in [
            (".git/config", true),
            (".git/hooks/pre-commit", true),
            ("sub/.git/HEAD", true),
            (".ground-link/permissions.json", true),
            (".envrc", true),
            ("a/.envrc", true),
            (".vscode/tasks.json", true),
            (".vscode/settings.json", true),
            (".vscode/extensions.json", false),
            (".husky/pre-push", true),
            (".githooks/pre-commit", true),
            (".pre-commit-config.yaml", true),
            ("lefthook.yml", true),
            ("mise.toml", true),
            (".devcontainer/devcontainer.json", true),
            ("app.code-workspace", true),
            (".code-workspace", false),
            ("docs/pre-commit.md", false),
            ("src/git.rs", false),
            (".gitignore", false),
            ("envrc", false),
            ("tasks.json", false),
        ] {
            assert_eq!(project_protected(Path::new(rel)), want, "{rel}");
        }
    }

    #[test]
    fn sensitive_table() {
        for (p, want) in [
            (".ssh/id_ed25519", true),
            ("a/.ssh", true),
            (".aws/credentials", true),
            (".netrc", true),
            ("proj/.env", true),
            ("proj/.env.local", true),
            ("proj/.env.example", false),
            ("keys/server.pem", true),
            ("tls/server.key", true),
            ("id_rsa", true),
            ("id_rsa.pub", false),
            ("src/id_utils.py", false),
            (".cargo/credentials.toml", true),
            (".cargo/config.toml", false),
            (".pgpass", true),
            (".vault-token", true),
            (".docker/config.json", true),
            (".docker/daemon.json", false),
            (".config/gcloud/creds", true),
            ("/etc/shadow", true),
            ("/etc/passwd", false),
            ("README.md", false),
            ("environment.md", false),
            // The red team's list: names, endings and copies.
            ("prod.env", true),
            ("secrets.env", true),
            (".env~", true),
            ("#.env#", true),
            (".#.env", true),
            ("proj/.env.bak~", true),
            ("proj/.env.example.bak", false),
            ("id_rsa.bak", true),
            ("id_ed25519.old", true),
            ("server.pem.bak", true),
            ("tls.key.orig", true),
            (".netrc~", true),
            (".git-credentials.bak", true),
            (".npmrc.bak", true),
            ("cert.p12", true),
            ("cert.pfx", true),
            ("release.keystore", true),
            ("putty.ppk", true),
            ("vault.kdbx", true),
            ("work.ovpn", true),
            ("terraform.tfstate", true),
            ("terraform.tfvars", true),
            ("credentials.json", true),
            ("service-account.json", true),
            ("service-account-prod.json", true),
            ("secrets.yaml", true),
            (".streamlit/secrets.toml", true),
            (".dev.vars", true),
            (".htpasswd", true),
            ("local.settings.json", true),
            (".yarnrc.yml", true),
            (".codex/auth.json", true),
            (".claude/.credentials.json", true),
            (".gemini/oauth_creds.json", true),
            (".config/github-copilot/apps.json", true),
            (".config/git/credentials", true),
            (".my.cnf", true),
            (".s3cfg", true),
            (".boto", true),
            (".config/rclone/rclone.conf", true),
            (".terraform.d/credentials.tfrc.json", true),
            (".config/containers/auth.json", true),
            (".gem/credentials", true),
            (".pulumi/credentials.json", true),
            (".kaggle/kaggle.json", true),
            (".cache/huggingface/token", true),
            (".local/share/fish/fish_history", true),
            (".android/adbkey", true),
            (".config/sops/age/keys.txt", true),
            // Near misses stay readable.
            ("src/environment.rs", false),
            ("docs/secrets.md", false),
            ("docs/keys.md", false),
            ("src/key.rs", false),
            ("package.json", false),
            ("config.old", false),
            (".env.example", false),
        ] {
            assert_eq!(sensitive_path(Path::new(p)), want, "{p}");
        }
    }

    #[test]
    fn the_native_socket_folder_is_own_state_wherever_it_is() {
        // Where XDG_RUNTIME_DIR is unset it lives under the state folder, which a command in a
        // home-folder root could otherwise reach: a tokenless way to the engine.
        let paths = ConfigPaths::under(Path::new("/nonexistent-gl-base"));
        let dir = crate::bridge::native::socket_dir().unwrap();
        assert!(own_state(&paths).contains(&dir), "{dir:?}");
        let log = crate::logging::log_dir().unwrap();
        assert!(own_state(&paths).contains(&log), "{log:?}");
    }

    #[test]
    fn own_state_follows_config_paths() {
        let base = Path::new("/nonexistent-gl-base");
        let prot = Protection::new(&ConfigPaths::under(base), Some(base));
        for (p, want) in [
            (
                "/nonexistent-gl-base/config/ground-link/permissions.json",
                true,
            ),
            ("/nonexistent-gl-base/config/ground-link/token", true),
            ("/nonexistent-gl-base/data/ground-link/audit/x.jsonl", true),
            (
                "/nonexistent-gl-base/data/app.ground-link.tray/settings.json",
                true,
            ),
            (
                "/nonexistent-gl-base/config/google-chrome/NativeMessagingHosts/x.json",
                true,
            ),
            ("/nonexistent-gl-base/config/ground-link2/x", false),
            ("/nonexistent-gl-base/proj/x", false),
        ] {
            assert_eq!(prot.is_own_state(Path::new(p)), want, "{p}");
        }
        let root = Path::new("/nonexistent-gl-base");
        assert_eq!(
            prot.class(Path::new("/nonexistent-gl-base/.bashrc"), root),
            Some(PathClass::Protected)
        );
        assert_eq!(
            prot.class(Path::new("/nonexistent-gl-base/proj/.bashrc"), root),
            None
        );
        assert_eq!(
            prot.class(
                Path::new("/nonexistent-gl-base/.config/autostart/x.desktop"),
                root
            ),
            Some(PathClass::Protected)
        );
    }

    #[test]
    fn rule_globs_that_name_a_file() {
        assert!(glob_names_a_file(".ssh/id_ed25519"));
        assert!(glob_names_a_file("**/.env"));
        assert!(!glob_names_a_file("**"));
        assert!(!glob_names_a_file(".ssh/*"));
        assert!(!glob_names_a_file("**/.env*"));
        assert!(!glob_names_a_file("keys/{a,b}.pem"));
    }
}
