//! `factory-mcp sandbox`: the simulator alone, for the official `prime` CLI or other clients.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use crate::clock::ClockMode;
use crate::handle::{Sandbox, SandboxOptions, SeedSource};

/// Run the platform simulator alone.
#[derive(Debug, clap::Args)]
pub struct SandboxArgs {
    /// Address to listen on (platform API and traces service on the same port).
    #[arg(long, default_value = "127.0.0.1:8787")]
    pub listen: SocketAddr,
    /// Simulated seconds per wall-clock second.
    #[arg(long, default_value_t = 1.0)]
    pub speed: f64,
    /// Time moves only with `POST /_sandbox/clock/advance` (overrides --speed).
    #[arg(long)]
    pub manual_clock: bool,
    /// Persist the world in this JSON file and load it at start.
    #[arg(long, value_name = "FILE")]
    pub state: Option<PathBuf>,
    /// A seed file (JSON or TOML) that replaces or extends the built-in seed.
    #[arg(long, value_name = "FILE")]
    pub seed: Option<PathBuf>,
    /// Return this `tokenValue` from every run create (for leak tests).
    #[arg(long, value_name = "VALUE")]
    pub token_value: Option<String>,
}

pub async fn run(args: SandboxArgs) -> ExitCode {
    if !(args.speed.is_finite() && args.speed > 0.0) {
        eprintln!("sandbox: --speed must be a positive number");
        return ExitCode::from(2);
    }
    let opts = SandboxOptions {
        listen: args.listen,
        clock: if args.manual_clock {
            ClockMode::Manual
        } else {
            ClockMode::Real { speed: args.speed }
        },
        state_file: args.state,
        seed: args.seed.map_or(SeedSource::Default, SeedSource::File),
        print_keys: true,
        token_value: args.token_value,
    };
    let handle = match Sandbox::start(opts).await {
        Ok(h) => h,
        Err(e) => {
            eprintln!("sandbox: {e}");
            return ExitCode::from(1);
        }
    };
    if let Err(e) = tokio::signal::ctrl_c().await {
        eprintln!("sandbox: cannot wait for Ctrl-C: {e}");
    }
    handle.shutdown().await;
    ExitCode::SUCCESS
}
