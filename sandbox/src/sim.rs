//! What a run looks like at a given simulated time: status, steps, logs, metrics, checkpoints,
//! samples, distributions, usage. Everything is a pure function of the run record (its config
//! and events) and the time, so reads are deterministic and nothing runs in the background.
//! Timings, file layouts and content are inventions of the sandbox (see the README).

use chrono::{DateTime, Utc};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::clock::{iso, plus_secs, secs_between};
use crate::seed::{Seed, Timings};
use crate::wire::{EnvServer, FailureAnalysis, Progress, RlRun};
use crate::world::{FailCause, Run, Scenario, Weights};

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
    pub(crate) name: String,
    pub(crate) id: String,
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

pub(crate) fn ckpt_interval(run: &Run, t: &Timings) -> u32 {
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

/// What decides a new run's scenario (resolved by `crate::builder`).
pub(crate) struct Launch<'a> {
    pub(crate) config: &'a Value,
    pub(crate) name: Option<&'a str>,
    pub(crate) gpu_type: &'a str,
    pub(crate) train_gpus: u32,
    /// GPU memory of the capacity the run is on (GB).
    pub(crate) memory_gb: f64,
    /// False when the GPU type has no capacity now (the run stays queued).
    pub(crate) available_now: bool,
    /// Where the weights come from, or why the run cannot have them.
    pub(crate) weights: Result<Weights, (FailCause, String)>,
    /// Parameter count (billions), when the model is known.
    pub(crate) params_b: Option<f64>,
    pub(crate) source_ref: Option<&'a str>,
}

/// The sandbox's trigger for code that fails to import: a `sourceRef` containing `broken`.
pub(crate) fn is_broken_ref(source_ref: &str) -> bool {
    source_ref.to_ascii_lowercase().contains("broken")
}

/// The commit a `sourceRef` resolves to: a full sha is itself; a branch or tag, a stable
/// made-up sha (invention).
pub(crate) fn source_commit(source_ref: &str) -> String {
    if source_ref.len() == 40 && source_ref.bytes().all(|b| b.is_ascii_hexdigit()) {
        source_ref.to_ascii_lowercase()
    } else {
        hex_digest(&["source", source_ref])[..40].to_string()
    }
}

/// Decides a new run's scenario (the triggers are listed in the README).
pub(crate) fn classify(l: &Launch<'_>) -> Scenario {
    let lname = l.name.unwrap_or("").to_ascii_lowercase();
    let gpu_type = l.gpu_type;
    if lname.contains("queued") {
        return Scenario::Queued {
            reason: "Waiting for GPU capacity (sandbox trigger: run name contains \"queued\")"
                .into(),
            runs_ahead: 3,
        };
    }
    if !l.available_now {
        return Scenario::Queued {
            reason: format!("No {gpu_type} capacity is available right now"),
            runs_ahead: 2,
        };
    }
    if let Some(r) = l.source_ref.filter(|r| is_broken_ref(r)) {
        return Scenario::Failed {
            cause: FailCause::ImportError,
            detail: r.to_string(),
        };
    }
    if let Err((cause, detail)) = &l.weights {
        return Scenario::Failed {
            cause: *cause,
            detail: detail.clone(),
        };
    }
    if let Some(env) = environments(l.config)
        .into_iter()
        .find(|e| e.id.contains("fail-unknown-env") || e.name.contains("fail-unknown-env"))
    {
        return Scenario::Failed {
            cause: FailCause::UnknownEnv,
            detail: env.id,
        };
    }
    let model = model_name(l.config).unwrap_or_default();
    let (mem, train_gpus) = (l.memory_gb, l.train_gpus);
    // Full fine-tuning with Adam needs about 16 bytes per parameter (invention of scale).
    let need_per_gpu = l.params_b.unwrap_or(0.0) * 16.0 / f64::from(train_gpus.max(1));
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
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Phase {
    pub(crate) status: &'static str,
    /// Completed training steps.
    pub(crate) steps: u32,
    pub(crate) started_at: Option<DateTime<Utc>>,
    pub(crate) completed_at: Option<DateTime<Utc>>,
    pub(crate) last_step_at: Option<DateTime<Utc>>,
    /// When the run starts (or would start) RUNNING.
    pub(crate) t_run: DateTime<Utc>,
    /// The instant the content is computed for (now, or the end of the run).
    pub(crate) effective: DateTime<Utc>,
    pub(crate) updated_at: DateTime<Utc>,
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
                    "The base model '{detail}' is neither in the list of trainable models (prime train models) nor on the Hugging Face Hub."
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
        FailCause::GatedModel => (
            format!("Cannot download gated model '{detail}': no HF_TOKEN was provided"),
            FailureAnalysis {
                root_cause: format!(
                    "'{detail}' is not cached on the cluster, so its weights are downloaded from the Hugging Face Hub at start; the repository is gated and the run had no HF_TOKEN. Launch again with HF_TOKEN (prime train run -e HF_TOKEN) from an account that has access to the repository."
                ),
                evidence: vec![format!(
                    "trainer: huggingface_hub.errors.GatedRepoError: 401 Client Error. Cannot access gated repo for url https://huggingface.co/{detail}/resolve/main/config.json."
                )],
                confidence: 0.95,
                category: "RUN_ISSUE",
            },
        ),
        FailCause::NoWeights => (
            format!("No weights for {detail}: the model is not cached there and no volume holds them"),
            FailureAnalysis {
                root_cause: format!(
                    "Reserved clusters do not download weights: {detail} needs the model cached on the cluster (prime train models) or its weights on the run's volume."
                ),
                evidence: vec![format!(
                    "trainer: OSError: no cached weights for {detail} and no volume with them"
                )],
                confidence: 0.9,
                category: "RUN_ISSUE",
            },
        ),
        FailCause::ImportError => {
            let commit = source_commit(detail);
            (
                format!("ImportError: {IMPORT_ERROR}"),
                FailureAnalysis {
                    root_cause: format!(
                        "The prime-rl code at source ref '{detail}' (commit {}) fails to import ({IMPORT_ERROR}). This is a code error, not a config error: fix the code and launch with a new ref.",
                        &commit[..12]
                    ),
                    evidence: vec![format!("trainer: ImportError: {IMPORT_ERROR}")],
                    confidence: 0.92,
                    category: "CODE_ISSUE",
                },
            )
        }
    })
}

/// The import error of a broken source ref (invented).
const IMPORT_ERROR: &str = "cannot import name 'compute_loss' from 'prime_rl.trainer.rl.loss' (/app/src/prime_rl/trainer/rl/loss.py)";

pub(crate) fn opt_f64(v: Option<&Value>) -> Option<f64> {
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
        source_commit: run.source_ref.as_deref().map(source_commit),
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
    pub(crate) ts: DateTime<Utc>,
    pub(crate) component: &'static str,
    pub(crate) env: Option<String>,
    pub(crate) level: &'static str,
    pub(crate) text: String,
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

/// Log lines as the steps below write them.
struct LogBook(Vec<LogLine>);

impl LogBook {
    fn push(
        &mut self,
        ts: DateTime<Utc>,
        component: &'static str,
        env: Option<&str>,
        level: &'static str,
        text: String,
    ) {
        self.0.push(LogLine {
            ts,
            component,
            env: env.map(str::to_string),
            level,
            text,
        });
    }
}

/// What every step of [`logs`] needs to know about the run.
struct LogCtx<'a> {
    run: &'a Run,
    t: &'a Timings,
    ph: Phase,
    /// When the run started RUNNING.
    t0: DateTime<Utc>,
    model: String,
    envs: Vec<EnvRef>,
    has_orch: bool,
    has_inf: bool,
}

/// The trainer's line for weights fetched at start.
fn hub_download_line(ts: DateTime<Utc>, model: &str) -> String {
    let msg = format!(
        "Model {model} is not cached on this cluster; downloading weights from the Hugging Face Hub (https://huggingface.co/{model})"
    );
    json_line(ts, "INFO", "trainer", &msg, json!({}))
}

/// Every log line the run has produced up to `now`, oldest first.
pub(crate) fn logs(run: &Run, seed: &Seed, now: DateTime<Utc>) -> Vec<LogLine> {
    let t = &seed.timings;
    let ph = phase(run, t, now);
    let Some(t0) = ph.started_at else {
        return Vec::new();
    };
    let cx = LogCtx {
        run,
        t,
        t0,
        model: model_name(&run.config).unwrap_or_else(|| "?".into()),
        envs: environments(&run.config),
        has_orch: !run.sft || eval_interval(&run.config).is_some(),
        has_inf: run.infer_gpus > 0,
        ph,
    };
    let mut book = LogBook(Vec::new());
    startup_lines(&mut book, &cx);
    if let (Scenario::Failed { cause, detail }, "FAILED") = (&run.scenario, cx.ph.status) {
        failure_lines(
            &mut book,
            &cx,
            *cause,
            detail,
            cx.ph.completed_at.unwrap_or(now),
        );
        return book.0;
    }
    step_lines(&mut book, &cx);
    ending_lines(&mut book, &cx);
    // A stalled run logs nothing more: the last line stays the last step's.
    let mut out = book.0;
    out.sort_by_key(|l| l.ts);
    out
}

/// Start-up: the orchestrator, trainer, inference server and env servers come up.
fn startup_lines(book: &mut LogBook, cx: &LogCtx<'_>) {
    let LogCtx {
        run,
        t0,
        model,
        envs,
        has_orch,
        has_inf,
        ..
    } = cx;
    let (t0, has_orch, has_inf) = (*t0, *has_orch, *has_inf);
    let id = &run.id;
    let gpu = run.gpu_type.clone().unwrap_or_default();
    if has_orch {
        book.push(
            t0,
            "orchestrator",
            None,
            "INFO",
            format!("Starting orchestrator for run {id}"),
        );
        book.push(
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
        book.push(
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
    book.push(
        t0,
        "trainer",
        None,
        "INFO",
        format!(
            "Initialising trainer on {} x {gpu} for {model}",
            run.train_gpus
        ),
    );
    if let Some(r) = &run.source_ref {
        let msg = format!(
            "Overlaying prime-rl source ref {r} (commit {}) onto the image",
            source_commit(r)
        );
        book.push(
            t0,
            "trainer",
            None,
            "INFO",
            json_line(t0, "INFO", "trainer", &msg, json!({})),
        );
    }
    match &run.weights {
        Weights::Cached => {}
        Weights::Hub => book.push(t0, "trainer", None, "INFO", hub_download_line(t0, model)),
        Weights::Volume { volume } => {
            let msg =
                format!("Loading weights for {model} from volume '{volume}' (models/{model})");
            book.push(
                t0,
                "trainer",
                None,
                "INFO",
                json_line(t0, "INFO", "trainer", &msg, json!({})),
            );
        }
    }
    if let Some(from) = &run.resume_from {
        book.push(
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
        book.push(
            t0,
            "inference",
            None,
            "INFO",
            "INFO:     vLLM server ready on 0.0.0.0:8000".into(),
        );
    }
    for e in envs.iter() {
        book.push(
            t0,
            "env-server",
            Some(&e.name),
            "INFO",
            format!("env-server {} listening (taskset {})", e.name, e.id),
        );
    }
}

/// The lines of a run that fails at `at`, by cause.
fn failure_lines(
    book: &mut LogBook,
    cx: &LogCtx<'_>,
    cause: FailCause,
    detail: &str,
    at: DateTime<Utc>,
) {
    let has_orch = cx.has_orch;
    match cause {
        FailCause::Oom => {
            book.push(at, "trainer", None, "ERROR", "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.19 GiB of which 1.12 GiB is free.".into());
            book.push(
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
                book.push(
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
            book.push(
                at,
                "trainer",
                None,
                "ERROR",
                format!(
                    "OSError: {detail} is not a valid model identifier listed on 'https://huggingface.co/models'"
                ),
            );
            if has_orch {
                book.push(
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
        FailCause::GatedModel => {
            book.push(at, "trainer", None, "INFO", hub_download_line(at, detail));
            book.push(
                at,
                "trainer",
                None,
                "ERROR",
                format!(
                    "huggingface_hub.errors.GatedRepoError: 401 Client Error. Cannot access gated repo for url https://huggingface.co/{detail}/resolve/main/config.json. Access to model {detail} is restricted. You must have access to it and be authenticated to access it. Please log in."
                ),
            );
            let msg = format!(
                "Could not download weights for {detail}: the repository is gated and the run has no HF_TOKEN (launch with -e HF_TOKEN)"
            );
            book.push(
                at,
                "trainer",
                None,
                "ERROR",
                json_line(at, "ERROR", "trainer", &msg, json!({})),
            );
            if has_orch {
                book.push(
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
        FailCause::NoWeights => {
            let msg = format!(
                "OSError: no cached weights for {detail} and no volume with them; reserved clusters do not download from the Hugging Face Hub"
            );
            book.push(at, "trainer", None, "ERROR", msg.clone());
            if has_orch {
                book.push(
                    at,
                    "orchestrator",
                    None,
                    "ERROR",
                    json_line(at, "ERROR", "orchestrator", &msg, json!({})),
                );
            }
        }
        FailCause::ImportError => {
            let traceback = [
                "Traceback (most recent call last):".to_string(),
                "  File \"/app/src/prime_rl/trainer/rl/train.py\", line 12, in <module>".into(),
                "    from prime_rl.trainer.rl.loss import compute_loss".into(),
                format!("ImportError: {IMPORT_ERROR}"),
            ];
            for line in traceback {
                book.push(at, "trainer", None, "ERROR", line);
            }
            if has_orch {
                let msg = format!("ImportError: {IMPORT_ERROR} (source ref {detail})");
                book.push(
                    at,
                    "orchestrator",
                    None,
                    "ERROR",
                    json_line(at, "ERROR", "orchestrator", &msg, json!({})),
                );
            }
        }
        FailCause::UnknownEnv => {
            book.push(
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
            book.push(
                at,
                "env-server",
                Some(detail),
                "ERROR",
                format!(
                    "ModuleNotFoundError: No module named '{}'",
                    detail.replace(['/', '-'], "_")
                ),
            );
            book.push(
                at,
                "trainer",
                None,
                "ERROR",
                "Orchestrator failed; shutting down trainer".into(),
            );
        }
    }
}

/// One block per completed step: progress, losses, checkpoints, inference and env servers.
fn step_lines(book: &mut LogBook, cx: &LogCtx<'_>) {
    let LogCtx {
        run,
        t,
        ph,
        envs,
        has_orch,
        has_inf,
        ..
    } = cx;
    let (has_orch, has_inf) = (*has_orch, *has_inf);
    let id = &run.id;
    let max = max_steps(run, t);
    let interval = ckpt_interval(run, t);
    for k in 1..=ph.steps {
        let ts = step_time(ph, t, k);
        let m = metrics_at(run, k, max);
        let loss = m["loss"].as_f64().unwrap_or(0.0);
        if has_orch && !run.sft {
            let reward = m["reward/mean"].as_f64().unwrap_or(0.0);
            book.push(
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
            book.push(ts, "orchestrator", None, "INFO", json!({"timestamp": iso(ts), "level": "INFO", "type": "progress", "step": k, "total": max}).to_string());
        }
        if k % 5 == 0 && has_orch {
            book.push(
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
        book.push(
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
        book.push(
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
            book.push(
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
            book.push(
                ts,
                "trainer",
                None,
                "INFO",
                format!("Saved checkpoint for step {k} to runs/{id}/checkpoints/step_{k}"),
            );
        }
        if has_inf {
            book.push(
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
        for e in envs.iter() {
            if k == 4 {
                book.push(
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
                book.push(
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
}

/// Restarts and the closing line of a run that ended (completed, stopped or paused).
fn ending_lines(book: &mut LogBook, cx: &LogCtx<'_>) {
    let LogCtx { run, ph, .. } = cx;
    for r in &run.restarts {
        if *r <= ph.effective {
            let primary = primary_component(run);
            book.push(
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
            book.push(
                end,
                primary,
                None,
                "INFO",
                json_line(end, "INFO", primary, &msg, json!({})),
            );
        }
    }
}

// ---- metrics, samples, distributions, usage ----------------------------------

pub(crate) fn metrics_at(run: &Run, k: u32, max: u32) -> Value {
    serde_json::to_value(metrics_row(run, k, max)).unwrap_or(Value::Null)
}

/// One step's metrics record, in the order its fields are sent (`timestamp`, when set, last):
/// serialised, the JSON text of the record as a tree (numbers written by serde_json either
/// way, a non-finite one as `null`).
#[derive(Debug, serde::Serialize)]
pub(crate) struct MetricsRow {
    step: u32,
    loss: f64,
    entropy: f64,
    grad_norm: f64,
    learning_rate: f64,
    tokens_per_second: f64,
    rollouts: u32,
    #[serde(rename = "reward/mean", skip_serializing_if = "Option::is_none")]
    reward_mean: Option<f64>,
    #[serde(rename = "reward/std", skip_serializing_if = "Option::is_none")]
    reward_std: Option<f64>,
    #[serde(rename = "seq_len/mean", skip_serializing_if = "Option::is_none")]
    seq_len_mean: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) timestamp: Option<String>,
}

/// [`metrics_at`]'s record, typed (the metrics answer writes hundreds of them).
pub(crate) fn metrics_row(run: &Run, k: u32, max: u32) -> MetricsRow {
    let progress = f64::from(k) / f64::from(max.max(1));
    let noise = unit(&run.id, "metric", u64::from(k)) - 0.5;
    let lr = opt_f64(cfg(&run.config, &["trainer", "optim", "lr"]))
        .or_else(|| opt_f64(cfg(&run.config, &["optim", "lr"])))
        .unwrap_or(1e-5);
    let rl = !run.sft;
    MetricsRow {
        step: k,
        loss: round4(2.2 * (-1.8 * progress).exp() + 0.05 * noise + 0.1),
        entropy: round4(1.1 - 0.5 * progress + 0.03 * noise),
        grad_norm: round4(0.8 + 0.4 * unit(&run.id, "grad", u64::from(k))),
        learning_rate: lr,
        tokens_per_second: (4000.0 + 800.0 * unit(&run.id, "tps", u64::from(k))).round(),
        rollouts: 16,
        reward_mean: rl.then(|| round4((0.15 + 0.7 * progress + 0.08 * noise).clamp(0.0, 1.0))),
        reward_std: rl.then(|| round4(0.2 + 0.05 * noise)),
        seq_len_mean: rl.then(|| (300.0 + 200.0 * progress).round()),
        timestamp: None,
    }
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
        "pricing": {"training_per_mtok": null, "inference_input_per_mtok": null, "inference_output_per_mtok": null, "gpu_per_hour": if run.reserved { None } else { Some(price) }},
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
