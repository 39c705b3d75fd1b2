//! What a cut answer advises, tool by tool: how to get the rest of an answer that was over the
//! result cap (`[results] max_bytes`, applied in `reply::answer`) — a page, a cursor, a narrower
//! filter, or a file. A tool's call-specific advice (`Outcome::with_rest`: the next page, the
//! cursor it holds) wins over this table; a tool in neither gets the generic advice.

use crate::catalogue::{self, ToolSpec};

/// Each tool's advice. Arguments are named in backticks, and a test holds each to its tool's
/// input schema, so renaming an argument cannot leave advice that fails.
const REST: &[(&ToolSpec, &str)] = &[
    (
        &catalogue::GET_LOGS,
        "Call get_logs with a smaller `tail` or `max_bytes`, a `level` or `search` filter, or one `component`; `cursor` continues where an answer stopped.",
    ),
    (
        &catalogue::GET_METRICS,
        "Call get_metrics with a step range (`min_step`, `max_step`) or a smaller `limit`.",
    ),
    (
        &catalogue::GET_ROLLOUTS,
        "Call get_rollouts with a smaller `limit`, then the next `page`.",
    ),
    (
        &catalogue::GET_DISTRIBUTIONS,
        "Call get_distributions for one `type` at one `step`.",
    ),
    (
        &catalogue::LIST_TRACES,
        "Call list_traces with a smaller `limit` and follow its next cursor (`cursor`), or narrow it by `step` or `kind`.",
    ),
    (
        &catalogue::FETCH_TRACES,
        "The files were written. For a smaller answer call fetch_traces with one `step` or `kind`; files already complete are skipped.",
    ),
    (
        &catalogue::EXPORT_LOGS,
        "The files were written: they are in `dest_dir`, one file per component, beside the export's state file.",
    ),
    (
        &catalogue::FETCH_CHECKPOINT,
        "The files were written. For a smaller answer call fetch_checkpoint with `paths` naming fewer files; files already complete are skipped.",
    ),
    (
        &catalogue::LIST_RUNS,
        "Call list_runs with a smaller `limit` and then a `page`, or narrow it by `status` or an owner (`team_id`, `personal`).",
    ),
    (
        &catalogue::LIST_MODELS,
        "Call list_models for one owner (`team_id` or `personal`).",
    ),
    (
        &catalogue::LIST_GPUS,
        "Call list_gpus for one owner (`team_id` or `personal`).",
    ),
    (
        &catalogue::LIST_VOLUMES,
        "Call list_volumes for one owner (`team_id` or `personal`).",
    ),
];

/// The advice of `tool`'s table entry, if it has one.
pub(crate) fn how_to_get_the_rest(tool: &str) -> Option<&'static str> {
    REST.iter()
        .find(|(spec, _)| spec.name == tool)
        .map(|(_, advice)| *advice)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The words in backticks.
    fn arguments(advice: &str) -> Vec<&str> {
        advice.split('`').skip(1).step_by(2).collect()
    }

    #[test]
    fn every_argument_an_advice_names_is_one_its_tool_takes() {
        let tools = crate::all_tools();
        for (spec, advice) in REST {
            let tool = tools
                .iter()
                .find(|t| t.spec.name == spec.name)
                .expect("a served tool");
            let props = tool.tool.input_schema.get("properties").cloned();
            let props = props.unwrap_or_default();
            let named = arguments(advice);
            assert!(!named.is_empty(), "{}: names no argument", spec.name);
            for arg in named {
                assert!(
                    props.get(arg).is_some(),
                    "{}'s advice names `{arg}`, which its input schema lacks: {advice}",
                    spec.name
                );
            }
        }
    }

    #[test]
    fn a_tool_has_at_most_one_advice_and_others_have_none() {
        for (spec, _) in REST {
            assert_eq!(REST.iter().filter(|(s, _)| s.name == spec.name).count(), 1);
        }
        assert!(
            how_to_get_the_rest("get_logs")
                .unwrap()
                .contains("`cursor`")
        );
        assert_eq!(how_to_get_the_rest("whoami"), None);
    }
}
