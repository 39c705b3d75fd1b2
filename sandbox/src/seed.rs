//! The seeded world: users with API keys, teams, trainable models with clusters, GPU types with
//! prices, and optional pre-existing volumes and runs. A seed file (JSON or TOML) replaces or
//! extends the defaults.

use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::SandboxError;

/// API key of the first seeded user (Alice): a member of both seeded teams.
pub const ALICE_API_KEY: &str = "sandbox-key-alice-0001";
/// API key of the second seeded user (Bob): a member of the second team only.
pub const BOB_API_KEY: &str = "sandbox-key-bob-0002";
/// Alice's user id.
pub const ALICE_USER_ID: &str = "cuseralice000000000000001";
/// Bob's user id.
pub const BOB_USER_ID: &str = "cuserbob00000000000000002";
/// The first seeded team (Alice is ADMIN; Bob is not a member); custom source refs allowed.
pub const TEAM_ALPHA_ID: &str = "cteamalpha000000000000001";
/// The second seeded team (Alice is MEMBER, Bob is ADMIN); custom source refs refused (403).
pub const TEAM_BETA_ID: &str = "cteambeta0000000000000002";
/// API key of the third seeded user (Carol): the only member of Team Gamma.
pub const CAROL_API_KEY: &str = "sandbox-key-carol-0003";
/// Carol's user id.
pub const CAROL_USER_ID: &str = "cusercarol000000000000003";
/// The third seeded team (Carol is ADMIN): a reserved cluster of [`RESERVED_GPU_TYPE`] and
/// custom source refs (`sourceRef`) allowed.
pub const TEAM_GAMMA_ID: &str = "cteamgamma000000000000003";
/// API key of the fourth seeded user (Dave): no team, and no on-demand beta access.
pub const DAVE_API_KEY: &str = "sandbox-key-dave-0004";
/// Dave's user id.
pub const DAVE_USER_ID: &str = "cuserdave0000000000000004";
/// The GPU type of Team Gamma's reserved cluster: it has no on-demand offer.
pub const RESERVED_GPU_TYPE: &str = "A100_80GB";
/// Team Gamma's reserved cluster.
pub const GAMMA_CLUSTER_ID: &str = "cclustera100000000000004";
/// Team Gamma's volume that holds the weights of an uncached model ([`GAMMA_VOLUME_MODEL`]).
pub const GAMMA_WEIGHTS_VOLUME: &str = "gamma-weights";
/// The model whose weights are on [`GAMMA_WEIGHTS_VOLUME`] (on the Hub, cached nowhere).
pub const GAMMA_VOLUME_MODEL: &str = "Qwen/Qwen3-1.7B";
/// A model on the Hugging Face Hub that no cluster caches (downloads at start on on-demand).
pub const HUB_MODEL: &str = "Qwen/Qwen3-1.7B";
/// A gated Hub model that no cluster caches: without `HF_TOKEN` a run of it fails at start.
pub const GATED_HUB_MODEL: &str = "meta-llama/Llama-3.2-1B-Instruct";

/// Everything the sandbox starts with.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Seed {
    pub users: Vec<SeedUser>,
    pub teams: Vec<SeedTeam>,
    pub models: Vec<SeedModel>,
    pub gpus: Vec<SeedGpu>,
    #[serde(default)]
    pub volumes: Vec<SeedVolume>,
    #[serde(default)]
    pub runs: Vec<SeedRun>,
    #[serde(default)]
    pub timings: Timings,
    /// Models on the Hugging Face Hub that are not in the trainable list (invention).
    #[serde(default)]
    pub hub_models: Vec<SeedHubModel>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SeedUser {
    pub id: String,
    pub name: String,
    pub email: String,
    pub slug: String,
    pub api_key: String,
    /// `onDemandBetaAccess` of the personal account: without it, on-demand runs are 403.
    #[serde(default = "yes")]
    pub on_demand_beta_access: bool,
}

fn yes() -> bool {
    true
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SeedTeam {
    pub id: String,
    pub name: String,
    pub slug: String,
    /// ISO-8601.
    pub created_at: String,
    pub members: Vec<SeedMember>,
    /// May dispatch with a custom `sourceRef` (the platform's allowlist); others get 403.
    #[serde(default)]
    pub source_ref_access: bool,
    /// `onDemandBetaAccess` of the team: without it, on-demand runs are 403.
    #[serde(default = "yes")]
    pub on_demand_beta_access: bool,
    /// Clusters reserved for this team (visible and usable only with its `team_id`).
    #[serde(default)]
    pub reserved_clusters: Vec<SeedReservedCluster>,
}

/// A cluster reserved for one team, with the models cached on it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SeedReservedCluster {
    pub cluster_id: String,
    pub cluster_name: String,
    pub gpu_type: String,
    #[serde(default = "default_memory_gb")]
    pub memory_gb: f64,
    /// Models whose weights are cached on the cluster (the only ones it can run without
    /// weights on a volume).
    #[serde(default)]
    pub cached_models: Vec<String>,
}

fn default_memory_gb() -> f64 {
    80.0
}

/// A model that exists on the Hugging Face Hub but is cached on no cluster: on-demand runs
/// download it at start; a gated one needs `HF_TOKEN`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SeedHubModel {
    pub name: String,
    pub params_b: f64,
    #[serde(default)]
    pub gated: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SeedMember {
    pub user_id: String,
    /// `ADMIN` or `MEMBER`.
    pub role: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SeedModel {
    pub name: String,
    /// Parameter count in billions: decides whether a model fits on its GPUs (invention).
    pub params_b: f64,
    pub clusters: Vec<SeedCluster>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SeedCluster {
    pub cluster_id: String,
    pub cluster_name: String,
    pub gpu_type: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SeedGpu {
    pub gpu_type: String,
    pub price_per_gpu_hour: f64,
    pub memory_gb: f64,
    pub available_now: bool,
    #[serde(default)]
    pub is_beta: bool,
    #[serde(default)]
    pub discount_label: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SeedVolume {
    pub name: String,
    pub user_id: String,
    #[serde(default)]
    pub team_id: Option<String>,
    #[serde(default = "default_volume_size")]
    pub size: String,
    /// Models whose weights are on the volume (under `models/<name>/`; invention).
    #[serde(default)]
    pub models: Vec<String>,
}

fn default_volume_size() -> String {
    "5Ti".to_string()
}

/// A run that exists when the sandbox starts.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SeedRun {
    #[serde(default)]
    pub id: Option<String>,
    pub user_id: String,
    #[serde(default)]
    pub team_id: Option<String>,
    #[serde(default)]
    pub name: Option<String>,
    /// The prime-rl config as JSON (what `prime train run` sends as `config`).
    pub config: Value,
    #[serde(default)]
    pub sft: bool,
    #[serde(default)]
    pub gpu_type: Option<String>,
    #[serde(default)]
    pub volume: Option<String>,
    /// Created this many simulated seconds before the sandbox started.
    #[serde(default)]
    pub age_s: f64,
    /// Make the run's traces total this many bytes, generated on the fly when read.
    #[serde(default)]
    pub trace_bytes_total: Option<u64>,
}

/// Simulated durations (all inventions of the sandbox; the platform documents none).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Timings {
    /// Seconds a run stays QUEUED.
    pub queued_s: f64,
    /// Seconds a run stays PENDING before RUNNING.
    pub pending_s: f64,
    /// Seconds per training step.
    pub step_s: f64,
    /// Seconds before a failing run fails after it started RUNNING.
    pub fail_after_s: f64,
    /// Seconds before a new volume is RUNNING.
    pub volume_ready_s: f64,
    /// `max_steps` when the config sets none.
    pub default_max_steps: u32,
    /// Checkpoint interval (steps) when the config's `[ckpt] interval` is absent.
    pub checkpoint_interval: u32,
    /// Steps a stalling run completes before its progress freezes.
    pub stall_after_steps: u32,
    /// Train traces per step for RL runs.
    pub traces_per_step: u32,
    /// Eval traces per eval step.
    pub eval_traces_per_step: u32,
}

impl Default for Timings {
    fn default() -> Self {
        Self {
            queued_s: 2.0,
            pending_s: 3.0,
            step_s: 2.0,
            fail_after_s: 4.0,
            volume_ready_s: 3.0,
            default_max_steps: 20,
            checkpoint_interval: 5,
            stall_after_steps: 3,
            traces_per_step: 4,
            eval_traces_per_step: 2,
        }
    }
}

fn cluster(id: &str, name: &str, gpu: &str) -> SeedCluster {
    SeedCluster {
        cluster_id: id.to_string(),
        cluster_name: name.to_string(),
        gpu_type: gpu.to_string(),
    }
}

impl Default for Seed {
    fn default() -> Self {
        let users = vec![
            SeedUser {
                id: ALICE_USER_ID.into(),
                name: "Alice Sandbox".into(),
                email: "alice@sandbox.invalid".into(),
                slug: "alice".into(),
                api_key: ALICE_API_KEY.into(),
                on_demand_beta_access: true,
            },
            SeedUser {
                id: BOB_USER_ID.into(),
                name: "Bob Sandbox".into(),
                email: "bob@sandbox.invalid".into(),
                slug: "bob".into(),
                api_key: BOB_API_KEY.into(),
                on_demand_beta_access: true,
            },
            SeedUser {
                id: CAROL_USER_ID.into(),
                name: "Carol Sandbox".into(),
                email: "carol@sandbox.invalid".into(),
                slug: "carol".into(),
                api_key: CAROL_API_KEY.into(),
                on_demand_beta_access: true,
            },
            SeedUser {
                id: DAVE_USER_ID.into(),
                name: "Dave Sandbox".into(),
                email: "dave@sandbox.invalid".into(),
                slug: "dave".into(),
                api_key: DAVE_API_KEY.into(),
                on_demand_beta_access: false,
            },
        ];
        let teams = vec![
            SeedTeam {
                id: TEAM_ALPHA_ID.into(),
                name: "Team Alpha".into(),
                slug: "team-alpha".into(),
                created_at: "2026-01-02T03:04:05.000Z".into(),
                members: vec![SeedMember {
                    user_id: ALICE_USER_ID.into(),
                    role: "ADMIN".into(),
                }],
                // Team Alpha kept every ref it could launch before the allowlist existed.
                source_ref_access: true,
                on_demand_beta_access: true,
                reserved_clusters: Vec::new(),
            },
            SeedTeam {
                id: TEAM_BETA_ID.into(),
                name: "Team Beta".into(),
                slug: "team-beta".into(),
                created_at: "2026-02-03T04:05:06.000Z".into(),
                members: vec![
                    SeedMember {
                        user_id: BOB_USER_ID.into(),
                        role: "ADMIN".into(),
                    },
                    SeedMember {
                        user_id: ALICE_USER_ID.into(),
                        role: "MEMBER".into(),
                    },
                ],
                source_ref_access: false,
                on_demand_beta_access: true,
                reserved_clusters: Vec::new(),
            },
            SeedTeam {
                id: TEAM_GAMMA_ID.into(),
                name: "Team Gamma".into(),
                slug: "team-gamma".into(),
                created_at: "2026-03-04T05:06:07.000Z".into(),
                members: vec![SeedMember {
                    user_id: CAROL_USER_ID.into(),
                    role: "ADMIN".into(),
                }],
                source_ref_access: true,
                on_demand_beta_access: true,
                reserved_clusters: vec![SeedReservedCluster {
                    cluster_id: GAMMA_CLUSTER_ID.into(),
                    cluster_name: "gamma-a100-reserved".into(),
                    gpu_type: RESERVED_GPU_TYPE.into(),
                    memory_gb: 80.0,
                    cached_models: vec![
                        "PrimeIntellect/Qwen3-0.6B".into(),
                        "Qwen/Qwen3-4B-Base".into(),
                    ],
                }],
            },
        ];
        let models = vec![
            SeedModel {
                name: "PrimeIntellect/Qwen3-0.6B".into(),
                params_b: 0.6,
                clusters: vec![
                    cluster("cclusterh100000000000001", "sbx-h100-a", "H100_80GB"),
                    cluster("cclusterh200000000000002", "sbx-h200-a", "H200_141GB"),
                ],
            },
            SeedModel {
                name: "PrimeIntellect/Qwen3-0.6B-Reverse-Text-SFT".into(),
                params_b: 0.6,
                clusters: vec![cluster(
                    "cclusterh100000000000001",
                    "sbx-h100-a",
                    "H100_80GB",
                )],
            },
            SeedModel {
                name: "Qwen/Qwen3-4B-Instruct-2507".into(),
                params_b: 4.0,
                clusters: vec![
                    cluster("cclusterh200000000000002", "sbx-h200-a", "H200_141GB"),
                    cluster("cclusterb200000000000003", "sbx-b200-a", "B200_180GB"),
                ],
            },
            SeedModel {
                name: "Qwen/Qwen3-30B-A3B".into(),
                params_b: 30.0,
                clusters: vec![cluster(
                    "cclusterh200000000000002",
                    "sbx-h200-a",
                    "H200_141GB",
                )],
            },
            SeedModel {
                name: "meta-llama/Llama-3.1-70B-Instruct".into(),
                params_b: 70.0,
                clusters: vec![cluster(
                    "cclusterh100000000000001",
                    "sbx-h100-a",
                    "H100_80GB",
                )],
            },
        ];
        let gpus = vec![
            SeedGpu {
                gpu_type: "H100_80GB".into(),
                price_per_gpu_hour: 2.49,
                memory_gb: 80.0,
                available_now: true,
                is_beta: true,
                discount_label: None,
            },
            SeedGpu {
                gpu_type: "H200_141GB".into(),
                price_per_gpu_hour: 3.19,
                memory_gb: 141.0,
                available_now: true,
                is_beta: true,
                discount_label: Some("20% off".into()),
            },
            SeedGpu {
                gpu_type: "B200_180GB".into(),
                price_per_gpu_hour: 5.49,
                memory_gb: 180.0,
                available_now: false,
                is_beta: true,
                discount_label: None,
            },
        ];
        let hub = |name: &str, params_b: f64, gated: bool| SeedHubModel {
            name: name.into(),
            params_b,
            gated,
        };
        let hub_models = vec![
            hub(HUB_MODEL, 1.7, false),
            hub("Qwen/Qwen3-4B-Base", 4.0, false),
            hub(GATED_HUB_MODEL, 1.2, true),
        ];
        let volumes = vec![SeedVolume {
            name: GAMMA_WEIGHTS_VOLUME.into(),
            user_id: CAROL_USER_ID.into(),
            team_id: Some(TEAM_GAMMA_ID.into()),
            size: "1Ti".into(),
            models: vec![GAMMA_VOLUME_MODEL.into()],
        }];
        Self {
            users,
            teams,
            models,
            gpus,
            volumes,
            runs: Vec::new(),
            timings: Timings::default(),
            hub_models,
        }
    }
}

/// A seed file: `mode = "extend"` (default) adds to the defaults, replacing entries with the
/// same id/name; `mode = "replace"` makes the file the whole seed.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct SeedFile {
    #[serde(default)]
    mode: Option<String>,
    users: Option<Vec<SeedUser>>,
    teams: Option<Vec<SeedTeam>>,
    models: Option<Vec<SeedModel>>,
    gpus: Option<Vec<SeedGpu>>,
    volumes: Option<Vec<SeedVolume>>,
    runs: Option<Vec<SeedRun>>,
    timings: Option<Timings>,
    hub_models: Option<Vec<SeedHubModel>>,
}

fn merge<T>(base: &mut Vec<T>, extra: Vec<T>, key: impl Fn(&T) -> String) {
    for item in extra {
        let k = key(&item);
        if let Some(slot) = base.iter_mut().find(|b| key(b) == k) {
            *slot = item;
        } else {
            base.push(item);
        }
    }
}

impl Seed {
    /// Reads a seed file (`.toml`, else JSON) and applies it to the defaults.
    pub fn from_file(path: &Path) -> Result<Seed, SandboxError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| SandboxError::Seed(format!("cannot read {}: {e}", path.display())))?;
        let is_toml = path.extension().is_some_and(|e| e == "toml");
        let file: SeedFile = if is_toml {
            toml::from_str(&text)
                .map_err(|e| SandboxError::Seed(format!("{}: {e}", path.display())))?
        } else {
            serde_json::from_str(&text)
                .map_err(|e| SandboxError::Seed(format!("{}: {e}", path.display())))?
        };
        Seed::default().apply(file)
    }

    fn apply(mut self, file: SeedFile) -> Result<Seed, SandboxError> {
        match file.mode.as_deref().unwrap_or("extend") {
            "replace" => Ok(Seed {
                users: file.users.unwrap_or_default(),
                teams: file.teams.unwrap_or_default(),
                models: file.models.unwrap_or_default(),
                gpus: file.gpus.unwrap_or_default(),
                volumes: file.volumes.unwrap_or_default(),
                runs: file.runs.unwrap_or_default(),
                timings: file.timings.unwrap_or_default(),
                hub_models: file.hub_models.unwrap_or_default(),
            }),
            "extend" => {
                merge(&mut self.users, file.users.unwrap_or_default(), |u| {
                    u.id.clone()
                });
                merge(&mut self.teams, file.teams.unwrap_or_default(), |t| {
                    t.id.clone()
                });
                merge(&mut self.models, file.models.unwrap_or_default(), |m| {
                    m.name.clone()
                });
                merge(&mut self.gpus, file.gpus.unwrap_or_default(), |g| {
                    g.gpu_type.clone()
                });
                merge(&mut self.volumes, file.volumes.unwrap_or_default(), |v| {
                    v.name.clone()
                });
                merge(
                    &mut self.hub_models,
                    file.hub_models.unwrap_or_default(),
                    |m| m.name.clone(),
                );
                self.runs.extend(file.runs.unwrap_or_default());
                if let Some(t) = file.timings {
                    self.timings = t;
                }
                Ok(self)
            }
            other => Err(SandboxError::Seed(format!(
                "seed mode must be \"extend\" or \"replace\", not {other:?}"
            ))),
        }
    }

    pub(crate) fn user_by_key(&self, key: &str) -> Option<&SeedUser> {
        self.users.iter().find(|u| u.api_key == key)
    }

    pub(crate) fn user(&self, id: &str) -> Option<&SeedUser> {
        self.users.iter().find(|u| u.id == id)
    }

    pub(crate) fn is_member(&self, user_id: &str, team_id: &str) -> bool {
        self.teams
            .iter()
            .any(|t| t.id == team_id && t.members.iter().any(|m| m.user_id == user_id))
    }

    pub(crate) fn model(&self, name: &str) -> Option<&SeedModel> {
        self.models.iter().find(|m| m.name == name)
    }

    pub(crate) fn gpu(&self, gpu_type: &str) -> Option<&SeedGpu> {
        self.gpus.iter().find(|g| g.gpu_type == gpu_type)
    }

    pub(crate) fn team(&self, id: &str) -> Option<&SeedTeam> {
        self.teams.iter().find(|t| t.id == id)
    }

    pub(crate) fn hub_model(&self, name: &str) -> Option<&SeedHubModel> {
        self.hub_models.iter().find(|m| m.name == name)
    }

    /// The clusters reserved for the account (`None`: a personal account has none).
    pub(crate) fn reserved_clusters(&self, team_id: Option<&str>) -> &[SeedReservedCluster] {
        team_id
            .and_then(|t| self.team(t))
            .map_or(&[], |t| t.reserved_clusters.as_slice())
    }

    /// The account's `onDemandBetaAccess`: the team's with a team, else the user's.
    pub(crate) fn on_demand_access(&self, user: &SeedUser, team_id: Option<&str>) -> bool {
        match team_id.and_then(|t| self.team(t)) {
            Some(t) => t.on_demand_beta_access,
            None => user.on_demand_beta_access,
        }
    }

    /// Whether the account may dispatch a custom `sourceRef`: team runs of allowlisted teams
    /// the user belongs to, never a personal account.
    pub(crate) fn may_use_source_ref(&self, user_id: &str, team_id: Option<&str>) -> bool {
        team_id.is_some_and(|t| {
            self.is_member(user_id, t) && self.team(t).is_some_and(|t| t.source_ref_access)
        })
    }

    /// Parameter count (billions) of a model: trainable or on the Hub.
    pub(crate) fn params_b(&self, name: &str) -> Option<f64> {
        self.model(name)
            .map(|m| m.params_b)
            .or_else(|| self.hub_model(name).map(|m| m.params_b))
    }
}
