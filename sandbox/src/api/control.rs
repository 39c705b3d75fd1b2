//! Test-only inspection and control routes under `/_sandbox/` (no auth, no faults): every run of
//! every owner, counters, the request log, fault rules, the clock, and volume file listings.

// Helpers return a ready-made error `Response` as their `Err`; its size does not matter here.
#![allow(clippy::result_large_err)]

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use chrono::{DateTime, Utc};
use http::StatusCode;
use serde_json::{Value, json};

use crate::clock::{ClockMode, iso};
use crate::faults::FaultRule;
use crate::http::{detail, ok, parse_json_body};
use crate::outputs;
use crate::seed::Seed;
use crate::sim;
use crate::state::AppState;
use crate::world::Run;

type S = State<Arc<AppState>>;

pub(super) fn routes() -> Router<Arc<AppState>> {
    Router::new()
        .route(
            "/_sandbox/health",
            get(|| async { ok(json!({"ok": true})) }),
        )
        .route("/_sandbox/runs", get(runs))
        .route("/_sandbox/runs/{id}", get(run))
        .route("/_sandbox/runs/{id}/logs", get(run_log))
        .route("/_sandbox/stats", get(stats))
        .route("/_sandbox/requests", get(requests).delete(clear_requests))
        .route(
            "/_sandbox/faults",
            get(list_faults).post(add_fault).delete(clear_faults),
        )
        .route("/_sandbox/faults/release", post(release_held))
        .route("/_sandbox/clock", get(clock))
        .route("/_sandbox/clock/advance", post(advance))
        .route("/_sandbox/volumes/{name}/files", get(volume_files))
        .route("/dashboard/training/{id}", get(dashboard))
}

/// The sandbox's stand-in for the app's run page (`{frontend}/dashboard/training/{id}`), so a
/// "monitor run at" link never points at the real dashboard. No key: a browser sends none, so
/// it shows only the run's status.
async fn dashboard(State(st): S, Path(id): Path<String>) -> Response {
    let now = st.now();
    let status = st.with_world(|w| {
        w.run(&id)
            .map(|r| sim::phase(r, &w.seed.timings, now).status)
    });
    let esc = html_escape(&id);
    let (code, body) = match status {
        Some(s) => (
            StatusCode::OK,
            format!("<p>Run <code>{esc}</code>: {s}</p>"),
        ),
        None => (
            StatusCode::NOT_FOUND,
            format!("<p>No run <code>{esc}</code> here.</p>"),
        ),
    };
    let page = format!(
        "<!doctype html><meta charset=\"utf-8\"><title>factory-sandbox</title>\
         <h1>factory-sandbox</h1><p>This is the local sandbox, not the Prime Intellect dashboard.</p>{body}"
    );
    (
        code,
        [(http::header::CONTENT_TYPE, "text/html; charset=utf-8")],
        page,
    )
        .into_response()
}

fn html_escape(s: &str) -> String {
    s.chars()
        .map(|c| match c {
            '<' => "&lt;".to_string(),
            '>' => "&gt;".to_string(),
            '&' => "&amp;".to_string(),
            '"' => "&quot;".to_string(),
            '\'' => "&#39;".to_string(),
            c if c.is_control() => String::new(),
            c => c.to_string(),
        })
        .collect()
}

/// A run as inspection shows it: the wire object, the create body without secret values, and
/// the scenario the sandbox chose. Never the `tokenValue`.
fn inspect_run(r: &Run, seed: &Seed, now: DateTime<Utc>) -> Value {
    let secrets: Vec<&str> = ["wandbApiKey", "hfToken"]
        .into_iter()
        .filter(|k| r.create_body.get(*k).is_some())
        .collect();
    json!({
        "run": sim::run_wire(r, seed, now),
        "createBody": r.create_body,
        "secretsProvided": secrets,
        "scenario": r.scenario,
        "gpuType": r.gpu_type,
        "capacity": if r.reserved { "reserved" } else { "on-demand" },
        "clusterId": r.cluster_id,
        "weights": r.weights,
        "sourceRef": r.source_ref,
        "sourceCommit": r.source_ref.as_deref().map(sim::source_commit),
        "imageTag": r.image_tag,
        "resumeFrom": r.resume_from,
        "steps": sim::phase(r, &seed.timings, now).steps,
    })
}

/// Every run of every owner, as `GET /_sandbox/runs` shows them.
pub(crate) fn inspect_runs(st: &AppState) -> Vec<Value> {
    let now = st.now();
    st.with_world(|w| {
        w.runs
            .iter()
            .map(|r| inspect_run(r, &w.seed, now))
            .collect()
    })
}

async fn runs(State(st): S) -> Response {
    ok(json!({"runs": inspect_runs(&st)}))
}

async fn run(State(st): S, Path(id): Path<String>) -> Response {
    match inspect_runs(&st)
        .into_iter()
        .find(|r| r["run"]["id"].as_str() == Some(&id))
    {
        Some(r) => ok(r),
        None => detail(StatusCode::NOT_FOUND, format!("Run {id} not found")),
    }
}

/// One component's whole log (`?component=…&env_name=…`), past the API's 5,000-line tail and
/// 24 h look-back: what a test compares an export with. An invention.
async fn run_log(
    State(st): S,
    Path(id): Path<String>,
    axum::extract::Query(q): axum::extract::Query<std::collections::HashMap<String, String>>,
) -> Response {
    let now = st.now();
    let lines = st.with_world(|w| {
        w.run(&id).map(|r| {
            super::full_log(
                r,
                &w.seed,
                now,
                q.get("component").map(String::as_str),
                q.get("env_name").map(String::as_str),
            )
        })
    });
    match lines {
        Some(lines) => ok(json!({"lines": lines})),
        None => detail(StatusCode::NOT_FOUND, format!("Run {id} not found")),
    }
}

async fn stats(State(st): S) -> Response {
    st.with_world(|w| {
        ok(json!({
            "create_requests": w.create_requests,
            "runs": w.runs.len(),
            "volumes": w.volumes.len(),
        }))
    })
}

async fn requests(State(st): S) -> Response {
    let log = st
        .requests
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone();
    ok(json!({"requests": log}))
}

async fn clear_requests(State(st): S) -> Response {
    st.requests
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clear();
    ok(json!({"cleared": true}))
}

async fn list_faults(State(st): S) -> Response {
    let rules = st.faults.lock().unwrap_or_else(|e| e.into_inner()).list();
    ok(json!({"faults": rules}))
}

async fn add_fault(State(st): S, body: Bytes) -> Response {
    let value = match parse_json_body(&body) {
        Ok(v) => v,
        Err(r) => return r,
    };
    let rule: FaultRule = match serde_json::from_value(value) {
        Ok(r) => r,
        Err(e) => {
            return detail(
                StatusCode::UNPROCESSABLE_ENTITY,
                format!("Invalid fault rule: {e}"),
            );
        }
    };
    let added = st
        .faults
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .add(rule);
    (StatusCode::CREATED, axum::Json(added)).into_response()
}

async fn clear_faults(State(st): S) -> Response {
    st.faults.lock().unwrap_or_else(|e| e.into_inner()).clear();
    let released = st.holds.release();
    ok(json!({"cleared": true, "released": released}))
}

async fn release_held(State(st): S) -> Response {
    ok(json!({"released": st.holds.release()}))
}

fn clock_json(st: &AppState) -> Value {
    let (mode, speed) = match st.clock.mode() {
        ClockMode::Real { speed } => ("real", Some(speed)),
        ClockMode::Manual => ("manual", None),
    };
    json!({"now": iso(st.now()), "mode": mode, "speed": speed})
}

async fn clock(State(st): S) -> Response {
    ok(clock_json(&st))
}

async fn advance(State(st): S, body: Bytes) -> Response {
    let value = match parse_json_body(&body) {
        Ok(v) => v,
        Err(r) => return r,
    };
    match value.get("seconds").and_then(Value::as_f64) {
        Some(s) if (0.0..1e10).contains(&s) => {
            st.clock.advance(Duration::from_secs_f64(s));
            st.persist();
            ok(clock_json(&st))
        }
        _ => detail(
            StatusCode::UNPROCESSABLE_ENTITY,
            "seconds must be a non-negative number",
        ),
    }
}

/// Files on a volume (any owner): what runs mounted on it have written under `runs/<run_id>/`.
async fn volume_files(State(st): S, Path(name): Path<String>) -> Response {
    let now = st.now();
    st.with_world(|w| {
        if !w.volumes.iter().any(|v| v.name == name) {
            return detail(StatusCode::NOT_FOUND, format!("Volume '{name}' not found"));
        }
        let files: Vec<Value> = w
            .runs
            .iter()
            .filter(|r| r.volume.as_deref() == Some(name.as_str()))
            .flat_map(|r| outputs::volume_files(r, &w.seed, now))
            .collect();
        ok(json!({"volume": name, "files": files}))
    })
}
