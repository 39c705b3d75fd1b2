//! `GET /rft/runs/{id}/metrics` → `{"metrics": [...]}`. The records are opaque to the CLI
//! (`{"step": n, "<metric>": value, ...}` by inference) and a run has hundreds of them, of which
//! a tool shows a handful: the answer is read in one pass over its text, each record into its
//! fields (numbers, and where its names and strings stand in the text, which is kept once for
//! all of them), and a record becomes a tree only when it is shown or written.

use std::fmt;
use std::sync::Arc;

use serde::de::value::{MapAccessDeserializer, SeqAccessDeserializer};
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Number, Value};

use super::{RAW_VALUE_TOKEN, null_default};

/// `GET /rft/runs/{id}/metrics`.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
pub struct MetricsResponse {
    /// Metric records, each as the tree its text reads as.
    #[serde(default, deserialize_with = "null_default")]
    pub metrics: Vec<MetricRecord>,
}

impl MetricsResponse {
    /// The answer read from its body in one pass, every record's names and strings left in
    /// the body's text (kept once, shared by the records); `None` when the body is not read so
    /// (not UTF-8, not a JSON object, `metrics` sent twice or not a list): the caller then reads
    /// it as any answer (the derived [`Deserialize`], then as a tree), which reads it or
    /// reports what is wrong as before.
    ///
    /// Each record is what reading the body as a JSON tree makes of it: a record the tree could
    /// not hold (a number out of range, a lone surrogate escape, nesting past serde_json's
    /// limit, counted from the top of the answer as the tree counts it) fails the whole answer.
    /// Fields beside `metrics` are passed over unchecked, as the derived reader passes them,
    /// and an answer led by serde_json's raw-value token (see [`RAW_VALUE_TOKEN`]) has no
    /// records here, as it had none there.
    pub fn from_body(body: &[u8]) -> Option<MetricsResponse> {
        let text: Arc<str> = Arc::from(std::str::from_utf8(body).ok()?);
        let mut de = serde_json::Deserializer::from_str(&text);
        let metrics = de.deserialize_map(AnswerSeed { text: &text }).ok()?;
        de.end().ok()?;
        Some(MetricsResponse { metrics })
    }
}

/// One metric record as the platform sent it (any JSON value; an object in practice): an
/// object's fields in the order sent ([`Field::Object`]), anything else as any field's value.
#[derive(Clone)]
pub struct MetricRecord {
    /// The answer's text its [`Text::At`] names and strings stand in (`None` when it was
    /// read from a tree or alone).
    text: Option<Arc<str>>,
    /// An object's `step` when it is an integer (its last occurrence, as a tree keeps).
    step: Option<i64>,
    value: Field,
}

/// A name or string: where it stands in the answer's text when it was read from there as
/// is, or the text its escapes spell.
#[derive(Clone)]
enum Text {
    At(usize, usize),
    Owned(Box<str>),
}

/// A field's value as a JSON tree would hold it; or a record that is an object.
#[derive(Clone)]
enum Field {
    Int(i64),
    UInt(u64),
    Float(f64),
    Bool(bool),
    Null,
    Str(Text),
    Tree(Box<Value>),
    /// A record's fields, `step` included, in the order sent (only a record is read so; an
    /// object inside one is a [`Field::Tree`]).
    Object(Vec<(Text, Field)>),
}

impl Text {
    fn get<'a>(&'a self, text: Option<&'a str>) -> &'a str {
        match self {
            Text::At(start, len) => text
                .and_then(|t| t.get(*start..start + len))
                .unwrap_or_default(),
            Text::Owned(s) => s,
        }
    }
}

impl Field {
    /// As `Value::as_f64` reads it.
    fn as_f64(&self) -> Option<f64> {
        match *self {
            Field::Int(i) => Some(i as f64),
            Field::UInt(u) => Some(u as f64),
            Field::Float(f) => Some(f),
            _ => None,
        }
    }

    /// `step` as a tree's `as_i64` reads it.
    fn as_step(&self) -> Option<i64> {
        match *self {
            Field::Int(i) => Some(i),
            Field::UInt(u) => i64::try_from(u).ok(),
            _ => None,
        }
    }

    fn to_value(&self, text: Option<&str>) -> Value {
        match self {
            Field::Int(i) => Value::from(*i),
            Field::UInt(u) => Value::from(*u),
            Field::Float(f) => Number::from_f64(*f).map_or(Value::Null, Value::Number),
            Field::Bool(b) => Value::Bool(*b),
            Field::Null => Value::Null,
            Field::Str(s) => Value::String(s.get(text).to_owned()),
            Field::Tree(v) => (**v).clone(),
            Field::Object(fields) => {
                // A name sent twice keeps its first place and its last value, as serde_json's
                // map does.
                let mut map = Map::with_capacity(fields.len());
                for (name, value) in fields {
                    map.insert(name.get(text).to_owned(), value.to_value(text));
                }
                Value::Object(map)
            }
        }
    }

    /// A record from its tree: an object's fields, anything else as a field's value.
    fn record_of(v: &Value) -> Field {
        match v {
            Value::Object(map) => Field::Object(
                map.iter()
                    .map(|(k, v)| (Text::Owned(k.as_str().into()), Field::of_value(v)))
                    .collect(),
            ),
            other => Field::of_value(other),
        }
    }

    fn of_value(v: &Value) -> Field {
        match v {
            Value::Null => Field::Null,
            Value::Bool(b) => Field::Bool(*b),
            Value::Number(n) => match (n.as_u64(), n.as_i64(), n.as_f64()) {
                (Some(u), _, _) => Field::UInt(u),
                (None, Some(i), _) => Field::Int(i),
                (None, None, Some(f)) => Field::Float(f),
                (None, None, None) => Field::Tree(Box::new(v.clone())),
            },
            Value::String(s) => Field::Str(Text::Owned(s.as_str().into())),
            _ => Field::Tree(Box::new(v.clone())),
        }
    }
}

/// What [`MetricRecord::fields`] reads of a record that is an object: a view of the record,
/// nothing copied.
#[derive(Clone, Copy)]
pub struct RecordFields<'a> {
    /// `step`, when it is an integer (its last occurrence, as a JSON object read whole keeps).
    pub step: Option<i64>,
    fields: &'a [(Text, Field)],
    text: Option<&'a str>,
}

impl<'a> RecordFields<'a> {
    /// Every field but `step` in the order sent, with its value when that is a number. A name
    /// sent twice is listed twice; the last stands, as in a JSON object read whole. (A record
    /// led by serde_json's raw-value token lists the fields of the tree its string holds.)
    pub fn values(&self) -> impl Iterator<Item = (&'a str, Option<f64>)> + 'a {
        let text = self.text;
        self.fields.iter().filter_map(move |(name, value)| {
            let name = name.get(text);
            (name != "step").then(|| (name, value.as_f64()))
        })
    }
}

impl PartialEq for RecordFields<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.step == other.step && self.values().eq(other.values())
    }
}

impl fmt::Debug for RecordFields<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RecordFields")
            .field("step", &self.step)
            .field("values", &self.values().collect::<Vec<_>>())
            .finish()
    }
}

impl MetricRecord {
    /// The record `value`, its names and strings standing in `text`.
    fn new(text: Option<Arc<str>>, value: Field) -> MetricRecord {
        let step = match &value {
            Field::Object(fields) => fields
                .iter()
                .rev()
                .find(|(name, _)| name.get(text.as_deref()) == "step")
                .and_then(|(_, v)| v.as_step()),
            _ => None,
        };
        MetricRecord { text, step, value }
    }

    /// The record as a JSON tree: what reading its text as a tree gives.
    pub fn to_value(&self) -> Value {
        self.value.to_value(self.text.as_deref())
    }

    /// Its step and every other field as read, without a tree (names borrowed); `None` when
    /// the record is not an object.
    pub fn fields(&self) -> Option<RecordFields<'_>> {
        let Field::Object(fields) = &self.value else {
            return None;
        };
        Some(RecordFields {
            step: self.step,
            fields,
            text: self.text.as_deref(),
        })
    }
}

impl Serialize for MetricRecord {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.to_value().serialize(s)
    }
}

impl fmt::Debug for MetricRecord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.to_value())
    }
}

impl PartialEq for MetricRecord {
    /// Equal as JSON values (key order and spacing aside, as `Value`s compare).
    fn eq(&self, other: &Self) -> bool {
        self.to_value() == other.to_value()
    }
}

impl From<&Value> for MetricRecord {
    fn from(v: &Value) -> Self {
        MetricRecord::new(None, Field::record_of(v))
    }
}

impl<'de> Deserialize<'de> for MetricRecord {
    /// A record read alone or from a tree: names and strings kept as owned text. (An answer's
    /// body is read by [`MetricsResponse::from_body`], which leaves them in its text.)
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let value = d.deserialize_any(FieldSeed::record(None))?;
        Ok(MetricRecord::new(None, value))
    }
}

/// The answer's object: `metrics` read into records, other fields passed over (as the derived
/// [`Deserialize`] passes them), `metrics` sent twice refused (as it refuses it).
struct AnswerSeed<'t> {
    text: &'t Arc<str>,
}

impl<'de> Visitor<'de> for AnswerSeed<'_> {
    type Value = Vec<MetricRecord>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a metrics answer")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut metrics = None;
        while let Some(is_metrics) = map.next_key_seed(IsMetrics)? {
            if !is_metrics {
                map.next_value::<IgnoredAny>()?;
            } else if metrics.is_some() {
                return Err(de::Error::duplicate_field("metrics"));
            } else {
                metrics = Some(map.next_value_seed(Records { text: self.text })?);
            }
        }
        Ok(metrics.unwrap_or_default())
    }
}

/// Whether an answer's field is `metrics`.
struct IsMetrics;

impl<'de> DeserializeSeed<'de> for IsMetrics {
    type Value = bool;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<bool, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for IsMetrics {
    type Value = bool;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a field name")
    }
    fn visit_str<E: de::Error>(self, s: &str) -> Result<bool, E> {
        Ok(s == "metrics")
    }
}

/// `metrics`: a list of records, or `null` for none.
struct Records<'t> {
    text: &'t Arc<str>,
}

impl<'de> DeserializeSeed<'de> for Records<'_> {
    type Value = Vec<MetricRecord>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Records<'_> {
    type Value = Vec<MetricRecord>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a list of metric records")
    }
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(Vec::new())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
        while let Some(value) = seq.next_element_seed(FieldSeed::record(Some(self.text)))? {
            out.push(MetricRecord::new(Some(self.text.clone()), value));
        }
        Ok(out)
    }
}

/// Where `s` stands in `text`, when it is a slice of it.
fn located(s: &str, text: Option<&str>) -> Text {
    if let Some(text) = text {
        let start = (s.as_ptr() as usize).wrapping_sub(text.as_ptr() as usize);
        if let Some(at) = text.get(start..start.wrapping_add(s.len()))
            && at.as_ptr() == s.as_ptr()
        {
            return Text::At(start, s.len());
        }
    }
    Text::Owned(s.into())
}

/// A record's field name.
struct TextSeed<'t> {
    text: Option<&'t str>,
}

impl<'de> DeserializeSeed<'de> for TextSeed<'_> {
    type Value = Text;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Text, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for TextSeed<'_> {
    type Value = Text;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a field name")
    }
    fn visit_borrowed_str<E: de::Error>(self, s: &'de str) -> Result<Text, E> {
        Ok(located(s, self.text))
    }
    fn visit_str<E: de::Error>(self, s: &str) -> Result<Text, E> {
        Ok(Text::Owned(s.into()))
    }
}

/// A field's value: a number, string, `true`/`false` or `null` as read; an array as the tree
/// it is; an object as the tree it is, or, for a record, as its fields. `text` is the answer's
/// text the value is read from, when it is.
#[derive(Clone, Copy)]
struct FieldSeed<'t> {
    text: Option<&'t str>,
    record: bool,
}

impl<'t> FieldSeed<'t> {
    fn record(text: Option<&'t str>) -> Self {
        FieldSeed { text, record: true }
    }
}

impl<'de> DeserializeSeed<'de> for FieldSeed<'_> {
    type Value = Field;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Field, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for FieldSeed<'_> {
    type Value = Field;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Field, E> {
        Ok(Field::Int(v))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Field, E> {
        Ok(Field::UInt(v))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Field, E> {
        Ok(Field::Float(v))
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Field, E> {
        Ok(Field::Bool(v))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Field, E> {
        Ok(Field::Null)
    }
    fn visit_borrowed_str<E: de::Error>(self, s: &'de str) -> Result<Field, E> {
        Ok(Field::Str(located(s, self.text)))
    }
    fn visit_str<E: de::Error>(self, s: &str) -> Result<Field, E> {
        Ok(Field::Str(Text::Owned(s.into())))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Field, A::Error> {
        Value::deserialize(SeqAccessDeserializer::new(seq)).map(|v| Field::Tree(Box::new(v)))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Field, A::Error> {
        if !self.record {
            return Value::deserialize(MapAccessDeserializer::new(map))
                .map(|v| Field::Tree(Box::new(v)));
        }
        let mut fields: Vec<(Text, Field)> =
            Vec::with_capacity(map.size_hint().unwrap_or(8).min(64));
        while let Some(name) = map.next_key_seed(TextSeed { text: self.text })? {
            if fields.is_empty() && name.get(self.text) == RAW_VALUE_TOKEN {
                // As serde_json's tree reads an object whose first name is this token: the
                // value is the JSON its string holds, and no other field may follow (the
                // reader's end of the object refuses one).
                let inner: String = map.next_value()?;
                let tree: Value = serde_json::from_str(&inner).map_err(de::Error::custom)?;
                return Ok(Field::record_of(&tree));
            }
            let value = map.next_value_seed(FieldSeed {
                text: self.text,
                record: false,
            })?;
            fields.push((name, value));
        }
        Ok(Field::Object(fields))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn record(v: Value) -> MetricRecord {
        MetricRecord::from(&v)
    }

    /// `record`, as an answer's body carrying it is read.
    fn in_body(record: &str) -> Option<MetricRecord> {
        let body = format!("{{\"metrics\": [{record}]}}");
        MetricsResponse::from_body(body.as_bytes()).map(|mut m| m.metrics.remove(0))
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
            let text = v.to_string();
            let ways = [
                record(v.clone()),
                serde_json::from_str(&text).unwrap(),
                in_body(&text).unwrap(),
            ];
            for r in ways {
                let f = r.fields().expect("an object");
                let got = (
                    f.step,
                    f.values()
                        .map(|(k, n)| (k.to_owned(), n))
                        .collect::<Vec<_>>(),
                );
                assert_eq!(Some(got), by_tree(&v), "{v}");
                assert_eq!(r.to_value().to_string(), v.to_string());
            }
        }
        for v in [
            json!([1, {"step": 1}]),
            json!(3),
            json!("s"),
            json!(null),
            json!(-2.5),
        ] {
            assert_eq!(record(v.clone()).fields(), None, "{v}");
            let r = in_body(&v.to_string()).unwrap();
            assert_eq!(r.fields(), None, "{v}");
            assert_eq!(r.to_value(), v);
        }
    }

    #[test]
    fn a_record_a_tree_could_not_hold_is_refused_as_the_whole_answer_was() {
        let refused_by_both = |body: &str| {
            assert!(
                serde_json::from_str::<Value>(body).is_err(),
                "the reference refuses {body}"
            );
            assert!(
                serde_json::from_str::<MetricsResponse>(body).is_err(),
                "{body}"
            );
            assert!(
                MetricsResponse::from_body(body.as_bytes()).is_none(),
                "{body}"
            );
        };
        for body in [
            r#"{"metrics": [{"step": 5, "loss": 1e400}]}"#,
            r#"{"metrics": [{"step": 5, "note": "\ud800"}]}"#,
            r#"{"metrics": [{"step": 5, "x": [{"y": -1e999}]}]}"#,
            r#"{"metrics": [{"step": 5, "\ud800": 1}]}"#,
            r#"{"metrics": [[1, -1e999]]}"#,
        ] {
            refused_by_both(body);
        }
        // Nesting: both ways of reading an answer refuse exactly where its tree does, for a
        // record that is a list and for a field's value, on both sides of serde_json's limit.
        let deep = |n: usize| format!("{{\"metrics\": [{}1{}]}}", "[".repeat(n), "]".repeat(n));
        let deep_field = |n: usize| {
            format!(
                "{{\"metrics\": [{{\"step\": 1, \"x\": {}1{}}}]}}",
                "[".repeat(n),
                "]".repeat(n)
            )
        };
        for shape in [&deep as &dyn Fn(usize) -> String, &deep_field] {
            let mut seen = (false, false);
            for n in 110..140 {
                let body = shape(n);
                match serde_json::from_str::<Value>(&body) {
                    Ok(tree) => {
                        seen.0 = true;
                        let m: MetricsResponse = serde_json::from_str(&body).unwrap();
                        let fast = MetricsResponse::from_body(body.as_bytes()).unwrap();
                        assert_eq!(m.metrics[0].to_value(), tree["metrics"][0]);
                        assert_eq!(fast.metrics[0].to_value(), tree["metrics"][0]);
                    }
                    Err(_) => {
                        seen.1 = true;
                        refused_by_both(&body);
                    }
                }
            }
            assert_eq!(seen, (true, true), "the limit lies inside the range tried");
        }
    }

    #[test]
    fn an_answer_is_read_from_its_body_as_the_derived_reader_reads_it() {
        for body in [
            r#"{"metrics": [{"step": 1, "loss": 0.5}, {"step": 2, "loss": 0.25}]}"#,
            r#"  {"other": [1, {"a": "b"}], "metrics": [{"step": 1}], "more": null} "#,
            r#"{"metrics": null}"#,
            r#"{}"#,
            r#"{"metrics": []}"#,
            r#"{"metrics": [{"st\u0065p": 4, "n\u00e9": "\u00e9t\u00e9", "t": "plain"}]}"#,
        ] {
            let derived: MetricsResponse = serde_json::from_str(body).unwrap();
            let fast = MetricsResponse::from_body(body.as_bytes()).expect(body);
            assert_eq!(fast, derived, "{body}");
            let tree: Value = serde_json::from_str(body).unwrap();
            let want: Vec<String> = match &tree["metrics"] {
                Value::Array(records) => records.iter().map(Value::to_string).collect(),
                _ => Vec::new(),
            };
            let got: Vec<String> = fast
                .metrics
                .iter()
                .map(|r| r.to_value().to_string())
                .collect();
            assert_eq!(got, want, "{body}");
            assert_eq!(
                serde_json::to_value(&fast).unwrap(),
                serde_json::to_value(&derived).unwrap()
            );
        }
        // What the derived reader refuses, the body's reader leaves to it (`None`).
        for body in [
            r#"{"metrics": [], "metrics": []}"#,
            r#"{"metrics": {"step": 1}}"#,
            r#"{"metrics": 3}"#,
            r#"[{"step": 1}]"#,
            r#"{"metrics": [{"step": 1}]} x"#,
            r#"{"metrics": [{"step": 1}"#,
            "",
        ] {
            assert!(
                serde_json::from_str::<MetricsResponse>(body).is_err(),
                "{body}"
            );
            assert!(
                MetricsResponse::from_body(body.as_bytes()).is_none(),
                "{body}"
            );
        }
        assert!(MetricsResponse::from_body(b"{\"metrics\": [{\"s\": \"\xff\"}]}").is_none());
        // Names and strings stand in the body's text unless they were written with escapes.
        let m = MetricsResponse::from_body(
            br#"{"metrics": [{"step": 1, "a\u0062": "x", "t": "y\n"}]}"#,
        )
        .unwrap();
        let Field::Object(fields) = &m.metrics[0].value else {
            panic!("an object")
        };
        let kinds: Vec<(bool, bool)> = fields
            .iter()
            .map(|(k, v)| {
                (
                    matches!(k, Text::At(..)),
                    matches!(v, Field::Str(Text::At(..))),
                )
            })
            .collect();
        assert_eq!(kinds, [(true, false), (false, true), (true, false)]);
        assert_eq!(
            m.metrics[0].to_value(),
            json!({"step": 1, "ab": "x", "t": "y\n"})
        );
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
            Just(RAW_VALUE_TOKEN.to_string()),
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
            // Strings holding JSON, for a record whose first name is the raw-value token.
            Just(r#""{\"step\": 2, \"loss\": 1.5, \"loss\": 3}""#.to_string()),
            Just(r#""[1, 2]""#.to_string()),
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
        /// The one pass that reads a record agrees with serde_json's tree, read alone and
        /// from an answer's body: a record is kept exactly when the tree reads it, and then its
        /// step and fields are the tree's, and so is the tree it makes.
        #[test]
        fn one_pass_agrees_with_the_tree(text in json_text()) {
            let tree = serde_json::from_str::<Value>(&text);
            let alone = serde_json::from_str::<MetricRecord>(&text);
            let from_body = in_body(&text);
            proptest::prop_assert_eq!(alone.is_ok(), tree.is_ok(), "{}", text);
            proptest::prop_assert_eq!(from_body.is_some(), tree.is_ok(), "{}", text);
            if let (Ok(alone), Some(from_body), Ok(v)) = (alone, from_body, tree) {
                for r in [alone, from_body] {
                    let got = r.fields().map(|f| {
                        (f.step, f.values().map(|(k, n)| (k.to_owned(), n)).collect::<Vec<_>>())
                    });
                    proptest::prop_assert_eq!(got, by_tree_listing_twice(&text, &v), "{}", text);
                    // Compared as text: maps compare equal whatever their order.
                    proptest::prop_assert_eq!(r.to_value().to_string(), v.to_string());
                }
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
        if pairs.first().is_some_and(|(k, _)| k == RAW_VALUE_TOKEN) {
            // The tree is the JSON the token's string holds, read on its own.
            return by_tree(v);
        }
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
            f.values().collect::<Vec<_>>(),
            [("loss", Some(1.0)), ("loss", None)]
        );
    }

    #[test]
    fn a_record_led_by_serde_jsons_raw_value_token_reads_as_its_tree() {
        let token = RAW_VALUE_TOKEN;
        for (record, read) in [
            (format!(r#"{{"{token}": "[1]"}}"#), true),
            (
                format!(r#"{{"{token}": "{{\"step\": 7, \"loss\": 0.5}}"}}"#),
                true,
            ),
            (
                r#"{"$serde_json::private::Raw\u0056alue": "{\"step\": 8}"}"#.to_string(),
                true,
            ),
            (format!(r#"{{"a": 1, "{token}": "[1]"}}"#), true),
            (format!(r#"{{"{token}": 5}}"#), false),
            (format!(r#"{{"{token}": "[1]", "a": 2}}"#), false),
            (format!(r#"{{"{token}": "not json"}}"#), false),
        ] {
            let body = format!(r#"{{"metrics": [{record}]}}"#);
            let tree = serde_json::from_str::<Value>(&body);
            let derived = serde_json::from_str::<MetricsResponse>(&body);
            let fast = MetricsResponse::from_body(body.as_bytes());
            assert_eq!(tree.is_ok(), read, "the tree's reading of {record}");
            assert_eq!(derived.is_ok(), tree.is_ok(), "{record}");
            assert_eq!(fast.is_some(), tree.is_ok(), "{record}");
            if let (Ok(tree), Ok(derived), Some(fast)) = (tree, derived, fast) {
                let want = &tree["metrics"][0];
                for r in [&derived.metrics[0], &fast.metrics[0]] {
                    assert_eq!(r.to_value().to_string(), want.to_string(), "{record}");
                    assert_eq!(
                        r.fields().map(|f| f.step),
                        want.as_object()
                            .map(|o| o.get("step").and_then(Value::as_i64)),
                        "{record}"
                    );
                }
            }
        }
    }

    /// Platforms write a float in its shortest form (Python's `json` writes `repr`, as serde_json
    /// writes a double): a record must read back the very double each names, so that a record
    /// shown, and a file written from records, keep every digit sent. serde_json without its
    /// `float_roundtrip` feature (the workspace turns it on) misreads about one such number in
    /// eleven: these four among them.
    #[test]
    fn a_number_sent_in_its_shortest_form_reads_back_digit_for_digit() {
        for sent in [
            "911.6760726776201",
            "1053.6973745956245",
            "1710.1055920586393",
            "1.7179387607739e-19",
        ] {
            let body = format!(r#"{{"metrics": [{{"step": 1, "loss": {sent}}}]}}"#);
            let read = MetricsResponse::from_body(body.as_bytes()).unwrap();
            let loss = read.metrics[0].fields().unwrap().values().next().unwrap().1;
            assert_eq!(loss, Some(sent.parse::<f64>().unwrap()), "{sent}");
            assert_eq!(read.metrics[0].to_value()["loss"].to_string(), sent);
        }
    }

    /// Every finite double: normal, subnormal and both zeros, of either sign.
    fn finite() -> proptest::num::f64::Any {
        use proptest::num::f64::{NEGATIVE, NORMAL, POSITIVE, SUBNORMAL, ZERO};
        POSITIVE | NEGATIVE | NORMAL | SUBNORMAL | ZERO
    }

    proptest::proptest! {
        /// Any finite double, written in its shortest form, reads back as itself: from an
        /// answer's body, read alone, and as a tree.
        #[test]
        fn every_double_reads_back_as_itself(x in finite()) {
            let sent = serde_json::to_string(&x).unwrap();
            let record = format!(r#"{{"step": 1, "x": {sent}}}"#);
            let from_body = in_body(&record).unwrap();
            let alone: MetricRecord = serde_json::from_str(&record).unwrap();
            let tree: Value = serde_json::from_str(&record).unwrap();
            for r in [from_body, alone] {
                let got = r.fields().unwrap().values().next().unwrap().1.unwrap();
                proptest::prop_assert_eq!(got.to_bits(), x.to_bits(), "{}", sent);
            }
            let in_tree = tree["x"].as_f64().unwrap();
            proptest::prop_assert_eq!(in_tree.to_bits(), x.to_bits(), "{}", sent);
        }
    }

    #[test]
    fn records_compare_as_json() {
        let body = r#"{"metrics": [{"step": 1,  "reward": 0.5}, {"step":2,"reward":0.7}]}"#;
        let m: MetricsResponse = serde_json::from_str(body).unwrap();
        assert_eq!(MetricsResponse::from_body(body.as_bytes()), Some(m.clone()));
        assert_eq!(format!("{:?}", m.metrics[0]), r#"{"step":1,"reward":0.5}"#);
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
