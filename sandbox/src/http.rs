//! Answers in the platform's and the traces service's shapes, and the request plumbing every
//! route shares: the caller's key, team membership, query and body parsing.

// Helpers return a ready-made error `Response` as their `Err`; its size does not matter here.
#![allow(clippy::result_large_err)]

use std::collections::HashMap;

use axum::response::{IntoResponse, Response};
use http::{HeaderMap, StatusCode};
use serde_json::{Value, json};

use crate::seed::{Seed, SeedUser};
use crate::state::AppState;

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
