//! A JSON log record's fields that `get_logs` shows (`logs::render_line`), read in one pass
//! over the line without building its tree.
//!
//! A tree of every JSON line shown cost a map, a key string per field and a hash of each: 4 %
//! of the thread's samples in a profile of a 5 000-line tail (docs/BENCHMARKS.md, twenty-first
//! pass). Here each shown field keeps only its value, a string borrowed from the line when it
//! has no escape; any other field is still read as a tree and dropped, so that a line is a
//! record exactly when serde_json reads it whole as a tree. A name sent twice keeps its last
//! value, as the tree does. A property test holds the fields to the tree's on generated lines.
use std::borrow::Cow;
use std::fmt;

use factory_platform::wire::RAW_VALUE_TOKEN;
use serde::Deserialize;
use serde::de::value::{MapAccessDeserializer, SeqAccessDeserializer};
use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

/// A field's value: a string as its text, anything else as its tree.
#[derive(Debug, PartialEq)]
pub(crate) enum Shown<'a> {
    Str(Cow<'a, str>),
    Tree(Value),
}

impl Shown<'_> {
    /// The text of a string, as a tree's `as_str` gives it.
    pub(crate) fn as_str(&self) -> Option<&str> {
        match self {
            Shown::Str(s) => Some(s),
            Shown::Tree(Value::String(s)) => Some(s),
            Shown::Tree(_) => None,
        }
    }
}

impl fmt::Display for Shown<'_> {
    /// As the value's tree displays: compact JSON, a string quoted and escaped.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            // Serialising a str cannot fail.
            Shown::Str(s) => match serde_json::to_string(s.as_ref()) {
                Ok(json) => f.write_str(&json),
                Err(_) => Ok(()),
            },
            Shown::Tree(v) => write!(f, "{v}"),
        }
    }
}

/// The fields of a log record `render_line` reads, each the last sent under its name.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct LogRecord<'a> {
    pub(crate) timestamp: Option<Shown<'a>>,
    pub(crate) level: Option<Shown<'a>>,
    pub(crate) tag: Option<Shown<'a>>,
    /// `type`.
    pub(crate) kind: Option<Shown<'a>>,
    pub(crate) message: Option<Shown<'a>>,
    pub(crate) exception: Option<Shown<'a>>,
    pub(crate) step: Option<Shown<'a>>,
    pub(crate) total: Option<Shown<'a>>,
}

impl<'a> LogRecord<'a> {
    /// `line`'s fields when serde_json reads it whole as a JSON object; `None` when it does
    /// not (not JSON, not an object, trailing text, a number out of range or a lone surrogate
    /// anywhere in it, nesting past serde_json's limit).
    pub(crate) fn read(line: &'a str) -> Option<LogRecord<'a>> {
        let mut de = serde_json::Deserializer::from_str(line);
        let record = de.deserialize_any(RecordVisitor).ok()??;
        de.end().ok()?;
        Some(record)
    }

    /// The record a tree holds: its shown fields, when it is an object.
    fn of_tree(tree: Value) -> Option<LogRecord<'a>> {
        let Value::Object(map) = tree else {
            return None;
        };
        let mut record = LogRecord::default();
        for (name, value) in map {
            if let Some(slot) = record.slot(&name) {
                *slot = Some(Shown::Tree(value));
            }
        }
        Some(record)
    }

    /// Where the field `name` is kept, when it is one `render_line` reads.
    fn slot(&mut self, name: &str) -> Option<&mut Option<Shown<'a>>> {
        Some(match name {
            "timestamp" => &mut self.timestamp,
            "level" => &mut self.level,
            "tag" => &mut self.tag,
            "type" => &mut self.kind,
            "message" => &mut self.message,
            "exception" => &mut self.exception,
            "step" => &mut self.step,
            "total" => &mut self.total,
            _ => return None,
        })
    }
}

/// The line's value: an object's shown fields, or `None` for any other JSON.
struct RecordVisitor;

impl<'de> Visitor<'de> for RecordVisitor {
    type Value = Option<LogRecord<'de>>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut record = LogRecord::default();
        let mut first = true;
        while let Some(name) = map.next_key::<Shown<'de>>()? {
            if std::mem::take(&mut first) && name.as_str() == Some(RAW_VALUE_TOKEN) {
                // As serde_json's tree reads such an object: the value is the JSON its string
                // holds, and no other field may follow (the reader's end of the object refuses
                // one).
                let inner: String = map.next_value()?;
                let tree: Value = serde_json::from_str(&inner).map_err(de::Error::custom)?;
                return Ok(LogRecord::of_tree(tree));
            }
            match name.as_str().and_then(|n| record.slot(n)) {
                Some(slot) => *slot = Some(map.next_value::<Shown<'de>>()?),
                // Read as the tree reads it, so that what fails the tree fails here.
                None => drop(map.next_value::<Value>()?),
            }
        }
        Ok(Some(record))
    }

    // Any other JSON is read whole (as the tree would be) and is no record.
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
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        Value::deserialize(SeqAccessDeserializer::new(seq)).map(|_| None)
    }
}

impl<'de> Deserialize<'de> for Shown<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ShownVisitor)
    }
}

struct ShownVisitor;

impl<'de> Visitor<'de> for ShownVisitor {
    type Value = Shown<'de>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_borrowed_str<E: de::Error>(self, s: &'de str) -> Result<Self::Value, E> {
        Ok(Shown::Str(Cow::Borrowed(s)))
    }
    fn visit_str<E: de::Error>(self, s: &str) -> Result<Self::Value, E> {
        Ok(Shown::Str(Cow::Owned(s.to_owned())))
    }
    fn visit_string<E: de::Error>(self, s: String) -> Result<Self::Value, E> {
        Ok(Shown::Str(Cow::Owned(s)))
    }
    fn visit_bool<E: de::Error>(self, b: bool) -> Result<Self::Value, E> {
        Ok(Shown::Tree(Value::Bool(b)))
    }
    fn visit_i64<E: de::Error>(self, n: i64) -> Result<Self::Value, E> {
        Ok(Shown::Tree(Value::from(n)))
    }
    fn visit_u64<E: de::Error>(self, n: u64) -> Result<Self::Value, E> {
        Ok(Shown::Tree(Value::from(n)))
    }
    fn visit_f64<E: de::Error>(self, n: f64) -> Result<Self::Value, E> {
        Ok(Shown::Tree(Value::from(n)))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(Shown::Tree(Value::Null))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        Value::deserialize(SeqAccessDeserializer::new(seq)).map(Shown::Tree)
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        Value::deserialize(MapAccessDeserializer::new(map)).map(Shown::Tree)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A shown field as an entry uses it: its text when it is a string, and how it displays.
    type Seen = (Option<String>, String);

    /// The reference: the line read as a tree, each shown field as the tree holds it.
    fn by_tree(line: &str) -> Option<Vec<(&'static str, Option<Seen>)>> {
        let Value::Object(map) = serde_json::from_str::<Value>(line).ok()? else {
            return None;
        };
        Some(
            NAMES
                .iter()
                .map(|&n| {
                    let seen = map
                        .get(n)
                        .map(|v| (v.as_str().map(str::to_owned), v.to_string()));
                    (n, seen)
                })
                .collect(),
        )
    }

    /// What [`LogRecord::read`] makes of the line, in the reference's terms.
    fn by_record(line: &str) -> Option<Vec<(&'static str, Option<Seen>)>> {
        let mut r = LogRecord::read(line)?;
        Some(
            NAMES
                .iter()
                .map(|&n| {
                    let shown = r.slot(n).and_then(Option::take);
                    (
                        n,
                        shown.map(|s| (s.as_str().map(str::to_owned), s.to_string())),
                    )
                })
                .collect(),
        )
    }

    const NAMES: [&str; 8] = [
        "timestamp",
        "level",
        "tag",
        "type",
        "message",
        "exception",
        "step",
        "total",
    ];

    #[test]
    fn a_record_reads_its_shown_fields_and_borrows_plain_strings() {
        let line = r#"{"timestamp":"2026-12-01T10:11:12Z","level":"INFO","message":"a \"q\"","tag":"trainer","step":3,"extra":{"x":[1]}}"#;
        let r = LogRecord::read(line).unwrap();
        assert!(matches!(r.timestamp, Some(Shown::Str(Cow::Borrowed(_)))));
        assert!(matches!(r.message, Some(Shown::Str(Cow::Owned(ref m))) if m == "a \"q\""));
        assert_eq!(r.step.as_ref().unwrap().to_string(), "3");
        assert_eq!(r.message.as_ref().unwrap().to_string(), r#""a \"q\"""#);
        assert_eq!(r.kind, None);
    }

    #[test]
    fn a_line_the_tree_refuses_is_no_record() {
        for line in [
            "{",
            "[1]",
            r#""s""#,
            r#"{"level":"INFO"} x"#,
            r#"{"level":"INFO","n":1e400}"#,
            r#"{"level":"INFO","other":"\ud800"}"#,
            r#"{"level":"\ud800"}"#,
        ] {
            assert_eq!(by_tree(line), None, "{line}");
            assert_eq!(LogRecord::read(line), None, "{line}");
        }
    }

    #[test]
    fn nesting_is_limited_where_the_tree_limits_it() {
        let mut limits = 0;
        for name in ["x", "message", "step"] {
            for depth in 120..132 {
                let line = format!(
                    r#"{{"level":"INFO","{name}":{}{}}}"#,
                    "[".repeat(depth),
                    "]".repeat(depth)
                );
                let tree = serde_json::from_str::<Value>(&line).is_ok();
                assert_eq!(LogRecord::read(&line).is_some(), tree, "{name} at {depth}");
                limits += usize::from(!tree);
            }
        }
        // The limit falls inside the depths tried, under each name.
        assert!((3..36).contains(&limits), "{limits}");
    }

    #[test]
    fn a_name_sent_twice_keeps_its_last_value() {
        let line = r#"{"level":"INFO","level":{"a":1},"tag":1,"tag":"t"}"#;
        assert_eq!(by_record(line), by_tree(line));
        let r = LogRecord::read(line).unwrap();
        assert_eq!(r.level.as_ref().unwrap().as_str(), None);
        assert_eq!(r.tag.as_ref().unwrap().as_str(), Some("t"));
    }

    #[test]
    fn a_line_led_by_serde_jsons_raw_value_token_reads_as_its_tree() {
        let inner = r#""{\"timestamp\":\"t\",\"level\":\"ERROR\",\"message\":\"boom\"}""#;
        let escaped = RAW_VALUE_TOKEN.replace('$', "\\u0024");
        for token in [RAW_VALUE_TOKEN, escaped.as_str()] {
            let line = format!(r#"{{"{token}":{inner}}}"#);
            assert_eq!(by_record(&line), by_tree(&line), "{line}");
            let r = LogRecord::read(&line).unwrap();
            assert_eq!(r.level.unwrap().as_str(), Some("ERROR"), "{line}");
            // Its value must be a string holding JSON, and no field may follow it.
            for bad in [
                format!(r#"{{"{token}":1,"level":"INFO"}}"#),
                format!(r#"{{"{token}":{inner},"level":"INFO"}}"#),
            ] {
                assert_eq!(by_tree(&bad), None, "{bad}");
                assert_eq!(LogRecord::read(&bad), None, "{bad}");
            }
            // Anywhere but first, it is a field like any other.
            let later = format!(r#"{{"level":"INFO","{token}":1}}"#);
            assert_eq!(by_record(&later), by_tree(&later), "{later}");
            assert!(LogRecord::read(&later).is_some());
        }
    }

    /// A JSON value as log lines hold them, and some that no log line holds.
    fn value() -> impl Strategy<Value = String> {
        let leaf = prop_oneof![
            Just(r#""INFO""#.to_string()),
            Just(r#""2026-12-01T10:11:12.345Z""#.to_string()),
            Just(r#""a\nb \"q\" \u00e9 \ud83d\ude00""#.to_string()),
            Just(r#""\ud800""#.to_string()),
            Just(r#""progress""#.to_string()),
            Just("3".to_string()),
            Just("-0".to_string()),
            Just("2.5e-3".to_string()),
            Just("1e400".to_string()),
            Just("18446744073709551616".to_string()),
            Just("true".to_string()),
            Just("null".to_string()),
            Just(r#""{\"level\":\"INFO\",\"timestamp\":\"t\",\"step\":-0}""#.to_string()),
            Just(r#""[1]""#.to_string()),
        ];
        leaf.prop_recursive(3, 12, 3, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..3)
                    .prop_map(|v| format!("[{}]", v.join(","))),
                proptest::collection::vec(inner, 0..3).prop_map(|v| {
                    let fields: Vec<String> = v
                        .iter()
                        .enumerate()
                        .map(|(i, x)| format!(r#""k{i}":{x}"#))
                        .collect();
                    format!("{{{}}}", fields.join(","))
                }),
            ]
        })
    }

    /// A line: an object of shown and other names (some sent twice, some escaped), now and then
    /// broken.
    fn line() -> impl Strategy<Value = String> {
        let name = prop_oneof![
            Just("timestamp"),
            Just("level"),
            Just("tag"),
            Just("type"),
            Just("message"),
            Just("exception"),
            Just("step"),
            Just("total"),
            Just("t\\u0061g"),
            Just("other"),
            Just("$serde_json::private::RawValue"),
            Just("\\u0024serde_json::private::RawValue"),
        ];
        (
            proptest::collection::vec((name, value()), 0..7),
            prop_oneof![Just(""), Just(" "), Just(" x"), Just("}")],
        )
            .prop_map(|(fields, tail)| {
                let fields: Vec<String> = fields
                    .iter()
                    .map(|(n, v)| format!(r#""{n}":{v}"#))
                    .collect();
                format!("{{{}}}{tail}", fields.join(","))
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2048))]
        /// The one pass agrees with the tree: a line is a record exactly when the tree reads
        /// it as an object, and then each shown field is the tree's.
        #[test]
        fn one_pass_agrees_with_the_tree(line in line()) {
            prop_assert_eq!(by_record(&line), by_tree(&line), "{}", line);
        }
    }
}
