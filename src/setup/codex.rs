//! Codex's `config.toml`: `[mcp_servers.NAME]` tables, edited with `toml_edit` so comments,
//! order and layout of everything else stay as they were.

use serde_json::Value;
use toml_edit::{Array, DocumentMut, Item, Table, value};

use super::{Change, Merged};

/// Merge `entry` as `[mcp_servers.<name>]` into `old`.
pub fn merge(old: Option<&str>, name: &str, entry: &Value) -> Result<Merged, String> {
    let text = old.unwrap_or("");
    let mut doc: DocumentMut = text.parse().map_err(|e: toml_edit::TomlError| {
        format!("not valid TOML: {}", one_line(&e.to_string()))
    })?;
    if !doc.contains_key("mcp_servers") {
        let mut t = Table::new();
        t.set_implicit(true);
        doc.insert("mcp_servers", Item::Table(t));
    }
    let servers = doc
        .get_mut("mcp_servers")
        .and_then(Item::as_table_like_mut)
        .ok_or("`mcp_servers` is not a table")?;
    let change = match servers.get(name) {
        None => Change::Added,
        Some(existing) => {
            if item_to_json(existing).as_ref() == Some(entry) {
                return Ok(Merged {
                    change: Change::Unchanged,
                    text: text.to_string(),
                    notes: Vec::new(),
                });
            }
            Change::Replaced
        }
    };
    let table = json_to_table(entry)?;
    servers.insert(name, Item::Table(table));
    let mut new = doc.to_string();
    if !new.ends_with('\n') {
        new.push('\n');
    }
    Ok(Merged {
        change,
        text: new,
        notes: Vec::new(),
    })
}

fn one_line(s: &str) -> String {
    s.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

fn json_to_table(entry: &Value) -> Result<Table, String> {
    let obj = entry.as_object().ok_or("entry is not an object")?;
    let mut table = Table::new();
    for (k, v) in obj {
        let item = match v {
            Value::String(s) => value(s.as_str()),
            Value::Number(n) => value(n.as_i64().ok_or("number is not an integer")?),
            Value::Bool(b) => value(*b),
            Value::Array(items) => {
                let mut arr = Array::new();
                for it in items {
                    arr.push(it.as_str().ok_or("array item is not a string")?);
                }
                value(arr)
            }
            _ => return Err(format!("unsupported value for `{k}`")),
        };
        table.insert(k, item);
    }
    Ok(table)
}

/// A TOML item as JSON (tables and inline tables alike), for comparing and scanning.
pub fn item_to_json(item: &Item) -> Option<Value> {
    match item {
        Item::Value(v) => toml_value_to_json(v),
        Item::Table(t) => Some(Value::Object(
            t.iter()
                .filter_map(|(k, v)| Some((k.to_string(), item_to_json(v)?)))
                .collect(),
        )),
        Item::ArrayOfTables(a) => Some(Value::Array(
            a.iter()
                .filter_map(|t| item_to_json(&Item::Table(t.clone())))
                .collect(),
        )),
        Item::None => None,
    }
}

fn toml_value_to_json(v: &toml_edit::Value) -> Option<Value> {
    use toml_edit::Value as V;
    Some(match v {
        V::String(s) => Value::String(s.value().clone()),
        V::Integer(i) => Value::from(*i.value()),
        V::Float(f) => Value::from(*f.value()),
        V::Boolean(b) => Value::Bool(*b.value()),
        V::Datetime(d) => Value::String(d.value().to_string()),
        V::Array(a) => Value::Array(a.iter().filter_map(toml_value_to_json).collect()),
        V::InlineTable(t) => Value::Object(
            t.iter()
                .filter_map(|(k, v)| Some((k.to_string(), toml_value_to_json(v)?)))
                .collect(),
        ),
    })
}

/// The `[mcp_servers]` entries of a Codex file, as JSON. Err when it does not parse.
pub fn servers(text: &str) -> Result<Vec<(String, Value)>, String> {
    let doc: DocumentMut = text.parse().map_err(|e: toml_edit::TomlError| {
        format!("not valid TOML: {}", one_line(&e.to_string()))
    })?;
    let Some(servers) = doc.get("mcp_servers").and_then(Item::as_table_like) else {
        return Ok(Vec::new());
    };
    Ok(servers
        .iter()
        .filter_map(|(k, v)| Some((k.to_string(), item_to_json(v)?)))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn entry() -> Value {
        json!({"command": "factory-mcp", "args": ["serve", "--workspace", "/p"],
               "env_vars": ["PRIME_API_KEY", "PRIME_TEAM_ID"], "tool_timeout_sec": 300})
    }

    #[test]
    fn adds_beside_other_servers_and_keeps_comments() {
        let old = "# my settings\nmodel = \"o3\" # inline\n\n[mcp_servers.other]\ncommand = \"x\" # keep\n";
        let m = merge(Some(old), "factory", &entry()).unwrap();
        assert_eq!(m.change, Change::Added);
        assert!(m.text.starts_with(old), "{}", m.text);
        assert!(
            m.text
                .contains("[mcp_servers.factory]\ncommand = \"factory-mcp\"\n"),
            "{}",
            m.text
        );
        let again = merge(Some(&m.text), "factory", &entry()).unwrap();
        assert_eq!(again.change, Change::Unchanged);
        assert_eq!(again.text, m.text);
    }

    #[test]
    fn a_different_entry_is_replaced_and_malformed_toml_refused() {
        let old = "[mcp_servers.factory]\ncommand = \"old\"\n";
        let m = merge(Some(old), "factory", &entry()).unwrap();
        assert_eq!(m.change, Change::Replaced);
        assert!(!m.text.contains("\"old\""));
        let err = merge(Some("[mcp_servers\ncommand = 1"), "factory", &entry()).unwrap_err();
        assert!(err.starts_with("not valid TOML"), "{err}");
        let err = merge(Some("mcp_servers = 3\n"), "factory", &entry()).unwrap_err();
        assert!(err.contains("not a table"), "{err}");
    }
}
