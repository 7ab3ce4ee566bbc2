//! One integration test binary; each suite is a module (ripgrep's layout).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod util;

mod attacks;
mod audit;
mod bridge;
mod browser;
mod classifier;
mod cli;
mod edit;
mod engine;
mod exec;
mod hooks;
mod isolation;
mod jail;
mod mcp;
mod native;
mod oracle;
mod panel;
mod parser;
mod protect;
mod reply;
mod rules;
mod search;
