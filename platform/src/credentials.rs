//! Credential and settings resolution exactly as the `prime` CLI 0.18.0 does it (§2.2):
//! environment variables over a `PRIME_CONTEXT` context file over `~/.prime/config.json` over
//! built-in defaults.
//!
//! The resolver never reads the process environment itself: it takes a lookup function and a
//! home directory, so tests are hermetic. [`resolve_from_process_env`] is the thin wrapper the
//! server uses. Nothing here writes files (the CLI creates `~/.prime`; we do not).

use std::path::{Path, PathBuf};

use secrecy::SecretString;
use serde::Deserialize;

use crate::settings::{
    ActiveTeam, DEFAULT_BASE_URL, DEFAULT_FRONTEND_URL, DEFAULT_TRACES_URL, PlatformSettings,
    RetryPolicy, SettingSource, Timeouts, normalize_base_url,
};

/// Why the settings could not be resolved. Never contains a key.
#[derive(Debug, thiserror::Error)]
pub enum CredentialsError {
    /// `~/.prime/config.json` or a context file exists but cannot be read or parsed.
    #[error("cannot read {path}: {reason}")]
    File {
        /// The file.
        path: PathBuf,
        /// What went wrong (I/O or JSON error; never the file's content).
        reason: String,
    },
    /// `PRIME_CONTEXT` names a context that is not `production` and has no file.
    #[error(
        "PRIME_CONTEXT names the context '{name}', but {path} does not exist; \
         create it with 'prime config save {name}' or unset PRIME_CONTEXT"
    )]
    UnknownContext {
        /// The context name.
        name: String,
        /// Where it was looked for.
        path: PathBuf,
    },
    /// `PRIME_CONTEXT` holds characters the CLI refuses (only `[A-Za-z0-9_-]`).
    #[error("PRIME_CONTEXT '{0}' is not a valid context name (only letters, digits, '-' and '_')")]
    InvalidContextName(String),
}

/// The subset of `config.json` / a context file that matters here. Every key is optional and
/// `null` is the same as absent; unknown keys are ignored.
#[derive(Debug, Default, Deserialize)]
struct ConfigFile {
    #[serde(default)]
    api_key: Option<String>,
    #[serde(default)]
    team_id: Option<String>,
    #[serde(default)]
    user_id: Option<String>,
    #[serde(default)]
    base_url: Option<String>,
    #[serde(default)]
    frontend_url: Option<String>,
    #[serde(default)]
    traces_url: Option<String>,
}

/// Resolve settings from the real process environment and `$HOME`.
pub fn resolve_from_process_env() -> Result<PlatformSettings, CredentialsError> {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    resolve(&|name| std::env::var(name).ok(), home.as_deref())
}

/// Resolve settings from an environment lookup and a home directory (`None`: no config file).
///
/// Precedence (highest first), as §2.2:
/// * key: `PRIME_API_KEY` (non-empty) → context `api_key` → config `api_key`;
/// * team: `PRIME_TEAM_ID` (non-blank after trimming) → context/config `team_id` → personal;
/// * user id: `PRIME_USER_ID` (set at all) → context/config `user_id`;
/// * API base: `PRIME_API_BASE_URL` → `PRIME_BASE_URL` → context/config `base_url` → default,
///   with trailing `/` and one `/api/v1` stripped;
/// * frontend: `PRIME_FRONTEND_URL` → context/config `frontend_url` → default;
/// * traces: `PRIME_TRACES_URL` → context/config `traces_url` → default (never the API base).
pub fn resolve(
    env: &dyn Fn(&str) -> Option<String>,
    home: Option<&Path>,
) -> Result<PlatformSettings, CredentialsError> {
    let prime_dir = home.map(|h| h.join(".prime"));
    let config = match &prime_dir {
        Some(dir) => read_config(&dir.join("config.json"))?.unwrap_or_default(),
        None => ConfigFile::default(),
    };

    // A context replaces the config file's values in memory, the way `load_environment` does.
    let context_name = env("PRIME_CONTEXT").filter(|c| !c.trim().is_empty());
    let (layer, layer_source) = match context_name {
        None => (config, SettingSource::ConfigFile),
        Some(name) => {
            let source = SettingSource::Context(name.clone());
            (load_context(&name, config, prime_dir.as_deref())?, source)
        }
    };

    let non_empty = |v: Option<String>| v.filter(|s| !s.trim().is_empty());

    let (api_key, api_key_source) = match non_empty(env("PRIME_API_KEY")) {
        Some(k) => (Some(k), SettingSource::Env("PRIME_API_KEY")),
        None => match non_empty(layer.api_key.clone()) {
            Some(k) => (Some(k), layer_source.clone()),
            None => (None, SettingSource::Default),
        },
    };

    let team = match env("PRIME_TEAM_ID").map(|t| t.trim().to_owned()) {
        Some(t) if !t.is_empty() => Some(ActiveTeam {
            id: t,
            source: SettingSource::Env("PRIME_TEAM_ID"),
        }),
        _ => non_empty(layer.team_id.clone()).map(|t| ActiveTeam {
            id: t.trim().to_owned(),
            source: layer_source.clone(),
        }),
    };

    let user_id = match env("PRIME_USER_ID") {
        Some(u) => Some(u).filter(|u| !u.is_empty()),
        None => non_empty(layer.user_id.clone()),
    };

    let (base_raw, base_url_source) = if let Some(v) = non_empty(env("PRIME_API_BASE_URL")) {
        (v, SettingSource::Env("PRIME_API_BASE_URL"))
    } else if let Some(v) = non_empty(env("PRIME_BASE_URL")) {
        (v, SettingSource::Env("PRIME_BASE_URL"))
    } else if let Some(v) = non_empty(layer.base_url.clone()) {
        (v, layer_source.clone())
    } else {
        (DEFAULT_BASE_URL.to_owned(), SettingSource::Default)
    };

    let frontend_url = non_empty(env("PRIME_FRONTEND_URL"))
        .or_else(|| non_empty(layer.frontend_url.clone()))
        .unwrap_or_else(|| DEFAULT_FRONTEND_URL.to_owned());

    let traces_url = non_empty(env("PRIME_TRACES_URL"))
        .or_else(|| non_empty(layer.traces_url.clone()))
        .unwrap_or_else(|| DEFAULT_TRACES_URL.to_owned());

    Ok(PlatformSettings {
        base_url: normalize_base_url(&base_raw),
        base_url_source,
        traces_url: traces_url.trim().trim_end_matches('/').to_owned(),
        frontend_url: frontend_url.trim().trim_end_matches('/').to_owned(),
        api_key: api_key.map(SecretString::from),
        api_key_source,
        team,
        user_id,
        timeouts: Timeouts::default(),
        retry: RetryPolicy::default(),
    })
}

/// Apply a named context over the config file's values, as `Config.load_environment` does:
/// `production` resets URLs to the defaults and the team to personal, keeping the key; a saved
/// context replaces the key only when it has one, and everything else with its value or the
/// default.
fn load_context(
    name: &str,
    config: ConfigFile,
    prime_dir: Option<&Path>,
) -> Result<ConfigFile, CredentialsError> {
    if name.eq_ignore_ascii_case("production") {
        return Ok(ConfigFile {
            api_key: config.api_key,
            user_id: config.user_id,
            ..ConfigFile::default()
        });
    }
    if !name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        return Err(CredentialsError::InvalidContextName(name.to_owned()));
    }
    let path = prime_dir
        .map(|d| d.join("environments").join(format!("{name}.json")))
        .unwrap_or_else(|| PathBuf::from(format!("~/.prime/environments/{name}.json")));
    match read_config(&path)? {
        None => Err(CredentialsError::UnknownContext {
            name: name.to_owned(),
            path,
        }),
        Some(ctx) => Ok(ConfigFile {
            api_key: ctx.api_key.or(config.api_key),
            ..ctx
        }),
    }
}

/// Read a JSON settings file; `Ok(None)` when it does not exist.
fn read_config(path: &Path) -> Result<Option<ConfigFile>, CredentialsError> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(CredentialsError::File {
                path: path.to_owned(),
                reason: e.to_string(),
            });
        }
    };
    // Only the position goes into the error: serde_json's own message can quote a value.
    serde_json::from_str(&text)
        .map(Some)
        .map_err(|e| CredentialsError::File {
            path: path.to_owned(),
            reason: format!(
                "invalid settings JSON ({:?} error at line {}, column {})",
                e.classify(),
                e.line(),
                e.column()
            ),
        })
}
