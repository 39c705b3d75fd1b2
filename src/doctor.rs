//! `factory-mcp doctor`: what a new user checks when something does not work — which binary
//! runs, where the key comes from (masked), the team, whether the platform and the traces
//! service answer, the state directory and its permissions, the policy in force, and which
//! assistants are configured to start this server. Every failure says what to do.
//!
//! It changes nothing: the state directory's writability is tried with a temporary file that is
//! removed at once. Reachability goes through factory-platform's client (one attempt, short
//! timeouts); the key never leaves the process except in the request's header.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use factory_platform::{PlatformClient, PlatformError, PlatformSettings, TracesQuery};
use factory_policies::{KnownSecrets, Redactor, Workspace, mask_key};
use factory_server::settings::{Settings, SettingsArgs};

use crate::setup::{self, Env, scan::FileScan};

/// Check the installation and the set-up, and say what to fix.
#[derive(Debug, clap::Args)]
pub struct DoctorArgs {
    /// The flags `serve` would get (policy file, workspace, …): the policy is checked as it
    /// would be in force.
    #[command(flatten)]
    pub settings: SettingsArgs,
    /// The project whose client files are checked [default: the current directory].
    #[arg(long, value_name = "DIR")]
    pub project: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Status {
    Ok,
    Warn,
    Fail,
}

struct Check {
    status: Status,
    label: &'static str,
    detail: String,
    fix: Option<String>,
}

impl Check {
    fn ok(label: &'static str, detail: impl Into<String>) -> Check {
        Check {
            status: Status::Ok,
            label,
            detail: detail.into(),
            fix: None,
        }
    }
    fn warn(label: &'static str, detail: impl Into<String>, fix: impl Into<String>) -> Check {
        Check {
            status: Status::Warn,
            label,
            detail: detail.into(),
            fix: Some(fix.into()),
        }
    }
    fn fail(label: &'static str, detail: impl Into<String>, fix: impl Into<String>) -> Check {
        Check {
            status: Status::Fail,
            label,
            detail: detail.into(),
            fix: Some(fix.into()),
        }
    }
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// Run `doctor`: exit 0 when nothing failed (warnings allowed), 1 otherwise.
pub async fn run(args: DoctorArgs) -> ExitCode {
    let project = match &args.project {
        Some(p) => p.clone(),
        None => std::env::current_dir().unwrap_or_else(|_| PathBuf::from(".")),
    };
    let mut checks = Vec::new();
    checks.push(binary());
    let settings = Settings::load(&args.settings, &env);
    let platform = factory_platform::resolve_from_process_env();
    let mut known = KnownSecrets::from_env(env);
    if let Ok(s) = &platform
        && let Some(key) = &s.api_key
    {
        known.add("PRIME_API_KEY", key);
    }
    match &platform {
        Err(e) => checks.push(Check::fail(
            "key",
            format!("the Prime settings cannot be read: {e}"),
            "fix or remove that file, or export PRIME_API_KEY (and PRIME_TEAM_ID)",
        )),
        Ok(s) => {
            checks.push(key(s));
            checks.push(team(s));
            let policy_timeouts = settings.as_ref().ok().map(|s| s.policy.platform.clone());
            checks.extend(reachability(s.clone(), policy_timeouts).await);
        }
    }
    checks.push(state_dir());
    checks.extend(policy(&settings, &project));
    checks.extend(clients(&project));

    let redactor = Redactor::new(known);
    let mut out = String::from("factory-mcp doctor\n");
    for c in &checks {
        let tag = match c.status {
            Status::Ok => "ok  ",
            Status::Warn => "warn",
            Status::Fail => "FAIL",
        };
        out.push_str(&format!("  {tag}  {:<9} {}\n", c.label, c.detail));
        if let Some(fix) = &c.fix {
            out.push_str(&format!("                  fix: {fix}\n"));
        }
    }
    let failed = checks.iter().filter(|c| c.status == Status::Fail).count();
    let warned = checks.iter().filter(|c| c.status == Status::Warn).count();
    out.push_str(&match failed {
        0 => format!("all checks passed ({warned} warning(s))\n"),
        n => format!("{n} check(s) failed, {warned} warning(s)\n"),
    });
    print!("{}", setup::clean(&redactor.redact(&out)));
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

fn binary() -> Check {
    let version = env!("CARGO_PKG_VERSION");
    let exe = match std::env::current_exe().and_then(|p| p.canonicalize()) {
        Ok(p) => p,
        Err(e) => {
            return Check::ok(
                "binary",
                format!("factory-mcp {version} (path unknown: {e})"),
            );
        }
    };
    let here = format!("{} (version {version})", exe.display());
    match setup::which("factory-mcp", std::env::var_os("PATH")) {
        None => Check::warn(
            "binary",
            format!("{here}; no factory-mcp on PATH"),
            "clients start `factory-mcp` by name: install it (`uv tool install factory-mcp`, or \
             `cargo install --path .`), or let `factory-mcp setup` write this absolute path",
        ),
        Some(found) if found.canonicalize().ok().as_deref() != Some(exe.as_path()) => Check::warn(
            "binary",
            format!(
                "{here}; but the factory-mcp first on PATH is {}",
                found.display()
            ),
            "clients that run `factory-mcp` start that other copy: remove it or reorder PATH",
        ),
        Some(_) => Check::ok("binary", format!("{here}, first on PATH")),
    }
}

fn key(s: &PlatformSettings) -> Check {
    match &s.api_key {
        Some(k) => Check::ok("key", format!("{} from {}", mask_key(k), s.api_key_source)),
        None => Check::fail(
            "key",
            "no Prime API key (PRIME_API_KEY is unset or empty, and ~/.prime/config.json has none)",
            "run `prime login`, or export PRIME_API_KEY in the environment your assistant starts \
             from; to try the tools without an account: `factory-mcp setup CLIENT --sandbox`",
        ),
    }
}

fn team(s: &PlatformSettings) -> Check {
    match &s.team {
        Some(t) => Check::ok("team", format!("{} from {}", t.id, t.source)),
        None => Check::ok(
            "team",
            "personal account (no PRIME_TEAM_ID and no saved team)",
        ),
    }
}

async fn reachability(
    mut s: PlatformSettings,
    timeouts: Option<factory_policies::policy::PlatformTimeouts>,
) -> Vec<Check> {
    if s.api_key.is_none() {
        return vec![
            Check::warn(
                "platform",
                format!("{}: not checked (no key)", s.base_url),
                "configure a key first (see above)",
            ),
            Check::warn(
                "traces",
                format!("{}: not checked (no key)", s.traces_url),
                "configure a key first (see above)",
            ),
        ];
    }
    // One attempt, bounded: the doctor reports, it does not wait out an outage.
    s.retry.max_attempts = 1;
    let connect = timeouts
        .as_ref()
        .map_or(10, |t| t.connect_timeout_s)
        .min(10);
    s.timeouts.connect = Duration::from_secs(connect);
    s.timeouts.request = Duration::from_secs(15);
    s.timeouts.traces = Duration::from_secs(15);
    let base = s.base_url.clone();
    let traces_url = s.traces_url.clone();
    let client = match PlatformClient::new(s) {
        Ok(c) => c,
        Err(e) => {
            return vec![Check::fail(
                "platform",
                format!("cannot build the platform client: {e}"),
                "check PRIME_API_BASE_URL / PRIME_TRACES_URL and the URLs in ~/.prime/config.json",
            )];
        }
    };
    let platform = match client.whoami().await {
        Ok(_) => Check::ok("platform", format!("{base} answers; the key is accepted")),
        Err(e) => platform_failure("platform", &base, &e, "PRIME_API_BASE_URL"),
    };
    let query = TracesQuery {
        limit: 1,
        ..TracesQuery::default()
    };
    let traces = match client.traces().list_traces(&query).await {
        Ok(_) => Check::ok("traces", format!("{traces_url} answers")),
        Err(e) => platform_failure("traces", &traces_url, &e, "PRIME_TRACES_URL"),
    };
    vec![platform, traces]
}

fn platform_failure(label: &'static str, url: &str, e: &PlatformError, var: &str) -> Check {
    match e {
        PlatformError::Transport { .. } | PlatformError::Timeout { .. } => Check::fail(
            label,
            format!("cannot reach {url}: {e}"),
            format!(
                "check the network (proxy, VPN, firewall) and {var} / the URL in \
                 ~/.prime/config.json; `prime whoami` should work from the same shell"
            ),
        ),
        PlatformError::Unauthorized => Check::fail(
            label,
            format!("{url} answers, but refuses the key"),
            "run `prime login` again, or export a valid PRIME_API_KEY",
        ),
        PlatformError::Server { .. } | PlatformError::RateLimited { .. } => Check::warn(
            label,
            format!("{url} answers with an error: {e}"),
            "the service is having trouble: try again in a few minutes",
        ),
        _ => Check::warn(
            label,
            format!("{url} answers, with: {e}"),
            "check the key's scopes and the active team",
        ),
    }
}

fn state_dir() -> Check {
    let Some(dir) = factory_policies::store::Store::default_dir(&env) else {
        return Check::fail(
            "state",
            "no state directory: XDG_STATE_HOME and HOME are unset (or not absolute)",
            "set HOME (or XDG_STATE_HOME to an absolute directory)",
        );
    };
    let shown = dir.display().to_string();
    let fix_env = "point XDG_STATE_HOME at a directory you can write (the state lives in \
                   $XDG_STATE_HOME/factory-mcp)";
    match std::fs::metadata(&dir) {
        Ok(m) if !m.is_dir() => Check::fail(
            "state",
            format!("{shown} exists but is not a directory"),
            format!("move that file away, or {fix_env}"),
        ),
        Ok(m) => {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = m.permissions().mode() & 0o777;
            if let Err(e) = try_write(&dir) {
                return Check::fail(
                    "state",
                    format!("{shown} (mode {mode:03o}) is not writable: {e}"),
                    format!("`chmod u+w {shown}`, or {fix_env}"),
                );
            }
            if mode & 0o077 != 0 {
                return Check::warn(
                    "state",
                    format!("{shown} (mode {mode:03o}), writable, but others may read it"),
                    format!("`chmod 700 {shown}`: it holds plans and the audit log"),
                );
            }
            Check::ok("state", format!("{shown} (mode {mode:03o}), writable"))
        }
        Err(_) => {
            // Not there yet: the server creates it. Find what it would be created under.
            let mut ancestor = dir.parent();
            while let Some(a) = ancestor {
                if std::fs::symlink_metadata(a).is_ok() {
                    break;
                }
                ancestor = a.parent();
            }
            let Some(a) = ancestor else {
                return Check::fail("state", format!("{shown} cannot be created"), fix_env);
            };
            if !a.is_dir() {
                return Check::fail(
                    "state",
                    format!(
                        "{shown} cannot be created: {} is a file, not a directory",
                        a.display()
                    ),
                    fix_env,
                );
            }
            match try_write(a) {
                Ok(()) => Check::ok(
                    "state",
                    format!("{shown} (not created yet; the server creates it, mode 700)"),
                ),
                Err(e) => Check::fail(
                    "state",
                    format!(
                        "{shown} cannot be created: {} is not writable: {e}",
                        a.display()
                    ),
                    fix_env,
                ),
            }
        }
    }
}

/// Create and remove a temporary file in `dir` (what the server will need to do).
fn try_write(dir: &Path) -> std::io::Result<()> {
    let f = tempfile::Builder::new()
        .prefix(".factory-mcp-doctor")
        .tempfile_in(dir)?;
    f.close()
}

fn policy(
    settings: &Result<Settings, factory_server::settings::SettingsError>,
    project: &Path,
) -> Vec<Check> {
    let s = match settings {
        Ok(s) => s,
        Err(e) => {
            let fix = match e.key() {
                Some(key) => format!("fix `{key}` (see examples/policy.toml), or the flag"),
                None => "fix the policy file or the flag (see examples/policy.toml)".into(),
            };
            return vec![Check::fail("policy", e.to_string(), fix)];
        }
    };
    let p = &s.policy;
    let source = match &s.config_file {
        Some(f) => format!("from {}", f.display()),
        None => "built-in defaults (no policy file)".to_string(),
    };
    let mut parts = vec![format!("confirm = {}", p.confirm)];
    if p.read_only {
        parts.push("read-only".into());
    }
    if let Some(n) = p.max_gpus_per_run {
        parts.push(format!("max {n} GPUs/run"));
    }
    if let Some(usd) = p.max_cost_per_hour_usd {
        parts.push(format!("max ${usd}/h per run"));
    }
    if let Some(teams) = &p.allowed_teams {
        parts.push(format!("teams {}", teams.join(",")));
    }
    let mut checks = vec![Check::ok(
        "policy",
        format!("{source}: {}", parts.join(", ")),
    )];
    let home = env("HOME").map(PathBuf::from);
    match Workspace::new(
        p.workspace.clone(),
        p.allow_dirs.clone(),
        project,
        home.as_deref(),
    ) {
        Ok(ws) => checks.push(Check::ok(
            "workspace",
            format!("{} (file tools stay inside it)", ws.root().display()),
        )),
        Err(e) => checks.push(Check::warn(
            "workspace",
            e.to_string(),
            "pass --workspace DIR (the clients' set-ups do), or run from your project directory",
        )),
    }
    checks
}

fn clients(project: &Path) -> Vec<Check> {
    let env = Env::from_process();
    let project = project
        .canonicalize()
        .unwrap_or_else(|_| project.to_path_buf());
    let mut found = Vec::new();
    let mut checks = Vec::new();
    for r in setup::scan::scan(&project, &env) {
        match r {
            FileScan::Entries(e) => found.extend(e),
            FileScan::Unreadable { path, why } => checks.push(Check::warn(
                "clients",
                format!("{} does not parse: {why}", path.display()),
                "the client cannot read it either: fix it (setup refuses to edit it until then)",
            )),
        }
    }
    let exe = std::env::current_exe().and_then(|p| p.canonicalize()).ok();
    for f in &found {
        let mut detail = format!(
            "{} ({}): \"{}\" in {} runs {}{}",
            f.client.name(),
            f.scope,
            f.name,
            f.path.display(),
            f.command,
            if f.sandbox { " (sandbox)" } else { "" }
        );
        let resolved = if Path::new(&f.command).is_absolute() {
            Some(PathBuf::from(&f.command))
        } else {
            setup::which(&f.command, std::env::var_os("PATH"))
        };
        match resolved.as_deref().map(|p| p.canonicalize()) {
            Some(Ok(p)) if Some(&p) == exe.as_ref() => {
                detail.push_str(", this binary");
                checks.push(Check::ok("clients", detail));
            }
            Some(Ok(p)) => {
                detail.push_str(&format!(", which is {} (another copy)", p.display()));
                checks.push(Check::ok("clients", detail));
            }
            _ => checks.push(Check::warn(
                "clients",
                format!("{detail}, which is not found here"),
                format!(
                    "run `factory-mcp setup {}` again to write this binary's path",
                    f.client.name()
                ),
            )),
        }
    }
    if found.is_empty() {
        checks.push(Check::warn(
            "clients",
            "no assistant is configured to start factory-mcp",
            "run `factory-mcp setup claude-code` (or cursor, codex, vscode; --sandbox without an \
             account)",
        ));
    }
    checks
}
