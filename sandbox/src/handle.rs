//! Starting and driving a sandbox: [`Sandbox::start`] binds, seeds (or loads) the world and
//! serves; the [`SandboxHandle`] it returns moves the clock, inspects runs, volumes and
//! requests, and injects faults.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::api;
use crate::builder;
use crate::clock::{self, ClockMode};
use crate::error::SandboxError;
use crate::faults::FaultRule;
use crate::s3;
use crate::s3_store::IssuedCredential;
use crate::seed::Seed;
use crate::server;
use crate::state::{AppState, RequestRecord};
use crate::world::World;

/// Where the seed comes from.
#[derive(Debug, Clone)]
pub enum SeedSource {
    /// The built-in defaults (documented in the README).
    Default,
    /// A seed built in code.
    Value(Box<Seed>),
    /// A JSON or TOML file that replaces or extends the defaults.
    File(PathBuf),
}

/// How to start a sandbox.
#[derive(Debug, Clone)]
pub struct SandboxOptions {
    /// Address to bind; `127.0.0.1:0` (an ephemeral port) by default.
    pub listen: SocketAddr,
    pub clock: ClockMode,
    /// Persist the world here (JSON, written atomically after each change) and load it at start.
    pub state_file: Option<PathBuf>,
    pub seed: SeedSource,
    /// Print the base URL and the seeded keys at start (standalone mode).
    pub print_keys: bool,
    /// Return this `tokenValue` from every create (tests check it never leaks); default: a
    /// random value per run.
    pub token_value: Option<String>,
}

impl Default for SandboxOptions {
    fn default() -> Self {
        Self {
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            clock: ClockMode::Real { speed: 1.0 },
            state_file: None,
            seed: SeedSource::Default,
            print_keys: false,
            token_value: None,
        }
    }
}

impl SandboxOptions {
    /// Defaults with a manual clock: time moves only with [`SandboxHandle::advance`].
    pub fn manual_clock() -> Self {
        Self {
            clock: ClockMode::Manual,
            ..Self::default()
        }
    }

    /// Defaults with the wall clock scaled by `speed`.
    pub fn with_speed(speed: f64) -> Self {
        Self {
            clock: ClockMode::Real { speed },
            ..Self::default()
        }
    }
}

/// Entry point.
pub struct Sandbox;

impl Sandbox {
    /// Binds, loads or seeds the world, and serves until [`SandboxHandle::shutdown`].
    pub async fn start(opts: SandboxOptions) -> Result<SandboxHandle, SandboxError> {
        let seed = match &opts.seed {
            SeedSource::Default => Seed::default(),
            SeedSource::Value(s) => (**s).clone(),
            SeedSource::File(p) => Seed::from_file(p)?,
        };
        let loaded = match &opts.state_file {
            Some(p) => World::load(p)?,
            None => None,
        };
        let wall = Utc::now();
        let start = loaded
            .as_ref()
            .and_then(|w| w.saved_now)
            .map_or(wall, |saved| saved.max(wall));
        let clock = clock::Clock::new(opts.clock, start);
        let world = match loaded {
            Some(w) => w,
            None => builder::seeded_world(seed, clock.now())?,
        };
        let listener = tokio::net::TcpListener::bind(opts.listen)
            .await
            .map_err(|source| SandboxError::Bind {
                addr: opts.listen,
                source,
            })?;
        let addr = listener.local_addr().map_err(|source| SandboxError::Bind {
            addr: opts.listen,
            source,
        })?;
        let base_url = format!("http://{addr}");
        let state = Arc::new(AppState::new(
            world,
            clock,
            opts.state_file.clone(),
            opts.token_value.clone(),
            base_url.clone(),
        ));
        state.persist();
        let router = api::router(state.clone());
        let cancel = CancellationToken::new();
        let task = tokio::spawn(server::serve(listener, router, cancel.clone()));
        let handle = SandboxHandle {
            state,
            addr,
            cancel,
            task: Some(task),
        };
        if opts.print_keys {
            handle.print_banner();
        }
        Ok(handle)
    }
}

/// A running sandbox. Dropping it stops the server too.
pub struct SandboxHandle {
    state: Arc<AppState>,
    addr: SocketAddr,
    cancel: CancellationToken,
    task: Option<tokio::task::JoinHandle<()>>,
}

/// A seeded user, as the handle reports it.
#[derive(Debug, Clone)]
pub struct UserInfo {
    pub id: String,
    pub name: String,
    pub api_key: String,
}

impl SandboxHandle {
    /// `http://127.0.0.1:PORT`: both `PRIME_API_BASE_URL` and `PRIME_TRACES_URL`.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The dashboard base for "monitor run at" links (`PRIME_FRONTEND_URL`): the sandbox
    /// serves `/dashboard/training/{id}` itself, so no link points at the real app.
    pub fn frontend_url(&self) -> String {
        self.base_url()
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The API key of the seeded user at `user_index` (0 = Alice, 1 = Bob by default).
    pub fn api_key(&self, user_index: usize) -> Option<String> {
        self.users().get(user_index).map(|u| u.api_key.clone())
    }

    pub fn users(&self) -> Vec<UserInfo> {
        self.state.with_world(|w| {
            w.seed
                .users
                .iter()
                .map(|u| UserInfo {
                    id: u.id.clone(),
                    name: u.name.clone(),
                    api_key: u.api_key.clone(),
                })
                .collect()
        })
    }

    /// Moves simulated time forward (both clock modes).
    pub fn advance(&self, by: Duration) {
        self.state.clock.advance(by);
    }

    /// The current simulated time.
    pub fn now(&self) -> DateTime<Utc> {
        self.state.clock.now()
    }

    /// Every run of every owner, as `GET /_sandbox/runs` shows them (secret values removed).
    pub fn runs(&self) -> Vec<Value> {
        api::inspect_runs(&self.state)
    }

    /// One run's inspection view, whoever owns it.
    pub fn run(&self, id: &str) -> Option<Value> {
        self.runs()
            .into_iter()
            .find(|r| r["run"]["id"].as_str() == Some(id))
    }

    /// Every line of one component's log now (`None`: the run's primary component), past the
    /// API's tail and look-back limits (as `GET /_sandbox/runs/{id}/logs`).
    pub fn full_log(
        &self,
        id: &str,
        component: Option<&str>,
        env_name: Option<&str>,
    ) -> Vec<String> {
        let now = self.state.clock.now();
        self.state.with_world(|w| {
            w.run(id)
                .map(|r| api::full_log(r, &w.seed, now, component, env_name))
                .unwrap_or_default()
        })
    }

    /// The names of every volume of every owner, in creation order.
    pub fn volume_names(&self) -> Vec<String> {
        self.state
            .with_world(|w| w.volumes.iter().map(|v| v.name.clone()).collect())
    }

    /// Make user `user_id` a member of team `team_id` (`true`, as a `MEMBER`) or no longer one
    /// (`false`): someone joining or leaving a team between two calls of a client. Returns
    /// whether the team exists. An invention: the platform's teams are managed in its web app.
    pub fn set_member(&self, team_id: &str, user_id: &str, member: bool) -> bool {
        self.state.mutate(|w| {
            let Some(team) = w.seed.teams.iter_mut().find(|t| t.id == team_id) else {
                return false;
            };
            team.members.retain(|m| m.user_id != user_id);
            if member {
                team.members.push(crate::seed::SeedMember {
                    user_id: user_id.to_string(),
                    role: "MEMBER".into(),
                });
            }
            true
        })
    }

    /// `POST /training/runs` requests received so far.
    pub fn create_requests(&self) -> u64 {
        self.state.with_world(|w| w.create_requests)
    }

    /// Platform and traces requests received so far (method, path, query).
    pub fn request_log(&self) -> Vec<RequestRecord> {
        self.state
            .requests
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Every set of volume-transfer credentials issued so far (tests check none leaks).
    pub fn transfer_credentials(&self) -> Vec<IssuedCredential> {
        self.state.s3.issued()
    }

    /// The bytes of a file on a volume (by volume name and volume-relative path), as its S3
    /// endpoint serves them. For small files; see [`Self::volume_file_sha256`] for large ones.
    pub fn volume_file(&self, volume: &str, path: &str) -> Option<Vec<u8>> {
        let mut out = Vec::new();
        s3::read_volume_file(&self.state, volume, path, |b| out.extend_from_slice(b))?;
        Some(out)
    }

    /// SHA-256 (hex) and size of a file on a volume, streamed (never held in memory).
    pub fn volume_file_sha256(&self, volume: &str, path: &str) -> Option<(String, u64)> {
        use sha2::Digest;
        let mut h = sha2::Sha256::new();
        let n = s3::read_volume_file(&self.state, volume, path, |b| h.update(b))?;
        Some((hex::encode(h.finalize()), n))
    }

    /// Make every issued transfer credential expire now (the next S3 request with one fails).
    pub fn expire_transfer_credentials(&self) {
        self.state.s3.expire_all(self.state.now());
    }

    pub fn add_fault(&self, rule: FaultRule) -> FaultRule {
        self.state
            .faults
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .add(rule)
    }

    pub fn faults(&self) -> Vec<FaultRule> {
        self.state
            .faults
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .list()
    }

    /// Clear the fault rules and release every held request.
    pub fn clear_faults(&self) {
        self.state
            .faults
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
        self.state.holds.release();
    }

    /// How many requests `hold` rules are holding now.
    pub fn held_requests(&self) -> usize {
        self.state.holds.held()
    }

    /// Let go of every request held now (each is then handled normally); returns how many.
    pub fn release_held(&self) -> usize {
        self.state.holds.release()
    }

    /// Stops accepting, closes every connection, and waits for the server task.
    pub async fn shutdown(mut self) {
        self.cancel.cancel();
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }

    /// Waits until the server stops (standalone mode: forever, or until a signal elsewhere).
    pub async fn wait(mut self) {
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }

    fn print_banner(&self) {
        let url = self.base_url();
        println!("factory-mcp sandbox listening on {url}");
        println!("  export PRIME_API_BASE_URL={url}");
        println!("  export PRIME_TRACES_URL={url}");
        println!("  export PRIME_FRONTEND_URL={url}");
        println!("  export PRIME_DISABLE_VERSION_CHECK=1");
        self.state.with_world(|w| {
            for u in &w.seed.users {
                let note = if u.on_demand_beta_access {
                    ""
                } else {
                    " [no on-demand beta access]"
                };
                println!(
                    "  user {} ({}): PRIME_API_KEY={}{note}",
                    u.name, u.id, u.api_key
                );
            }
            for t in &w.seed.teams {
                let mut notes: Vec<String> = t
                    .reserved_clusters
                    .iter()
                    .map(|c| format!("reserved {} cluster {}", c.gpu_type, c.cluster_name))
                    .collect();
                if t.source_ref_access {
                    notes.push("sourceRef allowed".into());
                }
                if !t.on_demand_beta_access {
                    notes.push("no on-demand beta access".into());
                }
                let note = if notes.is_empty() {
                    String::new()
                } else {
                    format!(" [{}]", notes.join("; "))
                };
                println!(
                    "  team {} ({}): PRIME_TEAM_ID={}{note}",
                    t.name, t.slug, t.id
                );
            }
        });
    }
}

impl Drop for SandboxHandle {
    fn drop(&mut self) {
        self.cancel.cancel();
    }
}
