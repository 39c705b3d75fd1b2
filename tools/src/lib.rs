//! The MCP surface: the tool catalogue (data), one module per toolset, each tool one value
//! (`server::ServerTool`: its catalogue record and its typed handler), and the rmcp
//! `ServerHandler` that serves them. Tools gather facts, ask `factory_policies` for every
//! decision, call `factory_platform`, and shape the result; failures are typed
//! (`error::ToolError`) and become `isError` answers in one place (`reply::answer`).
//!
//! Public because other crates use them: `AppState` (`state`), `build_server` and the server
//! (`server`, `reply`, `error`), the catalogue (`catalogue`, for gating), `watchdog::sweep`
//! (`factory-mcp guard`) and `validation` (`factory-mcp check-config`). Everything else is
//! the crate's own.

mod account;
pub mod approval_page;
mod artifacts;
mod audit;
mod budget;
pub mod catalogue;
mod checker_gate;
mod config_tool;
mod confirm;
pub mod error;
mod export;
mod figures;
mod ids;
mod launch;
mod lifecycle;
pub mod meter;
mod owner;
mod pacing;
pub mod ready;
pub mod reply;
mod resources;
mod run_view;
mod runs;
mod schema;
pub mod server;
mod spend;
pub mod state;
mod traces;
mod transfers;
pub mod validation;
pub mod watchdog;

use std::sync::Arc;

pub use server::FactoryServer;
pub use state::AppState;

/// Short guidance for assistants: how the tools fit together.
pub const INSTRUCTIONS: &str = "Operate Prime Intellect Model Factory training runs. Start with whoami (who and which team), then list_models/list_gpus. Check a config with validate_config, then plan_run (validates, prices, checks budgets and duplicates; changes nothing) and launch_run with the plan_id (billable: a person confirms it; retrying never duplicates a run); stop_run stops. Read runs with list_runs, get_run, get_progress, get_metrics, get_logs (bounded; pass component/level/search), list_checkpoints, list_traces; fetch_traces writes trace files under the workspace. Secrets are never passed as values: name them (WANDB_API_KEY, HF_TOKEN).";

/// Every tool this server implements, in catalogue order.
pub fn all_tools() -> Vec<server::ServerTool<AppState>> {
    let mut defs = account::tools();
    defs.extend(config_tool::tools());
    defs.extend(launch::tools());
    defs.extend(lifecycle::tools());
    defs.extend(runs::tools());
    defs.extend(traces::tools());
    defs.extend(artifacts::tools());
    defs
}

/// A server over `state` with the tools `enabled` lets through.
pub fn build_server(
    state: Arc<AppState>,
    enabled: impl Fn(&catalogue::ToolSpec) -> bool,
) -> FactoryServer<AppState> {
    FactoryServer::new(state, all_tools(), enabled, INSTRUCTIONS)
        .with_resources(resources::reader())
        .with_call_hook(Arc::new(|state, tool, subject, outcome| {
            Box::pin(async move {
                audit::with_subject(Some(subject), async {
                    audit::audit(
                        &state,
                        tool,
                        "call",
                        None,
                        None,
                        serde_json::json!({"outcome": outcome}),
                    )
                    .await;
                })
                .await;
            })
        }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedded_input_schemas() {
        let generated: serde_json::Map<String, serde_json::Value> = all_tools()
            .iter()
            .map(|t| {
                let schema = (t.generate_input_schema)();
                (
                    t.spec.name.to_string(),
                    serde_json::Value::Object((*schema).clone()),
                )
            })
            .collect();
        let text = serde_json::to_string_pretty(&generated).unwrap() + "\n";
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/src/input_schemas.json");
        if std::env::var_os("FACTORY_MCP_WRITE_SCHEMAS").is_some() {
            std::fs::write(path, &text).unwrap();
        }
        let embedded = std::fs::read_to_string(path).unwrap_or_default();
        assert!(
            embedded == text,
            "tools/src/input_schemas.json is not what the argument types generate: run \
             FACTORY_MCP_WRITE_SCHEMAS=1 cargo test -p factory-tools --lib embedded_input_schemas"
        );
        for t in all_tools() {
            assert_eq!(
                serde_json::Value::Object((*t.tool.input_schema).clone()),
                generated[t.spec.name],
                "{} serves the generated schema",
                t.spec.name
            );
        }
    }

    #[test]
    fn every_tool_is_in_the_catalogue_and_every_catalogue_entry_has_a_tool() {
        let defs = all_tools();
        let mut names: Vec<&str> = defs.iter().map(|d| d.spec.name).collect();
        names.sort_unstable();
        let mut listed: Vec<&str> = catalogue::CATALOGUE.iter().map(|t| t.name).collect();
        listed.sort_unstable();
        assert_eq!(names, listed);
    }

    #[test]
    fn each_toolset_module_registers_exactly_its_catalogue_toolset() {
        use catalogue::Toolset;
        for (toolset, defs) in [
            (Toolset::Account, account::tools()),
            (Toolset::Config, config_tool::tools()),
            (Toolset::Launch, launch::tools()),
            (Toolset::Lifecycle, lifecycle::tools()),
            (Toolset::Runs, runs::tools()),
            (Toolset::Traces, traces::tools()),
            (Toolset::Artifacts, artifacts::tools()),
        ] {
            let mut got: Vec<&str> = defs.iter().map(|d| d.spec.name).collect();
            got.sort_unstable();
            let mut want: Vec<&str> = catalogue::CATALOGUE
                .iter()
                .filter(|t| t.toolset == toolset)
                .map(|t| t.name)
                .collect();
            want.sort_unstable();
            assert_eq!(got, want, "{}", toolset.name());
        }
    }

    #[test]
    fn every_input_schema_is_portable_and_every_output_schema_is_an_object() {
        for def in all_tools() {
            let input = serde_json::Value::Object((*def.tool.input_schema).clone());
            let problems = schema::portability_violations(&input);
            assert!(
                problems.is_empty(),
                "{}: {problems:#?}\n{input:#}",
                def.spec.name
            );
            let output = def
                .tool
                .output_schema
                .as_ref()
                .expect("every tool has an output schema");
            let output = serde_json::Value::Object((**output).clone());
            let problems = schema::output_violations(&output);
            assert!(
                problems.is_empty(),
                "{} output: {problems:#?}",
                def.spec.name
            );
        }
    }

    #[test]
    fn every_tool_sets_all_four_hints_as_the_catalogue_says() {
        for def in all_tools() {
            let a = def.tool.annotations.as_ref().expect("annotations");
            let h = def.spec.hints;
            assert_eq!(a.read_only_hint, Some(h.read_only), "{}", def.spec.name);
            assert_eq!(a.destructive_hint, Some(h.destructive), "{}", def.spec.name);
            assert_eq!(a.idempotent_hint, Some(h.idempotent), "{}", def.spec.name);
            assert_eq!(a.open_world_hint, Some(h.open_world), "{}", def.spec.name);
        }
    }
}
