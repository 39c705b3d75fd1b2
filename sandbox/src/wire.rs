//! The sandbox's own wire types, written from `reference/platform-api.md` (not shared with the
//! `platform/` crate, so that a casing error cannot hide by being wrong on both sides).
//! Platform bodies are camelCase except where the reference says snake_case; the traces
//! service is snake_case throughout.

use serde::Serialize;
use serde_json::Value;

/// §4 `RLRun`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RlRun {
    pub id: String,
    pub user_id: String,
    pub team_id: Option<String>,
    pub name: Option<String>,
    pub status: String,
    pub kind: &'static str,
    pub rft_cluster_id: Option<String>,
    pub prime_cluster_id: Option<String>,
    pub rollouts_per_example: Option<u64>,
    pub seq_len: Option<u64>,
    pub max_steps: Option<u64>,
    pub max_tokens: Option<u64>,
    pub batch_size: Option<u64>,
    pub loss: &'static str,
    pub base_model: Option<String>,
    pub environments: Vec<Value>,
    pub run_config: Value,
    pub eval_config: Option<Value>,
    pub learning_rate: Option<f64>,
    pub lora_alpha: Option<u64>,
    pub gpu_count: Option<u32>,
    pub runs_ahead: Option<u32>,
    pub volume_name: Option<String>,
    pub wandb_entity: Option<String>,
    pub wandb_project: Option<String>,
    pub wandb_run_name: Option<String>,
    pub queue_reason: Option<String>,
    pub notice: Option<String>,
    pub error_message: Option<String>,
    pub source_commit: Option<String>,
    pub started_at: Option<String>,
    pub completed_at: Option<String>,
    pub failure_analysis: Option<FailureAnalysis>,
    pub created_at: String,
    pub updated_at: String,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct FailureAnalysis {
    pub root_cause: String,
    pub evidence: Vec<String>,
    pub confidence: f64,
    /// Extra field (the CLI keeps the object as a dict): the classifier's category.
    pub category: &'static str,
}

/// §5.1 list page.
#[derive(Debug, Serialize)]
pub(crate) struct RunPage {
    pub runs: Vec<RlRun>,
    pub total: usize,
    pub page: usize,
    pub limit: usize,
    pub total_pages: usize,
}

/// §5.12 checkpoint.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Checkpoint {
    pub id: String,
    pub rft_run_id: String,
    pub step: u32,
    pub storage_url: String,
    pub status: &'static str,
    pub size_bytes: u64,
    pub created_at: String,
    pub uploaded_at: Option<String>,
}

/// §5.10 progress (camelCase on the wire).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Progress {
    pub latest_step: Option<u32>,
    pub steps_with_samples: Vec<u32>,
    pub steps_with_distributions: Vec<u32>,
    pub last_updated_at: Option<String>,
}

/// §5.7 env-server (snake_case on the wire).
#[derive(Debug, Serialize)]
pub(crate) struct EnvServer {
    pub env_name: Option<String>,
    pub env_index: Option<u32>,
    pub pod_name: String,
    pub status: String,
}

/// §6.4 create/resume response.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct CreateRunResponse {
    pub run_id: String,
    pub token_value: String,
    pub on_demand: bool,
    pub gpu_type: Option<String>,
    pub price_per_gpu_hour: Option<f64>,
    pub estimated_cost_per_hour: Option<f64>,
    pub is_beta: bool,
}

/// §6.7 volume.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct VolumeWire {
    pub name: String,
    pub size: String,
    pub status: String,
    pub cluster_id: String,
    pub cluster: String,
    pub pvc_name: String,
    pub created_by: String,
    pub created_by_name: Option<String>,
    pub created_by_email: Option<String>,
    pub created_at: String,
}

/// §10 VolumeTransferRoute (`via: "r2"`).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct TransferRoute {
    pub via: &'static str,
    pub endpoint: String,
    pub bucket: String,
    pub prefix: String,
    pub access_key_id: String,
    pub secret_access_key: String,
    pub session_token: String,
    pub expires_at: String,
    /// A put's upload lease (absent on gets).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lease_id: Option<String>,
}

/// §2.3 team list item.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct TeamItem {
    pub team_id: String,
    pub name: String,
    pub slug: String,
    pub role: String,
    pub created_at: String,
}

/// §2.3 team member.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct TeamMember {
    pub user_id: String,
    pub user_name: String,
    pub user_email: String,
    pub role: String,
    pub joined_at: String,
}

/// §6.1 model with clusters.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct FftModel {
    pub name: String,
    pub clusters: Vec<FftCluster>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct FftCluster {
    pub cluster_id: String,
    pub cluster_name: String,
    pub gpu_type: String,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct OnDemandGpu {
    pub gpu_type: String,
    pub price_per_gpu_hour: f64,
    pub discount_label: Option<String>,
    pub available_now: bool,
    pub is_beta: bool,
}

/// §9 TraceSummary (snake_case).
#[derive(Debug, Clone, Serialize)]
pub(crate) struct TraceSummary {
    pub trace_id: String,
    pub upload_id: String,
    pub episode_id: Option<String>,
    pub created_at: String,
    pub ingested_at: String,
    pub run_id: Option<String>,
    pub environment_id: Option<String>,
    pub model: TraceModel,
    pub task_id: Option<String>,
    pub agent_name: Option<String>,
    pub score: TraceScore,
    pub execution: TraceExecution,
    pub duration_ms: u64,
    pub total_tokens: u64,
    pub size_bytes: u64,
    pub context: std::collections::BTreeMap<String, String>,
    pub user_id: String,
}

#[derive(Debug, Clone, Serialize)]
pub(crate) struct TraceModel {
    pub provider: Option<String>,
    pub id: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub(crate) struct TraceScore {
    pub reward: Option<f64>,
    pub outcome: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub(crate) struct TraceExecution {
    pub has_error: bool,
    pub is_truncated: bool,
}

/// §9 EpisodeSummary (+ `traces` for EpisodeDetail).
#[derive(Debug, Clone, Serialize)]
pub(crate) struct EpisodeSummary {
    pub episode_id: String,
    pub upload_id: String,
    pub schema_version: u32,
    pub created_at: String,
    pub ingested_at: String,
    pub run_id: Option<String>,
    pub environment_id: Option<String>,
    pub outcome: Option<String>,
    pub has_error: bool,
    pub error: EpisodeError,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub traces: Option<EpisodeAggregate>,
}

#[derive(Debug, Clone, Serialize)]
pub(crate) struct EpisodeError {
    #[serde(rename = "type")]
    pub kind: Option<String>,
    pub message: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub(crate) struct EpisodeAggregate {
    pub trace_count: u32,
    pub total_tokens: u64,
    pub total_duration_ms: u64,
    pub any_trace_error: bool,
    pub agent_names: Vec<String>,
}

/// §9 RunSummary.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct TraceRunSummary {
    pub run_id: String,
    pub first_trace_created_at: String,
    pub last_trace_created_at: String,
    pub last_trace_ingested_at: String,
    pub trace_count: u64,
    pub episode_count: u64,
    pub avg_reward: Option<f64>,
    pub step_min: Option<u32>,
    pub step_max: Option<u32>,
    pub step_count: u32,
    pub has_error: bool,
    pub first_user_id: Option<String>,
    pub environment_ids: Vec<String>,
    pub model_ids: Vec<String>,
    pub context: std::collections::BTreeMap<String, String>,
}

#[derive(Debug, Clone, Serialize)]
pub(crate) struct RunStep {
    pub step: u32,
    pub trace_count: u64,
    pub episode_count: u64,
    pub avg_reward: Option<f64>,
}

#[derive(Debug, Serialize)]
pub(crate) struct RunStepList {
    pub step_min: Option<u32>,
    pub step_max: Option<u32>,
    pub step_count: u32,
    pub items: Vec<RunStep>,
}

/// §9 cursor page.
#[derive(Debug, Serialize)]
pub(crate) struct CursorPage<T> {
    pub items: Vec<T>,
    pub next_cursor: Option<String>,
}
