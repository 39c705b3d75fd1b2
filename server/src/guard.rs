//! `factory-mcp guard`: a long-running watchdog over the caller's own active runs. It enforces
//! the policy's `[guard]` limits and `max_active_cost_per_hour_usd` by stopping (or pausing) runs,
//! audited with the reason. `--dry-run` reports what it would do and changes nothing; `--once`
//! sweeps once (for cron or a systemd timer).

use std::{process::ExitCode, time::Duration};

use factory_policies::{KnownSecrets, Redactor};
use factory_tools::AppState;

use crate::settings::{Settings, SettingsArgs};

/// Enforce budgets and stop conditions on your active runs.
#[derive(Debug, clap::Args)]
pub struct GuardArgs {
    #[command(flatten)]
    pub settings: SettingsArgs,
    /// Report what would be done; change nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Sweep once and exit (exit 1 if the sweep failed).
    #[arg(long)]
    pub once: bool,
    /// Seconds between sweeps (overrides guard.interval_seconds; default 60).
    #[arg(long, value_name = "SECONDS")]
    pub interval: Option<u64>,
    /// Print each sweep as one JSON line.
    #[arg(long)]
    pub json: bool,
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

pub async fn run(args: GuardArgs) -> ExitCode {
    let settings = match Settings::load(&args.settings, &env) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("factory-mcp guard: {e}");
            return ExitCode::from(2);
        }
    };
    let interval = Duration::from_secs(
        args.interval
            .or(settings.policy.guard.interval_seconds)
            .unwrap_or(60)
            .clamp(1, 86_400),
    );
    // The shared store of a gateway when the settings name one (its journal says which runs
    // were launched through it).
    let shared = match crate::state_store::open_shared(&settings.policy.state, &env).await {
        Ok(shared) => shared,
        Err(e) => {
            eprintln!("factory-mcp guard: {e}");
            return ExitCode::from(2);
        }
    };
    let mut known = KnownSecrets::new();
    if let Some(pw) = shared.as_ref().and_then(|s| s.password.as_ref()) {
        known.add(crate::state_store::PASSWORD_ENV, pw);
    }
    let built = match AppState::build(settings.policy.clone(), None, &env, known) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("factory-mcp guard: {e}");
            return ExitCode::from(2);
        }
    };
    let _ = crate::tracing_setup::init(0, std::sync::Arc::new(Redactor::new(built.known.clone())));
    let state = match shared {
        Some(shared) => built.state.with_state_store(shared.store),
        None => built.state,
    };
    if let Err(e) = state.platform() {
        eprintln!("factory-mcp guard: {e}");
        return ExitCode::from(2);
    }
    loop {
        match factory_tools::watchdog::sweep(&state, args.dry_run).await {
            Ok(report) => {
                if args.json {
                    println!("{}", serde_json::to_string(&report).unwrap_or_default());
                } else {
                    println!(
                        "{} guard sweep of the {}: {} active run(s), ${:.2}/h{}",
                        report.platform_time,
                        report.owner,
                        report.active_runs,
                        report.active_rate_per_hour_usd,
                        if report.dry_run { " (dry run)" } else { "" }
                    );
                    for f in &report.findings {
                        println!(
                            "  {} {} ({}, {}): {} — {}",
                            f.action,
                            f.run_id,
                            f.name.as_deref().unwrap_or("unnamed"),
                            f.status,
                            f.reason,
                            f.outcome
                        );
                    }
                }
            }
            Err(e) => {
                eprintln!("factory-mcp guard: sweep failed: {e}");
                if args.once {
                    return ExitCode::from(1);
                }
            }
        }
        if args.once {
            return ExitCode::SUCCESS;
        }
        tokio::select! {
            _ = tokio::time::sleep(interval) => {}
            _ = tokio::signal::ctrl_c() => return ExitCode::SUCCESS,
        }
    }
}
