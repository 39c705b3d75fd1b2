//! Regression tests for the red-team findings of issue 17 that are not about HTTP: code run on
//! the model's say-so, file reads that hang or balloon, a directory swapped for a symlink during
//! a download, secrets uploaded to a shared volume, echoed secrets, and unpaced polling. Each
//! drives the real binary over stdio against the sandbox.

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::Duration;

use common::{Era, World, call, err, ok, text, try_call};
use factory_sandbox::{FaultEffect, FaultRule, TEAM_ALPHA_ID};
use rmcp::model::ReadResourceRequestParams;
use serde_json::json;

/// A value the server holds as a forwardable secret (not a credential shape: only the server's
/// knowledge of it can catch it).
const WANDB_VALUE: &str = "wandb0local0value0f00d0c0ffee0123456789ab";

fn env_with_secret(w: &World) -> Vec<(String, String)> {
    let mut env = w.env(0);
    env.push(("WANDB_API_KEY".into(), WANDB_VALUE.into()));
    env
}

/// A stand-in `uv` on a private PATH (outside the workspace) that records that it ran, its
/// arguments and its environment, then answers like the checkout script.
fn fake_uv(bin: &Path, record: &Path) -> String {
    std::fs::create_dir_all(bin).unwrap();
    let script = bin.join("uv");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\ncat > /dev/null\necho \"$@\" > '{r}.args'\nenv > '{r}.env'\n\
             printf '%s\\n' '{{\"valid\": false, \"errors\": [{{\"loc\": \"trainer.x\", \"msg\": \"bad \\u001b[2J{WANDB_VALUE} \\u202eexe\"}}]}}'\n",
            r = record.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = std::env::var("PATH").unwrap_or_default();
    format!("{}:{path}", bin.display())
}

fn with_path(mut env: Vec<(String, String)>, path: String) -> Vec<(String, String)> {
    env.retain(|(k, _)| k != "PATH");
    env.push(("PATH".into(), path));
    env
}

/// High: a `prime_rl_checkout` argument runs nothing; the server says how a person enables it.
#[tokio::test]
async fn a_checkout_named_by_the_model_never_runs() {
    let w = World::new().await;
    let co = w.workspace_path().join("co");
    std::fs::create_dir_all(&co).unwrap();
    std::fs::write(
        co.join("pyproject.toml"),
        "[project]\nname = \"prime-rl\"\n",
    )
    .unwrap();
    std::fs::write(co.join("json.py"), "open('/tmp/pwned', 'w')\n").unwrap();
    let bin = w.home.path().join("bin");
    let record = w.home.path().join("uv-ran");
    let path = fake_uv(&bin, &record);
    let c = w
        .client_with_env(with_path(env_with_secret(&w), path), &[], Era::Modern)
        .await;
    let r = call(
        &c,
        "validate_config",
        json!({"config_toml": common::rl_config("x", 5), "prime_rl_checkout": "co", "offline": true}),
    )
    .await;
    let msg = err(&r);
    assert!(msg.contains("validate.prime_rl_checkout"), "{msg}");
    assert!(
        !record.with_extension("args").exists(),
        "uv ran on the model's say-so"
    );
    // The prime CLI checker is not the model's to turn on either.
    let r = call(
        &c,
        "validate_config",
        json!({"config_toml": common::rl_config("x", 5), "prime_cli": true, "offline": true}),
    )
    .await;
    assert!(err(&r).contains("prime_cli"), "{}", text(&r));
    c.cancel().await.unwrap();
}

/// High: a checkout a person enabled runs isolated (`python -I`, no key or secret, a temporary
/// HOME) and its output comes back redacted and neutralised; one inside the workspace is refused.
#[tokio::test]
async fn a_policy_checkout_runs_isolated_and_its_output_is_untrusted() {
    let w = World::new().await;
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(
        outside.path().join("pyproject.toml"),
        "[project]\nname = \"prime-rl\"\n",
    )
    .unwrap();
    let bin = w.home.path().join("bin");
    let record = w.home.path().join("uv-ran");
    let path = fake_uv(&bin, &record);
    let co = outside.path().display().to_string();
    let c = w
        .client_with_env(
            with_path(env_with_secret(&w), path.clone()),
            &["--prime-rl-checkout", &co],
            Era::Modern,
        )
        .await;
    let r = call(
        &c,
        "validate_config",
        json!({"config_toml": common::rl_config("x", 5), "offline": true}),
    )
    .await;
    let out = ok(&r);
    let args = std::fs::read_to_string(record.with_extension("args")).expect("uv ran");
    assert!(args.contains("python -I"), "{args}");
    let env = std::fs::read_to_string(record.with_extension("env")).unwrap();
    assert!(
        !env.contains("PRIME_API_KEY") && !env.contains(WANDB_VALUE),
        "{env}"
    );
    let home = w.home.path().display().to_string();
    assert!(!env.lines().any(|l| l == format!("HOME={home}")), "{env}");
    let finding = out["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["source"] == "prime_rl_checkout")
        .expect("the checkout's finding")
        .to_string();
    assert!(!finding.contains(WANDB_VALUE), "{finding}");
    assert!(
        !finding.contains("\\u001b") && !finding.contains('\u{202e}'),
        "{finding}"
    );
    c.cancel().await.unwrap();

    // Inside the workspace: refused, nothing run.
    let inside = w.workspace_path().join("co");
    std::fs::create_dir_all(&inside).unwrap();
    std::fs::write(inside.join("pyproject.toml"), "[project]\n").unwrap();
    std::fs::remove_file(record.with_extension("args")).unwrap();
    let inside = inside.display().to_string();
    let c = w
        .client_with_env(
            with_path(env_with_secret(&w), path),
            &["--prime-rl-checkout", &inside],
            Era::Modern,
        )
        .await;
    let out = ok(&call(
        &c,
        "validate_config",
        json!({"config_toml": common::rl_config("x", 5), "offline": true}),
    )
    .await);
    let checker = out["checkers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "prime_rl_checkout")
        .unwrap()
        .clone();
    assert_eq!(checker["status"], "failed", "{checker}");
    assert!(checker["detail"].as_str().unwrap().contains("overlaps"));
    assert!(!record.with_extension("args").exists());
    c.cancel().await.unwrap();
}

/// Medium: a FIFO as `config_path` is refused at once (it used to hang the call forever), a
/// config over 1 MiB is refused before it is read by validate_config as by plan_run, and a
/// hard-linked config is refused.
#[tokio::test]
async fn config_reads_refuse_fifos_huge_files_and_hard_links() {
    let w = World::new().await;
    let ws = w.workspace_path();
    let fifo = ws.join("pipe.toml");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    let big = std::fs::File::create(ws.join("big.toml")).unwrap();
    big.set_len(2 << 20).unwrap();
    std::fs::write(ws.join("real.toml"), common::rl_config("x", 5)).unwrap();
    std::fs::hard_link(ws.join("real.toml"), ws.join("linked.toml")).unwrap();
    let c = w.client(0, &[], Era::Modern).await;
    for tool in ["validate_config", "plan_run"] {
        let r = tokio::time::timeout(
            Duration::from_secs(60),
            call(&c, tool, json!({"config_path": "pipe.toml"})),
        )
        .await
        .unwrap_or_else(|_| panic!("{tool} hung on a FIFO"));
        assert!(err(&r).contains("FIFO"), "{tool}: {}", text(&r));
        let r = call(&c, tool, json!({"config_path": "big.toml"})).await;
        assert!(err(&r).contains("1048576"), "{tool}: {}", text(&r));
        let r = call(&c, tool, json!({"config_path": "linked.toml"})).await;
        assert!(err(&r).contains("hard link"), "{tool}: {}", text(&r));
    }
    c.cancel().await.unwrap();
}

/// Low: `tt/sub` swapped for a symlink to a directory outside the workspace while traces are
/// downloading: nothing lands outside.
#[tokio::test]
async fn a_destination_swapped_for_a_symlink_mid_download_receives_nothing_outside() {
    let w = World::new().await;
    let run = w.create_run(0, "swap-traces", 10, None).await;
    w.advance(30);
    let outside = tempfile::tempdir().unwrap();
    let c = w.client(0, &[], Era::Modern).await;
    let listed = ok(&call(&c, "list_traces", json!({"run_id": run, "step": 2})).await);
    let ids: Vec<String> = listed["traces"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["trace_id"].as_str().unwrap().to_string())
        .collect();
    assert!(ids.len() >= 3, "{listed}");
    // Every download after the first waits, so the swap happens while they are pending.
    for id in &ids[1..] {
        let mut slow = FaultRule::new(format!("/api/v1/traces/{id}"), FaultEffect::Delay);
        slow.method = Some("GET".into());
        slow.delay_ms = Some(300);
        w.sandbox.add_fault(slow);
    }
    let sub = w.workspace_path().join("tt/sub");
    let first = sub.join(format!("{}.json", ids[0]));
    let fetch = call(
        &c,
        "fetch_traces",
        json!({"run_id": run, "dest_dir": "tt/sub", "step": 2}),
    );
    let swap = async {
        // Wait (no assertion on time) for the first file, then swap the directory.
        for _ in 0..4000 {
            if first.exists() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        assert!(first.exists(), "the first trace never arrived");
        std::fs::rename(&sub, w.workspace_path().join("tt/old")).unwrap();
        std::os::unix::fs::symlink(outside.path(), &sub).unwrap();
    };
    let (r, ()) = tokio::join!(fetch, swap);
    let landed: Vec<_> = std::fs::read_dir(outside.path()).unwrap().collect();
    assert!(
        landed.is_empty(),
        "{} file(s) landed outside the workspace: {}",
        landed.len(),
        text(&r)
    );
    // What did land is in the directory that was opened: every trace, in `tt/old`.
    let mut kept: Vec<String> = std::fs::read_dir(w.workspace_path().join("tt/old"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    kept.sort();
    let mut want: Vec<String> = ids.iter().map(|id| format!("{id}.json")).collect();
    want.sort();
    assert_eq!(kept, want, "{}", text(&r));
    c.cancel().await.unwrap();
}

/// Misc: fetch_traces for a run that does not exist creates no directory.
#[tokio::test]
async fn fetch_traces_for_a_missing_run_creates_nothing() {
    let w = World::new().await;
    let c = w.client(0, &[], Era::Modern).await;
    let r = call(
        &c,
        "fetch_traces",
        json!({"run_id": "no-such-run", "dest_dir": "fresh/dir"}),
    )
    .await;
    assert_eq!(r.is_error, Some(true), "{}", text(&r));
    assert!(
        !w.workspace_path().join("fresh").exists(),
        "dest_dir was created before the run was checked"
    );
    c.cancel().await.unwrap();
}

/// Low: secret files and files holding the server's secrets are not uploaded to a shared
/// volume; the refusal names the file and the kind, never the value.
#[tokio::test]
async fn secrets_are_not_uploaded_to_a_volume() {
    let w = World::new().await;
    let resp = reqwest::Client::new()
        .post(format!("{}/api/v1/training/volumes", w.sandbox.base_url()))
        .bearer_auth(w.key(0))
        .json(&json!({"name": "shared", "size": "500Gi", "teamId": TEAM_ALPHA_ID}))
        .send()
        .await
        .unwrap();
    assert!(resp.status().is_success());
    w.advance(5);
    let ws = w.workspace_path();
    std::fs::create_dir_all(ws.join("leak")).unwrap();
    std::fs::write(
        ws.join("leak/.env"),
        format!("WANDB_API_KEY={WANDB_VALUE}\n"),
    )
    .unwrap();
    std::fs::create_dir_all(ws.join("data")).unwrap();
    std::fs::write(
        ws.join("data/train.jsonl"),
        format!("{{\"text\": \"{WANDB_VALUE}\"}}\n"),
    )
    .unwrap();
    let c = w
        .client_with_env(env_with_secret(&w), &[], Era::Modern)
        .await;
    for (dir, named) in [("leak", ".env"), ("data", "train.jsonl")] {
        let r = call(
            &c,
            "upload_to_volume",
            json!({"volume": "shared", "local_path": dir, "team_id": TEAM_ALPHA_ID}),
        )
        .await;
        let msg = err(&r);
        assert!(msg.contains(named), "{msg}");
        assert!(!msg.contains(WANDB_VALUE), "{msg}");
        assert!(
            w.sandbox
                .volume_file("shared", &format!("datasets/{dir}/{named}"))
                .is_none(),
            "{dir}/{named} reached the volume"
        );
    }
    c.cancel().await.unwrap();
}

/// Low: an unknown tool name or resource URI holding a secret value is not echoed back.
#[tokio::test]
async fn unknown_tool_names_and_uris_are_not_echoed_unredacted() {
    let w = World::new().await;
    let c = w
        .client_with_env(env_with_secret(&w), &[], Era::Modern)
        .await;
    let e = try_call(&c, WANDB_VALUE, json!({})).await.unwrap_err();
    assert!(!e.to_string().contains(WANDB_VALUE), "{e}");
    let e = c
        .read_resource(ReadResourceRequestParams::new(format!(
            "factory://nothing/{WANDB_VALUE}"
        )))
        .await
        .unwrap_err();
    assert!(!e.to_string().contains(WANDB_VALUE), "{e}");
    let e = c
        .read_resource(ReadResourceRequestParams::new(format!(
            "factory://runs/{WANDB_VALUE}"
        )))
        .await
        .unwrap_err();
    assert!(!e.to_string().contains(WANDB_VALUE), "{e}");
    c.cancel().await.unwrap();
}

/// Misc: 150 parallel watch_run calls share one pacing budget instead of each polling on its
/// own. Without it each wait reads the run at 0 s, 2 s and 4 s (450 reads in 6 s); with it the
/// platform sees one first read per call plus what the budget allows (5/s, bursts of 10).
#[tokio::test]
async fn parallel_watches_share_one_polling_budget() {
    let w = World::new().await;
    let run = w.create_run(0, "watched", 1000, None).await;
    w.advance(30);
    // Watches that each poll every 100 ms (the hidden test knob): alone, 150 of them would read
    // the run thousands of times in 6 s; the shared budget (8 per poll interval: 80/s) bounds
    // them all together.
    let mut env = w.env(0);
    env.push(("FACTORY_MCP_WATCH_POLL_MS".into(), "100".into()));
    let c = w.client_with_env(env, &[], Era::Modern).await;
    let path = format!("/api/v1/rft/runs/{run}");
    let before = w
        .sandbox
        .request_log()
        .iter()
        .filter(|r| r.path == path)
        .count();
    let watches = (0..150).map(|_| call(&c, "watch_run", json!({"run_id": run, "timeout_s": 6})));
    let results = futures::future::join_all(watches).await;
    for r in &results {
        ok(r);
    }
    let reads = w
        .sandbox
        .request_log()
        .iter()
        .filter(|r| r.path == path)
        .count()
        - before;
    // 150 first reads + 6 s × 80/s + a burst of 10, with room for rounding.
    assert!(reads <= 150 + 480 + 10 + 40, "{reads} run reads in 6 s");
    c.cancel().await.unwrap();
}
