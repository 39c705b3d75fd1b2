//! Exports: a tool's full series written into the workspace as a file (CSV or JSON Lines), so
//! the bulk lands on disk and the answer stays small. One argument (`to_file`) and one way of
//! writing for every tool that offers it (`get_metrics`, `get_rollouts`): the directory is
//! `dest_dir` resolved inside the workspace (as `fetch_traces` resolves its `dest_dir`) or
//! `factory-exports/<run_id>`; the file is written atomically and without following links
//! (`transfers::write_export`); its contents are redacted like every answer, since they hold
//! text from the platform.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::ToolError;
use crate::reply::HasRedactor;
use crate::state::AppState;

/// Where exports go when the caller names no `dest_dir`: `factory-exports/<run_id>/`.
pub(crate) const DEFAULT_DIR: &str = "factory-exports";

/// The format of an exported series.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum FileFormat {
    Csv,
    Jsonl,
}

impl FileFormat {
    pub(crate) fn ext(self) -> &'static str {
        match self {
            FileFormat::Csv => "csv",
            FileFormat::Jsonl => "jsonl",
        }
    }
}

/// The `to_file` argument: write the full series into the workspace instead of returning it.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ToFile {
    pub format: Option<FileFormat>,
    /// Under the workspace (default factory-exports/<run_id>).
    pub dest_dir: Option<String>,
}

/// What an export wrote, for the answer.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct Exported {
    /// The file written (absolute).
    pub path: String,
    pub format: &'static str,
    /// Records in the file (CSV: rows after the header).
    pub rows: usize,
    pub bytes: u64,
}

impl ToFile {
    /// The directory (resolved in the workspace, not yet created) and format of this export.
    pub(crate) fn target(
        &self,
        state: &AppState,
        run_id: &str,
        default: FileFormat,
    ) -> Result<(PathBuf, FileFormat), ToolError> {
        Ok((
            dest_dir(state, run_id, self.dest_dir.as_deref())?,
            self.format.unwrap_or(default),
        ))
    }
}

/// The directory an export of `run_id` goes to: `dest_dir` resolved inside the workspace, or
/// `factory-exports/<run_id>` (`run_id` already checked by `check_id`). Nothing is created yet.
pub(crate) fn dest_dir(
    state: &AppState,
    run_id: &str,
    dest_dir: Option<&str>,
) -> Result<PathBuf, ToolError> {
    let arg = match dest_dir {
        Some(d) => d.to_string(),
        None => format!("{DEFAULT_DIR}/{run_id}"),
    };
    state
        .workspace()?
        .resolve_for_write(&arg)
        .map_err(|e| ToolError::new(format!("dest_dir: {e}")))
}

/// Writes `rows` as `<stem>.<ext>` into `dest` (from [`ToFile::target`] or [`dest_dir`]),
/// redacted, atomically, replacing an earlier export of the same name.
pub(crate) async fn write_rows(
    state: &Arc<AppState>,
    dest: PathBuf,
    stem: &str,
    format: FileFormat,
    mut rows: Vec<Value>,
) -> Result<Exported, ToolError> {
    for row in &mut rows {
        state.redactor().redact_value(row);
    }
    let text = match format {
        FileFormat::Csv => csv(&rows),
        FileFormat::Jsonl => jsonl(&rows),
    };
    let name = format!("{stem}.{}", format.ext());
    let (path, bytes) = write(state, dest, name, text.into_bytes()).await?;
    Ok(Exported {
        path,
        format: format.ext(),
        rows: rows.len(),
        bytes,
    })
}

async fn write(
    state: &Arc<AppState>,
    dest: PathBuf,
    name: String,
    bytes: Vec<u8>,
) -> Result<(String, u64), ToolError> {
    crate::transfers::blocking(state, move |st| {
        crate::transfers::write_export(st, &dest, Path::new(&name), &bytes)
    })
    .await
    .map(|(path, n)| (path.display().to_string(), n))
}

/// JSON Lines: one record per line.
pub(crate) fn jsonl(rows: &[Value]) -> String {
    let mut out = String::new();
    for row in rows {
        out.push_str(&serde_json::to_string(row).unwrap_or_default());
        out.push('\n');
    }
    out
}

/// CSV (RFC 4180) of objects: one column per key, in order of first appearance; a missing or
/// null value is an empty cell, an object or array its JSON. A text cell that a spreadsheet
/// would run as a formula (starting with `=`, `+`, `-`, `@`, tab or carriage return) gets a
/// leading `'`: the texts come from the platform (rollouts), not from us.
pub(crate) fn csv(rows: &[Value]) -> String {
    let mut columns: Vec<&str> = Vec::new();
    for row in rows {
        if let Value::Object(map) = row {
            for k in map.keys() {
                if !columns.contains(&k.as_str()) {
                    columns.push(k);
                }
            }
        }
    }
    let mut out = String::new();
    push_line(&mut out, columns.iter().map(|c| field(&defuse(c))));
    for row in rows {
        push_line(
            &mut out,
            columns.iter().map(|c| match row.get(c) {
                None | Some(Value::Null) => String::new(),
                Some(Value::String(s)) => field(&defuse(s)),
                Some(v @ (Value::Object(_) | Value::Array(_))) => field(&v.to_string()),
                Some(v) => v.to_string(),
            }),
        );
    }
    out
}

fn push_line(out: &mut String, cells: impl Iterator<Item = String>) {
    let mut first = true;
    for cell in cells {
        if !first {
            out.push(',');
        }
        first = false;
        out.push_str(&cell);
    }
    out.push_str("\r\n");
}

fn field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

fn defuse(s: &str) -> String {
    if s.starts_with(['=', '+', '-', '@', '\t', '\r']) {
        format!("'{s}")
    } else {
        s.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn csv_has_one_column_per_key_and_quotes_what_needs_it() {
        let rows = vec![
            json!({"step": 1, "loss": 0.5}),
            json!({"step": 2, "loss": null, "reward/mean": 0.25, "note": "a, \"b\"\nc"}),
        ];
        assert_eq!(
            csv(&rows),
            "step,loss,reward/mean,note\r\n1,0.5,,\r\n2,,0.25,\"a, \"\"b\"\"\nc\"\r\n"
        );
    }

    #[test]
    fn csv_text_cells_cannot_become_spreadsheet_formulas() {
        let rows = vec![json!({"t": "=HYPERLINK(\"x\")", "n": -1, "p": [{"c": "+1"}]})];
        let out = csv(&rows);
        assert!(out.contains("\"'=HYPERLINK(\"\"x\"\")\""), "{out}");
        // Numbers stay numbers; nested values are JSON (starting with `[` or `{`).
        assert!(
            out.ends_with(",-1,\"[{\"\"c\"\":\"\"+1\"\"}]\"\r\n"),
            "{out}"
        );
    }

    #[test]
    fn jsonl_is_one_record_per_line() {
        let rows = vec![json!({"a": "x\ny"}), json!({"a": 2})];
        assert_eq!(jsonl(&rows), "{\"a\":\"x\\ny\"}\n{\"a\":2}\n");
    }
}
