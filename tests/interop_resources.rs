//! Interoperability of resources and prompts: the official Python SDK (PyPI `mcp==2.3.0`,
//! `tests/interop/py_resources.py`) lists the resource templates and prompts of the real
//! `factory-mcp` binary over stdio, in both protocol eras, reads a run's status and log
//! resources, and renders both prompts. The venv comes from `scripts/setup-interop.sh`
//! (`FACTORY_MCP_INTEROP_DIR`); without it the test prints a skip note and passes, except under
//! CI (env `CI` set), where it fails.

use std::{path::PathBuf, process::Stdio, time::Duration};

use factory_sandbox::{Sandbox, SandboxOptions};
use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_factory-mcp");
const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/interop/py_resources.py");

fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false" && v != "0")
}

fn python() -> Option<PathBuf> {
    let found = std::env::var_os("FACTORY_MCP_INTEROP_DIR")
        .map(|d| PathBuf::from(d).join("venv/bin/python"))
        .filter(|p| p.exists());
    match found {
        Some(p) => Some(p),
        None if in_ci() => {
            panic!("the Python interop venv is missing under CI (FACTORY_MCP_INTEROP_DIR)")
        }
        None => {
            eprintln!(
                "SKIP python resources interop: FACTORY_MCP_INTEROP_DIR/venv is missing (run scripts/setup-interop.sh, or use scripts/test.sh)"
            );
            None
        }
    }
}

#[tokio::test]
async fn the_python_sdk_lists_and_reads_resources_and_prompts_in_both_eras() {
    let Some(python) = python() else { return };
    let sb = Sandbox::start(SandboxOptions::manual_clock())
        .await
        .expect("sandbox");
    let key = sb.api_key(0).expect("seeded user");
    let resp = reqwest::Client::new()
        .post(format!("{}/api/v1/training/runs", sb.base_url()))
        .bearer_auth(&key)
        .json(&json!({"name": "interop-resources", "config": {
            "max_steps": 20,
            "model": {"name": "PrimeIntellect/Qwen3-0.6B"},
            "orchestrator": {"batch_size": 8}, "trainer": {}, "inference": {}
        }}))
        .send()
        .await
        .expect("create run");
    let body: Value = resp.json().await.expect("json");
    let run_id = body["runId"].as_str().expect("runId").to_string();
    sb.advance(Duration::from_secs(13)); // RUNNING, four steps done

    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let workspace = tmp.path().join("workspace");
    for d in [&home, &workspace] {
        std::fs::create_dir_all(d).unwrap();
    }
    for mode in ["auto", "legacy"] {
        let mut cmd = tokio::process::Command::new(&python);
        cmd.arg(SCRIPT)
            .args([mode, &run_id, "--", BIN, "serve", "--workspace"])
            .arg(&workspace)
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", &home)
            .env("XDG_STATE_HOME", home.join(".state"))
            .env("XDG_CONFIG_HOME", home.join(".config"))
            .env("PRIME_API_BASE_URL", sb.base_url())
            .env("PRIME_TRACES_URL", sb.base_url())
            .env("PRIME_API_KEY", &key)
            .stdin(Stdio::null())
            .kill_on_drop(true);
        let out = tokio::time::timeout(Duration::from_secs(150), cmd.output())
            .await
            .unwrap_or_else(|_| panic!("{mode}: the Python client did not finish in 150 s"))
            .expect("python starts");
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        let summary: Value = stdout
            .lines()
            .last()
            .and_then(|l| serde_json::from_str(l).ok())
            .unwrap_or_else(|| panic!("{mode}: no summary line\n{stdout}\n{stderr}"));
        assert_eq!(summary["ok"], true, "{mode}: {summary}\n{stderr}");
        assert_eq!(summary["templates"], 2);
        assert_eq!(summary["prompts"], 2);
        eprintln!("python resources interop {mode}: {summary}");
    }
    sb.shutdown().await;
}
