//! `GET /rft/runs/{id}/metrics` → `{"metrics": [...]}`. The records are opaque to the CLI
//! (`{"step": n, "<metric>": value, ...}` by inference) and a run has hundreds of them, of which
//! a tool shows a handful: each is kept as the text the platform sent (checked as a tree would
//! be read, without building one; one allocation), read for its step and numbers without
//! building a tree, and made a tree only when it is shown or written.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
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
#[derive(Clone)]
pub struct MetricRecord {
    raw: Box<RawValue>,
    /// Its step and numbers, read in the same pass that checked the text (`None`: the record
    /// is not an object).
    read: Option<Read>,
}

/// What reading a record that is an object found: see [`RecordFields`].
#[derive(Clone, Debug)]
struct Read {
    step: Option<i64>,
    values: Vec<(Key, Option<f64>)>,
}

/// A field name: where it stands in the record's text, or, when it was written with escapes,
/// the name they spell.
#[derive(Clone, Debug)]
enum Key {
    At(usize, usize),
    Decoded(Box<str>),
}

impl Serialize for MetricRecord {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.raw.serialize(s)
    }
}

/// Brackets a record may nest: what reading the whole answer as a tree allows below the
/// answer's object and its `metrics` list (serde_json reads up to 127 nested brackets).
const MAX_DEPTH: usize = 125;

impl<'de> Deserialize<'de> for MetricRecord {
    /// The record's text, refused when reading it as a tree would fail (a number out of
    /// range, a lone surrogate escape, nesting deeper than [`MAX_DEPTH`]), as the answer read
    /// whole was: a record kept is one [`MetricRecord::to_value`] reads. The same pass reads
    /// its step and numbers.
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw = Box::<RawValue>::deserialize(d)?;
        let read = read(raw.get()).map_err(|e| de::Error::custom(format!("metric record: {e}")))?;
        Ok(MetricRecord { raw, read })
    }
}

/// One pass over a record's text: every number and string decoded as a tree would decode it
/// (nothing kept but the step, the numbers and where the names stand).
fn read(text: &str) -> Result<Option<Read>, serde_json::Error> {
    let mut de = serde_json::Deserializer::from_str(text);
    de.deserialize_any(RecordVisitor { text })
}

/// Reads a record: an object's step and numbers; any other value only checked.
struct RecordVisitor<'t> {
    text: &'t str,
}

impl<'de> Visitor<'de> for RecordVisitor<'_> {
    type Value = Option<Read>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a metric record")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut step = None;
        let mut values = Vec::with_capacity(map.size_hint().unwrap_or(8));
        while let Some(key) = map.next_key_seed(KeySeed { text: self.text })? {
            let number = map.next_value_seed(FieldValue)?;
            if key.name(self.text) == "step" {
                step = match number {
                    Number::Int(i) => Some(i),
                    Number::UInt(u) => i64::try_from(u).ok(),
                    Number::Float(_) | Number::Other => None,
                };
            } else {
                values.push((key, number.as_f64()));
            }
        }
        Ok(Some(Read { step, values }))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        Checked(1).visit_seq(seq).map(|()| None)
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

impl Key {
    fn name<'a>(&'a self, text: &'a str) -> &'a str {
        match self {
            Key::At(start, len) => text.get(*start..start + len).unwrap_or_default(),
            Key::Decoded(name) => name,
        }
    }
}

/// A record's field name, located in the record's text when it was read from there as is.
struct KeySeed<'t> {
    text: &'t str,
}

impl<'de> DeserializeSeed<'de> for KeySeed<'_> {
    type Value = Key;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Key, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for KeySeed<'_> {
    type Value = Key;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a field name")
    }
    fn visit_borrowed_str<E: de::Error>(self, s: &'de str) -> Result<Key, E> {
        // A name read without escapes is a slice of the text: kept as where it stands.
        let start = (s.as_ptr() as usize).wrapping_sub(self.text.as_ptr() as usize);
        match self.text.get(start..start.wrapping_add(s.len())) {
            Some(at) if at.as_ptr() == s.as_ptr() => Ok(Key::At(start, s.len())),
            _ => Ok(Key::Decoded(s.into())),
        }
    }
    fn visit_str<E: de::Error>(self, s: &str) -> Result<Key, E> {
        Ok(Key::Decoded(s.into()))
    }
}

/// A field's value: its number, or, for anything else, only checked.
struct FieldValue;

impl<'de> DeserializeSeed<'de> for FieldValue {
    type Value = Number;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Number, D::Error> {
        d.deserialize_any(NumberVisitor)
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
        f.write_str(self.raw.get())
    }
}

impl PartialEq for MetricRecord {
    /// Equal as JSON values (key order and spacing aside, as `Value`s compare).
    fn eq(&self, other: &Self) -> bool {
        self.raw.get() == other.raw.get() || self.to_value() == other.to_value()
    }
}

impl From<&Value> for MetricRecord {
    fn from(v: &Value) -> Self {
        // A `Value` always serialises; `null` is the unreachable fallback.
        let text = serde_json::to_string(v).unwrap_or_else(|_| "null".into());
        let raw = RawValue::from_string(text).unwrap_or_else(|_| null_raw());
        // A tree built deeper than a read one can be is read as no object.
        let read = read(raw.get()).ok().flatten();
        MetricRecord { raw, read }
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
        self.raw.get()
    }

    /// The record as a JSON tree.
    pub fn to_value(&self) -> Value {
        // The text was read as a tree reads it when it was kept (see `deserialize`).
        serde_json::from_str(self.raw.get()).unwrap_or(Value::Null)
    }

    /// Its step and fields as the pass that checked it read them, without a tree (names
    /// borrowed from the text); `None` when the record is not an object.
    pub fn fields(&self) -> Option<RecordFields<'_>> {
        let read = self.read.as_ref()?;
        Some(RecordFields {
            step: read.step,
            values: read
                .values
                .iter()
                .map(|(key, value)| (Cow::Borrowed(key.name(self.raw.get())), *value))
                .collect(),
        })
    }
}

/// A field's value: a number as JSON holds it, or anything else (checked, not built).
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
    // A field's value stands one bracket inside its record: checked as `Checked(2)`.
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Number, A::Error> {
        Checked(2).visit_seq(seq).map(|()| Number::Other)
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Number, A::Error> {
        Checked(2).visit_map(map).map(|()| Number::Other)
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
        // The same limit for a record that is an object: its field's value is one bracket in.
        let deep_field = |n: usize| {
            format!(
                "{{\"metrics\": [{{\"step\": 1, \"x\": {}1{}}}]}}",
                "[".repeat(n),
                "]".repeat(n)
            )
        };
        let kept = deep_field(MAX_DEPTH - 1);
        assert!(serde_json::from_str::<Value>(&kept).is_ok());
        let m: MetricsResponse = serde_json::from_str(&kept).unwrap();
        assert_eq!(m.metrics[0].fields().unwrap().step, Some(1));
        let refused = deep_field(MAX_DEPTH);
        assert!(serde_json::from_str::<Value>(&refused).is_err());
        assert!(serde_json::from_str::<MetricsResponse>(&refused).is_err());
    }

    /// JSON text from a small grammar that reaches what a tree read refuses: numbers out of
    /// range, lone surrogate escapes, names with escapes, names sent twice, shallow nesting (the
    /// depth limit is held at its boundary by the test above).
    fn json_text() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        let name = prop_oneof![
            Just("step".to_string()),
            Just("loss".to_string()),
            Just("st\\u0065p".to_string()),
            Just("l\\\"o".to_string()),
            Just("\\ud83d\\ude00".to_string()),
            Just("\\ud800".to_string()),
            "[a-z/_]{0,6}",
        ];
        let leaf = prop_oneof![
            (-5i64..5).prop_map(|n| n.to_string()),
            Just("18446744073709551615".to_string()),
            Just("-9223372036854775809".to_string()),
            Just("1e400".to_string()),
            Just("-1e999".to_string()),
            Just("2.5".to_string()),
            Just("1e-400".to_string()),
            Just("true".to_string()),
            Just("null".to_string()),
            name.clone().prop_map(|n| format!("\"{n}\"")),
        ];
        leaf.prop_recursive(4, 24, 5, move |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..5)
                    .prop_map(|items| format!("[{}]", items.join(", "))),
                proptest::collection::vec((name.clone(), inner), 0..6).prop_map(|fields| {
                    let body: Vec<String> = fields
                        .iter()
                        .map(|(k, v)| format!("\"{k}\": {v}"))
                        .collect();
                    format!("{{{}}}", body.join(", "))
                }),
            ]
        })
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(1024))]
        /// The one pass that checks a record and reads its fields agrees with serde_json's
        /// tree: a record is kept exactly when the tree reads it, and then its step and fields
        /// are the tree's.
        #[test]
        fn one_pass_agrees_with_the_tree(text in json_text()) {
            let tree = serde_json::from_str::<Value>(&text);
            let kept = serde_json::from_str::<MetricRecord>(&text);
            proptest::prop_assert_eq!(kept.is_ok(), tree.is_ok(), "{}", text);
            if let (Ok(r), Ok(v)) = (kept, tree) {
                let got = r.fields().map(|f| {
                    (f.step, f.values.into_iter().map(|(k, n)| (k.into_owned(), n)).collect::<Vec<_>>())
                });
                proptest::prop_assert_eq!(got, by_tree_listing_twice(&text, &v), "{}", text);
                proptest::prop_assert_eq!(r.to_value(), v);
            }
        }
    }

    /// [`by_tree`], but with every occurrence of a name listed, as the text has them: the tree
    /// keeps the last only, so a record with a name sent twice is compared on its last values.
    fn by_tree_listing_twice(text: &str, v: &Value) -> Option<Read2> {
        v.as_object()?;
        let mut de = serde_json::Deserializer::from_str(text);
        let pairs: Vec<(String, Value)> =
            serde::Deserializer::deserialize_map(&mut de, Pairs).ok()?;
        let step = pairs
            .iter()
            .rev()
            .find(|(k, _)| k == "step")
            .and_then(|(_, v)| v.as_i64());
        Some((
            step,
            pairs
                .into_iter()
                .filter(|(k, _)| k != "step")
                .map(|(k, v)| (k, v.as_f64()))
                .collect(),
        ))
    }

    type Read2 = (Option<i64>, Vec<(String, Option<f64>)>);

    /// An object's entries in the order written, a name sent twice listed twice.
    struct Pairs;
    impl<'de> Visitor<'de> for Pairs {
        type Value = Vec<(String, Value)>;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("an object")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let mut out = Vec::new();
            while let Some(e) = map.next_entry::<String, Value>()? {
                out.push(e);
            }
            Ok(out)
        }
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
