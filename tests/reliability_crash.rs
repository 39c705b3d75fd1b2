//! Crash safety (issue 9 §4): the server killed with SIGKILL while a create is in flight, then
//! restarted, reconciles with the platform and never creates a second run; a torn write of the
//! journal (the SQLite write-ahead log cut mid-frame at many points) or of a trace file is
//! detected and never taken for complete.
//!
//! SIGKILL of the store mid-transaction is in `policies/tests/store_processes.rs`; a client
//! that cancels mid-dispatch is in `e2e_launch.rs` h.

mod common;

use common::{plan_mode_args, rl_config as config};

use std::{path::Path, time::Duration};

use common::{Era, PlainClient, World, call, connect, ok, text};
use factory_sandbox::{FaultEffect, FaultRule};
use rmcp::model::CallToolRequestParams;
use serde_json::{Value, json};

const TEAM: &str = factory_sandbox::TEAM_ALPHA_ID;

fn runs_named(w: &World, name: &str) -> Vec<Value> {
    w.sandbox
        .runs()
        .into_iter()
        .filter(|r| r["run"]["name"] == name)
        .map(|r| r["run"].clone())
        .collect()
}

fn sigkill(pid: u32) {
    let st = std::process::Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()
        .expect("kill");
    assert!(st.success(), "kill -9 {pid}");
}

/// The environment of a server using `state_home` as XDG_STATE_HOME.
fn env_with_state(w: &World, state_home: &Path) -> Vec<(String, String)> {
    let mut env = w.env(0);
    for (k, v) in env.iter_mut() {
        if k == "XDG_STATE_HOME" {
            *v = state_home.display().to_string();
        }
    }
    env
}

#[tokio::test]
async fn a_server_killed_mid_dispatch_reconciles_after_restart_and_never_creates_a_second_run() {
    let w = World::new().await;
    let transport = w.transport(w.env(0), &plan_mode_args());
    let pid = transport.id().expect("child pid");
    let c = connect(PlainClient, transport, Era::Modern).await;
    let p = ok(&call(
        &c,
        "plan_run",
        json!({"config_toml": config("crash-run", 5), "team_id": TEAM}),
    )
    .await);
    let plan_id = p["plan_id"].as_str().unwrap().to_string();

    // The platform commits the create at once but answers only 5 s later.
    let mut rule = FaultRule::new("/api/v1/training/runs", FaultEffect::DelayAfterCommit);
    rule.method = Some("POST".into());
    rule.delay_ms = Some(5_000);
    rule.times = Some(1);
    w.sandbox.add_fault(rule);
    let peer = c.peer().clone();
    let params = CallToolRequestParams::new("launch_run")
        .with_arguments(json!({"plan_id": plan_id}).as_object().unwrap().clone());
    let in_flight = tokio::spawn(async move { peer.call_tool(params).await });

    // Wait (polling the sandbox, up to 120 s on a loaded machine) until the run exists, then
    // kill the server. An answer with no run is shown as it came.
    let mut seen = false;
    for _ in 0..4800 {
        if !runs_named(&w, "crash-run").is_empty() {
            seen = true;
            break;
        }
        if in_flight.is_finished() {
            panic!("answered before the create: {:?}", in_flight.await);
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert!(seen, "the create never reached the platform");
    assert!(!in_flight.is_finished(), "the answer came before the kill");
    sigkill(pid);
    let lost = tokio::time::timeout(Duration::from_secs(10), in_flight)
        .await
        .expect("the client notices");
    assert!(
        !matches!(lost, Ok(Ok(_))),
        "a killed server answered: {lost:?}"
    );
    drop(c);

    // Restart: the same plan gives back the one run, found on the platform.
    let c = w.client(0, &plan_mode_args(), Era::Modern).await;
    let r = call(&c, "launch_run", json!({"plan_id": plan_id})).await;
    let runs = runs_named(&w, "crash-run");
    assert_eq!(runs.len(), 1, "a second run was created");
    assert_eq!(w.sandbox.create_requests(), 1);
    // The run the dead server created is found on the platform and returned.
    let out = ok(&r);
    assert_eq!(out["run_id"], runs[0]["id"], "{}", text(&r));
    // And again: now straight from the journal.
    let again = ok(&call(&c, "launch_run", json!({"plan_id": plan_id})).await);
    assert_eq!(again["run_id"], runs[0]["id"]);
    assert_eq!(again["deduplicated"], true);
    assert_eq!(w.sandbox.create_requests(), 1);
    c.cancel().await.unwrap();
}

const WAL_HEADER: u64 = 32;

/// A copy of the state directory in `to` as a crash would leave it: the files as they are
/// (the shared-memory index left out: SQLite rebuilds it from the WAL on open) with `wal` as
/// the write-ahead log.
fn copy_state(state: &Path, to: &Path, wal: &[u8]) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(state).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.ends_with("-shm") || name.ends_with("-wal") {
            continue;
        }
        if entry.file_type().unwrap().is_file() {
            std::fs::copy(entry.path(), to.join(&name)).unwrap();
        }
    }
    std::fs::write(to.join("state.sqlite3-wal"), wal).unwrap();
}
const FRAME_HEADER: u64 = 24;

/// The journal is SQLite in WAL mode (`synchronous=FULL`): the dispatch claim is on disk before
/// the create is sent, and a crash tears at most what was written after it. Launch once, kill
/// the server (so the WAL is not checkpointed away), then for cut points across everything
/// written after the claim (mid-frame: a torn write), restart on a copy of the state with the
/// WAL cut there. Every restart must return the one run, from the journal or by reconciliation,
/// and none may create a run.
#[tokio::test]
async fn a_journal_torn_after_the_claim_never_causes_a_second_run() {
    let w = World::new().await;
    let transport = w.transport(w.env(0), &plan_mode_args());
    let pid = transport.id().expect("child pid");
    let c = connect(PlainClient, transport, Era::Modern).await;
    let p = ok(&call(
        &c,
        "plan_run",
        json!({"config_toml": config("torn-run", 5), "team_id": TEAM}),
    )
    .await);
    let plan_id = p["plan_id"].as_str().unwrap().to_string();
    let state = w.state_dir();
    // Time passes between plan and launch, so the run-list cache's watermark moves and
    // launch_run writes the cache before it claims (as on a slow machine): the claim must be
    // found by its content, not by its place.
    w.advance(5);
    let wal_path = state.join("state.sqlite3-wal");
    let before_launch = std::fs::metadata(&wal_path)
        .expect("WAL while the server runs")
        .len();
    let launched = ok(&call(&c, "launch_run", json!({"plan_id": plan_id})).await);
    let run_id = launched["run_id"].clone();
    sigkill(pid);
    drop(c);
    assert_eq!(w.sandbox.create_requests(), 1);

    let wal = std::fs::read(&wal_path).expect("a WAL survives SIGKILL");
    let page_size = u32::from_be_bytes(wal[8..12].try_into().unwrap()) as u64;
    let frame = FRAME_HEADER + page_size;
    let frames = (wal.len() as u64 - WAL_HEADER) / frame;
    let first_new = (before_launch.saturating_sub(WAL_HEADER)) / frame;
    assert!(first_new < frames, "launch_run wrote nothing to the WAL");
    // The claim is the first transaction after the plan whose commit puts the plan's dispatch
    // record in the journal. It need not be launch_run's first one: the run-list cache may be
    // brought up to date before it (its watermark follows the platform's clock). Found by
    // opening copies of the state cut after each commit frame and reading the journal.
    let is_commit = |k: u64| {
        let at = (WAL_HEADER + k * frame) as usize;
        u32::from_be_bytes(wal[at + 4..at + 8].try_into().unwrap()) != 0
    };
    let claim = (first_new..frames)
        .filter(|&k| is_commit(k))
        .find(|&k| {
            let dir = tempfile::tempdir().unwrap();
            copy_state(
                &state,
                dir.path(),
                &wal[..(WAL_HEADER + (k + 1) * frame) as usize],
            );
            let store = factory_policies::store::Store::open(dir.path()).expect("open a copy");
            store
                .dispatch(&plan_id)
                .expect("read the journal")
                .is_some()
        })
        .expect("a commit that claims the dispatch");
    let after: Vec<u64> = (claim + 1..frames).collect();
    assert!(!after.is_empty(), "nothing was written after the claim");
    // Cut points: mid-frame in frames spread over what followed the claim, always including
    // the first and the last one; plus a clean cut right after the claim.
    let samples = 6usize.min(after.len());
    let mut cuts: Vec<u64> = (0..samples)
        .map(|i| after[i * (after.len() - 1) / (samples - 1).max(1)])
        .map(|k| WAL_HEADER + k * frame + FRAME_HEADER + page_size / 2)
        .collect();
    cuts.push(WAL_HEADER + (claim + 1) * frame);
    cuts.dedup();
    let mut outcomes = Vec::new();
    let mut problems = Vec::new();
    for cut in &cuts {
        let home = tempfile::tempdir().unwrap();
        copy_state(
            &state,
            &home.path().join("factory-mcp"),
            &wal[..*cut as usize],
        );
        let c = connect(
            PlainClient,
            w.transport(env_with_state(&w, home.path()), &plan_mode_args()),
            Era::Modern,
        )
        .await;
        let r = call(&c, "launch_run", json!({"plan_id": plan_id})).await;
        let t = text(&r);
        if r.is_error == Some(true) {
            problems.push(format!(
                "cut at {cut}: refused instead of returning the run: {t}"
            ));
            outcomes.push(format!("cut {cut}: refused"));
        } else if ok(&r)["run_id"] != run_id {
            problems.push(format!("cut at {cut}: another run: {t}"));
        } else {
            outcomes.push(format!("cut {cut}: same run"));
        }
        assert_eq!(
            w.sandbox.create_requests(),
            1,
            "cut at {cut}: a second run was created"
        );
        assert_eq!(runs_named(&w, "torn-run").len(), 1);
        c.cancel().await.unwrap();
    }
    eprintln!(
        "WAL of {frames} frames ({page_size}-byte pages), claim committed in frame {claim}: {}",
        outcomes.join("; ")
    );
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// A state database whose file is damaged makes launch_run refuse with advice; nothing is sent.
#[tokio::test]
async fn a_damaged_state_database_refuses_to_launch() {
    let w = World::new().await;
    let c = w.client(0, &plan_mode_args(), Era::Modern).await;
    let p = ok(&call(
        &c,
        "plan_run",
        json!({"config_toml": config("damaged-run", 5), "team_id": TEAM}),
    )
    .await);
    c.cancel().await.unwrap();
    let db = w.state_dir().join("state.sqlite3");
    let mut bytes = std::fs::read(&db).unwrap();
    for b in bytes.iter_mut().take(100) {
        *b = 0xA5;
    }
    std::fs::write(&db, bytes).unwrap();
    let c = w.client(0, &plan_mode_args(), Era::Modern).await;
    let r = call(&c, "launch_run", json!({"plan_id": p["plan_id"]})).await;
    assert_eq!(
        r.is_error,
        Some(true),
        "launched from a damaged database: {}",
        text(&r)
    );
    let t = text(&r);
    assert!(t.contains("state"), "{t}");
    assert_eq!(w.sandbox.create_requests(), 0);
    // Read tools keep working without the store.
    ok(&call(&c, "list_runs", json!({})).await);
    c.cancel().await.unwrap();
}

/// A trace file torn short (or emptied) is not taken for complete: the next fetch re-downloads
/// it, byte-identical to the platform's document.
#[tokio::test]
async fn a_torn_trace_file_is_detected_and_fetched_again() {
    let w = World::new().await;
    let run = w.create_run(0, "torn-traces", 10, None).await;
    w.advance(30);
    let c = w.client(0, &[], Era::Modern).await;
    let args = json!({"run_id": run, "dest_dir": "traces", "step": 2});
    let first = ok(&call(&c, "fetch_traces", args.clone()).await);
    let dir = std::path::Path::new(first["manifest"].as_str().unwrap())
        .parent()
        .unwrap()
        .to_path_buf();
    let files: Vec<String> = std::fs::read_to_string(first["manifest"].as_str().unwrap())
        .unwrap()
        .lines()
        .map(|l| {
            let f: serde_json::Value = serde_json::from_str(l).unwrap();
            dir.join(f["file"].as_str().unwrap()).display().to_string()
        })
        .collect();
    assert!(files.len() >= 2, "{first}");
    let originals: Vec<Vec<u8>> = files.iter().map(|f| std::fs::read(f).unwrap()).collect();
    // A write torn half-way, and one that never got past creating the file.
    std::fs::write(&files[0], &originals[0][..originals[0].len() / 2]).unwrap();
    std::fs::write(&files[1], b"").unwrap();
    let second = ok(&call(&c, "fetch_traces", args).await);
    assert_eq!(second["downloaded"], 2, "{second}");
    assert_eq!(
        second["skipped"].as_u64().unwrap() as usize,
        files.len() - 2
    );
    for (f, orig) in files.iter().zip(&originals) {
        assert_eq!(&std::fs::read(f).unwrap(), orig, "{f}");
    }
    c.cancel().await.unwrap();
}

/// Every regular file under `dir` (recursively) whose name ends with `.part` and holds bytes.
fn partial_files(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in entries.flatten() {
        let p = e.path();
        match e.file_type() {
            Ok(t) if t.is_dir() => out.extend(partial_files(&p)),
            Ok(t)
                if t.is_file()
                    && p.to_string_lossy().ends_with(".part")
                    && e.metadata().is_ok_and(|m| m.len() > 0) =>
            {
                out.push(p)
            }
            _ => {}
        }
    }
    out
}

/// The files in `dir` under a final name (not a hidden temporary one).
fn final_files(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| !n.starts_with('.'))
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// The server killed with SIGKILL in the middle of `fetch_traces` — downloads done, one held
/// half-way by the platform, others in flight — leaves only complete files under final names:
/// each byte-equal to what the platform serves, the half-downloaded one absent. A restarted
/// server's fetch skips them and completes the rest.
#[tokio::test]
async fn a_server_killed_mid_fetch_leaves_only_complete_files_under_final_names() {
    let w = World::new().await;
    let run = w.create_run(0, "killed-fetch", 12, None).await;
    w.advance(60);
    let http = reqwest::Client::new();
    let raw = |id: String| {
        let http = http.clone();
        let url = format!("{}/api/v1/traces/{id}?raw=true", w.sandbox.base_url());
        let key = w.key(0);
        async move {
            http.get(url)
                .bearer_auth(key)
                .send()
                .await
                .unwrap()
                .error_for_status()
                .unwrap()
                .bytes()
                .await
                .unwrap()
                .to_vec()
        }
    };
    let listed: Value = http
        .get(format!(
            "{}/api/v1/traces?run_id={run}&limit=100",
            w.sandbox.base_url()
        ))
        .bearer_auth(w.key(0))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let ids: Vec<String> = listed["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["trace_id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(ids.len(), 48, "{listed}");
    // The 12th trace (in the order fetch_traces takes them) is held half-way for 10 minutes
    // (the kill comes long before; the wait below is bounded only against a hang).
    let victim = ids[11].clone();
    let mut stall = FaultRule::new(format!("/api/v1/traces/{victim}"), FaultEffect::StallBody);
    stall.delay_ms = Some(600_000);
    stall.times = Some(1);
    w.sandbox.add_fault(stall);

    let env = w.env(0);
    let state_home = env
        .iter()
        .find(|(k, _)| k == "XDG_STATE_HOME")
        .map(|(_, v)| std::path::PathBuf::from(v))
        .unwrap();
    let transport = w.transport(env.clone(), &[]);
    let pid = transport.id().expect("child pid");
    let c = connect(PlainClient, transport, Era::Modern).await;
    let peer = c.peer().clone();
    let params = CallToolRequestParams::new("fetch_traces").with_arguments(
        json!({"run_id": run, "dest_dir": "traces"})
            .as_object()
            .unwrap()
            .clone(),
    );
    let in_flight = tokio::spawn(async move { peer.call_tool(params).await });

    // Wait (bounded) until the held download has started (its first half sent, on its way into
    // a temporary file) and the traces before it are in place, then kill the server there.
    let dest = w.workspace.path().join("traces");
    let victim_path = format!("/api/v1/traces/{victim}");
    let mut held = false;
    for _ in 0..12_000 {
        let started = w
            .sandbox
            .request_log()
            .iter()
            .any(|r| r.path == victim_path);
        if started && final_files(&dest).len() >= 11 {
            held = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert!(
        held,
        "the fetch never got half-way: {:?}",
        final_files(&dest)
    );
    assert!(!in_flight.is_finished(), "the answer came before the kill");
    sigkill(pid);
    let lost = tokio::time::timeout(Duration::from_secs(10), in_flight)
        .await
        .expect("the client notices");
    assert!(!matches!(lost, Ok(Ok(_))), "a killed server answered");
    drop(c);

    // Every file under a final name is complete: byte-equal to the platform's document.
    let on_disk = final_files(&dest);
    assert!(on_disk.len() >= 11, "{on_disk:?}");
    assert!(
        !on_disk.contains(&format!("{victim}.json")),
        "the half-downloaded trace is under its final name"
    );
    for name in &on_disk {
        let id = name
            .strip_suffix(".json")
            .unwrap_or_else(|| panic!("an unexpected file {name}"));
        assert!(ids.iter().any(|i| i == id), "{name}");
        assert_eq!(
            std::fs::read(dest.join(name)).unwrap(),
            raw(id.to_string()).await,
            "{name} is not the platform's document"
        );
    }
    eprintln!(
        "killed mid-fetch: {} of {} files complete, {} partial download(s) in staging",
        on_disk.len(),
        ids.len(),
        partial_files(&state_home).len()
    );

    // A restarted server skips the complete files and fetches the rest.
    w.sandbox.clear_faults();
    let c = w.client(0, &[], Era::Modern).await;
    let out = ok(&call(
        &c,
        "fetch_traces",
        json!({"run_id": run, "dest_dir": "traces"}),
    )
    .await);
    assert_eq!(
        out["skipped"].as_u64().unwrap() as usize,
        on_disk.len(),
        "{out}"
    );
    assert_eq!(
        out["downloaded"].as_u64().unwrap() as usize,
        ids.len() - on_disk.len(),
        "{out}"
    );
    for id in &ids {
        assert_eq!(
            std::fs::read(dest.join(format!("{id}.json"))).unwrap(),
            raw(id.clone()).await,
            "{id}"
        );
    }
    c.cancel().await.unwrap();
}
