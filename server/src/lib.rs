//! The command line and its settings, the stdio and streamable-HTTP transports, HTTP auth and
//! Host/Origin checks, tool gating, and tracing set-up.

pub mod approve;
pub mod check_config;
pub mod gating;
pub mod guard;
pub mod http;
pub mod lines;
pub mod page;
pub mod serve;
pub mod settings;
pub mod state_store;
mod stdio;
pub mod tracing_setup;
