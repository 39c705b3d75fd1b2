//! Issue 20 §4: the run-list cache. With 20, 3,000 and 30,000 finished runs seeded in a team,
//! the platform requests of a warm `plan_run` and `launch_run` stay the same (printed; run with
//! `-- --nocapture`), and an active run created before 3,000 newer finished runs is found by
//! the duplicate guard and counted by both active-run budgets.
//!
//! "Warm": the first call of a fresh state store reads the owner's whole run list once (300
//! pages for 30,000 runs) — that read is printed too, and is the only one that grows.

mod common;

use common::{Era, World, call, err, ok, plan_mode_args, rl_config};
use factory_sandbox::{ALICE_USER_ID, SandboxOptions, Seed, SeedRun, SeedSource, TEAM_ALPHA_ID};
use serde_json::{Value, json};

const TEAM: &str = TEAM_ALPHA_ID;
/// A run that trains for weeks of simulated time (2 s a step).
const LONG_STEPS: u32 = 1_000_000;

/// `n` finished runs of Team Alpha, the newest two days old, one second apart.
fn finished_runs(n: usize) -> Vec<SeedRun> {
    (0..n)
        .map(|i| SeedRun {
            id: None,
            user_id: ALICE_USER_ID.into(),
            team_id: Some(TEAM.into()),
            name: Some(format!("history-{i}")),
            config: json!({
                "name": format!("history-{i}"),
                "max_steps": 1,
                "model": {"name": "PrimeIntellect/Qwen3-0.6B-Reverse-Text-SFT"},
            }),
            sft: false,
            gpu_type: None,
            volume: None,
            age_s: 2.0 * 86_400.0 + i as f64,
            trace_bytes_total: None,
        })
        .collect()
}

async fn world(runs: Vec<SeedRun>) -> World {
    let mut seed = Seed::default();
    seed.runs.extend(runs);
    World::with_sandbox(SandboxOptions {
        seed: SeedSource::Value(Box::new(seed)),
        ..SandboxOptions::manual_clock()
    })
    .await
}

/// Requests the sandbox received since `from`: (all, run-list pages, runs read by id).
fn requests_since(w: &World, from: usize) -> (usize, usize, usize) {
    let log = w.sandbox.request_log();
    let new = &log[from..];
    let lists = new
        .iter()
        .filter(|r| r.method == "GET" && r.path == "/api/v1/rft/runs")
        .count();
    let by_id = new
        .iter()
        .filter(|r| {
            r.method == "GET"
                && r.path.starts_with("/api/v1/rft/runs/")
                && r.path.matches('/').count() == 5
        })
        .count();
    (new.len(), lists, by_id)
}

fn mark(w: &World) -> usize {
    w.sandbox.request_log().len()
}

/// One size: a cold plan (the one full read), a warm plan, and a launch of the warm plan.
/// Returns the warm plan's and the launch's (all, lists, by id) requests.
async fn measure(n: usize) -> ((usize, usize, usize), (usize, usize, usize)) {
    let w = world(finished_runs(n)).await;
    let c = w.client(0, &plan_mode_args(), Era::Modern).await;
    let args = |name: &str| json!({"config_toml": rl_config(name, 5), "team_id": TEAM});

    let m = mark(&w);
    let t = std::time::Instant::now();
    ok(&call(&c, "plan_run", args("cold-plan")).await);
    let cold = requests_since(&w, m);
    let cold_ms = t.elapsed().as_secs_f64() * 1e3;

    let m = mark(&w);
    let t = std::time::Instant::now();
    let p = ok(&call(&c, "plan_run", args("warm-plan")).await);
    let warm = requests_since(&w, m);
    let warm_ms = t.elapsed().as_secs_f64() * 1e3;

    let m = mark(&w);
    let t = std::time::Instant::now();
    let launched = ok(&call(&c, "launch_run", json!({"plan_id": p["plan_id"]})).await);
    let launch = requests_since(&w, m);
    let launch_ms = t.elapsed().as_secs_f64() * 1e3;
    assert!(launched["run_id"].is_string(), "{launched}");

    println!(
        "{n:>6} finished runs: cold plan_run {} requests ({} list pages, {cold_ms:.0} ms); \
         warm plan_run {} requests ({} list pages, {} by id, {warm_ms:.1} ms); \
         launch_run {} requests ({} list pages, {} by id, {launch_ms:.1} ms)",
        cold.0, cold.1, warm.0, warm.1, warm.2, launch.0, launch.1, launch.2
    );
    c.cancel().await.unwrap();
    (warm, launch)
}

#[tokio::test]
async fn platform_requests_per_plan_and_launch_stay_flat_as_the_history_grows() {
    let mut seen = Vec::new();
    for n in [20, 3_000, 30_000] {
        seen.push((n, measure(n).await));
    }
    let (_, first) = seen[0];
    for (n, counts) in &seen {
        assert_eq!(
            *counts, first,
            "requests of a warm plan_run / launch_run with {n} runs differ from 20 runs: {seen:?}"
        );
    }
    // One page of the list per call (plan_run; launch_run's re-check), whatever the history.
    assert_eq!(first.0.1, 1, "{seen:?}");
    assert_eq!(first.1.1, 1, "{seen:?}");
}

/// The create request `plan_run` makes for `toml`, taken from a plan in a throwaway world
/// (planning changes nothing), so a seeded run can carry the very same config.
async fn planned_config(toml: &str) -> Value {
    let w = World::new().await;
    let c = w.client(0, &plan_mode_args(), Era::Modern).await;
    let p = ok(&call(
        &c,
        "plan_run",
        json!({"config_toml": toml, "team_id": TEAM}),
    )
    .await);
    c.cancel().await.unwrap();
    p["request"]["config"].clone()
}

#[tokio::test]
async fn an_active_run_older_than_3000_finished_runs_is_found_and_counted() {
    let toml = rl_config("long-run", LONG_STEPS);
    let config = planned_config(&toml).await;
    assert!(config.is_object(), "{config}");
    let mut runs = finished_runs(3_000);
    // Older than every finished run (they are 2 days old and younger), still RUNNING.
    runs.push(SeedRun {
        id: Some("cruncacheoldactive0000001".into()),
        user_id: ALICE_USER_ID.into(),
        team_id: Some(TEAM.into()),
        name: Some("long-run".into()),
        config,
        sft: false,
        gpu_type: None,
        volume: None,
        age_s: 3.0 * 86_400.0,
        trace_bytes_total: None,
    });
    let w = world(runs).await;
    let old = w.sandbox.run("cruncacheoldactive0000001").expect("seeded");
    assert_eq!(old["run"]["status"], "RUNNING", "{old}");
    let plan_args = json!({"config_toml": toml, "team_id": TEAM});

    // The duplicate guard: the same launch is refused, on a fresh store and on a warm one.
    let c = w.client(0, &plan_mode_args(), Era::Modern).await;
    for attempt in ["cold", "warm"] {
        let msg = err(&call(&c, "plan_run", plan_args.clone()).await);
        assert!(
            msg.contains("already active") && msg.contains("cruncacheoldactive0000001"),
            "{attempt}: {msg}"
        );
    }
    // Another config is not a duplicate (and the run is counted below).
    let other = json!({"config_toml": rl_config("other-run", 5), "team_id": TEAM});
    let fine = ok(&call(&c, "plan_run", other.clone()).await);
    assert!(fine["plan_id"].is_string());
    c.cancel().await.unwrap();

    // Both active-run budgets count it: one active run allowed, or room for one run's rate.
    let per_run = fine["price_per_hour_usd"].as_f64().expect("priced");
    let rate_cap = format!("{:.2}", per_run * 1.5);
    for (flags, key) in [
        (
            vec![
                "--max-active-runs",
                "1",
                "--max-active-cost-per-hour-usd",
                "5000",
            ],
            "max_active_runs",
        ),
        (
            vec!["--max-active-cost-per-hour-usd", rate_cap.as_str()],
            "max_active_cost_per_hour_usd",
        ),
    ] {
        let mut args = vec!["--confirm", "plan", "--max-cost-per-hour-usd", "1000"];
        args.extend(flags);
        let c = w.client(0, &args, Era::Modern).await;
        let msg = err(&call(&c, "plan_run", other.clone()).await);
        assert!(msg.contains(key), "{key}: {msg}");
        c.cancel().await.unwrap();
    }
    assert_eq!(w.sandbox.create_requests(), 0, "nothing was launched");

    // Someone else stops it: the warm cache re-reads it by id (it is not on the newest page),
    // sees it finished, and no longer counts it.
    let stopped = reqwest::Client::new()
        .put(format!(
            "{}/api/v1/rft/runs/cruncacheoldactive0000001/stop",
            w.sandbox.base_url()
        ))
        .bearer_auth(w.key(0))
        .send()
        .await
        .expect("stop request");
    assert!(stopped.status().is_success());
    let args = [
        "--confirm",
        "plan",
        "--max-cost-per-hour-usd",
        "1000",
        "--max-active-runs",
        "1",
        "--max-active-cost-per-hour-usd",
        "5000",
    ];
    let c = w.client(0, &args, Era::Modern).await;
    let m = mark(&w);
    ok(&call(&c, "plan_run", other).await);
    let (_, lists, by_id) = requests_since(&w, m);
    assert_eq!((lists, by_id), (1, 1), "one short page and one re-read");
    // Finished now, it is read no more.
    let m = mark(&w);
    ok(&call(&c, "plan_run", plan_args).await);
    assert_eq!(requests_since(&w, m).2, 0, "a finished run is not re-read");
    c.cancel().await.unwrap();
}

/// Review M2: one 404 from the re-read of an old active run (a platform hiccup) must not make
/// the cache forget it for good: the cache is no longer complete, so the next call reads the
/// whole list and finds the run again — the duplicate guard still refuses.
#[tokio::test]
async fn a_wrong_404_on_a_re_read_costs_a_full_read_not_the_run() {
    let toml = rl_config("long-run", LONG_STEPS);
    let config = planned_config(&toml).await;
    let mut runs = finished_runs(300);
    runs.push(SeedRun {
        id: Some("cruncacheoldactive0000002".into()),
        user_id: ALICE_USER_ID.into(),
        team_id: Some(TEAM.into()),
        name: Some("long-run".into()),
        config,
        sft: false,
        gpu_type: None,
        volume: None,
        age_s: 3.0 * 86_400.0,
        trace_bytes_total: None,
    });
    let w = world(runs).await;
    let plan_args = json!({"config_toml": toml, "team_id": TEAM});
    let c = w.client(0, &plan_mode_args(), Era::Modern).await;
    let refused = |msg: &str| msg.contains("already active") && msg.contains("0000002");
    // Cold: the whole list is read; the run is found.
    let msg = err(&call(&c, "plan_run", plan_args.clone()).await);
    assert!(refused(&msg), "cold: {msg}");
    // The next re-read of the run answers 404 once.
    let mut rule = factory_sandbox::FaultRule::new(
        "/api/v1/rft/runs/cruncacheoldactive0000002",
        factory_sandbox::FaultEffect::Status,
    );
    rule.method = Some("GET".into());
    rule.status = Some(404);
    rule.times = Some(1);
    w.sandbox.add_fault(rule);
    let m = mark(&w);
    let msg = err(&call(&c, "plan_run", plan_args.clone()).await);
    assert!(
        refused(&msg),
        "the call that saw the 404 counts the run still: {msg}"
    );
    assert_eq!(requests_since(&w, m).2, 1, "the run was re-read by id");
    // The run is still there: the next call reads the whole list (4 pages) and finds it.
    let m = mark(&w);
    let msg = err(&call(&c, "plan_run", plan_args.clone()).await);
    assert!(refused(&msg), "after the 404: {msg}");
    assert_eq!(requests_since(&w, m).1, 4, "a whole read after the 404");
    // And the cache is complete again: one short page.
    let m = mark(&w);
    let msg = err(&call(&c, "plan_run", plan_args).await);
    assert!(refused(&msg), "warm again: {msg}");
    assert_eq!(requests_since(&w, m).1, 1);
    c.cancel().await.unwrap();
}
