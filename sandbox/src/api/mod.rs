//! The router: the platform API (§12 of the reference), the traces service (§9), the volumes'
//! S3 endpoint and the test-only `/_sandbox/` control routes, all on one port, behind the
//! fault-injection and simulated-`Date` layers.

mod control;
mod layers;
mod platform;
mod traces;

use std::sync::Arc;

use axum::Router;
use http::StatusCode;

use crate::http::detail;
use crate::state::AppState;

pub(crate) use control::inspect_runs;
pub(crate) use platform::full_log;

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
            layers::faults,
        ))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            layers::simulated_date,
        ))
        .with_state(state)
}
