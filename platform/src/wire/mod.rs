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
