//! Run history (issue 20 §4): what `plan_run` and `launch_run` cost against a team whose run
//! list holds N finished runs. The platform's run list has no status filter, so a tool that
//! pages through it pays for the team's history; one that keeps what it knows pays for what
//! changed. Each size gets its own sandbox (manual clock, the standard users and teams plus N
//! finished SFT runs of team alpha, oldest last) and its own server over stdio in plan
//! confirmation mode (automation: the plan id suffices, both cost caps set), so `launch_run`
//! dispatches without a person and the figures are the tool's own.

use std::path::Path;

use anyhow::Context;
use factory_sandbox::{ClockMode, Sandbox, SandboxHandle, SandboxOptions, SeedSource};
use serde_json::{Value, json};

use crate::stats::{Summary, fmt_us};
use crate::{Bench, mcp};

/// The team the runs belong to and the plans are made for (the sandbox's team alpha).
const TEAM: &str = factory_sandbox::TEAM_ALPHA_ID;

/// A seed of `n` finished runs of team alpha: one step each, created hours before the
/// sandbox starts, one second apart (so the newest-first order is fixed).
fn seed(n: usize) -> Value {
    let runs: Vec<Value> = (0..n)
        .map(|i| {
            let name = format!("hist-{i:06}");
            json!({
                "id": format!("chist{i:020}"),
                "user_id": factory_sandbox::ALICE_USER_ID,
                "team_id": TEAM,
                "name": name,
                "config": {
                    "name": name,
                    "max_steps": 1,
                    "model": {"name": "PrimeIntellect/Qwen3-0.6B-Reverse-Text-SFT"},
                    "trainer": {}, "inference": {}
                },
                "gpu_type": "H100_80GB",
                "age_s": 400_000.0 + i as f64,
                "sft": true,
            })
        })
        .collect();
    json!({"mode": "extend", "runs": runs})
}

/// A small RL config that passes validation (the sandbox's models and environments); `steps`
/// makes each config distinct (the duplicate guard compares configs without their names).
fn config(name: &str, steps: usize) -> String {
    format!(
        r#"name = "{name}"
max_steps = {steps}
seq_len = 2048

[model]
name = "PrimeIntellect/Qwen3-0.6B-Reverse-Text-SFT"

[deployment]
num_train_gpus = 1
num_infer_gpus = 1

[orchestrator]
batch_size = 8

[orchestrator.renderer]
name = "prime-qwen3"

[[orchestrator.train.source]]
name = "reverse-text"

[orchestrator.train.source.env.taskset]
id = "reverse-text"

[trainer]

[inference]
"#
    )
}

/// The JSON a tool answered (its structured content, else its text).
fn answer(r: &rmcp::model::CallToolResult) -> anyhow::Result<Value> {
    if let Some(v) = &r.structured_content {
        return Ok(v.clone());
    }
    let text: String = r
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect();
    serde_json::from_str(&text).context("tool answer is not JSON")
}

/// Platform requests made while `f` ran.
async fn counted<T, Fut>(sb: &SandboxHandle, f: Fut) -> anyhow::Result<(T, usize)>
where
    Fut: std::future::Future<Output = anyhow::Result<T>>,
{
    let before = sb.request_log().len();
    let t = f.await?;
    Ok((t, sb.request_log().len() - before))
}

struct Size {
    runs: usize,
    first_plan: (f64, usize),
    plan: Summary,
    plan_requests: f64,
    launch: Summary,
    launch_requests: f64,
}

impl Bench {
    /// Section: plan_run / launch_run against 20, 3 000 and 30 000 seeded runs (quick: 20 and 3 000).
    pub(crate) async fn history(&mut self) -> anyhow::Result<()> {
        let sizes: &[usize] = if self.args.quick {
            &[20, 3_000]
        } else {
            &[20, 3_000, 30_000]
        };
        let calls = if self.args.quick { 8 } else { 20 };
        let mut out = Vec::new();
        for &n in sizes {
            self.say(&format!("run history: {n} finished runs"));
            out.push(self.history_size(n, calls).await?);
        }
        let mut rows = String::new();
        for s in &out {
            rows.push_str(&format!(
                "| {} | {} / {} | {} | {:.1} | {} | {:.1} |\n",
                s.runs,
                fmt_us(s.first_plan.0),
                s.first_plan.1,
                fmt_us(s.plan.p50_us),
                s.plan_requests,
                fmt_us(s.launch.p50_us),
                s.launch_requests,
            ));
        }
        self.report.push_str(&format!(
            "\n## Run history: `plan_run` and `launch_run` against a team's past\n\n\
             Team alpha seeded with N finished runs; a fresh server over stdio in plan confirmation mode \
             (`--confirm plan` with both cost caps, so `launch_run` needs no person). First plan: the \
             first `plan_run` of the server (time / platform requests). Then {calls} plans and {calls} \
             launches of distinct configs (each launch a new active run): medians, and platform \
             requests per call (mean). Each `launch_run` is timed alone (its plan made just before).\n\n\
             | finished runs | first plan_run (time / requests) | plan_run p50 | requests per plan_run | launch_run p50 | requests per launch_run |\n\
             |---|---|---|---|---|---|\n{rows}"
        ));
        self.results.insert(
            "history".into(),
            Value::Array(
                out.iter()
                    .map(|s| {
                        json!({
                            "runs": s.runs,
                            "first_plan_us": s.first_plan.0,
                            "first_plan_requests": s.first_plan.1,
                            "plan_run": s.plan.json(),
                            "plan_run_requests": s.plan_requests,
                            "launch_run": s.launch.json(),
                            "launch_run_requests": s.launch_requests,
                        })
                    })
                    .collect(),
            ),
        );
        Ok(())
    }

    async fn history_size(&self, n: usize, calls: usize) -> anyhow::Result<Size> {
        let dir = self.dir(&format!("history-{n}"))?;
        let seed_path = dir.join("seed.json");
        std::fs::write(&seed_path, serde_json::to_vec(&seed(n))?)?;
        let sb = Sandbox::start(SandboxOptions {
            clock: ClockMode::Manual,
            seed: SeedSource::File(seed_path),
            ..SandboxOptions::default()
        })
        .await
        .context("start the history sandbox")?;
        let r = self.history_on(&sb, n, calls, &dir).await;
        sb.shutdown().await;
        r
    }

    async fn history_on(
        &self,
        sb: &SandboxHandle,
        n: usize,
        calls: usize,
        dir: &Path,
    ) -> anyhow::Result<Size> {
        let home = dir.join("home");
        let ws = dir.join("ws");
        std::fs::create_dir_all(&home)?;
        std::fs::create_dir_all(&ws)?;
        let base = sb.base_url();
        let key = sb.api_key(0).context("seeded user")?;
        let env: Vec<(String, String)> = self
            .env(&home)
            .into_iter()
            .map(|(k, v)| match k.as_str() {
                "PRIME_API_BASE_URL" | "PRIME_TRACES_URL" => (k, base.clone()),
                "PRIME_API_KEY" => (k, key.clone()),
                _ => (k, v),
            })
            .collect();
        let mut args = Self::serve_args(&ws);
        args.extend(
            [
                "--confirm",
                "plan",
                "--max-cost-per-hour-usd",
                "1000",
                "--max-active-cost-per-hour-usd",
                "100000",
            ]
            .map(String::from),
        );
        let child = mcp::spawn_stdio(&self.args.server, &args, &env, &ws).await?;
        let c = &child.client;
        let mut k = 0usize;
        let plan = |k: &mut usize| {
            *k += 1;
            json!({"config_toml": config(&format!("hist-new-{n}-{k}"), 4 + *k), "team_id": TEAM})
        };

        let t0 = std::time::Instant::now();
        let (_, first_reqs) = counted(sb, mcp::call(c, "plan_run", &plan(&mut k))).await?;
        let first = (t0.elapsed().as_secs_f64() * 1e6, first_reqs);

        let mut plan_d = Vec::new();
        let mut plan_reqs = 0usize;
        for _ in 0..calls {
            let args = plan(&mut k);
            let t0 = std::time::Instant::now();
            let (_, r) = counted(sb, mcp::call(c, "plan_run", &args)).await?;
            plan_d.push(t0.elapsed());
            plan_reqs += r;
        }

        let mut launch_d = Vec::new();
        let mut launch_reqs = 0usize;
        for _ in 0..calls {
            let p = answer(&mcp::call(c, "plan_run", &plan(&mut k)).await?)?;
            let id = p["plan_id"]
                .as_str()
                .context("plan_run answered no plan_id")?
                .to_string();
            let args = json!({"plan_id": id});
            let t0 = std::time::Instant::now();
            let (_, r) = counted(sb, mcp::call(c, "launch_run", &args)).await?;
            launch_d.push(t0.elapsed());
            launch_reqs += r;
        }
        child.client.cancel().await?;
        Ok(Size {
            runs: n,
            first_plan: first,
            plan: Summary::of(&plan_d),
            plan_requests: plan_reqs as f64 / calls as f64,
            launch: Summary::of(&launch_d),
            launch_requests: launch_reqs as f64 / calls as f64,
        })
    }
}
