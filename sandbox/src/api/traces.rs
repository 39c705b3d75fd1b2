//! The Prime Traces service routes of §9 (reads only), on the same port as the platform API.

// Helpers return a ready-made error `Response` as their `Err`; its size does not matter here.
#![allow(clippy::result_large_err)]

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::extract::{Path, Query, State};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use bytes::Bytes;
use chrono::{DateTime, Utc};
use http::{HeaderMap, HeaderValue, StatusCode, header};

use crate::clock::iso_secs;
use crate::http::{ok, trace_error};
use crate::seed::SeedUser;
use crate::state::AppState;
use crate::tracegen::{self, TraceRec};
use crate::wire::{
    CursorPage, EpisodeAggregate, EpisodeError, EpisodeSummary, RunStep, RunStepList,
    TraceRunSummary,
};

type S = State<Arc<AppState>>;
type Pairs = Vec<(String, String)>;

pub(super) fn routes() -> Router<Arc<AppState>> {
    Router::new()
        .route("/api/v1/traces", get(list_traces))
        .route("/api/v1/traces/{id}", get(get_trace))
        .route("/api/v1/episodes", get(list_episodes))
        .route("/api/v1/episodes/{id}", get(get_episode))
        .route("/api/v1/episodes/{id}/traces", get(episode_traces))
        .route("/api/v1/runs", get(list_runs))
        .route("/api/v1/runs/{id}", get(get_run))
        .route("/api/v1/runs/{id}/steps", get(run_steps))
}

/// Every trace visible to the caller in the account chosen by `X-Prime-Team-ID`.
fn visible(st: &AppState, headers: &HeaderMap) -> Result<(SeedUser, Vec<TraceRec>), Response> {
    let key = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim);
    let team = headers
        .get("x-prime-team-id")
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(str::to_string);
    let now = st.now();
    st.with_world(|w| {
        let Some(user) = key.and_then(|k| w.seed.user_by_key(k)).cloned() else {
            return Err(trace_error(
                StatusCode::UNAUTHORIZED,
                "unauthenticated",
                "Invalid or missing API key",
            ));
        };
        if let Some(t) = &team
            && !w.seed.is_member(&user.id, t)
        {
            return Err(trace_error(
                StatusCode::FORBIDDEN,
                "forbidden",
                format!("Not a member of team {t} (scope traces:read)"),
            ));
        }
        let traces = w
            .runs_in_account(&user.id, team.as_deref())
            .flat_map(|r| tracegen::traces_for(r, &w.seed, now))
            .collect();
        Ok((user, traces))
    })
}

fn get1<'a>(q: &'a Pairs, k: &str) -> Option<&'a str> {
    q.iter()
        .rev()
        .find(|(key, _)| key == k)
        .map(|(_, v)| v.as_str())
        .filter(|v| !v.is_empty())
}

fn get_all<'a>(q: &'a Pairs, k: &str) -> Vec<&'a str> {
    q.iter()
        .filter(|(key, _)| key == k)
        .map(|(_, v)| v.as_str())
        .collect()
}

fn bad_filter(msg: impl Into<String>) -> Response {
    trace_error(StatusCode::BAD_REQUEST, "invalid_filter", msg)
}

fn parse_time(q: &Pairs, k: &str) -> Result<Option<DateTime<Utc>>, Response> {
    match get1(q, k) {
        None => Ok(None),
        Some(v) => DateTime::parse_from_rfc3339(v)
            .map(|t| Some(t.with_timezone(&Utc)))
            .or_else(|_| {
                chrono::NaiveDateTime::parse_from_str(v, "%Y-%m-%dT%H:%M:%S")
                    .map(|n| Some(n.and_utc()))
            })
            .map_err(|_| bad_filter(format!("{k} must be an ISO-8601 timestamp"))),
    }
}

fn parse_f64(q: &Pairs, k: &str) -> Result<Option<f64>, Response> {
    get1(q, k)
        .map(|v| {
            v.parse::<f64>()
                .map_err(|_| bad_filter(format!("{k} must be a number")))
        })
        .transpose()
}

fn parse_bool(q: &Pairs, k: &str) -> Result<Option<bool>, Response> {
    match get1(q, k) {
        None => Ok(None),
        Some("true") => Ok(Some(true)),
        Some("false") => Ok(Some(false)),
        Some(_) => Err(bad_filter(format!("{k} must be true or false"))),
    }
}

/// Limit (default 20, at most 100) and offset from the opaque cursor.
fn paging(q: &Pairs) -> Result<(usize, usize), Response> {
    let limit = match get1(q, "limit") {
        None => 20,
        Some(v) => match v.parse::<usize>() {
            Ok(n) if (1..=100).contains(&n) => n,
            _ => return Err(bad_filter("limit must be between 1 and 100")),
        },
    };
    let offset = match get1(q, "cursor") {
        None => 0,
        Some(c) => match c.strip_prefix("o").and_then(|n| n.parse::<usize>().ok()) {
            Some(n) => n,
            None => {
                return Err(trace_error(
                    StatusCode::BAD_REQUEST,
                    "invalid_cursor",
                    "The cursor is not valid",
                ));
            }
        },
    };
    Ok((limit, offset))
}

fn page<T: Clone + serde::Serialize>(items: Vec<T>, limit: usize, offset: usize) -> Response {
    let end = (offset + limit).min(items.len());
    let slice = items
        .get(offset.min(items.len())..end)
        .unwrap_or(&[])
        .to_vec();
    let next = (end < items.len()).then(|| format!("o{end}"));
    ok(CursorPage {
        items: slice,
        next_cursor: next,
    })
}

/// Filters shared by traces and episodes listings.
struct Common {
    run_id: Option<String>,
    upload_ids: Vec<String>,
    environment_id: Option<String>,
    outcome: Option<String>,
    has_error: Option<bool>,
    after: Option<DateTime<Utc>>,
    before: Option<DateTime<Utc>>,
    context: Vec<(String, String)>,
}

fn common(q: &Pairs) -> Result<Common, Response> {
    Ok(Common {
        run_id: get1(q, "run_id").map(str::to_string),
        upload_ids: get_all(q, "upload_id")
            .into_iter()
            .map(str::to_string)
            .collect(),
        environment_id: get1(q, "environment_id").map(str::to_string),
        outcome: get1(q, "outcome").map(str::to_string),
        has_error: parse_bool(q, "has_error")?,
        after: parse_time(q, "created_after")?,
        before: parse_time(q, "created_before")?,
        context: q
            .iter()
            .filter_map(|(k, v)| {
                k.strip_prefix("context.")
                    .map(|k| (k.to_string(), v.clone()))
            })
            .collect(),
    })
}

impl Common {
    fn keep(&self, t: &TraceRec) -> bool {
        let s = &t.summary;
        self.run_id
            .as_deref()
            .is_none_or(|r| s.run_id.as_deref() == Some(r))
            && (self.upload_ids.is_empty() || self.upload_ids.contains(&s.upload_id))
            && self
                .environment_id
                .as_deref()
                .is_none_or(|e| s.environment_id.as_deref() == Some(e))
            && self
                .outcome
                .as_deref()
                .is_none_or(|o| s.score.outcome.as_deref() == Some(o))
            && self.has_error.is_none_or(|h| s.execution.has_error == h)
            && self.after.is_none_or(|a| t.created >= a)
            && self.before.is_none_or(|b| t.created < b)
            && self
                .context
                .iter()
                .all(|(k, v)| s.context.get(k) == Some(v))
    }
}

fn trace_filters(q: &Pairs) -> Result<impl Fn(&TraceRec) -> bool, Response> {
    let c = common(q)?;
    let task = get1(q, "task_id").map(str::to_string);
    let model = get1(q, "model_id").map(str::to_string);
    let rmin = parse_f64(q, "reward_min")?;
    let rmax = parse_f64(q, "reward_max")?;
    Ok(move |t: &TraceRec| {
        let s = &t.summary;
        let reward = s.score.reward;
        c.keep(t)
            && task
                .as_deref()
                .is_none_or(|x| s.task_id.as_deref() == Some(x))
            && model
                .as_deref()
                .is_none_or(|x| s.model.id.as_deref() == Some(x))
            && rmin.is_none_or(|m| reward.is_some_and(|r| r >= m))
            && rmax.is_none_or(|m| reward.is_some_and(|r| r <= m))
    })
}

fn newest_first(traces: &mut [TraceRec]) {
    traces.sort_by(|a, b| {
        b.created
            .cmp(&a.created)
            .then(b.summary.trace_id.cmp(&a.summary.trace_id))
    });
}

async fn list_traces(State(st): S, headers: HeaderMap, Query(q): Query<Pairs>) -> Response {
    let (_, mut traces) = match visible(&st, &headers) {
        Ok(v) => v,
        Err(r) => return r,
    };
    let (limit, offset) = match paging(&q) {
        Ok(p) => p,
        Err(r) => return r,
    };
    let keep = match trace_filters(&q) {
        Ok(f) => f,
        Err(r) => return r,
    };
    traces.retain(|t| keep(t));
    newest_first(&mut traces);
    match get1(&q, "sort") {
        None | Some("created_at") => {}
        Some("reward") => traces.sort_by(|a, b| {
            b.summary
                .score
                .reward
                .unwrap_or(f64::MIN)
                .total_cmp(&a.summary.score.reward.unwrap_or(f64::MIN))
        }),
        Some("duration_ms") => traces.sort_by_key(|t| std::cmp::Reverse(t.summary.duration_ms)),
        Some(other) => return bad_filter(format!("Unknown sort key '{other}'")),
    }
    page(
        traces.into_iter().map(|t| t.summary).collect(),
        limit,
        offset,
    )
}

async fn get_trace(
    State(st): S,
    headers: HeaderMap,
    Path(id): Path<String>,
    Query(q): Query<Pairs>,
) -> Response {
    let (_, traces) = match visible(&st, &headers) {
        Ok(v) => v,
        Err(r) => return r,
    };
    let Some(rec) = traces.into_iter().find(|t| t.summary.trace_id == id) else {
        return trace_error(
            StatusCode::NOT_FOUND,
            "trace_not_found",
            format!("Trace {id} not found"),
        );
    };
    if get1(&q, "raw") != Some("true") {
        return ok(rec.summary);
    }
    raw_response(&rec)
}

static FILLER: [u8; 65536] = [b'x'; 65536];

/// Streams the raw document; padded documents are generated chunk by chunk.
fn raw_response(rec: &TraceRec) -> Response {
    let (head, filler, tail) = tracegen::raw_parts(rec);
    let total = head.len() as u64 + filler + tail.len() as u64;
    let chunks = futures::stream::unfold(
        (Some(head), filler, Some(tail)),
        |(head, left, tail)| async move {
            if let Some(h) = head {
                return Some((
                    Ok::<Bytes, std::io::Error>(Bytes::from(h)),
                    (None, left, tail),
                ));
            }
            if left > 0 {
                let n = left.min(FILLER.len() as u64) as usize;
                return Some((
                    Ok(Bytes::from_static(&FILLER[..n])),
                    (None, left - n as u64, tail),
                ));
            }
            tail.map(|t| (Ok(Bytes::from(t)), (None, 0, None)))
        },
    );
    let mut resp = Body::from_stream(chunks).into_response();
    let h = resp.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    if let Ok(v) = HeaderValue::from_str(&total.to_string()) {
        h.insert(header::CONTENT_LENGTH, v);
    }
    resp
}

// ---- episodes -----------------------------------------------------------------------------

fn episodes_of(traces: &[TraceRec]) -> Vec<(String, Vec<&TraceRec>)> {
    let mut map: BTreeMap<String, Vec<&TraceRec>> = BTreeMap::new();
    for t in traces {
        if let Some(e) = &t.summary.episode_id {
            map.entry(e.clone()).or_default().push(t);
        }
    }
    map.into_iter().collect()
}

fn episode_summary(id: &str, members: &[&TraceRec], detail: bool) -> EpisodeSummary {
    let first = members[0];
    let any_error = members.iter().any(|t| t.summary.execution.has_error);
    let best = members
        .iter()
        .filter_map(|t| t.summary.score.reward)
        .fold(None::<f64>, |acc, r| Some(acc.map_or(r, |a| a.max(r))));
    let mut agents: Vec<String> = members
        .iter()
        .filter_map(|t| t.summary.agent_name.clone())
        .collect();
    agents.dedup();
    EpisodeSummary {
        episode_id: id.to_string(),
        upload_id: first.summary.upload_id.clone(),
        schema_version: 1,
        created_at: first.summary.created_at.clone(),
        ingested_at: first.summary.ingested_at.clone(),
        run_id: first.summary.run_id.clone(),
        environment_id: first.summary.environment_id.clone(),
        outcome: Some(
            if best.unwrap_or(0.0) >= 0.5 {
                "success"
            } else {
                "failure"
            }
            .into(),
        ),
        has_error: any_error,
        error: EpisodeError {
            kind: any_error.then(|| "RolloutTimeout".to_string()),
            message: any_error.then(|| "A rollout timed out in the sandbox".to_string()),
        },
        traces: detail.then(|| EpisodeAggregate {
            trace_count: members.len() as u32,
            total_tokens: members.iter().map(|t| t.summary.total_tokens).sum(),
            total_duration_ms: members.iter().map(|t| t.summary.duration_ms).sum(),
            any_trace_error: any_error,
            agent_names: agents,
        }),
    }
}

async fn list_episodes(State(st): S, headers: HeaderMap, Query(q): Query<Pairs>) -> Response {
    let (_, traces) = match visible(&st, &headers) {
        Ok(v) => v,
        Err(r) => return r,
    };
    let (limit, offset) = match paging(&q) {
        Ok(p) => p,
        Err(r) => return r,
    };
    let c = match common(&q) {
        Ok(c) => c,
        Err(r) => return r,
    };
    let step = match get1(&q, "run_step").map(|s| s.parse::<u32>()) {
        None => None,
        Some(Ok(s)) => Some(s),
        Some(Err(_)) => return bad_filter("run_step must be a non-negative integer"),
    };
    let mut eps: Vec<(DateTime<Utc>, EpisodeSummary)> = episodes_of(&traces)
        .into_iter()
        .filter(|(_, m)| step.is_none_or(|s| m.iter().any(|t| t.step == s)))
        .filter(|(_, m)| {
            // Episode-level filters look at the episode's first trace; has_error/outcome at the episode.
            let first = m[0];
            let mut probe = first.clone();
            probe.summary.execution.has_error = m.iter().any(|t| t.summary.execution.has_error);
            probe.summary.score.outcome = episode_summary("", m, false).outcome;
            c.keep(&probe)
        })
        .map(|(id, m)| (m[0].created, episode_summary(&id, &m, false)))
        .collect();
    eps.sort_by(|a, b| b.0.cmp(&a.0).then(b.1.episode_id.cmp(&a.1.episode_id)));
    page(eps.into_iter().map(|(_, e)| e).collect(), limit, offset)
}

async fn get_episode(
    State(st): S,
    headers: HeaderMap,
    Path(id): Path<String>,
    Query(q): Query<Pairs>,
) -> Response {
    let (_, traces) = match visible(&st, &headers) {
        Ok(v) => v,
        Err(r) => return r,
    };
    let members: Vec<&TraceRec> = traces
        .iter()
        .filter(|t| t.summary.episode_id.as_deref() == Some(&id))
        .collect();
    if members.is_empty() {
        return trace_error(
            StatusCode::NOT_FOUND,
            "episode_not_found",
            format!("Episode {id} not found"),
        );
    }
    if get1(&q, "raw") == Some("true") {
        let doc = tracegen::episode_document(&id, &members);
        let mut resp = Body::from(doc.to_string()).into_response();
        resp.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        return resp;
    }
    ok(episode_summary(&id, &members, true))
}

async fn episode_traces(
    State(st): S,
    headers: HeaderMap,
    Path(id): Path<String>,
    Query(q): Query<Pairs>,
) -> Response {
    let (_, mut traces) = match visible(&st, &headers) {
        Ok(v) => v,
        Err(r) => return r,
    };
    if !traces
        .iter()
        .any(|t| t.summary.episode_id.as_deref() == Some(&id))
    {
        return trace_error(
            StatusCode::NOT_FOUND,
            "episode_not_found",
            format!("Episode {id} not found"),
        );
    }
    let (limit, offset) = match paging(&q) {
        Ok(p) => p,
        Err(r) => return r,
    };
    let keep = match trace_filters(&q) {
        Ok(f) => f,
        Err(r) => return r,
    };
    traces.retain(|t| t.summary.episode_id.as_deref() == Some(&id) && keep(t));
    newest_first(&mut traces);
    page(
        traces.into_iter().map(|t| t.summary).collect(),
        limit,
        offset,
    )
}

// ---- runs ---------------------------------------------------------------------------------

fn run_summaries(traces: &[TraceRec]) -> Vec<(DateTime<Utc>, TraceRunSummary, Vec<&TraceRec>)> {
    let mut map: BTreeMap<String, Vec<&TraceRec>> = BTreeMap::new();
    for t in traces {
        if let Some(r) = &t.summary.run_id {
            map.entry(r.clone()).or_default().push(t);
        }
    }
    map.into_iter()
        .map(|(run_id, mut ts)| {
            ts.sort_by_key(|t| t.created);
            let first = ts[0];
            let last = ts[ts.len() - 1];
            let rewards: Vec<f64> = ts.iter().filter_map(|t| t.summary.score.reward).collect();
            let mut steps: Vec<u32> = ts.iter().map(|t| t.step).collect();
            steps.dedup();
            let mut episodes: Vec<&str> = ts
                .iter()
                .filter_map(|t| t.summary.episode_id.as_deref())
                .collect();
            episodes.sort_unstable();
            episodes.dedup();
            let mut envs: Vec<String> = ts
                .iter()
                .filter_map(|t| t.summary.environment_id.clone())
                .collect();
            envs.sort();
            envs.dedup();
            let mut models: Vec<String> = ts
                .iter()
                .filter_map(|t| t.summary.model.id.clone())
                .collect();
            models.sort();
            models.dedup();
            let summary = TraceRunSummary {
                run_id,
                first_trace_created_at: iso_secs(first.created),
                last_trace_created_at: iso_secs(last.created),
                last_trace_ingested_at: last.summary.ingested_at.clone(),
                trace_count: ts.len() as u64,
                episode_count: episodes.len() as u64,
                avg_reward: (!rewards.is_empty()).then(|| {
                    (rewards.iter().sum::<f64>() / rewards.len() as f64 * 10_000.0).round()
                        / 10_000.0
                }),
                step_min: steps.first().copied(),
                step_max: steps.last().copied(),
                step_count: steps.len() as u32,
                has_error: ts.iter().any(|t| t.summary.execution.has_error),
                first_user_id: Some(first.summary.user_id.clone()),
                environment_ids: envs,
                model_ids: models,
                context: last.summary.context.clone(),
            };
            (last.created, summary, ts)
        })
        .collect()
}

async fn list_runs(State(st): S, headers: HeaderMap, Query(q): Query<Pairs>) -> Response {
    let (_, mut traces) = match visible(&st, &headers) {
        Ok(v) => v,
        Err(r) => return r,
    };
    let (limit, offset) = match paging(&q) {
        Ok(p) => p,
        Err(r) => return r,
    };
    let (after, before) = match (
        parse_time(&q, "created_after"),
        parse_time(&q, "created_before"),
    ) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(r), _) | (_, Err(r)) => return r,
    };
    let types = get_all(&q, "run_type");
    if let Some(bad) = types
        .iter()
        .find(|t| !matches!(**t, "eval" | "train" | "unknown"))
    {
        return bad_filter(format!("Unknown run_type '{bad}'"));
    }
    traces.retain(|t| after.is_none_or(|a| t.created >= a) && before.is_none_or(|b| t.created < b));
    let mut runs: Vec<(DateTime<Utc>, TraceRunSummary)> = run_summaries(&traces)
        .into_iter()
        .filter(|(_, s, _)| {
            let ty = s.context.get("run_type").map_or("unknown", String::as_str);
            types.is_empty() || types.contains(&ty)
        })
        .map(|(t, s, _)| (t, s))
        .collect();
    runs.sort_by(|a, b| b.0.cmp(&a.0).then(b.1.run_id.cmp(&a.1.run_id)));
    page(runs.into_iter().map(|(_, s)| s).collect(), limit, offset)
}

fn find_run(traces: &[TraceRec], id: &str) -> Option<(TraceRunSummary, Vec<RunStep>)> {
    let (_, summary, ts) = run_summaries(traces)
        .into_iter()
        .find(|(_, s, _)| s.run_id == id)?;
    let mut steps: BTreeMap<u32, Vec<&TraceRec>> = BTreeMap::new();
    for t in ts {
        steps.entry(t.step).or_default().push(t);
    }
    let items = steps
        .into_iter()
        .map(|(step, ts)| {
            let rewards: Vec<f64> = ts.iter().filter_map(|t| t.summary.score.reward).collect();
            let mut eps: Vec<u32> = ts.iter().map(|t| t.episode_index).collect();
            eps.sort_unstable();
            eps.dedup();
            RunStep {
                step,
                trace_count: ts.len() as u64,
                episode_count: eps.len() as u64,
                avg_reward: (!rewards.is_empty()).then(|| {
                    (rewards.iter().sum::<f64>() / rewards.len() as f64 * 10_000.0).round()
                        / 10_000.0
                }),
            }
        })
        .collect();
    Some((summary, items))
}

async fn get_run(State(st): S, headers: HeaderMap, Path(id): Path<String>) -> Response {
    let (_, traces) = match visible(&st, &headers) {
        Ok(v) => v,
        Err(r) => return r,
    };
    match find_run(&traces, &id) {
        Some((s, _)) => ok(s),
        None => trace_error(
            StatusCode::NOT_FOUND,
            "run_not_found",
            format!("Run {id} not found"),
        ),
    }
}

async fn run_steps(State(st): S, headers: HeaderMap, Path(id): Path<String>) -> Response {
    let (_, traces) = match visible(&st, &headers) {
        Ok(v) => v,
        Err(r) => return r,
    };
    match find_run(&traces, &id) {
        Some((s, items)) => ok(RunStepList {
            step_min: s.step_min,
            step_max: s.step_max,
            step_count: s.step_count,
            items,
        }),
        None => trace_error(
            StatusCode::NOT_FOUND,
            "run_not_found",
            format!("Run {id} not found"),
        ),
    }
}
