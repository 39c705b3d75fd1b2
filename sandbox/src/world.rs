//! The sandbox's mutable world: runs, volumes and counters on top of the seed, with optional
//! persistence to a JSON state file (written atomically after each mutation).

use std::path::Path;

use chrono::{DateTime, Utc};
use rand::Rng;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::SandboxError;
use crate::clock::plus_secs;
use crate::seed::Seed;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct World {
    pub seed: Seed,
    pub runs: Vec<Run>,
    pub volumes: Vec<Volume>,
    /// `POST /training/runs` requests received (including failed ones).
    pub create_requests: u64,
    /// Simulated time when the state was last written, so a restarted sandbox's clock never
    /// goes backwards.
    #[serde(default)]
    pub saved_now: Option<DateTime<Utc>>,
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
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Run {
    pub id: String,
    pub user_id: String,
    pub team_id: Option<String>,
    pub name: Option<String>,
    pub created_at: DateTime<Utc>,
    /// The submitted `config`.
    pub config: Value,
    /// The create body with secret values replaced (for inspection only).
    pub create_body: Value,
    pub sft: bool,
    pub gpu_type: Option<String>,
    pub image_tag: Option<String>,
    pub source_ref: Option<String>,
    pub volume: Option<String>,
    pub resume_from: Option<String>,
    pub token_value: String,
    pub cluster_id: Option<String>,
    pub train_gpus: u32,
    pub infer_gpus: u32,
    pub on_demand: bool,
    pub price_per_gpu_hour: Option<f64>,
    pub scenario: Scenario,
    pub stopped_at: Option<DateTime<Utc>>,
    pub paused_at: Option<DateTime<Utc>>,
    #[serde(default)]
    pub restarts: Vec<DateTime<Utc>>,
    #[serde(default)]
    pub trace_bytes_total: Option<u64>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Volume {
    pub name: String,
    pub user_id: String,
    pub team_id: Option<String>,
    pub size: String,
    pub created_at: DateTime<Utc>,
    /// Seconds after creation before the volume is RUNNING.
    pub ready_after_s: f64,
    pub cluster_id: String,
    pub cluster_name: String,
    pub pvc_name: String,
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
