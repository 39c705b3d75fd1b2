//! `factory-mcp demo`, the README's first command: it runs green, prints every step of the
//! workflow, and finishes well within its 60 s budget.

use std::time::{Duration, Instant};

const STEPS: [&str; 11] = [
    "whoami",
    "list_models",
    "validate_config",
    "plan_run",
    "launch_run",
    "watch_run",
    "get_logs",
    "get_metrics",
    "fetch_traces",
    "diagnose_run",
    "stop_run",
];

#[tokio::test]
async fn the_demo_runs_every_step_green_in_under_a_minute() {
    let home = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let out = tokio::time::timeout(
        Duration::from_secs(90),
        tokio::process::Command::new(env!("CARGO_BIN_EXE_factory-mcp"))
            .args(["demo", "--no-color"])
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", home.path())
            // A credential in the caller's environment never reaches the demo's server.
            .env("PRIME_API_KEY", "pit_demo_must_not_leak_0123456789abcdef")
            .output(),
    )
    .await
    .expect("the demo finishes")
    .expect("the demo starts");
    let elapsed = started.elapsed();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "demo failed:\n{stdout}\n{stderr}");
    assert!(elapsed < Duration::from_secs(60), "took {elapsed:?}");
    for (i, tool) in STEPS.iter().enumerate() {
        let header = format!("[{:>2}/11] {tool}", i + 1);
        assert!(stdout.contains(&header), "missing step {header}:\n{stdout}");
    }
    // Every step succeeded, the confirmation was shown and answered, and progress was printed.
    assert_eq!(stdout.matches("    ✓ ").count(), 11, "{stdout}");
    assert!(stdout.contains("Approve this billable launch?"), "{stdout}");
    assert!(stdout.contains("progress "), "{stdout}");
    assert!(stdout.contains("returned because: reached"), "{stdout}");
    assert!(stdout.contains("Demo complete"), "{stdout}");
    assert!(
        !stdout.contains('\u{1b}'),
        "--no-color printed ANSI escapes"
    );
    assert!(
        !stdout.contains("pit_demo_must_not_leak") && !stderr.contains("pit_demo_must_not_leak")
    );
    eprintln!("demo took {elapsed:?}");
}
