//! `ground-link-app`: the tray app. Glue only; see the library.
#![cfg_attr(not(debug_assertions), windows_subsystem = "windows")]

fn main() {
    let started = std::time::Instant::now();
    // The per-call `exec_cmd` supervisor is this same binary started with a marker: it must
    // take over before anything else (no GTK, no runtime) runs.
    ground_link::supervisor::run_if_supervisor();
    ground_link_app::run(started);
}
