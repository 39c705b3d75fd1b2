//! `factory-mcp doctor` on a healthy sandbox set-up and on three broken ones (no key, an
//! unreachable platform, a state directory that cannot be written), each with the message
//! that says what to do. The real binary, a temporary HOME, the sandbox in-process.

use std::path::Path;
use std::process::Output;

use factory_sandbox::{Sandbox, SandboxHandle, SandboxOptions};
use tempfile::TempDir;

struct World {
    sandbox: SandboxHandle,
    home: TempDir,
    project: TempDir,
}

impl World {
    async fn new() -> World {
        World {
            sandbox: Sandbox::start(SandboxOptions::manual_clock())
                .await
                .expect("sandbox starts"),
            home: tempfile::tempdir().unwrap(),
            project: tempfile::tempdir().unwrap(),
        }
    }

    fn key(&self) -> String {
        self.sandbox.api_key(0).expect("a seeded user")
    }

    /// A healthy environment: the key in PRIME_API_KEY, both services on the sandbox.
    fn env(&self) -> Vec<(String, String)> {
        let home = self.home.path().display().to_string();
        vec![
            ("PATH".into(), "/usr/bin:/bin".into()),
            ("HOME".into(), home.clone()),
            ("XDG_CONFIG_HOME".into(), format!("{home}/.config")),
            ("XDG_STATE_HOME".into(), format!("{home}/.state")),
            ("PRIME_API_BASE_URL".into(), self.sandbox.base_url()),
            ("PRIME_TRACES_URL".into(), self.sandbox.base_url()),
            ("PRIME_API_KEY".into(), self.key()),
        ]
    }

    async fn run(&self, bin: &str, args: &[&str], env: &[(String, String)]) -> Output {
        tokio::process::Command::new(bin)
            .args(args)
            .current_dir(self.project.path())
            .env_clear()
            .envs(env.iter().map(|(k, v)| (k, v)))
            .output()
            .await
            .expect("factory-mcp runs")
    }

    async fn doctor(&self, env: &[(String, String)]) -> (Option<i32>, String) {
        let out = self
            .run(env!("CARGO_BIN_EXE_factory-mcp"), &["doctor"], env)
            .await;
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.is_empty() || !stderr.contains("panicked"),
            "{stderr}"
        );
        // The key never appears whole, whatever happened.
        assert!(!stdout.contains(&self.key()), "{stdout}");
        (out.status.code(), stdout)
    }
}

fn without(env: &[(String, String)], name: &str) -> Vec<(String, String)> {
    env.iter().filter(|(k, _)| k != name).cloned().collect()
}

fn with(env: &[(String, String)], name: &str, value: &str) -> Vec<(String, String)> {
    let mut v = without(env, name);
    v.push((name.into(), value.into()));
    v
}

fn line<'a>(stdout: &'a str, status: &str, label: &str) -> &'a str {
    let prefix = format!("  {status}  {label}");
    stdout
        .lines()
        .find(|l| l.starts_with(&prefix))
        .unwrap_or_else(|| panic!("no `{prefix}` line:\n{stdout}"))
}

/// The `fix:` line right after the first line with `status` and `label`.
fn fix<'a>(stdout: &'a str, status: &str, label: &str) -> &'a str {
    let first = line(stdout, status, label);
    let mut lines = stdout.lines().skip_while(|l| *l != first);
    lines.next();
    lines
        .next()
        .map(str::trim)
        .filter(|l| l.starts_with("fix: "))
        .unwrap_or_else(|| panic!("no fix after {first:?}:\n{stdout}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_healthy_sandbox_set_up_passes_every_check() {
    let w = World::new().await;
    let env = w.env();
    // A client configured through setup, so the clients check has something to find.
    let bin = env!("CARGO_BIN_EXE_factory-mcp");
    let out = w.run(bin, &["setup", "claude-code"], &env).await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let (code, stdout) = w.doctor(&env).await;
    assert_eq!(code, Some(0), "{stdout}");
    let key = w.key();
    let tail: String = key.chars().skip(key.chars().count() - 4).collect();
    let key_line = line(&stdout, "ok  ", "key");
    assert!(
        key_line.contains(&format!("…{tail} from environment variable PRIME_API_KEY")),
        "{key_line}"
    );
    assert!(
        line(&stdout, "ok  ", "team").contains("personal account"),
        "{stdout}"
    );
    let platform = line(&stdout, "ok  ", "platform");
    assert!(
        platform.contains(&w.sandbox.base_url()) && platform.contains("key is accepted"),
        "{platform}"
    );
    assert!(
        line(&stdout, "ok  ", "traces").contains("answers"),
        "{stdout}"
    );
    let state = line(&stdout, "ok  ", "state");
    assert!(state.contains(".state/factory-mcp"), "{state}");
    assert!(
        line(&stdout, "ok  ", "policy").contains("built-in defaults"),
        "{stdout}"
    );
    assert!(
        line(&stdout, "ok  ", "policy").contains("confirm = human"),
        "{stdout}"
    );
    let clients = line(&stdout, "ok  ", "clients");
    assert!(
        clients.contains("claude-code (project): \"factory\"") && clients.contains("this binary"),
        "{clients}"
    );
    // The binary is not on this PATH: said, with how to fix it, but not a failure.
    assert!(
        fix(&stdout, "warn", "binary").contains("uv tool install factory-mcp"),
        "{stdout}"
    );
    assert!(stdout.contains("all checks passed"), "{stdout}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_key_fails_and_says_how_to_configure_one() {
    let w = World::new().await;
    let env = without(&w.env(), "PRIME_API_KEY");
    let (code, stdout) = w.doctor(&env).await;
    assert_eq!(code, Some(1), "{stdout}");
    assert!(
        line(&stdout, "FAIL", "key").contains("no Prime API key"),
        "{stdout}"
    );
    let f = fix(&stdout, "FAIL", "key");
    assert!(
        f.contains("prime login") && f.contains("PRIME_API_KEY") && f.contains("--sandbox"),
        "{f}"
    );
    assert!(
        line(&stdout, "warn", "platform").contains("not checked (no key)"),
        "{stdout}"
    );
    // The rest is still checked.
    line(&stdout, "ok  ", "state");
    line(&stdout, "ok  ", "policy");
    assert!(stdout.contains("1 check(s) failed"), "{stdout}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_platform_fails_and_names_the_url_to_check() {
    let w = World::new().await;
    // A loopback port with nothing listening.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let dead = format!("http://127.0.0.1:{port}");
    let env = with(&w.env(), "PRIME_API_BASE_URL", &dead);
    let (code, stdout) = w.doctor(&env).await;
    assert_eq!(code, Some(1), "{stdout}");
    let platform = line(&stdout, "FAIL", "platform");
    assert!(
        platform.contains(&format!("cannot reach {dead}")),
        "{platform}"
    );
    let f = fix(&stdout, "FAIL", "platform");
    assert!(
        f.contains("PRIME_API_BASE_URL") && f.contains("network"),
        "{f}"
    );
    // The traces service is elsewhere and still answers.
    line(&stdout, "ok  ", "traces");
    line(&stdout, "ok  ", "key");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_state_directory_that_cannot_be_created_fails_even_for_root() {
    let w = World::new().await;
    // Permission bits do not stop root: a regular file where a directory must be does.
    let blocker = w.home.path().join("not-a-dir");
    std::fs::write(&blocker, "x").unwrap();
    let env = with(&w.env(), "XDG_STATE_HOME", blocker.to_str().unwrap());
    let (code, stdout) = w.doctor(&env).await;
    assert_eq!(code, Some(1), "{stdout}");
    let state = line(&stdout, "FAIL", "state");
    assert!(
        state.contains(&format!("{} is a file, not a directory", blocker.display())),
        "{state}"
    );
    assert!(
        fix(&stdout, "FAIL", "state").contains("XDG_STATE_HOME"),
        "{stdout}"
    );
    line(&stdout, "ok  ", "platform");

    // The state directory itself being a file is caught too.
    let state_home = w.home.path().join("st");
    std::fs::create_dir_all(&state_home).unwrap();
    std::fs::write(state_home.join("factory-mcp"), "x").unwrap();
    let env = with(&w.env(), "XDG_STATE_HOME", state_home.to_str().unwrap());
    let (code, stdout) = w.doctor(&env).await;
    assert_eq!(code, Some(1), "{stdout}");
    assert!(
        line(&stdout, "FAIL", "state").contains("is not a directory"),
        "{stdout}"
    );
    assert!(Path::new(&state_home.join("factory-mcp")).is_file());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broken_policy_file_and_a_malformed_client_file_are_reported() {
    let w = World::new().await;
    let env = w.env();
    let cfg = w.home.path().join(".config/factory-mcp/config.toml");
    std::fs::create_dir_all(cfg.parent().unwrap()).unwrap();
    std::fs::write(&cfg, "confirm = \"sometimes\"\n").unwrap();
    std::fs::write(w.project.path().join(".mcp.json"), "{\"mcpServers\": {").unwrap();
    let (code, stdout) = w.doctor(&env).await;
    assert_eq!(code, Some(1), "{stdout}");
    assert!(
        line(&stdout, "FAIL", "policy").contains("config.toml"),
        "{stdout}"
    );
    assert!(
        line(&stdout, "warn", "clients").contains("does not parse"),
        "{stdout}"
    );
}
