//! `server.json` (the MCP Registry entry) is valid against the registry's published schema
//! (tests/fixtures/mcp-registry/server.schema.json, see SOURCE.md there), names the PyPI
//! package and version of this workspace, passes environment variables by name only, and
//! matches the ownership marker in the README.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

fn read(rel: &str) -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)).unwrap()
}

fn server() -> Value {
    serde_json::from_str(&read("server.json")).unwrap()
}

/// The Python `jsonschema` validator (Draft 7, formats checked) that scripts/build-wheel.sh
/// installs, pinned, into .interop/maturin. None (skip) when it is absent outside
/// scripts/test.sh and CI.
fn python() -> Option<PathBuf> {
    let py = Path::new(env!("CARGO_MANIFEST_DIR")).join(".interop/maturin/bin/python");
    if py.is_file() {
        return Some(py);
    }
    let must =
        std::env::var_os("CI").is_some() || std::env::var_os("FACTORY_MCP_INTEROP_DIR").is_some();
    assert!(
        !must,
        "{} is missing: run scripts/build-wheel.sh",
        py.display()
    );
    eprintln!(
        "skipped: {} is missing (scripts/build-wheel.sh installs it)",
        py.display()
    );
    None
}

const VALIDATE: &str = r#"
import json, sys
import jsonschema
schema = json.load(open(sys.argv[1]))
jsonschema.Draft7Validator.check_schema(schema)
v = jsonschema.Draft7Validator(schema, format_checker=jsonschema.Draft7Validator.FORMAT_CHECKER)
out = []
for path in sys.argv[2:]:
    doc = json.load(open(path))
    out.append(sorted("/".join(map(str, e.absolute_path)) + ": " + e.message for e in v.iter_errors(doc)))
print(json.dumps(out))
"#;

/// The schema's errors for each document, in order.
fn errors(py: &Path, docs: &[Value]) -> Vec<Vec<String>> {
    let dir = tempfile::tempdir().unwrap();
    let schema = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/mcp-registry/server.schema.json");
    let mut cmd = std::process::Command::new(py);
    cmd.args(["-c", VALIDATE]).arg(&schema);
    for (i, doc) in docs.iter().enumerate() {
        let p = dir.path().join(format!("{i}.json"));
        std::fs::write(&p, serde_json::to_vec(doc).unwrap()).unwrap();
        cmd.arg(p);
    }
    let out = cmd.output().expect("python runs");
    assert!(
        out.status.success(),
        "validator failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn server_json_is_valid_against_the_registry_schema() {
    let Some(py) = python() else { return };
    let doc = server();
    assert_eq!(
        errors(&py, std::slice::from_ref(&doc)),
        vec![Vec::<String>::new()]
    );
    // The schema referenced is the one the fixture is a copy of.
    let schema: Value =
        serde_json::from_str(&read("tests/fixtures/mcp-registry/server.schema.json")).unwrap();
    assert_eq!(doc["$schema"], schema["$id"]);
}

#[test]
fn the_schema_rejects_what_the_registry_rejects() {
    // So the validation above can fail: each of these breaks one rule of the schema.
    let Some(py) = python() else { return };
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
    let found = errors(&py, &[long, bad_name, latest, no_transport]);
    assert_eq!(found.len(), 4, "one result per document: {found:?}");
    for (what, errs) in [
        "description over 100",
        "name without namespace",
        "version latest",
        "no transport",
    ]
    .iter()
    .zip(&found)
    {
        assert!(!errs.is_empty(), "{what} passed");
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
