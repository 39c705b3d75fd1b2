//! What the assistant may set on its own: in plan-confirmation mode nobody reviews a launch,
//! so arguments that change what runs (or who pays) are refused unless the policy sets
//! `allow_model_overrides = true`. Choosing the run name is always allowed.

use crate::policy::{ConfirmMode, Policy};

/// The override every mode allows.
const ALWAYS_ALLOWED: &str = "run_name";

/// Whether the assistant may set launch-changing arguments under this policy.
pub fn assistant_may_override(policy: &Policy) -> bool {
    policy.confirm != ConfirmMode::Plan || policy.allow_model_overrides
}

/// The refusal for the arguments the assistant set (`overrides`), if the policy refuses any.
pub fn override_refusal(policy: &Policy, overrides: &[String]) -> Option<String> {
    if assistant_may_override(policy) {
        return None;
    }
    let refused: Vec<&str> = overrides
        .iter()
        .map(String::as_str)
        .filter(|o| *o != ALWAYS_ALLOWED)
        .collect();
    (!refused.is_empty()).then(|| {
        format!(
            "Refused in plan-confirmation mode: {} may not be set by the assistant unless the policy sets allow_model_overrides = true.",
            refused.join(", ")
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan_mode(allow: bool) -> Policy {
        Policy {
            confirm: ConfirmMode::Plan,
            allow_model_overrides: allow,
            ..Policy::default()
        }
    }

    #[test]
    fn plan_mode_refuses_overrides_but_not_the_run_name() {
        let o = vec!["allow_duplicate".to_string(), "run_name".to_string()];
        let msg = override_refusal(&plan_mode(false), &o).unwrap();
        assert!(msg.contains(": allow_duplicate may not be set"), "{msg}");
        assert_eq!(
            override_refusal(&plan_mode(false), &["run_name".to_string()]),
            None
        );
    }

    #[test]
    fn a_person_or_the_policy_lifts_the_refusal() {
        let o = vec!["personal".to_string()];
        assert_eq!(override_refusal(&plan_mode(true), &o), None);
        assert_eq!(override_refusal(&Policy::default(), &o), None);
        assert!(!assistant_may_override(&plan_mode(false)));
    }
}
