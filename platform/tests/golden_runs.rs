//! Golden tests of the run endpoints: the exact request (method, path, query, body, headers)
//! and the decoding of answers shaped as in `platform-api.md` §4–§6 and the wire transcript.

mod common;

use std::time::Duration;

use common::*;
use factory_platform::wire::runs::{
    CreateRunRequest, PrepareRequest, ResumeRunRequest, TrainingMode,
};
use factory_platform::{
    DistributionsQuery, ListRunsQuery, LogComponent, LogsQuery, MetricsQuery, PlatformClient,
    PlatformError, PrepareOutcome, SamplesQuery, TeamScope,
};
use secrecy::{ExposeSecret, SecretString};
use serde_json::{Map, Value, json};
use wiremock::matchers::{body_json, method, path, query_param};
use wiremock::{Mock, MockServer, ResponseTemplate};

fn ok(body: Value) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_json(body)
}

fn as_map(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => panic!("object expected"),
    }
}

// ---------------------------------------------------------------- prepare (§6.2)

#[tokio::test]
async fn prepare_sends_the_transcript_body_and_treats_404_as_not_supported() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/api/v1/training/runs/prepare"))
        .and(body_json(
            json!({"imageTag": "v1", "mode": "rl", "teamId": TEAM}),
        ))
        .respond_with(ResponseTemplate::new(404).set_body_json(json!({"detail": "Not Found"})))
        .expect(1)
        .mount(&server)
        .await;
    let client = team_client(&server);
    let req = PrepareRequest {
        mode: TrainingMode::Rl,
        team_id: client.active_team_id().map(str::to_owned),
        image_tag: Some("v1".into()),
        source_ref: None,
    };
    let out = client.prepare_run(&req).await.unwrap();
    assert_eq!(out, PrepareOutcome::NotSupported { status: 404 });
    let r = single_request(&server).await;
    assert_platform_headers(&r);
    assert_query(&r, &[]);
}

#[tokio::test]
async fn prepare_always_sends_team_id_null_and_parses_the_strict_answer() {
    let server = MockServer::start().await;
    let answer = json!({
        "contract_version": 1,
        "mode": "sft",
        "runtime": {"repository": "ghcr.io/primeintellect-ai/prime-rl",
                    "digest": format!("sha256:{}", "a".repeat(64)),
                    "image_commit": "1".repeat(40),
                    "source_commit": null,
                    "schema_commit": "1".repeat(40)},
        "schema_install": {"python": "3.12", "requirements": ["prime-rl-configs"], "constraints": ["pydantic<3"]},
        "submission_supported": false
    });
    Mock::given(method("POST"))
        .and(path("/api/v1/training/runs/prepare"))
        .respond_with(ok(answer))
        .mount(&server)
        .await;
    let client = client(&server);
    let req = PrepareRequest {
        mode: TrainingMode::Sft,
        team_id: None,
        image_tag: None,
        source_ref: Some("feature/x".into()),
    };
    let PrepareOutcome::Prepared(p) = client.prepare_run(&req).await.unwrap() else {
        panic!("prepared expected");
    };
    let r = single_request(&server).await;
    assert_body(
        &r,
        json!({"mode": "sft", "teamId": null, "sourceRef": "feature/x"}),
    );
    assert_eq!(p.contract_version, 1);
    assert_eq!(p.mode, TrainingMode::Sft);
    assert_eq!(p.runtime.source_commit, None);
    assert_eq!(p.runtime.schema_commit, "1".repeat(40));
    assert_eq!(p.schema_install.requirements, vec!["prime-rl-configs"]);
    assert!(!p.submission_supported);
}

#[tokio::test]
async fn prepare_405_is_not_supported_but_other_errors_and_bad_shapes_abort() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(405).set_body_json(json!({"detail": "Method Not Allowed"})),
        )
        .up_to_n_times(1)
        .mount(&server)
        .await;
    let client = client(&server);
    let req = PrepareRequest {
        mode: TrainingMode::Rl,
        team_id: None,
        image_tag: None,
        source_ref: None,
    };
    assert_eq!(
        client.prepare_run(&req).await.unwrap(),
        PrepareOutcome::NotSupported { status: 405 }
    );

    // Wrong repository literal → a parse error, not "not supported".
    server.reset().await;
    let mut bad = json!({
        "contract_version": 1, "mode": "rl",
        "runtime": {"repository": "docker.io/evil/prime-rl", "digest": "sha256:x",
                    "image_commit": "a", "source_commit": "b", "schema_commit": "b"},
        "schema_install": {"python": "3.12", "requirements": [], "constraints": []},
        "submission_supported": true
    });
    Mock::given(method("POST"))
        .respond_with(ok(bad.clone()))
        .mount(&server)
        .await;
    let e = client.prepare_run(&req).await.unwrap_err();
    assert!(matches!(e, PlatformError::Decode { .. }), "{e:?}");
    assert!(
        e.to_string()
            .contains("Failed to parse local validation preparation"),
        "{e}"
    );

    // python must be 3.12.
    server.reset().await;
    bad["runtime"]["repository"] = json!("ghcr.io/primeintellect-ai/prime-rl");
    bad["schema_install"]["python"] = json!("3.11");
    Mock::given(method("POST"))
        .respond_with(ok(bad))
        .mount(&server)
        .await;
    let e = client.prepare_run(&req).await.unwrap_err();
    assert!(e.to_string().contains("3.12"), "{e}");

    // 5xx: distinguishable (the caller skips local validation), 1 request only.
    server.reset().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(503))
        .mount(&server)
        .await;
    let e = client.prepare_run(&req).await.unwrap_err();
    assert_eq!(e.status(), Some(503));
    assert_eq!(request_count(&server).await, 1);

    // 403: aborts.
    server.reset().await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(403).set_body_json(json!({"detail": "sourceRef not allowed"})),
        )
        .mount(&server)
        .await;
    let e = client.prepare_run(&req).await.unwrap_err();
    assert!(matches!(e, PlatformError::Forbidden { .. }));
}

// ---------------------------------------------------------------- create (§6.4)

fn transcript_config() -> Map<String, Value> {
    as_map(
        json!({"max_steps": 10, "model": {"name": "Qwen/Qwen3-4B"}, "name": "my-run",
                  "orchestrator": {"batch_size": 8}, "trainer": {}}),
    )
}

#[tokio::test]
async fn create_sends_the_captured_body_and_decodes_the_answer() {
    let server = MockServer::start().await;
    let captured = json!({"config": {"max_steps": 10, "model": {"name": "Qwen/Qwen3-4B"}, "name": "my-run",
                                     "orchestrator": {"batch_size": 8}, "trainer": {}},
                          "gpuType": "H200_141GB", "imageTag": "v1", "name": "my-run",
                          "teamId": "cteam000000000000000000001"});
    Mock::given(method("POST"))
        .and(path("/api/v1/training/runs"))
        .and(body_json(captured.clone()))
        .respond_with(ResponseTemplate::new(201).set_body_json(json!({
            "runId": RUN, "tokenValue": "tok-per-run-secret", "onDemand": true,
            "gpuType": "H200_141GB", "pricePerGpuHour": 2.5, "estimatedCostPerHour": 10.0,
            "isBeta": true
        })))
        .expect(1)
        .mount(&server)
        .await;
    let client = team_client(&server);
    let req = CreateRunRequest {
        config: transcript_config(),
        name: Some("my-run".into()),
        team_id: client.active_team_id().map(str::to_owned),
        image_tag: Some("v1".into()),
        gpu_type: Some("H200_141GB".into()),
        ..Default::default()
    };
    let out = client.create_run(&req).await.unwrap();
    let r = single_request(&server).await;
    assert_platform_headers(&r);
    assert_query(&r, &[]);
    assert_body(&r, captured);
    assert_eq!(out.run_id, RUN);
    assert_eq!(out.token_value.expose_secret(), "tok-per-run-secret");
    assert_eq!(out.on_demand, Some(true));
    assert_eq!(out.gpu_type.as_deref(), Some("H200_141GB"));
    assert_eq!(out.price_per_gpu_hour, Some(2.5));
    assert_eq!(out.estimated_cost_per_hour, Some(10.0));
    assert_eq!(out.is_beta, Some(true));
    assert!(!format!("{out:?}").contains("tok-per-run-secret"));
}

#[tokio::test]
async fn create_sft_sends_mode_and_secrets_only_on_the_wire() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/api/v1/training/runs"))
        .respond_with(ok(json!({"runId": "r-sft", "tokenValue": "t"})))
        .mount(&server)
        .await;
    let client = client(&server);
    let req = CreateRunRequest {
        config: as_map(json!({"data": {"name": "ds"}})),
        sft: true,
        volume: Some("vol-a".into()),
        wandb_api_key: Some(SecretString::from("wandb-value-123")),
        hf_token: Some(SecretString::from("hf_value456")),
        resume_from: Some("r-paused".into()),
        source_ref: Some("main".into()),
        normalized_config: Some(json!({"artifact": 1})),
        ..Default::default()
    };
    let debug = format!("{req:?}");
    assert!(
        !debug.contains("wandb-value-123") && !debug.contains("hf_value456"),
        "{debug}"
    );
    assert!(debug.contains("[REDACTED]"));
    let out = client.create_run(&req).await.unwrap();
    assert_eq!(out.run_id, "r-sft");
    assert_eq!(out.on_demand, None);
    let r = single_request(&server).await;
    assert_body(
        &r,
        json!({"config": {"data": {"name": "ds"}}, "mode": "sft", "volume": "vol-a",
               "wandbApiKey": "wandb-value-123", "hfToken": "hf_value456",
               "resumeFrom": "r-paused", "sourceRef": "main",
               "normalizedConfig": {"artifact": 1}}),
    );
}

#[tokio::test]
async fn create_answer_without_token_value_is_a_decode_error() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ok(json!({"runId": "r1"})))
        .mount(&server)
        .await;
    let e = client(&server)
        .create_run(&CreateRunRequest::default())
        .await
        .unwrap_err();
    assert!(matches!(e, PlatformError::Decode { .. }));
    assert!(e.to_string().contains("POST /training/runs"), "{e}");
    assert!(e.to_string().contains("tokenValue"), "{e}");
}

// ---------------------------------------------------------------- pause / resume (§6.6)

#[tokio::test]
async fn pause_posts_without_body_and_requires_status() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(format!("/api/v1/training/runs/{RUN}/pause")))
        .respond_with(ok(json!({"runId": RUN, "status": "PAUSING"})))
        .up_to_n_times(1)
        .mount(&server)
        .await;
    let client = team_client(&server);
    let out = client.pause_run(RUN).await.unwrap();
    assert_eq!(out.status, "PAUSING");
    assert_eq!(out.run_id.as_deref(), Some(RUN));
    let r = single_request(&server).await;
    assert_platform_headers(&r);
    assert_no_body(&r);
    assert_query(&r, &[]);

    Mock::given(method("POST"))
        .respond_with(ok(json!({"runId": RUN})))
        .mount(&server)
        .await;
    let e = client.pause_run(RUN).await.unwrap_err();
    assert!(e.to_string().contains("status"), "{e}");
}

#[tokio::test]
async fn resume_sends_only_set_keys_and_no_team() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(format!("/api/v1/training/runs/{RUN}/resume")))
        .and(body_json(
            json!({"gpuType": "B200_180GB", "hfToken": "hf_resume"}),
        ))
        .respond_with(ok(
            json!({"runId": "r-new", "tokenValue": "t2", "onDemand": false,
                                "gpuType": null, "pricePerGpuHour": null,
                                "estimatedCostPerHour": null, "isBeta": false}),
        ))
        .expect(1)
        .mount(&server)
        .await;
    let client = team_client(&server);
    let req = ResumeRunRequest {
        gpu_type: Some("B200_180GB".into()),
        hf_token: Some(SecretString::from("hf_resume")),
        ..Default::default()
    };
    assert!(!format!("{req:?}").contains("hf_resume"));
    let out = client.resume_run(RUN, &req).await.unwrap();
    assert_eq!(out.run_id, "r-new");
    assert_eq!(out.on_demand, Some(false));
    assert_eq!(out.gpu_type, None);
    let r = single_request(&server).await;
    assert_platform_headers(&r);

    // An empty resume sends `{}`.
    server.reset().await;
    Mock::given(method("POST"))
        .and(body_json(json!({})))
        .respond_with(ok(json!({"runId": "r-new2", "tokenValue": "t3"})))
        .expect(1)
        .mount(&server)
        .await;
    client
        .resume_run(RUN, &ResumeRunRequest::default())
        .await
        .unwrap();
}

// ---------------------------------------------------------------- list / get (§5.1, §5.2)

#[tokio::test]
async fn list_sends_the_transcript_query_and_decodes_runs() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/api/v1/rft/runs"))
        .and(query_param("limit", "20"))
        .and(query_param("page", "1"))
        .and(query_param("team_id", TEAM))
        .respond_with(ok(
            json!({"runs": [run_json()], "total": 3, "page": 1, "limit": 20, "total_pages": 1}),
        ))
        .expect(1)
        .mount(&server)
        .await;
    let page = team_client(&server)
        .list_runs(&ListRunsQuery::default())
        .await
        .unwrap();
    let r = single_request(&server).await;
    assert_platform_headers(&r);
    assert_query(&r, &[("limit", "20"), ("page", "1"), ("team_id", TEAM)]);
    assert_eq!(page.total, Some(3));
    assert_eq!(page.page, Some(1));
    assert_eq!(page.limit, Some(20));
    assert_eq!(page.total_pages, Some(1));
    assert_eq!(page.runs.len(), 1);
    assert_eq!(page.runs[0].id, RUN);
}

#[tokio::test]
async fn list_with_team_override_and_mine_personal_without_team() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/api/v1/rft/runs"))
        .respond_with(ok(
            json!({"runs": [], "total": 0, "page": 2, "limit": 5, "total_pages": 0}),
        ))
        .mount(&server)
        .await;
    let client = team_client(&server);
    client
        .list_runs(&ListRunsQuery {
            page: 2,
            limit: 5,
            team: TeamScope::Team("cteamother0000000000000001".into()),
            mine: true,
        })
        .await
        .unwrap();
    let r = single_request(&server).await;
    assert_query(
        &r,
        &[
            ("page", "2"),
            ("limit", "5"),
            ("team_id", "cteamother0000000000000001"),
            ("mine", "true"),
        ],
    );

    server.reset().await;
    Mock::given(method("GET"))
        .respond_with(ok(json!({"runs": [], "total": 0})))
        .mount(&server)
        .await;
    client
        .list_runs(&ListRunsQuery {
            team: TeamScope::Personal,
            ..Default::default()
        })
        .await
        .unwrap();
    assert_query(
        &single_request(&server).await,
        &[("page", "1"), ("limit", "20")],
    );
}

#[tokio::test]
async fn list_from_a_legacy_server_pages_sorts_and_filters_locally() {
    let server = MockServer::start().await;
    let mut mine_new = minimal_run("r3", "RUNNING", "2026-01-03T00:00:00Z");
    mine_new["userId"] = json!("me");
    let mut mine_old = minimal_run("r1", "COMPLETED", "2026-01-01T00:00:00Z");
    mine_old["userId"] = json!("me");
    let other = minimal_run("r2", "RUNNING", "2026-01-02T00:00:00Z");
    Mock::given(method("GET"))
        .respond_with(ok(json!({"runs": [mine_old, other, mine_new]})))
        .mount(&server)
        .await;
    let mut settings = fast_settings(&server.uri(), KEY);
    settings.user_id = Some("me".into());
    let client = PlatformClient::new(settings).unwrap();
    let page = client
        .list_runs(&ListRunsQuery {
            limit: 1,
            mine: true,
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(page.total, Some(2));
    assert_eq!(page.total_pages, Some(2));
    assert_eq!(
        page.runs.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(),
        vec!["r3"]
    );

    // Without a configured user id, `mine` cannot be honoured on such a server.
    let e = self::client(&server)
        .list_runs(&ListRunsQuery {
            mine: true,
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert!(matches!(e, PlatformError::InvalidArgument(_)));
}

#[tokio::test]
async fn get_decodes_every_documented_run_field() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path(format!("/api/v1/rft/runs/{RUN}")))
        .respond_with(ok(json!({"run": run_json()})))
        .expect(1)
        .mount(&server)
        .await;
    let run = team_client(&server).get_run(RUN).await.unwrap();
    let r = single_request(&server).await;
    assert_platform_headers(&r);
    assert_query(&r, &[]);
    assert_eq!(run.id, RUN);
    assert_eq!(run.user_id, "cuser000000000000000000001");
    assert_eq!(run.team_id.as_deref(), Some(TEAM));
    assert_eq!(run.status, "RUNNING");
    assert!(!run.is_terminal());
    assert_eq!(run.kind.as_deref(), Some("DEDICATED_FULL_FT"));
    assert_eq!(run.rft_cluster_id, None);
    assert_eq!(run.prime_cluster_id.as_deref(), Some("cl-prime-1"));
    assert_eq!(run.base_model.as_deref(), Some("Qwen/Qwen3-4B"));
    assert_eq!(run.rollouts_per_example, Some(8));
    assert_eq!(run.seq_len, Some(2048));
    assert_eq!(run.max_steps, Some(10));
    assert_eq!(run.max_tokens, Some(512));
    assert_eq!(run.batch_size, Some(8));
    assert_eq!(run.loss, None);
    assert_eq!(run.loss_or_default(), "rl");
    assert_eq!(
        run.teacher_config(),
        Some(&json!({"model": "Qwen/Qwen3-32B"}))
    );
    assert_eq!(run.environments, vec![json!({"slug": "reverse-text"})]);
    assert_eq!(run.learning_rate, Some(0.000001));
    assert_eq!(run.oversampling_factor, Some(1.5));
    assert_eq!(run.gpu_count, Some(2));
    assert_eq!(run.volume_name.as_deref(), Some("vol-a"));
    assert_eq!(run.wandb_project.as_deref(), Some("proj"));
    assert_eq!(run.created_at, "2026-01-02T03:04:05.000Z");
    assert_eq!(
        run.created_at_utc().unwrap().to_rfc3339(),
        "2026-01-02T03:04:05+00:00"
    );
    assert_eq!(run.started_at.as_deref(), Some("2026-01-02T03:04:35.000Z"));
    assert_eq!(run.completed_at, None);
    let fa = run.failure_analysis.as_ref().unwrap();
    assert_eq!(fa.root_cause.as_deref(), Some("OOM in trainer"));
    assert_eq!(fa.evidence, vec!["CUDA out of memory"]);
    assert_eq!(fa.confidence, Some(0.9));
    assert_eq!(run.extra.get("futureField"), Some(&json!({"x": 1})));
    // The raw camelCase object keeps unknown fields; the snake view follows §7.
    assert_eq!(run.raw()["futureField"], json!({"x": 1}));
    assert_eq!(
        run.raw()["teacherConfig"],
        json!({"model": "Qwen/Qwen3-32B"})
    );
    let snake = run.to_snake_case();
    assert_eq!(snake["cluster_id"], Value::Null);
    assert_eq!(snake["prime_cluster_id"], "cl-prime-1");
    assert_eq!(snake["loss"], "rl");
    assert_eq!(snake["teacher"], json!({"model": "Qwen/Qwen3-32B"}));
    assert_eq!(snake["failure_analysis"]["root_cause"], "OOM in trainer");
    assert!(snake.get("futureField").is_none());
    // The key order of §7, verbatim.
    let section7 = "id, name, user_id, team_id, cluster_id, prime_cluster_id, status, kind, \
        rollouts_per_example, seq_len, max_steps, max_tokens, batch_size, loss, teacher, base_model, \
        environments, run_config, eval_config, val_config, buffer_config, learning_rate, lora_alpha, \
        max_inflight_rollouts, oversampling_factor, max_async_level, volume_name, gpu_count, \
        wandb_entity, wandb_project, wandb_run_name, runs_ahead, queue_reason, notice, started_at, \
        completed_at, error_message, created_at, updated_at, failure_analysis, source_commit";
    let keys: Vec<&str> = snake
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(keys, section7.split(", ").collect::<Vec<_>>());
}

#[tokio::test]
async fn get_of_a_run_missing_a_required_field_names_the_field_and_endpoint() {
    let server = MockServer::start().await;
    let mut run = minimal_run("r1", "RUNNING", "2026-01-01T00:00:00Z");
    run.as_object_mut().unwrap().remove("userId");
    Mock::given(method("GET"))
        .respond_with(ok(json!({"run": run})))
        .mount(&server)
        .await;
    let e = client(&server).get_run("r1").await.unwrap_err();
    let text = e.to_string();
    assert!(
        text.contains("userId") && text.contains("GET /rft/runs/r1"),
        "{text}"
    );
}

// ---------------------------------------------------------------- lifecycle (§5.3–5.5)

#[tokio::test]
async fn stop_and_restart_put_without_body_and_return_the_run() {
    let server = MockServer::start().await;
    let mut stopped = run_json();
    stopped["status"] = json!("STOPPED");
    Mock::given(method("PUT"))
        .and(path(format!("/api/v1/rft/runs/{RUN}/stop")))
        .respond_with(ok(json!({"run": stopped})))
        .expect(1)
        .mount(&server)
        .await;
    let client = team_client(&server);
    let run = client.stop_run(RUN).await.unwrap();
    assert_eq!(run.status, "STOPPED");
    assert!(run.is_terminal());
    let r = single_request(&server).await;
    assert_platform_headers(&r);
    assert_no_body(&r);
    assert_query(&r, &[]);

    server.reset().await;
    Mock::given(method("PUT"))
        .and(path(format!("/api/v1/rft/runs/{RUN}/restart")))
        .respond_with(ok(json!({"run": run_json()})))
        .expect(1)
        .mount(&server)
        .await;
    let run = client.restart_run(RUN).await.unwrap();
    assert_eq!(run.status, "RUNNING");
    let r = single_request(&server).await;
    assert_no_body(&r);
    assert_query(&r, &[]);
}

#[tokio::test]
async fn delete_accepts_204_and_any_object() {
    let server = MockServer::start().await;
    Mock::given(method("DELETE"))
        .and(path(format!("/api/v1/rft/runs/{RUN}")))
        .respond_with(ResponseTemplate::new(204))
        .up_to_n_times(1)
        .mount(&server)
        .await;
    let client = client(&server);
    assert!(client.delete_run(RUN).await.unwrap().is_empty());
    let r = single_request(&server).await;
    assert_platform_headers(&r);
    assert_no_body(&r);

    Mock::given(method("DELETE"))
        .respond_with(ok(json!({"deleted": true})))
        .mount(&server)
        .await;
    assert_eq!(
        client.delete_run(RUN).await.unwrap().get("deleted"),
        Some(&json!(true))
    );
}

// ---------------------------------------------------------------- logs (§5.6)

#[tokio::test]
async fn logs_default_sends_only_tail_lines() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path(format!("/api/v1/rft/runs/{RUN}/logs")))
        .and(query_param("tail_lines", "1000"))
        .respond_with(ok(json!({"logs": "line1\nline2\n"})))
        .expect(1)
        .mount(&server)
        .await;
    let logs = team_client(&server)
        .get_logs(RUN, &LogsQuery::default())
        .await
        .unwrap();
    assert_eq!(logs.logs, "line1\nline2\n");
    let r = single_request(&server).await;
    assert_platform_headers(&r);
    assert_query(&r, &[("tail_lines", "1000")]);
}

#[tokio::test]
async fn logs_send_every_option_with_the_right_spelling() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .respond_with(ok(json!({"logs": ""})))
        .mount(&server)
        .await;
    let client = client(&server);
    client
        .get_logs(
            RUN,
            &LogsQuery {
                tail_lines: 5000,
                search: Some("loss spike".into()),
                regex: true,
                level: Some("warning".into()),
                since_seconds: Some(86_400),
                component: LogComponent::EnvServer,
                env_name: Some("reverse-text".into()),
                pod_index: Some(1),
            },
        )
        .await
        .unwrap();
    let r = single_request(&server).await;
    assert_query(
        &r,
        &[
            ("tail_lines", "5000"),
            ("search", "loss spike"),
            ("regex", "true"),
            ("level", "WARNING"),
            ("since_seconds", "86400"),
            ("component", "env-server"),
            ("env_name", "reverse-text"),
            ("pod_index", "1"),
        ],
    );

    // Trainer, no regex: `regex` absent, `component=trainer`.
    server.reset().await;
    Mock::given(method("GET"))
        .respond_with(ok(json!({"logs": "x"})))
        .mount(&server)
        .await;
    client
        .get_logs(
            RUN,
            &LogsQuery {
                tail_lines: 10,
                search: Some("err".into()),
                component: LogComponent::Trainer,
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_query(
        &single_request(&server).await,
        &[
            ("tail_lines", "10"),
            ("search", "err"),
            ("component", "trainer"),
        ],
    );

    // Local checks the CLI makes: nothing is sent.
    server.reset().await;
    for bad in [
        LogsQuery {
            tail_lines: 0,
            ..Default::default()
        },
        LogsQuery {
            since_seconds: Some(30),
            ..Default::default()
        },
        LogsQuery {
            regex: true,
            ..Default::default()
        },
        LogsQuery {
            level: Some("verbose".into()),
            ..Default::default()
        },
        LogsQuery {
            component: LogComponent::EnvServer,
            ..Default::default()
        },
    ] {
        let e = client.get_logs(RUN, &bad).await.unwrap_err();
        assert!(matches!(e, PlatformError::InvalidArgument(_)), "{bad:?}");
    }
    assert_eq!(request_count(&server).await, 0);
}

#[tokio::test]
async fn logs_404_with_a_startup_marker_means_not_started_yet() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .respond_with(
            ResponseTemplate::new(404)
                .set_body_json(json!({"detail": "Run is queued; logs are not available yet"})),
        )
        .up_to_n_times(1)
        .mount(&server)
        .await;
    let client = client(&server);
    let e = client
        .get_logs(RUN, &LogsQuery::default())
        .await
        .unwrap_err();
    assert!(matches!(e, PlatformError::NotStartedYet { .. }), "{e:?}");
    assert!(e.to_string().contains("not started yet"), "{e}");

    Mock::given(method("GET"))
        .respond_with(
            ResponseTemplate::new(404).set_body_json(json!({"detail": "Run nope not found"})),
        )
        .mount(&server)
        .await;
    let e = client
        .get_logs(RUN, &LogsQuery::default())
        .await
        .unwrap_err();
    assert!(matches!(e, PlatformError::NotFound { .. }), "{e:?}");
    assert_eq!(e.to_string(), "HTTP 404: Run nope not found");
}

#[tokio::test]
async fn legacy_env_server_logs_send_name_index_and_filters() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path(format!("/api/v1/rft/runs/{RUN}/env-server-logs")))
        .respond_with(ok(json!({"logs": "env line"})))
        .mount(&server)
        .await;
    let logs = client(&server)
        .get_env_server_logs_legacy(
            RUN,
            "reverse-text",
            2,
            &LogsQuery {
                level: Some("error".into()),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(logs.logs, "env line");
    assert_query(
        &single_request(&server).await,
        &[
            ("env_name", "reverse-text"),
            ("env_index", "2"),
            ("tail_lines", "1000"),
            ("level", "ERROR"),
        ],
    );
}

// ---------------------------------------------------------------- monitoring (§5.7–5.13)

#[tokio::test]
async fn env_servers_are_snake_case() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path(format!("/api/v1/rft/runs/{RUN}/env-servers")))
        .respond_with(ok(json!({"env_servers": [
            {"env_name": "reverse-text", "env_index": 0, "pod_name": "pod-a", "status": "Running"},
            {"env_name": null, "env_index": null, "pod_name": "pod-b", "status": "Pending"}
        ]})))
        .mount(&server)
        .await;
    let out = client(&server).list_env_servers(RUN).await.unwrap();
    let r = single_request(&server).await;
    assert_platform_headers(&r);
    assert_query(&r, &[]);
    assert_eq!(out.env_servers.len(), 2);
    assert_eq!(out.env_servers[0].env_name.as_deref(), Some("reverse-text"));
    assert_eq!(out.env_servers[0].env_index, Some(0));
    assert_eq!(out.env_servers[0].pod_name, "pod-a");
    assert_eq!(out.env_servers[1].status, "Pending");
    assert_eq!(out.env_servers[1].env_name, None);
}

#[tokio::test]
async fn metrics_without_options_send_no_query_string() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path(format!("/api/v1/rft/runs/{RUN}/metrics")))
        .respond_with(ok(
            json!({"metrics": [{"step": 1, "reward": 0.5}, {"step": 2, "reward": 0.7}]}),
        ))
        .mount(&server)
        .await;
    let client = client(&server);
    let m = client
        .get_metrics(RUN, &MetricsQuery::default())
        .await
        .unwrap();
    assert_eq!(
        m.metrics.iter().map(|r| r.to_value()).collect::<Vec<_>>(),
        vec![
            json!({"step": 1, "reward": 0.5}),
            json!({"step": 2, "reward": 0.7})
        ]
    );
    let r = single_request(&server).await;
    assert_platform_headers(&r);
    assert_query(&r, &[]);

    server.reset().await;
    Mock::given(method("GET"))
        .respond_with(ok(json!({"metrics": []})))
        .mount(&server)
        .await;
    client
        .get_metrics(
            RUN,
            &MetricsQuery {
                min_step: Some(5),
                max_step: Some(50),
                limit: Some(10),
            },
        )
        .await
        .unwrap();
    assert_query(
        &single_request(&server).await,
        &[("min_step", "5"), ("max_step", "50"), ("limit", "10")],
    );
}

#[tokio::test]
async fn progress_is_camel_case_on_the_wire() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path(format!("/api/v1/rft/runs/{RUN}/progress")))
        .respond_with(ok(
            json!({"latestStep": 7, "stepsWithSamples": [0, 5], "stepsWithDistributions": [5],
                                "lastUpdatedAt": "2026-01-02T03:04:05Z"}),
        ))
        .mount(&server)
        .await;
    let p = client(&server).get_progress(RUN).await.unwrap();
    let r = single_request(&server).await;
    assert_platform_headers(&r);
    assert_query(&r, &[]);
    assert_eq!(p.latest_step, Some(7));
    assert_eq!(p.steps_with_samples, vec![0, 5]);
    assert_eq!(p.steps_with_distributions, vec![5]);
    assert_eq!(p.last_updated_at.as_deref(), Some("2026-01-02T03:04:05Z"));
}

#[tokio::test]
async fn checkpoints_with_status_filter() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path(format!("/api/v1/rft/runs/{RUN}/checkpoints")))
        .respond_with(ok(
            json!({"checkpoints": [{"id": "ck1", "rftRunId": RUN, "step": 10,
            "storageUrl": "s3://bucket/runs/x/step_10", "status": "READY", "sizeBytes": 1024,
            "createdAt": "2026-01-02T03:04:05Z", "uploadedAt": "2026-01-02T03:05:05Z"}]}),
        ))
        .mount(&server)
        .await;
    let c = client(&server)
        .list_checkpoints(RUN, Some("READY"))
        .await
        .unwrap();
    let r = single_request(&server).await;
    assert_platform_headers(&r);
    assert_query(&r, &[("status_filter", "READY")]);
    let ck = &c.checkpoints[0];
    assert_eq!(ck.id, "ck1");
    assert_eq!(ck.rft_run_id, RUN);
    assert_eq!(ck.step, 10);
    assert_eq!(ck.storage_url, "s3://bucket/runs/x/step_10");
    assert_eq!(ck.status, "READY");
    assert_eq!(ck.size_bytes, Some(1024));
    assert_eq!(ck.created_at, "2026-01-02T03:04:05Z");
    assert_eq!(ck.uploaded_at.as_deref(), Some("2026-01-02T03:05:05Z"));
}

#[tokio::test]
async fn samples_send_page_limit_step() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path(format!("/api/v1/rft/runs/{RUN}/samples")))
        .respond_with(ok(
            json!({"run_id": RUN, "samples": [{"prompt": "p", "reward": 1.0}],
                                "total": 1, "page": 1, "limit": 100, "total_pages": 1}),
        ))
        .mount(&server)
        .await;
    let s = client(&server)
        .get_samples(RUN, &SamplesQuery::at_step(5))
        .await
        .unwrap();
    let r = single_request(&server).await;
    assert_platform_headers(&r);
    assert_query(&r, &[("page", "1"), ("limit", "100"), ("step", "5")]);
    assert_eq!(s.run_id.as_deref(), Some(RUN));
    assert_eq!(s.samples, vec![json!({"prompt": "p", "reward": 1.0})]);
    assert_eq!(
        (s.total, s.page, s.limit, s.total_pages),
        (Some(1), Some(1), Some(100), Some(1))
    );
}

#[tokio::test]
async fn distributions_accept_bins_and_chart_data() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path(format!("/api/v1/rft/runs/{RUN}/distributions")))
        .respond_with(ok(
            json!({"chartData": {"histogramData": [{"x": 0.1, "count": 3}]}, "step": 4}),
        ))
        .up_to_n_times(1)
        .mount(&server)
        .await;
    let client = client(&server);
    let d = client
        .get_distributions(
            RUN,
            &DistributionsQuery {
                kind: Some("rewards".into()),
                step: Some(4),
            },
        )
        .await
        .unwrap();
    assert_eq!(d.bins, vec![json!({"x": 0.1, "count": 3})]);
    assert_eq!(d.step, Some(4));
    let r = single_request(&server).await;
    assert_platform_headers(&r);
    assert_query(&r, &[("type", "rewards"), ("step", "4")]);

    Mock::given(method("GET"))
        .respond_with(ok(json!({"bins": [1, 2], "step": 9})))
        .up_to_n_times(1)
        .mount(&server)
        .await;
    let d = client
        .get_distributions(RUN, &DistributionsQuery::default())
        .await
        .unwrap();
    assert_eq!((d.bins, d.step), (vec![json!(1), json!(2)], Some(9)));

    Mock::given(method("GET"))
        .respond_with(ok(json!({"chart_data": {"histogramData": [7]}, "step": 1})))
        .mount(&server)
        .await;
    let d = client
        .get_distributions(RUN, &DistributionsQuery::default())
        .await
        .unwrap();
    assert_eq!(d.bins, vec![json!(7)]);
}

#[tokio::test]
async fn usage_decodes_buckets_and_pricing() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path(format!("/api/v1/billing/runs/{RUN}/usage")))
        .respond_with(ok(json!({"run_id": RUN, "run_name": "my-run", "base_model": "Qwen/Qwen3-4B",
            "status": "COMPLETED",
            "training": {"tokens": 1000, "input_tokens": 600, "output_tokens": 400, "cost_usd": 0.5},
            "inference": {"tokens": 10, "input_tokens": 5, "output_tokens": 5, "cost_usd": 0.01},
            "total_tokens": 1010, "total_cost_usd": 0.51,
            "pricing": {"training_per_mtok": 0.5, "inference_input_per_mtok": 0.1, "inference_output_per_mtok": 0.2},
            "record_count": 3})))
        .mount(&server)
        .await;
    let u = team_client(&server).get_run_usage(RUN).await.unwrap();
    let r = single_request(&server).await;
    assert_platform_headers(&r);
    assert_query(&r, &[]);
    assert_eq!(u.run_id.as_deref(), Some(RUN));
    assert_eq!(u.training.as_ref().unwrap().input_tokens, Some(600));
    assert_eq!(u.inference.as_ref().unwrap().cost_usd, Some(0.01));
    assert_eq!(u.total_tokens, Some(1010));
    assert_eq!(u.total_cost_usd, Some(0.51));
    assert_eq!(
        u.pricing.as_ref().unwrap().inference_output_per_mtok,
        Some(0.2)
    );
    assert_eq!(u.record_count, Some(3));
}

#[tokio::test]
async fn run_ids_are_path_encoded_and_slashes_refused() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/api/v1/rft/runs/a%20b"))
        .respond_with(ok(
            json!({"run": minimal_run("a b", "RUNNING", "2026-01-01T00:00:00Z")}),
        ))
        .expect(1)
        .mount(&server)
        .await;
    let client = client(&server);
    assert_eq!(client.get_run("a b").await.unwrap().id, "a b");
    for bad in ["../user/whoami", "", ".", ".."] {
        let e = client.stop_run(bad).await.unwrap_err();
        assert!(matches!(e, PlatformError::InvalidArgument(_)), "{bad}");
    }
    assert_eq!(request_count(&server).await, 1);
}

#[tokio::test]
async fn waiting_after_stop_polls_get_until_terminal() {
    let server = MockServer::start().await;
    let mut stopping = run_json();
    stopping["status"] = json!("RUNNING");
    let mut stopped = run_json();
    stopped["status"] = json!("STOPPED");
    Mock::given(method("PUT"))
        .respond_with(ok(json!({"run": stopping.clone()})))
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path(format!("/api/v1/rft/runs/{RUN}")))
        .respond_with(ok(json!({"run": stopping})))
        .up_to_n_times(1)
        .with_priority(1)
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .respond_with(ok(json!({"run": stopped})))
        .with_priority(2)
        .mount(&server)
        .await;
    let client = client(&server);
    let run = client.stop_run(RUN).await.unwrap();
    assert!(!run.is_terminal());
    let run = client
        .wait_until_terminal(run, Duration::from_millis(10), Duration::from_secs(2))
        .await;
    assert_eq!(run.status, "STOPPED");
    let reqs = server.received_requests().await.unwrap();
    assert_eq!(reqs.len(), 3, "PUT, then two GET polls");
    assert!(reqs[1..].iter().all(|r| r.method.as_str() == "GET"));

    // A budget that runs out returns the last run seen, not terminal.
    server.reset().await;
    Mock::given(method("GET"))
        .respond_with(ok(
            json!({"run": minimal_run(RUN, "RUNNING", "2026-01-01T00:00:00Z")}),
        ))
        .mount(&server)
        .await;
    let start = minimal_run(RUN, "PENDING", "2026-01-01T00:00:00Z");
    let run = client
        .wait_until_terminal(
            serde_json::from_value(start).unwrap(),
            Duration::from_millis(20),
            Duration::from_millis(100),
        )
        .await;
    assert_eq!(run.status, "RUNNING");
    assert!(request_count(&server).await >= 2);
}
