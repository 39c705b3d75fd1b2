//! What the `prime` CLI does before the schema sees the file (§2–§3 of the reference and
//! `platform-api.md` §6.4): the retired shared-LoRA refusal, SFT/RL detection, and the
//! hosted-only top-level keys — checked, then stripped — plus the deprecated orchestrator keys
//! it cleans up and the `[k8s]` refusal of its schema worker.

use std::sync::LazyLock;

use regex::Regex;
use toml::{Table, Value};

use crate::report::{Finding, Mode};
use crate::secrets::show;

/// The hosted values the CLI takes out of the file (flags would win over them).
#[derive(Debug, Default, Clone)]
pub(crate) struct Hosted {
    pub gpu_type: Option<String>,
    pub volume: Option<String>,
    pub volume_size: Option<String>,
    pub source_ref: Option<String>,
}

const RETIRED_REASON: &str = "This is a shared LoRA training config (a top-level `model = \"...\"` or `[[env]]`). Shared LoRA training is no longer supported by `prime train run`.";

/// The CLI's refusal of the retired hosted shared-LoRA format, if the file has that shape.
pub(crate) fn retired_shape(doc: &Table) -> Vec<Finding> {
    let mut out = Vec::new();
    if doc.get("model").is_some_and(Value::is_str) {
        out.push(Finding::error("model", RETIRED_REASON).hint(
            "Write a prime-rl config: `[model] name = \"...\"` plus `[trainer]`, `[orchestrator]` and `[inference]` tables (see the reverse-text example).",
        ));
    }
    if let Some(Value::Array(items)) = doc.get("env")
        && items.iter().any(Value::is_table)
    {
        out.push(Finding::error("env", RETIRED_REASON).hint(
            "Environments are now `[[orchestrator.train.source]]` entries with `[orchestrator.train.source.env.taskset] id = \"...\"`.",
        ));
    }
    out
}

/// The CLI's mode: SFT when forced, or when `[data]` is present and neither `[trainer]` nor
/// `[orchestrator]` is.
pub(crate) fn detect_mode(doc: &Table, sft: bool) -> Mode {
    if sft
        || (doc.contains_key("data")
            && !doc.contains_key("trainer")
            && !doc.contains_key("orchestrator"))
    {
        Mode::Sft
    } else {
        Mode::Rl
    }
}

static SOURCE_REF: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"^[A-Za-z0-9][A-Za-z0-9._/-]{0,199}$").ok());
static GPU_TYPE: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"^[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*_[0-9]+GB$").ok());
static BINARY_SIZE: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"^[1-9][0-9]*(?:Ki|Mi|Gi|Ti|Pi)$").ok());
static DECIMAL_SIZE: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"^[1-9][0-9]*(?:k|M|G|T|P)$").ok());

fn matches(re: &LazyLock<Option<Regex>>, s: &str) -> bool {
    re.as_ref().is_some_and(|r| r.is_match(s))
}

/// Why a `source_ref` is refused by the CLI, if it is.
pub fn source_ref_problem(r: &str) -> Option<&'static str> {
    if r.starts_with("refs/") || r.starts_with("pull/") {
        return Some(
            "pull-request and refs/ names are not accepted; use a branch, tag or commit sha (or `--pr N`)",
        );
    }
    if !matches(&SOURCE_REF, r) {
        return Some(
            "must start with a letter or digit and contain only letters, digits, '.', '_', '/' and '-' (at most 200 characters)",
        );
    }
    if r.contains("..") || r.contains("//") || r.contains("/.") {
        return Some("must not contain '..', '//' or '/.'");
    }
    if r.ends_with('/') || r.ends_with('.') {
        return Some("must not end in '/' or '.'");
    }
    if r.split('/').any(|c| c.ends_with(".lock")) {
        return Some("no path component may end in '.lock'");
    }
    None
}

fn string_key(doc: &Table, key: &str, out: &mut Vec<Finding>) -> Option<String> {
    match doc.get(key)? {
        Value::String(s) => Some(s.clone()),
        other => {
            out.push(
                Finding::error(
                    key,
                    format!("{key} must be a string, got {}", other.type_str()),
                )
                .hint(format!("Quote it: {key} = \"...\".")),
            );
            None
        }
    }
}

/// Check and strip the hosted-only top-level keys (and clean the deprecated orchestrator
/// keys) as the CLI does before validating.
pub(crate) fn strip(doc: &mut Table, mode: Mode, out: &mut Vec<Finding>) -> Hosted {
    // image_tag only has to be a string here; the platform resolves it.
    let _ = string_key(doc, "image_tag", out);
    let mut h = Hosted {
        gpu_type: string_key(doc, "gpu_type", out),
        volume: string_key(doc, "volume", out),
        volume_size: string_key(doc, "volume_size", out),
        source_ref: string_key(doc, "source_ref", out),
    };

    if let Some(g) = &h.gpu_type
        && !matches(&GPU_TYPE, g)
    {
        out.push(
            Finding::warning("gpu_type", format!("gpu_type {} does not look like a platform GPU type", show("gpu_type", g)))
                .hint("GPU types look like \"H200_141GB\" or \"B200_180GB\"; `list_gpus` (or `prime train gpus`) lists the values."),
        );
    }
    if let Some(size) = &h.volume_size {
        if matches(&DECIMAL_SIZE, size) {
            out.push(
                Finding::warning(
                    "volume_size",
                    format!(
                        "volume_size {} uses a decimal unit",
                        show("volume_size", size)
                    ),
                )
                .hint("Sizes are normally binary units such as \"500Gi\" or \"2Ti\"."),
            );
        } else if !matches(&BINARY_SIZE, size) {
            out.push(
                Finding::error(
                    "volume_size",
                    format!("volume_size {} is not a size", show("volume_size", size)),
                )
                .hint("Write a size with a binary unit, such as \"500Gi\" or \"2Ti\"."),
            );
        }
        if h.volume.is_none() && doc.get("volume").is_none_or(|v| v.is_str()) {
            out.push(
                Finding::error("volume_size", "volume_size is set without volume")
                    .hint("`prime train run` refuses a size without a volume: add `volume = \"NAME\"` or remove volume_size."),
            );
        }
    }
    if let Some(r) = &h.source_ref
        && let Some(problem) = source_ref_problem(r)
    {
        out.push(
            Finding::error("source_ref", format!("source_ref {}: {problem}", show("source_ref", r)))
                .hint("source_ref is a prime-rl branch, tag or sha; overlays are restricted to allowlisted teams."),
        );
        h.source_ref = None;
    }
    for key in ["env_file", "env_files"] {
        let Some(v) = doc.get(key) else { continue };
        let ok = match v {
            Value::String(_) => true,
            Value::Array(items) => items.iter().all(Value::is_str),
            _ => false,
        };
        if !ok {
            out.push(Finding::error(
                key,
                format!("{key} must be a string or a list of strings"),
            ));
        }
        out.push(
            Finding::warning(key, format!("`{key}` names secret files"))
                .hint("factory-mcp does not read secret files from a config: pass the secret *names* (WANDB_API_KEY, HF_TOKEN) when launching; the server reads their values from its own environment."),
        );
    }
    if doc.contains_key("type") {
        out.push(
            Finding::warning("type", "top-level `type` is a legacy key and is ignored")
                .hint("The CLI strips it; remove it."),
        );
    }
    if let Some(name) = doc.get("name")
        && !name.is_str()
    {
        out.push(Finding::warning("name", "the run name should be a string"));
    }
    for key in [
        "image_tag",
        "gpu_type",
        "volume",
        "volume_size",
        "source_ref",
        "env_file",
        "env_files",
        "type",
        "name",
    ] {
        doc.remove(key);
    }

    // [k8s]: not stripped by the CLI; its schema worker refuses a non-empty one.
    if let Some(k8s) = doc.remove("k8s") {
        let empty = k8s.as_table().is_some_and(Table::is_empty);
        if !empty {
            out.push(
                Finding::error(
                    "k8s",
                    "[k8s] is not supported for hosted runs: Platform manages deployment settings",
                )
                .hint("Remove the [k8s] table."),
            );
        }
    }

    if mode == Mode::Rl
        && let Some(Value::Table(orch)) = doc.get_mut("orchestrator")
    {
        for key in ["trajectory_strategy", "trajectoryStrategy", "buffer"] {
            if orch.remove(key).is_some() {
                out.push(
                    Finding::warning(
                        format!("orchestrator.{key}"),
                        format!("`orchestrator.{key}` is deprecated and dropped by the CLI"),
                    )
                    .hint("Remove it."),
                );
            }
        }
        if let Some(Value::Table(eval)) = orch.get_mut("eval")
            && let Some(v) = eval.remove("eval_base_model")
        {
            out.push(
                Finding::warning(
                    "orchestrator.eval.eval_base_model",
                    "`eval_base_model` is deprecated; the CLI turns it into `skip_first_step`",
                )
                .hint("Use `skip_first_step = true` to skip the evaluation of the base model."),
            );
            if !eval.contains_key("skip_first_step")
                && let Some(b) = crate::value::as_bool(&v)
            {
                eval.insert("skip_first_step".into(), Value::Boolean(!b));
            }
        }
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn source_ref_rules_follow_the_cli() {
        assert!(source_ref_problem("main").is_none());
        assert!(source_ref_problem("feature/x-1.2").is_none());
        assert!(source_ref_problem("refs/heads/main").is_some());
        assert!(source_ref_problem("pull/12/head").is_some());
        assert!(source_ref_problem("a..b").is_some());
        assert!(source_ref_problem("a/").is_some());
        assert!(source_ref_problem("a/b.lock/c").is_some());
        assert!(source_ref_problem("-x").is_some());
        assert!(source_ref_problem(&"a".repeat(201)).is_some());
    }
}
