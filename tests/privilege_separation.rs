//! The recipe in docs/SECURITY.md, "The real boundary: another OS user", followed literally on
//! this machine: a server user (`useradd --system --create-home --shell /usr/sbin/nologin`)
//! that alone holds the platform key (`~/.prime/config.json`, written under `umask 077`) and
//! runs `factory-mcp serve --http` on loopback with `--confirm out_of_band`; a second user
//! standing for the assistant, holding only the URL and the bearer token. What it shows:
//! the assistant's user cannot read the key, the token file or the state directory; its own
//! `factory-mcp approve` cannot record anything; a client answering its own form launches
//! nothing; and the person's `approve`, run as the server user on a terminal, makes exactly one
//! run on the sandbox.
//!
//! Needs root (CI runs as root on a fresh Debian machine) and `useradd`/`userdel` (Debian's
//! `passwd`) and `runuser` (`util-linux`). Both users get unique throwaway names and are removed
//! with `userdel -r` when the test ends, failed or not.

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{World, call, err, ok, rl_config};
use rmcp::{
    ClientHandler, ErrorData, ServiceExt,
    model::{
        ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult, ElicitationAction,
        ElicitationCapability, FormElicitationCapability, Implementation, UrlElicitationCapability,
    },
    service::{RequestContext, RoleClient},
    transport::{
        StreamableHttpClientTransport, streamable_http_client::StreamableHttpClientTransportConfig,
    },
};
use serde_json::json;
use tokio::io::{AsyncBufReadExt, BufReader};

const TEAM: &str = factory_sandbox::TEAM_ALPHA_ID;

/// Fail (never skip) unless this runs as root with the user tools installed.
fn require_root_and_tools() {
    // SAFETY: geteuid has no preconditions.
    let euid = unsafe { libc::geteuid() };
    assert_eq!(
        euid, 0,
        "tests/privilege_separation.rs creates two throwaway OS users and must run as root \
         (CI does); run it as root, e.g. `sudo -E cargo test --test privilege_separation`"
    );
    for (tool, package) in [
        ("useradd", "passwd"),
        ("userdel", "passwd"),
        ("runuser", "util-linux"),
    ] {
        let found = Command::new(tool)
            .arg("--help")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok();
        assert!(
            found,
            "`{tool}` is not on PATH: install it with `apt-get install -y {package}` \
             (and make sure /usr/sbin is on PATH)"
        );
    }
}

/// Throwaway OS users, removed with `userdel -r` on drop (also when the test fails).
struct Users(Vec<String>);

impl Users {
    fn add(&mut self, name: &str, args: &[&str]) {
        let out = Command::new("useradd")
            .args(args)
            .arg(name)
            .output()
            .expect("run useradd");
        assert!(
            out.status.success(),
            "useradd {name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        self.0.push(name.to_owned());
    }
}

impl Drop for Users {
    fn drop(&mut self) {
        for name in &self.0 {
            // `-f`: remove it even if a process of the user were somehow still alive.
            let _ = Command::new("userdel")
                .args(["-r", "-f", name])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
        }
    }
}

/// A user's home directory, from the passwd database.
fn home_of(user: &str) -> PathBuf {
    let out = Command::new("getent")
        .args(["passwd", user])
        .output()
        .expect("run getent");
    let line = String::from_utf8_lossy(&out.stdout).to_string();
    let home = line.trim().split(':').nth(5).unwrap_or_default().to_owned();
    assert!(home.starts_with('/'), "no home for {user}: {line:?}");
    PathBuf::from(home)
}

/// `runuser -u USER -- ARGS…` with a clean environment (runuser sets HOME and SHELL itself).
fn as_user(user: &str, args: &[&str]) -> Command {
    let mut cmd = Command::new("runuser");
    cmd.args(["-u", user, "--"])
        .args(args)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .current_dir("/");
    cmd
}

fn run_as(user: &str, args: &[&str]) -> Output {
    as_user(user, args)
        .stdin(Stdio::null())
        .output()
        .expect("run runuser")
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .permissions()
        .mode()
        & 0o777
}

/// The server: `runuser -u factory -- factory-mcp serve --http …` in its own process group, so
/// that both runuser and the server it started are ended by that group's id.
struct Server {
    child: tokio::process::Child,
    pgid: i32,
    url: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        // SAFETY: kill on the process group this test created for the server.
        unsafe { libc::kill(-self.pgid, libc::SIGKILL) };
        let _ = self.child.start_kill();
    }
}

async fn serve_as(user: &str, bin: &Path) -> Server {
    factory_platform::ensure_tls_provider();
    let mut child = tokio::process::Command::new("runuser")
        .args(["-u", user, "--"])
        .arg(bin)
        .args(["serve", "--http", "127.0.0.1:0", "--confirm", "out_of_band"])
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .current_dir(home_of(user))
        .process_group(0)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn runuser … serve");
    let pgid = child.id().expect("server pid") as i32;
    let mut lines = BufReader::new(child.stderr.take().expect("stderr")).lines();
    let url = tokio::time::timeout(Duration::from_secs(60), async {
        let mut seen = String::new();
        while let Ok(Some(line)) = lines.next_line().await {
            if let Some(rest) = line.split("serving MCP at ").nth(1) {
                return rest.trim().to_string();
            }
            seen.push_str(&line);
            seen.push('\n');
        }
        panic!("the server exited before listening:\n{seen}");
    })
    .await
    .expect("the server listens (hang guard)");
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    Server { child, pgid, url }
}

/// A client that declares form and URL elicitation and answers yes to everything, recording
/// what it was sent: the assistant approving its own plan (a page address it were sent, it
/// could open and decide with itself).
#[derive(Clone)]
struct SaysYes {
    seen: Arc<Mutex<Vec<String>>>,
}

impl ClientHandler for SaysYes {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::builder()
                .enable_elicitation_with(
                    ElicitationCapability::new()
                        .with_form(FormElicitationCapability::new())
                        .with_url(UrlElicitationCapability::new()),
                )
                .build(),
            Implementation::new("self-approving-assistant", "0.0.1"),
        )
    }
    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let (shown, answer) = match &request {
            ElicitRequestParams::FormElicitationParams { message, .. } => (
                message.clone(),
                ElicitResult::new(ElicitationAction::Accept).with_content(json!({"confirm": true})),
            ),
            ElicitRequestParams::UrlElicitationParams { url, .. } => {
                (url.clone(), ElicitResult::new(ElicitationAction::Accept))
            }
            other => (
                format!("{other:?}"),
                ElicitResult::new(ElicitationAction::Accept),
            ),
        };
        self.seen.lock().unwrap().push(shown);
        Ok(answer)
    }
}

#[tokio::test]
async fn the_documented_two_user_recipe_keeps_the_key_the_state_and_the_yes_from_the_assistant() {
    require_root_and_tools();
    let w = World::new().await;

    // The binary where both users can run it (the build directory may be under /root).
    let bin_dir = tempfile::Builder::new()
        .prefix("factory-mcp-bin")
        .tempdir()
        .expect("tempdir");
    std::fs::set_permissions(bin_dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let bin = bin_dir.path().join("factory-mcp");
    std::fs::copy(env!("CARGO_BIN_EXE_factory-mcp"), &bin).expect("copy the binary");
    std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
    let bin_s = bin.display().to_string();

    let mut users = Users(Vec::new());
    let tag = std::process::id();
    let server_user = format!("fmcps{tag}");
    let assistant = format!("fmcpa{tag}");
    // Step 1 of the recipe, literally (but a unique name instead of `factory`).
    users.add(
        &server_user,
        &["--system", "--create-home", "--shell", "/usr/sbin/nologin"],
    );
    users.add(&assistant, &["--create-home", "--shell", "/bin/sh"]);
    let home = home_of(&server_user);

    // `sudo -u factory -H sh -c 'umask 077; mkdir -p ~/.prime; cat > ~/.prime/config.json'
    // < key.json` — the key file, here also naming the sandbox as the platform.
    let key = w.key(0);
    let key_json = json!({
        "api_key": key,
        "base_url": w.sandbox.base_url(),
        "frontend_url": w.sandbox.frontend_url(),
        "traces_url": w.sandbox.base_url(),
    })
    .to_string();
    let mut write_key = as_user(
        &server_user,
        &[
            "sh",
            "-c",
            "umask 077; mkdir -p ~/.prime; cat > ~/.prime/config.json",
        ],
    );
    let mut child = write_key
        .stdin(Stdio::piped())
        .spawn()
        .expect("spawn the key writer");
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(key_json.as_bytes()).unwrap();
    }
    assert!(child.wait().unwrap().success(), "writing the key file");
    let key_file = home.join(".prime/config.json");
    assert_eq!(mode(&home.join(".prime")), 0o700);
    assert_eq!(mode(&key_file), 0o600);

    // Step 2: the server as that user, HTTP on loopback, out-of-band approvals only.
    let server = serve_as(&server_user, &bin).await;
    assert!(
        server.url.starts_with("http://127.0.0.1:"),
        "{}",
        server.url
    );
    let state_dir = home.join(".local/state/factory-mcp");
    let token_file = state_dir.join("http-token");
    assert_eq!(
        mode(&state_dir),
        0o700,
        "the state directory the recipe names"
    );
    let token = common::read_http_token(&token_file);
    let state_s = state_dir.display().to_string();
    let token_s = token_file.display().to_string();
    let key_s = key_file.display().to_string();

    // (1) The assistant's user cannot read the key, the token file or the state directory; the
    // server's user can (so a refusal here is the boundary, not a wrong path).
    for path in [&key_s, &token_s] {
        let own = run_as(&server_user, &["cat", path]);
        assert!(own.status.success(), "the server user reads {path}");
        let other = run_as(&assistant, &["cat", path]);
        assert!(!other.status.success(), "the assistant read {path}");
        let msg = String::from_utf8_lossy(&other.stderr);
        assert!(msg.contains("Permission denied"), "{path}: {msg}");
        assert!(other.stdout.is_empty());
    }
    assert!(run_as(&server_user, &["ls", &state_s]).status.success());
    let listing = run_as(&assistant, &["ls", &state_s]);
    assert!(!listing.status.success(), "the assistant listed {state_s}");
    assert!(String::from_utf8_lossy(&listing.stderr).contains("Permission denied"));

    // (3) With the URL and the token, the assistant plans over HTTP, and its client's own yes
    // launches nothing: it is sent no form and no approval-page address (with which it could
    // decide itself); launch_run waits for a person.
    let seen = Arc::new(Mutex::new(Vec::new()));
    let client = SaysYes { seen: seen.clone() }
        .serve(StreamableHttpClientTransport::from_config(
            StreamableHttpClientTransportConfig::with_uri(server.url.clone())
                .auth_header(token.clone()),
        ))
        .await
        .expect("the assistant's client connects with the token");
    let plan = ok(&call(
        &client,
        "plan_run",
        json!({"config_toml": rl_config("two-users", 5), "team_id": TEAM}),
    )
    .await);
    assert!(
        plan["confirmation"]
            .as_str()
            .unwrap_or_default()
            .contains("out_of_band"),
        "{plan}"
    );
    let plan_id = plan["plan_id"].as_str().expect("plan_id").to_owned();
    let waiting = err(&call(&client, "launch_run", json!({"plan_id": plan_id})).await);
    assert!(
        waiting.contains("out_of_band")
            && waiting.contains(&format!("factory-mcp approve {plan_id}")),
        "{waiting}"
    );
    assert!(
        seen.lock().unwrap().is_empty(),
        "the client was sent neither a form nor a page address: {:?}",
        seen.lock().unwrap()
    );
    assert_eq!(w.sandbox.create_requests(), 0);

    // (2) The assistant's own `approve`, even on a terminal of its own and pointed at the
    // server's state directory, cannot open the store: nothing is recorded.
    let mut own_approve = as_user(
        &assistant,
        &[&bin_s, "approve", &plan_id, "--state-dir", &state_s],
    );
    own_approve
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let done = common::pty::spawn(&mut own_approve).finish();
    assert!(
        !done.status.success(),
        "the assistant's approve succeeded: {}\n{}",
        done.shown,
        done.stderr
    );
    let said = format!("{}{}", done.shown, done.stderr);
    assert!(
        said.contains("permission denied") && said.contains("nothing was recorded"),
        "approve says why: {said}"
    );
    assert!(
        said.contains("as the OS user the server runs as"),
        "and what to do: {said}"
    );
    assert!(
        !said.contains("type this code"),
        "no code was offered: {said}"
    );
    let still = err(&call(&client, "launch_run", json!({"plan_id": plan_id})).await);
    assert!(
        still.contains(&format!("factory-mcp approve {plan_id}")),
        "still waiting for a person after the assistant's approve: {still}"
    );
    assert_eq!(w.sandbox.create_requests(), 0);

    // (4) Step 3: the person approves as the server user, in a terminal, with the documented
    // command (no --state-dir: the server user's default state directory).
    let mut person = as_user(&server_user, &[&bin_s, "approve", &plan_id]);
    person
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut t = common::pty::spawn(&mut person);
    let code = t.code();
    t.type_in(&format!("{code}\n"));
    let done = t.finish();
    assert!(
        done.status.success(),
        "the person's approve: {}\n{}",
        done.shown,
        done.stderr
    );
    let launched = ok(&call(&client, "launch_run", json!({"plan_id": plan_id})).await);
    assert_eq!(launched["deduplicated"], false, "{launched}");
    let again = ok(&call(&client, "launch_run", json!({"plan_id": plan_id})).await);
    assert_eq!(again["deduplicated"], true, "{again}");
    assert_eq!(w.sandbox.create_requests(), 1, "exactly one run");
    // The platform saw the key from the server user's file, never the MCP token.
    let log = format!("{:?}", w.sandbox.request_log());
    assert!(!log.contains(&token));
    client.cancel().await.unwrap();

    drop(server);
    drop(users);
}
