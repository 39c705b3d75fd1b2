//! End-to-end: the agent workflows through the real binary and rmcp's client against the
//! sandbox — watch_run (reached with progress, timed out, failed, cancelled, polling economy),
//! diagnose_run (healthy, out of memory, stalled, queued), get_rollouts, get_distributions, the
//! get_logs follow cursor, and the resources and prompts.

mod common;

use std::{
    sync::{Arc, Mutex},
    time::Duration,
};

use common::*;
use factory_sandbox::{ALICE_USER_ID, Sandbox, SandboxOptions, Seed, SeedRun, SeedSource};
use rmcp::{
    ClientHandler, RoleClient,
    model::{
        CallToolRequestParams, ClientCapabilities, ClientConfig, GetPromptRequestParams,
        Implementation, NumberOrString, ProgressNotificationParam, ProgressToken,
        ReadResourceRequestParams, RequestMetaObject, ResourceContents,
    },
    service::NotificationContext,
};
use serde_json::{Value, json};

/// Environment of a server that polls every 50 ms (the sandbox clock is driven by the test).
fn fast_env(w: &World) -> Vec<(String, String)> {
    let mut env = w.env(0);
    env.push(("FACTORY_MCP_WATCH_POLL_MS".into(), "50".into()));
    env
}

/// Move the sandbox clock `step_s` simulated seconds every 20 ms until dropped (through its
/// HTTP route, as another process would).
struct Ticker(tokio::task::JoinHandle<()>);

impl Ticker {
    fn start(w: &World, step_s: u64) -> Ticker {
        let url = format!("{}/_sandbox/clock/advance", w.sandbox.base_url());
        Ticker(tokio::spawn(async move {
            let http = reqwest::Client::new();
            loop {
                let _ = http
                    .post(&url)
                    .json(&json!({"seconds": step_s}))
                    .send()
                    .await;
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }))
    }
}

impl Drop for Ticker {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// One progress notification: progress, total, message.
type Progress = (f64, Option<f64>, String);

/// A client that records progress notifications.
#[derive(Clone, Default)]
struct Recorder {
    progress: Arc<Mutex<Vec<Progress>>>,
}

impl ClientHandler for Recorder {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("e2e-recorder", "0.0.1"),
        )
    }
    async fn on_progress(&self, p: ProgressNotificationParam, _: NotificationContext<RoleClient>) {
        self.progress
            .lock()
            .unwrap()
            .push((p.progress, p.total, p.message.unwrap_or_default()));
    }
}

fn with_progress(name: &str, args: Value) -> CallToolRequestParams {
    let Value::Object(map) = args else { panic!() };
    let mut p = CallToolRequestParams::new(name.to_string()).with_arguments(map);
    let mut meta = RequestMetaObject::default();
    meta.set_progress_token(ProgressToken(NumberOrString::String("t1".into())));
    p.meta = Some(meta);
    p
}

/// Platform requests the sandbox saw for one run.
fn requests_for(w: &World, run_id: &str) -> usize {
    w.sandbox
        .request_log()
        .iter()
        .filter(|r| r.path.contains(run_id))
        .count()
}

// ---- watch_run -------------------------------------------------------------------------------

#[tokio::test]
async fn watch_run_reaches_a_step_and_reports_completed_steps_as_progress() {
    let w = World::new().await;
    let run = w.create_run(0, "watch-reach", 20, None).await;
    let rec = Recorder::default();
    let c = connect(rec.clone(), w.transport(fast_env(&w), &[]), Era::Modern).await;
    let _tick = Ticker::start(&w, 1);
    let r = c
        .call_tool(with_progress(
            "watch_run",
            json!({"run_id": run, "until_step": 5, "timeout_s": 60}),
        ))
        .await
        .unwrap();
    let out = ok(&r);
    assert_eq!(out["reason"], "reached", "{out}");
    assert!(out["latest_step"].as_i64().unwrap() >= 5);
    assert_eq!(out["max_steps"], 20);
    let progress = rec.progress.lock().unwrap().clone();
    assert!(!progress.is_empty(), "no progress notification was sent");
    // Completed steps only (never 0 for "RUNNING"), strictly increasing, out of max_steps.
    for pair in progress.windows(2) {
        assert!(
            pair[1].0 > pair[0].0,
            "progress went backwards: {progress:?}"
        );
    }
    assert!(
        progress
            .iter()
            .all(|(p, t, m)| *p >= 1.0 && *t == Some(20.0) && m.contains("of 20"))
    );
    assert!(progress.last().unwrap().0 >= 5.0);
    c.cancel().await.unwrap();
}

#[tokio::test]
async fn watch_run_says_when_it_timed_out_or_the_run_failed() {
    let w = World::new().await;
    let queued = w.create_run(0, "watch-queued", 20, None).await;
    let c = w.client_with_env(fast_env(&w), &[], Era::Modern).await;
    // No clock movement: a queued run never gets there; the wait ends at timeout_s.
    let started = std::time::Instant::now();
    let out = ok(&call(
        &c,
        "watch_run",
        json!({"run_id": queued, "until_status": "RUNNING", "timeout_s": 1}),
    )
    .await);
    assert_eq!(out["reason"], "timed_out", "{out}");
    assert_eq!(out["status"], "QUEUED");
    assert!(
        started.elapsed() >= Duration::from_secs(1) && started.elapsed() < Duration::from_secs(30)
    );

    let oom = w.create_run(0, "watch-oom", 20, None).await;
    let _tick = Ticker::start(&w, 1);
    let r = call(&c, "watch_run", json!({"run_id": oom, "timeout_s": 60})).await;
    let out = ok(&r);
    assert_eq!(out["reason"], "run_failed", "{out}");
    assert_eq!(out["status"], "FAILED");
    assert!(
        out["error_message"]
            .as_str()
            .unwrap()
            .contains("out of memory")
    );
    assert!(text(&r).contains("diagnose_run"));

    // A step beyond the end: the run completes without reaching it.
    let short = w.create_run(0, "watch-short", 3, None).await;
    let out = ok(&call(
        &c,
        "watch_run",
        json!({"run_id": short, "until_step": 10, "timeout_s": 60}),
    )
    .await);
    assert_eq!(out["reason"], "run_ended", "{out}");
    assert_eq!(out["status"], "COMPLETED");

    // Contradictory or out-of-range arguments are refused with what to do.
    let e = err(&call(
        &c,
        "watch_run",
        json!({"run_id": short, "until_step": 2, "until_status": "RUNNING"}),
    )
    .await);
    assert!(e.contains("not both"), "{e}");
    let e = err(&call(&c, "watch_run", json!({"run_id": short, "timeout_s": 601})).await);
    assert!(e.contains("between 1 and 600"), "{e}");
    c.cancel().await.unwrap();
}

#[tokio::test]
async fn a_cancelled_watch_stops_polling_at_once() {
    let w = World::new().await;
    let run = w.create_run(0, "watch-cancel-queued", 20, None).await;
    let c = w.client_with_env(fast_env(&w), &[], Era::Legacy).await;
    // The client gives up once the watch has polled three times: dropping the request sends
    // notifications/cancelled. Conditions, not deadlines, so a slow machine only waits longer.
    // The longest watch there is: one that ignored the cancel would poll past the check below.
    let watch = call(&c, "watch_run", json!({"run_id": run, "timeout_s": 600}));
    let polled_thrice = async {
        loop {
            if requests_for(&w, &run) >= 3 {
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    tokio::select! {
        r = watch => panic!("the watch should still have been waiting: {r:?}"),
        () = polled_thrice => {}
    }
    // A live watch polls at least every 200 ms here: a second without a request means it
    // stopped. Up to 30 s for the cancel to arrive on a loaded machine.
    let mut settled = false;
    for _ in 0..30 {
        let before = requests_for(&w, &run);
        tokio::time::sleep(Duration::from_secs(1)).await;
        if requests_for(&w, &run) == before {
            settled = true;
            break;
        }
    }
    assert!(settled, "the watch kept polling after the cancel");
    // The server still answers.
    ok(&call(&c, "get_run", json!({"run_id": run})).await);
    c.cancel().await.unwrap();
}

#[tokio::test]
async fn by_default_a_watch_makes_at_most_one_request_per_two_seconds() {
    let w = World::new().await;
    let run = w.create_run(0, "watch-economy-queued", 20, None).await;
    let c = w.client(0, &[], Era::Modern).await;
    let out = ok(&call(&c, "watch_run", json!({"run_id": run, "timeout_s": 5})).await);
    assert_eq!(out["reason"], "timed_out");
    let n = requests_for(&w, &run);
    // t = 0, 2, then 5 (backed off ×1.5 while nothing changes) is past the deadline.
    assert!((2..=3).contains(&n), "{n} requests in 5 s");
    assert_eq!(out["requests"].as_u64().unwrap() as usize, n);
    c.cancel().await.unwrap();
}

// ---- diagnose_run ----------------------------------------------------------------------------

const HEALTHY: &str = "cdiaghealthy0000000000001";
const OOM: &str = "cdiagoom00000000000000001";
const STALLED: &str = "cdiagstall000000000000001";
const QUEUED: &str = "cdiagqueued0000000000001";

fn seeded(id: &str, name: &str, age_s: f64, max_steps: u32) -> SeedRun {
    serde_json::from_value(json!({
        "id": id,
        "user_id": ALICE_USER_ID,
        "name": name,
        "age_s": age_s,
        "config": {
            "name": name,
            "max_steps": max_steps,
            "model": {"name": "PrimeIntellect/Qwen3-0.6B-Reverse-Text-SFT"},
            "orchestrator": {"batch_size": 8},
            "trainer": {},
            "inference": {}
        }
    }))
    .expect("seed run")
}

/// A world whose runs started in the past on a clock that matches this machine's: the stalled
/// run last progressed an hour ago.
async fn diagnosis_world() -> World {
    let mut seed = Seed::default();
    seed.runs.extend([
        // 5 s to start, then 2 s per step: 15 s old = step 5 of 100, progressing.
        seeded(HEALTHY, "diag-healthy", 15.0, 100),
        seeded(OOM, "diag-oom-run", 60.0, 100),
        seeded(STALLED, "diag-stall-run", 3600.0, 100),
        seeded(QUEUED, "diag-queued-run", 30.0, 100),
    ]);
    let sandbox = Sandbox::start(SandboxOptions {
        seed: SeedSource::Value(Box::new(seed)),
        ..SandboxOptions::manual_clock()
    })
    .await
    .expect("sandbox");
    World {
        sandbox,
        home: tempfile::tempdir().unwrap(),
        workspace: tempfile::tempdir().unwrap(),
    }
}

#[tokio::test]
async fn diagnose_run_tells_healthy_failed_stalled_and_queued_runs_apart() {
    let w = diagnosis_world().await;
    let c = w.client(0, &[], Era::Modern).await;
    let d = |id: &'static str| {
        let c = &c;
        async move { ok(&call(c, "diagnose_run", json!({"run_id": id})).await) }
    };

    let h = d(HEALTHY).await;
    assert_eq!(h["verdict"], "healthy", "{h:#}");
    assert_eq!(h["progress"]["latest_step"], 5);
    assert_eq!(h["progress"]["stalled"], false);
    assert_eq!(h["progress"]["seconds_per_step"], 2.0);
    assert_eq!(h["latest_checkpoint"]["step"], 5);
    assert!(h["next_action"].as_str().unwrap().contains("step 5 of 100"));
    assert!(
        h["components"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["component"] == "orchestrator")
    );

    let o = d(OOM).await;
    assert_eq!(o["verdict"], "failed", "{o:#}");
    assert!(
        o["failure_analysis"]["root_cause"]
            .as_str()
            .unwrap()
            .contains("memory")
    );
    let trainer = o["recent_errors"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["component"] == "trainer")
        .expect("trainer errors");
    let lines = trainer["lines"].as_array().unwrap();
    assert!(!lines.is_empty() && lines.len() <= 5);
    assert!(
        lines
            .iter()
            .any(|l| l.as_str().unwrap().contains("OutOfMemoryError"))
    );
    assert!(
        o["next_action"].as_str().unwrap().contains("GPU memory"),
        "{}",
        o["next_action"]
    );

    let s = d(STALLED).await;
    assert_eq!(s["verdict"], "stalled", "{s:#}");
    assert_eq!(s["status"], "RUNNING");
    assert_eq!(s["progress"]["latest_step"], 3);
    assert_eq!(s["progress"]["stalled"], true);
    assert!(s["progress"]["seconds_since_progress"].as_f64().unwrap() > 3000.0);
    assert!(s["platform_notice"].is_string());
    assert!(s["next_action"].as_str().unwrap().contains("stop_run"));

    let q = d(QUEUED).await;
    assert_eq!(q["verdict"], "queued", "{q:#}");
    assert!(q["queue"]["reason"].is_string());
    assert_eq!(q["queue"]["runs_ahead"], 3);
    assert!(q["recent_errors"].as_array().unwrap().is_empty());
    assert!(q["next_action"].as_str().unwrap().contains("watch_run"));

    let e = err(&call(
        &c,
        "diagnose_run",
        json!({"run_id": "cnosuchrun000000000000000"}),
    )
    .await);
    assert!(e.contains("not found") && e.contains("list_runs"), "{e}");
    c.cancel().await.unwrap();
}

// ---- RL signals ------------------------------------------------------------------------------

#[tokio::test]
async fn rollouts_and_distributions_are_paged_and_bounded() {
    let w = World::new().await;
    let run = w.create_run(0, "signals", 20, None).await;
    let c = w.client(0, &[], Era::Modern).await;
    // Before the first step: no samples, and the answer says what to do.
    let early = ok(&call(&c, "get_rollouts", json!({"run_id": run})).await);
    assert_eq!(early["count"], 0);
    assert!(early["note"].as_str().unwrap().contains("watch_run"));

    w.advance(5 + 2 * 4); // four steps done
    let r = ok(&call(&c, "get_rollouts", json!({"run_id": run})).await);
    assert_eq!(r["step"], 4, "the latest step by default");
    assert_eq!(r["count"], 10, "10 per page by default");
    assert_eq!(r["total"], 16);
    assert!(
        r["samples"]
            .as_array()
            .unwrap()
            .iter()
            .all(|s| s["step"] == 4 && s["reward"].is_number())
    );
    let p2 = ok(&call(
        &c,
        "get_rollouts",
        json!({"run_id": run, "step": 2, "page": 2, "limit": 10}),
    )
    .await);
    assert_eq!(p2["count"], 6);
    assert!(
        p2["samples"]
            .as_array()
            .unwrap()
            .iter()
            .all(|s| s["step"] == 2)
    );
    let e = err(&call(&c, "get_rollouts", json!({"run_id": run, "limit": 51})).await);
    assert!(e.contains("limit") || e.contains("50"), "{e}");

    let d = ok(&call(
        &c,
        "get_distributions",
        json!({"run_id": run, "type": "rewards", "step": 3}),
    )
    .await);
    assert_eq!(d["step"], 3);
    assert_eq!(d["bin_count"], 10);
    let sum: u64 = d["bins"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["count"].as_u64().unwrap())
        .sum();
    assert_eq!(d["total_count"], sum);
    let e = err(&call(
        &c,
        "get_distributions",
        json!({"run_id": run, "type": "../rewards"}),
    )
    .await);
    assert!(e.contains("distribution name"), "{e}");
    let e = err(&call(
        &c,
        "get_rollouts",
        json!({"run_id": "cnosuchrun000000000000000", "step": 1}),
    )
    .await);
    assert!(e.contains("not found"), "{e}");
    c.cancel().await.unwrap();
}

// ---- the log cursor --------------------------------------------------------------------------

fn lines_of(v: &Value) -> Vec<String> {
    v["lines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_str().unwrap().to_string())
        .collect()
}

#[tokio::test]
async fn following_logs_with_a_cursor_returns_every_line_once() {
    let w = World::new().await;
    let run = w.create_run(0, "follow", 30, None).await;
    let c = w.client(0, &[], Era::Modern).await;
    // Not started: no lines, but a cursor to follow from.
    let first = ok(&call(
        &c,
        "get_logs",
        json!({"run_id": run, "component": "trainer"}),
    )
    .await);
    assert_eq!(first["state"], "not_started");
    let mut cursor = first["cursor"].as_str().unwrap().to_string();
    let mut seen: Vec<String> = Vec::new();
    // The run writes while the assistant follows it, a few steps between calls.
    for advance in [6, 3, 4, 1, 0, 7, 2, 9, 30] {
        w.advance(advance);
        // An answer is bounded (3 KB of lines by default): call again while it says more follow.
        loop {
            let out = ok(&call(
                &c,
                "get_logs",
                json!({"run_id": run, "component": "trainer", "cursor": cursor}),
            )
            .await);
            assert_eq!(out["possibly_missed"], false);
            seen.extend(lines_of(&out));
            cursor = out["cursor"].as_str().unwrap().to_string();
            if out["truncated"] == false {
                break;
            }
        }
    }
    let all = ok(&call(
        &c,
        "get_logs",
        json!({"run_id": run, "component": "trainer", "tail": 5000, "max_bytes": 65536}),
    )
    .await);
    let all = lines_of(&all);
    assert!(
        all.len() > 60,
        "the run should have logged a lot: {}",
        all.len()
    );
    assert_eq!(
        seen, all,
        "followed lines differ from the full log (duplicates or losses)"
    );
    // Nothing new: nothing returned.
    let idle = ok(&call(
        &c,
        "get_logs",
        json!({"run_id": run, "component": "trainer", "cursor": cursor}),
    )
    .await);
    assert_eq!(idle["line_count"], 0);

    // A cursor is bound to its query.
    let e = err(&call(
        &c,
        "get_logs",
        json!({"run_id": run, "component": "orchestrator", "cursor": cursor}),
    )
    .await);
    assert!(e.contains("another log query"), "{e}");
    let e = err(&call(
        &c,
        "get_logs",
        json!({"run_id": run, "cursor": "not-a-cursor"}),
    )
    .await);
    assert!(e.contains("cursor"), "{e}");
    c.cancel().await.unwrap();
}

#[tokio::test]
async fn a_bounded_follow_continues_where_it_stopped_and_a_gap_is_reported() {
    let w = World::new().await;
    let run = w.create_run(0, "follow-bounded", 40, None).await;
    let c = w.client(0, &[], Era::Modern).await;
    w.advance(6);
    let out = ok(&call(
        &c,
        "get_logs",
        json!({"run_id": run, "component": "trainer"}),
    )
    .await);
    let mut seen = lines_of(&out);
    let mut cursor = out["cursor"].as_str().unwrap().to_string();
    w.advance(200); // the whole run: far more than 1 KiB of new lines
    let mut calls = 0;
    loop {
        let out = ok(&call(
            &c,
            "get_logs",
            json!({"run_id": run, "component": "trainer", "cursor": cursor, "max_bytes": 1024}),
        )
        .await);
        calls += 1;
        seen.extend(lines_of(&out));
        cursor = out["cursor"].as_str().unwrap().to_string();
        if out["truncated"] == false {
            break;
        }
        assert!(calls < 50);
    }
    assert!(
        calls > 2,
        "1 KiB per call should take several calls, took {calls}"
    );
    let all = lines_of(&ok(&call(
        &c,
        "get_logs",
        json!({"run_id": run, "component": "trainer", "tail": 5000, "max_bytes": 65536}),
    )
    .await));
    assert_eq!(seen, all);

    // A tail too short to overlap what was seen: the answer says lines may be missing.
    let gap_run = w.create_run(0, "follow-gap", 40, None).await;
    w.advance(8);
    let out = ok(&call(
        &c,
        "get_logs",
        json!({"run_id": gap_run, "component": "trainer", "tail": 3}),
    )
    .await);
    w.advance(30);
    let r = call(
        &c,
        "get_logs",
        json!({"run_id": gap_run, "component": "trainer", "tail": 3, "cursor": out["cursor"]}),
    )
    .await;
    assert_eq!(ok(&r)["possibly_missed"], true);
    assert!(text(&r).contains("may have been missed"), "{}", text(&r));
    c.cancel().await.unwrap();
}

// ---- resources and prompts -------------------------------------------------------------------

#[tokio::test]
async fn runs_are_readable_as_resources_and_prompts_are_served() {
    let w = World::new().await;
    let run = w.create_run(0, "resource-run", 20, None).await;
    w.advance(11);
    for era in [Era::Modern, Era::Legacy] {
        let c = w.client(0, &[], era).await;
        let templates = c.list_all_resource_templates().await.unwrap();
        let uris: Vec<&str> = templates.iter().map(|t| t.uri_template.as_str()).collect();
        assert_eq!(
            uris,
            vec!["factory://runs/{run_id}", "factory://runs/{run_id}/logs"],
            "{era:?}"
        );

        let r = c
            .read_resource(ReadResourceRequestParams::new(format!(
                "factory://runs/{run}"
            )))
            .await
            .unwrap();
        let ResourceContents::TextResourceContents {
            text, mime_type, ..
        } = &r.contents[0]
        else {
            panic!("text contents expected");
        };
        assert_eq!(mime_type.as_deref(), Some("application/json"));
        let v: Value = serde_json::from_str(text).unwrap();
        assert_eq!(v["id"], run.as_str());
        assert_eq!(v["status"], "RUNNING");

        let r = c
            .read_resource(ReadResourceRequestParams::new(format!(
                "factory://runs/{run}/logs"
            )))
            .await
            .unwrap();
        let ResourceContents::TextResourceContents { text, .. } = &r.contents[0] else {
            panic!()
        };
        assert!(text.contains("Step 3"), "{text}");

        let e = c
            .read_resource(ReadResourceRequestParams::new(
                "factory://runs/cnosuchrun000000000000000",
            ))
            .await
            .unwrap_err();
        assert!(
            e.to_string().contains("-32602") || e.to_string().contains("not found"),
            "{e}"
        );

        let prompts = c.list_all_prompts().await.unwrap();
        let names: Vec<&str> = prompts.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, vec!["smoke_run", "diagnose_failed_run"]);
        let mut args = serde_json::Map::new();
        args.insert("run_id".into(), json!(run));
        let p = c
            .get_prompt(GetPromptRequestParams::new("diagnose_failed_run").with_arguments(args))
            .await
            .unwrap();
        let body = serde_json::to_string(&p.messages).unwrap();
        assert!(body.contains(&run) && body.contains("diagnose_run"));
        c.cancel().await.unwrap();
    }
    // Gating applies: a read-only server offers only the prompt whose tools it serves.
    let c = w.client(0, &["--read-only"], Era::Modern).await;
    let names: Vec<String> = c
        .list_all_prompts()
        .await
        .unwrap()
        .into_iter()
        .map(|p| p.name)
        .collect();
    assert_eq!(names, vec!["diagnose_failed_run".to_string()]);
    c.cancel().await.unwrap();
}
