//! The cursor `list_traces` and `fetch_traces` hand out: where the next trace starts (which
//! trace run, the traces service's own cursor, and — for one step — the episode and how many of
//! its traces were given), how many traces came before, and a hash of the query it belongs to.
//! Text of our own (`tc1.` and hex), so a model cannot smuggle anything through it.

use crate::reply::ToolError;

const PREFIX: &str = "tc1";
/// Longest service cursor carried (bytes).
const MAX_INNER: usize = 1024;

/// A position in a run's traces.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Pos {
    /// Index into the trace runs (eval traces may sit under several).
    pub(crate) run: usize,
    /// The service's cursor: of `GET /traces`, or with a step of `GET /episodes`.
    pub(crate) service: Option<String>,
    /// With a step: the episode within that episodes page.
    pub(crate) index: usize,
    /// With a step: that episode's traces already given.
    pub(crate) skip: usize,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TraceCursor {
    pub(crate) query: u64,
    /// Traces given before this position.
    pub(crate) seen: u64,
    pub(crate) pos: Pos,
}

/// FNV-1a over the query's parts: stable across builds and restarts.
pub(crate) fn query_hash(parts: &[&str]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for p in parts {
        for b in p.bytes().chain(std::iter::once(0xff)) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    h
}

fn hex(s: &str) -> String {
    s.bytes().map(|b| format!("{b:02x}")).collect()
}

fn unhex(s: &str) -> Option<String> {
    if !s.len().is_multiple_of(2) || s.len() > 2 * MAX_INNER {
        return None;
    }
    let bytes: Option<Vec<u8>> = (0..s.len() / 2)
        .map(|i| u8::from_str_radix(s.get(2 * i..2 * i + 2)?, 16).ok())
        .collect();
    String::from_utf8(bytes?).ok()
}

impl TraceCursor {
    pub(crate) fn encode(&self) -> String {
        format!(
            "{PREFIX}.{:016x}.{}.{}.{}.{}.{}",
            self.query,
            self.seen,
            self.pos.run,
            self.pos.service.as_deref().map(hex).unwrap_or_default(),
            self.pos.index,
            self.pos.skip
        )
    }

    /// Where a call starts: the cursor a previous answer gave (checked against `query`), or the
    /// beginning.
    pub(crate) fn start(cursor: Option<&str>, query: u64) -> Result<TraceCursor, ToolError> {
        match cursor {
            Some(c) => TraceCursor::parse(c, query),
            None => Ok(TraceCursor {
                query,
                seen: 0,
                pos: Pos::default(),
            }),
        }
    }

    /// Parse a cursor a previous answer gave, checking it belongs to `query`.
    pub(crate) fn parse(text: &str, query: u64) -> Result<TraceCursor, ToolError> {
        let bad = || {
            ToolError::bad_argument(
                "`cursor` is not one this server gave: pass the `next_cursor` of the previous answer unchanged, or drop it to start from the newest trace.",
            )
        };
        if text.len() > 2 * MAX_INNER + 128 {
            return Err(bad());
        }
        let parts: Vec<&str> = text.split('.').collect();
        let [prefix, q, seen, run, service, index, skip] = parts[..] else {
            return Err(bad());
        };
        if prefix != PREFIX || q.len() != 16 {
            return Err(bad());
        }
        // `seen` is only counted on; bounded so that no sum with it can overflow.
        let num = |s: &str| {
            s.parse::<u64>()
                .ok()
                .filter(|n| *n <= 1_000_000_000_000)
                .ok_or_else(bad)
        };
        let small = |s: &str| {
            s.parse::<usize>()
                .ok()
                .filter(|n| *n <= 1_000_000)
                .ok_or_else(bad)
        };
        let cursor = TraceCursor {
            query: u64::from_str_radix(q, 16).map_err(|_| bad())?,
            seen: num(seen)?,
            pos: Pos {
                run: small(run)?,
                service: if service.is_empty() {
                    None
                } else {
                    Some(unhex(service).ok_or_else(bad)?)
                },
                index: small(index)?,
                skip: small(skip)?,
            },
        };
        if cursor.query != query {
            return Err(ToolError::bad_argument(
                "This `cursor` belongs to another listing: repeat the run, kind, step and filters of the call that returned it, or drop the cursor.",
            ));
        }
        Ok(cursor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cursor_round_trips_and_is_bound_to_its_query() {
        let q = query_hash(&["run1", "train", "step=3"]);
        let c = TraceCursor {
            query: q,
            seen: 40,
            pos: Pos {
                run: 1,
                service: Some("o20.&x=y\n".into()),
                index: 3,
                skip: 1,
            },
        };
        let text = c.encode();
        assert!(
            text.chars()
                .all(|ch| ch.is_ascii_hexdigit() || ch == '.' || ch == 't' || ch == 'c'),
            "{text}"
        );
        assert_eq!(TraceCursor::parse(&text, q).unwrap(), c);
        let other = query_hash(&["run1", "train", "step=4"]);
        let e = TraceCursor::parse(&text, other).unwrap_err();
        assert!(e.to_string().contains("another listing"), "{e}");
    }

    #[test]
    fn foreign_and_hostile_cursors_are_refused() {
        let q = query_hash(&["r"]);
        for bad in [
            "o20",
            "",
            "tc1",
            "tc1.zz.0.0..0.0",
            "tc1.0000000000000000.x.0..0.0",
            "tc1.0000000000000000.0.0.abc.0.0",
            "tc1.0000000000000000.0.99999999..0.0",
            &format!("tc1.{q:016x}.0.0.{}.0.0", "ab".repeat(5000)),
        ] {
            assert!(TraceCursor::parse(bad, q).is_err(), "{bad}");
        }
    }
}
