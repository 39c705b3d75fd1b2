//! One pacing budget for all polling: every poll loop (`watch_run`) takes a slot from this
//! shared token bucket before each platform request, so many parallel waits together stay
//! under one request rate instead of each keeping its own. A generic cell-rate bucket: a
//! burst of `burst` requests, then one every `1/rate` seconds, slots handed out in order.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The shared budget. Cloning shares it.
#[derive(Debug, Clone)]
pub struct PollBudget {
    every: Duration,
    tolerance: Duration,
    /// The theoretical arrival time of the next request.
    next: Arc<Mutex<Option<Instant>>>,
}

impl PollBudget {
    /// At most `rate_per_s` requests per second on average, bursts of `burst`.
    pub fn new(rate_per_s: f64, burst: u32) -> Self {
        let every = Duration::from_secs_f64(1.0 / rate_per_s.clamp(0.01, 10_000.0));
        PollBudget {
            every,
            tolerance: every * burst.saturating_sub(1),
            next: Arc::new(Mutex::new(None)),
        }
    }

    /// Reserves the next slot: the instant the caller may send its request (now, or later).
    pub fn reserve(&self, now: Instant) -> Instant {
        let mut next = match self.next.lock() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        };
        let tat = next.map_or(now, |t| t.max(now));
        let allowed = tat.checked_sub(self.tolerance).unwrap_or(now).max(now);
        *next = Some(tat + self.every);
        allowed
    }
}

impl Default for PollBudget {
    /// 5 requests per second for the whole server, bursts of 10.
    fn default() -> Self {
        PollBudget::new(5.0, 10)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_goes_at_once_then_slots_are_spaced_by_the_rate() {
        let b = PollBudget::new(5.0, 3);
        let t0 = Instant::now();
        let slots: Vec<Duration> = (0..6).map(|_| b.reserve(t0) - t0).collect();
        assert_eq!(&slots[..3], &[Duration::ZERO; 3]);
        assert_eq!(slots[3], Duration::from_millis(200));
        assert_eq!(slots[5], Duration::from_millis(600));
        // After a quiet spell the burst is available again.
        let later = t0 + Duration::from_secs(10);
        assert_eq!(b.reserve(later), later);
    }
}
