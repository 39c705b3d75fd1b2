//! The platform API routes of §12 (login and feedback excepted).

// Helpers return a ready-made error `Response` as their `Err`; its size does not matter here.
#![allow(clippy::result_large_err)]

use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post, put};
use chrono::{DateTime, Utc};
use http::{HeaderMap, HeaderValue, StatusCode, header};
use serde_json::{Value, json};

use crate::builder::{CapacityError, NewRun, build_run, new_volume, resolve_capacity};
use crate::clock::{iso, plus_secs};
use crate::http::{
    Params, auth, check_team, detail, int_param, nonempty, ok, parse_json_body, validation,
};
use crate::logcache::{BodyKey, StepRange};
use crate::outputs;
use crate::seed::{Seed, SeedUser};
use crate::sim::{self, phase};
use crate::state::AppState;
use crate::wire::{
    CreateRunResponse, FftCluster, FftModel, OnDemandGpu, RunPage, TeamItem, TeamMember, VolumeWire,
};
use crate::world::{Run, Volume, World, new_token};

type S = State<Arc<AppState>>;

pub(super) fn routes() -> Router<Arc<AppState>> {
    Router::new()
        .route("/api/v1/user/whoami", get(whoami))
        .route("/api/v1/user/teams", get(teams))
        .route("/api/v1/teams/{team_id}/members", get(members))
        .route("/api/v1/training/available-fft-models", get(models))
        .route("/api/v1/training/available-gpu-types", get(gpu_types))
        .route("/api/v1/training/runs/prepare", post(prepare))
        .route("/api/v1/training/runs", post(create_run))
        .route("/api/v1/training/runs/{id}/pause", post(pause_run))
        .route("/api/v1/training/runs/{id}/resume", post(resume_run))
        .route(
            "/api/v1/training/volumes",
            get(list_volumes).post(create_volume),
        )
        .route("/api/v1/training/volumes/{name}/transfer", post(transfer))
        .route("/api/v1/rft/runs", get(list_runs))
        .route("/api/v1/rft/runs/{id}", get(get_run).delete(delete_run))
        .route("/api/v1/rft/runs/{id}/stop", put(stop_run))
        .route("/api/v1/rft/runs/{id}/restart", put(restart_run))
        .route("/api/v1/rft/runs/{id}/logs", get(logs))
        .route(
            "/api/v1/rft/runs/{id}/env-server-logs",
            get(env_server_logs),
        )
        .route("/api/v1/rft/runs/{id}/env-servers", get(env_servers))
        .route("/api/v1/rft/runs/{id}/metrics", get(metrics))
        .route("/api/v1/rft/runs/{id}/progress", get(progress))
        .route("/api/v1/rft/runs/{id}/checkpoints", get(checkpoints))
        .route("/api/v1/rft/runs/{id}/samples", get(samples))
        .route("/api/v1/rft/runs/{id}/distributions", get(distributions))
        .route("/api/v1/billing/runs/{id}/usage", get(usage))
}

// ---- account ------------------------------------------------------------------------------

async fn whoami(State(st): S, headers: HeaderMap, Query(q): Query<Params>) -> Response {
    let user = match auth(&st, &headers) {
        Ok(u) => u,
        Err(r) => return r,
    };
    let team = nonempty(q.get("teamId"));
    if let Err(r) = st.with_world(|w| check_team(&w.seed, &user, team)) {
        return r;
    }
    let scope = json!({
        "training": {"read": true, "write": true},
        "volumes": {"read": true, "write": true},
        "traces": {"read": true, "write": true},
        "sandboxes": null,
    });
    ok(json!({"data": {
        "id": user.id, "email": user.email, "name": user.name, "slug": user.slug,
        "scope": scope, "account_limits": null, "key_limits": null,
    }}))
}

async fn teams(State(st): S, headers: HeaderMap, Query(q): Query<Params>) -> Response {
    let user = match auth(&st, &headers) {
        Ok(u) => u,
        Err(r) => return r,
    };
    let (offset, limit) = match (int_param(&q, "offset"), int_param(&q, "limit")) {
        (Ok(o), Ok(l)) => (
            o.unwrap_or(0).max(0) as usize,
            l.unwrap_or(100).clamp(1, 1000) as usize,
        ),
        (Err(r), _) | (_, Err(r)) => return r,
    };
    let all: Vec<TeamItem> = st.with_world(|w| {
        w.seed
            .teams
            .iter()
            .filter_map(|t| {
                let m = t.members.iter().find(|m| m.user_id == user.id)?;
                Some(TeamItem {
                    team_id: t.id.clone(),
                    name: t.name.clone(),
                    slug: t.slug.clone(),
                    role: m.role.clone(),
                    created_at: t.created_at.clone(),
                })
            })
            .collect()
    });
    let total = all.len();
    let data: Vec<TeamItem> = all.into_iter().skip(offset).take(limit).collect();
    ok(json!({"data": data, "total_count": total}))
}

async fn members(State(st): S, headers: HeaderMap, Path(team_id): Path<String>) -> Response {
    let user = match auth(&st, &headers) {
        Ok(u) => u,
        Err(r) => return r,
    };
    st.with_world(|w| {
        let Some(team) = w
            .seed
            .teams
            .iter()
            .find(|t| t.id == team_id && t.members.iter().any(|m| m.user_id == user.id))
        else {
            return detail(StatusCode::NOT_FOUND, format!("Team {team_id} not found"));
        };
        let data: Vec<TeamMember> = team
            .members
            .iter()
            .filter_map(|m| {
                let u = w.seed.user(&m.user_id)?;
                Some(TeamMember {
                    user_id: u.id.clone(),
                    user_name: u.name.clone(),
                    user_email: u.email.clone(),
                    role: m.role.clone(),
                    joined_at: team.created_at.clone(),
                })
            })
            .collect();
        ok(json!({"data": data}))
    })
}

// ---- discovery ----------------------------------------------------------------------------

async fn models(State(st): S, headers: HeaderMap, Query(q): Query<Params>) -> Response {
    let user = match auth(&st, &headers) {
        Ok(u) => u,
        Err(r) => return r,
    };
    let team = nonempty(q.get("team_id"));
    st.with_world(|w| {
        if let Err(r) = check_team(&w.seed, &user, team) {
            return r;
        }
        let on_demand: Vec<OnDemandGpu> = w
            .seed
            .gpus
            .iter()
            .map(|g| OnDemandGpu {
                gpu_type: g.gpu_type.clone(),
                price_per_gpu_hour: g.price_per_gpu_hour,
                discount_label: g.discount_label.clone(),
                available_now: g.available_now,
                is_beta: g.is_beta,
            })
            .collect();
        ok(json!({
            "models": fft_models(&w.seed, team),
            "onDemand": on_demand,
            "onDemandBetaAccess": w.seed.on_demand_access(&user, team),
        }))
    })
}

/// The trainable models the account sees: the shared clusters' models, plus the models cached
/// on the team's reserved clusters (with those clusters).
fn fft_models(seed: &Seed, team: Option<&str>) -> Vec<FftModel> {
    let wire = |id: &str, name: &str, gpu: &str| FftCluster {
        cluster_id: id.to_string(),
        cluster_name: name.to_string(),
        gpu_type: gpu.to_string(),
    };
    let mut models: Vec<FftModel> = seed
        .models
        .iter()
        .map(|m| FftModel {
            name: m.name.clone(),
            clusters: m
                .clusters
                .iter()
                .map(|c| wire(&c.cluster_id, &c.cluster_name, &c.gpu_type))
                .collect(),
        })
        .collect();
    for c in seed.reserved_clusters(team) {
        for name in &c.cached_models {
            let cluster = wire(&c.cluster_id, &c.cluster_name, &c.gpu_type);
            match models.iter_mut().find(|m| &m.name == name) {
                Some(m) => m.clusters.push(cluster),
                None => models.push(FftModel {
                    name: name.clone(),
                    clusters: vec![cluster],
                }),
            }
        }
    }
    models
}

/// The on-demand offers' GPU types, plus the types of the team's reserved clusters
/// (inference: the reference shows the shape only).
async fn gpu_types(State(st): S, headers: HeaderMap, Query(q): Query<Params>) -> Response {
    let user = match auth(&st, &headers) {
        Ok(u) => u,
        Err(r) => return r,
    };
    let team = nonempty(q.get("team_id"));
    st.with_world(|w| {
        if let Err(r) = check_team(&w.seed, &user, team) {
            return r;
        }
        let mut types: Vec<&str> = w.seed.gpus.iter().map(|g| g.gpu_type.as_str()).collect();
        for c in w.seed.reserved_clusters(team) {
            if !types.contains(&c.gpu_type.as_str()) {
                types.push(&c.gpu_type);
            }
        }
        ok(json!({"gpuTypes": types}))
    })
}

/// §11: answering 404 makes the CLI skip local validation (no uv venv from the network) —
/// except for a `sourceRef` the account may not use, which is 403 as on create (inference:
/// the platform's prepare is not documented to check it).
async fn prepare(State(st): S, headers: HeaderMap, body: Bytes) -> Response {
    let user = match auth(&st, &headers) {
        Ok(u) => u,
        Err(r) => return r,
    };
    let body = parse_json_body(&body).unwrap_or(Value::Null);
    let team = body.get("teamId").and_then(Value::as_str);
    if let Some(r) = body.get("sourceRef").and_then(Value::as_str)
        && let Err(resp) = st.with_world(|w| check_source_ref(&w.seed, &user, team, r))
    {
        return resp;
    }
    detail(StatusCode::NOT_FOUND, "Not Found")
}

// ---- create / pause / resume --------------------------------------------------------------

/// §6.4's "restricted" `sourceRef`: 403 unless the dispatch is a team run of a team with
/// source-ref access (the CLI's help text; the detail is the sandbox's own).
fn check_source_ref(
    seed: &Seed,
    user: &SeedUser,
    team_id: Option<&str>,
    source_ref: &str,
) -> Result<(), Response> {
    if seed.may_use_source_ref(&user.id, team_id) {
        return Ok(());
    }
    let who = match team_id {
        Some(t) => format!("team {t} does not have sourceRef access"),
        None => "a personal-account dispatch cannot use one; dispatch as a team".to_string(),
    };
    Err(detail(
        StatusCode::FORBIDDEN,
        format!(
            "Custom source refs are restricted: {who} (sourceRef '{source_ref}'; ask Prime support for access)"
        ),
    ))
}

fn capacity_error(e: &CapacityError) -> Response {
    let (status, msg) = e.status_and_detail();
    detail(
        StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_REQUEST),
        msg,
    )
}

fn create_response(run: &Run, seed: &Seed) -> CreateRunResponse {
    let gpu = run.gpu_type.as_deref().and_then(|g| seed.gpu(g));
    CreateRunResponse {
        run_id: run.id.clone(),
        token_value: run.token_value.clone(),
        on_demand: run.on_demand,
        // Reserved capacity: no on-demand fields (as in §6.4's captured example).
        gpu_type: run.gpu_type.clone().filter(|_| !run.reserved),
        price_per_gpu_hour: run.price_per_gpu_hour,
        estimated_cost_per_hour: run
            .price_per_gpu_hour
            .map(|p| (p * f64::from(run.train_gpus + run.infer_gpus) * 100.0).round() / 100.0),
        is_beta: !run.reserved && gpu.is_some_and(|g| g.is_beta),
    }
}

/// The create body with secret values replaced, for inspection.
fn redact_body(body: &Value) -> Value {
    let mut b = body.clone();
    if let Some(o) = b.as_object_mut() {
        for k in ["wandbApiKey", "hfToken"] {
            if o.contains_key(k) {
                o.insert(k.to_string(), json!("[redacted]"));
            }
        }
    }
    b
}

fn opt_string(body: &Value, key: &str) -> Result<Option<String>, Response> {
    match body.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(validation(
            &["body", key],
            "Input should be a valid string",
            "string_type",
        )),
    }
}

async fn create_run(State(st): S, headers: HeaderMap, body: Bytes) -> Response {
    let user = match auth(&st, &headers) {
        Ok(u) => u,
        Err(r) => return r,
    };
    st.mutate(|w| w.create_requests += 1);
    let body = match parse_json_body(&body) {
        Ok(b) => b,
        Err(r) => return r,
    };
    if !body.is_object() {
        return validation(&["body"], "Input should be a valid dictionary", "dict_type");
    }
    let config = match body.get("config") {
        Some(c @ Value::Object(_)) => c.clone(),
        Some(_) => {
            return validation(
                &["body", "config"],
                "Input should be a valid dictionary",
                "dict_type",
            );
        }
        None => return validation(&["body", "config"], "Field required", "missing"),
    };
    let fields = (|| {
        Ok::<_, Response>((
            opt_string(&body, "name")?,
            opt_string(&body, "teamId")?,
            opt_string(&body, "gpuType")?,
            opt_string(&body, "imageTag")?,
            opt_string(&body, "volume")?,
            opt_string(&body, "mode")?,
            opt_string(&body, "sourceRef")?,
            opt_string(&body, "resumeFrom")?,
            opt_string(&body, "wandbApiKey")?,
            opt_string(&body, "hfToken")?,
        ))
    })();
    let (name, team_id, gpu_type, image_tag, volume, mode, source_ref, resume_from, _wandb, hf) =
        match fields {
            Ok(f) => f,
            Err(r) => return r,
        };
    let sft = match mode.as_deref() {
        None | Some("rl") => false,
        Some("sft") => true,
        Some(_) => {
            return validation(
                &["body", "mode"],
                "Input should be 'rl' or 'sft'",
                "literal_error",
            );
        }
    };
    let now = st.now();
    let token = st.token_value.clone().unwrap_or_else(new_token);
    st.mutate(|w| {
        if let Err(r) = check_team(&w.seed, &user, team_id.as_deref()) {
            return r;
        }
        if let Some(r) = &source_ref
            && let Err(resp) = check_source_ref(&w.seed, &user, team_id.as_deref(), r)
        {
            return resp;
        }
        let model = sim::model_name(&config);
        let cap = match resolve_capacity(
            &w.seed,
            &user,
            team_id.as_deref(),
            model.as_deref(),
            gpu_type.as_deref(),
        ) {
            Ok(c) => c,
            Err(e) => return capacity_error(&e),
        };
        let mut run_config = config.clone();
        let mut volume = volume.clone();
        if let Some(from) = &resume_from {
            let Some(prev) = w.visible_run(&user.id, from) else {
                return detail(StatusCode::NOT_FOUND, format!("Run {from} not found"));
            };
            let status = phase(prev, &w.seed.timings, now).status;
            if status != "PAUSED" {
                return detail(
                    StatusCode::CONFLICT,
                    format!("Run {from} is {status}, not PAUSED; only a PAUSED run can be resumed"),
                );
            }
            if volume.is_none() {
                volume = prev.volume.clone();
            }
            if run_config.as_object().is_some_and(|o| o.is_empty()) {
                run_config = prev.config.clone();
            }
        } else if let Some(v) = &volume {
            match w.volume_in_account(&user.id, team_id.as_deref(), v) {
                None => return detail(StatusCode::NOT_FOUND, format!("Volume '{v}' not found")),
                Some(vol) if vol.status(now) != "RUNNING" => {
                    return detail(
                        StatusCode::CONFLICT,
                        format!("Volume '{v}' is not ready yet"),
                    );
                }
                Some(_) => {}
            }
        }
        let run = build_run(
            w,
            NewRun {
                id: None,
                user_id: user.id.clone(),
                team_id: team_id.clone(),
                name: name.clone(),
                config: run_config,
                create_body: redact_body(&body),
                sft,
                image_tag: image_tag.clone(),
                source_ref: source_ref.clone(),
                volume,
                resume_from: resume_from.clone(),
                token_value: token,
                created_at: now,
                trace_bytes_total: None,
                hf_token: hf.is_some_and(|t| !t.is_empty()),
            },
            cap,
        );
        let resp = create_response(&run, &w.seed);
        w.runs.push(run);
        (StatusCode::CREATED, axum::Json(resp)).into_response()
    })
}

async fn pause_run(State(st): S, headers: HeaderMap, Path(id): Path<String>) -> Response {
    let user = match auth(&st, &headers) {
        Ok(u) => u,
        Err(r) => return r,
    };
    let now = st.now();
    st.mutate(|w| {
        let status = match w.visible_run(&user.id, &id) {
            None => return detail(StatusCode::NOT_FOUND, format!("Run {id} not found")),
            Some(r) => phase(r, &w.seed.timings, now).status,
        };
        if status != "RUNNING" {
            return detail(StatusCode::CONFLICT, "Run is not RUNNING");
        }
        if let Some(r) = w.run_mut(&id) {
            r.paused_at = Some(now);
        }
        ok(json!({"runId": id, "status": "PAUSED"}))
    })
}

async fn resume_run(
    State(st): S,
    headers: HeaderMap,
    Path(id): Path<String>,
    body: Bytes,
) -> Response {
    let user = match auth(&st, &headers) {
        Ok(u) => u,
        Err(r) => return r,
    };
    let body = match parse_json_body(&body) {
        Ok(b) => b,
        Err(r) => return r,
    };
    let gpu_type = match opt_string(&body, "gpuType") {
        Ok(g) => g,
        Err(r) => return r,
    };
    let image_tag = match opt_string(&body, "imageTag") {
        Ok(g) => g,
        Err(r) => return r,
    };
    let hf_token = match opt_string(&body, "hfToken") {
        Ok(t) => t,
        Err(r) => return r,
    };
    let now = st.now();
    let token = st.token_value.clone().unwrap_or_else(new_token);
    st.mutate(|w| {
        w.create_requests += 1;
        let Some(prev) = w.visible_run(&user.id, &id).cloned() else {
            return detail(StatusCode::NOT_FOUND, format!("Run {id} not found"));
        };
        let status = phase(&prev, &w.seed.timings, now).status;
        if status != "PAUSED" {
            return detail(StatusCode::CONFLICT, format!("Run is {status}, not PAUSED"));
        }
        let gpu = gpu_type.clone().or(prev.gpu_type.clone());
        let model = sim::model_name(&prev.config);
        let team = prev.team_id.as_deref();
        let cap = match resolve_capacity(&w.seed, &user, team, model.as_deref(), gpu.as_deref()) {
            Ok(c) => c,
            Err(CapacityError::UnknownGpu { gpu_type, .. }) => {
                return detail(
                    StatusCode::BAD_REQUEST,
                    format!("Unknown gpuType '{gpu_type}'"),
                );
            }
            Err(e) => return capacity_error(&e),
        };
        let run = build_run(
            w,
            NewRun {
                id: None,
                user_id: user.id.clone(),
                team_id: prev.team_id.clone(),
                name: prev.name.clone(),
                config: prev.config.clone(),
                create_body: redact_body(&body),
                sft: prev.sft,
                image_tag: image_tag.clone().or(prev.image_tag.clone()),
                source_ref: prev.source_ref.clone(),
                volume: prev.volume.clone(),
                resume_from: Some(prev.id.clone()),
                token_value: token,
                created_at: now,
                trace_bytes_total: None,
                hf_token: hf_token.is_some_and(|t| !t.is_empty()),
            },
            cap,
        );
        let resp = create_response(&run, &w.seed);
        w.runs.push(run);
        (StatusCode::CREATED, axum::Json(resp)).into_response()
    })
}

// ---- runs ---------------------------------------------------------------------------------

async fn list_runs(State(st): S, headers: HeaderMap, Query(q): Query<Params>) -> Response {
    let user = match auth(&st, &headers) {
        Ok(u) => u,
        Err(r) => return r,
    };
    let page = match int_param(&q, "page") {
        Ok(p) => p.unwrap_or(1),
        Err(r) => return r,
    };
    let limit = match int_param(&q, "limit") {
        Ok(l) => l.unwrap_or(20),
        Err(r) => return r,
    };
    if page < 1 {
        return validation(
            &["query", "page"],
            "Input should be greater than or equal to 1",
            "greater_than_equal",
        );
    }
    if !(1..=100).contains(&limit) {
        return validation(
            &["query", "limit"],
            "Input should be between 1 and 100",
            "less_than_equal",
        );
    }
    let mine = q
        .get("mine")
        .is_some_and(|v| v.eq_ignore_ascii_case("true") || v == "1");
    let team = nonempty(q.get("team_id"));
    let now = st.now();
    st.with_world(|w| {
        if let Err(r) = check_team(&w.seed, &user, team) {
            return r;
        }
        // Newest first; runs created at the same instant keep creation order (later = newer).
        let mut runs: Vec<(usize, &Run)> = w
            .runs_in_account(&user.id, team)
            .filter(|r| !mine || r.user_id == user.id)
            .enumerate()
            .collect();
        runs.sort_by(|(ia, a), (ib, b)| b.created_at.cmp(&a.created_at).then(ib.cmp(ia)));
        let total = runs.len();
        let (page, limit) = (page as usize, limit as usize);
        let items = runs
            .into_iter()
            .skip((page - 1).saturating_mul(limit))
            .take(limit)
            .map(|(_, r)| sim::run_wire(r, &w.seed, now))
            .collect();
        ok(RunPage {
            runs: items,
            total,
            page,
            limit,
            total_pages: total.div_ceil(limit),
        })
    })
}

fn not_found(id: &str) -> Response {
    detail(StatusCode::NOT_FOUND, format!("Run {id} not found"))
}

/// Runs `f` on a run the caller can see, or answers 401/404.
fn with_run(
    st: &AppState,
    headers: &HeaderMap,
    id: &str,
    f: impl FnOnce(&Run, &Seed, DateTime<Utc>) -> Response,
) -> Response {
    let user = match auth(st, headers) {
        Ok(u) => u,
        Err(r) => return r,
    };
    let now = st.now();
    st.with_world(|w| match w.visible_run(&user.id, id) {
        Some(r) => f(r, &w.seed, now),
        None => not_found(id),
    })
}

async fn get_run(State(st): S, headers: HeaderMap, Path(id): Path<String>) -> Response {
    with_run(&st, &headers, &id, |r, seed, now| {
        ok(json!({"run": sim::run_wire(r, seed, now)}))
    })
}

async fn stop_run(State(st): S, headers: HeaderMap, Path(id): Path<String>) -> Response {
    let user = match auth(&st, &headers) {
        Ok(u) => u,
        Err(r) => return r,
    };
    let now = st.now();
    st.mutate(|w| {
        let active = match w.visible_run(&user.id, &id) {
            None => return not_found(&id),
            Some(r) => phase(r, &w.seed.timings, now).is_active(),
        };
        let World { runs, seed, .. } = w;
        let Some(r) = runs.iter_mut().find(|r| r.id == id) else {
            return not_found(&id);
        };
        if active {
            r.stopped_at = Some(now);
        }
        ok(json!({"run": sim::run_wire(r, seed, now)}))
    })
}

async fn restart_run(State(st): S, headers: HeaderMap, Path(id): Path<String>) -> Response {
    let user = match auth(&st, &headers) {
        Ok(u) => u,
        Err(r) => return r,
    };
    let now = st.now();
    st.mutate(|w| {
        let status = match w.visible_run(&user.id, &id) {
            None => return not_found(&id),
            Some(r) => phase(r, &w.seed.timings, now).status,
        };
        if status != "RUNNING" {
            return detail(
                StatusCode::CONFLICT,
                format!("Only RUNNING runs can be restarted; run {id} is {status}"),
            );
        }
        let World { runs, seed, .. } = w;
        let Some(r) = runs.iter_mut().find(|r| r.id == id) else {
            return not_found(&id);
        };
        r.restarts.push(now);
        ok(json!({"run": sim::run_wire(r, seed, now)}))
    })
}

async fn delete_run(State(st): S, headers: HeaderMap, Path(id): Path<String>) -> Response {
    let user = match auth(&st, &headers) {
        Ok(u) => u,
        Err(r) => return r,
    };
    let now = st.now();
    st.mutate(|w| {
        let status = match w.visible_run(&user.id, &id) {
            None => return not_found(&id),
            Some(r) => phase(r, &w.seed.timings, now),
        };
        if status.is_active() {
            return detail(
                StatusCode::CONFLICT,
                format!("Run {id} is {}; stop it before deleting it", status.status),
            );
        }
        w.runs.retain(|r| r.id != id);
        ok(json!({"id": id, "deleted": true}))
    })
}

// ---- monitoring ---------------------------------------------------------------------------

const COMPONENTS: [&str; 4] = ["orchestrator", "trainer", "inference", "env-server"];

/// The `search` filter of a logs request.
type Matcher = Box<dyn Fn(&str) -> bool>;

/// A logs request's filters (§5.6), parsed from its query.
struct LogQuery {
    tail: usize,
    component: &'static str,
    env_name: Option<String>,
    min_rank: u8,
    cutoff: Option<DateTime<Utc>>,
    matcher: Option<Matcher>,
}

/// Severity order of the `level` filter ("this level and above").
fn level_rank(level: &str) -> u8 {
    match level {
        "ERROR" => 3,
        "WARNING" => 2,
        _ => 1,
    }
}

impl LogQuery {
    fn parse(run: &Run, now: DateTime<Utc>, q: &Params, force_env: bool) -> Result<Self, Response> {
        let tail = int_param(q, "tail_lines")?.unwrap_or(1000);
        if !(1..=5000).contains(&tail) {
            return Err(validation(
                &["query", "tail_lines"],
                "Input should be between 1 and 5000",
                "less_than_equal",
            ));
        }
        let since = int_param(q, "since_seconds")?;
        // The range the CLI parses `--since` into (§5.6); the server's own check is inferred.
        if since.is_some_and(|s| !(60..=86_400).contains(&s)) {
            return Err(validation(
                &["query", "since_seconds"],
                "Input should be between 60 and 86400",
                "less_than_equal",
            ));
        }
        Ok(Self {
            tail: tail as usize,
            component: Self::component(run, q, force_env)?,
            env_name: nonempty(q.get("env_name")).map(str::to_string),
            matcher: Self::matcher(q)?,
            min_rank: Self::min_rank(q)?,
            cutoff: since.map(|s| plus_secs(now, -(s as f64))),
        })
    }

    /// `component`, or the run's primary one when absent.
    fn component(run: &Run, q: &Params, force_env: bool) -> Result<&'static str, Response> {
        if force_env {
            return Ok("env-server");
        }
        match q.get("component").map(String::as_str) {
            None | Some("") => Ok(sim::primary_component(run)),
            Some(c) => COMPONENTS
                .iter()
                .find(|k| **k == c)
                .copied()
                .ok_or_else(|| {
                    detail(
                        StatusCode::BAD_REQUEST,
                        format!(
                            "Unknown component '{c}'; use one of {}",
                            COMPONENTS.join(", ")
                        ),
                    )
                }),
        }
    }

    fn min_rank(q: &Params) -> Result<u8, Response> {
        match q.get("level").map(|l| l.to_ascii_uppercase()).as_deref() {
            None | Some("" | "DEBUG") => Ok(0),
            Some("INFO" | "SUCCESS") => Ok(1),
            Some("WARNING") => Ok(2),
            Some("ERROR") => Ok(3),
            Some(other) => Err(detail(
                StatusCode::BAD_REQUEST,
                format!("Unknown level '{other}'"),
            )),
        }
    }

    /// `search`: a case-insensitive substring, or a regex with `regex=true`.
    fn matcher(q: &Params) -> Result<Option<Matcher>, Response> {
        let regex = q.get("regex").is_some_and(|v| v == "true");
        Ok(match (nonempty(q.get("search")), regex) {
            (Some(s), true) => {
                let re = regex::Regex::new(s)
                    .map_err(|e| detail(StatusCode::BAD_REQUEST, format!("Invalid regex: {e}")))?;
                Some(Box::new(move |t: &str| re.is_match(t)))
            }
            (Some(s), false) => {
                let needle = s.to_lowercase();
                Some(Box::new(move |t: &str| t.to_lowercase().contains(&needle)))
            }
            (None, _) => None,
        })
    }

    fn keeps(&self, l: &sim::LogLine) -> bool {
        l.component == self.component
            && self
                .env_name
                .as_deref()
                .is_none_or(|e| l.env.as_deref() == Some(e))
            && level_rank(l.level) >= self.min_rank
            && self.cutoff.is_none_or(|c| l.ts >= c)
            && self.matcher.as_ref().is_none_or(|m| m(&l.text))
    }
}

/// Every line of one component's log, without the tail or look-back limits (for
/// `GET /_sandbox/runs/{id}/logs`, an invention): what a test compares an export with.
pub(crate) fn full_log(
    run: &Run,
    seed: &Seed,
    now: DateTime<Utc>,
    component: Option<&str>,
    env_name: Option<&str>,
) -> Vec<String> {
    let component = match component {
        None | Some("") => sim::primary_component(run),
        Some(c) => COMPONENTS.iter().find(|k| **k == c).copied().unwrap_or(""),
    };
    sim::logs(run, seed, now)
        .into_iter()
        .filter(|l| {
            l.component == component && env_name.is_none_or(|e| l.env.as_deref() == Some(e))
        })
        .map(|l| l.text)
        .collect()
}

/// 404 "not available yet" before the run starts (the CLI waits on it), else the filtered tail.
/// The lines (and a repeated request's answer) come from the log cache: byte for byte what
/// generating them afresh gives.
fn render_logs(
    st: &AppState,
    run: &Run,
    seed: &Seed,
    now: DateTime<Utc>,
    q: &Params,
    force_env: bool,
) -> Response {
    let ph = phase(run, &seed.timings, now);
    if !ph.has_started() {
        let what = match ph.status {
            "QUEUED" => "queued",
            "PENDING" => "pending",
            _ => "not started",
        };
        return detail(
            StatusCode::NOT_FOUND,
            format!("Run is {what}; logs are not available yet"),
        );
    }
    let query = match LogQuery::parse(run, now, q, force_env) {
        Ok(query) => query,
        Err(r) => return r,
    };
    let mut params: Vec<(String, String)> = q.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    params.sort();
    let key = BodyKey {
        params,
        force_env,
        now,
    };
    let (all, kept) = st.logs.lines(run, seed, now, &key);
    if let Some(body) = kept {
        return json_body(body);
    }
    let lines: Vec<&str> = all
        .iter()
        .filter(|l| query.keeps(l))
        .map(|l| l.text.as_str())
        .collect();
    let skip = lines.len().saturating_sub(query.tail);
    let body = match serde_json::to_vec(&json!({"logs": lines[skip..].join("\n")})) {
        Ok(b) => Bytes::from(b),
        Err(e) => return detail(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    };
    st.logs.keep_body(run, seed, now, key, body.clone());
    json_body(body)
}

/// A JSON answer from bytes already serialised (as `axum::Json` sends it).
fn json_body(body: Bytes) -> Response {
    (
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        body,
    )
        .into_response()
}

async fn logs(
    State(st): S,
    headers: HeaderMap,
    Path(id): Path<String>,
    Query(q): Query<Params>,
) -> Response {
    with_run(&st, &headers, &id, |r, seed, now| {
        render_logs(&st, r, seed, now, &q, false)
    })
}

async fn env_server_logs(
    State(st): S,
    headers: HeaderMap,
    Path(id): Path<String>,
    Query(q): Query<Params>,
) -> Response {
    with_run(&st, &headers, &id, |r, seed, now| {
        render_logs(&st, r, seed, now, &q, true)
    })
}

async fn env_servers(State(st): S, headers: HeaderMap, Path(id): Path<String>) -> Response {
    with_run(&st, &headers, &id, |r, seed, now| {
        ok(json!({"env_servers": sim::env_servers(r, seed, now)}))
    })
}

async fn metrics(
    State(st): S,
    headers: HeaderMap,
    Path(id): Path<String>,
    Query(q): Query<Params>,
) -> Response {
    let params = (
        int_param(&q, "min_step"),
        int_param(&q, "max_step"),
        int_param(&q, "limit"),
    );
    let (min, max, limit) = match params {
        (Ok(a), Ok(b), Ok(c)) => (a, b, c),
        (Err(r), _, _) | (_, Err(r), _) | (_, _, Err(r)) => return r,
    };
    with_run(&st, &headers, &id, |r, seed, now| {
        render_metrics(&st, r, seed, now, (min, max, limit))
    })
}

/// The metrics answer: a record per step from `min_step` (default 1) to `max_step` (default
/// the latest), the first `limit` of them; kept, and given again while nothing it is made
/// from changes ([`crate::logcache::MetricsCache`]).
fn render_metrics(
    st: &AppState,
    r: &Run,
    seed: &Seed,
    now: DateTime<Utc>,
    range: StepRange,
) -> Response {
    let ph = phase(r, &seed.timings, now);
    if let Some(body) = st.metrics.body(r, &seed.timings, &ph, range) {
        return json_body(body);
    }
    let (min, max, limit) = range;
    let total = sim::max_steps(r, &seed.timings);
    let lo = min.unwrap_or(1).max(1);
    let hi = max.unwrap_or(i64::from(ph.steps)).min(i64::from(ph.steps));
    let mut out = Vec::new();
    let mut k = lo;
    while k <= hi && limit.is_none_or(|l| (out.len() as i64) < l) {
        let mut m = sim::metrics_row(r, k as u32, total);
        m.timestamp = Some(iso(sim::step_time(&ph, &seed.timings, k as u32)));
        out.push(m);
        k += 1;
    }
    #[derive(serde::Serialize)]
    struct Answer {
        metrics: Vec<sim::MetricsRow>,
    }
    let body = match serde_json::to_vec(&Answer { metrics: out }) {
        Ok(b) => Bytes::from(b),
        Err(e) => return detail(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    };
    st.metrics.keep(r, &seed.timings, ph, range, body.clone());
    json_body(body)
}

async fn progress(State(st): S, headers: HeaderMap, Path(id): Path<String>) -> Response {
    with_run(&st, &headers, &id, |r, seed, now| {
        ok(sim::progress(r, seed, now))
    })
}

async fn checkpoints(
    State(st): S,
    headers: HeaderMap,
    Path(id): Path<String>,
    Query(q): Query<Params>,
) -> Response {
    with_run(&st, &headers, &id, |r, seed, now| {
        let filter = nonempty(q.get("status_filter")).map(str::to_ascii_uppercase);
        let cks: Vec<_> = outputs::checkpoints(r, seed, now)
            .into_iter()
            .filter(|c| filter.as_deref().is_none_or(|f| c.status == f))
            .collect();
        ok(json!({"checkpoints": cks}))
    })
}

async fn samples(
    State(st): S,
    headers: HeaderMap,
    Path(id): Path<String>,
    Query(q): Query<Params>,
) -> Response {
    let params = (
        int_param(&q, "page"),
        int_param(&q, "limit"),
        int_param(&q, "step"),
    );
    let (page, limit, step) = match params {
        (Ok(a), Ok(b), Ok(c)) => (
            a.unwrap_or(1).max(1) as u32,
            b.unwrap_or(100).clamp(1, 1000) as u32,
            c,
        ),
        (Err(r), _, _) | (_, Err(r), _) | (_, _, Err(r)) => return r,
    };
    with_run(&st, &headers, &id, |r, seed, now| {
        let ph = phase(r, &seed.timings, now);
        let steps = sim::sample_steps(r, &ph);
        let step = step.map(|s| s.max(0) as u32).or(steps.last().copied());
        let total = match step {
            Some(s) if steps.contains(&s) => sim::SAMPLES_PER_STEP,
            _ => 0,
        };
        let start = (page - 1) * limit;
        let items: Vec<Value> = (start..total.min(start + limit))
            .filter_map(|i| step.map(|s| sim::sample(r, s, i)))
            .collect();
        ok(json!({
            "run_id": r.id, "samples": items, "total": total, "page": page, "limit": limit,
            "total_pages": total.div_ceil(limit),
        }))
    })
}

async fn distributions(
    State(st): S,
    headers: HeaderMap,
    Path(id): Path<String>,
    Query(q): Query<Params>,
) -> Response {
    let step = match int_param(&q, "step") {
        Ok(s) => s,
        Err(r) => return r,
    };
    let kind = nonempty(q.get("type")).unwrap_or("rewards").to_string();
    with_run(&st, &headers, &id, |r, seed, now| {
        let ph = phase(r, &seed.timings, now);
        let steps = sim::sample_steps(r, &ph);
        let step = step.map(|s| s.max(0) as u32).or(steps.last().copied());
        match step {
            Some(s) if steps.contains(&s) => {
                ok(json!({"bins": sim::distribution(r, &kind, s), "step": s}))
            }
            Some(s) => ok(json!({"bins": [], "step": s})),
            None => ok(json!({"bins": [], "step": null})),
        }
    })
}

async fn usage(State(st): S, headers: HeaderMap, Path(id): Path<String>) -> Response {
    with_run(&st, &headers, &id, |r, seed, now| {
        ok(sim::usage(r, seed, now))
    })
}

// ---- volumes ------------------------------------------------------------------------------

fn volume_wire(v: &Volume, seed: &Seed, now: DateTime<Utc>) -> VolumeWire {
    let creator = seed.user(&v.user_id);
    VolumeWire {
        name: v.name.clone(),
        size: v.size.clone(),
        status: v.status(now).to_string(),
        cluster_id: v.cluster_id.clone(),
        cluster: v.cluster_name.clone(),
        pvc_name: v.pvc_name.clone(),
        created_by: v.user_id.clone(),
        created_by_name: creator.map(|u| u.name.clone()),
        created_by_email: creator.map(|u| u.email.clone()),
        created_at: iso(v.created_at),
    }
}

async fn list_volumes(State(st): S, headers: HeaderMap, Query(q): Query<Params>) -> Response {
    let user = match auth(&st, &headers) {
        Ok(u) => u,
        Err(r) => return r,
    };
    let team = nonempty(q.get("teamId"));
    let now = st.now();
    st.with_world(|w| {
        if let Err(r) = check_team(&w.seed, &user, team) {
            return r;
        }
        let vols: Vec<VolumeWire> = w
            .volumes
            .iter()
            .filter(|v| match team {
                Some(t) => v.team_id.as_deref() == Some(t),
                None => v.team_id.is_none() && v.user_id == user.id,
            })
            .map(|v| volume_wire(v, &w.seed, now))
            .collect();
        ok(json!({"volumes": vols}))
    })
}

fn valid_volume_name(n: &str) -> bool {
    !n.is_empty()
        && n.len() <= 63
        && n.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !n.starts_with('-')
        && !n.ends_with('-')
}

fn valid_size(s: &str) -> bool {
    let digits = s.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let unit = &s[digits.len()..];
    !digits.is_empty() && digits.chars().all(|c| c.is_ascii_digit()) && matches!(unit, "Gi" | "Ti")
}

async fn create_volume(State(st): S, headers: HeaderMap, body: Bytes) -> Response {
    let user = match auth(&st, &headers) {
        Ok(u) => u,
        Err(r) => return r,
    };
    let body = match parse_json_body(&body) {
        Ok(b) => b,
        Err(r) => return r,
    };
    let name = match body.get("name").and_then(Value::as_str) {
        Some(n) => n.to_string(),
        None => return validation(&["body", "name"], "Field required", "missing"),
    };
    if !valid_volume_name(&name) {
        return detail(
            StatusCode::BAD_REQUEST,
            format!(
                "Invalid volume name '{name}': use lowercase letters, digits and '-' (at most 63)"
            ),
        );
    }
    let size = body
        .get("size")
        .and_then(Value::as_str)
        .unwrap_or("5Ti")
        .to_string();
    if !valid_size(&size) {
        return detail(
            StatusCode::BAD_REQUEST,
            format!("Invalid size '{size}': use e.g. 500Gi or 5Ti"),
        );
    }
    let team = match opt_string(&body, "teamId") {
        Ok(t) => t,
        Err(r) => return r,
    };
    let now = st.now();
    st.mutate(|w| {
        if let Err(r) = check_team(&w.seed, &user, team.as_deref()) {
            return r;
        }
        if w.volume_in_account(&user.id, team.as_deref(), &name)
            .is_some()
        {
            return detail(
                StatusCode::CONFLICT,
                format!("Volume '{name}' already exists"),
            );
        }
        let ready = w.seed.timings.volume_ready_s;
        let v = new_volume(
            &w.seed,
            &name,
            &user,
            team.clone(),
            size.clone(),
            now,
            ready,
        );
        let resp = volume_wire(&v, &w.seed, now);
        w.volumes.push(v);
        (StatusCode::CREATED, axum::Json(resp)).into_response()
    })
}

/// §10 transfer route: credentials for the volume's S3-compatible endpoint (`crate::s3`).
async fn transfer(
    State(st): S,
    headers: HeaderMap,
    Path(name): Path<String>,
    body: Bytes,
) -> Response {
    let user = match auth(&st, &headers) {
        Ok(u) => u,
        Err(r) => return r,
    };
    let body = match parse_json_body(&body) {
        Ok(b) => b,
        Err(r) => return r,
    };
    let team = match opt_string(&body, "teamId") {
        Ok(t) => t,
        Err(r) => return r,
    };
    let volume = st.with_world(|w| {
        check_team(&w.seed, &user, team.as_deref())?;
        w.volume_in_account(&user.id, team.as_deref(), &name)
            .cloned()
            .ok_or_else(|| detail(StatusCode::NOT_FOUND, format!("Volume '{name}' not found")))
    });
    match volume {
        Ok(v) => crate::s3::issue_route(&st, &v, &body, &st.base_url),
        Err(r) => r,
    }
}

#[cfg(test)]
mod tests {
    //! Log answers through the cache against generating them afresh (the earlier
    //! `render_logs`, kept verbatim as `old_render_logs`): byte-identical while the clock moves,
    //! runs are stopped and restarted, and the same request repeats. Metrics answers written
    //! from typed records against the trees the earlier code built (`old_render_metrics`).

    use super::*;
    use crate::clock::{Clock, ClockMode};
    use crate::seed::SeedRun;

    fn old_render_logs(
        run: &Run,
        seed: &Seed,
        now: DateTime<Utc>,
        q: &Params,
        force_env: bool,
    ) -> Response {
        let ph = phase(run, &seed.timings, now);
        if !ph.has_started() {
            let what = match ph.status {
                "QUEUED" => "queued",
                "PENDING" => "pending",
                _ => "not started",
            };
            return detail(
                StatusCode::NOT_FOUND,
                format!("Run is {what}; logs are not available yet"),
            );
        }
        let query = match LogQuery::parse(run, now, q, force_env) {
            Ok(query) => query,
            Err(r) => return r,
        };
        let lines: Vec<String> = sim::logs(run, seed, now)
            .into_iter()
            .filter(|l| query.keeps(l))
            .map(|l| l.text)
            .collect();
        let skip = lines.len().saturating_sub(query.tail);
        ok(json!({"logs": lines[skip..].join("\n")}))
    }

    async fn bytes(r: Response) -> (StatusCode, String, Bytes) {
        let ct = r
            .headers()
            .get(header::CONTENT_TYPE)
            .map(|v| v.to_str().unwrap().to_string())
            .unwrap_or_default();
        (
            r.status(),
            ct,
            axum::body::to_bytes(r.into_body(), usize::MAX)
                .await
                .unwrap(),
        )
    }

    /// A sandbox with three of Alice's runs: a long SFT run, an RL run with online eval and a
    /// young RL run, on a manual clock.
    fn three_runs() -> AppState {
        let mut seed = Seed::default();
        let alice = seed.users[0].id.clone();
        let config = |name: &str, steps: u32, eval: bool| {
            let mut c = json!({"name": name, "max_steps": steps,
                "model": {"name": "PrimeIntellect/Qwen3-0.6B-Reverse-Text-SFT"},
                "orchestrator": {"batch_size": 8, "train": {"source": [
                    {"env": {"taskset": {"id": "reverse-text"}}},
                    {"env": {"taskset": {"id": "alphabet-sort"}}}]}},
                "trainer": {}, "inference": {}});
            if eval {
                c["eval"] = json!({"interval": 3});
            }
            c
        };
        let run = |id: &str, sft: bool, steps: u32, eval: bool, age_s: f64| SeedRun {
            id: Some(id.into()),
            user_id: alice.clone(),
            team_id: None,
            name: Some(id.into()),
            config: config(id, steps, eval),
            sft,
            gpu_type: None,
            volume: None,
            age_s,
            trace_bytes_total: None,
        };
        seed.runs = vec![
            run("clong", true, 1200, false, 100_000.0),
            run("crl", false, 300, true, 400.0),
            run("cyoung", false, 50, false, 3.0),
        ];
        let now = DateTime::parse_from_rfc3339("2026-01-01T00:00:00Z")
            .unwrap()
            .with_timezone(&Utc);
        let world = crate::builder::seeded_world(seed, now).unwrap();
        AppState::new(
            world,
            Clock::new(ClockMode::Manual, now),
            None,
            None,
            "http://sandbox".into(),
        )
    }

    #[tokio::test]
    async fn cached_log_answers_are_those_generated_afresh() {
        let st = three_runs();
        let queries: Vec<Vec<(&str, &str)>> = vec![
            vec![],
            vec![("tail_lines", "5000")],
            vec![("tail_lines", "7")],
            vec![("tail_lines", "0")],
            vec![("tail_lines", "x")],
            vec![("component", "orchestrator"), ("tail_lines", "5000")],
            vec![("component", "env-server"), ("env_name", "alphabet-sort")],
            vec![("component", "nope")],
            vec![("level", "warning")],
            vec![("search", "STEP 1"), ("tail_lines", "40")],
            vec![("search", "step=1[0-9]+ "), ("regex", "true")],
            vec![("search", "("), ("regex", "true")],
            vec![("since_seconds", "60")],
            vec![("since_seconds", "86400"), ("tail_lines", "5000")],
        ];
        let mut seen = 0;
        for round in 0..5 {
            for id in ["clong", "crl", "cyoung"] {
                for q in &queries {
                    let q: Params = q
                        .iter()
                        .map(|(k, v)| (k.to_string(), v.to_string()))
                        .collect();
                    for force_env in [false, true] {
                        // Twice: the second answer comes from the kept body.
                        let now = st.now();
                        let (first, again, old) = st.with_world(|w| {
                            let r = w.run(id).unwrap();
                            (
                                render_logs(&st, r, &w.seed, now, &q, force_env),
                                render_logs(&st, r, &w.seed, now, &q, force_env),
                                old_render_logs(r, &w.seed, now, &q, force_env),
                            )
                        });
                        let old = bytes(old).await;
                        for new in [first, again] {
                            let new = bytes(new).await;
                            assert_eq!(new, old, "round {round} {id} {q:?} env {force_env}");
                        }
                        seen += usize::from(old.0 == StatusCode::OK && old.2.len() > 1000);
                    }
                }
            }
            match round {
                // The clock moves: active runs log more.
                0 => st.clock.advance(std::time::Duration::from_secs(45)),
                // A run is stopped, then restarted.
                1 => st.mutate(|w| w.run_mut("crl").unwrap().stopped_at = Some(st.now())),
                // A change the phase does not show (the start-up line names the GPU).
                2 => st.mutate(|w| w.run_mut("clong").unwrap().gpu_type = Some("A100_80GB".into())),
                _ => st.mutate(|w| {
                    let r = w.run_mut("crl").unwrap();
                    r.stopped_at = None;
                    r.restarts.push(st.now());
                }),
            }
        }
        assert!(seen > 25, "{seen}");
    }

    /// A step's record as the sandbox built it before [`sim::MetricsRow`]: a tree.
    fn old_metrics_at(run: &Run, k: u32, max: u32) -> Value {
        let progress = f64::from(k) / f64::from(max.max(1));
        let noise = sim::unit(&run.id, "metric", u64::from(k)) - 0.5;
        let lr = sim::opt_f64(sim::cfg(&run.config, &["trainer", "optim", "lr"]))
            .or_else(|| sim::opt_f64(sim::cfg(&run.config, &["optim", "lr"])))
            .unwrap_or(1e-5);
        let round4 = |x: f64| (x * 10_000.0).round() / 10_000.0;
        let mut m = json!({
            "step": k,
            "loss": round4(2.2 * (-1.8 * progress).exp() + 0.05 * noise + 0.1),
            "entropy": round4(1.1 - 0.5 * progress + 0.03 * noise),
            "grad_norm": round4(0.8 + 0.4 * sim::unit(&run.id, "grad", u64::from(k))),
            "learning_rate": lr,
            "tokens_per_second": (4000.0 + 800.0 * sim::unit(&run.id, "tps", u64::from(k))).round(),
            "rollouts": 16,
        });
        if !run.sft
            && let Some(o) = m.as_object_mut()
        {
            o.insert(
                "reward/mean".into(),
                json!(round4(
                    (0.15 + 0.7 * progress + 0.08 * noise).clamp(0.0, 1.0)
                )),
            );
            o.insert("reward/std".into(), json!(round4(0.2 + 0.05 * noise)));
            o.insert(
                "seq_len/mean".into(),
                json!((300.0 + 200.0 * progress).round()),
            );
        }
        m
    }

    /// The metrics answer as the sandbox wrote it before: a tree per record, the timestamp
    /// inserted last, written with the `%Y-%m-%dT%H:%M:%S%.3fZ` format string.
    fn old_render_metrics(
        r: &Run,
        seed: &Seed,
        now: DateTime<Utc>,
        (min, max, limit): (Option<i64>, Option<i64>, Option<i64>),
    ) -> Response {
        let ph = phase(r, &seed.timings, now);
        let total = sim::max_steps(r, &seed.timings);
        let lo = min.unwrap_or(1).max(1);
        let hi = max.unwrap_or(i64::from(ph.steps)).min(i64::from(ph.steps));
        let mut out = Vec::new();
        let mut k = lo;
        while k <= hi && limit.is_none_or(|l| (out.len() as i64) < l) {
            let mut m = old_metrics_at(r, k as u32, total);
            if let Some(o) = m.as_object_mut() {
                let at = sim::step_time(&ph, &seed.timings, k as u32);
                o.insert(
                    "timestamp".into(),
                    json!(at.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string()),
                );
            }
            out.push(m);
            k += 1;
        }
        ok(json!({"metrics": out}))
    }

    #[tokio::test]
    async fn metrics_answers_are_those_built_as_trees() {
        let st = three_runs();
        // A learning rate from the config, in both places it is read from.
        st.mutate(|w| {
            w.run_mut("crl").unwrap().config["trainer"] = json!({"optim": {"lr": 3e-6}});
            w.run_mut("cyoung").unwrap().config["optim"] = json!({"lr": 2});
        });
        let ranges = [
            (None, None, None),
            (Some(5), Some(40), None),
            (Some(-3), None, Some(7)),
            (None, Some(2), Some(0)),
            (Some(100), Some(50), None),
        ];
        let mut records = 0;
        for round in 0..4 {
            for id in ["clong", "crl", "cyoung"] {
                for range in ranges {
                    let now = st.now();
                    // Twice: the second answer is always the kept one (the first is kept or,
                    // when nothing it is made from changed, was kept before).
                    let (first, kept, again, old) = st.with_world(|w| {
                        let r = w.run(id).unwrap();
                        let first = render_metrics(&st, r, &w.seed, now, range);
                        let ph = phase(r, &w.seed.timings, now);
                        let kept = st.metrics.body(r, &w.seed.timings, &ph, range).is_some();
                        (
                            first,
                            kept,
                            render_metrics(&st, r, &w.seed, now, range),
                            old_render_metrics(r, &w.seed, now, range),
                        )
                    });
                    assert!(kept, "round {round} {id} {range:?}: not kept");
                    let old = bytes(old).await;
                    for new in [first, again] {
                        assert_eq!(bytes(new).await, old, "round {round} {id} {range:?}");
                    }
                    records += old.2.windows(7).filter(|w| w == b"\"step\":").count();
                }
            }
            match round {
                // The clock moves: active runs have more steps.
                0 => {}
                // A run is stopped, then restarted (the clock moves after each); a finished
                // run's config changes, which its phase does not show.
                1 => st.mutate(|w| w.run_mut("crl").unwrap().stopped_at = Some(st.now())),
                _ => st.mutate(|w| {
                    let r = w.run_mut("crl").unwrap();
                    r.stopped_at = None;
                    r.restarts.push(st.now());
                    w.run_mut("clong").unwrap().config["optim"] = json!({"lr": round});
                }),
            }
            st.clock.advance(std::time::Duration::from_secs(45));
        }
        assert!(records > 1000, "{records}");
        // Past 16 answers, the least recently used is dropped; every answer stays right.
        let now = st.now();
        st.with_world(|w| {
            let r = w.run("clong").unwrap();
            let ph = phase(r, &w.seed.timings, now);
            let one = |k: i64| (Some(k), Some(k), None);
            for k in 0..17 {
                render_metrics(&st, r, &w.seed, now, one(k));
                if k == 8 {
                    // Used again: now the most recent.
                    assert!(st.metrics.body(r, &w.seed.timings, &ph, one(0)).is_some());
                }
            }
            let kept = |k| st.metrics.body(r, &w.seed.timings, &ph, one(k)).is_some();
            assert!(
                kept(0) && kept(16) && !kept(1),
                "least recently used dropped"
            );
        });
    }
}
