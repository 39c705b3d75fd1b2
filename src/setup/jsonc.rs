//! JSON client files (Claude Code, Cursor, VS Code), edited through `jsonc-parser`'s concrete
//! syntax tree: comments, key order, indentation and every other entry stay as they were; only
//! the one server entry (and VS Code's key input) is inserted or replaced.

use jsonc_parser::ParseOptions;
use jsonc_parser::cst::{CstInputValue, CstRootNode};
use serde_json::Value;

use super::{Change, Merged};

fn options() -> ParseOptions {
    // What VS Code's JSONC accepts: comments and trailing commas; nothing looser (a missing
    // comma, a single-quoted string or a bare key is a malformed file, refused).
    ParseOptions {
        allow_comments: true,
        allow_trailing_commas: true,
        allow_loose_object_property_names: false,
        allow_missing_commas: false,
        allow_single_quoted_strings: false,
        allow_hexadecimal_numbers: false,
        allow_unary_plus_numbers: false,
    }
}

/// Parse JSON-with-comments into a value; `Ok(None)` for an empty (or comment-only) file.
pub fn parse(text: &str) -> Result<Option<Value>, String> {
    jsonc_parser::parse_to_serde_value(text, &options())
        .map_err(|e| format!("not valid JSON: {}", super::clean(&e.to_string())))
}

fn to_input(v: &Value) -> CstInputValue {
    match v {
        Value::Null => CstInputValue::Null,
        Value::Bool(b) => CstInputValue::Bool(*b),
        Value::Number(n) => CstInputValue::Number(n.to_string()),
        Value::String(s) => CstInputValue::String(s.clone()),
        Value::Array(items) => CstInputValue::Array(items.iter().map(to_input).collect()),
        Value::Object(map) => {
            CstInputValue::Object(map.iter().map(|(k, v)| (k.clone(), to_input(v))).collect())
        }
    }
}

/// Merge `entry` as `<servers_key>.<name>` into `old`; with `input`, also make sure VS Code's
/// `inputs` array has an input of that id.
pub fn merge(
    old: Option<&str>,
    servers_key: &str,
    name: &str,
    entry: &Value,
    input: Option<&Value>,
) -> Result<Merged, String> {
    let text = old.unwrap_or("");
    let parsed = parse(text)?;
    let Some(parsed) = parsed else {
        // A new (or empty) file: written whole, pretty-printed.
        let mut doc = serde_json::Map::new();
        let mut notes = Vec::new();
        if let Some(input) = input {
            doc.insert("inputs".into(), Value::Array(vec![input.clone()]));
            notes.push(input_note(input));
        }
        let mut servers = serde_json::Map::new();
        servers.insert(name.to_string(), entry.clone());
        doc.insert(servers_key.to_string(), Value::Object(servers));
        let mut text = serde_json::to_string_pretty(&Value::Object(doc))
            .map_err(|e| format!("cannot render JSON: {e}"))?;
        text.push('\n');
        return Ok(Merged {
            change: Change::Added,
            text,
            notes,
        });
    };
    let root_obj = parsed
        .as_object()
        .ok_or("the file's top level is not a JSON object")?;
    let existing = match root_obj.get(servers_key) {
        None => None,
        Some(Value::Object(servers)) => servers.get(name),
        Some(_) => return Err(format!("`{servers_key}` is not a JSON object")),
    };
    let need_input = match (input, root_obj.get("inputs")) {
        (None, _) => None,
        (Some(input), None) => Some(input),
        (Some(input), Some(Value::Array(items))) => {
            let id = &input["id"];
            (!items.iter().any(|it| &it["id"] == id)).then_some(input)
        }
        (Some(_), Some(_)) => return Err("`inputs` is not a JSON array".into()),
    };
    let change = match existing {
        None => Change::Added,
        Some(e) if e == entry && need_input.is_none() => {
            return Ok(Merged {
                change: Change::Unchanged,
                text: text.to_string(),
                notes: Vec::new(),
            });
        }
        Some(e) if e == entry => Change::Added,
        Some(_) => Change::Replaced,
    };

    let root = CstRootNode::parse(text, &options())
        .map_err(|e| format!("not valid JSON: {}", super::clean(&e.to_string())))?;
    let obj = root
        .object_value()
        .ok_or("the file's top level is not a JSON object")?;
    let mut notes = Vec::new();
    if let Some(input) = need_input {
        obj.array_value_or_set("inputs").append(to_input(input));
        notes.push(input_note(input));
    }
    let servers = obj.object_value_or_set(servers_key);
    match servers.get(name) {
        Some(prop) => prop.set_value(to_input(entry)),
        None => {
            servers.append(name, to_input(entry));
        }
    }
    let mut new = root.to_string();
    if !new.ends_with('\n') {
        new.push('\n');
    }
    // The edit must mean exactly what was intended: re-read it and compare.
    let reread = parse(&new)?.ok_or("the edited file is empty")?;
    if reread[servers_key][name] != *entry {
        return Err("the edited file does not hold the intended entry (not written)".into());
    }
    Ok(Merged {
        change,
        text: new,
        notes,
    })
}

fn input_note(input: &Value) -> String {
    format!(
        "added input \"{}\": VS Code asks for the key once and keeps it in its secret storage",
        input["id"].as_str().unwrap_or("")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn keeps_comments_and_other_servers() {
        let old = "{\n  // my servers\n  \"servers\": {\n    \"other\": {\"command\": \"x\"}, // keep\n  },\n}\n";
        let entry = json!({"type": "stdio", "command": "factory-mcp", "args": ["serve"]});
        let m = merge(Some(old), "servers", "factory", &entry, None).unwrap();
        assert_eq!(m.change, Change::Added);
        assert!(m.text.contains("// my servers"), "{}", m.text);
        assert!(
            m.text.contains("\"other\": {\"command\": \"x\"}, // keep"),
            "{}",
            m.text
        );
        let again = merge(Some(&m.text), "servers", "factory", &entry, None).unwrap();
        assert_eq!(again.change, Change::Unchanged);
    }

    #[test]
    fn refuses_what_it_cannot_edit() {
        let entry = json!({"command": "factory-mcp"});
        for bad in [
            "{\"mcpServers\": {",
            "[1]",
            "{\"mcpServers\": 3}",
            "{\"a\" 1}",
        ] {
            assert!(
                merge(Some(bad), "mcpServers", "factory", &entry, None).is_err(),
                "{bad}"
            );
        }
    }
}
