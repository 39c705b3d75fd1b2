//! Latency samples and their summary (median, p99), and a bounded sampling loop.

use std::{
    future::Future,
    pin::Pin,
    time::{Duration, Instant},
};

use serde_json::{Value, json};

/// How many samples to take and for how long at most, after how many unrecorded warm-ups.
#[derive(Debug, Clone, Copy)]
pub struct Budget {
    pub warmup: usize,
    pub count: usize,
    pub max_time: Duration,
}

impl Budget {
    pub const fn new(warmup: usize, count: usize, max_secs: u64) -> Budget {
        Budget {
            warmup,
            count,
            max_time: Duration::from_secs(max_secs),
        }
    }
}

/// Summary of a latency sample, in microseconds.
#[derive(Debug, Clone, Copy, Default)]
pub struct Summary {
    pub n: usize,
    pub p50_us: f64,
    pub p99_us: f64,
    pub mean_us: f64,
    pub min_us: f64,
}

impl Summary {
    pub fn of(samples: &[Duration]) -> Summary {
        if samples.is_empty() {
            return Summary::default();
        }
        let mut us: Vec<f64> = samples.iter().map(|d| d.as_secs_f64() * 1e6).collect();
        us.sort_by(f64::total_cmp);
        let n = us.len();
        // Nearest-rank percentiles: with fewer than 100 samples, p99 is the maximum.
        let rank = |p: f64| us[((p * n as f64).ceil() as usize).clamp(1, n) - 1];
        Summary {
            n,
            p50_us: rank(0.50),
            p99_us: rank(0.99),
            mean_us: us.iter().sum::<f64>() / n as f64,
            min_us: us[0],
        }
    }

    pub fn from_nanos(ns: &[u64]) -> Summary {
        let d: Vec<Duration> = ns.iter().map(|n| Duration::from_nanos(*n)).collect();
        Summary::of(&d)
    }

    pub fn json(&self) -> Value {
        json!({"n": self.n, "p50_us": self.p50_us, "p99_us": self.p99_us, "mean_us": self.mean_us, "min_us": self.min_us})
    }
}

/// Run `f` `budget.warmup` times unrecorded, then up to `budget.count` times (stopping early
/// once `budget.max_time` has passed), and return the recorded durations.
pub async fn sample<F, Fut>(budget: Budget, mut f: F) -> anyhow::Result<Vec<Duration>>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = anyhow::Result<()>>,
{
    for _ in 0..budget.warmup {
        f().await?;
    }
    let deadline = Instant::now() + budget.max_time;
    let mut out = Vec::with_capacity(budget.count);
    while out.len() < budget.count && Instant::now() < deadline {
        let t0 = Instant::now();
        f().await?;
        out.push(t0.elapsed());
    }
    Ok(out)
}

/// The median of `values` (the mean of the middle two of an even count); NaN for none. For
/// figures that may be negative (differences), where [`Summary::of`] takes durations.
pub fn median(values: impl Iterator<Item = f64>) -> f64 {
    let mut v: Vec<f64> = values.collect();
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// `1234.5` µs as "1.23 ms", `12.3` as "12.3 µs", `2.5e6` as "2.50 s".
pub fn fmt_us(us: f64) -> String {
    if us >= 1e6 {
        format!("{:.2} s", us / 1e6)
    } else if us >= 1e3 {
        format!("{:.2} ms", us / 1e3)
    } else {
        format!("{us:.1} µs")
    }
}

/// One measurement for [`sample_in_turn`]: a call to make, boxed so that calls of different
/// kinds can be taken in turn.
pub type Call<'a> = Box<dyn FnMut() -> Pin<Box<dyn Future<Output = anyhow::Result<()>> + 'a>> + 'a>;

/// `rounds` rounds of `calls`, one of each per round, timed by no one: what [`sample_in_turn`]
/// does before it takes samples, for a caller that reads a counter between the two.
pub async fn warm_up(rounds: usize, calls: &mut [Call<'_>]) -> anyhow::Result<()> {
    for _ in 0..rounds {
        for call in calls.iter_mut() {
            call().await?;
        }
    }
    Ok(())
}

/// [`sample`] for several measurements taken in turn, one of each per round (after each one's
/// warm-up), so that a slow spell of the machine falls on all of them alike rather than on
/// whichever ran during it. Stops at `budget.count` rounds or `N` times `budget.max_time`.
pub async fn sample_in_turn<const N: usize>(
    budget: Budget,
    mut calls: [Call<'_>; N],
) -> anyhow::Result<[Vec<Duration>; N]> {
    warm_up(budget.warmup, &mut calls).await?;
    let deadline = Instant::now() + budget.max_time * N as u32;
    let mut out: [Vec<Duration>; N] = std::array::from_fn(|_| Vec::with_capacity(budget.count));
    while out[0].len() < budget.count && Instant::now() < deadline {
        for (call, samples) in calls.iter_mut().zip(out.iter_mut()) {
            let t0 = Instant::now();
            call().await?;
            samples.push(t0.elapsed());
        }
    }
    Ok(out)
}
