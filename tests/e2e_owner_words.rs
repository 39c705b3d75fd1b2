//! One owner story and figures a person can trust (issue 18 §2 config side, §3, §4), end to
//! end through MCP against the sandbox: a key that acts for two teams sees every owner's runs,
//! `whoami` says the owner is ambiguous, money figures say what they are, components name the
//! log components, and the validator warns about local paths and refuses a pasted W&B key.

mod common;

use common::{Era, World, call, err, ok, rl_config, text};
use factory_sandbox::{TEAM_ALPHA_ID, TEAM_BETA_ID};
use serde_json::{Value, json};

/// Alice (user 0) belongs to Team Alpha and Team Beta and has no team chosen.
const ALICE: usize = 0;
/// Bob (user 1) is Team Beta's admin.
const BOB: usize = 1;

fn ids(list: &Value) -> Vec<String> {
    list["runs"]
        .as_array()
        .expect("runs")
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test]
async fn list_runs_without_an_owner_shows_every_owner_and_whoami_says_the_owner_is_ambiguous() {
    let w = World::new().await;
    // A teammate's active run in Team Beta, and Alice's own personal run.
    let team_run = w
        .create_run(BOB, "beta-active", 1000, Some(TEAM_BETA_ID))
        .await;
    let personal_run = w.create_run(ALICE, "alice-personal", 1000, None).await;
    w.advance(10);
    let c = w.client(ALICE, &[], Era::Modern).await;

    let who = call(&c, "whoami", json!({})).await;
    let summary = text(&who);
    let who = ok(&who);
    assert_eq!(who["owner"]["standing"], "ambiguous", "{who}");
    assert!(
        !summary.contains("acting for the personal account"),
        "{summary}"
    );
    assert!(summary.contains("owner ambiguous"), "{summary}");
    for team in [TEAM_ALPHA_ID, TEAM_BETA_ID] {
        assert!(summary.contains(team), "{summary}");
        assert!(
            who["owner"]["can_act_for"]
                .as_array()
                .unwrap()
                .iter()
                .any(|o| o.as_str().unwrap().contains(team)),
            "{who}"
        );
    }
    // The spend covers every owner: the team's active run counts.
    assert!(
        who["spend"]["active_runs"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["id"] == team_run.as_str()),
        "{who}"
    );

    let listed = call(&c, "list_runs", json!({})).await;
    let summary = text(&listed);
    let listed = ok(&listed);
    let found = ids(&listed);
    assert!(found.contains(&team_run), "{listed}");
    assert!(found.contains(&personal_run), "{listed}");
    assert!(
        summary.contains("the personal account and 2 team(s)"),
        "{summary}"
    );
    // Each run says its owner: a team's run its team (which `scope` names) and who created it;
    // a run of the personal account neither.
    let listed_run = |id: &str| {
        listed["runs"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["id"] == id)
            .cloned()
            .unwrap()
    };
    let personal = listed_run(&personal_run);
    assert!(personal.get("team_id").is_none(), "{personal}");
    assert!(personal.get("user_id").is_none(), "{personal}");
    let team = listed_run(&team_run);
    assert_eq!(team["team_id"], TEAM_BETA_ID, "{team}");
    assert_eq!(team["user_id"], w.sandbox.users()[BOB].id, "{team}");
    assert!(
        listed["scope"]
            .as_str()
            .unwrap()
            .contains(&format!("team {TEAM_BETA_ID} (Team Beta)")),
        "{listed}"
    );
    // The status filter covers every owner too.
    let running = ok(&call(&c, "list_runs", json!({"status": "RUNNING"})).await);
    assert!(ids(&running).contains(&team_run), "{running}");

    // Naming an owner still narrows the list to it.
    let personal = ok(&call(&c, "list_runs", json!({"personal": true})).await);
    assert_eq!(ids(&personal), vec![personal_run.clone()]);
    assert_eq!(personal["scope"], "personal account");
    let beta = ok(&call(&c, "list_runs", json!({"team_id": TEAM_BETA_ID})).await);
    assert_eq!(ids(&beta), vec![team_run.clone()]);
    c.cancel().await.unwrap();

    // A key with one owner is not ambiguous.
    let c = w.client(3, &[], Era::Legacy).await;
    let who = ok(&call(&c, "whoami", json!({})).await);
    assert_eq!(who["owner"]["standing"], "personal", "{who}");
    c.cancel().await.unwrap();
}

#[tokio::test]
async fn run_report_money_says_what_it_is_and_a_coarse_rate_is_not_given_as_a_figure() {
    let w = World::new().await;
    let run = w.create_run(ALICE, "priced", 10_000, None).await;
    // QUEUED 2 s + PENDING 3 s, then 11 s of running: a cost of a cent or two.
    w.advance(16);
    let c = w.client(ALICE, &[], Era::Modern).await;
    let short = call(&c, "run_report", json!({"run_id": run})).await;
    let summary = text(&short);
    let short = ok(&short);
    let usage = &short["usage"];
    assert!(usage["total_cost_usd"].is_number(), "{short}");
    assert!(usage["cost_per_hour_usd"].is_null(), "{usage}");
    let basis = usage["cost_per_hour_basis"].as_str().unwrap();
    assert!(basis.contains("too coarse"), "{basis}");
    assert!(basis.contains("platform's Date header"), "{basis}");
    let range = usage["cost_per_hour_range_usd"].as_array().unwrap();
    assert!(range[0].as_f64().unwrap() < range[1].as_f64().unwrap());
    assert!(summary.contains("reported by the platform"), "{summary}");
    assert!(!summary.contains("-0.00") && !basis.contains("-0.00"));

    // Two hours on: a rate derived over a span that long means something, and says its basis.
    w.advance(7200);
    let long = ok(&call(&c, "run_report", json!({"run_id": run})).await);
    let usage = &long["usage"];
    let rate = usage["cost_per_hour_usd"].as_f64().expect("a derived rate");
    let basis = usage["cost_per_hour_basis"].as_str().unwrap();
    assert!(
        basis.starts_with("derived: the platform's reported total cost"),
        "{basis}"
    );
    let [lo, hi] = [0, 1].map(|i| usage["cost_per_hour_range_usd"][i].as_f64().unwrap());
    assert!(lo <= rate && rate <= hi, "{usage}");
    // The sandbox bills 2 GPUs at the run's price: the rate is that price, not a rounding.
    let total = usage["total_cost_usd"].as_f64().unwrap();
    let hours = long["duration_s"].as_f64().unwrap() / 3600.0;
    assert!((rate - total / hours).abs() < 0.01, "{long}");
    c.cancel().await.unwrap();
}

#[tokio::test]
async fn get_components_names_the_log_components_get_logs_accepts() {
    let w = World::new().await;
    let run = w.create_run(ALICE, "components", 100, None).await;
    w.advance(10);
    let c = w.client(ALICE, &[], Era::Legacy).await;
    let comps = call(&c, "get_components", json!({"run_id": run})).await;
    let summary = text(&comps);
    let comps = ok(&comps);
    // The CLI's rows stay.
    assert_eq!(comps["components"][0]["component"], "orchestrator");
    let logs: Vec<&str> = comps["log_components"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["component"].as_str().unwrap())
        .collect();
    for want in ["orchestrator", "trainer", "inference"] {
        assert!(logs.contains(&want), "{logs:?}");
    }
    assert!(summary.contains("get_logs components"), "{summary}");
    // Each named component is one get_logs accepts for this run.
    for l in comps["log_components"].as_array().unwrap() {
        let mut args = json!({"run_id": run, "component": l["component"], "tail": 5});
        if let Some(env) = l["env"].as_str() {
            args["env"] = json!(env);
        }
        ok(&call(&c, "get_logs", args).await);
    }
    c.cancel().await.unwrap();
}

#[tokio::test]
async fn the_validator_warns_about_local_paths_and_refuses_a_pasted_wandb_key() {
    let w = World::new().await;
    std::fs::write(w.workspace.path().join("train.jsonl"), "{}\n").unwrap();
    let c = w.client(ALICE, &[], Era::Modern).await;
    let sha = "4b825dc642cb6eb9a060e54bf8d69288fbee4904";
    let config = rl_config("paths", 10).replace(
        "[orchestrator.train.source.env.taskset]\nid = \"reverse-text\"\n",
        &format!(
            "[orchestrator.train.source.env.taskset]\nid = \"reverse-text\"\nrevision = \"{sha}\"\ndata_files = \"./data/train.jsonl\"\nextra = \"train.jsonl\"\nsplit = \"train\"\n"
        ),
    ) + "\n[ckpt]\ninterval = 5\n";
    let v = ok(&call(
        &c,
        "validate_config",
        json!({"config_toml": config, "offline": true}),
    )
    .await);
    let findings = v["findings"].as_array().unwrap();
    let at = |p: &str| {
        findings
            .iter()
            .find(|f| f["path"].as_str().unwrap().ends_with(p))
    };
    let relative = at("taskset.data_files").unwrap_or_else(|| panic!("{v}"));
    assert_eq!(relative["severity"], "warning");
    assert!(
        relative["message"]
            .as_str()
            .unwrap()
            .contains("a path in TOML does not upload the file"),
        "{relative}"
    );
    let existing = at("taskset.extra").unwrap_or_else(|| panic!("{v}"));
    assert!(
        existing["message"]
            .as_str()
            .unwrap()
            .contains("names a file in the workspace"),
        "{existing}"
    );
    assert!(at("taskset.split").is_none(), "{v}");
    assert!(
        at("taskset.revision").is_none(),
        "a commit SHA is fine: {v}"
    );
    let ckpt = findings
        .iter()
        .find(|f| f["path"] == "ckpt")
        .unwrap_or_else(|| panic!("{v}"));
    assert!(
        ckpt["message"]
            .as_str()
            .unwrap()
            .contains("fetch_checkpoint"),
        "{ckpt}"
    );
    assert_eq!(v["valid"], true, "warnings never block: {v}");

    // 40 hex in [monitors.wandb] is a W&B key: an error in validate_config …
    let key = "0123456789abcdef0123456789abcdef01234567";
    let pasted = rl_config("wandb", 10) + &format!("\n[monitors.wandb]\nproject = \"{key}\"\n");
    let v = call(
        &c,
        "validate_config",
        json!({"config_toml": pasted, "offline": true}),
    )
    .await;
    assert!(!text(&v).contains(key), "the key is never echoed");
    let v = ok(&v);
    assert_eq!(v["valid"], false, "{v}");
    assert!(
        v["findings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["path"] == "monitors.wandb.project"
                && f["severity"] == "error"
                && f["message"].as_str().unwrap().contains("W&B API key")),
        "{v}"
    );
    // … and refused by plan_run before anything else.
    let refused = err(&call(
        &c,
        "plan_run",
        json!({"config_toml": pasted, "personal": true}),
    )
    .await);
    assert!(refused.contains("W&B API key"), "{refused}");
    assert!(!refused.contains(key));
    c.cancel().await.unwrap();
}

#[tokio::test]
async fn plan_run_warns_about_a_local_path_in_a_taskset_argument() {
    let w = World::new().await;
    let c = w.client(ALICE, &[], Era::Modern).await;
    let config = rl_config("plan-paths", 10).replace(
        "[orchestrator.train.source.env.taskset]\nid = \"reverse-text\"\n",
        "[orchestrator.train.source.env.taskset]\nid = \"reverse-text\"\ndata_files = \"~/data/train.jsonl\"\n",
    );
    let plan = call(
        &c,
        "plan_run",
        json!({"config_toml": config, "personal": true}),
    )
    .await;
    let all = text(&plan);
    assert!(
        all.contains("taskset.data_files")
            && all.contains("a path in TOML does not upload the file"),
        "{all}"
    );
    c.cancel().await.unwrap();
}

/// Every owner's runs merged newest first, a later page, with pages asked of each owner only as
/// large as the page shown needs: an owner's newest `(page - 1) * limit + limit` runs are all
/// that page can hold of them. A status filter still reads pages of 100.
#[tokio::test]
async fn a_later_page_across_owners_reads_each_owner_newest_runs_only() {
    let w = World::new().await;
    let mut made: Vec<String> = Vec::new();
    // Nine runs, one second apart, spread over the three owners out of turn.
    for (i, team) in [
        None,
        Some(TEAM_BETA_ID),
        None,
        Some(TEAM_ALPHA_ID),
        Some(TEAM_BETA_ID),
        None,
        None,
        Some(TEAM_ALPHA_ID),
        Some(TEAM_BETA_ID),
    ]
    .into_iter()
    .enumerate()
    {
        let user = if team == Some(TEAM_BETA_ID) && i % 2 == 0 {
            BOB
        } else {
            ALICE
        };
        made.push(w.create_run(user, &format!("spread-{i}"), 1000, team).await);
        w.advance(1);
    }
    let newest_first: Vec<String> = made.iter().rev().cloned().collect();
    let c = w.client(ALICE, &[], Era::Modern).await;
    // The run list requests of one call, as (page, limit, mine) of each.
    let listed = |args: Value| {
        let (c, w) = (&c, &w);
        async move {
            let before = w.sandbox.request_log().len();
            let answer = ok(&call(c, "list_runs", args).await);
            let requests: Vec<(String, String, String)> = w.sandbox.request_log()[before..]
                .iter()
                .filter(|r| r.path == "/api/v1/rft/runs")
                .map(|r| {
                    let q = r.query.clone().unwrap_or_default();
                    let get = |k: &str| {
                        q.split('&')
                            .find_map(|p| p.strip_prefix(&format!("{k}=")))
                            .unwrap_or("")
                            .to_string()
                    };
                    (get("page"), get("limit"), get("mine"))
                })
                .collect();
            (answer, requests)
        }
    };
    let once_each = |limit: &str| vec![("1".to_string(), limit.to_string(), String::new()); 3];

    let (page2, requests) = listed(json!({"page": 2, "limit": 3})).await;
    assert_eq!(ids(&page2), newest_first[3..6].to_vec(), "{page2}");
    assert_eq!(page2["total"], 9, "{page2}");
    assert_eq!(page2["total_pages"], 3, "{page2}");
    assert_eq!(
        requests,
        once_each("6"),
        "each owner once, for its newest 6"
    );
    let (last, requests) = listed(json!({"page": 3, "limit": 4})).await;
    assert_eq!(ids(&last), newest_first[8..].to_vec(), "{last}");
    assert_eq!(requests, once_each("12"));
    // Past 100, pages of 100 (each owner's list ends within its first).
    let (beyond, requests) = listed(json!({"page": 2, "limit": 60})).await;
    assert_eq!(ids(&beyond), Vec::<String>::new(), "{beyond}");
    assert_eq!(requests, once_each("100"));
    // Only the caller's runs: Bob's two Team Beta runs are left out, the pages as small.
    let (mine, requests) = listed(json!({"page": 1, "limit": 5, "mine": true})).await;
    let alice_newest: Vec<String> = newest_first
        .iter()
        .filter(|id| ![made[4].as_str(), made[8].as_str()].contains(&id.as_str()))
        .take(5)
        .cloned()
        .collect();
    assert_eq!(ids(&mine), alice_newest, "{mine}");
    assert_eq!(
        requests,
        vec![("1".to_string(), "5".to_string(), "true".to_string()); 3]
    );

    // Filtered, the pages are of 100 (the matches may be anywhere in an owner's list).
    let (_, requests) = listed(json!({"status": "QUEUED", "limit": 2})).await;
    assert_eq!(requests, once_each("100"));
    c.cancel().await.unwrap();
}

/// `list_runs {}` with the teams request held until `want` requests for runs were made (for at
/// most 10 s); how many were made by then, and the answer.
async fn list_with_the_teams_held(
    w: &World,
    c: &common::Client,
    want: usize,
) -> (usize, rmcp::model::CallToolResult) {
    use factory_sandbox::{FaultEffect, FaultRule};
    let mut hold = FaultRule::new("/api/v1/user/teams", FaultEffect::Hold);
    hold.method = Some("GET".into());
    hold.times = Some(1);
    w.sandbox.add_fault(hold);
    let from = w.sandbox.request_log().len();
    let runs_requests = || {
        w.sandbox.request_log()[from..]
            .iter()
            .filter(|r| r.method == "GET" && r.path == "/api/v1/rft/runs")
            .count()
    };
    let peer = c.peer().clone();
    let params = rmcp::model::CallToolRequestParams::new("list_runs")
        .with_arguments(json!({}).as_object().unwrap().clone());
    let call = tokio::spawn(async move { peer.call_tool(params).await });
    for _ in 0..400 {
        if w.sandbox.held_requests() == 1 && runs_requests() >= want {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
    let made = runs_requests();
    assert_eq!(w.sandbox.release_held(), 1, "the teams request was held");
    (made, call.await.expect("join").expect("list_runs"))
}

/// An argument-less list reads the owners afresh on every call. From the second call on, it reads
/// the runs of the owners the last read found while it reads the owners again: one round trip
/// where there were two. With the teams request held, the first call asks for no runs (it knows
/// no owner yet), the second asks for every owner's, and both answer the same.
#[tokio::test]
async fn list_runs_reads_the_known_owners_runs_beside_the_owners_read() {
    let w = World::new().await;
    w.create_run(BOB, "beta-run", 1000, Some(TEAM_BETA_ID))
        .await;
    w.create_run(ALICE, "alpha-run", 1000, Some(TEAM_ALPHA_ID))
        .await;
    w.create_run(ALICE, "personal-run", 1000, None).await;
    w.advance(10);
    let c = w.client(ALICE, &[], Era::Modern).await;

    let (made, first) = list_with_the_teams_held(&w, &c, 0).await;
    assert_eq!(made, 0, "no owner is known before the first read");
    let first = ok(&first);
    assert_eq!(ids(&first).len(), 3, "{first}");

    let (made, second) = list_with_the_teams_held(&w, &c, 3).await;
    assert_eq!(
        made, 3,
        "each owner's runs asked for while the teams were read"
    );
    let second = ok(&second);
    assert_eq!(second["runs"], first["runs"]);
    assert_eq!(second["scope"], first["scope"]);
    c.cancel().await.unwrap();
}

/// A team left between two calls: the next call reads its runs beside the owners' read (the
/// platform refuses: no longer a member), drops that read with its error, and shows the other
/// owners' runs without failing. The team left is the middle one of three, so a read given to
/// the wrong owner (by position) fails too. Joined again, the team's runs are shown from the
/// next call, read after the owners' read found it.
#[tokio::test]
async fn list_runs_follows_a_team_left_and_joined_between_calls() {
    let w = World::new().await;
    let beta_run = w
        .create_run(BOB, "beta-run", 1000, Some(TEAM_BETA_ID))
        .await;
    let alpha_run = w
        .create_run(ALICE, "alpha-run", 1000, Some(TEAM_ALPHA_ID))
        .await;
    let personal_run = w.create_run(ALICE, "personal-run", 1000, None).await;
    w.advance(10);
    let alice = w.sandbox.users()[ALICE].id.clone();
    let c = w.client(ALICE, &[], Era::Modern).await;
    let alpha_reads = |from: usize| {
        w.sandbox.request_log()[from..]
            .iter()
            .filter(|r| {
                r.path == "/api/v1/rft/runs"
                    && r.query
                        .as_deref()
                        .is_some_and(|q| q.contains(TEAM_ALPHA_ID))
            })
            .count()
    };
    let all = vec![personal_run.clone(), alpha_run.clone(), beta_run.clone()];

    let before = ok(&call(&c, "list_runs", json!({})).await);
    assert_eq!(ids(&before), all, "{before}");

    assert!(w.sandbox.set_member(TEAM_ALPHA_ID, &alice, false));
    let from = w.sandbox.request_log().len();
    let left = call(&c, "list_runs", json!({})).await;
    assert_eq!(
        alpha_reads(from),
        1,
        "Team Alpha's runs were asked for beside the owners' read"
    );
    let left = ok(&left);
    assert_eq!(ids(&left), vec![personal_run, beta_run], "{left}");
    assert!(
        !left["scope"].as_str().unwrap().contains(TEAM_ALPHA_ID),
        "{left}"
    );

    assert!(w.sandbox.set_member(TEAM_ALPHA_ID, &alice, true));
    let from = w.sandbox.request_log().len();
    let back = ok(&call(&c, "list_runs", json!({})).await);
    assert_eq!(
        alpha_reads(from),
        1,
        "read once, after the owners' read found it"
    );
    assert_eq!(ids(&back), all, "{back}");
    c.cancel().await.unwrap();
}
