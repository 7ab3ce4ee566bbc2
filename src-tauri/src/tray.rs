//! The tray: menu items as an enum, the icon and tooltip as a pure function of the host's
//! state, and the menu's handlers behind a small trait so they are tested without a tray host
//! (Xvfb has none).

use ground_link::protocol::Language;

use crate::host::StatusView;

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

pub fn look(s: &StatusView, lang: Language) -> TrayLook {
    let zh = lang == Language::Zh;
    let (icon, status) = if s.pending > 0 {
        let n = s.pending;
        let text = match (zh, n) {
            (true, _) => format!("{n} 个调用等待你批准"),
            (false, 1) => "1 call waiting for your approval".to_string(),
            (false, _) => format!("{n} calls waiting for your approval"),
        };
        (TrayIcon::Waiting(n), text)
    } else if s.paused {
        let text = if zh {
            "已暂停：不会运行任何调用"
        } else {
            "Paused: nothing runs"
        };
        (TrayIcon::Paused, text.to_string())
    } else if !s.running {
        let why = s
            .problem
            .clone()
            .unwrap_or_else(|| if zh { "正在启动" } else { "starting" }.to_string());
        let text = if zh {
            format!("未运行：{why}")
        } else {
            format!("Not running: {why}")
        };
        (TrayIcon::Disconnected, text)
    } else if s.connected {
        let text = if zh {
            "浏览器扩展已连接"
        } else {
            "Browser extension connected"
        };
        (TrayIcon::Connected, text.to_string())
    } else {
        let text = if zh {
            "等待浏览器扩展连接"
        } else {
            "Waiting for the browser extension"
        };
        (TrayIcon::Disconnected, text.to_string())
    };
    let mut tooltip = format!("ground-link: {status}");
    if let (Some(port), Some(root)) = (s.port, &s.root) {
        tooltip.push_str(&format!("\n127.0.0.1:{port} · {}", root.display()));
    }
    if s.running {
        let warning = if zh { "警告" } else { "warning" };
        for p in [&s.problem, &s.confinement, &s.root_warning]
            .into_iter()
            .flatten()
        {
            tooltip.push_str(&format!("\n{warning}: {p}"));
        }
        // what the browser extension could not find on a chat site (issue 14)
        for p in &s.site_problems {
            tooltip.push_str(&format!("\n{p}"));
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

/// The label of an item for the current state, in the person's language.
pub fn label(item: TrayItem, s: &StatusView, lang: Language) -> String {
    let zh = lang == Language::Zh;
    let pick = |en: &str, cn: &str| if zh { cn } else { en }.to_string();
    match item {
        TrayItem::Status => look(s, lang).status,
        TrayItem::SandboxRoot => match &s.root {
            Some(r) if zh => format!("打开沙箱目录（{}）", r.display()),
            Some(r) => format!("Open sandbox folder ({})", r.display()),
            None => pick(
                "Open sandbox folder (none chosen)",
                "打开沙箱目录（尚未选择）",
            ),
        },
        TrayItem::Pause if s.paused => pick("Resume", "继续"),
        TrayItem::Pause => pick("Pause", "暂停"),
        TrayItem::AutoMode => pick(
            "Auto mode (moderate calls run without asking)",
            "自动模式（中等风险的调用不再询问）",
        ),
        TrayItem::OpenSettings => pick("Settings…", "设置…"),
        TrayItem::RunClipboard => pick("Run tool calls from clipboard", "运行剪贴板中的工具调用"),
        TrayItem::Quit => pick("Quit ground-link", "退出 ground-link"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;
    use std::path::PathBuf;

    fn status(running: bool, paused: bool, connected: bool, pending: usize) -> StatusView {
        StatusView {
            running,
            paused,
            port: running.then_some(18080),
            root: running.then(|| PathBuf::from("/home/u/proj")),
            connected,
            pending,
            problem: None,
            confinement: None,
            root_warning: None,
            site_problems: Vec::new(),
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
            let l = look(&s, Language::En);
            assert_eq!(l.icon, icon, "{s:?}");
            assert!(l.tooltip.contains(text), "{}", l.tooltip);
            assert!(l.status.contains(text));
        }
        assert!(
            look(&status(true, false, true, 0), Language::En)
                .tooltip
                .contains("127.0.0.1:18080 · /home/u/proj")
        );
        // Commands that cannot be isolated, and a broad root, are said in the tooltip.
        let mut s = status(true, false, true, 0);
        s.confinement = Some("not isolated: no user namespaces; every exec_cmd asks".into());
        s.root_warning = Some("the sandbox root /home/u is broad".into());
        let tip = look(&s, Language::En).tooltip;
        assert!(
            tip.contains("warning: not isolated: no user namespaces"),
            "{tip}"
        );
        assert!(
            tip.contains("warning: the sandbox root /home/u is broad"),
            "{tip}"
        );
        // The extension's last adapter problem per site is in the tooltip too.
        s.site_problems = vec!["DeepSeek: send button not found — using Enter".into()];
        let tip = look(&s, Language::En).tooltip;
        assert!(
            tip.ends_with("\nDeepSeek: send button not found — using Enter"),
            "{tip}"
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
            label(
                TrayItem::Pause,
                &status(false, true, false, 0),
                Language::En
            ),
            "Resume"
        );
    }

    #[test]
    fn the_tray_speaks_the_chosen_language() {
        let states = [
            status(true, false, true, 0),
            status(true, false, false, 0),
            status(true, false, true, 3),
            status(false, true, false, 0),
            status(false, false, false, 0),
        ];
        for s in &states {
            let (en, zh) = (look(s, Language::En), look(s, Language::Zh));
            assert_eq!(en.icon, zh.icon, "{s:?}");
            assert_ne!(en.status, zh.status, "{s:?}");
            assert!(
                zh.status
                    .chars()
                    .any(|c| ('\u{4e00}'..='\u{9fff}').contains(&c)),
                "not Chinese: {}",
                zh.status
            );
            for item in TrayItem::ALL {
                let (e, z) = (label(item, s, Language::En), label(item, s, Language::Zh));
                assert_ne!(e, z, "{item:?} is not translated");
                assert!(!z.is_empty() && !e.is_empty());
            }
        }
        assert!(
            look(&status(true, false, true, 3), Language::Zh)
                .status
                .contains('3')
        );
        assert!(
            label(
                TrayItem::SandboxRoot,
                &status(true, false, true, 0),
                Language::Zh
            )
            .contains("/home/u/proj")
        );
    }
}
