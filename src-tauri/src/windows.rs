//! The app's windows, as an enum rather than label strings (CONVENTIONS: windows and tray items
//! are enums). Both are declared in `tauri.conf.json`.
//!
//! Neither exists at rest: each window has its own WebKit web process, which a tray app should
//! not keep for a window seldom open. The dialog is made when a question arrives and ended when
//! it has been idle a while (`dialog_window`); settings is made when opened and destroyed when
//! closed.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum WindowId {
    /// The native approval dialog: small, on top, focused; one pending call at a time, with a
    /// queue behind it.
    Approval,
    /// Sandbox root, modes, rules, hooks, trust, pairing and the audit log.
    Settings,
}

impl WindowId {
    pub const ALL: [WindowId; 2] = [WindowId::Approval, WindowId::Settings];

    /// The label in `tauri.conf.json` and in the capability files.
    pub fn label(self) -> &'static str {
        match self {
            WindowId::Approval => "approval",
            WindowId::Settings => "settings",
        }
    }

    pub fn from_label(label: &str) -> Option<WindowId> {
        WindowId::ALL.into_iter().find(|w| w.label() == label)
    }

    /// The title bar in the person's language (`tauri.conf.json` holds the English one).
    pub fn title(self, lang: ground_link::protocol::Language) -> &'static str {
        use ground_link::protocol::Language::{En, Zh};
        match (self, lang) {
            (WindowId::Approval, En) => "ground-link — approve a tool call",
            (WindowId::Approval, Zh) => "ground-link — 批准工具调用",
            (WindowId::Settings, En) => "ground-link — settings",
            (WindowId::Settings, Zh) => "ground-link — 设置",
        }
    }

    /// Whether closing the window only hides it (the dialog, ended later when idle), or
    /// destroys it (settings).
    pub fn kept(self) -> bool {
        self == WindowId::Approval
    }
}

/// Serialises creation, so two quick "open settings" do not race to make the same window.
static CREATING: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// The window, made from its `tauri.conf.json` entry if it does not exist yet. Call it off the
/// main thread: building waits for the event loop.
pub fn get_or_create(app: &tauri::AppHandle, id: WindowId) -> Option<tauri::WebviewWindow> {
    use tauri::Manager;
    let _one = CREATING.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(w) = app.get_webview_window(id.label()) {
        return Some(w);
    }
    let config = app
        .config()
        .app
        .windows
        .iter()
        .find(|w| w.label == id.label())
        .cloned()?;
    match tauri::WebviewWindowBuilder::from_config(app, &config).and_then(|b| b.build()) {
        Ok(w) => Some(w),
        Err(e) => {
            tracing::error!("the {} window could not be made: {e}", id.label());
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_round_trip_and_match_the_config() {
        let config: serde_json::Value =
            serde_json::from_str(include_str!("../../tauri.conf.json")).unwrap();
        let declared: Vec<&str> = config["app"]["windows"]
            .as_array()
            .unwrap()
            .iter()
            .map(|w| w["label"].as_str().unwrap())
            .collect();
        for w in WindowId::ALL {
            assert_eq!(WindowId::from_label(w.label()), Some(w));
            assert!(
                declared.contains(&w.label()),
                "{w:?} is not in tauri.conf.json"
            );
        }
        for w in config["app"]["windows"].as_array().unwrap() {
            assert_eq!(w["visible"], false, "windows start hidden: {w}");
            // None is made at start (Tauri's `create` defaults to true): no web process at rest.
            assert_eq!(w["create"], false, "{w}");
        }
        assert!(WindowId::Approval.kept() && !WindowId::Settings.kept());
        // The English titles are the configured ones; the Chinese ones differ.
        for w in config["app"]["windows"].as_array().unwrap() {
            let id = WindowId::from_label(w["label"].as_str().unwrap()).unwrap();
            use ground_link::protocol::Language;
            assert_eq!(w["title"].as_str().unwrap(), id.title(Language::En));
            assert_ne!(id.title(Language::Zh), id.title(Language::En));
        }
        assert_eq!(WindowId::from_label("main"), None);
    }
}
