//! The duplicate decision: runs with the same launch identity — config digest, source ref,
//! image tag, GPU type, volume, owner — that are active or recent, and a last run of that
//! identity that failed for a reason that would repeat. A fix on a new ref with the same TOML
//! is another identity, so it is not blocked. Also the resume's version: an active run already
//! carrying the paused run's name.
//!
//! Our own dispatches' identities come from the journal (the plan that made them); for other
//! runs only what the run object carries counts (`runConfig`, `sourceCommit`, `volumeName`,
//! `teamId`): it has no ref, image tag or GPU type on the wire, and the decision says so.

use chrono::{DateTime, Utc};
use factory_platform::wire::runs::RlRun;
use serde_json::Value;

use crate::launch::{config_digest, deterministic_failure};

/// How far back a run counts as "recent" for the duplicate warning.
pub const RECENT: chrono::Duration = chrono::Duration::hours(24);

/// How a run relates to the planned one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Relation {
    /// Same launch identity, holding GPUs: blocks unless `allow_duplicate`.
    Active,
    /// Same launch identity, created in the last 24 hours: a warning.
    Recent,
    /// The last run of this launch identity failed for a reason that would repeat.
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

/// What identifies a launch: the same identity runs the same code on the same config.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LaunchIdentity {
    /// The config's digest without its name ([`config_digest`]).
    pub config_digest: String,
    pub source_ref: Option<String>,
    pub image_tag: Option<String>,
    pub gpu_type: Option<String>,
    pub volume: Option<String>,
    /// The team id; `None` is the personal account.
    pub owner: Option<String>,
}

/// The digest of the config a run was launched with (its name left out).
pub fn run_config_digest(run: &RlRun) -> Option<String> {
    run.run_config
        .as_ref()
        .and_then(Value::as_object)
        .map(config_digest)
}

/// How an existing run's identity compares with the plan's.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Comparison {
    /// What differs, as "field: theirs → the plan's".
    changed: Vec<String>,
    /// What could not be told from the run object.
    unknown: Vec<&'static str>,
}

fn shown(v: Option<&str>) -> String {
    v.map(|s| crate::untrusted::one_line(s, 80))
        .unwrap_or_else(|| "(none)".into())
}

fn is_sha(s: &str) -> bool {
    s.len() == 40 && s.bytes().all(|b| b.is_ascii_hexdigit())
}

/// Compare `run` with the plan; `None` when its config differs (not related at all).
/// `journal`: the run's identity as our journal recorded it, when we dispatched it.
fn compare(
    plan: &LaunchIdentity,
    run: &RlRun,
    journal: Option<&LaunchIdentity>,
) -> Option<Comparison> {
    let mut c = Comparison::default();
    let mut field = |name: &str, theirs: Option<&str>, ours: Option<&str>| {
        if theirs != ours {
            c.changed
                .push(format!("{name}: {} → {}", shown(theirs), shown(ours)));
        }
    };
    if let Some(j) = journal {
        let digest = run_config_digest(run).unwrap_or_else(|| j.config_digest.clone());
        if digest != plan.config_digest {
            return None;
        }
        field(
            "source ref",
            j.source_ref.as_deref(),
            plan.source_ref.as_deref(),
        );
        field(
            "image tag",
            j.image_tag.as_deref(),
            plan.image_tag.as_deref(),
        );
        field("GPU type", j.gpu_type.as_deref(), plan.gpu_type.as_deref());
        field("volume", j.volume.as_deref(), plan.volume.as_deref());
        field("owner", j.owner.as_deref(), plan.owner.as_deref());
        return Some(c);
    }
    if run_config_digest(run).as_deref() != Some(plan.config_digest.as_str()) {
        return None;
    }
    field("volume", run.volume_name.as_deref(), plan.volume.as_deref());
    field("owner", run.team_id.as_deref(), plan.owner.as_deref());
    // `sourceCommit` is the overlay's resolved commit (null: no overlay, as in prepare's
    // `source_commit`); a branch or tag name cannot be compared with a commit.
    match (run.source_commit.as_deref(), plan.source_ref.as_deref()) {
        (None, None) => {}
        (Some(theirs), Some(ours)) if is_sha(ours) => {
            if !theirs.eq_ignore_ascii_case(ours) {
                c.changed
                    .push(format!("source: commit {} → {ours}", shown(Some(theirs))));
            }
        }
        (Some(_), Some(_)) => c.unknown.push("source ref"),
        (theirs, ours) => c.changed.push(format!(
            "source: {} → {}",
            theirs
                .map(|t| format!("commit {}", shown(Some(t))))
                .unwrap_or_else(|| "(none)".into()),
            shown(ours)
        )),
    }
    c.unknown.extend(["image tag", "GPU type"]);
    Some(c)
}

/// "; it could not tell …" when a field could not be compared.
fn could_not_tell(unknown: &[&str]) -> String {
    if unknown.is_empty() {
        return String::new();
    }
    format!(
        " (launched elsewhere: could not tell whether its {} match — the run object does not carry them)",
        unknown.join(", ")
    )
}

/// What must change for a failure of this kind not to repeat.
fn what_must_change(reason: &str) -> &'static str {
    if reason.starts_with("import error") {
        "push the fix on a new source_ref (or use another image_tag) and re-plan"
    } else if reason.starts_with("out of memory") {
        "give the trainer more memory (more GPUs, a larger gpu_type, a smaller batch) and re-plan"
    } else if reason.starts_with("credential error") {
        "fix the credentials the run receives (env) and re-plan"
    } else {
        "change the config (or the code ref) and re-plan"
    }
}

/// Judge the owner's `runs` against a plan with identity `plan`. `journal` maps run ids we
/// dispatched to their identities. `Err`: planning is refused (a run with the same identity
/// is active and `allow_duplicate` is not set).
pub fn judge<'a>(
    runs: &'a [RlRun],
    plan: &LaunchIdentity,
    journal: &[(String, LaunchIdentity)],
    now: DateTime<Utc>,
    allow_duplicate: bool,
    relaunch_after_failure: bool,
) -> Result<Verdict<'a>, String> {
    let journalled = |r: &RlRun| journal.iter().find(|(id, _)| *id == r.id).map(|(_, j)| j);
    // Runs of the same config, with how their identity compares.
    let same_config: Vec<(&RlRun, Comparison)> = runs
        .iter()
        .filter_map(|r| compare(plan, r, journalled(r)).map(|c| (r, c)))
        .collect();
    let same: Vec<&(&RlRun, Comparison)> = same_config
        .iter()
        .filter(|(_, c)| c.changed.is_empty())
        .collect();
    let mut related: Vec<(&RlRun, Relation)> = Vec::new();
    for (r, _) in &same {
        if r.is_active() {
            related.push((r, Relation::Active));
        } else if r.created_at_utc().is_some_and(|t| now - t < RECENT) {
            related.push((r, Relation::Recent));
        }
    }
    let mut checks = vec![duplicates_check(&same, &related, allow_duplicate)?];
    let mut blocked = None;
    let last_same = same.iter().max_by_key(|(r, _)| r.created_at_utc());
    if let Some((last, cmp)) = last_same
        && let Some(reason) = deterministic_failure(last)
    {
        related.push((last, Relation::Failed));
        let unsure = could_not_tell(&cmp.unknown);
        if relaunch_after_failure {
            checks.push(Check {
                check: "previous failure",
                status: "warning",
                detail: format!(
                    "the last run of this launch ({}) failed with a {reason}; relaunch_after_failure is set{unsure}",
                    last.id
                ),
            });
        } else {
            blocked = Some(format!(
                "The last run with this launch identity — the same config, source ref, image tag, GPU type, volume and owner — ({}) failed with a {reason}. The same launch would fail again: {}, or pass relaunch_after_failure: true.{unsure}",
                last.id,
                what_must_change(&reason)
            ));
        }
    } else if let Some((last, cmp)) = same_config.iter().max_by_key(|(r, _)| r.created_at_utc())
        && !cmp.changed.is_empty()
        && let Some(reason) = deterministic_failure(last)
    {
        // The same TOML failed under another identity: what changed is why it is not blocked.
        checks.push(Check {
            check: "previous failure",
            status: "ok",
            detail: format!(
                "the last run of this config ({}) failed with a {reason}; not blocked, because this launch changes {}",
                last.id,
                cmp.changed.join("; ")
            ),
        });
    }
    Ok(Verdict {
        related,
        checks,
        blocked,
    })
}

/// The duplicates check; `Err` when a run of the same identity is active and no duplicate is
/// allowed.
fn duplicates_check(
    same: &[&(&RlRun, Comparison)],
    related: &[(&RlRun, Relation)],
    allow_duplicate: bool,
) -> Result<Check, String> {
    let active: Vec<&RlRun> = related
        .iter()
        .filter(|(_, rel)| *rel == Relation::Active)
        .map(|(r, _)| *r)
        .collect();
    let unsure = |runs: &[&RlRun]| {
        let mut unknown: Vec<&str> = Vec::new();
        for (r, c) in same {
            if runs.iter().any(|x| x.id == r.id) {
                for u in &c.unknown {
                    if !unknown.contains(u) {
                        unknown.push(u);
                    }
                }
            }
        }
        could_not_tell(&unknown)
    };
    if !active.is_empty() {
        if !allow_duplicate {
            return Err(format!(
                "An identical run (same config, source ref, image tag, GPU type, volume and owner) is already active: {}. Watch it instead (get_run), or pass allow_duplicate: true to launch another.{}",
                active
                    .iter()
                    .map(|r| format!(
                        "{} ({}, {})",
                        r.id,
                        r.name.as_deref().unwrap_or("unnamed"),
                        r.status
                    ))
                    .collect::<Vec<_>>()
                    .join(", "),
                unsure(&active)
            ));
        }
        return Ok(Check {
            check: "duplicates",
            status: "warning",
            detail: format!(
                "{} identical active run(s); allow_duplicate is set",
                active.len()
            ),
        });
    }
    let recent: Vec<&RlRun> = related
        .iter()
        .filter(|(_, rel)| *rel == Relation::Recent)
        .map(|(r, _)| *r)
        .collect();
    if !recent.is_empty() {
        return Ok(Check {
            check: "duplicates",
            status: "warning",
            detail: format!(
                "the same launch ran in the last 24 hours (see duplicates){}",
                unsure(&recent)
            ),
        });
    }
    Ok(Check {
        check: "duplicates",
        status: "ok",
        detail: "no identical active or recent run".into(),
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

    fn plan() -> LaunchIdentity {
        LaunchIdentity {
            config_digest: digest(),
            ..LaunchIdentity::default()
        }
    }

    fn on_ref(r: &str) -> LaunchIdentity {
        LaunchIdentity {
            source_ref: Some(r.into()),
            ..plan()
        }
    }

    fn now() -> DateTime<Utc> {
        "2026-05-02T12:00:00Z".parse().unwrap()
    }

    #[test]
    fn an_identical_active_run_refuses_the_plan_unless_allowed() {
        let runs = [run("r1", "RUNNING", "2026-05-01T00:00:00Z", None)];
        let e = judge(&runs, &plan(), &[], now(), false, false).unwrap_err();
        assert!(e.contains("r1 (n, RUNNING)"), "{e}");
        // Launched elsewhere: the decision says what it could not tell.
        assert!(
            e.contains("could not tell whether its image tag, GPU type match"),
            "{e}"
        );
        let v = judge(&runs, &plan(), &[], now(), true, false).unwrap();
        assert_eq!(v.related[0].1, Relation::Active);
        assert_eq!(v.checks[0].status, "warning");
        assert_eq!(v.blocked, None);
    }

    #[test]
    fn an_active_run_of_the_same_toml_on_another_volume_or_owner_is_no_duplicate() {
        let mut other = run("r1", "RUNNING", "2026-05-01T00:00:00Z", None);
        other.volume_name = Some("vol-a".into());
        let v = judge(
            std::slice::from_ref(&other),
            &plan(),
            &[],
            now(),
            false,
            false,
        )
        .unwrap();
        assert!(v.related.is_empty());
        other.volume_name = None;
        other.team_id = Some("team-x".into());
        assert!(
            judge(
                std::slice::from_ref(&other),
                &plan(),
                &[],
                now(),
                false,
                false
            )
            .is_ok()
        );
    }

    #[test]
    fn a_recent_run_warns_and_an_old_one_is_ignored() {
        let recent = [run("r1", "COMPLETED", "2026-05-02T01:00:00Z", None)];
        let v = judge(&recent, &plan(), &[], now(), false, false).unwrap();
        assert_eq!(v.related.len(), 1);
        assert!(v.checks[0].detail.contains("last 24 hours"));
        let old = [run("r1", "COMPLETED", "2026-04-01T00:00:00Z", None)];
        let v = judge(&old, &plan(), &[], now(), false, false).unwrap();
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
        let v = judge(&runs, &plan(), &[], now(), false, false).unwrap();
        let b = v.blocked.as_deref().unwrap();
        assert!(
            b.contains("import error") && b.contains("new source_ref"),
            "{b}"
        );
        assert_eq!(v.related[0].1, Relation::Failed);
        let v = judge(&runs, &plan(), &[], now(), false, true).unwrap();
        assert_eq!(v.blocked, None);
        assert_eq!(v.checks[1].check, "previous failure");
        let transient = [run(
            "r1",
            "FAILED",
            "2026-04-01T00:00:00Z",
            Some("node failure"),
        )];
        let v = judge(&transient, &plan(), &[], now(), false, false).unwrap();
        assert_eq!(v.blocked, None);
    }

    #[test]
    fn a_fix_on_a_new_ref_is_not_blocked_and_the_old_ref_still_is() {
        let runs = [run(
            "r1",
            "FAILED",
            "2026-05-02T10:00:00Z",
            Some("ImportError: cannot import name 'compute_loss'"),
        )];
        // Our own dispatch: the journal knows it ran on fix/broken.
        let journal = vec![("r1".to_string(), on_ref("fix/broken"))];
        let v = judge(&runs, &on_ref("fix/good"), &journal, now(), false, false).unwrap();
        assert_eq!(v.blocked, None);
        assert!(v.related.is_empty());
        let c = v
            .checks
            .iter()
            .find(|c| c.check == "previous failure")
            .unwrap();
        assert!(
            c.detail.contains("source ref: fix/broken → fix/good"),
            "{}",
            c.detail
        );
        let v = judge(&runs, &on_ref("fix/broken"), &journal, now(), false, false).unwrap();
        let b = v.blocked.unwrap();
        assert!(b.contains("r1") && !b.contains("could not tell"), "{b}");
    }

    #[test]
    fn a_run_launched_elsewhere_is_compared_on_what_it_carries() {
        let sha = "4f2c1e9d8b7a6c5d4e3f2a1b0c9d8e7f6a5b4c3d";
        let mut failed = run(
            "r1",
            "FAILED",
            "2026-05-02T10:00:00Z",
            Some("ImportError: x"),
        );
        failed.source_commit = Some(sha.into());
        let runs = [failed];
        // The same commit: blocked, saying what could not be told.
        let v = judge(&runs, &on_ref(sha), &[], now(), false, false).unwrap();
        assert!(v.blocked.unwrap().contains("could not tell"));
        // Another commit, or no overlay: not blocked, and the check says what changed.
        let other = "0000000000000000000000000000000000000000";
        let v = judge(&runs, &on_ref(other), &[], now(), false, false).unwrap();
        assert_eq!(v.blocked, None);
        assert!(v.checks[1].detail.contains("source: commit"));
        assert_eq!(
            judge(&runs, &plan(), &[], now(), false, false)
                .unwrap()
                .blocked,
            None
        );
        // A branch name cannot be compared with a commit: treated as the same, and said.
        let v = judge(&runs, &on_ref("fix/x"), &[], now(), false, false).unwrap();
        let b = v.blocked.unwrap();
        assert!(
            b.contains("could not tell whether its source ref, image tag"),
            "{b}"
        );
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
