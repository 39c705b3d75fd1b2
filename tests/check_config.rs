//! `factory-mcp check-config` end to end: exit codes (0 valid, 1 invalid, 2 unusable input),
//! the human output and the `--json` report shape.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_factory-mcp"))
}

fn examples() -> PathBuf {
    let dir =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/reference/prime-rl-examples");
    assert!(
        dir.is_dir(),
        "the shared reference is missing: expected {}",
        dir.display()
    );
    dir
}

fn check(args: &[&str], file: &Path) -> Output {
    bin()
        .arg("check-config")
        .arg(file)
        .args(args)
        .output()
        .expect("run factory-mcp")
}

fn write(dir: &tempfile::TempDir, name: &str, bytes: &[u8]) -> PathBuf {
    let p = dir.path().join(name);
    std::fs::write(&p, bytes).expect("write");
    p
}

#[test]
fn a_valid_example_exits_0_and_says_valid() {
    let out = check(&[], &examples().join("reverse-text_rl.toml"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(
        stdout.contains(": valid (RL config, prime-rl schema 559b4477)"),
        "{stdout}"
    );
    assert!(
        stdout.contains("GPUs 1 trainer + 1 inference = 2"),
        "{stdout}"
    );
}

#[test]
fn an_invalid_config_exits_1_with_path_message_and_hint() {
    let dir = tempfile::tempdir().expect("tempdir");
    let text = std::fs::read_to_string(examples().join("reverse-text_rl.toml"))
        .expect("example")
        .replace("batch_size = 128", "batch_size = 0");
    let file = write(&dir, "bad.toml", text.as_bytes());
    let out = check(&[], &file);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("INVALID"), "{stdout}");
    assert!(stdout.contains("orchestrator.batch_size"), "{stdout}");
    assert!(
        stdout.contains("Input should be greater than or equal to 1"),
        "{stdout}"
    );
    assert!(stdout.contains("hint:"), "{stdout}");
}

#[test]
fn json_output_is_the_report() {
    let out = check(
        &["--json"],
        &examples().join("legacy-shared-lora-hosted_rl.toml"),
    );
    assert_eq!(out.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("stdout is JSON");
    assert_eq!(v["valid"], false);
    assert_eq!(v["mode"], "rl");
    assert_eq!(
        v["schema_commit"],
        "559b44772e471d1538537b8805cc77f3824a5e64"
    );
    for key in [
        "model",
        "max_steps",
        "seq_len",
        "gpus",
        "gpu_type",
        "volume",
    ] {
        assert!(
            v["summary"].get(key).is_some(),
            "summary.{key} missing: {v}"
        );
    }
    let f = &v["findings"][0];
    assert_eq!(f["severity"], "error");
    assert_eq!(f["path"], "model");
    assert_eq!(f["source"], "native");
    assert!(f["hint"].is_string());
    assert_eq!(v["checkers"][0]["name"], "native");
    assert_eq!(v["checkers"][0]["status"], "ran");

    let out = check(&["--json"], &examples().join("wordle_sft.toml"));
    assert_eq!(out.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("stdout is JSON");
    assert_eq!(v["mode"], "sft");
    assert_eq!(v["summary"]["model"], "PrimeIntellect/Qwen3-1.7B");
    assert_eq!(v["summary"]["max_steps"], 20);
}

#[test]
fn sft_flag_forces_sft_mode() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = write(
        &dir,
        "slim.toml",
        b"max_steps = 5\n[model]\nname = \"Qwen/Qwen3-0.6B\"\n",
    );
    let rl = check(&["--json"], &file);
    assert_eq!(
        rl.status.code(),
        Some(1),
        "no [data]: routed to RL, trainer/orchestrator missing"
    );
    let sft = check(&["--json", "--sft"], &file);
    let v: serde_json::Value = serde_json::from_slice(&sft.stdout).expect("JSON");
    assert_eq!(v["mode"], "sft");
    assert_eq!(sft.status.code(), Some(0), "{v}");
}

#[test]
fn unusable_input_exits_2_and_says_what_is_wrong() {
    let dir = tempfile::tempdir().expect("tempdir");
    let missing = check(&[], &dir.path().join("nope.toml"));
    assert_eq!(missing.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("cannot read the file"));

    let binary = write(&dir, "bin.toml", &[0x6d, 0x3d, 0xff, 0xfe, 0x0a]);
    let out = check(&[], &binary);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not UTF-8"));

    let broken = write(
        &dir,
        "broken.toml",
        b"max_steps = 20\n[orchestrator\nbatch_size = 1\n",
    );
    let out = check(&["--json"], &broken);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("TOML syntax error at line 2"), "{stderr}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON error object");
    assert!(v["error"].as_str().is_some_and(|e| e.contains("line 2")));
}

#[test]
fn secrets_in_the_file_are_never_echoed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let token = format!("hf_{}", "x".repeat(34));
    let text = std::fs::read_to_string(examples().join("reverse-text_rl.toml"))
        .expect("example")
        .replace(
            "max_steps = 20",
            &format!("max_steps = 20\ngpu_type = \"{token}\"\n[env_vars]\nHF_TOKEN = \"{token}\""),
        );
    let file = write(&dir, "secret.toml", text.as_bytes());
    for args in [&[][..], &["--json"][..]] {
        let out = check(args, &file);
        let all = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(!all.contains(&token), "secret echoed: {all}");
        assert!(all.contains("Hugging Face token"), "{all}");
    }
}
