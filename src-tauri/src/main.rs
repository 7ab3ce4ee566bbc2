//! `ground-link-app`: the tray app. Glue only; see the library.
#![cfg_attr(not(debug_assertions), windows_subsystem = "windows")]

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    let started = std::time::Instant::now();
    // The `exec_cmd` supervisor is the `ground-link` CLI, not this binary (WebKit makes it
    // multi-threaded before main). Started as one anyway, it refuses with a clear report
    // instead of opening a window.
    ground_link::supervisor::run_if_supervisor();
    // A command the model started must not open the app that answers its own approvals.
    if ground_link::isolate::inside_exec() {
        eprintln!(
            "ground-link-app: refusing to run inside exec_cmd (a command the model started); \
             start the app yourself"
        );
        std::process::exit(2);
    }
    ground_link_app::run(started);
}
