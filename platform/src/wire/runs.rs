//! Run wire types: the `RLRun` object (camelCase, §4), run pages, create/resume/pause bodies
//! and answers (§6.4, §6.6), the prepare handshake (§6.2, strict snake_case), and the
//! monitoring answers (logs, env servers, metrics, progress, samples, distributions,
//! checkpoints, usage; §5).

use std::fmt;

use secrecy::SecretString;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

pub use super::metrics::{MetricRecord, MetricsResponse, RecordFields};
use super::null_default;
use crate::http::serialize_opt_secret;

/// Run statuses that end `stop` polling (compared case-insensitively).
pub const TERMINAL_STATUSES: [&str; 4] = ["STOPPED", "FAILED", "COMPLETED", "PAUSED"];

/// A run's status. The platform may invent new ones: those are kept as [`RunStatus::Other`],
/// never rejected. The wire spelling of each status is written here once ([`RunStatus::as_str`]).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum RunStatus {
    /// Waiting for capacity.
    Queued,
    /// Being scheduled.
    Pending,
    /// Training.
    Running,
    /// Finished.
    Completed,
    /// Ended in error.
    Failed,
    /// Stopped by someone.
    Stopped,
    /// Being paused.
    Pausing,
    /// Paused: holds no GPUs, can be resumed as a new run.
    Paused,
    /// A status this client does not know, exactly as the platform sent it.
    Other(String),
}

impl RunStatus {
    /// Every status this client knows, in lifecycle order.
    pub const KNOWN: [RunStatus; 8] = [
        RunStatus::Queued,
        RunStatus::Pending,
        RunStatus::Running,
        RunStatus::Completed,
        RunStatus::Failed,
        RunStatus::Stopped,
        RunStatus::Pausing,
        RunStatus::Paused,
    ];

    /// The status a wire string names (case-insensitive); unknown strings are kept.
    pub fn parse(status: &str) -> RunStatus {
        RunStatus::KNOWN
            .into_iter()
            .find(|k| k.as_str().eq_ignore_ascii_case(status))
            .unwrap_or_else(|| RunStatus::Other(status.to_string()))
    }

    /// The wire spelling (`RUNNING`, …; an unknown status as it was sent).
    pub fn as_str(&self) -> &str {
        match self {
            RunStatus::Queued => "QUEUED",
            RunStatus::Pending => "PENDING",
            RunStatus::Running => "RUNNING",
            RunStatus::Completed => "COMPLETED",
            RunStatus::Failed => "FAILED",
            RunStatus::Stopped => "STOPPED",
            RunStatus::Pausing => "PAUSING",
            RunStatus::Paused => "PAUSED",
            RunStatus::Other(s) => s,
        }
    }

    /// The run holds (or is about to hold) GPUs: queued, pending, running or pausing.
    pub fn is_active(&self) -> bool {
        matches!(
            self,
            RunStatus::Queued | RunStatus::Pending | RunStatus::Running | RunStatus::Pausing
        )
    }

    /// The status ends `stop` polling: stopped, failed, completed or paused.
    pub fn is_terminal(&self) -> bool {
        matches!(
            self,
            RunStatus::Stopped | RunStatus::Failed | RunStatus::Completed | RunStatus::Paused
        )
    }
}

impl fmt::Display for RunStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A run as `GET /rft/runs[/{id}]` returns it. `id`, `userId`, `status`, `createdAt` and
/// `updatedAt` are required; everything else is optional. Unknown fields are kept in `extra`
/// so [`RlRun::raw`] reproduces what the server sent.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RlRun {
    /// Run id.
    pub id: String,
    /// Owner.
    pub user_id: String,
    /// Status (`QUEUED`, `PENDING`, `RUNNING`, `COMPLETED`, `FAILED`, `STOPPED`, `PAUSING`,
    /// `PAUSED`, or anything else the server invents).
    pub status: String,
    /// Creation time, as sent (see [`super::parse_wire_datetime`]).
    pub created_at: String,
    /// Last update, as sent.
    pub updated_at: String,
    /// Run name (the TOML `name`).
    #[serde(default)]
    pub name: Option<String>,
    /// Owning team.
    #[serde(default)]
    pub team_id: Option<String>,
    /// Cluster of shared (LoRA) runs.
    #[serde(default)]
    pub rft_cluster_id: Option<String>,
    /// Cluster of dedicated runs.
    #[serde(default)]
    pub prime_cluster_id: Option<String>,
    /// `SHARED_RFT_HOSTED` | `DEDICATED_FULL_FT` | `EXTERNAL`.
    #[serde(default)]
    pub kind: Option<String>,
    /// Rollouts per example.
    #[serde(default)]
    pub rollouts_per_example: Option<i64>,
    /// Sequence length.
    #[serde(default)]
    pub seq_len: Option<i64>,
    /// Maximum steps.
    #[serde(default)]
    pub max_steps: Option<i64>,
    /// Maximum tokens.
    #[serde(default)]
    pub max_tokens: Option<i64>,
    /// Batch size.
    #[serde(default)]
    pub batch_size: Option<i64>,
    /// `rl` (the default when absent) or `sft`; see [`RlRun::loss_or_default`].
    #[serde(default)]
    pub loss: Option<String>,
    /// Teacher config under the name `teacher`.
    #[serde(default)]
    pub teacher: Option<Value>,
    /// Teacher config under the name `teacherConfig`; see [`RlRun::teacher_config`].
    #[serde(default, rename = "teacherConfig")]
    pub teacher_config_alt: Option<Value>,
    /// Base model.
    #[serde(default)]
    pub base_model: Option<String>,
    /// Environments (`[]` when absent or null).
    #[serde(default, deserialize_with = "null_default")]
    pub environments: Vec<Value>,
    /// Run config.
    #[serde(default)]
    pub run_config: Option<Value>,
    /// Eval config.
    #[serde(default)]
    pub eval_config: Option<Value>,
    /// Validation config.
    #[serde(default)]
    pub val_config: Option<Value>,
    /// Buffer config.
    #[serde(default)]
    pub buffer_config: Option<Value>,
    /// Learning rate.
    #[serde(default)]
    pub learning_rate: Option<f64>,
    /// Oversampling factor.
    #[serde(default)]
    pub oversampling_factor: Option<f64>,
    /// LoRA alpha.
    #[serde(default)]
    pub lora_alpha: Option<i64>,
    /// Maximum in-flight rollouts.
    #[serde(default)]
    pub max_inflight_rollouts: Option<i64>,
    /// Maximum async level.
    #[serde(default)]
    pub max_async_level: Option<i64>,
    /// GPU count.
    #[serde(default)]
    pub gpu_count: Option<i64>,
    /// Runs ahead in the queue (QUEUED runs).
    #[serde(default)]
    pub runs_ahead: Option<i64>,
    /// Volume the run writes to.
    #[serde(default)]
    pub volume_name: Option<String>,
    /// W&B entity.
    #[serde(default)]
    pub wandb_entity: Option<String>,
    /// W&B project.
    #[serde(default)]
    pub wandb_project: Option<String>,
    /// W&B run name.
    #[serde(default)]
    pub wandb_run_name: Option<String>,
    /// Why the run is queued.
    #[serde(default)]
    pub queue_reason: Option<String>,
    /// Notice from the platform.
    #[serde(default)]
    pub notice: Option<String>,
    /// Error message of a failed run.
    #[serde(default)]
    pub error_message: Option<String>,
    /// prime-rl source commit.
    #[serde(default)]
    pub source_commit: Option<String>,
    /// Start time, as sent.
    #[serde(default)]
    pub started_at: Option<String>,
    /// Completion time, as sent.
    #[serde(default)]
    pub completed_at: Option<String>,
    /// The platform's analysis of a failure.
    #[serde(default)]
    pub failure_analysis: Option<FailureAnalysis>,
    /// Every other field, kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `failureAnalysis` of a run.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FailureAnalysis {
    /// Root cause.
    #[serde(default)]
    pub root_cause: Option<String>,
    /// Evidence lines.
    #[serde(default, deserialize_with = "null_default")]
    pub evidence: Vec<String>,
    /// Confidence, 0–1.
    #[serde(default)]
    pub confidence: Option<f64>,
    /// Other fields.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl RlRun {
    /// Whether the status ends `stop` polling (`STOPPED`, `FAILED`, `COMPLETED`, `PAUSED`).
    pub fn is_terminal(&self) -> bool {
        is_terminal_status(&self.status)
    }

    /// The status, typed (an unknown one is kept as [`RunStatus::Other`]).
    pub fn run_status(&self) -> RunStatus {
        RunStatus::parse(&self.status)
    }

    /// Whether the run holds (or is about to hold) GPUs.
    pub fn is_active(&self) -> bool {
        self.run_status().is_active()
    }

    /// `loss`, defaulting to `rl` as the CLI does.
    pub fn loss_or_default(&self) -> &str {
        self.loss.as_deref().unwrap_or("rl")
    }

    /// Whether this is an SFT run (`loss == "sft"`).
    pub fn is_sft(&self) -> bool {
        self.loss_or_default() == "sft"
    }

    /// The teacher config, under either wire name.
    pub fn teacher_config(&self) -> Option<&Value> {
        self.teacher.as_ref().or(self.teacher_config_alt.as_ref())
    }

    /// `createdAt` parsed (UTC), when parseable.
    pub fn created_at_utc(&self) -> Option<chrono::DateTime<chrono::Utc>> {
        ListedRun::created_at_utc(self)
    }

    /// The run object in its wire shape (camelCase), unknown fields included.
    pub fn raw(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }

    /// The snake_case view of §7 (`train get -o json`): every key present in the CLI's order,
    /// `null` when absent, `loss` defaulting to `rl`, `cluster_id` from `rftClusterId`. Extra
    /// wire fields are dropped. Datetimes are kept as the wire sent them (not Python `str()`).
    pub fn to_snake_case(&self) -> Value {
        let mut m = Map::new();
        let mut put = |k: &str, v: Value| {
            m.insert(k.to_owned(), v);
        };
        put("id", json!(self.id));
        put("name", json!(self.name));
        put("user_id", json!(self.user_id));
        put("team_id", json!(self.team_id));
        put("cluster_id", json!(self.rft_cluster_id));
        put("prime_cluster_id", json!(self.prime_cluster_id));
        put("status", json!(self.status));
        put("kind", json!(self.kind));
        put("rollouts_per_example", json!(self.rollouts_per_example));
        put("seq_len", json!(self.seq_len));
        put("max_steps", json!(self.max_steps));
        put("max_tokens", json!(self.max_tokens));
        put("batch_size", json!(self.batch_size));
        put("loss", json!(self.loss_or_default()));
        put("teacher", json!(self.teacher_config()));
        put("base_model", json!(self.base_model));
        put("environments", json!(self.environments));
        put("run_config", json!(self.run_config));
        put("eval_config", json!(self.eval_config));
        put("val_config", json!(self.val_config));
        put("buffer_config", json!(self.buffer_config));
        put("learning_rate", json!(self.learning_rate));
        put("lora_alpha", json!(self.lora_alpha));
        put("max_inflight_rollouts", json!(self.max_inflight_rollouts));
        put("oversampling_factor", json!(self.oversampling_factor));
        put("max_async_level", json!(self.max_async_level));
        put("volume_name", json!(self.volume_name));
        put("gpu_count", json!(self.gpu_count));
        put("wandb_entity", json!(self.wandb_entity));
        put("wandb_project", json!(self.wandb_project));
        put("wandb_run_name", json!(self.wandb_run_name));
        put("runs_ahead", json!(self.runs_ahead));
        put("queue_reason", json!(self.queue_reason));
        put("notice", json!(self.notice));
        put("started_at", json!(self.started_at));
        put("completed_at", json!(self.completed_at));
        put("error_message", json!(self.error_message));
        put("created_at", json!(self.created_at));
        put("updated_at", json!(self.updated_at));
        put("failure_analysis", json!(self.failure_analysis.as_ref().map(|f| json!({ "root_cause": f.root_cause, "evidence": f.evidence, "confidence": f.confidence, }))));
        put("source_commit", json!(self.source_commit));
        Value::Object(m)
    }
}

/// Whether a status string is terminal (case-insensitive).
pub fn is_terminal_status(status: &str) -> bool {
    RunStatus::parse(status).is_terminal()
}

/// A run as a page of `GET /rft/runs` holds it, read whole ([`RlRun`]) or only as far as a
/// list shows it ([`RunHead`]).
pub trait ListedRun: serde::de::DeserializeOwned {
    /// Owner.
    fn user_id(&self) -> &str;
    /// Creation time, as sent.
    fn created_at(&self) -> &str;
    /// `createdAt` parsed (UTC), when parseable.
    fn created_at_utc(&self) -> Option<chrono::DateTime<chrono::Utc>> {
        super::parse_wire_datetime(self.created_at())
    }
}

impl ListedRun for RlRun {
    fn user_id(&self) -> &str {
        &self.user_id
    }
    fn created_at(&self) -> &str {
        &self.created_at
    }
}

/// The fields of a run a list shows, read from an `RLRun` without the rest: its configs,
/// environments and unknown fields are skipped unread (no tree is built for them), so a page
/// costs a fraction of a page of [`RlRun`]s. The fields it reads, and the required ones, are
/// those of [`RlRun`] and read as it reads them; a field it skips cannot fail its read (an
/// ill-typed `learningRate` or `failureAnalysis`, or a number out of range in any field it
/// skips, fails an [`RlRun`], not a [`RunHead`]). It also reads one shape no platform sends:
/// a list of the fields in order (serde reads a struct from a list too; [`RlRun`], which keeps
/// its unknown fields, reads only from an object).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunHead {
    /// Run id.
    pub id: String,
    /// Owner.
    pub user_id: String,
    /// Status, as sent.
    pub status: String,
    /// Creation time, as sent.
    pub created_at: String,
    /// Last update, as sent.
    pub updated_at: String,
    /// Run name.
    #[serde(default)]
    pub name: Option<String>,
    /// Owning team.
    #[serde(default)]
    pub team_id: Option<String>,
    /// `SHARED_RFT_HOSTED` | `DEDICATED_FULL_FT` | `EXTERNAL`.
    #[serde(default)]
    pub kind: Option<String>,
    /// Base model.
    #[serde(default)]
    pub base_model: Option<String>,
    /// Maximum steps.
    #[serde(default)]
    pub max_steps: Option<i64>,
    /// GPU count.
    #[serde(default)]
    pub gpu_count: Option<i64>,
    /// Start time, as sent.
    #[serde(default)]
    pub started_at: Option<String>,
    /// Completion time, as sent.
    #[serde(default)]
    pub completed_at: Option<String>,
    /// Error message of a failed run.
    #[serde(default)]
    pub error_message: Option<String>,
}

impl RunHead {
    /// The status, typed (an unknown one is kept as [`RunStatus::Other`]).
    pub fn run_status(&self) -> RunStatus {
        RunStatus::parse(&self.status)
    }
}

impl ListedRun for RunHead {
    fn user_id(&self) -> &str {
        &self.user_id
    }
    fn created_at(&self) -> &str {
        &self.created_at
    }
}

/// `GET /rft/runs` → `{"runs": [...], "total", "page", "limit", "total_pages"}`, its runs read
/// whole ([`RlRun`], the default) or as a list shows them ([`RunHead`]).
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(bound(deserialize = "R: Deserialize<'de>", serialize = "R: Serialize"))]
pub struct RunPage<R = RlRun> {
    /// Runs of this page, newest first.
    #[serde(default, deserialize_with = "null_default")]
    pub runs: Vec<R>,
    /// Total matching runs; `None` from a legacy server that ignores paging (then the client
    /// paged and filtered locally, see [`crate::runs`]).
    #[serde(default)]
    pub total: Option<u64>,
    /// Page (1-based).
    #[serde(default)]
    pub page: Option<u64>,
    /// Page size.
    #[serde(default)]
    pub limit: Option<u64>,
    /// Number of pages.
    #[serde(default)]
    pub total_pages: Option<u64>,
}

/// `{"run": RLRun}` (get, stop, restart).
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct RunEnvelope {
    pub run: RlRun,
}

/// Body of `POST /training/runs` (§6.4). Absent fields are omitted; `mode` is sent only for
/// SFT. `wandbApiKey`/`hfToken` are exposed only when serialised for the wire; `Debug` shows
/// `[REDACTED]`.
#[derive(Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateRunRequest {
    /// The whole TOML table (as JSON) minus the CLI-only keys; `name` stays in it.
    pub config: Map<String, Value>,
    /// `"mode": "sft"` when true; omitted for RL.
    #[serde(
        rename = "mode",
        skip_serializing_if = "is_false",
        serialize_with = "serialize_sft_mode"
    )]
    pub sft: bool,
    /// Run name (the TOML's top-level `name`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Owning team; omitted for the personal account.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub team_id: Option<String>,
    /// prime-rl image tag.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub image_tag: Option<String>,
    /// W&B API key (secret).
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "serialize_opt_secret"
    )]
    pub wandb_api_key: Option<SecretString>,
    /// Hugging Face token (secret).
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "serialize_opt_secret"
    )]
    pub hf_token: Option<SecretString>,
    /// GPU type, e.g. `H200_141GB`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu_type: Option<String>,
    /// Named volume.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub volume: Option<String>,
    /// prime-rl branch, tag or sha.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source_ref: Option<String>,
    /// Id of a PAUSED run to resume from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resume_from: Option<String>,
    /// Artifact of a successful local compile.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub normalized_config: Option<Value>,
}

fn is_false(b: &bool) -> bool {
    !*b
}

fn deserialize_sft_mode<'de, D: serde::Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    let mode = Option::<String>::deserialize(d)?;
    Ok(mode.as_deref() == Some("sft"))
}

/// A create-run request without its secret values: what a plan stores, shows and digests.
/// It serialises exactly as [`CreateRunRequest`] does with no secret set (same keys, same
/// order); [`RunSpec::into_request`] adds the secrets at dispatch time.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunSpec {
    /// The whole TOML table (as JSON) minus the CLI-only keys; `name` stays in it.
    pub config: Map<String, Value>,
    /// `"mode": "sft"` when true; omitted for RL.
    #[serde(
        rename = "mode",
        default,
        skip_serializing_if = "is_false",
        serialize_with = "serialize_sft_mode",
        deserialize_with = "deserialize_sft_mode"
    )]
    pub sft: bool,
    /// Run name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Owning team; omitted for the personal account.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub team_id: Option<String>,
    /// prime-rl image tag.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_tag: Option<String>,
    /// GPU type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_type: Option<String>,
    /// Named volume.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub volume: Option<String>,
    /// prime-rl branch, tag or sha.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_ref: Option<String>,
}

impl RunSpec {
    /// The wire request, with the secret values the run receives.
    pub fn into_request(
        self,
        wandb_api_key: Option<SecretString>,
        hf_token: Option<SecretString>,
    ) -> CreateRunRequest {
        CreateRunRequest {
            config: self.config,
            sft: self.sft,
            name: self.name,
            team_id: self.team_id,
            image_tag: self.image_tag,
            wandb_api_key,
            hf_token,
            gpu_type: self.gpu_type,
            volume: self.volume,
            source_ref: self.source_ref,
            ..CreateRunRequest::default()
        }
    }
}

/// A resume request without its secret values (§6.6: only the GPU type and image tag).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResumeSpec {
    /// GPU type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_type: Option<String>,
    /// Image tag.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_tag: Option<String>,
}

impl ResumeSpec {
    /// The wire request, with the secret values the run receives.
    pub fn into_request(
        self,
        wandb_api_key: Option<SecretString>,
        hf_token: Option<SecretString>,
    ) -> ResumeRunRequest {
        ResumeRunRequest {
            gpu_type: self.gpu_type,
            image_tag: self.image_tag,
            wandb_api_key,
            hf_token,
        }
    }
}

fn serialize_sft_mode<S: serde::Serializer>(_: &bool, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str("sft")
}

fn redacted(secret: &Option<SecretString>) -> Option<&'static str> {
    secret.as_ref().map(|_| "[REDACTED]")
}

impl fmt::Debug for CreateRunRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CreateRunRequest")
            .field("config", &self.config)
            .field("sft", &self.sft)
            .field("name", &self.name)
            .field("team_id", &self.team_id)
            .field("image_tag", &self.image_tag)
            .field("wandb_api_key", &redacted(&self.wandb_api_key))
            .field("hf_token", &redacted(&self.hf_token))
            .field("gpu_type", &self.gpu_type)
            .field("volume", &self.volume)
            .field("source_ref", &self.source_ref)
            .field("resume_from", &self.resume_from)
            .field("normalized_config", &self.normalized_config.is_some())
            .finish()
    }
}

/// Body of `POST /training/runs/{id}/resume` (§6.6): only the keys that are set; no team.
#[derive(Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ResumeRunRequest {
    /// GPU type.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu_type: Option<String>,
    /// Image tag.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub image_tag: Option<String>,
    /// W&B API key (secret).
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "serialize_opt_secret"
    )]
    pub wandb_api_key: Option<SecretString>,
    /// Hugging Face token (secret).
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "serialize_opt_secret"
    )]
    pub hf_token: Option<SecretString>,
}

impl fmt::Debug for ResumeRunRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResumeRunRequest")
            .field("gpu_type", &self.gpu_type)
            .field("image_tag", &self.image_tag)
            .field("wandb_api_key", &redacted(&self.wandb_api_key))
            .field("hf_token", &redacted(&self.hf_token))
            .finish()
    }
}

/// Answer of create and resume. `runId` and `tokenValue` are required; `tokenValue` (a
/// per-run API token) is never shown by `Debug` and is not serialisable.
#[derive(Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateRunResponse {
    /// The new run's id.
    pub run_id: String,
    /// Per-run token (secret).
    pub token_value: SecretString,
    /// Whether the run uses on-demand capacity.
    #[serde(default)]
    pub on_demand: Option<bool>,
    /// GPU type (on-demand).
    #[serde(default)]
    pub gpu_type: Option<String>,
    /// Price per GPU-hour (on-demand).
    #[serde(default)]
    pub price_per_gpu_hour: Option<f64>,
    /// Estimated cost per hour (on-demand).
    #[serde(default)]
    pub estimated_cost_per_hour: Option<f64>,
    /// Whether on-demand is beta.
    #[serde(default)]
    pub is_beta: Option<bool>,
}

impl fmt::Debug for CreateRunResponse {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CreateRunResponse")
            .field("run_id", &self.run_id)
            .field("token_value", &"[REDACTED]")
            .field("on_demand", &self.on_demand)
            .field("gpu_type", &self.gpu_type)
            .field("price_per_gpu_hour", &self.price_per_gpu_hour)
            .field("estimated_cost_per_hour", &self.estimated_cost_per_hour)
            .field("is_beta", &self.is_beta)
            .finish()
    }
}

/// Answer of `POST /training/runs/{id}/pause`; `status` is required.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PauseRunResponse {
    /// Run id, when echoed.
    #[serde(default)]
    pub run_id: Option<String>,
    /// New status (e.g. `PAUSING`).
    pub status: String,
    /// Other fields.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// Training mode of the prepare handshake.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TrainingMode {
    /// Reinforcement learning.
    Rl,
    /// Supervised fine-tuning.
    Sft,
}

/// Body of `POST /training/runs/prepare` (§6.2): `teamId` is always present (`null` for the
/// personal account); `imageTag`/`sourceRef` only when set.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PrepareRequest {
    /// `rl` or `sft`.
    pub mode: TrainingMode,
    /// Team, or `None` → `null` on the wire.
    pub team_id: Option<String>,
    /// Image tag.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub image_tag: Option<String>,
    /// Source ref.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source_ref: Option<String>,
}

/// The literal the prepare answer's `runtime.repository` must equal.
pub const PRIME_RL_REPOSITORY: &str = "ghcr.io/primeintellect-ai/prime-rl";

/// Answer of prepare (snake_case), checked strictly by [`PrepareResponse::validate`].
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
pub struct PrepareResponse {
    /// Contract version (the CLI requires 1 before compiling locally).
    pub contract_version: i64,
    /// `rl` or `sft`.
    pub mode: TrainingMode,
    /// The exact prime-rl runtime.
    pub runtime: PrepareRuntime,
    /// How to install the schema package.
    pub schema_install: SchemaInstall,
    /// Whether local validation is offered.
    pub submission_supported: bool,
}

/// `runtime` of the prepare answer.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
pub struct PrepareRuntime {
    /// Must be [`PRIME_RL_REPOSITORY`].
    pub repository: String,
    /// `sha256:<64 hex>`.
    pub digest: String,
    /// Image commit.
    pub image_commit: String,
    /// Source-overlay commit (may be null).
    #[serde(default)]
    pub source_commit: Option<String>,
    /// Schema commit.
    pub schema_commit: String,
}

/// `schema_install` of the prepare answer.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
pub struct SchemaInstall {
    /// Must be `3.12`.
    pub python: String,
    /// pip requirements.
    pub requirements: Vec<String>,
    /// pip constraints.
    pub constraints: Vec<String>,
}

impl PrepareResponse {
    /// The literal checks the CLI's model makes: `repository` and `python`.
    pub fn validate(&self) -> Result<(), String> {
        if self.runtime.repository != PRIME_RL_REPOSITORY {
            return Err(format!(
                "runtime.repository is '{}', expected '{PRIME_RL_REPOSITORY}'",
                self.runtime.repository
            ));
        }
        if self.schema_install.python != "3.12" {
            return Err(format!(
                "schema_install.python is '{}', expected '3.12'",
                self.schema_install.python
            ));
        }
        Ok(())
    }
}

/// `GET /rft/runs/{id}/logs` (and the legacy `env-server-logs`) → `{"logs": "..."}`.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
pub struct LogsResponse {
    /// Lines joined by `\n` (empty when none).
    #[serde(default, deserialize_with = "null_default")]
    pub logs: String,
}

/// A `GET …/logs` answer as the platform sent it: the `logs` string found and its framing
/// checked, but not decoded, so that a tool answering with the last lines decodes only those.
/// Positions are offsets into the string's content as sent (JSON-escaped); a line starts at 0
/// or just after an escaped line feed (`\n`, as every common encoder writes it; a line feed
/// written `\u000a` is decoded, but is not where [`LogsBody::line_start`] cuts).
///
/// The plain body `{"logs": "<string>"}` (whitespace where JSON allows it) is kept as sent;
/// any other (other keys, `null`) is decoded by serde_json and kept as text. Only what is
/// decoded is checked: a malformed escape, control character or invalid UTF-8 fails the read
/// that reaches it, and a read of the last lines does not reach the text before them.
#[derive(Clone)]
pub struct LogsBody {
    bytes: bytes::Bytes,
    /// The string's content: `bytes[start..end]`.
    start: usize,
    end: usize,
    /// Whether the content is JSON-escaped (as sent) or already text (decoded by serde_json).
    escaped: bool,
    /// The request, for a decoding error.
    endpoint: String,
}

impl fmt::Debug for LogsBody {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LogsBody")
            .field("len", &self.len())
            .field("escaped", &self.escaped)
            .finish()
    }
}

impl<'de> Deserialize<'de> for LogsBody {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        LogsResponse::deserialize(d).map(|r| LogsBody::from_text(r.logs))
    }
}

impl LogsBody {
    /// The plain body, kept as sent once its framing is checked: the string's closing quote
    /// is the first `"` not escaped, and only whitespace and the closing `}` follow it. `None`
    /// for any other body, which then goes through serde_json. The content's escapes and its
    /// UTF-8 are checked where it is decoded.
    pub(crate) fn from_plain_body(body: &bytes::Bytes) -> Option<LogsBody> {
        let rest = skip_ws(body).strip_prefix(b"{")?;
        let rest = skip_ws(rest).strip_prefix(b"\"logs\"")?;
        let rest = skip_ws(rest).strip_prefix(b":")?;
        let rest = skip_ws(rest).strip_prefix(b"\"")?;
        let start = body.len() - rest.len();
        let end = closing_quote(rest)?;
        let tail = skip_ws(&rest[end + 1..]).strip_prefix(b"}")?;
        if !skip_ws(tail).is_empty() {
            return None;
        }
        Some(LogsBody {
            bytes: body.clone(),
            start,
            end: start + end,
            escaped: true,
            endpoint: String::new(),
        })
    }

    /// A whole body, kept as [`LogsBody::from_plain_body`] keeps it; `None` when it is not
    /// plain.
    pub fn from_json(body: Vec<u8>) -> Option<LogsBody> {
        LogsBody::from_plain_body(&bytes::Bytes::from(body))
    }

    /// Text already decoded.
    pub fn from_text(text: String) -> LogsBody {
        let end = text.len();
        LogsBody {
            bytes: bytes::Bytes::from(text),
            start: 0,
            end,
            escaped: false,
            endpoint: String::new(),
        }
    }

    pub(crate) fn with_endpoint(mut self, endpoint: String) -> LogsBody {
        self.endpoint = endpoint;
        self
    }

    /// The content's length as sent.
    pub fn len(&self) -> usize {
        self.end - self.start
    }

    /// Whether there are no logs.
    pub fn is_empty(&self) -> bool {
        self.end == self.start
    }

    /// The content as sent: escaped JSON, or text.
    fn sent(&self) -> &[u8] {
        &self.bytes[self.start..self.end]
    }

    /// The content before `to`, as sent. The ASCII letters, digits and `-` read as they are
    /// unless [`LogsBody::hides_letters`] says otherwise.
    pub fn sent_before(&self, to: usize) -> &[u8] {
        &self.sent()[..to.min(self.len())]
    }

    /// Whether the content before `to` escapes an ASCII letter, digit or `-` (`\u0041`), so
    /// that a search of it as sent could miss a word. No encoder does that unasked.
    pub fn hides_letters(&self, to: usize) -> bool {
        if !self.escaped {
            return false;
        }
        let sent = self.sent_before(to);
        memchr::memmem::find_iter(sent, b"\\u00").any(|at| {
            escapes_from(sent, at)
                && sent
                    .get(at + 4..at + 6)
                    .and_then(|h| std::str::from_utf8(h).ok())
                    .and_then(|h| u8::from_str_radix(h, 16).ok())
                    .is_some_and(|c| c.is_ascii_alphanumeric() || c == b'-')
        })
    }

    /// The start of the line that holds `at` (the greatest line start at or before it).
    pub fn line_start(&self, at: usize) -> usize {
        let sent = self.sent();
        let mut at = at.min(sent.len());
        if !self.escaped {
            return memchr::memrchr(b'\n', &sent[..at]).map_or(0, |i| i + 1);
        }
        // An escaped line feed ends just before a line start: `\n` whose `\\` starts an escape.
        while let Some(i) = memchr::memrchr(b'\\', &sent[..at]) {
            if sent.get(i + 1) == Some(&b'n') && i + 2 <= at && escapes_from(sent, i) {
                return i + 2;
            }
            at = i;
        }
        0
    }

    /// The text of `range` (line starts, or the content's end), decoded; `None` when it is not
    /// well-formed JSON string content (a bad escape, a lone surrogate, a control character,
    /// invalid UTF-8).
    pub fn decode(&self, range: std::ops::Range<usize>) -> Option<String> {
        let part = std::str::from_utf8(self.sent().get(range)?).ok()?;
        if self.escaped {
            unescape_json(part)
        } else {
            Some(part.to_owned())
        }
    }

    /// The whole text, decoded; a body that is not well-formed fails as serde_json says.
    pub fn text(&self) -> Result<String, crate::PlatformError> {
        if let Some(text) = self.decode(0..self.len()) {
            return Ok(text);
        }
        serde_json::from_slice::<LogsResponse>(&self.bytes)
            .map(|r| r.logs)
            .map_err(|e| crate::PlatformError::Decode {
                endpoint: self.endpoint.clone(),
                message: format!("response body is not JSON ({e})"),
            })
    }
}

/// The first `"` of `s` not escaped by a `\\` (the end of a JSON string's content), found
/// 64 bytes at a time: the bytes equal to `\\` and to `"` as bit masks (eight bytes per
/// word, without a branch), and the bytes escaped by odd runs of `\\` from them, carried
/// across blocks as simdjson does. Several times faster than a byte loop on log text, where
/// an escape comes every few bytes.
fn closing_quote(s: &[u8]) -> Option<usize> {
    let mut odd_run_ends = false;
    let mut blocks = s.chunks_exact(64);
    let mut base = 0;
    for block in &mut blocks {
        if let Some(at) = block_quote(block, &mut odd_run_ends) {
            return Some(base + at);
        }
        base += 64;
    }
    let mut last = [0u8; 64];
    let rest = blocks.remainder();
    last[..rest.len()].copy_from_slice(rest);
    block_quote(&last, &mut odd_run_ends).map(|at| base + at)
}

/// [`closing_quote`] in one block of 64 bytes; `odd_run_ends` says whether the block before
/// ended in an odd run of `\\` (which escapes this block's first byte).
fn block_quote(block: &[u8], odd_run_ends: &mut bool) -> Option<usize> {
    const EVEN: u64 = 0x5555_5555_5555_5555;
    let (mut slashes, mut quotes) = (0u64, 0u64);
    for (k, word) in block.chunks_exact(8).enumerate() {
        let mut w = [0u8; 8];
        w.copy_from_slice(word);
        let w = u64::from_le_bytes(w);
        slashes |= bytes_equal(w, b'\\') << (8 * k);
        quotes |= bytes_equal(w, b'"') << (8 * k);
    }
    // The bytes escaped: each ends a run of `\\` of odd length (simdjson,
    // `find_odd_backslash_sequences`).
    let carried = u64::from(*odd_run_ends);
    let starts = slashes & !(slashes << 1);
    let even_start = EVEN ^ carried;
    let (odd_carries, overflow) = slashes.overflowing_add(starts & !even_start);
    let even_carries = slashes.wrapping_add(starts & even_start);
    *odd_run_ends = overflow;
    let escaped = (even_carries & !slashes & !EVEN) | ((odd_carries | carried) & !slashes & EVEN);
    let open = quotes & !escaped;
    (open != 0).then(|| open.trailing_zeros() as usize)
}

/// One bit per byte of the little-endian word `w` (byte 0 → bit 0): whether it equals `b`.
fn bytes_equal(w: u64, b: u8) -> u64 {
    const LOW: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let x = w ^ (LOW * u64::from(b));
    // The high bit of each byte of `x` that is zero (exact: no borrow between bytes).
    let zero = !(((x & !HIGH).wrapping_add(!HIGH)) | x) & HIGH;
    // The eight high bits gathered into the top byte, then shifted down.
    ((zero >> 7).wrapping_mul(0x0102_0408_1020_4080)) >> 56
}

/// Whether the `\\` at `at` starts an escape: an even number of `\\` before it.
fn escapes_from(sent: &[u8], at: usize) -> bool {
    sent[..at].iter().rev().take_while(|&&b| b == b'\\').count() % 2 == 0
}

fn skip_ws(b: &[u8]) -> &[u8] {
    let n = b
        .iter()
        .take_while(|c| matches!(c, b' ' | b'\t' | b'\n' | b'\r'))
        .count();
    &b[n..]
}

/// The content of a JSON string literal (between its quotes) decoded, as serde_json decodes
/// it; `None` for a control character, a malformed escape or a lone surrogate.
fn unescape_json(raw: &str) -> Option<String> {
    // Without an early exit, so that it is vectorised.
    if raw
        .as_bytes()
        .chunks(64)
        .any(|c| c.iter().fold(false, |any, &b| any | (b < 0x20)))
    {
        return None;
    }
    let mut out = String::with_capacity(raw.len());
    let mut rest = raw;
    while let Some(at) = memchr::memchr(b'\\', rest.as_bytes()) {
        out.push_str(&rest[..at]);
        let esc = rest.as_bytes().get(at + 1)?;
        let mut used = 2;
        match esc {
            b'"' => out.push('"'),
            b'\\' => out.push('\\'),
            b'/' => out.push('/'),
            b'b' => out.push('\u{8}'),
            b'f' => out.push('\u{c}'),
            b'n' => out.push('\n'),
            b'r' => out.push('\r'),
            b't' => out.push('\t'),
            b'u' => {
                let code = hex4(rest.get(at + 2..at + 6)?)?;
                if (0xD800..0xDC00).contains(&code) {
                    // A surrogate pair: `\uD83D\uDE00`.
                    let low = hex4(rest.get(at + 6..at + 12)?.strip_prefix("\\u")?)?;
                    if !(0xDC00..0xE000).contains(&low) {
                        return None;
                    }
                    out.push(char::from_u32(
                        0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00),
                    )?);
                    used = 12;
                } else {
                    // A lone low surrogate is not a char: `None`.
                    out.push(char::from_u32(code)?);
                    used = 6;
                }
            }
            _ => return None,
        }
        rest = &rest[at + used..];
    }
    out.push_str(rest);
    Some(out)
}

/// Four hexadecimal digits.
fn hex4(h: &str) -> Option<u32> {
    if h.len() != 4 || !h.bytes().all(|c| c.is_ascii_hexdigit()) {
        return None;
    }
    u32::from_str_radix(h, 16).ok()
}

/// `GET /rft/runs/{id}/env-servers` (snake_case).
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
pub struct EnvServersResponse {
    /// Environment server pods.
    #[serde(default, deserialize_with = "null_default")]
    pub env_servers: Vec<EnvServer>,
}

/// One environment server pod.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
pub struct EnvServer {
    /// Environment name.
    #[serde(default)]
    pub env_name: Option<String>,
    /// Index of the environment.
    #[serde(default)]
    pub env_index: Option<i64>,
    /// Pod name.
    pub pod_name: String,
    /// Pod status (e.g. `Running`).
    pub status: String,
}

/// `GET /rft/runs/{id}/progress` (camelCase on the wire).
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ProgressResponse {
    /// Latest step.
    #[serde(default)]
    pub latest_step: Option<i64>,
    /// Steps with rollout samples.
    #[serde(default, deserialize_with = "null_default")]
    pub steps_with_samples: Vec<i64>,
    /// Steps with distributions.
    #[serde(default, deserialize_with = "null_default")]
    pub steps_with_distributions: Vec<i64>,
    /// Last update, as sent.
    #[serde(default)]
    pub last_updated_at: Option<String>,
}

/// `GET /rft/runs/{id}/samples` (snake_case); the CLI fills in defaults for missing keys.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
pub struct SamplesResponse {
    /// Run id.
    #[serde(default)]
    pub run_id: Option<String>,
    /// Sample objects (opaque).
    #[serde(default, deserialize_with = "null_default")]
    pub samples: Vec<Value>,
    /// Total samples at this step.
    #[serde(default)]
    pub total: Option<u64>,
    /// Page.
    #[serde(default)]
    pub page: Option<u64>,
    /// Page size.
    #[serde(default)]
    pub limit: Option<u64>,
    /// Number of pages.
    #[serde(default)]
    pub total_pages: Option<u64>,
}

/// `GET /rft/runs/{id}/distributions`, normalised: `bins` from `bins`,
/// `chartData.histogramData` or `chart_data.histogramData`.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct DistributionsResponse {
    /// Histogram bins (opaque).
    pub bins: Vec<Value>,
    /// Step.
    pub step: Option<i64>,
}

impl<'de> Deserialize<'de> for DistributionsResponse {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let map = Map::<String, Value>::deserialize(d)?;
        let histogram = |key: &str| {
            map.get(key)
                .and_then(|c| c.get("histogramData"))
                .and_then(Value::as_array)
                .cloned()
        };
        let bins = map
            .get("bins")
            .and_then(Value::as_array)
            .cloned()
            .or_else(|| histogram("chartData"))
            .or_else(|| histogram("chart_data"))
            .unwrap_or_default();
        let step = map.get("step").and_then(Value::as_i64);
        Ok(DistributionsResponse { bins, step })
    }
}

/// `GET /rft/runs/{id}/checkpoints` → `{"checkpoints": [...]}`.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
pub struct CheckpointsResponse {
    /// Checkpoints.
    #[serde(default, deserialize_with = "null_default")]
    pub checkpoints: Vec<Checkpoint>,
}

/// Checkpoint metadata (camelCase on the wire).
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Checkpoint {
    /// Checkpoint id.
    pub id: String,
    /// Run id.
    pub rft_run_id: String,
    /// Training step.
    pub step: i64,
    /// Storage URL (`s3://…`).
    pub storage_url: String,
    /// `READY`, `PENDING`, `UPLOADING`, `FAILED`.
    pub status: String,
    /// Size in bytes.
    #[serde(default)]
    pub size_bytes: Option<u64>,
    /// Creation time, as sent.
    pub created_at: String,
    /// Upload time, as sent.
    #[serde(default)]
    pub uploaded_at: Option<String>,
}

/// `GET /billing/runs/{id}/usage` (snake_case).
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
pub struct RunUsage {
    /// Run id.
    #[serde(default)]
    pub run_id: Option<String>,
    /// Run name.
    #[serde(default)]
    pub run_name: Option<String>,
    /// Base model.
    #[serde(default)]
    pub base_model: Option<String>,
    /// Status.
    #[serde(default)]
    pub status: Option<String>,
    /// Training usage.
    #[serde(default)]
    pub training: Option<UsageBucket>,
    /// Inference usage.
    #[serde(default)]
    pub inference: Option<UsageBucket>,
    /// Total tokens.
    #[serde(default)]
    pub total_tokens: Option<u64>,
    /// Total cost in USD.
    #[serde(default)]
    pub total_cost_usd: Option<f64>,
    /// Prices per million tokens.
    #[serde(default)]
    pub pricing: Option<UsagePricing>,
    /// Number of usage records.
    #[serde(default)]
    pub record_count: Option<u64>,
    /// Other fields.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// Token and cost counters of one usage bucket.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
pub struct UsageBucket {
    /// Tokens.
    #[serde(default)]
    pub tokens: Option<u64>,
    /// Input tokens.
    #[serde(default)]
    pub input_tokens: Option<u64>,
    /// Output tokens.
    #[serde(default)]
    pub output_tokens: Option<u64>,
    /// Cost in USD.
    #[serde(default)]
    pub cost_usd: Option<f64>,
}

/// Usage prices (USD per million tokens).
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
pub struct UsagePricing {
    /// Training.
    #[serde(default)]
    pub training_per_mtok: Option<f64>,
    /// Inference input.
    #[serde(default)]
    pub inference_input_per_mtok: Option<f64>,
    /// Inference output.
    #[serde(default)]
    pub inference_output_per_mtok: Option<f64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kept(body: &[u8]) -> Option<LogsBody> {
        LogsBody::from_plain_body(&bytes::Bytes::copy_from_slice(body))
    }

    /// The logs body decodes as serde_json does wherever serde_json answers and fails wherever
    /// it fails; the plain `{"logs": "..."}` bodies the platform sends are kept as sent.
    #[test]
    fn the_logs_body_decodes_as_serde_json_does() {
        let by_serde = |b: &[u8]| {
            serde_json::from_slice::<LogsResponse>(b)
                .ok()
                .map(|r| r.logs)
        };
        let plain: &[&str] = &[
            r#"{"logs":""}"#,
            r#"{"logs":"a\nb"}"#,
            " {\n \"logs\" : \"x\\\"y\\\\z\\/\\b\\f\\r\\t\\u0041\\u00e9\\u20ac\\u0000\" } \n",
            r#"{"logs":"\u00E9t\u00e9 — ünïcödé 日本 😀"}"#,
            r#"{"logs":"ends with a backslash \\"}"#,
            r#"{"logs":"\ud83d\ude00 \uD83D\uDE00"}"#,
        ];
        for body in plain {
            let fast = kept(body.as_bytes()).expect("plain body kept");
            assert!(by_serde(body.as_bytes()).is_some(), "{body}");
            assert_eq!(fast.text().ok(), by_serde(body.as_bytes()), "{body}");
        }
        // Plain in shape but not well-formed: kept, and failing as serde_json fails.
        let malformed: &[&[u8]] = &[
            br#"{"logs":"\ud83d"}"#,
            br#"{"logs":"\ud83d\u0041"}"#,
            br#"{"logs":"\ude00"}"#,
            br#"{"logs":"\x"}"#,
            br#"{"logs":"\u12"}"#,
            br#"{"logs":"\u12g4"}"#,
            b"{\"logs\":\"a\nb\"}",
            b"{\"logs\":\"a\tb\"}",
            b"{\"logs\":\"\xff\"}",
        ];
        for body in malformed {
            let shown = String::from_utf8_lossy(body);
            let fast = kept(body).expect("kept");
            assert_eq!(by_serde(body), None, "{shown}");
            assert!(fast.text().is_err(), "{shown}");
        }
        // Any other shape is left to serde_json.
        let other: &[&[u8]] = &[
            br#"{"logs":null}"#,
            br#"{}"#,
            br#"{"logs":"a","other":1}"#,
            br#"{"other":1,"logs":"a"}"#,
            br#"{"logs":"a"} x"#,
            br#"{"logs":"unterminated}"#,
            br#"{"logs":"a\"#,
            br#"{"\u006cogs":"a"}"#,
            br#"[]"#,
        ];
        for body in other {
            assert!(kept(body).is_none(), "{}", String::from_utf8_lossy(body));
        }
        // Random strings, serialised by serde_json: kept and decoded alike.
        for text in random_texts(500) {
            let body = serde_json::to_vec(&serde_json::json!({ "logs": text })).unwrap();
            let fast = kept(&body).expect("plain body");
            assert_eq!(fast.text().unwrap(), text);
            assert_eq!(Some(text), by_serde(&body));
        }
    }

    /// The block-wise search for the closing quote finds what a byte loop finds, across
    /// block edges and runs of `\\` of every length.
    #[test]
    fn the_closing_quote_is_found_as_a_byte_loop_finds_it() {
        let by_loop = |s: &[u8]| {
            let mut i = 0;
            while i < s.len() {
                match s[i] {
                    b'"' => return Some(i),
                    b'\\' => i += 2,
                    _ => i += 1,
                }
            }
            None
        };
        let mut seed = 0x9E37_79B9_7F4A_7C15u64;
        for n in 0..20_000 {
            let len = n % 300;
            let s: Vec<u8> = (0..len)
                .map(|_| {
                    seed ^= seed << 13;
                    seed ^= seed >> 7;
                    seed ^= seed << 17;
                    // Mostly backslashes, so that long runs cross the block edges.
                    [b'\\', b'\\', b'\\', b'"', b'a', 0x80][(seed % 6) as usize]
                })
                .collect();
            assert_eq!(
                closing_quote(&s),
                by_loop(&s),
                "{:?}",
                String::from_utf8_lossy(&s)
            );
        }
        for run in 0..200 {
            let mut s = vec![b'\\'; run];
            s.push(b'"');
            s.push(b'"');
            assert_eq!(closing_quote(&s), by_loop(&s), "a run of {run}");
        }
    }

    /// Texts of the characters that sit on the edges of the escaping.
    fn random_texts(n: usize) -> Vec<String> {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let alphabet: Vec<char> = "abn \n\n\t\r\"\\/\u{0}\u{1f}\u{7f}é€😀\u{2028}{}:,"
            .chars()
            .collect();
        (0..n)
            .map(|_| {
                let mut text = String::new();
                for _ in 0..(seed % 60) {
                    seed ^= seed << 13;
                    seed ^= seed >> 7;
                    seed ^= seed << 17;
                    text.push(alphabet[(seed % alphabet.len() as u64) as usize]);
                }
                text
            })
            .collect()
    }

    /// Walking back from the end by line starts cuts the text as sent (as serde_json writes
    /// it) at its line feeds and nowhere else, whatever escapes surround them (`\\n` is a backslash and an `n`); the
    /// pieces decode to the text's lines.
    #[test]
    fn line_starts_are_found_in_the_text_as_sent() {
        let texts = random_texts(500).into_iter().chain([
            "\\n\\\\n\n\\\n\\\\\nn".to_string(),
            "\n\n".to_string(),
            String::new(),
        ]);
        for text in texts {
            let body = serde_json::to_vec(&serde_json::json!({ "logs": text })).unwrap();
            let sent = kept(&body).unwrap();
            let decoded_too = LogsBody::from_text(text.clone());
            for b in [&sent, &decoded_too] {
                let mut pieces = Vec::new();
                let mut end = b.len();
                while end > 0 {
                    let start = b.line_start(end - 1);
                    assert!(start < end);
                    pieces.push(b.decode(start..end).expect("a line decodes"));
                    end = start;
                }
                pieces.reverse();
                assert_eq!(pieces.concat(), text);
                for (i, p) in pieces.iter().enumerate() {
                    let feeds = p.matches('\n').count();
                    if i + 1 < pieces.len() {
                        assert!(p.ends_with('\n') && feeds == 1, "{p:?} of {text:?}");
                    } else {
                        assert!(feeds <= 1 && (feeds == 0 || p.ends_with('\n')), "{p:?}");
                    }
                }
            }
        }
    }

    #[test]
    fn an_escaped_letter_is_noticed() {
        let body = kept(br#"{"logs":"caf\u00e9 \u00E9\n\u0041KIA \\u0041"}"#).unwrap();
        let at = body.len() - br#" \\u0041"#.len();
        assert!(!body.hides_letters(20), "é is not a letter of a literal");
        assert!(body.hides_letters(at), "\\u0041 is an A");
        let escaped_backslash = kept(br#"{"logs":"\\u0041"}"#).unwrap();
        assert!(!escaped_backslash.hides_letters(escaped_backslash.len()));
        assert!(!LogsBody::from_text("\\u0041".into()).hides_letters(6));
    }

    #[test]
    fn unknown_statuses_are_kept_and_known_ones_read_case_insensitively() {
        assert_eq!(RunStatus::parse("running"), RunStatus::Running);
        assert_eq!(
            RunStatus::parse("WARMING_UP"),
            RunStatus::Other("WARMING_UP".into())
        );
        assert_eq!(RunStatus::parse("WARMING_UP").as_str(), "WARMING_UP");
        assert!(RunStatus::parse("Pausing").is_active());
        assert!(!RunStatus::parse("WARMING_UP").is_active());
        assert!(RunStatus::parse("paused").is_terminal());
        for k in RunStatus::KNOWN {
            assert_eq!(RunStatus::parse(k.as_str()), k);
        }
    }

    #[test]
    fn a_run_spec_serialises_as_the_create_request_without_secrets() {
        let mut config = Map::new();
        config.insert("name".into(), json!("r"));
        let spec = RunSpec {
            config,
            sft: true,
            name: Some("r".into()),
            team_id: Some("t".into()),
            image_tag: Some("i".into()),
            gpu_type: Some("g".into()),
            volume: Some("v".into()),
            source_ref: Some("s".into()),
        };
        let stored = serde_json::to_string(&spec).unwrap();
        let wire = serde_json::to_string(&spec.clone().into_request(None, None)).unwrap();
        assert_eq!(stored, wire);
        assert_eq!(
            stored,
            r#"{"config":{"name":"r"},"mode":"sft","name":"r","teamId":"t","imageTag":"i","gpuType":"g","volume":"v","sourceRef":"s"}"#
        );
        let back: RunSpec = serde_json::from_str(&stored).unwrap();
        assert_eq!(back, spec);
        let rl: RunSpec = serde_json::from_str(r#"{"config":{}}"#).unwrap();
        assert!(!rl.sft);
    }

    /// The wire names of every [`RlRun`] field, and the ones [`RunHead`] reads.
    const RUN_FIELDS: [&str; 42] = [
        "id",
        "userId",
        "status",
        "createdAt",
        "updatedAt",
        "name",
        "teamId",
        "rftClusterId",
        "primeClusterId",
        "kind",
        "rolloutsPerExample",
        "seqLen",
        "maxSteps",
        "maxTokens",
        "batchSize",
        "loss",
        "teacher",
        "teacherConfig",
        "baseModel",
        "environments",
        "runConfig",
        "evalConfig",
        "valConfig",
        "bufferConfig",
        "learningRate",
        "oversamplingFactor",
        "loraAlpha",
        "maxInflightRollouts",
        "maxAsyncLevel",
        "gpuCount",
        "runsAhead",
        "volumeName",
        "wandbEntity",
        "wandbProject",
        "wandbRunName",
        "queueReason",
        "notice",
        "errorMessage",
        "sourceCommit",
        "startedAt",
        "completedAt",
        "failureAnalysis",
    ];
    const HEAD_FIELDS: [&str; 14] = [
        "id",
        "userId",
        "status",
        "createdAt",
        "updatedAt",
        "name",
        "teamId",
        "kind",
        "baseModel",
        "maxSteps",
        "gpuCount",
        "startedAt",
        "completedAt",
        "errorMessage",
    ];

    fn head_of(r: &RlRun) -> RunHead {
        RunHead {
            id: r.id.clone(),
            user_id: r.user_id.clone(),
            status: r.status.clone(),
            created_at: r.created_at.clone(),
            updated_at: r.updated_at.clone(),
            name: r.name.clone(),
            team_id: r.team_id.clone(),
            kind: r.kind.clone(),
            base_model: r.base_model.clone(),
            max_steps: r.max_steps,
            gpu_count: r.gpu_count,
            started_at: r.started_at.clone(),
            completed_at: r.completed_at.clone(),
            error_message: r.error_message.clone(),
        }
    }

    /// The value a field of [`RUN_FIELDS`] reads as: text, an integer, a number, any JSON, a
    /// list, or a failure analysis.
    fn valid_value(field: &str) -> proptest::strategy::BoxedStrategy<String> {
        use proptest::prelude::*;
        let text = prop_oneof![
            Just(r#""cx0""#.to_string()),
            Just(r#""2026-01-02T03:04:05.000Z""#.to_string()),
            Just(r#""\u00e9\n\"""#.to_string()),
            Just("null".to_string()),
        ];
        match field {
            "rolloutsPerExample"
            | "seqLen"
            | "maxSteps"
            | "maxTokens"
            | "batchSize"
            | "loraAlpha"
            | "maxInflightRollouts"
            | "maxAsyncLevel"
            | "gpuCount"
            | "runsAhead" => prop_oneof![
                (-3i64..300).prop_map(|n| n.to_string()),
                Just("null".into())
            ]
            .boxed(),
            "learningRate" | "oversamplingFactor" => prop_oneof![
                Just("2.5e-5".to_string()),
                Just("3".into()),
                Just("null".into())
            ]
            .boxed(),
            "teacher" | "teacherConfig" | "runConfig" | "evalConfig" | "valConfig"
            | "bufferConfig" => prop_oneof![
                Just(r#"{"a": [1, {"b": "c"}]}"#.to_string()),
                Just("[true, 2.5]".into()),
                Just("null".into()),
            ]
            .boxed(),
            "environments" => prop_oneof![
                Just(r#"[{"id": "e"}, "x"]"#.to_string()),
                Just("[]".into()),
                Just("null".into()),
            ]
            .boxed(),
            "failureAnalysis" => prop_oneof![
                Just(r#"{"rootCause": "x", "evidence": ["a"], "confidence": 0.5}"#.to_string()),
                Just(r#"{"evidence": null, "more": 1}"#.into()),
                Just("null".into()),
            ]
            .boxed(),
            _ => text.boxed(),
        }
    }

    /// A run object's text, and the same object with only the fields [`RunHead`] reads. Each
    /// field mostly has a value of its type (the required ones are mostly present and text),
    /// and sometimes a value of any kind; unknown fields and fields sent twice come too.
    fn run_texts() -> impl proptest::strategy::Strategy<Value = (String, String)> {
        use proptest::prelude::*;
        let any = prop_oneof![
            Just(r#""cx0""#.to_string()),
            (-3i64..3).prop_map(|n| n.to_string()),
            Just("2.5".to_string()),
            Just("1e400".to_string()),
            Just("null".to_string()),
            Just("true".to_string()),
            Just("[]".to_string()),
            Just(r#"["s", 1, {"a": null}]"#.to_string()),
            Just(r#"{"a": [1, {"b": "c"}], "rootCause": "x", "evidence": null}"#.to_string()),
        ];
        let field = move |name: String| {
            prop_oneof![11 => valid_value(&name), 1 => any.clone()]
                .prop_map(move |v| (name.clone(), v))
        };
        let required = proptest::collection::vec(
            prop_oneof![
                15 => Just(Some(r#""r1""#.to_string())),
                1 => proptest::option::of(Just("7".to_string())),
            ],
            5,
        );
        // Any field of a run; as often, one the list shows; now and then an unknown one.
        let name = prop_oneof![
            6 => (0..RUN_FIELDS.len()).prop_map(|i| RUN_FIELDS[i].to_string()),
            6 => (5..HEAD_FIELDS.len()).prop_map(|i| HEAD_FIELDS[i].to_string()),
            1 => Just("somethingNew".to_string()),
        ];
        let others = proptest::collection::vec(name.prop_flat_map(field), 0..8);
        (required, others).prop_map(|(required, others)| {
            let fields: Vec<(String, String)> = RUN_FIELDS[..5]
                .iter()
                .zip(required)
                .filter_map(|(n, v)| v.map(|v| (n.to_string(), v)))
                .chain(others)
                .collect();
            let object = |keep: &dyn Fn(&str) -> bool| {
                let body: Vec<String> = fields
                    .iter()
                    .filter(|(n, _)| keep(n))
                    .map(|(n, v)| format!("\"{n}\": {v}"))
                    .collect();
                format!("{{{}}}", body.join(", "))
            };
            (object(&|_| true), object(&|n| HEAD_FIELDS.contains(&n)))
        })
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2048))]
        /// A [`RunHead`] reads what an [`RlRun`] reads of its fields, and fails where the
        /// fields it reads fail an [`RlRun`]: wherever a run reads whole, its head reads and
        /// equals the run's fields; a head reads exactly when the object cut to its fields
        /// reads as a run, and then equals it.
        #[test]
        fn a_run_head_reads_what_the_run_reads((full, cut) in run_texts()) {
            let head = serde_json::from_str::<RunHead>(&full);
            if let Ok(run) = serde_json::from_str::<RlRun>(&full) {
                proptest::prop_assert_eq!(head.as_ref().ok(), Some(&head_of(&run)), "{}", full);
            }
            let cut_run = serde_json::from_str::<RlRun>(&cut);
            proptest::prop_assert_eq!(head.is_ok(), cut_run.is_ok(), "{} / {}", full, cut);
            if let (Ok(h), Ok(r)) = (head, cut_run) {
                proptest::prop_assert_eq!(h, head_of(&r), "{}", full);
            }
        }
    }

    /// The generator of [`run_texts`] reaches what the property must see: whole runs that read
    /// (the only cases where a head is compared with a whole run), ones that carry fields the
    /// list shows, and ones that fail.
    #[test]
    fn run_texts_reach_runs_that_read_and_runs_that_fail() {
        use proptest::strategy::{Strategy, ValueTree};
        let mut runner = proptest::test_runner::TestRunner::deterministic();
        let strategy = run_texts();
        let (mut whole, mut shown, mut failed) = (0, 0, 0);
        for _ in 0..1000 {
            let (full, _) = strategy.new_tree(&mut runner).unwrap().current();
            match serde_json::from_str::<RlRun>(&full) {
                Ok(r) => {
                    whole += 1;
                    let h = head_of(&r);
                    let optional = [
                        h.name.is_some(),
                        h.team_id.is_some(),
                        h.kind.is_some(),
                        h.base_model.is_some(),
                        h.max_steps.is_some(),
                        h.gpu_count.is_some(),
                        h.started_at.is_some(),
                        h.completed_at.is_some(),
                        h.error_message.is_some(),
                    ];
                    if optional.contains(&true) {
                        shown += 1;
                    }
                }
                Err(_) => failed += 1,
            }
        }
        assert!(
            whole >= 300 && shown >= 150 && failed >= 300,
            "{whole} {shown} {failed}"
        );
    }

    /// A page of heads reads a page as sent, null runs as none.
    #[test]
    fn a_page_of_heads_reads() {
        let page: RunPage<RunHead> = serde_json::from_str(
            r#"{"runs": [{"id": "r1", "userId": "u", "status": "RUNNING", "createdAt": "c",
                "updatedAt": "u", "runConfig": {"a": [1, 2]}, "environments": [{"id": "e"}]}],
                "total": 1, "page": 1, "limit": 20, "total_pages": 1}"#,
        )
        .unwrap();
        assert_eq!(page.runs[0].id, "r1");
        assert_eq!(page.runs[0].run_status(), RunStatus::Running);
        assert_eq!(page.total, Some(1));
        let empty: RunPage<RunHead> = serde_json::from_str(r#"{"runs": null}"#).unwrap();
        assert!(empty.runs.is_empty());
        // The one shape a head reads and a whole run does not (see [`RunHead`]): a list of the
        // fields in order. A value of any other kind fails both.
        let listed = r#"["r1", "u", "RUNNING", "c", "u"]"#;
        assert_eq!(serde_json::from_str::<RunHead>(listed).unwrap().id, "r1");
        assert!(serde_json::from_str::<RlRun>(listed).is_err());
        for other in [r#""r1""#, "1", "null", "true"] {
            assert!(serde_json::from_str::<RunHead>(other).is_err(), "{other}");
            assert!(serde_json::from_str::<RlRun>(other).is_err(), "{other}");
        }
    }
}
