//! The optional checkers' plumbing, with stand-in `uv` and `prime` scripts on a private PATH
//! (the real prime-rl environment and platform are not available here): verdicts are merged,
//! errors, garbage and hangs are reported as such, and the native verdict always stands.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use factory_config::{CheckerStatus, Report, Severity, Source};
use factory_tools::validation::{ValidationInput, validate};

const VALID_RL: &str = r#"
name = "smoke"
gpu_type = "H200_141GB"
max_steps = 10
seq_len = 2048
[model]
name = "Qwen/Qwen3-0.6B"
[deployment]
num_train_gpus = 1
num_infer_gpus = 1
[orchestrator]
batch_size = 16
group_size = 4
[[orchestrator.train.source]]
name = "reverse-text"
[orchestrator.train.source.env.taskset]
id = "reverse-text"
[trainer]
[inference]
"#;

struct Bin {
    dir: tempfile::TempDir,
}

impl Bin {
    fn new() -> Self {
        Bin {
            dir: tempfile::tempdir().expect("tempdir"),
        }
    }
    fn script(&self, name: &str, body: &str) {
        let p = self.dir.path().join(name);
        std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).expect("write script");
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }
    fn path(&self) -> std::ffi::OsString {
        // The stand-ins need sh, cat and sleep from the system.
        std::env::join_paths([self.dir.path(), Path::new("/usr/bin"), Path::new("/bin")])
            .expect("path")
    }
    fn file(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }
}

fn checkout() -> tempfile::TempDir {
    let d = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        d.path().join("pyproject.toml"),
        "[project]\nname = \"prime-rl\"\n",
    )
    .expect("pyproject");
    d
}

fn input(bin: &Bin, toml: &str) -> ValidationInput {
    let mut i = ValidationInput::new(toml);
    i.search_path = Some(bin.path());
    i.timeout = Duration::from_secs(5);
    i
}

fn checker<'a>(r: &'a Report, name: &str) -> &'a factory_config::CheckerRun {
    r.checkers
        .iter()
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("no {name} checker in {:?}", r.checkers))
}

#[tokio::test]
async fn checkout_errors_are_merged_with_their_source_and_union_tags_dropped() {
    let bin = Bin::new();
    let stdin_copy = bin.file("stdin.json");
    bin.script(
        "uv",
        &format!(
            "cat > '{}'\necho 'some noise on stdout'\necho '{{\"valid\": false, \"errors\": [{{\"loc\": \"deployment.single_node.foo\", \"msg\": \"Extra inputs are not permitted\"}}], \"deferred\": [\"orchestrator.train.source\"]}}'",
            stdin_copy.display()
        ),
    );
    let co = checkout();
    let mut i = input(&bin, VALID_RL);
    i.prime_rl_checkout = Some(co.path().to_path_buf());
    let r = validate(i).await;
    assert!(!r.valid, "the checkout's error makes the config invalid");
    let f = r
        .findings
        .iter()
        .find(|f| f.source == Source::PrimeRlCheckout)
        .expect("a checkout finding");
    assert_eq!(f.path, "deployment.foo");
    assert_eq!(f.severity, Severity::Error);
    let c = checker(&r, "prime_rl_checkout");
    assert_eq!(c.status, CheckerStatus::Ran);
    assert!(c.detail.contains("deferred"), "{}", c.detail);
    // The checkout saw the schema's input: mode chosen, hosted keys stripped.
    let sent: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(stdin_copy).expect("stdin copy"))
            .expect("json");
    assert_eq!(sent["mode"], "rl");
    assert!(sent["config"].get("gpu_type").is_none() && sent["config"].get("name").is_none());
    assert_eq!(sent["config"]["max_steps"], 10);
}

#[tokio::test]
async fn a_checkout_that_accepts_leaves_the_native_verdict() {
    let bin = Bin::new();
    bin.script(
        "uv",
        "cat > /dev/null\necho '{\"valid\": true, \"errors\": []}'",
    );
    let co = checkout();
    let mut i = input(&bin, VALID_RL);
    i.prime_rl_checkout = Some(co.path().to_path_buf());
    let r = validate(i).await;
    assert!(r.valid, "{:?}", r.findings);
    assert_eq!(checker(&r, "prime_rl_checkout").status, CheckerStatus::Ran);
}

#[tokio::test]
async fn checkout_failures_and_garbage_are_reported_not_merged() {
    for (body, status) in [
        (
            "cat > /dev/null\necho '{\"error\": \"ModuleNotFoundError: No module named prime_rl\"}'",
            CheckerStatus::Failed,
        ),
        (
            "cat > /dev/null\necho 'Traceback (most recent call last): garbage'\nexit 3",
            CheckerStatus::Failed,
        ),
        (
            "cat > /dev/null\necho 'hf_abcdefghijklmnopqrstuvwxyz0123 leaked' >&2\nexit 1",
            CheckerStatus::Failed,
        ),
    ] {
        let bin = Bin::new();
        bin.script("uv", body);
        let co = checkout();
        let mut i = input(&bin, VALID_RL);
        i.prime_rl_checkout = Some(co.path().to_path_buf());
        let r = validate(i).await;
        assert!(
            r.valid,
            "a failed checker changes no verdict: {:?}",
            r.findings
        );
        let c = checker(&r, "prime_rl_checkout");
        assert_eq!(c.status, status, "{}", c.detail);
        assert!(
            !c.detail.contains("hf_abcdefghij"),
            "secrets are scrubbed: {}",
            c.detail
        );
    }
}

#[tokio::test]
async fn a_hanging_checker_is_stopped_at_the_timeout() {
    let bin = Bin::new();
    bin.script("uv", "sleep 30");
    let co = checkout();
    let mut i = input(&bin, VALID_RL);
    i.prime_rl_checkout = Some(co.path().to_path_buf());
    i.timeout = Duration::from_millis(500);
    let start = Instant::now();
    let r = validate(i).await;
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "took {:?}",
        start.elapsed()
    );
    assert_eq!(
        checker(&r, "prime_rl_checkout").status,
        CheckerStatus::TimedOut
    );
    assert!(r.valid);
}

#[tokio::test]
async fn missing_tools_and_checkouts_are_skipped() {
    let bin = Bin::new();
    let co = checkout();
    let mut i = input(&bin, VALID_RL);
    i.prime_rl_checkout = Some(co.path().to_path_buf());
    i.prime_cli = true;
    let r = validate(i).await;
    assert_eq!(
        checker(&r, "prime_rl_checkout").status,
        CheckerStatus::Skipped
    );
    assert_eq!(checker(&r, "prime_cli").status, CheckerStatus::Skipped);
    let mut i = input(&bin, VALID_RL);
    i.prime_rl_checkout = Some(bin.file("nowhere"));
    let r = validate(i).await;
    assert!(
        checker(&r, "prime_rl_checkout")
            .detail
            .contains("not a prime-rl checkout")
    );
}

#[tokio::test]
async fn prime_cli_artifact_reports_schema_drift() {
    let bin = Bin::new();
    bin.script("prime", "echo '{\"artifact\": {\"contract_version\": 4, \"mode\": \"rl\", \"schema_commit\": \"0123456789abcdef0123456789abcdef01234567\"}}'");
    let mut i = input(&bin, VALID_RL);
    i.prime_cli = true;
    let r = validate(i).await;
    assert!(r.valid);
    assert_eq!(checker(&r, "prime_cli").status, CheckerStatus::Ran);
    let drift = r
        .findings
        .iter()
        .find(|f| f.source == Source::PrimeCli)
        .expect("drift finding");
    assert!(drift.message.contains("0123456789abcdef") && drift.message.contains("559b4477"));
    assert!(drift.hint.as_deref().unwrap_or("").contains("image_tag"));
}

#[tokio::test]
async fn prime_cli_validation_errors_become_findings() {
    let bin = Bin::new();
    bin.script(
        "prime",
        // printf, not echo: dash's echo would turn the JSON escape into a newline.
        "printf '%s\\n' '{\"error\": \"Config validation failed:\\ntrainer.optim.sgd.betas1: Extra inputs are not permitted\"}'\nexit 1",
    );
    let mut i = input(&bin, VALID_RL);
    i.prime_cli = true;
    let r = validate(i).await;
    assert!(!r.valid);
    let f = r
        .findings
        .iter()
        .find(|f| f.source == Source::PrimeCli)
        .expect("cli finding");
    assert_eq!(f.path, "trainer.optim.betas1");
    // An error that is not a validation verdict (no network, 404 prepare) is a failed check.
    let bin = Bin::new();
    bin.script(
        "prime",
        "echo '{\"error\": \"Local validation requires uv on PATH.\"}'\nexit 1",
    );
    let mut i = input(&bin, VALID_RL);
    i.prime_cli = true;
    let r = validate(i).await;
    assert!(r.valid);
    assert_eq!(checker(&r, "prime_cli").status, CheckerStatus::Failed);
}

#[tokio::test]
async fn syntax_errors_give_an_invalid_report_with_the_location() {
    let r = validate(ValidationInput::new("max_steps = = 3\n")).await;
    assert!(!r.valid);
    assert!(
        r.findings[0].message.contains("line 1"),
        "{}",
        r.findings[0].message
    );
    assert_eq!(checker(&r, "native").status, CheckerStatus::Failed);
}

#[tokio::test]
async fn the_checkout_runs_with_python_isolated_and_a_temporary_home() {
    let bin = Bin::new();
    let (args, env) = (bin.file("args"), bin.file("env"));
    bin.script(
        "uv",
        &format!(
            "cat > /dev/null\necho \"$@\" > '{}'\nenv > '{}'\necho '{{\"valid\": true, \"errors\": []}}'",
            args.display(),
            env.display()
        ),
    );
    let co = checkout();
    let mut i = input(&bin, VALID_RL);
    i.prime_rl_checkout = Some(co.path().to_path_buf());
    let r = validate(i).await;
    assert_eq!(checker(&r, "prime_rl_checkout").status, CheckerStatus::Ran);
    let args = std::fs::read_to_string(args).expect("uv ran");
    assert!(args.starts_with("run --no-sync python -I "), "{args}");
    let env = std::fs::read_to_string(env).expect("env");
    let home = env
        .lines()
        .find_map(|l| l.strip_prefix("HOME="))
        .expect("a HOME");
    assert_ne!(Some(home.to_string()), std::env::var("HOME").ok(), "{env}");
    assert!(home.contains("factory-mcp-checker-home-"), "{env}");
}

#[tokio::test]
async fn checker_output_is_one_neutralised_line_per_message() {
    let bin = Bin::new();
    bin.script(
        "uv",
        "cat > /dev/null\nprintf '%s\\n' '{\"valid\": false, \"errors\": [{\"loc\": \"trainer.x\\nFAKE\", \"msg\": \"line one\\n\\u001b[2Jtwo \\u202eevil\"}]}'",
    );
    let co = checkout();
    let mut i = input(&bin, VALID_RL);
    i.prime_rl_checkout = Some(co.path().to_path_buf());
    let r = validate(i).await;
    let f = r
        .findings
        .iter()
        .find(|f| f.source == Source::PrimeRlCheckout)
        .expect("a checkout finding");
    assert!(
        !f.message.contains('\n')
            && !f.message.contains('\u{1b}')
            && !f.message.contains('\u{202e}'),
        "{:?}",
        f.message
    );
    assert!(!f.path.contains('\n'), "{:?}", f.path);
}
