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

/// Room for the time between a claim (which stamps the attempt's start) and the request it
/// sends. The dispatcher sends nothing once [`SEND_DEADLINE`] has passed since its claim
/// returned, so the rest covers the claim's own return.
pub const SETTLE_MARGIN: Duration = Duration::from_secs(15);

/// How long after its claim returned a dispatcher may still send the create (an audit write
/// comes between: it can wait on a busy store, or the process can be suspended). Later, the
/// attempt is marked failed unsent: a retry judged on the settle window could overlap it.
pub const SEND_DEADLINE: Duration = Duration::from_secs(5);

/// Whether a create may still be sent `since_claim` after the claim returned.
pub fn may_still_send(since_claim: Duration) -> bool {
    since_claim <= SEND_DEADLINE
}

/// How long after an attempt was claimed a create it sent would be visible: the request goes
/// out within [`SETTLE_MARGIN`] and the platform commits within the request's `timeout`.
pub fn settle_window(timeout: Duration) -> Duration {
    timeout + SETTLE_MARGIN
}

/// After a miss by reconciliation that began at `listed_at`: the seconds still to wait before a
/// create sent by the attempt claimed at `started_at` would be visible (`None`: it would have
/// been in that listing, so the attempt created nothing and may be retried). The stores check
/// the same window again on their own clock when retrying (`StateStore::retry_dispatch`).
pub fn settle_wait(
    started_at: DateTime<Utc>,
    listed_at: DateTime<Utc>,
    timeout: Duration,
) -> Option<u64> {
    let window = settle_window(timeout);
    let since = listed_at - started_at;
    if since.to_std().unwrap_or_default() < window {
        Some((window.as_secs() as i64 - since.num_seconds()).max(1) as u64)
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
    fn a_create_held_up_after_its_claim_is_not_sent() {
        assert!(may_still_send(Duration::from_millis(20)));
        assert!(may_still_send(SEND_DEADLINE));
        assert!(!may_still_send(SEND_DEADLINE + Duration::from_millis(1)));
        // What is left of the margin covers the claim's own return.
        assert!(SETTLE_MARGIN >= SEND_DEADLINE * 2);
    }

    #[test]
    fn a_lost_attempt_waits_out_the_create_timeout_and_the_margin_before_a_new_dispatch() {
        let start = at("2026-01-01T00:00:00Z");
        let t = Duration::from_secs(120);
        assert_eq!(settle_window(t), Duration::from_secs(135));
        assert_eq!(settle_wait(start, at("2026-01-01T00:00:30Z"), t), Some(105));
        assert_eq!(settle_wait(start, at("2026-01-01T00:02:14.5Z"), t), Some(1));
        assert_eq!(settle_wait(start, at("2026-01-01T00:02:15Z"), t), None);
        // A listing that began before the attempt (clock skew) proves nothing.
        assert_eq!(settle_wait(start, at("2025-12-31T23:59:00Z"), t), Some(195));
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
