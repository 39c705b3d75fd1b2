//! Shared → sub-config propagation of `RLConfig` (§4.2, rule R0): a shared value fills a
//! sub-config key that is absent, a conflicting duplicate is an error, and presence-only
//! blocks (`[ckpt]`, `[monitors.*]`) switch the sub-level blocks on. Filled values are then
//! checked where they land, as the schema does.

use toml::{Table, Value};

use crate::report::Finding;
use crate::secrets::show_value;
use crate::value::{get, is_none, parent_mut};
use crate::walk::Provenance;

/// Leaf (and whole-table) fills: shared path → sub-config paths.
const FILLS: &[(&str, &[&str])] = &[
    (
        "model.name",
        &[
            "trainer.model.name",
            "inference.vllm.model",
            "orchestrator.model.name",
        ],
    ),
    (
        "model.vlm",
        &["trainer.model.vlm", "orchestrator.model.vlm"],
    ),
    (
        "log.level",
        &[
            "trainer.log.level",
            "orchestrator.log.level",
            "inference.log.level",
        ],
    ),
    (
        "log.json_logging",
        &[
            "trainer.log.json_logging",
            "orchestrator.log.json_logging",
            "inference.log.json_logging",
        ],
    ),
    ("ckpt.output_dir", &["trainer.ckpt.output_dir"]),
    (
        "ckpt.interval",
        &["trainer.ckpt.interval", "orchestrator.ckpt.interval"],
    ),
    (
        "ckpt.keep_last",
        &["trainer.ckpt.keep_last", "orchestrator.ckpt.keep_last"],
    ),
    (
        "ckpt.keep_interval",
        &[
            "trainer.ckpt.keep_interval",
            "orchestrator.ckpt.keep_interval",
        ],
    ),
    (
        "monitors.wandb.project",
        &[
            "trainer.monitors.wandb.project",
            "orchestrator.monitors.wandb.project",
        ],
    ),
    (
        "monitors.wandb.entity",
        &[
            "trainer.monitors.wandb.entity",
            "orchestrator.monitors.wandb.entity",
        ],
    ),
    (
        "monitors.wandb.name",
        &[
            "trainer.monitors.wandb.name",
            "orchestrator.monitors.wandb.name",
        ],
    ),
    (
        "monitors.wandb.group",
        &[
            "trainer.monitors.wandb.group",
            "orchestrator.monitors.wandb.group",
        ],
    ),
    (
        "monitors.wandb.tags",
        &[
            "trainer.monitors.wandb.tags",
            "orchestrator.monitors.wandb.tags",
        ],
    ),
    (
        "monitors.wandb.offline",
        &[
            "trainer.monitors.wandb.offline",
            "orchestrator.monitors.wandb.offline",
        ],
    ),
    (
        "monitors.file.path",
        &[
            "trainer.monitors.file.path",
            "orchestrator.monitors.file.path",
        ],
    ),
    ("monitors.prime.name", &["orchestrator.monitors.prime.name"]),
    (
        "tokenizer.name",
        &["trainer.tokenizer.name", "orchestrator.tokenizer.name"],
    ),
    (
        "tokenizer.trust_remote_code",
        &[
            "trainer.tokenizer.trust_remote_code",
            "orchestrator.tokenizer.trust_remote_code",
        ],
    ),
    (
        "tokenizer.chat_template",
        &[
            "trainer.tokenizer.chat_template",
            "orchestrator.tokenizer.chat_template",
            "inference.vllm.chat_template",
        ],
    ),
    (
        "rollout_transport",
        &[
            "trainer.rollout_transport",
            "orchestrator.rollout_transport",
        ],
    ),
    (
        "max_steps",
        &["trainer.max_steps", "orchestrator.max_steps"],
    ),
    (
        "seq_len",
        &["trainer.model.seq_len", "orchestrator.seq_len"],
    ),
    ("slurm", &["inference.slurm"]),
];

/// Presence-only blocks: a shared table turns the sub-level blocks on.
const PRESENCE: &[(&str, &[&str])] = &[
    ("ckpt", &["trainer.ckpt", "orchestrator.ckpt"]),
    (
        "monitors.wandb",
        &["trainer.monitors.wandb", "orchestrator.monitors.wandb"],
    ),
    (
        "monitors.file",
        &["trainer.monitors.file", "orchestrator.monitors.file"],
    ),
    ("monitors.prime", &["orchestrator.monitors.prime"]),
];

fn top_exists(doc: &Table, dst: &str) -> bool {
    let top = dst.split('.').next().unwrap_or(dst);
    doc.get(top).is_some_and(Value::is_table)
}

/// Set `dst` to `value` if it is absent (creating tables on the way). Returns whether it
/// was filled.
fn fill(doc: &mut Table, dst: &str, value: Value) -> bool {
    let Some((parent, key)) = parent_mut(doc, dst, true) else {
        return false;
    };
    if parent.contains_key(&key) {
        return false;
    }
    parent.insert(key, value);
    true
}

/// Propagate shared values into the sub-configs of an RL document. Conflicts become
/// findings; the provenance of each filled path is returned.
pub(crate) fn propagate(doc: &mut Table, out: &mut Vec<Finding>) -> Provenance {
    let mut provenance = Provenance::new();
    for (src, dsts) in PRESENCE {
        let Some(v) = get(doc, src).cloned() else {
            continue;
        };
        let filler = if is_none(&v) {
            Value::String("None".into())
        } else if v.is_table() {
            Value::Table(Table::new())
        } else {
            continue;
        };
        for dst in *dsts {
            if top_exists(doc, dst) {
                fill(doc, dst, filler.clone());
            }
        }
    }
    let mut conflicts = Vec::new();
    for (src, dsts) in FILLS {
        let Some(v) = get(doc, src).cloned() else {
            continue;
        };
        for dst in *dsts {
            if !top_exists(doc, dst) {
                continue;
            }
            match get(doc, dst) {
                Some(existing) if *existing != v => {
                    let key = src.rsplit('.').next().unwrap_or(src);
                    conflicts.push(format!(
                        "`{src}` = {} vs `{dst}` = {}",
                        show_value(key, &v),
                        show_value(key, existing)
                    ));
                }
                Some(_) => {}
                None => {
                    if fill(doc, dst, v.clone()) {
                        provenance.push((dst.to_string(), src.to_string()));
                    }
                }
            }
        }
    }
    if !conflicts.is_empty() {
        out.push(
            Finding::error(
                "",
                format!(
                    "Shared config conflicts with matching sub-config field(s): {}",
                    conflicts.join("; ")
                ),
            )
            .hint("Pick one place to set each value: duplicating it with a different value is ambiguous. Keep the shared key, or remove it and set the sub-config keys."),
        );
    }
    // Cascade: the trainer's chat template reaches vLLM when vLLM has none.
    if let Some(t) = get(doc, "trainer.tokenizer.chat_template").cloned()
        && top_exists(doc, "inference.vllm")
        && get(doc, "inference.vllm.chat_template").is_none()
        && fill(doc, "inference.vllm.chat_template", t)
    {
        provenance.push((
            "inference.vllm.chat_template".into(),
            "trainer.tokenizer.chat_template".into(),
        ));
    }
    // R6: the shared [resume] is copied into trainer and orchestrator.
    if let Some(r) = doc.get("resume").cloned()
        && r.is_table()
    {
        for dst in ["trainer.resume", "orchestrator.resume"] {
            if top_exists(doc, dst) && fill(doc, dst, r.clone()) {
                provenance.push((dst.into(), "resume".into()));
            }
        }
    }
    provenance
}
