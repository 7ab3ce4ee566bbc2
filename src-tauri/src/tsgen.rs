//! The UI's TypeScript types (`ui/src/gen/types.ts`), generated from the Rust types by the
//! core's converter ([`ground_link::tsgen`]); this file only names the roots the UI sees. The
//! test `generated_types_are_current` fails when the file is stale, and
//! `GL_WRITE_TYPES=1 cargo test -p ground-link-app tsgen` rewrites it.

use std::collections::BTreeMap;

use ground_link::tsgen;
use serde_json::Value;

/// Register every type the UI sees; returns their definitions by name.
pub fn definitions() -> BTreeMap<String, Value> {
    let mut g = tsgen::generator();
    macro_rules! roots {
        ($($t:ty),* $(,)?) => { $( let _ = g.subschema_for::<$t>(); )* };
    }
    roots!(
        ground_link::protocol::ApprovalAnswer,
        ground_link::protocol::Decision,
        ground_link::protocol::Settings,
        ground_link::protocol::Hooks,
        ground_link::protocol::CallStatus,
        ground_link::policy::edit::RuleFileView,
        ground_link::policy::edit::RuleEdit,
        ground_link::policy::edit::TrustView,
        crate::view::DialogState,
        crate::settings::AppSettings,
        crate::settings::RootCheck,
        crate::audit_view::AuditFilter,
        crate::audit_view::AuditPage,
        crate::audit_view::ChainCheck,
        crate::commands::StatusView,
        crate::commands::PairingView,
        crate::commands::ClientAdded,
        ground_link::hooks::HookRun,
        crate::commands::SettingsView,
        crate::error::CommandError,
    );
    tsgen::definitions(&g)
}

pub fn typescript() -> String {
    let mut ts = tsgen::typescript(
        "// Generated from the Rust types by src-tauri/src/tsgen.rs; do not edit by hand.\n// Regenerate: GL_WRITE_TYPES=1 cargo test -p ground-link-app tsgen\n/* eslint-disable */\n\n",
        &definitions(),
    );
    // The app's commands (src/command_names.rs): `ipc.ts` can invoke these and no other.
    ts.push_str(
        "\n/** Every app command (src-tauri/src/command_names.rs). */\nexport const COMMANDS = [\n",
    );
    for name in crate::commands::ALL {
        ts.push_str(&format!("  \"{name}\",\n"));
    }
    ts.push_str("] as const;\nexport type Command = (typeof COMMANDS)[number];\n");
    ts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_types_are_current() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../ui/src/gen/types.ts");
        let names = [
            "ApprovalAnswer",
            "DialogState",
            "RuleEdit",
            "AppSettings",
            "Decision",
            "Scope",
        ];
        let hint = "GL_WRITE_TYPES=1 cargo test -p ground-link-app tsgen";
        if let Err(e) = tsgen::check_generated(&path, &typescript(), &names, hint) {
            panic!("{e}");
        }
    }
}
