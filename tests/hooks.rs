//! Suite: hooks.
