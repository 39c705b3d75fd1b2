//! Fuzz target (proptest) for the secret guard: no input makes it panic (arbitrary JSON trees,
//! TOML text, strings, env lists), a known secret value embedded anywhere in arbitrary text is
//! always refused, and a refusal never echoes the value. Cases: 256 by default;
//! `PROPTEST_CASES=N` raises it (see `scripts/fuzz.sh`). The redactor's properties are in
//! `redact.rs`.

use factory_policies::secret_guard::{KnownSecrets, SecretGuard};
use proptest::prelude::*;
use secrecy::SecretString;
use serde_json::Value;

fn json_tree() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_map(|f| serde_json::Number::from_f64(f)
            .map(Value::Number)
            .unwrap_or(Value::Null)),
        "\\PC{0,60}".prop_map(Value::String),
        "[A-Za-z0-9+/=_\\-]{10,80}".prop_map(Value::String),
    ];
    leaf.prop_recursive(6, 64, 8, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..8).prop_map(Value::Array),
            prop::collection::vec(("\\PC{0,20}", inner), 0..8)
                .prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}

fn guard_with(value: &str) -> SecretGuard {
    SecretGuard::new(
        KnownSecrets::new().with("WANDB_API_KEY", &SecretString::from(value.to_string())),
    )
}

proptest! {
    #[test]
    fn the_guard_never_panics_on_json(v in json_tree()) {
        let g = guard_with("Zq8vR2mK7xP4nL9sT3wY6bH1");
        let _ = g.check_json(&v, "args");
    }

    #[test]
    fn the_guard_never_panics_on_text(s in "\\PC{0,400}", key in proptest::option::of("\\PC{0,20}")) {
        let g = guard_with("Zq8vR2mK7xP4nL9sT3wY6bH1");
        let _ = g.check_str(&s, "x", key.as_deref());
        let _ = g.check_toml_str(&s, "config");
        let _ = g.check_env_list(std::slice::from_ref(&s), "env");
        let _ = g.is_suspicious(&s);
    }

    #[test]
    fn a_known_value_anywhere_is_refused_and_never_echoed(
        secret in "[A-Za-z0-9_\\-]{16,40}",
        before in "\\PC{0,40}",
        after in "\\PC{0,40}",
        nest in 0usize..6,
    ) {
        let g = guard_with(&secret);
        let text = format!("{before}{secret}{after}");
        let mut v = Value::String(text.clone());
        for i in 0..nest {
            v = if i % 2 == 0 { Value::Array(vec![Value::Null, v]) } else { serde_json::json!({ "k": v }) };
        }
        let findings = g.check_json(&v, "args").expect_err("a known value must be refused");
        let shown = format!("{findings:?}");
        prop_assert!(!shown.contains(&secret), "finding echoes the value: {}", shown);
        prop_assert!(g.check_str(&text, "x", None).is_err());
    }
}

/// Deeper than anything the wire can deliver (serde_json stops parsing at depth 128): no stack
/// overflow.
#[test]
fn deeply_nested_json_is_checked_without_overflow() {
    let g = guard_with("Zq8vR2mK7xP4nL9sT3wY6bH1");
    let mut v = Value::String("Zq8vR2mK7xP4nL9sT3wY6bH1".into());
    for _ in 0..512 {
        v = Value::Array(vec![v]);
    }
    assert!(g.check_json(&v, "args").is_err());
}
