//! Mutation cases generated from the field tables of the reference's Appendix A (RL) and A2
//! (SFT), read from `../shared/reference/prime-rl-config.md` — not from our own tables, so a
//! key, type, bound or default encoded wrongly shows up here. For every field across the tree:
//! a wrong type and every out-of-range bound must be an error at that field's path, its
//! default (scalars) and `"None"` (nullable fields) must not be; every table that forbids
//! extras must refuse an unknown key.

use std::collections::HashMap;
use std::path::PathBuf;

use factory_config::{Options, Report, Severity, validate_table};
use toml::{Table, Value};

fn reference() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/reference");
    assert!(
        dir.is_dir(),
        "the shared reference is missing: expected {}",
        dir.display()
    );
    dir
}

#[derive(Debug, Clone)]
struct Row {
    key: String,
    ty: String,
    default: String,
    constraints: String,
}

#[derive(Debug, Clone)]
struct Heading {
    mode: &'static str,
    path: String,
    variant: Option<String>,
    same_as: Option<String>,
    extras_allowed: bool,
    rows: Vec<Row>,
}

fn between<'a>(s: &'a str, open: &str, close: &str) -> Option<&'a str> {
    let start = s.find(open)? + open.len();
    let end = s[start..].find(close)? + start;
    Some(&s[start..end])
}

fn parse_appendix() -> Vec<Heading> {
    let text = std::fs::read_to_string(reference().join("prime-rl-config.md")).expect("reference");
    let start = text.find("## Appendix A —").expect("appendix A");
    let end = text.find("## Appendix B").expect("appendix B");
    let mut out: Vec<Heading> = Vec::new();
    for line in text[start..end].lines() {
        if let Some(rest) = line.strip_prefix("#### ") {
            let mode = if rest.starts_with("RL:") { "rl" } else { "sft" };
            let path = between(rest, "`", "`").unwrap_or_default();
            let path = if path == "<root>" {
                String::new()
            } else {
                path.to_string()
            };
            let variant = rest.find("variant `type = \"").map(|i| {
                between(&rest[i..], "\"", "\"")
                    .unwrap_or_default()
                    .to_string()
            });
            let same_as = rest.find("same shape as `").map(|i| {
                between(&rest[i..], "`", "`")
                    .unwrap_or_default()
                    .to_string()
            });
            out.push(Heading {
                mode,
                path,
                variant,
                same_as,
                extras_allowed: rest.contains("unknown keys ALLOWED"),
                rows: Vec::new(),
            });
        } else if line.starts_with("| `")
            && let Some(h) = out.last_mut()
        {
            let cols: Vec<String> = line
                .replace("\\|", "¦")
                .split('|')
                .map(|c| c.trim().replace('¦', "|"))
                .collect();
            if cols.len() >= 5 {
                h.rows.push(Row {
                    key: cols[1].trim_matches('`').to_string(),
                    ty: cols[2].clone(),
                    default: cols[3].clone(),
                    constraints: cols[4].clone(),
                });
            }
        }
    }
    // "same shape as": copy the rows of the referenced heading (same mode and variant).
    let snapshot = out.clone();
    for h in &mut out {
        if let Some(src) = &h.same_as {
            let found = snapshot.iter().find(|o| {
                o.mode == h.mode && &o.path == src && o.variant == h.variant && !o.rows.is_empty()
            });
            if let Some(o) = found {
                h.rows = o.rows.clone();
                h.extras_allowed = o.extras_allowed;
            }
        }
    }
    out
}

fn base(mode: &str) -> Table {
    let dir = reference().join("prime-rl-examples");
    let text = if mode == "rl" {
        let mut t = std::fs::read_to_string(dir.join("reverse-text_rl.toml")).expect("example");
        t.push_str("\n[orchestrator.eval]\n[[orchestrator.eval.source]]\nname = \"rt-eval\"\n[orchestrator.eval.source.env.taskset]\nid = \"reverse-text\"\nsplit = \"test\"\n");
        t
    } else {
        std::fs::read_to_string(dir.join("reverse-text_sft.toml")).expect("example")
    };
    text.parse().expect("base parses")
}

/// Per mode: heading paths that are lists of tables / dicts of tables (from parent rows).
fn containers(headings: &[Heading]) -> (Vec<String>, Vec<String>) {
    let (mut lists, mut dicts) = (Vec::new(), Vec::new());
    for h in headings {
        for r in &h.rows {
            let p = if h.path.is_empty() {
                r.key.clone()
            } else {
                format!("{}.{}", h.path, r.key)
            };
            if r.ty.starts_with("list[") && r.ty.contains("Config]") {
                lists.push(p);
            } else if r.ty.starts_with("dict[str, ") && r.ty.contains("Config]") {
                dicts.push(p);
            }
        }
    }
    (lists, dicts)
}

/// The concrete document path of a heading path: list items get `.0`, dict entries `.k`.
fn resolve(path: &str, lists: &[String], dicts: &[String]) -> String {
    let mut out = String::new();
    let mut prefix = String::new();
    for seg in path.split('.').filter(|s| !s.is_empty()) {
        prefix = if prefix.is_empty() {
            seg.to_string()
        } else {
            format!("{prefix}.{seg}")
        };
        if !out.is_empty() {
            out.push('.');
        }
        out.push_str(seg);
        if lists.contains(&prefix) {
            out.push_str(".0");
        } else if dicts.contains(&prefix) {
            out.push_str(".k");
        }
    }
    out
}

fn set(doc: &mut Table, path: &str, value: Value) {
    let segs: Vec<&str> = path.split('.').collect();
    let Some((last, parents)) = segs.split_last() else {
        return;
    };
    let mut cur: &mut Table = doc;
    let mut i = 0;
    while i < parents.len() {
        let seg = parents[i];
        let entry = cur
            .entry(seg.to_string())
            .or_insert_with(|| Value::Table(Table::new()));
        if !entry.is_table() && !entry.is_array() {
            *entry = Value::Table(Table::new());
        }
        cur = match entry {
            Value::Table(t) => t,
            Value::Array(items) => {
                // The next segment is the index (always 0 here).
                i += 1;
                if items.is_empty() {
                    items.push(Value::Table(Table::new()));
                }
                match items.get_mut(0) {
                    Some(Value::Table(t)) => t,
                    _ => return,
                }
            }
            _ => return,
        };
        i += 1;
    }
    cur.insert((*last).to_string(), value);
}

fn errors_at(report: &Report, path: &str) -> Vec<String> {
    report
        .with_severity(Severity::Error)
        .filter(|f| f.path == path && !f.message.starts_with("Hosted"))
        .map(|f| f.message.clone())
        .collect()
}

fn class(ty: &str) -> &'static str {
    let t = ty.trim_end_matches(" | null");
    if t.contains("Config") || t.contains("Tier") {
        "table"
    } else if t == "int" {
        "int"
    } else if t == "float" {
        "float"
    } else if t == "bool" {
        "bool"
    } else if t == "str" || t.starts_with("path(") {
        "str"
    } else if t.starts_with("int | \"") {
        "int_or"
    } else if t.starts_with('"') {
        "literal"
    } else if t.starts_with("list[") {
        "list"
    } else if t.starts_with("dict[") {
        "dict"
    } else {
        "other"
    }
}

fn default_value(cls: &str, d: &str) -> Option<Value> {
    match cls {
        "int" | "int_or" => d.parse::<i64>().ok().map(Value::Integer),
        "float" => d.parse::<f64>().ok().map(Value::Float),
        "bool" => match d {
            "true" => Some(Value::Boolean(true)),
            "false" => Some(Value::Boolean(false)),
            _ => None,
        },
        "str" | "literal" => d
            .strip_prefix('"')
            .and_then(|s| s.strip_suffix('"'))
            .filter(|s| !s.contains('\\'))
            .map(|s| Value::String(s.to_string())),
        _ => None,
    }
}

fn out_of_range(cls: &str, constraints: &str) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    for c in constraints.split(',').map(str::trim) {
        let (op, n) = if let Some(n) = c.strip_prefix(">=") {
            (">=", n)
        } else if let Some(n) = c.strip_prefix("<=") {
            ("<=", n)
        } else if let Some(n) = c.strip_prefix('>') {
            (">", n)
        } else if let Some(n) = c.strip_prefix('<') {
            ("<", n)
        } else {
            continue;
        };
        let Ok(x) = n.parse::<f64>() else { continue };
        let bad = match (op, cls) {
            (">=", "int") => Value::Integer(x as i64 - 1),
            (">=", _) => Value::Float(x - 0.5),
            ("<=", "int") => Value::Integer(x as i64 + 1),
            ("<=", _) => Value::Float(x + 0.5),
            (_, "int") => Value::Integer(x as i64),
            _ => Value::Float(x),
        };
        out.push((c.to_string(), bad));
    }
    out
}

#[test]
fn mutations_from_the_appendix_field_tables() {
    let headings = parse_appendix();
    assert!(headings.len() > 180, "parsed {} headings", headings.len());
    let mut counts: HashMap<&str, usize> = HashMap::new();
    let mut failures = Vec::new();
    let opts = Options::default();
    for mode in ["rl", "sft"] {
        let hs: Vec<&Heading> = headings.iter().filter(|h| h.mode == mode).collect();
        let owned: Vec<Heading> = hs.iter().map(|h| (*h).clone()).collect();
        let (lists, dicts) = containers(&owned);
        let mut variants: Vec<(String, String)> = Vec::new();
        for h in hs {
            if let Some(tag) = &h.variant {
                variants.retain(|(p, _)| !(p == &h.path || p.starts_with(&format!("{}.", h.path))));
                variants.push((h.path.clone(), tag.clone()));
            }
            let prep = |doc: &mut Table| {
                for (p, tag) in &variants {
                    if h.path == *p || h.path.starts_with(&format!("{p}.")) {
                        set(
                            doc,
                            &format!("{}.type", resolve(p, &lists, &dicts)),
                            Value::String(tag.clone()),
                        );
                    }
                }
            };
            let table = resolve(&h.path, &lists, &dicts);
            let at = |key: &str| {
                if table.is_empty() {
                    key.to_string()
                } else {
                    format!("{table}.{key}")
                }
            };
            let mut run = |kind: &'static str, key: &str, value: Value, expect_error: bool| {
                let mut doc = base(mode);
                prep(&mut doc);
                let path = at(key);
                set(&mut doc, &path, value.clone());
                let report = validate_table(doc, &opts);
                let errs = errors_at(&report, &path);
                *counts.entry(kind).or_default() += 1;
                if expect_error == errs.is_empty() {
                    failures.push(format!(
                        "[{mode}] {kind}: {path} = {value} → {}",
                        if expect_error {
                            "no error at that path".to_string()
                        } else {
                            format!("unexpected errors {errs:?}")
                        }
                    ));
                }
            };
            for r in &h.rows {
                if r.key == "type" {
                    continue;
                }
                let cls = class(&r.ty);
                let nullable = r.ty.ends_with("| null");
                let wrong = match cls {
                    "int" | "float" => Some(Value::String("not-a-number".into())),
                    "bool" => Some(Value::String("maybe".into())),
                    "str" => Some(Value::Integer(12345)),
                    "literal" | "int_or" => Some(Value::String("NOT_A_CHOICE".into())),
                    "list" => Some(Value::String("x".into())),
                    "dict" | "table" => Some(Value::Integer(12345)),
                    _ => None,
                };
                if let Some(w) = wrong {
                    run("wrong_type", &r.key, w, true);
                }
                for (_, bad) in out_of_range(cls, &r.constraints) {
                    run("out_of_range", &r.key, bad, true);
                }
                if let Some(d) = default_value(cls, &r.default) {
                    run("default_accepted", &r.key, d, false);
                }
                // A top-level `model = "None"` is a string model: the CLI refuses it as the
                // retired shared-LoRA shape before the schema sees it.
                if nullable && !(mode == "rl" && h.path.is_empty() && r.key == "model") {
                    run("none_accepted", &r.key, Value::String("None".into()), false);
                }
            }
            if !h.extras_allowed && !h.rows.is_empty() {
                run("unknown_key", "zz_not_a_field", Value::Integer(1), true);
            }
        }
    }
    let total: usize = counts.values().sum();
    let mut kinds: Vec<_> = counts.iter().collect();
    kinds.sort();
    println!(
        "appendix mutations: {total} cases {kinds:?}, {} failing",
        failures.len()
    );
    assert!(
        failures.is_empty(),
        "{} of {total} mutations failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn schema_tables_have_exactly_the_appendix_keys() {
    use factory_config::schema::{RL_ROOT, SFT_ROOT, walk_models};
    let headings = parse_appendix();
    let mut checked = 0;
    let mut problems = Vec::new();
    for (mode, root) in [("rl", &RL_ROOT), ("sft", &SFT_ROOT)] {
        let ours = walk_models(root);
        for h in headings
            .iter()
            .filter(|h| h.mode == mode && !h.rows.is_empty())
        {
            let mut want: Vec<&str> = h.rows.iter().map(|r| r.key.as_str()).collect();
            want.sort_unstable();
            let candidates: Vec<Vec<&str>> = ours
                .iter()
                .filter(|(p, _, v)| {
                    // Single-class "variants" (length_penalty, gates, val.data) are plain tables here.
                    *p == h.path
                        && (h.variant.is_none()
                            || v.is_none()
                            || v.as_deref() == h.variant.as_deref())
                })
                .map(|(_, m, _)| {
                    let mut keys: Vec<&str> = m.fields.iter().map(|f| f.key).collect();
                    keys.sort_unstable();
                    keys
                })
                .collect();
            checked += 1;
            if !candidates.contains(&want) {
                problems.push(format!(
                    "[{mode}] {} {:?}: appendix {want:?}, ours {candidates:?}",
                    h.path, h.variant
                ));
            }
        }
    }
    println!("compared {checked} appendix tables with the schema tables");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
