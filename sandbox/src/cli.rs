//! `factory-mcp sandbox`: the simulator alone, for the official `prime` CLI or other clients.
//! (Filled in by the sandbox work.)

/// Run the platform simulator alone.
#[derive(Debug, clap::Args)]
pub struct SandboxArgs {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:8787")]
    pub listen: String,
}

pub async fn run(_args: SandboxArgs) -> std::process::ExitCode {
    eprintln!("sandbox: not built yet");
    std::process::ExitCode::from(2)
}
