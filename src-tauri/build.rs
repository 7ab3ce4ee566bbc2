//! The Tauri config lives at the repository's top level (DESIGN §1); `tauri-build` and
//! `generate_context!` read it through the symlink `src-tauri/tauri.conf.json`.
//!
//! App commands go through the ACL: each needs an `allow-…` permission in a capability, so the
//! approval window can be limited to answering approvals.

const COMMANDS: &[&str] = &[
    "approval_subscribe",
    "approval_answer",
    "approval_rendered",
    "settings_get",
    "settings_save",
    "status_get",
    "root_check",
    "root_pick",
    "root_open",
    "rules_view",
    "rules_apply",
    "rules_check_call",
    "trust_get",
    "trust_project",
    "hook_run",
    "pairing_get",
    "token_copy",
    "token_rotate",
    "audit_read",
    "audit_verify",
];

fn main() {
    println!("cargo:rerun-if-changed=../tauri.conf.json");
    println!("cargo:rerun-if-changed=../ui/dist");
    let attrs = tauri_build::Attributes::new()
        .app_manifest(tauri_build::AppManifest::new().commands(COMMANDS));
    if let Err(e) = tauri_build::try_build(attrs) {
        println!("cargo:warning=tauri build failed: {e:#}");
        std::process::exit(1);
    }
}
