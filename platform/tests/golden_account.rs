//! Golden tests of the account and volume endpoints (§2.3, §6.1, §6.7, §10): exact requests,
//! team-scoping spelling per endpoint (§3), and decoding of the documented answers.

mod common;

use std::time::Duration;

use common::*;
use factory_platform::wire::volumes::TransferMode;
use factory_platform::{EnsureVolume, EnsureVolumeOutcome, PlatformError, TeamScope};
use secrecy::ExposeSecret;
use serde_json::{Value, json};
use wiremock::matchers::{body_json, method, path, query_param};
use wiremock::{Mock, MockServer, ResponseTemplate};

fn ok(body: Value) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_json(body)
}

// ---------------------------------------------------------------- whoami, teams

#[tokio::test]
async fn whoami_scopes_with_camel_team_id_and_decodes_data() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/api/v1/user/whoami"))
        .and(query_param("teamId", TEAM))
        .respond_with(ok(json!({"data": {
            "id": "cuser000000000000000000001", "email": "a@example.com", "name": "Ada", "slug": "ada",
            "scope": {"training": {"read": true, "write": false}, "pods": null},
            "account_limits": null,
            "key_limits": {"max_concurrent_sandboxes": 0}
        }})))
        .expect(1)
        .mount(&server)
        .await;
    let me = team_client(&server).whoami().await.unwrap();
    let r = single_request(&server).await;
    assert_platform_headers(&r);
    assert_query(&r, &[("teamId", TEAM)]);
    assert_eq!(me.id.as_deref(), Some("cuser000000000000000000001"));
    assert_eq!(me.email.as_deref(), Some("a@example.com"));
    assert_eq!(me.name.as_deref(), Some("Ada"));
    assert_eq!(me.slug.as_deref(), Some("ada"));
    let scope = me.scope.unwrap();
    assert_eq!(scope["training"], json!({"read": true, "write": false}));
    assert_eq!(scope["pods"], Value::Null);
    assert_eq!(me.account_limits, None);
    assert_eq!(me.key_limits, Some(json!({"max_concurrent_sandboxes": 0})));
}

#[tokio::test]
async fn whoami_without_team_sends_no_query_and_rejects_non_object_data() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/api/v1/user/whoami"))
        .respond_with(ok(json!({"data": {}})))
        .up_to_n_times(1)
        .mount(&server)
        .await;
    let client = client(&server);
    let me = client.whoami().await.unwrap();
    assert_eq!(me.id, None);
    assert_query(&single_request(&server).await, &[]);

    Mock::given(method("GET"))
        .respond_with(ok(json!({"data": "nope"})))
        .mount(&server)
        .await;
    let e = client.whoami().await.unwrap_err();
    assert!(matches!(e, PlatformError::Decode { .. }), "{e:?}");
}

#[tokio::test]
async fn teams_list_is_unscoped_offset_limit() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/api/v1/user/teams"))
        .respond_with(ok(json!({"data": [{"teamId": TEAM, "name": "Team One", "slug": "team-one",
                                          "role": "ADMIN", "createdAt": "2026-01-02T03:04:05.000Z"}],
                                "total_count": 1})))
        .mount(&server)
        .await;
    let page = team_client(&server).list_teams(0, 100).await.unwrap();
    let r = single_request(&server).await;
    assert_platform_headers(&r);
    assert_query(&r, &[("limit", "100"), ("offset", "0")]);
    assert_eq!(page.total_count, Some(1));
    let t = &page.data[0];
    assert_eq!(t.team_id, TEAM);
    assert_eq!(t.name, "Team One");
    assert_eq!(t.slug.as_deref(), Some("team-one"));
    assert_eq!(t.role.as_deref(), Some("ADMIN"));
    assert_eq!(t.created_at.as_deref(), Some("2026-01-02T03:04:05.000Z"));
}

#[tokio::test]
async fn all_teams_pages_by_100_until_total_count() {
    let server = MockServer::start().await;
    let team = |i: usize| {
        json!({"teamId": format!("cteam{i:020}"), "name": format!("T{i}"),
                                 "slug": "s", "role": "MEMBER", "createdAt": "2026-01-01T00:00:00Z"})
    };
    Mock::given(method("GET"))
        .and(query_param("offset", "0"))
        .respond_with(ok(
            json!({"data": (0..100).map(team).collect::<Vec<_>>(), "total_count": 101}),
        ))
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(query_param("offset", "100"))
        .respond_with(ok(json!({"data": [team(100)], "total_count": 101})))
        .mount(&server)
        .await;
    let teams = client(&server).list_all_teams().await.unwrap();
    assert_eq!(teams.len(), 101);
    let reqs = server.received_requests().await.unwrap();
    assert_eq!(reqs.len(), 2);
    assert_query(&reqs[1], &[("offset", "100"), ("limit", "100")]);
}

// ---------------------------------------------------------------- models, gpus (§6.1)

#[tokio::test]
async fn models_use_snake_team_id_and_decode_clusters_and_offers() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/api/v1/training/available-fft-models"))
        .and(query_param("team_id", TEAM))
        .respond_with(ok(json!({
            "models": [{"name": "Qwen/Qwen3-4B",
                        "clusters": [{"clusterId": "c1", "clusterName": "alpha", "gpuType": "H200_141GB"}]}],
            "onDemand": [{"gpuType": "H200_141GB", "pricePerGpuHour": 2.5, "discountLabel": null,
                          "availableNow": true, "isBeta": true}],
            "onDemandBetaAccess": true
        })))
        .expect(1)
        .mount(&server)
        .await;
    let m = team_client(&server)
        .available_models(&TeamScope::Active)
        .await
        .unwrap();
    let r = single_request(&server).await;
    assert_platform_headers(&r);
    assert_query(&r, &[("team_id", TEAM)]);
    assert_eq!(m.models[0].name, "Qwen/Qwen3-4B");
    let c = &m.models[0].clusters[0];
    assert_eq!(
        (c.cluster_id.as_str(), c.cluster_name.as_str()),
        ("c1", "alpha")
    );
    assert_eq!(c.gpu_type.as_deref(), Some("H200_141GB"));
    let o = &m.on_demand[0];
    assert_eq!(o.gpu_type, "H200_141GB");
    assert_eq!(o.price_per_gpu_hour, 2.5);
    assert_eq!(o.discount_label, None);
    assert_eq!(o.available_now, Some(true));
    assert_eq!(o.is_beta, Some(true));
    assert_eq!(m.on_demand_beta_access, Some(true));
}

#[tokio::test]
async fn models_404_is_empty_and_personal_scope_sends_no_team() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .respond_with(ResponseTemplate::new(404).set_body_json(json!({"detail": "Not Found"})))
        .mount(&server)
        .await;
    let m = team_client(&server)
        .available_models(&TeamScope::Personal)
        .await
        .unwrap();
    assert!(m.models.is_empty() && m.on_demand.is_empty());
    assert_eq!(m.on_demand_beta_access, None);
    assert_query(&single_request(&server).await, &[]);
}

#[tokio::test]
async fn models_missing_a_required_field_is_an_error() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .respond_with(ok(
            json!({"models": [{"name": "m", "clusters": [{"clusterId": "c1"}]}]}),
        ))
        .mount(&server)
        .await;
    let e = client(&server)
        .available_models(&TeamScope::Active)
        .await
        .unwrap_err();
    assert!(e.to_string().contains("clusterName"), "{e}");
}

#[tokio::test]
async fn gpu_types_use_snake_team_id() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/api/v1/training/available-gpu-types"))
        .respond_with(ok(json!({"gpuTypes": ["H200_141GB", "B200_180GB"]})))
        .mount(&server)
        .await;
    let g = team_client(&server)
        .gpu_types(&TeamScope::Active)
        .await
        .unwrap();
    assert_eq!(g.gpu_types, vec!["H200_141GB", "B200_180GB"]);
    let r = single_request(&server).await;
    assert_platform_headers(&r);
    assert_query(&r, &[("team_id", TEAM)]);
}

// ---------------------------------------------------------------- volumes (§6.7, §10)

fn volume(name: &str, status: &str) -> Value {
    json!({"name": name, "size": "5Ti", "status": status, "clusterId": "cl1", "cluster": null,
           "pvcName": format!("pvc-{name}"), "createdBy": "cuser1", "createdByName": "Ada",
           "createdByEmail": "a@example.com", "createdAt": "2026-01-02T03:04:05Z"})
}

#[tokio::test]
async fn volumes_list_uses_camel_team_id() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/api/v1/training/volumes"))
        .and(query_param("teamId", TEAM))
        .respond_with(ok(json!({"volumes": [volume("vol-a", "RUNNING")]})))
        .mount(&server)
        .await;
    let vols = team_client(&server)
        .list_volumes(&TeamScope::Active)
        .await
        .unwrap();
    let r = single_request(&server).await;
    assert_platform_headers(&r);
    assert_query(&r, &[("teamId", TEAM)]);
    let v = &vols[0];
    assert_eq!(v.name, "vol-a");
    assert_eq!(v.size, Some(json!("5Ti")));
    assert_eq!(v.status, "RUNNING");
    assert!(v.is_ready());
    assert_eq!(v.cluster_id, "cl1");
    assert_eq!(v.pvc_name, "pvc-vol-a");
    assert_eq!(v.created_by_name.as_deref(), Some("Ada"));
    assert_eq!(v.created_by_email.as_deref(), Some("a@example.com"));
    assert_eq!(v.created_at.as_deref(), Some("2026-01-02T03:04:05Z"));
}

#[tokio::test]
async fn volume_create_body_has_warm_and_team_in_the_body() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/api/v1/training/volumes"))
        .and(body_json(
            json!({"name": "vol-b", "size": "500Gi", "warm": true, "teamId": TEAM}),
        ))
        .respond_with(ok(volume("vol-b", "CREATING")))
        .expect(1)
        .mount(&server)
        .await;
    let v = team_client(&server)
        .create_volume("vol-b", "500Gi", &TeamScope::Active)
        .await
        .unwrap();
    assert_eq!(v.status, "CREATING");
    let r = single_request(&server).await;
    assert_platform_headers(&r);
    assert_query(&r, &[]);
}

fn fast_ensure(name: &str) -> EnsureVolume {
    EnsureVolume {
        poll_interval: Duration::from_millis(10),
        timeout: Duration::from_secs(2),
        ..EnsureVolume::new(name)
    }
}

#[tokio::test]
async fn ensure_volume_creates_once_then_polls_until_running() {
    let server = MockServer::start().await;
    // First list: absent. Then CREATING once, then RUNNING.
    Mock::given(method("GET"))
        .respond_with(ok(json!({"volumes": []})))
        .up_to_n_times(1)
        .with_priority(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(body_json(
            json!({"name": "vol-c", "size": "5Ti", "warm": true}),
        ))
        .respond_with(ok(volume("vol-c", "CREATING")))
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .respond_with(ok(json!({"volumes": [volume("vol-c", "CREATING")]})))
        .up_to_n_times(1)
        .with_priority(2)
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .respond_with(ok(
            json!({"volumes": [volume("other", "FAILED"), volume("vol-c", "RUNNING")]}),
        ))
        .with_priority(3)
        .mount(&server)
        .await;
    let out = client(&server)
        .ensure_volume(&fast_ensure("vol-c"))
        .await
        .unwrap();
    assert!(matches!(out, EnsureVolumeOutcome::Created(_)));
    assert_eq!(out.volume().status, "RUNNING");
    let reqs = server.received_requests().await.unwrap();
    let posts = reqs.iter().filter(|r| r.method.as_str() == "POST").count();
    assert_eq!(posts, 1);
    assert_eq!(
        reqs.len(),
        4,
        "list, create, poll (CREATING), poll (RUNNING)"
    );
}

#[tokio::test]
async fn ensure_volume_leaves_an_existing_volume_alone() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .respond_with(ok(json!({"volumes": [volume("vol-a", "RUNNING")]})))
        .mount(&server)
        .await;
    let out = client(&server)
        .ensure_volume(&EnsureVolume {
            size: Some("1Ti".into()),
            ..fast_ensure("vol-a")
        })
        .await
        .unwrap();
    assert!(matches!(out, EnsureVolumeOutcome::Existing(_)));
    assert_eq!(request_count(&server).await, 1);
}

#[tokio::test]
async fn ensure_volume_aborts_on_tombstoned_and_times_out() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .respond_with(ok(json!({"volumes": []})))
        .up_to_n_times(1)
        .with_priority(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .respond_with(ok(volume("vol-d", "CREATING")))
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .respond_with(ok(json!({"volumes": [volume("vol-d", "TOMBSTONED")]})))
        .with_priority(2)
        .mount(&server)
        .await;
    let e = client(&server)
        .ensure_volume(&fast_ensure("vol-d"))
        .await
        .unwrap_err();
    assert!(
        matches!(e, PlatformError::VolumeFailed { ref status, .. } if status == "TOMBSTONED"),
        "{e:?}"
    );

    // Stuck in CREATING (with a failed poll in between): a timeout, still one create.
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .respond_with(ok(json!({"volumes": []})))
        .up_to_n_times(1)
        .with_priority(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .respond_with(ok(volume("vol-e", "CREATING")))
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .respond_with(ResponseTemplate::new(500))
        .up_to_n_times(1)
        .with_priority(2)
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .respond_with(ok(json!({"volumes": [volume("vol-e", "CREATING")]})))
        .with_priority(3)
        .mount(&server)
        .await;
    let e = client(&server)
        .ensure_volume(&EnsureVolume {
            timeout: Duration::from_millis(200),
            ..fast_ensure("vol-e")
        })
        .await
        .unwrap_err();
    assert!(matches!(e, PlatformError::VolumeTimeout { .. }), "{e:?}");
    let posts = server
        .received_requests()
        .await
        .unwrap()
        .iter()
        .filter(|r| r.method.as_str() == "POST")
        .count();
    assert_eq!(posts, 1);
}

#[tokio::test]
async fn transfer_route_body_and_secret_credentials() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/api/v1/training/volumes/vol-a/transfer"))
        .and(body_json(
            json!({"mode": "get", "path": "runs/abc/", "teamId": TEAM}),
        ))
        .respond_with(ok(
            json!({"via": "r2", "endpoint": "https://acct.r2.cloudflarestorage.com",
            "bucket": "volumes", "prefix": "team/vol-a/", "accessKeyId": "AKID",
            "secretAccessKey": "s3-secret-value", "sessionToken": "s3-session-token",
            "expiresAt": "2026-01-02T04:00:00Z", "leaseId": "lease-1"}),
        ))
        .expect(1)
        .mount(&server)
        .await;
    let route = team_client(&server)
        .volume_transfer_route("vol-a", TransferMode::Get, "runs/abc/", &TeamScope::Active)
        .await
        .unwrap();
    let r = single_request(&server).await;
    assert_platform_headers(&r);
    assert_eq!(route.via, "r2");
    assert_eq!(
        route.endpoint.as_deref(),
        Some("https://acct.r2.cloudflarestorage.com")
    );
    assert_eq!(route.bucket.as_deref(), Some("volumes"));
    assert_eq!(route.prefix.as_deref(), Some("team/vol-a/"));
    assert_eq!(route.access_key_id.as_deref(), Some("AKID"));
    assert_eq!(
        route.secret_access_key.as_ref().unwrap().expose_secret(),
        "s3-secret-value"
    );
    assert_eq!(
        route.session_token.as_ref().unwrap().expose_secret(),
        "s3-session-token"
    );
    assert_eq!(route.lease_id.as_deref(), Some("lease-1"));
    let debug = format!("{route:?}");
    assert!(
        !debug.contains("s3-secret-value") && !debug.contains("s3-session-token"),
        "{debug}"
    );
}

#[tokio::test]
async fn transfer_route_session_form_without_team() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(body_json(json!({"mode": "put", "path": ""})))
        .respond_with(ok(
            json!({"via": "session", "session": {"id": "s1", "volumeName": "vol-a",
            "status": "READY", "readOnly": false, "sshConnection": "user@host -p 2222"}}),
        ))
        .expect(1)
        .mount(&server)
        .await;
    let route = client(&server)
        .volume_transfer_route("vol-a", TransferMode::Put, "", &TeamScope::Active)
        .await
        .unwrap();
    let s = route.session.unwrap();
    assert_eq!(s.ssh_connection.as_deref(), Some("user@host -p 2222"));
    assert_eq!(s.read_only, Some(false));
    assert!(route.secret_access_key.is_none());
}
