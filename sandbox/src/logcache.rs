//! Generated log lines kept per run, so a log request costs the sandbox a filter and a copy
//! rather than a re-simulation of the whole run (a 2,500-step run's 1,000-line answer took
//! ~11 ms to generate, which hid the server's own cost in the benchmarks' floor).
//!
//! The cache changes no answer: [`sim::logs`] is a pure function of the run, the timings and
//! the run's [`Phase`] (the simulated instant enters only through it), so an entry is reused
//! only when all three are equal to the request's; a run stopped, paused or restarted, or the
//! clock moved while the run is active, makes a new entry. Rendered answers are kept beside
//! the lines, keyed by the request's parameters and the instant.

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
