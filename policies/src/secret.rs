//! The vocabulary shared by detection, the secret guard and redaction: the kinds of secret
//! ([`SecretKind`]), the secret values the server holds ([`KnownSecrets`]) and the marker a
//! redacted span becomes ([`REDACTED`]). It depends on nothing else in this crate, so
//! `detect` → `secret_guard`/`redact` form a chain with no cycle.

use std::fmt;

use secrecy::{ExposeSecret as _, SecretString};

/// What every redacted span becomes.
pub const REDACTED: &str = "[REDACTED]";

/// The secret values the server holds, each with the name it is known by. Values shorter than
/// [`KnownSecrets::MIN_LEN`] characters are ignored: too short to match without refusing
/// ordinary text (the shapes still apply to them).
#[derive(Clone, Default)]
pub struct KnownSecrets {
    entries: Vec<(String, SecretString)>,
}

impl fmt::Debug for KnownSecrets {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KnownSecrets")
            .field(
                "names",
                &self.entries.iter().map(|(n, _)| n).collect::<Vec<_>>(),
            )
            .finish()
    }
}

impl KnownSecrets {
    /// Known values shorter than this many characters are not matched.
    pub const MIN_LEN: usize = 8;
    /// The environment variables whose values the server holds and must never echo.
    pub const ENV_NAMES: [&'static str; 3] = ["PRIME_API_KEY", "WANDB_API_KEY", "HF_TOKEN"];

    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a value (trimmed). Returns `false` when it was ignored as too short to match safely.
    pub fn add(&mut self, name: impl Into<String>, value: &SecretString) -> bool {
        let trimmed = value.expose_secret().trim();
        if !usable_known_value(trimmed) {
            return false;
        }
        if self
            .entries
            .iter()
            .any(|(_, v)| v.expose_secret() == trimmed)
        {
            return true;
        }
        self.entries
            .push((name.into(), SecretString::from(trimmed.to_string())));
        true
    }

    /// Builder form of [`KnownSecrets::add`].
    pub fn with(mut self, name: impl Into<String>, value: &SecretString) -> Self {
        self.add(name, value);
        self
    }

    /// The values of [`KnownSecrets::ENV_NAMES`] found through `get` (the process environment,
    /// or an env file already parsed by the caller).
    pub fn from_env(get: impl Fn(&str) -> Option<String>) -> Self {
        let mut known = Self::new();
        for name in Self::ENV_NAMES {
            if let Some(v) = get(name) {
                known.add(name, &SecretString::from(v));
            }
        }
        known
    }

    /// Adds every entry of `other`.
    pub fn extend(&mut self, other: &KnownSecrets) {
        for (name, value) in &other.entries {
            self.add(name.clone(), value);
        }
    }

    /// The names of the held values (never the values).
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.entries.iter().map(|(n, _)| n.as_str())
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = (&str, &SecretString)> {
        self.entries.iter().map(|(n, v)| (n.as_str(), v))
    }
}

/// What a refused value looks like. `Display` gives the phrase used in refusals.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum SecretKind {
    /// Contains the value (or an encoding of it) of a secret the server holds.
    KnownValue {
        name: String,
    },
    HuggingFaceToken,
    OpenAiKey,
    AnthropicKey,
    GitHubToken,
    AwsAccessKeyId,
    AwsSecretAccessKey,
    Jwt,
    PemPrivateKey,
    /// A `pit_…` key, or any value of an `api_key` field (the `~/.prime/config.json` layout).
    PrimeApiKey,
    TailscaleKey,
    BearerToken,
    /// A bare hex/base64 value (or any value, for names like `password`) under a key that
    /// says secret.
    SecretNamedValue,
    /// `NAME=VALUE` or `name: value` inside a string, where the name says secret.
    SecretAssignment,
    /// A `NAME=VALUE` entry in an environment list, which accepts names only.
    EnvAssignment,
    /// 40 hex characters under `[monitors.wandb]` (any `monitors.wandb` table): the shape of
    /// a W&B API key, in the one table where one gets pasted. Elsewhere 40 hex reads as a
    /// commit SHA and stays allowed.
    WandbApiKey,
}

impl fmt::Display for SecretKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SecretKind::KnownValue { name } => {
                write!(f, "contains the value of {name} held by the server")
            }
            SecretKind::HuggingFaceToken => f.write_str("looks like a Hugging Face token (hf_…)"),
            SecretKind::OpenAiKey => f.write_str("looks like an OpenAI-style API key (sk-…)"),
            SecretKind::AnthropicKey => f.write_str("looks like an Anthropic API key (sk-ant-…)"),
            SecretKind::GitHubToken => {
                f.write_str("looks like a GitHub token (ghp_…/github_pat_…)")
            }
            SecretKind::AwsAccessKeyId => {
                f.write_str("looks like an AWS access key id (AKIA…/ASIA…)")
            }
            SecretKind::AwsSecretAccessKey => f.write_str(
                "looks like an AWS secret access key (40 characters beside an access key id)",
            ),
            SecretKind::Jwt => f.write_str("looks like a JSON Web Token (eyJ….eyJ….…)"),
            SecretKind::PemPrivateKey => {
                f.write_str("looks like a PEM private key (-----BEGIN … PRIVATE KEY-----)")
            }
            SecretKind::PrimeApiKey => f.write_str("looks like a Prime API key"),
            SecretKind::TailscaleKey => f.write_str("looks like a Tailscale key (tskey-…)"),
            SecretKind::BearerToken => f.write_str("looks like a bearer token"),
            SecretKind::SecretNamedValue => {
                f.write_str("is a secret-looking value in a field whose name says secret")
            }
            SecretKind::SecretAssignment => {
                f.write_str("assigns a value to a name that says secret (NAME=VALUE)")
            }
            SecretKind::WandbApiKey => {
                f.write_str("looks like a W&B API key (40 hex characters under [monitors.wandb])")
            }
            SecretKind::EnvAssignment => {
                f.write_str("is a NAME=VALUE entry; env entries take names only")
            }
        }
    }
}

/// Whether a known value can be matched safely: long enough, and not part of the marker that
/// replaces it (which would make redaction loop).
pub(crate) fn usable_known_value(v: &str) -> bool {
    v.chars().count() >= KnownSecrets::MIN_LEN && !REDACTED.contains(v)
}
