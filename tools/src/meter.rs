//! The operators' metrics (issue 21 §3): what the tools count and time, recorded through the
//! `metrics` facade; `serve --http` with a metrics listener installs the Prometheus recorder
//! that renders them (`factory_server::http::ops`), and without one every record is a no-op.
//!
//! Every label value comes from a fixed set: tool names only from the catalogue (anything else
//! is `unknown`), outcomes, launch results, refusal reasons and confirmation outcomes as the
//! enums below. Nothing the model wrote, nothing the platform answered and no secret can
//! become a label, so the exposition holds no secret and its series stay bounded.
//!
//! The per-tool handles are registered on first use and kept, so a call records with two
//! atomic adds and no allocation.

use std::{
    collections::HashMap,
    sync::OnceLock,
    time::{Duration, Instant},
};

use metrics::{Counter, Histogram};

use crate::{
    catalogue,
    error::ErrorKind,
    reply::{Outcome, ToolResult},
};

/// Tool calls, labelled `tool` and `outcome` ([`CallOutcome`]).
pub const TOOL_CALLS: &str = "factory_tool_calls_total";
/// Seconds a tool call took, labelled `tool` (waits for a person included).
pub const TOOL_DURATION: &str = "factory_tool_call_duration_seconds";
/// The end of each dispatch of a plan, labelled `result` ([`Launch`]).
pub const LAUNCHES: &str = "factory_launches_total";
/// Refusals by the policy or a safety rule, labelled `reason` ([`Refusal`]).
pub const REFUSALS: &str = "factory_refusals_total";
/// What became of each request for a person's confirmation, labelled `outcome`
/// ([`Confirmation`]).
pub const CONFIRMATIONS: &str = "factory_confirmations_total";
/// Failed platform and traces requests (counted in `factory-platform`).
pub const PLATFORM_ERRORS: &str = factory_platform::error::ERRORS_METRIC;

/// The latency histogram's buckets, in seconds: from a cached read to a launch that waited for
/// the approval page (≤ 120 s).
pub const DURATION_BUCKETS: &[f64] = &[
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0,
];

/// The HELP lines of every metric (call once, after the recorder is installed).
pub fn describe() {
    metrics::describe_counter!(TOOL_CALLS, "Tool calls by tool and outcome.");
    metrics::describe_histogram!(
        TOOL_DURATION,
        metrics::Unit::Seconds,
        "Duration of tool calls by tool, waits for a person included."
    );
    metrics::describe_counter!(
        LAUNCHES,
        "Dispatches of a plan by result: dispatched, deduplicated, reconciled, failed, unknown."
    );
    metrics::describe_counter!(
        REFUSALS,
        "Actions refused by the policy or a safety rule, by reason."
    );
    metrics::describe_counter!(
        CONFIRMATIONS,
        "Requests for a person's confirmation by outcome."
    );
    metrics::describe_counter!(
        PLATFORM_ERRORS,
        "Failed platform and traces requests (each attempt) by service and HTTP status, or timeout/transport."
    );
}

/// How a tool call ended: the label `outcome` of [`TOOL_CALLS`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallOutcome {
    Ok,
    /// The 2026-07-28 input-required round trip (a question for the person).
    InputRequired,
    BadArgument,
    NotFound,
    Refused,
    NeedsPerson,
    PlatformError,
    Unavailable,
    /// The client went away before the answer (the call's future was dropped).
    Cancelled,
    /// A tool that does not exist or is gated off (counted under the tool name `unknown`).
    UnknownTool,
}

impl CallOutcome {
    const COUNT: usize = 10;

    pub fn as_str(self) -> &'static str {
        match self {
            CallOutcome::Ok => "ok",
            CallOutcome::InputRequired => "input_required",
            CallOutcome::BadArgument => "bad_argument",
            CallOutcome::NotFound => "not_found",
            CallOutcome::Refused => "refused",
            CallOutcome::NeedsPerson => "needs_person",
            CallOutcome::PlatformError => "platform_error",
            CallOutcome::Unavailable => "unavailable",
            CallOutcome::Cancelled => "cancelled",
            CallOutcome::UnknownTool => "unknown_tool",
        }
    }

    /// The outcome of a handler's result.
    pub fn of<O>(result: &ToolResult<O>) -> Self {
        match result {
            Ok(Outcome::Done { .. } | Outcome::Tree { .. }) => CallOutcome::Ok,
            Ok(Outcome::Response(_)) => CallOutcome::InputRequired,
            Err(e) => match e.kind {
                ErrorKind::BadArgument => CallOutcome::BadArgument,
                ErrorKind::NotFound => CallOutcome::NotFound,
                ErrorKind::Refused => CallOutcome::Refused,
                ErrorKind::NeedsPerson => CallOutcome::NeedsPerson,
                ErrorKind::Platform => CallOutcome::PlatformError,
                ErrorKind::Unavailable => CallOutcome::Unavailable,
            },
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// How a dispatch of a plan ended: the label `result` of [`LAUNCHES`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Launch {
    /// The platform created the run.
    Dispatched,
    /// The plan had been dispatched before: its run is returned, nothing sent.
    Deduplicated,
    /// A lost create answer, then the run found by reconciliation.
    Reconciled,
    /// The platform refused the create: nothing was created.
    Failed,
    /// The create's answer was lost (timeout, 5xx, reset): the outcome is being reconciled.
    Unknown,
}

impl Launch {
    pub fn as_str(self) -> &'static str {
        match self {
            Launch::Dispatched => "dispatched",
            Launch::Deduplicated => "deduplicated",
            Launch::Reconciled => "reconciled",
            Launch::Failed => "failed",
            Launch::Unknown => "unknown",
        }
    }
}

/// Why an action was refused: the label `reason` of [`REFUSALS`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// A secret value in an argument, a config or an upload (the secret guard).
    SecretValue,
    /// A secret named in `env` that may not be forwarded or that the server holds no value for.
    SecretForwarding,
    /// An argument the assistant may not set under plan-mode confirmation.
    Override,
    /// A team outside the policy's allowlist.
    TeamNotAllowed,
    /// A budget of the policy (GPUs, $/h, steps, active runs, active $/h).
    Budget,
    /// An identical run is active (without `allow_duplicate`).
    Duplicate,
    /// A blocked plan: a duplicate of an active run, or a failure that would repeat.
    PlanBlocked,
    PlanExpired,
    /// The config file changed since the plan was made.
    ConfigChanged,
    /// The run's state does not allow the action (e.g. delete while active, resume not paused).
    RunState,
}

impl Refusal {
    pub fn as_str(self) -> &'static str {
        match self {
            Refusal::SecretValue => "secret_value",
            Refusal::SecretForwarding => "secret_forwarding",
            Refusal::Override => "override",
            Refusal::TeamNotAllowed => "team_not_allowed",
            Refusal::Budget => "budget",
            Refusal::Duplicate => "duplicate",
            Refusal::PlanBlocked => "plan_blocked",
            Refusal::PlanExpired => "plan_expired",
            Refusal::ConfigChanged => "config_changed",
            Refusal::RunState => "run_state",
        }
    }
}

/// What became of a request for a person's confirmation: the label `outcome` of
/// [`CONFIRMATIONS`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Confirmation {
    /// A dialog or the approval page asked (the answer comes later).
    Asked,
    Approved,
    Declined,
    /// The call was cancelled while waiting for the page, or the page was not opened.
    Cancelled,
    /// The sealed confirmation state came back invalid, tampered with or expired.
    Expired,
    /// A confirmation answer used a second time.
    Replayed,
    /// No channel here: the person must approve in their terminal (`factory-mcp approve`), or
    /// has not decided on the page yet.
    Pending,
}

impl Confirmation {
    pub fn as_str(self) -> &'static str {
        match self {
            Confirmation::Asked => "asked",
            Confirmation::Approved => "approved",
            Confirmation::Declined => "declined",
            Confirmation::Cancelled => "cancelled",
            Confirmation::Expired => "expired",
            Confirmation::Replayed => "replayed",
            Confirmation::Pending => "pending",
        }
    }
}

pub(crate) fn launch(result: Launch) {
    metrics::counter!(LAUNCHES, "result" => result.as_str()).increment(1);
}

pub(crate) fn refusal(reason: Refusal) {
    metrics::counter!(REFUSALS, "reason" => reason.as_str()).increment(1);
}

pub(crate) fn confirmation(outcome: Confirmation) {
    metrics::counter!(CONFIRMATIONS, "outcome" => outcome.as_str()).increment(1);
}

/// The label `tool`: the catalogue's name, or `unknown` for any other string.
pub fn tool_label(name: &str) -> &'static str {
    catalogue::CATALOGUE
        .iter()
        .find(|s| s.name == name)
        .map_or("unknown", |s| s.name)
}

/// One tool's handles, registered on first use.
struct ToolMeters {
    name: &'static str,
    calls: [OnceLock<Counter>; CallOutcome::COUNT],
    duration: OnceLock<Histogram>,
}

impl ToolMeters {
    fn new(name: &'static str) -> Self {
        ToolMeters {
            name,
            calls: Default::default(),
            duration: OnceLock::new(),
        }
    }

    fn record(&self, outcome: CallOutcome, took: Duration) {
        self.calls[outcome.index()]
            .get_or_init(|| {
                metrics::counter!(TOOL_CALLS, "tool" => self.name, "outcome" => outcome.as_str())
            })
            .increment(1);
        self.duration
            .get_or_init(|| metrics::histogram!(TOOL_DURATION, "tool" => self.name))
            .record(took.as_secs_f64());
    }
}

fn meters(name: &str) -> &'static ToolMeters {
    static METERS: OnceLock<(HashMap<&'static str, ToolMeters>, ToolMeters)> = OnceLock::new();
    let (known, unknown) = METERS.get_or_init(|| {
        let known = catalogue::CATALOGUE
            .iter()
            .map(|s| (s.name, ToolMeters::new(s.name)))
            .collect();
        (known, ToolMeters::new("unknown"))
    });
    known.get(name).unwrap_or(unknown)
}

/// A tool call being timed; dropped without [`CallTimer::finish`] (the client went away and
/// the call's future with it), it counts as `cancelled`.
pub(crate) struct CallTimer {
    meters: &'static ToolMeters,
    started: Instant,
    finished: bool,
}

impl CallTimer {
    pub(crate) fn start(tool: &str) -> Self {
        CallTimer {
            meters: meters(tool),
            started: Instant::now(),
            finished: false,
        }
    }

    pub(crate) fn finish<O>(mut self, result: &ToolResult<O>) {
        self.finished = true;
        self.meters
            .record(CallOutcome::of(result), self.started.elapsed());
    }
}

impl Drop for CallTimer {
    fn drop(&mut self) {
        if !self.finished {
            self.meters
                .record(CallOutcome::Cancelled, self.started.elapsed());
        }
    }
}

/// A call of a tool that does not exist or is gated off: counted under `unknown`, never under
/// the name the client sent.
pub(crate) fn unknown_tool() {
    meters("unknown").record(CallOutcome::UnknownTool, Duration::ZERO);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ToolError;

    #[test]
    fn tool_labels_come_from_the_catalogue_only() {
        assert_eq!(tool_label("plan_run"), "plan_run");
        assert_eq!(tool_label("whoami"), "whoami");
        for sent in [
            "",
            "no_such_tool",
            "plan_run ",
            "PLAN_RUN",
            "pr-abc123secret",
            "plan_run\n",
        ] {
            assert_eq!(tool_label(sent), "unknown", "{sent:?}");
        }
        // Every catalogue name is a plain label.
        for spec in catalogue::CATALOGUE {
            assert_eq!(tool_label(spec.name), spec.name);
            assert!(
                spec.name
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c == '_')
            );
        }
    }

    #[test]
    fn each_error_kind_has_its_own_outcome() {
        let of = |kind| CallOutcome::of::<()>(&Err(ToolError::of(kind, "msg")));
        assert_eq!(of(ErrorKind::Refused), CallOutcome::Refused);
        assert_eq!(of(ErrorKind::Platform), CallOutcome::PlatformError);
        assert_eq!(of(ErrorKind::BadArgument), CallOutcome::BadArgument);
        assert_eq!(of(ErrorKind::NotFound), CallOutcome::NotFound);
        assert_eq!(of(ErrorKind::NeedsPerson), CallOutcome::NeedsPerson);
        assert_eq!(of(ErrorKind::Unavailable), CallOutcome::Unavailable);
        assert_eq!(
            CallOutcome::of(&Ok(Outcome::done("s", ()))),
            CallOutcome::Ok
        );
    }

    #[test]
    fn outcome_labels_are_distinct_plain_and_index_their_slot() {
        let all = [
            CallOutcome::Ok,
            CallOutcome::InputRequired,
            CallOutcome::BadArgument,
            CallOutcome::NotFound,
            CallOutcome::Refused,
            CallOutcome::NeedsPerson,
            CallOutcome::PlatformError,
            CallOutcome::Unavailable,
            CallOutcome::Cancelled,
            CallOutcome::UnknownTool,
        ];
        assert_eq!(all.len(), CallOutcome::COUNT);
        let mut seen = std::collections::BTreeSet::new();
        for (i, o) in all.iter().enumerate() {
            assert_eq!(o.index(), i);
            assert!(seen.insert(o.as_str()), "{o:?}");
        }
        let words = [
            Launch::Dispatched.as_str(),
            Launch::Deduplicated.as_str(),
            Launch::Reconciled.as_str(),
            Launch::Failed.as_str(),
            Launch::Unknown.as_str(),
            Refusal::SecretValue.as_str(),
            Refusal::SecretForwarding.as_str(),
            Refusal::Override.as_str(),
            Refusal::TeamNotAllowed.as_str(),
            Refusal::Budget.as_str(),
            Refusal::Duplicate.as_str(),
            Refusal::PlanBlocked.as_str(),
            Refusal::PlanExpired.as_str(),
            Refusal::ConfigChanged.as_str(),
            Refusal::RunState.as_str(),
            Confirmation::Asked.as_str(),
            Confirmation::Approved.as_str(),
            Confirmation::Declined.as_str(),
            Confirmation::Cancelled.as_str(),
            Confirmation::Expired.as_str(),
            Confirmation::Replayed.as_str(),
            Confirmation::Pending.as_str(),
        ];
        for w in seen.iter().copied().chain(words) {
            assert!(
                !w.is_empty() && w.chars().all(|c| c.is_ascii_lowercase() || c == '_'),
                "{w}"
            );
        }
    }
}
