//! The dispatch rules that keep one plan from creating two runs: what a journal record found
//! before dispatching means, and how long an attempt with an unknown outcome must settle before
//! the plan may be dispatched again.

use std::time::Duration;

use chrono::{DateTime, Utc};

use crate::store::DispatchState;

/// What to do about a plan's journal record before asking anyone anything.
#[derive(Debug, Clone, PartialEq)]
pub enum Existing<'a> {
    /// The plan created this run: return it, dispatch nothing.
    ReturnRun {
        run_id: &'a str,
        details: &'a serde_json::Value,
    },
    /// A definite failure: the plan may be dispatched again.
    Proceed,
    /// The outcome is in doubt: look for the run first. `in_flight`: a live holder is still
    /// dispatching, so a miss means "in progress", not "lost".
    Reconcile { in_flight: bool },
}

/// Read a journal record found before dispatching.
pub fn on_existing(state: &DispatchState) -> Existing<'_> {
    match state {
        DispatchState::Dispatched { run_id, details } => Existing::ReturnRun { run_id, details },
        DispatchState::Failed { .. } => Existing::Proceed,
        DispatchState::Dispatching { lease_expired, .. } => Existing::Reconcile {
            in_flight: !lease_expired,
        },
        DispatchState::Unknown { .. } => Existing::Reconcile { in_flight: false },
    }
}

/// After a miss by reconciliation: the seconds still to wait before a create that was in flight
/// at `started_at` would be visible (`None`: it would be by now, dispatch again). The platform
/// commits a create within `create_timeout`.
pub fn settle_wait(
    started_at: DateTime<Utc>,
    now: DateTime<Utc>,
    create_timeout: Duration,
) -> Option<u64> {
    let since = now - started_at;
    if since.to_std().unwrap_or_default() < create_timeout {
        Some((create_timeout.as_secs() as i64 - since.num_seconds()).max(1) as u64)
    } else {
        None
    }
}

/// What the dispatcher does when its claim finds a record. The settling before the claim may
/// have seen no record, or another attempt than the one found now (replicas and sessions race
/// between the two), so a verdict reached then never licenses a dispatch now.
#[derive(Debug, Clone, PartialEq)]
pub enum ClaimConflict<'a> {
    /// Dispatched meanwhile: return that run.
    ReturnRun {
        run_id: &'a str,
        details: &'a serde_json::Value,
    },
    /// The attempt found is in doubt (its outcome unknown, or its holder died): settle that
    /// attempt (look for its run, wait out its settle window), and only then claim a retry of
    /// that very attempt, atomically (of several callers one wins, and none once the record
    /// has moved on).
    InDoubt,
    /// Someone else is dispatching.
    Busy,
}

/// Read the record a dispatch claim ran into.
pub fn on_claim_conflict(state: &DispatchState) -> ClaimConflict<'_> {
    match state {
        DispatchState::Dispatched { run_id, details } => {
            ClaimConflict::ReturnRun { run_id, details }
        }
        DispatchState::Dispatching {
            lease_expired: true,
            ..
        }
        | DispatchState::Unknown { .. } => ClaimConflict::InDoubt,
        _ => ClaimConflict::Busy,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn at(s: &str) -> DateTime<Utc> {
        s.parse().unwrap()
    }

    #[test]
    fn a_dispatched_plan_returns_its_run_and_a_doubtful_one_reconciles() {
        let details = json!({});
        let done = DispatchState::Dispatched {
            run_id: "r1".into(),
            details: details.clone(),
        };
        assert_eq!(
            on_existing(&done),
            Existing::ReturnRun {
                run_id: "r1",
                details: &details
            }
        );
        let live = DispatchState::Dispatching {
            holder: "h".into(),
            lease_until: at("2026-01-01T00:00:00Z"),
            lease_expired: false,
        };
        assert_eq!(on_existing(&live), Existing::Reconcile { in_flight: true });
        let lost = DispatchState::Unknown {
            reason: "timeout".into(),
        };
        assert_eq!(on_existing(&lost), Existing::Reconcile { in_flight: false });
        let failed = DispatchState::Failed {
            reason: "400".into(),
        };
        assert_eq!(on_existing(&failed), Existing::Proceed);
    }

    #[test]
    fn a_lost_attempt_waits_out_the_create_timeout_before_a_new_dispatch() {
        let start = at("2026-01-01T00:00:00Z");
        let t = Duration::from_secs(120);
        assert_eq!(settle_wait(start, at("2026-01-01T00:00:30Z"), t), Some(90));
        assert_eq!(settle_wait(start, at("2026-01-01T00:01:59.5Z"), t), Some(1));
        assert_eq!(settle_wait(start, at("2026-01-01T00:02:00Z"), t), None);
    }

    #[test]
    fn a_claim_conflict_settles_a_dead_holder_or_a_lost_answer_first() {
        let dead = DispatchState::Dispatching {
            holder: "h".into(),
            lease_until: at("2026-01-01T00:00:00Z"),
            lease_expired: true,
        };
        assert_eq!(on_claim_conflict(&dead), ClaimConflict::InDoubt);
        let live = DispatchState::Dispatching {
            holder: "h".into(),
            lease_until: at("2026-01-01T00:00:00Z"),
            lease_expired: false,
        };
        assert_eq!(on_claim_conflict(&live), ClaimConflict::Busy);
        let lost = DispatchState::Unknown { reason: "x".into() };
        assert_eq!(on_claim_conflict(&lost), ClaimConflict::InDoubt);
    }
}
