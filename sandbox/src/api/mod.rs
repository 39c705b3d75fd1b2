//! HTTP surface: the platform API (§12 of the reference), the traces service (§9), and the
//! test-only `/_sandbox/` control routes, all on one router.

// Helpers return a ready-made error `Response` as their `Err`; its size does not matter here.
#![allow(clippy::result_large_err)]

mod control;
mod platform;
mod traces;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, Utc};
use http::{HeaderMap, StatusCode};
use serde_json::{Value, json};

use crate::RequestRecord;
use crate::clock::Clock;
use crate::faults::Faults;
use crate::seed::{Seed, SeedUser};
use crate::world::World;

pub(crate) use platform::seeded_world;

pub(crate) struct AppState {
    world: Mutex<World>,
    pub(crate) clock: Clock,
    pub(crate) faults: Mutex<Faults>,
    pub(crate) requests: Mutex<Vec<RequestRecord>>,
    /// The volumes' S3-compatible endpoint: issued credentials, leases, uploads.
    pub(crate) s3: crate::s3::S3State,
    state_file: Option<PathBuf>,
    token_value: Option<String>,
    base_url: String,
}

impl AppState {
    pub(crate) fn new(
        world: World,
        clock: Clock,
        state_file: Option<PathBuf>,
        token_value: Option<String>,
        base_url: String,
    ) -> Self {
        Self {
            world: Mutex::new(world),
            clock,
            faults: Mutex::new(Faults::default()),
            requests: Mutex::new(Vec::new()),
            s3: crate::s3::S3State::default(),
            state_file,
            token_value,
            base_url,
        }
    }

    pub(crate) fn with_world<T>(&self, f: impl FnOnce(&World) -> T) -> T {
        let w = self.world.lock().unwrap_or_else(|e| e.into_inner());
        f(&w)
    }

    /// Changes the world and persists it (when a state file is set).
    pub(crate) fn mutate<T>(&self, f: impl FnOnce(&mut World) -> T) -> T {
        let mut w = self.world.lock().unwrap_or_else(|e| e.into_inner());
        let out = f(&mut w);
        self.save_locked(&mut w);
        out
    }

    fn save_locked(&self, w: &mut World) {
        if let Some(path) = &self.state_file
            && let Err(e) = w.save(path, self.clock.now())
        {
            tracing::warn!("sandbox: {e}");
        }
    }

    pub(crate) fn persist(&self) {
        let mut w = self.world.lock().unwrap_or_else(|e| e.into_inner());
        self.save_locked(&mut w);
    }

    pub(crate) fn now(&self) -> DateTime<Utc> {
        self.clock.now()
    }

    pub(crate) fn log_request(&self, method: &str, path: &str, query: Option<&str>) {
        self.requests
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(RequestRecord {
                method: method.to_string(),
                path: path.to_string(),
                query: query.map(str::to_string),
            });
    }

    pub(crate) fn inspect_runs(&self) -> Vec<Value> {
        let now = self.now();
        self.with_world(|w| {
            w.runs
                .iter()
                .map(|r| control::inspect_run(r, &w.seed, now))
                .collect()
        })
    }
}

pub(crate) fn router(state: Arc<AppState>) -> Router {
    Router::new()
        .merge(platform::routes())
        .merge(traces::routes())
        .merge(control::routes())
        .merge(crate::s3::routes())
        .fallback(|| async { detail(StatusCode::NOT_FOUND, "Not Found") })
        .method_not_allowed_fallback(|| async {
            detail(StatusCode::METHOD_NOT_ALLOWED, "Method Not Allowed")
        })
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            crate::faults::middleware,
        ))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            simulated_date,
        ))
        .with_state(state)
}

/// Every answer's `Date` header carries the simulated clock (invention: the sandbox's clock
/// is the platform's clock, so a client that measures elapsed time by the platform's `Date`,
/// as the guard does, sees simulated time pass).
async fn simulated_date(
    axum::extract::State(state): axum::extract::State<Arc<AppState>>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let mut response = next.run(request).await;
    let date = state.now().format("%a, %d %b %Y %H:%M:%S GMT").to_string();
    if let Ok(v) = http::HeaderValue::from_str(&date) {
        response.headers_mut().insert(http::header::DATE, v);
    }
    response
}

// ---- shared helpers ----------------------------------------------------------------------

/// A platform error: `{"detail": "..."}`.
pub(crate) fn detail(status: StatusCode, msg: impl Into<String>) -> Response {
    (status, axum::Json(json!({"detail": msg.into()}))).into_response()
}

/// A FastAPI-style validation error: 422 with a list `detail`.
pub(crate) fn validation(loc: &[&str], msg: &str, kind: &str) -> Response {
    (
        StatusCode::UNPROCESSABLE_ENTITY,
        axum::Json(json!({"detail": [{"loc": loc, "msg": msg, "type": kind}]})),
    )
        .into_response()
}

/// A traces-service error: `{"error": {"code", "message"}}`.
pub(crate) fn trace_error(status: StatusCode, code: &str, msg: impl Into<String>) -> Response {
    (
        status,
        axum::Json(json!({"error": {"code": code, "message": msg.into()}})),
    )
        .into_response()
}

pub(crate) fn is_traces_path(path: &str) -> bool {
    ["/api/v1/traces", "/api/v1/episodes", "/api/v1/runs"]
        .iter()
        .any(|p| path == *p || path.starts_with(&format!("{p}/")))
}

pub(crate) fn ok(v: impl serde::Serialize) -> Response {
    axum::Json(v).into_response()
}

fn bearer(headers: &HeaderMap) -> Option<&str> {
    headers
        .get(http::header::AUTHORIZATION)?
        .to_str()
        .ok()?
        .strip_prefix("Bearer ")
        .map(str::trim)
}

/// The user behind the request's key, or a 401 in the platform's shape.
pub(crate) fn auth(state: &AppState, headers: &HeaderMap) -> Result<SeedUser, Response> {
    let key = bearer(headers);
    state
        .with_world(|w| key.and_then(|k| w.seed.user_by_key(k)).cloned())
        .ok_or_else(|| detail(StatusCode::UNAUTHORIZED, "Invalid or missing API key"))
}

/// Query parameters (last value wins for repeated keys).
pub(crate) type Params = HashMap<String, String>;

/// An optional integer query parameter; a bad value is a 422 like FastAPI's.
pub(crate) fn int_param(q: &Params, name: &str) -> Result<Option<i64>, Response> {
    match q.get(name) {
        None => Ok(None),
        Some(v) if v.is_empty() => Ok(None),
        Some(v) => v.parse::<i64>().map(Some).map_err(|_| {
            validation(
                &["query", name],
                "Input should be a valid integer, unable to parse string as an integer",
                "int_parsing",
            )
        }),
    }
}

/// Checks that the caller belongs to `team` (when one is given).
pub(crate) fn check_team(seed: &Seed, user: &SeedUser, team: Option<&str>) -> Result<(), Response> {
    match team {
        Some(t) if !seed.is_member(&user.id, t) => Err(detail(
            StatusCode::FORBIDDEN,
            format!("You are not a member of team {t}"),
        )),
        _ => Ok(()),
    }
}

pub(crate) fn nonempty(v: Option<&String>) -> Option<&str> {
    v.map(String::as_str).filter(|s| !s.trim().is_empty())
}

pub(crate) fn parse_json_body(body: &[u8]) -> Result<Value, Response> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(Value::Object(Default::default()));
    }
    serde_json::from_slice(body).map_err(|e| {
        validation(
            &["body"],
            &format!("JSON decode error: {e}"),
            "json_invalid",
        )
    })
}
