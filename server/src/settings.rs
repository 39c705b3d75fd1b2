//! Settings: the policy file (`--config FILE` or `$XDG_CONFIG_HOME/factory-mcp/config.toml`)
//! merged with the command-line flags that mirror its keys.
//!
//! Flags win, with two exceptions that can only narrow: `--read-only` and
//! `--disable-destructive` add to what the file says and can never undo it. List flags
//! (`--toolsets`, `--allow-dir`, …) replace the file's list. The merged policy is validated
//! again, so a flag cannot produce what the file could not (e.g. `--confirm plan` without
//! both cost caps).

use std::io;
use std::path::{Path, PathBuf};

use factory_policies::policy::{ConfirmMode, Policy, PolicyError};
use thiserror::Error;

/// The flags that mirror the policy file's keys. Flattened into `serve`.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct SettingsArgs {
    /// Policy file (TOML). Default: $XDG_CONFIG_HOME/factory-mcp/config.toml, if it exists.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Hide every tool that is not read-only (cannot be undone by the file).
    #[arg(long)]
    pub read_only: bool,
    /// How billable launches are confirmed.
    #[arg(long, value_name = "human|out_of_band|plan", value_parser = parse_confirm)]
    pub confirm: Option<ConfirmMode>,
    /// How long a plan stays launchable.
    #[arg(long, value_name = "SECONDS")]
    pub plan_ttl_seconds: Option<u64>,
    /// Owners runs may be launched for (team ids; `personal` for the personal account).
    #[arg(long, value_name = "TEAM,...", value_delimiter = ',')]
    pub allowed_teams: Option<Vec<String>>,
    /// GPU types runs may use.
    #[arg(long, value_name = "TYPE,...", value_delimiter = ',')]
    pub allowed_gpu_types: Option<Vec<String>>,
    #[arg(long, value_name = "N")]
    pub max_gpus_per_run: Option<u32>,
    #[arg(long, value_name = "USD")]
    pub max_cost_per_hour_usd: Option<f64>,
    #[arg(long, value_name = "N")]
    pub max_active_runs: Option<u32>,
    #[arg(long, value_name = "USD")]
    pub max_active_cost_per_hour_usd: Option<f64>,
    #[arg(long, value_name = "N")]
    pub max_steps: Option<u64>,
    /// Let the model set `personal` / `relaunch_after_failure` in plan mode.
    #[arg(long)]
    pub allow_model_overrides: bool,
    /// Env file holding WANDB_API_KEY / HF_TOKEN (policy key `secrets.env_file`).
    #[arg(long, value_name = "FILE")]
    pub secrets_env_file: Option<PathBuf>,
    /// The root that `config_path` and `dest_dir` must resolve inside.
    #[arg(long, value_name = "DIR")]
    pub workspace: Option<PathBuf>,
    /// A further directory file arguments may resolve inside (repeatable).
    #[arg(long = "allow-dir", value_name = "DIR")]
    pub allow_dirs: Vec<PathBuf>,
    /// Toolsets to expose.
    #[arg(long, value_name = "NAME,...", value_delimiter = ',')]
    pub toolsets: Option<Vec<String>>,
    /// Individual tools to expose, in addition to --toolsets (alone: exactly these tools).
    #[arg(long, value_name = "NAME,...", value_delimiter = ',')]
    pub tools: Option<Vec<String>>,
    /// Hide destructive tools (cannot be undone by the file).
    #[arg(long)]
    pub disable_destructive: bool,
    /// For `--http`: file holding the bearer token clients must present [default: created in
    /// $XDG_STATE_HOME/factory-mcp/http-token].
    #[arg(long, value_name = "FILE")]
    pub auth_token_file: Option<PathBuf>,
    /// For `--http`: seconds a connection may take to send its headers (policy key
    /// http.header_read_timeout_s; default 10).
    #[arg(long, value_name = "SECONDS")]
    pub header_read_timeout_s: Option<u64>,
    /// For `--http`: most connections open at once (http.max_connections; default 256).
    #[arg(long, value_name = "N")]
    pub max_connections: Option<u32>,
    /// For `--http`: most live sessions of the 2025-11-25 era (http.max_sessions; default 128).
    #[arg(long, value_name = "N")]
    pub max_sessions: Option<u32>,
    // ---- operators (issue 21 §3) ----
    /// For `--http`: serve Prometheus metrics at /metrics on this separate address, e.g.
    /// 127.0.0.1:9464 (policy key http.metrics_listen; off by default). Off loopback it needs
    /// --metrics-token-file.
    #[arg(long, value_name = "ADDR")]
    pub metrics_listen: Option<std::net::SocketAddr>,
    /// For `--metrics-listen`: file holding the bearer token scrapers must send
    /// (http.metrics_token_file); it must differ from the MCP clients' token.
    #[arg(long, value_name = "FILE")]
    pub metrics_token_file: Option<PathBuf>,
    /// For `--http`: milliseconds /readyz keeps its answer (http.ready_cache_ms; default 2000).
    #[arg(long, value_name = "MS")]
    pub ready_cache_ms: Option<u64>,
    #[arg(long, value_name = "SECONDS")]
    pub request_timeout_s: Option<u64>,
    #[arg(long, value_name = "SECONDS")]
    pub connect_timeout_s: Option<u64>,
    #[arg(long, value_name = "SECONDS")]
    pub create_timeout_s: Option<u64>,
    // ---- hardening (issue 17) ----
    /// A prime-rl checkout (outside the workspace) whose own schema validate_config also runs
    /// (policy key `validate.prime_rl_checkout`).
    #[arg(long, value_name = "DIR")]
    pub prime_rl_checkout: Option<PathBuf>,
    /// Let validate_config also run `prime train validate` (policy key `validate.prime_cli`).
    #[arg(long)]
    pub prime_cli_checker: bool,
    /// Let upload_to_volume send files named like secret files, still scanned (policy key
    /// `upload.allow_secret_files`).
    #[arg(long)]
    pub allow_secret_file_uploads: bool,
    // ---- shared state (issue 21) ----
    /// The state store: `postgres://user@host:port/db` for a PostgreSQL database every replica
    /// shares (policy key `state.url`; default: SQLite in the state directory). The password
    /// goes in --state-password-file or FACTORY_MCP_STATE_PASSWORD, never in the URL.
    #[arg(long, value_name = "URL")]
    pub state_url: Option<String>,
    /// File holding the state database's password (policy key `state.password_file`).
    #[arg(long, value_name = "FILE")]
    pub state_password_file: Option<PathBuf>,
    /// Seconds a dispatch claim holds before another process may take it over (policy key
    /// `state.dispatch_lease_seconds`; default: the create timeout + 30).
    #[arg(long, value_name = "SECONDS")]
    pub dispatch_lease_seconds: Option<u64>,
    /// For `--http`: the address people reach the server at, e.g. behind a load balancer
    /// (policy key `http.public_url`); the approval page's links use it.
    #[arg(long, value_name = "URL")]
    pub public_url: Option<String>,
}

fn parse_confirm(s: &str) -> Result<ConfirmMode, String> {
    s.parse()
}

/// The effective settings: the validated, merged policy and the file it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    pub policy: Policy,
    /// The policy file that was read, if any.
    pub config_file: Option<PathBuf>,
}

/// Why the server refuses to start with these settings.
#[derive(Debug, Error)]
pub enum SettingsError {
    #[error("cannot read policy file {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("policy file {path}: {source}")]
    File {
        path: PathBuf,
        #[source]
        source: PolicyError,
    },
    #[error("settings (policy file and flags): {source}")]
    Merged {
        #[source]
        source: PolicyError,
    },
}

impl SettingsError {
    /// The dotted policy key the error is about, when there is one.
    pub fn key(&self) -> Option<&str> {
        match self {
            SettingsError::File { source, .. } | SettingsError::Merged { source } => source.key(),
            SettingsError::Read { .. } => None,
        }
    }
}

/// `$XDG_CONFIG_HOME/factory-mcp/config.toml`, else `~/.config/factory-mcp/config.toml`.
pub fn default_config_path(env: &dyn Fn(&str) -> Option<String>) -> Option<PathBuf> {
    let xdg = env("XDG_CONFIG_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .filter(|p| p.is_absolute());
    let base = match xdg {
        Some(dir) => dir,
        None => PathBuf::from(env("HOME").filter(|h| !h.is_empty())?).join(".config"),
    };
    Some(base.join("factory-mcp").join("config.toml"))
}

/// A path from the policy file: `~/` against `$HOME`, relative against the file's directory.
fn file_path(p: &Path, file_dir: &Path, env: &dyn Fn(&str) -> Option<String>) -> PathBuf {
    if let Ok(rest) = p.strip_prefix("~")
        && let Some(home) = env("HOME").filter(|h| !h.is_empty())
    {
        return PathBuf::from(home).join(rest);
    }
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        file_dir.join(p)
    }
}

fn resolve_file_paths(policy: &mut Policy, file: &Path, env: &dyn Fn(&str) -> Option<String>) {
    let dir = file.parent().unwrap_or(Path::new("."));
    let fix = |p: &mut PathBuf| *p = file_path(p, dir, env);
    policy
        .workspace
        .iter_mut()
        .chain(policy.allow_dirs.iter_mut())
        .chain(policy.secrets.env_file.iter_mut())
        .chain(policy.http.auth_token_file.iter_mut())
        .chain(policy.http.metrics_token_file.iter_mut())
        .chain(policy.validate.prime_rl_checkout.iter_mut())
        .chain(policy.state.password_file.iter_mut())
        .for_each(fix);
}

impl Settings {
    /// Reads the policy file (`--config`, or the default path when it exists), merges the
    /// flags over it and validates the result. A missing `--config` file is an error; a
    /// missing default file means the defaults.
    pub fn load(
        args: &SettingsArgs,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Settings, SettingsError> {
        let (text, config_file) = match &args.config {
            Some(path) => {
                let text = std::fs::read_to_string(path).map_err(|source| SettingsError::Read {
                    path: path.clone(),
                    source,
                })?;
                (Some(text), Some(path.clone()))
            }
            None => match default_config_path(env) {
                Some(path) => match std::fs::read_to_string(&path) {
                    Ok(text) => (Some(text), Some(path)),
                    Err(e) if e.kind() == io::ErrorKind::NotFound => (None, None),
                    Err(source) => return Err(SettingsError::Read { path, source }),
                },
                None => (None, None),
            },
        };
        let mut policy = match (&text, &config_file) {
            (Some(text), Some(path)) => {
                let mut p = Policy::from_toml_str(text).map_err(|source| SettingsError::File {
                    path: path.clone(),
                    source,
                })?;
                resolve_file_paths(&mut p, path, env);
                p
            }
            _ => Policy::default(),
        };
        args.apply(&mut policy);
        policy
            .validate()
            .map_err(|source| SettingsError::Merged { source })?;
        Ok(Settings {
            policy,
            config_file,
        })
    }
}

impl SettingsArgs {
    /// Puts the flags over `policy`: values replace, `--read-only` and
    /// `--disable-destructive` only ever turn restrictions on.
    pub fn apply(&self, policy: &mut Policy) {
        policy.read_only |= self.read_only;
        policy.disable_destructive |= self.disable_destructive;
        if self.allow_model_overrides {
            policy.allow_model_overrides = true;
        }
        fn set<T: Clone>(target: &mut T, flag: &Option<T>) {
            if let Some(v) = flag {
                *target = v.clone();
            }
        }
        fn set_opt<T: Clone>(target: &mut Option<T>, flag: &Option<T>) {
            if flag.is_some() {
                target.clone_from(flag);
            }
        }
        set(&mut policy.confirm, &self.confirm);
        set(&mut policy.plan_ttl_seconds, &self.plan_ttl_seconds);
        set_opt(&mut policy.allowed_teams, &self.allowed_teams);
        set_opt(&mut policy.allowed_gpu_types, &self.allowed_gpu_types);
        set_opt(&mut policy.max_gpus_per_run, &self.max_gpus_per_run);
        set_opt(
            &mut policy.max_cost_per_hour_usd,
            &self.max_cost_per_hour_usd,
        );
        set_opt(&mut policy.max_active_runs, &self.max_active_runs);
        set_opt(
            &mut policy.max_active_cost_per_hour_usd,
            &self.max_active_cost_per_hour_usd,
        );
        set_opt(&mut policy.max_steps, &self.max_steps);
        set_opt(&mut policy.secrets.env_file, &self.secrets_env_file);
        set_opt(&mut policy.workspace, &self.workspace);
        if !self.allow_dirs.is_empty() {
            policy.allow_dirs.clone_from(&self.allow_dirs);
        }
        set_opt(&mut policy.toolsets, &self.toolsets);
        set_opt(&mut policy.tools, &self.tools);
        set_opt(&mut policy.http.auth_token_file, &self.auth_token_file);
        set(
            &mut policy.http.header_read_timeout_s,
            &self.header_read_timeout_s,
        );
        set(&mut policy.http.max_connections, &self.max_connections);
        set(&mut policy.http.max_sessions, &self.max_sessions);
        // operators (issue 21 §3)
        set_opt(&mut policy.http.metrics_listen, &self.metrics_listen);
        set_opt(
            &mut policy.http.metrics_token_file,
            &self.metrics_token_file,
        );
        set(&mut policy.http.ready_cache_ms, &self.ready_cache_ms);
        set(
            &mut policy.platform.request_timeout_s,
            &self.request_timeout_s,
        );
        set(
            &mut policy.platform.connect_timeout_s,
            &self.connect_timeout_s,
        );
        set(
            &mut policy.platform.create_timeout_s,
            &self.create_timeout_s,
        );
        // hardening (issue 17)
        set_opt(
            &mut policy.validate.prime_rl_checkout,
            &self.prime_rl_checkout,
        );
        policy.validate.prime_cli |= self.prime_cli_checker;
        policy.upload.allow_secret_files |= self.allow_secret_file_uploads;
        // shared state (issue 21)
        set_opt(&mut policy.state.url, &self.state_url);
        set_opt(&mut policy.state.password_file, &self.state_password_file);
        set_opt(
            &mut policy.state.dispatch_lease_seconds,
            &self.dispatch_lease_seconds,
        );
        set_opt(&mut policy.http.public_url, &self.public_url);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        settings: SettingsArgs,
    }

    fn args(argv: &[&str]) -> SettingsArgs {
        let mut full = vec!["factory-mcp"];
        full.extend_from_slice(argv);
        match Cli::try_parse_from(full) {
            Ok(cli) => cli.settings,
            Err(e) => panic!("flags do not parse: {e}"),
        }
    }

    fn no_env(_: &str) -> Option<String> {
        None
    }

    fn write(dir: &Path, text: &str) -> PathBuf {
        let path = dir.join("policy.toml");
        std::fs::write(&path, text).expect("write policy");
        path
    }

    #[test]
    fn with_no_file_and_no_flags_the_defaults_apply() {
        let s = Settings::load(&args(&[]), &no_env).expect("defaults");
        assert_eq!(s.policy, Policy::default());
        assert_eq!(s.config_file, None);
    }

    #[test]
    fn the_default_file_is_read_from_xdg_config_home() {
        let tmp = tempfile::tempdir().expect("tmp");
        let dir = tmp.path().join("factory-mcp");
        std::fs::create_dir_all(&dir).expect("mkdir");
        std::fs::write(
            dir.join("config.toml"),
            "max_active_runs = 2\nworkspace = \"ws\"",
        )
        .expect("write");
        let xdg = tmp.path().to_string_lossy().into_owned();
        let env = move |k: &str| (k == "XDG_CONFIG_HOME").then(|| xdg.clone());
        let s = Settings::load(&args(&[]), &env).expect("xdg");
        assert_eq!(s.policy.max_active_runs, Some(2));
        assert_eq!(
            s.policy.workspace,
            Some(dir.join("ws")),
            "relative to the file"
        );
        assert_eq!(s.config_file, Some(dir.join("config.toml")));
    }

    #[test]
    fn a_missing_config_flag_file_is_an_error() {
        let err = Settings::load(&args(&["--config", "/nonexistent/policy.toml"]), &no_env)
            .expect_err("missing");
        assert!(matches!(err, SettingsError::Read { .. }));
    }

    #[test]
    fn the_shared_store_comes_from_the_file_or_the_flags_and_never_holds_a_password() {
        let tmp = tempfile::tempdir().expect("tmp");
        let file = write(
            tmp.path(),
            "[state]\nurl = \"postgres://f@db/f\"\npassword_file = \"pgpass\"\n\
             dispatch_lease_seconds = 9",
        );
        let file = file.to_string_lossy().into_owned();
        let s = Settings::load(&args(&["--config", &file]), &no_env).expect("file");
        assert_eq!(s.policy.state.url.as_deref(), Some("postgres://f@db/f"));
        assert_eq!(
            s.policy.state.password_file.as_deref(),
            Some(tmp.path().join("pgpass").as_path()),
            "relative to the policy file"
        );
        let s = Settings::load(
            &args(&[
                "--config",
                &file,
                "--state-url",
                "postgres://g@other/g",
                "--dispatch-lease-seconds",
                "2",
                "--public-url",
                "https://factory.example.com",
            ]),
            &no_env,
        )
        .expect("flags");
        assert_eq!(s.policy.state.url.as_deref(), Some("postgres://g@other/g"));
        assert_eq!(s.policy.state.dispatch_lease_seconds, Some(2));
        assert_eq!(
            s.policy.http.public_url.as_deref(),
            Some("https://factory.example.com")
        );
        let e = Settings::load(
            &args(&["--state-url", "postgres://g:hunter2@other/g"]),
            &no_env,
        )
        .unwrap_err();
        assert_eq!(e.key(), Some("state.url"));
        assert!(!e.to_string().contains("hunter2"), "{e}");
    }

    #[test]
    fn flags_win_over_the_file() {
        let tmp = tempfile::tempdir().expect("tmp");
        let file = write(
            tmp.path(),
            "max_gpus_per_run = 8\ntoolsets = [\"runs\"]\nallow_dirs = [\"/data\"]\n\
             [platform]\nrequest_timeout_s = 20",
        );
        let file = file.to_string_lossy().into_owned();
        let s = Settings::load(
            &args(&[
                "--config",
                &file,
                "--max-gpus-per-run",
                "2",
                "--toolsets",
                "account,config",
                "--allow-dir",
                "/a",
                "--allow-dir",
                "/b",
                "--request-timeout-s",
                "5",
                "--confirm",
                "human",
            ]),
            &no_env,
        )
        .expect("merged");
        assert_eq!(s.policy.max_gpus_per_run, Some(2));
        assert_eq!(
            s.policy.toolsets,
            Some(vec!["account".to_string(), "config".to_string()])
        );
        assert_eq!(
            s.policy.allow_dirs,
            vec![PathBuf::from("/a"), PathBuf::from("/b")]
        );
        assert_eq!(s.policy.platform.request_timeout_s, 5);
    }

    #[test]
    fn http_limits_come_from_the_file_and_flags_win() {
        let tmp = tempfile::tempdir().expect("tmp");
        let file = write(
            tmp.path(),
            "[http]\nheader_read_timeout_s = 3\nmax_connections = 40\nmax_sessions = 9",
        );
        let file = file.to_string_lossy().into_owned();
        let s = Settings::load(&args(&["--config", &file, "--max-sessions", "5"]), &no_env)
            .expect("merged");
        assert_eq!(s.policy.http.header_read_timeout_s, 3);
        assert_eq!(s.policy.http.max_connections, 40);
        assert_eq!(s.policy.http.max_sessions, 5);
        let err = Settings::load(&args(&["--header-read-timeout-s", "0"]), &no_env)
            .expect_err("zero timeout");
        assert_eq!(err.key(), Some("http.header_read_timeout_s"));
    }

    #[test]
    fn metrics_and_readiness_settings_come_from_the_file_and_flags_win() {
        let tmp = tempfile::tempdir().expect("tmp");
        let file = write(
            tmp.path(),
            "[http]\nmetrics_listen = \"127.0.0.1:9464\"\nmetrics_token_file = \"metrics-token\"\nready_cache_ms = 500",
        );
        let file = file.to_string_lossy().into_owned();
        let s = Settings::load(&args(&["--config", &file]), &no_env).expect("file");
        let http = &s.policy.http;
        assert_eq!(http.metrics_listen, Some("127.0.0.1:9464".parse().unwrap()));
        assert_eq!(
            http.metrics_token_file,
            Some(tmp.path().join("metrics-token")),
            "relative to the file"
        );
        assert_eq!(http.ready_cache_ms, 500);
        let s = Settings::load(
            &args(&[
                "--config",
                &file,
                "--metrics-listen",
                "10.0.0.5:9100",
                "--metrics-token-file",
                "/etc/scrape-token",
                "--ready-cache-ms",
                "0",
            ]),
            &no_env,
        )
        .expect("flags");
        let http = &s.policy.http;
        assert_eq!(http.metrics_listen, Some("10.0.0.5:9100".parse().unwrap()));
        assert_eq!(
            http.metrics_token_file,
            Some(PathBuf::from("/etc/scrape-token"))
        );
        assert_eq!(http.ready_cache_ms, 0);
        // Off by default; a cache longer than a minute is refused.
        let s = Settings::load(&args(&[]), &no_env).expect("defaults");
        assert_eq!(s.policy.http.metrics_listen, None);
        assert_eq!(s.policy.http.ready_cache_ms, 2_000);
        let err =
            Settings::load(&args(&["--ready-cache-ms", "60001"]), &no_env).expect_err("too long");
        assert_eq!(err.key(), Some("http.ready_cache_ms"));
    }

    #[test]
    fn read_only_in_the_file_cannot_be_widened_and_the_flag_narrows() {
        let tmp = tempfile::tempdir().expect("tmp");
        let file = write(tmp.path(), "read_only = true\ndisable_destructive = true");
        let file = file.to_string_lossy().into_owned();
        let s = Settings::load(&args(&["--config", &file]), &no_env).expect("file");
        assert!(s.policy.read_only && s.policy.disable_destructive);
        let file2 = write(tmp.path(), "read_only = false");
        let file2 = file2.to_string_lossy().into_owned();
        let s = Settings::load(&args(&["--config", &file2, "--read-only"]), &no_env).expect("flag");
        assert!(s.policy.read_only);
        // There is no flag that turns read-only off.
        assert!(Cli::try_parse_from(["factory-mcp", "--read-only=false"]).is_err());
    }

    #[test]
    fn an_invalid_file_names_the_key() {
        let tmp = tempfile::tempdir().expect("tmp");
        for (text, key) in [
            ("max_gpus = 4", "max_gpus"),
            ("max_gpus_per_run = \"four\"", "max_gpus_per_run"),
            ("[http]\nauth_token = \"x\"", "http.auth_token"),
            ("confirm = \"plan\"", "confirm"),
        ] {
            let file = write(tmp.path(), text);
            let file = file.to_string_lossy().into_owned();
            let err = Settings::load(&args(&["--config", &file]), &no_env).expect_err(text);
            assert_eq!(err.key(), Some(key), "{text}: {err}");
            assert!(err.to_string().contains(key), "{err}");
        }
    }

    #[test]
    fn plan_mode_without_both_caps_is_refused_even_from_flags() {
        let err = Settings::load(
            &args(&["--confirm", "plan", "--max-cost-per-hour-usd", "10"]),
            &no_env,
        )
        .expect_err("one cap");
        assert_eq!(err.key(), Some("confirm"));
        assert!(err.to_string().contains("max_active_cost_per_hour_usd"));
        let s = Settings::load(
            &args(&[
                "--confirm",
                "plan",
                "--max-cost-per-hour-usd",
                "10",
                "--max-active-cost-per-hour-usd",
                "25",
            ]),
            &no_env,
        )
        .expect("both caps");
        assert_eq!(s.policy.confirm, ConfirmMode::Plan);
    }

    #[test]
    fn a_flag_cannot_set_a_nonsense_cap() {
        let err =
            Settings::load(&args(&["--max-cost-per-hour-usd=-1"]), &no_env).expect_err("negative");
        assert_eq!(err.key(), Some("max_cost_per_hour_usd"));
        let err = Settings::load(&args(&["--max-active-runs", "0"]), &no_env).expect_err("zero");
        assert_eq!(err.key(), Some("max_active_runs"));
    }
}
