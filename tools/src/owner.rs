//! The owner a call acts for: an explicit `team_id`, `personal: true`, or the active team
//! (`PRIME_TEAM_ID`, then the saved team). The two arguments exclude each other; schemas carry
//! no `oneOf`, so the check happens here at run time. Read tools resolve to a [`TeamScope`]
//! ([`scope`]); a plan resolves further, to a definite owner ([`resolve_for_plan`]), since a
//! launch must never guess who pays.

use factory_platform::{PlatformClient, TeamScope};
use factory_policies::{Policy, overrides};

use crate::{
    error::ToolError,
    ids::TeamId,
    state::{AppState, platform_error},
};

/// The owner arguments, parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Choice {
    Team(TeamId),
    Personal,
    /// Neither argument: the active team, if any.
    Active,
}

/// Parse `team_id` / `personal`; `Ok(None)` when both are given (they exclude each other).
fn choice(team_id: Option<&str>, personal: Option<bool>) -> Result<Option<Choice>, ToolError> {
    Ok(Some(match (team_id, personal.unwrap_or(false)) {
        (Some(_), true) => return Ok(None),
        (Some(team), false) => Choice::Team(TeamId::parse(team)?),
        (None, true) => Choice::Personal,
        (None, false) => Choice::Active,
    }))
}

/// The platform scope of an owner recorded as a team id or none (personal).
pub(crate) fn scope_of(team: &Option<String>) -> TeamScope {
    match team {
        Some(t) => TeamScope::Team(t.clone()),
        None => TeamScope::Personal,
    }
}

/// Resolve the owner arguments into a team scope, checking the policy's team allowlist.
pub fn scope(
    team_id: Option<&str>,
    personal: Option<bool>,
    policy: &Policy,
) -> Result<TeamScope, ToolError> {
    let scope = match choice(team_id, personal)? {
        None => {
            return Err(ToolError::bad_argument(
                "`team_id` and `personal: true` exclude each other: pass one of them, or neither to use the active team.",
            ));
        }
        Some(Choice::Team(team)) => TeamScope::Team(team.as_str().to_string()),
        Some(Choice::Personal) => TeamScope::Personal,
        Some(Choice::Active) => TeamScope::Active,
    };
    // The allowlist is the policy's decision (it also knows `"personal"`).
    if let (TeamScope::Team(team), Some(allowed)) = (&scope, &policy.allowed_teams)
        && !policy.allows_team(Some(team))
    {
        crate::meter::refusal(crate::meter::Refusal::TeamNotAllowed);
        return Err(ToolError::new(format!(
            "team {team} is not in the policy's allowed_teams ({}); ask the operator to add it.",
            allowed.join(", ")
        )));
    }
    Ok(scope)
}

/// The owner a plan launches for, and where that came from.
pub(crate) struct Owner {
    pub(crate) team: Option<String>,
    pub(crate) label: String,
    pub(crate) source: String,
}

/// The definite owner of a plan: the arguments, else the active team, else — when the key can
/// act for teams and none is chosen — refused as ambiguous. `personal: true` is recorded in
/// `overrides` (the assistant chose who pays). The allowlist is checked with the budgets.
pub(crate) async fn resolve_for_plan(
    state: &AppState,
    platform: &PlatformClient,
    team_id: Option<&str>,
    personal: Option<bool>,
    overrides: &mut Vec<String>,
) -> Result<Owner, ToolError> {
    match choice(team_id, personal)? {
        None => Err(ToolError::bad_argument(
            "`team_id` and `personal: true` exclude each other: pass one.",
        )),
        Some(Choice::Team(team)) => Ok(Owner {
            label: format!("team {team}"),
            team: Some(team.as_str().to_string()),
            source: "the team_id argument".into(),
        }),
        Some(Choice::Personal) => {
            overrides.push("personal".into());
            Ok(Owner {
                team: None,
                label: "personal account".into(),
                source: "personal: true (set by the assistant)".into(),
            })
        }
        Some(Choice::Active) => active_owner(state, platform).await,
    }
}

async fn active_owner(state: &AppState, platform: &PlatformClient) -> Result<Owner, ToolError> {
    if let Some(team) = &platform.settings().team {
        return Ok(Owner {
            team: Some(team.id.clone()),
            label: format!("team {}", team.id),
            source: team.source.to_string(),
        });
    }
    let teams = platform
        .list_all_teams()
        .await
        .map_err(|e| platform_error("list teams to resolve the owner", &e))?;
    if !teams.is_empty() {
        let listed: Vec<String> = teams
            .iter()
            .map(|t| format!("{} ({})", t.team_id, t.name))
            .collect();
        return Err(ToolError::bad_argument(format!(
            "Owner ambiguous: this key can act for teams [{}] and no team is chosen. Pass team_id, or personal: true to bill the personal account{}.",
            listed.join(", "),
            if overrides::assistant_may_override(&state.policy) {
                ""
            } else {
                " (personal is refused in plan mode unless the policy allows model overrides)"
            }
        )));
    }
    Ok(Owner {
        team: None,
        label: "personal account".into(),
        source: "no team is set and the key has none".into(),
    })
}

/// One owner a key can act for: the personal account (`team: None`) or a team.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct OwnerRef {
    pub(crate) team: Option<String>,
    /// The team's name, as the platform lists it.
    pub(crate) name: Option<String>,
}

impl OwnerRef {
    /// How a person reads this owner: "personal account" or "team <id> (<name>)".
    pub(crate) fn label(&self) -> String {
        owner_label(self.team.as_deref(), self.name.as_deref())
    }
}

/// "personal account", "team <id>" or "team <id> (<name>)".
pub(crate) fn owner_label(team: Option<&str>, name: Option<&str>) -> String {
    match (team, name) {
        (None, _) => "personal account".into(),
        (Some(t), Some(n)) if !n.is_empty() => format!("team {t} ({})", one_line(n)),
        (Some(t), _) => format!("team {t}"),
    }
}

/// A platform-supplied name kept to one short line (it reaches a person's screen).
fn one_line(s: &str) -> String {
    factory_policies::untrusted::one_line(s, 60)
}

/// Who a call with neither `team_id` nor `personal` acts for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Standing {
    /// A team is chosen (`PRIME_TEAM_ID` or the saved team).
    ActiveTeam { team: String, source: String },
    /// No team is chosen and the key has none: the personal account, unambiguously.
    Personal,
    /// No team is chosen but the key can act for teams: a launch must say who pays.
    Ambiguous,
}

/// Every owner the key can act for — the personal account first, then each team — as the
/// policy's team allowlist lets this server see them, and who an argument-less call acts for.
pub(crate) struct Owners {
    pub(crate) all: Vec<OwnerRef>,
    pub(crate) standing: Standing,
}

impl Owners {
    /// "the personal account and 2 teams (…)": the scope a listing covers, for a summary.
    pub(crate) fn scope_text(&self) -> String {
        let teams: Vec<String> = self
            .all
            .iter()
            .filter(|o| o.team.is_some())
            .map(OwnerRef::label)
            .collect();
        match teams.is_empty() {
            true => self.scope_count(),
            false => format!("{}: {}", self.scope_count(), teams.join(", ")),
        }
    }

    /// [`Owners::scope_text`] without the teams' ids and names: "the personal account and 2
    /// team(s)", for a summary line beside a field that names them.
    pub(crate) fn scope_count(&self) -> String {
        let teams = self.all.iter().filter(|o| o.team.is_some()).count();
        let personal = self.all.iter().any(|o| o.team.is_none());
        match (personal, teams) {
            (true, 0) => "the personal account".into(),
            (false, 0) => "no owner (the policy allows none of this key's owners)".into(),
            (true, n) => format!("the personal account and {n} team(s)"),
            (false, n) => format!("{n} team(s)"),
        }
    }
}

/// The name of team `team_id` as the platform lists it, to show beside the id in a summary;
/// `None` for the personal account or when the list cannot be read (the summary says so).
pub(crate) async fn team_name(platform: &PlatformClient, team_id: Option<&str>) -> Option<String> {
    let id = team_id?;
    match platform.list_all_teams().await {
        Ok(teams) => teams.into_iter().find(|t| t.team_id == id).map(|t| t.name),
        Err(e) => {
            tracing::debug!(error = %e, "could not list teams for the team's name");
            None
        }
    }
}

/// Every owner the key can act for, filtered by the policy's allowlist (`"personal"` names the
/// personal account there), and whether an argument-less call is ambiguous.
pub(crate) async fn owners(
    state: &AppState,
    platform: &PlatformClient,
) -> Result<Owners, ToolError> {
    let teams = platform
        .list_all_teams()
        .await
        .map_err(|e| platform_error("list the teams this key can act for", &e))?;
    let standing = match &platform.settings().team {
        Some(t) => Standing::ActiveTeam {
            team: t.id.clone(),
            source: t.source.to_string(),
        },
        None if teams.is_empty() => Standing::Personal,
        None => Standing::Ambiguous,
    };
    let mut all = Vec::new();
    if state.policy.allows_team(None) {
        all.push(OwnerRef {
            team: None,
            name: None,
        });
    }
    for t in teams {
        if state.policy.allows_team(Some(&t.team_id)) {
            all.push(OwnerRef {
                team: Some(t.team_id),
                name: Some(t.name),
            });
        }
    }
    // An active team the listing does not show (e.g. PRIME_TEAM_ID of a team just joined) is
    // still an owner calls act for.
    if let Standing::ActiveTeam { team, .. } = &standing
        && state.policy.allows_team(Some(team))
        && !all.iter().any(|o| o.team.as_deref() == Some(team.as_str()))
    {
        all.push(OwnerRef {
            team: Some(team.clone()),
            name: None,
        });
    }
    state.set_known_owners(all.iter().map(|o| o.team.clone()).collect());
    Ok(Owners { all, standing })
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

    #[test]
    fn owners_read_as_a_person_would_name_them() {
        assert_eq!(owner_label(None, Some("x")), "personal account");
        assert_eq!(
            owner_label(Some("cteam1"), Some("Team A")),
            "team cteam1 (Team A)"
        );
        assert_eq!(owner_label(Some("cteam1"), None), "team cteam1");
        // A name from the platform cannot start a new line on a person's screen.
        assert!(!owner_label(Some("cteam1"), Some("A\nB")).contains('\n'));
        let owners = Owners {
            all: vec![
                OwnerRef {
                    team: None,
                    name: None,
                },
                OwnerRef {
                    team: Some("cteam1".into()),
                    name: Some("Team A".into()),
                },
            ],
            standing: Standing::Ambiguous,
        };
        assert_eq!(
            owners.scope_text(),
            "the personal account and 1 team(s): team cteam1 (Team A)"
        );
    }
}
