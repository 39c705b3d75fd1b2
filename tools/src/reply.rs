//! How a tool answers: a one-line summary plus an object-rooted structured result (also sent as
//! text, since some clients read only text), or an `isError` result whose text says what to do.
//! Everything passes through redaction on the way out, and no answer over the policy's result
//! cap (`[results] max_bytes`) is sent whole: it is replaced by a compact one that says its size
//! and how to get the rest.

use factory_policies::ResultsPolicy;
use rmcp::model::{CallToolResponse, CallToolResult, ContentBlock};
use serde::Serialize;
use serde_json::{Value, json};

pub use crate::error::ToolError;

/// A successful tool answer, before it is shaped into a `CallToolResult`.
pub enum Outcome<O> {
    /// The usual answer: a one-line summary and the structured body; `rest` says how to get
    /// the answer in parts should it be over the result cap (see [`Outcome::with_rest`]).
    Done {
        summary: String,
        body: O,
        rest: Option<String>,
    },
    /// [`Outcome::Done`] with its body already a JSON tree (see [`Outcome::tree`]).
    Tree {
        summary: String,
        tree: Value,
        rest: Option<String>,
    },
    /// A protocol-level response built by the tool itself (the input-required round trip).
    Response(Box<CallToolResponse>),
}

impl<O> Outcome<O> {
    pub fn done(summary: impl Into<String>, body: O) -> Self {
        Outcome::Done {
            summary: summary.into(),
            body,
            rest: None,
        }
    }

    /// An answer whose body the tool built as a JSON tree itself, because it holds trees
    /// already (records read from the platform): they are moved into the answer, not copied
    /// by serialising them again. It is shaped, redacted and capped as [`Outcome::done`]'s.
    pub fn tree(summary: impl Into<String>, tree: Value) -> Self {
        Outcome::Tree {
            summary: summary.into(),
            tree,
            rest: None,
        }
    }

    /// How to get this answer in parts — a cursor, a page, a narrower filter, or a file tool —
    /// should it be over the result cap: advice for this very call (the cursor it holds, the
    /// next page). Without it the cut answer gives the tool's advice from `budget`, or else the
    /// generic advice of [`generic_rest`].
    pub fn with_rest(self, how: impl Into<String>) -> Self {
        match self {
            Outcome::Done { summary, body, .. } => Outcome::Done {
                summary,
                body,
                rest: Some(how.into()),
            },
            Outcome::Tree { summary, tree, .. } => Outcome::Tree {
                summary,
                tree,
                rest: Some(how.into()),
            },
            r @ Outcome::Response(_) => r,
        }
    }
}

/// What a tool handler returns.
pub type ToolResult<O> = Result<Outcome<O>, ToolError>;

/// What every answer is shaped with: the redactor of the shared state, so every answer is
/// redacted, and the policy's result cap, so none is sent over it.
pub trait HasRedactor {
    fn redactor(&self) -> &dyn Redact;
    /// The policy's `[results]` (its `max_bytes` is the hard cap of one answer).
    fn results_policy(&self) -> ResultsPolicy;
}

/// Redaction applied to everything that leaves the server.
pub trait Redact: Send + Sync {
    fn redact_str(&self, s: &str) -> String;
    fn redact_value(&self, v: &mut Value);
}

/// The advice of a cut answer whose tool has none of its own.
fn generic_rest(tool: &str) -> String {
    format!(
        "Call {tool} again with narrower arguments (a smaller limit, a page or cursor, a step range or a filter: see its input schema)."
    )
}

/// Shape a successful body: structured content plus a text block led by the summary — unless
/// the text block would be over the cap `results`, then the compact answer of [`cut`].
fn success<O: Serialize>(
    tool: &str,
    summary: &str,
    body: &O,
    rest: Option<&str>,
    redactor: &dyn Redact,
    results: ResultsPolicy,
) -> CallToolResult {
    match serde_json::to_value(body) {
        Ok(value) => success_tree(tool, summary, value, rest, redactor, results),
        Err(e) => failure(&format!("internal error shaping the result: {e}"), redactor),
    }
}

/// [`success`] for a body that is a JSON tree already.
fn success_tree(
    tool: &str,
    summary: &str,
    mut value: Value,
    rest: Option<&str>,
    redactor: &dyn Redact,
    results: ResultsPolicy,
) -> CallToolResult {
    redactor.redact_value(&mut value);
    let summary = redactor.redact_str(summary);
    // Compact: the text block repeats the structured result for clients that read only text.
    let text = summary_then_json(&summary, &value);
    if !results.admits(text.len()) {
        let rest = rest
            .or_else(|| crate::budget::how_to_get_the_rest(tool))
            .map_or_else(|| generic_rest(tool), str::to_string);
        return cut(
            tool,
            &summary,
            text.len(),
            &redactor.redact_str(&rest),
            results,
        );
    }
    let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
    result.structured_content = Some(value);
    result
}

/// `line`, a newline and the compact JSON of `value`, written into one buffer.
fn summary_then_json(line: &str, value: &Value) -> String {
    let mut buf = Vec::with_capacity(line.len() + 1 + 256);
    buf.extend_from_slice(line.as_bytes());
    buf.push(b'\n');
    if serde_json::to_writer(&mut buf, value).is_err() {
        buf.truncate(line.len() + 1);
    }
    // A str, a newline and serde_json's output (always UTF-8).
    String::from_utf8(buf).unwrap_or_default()
}

/// The answer that replaces one of `bytes` over the cap: its summary, its size, the cap and how
/// to get the rest, as an `isError` result — a result in the tool's own shape would have to hold
/// what was cut (clients validate a successful result against the tool's output schema: the
/// Python SDK refuses one that does not conform), and the model should act on it: call again
/// for less. The headline says the call itself succeeded (a fetch wrote its files). Its text
/// block is, like every answer's, a line and the compact JSON of its structured content.
fn cut(
    tool: &str,
    summary: &str,
    bytes: usize,
    rest: &str,
    results: ResultsPolicy,
) -> CallToolResult {
    // The summary is one line the tool wrote; a runaway one must not make the cut answer large.
    let summary = factory_policies::untrusted::one_line(summary, 500);
    let headline = format!(
        "{tool} succeeded, but its answer is {bytes} bytes, over this server's cap of {} bytes (policy key results.max_bytes): only its summary is sent. {rest}",
        results.max_bytes
    );
    let value = json!({
        "truncated": true,
        "tool": tool,
        "result_bytes": bytes,
        "max_bytes": results.max_bytes,
        "summary": summary,
        "how_to_get_the_rest": rest,
    });
    let mut result = CallToolResult::error(vec![ContentBlock::text(summary_then_json(
        &headline, &value,
    ))]);
    result.structured_content = Some(value);
    result
}

/// The one place a tool's result becomes an MCP answer: a body is shaped by [`success`] (and
/// cut there when it is over the policy's result cap); a protocol response (the input-required
/// round trip) passes through; every [`ToolError`] kind becomes an `isError` result whose text
/// says what to do ([`failure`]).
pub fn answer<O: Serialize>(
    tool: &str,
    result: ToolResult<O>,
    shaping: &dyn HasRedactor,
) -> CallToolResponse {
    let redactor = shaping.redactor();
    match result {
        Ok(Outcome::Done {
            summary,
            body,
            rest,
        }) => success(
            tool,
            &summary,
            &body,
            rest.as_deref(),
            redactor,
            shaping.results_policy(),
        )
        .into(),
        Ok(Outcome::Tree {
            summary,
            tree,
            rest,
        }) => success_tree(
            tool,
            &summary,
            tree,
            rest.as_deref(),
            redactor,
            shaping.results_policy(),
        )
        .into(),
        Ok(Outcome::Response(r)) => *r,
        Err(e) => {
            let mut r = failure(&e.message, redactor);
            clip_error(&mut r, shaping.results_policy());
            r.into()
        }
    }
}

/// An error message is the tool's own prose and short, but none may pass the cap either: one
/// over it keeps its beginning (where the advice is), cut on a character boundary, and says so.
fn clip_error(r: &mut CallToolResult, results: ResultsPolicy) {
    let Some(text) = r
        .content
        .first()
        .and_then(|c| c.as_text())
        .map(|t| t.text.clone())
    else {
        return;
    };
    if results.admits(text.len()) {
        return;
    }
    let note = format!(
        " … (message cut: {} bytes, over this server's cap of {} bytes, policy key results.max_bytes)",
        text.len(),
        results.max_bytes
    );
    let keep = usize::try_from(results.max_bytes)
        .unwrap_or(usize::MAX)
        .saturating_sub(note.len());
    let mut end = keep.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    r.content = vec![ContentBlock::text(format!("{}{note}", &text[..end]))];
}

/// Shape a failure the model can act on.
pub fn failure(message: &str, redactor: &dyn Redact) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(redactor.redact_str(message))])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Redacts one known secret, like the server's redactor.
    struct Shaping {
        max_bytes: u64,
    }

    impl Redact for Shaping {
        fn redact_str(&self, s: &str) -> String {
            s.replace("s3cr3t-value", "[REDACTED]")
        }
        fn redact_value(&self, v: &mut Value) {
            if let Value::String(s) = v {
                *s = self.redact_str(s);
            }
            if let Value::Object(m) = v {
                m.values_mut().for_each(|x| self.redact_value(x));
            }
            if let Value::Array(a) = v {
                a.iter_mut().for_each(|x| self.redact_value(x));
            }
        }
    }

    impl HasRedactor for Shaping {
        fn redactor(&self) -> &dyn Redact {
            self
        }
        fn results_policy(&self) -> ResultsPolicy {
            ResultsPolicy {
                max_bytes: self.max_bytes,
            }
        }
    }

    #[derive(Serialize)]
    struct Lines {
        lines: Vec<String>,
    }

    fn lines(n: usize) -> Lines {
        Lines {
            lines: (0..n)
                .map(|i| format!("line {i:04} s3cr3t-value"))
                .collect(),
        }
    }

    fn result(r: CallToolResponse) -> CallToolResult {
        match r {
            CallToolResponse::Complete(r) => r,
            other => panic!("not a tool result: {other:?}"),
        }
    }

    fn text(r: &CallToolResult) -> String {
        r.content
            .iter()
            .filter_map(|c| c.as_text().map(|t| t.text.clone()))
            .collect()
    }

    #[test]
    fn an_answer_under_the_cap_is_the_summary_then_its_compact_json() {
        let shaping = Shaping { max_bytes: 4096 };
        let r = result(answer(
            "get_logs",
            Ok(Outcome::done("3 lines", lines(3))),
            &shaping,
        ));
        assert_ne!(r.is_error, Some(true));
        let structured = r.structured_content.clone().expect("structured");
        let (summary, json) = text(&r)
            .split_once('\n')
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .unwrap();
        assert_eq!(summary, "3 lines");
        assert_eq!(json, serde_json::to_string(&structured).unwrap());
        assert!(!json.contains(": ") && !json.contains("s3cr3t"), "{json}");
    }

    #[test]
    fn an_answer_over_the_cap_is_replaced_by_its_size_and_how_to_get_the_rest() {
        let shaping = Shaping { max_bytes: 4096 };
        let whole = result(answer(
            "get_logs",
            Ok(Outcome::done("200 lines", lines(200))),
            &Shaping { max_bytes: 1 << 20 },
        ));
        let whole_bytes = text(&whole).len();
        assert!(whole_bytes > 4096);
        let r = result(answer(
            "get_logs",
            Ok(Outcome::done("200 lines", lines(200))
                .with_rest("Pass the cursor it returned, or a smaller `tail`.")),
            &shaping,
        ));
        assert_eq!(
            r.is_error,
            Some(true),
            "a cut answer is not the tool's shape"
        );
        let t = text(&r);
        assert!(t.len() <= 4096, "{t}");
        assert!(!t.contains("line 0001"), "nothing of the body is sent: {t}");
        let s = r.structured_content.expect("structured");
        assert_eq!(s["truncated"], true);
        assert_eq!(s["result_bytes"], whole_bytes);
        assert_eq!(s["max_bytes"], 4096);
        assert_eq!(s["summary"], "200 lines");
        assert_eq!(
            s["how_to_get_the_rest"],
            "Pass the cursor it returned, or a smaller `tail`."
        );
        let (headline, json) = t.split_once('\n').unwrap();
        assert!(headline.contains("results.max_bytes") && headline.contains("smaller `tail`"));
        assert_eq!(json, serde_json::to_string(&s).unwrap());
    }

    #[test]
    fn the_cap_counts_the_whole_text_block_and_admits_exactly_the_cap() {
        // What is sent is measured: the redacted text.
        let body = serde_json::to_string(&lines(10))
            .unwrap()
            .replace("s3cr3t-value", "[REDACTED]");
        let exact = format!("ten\n{body}").len() as u64;
        let at = result(answer(
            "t",
            Ok(Outcome::done("ten", lines(10))),
            &Shaping { max_bytes: exact },
        ));
        assert_ne!(at.is_error, Some(true));
        let over = result(answer(
            "t",
            Ok(Outcome::done("ten", lines(10))),
            &Shaping {
                max_bytes: exact - 1,
            },
        ));
        assert_eq!(over.is_error, Some(true));
        // Without a tool's own advice, the generic one names the tool.
        assert!(
            over.structured_content.unwrap()["how_to_get_the_rest"]
                .as_str()
                .unwrap()
                .starts_with("Call t again with narrower arguments")
        );
    }

    #[test]
    fn an_error_over_the_cap_keeps_its_beginning_and_says_it_was_cut() {
        let message = format!("Do this first. {}", "é".repeat(5000));
        let r = result(answer::<Lines>(
            "t",
            Err(ToolError::new(message.clone())),
            &Shaping { max_bytes: 4096 },
        ));
        assert_eq!(r.is_error, Some(true));
        let t = text(&r);
        assert!(t.len() <= 4096, "{}", t.len());
        assert!(t.starts_with("Do this first. éé"), "{t}");
        assert!(t.ends_with("policy key results.max_bytes)"), "{t}");
        // Under the cap an error is untouched.
        let r = result(answer::<Lines>(
            "t",
            Err(ToolError::new("short")),
            &Shaping { max_bytes: 4096 },
        ));
        assert_eq!(text(&r), "short");
    }

    #[test]
    fn a_cut_answer_is_redacted_and_one_line() {
        let r = result(answer(
            "get_logs",
            Ok(
                Outcome::done("lines of s3cr3t-value\nsecond line", lines(400))
                    .with_rest("use s3cr3t-value"),
            ),
            &Shaping { max_bytes: 4096 },
        ));
        let t = text(&r);
        assert!(!t.contains("s3cr3t"), "{t}");
        assert_eq!(t.lines().count(), 2, "{t}");
    }
}
