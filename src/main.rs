//! The `factory-mcp` binary: parses the command line and dispatches each subcommand to the
//! crate that owns it. No logic lives here beyond starting the embedded sandbox.

mod demo;
mod doctor;
mod embedded;
mod manpage;
mod setup;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// MCP tool server for Prime Intellect Model Factory.
#[derive(Debug, Parser)]
#[command(name = "factory-mcp", version, about, long_about = None)]
pub(crate) struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Serve MCP over stdio (default) or streamable HTTP (--http ADDR).
    Serve(factory_server::serve::ServeArgs),
    /// Run the platform simulator alone (for the `prime` CLI or other clients).
    Sandbox(factory_sandbox::cli::SandboxArgs),
    /// Validate a prime-rl TOML config (exit 0 valid, 1 invalid, 2 unusable input).
    CheckConfig(factory_server::check_config::CheckConfigArgs),
    /// Watch your active runs and stop (or pause) those past the policy's limits.
    Guard(factory_server::guard::GuardArgs),
    /// Approve or refuse a pending launch plan from this terminal (launches nothing).
    Approve(factory_server::approve::ApproveArgs),
    /// Walk through the whole workflow on the embedded sandbox through a real MCP client.
    Demo(demo::DemoArgs),
    /// Add factory-mcp to an assistant's MCP configuration (claude-code, cursor, codex, vscode).
    Setup(setup::SetupArgs),
    /// Check the installation: binary, key, team, platform, traces, state, policy, clients.
    Doctor(doctor::DoctorArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    Completions(manpage::CompletionsArgs),
    /// Print the man page.
    Man(manpage::ManArgs),
}

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Demo(args) => demo::run(args).await,
        Command::Serve(args) => {
            if args.sandbox {
                let (handle, over) = match embedded::start(args.sandbox_speed).await {
                    Ok(started) => started,
                    Err(e) => {
                        eprintln!("factory-mcp: {e}");
                        return ExitCode::from(2);
                    }
                };
                let code = factory_server::serve::run(args, Some(over)).await;
                handle.shutdown().await;
                code
            } else {
                factory_server::serve::run(args, None).await
            }
        }
        Command::Sandbox(args) => factory_sandbox::cli::run(args).await,
        Command::CheckConfig(args) => factory_server::check_config::run(args),
        Command::Guard(args) => factory_server::guard::run(args).await,
        Command::Approve(args) => factory_server::approve::run(args),
        Command::Setup(args) => setup::run(args),
        Command::Doctor(args) => doctor::run(args).await,
        Command::Completions(args) => manpage::completions(args),
        Command::Man(args) => manpage::man(args),
    }
}
