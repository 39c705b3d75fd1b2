//! `factory-mcp guard` against the sandbox with a manual clock: it stops a run past its
//! wall-clock budget, stops the newest runs when the active hourly cap is exceeded, leaves other
//! owners' runs alone, changes nothing in a dry run, and remembers what it did across restarts.

mod common;

use std::process::Output;

use common::World;
use serde_json::Value;

async fn guard(w: &World, user: usize, policy: &str, extra: &[&str], team: Option<&str>) -> Output {
    let file = w.home.path().join("guard-policy.toml");
    std::fs::write(&file, policy).unwrap();
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_factory-mcp"));
    cmd.args(["guard", "--once", "--json", "--config"])
        .arg(&file)
        .args(extra)
        .env_clear()
        .envs(w.env(user));
    if let Some(t) = team {
        cmd.env("PRIME_TEAM_ID", t);
    }
    let out = tokio::time::timeout(std::time::Duration::from_secs(60), cmd.output())
        .await
        .expect("guard finishes")
        .unwrap();
    assert!(
        out.status.success(),
        "guard failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn report(out: &Output) -> Value {
    let text = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(text.lines().last().expect("a JSON line")).expect("JSON report")
}

fn status(w: &World, id: &str) -> String {
    w.sandbox.run(id).unwrap()["run"]["status"]
        .as_str()
        .unwrap()
        .to_string()
}

fn stops(w: &World) -> usize {
    w.sandbox
        .request_log()
        .iter()
        .filter(|r| r.method == "PUT" && r.path.ends_with("/stop"))
        .count()
}

#[tokio::test]
async fn a_run_past_its_wall_clock_budget_is_stopped_and_a_dry_run_changes_nothing() {
    let w = World::new().await;
    let long = w.create_run(0, "long-run", 100_000, None).await;
    w.advance(30);
    let policy = "[guard]\nmax_wall_clock_hours = 1.0\n";
    // Within budget: nothing to do.
    let r = report(&guard(&w, 0, policy, &[], None).await);
    assert_eq!(r["findings"], Value::Array(vec![]));
    // Two simulated hours later (measured on the platform's clock), a dry run only reports.
    w.advance(2 * 3600);
    let r = report(&guard(&w, 0, policy, &["--dry-run"], None).await);
    assert_eq!(r["findings"][0]["run_id"], long.as_str());
    assert_eq!(r["findings"][0]["outcome"], "would_act");
    assert!(
        r["findings"][0]["reason"]
            .as_str()
            .unwrap()
            .contains("max_wall_clock_hours")
    );
    assert_eq!(status(&w, &long), "RUNNING");
    assert_eq!(stops(&w), 0);
    // Live: stopped, with the reason audited.
    let r = report(&guard(&w, 0, policy, &[], None).await);
    assert_eq!(r["findings"][0]["outcome"], "acted");
    assert_eq!(status(&w, &long), "STOPPED");
    // A restarted guard remembers: nothing more is sent.
    let r = report(&guard(&w, 0, policy, &[], None).await);
    assert_eq!(r["findings"], Value::Array(vec![]));
    assert_eq!(stops(&w), 1);
    let store = factory_policies::store::Store::open(&w.state_dir()).unwrap();
    let acted: Vec<_> = store
        .audit_entries(100)
        .unwrap()
        .into_iter()
        .filter(|e| e.event.actor == "guard")
        .collect();
    assert_eq!(acted.len(), 1);
    assert_eq!(acted[0].event.run_id.as_deref(), Some(long.as_str()));
}

#[tokio::test]
async fn over_the_active_hourly_cap_the_newest_runs_are_stopped_first() {
    let w = World::new().await;
    let oldest = w.create_run(0, "cap-1", 100_000, None).await;
    w.advance(10);
    let middle = w.create_run(0, "cap-2", 100_000, None).await;
    w.advance(10);
    let newest = w.create_run(0, "cap-3", 100_000, None).await;
    w.advance(30);
    // Learn the (estimated) rate of one run from a dry sweep with no limits.
    let r = report(&guard(&w, 0, "", &["--dry-run"], None).await);
    assert_eq!(r["active_runs"], 3);
    let per_run = r["active_rate_per_hour_usd"].as_f64().unwrap() / 3.0;
    assert!(per_run > 0.0);
    let policy = format!("max_active_cost_per_hour_usd = {:.2}\n", per_run * 2.5);
    let r = report(&guard(&w, 0, &policy, &[], None).await);
    let acted: Vec<&str> = r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["run_id"].as_str().unwrap())
        .collect();
    assert_eq!(acted, vec![newest.as_str()]);
    assert_eq!(status(&w, &newest), "STOPPED");
    assert_eq!(status(&w, &middle), "RUNNING");
    assert_eq!(status(&w, &oldest), "RUNNING");
}

#[tokio::test]
async fn other_owners_runs_are_left_alone() {
    let w = World::new().await;
    let team = factory_sandbox::TEAM_BETA_ID; // Bob's team; Alice is a member
    let bobs = w.create_run(1, "bobs-long-run", 100_000, Some(team)).await;
    let alices = w
        .create_run(0, "alices-long-run", 100_000, Some(team))
        .await;
    w.advance(3 * 3600);
    let r = report(
        &guard(
            &w,
            0,
            "[guard]\nmax_wall_clock_hours = 1.0\n",
            &[],
            Some(team),
        )
        .await,
    );
    let acted: Vec<&str> = r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["run_id"].as_str().unwrap())
        .collect();
    assert_eq!(acted, vec![alices.as_str()]);
    assert_eq!(status(&w, &bobs), "RUNNING");
    assert_eq!(status(&w, &alices), "STOPPED");
}

#[tokio::test]
async fn pause_is_the_action_when_the_policy_says_so() {
    let w = World::new().await;
    let run = w.create_run(0, "pause-me", 100_000, None).await;
    w.advance(2 * 3600);
    let r = report(
        &guard(
            &w,
            0,
            "[guard]\nmax_wall_clock_hours = 1.0\naction = \"pause\"\n",
            &[],
            None,
        )
        .await,
    );
    assert_eq!(r["findings"][0]["action"], "pause");
    assert_eq!(status(&w, &run), "PAUSED");
}
