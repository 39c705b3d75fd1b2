//! Pydantic-v2 lax-mode coercions (rule L7 of the reference) over TOML values, and small path
//! helpers. TOML has no null: the string `"None"` stands for it (rule L3).

use toml::{Table, Value};

/// Whether `v` is the TOML spelling of null.
pub(crate) fn is_none(v: &Value) -> bool {
    matches!(v, Value::String(s) if s == "None")
}

/// Why a value is not an integer, in pydantic's words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum IntErr {
    /// A float with a fractional part.
    Fraction,
    /// A string that does not parse.
    Parse,
    /// Any other type.
    Type,
}

impl IntErr {
    /// The pydantic message.
    pub(crate) fn message(self) -> &'static str {
        match self {
            IntErr::Fraction => {
                "Input should be a valid integer, got a number with a fractional part"
            }
            IntErr::Parse => {
                "Input should be a valid integer, unable to parse string as an integer"
            }
            IntErr::Type => "Input should be a valid integer",
        }
    }
}

fn int_from_f64(f: f64) -> Result<i64, IntErr> {
    if !f.is_finite() {
        return Err(IntErr::Fraction);
    }
    if f.fract() != 0.0 {
        return Err(IntErr::Fraction);
    }
    if f.abs() > 9.0e18 {
        return Err(IntErr::Type);
    }
    Ok(f as i64)
}

/// Lax int: ints, integral floats, bools, and strings holding either.
pub(crate) fn as_int(v: &Value) -> Result<i64, IntErr> {
    match v {
        Value::Integer(i) => Ok(*i),
        Value::Float(f) => int_from_f64(*f),
        Value::Boolean(b) => Ok(i64::from(*b)),
        Value::String(s) => {
            let t = s.trim();
            if let Ok(i) = t.parse::<i64>() {
                return Ok(i);
            }
            match t.parse::<f64>() {
                Ok(f) if t.contains('.') && f.is_finite() => {
                    int_from_f64(f).map_err(|_| IntErr::Parse)
                }
                _ => Err(IntErr::Parse),
            }
        }
        _ => Err(IntErr::Type),
    }
}

/// Lax float: numbers, bools and numeric strings.
pub(crate) fn as_float(v: &Value) -> Option<f64> {
    match v {
        Value::Integer(i) => Some(*i as f64),
        Value::Float(f) => Some(*f),
        Value::Boolean(b) => Some(if *b { 1.0 } else { 0.0 }),
        Value::String(s) => s.trim().parse::<f64>().ok(),
        _ => None,
    }
}

/// Lax bool: bools, 0/1, and the usual yes/no words.
pub(crate) fn as_bool(v: &Value) -> Option<bool> {
    match v {
        Value::Boolean(b) => Some(*b),
        Value::Integer(0) => Some(false),
        Value::Integer(1) => Some(true),
        Value::Float(f) if *f == 0.0 => Some(false),
        Value::Float(f) if *f == 1.0 => Some(true),
        Value::String(s) => match s.trim().to_ascii_lowercase().as_str() {
            "0" | "off" | "f" | "false" | "n" | "no" => Some(false),
            "1" | "on" | "t" | "true" | "y" | "yes" => Some(true),
            _ => None,
        },
        _ => None,
    }
}

/// `base.key`, or `key` at the root.
pub(crate) fn join(base: &str, key: &str) -> String {
    if base.is_empty() {
        key.to_string()
    } else {
        let mut s = String::with_capacity(base.len() + key.len() + 1);
        s.push_str(base);
        s.push('.');
        s.push_str(key);
        s
    }
}

/// The value at a dotted path (numeric segments index arrays).
pub(crate) fn get<'a>(root: &'a Table, path: &str) -> Option<&'a Value> {
    let mut segs = path.split('.');
    let first = segs.next()?;
    let mut cur = root.get(first)?;
    for seg in segs {
        cur = match cur {
            Value::Table(t) => t.get(seg)?,
            Value::Array(a) => a.get(seg.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    Some(cur)
}

/// The parent table of a dotted path (created on the way when `create`), and the last key.
pub(crate) fn parent_mut<'a>(
    root: &'a mut Table,
    path: &str,
    create: bool,
) -> Option<(&'a mut Table, String)> {
    let mut segs: Vec<&str> = path.split('.').collect();
    let last = segs.pop()?.to_string();
    let mut cur = root;
    for seg in segs {
        if create && !cur.contains_key(seg) {
            cur.insert(seg.to_string(), Value::Table(Table::new()));
        }
        cur = match cur.get_mut(seg)? {
            Value::Table(t) => t,
            _ => return None,
        };
    }
    Some((cur, last))
}

/// Levenshtein distance, for "did you mean" hints.
pub(crate) fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for (i, ca) in a.chars().enumerate() {
        cur[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != *cb);
            cur[j + 1] = (prev[j] + cost).min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lax_int_follows_pydantic() {
        assert_eq!(as_int(&Value::String("64".into())), Ok(64));
        assert_eq!(as_int(&Value::Float(64.0)), Ok(64));
        assert_eq!(as_int(&Value::Float(64.5)), Err(IntErr::Fraction));
        assert_eq!(as_int(&Value::Boolean(true)), Ok(1));
        assert_eq!(as_int(&Value::String("large".into())), Err(IntErr::Parse));
        assert_eq!(as_int(&Value::Float(f64::NAN)), Err(IntErr::Fraction));
    }

    #[test]
    fn lax_bool_accepts_words() {
        assert_eq!(as_bool(&Value::String("yes".into())), Some(true));
        assert_eq!(as_bool(&Value::String("Off".into())), Some(false));
        assert_eq!(as_bool(&Value::String("maybe".into())), None);
        assert_eq!(as_bool(&Value::Integer(2)), None);
    }

    #[test]
    fn distance_counts_edits() {
        assert_eq!(edit_distance("group_sise", "group_size"), 1);
        assert_eq!(edit_distance("", "abc"), 3);
    }
}
