//! The app object behind the commands and the tray: the hosted core, the settings, the token,
//! and the windows. Tauri-specific glue lives here and in `lib.rs`; decisions stay in the core.

use std::sync::{Arc, Mutex};

use tauri::ipc::Channel;
use tauri::{AppHandle, Manager};
use tauri_plugin_store::StoreExt;

use ground_link::bridge::token::TokenStore;
use ground_link::engine::Engine;
use ground_link::protocol::ApprovalMode;

use crate::commands::{ClientAdded, ClientView, PairedExtension, PairingView, SettingsView};
use crate::dialog_window::{self, DialogWindow};
use crate::error::{CommandError, CommandErrorKind};
use crate::host::Host;
use crate::settings::{AppSettings, STORE_FILE, STORE_KEY};
use crate::view::DialogState;
use crate::windows::WindowId;

pub struct App {
    pub handle: AppHandle,
    pub host: Arc<Host>,
    settings: Mutex<AppSettings>,
    dialog: Arc<DialogWindow>,
    tokens: TokenStore,
    /// One settings change at a time: two quick tray toggles must leave the engine in the
    /// state that was saved last.
    changing: tokio::sync::Mutex<()>,
}

/// A poisoned lock still holds usable state: a panic elsewhere must not stop the dialog.
pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl App {
    pub fn new(
        handle: AppHandle,
        host: Arc<Host>,
        settings: AppSettings,
        tokens: TokenStore,
    ) -> Arc<App> {
        let dialog = DialogWindow::new(handle.clone());
        host.approver
            .set_surface(Arc::new(dialog_window::Surface(Arc::clone(&dialog))));
        host.approver.set_language(settings.core.language);
        Arc::new(App {
            handle,
            host,
            settings: Mutex::new(settings),
            dialog,
            tokens,
            changing: tokio::sync::Mutex::new(()),
        })
    }

    pub fn settings(&self) -> AppSettings {
        lock(&self.settings).clone()
    }

    pub fn engine(&self) -> Result<Arc<Engine>, CommandError> {
        self.host.engine().ok_or_else(|| {
            let why =
                self.host.status().problem.unwrap_or_else(|| {
                    "ground-link is paused; resume it from the tray".to_string()
                });
            CommandError::new(CommandErrorKind::NotRunning, why)
        })
    }

    /// The approval dialog's window (made on demand; see `dialog_window`).
    pub fn dialog(&self) -> &Arc<DialogWindow> {
        &self.dialog
    }

    pub fn subscribe_dialog(&self, channel: Channel<DialogState>) -> DialogState {
        self.dialog.subscribe(channel);
        // The page loads when a question has made its window (or the window was made again):
        // presenting now brings the window up, or the question would wait unseen.
        self.host.approver.refresh();
        self.host.approver.state()
    }

    pub fn dialog_rendered(&self, call_id: &str) -> Option<u64> {
        let ms = self.host.approver.rendered(call_id)?;
        eprintln!(
            "ground-link-app: approval dialog for {call_id} rendered {ms} ms after the call arrived"
        );
        Some(ms)
    }

    pub fn settings_view(&self) -> SettingsView {
        let paths = self.host.paths();
        SettingsView {
            settings: self.settings(),
            status: self.host.status(),
            global_rules: paths.global_rules().display().to_string(),
            managed_rules: paths.managed.display().to_string(),
            audit_dir: paths.audit_dir().display().to_string(),
            log_dir: ground_link::logging::log_dir()
                .map(|d| d.display().to_string())
                .unwrap_or_default(),
            version: env!("CARGO_PKG_VERSION").to_string(),
        }
    }

    /// Persist and apply new settings (the bridge restarts when the core changed).
    pub async fn save_settings(&self, new: AppSettings) -> Result<SettingsView, CommandError> {
        new.validate()?;
        let _one = self.changing.lock().await;
        let old = self.settings();
        self.persist(&new)?;
        *lock(&self.settings) = new.clone();
        self.host.approver.set_language(new.core.language);
        if new.core.language != old.core.language {
            self.retitle();
        }
        if new.autostart != old.autostart {
            self.set_autostart(new.autostart);
        }
        let mut live = old.core.clone();
        live.mode = new.core.mode;
        live.language = new.core.language;
        match self.host.engine() {
            // Ask/auto and the language change in place: pending approvals and conversation
            // grants survive the tray's toggle.
            Some(engine) if new.root == old.root && new.core == live => {
                engine.set_mode(new.core.mode);
            }
            _ => self.host.apply(&new).await?,
        }
        Ok(self.settings_view())
    }

    fn persist(&self, s: &AppSettings) -> Result<(), CommandError> {
        let not_saved = |e: &dyn std::fmt::Display| {
            CommandError::io(format!("the settings could not be saved: {e}"))
        };
        let store = self.handle.store(STORE_FILE).map_err(|e| not_saved(&e))?;
        store.set(
            STORE_KEY,
            serde_json::to_value(s).map_err(|e| not_saved(&e))?,
        );
        store.save().map_err(|e| not_saved(&e))
    }

    fn set_autostart(&self, on: bool) {
        use tauri_plugin_autostart::ManagerExt;
        let launcher = self.handle.autolaunch();
        let r = if on {
            launcher.enable()
        } else {
            launcher.disable()
        };
        if let Err(e) = r {
            tracing::warn!("autostart could not be changed: {e}");
        }
    }

    pub async fn set_paused(&self, paused: bool) -> Result<(), CommandError> {
        let _one = self.changing.lock().await;
        let s = self.settings();
        Ok(self.host.set_paused(paused, &s).await?)
    }

    pub async fn set_auto(&self, auto: bool) -> Result<(), CommandError> {
        let mut s = self.settings();
        s.core.mode = if auto {
            ApprovalMode::Auto
        } else {
            ApprovalMode::Ask
        };
        self.save_settings(s).await.map(|_| ())
    }

    pub fn pairing_view(&self) -> PairingView {
        let status = self.host.status();
        let token = self.host.token();
        let clients = self.clients().list();
        PairingView {
            token: token.secret().to_string(),
            kept_in: token.kept_in.clone(),
            warning: token.warning.clone(),
            port: status.port,
            connected: status.connected,
            paired: self
                .host
                .bridge()
                .map(|b| {
                    b.paired()
                        .into_iter()
                        .map(|(origin, last_seen)| PairedExtension { origin, last_seen })
                        .collect()
                })
                .unwrap_or_default(),
            clients: clients
                .iter()
                .flatten()
                .map(|c| ClientView {
                    name: c.name.clone(),
                    created: c.created,
                })
                .collect(),
            clients_error: clients.err().map(|e| e.to_string()),
        }
    }

    /// The named clients' file, the one `ground-link token add` writes and the bridge reads.
    fn clients(&self) -> ground_link::bridge::clients::Clients {
        ground_link::bridge::clients::Clients::new(ground_link::bridge::clients::default_location(
            self.host.paths(),
        ))
    }

    /// A new named MCP client; its token is returned this once (only a digest is kept).
    pub fn add_client(&self, name: &str) -> Result<ClientAdded, CommandError> {
        let token = self.clients().add(name.trim())?;
        Ok(ClientAdded {
            pairing: self.pairing_view(),
            token,
        })
    }

    /// Revokes a named client; the bridge refuses its token from the next request.
    pub fn revoke_client(&self, name: &str) -> Result<PairingView, CommandError> {
        if self.clients().revoke(name)? {
            return Ok(self.pairing_view());
        }
        Err(CommandError::new(
            CommandErrorKind::NotFound,
            format!("there is no client named {name:?}; it may be revoked already"),
        ))
    }

    pub fn copy_token(&self) -> Result<(), CommandError> {
        use tauri_plugin_clipboard_manager::ClipboardExt;
        self.handle
            .clipboard()
            .write_text(self.host.token().secret().to_string())
            .map_err(|e| CommandError::io(format!("the token could not be copied: {e}")))
    }

    /// A new token; the bridge restarts with it (paired extensions must pair again).
    pub async fn rotate_token(&self) -> Result<PairingView, CommandError> {
        let _one = self.changing.lock().await;
        self.host.set_token(self.tokens.rotate()?);
        self.host.apply(&self.settings()).await?;
        Ok(self.pairing_view())
    }

    pub async fn pick_folder(&self) -> Option<String> {
        use tauri_plugin_dialog::DialogExt;
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.handle.dialog().file().pick_folder(move |p| {
            let _ = tx.send(p.map(|p| p.to_string()));
        });
        rx.await.ok().flatten()
    }

    pub fn open_root(&self) -> Result<(), CommandError> {
        use tauri_plugin_opener::OpenerExt;
        let root = self
            .host
            .status()
            .root
            .or_else(|| self.settings().root)
            .ok_or_else(|| {
                CommandError::invalid_input(
                    "no sandbox folder is chosen yet; choose one and save first",
                )
            })?;
        self.handle
            .opener()
            .open_path(root.display().to_string(), None::<&str>)
            .map_err(|e| CommandError::io(format!("{} could not be opened: {e}", root.display())))
    }

    /// Title every open window in the chosen language.
    pub fn retitle(&self) {
        let lang = self.settings().core.language;
        for id in WindowId::ALL {
            if let Some(win) = self.handle.get_webview_window(id.label()) {
                let _ = win.set_title(id.title(lang));
            }
        }
    }

    /// Bring a window to the front, making it first if it was closed.
    pub fn show(&self, w: WindowId) {
        let lang = self.settings().core.language;
        let reveal = move |win: tauri::WebviewWindow| {
            let _ = win.set_title(w.title(lang));
            let _ = win.unminimize();
            let _ = win.show();
            let _ = win.set_focus();
        };
        match self.handle.get_webview_window(w.label()) {
            Some(win) => reveal(win),
            None => {
                let app = self.handle.clone();
                tauri::async_runtime::spawn_blocking(move || {
                    if let Some(win) = crate::windows::get_or_create(&app, w) {
                        reveal(win);
                    }
                });
            }
        }
    }

    /// Parse the clipboard, run its calls, copy the results back. Returns a line for the tray.
    pub async fn run_clipboard(&self) -> String {
        use tauri_plugin_clipboard_manager::ClipboardExt;
        let engine = match self.engine() {
            Ok(e) => e,
            Err(e) => return e.message,
        };
        let text = match self.handle.clipboard().read_text() {
            Ok(t) => t,
            Err(e) => return format!("the clipboard could not be read: {e}"),
        };
        let from = ground_link::protocol::Source::Clipboard;
        match ground_link::reply::run_reply(&engine, &text, None, from).await {
            None => "no <tool> calls in the clipboard".to_string(),
            Some(run) => match self.handle.clipboard().write_text(run.text) {
                Ok(()) => format!(
                    "{} call(s) ran; results are in the clipboard, paste them into the chat",
                    run.calls
                ),
                Err(e) => format!("the results could not be copied: {e}"),
            },
        }
    }
}
