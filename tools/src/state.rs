//! The state every tool call shares: the platform client (or why there is none), the policy,
//! the secret guard and redactor, the workspace, and whether the platform is the sandbox.

use factory_platform::{PlatformClient, PlatformError};
use factory_policies::{Policy, Redactor, SecretGuard, Workspace};
use serde_json::Value;

use crate::reply::{Redact, ToolError};
use crate::server::HasRedactor;

/// Bounds on what one answer may carry.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Largest log text returned by one `get_logs` call (newest lines kept).
    pub log_bytes: usize,
    /// Largest number of metric records returned by one `get_metrics` call (newest kept).
    pub metric_records: usize,
    /// Most run pages `list_runs` reads when it filters by status.
    pub status_scan_pages: u32,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            log_bytes: 64 * 1024,
            metric_records: 500,
            status_scan_pages: 10,
        }
    }
}

/// Shared, read-only state of a running server.
pub struct AppState {
    platform: Result<PlatformClient, String>,
    pub policy: Policy,
    pub guard: SecretGuard,
    pub redactor: Redactor,
    workspace: Result<Workspace, String>,
    /// The platform is the embedded simulator: results say so.
    pub sandbox: bool,
    pub limits: Limits,
}

impl AppState {
    pub fn new(
        platform: Result<PlatformClient, String>,
        policy: Policy,
        guard: SecretGuard,
        redactor: Redactor,
        workspace: Result<Workspace, String>,
        sandbox: bool,
    ) -> Self {
        AppState {
            platform,
            policy,
            guard,
            redactor,
            workspace,
            sandbox,
            limits: Limits::default(),
        }
    }

    /// The platform client, or an error saying how to configure credentials.
    pub fn platform(&self) -> Result<&PlatformClient, ToolError> {
        self.platform.as_ref().map_err(|why| ToolError::new(why.clone()))
    }

    /// The workspace that file arguments must resolve inside.
    pub fn workspace(&self) -> Result<&Workspace, ToolError> {
        self.workspace.as_ref().map_err(|why| ToolError::new(why.clone()))
    }
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
        &self.redactor
    }
}

/// Turn a platform failure into a message the model can act on. `what` names the operation and
/// its target, e.g. "get run abc".
pub fn platform_error(what: &str, e: &PlatformError) -> ToolError {
    let advice = match e.status() {
        Some(401) => {
            " The API key was refused: set PRIME_API_KEY (or run `prime login`) for the server, then restart it."
        }
        Some(402) => " The account needs billing attention: https://app.primeintellect.ai/dashboard/billing.",
        Some(403) => " The key lacks permission for this owner or team: check the team with whoami/list_teams.",
        Some(404) => " Check the id: list_runs shows the runs this owner can see.",
        Some(429) => " The platform is rate limiting: wait a little and call again.",
        Some(s) if s >= 500 => " The platform failed: call again in a moment.",
        _ if e.is_timeout() => " The platform did not answer in time: call again in a moment.",
        _ => "",
    };
    ToolError::new(format!("Failed to {what}: {e}.{advice}"))
}

/// Run ids are opaque platform handles; refuse anything that could change the request path.
pub fn check_id(kind: &str, id: &str) -> Result<(), ToolError> {
    let ok = !id.is_empty()
        && id.len() <= 128
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if ok {
        Ok(())
    } else {
        Err(ToolError::new(format!(
            "`{}` is not a valid {kind} id: ids are letters, digits, '-' and '_' (list_runs shows them).",
            id.chars().take(64).collect::<String>()
        )))
    }
}
