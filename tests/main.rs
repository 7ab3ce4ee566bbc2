//! One integration test binary; each suite is a module (ripgrep's layout).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod audit;
mod classifier;
mod exec;
mod hooks;
mod parser;
mod search;
