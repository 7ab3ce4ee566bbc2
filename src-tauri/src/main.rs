//! `ground-link-app`: the tray app. Glue only; see the library.
#![cfg_attr(not(debug_assertions), windows_subsystem = "windows")]

fn main() {
    let started = std::time::Instant::now();
    // The `exec_cmd` supervisor is the `ground-link` CLI, not this binary (WebKit makes it
    // multi-threaded before main). Started as one anyway, it refuses with a clear report
    // instead of opening a window.
    ground_link::supervisor::run_if_supervisor();
    ground_link_app::run(started);
}
