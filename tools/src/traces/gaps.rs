//! The missing-upload check of the playbook: which training steps up to the run's latest step
//! have no train traces on the traces service. A fact, not a decision: it gates nothing.

use schemars::JsonSchema;
use serde::Serialize;

/// Most ranges spelled out; the count covers all of them.
const MAX_RANGES: usize = 20;

/// Steps 1..=`checked_through` that have no train traces.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct MissingUploads {
    /// The run's latest step (get_progress): steps 1 to this one were checked.
    pub checked_through: i64,
    /// Steps without traces.
    pub count: u64,
    /// Those steps as ranges, e.g. "6-8, 13" ("" when none).
    pub ranges: String,
}

/// The steps in `1..=latest` absent from `with_traces` (any order, duplicates allowed), as
/// compact ranges. Steps numbered from 1, as the platform's progress counts them; a step 0 with
/// traces is simply not missing.
pub(crate) fn missing_uploads(with_traces: &[i64], latest: i64) -> MissingUploads {
    let mut have: Vec<i64> = with_traces
        .iter()
        .copied()
        .filter(|s| (1..=latest).contains(s))
        .collect();
    have.sort_unstable();
    have.dedup();
    let mut ranges: Vec<(i64, i64)> = Vec::new();
    let mut next = 1;
    for &s in have
        .iter()
        .chain(std::iter::once(&(latest.clamp(0, i64::MAX - 1) + 1)))
    {
        if s > next {
            ranges.push((next, s - 1));
        }
        next = s + 1;
    }
    let count = ranges.iter().map(|(a, b)| (b - a + 1) as u64).sum();
    let mut text: Vec<String> = ranges
        .iter()
        .take(MAX_RANGES)
        .map(|&(a, b)| {
            if a == b {
                a.to_string()
            } else {
                format!("{a}-{b}")
            }
        })
        .collect();
    if ranges.len() > MAX_RANGES {
        text.push(format!("… ({} more ranges)", ranges.len() - MAX_RANGES));
    }
    MissingUploads {
        checked_through: latest.max(0),
        count,
        ranges: text.join(", "),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gaps_read_as_ranges_and_single_steps() {
        let mut have: Vec<i64> = (1..=100).collect();
        have.retain(|s| !(41..=45).contains(s) && *s != 90);
        let m = missing_uploads(&have, 100);
        assert_eq!(m.ranges, "41-45, 90");
        assert_eq!(m.count, 6);
        assert_eq!(m.checked_through, 100);
    }

    #[test]
    fn nothing_missing_and_nothing_uploaded() {
        let m = missing_uploads(&[3, 1, 2, 2], 3);
        assert_eq!((m.count, m.ranges.as_str()), (0, ""));
        let m = missing_uploads(&[], 5);
        assert_eq!((m.count, m.ranges.as_str()), (5, "1-5"));
        // No step yet: nothing to check.
        let m = missing_uploads(&[], 0);
        assert_eq!((m.count, m.ranges.as_str()), (0, ""));
    }

    #[test]
    fn the_latest_steps_and_steps_beyond_it() {
        // Traces past the latest step (progress lags) and a step 0 count for nothing.
        let m = missing_uploads(&[0, 1, 2, 9], 4);
        assert_eq!(m.ranges, "3-4");
        assert_eq!(m.count, 2);
    }

    #[test]
    fn many_gaps_stay_short() {
        let have: Vec<i64> = (1..=1000).filter(|s| s % 2 == 0).collect();
        let m = missing_uploads(&have, 1000);
        assert_eq!(m.count, 500);
        assert!(m.ranges.ends_with("… (480 more ranges)"), "{}", m.ranges);
        assert!(m.ranges.len() < 200, "{}", m.ranges);
    }
}
