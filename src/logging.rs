//! Diagnostics — what went wrong inside ground-link, for the person running it — as `tracing`
//! events. (What the model did is the audit log's job, not this.) The CLI writes them to
//! standard error; the tray app to a file of its own (see the app's `logging`). The level comes
//! from `GROUND_LINK_LOG` (an `EnvFilter` such as `info` or `ground_link=debug`), else `warn`.

use std::path::PathBuf;

use tracing_subscriber::EnvFilter;

/// The environment variable that sets what is logged.
pub const LOG_ENV: &str = "GROUND_LINK_LOG";

/// The filter `GROUND_LINK_LOG` asks for; a value it cannot read is reported and `warn` used.
pub fn filter() -> EnvFilter {
    match std::env::var(LOG_ENV) {
        Err(_) => EnvFilter::new("warn"),
        Ok(spec) => EnvFilter::try_new(&spec).unwrap_or_else(|e| {
            eprintln!(
                "ground-link: {LOG_ENV}={spec:?} is not a log filter ({e}); logging warnings"
            );
            EnvFilter::new("warn")
        }),
    }
}

/// Where the tray app keeps its diagnostic log: `$XDG_STATE_HOME/ground-link`
/// (`~/.local/state/ground-link`). Own state: no tool reads or writes it.
pub fn log_dir() -> Option<PathBuf> {
    dirs::state_dir().map(|d| d.join("ground-link"))
}

/// Sends events to standard error, one line each, without colour or timestamps (a terminal or
/// a service manager's journal adds its own).
pub fn to_stderr() {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter())
        .with_writer(std::io::stderr)
        .with_target(false)
        .with_ansi(false)
        .without_time()
        .try_init();
}
