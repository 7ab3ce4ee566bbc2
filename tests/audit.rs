//! Suite: audit.
