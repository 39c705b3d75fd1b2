//! Portable JSON Schemas for tool inputs (object root, everything inlined, no `$ref`/`$defs`,
//! no nullable type unions, no boolean schemas, no composition keywords, standard formats only)
//! — the shapes every real client accepts (`reference/mcp-notes.md` §5.4) —, the output schema
//! every tool declares (an object root), and the walkers that check both.

use std::sync::Arc;

use rmcp::model::JsonObject;
use schemars::{
    JsonSchema, Schema,
    generate::SchemaSettings,
    transform::{RecursiveTransform, ReplaceBoolSchemas, RestrictFormats},
};
use serde_json::Value;

/// Formats JSON Schema 2020-12 defines; anything else is dropped from input schemas.
#[cfg(test)]
const STANDARD_FORMATS: &[&str] = &[
    "date-time",
    "date",
    "time",
    "duration",
    "email",
    "idn-email",
    "hostname",
    "idn-hostname",
    "ipv4",
    "ipv6",
    "uri",
    "uri-reference",
    "iri",
    "iri-reference",
    "uuid",
    "uri-template",
    "json-pointer",
    "relative-json-pointer",
    "regex",
];

fn drop_null(schema: &mut Schema) {
    let Some(obj) = schema.as_object_mut() else {
        return;
    };
    if let Some(Value::Array(types)) = obj.get_mut("type") {
        types.retain(|t| t != "null");
        if types.len() == 1 {
            let only = types[0].clone();
            obj.insert("type".into(), only);
        }
    }
    if let Some(Value::Array(values)) = obj.get_mut("enum") {
        values.retain(|v| !v.is_null());
    }
    // `Option<Enum>` and `Option<Struct>` come out as `anyOf: [X, {type: null}]` once inlined.
    for key in ["anyOf", "oneOf"] {
        if let Some(Value::Array(branches)) = obj.get(key).cloned() {
            let kept: Vec<Value> = branches
                .into_iter()
                .filter(|b| b.get("type") != Some(&Value::String("null".into())))
                .collect();
            if kept.len() == 1 {
                obj.remove(key);
                if let Value::Object(inner) = &kept[0] {
                    for (k, v) in inner {
                        obj.entry(k.clone()).or_insert_with(|| v.clone());
                    }
                }
            }
        }
    }
    // Documented enum variants come out as `oneOf` of `const` branches: an `enum` says the same.
    for key in ["oneOf", "anyOf"] {
        if let Some(Value::Array(branches)) = obj.get(key) {
            let consts: Option<Vec<Value>> = branches
                .iter()
                .map(|b| b.get("const").filter(|c| c.is_string()).cloned())
                .collect();
            if let Some(values) = consts.filter(|v| !v.is_empty()) {
                obj.remove(key);
                obj.insert("type".into(), Value::String("string".into()));
                obj.insert("enum".into(), Value::Array(values));
            }
        }
    }
    if let Some(Value::Null) = obj.get("default") {
        obj.remove("default");
    }
}

fn to_object(schema: Schema) -> JsonObject {
    match schema.to_value() {
        Value::Object(mut obj) => {
            obj.remove("$schema");
            obj.remove("title");
            obj
        }
        // A root schema of a struct is always an object; anything else becomes an empty object
        // schema, which the catalogue test would then flag.
        _ => JsonObject::new(),
    }
}

/// `deny_unknown_fields` comes out as `additionalProperties: {"not": {}}` once boolean schemas
/// are replaced; `additionalProperties: false` says the same in the form every client reads.
fn closed_objects_as_false(obj: &mut JsonObject) {
    if obj.get("additionalProperties") == Some(&serde_json::json!({"not": {}})) {
        obj.insert("additionalProperties".into(), Value::Bool(false));
    }
    for (_, v) in obj.iter_mut() {
        match v {
            Value::Object(inner) => closed_objects_as_false(inner),
            Value::Array(items) => {
                for item in items {
                    if let Value::Object(inner) = item {
                        closed_objects_as_false(inner);
                    }
                }
            }
            _ => {}
        }
    }
}

/// Every tool's input schema as [`input_schema`] generates it, keyed by tool name, written into
/// the binary: generating them is about a tenth of a start to the first `tools/list` (schemars
/// walks every argument type); reading this is a JSON parse. A test regenerates each schema and
/// fails if this file differs (`FACTORY_MCP_WRITE_SCHEMAS=1 cargo test -p factory-tools
/// --lib embedded_input_schemas` rewrites it).
const EMBEDDED_INPUT_SCHEMAS: &str = include_str!("input_schemas.json");

/// The embedded input schemas, parsed on first use.
fn embedded_input_schemas() -> &'static std::collections::HashMap<String, Arc<JsonObject>> {
    static PARSED: std::sync::OnceLock<std::collections::HashMap<String, Arc<JsonObject>>> =
        std::sync::OnceLock::new();
    PARSED.get_or_init(|| {
        serde_json::from_str::<serde_json::Map<String, Value>>(EMBEDDED_INPUT_SCHEMAS)
            .unwrap_or_default()
            .into_iter()
            .filter_map(|(name, schema)| match schema {
                Value::Object(obj) => Some((name, Arc::new(obj))),
                _ => None,
            })
            .collect()
    })
}

/// The portable input schema of the tool `name` whose argument type is `T`: the embedded one,
/// or generated when there is none (a tool added since the file was written; the test says so).
pub fn input_schema_of<T: JsonSchema>(name: &str) -> Arc<JsonObject> {
    match embedded_input_schemas().get(name) {
        Some(schema) => schema.clone(),
        None => input_schema::<T>(),
    }
}

/// The portable input schema of an argument type.
pub fn input_schema<T: JsonSchema>() -> Arc<JsonObject> {
    let settings = SchemaSettings::draft2020_12()
        .with(|s| s.inline_subschemas = true)
        .with_transform(ReplaceBoolSchemas::default())
        .with_transform(RecursiveTransform(drop_null))
        .with_transform(RestrictFormats::default());
    let mut obj = to_object(settings.into_generator().into_root_schema_for::<T>());
    obj.remove("description");
    closed_objects_as_false(&mut obj);
    obj.entry("properties")
        .or_insert_with(|| Value::Object(Default::default()));
    Arc::new(obj)
}

/// The output schema of every tool: `{"type": "object"}`: the result is a JSON object (an
/// object root is what clients of protocol revisions before 2026-07-28 require), sent as
/// `structuredContent` and as the text block.
///
/// Why no field tree: clients use an output schema only to validate `structuredContent` (the
/// Python SDK, the TypeScript SDK and Claude Code do; none shows it to the model, which reads the
/// description, the input schema and the result itself), yet the field trees were half of every
/// `tools/list` (22 KB of 44; `docs/BUDGETS.md` measures the alternatives). The model-facing
/// parts — descriptions and input schemas — are what the 24 KB budget is spent on. Each
/// result's fields are documented on its Rust type. This form has none of the nullable `type`
/// arrays, `$ref`s or untyped subschemas strict clients warn about (`reference/mcp-notes.md`
/// §5.4).
pub fn output_schema() -> Arc<JsonObject> {
    let mut obj = JsonObject::new();
    obj.insert("type".into(), Value::String("object".into()));
    Arc::new(obj)
}

/// Problems in an output schema that strict clients reject or warn about: boolean schemas,
/// references and `type` arrays (the Inspector's `--strict` `type-union`).
#[cfg(test)]
pub fn output_violations(schema: &Value) -> Vec<String> {
    fn walk_out(v: &Value, path: &str, out: &mut Vec<String>) {
        match v {
            Value::Bool(_) => out.push(format!("{path}: boolean schema")),
            Value::Object(obj) => {
                for key in ["$ref", "$defs", "definitions"] {
                    if obj.contains_key(key) {
                        out.push(format!("{path}: uses `{key}`"));
                    }
                }
                if let Some(t @ Value::Array(_)) = obj.get("type") {
                    out.push(format!("{path}: type is {t}, not a single type name"));
                }
                for (k, sub) in obj {
                    match (k.as_str(), sub) {
                        ("properties", Value::Object(props)) => {
                            for (name, s) in props {
                                walk_out(s, &format!("{path}.{name}"), out);
                            }
                        }
                        ("items" | "additionalProperties", s)
                            if !matches!(s, Value::Bool(false)) =>
                        {
                            walk_out(s, &format!("{path}.{k}"), out)
                        }
                        ("anyOf" | "oneOf" | "allOf", Value::Array(branches)) => {
                            for (i, b) in branches.iter().enumerate() {
                                walk_out(b, &format!("{path}.{k}[{i}]"), out);
                            }
                        }
                        _ => {}
                    }
                }
            }
            _ => out.push(format!("{path}: not a schema")),
        }
    }
    let mut out = Vec::new();
    if schema.get("type") != Some(&Value::String("object".into())) {
        out.push("$: root is not `type: object`".into());
    }
    walk_out(schema, "$", &mut out);
    out
}

/// Every way `schema` breaks the portability rules, as `path: problem` lines.
#[cfg(test)]
pub fn portability_violations(schema: &Value) -> Vec<String> {
    let mut out = Vec::new();
    match schema {
        Value::Object(root) => {
            if root.get("type") != Some(&Value::String("object".into())) {
                out.push("$: root is not `type: object`".into());
            }
            if !matches!(root.get("properties"), Some(Value::Object(_))) {
                out.push("$: root has no `properties` object".into());
            }
        }
        _ => out.push("$: root is not an object schema".into()),
    }
    walk(schema, "$", &mut out);
    out
}

#[cfg(test)]
fn walk(schema: &Value, path: &str, out: &mut Vec<String>) {
    let obj = match schema {
        Value::Bool(_) => {
            out.push(format!("{path}: boolean schema"));
            return;
        }
        Value::Object(obj) => obj,
        _ => {
            out.push(format!("{path}: schema is neither an object nor a boolean"));
            return;
        }
    };
    for key in ["$ref", "$defs", "definitions", "$dynamicRef"] {
        if obj.contains_key(key) {
            out.push(format!("{path}: uses `{key}`"));
        }
    }
    for key in ["oneOf", "anyOf", "allOf", "not", "if", "then", "else"] {
        if obj.contains_key(key) {
            out.push(format!("{path}: uses `{key}`"));
        }
    }
    match obj.get("type") {
        Some(Value::String(t)) if t == "null" => out.push(format!("{path}: `type: null`")),
        Some(Value::String(_)) | None => {}
        Some(other) => out.push(format!("{path}: type is {other}, not a single type name")),
    }
    if obj.get("type").is_none() && !obj.contains_key("enum") && !obj.contains_key("const") {
        out.push(format!("{path}: untyped schema"));
    }
    if let Some(Value::Array(values)) = obj.get("enum")
        && values.iter().any(Value::is_null)
    {
        out.push(format!("{path}: enum contains null"));
    }
    if let Some(required) = obj.get("required")
        && !required.is_array()
    {
        out.push(format!("{path}: `required` is not an array"));
    }
    if let Some(Value::String(f)) = obj.get("format")
        && !STANDARD_FORMATS.contains(&f.as_str())
    {
        out.push(format!("{path}: non-standard format `{f}`"));
    }
    if let Some(Value::Object(props)) = obj.get("properties") {
        for (name, sub) in props {
            walk(sub, &format!("{path}.{name}"), out);
        }
    }
    if let Some(items) = obj.get("items") {
        walk(items, &format!("{path}[]"), out);
    }
    if let Some(extra) = obj.get("additionalProperties")
        && extra.is_object()
    {
        walk(extra, &format!("{path}{{*}}"), out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;
    use serde_json::json;

    #[allow(dead_code)]
    #[derive(Deserialize, JsonSchema)]
    #[serde(rename_all = "lowercase")]
    enum Level {
        Info,
        Error,
    }

    #[allow(dead_code)]
    #[derive(Deserialize, JsonSchema)]
    struct Inner {
        a: String,
    }

    #[allow(dead_code)]
    #[derive(Deserialize, JsonSchema)]
    struct Args {
        /// A run.
        run_id: String,
        tail: Option<u32>,
        level: Option<Level>,
        inner: Option<Inner>,
        names: Vec<String>,
    }

    #[test]
    fn schemars_output_is_made_portable() {
        let s = Value::Object((*input_schema::<Args>()).clone());
        assert_eq!(portability_violations(&s), Vec::<String>::new(), "{s:#}");
        assert_eq!(s["properties"]["tail"]["type"], "integer");
        assert_eq!(s["properties"]["level"]["enum"], json!(["info", "error"]));
        assert_eq!(s["properties"]["inner"]["type"], "object");
        assert_eq!(s["required"], json!(["run_id", "names"]));
    }

    #[test]
    fn walker_catches_each_unportable_shape() {
        let bad = json!({
            "type": "object",
            "properties": {
                "a": {"type": ["string", "null"]},
                "b": true,
                "c": {"$ref": "#/$defs/C"},
                "d": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
                "e": {"type": "integer", "format": "uint32"},
                "f": {},
                "g": {"type": "array", "items": {"oneOf": []}}
            },
            "$defs": {}
        });
        let v = portability_violations(&bad);
        for needle in [
            "$.a: type is",
            "$.b: boolean schema",
            "$.c: uses `$ref`",
            "$.d: uses `anyOf`",
            "$.e: non-standard format",
            "$.f: untyped",
            "$.g[]: uses `oneOf`",
            "$: uses `$defs`",
        ] {
            assert!(
                v.iter().any(|l| l.starts_with(needle)),
                "missing {needle} in {v:#?}"
            );
        }
    }

    #[test]
    fn output_schemas_are_portable_object_roots() {
        let s = Value::Object((*output_schema()).clone());
        assert_eq!(s, json!({"type": "object"}));
        assert_eq!(output_violations(&s), Vec::<String>::new());
        // The walker catches the nullable `type` arrays the Inspector's `--strict` warns about.
        assert_eq!(
            output_violations(
                &json!({"type": "object", "properties": {"a": {"type": ["string", "null"]}}})
            ),
            vec!["$.a: type is [\"string\",\"null\"], not a single type name".to_string()]
        );
    }

    #[test]
    fn empty_arguments_still_have_properties() {
        #[derive(Deserialize, JsonSchema)]
        struct NoArgs {}
        let s = Value::Object((*input_schema::<NoArgs>()).clone());
        assert_eq!(portability_violations(&s), Vec::<String>::new(), "{s:#}");
    }
}
