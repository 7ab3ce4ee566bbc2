//! The seven sandbox tools of DESIGN §3.

pub mod exec;
pub mod search;
