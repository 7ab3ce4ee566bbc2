// Every app command, once. `app_commands!` hands the list to a macro: the build script's app
// manifest and `commands::ALL` take the names (each command needs a capability), `lib.rs`
// takes the handlers, and `tsgen` writes the names into the UI's types, where `ipc.ts` can call
// no other. Included by build.rs as well as by the crate, hence plain `include!`-able items.
macro_rules! app_commands {
    ($then:ident) => {
        $then! {
            approval_subscribe,
            approval_answer,
            approval_rendered,
            settings_get,
            settings_save,
            status_get,
            root_check,
            root_pick,
            root_open,
            rules_view,
            rules_apply,
            rules_check_call,
            trust_get,
            trust_project,
            hook_run,
            pairing_get,
            token_copy,
            token_rotate,
            client_add,
            client_revoke,
            audit_read,
            audit_verify,
        }
    };
}

macro_rules! command_names {
    ($($name:ident,)*) => {
        &[$(stringify!($name)),*]
    };
}

/// Every app command's name.
pub const ALL: &[&str] = app_commands!(command_names);
