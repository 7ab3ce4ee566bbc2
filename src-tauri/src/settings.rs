//! The app's own settings (persisted with `tauri-plugin-store`) and the checks on them. Rules
//! and hooks are not here: they live in the engine's own files, so the CLI and the app agree.

use std::path::{Path, PathBuf};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use ground_link::engine::EngineConfig;
use ground_link::paths::ConfigPaths;
use ground_link::protocol::Settings;

/// Key under which the store keeps [`AppSettings`].
pub const STORE_KEY: &str = "app";
/// The store's file name (in the app's data folder).
pub const STORE_FILE: &str = "settings.json";

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
pub struct AppSettings {
    /// The sandbox root; `None` until the person picks one.
    pub root: Option<PathBuf>,
    /// Sandbox mode, approval mode, port, approval timeout, language, audit retention.
    pub core: Settings,
    /// Start the app when the person logs in.
    pub autostart: bool,
}

/// What the settings window says about a proposed sandbox root.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RootCheck {
    /// The folder as it will be used (absolute, symlinks resolved).
    pub resolved: Option<String>,
    /// Why it cannot be used; `None` when it can.
    pub error: Option<String>,
    /// Things worth a second look (the home folder, `/`).
    pub warnings: Vec<String>,
}

/// [`check_root`], and what stays protected in a broad root (the words `serve` and the tray
/// use, from the core).
pub fn check_root_protected(path: &Path, home: Option<&Path>, paths: &ConfigPaths) -> RootCheck {
    let mut check = check_root(path, home);
    if let Some(resolved) = &check.resolved {
        let home = home.map(|h| std::fs::canonicalize(h).unwrap_or_else(|_| h.to_path_buf()));
        if let Some(w) = ground_link::protect::Protection::new(paths, home.as_deref())
            .broad_root_warning(Path::new(resolved))
        {
            check.warnings.push(w);
        }
    }
    check
}

pub fn check_root(path: &Path, home: Option<&Path>) -> RootCheck {
    let shown = path.display().to_string();
    if shown.trim().is_empty() {
        return RootCheck {
            resolved: None,
            error: Some("no folder given; pick the folder the model may work in".into()),
            warnings: vec![],
        };
    }
    if !path.is_absolute() {
        return RootCheck {
            resolved: None,
            error: Some(format!(
                "{shown:?} is not an absolute path; give the full path, e.g. /home/you/project"
            )),
            warnings: vec![],
        };
    }
    let resolved = match std::fs::canonicalize(path) {
        Ok(p) if p.is_dir() => p,
        Ok(_) => {
            return RootCheck {
                resolved: None,
                error: Some(format!("{shown:?} is not a folder; pick a folder")),
                warnings: vec![],
            };
        }
        Err(e) => {
            return RootCheck {
                resolved: None,
                error: Some(format!(
                    "{shown:?} cannot be used ({e}); pick a folder that exists"
                )),
                warnings: vec![],
            };
        }
    };
    let mut warnings = Vec::new();
    if resolved == Path::new("/") {
        warnings.push("this is the whole file system: the model could read and change almost anything you can; pick a project folder".to_string());
    }
    let home = home.and_then(|h| std::fs::canonicalize(h).ok());
    if home.as_deref() == Some(resolved.as_path()) {
        warnings.push("this is your home folder: your keys, mail and browser profiles are inside it; pick a project folder".to_string());
    } else if let Some(h) = &home {
        if h.starts_with(&resolved) && resolved != Path::new("/") {
            warnings
                .push("your home folder is inside this folder; pick a project folder".to_string());
        }
    }
    RootCheck {
        resolved: Some(resolved.display().to_string()),
        error: None,
        warnings,
    }
}

impl AppSettings {
    /// The engine configuration for these settings; `None` without a root.
    pub fn engine_config(
        &self,
        paths: ConfigPaths,
        supervisor_exe: PathBuf,
    ) -> Option<EngineConfig> {
        let root = self.root.clone()?;
        let mut c = EngineConfig::with_settings(root, paths, &self.core);
        c.supervisor_exe = supervisor_exe;
        c.watch = true;
        Some(c)
    }

    /// Refuse settings the bridge cannot run with, with what to do instead.
    pub fn validate(&self) -> Result<(), SettingsError> {
        if self.core.port == 0 {
            return Err(SettingsError::RandomPort);
        }
        if self.core.port < 1024 {
            return Err(SettingsError::PrivilegedPort(self.core.port));
        }
        if !(5..=3600).contains(&self.core.approval_timeout_sec) {
            return Err(SettingsError::Timeout(self.core.approval_timeout_sec));
        }
        if let Some(root) = &self.root {
            if let Some(e) = check_root(root, None).error {
                return Err(SettingsError::Root(e));
            }
        }
        Ok(())
    }
}

/// Settings the bridge cannot run with.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SettingsError {
    #[error(
        "port 0 picks a random port each start and the extension could not find it; use a fixed port such as 18080"
    )]
    RandomPort,
    #[error("port {0} needs root; use one above 1023, e.g. 18080")]
    PrivilegedPort(u16),
    #[error("approval timeout {0} s is out of range; use 5 to 3600 seconds")]
    Timeout(u64),
    /// What [`check_root`] found wrong with the sandbox root.
    #[error("{0}")]
    Root(String),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn root_checks() {
        let base = tempfile::tempdir().unwrap();
        let home = base.path().join("home");
        let proj = home.join("proj");
        std::fs::create_dir_all(&proj).unwrap();
        let file = proj.join("f");
        std::fs::write(&file, "x").unwrap();
        // (path, error contains, warning contains)
        let table: Vec<(PathBuf, Option<&str>, Option<&str>)> = vec![
            (proj.clone(), None, None),
            (home.clone(), None, Some("home folder")),
            (
                base.path().to_path_buf(),
                None,
                Some("home folder is inside"),
            ),
            (PathBuf::from("/"), None, Some("whole file system")),
            (file.clone(), Some("not a folder"), None),
            (
                proj.join("missing"),
                Some("pick a folder that exists"),
                None,
            ),
            (
                PathBuf::from("rel/path"),
                Some("not an absolute path"),
                None,
            ),
            (PathBuf::from(""), Some("no folder given"), None),
        ];
        for (path, err, warn) in table {
            let c = check_root(&path, Some(&home));
            match err {
                Some(e) => assert!(
                    c.error.as_deref().unwrap_or("").contains(e),
                    "{path:?}: {c:?}"
                ),
                None => assert!(c.error.is_none(), "{path:?}: {c:?}"),
            }
            match warn {
                Some(w) => assert!(c.warnings.iter().any(|x| x.contains(w)), "{path:?}: {c:?}"),
                None => assert!(c.warnings.is_empty(), "{path:?}: {c:?}"),
            }
        }
    }

    #[test]
    fn a_broad_root_says_what_stays_protected() {
        let base = tempfile::tempdir().unwrap();
        let home = base.path().join("home");
        let proj = home.join("proj");
        std::fs::create_dir_all(&proj).unwrap();
        // ground-link's own state under the home folder, as XDG puts it.
        let paths = ConfigPaths::under(&home.join(".config"));
        let c = check_root_protected(&home, Some(&home), &paths);
        assert!(
            c.warnings
                .iter()
                .any(|w| w.contains("own state is denied to every tool")),
            "{c:?}"
        );
        let c = check_root_protected(&proj, Some(&home), &paths);
        assert!(c.warnings.is_empty(), "{c:?}");
    }

    #[test]
    fn validation_and_engine_config() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = AppSettings::default();
        assert!(s.validate().is_ok());
        let paths = ConfigPaths::under(dir.path());
        assert!(
            s.engine_config(paths.clone(), "x".into()).is_none(),
            "no root, no engine"
        );
        s.root = Some(dir.path().to_path_buf());
        s.core.approval_timeout_sec = 30;
        let c = s.engine_config(paths, "/bin/app".into()).unwrap();
        assert_eq!(c.approval_timeout, std::time::Duration::from_secs(30));
        assert!(c.watch && c.audit);
        assert_eq!(c.supervisor_exe, PathBuf::from("/bin/app"));
        let bad = [
            (0u16, 30u64, "port 0"),
            (80, 30, "needs root"),
            (18080, 1, "out of range"),
        ];
        for (port, timeout, want) in bad {
            let mut b = s.clone();
            b.core.port = port;
            b.core.approval_timeout_sec = timeout;
            assert!(
                b.validate().unwrap_err().to_string().contains(want),
                "{port} {timeout}"
            );
        }
        // Old stores without newer fields still load.
        let old: AppSettings = serde_json::from_str(r#"{"root":"/x"}"#).unwrap();
        assert_eq!(old.core.port, 18080);
    }
}
