//! What a run looks like at a given simulated time: status, steps, logs, metrics, checkpoints,
//! samples, distributions, usage. Everything is a pure function of the run record (its config
//! and events) and the time, so reads are deterministic and nothing runs in the background.
//! Timings, file layouts and content are inventions of the sandbox (see the README).

use chrono::{DateTime, Utc};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::clock::{iso, plus_secs, secs_between};
use crate::seed::{Seed, Timings};
use crate::wire::{Checkpoint, EnvServer, FailureAnalysis, Progress, RlRun};
use crate::world::{FailCause, Run, Scenario};

/// A deterministic number in [0, 1) for (run, tag, n).
pub(crate) fn unit(run_id: &str, tag: &str, n: u64) -> f64 {
    let mut h = Sha256::new();
    h.update(run_id.as_bytes());
    h.update([0]);
    h.update(tag.as_bytes());
    h.update(n.to_le_bytes());
    let d = h.finalize();
    let mut b = [0u8; 8];
    b.copy_from_slice(&d[..8]);
    (u64::from_le_bytes(b) >> 11) as f64 / (1u64 << 53) as f64
}

pub(crate) fn hex_digest(parts: &[&str]) -> String {
    let mut h = Sha256::new();
    for p in parts {
        h.update(p.as_bytes());
        h.update([0]);
    }
    hex::encode(h.finalize())
}

fn round4(x: f64) -> f64 {
    (x * 10_000.0).round() / 10_000.0
}

// ---- config access -----------------------------------------------------------------------

pub(crate) fn cfg<'a>(config: &'a Value, path: &[&str]) -> Option<&'a Value> {
    let mut v = config;
    for p in path {
        v = v.get(p)?;
    }
    Some(v)
}

fn cfg_u64(config: &Value, path: &[&str]) -> Option<u64> {
    cfg(config, path).and_then(Value::as_u64)
}

fn cfg_str(config: &Value, path: &[&str]) -> Option<String> {
    cfg(config, path)
        .and_then(Value::as_str)
        .map(str::to_string)
}

/// An environment named in the config.
#[derive(Debug, Clone)]
pub(crate) struct EnvRef {
    pub name: String,
    pub id: String,
}

pub(crate) fn environments(config: &Value) -> Vec<EnvRef> {
    let mut out: Vec<EnvRef> = Vec::new();
    let lists: [&[&str]; 5] = [
        &["orchestrator", "train", "source"],
        &["orchestrator", "eval", "source"],
        &["eval", "source"],
        &["orchestrator", "env"],
        &["env"],
    ];
    for path in lists {
        let items: Vec<&Value> = match cfg(config, path) {
            Some(Value::Array(a)) => a.iter().collect(),
            Some(v @ Value::Object(_)) => vec![v],
            _ => continue,
        };
        for item in items {
            let id = cfg_str(item, &["env", "taskset", "id"])
                .or_else(|| cfg_str(item, &["taskset", "id"]))
                .or_else(|| cfg_str(item, &["id"]))
                .or_else(|| cfg_str(item, &["name"]));
            let Some(id) = id else { continue };
            let name = cfg_str(item, &["name"]).unwrap_or_else(|| id.clone());
            if !out.iter().any(|e| e.name == name) {
                out.push(EnvRef { name, id });
            }
        }
    }
    out
}

pub(crate) fn model_name(config: &Value) -> Option<String> {
    cfg_str(config, &["model", "name"]).or_else(|| cfg_str(config, &["model"]))
}

pub(crate) fn max_steps(run: &Run, t: &Timings) -> u32 {
    cfg_u64(&run.config, &["max_steps"])
        .or_else(|| cfg_u64(&run.config, &["trainer", "max_steps"]))
        .map(|n| n.min(1_000_000) as u32)
        .unwrap_or(t.default_max_steps)
}

fn ckpt_interval(run: &Run, t: &Timings) -> u32 {
    cfg_u64(&run.config, &["ckpt", "interval"])
        .or_else(|| cfg_u64(&run.config, &["trainer", "ckpt", "interval"]))
        .map(|n| n.clamp(1, 1_000_000) as u32)
        .unwrap_or(t.checkpoint_interval.max(1))
}

/// Steps at which eval traces appear (the `[eval]` / `[orchestrator.eval]` interval).
pub(crate) fn eval_interval(config: &Value) -> Option<u32> {
    let has = |p: &[&str]| cfg(config, p).is_some_and(Value::is_object);
    if !(has(&["eval"]) || has(&["orchestrator", "eval"])) {
        return None;
    }
    let n = cfg_u64(config, &["eval", "interval"])
        .or_else(|| cfg_u64(config, &["orchestrator", "eval", "interval"]))
        .unwrap_or(10);
    Some(n.clamp(1, 1_000_000) as u32)
}

/// Trainer and inference GPU counts from `[deployment]`.
pub(crate) fn gpu_counts(config: &Value, sft: bool) -> (u32, u32) {
    let train = cfg_u64(config, &["deployment", "num_train_gpus"]).unwrap_or(1) as u32;
    let default_infer = if sft && cfg(config, &["inference"]).is_none() {
        0
    } else {
        1
    };
    let infer = cfg_u64(config, &["deployment", "num_infer_gpus"]).unwrap_or(default_infer) as u32;
    (train.max(1), infer)
}

/// Decides a new run's scenario from its config (the triggers are listed in the README).
pub(crate) fn classify(
    seed: &Seed,
    config: &Value,
    name: Option<&str>,
    gpu_type: &str,
    train_gpus: u32,
) -> Scenario {
    let lname = name.unwrap_or("").to_ascii_lowercase();
    if lname.contains("queued") {
        return Scenario::Queued {
            reason: "Waiting for GPU capacity (sandbox trigger: run name contains \"queued\")"
                .into(),
            runs_ahead: 3,
        };
    }
    if let Some(g) = seed.gpu(gpu_type)
        && !g.available_now
    {
        return Scenario::Queued {
            reason: format!("No {gpu_type} capacity is available right now"),
            runs_ahead: 2,
        };
    }
    let model = model_name(config).unwrap_or_default();
    let Some(m) = seed.model(&model) else {
        return Scenario::Failed {
            cause: FailCause::UnknownModel,
            detail: model,
        };
    };
    if let Some(env) = environments(config)
        .into_iter()
        .find(|e| e.id.contains("fail-unknown-env") || e.name.contains("fail-unknown-env"))
    {
        return Scenario::Failed {
            cause: FailCause::UnknownEnv,
            detail: env.id,
        };
    }
    let mem = seed.gpu(gpu_type).map(|g| g.memory_gb).unwrap_or(80.0);
    // Full fine-tuning with Adam needs about 16 bytes per parameter (invention of scale).
    let need_per_gpu = m.params_b * 16.0 / f64::from(train_gpus.max(1));
    if lname.contains("oom") || need_per_gpu > mem {
        return Scenario::Failed {
            cause: FailCause::Oom,
            detail: format!(
                "{model} needs ~{need_per_gpu:.0} GB per GPU on {train_gpus} x {gpu_type} ({mem:.0} GB)"
            ),
        };
    }
    if lname.contains("stall") {
        return Scenario::Stall;
    }
    Scenario::Healthy
}

// ---- lifecycle ----------------------------------------------------------------------------

/// A run's state at one instant.
#[derive(Debug, Clone)]
pub(crate) struct Phase {
    pub status: &'static str,
    /// Completed training steps.
    pub steps: u32,
    pub started_at: Option<DateTime<Utc>>,
    pub completed_at: Option<DateTime<Utc>>,
    pub last_step_at: Option<DateTime<Utc>>,
    /// When the run starts (or would start) RUNNING.
    pub t_run: DateTime<Utc>,
    /// The instant the content is computed for (now, or the end of the run).
    pub effective: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl Phase {
    pub(crate) fn is_terminal(&self) -> bool {
        matches!(self.status, "COMPLETED" | "FAILED" | "STOPPED" | "PAUSED")
    }
    pub(crate) fn is_active(&self) -> bool {
        !self.is_terminal()
    }
    pub(crate) fn has_started(&self) -> bool {
        self.started_at.is_some()
    }
}

pub(crate) fn step_time(ph: &Phase, t: &Timings, k: u32) -> DateTime<Utc> {
    plus_secs(ph.t_run, f64::from(k) * t.step_s)
}

pub(crate) fn phase(run: &Run, t: &Timings, now: DateTime<Utc>) -> Phase {
    let t_queue_end = plus_secs(run.created_at, t.queued_s);
    let t_run = plus_secs(t_queue_end, t.pending_s);
    let max = max_steps(run, t);
    let queued_forever = matches!(run.scenario, Scenario::Queued { .. });
    let (natural_end, cap): (Option<(DateTime<Utc>, &'static str)>, u32) = match &run.scenario {
        Scenario::Healthy => (
            Some((plus_secs(t_run, f64::from(max) * t.step_s), "COMPLETED")),
            max,
        ),
        Scenario::Stall => (None, t.stall_after_steps.min(max)),
        Scenario::Queued { .. } => (None, 0),
        Scenario::Failed { .. } => (Some((plus_secs(t_run, t.fail_after_s), "FAILED")), 0),
    };
    let mut end = natural_end;
    let interrupts = [(run.stopped_at, "STOPPED"), (run.paused_at, "PAUSED")];
    for (at, status) in interrupts.into_iter() {
        if let Some(at) = at
            && end.is_none_or(|(e, _)| at < e)
        {
            end = Some((at, status));
        }
    }
    let (effective, ended) = match end {
        Some((e, s)) if e <= now => (e, Some((e, s))),
        _ => (now, None),
    };
    let started = !queued_forever && effective >= t_run;
    let steps = if started {
        let n = (secs_between(t_run, effective) / t.step_s.max(0.001)).floor();
        (n.max(0.0) as u64).min(u64::from(cap)) as u32
    } else {
        0
    };
    let status = match ended {
        Some((_, s)) => s,
        None if queued_forever || effective < t_queue_end => "QUEUED",
        None if effective < t_run => "PENDING",
        None => "RUNNING",
    };
    let started_at = started.then_some(t_run);
    let last_step_at = if steps > 0 {
        Some(plus_secs(t_run, f64::from(steps) * t.step_s))
    } else {
        started_at
    };
    let mut updated_at = run.created_at;
    for candidate in [
        (!queued_forever && effective >= t_queue_end).then_some(t_queue_end),
        started_at,
        last_step_at,
        ended.map(|(e, _)| e),
    ]
    .into_iter()
    .flatten()
    {
        updated_at = updated_at.max(candidate);
    }
    for r in &run.restarts {
        if *r <= now {
            updated_at = updated_at.max(*r);
        }
    }
    Phase {
        status,
        steps,
        started_at,
        completed_at: ended.map(|(e, _)| e),
        last_step_at,
        t_run,
        effective,
        updated_at,
    }
}

// ---- the run object ------------------------------------------------------------------------

fn failure(run: &Run) -> Option<(String, FailureAnalysis)> {
    let Scenario::Failed { cause, detail } = &run.scenario else {
        return None;
    };
    Some(match cause {
        FailCause::Oom => (
            "torch.OutOfMemoryError: CUDA out of memory".to_string(),
            FailureAnalysis {
                root_cause: format!(
                    "The trainer ran out of GPU memory: the model does not fit on the allocated GPUs ({detail})."
                ),
                evidence: vec![
                    "trainer: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB".into(),
                    "orchestrator: Trainer exited with code 1".into(),
                ],
                confidence: 0.93,
                category: "RUN_ISSUE",
            },
        ),
        FailCause::UnknownModel => (
            format!("Model '{detail}' is not available for hosted training"),
            FailureAnalysis {
                root_cause: format!(
                    "The base model '{detail}' is not in the list of trainable models (prime train models)."
                ),
                evidence: vec![format!(
                    "trainer: OSError: {detail} is not a valid model identifier"
                )],
                confidence: 0.9,
                category: "RUN_ISSUE",
            },
        ),
        FailCause::UnknownEnv => (
            format!("Unknown environment '{detail}'"),
            FailureAnalysis {
                root_cause: format!(
                    "The environment '{detail}' could not be installed or found; the orchestrator could not start."
                ),
                evidence: vec![format!(
                    "orchestrator: ValueError: Unknown environment '{detail}'"
                )],
                confidence: 0.88,
                category: "RUN_ISSUE",
            },
        ),
    })
}

fn opt_f64(v: Option<&Value>) -> Option<f64> {
    v.and_then(Value::as_f64)
}

/// The §4 run object at `now`.
pub(crate) fn run_wire(run: &Run, seed: &Seed, now: DateTime<Utc>) -> RlRun {
    let t = &seed.timings;
    let ph = phase(run, t, now);
    let c = &run.config;
    let failed = ph.status == "FAILED";
    let fail = if failed { failure(run) } else { None };
    let (queue_reason, runs_ahead) = match (&run.scenario, ph.status) {
        (Scenario::Queued { reason, runs_ahead }, "QUEUED") => {
            (Some(reason.clone()), Some(*runs_ahead))
        }
        (_, "QUEUED") => (Some("Waiting for a cluster slot".to_string()), Some(0)),
        _ => (None, None),
    };
    let envs = environments(c)
        .into_iter()
        .map(|e| json!({"id": e.id, "name": e.name, "slug": e.id}))
        .collect();
    let eval_config = cfg(c, &["orchestrator", "eval"])
        .or_else(|| cfg(c, &["eval"]))
        .filter(|v| v.is_object())
        .cloned();
    let notice = matches!(run.scenario, Scenario::Stall)
        .then(|| ph.status == "RUNNING" && ph.steps >= t.stall_after_steps)
        .filter(|b| *b)
        .map(|_| "No progress reported recently".to_string());
    RlRun {
        id: run.id.clone(),
        user_id: run.user_id.clone(),
        team_id: run.team_id.clone(),
        name: run.name.clone(),
        status: ph.status.to_string(),
        kind: "DEDICATED_FULL_FT",
        rft_cluster_id: None,
        prime_cluster_id: run.cluster_id.clone(),
        rollouts_per_example: cfg_u64(c, &["orchestrator", "group_size"])
            .or_else(|| cfg_u64(c, &["orchestrator", "rollouts_per_example"])),
        seq_len: cfg_u64(c, &["seq_len"]).or_else(|| cfg_u64(c, &["data", "seq_len"])),
        max_steps: Some(u64::from(max_steps(run, t))),
        max_tokens: cfg_u64(
            c,
            &["orchestrator", "train", "sampling", "max_completion_tokens"],
        )
        .or_else(|| cfg_u64(c, &["orchestrator", "sampling", "max_tokens"])),
        batch_size: cfg_u64(c, &["orchestrator", "batch_size"])
            .or_else(|| cfg_u64(c, &["data", "batch_size"])),
        loss: if run.sft { "sft" } else { "rl" },
        base_model: model_name(c),
        environments: envs,
        run_config: c.clone(),
        eval_config,
        learning_rate: opt_f64(cfg(c, &["trainer", "optim", "lr"]))
            .or_else(|| opt_f64(cfg(c, &["optim", "lr"]))),
        lora_alpha: cfg_u64(c, &["trainer", "model", "lora", "alpha"]),
        gpu_count: Some(run.train_gpus + run.infer_gpus),
        runs_ahead,
        volume_name: run.volume.clone(),
        wandb_entity: cfg_str(c, &["monitors", "wandb", "entity"])
            .or_else(|| cfg_str(c, &["wandb", "entity"])),
        wandb_project: cfg_str(c, &["monitors", "wandb", "project"])
            .or_else(|| cfg_str(c, &["wandb", "project"])),
        wandb_run_name: cfg_str(c, &["monitors", "wandb", "name"])
            .or_else(|| cfg_str(c, &["wandb", "name"])),
        queue_reason,
        notice,
        error_message: fail.as_ref().map(|(m, _)| m.clone()),
        source_commit: run
            .source_ref
            .as_deref()
            .map(|r| hex_digest(&["source", r])[..40].to_string()),
        started_at: ph.started_at.map(iso),
        completed_at: ph.completed_at.map(iso),
        failure_analysis: fail.map(|(_, a)| a),
        created_at: iso(run.created_at),
        updated_at: iso(ph.updated_at),
    }
}

// ---- logs ---------------------------------------------------------------------------------

#[derive(Debug, Clone)]
pub(crate) struct LogLine {
    pub ts: DateTime<Utc>,
    pub component: &'static str,
    pub env: Option<String>,
    pub level: &'static str,
    pub text: String,
}

fn json_line(ts: DateTime<Utc>, level: &str, tag: &str, message: &str, extra: Value) -> String {
    let mut obj = json!({"timestamp": iso(ts), "level": level, "message": message, "tag": tag});
    if let (Some(o), Value::Object(e)) = (obj.as_object_mut(), extra) {
        o.extend(e);
    }
    obj.to_string()
}

pub(crate) fn primary_component(run: &Run) -> &'static str {
    if run.sft { "trainer" } else { "orchestrator" }
}

/// Every log line the run has produced up to `now`, oldest first.
pub(crate) fn logs(run: &Run, seed: &Seed, now: DateTime<Utc>) -> Vec<LogLine> {
    let t = &seed.timings;
    let ph = phase(run, t, now);
    let mut out = Vec::new();
    let Some(t0) = ph.started_at else {
        return out;
    };
    let mut push = |ts, component, env: Option<&str>, level, text: String| {
        out.push(LogLine {
            ts,
            component,
            env: env.map(str::to_string),
            level,
            text,
        })
    };
    let id = &run.id;
    let model = model_name(&run.config).unwrap_or_else(|| "?".into());
    let gpu = run.gpu_type.clone().unwrap_or_default();
    let envs = environments(&run.config);
    let has_orch = !run.sft || eval_interval(&run.config).is_some();
    let has_inf = run.infer_gpus > 0;

    // Start-up.
    if has_orch {
        push(
            t0,
            "orchestrator",
            None,
            "INFO",
            format!("Starting orchestrator for run {id}"),
        );
        push(
            t0,
            "orchestrator",
            None,
            "INFO",
            json_line(
                t0,
                "INFO",
                "orchestrator",
                &format!("Loaded model config {model}"),
                json!({}),
            ),
        );
        push(
            t0,
            "orchestrator",
            None,
            "WARNING",
            json_line(
                t0,
                "WARNING",
                "orchestrator",
                "max_async_level not set; using the default of 1",
                json!({}),
            ),
        );
    }
    push(
        t0,
        "trainer",
        None,
        "INFO",
        format!(
            "Initialising trainer on {} x {gpu} for {model}",
            run.train_gpus
        ),
    );
    if let Some(from) = &run.resume_from {
        push(
            t0,
            "trainer",
            None,
            "INFO",
            json_line(
                t0,
                "INFO",
                "trainer",
                &format!("Resuming from the checkpoint of run {from}"),
                json!({}),
            ),
        );
    }
    if has_inf {
        push(
            t0,
            "inference",
            None,
            "INFO",
            "INFO:     vLLM server ready on 0.0.0.0:8000".into(),
        );
    }
    for e in &envs {
        push(
            t0,
            "env-server",
            Some(&e.name),
            "INFO",
            format!("env-server {} listening (taskset {})", e.name, e.id),
        );
    }

    // Failure.
    if let (Scenario::Failed { cause, detail }, "FAILED") = (&run.scenario, ph.status) {
        let at = ph.completed_at.unwrap_or(now);
        match cause {
            FailCause::Oom => {
                push(at, "trainer", None, "ERROR", "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.19 GiB of which 1.12 GiB is free.".into());
                push(
                    at,
                    "trainer",
                    None,
                    "ERROR",
                    json_line(
                        at,
                        "ERROR",
                        "trainer",
                        "Training failed: torch.OutOfMemoryError: CUDA out of memory",
                        json!({"exception": format!("Traceback (most recent call last):\n  File \"prime_rl/trainer/train.py\", line 212, in train\ntorch.OutOfMemoryError: CUDA out of memory ({detail})")}),
                    ),
                );
                if has_orch {
                    push(
                        at,
                        "orchestrator",
                        None,
                        "ERROR",
                        json_line(
                            at,
                            "ERROR",
                            "orchestrator",
                            "Trainer exited with code 1",
                            json!({}),
                        ),
                    );
                }
            }
            FailCause::UnknownModel => {
                push(
                    at,
                    "trainer",
                    None,
                    "ERROR",
                    format!(
                        "OSError: {detail} is not a valid model identifier listed on 'https://huggingface.co/models'"
                    ),
                );
                if has_orch {
                    push(
                        at,
                        "orchestrator",
                        None,
                        "ERROR",
                        json_line(
                            at,
                            "ERROR",
                            "orchestrator",
                            &format!("Could not load model {detail}"),
                            json!({}),
                        ),
                    );
                }
            }
            FailCause::UnknownEnv => {
                push(
                    at,
                    "orchestrator",
                    None,
                    "ERROR",
                    json_line(
                        at,
                        "ERROR",
                        "orchestrator",
                        &format!("ValueError: Unknown environment '{detail}'"),
                        json!({}),
                    ),
                );
                push(
                    at,
                    "env-server",
                    Some(detail),
                    "ERROR",
                    format!(
                        "ModuleNotFoundError: No module named '{}'",
                        detail.replace(['/', '-'], "_")
                    ),
                );
                push(
                    at,
                    "trainer",
                    None,
                    "ERROR",
                    "Orchestrator failed; shutting down trainer".into(),
                );
            }
        }
        return out;
    }

    // Steps.
    let max = max_steps(run, t);
    let interval = ckpt_interval(run, t);
    for k in 1..=ph.steps {
        let ts = step_time(&ph, t, k);
        let m = metrics_at(run, k, max);
        let loss = m["loss"].as_f64().unwrap_or(0.0);
        if has_orch && !run.sft {
            let reward = m["reward/mean"].as_f64().unwrap_or(0.0);
            push(
                ts,
                "orchestrator",
                None,
                "INFO",
                json_line(
                    ts,
                    "INFO",
                    "orchestrator",
                    &format!("Step {k} | reward {reward:.4} | {} rollouts", m["rollouts"]),
                    json!({"step": k}),
                ),
            );
            push(ts, "orchestrator", None, "INFO", json!({"timestamp": iso(ts), "level": "INFO", "type": "progress", "step": k, "total": max}).to_string());
        }
        if k % 5 == 0 && has_orch {
            push(
                ts,
                "orchestrator",
                None,
                "INFO",
                format!(
                    "step {k}: buffer full, {}% of max_steps",
                    k * 100 / max.max(1)
                ),
            );
        }
        push(
            ts,
            "trainer",
            None,
            "INFO",
            json_line(
                ts,
                "INFO",
                "trainer",
                &format!("Step {k} | loss {loss:.4} | lr {}", m["learning_rate"]),
                json!({"step": k}),
            ),
        );
        push(
            ts,
            "trainer",
            None,
            "INFO",
            format!(
                "[trainer] step={k} loss={loss:.4} grad_norm={}",
                m["grad_norm"]
            ),
        );
        if k == 7 {
            push(
                ts,
                "trainer",
                None,
                "WARNING",
                json_line(
                    ts,
                    "WARNING",
                    "trainer",
                    "Gradient norm spiked above 10; clipping",
                    json!({"step": k}),
                ),
            );
        }
        if k % interval == 0 || k == max {
            push(
                ts,
                "trainer",
                None,
                "INFO",
                format!("Saved checkpoint for step {k} to runs/{id}/checkpoints/step_{k}"),
            );
        }
        if has_inf {
            push(
                ts,
                "inference",
                None,
                "INFO",
                json_line(
                    ts,
                    "INFO",
                    "inference",
                    &format!("Served {} completions for step {k}", 16 + k % 7),
                    json!({}),
                ),
            );
        }
        for e in &envs {
            if k == 4 {
                push(
                    ts,
                    "env-server",
                    Some(&e.name),
                    "ERROR",
                    format!(
                        "Rollout for example 17 failed: sandbox timed out after 60s (scored 0.0) [{}]",
                        e.name
                    ),
                );
            } else {
                push(
                    ts,
                    "env-server",
                    Some(&e.name),
                    "INFO",
                    json_line(
                        ts,
                        "INFO",
                        "env-server",
                        &format!("Scored batch for step {k}"),
                        json!({"env": e.name}),
                    ),
                );
            }
        }
    }
    for r in &run.restarts {
        if *r <= ph.effective {
            let primary = primary_component(run);
            push(
                *r,
                primary,
                None,
                "WARNING",
                json_line(
                    *r,
                    "WARNING",
                    primary,
                    "Restart requested; restarting from the latest checkpoint",
                    json!({}),
                ),
            );
        }
    }
    if let Some(end) = ph.completed_at {
        let primary = primary_component(run);
        let msg = match ph.status {
            "COMPLETED" => format!("Training finished after {} steps", ph.steps),
            "STOPPED" => "Received stop request; shutting down".to_string(),
            "PAUSED" => format!("Paused at checkpoint step {}", ph.steps),
            _ => String::new(),
        };
        if !msg.is_empty() {
            push(
                end,
                primary,
                None,
                "INFO",
                json_line(end, "INFO", primary, &msg, json!({})),
            );
        }
    }
    if ph.status == "RUNNING"
        && matches!(run.scenario, Scenario::Stall)
        && ph.steps >= t.stall_after_steps
    {
        // A stalled run logs nothing more: the last line stays the last step's.
    }
    out.sort_by_key(|l| l.ts);
    out
}

// ---- metrics, checkpoints, samples, distributions, usage ----------------------------------

pub(crate) fn metrics_at(run: &Run, k: u32, max: u32) -> Value {
    let progress = f64::from(k) / f64::from(max.max(1));
    let noise = unit(&run.id, "metric", u64::from(k)) - 0.5;
    let lr = opt_f64(cfg(&run.config, &["trainer", "optim", "lr"]))
        .or_else(|| opt_f64(cfg(&run.config, &["optim", "lr"])))
        .unwrap_or(1e-5);
    let mut m = json!({
        "step": k,
        "loss": round4(2.2 * (-1.8 * progress).exp() + 0.05 * noise + 0.1),
        "entropy": round4(1.1 - 0.5 * progress + 0.03 * noise),
        "grad_norm": round4(0.8 + 0.4 * unit(&run.id, "grad", u64::from(k))),
        "learning_rate": lr,
        "tokens_per_second": (4000.0 + 800.0 * unit(&run.id, "tps", u64::from(k))).round(),
        "rollouts": 16,
    });
    if !run.sft
        && let Some(o) = m.as_object_mut()
    {
        o.insert(
            "reward/mean".into(),
            json!(round4(
                (0.15 + 0.7 * progress + 0.08 * noise).clamp(0.0, 1.0)
            )),
        );
        o.insert("reward/std".into(), json!(round4(0.2 + 0.05 * noise)));
        o.insert(
            "seq_len/mean".into(),
            json!((300.0 + 200.0 * progress).round()),
        );
    }
    m
}

pub(crate) fn checkpoints(run: &Run, seed: &Seed, now: DateTime<Utc>) -> Vec<Checkpoint> {
    let t = &seed.timings;
    let ph = phase(run, t, now);
    let max = max_steps(run, t);
    let interval = ckpt_interval(run, t);
    let mut steps: Vec<u32> = (1..=ph.steps)
        .filter(|k| k % interval == 0 || *k == max)
        .collect();
    if ph.status == "PAUSED" && ph.steps > 0 && !steps.contains(&ph.steps) {
        steps.push(ph.steps);
    }
    let bucket = run.volume.clone().unwrap_or_else(|| "run-outputs".into());
    steps
        .into_iter()
        .map(|k| {
            let created = step_time(&ph, t, k);
            let ready_at = plus_secs(created, t.step_s / 2.0);
            let ready = ready_at <= ph.effective || ph.is_terminal();
            Checkpoint {
                id: format!("ckpt{}", &hex_digest(&[&run.id, &k.to_string()])[..20]),
                rft_run_id: run.id.clone(),
                step: k,
                storage_url: format!(
                    "s3://sandbox-volumes/{bucket}/runs/{}/checkpoints/step_{k}",
                    run.id
                ),
                status: if ready { "READY" } else { "UPLOADING" },
                size_bytes: crate::s3::checkpoint_bytes(run, k),
                created_at: iso(created),
                uploaded_at: ready.then(|| iso(ready_at)),
            }
        })
        .collect()
}

pub(crate) fn sample_steps(run: &Run, ph: &Phase) -> Vec<u32> {
    if run.sft {
        Vec::new()
    } else {
        (1..=ph.steps).collect()
    }
}

pub(crate) fn progress(run: &Run, seed: &Seed, now: DateTime<Utc>) -> Progress {
    let ph = phase(run, &seed.timings, now);
    let steps = sample_steps(run, &ph);
    Progress {
        latest_step: (ph.steps > 0).then_some(ph.steps),
        steps_with_samples: steps.clone(),
        steps_with_distributions: steps,
        last_updated_at: ph.last_step_at.map(iso),
    }
}

pub(crate) const SAMPLES_PER_STEP: u32 = 16;

pub(crate) fn sample(run: &Run, step: u32, i: u32) -> Value {
    let r = unit(&run.id, "sample", u64::from(step) * 1000 + u64::from(i));
    let env = environments(&run.config)
        .first()
        .map(|e| e.name.clone())
        .unwrap_or_default();
    json!({
        "example_id": (step * 31 + i * 7) % 1000,
        "step": step,
        "env": env,
        "prompt": [{"role": "user", "content": format!("Sandbox prompt {i} of step {step}")}],
        "completion": [{"role": "assistant", "content": format!("Sandbox completion {i} (reward {:.2})", r)}],
        "reward": round4(r),
        "advantage": round4(r - 0.5),
    })
}

pub(crate) fn distribution(run: &Run, kind: &str, step: u32) -> Vec<Value> {
    (0..10u32)
        .map(|b| {
            let lo = f64::from(b) / 10.0;
            let count =
                (unit(&run.id, kind, u64::from(step) * 100 + u64::from(b)) * 40.0).round() as u64;
            json!({"start": lo, "end": lo + 0.1, "count": count})
        })
        .collect()
}

pub(crate) fn usage(run: &Run, seed: &Seed, now: DateTime<Utc>) -> Value {
    let ph = phase(run, &seed.timings, now);
    let hours = ph
        .started_at
        .map(|s| secs_between(s, ph.effective).max(0.0) / 3600.0)
        .unwrap_or(0.0);
    let price = run.price_per_gpu_hour.unwrap_or(0.0);
    let gpus = f64::from(run.train_gpus + run.infer_gpus);
    let training_cost = (f64::from(run.train_gpus) * price * hours * 100.0).round() / 100.0;
    let inference_cost =
        ((gpus - f64::from(run.train_gpus)) * price * hours * 100.0).round() / 100.0;
    let steps = u64::from(ph.steps);
    let train_tokens = steps * 65_536;
    let in_tokens = if run.sft { 0 } else { steps * 24_576 };
    let out_tokens = if run.sft { 0 } else { steps * 40_960 };
    json!({
        "run_id": run.id,
        "run_name": run.name,
        "base_model": model_name(&run.config),
        "status": ph.status,
        "training": {"tokens": train_tokens, "input_tokens": train_tokens, "output_tokens": 0, "cost_usd": training_cost},
        "inference": {"tokens": in_tokens + out_tokens, "input_tokens": in_tokens, "output_tokens": out_tokens, "cost_usd": inference_cost},
        "total_tokens": train_tokens + in_tokens + out_tokens,
        "total_cost_usd": ((training_cost + inference_cost) * 100.0).round() / 100.0,
        "pricing": {"training_per_mtok": null, "inference_input_per_mtok": null, "inference_output_per_mtok": null, "gpu_per_hour": price},
        "record_count": steps,
    })
}

pub(crate) fn env_servers(run: &Run, seed: &Seed, now: DateTime<Utc>) -> Vec<EnvServer> {
    let ph = phase(run, &seed.timings, now);
    let status = match ph.status {
        "RUNNING" => "Running",
        "QUEUED" | "PENDING" => "Pending",
        "FAILED" => "Failed",
        _ => "Terminated",
    };
    environments(&run.config)
        .into_iter()
        .enumerate()
        .map(|(i, e)| EnvServer {
            env_name: Some(e.name.clone()),
            env_index: Some(0),
            pod_name: format!(
                "{}-env-{}-{i}",
                &run.id[..run.id.len().min(12)],
                e.name.replace(['/', '_'], "-")
            ),
            status: status.to_string(),
        })
        .collect()
}

/// Files a run has written under `runs/<run_id>/` on its volume (layout invented, see `s3.rs`).
pub(crate) fn volume_files(run: &Run, seed: &Seed, now: DateTime<Utc>) -> Vec<Value> {
    crate::s3::volume_files(run, seed, now)
}
