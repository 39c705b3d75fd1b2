//! The watchdog's decisions (`factory-mcp guard`, `diagnose_run`): whether a run is stalled,
//! which of the caller's active runs break the policy's `[guard]` limits, the step budget of a
//! run we launched, or the active hourly cap, and whether such a run is stopped or paused. Pure:
//! the sweep in `tools/` gathers the facts and acts.

use chrono::{DateTime, Utc};
use factory_platform::wire::runs::RunStatus;

use crate::{
    lifecycle::{Pause, pause},
    policy::{GuardAction, GuardPolicy},
};

/// A run is stalled when no step completed for ten times its own pace, and never before five
/// minutes; before its first step, after thirty minutes of RUNNING.
const STALL_PACE_FACTOR: f64 = 10.0;
const STALL_FLOOR_S: f64 = 300.0;
const STALL_FIRST_STEP_S: f64 = 1800.0;

/// The stall judgement of a RUNNING run.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Stall {
    /// Seconds since the last progress (or the start), never negative.
    pub since_s: Option<f64>,
    /// The run's own average seconds per step.
    pub pace_s: Option<f64>,
    /// Seconds without progress after which it is stalled.
    pub threshold_s: Option<f64>,
    pub stalled: bool,
}

/// Judge a run's stall. The API has no per-step timestamps, so the pace is the run's own
/// average: (lastUpdatedAt − startedAt) ÷ latestStep. `now` is the newest of this server's
/// clock, the platform's (its `Date` header) and every timestamp it reported for the run, so a
/// platform clock ahead of ours never makes a healthy run look stalled.
pub fn judge_stall(
    started_at: Option<DateTime<Utc>>,
    last_updated_at: Option<DateTime<Utc>>,
    latest_step: Option<i64>,
    now: DateTime<Utc>,
) -> Stall {
    let Some(since_ref) = last_updated_at.or(started_at) else {
        return Stall::default();
    };
    let since = ((now - since_ref).num_milliseconds() as f64 / 1000.0).max(0.0);
    let pace = match (started_at, last_updated_at, latest_step) {
        (Some(s), Some(l), Some(n)) if n > 0 && l > s => {
            Some((l - s).num_milliseconds() as f64 / 1000.0 / n as f64)
        }
        _ => None,
    };
    let threshold = match (pace, latest_step) {
        (Some(p), _) => (p * STALL_PACE_FACTOR).max(STALL_FLOOR_S),
        (None, Some(n)) if n > 0 => STALL_FLOOR_S,
        _ => STALL_FIRST_STEP_S,
    };
    Stall {
        since_s: Some(since),
        pace_s: pace,
        threshold_s: Some(threshold),
        stalled: since > threshold,
    }
}

/// Why a run breaks the `[guard]` limits on its own: wall-clock hours since it started (on the
/// platform's clock), then cost so far (its rate × those hours). `None`: within them.
pub fn over_limits(
    guard: &GuardPolicy,
    hours: Option<f64>,
    rate_per_hour_usd: Option<f64>,
    rate_estimated: bool,
) -> Option<String> {
    if let (Some(max), Some(h)) = (guard.max_wall_clock_hours, hours)
        && h > max
    {
        return Some(format!("ran {h:.2} h; guard.max_wall_clock_hours is {max}"));
    }
    if let (Some(max), Some(h), Some(rate)) = (guard.max_run_cost_usd, hours, rate_per_hour_usd) {
        let cost = rate * h;
        if cost > max {
            return Some(format!(
                "cost so far ${cost:.2} ({}${rate:.2}/h × {h:.2} h); guard.max_run_cost_usd is ${max:.2}",
                if rate_estimated { "estimated " } else { "" }
            ));
        }
    }
    None
}

/// Why a run we launched is past the `max_steps` it declared. `None`: within it.
pub fn past_step_budget(latest_step: i64, max_steps: i64) -> Option<String> {
    (latest_step > max_steps)
        .then(|| format!("at step {latest_step}, past its declared max_steps {max_steps}"))
}

/// One active run, as the active hourly cap sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct Active<'a> {
    pub id: &'a str,
    pub created_at: Option<DateTime<Utc>>,
    pub rate_per_hour_usd: Option<f64>,
}

/// The runs to act on so the rest fit under `max_active_cost_per_hour_usd`: the newest first,
/// until the remaining total is within the cap. `runs` are those not already flagged.
pub fn over_active_cap(cap: f64, runs: &[Active<'_>]) -> Vec<(String, String)> {
    let mut newest_first: Vec<&Active<'_>> = runs.iter().collect();
    newest_first.sort_by_key(|a| std::cmp::Reverse(a.created_at));
    let mut total: f64 = newest_first
        .iter()
        .filter_map(|a| a.rate_per_hour_usd)
        .sum();
    let mut out = Vec::new();
    for a in newest_first {
        if total <= cap {
            break;
        }
        out.push((
            a.id.to_string(),
            format!("active runs cost ${total:.2}/h; max_active_cost_per_hour_usd is ${cap:.2} (newest run first)"),
        ));
        total -= a.rate_per_hour_usd.unwrap_or(0.0);
    }
    out
}

/// What the guard does to a flagged run: its configured action, except that only a run that
/// can be paused now is paused — any other is stopped.
pub fn action_for(configured: GuardAction, status: &RunStatus) -> GuardAction {
    if configured == GuardAction::Pause && pause(status) == Pause::Go {
        GuardAction::Pause
    } else {
        GuardAction::Stop
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    #[test]
    fn a_run_is_stalled_only_after_ten_times_its_own_pace_and_five_minutes() {
        let start = Some(t("2026-01-01T00:00:00Z"));
        // 10 steps in 100 s: 10 s/step; threshold max(100 s, 300 s) = 300 s.
        let last = Some(t("2026-01-01T00:01:40Z"));
        let s = judge_stall(start, last, Some(10), t("2026-01-01T00:05:00Z"));
        assert_eq!(
            s,
            Stall {
                since_s: Some(200.0),
                pace_s: Some(10.0),
                threshold_s: Some(300.0),
                stalled: false
            }
        );
        assert!(judge_stall(start, last, Some(10), t("2026-01-01T00:06:41Z")).stalled);
        // A slow run (100 s/step) is judged against its own pace: 1000 s.
        let last = Some(t("2026-01-01T00:16:40Z"));
        let s = judge_stall(start, last, Some(10), t("2026-01-01T00:30:00Z"));
        assert_eq!(s.threshold_s, Some(1000.0));
        assert!(!s.stalled);
        // A platform clock ahead of ours: progress "in the future" is not a stall.
        let s = judge_stall(start, last, Some(10), t("2026-01-01T00:00:05Z"));
        assert_eq!(s.since_s, Some(0.0));
        assert!(!s.stalled);
    }

    #[test]
    fn before_the_first_step_the_start_up_gets_thirty_minutes() {
        let start = Some(t("2026-01-01T00:00:00Z"));
        let s = judge_stall(start, None, None, t("2026-01-01T00:20:00Z"));
        assert_eq!(
            (s.pace_s, s.threshold_s, s.stalled),
            (None, Some(1800.0), false)
        );
        assert!(judge_stall(start, None, None, t("2026-01-01T00:31:00Z")).stalled);
        // Nothing known: no judgement.
        assert_eq!(
            judge_stall(None, None, None, t("2026-01-01T00:31:00Z")),
            Stall::default()
        );
    }

    fn guard(hours: Option<f64>, cost: Option<f64>) -> GuardPolicy {
        GuardPolicy {
            max_wall_clock_hours: hours,
            max_run_cost_usd: cost,
            ..GuardPolicy::default()
        }
    }

    #[test]
    fn wall_clock_hours_are_checked_before_cost() {
        let g = guard(Some(2.0), Some(10.0));
        let r = over_limits(&g, Some(3.0), Some(100.0), false).unwrap();
        assert!(r.starts_with("ran 3.00 h"), "{r}");
        let r = over_limits(&g, Some(1.5), Some(10.0), true).unwrap();
        assert!(r.contains("estimated $10.00/h × 1.50 h"), "{r}");
        assert!(r.contains("cost so far $15.00"), "{r}");
        assert_eq!(over_limits(&g, Some(1.5), Some(5.0), false), None);
        // No start time or no rate: nothing to judge.
        assert_eq!(over_limits(&g, None, Some(100.0), false), None);
        assert_eq!(
            over_limits(&guard(None, Some(1.0)), Some(9.0), None, false),
            None
        );
        // No limits: never.
        assert_eq!(
            over_limits(&guard(None, None), Some(99.0), Some(99.0), false),
            None
        );
    }

    #[test]
    fn a_step_budget_is_passed_only_beyond_it() {
        assert_eq!(past_step_budget(10, 10), None);
        assert_eq!(
            past_step_budget(11, 10).as_deref(),
            Some("at step 11, past its declared max_steps 10")
        );
    }

    #[test]
    fn the_active_cap_takes_the_newest_runs_first_until_the_rest_fit() {
        let runs = [
            Active {
                id: "old",
                created_at: Some(t("2026-01-01T00:00:00Z")),
                rate_per_hour_usd: Some(5.0),
            },
            Active {
                id: "new",
                created_at: Some(t("2026-01-01T02:00:00Z")),
                rate_per_hour_usd: Some(4.0),
            },
            Active {
                id: "mid",
                created_at: Some(t("2026-01-01T01:00:00Z")),
                rate_per_hour_usd: Some(3.0),
            },
        ];
        let ids = |cap| {
            over_active_cap(cap, &runs)
                .into_iter()
                .map(|(id, _)| id)
                .collect::<Vec<_>>()
        };
        assert_eq!(ids(12.0), Vec::<String>::new());
        assert_eq!(ids(8.0), ["new"]);
        assert_eq!(ids(5.0), ["new", "mid"]);
        assert_eq!(ids(1.0), ["new", "mid", "old"]);
        let (_, reason) = &over_active_cap(8.0, &runs)[0];
        assert_eq!(
            reason,
            "active runs cost $12.00/h; max_active_cost_per_hour_usd is $8.00 (newest run first)"
        );
    }

    #[test]
    fn only_a_run_that_can_pause_now_is_paused() {
        assert_eq!(
            action_for(GuardAction::Pause, &RunStatus::Running),
            GuardAction::Pause
        );
        assert_eq!(
            action_for(GuardAction::Pause, &RunStatus::Queued),
            GuardAction::Stop
        );
        assert_eq!(
            action_for(GuardAction::Stop, &RunStatus::Running),
            GuardAction::Stop
        );
    }
}
