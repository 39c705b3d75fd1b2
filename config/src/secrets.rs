//! Keeping secret values out of findings: credential-shaped strings and values of keys whose
//! name says "secret" are described by their kind, never quoted. (The full secret guard lives
//! in `policies`; this is only what the validator needs to word its own messages.)

use std::sync::LazyLock;

use regex::Regex;

/// Credential shapes recognised with high confidence, with the words used to describe them.
static SHAPES: LazyLock<Vec<(Regex, &'static str)>> = LazyLock::new(|| {
    [
        (r"hf_[A-Za-z0-9]{20,}", "a Hugging Face token"),
        (r"sk-[A-Za-z0-9_\-]{20,}", "an API secret key (sk-…)"),
        (r"gh[pousr]_[A-Za-z0-9]{30,}", "a GitHub token"),
        (r"github_pat_[A-Za-z0-9_]{20,}", "a GitHub token"),
        (r"(?:AKIA|ASIA)[A-Z0-9]{16}", "an AWS access key id"),
        (
            r"eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}",
            "a JSON Web Token",
        ),
        (r"-----BEGIN [A-Z ]*PRIVATE KEY-----", "a PEM private key"),
    ]
    .into_iter()
    .filter_map(|(re, what)| Regex::new(re).ok().map(|r| (r, what)))
    .collect()
});

static SECRET_NAME: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(
        r"(?i)(^|[_\-.])(api_?key|key|token|secret|password|passwd|pwd|credentials?|authorization|cookie|bearer)$|token|secret|password",
    )
    .ok()
});

/// The kind of credential `value` looks like, if it looks like one.
pub(crate) fn credential_kind(value: &str) -> Option<&'static str> {
    SHAPES
        .iter()
        .find(|(re, _)| re.is_match(value))
        .map(|(_, what)| *what)
}

/// Whether a key or variable name says its value is secret (`*_KEY`, `*TOKEN*`, `*SECRET*`,
/// `password`, `Authorization`, …). `api_key_var`, which holds a variable *name*, is not.
pub(crate) fn is_secret_name(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    if lower.ends_with("_var") || lower.ends_with("_vars") {
        return false;
    }
    SECRET_NAME.as_ref().is_some_and(|re| re.is_match(name))
}

/// How to show `value` (held under `key`) in a message: quoted when harmless, described by
/// kind when it looks like a credential or the key looks secret.
pub(crate) fn show(key: &str, value: &str) -> String {
    if let Some(kind) = credential_kind(value) {
        return format!("<{kind}, not shown>");
    }
    if is_secret_name(key) {
        return "<a value, not shown: the key looks secret>".to_string();
    }
    let mut shown: String = value.chars().take(80).collect();
    if shown.len() < value.len() {
        shown.push('…');
    }
    format!("'{shown}'")
}

/// Show a TOML value (any type) held under `key`.
pub(crate) fn show_value(key: &str, value: &toml::Value) -> String {
    match value {
        toml::Value::String(s) => show(key, s),
        toml::Value::Table(_) => "a table".to_string(),
        toml::Value::Array(_) => "an array".to_string(),
        other if is_secret_name(key) => {
            let _ = other;
            "<a value, not shown: the key looks secret>".to_string()
        }
        other => other.to_string(),
    }
}

/// `text` with every credential-shaped substring replaced by `[redacted]` (for free text
/// from child processes).
pub fn scrub(text: &str) -> String {
    let mut out = text.to_string();
    for (re, _) in SHAPES.iter() {
        out = re.replace_all(&out, "[redacted]").into_owned();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_are_described_not_quoted() {
        let token = format!("hf_{}", "a".repeat(30));
        assert_eq!(show("name", &token), "<a Hugging Face token, not shown>");
        assert!(!show("x", &format!("sk-{}", "b".repeat(40))).contains("bbbb"));
        assert_eq!(show("project", "reverse-text"), "'reverse-text'");
    }

    #[test]
    fn secret_key_names_hide_plain_values() {
        assert!(is_secret_name("WANDB_API_KEY"));
        assert!(is_secret_name("HF_TOKEN"));
        assert!(is_secret_name("Authorization"));
        assert!(!is_secret_name("api_key_var"));
        assert!(!is_secret_name("name"));
        assert!(!show("WANDB_API_KEY", "0123456789abcdef").contains("0123"));
    }

    #[test]
    fn scrub_replaces_shapes_in_free_text() {
        let text = format!("failed with AKIA{} and more", "A".repeat(16));
        assert_eq!(scrub(&text), "failed with [redacted] and more");
    }
}
