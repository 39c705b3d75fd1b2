//! Golden tests of the Prime Traces client (§9): its own base URL, `X-Prime-Team-ID` only
//! with a team, no Content-Type on reads, cursor pages, error bodies, retries, and raw
//! downloads streamed to disk atomically.

mod common;

use common::*;
use factory_platform::{
    EpisodesQuery, PlatformClient, PlatformError, TeamScope, TraceRunsQuery, TraceSort, TracesQuery,
};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use wiremock::matchers::{method, path, query_param};
use wiremock::{Mock, MockServer, ResponseTemplate};

fn ok(body: Value) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_json(body)
}

fn trace_summary(id: &str) -> Value {
    json!({"trace_id": id, "upload_id": "up1", "episode_id": "ep1",
           "created_at": "2026-01-02T03:04:05Z", "ingested_at": "2026-01-02T03:04:06Z",
           "run_id": RUN, "environment_id": "reverse-text",
           "model": {"provider": "vllm", "id": "Qwen/Qwen3-4B"}, "task_id": "t1", "agent_name": null,
           "score": {"reward": 0.75, "outcome": "success"},
           "execution": {"has_error": false, "is_truncated": true},
           "duration_ms": 1234, "total_tokens": 512, "size_bytes": 2048,
           "context": {"run_type": "train", "step": "3"}, "user_id": "cuser1"})
}

/// A client whose platform base is a dead address and whose traces base is `server`, so any
/// traces call that went to the platform base would fail.
fn traces_client(server: &MockServer, team: Option<&str>) -> PlatformClient {
    let mut s = fast_settings("http://127.0.0.1:9", KEY);
    s.traces_url = server.uri();
    if let Some(t) = team {
        s = s.with_team(t);
    }
    PlatformClient::new(s).unwrap()
}

#[tokio::test]
async fn list_traces_sends_every_filter_the_team_header_and_no_content_type() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/api/v1/traces"))
        .respond_with(ok(
            json!({"items": [trace_summary("tr1")], "next_cursor": "cur-2"}),
        ))
        .expect(1)
        .mount(&server)
        .await;
    let client = traces_client(&server, Some(TEAM));
    let page = client
        .traces()
        .list_traces(&TracesQuery {
            limit: 50,
            run_id: Some(RUN.into()),
            upload_ids: vec!["up1".into(), "up2".into()],
            environment_id: Some("reverse-text".into()),
            task_id: Some("t1".into()),
            model_id: Some("Qwen/Qwen3-4B".into()),
            outcome: Some("success".into()),
            has_error: Some(false),
            reward_min: Some(0.5),
            reward_max: Some(1.0),
            created_after: Some("2026-01-01T00:00:00Z".into()),
            created_before: Some("2026-02-01T00:00:00Z".into()),
            sort: Some(TraceSort::DurationMs),
            cursor: Some("cur-1".into()),
            context: vec![("run_type".into(), "eval".into())],
        })
        .await
        .unwrap();
    let r = single_request(&server).await;
    assert_traces_headers(&r, Some(TEAM));
    assert_query(
        &r,
        &[
            ("limit", "50"),
            ("run_id", RUN),
            ("upload_id", "up1"),
            ("upload_id", "up2"),
            ("environment_id", "reverse-text"),
            ("task_id", "t1"),
            ("model_id", "Qwen/Qwen3-4B"),
            ("outcome", "success"),
            ("has_error", "false"),
            ("reward_min", "0.5"),
            ("reward_max", "1"),
            ("created_after", "2026-01-01T00:00:00Z"),
            ("created_before", "2026-02-01T00:00:00Z"),
            ("sort", "duration_ms"),
            ("cursor", "cur-1"),
            ("context.run_type", "eval"),
        ],
    );
    assert_eq!(page.next_cursor.as_deref(), Some("cur-2"));
    let t = &page.items[0];
    assert_eq!(t.trace_id, "tr1");
    assert_eq!(t.upload_id.as_deref(), Some("up1"));
    assert_eq!(t.episode_id.as_deref(), Some("ep1"));
    assert_eq!(t.run_id.as_deref(), Some(RUN));
    assert_eq!(t.model.provider.as_deref(), Some("vllm"));
    assert_eq!(t.model.id.as_deref(), Some("Qwen/Qwen3-4B"));
    assert_eq!(t.agent_name, None);
    assert_eq!(t.score.reward, Some(0.75));
    assert_eq!(t.score.outcome.as_deref(), Some("success"));
    assert!(!t.execution.has_error && t.execution.is_truncated);
    assert_eq!(t.duration_ms, Some(1234.0));
    assert_eq!(t.total_tokens, Some(512));
    assert_eq!(t.size_bytes, Some(2048));
    assert_eq!(t.context["run_type"], "train");
    assert_eq!(t.user_id.as_deref(), Some("cuser1"));
}

#[tokio::test]
async fn without_a_team_there_is_no_team_header_and_limit_defaults_to_20() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/api/v1/traces"))
        .respond_with(ok(json!({"items": [], "next_cursor": null})))
        .mount(&server)
        .await;
    let client = traces_client(&server, Some(TEAM));
    let page = client
        .traces_scoped(&TeamScope::Personal)
        .list_traces(&TracesQuery::default())
        .await
        .unwrap();
    assert!(page.items.is_empty() && page.next_cursor.is_none());
    let r = single_request(&server).await;
    assert_traces_headers(&r, None);
    assert_query(&r, &[("limit", "20")]);
}

#[tokio::test]
async fn get_trace_and_episode_endpoints() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/api/v1/traces/tr1"))
        .respond_with(ok(trace_summary("tr1")))
        .mount(&server)
        .await;
    let client = traces_client(&server, Some(TEAM));
    let t = client.traces().get_trace("tr1").await.unwrap();
    assert_eq!(t.trace_id, "tr1");
    let r = single_request(&server).await;
    assert_traces_headers(&r, Some(TEAM));
    assert_query(&r, &[]);

    server.reset().await;
    let episode = json!({"episode_id": "ep1", "upload_id": "up1", "schema_version": 1,
        "created_at": "2026-01-02T03:04:05Z", "ingested_at": "2026-01-02T03:04:06Z",
        "run_id": RUN, "environment_id": null, "outcome": "failure", "has_error": true,
        "error": {"type": "Timeout", "message": "env timed out"}});
    Mock::given(method("GET"))
        .and(path("/api/v1/episodes"))
        .respond_with(ok(json!({"items": [episode], "next_cursor": null})))
        .mount(&server)
        .await;
    let page = client
        .traces()
        .list_episodes(&EpisodesQuery {
            run_id: Some(RUN.into()),
            run_step: Some(7),
            has_error: Some(true),
            upload_id: Some("up1".into()),
            context: vec![("split".into(), "train".into())],
            ..Default::default()
        })
        .await
        .unwrap();
    let r = single_request(&server).await;
    assert_traces_headers(&r, Some(TEAM));
    assert_query(
        &r,
        &[
            ("limit", "20"),
            ("run_id", RUN),
            ("upload_id", "up1"),
            ("has_error", "true"),
            ("run_step", "7"),
            ("context.split", "train"),
        ],
    );
    let e = &page.items[0];
    assert_eq!(e.episode_id, "ep1");
    assert_eq!(e.outcome.as_deref(), Some("failure"));
    assert!(e.has_error);
    assert_eq!(e.error.as_ref().unwrap().kind.as_deref(), Some("Timeout"));
    assert_eq!(e.schema_version, Some(json!(1)));
    assert!(e.traces.is_none());

    server.reset().await;
    Mock::given(method("GET"))
        .and(path("/api/v1/episodes/ep1"))
        .respond_with(ok(
            json!({"episode_id": "ep1", "upload_id": "up1", "schema_version": 1,
            "created_at": "x", "ingested_at": "y", "run_id": null, "environment_id": null,
            "outcome": null, "has_error": false, "error": {"type": null, "message": null},
            "traces": {"trace_count": 2, "total_tokens": 100, "total_duration_ms": 50,
                       "any_trace_error": false, "agent_names": ["solver", "judge"]}}),
        ))
        .mount(&server)
        .await;
    let d = client.traces().get_episode("ep1").await.unwrap();
    let stats = d.traces.unwrap();
    assert_eq!(stats.trace_count, Some(2));
    assert_eq!(stats.agent_names, vec!["solver", "judge"]);
    assert_query(&single_request(&server).await, &[]);

    server.reset().await;
    Mock::given(method("GET"))
        .and(path("/api/v1/episodes/ep1/traces"))
        .respond_with(ok(
            json!({"items": [trace_summary("tr9")], "next_cursor": null}),
        ))
        .mount(&server)
        .await;
    let page = client
        .traces()
        .list_episode_traces(
            "ep1",
            &TracesQuery {
                sort: Some(TraceSort::Reward),
                outcome: Some("success".into()),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(page.items[0].trace_id, "tr9");
    // Episode traces take the trace filters but no sort.
    assert_query(
        &single_request(&server).await,
        &[("limit", "20"), ("outcome", "success")],
    );
}

/// `list_traces` with a step reads the step's episodes, then each episode's traces with the
/// trace filters the CLI sends (`prime traces list --episode-id E --has-error …`): every filter
/// on the wire, `has_error` as `true`/`false`, rewards as plain numbers, and no sort.
#[tokio::test]
async fn episode_traces_send_the_cli_filters() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/api/v1/episodes/ep1/traces"))
        .respond_with(ok(json!({"items": [], "next_cursor": null})))
        .mount(&server)
        .await;
    let client = traces_client(&server, None);
    client
        .traces_scoped(&TeamScope::Personal)
        .list_episode_traces(
            "ep1",
            &TracesQuery {
                limit: 100,
                environment_id: Some("owner/reverse-text@0.1".into()),
                task_id: Some("task-007".into()),
                outcome: Some("error".into()),
                has_error: Some(true),
                reward_min: Some(0.25),
                reward_max: Some(0.75),
                cursor: Some("o100".into()),
                sort: Some(TraceSort::Reward),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let r = single_request(&server).await;
    assert_traces_headers(&r, None);
    assert_query(
        &r,
        &[
            ("limit", "100"),
            ("environment_id", "owner/reverse-text@0.1"),
            ("task_id", "task-007"),
            ("outcome", "error"),
            ("has_error", "true"),
            ("reward_min", "0.25"),
            ("reward_max", "0.75"),
            ("cursor", "o100"),
        ],
    );
}

#[tokio::test]
async fn runs_run_and_steps_endpoints() {
    let server = MockServer::start().await;
    let summary = json!({"run_id": RUN, "first_trace_created_at": "2026-01-02T03:04:05Z",
        "last_trace_created_at": "2026-01-02T04:04:05Z", "last_trace_ingested_at": "2026-01-02T04:04:06Z",
        "trace_count": 40, "episode_count": 10, "avg_reward": 0.4, "step_min": 0, "step_max": 3,
        "step_count": 4, "has_error": false, "first_user_id": "cuser1",
        "environment_ids": ["reverse-text"], "model_ids": ["Qwen/Qwen3-4B"],
        "context": {"run_type": "eval"}});
    Mock::given(method("GET"))
        .and(path("/api/v1/runs"))
        .respond_with(ok(json!({"items": [summary.clone()], "next_cursor": null})))
        .mount(&server)
        .await;
    let client = traces_client(&server, None);
    let page = client
        .traces()
        .list_runs(&TraceRunsQuery {
            limit: 5,
            run_types: vec!["eval".into(), "train".into()],
            created_after: Some("2026-01-01T00:00:00Z".into()),
            cursor: Some("c1".into()),
            ..Default::default()
        })
        .await
        .unwrap();
    let r = single_request(&server).await;
    assert_traces_headers(&r, None);
    assert_query(
        &r,
        &[
            ("limit", "5"),
            ("run_type", "eval"),
            ("run_type", "train"),
            ("created_after", "2026-01-01T00:00:00Z"),
            ("cursor", "c1"),
        ],
    );
    let s = &page.items[0];
    assert_eq!(s.run_id, RUN);
    assert_eq!((s.trace_count, s.episode_count, s.step_count), (40, 10, 4));
    assert_eq!(s.avg_reward, Some(0.4));
    assert_eq!((s.step_min, s.step_max), (Some(0), Some(3)));
    assert_eq!(s.environment_ids, vec!["reverse-text"]);
    assert_eq!(s.context["run_type"], "eval");

    server.reset().await;
    Mock::given(method("GET"))
        .and(path(format!("/api/v1/runs/{RUN}")))
        .respond_with(ok(summary))
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path(format!("/api/v1/runs/{RUN}/steps")))
        .respond_with(ok(
            json!({"step_min": 0, "step_max": 3, "step_count": 4, "items": [
            {"step": 0, "trace_count": 10, "episode_count": 3, "avg_reward": 0.1},
            {"step": 3, "trace_count": 10, "episode_count": 2, "avg_reward": null}]}),
        ))
        .mount(&server)
        .await;
    let run = client.traces().get_run(RUN).await.unwrap();
    assert_eq!(run.step_count, 4);
    let steps = client.traces().get_run_steps(RUN).await.unwrap();
    assert_eq!(steps.step_count, Some(4));
    assert_eq!(steps.items.len(), 2);
    assert_eq!(steps.items[1].step, 3);
    assert_eq!(steps.items[1].avg_reward, None);
    assert_eq!(steps.items[0].episode_count, 3);
    for r in server.received_requests().await.unwrap() {
        assert_traces_headers(&r, None);
        assert_query(&r, &[]);
    }
}

#[tokio::test]
async fn traces_error_bodies_keep_their_code() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .respond_with(ResponseTemplate::new(404).set_body_json(
            json!({"error": {"code": "trace_not_found", "message": "Trace tr-x not found"}}),
        ))
        .up_to_n_times(1)
        .mount(&server)
        .await;
    let client = traces_client(&server, None);
    let e = client.traces().get_trace("tr-x").await.unwrap_err();
    assert_eq!(e.code(), Some("trace_not_found"));
    assert_eq!(e.to_string(), "HTTP 404: Trace tr-x not found");

    Mock::given(method("GET"))
        .respond_with(ResponseTemplate::new(409).set_body_json(
            json!({"error": {"code": "trace_not_indexed", "message": "not indexed yet"}}),
        ))
        .up_to_n_times(1)
        .mount(&server)
        .await;
    let e = client.traces().get_trace("tr-x").await.unwrap_err();
    assert!(matches!(e, PlatformError::Conflict { .. }));
    assert_eq!(e.code(), Some("trace_not_indexed"));

    Mock::given(method("GET"))
        .respond_with(ResponseTemplate::new(400).set_body_string("bad cursor"))
        .mount(&server)
        .await;
    let e = client
        .traces()
        .list_traces(&TracesQuery::default())
        .await
        .unwrap_err();
    assert_eq!(e.to_string(), "HTTP 400: bad cursor");
}

#[tokio::test]
async fn traces_gets_retry_503_and_429_with_retry_after() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .respond_with(ResponseTemplate::new(503))
        .up_to_n_times(1)
        .with_priority(1)
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .respond_with(ResponseTemplate::new(429).insert_header("Retry-After", "0"))
        .up_to_n_times(1)
        .with_priority(2)
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .respond_with(ok(trace_summary("tr1")))
        .with_priority(3)
        .mount(&server)
        .await;
    let t = traces_client(&server, None)
        .traces()
        .get_trace("tr1")
        .await
        .unwrap();
    assert_eq!(t.trace_id, "tr1");
    assert_eq!(request_count(&server).await, 3);
}

#[tokio::test]
async fn ids_with_slashes_or_dots_are_refused_locally() {
    let server = MockServer::start().await;
    let client = traces_client(&server, None);
    let dir = tempfile::tempdir().unwrap();
    for bad in ["a/b", ".", "..", ""] {
        assert!(matches!(
            client.traces().get_trace(bad).await,
            Err(PlatformError::InvalidArgument(_))
        ));
        assert!(matches!(
            client.traces().get_episode(bad).await,
            Err(PlatformError::InvalidArgument(_))
        ));
        assert!(matches!(
            client.traces().get_run(bad).await,
            Err(PlatformError::InvalidArgument(_))
        ));
        assert!(matches!(
            client
                .traces()
                .download_trace_raw(bad, &dir.path().join("x"))
                .await,
            Err(PlatformError::InvalidArgument(_))
        ));
    }
    assert!(matches!(
        client
            .traces()
            .list_traces(&TracesQuery {
                limit: 101,
                ..Default::default()
            })
            .await,
        Err(PlatformError::InvalidArgument(_))
    ));
    assert_eq!(request_count(&server).await, 0);
}

// ---------------------------------------------------------------- raw downloads

#[tokio::test]
async fn raw_download_is_byte_exact_and_atomic() {
    let server = MockServer::start().await;
    // Bytes that are not valid UTF-8 and have no trailing newline: written exactly.
    let mut body = b"{\"a\":1}\n{\"b\":2}".to_vec();
    body.extend_from_slice(&[0xff, 0x00, 0xfe]);
    Mock::given(method("GET"))
        .and(path("/api/v1/traces/tr1"))
        .and(query_param("raw", "true"))
        .respond_with(ResponseTemplate::new(200).set_body_bytes(body.clone()))
        .expect(1)
        .mount(&server)
        .await;
    let dir = tempfile::tempdir().unwrap();
    let dest = dir.path().join("tr1.jsonl");
    std::fs::write(&dest, b"old content").unwrap();
    let n = traces_client(&server, Some(TEAM))
        .traces()
        .download_trace_raw("tr1", &dest)
        .await
        .unwrap();
    assert_eq!(n, body.len() as u64);
    assert_eq!(std::fs::read(&dest).unwrap(), body);
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names.len(), 1, "no temporary file left behind: {names:?}");
    let r = single_request(&server).await;
    assert_traces_headers(&r, Some(TEAM));
    assert_query(&r, &[("raw", "true")]);
}

#[tokio::test]
async fn raw_episode_download() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/api/v1/episodes/ep1"))
        .and(query_param("raw", "true"))
        .respond_with(ResponseTemplate::new(200).set_body_bytes(b"episode-bytes".to_vec()))
        .mount(&server)
        .await;
    let dir = tempfile::tempdir().unwrap();
    let dest = dir.path().join("ep1.jsonl");
    let n = traces_client(&server, None)
        .traces()
        .download_episode_raw("ep1", &dest)
        .await
        .unwrap();
    assert_eq!(n, 13);
    assert_eq!(std::fs::read(&dest).unwrap(), b"episode-bytes");
}

#[tokio::test]
async fn raw_download_errors_before_bytes_are_retried_and_leave_no_file() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .respond_with(ResponseTemplate::new(502))
        .up_to_n_times(1)
        .with_priority(1)
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .respond_with(ResponseTemplate::new(200).set_body_bytes(b"ok".to_vec()))
        .with_priority(2)
        .mount(&server)
        .await;
    let dir = tempfile::tempdir().unwrap();
    let dest = dir.path().join("t.jsonl");
    let client = traces_client(&server, None);
    assert_eq!(
        client
            .traces()
            .download_trace_raw("t", &dest)
            .await
            .unwrap(),
        2
    );
    assert_eq!(request_count(&server).await, 2);

    // A 404 leaves nothing at all.
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .respond_with(
            ResponseTemplate::new(404)
                .set_body_json(json!({"error": {"code": "trace_not_found", "message": "nope"}})),
        )
        .mount(&server)
        .await;
    let dest2 = dir.path().join("missing.jsonl");
    let e = traces_client(&server, None)
        .traces()
        .download_trace_raw("missing", &dest2)
        .await
        .unwrap_err();
    assert_eq!(e.code(), Some("trace_not_found"));
    assert!(!dest2.exists());
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
}

/// A one-shot HTTP server that announces more bytes than it sends, then closes.
async fn short_body_server(
    announced: usize,
    sent: &'static [u8],
) -> (String, tokio::task::JoinHandle<usize>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let handle = tokio::spawn(async move {
        let mut served = 0;
        // Serve every connection the same way, so a (wrong) retry would be counted.
        while let Ok(Ok((mut sock, _))) =
            tokio::time::timeout(std::time::Duration::from_millis(500), listener.accept()).await
        {
            served += 1;
            let mut buf = vec![0u8; 4096];
            let _ = sock.read(&mut buf).await;
            let head = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: application/x-ndjson\r\nContent-Length: {announced}\r\n\r\n"
            );
            let _ = sock.write_all(head.as_bytes()).await;
            let _ = sock.write_all(sent).await;
            let _ = sock.flush().await;
            drop(sock);
        }
        served
    });
    (format!("http://{addr}"), handle)
}

#[tokio::test]
async fn raw_download_cut_short_is_an_error_not_retried_and_leaves_no_file() {
    let (url, handle) = short_body_server(1000, b"{\"partial\": tr").await;
    let mut s = fast_settings("http://127.0.0.1:9", KEY);
    s.traces_url = url;
    let client = PlatformClient::new(s).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let dest = dir.path().join("cut.jsonl");
    std::fs::write(&dest, b"previous complete file").unwrap();
    let e = client
        .traces()
        .download_trace_raw("cut", &dest)
        .await
        .unwrap_err();
    assert!(matches!(e, PlatformError::Truncated { .. }), "{e:?}");
    assert!(e.to_string().contains("cut short"), "{e}");
    // The previous file is untouched and no partial file remains.
    assert_eq!(std::fs::read(&dest).unwrap(), b"previous complete file");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    assert_eq!(
        handle.await.unwrap(),
        1,
        "a download is never retried once bytes flowed"
    );
}
