//! Small answers by default, the bulk as files (issue 19): `get_metrics`' summary and its
//! range and file exports, `get_rollouts`' file export, through the real binary and a real MCP
//! client against the sandbox.

mod common;

use common::{Era, World, call, err, ok, text};
use serde_json::{Value, json};

/// Seconds after creation until a sandbox run has completed `steps` steps (it starts 5 s in,
/// then takes 2 s a step).
fn after_steps(steps: u64) -> u64 {
    5 + 2 * steps + 1
}

fn lines(path: &str) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{path}: {e}"))
        .lines()
        .map(str::to_string)
        .collect()
}

#[tokio::test]
async fn metrics_answer_a_summary_by_default_and_the_whole_series_on_request() {
    let w = World::new().await;
    let run = w.create_run(0, "metrics-150", 200, None).await;
    w.advance(after_steps(150));
    let c = w.client(0, &[], Era::Modern).await;

    // The default: a summary per metric and the newest 10 steps, under 4 KB of text.
    let r = call(&c, "get_metrics", json!({"run_id": run})).await;
    let bytes = text(&r).len();
    let m = ok(&r);
    // Every record, from a JSON Lines export, to compare with.
    let all = ok(&call(
        &c,
        "get_metrics",
        json!({"run_id": run, "to_file": {"format": "jsonl", "dest_dir": "all"}}),
    )
    .await);
    let all: Vec<Value> = lines(all["exported"]["path"].as_str().unwrap())
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(all.len(), 150);
    let everything = json!({ "metrics": all });
    let listed = call(&c, "get_metrics", json!({"run_id": run, "limit": 500})).await;
    println!(
        "get_metrics on 150 steps: default answer {bytes} bytes; with limit 500 {} bytes; the 150 records alone {} bytes",
        text(&listed).len(),
        all.iter().map(|r| r.to_string().len() + 1).sum::<usize>()
    );
    assert!(text(&listed).len() <= 16 * 1024);
    assert!(
        bytes <= 4096,
        "default answer is {bytes} bytes:\n{}",
        text(&r)
    );
    assert_eq!(
        m["window"],
        json!({"first_step": 1, "last_step": 150, "records": 150})
    );
    let steps: Vec<i64> = m["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["step"].as_i64().unwrap())
        .collect();
    assert_eq!(steps, (141..=150).collect::<Vec<_>>());
    assert_eq!(m["truncated"], true);
    assert!(m["note"].as_str().unwrap().contains("to_file"), "{m:#}");
    let summary = m["summary"].as_object().unwrap();
    for name in ["loss", "entropy", "reward/mean", "learning_rate"] {
        assert!(summary.contains_key(name), "{name} missing: {m:#}");
    }
    assert!(!summary.contains_key("step"));
    // The sandbox's loss decays and its mean reward climbs over the run.
    let loss = &summary["loss"];
    assert_eq!(loss["first"], everything["metrics"][0]["loss"]);
    assert_eq!(loss["last"], everything["metrics"][149]["loss"]);
    assert!(loss["min"].as_f64() <= loss["last"].as_f64());
    assert!(loss["first"].as_f64() > loss["last"].as_f64(), "{loss}");
    let reward = &summary["reward/mean"];
    assert!(
        reward["last"].as_f64() > reward["first"].as_f64(),
        "{reward}"
    );
    // A constant is flat. (The trend of the noisy metrics over the last 10 steps depends on the
    // run's random id; the early, steep part of the loss curve below does not.)
    assert_eq!(summary["learning_rate"]["trend"], "flat", "{m:#}");
    assert_eq!(summary["learning_rate"]["change_pct"], 0.0, "{m:#}");
    let early = ok(&call(&c, "get_metrics", json!({"run_id": run, "max_step": 10})).await);
    assert_eq!(early["summary"]["loss"]["trend"], "falling", "{early:#}");
    assert!(early["summary"]["loss"]["change_pct"].as_f64().unwrap() < -2.0);

    // A step range lists the whole range, summarised over that range.
    let range = ok(&call(
        &c,
        "get_metrics",
        json!({"run_id": run, "min_step": 20, "max_step": 49}),
    )
    .await);
    assert_eq!(range["count"], 30);
    assert_eq!(range["truncated"], false);
    assert_eq!(range["metrics"][0]["step"], 20);
    assert_eq!(range["window"]["first_step"], 20);
    assert_eq!(
        range["summary"]["loss"]["first"],
        everything["metrics"][19]["loss"]
    );

    // Only named metrics.
    let named = ok(&call(
        &c,
        "get_metrics",
        json!({"run_id": run, "names": ["loss"], "limit": 2}),
    )
    .await);
    assert_eq!(named["summary"].as_object().unwrap().len(), 1, "{named:#}");
    assert_eq!(
        named["metrics"][1],
        json!({"step": 150, "loss": everything["metrics"][149]["loss"]})
    );
    let e = err(&call(&c, "get_metrics", json!({"run_id": run, "names": ["a b"]})).await);
    assert!(e.contains("names"), "{e}");

    // Every record to a CSV file under factory-exports/<run_id>/, the answer still small.
    let r = call(&c, "get_metrics", json!({"run_id": run, "to_file": {}})).await;
    let f = ok(&r);
    let exported = &f["exported"];
    let want = w
        .workspace_path()
        .canonicalize()
        .unwrap()
        .join(format!("factory-exports/{run}/metrics.csv"));
    assert_eq!(exported["path"], want.display().to_string(), "{f:#}");
    assert_eq!(exported["format"], "csv");
    assert_eq!(exported["rows"], 150);
    assert_eq!(
        f["count"], 0,
        "the file has the records; the answer lists none"
    );
    assert!(text(&r).len() <= 4096);
    let csv = lines(exported["path"].as_str().unwrap());
    assert_eq!(csv.len(), 151);
    assert!(csv[0].starts_with("step,loss,"), "{}", csv[0]);
    assert!(csv[150].starts_with("150,"), "{}", csv[150]);
    assert_eq!(
        exported["bytes"].as_u64().unwrap(),
        std::fs::metadata(exported["path"].as_str().unwrap())
            .unwrap()
            .len()
    );

    // JSON Lines into a directory of the caller's choosing, a range only.
    let j = ok(&call(
        &c,
        "get_metrics",
        json!({"run_id": run, "min_step": 101, "to_file": {"format": "jsonl", "dest_dir": "out/m"}}),
    )
    .await);
    let path = j["exported"]["path"].as_str().unwrap();
    assert!(path.ends_with("out/m/metrics.jsonl"), "{path}");
    let records: Vec<Value> = lines(path)
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(records.len(), 50);
    assert_eq!(records[0], everything["metrics"][100]);

    // Never outside the workspace.
    for bad in ["../outside", "/etc"] {
        let e = err(&call(
            &c,
            "get_metrics",
            json!({"run_id": run, "to_file": {"dest_dir": bad}}),
        )
        .await);
        assert!(e.contains("dest_dir"), "{bad}: {e}");
    }
    let e = err(&call(
        &c,
        "get_metrics",
        json!({"run_id": run, "to_file": {"format": "xlsx"}}),
    )
    .await);
    assert!(e.contains("format") || e.contains("xlsx"), "{e}");
    c.cancel().await.unwrap();
    w.sandbox.shutdown().await;
}

#[tokio::test]
async fn rollouts_of_a_step_go_to_a_file_whole_and_redacted() {
    let w = World::new().await;
    // A credential-shaped environment id: the sandbox names each sample's env after it, so
    // every sample carries text the redactor must catch, in the answer and in the file.
    let leak = "hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789";
    let body = json!({
        "name": "rollouts-export",
        "config": {
            "name": "rollouts-export",
            "max_steps": 20,
            "model": {"name": "PrimeIntellect/Qwen3-0.6B-Reverse-Text-SFT"},
            "orchestrator": {"batch_size": 8, "env": [{"id": leak}]},
            "trainer": {},
            "inference": {}
        }
    });
    let resp = reqwest::Client::new()
        .post(format!("{}/api/v1/training/runs", w.sandbox.base_url()))
        .bearer_auth(w.key(0))
        .json(&body)
        .send()
        .await
        .unwrap();
    let v: Value = resp.json().await.unwrap();
    let run = v["runId"].as_str().expect("runId").to_string();
    w.advance(after_steps(4));
    let c = w.client(0, &[], Era::Modern).await;

    let page = call(&c, "get_rollouts", json!({"run_id": run})).await;
    assert!(
        !text(&page).contains(leak),
        "the answer leaks: {}",
        text(&page)
    );
    assert!(
        text(&page).contains("REDACTED"),
        "the samples no longer carry the env name: {}",
        text(&page)
    );

    let r = ok(&call(&c, "get_rollouts", json!({"run_id": run, "to_file": {}})).await);
    let exported = &r["exported"];
    assert_eq!(exported["format"], "jsonl");
    assert_eq!(
        exported["rows"], 16,
        "every sample of the step, not one page: {r:#}"
    );
    assert_eq!(r["step"], 4);
    assert_eq!(r["samples"], json!([]));
    let path = exported["path"].as_str().unwrap();
    assert!(
        path.ends_with(&format!("factory-exports/{run}/rollouts_step_4.jsonl")),
        "{path}"
    );
    let file = std::fs::read_to_string(path).unwrap();
    assert!(!file.contains(leak), "the file leaks the credential");
    assert!(file.contains("REDACTED"));
    let samples: Vec<Value> = file
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(samples.len(), 16);
    assert!(
        samples
            .iter()
            .all(|s| s["step"] == 4 && s["reward"].is_number())
    );

    let csv = ok(&call(
        &c,
        "get_rollouts",
        json!({"run_id": run, "step": 2, "to_file": {"format": "csv", "dest_dir": "r"}}),
    )
    .await);
    let path = csv["exported"]["path"].as_str().unwrap();
    assert!(path.ends_with("r/rollouts_step_2.csv"), "{path}");
    let file = std::fs::read_to_string(path).unwrap();
    assert!(!file.contains(leak));
    let header = file.lines().next().unwrap();
    assert!(
        header.contains("prompt") && header.contains("reward"),
        "{header}"
    );
    assert_eq!(csv["exported"]["rows"], 16);
    c.cancel().await.unwrap();
    w.sandbox.shutdown().await;
}
