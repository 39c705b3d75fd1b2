//! `factory-mcp setup CLIENT`: adds this server to an assistant's own MCP configuration file,
//! the way `examples/clients/` shows it, without disturbing anything else in that file.
//!
//! - Claude Code: `.mcp.json` (project) or `~/.claude.json` (user), key `mcpServers`.
//! - Cursor: `.cursor/mcp.json` or `~/.cursor/mcp.json`, key `mcpServers`.
//! - VS Code: `.vscode/mcp.json` (project) or the profile's `mcp.json` (user), key `servers`,
//!   JSON with comments: edited through a concrete syntax tree, so comments and layout stay.
//! - Codex: `~/.codex/config.toml` (user, `$CODEX_HOME` when set) or `.codex/config.toml`
//!   (project), tables `[mcp_servers.NAME]`, edited with `toml_edit` (comments stay).
//!
//! The entry is named `factory` (`factory-sandbox` with `--sandbox`). An entry of that name is
//! replaced when it differs, left alone when it is already right (so a second run changes
//! nothing); every other entry and key is kept as it was. A file that changes is first copied
//! to `FILE.factory-mcp.bak` (or `.bak.1`, `.bak.2`, … — an earlier backup is never
//! overwritten), then replaced atomically. A file that does not parse is refused and left as
//! it is. No key value is ever written: the server reads the key as the `prime` CLI does
//! (`PRIME_API_KEY`, else `~/.prime/config.json`); VS Code's entry refers to a password input,
//! Codex's forwards the variables by name.

mod codex;
mod jsonc;
pub mod scan;

use std::ffi::OsString;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use serde_json::{Value, json};

/// Add factory-mcp to an assistant's MCP configuration.
#[derive(Debug, clap::Args)]
pub struct SetupArgs {
    /// The assistant to configure.
    #[arg(value_enum)]
    pub client: Client,
    /// Write the project's file (default for claude-code, cursor, vscode) or your user-wide one
    /// (default for codex).
    #[arg(long, value_enum)]
    pub scope: Option<Scope>,
    /// Add the no-account entry `factory-sandbox` (`serve --sandbox`) instead of `factory`.
    #[arg(long)]
    pub sandbox: bool,
    /// The project directory [default: the current directory].
    #[arg(long, value_name = "DIR")]
    pub project: Option<PathBuf>,
    /// The command the client runs [default: `factory-mcp` when that is this binary on PATH,
    /// else this binary's absolute path].
    #[arg(long, value_name = "PATH")]
    pub command: Option<String>,
    /// Show the change as a diff and write nothing.
    #[arg(long)]
    pub dry_run: bool,
}

/// The assistants `setup` knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Client {
    ClaudeCode,
    Cursor,
    Codex,
    Vscode,
}

impl Client {
    pub const ALL: [Client; 4] = [
        Client::ClaudeCode,
        Client::Cursor,
        Client::Codex,
        Client::Vscode,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Client::ClaudeCode => "claude-code",
            Client::Cursor => "cursor",
            Client::Codex => "codex",
            Client::Vscode => "vscode",
        }
    }

    fn default_scope(self) -> Scope {
        match self {
            Client::Codex => Scope::User,
            _ => Scope::Project,
        }
    }
}

/// Where the entry goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Scope {
    Project,
    User,
}

impl Scope {
    pub fn name(self) -> &'static str {
        match self {
            Scope::Project => "project",
            Scope::User => "user",
        }
    }
}

/// How a client's file is laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// JSON (with comments tolerated and kept); servers under this top-level key.
    Json { servers_key: &'static str },
    /// TOML; servers as `[mcp_servers.NAME]`.
    Toml,
}

/// One client's configuration file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub client: Client,
    pub scope: Scope,
    pub path: PathBuf,
    pub format: Format,
}

/// The environment `setup` and `doctor` look at (passed in, so tests need no global state).
#[derive(Debug, Clone)]
pub struct Env {
    /// `$HOME`.
    pub home: Option<PathBuf>,
    /// `$CODEX_HOME`.
    pub codex_home: Option<PathBuf>,
    /// `$XDG_CONFIG_HOME`.
    pub xdg_config_home: Option<PathBuf>,
}

impl Env {
    pub fn from_process() -> Env {
        let abs = |name: &str| {
            std::env::var_os(name)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
                .filter(|p| p.is_absolute())
        };
        Env {
            home: abs("HOME"),
            codex_home: abs("CODEX_HOME"),
            xdg_config_home: abs("XDG_CONFIG_HOME"),
        }
    }

    fn home(&self) -> Result<&Path, String> {
        self.home
            .as_deref()
            .ok_or_else(|| "HOME is not set (or not absolute): user scope needs it".to_string())
    }
}

/// The file `client` reads at `scope`.
pub fn target(client: Client, scope: Scope, project: &Path, env: &Env) -> Result<Target, String> {
    let mcp_servers = Format::Json {
        servers_key: "mcpServers",
    };
    let (path, format) = match (client, scope) {
        (Client::ClaudeCode, Scope::Project) => (project.join(".mcp.json"), mcp_servers),
        (Client::ClaudeCode, Scope::User) => (env.home()?.join(".claude.json"), mcp_servers),
        (Client::Cursor, Scope::Project) => (project.join(".cursor/mcp.json"), mcp_servers),
        (Client::Cursor, Scope::User) => (env.home()?.join(".cursor/mcp.json"), mcp_servers),
        (Client::Vscode, scope) => {
            let path = match scope {
                Scope::Project => project.join(".vscode/mcp.json"),
                Scope::User => vscode_user_dir(env)?.join("mcp.json"),
            };
            let format = Format::Json {
                servers_key: "servers",
            };
            (path, format)
        }
        (Client::Codex, Scope::Project) => (project.join(".codex/config.toml"), Format::Toml),
        (Client::Codex, Scope::User) => {
            let dir = match &env.codex_home {
                Some(dir) => dir.clone(),
                None => env.home()?.join(".codex"),
            };
            (dir.join("config.toml"), Format::Toml)
        }
    };
    Ok(Target {
        client,
        scope,
        path,
        format,
    })
}

/// VS Code's user profile directory (where `MCP: Open User Configuration` opens `mcp.json`).
fn vscode_user_dir(env: &Env) -> Result<PathBuf, String> {
    let home = env.home()?;
    if cfg!(target_os = "macos") {
        Ok(home.join("Library/Application Support/Code/User"))
    } else {
        let config = env
            .xdg_config_home
            .clone()
            .unwrap_or_else(|| home.join(".config"));
        Ok(config.join("Code/User"))
    }
}

/// The entry name for the variant.
pub fn entry_name(sandbox: bool) -> &'static str {
    if sandbox {
        "factory-sandbox"
    } else {
        "factory"
    }
}

/// The server entry `client` gets, as JSON (Codex's TOML table is built from the same value).
/// `project` is absolute. No value in it is a secret.
pub fn entry(client: Client, scope: Scope, sandbox: bool, command: &str, project: &str) -> Value {
    let mut args = vec!["serve"];
    if sandbox {
        args.push("--sandbox");
    }
    match client {
        // Claude Code starts the server in the directory `claude` runs in; at user scope that
        // is whichever project is open, so only the project scope names one.
        Client::ClaudeCode => {
            if scope == Scope::Project {
                args.extend(["--workspace", project]);
            }
            json!({"type": "stdio", "command": command, "args": args})
        }
        Client::Cursor => {
            args.extend(["--workspace", "${workspaceFolder}"]);
            json!({"command": command, "args": args})
        }
        Client::Vscode => {
            args.extend(["--workspace", "${workspaceFolder}"]);
            if sandbox {
                json!({"type": "stdio", "command": command, "args": args})
            } else {
                json!({
                    "type": "stdio",
                    "command": command,
                    "args": args,
                    "env": {"PRIME_API_KEY": "${input:prime-api-key}"}
                })
            }
        }
        // Codex expands no variables and starts servers with a cleared environment: the
        // project's absolute path, and the key's variables forwarded by name.
        Client::Codex => {
            args.extend(["--workspace", project]);
            if sandbox {
                json!({"command": command, "args": args})
            } else {
                json!({
                    "command": command,
                    "args": args,
                    "env_vars": ["PRIME_API_KEY", "PRIME_TEAM_ID"],
                    "tool_timeout_sec": 300
                })
            }
        }
    }
}

/// VS Code's password prompt the non-sandbox entry refers to (`${input:prime-api-key}`).
pub fn vscode_key_input() -> Value {
    json!({
        "type": "promptString",
        "id": "prime-api-key",
        "description": "Prime API key (leave empty to use the one `prime login` saved)",
        "password": true
    })
}

/// What a merge decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// The entry was not there.
    Added,
    /// An entry of that name differed and is replaced.
    Replaced,
    /// The entry is already exactly right.
    Unchanged,
}

/// The outcome of merging the entry into a file's text.
#[derive(Debug, Clone)]
pub struct Merged {
    pub change: Change,
    /// The new text (equal to the old one when unchanged).
    pub text: String,
    /// Extra things added besides the entry (e.g. VS Code's key input).
    pub notes: Vec<String>,
}

/// Merge `entry` under `name` into `old` (None: the file does not exist).
pub fn merge(
    target: &Target,
    old: Option<&str>,
    name: &str,
    entry: &Value,
    vscode_input: Option<&Value>,
) -> Result<Merged, String> {
    match target.format {
        Format::Json { servers_key } => jsonc::merge(old, servers_key, name, entry, vscode_input),
        Format::Toml => codex::merge(old, name, entry),
    }
}

/// The command clients should run: `factory-mcp` when the first `factory-mcp` on PATH is this
/// very binary, else this binary's absolute path.
fn default_command() -> Result<String, String> {
    let exe = std::env::current_exe()
        .and_then(|p| p.canonicalize())
        .map_err(|e| format!("cannot tell where this binary is: {e}"))?;
    if let Some(found) = which("factory-mcp", std::env::var_os("PATH"))
        && found.canonicalize().ok().as_deref() == Some(exe.as_path())
    {
        return Ok("factory-mcp".to_string());
    }
    exe.to_str()
        .map(str::to_string)
        .ok_or_else(|| format!("this binary's path is not UTF-8: {}", exe.display()))
}

/// The first executable file called `name` in `path` (a `PATH` value).
pub fn which(name: &str, path: Option<OsString>) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt as _;
    std::env::split_paths(&path?)
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.join(name))
        .find(|p| {
            p.metadata()
                .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
                .unwrap_or(false)
        })
}

/// Replace control and bidi characters before a string reaches the terminal.
pub fn clean(s: &str) -> String {
    s.chars()
        .map(|c| {
            if (c.is_control() && c != '\n' && c != '\t')
                || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200e}' | '\u{200f}')
            {
                '?'
            } else {
                c
            }
        })
        .collect()
}

fn shell_line(entry: &Value) -> String {
    let mut words = vec![entry["command"].as_str().unwrap_or("").to_string()];
    if let Some(args) = entry["args"].as_array() {
        words.extend(args.iter().filter_map(|a| a.as_str()).map(str::to_string));
    }
    words.join(" ")
}

/// Run `setup`.
pub fn run(args: SetupArgs) -> ExitCode {
    match run_inner(&args, &Env::from_process()) {
        Ok(report) => {
            print!("{}", clean(&report));
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("factory-mcp setup: {}", clean(&e));
            ExitCode::from(1)
        }
    }
}

fn run_inner(args: &SetupArgs, env: &Env) -> Result<String, String> {
    let cwd =
        std::env::current_dir().map_err(|e| format!("cannot read the current directory: {e}"))?;
    let project = match &args.project {
        Some(p) if p.is_absolute() => p.clone(),
        Some(p) => cwd.join(p),
        None => cwd,
    };
    let project = project
        .canonicalize()
        .map_err(|e| format!("project directory {}: {e}", project.display()))?;
    if !project.is_dir() {
        return Err(format!("{} is not a directory", project.display()));
    }
    let project_str = project
        .to_str()
        .ok_or_else(|| format!("the project path is not UTF-8: {}", project.display()))?;
    let command = match &args.command {
        Some(c) if c.trim().is_empty() || c.chars().any(char::is_control) => {
            return Err("--command must be a non-empty path without control characters".into());
        }
        Some(c) => c.clone(),
        None => default_command()?,
    };
    let scope = args.scope.unwrap_or(args.client.default_scope());
    let target = target(args.client, scope, &project, env)?;
    let name = entry_name(args.sandbox);
    let entry = entry(args.client, scope, args.sandbox, &command, project_str);
    let input = (args.client == Client::Vscode && !args.sandbox).then(vscode_key_input);

    // Follow a symlinked config file (dotfile managers) so the link itself stays.
    let path = match std::fs::symlink_metadata(&target.path) {
        Ok(m) if m.file_type().is_symlink() => target
            .path
            .canonicalize()
            .map_err(|e| format!("{}: {e}", target.path.display()))?,
        _ => target.path.clone(),
    };
    let old = match std::fs::read_to_string(&path) {
        Ok(text) => Some(text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => {
            return Err(format!(
                "cannot read {}: {e}; nothing was changed",
                path.display()
            ));
        }
    };
    let merged = merge(&target, old.as_deref(), name, &entry, input.as_ref())
        .map_err(|e| format!("{}: {e}; nothing was changed", path.display()))?;

    let mut out = String::new();
    out.push_str(&format!(
        "{} ({} scope): {}\n",
        args.client.name(),
        scope.name(),
        path.display()
    ));
    let what = match merged.change {
        Change::Added => "adds",
        Change::Replaced => "replaces",
        Change::Unchanged => {
            out.push_str(&format!(
                "  server \"{name}\" is already configured: nothing to change\n"
            ));
            return Ok(out);
        }
    };
    if args.dry_run {
        out.push_str(&diff(&path, old.as_deref().unwrap_or(""), &merged.text));
        out.push_str(&format!(
            "  dry run: would {} server \"{name}\" ({}); nothing was written\n",
            what.trim_end_matches('s'),
            shell_line(&entry)
        ));
        return Ok(out);
    }
    let backup = match &old {
        Some(_) => Some(backup(&path)?),
        None => None,
    };
    // A user-scope file (~/.claude.json, ~/.codex/config.toml, ...) holds the user's other
    // state and sometimes keys: a new one is owner-only. A project file is meant to be shared.
    let new_mode = match scope {
        Scope::User => 0o600,
        Scope::Project => 0o644,
    };
    write_atomic(&path, &merged.text, new_mode)?;
    let verb = match merged.change {
        Change::Added => "added",
        _ => "replaced",
    };
    out.push_str(&format!(
        "  {verb} server \"{name}\": {}\n",
        shell_line(&entry)
    ));
    for note in &merged.notes {
        out.push_str(&format!("  {note}\n"));
    }
    match backup {
        Some(b) => out.push_str(&format!("  backup of the previous file: {}\n", b.display())),
        None => out.push_str("  (new file)\n"),
    }
    out.push_str(
        "  no key is written: the server reads PRIME_API_KEY, else the key `prime login` saved\n",
    );
    Ok(out)
}

/// A unified diff of the change, with anything that looks like a credential redacted (the
/// context lines are the user's own file).
fn diff(path: &Path, old: &str, new: &str) -> String {
    let name = path.display().to_string();
    let text = similar::TextDiff::from_lines(old, new)
        .unified_diff()
        .context_radius(3)
        .header(&name, &name)
        .to_string();
    let redactor = factory_policies::Redactor::new(factory_policies::KnownSecrets::from_env(|k| {
        std::env::var(k).ok()
    }));
    redactor.redact(&text).into_owned()
}

/// Copy `path` to the first free `PATH.factory-mcp.bak[.N]`; never overwrites a backup.
fn backup(path: &Path) -> Result<PathBuf, String> {
    let base = format!("{}.factory-mcp.bak", path.display());
    for n in 0..1000u32 {
        let candidate = if n == 0 {
            PathBuf::from(&base)
        } else {
            PathBuf::from(format!("{base}.{n}"))
        };
        // create_new: never overwrite, even when racing another setup.
        // Owner-only until it takes the original's permissions (the file may hold a key).
        match std::os::unix::fs::OpenOptionsExt::mode(
            std::fs::OpenOptions::new().write(true).create_new(true),
            0o600,
        )
        .open(&candidate)
        {
            Ok(mut f) => {
                let bytes = std::fs::read(path)
                    .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
                let perms = std::fs::metadata(path)
                    .map_err(|e| format!("{}: {e}", path.display()))?
                    .permissions();
                f.set_permissions(perms)
                    .and_then(|()| f.write_all(&bytes))
                    .and_then(|()| f.sync_all())
                    .map_err(|e| {
                        format!(
                            "cannot write the backup {}: {e}; nothing was changed",
                            candidate.display()
                        )
                    })?;
                return Ok(candidate);
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => {
                return Err(format!(
                    "cannot create the backup {}: {e}; nothing was changed",
                    candidate.display()
                ));
            }
        }
    }
    Err(format!(
        "too many backups beside {}; nothing was changed",
        path.display()
    ))
}

/// Write `text` to `path` through a temporary file in the same directory and a rename, keeping
/// the old file's permissions; a new file gets `new_mode`.
fn write_atomic(path: &Path, text: &str, new_mode: u32) -> Result<(), String> {
    let dir = path
        .parent()
        .ok_or_else(|| format!("{} has no parent directory", path.display()))?;
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir)
        .map_err(|e| format!("cannot write in {}: {e}", dir.display()))?;
    if let Ok(meta) = std::fs::metadata(path) {
        tmp.as_file()
            .set_permissions(meta.permissions())
            .map_err(|e| format!("{}: {e}", path.display()))?;
    } else {
        use std::os::unix::fs::PermissionsExt as _;
        tmp.as_file()
            .set_permissions(std::fs::Permissions::from_mode(new_mode))
            .map_err(|e| format!("{}: {e}", path.display()))?;
    }
    tmp.write_all(text.as_bytes())
        .and_then(|()| tmp.as_file().sync_all())
        .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    tmp.persist(path)
        .map_err(|e| format!("cannot replace {}: {}", path.display(), e.error))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_hold_no_secret_and_match_the_examples() {
        for client in Client::ALL {
            for sandbox in [false, true] {
                let e = entry(client, Scope::Project, sandbox, "factory-mcp", "/p");
                let text = e.to_string();
                assert!(!text.contains("PRIME_API_KEY\":\"p"), "{text}");
                assert!(
                    factory_policies::Redactor::default().is_clean(&text),
                    "{text}"
                );
                assert_eq!(e["command"], "factory-mcp");
                assert_eq!(e["args"][0], "serve");
                assert_eq!(e["args"][1] == "--sandbox", sandbox);
            }
        }
        let cursor = entry(Client::Cursor, Scope::Project, false, "factory-mcp", "/p");
        let example: Value = serde_json::from_str(include_str!(
            "../../examples/clients/cursor/.cursor/mcp.json"
        ))
        .unwrap();
        assert_eq!(cursor, example["mcpServers"]["factory"]);
        let vscode = entry(Client::Vscode, Scope::Project, false, "factory-mcp", "/p");
        let example: Value = serde_json::from_str(include_str!(
            "../../examples/clients/vscode/.vscode/mcp.json"
        ))
        .unwrap();
        assert_eq!(vscode, example["servers"]["factory"]);
        assert_eq!(vscode_key_input(), example["inputs"][0]);
        let sandbox = entry(Client::Vscode, Scope::Project, true, "factory-mcp", "/p");
        let example: Value = serde_json::from_str(include_str!(
            "../../examples/clients/sandbox/vscode/.vscode/mcp.json"
        ))
        .unwrap();
        assert_eq!(sandbox, example["servers"]["factory-sandbox"]);
    }

    #[test]
    fn clean_replaces_escapes_and_bidi() {
        assert_eq!(clean("a\u{1b}[31mb\u{202e}c"), "a?[31mb?c");
    }
}
