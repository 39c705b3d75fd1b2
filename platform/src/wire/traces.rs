//! Prime Traces wire types (snake_case, extra fields allowed, §9): cursor pages, trace,
//! episode and run summaries, run steps.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::null_default;

/// A cursor page: `{"items": [...], "next_cursor": str|null}`.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(bound(deserialize = "T: Deserialize<'de>", serialize = "T: Serialize"))]
pub struct CursorPage<T> {
    /// Items of this page.
    #[serde(default = "Vec::new", deserialize_with = "null_default")]
    pub items: Vec<T>,
    /// Cursor of the next page; `None` at the end.
    #[serde(default)]
    pub next_cursor: Option<String>,
}

/// `model` of a trace.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
pub struct TraceModel {
    /// Provider.
    #[serde(default)]
    pub provider: Option<String>,
    /// Model id.
    #[serde(default)]
    pub id: Option<String>,
}

/// `score` of a trace.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
pub struct TraceScore {
    /// Reward.
    #[serde(default)]
    pub reward: Option<f64>,
    /// Outcome label.
    #[serde(default)]
    pub outcome: Option<String>,
}

/// `execution` of a trace.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
pub struct TraceExecution {
    /// Whether the trace recorded an error.
    #[serde(default)]
    pub has_error: bool,
    /// Whether it was truncated.
    #[serde(default)]
    pub is_truncated: bool,
}

/// A trace summary (`GET /traces`, `/traces/{id}`, `/episodes/{id}/traces`).
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
pub struct TraceSummary {
    /// Trace id.
    pub trace_id: String,
    /// Upload id.
    #[serde(default)]
    pub upload_id: Option<String>,
    /// Episode id.
    #[serde(default)]
    pub episode_id: Option<String>,
    /// Creation time, as sent.
    #[serde(default)]
    pub created_at: Option<String>,
    /// Ingestion time, as sent.
    #[serde(default)]
    pub ingested_at: Option<String>,
    /// Run id (expected to equal the platform run id for hosted training; inferred).
    #[serde(default)]
    pub run_id: Option<String>,
    /// Environment id.
    #[serde(default)]
    pub environment_id: Option<String>,
    /// Model.
    #[serde(default, deserialize_with = "null_default")]
    pub model: TraceModel,
    /// Task id.
    #[serde(default)]
    pub task_id: Option<String>,
    /// Agent name.
    #[serde(default)]
    pub agent_name: Option<String>,
    /// Score.
    #[serde(default, deserialize_with = "null_default")]
    pub score: TraceScore,
    /// Execution flags.
    #[serde(default, deserialize_with = "null_default")]
    pub execution: TraceExecution,
    /// Duration in milliseconds.
    #[serde(default)]
    pub duration_ms: Option<f64>,
    /// Total tokens.
    #[serde(default)]
    pub total_tokens: Option<u64>,
    /// Size of the raw trace in bytes.
    #[serde(default)]
    pub size_bytes: Option<u64>,
    /// Free-form context (`run_type`, `step`, …).
    #[serde(default, deserialize_with = "null_default")]
    pub context: Map<String, Value>,
    /// Uploading user.
    #[serde(default)]
    pub user_id: Option<String>,
    /// Other fields.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `error` of an episode.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
pub struct EpisodeError {
    /// Error type.
    #[serde(default, rename = "type")]
    pub kind: Option<String>,
    /// Message.
    #[serde(default)]
    pub message: Option<String>,
}

/// `traces` block of an episode detail.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
pub struct EpisodeTraceStats {
    /// Number of traces.
    #[serde(default)]
    pub trace_count: Option<u64>,
    /// Total tokens.
    #[serde(default)]
    pub total_tokens: Option<u64>,
    /// Total duration (ms).
    #[serde(default)]
    pub total_duration_ms: Option<f64>,
    /// Whether any trace errored.
    #[serde(default)]
    pub any_trace_error: Option<bool>,
    /// Agent names.
    #[serde(default, deserialize_with = "null_default")]
    pub agent_names: Vec<String>,
}

/// An episode summary (`GET /episodes`) or detail (`GET /episodes/{id}`, which adds `traces`).
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
pub struct Episode {
    /// Episode id.
    pub episode_id: String,
    /// Upload id.
    #[serde(default)]
    pub upload_id: Option<String>,
    /// Schema version.
    #[serde(default)]
    pub schema_version: Option<Value>,
    /// Creation time, as sent.
    #[serde(default)]
    pub created_at: Option<String>,
    /// Ingestion time, as sent.
    #[serde(default)]
    pub ingested_at: Option<String>,
    /// Run id.
    #[serde(default)]
    pub run_id: Option<String>,
    /// Environment id.
    #[serde(default)]
    pub environment_id: Option<String>,
    /// Outcome.
    #[serde(default)]
    pub outcome: Option<String>,
    /// Whether the episode errored.
    #[serde(default)]
    pub has_error: bool,
    /// Error.
    #[serde(default)]
    pub error: Option<EpisodeError>,
    /// Trace statistics (detail only).
    #[serde(default)]
    pub traces: Option<EpisodeTraceStats>,
    /// Other fields.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A traces-service run summary (`GET /runs`, `/runs/{id}`).
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
pub struct TraceRunSummary {
    /// Run id.
    pub run_id: String,
    /// First trace time.
    #[serde(default)]
    pub first_trace_created_at: Option<String>,
    /// Last trace time.
    #[serde(default)]
    pub last_trace_created_at: Option<String>,
    /// Last ingestion time.
    #[serde(default)]
    pub last_trace_ingested_at: Option<String>,
    /// Traces.
    #[serde(default)]
    pub trace_count: u64,
    /// Episodes.
    #[serde(default)]
    pub episode_count: u64,
    /// Average reward.
    #[serde(default)]
    pub avg_reward: Option<f64>,
    /// First step.
    #[serde(default)]
    pub step_min: Option<i64>,
    /// Last step.
    #[serde(default)]
    pub step_max: Option<i64>,
    /// Number of steps (`GET /runs/{id}/steps` is worth calling only when > 0).
    #[serde(default)]
    pub step_count: u64,
    /// Whether any trace errored.
    #[serde(default)]
    pub has_error: bool,
    /// First uploading user.
    #[serde(default)]
    pub first_user_id: Option<String>,
    /// Environments.
    #[serde(default, deserialize_with = "null_default")]
    pub environment_ids: Vec<String>,
    /// Models.
    #[serde(default, deserialize_with = "null_default")]
    pub model_ids: Vec<String>,
    /// Context of the newest trace (`run_type`, …).
    #[serde(default, deserialize_with = "null_default")]
    pub context: Map<String, Value>,
    /// Other fields.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `GET /runs/{id}/steps`.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
pub struct RunStepList {
    /// First step.
    #[serde(default)]
    pub step_min: Option<i64>,
    /// Last step.
    #[serde(default)]
    pub step_max: Option<i64>,
    /// Number of steps.
    #[serde(default)]
    pub step_count: Option<u64>,
    /// Per-step counters.
    #[serde(default, deserialize_with = "null_default")]
    pub items: Vec<RunStep>,
}

/// Counters of one training step.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
pub struct RunStep {
    /// Step.
    pub step: i64,
    /// Traces.
    #[serde(default)]
    pub trace_count: u64,
    /// Episodes.
    #[serde(default)]
    pub episode_count: u64,
    /// Average reward.
    #[serde(default)]
    pub avg_reward: Option<f64>,
}
