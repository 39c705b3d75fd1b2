//! The request a plan sends, built once: the arguments and the TOML resolved into a typed
//! [`RunSpec`] (the platform owns its wire shape and casing), and at dispatch time the wire
//! request with the secret values read from the server's environment.

use factory_platform::wire::runs::{CreateRunRequest, ResumeRunRequest, ResumeSpec, RunSpec};
use factory_policies::{
    forwarding::FORWARDABLE,
    launch,
    names::{self, NameKind},
};
use secrecy::SecretString;
use serde_json::{Map, Value, json};

use super::{PlanBody, PlannedRequest, plan::PlanRunArgs};
use crate::{error::ToolError, ids::generated_name, state::AppState};

/// Top-level keys the CLI strips from the config before sending it (§6.4).
const CLI_ONLY_KEYS: [&str; 8] = [
    "env_file",
    "env_files",
    "image_tag",
    "gpu_type",
    "volume",
    "volume_size",
    "source_ref",
    "type",
];

fn refuse(msg: impl Into<String>) -> ToolError {
    ToolError::bad_argument(msg)
}

/// A launch request resolved from the arguments and the TOML (arguments win).
pub(super) struct ResolvedLaunch {
    pub(super) spec: RunSpec,
    pub(super) run_name: String,
    pub(super) run_name_generated: bool,
    /// The digest of the submitted config without its name.
    pub(super) config_digest: String,
    pub(super) gpu_type: Option<String>,
    pub(super) image_tag: Option<String>,
    pub(super) source_ref: Option<String>,
    pub(super) volume_name: Option<String>,
    pub(super) volume_size: Option<String>,
    /// What was changed as the CLI changes it (deprecated keys dropped, …).
    pub(super) notes: Vec<String>,
}

/// Resolve the request exactly as the CLI builds it: CLI-only keys stripped, the run name from
/// the arguments, the TOML, or generated; `team` is the resolved owner.
pub(super) fn resolve_launch(
    args: &PlanRunArgs,
    doc: &toml::Table,
    sft: bool,
    model: Option<&str>,
    team: Option<String>,
) -> Result<ResolvedLaunch, ToolError> {
    let (mut config, notes) = submission_config(doc)?;
    let (run_name, generated) = match (&args.run_name, toml_str(doc, "name")) {
        (Some(n), _) => (n.clone(), false),
        (None, Some(n)) if !n.trim().is_empty() => (n, false),
        _ => (generated_name(model), true),
    };
    config.insert("name".into(), Value::String(run_name.clone()));
    let config_digest = launch::config_digest(&config);
    let pick = |arg: &Option<String>, key: &str| arg.clone().or_else(|| toml_str(doc, key));
    let gpu_type = pick(&args.gpu_type, "gpu_type");
    let image_tag = pick(&args.image_tag, "image_tag");
    let source_ref = pick(&args.source_ref, "source_ref");
    let volume_name = pick(&args.volume, "volume");
    let volume_size = pick(&args.volume_size, "volume_size");
    check_config_names(doc, &args.run_name)?;
    if volume_size.is_some() && volume_name.is_none() {
        return Err(refuse(
            "`volume_size` needs `volume` (the volume to create).",
        ));
    }
    let spec = RunSpec {
        config,
        sft,
        name: Some(run_name.clone()),
        team_id: team,
        image_tag: image_tag.clone(),
        gpu_type: gpu_type.clone(),
        volume: volume_name.clone(),
        source_ref: source_ref.clone(),
    };
    Ok(ResolvedLaunch {
        spec,
        run_name,
        run_name_generated: generated,
        config_digest,
        gpu_type,
        image_tag,
        source_ref,
        volume_name,
        volume_size,
        notes,
    })
}

/// The value of a secret the plan forwards, read from the server's environment now.
fn forwarded_secret(
    state: &AppState,
    body: &PlanBody,
    name: &str,
) -> Result<Option<SecretString>, ToolError> {
    if !body.env_names.iter().any(|n| n == name) {
        return Ok(None);
    }
    state.secret_value(name).map(Some).ok_or_else(|| {
        ToolError::unavailable(format!(
            "The plan forwards {name}, but the server has no value for it: set {name} in the server's environment (or secrets.env_file) and restart it. Nothing was dispatched."
        ))
    })
}

/// The wire request a dispatch sends.
pub(super) enum WireRequest {
    Create(Box<CreateRunRequest>),
    /// Resume the paused run with this id.
    Resume(String, ResumeRunRequest),
}

/// The plan's request with the secret values added (§6.4, §6.6).
pub(super) fn wire_request(state: &AppState, body: &PlanBody) -> Result<WireRequest, ToolError> {
    let [wandb, hf] = FORWARDABLE;
    let wandb = forwarded_secret(state, body, wandb)?;
    let hf = forwarded_secret(state, body, hf)?;
    Ok(match &body.request {
        PlannedRequest::Create(spec) => {
            WireRequest::Create(Box::new(spec.clone().into_request(wandb, hf)))
        }
        PlannedRequest::Resume(spec) => WireRequest::Resume(
            body.resume_from.clone().unwrap_or_default(),
            spec.clone().into_request(wandb, hf),
        ),
    })
}

/// The resume request a plan stores: only the GPU type and image tag (§6.6).
pub(super) fn resume_spec(gpu_type: Option<String>, image_tag: Option<String>) -> PlannedRequest {
    PlannedRequest::Resume(ResumeSpec {
        gpu_type,
        image_tag,
    })
}

/// TOML to JSON as the CLI's `json=` encoding would send it; dates cannot be encoded.
fn toml_to_json(v: &toml::Value, path: &str) -> Result<Value, ToolError> {
    Ok(match v {
        toml::Value::String(s) => Value::String(s.clone()),
        toml::Value::Integer(i) => json!(i),
        toml::Value::Float(f) => serde_json::Number::from_f64(*f)
            .map(Value::Number)
            .ok_or_else(|| refuse(format!("{path}: {f} cannot be sent as JSON")))?,
        toml::Value::Boolean(b) => Value::Bool(*b),
        toml::Value::Datetime(_) => {
            return Err(refuse(format!(
                "{path}: TOML dates cannot be sent to the platform (the CLI fails on them too); use a string"
            )));
        }
        toml::Value::Array(items) => Value::Array(
            items
                .iter()
                .enumerate()
                .map(|(i, x)| toml_to_json(x, &format!("{path}[{i}]")))
                .collect::<Result<_, _>>()?,
        ),
        toml::Value::Table(t) => {
            let mut m = Map::new();
            for (k, x) in t {
                let p = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                m.insert(k.clone(), toml_to_json(x, &p)?);
            }
            Value::Object(m)
        }
    })
}

/// The `config` the CLI sends: the TOML minus its CLI-only keys, with the deprecated
/// orchestrator keys dropped and `eval.eval_base_model` turned into `eval.skip_first_step`.
fn submission_config(doc: &toml::Table) -> Result<(Map<String, Value>, Vec<String>), ToolError> {
    let mut notes = Vec::new();
    let Value::Object(mut config) = toml_to_json(&toml::Value::Table(doc.clone()), "")? else {
        return Err(refuse("the config is not a table"));
    };
    for k in CLI_ONLY_KEYS {
        config.remove(k);
    }
    if let Some(Value::Object(orch)) = config.get_mut("orchestrator") {
        for k in ["trajectory_strategy", "trajectoryStrategy", "buffer"] {
            if orch.remove(k).is_some() {
                notes.push(format!(
                    "orchestrator.{k} is deprecated and was dropped, as the CLI does"
                ));
            }
        }
        if let Some(Value::Object(eval)) = orch.get_mut("eval")
            && let Some(v) = eval.remove("eval_base_model")
        {
            let skip = !v.as_bool().unwrap_or(true);
            eval.insert("skip_first_step".into(), Value::Bool(skip));
            notes.push(
                "orchestrator.eval.eval_base_model became eval.skip_first_step, as the CLI does"
                    .into(),
            );
        }
    }
    Ok((config, notes))
}

fn toml_str(doc: &toml::Table, key: &str) -> Option<String> {
    doc.get(key).and_then(|v| v.as_str()).map(str::to_owned)
}

/// The names a plan carries follow their character rules (`factory_policies::names`): the
/// arguments' values, checked before anything else.
pub(super) fn check_argument_names(args: &PlanRunArgs) -> Result<(), ToolError> {
    for (kind, key, value) in [
        (NameKind::RunName, "run_name", &args.run_name),
        (NameKind::ImageTag, "image_tag", &args.image_tag),
        (NameKind::Volume, "volume", &args.volume),
        (NameKind::VolumeSize, "volume_size", &args.volume_size),
        (NameKind::SourceRef, "source_ref", &args.source_ref),
    ] {
        if let Some(v) = value {
            names::check(kind, v, &format!("The argument `{key}`"))
                .map_err(|e| ToolError::bad_argument(e.to_string()))?;
        }
    }
    Ok(())
}

/// The same rules for the values the TOML sets (an argument's value was merged into the TOML
/// and already checked). The run name from the TOML is checked unless an argument replaces it.
fn check_config_names(doc: &toml::Table, run_name_arg: &Option<String>) -> Result<(), ToolError> {
    for (kind, key) in [
        (NameKind::RunName, "name"),
        (NameKind::ImageTag, "image_tag"),
        (NameKind::Volume, "volume"),
        (NameKind::VolumeSize, "volume_size"),
        (NameKind::SourceRef, "source_ref"),
    ] {
        if kind == NameKind::RunName && run_name_arg.is_some() {
            continue;
        }
        // Only string values name anything (an empty `name` means "generate one").
        let Some(text) = doc.get(key).and_then(toml::Value::as_str) else {
            continue;
        };
        if kind == NameKind::RunName && text.trim().is_empty() {
            continue;
        }
        names::check(kind, text, &format!("The config's `{key}`"))
            .map_err(|e| ToolError::bad_argument(e.to_string()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn submission_config_strips_what_the_cli_strips() {
        let doc: toml::Table = toml::from_str(
            r#"
            name = "x"
            gpu_type = "H200_141GB"
            volume = "v"
            image_tag = "t"
            max_steps = 3
            [orchestrator]
            buffer = {}
            batch_size = 8
            [orchestrator.eval]
            eval_base_model = false
            "#,
        )
        .unwrap();
        let (c, notes) = submission_config(&doc).unwrap();
        assert_eq!(c.get("name"), Some(&json!("x")));
        for k in ["gpu_type", "volume", "image_tag"] {
            assert!(!c.contains_key(k), "{k}");
        }
        assert_eq!(c["orchestrator"]["eval"]["skip_first_step"], json!(true));
        assert!(c["orchestrator"].get("buffer").is_none());
        assert_eq!(notes.len(), 2);
    }

    #[test]
    fn toml_dates_are_refused() {
        let doc: toml::Table = toml::from_str("when = 1979-05-27T07:32:00Z").unwrap();
        assert!(submission_config(&doc).is_err());
    }
}
