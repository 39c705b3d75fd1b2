//! Error mapping for every status the spec names (§1.1), retries of safe GETs only, the
//! ambiguity flag the launch pipeline relies on, and a sentinel API key that must never
//! appear in Debug output, error text or logs.

mod common;

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::*;
use factory_platform::error::{PAYMENT_REQUIRED_MESSAGE, UNAUTHORIZED_MESSAGE};
use factory_platform::wire::runs::CreateRunRequest;
use factory_platform::{
    FieldError, ListRunsQuery, LogsQuery, PlatformClient, PlatformError, PlatformSettings,
    TeamScope, TracesQuery,
};
use secrecy::SecretString;
use serde_json::json;
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, ResponseTemplate};

async fn get_run_with(status: u16, body: Option<serde_json::Value>) -> (PlatformError, usize) {
    let server = MockServer::start().await;
    let mut t = ResponseTemplate::new(status);
    if let Some(b) = body {
        t = t.set_body_json(b);
    }
    Mock::given(method("GET"))
        .respond_with(t)
        .mount(&server)
        .await;
    let e = client(&server).get_run(RUN).await.unwrap_err();
    (e, request_count(&server).await)
}

#[tokio::test]
async fn status_401_and_402_have_the_cli_fixed_text() {
    let (e, n) = get_run_with(401, Some(json!({"detail": "ignored"}))).await;
    assert!(matches!(e, PlatformError::Unauthorized));
    assert_eq!(e.to_string(), UNAUTHORIZED_MESSAGE);
    assert!(
        e.to_string()
            .contains("https://app.primeintellect.ai/dashboard/tokens")
    );
    assert_eq!(n, 1, "401 is not retried");
    let (e, _) = get_run_with(402, None).await;
    assert!(matches!(e, PlatformError::PaymentRequired));
    assert_eq!(e.to_string(), PAYMENT_REQUIRED_MESSAGE);
}

#[tokio::test]
async fn status_403_404_409_carry_the_detail() {
    let (e, _) = get_run_with(
        403,
        Some(json!({"detail": "team not allowlisted for sourceRef"})),
    )
    .await;
    assert!(matches!(e, PlatformError::Forbidden { .. }));
    assert!(
        e.to_string()
            .starts_with("HTTP 403: team not allowlisted for sourceRef"),
        "{e}"
    );
    let (e, n) = get_run_with(404, Some(json!({"detail": "Run nope not found"}))).await;
    assert!(matches!(e, PlatformError::NotFound { .. }));
    assert_eq!(e.to_string(), "HTTP 404: Run nope not found");
    assert_eq!(n, 1);
    let (e, _) = get_run_with(409, Some(json!({"detail": "Run is not RUNNING"}))).await;
    assert!(matches!(e, PlatformError::Conflict { .. }));
    assert_eq!(e.to_string(), "HTTP 409: Run is not RUNNING");
    assert!(!e.is_ambiguous() && !e.is_retryable());
}

#[tokio::test]
async fn status_422_list_detail_becomes_per_field_lines() {
    let (e, _) = get_run_with(
        422,
        Some(json!({"detail": [
            {"loc": ["body", "config", "trainer"], "msg": "field required", "type": "missing"},
            {"loc": ["body", "config", "orchestrator", "batch_size"], "msg": "must be > 0", "type": "value_error"},
            {"loc": ["query", "limit", 0], "msg": "bad", "type": "x"}
        ]})),
    )
    .await;
    let PlatformError::Validation { errors } = &e else {
        panic!("validation expected: {e:?}");
    };
    assert_eq!(
        errors[0],
        FieldError {
            field: "config.trainer".into(),
            message: "field required".into()
        }
    );
    assert_eq!(
        e.to_string(),
        "Validation failed:\n  - config.trainer: field required\n  - config.orchestrator.batch_size: must be > 0\n  - query.limit.0: bad"
    );
    // A string detail on 422 is a plain API error.
    let (e, _) = get_run_with(422, Some(json!({"detail": "bad thing"}))).await;
    assert!(matches!(e, PlatformError::Api { status: 422, .. }));
    assert_eq!(e.to_string(), "HTTP 422: bad thing");
}

#[tokio::test]
async fn status_429_exposes_retry_after_in_seconds_and_http_date() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(429)
                .insert_header("Retry-After", "7")
                .set_body_json(json!({"detail": "Too many requests"})),
        )
        .mount(&server)
        .await;
    let e = client(&server).pause_run(RUN).await.unwrap_err();
    assert!(matches!(e, PlatformError::RateLimited { .. }));
    assert_eq!(e.retry_after(), Some(Duration::from_secs(7)));
    assert!(e.to_string().contains("retry after 7s"), "{e}");

    let server = MockServer::start().await;
    let in_a_minute =
        httpdate::fmt_http_date(std::time::SystemTime::now() + Duration::from_secs(60));
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(429).insert_header("Retry-After", in_a_minute.as_str()))
        .mount(&server)
        .await;
    let e = client(&server).pause_run(RUN).await.unwrap_err();
    let after = e.retry_after().unwrap();
    assert!(
        after > Duration::from_secs(50) && after <= Duration::from_secs(60),
        "{after:?}"
    );
}

#[tokio::test]
async fn status_5xx_and_plain_text_bodies() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .respond_with(ResponseTemplate::new(500).set_body_string("Internal Server Error"))
        .mount(&server)
        .await;
    let e = client(&server).get_run(RUN).await.unwrap_err();
    assert!(matches!(e, PlatformError::Server { status: 500, .. }));
    assert!(
        e.to_string().starts_with("HTTP 500: Internal Server Error"),
        "{e}"
    );
    assert!(e.is_ambiguous());
    assert_eq!(
        request_count(&server).await,
        1,
        "500 is not in the retry set"
    );

    let (e, _) = get_run_with(502, None).await;
    assert!(
        e.to_string().starts_with("HTTP 502: 502 Bad Gateway"),
        "{e}"
    );
}

#[tokio::test]
async fn non_object_and_non_json_success_bodies() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!([1, 2])))
        .up_to_n_times(1)
        .mount(&server)
        .await;
    let client = client(&server);
    let e = client.get_progress(RUN).await.unwrap_err();
    assert!(matches!(e, PlatformError::NotJsonObject { .. }));
    assert_eq!(
        e.to_string(),
        format!("API response was not a JSON object (GET /rft/runs/{RUN}/progress)")
    );

    Mock::given(method("GET"))
        .respond_with(ResponseTemplate::new(200).set_body_string("<html>oops</html>"))
        .mount(&server)
        .await;
    let e = client.get_progress(RUN).await.unwrap_err();
    assert!(matches!(e, PlatformError::Decode { .. }));
    assert!(e.to_string().contains("not JSON"), "{e}");
}

#[tokio::test]
async fn transport_failure_before_sending_is_not_ambiguous() {
    // Nothing listens on port 9 (discard) on loopback in the test environment.
    let client = PlatformClient::new(fast_settings("http://127.0.0.1:9", KEY)).unwrap();
    let e = client
        .create_run(&CreateRunRequest::default())
        .await
        .unwrap_err();
    let PlatformError::Transport { maybe_sent, .. } = &e else {
        panic!("transport expected: {e:?}");
    };
    assert!(!maybe_sent);
    assert!(!e.is_ambiguous());
    assert!(
        e.to_string()
            .starts_with("Request failed: POST /training/runs"),
        "{e}"
    );
}

#[tokio::test]
async fn no_key_fails_before_sending() {
    let server = MockServer::start().await;
    let mut s = fast_settings(&server.uri(), KEY);
    s.api_key = None;
    let e = PlatformClient::new(s)
        .unwrap()
        .get_run(RUN)
        .await
        .unwrap_err();
    assert!(matches!(e, PlatformError::MissingApiKey));
    assert!(e.to_string().contains("PRIME_API_KEY"));
    assert_eq!(request_count(&server).await, 0);
}

// ---------------------------------------------------------------- retries

#[tokio::test]
async fn a_get_is_retried_after_503_and_succeeds_with_two_requests() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .respond_with(ResponseTemplate::new(503))
        .up_to_n_times(1)
        .with_priority(1)
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({"runs": [], "total": 0})))
        .with_priority(2)
        .mount(&server)
        .await;
    let page = client(&server)
        .list_runs(&ListRunsQuery::default())
        .await
        .unwrap();
    assert_eq!(page.total, Some(0));
    assert_eq!(request_count(&server).await, 2);
}

#[tokio::test]
async fn a_get_gives_up_after_max_attempts_and_honours_a_capped_retry_after() {
    let server = MockServer::start().await;
    // Retry-After 3600 s is capped at the policy's 200 ms, so this finishes quickly.
    Mock::given(method("GET"))
        .respond_with(ResponseTemplate::new(429).insert_header("Retry-After", "3600"))
        .mount(&server)
        .await;
    let started = std::time::Instant::now();
    let e = client(&server)
        .get_logs(RUN, &LogsQuery::default())
        .await
        .unwrap_err();
    assert!(matches!(e, PlatformError::RateLimited { .. }));
    assert_eq!(request_count(&server).await, 3);
    let took = started.elapsed();
    assert!(
        took >= Duration::from_millis(400) && took < Duration::from_secs(5),
        "{took:?}"
    );
}

#[tokio::test]
async fn a_get_that_times_out_is_retried() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(json!({"gpuTypes": []}))
                .set_delay(Duration::from_millis(600)),
        )
        .up_to_n_times(1)
        .with_priority(1)
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({"gpuTypes": ["H200_141GB"]})))
        .with_priority(2)
        .mount(&server)
        .await;
    let mut s = fast_settings(&server.uri(), KEY);
    s.timeouts.request = Duration::from_millis(200);
    let g = PlatformClient::new(s)
        .unwrap()
        .gpu_types(&TeamScope::Active)
        .await
        .unwrap();
    assert_eq!(g.gpu_types, vec!["H200_141GB"]);
    assert_eq!(request_count(&server).await, 2);
}

#[tokio::test]
async fn writes_are_never_retried() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(503))
        .mount(&server)
        .await;
    Mock::given(method("PUT"))
        .respond_with(ResponseTemplate::new(502))
        .mount(&server)
        .await;
    Mock::given(method("DELETE"))
        .respond_with(ResponseTemplate::new(504))
        .mount(&server)
        .await;
    let client = client(&server);
    let e = client
        .create_run(&CreateRunRequest::default())
        .await
        .unwrap_err();
    assert!(
        e.is_ambiguous(),
        "a 503 on create leaves the outcome unknown"
    );
    assert_eq!(request_count(&server).await, 1);
    let e = client
        .resume_run(RUN, &Default::default())
        .await
        .unwrap_err();
    assert!(e.is_ambiguous());
    assert_eq!(request_count(&server).await, 2);
    client
        .create_volume("v", "5Ti", &TeamScope::Active)
        .await
        .unwrap_err();
    assert_eq!(request_count(&server).await, 3);
    client.stop_run(RUN).await.unwrap_err();
    assert_eq!(request_count(&server).await, 4);
    client.restart_run(RUN).await.unwrap_err();
    assert_eq!(request_count(&server).await, 5);
    client.delete_run(RUN).await.unwrap_err();
    assert_eq!(request_count(&server).await, 6);
    client.pause_run(RUN).await.unwrap_err();
    assert_eq!(request_count(&server).await, 7);
}

#[tokio::test]
async fn a_create_that_times_out_is_ambiguous_and_sent_once() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(201)
                .set_body_json(json!({"runId": "r1", "tokenValue": "t"}))
                .set_delay(Duration::from_secs(2)),
        )
        .mount(&server)
        .await;
    let mut s = fast_settings(&server.uri(), KEY);
    // The ordinary timeout is long; the create timeout is the one that applies.
    s.timeouts.request = Duration::from_secs(10);
    s.timeouts.create = Duration::from_millis(300);
    let e = PlatformClient::new(s)
        .unwrap()
        .create_run(&CreateRunRequest::default())
        .await
        .unwrap_err();
    assert!(e.is_timeout(), "{e:?}");
    assert!(e.is_ambiguous());
    assert!(e.to_string().contains("may still have acted"), "{e}");
    assert_eq!(request_count(&server).await, 1);
}

// ---------------------------------------------------------------- the sentinel key

const SENTINEL: &str = "SENTINEL-api-key-7f3a9c2e1b";

/// A `MakeWriter` collecting everything tracing writes.
#[derive(Clone, Default)]
struct Capture(Arc<Mutex<Vec<u8>>>);

impl Write for Capture {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Capture {
    type Writer = Capture;
    fn make_writer(&'a self) -> Self::Writer {
        self.clone()
    }
}

#[tokio::test(flavor = "current_thread")]
async fn the_key_never_appears_in_debug_errors_or_logs() {
    let capture = Capture::default();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_writer(capture.clone())
        .with_ansi(false)
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);

    let server = MockServer::start().await;
    // Servers that echo the key back in their error text.
    let echo = format!("invalid token {SENTINEL} for this route");
    for (status, m) in [
        (403u16, "PUT"),
        (404, "GET"),
        (409, "POST"),
        (500, "DELETE"),
    ] {
        Mock::given(method(m))
            .respond_with(ResponseTemplate::new(status).set_body_json(json!({"detail": echo})))
            .mount(&server)
            .await;
    }
    let settings = fast_settings(&server.uri(), SENTINEL).with_team(TEAM);
    let client = PlatformClient::new(settings.clone()).unwrap();
    let mut texts = vec![format!("{settings:?}"), format!("{client:?}")];

    let errors = vec![
        client.stop_run(RUN).await.unwrap_err(),
        client.get_run(RUN).await.unwrap_err(),
        client.pause_run(RUN).await.unwrap_err(),
        client.delete_run(RUN).await.unwrap_err(),
        client
            .traces()
            .list_traces(&TracesQuery::default())
            .await
            .unwrap_err(),
        PlatformClient::new(fast_settings("http://127.0.0.1:9", SENTINEL))
            .unwrap()
            .get_run(RUN)
            .await
            .unwrap_err(),
    ];
    // The echoed detail is kept, with the key scrubbed.
    assert!(
        errors[1]
            .to_string()
            .contains("invalid token [REDACTED] for this route")
    );
    for e in &errors {
        texts.push(e.to_string());
        texts.push(format!("{e:?}"));
    }
    // 422 items too.
    let server2 = MockServer::start().await;
    Mock::given(method("GET"))
        .respond_with(ResponseTemplate::new(422).set_body_json(
            json!({"detail": [{"loc": ["query", SENTINEL], "msg": format!("bad {SENTINEL}")}]}),
        ))
        .mount(&server2)
        .await;
    let e = PlatformClient::new(fast_settings(&server2.uri(), SENTINEL))
        .unwrap()
        .get_run(RUN)
        .await
        .unwrap_err();
    texts.push(e.to_string());
    texts.push(format!("{e:?}"));

    let logs = String::from_utf8(capture.0.lock().unwrap().clone()).unwrap();
    assert!(!logs.is_empty(), "tracing output was captured");
    texts.push(logs);
    for t in &texts {
        assert!(!t.contains(SENTINEL), "the key leaked into: {t}");
    }
    // The key did go out on the wire, where it belongs.
    let reqs = server.received_requests().await.unwrap();
    assert!(reqs.iter().all(
        |r| r.headers.get("authorization").unwrap().to_str().unwrap()
            == format!("Bearer {SENTINEL}")
    ));
}

#[test]
fn masked_key_shows_only_the_last_four() {
    let s = PlatformSettings::new("http://x", SecretString::from(SENTINEL));
    assert_eq!(s.masked_api_key().as_deref(), Some("…2e1b"));
    let s = PlatformSettings::new("http://x", SecretString::from("short"));
    assert_eq!(s.masked_api_key().as_deref(), Some("****"));
}
