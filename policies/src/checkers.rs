//! Running code to validate a config is a person's decision. The optional checkers of
//! `validate_config` — a prime-rl checkout's own schema (`uv run … python -I`) and the `prime`
//! CLI — are enabled only by the policy file (`[validate]`) or a server flag, never by a tool
//! argument; a checkout where file tools could plant code (inside the workspace or an allowed
//! directory, or holding one) is refused; and the child gets a scrubbed environment.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

use crate::paths::Workspace;
use crate::secret_guard::SecretGuard;

/// What the tool says when the model passes a checker argument.
pub const BY_POLICY_ONLY: &str = "runs code on this machine, so only a person turns it on: \
     set the policy key validate.prime_rl_checkout = \"/path/to/prime-rl\" (or \
     validate.prime_cli = true) in the policy file, or start the server with \
     --prime-rl-checkout DIR / --prime-cli-checker; the checkout must be outside the workspace \
     and the allowed directories";

/// The checkout to run, canonical, or why it is refused: it must exist and not overlap the
/// workspace root or an allowed directory (either inside the other).
pub fn checkout_dir(ws: Option<&Workspace>, checkout: &Path) -> Result<PathBuf, String> {
    let canon = checkout.canonicalize().map_err(|e| {
        format!(
            "the prime-rl checkout {} (policy validate.prime_rl_checkout) is unusable: {e}",
            checkout.display()
        )
    })?;
    if let Some(ws) = ws {
        for dir in std::iter::once(ws.root()).chain(ws.allowed_dirs().iter().map(PathBuf::as_path))
        {
            if canon.starts_with(dir) || dir.starts_with(&canon) {
                return Err(format!(
                    "the prime-rl checkout {} overlaps {}, where file tools and the assistant may \
                     write; it is not run. Point validate.prime_rl_checkout at a checkout outside \
                     the workspace and the allowed directories",
                    canon.display(),
                    dir.display()
                ));
            }
        }
    }
    Ok(canon)
}

/// Variables a checker child may inherit, besides `PATH` and `HOME`: locale, temporary
/// directory, and where `uv` keeps its cache and interpreters. Nothing that holds a credential.
const PASSTHROUGH: &[&str] = &[
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    "TMPDIR",
    "UV_CACHE_DIR",
    "UV_PYTHON_INSTALL_DIR",
    "XDG_CACHE_HOME",
    "XDG_DATA_HOME",
];

/// The whole environment of a prime-rl checkout child: the pass-through variables (dropping
/// any whose value the guard finds secret), `PATH`, and `HOME` set to `home` (a temporary,
/// empty directory), so neither the platform key, nor a forwardable secret, nor a credential
/// file found through `$HOME` reaches it.
pub fn checkout_env(
    get: &dyn Fn(&str) -> Option<OsString>,
    guard: &SecretGuard,
    home: &Path,
    path: Option<&OsStr>,
) -> Vec<(OsString, OsString)> {
    let mut env: Vec<(OsString, OsString)> = PASSTHROUGH
        .iter()
        .filter_map(|k| get(k).map(|v| (OsString::from(k), v)))
        .filter(|(_, v)| !guard.is_suspicious(&v.to_string_lossy()))
        .collect();
    if let Some(p) = path {
        env.push(("PATH".into(), p.to_os_string()));
    }
    env.push(("HOME".into(), home.as_os_str().to_os_string()));
    env.push(("PYTHONDONTWRITEBYTECODE".into(), "1".into()));
    env
}

/// The environment of the `prime` CLI checker: like [`checkout_env`] but with the real `HOME`
/// and the `PRIME_*` settings, since `prime train validate` calls the platform with the user's
/// login (it isolates its own schema worker). Forwardable secrets (`WANDB_API_KEY`,
/// `HF_TOKEN`) and every other variable stay out.
pub fn prime_cli_env(
    vars: impl Iterator<Item = (OsString, OsString)>,
    guard: &SecretGuard,
    path: Option<&OsStr>,
) -> Vec<(OsString, OsString)> {
    let mut env: Vec<(OsString, OsString)> = vars
        .filter(|(k, v)| {
            let k = k.to_string_lossy();
            let prime = k.starts_with("PRIME_");
            let plain = PASSTHROUGH.contains(&&*k) || k == "HOME" || k == "XDG_CONFIG_HOME";
            prime || (plain && !guard.is_suspicious(&v.to_string_lossy()))
        })
        .collect();
    if let Some(p) = path {
        env.push(("PATH".into(), p.to_os_string()));
    }
    env
}

/// A `PATH` with only absolute directories outside the workspace and the allowed directories:
/// a planted `uv` or `prime` there is never what runs.
pub fn search_path(ws: Option<&Workspace>, path: &OsStr) -> Option<OsString> {
    let dirs: Vec<PathBuf> = std::env::split_paths(path)
        .filter(|d| d.is_absolute())
        .filter(|d| {
            let canon = d.canonicalize().unwrap_or_else(|_| d.clone());
            ws.is_none_or(|ws| !ws.contains(&canon))
        })
        .collect();
    std::env::join_paths(dirs).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::secret_guard::KnownSecrets;
    use secrecy::SecretString;

    #[test]
    fn a_checkout_inside_or_around_the_workspace_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("ws");
        std::fs::create_dir_all(root.join("prime-rl")).unwrap();
        let other = tempfile::tempdir().unwrap();
        let ws = Workspace::new(Some(root.clone()), Vec::new(), tmp.path(), None).unwrap();
        assert!(checkout_dir(Some(&ws), &root.join("prime-rl")).is_err());
        assert!(
            checkout_dir(Some(&ws), tmp.path()).is_err(),
            "holds the workspace"
        );
        assert!(checkout_dir(Some(&ws), other.path()).is_ok());
        assert!(checkout_dir(Some(&ws), &tmp.path().join("missing")).is_err());
    }

    #[test]
    fn the_checkout_env_holds_no_key_no_secret_and_a_private_home() {
        let key = "pit_abcdefghijklmnopqrstuvwxyz012345";
        let known = KnownSecrets::new().with("PRIME_API_KEY", &SecretString::from(key));
        let guard = SecretGuard::new(known);
        let get = |k: &str| -> Option<OsString> {
            match k {
                "LANG" => Some("C.UTF-8".into()),
                "TMPDIR" => Some(key.into()),
                "PRIME_API_KEY" | "HF_TOKEN" => Some(key.into()),
                _ => None,
            }
        };
        let env = checkout_env(
            &get,
            &guard,
            Path::new("/tmp/h"),
            Some(OsStr::new("/usr/bin")),
        );
        let names: Vec<String> = env
            .iter()
            .map(|(k, _)| k.to_string_lossy().into_owned())
            .collect();
        assert!(names.contains(&"LANG".to_string()));
        assert!(
            !names
                .iter()
                .any(|n| n == "TMPDIR" || n == "PRIME_API_KEY" || n == "HF_TOKEN")
        );
        assert!(env.iter().any(|(k, v)| k == "HOME" && v == "/tmp/h"));
        let cli = prime_cli_env(
            vec![
                ("PRIME_API_KEY".into(), key.into()),
                ("HF_TOKEN".into(), "hf_x".into()),
                ("HOME".into(), "/home/u".into()),
            ]
            .into_iter(),
            &guard,
            None,
        );
        assert!(cli.iter().any(|(k, _)| k == "PRIME_API_KEY"));
        assert!(!cli.iter().any(|(k, _)| k == "HF_TOKEN"));
    }
}
