//! Shared helpers of the golden tests: settings pointing at a wiremock server with short
//! timeouts and fast retries, fixtures taken from `platform-api.md`, and exact-request checks.
#![allow(dead_code)]

use std::time::Duration;

use factory_platform::{PlatformClient, PlatformSettings, RetryPolicy, Timeouts};
use secrecy::SecretString;
use serde_json::{Value, json};
use wiremock::MockServer;
use wiremock::Request;

/// The key every golden test uses; checked in the Authorization header.
pub const KEY: &str = "pk-golden-test-key-0001";
/// The team of the transcript.
pub const TEAM: &str = "cteam000000000000000000001";
/// The run id of the transcript.
pub const RUN: &str = "c20a7a03be96e4c99a6c2d3b9";

pub fn fast_settings(base: &str, key: &str) -> PlatformSettings {
    let mut s = PlatformSettings::new(base, SecretString::from(key));
    s.timeouts = Timeouts {
        request: Duration::from_secs(5),
        connect: Duration::from_secs(2),
        create: Duration::from_secs(5),
        traces: Duration::from_secs(5),
    };
    s.retry = RetryPolicy {
        max_attempts: 3,
        base_delay: Duration::from_millis(10),
        max_delay: Duration::from_millis(40),
        retry_after_cap: Duration::from_millis(200),
    };
    s
}

/// A client for `server`, personal account.
pub fn client(server: &MockServer) -> PlatformClient {
    PlatformClient::new(fast_settings(&server.uri(), KEY)).expect("client")
}

/// A client for `server` with the transcript's team active.
pub fn team_client(server: &MockServer) -> PlatformClient {
    PlatformClient::new(fast_settings(&server.uri(), KEY).with_team(TEAM)).expect("client")
}

/// The one request the server received (fails if there were more or none).
pub async fn single_request(server: &MockServer) -> Request {
    let mut reqs = server.received_requests().await.expect("recording on");
    assert_eq!(
        reqs.len(),
        1,
        "expected exactly one request, got {}",
        reqs.len()
    );
    reqs.remove(0)
}

/// Number of requests received.
pub async fn request_count(server: &MockServer) -> usize {
    server
        .received_requests()
        .await
        .expect("recording on")
        .len()
}

/// The query pairs exactly (as a multiset): nothing missing, nothing extra.
pub fn assert_query(req: &Request, expected: &[(&str, &str)]) {
    let mut got: Vec<(String, String)> = req.url.query_pairs().into_owned().collect();
    let mut want: Vec<(String, String)> = expected
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    got.sort();
    want.sort();
    assert_eq!(got, want, "query of {} {}", req.method, req.url);
    if expected.is_empty() {
        assert_eq!(
            req.url.query(),
            None,
            "no query string expected: {}",
            req.url
        );
    }
}

/// The JSON body exactly.
pub fn assert_body(req: &Request, expected: Value) {
    let got: Value = serde_json::from_slice(&req.body).expect("JSON body");
    assert_eq!(got, expected);
}

/// No body at all.
pub fn assert_no_body(req: &Request) {
    assert!(
        req.body.is_empty(),
        "unexpected body: {:?}",
        String::from_utf8_lossy(&req.body)
    );
}

fn header<'a>(req: &'a Request, name: &str) -> Option<&'a str> {
    req.headers.get(name).and_then(|v| v.to_str().ok())
}

/// Headers every platform request carries (§1): Bearer key, JSON content type, our UA, and
/// no team header.
pub fn assert_platform_headers(req: &Request) {
    assert_eq!(
        header(req, "authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
    assert_eq!(header(req, "content-type"), Some("application/json"));
    assert_eq!(
        header(req, "user-agent"),
        Some(factory_platform::USER_AGENT)
    );
    assert!(factory_platform::USER_AGENT.starts_with("factory-mcp/"));
    assert_eq!(header(req, "x-prime-team-id"), None);
}

/// Headers of a traces read (§9): Bearer key, our UA, no Content-Type; the team header only
/// when a team is given.
pub fn assert_traces_headers(req: &Request, team: Option<&str>) {
    assert_eq!(
        header(req, "authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
    assert_eq!(header(req, "content-type"), None);
    assert_eq!(
        header(req, "user-agent"),
        Some(factory_platform::USER_AGENT)
    );
    assert_eq!(header(req, "x-prime-team-id"), team);
}

/// An `RLRun` as §4 documents it, with every optional field family and an unknown extra.
pub fn run_json() -> Value {
    json!({
        "id": RUN,
        "userId": "cuser000000000000000000001",
        "teamId": TEAM,
        "name": "my-run",
        "status": "RUNNING",
        "kind": "DEDICATED_FULL_FT",
        "rftClusterId": null,
        "primeClusterId": "cl-prime-1",
        "baseModel": "Qwen/Qwen3-4B",
        "rolloutsPerExample": 8,
        "seqLen": 2048,
        "maxSteps": 10,
        "maxTokens": 512,
        "batchSize": 8,
        "teacherConfig": {"model": "Qwen/Qwen3-32B"},
        "environments": [{"slug": "reverse-text"}],
        "runConfig": {"max_steps": 10, "eval": {"interval": 5}},
        "learningRate": 0.000001,
        "oversamplingFactor": 1.5,
        "gpuCount": 2,
        "runsAhead": null,
        "volumeName": "vol-a",
        "wandbProject": "proj",
        "createdAt": "2026-01-02T03:04:05.000Z",
        "updatedAt": "2026-01-02T03:05:05.000Z",
        "startedAt": "2026-01-02T03:04:35.000Z",
        "completedAt": null,
        "failureAnalysis": {"rootCause": "OOM in trainer", "evidence": ["CUDA out of memory"], "confidence": 0.9},
        "sourceCommit": "0123456789abcdef0123456789abcdef01234567",
        "futureField": {"x": 1}
    })
}

/// A minimal run with only the required fields and the given status.
pub fn minimal_run(id: &str, status: &str, created_at: &str) -> Value {
    json!({"id": id, "userId": "cuser1", "status": status, "createdAt": created_at, "updatedAt": created_at})
}
