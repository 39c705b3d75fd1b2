//! Fidelity: the official `prime` CLI 0.18.0 against the sandbox. Each command's exit status is
//! checked, and so is what it printed, against what the sandbox holds (the CLI exits 0 on some
//! failures, e.g. a stop that never finished or logs of a run not started).
//!
//! The CLI comes from `$FACTORY_MCP_INTEROP_DIR/venv/bin/prime` (installed by
//! `scripts/setup-interop.sh`). Without it the test is skipped, except under CI, where it fails.

mod common;

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

use common::Client;
use factory_sandbox::{
    ALICE_USER_ID, CAROL_USER_ID, RESERVED_GPU_TYPE, Sandbox, SandboxHandle, SandboxOptions,
    TEAM_ALPHA_ID, TEAM_BETA_ID, TEAM_GAMMA_ID,
};
use serde_json::{Value, json};

const TOKEN_SENTINEL: &str = "SANDBOX-TOKEN-SENTINEL-7f3a";

fn prime_binary() -> Option<PathBuf> {
    let found = std::env::var_os("FACTORY_MCP_INTEROP_DIR")
        .map(|d| PathBuf::from(d).join("venv/bin/prime"))
        .filter(|p| p.is_file());
    if found.is_none() {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI is set but the prime CLI is missing: run scripts/setup-interop.sh and export FACTORY_MCP_INTEROP_DIR"
        );
        eprintln!(
            "skipping: prime CLI not found (set FACTORY_MCP_INTEROP_DIR; see scripts/setup-interop.sh)"
        );
    }
    found
}

fn example(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}

struct Prime {
    bin: PathBuf,
    home: tempfile::TempDir,
    base: String,
    key: String,
    team: Option<String>,
}

struct Ran {
    code: i32,
    stdout: String,
    stderr: String,
}

impl Ran {
    fn json(&self) -> Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}\nstderr: {}", self.stdout, self.stderr))
    }
}

impl Prime {
    fn new(bin: &Path, sb: &SandboxHandle, team: Option<&str>) -> Self {
        Self::as_user(bin, sb, 0, team)
    }

    /// The CLI with the key of seeded user `user` (0 Alice, 1 Bob, 2 Carol, 3 Dave).
    fn as_user(bin: &Path, sb: &SandboxHandle, user: usize, team: Option<&str>) -> Self {
        Self {
            bin: bin.to_path_buf(),
            home: tempfile::tempdir().expect("scratch HOME"),
            base: sb.base_url(),
            key: sb.api_key(user).expect("seeded user"),
            team: team.map(str::to_string),
        }
    }

    fn command(&self, args: &[&str]) -> tokio::process::Command {
        let mut cmd = tokio::process::Command::new(&self.bin);
        cmd.args(args)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", self.home.path())
            .env("PRIME_API_BASE_URL", &self.base)
            .env("PRIME_TRACES_URL", &self.base)
            .env("PRIME_API_KEY", &self.key)
            .env("PRIME_DISABLE_VERSION_CHECK", "1")
            .env("COLUMNS", "250")
            .env("TERM", "dumb")
            .env("NO_COLOR", "1")
            .stdin(std::process::Stdio::null())
            .kill_on_drop(true);
        if let Some(t) = &self.team {
            cmd.env("PRIME_TEAM_ID", t);
        }
        cmd
    }

    async fn run(&self, args: &[&str]) -> Ran {
        let out: Output =
            tokio::time::timeout(Duration::from_secs(120), self.command(args).output())
                .await
                .unwrap_or_else(|_| panic!("prime {args:?} took over 120 s"))
                .expect("prime runs");
        let ran = Ran {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        };
        eprintln!("$ prime {} -> {}", args.join(" "), ran.code);
        ran
    }

    async fn ok(&self, args: &[&str]) -> Ran {
        let r = self.run(args).await;
        assert_eq!(
            r.code, 0,
            "prime {args:?} failed\nstdout: {}\nstderr: {}",
            r.stdout, r.stderr
        );
        r
    }
}

/// Python `str(datetime)` of a wire timestamp, as `train … -o json` prints it.
fn py_datetime(wire: &Value) -> Value {
    let Some(s) = wire.as_str() else {
        return Value::Null;
    };
    let t = chrono::DateTime::parse_from_rfc3339(s).expect("wire datetime");
    let micros = t.timestamp_subsec_micros();
    let base = t.format("%Y-%m-%d %H:%M:%S").to_string();
    Value::String(if micros == 0 {
        format!("{base}+00:00")
    } else {
        format!("{base}.{micros:06}+00:00")
    })
}

fn api_logs(v: &Value) -> Vec<String> {
    v["logs"]
        .as_str()
        .unwrap_or("")
        .lines()
        .map(str::to_string)
        .collect()
}

/// What the CLI shows for a log line: the `message` of a JSON record, else the line itself.
fn shown(line: &str) -> Option<String> {
    match serde_json::from_str::<Value>(line) {
        Ok(v) if v.get("type").and_then(Value::as_str) == Some("progress") => None,
        Ok(v) => v["message"].as_str().map(str::to_string),
        Err(_) => Some(line.to_string()),
    }
}

/// Advances the manual clock whenever the CLI is waiting for a new volume.
async fn advance_while_volume_waits(sb: &SandboxHandle, volume: &str) {
    // The clock moves once the volume exists, not once its POST arrives: the request log is
    // written before the handler reads the clock, so advancing on the request alone can
    // create the volume after the advance, never ready on a manual clock (CI saw this).
    // Bounded so a CLI that never creates it fails on the run's own timeout, not here.
    for _ in 0..2400 {
        if sb.volume_names().iter().any(|n| n == volume) {
            sb.advance(Duration::from_secs(10));
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_official_cli_works_against_the_sandbox() {
    let Some(bin) = prime_binary() else { return };
    let sb = Sandbox::start(SandboxOptions {
        token_value: Some(TOKEN_SENTINEL.into()),
        ..SandboxOptions::manual_clock()
    })
    .await
    .expect("sandbox");
    let api = Client::new(&sb, 0);
    let personal = Prime::new(&bin, &sb, None);
    let team = Prime::new(&bin, &sb, Some(TEAM_ALPHA_ID));
    let mut transcript = String::new();

    // ---- account ------------------------------------------------------------------------
    let teams = personal.ok(&["teams", "list", "-o", "json"]).await.json();
    let (_, wire_teams) = api.get("/api/v1/user/teams?offset=0&limit=100").await;
    assert_eq!(teams["teams"], wire_teams["data"]);
    assert_eq!(teams["total_count"], 2);
    assert_eq!(
        (teams["offset"].as_u64(), teams["limit"].as_u64()),
        (Some(0), Some(100))
    );

    for p in [&personal, &team] {
        let who = p.ok(&["whoami"]).await;
        assert!(
            who.stdout.contains(ALICE_USER_ID) && who.stdout.contains("Alice Sandbox"),
            "{}",
            who.stdout
        );
        assert!(
            who.stdout
                .contains(if p.team.is_some() { "Team" } else { "Personal" })
        );
        let cfg: Value = serde_json::from_slice(
            &std::fs::read(p.home.path().join(".prime/config.json")).unwrap(),
        )
        .unwrap();
        assert_eq!(cfg["user_id"], ALICE_USER_ID, "whoami stored the user id");
    }
    assert!(
        sb.request_log()
            .iter()
            .any(|r| r.path == "/api/v1/user/whoami"
                && r.query.as_deref() == Some(&format!("teamId={TEAM_ALPHA_ID}")))
    );

    let models = team.ok(&["train", "models", "-o", "json"]).await.json();
    let (_, wire_models) = api.get("/api/v1/training/available-fft-models").await;
    let names = |v: &Value, k: &str| -> Vec<String> {
        v[k].as_array()
            .unwrap()
            .iter()
            .map(|m| m["name"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(
        names(&models, "available_fft_models"),
        names(&wire_models, "models")
    );
    assert_eq!(
        models["available_fft_models"][0]["clusters"][0]["cluster_id"],
        wire_models["models"][0]["clusters"][0]["clusterId"]
    );
    let od = models["on_demand"].as_array().unwrap();
    assert_eq!(od.len(), 3);
    for (cli, wire) in od.iter().zip(wire_models["onDemand"].as_array().unwrap()) {
        assert_eq!(cli["gpu_type"], wire["gpuType"]);
        assert_eq!(cli["price_per_gpu_hour"], wire["pricePerGpuHour"]);
        assert_eq!(cli["available_now"], wire["availableNow"]);
    }
    assert_eq!(models["on_demand_beta_access"], true);

    let gpus = personal.ok(&["train", "gpus", "-o", "json"]).await.json();
    assert_eq!(
        gpus,
        json!({"gpuTypes": ["H100_80GB", "H200_141GB", "B200_180GB"]})
    );

    // ---- dispatch -----------------------------------------------------------------------
    let rl = example("reverse-text_rl.toml");
    let dispatched = personal
        .ok(&["train", "run", rl.to_str().unwrap(), "--yes", "-o", "json"])
        .await;
    let out = dispatched.json();
    let run_id = out["run"]["runId"].as_str().expect("runId").to_string();
    assert!(
        !dispatched.stdout.contains(TOKEN_SENTINEL) && !dispatched.stderr.contains(TOKEN_SENTINEL)
    );
    let held = sb
        .run(&run_id)
        .expect("the sandbox holds the dispatched run");
    assert_eq!(held["run"]["userId"], ALICE_USER_ID);
    assert_eq!(held["run"]["teamId"], Value::Null);
    assert_eq!(
        held["run"]["baseModel"],
        "PrimeIntellect/Qwen3-0.6B-Reverse-Text-SFT"
    );
    assert_eq!(held["run"]["maxSteps"], 20);
    assert_eq!(
        held["createBody"]["config"]["orchestrator"]["batch_size"],
        128
    );
    assert_eq!(out["run"]["onDemand"], true);
    assert_eq!(out["run"]["gpuType"], held["gpuType"]);
    assert_eq!(out["run"]["pricePerGpuHour"], 2.49);
    assert_eq!(sb.create_requests(), 1);
    assert!(
        sb.request_log()
            .iter()
            .any(|r| r.path == "/api/v1/training/runs/prepare")
    );

    // With a team, and a volume the CLI creates and waits for.
    let vol_args = [
        "train",
        "run",
        rl.to_str().unwrap(),
        "--volume",
        "sbx-vol",
        "--yes",
        "-o",
        "json",
    ];
    let (dispatch, ()) = tokio::join!(
        team.run(&vol_args),
        advance_while_volume_waits(&sb, "sbx-vol")
    );
    assert_eq!(dispatch.code, 0, "{} {}", dispatch.stdout, dispatch.stderr);
    let team_run = dispatch.json()["run"]["runId"]
        .as_str()
        .unwrap()
        .to_string();
    let held_team = sb.run(&team_run).unwrap();
    assert_eq!(held_team["run"]["teamId"], TEAM_ALPHA_ID);
    assert_eq!(held_team["run"]["volumeName"], "sbx-vol");
    assert!(
        dispatch.stderr.contains("creating it"),
        "{}",
        dispatch.stderr
    );

    // ---- list / get ---------------------------------------------------------------------
    let list = personal.ok(&["train", "list", "-o", "json"]).await.json();
    assert_eq!(
        (
            list["total"].as_u64(),
            list["page"].as_u64(),
            list["per_page"].as_u64()
        ),
        (Some(1), Some(1), Some(20))
    );
    assert_eq!(list["runs"][0]["id"], run_id.as_str());
    let team_list = team.ok(&["train", "list", "-o", "json"]).await.json();
    let ids: Vec<&str> = team_list["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        vec![team_run.as_str()],
        "the team list holds the team's run only"
    );

    // Make the personal run RUNNING with a few steps (5 s to start, 2 s per step).
    sb.advance(Duration::from_secs(5 + 2 * 6));
    let steps = sb.run(&run_id).unwrap()["steps"].as_u64().unwrap();
    assert!(steps >= 6, "{steps}");
    let got = personal
        .ok(&["train", "get", &run_id, "-o", "json"])
        .await
        .json();
    let (_, wire) = api.get(&format!("/api/v1/rft/runs/{run_id}")).await;
    let (g, w) = (&got["run"], &wire["run"]);
    assert_eq!(g["status"], "RUNNING");
    for (snake, camel) in [
        ("id", "id"),
        ("name", "name"),
        ("user_id", "userId"),
        ("team_id", "teamId"),
        ("prime_cluster_id", "primeClusterId"),
        ("status", "status"),
        ("kind", "kind"),
        ("max_steps", "maxSteps"),
        ("seq_len", "seqLen"),
        ("batch_size", "batchSize"),
        ("base_model", "baseModel"),
        ("loss", "loss"),
        ("gpu_count", "gpuCount"),
        ("run_config", "runConfig"),
        ("environments", "environments"),
        ("wandb_project", "wandbProject"),
        ("learning_rate", "learningRate"),
    ] {
        assert_eq!(g[snake], w[camel], "{snake}");
    }
    for (snake, camel) in [
        ("created_at", "createdAt"),
        ("updated_at", "updatedAt"),
        ("started_at", "startedAt"),
    ] {
        assert_eq!(g[snake], py_datetime(&w[camel]), "{snake}");
    }
    let missing = personal
        .run(&["train", "get", "cnosuchrun0000000000000000", "-o", "json"])
        .await;
    assert_eq!(missing.code, 1);
    assert!(
        missing
            .stdout
            .contains("HTTP 404: Run cnosuchrun0000000000000000 not found"),
        "{}",
        missing.stdout
    );

    // ---- monitoring ---------------------------------------------------------------------
    let logs = personal.ok(&["train", "logs", &run_id]).await;
    let (_, wire_logs) = api
        .get(&format!("/api/v1/rft/runs/{run_id}/logs?tail_lines=1000"))
        .await;
    let lines = api_logs(&wire_logs);
    assert!(lines.len() > 6);
    assert!(!logs.stdout.contains("has not started yet"));
    for line in &lines {
        if let Some(text) = shown(line) {
            assert!(
                logs.stdout.contains(&text),
                "missing {text:?} in\n{}",
                logs.stdout
            );
        }
    }
    assert!(
        logs.stdout.contains("WARNING") && logs.stdout.contains(&format!("Step {steps} | reward"))
    );

    let tail = personal
        .ok(&["train", "logs", &run_id, "-c", "trainer", "--tail", "5"])
        .await;
    let (_, wire_tail) = api
        .get(&format!(
            "/api/v1/rft/runs/{run_id}/logs?tail_lines=5&component=trainer"
        ))
        .await;
    let (_, wire_more) = api
        .get(&format!(
            "/api/v1/rft/runs/{run_id}/logs?tail_lines=6&component=trainer"
        ))
        .await;
    let tail_lines = api_logs(&wire_tail);
    assert_eq!(tail_lines.len(), 5);
    for line in &tail_lines {
        assert!(tail.stdout.contains(&shown(line).unwrap()), "{line}");
    }
    let sixth = shown(&api_logs(&wire_more)[0]).unwrap();
    assert!(
        !tail.stdout.contains(&sixth),
        "only the last five lines: {sixth}"
    );
    assert!(sb.request_log().iter().any(|r| r.path.ends_with("/logs")
        && r.query.as_deref() == Some("tail_lines=5&component=trainer")));

    let metrics = personal.ok(&["train", "metrics", &run_id]).await.json();
    let (_, wire_metrics) = api.get(&format!("/api/v1/rft/runs/{run_id}/metrics")).await;
    assert_eq!(metrics, wire_metrics);
    assert_eq!(metrics["metrics"].as_array().unwrap().len() as u64, steps);

    let progress = personal.ok(&["train", "progress", &run_id]).await.json();
    let (_, wp) = api
        .get(&format!("/api/v1/rft/runs/{run_id}/progress"))
        .await;
    assert_eq!(
        progress,
        json!({
            "latest_step": wp["latestStep"], "steps_with_samples": wp["stepsWithSamples"],
            "steps_with_distributions": wp["stepsWithDistributions"], "last_updated_at": wp["lastUpdatedAt"],
        })
    );
    assert_eq!(progress["latest_step"], steps);

    let cks = personal
        .ok(&["train", "checkpoints", &run_id, "-o", "json"])
        .await
        .json();
    let (_, wc) = api
        .get(&format!("/api/v1/rft/runs/{run_id}/checkpoints"))
        .await;
    let wc = wc["checkpoints"].as_array().unwrap();
    let cks = cks["checkpoints"].as_array().unwrap();
    assert_eq!(cks.len(), wc.len());
    assert!(!cks.is_empty());
    for (c, w) in cks.iter().zip(wc) {
        assert_eq!(
            (&c["id"], &c["step"], &c["storage_url"], &c["status"]),
            (&w["id"], &w["step"], &w["storageUrl"], &w["status"])
        );
        assert_eq!(c["rft_run_id"], run_id.as_str());
        assert_eq!(c["created_at"], py_datetime(&w["createdAt"]));
    }

    let comps = personal.ok(&["train", "components", &run_id]).await;
    let (_, es) = api
        .get(&format!("/api/v1/rft/runs/{run_id}/env-servers"))
        .await;
    assert_eq!(es["env_servers"][0]["env_name"], "reverse-text");
    for needle in ["orchestrator", "RUNNING", "env-server", "reverse-text"] {
        assert!(
            comps.stdout.contains(needle),
            "{needle} missing in\n{}",
            comps.stdout
        );
    }

    // ---- traces -------------------------------------------------------------------------
    let tl = personal.ok(&["traces", "list"]).await;
    let (_, wt) = api.get("/api/v1/traces?limit=20").await;
    let items = wt["items"].as_array().unwrap();
    assert_eq!(items.len(), 20);
    assert!(
        tl.stdout.contains(items[0]["trace_id"].as_str().unwrap()),
        "{}",
        tl.stdout
    );
    let tj = personal
        .ok(&["traces", "list", "--run-id", &run_id, "-o", "json"])
        .await
        .json();
    let cli_ids: Vec<&str> = tj["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["trace_id"].as_str().unwrap())
        .collect();
    let wire_ids: Vec<&str> = items
        .iter()
        .map(|t| t["trace_id"].as_str().unwrap())
        .collect();
    assert_eq!(cli_ids, wire_ids);
    assert_eq!(tj["next_cursor"], wt["next_cursor"]);
    let team_traces = team.ok(&["traces", "list"]).await;
    assert_eq!(team_traces.code, 0);

    let trace_id = wire_ids[0].to_string();
    let dest = personal.home.path().join("trace.json");
    let got = personal
        .ok(&[
            "traces",
            "get",
            &trace_id,
            "--raw",
            "--dest",
            dest.to_str().unwrap(),
        ])
        .await;
    let bytes = std::fs::read(&dest).expect("the CLI wrote the file");
    let raw = api
        .http
        .get(format!("{}/api/v1/traces/{trace_id}?raw=true", api.base))
        .bearer_auth(&api.key)
        .send()
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    assert_eq!(bytes, raw.to_vec(), "byte-exact");
    assert_eq!(bytes.len() as u64, items[0]["size_bytes"].as_u64().unwrap());
    assert!(
        got.stdout.contains(&format!("Wrote {} bytes", bytes.len())),
        "{}",
        got.stdout
    );

    // ---- volumes ------------------------------------------------------------------------
    let vols = team.ok(&["volumes", "list", "-o", "json"]).await.json();
    let (_, wv) = api
        .get(&format!("/api/v1/training/volumes?teamId={TEAM_ALPHA_ID}"))
        .await;
    assert_eq!(&vols, &wv["volumes"], "a bare array of the wire volumes");
    assert_eq!(vols[0]["name"], "sbx-vol");
    assert_eq!(vols[0]["status"], "RUNNING");
    assert_eq!(vols[0]["size"], "5Ti");
    let none = personal.ok(&["volumes", "list", "-o", "json"]).await.json();
    assert_eq!(
        none,
        json!([]),
        "the team's volume is not in the personal account"
    );

    // ---- stop ---------------------------------------------------------------------------
    let stop = personal.ok(&["train", "stop", &run_id, "--force"]).await;
    assert!(
        stop.stdout
            .contains(&format!("Run {run_id} stopped successfully")),
        "{}",
        stop.stdout
    );
    assert_eq!(sb.run(&run_id).unwrap()["run"]["status"], "STOPPED");
    // Stopping a run that already finished exits 0 too: the output tells the difference.
    let short = api.create(common::run_body("short", 1)).await;
    sb.advance(Duration::from_secs(10));
    let late = personal.ok(&["train", "stop", &short, "--force"]).await;
    assert!(
        late.stdout
            .contains("reached a terminal state before the stop completed"),
        "{}",
        late.stdout
    );
    assert_eq!(sb.run(&short).unwrap()["run"]["status"], "COMPLETED");

    // An SFT config (with online eval) dispatches as `mode: "sft"`; components lists its pods.
    let sft = example("reverse-text_sft.toml");
    let out = personal
        .ok(&["train", "run", sft.to_str().unwrap(), "--yes", "-o", "json"])
        .await
        .json();
    let sft_id = out["run"]["runId"].as_str().unwrap().to_string();
    let held = sb.run(&sft_id).unwrap();
    assert_eq!(
        (&held["createBody"]["mode"], &held["run"]["loss"]),
        (&json!("sft"), &json!("sft"))
    );
    sb.advance(Duration::from_secs(8));
    let comps = personal.ok(&["train", "components", &sft_id]).await;
    for needle in ["trainer", "orchestrator", "inference", "RUNNING"] {
        assert!(
            comps.stdout.contains(needle),
            "{needle} missing in\n{}",
            comps.stdout
        );
    }

    // No command, request log or inspection ever shows the per-run token.
    transcript.push_str(&format!("{:?}{:?}", sb.request_log(), sb.runs()));
    assert!(!transcript.contains(TOKEN_SENTINEL));
    sb.shutdown().await;
}

/// The CLI agrees with the accounts beyond on-demand capacity: a team's reserved-only GPU type
/// (`train gpus`, `train models`), custom refs (`train run --ref`: recorded with the pinned
/// commit for an allowlisted team, the platform's 403 shown for another), an account without
/// on-demand access, and a reserved run of a model its cluster does not cache.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_official_cli_agrees_with_reserved_clusters_and_custom_refs() {
    let Some(bin) = prime_binary() else { return };
    let sb = Sandbox::start(SandboxOptions::manual_clock())
        .await
        .expect("sandbox");
    let carol_api = Client::new(&sb, 2);
    let gamma = Prime::as_user(&bin, &sb, 2, Some(TEAM_GAMMA_ID));
    let carol = Prime::as_user(&bin, &sb, 2, None);
    let beta = Prime::new(&bin, &sb, Some(TEAM_BETA_ID));
    let dave = Prime::as_user(&bin, &sb, 3, None);
    let rl = example("reverse-text_rl.toml");
    let rl = rl.to_str().unwrap();

    // ---- gpus / models ------------------------------------------------------------------
    let gpus = gamma.ok(&["train", "gpus", "-o", "json"]).await.json();
    let (_, wire) = carol_api
        .get(&format!(
            "/api/v1/training/available-gpu-types?team_id={TEAM_GAMMA_ID}"
        ))
        .await;
    assert_eq!(gpus, wire);
    assert!(
        gpus["gpuTypes"]
            .as_array()
            .unwrap()
            .contains(&json!(RESERVED_GPU_TYPE)),
        "{gpus}"
    );
    let personal_gpus = carol.ok(&["train", "gpus", "-o", "json"]).await.json();
    assert!(
        !personal_gpus["gpuTypes"]
            .as_array()
            .unwrap()
            .contains(&json!(RESERVED_GPU_TYPE))
    );

    let models = gamma.ok(&["train", "models", "-o", "json"]).await.json();
    let reserved_only = models["available_fft_models"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == "Qwen/Qwen3-4B-Base")
        .expect("the model cached only on the reserved cluster is listed for the team")
        .clone();
    assert_eq!(reserved_only["clusters"][0]["gpu_type"], RESERVED_GPU_TYPE);
    assert!(
        !models["on_demand"]
            .as_array()
            .unwrap()
            .iter()
            .any(|o| o["gpu_type"] == RESERVED_GPU_TYPE),
        "a reserved-only type has no on-demand offer"
    );
    assert_eq!(models["on_demand_beta_access"], true);
    let dave_models = dave.ok(&["train", "models", "-o", "json"]).await.json();
    assert_eq!(dave_models["on_demand_beta_access"], false);

    // ---- --ref --------------------------------------------------------------------------
    let out = gamma
        .ok(&[
            "train",
            "run",
            rl,
            "--ref",
            "feature/cli-ref",
            "--yes",
            "-o",
            "json",
        ])
        .await
        .json();
    assert_eq!(out["run"]["sourceRef"], "feature/cli-ref");
    let ref_run = out["run"]["runId"].as_str().unwrap().to_string();
    let held = sb.run(&ref_run).unwrap();
    assert_eq!(held["sourceRef"], "feature/cli-ref");
    assert_eq!(held["createBody"]["sourceRef"], "feature/cli-ref");
    assert_eq!(held["run"]["userId"], CAROL_USER_ID);
    let commit = held["sourceCommit"].as_str().unwrap().to_string();
    assert_eq!(commit.len(), 40);
    let got = gamma
        .ok(&["train", "get", &ref_run, "-o", "json"])
        .await
        .json();
    assert_eq!(got["run"]["source_commit"], commit.as_str());
    // The CLI sent the ref to prepare too, and went on after its 404.
    assert!(
        sb.request_log()
            .iter()
            .any(|r| r.path == "/api/v1/training/runs/prepare")
    );

    // A team without source-ref access: prepare answers 403 and the CLI stops before creating.
    let creates = sb.create_requests();
    let refused = beta
        .run(&[
            "train",
            "run",
            rl,
            "--ref",
            "feature/cli-ref",
            "--yes",
            "-o",
            "json",
        ])
        .await;
    assert_eq!(refused.code, 1, "{} {}", refused.stdout, refused.stderr);
    assert!(
        refused.stdout.contains("HTTP 403") && refused.stdout.contains("restricted"),
        "{}",
        refused.stdout
    );
    assert_eq!(sb.create_requests(), creates, "no create after the 403");

    // ---- reserved capacity and on-demand access -----------------------------------------
    // The example's model is not cached on the reserved cluster, and no volume holds it.
    let out = gamma
        .ok(&[
            "train",
            "run",
            rl,
            "--gpu-type",
            RESERVED_GPU_TYPE,
            "--yes",
            "-o",
            "json",
        ])
        .await
        .json();
    assert!(
        out["run"].get("onDemand").is_none(),
        "reserved capacity prints no on-demand fields: {out}"
    );
    let reserved_run = out["run"]["runId"].as_str().unwrap().to_string();
    assert_eq!(sb.run(&reserved_run).unwrap()["capacity"], "reserved");
    sb.advance(Duration::from_secs(60));
    let got = gamma
        .ok(&["train", "get", &reserved_run, "-o", "json"])
        .await
        .json();
    assert_eq!(got["run"]["status"], "FAILED");
    assert!(
        got["run"]["error_message"]
            .as_str()
            .unwrap()
            .contains("not cached"),
        "{got}"
    );
    assert_eq!(
        got["run"]["prime_cluster_id"],
        sb.run(&reserved_run).unwrap()["clusterId"]
    );

    let refused = dave.run(&["train", "run", rl, "--yes", "-o", "json"]).await;
    assert_eq!(refused.code, 1);
    assert!(
        refused.stdout.contains("onDemandBetaAccess"),
        "{}",
        refused.stdout
    );
    sb.shutdown().await;
}
