//! `watch_run`: wait for a step, a status or the end, with progress notifications and
//! economical polling (backing off while nothing changes); cancellable.
use std::{
    sync::Arc,
    time::{Duration, Instant},
};

use factory_platform::PlatformClient;
use factory_platform::wire::runs::{ProgressResponse, RlRun, RunStatus};
use rmcp::model::{ProgressNotificationParam, ProgressToken};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{
    error::ToolError,
    reply::{Outcome, ToolResult},
    run_view::fetch_run,
    server::Call,
    state::{AppState, check_id},
};

use super::*;

// ---- watch_run -------------------------------------------------------------------------------

/// Longest `timeout_s` accepted.
pub const MAX_WATCH_S: u32 = 600;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WatchArgs {
    pub run_id: String,
    /// Return once this many steps are complete.
    #[schemars(range(min = 1))]
    pub until_step: Option<i64>,
    /// Return once the run is in this status (default, with no until_*: any terminal status).
    pub until_status: Option<StatusArg>,
    /// Longest wait in seconds, 1 to 600 (default 120).
    #[schemars(range(min = 1, max = 600))]
    pub timeout_s: Option<u32>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct WatchOut {
    pub run_id: String,
    /// reached, timed_out, run_failed, run_stopped, or run_ended.
    pub reason: String,
    pub target: String,
    pub status: String,
    pub terminal: bool,
    pub latest_step: Option<i64>,
    pub max_steps: Option<i64>,
    pub error_message: Option<String>,
    pub waited_s: f64,
    pub requests: u32,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Target {
    Step(i64),
    Status(StatusArg),
    Terminal,
}

impl Target {
    fn describe(self) -> String {
        match self {
            Target::Step(n) => format!("step {n}"),
            Target::Status(s) => format!("status {}", s.status()),
            Target::Terminal => "a terminal status".into(),
        }
    }
}

/// Whether the wait is over, and why.
fn verdict(
    target: Target,
    status: &str,
    terminal: bool,
    step: Option<i64>,
) -> Option<&'static str> {
    let reached = match target {
        Target::Step(n) => step.is_some_and(|s| s >= n),
        Target::Status(s) => RunStatus::parse(status) == s.status(),
        Target::Terminal => terminal && RunStatus::parse(status) == RunStatus::Completed,
    };
    if reached {
        return Some("reached");
    }
    if !terminal {
        return None;
    }
    Some(match RunStatus::parse(status) {
        RunStatus::Failed => "run_failed",
        RunStatus::Stopped | RunStatus::Paused => "run_stopped",
        _ => "run_ended",
    })
}

/// Paces platform requests: never two closer than the current interval, which backs off while
/// nothing changes. Waiting ends early on cancellation or at the deadline.
struct Pacer {
    min: Duration,
    max: Duration,
    interval: Duration,
    last: Option<Instant>,
    deadline: Instant,
    requests: u32,
    /// The server-wide budget every poll loop shares.
    budget: crate::pacing::PollBudget,
}

enum Wait {
    Go,
    Deadline,
}

impl Pacer {
    async fn wait(&mut self, call: &Call) -> Result<Wait, Cancelled> {
        let now = Instant::now();
        let due = self.last.map_or(now, |l| l + self.interval);
        if due >= self.deadline {
            tokio::select! {
                _ = call.ctx.ct.cancelled() => return Err(Cancelled),
                _ = tokio::time::sleep_until(self.deadline.into()) => return Ok(Wait::Deadline),
            }
        }
        if due > now {
            tokio::select! {
                _ = call.ctx.ct.cancelled() => return Err(Cancelled),
                _ = tokio::time::sleep_until(due.into()) => {}
            }
        }
        // A slot after the deadline is not reserved, and a cancelled wait gives its slot back.
        let Some(slot) = self.budget.reserve_before(Instant::now(), self.deadline) else {
            tokio::select! {
                _ = call.ctx.ct.cancelled() => return Err(Cancelled),
                _ = tokio::time::sleep_until(self.deadline.into()) => return Ok(Wait::Deadline),
            }
        };
        tokio::select! {
            _ = call.ctx.ct.cancelled() => {
                self.budget.give_back(slot);
                return Err(Cancelled);
            }
            _ = tokio::time::sleep_until(slot.at.into()) => {}
        }
        if call.ctx.ct.is_cancelled() {
            self.budget.give_back(slot);
            return Err(Cancelled);
        }
        self.last = Some(Instant::now());
        self.requests += 1;
        Ok(Wait::Go)
    }

    fn changed(&mut self, changed: bool) {
        self.interval = if changed {
            self.min
        } else {
            self.interval.mul_f64(1.5).min(self.max)
        };
    }
}

fn cancelled(run_id: &str) -> ToolError {
    ToolError::new(format!(
        "The wait for run {run_id} was cancelled; the run itself is untouched (get_run shows it)."
    ))
}

/// Run a platform request, abandoning it when the client cancels.
async fn abortable<T>(call: &Call, fut: impl Future<Output = T>) -> Result<T, Cancelled> {
    tokio::select! {
        _ = call.ctx.ct.cancelled() => Err(Cancelled),
        v = fut => Ok(v),
    }
}

pub(super) async fn watch_run(
    state: Arc<AppState>,
    args: WatchArgs,
    call: Call,
) -> ToolResult<WatchOut> {
    check_id("run", &args.run_id)?;
    let (target, timeout_s) = target_of(&args)?;
    let platform = state.platform()?;
    let token = call.ctx.meta.get_progress_token();
    let need_steps = matches!(target, Target::Step(_)) || token.is_some();
    let started = Instant::now();
    let min = state.limits.watch_poll_min;
    let mut pacer = Pacer {
        min,
        max: state.limits.watch_poll_max.max(min),
        interval: min,
        last: None,
        deadline: started + Duration::from_secs(u64::from(timeout_s)),
        requests: 0,
        budget: state.polls.clone(),
    };
    let mut run: Option<RlRun> = None;
    let mut step: Option<i64> = None;
    let mut notified: Option<i64> = None;
    let id = args.run_id.clone();
    let reason = loop {
        // The run's status.
        match pacer.wait(&call).await.map_err(|_| cancelled(&id))? {
            Wait::Deadline if run.is_some() => break "timed_out",
            // Not one answer yet: read once anyway, so the result has a state.
            Wait::Deadline => {}
            Wait::Go => {}
        }
        let r = abortable(&call, fetch_run(&state, &id))
            .await
            .map_err(|_| cancelled(&id))??;
        let mut changed = run
            .as_ref()
            .is_none_or(|old| old.status != r.status || old.updated_at != r.updated_at);
        let status = r.status.clone();
        let terminal = r.is_terminal();
        let max_steps = r.max_steps;
        // Steps, when the target or the progress notifications need them and there can be any.
        let started_running = !matches!(r.run_status(), RunStatus::Queued | RunStatus::Pending);
        run = Some(r);
        let done_early = verdict(target, &status, terminal, step);
        if need_steps && started_running && !matches!(done_early, Some("reached")) {
            match pacer.wait(&call).await.map_err(|_| cancelled(&id))? {
                Wait::Deadline => break "timed_out",
                Wait::Go => {}
            }
            changed |= read_step(&call, platform, &id, &mut step).await?;
            if let (Some(tok), Some(s)) = (&token, step)
                && notified.is_none_or(|n| s > n)
            {
                notified = Some(s);
                notify_step(&call, tok, s, max_steps, &status).await;
            }
        }
        if let Some(why) = verdict(target, &status, terminal, step) {
            break why;
        }
        if Instant::now() >= pacer.deadline {
            break "timed_out";
        }
        pacer.changed(changed);
    };
    let Some(r) = run else {
        return Err(ToolError::new(format!(
            "Run {id} could not be read before the wait ended: call watch_run again."
        )));
    };
    let waited_s = (started.elapsed().as_secs_f64() * 10.0).round() / 10.0;
    let summary = summary_of(&id, reason, target, timeout_s, &r, step);
    let out = WatchOut {
        run_id: id,
        reason: reason.into(),
        target: target.describe(),
        status: r.status.clone(),
        terminal: r.is_terminal(),
        latest_step: step,
        max_steps: r.max_steps,
        error_message: r.error_message.clone(),
        waited_s,
        requests: pacer.requests,
    };
    Ok(Outcome::done(summary, out))
}

/// What to wait for, and for how long (seconds), from the arguments.
fn target_of(args: &WatchArgs) -> Result<(Target, u32), ToolError> {
    let target = match (args.until_step, args.until_status) {
        (Some(_), Some(_)) => {
            return Err(ToolError::new(
                "Give until_step or until_status, not both (neither: wait for the run to end).",
            ));
        }
        (Some(n), None) if n < 1 => {
            return Err(ToolError::new(format!(
                "`until_step` must be 1 or more; got {n}"
            )));
        }
        (Some(n), None) => Target::Step(n),
        (None, Some(s)) => Target::Status(s),
        (None, None) => Target::Terminal,
    };
    let timeout_s = args.timeout_s.unwrap_or(120);
    if !(1..=MAX_WATCH_S).contains(&timeout_s) {
        return Err(ToolError::new(format!(
            "`timeout_s` must be between 1 and {MAX_WATCH_S}; got {timeout_s}. For longer waits call watch_run again."
        )));
    }
    Ok((target, timeout_s))
}

/// Read the run's latest step into `step`; whether it changed. A failed read does not end the
/// wait (progress is a nicety); a cancelled one does.
async fn read_step(
    call: &Call,
    platform: &PlatformClient,
    id: &str,
    step: &mut Option<i64>,
) -> Result<bool, ToolError> {
    match abortable(call, platform.get_progress(id))
        .await
        .map_err(|_| cancelled(id))?
    {
        Ok(ProgressResponse { latest_step, .. }) => {
            let changed = latest_step != *step;
            *step = latest_step.or(*step);
            Ok(changed)
        }
        Err(e) => {
            tracing::debug!(error = %e, "progress read failed while watching");
            Ok(false)
        }
    }
}

/// A progress notification for step `s` to a client that asked for them.
async fn notify_step(
    call: &Call,
    token: &ProgressToken,
    s: i64,
    max_steps: Option<i64>,
    status: &str,
) {
    let mut p =
        ProgressNotificationParam::new(token.clone(), s as f64).with_message(match max_steps {
            Some(m) => format!("step {s} of {m} ({status})"),
            None => format!("step {s} ({status})"),
        });
    if let Some(m) = max_steps {
        p = p.with_total(m as f64);
    }
    let _ = call.ctx.peer.notify_progress(p).await;
}

/// The one-line answer: why the wait ended, and where the run is.
fn summary_of(
    id: &str,
    reason: &str,
    target: Target,
    timeout_s: u32,
    r: &RlRun,
    step: Option<i64>,
) -> String {
    let steps = match (step, r.max_steps) {
        (Some(s), Some(m)) => format!(", step {s} of {m}"),
        (Some(s), None) => format!(", step {s}"),
        _ => String::new(),
    };
    match reason {
        "reached" => format!(
            "Run {id} reached {} ({}{steps})",
            target.describe(),
            r.status
        ),
        "timed_out" => format!(
            "Timed out after {timeout_s} s waiting for {} of run {id}: it is {}{steps}; call watch_run again to keep waiting",
            target.describe(),
            r.status
        ),
        "run_failed" => format!("Run {id} FAILED{steps}: diagnose_run says why"),
        "run_stopped" => format!(
            "Run {id} is {}{steps}: it will not reach {}",
            r.status,
            target.describe()
        ),
        _ => format!(
            "Run {id} ended ({}{steps}) without reaching {}",
            r.status,
            target.describe()
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn watch_verdicts_say_why_the_wait_ended() {
        assert_eq!(
            verdict(Target::Step(5), "RUNNING", false, Some(5)),
            Some("reached")
        );
        assert_eq!(verdict(Target::Step(5), "RUNNING", false, Some(4)), None);
        // RUNNING alone is not progress.
        assert_eq!(verdict(Target::Step(1), "RUNNING", false, None), None);
        assert_eq!(
            verdict(Target::Step(50), "COMPLETED", true, Some(20)),
            Some("run_ended")
        );
        assert_eq!(
            verdict(Target::Terminal, "COMPLETED", true, Some(20)),
            Some("reached")
        );
        assert_eq!(
            verdict(Target::Terminal, "FAILED", true, None),
            Some("run_failed")
        );
        assert_eq!(
            verdict(Target::Status(StatusArg::Running), "STOPPED", true, None),
            Some("run_stopped")
        );
        assert_eq!(
            verdict(Target::Status(StatusArg::Failed), "FAILED", true, None),
            Some("reached")
        );
    }
}
