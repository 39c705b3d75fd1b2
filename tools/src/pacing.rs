//! One pacing budget for all polling: every poll loop (`watch_run`, `stop_run`'s wait for the
//! report, the launch's wait for a new volume) takes a slot from this
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
        let mut next = self.lock();
        let (tat, allowed) = self.next_slot(&next, now);
        *next = Some(tat + self.every);
        allowed
    }

    /// Reserves the next slot only when it falls before `deadline`; `None` (nothing reserved)
    /// when the caller would have to wait past it.
    pub fn reserve_before(&self, now: Instant, deadline: Instant) -> Option<Slot> {
        let mut next = self.lock();
        let (tat, at) = self.next_slot(&next, now);
        if at >= deadline {
            return None;
        }
        *next = Some(tat + self.every);
        Some(Slot { at, tat })
    }

    /// Returns an unused slot (its caller was cancelled), when no later slot was reserved
    /// since; otherwise the slots after it are already spaced and it simply goes unused.
    pub fn give_back(&self, slot: Slot) {
        let mut next = self.lock();
        if *next == Some(slot.tat + self.every) {
            *next = Some(slot.tat);
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Instant>> {
        match self.next.lock() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        }
    }

    /// The next theoretical arrival time and the instant its request may go.
    fn next_slot(&self, next: &Option<Instant>, now: Instant) -> (Instant, Instant) {
        let tat = next.map_or(now, |t| t.max(now));
        let allowed = tat.checked_sub(self.tolerance).unwrap_or(now).max(now);
        (tat, allowed)
    }
}

/// A reserved slot: its request may go at `at`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slot {
    pub at: Instant,
    tat: Instant,
}

impl PollBudget {
    /// Sleeps `wait`, then until a slot of the shared budget (when one falls before `deadline`;
    /// otherwise until the deadline, reserving nothing). For poll loops that sleep between reads.
    pub async fn pace(&self, wait: Duration, deadline: tokio::time::Instant) {
        tokio::time::sleep_until((tokio::time::Instant::now() + wait).min(deadline)).await;
        match self.reserve_before(Instant::now(), deadline.into_std()) {
            Some(slot) => tokio::time::sleep_until(slot.at.into()).await,
            None => tokio::time::sleep_until(deadline).await,
        }
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

    #[tokio::test]
    async fn pace_takes_a_slot_and_a_poll_past_its_deadline_takes_none() {
        // One slot per 100 s: the first poll takes the burst slot at once.
        let b = PollBudget::new(0.01, 1);
        let t0 = Instant::now();
        b.pace(
            Duration::ZERO,
            tokio::time::Instant::now() + Duration::from_secs(5),
        )
        .await;
        // The next slot is 100 s away: a poll whose deadline is sooner returns at its deadline
        // (a few milliseconds) and reserves nothing ...
        b.pace(
            Duration::ZERO,
            tokio::time::Instant::now() + Duration::from_millis(5),
        )
        .await;
        // ... so the next caller still gets the slot 100 s after the first.
        let next = b.reserve(Instant::now());
        assert!(next >= t0 + Duration::from_secs(99), "{:?}", next - t0);
        assert!(next <= t0 + Duration::from_secs(101), "{:?}", next - t0);
    }

    #[test]
    fn a_slot_past_the_deadline_or_given_back_reserves_nothing() {
        let b = PollBudget::new(5.0, 1);
        let t0 = Instant::now();
        let first = b.reserve_before(t0, t0 + Duration::from_secs(1)).unwrap();
        assert_eq!(first.at, t0);
        // The next slot is at +200 ms: a deadline at +100 ms gets none, and takes nothing.
        for _ in 0..5 {
            assert_eq!(b.reserve_before(t0, t0 + Duration::from_millis(100)), None);
        }
        let second = b.reserve_before(t0, t0 + Duration::from_secs(1)).unwrap();
        assert_eq!(second.at - t0, Duration::from_millis(200));
        // A cancelled caller gives its slot back: the next caller gets the same instant.
        b.give_back(second);
        let again = b.reserve_before(t0, t0 + Duration::from_secs(1)).unwrap();
        assert_eq!(again.at - t0, Duration::from_millis(200));
        // Once a later slot is taken, an earlier one cannot be given back.
        let later = b.reserve_before(t0, t0 + Duration::from_secs(1)).unwrap();
        assert_eq!(later.at - t0, Duration::from_millis(400));
        b.give_back(again);
        assert_eq!(b.reserve(t0) - t0, Duration::from_millis(600));
    }
}
