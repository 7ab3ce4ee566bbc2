//! The tray: menu items as an enum, the icon and tooltip as a pure function of the host's
//! state, and the menu's handlers behind a small trait so they are tested without a tray host
//! (Xvfb has none).

use crate::host::HostStatus;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TrayItem {
    /// A disabled line saying what is going on.
    Status,
    /// Open the sandbox root in the file manager.
    SandboxRoot,
    Pause,
    /// A check item: mode auto (moderate calls run without a dialog) when checked.
    AutoMode,
    OpenSettings,
    RunClipboard,
    Quit,
}

impl TrayItem {
    pub const ALL: [TrayItem; 7] = [
        TrayItem::Status,
        TrayItem::SandboxRoot,
        TrayItem::Pause,
        TrayItem::AutoMode,
        TrayItem::OpenSettings,
        TrayItem::RunClipboard,
        TrayItem::Quit,
    ];

    pub fn id(self) -> &'static str {
        match self {
            TrayItem::Status => "status",
            TrayItem::SandboxRoot => "sandbox-root",
            TrayItem::Pause => "pause",
            TrayItem::AutoMode => "auto-mode",
            TrayItem::OpenSettings => "settings",
            TrayItem::RunClipboard => "run-clipboard",
            TrayItem::Quit => "quit",
        }
    }

    pub fn from_id(id: &str) -> Option<TrayItem> {
        TrayItem::ALL.into_iter().find(|i| i.id() == id)
    }
}

/// The four icon states of the issue, the waiting one with its count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrayIcon {
    Disconnected,
    Connected,
    Waiting(usize),
    Paused,
}

impl TrayIcon {
    pub fn png(self) -> &'static [u8] {
        const WAITING: [&[u8]; 9] = [
            include_bytes!("../../icons/tray-waiting-1.png"),
            include_bytes!("../../icons/tray-waiting-2.png"),
            include_bytes!("../../icons/tray-waiting-3.png"),
            include_bytes!("../../icons/tray-waiting-4.png"),
            include_bytes!("../../icons/tray-waiting-5.png"),
            include_bytes!("../../icons/tray-waiting-6.png"),
            include_bytes!("../../icons/tray-waiting-7.png"),
            include_bytes!("../../icons/tray-waiting-8.png"),
            include_bytes!("../../icons/tray-waiting-9.png"),
        ];
        match self {
            TrayIcon::Disconnected => include_bytes!("../../icons/tray-disconnected.png"),
            TrayIcon::Connected => include_bytes!("../../icons/tray-connected.png"),
            TrayIcon::Paused => include_bytes!("../../icons/tray-paused.png"),
            TrayIcon::Waiting(n) if (1..=9).contains(&n) => WAITING[n - 1],
            TrayIcon::Waiting(_) => include_bytes!("../../icons/tray-waiting-9plus.png"),
        }
    }
}

/// What the tray shows for a state: icon, tooltip, and the status line of the menu.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrayLook {
    pub icon: TrayIcon,
    pub tooltip: String,
    pub status: String,
}

pub fn look(s: &HostStatus) -> TrayLook {
    let (icon, status) = if s.pending > 0 {
        (
            TrayIcon::Waiting(s.pending),
            format!(
                "{} call{} waiting for your approval",
                s.pending,
                if s.pending == 1 { "" } else { "s" }
            ),
        )
    } else if s.paused {
        (TrayIcon::Paused, "Paused: nothing runs".to_string())
    } else if !s.running {
        (
            TrayIcon::Disconnected,
            format!(
                "Not running: {}",
                s.problem.clone().unwrap_or_else(|| "starting".into())
            ),
        )
    } else if s.connected {
        (
            TrayIcon::Connected,
            "Browser extension connected".to_string(),
        )
    } else {
        (
            TrayIcon::Disconnected,
            "Waiting for the browser extension".to_string(),
        )
    };
    let mut tooltip = format!("ground-link: {status}");
    if let (Some(port), Some(root)) = (s.port, &s.root) {
        tooltip.push_str(&format!("\n127.0.0.1:{port} · {}", root.display()));
    }
    if s.running {
        if let Some(p) = &s.problem {
            tooltip.push_str(&format!("\nwarning: {p}"));
        }
    }
    TrayLook {
        icon,
        tooltip,
        status,
    }
}

/// What the menu can do; the app implements it over the real host and windows.
pub trait TrayActions {
    fn open_root(&self);
    fn set_paused(&self, paused: bool);
    fn set_auto(&self, auto: bool);
    fn open_settings(&self);
    fn run_clipboard(&self);
    fn quit(&self);
    fn is_paused(&self) -> bool;
    fn is_auto(&self) -> bool;
}

/// Run a menu item. Returns false for items that do nothing when clicked.
pub fn handle(item: TrayItem, a: &dyn TrayActions) -> bool {
    match item {
        TrayItem::Status => return false,
        TrayItem::SandboxRoot => a.open_root(),
        TrayItem::Pause => a.set_paused(!a.is_paused()),
        TrayItem::AutoMode => a.set_auto(!a.is_auto()),
        TrayItem::OpenSettings => a.open_settings(),
        TrayItem::RunClipboard => a.run_clipboard(),
        TrayItem::Quit => a.quit(),
    }
    true
}

/// The label of an item for the current state.
pub fn label(item: TrayItem, s: &HostStatus, auto: bool) -> String {
    match item {
        TrayItem::Status => look(s).status,
        TrayItem::SandboxRoot => match &s.root {
            Some(r) => format!("Open sandbox folder ({})", r.display()),
            None => "Open sandbox folder (none chosen)".to_string(),
        },
        TrayItem::Pause => if s.paused { "Resume" } else { "Pause" }.to_string(),
        TrayItem::AutoMode => {
            let _ = auto;
            "Auto mode (moderate calls run without asking)".to_string()
        }
        TrayItem::OpenSettings => "Settings…".to_string(),
        TrayItem::RunClipboard => "Run tool calls from clipboard".to_string(),
        TrayItem::Quit => "Quit ground-link".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;
    use std::path::PathBuf;

    fn status(running: bool, paused: bool, connected: bool, pending: usize) -> HostStatus {
        HostStatus {
            running,
            paused,
            port: running.then_some(18080),
            root: running.then(|| PathBuf::from("/home/u/proj")),
            connected,
            pending,
            problem: None,
        }
    }

    #[test]
    fn icon_and_tooltip_follow_the_state() {
        let table = [
            (
                status(true, false, true, 0),
                TrayIcon::Connected,
                "connected",
            ),
            (
                status(true, false, false, 0),
                TrayIcon::Disconnected,
                "Waiting for the browser",
            ),
            (
                status(true, false, true, 2),
                TrayIcon::Waiting(2),
                "2 calls waiting",
            ),
            (
                status(true, false, true, 1),
                TrayIcon::Waiting(1),
                "1 call waiting",
            ),
            (status(false, true, false, 0), TrayIcon::Paused, "Paused"),
            (
                status(false, false, false, 0),
                TrayIcon::Disconnected,
                "Not running",
            ),
        ];
        for (s, icon, text) in table {
            let l = look(&s);
            assert_eq!(l.icon, icon, "{s:?}");
            assert!(l.tooltip.contains(text), "{}", l.tooltip);
            assert!(l.status.contains(text));
        }
        assert!(
            look(&status(true, false, true, 0))
                .tooltip
                .contains("127.0.0.1:18080 · /home/u/proj")
        );
    }

    #[test]
    fn every_icon_is_a_png() {
        let icons = [
            TrayIcon::Disconnected,
            TrayIcon::Connected,
            TrayIcon::Paused,
            TrayIcon::Waiting(1),
            TrayIcon::Waiting(9),
            TrayIcon::Waiting(12),
        ];
        for i in icons {
            assert_eq!(&i.png()[..8], b"\x89PNG\r\n\x1a\n", "{i:?}");
        }
        assert_ne!(TrayIcon::Waiting(3).png(), TrayIcon::Waiting(4).png());
        assert_eq!(TrayIcon::Waiting(10).png(), TrayIcon::Waiting(99).png());
    }

    #[derive(Default)]
    struct Log {
        calls: RefCell<Vec<String>>,
        paused: bool,
        auto: bool,
    }
    impl TrayActions for Log {
        fn open_root(&self) {
            self.calls.borrow_mut().push("open_root".into())
        }
        fn set_paused(&self, p: bool) {
            self.calls.borrow_mut().push(format!("paused={p}"))
        }
        fn set_auto(&self, a: bool) {
            self.calls.borrow_mut().push(format!("auto={a}"))
        }
        fn open_settings(&self) {
            self.calls.borrow_mut().push("settings".into())
        }
        fn run_clipboard(&self) {
            self.calls.borrow_mut().push("clipboard".into())
        }
        fn quit(&self) {
            self.calls.borrow_mut().push("quit".into())
        }
        fn is_paused(&self) -> bool {
            self.paused
        }
        fn is_auto(&self) -> bool {
            self.auto
        }
    }

    #[test]
    fn menu_handlers() {
        let table: [(TrayItem, bool, bool, Option<&str>); 9] = [
            (TrayItem::Status, false, false, None),
            (TrayItem::SandboxRoot, false, false, Some("open_root")),
            (TrayItem::Pause, false, false, Some("paused=true")),
            (TrayItem::Pause, true, false, Some("paused=false")),
            (TrayItem::AutoMode, false, false, Some("auto=true")),
            (TrayItem::AutoMode, false, true, Some("auto=false")),
            (TrayItem::OpenSettings, false, false, Some("settings")),
            (TrayItem::RunClipboard, false, false, Some("clipboard")),
            (TrayItem::Quit, false, false, Some("quit")),
        ];
        for (item, paused, auto, want) in table {
            let log = Log {
                paused,
                auto,
                ..Default::default()
            };
            let acted = handle(item, &log);
            assert_eq!(acted, want.is_some(), "{item:?}");
            assert_eq!(
                log.calls.borrow().first().map(String::as_str),
                want,
                "{item:?}"
            );
            assert_eq!(TrayItem::from_id(item.id()), Some(item));
        }
        assert_eq!(
            label(TrayItem::Pause, &status(false, true, false, 0), false),
            "Resume"
        );
    }
}
