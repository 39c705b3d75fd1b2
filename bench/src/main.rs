//! `factory-bench`: the whole-process and client-server figures of `docs/BENCHMARKS.md`.
//!
//! One run against one sandbox (in this process, manual clock, the fixed seed
//! `scripts/bench/seed.json`, loopback only). It measures the release `factory-mcp serve`
//! through rmcp's client; the official `prime` CLI as an agent shelling out runs it; the CLI's
//! own API client in one warm Python process; a minimal FastMCP server through the same rmcp
//! client; and the same platform requests made directly with reqwest (the floor). Every loop
//! is bounded in count and in time. Output: a Markdown report on stdout and JSON under `--out`.
//! `scripts/bench.sh` is the one command that builds what it needs and runs this.

mod canned;
mod history;
mod mcp;
mod procfs;
mod stats;

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
    process::Stdio,
    sync::{
        Arc,
        atomic::{AtomicBool, AtomicU64, Ordering},
    },
    time::{Duration, Instant},
};

use anyhow::{Context, bail};
use clap::Parser;
use factory_sandbox::{ClockMode, Sandbox, SandboxHandle, SandboxOptions, SeedSource};
use serde_json::{Value, json};
use stats::{Budget, Call, Summary, fmt_us, median, sample, sample_in_turn};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

/// The seeded runs (`scripts/bench/seed.json`).
const MAIN_RUN: &str = "cbenchmain000000000000001";
const LOGS_RUN: &str = "cbenchlogs000000000000001";
const TRACES_100M: &str = "cbenchtraces100m000000000";
const TRACES_1G: &str = "cbenchtraces1g00000000000";
const TRACES_600: &str = "cbenchtraces6000000000000";

#[derive(Debug, Parser)]
#[command(about = "factory-mcp benchmarks (see docs/BENCHMARKS.md; run through scripts/bench.sh)")]
struct Args {
    /// The `factory-mcp` binary to measure (the release build).
    #[arg(long)]
    server: PathBuf,
    /// The sandbox seed.
    #[arg(long)]
    seed: PathBuf,
    /// `scripts/bench/` (the Python helpers).
    #[arg(long)]
    scripts: PathBuf,
    /// The `prime` CLI (0.18.0); its venv's python runs the in-process timing.
    #[arg(long)]
    prime: Option<PathBuf>,
    /// The python of the venv holding FastMCP.
    #[arg(long)]
    fastmcp_python: Option<PathBuf>,
    /// Criterion's output directory, to fold its `validate` figures into the report.
    #[arg(long)]
    criterion_dir: Option<PathBuf>,
    /// Where results.json and report.md go.
    #[arg(long, default_value = "target/bench")]
    out: PathBuf,
    /// Fewer samples everywhere and a 256 MB trace run instead of 1 GB (a smoke run).
    #[arg(long)]
    quick: bool,
    /// Skip the trace fetch (writes 1.1 GB to the scratch directory).
    #[arg(long)]
    no_fetch: bool,
    /// Run only these sections (comma-separated): operations (per operation, overhead, cold
    /// start, FastMCP: they share the per-operation figures), http, validate, fetch, history.
    /// `scripts/bench.sh --before REV` uses it to measure the old server's binary on sections
    /// the old driver does not have.
    #[arg(long, value_delimiter = ',')]
    only: Option<Vec<String>>,
    /// Instead of the report: call one operation (its name in the report, e.g. "get run") on
    /// an in-process server in a loop for `--spin-secs` seconds, then the same platform
    /// requests directly, and print the mean of each and the CPU time of this process per
    /// call. For a profiler (`perf record`). Prefixes: "stdio:get run", on `--server` over
    /// stdio; "raw:get run", in process through the hand-written JSON-RPC client instead of
    /// rmcp's; "canned:get run", that client to an rmcp server answering with the real answer,
    /// taken once, and making no platform request; "echo:get run", that client to no server
    /// at all (the answer echoed over the pipe). Clients and in-process servers run on a
    /// runtime of one thread, as `serve` over stdio does.
    #[arg(long)]
    spin: Option<String>,
    #[arg(long, default_value_t = 10)]
    spin_secs: u64,
    /// Instead of the report: compare `--server` (A) with this other `factory-mcp` binary (B)
    /// over stdio, sample by sample. Each operation is called on A and on B in turn, the order
    /// turned round every round (A B, B A, …), so that a slow spell of the host falls on both
    /// alike; in `--versus-launches` fresh launches of both (a process's memory layout moves its
    /// figures for as long as it lives). Prints each side's p50 and CPU per call, and the
    /// median of the paired differences (B − A) with its range over the launches; writes
    /// versus.json to `--out`. Give the same binary twice for the method's own noise.
    #[arg(long)]
    versus: Option<PathBuf>,
    #[arg(long, default_value_t = 4)]
    versus_launches: usize,
}

impl Args {
    fn wants(&self, section: &str) -> bool {
        self.only
            .as_ref()
            .is_none_or(|only| only.iter().any(|s| s == section))
    }
}

struct Budgets {
    tool: Budget,
    cli: Budget,
    cli_inproc: Budget,
    cold_ours: Budget,
    cold_fastmcp: Budget,
    load_secs: u64,
}

impl Budgets {
    fn new(quick: bool) -> Budgets {
        if quick {
            Budgets {
                tool: Budget::new(5, 50, 5),
                cli: Budget::new(1, 3, 20),
                cli_inproc: Budget::new(0, 30, 5),
                cold_ours: Budget::new(1, 5, 10),
                cold_fastmcp: Budget::new(1, 3, 30),
                load_secs: 2,
            }
        } else {
            Budgets {
                tool: Budget::new(20, 400, 20),
                cli: Budget::new(1, 20, 90),
                cli_inproc: Budget::new(0, 300, 20),
                cold_ours: Budget::new(2, 40, 30),
                cold_fastmcp: Budget::new(1, 12, 90),
                load_secs: 6,
            }
        }
    }
}

/// One operation as the three contenders spell it.
struct Op {
    name: &'static str,
    tool: &'static str,
    args: Value,
    cli: Vec<String>,
}

fn ops() -> Vec<Op> {
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    vec![
        Op {
            name: "list runs",
            tool: "list_runs",
            // The CLI's page (20 runs); the tool's default page is 10.
            args: json!({"limit": 20}),
            cli: s(&["train", "list", "-o", "json"]),
        },
        Op {
            name: "get run",
            tool: "get_run",
            args: json!({"run_id": MAIN_RUN}),
            cli: s(&["train", "get", MAIN_RUN, "-o", "json"]),
        },
        Op {
            name: "logs tail 1000",
            tool: "get_logs",
            args: json!({"run_id": LOGS_RUN, "tail": 1000}),
            cli: s(&["train", "logs", LOGS_RUN, "--tail", "1000"]),
        },
        Op {
            name: "logs tail 5000",
            tool: "get_logs",
            args: json!({"run_id": LOGS_RUN, "tail": 5000}),
            cli: s(&["train", "logs", LOGS_RUN, "--tail", "5000"]),
        },
        Op {
            name: "metrics",
            tool: "get_metrics",
            args: json!({"run_id": MAIN_RUN}),
            cli: s(&["train", "metrics", MAIN_RUN]),
        },
        Op {
            name: "progress",
            tool: "get_progress",
            args: json!({"run_id": MAIN_RUN}),
            cli: s(&["train", "progress", MAIN_RUN]),
        },
        Op {
            name: "models",
            tool: "list_models",
            args: json!({}),
            cli: s(&["train", "models", "-o", "json"]),
        },
    ]
}

/// How `--spin` reaches the operation: the prefix of its name.
#[derive(Clone, Copy)]
enum SpinVia {
    InProcess,
    Stdio,
    Raw,
    Canned,
    Echo,
}

impl SpinVia {
    /// The operation's name without its prefix, and what the prefix says.
    fn of(name: &str) -> (&str, SpinVia) {
        [
            ("stdio:", SpinVia::Stdio),
            ("raw:", SpinVia::Raw),
            ("canned:", SpinVia::Canned),
            ("echo:", SpinVia::Echo),
        ]
        .into_iter()
        .find_map(|(prefix, via)| name.strip_prefix(prefix).map(|n| (n, via)))
        .unwrap_or((name, SpinVia::InProcess))
    }

    fn label(self) -> &'static str {
        match self {
            SpinVia::InProcess => "in process",
            SpinVia::Stdio => "over stdio",
            SpinVia::Raw => "in process, raw client",
            SpinVia::Canned => {
                "rmcp's server with the real answer canned (no platform request), raw client"
            }
            SpinVia::Echo => "no server: the real answer echoed over the pipe, raw client",
        }
    }
}

/// What `--spin` calls the tool through.
enum Caller<'a> {
    Rmcp(&'a mcp::Client),
    Raw(&'a mcp::RawClient),
}

impl Caller<'_> {
    async fn call(&self, tool: &str, args: &Value) -> anyhow::Result<()> {
        match self {
            Caller::Rmcp(c) => mcp::call(c, tool, args).await.map(|_| ()),
            Caller::Raw(c) => c.call(tool, args).await,
        }
    }
}

/// Everything the measurements share.
struct Bench {
    args: Args,
    budgets: Budgets,
    sandbox: SandboxHandle,
    base: String,
    key: String,
    scratch: tempfile::TempDir,
    http: reqwest::Client,
    report: String,
    results: serde_json::Map<String, Value>,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let mut args = Args::parse();
    // Already installed is fine: only plain-HTTP loopback connections are made.
    let _ = rustls::crypto::ring::default_provider().install_default();
    // Children run in scratch directories: every path handed to them must be absolute.
    let abs =
        |p: &Path| std::fs::canonicalize(p).with_context(|| format!("{} not found", p.display()));
    args.server = abs(&args.server)?;
    if let Some(other) = &mut args.versus {
        *other = abs(other)?;
    }
    args.seed = abs(&args.seed)?;
    args.scripts = abs(&args.scripts)?;
    for path in [&mut args.prime, &mut args.fastmcp_python]
        .into_iter()
        .flatten()
    {
        // Not canonicalised: a venv's python is a symlink that must keep its venv path.
        *path = std::path::absolute(&*path)?;
    }
    let budgets = Budgets::new(args.quick);
    let machine_before = procfs::machine();
    let sandbox = Sandbox::start(SandboxOptions {
        clock: ClockMode::Manual,
        seed: SeedSource::File(args.seed.clone()),
        ..SandboxOptions::default()
    })
    .await
    .context("start the sandbox")?;
    let base = sandbox.base_url();
    let key = sandbox.api_key(0).context("seeded user")?;
    let mut b = Bench {
        budgets,
        base,
        key,
        scratch: tempfile::tempdir()?,
        http: floor_client()?,
        report: String::new(),
        results: serde_json::Map::new(),
        sandbox,
        args,
    };
    std::fs::create_dir_all(&b.args.out)?;
    b.results
        .insert("machine_at_start".into(), machine_before.clone());
    let started = Instant::now();

    if let Some(name) = b.args.spin.clone() {
        // The in-process server on one thread, as `serve` over stdio runs it.
        let dirs = [b.dir("home-spin")?, b.dir("ws-spin")?];
        let this = &b;
        let r = on_one_thread(|| this.spin(&name, dirs));
        b.sandbox.shutdown().await;
        return r;
    }
    if let Some(other) = b.args.versus.clone() {
        let r = b.versus(&other).await;
        b.sandbox.shutdown().await;
        return r;
    }
    if b.args.wants("operations") {
        let per_op = b.per_operation().await?;
        // A later section that fails is reported and skipped; the others still run.
        let r = b.overhead(&per_op).await;
        b.note("overhead", r);
        let r = b.cold_start_and_fastmcp(&per_op).await;
        b.note("cold start / FastMCP", r);
    }
    if b.args.wants("http") {
        let r = b.http_throughput().await;
        b.note("HTTP throughput", r);
    }
    if b.args.wants("validate") {
        let r = b.validate_config().await;
        b.note("validate_config", r);
    }
    if b.args.wants("history") {
        let r = b.history().await;
        b.note("run history", r);
    }
    if !b.args.no_fetch && b.args.wants("fetch") {
        let r = b.fetch_traces().await;
        b.note("fetch_traces", r);
    }

    let machine_after = procfs::machine();
    let head = format!(
        "Machine: {} CPU(s), {}, {}; kernel {}. Load average (1/5/15 min) at start {}, at end {}. Total bench time {:.0} s{}.\n",
        machine_before["cpus"],
        machine_before["cpu_model"].as_str().unwrap_or("?"),
        machine_before["mem_total"].as_str().unwrap_or("?"),
        machine_before["kernel"].as_str().unwrap_or("?"),
        machine_before["loadavg"].as_str().unwrap_or("?"),
        machine_after["loadavg"].as_str().unwrap_or("?"),
        started.elapsed().as_secs_f64(),
        if b.args.quick {
            " (--quick: small samples)"
        } else {
            ""
        },
    );
    b.results.insert("machine_at_end".into(), machine_after);
    let report = format!("{head}{}", b.report);
    std::fs::write(b.args.out.join("report.md"), &report)?;
    std::fs::write(
        b.args.out.join("results.json"),
        serde_json::to_string_pretty(&Value::Object(b.results.clone()))?,
    )?;
    println!("{report}");
    eprintln!(
        "bench: wrote {}/report.md and results.json",
        b.args.out.display()
    );
    b.sandbox.shutdown().await;
    Ok(())
}

/// Start `cmd` (its stdio set here), wait up to 20 s for the line naming its MCP URL on stderr,
/// and keep reading stderr after it; the child (killed on drop), its pid and the URL.
async fn spawn_listening(
    mut cmd: tokio::process::Command,
    what: &str,
) -> anyhow::Result<(tokio::process::Child, u32, String)> {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let mut child = cmd.spawn().with_context(|| format!("starting {what}"))?;
    let pid = child.id().context("pid")?;
    let mut lines = BufReader::new(child.stderr.take().context("stderr")?).lines();
    let url = tokio::time::timeout(Duration::from_secs(20), async {
        while let Some(line) = lines.next_line().await? {
            if let Some(rest) = line.split("serving MCP at ").nth(1) {
                return Ok::<_, anyhow::Error>(rest.trim().to_string());
            }
        }
        bail!("{what} exited before listening")
    })
    .await
    .with_context(|| format!("{what} did not start in 20 s"))??;
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    Ok((child, pid, url))
}

/// One sample of the floor through `http`: every URL fetched in order, its status checked.
async fn floor_once(http: &reqwest::Client, key: &str, urls: &[String]) -> anyhow::Result<()> {
    for u in urls {
        let r = http.get(u).bearer_auth(key).send().await?;
        if !r.status().is_success() {
            bail!("{u}: {}", r.status());
        }
        r.bytes().await?;
    }
    Ok(())
}

/// [`floor_once`] in the order list_runs makes its requests once it knows the caller's owners
/// (from its second call on, as in every sampled call): the caller's teams and each owner's
/// runs side by side (`list_every_owner` reads the runs of the owners its last call found while
/// it reads the owners again), when every owner's runs fit one page and there are at most
/// `OWNERS_AT_ONCE` (4) owners, as in the bench's world. With more, the tool waits longer than
/// this floor, and its work above it is overstated. The only operation of the bench with
/// several requests is list_runs; one that ordered its requests otherwise would need its own
/// order here.
async fn floor_side_by_side(
    http: &reqwest::Client,
    key: &str,
    urls: &[String],
) -> anyhow::Result<()> {
    futures::future::try_join_all(
        urls.iter()
            .map(|u| floor_once(http, key, std::slice::from_ref(u))),
    )
    .await?;
    Ok(())
}

/// One launch of `--versus` for one operation: the (A, B) pairs of call durations, and each
/// server's CPU time per call over them.
struct VersusLaunch {
    pairs: Vec<(Duration, Duration)>,
    cpu_a_us: Option<f64>,
    cpu_b_us: Option<f64>,
    /// Whether A was started before B in this launch.
    a_first: bool,
}

/// A call of `op` on `client`, for [`sample_in_turn`].
fn one_call<'a>(client: &'a mcp::Client, op: &'a Op) -> Call<'a> {
    Box::new(move || {
        Box::pin(async move { mcp::call(client, op.tool, &op.args).await.map(|_| ()) })
    })
}

/// The floor's HTTP client: pooled, as every platform client is.
fn floor_client() -> reqwest::Result<reqwest::Client> {
    reqwest::Client::builder()
        .pool_max_idle_per_host(128)
        .build()
}

/// Run `f`'s future to its end on a tokio runtime of one thread, as `serve` over stdio runs its
/// calls (docs/ARCHITECTURE.md, "A tool call"): no message between the server's tasks and the
/// client's is handed from one worker thread to another, so what is measured is their work,
/// not the wake-ups of a runtime the server does not use. Blocks this worker meanwhile.
fn on_one_thread<T, F, Fut>(f: F) -> anyhow::Result<T>
where
    T: Send,
    F: FnOnce() -> Fut + Send,
    Fut: std::future::Future<Output = anyhow::Result<T>>,
{
    tokio::task::block_in_place(|| {
        std::thread::scope(|scope| {
            scope
                .spawn(|| {
                    tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build()?
                        .block_on(f())
                })
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
        })
    })
}

/// Per-operation figures reused by later sections.
struct OpFigures {
    name: &'static str,
    tool: Summary,
    floor: Summary,
    requests: Vec<String>,
}

impl Bench {
    fn note(&mut self, section: &str, r: anyhow::Result<()>) {
        if let Err(e) = r {
            eprintln!("bench: {section} failed: {e:#}");
            self.report
                .push_str(&format!("\n**{section}: not measured** ({e:#})\n"));
            self.results
                .insert(format!("error {section}"), json!(format!("{e:#}")));
        }
    }

    fn say(&self, what: &str) {
        eprintln!(
            "bench: {what} (load {})",
            procfs::machine()["loadavg"].as_str().unwrap_or("?")
        );
    }

    /// The environment of a server or CLI process acting as the seeded user Alice.
    fn env(&self, home: &Path) -> Vec<(String, String)> {
        let home = home.display().to_string();
        vec![
            ("PATH".into(), std::env::var("PATH").unwrap_or_default()),
            ("HOME".into(), home.clone()),
            ("XDG_CONFIG_HOME".into(), format!("{home}/.config")),
            ("XDG_STATE_HOME".into(), format!("{home}/.state")),
            ("PRIME_API_BASE_URL".into(), self.base.clone()),
            ("PRIME_TRACES_URL".into(), self.base.clone()),
            ("PRIME_API_KEY".into(), self.key.clone()),
            ("PRIME_DISABLE_VERSION_CHECK".into(), "1".into()),
            ("COLUMNS".into(), "250".into()),
            ("TERM".into(), "dumb".into()),
            ("NO_COLOR".into(), "1".into()),
        ]
    }

    fn dir(&self, name: &str) -> anyhow::Result<PathBuf> {
        let d = self.scratch.path().join(name);
        std::fs::create_dir_all(&d)?;
        Ok(d)
    }

    fn serve_args(ws: &Path) -> Vec<String> {
        vec![
            "serve".into(),
            "--workspace".into(),
            ws.display().to_string(),
        ]
    }

    async fn stdio_server(&self, label: &str) -> anyhow::Result<(mcp::Child, PathBuf)> {
        self.stdio_server_of(&self.args.server, label).await
    }

    /// [`Bench::stdio_server`] of the binary `server`.
    async fn stdio_server_of(
        &self,
        server: &Path,
        label: &str,
    ) -> anyhow::Result<(mcp::Child, PathBuf)> {
        let home = self.dir(&format!("home-{label}"))?;
        let ws = self.dir(&format!("ws-{label}"))?;
        let child = mcp::spawn_stdio(server, &Self::serve_args(&ws), &self.env(&home), &ws).await?;
        Ok((child, ws))
    }

    /// The platform requests one call of `f` makes, as `METHOD /path?query`.
    async fn requests_of<F, Fut>(&self, f: F) -> anyhow::Result<Vec<(String, String)>>
    where
        F: FnOnce() -> Fut,
        Fut: std::future::Future<Output = anyhow::Result<()>>,
    {
        let before = self.sandbox.request_log().len();
        f().await?;
        Ok(self.sandbox.request_log()[before..]
            .iter()
            .map(|r| {
                let q = r
                    .query
                    .as_deref()
                    .map(|q| format!("?{q}"))
                    .unwrap_or_default();
                (r.method.clone(), format!("{}{q}", r.path))
            })
            .collect())
    }

    /// The floor: the same requests, made directly with a pooled reqwest client, in order.
    async fn floor(
        &self,
        http: &reqwest::Client,
        reqs: &[(String, String)],
    ) -> anyhow::Result<Summary> {
        let urls = self.floor_urls(reqs)?;
        let d = sample(self.budgets.tool, || floor_once(http, &self.key, &urls)).await?;
        Ok(Summary::of(&d))
    }

    /// The URLs the floor replays (GETs only).
    fn floor_urls(&self, reqs: &[(String, String)]) -> anyhow::Result<Vec<String>> {
        if reqs.iter().any(|(m, _)| m != "GET") {
            bail!("floor replays GETs only: {reqs:?}");
        }
        Ok(reqs
            .iter()
            .map(|(_, p)| format!("{}{p}", self.base))
            .collect())
    }

    // ---- 1. per operation: our tool call vs the CLI ---------------------------------------

    async fn per_operation(&mut self) -> anyhow::Result<Vec<OpFigures>> {
        self.say("per-operation: warm server over stdio, direct floor, CLI");
        let (server, _ws) = self.stdio_server("ops").await?;
        let client = &server.client;
        let tools = client.list_tools(None).await?;
        let idle = procfs::rss_kib(server.pid);
        let cli_home = self.dir("cli-home")?;
        let cli_env = self.env(&cli_home);
        let mut figures = Vec::new();
        let mut json_ops = Vec::new();
        let mut rows = Vec::new();
        let inproc = self.cli_inprocess(&cli_env).await;
        for op in ops() {
            let reqs = self
                .requests_of(|| async { mcp::call(client, op.tool, &op.args).await.map(|_| ()) })
                .await?;
            let tool = Summary::of(
                &sample(self.budgets.tool, || async {
                    mcp::call(client, op.tool, &op.args).await.map(|_| ())
                })
                .await?,
            );
            let floor = self.floor(&self.http, &reqs).await?;
            let (cli, cli_reqs) = match &self.args.prime {
                Some(prime) => {
                    let first = self
                        .requests_of(|| self.run_cli(prime, &op.cli, &cli_env, true))
                        .await?;
                    let d = sample(self.budgets.cli, || {
                        self.run_cli(prime, &op.cli, &cli_env, false)
                    })
                    .await?;
                    (Some(Summary::of(&d)), first.len())
                }
                None => (None, 0),
            };
            let inp = inproc
                .as_ref()
                .ok()
                .and_then(|m| m.get(op.name))
                .and_then(Value::as_array)
                .map(|a| {
                    Summary::from_nanos(&a.iter().filter_map(Value::as_u64).collect::<Vec<_>>())
                });
            let ratio = cli.map(|c| c.p50_us / tool.p50_us);
            let inratio = inp.map(|c| c.p50_us / tool.p50_us);
            rows.push(format!(
                "| {} | `{}` | {} / {} | {} / {} | {} | {} / {} | {} | {} | {} / {} |",
                op.name,
                op.tool,
                fmt_us(tool.p50_us),
                fmt_us(tool.p99_us),
                cli.map_or("–".into(), |c| fmt_us(c.p50_us)),
                cli.map_or("–".into(), |c| fmt_us(c.p99_us)),
                ratio.map_or("–".into(), |r| format!("**{r:.0}×**")),
                inp.map_or("–".into(), |c| fmt_us(c.p50_us)),
                inp.map_or("–".into(), |c| fmt_us(c.p99_us)),
                inratio.map_or("–".into(), |r| format!("{r:.1}×")),
                fmt_us(floor.p50_us),
                reqs.len(),
                if self.args.prime.is_some() {
                    cli_reqs.to_string()
                } else {
                    "–".into()
                },
            ));
            json_ops.push(json!({
                "op": op.name, "tool": op.tool, "args": op.args, "cli": op.cli,
                "tool_stdio": tool.json(), "floor_http": floor.json(),
                "cli_subprocess": cli.map(|c| c.json()), "cli_inprocess": inp.map(|c| c.json()),
                "ratio_cli_p50": ratio, "ratio_cli_inprocess_p50": inratio,
                "tool_requests": reqs.iter().map(|(m, p)| format!("{m} {p}")).collect::<Vec<_>>(),
                "cli_requests": cli_reqs,
            }));
            figures.push(OpFigures {
                name: op.name,
                tool,
                floor,
                requests: reqs.iter().map(|(m, p)| format!("{m} {p}")).collect(),
            });
        }
        server.client.cancel().await?;
        if let Err(e) = &inproc {
            eprintln!("bench: CLI in-process timing skipped: {e:#}");
        }
        self.report.push_str(&format!(
            "\n## Per operation: our tool call vs the `prime` CLI\n\n\
             Warm `factory-mcp serve` over stdio, rmcp client; `prime` 0.18.0 started per call as an agent shelling out does \
             (`-o json` where it has it); the CLI's in-process cost is its own `RLClient`/`HostedTrainingClient` in one warm \
             Python process (`scripts/bench/prime_inprocess.py`); the floor is the same platform request(s) made directly with \
             reqwest. Median / p99; the ratio is CLI median ÷ tool median. {} tools listed; server RSS after start {}.\n\n\
             | operation | tool | tool p50 / p99 | CLI p50 / p99 | CLI ÷ tool | CLI in-process p50 / p99 | in-process ÷ tool | HTTP floor p50 | requests (tool / CLI) |\n\
             |---|---|---|---|---|---|---|---|---|\n{}\n",
            tools.tools.len(),
            idle.map_or("?".into(), |(rss, _)| format!("{:.1} MiB", rss as f64 / 1024.0)),
            rows.join("\n"),
        ));
        self.results
            .insert("per_operation".into(), Value::Array(json_ops));
        Ok(figures)
    }

    async fn run_cli(
        &self,
        prime: &Path,
        args: &[String],
        env: &[(String, String)],
        check: bool,
    ) -> anyhow::Result<()> {
        let out = tokio::time::timeout(
            Duration::from_secs(60),
            tokio::process::Command::new(prime)
                .args(args)
                .env_clear()
                .envs(env.iter().cloned())
                .stdin(Stdio::null())
                .stdout(if check { Stdio::piped() } else { Stdio::null() })
                .stderr(if check { Stdio::piped() } else { Stdio::null() })
                .kill_on_drop(true)
                .output(),
        )
        .await
        .context("prime took over 60 s")??;
        if !out.status.success() || (check && out.stdout.is_empty()) {
            bail!(
                "prime {args:?} failed ({}): {}{}",
                out.status,
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        Ok(())
    }

    async fn cli_inprocess(&self, env: &[(String, String)]) -> anyhow::Result<Value> {
        let prime = self.args.prime.as_ref().context("no prime CLI")?;
        let python = prime.with_file_name("python");
        let b = self.budgets.cli_inproc;
        let out = tokio::time::timeout(
            Duration::from_secs(300),
            tokio::process::Command::new(&python)
                .arg(self.args.scripts.join("prime_inprocess.py"))
                .args([
                    b.count.to_string(),
                    b.max_time.as_secs().to_string(),
                    MAIN_RUN.into(),
                    LOGS_RUN.into(),
                ])
                .env_clear()
                .envs(env.iter().cloned())
                .stdin(Stdio::null())
                .kill_on_drop(true)
                .output(),
        )
        .await
        .context("in-process timing took over 300 s")??;
        if !out.status.success() {
            bail!("{}", String::from_utf8_lossy(&out.stderr));
        }
        Ok(serde_json::from_slice(&out.stdout)?)
    }

    // ---- versus: two builds over stdio, sample by sample -------------------------------------

    async fn versus(&mut self, other: &Path) -> anyhow::Result<()> {
        let (a_bin, b_bin) = (self.args.server.clone(), other.to_path_buf());
        let launches = self.args.versus_launches.max(1);
        self.say(&format!(
            "versus: A {} and B {} over stdio, {launches} launch(es)",
            a_bin.display(),
            b_bin.display()
        ));
        // Per operation, per launch: (A, B) samples in pairs, and each side's CPU per call.
        let mut per_op: BTreeMap<&'static str, Vec<VersusLaunch>> = BTreeMap::new();
        for launch in 0..launches {
            // Which is started first is turned round too (in runs of one binary against
            // itself, the one started first used 2–3 µs more CPU per get_run in every run).
            // A residue of it remained in two runs after (−0.7 µs a get_run, both ways):
            // versus.json keeps each launch's order to check.
            let a_first = launch % 2 == 0;
            let (a_label, b_label) = (format!("versus-a{launch}"), format!("versus-b{launch}"));
            let (a, b) = if a_first {
                let a = self.stdio_server_of(&a_bin, &a_label).await?.0;
                (a, self.stdio_server_of(&b_bin, &b_label).await?.0)
            } else {
                let b = self.stdio_server_of(&b_bin, &b_label).await?.0;
                (self.stdio_server_of(&a_bin, &a_label).await?.0, b)
            };
            for op in ops() {
                let (ca, cb) = (&a.client, &b.client);
                let mut turns = [
                    one_call(ca, &op),
                    one_call(cb, &op),
                    one_call(cb, &op),
                    one_call(ca, &op),
                ];
                // The CPU counters are read after the warm-up: they cover the timed calls only.
                let budget = self.budgets.tool;
                stats::warm_up(budget.warmup, &mut turns).await?;
                let cpu0 = (procfs::cpu_ns(a.pid), procfs::cpu_ns(b.pid));
                let [a1, b1, b2, a2] = sample_in_turn(
                    Budget {
                        warmup: 0,
                        ..budget
                    },
                    turns,
                )
                .await?;
                let cpu1 = (procfs::cpu_ns(a.pid), procfs::cpu_ns(b.pid));
                // Each side took two calls a round.
                let calls = (2 * a1.len()) as f64;
                let cpu = |c0: Option<_>, c1: Option<_>| {
                    c0.zip(c1)
                        .map(|(x, y)| procfs::cpu_ns_between(&x, &y) as f64 / 1e3 / calls)
                };
                let pairs: Vec<(Duration, Duration)> = a1
                    .iter()
                    .zip(&b1)
                    .chain(a2.iter().zip(&b2))
                    .map(|(x, y)| (*x, *y))
                    .collect();
                per_op.entry(op.name).or_default().push(VersusLaunch {
                    pairs,
                    cpu_a_us: cpu(cpu0.0, cpu1.0),
                    cpu_b_us: cpu(cpu0.1, cpu1.1),
                    a_first,
                });
            }
            a.client.cancel().await?;
            b.client.cancel().await?;
        }
        self.versus_report(&a_bin, &b_bin, launches, &per_op)
    }

    fn versus_report(
        &mut self,
        a_bin: &Path,
        b_bin: &Path,
        launches: usize,
        per_op: &BTreeMap<&'static str, Vec<VersusLaunch>>,
    ) -> anyhow::Result<()> {
        let machine_end = procfs::machine();
        let mut rows = Vec::new();
        let mut js = Vec::new();
        let mut pairs_taken = Vec::new();
        for op in ops() {
            let Some(ls) = per_op.get(op.name) else {
                continue;
            };
            let us = |d: Duration| d.as_secs_f64() * 1e6;
            // Each launch's medians, then the median and range of those over the launches.
            let a: Vec<f64> = ls
                .iter()
                .map(|l| median(l.pairs.iter().map(|p| us(p.0))))
                .collect();
            let b: Vec<f64> = ls
                .iter()
                .map(|l| median(l.pairs.iter().map(|p| us(p.1))))
                .collect();
            let d: Vec<f64> = ls
                .iter()
                .map(|l| median(l.pairs.iter().map(|p| us(p.1) - us(p.0))))
                .collect();
            let ca: Vec<f64> = ls.iter().filter_map(|l| l.cpu_a_us).collect();
            let cb: Vec<f64> = ls.iter().filter_map(|l| l.cpu_b_us).collect();
            // The differences' range over the launches, and in how many B was the lower.
            let range = |v: &[f64]| {
                let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
                let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                let lower = v.iter().filter(|x| **x < 0.0).count();
                format!("{lo:+.1} … {hi:+.1}; {lower} of {}", v.len())
            };
            let cpu_diff: Vec<f64> = ls
                .iter()
                .filter_map(|l| l.cpu_a_us.zip(l.cpu_b_us).map(|(x, y)| y - x))
                .collect();
            // A column over the launches, "–" where no launch gave a figure.
            let med = |v: &[f64]| (!v.is_empty()).then(|| median(v.iter().copied()));
            rows.push(format!(
                "| {} | {} | {} | **{:+.1} µs** | {} | {} | {} | {} | {} |",
                op.name,
                fmt_us(median(a.iter().copied())),
                fmt_us(median(b.iter().copied())),
                median(d.iter().copied()),
                range(&d),
                med(&ca).map_or("–".into(), fmt_us),
                med(&cb).map_or("–".into(), fmt_us),
                med(&cpu_diff).map_or("–".into(), |x| format!("{x:+.1} µs")),
                if cpu_diff.is_empty() {
                    "–".into()
                } else {
                    range(&cpu_diff)
                },
            ));
            js.push(json!({
                "op": op.name,
                "a_p50_us": a, "b_p50_us": b,
                "median_paired_diff_us": d,
                "cpu_per_call_a_us": ca, "cpu_per_call_b_us": cb,
                "pairs_per_launch": ls.iter().map(|l| l.pairs.len()).collect::<Vec<_>>(),
                "a_started_first": ls.iter().map(|l| l.a_first).collect::<Vec<_>>(),
            }));
            pairs_taken.extend(ls.iter().map(|l| l.pairs.len()));
        }
        let start = self
            .results
            .get("machine_at_start")
            .cloned()
            .unwrap_or_default();
        let mut md = format!(
            "# Two builds over stdio, sample by sample\n\nA: `{}`; B: `{}`. {launches} launch(es) of both, which is started first turned round every launch; in each, every operation called on A and on B in turn, the order turned round every round, {} pairs per launch and operation after {} warm-up calls of each. Load average {} at the start, {} at the end.\n\nPer launch: each side's median call, and the median of the pairs' differences (B − A); the table gives the median over the launches and, for the differences, their range and in how many launches B was the lower. CPU per call: each server process's CPU time (`/proc/<pid>/task/*/schedstat`) over the operation's timed calls (read after the warm-up), per call.\n\n",
            a_bin.display(),
            b_bin.display(),
            match (pairs_taken.iter().min(), pairs_taken.iter().max()) {
                (Some(lo), Some(hi)) if lo != hi => format!("{lo}–{hi}"),
                (Some(n), _) => n.to_string(),
                _ => "no".to_string(),
            },
            2 * self.budgets.tool.warmup,
            start["loadavg"].as_str().unwrap_or("?"),
            machine_end["loadavg"].as_str().unwrap_or("?"),
        );
        md.push_str("| operation | A p50 | B p50 | B − A (paired, median) | over the launches; B lower in | A CPU/call | B CPU/call | B − A CPU/call | over the launches; B lower in |\n|---|---|---|---|---|---|---|---|---|\n");
        for r in rows {
            md.push_str(&r);
            md.push('\n');
        }
        print!("{md}");
        std::fs::write(self.args.out.join("versus.md"), &md)?;
        let out = json!({
            "a": a_bin, "b": b_bin, "launches": launches,
            "machine_at_start": start, "machine_at_end": machine_end,
            "operations": js,
        });
        std::fs::write(
            self.args.out.join("versus.json"),
            serde_json::to_string_pretty(&out)?,
        )?;
        Ok(())
    }

    // ---- spin: one operation in a loop, for a profiler ------------------------------------

    async fn spin(&self, name: &str, [home, ws]: [PathBuf; 2]) -> anyhow::Result<()> {
        let (name, via) = SpinVia::of(name);
        let op = ops()
            .into_iter()
            .find(|o| o.name == name)
            .with_context(|| format!("no operation named {name:?}"))?;
        let child = match via {
            SpinVia::Stdio => Some(self.stdio_server("spin").await?.0),
            _ => None,
        };
        let in_process;
        let raw_client;
        let client = match (&child, via) {
            (Some(c), _) => Caller::Rmcp(&c.client),
            (None, SpinVia::Raw) => {
                raw_client = mcp::RawClient::in_process(&self.base, &self.key, &ws, &home).await?;
                Caller::Raw(&raw_client)
            }
            (None, SpinVia::Canned | SpinVia::Echo) => {
                // The real server's answer, taken once.
                let real = mcp::in_process(&self.base, &self.key, &ws, &home).await?;
                let answer = mcp::call(&real, op.tool, &op.args).await?;
                real.cancel().await?;
                raw_client = match via {
                    SpinVia::Echo => mcp::RawClient::echo(&answer).await?,
                    _ => mcp::RawClient::canned(answer).await?,
                };
                Caller::Raw(&raw_client)
            }
            (None, _) => {
                in_process = mcp::in_process(&self.base, &self.key, &ws, &home).await?;
                Caller::Rmcp(&in_process)
            }
        };
        // The platform requests one call makes (none for an answer canned or echoed).
        let reqs = self.requests_of(|| client.call(op.tool, &op.args)).await?;
        let secs = Duration::from_secs(self.args.spin_secs);
        let me = std::process::id();
        let server_pid = child.as_ref().map(|c| c.pid);
        let cpu0 = procfs::cpu_secs(me).unwrap_or(0.0);
        let server_cpu0 = server_pid.and_then(procfs::cpu_secs).unwrap_or(0.0);
        let (mut n, t0) = (0u64, Instant::now());
        while n == 0 || t0.elapsed() < secs {
            client.call(op.tool, &op.args).await?;
            n += 1;
        }
        let tool_us = t0.elapsed().as_secs_f64() * 1e6 / n as f64;
        let cpu1 = procfs::cpu_secs(me).unwrap_or(0.0);
        let tool_cpu = (cpu1 - cpu0) * 1e6 / n as f64;
        let server_cpu = server_pid
            .and_then(procfs::cpu_secs)
            .map(|c| {
                format!(
                    ", the server process {:.1} µs",
                    (c - server_cpu0) * 1e6 / n as f64
                )
            })
            .unwrap_or_default();
        if let SpinVia::Canned | SpinVia::Echo = via {
            // No platform request is made: nothing to take a floor of.
            println!(
                "{name}: {} {tool_us:.1} µs/call (CPU here {tool_cpu:.1} µs) over {n} calls",
                via.label()
            );
            return Ok(());
        }
        // The floor as the report measures it (GETs only, statuses checked), its CPU over
        // every sample it took, warm-up included.
        let floor = self.floor(&floor_client()?, &reqs).await?;
        let floor_calls = (floor.n + self.budgets.tool.warmup).max(1) as f64;
        let floor_us = floor.mean_us;
        let floor_cpu = (procfs::cpu_secs(me).unwrap_or(0.0) - cpu1) * 1e6 / floor_calls;
        println!(
            "{name}: tool {} {tool_us:.1} µs/call (CPU here {tool_cpu:.1} µs{server_cpu}) over {n} calls; floor {floor_us:.1} µs (CPU {floor_cpu:.1} µs, {} request(s)); overhead {:.1} µs (CPU {:.1} µs)",
            via.label(),
            reqs.len(),
            tool_us - floor_us,
            tool_cpu - floor_cpu
        );
        Ok(())
    }

    // ---- 2. overhead above the HTTP floor ---------------------------------------------------

    async fn overhead(&mut self, per_op: &[OpFigures]) -> anyhow::Result<()> {
        self.say("overhead: in-process server vs floor, on one thread");
        let dirs = [
            self.dir("home-inproc")?,
            self.dir("ws-inproc")?,
            self.dir("home-raw")?,
            self.dir("ws-raw")?,
        ];
        let this = &*self;
        let (rows, js) = on_one_thread(|| this.overhead_rows(per_op, dirs))?;
        let transport = mcp::SERVED_OVER;
        self.report.push_str(&format!(
            "\n## Tool-call overhead above the platform round trip\n\n\
             Floor: the exact request(s) the tool made (read from the sandbox's request log), made directly with reqwest. \
             In process: the same server state and catalogue `serve` builds, connected to the rmcp client by an in-memory \
             pipe (the server's own work plus JSON-RPC framing on both ends). Raw client: the same, but a second server \
             spoken to by hand over the pipe (one JSON line out; one line back, read once without building a tree for its \
             id, `error` and `isError`), so the overhead left is the server's (its framing, the tool, the answer) plus \
             that one read, without rmcp's client-side parsing. \
             Echo: no server at all, a task answering each request line with the real answer under its id: what \
             the pipe and the raw client cost per call. Canned: rmcp's server answering the real answer, taken once, \
             over {transport}, with no tool and no platform request. **Server's work**: server alone above the floor, less the echo. \
             The servers, the clients and the floor's client run on a runtime of one thread, as `serve` over stdio \
             does (the sandbox answers from the driver's own runtime, as a platform would from elsewhere). \
             All six (in process, raw client, canned, echo, the floor and the floor in the tool's order) are sampled in turn, one call of each per round. \
             In the tool's order: for an operation that makes several platform requests, the server's work above a \
             floor that makes them as the tool does (list_runs, once it knows the caller's owners: the caller's teams \
             and every owner's runs side by side), sampled in turn with the rest; the floor that makes them one after another can take longer than \
             the whole tool call. Stdio: the release binary as a child process (adds two pipe hops and a process switch each way). \
             Medians.\n\n\
             | operation | platform requests | HTTP floor | overhead, in process | overhead, server alone | echo | canned | **server's work** | server's work, requests in the tool's order | overhead, stdio |\n\
             |---|---|---|---|---|---|---|---|---|---|\n{}\n",
            rows.join("\n")
        ));
        self.results.insert("overhead".into(), Value::Array(js));
        Ok(())
    }

    /// The overhead section's measurements; run on one thread (`on_one_thread`).
    async fn overhead_rows(
        &self,
        per_op: &[OpFigures],
        [home, ws, raw_home, raw_ws]: [PathBuf; 4],
    ) -> anyhow::Result<(Vec<String>, Vec<Value>)> {
        let client = mcp::in_process(&self.base, &self.key, &ws, &home).await?;
        let raw = mcp::RawClient::in_process(&self.base, &self.key, &raw_ws, &raw_home).await?;
        // A client of this runtime's own, with connections of this runtime.
        let http = floor_client()?;
        let mut rows = Vec::new();
        let mut js = Vec::new();
        for (op, f) in ops().into_iter().zip(per_op) {
            let urls = self.floor_urls(
                &f.requests
                    .iter()
                    .map(|r| {
                        let (m, p) = r.split_once(' ').unwrap_or(("GET", r));
                        (m.to_string(), p.to_string())
                    })
                    .collect::<Vec<_>>(),
            )?;
            // Two baselines made from the real answer, taken once: rmcp's server answering
            // it canned (no platform request, no tool), and no server at all (the answer echoed
            // over the pipe), so the server's own work can be read above the pipe and client.
            let answer = mcp::call(&client, op.tool, &op.args).await?;
            let echo = mcp::RawClient::echo(&answer).await?;
            let canned = mcp::RawClient::canned(answer).await?;
            // All six in turn, one call of each per round, so that the machine's slow spells
            // fall on them alike: rmcp's client, the raw one, the two baselines, the floors.
            let (tool, args) = (op.tool, &op.args);
            // With several requests, also the floor in the order the tool makes them, side by
            // side where it overlaps them (sampled in turn with the rest; with one request it is
            // the floor).
            let several = urls.len() > 1;
            let [d_inproc, d_alone, d_canned, d_echo, d_floor, d_staged] = sample_in_turn(
                self.budgets.tool,
                [
                    Box::new(|| {
                        Box::pin(async { mcp::call(&client, tool, args).await.map(|_| ()) })
                    }),
                    Box::new(|| Box::pin(raw.call(tool, args))),
                    Box::new(|| Box::pin(canned.call(tool, args))),
                    Box::new(|| Box::pin(echo.call(tool, args))),
                    Box::new(|| Box::pin(floor_once(&http, &self.key, &urls))),
                    Box::new(|| {
                        Box::pin(async {
                            match several {
                                true => floor_side_by_side(&http, &self.key, &urls).await,
                                false => Ok(()),
                            }
                        })
                    }),
                ],
            )
            .await?;
            let [inproc, alone, canned, echo, floor, staged] =
                [d_inproc, d_alone, d_canned, d_echo, d_floor, d_staged].map(|d| Summary::of(&d));
            // The server's own work: above the platform's round trip and above what the pipe
            // and this client cost with no server at all.
            let own = alone.p50_us - floor.p50_us - echo.p50_us;
            let own_staged = several.then_some(alone.p50_us - staged.p50_us - echo.p50_us);
            rows.push(format!(
                "| {} | {} | {} | {} | {} | {} | {} | **{}** | {} | {} |",
                f.name,
                f.requests.len(),
                fmt_us(floor.p50_us),
                fmt_us(inproc.p50_us - floor.p50_us),
                fmt_us(alone.p50_us - floor.p50_us),
                fmt_us(echo.p50_us),
                fmt_us(canned.p50_us),
                fmt_us(own),
                own_staged.map_or_else(
                    || "–".to_string(),
                    |o| format!("{} (floor {})", fmt_us(o), fmt_us(staged.p50_us))
                ),
                fmt_us(f.tool.p50_us - f.floor.p50_us),
            ));
            js.push(json!({
                "op": f.name, "floor": floor.json(), "tool_in_process": inproc.json(),
                "overhead_in_process_p50_us": inproc.p50_us - floor.p50_us,
                "tool_in_process_raw_client": alone.json(),
                "overhead_server_alone_p50_us": alone.p50_us - floor.p50_us,
                "echo": echo.json(), "canned": canned.json(),
                "server_work_p50_us": own,
                "floor_tool_order": several.then(|| staged.json()),
                "server_work_tool_order_p50_us": own_staged,
                "tool_stdio_p50_us": f.tool.p50_us, "overhead_stdio_p50_us": f.tool.p50_us - f.floor.p50_us,
            }));
        }
        client.cancel().await?;
        Ok((rows, js))
    }

    // ---- 3. cold start, and the FastMCP baseline ------------------------------------------

    async fn cold_start_and_fastmcp(&mut self, per_op: &[OpFigures]) -> anyhow::Result<()> {
        self.say("cold start");
        let home = self.dir("home-cold")?;
        let ws = self.dir("ws-cold")?;
        let env = self.env(&home);
        let ours = self
            .cold_start(
                &self.args.server.clone(),
                &Self::serve_args(&ws),
                &env,
                &ws,
                self.budgets.cold_ours,
            )
            .await?;
        let ours_get = per_op
            .iter()
            .find(|f| f.name == "get run")
            .map(|f| f.tool)
            .unwrap_or_default();
        let mut rows = vec![format!(
            "| factory-mcp (Rust, rmcp 3.11) | {} / {} | {} / {} | {} |",
            fmt_us(ours.p50_us),
            fmt_us(ours.p99_us),
            fmt_us(ours_get.p50_us),
            fmt_us(ours_get.p99_us),
            ours.n
        )];
        let mut js =
            json!({"factory_mcp": {"cold_start": ours.json(), "get_run_call": ours_get.json()}});
        // The process floor: a std-only program giving our server's own answers.
        match self.null_server_floor(&env, &ws).await {
            Ok(floor) => {
                rows.push(format!(
                    "| process floor: `null-mcp` (std only, our answers canned) | {} / {} | | {} |",
                    fmt_us(floor.p50_us),
                    fmt_us(floor.p99_us),
                    floor.n
                ));
                rows.push(format!(
                    "| **ours above the floor** | **{}** | | |",
                    fmt_us(ours.p50_us - floor.p50_us)
                ));
                js["process_floor"] = floor.json();
                js["above_floor_p50_us"] = json!(ours.p50_us - floor.p50_us);
            }
            Err(e) => self.say(&format!("process floor skipped: {e:#}")),
        }
        if let Some(py) = self.args.fastmcp_python.clone() {
            self.say("FastMCP baseline");
            let script = vec![
                self.args
                    .scripts
                    .join("fastmcp_server.py")
                    .display()
                    .to_string(),
            ];
            let fast_cold = self
                .cold_start(&py, &script, &env, &ws, self.budgets.cold_fastmcp)
                .await?;
            let child = mcp::spawn_stdio(&py, &script, &env, &ws).await?;
            let args = json!({"run_id": MAIN_RUN});
            let d = sample(self.budgets.tool, || async {
                mcp::call(&child.client, "get_run", &args).await.map(|_| ())
            })
            .await?;
            let fast_get = Summary::of(&d);
            let rss = procfs::rss_kib(child.pid);
            child.client.cancel().await?;
            rows.push(format!(
                "| FastMCP 4.1.6 (Python {}) | {} / {} | {} / {} | {} |",
                python_version(&py).await,
                fmt_us(fast_cold.p50_us),
                fmt_us(fast_cold.p99_us),
                fmt_us(fast_get.p50_us),
                fmt_us(fast_get.p99_us),
                fast_cold.n
            ));
            rows.push(format!(
                "| **ratio FastMCP ÷ ours** | **{:.0}×** | **{:.1}×** | |",
                fast_cold.p50_us / ours.p50_us,
                fast_get.p50_us / ours_get.p50_us
            ));
            js["fastmcp"] = json!({
                "cold_start": fast_cold.json(), "get_run_call": fast_get.json(),
                "rss_kib_after_calls": rss.map(|(r, h)| json!({"rss": r, "hwm": h})),
            });
            js["ratio_cold_p50"] = json!(fast_cold.p50_us / ours.p50_us);
            js["ratio_call_p50"] = json!(fast_get.p50_us / ours_get.p50_us);
        }
        self.report.push_str(&format!(
            "\n## Cold start and the FastMCP baseline (same client: rmcp over stdio)\n\n\
             Cold start: from spawning the process to the answer of the first `tools/list` (after the `initialize` \
             handshake, protocol 2025-11-25), no embedded sandbox. Call: `get_run` on a warm server (FastMCP's tool is \
             one `httpx2` GET returning the platform JSON as is; ours parses, shapes and redacts).\n\n\
             | server | cold start p50 / p99 | `get_run` call p50 / p99 | cold-start samples |\n|---|---|---|---|\n{}\n",
            rows.join("\n")
        ));
        self.results.insert("cold_start".into(), js);
        Ok(())
    }

    /// Cold starts of `null-mcp` (bench/src/bin/null_mcp.rs) answering with our server's own
    /// `initialize` and `tools/list` results: spawn, exec, the client's handshake and parsing,
    /// everything but the server's own start.
    async fn null_server_floor(
        &self,
        env: &[(String, String)],
        ws: &Path,
    ) -> anyhow::Result<Summary> {
        let null = std::env::current_exe()?.with_file_name("null-mcp");
        if !null.exists() {
            bail!("{} not built", null.display());
        }
        let child = mcp::spawn_stdio(&self.args.server, &Self::serve_args(ws), env, ws).await?;
        let init =
            serde_json::to_string(&child.client.peer_info().context("no initialize result")?)?;
        let tools = child.client.list_tools(None).await?;
        child.client.cancel().await?;
        let file = self.dir("null-mcp")?.join("answers");
        std::fs::write(
            &file,
            format!(
                "initialize\t{init}\ntools/list\t{}\n",
                serde_json::to_string(&tools)?
            ),
        )?;
        self.cold_start(
            &null,
            &[file.display().to_string()],
            env,
            ws,
            self.budgets.cold_ours,
        )
        .await
    }

    async fn cold_start(
        &self,
        program: &Path,
        args: &[String],
        env: &[(String, String)],
        cwd: &Path,
        budget: Budget,
    ) -> anyhow::Result<Summary> {
        // Timed up to the answer only: closing the child is not part of a start.
        let deadline = Instant::now() + budget.max_time;
        let mut out = Vec::new();
        for i in 0..budget.warmup + budget.count {
            if i >= budget.warmup && Instant::now() > deadline {
                break;
            }
            let t0 = Instant::now();
            let child = mcp::spawn_stdio(program, args, env, cwd).await?;
            let tools = child.client.list_tools(None).await?;
            let took = t0.elapsed();
            if tools.tools.is_empty() {
                bail!("no tools listed");
            }
            child.client.cancel().await?;
            if i >= budget.warmup {
                out.push(took);
            }
        }
        Ok(Summary::of(&out))
    }

    // ---- 4. concurrent calls over HTTP, RSS ---------------------------------------------------

    async fn http_throughput(&mut self) -> anyhow::Result<()> {
        self.say("HTTP throughput");
        let home = self.dir("home-http")?;
        let ws = self.dir("ws-http")?;
        let mut cmd = tokio::process::Command::new(&self.args.server);
        cmd.args(["serve", "--http", "127.0.0.1:0", "--workspace"])
            .arg(&ws)
            .env_clear()
            .envs(self.env(&home))
            .current_dir(&ws);
        let (mut child, pid, url) = spawn_listening(cmd, "serve --http").await?;
        // No token configured: the server created one, owner-only, in its state directory.
        let token_path = home.join(".state/factory-mcp/http-token");
        let token = std::fs::read_to_string(&token_path)
            .with_context(|| format!("reading {}", token_path.display()))?
            .trim()
            .to_string();

        let args = json!({"run_id": MAIN_RUN});
        let probe = mcp::connect_http(&url, &token, mcp::Era::Sessions).await?;
        let tools = probe.list_tools(None).await?.tools;
        let idle = procfs::rss_kib(pid).context("rss")?;
        // The same transport around a server that answers `get_run` with this answer, canned.
        let answer = mcp::call(&probe, "get_run", &args).await?;
        probe.cancel().await?;
        let spec = self.dir("canned-http")?.join("spec.json");
        let get_run: Vec<_> = tools.into_iter().filter(|t| t.name == "get_run").collect();
        std::fs::write(
            &spec,
            serde_json::to_vec(&json!({"answer": answer, "tools": get_run, "token": token}))?,
        )?;
        let mut cmd =
            tokio::process::Command::new(std::env::current_exe()?.with_file_name("canned-http"));
        cmd.arg(&spec).env_clear();
        let (mut canned, canned_pid, canned_url) = spawn_listening(cmd, "canned-http").await?;

        let mut eras = Vec::new();
        for era in [mcp::Era::Sessions, mcp::Era::Stateless] {
            let mut rows = Vec::new();
            let mut js = Vec::new();
            for clients in [1usize, 8, 64] {
                // Ours, then the transport alone at the same load.
                let (row, mut figures) = self
                    .http_level(&url, &token, era, clients, &args, pid)
                    .await?;
                let (_, alone) = self
                    .http_level(&canned_url, &token, era, clients, &args, canned_pid)
                    .await?;
                // CPU per call counts successful calls only: a failing baseline is no baseline.
                if alone["errors"].as_u64() != Some(0) {
                    bail!(
                        "canned-http: {} failed calls at {clients} client(s)",
                        alone["errors"]
                    );
                }
                let ours = figures["server_cpu_us_per_call"]
                    .as_f64()
                    .unwrap_or(f64::NAN);
                let theirs = alone["server_cpu_us_per_call"].as_f64().unwrap_or(f64::NAN);
                rows.push(format!(
                    "{row} {theirs:.0} µs | {:.0} % |",
                    100.0 * theirs / ours
                ));
                figures["transport_alone"] = alone;
                js.push(figures);
            }
            eras.push((era, rows, js));
        }
        let load = procfs::rss_kib(pid).context("rss")?;
        let _ = canned.kill().await;
        let tables: Vec<String> = eras
            .iter()
            .map(|(era, rows, _)| {
                format!(
                    "{}:\n\n| clients | calls/s | latency p50 / p99 | server CPU per call | errors | transport alone, CPU per call | share of ours |\n|---|---|---|---|---|---|---|\n{}",
                    era.label(),
                    rows.join("\n")
                )
            })
            .collect();
        let level = |era| {
            eras.iter()
                .find(|(e, _, _)| *e == era)
                .map(|(_, _, js)| Value::Array(js.clone()))
                .unwrap_or(Value::Null)
        };
        let _ = child.kill().await;
        self.report.push_str(&format!(
            "\n## Concurrent tool calls over streamable HTTP\n\n\
             `factory-mcp serve --http 127.0.0.1:0`; N rmcp streamable-HTTP clients call `get_run` back to back for \
             {} s (at most 100 000 calls), in each era of the protocol: 2025-11-25 (an `initialize` handshake, a \
             session per client that the server keeps) and 2026-07-28 (no session: every request stands alone). \
             Clients, sandbox and server share the machine's CPUs, so calls/s is the whole loop's; server CPU per \
             call (from /proc) is the server's own share. Transport alone: the same load, right after, on \
             `canned-http` — our accept loop, bearer check and rmcp's streamable-HTTP service as `serve --http` \
             configures them, on the same runtime, around a server that answers every call with the real \
             `get_run` answer, canned (no tool, no platform request): the part of the server's CPU no tool \
             code can take off.\n\n{}\n\n\
             Server RSS (HTTP): idle after the first `tools/list` **{:.1} MiB**; peak (VmHWM) after the loads \
             **{:.1} MiB**.\n",
            self.budgets.load_secs,
            tables.join("\n\n"),
            idle.0 as f64 / 1024.0,
            load.1 as f64 / 1024.0,
        ));
        self.results.insert(
            "http_throughput".into(),
            json!({"levels": level(mcp::Era::Sessions), "levels_stateless": level(mcp::Era::Stateless), "rss_idle_kib": idle.0, "rss_idle_hwm_kib": idle.1, "rss_peak_after_load_kib": load.1}),
        );
        Ok(())
    }

    /// One load of the HTTP figure: `clients` connections in `era` calling `get_run` back to
    /// back; its report row and its figures.
    async fn http_level(
        &self,
        url: &str,
        token: &str,
        era: mcp::Era,
        clients: usize,
        args: &Value,
        pid: u32,
    ) -> anyhow::Result<(String, Value)> {
        let mut conns = Vec::new();
        for _ in 0..clients {
            conns.push(Arc::new(mcp::connect_http(url, token, era).await?));
        }
        for c in &conns {
            mcp::call(c, "get_run", args).await?;
        }
        let cpu0 = procfs::cpu_secs(pid).unwrap_or(0.0);
        let stop = Arc::new(AtomicBool::new(false));
        let budget_calls = Arc::new(AtomicU64::new(100_000));
        let t0 = Instant::now();
        let mut tasks = Vec::new();
        for c in &conns {
            let (c, stop, left, args) =
                (c.clone(), stop.clone(), budget_calls.clone(), args.clone());
            tasks.push(tokio::spawn(async move {
                let mut lat = Vec::new();
                let mut errors = 0u64;
                while !stop.load(Ordering::Relaxed) && left.fetch_sub(1, Ordering::Relaxed) > 0 {
                    let s = Instant::now();
                    match mcp::call(&c, "get_run", &args).await {
                        Ok(_) => lat.push(s.elapsed()),
                        Err(_) => errors += 1,
                    }
                }
                (lat, errors)
            }));
        }
        tokio::time::sleep(Duration::from_secs(self.budgets.load_secs)).await;
        stop.store(true, Ordering::Relaxed);
        let mut lat = Vec::new();
        let mut errors = 0;
        for t in tasks {
            let (l, e) = t.await?;
            lat.extend(l);
            errors += e;
        }
        let wall = t0.elapsed().as_secs_f64();
        let cpu = procfs::cpu_secs(pid).unwrap_or(0.0) - cpu0;
        let s = Summary::of(&lat);
        let rate = lat.len() as f64 / wall;
        let cpu_per_call = cpu / lat.len().max(1) as f64 * 1e6;
        let row = format!(
            "| {clients} | **{rate:.0}** | {} / {} | {cpu_per_call:.0} µs | {errors} |",
            fmt_us(s.p50_us),
            fmt_us(s.p99_us)
        );
        let figures = json!({"clients": clients, "calls": lat.len(), "wall_s": wall, "calls_per_s": rate,
        "latency": s.json(), "server_cpu_s": cpu, "server_cpu_us_per_call": cpu_per_call, "errors": errors});
        for c in conns {
            if let Ok(c) = Arc::try_unwrap(c) {
                let _ = c.cancel().await;
            }
        }
        Ok((row, figures))
    }

    // ---- 5. validate_config ----------------------------------------------------------------------

    async fn validate_config(&mut self) -> anyhow::Result<()> {
        self.say("validate_config");
        let (server, _ws) = self.stdio_server("validate").await?;
        let mut rows = Vec::new();
        let mut js = Vec::new();
        for (name, toml, sft) in [
            ("reverse-text RL", RL_TOML, false),
            ("wordle SFT", SFT_TOML, true),
        ] {
            let args = json!({"config_toml": toml, "sft": sft});
            let reqs = self
                .requests_of(|| async {
                    mcp::call(&server.client, "validate_config", &args)
                        .await
                        .map(|_| ())
                })
                .await?;
            let d = sample(self.budgets.tool, || async {
                mcp::call(&server.client, "validate_config", &args)
                    .await
                    .map(|_| ())
            })
            .await?;
            let s = Summary::of(&d);
            rows.push(format!(
                "| {name} | `validate_config` tool call, stdio | {} / {} | {} |",
                fmt_us(s.p50_us),
                fmt_us(s.p99_us),
                reqs.len()
            ));
            js.push(json!({"config": name, "tool_stdio": s.json(),
                "platform_requests": reqs.iter().map(|(m, p)| format!("{m} {p}")).collect::<Vec<_>>()}));
        }
        server.client.cancel().await?;
        let mut crit = Vec::new();
        if let Some(dir) = &self.args.criterion_dir {
            for (id, median_ns) in criterion_medians(dir) {
                if id.starts_with("validate") {
                    rows.push(format!("| {} | criterion, in process (`config/benches/validate.rs`) | {} (median) | 0 |", id.trim_start_matches("validate "), fmt_us(median_ns / 1e3)));
                    crit.push(json!({"id": id, "median_ns": median_ns}));
                }
            }
        }
        self.report.push_str(&format!(
            "\n## `validate_config` per config\n\n| config | measured as | p50 / p99 | platform requests |\n|---|---|---|---|\n{}\n",
            rows.join("\n")
        ));
        self.results.insert(
            "validate_config".into(),
            json!({"tool": js, "criterion": crit}),
        );
        Ok(())
    }

    // ---- 6. fetch_traces ----------------------------------------------------------------------------

    async fn fetch_traces(&mut self) -> anyhow::Result<()> {
        let runs: Vec<(&str, &str)> = if self.args.quick {
            vec![("600 small", TRACES_600), ("100 MiB", TRACES_100M)]
        } else {
            vec![
                ("600 small", TRACES_600),
                ("100 MiB", TRACES_100M),
                ("1 GiB", TRACES_1G),
            ]
        };
        let mut rows = Vec::new();
        let mut js = Vec::new();
        for (label, run) in runs {
            self.say(&format!("fetch_traces {label}"));
            let (server, ws) = self.stdio_server(&format!("fetch-{}", run)).await?;
            let rss0 = procfs::rss_kib(server.pid).context("rss")?;
            let pid = server.pid;
            let done = Arc::new(AtomicBool::new(false));
            let peak = Arc::new(AtomicU64::new(rss0.0));
            let sampler = {
                let (done, peak) = (done.clone(), peak.clone());
                tokio::spawn(async move {
                    while !done.load(Ordering::Relaxed) {
                        if let Some((rss, _)) = procfs::rss_kib(pid) {
                            peak.fetch_max(rss, Ordering::Relaxed);
                        }
                        tokio::time::sleep(Duration::from_millis(20)).await;
                    }
                })
            };
            let args = json!({"run_id": run, "dest_dir": "traces"});
            let t0 = Instant::now();
            let r = tokio::time::timeout(
                Duration::from_secs(900),
                mcp::call(&server.client, "fetch_traces", &args),
            )
            .await
            .context("fetch_traces took over 900 s")??;
            let secs = t0.elapsed().as_secs_f64();
            done.store(true, Ordering::Relaxed);
            sampler.await?;
            let (_, hwm) = procfs::rss_kib(server.pid).context("rss")?;
            server.client.cancel().await?;
            let out = r.structured_content.unwrap_or_default();
            let bytes = out["bytes"].as_u64().unwrap_or(0);
            let files = out["downloaded"].as_u64().unwrap_or(0);
            let _ = std::fs::remove_dir_all(ws.join("traces"));
            let (floor_bytes, floor_secs) = self.fetch_floor(run).await?;
            let mbs = bytes as f64 / 1e6 / secs;
            let floor_mbs = floor_bytes as f64 / 1e6 / floor_secs;
            let files_s = files as f64 / secs;
            rows.push(format!(
                "| {label} | {files} | {:.1} MB | {secs:.2} s | **{files_s:.0}** | **{mbs:.0} MB/s** | {floor_mbs:.0} MB/s | {:.1} MiB | **{:.1} MiB** |",
                bytes as f64 / 1e6,
                rss0.0 as f64 / 1024.0,
                hwm as f64 / 1024.0,
            ));
            js.push(json!({"run": run, "label": label, "files": files, "bytes": bytes, "secs": secs, "files_per_s": files_s, "mb_per_s": mbs,
                "rss_before_kib": rss0.0, "rss_peak_sampled_kib": peak.load(Ordering::Relaxed), "vm_hwm_kib": hwm,
                "floor_bytes": floor_bytes, "floor_secs": floor_secs, "floor_mb_per_s": floor_mbs}));
        }
        self.report.push_str(&format!(
            "\n## `fetch_traces`\n\n\
             A seeded run's traces: 600 small documents (150 steps), or 80 padded to the given total, generated on the fly \
             by the sandbox; one `fetch_traces` call on a fresh stdio server writes them under its workspace (same disk as the floor). Floor: \
             the same documents listed and streamed to files directly with reqwest, one after another. MB = 10⁶ bytes. \
             Peak RSS is the server's VmHWM over its whole life.\n\n\
             | traces | files | bytes | time | files/s | tool rate | floor rate | server RSS before | **server peak RSS** |\n\
             |---|---|---|---|---|---|---|---|---|\n{}\n",
            rows.join("\n")
        ));
        self.results.insert("fetch_traces".into(), Value::Array(js));
        Ok(())
    }

    /// Download every train trace of `run` directly (list pages of 100, then each raw document
    /// streamed to a file), returning bytes and seconds.
    async fn fetch_floor(&self, run: &str) -> anyhow::Result<(u64, f64)> {
        let dir = self.dir("floor-traces")?;
        let t0 = Instant::now();
        let mut ids = Vec::new();
        let mut cursor: Option<String> = None;
        for _ in 0..1000 {
            let mut q = vec![("run_id", run.to_string()), ("limit", "100".to_string())];
            if let Some(c) = cursor.take() {
                q.push(("cursor", c));
            }
            let page: Value = self
                .http
                .get(format!("{}/api/v1/traces", self.base))
                .bearer_auth(&self.key)
                .query(&q)
                .send()
                .await?
                .error_for_status()?
                .json()
                .await?;
            ids.extend(
                page["items"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|t| t["trace_id"].as_str().map(str::to_string)),
            );
            match page["next_cursor"].as_str() {
                Some(c) => cursor = Some(c.to_string()),
                None => break,
            }
        }
        let mut total = 0u64;
        for id in &ids {
            let mut resp = self
                .http
                .get(format!("{}/api/v1/traces/{id}", self.base))
                .bearer_auth(&self.key)
                .query(&[("raw", "true")])
                .send()
                .await?
                .error_for_status()?;
            let mut f = tokio::fs::File::create(dir.join(format!("{id}.json"))).await?;
            while let Some(chunk) = resp.chunk().await? {
                total += chunk.len() as u64;
                f.write_all(&chunk).await?;
            }
            f.flush().await?;
        }
        let secs = t0.elapsed().as_secs_f64();
        let _ = std::fs::remove_dir_all(&dir);
        Ok((total, secs))
    }
}

async fn python_version(py: &Path) -> String {
    match tokio::process::Command::new(py).arg("-V").output().await {
        Ok(o) => String::from_utf8_lossy(&o.stdout)
            .trim()
            .trim_start_matches("Python ")
            .to_string(),
        Err(_) => "?".into(),
    }
}

/// `(benchmark id, median ns)` for every criterion benchmark under `dir`.
fn criterion_medians(dir: &Path) -> Vec<(String, f64)> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in entries.flatten() {
        let new = e.path().join("new");
        let id = std::fs::read_to_string(new.join("benchmark.json"))
            .ok()
            .and_then(|s| serde_json::from_str::<Value>(&s).ok())
            .and_then(|v| v["full_id"].as_str().map(str::to_string));
        let median = std::fs::read_to_string(new.join("estimates.json"))
            .ok()
            .and_then(|s| serde_json::from_str::<Value>(&s).ok())
            .and_then(|v| v["median"]["point_estimate"].as_f64());
        if let (Some(id), Some(m)) = (id, median) {
            out.push((id, m));
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// The two configs `config/benches/validate.rs` measures in process, here through the tool.
const RL_TOML: &str = r#"
max_steps = 20
seq_len = 2048

[model]
name = "PrimeIntellect/Qwen3-0.6B-Reverse-Text-SFT"

[monitors.wandb]
project = "reverse-text"
name = "reverse-text"

[orchestrator]
batch_size = 128
group_size = 16

[orchestrator.train.sampling]
max_completion_tokens = 128

[[orchestrator.train.source]]
name = "reverse-text"

[orchestrator.train.source.env.taskset]
id = "reverse-text"

[orchestrator.train.source.env.agent.harness]
id = "null"

[orchestrator.train.source.env.agent.runtime]
type = "subprocess"

[trainer.optim]
lr = 3e-6

[ckpt]

[inference]

[orchestrator.renderer]
name = "prime-qwen3"
"#;

const SFT_TOML: &str = r#"
max_steps = 20
[ckpt]
[model]
name = "PrimeIntellect/Qwen3-1.7B"
[data]
name = "willcb/V3-wordle"
seq_len = 1024
batch_size = 64
micro_batch_size = 1
[optim]
lr = 1e-5
"#;
