//! ground-link's core: everything that decides what an AI may do on this machine, and does it.
//!
//! No GUI dependency: the CLI (`src/main.rs`), the bridge and the tray app are thin adapters
//! over this library. Start at [`engine::Engine`], which runs one call through the permission
//! pipeline of DESIGN §5.1.

pub mod approval;
pub mod audit;
pub mod bridge;
pub mod engine;
pub mod format;
pub mod hooks;
pub mod isolate;
pub mod jail;
pub mod logging;
pub mod native_host;
pub mod parser;
pub mod paths;
pub mod policy;
pub mod prompt;
pub mod protect;
pub mod protocol;
pub mod quarantine;
pub mod random;
pub mod reply;
pub mod signals;
pub mod supervisor;
#[doc(hidden)]
pub mod testing;
pub mod tools;
pub mod tsgen;
