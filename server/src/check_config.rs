//! `factory-mcp check-config FILE [--sft] [--json]`: the config validator from the shell.
//! (Filled in by the validate_config work.)

use std::path::PathBuf;

/// Validate a prime-rl TOML config (exit 0 valid, 1 invalid, 2 unusable input).
#[derive(Debug, clap::Args)]
pub struct CheckConfigArgs {
    /// The TOML file to check.
    pub file: PathBuf,
}

pub fn run(_args: CheckConfigArgs) -> std::process::ExitCode {
    eprintln!("check-config: not built yet");
    std::process::ExitCode::from(2)
}
