//! Platform faults, tool by tool (issue 9 §1): every read tool either succeeds after a safe
//! retry or answers a clear `isError`; `stop_run` is never retried blindly (PUTs counted in the
//! sandbox's request log); a traces download cut half-way leaves no file under its final name
//! and a second call completes it byte-identical.
//!
//! Create faults (drop_after_commit / reset on run and volume creation, a client cancelling
//! mid-dispatch) are in `e2e_launch.rs` h and n; retries of GETs and no retry of create at the
//! client level are in `platform/tests/`.

mod common;

use std::{
    collections::HashSet,
    time::{Duration, Instant},
};

use common::{Client, Era, World, call, err, ok, text};
use factory_sandbox::{FaultEffect, FaultRule};
use rmcp::model::CallToolResult;
use serde_json::{Value, json};

/// Shortened platform timeouts: a response slower than this is a timeout.
const SERVE_ARGS: &[&str] = &["--request-timeout-s", "1", "--create-timeout-s", "1"];
/// Slower than the shortened request timeout.
const SLOW_MS: u64 = 1_800;

fn read_tools(run: &str) -> Vec<(&'static str, Value)> {
    let r = json!({"run_id": run});
    vec![
        ("whoami", json!({})),
        ("list_teams", json!({})),
        ("list_models", json!({})),
        ("list_gpus", json!({})),
        ("list_volumes", json!({})),
        ("list_runs", json!({})),
        ("get_run", r.clone()),
        ("get_components", r.clone()),
        ("get_logs", json!({"run_id": run, "tail": 20})),
        ("get_metrics", r.clone()),
        ("get_progress", r.clone()),
        ("list_checkpoints", r.clone()),
        ("get_rollouts", r.clone()),
        ("get_distributions", r.clone()),
        ("diagnose_run", r.clone()),
        ("run_report", r.clone()),
        ("list_traces", json!({"run_id": run, "limit": 5})),
    ]
}

/// A world with one RUNNING run with steps, and a server with shortened timeouts.
async fn world() -> (World, Client, String) {
    let w = World::new().await;
    let run = w.create_run(0, "faulty-reads", 40, None).await;
    w.advance(30);
    let c = w.client(0, SERVE_ARGS, Era::Modern).await;
    (w, c, run)
}

/// The platform requests (method, path) in the log after index `from`.
fn requests_since(w: &World, from: usize) -> Vec<(String, String)> {
    w.sandbox.request_log()[from..]
        .iter()
        .filter(|q| !q.path.starts_with("/_sandbox"))
        .map(|q| (q.method.clone(), q.path.clone()))
        .collect()
}

/// The platform requests a call makes (method, path), in order.
async fn requests_of(
    w: &World,
    c: &Client,
    tool: &str,
    args: &Value,
) -> (CallToolResult, Vec<(String, String)>) {
    let before = w.sandbox.request_log().len();
    let r = call(c, tool, args.clone()).await;
    (r, requests_since(w, before))
}

fn rule(method: &str, path: &str, effect: FaultEffect, times: Option<u32>) -> FaultRule {
    let mut r = FaultRule::new(path, effect);
    r.method = Some(method.into());
    r.times = times;
    r
}

/// One transient fault on the first GET each read tool makes (of a path it requests once, where
/// it has one): the tool still succeeds (the GET was retried), and the faulted path was
/// requested again.
///
/// Each run-scoped tool reads its own run, so tools whose requests touch disjoint paths run
/// concurrently (in "waves") and a fault planted for one tool cannot be consumed by another.
/// `needs_retry(tool)` says whether the fault must have been retried (a slow answer within a
/// tool's own timeout is simply waited for).
async fn transient_matrix(
    make: impl Fn(&str) -> FaultRule,
    label: &str,
    needs_retry: impl Fn(&str) -> bool,
) {
    let w = World::new().await;
    let mut calls = Vec::new();
    for (i, (tool, _)) in read_tools("x").into_iter().enumerate() {
        let run = w
            .create_run(0, &format!("faulty-reads-{i}"), 40, None)
            .await;
        let args = read_tools(&run).swap_remove(i).1;
        calls.push((tool, args));
    }
    w.advance(30);
    let c = w.client(0, SERVE_ARGS, Era::Modern).await;
    // Calibrate: every path each tool requests, and the first GET of a path it requests once
    // (so that the faulted request's retry is told from the tool's other requests of the path:
    // list_runs asks for each owner's runs beside its one read of the teams, in no set order).
    let mut planned: Vec<(&str, Value, String, HashSet<String>)> = Vec::new();
    for (tool, args) in calls {
        let (clean, reqs) = requests_of(&w, &c, tool, &args).await;
        ok(&clean);
        let once = |p: &str| reqs.iter().filter(|(_, q)| q == p).count() == 1;
        let first = reqs
            .iter()
            .find(|(m, p)| m == "GET" && once(p))
            .unwrap_or_else(|| panic!("{tool} made no GET of a path it requests once: {reqs:?}"))
            .1
            .clone();
        planned.push((
            tool,
            args,
            first,
            reqs.into_iter().map(|(_, p)| p).collect(),
        ));
    }
    let mut waves: Vec<Vec<usize>> = Vec::new();
    let mut wave_paths: Vec<HashSet<String>> = Vec::new();
    for (i, (_, _, _, paths)) in planned.iter().enumerate() {
        match wave_paths.iter().position(|u| u.is_disjoint(paths)) {
            Some(k) => {
                waves[k].push(i);
                wave_paths[k].extend(paths.iter().cloned());
            }
            None => {
                waves.push(vec![i]);
                wave_paths.push(paths.clone());
            }
        }
    }
    let mut report = Vec::new();
    for wave in &waves {
        let before = w.sandbox.request_log().len();
        let planted: Vec<FaultRule> = wave
            .iter()
            .map(|&i| w.sandbox.add_fault(make(&planned[i].2)))
            .collect();
        let results = futures::future::join_all(wave.iter().map(|&i| {
            let (tool, args, _, _) = &planned[i];
            let c = &c;
            async move {
                let t0 = Instant::now();
                let r = call(c, tool, args.clone()).await;
                (r, t0.elapsed())
            }
        }))
        .await;
        let reqs = requests_since(&w, before);
        let remaining: Vec<u64> = w.sandbox.faults().iter().map(|f| f.id).collect();
        for ((&i, (r, elapsed)), planted) in wave.iter().zip(results).zip(planted) {
            let (tool, _, first, _) = &planned[i];
            assert_ne!(
                r.is_error,
                Some(true),
                "{label}/{tool}: failed: {}",
                text(&r)
            );
            assert!(
                !remaining.contains(&planted.id),
                "{label}/{tool}: the fault was never hit"
            );
            let hits = reqs
                .iter()
                .filter(|(m, p)| m == "GET" && p == first)
                .count();
            if needs_retry(tool) {
                assert!(
                    hits >= 2,
                    "{label}/{tool}: {first} requested {hits} time(s); a retry was expected"
                );
            }
            // Bounded: one backoff (at most 2 s with jitter) plus at most one timeout.
            assert!(
                elapsed < Duration::from_secs(15),
                "{label}/{tool}: took {elapsed:?}"
            );
            report.push(format!("{tool}: {} ms", elapsed.as_millis()));
        }
    }
    eprintln!(
        "transient {label} ({} waves): {}",
        waves.len(),
        report.join(", ")
    );
    c.cancel().await.unwrap();
}

/// A fault that does not go away: a clear isError, a bounded number of attempts. The fault is
/// on the first GET the tool makes, or on the GET to `on` for a tool whose requests go out side
/// by side (their order in the sandbox's log is then a race).
async fn persistent(
    w: &World,
    c: &Client,
    tool: &str,
    args: Value,
    on: Option<&str>,
    make: impl Fn(&str) -> FaultRule,
) -> String {
    let (clean, reqs) = requests_of(w, c, tool, &args).await;
    ok(&clean);
    let first = reqs
        .iter()
        .find(|(m, p)| m == "GET" && on.is_none_or(|on| p == on))
        .unwrap()
        .1
        .clone();
    w.sandbox.add_fault(make(&first));
    let t0 = Instant::now();
    let (r, reqs) = requests_of(w, c, tool, &args).await;
    w.sandbox.clear_faults();
    let msg = err(&r);
    let attempts = reqs
        .iter()
        .filter(|(m, p)| m == "GET" && *p == first)
        .count();
    assert!((1..=3).contains(&attempts), "{tool}: {attempts} attempts");
    assert!(
        t0.elapsed() < Duration::from_secs(30),
        "{tool}: {:?}",
        t0.elapsed()
    );
    assert!(
        !msg.trim().is_empty() && !msg.contains("panicked"),
        "{tool}: {msg}"
    );
    eprintln!(
        "persistent on {tool}: {attempts} attempts in {} ms: {msg}",
        t0.elapsed().as_millis()
    );
    msg
}

#[tokio::test]
async fn read_tools_survive_a_transient_503() {
    transient_matrix(
        |p| rule("GET", p, FaultEffect::Status, Some(1)),
        "503",
        |_| true,
    )
    .await;
}

#[tokio::test]
async fn read_tools_survive_a_429_with_retry_after() {
    transient_matrix(
        |p| {
            let mut r = rule("GET", p, FaultEffect::Status, Some(1));
            r.status = Some(429);
            r.retry_after_s = Some(1);
            r
        },
        "429",
        |_| true,
    )
    .await;
}

#[tokio::test]
async fn read_tools_survive_an_answer_slower_than_the_timeout() {
    transient_matrix(
        |p| {
            let mut r = rule("GET", p, FaultEffect::Delay, Some(1));
            r.delay_ms = Some(SLOW_MS);
            r
        },
        "slow",
        // Traces calls have their own timeout (120 s, not shortened by --request-timeout-s):
        // a slow answer there is waited for, not retried.
        |tool| tool != "list_traces",
    )
    .await;
}

#[tokio::test]
async fn read_tools_survive_a_connection_reset() {
    transient_matrix(
        |p| rule("GET", p, FaultEffect::Reset, Some(1)),
        "reset",
        |_| true,
    )
    .await;
}

#[tokio::test]
async fn a_fault_that_persists_is_a_clear_error_after_bounded_attempts() {
    let (w, c, run) = world().await;
    let m = persistent(&w, &c, "get_run", json!({"run_id": run}), None, |p| {
        rule("GET", p, FaultEffect::Status, None)
    })
    .await;
    assert!(m.contains("503"), "{m}");
    // whoami asks who the key is and which teams it can act for at once; only the first
    // failing makes the call fail (the teams are then a note).
    let m = persistent(
        &w,
        &c,
        "whoami",
        json!({}),
        Some("/api/v1/user/whoami"),
        |p| {
            let mut r = rule("GET", p, FaultEffect::Status, None);
            r.status = Some(429);
            r.retry_after_s = Some(1);
            r
        },
    )
    .await;
    assert!(
        m.contains("429") || m.to_lowercase().contains("rate"),
        "{m}"
    );
    let m = persistent(&w, &c, "get_logs", json!({"run_id": run}), None, |p| {
        let mut r = rule("GET", p, FaultEffect::Delay, None);
        r.delay_ms = Some(SLOW_MS);
        r
    })
    .await;
    assert!(m.to_lowercase().contains("time"), "{m}");
    let m = persistent(&w, &c, "list_traces", json!({"run_id": run}), None, |p| {
        rule("GET", p, FaultEffect::Reset, None)
    })
    .await;
    assert!(m.len() > 10, "{m}");
    // Once the platform is healthy again, the same calls work.
    ok(&call(&c, "get_run", json!({"run_id": run})).await);
    ok(&call(&c, "list_traces", json!({"run_id": run})).await);
    c.cancel().await.unwrap();
}

fn stop_puts(w: &World, run: &str) -> usize {
    w.sandbox
        .request_log()
        .iter()
        .filter(|r| r.method == "PUT" && r.path.ends_with(&format!("{run}/stop")))
        .count()
}

fn status(w: &World, run: &str) -> String {
    w.sandbox.run(run).unwrap()["run"]["status"]
        .as_str()
        .unwrap()
        .to_string()
}

/// stop_run sends its PUT once whatever the platform does; a lost answer is found out by
/// reading the run, never by sending the stop again.
#[tokio::test]
async fn stop_run_is_never_retried_blindly() {
    let w = World::new().await;
    let c = w.client(0, SERVE_ARGS, Era::Modern).await;
    let effects: Vec<(&str, FaultRule)> = {
        let mut e503 = FaultRule::new("", FaultEffect::Status);
        e503.status = Some(503);
        let mut e429 = FaultRule::new("", FaultEffect::Status);
        e429.status = Some(429);
        e429.retry_after_s = Some(1);
        let mut slow = FaultRule::new("", FaultEffect::DelayAfterCommit);
        slow.delay_ms = Some(SLOW_MS);
        vec![
            ("503", e503),
            ("429", e429),
            ("reset", FaultRule::new("", FaultEffect::Reset)),
            ("slow-after-commit", slow),
            (
                "drop-after-commit",
                FaultRule::new("", FaultEffect::DropAfterCommit),
            ),
        ]
    };
    for (label, template) in effects {
        let run = w.create_run(0, &format!("stop-{label}"), 50, None).await;
        w.advance(20);
        assert_eq!(status(&w, &run), "RUNNING");
        let mut r = template.clone();
        r.path = format!("/api/v1/rft/runs/{run}/stop");
        r.method = Some("PUT".into());
        r.times = Some(1);
        w.sandbox.add_fault(r);
        let first = call(&c, "stop_run", json!({"run_id": run, "wait": false})).await;
        let msg = err(&first);
        assert_eq!(stop_puts(&w, &run), 1, "{label}: the stop was sent again");
        assert!(msg.contains("get_run"), "{label}: {msg}");
        let committed = matches!(
            template.effect,
            FaultEffect::DropAfterCommit | FaultEffect::DelayAfterCommit
        );
        assert_eq!(
            status(&w, &run),
            if committed { "STOPPED" } else { "RUNNING" },
            "{label}"
        );
        // Calling again (as the error suggests after get_run) stops it, or sees it stopped.
        let again = ok(&call(&c, "stop_run", json!({"run_id": run})).await);
        assert_eq!(again["status"], "STOPPED", "{label}");
        assert_eq!(again["already_stopped"], committed, "{label}");
        assert_eq!(
            stop_puts(&w, &run),
            if committed { 1 } else { 2 },
            "{label}"
        );
        eprintln!("stop_run under {label}: {msg}");
    }
    // A fault on stop_run's initial read is retried like any read; the stop still goes once.
    let run = w.create_run(0, "stop-read-503", 50, None).await;
    w.advance(20);
    w.sandbox.add_fault(rule(
        "GET",
        &format!("/api/v1/rft/runs/{run}"),
        FaultEffect::Status,
        Some(1),
    ));
    let out = ok(&call(&c, "stop_run", json!({"run_id": run})).await);
    assert_eq!(out["status"], "STOPPED");
    assert_eq!(stop_puts(&w, &run), 1);
    c.cancel().await.unwrap();
}

/// A raw trace download cut half-way (full Content-Length, half the body) never leaves a file
/// under the final name; the next call completes it, byte-identical to what the platform serves.
#[tokio::test]
async fn a_cut_trace_download_leaves_no_complete_looking_file_and_resumes() {
    let w = World::new().await;
    let run = w.create_run(0, "cut-traces", 10, None).await;
    w.advance(30);
    let c = w.client(0, SERVE_ARGS, Era::Modern).await;
    let listed = ok(&call(&c, "list_traces", json!({"run_id": run, "step": 2})).await);
    let ids: Vec<String> = listed["traces"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["trace_id"].as_str().unwrap().to_string())
        .collect();
    assert!(ids.len() >= 2, "{listed}");
    // Every download of the first trace is cut (a retry would be cut too); the others are cut once.
    let victim = ids[0].clone();
    let mut cut = rule(
        "GET",
        &format!("/api/v1/traces/{victim}"),
        FaultEffect::CutBody,
        None,
    );
    cut.times = None;
    w.sandbox.add_fault(cut);
    w.sandbox.add_fault(rule(
        "GET",
        &format!("/api/v1/traces/{}", ids[1]),
        FaultEffect::CutBody,
        Some(1),
    ));

    let first = call(
        &c,
        "fetch_traces",
        json!({"run_id": run, "dest_dir": "traces", "step": 2}),
    )
    .await;
    let dir = w.workspace.path().join("traces");
    let victim_path = dir.join(format!("{victim}.json"));
    // Either the call fails as a whole, or it reports the trace as not downloaded: never as done.
    if first.is_error != Some(true) {
        let out = ok(&first);
        let nd = out["not_downloaded"].as_array().unwrap();
        assert!(nd.iter().any(|n| n["trace_id"] == victim.as_str()), "{out}");
        let manifest = std::fs::read_to_string(out["manifest"].as_str().unwrap()).unwrap();
        assert!(
            !manifest.contains(&format!("\"{victim}\"")),
            "a cut trace listed as fetched: {manifest}"
        );
        eprintln!("cut_body: {}", nd[0]["reason"]);
    }
    assert!(
        !victim_path.exists(),
        "a cut download was left under its final name"
    );
    let leftovers: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| !n.ends_with(".json") && n != "traces-manifest.jsonl")
        .collect();
    assert!(leftovers.is_empty(), "partial files left: {leftovers:?}");

    // The platform recovers; a second call downloads what is missing and skips the rest.
    w.sandbox.clear_faults();
    let second = ok(&call(
        &c,
        "fetch_traces",
        json!({"run_id": run, "dest_dir": "traces", "step": 2}),
    )
    .await);
    assert!(
        second["not_downloaded"].as_array().unwrap().is_empty(),
        "{second}"
    );
    assert!(second["downloaded"].as_u64().unwrap() >= 1);
    let http = reqwest::Client::new();
    for id in &ids {
        let on_disk = std::fs::read(dir.join(format!("{id}.json"))).unwrap();
        let served = http
            .get(format!(
                "{}/api/v1/traces/{id}?raw=true",
                w.sandbox.base_url()
            ))
            .bearer_auth(w.key(0))
            .send()
            .await
            .unwrap()
            .bytes()
            .await
            .unwrap();
        assert_eq!(
            on_disk,
            served.to_vec(),
            "{id} differs from the platform's document"
        );
    }
    c.cancel().await.unwrap();
}
