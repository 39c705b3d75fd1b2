//! Secret hygiene sweep (issue 9 §6): sentinel values for PRIME_API_KEY (seeded as Alice's key),
//! WANDB_API_KEY, HF_TOKEN and the sandbox's `tokenValue`; the server at `trace` level drives
//! the tools end to end (launch with forwarded secrets, reads, errors, faults, a refused secret
//! value in arguments). No sentinel, nor its JSON-escaped, URL-encoded or base64 form, nor more
//! than its last 4 characters, appears in any tool result, stderr, the state database (which
//! holds the audit log) or any other file the server wrote.

mod common;

use base64::Engine;
use common::{Era, PlainClient, World, call, connect, text};
use factory_sandbox::{FaultEffect, FaultRule, Sandbox, SandboxOptions, Seed, SeedSource};
use serde_json::{Value, json};

const TEAM: &str = factory_sandbox::TEAM_ALPHA_ID;

/// Mixed-case, with `/`, `+` and `=` so that the encoded forms differ from the raw one.
const PRIME: &str = "pit_Sn7kQzXvKpWmRtYb/HcJd+LfNg=Ua";
const WANDB: &str = "Wb9qZxK+mT3vR7pLs2N/hG5dF8jC1aY4eU6iO0wQ";
const HF: &str = "hf_Ht4sQrW+eK9mZ2xP7vL/bN3cJ8gF5dA1yU6";
const TOKEN: &str = "sbxrun_Tk8pQwZ+xM2nR7vL4sJ/hG9cF3dB6aY";

fn config(name: &str) -> String {
    format!(
        r#"name = "{name}"
max_steps = 10
seq_len = 2048
[model]
name = "PrimeIntellect/Qwen3-0.6B-Reverse-Text-SFT"
[deployment]
num_train_gpus = 1
num_infer_gpus = 1
[orchestrator]
batch_size = 8
[orchestrator.renderer]
name = "prime-qwen3"
[[orchestrator.train.source]]
name = "reverse-text"
[orchestrator.train.source.env.taskset]
id = "reverse-text"
[trainer]
[inference]
[monitors.wandb]
project = "sweep"
"#
    )
}

fn url_encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// Every form of `v` that must not appear.
fn forms(v: &str) -> Vec<String> {
    let mut out = vec![v.to_string()];
    out.push(
        serde_json::to_string(v)
            .unwrap()
            .trim_matches('"')
            .replace('/', "\\/"),
    );
    out.push(url_encode(v));
    out.push(url_encode(v).to_lowercase());
    out.push(
        v.replace('+', "%2B")
            .replace('/', "%2F")
            .replace('=', "%3D")
            .replace(' ', "+"),
    );
    for engine in [
        &base64::engine::general_purpose::STANDARD,
        &base64::engine::general_purpose::URL_SAFE,
    ] {
        // The value base64-encoded alone, and inside a larger blob at each alignment (the
        // middle part is the same whatever comes before or after).
        for pad in 0..3 {
            let mut bytes = vec![b'x'; pad];
            bytes.extend_from_slice(v.as_bytes());
            let enc = engine.encode(&bytes);
            let skip = pad.div_ceil(3) * 4;
            let inner: String = enc.chars().skip(skip).take((v.len() / 3 - 1) * 4).collect();
            out.push(inner);
        }
    }
    // More than the last 4 characters: the last 5, and any 6 in a row.
    out.push(v[v.len() - 5..].to_string());
    for i in 0..=v.len() - 6 {
        out.push(v[i..i + 6].to_string());
    }
    out
}

fn leaks(hay: &str, label: &str) -> Vec<String> {
    let mut found = Vec::new();
    for (name, v) in [
        ("PRIME_API_KEY", PRIME),
        ("WANDB_API_KEY", WANDB),
        ("HF_TOKEN", HF),
        ("tokenValue", TOKEN),
    ] {
        for f in forms(v) {
            if let Some(at) = hay.find(&f) {
                let from = hay[..at]
                    .char_indices()
                    .rev()
                    .nth(40)
                    .map(|(i, _)| i)
                    .unwrap_or(0);
                let ctx: String = hay[from..].chars().take(100).collect();
                found.push(format!("{label}: {name} as `{f}`: …{ctx}…"));
                break;
            }
        }
    }
    found
}

fn scan_dir(dir: &std::path::Path, found: &mut Vec<String>, files: &mut usize) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let p = entry.path();
        if p.is_dir() {
            scan_dir(&p, found, files);
        } else if let Ok(bytes) = std::fs::read(&p) {
            *files += 1;
            found.extend(leaks(
                &String::from_utf8_lossy(&bytes),
                &p.display().to_string(),
            ));
        }
    }
}

#[tokio::test]
async fn no_sentinel_leaks_anywhere_at_the_most_verbose_level() {
    let mut seed = Seed::default();
    seed.users[0].api_key = PRIME.into();
    let sandbox = Sandbox::start(SandboxOptions {
        seed: SeedSource::Value(Box::new(seed)),
        token_value: Some(TOKEN.into()),
        ..SandboxOptions::manual_clock()
    })
    .await
    .unwrap();
    let w = World {
        sandbox,
        home: tempfile::tempdir().unwrap(),
        workspace: tempfile::tempdir().unwrap(),
    };
    assert_eq!(w.key(0), PRIME);
    let mut env = w.env(0);
    env.retain(|(k, _)| k != "FACTORY_MCP_LOG");
    env.push(("FACTORY_MCP_LOG".into(), "trace".into()));
    env.push(("WANDB_API_KEY".into(), WANDB.into()));
    env.push(("HF_TOKEN".into(), HF.into()));
    let args = [
        "--confirm",
        "plan",
        "--max-cost-per-hour-usd",
        "1000",
        "--max-active-cost-per-hour-usd",
        "5000",
    ];
    let c = connect(PlainClient, w.transport(env.clone(), &args), Era::Modern).await;
    let other = w.create_run(1, "bobs-run", 10, None).await;

    let mut results: Vec<(String, Value)> = Vec::new();
    let mut record = |name: &str, r: rmcp::model::CallToolResult| {
        results.push((
            name.to_string(),
            json!({"text": text(&r), "structured": r.structured_content, "isError": r.is_error}),
        ));
        r
    };
    for (tool, a) in [
        ("whoami", json!({})),
        ("list_teams", json!({})),
        ("list_models", json!({})),
        ("list_gpus", json!({})),
        ("list_volumes", json!({})),
        (
            "validate_config",
            json!({"config_toml": config("sweep-run")}),
        ),
    ] {
        record(tool, call(&c, tool, a).await);
    }
    // A launch that forwards both secrets; the platform answers with the sentinel tokenValue.
    let p = record("plan_run", call(&c, "plan_run", json!({"config_toml": config("sweep-run"), "team_id": TEAM, "env": ["WANDB_API_KEY", "HF_TOKEN"]})).await);
    let plan = p
        .structured_content
        .clone()
        .unwrap_or_else(|| panic!("plan: {}", text(&p)));
    let launched = record(
        "launch_run",
        call(&c, "launch_run", json!({"plan_id": plan["plan_id"]})).await,
    );
    assert_ne!(launched.is_error, Some(true), "{}", text(&launched));
    let run = launched.structured_content.unwrap()["run_id"]
        .as_str()
        .unwrap()
        .to_string();
    let forwarded = w.sandbox.run(&run).unwrap();
    // The values did reach the platform (the sandbox shows only which ones were provided).
    assert_eq!(
        forwarded["secretsProvided"],
        json!(["wandbApiKey", "hfToken"]),
        "{forwarded}"
    );
    record(
        "launch_run again",
        call(&c, "launch_run", json!({"plan_id": plan["plan_id"]})).await,
    );
    w.advance(40);
    for tool in [
        "get_run",
        "get_components",
        "get_logs",
        "get_metrics",
        "get_progress",
        "list_checkpoints",
        "get_rollouts",
        "diagnose_run",
        "run_report",
        "list_traces",
    ] {
        record(tool, call(&c, tool, json!({"run_id": run})).await);
    }
    record(
        "fetch_traces",
        call(
            &c,
            "fetch_traces",
            json!({"run_id": run, "dest_dir": "traces", "step": 2}),
        )
        .await,
    );
    // Errors: a foreign run, a platform fault, secret values passed as arguments.
    record(
        "get_run foreign",
        call(&c, "get_run", json!({"run_id": other})).await,
    );
    let mut fault = FaultRule::new(format!("/api/v1/rft/runs/{run}"), FaultEffect::Status);
    fault.status = Some(500);
    fault.method = Some("GET".into());
    fault.times = Some(3);
    w.sandbox.add_fault(fault);
    record(
        "get_run 500",
        call(&c, "get_run", json!({"run_id": run})).await,
    );
    for (label, a) in [
        (
            "name",
            json!({"config_toml": config("sweep-2"), "team_id": TEAM, "run_name": WANDB}),
        ),
        (
            "env",
            json!({"config_toml": config("sweep-2"), "team_id": TEAM, "env": [format!("HF_TOKEN={HF}")]}),
        ),
        (
            "key",
            json!({"config_toml": config("sweep-2"), "team_id": TEAM, "image_tag": PRIME}),
        ),
        (
            "toml",
            json!({"config_toml": config("sweep-2").replace("[trainer]", &format!("[trainer]\nhf_token = \"{HF}\"")), "team_id": TEAM}),
        ),
    ] {
        let r = record(&format!("plan_run {label}"), call(&c, "plan_run", a).await);
        assert_eq!(
            r.is_error,
            Some(true),
            "{label}: a secret value was accepted: {}",
            text(&r)
        );
    }
    record(
        "stop_run",
        call(&c, "stop_run", json!({"run_id": run, "wait": false})).await,
    );
    c.cancel().await.unwrap();
    // `guard` writes to the same state and log too.
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_factory-mcp"))
        .args(["guard", "--once", "--dry-run"])
        .env_clear()
        .envs(env)
        .current_dir(w.workspace.path())
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(std::time::Duration::from_secs(60), out)
        .await
        .expect("guard --once finishes")
        .unwrap();
    let guard_out = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );

    let mut found = Vec::new();
    for (name, r) in &results {
        found.extend(leaks(&r.to_string(), &format!("result of {name}")));
    }
    found.extend(leaks(&guard_out, "guard output"));
    let stderr = std::fs::read_to_string(w.stderr_path()).unwrap();
    assert!(
        stderr.contains("TRACE") || stderr.contains("DEBUG"),
        "the log was not verbose"
    );
    let mut files = 0;
    scan_dir(w.home.path(), &mut found, &mut files);
    scan_dir(w.workspace.path(), &mut found, &mut files);
    assert!(w.state_dir().join("state.sqlite3").exists());
    eprintln!(
        "secret sweep: {} tool results, {} bytes of stderr, {files} files scanned, {} forms per sentinel",
        results.len(),
        stderr.len(),
        forms(PRIME).len()
    );
    assert!(found.is_empty(), "sentinels leaked:\n{}", found.join("\n"));
    // The masked key shows its last 4 characters and nothing more.
    let who = &results[0].1["structured"];
    let masked = who["api_key"].as_str().unwrap();
    assert!(masked.ends_with(&PRIME[PRIME.len() - 4..]), "{masked}");
}
