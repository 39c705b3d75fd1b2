//! `RLConfig` rules: orchestrator batching and renderer (§6.3), `[deployment]` (§4.3), the
//! top-level rules R1–R19 (§6.1), and the hosted RL policy (§7).

use toml::Value;

use super::shared::{self, renderer_mapped};
use super::{Ctx, View};
use crate::report::Finding;
use crate::secrets::show;

pub(super) fn run(v: &View, ctx: &mut Ctx) {
    shared::trainer_model(v, ctx, "trainer.model");
    shared::trainer_level(
        v,
        ctx,
        &shared::TrainerPaths {
            scope: "trainer",
            model: "trainer.model",
            optim: "trainer.optim",
            sched: "trainer.scheduler",
            max_steps: "trainer.max_steps",
            trace: "trainer.trace_path",
        },
    );
    if ctx.ok("trainer")
        && v.flag("trainer.enable_router_replay")
        && !matches!(v.str("trainer.model.impl"), Some("custom" | "auto"))
    {
        ctx.error(
            "trainer",
            "enable_router_replay requires model.impl='custom' or 'auto'",
            "Set `[trainer.model] impl = \"custom\"`.",
        );
    }
    for p in ["resume", "trainer.resume", "orchestrator.resume"] {
        shared::resume(v, ctx, p);
    }
    for p in [
        "env_vars",
        "trainer.env_vars",
        "orchestrator.env_vars",
        "inference.env_vars",
        "inference.deployment.prefill_env_vars",
        "inference.deployment.decode_env_vars",
    ] {
        shared::env_vars(v, ctx, p);
    }
    if v.raw("monitors.wandb.offline").is_some()
        && v.flag("monitors.wandb.offline")
        && ctx.ok("monitors.wandb")
    {
        ctx.error(
            "monitors.wandb",
            "shared monitors.wandb.offline = true is not supported",
            "Set offline per component (`trainer.monitors.wandb.offline`), or remove it.",
        );
    }
    orchestrator(v, ctx);
    shared::inference(v, ctx);
    deployment(v, ctx);
    top_level(v, ctx);
}

fn orchestrator(v: &View, ctx: &mut Ctx) {
    if !v.raw("orchestrator").is_some_and(Value::is_table) {
        return;
    }
    shared::algo(v, ctx, "orchestrator.algo");
    shared::sources(v, ctx, "orchestrator.train", true);
    shared::sources(v, ctx, "orchestrator.eval", false);
    shared::concurrency(v, ctx, "orchestrator.concurrency");
    if !ctx.ok("orchestrator") {
        return;
    }
    if v.str("orchestrator.renderer.name").unwrap_or("auto") == "auto" {
        let model = v.str("orchestrator.model.name");
        let tok = v.str("orchestrator.tokenizer.name").or(model);
        if let Some(name) = tok
            && !renderer_mapped(name)
        {
            ctx.error(
                "orchestrator",
                format!("orchestrator.renderer.name='auto' but {} is not in renderers.base.MODEL_RENDERER_MAP, so it would fall back to an untyped renderer", show("name", name)),
                "Set `[orchestrator.renderer] name = ...` to the model family's renderer (e.g. \"prime-qwen3\" for PrimeIntellect Qwen3 fine-tunes, or \"default\" with tool_parser/reasoning_parser).",
            );
        }
    }
    let batch = v.int("orchestrator.batch_size");
    let tokens = v.int("orchestrator.token_batch_size");
    let group = v.int("orchestrator.group_size").unwrap_or(1);
    if batch.is_some() && tokens.is_some() {
        ctx.error(
            "orchestrator",
            "Set exactly one of batch_size and token_batch_size",
            "Remove one of them.",
        );
    }
    let batch = if tokens.is_none() {
        batch.or(Some(128))
    } else {
        batch
    };
    if let Some(b) = batch
        && group > 0
        && b % group != 0
    {
        ctx.error("orchestrator", format!("Batch size must be divisible by the number of samples per problem (batch_size {b}, group_size {group})"), format!("Use a batch_size that is a multiple of {group}."));
    }
    for k in ["max_inflight", "initial_inflight"] {
        if let Some(n) = v.int(&format!("orchestrator.concurrency.{k}"))
            && n < group
        {
            ctx.error("orchestrator", format!("concurrency.{k} ({n}) must be at least the number of rollouts per example (group_size {group})"), format!("Raise concurrency.{k} to at least {group}."));
        }
    }
}

fn deployment(v: &View, ctx: &mut Ctx) {
    if !ctx.ok("deployment") {
        return;
    }
    match v.tag("deployment") {
        Some("single_node") => {
            let (t, i, g) = (
                v.int("deployment.num_train_gpus").unwrap_or(1),
                v.int("deployment.num_infer_gpus").unwrap_or(1),
                v.int("deployment.gpus_per_node").unwrap_or(8),
            );
            if t + i > g {
                ctx.error("deployment", format!("Total GPU count ({} = {t} train + {i} infer) exceeds gpus_per_node ({g}).", t + i), format!("Keep num_train_gpus + num_infer_gpus within {g}, or use `type = \"multi_node\"`."));
            }
        }
        Some("multi_node") => {
            if let (Some(n), Some(g)) = (
                v.int("deployment.num_train_nodes"),
                v.int("deployment.nodes_per_fsdp_group"),
            ) && (g <= 0 || n % g != 0)
            {
                ctx.error(
                    "deployment",
                    format!(
                        "num_train_nodes ({n}) must be divisible by nodes_per_fsdp_group ({g})"
                    ),
                    "Pick a group size that divides the node count.",
                );
            }
        }
        _ => {}
    }
}

/// The effective `num_infer_nodes` of a multi-node deployment (R1).
pub(crate) fn infer_nodes(v: &View) -> Option<i64> {
    if let Some(n) = v.int("deployment.num_infer_nodes") {
        return Some(n);
    }
    if !v.raw("inference").is_some_and(Value::is_table) {
        return Some(0);
    }
    Some(
        match v.tag("inference.deployment").unwrap_or("single_node") {
            "multi_node" => v.int("inference.deployment.num_nodes").unwrap_or(2),
            "disaggregated" => {
                let p = v
                    .int("inference.deployment.prefill_nodes_per_replica")
                    .unwrap_or(1)
                    * v.int("inference.deployment.num_prefill_replicas")
                        .unwrap_or(1);
                let d = v
                    .int("inference.deployment.decode_nodes_per_replica")
                    .unwrap_or(1)
                    * v.int("inference.deployment.num_decode_replicas")
                        .unwrap_or(1);
                p + d
            }
            _ => 1,
        },
    )
}

/// The top-level rules (R1–R19), as named steps in the reference's order.
fn top_level(v: &View, ctx: &mut Ctx) {
    if !ctx.ok("") {
        return;
    }
    let f = Facts::read(v);
    multi_node(v, ctx, &f);
    single_node_nccl(v, ctx, &f);
    quantized_transfer(v, ctx, &f);
    sub_output_dirs(v, ctx);
    model_names(v, ctx, &f);
    chat_templates(v, ctx, &f);
    trainer_orchestrator_agree(v, ctx);
    lora_broadcast(ctx, &f);
    rollout_transport(v, ctx);
    lora_ranks(v, ctx, &f);
    routed_experts(v, ctx, &f);
    single_node_infer_gpus(v, ctx, &f);
}

/// What several top-level rules read, resolved once.
#[derive(Clone, Copy)]
struct Facts<'a> {
    has_inf: bool,
    fake: bool,
    deploy: &'a str,
    lora: bool,
    tp: i64,
    dp: i64,
    gpn: i64,
    shared_wb: Option<&'a str>,
}

impl<'a> Facts<'a> {
    fn read(v: &View<'a>) -> Self {
        Facts {
            has_inf: v.raw("inference").is_some_and(Value::is_table),
            fake: v.on("trainer.data.fake"),
            deploy: v.tag("deployment").unwrap_or("single_node"),
            lora: v.on("trainer.model.lora"),
            tp: v.int("inference.vllm.tensor_parallel_size").unwrap_or(1),
            dp: v.int("inference.vllm.data_parallel_size").unwrap_or(1),
            gpn: v.int("deployment.gpus_per_node").unwrap_or(8),
            shared_wb: v.tag("weight_broadcast"),
        }
    }
}

/// R1, R2, R17, R19 (multi-node): inference nodes, the router, expert-parallel sizes.
fn multi_node(v: &View, ctx: &mut Ctx, f: &Facts) {
    let Facts {
        has_inf,
        fake,
        deploy,
        tp,
        dp,
        gpn,
        ..
    } = *f;
    if deploy == "multi_node" {
        let nodes = infer_nodes(v).unwrap_or(0);
        if v.int("deployment.num_infer_nodes").is_some()
            && has_inf
            && v.tag("inference.deployment") == Some("multi_node")
        {
            let n = v.int("inference.deployment.num_nodes").unwrap_or(2);
            if n != nodes {
                ctx.error("", format!("deployment.num_infer_nodes ({nodes}) must equal inference.deployment.num_nodes ({n})"), "Set one of them, or make them equal.");
            }
        }
        if nodes > 0 && !has_inf {
            ctx.error(
                "",
                format!("deployment.num_infer_nodes = {nodes} requires an [inference] table"),
                "Add `[inference]`.",
            );
        }
        if nodes == 0 {
            if has_inf {
                ctx.error(
                    "",
                    "deployment.num_infer_nodes = 0 forbids an [inference] table",
                    "Remove [inference], or give inference nodes.",
                );
            }
            if !fake {
                ctx.error(
                    "",
                    "deployment.num_infer_nodes = 0 requires trainer.data.fake",
                    "A trainer-only run needs fake data: add `[trainer.data.fake]`.",
                );
            }
        }
        if has_inf && v.raw("inference.router").is_some_and(crate::value::is_none) {
            ctx.error(
                "",
                "multi-node deployments with [inference] require inference.router",
                "Do not set `router = \"None\"`.",
            );
        }
        if has_inf
            && v.flag("inference.vllm.enable_expert_parallel")
            && v.tag("inference.deployment") != Some("disaggregated")
        {
            if tp > 0 && gpn % tp != 0 {
                ctx.error("", format!("deployment.gpus_per_node must be divisible by inference.vllm.tensor_parallel_size ({gpn} % {tp} != 0)"), "Pick a tensor parallel size that divides the GPUs per node.");
            } else if v.raw("inference.vllm.data_parallel_size").is_some() && dp * tp != nodes * gpn
            {
                ctx.error("", format!("data_parallel_size × tensor_parallel_size ({dp} × {tp}) must equal the inference GPUs of a replica ({nodes} × {gpn})"), "Leave data_parallel_size unset to derive it.");
            } else if let Some(local) = v.int("inference.vllm.data_parallel_size_local")
                && tp > 0
                && local != gpn / tp
            {
                ctx.error("", format!("data_parallel_size_local must be gpus_per_node / tensor_parallel_size ({})", gpn / tp), "Leave it unset to derive it.");
            }
        }
    }
}

/// R3: NCCL weight broadcast on one node needs two GPUs (the trainer-level broadcast as
/// written).
fn single_node_nccl(v: &View, ctx: &mut Ctx, f: &Facts) {
    let Facts { deploy, .. } = *f;
    if deploy == "single_node"
        && v.raw("trainer.weight_broadcast.type")
            .and_then(Value::as_str)
            == Some("nccl")
    {
        let t = v.int("deployment.num_train_gpus").unwrap_or(1);
        let i = v.int("deployment.num_infer_gpus").unwrap_or(1);
        if t + i < 2 {
            ctx.error(
                "",
                "NCCL weight broadcast needs at least 2 GPUs (train + inference)",
                "Use the filesystem broadcast, or more GPUs.",
            );
        }
    }
}

/// R4, R13: quantized weight transfer and expert load balancing.
fn quantized_transfer(v: &View, ctx: &mut Ctx, f: &Facts) {
    let Facts {
        has_inf, shared_wb, ..
    } = *f;
    let quant = shared_wb == Some("nccl") && v.flag("weight_broadcast.quantize_in_weight_transfer");
    if quant {
        if !has_inf {
            ctx.error(
                "",
                "weight_broadcast.quantize_in_weight_transfer requires an [inference] table.",
                "Add [inference] or turn quantized transfer off.",
            );
        }
        if v.str("trainer.model.impl") != Some("custom") {
            ctx.error("", "weight_broadcast.quantize_in_weight_transfer requires trainer.model.impl = 'custom'.", "Set `[trainer.model] impl = \"custom\"` (\"auto\" is not enough).");
        }
    }
    if has_inf && v.flag("inference.vllm.enable_eplb") && !quant {
        ctx.error("", "inference.vllm.enable_eplb requires the nccl weight broadcast with quantize_in_weight_transfer = true", "Set `[weight_broadcast] type = \"nccl\"` and `quantize_in_weight_transfer = true`, or disable eplb.");
    }
}

/// R5: sub-level output directories must be the run directory.
fn sub_output_dirs(v: &View, ctx: &mut Ctx) {
    for sub in ["trainer", "orchestrator"] {
        let p = format!("{sub}.output_dir");
        if let Some(Value::String(d)) = v.raw(&p) {
            let root = v.str("output_dir").unwrap_or("outputs");
            let run_dir = v.str("run.dir").or(v.str("run.name"));
            let expected = run_dir.map(|r| format!("{}/{}", root.trim_end_matches('/'), r));
            if expected.as_deref() != Some(d.trim_end_matches('/')) {
                ctx.error("", format!("{p} ({}) conflicts with the run directory output_dir/run.dir", show("output_dir", d)), "Do not set sub-level output_dir; set the top-level `output_dir` (and `run.dir`) instead.");
            }
        }
    }
}

/// R8: the inference, orchestrator and trainer model names agree.
fn model_names(v: &View, ctx: &mut Ctx, f: &Facts) {
    let Facts { has_inf, .. } = *f;
    let orch = v.str("orchestrator.model.name");
    if has_inf {
        let inf = v.str("inference.vllm.model");
        if let (Some(o), Some(i)) = (orch, inf)
            && o != i
        {
            ctx.error(
                "",
                format!(
                    "inference.vllm.model ({}) and orchestrator.model.name ({}) must be the same",
                    show("model", i),
                    show("model", o)
                ),
                "Set the shared `[model] name` instead of the sub-level names.",
            );
        }
    } else if let (Some(o), Some(t)) = (orch, v.str("trainer.model.name"))
        && o != t
        && !t.starts_with("Jackmin108/")
    {
        ctx.error("", format!("trainer.model.name ({}) and orchestrator.model.name ({}) must be the same without [inference]", show("model", t), show("model", o)), "Set the shared `[model] name`.");
    }
}

/// R9: one chat template for trainer, orchestrator and inference.
fn chat_templates(v: &View, ctx: &mut Ctx, f: &Facts) {
    let Facts { has_inf, .. } = *f;
    let tct = v.str("trainer.tokenizer.chat_template");
    let oct = v.str("orchestrator.tokenizer.chat_template");
    if tct != oct {
        ctx.error(
            "",
            format!(
                "Trainer chat_template ({}) and orchestrator chat_template ({}) do not match.",
                tct.map_or("None".into(), |s| show("chat_template", s)),
                oct.map_or("None".into(), |s| show("chat_template", s))
            ),
            "Use the shared [tokenizer] config to set chat_template for both.",
        );
    } else if has_inf && v.str("inference.vllm.chat_template") != tct {
        ctx.error(
            "",
            "inference.vllm.chat_template differs from the trainer/orchestrator chat_template",
            "Use the shared [tokenizer] chat_template.",
        );
    }
}

/// R10: trainer and orchestrator agree on steps, seq_len, checkpoints, resume and W&B.
fn trainer_orchestrator_agree(v: &View, ctx: &mut Ctx) {
    let (tms, oms) = (v.int("trainer.max_steps"), v.int("orchestrator.max_steps"));
    if tms != oms {
        ctx.error(
            "",
            format!(
                "Trainer max steps ({}) and orchestrator max steps ({}) are not the same",
                opt(tms),
                opt(oms)
            ),
            "Set the shared top-level `max_steps` instead.",
        );
    }
    if let (Some(t), Some(o)) = (
        v.int("trainer.model.seq_len"),
        v.int("orchestrator.seq_len"),
    ) && t < o
    {
        ctx.error("", format!("Trainer model seq_len ({t}) must be >= orchestrator seq_len ({o})"), "Raise trainer.model.seq_len or lower orchestrator.seq_len (the shared `seq_len` sets both).");
    }
    let (tc, oc) = (v.on("trainer.ckpt"), v.on("orchestrator.ckpt"));
    if tc && !oc {
        ctx.error("", "Trainer checkpoint config is specified, but orchestrator checkpoint config is not. Please setup checkpointing on both for checkpointing to work properly.", "Use the shared [ckpt] table.");
    } else if oc && !tc {
        ctx.error("", "Orchestrator checkpoint config is specified, but trainer checkpoint config is not. Please setup checkpointing on both for checkpointing to work properly.", "Use the shared [ckpt] table.");
    } else if tc && oc && v.int("trainer.ckpt.interval") != v.int("orchestrator.ckpt.interval") {
        ctx.error("", format!("Trainer checkpoint interval ({}) and orchestrator checkpoint interval ({}) are not the same", opt(v.int("trainer.ckpt.interval")), opt(v.int("orchestrator.ckpt.interval"))), "Set `interval` in the shared [ckpt].");
    }
    if v.raw("trainer.resume") != v.raw("orchestrator.resume") {
        ctx.error(
            "",
            "Trainer and orchestrator resume configs are not the same",
            "Use the shared [resume] table.",
        );
    }
    let (tw, ow) = (
        v.on("trainer.monitors.wandb"),
        v.on("orchestrator.monitors.wandb"),
    );
    if tw != ow {
        let (a, b) = if tw {
            ("Trainer", "orchestrator")
        } else {
            ("Orchestrator", "trainer")
        };
        ctx.error(
            "",
            format!("{a} W&B config is specified, but {b} W&B config is not"),
            "Use the shared [monitors.wandb] table.",
        );
    } else if tw
        && v.str("trainer.monitors.wandb.project") != v.str("orchestrator.monitors.wandb.project")
    {
        ctx.error(
            "",
            "Trainer and orchestrator W&B projects are not the same",
            "Set `project` in the shared [monitors.wandb].",
        );
    }
}

/// R11: LoRA needs the filesystem weight broadcast.
fn lora_broadcast(ctx: &mut Ctx, f: &Facts) {
    let Facts {
        has_inf,
        lora,
        shared_wb,
        ..
    } = *f;
    let wb = shared_wb.unwrap_or(if lora || !has_inf {
        "filesystem"
    } else {
        "nccl"
    });
    if lora && wb != "filesystem" {
        ctx.error("", "LoRA training is not yet supported with in-memory weight broadcast. Set weight_broadcast.type = 'filesystem'.", "Set `[weight_broadcast] type = \"filesystem\"` (the default under LoRA).");
    }
}

/// R12: one rollout transport for trainer and orchestrator.
fn rollout_transport(v: &View, ctx: &mut Ctx) {
    let (trt, ort) = (
        v.tag("trainer.rollout_transport"),
        v.tag("orchestrator.rollout_transport"),
    );
    if trt != ort {
        ctx.error("", format!("trainer.rollout_transport ({}) and orchestrator.rollout_transport ({}) must be the same type", trt.unwrap_or("None"), ort.unwrap_or("None")), "Use the shared [rollout_transport] table.");
    }
}

/// R14: LoRA rank and alpha copied from the trainer; vLLM's rank limit.
fn lora_ranks(v: &View, ctx: &mut Ctx, f: &Facts) {
    let Facts { has_inf, lora, .. } = *f;
    if lora {
        for (k, default) in [("rank", 16.0), ("alpha", 32.0)] {
            let t = v
                .float(&format!("trainer.model.lora.{k}"))
                .unwrap_or(default);
            if let Some(o) = v.float(&format!("orchestrator.model.lora.{k}"))
                && (o - t).abs() > f64::EPSILON
            {
                ctx.error(
                    "",
                    format!(
                        "orchestrator.model.lora.{k} ({o}) must equal trainer.model.lora.{k} ({t})"
                    ),
                    format!("Remove orchestrator.model.lora.{k}; it is copied from the trainer."),
                );
            }
        }
        if has_inf && v.int("trainer.model.lora.rank").unwrap_or(16) > 512 {
            ctx.error(
                "",
                "LoRA rank above 512 is not supported by vLLM (max_lora_rank)",
                "Use a LoRA rank of at most 512.",
            );
        }
    }
}

/// R15, R16, R18: router replay, KV-cache offload and the router.
fn routed_experts(v: &View, ctx: &mut Ctx, f: &Facts) {
    let Facts { has_inf, .. } = *f;
    let replay = v.flag("trainer.enable_router_replay");
    if has_inf
        && (replay || v.flag("inference.vllm.enable_return_routed_experts"))
        && v.tag("inference.router") == Some("llm-d")
    {
        ctx.error(
            "",
            "Routed-expert return (router replay) is incompatible with the llm-d router",
            "Use the vllm-router.",
        );
    }
    if replay && v.set("inference.kv_cache_offload") {
        ctx.error(
            "",
            "Router replay with inference.kv_cache_offload is not supported",
            "Disable one of them.",
        );
    }
    if v.tag("inference.kv_cache_offload") == Some("mooncake")
        && !v.on("slurm")
        && !v.on("inference.slurm")
    {
        ctx.error(
            "",
            "Mooncake KV offload requires SLURM",
            "Use the native offload.",
        );
    }
}

/// R19 (single node): inference GPUs divisible by the tensor parallel size.
fn single_node_infer_gpus(v: &View, ctx: &mut Ctx, f: &Facts) {
    let Facts {
        has_inf,
        deploy,
        tp,
        dp,
        ..
    } = *f;
    if deploy == "single_node" && has_inf {
        let i = v.int("deployment.num_infer_gpus").unwrap_or(1);
        if i != dp * tp && tp > 0 && i % tp != 0 {
            ctx.error("", "Assertion failed, Number of inference GPUs must be divisible by the tensor parallel size", format!("num_infer_gpus = {i} is not a multiple of tensor_parallel_size = {tp}."));
        }
    }
}

fn opt(x: Option<i64>) -> String {
    x.map_or("None".into(), |n| n.to_string())
}

/// The hosted RL policy of the CLI's schema worker (§7).
pub(super) fn hosted_policy(v: &View, out: &mut Vec<Finding>) {
    if v.flag("clean") {
        out.push(
            Finding::error(
                "clean",
                "clean = true is unsupported for hosted runs: start a new run instead.",
            )
            .hint("Remove `clean`."),
        );
    }
    if v.raw("inference").is_some_and(Value::is_table)
        && v.tag("inference.deployment") == Some("disaggregated")
    {
        out.push(Finding::error("inference.deployment", "Disaggregated inference is not supported for hosted runs: Platform manages deployment settings.").hint("Use the default single_node (or multi_node) inference deployment."));
    }
    if v.tag("deployment").unwrap_or("single_node") == "single_node" && !v.on("trainer.data.fake") {
        let has_inf = v.raw("inference").is_some_and(Value::is_table);
        let zero = v.int("deployment.num_infer_gpus") == Some(0);
        if !has_inf || zero {
            let path = if has_inf {
                "deployment.num_infer_gpus"
            } else {
                "inference"
            };
            out.push(
                Finding::error(path, "Hosted RL runs need inference GPUs: set deployment.num_infer_gpus and an [inference] table, or use fake trainer data (trainer.data.fake) for a trainer-only run.")
                    .hint("Add an `[inference]` table (an empty one uses the defaults)."),
            );
        }
    }
}
