//! Interoperability: the real `factory-mcp` binary driven by third-party MCP clients against a
//! manual-clock sandbox in-process.
//!
//! - The official Python SDK (PyPI `mcp==2.3.0`, `tests/interop/py_client.py`) over stdio and
//!   streamable HTTP, in both protocol eras (`auto` negotiates 2026-07-28, `legacy` 2025-11-25):
//!   each of the 13 read tools is called and its structured content validated against its output
//!   schema (tools added since are listed in the summary as `extra_tools`, not failed).
//! - The MCP Inspector CLI (npm `@modelcontextprotocol/inspector`, run on Node 22): `tools/list
//!   --strict` (schema portability lint) and `tools/call` for `whoami` and `get_run`, over stdio
//!   and HTTP, in both eras.
//!
//! The peers are installed by `scripts/setup-interop.sh` into `.interop/`; `scripts/test.sh`
//! exports `FACTORY_MCP_INTEROP_DIR`. Without them the tests print a skip note and pass, except
//! under CI (env `CI` set), where they fail.

use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use factory_sandbox::{Sandbox, SandboxHandle, SandboxOptions};
use serde_json::{Value, json};
use tempfile::TempDir;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};
use tokio::time::timeout;

const BIN: &str = env!("CARGO_BIN_EXE_factory-mcp");
const PY_CLIENT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/interop/py_client.py");
/// Longest a Python client run may take (it bounds itself at 150 s).
const PY_LIMIT: Duration = Duration::from_secs(200);
/// Longest one Inspector invocation may take.
const INSPECTOR_LIMIT: Duration = Duration::from_secs(90);
/// Longest the HTTP server may take to say where it listens.
const LISTEN_LIMIT: Duration = Duration::from_secs(60);
/// The tools every client must see (the Python script calls each of them).
const TOOL_COUNT: usize = 13;

// ---- the peers -----------------------------------------------------------------------------

struct Peers {
    python: PathBuf,
    /// Node 22's `bin` directory: first on PATH for the Inspector.
    node_bin: PathBuf,
    /// The Inspector's launcher script (`bin.mcp-inspector` of its package.json).
    inspector: PathBuf,
}

fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false" && v != "0")
}

/// The installed peers, or `None` after a skip note (a panic under CI).
fn peers(test: &str) -> Option<Peers> {
    match find_peers() {
        Ok(p) => Some(p),
        Err(why) if in_ci() => panic!("{test}: interoperability peers missing under CI: {why}"),
        Err(why) => {
            eprintln!("SKIP {test}: {why} (run scripts/setup-interop.sh, or use scripts/test.sh)");
            None
        }
    }
}

fn find_peers() -> Result<Peers, String> {
    let dir = std::env::var_os("FACTORY_MCP_INTEROP_DIR")
        .map(PathBuf::from)
        .ok_or("FACTORY_MCP_INTEROP_DIR is not set")?;
    let python = dir.join("venv/bin/python");
    let node_bin = dir.join("node/node_modules/.bin");
    let pkg = dir.join("inspector/node_modules/@modelcontextprotocol/inspector");
    for p in [&python, &node_bin.join("node"), &pkg.join("package.json")] {
        if !p.exists() {
            return Err(format!("{} is missing", p.display()));
        }
    }
    let manifest: Value = std::fs::read(pkg.join("package.json"))
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .ok_or("the Inspector's package.json is unreadable")?;
    let launcher = manifest["bin"]["mcp-inspector"]
        .as_str()
        .ok_or("the Inspector's package.json names no mcp-inspector bin")?;
    let inspector = pkg.join(launcher);
    if !inspector.is_file() {
        return Err(format!("{} is missing", inspector.display()));
    }
    Ok(Peers {
        python,
        node_bin,
        inspector,
    })
}

/// PATH with Node 22 first.
fn path_with(first: &Path) -> String {
    let rest = std::env::var("PATH").unwrap_or_else(|_| "/usr/local/bin:/usr/bin:/bin".into());
    format!("{}:{rest}", first.display())
}

// ---- the platform: a manual-clock sandbox with one RUNNING run ------------------------------

struct World {
    sb: SandboxHandle,
    key: String,
    run_id: String,
    _tmp: TempDir,
    workspace: PathBuf,
    home: PathBuf,
}

impl World {
    async fn start() -> Self {
        let sb = Sandbox::start(SandboxOptions::manual_clock())
            .await
            .expect("sandbox starts");
        let key = sb.api_key(0).expect("seeded user 0");
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(20))
            .build()
            .expect("http client");
        let config = json!({
            "max_steps": 20,
            "model": {"name": "PrimeIntellect/Qwen3-0.6B"},
            "trainer": {},
            "orchestrator": {
                "batch_size": 8,
                "train": {"source": [{"name": "reverse-text", "env": {"taskset": {"id": "reverse-text"}}}]},
            },
            "deployment": {"num_train_gpus": 1, "num_infer_gpus": 1},
        });
        let resp = http
            .post(format!("{}/api/v1/training/runs", sb.base_url()))
            .bearer_auth(&key)
            .json(&json!({"config": config, "name": "interop"}))
            .send()
            .await
            .expect("create run");
        let status = resp.status();
        let body: Value = resp.json().await.unwrap_or(Value::Null);
        assert!(status.is_success(), "create run answered {status}: {body}");
        let run_id = body["runId"].as_str().expect("runId").to_string();

        // Simulated time only: QUEUED -> PENDING -> RUNNING within a few seconds, then steps.
        let status_of = |sb: &SandboxHandle| {
            let v = sb.run(&run_id).expect("the run exists");
            (
                v["run"]["status"].as_str().unwrap_or("").to_string(),
                v["steps"].as_u64().unwrap_or(0),
            )
        };
        let mut waited = 0;
        while status_of(&sb).0 != "RUNNING" {
            assert!(
                waited < 60,
                "run not RUNNING after {waited} simulated s: {:?}",
                status_of(&sb)
            );
            sb.advance(Duration::from_secs(1));
            waited += 1;
        }
        sb.advance(Duration::from_secs(13));
        let (status, steps) = status_of(&sb);
        assert_eq!(status, "RUNNING", "the run left RUNNING too early");
        assert!(steps >= 3, "only {steps} steps done");

        let tmp = tempfile::tempdir().expect("tempdir");
        let workspace = tmp.path().join("workspace");
        let home = tmp.path().join("home");
        for d in [&workspace, &home.join(".config"), &home.join(".state")] {
            std::fs::create_dir_all(d).expect("scratch dirs");
        }
        World {
            sb,
            key,
            run_id,
            _tmp: tmp,
            workspace,
            home,
        }
    }

    /// What the server needs in its environment (nothing else is inherited).
    fn server_env(&self) -> Vec<(String, String)> {
        let base = self.sb.base_url();
        let home = self.home.display().to_string();
        vec![
            ("PRIME_API_BASE_URL".into(), base.clone()),
            ("PRIME_TRACES_URL".into(), base),
            ("PRIME_API_KEY".into(), self.key.clone()),
            ("HOME".into(), home.clone()),
            ("XDG_CONFIG_HOME".into(), format!("{home}/.config")),
            ("XDG_STATE_HOME".into(), format!("{home}/.state")),
        ]
    }

    fn serve_args(&self) -> Vec<String> {
        vec![
            "serve".into(),
            "--workspace".into(),
            self.workspace.display().to_string(),
        ]
    }
}

// ---- child processes, always bounded --------------------------------------------------------

/// Runs `cmd` to completion within `limit`; on timeout the child is killed and the test fails.
async fn run_bounded(mut cmd: Command, limit: Duration, what: &str) -> Output {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let child = cmd
        .spawn()
        .unwrap_or_else(|e| panic!("{what}: cannot start: {e}"));
    // On timeout the future, and with it the child, is dropped: kill_on_drop kills it.
    match timeout(limit, child.wait_with_output()).await {
        Ok(out) => out.unwrap_or_else(|e| panic!("{what}: {e}")),
        Err(_) => panic!("{what}: no answer within {limit:?}; killed"),
    }
}

/// `factory-mcp serve --http 127.0.0.1:0`, killed when dropped.
struct HttpServer {
    child: Child,
    url: String,
    /// The bearer token the server created in the world's state directory.
    token: String,
    stderr: Arc<Mutex<String>>,
}

impl HttpServer {
    async fn start(world: &World) -> Self {
        let mut cmd = Command::new(BIN);
        cmd.args(world.serve_args())
            .args(["--http", "127.0.0.1:0"])
            .env_clear()
            .envs(world.server_env())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let mut child = cmd.spawn().expect("factory-mcp serve --http starts");
        let mut lines = BufReader::new(child.stderr.take().expect("stderr")).lines();
        let stderr = Arc::new(Mutex::new(String::new()));
        let marker = "factory-mcp: serving MCP at ";
        let found = timeout(LISTEN_LIMIT, async {
            while let Ok(Some(line)) = lines.next_line().await {
                stderr.lock().unwrap().push_str(&format!("{line}\n"));
                if let Some(i) = line.find(marker) {
                    return Some(line[i + marker.len()..].trim().to_string());
                }
            }
            None
        })
        .await;
        let url = match found {
            Ok(Some(url)) => url,
            Ok(None) => panic!(
                "the HTTP server exited before listening:\n{}",
                stderr.lock().unwrap()
            ),
            Err(_) => panic!(
                "the HTTP server did not listen within {LISTEN_LIMIT:?}:\n{}",
                stderr.lock().unwrap()
            ),
        };
        assert!(
            url.starts_with("http://127.0.0.1:") && url.ends_with("/mcp"),
            "{url}"
        );
        // Keep draining stderr so the server never blocks on a full pipe.
        let sink = stderr.clone();
        tokio::spawn(async move {
            while let Ok(Some(line)) = lines.next_line().await {
                sink.lock().unwrap().push_str(&format!("{line}\n"));
            }
        });
        let token_path = world.home.join(".state/factory-mcp/http-token");
        let token = std::fs::read_to_string(&token_path)
            .unwrap_or_else(|e| panic!("{}: {e}", token_path.display()))
            .trim()
            .to_string();
        HttpServer {
            child,
            url,
            token,
            stderr,
        }
    }

    fn log(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    async fn stop(mut self) {
        let _ = self.child.start_kill();
        let _ = timeout(Duration::from_secs(10), self.child.wait()).await;
    }
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

// ---- the Python SDK client ------------------------------------------------------------------

#[derive(Clone, Copy, PartialEq)]
enum Transport {
    Stdio,
    Http,
}

async fn python_client(test: &str, transport: Transport, mode: &str) {
    let Some(peers) = peers(test) else { return };
    let world = World::start().await;
    let dest = world.workspace.join(format!("traces-{test}"));
    let server = match transport {
        Transport::Http => Some(HttpServer::start(&world).await),
        Transport::Stdio => None,
    };
    let (kind, target) = match &server {
        Some(s) => ("http", s.url.clone()),
        None => {
            let mut argv = vec![BIN.to_string()];
            argv.extend(world.serve_args());
            ("stdio", serde_json::to_string(&argv).unwrap())
        }
    };
    let mut cmd = Command::new(&peers.python);
    cmd.arg(PY_CLIENT)
        .args([kind, &target, mode, &world.run_id])
        .arg(&dest)
        .env_clear()
        .env("PATH", path_with(&peers.node_bin))
        .env("INTEROP_API_KEY", &world.key);
    match &server {
        // The script hands PRIME_*, XDG_* and HOME on to the server it spawns.
        None => cmd.envs(world.server_env()),
        Some(s) => cmd
            .env("HOME", &world.home)
            .env("INTEROP_HTTP_TOKEN", &s.token),
    };
    let out = run_bounded(cmd, PY_LIMIT, &format!("{test}: python client")).await;
    let stdout = text(&out.stdout);
    let server_log = server.as_ref().map(HttpServer::log).unwrap_or_default();
    if let Some(s) = server {
        s.stop().await;
    }
    let summary: Value = stdout
        .lines()
        .last()
        .and_then(|l| serde_json::from_str(l).ok())
        .unwrap_or(Value::Null);
    let context = format!(
        "{test}: python client exit {:?}\nsummary: {summary}\n--- stderr\n{}\n--- server stderr (http)\n{server_log}",
        out.status.code(),
        text(&out.stderr),
    );
    assert!(out.status.success(), "{context}");
    assert_eq!(summary["ok"], true, "{context}");
    let want = if mode == "auto" {
        "2026-07-28"
    } else {
        "2025-11-25"
    };
    assert_eq!(summary["protocol"], want, "{context}");
    assert!(
        summary["tools"]
            .as_u64()
            .is_some_and(|n| n >= TOOL_COUNT as u64),
        "{context}"
    );
    if summary["extra_tools"]
        .as_array()
        .is_some_and(|a| !a.is_empty())
    {
        println!(
            "{test}: listed but not exercised by py_client.py: {}",
            summary["extra_tools"]
        );
    }
    assert!(
        std::fs::read_dir(&dest).is_ok_and(|d| d.count() >= 1),
        "{context}\nno trace files in {}",
        dest.display()
    );
    println!("{test}: {summary}");
    world.sb.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_sdk_stdio_modern() {
    python_client("python_sdk_stdio_modern", Transport::Stdio, "auto").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_sdk_stdio_legacy() {
    python_client("python_sdk_stdio_legacy", Transport::Stdio, "legacy").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_sdk_http_modern() {
    python_client("python_sdk_http_modern", Transport::Http, "auto").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_sdk_http_legacy() {
    python_client("python_sdk_http_legacy", Transport::Http, "legacy").await;
}

// ---- the Inspector CLI ----------------------------------------------------------------------

/// One Inspector CLI invocation: `mcp-inspector --cli <options> -- <target>`. Everything after
/// `--` is the server (command and its own arguments, or a URL); `-e KEY=VALUE` sets the stdio
/// server's environment.
async fn inspector(
    peers: &Peers,
    world: &World,
    target: &[String],
    auth: Option<&str>,
    options: &[&str],
    what: &str,
) -> Output {
    let mut cmd = Command::new(peers.node_bin.join("node"));
    cmd.arg(&peers.inspector)
        .arg("--cli")
        .args(options)
        .env_clear()
        .env("PATH", path_with(&peers.node_bin))
        .env("HOME", &world.home)
        .env("NO_COLOR", "1");
    if !target[0].starts_with("http") {
        for (k, v) in world.server_env() {
            cmd.arg("-e").arg(format!("{k}={v}"));
        }
    }
    if let Some(token) = auth {
        cmd.arg("--header")
            .arg(format!("Authorization: Bearer {token}"));
    }
    cmd.arg("--").args(target);
    run_bounded(cmd, INSPECTOR_LIMIT, what).await
}

/// Runs the Inspector checks against `target` in both eras; returns failures and the compact
/// `tools/list` size.
async fn inspector_checks(
    peers: &Peers,
    world: &World,
    target: &[String],
    auth: Option<&str>,
    label: &str,
) -> (Vec<String>, Option<usize>) {
    let mut failures = Vec::new();
    let mut size = None;
    for era in ["legacy", "modern"] {
        let base = ["--protocol-era", era];
        let what = format!("inspector {label} {era} tools/list --strict");
        let opts = [&base[..], &["--method", "tools/list", "--strict"]].concat();
        let out = inspector(peers, world, target, auth, &opts, &what).await;
        match serde_json::from_slice::<Value>(&out.stdout) {
            Ok(v) => {
                let n = v["tools"].as_array().map_or(0, Vec::len);
                if n < TOOL_COUNT {
                    failures.push(format!("{what}: {n} tools listed, expected {TOOL_COUNT}+"));
                }
                size = Some(serde_json::to_vec(&v).map_or(0, |b| b.len()));
            }
            Err(e) => failures.push(format!("{what}: stdout is not JSON ({e})")),
        }
        // Warnings do not change the exit code: count them, so none comes back unnoticed
        // (issue 19: 198 nullable `type` arrays in output schemas before).
        let warnings: Vec<String> = text(&out.stderr)
            .split("\n\n")
            .filter(|b| b.trim_start().starts_with("Warning"))
            .map(str::to_string)
            .collect();
        if !warnings.is_empty() {
            failures.push(format!(
                "{what}: {} portability warning(s):\n{}",
                warnings.len(),
                warnings
                    .iter()
                    .take(5)
                    .cloned()
                    .collect::<Vec<_>>()
                    .join("\n\n")
            ));
        }
        if !out.status.success() {
            let stderr = text(&out.stderr);
            let problems: Vec<&str> = stderr
                .split("\n\n")
                .filter(|b| b.trim_start().starts_with("Error"))
                .collect();
            failures.push(format!(
                "{what}: exit {:?} (6 = a schema the strict lint calls unportable)\n{}\n{}",
                out.status.code(),
                problems.join("\n\n"),
                stderr.lines().last().unwrap_or(""),
            ));
        }

        let what = format!("inspector {label} {era} tools/call whoami");
        let opts = [
            &base[..],
            &["--method", "tools/call", "--tool-name", "whoami"],
        ]
        .concat();
        let out = inspector(peers, world, target, auth, &opts, &what).await;
        let stdout = text(&out.stdout);
        if !out.status.success() {
            failures.push(format!(
                "{what}: exit {:?}\n{stdout}\n{}",
                out.status.code(),
                text(&out.stderr)
            ));
        } else if stdout.contains(&world.key) || !stdout.contains("structuredContent") {
            failures.push(format!(
                "{what}: the full key is shown, or no structuredContent:\n{stdout}"
            ));
        }

        let what = format!("inspector {label} {era} tools/call get_run");
        let arg = format!("run_id={}", world.run_id);
        let opts = [
            &base[..],
            &[
                "--method",
                "tools/call",
                "--tool-name",
                "get_run",
                "--tool-arg",
                &arg,
            ],
        ]
        .concat();
        let out = inspector(peers, world, target, auth, &opts, &what).await;
        let stdout = text(&out.stdout);
        if !out.status.success() {
            failures.push(format!(
                "{what}: exit {:?}\n{stdout}\n{}",
                out.status.code(),
                text(&out.stderr)
            ));
        } else {
            let v: Value = serde_json::from_str(&stdout).unwrap_or(Value::Null);
            let run = &v["structuredContent"]["run"];
            if run["id"] != world.run_id.as_str() || run["status"] != "RUNNING" {
                failures.push(format!("{what}: unexpected result:\n{stdout}"));
            }
        }
    }
    (failures, size)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inspector_cli_stdio() {
    let Some(peers) = peers("inspector_cli_stdio") else {
        return;
    };
    let world = World::start().await;
    let mut target = vec![BIN.to_string()];
    target.extend(world.serve_args());
    let (failures, size) = inspector_checks(&peers, &world, &target, None, "stdio").await;
    println!("inspector stdio: tools/list is {size:?} bytes (compact JSON)");
    world.sb.shutdown().await;
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inspector_cli_http() {
    let Some(peers) = peers("inspector_cli_http") else {
        return;
    };
    let world = World::start().await;
    let server = HttpServer::start(&world).await;
    let target = vec![server.url.clone()];
    let (failures, size) =
        inspector_checks(&peers, &world, &target, Some(&server.token), "http").await;
    println!("inspector http: tools/list is {size:?} bytes (compact JSON)");
    let log = server.log();
    server.stop().await;
    world.sb.shutdown().await;
    assert!(
        failures.is_empty(),
        "{}\n--- server stderr\n{log}",
        failures.join("\n\n")
    );
}

// ---- the client set-ups in examples/clients -------------------------------------------------

/// Every JSON set-up parses, runs `factory-mcp serve --workspace …` (`--sandbox` under
/// `sandbox/`), and holds no credential value: an `env` entry may only reference a variable or
/// an input. The Codex TOML files are checked line by line the same way. Needs no peers.
#[test]
fn client_examples_run_serve_with_a_workspace_and_hold_no_key() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/clients");
    let mut files = Vec::new();
    let mut stack = vec![root.clone()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("examples/clients is readable") {
            let path = entry.expect("dir entry").path();
            if path.is_dir() {
                stack.push(path);
            } else {
                files.push(path);
            }
        }
    }
    files.sort();
    let (mut json_files, mut toml_files) = (0, 0);
    for path in &files {
        let rel = path.strip_prefix(&root).unwrap().display().to_string();
        let body = std::fs::read_to_string(path).expect("readable");
        let sandbox = rel.starts_with("sandbox/");
        for shape in ["pit_", "sk-", "sandbox-key-", "Bearer "] {
            // The README explains the HTTP header (`Authorization: Bearer $(cat FILE)`); a
            // literal token after it is still caught below.
            if shape == "Bearer " && rel == "README.md" {
                for (i, _) in body.match_indices(shape) {
                    let next = &body[i + shape.len()..];
                    assert!(
                        next.starts_with("<token>") || next.starts_with("$(cat "),
                        "{rel}: a bearer token written out: {}",
                        next.chars().take(12).collect::<String>()
                    );
                }
                continue;
            }
            assert!(
                !body.contains(shape),
                "{rel}: holds something shaped like a key ({shape}…)"
            );
        }
        match path.extension().and_then(|e| e.to_str()) {
            Some("json") => {
                json_files += 1;
                let v: Value =
                    serde_json::from_str(&body).unwrap_or_else(|e| panic!("{rel}: not JSON: {e}"));
                let servers = v
                    .get("mcpServers")
                    .or_else(|| v.get("servers"))
                    .and_then(Value::as_object)
                    .unwrap_or_else(|| panic!("{rel}: no mcpServers/servers object"));
                assert!(!servers.is_empty(), "{rel}: no server");
                for (name, s) in servers {
                    assert_eq!(s["command"], "factory-mcp", "{rel}: {name}");
                    let args: Vec<&str> = s["args"]
                        .as_array()
                        .unwrap_or_else(|| panic!("{rel}: {name}: no args"))
                        .iter()
                        .map(|a| a.as_str().expect("string arg"))
                        .collect();
                    assert_eq!(args.first(), Some(&"serve"), "{rel}: {name}: {args:?}");
                    let ws = args.iter().position(|a| *a == "--workspace");
                    assert!(
                        ws.is_some_and(|i| i + 1 < args.len()),
                        "{rel}: {name}: no --workspace DIR in {args:?}"
                    );
                    assert_eq!(args.contains(&"--sandbox"), sandbox, "{rel}: {name}");
                    for (k, val) in s["env"].as_object().into_iter().flatten() {
                        let val = val.as_str().unwrap_or("");
                        let reference = val.starts_with("${") && val.ends_with('}');
                        assert!(
                            reference,
                            "{rel}: {name}: env {k} is a literal value, not a reference"
                        );
                    }
                    for input in v["inputs"].as_array().into_iter().flatten() {
                        assert_eq!(
                            input["password"], true,
                            "{rel}: input {input} must be a password input"
                        );
                    }
                }
            }
            Some("toml") => {
                toml_files += 1;
                let args = body
                    .lines()
                    .find(|l| l.trim_start().starts_with("args"))
                    .unwrap_or_else(|| panic!("{rel}: no args"));
                assert!(
                    args.contains("\"serve\"") && args.contains("\"--workspace\""),
                    "{rel}: {args}"
                );
                assert_eq!(args.contains("\"--sandbox\""), sandbox, "{rel}: {args}");
                assert!(body.contains("command = \"factory-mcp\""), "{rel}");
                for line in body.lines().map(str::trim).filter(|l| !l.starts_with('#')) {
                    assert!(
                        !(line.starts_with("env ")
                            || line.starts_with("env=")
                            || line.contains(".env]")),
                        "{rel}: a literal env table: forward variables by name with env_vars"
                    );
                }
            }
            _ => {}
        }
    }
    assert!(
        json_files >= 4 && toml_files >= 2,
        "set-ups missing: {files:?}"
    );
}
