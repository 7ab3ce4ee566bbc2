//! Suite: exec.
