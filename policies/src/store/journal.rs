//! The dispatch journal (at most one dispatch per plan, across processes) and the
//! volume-creation journal (a retry never creates a second volume). Both follow one life:
//!
//! ```text
//! (none) --claim--> in progress (holder, lease) --mark--> done | unknown | failed
//!                        |  lease expired: take_over, only to record a run found (no create)
//! failed --claim--> in progress again (a definite failure created nothing)
//! unknown | in progress, lease expired
//!        --reconcile (caller lists runs)--> done
//!        --no run, settle window over--> retry: in progress, attempts + 1, started now
//! ```
//!
//! Only the lease holder may settle an in-progress record: a process whose lease expired and
//! was taken over gets [`StoreError::LeaseLost`] instead of overwriting the new holder's
//! outcome. (The holder is the process: its tasks share it. An `unknown` record may be settled
//! by anyone who finds the run.) Every transition is one `BEGIN IMMEDIATE` transaction.

use std::time::Duration;

use chrono::{DateTime, Utc};
use rusqlite::{OptionalExtension, Transaction, params};
use serde::Serialize;

use super::{Store, StoreError, from_millis, holder_id, now_millis};

/// A lease on an in-progress dispatch or volume creation, held by this process.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Lease {
    pub holder: String,
    pub lease_until: DateTime<Utc>,
}

/// The answer to a claim: this process now holds the work, or someone already has a record
/// and the caller decides from it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub enum Claim<R = DispatchRecord> {
    Claimed(Lease),
    Existing(R),
}

impl<R> Claim<R> {
    pub fn is_claimed(&self) -> bool {
        matches!(self, Claim::Claimed(_))
    }
}

/// Where a plan's dispatch stands.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum DispatchState {
    /// A process is dispatching (or died doing so: `lease_expired`, then the caller
    /// reconciles by listing runs, and records the run it finds or, after the settle window,
    /// retries the attempt).
    Dispatching {
        holder: String,
        lease_until: DateTime<Utc>,
        lease_expired: bool,
    },
    /// The platform created this run.
    Dispatched {
        run_id: String,
        details: serde_json::Value,
    },
    /// The outcome is not known (timeout, 5xx, reset): reconcile before anything else.
    Unknown { reason: String },
    /// A definite failure: nothing was created; a later claim may dispatch again.
    Failed { reason: String },
}

/// A plan's dispatch journal record.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DispatchRecord {
    pub plan_id: String,
    #[serde(flatten)]
    pub state: DispatchState,
    /// When the current attempt was claimed.
    pub started_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    /// The attempt: how many times the plan's dispatch was claimed (more than one after a
    /// definite failure or a retry of an attempt in doubt).
    pub attempts: u32,
}

/// Where a volume creation stands.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum VolumeState {
    Creating {
        holder: String,
        lease_until: DateTime<Utc>,
        lease_expired: bool,
    },
    Created,
    Unknown {
        reason: String,
    },
    Failed {
        reason: String,
    },
}

/// A volume creation's journal record.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct VolumeRecord {
    pub owner_key: String,
    pub volume: String,
    #[serde(flatten)]
    pub state: VolumeState,
    pub started_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub attempts: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Dispatch,
    Volume,
}

impl Kind {
    pub(super) fn as_str(self) -> &'static str {
        match self {
            Kind::Dispatch => "dispatch",
            Kind::Volume => "volume",
        }
    }
    pub(super) fn what(self) -> &'static str {
        match self {
            Kind::Dispatch => "the dispatch of plan",
            Kind::Volume => "the creation of volume",
        }
    }
    pub(super) fn in_progress(self) -> &'static str {
        match self {
            Kind::Dispatch => "dispatching",
            Kind::Volume => "creating",
        }
    }
    pub(super) fn done(self) -> &'static str {
        match self {
            Kind::Dispatch => "dispatched",
            Kind::Volume => "created",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Phase {
    InProgress,
    Done,
    Unknown,
    Failed,
}

/// One journal row, kind-neutral.
#[derive(Debug)]
pub(super) struct Row {
    pub(super) key: String,
    pub(super) sub: String,
    pub(super) phase: Phase,
    pub(super) holder: Option<String>,
    pub(super) lease_until: Option<i64>,
    pub(super) started_at: i64,
    pub(super) updated_at: i64,
    pub(super) run_id: Option<String>,
    pub(super) reason: Option<String>,
    pub(super) details: Option<String>,
    pub(super) attempts: i64,
}

/// A journal state's phase, by its stored name.
pub(super) fn phase_of(state: &str) -> Phase {
    match state {
        "dispatching" | "creating" => Phase::InProgress,
        "dispatched" | "created" => Phase::Done,
        "unknown" => Phase::Unknown,
        _ => Phase::Failed,
    }
}

const COLUMNS: &str = "key, sub, state, holder, lease_until, started_at, updated_at, run_id, reason, details, attempts";

fn row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Row> {
    let state: String = r.get(2)?;
    let phase = phase_of(&state);
    Ok(Row {
        key: r.get(0)?,
        sub: r.get(1)?,
        phase,
        holder: r.get(3)?,
        lease_until: r.get(4)?,
        started_at: r.get(5)?,
        updated_at: r.get(6)?,
        run_id: r.get(7)?,
        reason: r.get(8)?,
        details: r.get(9)?,
        attempts: r.get(10)?,
    })
}

fn load(tx: &Transaction<'_>, kind: Kind, key: &str, sub: &str) -> Result<Option<Row>, StoreError> {
    Ok(tx
        .query_row(
            &format!("SELECT {COLUMNS} FROM journal WHERE kind = ?1 AND key = ?2 AND sub = ?3"),
            params![kind.as_str(), key, sub],
            row,
        )
        .optional()?)
}

pub(super) fn lease_millis(lease: Duration) -> i64 {
    i64::try_from(lease.as_millis()).unwrap_or(i64::MAX / 2)
}

fn lease_for(now: i64, lease: Duration) -> (Lease, i64) {
    let until = now.saturating_add(lease_millis(lease));
    (
        Lease {
            holder: holder_id().to_owned(),
            lease_until: from_millis(until),
        },
        until,
    )
}

fn state_name(kind: Kind, phase: Phase) -> &'static str {
    match phase {
        Phase::InProgress => kind.in_progress(),
        Phase::Done => kind.done(),
        Phase::Unknown => "unknown",
        Phase::Failed => "failed",
    }
}

pub(super) fn describe(kind: Kind, key: &str, sub: &str) -> String {
    match kind {
        Kind::Dispatch => key.to_owned(),
        Kind::Volume => format!("{sub} (owner {key})"),
    }
}

/// An outcome to record.
pub(super) enum Mark<'a> {
    Done {
        run_id: Option<&'a str>,
        details: Option<String>,
    },
    Unknown(&'a str),
    Failed(&'a str),
}

fn claim(
    tx: &Transaction<'_>,
    kind: Kind,
    key: &str,
    sub: &str,
    lease: Duration,
) -> Result<Claim<Row>, StoreError> {
    let now = now_millis();
    match load(tx, kind, key, sub)? {
        None => {
            let (granted, until) = lease_for(now, lease);
            tx.execute(
                "INSERT INTO journal (kind, key, sub, state, holder, lease_until, started_at,
                                      updated_at, attempts)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?7, 1)",
                params![
                    kind.as_str(),
                    key,
                    sub,
                    kind.in_progress(),
                    granted.holder,
                    until,
                    now
                ],
            )?;
            Ok(Claim::Claimed(granted))
        }
        Some(r) if r.phase == Phase::Failed => next_attempt(tx, kind, key, sub, now, lease),
        Some(r) => Ok(Claim::Existing(r)),
    }
}

fn take_over(
    tx: &Transaction<'_>,
    kind: Kind,
    key: &str,
    sub: &str,
    lease: Duration,
) -> Result<Claim<Row>, StoreError> {
    let now = now_millis();
    let Some(r) = load(tx, kind, key, sub)? else {
        return Err(StoreError::NotClaimed {
            what: kind.what(),
            key: describe(kind, key, sub),
        });
    };
    let expired = lease_over(&r, now);
    if !expired {
        return Ok(Claim::Existing(r));
    }
    let (granted, until) = lease_for(now, lease);
    tx.execute(
        "UPDATE journal SET holder = ?4, lease_until = ?5, updated_at = ?6
         WHERE kind = ?1 AND key = ?2 AND sub = ?3",
        params![kind.as_str(), key, sub, granted.holder, until, now],
    )?;
    Ok(Claim::Claimed(granted))
}

/// A new attempt of a dispatch whose attempt `attempt` is in doubt (`unknown`, or in progress
/// under an expired lease) and was judged to have created nothing: only while the record is
/// still that attempt in that state, so a judgement about one attempt never licenses a second
/// dispatch after another, and only once `settle` has passed since it was claimed.
fn retry(
    tx: &Transaction<'_>,
    kind: Kind,
    key: &str,
    sub: &str,
    attempt: u32,
    settle: Duration,
    lease: Duration,
) -> Result<Claim<Row>, StoreError> {
    let now = now_millis();
    let Some(r) = load(tx, kind, key, sub)? else {
        return Err(StoreError::NotClaimed {
            what: kind.what(),
            key: describe(kind, key, sub),
        });
    };
    let doubtful = r.phase == Phase::Unknown || lease_over(&r, now);
    let settled = r.started_at.saturating_add(lease_millis(settle)) <= now;
    if !doubtful || !settled || r.attempts != i64::from(attempt) {
        return Ok(Claim::Existing(r));
    }
    next_attempt(tx, kind, key, sub, now, lease)
}

/// An in-progress record whose holder's lease is over at `now` (no lease counts as over).
fn lease_over(r: &Row, now: i64) -> bool {
    r.phase == Phase::InProgress && r.lease_until.is_none_or(|until| until <= now)
}

/// Start the record's next attempt for this process: in progress, a fresh lease, started now.
fn next_attempt(
    tx: &Transaction<'_>,
    kind: Kind,
    key: &str,
    sub: &str,
    now: i64,
    lease: Duration,
) -> Result<Claim<Row>, StoreError> {
    let (granted, until) = lease_for(now, lease);
    tx.execute(
        "UPDATE journal SET state = ?4, holder = ?5, lease_until = ?6, started_at = ?7,
                updated_at = ?7, run_id = NULL, reason = NULL, details = NULL,
                attempts = attempts + 1
         WHERE kind = ?1 AND key = ?2 AND sub = ?3",
        params![
            kind.as_str(),
            key,
            sub,
            kind.in_progress(),
            granted.holder,
            until,
            now
        ],
    )?;
    Ok(Claim::Claimed(granted))
}

fn mark(
    tx: &Transaction<'_>,
    kind: Kind,
    key: &str,
    sub: &str,
    to: Mark<'_>,
) -> Result<(), StoreError> {
    let Some(r) = load(tx, kind, key, sub)? else {
        return Err(StoreError::NotClaimed {
            what: kind.what(),
            key: describe(kind, key, sub),
        });
    };
    if !may_mark(kind, key, sub, &r, &to)? {
        return Ok(());
    }
    let now = now_millis();
    let (to_name, run_id, reason, details) = mark_values(kind, &to);
    tx.execute(
        "UPDATE journal SET state = ?4, holder = NULL, lease_until = NULL, updated_at = ?5,
                run_id = ?6, reason = ?7, details = ?8
         WHERE kind = ?1 AND key = ?2 AND sub = ?3",
        params![
            kind.as_str(),
            key,
            sub,
            to_name,
            now,
            run_id,
            reason,
            details
        ],
    )?;
    Ok(())
}

/// The columns an outcome writes: state name, run id, reason, details.
pub(super) fn mark_values<'a>(
    kind: Kind,
    to: &'a Mark<'a>,
) -> (
    &'static str,
    Option<&'a str>,
    Option<&'a str>,
    Option<&'a str>,
) {
    match to {
        Mark::Done { run_id, details } => (kind.done(), *run_id, None, details.as_deref()),
        Mark::Unknown(reason) => ("unknown", None, Some(*reason), None),
        Mark::Failed(reason) => ("failed", None, Some(*reason), None),
    }
}

/// Whether this process may record `to` over the record `r` (both backends ask this, on the
/// row they hold locked): `Ok(true)` write it, `Ok(false)` nothing to write (the same run
/// recorded again), or why not.
pub(super) fn may_mark(
    kind: Kind,
    key: &str,
    sub: &str,
    r: &Row,
    to: &Mark<'_>,
) -> Result<bool, StoreError> {
    let to_name = mark_values(kind, to).0;
    let settled = || StoreError::Settled {
        what: kind.what(),
        key: describe(kind, key, sub),
        state: match (&r.phase, &r.run_id) {
            (Phase::Done, Some(run)) => format!("{} as run {run}", kind.done()),
            (phase, _) => state_name(kind, *phase).to_owned(),
        },
        to: to_name,
    };
    match r.phase {
        Phase::InProgress => {
            let holder = r.holder.as_deref().unwrap_or_default();
            if holder != holder_id() {
                return Err(StoreError::LeaseLost {
                    what: kind.what(),
                    key: describe(kind, key, sub),
                    holder: holder.to_owned(),
                });
            }
        }
        Phase::Unknown => {}
        Phase::Done => {
            // Recording the same run twice is harmless; anything else would lose a run.
            return match to {
                Mark::Done { run_id, .. } if *run_id == r.run_id.as_deref() => Ok(false),
                _ => Err(settled()),
            };
        }
        Phase::Failed => match to {
            // A run found after all (a late reconciliation) is always worth recording.
            Mark::Done { .. } | Mark::Failed(_) => {}
            Mark::Unknown(_) => return Err(settled()),
        },
    }
    Ok(true)
}

fn in_progress_view(r: &Row, now: i64) -> (String, DateTime<Utc>, bool) {
    let until = r.lease_until.unwrap_or(i64::MIN);
    (
        r.holder.clone().unwrap_or_default(),
        from_millis(until),
        until <= now,
    )
}

pub(super) fn dispatch_record(r: Row, now: i64) -> Result<DispatchRecord, StoreError> {
    let state = match r.phase {
        Phase::InProgress => {
            let (holder, lease_until, lease_expired) = in_progress_view(&r, now);
            DispatchState::Dispatching {
                holder,
                lease_until,
                lease_expired,
            }
        }
        Phase::Done => DispatchState::Dispatched {
            run_id: r.run_id.clone().unwrap_or_default(),
            details: match &r.details {
                Some(text) => serde_json::from_str(text).map_err(|source| StoreError::Json {
                    what: "dispatch details",
                    source,
                })?,
                None => serde_json::Value::Null,
            },
        },
        Phase::Unknown => DispatchState::Unknown {
            reason: r.reason.clone().unwrap_or_default(),
        },
        Phase::Failed => DispatchState::Failed {
            reason: r.reason.clone().unwrap_or_default(),
        },
    };
    Ok(DispatchRecord {
        plan_id: r.key,
        state,
        started_at: from_millis(r.started_at),
        updated_at: from_millis(r.updated_at),
        attempts: u32::try_from(r.attempts).unwrap_or(u32::MAX),
    })
}

pub(super) fn volume_record(r: Row, now: i64) -> VolumeRecord {
    let state = match r.phase {
        Phase::InProgress => {
            let (holder, lease_until, lease_expired) = in_progress_view(&r, now);
            VolumeState::Creating {
                holder,
                lease_until,
                lease_expired,
            }
        }
        Phase::Done => VolumeState::Created,
        Phase::Unknown => VolumeState::Unknown {
            reason: r.reason.clone().unwrap_or_default(),
        },
        Phase::Failed => VolumeState::Failed {
            reason: r.reason.clone().unwrap_or_default(),
        },
    };
    VolumeRecord {
        owner_key: r.key,
        volume: r.sub,
        state,
        started_at: from_millis(r.started_at),
        updated_at: from_millis(r.updated_at),
        attempts: u32::try_from(r.attempts).unwrap_or(u32::MAX),
    }
}

fn to_dispatch_claim(c: Claim<Row>) -> Result<Claim, StoreError> {
    Ok(match c {
        Claim::Claimed(lease) => Claim::Claimed(lease),
        Claim::Existing(r) => Claim::Existing(dispatch_record(r, now_millis())?),
    })
}

fn to_volume_claim(c: Claim<Row>) -> Claim<VolumeRecord> {
    match c {
        Claim::Claimed(lease) => Claim::Claimed(lease),
        Claim::Existing(r) => Claim::Existing(volume_record(r, now_millis())),
    }
}

impl Store {
    /// Claim the plan's dispatch for this process: `Claimed` when there was no record (or
    /// the last attempt definitely failed); otherwise the existing record, with
    /// `lease_expired: true` on a `Dispatching` whose holder died, so that the caller
    /// reconciles (lists runs), waits out the settle window and then calls
    /// [`Store::retry_dispatch`] with that record's attempt.
    pub fn claim_dispatch(&self, plan_id: &str, lease: Duration) -> Result<Claim, StoreError> {
        let c = self.write(|tx| claim(tx, Kind::Dispatch, plan_id, "", lease))?;
        to_dispatch_claim(c)
    }

    /// Re-claim a `Dispatching` record whose lease has expired, to record a run found by
    /// reconciliation — never to send a create (it keeps the attempt and its start: a create
    /// goes through [`Store::retry_dispatch`]). Succeeds once: the
    /// re-claimed lease is fresh, so a second caller gets `Existing`. A record in any other
    /// state (or a live lease) is returned as `Existing`; no record is `NotClaimed`.
    pub fn take_over(&self, plan_id: &str, lease: Duration) -> Result<Claim, StoreError> {
        let c = self.write(|tx| take_over(tx, Kind::Dispatch, plan_id, "", lease))?;
        to_dispatch_claim(c)
    }

    /// Claim attempt `attempt + 1` of a plan's dispatch, whose attempt `attempt` is `Unknown`
    /// or `Dispatching` under an expired lease and was settled as having created no run (the
    /// caller reconciled after the settle window of that very attempt). Succeeds once, only
    /// while the record is still that attempt in doubt, and only once `settle` has passed since
    /// it was claimed (on this store's clock, whatever the caller's): otherwise the record as
    /// it is now comes back as `Existing`; no record is `NotClaimed`. The new attempt's
    /// `started_at` is now.
    pub fn retry_dispatch(
        &self,
        plan_id: &str,
        attempt: u32,
        settle: Duration,
        lease: Duration,
    ) -> Result<Claim, StoreError> {
        let c = self.write(|tx| retry(tx, Kind::Dispatch, plan_id, "", attempt, settle, lease))?;
        to_dispatch_claim(c)
    }

    /// Journal the created run (from `Dispatching` held by this process, or from `Unknown`
    /// / `Failed` after a reconciliation found it). `details` holds what budgets need
    /// (e.g. the price); never a secret value.
    pub fn mark_dispatched(
        &self,
        plan_id: &str,
        run_id: &str,
        details: &serde_json::Value,
    ) -> Result<(), StoreError> {
        let details = serde_json::to_string(details).map_err(|source| StoreError::Json {
            what: "dispatch details",
            source,
        })?;
        self.write(|tx| {
            mark(
                tx,
                Kind::Dispatch,
                plan_id,
                "",
                Mark::Done {
                    run_id: Some(run_id),
                    details: Some(details),
                },
            )
        })
    }

    /// Journal an ambiguous outcome (timeout, 5xx, reset, client gone).
    pub fn mark_unknown(&self, plan_id: &str, reason: &str) -> Result<(), StoreError> {
        self.write(|tx| mark(tx, Kind::Dispatch, plan_id, "", Mark::Unknown(reason)))
    }

    /// Journal a definite failure: nothing was created, and a later claim may dispatch again.
    pub fn mark_failed(&self, plan_id: &str, reason: &str) -> Result<(), StoreError> {
        self.write(|tx| mark(tx, Kind::Dispatch, plan_id, "", Mark::Failed(reason)))
    }

    /// The plan's dispatch record, if any.
    pub fn dispatch(&self, plan_id: &str) -> Result<Option<DispatchRecord>, StoreError> {
        let r = self.read(|tx| load(tx, Kind::Dispatch, plan_id, ""))?;
        r.map(|r| dispatch_record(r, now_millis())).transpose()
    }

    /// Every run this install dispatched, oldest first, with its journalled details.
    pub fn dispatched_runs(&self) -> Result<Vec<DispatchRecord>, StoreError> {
        self.dispatches_in(&["dispatched"])
    }

    /// Dispatches still `dispatching` or `unknown`: what a reconciliation pass looks at.
    pub fn unsettled_dispatches(&self) -> Result<Vec<DispatchRecord>, StoreError> {
        self.dispatches_in(&["dispatching", "unknown"])
    }

    fn dispatches_in(&self, states: &[&str]) -> Result<Vec<DispatchRecord>, StoreError> {
        let rows = self.read(|tx| {
            let mut stmt = tx.prepare(&format!(
                "SELECT {COLUMNS} FROM journal
                 WHERE kind = 'dispatch' AND state IN (SELECT value FROM json_each(?1))
                 ORDER BY updated_at, key"
            ))?;
            let states = serde_json::json!(states).to_string();
            let rows = stmt.query_map([states], row)?;
            Ok(rows.collect::<Result<Vec<_>, _>>()?)
        })?;
        let now = now_millis();
        rows.into_iter().map(|r| dispatch_record(r, now)).collect()
    }

    /// Claim the creation of `volume` for `owner_key` (team id or a personal marker).
    pub fn claim_volume_create(
        &self,
        owner_key: &str,
        volume: &str,
        lease: Duration,
    ) -> Result<Claim<VolumeRecord>, StoreError> {
        let c = self.write(|tx| claim(tx, Kind::Volume, owner_key, volume, lease))?;
        Ok(to_volume_claim(c))
    }

    /// Claim attempt `attempt + 1` of a volume creation whose attempt `attempt` is `Unknown`
    /// or `Creating` under an expired lease and was settled as having created nothing (as
    /// [`Store::retry_dispatch`]).
    pub fn retry_volume_create(
        &self,
        owner_key: &str,
        volume: &str,
        attempt: u32,
        settle: Duration,
        lease: Duration,
    ) -> Result<Claim<VolumeRecord>, StoreError> {
        let c =
            self.write(|tx| retry(tx, Kind::Volume, owner_key, volume, attempt, settle, lease))?;
        Ok(to_volume_claim(c))
    }

    pub fn mark_volume_created(&self, owner_key: &str, volume: &str) -> Result<(), StoreError> {
        self.write(|tx| {
            mark(
                tx,
                Kind::Volume,
                owner_key,
                volume,
                Mark::Done {
                    run_id: None,
                    details: None,
                },
            )
        })
    }

    pub fn mark_volume_unknown(
        &self,
        owner_key: &str,
        volume: &str,
        reason: &str,
    ) -> Result<(), StoreError> {
        self.write(|tx| mark(tx, Kind::Volume, owner_key, volume, Mark::Unknown(reason)))
    }

    pub fn mark_volume_failed(
        &self,
        owner_key: &str,
        volume: &str,
        reason: &str,
    ) -> Result<(), StoreError> {
        self.write(|tx| mark(tx, Kind::Volume, owner_key, volume, Mark::Failed(reason)))
    }

    /// The volume creation's record, if any.
    pub fn volume_create(
        &self,
        owner_key: &str,
        volume: &str,
    ) -> Result<Option<VolumeRecord>, StoreError> {
        let r = self.read(|tx| load(tx, Kind::Volume, owner_key, volume))?;
        Ok(r.map(|r| volume_record(r, now_millis())))
    }
}
