//! The agent token (DESIGN §6): in the OS keyring when one is reachable, else in the core's
//! 0600 token file, so the CLI and the app agree on headless machines.
//!
//! With a keyring: the token lives there. If there is none yet but a token file exists (the
//! CLI made it, or an earlier run without a keyring), that token moves into the keyring so a
//! paired extension stays paired. Rotating replaces the keyring entry, and the file too if it
//! exists (the person uses the CLI as well, and `ground-link serve` must keep matching).

use std::path::{Path, PathBuf};

use ground_link::bridge::token::{self, Token, TokenError};

/// Where secrets can be kept; the OS keyring in the app, a map in tests.
pub trait SecretStore: Send + Sync {
    /// `Ok(None)`: reachable, no entry. `Err`: the keyring cannot be reached.
    fn get(&self) -> Result<Option<String>, String>;
    fn set(&self, secret: &str) -> Result<(), String>;
    /// What to show as the token's location.
    fn describe(&self) -> String;
}

/// The OS keyring (Secret Service on Linux).
pub struct Keyring {
    entry: Option<keyring::Entry>,
}

pub const KEYRING_SERVICE: &str = "ground-link";
pub const KEYRING_USER: &str = "bridge-token";

impl Keyring {
    pub fn open() -> Keyring {
        Keyring {
            entry: keyring::Entry::new(KEYRING_SERVICE, KEYRING_USER).ok(),
        }
    }
}

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
        format!("the OS keyring ({KEYRING_SERVICE}/{KEYRING_USER})")
    }
}

/// The token and a sentence on where it is kept.
#[derive(Clone, Debug)]
pub struct Loaded {
    pub token: Token,
    pub kept_in: String,
    pub warning: Option<String>,
}

fn valid(secret: &str) -> bool {
    secret.len() >= 32 && !secret.chars().any(|c| c.is_whitespace() || c.is_control())
}

fn fresh() -> Result<String, TokenError> {
    ground_link::random::hex(32).map_err(|e| TokenError::Random(e.to_string()))
}

/// Load (or create) the token: keyring first, the file as fallback.
pub fn load(store: &dyn SecretStore, file: &Path) -> Result<Loaded, TokenError> {
    match store.get() {
        Ok(Some(secret)) if valid(&secret) => Ok(in_keyring(store, secret)),
        Ok(_) => {
            let secret = if file.exists() {
                token::load_or_create(file)?.secret().to_string()
            } else {
                fresh()?
            };
            match store.set(&secret) {
                Ok(()) => Ok(in_keyring(store, secret)),
                Err(e) => from_file(
                    file,
                    Some(format!(
                        "the keyring refused the token ({e}); it is kept in a file instead"
                    )),
                ),
            }
        }
        Err(_) => from_file(file, None),
    }
}

fn in_keyring(store: &dyn SecretStore, secret: String) -> Loaded {
    Loaded {
        token: Token::from_secret(secret, PathBuf::from("keyring")),
        kept_in: store.describe(),
        warning: None,
    }
}

fn from_file(file: &Path, note: Option<String>) -> Result<Loaded, TokenError> {
    let t = token::load_or_create(file)?;
    let warning = match (note, t.warning.clone()) {
        (Some(a), Some(b)) => Some(format!("{a}; {b}")),
        (a, b) => a.or(b),
    };
    Ok(Loaded {
        kept_in: format!("the file {}", file.display()),
        token: t,
        warning,
    })
}

/// Replace the token (the extension must pair again).
pub fn rotate(store: &dyn SecretStore, file: &Path) -> Result<Loaded, TokenError> {
    match store.get() {
        Ok(_) => {
            let secret = if file.exists() {
                token::rotate(file)?.secret().to_string()
            } else {
                fresh()?
            };
            match store.set(&secret) {
                Ok(()) => Ok(in_keyring(store, secret)),
                Err(e) => {
                    let t = token::rotate(file)?;
                    Ok(Loaded {
                        kept_in: format!("the file {}", file.display()),
                        token: t,
                        warning: Some(format!(
                            "the keyring refused the token ({e}); it is kept in a file instead"
                        )),
                    })
                }
            }
        }
        Err(_) => Ok(Loaded {
            kept_in: format!("the file {}", file.display()),
            token: token::rotate(file)?,
            warning: None,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    struct Fake {
        reachable: bool,
        refuse_set: bool,
        value: Mutex<Option<String>>,
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
            value: Mutex::new(None),
        }
    }

    #[test]
    fn keyring_first_file_as_fallback() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("token");

        // No keyring: the core's file, shared with the CLI.
        let none = fake(false, false);
        let a = load(&none, &file).unwrap();
        assert_eq!(
            std::fs::read_to_string(&file).unwrap().trim(),
            a.token.secret()
        );
        assert!(a.kept_in.contains("file"));
        assert_eq!(
            load(&none, &file).unwrap().token.secret(),
            a.token.secret(),
            "stable"
        );

        // A keyring appears: the file's token moves in, so the extension stays paired.
        let kr = fake(true, false);
        let b = load(&kr, &file).unwrap();
        assert_eq!(b.token.secret(), a.token.secret());
        assert_eq!(b.kept_in, "fake keyring");
        // Rotation changes both, so `ground-link serve` keeps matching.
        let c = rotate(&kr, &file).unwrap();
        assert_ne!(c.token.secret(), a.token.secret());
        assert_eq!(
            std::fs::read_to_string(&file).unwrap().trim(),
            c.token.secret()
        );
        assert_eq!(load(&kr, &file).unwrap().token.secret(), c.token.secret());

        // A keyring with no file: nothing is written to disk.
        let dir2 = tempfile::tempdir().unwrap();
        let file2 = dir2.path().join("token");
        let kr2 = fake(true, false);
        let d = load(&kr2, &file2).unwrap();
        assert!(!file2.exists());
        assert_eq!(d.token.secret().len(), 64);
        let e = rotate(&kr2, &file2).unwrap();
        assert_ne!(d.token.secret(), e.token.secret());
        assert!(!file2.exists());

        // A keyring that refuses: the file, with a warning.
        let refusing = fake(true, true);
        let f = load(&refusing, &file2).unwrap();
        assert!(f.warning.unwrap().contains("refused"));
        assert!(file2.exists());
    }
}
