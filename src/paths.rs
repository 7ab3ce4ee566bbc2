//! Where ground-link keeps its files (DESIGN §5.3, §5.6, §9): platform conventions, which on
//! Linux means `XDG_CONFIG_HOME` and `XDG_DATA_HOME`.

use std::path::{Path, PathBuf};

/// The managed (administrator) rule file. Read-only to ground-link, and it wins.
pub const MANAGED_FILE: &str = "/etc/ground-link/permissions.json";
/// Tests and packagers may point the managed layer elsewhere; the agent cannot set the
/// environment of a running bridge, so this does not widen what a model can do.
pub const MANAGED_ENV: &str = "GROUND_LINK_MANAGED_FILE";

#[derive(Debug, thiserror::Error)]
pub enum PathsError {
    #[error("cannot find a config directory: set XDG_CONFIG_HOME or HOME")]
    NoConfigDir,
    #[error("cannot find a data directory: set XDG_DATA_HOME or HOME")]
    NoDataDir,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigPaths {
    pub managed: PathBuf,
    /// `$XDG_CONFIG_HOME/ground-link`
    pub config_dir: PathBuf,
    /// `$XDG_DATA_HOME/ground-link`
    pub data_dir: PathBuf,
}

impl ConfigPaths {
    pub fn from_env() -> Result<ConfigPaths, PathsError> {
        let managed = std::env::var_os(MANAGED_ENV)
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(MANAGED_FILE));
        let config_dir = dirs::config_dir()
            .ok_or(PathsError::NoConfigDir)?
            .join("ground-link");
        let data_dir = dirs::data_dir()
            .ok_or(PathsError::NoDataDir)?
            .join("ground-link");
        Ok(ConfigPaths {
            managed,
            config_dir,
            data_dir,
        })
    }

    /// Everything under one folder; for tests and portable setups.
    pub fn under(base: &Path) -> ConfigPaths {
        ConfigPaths {
            managed: base.join("managed/permissions.json"),
            config_dir: base.join("config/ground-link"),
            data_dir: base.join("data/ground-link"),
        }
    }

    pub fn global_rules(&self) -> PathBuf {
        self.config_dir.join("permissions.json")
    }

    pub fn audit_dir(&self) -> PathBuf {
        self.data_dir.join("audit")
    }

    pub fn trust_dir(&self) -> PathBuf {
        self.data_dir.join("trust")
    }
}

/// The project rule file, relative to the sandbox root.
pub const PROJECT_RULES_REL: &str = ".ground-link/permissions.json";
