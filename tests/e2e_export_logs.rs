//! Logs an assistant can afford, end to end (issue 19): `get_logs`' plain, folded default answer
//! with its follow cursor, and `export_logs` writing every component's logs into the workspace —
//! compared line by line with the sandbox's whole log, past one query's 5,000 lines and past the
//! 24 h look-back.

mod common;

use common::{Era, World, call, ok, text};
use factory_sandbox::{ClockMode, SandboxOptions, Seed, SeedSource};
use serde_json::{Value, json};

/// The lines of an exported file.
fn file_lines(w: &World, path: &str) -> Vec<String> {
    let p = std::path::Path::new(path);
    assert!(
        p.starts_with(w.workspace_path()),
        "{path} is outside the workspace"
    );
    std::fs::read_to_string(p)
        .unwrap_or_else(|e| panic!("{path}: {e}"))
        .lines()
        .map(str::to_string)
        .collect()
}

fn file_of<'a>(out: &'a Value, component: &str) -> &'a Value {
    out["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["component"] == component && f["env"].is_null())
        .unwrap_or_else(|| panic!("no {component} file in {out}"))
}

fn logs_requests(w: &World) -> usize {
    w.sandbox
        .request_log()
        .iter()
        .filter(|r| r.path.ends_with("/logs"))
        .count()
}

#[tokio::test]
async fn exports_while_a_run_writes_hold_every_line_exactly_once_past_one_query() {
    let w = World::new().await;
    // 3,000 steps of 2 s: more than 6,000 lines per component within 2 hours.
    let run = w.create_run(0, "export-busy", 3000, None).await;
    let c = w.client(0, &[], Era::Modern).await;
    let components = ["orchestrator", "trainer", "inference"];
    // Not started: no pods, so nothing suggests an export yet.
    let d = ok(&call(&c, "diagnose_run", json!({"run_id": run})).await);
    assert!(!d["next_action"].to_string().contains("export_logs"), "{d}");
    // Running: diagnose_run and run_report say to export while the pods exist.
    w.advance(60);
    let d = ok(&call(&c, "diagnose_run", json!({"run_id": run})).await);
    assert!(d["next_action"].to_string().contains("export_logs"), "{d}");
    let rep = ok(&call(&c, "run_report", json!({"run_id": run})).await);
    assert!(
        rep["next_calls"].to_string().contains("export_logs"),
        "{rep}"
    );
    let before = logs_requests(&w);
    let mut calls = 0;
    let mut last = Value::Null;
    // An assistant exports every half hour of the run's time, and once more after it ended.
    for advance in [1740, 1800, 1800, 1800, 600] {
        w.advance(advance);
        let r = call(&c, "export_logs", json!({"run_id": run})).await;
        let out = ok(&r);
        calls += 1;
        assert_eq!(out["possible_gap"], false, "{out}");
        assert!(text(&r).len() < 4096, "{} bytes", text(&r).len());
        last = out;
    }
    let requests = logs_requests(&w) - before;
    for comp in components {
        let full = w.sandbox.full_log(&run, Some(comp), None);
        let f = file_of(&last, comp);
        let lines = file_lines(&w, f["path"].as_str().unwrap());
        if comp != "inference" {
            assert!(
                full.len() > 5000,
                "{comp}: the run should log more than one query returns: {}",
                full.len()
            );
        }
        assert_eq!(lines.len(), full.len(), "{comp}: lost or doubled lines");
        assert_eq!(lines, full, "{comp}: the file differs from the whole log");
        assert_eq!(f["lines"], full.len());
        assert!(
            f["path"]
                .as_str()
                .unwrap()
                .ends_with(&format!("factory-exports/{run}/logs/{comp}.log"))
        );
        assert!(f["from"].is_string() && f["to"].is_string(), "{f}");
        println!("export_logs {comp}: {} lines in {calls} calls", lines.len());
    }
    println!("export_logs: {requests} logs requests over {calls} calls");
    assert_eq!(requests, calls * components.len());

    // Called again with nothing new: nothing added, nothing doubled.
    w.advance(60);
    let again = ok(&call(&c, "export_logs", json!({"run_id": run})).await);
    for comp in components {
        assert_eq!(file_of(&again, comp)["added"], 0, "{again}");
        let f = file_of(&again, comp);
        assert_eq!(
            file_lines(&w, f["path"].as_str().unwrap()),
            w.sandbox.full_log(&run, Some(comp), None)
        );
    }

    // One export after the run, into another directory: only the newest 5,000 lines of each
    // component are reachable, and the answer says so.
    let once = ok(&call(
        &c,
        "export_logs",
        json!({"run_id": run, "dest_dir": "late"}),
    )
    .await);
    assert_eq!(once["possible_gap"], true, "{once}");
    let f = file_of(&once, "orchestrator");
    assert!(f["gap"].as_str().unwrap().contains("5000"), "{f}");
    let lines = file_lines(&w, f["path"].as_str().unwrap());
    let full = w.sandbox.full_log(&run, Some("orchestrator"), None);
    assert_eq!(lines, full[full.len() - 5000..]);
    assert!(
        f["path"]
            .as_str()
            .unwrap()
            .starts_with(&w.workspace_path().join("late").display().to_string())
    );
    // dest_dir stays in the workspace.
    let e = common::err(
        &call(
            &c,
            "export_logs",
            json!({"run_id": run, "dest_dir": "../outside"}),
        )
        .await,
    );
    assert!(e.contains("dest_dir"), "{e}");
    c.cancel().await.unwrap();
}

#[tokio::test]
async fn logs_older_than_the_look_back_are_reported_as_a_gap_and_a_later_call_continues() {
    // Steps of a minute: a run of 2,000 steps lasts 33 hours.
    let mut seed = Seed::default();
    seed.timings.step_s = 60.0;
    let w = World::with_sandbox(SandboxOptions {
        clock: ClockMode::Manual,
        seed: SeedSource::Value(Box::new(seed)),
        ..SandboxOptions::default()
    })
    .await;
    let run = w.create_run(0, "export-old", 2000, None).await;
    let c = w.client(0, &[], Era::Legacy).await;
    w.advance(30 * 3600);
    let out = ok(&call(&c, "export_logs", json!({"run_id": run})).await);
    assert_eq!(out["possible_gap"], true, "{out}");
    let f = file_of(&out, "trainer");
    assert!(f["gap"].as_str().unwrap().contains("24 h"), "{f}");
    let lines = file_lines(&w, f["path"].as_str().unwrap());
    let full = w.sandbox.full_log(&run, Some("trainer"), None);
    // The gap is true: the whole log is longer than what was reachable, and the file is its
    // newest part, exactly.
    assert!(lines.len() < 5000, "{}", lines.len());
    assert!(
        full.len() > lines.len() + 500,
        "{} vs {}",
        full.len(),
        lines.len()
    );
    assert_eq!(lines, full[full.len() - lines.len()..]);

    // A later call continues where the first stopped: the file grows by exactly the new lines.
    w.advance(3600);
    let next = ok(&call(&c, "export_logs", json!({"run_id": run})).await);
    let f2 = file_of(&next, "trainer");
    assert!(f2["gap"].is_null(), "{f2}");
    let grown = file_lines(&w, f2["path"].as_str().unwrap());
    let full = w.sandbox.full_log(&run, Some("trainer"), None);
    assert_eq!(
        f2["added"].as_u64().unwrap() as usize,
        grown.len() - lines.len()
    );
    assert!(grown.len() > lines.len());
    assert_eq!(grown, full[full.len() - grown.len()..]);
    assert_eq!(&grown[..lines.len()], &lines[..]);
    c.cancel().await.unwrap();
}

/// The old default answer's shape (before issue 19): the newest 200 raw lines as JSON strings.
fn old_shape_bytes(run: &str, raw: &[String]) -> usize {
    let tail = &raw[raw.len().saturating_sub(200)..];
    let body = json!({
        "run_id": run, "component": "orchestrator", "state": "ok", "lines": tail,
        "line_count": tail.len(), "truncated": false, "note": null,
        "cursor": "lc1".to_string() + &"0".repeat(16 * 17), "possibly_missed": false,
    });
    format!(
        "{} orchestrator log line(s) of run {run}\n{body}",
        tail.len()
    )
    .len()
}

#[tokio::test]
async fn get_logs_answers_small_plain_lines_and_its_cursor_follows_without_loss() {
    let w = World::new().await;
    let run = w.create_run(0, "busy-logs", 300, None).await;
    let c = w.client(0, &[], Era::Modern).await;
    w.advance(10);
    let first = ok(&call(&c, "get_logs", json!({"run_id": run})).await);
    let mut cursor = first["cursor"].as_str().unwrap().to_string();
    let mut followed: Vec<String> = first["lines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_str().unwrap().to_string())
        .collect();
    // Follow the orchestrator while it writes, draining each time.
    for advance in [40, 3, 90, 17, 0, 150] {
        w.advance(advance);
        loop {
            let out = ok(&call(&c, "get_logs", json!({"run_id": run, "cursor": cursor})).await);
            assert_eq!(out["possibly_missed"], false);
            followed.extend(
                out["lines"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|l| l.as_str().unwrap().to_string()),
            );
            cursor = out["cursor"].as_str().unwrap().to_string();
            if out["truncated"] == false {
                break;
            }
        }
    }
    // A busy run's default answer: small, one plain line per entry, progress folded.
    let r = call(&c, "get_logs", json!({"run_id": run})).await;
    let out = ok(&r);
    let raw = w.sandbox.full_log(&run, None, None);
    println!(
        "get_logs default answer on a {}-line orchestrator log: {} bytes (the old shape: {} bytes)",
        raw.len(),
        text(&r).len(),
        old_shape_bytes(&run, &raw)
    );
    assert!(text(&r).len() <= 4096, "{} bytes", text(&r).len());
    let lines: Vec<&str> = out["lines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_str().unwrap())
        .collect();
    assert!(lines.len() >= 20, "{lines:?}");
    assert!(lines.iter().all(|l| !l.starts_with('{')), "{lines:?}");
    assert!(
        lines
            .iter()
            .any(|l| l.contains(" INFO [orchestrator] Step ")),
        "{lines:?}"
    );
    let progress: Vec<&&str> = lines.iter().filter(|l| l.contains("PROGRESS")).collect();
    assert_eq!(progress.len(), 1, "{lines:?}");
    assert!(progress[0].contains("progress records folded"), "{lines:?}");

    // Nothing lost while following: every non-progress entry once, in order, and the folded
    // progress records add up to every progress record written.
    let all = ok(&call(
        &c,
        "get_logs",
        json!({"run_id": run, "tail": 5000, "max_bytes": 65536}),
    )
    .await);
    let all: Vec<String> = all["lines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_str().unwrap().to_string())
        .collect();
    let plain = |v: &[String]| -> Vec<String> {
        v.iter()
            .filter(|l| !l.contains(" PROGRESS ["))
            .cloned()
            .collect()
    };
    assert_eq!(plain(&followed), plain(&all));
    let folded = |v: &[String]| -> usize {
        v.iter()
            .filter(|l| l.contains(" PROGRESS ["))
            .map(|l| {
                l.rsplit_once(" (")
                    .and_then(|(_, c)| c.split(' ').next()?.parse().ok())
                    .unwrap_or(1)
            })
            .sum()
    };
    let written = raw.iter().filter(|l| l.contains("\"progress\"")).count();
    assert!(written > 100, "{written}");
    assert_eq!(folded(&followed), written);
    assert_eq!(folded(&all), written);
    c.cancel().await.unwrap();
}
