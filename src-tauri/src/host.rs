//! The core hosted in-process: one engine and one bridge on 127.0.0.1, rebuilt when the
//! sandbox root, the modes or the port change, and stopped while the person has paused
//! ground-link (a paused bridge runs nothing: its port is closed).
//!
//! A restart ends the old bridge the way the CLI's does on Ctrl-C: pending approvals are denied,
//! running calls finish, then the new engine binds the port. Session grants ("this
//! conversation") live in the engine and end with it.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tokio::sync::{Mutex, oneshot};

use ground_link::bridge::broker::Broker;
use ground_link::bridge::token::Token;
use ground_link::bridge::{self, Bridge};
use ground_link::engine::Engine;
use ground_link::paths::ConfigPaths;
use ground_link::tools::exec::Confinement;

use crate::approver::DialogApprover;
use crate::settings::AppSettings;

/// The extension counts as connected this long after its last authenticated request (and for
/// as long as it holds `/events` open).
pub const CONNECTED_WINDOW: Duration = Duration::from_secs(60);

pub struct Running {
    pub engine: Arc<Engine>,
    pub bridge: Arc<Bridge>,
    stop: Option<oneshot::Sender<()>>,
    served: tokio::task::JoinHandle<()>,
}

#[derive(Debug, thiserror::Error)]
pub enum HostError {
    #[error("no sandbox folder is chosen yet; pick one in the settings window")]
    NoRoot,
    #[error(transparent)]
    Settings(#[from] crate::settings::SettingsError),
    #[error("the sandbox could not be opened: {0}")]
    Engine(#[from] ground_link::engine::EngineError),
    #[error("{0}")]
    Bind(#[from] ground_link::bridge::BridgeError),
}

/// The state the tray and the settings window show.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StatusView {
    pub running: bool,
    pub paused: bool,
    pub port: Option<u16>,
    pub root: Option<PathBuf>,
    pub connected: bool,
    pub pending: usize,
    /// Why the bridge is not running, or a broken rule file.
    pub problem: Option<String>,
    /// Set when `exec_cmd` is not confined by the OS or cannot run in its own namespaces
    /// (then every command asks): why.
    pub confinement: Option<String>,
    /// The sandbox root is broad (home, `/`, ground-link's own state): what stays protected.
    pub root_warning: Option<String>,
    /// The extension's last adapter problem per chat site ("DeepSeek: send button not found —
    /// using Enter"), as it reported them to the bridge.
    #[serde(default)]
    pub site_problems: Vec<String>,
}

pub struct Host {
    pub approver: Arc<DialogApprover>,
    paths: ConfigPaths,
    supervisor_exe: PathBuf,
    token: std::sync::Mutex<Token>,
    running: Mutex<Option<Running>>,
    /// Cheap copies for synchronous readers (the tray ticks, commands).
    current: std::sync::Mutex<Option<(Arc<Engine>, Arc<Bridge>)>>,
    paused: std::sync::atomic::AtomicBool,
    problem: std::sync::Mutex<Option<String>>,
}

impl Host {
    pub fn new(paths: ConfigPaths, supervisor_exe: PathBuf, token: Token) -> Arc<Host> {
        Arc::new(Host {
            approver: DialogApprover::new(),
            paths,
            supervisor_exe,
            token: std::sync::Mutex::new(token),
            running: Mutex::new(None),
            current: std::sync::Mutex::new(None),
            paused: std::sync::atomic::AtomicBool::new(false),
            problem: std::sync::Mutex::new(None),
        })
    }

    pub fn paths(&self) -> &ConfigPaths {
        &self.paths
    }

    pub fn engine(&self) -> Option<Arc<Engine>> {
        self.lock_current().as_ref().map(|(e, _)| Arc::clone(e))
    }

    pub fn bridge(&self) -> Option<Arc<Bridge>> {
        self.lock_current().as_ref().map(|(_, b)| Arc::clone(b))
    }

    fn lock_current(&self) -> std::sync::MutexGuard<'_, Option<(Arc<Engine>, Arc<Bridge>)>> {
        self.current.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn token(&self) -> Token {
        self.token.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    pub fn set_token(&self, token: Token) {
        *self.token.lock().unwrap_or_else(|p| p.into_inner()) = token;
    }

    pub fn is_paused(&self) -> bool {
        self.paused.load(std::sync::atomic::Ordering::SeqCst)
    }

    fn set_problem(&self, p: Option<String>) {
        *self.problem.lock().unwrap_or_else(|x| x.into_inner()) = p;
    }

    /// Stop whatever runs, then start with `settings` (unless paused).
    pub async fn apply(&self, settings: &AppSettings) -> Result<(), HostError> {
        let mut running = self.running.lock().await;
        if let Some(old) = running.take() {
            *self.lock_current() = None;
            stop(old).await;
        }
        if self.is_paused() {
            self.set_problem(None);
            return Ok(());
        }
        match self.start(settings).await {
            Ok(r) => {
                *self.lock_current() = Some((Arc::clone(&r.engine), Arc::clone(&r.bridge)));
                *running = Some(r);
                self.set_problem(None);
                Ok(())
            }
            Err(e) => {
                self.set_problem(Some(e.to_string()));
                Err(e)
            }
        }
    }

    async fn start(&self, settings: &AppSettings) -> Result<Running, HostError> {
        settings.validate()?;
        let config = settings
            .engine_config(self.paths.clone(), self.supervisor_exe.clone())
            .ok_or(HostError::NoRoot)?;
        let inner: Arc<dyn ground_link::approval::Approver> = self.approver.clone();
        let broker = Broker::new(inner);
        let engine = Arc::new(Engine::new(config, broker.approver())?);
        let bound = bridge::bind(
            Arc::clone(&engine),
            broker,
            self.token(),
            settings.core.port,
        )
        .await?;
        let bridge = Arc::clone(&bound.bridge);
        let (tx, rx) = oneshot::channel::<()>();
        let served = tokio::spawn(async move {
            let shutdown = async move {
                let _ = rx.await;
            };
            // The extension's native-messaging host relays here; it lives as long as the
            // bridge, so a restart with new settings hands the socket to the new one.
            let native = bridge::native::socket_path()
                .and_then(|p| bridge::native::listen(Arc::clone(&bound.bridge), &p));
            if let Err(e) = &native {
                tracing::warn!("no native messaging: {e}");
            }
            if let Err(e) = bound.serve(shutdown).await {
                tracing::error!("bridge stopped: {e}");
            }
            drop(native);
        });
        Ok(Running {
            engine,
            bridge,
            stop: Some(tx),
            served,
        })
    }

    /// Pause (stop the bridge; nothing runs) or resume.
    pub async fn set_paused(&self, paused: bool, settings: &AppSettings) -> Result<(), HostError> {
        self.paused
            .store(paused, std::sync::atomic::Ordering::SeqCst);
        self.apply(settings).await
    }

    /// Stop for good: deny what waits, let running calls end.
    pub async fn shut_down(&self) {
        self.approver
            .deny_all("ground-link quit before anyone answered");
        let mut running = self.running.lock().await;
        if let Some(old) = running.take() {
            *self.lock_current() = None;
            stop(old).await;
        }
    }

    pub fn status(&self) -> StatusView {
        let current = self.lock_current().clone();
        let pending = *self.approver.pending().borrow();
        let mut problem = self
            .problem
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        match current {
            Some((engine, bridge)) => {
                if problem.is_none() {
                    problem =
                        engine
                            .policy()
                            .snapshot()
                            .errors()
                            .first()
                            .map(|(layer, path, err)| {
                                format!("{} rule file {path} is broken: {err}", layer.as_str())
                            });
                }
                let landlock = match engine.confinement() {
                    Confinement::Unavailable(why) => Some(format!("not confined: {why}")),
                    _ => None,
                };
                let isolation = engine
                    .not_isolated()
                    .map(|why| format!("not isolated: {why}; every exec_cmd asks"));
                let confinement = match (landlock, isolation) {
                    (Some(a), Some(b)) => Some(format!("{a}; {b}")),
                    (a, b) => a.or(b),
                };
                StatusView {
                    running: true,
                    paused: false,
                    port: Some(bridge.port()),
                    root: Some(engine.jail().root().to_path_buf()),
                    connected: bridge.connected(CONNECTED_WINDOW),
                    pending,
                    problem,
                    confinement,
                    root_warning: engine.broad_root_warning(),
                    site_problems: bridge
                        .adapter_problems()
                        .into_iter()
                        .flat_map(|p| p.problems)
                        .collect(),
                }
            }
            None => StatusView {
                running: false,
                paused: self.is_paused(),
                port: None,
                root: None,
                connected: false,
                pending,
                problem,
                confinement: None,
                root_warning: None,
                site_problems: Vec::new(),
            },
        }
    }
}

async fn stop(mut old: Running) {
    if let Some(tx) = old.stop.take() {
        let _ = tx.send(());
    }
    // Running calls get the bridge's own grace period (10 s) to finish.
    let _ = tokio::time::timeout(Duration::from_secs(15), &mut old.served).await;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::approver::DialogSurface;
    use crate::view::DialogState;
    use ground_link::protocol::{ApprovalAnswer, CallResult, CallStatus, Scope};

    struct Silent;
    impl DialogSurface for Silent {
        fn present(&self, _: &DialogState) {}
    }

    fn secret() -> String {
        "a".repeat(64)
    }

    async fn exec(port: u16, body: serde_json::Value) -> reqwest::Response {
        reqwest::Client::new()
            .post(format!("http://127.0.0.1:{port}/exec"))
            .bearer_auth(secret())
            .json(&body)
            .send()
            .await
            .unwrap()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn hosts_the_bridge_restarts_and_pauses() {
        let base = tempfile::tempdir().unwrap();
        let (one, two) = (base.path().join("one"), base.path().join("two"));
        std::fs::create_dir_all(&one).unwrap();
        std::fs::create_dir_all(&two).unwrap();
        std::fs::write(one.join("which.txt"), "one").unwrap();
        std::fs::write(two.join("which.txt"), "two").unwrap();
        let host = Host::new(
            ConfigPaths::under(base.path()),
            // No exec_cmd runs here, so the supervisor binary is never started.
            PathBuf::from("/nonexistent/ground-link-app"),
            Token::from_secret(secret(), "a test"),
        );
        host.approver.set_surface(Arc::new(Silent));
        let mut s = AppSettings::default();
        assert!(matches!(host.apply(&s).await, Err(HostError::NoRoot)));
        assert!(host.status().problem.unwrap().contains("no sandbox folder"));

        let port = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().port()
        };
        s.core.port = port;
        s.root = Some(one.clone());
        host.apply(&s).await.unwrap();
        let read = serde_json::json!({"name":"read_file","args":{"path":"which.txt"}});
        let r: CallResult = exec(port, read.clone()).await.json().await.unwrap();
        assert!(r.output.contains("one"), "{}", r.output);
        assert!(host.status().connected);

        // A call waiting for approval is answered through the dialog approver.
        let write = serde_json::json!({"name":"write_file","args":{"path":"new.txt","content":"hi"},"waitMs":100});
        let pending = exec(port, write).await;
        assert_eq!(pending.status(), 202);
        let id = host.approver.state().current.unwrap().call_id;
        host.approver
            .answer(
                &id,
                ApprovalAnswer::Allow {
                    scope: Scope::Once,
                    rule: None,
                    network: false,
                },
            )
            .unwrap();
        for _ in 0..100 {
            if one.join("new.txt").exists() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert_eq!(std::fs::read_to_string(one.join("new.txt")).unwrap(), "hi");

        // Changing the root takes effect on the same port.
        s.root = Some(two.clone());
        host.apply(&s).await.unwrap();
        let r: CallResult = exec(port, read.clone()).await.json().await.unwrap();
        assert!(r.output.contains("two"), "{}", r.output);

        // A restart with a question open denies it, and the client hears so.
        let write =
            serde_json::json!({"name":"write_file","args":{"path":"late.txt","content":"x"}});
        let waiting = tokio::spawn(exec(port, write));
        for _ in 0..100 {
            if host.approver.state().current.is_some() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(host.approver.state().current.is_some());
        host.apply(&s).await.unwrap();
        let r: CallResult = waiting.await.unwrap().json().await.unwrap();
        assert_eq!(r.status, CallStatus::Denied, "{}", r.output);
        assert!(host.approver.state().current.is_none());
        assert!(!two.join("late.txt").exists());

        // Paused: the port is closed, nothing runs.
        host.set_paused(true, &s).await.unwrap();
        assert!(host.status().paused);
        assert!(
            reqwest::Client::new()
                .get(format!("http://127.0.0.1:{port}/health"))
                .send()
                .await
                .is_err()
        );
        host.set_paused(false, &s).await.unwrap();
        assert!(host.status().running);
        host.shut_down().await;
        assert!(!host.status().running);
    }
}
