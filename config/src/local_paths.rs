//! Strings that read as files on this machine. A path in TOML does not upload the file: a
//! hosted run reads only what is on its image, its volume (`/volume/…`) or downloadable, so a
//! string naming a local file — anywhere, taskset arguments included — earns a warning.

use toml::{Table, Value};

use crate::report::Finding;
use crate::secrets::show;
use crate::value::join;

/// The most strings of one document looked at (a config is ≤ 1 MiB; this bounds the work).
const MAX_STRINGS: usize = 5_000;

/// Every string of a document with its dotted path (list items by index), in document order.
pub fn strings(doc: &Table) -> Vec<(String, String)> {
    let mut out = Vec::new();
    collect_table(doc, "", &mut out);
    out
}

fn collect_table(t: &Table, base: &str, out: &mut Vec<(String, String)>) {
    for (k, v) in t {
        collect(v, &join(base, k), out);
    }
}

fn collect(v: &Value, path: &str, out: &mut Vec<(String, String)>) {
    if out.len() >= MAX_STRINGS {
        return;
    }
    match v {
        Value::String(s) => out.push((path.to_string(), s.clone())),
        Value::Table(t) => collect_table(t, path, out),
        Value::Array(items) => {
            for (n, item) in items.iter().enumerate() {
                collect(item, &join(path, &n.to_string()), out);
            }
        }
        _ => {}
    }
}

/// Whether a string could be a file name at all: one short token, not a URL.
fn path_shaped(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 4096
        && !s.chars().any(|c| c.is_whitespace() || c.is_control())
        && !s.contains("://")
}

/// Whether `s` reads as a path on this machine: absolute (off the run's `/volume`), under the
/// home directory (`~`), or relative to the current directory (`./`, `../`). A lone word after
/// a slash (`/no_think`) is not taken for a path: an absolute path here has a directory or an
/// extension.
pub fn reads_as_local_path(s: &str) -> bool {
    if !path_shaped(s) {
        return false;
    }
    if s == "/volume" || s.starts_with("/volume/") {
        return false;
    }
    if s.starts_with('~') || s.starts_with("./") || s.starts_with("../") || s == "." || s == ".." {
        return true;
    }
    if let Some(rest) = s.strip_prefix('/') {
        return !rest.is_empty() && (rest.contains('/') || rest.contains('.'));
    }
    s.contains("/../")
}

/// Whether a string is worth asking the file system about: a relative, path-shaped token
/// that does not already read as local (those are warned about without asking).
pub fn may_name_a_workspace_file(s: &str) -> bool {
    path_shaped(s) && s.len() <= 1024 && !s.starts_with('/') && !reads_as_local_path(s)
}

fn warning(path: &str, value: &str, why: &str) -> Finding {
    Finding::warning(
        path,
        format!("{path} {why} {}: a path in TOML does not upload the file", show("path", value)),
    )
    .hint("A hosted run cannot read files from this machine. Upload the data to the run's volume (upload_to_volume) and name it as /volume/..., use a dataset the run can download, or leave the key at its default.")
}

/// Warnings for strings that read as local paths, skipping `skip` (paths warned about
/// elsewhere with a more specific message).
pub(crate) fn findings(doc: &Table, skip: &[&str]) -> Vec<Finding> {
    strings(doc)
        .into_iter()
        .filter(|(p, _)| !skip.contains(&p.as_str()))
        .filter(|(_, v)| reads_as_local_path(v))
        .map(|(p, v)| warning(&p, &v, "reads as a local file path"))
        .collect()
}

/// Warnings for strings naming a file that exists in the workspace, as `exists` tells (the
/// caller does the I/O; relative strings only — absolute ones are warned about by the
/// validator already). Top-level CLI keys (`name`, `gpu_type`, …) are skipped.
pub fn workspace_file_findings(doc: &Table, exists: impl Fn(&str) -> bool) -> Vec<Finding> {
    strings(doc)
        .into_iter()
        .filter(|(p, _)| p.contains('.'))
        .filter(|(_, v)| may_name_a_workspace_file(v) && exists(v))
        .map(|(p, v)| warning(&p, &v, "names a file in the workspace"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_paths_are_told_from_volume_paths_ids_and_words() {
        for s in [
            "/home/me/data.jsonl",
            "/data/train.jsonl",
            "/tmp/x",
            "~/data.jsonl",
            "~",
            "./data.jsonl",
            "../data/x.parquet",
            "data/../../etc/passwd",
        ] {
            assert!(reads_as_local_path(s), "{s}");
        }
        for s in [
            "/volume/datasets/x",
            "/volume",
            "datasets/x",
            "Qwen/Qwen3-0.6B",
            "reverse-text",
            "https://example.com/a/b.json",
            "/no_think",
            "/",
            "a sentence with /slashes/ in it",
            "",
        ] {
            assert!(!reads_as_local_path(s), "{s}");
        }
    }

    #[test]
    fn taskset_arguments_are_looked_at() {
        let doc: Table = toml::from_str(
            r#"
            [[orchestrator.train.source]]
            [orchestrator.train.source.env.taskset]
            id = "my-taskset"
            [orchestrator.train.source.env.taskset.args]
            data_path = "./data/train.jsonl"
            files = ["x", "~/y.jsonl"]
            "#,
        )
        .unwrap();
        let found = findings(&doc, &[]);
        let paths: Vec<&str> = found.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(
            paths,
            [
                "orchestrator.train.source.0.env.taskset.args.data_path",
                "orchestrator.train.source.0.env.taskset.args.files.1"
            ]
        );
        assert!(
            found[0]
                .message
                .contains("a path in TOML does not upload the file")
        );
    }

    #[test]
    fn a_relative_name_of_an_existing_workspace_file_is_warned_about() {
        let doc: Table = toml::from_str(
            r#"
            name = "train.jsonl"
            [orchestrator.train.source.env.taskset.args]
            dataset = "train.jsonl"
            split = "train"
            "#,
        )
        .unwrap();
        let found = workspace_file_findings(&doc, |s| s == "train.jsonl");
        assert_eq!(found.len(), 1);
        assert_eq!(
            found[0].path,
            "orchestrator.train.source.env.taskset.args.dataset"
        );
    }
}
