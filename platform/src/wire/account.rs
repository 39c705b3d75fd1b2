//! Account wire types: `whoami`, teams, models with clusters and on-demand prices, GPU types.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::null_default;

/// `GET /user/whoami` → `{"data": {...}}`. `data` must be an object; its fields are optional.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
pub struct WhoamiResponse {
    /// The user.
    pub data: WhoamiUser,
}

/// The user behind the API key (snake_case on the wire).
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
pub struct WhoamiUser {
    /// User id (`cuser…`).
    #[serde(default)]
    pub id: Option<String>,
    /// E-mail.
    #[serde(default)]
    pub email: Option<String>,
    /// Display name.
    #[serde(default)]
    pub name: Option<String>,
    /// Slug.
    #[serde(default)]
    pub slug: Option<String>,
    /// Key scopes: `{"<scope>": {"read": bool, "write": bool} | null}`.
    #[serde(default)]
    pub scope: Option<Map<String, Value>>,
    /// Account limits (opaque).
    #[serde(default)]
    pub account_limits: Option<Value>,
    /// Key limits (opaque).
    #[serde(default)]
    pub key_limits: Option<Value>,
    /// Any other field the server sends.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `GET /user/teams?offset&limit` → `{"data": [Team], "total_count": n}`.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
pub struct TeamsPage {
    /// Teams of this page.
    #[serde(default, deserialize_with = "null_default")]
    pub data: Vec<Team>,
    /// Total number of teams.
    #[serde(default)]
    pub total_count: Option<u64>,
}

/// A team the user belongs to (camelCase on the wire).
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Team {
    /// Team id (`cteam…`).
    pub team_id: String,
    /// Name.
    pub name: String,
    /// Slug.
    #[serde(default)]
    pub slug: Option<String>,
    /// The user's role (`ADMIN`, `MEMBER`, …).
    #[serde(default)]
    pub role: Option<String>,
    /// Creation time, as sent.
    #[serde(default)]
    pub created_at: Option<String>,
    /// Any other field.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `GET /training/available-fft-models` (a 404 reads as the empty default).
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AvailableModels {
    /// Models that can be fully fine-tuned, with the clusters that serve them.
    #[serde(default, deserialize_with = "null_default")]
    pub models: Vec<FftModel>,
    /// On-demand GPU offers with prices.
    #[serde(default, deserialize_with = "null_default")]
    pub on_demand: Vec<OnDemandOffer>,
    /// Whether the account may use on-demand (beta) capacity; `None` when not sent.
    #[serde(default)]
    pub on_demand_beta_access: Option<bool>,
}

/// A model and the clusters it can run on.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
pub struct FftModel {
    /// Model name, e.g. `Qwen/Qwen3-4B`.
    pub name: String,
    /// Clusters (reserved capacity) serving it.
    #[serde(default, deserialize_with = "null_default")]
    pub clusters: Vec<ModelCluster>,
}

/// A cluster serving a model.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelCluster {
    /// Cluster id.
    pub cluster_id: String,
    /// Cluster name.
    pub cluster_name: String,
    /// GPU type of the cluster.
    #[serde(default)]
    pub gpu_type: Option<String>,
}

/// An on-demand GPU offer.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OnDemandOffer {
    /// GPU type, e.g. `H200_141GB`.
    pub gpu_type: String,
    /// Price in USD per GPU-hour.
    pub price_per_gpu_hour: f64,
    /// Discount label, if any.
    #[serde(default)]
    pub discount_label: Option<String>,
    /// Whether capacity is available now.
    #[serde(default)]
    pub available_now: Option<bool>,
    /// Whether the offer is beta.
    #[serde(default)]
    pub is_beta: Option<bool>,
}

/// `GET /training/available-gpu-types` → `{"gpuTypes": [...]}`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GpuTypes {
    /// GPU type names.
    #[serde(default, deserialize_with = "null_default")]
    pub gpu_types: Vec<String>,
}
