//! `factory-mcp demo`: the whole workflow, end to end, against the embedded sandbox. It starts
//! the real server (`factory-mcp serve --sandbox`, this same binary) as a child process and
//! drives it over stdio with rmcp's client, exactly as an assistant would: whoami → list_models
//! → validate_config → plan_run → launch_run (the human confirmation round trip, which this
//! client accepts) → watch_run with progress → get_logs → get_metrics → fetch_traces →
//! diagnose_run → stop_run. Each step is printed; the exit code is non-zero if any step fails.
//! Nothing is billed: the platform is the simulator, and the scratch directories are temporary.

use std::{
    io::IsTerminal,
    path::Path,
    process::ExitCode,
    time::{Duration, Instant},
};

use rmcp::{
    ClientHandler, ClientLifecycleMode, ClientServiceExt, ErrorData, RoleClient,
    model::{
        CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig,
        ElicitRequestParams, ElicitResult, ElicitationAction, Implementation, NumberOrString,
        ProgressNotificationParam, ProgressToken, ProtocolVersion, RequestMetaObject,
    },
    service::{NotificationContext, RequestContext, RunningService},
    transport::TokioChildProcess,
};
use serde_json::{Value, json};

/// The config the demo validates, plans and launches (also in `examples/configs/`).
const CONFIG: &str = include_str!("../examples/configs/reverse-text-smoke.toml");
const CONFIG_PATH: &str = "configs/reverse-text-smoke.toml";
/// The step the demo watches the run reach.
const WATCH_STEP: u64 = 10;
/// Whole-demo bound: it normally takes about 10 s.
const DEMO_LIMIT: Duration = Duration::from_secs(55);

/// Walk through the whole workflow on the embedded sandbox.
#[derive(Debug, clap::Args)]
pub struct DemoArgs {
    /// Speed of the simulated platform clock (simulated seconds per second).
    #[arg(long, default_value_t = 10.0, value_name = "X")]
    pub speed: f64,
    /// Plain output, even on a terminal (NO_COLOR works too).
    #[arg(long)]
    pub no_color: bool,
}

/// How output looks: ANSI colour only on a terminal.
#[derive(Clone, Copy)]
struct Style {
    colour: bool,
}

impl Style {
    fn paint(self, code: &str, s: &str) -> String {
        if self.colour {
            format!("\x1b[{code}m{s}\x1b[0m")
        } else {
            s.to_string()
        }
    }
    fn bold(self, s: &str) -> String {
        self.paint("1", s)
    }
    fn dim(self, s: &str) -> String {
        self.paint("2", s)
    }
    fn ok(self, s: &str) -> String {
        self.paint("32", s)
    }
    fn bad(self, s: &str) -> String {
        self.paint("31", s)
    }
    fn accent(self, s: &str) -> String {
        self.paint("36", s)
    }
}

/// The demo's MCP client: declares elicitation, shows the confirmation it is asked, accepts it,
/// and prints progress notifications.
#[derive(Clone)]
struct DemoClient {
    style: Style,
}

impl ClientHandler for DemoClient {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::builder().enable_elicitation().build(),
            Implementation::new("factory-mcp-demo", env!("CARGO_PKG_VERSION")),
        )
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let s = self.style;
        let message = match &request {
            ElicitRequestParams::FormElicitationParams { message, .. } => message.clone(),
            _ => String::new(),
        };
        println!(
            "    {}",
            s.accent("the server asks the person at the keyboard:")
        );
        for line in message.lines() {
            println!("    {} {line}", s.accent("│"));
        }
        println!(
            "    {}",
            s.accent("→ the demo answers yes (in an assistant, you would)")
        );
        Ok(ElicitResult::new(ElicitationAction::Accept).with_content(json!({"confirm": true})))
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _: NotificationContext<RoleClient>,
    ) {
        let s = self.style;
        let total = params.total.map(|t| format!(" of {t}")).unwrap_or_default();
        println!(
            "    {} {}{total}  {}",
            s.accent("progress"),
            params.progress,
            s.dim(params.message.as_deref().unwrap_or(""))
        );
    }
}

type Client = RunningService<RoleClient, DemoClient>;

/// One step's failure: what was called and what it said.
struct StepFailed(String);

struct Demo {
    client: Client,
    style: Style,
    step: usize,
    total: usize,
}

impl Demo {
    /// Call `tool`, print its summary line (and `details` of its result), and return the
    /// structured result.
    async fn step(
        &mut self,
        tool: &str,
        why: &str,
        args: Value,
        progress: bool,
        details: impl Fn(&Value) -> Vec<String>,
    ) -> Result<Value, StepFailed> {
        let s = self.style;
        self.step += 1;
        println!(
            "\n{} {} {}",
            s.dim(&format!("[{:>2}/{}]", self.step, self.total)),
            s.bold(tool),
            s.dim(&format!("— {why}"))
        );
        let Value::Object(map) = args else {
            return Err(StepFailed(format!(
                "{tool}: the demo built non-object arguments"
            )));
        };
        let mut params = CallToolRequestParams::new(tool.to_string()).with_arguments(map);
        if progress {
            let mut meta = RequestMetaObject::default();
            meta.set_progress_token(ProgressToken(NumberOrString::String(
                format!("demo-{tool}").into(),
            )));
            params.meta = Some(meta);
        }
        let started = Instant::now();
        let result: CallToolResult = self
            .client
            .call_tool(params)
            .await
            .map_err(|e| StepFailed(format!("{tool}: protocol error: {e}")))?;
        let text: String = result
            .content
            .iter()
            .filter_map(|c| c.as_text().map(|t| t.text.clone()))
            .collect::<Vec<_>>()
            .join("\n");
        if result.is_error == Some(true) {
            println!("    {} {}", s.bad("✗"), s.bad(text.trim()));
            return Err(StepFailed(format!("{tool} failed: {}", text.trim())));
        }
        let summary = text.lines().next().unwrap_or("").to_string();
        println!(
            "    {} {summary} {}",
            s.ok("✓"),
            s.dim(&format!("({:.1} s)", started.elapsed().as_secs_f64()))
        );
        let body = result.structured_content.unwrap_or(Value::Null);
        for line in details(&body) {
            println!("      {}", s.dim(&line));
        }
        Ok(body)
    }
}

fn str_of<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

/// Run the demo; the exit code says whether every step succeeded.
pub async fn run(args: DemoArgs) -> ExitCode {
    let colour =
        !args.no_color && std::env::var_os("NO_COLOR").is_none() && std::io::stdout().is_terminal();
    let style = Style { colour };
    match tokio::time::timeout(DEMO_LIMIT, demo(args.speed, style)).await {
        Ok(Ok(())) => {
            println!("\n{}", style.ok("Demo complete: every step succeeded."));
            ExitCode::SUCCESS
        }
        Ok(Err(StepFailed(why))) => {
            eprintln!("\n{} {why}", style.bad("Demo failed:"));
            ExitCode::FAILURE
        }
        Err(_) => {
            eprintln!(
                "\n{} it did not finish within {} s",
                style.bad("Demo failed:"),
                DEMO_LIMIT.as_secs()
            );
            ExitCode::FAILURE
        }
    }
}

async fn demo(speed: f64, style: Style) -> Result<(), StepFailed> {
    let s = style;
    let scratch = tempfile::tempdir()
        .map_err(|e| StepFailed(format!("cannot make a temporary directory: {e}")))?;
    let workspace = scratch.path().join("workspace");
    let home = scratch.path().join("home");
    let prepare = |dir: &Path| {
        std::fs::create_dir_all(dir)
            .map_err(|e| StepFailed(format!("cannot create {}: {e}", dir.display())))
    };
    prepare(&workspace.join("configs"))?;
    prepare(&home)?;
    std::fs::write(workspace.join(CONFIG_PATH), CONFIG)
        .map_err(|e| StepFailed(format!("cannot write the example config: {e}")))?;

    println!("{}", s.bold("factory-mcp demo"));
    println!(
        "{}",
        s.dim(&format!(
            "The real server (`factory-mcp serve --sandbox`) on a simulated platform (clock ×{speed}); no account, nothing billed.\nWorkspace: {}",
            workspace.display()
        ))
    );

    // The server: this very binary, as an assistant would start it, with a clean environment
    // (no credential of the person running the demo reaches it).
    let exe = std::env::current_exe()
        .map_err(|e| StepFailed(format!("cannot find this program: {e}")))?;
    let mut cmd = tokio::process::Command::new(exe);
    cmd.arg("serve")
        .arg("--sandbox")
        .arg("--sandbox-speed")
        .arg(speed.to_string())
        .arg("--confirm")
        .arg("human")
        .arg("--workspace")
        .arg(&workspace)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", &home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("XDG_STATE_HOME", home.join(".state"))
        // The simulated clock runs fast, so watch_run may poll faster than its 2 s floor.
        .env("FACTORY_MCP_WATCH_POLL_MS", "400")
        .current_dir(&workspace);
    let stderr = std::fs::File::create(scratch.path().join("server-stderr.log"))
        .map_err(|e| StepFailed(format!("cannot create the server log: {e}")))?;
    let (transport, _) = TokioChildProcess::builder(cmd)
        .stderr(stderr)
        .spawn()
        .map_err(|e| StepFailed(format!("cannot start the server: {e}")))?;
    let client = DemoClient { style }
        .serve_with_lifecycle(
            transport,
            ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            },
        )
        .await
        .map_err(|e| StepFailed(format!("cannot connect to the server: {e}")))?;
    let mut d = Demo {
        client,
        style,
        step: 0,
        total: 11,
    };
    let result = workflow(&mut d, &workspace).await;
    let _ = d.client.cancel().await;
    drop(scratch);
    result
}

async fn workflow(d: &mut Demo, workspace: &Path) -> Result<(), StepFailed> {
    d.step("whoami", "who the server acts as", json!({}), false, |v| {
        vec![format!(
            "base URL {}, key {}",
            str_of(v, "base_url"),
            str_of(v, "api_key")
        )]
    })
    .await?;
    d.step(
        "list_models",
        "what can be trained",
        json!({}),
        false,
        |v| {
            v["models"]
                .as_array()
                .map(|m| {
                    m.iter()
                        .take(5)
                        .map(|m| {
                            format!("{}", m.get("name").or(m.get("id")).unwrap_or(&Value::Null))
                        })
                        .collect()
                })
                .unwrap_or_default()
        },
    )
    .await?;
    d.step(
        "validate_config",
        "check the bundled example config",
        json!({"config_path": CONFIG_PATH}),
        false,
        |_| Vec::new(),
    )
    .await?;
    let plan = d
        .step(
            "plan_run",
            "validate, price, check budgets and duplicates; nothing launched yet",
            // Alice, the sandbox's first user, is in two teams: the demo picks her personal
            // account explicitly (an override the confirmation shows).
            json!({"config_path": CONFIG_PATH, "personal": true}),
            false,
            |v| str_of(v, "summary").lines().map(str::to_string).collect(),
        )
        .await?;
    let plan_id = str_of(&plan, "plan_id").to_string();
    let launched = d
        .step(
            "launch_run",
            "billable: the server asks a person to confirm",
            json!({"plan_id": plan_id}),
            false,
            |v| vec![format!("dashboard {}", str_of(v, "dashboard_url"))],
        )
        .await?;
    let run_id = str_of(&launched, "run_id").to_string();
    if run_id.is_empty() {
        return Err(StepFailed("launch_run returned no run_id".into()));
    }
    let rest = follow(d, &run_id, workspace).await;
    // Stop the run whatever happened above, so the demo never leaves one running.
    let stopped = d
        .step(
            "stop_run",
            "stop it (stopping a finished run is a no-op)",
            json!({"run_id": run_id}),
            false,
            |_| Vec::new(),
        )
        .await;
    rest?;
    stopped.map(|_| ())
}

async fn follow(d: &mut Demo, run_id: &str, workspace: &Path) -> Result<(), StepFailed> {
    d.step(
        "watch_run",
        &format!("wait for step {WATCH_STEP}, with progress notifications"),
        json!({"run_id": run_id, "until_step": WATCH_STEP, "timeout_s": 40}),
        true,
        |v| {
            vec![format!(
                "returned because: {} ({} platform requests)",
                str_of(v, "reason"),
                v["requests"]
            )]
        },
    )
    .await
    .and_then(|v| {
        if str_of(&v, "reason") == "reached" {
            Ok(v)
        } else {
            Err(StepFailed(format!(
                "watch_run returned {} instead of reaching step {WATCH_STEP}",
                str_of(&v, "reason")
            )))
        }
    })?;
    d.step(
        "get_logs",
        "the trainer's newest lines",
        json!({"run_id": run_id, "component": "trainer", "tail": 4}),
        false,
        |v| {
            v["lines"]
                .as_array()
                .map(|l| {
                    l.iter()
                        .filter_map(Value::as_str)
                        .map(|x| x.chars().take(110).collect())
                        .collect()
                })
                .unwrap_or_default()
        },
    )
    .await?;
    d.step(
        "get_metrics",
        "the training curve so far",
        json!({"run_id": run_id}),
        false,
        |v| {
            v["metrics"]
                .as_array()
                .map(|m| {
                    m.iter()
                        .skip(m.len().saturating_sub(3))
                        .map(|r| {
                            format!(
                                "step {}: loss {} reward/mean {}",
                                r["step"], r["loss"], r["reward/mean"]
                            )
                        })
                        .collect()
                })
                .unwrap_or_default()
        },
    )
    .await?;
    let dest = "traces";
    d.step(
        "fetch_traces",
        "download the rollout traces into the workspace",
        json!({"run_id": run_id, "dest_dir": dest}),
        false,
        |_| vec![format!("into {}", workspace.join(dest).display())],
    )
    .await?;
    d.step(
        "diagnose_run",
        "one-call health check",
        json!({"run_id": run_id}),
        false,
        |v| {
            vec![format!(
                "verdict {}: {}",
                str_of(v, "verdict"),
                str_of(v, "next_action")
            )]
        },
    )
    .await?;
    Ok(())
}
