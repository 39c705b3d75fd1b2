//! `SFTConfig` rules (§6.5): data batching and lists, deployment, online eval with its
//! inference and weight broadcast, the typed renderer, context parallelism and VLM limits.

use toml::Value;

use super::shared::{self, renderer_mapped};
use super::{Ctx, View};
use crate::secrets::show;

fn data_rules(v: &View, ctx: &mut Ctx, data: &str) {
    if !v.raw(data).is_none_or(Value::is_table) || !ctx.ok(data) {
        return;
    }
    let b = v.int(&format!("{data}.batch_size")).unwrap_or(128);
    let m = v.int(&format!("{data}.micro_batch_size")).unwrap_or(1);
    if m > 0 && b % m != 0 {
        ctx.error(data, format!("Batch size must be divisible by micro batch size (batch_size {b}, micro_batch_size {m})"), format!("Use a batch_size that is a multiple of {m}."));
    }
    let len = |k: &str| {
        v.raw(&format!("{data}.{k}"))
            .and_then(Value::as_array)
            .map(Vec::len)
    };
    let (sub, spl, prob) = (len("subsets"), len("splits"), len("probabilities"));
    if let (Some(a), Some(b)) = (sub, spl)
        && a != b
    {
        ctx.error(data, format!("Number of subsets must be equal to number of splits ({a} vs {b}). Please specify which split to load for each subset."), "Give one split per subset.");
    }
    if let (Some(a), Some(b)) = (sub, prob)
        && a != b
    {
        ctx.error(
            data,
            format!("Number of subsets must be equal to number of probabilities ({a} vs {b})"),
            "Give one probability per subset.",
        );
    }
    if let (Some(a), Some(b)) = (spl, prob)
        && a != b
        && sub.is_none()
    {
        ctx.error(
            data,
            format!("Number of splits must be equal to number of probabilities ({a} vs {b})"),
            "Give one probability per split.",
        );
    }
}

pub(super) fn run(v: &View, ctx: &mut Ctx) {
    shared::trainer_model(v, ctx, "model");
    data_rules(v, ctx, "data");
    if v.on("val") {
        data_rules(v, ctx, "val.data");
    }
    shared::resume(v, ctx, "resume");
    for p in [
        "env_vars",
        "inference.env_vars",
        "inference.deployment.prefill_env_vars",
        "inference.deployment.decode_env_vars",
    ] {
        shared::env_vars(v, ctx, p);
    }
    shared::inference(v, ctx);
    if v.raw("eval").is_some_and(Value::is_table) {
        shared::sources(v, ctx, "eval", false);
        shared::concurrency(v, ctx, "eval.concurrency");
    }
    if ctx.ok("deployment") && v.tag("deployment") == Some("single_node") {
        let t = v.int("deployment.num_train_gpus").unwrap_or(1);
        let g = v.int("deployment.gpus_per_node").unwrap_or(8);
        if t > g {
            ctx.error(
                "deployment",
                format!("num_train_gpus ({t}) exceeds gpus_per_node ({g})"),
                "Use `type = \"multi_node\"` for more GPUs than one node has.",
            );
        }
    }
    if ctx.ok("deployment")
        && v.tag("deployment") == Some("multi_node")
        && let (Some(n), Some(g)) = (
            v.int("deployment.num_train_nodes"),
            v.int("deployment.nodes_per_fsdp_group"),
        )
        && (g <= 0 || n % g != 0)
    {
        ctx.error(
            "deployment",
            format!("num_train_nodes ({n}) must be divisible by nodes_per_fsdp_group ({g})"),
            "Pick a group size that divides the node count.",
        );
    }
    shared::trainer_level(
        v,
        ctx,
        &shared::TrainerPaths {
            scope: "",
            model: "model",
            optim: "optim",
            sched: "scheduler",
            max_steps: "max_steps",
            trace: "trace_path",
        },
    );
    top_level(v, ctx);
}

/// The top-level rules, as named steps.
fn top_level(v: &View, ctx: &mut Ctx) {
    if !ctx.ok("") {
        return;
    }
    let has_inf = v.raw("inference").is_some_and(Value::is_table);
    let has_eval = v.raw("eval").is_some_and(Value::is_table);
    let model = v.str("model.name");
    if has_inf && !has_eval {
        ctx.error(
            "",
            "[inference] is only allowed together with [eval] (online evaluation)",
            "Remove [inference], or add an [eval] block with sources.",
        );
    }
    if has_eval {
        online_eval(v, ctx, has_inf, model);
    }
    renderer(v, ctx, model);
    context_parallel(v, ctx);
    vlm(v, ctx);
}

/// Online evaluation (`[eval]`): the weight broadcast it can use, the inference model, and
/// the GPUs and port of its inference server.
fn online_eval(v: &View, ctx: &mut Ctx, has_inf: bool, model: Option<&str>) {
    let lora = v.on("model.lora");
    let deploy = v.tag("deployment").unwrap_or("single_node");
    let wb = v.tag("weight_broadcast").unwrap_or(if lora || !has_inf {
        "filesystem"
    } else {
        "nccl"
    });
    if wb == "nixl" {
        ctx.error(
            "",
            "The nixl weight broadcast is not supported for SFT",
            "Use filesystem or nccl.",
        );
    }
    if lora && wb == "nccl" {
        ctx.error("", "LoRA training is not yet supported with in-memory weight broadcast. Set weight_broadcast.type = 'filesystem'.", "Set `[weight_broadcast] type = \"filesystem\"`.");
    }
    if v.flag("eval.retrigger_on_resume") && wb != "filesystem" {
        ctx.error(
            "",
            "eval.retrigger_on_resume = true requires the filesystem weight broadcast",
            "Set `[weight_broadcast] type = \"filesystem\"`.",
        );
    }
    let tp = v.int("inference.vllm.tensor_parallel_size").unwrap_or(1);
    let dp = v.int("inference.vllm.data_parallel_size").unwrap_or(1);
    let gpn = v.int("deployment.gpus_per_node").unwrap_or(8);
    let inf_model = v
        .raw("inference.vllm.model")
        .and_then(Value::as_str)
        .or(model);
    if has_inf && inf_model != model {
        ctx.error(
            "",
            format!(
                "inference.vllm.model ({}) must equal model.name ({})",
                inf_model.map_or("None".into(), |s| show("model", s)),
                model.map_or("None".into(), |s| show("model", s))
            ),
            "Remove inference.vllm.model; it is filled from model.name.",
        );
    }
    if deploy == "multi_node" {
        if !has_inf {
            ctx.error(
                "",
                "Multi-node SFT with [eval] requires an [inference] table",
                "Add [inference].",
            );
        }
        if v.int("deployment.num_infer_nodes").unwrap_or(0) < 1 {
            ctx.error(
                "",
                "Multi-node SFT with [eval] requires deployment.num_infer_nodes >= 1",
                "Give the evaluation inference at least one node.",
            );
        }
        if has_inf && v.raw("inference.router").is_some_and(crate::value::is_none) {
            ctx.error(
                "",
                "Multi-node SFT with [eval] requires inference.router",
                "Do not set `router = \"None\"`.",
            );
        }
        if tp > 0 && gpn % tp != 0 {
            ctx.error("", format!("deployment.gpus_per_node must be divisible by inference.vllm.tensor_parallel_size ({gpn} % {tp} != 0)"), "Pick a tensor parallel size that divides the GPUs per node.");
        }
    } else if has_inf {
        let t = v.int("deployment.num_train_gpus").unwrap_or(1);
        let i = v.int("deployment.num_infer_gpus").unwrap_or(1);
        if t + i > gpn {
            ctx.error(
                "",
                format!(
                    "Total GPU count ({} = {t} train + {i} infer) exceeds gpus_per_node ({gpn}).",
                    t + i
                ),
                format!("Keep num_train_gpus + num_infer_gpus within {gpn}."),
            );
        }
        if i != dp * tp && tp > 0 && i % tp != 0 {
            ctx.error("", "Assertion failed, Number of inference GPUs must be divisible by the tensor parallel size", format!("num_infer_gpus = {i} is not a multiple of tensor_parallel_size = {tp}."));
        }
        if let Some(url) = v.raw("eval.client.base_url").and_then(Value::as_str) {
            let port = v.int("inference.server.port").unwrap_or(8000);
            if url_port(url).is_some_and(|p| p != port) {
                ctx.error(
                    "",
                    format!(
                        "eval.client.base_url's port must equal inference.server.port ({port})"
                    ),
                    "Remove eval.client.base_url, or match the ports.",
                );
            }
        }
    }
}

/// The renderer must be known for real data (`auto` maps the model family; `default` is
/// refused).
fn renderer(v: &View, ctx: &mut Ctx, model: Option<&str>) {
    let fake_only = v.tag("data") == Some("fake") && !v.on("val");
    if !fake_only {
        match v.str("renderer.name").unwrap_or("auto") {
            "auto" => {
                let tok = v.str("tokenizer.name").or(model);
                if let Some(name) = tok
                    && !renderer_mapped(name)
                {
                    ctx.error("", format!("renderer.name='auto' but {} is not in renderers.base.MODEL_RENDERER_MAP", show("name", name)), "Set `[renderer] name = ...` to the model family's renderer (e.g. \"prime-qwen3\").");
                }
            }
            "default" => ctx.error(
                "",
                "renderer.name='default' is not supported for SFT with real data",
                "Pick the model family's renderer (e.g. \"qwen3\", \"prime-qwen3\").",
            ),
            _ => {}
        }
    }
}

/// Context parallelism: seq_len divisible by `model.cp`, micro-batches of one.
fn context_parallel(v: &View, ctx: &mut Ctx) {
    let cp = v.int("model.cp").unwrap_or(1);
    if cp > 1 {
        for d in ["data", "val.data"] {
            if d == "val.data" && !v.on("val") {
                continue;
            }
            let s = v.int(&format!("{d}.seq_len")).unwrap_or(128);
            if s % cp != 0 {
                ctx.error(
                    "",
                    format!("{d}.seq_len ({s}) must be divisible by model.cp ({cp})"),
                    "Pick a seq_len that is a multiple of cp.",
                );
            }
            if v.int(&format!("{d}.micro_batch_size")).unwrap_or(1) != 1 {
                ctx.error(
                    "",
                    format!("Context parallelism requires {d}.micro_batch_size = 1"),
                    "Set micro_batch_size = 1.",
                );
            }
        }
    }
}

/// VLM training: micro-batches of one.
fn vlm(v: &View, ctx: &mut Ctx) {
    if v.on("model.vlm") {
        for d in ["data", "val.data"] {
            if d == "val.data" && !v.on("val") {
                continue;
            }
            if v.int(&format!("{d}.micro_batch_size")).unwrap_or(1) != 1 {
                ctx.error(
                    "",
                    format!("VLM training requires {d}.micro_batch_size = 1"),
                    "Set micro_batch_size = 1.",
                );
            }
        }
    }
}

fn url_port(url: &str) -> Option<i64> {
    let rest = url.split("://").nth(1)?;
    let host = rest.split('/').next()?;
    host.rsplit_once(':')?.1.parse().ok()
}
