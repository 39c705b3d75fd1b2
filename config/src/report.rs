//! The validation result: verdict, mode, summary, findings and the checkers that produced
//! them. Its serde shape is what the `validate_config` tool and `check-config --json` expose,
//! so field names are snake_case and stable.

use serde::{Deserialize, Serialize};

/// The prime-rl commit whose schema these rules follow.
pub const SCHEMA_COMMIT: &str = "559b44772e471d1538537b8805cc77f3824a5e64";

/// Which prime-rl schema the file is checked against (`RLConfig` or `SFTConfig`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// `RLConfig`: trainer + orchestrator (+ inference).
    Rl,
    /// `SFTConfig`: the flat trainer-only schema.
    Sft,
}

impl Mode {
    /// `"rl"` or `"sft"`, as the CLI and the platform spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Rl => "rl",
            Mode::Sft => "sft",
        }
    }
}

/// How serious a finding is. Only errors make a config invalid.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    /// The CLI, the schema or the hosted policy would reject the config.
    Error,
    /// Accepted, but against the platform's own guidance or likely a mistake.
    Warning,
    /// Worth knowing; nothing to fix.
    Info,
}

impl Severity {
    /// `"error"`, `"warning"` or `"info"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Info => "info",
        }
    }
}

/// Which checker produced a finding.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// The native rules of this crate.
    Native,
    /// Account-aware checks against platform facts (models, GPU types, volumes, schema drift).
    Account,
    /// The user's prime-rl checkout, run through `uv run`.
    PrimeRlCheckout,
    /// `prime train validate -o json`.
    PrimeCli,
}

/// One problem or remark about the config.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    /// error | warning | info.
    pub severity: Severity,
    /// Dotted path of the key concerned (`deployment.num_train_gpus`; list items by index,
    /// `orchestrator.train.source.0.ratio`); empty for a whole-config rule.
    pub path: String,
    /// What is wrong, naming keys and (non-secret) values from the file.
    pub message: String,
    /// What to do about it, when there is something to say.
    pub hint: Option<String>,
    /// Which checker produced it.
    pub source: Source,
}

impl Finding {
    /// A native error at `path`.
    pub fn error(path: impl Into<String>, message: impl Into<String>) -> Self {
        Self::new(Severity::Error, path, message)
    }

    /// A native warning at `path`.
    pub fn warning(path: impl Into<String>, message: impl Into<String>) -> Self {
        Self::new(Severity::Warning, path, message)
    }

    /// A native info at `path`.
    pub fn info(path: impl Into<String>, message: impl Into<String>) -> Self {
        Self::new(Severity::Info, path, message)
    }

    /// A native finding of the given severity.
    pub fn new(severity: Severity, path: impl Into<String>, message: impl Into<String>) -> Self {
        Finding {
            severity,
            path: path.into(),
            message: message.into(),
            hint: None,
            source: Source::Native,
        }
    }

    /// The same finding with a hint.
    #[must_use]
    pub fn hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }

    /// The same finding attributed to another checker.
    #[must_use]
    pub fn from_source(mut self, source: Source) -> Self {
        self.source = source;
        self
    }
}

/// GPU counts the config asks for.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Gpus {
    /// Trainer GPUs.
    pub trainer: Option<u64>,
    /// Inference GPUs.
    pub inference: Option<u64>,
    /// trainer + inference.
    pub total: Option<u64>,
}

/// The facts a person checks before paying for a run.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Summary {
    /// The model being trained.
    pub model: Option<String>,
    /// The step budget (absent: the run goes on until stopped).
    pub max_steps: Option<i64>,
    /// The training sequence length.
    pub seq_len: Option<i64>,
    /// GPU counts per component.
    pub gpus: Gpus,
    /// The hosted `gpu_type` key.
    pub gpu_type: Option<String>,
    /// The hosted `volume` key.
    pub volume: Option<String>,
}

/// The outcome of one checker.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckerStatus {
    /// It ran and its verdict is merged.
    Ran,
    /// Not requested or not available.
    Skipped,
    /// It could not produce a verdict.
    Failed,
    /// It ran past its time limit and was stopped.
    TimedOut,
}

/// One checker's participation in the result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckerRun {
    /// `native`, `account`, `prime_rl_checkout` or `prime_cli`.
    pub name: String,
    /// ran | skipped | failed | timed_out.
    pub status: CheckerStatus,
    /// One line of explanation.
    pub detail: String,
}

/// The validation result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// True when no finding is an error.
    pub valid: bool,
    /// The schema the file was checked against.
    pub mode: Mode,
    /// The prime-rl commit the native rules follow.
    pub schema_commit: String,
    /// What the run would ask for.
    pub summary: Summary,
    /// Errors, warnings and infos, errors first.
    pub findings: Vec<Finding>,
    /// Which checkers took part.
    pub checkers: Vec<CheckerRun>,
}

impl Report {
    /// An empty, valid report for `mode`.
    pub fn new(mode: Mode) -> Self {
        Report {
            valid: true,
            mode,
            schema_commit: SCHEMA_COMMIT.to_string(),
            summary: Summary::default(),
            findings: Vec::new(),
            checkers: Vec::new(),
        }
    }

    /// Add a finding; an error makes the report invalid.
    pub fn push(&mut self, finding: Finding) {
        if finding.severity == Severity::Error {
            self.valid = false;
        }
        self.findings.push(finding);
    }

    /// Add several findings.
    pub fn extend(&mut self, findings: impl IntoIterator<Item = Finding>) {
        for f in findings {
            self.push(f);
        }
    }

    /// Record a checker's participation (replacing an earlier entry of the same name).
    pub fn checker(&mut self, name: &str, status: CheckerStatus, detail: impl Into<String>) {
        let run = CheckerRun {
            name: name.to_string(),
            status,
            detail: detail.into(),
        };
        match self.checkers.iter_mut().find(|c| c.name == name) {
            Some(existing) => *existing = run,
            None => self.checkers.push(run),
        }
    }

    /// Findings of one severity.
    pub fn with_severity(&self, severity: Severity) -> impl Iterator<Item = &Finding> {
        self.findings.iter().filter(move |f| f.severity == severity)
    }

    /// Paths of the error findings.
    pub fn error_paths(&self) -> Vec<&str> {
        self.with_severity(Severity::Error)
            .map(|f| f.path.as_str())
            .collect()
    }

    /// Sort findings (errors, then warnings, then infos; stable within a severity) and
    /// recompute `valid` from them.
    pub fn finish(&mut self) {
        self.findings.sort_by_key(|f| f.severity);
        self.valid = !self.findings.iter().any(|f| f.severity == Severity::Error);
    }
}
