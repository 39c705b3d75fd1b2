//! The state every tool call shares: the platform client (or why there is none), the policy,
//! the secret guard and redactor, the workspace, and whether the platform is the sandbox.
//!
//! Start-up builds only what the first answer (`initialize`, `tools/list`) needs: the policy,
//! the secrets to refuse and redact, the workspace. The platform client (its TLS set-up and
//! root certificates) and the state store (the SQLite open, its locks and migrations) are
//! [`Deferred`]: built by the first call that uses them, so a start costs the same whatever
//! the state database holds; a failure to build them is kept and answered by every call that
//! needs them, as it was when they were built at start.

use std::path::PathBuf;
use std::sync::{Mutex, OnceLock, PoisonError};

use factory_platform::{PlatformClient, PlatformError, PlatformSettings, SettingSource};
use std::sync::Arc;

use factory_policies::{
    KnownSecrets, Policy, Redactor, SecretGuard, Workspace, forwarding,
    store::{StateStore, Store},
};
use secrecy::SecretString;
use serde_json::Value;

use crate::error::{ErrorKind, ToolError};
use crate::reply::HasRedactor;
use crate::reply::Redact;

pub(crate) use crate::ids::check_id;

/// Bounds on what one answer may carry, and on how long a call may wait.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Longest `launch_run` waits for a new volume to be RUNNING before answering "in progress".
    pub volume_wait: std::time::Duration,
    pub volume_poll: std::time::Duration,
    /// Poll interval while `stop_run` waits for a terminal state.
    pub stop_poll: std::time::Duration,
    /// Largest log text returned by one `get_logs` call (newest lines kept).
    pub log_bytes: usize,
    /// Largest number of metric records returned by one `get_metrics` call (newest kept).
    pub metric_records: usize,
    /// Most run pages `list_runs` reads when it filters by status.
    pub status_scan_pages: u32,
    /// Shortest and longest pause between two platform requests of `watch_run` (it backs off
    /// from the first to the second while nothing changes). Never below 2 s in production;
    /// `FACTORY_MCP_WATCH_POLL_MS` (undocumented, for tests and the demo) sets the shortest.
    pub watch_poll_min: std::time::Duration,
    pub watch_poll_max: std::time::Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            volume_wait: std::time::Duration::from_secs(30),
            volume_poll: std::time::Duration::from_secs(2),
            stop_poll: std::time::Duration::from_secs(3),
            log_bytes: 64 * 1024,
            metric_records: 500,
            status_scan_pages: 10,
            watch_poll_min: std::time::Duration::from_secs(2),
            watch_poll_max: std::time::Duration::from_secs(15),
        }
    }
}

/// A value built on first use, once; the outcome (the value or why there is none) is kept.
struct Deferred<T> {
    cell: OnceLock<Result<T, ToolError>>,
    build: Mutex<Option<Builder<T>>>,
}

type Builder<T> = Box<dyn FnOnce() -> Result<T, ToolError> + Send>;

impl<T> Deferred<T> {
    /// Already built (or known to be unavailable).
    fn ready(value: Result<T, ToolError>) -> Self {
        Deferred {
            cell: OnceLock::from(value),
            build: Mutex::new(None),
        }
    }

    /// Built by `build` on the first [`Deferred::get`]; concurrent first callers wait for it.
    fn later(build: impl FnOnce() -> Result<T, ToolError> + Send + 'static) -> Self {
        Deferred {
            cell: OnceLock::new(),
            build: Mutex::new(Some(Box::new(build))),
        }
    }

    fn get(&self) -> &Result<T, ToolError> {
        self.cell.get_or_init(|| {
            let build = self
                .build
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .take();
            match build {
                Some(build) => build(),
                // Only after a build that did not return (it panicked): say so, never retry.
                None => Err(ToolError::unavailable(
                    "this part of the server failed to start; restart the server",
                )),
            }
        })
    }
}

/// Shared, read-only state of a running server.
pub struct AppState {
    /// The platform client, or why there is none (an `Unavailable` error); built on first use.
    platform: Deferred<PlatformClient>,
    pub policy: Policy,
    /// Refuses secret values in arguments and configs.
    pub secret_guard: SecretGuard,
    /// Shared with the tracing layer (one build per start).
    pub redactor: Arc<Redactor>,
    workspace: Result<Workspace, ToolError>,
    /// The platform is the embedded simulator: results say so.
    pub sandbox: bool,
    pub limits: Limits,
    /// The durable state store, or why there is none; opened on first use.
    store: Deferred<Arc<dyn StateStore>>,
    /// Values of the secrets a run may receive (WANDB_API_KEY, HF_TOKEN), by name.
    forwardable: Vec<(String, SecretString)>,
    /// One pacing budget shared by every poll loop (`watch_run`).
    pub polls: crate::pacing::PollBudget,
    /// The approval page: who serves it, and the calls waiting on its decisions.
    pub page: Arc<crate::approval_page::PageHub>,
    /// The owners (`None`: the personal account) the last read of them found, in its order:
    /// whose runs `list_runs` reads while it reads the owners again. A guess that saves a round
    /// trip, never an answer: nothing is shown of an owner the new read does not find.
    known_owners: std::sync::Mutex<Option<Vec<Option<String>>>>,
}

impl AppState {
    pub fn new(
        platform: Result<PlatformClient, String>,
        policy: Policy,
        secret_guard: SecretGuard,
        redactor: Redactor,
        workspace: Result<Workspace, String>,
        sandbox: bool,
    ) -> Self {
        AppState {
            platform: Deferred::ready(platform.map_err(ToolError::unavailable)),
            policy,
            secret_guard,
            redactor: Arc::new(redactor),
            workspace: workspace.map_err(ToolError::unavailable),
            sandbox,
            limits: Limits::default(),
            store: Deferred::ready(Err(unavailable_store("no state directory was configured"))),
            forwardable: Vec::new(),
            polls: crate::pacing::PollBudget::default(),
            page: Arc::default(),
            known_owners: std::sync::Mutex::default(),
        }
    }

    /// Use this durable state store (plans, approvals, the dispatch journal, the audit log).
    pub fn with_store(mut self, store: Result<Arc<Store>, String>) -> Self {
        self.store = Deferred::ready(
            store
                .map(|s| s as Arc<dyn StateStore>)
                .map_err(|why| unavailable_store(&why)),
        );
        self
    }

    /// Use this state store backend (any [`StateStore`]).
    pub fn with_state_store(mut self, store: Arc<dyn StateStore>) -> Self {
        self.store = Deferred::ready(Ok(store));
        self
    }

    /// Open the store `open` gives on the first call that needs it (not at start).
    pub fn with_store_on_first_use(
        mut self,
        open: impl FnOnce() -> Result<Arc<Store>, String> + Send + 'static,
    ) -> Self {
        self.store = Deferred::later(move || {
            open()
                .map(|s| s as Arc<dyn StateStore>)
                .map_err(|why| unavailable_store(&why))
        });
        self
    }

    /// Build the platform client on the first call that needs it (not at start).
    fn with_platform_on_first_use(
        mut self,
        build: impl FnOnce() -> Result<PlatformClient, String> + Send + 'static,
    ) -> Self {
        self.platform = Deferred::later(move || build().map_err(ToolError::unavailable));
        self
    }

    /// The state store, or why there is none. Opens it on first use.
    pub fn store(&self) -> Result<&dyn StateStore, ToolError> {
        self.store.get().as_deref().map_err(Clone::clone)
    }

    /// The value of a forwardable secret the server holds.
    pub fn secret_value(&self, name: &str) -> Option<SecretString> {
        self.forwardable
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
    }

    /// The platform client, or an error saying how to configure credentials. Builds it on
    /// first use.
    pub fn platform(&self) -> Result<&PlatformClient, ToolError> {
        self.platform.get().as_ref().map_err(Clone::clone)
    }

    /// The owners the last read of them found (see `owner::owners`), if one was made.
    pub(crate) fn known_owners(&self) -> Option<Vec<Option<String>>> {
        self.known_owners
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// Keep what a read of the owners found.
    pub(crate) fn set_known_owners(&self, owners: Vec<Option<String>>) {
        *self
            .known_owners
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(owners);
    }

    /// The workspace that file arguments must resolve inside.
    pub fn workspace(&self) -> Result<&Workspace, ToolError> {
        self.workspace.as_ref().map_err(Clone::clone)
    }
}

fn unavailable_store(why: &str) -> ToolError {
    ToolError::unavailable(format!("The server's state store is unavailable: {why}"))
}

/// Where the platform client points when the server does not use the user's credentials (the
/// embedded sandbox).
#[derive(Debug, Clone)]
pub struct PlatformOverride {
    pub base_url: String,
    pub traces_url: String,
    pub api_key: SecretString,
    /// Dashboard base for run links (the sandbox serves its own page, so links never point at
    /// the real app); `None` keeps the default.
    pub frontend_url: Option<String>,
}

/// The state and the secret values it knows (its redactor, `state.redactor`, is the one to
/// share with the tracing layer).
pub struct Built {
    pub state: AppState,
    pub known: KnownSecrets,
}

impl AppState {
    /// Build the state from the policy and the environment (`env` reads a variable). A missing
    /// credential does not stop the server: tools answer with how to configure one.
    pub fn build(
        policy: Policy,
        over: Option<&PlatformOverride>,
        env: &dyn Fn(&str) -> Option<String>,
        extra_known: KnownSecrets,
    ) -> Result<Built, String> {
        let (mut known, forwardable) = known_secrets(&policy, env)?;
        known.extend(&extra_known);
        // The settings (and so the key to redact) now; the client, its TLS set-up and root
        // certificates on the first call that talks to the platform.
        let settings = platform_settings(&policy, over);
        if let Ok(Some(key)) = settings.as_ref().map(|s| s.api_key.as_ref()) {
            known.add("PRIME_API_KEY", key);
        }
        let cwd = std::env::current_dir()
            .map_err(|e| format!("cannot read the working directory: {e}"))?;
        let home = env("HOME").map(PathBuf::from);
        let workspace = Workspace::new(
            policy.workspace.clone(),
            policy.allow_dirs.clone(),
            &cwd,
            home.as_deref(),
        )
        .map_err(|e| e.to_string());
        // The directory now (it depends on the environment), the database on first use: its
        // open takes a write lock and may replay a write-ahead log as large as the history.
        let store_dir = Store::default_dir(env).ok_or_else(|| {
            "set XDG_STATE_HOME or HOME so the server has a state directory".to_string()
        });
        let mut state = AppState::new(
            Err(String::new()),
            policy,
            SecretGuard::new(known.clone()),
            Redactor::new(known.clone()),
            workspace,
            over.is_some(),
        )
        .with_platform_on_first_use(move || {
            let settings = settings?;
            PlatformClient::new(settings)
                .map_err(|e| format!("cannot build the platform client: {e}"))
        })
        .with_store_on_first_use(move || {
            let dir = store_dir?;
            Store::open(&dir).map(Arc::new).map_err(|e| {
                tracing::warn!(error = %e, "the state store is unavailable");
                e.to_string()
            })
        });
        state.forwardable = forwardable;
        // Hidden test/demo knob: a faster watch_run poll (the sandbox's clock runs faster too).
        if let Some(ms) =
            env("FACTORY_MCP_WATCH_POLL_MS").and_then(|v| v.trim().parse::<u64>().ok())
        {
            let min = std::time::Duration::from_millis(ms.clamp(10, 60_000));
            state.limits.watch_poll_min = min;
            state.limits.watch_poll_max = state.limits.watch_poll_max.min(min * 4).max(min);
            // The shared budget scales with the faster poll (a few watches at once still fit).
            state.polls = crate::pacing::PollBudget::new(8.0 / min.as_secs_f64(), 10);
        }
        // Hidden test knob: how long a call waits for the approval page's decision.
        if let Some(ms) = env("FACTORY_MCP_PAGE_WAIT_MS").and_then(|v| v.trim().parse::<u64>().ok())
        {
            state.page = Arc::new(crate::approval_page::PageHub::with_wait(
                std::time::Duration::from_millis(ms.min(120_000)),
            ));
        }
        Ok(Built { state, known })
    }
}

/// The secret values this process holds: refused in arguments, redacted on the way out. The
/// policy's `secrets.env_file` is read for the forwardable values.
fn known_secrets(
    policy: &Policy,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<(KnownSecrets, Vec<(String, SecretString)>), String> {
    let mut known = KnownSecrets::from_env(|k| env(k));
    let mut forwardable: Vec<(String, SecretString)> = Vec::new();
    for name in forwarding::FORWARDABLE {
        if let Some(v) = env(name).filter(|v| !v.trim().is_empty()) {
            forwardable.push((name.to_string(), SecretString::from(v)));
        }
    }
    if let Some(path) = &policy.secrets.env_file {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read secrets.env_file {}: {e}", path.display()))?;
        for line in text.lines() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let line = line.strip_prefix("export ").unwrap_or(line);
            if let Some((k, v)) = line.split_once('=') {
                let v = v.trim().trim_matches('"').trim_matches('\'');
                if !v.is_empty() {
                    let value = SecretString::from(v.to_string());
                    known.add(k.trim().to_string(), &value);
                    let k = k.trim();
                    if forwarding::is_forwardable(k) && !forwardable.iter().any(|(n, _)| n == k) {
                        forwardable.push((k.to_string(), value));
                    }
                }
            }
        }
    }
    Ok((known, forwardable))
}

fn platform_settings(
    policy: &Policy,
    over: Option<&PlatformOverride>,
) -> Result<PlatformSettings, String> {
    let mut settings = match over {
        Some(o) => {
            let mut s = PlatformSettings::new(o.base_url.clone(), o.api_key.clone());
            s.traces_url = o.traces_url.clone();
            if let Some(f) = &o.frontend_url {
                s.frontend_url = f.trim_end_matches('/').to_owned();
            }
            s.base_url_source = SettingSource::Explicit;
            s.api_key_source = SettingSource::Explicit;
            s
        }
        None => {
            const HOW: &str = "set PRIME_API_KEY (or run `prime login`) and restart the server, or start it with --sandbox to try the tools on the simulator";
            let s = factory_platform::resolve_from_process_env()
                .map_err(|e| format!("Platform settings are unusable: {e}. {HOW}."))?;
            if s.api_key.is_none() {
                return Err(format!("No platform API key is configured: {HOW}."));
            }
            s
        }
    };
    let t = &policy.platform;
    settings.timeouts.request = std::time::Duration::from_secs(t.request_timeout_s);
    settings.timeouts.connect = std::time::Duration::from_secs(t.connect_timeout_s);
    settings.timeouts.create = std::time::Duration::from_secs(t.create_timeout_s);
    Ok(settings)
}

impl Redact for Redactor {
    fn redact_str(&self, s: &str) -> String {
        self.redact(s).into_owned()
    }
    fn redact_value(&self, v: &mut Value) {
        self.redact_json(v);
    }
}

impl HasRedactor for AppState {
    fn redactor(&self) -> &dyn Redact {
        &*self.redactor
    }
    fn results_policy(&self) -> factory_policies::ResultsPolicy {
        self.policy.results
    }
}

/// Turn a platform failure into a message the model can act on. `what` names the operation and
/// its target, e.g. "get run abc".
pub fn platform_error(what: &str, e: &PlatformError) -> ToolError {
    let advice = match e.status() {
        Some(401) => {
            " The API key was refused: set PRIME_API_KEY (or run `prime login`) for the server, then restart it."
        }
        Some(402) => {
            " The account needs billing attention: https://app.primeintellect.ai/dashboard/billing."
        }
        Some(403) => {
            " The key lacks permission for this owner or team: check the team with whoami/list_teams."
        }
        Some(404) => " Check the id: list_runs shows the runs this owner can see.",
        Some(429) => " The platform is rate limiting: wait a little and call again.",
        Some(s) if s >= 500 => " The platform failed: call again in a moment.",
        _ if e.is_timeout() => " The platform did not answer in time: call again in a moment.",
        _ => "",
    };
    let detail = e.to_string();
    let kind = if e.status() == Some(404) {
        ErrorKind::NotFound
    } else {
        ErrorKind::Platform
    };
    ToolError::of(
        kind,
        format!(
            "Failed to {what}: {}.{advice}",
            detail.trim_end_matches('.')
        ),
    )
}

#[cfg(test)]
impl AppState {
    /// A state with no platform and no workspace, the default policy and no known secrets: for
    /// the unit tests of what stands around the tools (the server, the approval page).
    pub(crate) fn without_platform(sandbox: bool) -> Self {
        AppState::new(
            Err("no platform in this test".into()),
            Policy::default(),
            SecretGuard::new(KnownSecrets::new()),
            Redactor::new(KnownSecrets::new()),
            Err("no workspace in this test".into()),
            sandbox,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = "pit_lazy_start_test_key_0123456789abcdef";

    fn over() -> PlatformOverride {
        PlatformOverride {
            base_url: "http://127.0.0.1:9".into(),
            traces_url: "http://127.0.0.1:9".into(),
            api_key: SecretString::from(KEY),
            frontend_url: None,
        }
    }

    fn build_with_state_home(state_home: &std::path::Path) -> Built {
        let h = state_home.display().to_string();
        let env = move |k: &str| (k == "XDG_STATE_HOME").then(|| h.clone());
        AppState::build(Policy::default(), Some(&over()), &env, KnownSecrets::new())
            .expect("state builds")
    }

    /// Start-up does not touch the state database (so a start costs the same whatever it
    /// holds, and waits on no other process's lock): the first call that needs it opens it,
    /// once.
    #[test]
    fn the_store_is_opened_by_its_first_use_not_at_start() {
        let home = tempfile::tempdir().unwrap();
        let built = build_with_state_home(home.path());
        let dir = home.path().join("factory-mcp");
        assert!(!dir.exists(), "the state store was opened at start");
        let first = built.state.store().expect("the store opens on first use");
        assert!(dir.join(factory_policies::store::DB_FILE).is_file());
        let again = built.state.store().expect("the store stays open");
        assert!(
            std::ptr::addr_eq(first, again),
            "the store was opened twice"
        );
    }

    /// A store that cannot open fails the calls that need it, each with the same clear error.
    #[test]
    fn a_store_that_cannot_open_is_reported_by_every_call_that_needs_it() {
        let home = tempfile::tempdir().unwrap();
        std::fs::write(home.path().join("factory-mcp"), "a file, not a directory").unwrap();
        let built = build_with_state_home(home.path());
        let first = built.state.store().err().expect("the store cannot open");
        assert_eq!(first.kind, ErrorKind::Unavailable);
        assert!(
            first.message.contains("state store is unavailable")
                && first.message.contains("factory-mcp"),
            "{}",
            first.message
        );
        assert_eq!(built.state.store().err(), Some(first));
    }

    /// The key is known (refused and redacted) from the start; the client is built by its
    /// first use.
    #[test]
    fn the_platform_client_is_built_on_first_use_and_its_key_is_redacted_from_the_start() {
        let home = tempfile::tempdir().unwrap();
        let built = build_with_state_home(home.path());
        assert!(built.state.platform.cell.get().is_none(), "built at start");
        let shown = built
            .state
            .redactor
            .redact(&format!("key {KEY} here"))
            .into_owned();
        assert!(!shown.contains(KEY), "{shown}");
        let client = built
            .state
            .platform()
            .expect("the client builds on first use");
        assert_eq!(client.settings().base_url, "http://127.0.0.1:9");
        assert!(built.state.platform.cell.get().is_some());
    }

    /// A build that panicked is not retried: later calls get an error, never a second build.
    #[test]
    fn a_deferred_build_that_panicked_answers_an_error_after() {
        let d: Deferred<u32> = Deferred::later(|| panic!("boom"));
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let _ = d.get();
        }));
        assert!(caught.is_err());
        let e = d.get().as_ref().expect_err("an error after the panic");
        assert_eq!(e.kind, ErrorKind::Unavailable);
        assert!(e.message.contains("restart the server"), "{}", e.message);
    }
}
