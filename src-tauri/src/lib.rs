//! ground-link's tray app (DESIGN §1): hosts the core in-process, owns the tray icon, the
//! approval dialog and the settings window. Everything that decides is in the core
//! (`ground_link`); the modules here show, ask and persist.

pub mod app;
pub mod approver;
pub mod audit_view;
#[macro_use]
pub mod commands;
pub mod dialog_window;
pub mod error;
pub mod host;
pub mod log;
pub mod settings;
pub mod tray;
pub mod tsgen;
pub mod view;
pub mod windows;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tauri::image::Image;
use tauri::menu::{CheckMenuItem, Menu, MenuItem, PredefinedMenuItem};
use tauri::tray::TrayIconBuilder;
use tauri::{AppHandle, Manager, RunEvent, WindowEvent};
use tauri_plugin_store::StoreExt;

use ground_link::bridge::token::TokenStore;
use ground_link::paths::ConfigPaths;
use ground_link::protocol::{ApprovalAnswer, ApprovalMode};

use crate::app::App;
use crate::host::Host;
use crate::settings::{AppSettings, STORE_FILE, STORE_KEY};
use crate::tray::{TrayActions, TrayItem};
use crate::windows::WindowId;

/// Options from the command line; they override the stored settings for this run.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Args {
    pub dir: Option<PathBuf>,
    pub port: Option<u16>,
    pub show_settings: bool,
}

impl Args {
    pub fn parse(args: impl IntoIterator<Item = String>) -> Result<Args, String> {
        let mut out = Args::default();
        let mut it = args.into_iter();
        while let Some(a) = it.next() {
            match a.as_str() {
                "--dir" => out.dir = Some(it.next().ok_or("--dir needs a folder")?.into()),
                "--port" => {
                    let p = it.next().ok_or("--port needs a number")?;
                    out.port = Some(
                        p.parse()
                            .map_err(|_| format!("--port {p:?} is not a port number"))?,
                    );
                }
                "--show-settings" => out.show_settings = true,
                "--help" | "-h" => {
                    return Err(
                        "usage: ground-link-app [--dir FOLDER] [--port PORT] [--show-settings]"
                            .into(),
                    );
                }
                // Launchers (autostart, WebDriver) may add their own; not ours to refuse.
                other => eprintln!("ground-link-app: ignoring unknown option {other:?}"),
            }
        }
        Ok(out)
    }
}

struct TrayHandles {
    /// Every plain item, so a change of language relabels them all.
    items: Vec<(TrayItem, MenuItem<tauri::Wry>)>,
    auto: CheckMenuItem<tauri::Wry>,
}

/// The tray menu's actions over the running app.
struct Actions(Arc<App>);

impl TrayActions for Actions {
    fn open_root(&self) {
        if let Err(e) = self.0.open_root() {
            eprintln!("ground-link-app: {e}");
        }
    }
    fn set_paused(&self, paused: bool) {
        let app = Arc::clone(&self.0);
        tauri::async_runtime::spawn(async move { app.set_paused(paused).await });
    }
    fn set_auto(&self, auto: bool) {
        let app = Arc::clone(&self.0);
        tauri::async_runtime::spawn(async move { app.set_auto(auto).await });
    }
    fn open_settings(&self) {
        self.0.show(WindowId::Settings);
    }
    fn run_clipboard(&self) {
        let app = Arc::clone(&self.0);
        tauri::async_runtime::spawn(async move {
            let said = app.run_clipboard().await;
            eprintln!("ground-link-app: {said}");
            if let Some(t) = app.handle.tray_by_id("main") {
                let _ = t.set_tooltip(Some(format!("ground-link: {said}")));
            }
        });
    }
    fn quit(&self) {
        let app = Arc::clone(&self.0);
        tauri::async_runtime::spawn(async move {
            app.host.shut_down().await;
            app.handle.exit(0);
        });
    }
    fn is_paused(&self) -> bool {
        self.0.host.is_paused()
    }
    fn is_auto(&self) -> bool {
        self.0.settings().core.mode == ApprovalMode::Auto
    }
}

fn build_tray(app: &AppHandle, state: &Arc<App>) -> tauri::Result<TrayHandles> {
    let s = state.host.status();
    let settings = state.settings();
    let (auto, lang) = (
        settings.core.mode == ApprovalMode::Auto,
        settings.core.language,
    );
    let item = |i: TrayItem, enabled: bool| {
        MenuItem::with_id(app, i.id(), tray::label(i, &s, lang), enabled, None::<&str>)
    };
    let status = item(TrayItem::Status, false)?;
    let root = item(TrayItem::SandboxRoot, true)?;
    let pause = item(TrayItem::Pause, true)?;
    let auto_item = CheckMenuItem::with_id(
        app,
        TrayItem::AutoMode.id(),
        tray::label(TrayItem::AutoMode, &s, lang),
        true,
        auto,
        None::<&str>,
    )?;
    let open_settings = item(TrayItem::OpenSettings, true)?;
    let clipboard = item(TrayItem::RunClipboard, true)?;
    let quit = item(TrayItem::Quit, true)?;
    let sep = PredefinedMenuItem::separator(app)?;
    let sep2 = PredefinedMenuItem::separator(app)?;
    let menu = Menu::with_items(
        app,
        &[
            &status,
            &root,
            &sep,
            &pause,
            &auto_item,
            &open_settings,
            &clipboard,
            &sep2,
            &quit,
        ],
    )?;
    let look = tray::look(&s, lang);
    let actions = Arc::clone(state);
    TrayIconBuilder::with_id("main")
        .icon(Image::from_bytes(look.icon.png())?)
        .tooltip(&look.tooltip)
        .menu(&menu)
        .show_menu_on_left_click(true)
        .on_menu_event(move |_, event| {
            if let Some(item) = TrayItem::from_id(event.id().as_ref()) {
                tray::handle(item, &Actions(Arc::clone(&actions)));
            }
        })
        .build(app)?;
    Ok(TrayHandles {
        items: vec![
            (TrayItem::Status, status),
            (TrayItem::SandboxRoot, root),
            (TrayItem::Pause, pause),
            (TrayItem::OpenSettings, open_settings),
            (TrayItem::RunClipboard, clipboard),
            (TrayItem::Quit, quit),
        ],
        auto: auto_item,
    })
}

/// Keep the tray's icon, tooltip and labels in step with the host (once a second, and at once
/// when the number of waiting approvals changes).
fn follow_state(app: AppHandle, state: Arc<App>, handles: TrayHandles) {
    tauri::async_runtime::spawn(async move {
        let mut pending = state.host.approver.pending();
        let mut last = None;
        loop {
            let s = state.host.status();
            let settings = state.settings();
            let (auto, lang) = (
                settings.core.mode == ApprovalMode::Auto,
                settings.core.language,
            );
            let look = tray::look(&s, lang);
            let key = (look.clone(), auto, lang, s.root.clone(), s.paused);
            if last.as_ref() != Some(&key) {
                if let Some(t) = app.tray_by_id("main") {
                    if let Ok(img) = Image::from_bytes(look.icon.png()) {
                        let _ = t.set_icon(Some(img));
                    }
                    let _ = t.set_tooltip(Some(&look.tooltip));
                }
                for (item, handle) in &handles.items {
                    let _ = handle.set_text(tray::label(*item, &s, lang));
                }
                let _ = handles
                    .auto
                    .set_text(tray::label(TrayItem::AutoMode, &s, lang));
                let _ = handles.auto.set_checked(auto);
                last = Some(key);
            }
            let _ = tokio::time::timeout(Duration::from_secs(1), pending.changed()).await;
        }
    });
}

fn load_settings(app: &AppHandle, args: &Args) -> AppSettings {
    let mut s: AppSettings = app
        .store(STORE_FILE)
        .ok()
        .and_then(|st| st.get(STORE_KEY))
        .and_then(|v| serde_json::from_value(v).ok())
        .unwrap_or_default();
    if let Some(d) = &args.dir {
        s.root = Some(std::fs::canonicalize(d).unwrap_or_else(|_| d.clone()));
    }
    if let Some(p) = args.port {
        s.core.port = p;
    }
    s
}

fn deny_shown(app: &AppHandle) {
    if let Some(state) = app.try_state::<Arc<App>>() {
        if let Some(current) = state.host.approver.state().current {
            let _ = state
                .host
                .approver
                .answer(&current.call_id, ApprovalAnswer::Deny { reason: None });
        }
    }
}

fn on_window_event(window: &tauri::Window, event: &WindowEvent) {
    let Some(id) = WindowId::from_label(window.label()) else {
        return;
    };
    match event {
        WindowEvent::CloseRequested { api, .. } if id.kept() => {
            // Closing the dialog only hides it (it is ended later, when idle): closing is a deny.
            api.prevent_close();
            let _ = window.hide();
            deny_shown(window.app_handle());
        }
        WindowEvent::Destroyed if id.kept() => {
            let Some(state) = window.app_handle().try_state::<Arc<App>>() else {
                return;
            };
            // Ended on purpose when idle, or destroyed from outside (some window managers and
            // WebDriver do): then what it showed is denied. Either way a question still
            // waiting gets a new window.
            if !state.dialog().destroyed() {
                deny_shown(window.app_handle());
            }
            state.host.approver.refresh();
        }
        // Settings closes for real, and its web process with it; "open" makes it again.
        _ => {}
    }
}

/// Start the app. `started` is when the process began (for the cold-start figure).
/// The invoke handler of every command in `command_names.rs`.
macro_rules! handlers {
    ($($name:ident,)*) => {
        tauri::generate_handler![$(commands::$name),*]
    };
}

pub fn run(started: Instant) {
    let args = match Args::parse(std::env::args().skip(1)) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("ground-link-app: {e}");
            std::process::exit(2);
        }
    };
    log::to_file();
    let result = tauri::Builder::default()
        .plugin(tauri_plugin_single_instance::init(|app, _argv, _cwd| {
            if let Some(state) = app.try_state::<Arc<App>>() {
                state.show(WindowId::Settings);
            }
        }))
        .plugin(tauri_plugin_store::Builder::default().build())
        .plugin(tauri_plugin_autostart::init(tauri_plugin_autostart::MacosLauncher::LaunchAgent, None))
        .plugin(tauri_plugin_dialog::init())
        .plugin(tauri_plugin_clipboard_manager::init())
        .plugin(tauri_plugin_opener::init())
        .setup(move |app| {
            let handle = app.handle().clone();
            let paths = ConfigPaths::from_env()?;
            let settings = load_settings(&handle, &args);
            let tokens = TokenStore::open(&paths);
            let token = tokens.load()?;
            if let Some(w) = &token.warning {
                tracing::warn!("{w}");
            }
            // exec_cmd's per-call supervisor is the CLI next to this binary (the package puts
            // both in /usr/bin): it must be single-threaded, and this binary is not (WebKit
            // starts a thread before main).
            let supervisor = std::env::current_exe()?.with_file_name("ground-link");
            if !supervisor.is_file() {
                tracing::error!(
                    "{} is missing, so exec_cmd calls will fail; install the ground-link CLI next to the app",
                    supervisor.display()
                );
            }
            let host = Host::new(paths, supervisor, token);
            let state = App::new(handle.clone(), host, settings.clone(), tokens);
            app.manage(Arc::clone(&state));
            state.dialog().start();
            let handles = build_tray(&handle, &state)?;
            let show_settings = args.show_settings;
            let st = Arc::clone(&state);
            tauri::async_runtime::spawn(async move {
                let outcome = st.host.apply(&settings).await;
                let status = st.host.status();
                match outcome {
                    Ok(()) => eprintln!(
                        "ground-link-app: ready in {} ms: tray up, bridge on 127.0.0.1:{}, sandbox {}",
                        started.elapsed().as_millis(),
                        status.port.unwrap_or(0),
                        status.root.map(|r| r.display().to_string()).unwrap_or_default()
                    ),
                    Err(e) => {
                        tracing::error!("tray up in {} ms, bridge not running: {e}", started.elapsed().as_millis());
                        st.show(WindowId::Settings);
                    }
                }
                if show_settings {
                    st.show(WindowId::Settings);
                }
            });
            follow_state(handle, state, handles);
            Ok(())
        })
        .on_window_event(on_window_event)
        .invoke_handler(app_commands!(handlers))
        .build(tauri::generate_context!());
    let app = match result {
        Ok(a) => a,
        Err(e) => {
            eprintln!("ground-link-app: could not start: {e}");
            std::process::exit(1);
        }
    };
    app.run(|handle, event| {
        if let RunEvent::ExitRequested { api, code, .. } = &event {
            // A tray app keeps running with every window hidden; only Quit (or a signal) ends it.
            if code.is_none() {
                api.prevent_exit();
            }
        }
        if let RunEvent::Exit = event {
            if let Some(state) = handle.try_state::<Arc<App>>() {
                state
                    .host
                    .approver
                    .deny_all("ground-link quit before anyone answered");
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_line() {
        let ok = |v: &[&str]| Args::parse(v.iter().map(|s| s.to_string()));
        assert_eq!(ok(&[]).unwrap(), Args::default());
        let a = ok(&["--dir", "/tmp/x", "--port", "18181", "--show-settings"]).unwrap();
        assert_eq!(
            a,
            Args {
                dir: Some("/tmp/x".into()),
                port: Some(18181),
                show_settings: true
            }
        );
        assert_eq!(ok(&["--frob"]).unwrap(), Args::default());
        let bad = [
            (&["--port", "x"][..], "not a port"),
            (&["--dir"][..], "needs a folder"),
            (&["-h"][..], "usage"),
        ];
        for (args, want) in bad {
            assert!(ok(args).unwrap_err().contains(want), "{args:?}");
        }
    }

    #[test]
    fn every_command_is_in_the_build_manifest_and_a_capability() {
        // build.rs and `commands::ALL` share one list (src/command_names.rs).
        let build = include_str!("../build.rs");
        assert!(
            build.contains("include!(\"src/command_names.rs\")"),
            "build.rs must use the shared list"
        );
        let approval = include_str!("../capabilities/approval.json");
        let settings = include_str!("../capabilities/settings.json");
        for c in commands::ALL {
            let perm = format!("\"allow-{}\"", c.replace('_', "-"));
            let in_approval = approval.contains(&perm);
            let in_settings = settings.contains(&perm);
            // The approval window may read and answer approvals, and nothing else.
            assert_eq!(
                in_approval,
                c.starts_with("approval_"),
                "{c} in the approval capability"
            );
            assert_eq!(
                in_settings,
                !c.starts_with("approval_"),
                "{c} in the settings capability"
            );
        }
    }
}
