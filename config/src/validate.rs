//! The native pipeline, in the order the `prime` CLI and its schema worker apply their
//! checks: parse → retired shape → mode → hosted keys → (RL) shared propagation → structure →
//! cross-field rules → hosted policy → practices; then the summary.

use toml::{Table, Value};

use crate::hosted;
use crate::practices;
use crate::propagate::propagate;
use crate::report::{CheckerStatus, Gpus, Mode, Report, Summary};
use crate::rules::{self, View};
use crate::schema;
use crate::secrets::scrub;
use crate::walk::{Provenance, Walker};

/// Caller's choices.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Force SFT, like the CLI's `--sft` (there is no TOML key for it).
    pub sft: bool,
    /// The secret *names* that will be forwarded to the run, when known (for the W&B check).
    pub forwarded_secrets: Option<Vec<String>>,
}

/// A file that is not TOML: what is wrong and where.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("TOML syntax error{}: {message}", location(.line, .column))]
pub struct SyntaxError {
    /// The parser's message (first line).
    pub message: String,
    /// 1-based line, when known.
    pub line: Option<usize>,
    /// 1-based column, when known.
    pub column: Option<usize>,
}

fn location(line: &Option<usize>, column: &Option<usize>) -> String {
    match (line, column) {
        (Some(l), Some(c)) => format!(" at line {l}, column {c}"),
        (Some(l), None) => format!(" at line {l}"),
        _ => String::new(),
    }
}

/// Parse TOML text into a table.
pub fn parse(text: &str) -> Result<Table, SyntaxError> {
    text.parse::<Table>().map_err(|e| {
        let (line, column) = match e.span() {
            Some(span) => {
                let upto = &text[..span.start.min(text.len())];
                let line = upto.matches('\n').count() + 1;
                let column = upto.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
                (Some(line), Some(column))
            }
            None => (None, None),
        };
        let message = scrub(e.message().lines().next().unwrap_or("invalid TOML").trim());
        SyntaxError {
            message,
            line,
            column,
        }
    })
}

/// Validate TOML text. Only a syntax error is an `Err`; everything else is a finding.
pub fn validate(text: &str, opts: &Options) -> Result<Report, SyntaxError> {
    Ok(validate_table(parse(text)?, opts))
}

/// The document the schema sees, as the CLI prepares it: mode decided, hosted-only keys
/// stripped, deprecated orchestrator keys cleaned, `[k8s]` popped. (For handing the config
/// to an authoritative checker.)
pub fn schema_input(mut doc: Table, sft: bool) -> (Mode, Table) {
    let mode = hosted::detect_mode(&doc, sft);
    let mut ignored = Vec::new();
    let _ = hosted::strip(&mut doc, mode, &mut ignored);
    (mode, doc)
}

/// Validate a parsed document.
pub fn validate_table(mut doc: Table, opts: &Options) -> Report {
    let retired = hosted::retired_shape(&doc);
    if !retired.is_empty() {
        let mut report = Report::new(Mode::Rl);
        report.extend(retired);
        report.checker(
            "native",
            CheckerStatus::Ran,
            "refused before the schema: retired shared-LoRA format",
        );
        report.finish();
        return report;
    }
    let mode = hosted::detect_mode(&doc, opts.sft);
    let mut report = Report::new(mode);
    let mut cli = Vec::new();
    let hosted = hosted::strip(&mut doc, mode, &mut cli);
    let raw = doc.clone();

    // Hosted runs need no [slurm] for multi-node: the worker injects an empty one.
    let multi = doc
        .get("deployment")
        .and_then(|d| d.get("type"))
        .and_then(Value::as_str)
        == Some("multi_node");
    if multi && !doc.contains_key("slurm") {
        doc.insert("slurm".into(), Value::Table(Table::new()));
    }

    let mut schema_findings = Vec::new();
    let provenance = if mode == Mode::Rl {
        propagate(&mut doc, &mut schema_findings)
    } else {
        Provenance::new()
    };
    let mut walker = Walker::new(&provenance);
    walker.model(&doc, schema::root(mode), "");
    schema_findings.extend(std::mem::take(&mut walker.findings));
    let schema_findings = rules::run(mode, &doc, schema_findings);
    let policy = rules::hosted_policy(mode, &doc);

    let view = View::new(&doc, mode);
    let practice = practices::check(&practices::Input {
        mode,
        raw: &raw,
        view: &view,
        hosted: &hosted,
        path_values: &walker.path_values,
        forwarded_secrets: opts.forwarded_secrets.as_deref(),
    });
    report.summary = summary(&view, mode, &hosted);
    let n_schema = schema_findings.len();
    report.extend(cli);
    report.extend(schema_findings);
    report.extend(policy);
    report.extend(practice);
    report.checker(
        "native",
        CheckerStatus::Ran,
        format!(
            "{} schema at prime-rl {} ({} schema finding(s); train/eval source contents checked statically, plugins not loaded)",
            mode.as_str().to_uppercase(),
            &crate::SCHEMA_COMMIT[..8],
            n_schema
        ),
    );
    report.finish();
    report
}

fn summary(v: &View, mode: Mode, hosted: &hosted::Hosted) -> Summary {
    let s = |x: Option<&str>| x.map(scrub);
    let (model, max_steps, seq_len, gpus) = match mode {
        Mode::Rl => {
            let (t, i) = match v.tag("deployment").unwrap_or("single_node") {
                "multi_node" => {
                    let g = v.int("deployment.gpus_per_node").unwrap_or(8);
                    let t = v.int("deployment.num_train_nodes").map(|n| n * g);
                    let nodes = rules_infer_nodes(v);
                    let reps = v.int("deployment.num_infer_replicas").unwrap_or(1);
                    (t, nodes.map(|n| n * reps * g))
                }
                _ => (
                    v.int("deployment.num_train_gpus"),
                    v.int("deployment.num_infer_gpus"),
                ),
            };
            (
                s(v.str("trainer.model.name")),
                v.int("trainer.max_steps"),
                v.int("trainer.model.seq_len"),
                (t, i),
            )
        }
        Mode::Sft => {
            let has_inf = v.raw("inference").is_some_and(Value::is_table);
            let (t, i) = match v.tag("deployment").unwrap_or("single_node") {
                "multi_node" => {
                    let g = v.int("deployment.gpus_per_node").unwrap_or(8);
                    (
                        v.int("deployment.num_train_nodes").map(|n| n * g),
                        if has_inf {
                            v.int("deployment.num_infer_nodes").map(|n| n * g)
                        } else {
                            Some(0)
                        },
                    )
                }
                _ => (
                    v.int("deployment.num_train_gpus"),
                    if has_inf {
                        v.int("deployment.num_infer_gpus")
                    } else {
                        Some(0)
                    },
                ),
            };
            (
                s(v.str("model.name")),
                v.int("max_steps"),
                v.int("data.seq_len"),
                (t, i),
            )
        }
    };
    let count = |x: Option<i64>| x.and_then(|n| u64::try_from(n).ok());
    let (trainer, inference) = (count(gpus.0), count(gpus.1));
    Summary {
        model,
        max_steps,
        seq_len,
        gpus: Gpus {
            trainer,
            inference,
            total: trainer.zip(inference).map(|(a, b)| a + b),
        },
        gpu_type: s(hosted.gpu_type.as_deref()),
        volume: s(hosted.volume.as_deref()),
    }
}

fn rules_infer_nodes(v: &View) -> Option<i64> {
    crate::rules::infer_nodes(v)
}
