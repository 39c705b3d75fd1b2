//! The command line and its settings, the stdio and streamable-HTTP transports, HTTP auth and
//! Host/Origin checks, tool gating, and tracing set-up.

pub mod check_config;
