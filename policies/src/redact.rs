//! Redaction of strings leaving the server (tool results, errors, tracing output).
//!
//! Replaced by [`REDACTED`]:
//! - known secret values (the server's `PRIME_API_KEY`, the `WANDB_API_KEY`/`HF_TOKEN` values it
//!   holds) in raw form; JSON-escaped (`\"`, `\\`, `\/`, `\uXXXX` in either case); URL-encoded
//!   (`%XX` upper and lower case, with `%20` or `+` for spaces, over the non-alphanumeric, RFC 3986
//!   unreserved and form-urlencoded sets); base64 (standard and URL-safe, padded or not), and
//!   the value embedded in a larger base64 blob at each of the three byte alignments (the
//!   characters that depend only on the value; up to three edge characters either side,
//!   which carry at most 12 bits of the value mixed with neighbouring bytes, are left);
//! - the high-confidence credential shapes of the secret guard (`hf_…`, `sk-…`, `sk-ant-…`,
//!   `ghp_…`, `github_pat_…`, `AKIA…`/`ASIA…` with a 40-character secret beside one, JWTs, PEM
//!   private key blocks, `pit_…`, `tskey-…`, `Bearer …`), and the value of `NAME=VALUE` /
//!   `"name": "value"` where the name says secret.
//!
//! Redaction runs to a fixed point, so it is idempotent: `redact(redact(s)) == redact(s)`, and
//! no known value survives in its output. Raw documents fetched from the platform must not be
//! passed through here: they are written byte-exact.

use std::borrow::Cow;
use std::fmt;
use std::ops::Range;

use serde_json::Value as Json;

use crate::detect::{
    Hit, KnownForms, is_placeholder, looks_opaque, name_says_secret, shape_hits, strong_secret_name,
};
use crate::secret::KnownSecrets;
pub use crate::secret::REDACTED;

/// Passes after which a string that keeps changing is replaced whole (never reached in
/// practice; it bounds the work on adversarial input).
const MAX_PASSES: usize = 4;

/// The redactor. Build it once; share it (`Arc`) between the tools and the tracing layer.
pub struct Redactor {
    known: KnownForms,
}

impl fmt::Debug for Redactor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Redactor")
            .field("known", &self.known)
            .finish()
    }
}

impl Default for Redactor {
    /// A redactor with no known values: shapes only.
    fn default() -> Self {
        Redactor::new(KnownSecrets::default())
    }
}

impl Redactor {
    pub fn new(known: KnownSecrets) -> Self {
        Redactor {
            known: KnownForms::new(&known),
        }
    }

    /// `text` with every known value, encoded form and credential shape replaced by
    /// [`REDACTED`]. Borrows when nothing was found.
    pub fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let Some(mut current) = self.pass(text) else {
            return Cow::Borrowed(text);
        };
        for _ in 1..MAX_PASSES {
            match self.pass(&current) {
                None => return Cow::Owned(current),
                Some(next) => current = next,
            }
        }
        Cow::Owned(REDACTED.to_string())
    }

    /// Redacts in place; returns whether anything changed.
    pub fn redact_string(&self, text: &mut String) -> bool {
        match self.redact(text) {
            Cow::Borrowed(_) => false,
            Cow::Owned(new) => {
                *text = new;
                true
            }
        }
    }

    /// Whether `text` would come out of [`Redactor::redact`] unchanged.
    pub fn is_clean(&self, text: &str) -> bool {
        self.pass(text).is_none()
    }

    /// Redacts every string and every object key of a JSON tree. A string under a key that
    /// says secret is replaced whole when it looks like a credential (bare hex/base64, or any
    /// value for names such as `password` or `api_key`).
    pub fn redact_json(&self, value: &mut Json) {
        self.redact_json_under(value, None);
    }

    fn redact_json_under(&self, value: &mut Json, key: Option<&str>) {
        match value {
            Json::String(s) => {
                if key.is_some_and(|k| secret_field_value(k, s)) {
                    *s = REDACTED.to_string();
                } else {
                    self.redact_string(s);
                }
            }
            Json::Array(items) => {
                for item in items {
                    self.redact_json_under(item, key);
                }
            }
            Json::Object(map) => {
                if map.keys().all(|k| self.is_clean(k)) {
                    for (k, v) in map.iter_mut() {
                        self.redact_json_under(v, Some(k));
                    }
                    return;
                }
                let old = std::mem::take(map);
                for (k, mut v) in old {
                    self.redact_json_under(&mut v, Some(&k));
                    let mut new_key = self.redact(&k).into_owned();
                    if map.contains_key(&new_key) {
                        let mut n = 2;
                        while map.contains_key(&format!("{new_key}#{n}")) {
                            n += 1;
                        }
                        new_key = format!("{new_key}#{n}");
                    }
                    map.insert(new_key, v);
                }
            }
            _ => {}
        }
    }

    /// One pass: `None` when nothing matched.
    fn pass(&self, text: &str) -> Option<String> {
        let mut hits: Vec<Hit> = Vec::new();
        self.known.hits(text, &mut hits);
        shape_hits(text, &mut hits);
        if hits.is_empty() {
            return None;
        }
        let ranges = merge(hits.into_iter().map(|h| h.range).collect());
        let mut out = String::with_capacity(text.len());
        let mut last = 0;
        for r in ranges {
            out.push_str(&text[last..r.start]);
            out.push_str(REDACTED);
            last = r.end;
        }
        out.push_str(&text[last..]);
        if out == text { None } else { Some(out) }
    }
}

/// Whether a string under JSON key `key` is itself a secret value.
fn secret_field_value(key: &str, value: &str) -> bool {
    if is_placeholder(value) {
        return false;
    }
    if strong_secret_name(key).is_some() {
        return value.trim().chars().count() >= KnownSecrets::MIN_LEN;
    }
    name_says_secret(key) && looks_opaque(value)
}

/// Sorted, merged ranges (touching ranges merge too, so one marker covers them).
fn merge(mut ranges: Vec<Range<usize>>) -> Vec<Range<usize>> {
    ranges.sort_by_key(|r| (r.start, std::cmp::Reverse(r.end)));
    let mut out: Vec<Range<usize>> = Vec::with_capacity(ranges.len());
    for r in ranges {
        match out.last_mut() {
            Some(prev) if r.start <= prev.end => prev.end = prev.end.max(r.end),
            _ => out.push(r),
        }
    }
    out
}
