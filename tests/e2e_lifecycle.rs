//! Run lifecycle end to end (issue 12): pause, resume through the launch pipeline (confirmed,
//! never duplicated, even across a dropped answer), restart, and delete (refused while active,
//! always confirmed by a person).

mod common;

use common::{Era, PlainClient, World, call, connect, err, ok};
use factory_sandbox::{FaultEffect, FaultRule};
use rmcp::{
    ClientHandler, ErrorData,
    model::{
        ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult, ElicitationAction,
        Implementation,
    },
    service::{RequestContext, RoleClient},
};
use serde_json::json;

fn plan_mode() -> Vec<&'static str> {
    vec![
        "--confirm",
        "plan",
        "--max-cost-per-hour-usd",
        "1000",
        "--max-active-cost-per-hour-usd",
        "5000",
    ]
}

fn runs_named(w: &World, name: &str) -> Vec<serde_json::Value> {
    w.sandbox
        .runs()
        .into_iter()
        .filter(|r| r["run"]["name"] == name)
        .map(|r| r["run"].clone())
        .collect()
}

#[derive(Clone)]
struct Yes;

impl ClientHandler for Yes {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::builder().enable_elicitation().build(),
            Implementation::new("yes-client", "0.0.1"),
        )
    }
    async fn create_elicitation(
        &self,
        _: ElicitRequestParams,
        _: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        Ok(ElicitResult::new(ElicitationAction::Accept).with_content(json!({"confirm": true})))
    }
}

#[tokio::test]
async fn pause_then_resume_makes_exactly_one_new_run_even_when_the_answer_is_lost() {
    let w = World::new().await;
    let run = w.create_run(0, "pausable", 40, None).await;
    w.advance(20);
    let c = w.client(0, &plan_mode(), Era::Modern).await;
    let paused = ok(&call(&c, "pause_run", json!({"run_id": run})).await);
    assert_eq!(paused["status"], "PAUSED");
    // Resuming needs a plan; a plan for a config is not a resume plan.
    let p = ok(&call(&c, "plan_run", json!({"resume_from": run})).await);
    assert!(
        p["summary"].as_str().unwrap().contains("NEW billable run"),
        "{p}"
    );
    assert!(p["price_per_hour_usd"].is_number(), "{p}");
    let msg = err(&call(&c, "launch_run", json!({"plan_id": p["plan_id"]})).await);
    assert!(msg.contains("resume_run"), "{msg}");
    // The resume's answer is lost once; the retry finds the run instead of resuming again.
    let mut rule = FaultRule::new(
        format!("/api/v1/training/runs/{run}/resume"),
        FaultEffect::DropAfterCommit,
    );
    rule.times = Some(1);
    w.sandbox.add_fault(rule);
    let first = call(&c, "resume_run", json!({"plan_id": p["plan_id"]})).await;
    let second = ok(&call(&c, "resume_run", json!({"plan_id": p["plan_id"]})).await);
    let all = runs_named(&w, "pausable");
    assert_eq!(all.len(), 2, "the paused run and exactly one resumed run");
    let new_id = all.iter().find(|r| r["id"] != run.as_str()).unwrap()["id"].clone();
    assert_eq!(second["run_id"], new_id);
    if first.is_error != Some(true) {
        assert_eq!(ok(&first)["run_id"], new_id);
    }
    // A second resume plan of the same run is refused: it was resumed already.
    let again = err(&call(&c, "plan_run", json!({"resume_from": run})).await);
    assert!(
        again.contains("already") || again.contains("only a PAUSED run"),
        "{again}"
    );
    c.cancel().await.unwrap();
}

#[tokio::test]
async fn resume_needs_a_person_in_human_mode() {
    let w = World::new().await;
    let run = w.create_run(0, "human-resume", 40, None).await;
    w.advance(20);
    let c = w.client(0, &[], Era::Legacy).await;
    ok(&call(&c, "pause_run", json!({"run_id": run})).await);
    let p = ok(&call(&c, "plan_run", json!({"resume_from": run})).await);
    let msg = err(&call(&c, "resume_run", json!({"plan_id": p["plan_id"]})).await);
    assert!(msg.contains("factory-mcp approve"), "{msg}");
    assert_eq!(runs_named(&w, "human-resume").len(), 1);
    c.cancel().await.unwrap();
    // With a client that can ask, the person says yes and one run is created.
    let c = connect(Yes, w.transport(w.env(0), &[]), Era::Modern).await;
    let out = ok(&call(&c, "resume_run", json!({"plan_id": p["plan_id"]})).await);
    assert_eq!(runs_named(&w, "human-resume").len(), 2);
    assert_ne!(out["run_id"], run.as_str());
    c.cancel().await.unwrap();
}

#[tokio::test]
async fn restart_only_runs_that_are_running() {
    let w = World::new().await;
    let run = w.create_run(0, "restartable", 40, None).await;
    let c = w.client(0, &[], Era::Modern).await;
    let msg = err(&call(&c, "restart_run", json!({"run_id": run})).await);
    assert!(msg.contains("only a RUNNING run"), "{msg}");
    w.advance(20);
    let out = ok(&call(&c, "restart_run", json!({"run_id": run})).await);
    assert_eq!(out["run_id"], run.as_str());
    let restarts = w
        .sandbox
        .request_log()
        .iter()
        .filter(|r| r.path.ends_with("/restart"))
        .count();
    assert_eq!(restarts, 1);
    c.cancel().await.unwrap();
}

#[tokio::test]
async fn delete_is_refused_while_running_and_always_confirmed_by_a_person() {
    let w = World::new().await;
    let run = w.create_run(0, "deletable", 40, None).await;
    w.advance(20);
    // Even in plan mode (automation), a delete needs a person.
    let c = w.client(0, &plan_mode(), Era::Modern).await;
    let msg = err(&call(&c, "delete_run", json!({"run_id": run})).await);
    assert!(msg.contains("Stop it first"), "{msg}");
    ok(&call(&c, "stop_run", json!({"run_id": run})).await);
    let msg = err(&call(&c, "delete_run", json!({"run_id": run})).await);
    assert!(msg.contains("factory-mcp approve plan_"), "{msg}");
    let intent = msg
        .split_whitespace()
        .find(|w| w.starts_with("plan_"))
        .unwrap()
        .trim_matches(|c: char| !c.is_ascii_alphanumeric() && c != '_')
        .to_string();
    assert!(
        w.sandbox.run(&run).is_some(),
        "nothing deleted before approval"
    );
    // A person approves the intent in a terminal; the next call deletes.
    let dir = w.state_dir().display().to_string();
    let mut t = common::pty::approve(&[&intent, "--state-dir", &dir], w.home.path(), "y\n");
    let code = t.code();
    assert!(t.shown.contains("To approve this delete"), "{}", t.shown);
    t.type_in(&format!("{code}\n"));
    let out = t.finish();
    assert!(out.status.success(), "{}\n{}", out.shown, out.stderr);
    assert!(
        !out.shown.to_lowercase().contains("launch"),
        "a delete is never called a launch: {}",
        out.shown
    );
    let deleted = ok(&call(
        &c,
        "delete_run",
        json!({"run_id": run, "intent_id": intent}),
    )
    .await);
    assert_eq!(deleted["deleted"], true);
    assert!(w.sandbox.run(&run).is_none(), "the run is gone");
    c.cancel().await.unwrap();

    // Through the client's dialog instead.
    let run2 = w.create_run(0, "deletable-2", 5, None).await;
    w.advance(60);
    let c = connect(Yes, w.transport(w.env(0), &[]), Era::Modern).await;
    let out = ok(&call(&c, "delete_run", json!({"run_id": run2})).await);
    assert_eq!(out["deleted"], true);
    assert!(w.sandbox.run(&run2).is_none());
    c.cancel().await.unwrap();
    let c = connect(PlainClient, w.transport(w.env(0), &[]), Era::Modern).await;
    let msg = err(&call(&c, "delete_run", json!({"run_id": run2})).await);
    assert!(msg.contains("not found"), "{msg}");
    c.cancel().await.unwrap();
}
