//! Config validation glue shared by the `validate_config` tool and `check-config`: the native validator of `factory-config`, plus the optional authoritative checkers (a prime-rl checkout, the `prime` CLI) run as time-bounded child processes.
//!
//! The native verdict always stands on its own. A checker that is not requested, not
//! installed, fails or runs out of time is recorded in `Report::checkers` and changes
//! nothing else; one that runs adds its errors (source `prime_rl_checkout` / `prime_cli`),
//! and the `prime` CLI's artifact also tells which schema commit the platform uses.
//!
//! Both checkers run code, so they are a person's decision (`factory_policies::checkers`). The
//! checkout runs as `uv run --no-sync python -I -B` (no current directory or user site on the
//! import path) with a scrubbed environment and a temporary `HOME`; every checker is bounded
//! in time and output, and what it prints is untrusted text: redacted, reduced to one line per
//! message, control and bidi characters neutralised, never echoed raw.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use factory_config::{CheckerStatus, Finding, Mode, Options, Severity, Source};
use serde_json::Value as Json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::process::Command;

pub use factory_config::account::{AccountFacts, apply as apply_account_facts};
pub use factory_config::{
    CheckerRun, CheckerStatus as Status, Finding as ValidationFinding, Mode as ConfigMode, Report,
    SCHEMA_COMMIT, Severity as FindingSeverity, Source as FindingSource, SyntaxError, parse,
};

/// The most output read from a checker (stdout and stderr each).
const OUTPUT_LIMIT: u64 = 1 << 20;
/// The most errors taken from one checker's verdict, and the longest message kept.
const MAX_CHECKER_ERRORS: usize = 200;
const MAX_MESSAGE_CHARS: usize = 300;

/// The secrets of this process's environment: for the child's environment filter and to
/// redact what a checker prints (the tool's own redaction runs again on the way out).
static KNOWN: std::sync::LazyLock<(factory_policies::SecretGuard, factory_policies::Redactor)> =
    std::sync::LazyLock::new(|| {
        let known = factory_policies::KnownSecrets::from_env(|k| std::env::var(k).ok());
        (
            factory_policies::SecretGuard::new(known.clone()),
            factory_policies::Redactor::new(known),
        )
    });

/// A checker's text as it may be shown: credential shapes described, known values redacted,
/// one bounded line with control and bidi characters neutralised.
fn untrusted(text: &str, max_chars: usize) -> String {
    let scrubbed = factory_config::secrets::scrub(text);
    factory_policies::untrusted::one_line(&KNOWN.1.redact(&scrubbed), max_chars)
}

/// A location a checker reported, kept only when it reads as a dotted config path.
fn untrusted_loc(loc: &str) -> String {
    let plausible = loc.len() <= 200
        && loc
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._-[]".contains(c));
    if plausible {
        loc.to_string()
    } else {
        String::new()
    }
}

/// What to validate and which optional checkers to try.
#[derive(Debug, Clone)]
pub struct ValidationInput {
    /// The TOML text as written (hosted keys included).
    pub toml: String,
    /// Force SFT (`--sft`).
    pub sft: bool,
    /// A prime-rl checkout whose own schema to run (`uv run --no-sync python -I …` inside it).
    /// Set only from the policy or a flag, checked by `factory_policies::checkers::checkout_dir`.
    pub prime_rl_checkout: Option<PathBuf>,
    /// Also run `prime train validate -o json` when `prime` is on the PATH.
    pub prime_cli: bool,
    /// Time limit per optional checker.
    pub timeout: Duration,
    /// Secret names that will be forwarded to the run, when known.
    pub forwarded_secrets: Option<Vec<String>>,
    /// The PATH searched for `uv` and `prime` and given to them (default: this process's).
    pub search_path: Option<OsString>,
    /// The workspace, to warn about config strings naming one of its files (a path in TOML
    /// does not upload the file). None: only the strings that read as paths are warned about.
    pub workspace: Option<factory_policies::Workspace>,
}

impl ValidationInput {
    /// Native validation only, with a 60 s limit for checkers added later.
    pub fn new(toml: impl Into<String>) -> Self {
        ValidationInput {
            toml: toml.into(),
            sft: false,
            prime_rl_checkout: None,
            prime_cli: false,
            timeout: Duration::from_secs(60),
            forwarded_secrets: None,
            search_path: None,
            workspace: None,
        }
    }
}

/// The syntax error of a text that is not TOML, if it is not.
pub fn syntax_error(text: &str) -> Option<SyntaxError> {
    parse(text).err()
}

/// Validate natively, then run the requested optional checkers and merge their verdicts.
/// A TOML syntax error gives an invalid report with one error at the empty path.
pub async fn validate(input: ValidationInput) -> Report {
    let opts = Options {
        sft: input.sft,
        forwarded_secrets: input.forwarded_secrets.clone(),
    };
    let doc = match parse(&input.toml) {
        Ok(doc) => doc,
        Err(e) => {
            let mode = if input.sft { Mode::Sft } else { Mode::Rl };
            let mut report = Report::new(mode);
            report.push(
                Finding::error("", e.to_string())
                    .hint("Fix the TOML syntax; nothing else was checked."),
            );
            report.checker(
                "native",
                CheckerStatus::Failed,
                "the file is not valid TOML",
            );
            return report;
        }
    };
    let mut report = factory_config::validate_table(doc.clone(), &opts);
    if let Some(ws) = &input.workspace {
        report.extend(workspace_file_findings(&doc, ws));
    }
    let (mode, schema_doc) = factory_config::schema_input(doc, input.sft);
    let search = input
        .search_path
        .clone()
        .or_else(|| std::env::var_os("PATH"));

    match &input.prime_rl_checkout {
        None => report.checker(
            CHECKOUT_NAME,
            CheckerStatus::Skipped,
            "not enabled (policy key validate.prime_rl_checkout)",
        ),
        Some(dir) => {
            checkout_checker(
                &mut report,
                dir,
                mode,
                &schema_doc,
                search.as_deref(),
                input.timeout,
            )
            .await
        }
    }
    if input.prime_cli {
        prime_cli_checker(
            &mut report,
            &input.toml,
            input.sft,
            search.as_deref(),
            input.timeout,
        )
        .await;
    } else {
        report.checker(
            "prime_cli",
            CheckerStatus::Skipped,
            "not enabled (policy key validate.prime_cli)",
        );
    }
    report.finish();
    report
}

/// Warnings for config strings that name a file of the workspace (relative to its root):
/// such a file stays on this machine, whatever the TOML says.
fn workspace_file_findings(doc: &toml::Table, ws: &factory_policies::Workspace) -> Vec<Finding> {
    factory_config::local_paths::workspace_file_findings(doc, |s| {
        ws.resolve_existing(s).is_ok_and(|p| p.is_file())
    })
}

/// The program `name` in the directories of `path`, if it is there and executable.
fn find_program(name: &str, path: Option<&OsStr>) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    std::env::split_paths(path?)
        .map(|d| d.join(name))
        .find(|p| {
            p.metadata()
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

/// How a child process ended.
enum Outcome {
    Done {
        code: Option<i32>,
        stdout: String,
        stderr: String,
    },
    TimedOut,
    SpawnFailed(String),
}

/// Run a command with `stdin` as input, killed (with its process group) after `timeout`.
async fn run(mut cmd: Command, stdin: Option<Vec<u8>>, timeout: Duration) -> Outcome {
    cmd.stdin(if stdin.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    })
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .kill_on_drop(true)
    .process_group(0);
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => return Outcome::SpawnFailed(e.to_string()),
    };
    let pid = child.id();
    let input = child.stdin.take();
    let out = child.stdout.take();
    let err = child.stderr.take();
    let work = async {
        let feed = async {
            if let (Some(mut w), Some(bytes)) = (input, stdin) {
                // A checker that does not read its input is not an error here.
                let _ = w.write_all(&bytes).await;
                let _ = w.shutdown().await;
            }
        };
        let read = |r: Option<tokio::process::ChildStdout>| async move {
            let mut buf = Vec::new();
            if let Some(r) = r {
                let _ = r.take(OUTPUT_LIMIT).read_to_end(&mut buf).await;
            }
            buf
        };
        let read_err = |r: Option<tokio::process::ChildStderr>| async move {
            let mut buf = Vec::new();
            if let Some(r) = r {
                let _ = r.take(OUTPUT_LIMIT).read_to_end(&mut buf).await;
            }
            buf
        };
        let ((), stdout, stderr) = tokio::join!(feed, read(out), read_err(err));
        let status = child.wait().await;
        (status, stdout, stderr)
    };
    match tokio::time::timeout(timeout, work).await {
        Ok((status, stdout, stderr)) => Outcome::Done {
            code: status.ok().and_then(|s| s.code()),
            stdout: String::from_utf8_lossy(&stdout).into_owned(),
            stderr: String::from_utf8_lossy(&stderr).into_owned(),
        },
        Err(_) => {
            if let Some(pid) = pid.and_then(|p| i32::try_from(p).ok()) {
                // SAFETY: kill(2) with a negative pid signals the process group we created for
                // the child (`process_group(0)` made it the group leader); no memory is shared.
                unsafe {
                    libc::kill(-pid, libc::SIGKILL);
                }
            }
            Outcome::TimedOut
        }
    }
}

/// The last line of `text` that parses as a JSON object.
fn last_json(text: &str) -> Option<serde_json::Map<String, Json>> {
    if let Ok(Json::Object(m)) = serde_json::from_str::<Json>(text.trim()) {
        return Some(m);
    }
    text.lines()
        .rev()
        .find_map(|l| match serde_json::from_str::<Json>(l.trim()) {
            Ok(Json::Object(m)) => Some(m),
            _ => None,
        })
}

fn first_line(text: &str) -> String {
    let line = text
        .lines()
        .map(str::trim)
        .rfind(|l| !l.is_empty())
        .unwrap_or("");
    let mut s = untrusted(line, MAX_MESSAGE_CHARS);
    if s.is_empty() {
        s = "no output".into();
    }
    s
}

/// Union tags pydantic puts in locations (`deployment.single_node.x` → `deployment.x`).
fn normalise_loc(loc: &str) -> String {
    const TAGS: &[&str] = &[
        "single_node",
        "multi_node",
        "disaggregated",
        "filesystem",
        "nccl",
        "nixl",
        "zmq",
        "default",
        "ipo",
        "custom",
        "sgd",
        "adamw",
        "muon",
        "sign_sgd",
        "constant",
        "linear",
        "cosine",
        "fp8",
        "mxfp8",
        "grpo",
        "echo",
        "max_rl",
        "rae",
        "hierarchical_grpo",
        "opd",
        "opsd",
        "sft",
        "fake",
        "standard",
        "difficulty_pool",
        "vllm-router",
        "llm-d",
        "native",
        "mooncake",
        "advantage_range",
    ];
    const UNIONS: &[&str] = &[
        "deployment",
        "weight_broadcast",
        "rollout_transport",
        "loss",
        "optim",
        "scheduler",
        "quantization",
        "algo",
        "sampler",
        "router",
        "kv_cache_offload",
        "data",
    ];
    let segs: Vec<&str> = loc.split('.').collect();
    let mut out: Vec<&str> = Vec::with_capacity(segs.len());
    for (i, seg) in segs.iter().enumerate() {
        let after_union = i > 0 && UNIONS.contains(&segs[i - 1]);
        if after_union && TAGS.contains(seg) {
            continue;
        }
        out.push(seg);
    }
    out.join(".")
}

/// Merge a checker's errors: errors at a path the native rules already flagged are counted,
/// not repeated.
fn merge(
    report: &mut Report,
    source: Source,
    errors: Vec<(String, String)>,
    what: &str,
) -> (usize, usize) {
    let native: Vec<String> = report
        .findings
        .iter()
        .filter(|f| f.severity == Severity::Error && f.source == Source::Native)
        .map(|f| f.path.clone())
        .collect();
    let (mut added, mut agreed) = (0, 0);
    for (loc, msg) in errors.into_iter().take(MAX_CHECKER_ERRORS) {
        let path = normalise_loc(&untrusted_loc(&loc));
        if native.contains(&path) {
            agreed += 1;
            continue;
        }
        added += 1;
        report.push(
            Finding::error(path, untrusted(&msg, MAX_MESSAGE_CHARS))
                .hint(format!("Reported by {what}."))
                .from_source(source),
        );
    }
    (added, agreed)
}

const CHECKOUT_SCRIPT: &str = r#"
import json, sys
req = json.load(sys.stdin)
cfg, mode = req["config"], req["mode"]
deferred = []
try:
    if mode == "sft":
        from prime_rl.configs.sft import SFTConfig as C
        for k in ("eval", "inference", "weight_broadcast"):
            if cfg.pop(k, None) is not None:
                deferred.append(k)
    else:
        from prime_rl.configs.rl import RLConfig as C
        orch = cfg.get("orchestrator")
        if isinstance(orch, dict):
            if orch.pop("eval", None) is not None:
                deferred.append("orchestrator.eval")
            train = orch.get("train")
            if isinstance(train, dict) and train.pop("source", None) is not None:
                deferred.append("orchestrator.train.source")
    import pydantic
    try:
        C.model_validate(cfg)
        errors = []
    except pydantic.ValidationError as e:
        errors = [{"loc": ".".join(str(p) for p in err["loc"]), "msg": err["msg"]} for err in e.errors()]
    print(json.dumps({"valid": not errors, "errors": errors, "deferred": deferred}))
except Exception as e:
    print(json.dumps({"error": type(e).__name__ + ": " + str(e)}))
"#;

/// The checkout checker's name in the report.
const CHECKOUT_NAME: &str = "prime_rl_checkout";

async fn checkout_checker(
    report: &mut Report,
    dir: &Path,
    mode: Mode,
    doc: &toml::Table,
    path: Option<&OsStr>,
    timeout: Duration,
) {
    if !dir.join("pyproject.toml").is_file() {
        report.checker(
            CHECKOUT_NAME,
            CheckerStatus::Skipped,
            format!(
                "{} is not a prime-rl checkout (no pyproject.toml)",
                dir.display()
            ),
        );
        return;
    }
    let Some(uv) = find_program("uv", path) else {
        report.checker(CHECKOUT_NAME, CheckerStatus::Skipped, "uv is not on PATH");
        return;
    };
    let config = match serde_json::to_value(doc) {
        Ok(v) => v,
        Err(e) => {
            report.checker(
                CHECKOUT_NAME,
                CheckerStatus::Failed,
                format!("cannot hand the config over as JSON: {e}"),
            );
            return;
        }
    };
    let input = serde_json::json!({ "mode": mode.as_str(), "config": config }).to_string();
    // A temporary, empty HOME: no credential file is found through it.
    let home = match tempfile::Builder::new()
        .prefix("factory-mcp-checker-home-")
        .tempdir()
    {
        Ok(h) => h,
        Err(e) => {
            report.checker(
                CHECKOUT_NAME,
                CheckerStatus::Failed,
                format!("cannot create a temporary HOME: {e}"),
            );
            return;
        }
    };
    let cmd = checkout_command(&uv, dir, home.path(), path);
    match run(cmd, Some(input.into_bytes()), timeout).await {
        Outcome::SpawnFailed(e) => report.checker(
            CHECKOUT_NAME,
            CheckerStatus::Failed,
            format!("could not start uv: {e}"),
        ),
        Outcome::TimedOut => report.checker(
            CHECKOUT_NAME,
            CheckerStatus::TimedOut,
            format!("no verdict within {} s; stopped", timeout.as_secs()),
        ),
        Outcome::Done {
            code,
            stdout,
            stderr,
        } => match last_json(&stdout) {
            Some(obj) if obj.contains_key("valid") => {
                record_checkout_verdict(report, mode, dir, &obj)
            }
            Some(obj) => {
                let msg = obj
                    .get("error")
                    .and_then(Json::as_str)
                    .unwrap_or("unexpected answer");
                report.checker(
                    CHECKOUT_NAME,
                    CheckerStatus::Failed,
                    format!("the checkout could not validate: {}", first_line(msg)),
                );
            }
            None => report.checker(
                CHECKOUT_NAME,
                CheckerStatus::Failed,
                format!(
                    "no verdict (exit {}): {}",
                    code.map_or("?".into(), |c| c.to_string()),
                    first_line(if stderr.trim().is_empty() {
                        &stdout
                    } else {
                        &stderr
                    })
                ),
            ),
        },
    }
}

/// The checkout's checker command: `uv run python -I -B -c …` in `dir`, with a cleared
/// environment (`checkers::checkout_env`) and `home` as HOME.
fn checkout_command(uv: &Path, dir: &Path, home: &Path, path: Option<&OsStr>) -> Command {
    let mut cmd = Command::new(uv);
    // `-I`: neither the working directory nor the user site is on the import path, and no
    // PYTHON* variable applies, so a `json.py` planted beside the checkout is never imported.
    cmd.args([
        "run",
        "--no-sync",
        "python",
        "-I",
        "-B",
        "-c",
        CHECKOUT_SCRIPT,
    ])
    .current_dir(dir)
    .env_clear()
    .envs(factory_policies::checkers::checkout_env(
        &|k: &str| std::env::var_os(k),
        &KNOWN.0,
        home,
        path,
    ));
    cmd
}

/// Records the checkout's verdict (`{"valid", "errors", "deferred"}`) on `report`.
fn record_checkout_verdict(
    report: &mut Report,
    mode: Mode,
    dir: &Path,
    obj: &serde_json::Map<String, Json>,
) {
    let errors: Vec<(String, String)> = obj
        .get("errors")
        .and_then(Json::as_array)
        .map(|a| {
            a.iter()
                .map(|e| {
                    let s = |k: &str| e.get(k).and_then(Json::as_str).unwrap_or("").to_string();
                    (s("loc"), s("msg"))
                })
                .collect()
        })
        .unwrap_or_default();
    let n = errors.len();
    let deferred: Vec<String> = obj
        .get("deferred")
        .and_then(Json::as_array)
        .map(|a| {
            a.iter()
                .take(20)
                .filter_map(|d| d.as_str().map(untrusted_loc))
                .filter(|d| !d.is_empty())
                .collect()
        })
        .unwrap_or_default();
    let (added, agreed) = merge(
        report,
        Source::PrimeRlCheckout,
        errors,
        "the prime-rl checkout's own schema",
    );
    let verdict = if n == 0 {
        "valid".to_string()
    } else {
        format!("{n} error(s): {added} new, {agreed} also found natively")
    };
    let deferred = if deferred.is_empty() {
        String::new()
    } else {
        format!("; deferred (plugin-dependent): {}", deferred.join(", "))
    };
    report.checker(
        CHECKOUT_NAME,
        CheckerStatus::Ran,
        format!(
            "{} schema of {}: {verdict}{deferred}",
            mode.as_str().to_uppercase(),
            dir.display()
        ),
    );
}

/// `dotted.loc: message` lines of a `Config validation failed:` message.
fn cli_errors(message: &str) -> Vec<(String, String)> {
    message
        .lines()
        .filter_map(|l| {
            let l = l.trim().trim_start_matches("- ");
            let (loc, msg) = l.split_once(": ")?;
            let plausible = !loc.contains(' ') || loc.is_empty();
            plausible.then(|| (loc.to_string(), msg.to_string()))
        })
        .collect()
}

async fn prime_cli_checker(
    report: &mut Report,
    text: &str,
    sft: bool,
    path: Option<&OsStr>,
    timeout: Duration,
) {
    const NAME: &str = "prime_cli";
    let Some(prime) = find_program("prime", path) else {
        report.checker(NAME, CheckerStatus::Skipped, "prime is not on PATH");
        return;
    };
    let file = match tempfile::Builder::new()
        .prefix("factory-mcp-")
        .suffix(".toml")
        .tempfile()
    {
        Ok(mut f) => {
            use std::io::Write;
            if let Err(e) = f.write_all(text.as_bytes()) {
                report.checker(
                    NAME,
                    CheckerStatus::Failed,
                    format!("cannot write a temporary copy of the config: {e}"),
                );
                return;
            }
            f
        }
        Err(e) => {
            report.checker(
                NAME,
                CheckerStatus::Failed,
                format!("cannot create a temporary file: {e}"),
            );
            return;
        }
    };
    let mut cmd = Command::new(prime);
    cmd.args(["train", "validate"])
        .arg(file.path())
        .args(["-o", "json"])
        .current_dir(std::env::temp_dir())
        .env_clear()
        .envs(factory_policies::checkers::prime_cli_env(
            std::env::vars_os(),
            &KNOWN.0,
            path,
        ));
    if sft {
        cmd.arg("--sft");
    }
    match run(cmd, None, timeout).await {
        Outcome::SpawnFailed(e) => report.checker(
            NAME,
            CheckerStatus::Failed,
            format!("could not start prime: {e}"),
        ),
        Outcome::TimedOut => report.checker(
            NAME,
            CheckerStatus::TimedOut,
            format!("no verdict within {} s; stopped", timeout.as_secs()),
        ),
        Outcome::Done {
            code,
            stdout,
            stderr,
        } => match last_json(&stdout) {
            Some(obj) if obj.contains_key("error") => {
                let msg = obj.get("error").and_then(Json::as_str).unwrap_or("");
                let errors = cli_errors(msg);
                if msg.contains("validation failed") && !errors.is_empty() {
                    let n = errors.len();
                    let (added, agreed) =
                        merge(report, Source::PrimeCli, errors, "`prime train validate`");
                    report.checker(NAME, CheckerStatus::Ran, format!("prime train validate: {n} error(s): {added} new, {agreed} also found natively"));
                } else {
                    report.checker(
                        NAME,
                        CheckerStatus::Failed,
                        format!(
                            "prime train validate could not validate: {}",
                            first_line(msg)
                        ),
                    );
                }
            }
            Some(obj) => {
                let artifact = obj.get("artifact").unwrap_or(&Json::Null);
                let commit = artifact
                    .get("schema_commit")
                    .or_else(|| obj.get("schema_commit"))
                    .and_then(Json::as_str)
                    .map(String::from);
                let mut detail = "prime train validate: valid".to_string();
                if let Some(c) = &commit {
                    if let Some(f) = factory_config::account::schema_drift(c) {
                        report.push(f.from_source(Source::PrimeCli));
                    }
                    if c.chars().all(|ch| ch.is_ascii_alphanumeric()) {
                        detail.push_str(&format!(" against prime-rl {c}"));
                    }
                }
                report.checker(NAME, CheckerStatus::Ran, detail);
            }
            None => report.checker(
                NAME,
                CheckerStatus::Failed,
                format!(
                    "no JSON verdict (exit {}): {}",
                    code.map_or("?".into(), |c| c.to_string()),
                    first_line(if stderr.trim().is_empty() {
                        &stdout
                    } else {
                        &stderr
                    })
                ),
            ),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn union_tags_are_dropped_from_locations() {
        assert_eq!(
            normalise_loc("deployment.single_node.num_train_nodes"),
            "deployment.num_train_nodes"
        );
        assert_eq!(
            normalise_loc("trainer.optim.sgd.betas1"),
            "trainer.optim.betas1"
        );
        assert_eq!(normalise_loc("data.sft.batch_size"), "data.batch_size");
        assert_eq!(
            normalise_loc("orchestrator.batch_size"),
            "orchestrator.batch_size"
        );
    }

    #[test]
    fn cli_error_lines_are_split_into_paths() {
        let msg = "Config validation failed:\ntrainer.model.impl: Input should be 'hf', 'custom' or 'auto'\n: Value error, mismatch";
        let errs = cli_errors(msg);
        assert_eq!(errs[0].0, "trainer.model.impl");
        assert_eq!(errs[1].0, "");
    }
}
