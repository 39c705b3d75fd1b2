//! MCP resources and prompts. Resources: `factory://runs/{run_id}` (the run's status as JSON,
//! as `get_run` gives it) and `factory://runs/{run_id}/logs` (a bounded tail of its primary
//! component's log), offered as templates. Prompts: `smoke_run` and `diagnose_failed_run`,
//! each listed only when the tools it names are served. Everything read is redacted.

use std::{future::Future, pin::Pin, sync::Arc};

use factory_platform::{LogComponent, LogsQuery, PlatformError};
use rmcp::{
    ErrorData as McpError,
    model::{
        GetPromptResult, Prompt, PromptArgument, PromptMessage, ReadResourceResult,
        ResourceContents, ResourceTemplate, Role,
    },
};
use serde_json::Value;

use crate::{
    run_view::{bound_lines, fetch_run, run_detail},
    state::{AppState, check_id},
};

/// Reads a `factory://` resource against the shared state.
pub type ResourceReader<S> = Arc<
    dyn Fn(
            Arc<S>,
            String,
        ) -> Pin<Box<dyn Future<Output = Result<ReadResourceResult, McpError>> + Send>>
        + Send
        + Sync,
>;

const SCHEME: &str = "factory://runs/";
/// Lines of the log tail a `…/logs` resource holds (bounded by bytes too).
const LOG_TAIL: u32 = 200;
const LOG_BYTES: usize = 32 * 1024;

/// The resource templates this server reads.
pub fn templates() -> Vec<ResourceTemplate> {
    vec![
        ResourceTemplate::new("factory://runs/{run_id}", "run")
            .with_title("Run status")
            .with_description("A training run's status, steps, GPUs, timestamps and failure analysis (JSON, as get_run).")
            .with_mime_type("application/json"),
        ResourceTemplate::new("factory://runs/{run_id}/logs", "run-logs")
            .with_title("Run log tail")
            .with_description("The last 200 lines (at most 32 KiB) of the run's primary component log.")
            .with_mime_type("text/plain"),
    ]
}

/// A URI as it may appear in an error: one line. Not cut here: the server redacts the whole
/// message first and then bounds it (a cut could split a secret value past recognition).
pub fn shown_uri(uri: &str) -> String {
    uri.chars()
        .take(4096)
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

fn not_found(uri: &str, why: &str) -> McpError {
    McpError::resource_not_found(
        format!("resource not found: {} ({why})", shown_uri(uri)),
        None,
    )
}

/// The reader `build_server` installs.
pub fn reader() -> ResourceReader<AppState> {
    Arc::new(|state, uri| Box::pin(async move { read(&state, &uri).await }))
}

/// Read one `factory://runs/…` resource.
pub async fn read(state: &AppState, uri: &str) -> Result<ReadResourceResult, McpError> {
    let Some(rest) = uri.strip_prefix(SCHEME) else {
        return Err(not_found(
            uri,
            "this server serves factory://runs/{run_id} and factory://runs/{run_id}/logs",
        ));
    };
    let (run_id, logs) = match rest.split_once('/') {
        None => (rest, false),
        Some((id, "logs")) => (id, true),
        Some(_) => return Err(not_found(uri, "the only sub-resource of a run is /logs")),
    };
    if check_id("run", run_id).is_err() {
        return Err(not_found(uri, "not a run id"));
    }
    let redact = |s: &str| state.redactor.redact(s).into_owned();
    let text = if logs {
        let query = LogsQuery {
            tail_lines: LOG_TAIL,
            search: None,
            regex: false,
            level: None,
            since_seconds: None,
            // The platform's default: the primary component (orchestrator, or trainer for SFT).
            component: LogComponent::Orchestrator,
            env_name: None,
            pod_index: None,
        };
        let platform = state
            .platform()
            .map_err(|e| McpError::internal_error(redact(&e.message), None))?;
        match platform.get_logs(run_id, &query).await {
            Ok(r) => {
                let (lines, _) = bound_lines(&r.logs, LOG_BYTES);
                redact(&lines.join("\n"))
            }
            Err(PlatformError::NotStartedYet { .. }) => {
                format!("Run {run_id} has not started yet: no logs.")
            }
            Err(PlatformError::NotFound { .. }) => {
                return Err(not_found(uri, "no such run visible to this key"));
            }
            Err(e) => {
                return Err(McpError::internal_error(
                    redact(&format!(
                        "Failed to read the logs of run {run_id}: {e}. Read it again in a moment."
                    )),
                    None,
                ));
            }
        }
    } else {
        let run = match fetch_run(state, run_id).await {
            Ok(r) => r,
            Err(e) if e.message.contains("was not found") => {
                return Err(not_found(uri, "no such run visible to this key"));
            }
            Err(e) => return Err(McpError::internal_error(redact(&e.message), None)),
        };
        let url = state
            .platform()
            .map(|p| p.settings().run_dashboard_url(&run.id))
            .unwrap_or_default();
        let mut value = serde_json::to_value(run_detail(&run, url)).unwrap_or(Value::Null);
        state.redactor.redact_json(&mut value);
        serde_json::to_string_pretty(&value).unwrap_or_default()
    };
    let mime = if logs {
        "text/plain"
    } else {
        "application/json"
    };
    Ok(ReadResourceResult::new(vec![
        ResourceContents::text(text, state.redactor.redact(uri).into_owned()).with_mime_type(mime),
    ]))
}

// ---- prompts ---------------------------------------------------------------------------------

struct PromptSpec {
    name: &'static str,
    title: &'static str,
    description: &'static str,
    /// (name, description, required)
    arguments: &'static [(&'static str, &'static str, bool)],
    /// The tools the prompt asks the assistant to use: it is listed only when all are served.
    tools: &'static [&'static str],
}

const PROMPTS: &[PromptSpec] = &[
    PromptSpec {
        name: "smoke_run",
        title: "Smoke-test a config",
        description: "Validate a config, plan and launch it with a small step budget, and watch it to the end.",
        arguments: &[
            (
                "config_path",
                "Path of the prime-rl TOML under the workspace.",
                true,
            ),
            (
                "max_steps",
                "Step budget of the smoke run (default 5).",
                false,
            ),
            (
                "team_id",
                "Team to launch for (default: the active owner).",
                false,
            ),
        ],
        tools: &[
            "validate_config",
            "plan_run",
            "launch_run",
            "watch_run",
            "diagnose_run",
        ],
    },
    PromptSpec {
        name: "diagnose_failed_run",
        title: "Diagnose a failed run",
        description: "Find out why a run failed and propose a fix, without relaunching it.",
        arguments: &[("run_id", "The run id (from list_runs).", true)],
        tools: &["diagnose_run", "get_logs"],
    },
];

/// The prompts whose tools are all served.
pub fn prompts(served: impl Fn(&str) -> bool) -> Vec<Prompt> {
    PROMPTS
        .iter()
        .filter(|p| p.tools.iter().all(|t| served(t)))
        .map(|p| {
            let args = p
                .arguments
                .iter()
                .map(|(n, d, r)| {
                    PromptArgument::new(*n)
                        .with_description(*d)
                        .with_required(*r)
                })
                .collect();
            Prompt::new(p.name, Some(p.description), Some(args)).with_title(p.title)
        })
        .collect()
}

/// One argument as a bounded single-line string.
fn arg(
    args: Option<&serde_json::Map<String, Value>>,
    name: &str,
) -> Result<Option<String>, McpError> {
    let Some(v) = args.and_then(|a| a.get(name)) else {
        return Ok(None);
    };
    let s = match v {
        Value::String(s) => s.trim().to_string(),
        Value::Number(n) => n.to_string(),
        _ => {
            return Err(McpError::invalid_params(
                format!("prompt argument `{name}` must be a string"),
                None,
            ));
        }
    };
    if s.is_empty() {
        return Ok(None);
    }
    if s.len() > 512 || s.chars().any(char::is_control) {
        return Err(McpError::invalid_params(
            format!("prompt argument `{name}` must be one line of at most 512 characters"),
            None,
        ));
    }
    Ok(Some(s))
}

fn required(
    args: Option<&serde_json::Map<String, Value>>,
    name: &str,
    prompt: &str,
) -> Result<String, McpError> {
    arg(args, name)?.ok_or_else(|| {
        McpError::invalid_params(format!("prompt {prompt} needs the argument `{name}`"), None)
    })
}

/// Render a prompt.
pub fn get_prompt(
    name: &str,
    args: Option<&serde_json::Map<String, Value>>,
    served: impl Fn(&str) -> bool,
) -> Result<GetPromptResult, McpError> {
    let Some(spec) = PROMPTS
        .iter()
        .find(|p| p.name == name && p.tools.iter().all(|t| served(t)))
    else {
        return Err(McpError::invalid_params(
            format!("prompt not found: {}", shown_uri(name)),
            None,
        ));
    };
    let text = match spec.name {
        "smoke_run" => {
            let path = required(args, "config_path", name)?;
            let steps = match arg(args, "max_steps")? {
                None => 5,
                Some(s) => s
                    .parse::<u32>()
                    .ok()
                    .filter(|n| (1..=100).contains(n))
                    .ok_or_else(|| {
                        McpError::invalid_params(
                            "max_steps must be a whole number from 1 to 100",
                            None,
                        )
                    })?,
            };
            let team = arg(args, "team_id")?
                .map(|t| format!(" with team_id \"{t}\""))
                .unwrap_or_default();
            format!(
                "Smoke-test the prime-rl config at `{path}` on Prime Intellect Model Factory, with a small step budget.\n\n\
                 1. Call validate_config with config_path \"{path}\". If it reports errors, stop and show them to me with their hints.\n\
                 2. Read the config and call plan_run with config_toml set to the same TOML but with the top-level `max_steps = {steps}`{team}. Show me the plan's summary: owner, model, GPUs, price per hour, expected length, side effects.\n\
                 3. Call launch_run with the plan_id. It is billable: I will be asked to confirm. If the server says to run `factory-mcp approve`, tell me and wait.\n\
                 4. Call watch_run on the new run (timeout_s 600) until it ends, and tell me how it went: steps done, final metrics (get_metrics).\n\
                 5. If it failed, stalled or timed out, call diagnose_run and tell me the cause and the next action. Do not launch again without asking me."
            )
        }
        _ => {
            let run_id = required(args, "run_id", name)?;
            if check_id("run", &run_id).is_err() {
                return Err(McpError::invalid_params(
                    "run_id must be a run id: letters, digits, '-' and '_'",
                    None,
                ));
            }
            format!(
                "Find out why the training run {run_id} failed.\n\n\
                 1. Call diagnose_run with run_id \"{run_id}\": read its verdict, failure analysis, recent ERROR lines and suggested next action.\n\
                 2. If the cause is unclear, call get_logs for the components with errors (level ERROR, then the lines around them).\n\
                 3. Explain the root cause in two or three sentences, quoting the decisive log line.\n\
                 4. Propose a concrete fix to the config (the keys and values to change) and check it with validate_config if you edit a file.\n\
                 Do not launch, stop or delete anything: ask me first."
            )
        }
    };
    let mut result = GetPromptResult::new(vec![PromptMessage::new_text(Role::User, text)]);
    result.description = Some(spec.description.to_string());
    Ok(result)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prompts_are_listed_only_when_their_tools_are_served() {
        assert_eq!(prompts(|_| true).len(), 2);
        let read_only = prompts(|t| !matches!(t, "plan_run" | "launch_run"));
        assert_eq!(read_only.len(), 1);
        assert_eq!(read_only[0].name, "diagnose_failed_run");
    }

    #[test]
    fn prompts_render_their_arguments_and_refuse_bad_ones() {
        let mut a = serde_json::Map::new();
        a.insert("config_path".into(), "configs/rl.toml".into());
        a.insert("max_steps".into(), "3".into());
        let r = get_prompt("smoke_run", Some(&a), |_| true).unwrap();
        let text = serde_json::to_string(&r.messages).unwrap();
        assert!(text.contains("configs/rl.toml") && text.contains("max_steps = 3"));
        assert!(get_prompt("smoke_run", None, |_| true).is_err());
        a.insert("max_steps".into(), "5000".into());
        assert!(get_prompt("smoke_run", Some(&a), |_| true).is_err());
        let mut b = serde_json::Map::new();
        b.insert("run_id".into(), "../etc".into());
        assert!(get_prompt("diagnose_failed_run", Some(&b), |_| true).is_err());
        assert!(get_prompt("nope", None, |_| true).is_err());
    }
}
