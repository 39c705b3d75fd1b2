//! The secret guard as the tools see it: credentials in arguments and TOML are refused with
//! the path and kind named, never the value; ordinary ids and hashes pass.

use factory_policies::secret_guard::{
    EnvEntry, KnownSecrets, SecretFinding, SecretGuard, SecretKind, describe_findings,
    name_says_secret, parse_env_entry,
};
use secrecy::SecretString;
use serde_json::json;

// Fake credentials, assembled at run time so that no scanner mistakes this file for a leak.
fn hf() -> String {
    format!("hf_{}", "AbCdEfGh12".repeat(3) + "XyZw")
}
fn openai() -> String {
    format!("sk-proj-{}", "a1B2c3D4e5".repeat(4))
}
fn anthropic() -> String {
    format!("sk-ant-api03-{}", "Zz9Yy8Xx7W".repeat(4))
}
fn ghp() -> String {
    format!("ghp_{}", "a1B2c3".repeat(6))
}
fn github_pat() -> String {
    format!("github_pat_{}", "11ABCDEFG0".repeat(3))
}
fn akia() -> String {
    format!("AKIA{}", "IOSFODNN7EXAMPLE")
}
fn asia() -> String {
    format!("ASIA{}", "Q2W3E4R5T6Y7U8I9")
}
fn aws_secret() -> String {
    format!("wJalrXUtnFEMI/K7MDENG/{}", "bPxRfiCYEXAMPLEKEY")
}
fn jwt() -> String {
    format!(
        "eyJhbGciOiJIUzI1NiJ9.eyJ{}.{}",
        "zdWIiOiIxMjM0NTY3ODkwIn0", "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
    )
}
fn pem() -> String {
    format!(
        "-----BEGIN {}PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END {}PRIVATE KEY-----\n",
        "RSA ", "RSA "
    )
}
fn pit() -> String {
    format!("pit_{}", "9f8E7d6C5b4A".repeat(3))
}

fn shapes() -> Vec<(String, SecretKind)> {
    vec![
        (hf(), SecretKind::HuggingFaceToken),
        (openai(), SecretKind::OpenAiKey),
        (anthropic(), SecretKind::AnthropicKey),
        (ghp(), SecretKind::GitHubToken),
        (github_pat(), SecretKind::GitHubToken),
        (akia(), SecretKind::AwsAccessKeyId),
        (asia(), SecretKind::AwsAccessKeyId),
        (jwt(), SecretKind::Jwt),
        (pem(), SecretKind::PemPrivateKey),
        (pit(), SecretKind::PrimeApiKey),
        (
            format!("tskey-auth-{}", "kX1cNTRL11CNTRL-abcdef"),
            SecretKind::TailscaleKey,
        ),
        (
            format!("Bearer {}", "Zm9vYmFyYmF6cXV4cXV1eA"),
            SecretKind::BearerToken,
        ),
    ]
}

fn guard() -> SecretGuard {
    SecretGuard::new(KnownSecrets::new())
}

fn kinds(findings: &[SecretFinding]) -> Vec<SecretKind> {
    findings.iter().map(|f| f.kind.clone()).collect()
}

fn assert_never_echoes(findings: &[SecretFinding], value: &str) {
    let probe: String = value.chars().take(12).collect();
    for f in findings {
        let text = f.to_string();
        assert!(!text.contains(&probe), "finding echoes the value: {text}");
        assert!(!f.path.contains(&probe));
    }
    assert!(!describe_findings(findings).contains(&probe));
}

#[test]
fn each_shape_is_refused_as_a_top_level_value() {
    let g = guard();
    for (value, kind) in shapes() {
        let err = g
            .check_json(&json!(value), "arguments.run_name")
            .expect_err(&format!("{kind:?} passed"));
        assert!(kinds(&err).contains(&kind), "{kind:?}: got {err:?}");
        assert_eq!(err[0].path, "arguments.run_name");
        assert_never_echoes(&err, &value);
    }
}

#[test]
fn each_shape_is_refused_in_a_nested_object_and_a_list_item() {
    let g = guard();
    for (value, kind) in shapes() {
        let args = json!({"options": {"notes": format!("see {value} here")}});
        let err = g.check_json(&args, "arguments").expect_err("nested");
        assert!(kinds(&err).contains(&kind), "{kind:?}: {err:?}");
        assert_eq!(err[0].path, "arguments.options.notes");
        assert_never_echoes(&err, &value);

        let args = json!({"tags": ["ok", value.clone()]});
        let err = g.check_json(&args, "arguments").expect_err("list");
        assert!(kinds(&err).contains(&kind));
        assert_eq!(err[0].path, "arguments.tags[1]");
        assert_never_echoes(&err, &value);
    }
}

#[test]
fn each_shape_is_refused_as_a_toml_string_and_as_a_toml_key() {
    let g = guard();
    for (value, kind) in shapes() {
        let mut table = toml::Table::new();
        let mut wandb = toml::Table::new();
        wandb.insert("project".into(), toml::Value::String(value.clone()));
        table.insert("wandb".into(), toml::Value::Table(wandb));
        let err = g
            .check_toml(&toml::Value::Table(table), "config")
            .expect_err("toml string");
        assert!(kinds(&err).contains(&kind), "{kind:?}: {err:?}");
        assert_eq!(err[0].path, "config.wandb.project");
        assert_never_echoes(&err, &value);

        let mut table = toml::Table::new();
        table.insert(value.clone(), toml::Value::Integer(1));
        let err = g
            .check_toml(&toml::Value::Table(table), "config")
            .expect_err("toml key");
        assert!(kinds(&err).contains(&kind), "{kind:?}: {err:?}");
        assert_eq!(err[0].path, "config[key #0]");
        assert_never_echoes(&err, &value);
    }
}

#[test]
fn toml_text_is_checked_including_comments() {
    let g = guard();
    let text = format!(
        "[wandb]\nproject = \"x\"\n# token: {}\n[model]\nname = \"Qwen/Qwen3-0.6B\"\n",
        hf()
    );
    let err = g.check_toml_str(&text, "config").expect_err("comment");
    assert_eq!(err[0].kind, SecretKind::HuggingFaceToken);
    assert_eq!(err[0].path, "config (line 3)");
    assert_never_echoes(&err, &hf());

    let text = format!(
        "[wandb]\napi_key = \"{}\"\n",
        "0123456789abcdef0123456789abcdef01234567"
    );
    let err = g.check_toml_str(&text, "config").expect_err("api_key");
    assert!(
        err.iter().any(|f| f.path == "config.wandb.api_key"),
        "{err:?}"
    );
    assert!(
        !err.iter()
            .any(|f| f.to_string().contains("0123456789abcdef"))
    );
}

#[test]
fn an_aws_secret_key_beside_an_access_key_id_is_refused() {
    let g = guard();
    let args = json!({"creds": {"id": akia(), "other": aws_secret()}});
    let err = g.check_json(&args, "arguments").expect_err("aws");
    assert!(
        err.iter()
            .any(|f| f.kind == SecretKind::AwsSecretAccessKey && f.path == "arguments.creds.other")
    );
    let err = g
        .check_json(&json!(format!("{} {}", akia(), aws_secret())), "a")
        .expect_err("same string");
    assert!(kinds(&err).contains(&SecretKind::AwsSecretAccessKey));
    // Alone, a 40-character base64 string in a non-secret field passes.
    g.check_json(&json!({"other": aws_secret()}), "arguments")
        .expect("no access key id beside it");
}

#[test]
fn known_values_are_refused_raw_and_encoded() {
    let key = "prime-key-0123-abcd-XYZ/+=";
    let known = KnownSecrets::new().with("PRIME_API_KEY", &SecretString::from(key));
    let g = SecretGuard::new(known);
    for form in [
        key.to_string(),
        format!("Authorization: {key}"),
        "prime-key-0123-abcd-XYZ%2F%2B%3D".to_string(),
        base64_std(key),
    ] {
        let err = g
            .check_json(&json!({"x": form}), "arguments")
            .expect_err(&form);
        assert_eq!(
            err[0].kind,
            SecretKind::KnownValue {
                name: "PRIME_API_KEY".into()
            }
        );
        assert!(err[0].to_string().contains("PRIME_API_KEY"));
        assert_never_echoes(&err, key);
    }
}

fn base64_std(s: &str) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(s)
}

#[test]
fn short_known_values_are_ignored() {
    let mut known = KnownSecrets::new();
    assert!(!known.add("HF_TOKEN", &SecretString::from("abc")));
    assert!(known.is_empty());
    let g = SecretGuard::new(known);
    g.check_json(&json!("abc abc"), "a")
        .expect("too short to match");
}

#[test]
fn ordinary_ids_hashes_and_names_pass() {
    let g = guard();
    let args = json!({
        "commit": "4b825dc642cb6eb9a060e54bf8d69288fbee4904",
        "source_ref": "a60a606e1f2b3c4d5e6f708192a3b4c5d6e7f809",
        "sha256": "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
        "run_id": "cm9x2k3l40001abcd1234efgh",
        "model": "Qwen/Qwen3-0.6B",
        "models": ["meta-llama/Llama-3.1-8B-Instruct", "PrimeIntellect/INTELLECT-3"],
        "team_id": "clx1y2z3a0000abcdefgh1234",
        "gpu_type": "H100_80GB",
        "name": "reverse-text-rl-2026-07-28",
        "env": ["HF_TOKEN", "WANDB_API_KEY"],
        "tokenizer": "Qwen/Qwen3-0.6B",
        "max_tokens": 2048,
        "description": "a task-specific run, see sk-learn docs",
        "image_tag": "sha-4b825dc",
        "api_key": "${PRIME_API_KEY}",
        "hf_token": "HF_TOKEN",
        "checksum": "d41d8cd98f00b204e9800998ecf8427e",
        "url": "https://app.primeintellect.ai/dashboard/training/cm9x2k3l40001abcd1234efgh",
    });
    g.check_json(&args, "arguments")
        .expect("ordinary values must pass");
    let toml_doc = r#"
        max_steps = 100
        [model]
        name = "Qwen/Qwen3-0.6B"
        [orchestrator.train.source.env.taskset]
        id = "reverse-text"
        [trainer]
        env_vars = { NCCL_DEBUG = "INFO", VLLM_USE_V1 = "1" }
        [ckpt]
        commit = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
    "#;
    g.check_toml_str(toml_doc, "config")
        .expect("an ordinary config passes");
}

#[test]
fn hex_and_base64_are_refused_only_where_the_name_says_secret() {
    let g = guard();
    let hex40 = "0123456789abcdef0123456789abcdef01234567";
    let b64 = "Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MA==";
    for key in [
        "WANDB_API_KEY",
        "hf_token",
        "client_secret",
        "db_password",
        "accessKey",
    ] {
        for value in [hex40, b64] {
            let err = g
                .check_json(&json!({ key: value }), "arguments")
                .expect_err(key);
            assert_eq!(err[0].path, format!("arguments.{key}"));
            assert_never_echoes(&err, value);
        }
    }
    for key in ["commit", "sha", "digest", "run_id", "checksum", "etag"] {
        for value in [hex40, b64] {
            g.check_json(&json!({ key: value }), "arguments")
                .expect(key);
        }
    }
}

#[test]
fn an_api_key_field_is_refused_whatever_its_value() {
    // `~/.prime/config.json` layout: the key's format is not documented, so any value counts.
    let g = guard();
    let config_json = json!({"api_key": "some-opaque-key-value", "team_id": null});
    let err = g
        .check_json(&config_json, "arguments.config")
        .expect_err("api_key");
    assert_eq!(err[0].kind, SecretKind::PrimeApiKey);
    assert_eq!(err[0].path, "arguments.config.api_key");
    // The same document pasted into a string.
    let pasted =
        json!({"notes": "{\n  \"api_key\": \"some-opaque-key-value\",\n  \"team_id\": null\n}"});
    let err = g.check_json(&pasted, "arguments").expect_err("pasted");
    assert!(!err.is_empty());
    assert_never_echoes(&err, "some-opaque-key-value");
    // An empty key (as in a fresh config.json) passes.
    g.check_json(&json!({"api_key": ""}), "a").expect("empty");
}

#[test]
fn env_entries_take_names_only() {
    let g = guard();
    let err = g
        .check_json(
            &json!({"env": ["WANDB_API_KEY", "HF_TOKEN=abc"]}),
            "arguments",
        )
        .expect_err("assignment");
    assert_eq!(err[0].path, "arguments.env[1]");
    assert_eq!(err[0].kind, SecretKind::EnvAssignment);
    assert!(!err[0].to_string().contains("abc"));
    let err = g
        .check_env_list(&["FOO=bar"], "arguments.env")
        .expect_err("any value");
    assert_eq!(err[0].path, "arguments.env[0]");
    g.check_env_list(&["HF_TOKEN", "WANDB_API_KEY"], "arguments.env")
        .expect("names");
    assert_eq!(parse_env_entry("HF_TOKEN"), EnvEntry::Name("HF_TOKEN"));
    assert_eq!(
        parse_env_entry("HF_TOKEN=x"),
        EnvEntry::Assignment {
            name: "HF_TOKEN",
            has_value: true
        }
    );
    assert_eq!(
        parse_env_entry("HF_TOKEN=\"\""),
        EnvEntry::Assignment {
            name: "HF_TOKEN",
            has_value: false
        }
    );
    assert_eq!(parse_env_entry("not a name"), EnvEntry::Other);
    // A secret-named assignment is refused outside env lists too, and in env_vars tables.
    let err = g
        .check_json(
            &json!({"args": ["--flag", "HF_TOKEN=hunter22"]}),
            "arguments",
        )
        .expect_err("assignment elsewhere");
    assert_eq!(err[0].kind, SecretKind::SecretAssignment);
    let err = g
        .check_toml_str(
            "[trainer]\nenv_vars = { HF_TOKEN = \"hunter2\" }\n",
            "config",
        )
        .expect_err("env_vars");
    assert_eq!(err[0].path, "config.trainer.env_vars.HF_TOKEN");
}

#[test]
fn a_refusal_reads_as_advice() {
    let g = guard();
    let err = g
        .check_json(&json!({"env": [hf()]}), "arguments")
        .expect_err("hf");
    let text = err[0].to_string();
    assert!(
        text.starts_with("arguments.env[0]: looks like a Hugging Face token (hf_…); pass secrets by name, e.g. env: [\"HF_TOKEN\"]"),
        "{text}"
    );
}

#[test]
fn name_rules() {
    assert!(name_says_secret("MY_SERVICE_KEY"));
    assert!(name_says_secret("X_TOKEN_FILE"));
    assert!(name_says_secret("aws_secret_access_key"));
    assert!(!name_says_secret("tokenizer_name"));
    assert!(!name_says_secret("commit_sha"));
}

#[test]
fn a_loose_assignment_in_prose_passes_the_guard_but_an_opaque_one_does_not() {
    let g = guard();
    g.check_json(
        &json!({"notes": "the reset_token: see-the-runbook-page for ops"}),
        "a",
    )
    .expect("a non-opaque value under a weak name is prose");
    let err = g
        .check_json(
            &json!({"notes": "export WANDB_API_KEY=0123456789abcdef0123456789abcdef01234567"}),
            "arguments",
        )
        .expect_err("opaque value");
    assert_eq!(err[0].kind, SecretKind::SecretAssignment);
    let err = g
        .check_toml_str(
            "# WANDB_API_KEY=0123456789abcdef0123456789abcdef01234567\nx = 1\n",
            "config",
        )
        .expect_err("comment");
    assert_eq!(err[0].path, "config (line 1)");
    let err = g
        .check_toml_str("[wandb]\napi_key = \"abcdefgh-ijkl\"\n", "config")
        .expect_err("api_key");
    assert_eq!(err.len(), 1, "reported once, under its key: {err:?}");
    assert_eq!(err[0].path, "config.wandb.api_key");
}

#[test]
fn forty_hex_under_monitors_wandb_is_refused_as_a_wandb_key_but_a_commit_sha_passes() {
    let g = guard();
    let key = "0123456789abcdef".repeat(3)[..40].to_string();
    for table in [
        "monitors.wandb",
        "trainer.monitors.wandb",
        "orchestrator.monitors.wandb",
    ] {
        for field in ["project", "name", "api_key_hint", "entity"] {
            let doc = format!("[{table}]\n{field} = \"{key}\"\n");
            let err = g
                .check_toml_str(&doc, "config")
                .expect_err("40 hex under [monitors.wandb] is a pasted W&B key");
            assert!(
                err.iter().any(|f| f.kind == SecretKind::WandbApiKey
                    && f.path == format!("config.{table}.{field}")),
                "{table}.{field}: {err:?}"
            );
            // The refusal names the place and the kind, never the value.
            assert!(!describe_findings(&err).contains(&key));
        }
    }
    // The same 40 hex elsewhere reads as a commit SHA.
    let doc = format!(
        "[ckpt]\ncommit = \"{key}\"\n[monitors.wandb]\nproject = \"reverse-text\"\n[orchestrator.train.source.env.taskset]\nrevision = \"{key}\"\n"
    );
    g.check_toml_str(&doc, "config")
        .expect("40 hex outside [monitors.wandb] is a commit SHA");
}
