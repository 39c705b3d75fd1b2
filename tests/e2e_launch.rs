//! The launch pipeline end to end (issue 7, a–n): the real binary, rmcp's client in both eras
//! (with and without elicitation), `factory-mcp approve` in a "terminal", and the sandbox.

mod common;

use common::{plan_mode_args, rl_config as config};

use std::time::Duration;

use common::{Era, PlainClient, World, call, connect, err, ok, text};
use factory_sandbox::{FaultEffect, FaultRule};
use rmcp::{
    ClientHandler, ErrorData,
    model::{
        CallToolRequestParams, CallToolResponse, ClientCapabilities, ClientConfig,
        ElicitRequestParams, ElicitResult, ElicitationAction, Implementation, InputResponses,
    },
    service::{RequestContext, RoleClient},
};
use serde_json::{Value, json};

const TEAM: &str = factory_sandbox::TEAM_ALPHA_ID;

/// A client that declares elicitation and answers every question the same way.
#[derive(Clone)]
struct Confirming {
    accept: bool,
}

impl ClientHandler for Confirming {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::builder().enable_elicitation().build(),
            Implementation::new("confirming-client", "0.0.1"),
        )
    }
    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        // The person sees the summary: owner, GPUs and price are in the question.
        let msg = match &request {
            ElicitRequestParams::FormElicitationParams { message, .. } => message.clone(),
            _ => String::new(),
        };
        assert!(
            msg.contains("Owner:") && msg.contains("Price:"),
            "question lacks the summary: {msg}"
        );
        Ok(if self.accept {
            ElicitResult::new(ElicitationAction::Accept).with_content(json!({"confirm": true}))
        } else {
            ElicitResult::new(ElicitationAction::Decline)
        })
    }
}

async fn plan<H: ClientHandler>(
    c: &rmcp::service::RunningService<RoleClient, H>,
    args: Value,
) -> Value {
    ok(&call(c, "plan_run", args).await)
}

fn runs_named(w: &World, name: &str) -> Vec<Value> {
    w.sandbox
        .runs()
        .into_iter()
        .filter(|r| r["run"]["name"] == name)
        .map(|r| r["run"].clone())
        .collect()
}

/// A person runs `factory-mcp approve PLAN_ID` in their own terminal (a pseudo-terminal that
/// is its controlling terminal) and types `answer`: `"code"` types the code it shows there.
fn approve(w: &World, plan_id: &str, answer: &str) -> common::pty::Finished {
    let dir = w.state_dir().display().to_string();
    let mut t = common::pty::approve(&[plan_id, "--state-dir", &dir], w.home.path(), "y\n");
    let code = t.code();
    if answer == "code" {
        t.type_in(&format!("{code}\n"));
    } else {
        t.type_in(answer);
    }
    t.finish()
}

#[tokio::test]
async fn a_unknown_or_expired_plans_dispatch_nothing() {
    let w = World::new().await;
    let c = w.client(0, &plan_mode_args(), Era::Modern).await;
    let msg = err(&call(
        &c,
        "launch_run",
        json!({"plan_id": "plan_doesnotexist00000000"}),
    )
    .await);
    assert!(
        msg.contains("Unknown plan") && msg.contains("plan_run"),
        "{msg}"
    );
    // A plan whose time ran out (TTL of 0 seconds) is refused.
    c.cancel().await.unwrap();
    let mut args = plan_mode_args();
    args.extend(["--plan-ttl-seconds", "1"]);
    let c = w.client(0, &args, Era::Modern).await;
    let p = plan(
        &c,
        json!({"config_toml": config("exp-run", 5), "team_id": TEAM}),
    )
    .await;
    // Expiry is compared with the wall clock; the plan's TTL is 1 s, so wait it out once.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let msg = err(&call(&c, "launch_run", json!({"plan_id": p["plan_id"]})).await);
    assert!(msg.contains("expired"), "{msg}");
    assert_eq!(w.sandbox.create_requests(), 0);
    c.cancel().await.unwrap();
}

#[tokio::test]
async fn b_without_elicitation_a_person_approves_in_the_terminal() {
    let w = World::new().await;
    let c = w.client(0, &[], Era::Legacy).await;
    let p = plan(
        &c,
        json!({"config_toml": config("term-run", 5), "team_id": TEAM}),
    )
    .await;
    let id = p["plan_id"].as_str().unwrap();
    let msg = err(&call(&c, "launch_run", json!({"plan_id": id})).await);
    assert!(msg.contains(&format!("factory-mcp approve {id}")), "{msg}");
    assert_eq!(w.sandbox.create_requests(), 0);

    let out = approve(&w, id, "code");
    assert!(out.status.success(), "{}\n{}", out.shown, out.stderr);
    assert!(out.shown.contains("Owner:"), "approve shows the summary");
    let launched = ok(&call(&c, "launch_run", json!({"plan_id": id})).await);
    assert_eq!(launched["deduplicated"], false);
    let again = ok(&call(&c, "launch_run", json!({"plan_id": id})).await);
    assert_eq!(again["run_id"], launched["run_id"]);
    assert_eq!(again["deduplicated"], true);
    assert_eq!(runs_named(&w, "term-run").len(), 1);
    assert_eq!(w.sandbox.create_requests(), 1);

    // A refusal in the terminal means no run, now or later.
    let p = plan(
        &c,
        json!({"config_toml": config("refused-run", 6), "team_id": TEAM}),
    )
    .await;
    let id = p["plan_id"].as_str().unwrap();
    let out = approve(&w, id, "n\n");
    assert!(!out.status.success());
    let msg = err(&call(&c, "launch_run", json!({"plan_id": id})).await);
    assert!(msg.contains("refused"), "{msg}");
    assert!(runs_named(&w, "refused-run").is_empty());
    c.cancel().await.unwrap();
}

#[tokio::test]
async fn c_elicitation_accept_launches_once_and_decline_launches_nothing_in_both_eras() {
    for era in [Era::Modern, Era::Legacy] {
        let w = World::new().await;
        for accept in [true, false] {
            let name = format!(
                "elicit-{}-{}",
                if era == Era::Modern { "m" } else { "l" },
                accept
            );
            let c = connect(Confirming { accept }, w.transport(w.env(0), &[]), era).await;
            // Distinct configs: the same config twice would be refused as a duplicate.
            let steps = if accept { 5 } else { 6 };
            let p = plan(
                &c,
                json!({"config_toml": config(&name, steps), "team_id": TEAM}),
            )
            .await;
            let r = call(&c, "launch_run", json!({"plan_id": p["plan_id"]})).await;
            if accept {
                let out = ok(&r);
                assert_eq!(runs_named(&w, &name).len(), 1, "{era:?}");
                assert_eq!(runs_named(&w, &name)[0]["id"], out["run_id"]);
            } else {
                assert!(err(&r).contains("declined"), "{era:?}");
                assert!(runs_named(&w, &name).is_empty(), "{era:?}");
            }
            c.cancel().await.unwrap();
        }
    }
}

#[tokio::test]
async fn c_replayed_or_tampered_request_state_is_refused() {
    let w = World::new().await;
    let c = connect(
        Confirming { accept: true },
        w.transport(w.env(0), &[]),
        Era::Modern,
    )
    .await;
    let p = plan(
        &c,
        json!({"config_toml": config("mrtr-run", 5), "team_id": TEAM}),
    )
    .await;
    let params = CallToolRequestParams::new("launch_run").with_arguments(
        json!({"plan_id": p["plan_id"]})
            .as_object()
            .unwrap()
            .clone(),
    );
    let CallToolResponse::InputRequired(ir) = c.call_tool_once(params.clone()).await.unwrap()
    else {
        panic!("expected an input-required round trip");
    };
    let state = ir.request_state.clone().expect("sealed state");
    let accept = |s: String| {
        let mut responses = InputResponses::new();
        responses.insert(
            "confirm".into(),
            serde_json::to_value(
                ElicitResult::new(ElicitationAction::Accept).with_content(json!({"confirm": true})),
            )
            .unwrap(),
        );
        params
            .clone()
            .with_request_state(s)
            .with_input_responses(responses)
    };
    // Tampered: one character changed.
    let mut bad = state.clone().into_bytes();
    let i = bad.len() / 2;
    bad[i] = if bad[i] == b'A' { b'B' } else { b'A' };
    let r = c
        .call_tool_once(accept(String::from_utf8(bad).unwrap()))
        .await
        .unwrap();
    let CallToolResponse::Complete(r) = r else {
        panic!("expected a complete answer")
    };
    assert!(err(&r).contains("invalid"), "{}", text(&r));
    // A decline uses the state up; replaying it with an accept is refused.
    let mut responses = InputResponses::new();
    responses.insert(
        "confirm".into(),
        serde_json::to_value(ElicitResult::new(ElicitationAction::Decline)).unwrap(),
    );
    let declined = c
        .call_tool_once(
            params
                .clone()
                .with_request_state(state.clone())
                .with_input_responses(responses),
        )
        .await
        .unwrap();
    let CallToolResponse::Complete(declined) = declined else {
        panic!()
    };
    assert!(err(&declined).contains("declined"));
    let replay = c.call_tool_once(accept(state)).await.unwrap();
    let CallToolResponse::Complete(replay) = replay else {
        panic!()
    };
    assert!(err(&replay).contains("already used"), "{}", text(&replay));
    assert!(runs_named(&w, "mrtr-run").is_empty());
    c.cancel().await.unwrap();
}

#[tokio::test]
async fn d_a_config_edited_after_planning_must_be_replanned() {
    let w = World::new().await;
    std::fs::write(w.workspace.path().join("run.toml"), config("edited-run", 5)).unwrap();
    let c = w.client(0, &plan_mode_args(), Era::Modern).await;
    let p = plan(&c, json!({"config_path": "run.toml", "team_id": TEAM})).await;
    std::fs::write(
        w.workspace.path().join("run.toml"),
        config("edited-run", 50),
    )
    .unwrap();
    let msg = err(&call(&c, "launch_run", json!({"plan_id": p["plan_id"]})).await);
    assert!(msg.contains("re-plan"), "{msg}");
    assert_eq!(w.sandbox.create_requests(), 0);
    c.cancel().await.unwrap();
}

#[tokio::test]
async fn e_budgets_refuse_with_the_figures() {
    let w = World::new().await;
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["--max-gpus-per-run", "1"], "max_gpus_per_run"),
        (
            vec!["--max-cost-per-hour-usd", "0.5"],
            "max_cost_per_hour_usd",
        ),
        (vec!["--max-active-runs", "1"], "max_active_runs"),
        (
            vec!["--max-active-cost-per-hour-usd", "0.5"],
            "max_active_cost_per_hour_usd",
        ),
    ];
    // One active run of the owner already exists for the active-run caps.
    w.create_run(0, "already-active", 50, Some(TEAM)).await;
    for (flags, key) in cases {
        let c = w.client(0, &flags, Era::Modern).await;
        let msg = err(&call(&c, "plan_run", json!({"config_toml": config("budget-run", 5), "team_id": TEAM, "gpu_type": "H100_80GB"})).await);
        assert!(msg.contains(key), "{key}: {msg}");
        assert!(
            msg.chars().any(|ch| ch.is_ascii_digit()),
            "{key}: no figures in {msg}"
        );
        c.cancel().await.unwrap();
    }
    assert_eq!(w.sandbox.create_requests(), 1, "only the seeding create");
}

#[tokio::test]
async fn f_g_secret_values_are_refused_everywhere_and_never_stored() {
    let w = World::new().await;
    let hf = "hf_abcdefghijklmnopqrstuvwxyzABCDEF12";
    let wandb = "0123456789abcdef0123456789abcdef01234567";
    let mut env = w.env(0);
    env.push(("WANDB_API_KEY".into(), wandb.into()));
    let c = connect(
        PlainClient,
        w.transport(env, &plan_mode_args()),
        Era::Modern,
    )
    .await;
    let base = config("secret-run", 5);
    let cases = vec![
        json!({"config_toml": base, "team_id": TEAM, "run_name": hf}),
        json!({"config_toml": base, "team_id": TEAM, "env": [format!("HF_TOKEN={hf}")]}),
        json!({"config_toml": format!("{base}\n[wandb]\napi_key = \"{wandb}\"\n"), "team_id": TEAM}),
        json!({"config_toml": base.replace("[trainer]", &format!("[trainer]\nhf_token = \"{hf}\"")), "team_id": TEAM}),
        json!({"config_toml": base, "team_id": TEAM, "image_tag": wandb}),
    ];
    for args in cases {
        let r = call(&c, "plan_run", args.clone()).await;
        let msg = err(&r);
        assert!(
            !msg.contains(hf) && !msg.contains(wandb),
            "value echoed: {msg}"
        );
        assert!(msg.contains("secret") || msg.contains("value"), "{msg}");
    }
    for name in ["PRIME_API_KEY", "AWS_SECRET_ACCESS_KEY"] {
        let msg = err(&call(
            &c,
            "plan_run",
            json!({"config_toml": base, "team_id": TEAM, "env": [name]}),
        )
        .await);
        assert!(msg.contains("WANDB_API_KEY and HF_TOKEN"), "{msg}");
    }
    // A commit SHA as source_ref is no secret.
    let sha = "4f2c1e9d8b7a6c5d4e3f2a1b0c9d8e7f6a5b4c3d";
    let p = plan(
        &c,
        json!({"config_toml": base, "team_id": TEAM, "source_ref": sha, "env": ["WANDB_API_KEY"]}),
    )
    .await;
    let launched = ok(&call(&c, "launch_run", json!({"plan_id": p["plan_id"]})).await);
    assert!(!launched["run_id"].as_str().unwrap().is_empty());
    c.cancel().await.unwrap();
    // The values appear nowhere we keep: results (checked above), stderr, the state database.
    let stderr = std::fs::read_to_string(w.stderr_path()).unwrap_or_default();
    assert!(
        !stderr.contains(hf) && !stderr.contains(wandb),
        "secret in stderr"
    );
    for entry in std::fs::read_dir(w.state_dir()).unwrap() {
        let bytes = std::fs::read(entry.unwrap().path()).unwrap();
        let hay = String::from_utf8_lossy(&bytes);
        assert!(
            !hay.contains(hf) && !hay.contains(wandb),
            "secret in the state directory"
        );
    }
}

#[tokio::test]
async fn h_a_dropped_answer_is_reconciled_into_the_one_run_that_exists() {
    for effect in [FaultEffect::DropAfterCommit, FaultEffect::Reset] {
        let w = World::new().await;
        // A create timeout of 1 s keeps the "wait until a late create would show" window short
        // (that and the 15 s margin for the local work between the claim and the request).
        let mut args = plan_mode_args();
        args.extend(["--create-timeout-s", "1"]);
        let c = w.client(0, &args, Era::Modern).await;
        let name = format!("drop-run-{effect:?}").to_lowercase();
        let p = plan(
            &c,
            json!({"config_toml": config(&name, 5), "team_id": TEAM}),
        )
        .await;
        let mut rule = FaultRule::new("/api/v1/training/runs", effect);
        rule.method = Some("POST".into());
        rule.times = Some(1);
        w.sandbox.add_fault(rule);
        let first = call(&c, "launch_run", json!({"plan_id": p["plan_id"]})).await;
        if effect == FaultEffect::DropAfterCommit {
            // The run was committed: reconciliation finds it at once, and a retry returns it.
            let second = ok(&call(&c, "launch_run", json!({"plan_id": p["plan_id"]})).await);
            let runs = runs_named(&w, &name);
            assert_eq!(runs.len(), 1);
            assert_eq!(ok(&first)["run_id"], runs[0]["id"]);
            assert_eq!(second["run_id"], runs[0]["id"]);
            assert_eq!(second["deduplicated"], true);
            assert_eq!(w.sandbox.create_requests(), 1);
        } else {
            // A reset before handling created nothing, but the client cannot know that: it
            // refuses to dispatch again until a late create would be visible, then does so once.
            assert!(
                err(&first).to_lowercase().contains("call launch_run again"),
                "{}",
                text(&first)
            );
            let mut launched = None;
            for _ in 0..400 {
                let r = call(&c, "launch_run", json!({"plan_id": p["plan_id"]})).await;
                if r.is_error != Some(true) {
                    launched = Some(ok(&r));
                    break;
                }
                assert!(
                    runs_named(&w, &name).is_empty(),
                    "dispatched while the outcome was unknown"
                );
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            let launched = launched.expect("dispatches once the window has passed");
            let runs = runs_named(&w, &name);
            assert_eq!(runs.len(), 1);
            assert_eq!(launched["run_id"], runs[0]["id"]);
        }
        c.cancel().await.unwrap();
    }
}

#[tokio::test]
async fn h_a_client_that_cancels_mid_dispatch_never_causes_a_second_run() {
    let w = World::new().await;
    let c = w.client(0, &plan_mode_args(), Era::Modern).await;
    let p = plan(
        &c,
        json!({"config_toml": config("cancel-run", 5), "team_id": TEAM}),
    )
    .await;
    let mut rule = FaultRule::new("/api/v1/training/runs", FaultEffect::DelayAfterCommit);
    rule.method = Some("POST".into());
    rule.delay_ms = Some(1500);
    rule.times = Some(1);
    w.sandbox.add_fault(rule);
    let params = CallToolRequestParams::new("launch_run").with_arguments(
        json!({"plan_id": p["plan_id"]})
            .as_object()
            .unwrap()
            .clone(),
    );
    // Give up on the call while the platform is still answering.
    let _ = tokio::time::timeout(Duration::from_millis(300), c.call_tool(params)).await;
    // Retries until the in-flight dispatch settles (a minute at least), then the same run
    // comes back.
    let mut out = None;
    for _ in 0..600 {
        let r = call(&c, "launch_run", json!({"plan_id": p["plan_id"]})).await;
        if r.is_error != Some(true) {
            out = Some(ok(&r));
            break;
        }
        assert!(
            text(&r).contains("in progress") || text(&r).contains("again"),
            "{}",
            text(&r)
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let out = out.expect("the launch settles");
    let runs = runs_named(&w, "cancel-run");
    assert_eq!(runs.len(), 1);
    assert_eq!(out["run_id"], runs[0]["id"]);
    assert_eq!(w.sandbox.create_requests(), 1);
    c.cancel().await.unwrap();
}

#[tokio::test]
async fn i_concurrent_launches_and_two_servers_make_one_run() {
    let w = World::new().await;
    let a = w.client(0, &plan_mode_args(), Era::Modern).await;
    let b = w.client(0, &plan_mode_args(), Era::Legacy).await;
    let p = plan(
        &a,
        json!({"config_toml": config("race-run", 5), "team_id": TEAM}),
    )
    .await;
    let args = json!({"plan_id": p["plan_id"]});
    let (r1, r2, r3) = tokio::join!(
        call(&a, "launch_run", args.clone()),
        call(&a, "launch_run", args.clone()),
        call(&b, "launch_run", args.clone())
    );
    let ids: Vec<Value> = [r1, r2, r3]
        .iter()
        .filter(|r| r.is_error != Some(true))
        .map(|r| ok(r)["run_id"].clone())
        .collect();
    assert!(!ids.is_empty());
    assert!(ids.windows(2).all(|w| w[0] == w[1]));
    assert_eq!(runs_named(&w, "race-run").len(), 1);
    assert_eq!(w.sandbox.create_requests(), 1);
    // Whoever was told "in progress" gets the same run afterwards.
    let later = ok(&call(&b, "launch_run", args).await);
    assert_eq!(later["run_id"], runs_named(&w, "race-run")[0]["id"]);
    a.cancel().await.unwrap();
    b.cancel().await.unwrap();
}

#[tokio::test]
async fn j_a_plan_survives_a_server_restart_and_launches_once() {
    let w = World::new().await;
    let c = w.client(0, &plan_mode_args(), Era::Modern).await;
    let p = plan(
        &c,
        json!({"config_toml": config("restart-run", 5), "team_id": TEAM}),
    )
    .await;
    c.cancel().await.unwrap();
    let c = w.client(0, &plan_mode_args(), Era::Legacy).await;
    let first = ok(&call(&c, "launch_run", json!({"plan_id": p["plan_id"]})).await);
    c.cancel().await.unwrap();
    let c = w.client(0, &plan_mode_args(), Era::Modern).await;
    let second = ok(&call(&c, "launch_run", json!({"plan_id": p["plan_id"]})).await);
    assert_eq!(first["run_id"], second["run_id"]);
    assert_eq!(second["deduplicated"], true);
    assert_eq!(runs_named(&w, "restart-run").len(), 1);
    c.cancel().await.unwrap();
}

#[tokio::test]
async fn k_stopping_twice_sends_one_stop() {
    let w = World::new().await;
    let run = w.create_run(0, "stop-me", 50, None).await;
    w.advance(20);
    let c = w.client(0, &[], Era::Modern).await;
    let first = ok(&call(&c, "stop_run", json!({"run_id": run})).await);
    assert_eq!(first["status"], "STOPPED");
    assert_eq!(first["already_stopped"], false);
    let second = ok(&call(&c, "stop_run", json!({"run_id": run})).await);
    assert_eq!(second["already_stopped"], true);
    let stops = w
        .sandbox
        .request_log()
        .iter()
        .filter(|r| r.method == "PUT" && r.path.ends_with("/stop"))
        .count();
    assert_eq!(stops, 1);
    let msg = err(&call(
        &c,
        "stop_run",
        json!({"run_id": "cnotarun00000000000000000"}),
    )
    .await);
    assert!(msg.contains("not found"), "{msg}");
    // With then_report, a stop ends with the end-of-run report.
    let other = w.create_run(0, "stop-and-report", 50, None).await;
    w.advance(20);
    let out = ok(&call(
        &c,
        "stop_run",
        json!({"run_id": other, "then_report": true}),
    )
    .await);
    assert_eq!(out["status"], "STOPPED");
    assert_eq!(out["report"]["run_id"], other.as_str(), "{out}");
    c.cancel().await.unwrap();
}

#[tokio::test]
async fn l_owner_must_be_chosen_when_the_key_acts_for_teams() {
    let w = World::new().await;
    let c = w.client(0, &plan_mode_args(), Era::Modern).await;
    let msg = err(&call(
        &c,
        "plan_run",
        json!({"config_toml": config("owner-run", 5)}),
    )
    .await);
    assert!(
        msg.contains("Owner ambiguous") && msg.contains(TEAM),
        "{msg}"
    );
    let p = plan(
        &c,
        json!({"config_toml": config("owner-run", 5), "team_id": TEAM}),
    )
    .await;
    assert_eq!(p["owner"], TEAM);
    let launched = ok(&call(&c, "launch_run", json!({"plan_id": p["plan_id"]})).await);
    let run = w.sandbox.run(launched["run_id"].as_str().unwrap()).unwrap();
    assert_eq!(run["run"]["teamId"], TEAM);
    c.cancel().await.unwrap();
}

#[tokio::test]
async fn m_a_config_that_failed_for_good_is_not_relaunched_blindly() {
    let w = World::new().await;
    let mut args = plan_mode_args();
    args.push("--allow-model-overrides");
    let c = w.client(0, &args, Era::Modern).await;
    let cfg = config("oom-run", 5);
    let p = plan(&c, json!({"config_toml": cfg, "team_id": TEAM})).await;
    ok(&call(&c, "launch_run", json!({"plan_id": p["plan_id"]})).await);
    w.advance(60);
    let p2 = plan(&c, json!({"config_toml": cfg, "team_id": TEAM})).await;
    assert!(
        p2["blocked"].as_str().unwrap().contains("out of memory"),
        "{p2}"
    );
    let msg = err(&call(&c, "launch_run", json!({"plan_id": p2["plan_id"]})).await);
    assert!(msg.contains("relaunch_after_failure"), "{msg}");
    // A changed config is a new config.
    let p3 = plan(
        &c,
        json!({"config_toml": config("oom-run", 6), "team_id": TEAM}),
    )
    .await;
    assert!(p3["blocked"].is_null());
    // Or the person insists.
    let p4 = plan(
        &c,
        json!({"config_toml": cfg, "team_id": TEAM, "relaunch_after_failure": true}),
    )
    .await;
    assert!(p4["blocked"].is_null());
    ok(&call(&c, "launch_run", json!({"plan_id": p4["plan_id"]})).await);
    assert_eq!(runs_named(&w, "oom-run").len(), 2);
    c.cancel().await.unwrap();
}

#[tokio::test]
async fn n_a_missing_volume_is_named_and_created_exactly_once() {
    let w = World::new().await;
    let c = w.client(0, &plan_mode_args(), Era::Modern).await;
    let p = plan(&c, json!({"config_toml": config("vol-run", 5), "team_id": TEAM, "volume": "fresh-vol", "volume_size": "500Gi"})).await;
    assert_eq!(p["volume"]["create"], true);
    assert_eq!(p["volume"]["size"], "500Gi");
    assert!(p["summary"].as_str().unwrap().contains("will be CREATED"));
    // The volume create's answer is lost once; the volume becomes RUNNING only as time passes.
    let mut rule = FaultRule::new("/api/v1/training/volumes", FaultEffect::DropAfterCommit);
    rule.method = Some("POST".into());
    rule.times = Some(1);
    w.sandbox.add_fault(rule);
    let advance = {
        let url = format!("{}/_sandbox/clock/advance", w.sandbox.base_url());
        tokio::spawn(async move {
            let http = reqwest::Client::new();
            // Until aborted: a tick count would stop the clock on a slow machine before the
            // volume's create read it, and the volume would never come up.
            loop {
                tokio::time::sleep(Duration::from_millis(50)).await;
                let _ = http.post(&url).json(&json!({"seconds": 1})).send().await;
            }
        })
    };
    let mut launched = None;
    for _ in 0..5 {
        let r = call(&c, "launch_run", json!({"plan_id": p["plan_id"]})).await;
        if r.is_error != Some(true) {
            launched = Some(ok(&r));
            break;
        }
    }
    advance.abort();
    let launched = launched.expect("launched after the volume came up");
    let log = w.sandbox.request_log();
    let creates = log
        .iter()
        .filter(|r| r.method == "POST" && r.path.ends_with("/training/volumes"))
        .count();
    assert_eq!(creates, 1, "exactly one volume create");
    let run = w.sandbox.run(launched["run_id"].as_str().unwrap()).unwrap();
    assert_eq!(run["run"]["volumeName"], "fresh-vol");
    c.cancel().await.unwrap();
}

/// A volume create lost before the platform handled it (a reset: nothing was created) is not a
/// dead end: the next launches say when to call again until that attempt's settle window (the
/// request timeout, 5 s here, and the margin) is over, then the volume is created once more — once — and the
/// run launches. (Before, the journal's `unknown` record was never retried: "still being
/// created" for ever.)
#[tokio::test]
async fn a_volume_create_lost_unhandled_is_retried_once_after_its_settle_window() {
    let w = World::new().await;
    let policy = w.home.path().join("policy.toml");
    std::fs::write(&policy, "[platform]\nrequest_timeout_s = 5\n").expect("policy file");
    let mut args = plan_mode_args();
    args.extend(["--config", policy.to_str().unwrap()]);
    let c = w.client(0, &args, Era::Modern).await;
    let p = plan(&c, json!({"config_toml": config("lost-vol-run", 5), "team_id": TEAM, "volume": "lost-vol", "volume_size": "500Gi"})).await;
    assert_eq!(p["volume"]["create"], true);
    let mut rule = FaultRule::new("/api/v1/training/volumes", FaultEffect::Reset);
    rule.method = Some("POST".into());
    rule.times = Some(1);
    w.sandbox.add_fault(rule);
    let first = call(&c, "launch_run", json!({"plan_id": p["plan_id"]})).await;
    assert_eq!(first.is_error, Some(true), "{}", text(&first));
    assert!(text(&first).contains("unknown outcome"), "{}", text(&first));
    let advance = {
        let url = format!("{}/_sandbox/clock/advance", w.sandbox.base_url());
        tokio::spawn(async move {
            let http = reqwest::Client::new();
            loop {
                tokio::time::sleep(Duration::from_millis(50)).await;
                let _ = http.post(&url).json(&json!({"seconds": 1})).send().await;
            }
        })
    };
    let mut launched = None;
    let mut waited = false;
    for _ in 0..1200 {
        let r = call(&c, "launch_run", json!({"plan_id": p["plan_id"]})).await;
        if r.is_error != Some(true) {
            launched = Some(ok(&r));
            break;
        }
        let t = text(&r);
        assert!(t.contains("call launch_run again"), "{t}");
        waited |= t.contains("not listed yet; call launch_run again in");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    advance.abort();
    let launched = launched.expect("launched once the settle window was over");
    assert!(waited, "the settle window was waited out");
    let creates = w
        .sandbox
        .request_log()
        .iter()
        .filter(|r| r.method == "POST" && r.path.ends_with("/training/volumes"))
        .count();
    assert_eq!(creates, 2, "the lost create and exactly one more");
    let run = w.sandbox.run(launched["run_id"].as_str().unwrap()).unwrap();
    assert_eq!(run["run"]["volumeName"], "lost-vol");
    let vols: Value = reqwest::Client::new()
        .get(format!(
            "{}/api/v1/training/volumes?teamId={TEAM}",
            w.sandbox.base_url()
        ))
        .bearer_auth(w.key(0))
        .send()
        .await
        .expect("list volumes")
        .json()
        .await
        .expect("json");
    let named = vols["volumes"]
        .as_array()
        .expect("volumes")
        .iter()
        .filter(|v| v["name"] == "lost-vol")
        .count();
    assert_eq!(named, 1, "{vols}");
    c.cancel().await.unwrap();
}
