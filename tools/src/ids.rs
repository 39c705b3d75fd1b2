//! Identifiers: `RunId`, `TeamId` and `PlanId`, and the random names and ids the server makes.
//! An id the model supplies is 1–128 characters of `[A-Za-z0-9_-]` (nothing that could change
//! a request path); an id the platform returned is accepted as it is.

use std::fmt;

use crate::error::ToolError;

/// Whether `id` is a well-formed user-supplied id.
fn well_formed(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 128
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

/// Refuse an id the model supplied unless it is well formed (`kind` names it: run, team, …).
pub(crate) fn check_id(kind: &str, id: &str) -> Result<(), ToolError> {
    if well_formed(id) {
        Ok(())
    } else {
        Err(ToolError::bad_argument(format!(
            "`{}` is not a valid {kind} id: ids are letters, digits, '-' and '_' (list_runs shows them).",
            id.chars().take(64).collect::<String>()
        )))
    }
}

macro_rules! id_type {
    ($name:ident, $doc:literal) => {
        #[doc = $doc]
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub(crate) struct $name(String);

        impl $name {
            pub(crate) fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }
    };
    ($name:ident, $kind:literal, $doc:literal) => {
        id_type!($name, $doc);

        impl $name {
            /// An id the model supplied: checked.
            pub(crate) fn parse(id: &str) -> Result<Self, ToolError> {
                check_id($kind, id)?;
                Ok($name(id.to_string()))
            }
        }
    };
}

id_type!(RunId, "run", "A training run's id.");
id_type!(TeamId, "team", "A team's id.");
id_type!(
    PlanId,
    "A plan's (or delete intent's) id: `plan_` and 20 base32 letters."
);

impl PlanId {
    /// A fresh plan id.
    pub(crate) fn generate() -> PlanId {
        let alphabet = b"abcdefghijklmnopqrstuvwxyz234567";
        let id: String = (0..20)
            .map(|_| alphabet[(rand_u32() % 32) as usize] as char)
            .collect();
        PlanId(format!("plan_{id}"))
    }

    /// A plan id the model passed back: it must look like one we made.
    pub(crate) fn parse_plan(id: &str) -> Option<PlanId> {
        (id.starts_with("plan_") && well_formed(id)).then(|| PlanId(id.to_string()))
    }
}

/// A random `u32` from the thread's CSPRNG (`rand`, seeded by the OS), for names and ids.
pub(crate) fn rand_u32() -> u32 {
    rand::random()
}

/// A single-use nonce (128 bits from the thread's CSPRNG, hex).
pub(crate) fn nonce() -> String {
    format!("{:032x}", rand::random::<u128>())
}

/// A unique run name from the model's short name: `qwen3-4b-k3j9x0ab`.
pub(crate) fn generated_name(model: Option<&str>) -> String {
    let short: String = model
        .and_then(|m| m.rsplit('/').next())
        .unwrap_or("run")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .take(32)
        .collect();
    let suffix: String = (0..8)
        .map(|_| {
            let n = rand_u32() % 36;
            char::from_digit(n, 36).unwrap_or('0')
        })
        .collect();
    format!("{short}-{suffix}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_ids_are_checked_and_platform_ids_are_not() {
        assert!(RunId::parse("run_ab-12").is_ok());
        assert!(RunId::parse("").is_err());
        assert!(RunId::parse("../etc").is_err());
        assert!(RunId::parse(&"a".repeat(129)).is_err());
        assert!(RunId::parse(&"a".repeat(128)).is_ok());
        let e = TeamId::parse("a b").unwrap_err();
        assert!(e.to_string().contains("not a valid team id"), "{e}");
    }

    #[test]
    fn generated_names_and_plan_ids_are_unique_and_tidy() {
        let a = generated_name(Some("Qwen/Qwen3-4B"));
        let b = generated_name(Some("Qwen/Qwen3-4B"));
        assert!(a.starts_with("qwen3-4b-"), "{a}");
        assert_ne!(a, b);
        let p = PlanId::generate();
        assert!(p.as_str().starts_with("plan_"));
        assert_eq!(PlanId::parse_plan(p.as_str()), Some(p));
        assert_eq!(PlanId::parse_plan("run_x"), None);
    }
}
