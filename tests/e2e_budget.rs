//! What each result costs an assistant (issue 19): the whole playbook — account, config, plan,
//! launch, then every read of a 150-step run — driven through MCP as an assistant would, each
//! tool with its default arguments (only the required ones), against the sandbox (manual clock,
//! deterministic). The bytes of every result are printed (`cargo test --test e2e_budget --
//! --nocapture`) and held to the budget:
//!
//! - no result over the hard cap (16 KB, the policy's `[results] max_bytes`), and no default
//!   result cut by it;
//! - every default result ≤ 4 KB, except the tools in [`OVER_BUDGET`], each with its reason;
//! - `tools/list` ≤ [`TOOLS_LIST_BUDGET`].
//!
//! [`OVER_BUDGET`] and [`TOOLS_LIST_BUDGET`] are the places to edit; the figures are in
//! `docs/BUDGETS.md`. The playbook runs once per test binary and each assertion is its own test.

mod common;

use std::{fmt::Write as _, sync::OnceLock};

use common::{Era, World, call, plan_mode_args, rl_config, text};
use serde_json::{Value, json};

/// No result may be larger than this (the default of the policy's `[results] max_bytes`).
const HARD_CAP: usize = 16 * 1024;
/// What a default result aims at.
const DEFAULT_BUDGET: usize = 4 * 1024;
/// The whole `tools/list` answer.
const TOOLS_LIST_BUDGET: usize = 24 * 1024;

/// Default results allowed over [`DEFAULT_BUDGET`] (never over [`HARD_CAP`]), each with why.
/// An entry whose tool fits the budget fails the test too, so the list only shrinks.
const OVER_BUDGET: &[(&str, &str)] = &[];

/// Steps of the measured run: the issue's "150-step run" (30 checkpoints at the sandbox's
/// interval of 5, some 600 traces).
const STEPS: u32 = 150;
const TEAM: &str = factory_sandbox::TEAM_ALPHA_ID;
/// The config the playbook validates and plans, as a workspace file.
const CONFIG_FILE: &str = "budget-run.toml";

/// The playbook, in order: a tool and its arguments (only the required ones). `$RUN` and `$PLAN`
/// stand for the run and plan ids earlier steps returned, `$TEAM` for the team. Adding a tool to
/// the measure is adding a line here.
const PLAYBOOK: &[(&str, &str)] = &[
    ("whoami", "{}"),
    ("list_teams", "{}"),
    ("list_models", "{}"),
    ("list_gpus", "{}"),
    ("validate_config", r#"{"config_path": "budget-run.toml"}"#),
    // The owner is required in practice: the key acts for a personal account and two teams.
    (
        "plan_run",
        r#"{"config_path": "budget-run.toml", "team_id": "$TEAM"}"#,
    ),
    ("launch_run", r#"{"plan_id": "$PLAN"}"#),
    // (here the sandbox's clock runs the run to its last step)
    ("get_run", r#"{"run_id": "$RUN"}"#),
    ("list_runs", "{}"),
    ("get_components", r#"{"run_id": "$RUN"}"#),
    ("get_progress", r#"{"run_id": "$RUN"}"#),
    ("watch_run", r#"{"run_id": "$RUN"}"#),
    ("get_logs", r#"{"run_id": "$RUN"}"#),
    ("get_metrics", r#"{"run_id": "$RUN"}"#),
    ("get_rollouts", r#"{"run_id": "$RUN"}"#),
    ("get_distributions", r#"{"run_id": "$RUN"}"#),
    ("list_traces", r#"{"run_id": "$RUN"}"#),
    (
        "fetch_traces",
        r#"{"run_id": "$RUN", "dest_dir": "traces"}"#,
    ),
    ("list_checkpoints", r#"{"run_id": "$RUN"}"#),
    ("list_volumes", "{}"),
    ("diagnose_run", r#"{"run_id": "$RUN"}"#),
    // The playbook's "export needed component logs while pods still exist".
    ("export_logs", r#"{"run_id": "$RUN"}"#),
    ("run_report", r#"{"run_id": "$RUN"}"#),
];

/// One measured answer.
#[derive(Debug, Clone)]
struct Measure {
    /// The tool, or `tools/list`.
    what: String,
    /// Bytes of the text block(s) (for `tools/list`: of the whole JSON answer).
    text_bytes: usize,
    /// Bytes of the structured content as compact JSON (none for `tools/list`).
    structured_bytes: Option<usize>,
    /// The server cut the answer at the hard cap (`truncated` with the cap's figures).
    cut: bool,
}

/// The playbook's figures, measured once for every test of this binary.
fn measured() -> &'static [Measure] {
    static MEASURES: OnceLock<Vec<Measure>> = OnceLock::new();
    MEASURES.get_or_init(|| {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let measures = rt.block_on(run_playbook());
        println!("{}", table(&measures));
        measures
    })
}

fn expand(args: &str, run: &str, plan: &str) -> Value {
    let text = args
        .replace("$RUN", run)
        .replace("$PLAN", plan)
        .replace("$TEAM", TEAM);
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("playbook arguments {text}: {e}"))
}

async fn run_playbook() -> Vec<Measure> {
    let w = World::new().await;
    std::fs::write(
        w.workspace.path().join(CONFIG_FILE),
        rl_config("budget-run", STEPS),
    )
    .expect("write the config");
    let c = w.client(0, &plan_mode_args(), Era::Modern).await;

    let listed = c.list_tools(None).await.expect("tools/list");
    let mut measures = vec![Measure {
        what: "tools/list".into(),
        text_bytes: serde_json::to_string(&listed).expect("json").len(),
        structured_bytes: None,
        cut: false,
    }];

    let (mut run, mut plan) = (String::new(), String::new());
    for (tool, args) in PLAYBOOK {
        let r = call(&c, tool, expand(args, &run, &plan)).await;
        let structured = r.structured_content.clone();
        let cut = structured
            .as_ref()
            .is_some_and(|s| s["truncated"] == true && s["max_bytes"].is_number());
        assert!(
            r.is_error != Some(true) || cut,
            "the playbook's {tool} failed: {}",
            text(&r)
        );
        let s = structured.unwrap_or(Value::Null);
        if let Some(id) = s["plan_id"].as_str() {
            plan = id.to_string();
        }
        if *tool == "launch_run" {
            run = s["run_id"]
                .as_str()
                .expect("launch_run's run_id")
                .to_string();
            finish(&w, &c, &run).await;
        }
        measures.push(Measure {
            what: tool.to_string(),
            text_bytes: text(&r).len(),
            structured_bytes: Some(serde_json::to_string(&s).expect("json").len()),
            cut,
        });
    }
    c.cancel().await.expect("client stops");
    w.sandbox.shutdown().await;
    measures
}

/// Run the launched run to its last step on the sandbox's clock (no sleeps): it starts, trains
/// `STEPS` steps, checkpoints, uploads traces, logs and completes.
async fn finish(w: &World, c: &common::Client, run: &str) {
    for _ in 0..100 {
        w.advance(60);
        let r = call(c, "get_run", json!({"run_id": run})).await;
        if common::ok(&r)["run"]["status"] == "COMPLETED" {
            let p = common::ok(&call(c, "get_progress", json!({"run_id": run})).await);
            assert!(
                p["latest_step"].as_i64().unwrap_or(0) >= i64::from(STEPS),
                "the measured run stopped short: {p}"
            );
            return;
        }
    }
    panic!("the measured run did not complete on the sandbox's clock");
}

fn table(measures: &[Measure]) -> String {
    let mut out =
        String::from("\n| tool | text bytes | structuredContent bytes |\n|---|---:|---:|\n");
    let (mut text_total, mut structured_total) = (0, 0);
    for m in measures {
        let structured = m
            .structured_bytes
            .map_or("—".to_string(), |b| b.to_string());
        let mark = if m.cut { " (cut at the cap)" } else { "" };
        let _ = writeln!(
            out,
            "| {}{mark} | {} | {structured} |",
            m.what, m.text_bytes
        );
        if m.what != "tools/list" {
            text_total += m.text_bytes;
            structured_total += m.structured_bytes.unwrap_or(0);
        }
    }
    let _ = writeln!(
        out,
        "| **total of the {} calls** | {text_total} | {structured_total} |",
        measures.len() - 1
    );
    out
}

fn exception(tool: &str) -> Option<&'static str> {
    OVER_BUDGET
        .iter()
        .find(|(t, _)| *t == tool)
        .map(|(_, why)| *why)
}

#[test]
fn no_result_is_over_the_hard_cap() {
    let over: Vec<String> = measured()
        .iter()
        .filter(|m| m.what != "tools/list")
        .filter(|m| m.text_bytes > HARD_CAP || m.structured_bytes.unwrap_or(0) > HARD_CAP)
        .map(|m| format!("{}: {} bytes", m.what, m.text_bytes))
        .collect();
    assert!(
        over.is_empty(),
        "results over the {HARD_CAP}-byte cap: {over:?}\n{}",
        table(measured())
    );
}

#[test]
fn every_default_result_fits_four_kilobytes_or_is_a_named_exception() {
    let mut failures = Vec::new();
    for m in measured().iter().filter(|m| m.what != "tools/list") {
        let over = m.text_bytes > DEFAULT_BUDGET || m.cut;
        match (over, exception(&m.what)) {
            (true, None) if m.cut => failures.push(format!(
                "{}: its default answer was cut at the hard cap",
                m.what
            )),
            (true, None) => failures.push(format!(
                "{}: {} bytes over the {DEFAULT_BUDGET}-byte budget",
                m.what, m.text_bytes
            )),
            (false, Some(_)) => failures.push(format!(
                "{}: fits the budget ({} bytes) yet is listed in OVER_BUDGET; remove it",
                m.what, m.text_bytes
            )),
            _ => {}
        }
    }
    for (tool, _) in OVER_BUDGET {
        if !PLAYBOOK.iter().any(|(t, _)| t == tool) {
            failures.push(format!("{tool}: in OVER_BUDGET but not in the playbook"));
        }
    }
    assert!(
        failures.is_empty(),
        "default results over budget:\n  {}\n{}",
        failures.join("\n  "),
        table(measured())
    );
}

#[test]
fn tools_list_fits_its_budget() {
    let listed = measured()
        .iter()
        .find(|m| m.what == "tools/list")
        .expect("tools/list measured");
    assert!(
        listed.text_bytes <= TOOLS_LIST_BUDGET,
        "tools/list is {} bytes, over its {TOOLS_LIST_BUDGET}-byte budget",
        listed.text_bytes
    );
}

// ---- the paging and the cap, end to end --------------------------------------------------------

/// A run of `STEPS` steps created on the sandbox and run to its end (30 checkpoints).
async fn long_run(w: &World) -> String {
    let run = w.create_run(0, "budget-pages", STEPS, None).await;
    w.advance(u64::from(STEPS) * 2 + 120);
    run
}

fn steps_of(v: &Value) -> Vec<i64> {
    v["checkpoints"]
        .as_array()
        .expect("checkpoints")
        .iter()
        .map(|c| c["step"].as_i64().expect("step"))
        .collect()
}

#[tokio::test]
async fn a_long_runs_checkpoints_come_newest_first_a_page_at_a_time() {
    let w = World::new().await;
    let run = long_run(&w).await;
    let c = w.client(0, &[], Era::Modern).await;

    let first = common::ok(&call(&c, "list_checkpoints", json!({"run_id": run})).await);
    assert_eq!(first["total"], 30, "{first}");
    assert_eq!(
        steps_of(&first),
        [150, 145, 140, 135, 130, 125, 120, 115, 110, 105]
    );
    assert_eq!(first["next_page"], 2);
    assert_eq!(first["latest_ready_step"], 150);
    // Every page in turn: each checkpoint once, newest to oldest, and the last page says so.
    let (mut seen, mut page) = (Vec::new(), Some(1));
    while let Some(n) = page {
        let p = common::ok(
            &call(
                &c,
                "list_checkpoints",
                json!({"run_id": run, "page": n, "limit": 7}),
            )
            .await,
        );
        seen.extend(steps_of(&p));
        page = p["next_page"].as_u64();
    }
    assert_eq!(seen, (1..=30).rev().map(|i| i * 5).collect::<Vec<i64>>());
    let r = call(&c, "list_checkpoints", json!({"run_id": run, "page": 0})).await;
    assert!(common::err(&r).contains("start at 1"));

    // The report lists the newest five, says how many there are and how to page.
    let report = common::ok(&call(&c, "run_report", json!({"run_id": run})).await);
    assert_eq!(steps_of(&report), [150, 145, 140, 135, 130]);
    assert_eq!(report["checkpoints_paging"]["total"], 30);
    assert_eq!(report["checkpoints_paging"]["next_page"], 2);
    assert!(
        text(&call(&c, "run_report", json!({"run_id": run})).await)
            .lines()
            .next()
            .unwrap()
            .contains("30 checkpoint(s) (0 local; checkpoints 1–5 of 30 (newest first); older ones: run_report with \"checkpoints_page\": 2)"),
    );
    let older = common::ok(
        &call(
            &c,
            "run_report",
            json!({"run_id": run, "checkpoints_page": 2}),
        )
        .await,
    );
    assert_eq!(steps_of(&older), [125, 120, 115, 110, 105]);
    c.cancel().await.unwrap();
    w.sandbox.shutdown().await;
}

#[tokio::test]
async fn an_answer_over_the_policy_cap_is_replaced_by_its_size_and_how_to_get_the_rest() {
    let w = World::new().await;
    let run = long_run(&w).await;
    let policy = w.home.path().join("policy.toml");
    std::fs::write(&policy, "[results]\nmax_bytes = 4096\n").expect("policy file");
    let c = w
        .client(0, &["--config", policy.to_str().unwrap()], Era::Modern)
        .await;

    // All 30 checkpoints in one page are some 8 KB: over this server's 4 KB cap.
    let r = call(&c, "list_checkpoints", json!({"run_id": run, "limit": 30})).await;
    assert_eq!(r.is_error, Some(true), "{}", text(&r));
    let t = text(&r);
    assert!(t.len() < 1024, "the cut answer is compact: {t}");
    assert!(
        !t.contains("storage_url"),
        "nothing of the answer is sent: {t}"
    );
    let s = r.structured_content.clone().expect("structured");
    assert_eq!(s["truncated"], true);
    assert_eq!(s["max_bytes"], 4096);
    assert!(s["result_bytes"].as_u64().unwrap() > 4096, "{s}");
    assert!(s["summary"].as_str().unwrap().contains("of 30"), "{s}");
    assert!(
        s["how_to_get_the_rest"]
            .as_str()
            .unwrap()
            .contains(&format!(
                "list_checkpoints {{\"run_id\":\"{run}\",\"page\":1,\"limit\":10}}"
            )),
        "{s}"
    );
    // The text block is the summary line, then the compact JSON of the structured content.
    let (headline, json) = t.split_once('\n').expect("two parts");
    assert!(
        headline.starts_with("list_checkpoints succeeded, but its answer is")
            && headline.contains("results.max_bytes"),
        "{headline}"
    );
    assert_eq!(json, serde_json::to_string(&s).unwrap());
    // Following the advice gets the answer.
    let page = common::ok(&call(&c, "list_checkpoints", json!({"run_id": run, "limit": 10})).await);
    assert_eq!(steps_of(&page).len(), 10);
    c.cancel().await.unwrap();
    w.sandbox.shutdown().await;
}

/// The playbook's account has one run; a busy one has pages of them. Its default list (ten runs
/// across the personal account and two teams, with failed runs' errors, teammates' runs and a
/// teammate's run named with 25 KB, 5 000 lines of emoji, among them) fits the 4 KB budget, and
/// so does every later page.
#[tokio::test]
async fn a_busy_accounts_default_run_list_fits_the_budget() {
    use factory_sandbox::TEAM_BETA_ID;
    let w = World::new().await;
    let owners = [(0, None), (0, Some(TEAM)), (1, Some(TEAM_BETA_ID))];
    for i in 0..36 {
        let (user, team) = owners[i % owners.len()];
        // Every fourth one runs out of memory: FAILED, with the platform's error message.
        let kind = if i % 4 == 0 {
            "oom-sweep"
        } else {
            "reverse-text"
        };
        let name = format!("{kind}-qwen3-0.6b-lr3e-6-batch8-seed{i:03}");
        w.create_run(user, &name, 20, team).await;
        w.advance(7);
    }
    w.create_run(
        1,
        &format!("x{}", "🙂\n".repeat(5_000)),
        20,
        Some(TEAM_BETA_ID),
    )
    .await;
    w.advance(300);
    let c = w.client(0, &[], Era::Modern).await;
    let r = call(&c, "list_runs", json!({})).await;
    let listed = common::ok(&r);
    let bytes = text(&r).len();
    println!("list_runs, default, on an account of 37 runs: {bytes} bytes of text");
    assert_eq!(listed["runs"].as_array().unwrap().len(), 10, "{listed}");
    assert_eq!(listed["total"], 37, "{listed}");
    assert!(bytes <= DEFAULT_BUDGET, "{bytes} bytes: {}", text(&r));
    let runs = listed["runs"].as_array().unwrap();
    assert!(
        runs.iter()
            .any(|r| r["status"] == "FAILED" && r["error_message"].is_string())
    );
    assert!(runs.iter().any(|r| r["team_id"] == TEAM_BETA_ID));
    assert!(runs.iter().any(|r| r.get("team_id").is_none()));
    let long = &runs[0];
    assert!(long["name"].as_str().unwrap().ends_with('…'), "{long}");
    // Every page of the default size fits too, and together they show every run once.
    let mut seen = std::collections::HashSet::new();
    for page in 1..=4 {
        let r = call(&c, "list_runs", json!({"page": page})).await;
        assert!(
            text(&r).len() <= DEFAULT_BUDGET,
            "page {page}: {}",
            text(&r)
        );
        for run in common::ok(&r)["runs"].as_array().unwrap() {
            assert!(
                seen.insert(run["id"].as_str().unwrap().to_string()),
                "{run}"
            );
        }
    }
    assert_eq!(seen.len(), 37);
    c.cancel().await.unwrap();
    w.sandbox.shutdown().await;
}
