//! The tool catalogue: one record per tool (name, toolset, the four annotation hints, a short
//! description). It is data, so gating (`--read-only`, `--disable-destructive`, `--toolsets`,
//! `--tools`) is derived from it and never listed twice. A test holds it to the table in
//! DESIGN.md.

/// The groups a tool belongs to; `--toolsets` selects among them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Toolset {
    Account,
    Config,
    Launch,
    Runs,
    Lifecycle,
    Traces,
    Artifacts,
}

impl Toolset {
    pub const ALL: [Toolset; 7] = [
        Toolset::Account,
        Toolset::Config,
        Toolset::Launch,
        Toolset::Runs,
        Toolset::Lifecycle,
        Toolset::Traces,
        Toolset::Artifacts,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Toolset::Account => "account",
            Toolset::Config => "config",
            Toolset::Launch => "launch",
            Toolset::Runs => "runs",
            Toolset::Lifecycle => "lifecycle",
            Toolset::Traces => "traces",
            Toolset::Artifacts => "artifacts",
        }
    }

    pub fn from_name(name: &str) -> Option<Toolset> {
        Toolset::ALL.into_iter().find(|t| t.name() == name)
    }
}

/// The four MCP annotation hints, always set explicitly.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hints {
    pub read_only: bool,
    pub destructive: bool,
    pub idempotent: bool,
    pub open_world: bool,
}

const fn hints(read_only: bool, destructive: bool, idempotent: bool, open_world: bool) -> Hints {
    Hints {
        read_only,
        destructive,
        idempotent,
        open_world,
    }
}

/// Read-only, non-destructive, idempotent, open-world: every platform read.
const READ: Hints = hints(true, false, true, true);

/// One tool's record.
#[derive(Debug, Clone, Copy)]
pub struct ToolSpec {
    pub name: &'static str,
    pub toolset: Toolset,
    pub hints: Hints,
    pub title: &'static str,
    pub description: &'static str,
}

/// Every tool this server implements, in catalogue order. Each record is also a named
/// constant: a tool module binds its handler to the constant, so a misspelt record does not
/// compile.
pub const CATALOGUE: &[ToolSpec] = &[
    WHOAMI,
    LIST_TEAMS,
    LIST_MODELS,
    LIST_GPUS,
    VALIDATE_CONFIG,
    PLAN_RUN,
    LAUNCH_RUN,
    RESUME_RUN,
    STOP_RUN,
    PAUSE_RUN,
    RESTART_RUN,
    DELETE_RUN,
    LIST_RUNS,
    GET_RUN,
    GET_COMPONENTS,
    GET_LOGS,
    EXPORT_LOGS,
    GET_METRICS,
    GET_PROGRESS,
    LIST_CHECKPOINTS,
    GET_ROLLOUTS,
    GET_DISTRIBUTIONS,
    WATCH_RUN,
    DIAGNOSE_RUN,
    LIST_TRACES,
    FETCH_TRACES,
    RUN_REPORT,
    LIST_VOLUMES,
    FETCH_CHECKPOINT,
    UPLOAD_TO_VOLUME,
];

pub const WHOAMI: ToolSpec = ToolSpec {
    name: "whoami",
    toolset: Toolset::Account,
    hints: READ,
    title: "Who am I",
    description: "The platform user; the owner calls act for (active team, personal, or ambiguous, teams listed); base URL; the API key masked; the active policy.",
};

pub const LIST_TEAMS: ToolSpec = ToolSpec {
    name: "list_teams",
    toolset: Toolset::Account,
    hints: READ,
    title: "List teams",
    description: "Teams the API key can act for (id, name, slug, role).",
};

pub const LIST_MODELS: ToolSpec = ToolSpec {
    name: "list_models",
    toolset: Toolset::Account,
    hints: READ,
    title: "List trainable models",
    description: "Models the owner can train, with their clusters and GPU types, plus on-demand GPU prices.",
};

pub const LIST_GPUS: ToolSpec = ToolSpec {
    name: "list_gpus",
    toolset: Toolset::Account,
    hints: READ,
    title: "List GPU types",
    description: "GPU types for training: on-demand offers with price per GPU-hour and availability, and reserved-capacity types (no published price).",
};

pub const VALIDATE_CONFIG: ToolSpec = ToolSpec {
    name: "validate_config",
    toolset: Toolset::Config,
    hints: READ,
    title: "Validate a prime-rl config",
    description: "Validate a prime-rl TOML config (workspace file or inline) against the pinned schema (or the policy's checkout) and the hosted-run rules; findings carry severity, path, message, hint.",
};

pub const PLAN_RUN: ToolSpec = ToolSpec {
    name: "plan_run",
    toolset: Toolset::Launch,
    hints: hints(true, false, false, true),
    title: "Plan a training run",
    description: "Validate a config, resolve owner, GPUs and volume, price it, check budgets and duplicates, and store a launch plan. Changes nothing on the platform.",
};

pub const LAUNCH_RUN: ToolSpec = ToolSpec {
    name: "launch_run",
    toolset: Toolset::Launch,
    hints: hints(false, false, true, true),
    title: "Launch a planned run",
    description: "Launch the run of a plan_id (billable) after a person confirms it; at most one run per plan, even across retries. Then watch_run or get_progress.",
};

pub const RESUME_RUN: ToolSpec = ToolSpec {
    name: "resume_run",
    toolset: Toolset::Launch,
    hints: hints(false, false, true, true),
    title: "Resume a paused run",
    description: "Start the new billable run of a resume plan (plan_run with resume_from) after a person confirms it; at most one run per plan.",
};

pub const STOP_RUN: ToolSpec = ToolSpec {
    name: "stop_run",
    toolset: Toolset::Lifecycle,
    hints: hints(false, true, true, true),
    title: "Stop a run",
    description: "Stop a run and wait (bounded) for a terminal state; stopping a stopped run is a no-op.",
};

pub const PAUSE_RUN: ToolSpec = ToolSpec {
    name: "pause_run",
    toolset: Toolset::Lifecycle,
    hints: hints(false, true, true, true),
    title: "Pause a run",
    description: "Pause a RUNNING run (frees its GPUs); resume later with plan_run resume_from + resume_run.",
};

pub const RESTART_RUN: ToolSpec = ToolSpec {
    name: "restart_run",
    toolset: Toolset::Lifecycle,
    hints: hints(false, true, false, true),
    title: "Restart a run",
    description: "Restart a RUNNING run from its last checkpoint. Not repeatable: check get_run before calling again.",
};

pub const DELETE_RUN: ToolSpec = ToolSpec {
    name: "delete_run",
    toolset: Toolset::Lifecycle,
    hints: hints(false, true, true, true),
    title: "Delete a run",
    description: "Permanently delete a run that is not active; always confirmed by a person (dialog, or `factory-mcp approve` of the intent).",
};

pub const LIST_RUNS: ToolSpec = ToolSpec {
    name: "list_runs",
    toolset: Toolset::Runs,
    hints: READ,
    title: "List runs",
    description: "Training runs, newest first, 10 a page; without team_id or personal, of every owner the key can act for; optional status filter.",
};

pub const GET_RUN: ToolSpec = ToolSpec {
    name: "get_run",
    toolset: Toolset::Runs,
    hints: READ,
    title: "Get a run",
    description: "One run: status, model, steps, GPUs, timestamps, failure analysis.",
};

pub const GET_COMPONENTS: ToolSpec = ToolSpec {
    name: "get_components",
    toolset: Toolset::Runs,
    hints: READ,
    title: "Run components",
    description: "The run's components (orchestrator or trainer, env servers) with their states, and the log components get_logs accepts for it.",
};

pub const GET_LOGS: ToolSpec = ToolSpec {
    name: "get_logs",
    toolset: Toolset::Runs,
    hints: READ,
    title: "Run logs",
    description: "Tail of a component's logs (orchestrator, trainer, inference or an env server) as plain lines, progress folded; filter by level, text or regex, time (≤ 24 h); a cursor follows.",
};

pub const EXPORT_LOGS: ToolSpec = ToolSpec {
    name: "export_logs",
    toolset: Toolset::Runs,
    hints: hints(false, false, true, true),
    title: "Export logs to files",
    description: "Write a run's logs into workspace files, one per component; a later call appends only new lines and says what was out of reach.",
};

pub const GET_METRICS: ToolSpec = ToolSpec {
    name: "get_metrics",
    toolset: Toolset::Runs,
    hints: READ,
    title: "Run metrics",
    description: "Training metrics of a run: by default each metric's first, last, min, max and trend, plus the newest 10 steps; a step range lists its records; to_file writes them all to the workspace.",
};

pub const GET_PROGRESS: ToolSpec = ToolSpec {
    name: "get_progress",
    toolset: Toolset::Runs,
    hints: READ,
    title: "Run progress",
    description: "Latest completed step, steps with samples and distributions, and when progress last changed.",
};

pub const LIST_CHECKPOINTS: ToolSpec = ToolSpec {
    name: "list_checkpoints",
    toolset: Toolset::Runs,
    hints: READ,
    title: "List checkpoints",
    description: "Checkpoints of a run with step, status, size and storage location.",
};

pub const GET_ROLLOUTS: ToolSpec = ToolSpec {
    name: "get_rollouts",
    toolset: Toolset::Runs,
    hints: READ,
    title: "Run rollouts",
    description: "Rollout samples (prompt, completion, reward) of an RL run at one step (default: the latest), paged and bounded; to_file writes all of the step's to the workspace.",
};

pub const GET_DISTRIBUTIONS: ToolSpec = ToolSpec {
    name: "get_distributions",
    toolset: Toolset::Runs,
    hints: READ,
    title: "Run distributions",
    description: "Histogram bins of an RL run's distribution (e.g. rewards) at one step.",
};

pub const WATCH_RUN: ToolSpec = ToolSpec {
    name: "watch_run",
    toolset: Toolset::Runs,
    hints: READ,
    title: "Watch a run",
    description: "Wait (bounded) until a run reaches a step, a status, or the end, with progress; says why it returned.",
};

pub const DIAGNOSE_RUN: ToolSpec = ToolSpec {
    name: "diagnose_run",
    toolset: Toolset::Runs,
    hints: READ,
    title: "Diagnose a run",
    description: "One-call diagnosis: status, components, failure analysis, recent errors, stall, checkpoint, queue, next action.",
};

pub const LIST_TRACES: ToolSpec = ToolSpec {
    name: "list_traces",
    toolset: Toolset::Traces,
    hints: READ,
    title: "List traces",
    description: "Rollout traces of a run (train/eval, all or one step), with the CLI's filters, a total and the steps missing uploads; cursor-paginated.",
};

pub const FETCH_TRACES: ToolSpec = ToolSpec {
    name: "fetch_traces",
    toolset: Toolset::Artifacts,
    hints: hints(false, false, true, true),
    title: "Fetch traces to disk",
    description: "Download a run's raw traces (or one step's) byte-exact into a workspace directory, with a manifest; atomic, resumable; capped per call, continued by cursor.",
};

pub const RUN_REPORT: ToolSpec = ToolSpec {
    name: "run_report",
    toolset: Toolset::Runs,
    hints: READ,
    title: "End-of-run report",
    description: "Outcome, steps, duration, usage, the platform's reported cost (a derived rate only with its basis), where checkpoints and traces are, and the calls that fetch what is not local yet.",
};

pub const LIST_VOLUMES: ToolSpec = ToolSpec {
    name: "list_volumes",
    toolset: Toolset::Artifacts,
    hints: READ,
    title: "List volumes",
    description: "Volumes of the active owner (or a team) with size, status and creator.",
};

pub const FETCH_CHECKPOINT: ToolSpec = ToolSpec {
    name: "fetch_checkpoint",
    toolset: Toolset::Artifacts,
    hints: hints(false, false, true, true),
    title: "Fetch a checkpoint to disk",
    description: "Download a run's checkpoint (default: latest READY) from its volume into a workspace directory; atomic, resumable, with progress.",
};

pub const UPLOAD_TO_VOLUME: ToolSpec = ToolSpec {
    name: "upload_to_volume",
    toolset: Toolset::Artifacts,
    hints: hints(false, false, true, true),
    title: "Upload to a volume",
    description: "Upload a workspace file or folder to a volume (default datasets/<name>) for hosted SFT; refuses to overwrite unless asked.",
};

/// The record of a tool by name.
pub fn spec(name: &str) -> Option<&'static ToolSpec> {
    CATALOGUE.iter().find(|t| t.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn names_are_unique_and_snake_case() {
        let mut seen = HashSet::new();
        for t in CATALOGUE {
            assert!(seen.insert(t.name), "duplicate tool {}", t.name);
            assert!(
                t.name.chars().all(|c| c.is_ascii_lowercase() || c == '_'),
                "{} is not snake_case",
                t.name
            );
            assert!(!t.description.is_empty() && t.description.len() <= 240);
        }
    }

    #[test]
    fn read_only_tools_are_never_destructive() {
        for t in CATALOGUE {
            if t.hints.read_only {
                assert!(
                    !t.hints.destructive,
                    "{} is read-only yet destructive",
                    t.name
                );
            }
        }
    }

    /// The catalogue agrees with the tool table in DESIGN.md: same toolset and the same four
    /// hints for every tool we implement.
    #[test]
    fn catalogue_matches_design_table() {
        let design =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/DESIGN.md");
        let text = std::fs::read_to_string(&design)
            .unwrap_or_else(|e| panic!("DESIGN.md must sit at {}: {e}", design.display()));
        let table = design_table(&text);
        assert!(
            table.len() >= 20,
            "parsed only {} rows from DESIGN.md",
            table.len()
        );
        for t in CATALOGUE {
            // A tool added after DESIGN.md (an issue) takes its toolset from the catalogue
            // and its hints from the DESIGN row of the tool it is like.
            let like = ADDED_AFTER_DESIGN
                .iter()
                .find(|(name, _)| *name == t.name)
                .map(|(_, like)| *like);
            let (toolset, h) = table
                .get(like.unwrap_or(t.name))
                .unwrap_or_else(|| panic!("{} is not in DESIGN.md's tool table", t.name));
            if like.is_none() {
                assert_eq!(toolset, t.toolset.name(), "toolset of {}", t.name);
            }
            assert_eq!(*h, t.hints, "hints of {}", t.name);
        }
    }

    /// Tools added by issues after DESIGN.md was written, and the DESIGN tool each is like:
    /// `export_logs` (issue 19) writes workspace files as `fetch_traces` does.
    const ADDED_AFTER_DESIGN: &[(&str, &str)] = &[("export_logs", "fetch_traces")];

    fn design_table(text: &str) -> std::collections::HashMap<String, (String, Hints)> {
        let mut out = std::collections::HashMap::new();
        let section = text
            .split("## Tools")
            .nth(1)
            .expect("DESIGN.md has a Tools section");
        for line in section.lines().filter(|l| l.starts_with("| `")) {
            let cells: Vec<&str> = line.split('|').map(str::trim).collect();
            if cells.len() < 5 {
                continue;
            }
            let flags: Vec<bool> = cells[3].split('/').map(|f| f.trim() == "T").collect();
            if flags.len() != 4 {
                continue;
            }
            let h = hints(flags[0], flags[1], flags[2], flags[3]);
            for name in cells[1].split(',') {
                let name = name.trim().trim_matches('`');
                out.insert(name.to_string(), (cells[2].to_string(), h));
            }
        }
        out
    }
}
