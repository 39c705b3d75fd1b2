//! `GET /rft/runs/{id}/metrics` → `{"metrics": [...]}`. The records are opaque to the CLI
//! (`{"step": n, "<metric>": value, ...}` by inference) and a run has hundreds of them, of which
//! a tool shows a handful: each is kept as the text the platform sent (checked as a tree would
//! be read, without building one; one allocation), read for its step and numbers without
//! building a tree, and made a tree only when it is shown or written.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;

use super::null_default;

/// `GET /rft/runs/{id}/metrics`.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
pub struct MetricsResponse {
    /// Metric records, verbatim.
    #[serde(default, deserialize_with = "null_default")]
    pub metrics: Vec<MetricRecord>,
}

/// One metric record as the platform sent it (any JSON value; an object in practice). Its text
/// is the one sent, but for an answer the client had to read as a tree first (then it is that
/// tree's compact JSON).
#[derive(Clone, Serialize)]
#[serde(transparent)]
pub struct MetricRecord(Box<RawValue>);

/// Brackets a record may nest: what reading the whole answer as a tree allows below the
/// answer's object and its `metrics` list (serde_json reads up to 127 nested brackets).
const MAX_DEPTH: usize = 125;

impl<'de> Deserialize<'de> for MetricRecord {
    /// The record's text, refused when reading it as a tree would fail (a number out of
    /// range, a lone surrogate escape, nesting deeper than [`MAX_DEPTH`]), as the answer read
    /// whole was: a record kept is one [`MetricRecord::to_value`] reads.
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw = Box::<RawValue>::deserialize(d)?;
        let mut check = serde_json::Deserializer::from_str(raw.get());
        Checked(1)
            .deserialize(&mut check)
            .map_err(|e| de::Error::custom(format!("metric record: {e}")))?;
        Ok(MetricRecord(raw))
    }
}

/// Reads a JSON value as a tree would (every number and string decoded) without keeping it;
/// the number is the depth of the value's own brackets.
#[derive(Clone, Copy)]
struct Checked(usize);

impl<'de> DeserializeSeed<'de> for Checked {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Checked {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        if self.0 > MAX_DEPTH {
            return Err(de::Error::custom("nested too deeply"));
        }
        while seq.next_element_seed(Checked(self.0 + 1))?.is_some() {}
        Ok(())
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        if self.0 > MAX_DEPTH {
            return Err(de::Error::custom("nested too deeply"));
        }
        while map.next_key_seed(Checked(self.0 + 1))?.is_some() {
            map.next_value_seed(Checked(self.0 + 1))?;
        }
        Ok(())
    }
}

impl fmt::Debug for MetricRecord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0.get())
    }
}

impl PartialEq for MetricRecord {
    /// Equal as JSON values (key order and spacing aside, as `Value`s compare).
    fn eq(&self, other: &Self) -> bool {
        self.0.get() == other.0.get() || self.to_value() == other.to_value()
    }
}

impl From<&Value> for MetricRecord {
    fn from(v: &Value) -> Self {
        // A `Value` always serialises; `null` is the unreachable fallback.
        let text = serde_json::to_string(v).unwrap_or_else(|_| "null".into());
        MetricRecord(RawValue::from_string(text).unwrap_or_else(|_| null_raw()))
    }
}

fn null_raw() -> Box<RawValue> {
    RawValue::from_string("null".into()).expect("null is JSON")
}

/// What [`MetricRecord::fields`] reads of a record that is an object.
#[derive(Debug, Default, PartialEq)]
pub struct RecordFields<'a> {
    /// `step`, when it is an integer (its last occurrence, as a JSON object read whole keeps).
    pub step: Option<i64>,
    /// Every other field in the order sent, with its value when that is a number. A name sent
    /// twice is listed twice; the last stands, as in a JSON object read whole.
    pub values: Vec<(Cow<'a, str>, Option<f64>)>,
}

impl MetricRecord {
    /// The record's JSON text as sent.
    pub fn text(&self) -> &str {
        self.0.get()
    }

    /// The record as a JSON tree.
    pub fn to_value(&self) -> Value {
        // The text was read as a tree reads it when it was kept (see `deserialize`).
        serde_json::from_str(self.0.get()).unwrap_or(Value::Null)
    }

    /// Its step and fields, read without building a tree (names borrowed from the text unless
    /// escaped); `None` when the record is not an object.
    pub fn fields(&self) -> Option<RecordFields<'_>> {
        let mut de = serde_json::Deserializer::from_str(self.0.get());
        de.deserialize_any(FieldsVisitor).ok().flatten()
    }
}

struct FieldsVisitor;

impl<'de> Visitor<'de> for FieldsVisitor {
    type Value = Option<RecordFields<'de>>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a metric record")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut out = RecordFields::default();
        while let Some(Name(name)) = map.next_key()? {
            let number = map.next_value::<Number>()?;
            if name == "step" {
                out.step = match number {
                    Number::Int(i) => Some(i),
                    Number::UInt(u) => i64::try_from(u).ok(),
                    Number::Float(_) | Number::Other => None,
                };
            } else {
                out.values.push((name, number.as_f64()));
            }
        }
        Ok(Some(out))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(None)
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
}

/// An object key, borrowed from the text when it has no escape.
struct Name<'a>(Cow<'a, str>);

impl<'de> Deserialize<'de> for Name<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Name<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a field name")
            }
            fn visit_borrowed_str<E: de::Error>(self, s: &'de str) -> Result<Self::Value, E> {
                Ok(Name(Cow::Borrowed(s)))
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Self::Value, E> {
                Ok(Name(Cow::Owned(s.to_owned())))
            }
            fn visit_string<E: de::Error>(self, s: String) -> Result<Self::Value, E> {
                Ok(Name(Cow::Owned(s)))
            }
        }
        d.deserialize_str(V)
    }
}

/// A field's value: a number as JSON holds it, or anything else (skipped, not built).
enum Number {
    Int(i64),
    UInt(u64),
    Float(f64),
    Other,
}

impl Number {
    /// As `Value::as_f64` reads it.
    fn as_f64(&self) -> Option<f64> {
        match *self {
            Number::Int(i) => Some(i as f64),
            Number::UInt(u) => Some(u as f64),
            Number::Float(f) => Some(f),
            Number::Other => None,
        }
    }
}

impl<'de> Deserialize<'de> for Number {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(NumberVisitor)
    }
}

struct NumberVisitor;

impl<'de> Visitor<'de> for NumberVisitor {
    type Value = Number;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Number, E> {
        Ok(Number::Int(v))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Number, E> {
        // As serde_json's `Value` keeps it: a non-negative integer is a u64.
        Ok(i64::try_from(v).map_or(Number::UInt(v), Number::Int))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Number, E> {
        Ok(Number::Float(v))
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Number, E> {
        Ok(Number::Other)
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<Number, E> {
        Ok(Number::Other)
    }
    fn visit_unit<E: de::Error>(self) -> Result<Number, E> {
        Ok(Number::Other)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Number, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Number::Other)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Number, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Number::Other)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn record(v: Value) -> MetricRecord {
        MetricRecord::from(&v)
    }

    /// A record's step and fields.
    type Read = (Option<i64>, Vec<(String, Option<f64>)>);

    /// What a record's fields are when read as a JSON tree (the reference).
    fn by_tree(v: &Value) -> Option<Read> {
        let map = v.as_object()?;
        Some((
            map.get("step").and_then(Value::as_i64),
            map.iter()
                .filter(|(k, _)| *k != "step")
                .map(|(k, v)| (k.clone(), v.as_f64()))
                .collect(),
        ))
    }

    #[test]
    fn fields_read_as_a_json_tree_reads_them() {
        let cases = [
            json!({"step": 3, "loss": 1.5, "reward/mean": -2, "note": "x", "big": 18446744073709551615u64}),
            json!({"loss": 1.0, "nested": {"a": [1, 2]}, "list": [1], "flag": true, "none": null}),
            json!({"step": 2.5, "loss": 0}),
            json!({"step": -4}),
            json!({"step": "7", "esc\"aped\u{e9}": 1}),
            json!({}),
        ];
        for v in cases {
            let r = record(v.clone());
            let f = r.fields().expect("an object");
            let got = (
                f.step,
                f.values
                    .into_iter()
                    .map(|(k, n)| (k.into_owned(), n))
                    .collect::<Vec<_>>(),
            );
            assert_eq!(Some(got), by_tree(&v), "{v}");
            assert_eq!(r.to_value(), v);
        }
        for v in [json!([1, {"step": 1}]), json!(3), json!("s"), json!(null)] {
            assert_eq!(record(v.clone()).fields(), None, "{v}");
        }
    }

    #[test]
    fn a_record_a_tree_could_not_hold_is_refused_as_the_whole_answer_was() {
        let deep = |n: usize| format!("{{\"metrics\": [{}1{}]}}", "[".repeat(n), "]".repeat(n));
        for body in [
            r#"{"metrics": [{"step": 5, "loss": 1e400}]}"#.to_string(),
            r#"{"metrics": [{"step": 5, "note": "\ud800"}]}"#.to_string(),
            r#"{"metrics": [{"step": 5, "x": [{"y": -1e999}]}]}"#.to_string(),
            deep(MAX_DEPTH + 1),
        ] {
            assert!(
                serde_json::from_str::<Value>(&body).is_err(),
                "the reference refuses {body}"
            );
            assert!(
                serde_json::from_str::<MetricsResponse>(&body).is_err(),
                "{body}"
            );
        }
        let body = deep(MAX_DEPTH);
        assert!(serde_json::from_str::<Value>(&body).is_ok());
        let m: MetricsResponse = serde_json::from_str(&body).unwrap();
        assert_eq!(m.metrics[0].text().len(), 2 * MAX_DEPTH + 1);
    }

    #[test]
    fn a_name_sent_twice_is_listed_twice_and_step_keeps_its_last() {
        let r: MetricRecord =
            serde_json::from_str(r#"{"step": 1, "loss": 1, "loss": "x", "step": 2}"#).unwrap();
        let f = r.fields().unwrap();
        assert_eq!(f.step, Some(2));
        assert_eq!(
            f.values,
            vec![("loss".into(), Some(1.0)), ("loss".into(), None)]
        );
    }

    #[test]
    fn records_keep_their_text_and_compare_as_json() {
        let body = r#"{"metrics": [{"step": 1,  "reward": 0.5}, {"step":2,"reward":0.7}]}"#;
        let m: MetricsResponse = serde_json::from_str(body).unwrap();
        assert_eq!(m.metrics[0].text(), r#"{"step": 1,  "reward": 0.5}"#);
        assert_eq!(m.metrics[0], record(json!({"reward": 0.5, "step": 1})));
        assert_ne!(m.metrics[0], m.metrics[1]);
        let null: MetricsResponse = serde_json::from_str(r#"{"metrics": null}"#).unwrap();
        assert!(null.metrics.is_empty());
        // Read from a tree too (the client's fallback path decodes a `Value`).
        let tree: MetricsResponse =
            serde_json::from_value(json!({"metrics": [{"step": 1}]})).unwrap();
        assert_eq!(tree.metrics[0].fields().unwrap().step, Some(1));
    }
}
