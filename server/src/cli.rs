//! The `factory-mcp` command line: one clap definition, dispatched by the binary's `main.rs`.

use clap::{Parser, Subcommand};

/// MCP tool server for Prime Intellect Model Factory.
#[derive(Debug, Parser)]
#[command(name = "factory-mcp", version, about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {}
