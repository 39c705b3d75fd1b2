//! Traces as the CLI finds them, end to end (the real binary, an rmcp client, the sandbox):
//! `list_traces` filters, its total (exact or a lower bound), `limit` counting traces with a
//! step, the missing-upload check (in `list_traces` and `run_report`), and `fetch_traces` past
//! its cap — how many of how many, the continuation, the manifest — and the size of both
//! default answers at 600 traces.

mod common;

use std::collections::{BTreeMap, BTreeSet};

use common::{Client, Era, World, call, err, ok, text};
use serde_json::{Value, json};

/// A run whose name makes the sandbox fail about a quarter of its rollouts and lose the
/// uploads of steps 6-8 and every 13th step, training on two environments.
async fn flaky_run(w: &World, name: &str, max_steps: u32) -> String {
    let body = json!({
        "config": {
            "name": name,
            "max_steps": max_steps,
            "model": {"name": "PrimeIntellect/Qwen3-0.6B-Reverse-Text-SFT"},
            "orchestrator": {
                "batch_size": 8,
                "train": {"source": [
                    {"env": {"taskset": {"id": "reverse-text"}}},
                    {"env": {"taskset": {"id": "alphabet-sort"}}}
                ]}
            },
            "trainer": {},
            "inference": {}
        },
        "name": name,
    });
    let resp = reqwest::Client::new()
        .post(format!("{}/api/v1/training/runs", w.sandbox.base_url()))
        .bearer_auth(w.key(0))
        .json(&body)
        .send()
        .await
        .unwrap();
    let status = resp.status();
    let v: Value = resp.json().await.unwrap();
    assert!(status.is_success(), "{status} {v}");
    v["runId"].as_str().unwrap().to_string()
}

/// Seconds of simulated time until a run of `steps` steps has completed them (2 s queued, 3 s
/// pending, 2 s a step).
fn secs_for(steps: u64) -> u64 {
    5 + 2 * steps + 2
}

/// Every page of a listing, following `next_cursor`; the pages' answers too.
async fn all_pages(c: &Client, args: Value) -> (Vec<Value>, Vec<Value>) {
    let mut items = Vec::new();
    let mut pages = Vec::new();
    let mut args = args;
    for _ in 0..200 {
        let page = ok(&call(c, "list_traces", args.clone()).await);
        items.extend(page["traces"].as_array().unwrap().iter().cloned());
        let next = page["next_cursor"].clone();
        pages.push(page);
        if next.is_null() {
            return (items, pages);
        }
        args["cursor"] = next;
    }
    panic!("the listing never ended");
}

fn ids(items: &[Value]) -> BTreeSet<String> {
    items
        .iter()
        .map(|t| t["trace_id"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test]
async fn list_traces_filters_as_the_cli_does_and_counts_what_it_cannot_see() {
    let w = World::new().await;
    let run = flaky_run(&w, "flaky-upload-gap", 30).await;
    w.advance(secs_for(30));
    let c = w.client(0, &[], Era::Modern).await;

    // Unfiltered: the total is the service's trace count, exact; 25 steps uploaded of 30.
    let first = ok(&call(&c, "list_traces", json!({"run_id": run})).await);
    assert_eq!(first["traces"].as_array().unwrap().len(), 10, "{first}");
    assert_eq!(first["total"], 100, "{first}");
    assert_eq!(first["total_is_lower_bound"], false);
    let summary = text(&call(&c, "list_traces", json!({"run_id": run})).await);
    assert!(summary.contains("1-10 of 100"), "{summary}");
    // The missing-upload check: steps 6-8, 13 and 26 never uploaded.
    assert_eq!(
        first["missing_uploads"],
        json!({"checked_through": 30, "count": 5, "ranges": "6-8, 13, 26"}),
        "{first}"
    );
    assert!(
        summary.contains("5 step(s) through 30 have no traces: 6-8, 13, 26"),
        "{summary}"
    );

    let (all, _) = all_pages(&c, json!({"run_id": run, "limit": 40})).await;
    assert_eq!(all.len(), 100);
    assert_eq!(ids(&all).len(), 100, "no trace twice");
    let expect = |pred: &dyn Fn(&Value) -> bool| -> BTreeSet<String> {
        ids(&all.iter().filter(|t| pred(t)).cloned().collect::<Vec<_>>())
    };
    let errored = expect(&|t| t["has_error"] == true);
    assert!(
        errored.len() >= 10 && errored.len() <= 50,
        "a flaky run fails some rollouts: {}",
        errored.len()
    );
    let task = all[0]["task_id"].as_str().unwrap().to_string();
    let cases: Vec<(Value, BTreeSet<String>)> = vec![
        (json!({"has_error": true}), errored.clone()),
        (
            json!({"has_error": false}),
            expect(&|t| t["has_error"] == false),
        ),
        (json!({"outcome": "error"}), errored.clone()),
        (
            json!({"outcome": "success"}),
            expect(&|t| t["outcome"] == "success"),
        ),
        (
            json!({"outcome": "failure"}),
            expect(&|t| t["outcome"] == "failure"),
        ),
        (
            json!({"reward_min": 0.5}),
            expect(&|t| t["reward"].as_f64().is_some_and(|r| r >= 0.5)),
        ),
        (
            json!({"reward_min": 0.2, "reward_max": 0.6}),
            expect(&|t| {
                t["reward"]
                    .as_f64()
                    .is_some_and(|r| (0.2..=0.6).contains(&r))
            }),
        ),
        (
            json!({"environment_id": "alphabet-sort"}),
            expect(&|t| t["environment_id"] == "alphabet-sort"),
        ),
        (
            json!({"task_id": task}),
            expect(&|t| t["task_id"] == task.as_str()),
        ),
        (
            json!({"has_error": false, "environment_id": "reverse-text", "reward_max": 0.7}),
            expect(&|t| {
                t["has_error"] == false
                    && t["environment_id"] == "reverse-text"
                    && t["reward"].as_f64().is_some_and(|r| r <= 0.7)
            }),
        ),
    ];
    for (filter, want) in cases {
        assert!(
            !want.is_empty() && want.len() < 100,
            "{filter}: {}",
            want.len()
        );
        let mut args = filter.clone();
        args["run_id"] = json!(run);
        args["limit"] = json!(7);
        let (got, pages) = all_pages(&c, args).await;
        assert_eq!(ids(&got), want, "{filter}");
        assert_eq!(got.len(), want.len(), "{filter}: a trace listed twice");
        // Filtered: a lower bound until the last page, which knows the count.
        let last = pages.last().unwrap();
        assert_eq!(last["total"], want.len(), "{filter}: {last}");
        assert_eq!(last["total_is_lower_bound"], false, "{filter}");
        if pages.len() > 1 {
            assert_eq!(pages[0]["total_is_lower_bound"], true, "{filter}");
            assert_eq!(pages[0]["total"], 7, "{filter}");
        }
    }
    // The wording of a lower bound.
    let r = call(
        &c,
        "list_traces",
        json!({"run_id": run, "has_error": false, "limit": 5}),
    )
    .await;
    let t = text(&r);
    assert!(
        t.contains("at least 5 (a lower bound: filtered, more pages follow)"),
        "{t}"
    );
    assert!(t.contains("(without errors)"), "{t}");
    c.cancel().await.unwrap();
}

#[tokio::test]
async fn with_a_step_limit_counts_traces_not_episodes() {
    let w = World::new().await;
    let run = flaky_run(&w, "flaky-step", 10).await;
    w.advance(secs_for(10));
    let c = w.client(0, &[], Era::Modern).await;

    // Step 2 holds 4 traces in 2 episodes: `limit: 3` gives 3 traces (the CLI's --run-step
    // would give 3 episodes), the next page the last one.
    let page = ok(&call(
        &c,
        "list_traces",
        json!({"run_id": run, "step": 2, "limit": 3}),
    )
    .await);
    assert_eq!(page["traces"].as_array().unwrap().len(), 3, "{page}");
    assert_eq!(page["total"], 4, "{page}");
    assert_eq!(page["total_is_lower_bound"], false);
    let rest = ok(&call(
        &c,
        "list_traces",
        json!({"run_id": run, "step": 2, "limit": 3, "cursor": page["next_cursor"]}),
    )
    .await);
    assert_eq!(rest["traces"].as_array().unwrap().len(), 1, "{rest}");
    assert!(rest["next_cursor"].is_null());
    let mut got = ids(page["traces"].as_array().unwrap());
    got.extend(ids(rest["traces"].as_array().unwrap()));
    let want: BTreeSet<String> = (0..4).map(|i| format!("tr-{run}-00002-{i}")).collect();
    assert_eq!(got, want);
    // One trace per page walks the step's episodes one trace at a time.
    let (one_by_one, pages) = all_pages(&c, json!({"run_id": run, "step": 2, "limit": 1})).await;
    assert_eq!(ids(&one_by_one), want);
    assert_eq!(pages.len(), 4);
    // Filters apply within the step too.
    let (ok_only, _) = all_pages(
        &c,
        json!({"run_id": run, "step": 4, "has_error": false, "limit": 1}),
    )
    .await;
    assert!(ok_only.iter().all(|t| t["has_error"] == false));
    assert!(ok_only.len() < 4, "step 4 always has a failed rollout");

    // A cursor belongs to its listing; bad filters are refused before anything is asked.
    let m = err(&call(
        &c,
        "list_traces",
        json!({"run_id": run, "step": 3, "cursor": page["next_cursor"]}),
    )
    .await);
    assert!(m.contains("another listing"), "{m}");
    let before = w.sandbox.request_log().len();
    for (args, field) in [
        (
            json!({"environment_id": "a&has_error=true"}),
            "environment_id",
        ),
        (json!({"task_id": "t\u{1b}[2J"}), "task_id"),
        (json!({"reward_min": 0.9, "reward_max": 0.1}), "reward_min"),
        // The schema's refusal lists the outcomes there are.
        (json!({"outcome": "weird"}), "`success`, `failure`, `error`"),
        (json!({"cursor": "o20"}), "cursor"),
    ] {
        let mut a = args.clone();
        a["run_id"] = json!(run);
        let m = err(&call(&c, "list_traces", a).await);
        assert!(m.contains(field), "{args}: {m}");
        assert!(!m.contains('\u{1b}'), "{m:?}");
    }
    assert_eq!(
        w.sandbox.request_log().len(),
        before,
        "a refused argument reached the platform"
    );
    c.cancel().await.unwrap();
}

#[tokio::test]
async fn run_report_names_the_steps_whose_uploads_are_missing() {
    let w = World::new().await;
    let gap = flaky_run(&w, "report-upload-gap", 30).await;
    let healthy = w.create_run(0, "report-healthy", 10, None).await;
    w.advance(secs_for(30));
    let c = w.client(0, &[], Era::Modern).await;
    let rep = ok(&call(&c, "run_report", json!({"run_id": gap})).await);
    assert_eq!(
        rep["traces"]["missing_uploads"],
        json!({"checked_through": 30, "count": 5, "ranges": "6-8, 13, 26"}),
        "{rep}"
    );
    let rep = ok(&call(&c, "run_report", json!({"run_id": healthy})).await);
    assert_eq!(
        rep["traces"]["missing_uploads"],
        json!({"checked_through": 10, "count": 0, "ranges": ""}),
        "{rep}"
    );
    let listed = ok(&call(&c, "list_traces", json!({"run_id": healthy})).await);
    assert_eq!(listed["missing_uploads"]["count"], 0, "{listed}");
    c.cancel().await.unwrap();
}

/// The manifest's lines: trace id → (file, bytes).
fn manifest(out: &Value) -> (Vec<String>, BTreeMap<String, (String, u64)>) {
    let path = out["manifest"].as_str().expect("a manifest path");
    let text = std::fs::read_to_string(path).unwrap();
    let mut order = Vec::new();
    let mut map = BTreeMap::new();
    for line in text.lines() {
        let v: Value = serde_json::from_str(line).unwrap();
        let id = v["trace_id"].as_str().unwrap().to_string();
        order.push(id.clone());
        map.insert(
            id,
            (
                v["file"].as_str().unwrap().to_string(),
                v["bytes"].as_u64().unwrap(),
            ),
        );
    }
    (order, map)
}

#[tokio::test]
async fn fetch_traces_past_its_cap_says_how_many_of_how_many_and_continues() {
    let w = World::new().await;
    let run = flaky_run(&w, "fetch-cap", 10).await;
    w.advance(secs_for(10));
    let c = w.client(0, &[], Era::Modern).await;
    let args = json!({"run_id": run, "dest_dir": "traces", "limit": 15});

    let r = call(&c, "fetch_traces", args.clone()).await;
    let first = ok(&r);
    assert_eq!(first["listed"], 15, "{first}");
    assert_eq!(first["fetched_so_far"], 15);
    assert_eq!(first["total"], 40);
    assert!(first["next_cursor"].is_string(), "{first}");
    let t = text(&r);
    assert!(t.contains("15 of 40 fetched so far"), "{t}");
    assert!(t.contains("stopped at the cap of 15"), "{t}");
    assert!(t.contains("cursor = next_cursor"), "{t}");

    let mut cursor = first["next_cursor"].clone();
    let mut calls = 1;
    let mut last = first.clone();
    while !cursor.is_null() {
        let mut a = args.clone();
        a["cursor"] = cursor;
        last = ok(&call(&c, "fetch_traces", a).await);
        cursor = last["next_cursor"].clone();
        calls += 1;
        assert!(calls <= 5, "{last}");
    }
    assert_eq!(calls, 3);
    assert_eq!(last["listed"], 10, "{last}");
    assert_eq!(last["fetched_so_far"], 40);
    assert_eq!(last["downloaded"], 10);

    // The manifest lists every file once, each as it is on disk, and nothing else is there.
    let (order, files) = manifest(&last);
    assert_eq!(order.len(), 40);
    assert_eq!(files.len(), 40, "a trace listed twice");
    let dir = w.workspace_path().join("traces");
    let mut on_disk: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    on_disk.sort();
    let mut want: Vec<String> = files.values().map(|(f, _)| f.clone()).collect();
    want.push("traces-manifest.jsonl".into());
    want.sort();
    assert_eq!(on_disk, want);
    let http = reqwest::Client::new();
    for (id, (file, bytes)) in &files {
        let data = std::fs::read(dir.join(file)).unwrap();
        assert_eq!(data.len() as u64, *bytes, "{id}");
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
        assert_eq!(data, served.to_vec(), "{id}");
    }
    // Fetching again from the start downloads nothing and keeps one line per trace.
    let again = ok(&call(
        &c,
        "fetch_traces",
        json!({"run_id": run, "dest_dir": "traces"}),
    )
    .await);
    assert_eq!(again["downloaded"], 0);
    assert_eq!(again["skipped"], 40);
    assert!(again["next_cursor"].is_null());
    assert_eq!(manifest(&again).0.len(), 40);
    // A step's traces, continued the same way.
    let step = ok(&call(
        &c,
        "fetch_traces",
        json!({"run_id": run, "dest_dir": "step3", "step": 3, "limit": 3}),
    )
    .await);
    assert_eq!(
        (step["listed"].clone(), step["total"].clone()),
        (json!(3), json!(4))
    );
    let rest = ok(&call(
        &c,
        "fetch_traces",
        json!({"run_id": run, "dest_dir": "step3", "step": 3, "limit": 3, "cursor": step["next_cursor"]}),
    )
    .await);
    assert_eq!(rest["listed"], 1);
    assert!(rest["next_cursor"].is_null());
    assert_eq!(manifest(&rest).1.len(), 4);
    c.cancel().await.unwrap();
}

#[tokio::test]
async fn default_trace_answers_stay_small_at_600_traces() {
    let w = World::new().await;
    let run = w.create_run(0, "six-hundred", 150, None).await;
    w.advance(secs_for(150));
    let c = w.client(0, &[], Era::Modern).await;

    let listed = call(&c, "list_traces", json!({"run_id": run})).await;
    assert_eq!(ok(&listed)["total"], 600);
    let old_default = call(&c, "list_traces", json!({"run_id": run, "limit": 20})).await;
    let fetched = call(
        &c,
        "fetch_traces",
        json!({"run_id": run, "dest_dir": "t600"}),
    )
    .await;
    let out = ok(&fetched);
    assert_eq!(out["listed"], 600);
    assert_eq!(manifest(&out).1.len(), 600);
    let (l, l20, f) = (
        text(&listed).len(),
        text(&old_default).len(),
        text(&fetched).len(),
    );
    eprintln!("bytes at 600 traces: list_traces {l} (limit 20: {l20}), fetch_traces {f}");
    assert!(l <= 4096, "list_traces answered {l} bytes");
    assert!(f <= 4096, "fetch_traces answered {f} bytes");
    c.cancel().await.unwrap();
}

/// The official `prime` CLI, when the interop peers are installed (`FACTORY_MCP_INTEROP_DIR`);
/// `None` after a skip note, except under CI, where it is a failure.
fn prime_cli() -> Option<std::path::PathBuf> {
    let found = std::env::var_os("FACTORY_MCP_INTEROP_DIR")
        .map(|d| std::path::PathBuf::from(d).join("venv/bin/prime"))
        .filter(|p| p.is_file());
    if found.is_none() {
        assert!(
            std::env::var("CI").map_or(true, |v| v.is_empty() || v == "false" || v == "0"),
            "CI is set but the prime CLI is missing: run scripts/setup-interop.sh and export FACTORY_MCP_INTEROP_DIR"
        );
        eprintln!(
            "SKIP: prime CLI not found (set FACTORY_MCP_INTEROP_DIR; see scripts/setup-interop.sh)"
        );
    }
    found
}

/// Every trace id `prime traces list --run-id <run> <flags> -o json` lists, page by page.
async fn cli_ids(
    bin: &std::path::Path,
    w: &World,
    home: &std::path::Path,
    run: &str,
    flags: &[&str],
) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut cursor: Option<String> = None;
    for _ in 0..50 {
        let mut args: Vec<String> = [
            "traces", "list", "--run-id", run, "--limit", "100", "-o", "json",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        args.extend(flags.iter().map(|s| s.to_string()));
        if let Some(c) = &cursor {
            args.extend(["--cursor".to_string(), c.clone()]);
        }
        let run = tokio::process::Command::new(bin)
            .args(&args)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", home)
            .env("PRIME_API_BASE_URL", w.sandbox.base_url())
            .env("PRIME_TRACES_URL", w.sandbox.base_url())
            .env("PRIME_API_KEY", w.key(0))
            .env("PRIME_DISABLE_VERSION_CHECK", "1")
            .env("NO_COLOR", "1")
            .stdin(std::process::Stdio::null())
            .kill_on_drop(true)
            .output();
        let o = tokio::time::timeout(std::time::Duration::from_secs(120), run)
            .await
            .expect("prime answers within 120 s")
            .expect("prime runs");
        assert!(
            o.status.success(),
            "prime {args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let v: Value = serde_json::from_slice(&o.stdout).unwrap();
        out.extend(ids(v["items"].as_array().unwrap()));
        match v["next_cursor"].as_str() {
            Some(c) => cursor = Some(c.to_string()),
            None => return out,
        }
    }
    panic!("the CLI's listing never ended");
}

/// Interop: `list_traces` finds what `prime traces list` finds with the same filters, both
/// against the sandbox, so the tool, the CLI and the simulated service agree on the wire.
#[tokio::test]
async fn list_traces_agrees_with_the_prime_cli_filter_by_filter() {
    let Some(bin) = prime_cli() else { return };
    let w = World::new().await;
    let run = flaky_run(&w, "flaky-interop", 20).await;
    w.advance(secs_for(20));
    let c = w.client(0, &[], Era::Modern).await;
    let home = tempfile::tempdir().unwrap();
    let cases: Vec<(Value, Vec<&str>)> = vec![
        (json!({}), vec![]),
        (json!({"has_error": true}), vec!["--has-error"]),
        (json!({"has_error": false}), vec!["--no-has-error"]),
        (json!({"outcome": "success"}), vec!["--outcome", "success"]),
        (json!({"outcome": "error"}), vec!["--outcome", "error"]),
        (
            json!({"reward_min": 0.3, "reward_max": 0.8}),
            vec!["--reward-min", "0.3", "--reward-max", "0.8"],
        ),
        (
            json!({"environment_id": "alphabet-sort"}),
            vec!["--environment-id", "alphabet-sort"],
        ),
        (
            json!({"task_id": "task-014"}),
            vec!["--task-id", "task-014"],
        ),
    ];
    for (filter, flags) in cases {
        let mut args = filter.clone();
        args["run_id"] = json!(run);
        args["limit"] = json!(40);
        let (ours, _) = all_pages(&c, args).await;
        let theirs = cli_ids(&bin, &w, home.path(), &run, &flags).await;
        assert_eq!(ids(&ours), theirs, "{filter} vs prime {flags:?}");
        eprintln!("{filter}: {} trace(s), as the CLI lists", theirs.len());
    }
    c.cancel().await.unwrap();
}
