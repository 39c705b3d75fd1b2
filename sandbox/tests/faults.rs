//! Each fault effect, as a plain HTTP client sees it.

mod common;

use std::time::{Duration, Instant};

use common::{Client, advance, manual, run_body};
use factory_sandbox::{FaultEffect, FaultMatch, FaultRule};
use serde_json::{Value, json};

const CREATE: &str = "/api/v1/training/runs";

async fn post_create(c: &Client) -> Result<reqwest::Response, reqwest::Error> {
    c.http
        .post(format!("{}{CREATE}", c.base))
        .bearer_auth(&c.key)
        .json(&run_body("faulty", 5))
        .send()
        .await
}

async fn run_count(c: &Client) -> u64 {
    c.get("/api/v1/rft/runs").await.1["total"].as_u64().unwrap()
}

#[tokio::test]
async fn status_fault_answers_with_retry_after_then_runs_out() {
    let sb = manual().await;
    let c = Client::new(&sb, 0);
    // Added over HTTP, exactly as the spec writes it.
    let (s, rule) = c
        .post(
            "/_sandbox/faults",
            json!({"method": "POST", "path": CREATE, "match": "exact", "effect": "status",
                   "status": 503, "retry_after_s": 2, "delay_ms": 0, "times": 1}),
        )
        .await;
    assert_eq!(s, 201, "{rule}");
    let (_, listed) = c.get("/_sandbox/faults").await;
    assert_eq!(listed["faults"].as_array().unwrap().len(), 1);
    let r = post_create(&c).await.unwrap();
    assert_eq!(r.status(), 503);
    assert_eq!(r.headers()["retry-after"], "2");
    assert!(r.json::<Value>().await.unwrap()["detail"].is_string());
    assert_eq!(run_count(&c).await, 0, "nothing was committed");
    let r = post_create(&c).await.unwrap();
    assert_eq!(r.status(), 201, "times = 1 used the rule up");
    let (_, listed) = c.get("/_sandbox/faults").await;
    assert_eq!(listed["faults"], json!([]));
    // Traces paths answer in the traces error shape.
    sb.add_fault(FaultRule {
        status: Some(429),
        ..FaultRule::new("/api/v1/traces", FaultEffect::Status)
    });
    let (s, v) = c.get("/api/v1/traces").await;
    assert_eq!(
        (s, v["error"]["code"].as_str()),
        (429, Some("injected_fault"))
    );
    let (s, _) = c
        .send(reqwest::Method::DELETE, "/_sandbox/faults", None)
        .await;
    assert_eq!(s, 200);
    assert!(sb.faults().is_empty());
}

#[tokio::test]
async fn delay_waits_before_handling() {
    let sb = manual().await;
    let c = Client::new(&sb, 0);
    sb.add_fault(FaultRule {
        delay_ms: Some(400),
        method: Some("GET".into()),
        match_kind: FaultMatch::Prefix,
        ..FaultRule::new("/api/v1/rft/", FaultEffect::Delay)
    });
    let t = Instant::now();
    let (s, _) = c.get("/api/v1/rft/runs").await;
    assert_eq!(s, 200);
    assert!(t.elapsed() >= Duration::from_millis(400));
    // A client that gives up first sees a timeout and nothing was done.
    sb.clear_faults();
    sb.add_fault(FaultRule {
        delay_ms: Some(1500),
        ..FaultRule::new(CREATE, FaultEffect::Delay)
    });
    let quick = reqwest::Client::builder()
        .timeout(Duration::from_millis(300))
        .build()
        .unwrap();
    let err = quick
        .post(format!("{}{CREATE}", c.base))
        .bearer_auth(&c.key)
        .json(&run_body("late", 5))
        .send()
        .await
        .unwrap_err();
    assert!(err.is_timeout());
    assert_eq!(run_count(&c).await, 0);
}

#[tokio::test]
async fn delay_after_commit_creates_the_run_before_answering() {
    let sb = manual().await;
    let c = Client::new(&sb, 0);
    sb.add_fault(FaultRule {
        delay_ms: Some(1500),
        times: Some(1),
        ..FaultRule::new(CREATE, FaultEffect::DelayAfterCommit)
    });
    let quick = reqwest::Client::builder()
        .timeout(Duration::from_millis(400))
        .build()
        .unwrap();
    let err = quick
        .post(format!("{}{CREATE}", c.base))
        .bearer_auth(&c.key)
        .json(&run_body("committed", 5))
        .send()
        .await
        .unwrap_err();
    assert!(err.is_timeout());
    assert_eq!(
        run_count(&c).await,
        1,
        "the run exists although the client timed out"
    );
    assert_eq!(sb.create_requests(), 1);
}

#[tokio::test]
async fn drop_after_commit_closes_without_an_answer_but_the_run_exists() {
    let sb = manual().await;
    let c = Client::new(&sb, 0);
    sb.add_fault(FaultRule {
        method: Some("POST".into()),
        times: Some(1),
        ..FaultRule::new(CREATE, FaultEffect::DropAfterCommit)
    });
    let err = post_create(&c).await.unwrap_err();
    assert!(!err.is_timeout(), "a transport error, not a timeout: {err}");
    assert!(err.status().is_none());
    assert_eq!(run_count(&c).await, 1);
    assert_eq!(sb.create_requests(), 1, "no hidden retry");
    let (_, list) = c.get("/api/v1/rft/runs").await;
    assert_eq!(list["runs"][0]["name"], "faulty");
}

#[tokio::test]
async fn reset_closes_without_handling() {
    let sb = manual().await;
    let c = Client::new(&sb, 0);
    sb.add_fault(FaultRule {
        times: Some(1),
        ..FaultRule::new(CREATE, FaultEffect::Reset)
    });
    let err = post_create(&c).await.unwrap_err();
    assert!(err.status().is_none(), "{err}");
    assert_eq!(run_count(&c).await, 0);
    assert_eq!(sb.create_requests(), 0);
    // The next request, on a fresh connection, works.
    assert_eq!(post_create(&c).await.unwrap().status(), 201);
}

#[tokio::test]
async fn cut_body_sends_half_and_closes() {
    let sb = manual().await;
    let c = Client::new(&sb, 0);
    let id = c.create(run_body("cut", 5)).await;
    advance(&sb, 20);
    let (_, list) = c.get(&format!("/api/v1/traces?run_id={id}&limit=1")).await;
    let tid = list["items"][0]["trace_id"].as_str().unwrap().to_string();
    let size = list["items"][0]["size_bytes"].as_u64().unwrap();
    let path = format!("/api/v1/traces/{tid}");
    sb.add_fault(FaultRule {
        times: Some(1),
        ..FaultRule::new(path.clone(), FaultEffect::CutBody)
    });
    let mut resp = c
        .http
        .get(format!("{}{path}?raw=true", c.base))
        .bearer_auth(&c.key)
        .send()
        .await
        .expect("headers arrive");
    assert_eq!(resp.status(), 200);
    assert_eq!(
        resp.content_length(),
        Some(size),
        "the full length is announced"
    );
    let mut got = 0usize;
    let err = loop {
        match resp.chunk().await {
            Ok(Some(chunk)) => got += chunk.len(),
            Ok(None) => panic!("the body should not end cleanly"),
            Err(e) => break e,
        }
    };
    assert!(
        err.is_body() || err.is_decode() || err.is_request(),
        "{err}"
    );
    assert_eq!(got as u64, size / 2);
    // A JSON answer is cut the same way.
    sb.add_fault(FaultRule {
        times: Some(1),
        ..FaultRule::new("/api/v1/rft/runs", FaultEffect::CutBody)
    });
    let r = c
        .http
        .get(format!("{}/api/v1/rft/runs", c.base))
        .bearer_auth(&c.key)
        .send()
        .await
        .unwrap();
    assert!(r.json::<Value>().await.is_err());
}

#[tokio::test]
async fn stall_body_holds_half_the_body_then_sends_the_rest() {
    let sb = manual().await;
    let c = Client::new(&sb, 0);
    let id = c.create(run_body("stall", 5)).await;
    advance(&sb, 20);
    let (_, list) = c.get(&format!("/api/v1/traces?run_id={id}&limit=1")).await;
    let tid = list["items"][0]["trace_id"].as_str().unwrap().to_string();
    let path = format!("/api/v1/traces/{tid}");
    let whole = c
        .http
        .get(format!("{}{path}?raw=true", c.base))
        .bearer_auth(&c.key)
        .send()
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    sb.add_fault(FaultRule {
        times: Some(1),
        delay_ms: Some(2_000),
        ..FaultRule::new(path.clone(), FaultEffect::StallBody)
    });
    let mut resp = c
        .http
        .get(format!("{}{path}?raw=true", c.base))
        .bearer_auth(&c.key)
        .send()
        .await
        .expect("headers arrive");
    assert_eq!(resp.content_length(), Some(whole.len() as u64));
    let mut got = Vec::new();
    while got.len() < whole.len() / 2 {
        got.extend_from_slice(&resp.chunk().await.unwrap().expect("the first half"));
    }
    assert_eq!(got.len(), whole.len() / 2, "exactly half first");
    // Held there (for 2 s; nothing more within the first 300 ms)...
    let early = tokio::time::timeout(Duration::from_millis(300), resp.chunk()).await;
    assert!(early.is_err(), "the rest came without the stall");
    // ...then the rest, byte for byte.
    while let Some(chunk) = resp.chunk().await.unwrap() {
        got.extend_from_slice(&chunk);
    }
    assert_eq!(got, whole.to_vec());
}
