//! Redaction of what leaves the server: known values in every encoding we cover, credential
//! shapes, secret-named fields in JSON; idempotent, and silent on ordinary text.

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
use factory_policies::{KnownSecrets, REDACTED, Redactor};
use proptest::prelude::*;
use secrecy::SecretString;
use serde_json::json;

const KEY: &str = "pk/live+Secret Value=42\"x";
const HF: &str = "wandb0123456789abcdef0123456789abcdef0123";

fn redactor() -> Redactor {
    Redactor::new(
        KnownSecrets::new()
            .with("PRIME_API_KEY", &SecretString::from(KEY))
            .with("WANDB_API_KEY", &SecretString::from(HF)),
    )
}

fn url_encode(s: &str, lower: bool, plus: bool) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else if b == b' ' && plus {
            out.push('+');
        } else if lower {
            out.push_str(&format!("%{b:02x}"));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn forms(v: &str) -> Vec<String> {
    let json_escaped = serde_json::to_string(v).unwrap_or_default();
    let json_inner = json_escaped[1..json_escaped.len() - 1].to_string();
    vec![
        v.to_string(),
        json_inner.clone(),
        json_inner.replace('/', "\\/"),
        url_encode(v, false, false),
        url_encode(v, true, false),
        url_encode(v, false, true),
        url_encode(v, true, true),
        STANDARD.encode(v),
        STANDARD_NO_PAD.encode(v),
        URL_SAFE.encode(v),
        URL_SAFE_NO_PAD.encode(v),
    ]
}

#[test]
fn known_values_are_redacted_in_every_covered_form() {
    let r = redactor();
    for v in [KEY, HF] {
        for form in forms(v) {
            let text = format!("before {form} after");
            let out = r.redact(&text);
            assert_eq!(out, format!("before {REDACTED} after"), "form {form}");
        }
    }
}

#[test]
fn a_known_value_inside_a_larger_base64_blob_is_redacted_at_each_alignment() {
    let r = redactor();
    for prefix in ["", "a", "ab", "abc", "abcd"] {
        let blob = STANDARD.encode(format!("{prefix}{{\"key\":\"{KEY}\"}} and more"));
        let out = r.redact(&blob);
        assert!(out.contains(REDACTED), "prefix {prefix:?}: {out}");
        // At most 3 characters of the value's encoding survive on either side of the marker.
        let core = &STANDARD.encode(KEY)[4..16];
        assert!(!out.contains(core), "prefix {prefix:?}");
    }
}

#[test]
fn known_values_are_redacted_inside_json_text() {
    let r = redactor();
    let body =
        serde_json::to_string(&json!({"header": format!("Bearer-ish {KEY}")})).unwrap_or_default();
    let out = r.redact(&body);
    assert!(!out.contains("Secret Value"), "{out}");
}

#[test]
fn shapes_are_redacted_and_ordinary_text_is_not() {
    let r = Redactor::default();
    let token = format!("hf_{}", "AbCdEfGh12".repeat(3) + "XyZw");
    let jwt = format!(
        "eyJhbGciOiJIUzI1NiJ9.eyJ{}.{}",
        "zdWIiOiIxMjM0NTY3ODkwIn0", "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
    );
    let pem = "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhk\n-----END PRIVATE KEY-----";
    let text = format!("token {token}, jwt {jwt}\n{pem}\nHF_TOKEN=hunter2hunter2 done");
    let out = r.redact(&text);
    assert_eq!(
        out,
        format!("token {REDACTED}, jwt {REDACTED}\n{REDACTED}\nHF_TOKEN={REDACTED} done")
    );
    let ordinary = "run cm9x2k3l40001abcd1234efgh at commit \
                    4b825dc642cb6eb9a060e54bf8d69288fbee4904 on Qwen/Qwen3-0.6B, max_tokens=2048";
    assert!(matches!(r.redact(ordinary), std::borrow::Cow::Borrowed(_)));
}

#[test]
fn redact_json_covers_strings_keys_and_secret_named_fields() {
    let r = redactor();
    let mut v = json!({
        "logs": format!("using {KEY}"),
        KEY: 1,
        "wandbApiKey": "0123456789abcdef0123456789abcdef01234567",
        "api_key": "an-undocumented-key",
        "env": ["HF_TOKEN"],
        "commit": "4b825dc642cb6eb9a060e54bf8d69288fbee4904",
        "nested": [{"tokenValue": "Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MA=="}],
    });
    r.redact_json(&mut v);
    let text = v.to_string();
    assert!(!text.contains("Secret Value"));
    assert!(!text.contains("0123456789abcdef0123"));
    assert!(!text.contains("an-undocumented-key"));
    assert!(!text.contains("Zm9vYmFy"));
    assert_eq!(v["logs"], json!(format!("using {REDACTED}")));
    assert_eq!(v[REDACTED], json!(1));
    assert_eq!(v["env"], json!(["HF_TOKEN"]));
    assert_eq!(
        v["commit"],
        json!("4b825dc642cb6eb9a060e54bf8d69288fbee4904")
    );
    let before = v.clone();
    r.redact_json(&mut v);
    assert_eq!(v, before, "redact_json is idempotent");
}

#[test]
fn the_marker_and_a_marker_shaped_known_value_are_stable() {
    let r = Redactor::new(KnownSecrets::new().with("X", &SecretString::from("REDACTED")));
    assert_eq!(r.redact("[REDACTED] REDACTED"), "[REDACTED] REDACTED");
}

fn known_value() -> impl Strategy<Value = String> {
    prop_oneof![
        "[A-Za-z0-9_\\-]{8,40}",
        "[ -~]{8,30}",
        "[a-f0-9]{40}",
        "\\PC{8,16}",
    ]
    .prop_filter("not blank", |s| s.trim().chars().count() >= 8)
}

fn encode(v: &str, how: u8) -> String {
    match how % 8 {
        0 => v.to_string(),
        1 => {
            let j = serde_json::to_string(v).unwrap_or_default();
            j[1..j.len() - 1].to_string()
        }
        2 => url_encode(v, false, false),
        3 => url_encode(v, true, true),
        4 => STANDARD.encode(v),
        5 => URL_SAFE_NO_PAD.encode(v),
        6 => STANDARD.encode(format!("x{v}yz")),
        _ => serde_json::to_string(&json!({ "k": v })).unwrap_or_default(),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn redaction_is_idempotent_and_leaves_no_known_value(
        secrets in prop::collection::vec(known_value(), 1..3),
        pieces in prop::collection::vec(("\\PC{0,12}", any::<u8>(), any::<u8>()), 1..6),
    ) {
        let mut known = KnownSecrets::new();
        for (i, s) in secrets.iter().enumerate() {
            known.add(format!("S{i}"), &SecretString::from(s.clone()));
        }
        let r = Redactor::new(known);
        let mut text = String::new();
        for (filler, which, how) in &pieces {
            text.push_str(filler);
            let secret = &secrets[*which as usize % secrets.len()];
            text.push_str(&encode(secret, *how));
        }
        let once = r.redact(&text).into_owned();
        let twice = r.redact(&once).into_owned();
        prop_assert_eq!(&once, &twice);
        for s in &secrets {
            let s = s.trim();
            if s.chars().count() < KnownSecrets::MIN_LEN || REDACTED.contains(s) {
                continue;
            }
            for form in forms(s) {
                prop_assert!(!once.contains(&form), "a form of a known value survived");
            }
        }
    }

    #[test]
    fn redaction_of_arbitrary_text_is_idempotent(text in "\\PC{0,200}") {
        let r = redactor();
        let once = r.redact(&text).into_owned();
        prop_assert_eq!(r.redact(&once).into_owned(), once);
    }
}
