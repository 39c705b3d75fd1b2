//! `factory-mcp check-config FILE [--sft] [--json] [--prime-rl DIR] [--prime-cli]`: the config
//! validator from the shell. Exit 0 valid, 1 invalid, 2 unusable input (missing file, not
//! UTF-8, TOML syntax error). Human output groups findings by severity; `--json` prints the
//! report the `validate_config` tool returns.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use factory_tools::validation::{self, FindingSeverity, Report, ValidationInput};

/// Validate a prime-rl TOML config (exit 0 valid, 1 invalid, 2 unusable input).
#[derive(Debug, clap::Args)]
pub struct CheckConfigArgs {
    /// The TOML file to check.
    pub file: PathBuf,
    /// Check it as an SFT config (the CLI's `--sft`; there is no TOML key for it).
    #[arg(long)]
    pub sft: bool,
    /// Print the full report as JSON.
    #[arg(long)]
    pub json: bool,
    /// Also validate with this prime-rl checkout's own schema (`uv run --no-sync python`).
    #[arg(long = "prime-rl", value_name = "DIR")]
    pub prime_rl: Option<PathBuf>,
    /// Also run `prime train validate -o json` (needs `prime` on PATH and a login).
    #[arg(long)]
    pub prime_cli: bool,
    /// Time limit for each optional checker, in seconds.
    #[arg(long, value_name = "SECONDS", default_value_t = 60)]
    pub timeout: u64,
}

fn unusable(args: &CheckConfigArgs, what: String) -> ExitCode {
    eprintln!("check-config: {}: {what}", args.file.display());
    if args.json {
        println!(
            "{}",
            serde_json::json!({ "error": what, "file": args.file.display().to_string() })
        );
    }
    ExitCode::from(2)
}

/// Run the subcommand.
pub fn run(args: CheckConfigArgs) -> ExitCode {
    let bytes = match std::fs::read(&args.file) {
        Ok(b) => b,
        Err(e) => return unusable(&args, format!("cannot read the file: {e}")),
    };
    let text = match String::from_utf8(bytes) {
        Ok(t) => t,
        Err(e) => {
            return unusable(
                &args,
                format!(
                    "not UTF-8 text (invalid byte at offset {})",
                    e.utf8_error().valid_up_to()
                ),
            );
        }
    };
    if let Some(e) = validation::syntax_error(&text) {
        return unusable(&args, e.to_string());
    }
    let mut input = ValidationInput::new(text);
    input.sft = args.sft;
    input.prime_rl_checkout = args.prime_rl.clone();
    input.prime_cli = args.prime_cli;
    input.timeout = Duration::from_secs(args.timeout.max(1));
    // Validate on a thread of our own with a runtime of its own, so this works whether or not
    // the caller runs one (blocking on a runtime inside another panics).
    let worker = std::thread::spawn(move || {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map(|rt| rt.block_on(validation::validate(input)))
    });
    let report = match worker.join() {
        Ok(Ok(r)) => r,
        Ok(Err(e)) => return unusable(&args, format!("cannot start the validator: {e}")),
        Err(_) => return unusable(&args, "the validator stopped unexpectedly".into()),
    };
    if args.json {
        match serde_json::to_string_pretty(&report) {
            Ok(s) => println!("{s}"),
            Err(e) => return unusable(&args, format!("cannot serialise the report: {e}")),
        }
    } else {
        print!("{}", human(&args.file.display().to_string(), &report));
    }
    if report.valid {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

/// The human-readable report.
pub fn human(file: &str, r: &Report) -> String {
    let mut out = String::new();
    let verdict = if r.valid { "valid" } else { "INVALID" };
    out.push_str(&format!(
        "{file}: {verdict} ({} config, prime-rl schema {})\n",
        r.mode.as_str().to_uppercase(),
        &r.schema_commit[..r.schema_commit.len().min(8)]
    ));
    let s = &r.summary;
    let opt = |x: &Option<String>| x.clone().unwrap_or_else(|| "—".into());
    let num = |x: Option<i64>| x.map_or("—".into(), |n| n.to_string());
    let gpus = |x: Option<u64>| x.map_or("?".into(), |n| n.to_string());
    out.push_str(&format!(
        "  model {}, max_steps {}, seq_len {}, GPUs {} trainer + {} inference = {}, gpu_type {}, volume {}\n",
        opt(&s.model),
        num(s.max_steps),
        num(s.seq_len),
        gpus(s.gpus.trainer),
        gpus(s.gpus.inference),
        gpus(s.gpus.total),
        opt(&s.gpu_type),
        opt(&s.volume)
    ));
    for (sev, title) in [
        (FindingSeverity::Error, "error"),
        (FindingSeverity::Warning, "warning"),
        (FindingSeverity::Info, "info"),
    ] {
        let items: Vec<_> = r.with_severity(sev).collect();
        if items.is_empty() {
            continue;
        }
        out.push_str(&format!(
            "\n{} {title}{}\n",
            items.len(),
            if items.len() == 1 { "" } else { "s" }
        ));
        for f in items {
            let path = if f.path.is_empty() {
                "(whole config)"
            } else {
                f.path.as_str()
            };
            let source = match f.source {
                validation::FindingSource::Native => String::new(),
                other => format!(
                    " [{}]",
                    serde_json::to_value(other)
                        .ok()
                        .and_then(|v| v.as_str().map(String::from))
                        .unwrap_or_default()
                ),
            };
            out.push_str(&format!(
                "  {title:<7} {path}{source}\n          {}\n",
                f.message
            ));
            if let Some(h) = &f.hint {
                out.push_str(&format!("          hint: {h}\n"));
            }
        }
    }
    let checkers: Vec<String> = r
        .checkers
        .iter()
        .map(|c| {
            let status = serde_json::to_value(c.status)
                .ok()
                .and_then(|v| v.as_str().map(String::from))
                .unwrap_or_default();
            format!("{} {status} ({})", c.name, c.detail)
        })
        .collect();
    out.push_str(&format!("\ncheckers: {}\n", checkers.join("; ")));
    out
}
