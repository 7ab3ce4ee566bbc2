//! The permission engine (DESIGN §5).

pub mod classify;
