//! Wire types: request and response bodies exactly as on the wire (camelCase or snake_case per
//! endpoint, as `platform-api.md` documents them). Decoding is lenient where the CLI is
//! (unknown fields ignored, optional fields optional, `null` lists read as empty) and strict
//! where it is (required fields, the prepare answer).

pub mod account;
pub mod metrics;
pub mod runs;
pub mod traces;
pub mod volumes;

use serde::{Deserialize, Deserializer};

/// The name serde_json's tree reads specially when it comes first in an object, as decoded
/// (its `raw_value` feature, which this workspace and axum turn on): the object is read as the
/// JSON its string holds. A reader that claims to read as the tree reads must do the same
/// (`metrics::FieldSeed`, and `get_logs`' log records).
pub const RAW_VALUE_TOKEN: &str = "$serde_json::private::RawValue";

/// Read `null` (or a missing field, with `#[serde(default)]`) as the type's default.
pub(crate) fn null_default<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Option::<T>::deserialize(deserializer).map(Option::unwrap_or_default)
}

/// Parse a datetime as the platform sends it: RFC 3339 (`Z` or an offset), or a naive
/// `YYYY-MM-DDTHH:MM:SS[.fff]` (with `T` or a space) taken as UTC, as pydantic accepts.
pub fn parse_wire_datetime(raw: &str) -> Option<chrono::DateTime<chrono::Utc>> {
    use chrono::{DateTime, NaiveDateTime, Utc};
    let raw = raw.trim();
    if let Ok(dt) = DateTime::parse_from_rfc3339(raw) {
        return Some(dt.with_timezone(&Utc));
    }
    if let Ok(dt) = DateTime::parse_from_str(raw, "%Y-%m-%d %H:%M:%S%.f%:z") {
        return Some(dt.with_timezone(&Utc));
    }
    ["%Y-%m-%dT%H:%M:%S%.f", "%Y-%m-%d %H:%M:%S%.f"]
        .iter()
        .find_map(|fmt| NaiveDateTime::parse_from_str(raw, fmt).ok())
        .map(|n| n.and_utc())
}

/// Whether a datetime as the platform sends it carries no offset (one of the naive forms
/// [`parse_wire_datetime`] takes as UTC). Every form it reads has its offset, if any, after
/// the 19 characters of the date and time.
pub fn wire_datetime_is_naive(raw: &str) -> bool {
    !raw.trim()
        .get(19..)
        .is_some_and(|t| t.contains(['Z', 'z', '+', '-']))
}

#[cfg(test)]
mod tests {
    use super::{parse_wire_datetime, wire_datetime_is_naive};

    /// A naive time (with `T` or a space, with or without a fraction) is the same instant as
    /// its `Z` form; an offset, with or without its colon, is applied; anything else is
    /// unreadable.
    #[test]
    fn naive_times_are_read_as_utc() {
        let z = |s: &str| chrono::DateTime::parse_from_rfc3339(s).unwrap().to_utc();
        for (naive, rfc) in [
            ("2026-01-02T03:04:05", "2026-01-02T03:04:05Z"),
            ("2026-01-02 03:04:05", "2026-01-02T03:04:05Z"),
            ("2026-01-02T03:04:05.250", "2026-01-02T03:04:05.250Z"),
            (
                " 2026-01-02 03:04:05.123456 ",
                "2026-01-02T03:04:05.123456Z",
            ),
            ("2026-01-02 05:04:05+02:00", "2026-01-02T03:04:05Z"),
            // No colon in the offset: not RFC 3339, read by the second form.
            ("2026-01-02 05:04:05.5+0200", "2026-01-02T03:04:05.5Z"),
            ("2026-01-02T03:04:05.000Z", "2026-01-02T03:04:05Z"),
        ] {
            assert_eq!(parse_wire_datetime(naive), Some(z(rfc)), "{naive}");
            let offset = naive.contains(['Z', '+']);
            assert_eq!(wire_datetime_is_naive(naive), !offset, "{naive}");
        }
        for bad in [
            "",
            "yesterday",
            "2026-01-02",
            "2026-13-02T03:04:05",
            "1767322800",
        ] {
            assert_eq!(parse_wire_datetime(bad), None, "{bad}");
        }
    }
}
