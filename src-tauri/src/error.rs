//! The one error an app command rejects with: `{ "kind": "...", "message": "..." }`. The
//! kind says what the UI can do about it (point at the field, reload the list, show that
//! ground-link is not running); the message says what went wrong and what to do, in the
//! underlying error's own words. Each underlying error picks its kind once, here, in a `From`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use ground_link::bridge::clients::ClientError;
use ground_link::bridge::token::TokenError;
use ground_link::hooks::HookConfigError;
use ground_link::policy::edit::EditError;
use ground_link::policy::layers::PolicyError;

use crate::approver::AnswerError;
use crate::host::HostError;
use crate::settings::SettingsError;

/// What kind of failure a command met, so the UI can act on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum CommandErrorKind {
    // What was sent is wrong (a port, a rule, a client name, a call's JSON): fix that input.
    // (Plain comments on purpose: a doc comment on a variant changes its schema, and the
    // generated TS type would no longer be a plain union of strings.)
    InvalidInput,
    // What was named is gone (a call already answered, a rule or client removed meanwhile):
    // reload and look again.
    NotFound,
    // ground-link is paused, or stopped by a problem the message names: nothing can be
    // checked or edited against the engine until it runs.
    NotRunning,
    // The change was kept (settings saved, token rotated), but ground-link could not start
    // with it: the port is taken, the sandbox or the audit log cannot be opened.
    Engine,
    // A file (rule file, settings store, token or client file), the clipboard or the file
    // manager could not be used.
    Io,
}

/// A command's failure as the UI receives it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema, thiserror::Error)]
#[serde(rename_all = "camelCase")]
#[error("{message}")]
pub struct CommandError {
    pub kind: CommandErrorKind,
    /// What went wrong and what to do instead.
    pub message: String,
}

impl CommandError {
    pub fn new(kind: CommandErrorKind, message: impl std::fmt::Display) -> CommandError {
        CommandError {
            kind,
            message: message.to_string(),
        }
    }

    pub fn invalid_input(message: impl std::fmt::Display) -> CommandError {
        CommandError::new(CommandErrorKind::InvalidInput, message)
    }

    pub fn io(message: impl std::fmt::Display) -> CommandError {
        CommandError::new(CommandErrorKind::Io, message)
    }
}

/// Each `From` below names the kind of each of its error's cases; the message is the error's.
macro_rules! kinds {
    ($($err:ty => |$e:ident| $kind:expr;)*) => {$(
        impl From<$err> for CommandError {
            fn from($e: $err) -> CommandError {
                let kind = $kind;
                CommandError::new(kind, &$e)
            }
        }
    )*};
}

use CommandErrorKind::*;

kinds! {
    AnswerError => |e| match &e {
        AnswerError::NotPending(_) => NotFound,
        AnswerError::ScopeNotOffered(_) | AnswerError::MissingRule | AnswerError::BadRule(_) => {
            InvalidInput
        }
    };
    SettingsError => |e| InvalidInput;
    HostError => |e| match &e {
        HostError::NoRoot | HostError::Settings(_) => InvalidInput,
        HostError::Engine(_) | HostError::Bind(_) => Engine,
    };
    EditError => |e| match &e {
        EditError::NotEditable(_) | EditError::Invalid { .. } => InvalidInput,
        EditError::NotFound { .. } => NotFound,
        EditError::File { .. } | EditError::Jail(_) => Io,
        EditError::Policy(p) => policy_kind(p),
    };
    // A rule file that is missing, broken, changed since it was shown or cannot be written.
    PolicyError => |e| policy_kind(&e);
    HookConfigError => |e| InvalidInput;
    ClientError => |e| match &e {
        ClientError::BadName(_) | ClientError::Exists(_) => InvalidInput,
        ClientError::Io { .. } | ClientError::Invalid(_) | ClientError::Random(_) => Io,
    };
    TokenError => |e| Io;
}

fn policy_kind(e: &PolicyError) -> CommandErrorKind {
    match e {
        PolicyError::ReadOnlyLayer(_) => InvalidInput,
        PolicyError::File { .. } | PolicyError::Jail(_) => Io,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ground_link::engine::EngineError;
    use ground_link::jail::JailError;
    use ground_link::protocol::Scope;

    #[test]
    fn serialises_as_kind_and_message() {
        let e = CommandError::invalid_input("port 80 needs root; use one above 1023, e.g. 18080");
        assert_eq!(
            serde_json::to_value(&e).unwrap(),
            serde_json::json!({
                "kind": "invalidInput",
                "message": "port 80 needs root; use one above 1023, e.g. 18080",
            })
        );
        let kinds: Vec<_> = [InvalidInput, NotFound, NotRunning, Engine, Io]
            .iter()
            .map(|k| serde_json::to_value(k).unwrap())
            .collect();
        assert_eq!(
            kinds,
            ["invalidInput", "notFound", "notRunning", "engine", "io"]
        );
        assert_eq!(e.to_string(), e.message);
    }

    #[test]
    fn each_error_maps_to_its_kind() {
        let io = || std::io::Error::other("disk on fire");
        let file = |msg: &str| PolicyError::File {
            path: ".ground-link/permissions.json".into(),
            msg: msg.into(),
        };
        // (error, the kind it must get)
        let table: Vec<(CommandError, CommandErrorKind)> = vec![
            (AnswerError::NotPending("c-1".into()).into(), NotFound),
            (
                AnswerError::ScopeNotOffered(Scope::Global).into(),
                InvalidInput,
            ),
            (AnswerError::MissingRule.into(), InvalidInput),
            (AnswerError::BadRule("bad glob".into()).into(), InvalidInput),
            (SettingsError::RandomPort.into(), InvalidInput),
            (SettingsError::PrivilegedPort(80).into(), InvalidInput),
            (SettingsError::Timeout(1).into(), InvalidInput),
            (
                SettingsError::Root("not a folder".into()).into(),
                InvalidInput,
            ),
            (HostError::NoRoot.into(), InvalidInput),
            (
                HostError::Settings(SettingsError::Timeout(1)).into(),
                InvalidInput,
            ),
            (
                HostError::Engine(EngineError::Audit("read-only".into())).into(),
                Engine,
            ),
            (
                HostError::Bind(ground_link::bridge::BridgeError::Bind {
                    port: 18080,
                    source: io(),
                })
                .into(),
                Engine,
            ),
            (EditError::NotEditable("managed").into(), InvalidInput),
            (
                EditError::Invalid {
                    path: "p".into(),
                    msg: "m".into(),
                }
                .into(),
                InvalidInput,
            ),
            (
                EditError::NotFound {
                    path: "p".into(),
                    what: "rule \"x\"".into(),
                }
                .into(),
                NotFound,
            ),
            (
                EditError::File {
                    path: "p".into(),
                    msg: "m".into(),
                }
                .into(),
                Io,
            ),
            (EditError::Jail(JailError::Outside("..".into())).into(), Io),
            (
                EditError::Policy(PolicyError::ReadOnlyLayer("managed")).into(),
                InvalidInput,
            ),
            (EditError::Policy(file("is broken on disk")).into(), Io),
            (file("changed after it was shown to you").into(), Io),
            (PolicyError::ReadOnlyLayer("session").into(), InvalidInput),
            (
                HookConfigError::EmptyCommand {
                    hook_id: "h".into(),
                }
                .into(),
                InvalidInput,
            ),
            (ClientError::BadName("a b".into()).into(), InvalidInput),
            (ClientError::Exists("cursor".into()).into(), InvalidInput),
            (
                ClientError::Io {
                    path: "clients.json".into(),
                    source: io(),
                }
                .into(),
                Io,
            ),
            (ClientError::Invalid("clients.json".into()).into(), Io),
            (TokenError::Invalid("token".into()).into(), Io),
        ];
        for (got, want) in table {
            assert_eq!(got.kind, want, "{}", got.message);
            assert!(!got.message.is_empty());
        }
        // The message is the underlying error's own, unchanged.
        let e: CommandError = ClientError::Exists("cursor".into()).into();
        assert_eq!(e.message, ClientError::Exists("cursor".into()).to_string());
    }
}
