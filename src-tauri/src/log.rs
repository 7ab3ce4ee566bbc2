//! The app's diagnostics go to a file: started from the desktop or at login, it has no
//! terminal. `$XDG_STATE_HOME/ground-link/app.<date>.log`, a new file each day, the last seven
//! kept; the level from `GROUND_LINK_LOG` as for the CLI. The settings window shows the folder.
//! Started from a terminal (`make run`), the same events also go to standard error.

use std::path::PathBuf;

use tracing_appender::rolling::{Builder, Rotation};

/// Sends events to the log folder; `None` (and events go nowhere) when it cannot be made.
pub fn to_file() -> Option<PathBuf> {
    let dir = ground_link::logging::log_dir()?;
    let appender = Builder::new()
        .rotation(Rotation::DAILY)
        .filename_prefix("app")
        .filename_suffix("log")
        .max_log_files(7)
        .build(&dir);
    let appender = match appender {
        Ok(a) => a,
        Err(e) => {
            eprintln!(
                "ground-link-app: no diagnostic log in {}: {e}",
                dir.display()
            );
            return None;
        }
    };
    use tracing_subscriber::prelude::*;
    let file = tracing_subscriber::fmt::layer()
        .with_writer(appender)
        .with_ansi(false);
    let terminal = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_target(false)
        .with_ansi(false)
        .without_time();
    tracing_subscriber::registry()
        .with(ground_link::logging::filter())
        .with(file)
        .with(terminal)
        .try_init()
        .ok()?;
    Some(dir)
}
