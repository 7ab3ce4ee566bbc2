//! The Tauri config lives at the repository's top level (DESIGN §1); `tauri-build` and
//! `generate_context!` read it through the symlink `src-tauri/tauri.conf.json`.
//!
//! App commands go through the ACL: each needs an `allow-…` permission in a capability, so the
//! approval window can be limited to answering approvals.

// One list for the build script's app manifest and the app itself (`commands::ALL`).
include!("src/command_names.rs");

fn main() {
    println!("cargo:rerun-if-changed=../tauri.conf.json");
    println!("cargo:rerun-if-changed=../ui/dist");
    let attrs =
        tauri_build::Attributes::new().app_manifest(tauri_build::AppManifest::new().commands(ALL));
    if let Err(e) = tauri_build::try_build(attrs) {
        println!("cargo:warning=tauri build failed: {e:#}");
        std::process::exit(1);
    }
}
