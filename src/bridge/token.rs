//! The agent token (DESIGN §6): 256 random bits, hex-encoded, kept in a 0600 file under
//! `$XDG_CONFIG_HOME/ground-link/` (or the file `--token-file` names).
//!
//! The OS keyring is the tray app's job: it links the desktop's Secret Service, which headless
//! machines lack; the CLI and the app share this file format so either can read what the other
//! wrote. Comparing tokens is constant-time.

use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use subtle::ConstantTimeEq;

use crate::paths::ConfigPaths;

#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    #[error("token file {path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error(
        "token file {0} is empty or not a token; delete it or run `ground-link token --rotate`"
    )]
    Invalid(String),
    #[error("cannot make a random token: {0}")]
    Random(String),
}

/// A loaded token and where it lives.
#[derive(Clone)]
pub struct Token {
    secret: String,
    pub location: PathBuf,
    /// Set when the file can be read by others (a warning, not a refusal).
    pub warning: Option<String>,
}

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Token")
            .field("location", &self.location)
            .finish_non_exhaustive()
    }
}

impl Token {
    pub fn secret(&self) -> &str {
        &self.secret
    }

    /// Constant-time comparison; a prefix or a longer string never matches.
    pub fn matches(&self, presented: &str) -> bool {
        let a = self.secret.as_bytes();
        let b = presented.as_bytes();
        a.len() == b.len() && bool::from(a.ct_eq(b))
    }

    /// A token for tests and embedding hosts that keep it elsewhere.
    pub fn from_secret(secret: String, location: PathBuf) -> Token {
        Token {
            secret,
            location,
            warning: None,
        }
    }
}

pub fn default_location(paths: &ConfigPaths) -> PathBuf {
    paths.config_dir.join("token")
}

fn fresh() -> Result<String, TokenError> {
    crate::random::hex(32).map_err(|e| TokenError::Random(e.to_string()))
}

/// Read the token at `path`, creating it (0600) if missing.
pub fn load_or_create(path: &Path) -> Result<Token, TokenError> {
    let io = |e| TokenError::Io {
        path: path.display().to_string(),
        source: e,
    };
    match std::fs::read_to_string(path) {
        Ok(text) => {
            let secret = text.trim().to_string();
            if secret.len() < 32 || secret.chars().any(|c| c.is_whitespace() || c.is_control()) {
                return Err(TokenError::Invalid(path.display().to_string()));
            }
            let mode = std::fs::metadata(path).map_err(io)?.permissions().mode();
            let warning = (mode & 0o077 != 0).then(|| {
                format!(
                    "token file {} can be read by other users (mode {:o}); run chmod 600 on it",
                    path.display(),
                    mode & 0o777
                )
            });
            Ok(Token {
                secret,
                location: path.to_path_buf(),
                warning,
            })
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => write_new(path),
        Err(e) => Err(io(e)),
    }
}

/// Replace the token with a fresh one.
pub fn rotate(path: &Path) -> Result<Token, TokenError> {
    match std::fs::remove_file(path) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => {
            return Err(TokenError::Io {
                path: path.display().to_string(),
                source: e,
            });
        }
    }
    write_new(path)
}

fn write_new(path: &Path) -> Result<Token, TokenError> {
    let io = |e| TokenError::Io {
        path: path.display().to_string(),
        source: e,
    };
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(io)?;
    }
    let secret = fresh()?;
    // Created 0600 from the start: there is no moment at which others could read it.
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .map_err(io)?;
    f.write_all(format!("{secret}\n").as_bytes()).map_err(io)?;
    f.sync_all().map_err(io)?;
    Ok(Token {
        secret,
        location: path.to_path_buf(),
        warning: None,
    })
}
