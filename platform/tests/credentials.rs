//! Credential and settings resolution (§2.2) with a temporary HOME and a fake environment.

use std::collections::HashMap;
use std::path::Path;

use factory_platform::settings::{DEFAULT_BASE_URL, DEFAULT_FRONTEND_URL, DEFAULT_TRACES_URL};
use factory_platform::{CredentialsError, PlatformSettings, SettingSource, resolve};
use secrecy::ExposeSecret;
use serde_json::json;

fn home_with(config: serde_json::Value) -> tempfile::TempDir {
    let home = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(home.path().join(".prime/environments")).unwrap();
    std::fs::write(
        home.path().join(".prime/config.json"),
        serde_json::to_string_pretty(&config).unwrap(),
    )
    .unwrap();
    home
}

fn write_context(home: &Path, name: &str, ctx: serde_json::Value) {
    std::fs::write(
        home.join(format!(".prime/environments/{name}.json")),
        ctx.to_string(),
    )
    .unwrap();
}

/// The default config file the CLI writes, with a few values set.
fn cli_config() -> serde_json::Value {
    json!({
        "api_key": "cfg-key-0000000000",
        "team_id": "cteamconfig00000000000001",
        "team_name": "Config Team", "team_role": "ADMIN",
        "user_id": "cuserconfig", "user_name": "Ada",
        "base_url": "https://api.primeintellect.ai",
        "frontend_url": "https://app.primeintellect.ai",
        "inference_url": "https://api.pinference.ai/api/v1",
        "traces_url": null,
        "ssh_key_path": "/home/x/.ssh/id_rsa",
        "current_environment": "production",
        "share_resources_with_team": false,
        "traces_opt_out": false
    })
}

fn run(env: &[(&str, &str)], home: Option<&Path>) -> Result<PlatformSettings, CredentialsError> {
    let map: HashMap<String, String> = env
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    resolve(&|k| map.get(k).cloned(), home)
}

fn key(s: &PlatformSettings) -> Option<&str> {
    s.api_key.as_ref().map(|k| k.expose_secret())
}

#[test]
fn config_file_values_apply_without_environment() {
    let home = home_with(cli_config());
    let s = run(&[], Some(home.path())).unwrap();
    assert_eq!(key(&s), Some("cfg-key-0000000000"));
    assert_eq!(s.api_key_source, SettingSource::ConfigFile);
    assert_eq!(s.team_id(), Some("cteamconfig00000000000001"));
    assert_eq!(s.team.as_ref().unwrap().source, SettingSource::ConfigFile);
    assert_eq!(s.user_id.as_deref(), Some("cuserconfig"));
    assert_eq!(s.base_url, "https://api.primeintellect.ai");
    assert_eq!(s.frontend_url, DEFAULT_FRONTEND_URL);
    assert_eq!(s.traces_url, DEFAULT_TRACES_URL);
}

#[test]
fn environment_key_beats_config_but_an_empty_one_does_not() {
    let home = home_with(cli_config());
    let s = run(&[("PRIME_API_KEY", "env-key-1111")], Some(home.path())).unwrap();
    assert_eq!(key(&s), Some("env-key-1111"));
    assert_eq!(s.api_key_source, SettingSource::Env("PRIME_API_KEY"));
    let s = run(&[("PRIME_API_KEY", "")], Some(home.path())).unwrap();
    assert_eq!(key(&s), Some("cfg-key-0000000000"));
}

#[test]
fn no_home_and_no_env_means_defaults_and_no_key() {
    let s = run(&[], None).unwrap();
    assert!(s.api_key.is_none());
    assert!(s.team.is_none());
    assert_eq!(s.base_url, DEFAULT_BASE_URL);
    assert_eq!(s.base_url_source, SettingSource::Default);
    // An empty config (as `prime` first writes it) is the same.
    let home = home_with(
        json!({"api_key": "", "team_id": null, "base_url": "https://api.primeintellect.ai"}),
    );
    let s = run(&[], Some(home.path())).unwrap();
    assert!(s.api_key.is_none() && s.team.is_none());
}

#[test]
fn team_env_wins_when_non_blank_and_blank_is_ignored() {
    let home = home_with(cli_config());
    let s = run(
        &[("PRIME_TEAM_ID", "  cteamenv000000000000000001 ")],
        Some(home.path()),
    )
    .unwrap();
    assert_eq!(s.team_id(), Some("cteamenv000000000000000001"));
    assert_eq!(
        s.team.as_ref().unwrap().source,
        SettingSource::Env("PRIME_TEAM_ID")
    );
    for blank in ["", "   ", "\t"] {
        let s = run(&[("PRIME_TEAM_ID", blank)], Some(home.path())).unwrap();
        assert_eq!(
            s.team_id(),
            Some("cteamconfig00000000000001"),
            "blank {blank:?} ignored"
        );
    }
}

#[test]
fn user_id_env_wins_even_when_empty() {
    let home = home_with(cli_config());
    let s = run(&[("PRIME_USER_ID", "")], Some(home.path())).unwrap();
    assert_eq!(s.user_id, None);
    let s = run(&[("PRIME_USER_ID", "cuserenv")], Some(home.path())).unwrap();
    assert_eq!(s.user_id.as_deref(), Some("cuserenv"));
}

#[test]
fn api_base_precedence_and_api_v1_suffix_stripped() {
    let mut cfg = cli_config();
    cfg["base_url"] = json!("https://staging.example.com/api/v1/");
    let home = home_with(cfg);
    let s = run(&[], Some(home.path())).unwrap();
    assert_eq!(s.base_url, "https://staging.example.com");
    assert_eq!(s.base_url_source, SettingSource::ConfigFile);

    let s = run(
        &[("PRIME_BASE_URL", "http://b.example/api/v1")],
        Some(home.path()),
    )
    .unwrap();
    assert_eq!(s.base_url, "http://b.example");
    assert_eq!(s.base_url_source, SettingSource::Env("PRIME_BASE_URL"));

    let s = run(
        &[
            ("PRIME_BASE_URL", "http://b.example"),
            ("PRIME_API_BASE_URL", "http://127.0.0.1:8080/"),
        ],
        Some(home.path()),
    )
    .unwrap();
    assert_eq!(s.base_url, "http://127.0.0.1:8080");
    assert_eq!(s.base_url_source, SettingSource::Env("PRIME_API_BASE_URL"));
}

#[test]
fn traces_url_never_falls_back_to_the_api_base() {
    let home = home_with(cli_config());
    let s = run(
        &[("PRIME_API_BASE_URL", "http://127.0.0.1:8080")],
        Some(home.path()),
    )
    .unwrap();
    assert_eq!(s.traces_url, DEFAULT_TRACES_URL);

    let mut cfg = cli_config();
    cfg["traces_url"] = json!("https://traces.saved.example/");
    let home = home_with(cfg);
    let s = run(&[], Some(home.path())).unwrap();
    assert_eq!(s.traces_url, "https://traces.saved.example");
    let s = run(
        &[("PRIME_TRACES_URL", "http://127.0.0.1:9090")],
        Some(home.path()),
    )
    .unwrap();
    assert_eq!(s.traces_url, "http://127.0.0.1:9090");
}

#[test]
fn frontend_url_precedence() {
    let home = home_with(cli_config());
    let s = run(
        &[("PRIME_FRONTEND_URL", "http://localhost:3000/")],
        Some(home.path()),
    )
    .unwrap();
    assert_eq!(s.frontend_url, "http://localhost:3000");
    assert_eq!(
        s.run_dashboard_url("r1"),
        "http://localhost:3000/dashboard/training/r1"
    );
}

#[test]
fn prime_context_loads_a_saved_context_under_environment_variables() {
    let home = home_with(cli_config());
    write_context(
        home.path(),
        "staging",
        json!({"api_key": "ctx-key-2222", "team_id": "cteamctx000000000000000001", "user_id": "cuserctx",
               "base_url": "https://staging.example.com/api/v1", "frontend_url": "https://app.staging.example.com",
               "traces_url": "https://traces.staging.example.com"}),
    );
    let s = run(&[("PRIME_CONTEXT", "staging")], Some(home.path())).unwrap();
    assert_eq!(key(&s), Some("ctx-key-2222"));
    assert_eq!(s.api_key_source, SettingSource::Context("staging".into()));
    assert_eq!(s.team_id(), Some("cteamctx000000000000000001"));
    assert_eq!(s.user_id.as_deref(), Some("cuserctx"));
    assert_eq!(s.base_url, "https://staging.example.com");
    assert_eq!(s.frontend_url, "https://app.staging.example.com");
    assert_eq!(s.traces_url, "https://traces.staging.example.com");

    // Environment variables still win over the context.
    let s = run(
        &[
            ("PRIME_CONTEXT", "staging"),
            ("PRIME_API_KEY", "env-key"),
            ("PRIME_TEAM_ID", "cteamenv000000000000000001"),
        ],
        Some(home.path()),
    )
    .unwrap();
    assert_eq!(key(&s), Some("env-key"));
    assert_eq!(s.team_id(), Some("cteamenv000000000000000001"));

    // A context without a key keeps the config's key; without a team it is personal.
    write_context(
        home.path(),
        "nokey",
        json!({"base_url": "http://n.example"}),
    );
    let s = run(&[("PRIME_CONTEXT", "nokey")], Some(home.path())).unwrap();
    assert_eq!(key(&s), Some("cfg-key-0000000000"));
    assert!(s.team.is_none());
    assert_eq!(s.base_url, "http://n.example");
}

#[test]
fn production_context_resets_urls_and_team_but_keeps_the_key() {
    let mut cfg = cli_config();
    cfg["base_url"] = json!("https://staging.example.com");
    let home = home_with(cfg);
    let s = run(&[("PRIME_CONTEXT", "production")], Some(home.path())).unwrap();
    assert_eq!(s.base_url, DEFAULT_BASE_URL);
    assert!(s.team.is_none());
    assert_eq!(key(&s), Some("cfg-key-0000000000"));
}

#[test]
fn bad_contexts_and_files_are_errors_that_do_not_quote_the_file() {
    let home = home_with(cli_config());
    let e = run(&[("PRIME_CONTEXT", "missing")], Some(home.path())).unwrap_err();
    assert!(matches!(e, CredentialsError::UnknownContext { .. }));
    assert!(e.to_string().contains("missing.json"), "{e}");
    let e = run(&[("PRIME_CONTEXT", "../../etc/passwd")], Some(home.path())).unwrap_err();
    assert!(matches!(e, CredentialsError::InvalidContextName(_)));

    let home = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(home.path().join(".prime")).unwrap();
    std::fs::write(
        home.path().join(".prime/config.json"),
        "{\"api_key\": \"leaky-key-333\", oops",
    )
    .unwrap();
    let e = run(&[], Some(home.path())).unwrap_err();
    assert!(matches!(e, CredentialsError::File { .. }));
    assert!(
        !e.to_string().contains("leaky-key-333") && !format!("{e:?}").contains("leaky-key-333"),
        "{e}"
    );
    let mut cfg = cli_config();
    cfg["api_key"] = json!(12345678);
    let home = home_with(cfg);
    let e = run(&[], Some(home.path())).unwrap_err();
    assert!(!e.to_string().contains("12345678"), "{e}");
}

#[test]
fn resolved_settings_never_show_the_key_in_debug() {
    let home = home_with(cli_config());
    let s = run(&[], Some(home.path())).unwrap();
    assert!(!format!("{s:?}").contains("cfg-key-0000000000"));
}
