//! The duplicate decision: runs of the same config (by digest) that are active or recent, and
//! a last run of that config that failed for a reason that would repeat. Also the resume's
//! version: an active run already carrying the paused run's name.

use chrono::{DateTime, Utc};
use factory_platform::wire::runs::RlRun;
use serde_json::Value;

use crate::launch::{config_digest, deterministic_failure};

/// How far back a run counts as "recent" for the duplicate warning.
pub const RECENT: chrono::Duration = chrono::Duration::hours(24);

/// How a run relates to the planned one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Relation {
    /// Same config, holding GPUs: blocks unless `allow_duplicate`.
    Active,
    /// Same config, created in the last 24 hours: a warning.
    Recent,
    /// The last run of this config failed for a reason that would repeat.
    Failed,
}

impl Relation {
    /// As tools report it.
    pub fn as_str(self) -> &'static str {
        match self {
            Relation::Active => "active",
            Relation::Recent => "recent",
            Relation::Failed => "failed",
        }
    }
}

/// A check's outcome, as the plan lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Check {
    pub check: &'static str,
    /// `ok` or `warning`.
    pub status: &'static str,
    pub detail: String,
}

/// What the duplicate rules say about a plan.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict<'a> {
    /// The related runs, in the order the plan lists them.
    pub related: Vec<(&'a RlRun, Relation)>,
    /// The checks to list (duplicates, then the previous failure when there is one).
    pub checks: Vec<Check>,
    /// The plan is made but launching it is refused until this is resolved.
    pub blocked: Option<String>,
}

/// The digest of the config a run was launched with (its name left out).
pub fn run_config_digest(run: &RlRun) -> Option<String> {
    run.run_config
        .as_ref()
        .and_then(Value::as_object)
        .map(config_digest)
}

/// Judge the owner's `runs` against a plan whose config digest is `digest`. `Err`: planning is
/// refused (an identical run is active and `allow_duplicate` is not set).
pub fn judge<'a>(
    runs: &'a [RlRun],
    digest: &str,
    now: DateTime<Utc>,
    allow_duplicate: bool,
    relaunch_after_failure: bool,
) -> Result<Verdict<'a>, String> {
    let same: Vec<&RlRun> = runs
        .iter()
        .filter(|r| run_config_digest(r).as_deref() == Some(digest))
        .collect();
    let mut related: Vec<(&RlRun, Relation)> = Vec::new();
    for r in &same {
        if r.is_active() {
            related.push((r, Relation::Active));
        } else if r.created_at_utc().is_some_and(|t| now - t < RECENT) {
            related.push((r, Relation::Recent));
        }
    }
    let active: Vec<&RlRun> = related
        .iter()
        .filter(|(_, rel)| *rel == Relation::Active)
        .map(|(r, _)| *r)
        .collect();
    let mut checks = Vec::new();
    if !active.is_empty() {
        if !allow_duplicate {
            return Err(format!(
                "An identical run is already active: {}. Watch it instead (get_run), or pass allow_duplicate: true to launch another.",
                active
                    .iter()
                    .map(|r| format!(
                        "{} ({}, {})",
                        r.id,
                        r.name.as_deref().unwrap_or("unnamed"),
                        r.status
                    ))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        checks.push(Check {
            check: "duplicates",
            status: "warning",
            detail: format!(
                "{} identical active run(s); allow_duplicate is set",
                active.len()
            ),
        });
    } else if related.iter().any(|(_, rel)| *rel == Relation::Recent) {
        checks.push(Check {
            check: "duplicates",
            status: "warning",
            detail: "the same config ran in the last 24 hours (see duplicates)".into(),
        });
    } else {
        checks.push(Check {
            check: "duplicates",
            status: "ok",
            detail: "no identical active or recent run".into(),
        });
    }
    let mut blocked = None;
    if let Some(last) = same.iter().max_by_key(|r| r.created_at_utc())
        && let Some(reason) = deterministic_failure(last)
    {
        related.push((last, Relation::Failed));
        if relaunch_after_failure {
            checks.push(Check {
                check: "previous failure",
                status: "warning",
                detail: format!(
                    "the last run of this config ({}) failed with a {reason}; relaunch_after_failure is set",
                    last.id
                ),
            });
        } else {
            blocked = Some(format!(
                "The last run of this config ({}) failed with a {reason}. The same config would fail again: change the config and re-plan, or pass relaunch_after_failure: true.",
                last.id
            ));
        }
    }
    Ok(Verdict {
        related,
        checks,
        blocked,
    })
}

/// The resume of paused run `from` (named `name`): other active runs already carrying the name
/// mean it may have been resumed before. `Err`: refused unless `allow_duplicate`.
pub fn judge_resume<'a>(
    runs: &'a [RlRun],
    from: &str,
    name: &str,
    allow_duplicate: bool,
) -> Result<Vec<&'a RlRun>, String> {
    let resumed: Vec<&RlRun> = runs
        .iter()
        .filter(|r| {
            r.id != from && r.is_active() && !name.is_empty() && r.name.as_deref() == Some(name)
        })
        .collect();
    if !resumed.is_empty() && !allow_duplicate {
        return Err(format!(
            "An active run named {name} already exists ({}): the paused run may have been resumed already. Watch it instead, or pass allow_duplicate: true.",
            resumed
                .iter()
                .map(|r| r.id.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    Ok(resumed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run(id: &str, status: &str, created: &str, error: Option<&str>) -> RlRun {
        serde_json::from_value(json!({
            "id": id, "userId": "u", "status": status, "name": "n",
            "createdAt": created, "updatedAt": created,
            "runConfig": {"name": id, "model": {"name": "m"}},
            "errorMessage": error,
        }))
        .unwrap()
    }

    fn digest() -> String {
        let mut c = serde_json::Map::new();
        c.insert("model".into(), json!({"name": "m"}));
        config_digest(&c)
    }

    fn now() -> DateTime<Utc> {
        "2026-05-02T12:00:00Z".parse().unwrap()
    }

    #[test]
    fn an_identical_active_run_refuses_the_plan_unless_allowed() {
        let runs = [run("r1", "RUNNING", "2026-05-01T00:00:00Z", None)];
        let e = judge(&runs, &digest(), now(), false, false).unwrap_err();
        assert!(e.contains("r1 (n, RUNNING)"), "{e}");
        let v = judge(&runs, &digest(), now(), true, false).unwrap();
        assert_eq!(v.related[0].1, Relation::Active);
        assert_eq!(v.checks[0].status, "warning");
        assert_eq!(v.blocked, None);
    }

    #[test]
    fn a_recent_run_warns_and_an_old_one_is_ignored() {
        let recent = [run("r1", "COMPLETED", "2026-05-02T01:00:00Z", None)];
        let v = judge(&recent, &digest(), now(), false, false).unwrap();
        assert_eq!(v.related.len(), 1);
        assert!(v.checks[0].detail.contains("last 24 hours"));
        let old = [run("r1", "COMPLETED", "2026-04-01T00:00:00Z", None)];
        let v = judge(&old, &digest(), now(), false, false).unwrap();
        assert!(v.related.is_empty());
        assert_eq!(v.checks[0].status, "ok");
    }

    #[test]
    fn a_failure_that_would_repeat_blocks_unless_relaunch_is_asked() {
        let runs = [run(
            "r1",
            "FAILED",
            "2026-04-01T00:00:00Z",
            Some("ImportError: no module named foo"),
        )];
        let v = judge(&runs, &digest(), now(), false, false).unwrap();
        assert!(v.blocked.as_deref().unwrap().contains("import error"));
        assert_eq!(v.related[0].1, Relation::Failed);
        let v = judge(&runs, &digest(), now(), false, true).unwrap();
        assert_eq!(v.blocked, None);
        assert_eq!(v.checks[1].check, "previous failure");
        let transient = [run(
            "r1",
            "FAILED",
            "2026-04-01T00:00:00Z",
            Some("node failure"),
        )];
        let v = judge(&transient, &digest(), now(), false, false).unwrap();
        assert_eq!(v.blocked, None);
    }

    #[test]
    fn a_resume_is_refused_when_the_name_is_already_active_elsewhere() {
        let runs = [
            run("paused", "PAUSED", "2026-05-01T00:00:00Z", None),
            run("again", "RUNNING", "2026-05-02T00:00:00Z", None),
        ];
        let e = judge_resume(&runs, "paused", "n", false).unwrap_err();
        assert!(e.contains("(again)"), "{e}");
        assert_eq!(judge_resume(&runs, "paused", "n", true).unwrap().len(), 1);
        assert!(judge_resume(&runs, "paused", "", false).unwrap().is_empty());
    }
}
