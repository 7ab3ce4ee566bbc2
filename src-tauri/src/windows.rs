//! The app's windows, as an enum rather than label strings (CONVENTIONS: windows and tray items
//! are enums). Both are declared in `tauri.conf.json` and created hidden at start-up, so the
//! approval dialog appears within the 300 ms budget and WebDriver finds a window at once.

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
        }
        assert_eq!(WindowId::from_label("main"), None);
    }
}
