//! The owner a call acts for: an explicit `team_id`, `personal: true`, or the active team
//! (`PRIME_TEAM_ID`, then the saved team). The two arguments exclude each other; schemas carry
//! no `oneOf`, so the check happens here at run time.

use factory_platform::TeamScope;
use factory_policies::Policy;

use crate::{reply::ToolError, state::check_id};

/// Resolve the owner arguments into a team scope, checking the policy's team allowlist.
pub fn scope(
    team_id: Option<&str>,
    personal: Option<bool>,
    policy: &Policy,
) -> Result<TeamScope, ToolError> {
    let scope = match (team_id, personal.unwrap_or(false)) {
        (Some(_), true) => {
            return Err(ToolError::new(
                "`team_id` and `personal: true` exclude each other: pass one of them, or neither to use the active team.",
            ));
        }
        (Some(team), false) => {
            check_id("team", team)?;
            TeamScope::Team(team.to_string())
        }
        (None, true) => TeamScope::Personal,
        (None, false) => TeamScope::Active,
    };
    // The allowlist is the policy's decision (it also knows `"personal"`).
    if let (TeamScope::Team(team), Some(allowed)) = (&scope, &policy.allowed_teams)
        && !policy.allows_team(Some(team))
    {
        return Err(ToolError::new(format!(
            "team {team} is not in the policy's allowed_teams ({}); ask the operator to add it.",
            allowed.join(", ")
        )));
    }
    Ok(scope)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn team_and_personal_exclude_each_other() {
        let any = Policy::default();
        let err = scope(Some("cteam1"), Some(true), &any).unwrap_err();
        assert!(err.message.contains("exclude each other"));
        assert_eq!(scope(None, Some(true), &any).unwrap(), TeamScope::Personal);
        assert_eq!(scope(None, None, &any).unwrap(), TeamScope::Active);
    }

    #[test]
    fn allowlist_refuses_other_teams() {
        let policy = Policy {
            allowed_teams: Some(vec!["cteamA".to_string()]),
            ..Policy::default()
        };
        assert!(scope(Some("cteamB"), None, &policy).is_err());
        assert!(scope(Some("cteamA"), None, &policy).is_ok());
    }
}
