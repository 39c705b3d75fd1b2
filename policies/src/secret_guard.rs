//! The secret guard: refuses tool arguments and TOML documents that carry a secret value.
//!
//! A value is refused when it contains a *known* secret value held by the server (its
//! `PRIME_API_KEY`, the `WANDB_API_KEY`/`HF_TOKEN` values it can forward), in raw, JSON-escaped,
//! URL-encoded or base64 form; when it has a high-confidence credential shape (`hf_…`,
//! `sk-…`/`sk-ant-…`, `ghp_…`/`github_pat_…`, `AKIA…`/`ASIA…` and a 40-character secret key
//! beside one, JWTs, PEM private keys, Prime `pit_…` keys, `tskey-…`, `Bearer …`); or, for a bare
//! hex/base64 string, only when its key or variable name says secret (commit SHAs are 40 hex
//! too). Object keys are checked as well as values. A refusal names the argument path and the
//! kind, never the value — and a key that is itself a credential is not spelled in the path.

use std::collections::HashSet;
use std::fmt;

use serde_json::Value as Json;

use crate::detect::{
    Hit, KnownForms, is_aws_secret_shape, is_forty_hex, is_placeholder, looks_opaque, shape_hits,
    strong_secret_name, under_wandb_table,
};

pub use crate::detect::name_says_secret;
pub use crate::secret::{KnownSecrets, SecretKind};

/// One refused place. `Display`: `arguments.env[0]: looks like a Hugging Face token (hf_…);
/// pass secrets by name, e.g. env: ["HF_TOKEN"]`. Neither field ever holds the value.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SecretFinding {
    pub path: String,
    pub kind: SecretKind,
}

/// The advice appended to every refusal.
pub const SECRET_HINT: &str = "pass secrets by name, e.g. env: [\"HF_TOKEN\"]; the server reads \
     the value from its own environment or its configured env file";

impl fmt::Display for SecretFinding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}; {SECRET_HINT}", self.path, self.kind)
    }
}

/// All findings as one message (one line each), for an `isError` result.
pub fn describe_findings(findings: &[SecretFinding]) -> String {
    let mut lines: Vec<String> = findings
        .iter()
        .map(|f| format!("{}: {}", f.path, f.kind))
        .collect();
    lines.push(format!("Refused: {SECRET_HINT}."));
    lines.join("\n")
}

/// One entry of an environment list (`env: ["HF_TOKEN"]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EnvEntry<'a> {
    /// A bare variable name: what the tools accept.
    Name(&'a str),
    /// `NAME=VALUE`; `has_value` is false for `NAME=` and `NAME=""`.
    Assignment { name: &'a str, has_value: bool },
    /// Anything else (not a valid name).
    Other,
}

fn is_env_name(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Classifies an env-list entry. The tool layer accepts [`EnvEntry::Name`] only.
pub fn parse_env_entry(entry: &str) -> EnvEntry<'_> {
    let entry = entry.trim();
    if is_env_name(entry) {
        return EnvEntry::Name(entry);
    }
    match entry.split_once('=') {
        Some((name, value)) if is_env_name(name.trim()) => {
            let v = value.trim().trim_matches(|c| c == '"' || c == '\'');
            EnvEntry::Assignment {
                name: name.trim(),
                has_value: !v.is_empty(),
            }
        }
        _ => EnvEntry::Other,
    }
}

/// Keys whose array of strings is an environment list (names only).
fn is_env_list_key(key: &str) -> bool {
    matches!(
        key.to_ascii_lowercase().as_str(),
        "env"
            | "envs"
            | "env_var"
            | "env_vars"
            | "envvars"
            | "environment"
            | "environment_variables"
            | "secrets"
            | "secret_names"
    )
}

/// Keys whose table maps variable names to values (prime-rl `env_vars`).
fn is_env_map_key(key: &str) -> bool {
    matches!(
        key.to_ascii_lowercase().as_str(),
        "env_vars" | "envvars" | "environment" | "environment_variables"
    )
}

/// A read-only view of a JSON or TOML tree, so that one walker serves both.
enum Node<'a, T> {
    Str(&'a str),
    Map(Vec<(&'a str, &'a T)>),
    List(&'a [T]),
    Other,
}

trait Tree: Sized {
    fn node(&self) -> Node<'_, Self>;
}

impl Tree for Json {
    fn node(&self) -> Node<'_, Self> {
        match self {
            Json::String(s) => Node::Str(s),
            Json::Object(m) => Node::Map(m.iter().map(|(k, v)| (k.as_str(), v)).collect()),
            Json::Array(a) => Node::List(a),
            _ => Node::Other,
        }
    }
}

impl Tree for toml::Value {
    fn node(&self) -> Node<'_, Self> {
        match self {
            toml::Value::String(s) => Node::Str(s),
            toml::Value::Table(t) => Node::Map(t.iter().map(|(k, v)| (k.as_str(), v)).collect()),
            toml::Value::Array(a) => Node::List(a),
            _ => Node::Other,
        }
    }
}

fn push_key(path: &str, key: &str) -> String {
    let plain = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    let seg = if plain {
        key.to_string()
    } else {
        format!("[{}]", serde_json::Value::String(key.to_string()))
    };
    match (path.is_empty(), plain) {
        (true, _) => seg,
        (false, true) => format!("{path}.{seg}"),
        (false, false) => format!("{path}{seg}"),
    }
}

/// What the walker knows about the place a value sits.
#[derive(Clone, Copy, Default)]
struct Ctx<'a> {
    /// The nearest object key above the value (for array items, the array's key).
    key: Option<&'a str>,
    /// The value is an item of an environment list.
    env_list: bool,
    /// The value is a value of an environment map (its key is a variable name).
    env_map: bool,
    /// A sibling value holds an AWS access key id.
    aws_sibling: bool,
}

/// The guard. Build it once with the server's known secrets; it is cheap to query.
pub struct SecretGuard {
    known: KnownForms,
}

impl fmt::Debug for SecretGuard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SecretGuard")
            .field("known", &self.known)
            .finish()
    }
}

impl SecretGuard {
    pub fn new(known: KnownSecrets) -> Self {
        SecretGuard {
            known: KnownForms::new(&known),
        }
    }

    /// Checks every string value and every object key of a JSON argument tree. `root_path`
    /// prefixes the reported paths (e.g. `"arguments"`).
    pub fn check_json(&self, value: &Json, root_path: &str) -> Result<(), Vec<SecretFinding>> {
        self.run(value, root_path)
    }

    /// Checks a parsed TOML value (a document is a `toml::Value::Table`).
    pub fn check_toml(
        &self,
        value: &toml::Value,
        root_path: &str,
    ) -> Result<(), Vec<SecretFinding>> {
        self.run(value, root_path)
    }

    /// Checks a parsed TOML document.
    pub fn check_toml_table(
        &self,
        table: &toml::Table,
        root_path: &str,
    ) -> Result<(), Vec<SecretFinding>> {
        let mut out = Vec::new();
        let mut seen = HashSet::new();
        self.walk_map(
            table.iter().map(|(k, v)| (k.as_str(), v)).collect(),
            root_path,
            None,
            &mut out,
            &mut seen,
        );
        finish(out)
    }

    /// Checks TOML text: every string and key of the parsed document, and the raw text for
    /// known values and credential shapes (which also covers comments, and documents that do
    /// not parse). Raw-text findings are reported as `root_path (line N)`.
    pub fn check_toml_str(&self, text: &str, root_path: &str) -> Result<(), Vec<SecretFinding>> {
        let parsed = toml::from_str::<toml::Table>(text);
        let mut out = match &parsed {
            Ok(table) => self
                .check_toml_table(table, root_path)
                .err()
                .unwrap_or_default(),
            Err(_) => Vec::new(),
        };
        let reported: HashSet<SecretKind> = out.iter().map(|f| f.kind.clone()).collect();
        let mut hits = Vec::new();
        self.known.hits(text, &mut hits);
        shape_hits(text, &mut hits);
        let mut seen = HashSet::new();
        for hit in hits {
            if hit.weak || reported.contains(&hit.kind) {
                continue;
            }
            let line_start = text[..hit.range.start].rfind('\n').map_or(0, |i| i + 1);
            let in_comment = text[line_start..].trim_start().starts_with('#');
            // In a parsed document the tree walker judged every key = value already (it knows
            // the key); the raw scan adds assignments only from comments.
            if hit.kind == SecretKind::SecretAssignment && parsed.is_ok() && !in_comment {
                continue;
            }
            let line = text[..hit.range.start].matches('\n').count() + 1;
            let finding = SecretFinding {
                path: if root_path.is_empty() {
                    format!("line {line}")
                } else {
                    format!("{root_path} (line {line})")
                },
                kind: hit.kind,
            };
            if seen.insert(finding.clone()) {
                out.push(finding);
            }
        }
        finish(out)
    }

    /// Checks free text (a file's content) for known values and credential shapes, without
    /// structure: findings are `label (line N)`, one per kind. Weak `NAME=VALUE` hits count too
    /// when the value is opaque; plain words under secret-sounding names do not.
    pub fn check_text(&self, text: &str, label: &str) -> Result<(), Vec<SecretFinding>> {
        let mut hits = Vec::new();
        self.known.hits(text, &mut hits);
        shape_hits(text, &mut hits);
        let mut out = Vec::new();
        let mut kinds = HashSet::new();
        for hit in hits {
            if hit.weak || !kinds.insert(hit.kind.clone()) {
                continue;
            }
            let line = text[..hit.range.start].matches('\n').count() + 1;
            out.push(SecretFinding {
                path: format!("{label} (line {line})"),
                kind: hit.kind,
            });
        }
        finish(out)
    }

    /// Checks one string as if it were the argument at `path` with key `key` (`None` for a
    /// free-standing value).
    pub fn check_str(
        &self,
        value: &str,
        path: &str,
        key: Option<&str>,
    ) -> Result<(), Vec<SecretFinding>> {
        let mut out = Vec::new();
        let mut seen = HashSet::new();
        let ctx = Ctx {
            key,
            ..Ctx::default()
        };
        self.check_string(value, path, ctx, &mut out, &mut seen);
        finish(out)
    }

    /// Checks an environment list (`env: ["HF_TOKEN"]`): entries must be names; a `NAME=VALUE`
    /// with a value is refused, and every entry is checked for secrets like any string.
    pub fn check_env_list<S: AsRef<str>>(
        &self,
        entries: &[S],
        path: &str,
    ) -> Result<(), Vec<SecretFinding>> {
        let mut out = Vec::new();
        let mut seen = HashSet::new();
        for (i, entry) in entries.iter().enumerate() {
            let ctx = Ctx {
                key: Some("env"),
                env_list: true,
                ..Ctx::default()
            };
            self.check_string(
                entry.as_ref(),
                &format!("{path}[{i}]"),
                ctx,
                &mut out,
                &mut seen,
            );
        }
        finish(out)
    }

    /// Whether a single string holds a known value or a credential shape (no key context).
    pub fn is_suspicious(&self, value: &str) -> bool {
        self.check_str(value, "", None).is_err()
    }

    fn run<T: Tree>(&self, value: &T, root_path: &str) -> Result<(), Vec<SecretFinding>> {
        let mut out = Vec::new();
        let mut seen = HashSet::new();
        self.walk(value, root_path, Ctx::default(), &mut out, &mut seen);
        finish(out)
    }

    fn walk<'a, T: Tree>(
        &self,
        value: &'a T,
        path: &str,
        ctx: Ctx<'a>,
        out: &mut Vec<SecretFinding>,
        seen: &mut HashSet<SecretFinding>,
    ) {
        match value.node() {
            Node::Str(s) => self.check_string(s, path, ctx, out, seen),
            Node::Map(entries) => self.walk_map(entries, path, ctx.key, out, seen),
            Node::List(items) => {
                let env_list = ctx.key.is_some_and(is_env_list_key);
                for (i, item) in items.iter().enumerate() {
                    let item_ctx = Ctx {
                        key: ctx.key,
                        env_list,
                        env_map: false,
                        aws_sibling: false,
                    };
                    self.walk(item, &format!("{path}[{i}]"), item_ctx, out, seen);
                }
            }
            Node::Other => {}
        }
    }

    fn walk_map<'a, T: Tree>(
        &self,
        entries: Vec<(&'a str, &'a T)>,
        path: &str,
        map_key: Option<&str>,
        out: &mut Vec<SecretFinding>,
        seen: &mut HashSet<SecretFinding>,
    ) {
        let env_map = map_key.is_some_and(is_env_map_key);
        let aws_sibling = entries.iter().any(|(_, v)| {
            matches!(v.node(), Node::Str(s) if {
                let mut hits = Vec::new();
                shape_hits(s, &mut hits);
                hits.iter().any(|h| h.kind == SecretKind::AwsAccessKeyId)
            })
        });
        for (i, (key, child)) in entries.into_iter().enumerate() {
            let key_hits = self.string_hits(key);
            let child_path = if key_hits.is_empty() {
                push_key(path, key)
            } else {
                // Never spell a key that is itself a credential.
                let p = format!("{path}[key #{i}]");
                for hit in key_hits {
                    record(out, seen, &p, hit.kind);
                }
                p
            };
            let ctx = Ctx {
                key: Some(key),
                env_list: false,
                env_map,
                aws_sibling,
            };
            self.walk(child, &child_path, ctx, out, seen);
        }
    }

    /// Known values and shapes in `s`, without the weak assignment hits (see [`Hit::weak`]).
    fn string_hits(&self, s: &str) -> Vec<Hit> {
        let mut hits = Vec::new();
        self.known.hits(s, &mut hits);
        shape_hits(s, &mut hits);
        hits.retain(|h| !h.weak);
        hits
    }

    fn check_string(
        &self,
        s: &str,
        path: &str,
        ctx: Ctx<'_>,
        out: &mut Vec<SecretFinding>,
        seen: &mut HashSet<SecretFinding>,
    ) {
        for hit in self.string_hits(s) {
            record(out, seen, path, hit.kind);
        }
        // The one table where a W&B key gets pasted: 40 hex there is refused, though 40 hex
        // elsewhere (a commit SHA) is not.
        if is_forty_hex(s) && under_wandb_table(path) {
            record(out, seen, path, SecretKind::WandbApiKey);
        }
        if ctx.aws_sibling && is_aws_secret_shape(s.trim()) {
            record(out, seen, path, SecretKind::AwsSecretAccessKey);
        }
        if let Some(key) = ctx.key {
            if ctx.env_map && name_says_secret(key) && !is_placeholder(s) {
                record(out, seen, path, SecretKind::EnvAssignment);
            } else if let Some(kind) = strong_secret_name(key) {
                if s.trim().chars().count() >= KnownSecrets::MIN_LEN && !is_placeholder(s) {
                    record(out, seen, path, kind);
                }
            } else if name_says_secret(key) && looks_opaque(s) {
                record(out, seen, path, SecretKind::SecretNamedValue);
            }
        }
        match parse_env_entry(s) {
            // Env lists take names only: any value is refused, whatever it looks like.
            EnvEntry::Assignment {
                has_value: true, ..
            } if ctx.env_list => record(out, seen, path, SecretKind::EnvAssignment),
            // Elsewhere, `NAME=VALUE` is refused when the name says secret.
            EnvEntry::Assignment {
                name,
                has_value: true,
            } if name_says_secret(name)
                && s.split_once('=').is_some_and(|(_, v)| {
                    !is_placeholder(v.trim().trim_matches(|c| c == '"' || c == '\''))
                }) =>
            {
                record(out, seen, path, SecretKind::SecretAssignment)
            }
            _ => {}
        }
    }
}

fn record(
    out: &mut Vec<SecretFinding>,
    seen: &mut HashSet<SecretFinding>,
    path: &str,
    kind: SecretKind,
) {
    let finding = SecretFinding {
        path: path.to_string(),
        kind,
    };
    if seen.insert(finding.clone()) {
        out.push(finding);
    }
}

fn finish(out: Vec<SecretFinding>) -> Result<(), Vec<SecretFinding>> {
    if out.is_empty() { Ok(()) } else { Err(out) }
}
