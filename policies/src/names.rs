//! The character rules for the names a plan carries — run name, image tag, volume name, volume
//! size, source ref — checked where they enter (tool arguments and the TOML), so that what a
//! person is shown is a plain word and never text that could pose as another line of the
//! summary. The platform publishes a rule for `sourceRef` only; the others are this project's
//! rules (documented in `docs/SECURITY.md`).

/// Which name is checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameKind {
    /// `run_name` / the TOML's `name`: `[A-Za-z0-9._-]`, first an ASCII letter or digit, 1–64.
    RunName,
    /// `image_tag`: the Docker tag rule, `[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}`.
    ImageTag,
    /// `volume`: `[A-Za-z0-9._-]`, first an ASCII letter or digit, 1–63.
    Volume,
    /// `volume_size`: digits, an optional fraction, an optional unit (`K M G T P`, with or
    /// without `i`), at most 16 characters: `500Gi`, `5Ti`, `1.5T`.
    VolumeSize,
    /// `source_ref`: the platform's rule (the CLI's regex), `^[A-Za-z0-9][A-Za-z0-9._/-]{0,199}$`
    /// with no `..`, `//`, `/.`, trailing `/` or `.`, `.lock` component, `refs/` or `pull/`.
    SourceRef,
    /// A traces filter's `environment_id` (an env or taskset id, Hub ids `owner/name@version`)
    /// or `task_id`: `[A-Za-z0-9._:@/+-]`, first an ASCII letter or digit, 1–128. Our rule: the
    /// traces service documents none beyond an `environment_id_too_long` upload error.
    TraceFilter,
}

impl NameKind {
    fn what(self) -> &'static str {
        match self {
            NameKind::RunName => "a run name",
            NameKind::ImageTag => "an image tag",
            NameKind::Volume => "a volume name",
            NameKind::VolumeSize => "a volume size",
            NameKind::SourceRef => "a source ref",
            NameKind::TraceFilter => "an environment or task id",
        }
    }

    fn rule(self) -> &'static str {
        match self {
            NameKind::RunName => {
                "1 to 64 of A-Z a-z 0-9 . _ -, starting with a letter or digit (e.g. my-run-2)"
            }
            NameKind::ImageTag => {
                "1 to 128 of A-Z a-z 0-9 _ . -, not starting with . or - (e.g. v0.3.1)"
            }
            NameKind::Volume => {
                "1 to 63 of A-Z a-z 0-9 . _ -, starting with a letter or digit (e.g. outputs)"
            }
            NameKind::VolumeSize => "digits and a unit, at most 16 characters (e.g. 500Gi, 5Ti)",
            NameKind::SourceRef => {
                "a branch, tag or commit: A-Z a-z 0-9 . _ / -, up to 200, starting with a letter \
                 or digit, without .., //, /., a trailing / or ., .lock, refs/ or pull/"
            }
            NameKind::TraceFilter => {
                "1 to 128 of A-Z a-z 0-9 . _ - : @ / +, starting with a letter or digit \
                 (e.g. reverse-text, owner/env@0.1.2, task-007)"
            }
        }
    }
}

/// A name that breaks its rule. The message never repeats the value (it may be hostile, or
/// 100 KB long): it says where the value came from, its rule, and what to do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{source_name} is not {what}: use {rule}. Names are shown to the person who approves, so \
     only plain characters are accepted."
)]
pub struct NameError {
    /// Where the value came from, e.g. "the argument `run_name`".
    pub source_name: String,
    what: &'static str,
    rule: &'static str,
}

fn word_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')
}

fn follows(kind: NameKind, s: &str) -> bool {
    let mut chars = s.chars();
    let Some(first) = chars.next() else {
        return false;
    };
    let len = s.chars().count();
    match kind {
        NameKind::RunName => len <= 64 && first.is_ascii_alphanumeric() && s.chars().all(word_char),
        NameKind::Volume => len <= 63 && first.is_ascii_alphanumeric() && s.chars().all(word_char),
        NameKind::ImageTag => {
            len <= 128
                && (first.is_ascii_alphanumeric() || first == '_')
                && s.chars().all(word_char)
        }
        NameKind::VolumeSize => volume_size(s),
        NameKind::SourceRef => source_ref(s),
        NameKind::TraceFilter => {
            len <= 128
                && first.is_ascii_alphanumeric()
                && s.chars()
                    .all(|c| word_char(c) || matches!(c, ':' | '@' | '/' | '+'))
        }
    }
}

fn volume_size(s: &str) -> bool {
    if s.len() > 16 {
        return false;
    }
    let unit_at = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (number, unit) = s.split_at(unit_at);
    let mut parts = number.split('.');
    let whole = parts.next().unwrap_or_default();
    let fraction = parts.next();
    let number_ok = !whole.is_empty()
        && whole.chars().all(|c| c.is_ascii_digit())
        && parts.next().is_none()
        && fraction.is_none_or(|f| !f.is_empty() && f.chars().all(|c| c.is_ascii_digit()));
    let unit_ok = matches!(
        unit,
        "" | "K" | "M" | "G" | "T" | "P" | "Ki" | "Mi" | "Gi" | "Ti" | "Pi"
    );
    number_ok && unit_ok
}

fn source_ref(s: &str) -> bool {
    let len = s.chars().count();
    let first_ok = s.chars().next().is_some_and(|c| c.is_ascii_alphanumeric());
    first_ok
        && len <= 200
        && s.chars().all(|c| word_char(c) || c == '/')
        && !s.contains("..")
        && !s.contains("//")
        && !s.contains("/.")
        && !s.ends_with('/')
        && !s.ends_with('.')
        && !s.split('/').any(|part| part.ends_with(".lock"))
        && !s.starts_with("refs/")
        && !s.starts_with("pull/")
}

/// Check `value` against the rule of `kind`; `source_name` says where it came from ("the
/// argument `run_name`", "the config's `name`").
pub fn check(kind: NameKind, value: &str, source_name: &str) -> Result<(), NameError> {
    if follows(kind, value) {
        Ok(())
    } else {
        Err(NameError {
            source_name: source_name.to_owned(),
            what: kind.what(),
            rule: kind.rule(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The hostile shapes every name must refuse.
    fn hostile() -> Vec<String> {
        vec![
            "ok\nPrice:    $0.01/hour".into(),
            "ok\r\nx".into(),
            "a\u{1b}[2Jb".into(),
            "a\u{1b}[8mhidden".into(),
            "a\u{202e}gnp.exe".into(),
            "a\u{2066}b\u{2069}".into(),
            "a\u{2028}b".into(),
            "a\u{2029}b".into(),
            "a\u{85}b".into(),
            "a\u{200b}b".into(),
            "a b".into(),
            "x".repeat(100 * 1024),
            String::new(),
        ]
    }

    #[test]
    fn every_hostile_shape_is_refused_for_every_kind() {
        for kind in [
            NameKind::RunName,
            NameKind::ImageTag,
            NameKind::Volume,
            NameKind::VolumeSize,
            NameKind::SourceRef,
            NameKind::TraceFilter,
        ] {
            for h in hostile() {
                let e = check(kind, &h, "the argument `x`").unwrap_err();
                let msg = e.to_string();
                assert!(msg.contains("the argument `x`"), "{msg}");
                assert!(msg.len() < 400, "the value is never echoed");
                assert!(!msg.contains('\u{1b}') && !msg.contains('\n'), "{msg:?}");
            }
        }
    }

    #[test]
    fn environment_and_task_ids_pass_and_query_syntax_does_not() {
        for id in [
            "reverse-text",
            "primeintellect/wiki-search@0.1.4",
            "task-007",
            "math:12+3",
        ] {
            check(NameKind::TraceFilter, id, "e").unwrap();
        }
        for bad in [
            "a&has_error=true",
            "a=b",
            "a?b",
            "a#b",
            "/abs",
            "a%2F",
            "a\\b",
        ] {
            assert!(check(NameKind::TraceFilter, bad, "e").is_err(), "{bad}");
        }
        assert!(check(NameKind::TraceFilter, &"a".repeat(128), "e").is_ok());
        assert!(check(NameKind::TraceFilter, &"a".repeat(129), "e").is_err());
    }

    #[test]
    fn ordinary_names_pass() {
        for n in [
            "my-run",
            "reverse-text-smoke",
            "qwen3-4b-a1b2c3d4",
            "Run_1.2",
        ] {
            check(NameKind::RunName, n, "n").unwrap();
        }
        assert!(check(NameKind::RunName, &"a".repeat(64), "n").is_ok());
        assert!(check(NameKind::RunName, &"a".repeat(65), "n").is_err());
        assert!(check(NameKind::RunName, "-x", "n").is_err());
        for t in ["v1", "main", "v0.3.1", "_latest", "sha-abc123"] {
            check(NameKind::ImageTag, t, "t").unwrap();
        }
        assert!(check(NameKind::ImageTag, ".x", "t").is_err());
        for v in ["outputs", "my.vol_1", "v-2"] {
            check(NameKind::Volume, v, "v").unwrap();
        }
        for s in ["500Gi", "5Ti", "1.5T", "100", "2Pi"] {
            check(NameKind::VolumeSize, s, "s").unwrap();
        }
        for s in ["5 Ti", "Ti", "5.Ti", "5Xi", "1.2.3G", "-5Gi"] {
            assert!(check(NameKind::VolumeSize, s, "s").is_err(), "{s}");
        }
        for r in ["main", "feature/x", "v1.2.3", "a1b2c3d4e5"] {
            check(NameKind::SourceRef, r, "r").unwrap();
        }
        for r in [
            "a..b",
            "a//b",
            "a/.b",
            "a/",
            "a.",
            "x/y.lock",
            "refs/heads/main",
            "pull/1/head",
            "/abs",
        ] {
            assert!(check(NameKind::SourceRef, r, "r").is_err(), "{r}");
        }
    }
}
