//! Which state store a process uses: the SQLite database in the state directory (the default,
//! one machine), or — with `[state] url` / `--state-url` — the PostgreSQL database that every
//! replica of a gateway shares (`serve` and `approve` alike). The password comes from
//! `[state] password_file` / `--state-password-file`, else `FACTORY_MCP_STATE_PASSWORD`; never
//! from the URL (refused, saying where it goes), never in a log or an error (it is handed to
//! the redactor as a known secret).

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use factory_policies::policy::StatePolicy;
use factory_policies::store::StateStore;
use factory_policies::store::postgres::{PgOptions, PgStore};
use secrecy::SecretString;

/// The environment variable holding the state database's password.
pub const PASSWORD_ENV: &str = "FACTORY_MCP_STATE_PASSWORD";

/// The shared store and the password it was opened with (for the redactor).
pub struct Shared {
    pub store: Arc<dyn StateStore>,
    pub password: Option<SecretString>,
}

/// The database password: the file when one is configured (owner-only), else the environment.
pub fn password(
    state: &StatePolicy,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Option<SecretString>, String> {
    if let Some(path) = &state.password_file {
        return read_password_file(path).map(Some);
    }
    Ok(env(PASSWORD_ENV)
        .filter(|v| !v.is_empty())
        .map(SecretString::from))
}

fn read_password_file(path: &Path) -> Result<SecretString, String> {
    let meta = std::fs::metadata(path).map_err(|e| {
        format!(
            "cannot read the state password file {} (state.password_file): {e}",
            path.display()
        )
    })?;
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(format!(
            "the state password file {} is readable by others (mode {mode:o}); run `chmod 600 {}`",
            path.display(),
            path.display()
        ));
    }
    let text = std::fs::read_to_string(path).map_err(|e| {
        format!(
            "cannot read the state password file {}: {e}",
            path.display()
        )
    })?;
    let pw = text.trim_end_matches(['\n', '\r']);
    if pw.is_empty() {
        return Err(format!(
            "the state password file {} is empty",
            path.display()
        ));
    }
    Ok(SecretString::from(pw.to_owned()))
}

/// The configured shared store, connected and migrated; `None` when the settings name none
/// (the SQLite store in the state directory is then used, opened on first need).
pub async fn open_shared(
    state: &StatePolicy,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Option<Shared>, String> {
    let Some(url) = &state.url else {
        return Ok(None);
    };
    let password = password(state, env)?;
    let store = PgStore::connect(&PgOptions::new(url, password.clone()))
        .await
        .map_err(|e| format!("the state store at [state] url: {e}"))?
        .with_dispatch_lease(state.dispatch_lease_seconds.map(Duration::from_secs));
    Ok(Some(Shared {
        store: Arc::new(store),
        password,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn the_password_comes_from_a_private_file_else_the_environment() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("pw");
        std::fs::write(&file, "s3cret\n").unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
        let mut state = StatePolicy {
            password_file: Some(file.clone()),
            ..StatePolicy::default()
        };
        let env = |k: &str| (k == PASSWORD_ENV).then(|| "from-env".to_string());
        let e = password(&state, &env).unwrap_err();
        assert!(e.contains("chmod 600") && !e.contains("s3cret"), "{e}");
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
        use secrecy::ExposeSecret;
        assert_eq!(
            password(&state, &env).unwrap().unwrap().expose_secret(),
            "s3cret"
        );
        state.password_file = None;
        assert_eq!(
            password(&state, &env).unwrap().unwrap().expose_secret(),
            "from-env"
        );
        assert!(password(&state, &|_| None).unwrap().is_none());
    }
}
