//! The agent token (DESIGN §6): 256 random bits, hex-encoded. One implementation for the CLI
//! and the tray app, so `ground-link token` prints the key the app's bridge accepts.
//!
//! Kept in the OS keyring (Secret Service) when one is reachable, else in a 0600 file under
//! `$XDG_CONFIG_HOME/ground-link/`; `--token-file F` uses F alone. With a keyring and no entry
//! yet, an existing token file's token moves in, so a paired extension stays paired; the file is
//! kept and rotated with the entry, because a later run with no keyring reachable (an ssh
//! session, a headless `serve`) falls back to it. Comparing tokens is constant-time.

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
    /// Where it is kept, for a person: "the OS keyring (…)" or "the file …".
    pub kept_in: String,
    /// Set when the file can be read by others, or the keyring refused it (a warning, not a
    /// refusal).
    pub warning: Option<String>,
}

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Token")
            .field("kept_in", &self.kept_in)
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
    pub fn from_secret(secret: String, kept_in: impl Into<String>) -> Token {
        Token {
            secret,
            kept_in: kept_in.into(),
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

fn valid(secret: &str) -> bool {
    secret.len() >= 32 && !secret.chars().any(|c| c.is_whitespace() || c.is_control())
}

fn in_file(path: &Path) -> String {
    format!("the file {}", path.display())
}

/// Read the token at `path`, creating it (0600) if missing.
fn load_or_create(path: &Path) -> Result<Token, TokenError> {
    let io = |e| TokenError::Io {
        path: path.display().to_string(),
        source: e,
    };
    match std::fs::read_to_string(path) {
        Ok(text) => {
            let secret = text.trim().to_string();
            if !valid(&secret) {
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
                kept_in: in_file(path),
                warning,
            })
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => write_secret(path, fresh()?),
        Err(e) => Err(io(e)),
    }
}

/// Replace the token in `path` with a fresh one.
fn rotate_file(path: &Path) -> Result<Token, TokenError> {
    write_secret(path, fresh()?)
}

/// Write `secret` as the file's whole content, replacing what was there.
fn write_secret(path: &Path, secret: String) -> Result<Token, TokenError> {
    let io = |e| TokenError::Io {
        path: path.display().to_string(),
        source: e,
    };
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(io)?;
    }
    match std::fs::remove_file(path) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(io(e)),
    }
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
        kept_in: in_file(path),
        warning: None,
    })
}

/// Somewhere a secret can be kept outside the file system: the OS keyring, a map in tests.
pub trait SecretStore: Send + Sync {
    /// `Ok(None)`: reachable, no entry. `Err`: the store cannot be reached.
    fn get(&self) -> Result<Option<String>, String>;
    fn set(&self, secret: &str) -> Result<(), String>;
    /// What to show as the token's location.
    fn describe(&self) -> String;
}

/// Set to `off` to keep the token in the file even where a keyring is reachable.
pub const KEYRING_ENV: &str = "GROUND_LINK_KEYRING";
pub const KEYRING_SERVICE: &str = "ground-link";

/// The OS keyring's entry for one config folder. The default folder's entry is plainly
/// `bridge-token`; any other (`XDG_CONFIG_HOME` pointed elsewhere: a second profile, a test)
/// gets an entry of its own, so it never reads or replaces the person's real key.
#[cfg(feature = "keyring")]
pub struct Keyring {
    entry: Option<keyring::Entry>,
    account: String,
}

#[cfg(feature = "keyring")]
impl Keyring {
    pub fn for_config(config_dir: &Path) -> Keyring {
        let default = dirs::home_dir().map(|h| h.join(".config").join("ground-link"));
        let account = if default.as_deref() == Some(config_dir) {
            "bridge-token".to_string()
        } else {
            format!("bridge-token@{}", config_dir.display())
        };
        Keyring {
            entry: keyring::Entry::new(KEYRING_SERVICE, &account).ok(),
            account,
        }
    }
}

#[cfg(feature = "keyring")]
impl SecretStore for Keyring {
    fn get(&self) -> Result<Option<String>, String> {
        let entry = self.entry.as_ref().ok_or("no keyring")?;
        match entry.get_password() {
            Ok(s) => Ok(Some(s)),
            Err(keyring::Error::NoEntry) => Ok(None),
            Err(e) => Err(e.to_string()),
        }
    }
    fn set(&self, secret: &str) -> Result<(), String> {
        let entry = self.entry.as_ref().ok_or("no keyring")?;
        entry.set_password(secret).map_err(|e| e.to_string())
    }
    fn describe(&self) -> String {
        format!("the OS keyring ({KEYRING_SERVICE}/{})", self.account)
    }
}

/// Where the token lives: a keyring entry when one is reachable, and a file.
pub struct TokenStore {
    keyring: Option<Box<dyn SecretStore>>,
    file: PathBuf,
}

impl TokenStore {
    /// The person's token: the keyring entry for this config folder, the default file beside it.
    pub fn open(paths: &ConfigPaths) -> TokenStore {
        let off = std::env::var(KEYRING_ENV).is_ok_and(|v| v == "off" || v == "0");
        let keyring: Option<Box<dyn SecretStore>> = if off {
            None
        } else {
            #[cfg(feature = "keyring")]
            {
                Some(Box::new(Keyring::for_config(&paths.config_dir)))
            }
            #[cfg(not(feature = "keyring"))]
            {
                None
            }
        };
        TokenStore {
            keyring,
            file: default_location(paths),
        }
    }

    /// Only this file (`--token-file F`): the person named where the token is.
    pub fn file(path: PathBuf) -> TokenStore {
        TokenStore {
            keyring: None,
            file: path,
        }
    }

    /// A store of the caller's (tests, embedding hosts) in front of `file`.
    pub fn with_secret_store(store: Box<dyn SecretStore>, file: PathBuf) -> TokenStore {
        TokenStore {
            keyring: Some(store),
            file,
        }
    }

    /// Load the token, making one if there is none: keyring first, the file as fallback.
    pub fn load(&self) -> Result<Token, TokenError> {
        let Some(store) = self.keyring.as_deref() else {
            return load_or_create(&self.file);
        };
        match store.get() {
            // A keyring that cannot be reached is the file's case.
            Err(_) => load_or_create(&self.file),
            Ok(Some(secret)) if valid(&secret) => Ok(Token::from_secret(secret, store.describe())),
            // Reachable, but no usable entry: the file's token moves in (or a fresh one).
            Ok(_) => {
                let secret = if self.file.exists() {
                    load_or_create(&self.file)?.secret
                } else {
                    fresh()?
                };
                self.keep(store, secret)
            }
        }
    }

    /// Replace the token (paired extensions must pair again). The file is rotated too when it
    /// exists, so a later run without the keyring does not bring the old key back.
    pub fn rotate(&self) -> Result<Token, TokenError> {
        let Some(store) = self.keyring.as_deref().filter(|s| s.get().is_ok()) else {
            return rotate_file(&self.file);
        };
        let secret = if self.file.exists() {
            rotate_file(&self.file)?.secret
        } else {
            fresh()?
        };
        self.keep(store, secret)
    }

    fn keep(&self, store: &dyn SecretStore, secret: String) -> Result<Token, TokenError> {
        match store.set(&secret) {
            Ok(()) => Ok(Token::from_secret(secret, store.describe())),
            Err(e) => {
                // The keyring answered but refused to store: the file holds this very secret,
                // so what was just handed out (or moved in) stays the key.
                let mut token = write_secret(&self.file, secret)?;
                token.warning = Some(format!(
                    "the keyring refused the token ({e}); it is kept in a file instead"
                ));
                Ok(token)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    /// A keyring: reachable or not, refusing writes or not.
    #[derive(Clone)]
    struct Fake {
        reachable: bool,
        refuse_set: bool,
        value: Arc<Mutex<Option<String>>>,
    }
    impl SecretStore for Fake {
        fn get(&self) -> Result<Option<String>, String> {
            if self.reachable {
                Ok(self.value.lock().unwrap().clone())
            } else {
                Err("no bus".into())
            }
        }
        fn set(&self, s: &str) -> Result<(), String> {
            if self.refuse_set {
                return Err("locked".into());
            }
            *self.value.lock().unwrap() = Some(s.to_string());
            Ok(())
        }
        fn describe(&self) -> String {
            "fake keyring".into()
        }
    }
    fn fake(reachable: bool, refuse_set: bool) -> Fake {
        Fake {
            reachable,
            refuse_set,
            value: Arc::new(Mutex::new(None)),
        }
    }
    fn with(store: &Fake, file: &Path) -> TokenStore {
        TokenStore::with_secret_store(Box::new(store.clone()), file.to_path_buf())
    }
    fn on_disk(file: &Path) -> String {
        std::fs::read_to_string(file).unwrap().trim().to_string()
    }

    #[test]
    fn the_keyring_first_and_the_file_when_it_cannot_be_reached() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("token");

        // No keyring: the 0600 file, stable across loads.
        let none = fake(false, false);
        let a = with(&none, &file).load().unwrap();
        assert_eq!(on_disk(&file), a.secret());
        assert_eq!(a.kept_in, format!("the file {}", file.display()));
        let mode = std::fs::metadata(&file).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        assert_eq!(with(&none, &file).load().unwrap().secret(), a.secret());
        // `--token-file` reads the same file.
        assert_eq!(
            TokenStore::file(file.clone()).load().unwrap().secret(),
            a.secret()
        );

        // A keyring appears: the file's token moves in, so a paired extension stays paired.
        let kr = fake(true, false);
        let b = with(&kr, &file).load().unwrap();
        assert_eq!(b.secret(), a.secret());
        assert_eq!(b.kept_in, "fake keyring");
        assert_eq!(kr.value.lock().unwrap().as_deref(), Some(a.secret()));

        // Rotating changes the entry and the file, so a run without the keyring agrees.
        let c = with(&kr, &file).rotate().unwrap();
        assert_ne!(c.secret(), a.secret());
        assert_eq!(on_disk(&file), c.secret());
        assert_eq!(with(&kr, &file).load().unwrap().secret(), c.secret());
        assert_eq!(with(&none, &file).load().unwrap().secret(), c.secret());
    }

    #[test]
    fn with_a_keyring_and_no_file_nothing_is_written_to_disk() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("token");
        let kr = fake(true, false);
        let d = with(&kr, &file).load().unwrap();
        assert!(!file.exists());
        assert_eq!(d.secret().len(), 64);
        assert_eq!(
            with(&kr, &file).load().unwrap().secret(),
            d.secret(),
            "stable"
        );
        let e = with(&kr, &file).rotate().unwrap();
        assert_ne!(d.secret(), e.secret());
        assert!(!file.exists());
        // An entry that is not a token (emptied by hand) is replaced, not used.
        *kr.value.lock().unwrap() = Some(String::new());
        let f = with(&kr, &file).load().unwrap();
        assert!(valid(f.secret()));
    }

    #[test]
    fn a_keyring_that_refuses_leaves_the_handed_out_token_in_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("token");
        let refusing = fake(true, true);
        let f = with(&refusing, &file).load().unwrap();
        assert!(
            f.warning.as_deref().unwrap().contains("refused"),
            "{:?}",
            f.warning
        );
        assert_eq!(on_disk(&file), f.secret());
        // The next load reads that same key back.
        assert_eq!(with(&refusing, &file).load().unwrap().secret(), f.secret());
        let g = with(&refusing, &file).rotate().unwrap();
        assert_ne!(g.secret(), f.secret());
        assert_eq!(on_disk(&file), g.secret());
    }

    #[test]
    fn a_bad_file_is_an_error_that_says_what_to_do_not_a_new_key() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("token");
        std::fs::write(&file, "short\n").unwrap();
        let err = TokenStore::file(file.clone())
            .load()
            .unwrap_err()
            .to_string();
        assert!(err.contains("--rotate"), "{err}");
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "short\n");
        // With a keyring reachable the same file is not silently moved in either.
        let kr = fake(true, false);
        assert!(with(&kr, &file).load().is_err());
        assert!(kr.value.lock().unwrap().is_none());
    }

    #[test]
    fn a_file_others_can_read_is_used_with_a_warning() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("token");
        std::fs::write(&file, format!("{}\n", "ab".repeat(32))).unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
        let t = TokenStore::file(file).load().unwrap();
        assert_eq!(t.secret(), "ab".repeat(32));
        assert!(t.warning.unwrap().contains("chmod 600"));
    }

    #[cfg(feature = "keyring")]
    #[test]
    fn only_the_default_config_folder_uses_the_plain_keyring_entry() {
        let home = dirs::home_dir().unwrap();
        let default = Keyring::for_config(&home.join(".config").join("ground-link"));
        assert_eq!(
            default.describe(),
            "the OS keyring (ground-link/bridge-token)"
        );
        let other = Keyring::for_config(Path::new("/tmp/profile/ground-link"));
        assert_eq!(
            other.describe(),
            "the OS keyring (ground-link/bridge-token@/tmp/profile/ground-link)"
        );
    }
}
