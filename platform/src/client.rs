//! `PlatformClient`: the one handle the tool layer holds. It owns the settings and the HTTP
//! core; the endpoint methods live in `account`, `runs`, `volumes` and `traces`.

use crate::error::PlatformError;
use crate::http::Http;
use crate::settings::PlatformSettings;

/// Install the process-wide rustls crypto provider (ring) if none is installed yet. The S3
/// route's HTTP stack (reqwest 0.13 without a bundled provider) needs one before any client is
/// built, and so does every other reqwest 0.13 client in the process (e.g. an MCP HTTP client),
/// since Cargo unifies the crate's features. Idempotent.
pub fn ensure_tls_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// Which team a team-scoped call is made for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum TeamScope {
    /// The active team of the settings (`PRIME_TEAM_ID`, the saved team), or personal if none.
    #[default]
    Active,
    /// An explicit team (e.g. `prime train list --team`, or the owner chosen for a plan).
    Team(String),
    /// The personal account: no team parameter at all.
    Personal,
}

/// Async client of the Prime platform API and the Prime Traces service.
///
/// Cheap to clone (the connection pool is shared). `Debug` never shows the key.
#[derive(Debug, Clone)]
pub struct PlatformClient {
    pub(crate) http: Http,
}

impl PlatformClient {
    /// Build a client. Fails only if the TLS/HTTP stack cannot be initialised.
    pub fn new(settings: PlatformSettings) -> Result<Self, PlatformError> {
        ensure_tls_provider();
        Ok(PlatformClient {
            http: Http::new(settings)?,
        })
    }

    /// The settings in use.
    pub fn settings(&self) -> &PlatformSettings {
        &self.http.settings
    }

    /// The platform's current time, from the `Date` header of its latest answer (`None` before
    /// the first answer). Elapsed-time rules (the guard's wall-clock budget) use it so that a
    /// skewed local clock cannot make them act early or late.
    pub fn server_time(&self) -> Option<chrono::DateTime<chrono::Utc>> {
        self.http.server_time()
    }

    /// The active team id, if any.
    pub fn active_team_id(&self) -> Option<&str> {
        self.http.settings.team_id()
    }

    /// The team id a scope resolves to (`None` = personal account).
    pub fn team_for(&self, scope: &TeamScope) -> Option<String> {
        match scope {
            TeamScope::Active => self.active_team_id().map(str::to_owned),
            TeamScope::Team(t) => Some(t.clone()),
            TeamScope::Personal => None,
        }
    }
}
