//! Behaviour of the simulated platform a client would notice: lifecycle on the manual clock,
//! ownership, pagination, scenarios, persistence, validation, traces.

mod common;

use common::{Client, advance, manual, rl_config, run_body};
use factory_sandbox::{
    ALICE_API_KEY, BOB_API_KEY, CAROL_API_KEY, DAVE_API_KEY, GAMMA_CLUSTER_ID,
    GAMMA_WEIGHTS_VOLUME, GATED_HUB_MODEL, HUB_MODEL, RESERVED_GPU_TYPE, Sandbox, SandboxOptions,
    Seed, SeedSource, TEAM_ALPHA_ID, TEAM_BETA_ID, TEAM_GAMMA_ID,
};
use reqwest::Method;
use serde_json::{Value, json};

#[tokio::test]
async fn a_run_moves_through_its_lifecycle_on_the_manual_clock() {
    let sb = manual().await;
    let c = Client::new(&sb, 0);
    let id = c.create(run_body("life", 5)).await;
    assert_eq!(c.status(&id).await, "QUEUED");
    let (s, v) = c
        .get(&format!("/api/v1/rft/runs/{id}/logs?tail_lines=10"))
        .await;
    assert_eq!(s, 404);
    assert!(
        v["detail"].as_str().unwrap().contains("not available yet"),
        "{v}"
    );
    advance(&sb, 2);
    assert_eq!(c.status(&id).await, "PENDING");
    advance(&sb, 3);
    assert_eq!(c.status(&id).await, "RUNNING");
    advance(&sb, 4);
    let (_, p) = c.get(&format!("/api/v1/rft/runs/{id}/progress")).await;
    assert_eq!(p["latestStep"], 2);
    assert_eq!(p["stepsWithSamples"], json!([1, 2]));
    assert!(p["lastUpdatedAt"].as_str().unwrap().ends_with('Z'));
    advance(&sb, 6);
    let (_, v) = c.get(&format!("/api/v1/rft/runs/{id}")).await;
    let run = &v["run"];
    assert_eq!(run["status"], "COMPLETED");
    assert_eq!(run["maxSteps"], 5);
    assert_eq!(run["kind"], "DEDICATED_FULL_FT");
    assert_eq!(run["baseModel"], "PrimeIntellect/Qwen3-0.6B");
    for k in [
        "id",
        "userId",
        "status",
        "createdAt",
        "updatedAt",
        "startedAt",
        "completedAt",
    ] {
        assert!(run[k].is_string(), "{k} missing in {run}");
    }
    let (_, m) = c.get(&format!("/api/v1/rft/runs/{id}/metrics")).await;
    assert_eq!(m["metrics"].as_array().unwrap().len(), 5);
    let (_, m) = c
        .get(&format!(
            "/api/v1/rft/runs/{id}/metrics?min_step=2&max_step=4&limit=2"
        ))
        .await;
    let steps: Vec<u64> = m["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["step"].as_u64().unwrap())
        .collect();
    assert_eq!(steps, vec![2, 3]);
    let (_, ck) = c.get(&format!("/api/v1/rft/runs/{id}/checkpoints")).await;
    let ck = ck["checkpoints"].as_array().unwrap();
    assert_eq!(
        ck.last().unwrap()["step"],
        5,
        "final checkpoint at max_steps"
    );
    assert!(
        ck.iter()
            .all(|c| c["status"] == "READY" && c["rftRunId"] == id.as_str())
    );
    // Once finished, nothing changes any more.
    advance(&sb, 1000);
    let (_, p2) = c.get(&format!("/api/v1/rft/runs/{id}/progress")).await;
    assert_eq!(p2["latestStep"], 5);
}

#[tokio::test]
async fn stop_and_pause_take_effect_at_once_and_resume_makes_a_new_run() {
    let sb = manual().await;
    let c = Client::new(&sb, 0);
    let a = c.create(run_body("stop-me", 50)).await;
    let b = c.create(run_body("pause-me", 50)).await;
    advance(&sb, 10);
    let (s, v) = c.put(&format!("/api/v1/rft/runs/{a}/stop")).await;
    assert_eq!(s, 200);
    assert_eq!(v["run"]["status"], "STOPPED");
    let (s, v) = c
        .post(&format!("/api/v1/training/runs/{b}/pause"), json!({}))
        .await;
    assert_eq!((s, v["status"].as_str()), (200, Some("PAUSED")));
    advance(&sb, 100);
    assert_eq!(c.status(&a).await, "STOPPED");
    let (_, p) = c.get(&format!("/api/v1/rft/runs/{a}/progress")).await;
    assert_eq!(p["latestStep"], 2, "steps froze at the stop");
    // Restart is RUNNING-only; delete is refused for active runs and works for finished ones.
    let (s, _) = c.put(&format!("/api/v1/rft/runs/{a}/restart")).await;
    assert_eq!(s, 409);
    let (s, v) = c
        .post(&format!("/api/v1/training/runs/{b}/resume"), json!({}))
        .await;
    assert_eq!(s, 201, "{v}");
    let resumed = v["runId"].as_str().unwrap().to_string();
    assert_ne!(resumed, b);
    let (s, _) = c
        .send(Method::DELETE, &format!("/api/v1/rft/runs/{resumed}"), None)
        .await;
    assert_eq!(s, 409, "an active run cannot be deleted");
    let (s, _) = c
        .send(Method::DELETE, &format!("/api/v1/rft/runs/{a}"), None)
        .await;
    assert_eq!(s, 200);
    let (s, _) = c.get(&format!("/api/v1/rft/runs/{a}")).await;
    assert_eq!(s, 404);
}

#[tokio::test]
async fn another_users_runs_are_invisible() {
    let sb = manual().await;
    let alice = Client::new(&sb, 0);
    let bob = Client::new(&sb, 1);
    let private = alice.create(run_body("alice-private", 5)).await;
    let alpha = alice
        .create(json!({"config": rl_config("alpha", 5), "teamId": TEAM_ALPHA_ID}))
        .await;
    let (_, list) = bob.get("/api/v1/rft/runs").await;
    assert_eq!(list["total"], 0);
    for id in [&private, &alpha] {
        let (s, v) = bob.get(&format!("/api/v1/rft/runs/{id}")).await;
        assert_eq!(s, 404);
        assert_eq!(v["detail"], format!("Run {id} not found"));
        let (s, _) = bob.put(&format!("/api/v1/rft/runs/{id}/stop")).await;
        assert_eq!(s, 404);
        let (s, _) = bob.get(&format!("/api/v1/rft/runs/{id}/logs")).await;
        assert_eq!(s, 404);
    }
    // Bob is not in team Alpha.
    let (s, _) = bob
        .get(&format!("/api/v1/rft/runs?team_id={TEAM_ALPHA_ID}"))
        .await;
    assert_eq!(s, 403);
    let (s, _) = bob
        .post(
            "/api/v1/training/runs",
            json!({"config": rl_config("x", 5), "teamId": TEAM_ALPHA_ID}),
        )
        .await;
    assert_eq!(s, 403);
    // A shared team's runs are visible to both members; `mine` narrows to one's own.
    let beta_bob = bob
        .create(json!({"config": rl_config("b", 5), "teamId": TEAM_BETA_ID}))
        .await;
    let (_, list) = alice
        .get(&format!("/api/v1/rft/runs?team_id={TEAM_BETA_ID}"))
        .await;
    assert_eq!(list["runs"][0]["id"], beta_bob.as_str());
    let (_, list) = alice
        .get(&format!(
            "/api/v1/rft/runs?team_id={TEAM_BETA_ID}&mine=true"
        ))
        .await;
    assert_eq!(list["total"], 0);
    // Personal list holds only the personal run; the team list only the team run.
    let (_, list) = alice.get("/api/v1/rft/runs").await;
    assert_eq!(list["total"], 1);
    assert_eq!(list["runs"][0]["id"], private.as_str());
    // The traces service hides them too.
    advance(&sb, 20);
    let (_, t) = bob.get(&format!("/api/v1/traces?run_id={private}")).await;
    assert_eq!(t["items"], json!([]));
}

#[tokio::test]
async fn lists_are_paginated_server_side_newest_first() {
    let sb = manual().await;
    let c = Client::new(&sb, 0);
    let mut ids = Vec::new();
    for i in 0..7 {
        ids.push(c.create(run_body(&format!("p{i}"), 5)).await);
        advance(&sb, 1);
    }
    let (_, p1) = c.get("/api/v1/rft/runs?page=1&limit=3").await;
    assert_eq!(
        (p1["total"].as_u64(), p1["total_pages"].as_u64()),
        (Some(7), Some(3))
    );
    assert_eq!(
        (p1["page"].as_u64(), p1["limit"].as_u64()),
        (Some(1), Some(3))
    );
    let got: Vec<&str> = p1["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    assert_eq!(got, vec![ids[6].as_str(), ids[5].as_str(), ids[4].as_str()]);
    let (_, p3) = c.get("/api/v1/rft/runs?page=3&limit=3").await;
    assert_eq!(p3["runs"].as_array().unwrap().len(), 1);
    assert_eq!(p3["runs"][0]["id"], ids[0].as_str());
    let (s, v) = c.get("/api/v1/rft/runs?page=0").await;
    assert_eq!(s, 422);
    assert!(v["detail"].is_array());
    let (_, teams) = c.get("/api/v1/user/teams?offset=1&limit=1").await;
    assert_eq!(teams["total_count"], 2);
    assert_eq!(teams["data"].as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn creating_twice_makes_two_runs_and_prepare_answers_404() {
    let sb = manual().await;
    let c = Client::new(&sb, 0);
    let (s, v) = c
        .post(
            "/api/v1/training/runs/prepare",
            json!({"mode": "rl", "teamId": null}),
        )
        .await;
    assert_eq!((s, v), (404, json!({"detail": "Not Found"})));
    let a = c.create(run_body("same", 5)).await;
    let b = c.create(run_body("same", 5)).await;
    assert_ne!(a, b);
    assert_eq!(sb.create_requests(), 2);
}

#[tokio::test]
async fn bad_keys_and_bad_bodies_get_errors_not_panics() {
    let sb = manual().await;
    let http = reqwest::Client::new();
    let url = format!("{}/api/v1/rft/runs", sb.base_url());
    let r = http.get(&url).bearer_auth("wrong").send().await.unwrap();
    assert_eq!(r.status(), 401);
    assert!(r.json::<Value>().await.unwrap()["detail"].is_string());
    let r = http.get(&url).send().await.unwrap();
    assert_eq!(r.status(), 401);
    let r = http
        .get(format!("{}/api/v1/traces", sb.base_url()))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
    assert!(r.json::<Value>().await.unwrap()["error"]["code"].is_string());
    let r = http
        .post(format!("{}/api/v1/training/runs", sb.base_url()))
        .bearer_auth(ALICE_API_KEY)
        .header("content-type", "application/json")
        .body("{not json")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 422);
    assert!(r.json::<Value>().await.unwrap()["detail"].is_array());
    let c = Client::new(&sb, 0);
    let (s, v) = c
        .post("/api/v1/training/runs", json!({"name": "no-config"}))
        .await;
    assert_eq!(s, 422);
    assert_eq!(v["detail"][0]["loc"], json!(["body", "config"]));
    let (s, v) = c
        .post(
            "/api/v1/training/runs",
            json!({"config": rl_config("g", 5), "gpuType": "TPU_v9"}),
        )
        .await;
    assert_eq!(s, 400);
    assert!(v["detail"].as_str().unwrap().contains("TPU_v9"));
    let (s, _) = c
        .post(
            "/api/v1/training/runs",
            json!({"config": rl_config("v", 5), "volume": "nope"}),
        )
        .await;
    assert_eq!(s, 404);
    let (s, _) = c.get("/api/v1/rft/runs/x/metrics?min_step=abc").await;
    assert_eq!(s, 422);
    assert_eq!(BOB_API_KEY, sb.api_key(1).unwrap());
}

#[tokio::test]
async fn scenario_triggers_fail_stall_and_queue() {
    let sb = manual().await;
    let c = Client::new(&sb, 0);
    let mut oom = rl_config("big", 10);
    oom["model"]["name"] = json!("meta-llama/Llama-3.1-70B-Instruct");
    let oom = c.create(json!({"config": oom})).await;
    let mut env = rl_config("env", 10);
    env["orchestrator"]["train"]["source"][0]["env"]["taskset"]["id"] =
        json!("sandbox/fail-unknown-env");
    let env = c.create(json!({"config": env})).await;
    let mut model = rl_config("m", 10);
    model["model"]["name"] = json!("nobody/NoSuchModel-1B");
    let model = c.create(json!({"config": model})).await;
    let stall = c.create(run_body("will-stall", 50)).await;
    let queued = c.create(run_body("stay-queued", 10)).await;
    let no_gpu = c
        .create(json!({"config": rl_config("b200", 10), "gpuType": "B200_180GB"}))
        .await;
    advance(&sb, 5);
    assert_eq!(
        c.status(&oom).await,
        "RUNNING",
        "failures happen after starting"
    );
    advance(&sb, 60);
    for (id, needle) in [
        (&oom, "OutOfMemoryError"),
        (&env, "fail-unknown-env"),
        (&model, "NoSuchModel"),
    ] {
        let (_, v) = c.get(&format!("/api/v1/rft/runs/{id}")).await;
        assert_eq!(v["run"]["status"], "FAILED");
        let fa = &v["run"]["failureAnalysis"];
        assert!(
            fa["rootCause"].is_string() && fa["evidence"].is_array() && fa["confidence"].is_f64(),
            "{fa}"
        );
        let (_, l) = c
            .get(&format!(
                "/api/v1/rft/runs/{id}/logs?level=ERROR&component=trainer"
            ))
            .await;
        let (_, lo) = c
            .get(&format!("/api/v1/rft/runs/{id}/logs?level=ERROR"))
            .await;
        let all = format!("{}{}{}", l["logs"], lo["logs"], v["run"]["errorMessage"]);
        assert!(all.contains(needle), "{all}");
    }
    let (_, l) = c
        .get(&format!(
            "/api/v1/rft/runs/{oom}/logs?component=trainer&search=CUDA%20out%20of%20memory"
        ))
        .await;
    assert!(
        l["logs"]
            .as_str()
            .unwrap()
            .contains("torch.OutOfMemoryError: CUDA out of memory")
    );
    let (_, p1) = c.get(&format!("/api/v1/rft/runs/{stall}/progress")).await;
    advance(&sb, 600);
    let (_, p2) = c.get(&format!("/api/v1/rft/runs/{stall}/progress")).await;
    assert_eq!(p1, p2, "a stalled run's progress and lastUpdatedAt freeze");
    assert_eq!(p2["latestStep"], 3);
    assert_eq!(c.status(&stall).await, "RUNNING");
    for id in [&queued, &no_gpu] {
        let (_, v) = c.get(&format!("/api/v1/rft/runs/{id}")).await;
        assert_eq!(v["run"]["status"], "QUEUED");
        assert!(v["run"]["queueReason"].is_string());
        assert!(v["run"]["runsAhead"].is_u64());
    }
}

#[tokio::test]
async fn the_world_survives_a_restart_with_a_state_file() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("world.json");
    let opts = || SandboxOptions {
        state_file: Some(state.clone()),
        ..SandboxOptions::manual_clock()
    };
    let sb = Sandbox::start(opts()).await.unwrap();
    let c = Client::new(&sb, 0);
    let id = c.create(run_body("persist", 5)).await;
    let (s, _) = c
        .post(
            "/api/v1/training/volumes",
            json!({"name": "keep-me", "size": "500Gi", "warm": true}),
        )
        .await;
    assert_eq!(s, 201);
    advance(&sb, 8);
    let (_, before) = c.get(&format!("/api/v1/rft/runs/{id}/progress")).await;
    c.put(&format!("/api/v1/rft/runs/{id}/stop")).await;
    sb.shutdown().await;

    let sb = Sandbox::start(opts()).await.unwrap();
    let c = Client::new(&sb, 0);
    let (s, v) = c.get(&format!("/api/v1/rft/runs/{id}")).await;
    assert_eq!(s, 200);
    assert_eq!(v["run"]["status"], "STOPPED");
    let (_, after) = c.get(&format!("/api/v1/rft/runs/{id}/progress")).await;
    assert_eq!(before, after);
    let (_, vols) = c.get("/api/v1/training/volumes").await;
    assert_eq!(vols["volumes"][0]["name"], "keep-me");
    assert_eq!(sb.create_requests(), 1);
}

#[tokio::test]
async fn a_seed_file_extends_the_defaults() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("seed.toml");
    std::fs::write(
        &path,
        r#"
[[users]]
id = "cusercarol00000000000003x"
name = "Carol"
email = "carol@sandbox.invalid"
slug = "carol"
api_key = "sandbox-key-carol"

[[gpus]]
gpu_type = "A100_80GB"
price_per_gpu_hour = 1.29
memory_gb = 80
available_now = true
"#,
    )
    .unwrap();
    let sb = Sandbox::start(SandboxOptions {
        seed: SeedSource::File(path),
        ..SandboxOptions::manual_clock()
    })
    .await
    .unwrap();
    let defaults = Seed::default();
    assert_eq!(sb.users().len(), defaults.users.len() + 1);
    let c = Client::new(&sb, defaults.users.len());
    let (_, g) = c.get("/api/v1/training/available-gpu-types").await;
    assert_eq!(
        g["gpuTypes"].as_array().unwrap().len(),
        defaults.gpus.len() + 1
    );
    let (_, w) = c.get("/api/v1/user/whoami").await;
    assert_eq!(w["data"]["name"], "Carol");
}

#[tokio::test]
async fn traces_follow_the_run_and_page_by_cursor() {
    let sb = manual().await;
    let c = Client::new(&sb, 0);
    let mut cfg = rl_config("traced", 6);
    cfg["orchestrator"]["eval"] = json!({"interval": 3});
    let id = c.create(json!({"config": cfg})).await;
    advance(&sb, 5 + 12);
    let (s, page1) = c.get(&format!("/api/v1/traces?run_id={id}&limit=10")).await;
    assert_eq!(s, 200);
    assert_eq!(page1["items"].as_array().unwrap().len(), 10);
    let cursor = page1["next_cursor"].as_str().unwrap().to_string();
    let (_, page3) = c
        .get(&format!(
            "/api/v1/traces?run_id={id}&limit=10&cursor={cursor}"
        ))
        .await;
    let mut n = 10 + page3["items"].as_array().unwrap().len();
    let mut next = page3["next_cursor"].as_str().map(str::to_string);
    while let Some(cur) = next {
        let (_, p) = c
            .get(&format!("/api/v1/traces?run_id={id}&limit=10&cursor={cur}"))
            .await;
        n += p["items"].as_array().unwrap().len();
        next = p["next_cursor"].as_str().map(str::to_string);
    }
    assert_eq!(n, 6 * 4, "four train traces per step");
    let first = &page1["items"][0];
    assert_eq!(first["context"]["step"], "6", "newest first");
    let (s, _) = c.get("/api/v1/traces?limit=101").await;
    assert_eq!(s, 400);
    let (s, v) = c.get("/api/v1/traces?cursor=garbage").await;
    assert_eq!(
        (s, v["error"]["code"].as_str()),
        (400, Some("invalid_cursor"))
    );
    let tid = first["trace_id"].as_str().unwrap();
    let (_, t) = c.get(&format!("/api/v1/traces/{tid}")).await;
    assert_eq!(&t, first);
    let raw = c
        .http
        .get(format!("{}/api/v1/traces/{tid}?raw=true", c.base))
        .bearer_auth(&c.key)
        .send()
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    assert_eq!(raw.len() as u64, t["size_bytes"].as_u64().unwrap());
    let doc: Value = serde_json::from_slice(&raw).unwrap();
    assert_eq!(doc["trace_id"], tid);
    let (_, runs) = c.get("/api/v1/runs?run_type=eval").await;
    assert_eq!(runs["items"][0]["run_id"], format!("{id}-eval"));
    assert_eq!(runs["items"][0]["context"]["run_type"], "eval");
    let (_, r) = c.get(&format!("/api/v1/runs/{id}")).await;
    assert_eq!(
        (r["step_count"].as_u64(), r["trace_count"].as_u64()),
        (Some(6), Some(24))
    );
    let (_, steps) = c.get(&format!("/api/v1/runs/{id}/steps")).await;
    assert_eq!(steps["items"].as_array().unwrap().len(), 6);
    let (_, eps) = c
        .get(&format!("/api/v1/episodes?run_id={id}&run_step=2"))
        .await;
    let eps = eps["items"].as_array().unwrap();
    assert_eq!(eps.len(), 2);
    let eid = eps[0]["episode_id"].as_str().unwrap();
    let (_, e) = c.get(&format!("/api/v1/episodes/{eid}")).await;
    assert_eq!(e["traces"]["trace_count"], 2);
    let (_, et) = c.get(&format!("/api/v1/episodes/{eid}/traces")).await;
    assert_eq!(et["items"].as_array().unwrap().len(), 2);
    let (s, v) = c.get("/api/v1/traces/nope").await;
    assert_eq!(
        (s, v["error"]["code"].as_str()),
        (404, Some("trace_not_found"))
    );
    let (s, v) = c.get("/api/v1/runs/nope").await;
    assert_eq!(
        (s, v["error"]["code"].as_str()),
        (404, Some("run_not_found"))
    );
}

#[tokio::test]
async fn a_seeded_large_trace_run_streams_its_bytes_without_storing_them() {
    let total: u64 = 64 * 1024 * 1024 + 7;
    let mut seed = factory_sandbox::Seed::default();
    seed.runs.push(factory_sandbox::SeedRun {
        id: Some("cbigtraces000000000000001".into()),
        user_id: factory_sandbox::ALICE_USER_ID.into(),
        team_id: None,
        name: Some("big-traces".into()),
        config: rl_config("big-traces", 2),
        sft: false,
        gpu_type: None,
        volume: None,
        age_s: 3600.0,
        trace_bytes_total: Some(total),
    });
    let sb = Sandbox::start(SandboxOptions {
        seed: SeedSource::Value(Box::new(seed)),
        ..SandboxOptions::manual_clock()
    })
    .await
    .unwrap();
    let c = Client::new(&sb, 0);
    let (_, list) = c
        .get("/api/v1/traces?run_id=cbigtraces000000000000001&limit=100")
        .await;
    let items = list["items"].as_array().unwrap();
    assert_eq!(items.len(), 8);
    let sum: u64 = items
        .iter()
        .map(|t| t["size_bytes"].as_u64().unwrap())
        .sum();
    assert_eq!(sum, total);
    let tid = items[0]["trace_id"].as_str().unwrap();
    let mut resp = c
        .http
        .get(format!("{}/api/v1/traces/{tid}?raw=true", c.base))
        .bearer_auth(&c.key)
        .send()
        .await
        .unwrap();
    let mut got = 0u64;
    let mut tail = Vec::new();
    while let Some(chunk) = resp.chunk().await.unwrap() {
        got += chunk.len() as u64;
        tail = chunk.to_vec();
    }
    assert_eq!(got, items[0]["size_bytes"].as_u64().unwrap());
    assert!(tail.ends_with(b"\"}"));
}

#[tokio::test]
async fn inspection_never_shows_secret_values_or_the_token() {
    let sb = Sandbox::start(SandboxOptions {
        token_value: Some("SENTINEL-TOKEN-VALUE".into()),
        ..SandboxOptions::manual_clock()
    })
    .await
    .unwrap();
    let c = Client::new(&sb, 0);
    let (s, v) = c
        .post(
            "/api/v1/training/runs",
            json!({"config": rl_config("secret", 5), "wandbApiKey": "WANDB-SECRET-VALUE", "hfToken": "HF-SECRET-VALUE"}),
        )
        .await;
    assert_eq!(s, 201);
    assert_eq!(v["tokenValue"], "SENTINEL-TOKEN-VALUE");
    let id = v["runId"].as_str().unwrap();
    let (_, all) = c.get("/_sandbox/runs").await;
    let (_, run) = c.get(&format!("/api/v1/rft/runs/{id}")).await;
    for text in [
        all.to_string(),
        run.to_string(),
        format!("{:?}", sb.request_log()),
    ] {
        for secret in [
            "WANDB-SECRET-VALUE",
            "HF-SECRET-VALUE",
            "SENTINEL-TOKEN-VALUE",
        ] {
            assert!(!text.contains(secret), "{secret} leaked");
        }
    }
    assert_eq!(
        all["runs"][0]["secretsProvided"],
        json!(["wandbApiKey", "hfToken"])
    );
    let (_, clock) = c
        .post("/_sandbox/clock/advance", json!({"seconds": 8}))
        .await;
    assert_eq!(clock["mode"], "manual");
    assert_eq!(c.status(id).await, "RUNNING");
}

#[tokio::test]
async fn the_speed_factor_moves_runs_without_manual_advances() {
    let sb = Sandbox::start(SandboxOptions::with_speed(1000.0))
        .await
        .unwrap();
    let c = Client::new(&sb, 0);
    let id = c.create(run_body("fast", 3)).await;
    assert!(id.len() == 25 && id.starts_with('c'), "CUID-shaped: {id}");
    tokio::time::sleep(std::time::Duration::from_millis(60)).await;
    assert_eq!(
        c.status(&id).await,
        "COMPLETED",
        "11 simulated seconds have passed"
    );
}

// ---- accounts beyond on-demand capacity (issue 18 §1) ----------------------------------------

/// Carol (index 2) acts for Team Gamma: a reserved A100 cluster and source-ref access.
const CAROL: usize = 2;
/// Dave (index 3): personal account without on-demand beta access.
const DAVE: usize = 3;

fn gamma_body(name: &str, max_steps: u32) -> Value {
    json!({"config": rl_config(name, max_steps), "name": name, "teamId": TEAM_GAMMA_ID})
}

async fn finish(sb: &factory_sandbox::SandboxHandle) {
    advance(sb, 120);
}

async fn run_of(c: &Client, id: &str) -> Value {
    let (s, v) = c.get(&format!("/api/v1/rft/runs/{id}")).await;
    assert_eq!(s, 200, "{v}");
    v["run"].clone()
}

async fn logs_of(c: &Client, id: &str, query: &str) -> String {
    let (s, v) = c
        .get(&format!(
            "/api/v1/rft/runs/{id}/logs?tail_lines=5000{query}"
        ))
        .await;
    assert_eq!(s, 200, "{v}");
    v["logs"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn the_new_accounts_leave_what_the_old_keys_see_unchanged() {
    let sb = manual().await;
    assert_eq!(sb.api_key(0).unwrap(), ALICE_API_KEY);
    assert_eq!(sb.api_key(1).unwrap(), BOB_API_KEY);
    assert_eq!(sb.api_key(CAROL).unwrap(), CAROL_API_KEY);
    assert_eq!(sb.api_key(DAVE).unwrap(), DAVE_API_KEY);
    let alice = Client::new(&sb, 0);
    let (_, teams) = alice.get("/api/v1/user/teams").await;
    assert_eq!(teams["total_count"], 2);
    for q in ["", "?team_id=cteamalpha000000000000001"] {
        let (_, g) = alice
            .get(&format!("/api/v1/training/available-gpu-types{q}"))
            .await;
        assert_eq!(
            g,
            json!({"gpuTypes": ["H100_80GB", "H200_141GB", "B200_180GB"]})
        );
        let (_, m) = alice
            .get(&format!("/api/v1/training/available-fft-models{q}"))
            .await;
        assert_eq!(m["models"].as_array().unwrap().len(), 5, "{m}");
        assert_eq!(m["onDemandBetaAccess"], true);
        assert!(!m.to_string().contains(RESERVED_GPU_TYPE));
    }
    let (_, v) = alice.get("/api/v1/training/volumes").await;
    assert_eq!(v["volumes"], json!([]));
}

#[tokio::test]
async fn a_team_with_a_reserved_cluster_sees_its_gpu_type_and_cached_models() {
    let sb = manual().await;
    let carol = Client::new(&sb, CAROL);
    let (_, g) = carol
        .get(&format!(
            "/api/v1/training/available-gpu-types?team_id={TEAM_GAMMA_ID}"
        ))
        .await;
    let types = g["gpuTypes"].as_array().unwrap();
    assert!(types.contains(&json!(RESERVED_GPU_TYPE)), "{g}");
    // Outside the team (her personal account) the reserved type is not hers.
    let (_, g) = carol.get("/api/v1/training/available-gpu-types").await;
    assert!(
        !g["gpuTypes"]
            .as_array()
            .unwrap()
            .contains(&json!(RESERVED_GPU_TYPE))
    );

    let (_, m) = carol
        .get(&format!(
            "/api/v1/training/available-fft-models?team_id={TEAM_GAMMA_ID}"
        ))
        .await;
    // The reserved GPU type has no on-demand offer.
    assert!(
        !m["onDemand"]
            .as_array()
            .unwrap()
            .iter()
            .any(|o| o["gpuType"] == RESERVED_GPU_TYPE)
    );
    let model = |name: &str| {
        m["models"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["name"] == name)
            .cloned()
            .unwrap_or(Value::Null)
    };
    let small = model("PrimeIntellect/Qwen3-0.6B");
    assert!(
        small["clusters"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["clusterId"] == GAMMA_CLUSTER_ID && c["gpuType"] == RESERVED_GPU_TYPE),
        "{small}"
    );
    let reserved_only = model("Qwen/Qwen3-4B-Base");
    assert_eq!(
        reserved_only["clusters"],
        json!([{"clusterId": GAMMA_CLUSTER_ID, "clusterName": "gamma-a100-reserved", "gpuType": RESERVED_GPU_TYPE}])
    );
    // Another team's member does not see the reserved cluster, and a non-member gets 403.
    let alice = Client::new(&sb, 0);
    let (s, _) = alice
        .get(&format!(
            "/api/v1/training/available-fft-models?team_id={TEAM_GAMMA_ID}"
        ))
        .await;
    assert_eq!(s, 403);
}

#[tokio::test]
async fn a_reserved_only_gpu_type_launches_on_the_team_cluster() {
    let sb = manual().await;
    let carol = Client::new(&sb, CAROL);
    let mut body = gamma_body("on-reserved", 3);
    body["gpuType"] = json!(RESERVED_GPU_TYPE);
    let (s, v) = carol.post("/api/v1/training/runs", body).await;
    assert_eq!(s, 201, "{v}");
    // Reserved capacity: no on-demand fields.
    assert_eq!(v["onDemand"], false);
    assert_eq!(v["gpuType"], Value::Null);
    assert_eq!(v["pricePerGpuHour"], Value::Null);
    let id = v["runId"].as_str().unwrap().to_string();
    // Without a gpuType, a model cached on the reserved cluster also goes there.
    let plain = carol.create(gamma_body("plain", 3)).await;
    finish(&sb).await;
    for id in [&id, &plain] {
        let run = run_of(&carol, id).await;
        assert_eq!(run["status"], "COMPLETED", "{run}");
        assert_eq!(run["primeClusterId"], GAMMA_CLUSTER_ID);
        let inspected = sb.run(id).unwrap();
        assert_eq!(inspected["capacity"], "reserved");
        assert_eq!(inspected["gpuType"], RESERVED_GPU_TYPE);
    }
    let (_, u) = carol.get(&format!("/api/v1/billing/runs/{id}/usage")).await;
    assert_eq!(u["pricing"]["gpu_per_hour"], Value::Null, "{u}");

    // The same type outside the team, or for another account, is unknown (400, listed types).
    let mut personal = json!({"config": rl_config("personal", 3)});
    personal["gpuType"] = json!(RESERVED_GPU_TYPE);
    let (s, v) = carol.post("/api/v1/training/runs", personal.clone()).await;
    assert_eq!(s, 400, "{v}");
    let alice = Client::new(&sb, 0);
    let (s, v) = alice.post("/api/v1/training/runs", personal).await;
    assert_eq!(s, 400);
    assert_eq!(
        v["detail"],
        "Unknown gpuType 'A100_80GB'. Available GPU types: H100_80GB, H200_141GB, B200_180GB"
    );
}

#[tokio::test]
async fn an_account_without_on_demand_beta_access_cannot_launch_on_demand() {
    let sb = manual().await;
    let dave = Client::new(&sb, DAVE);
    let (_, m) = dave.get("/api/v1/training/available-fft-models").await;
    assert_eq!(m["onDemandBetaAccess"], false);
    let before = sb.create_requests();
    let (s, v) = dave
        .post("/api/v1/training/runs", run_body("dave", 3))
        .await;
    assert_eq!(s, 403, "{v}");
    assert!(
        v["detail"].as_str().unwrap().contains("onDemandBetaAccess"),
        "{v}"
    );
    assert_eq!(sb.create_requests(), before + 1);
    assert!(sb.runs().is_empty(), "no run was made");
}

#[tokio::test]
async fn an_uncached_model_downloads_on_demand_and_a_gated_one_needs_hf_token() {
    let sb = manual().await;
    let alice = Client::new(&sb, 0);
    let with_model = |name: &str, model: &str| {
        let mut cfg = rl_config(name, 3);
        cfg["model"]["name"] = json!(model);
        json!({"config": cfg, "name": name})
    };
    let hub = alice.create(with_model("hub", HUB_MODEL)).await;
    let gated = alice.create(with_model("gated", GATED_HUB_MODEL)).await;
    let mut with_token = with_model("gated-token", GATED_HUB_MODEL);
    with_token["hfToken"] = json!("hf_sandboxtoken");
    let gated_ok = alice.create(with_token).await;
    finish(&sb).await;

    assert_eq!(run_of(&alice, &hub).await["status"], "COMPLETED");
    let trainer = logs_of(&alice, &hub, "&component=trainer").await;
    assert!(
        trainer.contains("downloading weights from the Hugging Face Hub"),
        "{trainer}"
    );
    assert_eq!(sb.run(&hub).unwrap()["weights"]["from"], "hub");

    let run = run_of(&alice, &gated).await;
    assert_eq!(run["status"], "FAILED");
    assert!(
        run["errorMessage"].as_str().unwrap().contains("HF_TOKEN"),
        "{run}"
    );
    let errors = logs_of(&alice, &gated, "&component=trainer&level=ERROR").await;
    assert!(errors.contains("GatedRepoError"), "{errors}");
    assert!(errors.contains("HF_TOKEN"), "{errors}");

    assert_eq!(run_of(&alice, &gated_ok).await["status"], "COMPLETED");
}

#[tokio::test]
async fn a_reserved_run_of_an_uncached_model_needs_its_weights_on_a_volume() {
    let sb = manual().await;
    let carol = Client::new(&sb, CAROL);
    let body = |name: &str, volume: Option<&str>| {
        let mut b = gamma_body(name, 3);
        b["config"]["model"]["name"] = json!(HUB_MODEL);
        b["gpuType"] = json!(RESERVED_GPU_TYPE);
        if let Some(v) = volume {
            b["volume"] = json!(v);
        }
        b
    };
    let bare = carol.create(body("bare", None)).await;
    let from_volume = carol
        .create(body("from-volume", Some(GAMMA_WEIGHTS_VOLUME)))
        .await;
    finish(&sb).await;

    let run = run_of(&carol, &bare).await;
    assert_eq!(run["status"], "FAILED", "{run}");
    let msg = run["errorMessage"].as_str().unwrap();
    assert!(
        msg.contains("not cached") && msg.contains("volume"),
        "{msg}"
    );
    let errors = logs_of(&carol, &bare, "&level=ERROR").await;
    assert!(
        errors.contains("reserved clusters do not download"),
        "{errors}"
    );

    assert_eq!(run_of(&carol, &from_volume).await["status"], "COMPLETED");
    let trainer = logs_of(&carol, &from_volume, "&component=trainer").await;
    assert!(
        trainer.contains(&format!("from volume '{GAMMA_WEIGHTS_VOLUME}'")),
        "{trainer}"
    );
}

#[tokio::test]
async fn source_refs_are_for_allowlisted_teams_and_runs_pin_the_commit() {
    let sb = manual().await;
    let alice = Client::new(&sb, 0);
    let carol = Client::new(&sb, CAROL);
    // Not allowlisted: a team run of Team Beta, and any personal run — prepare and create 403.
    for team in [json!(TEAM_BETA_ID), Value::Null] {
        let (s, v) = alice
            .post(
                "/api/v1/training/runs/prepare",
                json!({"mode": "rl", "teamId": team, "sourceRef": "feature/x"}),
            )
            .await;
        assert_eq!(s, 403, "{v}");
        assert!(v["detail"].as_str().unwrap().contains("restricted"), "{v}");
        let mut body = run_body("ref", 3);
        body["sourceRef"] = json!("feature/x");
        if !team.is_null() {
            body["teamId"] = team.clone();
        }
        let (s, v) = alice.post("/api/v1/training/runs", body).await;
        assert_eq!(s, 403, "{v}");
    }
    assert!(sb.runs().is_empty());
    // Without a ref, prepare stays 404 for everyone.
    let (s, _) = alice
        .post(
            "/api/v1/training/runs/prepare",
            json!({"mode": "rl", "teamId": TEAM_BETA_ID}),
        )
        .await;
    assert_eq!(s, 404);
    // Team Alpha is allowlisted too (it launched refs before the allowlist existed).
    let (s, _) = alice
        .post(
            "/api/v1/training/runs/prepare",
            json!({"mode": "rl", "teamId": TEAM_ALPHA_ID, "sourceRef": "feature/x"}),
        )
        .await;
    assert_eq!(s, 404);

    // Allowlisted: prepare 404 (no local validation), create records the ref and the commit.
    let (s, _) = carol
        .post(
            "/api/v1/training/runs/prepare",
            json!({"mode": "rl", "teamId": TEAM_GAMMA_ID, "sourceRef": "feature/x"}),
        )
        .await;
    assert_eq!(s, 404);
    let mut body = gamma_body("branch", 3);
    body["sourceRef"] = json!("feature/x");
    let branch = carol.create(body).await;
    let sha = "0123456789abcdef0123456789abcdef01234567";
    let mut body = gamma_body("sha", 3);
    body["sourceRef"] = json!(sha);
    let pinned = carol.create(body).await;
    let commit = run_of(&carol, &branch).await["sourceCommit"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(commit.len(), 40);
    assert!(commit.bytes().all(|b| b.is_ascii_hexdigit()));
    assert_eq!(sb.run(&branch).unwrap()["sourceRef"], "feature/x");
    assert_eq!(sb.run(&branch).unwrap()["sourceCommit"], commit.as_str());
    assert_eq!(run_of(&carol, &pinned).await["sourceCommit"], sha);
    finish(&sb).await;
    assert_eq!(run_of(&carol, &branch).await["status"], "COMPLETED");
    let trainer = logs_of(&carol, &branch, "&component=trainer").await;
    assert!(
        trainer.contains(&format!("feature/x (commit {commit})")),
        "{trainer}"
    );
}

#[tokio::test]
async fn an_import_error_at_a_broken_ref_is_fixed_by_a_new_ref() {
    let sb = manual().await;
    let carol = Client::new(&sb, CAROL);
    let with_ref = |name: &str, r: &str| {
        let mut b = gamma_body(name, 3);
        b["sourceRef"] = json!(r);
        b
    };
    let broken = carol.create(with_ref("try-1", "fix/broken-loss")).await;
    let fixed = carol.create(with_ref("try-2", "fix/loss-import")).await;
    finish(&sb).await;
    let run = run_of(&carol, &broken).await;
    assert_eq!(run["status"], "FAILED", "{run}");
    assert!(
        run["errorMessage"]
            .as_str()
            .unwrap()
            .starts_with("ImportError"),
        "{run}"
    );
    assert_eq!(run["failureAnalysis"]["category"], "CODE_ISSUE");
    assert!(
        run["failureAnalysis"]["rootCause"]
            .as_str()
            .unwrap()
            .contains("new ref")
    );
    // The primary component (orchestrator) shows it, as the trainer's traceback does.
    let orch = logs_of(&carol, &broken, "&level=ERROR").await;
    assert!(orch.contains("ImportError"), "{orch}");
    let trainer = logs_of(&carol, &broken, "&component=trainer&level=ERROR").await;
    assert!(trainer.contains("Traceback") && trainer.contains("ImportError"));
    assert_eq!(run_of(&carol, &fixed).await["status"], "COMPLETED");
}

#[tokio::test]
async fn the_dashboard_link_is_the_sandbox_s_own_page() {
    let sb = manual().await;
    let alice = Client::new(&sb, 0);
    let id = alice.create(run_body("dash", 3)).await;
    let front = sb.frontend_url();
    assert!(!front.contains("primeintellect"), "{front}");
    let r = reqwest::get(format!("{front}/dashboard/training/{id}"))
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    assert!(
        r.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/html")
    );
    let page = r.text().await.unwrap();
    assert!(page.contains("not the Prime Intellect dashboard"), "{page}");
    assert!(page.contains(&id) && page.contains("QUEUED"), "{page}");
    let r = reqwest::get(format!("{front}/dashboard/training/%3Cscript%3E"))
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 404);
    let page = r.text().await.unwrap();
    assert!(page.contains("&lt;script&gt;") && !page.contains("<script>"));
}

// ---- logs windows (issue 19) ------------------------------------------------------------------

#[tokio::test]
async fn a_logs_answer_is_a_time_suffix_within_the_cli_ranges_and_the_whole_log_is_inspectable() {
    let sb = manual().await;
    let c = Client::new(&sb, 0);
    let id = c.create(run_body("windows", 400)).await;
    advance(&sb, 5 + 2 * 300);
    let whole = sb.full_log(&id, Some("trainer"), None);
    assert!(whole.len() > 600, "{}", whole.len());
    // The newest `tail_lines` of the lines at most `since_seconds` old: a suffix of the log.
    let tail = logs_of(&c, &id, "&component=trainer&since_seconds=60").await;
    let tail: Vec<&str> = tail.lines().collect();
    assert!(!tail.is_empty() && tail.len() < whole.len());
    assert_eq!(tail, whole[whole.len() - tail.len()..]);
    let (s, v) = c
        .get(&format!(
            "/api/v1/rft/runs/{id}/logs?tail_lines=7&since_seconds=86400&component=trainer"
        ))
        .await;
    assert_eq!(s, 200);
    assert_eq!(
        v["logs"].as_str().unwrap().lines().collect::<Vec<_>>(),
        whole[whole.len() - 7..]
    );
    // Outside the ranges the CLI sends: a validation error, like tail_lines'.
    for bad in [
        "tail_lines=10&since_seconds=59",
        "tail_lines=10&since_seconds=86401",
        "tail_lines=5001",
    ] {
        let (s, v) = c.get(&format!("/api/v1/rft/runs/{id}/logs?{bad}")).await;
        assert_eq!(s, 422, "{bad}: {v}");
    }
    // The control route serves the same whole log.
    let (s, v) = c
        .get(&format!("/_sandbox/runs/{id}/logs?component=trainer"))
        .await;
    assert_eq!(s, 200);
    assert_eq!(v["lines"].as_array().unwrap().len(), whole.len());
}
