//! The policy file: safe defaults, every key accepted, and errors that name the key.

use factory_policies::policy::{ConfirmMode, Policy, PolicyError};

fn key_of(text: &str) -> String {
    match Policy::from_toml_str(text) {
        Err(PolicyError::Key { key, .. }) => key,
        other => panic!("expected a key error, got {other:?}"),
    }
}

#[test]
fn an_empty_file_gives_the_safe_defaults() {
    let p = Policy::from_toml_str("").expect("empty");
    assert_eq!(p, Policy::default());
    assert_eq!(p.confirm, ConfirmMode::Human);
    assert!(!p.read_only);
    assert_eq!(p.plan_ttl_seconds, 3600);
    assert_eq!(p.platform.create_timeout_s, 120);
}

#[test]
fn the_example_policy_file_parses() {
    let text = include_str!("../../examples/policy.toml");
    let p = Policy::from_toml_str(text).expect("examples/policy.toml is valid");
    assert_eq!(p.confirm, ConfirmMode::Human);
}

#[test]
fn every_key_is_accepted() {
    let text = r#"
        read_only = true
        confirm = "plan"
        plan_ttl_seconds = 600
        allowed_teams = ["personal", "team_abc"]
        allowed_gpu_types = ["H100_80GB"]
        max_gpus_per_run = 8
        max_cost_per_hour_usd = 30.0
        max_active_runs = 2
        max_active_cost_per_hour_usd = 50
        max_steps = 1000
        reserved_price_per_gpu_hour_usd = 1.5
        allow_model_overrides = true
        workspace = "/srv/work"
        allow_dirs = ["/data"]
        toolsets = ["account", "runs"]
        tools = ["whoami"]
        disable_destructive = true
        [secrets]
        env_file = "/etc/factory/secrets.env"
        [http]
        auth_token_file = "/etc/factory/token"
        header_read_timeout_s = 5
        max_connections = 64
        max_sessions = 16
        [platform]
        request_timeout_s = 20
        connect_timeout_s = 5
        create_timeout_s = 180
        [results]
        max_bytes = 32768
    "#;
    let p = Policy::from_toml_str(text).expect("full");
    assert_eq!(p.max_active_cost_per_hour_usd, Some(50.0));
    assert_eq!(p.reserved_price_per_gpu_hour_usd, Some(1.5));
    assert!(p.allows_team(None));
    assert!(p.allows_team(Some("team_abc")));
    assert!(!p.allows_team(Some("team_other")));
    assert!(p.allows_gpu_type("h100_80gb"));
    assert!(!p.allows_gpu_type("A100_80GB"));
    assert_eq!(
        (
            p.http.header_read_timeout_s,
            p.http.max_connections,
            p.http.max_sessions
        ),
        (5, 64, 16)
    );
    assert_eq!(p.results.max_bytes, 32768);
}

#[test]
fn the_result_cap_defaults_to_16_kb_and_is_range_checked() {
    assert_eq!(Policy::default().results.max_bytes, 16384);
    for text in [
        "[results]\nmax_bytes = 4095",
        "[results]\nmax_bytes = 0",
        "[results]\nmax_bytes = -1",
        "[results]\nmax_bytes = 1048577",
        "[results]\nmax_bytes = \"16k\"",
    ] {
        assert_eq!(key_of(text), "results.max_bytes", "{text}");
    }
    assert_eq!(key_of("[results]\nmax_kb = 16"), "results.max_kb");
    let p = Policy::from_toml_str("[results]\nmax_bytes = 4096").expect("the floor");
    assert!(p.results.admits(4096) && !p.results.admits(4097));
}

#[test]
fn http_limits_have_bounded_defaults_and_are_range_checked() {
    let p = Policy::default();
    assert!(p.http.header_read_timeout_s <= 10, "the issue's ceiling");
    assert!(p.http.max_connections >= 64 && p.http.max_sessions >= 16);
    for (text, key) in [
        (
            "[http]\nheader_read_timeout_s = 0",
            "http.header_read_timeout_s",
        ),
        (
            "[http]\nheader_read_timeout_s = 301",
            "http.header_read_timeout_s",
        ),
        ("[http]\nmax_connections = 0", "http.max_connections"),
        ("[http]\nmax_sessions = 0", "http.max_sessions"),
        ("[http]\nmax_sessions = -1", "http.max_sessions"),
    ] {
        assert_eq!(key_of(text), key, "{text}");
    }
}

#[test]
fn an_unknown_key_is_named() {
    assert_eq!(key_of("read_onyl = true"), "read_onyl");
    assert_eq!(
        key_of("[platform]\nrequest_timeout = 5"),
        "platform.request_timeout"
    );
    let err = Policy::from_toml_str("[http]\ntoken = 'x'").expect_err("unknown");
    assert_eq!(err.to_string(), "policy key http.token: unknown key");
}

#[test]
fn a_wrong_type_is_named() {
    assert_eq!(key_of("max_gpus_per_run = \"eight\""), "max_gpus_per_run");
    assert_eq!(key_of("confirm = \"robot\""), "confirm");
    assert_eq!(
        key_of("[platform]\ncreate_timeout_s = -1"),
        "platform.create_timeout_s"
    );
    assert_eq!(key_of("allowed_teams = \"team_abc\""), "allowed_teams");
    assert_eq!(key_of("max_active_runs = -2"), "max_active_runs");
}

#[test]
fn plan_mode_requires_both_cost_caps() {
    let err = Policy::from_toml_str("confirm = \"plan\"\nmax_cost_per_hour_usd = 10.0")
        .expect_err("one cap");
    assert_eq!(err.key(), Some("confirm"));
    assert!(
        err.to_string().contains("max_active_cost_per_hour_usd"),
        "{err}"
    );
    Policy::from_toml_str(
        "confirm = \"plan\"\nmax_cost_per_hour_usd = 10.0\nmax_active_cost_per_hour_usd = 20.0",
    )
    .expect("both caps");
}

#[test]
fn zero_and_negative_caps_are_refused() {
    assert_eq!(
        key_of("max_cost_per_hour_usd = -5.0"),
        "max_cost_per_hour_usd"
    );
    assert_eq!(
        key_of("max_active_cost_per_hour_usd = 0"),
        "max_active_cost_per_hour_usd"
    );
    assert_eq!(
        key_of("reserved_price_per_gpu_hour_usd = -1.0"),
        "reserved_price_per_gpu_hour_usd"
    );
    assert_eq!(key_of("max_gpus_per_run = 0"), "max_gpus_per_run");
    assert_eq!(key_of("max_steps = 0"), "max_steps");
    assert_eq!(key_of("plan_ttl_seconds = 0"), "plan_ttl_seconds");
    assert_eq!(
        key_of("max_cost_per_hour_usd = nan"),
        "max_cost_per_hour_usd"
    );
    assert_eq!(
        key_of("[platform]\nconnect_timeout_s = 0"),
        "platform.connect_timeout_s"
    );
}

#[test]
fn a_syntax_error_gives_a_position() {
    match Policy::from_toml_str("read_only = \n") {
        Err(PolicyError::Syntax { line, .. }) => assert_eq!(line, 1),
        other => panic!("expected a syntax error, got {other:?}"),
    }
}

#[test]
fn tool_names_are_checked_against_the_catalogue() {
    let p = Policy::from_toml_str("toolsets = [\"runs\", \"bogus\"]").expect("parses");
    let err = p
        .check_tool_names(&["account", "runs"], &["whoami"])
        .expect_err("bogus");
    assert_eq!(err.key(), Some("toolsets"));
    assert!(err.to_string().contains("bogus"));
}

#[test]
fn the_state_url_never_holds_a_password_and_the_lease_and_public_url_are_checked() {
    let p = Policy::from_toml_str(
        "[state]\nurl = \"postgres://factory@db:5432/factory?sslmode=require\"\n\
         password_file = \"/etc/factory/pgpass\"\ndispatch_lease_seconds = 5\n\
         [http]\npublic_url = \"https://factory.example.com\"",
    )
    .expect("a shared store");
    assert_eq!(p.state.dispatch_lease_seconds, Some(5));
    assert_eq!(
        p.http.public_url.as_deref(),
        Some("https://factory.example.com")
    );
    let refused =
        Policy::from_toml_str("[state]\nurl = \"postgres://factory:hunter2@db/f\"").unwrap_err();
    let said = refused.to_string();
    assert_eq!(refused.key(), Some("state.url"));
    assert!(
        said.contains("password_file") && said.contains("FACTORY_MCP_STATE_PASSWORD"),
        "{said}"
    );
    assert!(!said.contains("hunter2"), "{said}");
    for (text, key) in [
        ("[state]\nurl = \"mysql://db/f\"", "state.url"),
        (
            "[state]\ndispatch_lease_seconds = 0",
            "state.dispatch_lease_seconds",
        ),
        (
            "[http]\npublic_url = \"factory.example.com\"",
            "http.public_url",
        ),
    ] {
        assert_eq!(key_of(text), key, "{text}");
    }
}
