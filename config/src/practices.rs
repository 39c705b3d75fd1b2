//! Warnings from the platform's own guidance (issue §2, fourth bullet): machine-local paths,
//! SLURM sections, implicit `[deployment]` counts, changed training dtypes, checkpoints
//! without a volume, step budgets, W&B without its key forwarded, evaluation on the training
//! source, credential-shaped values — and schema-valid values that look wrong.

use toml::{Table, Value};

use crate::hosted::Hosted;
use crate::report::{Finding, Mode};
use crate::rules::View;
use crate::secrets::{credential_kind, is_secret_name, show};
use crate::value::{get, join};

/// What the practice checks need besides the document.
pub(crate) struct Input<'a> {
    pub mode: Mode,
    /// The file as written, hosted keys stripped, before propagation.
    pub raw: &'a Table,
    /// The propagated document.
    pub view: &'a View<'a>,
    pub hosted: &'a Hosted,
    pub path_values: &'a [(String, String)],
    pub forwarded_secrets: Option<&'a [String]>,
}

fn local_path(p: &str) -> bool {
    (p.starts_with('/') && !p.starts_with("/volume/") && p != "/volume")
        || p.starts_with('~')
        || p.starts_with("../")
        || p.contains("/../")
}

/// Every practice warning, in the order of the platform guidance.
pub(crate) fn check(i: &Input) -> Vec<Finding> {
    let mut out = Vec::new();
    machine_local_paths(i, &mut out);
    slurm_sections(i, &mut out);
    implicit_counts(i, &mut out);
    changed_dtypes(i, &mut out);
    checkpoints_without_volume(i, &mut out);
    budgets(i, &mut out);
    wandb_key(i, &mut out);
    eval_sources(i, &mut out);
    secrets_in(i.raw, "", &mut out);
    out
}

/// Machine-local paths: `output_dir`, `run.dir`, TOML paths off the volume, a local SFT dataset.
fn machine_local_paths(i: &Input, out: &mut Vec<Finding>) {
    let v = i.view;
    let raw = i.raw;
    let rl = i.mode == Mode::Rl;
    if raw.contains_key("output_dir") {
        out.push(Finding::warning("output_dir", "output_dir is set").hint("Hosted runs write under the platform's run directory (on the volume: runs/<runId>/); remove output_dir."));
    }
    if get(raw, "run.dir").is_some() {
        out.push(
            Finding::warning("run.dir", "run.dir is set")
                .hint("The platform chooses the run directory of a hosted run; remove run.dir."),
        );
    }
    let mut skip: Vec<&str> = vec!["output_dir", "run.dir"];
    if !rl {
        // Hosted SFT's dataset gets its own message below.
        skip.push("data.name");
    }
    // Every string as written that reads as a local path — taskset arguments and free-form
    // tables included, which the schema types as plain strings.
    let written = crate::local_paths::findings(raw, &skip);
    let mut warned: Vec<String> = crate::local_paths::strings(raw)
        .into_iter()
        .filter(|(p, _)| written.iter().any(|f| &f.path == p))
        .map(|(_, v)| v)
        .collect();
    out.extend(written);
    // Fields the schema types as paths, after propagation: any absolute path off the volume
    // (a value warned about where it was written is not repeated at its propagated place).
    for (path, value) in i.path_values {
        if skip.contains(&path.as_str()) || warned.contains(value) {
            continue;
        }
        if local_path(value) {
            out.push(
                Finding::warning(path.as_str(), format!("{path} points at a machine-local path {}: a path in TOML does not upload the file", show("path", value)))
                    .hint("Files named by a TOML path are not uploaded with the config; a hosted run cannot read them. Put data on the volume (/volume/...) or leave the key at its default."),
            );
            warned.push(value.clone());
        }
    }
    if !rl
        && v.tag("data") == Some("sft")
        && let Some(name) = v.raw("data.name").and_then(Value::as_str)
    {
        if local_path(name) || name.starts_with("./") {
            out.push(Finding::warning("data.name", format!("data.name {} is a local path", show("name", name))).hint("Hosted SFT reads datasets from the volume: upload it and use /volume/datasets/<name> or datasets/<name>."));
        } else if i.hosted.volume.is_none()
            && !name.starts_with("datasets/")
            && !name.starts_with("/volume/")
        {
            out.push(Finding::info("data.name", "hosted SFT reads datasets from the mounted volume").hint("Per the platform docs, data.name should be /volume/datasets/<name> or datasets/<name> with `volume` set; without a volume only fake data is guaranteed to work."));
        }
    }
}

/// SLURM launcher sections, which the platform manages.
fn slurm_sections(i: &Input, out: &mut Vec<Finding>) {
    let raw = i.raw;
    for p in ["slurm", "inference.slurm"] {
        if get(raw, p).is_some() {
            out.push(Finding::warning(p, format!("[{p}] is a SLURM launcher setting")).hint("The platform manages placement of hosted runs; remove it (multi-node runs get an empty [slurm] injected)."));
        }
    }
}

/// `[deployment]` GPU or node counts left to their defaults.
fn implicit_counts(i: &Input, out: &mut Vec<Finding>) {
    let v = i.view;
    let raw = i.raw;
    let rl = i.mode == Mode::Rl;
    let deploy = v.tag("deployment").unwrap_or("single_node");
    let counts: &[&str] = match (rl, deploy) {
        (true, "single_node") => &["num_train_gpus", "num_infer_gpus"],
        (true, _) => &["num_infer_nodes"],
        (false, "single_node") if v.raw("inference").is_some() => {
            &["num_train_gpus", "num_infer_gpus"]
        }
        (false, "single_node") => &["num_train_gpus"],
        (false, _) => &["num_train_nodes"],
    };
    for k in counts {
        let p = join("deployment", k);
        let alias = match *k {
            "num_infer_gpus" => "deployment.num_eval_gpus",
            "num_infer_nodes" => "deployment.num_eval_nodes",
            _ => "",
        };
        if get(raw, &p).is_none() && (alias.is_empty() || get(raw, alias).is_none()) {
            let default = v.int(&p).map_or("derived".to_string(), |n| n.to_string());
            out.push(
                Finding::warning(
                    p.as_str(),
                    format!("deployment.{k} is not set (defaults to {default})"),
                )
                .hint(
                    "State GPU counts explicitly in [deployment] so the cost is what you expect.",
                ),
            );
        }
    }
}

/// Training dtypes changed from float32 (a VLM needs bf16, so that is no surprise).
fn changed_dtypes(i: &Input, out: &mut Vec<Finding>) {
    let v = i.view;
    let raw = i.raw;
    let rl = i.mode == Mode::Rl;
    let model = if rl { "trainer.model" } else { "model" };
    if !v.on(&join(model, "vlm")) {
        for k in ["optimization_dtype", "reduce_dtype"] {
            let p = join(model, k);
            if get(raw, &p).is_some() && v.str(&p).is_some_and(|d| d != "float32") {
                out.push(Finding::warning(p.as_str(), format!("{k} is changed from float32")).hint("The platform guidance keeps optimizer and reduction dtypes at float32; lower precision can destabilise training."));
            }
        }
    }
}

/// Checkpoints without a volume to keep them.
fn checkpoints_without_volume(i: &Input, out: &mut Vec<Finding>) {
    let v = i.view;
    let rl = i.mode == Mode::Rl;
    let ckpt = if rl {
        v.on("trainer.ckpt")
    } else {
        v.on("ckpt")
    };
    if ckpt && i.hosted.volume.is_none() {
        out.push(Finding::warning("ckpt", "[ckpt] is enabled but no volume is named: the checkpoints are not kept where fetch_checkpoint (or a resume) can reach them").hint("Set `volume = \"NAME\"` (or plan_run's `volume`) so checkpoints are written to the volume under runs/<runId>/, outlive the run, and can be fetched or resumed from."));
    }
}

/// The step budget, and sizes that are schema-valid but cannot train.
fn budgets(i: &Input, out: &mut Vec<Finding>) {
    let v = i.view;
    let raw = i.raw;
    let rl = i.mode == Mode::Rl;
    let steps_path = if rl { "trainer.max_steps" } else { "max_steps" };
    match v.int(steps_path) {
        None if v.raw(steps_path).is_none_or(crate::value::is_none) => out.push(Finding::warning("max_steps", "max_steps is not set: the run trains until it is stopped").hint("Set max_steps; for a first run, a small smoke budget (e.g. 10–20 steps) shows the config works before a long, billable run.")),
        Some(s) if s <= 0 => out.push(Finding::warning("max_steps", format!("max_steps = {s} is schema-valid but trains nothing useful")).hint("Set a positive step budget.")),
        Some(s) if s > 500 => out.push(Finding::info("max_steps", format!("max_steps = {s}")).hint("If this is the first run of this config, try a smoke run with a small max_steps first.")),
        _ => {}
    }
    let seq = if rl {
        "trainer.model.seq_len"
    } else {
        "data.seq_len"
    };
    if v.int(seq).is_some_and(|s| s <= 0) {
        out.push(
            Finding::warning(seq, "seq_len is not positive")
                .hint("Set a positive sequence length."),
        );
    }
    for k in ["num_train_gpus", "num_infer_gpus"] {
        let p = join("deployment", k);
        if get(raw, &p).is_some()
            && v.int(&p)
                .is_some_and(|n| n < 0 || (k == "num_train_gpus" && n == 0))
        {
            out.push(
                Finding::warning(
                    p.as_str(),
                    format!(
                        "deployment.{k} = {} is schema-valid but cannot run",
                        v.int(&p).unwrap_or_default()
                    ),
                )
                .hint("Use a positive GPU count."),
            );
        }
    }
}

/// W&B monitoring without `WANDB_API_KEY` forwarded.
fn wandb_key(i: &Input, out: &mut Vec<Finding>) {
    let v = i.view;
    let raw = i.raw;
    let rl = i.mode == Mode::Rl;
    let wandb = if rl {
        v.on("trainer.monitors.wandb") || v.on("orchestrator.monitors.wandb")
    } else {
        v.on("monitors.wandb")
    };
    if wandb {
        let path = if raw.get("monitors").is_some() {
            "monitors.wandb"
        } else if rl {
            "trainer.monitors.wandb"
        } else {
            "monitors.wandb"
        };
        match i.forwarded_secrets {
            Some(names) if !names.iter().any(|n| n == "WANDB_API_KEY") => out.push(Finding::warning(path, "W&B monitoring is on but WANDB_API_KEY is not forwarded").hint("Forward the secret *name* WANDB_API_KEY when launching, or the W&B logger cannot log in.")),
            Some(_) => {}
            None => out.push(Finding::info(path, "W&B monitoring is on").hint("Forward WANDB_API_KEY (by name) when launching.")),
        }
    }
}

/// Train and eval sources kept separate (RL); online eval in hosted SFT.
fn eval_sources(i: &Input, out: &mut Vec<Finding>) {
    let v = i.view;
    let raw = i.raw;
    let rl = i.mode == Mode::Rl;
    if rl {
        let list = |p: &str| {
            v.raw(p)
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default()
        };
        let strip_task = |s: &Value| -> Option<Table> {
            let mut t = s.get("env")?.get("taskset")?.as_table()?.clone();
            t.remove("task");
            Some(t)
        };
        let train: Vec<Table> = list("orchestrator.train.source")
            .iter()
            .filter_map(strip_task)
            .collect();
        for (n, e) in list("orchestrator.eval.source").iter().enumerate() {
            if let Some(t) = strip_task(e)
                && train.contains(&t)
            {
                out.push(Finding::warning(format!("orchestrator.eval.source.{n}.env.taskset"), "this eval source uses the same taskset settings as a train source").hint("Evaluate on held-out data: give the eval taskset a different split or dataset (unless the taskset separates splits itself)."));
            }
        }
        if v.raw("orchestrator").is_some_and(Value::is_table)
            && list("orchestrator.train.source").is_empty()
        {
            out.push(Finding::warning("orchestrator.train.source", "no [[orchestrator.train.source]]: the orchestrator has nothing to train on").hint("Add a train source with `[orchestrator.train.source.env.taskset] id = \"...\"`."));
        }
    } else if ["eval", "inference", "weight_broadcast"]
        .iter()
        .any(|k| raw.contains_key(*k))
    {
        out.push(Finding::info("eval", "hosted SFT with online eval ([eval]/[inference]/[weight_broadcast])").hint("The CLI does not validate these blocks locally; the platform validates them on submit, and whether it accepts online eval for hosted SFT depends on its version."));
    }
}

/// Credential-shaped strings, and non-empty values under secret-looking names, anywhere in
/// the file. The value is never quoted.
fn secrets_in(t: &Table, base: &str, out: &mut Vec<Finding>) {
    for (k, val) in t {
        let p = join(base, k);
        match val {
            Value::Table(inner) => secrets_in(inner, &p, out),
            Value::Array(items) => {
                for (n, item) in items.iter().enumerate() {
                    let ip = join(&p, &n.to_string());
                    match item {
                        Value::Table(inner) => secrets_in(inner, &ip, out),
                        Value::String(s) => secret_string(k, s, &ip, out),
                        _ => {}
                    }
                }
            }
            Value::String(s) => secret_string(k, s, &p, out),
            _ => {}
        }
    }
}

fn secret_string(key: &str, s: &str, path: &str, out: &mut Vec<Finding>) {
    if wandb_key_shaped(path, s) {
        out.push(Finding::error(path, format!("{path} holds what looks like a W&B API key (40 hex characters under [monitors.wandb])")).hint("Refused: the config is sent to the platform as written. Remove the key, forward WANDB_API_KEY by name when launching, and rotate the key. (40 hex elsewhere, such as a commit SHA, is fine.)"));
    } else if let Some(kind) = credential_kind(s) {
        out.push(Finding::warning(path, format!("{path} holds what looks like {kind}")).hint("The config is sent to the platform as written: never put a credential in it. Forward secrets by name (WANDB_API_KEY, HF_TOKEN) instead, and rotate this one."));
    } else if is_secret_name(key) && !s.is_empty() && s != "None" {
        out.push(Finding::warning(path, format!("`{key}` looks like a secret written into the config")).hint("Forward secrets by name (WANDB_API_KEY, HF_TOKEN) instead of writing them in the TOML."));
    }
}

/// 40 hex characters under a `monitors.wandb` table: where a W&B key gets pasted. The same
/// shape elsewhere is a commit SHA.
fn wandb_key_shaped(path: &str, s: &str) -> bool {
    let v = s.trim();
    v.len() == 40
        && v.bytes().all(|b| b.is_ascii_hexdigit())
        && path
            .split('.')
            .collect::<Vec<_>>()
            .windows(2)
            .any(|w| w == ["monitors", "wandb"])
}
