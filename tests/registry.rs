//! `server.json` (the MCP Registry entry) is valid against the registry's published schema
//! (tests/fixtures/mcp-registry/server.schema.json, see SOURCE.md there), names the PyPI
//! package and version of this workspace, passes environment variables by name only, and
//! matches the ownership marker in the README.

use std::path::Path;

use serde_json::{Value, json};

fn read(rel: &str) -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)).unwrap()
}

fn schema() -> jsonschema::Validator {
    let schema: Value =
        serde_json::from_str(&read("tests/fixtures/mcp-registry/server.schema.json")).unwrap();
    jsonschema::validator_for(&schema).expect("the registry schema compiles")
}

fn server() -> Value {
    serde_json::from_str(&read("server.json")).unwrap()
}

fn errors(v: &jsonschema::Validator, doc: &Value) -> Vec<String> {
    v.iter_errors(doc)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect()
}

#[test]
fn server_json_is_valid_against_the_registry_schema() {
    let v = schema();
    let doc = server();
    assert_eq!(errors(&v, &doc), Vec::<String>::new());
    // The schema referenced is the one the fixture is a copy of.
    let schema: Value =
        serde_json::from_str(&read("tests/fixtures/mcp-registry/server.schema.json")).unwrap();
    assert_eq!(doc["$schema"], schema["$id"]);
}

#[test]
fn the_schema_rejects_what_the_registry_rejects() {
    // So the validation above can fail: each of these breaks one rule of the schema.
    let v = schema();
    let mut long = server();
    long["description"] = json!("x".repeat(101));
    let mut bad_name = server();
    bad_name["name"] = json!("factory-mcp");
    let mut latest = server();
    latest["packages"][0]["version"] = json!("latest");
    let mut no_transport = server();
    no_transport["packages"][0]
        .as_object_mut()
        .unwrap()
        .remove("transport");
    for (what, doc) in [
        ("description over 100", long),
        ("name without namespace", bad_name),
        ("version latest", latest),
        ("no transport", no_transport),
    ] {
        assert!(!errors(&v, &doc).is_empty(), "{what} passed");
    }
}

#[test]
fn server_json_names_this_package_version_and_stdio_with_variable_names_only() {
    let doc = server();
    let version = env!("CARGO_PKG_VERSION");
    assert_eq!(doc["version"], version);
    let pkg = &doc["packages"][0];
    assert_eq!(doc["packages"].as_array().unwrap().len(), 1);
    assert_eq!(pkg["registryType"], "pypi");
    assert_eq!(pkg["identifier"], "factory-mcp");
    assert_eq!(pkg["version"], version);
    assert_eq!(pkg["transport"], json!({"type": "stdio"}));
    assert_eq!(pkg["packageArguments"][0]["value"], "serve");
    let vars = pkg["environmentVariables"].as_array().unwrap();
    let names: Vec<&str> = vars.iter().map(|v| v["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["PRIME_API_KEY", "PRIME_TEAM_ID"]);
    for var in vars {
        assert!(
            var.get("value").is_none() && var.get("default").is_none(),
            "{var}"
        );
    }
    assert_eq!(vars[0]["isSecret"], true);
    // The PyPI package name is the one pyproject.toml builds.
    assert!(read("pyproject.toml").contains("\nname = \"factory-mcp\"\n"));
}

#[test]
fn the_readme_carries_the_registry_ownership_marker_for_this_name() {
    let name = server()["name"].as_str().unwrap().to_string();
    let readme = read("README.md");
    assert!(
        readme.contains(&format!("<!-- mcp-name: {name} -->")),
        "README.md lacks the marker for {name}"
    );
}
