//! Real accounts (issue 18 §2): launch rules that match the platform, end to end through MCP
//! against the sandbox's extended accounts — a team's reserved-only GPU type, uncached models
//! on on-demand and on reserved capacity, a source ref the team may not use, a fix on a new
//! ref after an import error, and a secret the server holds no value for.

mod common;

use common::{Client, Era, World, call, err, ok, plan_mode_args};
use factory_sandbox::{
    CAROL_API_KEY, GAMMA_CLUSTER_ID, GAMMA_WEIGHTS_VOLUME, HUB_MODEL, RESERVED_GPU_TYPE,
    TEAM_ALPHA_ID, TEAM_BETA_ID, TEAM_GAMMA_ID,
};
use serde_json::{Value, json};

/// Carol (Team Gamma, reserved A100 cluster) by index in the seeded users.
const CAROL: usize = 2;

/// A small RL config of `model` (1 trainer + 1 inference GPU).
fn config(name: &str, model: &str) -> String {
    common::rl_config(name, 5).replace(
        "name = \"PrimeIntellect/Qwen3-0.6B-Reverse-Text-SFT\"",
        &format!("name = \"{model}\""),
    )
}

/// A server in plan mode (both caps) whose policy file prices reserved capacity, or not.
async fn server(w: &World, user: usize, reserved_price: Option<f64>) -> Client {
    let mut args: Vec<String> = plan_mode_args().iter().map(|s| s.to_string()).collect();
    if let Some(p) = reserved_price {
        let path = w.home.path().join(format!("policy-{user}.toml"));
        std::fs::write(&path, format!("reserved_price_per_gpu_hour_usd = {p}\n")).unwrap();
        args.push("--config".into());
        args.push(path.display().to_string());
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    w.client(user, &args, Era::Modern).await
}

fn check<'a>(plan: &'a Value, name: &str) -> Vec<&'a Value> {
    plan["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["check"].as_str().is_some_and(|c| c.contains(name)))
        .collect()
}

fn run_of(w: &World, launched: &Value) -> Value {
    w.sandbox
        .run(launched["run_id"].as_str().unwrap())
        .expect("the run exists on the platform")
}

#[tokio::test]
async fn a_reserved_only_gpu_type_plans_and_launches() {
    let w = World::new().await;
    assert_eq!(w.key(CAROL), CAROL_API_KEY);
    let cfg = config("gamma-run", "PrimeIntellect/Qwen3-0.6B");
    let args = json!({"config_toml": cfg, "team_id": TEAM_GAMMA_ID, "gpu_type": RESERVED_GPU_TYPE});

    // Unpriced reserved capacity: the caps of plan mode cannot be checked, so it is refused.
    let c = server(&w, CAROL, None).await;
    let msg = err(&call(&c, "plan_run", args.clone()).await);
    assert!(
        msg.contains("reserved_price_per_gpu_hour_usd") && msg.contains("cannot be checked"),
        "{msg}"
    );
    c.cancel().await.unwrap();

    // A person sees it as reserved, not counted in budgets.
    let c = w.client(CAROL, &[], Era::Modern).await;
    let p = ok(&call(&c, "plan_run", args.clone()).await);
    assert!(p["price_per_hour_usd"].is_null(), "{p}");
    assert!(
        p["summary"]
            .as_str()
            .unwrap()
            .contains("Price:     reserved — not counted in budgets"),
        "{}",
        p["summary"]
    );
    c.cancel().await.unwrap();

    // validate_config judges it as plan_run does: the reserved-only type is no error.
    let c = server(&w, CAROL, Some(1.5)).await;
    let v = ok(&call(
        &c,
        "validate_config",
        json!({"config_toml": config("gamma-run", "PrimeIntellect/Qwen3-0.6B"), "team_id": TEAM_GAMMA_ID}),
    )
    .await);
    assert_eq!(v["valid"], true, "{v}");

    // Priced by the policy, it plans and launches on the reserved cluster.
    let p = ok(&call(&c, "plan_run", args).await);
    assert_eq!(p["gpu_type"], RESERVED_GPU_TYPE);
    assert_eq!(p["price_per_hour_usd"], 3.0, "{p}");
    assert!(p["blocked"].is_null());
    let launched = ok(&call(&c, "launch_run", json!({"plan_id": p["plan_id"]})).await);
    assert_eq!(launched["on_demand"], false, "{launched}");
    let run = run_of(&w, &launched);
    assert_eq!(run["run"]["primeClusterId"], GAMMA_CLUSTER_ID);
    assert_eq!(run["run"]["teamId"], TEAM_GAMMA_ID);
    c.cancel().await.unwrap();
}

#[tokio::test]
async fn an_uncached_model_warns_on_demand_and_is_refused_on_reserved_capacity() {
    let w = World::new().await;
    // On demand: a warning, and the run downloads its weights and trains.
    let c = server(&w, 0, None).await;
    let p = ok(&call(
        &c,
        "plan_run",
        json!({"config_toml": config("hub-run", HUB_MODEL), "team_id": TEAM_ALPHA_ID, "gpu_type": "H100_80GB"}),
    )
    .await);
    let warning = check(&p, "model.name");
    // validate_config says the same: a warning, not an error.
    let v = ok(&call(
        &c,
        "validate_config",
        json!({"config_toml": config("hub-run", HUB_MODEL), "team_id": TEAM_ALPHA_ID}),
    )
    .await);
    assert_eq!(v["valid"], true, "{v}");
    assert!(
        v["findings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["path"] == "model.name" && f["severity"] == "warning"),
        "{v}"
    );
    assert!(
        warning.iter().any(|c| c["status"] == "warning"
            && c["detail"]
                .as_str()
                .unwrap()
                .contains("weights download at start; gated repos need HF_TOKEN")),
        "{p}"
    );
    assert!(
        p["summary"]
            .as_str()
            .unwrap()
            .contains("weights download at start"),
        "the person sees it too: {}",
        p["summary"]
    );
    let launched = ok(&call(&c, "launch_run", json!({"plan_id": p["plan_id"]})).await);
    w.advance(60);
    assert_eq!(run_of(&w, &launched)["run"]["status"], "COMPLETED");
    c.cancel().await.unwrap();

    // Reserved capacity never downloads: without weights on a volume it is refused.
    let c = server(&w, CAROL, Some(1.5)).await;
    let base = json!({"config_toml": config("gamma-hub", HUB_MODEL), "team_id": TEAM_GAMMA_ID, "gpu_type": RESERVED_GPU_TYPE});
    let msg = err(&call(&c, "plan_run", base.clone()).await);
    assert!(
        msg.contains("model.name")
            && msg.contains("never downloads weights")
            && msg.contains("volume"),
        "{msg}"
    );
    // With the volume holding its weights: planned with the caveat, and it trains.
    let mut with_volume = base;
    with_volume["volume"] = json!(GAMMA_WEIGHTS_VOLUME);
    let p = ok(&call(&c, "plan_run", with_volume).await);
    assert!(
        check(&p, "model.name")
            .iter()
            .any(|c| c["detail"].as_str().unwrap().contains(GAMMA_WEIGHTS_VOLUME)),
        "{p}"
    );
    let launched = ok(&call(&c, "launch_run", json!({"plan_id": p["plan_id"]})).await);
    w.advance(60);
    assert_eq!(run_of(&w, &launched)["run"]["status"], "COMPLETED");
    c.cancel().await.unwrap();
}

#[tokio::test]
async fn a_source_ref_the_team_may_not_use_is_refused_at_plan_time() {
    let w = World::new().await;
    let c = server(&w, 0, None).await;
    let msg = err(&call(
        &c,
        "plan_run",
        json!({"config_toml": config("beta-ref", "PrimeIntellect/Qwen3-0.6B-Reverse-Text-SFT"), "team_id": TEAM_BETA_ID, "source_ref": "feature/x"}),
    )
    .await);
    assert!(
        msg.contains("refused to prepare") && msg.contains("403") && msg.contains("source_ref"),
        "{msg}"
    );
    let prepares = w
        .sandbox
        .request_log()
        .into_iter()
        .filter(|r| r.method == "POST" && r.path == "/api/v1/training/runs/prepare")
        .count();
    assert_eq!(prepares, 1, "plan_run asked prepare once");
    assert_eq!(w.sandbox.create_requests(), 0);
    // An allowlisted team plans; the platform has no prepare for it (404), which is fine.
    let p = ok(&call(
        &c,
        "plan_run",
        json!({"config_toml": config("alpha-ref", "PrimeIntellect/Qwen3-0.6B-Reverse-Text-SFT"), "team_id": TEAM_ALPHA_ID, "source_ref": "feature/x"}),
    )
    .await);
    let prepare = check(&p, "prepare");
    assert!(
        prepare[0]["status"] == "ok"
            && prepare[0]["detail"]
                .as_str()
                .unwrap()
                .contains("no prepare (404)"),
        "{p}"
    );
    c.cancel().await.unwrap();
}

#[tokio::test]
async fn after_an_import_error_a_new_ref_plans_and_the_old_ref_stays_blocked() {
    let w = World::new().await;
    let c = server(&w, 0, None).await;
    let cfg = config("ref-run", "PrimeIntellect/Qwen3-0.6B-Reverse-Text-SFT");
    let on = |r: &str| json!({"config_toml": cfg, "team_id": TEAM_ALPHA_ID, "source_ref": r});
    let p = ok(&call(&c, "plan_run", on("fix/broken-loss")).await);
    let launched = ok(&call(&c, "launch_run", json!({"plan_id": p["plan_id"]})).await);
    w.advance(60);
    let failed = run_of(&w, &launched);
    assert_eq!(failed["run"]["status"], "FAILED");

    // The same TOML on a new ref: a new launch, not blocked; the check says what changed.
    let fixed = ok(&call(&c, "plan_run", on("fix/loss-import")).await);
    assert!(fixed["blocked"].is_null(), "{fixed}");
    let prev = check(&fixed, "previous failure");
    assert!(
        prev[0]["detail"]
            .as_str()
            .unwrap()
            .contains("source ref: fix/broken-loss → fix/loss-import"),
        "{fixed}"
    );
    // On the old ref it would fail again: blocked, saying what must change.
    let again = ok(&call(&c, "plan_run", on("fix/broken-loss")).await);
    let blocked = again["blocked"].as_str().expect("blocked");
    assert!(
        blocked.contains("import error") && blocked.contains("new source_ref"),
        "{blocked}"
    );
    let msg = err(&call(&c, "launch_run", json!({"plan_id": again["plan_id"]})).await);
    assert!(msg.contains("relaunch_after_failure"), "{msg}");
    // The fix launches and trains.
    let launched = ok(&call(&c, "launch_run", json!({"plan_id": fixed["plan_id"]})).await);
    w.advance(60);
    assert_eq!(run_of(&w, &launched)["run"]["status"], "COMPLETED");
    c.cancel().await.unwrap();
}

#[tokio::test]
async fn a_secret_the_server_has_no_value_for_is_refused_at_plan_time() {
    let w = World::new().await;
    let c = server(&w, 0, None).await;
    let msg = err(&call(
        &c,
        "plan_run",
        json!({"config_toml": config("secret-run", "PrimeIntellect/Qwen3-0.6B-Reverse-Text-SFT"), "team_id": TEAM_ALPHA_ID, "env": ["HF_TOKEN"]}),
    )
    .await);
    assert!(
        msg.contains("HF_TOKEN") && msg.contains("no value") && msg.contains("Nothing was planned"),
        "{msg}"
    );
    c.cancel().await.unwrap();
    // With the value in the server's environment, the same plan is made.
    let mut env = w.env(0);
    env.push((
        "HF_TOKEN".into(),
        "hf_e2eaccountsvalue0000000000000000".into(),
    ));
    let c = w.client_with_env(env, &plan_mode_args(), Era::Modern).await;
    let p = ok(&call(
        &c,
        "plan_run",
        json!({"config_toml": config("secret-run", "PrimeIntellect/Qwen3-0.6B-Reverse-Text-SFT"), "team_id": TEAM_ALPHA_ID, "env": ["HF_TOKEN"]}),
    )
    .await);
    assert_eq!(p["env"], json!(["HF_TOKEN"]));
    c.cancel().await.unwrap();
}
