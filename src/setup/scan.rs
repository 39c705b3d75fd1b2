//! Which client files are configured to start factory-mcp (for `doctor`). Reads only: the
//! entries' names, commands and arguments; never an `env` value.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{Client, Env, Format, Scope, Target, codex, jsonc, target};

/// A server entry that starts factory-mcp.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    pub client: Client,
    /// `project`, `user`, or `local` (Claude Code's per-project entries in `~/.claude.json`).
    pub scope: &'static str,
    pub path: PathBuf,
    pub name: String,
    pub command: String,
    pub sandbox: bool,
}

/// What scanning one file gave.
#[derive(Debug, Clone)]
pub enum FileScan {
    /// Entries that start factory-mcp (may be empty).
    Entries(Vec<Found>),
    /// The file exists but does not parse.
    Unreadable { path: PathBuf, why: String },
}

/// Whether an entry starts factory-mcp: its command's file name is `factory-mcp` and its first
/// argument is `serve`.
fn starts_factory(entry: &Value) -> Option<(String, bool)> {
    let command = entry.get("command")?.as_str()?;
    let base = Path::new(command).file_name()?.to_str()?;
    if base != "factory-mcp" {
        return None;
    }
    let args: Vec<&str> = entry
        .get("args")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    if args.first() != Some(&"serve") {
        return None;
    }
    Some((command.to_string(), args.contains(&"--sandbox")))
}

fn collect(
    client: Client,
    scope: &'static str,
    path: &Path,
    servers: impl IntoIterator<Item = (String, Value)>,
    out: &mut Vec<Found>,
) {
    for (name, entry) in servers {
        if let Some((command, sandbox)) = starts_factory(&entry) {
            out.push(Found {
                client,
                scope,
                path: path.to_path_buf(),
                name,
                command,
                sandbox,
            });
        }
    }
}

fn object_entries(v: Option<&Value>) -> Vec<(String, Value)> {
    v.and_then(Value::as_object)
        .map(|m| m.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
        .unwrap_or_default()
}

fn scan_file(t: &Target, project: &Path) -> Option<FileScan> {
    let text = std::fs::read_to_string(&t.path).ok()?;
    let mut out = Vec::new();
    let scope = t.scope.name();
    match t.format {
        Format::Toml => match codex::servers(&text) {
            Ok(servers) => collect(t.client, scope, &t.path, servers, &mut out),
            Err(why) => {
                return Some(FileScan::Unreadable {
                    path: t.path.clone(),
                    why,
                });
            }
        },
        Format::Json { servers_key } => {
            let doc = match jsonc::parse(&text) {
                Ok(doc) => doc.unwrap_or(Value::Null),
                Err(why) => {
                    return Some(FileScan::Unreadable {
                        path: t.path.clone(),
                        why,
                    });
                }
            };
            collect(
                t.client,
                scope,
                &t.path,
                object_entries(doc.get(servers_key)),
                &mut out,
            );
            // Claude Code's local scope: `projects.<dir>.mcpServers` in ~/.claude.json.
            if t.client == Client::ClaudeCode && t.scope == Scope::User {
                let key = project.to_string_lossy();
                let local = doc
                    .get("projects")
                    .and_then(|p| p.get(key.as_ref()))
                    .and_then(|p| p.get("mcpServers"));
                collect(t.client, "local", &t.path, object_entries(local), &mut out);
            }
        }
    }
    Some(FileScan::Entries(out))
}

/// Scan every file the four clients read, for `project` and the user.
pub fn scan(project: &Path, env: &Env) -> Vec<FileScan> {
    let mut results = Vec::new();
    for client in Client::ALL {
        for scope in [Scope::Project, Scope::User] {
            let Ok(t) = target(client, scope, project, env) else {
                continue;
            };
            if let Some(r) = scan_file(&t, project) {
                results.push(r);
            }
        }
    }
    results
}
