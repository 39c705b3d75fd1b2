//! The volumes' S3-compatible transfer endpoint: the real `prime` CLI (boto3, SigV4) gets a
//! checkpoint and puts a dataset through it, and requests with missing, foreign, expired or
//! badly signed credentials are refused the way S3 refuses them.
//!
//! The CLI part needs `$FACTORY_MCP_INTEROP_DIR/venv/bin/prime` (scripts/setup-interop.sh):
//! skipped without it, except under CI, where it fails.

mod common;

use std::path::PathBuf;

use common::{Client, advance, manual};
use factory_sandbox::TEAM_ALPHA_ID;
use serde_json::{Value, json};

fn prime_binary() -> Option<PathBuf> {
    let found = std::env::var_os("FACTORY_MCP_INTEROP_DIR")
        .map(|d| PathBuf::from(d).join("venv/bin/prime"))
        .filter(|p| p.is_file());
    if found.is_none() {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI is set but the prime CLI is missing: run scripts/setup-interop.sh"
        );
        eprintln!("skipping: prime CLI not found (set FACTORY_MCP_INTEROP_DIR)");
    }
    found
}

/// A team volume with a finished 5-step run on it; returns the run id.
async fn finished_run_on(c: &Client, sb: &factory_sandbox::SandboxHandle, volume: &str) -> String {
    let (s, v) = c
        .post(
            "/api/v1/training/volumes",
            json!({"name": volume, "size": "500Gi", "teamId": TEAM_ALPHA_ID}),
        )
        .await;
    assert_eq!(s, 201, "{v}");
    advance(sb, 5);
    let mut body = common::run_body("s3-run", 5);
    body["volume"] = json!(volume);
    body["teamId"] = json!(TEAM_ALPHA_ID);
    let id = c.create(body).await;
    advance(sb, 60);
    assert_eq!(c.status(&id).await, "COMPLETED");
    id
}

async fn route(c: &Client, volume: &str, body: Value) -> (u16, Value) {
    c.post(&format!("/api/v1/training/volumes/{volume}/transfer"), body)
        .await
}

#[tokio::test]
async fn the_prime_cli_gets_checkpoints_and_puts_datasets_through_it() {
    let Some(bin) = prime_binary() else { return };
    let sb = manual().await;
    let c = Client::new(&sb, 0);
    let run = finished_run_on(&c, &sb, "cli-vol").await;
    let home = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let prime = |args: Vec<String>| {
        let mut cmd = std::process::Command::new(&bin);
        cmd.args(&args)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", home.path())
            .env("PRIME_API_BASE_URL", sb.base_url())
            .env("PRIME_API_KEY", sb.api_key(0).unwrap())
            .env("PRIME_TEAM_ID", TEAM_ALPHA_ID)
            .env("PRIME_DISABLE_VERSION_CHECK", "1")
            .env("NO_COLOR", "1")
            .env("COLUMNS", "200");
        cmd
    };
    let remote = format!("runs/{run}/checkpoints/step_5/");
    let dest = out.path().join("ck");
    let got = tokio::task::spawn_blocking({
        let mut cmd = prime(vec![
            "volumes".into(),
            "get".into(),
            "cli-vol".into(),
            remote.clone(),
            format!("{}/", dest.display()),
        ]);
        move || cmd.output().unwrap()
    })
    .await
    .unwrap();
    assert!(
        got.status.success(),
        "get failed: {}{}",
        String::from_utf8_lossy(&got.stdout),
        String::from_utf8_lossy(&got.stderr)
    );
    for name in ["model.safetensors", "trainer_state.json"] {
        let local = std::fs::read(dest.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
        let served = sb
            .volume_file("cli-vol", &format!("{remote}{name}"))
            .unwrap();
        assert_eq!(local, served, "{name} byte-identical through boto3");
    }

    let data = out.path().join("ds");
    std::fs::create_dir_all(&data).unwrap();
    std::fs::write(data.join("train.jsonl"), "{\"a\": 1}\n").unwrap();
    let put = tokio::task::spawn_blocking({
        let mut cmd = prime(vec![
            "volumes".into(),
            "put".into(),
            "cli-vol".into(),
            data.display().to_string(),
            "datasets/".into(),
        ]);
        move || cmd.output().unwrap()
    })
    .await
    .unwrap();
    assert!(
        put.status.success(),
        "put failed: {}{}",
        String::from_utf8_lossy(&put.stdout),
        String::from_utf8_lossy(&put.stderr)
    );
    assert_eq!(
        sb.volume_file("cli-vol", "datasets/ds/train.jsonl")
            .unwrap(),
        b"{\"a\": 1}\n"
    );
    // The put released its lease: another put route is granted at once.
    let (s, v) = route(
        &c,
        "cli-vol",
        json!({"mode": "put", "path": "datasets/x", "teamId": TEAM_ALPHA_ID}),
    )
    .await;
    assert_eq!(s, 200, "{v}");
}

#[tokio::test]
async fn requests_without_valid_credentials_are_refused_like_s3() {
    let sb = manual().await;
    let c = Client::new(&sb, 0);
    let run = finished_run_on(&c, &sb, "vol").await;
    let (s, r) = route(
        &c,
        "vol",
        json!({"mode": "get", "path": format!("runs/{run}/"), "teamId": TEAM_ALPHA_ID}),
    )
    .await;
    assert_eq!(s, 200, "{r}");
    assert_eq!(r["via"], "r2");
    assert_eq!(r["bucket"], "sandbox-volumes");
    let key = format!("{}/{}", r["endpoint"].as_str().unwrap(), "sandbox-volumes");
    let object = format!(
        "{key}/{}runs/{run}/config.json",
        r["prefix"].as_str().unwrap()
    );
    let http = reqwest::Client::new();
    let code = |resp: reqwest::Response| async move {
        let status = resp.status().as_u16();
        let body = resp.text().await.unwrap();
        (status, body)
    };

    // No signature at all.
    let (s, body) = code(http.get(&object).send().await.unwrap()).await;
    assert_eq!(s, 403);
    assert!(body.contains("<Code>AccessDenied</Code>"), "{body}");
    // A known key with a wrong token, and with a forged signature.
    let akid = r["accessKeyId"].as_str().unwrap();
    let token = r["sessionToken"].as_str().unwrap();
    let auth = format!(
        "AWS4-HMAC-SHA256 Credential={akid}/20260101/auto/s3/aws4_request, SignedHeaders=host;x-amz-date, Signature={}",
        "0".repeat(64)
    );
    let (s, body) = code(
        http.get(&object)
            .header("authorization", &auth)
            .header("x-amz-date", "20260101T000000Z")
            .header("x-amz-security-token", "not-the-token")
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(s, 403);
    assert!(body.contains("InvalidToken"), "{body}");
    let (s, body) = code(
        http.get(&object)
            .header("authorization", &auth)
            .header("x-amz-date", "20260101T000000Z")
            .header("x-amz-security-token", token)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(s, 403);
    assert!(body.contains("SignatureDoesNotMatch"), "{body}");
    // After the credentials' hour on the sandbox clock: ExpiredToken.
    advance(&sb, 3601);
    let (s, body) = code(
        http.get(&object)
            .header("authorization", &auth)
            .header("x-amz-security-token", token)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(s, 400);
    assert!(body.contains("<Code>ExpiredToken</Code>"), "{body}");
    // The body never echoes a credential.
    assert!(!body.contains(akid) && !body.contains(token));
}

#[tokio::test]
async fn put_routes_refuse_run_outputs_and_keep_one_writer() {
    let sb = manual().await;
    let c = Client::new(&sb, 0);
    finished_run_on(&c, &sb, "pv").await;
    let (s, v) = route(
        &c,
        "pv",
        json!({"mode": "put", "path": "runs/x/y", "teamId": TEAM_ALPHA_ID}),
    )
    .await;
    assert_eq!(s, 400, "{v}");
    assert!(v["detail"].as_str().unwrap().contains("read-only"));
    let (s, _) = route(
        &c,
        "pv",
        json!({"mode": "put", "path": "", "teamId": TEAM_ALPHA_ID}),
    )
    .await;
    assert_eq!(s, 400, "a root put must list its entries");
    let (s, first) = route(
        &c,
        "pv",
        json!({"mode": "put", "path": "datasets/a", "teamId": TEAM_ALPHA_ID}),
    )
    .await;
    assert_eq!(s, 200);
    let lease = first["leaseId"].as_str().unwrap().to_string();
    let (s, _) = route(
        &c,
        "pv",
        json!({"mode": "put", "path": "datasets/b", "teamId": TEAM_ALPHA_ID}),
    )
    .await;
    assert_eq!(s, 409, "one writer at a time");
    // A refresh with the lease is granted and keeps it; a release frees the volume.
    let (s, again) = route(
        &c,
        "pv",
        json!({"mode": "put", "path": "datasets/a", "leaseId": lease, "teamId": TEAM_ALPHA_ID}),
    )
    .await;
    assert_eq!(s, 200);
    assert_eq!(again["leaseId"], lease.as_str());
    let (s, _) = c
        .post(
            "/api/v1/training/volumes/pv/transfer/release",
            json!({"leaseId": lease, "teamId": TEAM_ALPHA_ID}),
        )
        .await;
    assert_eq!(s, 204);
    let (s, _) = route(
        &c,
        "pv",
        json!({"mode": "put", "path": "datasets/b", "teamId": TEAM_ALPHA_ID}),
    )
    .await;
    assert_eq!(s, 200);
    // An unreleased lease expires after 15 minutes of sandbox time.
    advance(&sb, 901);
    let (s, _) = route(
        &c,
        "pv",
        json!({"mode": "put", "path": "datasets/c", "teamId": TEAM_ALPHA_ID}),
    )
    .await;
    assert_eq!(s, 200);
}
