//! The approval broker: calls in flight, their results, cancellation, and the event stream.
//!
//! The broker wraps the host's own approver (terminal for `serve`, dialogs in the tray app).
//! It adds what HTTP needs — a call that is cancelled by its client or by shutdown ends in a
//! deny — and nothing that could answer a question: approvals never come over HTTP.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tokio::sync::{broadcast, watch};
use tokio_util::sync::CancellationToken;

use crate::approval::Approver;
use crate::protocol::{ApprovalAnswer, ApprovalRequest, CallResult, CallStatus, Risk, ToolName};

/// How long finished results stay available to `GET /calls/{id}`.
const KEEP_RESULTS: Duration = Duration::from_secs(600);

/// What `GET /events` streams.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum Event {
    /// The call waits for the person to approve it in ground-link.
    #[serde(rename_all = "camelCase")]
    Pending {
        call_id: String,
        tool: ToolName,
        risk: Risk,
        session: Option<String>,
    },
    /// The person (or a timeout, or a cancel) answered.
    #[serde(rename_all = "camelCase")]
    Resolved { call_id: String, allowed: bool },
    /// The call finished; its result is at `GET /calls/{id}`.
    #[serde(rename_all = "camelCase")]
    Done { call_id: String, status: CallStatus },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    Running,
    WaitingForApproval,
    Done,
}

struct Entry {
    /// Withdraws a question still waiting for the person (and one not asked yet).
    cancel: CancellationToken,
    /// Also ends the running call: a command's tree is killed (MCP's cancellation, shutdown).
    kill: CancellationToken,
    result: watch::Receiver<Option<CallResult>>,
    phase: Phase,
    finished: Option<Instant>,
}

/// Handle to publish a call's result.
pub struct Completion {
    id: String,
    tx: watch::Sender<Option<CallResult>>,
    broker: Arc<Broker>,
    kill: CancellationToken,
}

impl Completion {
    /// Cancelled by [`Broker::kill`] or shutdown: hand it to
    /// [`crate::engine::Engine::call_until`] so a running command's tree is killed too.
    pub fn cancellation(&self) -> CancellationToken {
        self.kill.clone()
    }

    pub fn finish(self, result: CallResult) {
        let status = result.status;
        let _ = self.tx.send(Some(result));
        self.broker.set_phase(&self.id, Phase::Done);
        self.broker.emit(Event::Done {
            call_id: self.id.clone(),
            status,
        });
    }
}

pub struct Broker {
    calls: Mutex<HashMap<String, Entry>>,
    /// Sweep finished entries once the map reaches this size.
    sweep_at: std::sync::atomic::AtomicUsize,
    events: broadcast::Sender<Event>,
    inner: Arc<dyn Approver>,
    shutdown: CancellationToken,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum BrokerError {
    #[error("callId {0:?} is already in use; send a fresh one or leave it out")]
    Duplicate(String),
    #[error("ground-link is shutting down")]
    ShuttingDown,
}

impl Broker {
    pub fn new(inner: Arc<dyn Approver>) -> Arc<Broker> {
        let (events, _) = broadcast::channel(256);
        Arc::new(Broker {
            calls: Mutex::new(HashMap::new()),
            sweep_at: std::sync::atomic::AtomicUsize::new(64),
            events,
            inner,
            shutdown: CancellationToken::new(),
        })
    }

    /// The approver to give the engine.
    pub fn approver(self: &Arc<Self>) -> Arc<dyn Approver> {
        Arc::new(BrokerApprover {
            broker: Arc::clone(self),
        })
    }

    pub fn subscribe(&self) -> broadcast::Receiver<Event> {
        self.events.subscribe()
    }

    fn emit(&self, event: Event) {
        let _ = self.events.send(event);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Entry>> {
        self.calls.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Register a call before it starts.
    pub fn begin(self: &Arc<Self>, id: &str) -> Result<Completion, BrokerError> {
        if self.shutdown.is_cancelled() {
            return Err(BrokerError::ShuttingDown);
        }
        let mut calls = self.lock();
        // Results wait here only for calls that went `pending`; sweep old ones now and then
        // rather than on every call.
        if calls.len() >= self.sweep_at.load(std::sync::atomic::Ordering::Relaxed) {
            calls.retain(|_, e| e.finished.is_none_or(|t| t.elapsed() < KEEP_RESULTS));
            self.sweep_at.store(
                (calls.len() * 2).max(64),
                std::sync::atomic::Ordering::Relaxed,
            );
        }
        if calls.contains_key(id) {
            return Err(BrokerError::Duplicate(id.to_string()));
        }
        let (tx, rx) = watch::channel(None);
        let kill = self.shutdown.child_token();
        calls.insert(
            id.to_string(),
            Entry {
                cancel: self.shutdown.child_token(),
                kill: kill.clone(),
                result: rx,
                phase: Phase::Running,
                finished: None,
            },
        );
        Ok(Completion {
            id: id.to_string(),
            tx,
            broker: Arc::clone(self),
            kill,
        })
    }

    /// Drop a finished call whose result its client already has.
    pub fn forget(&self, id: &str) {
        let mut calls = self.lock();
        if calls.get(id).is_some_and(|e| e.result.borrow().is_some()) {
            calls.remove(id);
        }
    }

    fn set_phase(&self, id: &str, phase: Phase) {
        if let Some(e) = self.lock().get_mut(id) {
            e.phase = phase;
            if phase == Phase::Done {
                e.finished = Some(Instant::now());
            }
        }
    }

    pub fn phase(&self, id: &str) -> Option<Phase> {
        self.lock().get(id).map(|e| e.phase)
    }

    /// Wait up to `wait` for a call's result. `None`: unknown call; `Some(None)`: still going.
    pub async fn wait(&self, id: &str, wait: Duration) -> Option<Option<CallResult>> {
        let mut rx = self.lock().get(id)?.result.clone();
        if let Ok(Ok(r)) = tokio::time::timeout(wait, rx.wait_for(|r| r.is_some())).await {
            return Some(r.clone());
        }
        let current = rx.borrow().clone();
        Some(current)
    }

    /// Cancel a call: one waiting for approval ends as denied. `None` for an unknown call.
    pub fn cancel(&self, id: &str) -> Option<Phase> {
        let calls = self.lock();
        let e = calls.get(id)?;
        e.cancel.cancel();
        Some(e.phase)
    }

    /// [`Broker::cancel`], and a call already running ends too: its command's whole tree is
    /// killed (MCP's `notifications/cancelled`, DESIGN §8.1).
    pub fn kill(&self, id: &str) -> Option<Phase> {
        let calls = self.lock();
        let e = calls.get(id)?;
        e.cancel.cancel();
        e.kill.cancel();
        Some(e.phase)
    }

    /// Deny everything still waiting, refuse new calls.
    pub fn shut_down(&self) {
        self.shutdown.cancel();
    }

    pub fn pending_count(&self) -> usize {
        self.lock()
            .values()
            .filter(|e| e.phase == Phase::WaitingForApproval)
            .count()
    }

    /// Whether every registered call has finished.
    pub fn idle(&self) -> bool {
        self.lock().values().all(|e| e.phase == Phase::Done)
    }
}

struct BrokerApprover {
    broker: Arc<Broker>,
}

#[async_trait]
impl Approver for BrokerApprover {
    async fn ask(&self, request: ApprovalRequest) -> ApprovalAnswer {
        let id = request.call_id.clone();
        let cancel = self
            .broker
            .lock()
            .get(&id)
            .map(|e| e.cancel.clone())
            .unwrap_or_else(|| self.broker.shutdown.child_token());
        self.broker.set_phase(&id, Phase::WaitingForApproval);
        self.broker.emit(Event::Pending {
            call_id: id.clone(),
            tool: request.tool,
            risk: request.risk,
            session: request.session.clone(),
        });
        let shutdown = self.broker.shutdown.clone();
        let answer = tokio::select! {
            a = self.broker.inner.ask(request) => a,
            _ = cancel.cancelled() => {
                let reason = if shutdown.is_cancelled() { "ground-link shut down before anyone answered" } else { "cancelled by the client" };
                ApprovalAnswer::Deny { reason: Some(reason.to_string()) }
            }
        };
        self.broker.set_phase(&id, Phase::Running);
        self.broker.emit(Event::Resolved {
            call_id: id,
            allowed: matches!(answer, ApprovalAnswer::Allow { .. }),
        });
        answer
    }
    fn name(&self) -> &'static str {
        self.broker.inner.name()
    }
    async fn ask_pairing(&self, origin: &str, timeout: std::time::Duration) -> Result<(), String> {
        let shutdown = self.broker.shutdown.clone();
        tokio::select! {
            a = self.broker.inner.ask_pairing(origin, timeout) => a,
            _ = shutdown.cancelled() => Err("ground-link shut down before anyone answered".to_string()),
        }
    }
}
