//! The approval dialog's window over its life (DESIGN §10, memory at rest). There is none at
//! rest: a WebKit webview costs a web process (~90 MB) and, on first use, a network process,
//! which a tray app would otherwise pay all day for a window seldom open. The window is made
//! when a question arrives, hidden when the last one is answered, and ended once it has stayed
//! hidden for [`LINGER`], so a run of questions from one conversation reuses it.
//!
//! One exception: under WebDriver (`TAURI_WEBVIEW_AUTOMATION=true`, set by `tauri-driver`)
//! WebKit attaches the automation session to the first webview, so the dialog is made at start
//! and kept; the app e2e tests the made-on-demand path without WebDriver.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tauri::ipc::Channel;
use tauri::{AppHandle, Manager};

use crate::app::{App, lock};
use crate::approver::DialogSurface;
use crate::view::DialogState;
use crate::windows::WindowId;

/// How long a hidden dialog is kept for the next question before its web process is ended.
pub const LINGER: Duration = Duration::from_secs(15);

/// Whether WebDriver drives this app (see the module comment).
pub fn automated() -> bool {
    std::env::var("TAURI_WEBVIEW_AUTOMATION").as_deref() == Ok("true")
}

pub struct DialogWindow {
    handle: AppHandle,
    /// The page's subscription; replaced each time a new page subscribes.
    channel: Mutex<Option<Channel<DialogState>>>,
    /// Bumped by every [`DialogSurface::present`]: a retirement planned at an older turn is
    /// void, because the dialog was wanted (or hidden again, with a retirement of its own) since.
    turn: AtomicU64,
    /// Set while the window is being ended on purpose, so its `Destroyed` event is not taken
    /// for the person closing it (which denies the call on show) and a question arriving in
    /// between waits for the next window instead of being shown on the dying one.
    retiring: AtomicBool,
    /// Made at start and never ended (WebDriver).
    keep: bool,
}

impl DialogWindow {
    pub fn new(handle: AppHandle) -> Arc<DialogWindow> {
        Arc::new(DialogWindow {
            handle,
            channel: Mutex::new(None),
            turn: AtomicU64::new(0),
            retiring: AtomicBool::new(false),
            keep: automated(),
        })
    }

    /// At start: nothing, unless WebDriver needs a webview to attach to.
    pub fn start(&self) {
        if self.keep {
            self.make();
        }
    }

    pub fn subscribe(&self, channel: Channel<DialogState>) {
        *lock(&self.channel) = Some(channel);
    }

    /// The window went away: `true` when it was ended on purpose (nothing was on show),
    /// `false` when something else destroyed it — the caller denies what it showed.
    pub fn destroyed(&self) -> bool {
        *lock(&self.channel) = None;
        self.retiring.swap(false, Ordering::SeqCst)
    }

    /// Makes the window off the event loop's thread (building waits for the loop). Its page
    /// subscribes once loaded, and that subscription presents the state, showing it.
    fn make(&self) {
        let app = self.handle.clone();
        tauri::async_runtime::spawn_blocking(move || {
            crate::windows::get_or_create(&app, WindowId::Approval);
            // In the person's language, like every open window.
            if let Some(state) = app.try_state::<Arc<App>>() {
                state.retitle();
            }
        });
    }

    /// Ends the hidden window after [`LINGER`] unless it is wanted again before then.
    fn retire_later(self: &Arc<Self>, turn: u64) {
        if self.keep {
            return;
        }
        let me = Arc::clone(self);
        tauri::async_runtime::spawn(async move {
            tokio::time::sleep(LINGER).await;
            let Some(w) = me.handle.get_webview_window(WindowId::Approval.label()) else {
                return;
            };
            {
                // The check and the flag are one step against `present`, which bumps the turn
                // under the same lock and then sees the flag.
                let _one = lock(&me.channel);
                if me.turn.load(Ordering::SeqCst) != turn {
                    return;
                }
                me.retiring.store(true, Ordering::SeqCst);
            }
            if let Err(e) = w.destroy() {
                me.retiring.store(false, Ordering::SeqCst);
                tracing::warn!("the hidden approval dialog could not be ended: {e}");
            }
        });
    }
}

/// The surface the approver presents on. `Arc` because a retirement outlives the call.
pub struct Surface(pub Arc<DialogWindow>);

impl DialogSurface for Surface {
    fn present(&self, state: &DialogState) {
        let me = &self.0;
        let channel = lock(&me.channel);
        let turn = me.turn.fetch_add(1, Ordering::SeqCst) + 1;
        if let Some(ch) = channel.as_ref() {
            let _ = ch.send(state.clone());
        }
        drop(channel);
        if me.retiring.load(Ordering::SeqCst) {
            // The window is on its way out; its `Destroyed` handler presents again.
            return;
        }
        let window = me.handle.get_webview_window(WindowId::Approval.label());
        match (state.current.is_some(), window) {
            (true, Some(w)) => {
                let _ = w.unminimize();
                let _ = w.show();
                let _ = w.set_always_on_top(true);
                let _ = w.set_focus();
            }
            (true, None) => me.make(),
            (false, Some(w)) => {
                let _ = w.hide();
                me.retire_later(turn);
            }
            (false, None) => {}
        }
    }
}
