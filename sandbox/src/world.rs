//! The sandbox's mutable world: runs, volumes and counters on top of the seed, with optional
//! persistence to a JSON state file (written atomically after each mutation).

use std::path::Path;

use chrono::{DateTime, Utc};
use rand::Rng;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::clock::plus_secs;
use crate::error::SandboxError;
use crate::seed::Seed;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct World {
    pub(crate) seed: Seed,
    pub(crate) runs: Vec<Run>,
    pub(crate) volumes: Vec<Volume>,
    /// `POST /training/runs` requests received (including failed ones).
    pub(crate) create_requests: u64,
    /// Simulated time when the state was last written, so a restarted sandbox's clock never
    /// goes backwards.
    #[serde(default)]
    pub(crate) saved_now: Option<DateTime<Utc>>,
}

/// Why a run behaves as it does (decided from its config at creation; see the README).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub(crate) enum Scenario {
    Healthy,
    Stall,
    Queued { reason: String, runs_ahead: u32 },
    Failed { cause: FailCause, detail: String },
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum FailCause {
    Oom,
    UnknownModel,
    UnknownEnv,
    /// A gated Hub model downloaded without `HF_TOKEN`.
    GatedModel,
    /// A reserved-cluster run of a model not cached there, with no weights on its volume.
    NoWeights,
    /// The code at the run's `sourceRef` fails to import.
    ImportError,
}

/// Where a run's weights come from.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(tag = "from", rename_all = "snake_case")]
pub(crate) enum Weights {
    /// Cached on the cluster the run is on.
    #[default]
    Cached,
    /// Downloaded from the Hugging Face Hub at start (on-demand capacity only).
    Hub,
    /// Read from the run's volume (`models/<name>/`).
    Volume { volume: String },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Run {
    pub(crate) id: String,
    pub(crate) user_id: String,
    pub(crate) team_id: Option<String>,
    pub(crate) name: Option<String>,
    pub(crate) created_at: DateTime<Utc>,
    /// The submitted `config`.
    pub(crate) config: Value,
    /// The create body with secret values replaced (for inspection only).
    pub(crate) create_body: Value,
    pub(crate) sft: bool,
    pub(crate) gpu_type: Option<String>,
    pub(crate) image_tag: Option<String>,
    pub(crate) source_ref: Option<String>,
    pub(crate) volume: Option<String>,
    pub(crate) resume_from: Option<String>,
    pub(crate) token_value: String,
    pub(crate) cluster_id: Option<String>,
    pub(crate) train_gpus: u32,
    pub(crate) infer_gpus: u32,
    pub(crate) on_demand: bool,
    pub(crate) price_per_gpu_hour: Option<f64>,
    pub(crate) scenario: Scenario,
    pub(crate) stopped_at: Option<DateTime<Utc>>,
    pub(crate) paused_at: Option<DateTime<Utc>>,
    #[serde(default)]
    pub(crate) restarts: Vec<DateTime<Utc>>,
    #[serde(default)]
    pub(crate) trace_bytes_total: Option<u64>,
    #[serde(default)]
    pub(crate) weights: Weights,
    /// On a cluster reserved for the run's team (no on-demand price).
    #[serde(default)]
    pub(crate) reserved: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Volume {
    pub(crate) name: String,
    pub(crate) user_id: String,
    pub(crate) team_id: Option<String>,
    pub(crate) size: String,
    pub(crate) created_at: DateTime<Utc>,
    /// Seconds after creation before the volume is RUNNING.
    pub(crate) ready_after_s: f64,
    pub(crate) cluster_id: String,
    pub(crate) cluster_name: String,
    pub(crate) pvc_name: String,
    /// Models whose weights are on the volume (seeded; invention).
    #[serde(default)]
    pub(crate) models: Vec<String>,
}

impl Volume {
    pub(crate) fn status(&self, now: DateTime<Utc>) -> &'static str {
        if now >= plus_secs(self.created_at, self.ready_after_s) {
            "RUNNING"
        } else {
            "PENDING"
        }
    }
}

/// A CUID-shaped id (`c` + 24 lowercase alphanumerics), random.
pub(crate) fn new_cuid() -> String {
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
    let mut rng = rand::rng();
    let mut s = String::with_capacity(25);
    s.push('c');
    for _ in 0..24 {
        s.push(ALPHABET[rng.random_range(0..ALPHABET.len())] as char);
    }
    s
}

/// A random per-run token, as the platform returns in `tokenValue`.
pub(crate) fn new_token() -> String {
    let mut rng = rand::rng();
    let bytes: [u8; 24] = rng.random();
    format!("sbxrun_{}", hex::encode(bytes))
}

impl World {
    pub(crate) fn new(seed: Seed) -> Self {
        Self {
            seed,
            runs: Vec::new(),
            volumes: Vec::new(),
            create_requests: 0,
            saved_now: None,
        }
    }

    pub(crate) fn load(path: &Path) -> Result<Option<World>, SandboxError> {
        match std::fs::read(path) {
            Ok(bytes) => serde_json::from_slice(&bytes)
                .map(Some)
                .map_err(|e| SandboxError::State(format!("{}: {e}", path.display()))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(SandboxError::State(format!("{}: {e}", path.display()))),
        }
    }

    /// Writes the world to `path` atomically (temporary sibling, then rename).
    pub(crate) fn save(&mut self, path: &Path, now: DateTime<Utc>) -> Result<(), SandboxError> {
        self.saved_now = Some(now);
        let bytes = serde_json::to_vec_pretty(self)
            .map_err(|e| SandboxError::State(format!("cannot encode state: {e}")))?;
        let tmp = path.with_extension(format!("tmp{}", std::process::id()));
        std::fs::write(&tmp, &bytes)
            .and_then(|()| std::fs::rename(&tmp, path))
            .map_err(|e| SandboxError::State(format!("{}: {e}", path.display())))
    }

    pub(crate) fn run(&self, id: &str) -> Option<&Run> {
        self.runs.iter().find(|r| r.id == id)
    }

    pub(crate) fn run_mut(&mut self, id: &str) -> Option<&mut Run> {
        self.runs.iter_mut().find(|r| r.id == id)
    }

    /// A run is visible to its owner and to members of its team.
    pub(crate) fn visible_run(&self, user_id: &str, id: &str) -> Option<&Run> {
        self.run(id).filter(|r| self.can_see(user_id, r))
    }

    pub(crate) fn can_see(&self, user_id: &str, run: &Run) -> bool {
        run.user_id == user_id
            || run
                .team_id
                .as_deref()
                .is_some_and(|t| self.seed.is_member(user_id, t))
    }

    /// Runs in an account: a team's runs (all members'), or a user's personal runs.
    pub(crate) fn runs_in_account<'a>(
        &'a self,
        user_id: &'a str,
        team_id: Option<&'a str>,
    ) -> impl Iterator<Item = &'a Run> + 'a {
        self.runs.iter().filter(move |r| match team_id {
            Some(t) => r.team_id.as_deref() == Some(t),
            None => r.team_id.is_none() && r.user_id == user_id,
        })
    }

    pub(crate) fn volume_in_account(
        &self,
        user_id: &str,
        team_id: Option<&str>,
        name: &str,
    ) -> Option<&Volume> {
        self.volumes.iter().find(|v| {
            v.name == name
                && match team_id {
                    Some(t) => v.team_id.as_deref() == Some(t),
                    None => v.team_id.is_none() && v.user_id == user_id,
                }
        })
    }
}
