//! Rules shared by RL and SFT: the trainer model and trainer-level checks (§6.2), resume and
//! `env_vars` tables (§6.6), sources, algorithms and curricula (§6.3), concurrency, and the
//! inference table (§6.4).

use std::collections::HashSet;

use toml::Value;

use super::{Ctx, View};
use crate::schema::MODEL_RENDERER_MAP;
use crate::secrets::show;
use crate::value::join;

const CUSTOM_OR_AUTO: &str = "Set `impl = \"custom\"` (or leave it at \"auto\").";

fn impl_custom_or_auto(v: &View, model: &str) -> bool {
    matches!(v.str(&join(model, "impl")), Some("custom" | "auto"))
}

/// `trainer.model` (RL) / `model` (SFT) validators.
pub(super) fn trainer_model(v: &View, ctx: &mut Ctx, model: &str) {
    if !ctx.ok(model) || !v.raw(model).is_none_or(Value::is_table) {
        return;
    }
    let p = |k: &str| join(model, k);
    let imp = v.str(&p("impl")).unwrap_or("auto");
    let custom_or_auto = impl_custom_or_auto(v, model);
    if v.flag(&p("trust_remote_code")) && imp == "custom" {
        ctx.error(
            model,
            "trust_remote_code = true requires model.impl = 'hf' or 'auto'",
            "Custom implementations do not run remote code; use impl = \"hf\" or \"auto\".",
        );
    }
    let vlm = v.on(&p("vlm"));
    let cp = v.int(&p("cp")).unwrap_or(1);
    if vlm && imp != "custom" {
        ctx.error(
            model,
            format!("VLM training requires model.impl='custom' (got '{imp}')"),
            "Set `impl = \"custom\"` in the model table.",
        );
    }
    if vlm && cp > 1 && v.str(&p("cp_style")) != Some("ulysses") {
        ctx.error(
            model,
            "VLM training with context parallelism requires cp_style = 'ulysses'",
            "Set `cp_style = \"ulysses\"`.",
        );
    }
    if cp > 1 && !custom_or_auto {
        ctx.error(
            model,
            "Context parallelism requires model.impl='custom' or 'auto'",
            CUSTOM_OR_AUTO,
        );
    }
    if v.on(&p("ac")) && v.str(&p("ac.mode")) == Some("selective") {
        let empty = v
            .raw(&p("ac.targets"))
            .and_then(Value::as_array)
            .is_some_and(Vec::is_empty);
        if empty {
            ctx.error(
                model,
                "Selective activation checkpointing needs at least one entry in ac.targets",
                "Add targets, e.g. `targets = [\"norm\"]`.",
            );
        }
        if !custom_or_auto {
            ctx.error(
                model,
                "Selective activation checkpointing requires model.impl='custom' or 'auto'",
                CUSTOM_OR_AUTO,
            );
        }
    }
    let fsdp_off = v.flag(&p("fsdp_cpu_offload"));
    let optim_off = v.flag(&p("optim_cpu_offload"));
    let full_off = v.on(&p("full_offload"));
    if fsdp_off && optim_off {
        ctx.error(model, "Cannot combine fsdp_cpu_offload with optimizer CPU offloading.", "optim_cpu_offload defaults to true: set `optim_cpu_offload = false` to use fsdp_cpu_offload.");
    }
    if fsdp_off && full_off {
        ctx.error(
            model,
            "Cannot combine fsdp_cpu_offload with full_offload.",
            "Choose one of fsdp_cpu_offload and full_offload.",
        );
    }
    if optim_off && full_off {
        ctx.error(
            model,
            "optim_cpu_offload and full_offload are mutually exclusive.",
            "full_offload needs `optim_cpu_offload = false` (it defaults to true).",
        );
    }
    if imp == "hf" && matches!(v.str(&p("attn")), Some("flash_attention_4" | "auto")) {
        ctx.error(
            model,
            "attn = 'auto'/'flash_attention_4' requires model.impl='custom' or 'auto'",
            "With impl = \"hf\", set `attn = \"flash_attention_2\"` or \"flash_attention_3\".",
        );
    }
    if v.set(&p("quantization")) {
        if !custom_or_auto {
            ctx.error(
                model,
                "Quantized training requires model.impl='custom' or 'auto'",
                CUSTOM_OR_AUTO,
            );
        }
        if v.tag(&p("quantization")) == Some("mxfp8")
            && v.str(&p("ep_comm_backend")) == Some("deepep")
        {
            ctx.error(
                model,
                "mxfp8 quantization requires ep_comm_backend = 'torch'",
                "Set `ep_comm_backend = \"torch\"`.",
            );
        }
    }
    let ep_int = v.raw(&p("ep")).and_then(|e| crate::value::as_int(e).ok());
    if v.str(&p("ep_comm_backend")) == Some("deepep") && ep_int.is_some_and(|e| e <= 1) {
        ctx.error(
            model,
            "model.ep_comm_backend='deepep' requires model.ep > 1.",
            "Set `ep` above 1, or use `ep_comm_backend = \"torch\"`.",
        );
    }
    if ep_int.is_some_and(|e| e != 1) && !custom_or_auto {
        ctx.error(
            model,
            "Expert parallelism (ep != 1) requires model.impl='custom' or 'auto'",
            CUSTOM_OR_AUTO,
        );
    }
    if vlm {
        for k in ["optimization_dtype", "reduce_dtype"] {
            if v.str(&p(k)) != Some("bfloat16") {
                ctx.error(
                    model,
                    format!("VLM training requires {k} = 'bfloat16'"),
                    format!("Set `{k} = \"bfloat16\"`."),
                );
            }
        }
        if v.bool(&p("vlm.freeze_vision_encoder")) == Some(false) && v.on(&p("lora")) {
            ctx.error(
                model,
                "LoRA cannot be combined with an unfrozen vision encoder",
                "Set `vlm.freeze_vision_encoder = true`, or drop LoRA.",
            );
        }
    }
}

/// Where the trainer-level keys live: `trainer.*` in RL, the root in SFT.
#[derive(Clone, Copy)]
pub(super) struct TrainerPaths<'p> {
    /// The table whose validator raises the errors (`trainer`, or `""` for SFT).
    pub scope: &'p str,
    pub model: &'p str,
    pub optim: &'p str,
    pub sched: &'p str,
    pub max_steps: &'p str,
    pub trace: &'p str,
}

/// Trainer-level validators (`trainer` in RL, the root in SFT).
pub(super) fn trainer_level(v: &View, ctx: &mut Ctx, paths: &TrainerPaths) {
    let TrainerPaths {
        scope,
        model,
        optim,
        sched,
        max_steps,
        trace,
    } = *paths;

    if !ctx.ok(scope) {
        return;
    }
    let steps = v.int(max_steps);
    if v.on(&join(model, "full_offload")) {
        let ty = v.tag(optim).unwrap_or("adamw");
        if !matches!(ty, "adamw" | "sign_sgd") {
            ctx.error(
                scope,
                format!("full_offload requires optim.type 'adamw' or 'sign_sgd' (got '{ty}')"),
                "Use the adamw or sign_sgd optimizer with full_offload.",
            );
        }
    }
    if v.set(trace) {
        match steps {
            None => ctx.error(
                scope,
                "trace_path requires max_steps to be set",
                "Tracing is for short runs: set max_steps below 10.",
            ),
            Some(s) if s >= 10 => ctx.error(
                scope,
                format!("Tracing more than 10 steps is not recommended (max_steps = {s})"),
                "Set max_steps below 10, or remove trace_path.",
            ),
            _ => {}
        }
    }
    match v.tag(sched) {
        Some("linear") => {
            let w = v.int(&join(sched, "warmup_steps")).unwrap_or(10);
            let d = v.int(&join(sched, "decay_steps")).unwrap_or(10);
            if w <= 0 && d <= 0 {
                ctx.error(
                    scope,
                    "Linear scheduler requires warmup_steps > 0 or decay_steps > 0",
                    "Set warmup_steps or decay_steps, or use the constant scheduler.",
                );
            } else if d > 0 {
                match steps {
                    None => ctx.error(
                        scope,
                        "Must specify max_steps when using a linear scheduler with decay_steps > 0",
                        "Set max_steps.",
                    ),
                    Some(s) if w + d > s => ctx.error(
                        scope,
                        format!(
                            "warmup_steps + decay_steps ({w} + {d}) must be <= max_steps ({s})"
                        ),
                        "Shorten the schedule or raise max_steps.",
                    ),
                    _ => {}
                }
            }
        }
        Some("cosine") => {
            let w = v.int(&join(sched, "warmup_steps")).unwrap_or(10);
            match steps {
                None => ctx.error(
                    scope,
                    "Must specify max_steps when using a cosine scheduler",
                    "Set max_steps.",
                ),
                Some(s) if w >= s => ctx.error(
                    scope,
                    format!("warmup_steps ({w}) must be less than max_steps ({s})"),
                    "warmup_steps defaults to 10: lower it or raise max_steps.",
                ),
                _ => {}
            }
        }
        _ => {}
    }
    if v.tag(optim) == Some("muon") && v.flag(&join(model, "fsdp_cpu_offload")) {
        ctx.error(
            scope,
            "The Muon optimizer cannot be combined with fsdp_cpu_offload",
            "Use adamw, or turn fsdp_cpu_offload off.",
        );
    }
}

/// `resume` tables: `step` and `dir` are exclusive, and `dir` must end in `step_<N>`.
pub(super) fn resume(v: &View, ctx: &mut Ctx, path: &str) {
    if !v.on(path) || !ctx.ok(path) {
        return;
    }
    let step = v.int(&join(path, "step"));
    let dir = v.str(&join(path, "dir"));
    if step.is_some() && dir.is_some() {
        ctx.error(
            path,
            "resume.step and resume.dir are mutually exclusive",
            "Keep one of them.",
        );
    }
    if let Some(d) = dir {
        let last = d.trim_end_matches('/').rsplit('/').next().unwrap_or("");
        let ok = last
            .strip_prefix("step_")
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
        if !ok {
            ctx.error(
                path,
                format!(
                    "resume.dir must end in a step_<N> directory (got {})",
                    show("dir", d)
                ),
                "Point it at a checkpoint directory such as .../checkpoints/step_100.",
            );
        }
    }
}

const MANAGED_VARS: &[&str] = &[
    "CUDA_VISIBLE_DEVICES",
    "PRL_RUN_ID",
    "PRL_RUN_NAME",
    "WANDB_RUN_ID",
    "WANDB_SHARED_MODE",
    "WANDB_SHARED_LABEL",
    "WANDB_SHARED_PRIMARY",
    "WANDB_SHARED_FINISHER",
];

/// `env_vars` tables may not set launcher-managed variables.
pub(super) fn env_vars(v: &View, ctx: &mut Ctx, path: &str) {
    let Some(t) = v.raw(path).and_then(Value::as_table) else {
        return;
    };
    let bad: Vec<&str> = MANAGED_VARS
        .iter()
        .copied()
        .filter(|k| t.contains_key(*k))
        .collect();
    if !bad.is_empty() && ctx.ok(path) {
        ctx.error(path, format!("env_vars cannot set launcher-managed vars {bad:?} — set by the launcher, not overridable"), "Remove them; the launcher sets them.");
    }
}

/// `[orchestrator.concurrency]` / `[eval.concurrency]`.
pub(super) fn concurrency(v: &View, ctx: &mut Ctx, path: &str) {
    if !ctx.ok(path) {
        return;
    }
    let max = v.int(&join(path, "max_inflight"));
    let min = v.int(&join(path, "min_inflight")).unwrap_or(1);
    let init = v.int(&join(path, "initial_inflight"));
    if let Some(max) = max {
        if init.is_some_and(|i| i > max) {
            ctx.error(
                path,
                format!(
                    "initial_inflight ({}) must be <= max_inflight ({max})",
                    init.unwrap_or_default()
                ),
                "Lower initial_inflight or raise max_inflight.",
            );
        }
        if min > max {
            ctx.error(
                path,
                format!("min_inflight ({min}) must be <= max_inflight ({max})"),
                "Lower min_inflight or raise max_inflight.",
            );
        }
    }
}

/// An algorithm table (`orchestrator.algo` or a source's `algo`).
pub(super) fn algo(v: &View, ctx: &mut Ctx, path: &str) {
    let Some(ty) = v.tag(path) else { return };
    if !ctx.ok(path) {
        return;
    }
    let src = join(path, "sampling.source");
    let frozen = v.raw(&src).is_some_and(Value::is_table);
    if ty == "sft" && !frozen {
        ctx.error(path, "The sft algorithm needs a teacher: sampling.source must be a frozen model endpoint, not 'policy'", "Set `[..algo.sampling.source]` with `name` and `base_url`.");
    }
    if ty != "sft" && frozen {
        ctx.error(path, format!("The {ty} algorithm trains with the rl loss type but sampling.source is a frozen model"), "Use `sampling.source = \"policy\"`, or `type = \"sft\"` to distil from the frozen model.");
    }
    for frozen_path in [src.clone(), join(path, "teacher")] {
        if v.raw(&frozen_path)
            .and_then(Value::as_table)
            .is_some_and(|t| !t.contains_key("base_url"))
        {
            ctx.error(&frozen_path, "a frozen model reference needs base_url", "Set `base_url` explicitly (the default localhost URL is not used for frozen models).");
        }
    }
    if ty == "echo"
        && let Some(roles) = v.raw(&join(path, "roles")).and_then(Value::as_table)
        && !roles.values().any(Value::is_table)
    {
        ctx.error(
            &join(path, "roles"),
            "echo needs at least one role",
            "Add e.g. `[..algo.roles.tool]`.",
        );
    }
    if ty == "hierarchical_grpo"
        && v.raw(&join(path, "episode_agents"))
            .and_then(Value::as_array)
            .is_some_and(Vec::is_empty)
    {
        ctx.error(
            &join(path, "episode_agents"),
            "List should have at least 1 item after validation, not 0",
            "Name the agents of an episode.",
        );
    }
}

/// The env id a source resolves (its `name` default).
fn env_id<'a>(v: &View<'a>, src: &str) -> Option<&'a str> {
    let id = v.str(&join(src, "env.id")).filter(|s| !s.is_empty());
    id.or_else(|| {
        v.str(&join(src, "env.taskset.id"))
            .filter(|s| !s.is_empty())
    })
}

/// A source group (`orchestrator.train`, `orchestrator.eval`, SFT `eval`): names unique and
/// not `agg`, every source names an env or taskset, algorithms and curricula valid.
pub(super) fn sources(v: &View, ctx: &mut Ctx, group: &str, train: bool) {
    if !v.raw(group).is_some_and(Value::is_table) {
        return;
    }
    let list = join(group, "source");
    let n = v.raw(&list).and_then(Value::as_array).map_or(0, Vec::len);
    if !train && n == 0 && ctx.ok(group) {
        ctx.error(
            group,
            format!("[{group}] needs at least one [[{list}]]"),
            "Add an eval source, or remove the eval table.",
        );
    }
    let mut seen = HashSet::new();
    for i in 0..n {
        let src = join(&list, &i.to_string());
        if !ctx.ok(&src) {
            continue;
        }
        let id = env_id(v, &src);
        if id.is_none() {
            ctx.error(
                &join(&src, "env"),
                "every source must name an env or a taskset",
                "Set `env.taskset.id` (e.g. \"reverse-text\") or `env.id`.",
            );
        }
        let name = v.str(&join(&src, "name")).or(id);
        if let Some(name) = name {
            if name == "agg" {
                ctx.error(
                    &join(&src, "name"),
                    "the source name 'agg' is reserved",
                    "Pick another name.",
                );
            } else if !seen.insert(name.to_string()) {
                ctx.error(
                    &join(&src, "name"),
                    format!(
                        "source names must be unique within [{group}]: {} appears twice",
                        show("name", name)
                    ),
                    "Give each source its own `name`.",
                );
            }
        }
        if train {
            algo(v, ctx, &join(&src, "algo"));
            curriculum(v, ctx, &join(&src, "curriculum"));
        }
    }
}

fn curriculum(v: &View, ctx: &mut Ctx, path: &str) {
    if !v.on(path) || !ctx.ok(path) {
        return;
    }
    let sampler = join(path, "sampler");
    if v.tag(&sampler) == Some("difficulty_pool")
        && let Some(pools) = v.raw(&join(&sampler, "pools")).and_then(Value::as_table)
    {
        let mut thresholds = Vec::new();
        let mut any_weight = false;
        for pool in pools.values().filter_map(Value::as_table) {
            if let Some(t) = pool.get("threshold").and_then(crate::value::as_float) {
                thresholds.push(t);
            }
            any_weight |= pool
                .get("weight")
                .and_then(crate::value::as_float)
                .is_some_and(|w| w > 0.0);
        }
        let unique = thresholds
            .iter()
            .enumerate()
            .all(|(i, a)| thresholds[..i].iter().all(|b| b != a));
        if pools.is_empty() || !unique || !any_weight {
            ctx.error(&join(&sampler, "pools"), "difficulty pools must be non-empty, with unique thresholds and at least one weight > 0", "Check the pool thresholds and weights.");
        }
    }
    if let Some(gates) = v.raw(&join(path, "gates")).and_then(Value::as_table) {
        for (name, gate) in gates {
            let Some(g) = gate.as_table() else { continue };
            let lo = g
                .get("reject_min")
                .and_then(crate::value::as_float)
                .unwrap_or(0.0);
            let hi = g
                .get("reject_max")
                .and_then(crate::value::as_float)
                .unwrap_or(0.0);
            if lo > hi {
                ctx.error(
                    &join(&join(path, "gates"), name),
                    format!("reject_min ({lo}) must be <= reject_max ({hi})"),
                    "Swap or fix the gate bounds.",
                );
            }
        }
    }
}

/// Whether `name` is an exact key of `MODEL_RENDERER_MAP`.
pub(super) fn renderer_mapped(name: &str) -> bool {
    MODEL_RENDERER_MAP.iter().any(|(k, _)| *k == name)
}

/// `[inference]` validators (both modes).
pub(super) fn inference(v: &View, ctx: &mut Ctx) {
    if !v.raw("inference").is_some_and(Value::is_table) || !ctx.ok("inference") {
        return;
    }
    let deploy = v.tag("inference.deployment").unwrap_or("single_node");
    let router = v.tag("inference.router");
    if deploy != "single_node" && !v.on("inference.slurm") {
        ctx.error("inference", format!("inference.deployment.type = '{deploy}' requires inference.slurm"), "Multi-node inference needs a [slurm] table (the platform injects one for multi-node RL deployments).");
    }
    if router == Some("llm-d") {
        if deploy == "single_node" {
            ctx.error(
                "inference",
                "The llm-d router backend requires a multi-node or disaggregated SLURM deployment.",
                "Use the default vllm-router on a single node.",
            );
        }
        if v.flag("inference.vllm.enable_return_routed_experts") {
            ctx.error(
                "inference",
                "The llm-d router is incompatible with enable_return_routed_experts",
                "Use the vllm-router.",
            );
        }
    }
    if deploy != "single_node" && router.is_none() {
        ctx.error(
            "inference",
            format!("inference.deployment.type = '{deploy}' requires a router"),
            "Do not set `router = \"None\"` for multi-node inference.",
        );
    }
    if v.set("inference.kv_cache_offload") {
        if !v.on("inference.kv_cache_offload.cpu") {
            ctx.error(
                "inference.kv_cache_offload",
                "kv_cache_offload requires a cpu tier",
                "Add `[inference.kv_cache_offload.cpu] num_bytes = ...`.",
            );
        }
        if v.bool("inference.vllm.enable_prefix_caching") == Some(false) {
            ctx.error(
                "inference",
                "kv_cache_offload requires enable_prefix_caching",
                "Remove `enable_prefix_caching = false`.",
            );
        }
    }
    if let Some(r) = v.int("inference.vllm.max_lora_rank")
        && r > 512
    {
        ctx.error(
            "inference.vllm.max_lora_rank",
            format!("max_lora_rank {r} exceeds the largest vLLM LoRA rank (512)"),
            "Use a LoRA rank of at most 512.",
        );
    }
}
