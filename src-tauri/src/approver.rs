//! The dialog approver: the tray app's [`Approver`]. Questions queue up in arrival order; the
//! dialog shows the oldest, and a [`DialogSurface`] (the real window, or a test double) is told
//! whenever what it should show changes.
//!
//! Guarantees:
//! - Only [`DialogApprover::answer`] approves, and only the call on show: an answer for any
//!   other call id is refused. It is reached from the approval window's capability alone
//!   (never over HTTP).
//! - Closing the dialog, quitting the app, or the engine's timeout each end the question as a
//!   deny; a question whose caller gave up (timeout, client cancel, shutdown) leaves the queue
//!   at once, so the dialog never shows a call that can no longer be answered.
//! - Focus loss does nothing.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use tokio::sync::{oneshot, watch};

use ground_link::approval::Approver;
use ground_link::policy::rules::CompiledRule;
use ground_link::protocol::{ApprovalAnswer, ApprovalRequest, Language, Layer, Scope};

use crate::view::{ApprovalView, DialogState, unix_ms};

/// Where pending approvals are shown.
pub trait DialogSurface: Send + Sync {
    /// Show `state.current` (focused, on top), or hide when there is none.
    fn present(&self, state: &DialogState);
}

struct Waiting {
    view: ApprovalView,
    scopes: Vec<Scope>,
    tx: oneshot::Sender<ApprovalAnswer>,
    arrived: Instant,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum AnswerError {
    #[error("call {0:?} is not waiting for approval (it was answered, timed out or cancelled)")]
    NotPending(String),
    #[error("scope {0:?} is not offered for this call; choose one of the buttons shown")]
    ScopeNotOffered(Scope),
    #[error("the rule to remember is missing; edit the proposed rule or allow once")]
    MissingRule,
    #[error("the rule is not valid: {0}")]
    BadRule(String),
}

pub struct DialogApprover {
    queue: Mutex<VecDeque<Waiting>>,
    surface: Mutex<Option<Arc<dyn DialogSurface>>>,
    /// How many questions wait; the tray follows it.
    count: watch::Sender<usize>,
    /// Arrival-to-rendered times the dialog reported, newest last (for the measurements).
    shown_ms: Mutex<Vec<u64>>,
    language: Mutex<Language>,
}

impl Default for DialogApprover {
    fn default() -> Self {
        DialogApprover {
            queue: Mutex::new(VecDeque::new()),
            surface: Mutex::new(None),
            count: watch::channel(0).0,
            shown_ms: Mutex::new(Vec::new()),
            language: Mutex::new(Language::En),
        }
    }
}

impl DialogApprover {
    pub fn new() -> Arc<DialogApprover> {
        Arc::new(DialogApprover::default())
    }

    pub fn set_surface(&self, surface: Arc<dyn DialogSurface>) {
        *self.surface.lock().unwrap_or_else(|p| p.into_inner()) = Some(surface);
        self.refresh();
    }

    pub fn set_language(&self, l: Language) {
        *self.language.lock().unwrap_or_else(|p| p.into_inner()) = l;
    }

    pub fn pending(&self) -> watch::Receiver<usize> {
        self.count.subscribe()
    }

    pub fn state(&self) -> DialogState {
        let q = self.queue.lock().unwrap_or_else(|p| p.into_inner());
        DialogState {
            current: q.front().map(|w| w.view.clone()),
            queued: q.len().saturating_sub(1),
            language: *self.language.lock().unwrap_or_else(|p| p.into_inner()),
        }
    }

    /// Show the current state again (count, window, page).
    pub fn refresh(&self) {
        let state = self.state();
        self.count
            .send_replace(state.current.as_ref().map_or(0, |_| state.queued + 1));
        let surface = self
            .surface
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        if let Some(s) = surface {
            s.present(&state);
        }
    }

    /// The person's answer for the call on show. A scoped allow must carry a valid rule.
    pub fn answer(&self, call_id: &str, answer: ApprovalAnswer) -> Result<(), AnswerError> {
        let waiting = {
            let mut q = self.queue.lock().unwrap_or_else(|p| p.into_inner());
            let head = q
                .front()
                .filter(|w| w.view.call_id == call_id)
                .ok_or_else(|| AnswerError::NotPending(call_id.to_string()))?;
            if let ApprovalAnswer::Allow { scope, rule, .. } = &answer {
                if !head.scopes.contains(scope) {
                    return Err(AnswerError::ScopeNotOffered(*scope));
                }
                if *scope != Scope::Once {
                    let rule = rule.clone().ok_or(AnswerError::MissingRule)?;
                    CompiledRule::compile(rule, Layer::Session)
                        .map_err(|e| AnswerError::BadRule(e.to_string()))?;
                }
            }
            q.pop_front()
        };
        if let Some(w) = waiting {
            let _ = w.tx.send(answer);
        }
        self.refresh();
        Ok(())
    }

    /// Deny every waiting question (the app quits, or the window was destroyed).
    pub fn deny_all(&self, reason: &str) {
        let drained: Vec<Waiting> = self
            .queue
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .drain(..)
            .collect();
        for w in drained {
            let _ = w.tx.send(ApprovalAnswer::Deny {
                reason: Some(reason.to_string()),
            });
        }
        self.refresh();
    }

    /// The dialog rendered `call_id`; returns the time since the call arrived.
    pub fn rendered(&self, call_id: &str) -> Option<u64> {
        let q = self.queue.lock().unwrap_or_else(|p| p.into_inner());
        let w = q.iter().find(|w| w.view.call_id == call_id)?;
        let ms = w.arrived.elapsed().as_millis() as u64;
        self.shown_ms
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(ms);
        Some(ms)
    }

    pub fn shown_times(&self) -> Vec<u64> {
        self.shown_ms
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    fn forget(&self, call_id: &str) {
        let removed = {
            let mut q = self.queue.lock().unwrap_or_else(|p| p.into_inner());
            let before = q.len();
            q.retain(|w| w.view.call_id != call_id);
            q.len() != before
        };
        if removed {
            self.refresh();
        }
    }
}

impl DialogApprover {
    /// Queues `view` behind the questions already waiting and waits for its answer; `None`
    /// when the dialog went away first. A caller that gives up (the future dropped) takes the
    /// question off the dialog.
    async fn wait_for(&self, view: ApprovalView, scopes: Vec<Scope>) -> Option<ApprovalAnswer> {
        let (tx, rx) = oneshot::channel();
        let call_id = view.call_id.clone();
        self.queue
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push_back(Waiting {
                view,
                scopes,
                tx,
                arrived: Instant::now(),
            });
        let _forget = Forget {
            approver: self,
            call_id,
        };
        self.refresh();
        rx.await.ok()
    }
}

/// Removes a question from the queue when its future is dropped (timeout, cancel, shutdown).
struct Forget<'a> {
    approver: &'a DialogApprover,
    call_id: String,
}

impl Drop for Forget<'_> {
    fn drop(&mut self) {
        self.approver.forget(&self.call_id);
    }
}

#[async_trait]
impl Approver for DialogApprover {
    async fn ask(&self, request: ApprovalRequest) -> ApprovalAnswer {
        self.wait_for(
            ApprovalView::new(&request, unix_ms()),
            request.scopes.clone(),
        )
        .await
        .unwrap_or(ApprovalAnswer::Deny {
            reason: Some("the approval dialog went away before anyone answered".to_string()),
        })
    }

    fn name(&self) -> &'static str {
        "dialog"
    }

    /// The pairing question in the same dialog and queue as calls: only "Pair" (an allow
    /// once for this question) pairs; Refuse, Escape, closing the window or the caller's
    /// timeout refuse.
    async fn ask_pairing(&self, origin: &str, timeout: Duration) -> Result<(), String> {
        let call_id = format!(
            "pair-{}",
            PAIRINGS.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        );
        let view = ApprovalView::pairing(call_id, origin, timeout.as_millis() as u64, unix_ms());
        match self.wait_for(view, vec![Scope::Once]).await {
            Some(ApprovalAnswer::Allow { .. }) => Ok(()),
            Some(ApprovalAnswer::Deny { reason: Some(r) }) => {
                Err(format!("the person refused to pair this extension: {r}"))
            }
            Some(ApprovalAnswer::Deny { reason: None }) => {
                Err("the person refused to pair this extension".to_string())
            }
            None => Err("the approval dialog went away before anyone answered".to_string()),
        }
    }
}

/// Numbers pairing questions (their ids in the dialog's queue).
static PAIRINGS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::view::tests::request;

    #[derive(Default)]
    struct Recorder(Mutex<Vec<(Option<String>, usize)>>);
    impl DialogSurface for Recorder {
        fn present(&self, s: &DialogState) {
            self.0
                .lock()
                .unwrap()
                .push((s.current.as_ref().map(|c| c.call_id.clone()), s.queued));
        }
    }

    fn setup() -> (Arc<DialogApprover>, Arc<Recorder>) {
        let a = DialogApprover::new();
        let r = Arc::new(Recorder::default());
        a.set_surface(r.clone());
        (a, r)
    }

    async fn settle() {
        for _ in 0..5 {
            tokio::task::yield_now().await;
        }
    }

    #[tokio::test]
    async fn answers_reach_the_right_call_in_order() {
        let (a, r) = setup();
        let a1 = a.clone();
        let first =
            tokio::spawn(async move { a1.ask(request("c-1", serde_json::json!({}))).await });
        settle().await;
        let a2 = a.clone();
        let second =
            tokio::spawn(async move { a2.ask(request("c-2", serde_json::json!({}))).await });
        settle().await;
        assert_eq!(a.state().current.unwrap().call_id, "c-1");
        assert_eq!(a.state().queued, 1);
        assert_eq!(*a.pending().borrow(), 2);
        // Only the call on show can be answered.
        let deny = ApprovalAnswer::Deny { reason: None };
        assert_eq!(
            a.answer("c-2", deny.clone()),
            Err(AnswerError::NotPending("c-2".into()))
        );
        a.answer(
            "c-1",
            ApprovalAnswer::Allow {
                scope: Scope::Once,
                rule: None,
                network: false,
            },
        )
        .unwrap();
        assert!(matches!(
            first.await.unwrap(),
            ApprovalAnswer::Allow {
                scope: Scope::Once,
                ..
            }
        ));
        a.answer(
            "c-2",
            ApprovalAnswer::Deny {
                reason: Some("no".into()),
            },
        )
        .unwrap();
        assert_eq!(
            second.await.unwrap(),
            ApprovalAnswer::Deny {
                reason: Some("no".into())
            }
        );
        let shown = r.0.lock().unwrap().clone();
        assert_eq!(shown.first(), Some(&(None, 0)));
        assert_eq!(shown.last(), Some(&(None, 0)), "hidden once nothing waits");
        assert!(shown.contains(&(Some("c-2".into()), 0)));
        assert_eq!(*a.pending().borrow(), 0);
    }

    #[tokio::test]
    async fn scoped_answers_need_an_offered_scope_and_a_valid_rule() {
        let (a, _) = setup();
        let mut req = request("c-1", serde_json::json!({}));
        req.scopes = vec![Scope::Once, Scope::Project];
        let a1 = a.clone();
        let task = tokio::spawn(async move { a1.ask(req).await });
        settle().await;
        let mut bad = a.state().current.unwrap().proposed_rule;
        bad.matches.path_glob = Some("a[".into());
        let table = [
            (
                ApprovalAnswer::Allow {
                    scope: Scope::Global,
                    rule: None,
                    network: false,
                },
                AnswerError::ScopeNotOffered(Scope::Global),
            ),
            (
                ApprovalAnswer::Allow {
                    scope: Scope::Project,
                    rule: None,
                    network: false,
                },
                AnswerError::MissingRule,
            ),
        ];
        for (answer, want) in table {
            assert_eq!(a.answer("c-1", answer), Err(want));
        }
        let e = a.answer(
            "c-1",
            ApprovalAnswer::Allow {
                scope: Scope::Project,
                rule: Some(bad),
                network: false,
            },
        );
        assert!(matches!(e, Err(AnswerError::BadRule(m)) if m.contains("glob")));
        assert!(
            a.state().current.is_some(),
            "a refused answer leaves the question open"
        );
        let good = a.state().current.unwrap().proposed_rule;
        a.answer(
            "c-1",
            ApprovalAnswer::Allow {
                scope: Scope::Project,
                rule: Some(good.clone()),
                network: false,
            },
        )
        .unwrap();
        assert_eq!(
            task.await.unwrap(),
            ApprovalAnswer::Allow {
                scope: Scope::Project,
                rule: Some(good),
                network: false,
            }
        );
    }

    #[tokio::test]
    async fn a_question_whose_caller_gave_up_leaves_the_queue() {
        let (a, r) = setup();
        let a1 = a.clone();
        let gave_up = tokio::time::timeout(std::time::Duration::from_millis(30), async move {
            a1.ask(request("c-1", serde_json::json!({}))).await
        })
        .await;
        assert!(gave_up.is_err());
        assert!(a.state().current.is_none());
        assert_eq!(r.0.lock().unwrap().last(), Some(&(None, 0)));
        assert_eq!(
            a.answer("c-1", ApprovalAnswer::Deny { reason: None }),
            Err(AnswerError::NotPending("c-1".into()))
        );
    }

    #[tokio::test]
    async fn quitting_denies_everything_waiting() {
        let (a, _) = setup();
        let mut tasks = Vec::new();
        for id in ["c-1", "c-2", "c-3"] {
            let a1 = a.clone();
            tasks.push(tokio::spawn(async move {
                a1.ask(request(id, serde_json::json!({}))).await
            }));
            settle().await;
        }
        a.deny_all("ground-link quit");
        for t in tasks {
            assert_eq!(
                t.await.unwrap(),
                ApprovalAnswer::Deny {
                    reason: Some("ground-link quit".into())
                }
            );
        }
        assert_eq!(*a.pending().borrow(), 0);
    }

    #[tokio::test]
    async fn the_pairing_question_waits_in_the_dialog_and_pairs_only_on_pair() {
        let (a, _r) = setup();
        let origin = "chrome-extension://nahlngkebpicfgggkehbcdnlkfhhejod/";
        for (answer, paired) in [
            (
                ApprovalAnswer::Allow {
                    scope: Scope::Once,
                    rule: None,
                    network: false,
                },
                true,
            ),
            (
                ApprovalAnswer::Deny {
                    reason: Some("not this browser".into()),
                },
                false,
            ),
        ] {
            let a1 = a.clone();
            let asked =
                tokio::spawn(async move { a1.ask_pairing(origin, Duration::from_secs(60)).await });
            settle().await;
            let shown = a.state().current.expect("the question is on show");
            assert_eq!(shown.pairing.as_deref(), Some(origin));
            assert_eq!(shown.tool, None);
            assert_eq!(shown.scopes, vec![Scope::Once]);
            assert!(shown.why.contains(origin), "{}", shown.why);
            // Only "once" is offered: a remembered pairing is not a thing.
            assert_eq!(
                a.answer(
                    &shown.call_id,
                    ApprovalAnswer::Allow {
                        scope: Scope::Global,
                        rule: None,
                        network: false
                    }
                ),
                Err(AnswerError::ScopeNotOffered(Scope::Global))
            );
            a.answer(&shown.call_id, answer).unwrap();
            let got = asked.await.unwrap();
            assert_eq!(got.is_ok(), paired, "{got:?}");
            if !paired {
                assert!(got.unwrap_err().contains("not this browser"));
            }
        }
        // The caller giving up takes the question off the dialog.
        let a1 = a.clone();
        let asked = tokio::spawn(async move {
            tokio::time::timeout(
                Duration::from_millis(50),
                a1.ask_pairing(origin, Duration::from_millis(50)),
            )
            .await
        });
        assert!(asked.await.unwrap().is_err(), "timed out");
        assert!(a.state().current.is_none());
    }
}
