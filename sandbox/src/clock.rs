//! Simulated time: either the wall clock scaled by a speed factor, or a manual clock that only
//! moves when a test advances it. Every run's state is a pure function of this time.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};

/// How simulated time moves.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ClockMode {
    /// Wall-clock time multiplied by `speed` (1.0 = real time).
    Real { speed: f64 },
    /// Time stands still until [`crate::SandboxHandle::advance`] or
    /// `POST /_sandbox/clock/advance` moves it.
    Manual,
}

#[derive(Debug)]
pub(crate) struct Clock {
    mode: ClockMode,
    inner: Mutex<ClockInner>,
}

#[derive(Debug)]
struct ClockInner {
    /// Simulated time at `anchor`.
    base: DateTime<Utc>,
    anchor: Instant,
    /// Time added by explicit advances (both modes accept them).
    advanced: Duration,
}

impl Clock {
    /// A clock that starts at `start` (the saved simulated time of a previous session, or now).
    pub(crate) fn new(mode: ClockMode, start: DateTime<Utc>) -> Self {
        Self {
            mode,
            inner: Mutex::new(ClockInner {
                base: start,
                anchor: Instant::now(),
                advanced: Duration::ZERO,
            }),
        }
    }

    pub(crate) fn mode(&self) -> ClockMode {
        self.mode
    }

    pub(crate) fn now(&self) -> DateTime<Utc> {
        let inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let scaled = match self.mode {
            ClockMode::Real { speed } => {
                let real = inner.anchor.elapsed().as_secs_f64() * speed.max(0.0);
                Duration::from_secs_f64(real.min(1e12))
            }
            ClockMode::Manual => Duration::ZERO,
        };
        let total = scaled + inner.advanced;
        inner.base + chrono::Duration::from_std(total).unwrap_or(chrono::Duration::zero())
    }

    pub(crate) fn advance(&self, by: Duration) {
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        inner.advanced += by;
    }
}

/// Seconds (fractional) from `a` to `b`.
pub(crate) fn secs_between(a: DateTime<Utc>, b: DateTime<Utc>) -> f64 {
    (b - a).num_milliseconds() as f64 / 1000.0
}

/// `t + s` seconds.
pub(crate) fn plus_secs(t: DateTime<Utc>, s: f64) -> DateTime<Utc> {
    t + chrono::Duration::milliseconds((s * 1000.0).round() as i64)
}

/// ISO-8601 with milliseconds and `Z`, as the platform writes datetimes
/// (`%Y-%m-%dT%H:%M:%S%.3fZ`, written without reading a format string: a metrics answer
/// writes one per record).
pub(crate) fn iso(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// ISO-8601 with whole seconds and `Z`, as the traces service writes datetimes
/// (`%Y-%m-%dT%H:%M:%SZ`).
pub(crate) fn iso_secs(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iso_writes_what_the_format_strings_write() {
        // Every 997th millisecond of a day (so every millisecond of a second, 0 to 999), and
        // steps of a day less a millisecond through 1970 to 2200 (leap years, month ends).
        let start = DateTime::<Utc>::from_timestamp(1_790_000_000, 0).unwrap();
        let day = (0..86_400_000i64)
            .step_by(997)
            .map(|ms| start + chrono::Duration::milliseconds(ms));
        let years = (0..7_257_600_000_000i64)
            .step_by(86_399_999)
            .filter_map(DateTime::<Utc>::from_timestamp_millis);
        for t in day.chain(years) {
            assert_eq!(iso(t), t.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string());
            assert_eq!(iso_secs(t), t.format("%Y-%m-%dT%H:%M:%SZ").to_string());
        }
    }
}
