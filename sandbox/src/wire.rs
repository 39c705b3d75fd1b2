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
    pub(crate) id: String,
    pub(crate) user_id: String,
    pub(crate) team_id: Option<String>,
    pub(crate) name: Option<String>,
    pub(crate) status: String,
    pub(crate) kind: &'static str,
    pub(crate) rft_cluster_id: Option<String>,
    pub(crate) prime_cluster_id: Option<String>,
    pub(crate) rollouts_per_example: Option<u64>,
    pub(crate) seq_len: Option<u64>,
    pub(crate) max_steps: Option<u64>,
    pub(crate) max_tokens: Option<u64>,
    pub(crate) batch_size: Option<u64>,
    pub(crate) loss: &'static str,
    pub(crate) base_model: Option<String>,
    pub(crate) environments: Vec<Value>,
    pub(crate) run_config: Value,
    pub(crate) eval_config: Option<Value>,
    pub(crate) learning_rate: Option<f64>,
    pub(crate) lora_alpha: Option<u64>,
    pub(crate) gpu_count: Option<u32>,
    pub(crate) runs_ahead: Option<u32>,
    pub(crate) volume_name: Option<String>,
    pub(crate) wandb_entity: Option<String>,
    pub(crate) wandb_project: Option<String>,
    pub(crate) wandb_run_name: Option<String>,
    pub(crate) queue_reason: Option<String>,
    pub(crate) notice: Option<String>,
    pub(crate) error_message: Option<String>,
    pub(crate) source_commit: Option<String>,
    pub(crate) started_at: Option<String>,
    pub(crate) completed_at: Option<String>,
    pub(crate) failure_analysis: Option<FailureAnalysis>,
    pub(crate) created_at: String,
    pub(crate) updated_at: String,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct FailureAnalysis {
    pub(crate) root_cause: String,
    pub(crate) evidence: Vec<String>,
    pub(crate) confidence: f64,
    /// Extra field (the CLI keeps the object as a dict): the classifier's category.
    pub(crate) category: &'static str,
}

/// §5.1 list page.
#[derive(Debug, Serialize)]
pub(crate) struct RunPage {
    pub(crate) runs: Vec<RlRun>,
    pub(crate) total: usize,
    pub(crate) page: usize,
    pub(crate) limit: usize,
    pub(crate) total_pages: usize,
}

/// §5.12 checkpoint.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Checkpoint {
    pub(crate) id: String,
    pub(crate) rft_run_id: String,
    pub(crate) step: u32,
    pub(crate) storage_url: String,
    pub(crate) status: &'static str,
    pub(crate) size_bytes: u64,
    pub(crate) created_at: String,
    pub(crate) uploaded_at: Option<String>,
}

/// §5.10 progress (camelCase on the wire).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Progress {
    pub(crate) latest_step: Option<u32>,
    pub(crate) steps_with_samples: Vec<u32>,
    pub(crate) steps_with_distributions: Vec<u32>,
    pub(crate) last_updated_at: Option<String>,
}

/// §5.7 env-server (snake_case on the wire).
#[derive(Debug, Serialize)]
pub(crate) struct EnvServer {
    pub(crate) env_name: Option<String>,
    pub(crate) env_index: Option<u32>,
    pub(crate) pod_name: String,
    pub(crate) status: String,
}

/// §6.4 create/resume response.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct CreateRunResponse {
    pub(crate) run_id: String,
    pub(crate) token_value: String,
    pub(crate) on_demand: bool,
    pub(crate) gpu_type: Option<String>,
    pub(crate) price_per_gpu_hour: Option<f64>,
    pub(crate) estimated_cost_per_hour: Option<f64>,
    pub(crate) is_beta: bool,
}

/// §6.7 volume.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct VolumeWire {
    pub(crate) name: String,
    pub(crate) size: String,
    pub(crate) status: String,
    pub(crate) cluster_id: String,
    pub(crate) cluster: String,
    pub(crate) pvc_name: String,
    pub(crate) created_by: String,
    pub(crate) created_by_name: Option<String>,
    pub(crate) created_by_email: Option<String>,
    pub(crate) created_at: String,
}

/// §10 VolumeTransferRoute (`via: "r2"`).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct TransferRoute {
    pub(crate) via: &'static str,
    pub(crate) endpoint: String,
    pub(crate) bucket: String,
    pub(crate) prefix: String,
    pub(crate) access_key_id: String,
    pub(crate) secret_access_key: String,
    pub(crate) session_token: String,
    pub(crate) expires_at: String,
    /// A put's upload lease (absent on gets).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) lease_id: Option<String>,
}

/// §2.3 team list item.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct TeamItem {
    pub(crate) team_id: String,
    pub(crate) name: String,
    pub(crate) slug: String,
    pub(crate) role: String,
    pub(crate) created_at: String,
}

/// §2.3 team member.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct TeamMember {
    pub(crate) user_id: String,
    pub(crate) user_name: String,
    pub(crate) user_email: String,
    pub(crate) role: String,
    pub(crate) joined_at: String,
}

/// §6.1 model with clusters.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct FftModel {
    pub(crate) name: String,
    pub(crate) clusters: Vec<FftCluster>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct FftCluster {
    pub(crate) cluster_id: String,
    pub(crate) cluster_name: String,
    pub(crate) gpu_type: String,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct OnDemandGpu {
    pub(crate) gpu_type: String,
    pub(crate) price_per_gpu_hour: f64,
    pub(crate) discount_label: Option<String>,
    pub(crate) available_now: bool,
    pub(crate) is_beta: bool,
}

/// §9 TraceSummary (snake_case).
#[derive(Debug, Clone, Serialize)]
pub(crate) struct TraceSummary {
    pub(crate) trace_id: String,
    pub(crate) upload_id: String,
    pub(crate) episode_id: Option<String>,
    pub(crate) created_at: String,
    pub(crate) ingested_at: String,
    pub(crate) run_id: Option<String>,
    pub(crate) environment_id: Option<String>,
    pub(crate) model: TraceModel,
    pub(crate) task_id: Option<String>,
    pub(crate) agent_name: Option<String>,
    pub(crate) score: TraceScore,
    pub(crate) execution: TraceExecution,
    pub(crate) duration_ms: u64,
    pub(crate) total_tokens: u64,
    pub(crate) size_bytes: u64,
    pub(crate) context: std::collections::BTreeMap<String, String>,
    pub(crate) user_id: String,
}

#[derive(Debug, Clone, Serialize)]
pub(crate) struct TraceModel {
    pub(crate) provider: Option<String>,
    pub(crate) id: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub(crate) struct TraceScore {
    pub(crate) reward: Option<f64>,
    pub(crate) outcome: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub(crate) struct TraceExecution {
    pub(crate) has_error: bool,
    pub(crate) is_truncated: bool,
}

/// §9 EpisodeSummary (+ `traces` for EpisodeDetail).
#[derive(Debug, Clone, Serialize)]
pub(crate) struct EpisodeSummary {
    pub(crate) episode_id: String,
    pub(crate) upload_id: String,
    pub(crate) schema_version: u32,
    pub(crate) created_at: String,
    pub(crate) ingested_at: String,
    pub(crate) run_id: Option<String>,
    pub(crate) environment_id: Option<String>,
    pub(crate) outcome: Option<String>,
    pub(crate) has_error: bool,
    pub(crate) error: EpisodeError,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) traces: Option<EpisodeAggregate>,
}

#[derive(Debug, Clone, Serialize)]
pub(crate) struct EpisodeError {
    #[serde(rename = "type")]
    pub(crate) kind: Option<String>,
    pub(crate) message: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub(crate) struct EpisodeAggregate {
    pub(crate) trace_count: u32,
    pub(crate) total_tokens: u64,
    pub(crate) total_duration_ms: u64,
    pub(crate) any_trace_error: bool,
    pub(crate) agent_names: Vec<String>,
}

/// §9 RunSummary.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct TraceRunSummary {
    pub(crate) run_id: String,
    pub(crate) first_trace_created_at: String,
    pub(crate) last_trace_created_at: String,
    pub(crate) last_trace_ingested_at: String,
    pub(crate) trace_count: u64,
    pub(crate) episode_count: u64,
    pub(crate) avg_reward: Option<f64>,
    pub(crate) step_min: Option<u32>,
    pub(crate) step_max: Option<u32>,
    pub(crate) step_count: u32,
    pub(crate) has_error: bool,
    pub(crate) first_user_id: Option<String>,
    pub(crate) environment_ids: Vec<String>,
    pub(crate) model_ids: Vec<String>,
    pub(crate) context: std::collections::BTreeMap<String, String>,
}

#[derive(Debug, Clone, Serialize)]
pub(crate) struct RunStep {
    pub(crate) step: u32,
    pub(crate) trace_count: u64,
    pub(crate) episode_count: u64,
    pub(crate) avg_reward: Option<f64>,
}

#[derive(Debug, Serialize)]
pub(crate) struct RunStepList {
    pub(crate) step_min: Option<u32>,
    pub(crate) step_max: Option<u32>,
    pub(crate) step_count: u32,
    pub(crate) items: Vec<RunStep>,
}

/// §9 cursor page.
#[derive(Debug, Serialize)]
pub(crate) struct CursorPage<T> {
    pub(crate) items: Vec<T>,
    pub(crate) next_cursor: Option<String>,
}
