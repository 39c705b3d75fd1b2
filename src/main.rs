//! The `factory-mcp` binary: parses the command line and dispatches each subcommand to the
//! crate that owns it. No logic lives here.

use clap::Parser;
use factory_server::cli::{Cli, Command};

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    match cli.command {}
}
