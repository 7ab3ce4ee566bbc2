//! The per-call process supervisor for `exec_cmd`: child subreaper, Landlock, tree kill.

/// Called first thing by every binary that can host the engine. Returns when this process is
/// not a supervisor.
pub fn run_if_supervisor() {}
