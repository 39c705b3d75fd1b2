//! The `factory-mcp` binary: parses the command line and dispatches each subcommand to the
//! crate that owns it. No logic lives here beyond choosing the runtime a command runs on and
//! starting the embedded sandbox.

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

/// The command line. `serve` (an MCP client starts one per session, so its start is what users
/// wait for) is parsed against a command holding only `serve`: building clap's definition of
/// every subcommand costs more than the rest of parsing. Anything else, `serve --help` and
/// every error included, goes through the whole definition.
fn parse() -> Cli {
    let argv: Vec<std::ffi::OsString> = std::env::args_os().collect();
    serve_fast(&argv).unwrap_or_else(|| Cli::parse_from(argv))
}

/// `argv` parsed as a plain `serve` command line, or `None` to leave it to the full parser.
fn serve_fast(argv: &[std::ffi::OsString]) -> Option<Cli> {
    let help = |a: &std::ffi::OsString| {
        matches!(
            a.as_encoded_bytes(),
            b"-h" | b"--help" | b"help" | b"-V" | b"--version"
        )
    };
    if argv.get(1).is_none_or(|a| a != "serve") || argv.iter().skip(2).any(help) {
        return None;
    }
    let matches = serve_only_command().try_get_matches_from(argv).ok()?;
    let args = <factory_server::serve::ServeArgs as clap::FromArgMatches>::from_arg_matches(
        matches.subcommand_matches("serve")?,
    )
    .ok()?;
    Some(Cli {
        command: Command::Serve(args),
    })
}

/// `factory-mcp` with its `serve` subcommand alone, defined exactly as in [`Cli`].
fn serve_only_command() -> clap::Command {
    use clap::Args;
    clap::Command::new("factory-mcp")
        .version(env!("CARGO_PKG_VERSION"))
        .subcommand_required(true)
        .subcommand(factory_server::serve::ServeArgs::augment_args(
            clap::Command::new("serve"),
        ))
}

fn main() -> ExitCode {
    // The command line first: `--help`, `--version`, check-config, setup, completions and man
    // build no runtime.
    let cli = parse();
    match cli.command {
        Command::CheckConfig(args) => factory_server::check_config::run(args),
        Command::Setup(args) => setup::run(args),
        Command::Completions(args) => manpage::completions(args),
        Command::Man(args) => manpage::man(args),
        Command::Serve(args) if args.http.is_none() && !args.sandbox => {
            // One client over stdio: one thread. Its calls interleave on it (tool work waits
            // on the platform), with no hand-off between worker threads on each message and
            // no workers to start before the first answer (docs/BENCHMARKS.md, issue 20). The
            // cost: a call's synchronous work — the SQLite store answers inline, and waits up
            // to its busy timeout on a database another process holds locked — holds up the
            // others meanwhile (docs/ARCHITECTURE.md, "A tool call").
            match runtime(tokio::runtime::Builder::new_current_thread()) {
                Ok(rt) => rt.block_on(factory_server::serve::run(args, None)),
                Err(code) => code,
            }
        }
        command => match runtime(tokio::runtime::Builder::new_multi_thread()) {
            Ok(rt) => rt.block_on(run_async(command)),
            Err(code) => code,
        },
    }
}

fn runtime(mut builder: tokio::runtime::Builder) -> Result<tokio::runtime::Runtime, ExitCode> {
    builder.enable_all().build().map_err(|e| {
        eprintln!("factory-mcp: cannot start the async runtime: {e}");
        ExitCode::from(1)
    })
}

/// The commands that run on the multi-threaded runtime: the HTTP server (many clients), the
/// embedded sandbox beside a server, the simulator, the guard, the demo, doctor, and approve
/// (a synchronous command that blocks its thread on store calls and on the approval page:
/// `approve::wait`, `page::approve_on_page`).
async fn run_async(command: Command) -> ExitCode {
    match command {
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
        Command::Guard(args) => factory_server::guard::run(args).await,
        Command::Doctor(args) => doctor::run(args).await,
        Command::CheckConfig(args) => factory_server::check_config::run(args),
        Command::Approve(args) => factory_server::approve::run(args),
        Command::Setup(args) => setup::run(args),
        Command::Completions(args) => manpage::completions(args),
        Command::Man(args) => manpage::man(args),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(line: &str) -> Vec<std::ffi::OsString> {
        line.split_whitespace().map(Into::into).collect()
    }

    #[test]
    fn the_serve_fast_path_parses_as_the_whole_command_line_does() {
        for line in [
            "factory-mcp serve",
            "factory-mcp serve --workspace /tmp/ws -vv",
            "factory-mcp serve --http 127.0.0.1:8080 --allowed-host a.example --allowed-origin https://b.example",
            "factory-mcp serve --sandbox --sandbox-speed 2.5",
            "factory-mcp serve --config /tmp/p.toml --read-only --toolsets runs,account --max-cost-per-hour-usd 12.5 --allow-dir /a --allow-dir /b",
        ] {
            let full = Cli::try_parse_from(argv(line));
            let fast = serve_fast(&argv(line));
            match full {
                Ok(full) => assert_eq!(
                    format!("{:?}", fast.expect(line)),
                    format!("{full:?}"),
                    "{line}"
                ),
                // A line the full parser refuses is never taken by the fast path.
                Err(_) => assert!(fast.is_none(), "{line}"),
            }
        }
    }

    #[test]
    fn help_version_errors_and_other_commands_take_the_whole_parser() {
        for line in [
            "factory-mcp",
            "factory-mcp serve --help",
            "factory-mcp serve -h",
            "factory-mcp serve --version",
            "factory-mcp serve --no-such-flag",
            "factory-mcp serve --sandbox-speed fast",
            "factory-mcp guard",
            "factory-mcp --version",
        ] {
            assert!(serve_fast(&argv(line)).is_none(), "{line}");
        }
    }

    #[test]
    fn the_serve_only_command_defines_serve_exactly_as_the_whole_one() {
        use clap::CommandFactory;
        let full = Cli::command();
        let full = full.find_subcommand("serve").unwrap();
        let fast = serve_only_command();
        let fast = fast.find_subcommand("serve").unwrap();
        let ids = |c: &clap::Command| {
            c.get_arguments()
                .map(|a| {
                    format!(
                        "{:?} {:?} {:?} {:?}",
                        a.get_id(),
                        a.get_long(),
                        a.get_short(),
                        a.get_default_values()
                    )
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(ids(fast), ids(full));
    }
}
