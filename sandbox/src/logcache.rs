//! Generated log lines kept per run, so a log request costs the sandbox a filter and a copy
//! rather than a re-simulation of the whole run (a 2,500-step run's 1,000-line answer took
//! ~11 ms to generate, which hid the server's own cost in the benchmarks' floor).
//!
//! The cache changes no answer: [`sim::logs`] is a pure function of the run, the timings and
//! the run's [`Phase`] (the simulated instant enters only through it), so an entry is reused
//! only when all three are equal to the request's; a run stopped, paused or restarted, or the
//! clock moved while the run is active, makes a new entry. Rendered answers are kept beside
//! the lines, keyed by the request's parameters and the instant. Metrics answers are kept
//! whole in the same way ([`MetricsCache`]).

use std::sync::{Arc, Mutex};

use bytes::Bytes;
use chrono::{DateTime, Utc};

use crate::seed::{Seed, Timings};
use crate::sim::{self, LogLine, Phase};
use crate::world::Run;

/// Runs whose lines are kept (the least recently generated is dropped first).
const RUNS: usize = 8;
/// Rendered answers kept per run.
const BODIES: usize = 8;

/// One request's rendering inputs: its parameters (sorted), whether it is the env-server
/// route, and the instant (the `since_seconds` cut-off depends on it).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct BodyKey {
    pub(crate) params: Vec<(String, String)>,
    pub(crate) force_env: bool,
    pub(crate) now: DateTime<Utc>,
}

struct Entry {
    run: Run,
    timings: Timings,
    phase: Phase,
    lines: Arc<Vec<LogLine>>,
    bodies: Vec<(BodyKey, Bytes)>,
}

impl Entry {
    fn matches(&self, run: &Run, timings: &Timings, phase: &Phase) -> bool {
        self.run.id == run.id
            && self.phase == *phase
            && self.timings == *timings
            && self.run == *run
    }
}

#[derive(Default)]
pub(crate) struct LogCache {
    entries: Mutex<Vec<Entry>>,
}

impl LogCache {
    /// Every log line of `run` at `now` (as [`sim::logs`]), and the rendered answer for `key`
    /// if one was kept.
    pub(crate) fn lines(
        &self,
        run: &Run,
        seed: &Seed,
        now: DateTime<Utc>,
        key: &BodyKey,
    ) -> (Arc<Vec<LogLine>>, Option<Bytes>) {
        let phase = sim::phase(run, &seed.timings, now);
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(e) = entries
            .iter()
            .find(|e| e.matches(run, &seed.timings, &phase))
        {
            let body = e
                .bodies
                .iter()
                .find(|(k, _)| k == key)
                .map(|(_, b)| b.clone());
            return (e.lines.clone(), body);
        }
        let lines = Arc::new(sim::logs(run, seed, now));
        entries.retain(|e| e.run.id != run.id);
        if entries.len() >= RUNS {
            entries.remove(0);
        }
        entries.push(Entry {
            run: run.clone(),
            timings: seed.timings.clone(),
            phase,
            lines: lines.clone(),
            bodies: Vec::new(),
        });
        (lines, None)
    }

    /// Keeps the rendered answer for `key` beside the lines of `run` it was made from.
    pub(crate) fn keep_body(
        &self,
        run: &Run,
        seed: &Seed,
        now: DateTime<Utc>,
        key: BodyKey,
        body: Bytes,
    ) {
        let phase = sim::phase(run, &seed.timings, now);
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(e) = entries
            .iter_mut()
            .find(|e| e.matches(run, &seed.timings, &phase))
        {
            if e.bodies.len() >= BODIES {
                e.bodies.remove(0);
            }
            e.bodies.push((key, body));
        }
    }
}

/// Metrics answers kept whole: a repeated request costs the sandbox a comparison and a copy
/// rather than writing every record again (three SHA-256 draws, a time and a dozen numbers
/// each: a 200-record answer cost ~0.5 ms and more than the server's own work on it, which
/// hid that work in the benchmarks' floor).
///
/// The cache changes no answer: a metrics answer is a pure function of the run, the timings,
/// the run's [`Phase`] (the simulated instant enters only through it) and the request's step
/// range and limit, so an answer is reused only when all of them are equal to the request's.
/// Answers over 8 MiB are not kept.
#[derive(Default)]
pub(crate) struct MetricsCache {
    entries: Mutex<Vec<MetricsEntry>>,
}

/// A metrics request's `min_step`, `max_step` and `limit`.
pub(crate) type StepRange = (Option<i64>, Option<i64>, Option<i64>);

struct MetricsEntry {
    run: Run,
    timings: Timings,
    phase: Phase,
    range: StepRange,
    body: Bytes,
}

/// Metrics answers kept (the least recently used is dropped first), and the largest kept.
const METRICS_BODIES: usize = 16;
const METRICS_BODY_BYTES: usize = 8 << 20;

impl MetricsCache {
    /// The answer kept for these inputs, if any.
    pub(crate) fn body(
        &self,
        run: &Run,
        timings: &Timings,
        phase: &Phase,
        range: StepRange,
    ) -> Option<Bytes> {
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        let at = entries.iter().position(|e| {
            e.range == range
                && e.run.id == run.id
                && e.phase == *phase
                && e.timings == *timings
                && e.run == *run
        })?;
        // The most recently used last.
        let entry = entries.remove(at);
        let body = entry.body.clone();
        entries.push(entry);
        Some(body)
    }

    /// Keeps the answer made from these inputs, in place of any other of the same run and range.
    pub(crate) fn keep(
        &self,
        run: &Run,
        timings: &Timings,
        phase: Phase,
        range: StepRange,
        body: Bytes,
    ) {
        if body.len() > METRICS_BODY_BYTES {
            return;
        }
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        entries.retain(|e| !(e.run.id == run.id && e.range == range));
        if entries.len() >= METRICS_BODIES {
            entries.remove(0);
        }
        entries.push(MetricsEntry {
            run: run.clone(),
            timings: timings.clone(),
            phase,
            range,
            body,
        });
    }
}
