//! Tool gating, derived from the catalogue: `--read-only` hides every tool whose readOnly hint
//! is false, `--disable-destructive` hides destructive ones, `--toolsets` and `--tools` select.
//! A hidden tool is not listed, and calling it is a protocol error.
//!
//! Selection, as the policy file documents it: with neither list every tool is selected;
//! `toolsets` selects whole toolsets; `tools` names individual tools, *in addition to* the
//! toolsets when both are given (`--toolsets account --tools get_run` is the account tools plus
//! `get_run`), and alone selects exactly those tools. `--read-only` and
//! `--disable-destructive` then narrow the selection; they never widen it.

use std::collections::BTreeSet;

use factory_tools::catalogue::{CATALOGUE, ToolSpec, Toolset};

/// Which tools a server exposes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Gate {
    pub read_only: bool,
    pub disable_destructive: bool,
    /// `None` = no toolset named (every tool, unless `tools` names some).
    pub toolsets: Option<BTreeSet<Toolset>>,
    /// Individual tools, added to the toolsets. `None` = none named.
    pub tools: Option<BTreeSet<&'static str>>,
}

impl Gate {
    /// Build a gate, refusing names that are not in the catalogue.
    pub fn new(
        read_only: bool,
        disable_destructive: bool,
        toolsets: Option<&[String]>,
        tools: Option<&[String]>,
    ) -> Result<Gate, String> {
        let toolsets = toolsets
            .map(|names| {
                names
                    .iter()
                    .map(|n| {
                        Toolset::from_name(n.trim()).ok_or_else(|| {
                            format!(
                                "unknown toolset `{n}`; known toolsets: {}",
                                Toolset::ALL.map(Toolset::name).join(", ")
                            )
                        })
                    })
                    .collect::<Result<BTreeSet<_>, _>>()
            })
            .transpose()?;
        let tools = tools
            .map(|names| {
                names
                    .iter()
                    .map(|n| {
                        CATALOGUE
                            .iter()
                            .find(|t| t.name == n.trim())
                            .map(|t| t.name)
                            .ok_or_else(|| {
                                format!(
                                    "unknown tool `{n}`; known tools: {}",
                                    CATALOGUE
                                        .iter()
                                        .map(|t| t.name)
                                        .collect::<Vec<_>>()
                                        .join(", ")
                                )
                            })
                    })
                    .collect::<Result<BTreeSet<_>, _>>()
            })
            .transpose()?;
        Ok(Gate {
            read_only,
            disable_destructive,
            toolsets,
            tools,
        })
    }

    /// Whether `spec` is exposed.
    pub fn allows(&self, spec: &ToolSpec) -> bool {
        if self.read_only && !spec.hints.read_only {
            return false;
        }
        if self.disable_destructive && spec.hints.destructive {
            return false;
        }
        let in_sets = self
            .toolsets
            .as_ref()
            .map(|sets| sets.contains(&spec.toolset));
        let named = self.tools.as_ref().map(|tools| tools.contains(spec.name));
        match (in_sets, named) {
            (None, None) => true,
            (Some(selected), None) | (None, Some(selected)) => selected,
            // `tools` adds to the toolsets.
            (Some(in_set), Some(named)) => in_set || named,
        }
    }

    /// The names of the exposed tools.
    pub fn exposed(&self) -> Vec<&'static str> {
        CATALOGUE
            .iter()
            .filter(|t| self.allows(t))
            .map(|t| t.name)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_only_hides_every_tool_that_writes() {
        let gate = Gate::new(true, false, None, None).unwrap();
        let exposed = gate.exposed();
        assert!(exposed.contains(&"get_run"));
        assert!(
            !exposed.contains(&"fetch_traces"),
            "fetch_traces writes files"
        );
        for t in CATALOGUE {
            assert_eq!(gate.allows(t), t.hints.read_only, "{}", t.name);
        }
    }

    #[test]
    fn disable_destructive_hides_exactly_the_destructive_tools() {
        let gate = Gate::new(false, true, None, None).unwrap();
        for t in CATALOGUE {
            assert_eq!(gate.allows(t), !t.hints.destructive, "{}", t.name);
        }
    }

    #[test]
    fn toolsets_and_tools_select_and_unknown_names_are_refused() {
        let gate = Gate::new(false, false, Some(&["account".into()]), None).unwrap();
        assert_eq!(
            gate.exposed(),
            vec!["whoami", "list_teams", "list_models", "list_gpus"]
        );
        let gate = Gate::new(
            false,
            false,
            None,
            Some(&["get_run".into(), "whoami".into()]),
        )
        .unwrap();
        assert_eq!(gate.exposed(), vec!["whoami", "get_run"]);
        let err = Gate::new(false, false, Some(&["acount".into()]), None).unwrap_err();
        assert!(err.contains("unknown toolset `acount`"), "{err}");
        let err = Gate::new(false, false, None, Some(&["launch".into()])).unwrap_err();
        assert!(err.contains("unknown tool `launch`"), "{err}");
    }

    #[test]
    fn tools_add_to_the_toolsets() {
        let gate = Gate::new(
            false,
            false,
            Some(&["account".into()]),
            Some(&["get_run".into()]),
        )
        .unwrap();
        assert_eq!(
            gate.exposed(),
            vec![
                "whoami",
                "list_teams",
                "list_models",
                "list_gpus",
                "get_run"
            ]
        );
        // Read-only still narrows what the two lists select together.
        let gate = Gate::new(
            true,
            false,
            Some(&["account".into()]),
            Some(&["fetch_traces".into(), "get_run".into()]),
        )
        .unwrap();
        assert_eq!(
            gate.exposed(),
            vec![
                "whoami",
                "list_teams",
                "list_models",
                "list_gpus",
                "get_run"
            ]
        );
    }

    #[test]
    fn read_only_narrows_a_tool_list() {
        let gate = Gate::new(
            true,
            false,
            None,
            Some(&["fetch_traces".into(), "get_run".into()]),
        )
        .unwrap();
        assert_eq!(gate.exposed(), vec!["get_run"]);
    }
}
