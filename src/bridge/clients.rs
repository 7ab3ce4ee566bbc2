//! Named client tokens (DESIGN §8.1): each MCP client gets a token of its own, so the audit log
//! and the person's questions can name it, and revoking one leaves the others (and the
//! extension's pairing key) working.
//!
//! Kept in `$XDG_CONFIG_HOME/ground-link/clients.json` (0600), as SHA-256 digests: the file
//! never holds a token, but a digest is the key its client signs `/mcp` requests with
//! ([`signing_key`], `ground-link mcp`), so the file is a secret of its own. The token is shown
//! once, when it is made. The bridge re-reads the file when it changes, so `token revoke` takes
//! effect on a running bridge at once.

use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::SystemTime;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::paths::ConfigPaths;

/// Client tokens start with this, so one is told apart from the bridge token at a glance.
const PREFIX: &str = "glc_";

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("client tokens file {path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error(
        "client tokens file {0} is not valid JSON; fix it or delete it (every client token in \
         it stops working)"
    )]
    Invalid(String),
    #[error(
        "{0:?} is not a client name: use 1 to 64 letters, digits, '-', '_' or '.', e.g. claude-code"
    )]
    BadName(String),
    #[error("a client named {0:?} exists already; revoke it first or pick another name")]
    Exists(String),
    #[error("cannot make a random token: {0}")]
    Random(String),
}

/// One client as stored.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Client {
    pub name: String,
    /// Hex SHA-256 of the token.
    pub digest: String,
    /// Unix seconds when it was made.
    pub created: u64,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct File {
    clients: Vec<Client>,
}

/// The client tokens file, read again whenever it changes on disk.
#[derive(Debug)]
pub struct Clients {
    path: PathBuf,
    cache: Mutex<Option<(Option<SystemTime>, Vec<Client>)>>,
}

pub fn default_location(paths: &ConfigPaths) -> PathBuf {
    paths.config_dir.join("clients.json")
}

impl Clients {
    pub fn new(path: PathBuf) -> Clients {
        Clients {
            path,
            cache: Mutex::new(None),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Every client, oldest first.
    pub fn list(&self) -> Result<Vec<Client>, ClientError> {
        Ok(self.read()?.clients)
    }

    /// Runs a read-modify-write of the file under an exclusive lock, so two `token` commands
    /// at once cannot lose each other's change (a revoke that silently did not happen).
    fn locked<T>(&self, f: impl FnOnce() -> Result<T, ClientError>) -> Result<T, ClientError> {
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| self.io(e))?;
        }
        let lock = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(self.path.with_extension("json.lock"))
            .map_err(|e| self.io(e))?;
        rustix::fs::flock(&lock, rustix::fs::FlockOperation::LockExclusive)
            .map_err(|e| self.io(e.into()))?;
        f()
    }

    /// Makes a token for `name` and returns it: the only time it is shown.
    pub fn add(&self, name: &str) -> Result<String, ClientError> {
        self.locked(|| self.add_unlocked(name))
    }

    fn add_unlocked(&self, name: &str) -> Result<String, ClientError> {
        let valid = !name.is_empty()
            && name.len() <= 64
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
        if !valid {
            return Err(ClientError::BadName(name.to_owned()));
        }
        let mut file = self.read()?;
        if file.clients.iter().any(|c| c.name == name) {
            return Err(ClientError::Exists(name.to_owned()));
        }
        let secret = crate::random::hex(32).map_err(|e| ClientError::Random(e.to_string()))?;
        let secret = format!("{PREFIX}{secret}");
        let created = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        file.clients.push(Client {
            name: name.to_owned(),
            digest: digest(&secret),
            created,
        });
        self.write(&file)?;
        Ok(secret)
    }

    /// Removes `name`; `false` when there was no such client.
    pub fn revoke(&self, name: &str) -> Result<bool, ClientError> {
        self.locked(|| self.revoke_unlocked(name))
    }

    fn revoke_unlocked(&self, name: &str) -> Result<bool, ClientError> {
        let mut file = self.read()?;
        let before = file.clients.len();
        file.clients.retain(|c| c.name != name);
        if file.clients.len() == before {
            return Ok(false);
        }
        self.write(&file)?;
        Ok(true)
    }

    /// The name of the client whose token `presented` is, if any. A file that cannot be read
    /// names nobody (the request is then refused, with the bridge token still working).
    pub fn identify(&self, presented: &str) -> Option<String> {
        if !presented.starts_with(PREFIX) {
            return None;
        }
        let wanted = digest(presented);
        let clients = self.live();
        // Every digest is compared in constant time, and all of them, whichever matches.
        let mut found = None;
        for c in &clients {
            if bool::from(c.digest.as_bytes().ct_eq(wanted.as_bytes())) {
                found = Some(c.name.clone());
            }
        }
        found
    }

    /// Every live client with the key its requests are signed with ([`signing_key`]), read
    /// again when the file changed: a revoked client's signatures stop verifying at once.
    pub fn signing_keys(&self) -> Vec<(String, String)> {
        self.live()
            .into_iter()
            .map(|c| (c.name, c.digest))
            .collect()
    }

    /// The clients as the file holds them now (cached until it changes). A file that cannot be
    /// read holds nobody.
    fn live(&self) -> Vec<Client> {
        let modified = std::fs::metadata(&self.path)
            .and_then(|m| m.modified())
            .ok();
        let mut cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
        let fresh = matches!(&*cache, Some((when, _)) if *when == modified && modified.is_some());
        if !fresh {
            let clients = self.read().map(|f| f.clients).unwrap_or_default();
            *cache = Some((modified, clients));
        }
        cache.as_ref().map(|(_, c)| c.clone()).unwrap_or_default()
    }

    fn read(&self) -> Result<File, ClientError> {
        match std::fs::read_to_string(&self.path) {
            Ok(text) => serde_json::from_str(&text)
                .map_err(|_| ClientError::Invalid(self.path.display().to_string())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(File::default()),
            Err(source) => Err(self.io(source)),
        }
    }

    /// Writes the whole file (0600) through a temporary one, so a reader never sees half.
    fn write(&self, file: &File) -> Result<(), ClientError> {
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| self.io(e))?;
        }
        let tmp = self.path.with_extension("json.tmp");
        let text = serde_json::to_string_pretty(file).unwrap_or_default() + "\n";
        let written = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&tmp)
            .and_then(|mut f| std::io::Write::write_all(&mut f, text.as_bytes()))
            .and_then(|()| std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o600)))
            .and_then(|()| std::fs::rename(&tmp, &self.path));
        written.map_err(|e| self.io(e))
    }

    fn io(&self, source: std::io::Error) -> ClientError {
        ClientError::Io {
            path: self.path.display().to_string(),
            source,
        }
    }
}

/// The key a client signs its requests with (DESIGN §6): the hex SHA-256 of its token — what
/// the file keeps, so the bridge can check a signature without ever holding the token, and the
/// token itself never crosses the wire. (So the file is a secret too: it is 0600.)
pub fn signing_key(token: &str) -> String {
    digest(token)
}

fn digest(token: &str) -> String {
    hex::encode(Sha256::digest(token.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn add_identify_revoke() {
        let dir = tempfile::tempdir().unwrap();
        let clients = Clients::new(dir.path().join("clients.json"));
        let a = clients.add("claude-code").unwrap();
        let b = clients.add("cursor").unwrap();
        assert!(a.starts_with(PREFIX) && a != b);
        assert_eq!(clients.identify(&a).as_deref(), Some("claude-code"));
        assert_eq!(clients.identify(&b).as_deref(), Some("cursor"));
        assert_eq!(clients.identify(&a[..a.len() - 1]), None);
        assert!(matches!(clients.add("cursor"), Err(ClientError::Exists(_))));
        assert!(matches!(
            clients.add("no spaces"),
            Err(ClientError::BadName(_))
        ));
        // The file holds digests only, readable by its owner alone.
        let text = std::fs::read_to_string(clients.path()).unwrap();
        assert!(!text.contains(&a[PREFIX.len()..]));
        let mode = std::fs::metadata(clients.path())
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o077, 0);
        assert!(clients.revoke("claude-code").unwrap());
        assert!(!clients.revoke("claude-code").unwrap());
        assert_eq!(clients.identify(&a), None);
        assert_eq!(clients.identify(&b).as_deref(), Some("cursor"));
    }

    #[test]
    fn a_broken_file_names_nobody_and_says_so() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("clients.json");
        std::fs::write(&path, "{not json").unwrap();
        let clients = Clients::new(path);
        assert_eq!(clients.identify("glc_00"), None);
        let e = clients.list().unwrap_err().to_string();
        assert!(e.contains("not valid JSON"), "{e}");
    }
}
