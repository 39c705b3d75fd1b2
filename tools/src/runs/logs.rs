//! `get_logs`: a bounded log tail with component, level and search filters, each entry one
//! plain line (time, level, component, message) with progress records folded into one, and
//! the follow cursor that returns only the lines after the previous answer.
use std::sync::Arc;

use factory_platform::{LogComponent, LogsQuery, PlatformError};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::log_record::{LogRecord, Shown};
use super::log_tail;
use crate::{
    error::ToolError,
    reply::{Outcome, ToolResult},
    server::Call,
    state::{AppState, check_id, platform_error},
};

#[derive(Debug, Clone, Copy, Deserialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum Component {
    Orchestrator,
    Trainer,
    Inference,
    EnvServer,
}

#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "UPPERCASE")]
pub enum Level {
    Error,
    Warning,
    Success,
    Info,
    Debug,
}

impl Level {
    fn wire(self) -> &'static str {
        match self {
            Level::Error => "ERROR",
            Level::Warning => "WARNING",
            Level::Success => "SUCCESS",
            Level::Info => "INFO",
            Level::Debug => "DEBUG",
        }
    }
}

/// Largest `tail` accepted, as the platform's own limit.
pub const MAX_TAIL: u32 = 5000;

/// Lines read by default: enough to see what a run is doing, small enough to afford.
pub const DEFAULT_TAIL: u32 = 50;

/// Bytes of rendered lines in a default answer, so the whole answer stays within ~4 KB.
pub const DEFAULT_LINE_BYTES: usize = 3000;

/// Longest rendered line (characters); a longer message is cut with `…`.
const LINE_CHARS: usize = 400;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LogsArgs {
    pub run_id: String,
    /// orchestrator (default), trainer, inference, or env-server (needs `env`).
    pub component: Option<Component>,
    /// Environment name for env-server logs (implies component env-server).
    pub env: Option<String>,
    /// Lines from the end, 1 to 5000 (default 50).
    #[schemars(range(min = 1, max = 5000))]
    pub tail: Option<u32>,
    /// Only lines from this long ago: seconds, or a number with s/m/h/d, from 60 s to 24 h (e.g. 900, 15m, 1h, 24h, 1d).
    pub since: Option<String>,
    /// Only lines containing this text (a regex with `regex: true`).
    pub search: Option<String>,
    pub regex: Option<bool>,
    /// Only lines at this level.
    pub level: Option<Level>,
    /// Most bytes of lines to return (default 3000, maximum 65536).
    #[schemars(range(min = 1024, max = 65536))]
    pub max_bytes: Option<u32>,
    /// The `cursor` of a previous answer (same component and filters): only newer lines.
    pub cursor: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct LogsOut {
    pub run_id: String,
    pub component: String,
    /// `ok`, or `not_started` when the run has no logs yet (it is queued or starting).
    pub state: String,
    /// One per entry: `HH:MM:SS LEVEL [component] message`; progress records folded into one.
    pub lines: Vec<String>,
    pub line_count: usize,
    /// Lines left out to fit max_bytes (with a cursor: the newest, given by the next call).
    pub truncated: bool,
    pub note: Option<String>,
    /// Pass back (same filters) for only newer lines.
    pub cursor: String,
    /// With a cursor: the tail no longer overlapped, so lines may have been missed.
    pub possibly_missed: bool,
}

/// Parse `--since` as the CLI does: seconds, or a number with s/m/h/d; 60 s to 24 h.
pub fn parse_since(s: &str) -> Result<u32, ToolError> {
    let s = s.trim();
    let (num, mult) = match s.char_indices().last() {
        Some((i, 's')) => (&s[..i], 1),
        Some((i, 'm')) => (&s[..i], 60),
        Some((i, 'h')) => (&s[..i], 3600),
        Some((i, 'd')) => (&s[..i], 86400),
        _ => (s, 1),
    };
    let secs = num
        .trim()
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(mult));
    match secs {
        Some(v) if (60..=86400).contains(&v) => Ok(v as u32),
        _ => Err(ToolError::new(format!(
            "`since` must be between 60 seconds and 24 hours, as seconds or with s/m/h/d (e.g. 900, 15m, 1h); got `{}`",
            s.chars().take(32).collect::<String>()
        ))),
    }
}

pub(super) async fn get_logs(
    state: Arc<AppState>,
    args: LogsArgs,
    _call: Call,
) -> ToolResult<LogsOut> {
    check_id("run", &args.run_id)?;
    let component = component_of(&args)?;
    if args.regex == Some(true) && args.search.is_none() {
        return Err(ToolError::new(
            "`regex: true` needs `search` (the pattern).",
        ));
    }
    // Following needs a window wide enough to overlap what was seen: the CLI's default, 1000.
    let tail = args.tail.unwrap_or(if args.cursor.is_some() {
        1000
    } else {
        DEFAULT_TAIL
    });
    if !(1..=MAX_TAIL).contains(&tail) {
        return Err(ToolError::new(format!(
            "`tail` must be between 1 and {MAX_TAIL}; got {tail}"
        )));
    }
    let since_seconds = args.since.as_deref().map(parse_since).transpose()?;
    let max_bytes = args
        .max_bytes
        .map(|b| b as usize)
        .unwrap_or(DEFAULT_LINE_BYTES.min(state.limits.log_bytes))
        .clamp(1024, state.limits.log_bytes.max(1024));
    let (wire_component, name) = match component {
        Component::Orchestrator => (LogComponent::Orchestrator, "orchestrator"),
        Component::Trainer => (LogComponent::Trainer, "trainer"),
        Component::Inference => (LogComponent::Inference, "inference"),
        Component::EnvServer => (LogComponent::EnvServer, "env-server"),
    };
    // A cursor belongs to one query: the run, the component and the filters (not the tail).
    let level_name = args.level.map(|l| l.wire()).unwrap_or("");
    let since_text = since_seconds.map(|s| s.to_string()).unwrap_or_default();
    let regex_text = if args.regex == Some(true) {
        "regex"
    } else {
        ""
    };
    let query_parts = [
        args.run_id.as_str(),
        name,
        args.env.as_deref().unwrap_or(""),
        args.search.as_deref().unwrap_or(""),
        regex_text,
        level_name,
        since_text.as_str(),
    ];
    let cursor = match &args.cursor {
        Some(c) => Some(LogCursor::parse(c, &query_parts)?),
        None => None,
    };
    let query = LogsQuery {
        tail_lines: tail,
        search: args.search.clone(),
        regex: args.regex.unwrap_or(false),
        level: args.level.map(|l| l.wire().to_string()),
        since_seconds,
        component: wire_component,
        env_name: args.env.clone(),
        pod_index: None,
    };
    let context = || format!("get logs of run {}", args.run_id);
    match state.platform()?.get_logs_body(&args.run_id, &query).await {
        Ok(body) => {
            // Redacted before anything else, so the cursor's hashes never see a secret.
            let newest = match cursor {
                None => {
                    log_tail::newest_lines(&body, &state.redactor, max_bytes, &query_parts, name)
                }
                Some(_) => None,
            };
            let (lines, truncated, next, possibly_missed) = match newest {
                Some(selected) => selected,
                None => {
                    let text = body.text().map_err(|e| platform_error(&context(), &e))?;
                    // Borrowed when clean: the text is not copied.
                    let text = state.redactor.redact(&text);
                    select_lines(&text, cursor, max_bytes, &query_parts, name)
                }
            };
            let following = args.cursor.is_some();
            let summary = format!(
                "{} {}{name} log line(s) of run {}{}{}",
                lines.len(),
                if following { "new " } else { "" },
                args.run_id,
                match (truncated, following) {
                    (true, true) => " (more follow: call again with the cursor)",
                    (true, false) => " (older lines dropped to fit)",
                    _ => "",
                },
                if possibly_missed {
                    " (the tail no longer overlapped: lines may have been missed)"
                } else {
                    ""
                }
            );
            Ok(Outcome::done(
                summary,
                LogsOut {
                    run_id: args.run_id,
                    component: name.into(),
                    state: "ok".into(),
                    line_count: lines.len(),
                    lines,
                    truncated,
                    note: None,
                    cursor: next.encode(),
                    possibly_missed,
                },
            ))
        }
        Err(PlatformError::NotStartedYet { detail }) => Ok(Outcome::done(
            format!("Run {} has not started yet: no {name} logs", args.run_id),
            LogsOut {
                run_id: args.run_id.clone(),
                component: name.into(),
                state: "not_started".into(),
                lines: Vec::new(),
                line_count: 0,
                truncated: false,
                note: Some(format!(
                    "The platform says: {detail}. Wait for the run to reach RUNNING (watch_run until_status RUNNING) and call again."
                )),
                cursor: cursor
                    .unwrap_or_else(|| LogCursor::new(&query_parts))
                    .encode(),
                possibly_missed: false,
            },
        )),
        Err(PlatformError::NotFound { .. }) => Err(ToolError::new(format!(
            "Run {} was not found, or is not visible to this key and owner. list_runs shows the runs you can see.",
            args.run_id
        ))),
        Err(e) => Err(platform_error(&context(), &e)),
    }
}

/// The component asked for: `env` means env-server logs; orchestrator by default.
fn component_of(args: &LogsArgs) -> Result<Component, ToolError> {
    match (args.component, &args.env) {
        (Some(c), Some(_)) if c != Component::EnvServer => Err(ToolError::new(
            "`env` selects env-server logs: drop `component` or set it to env-server.",
        )),
        (Some(Component::EnvServer), None) => Err(ToolError::new(
            "env-server logs need `env` (the environment name; get_components lists them).",
        )),
        (_, Some(_)) => Ok(Component::EnvServer),
        (c, None) => Ok(c.unwrap_or(Component::Orchestrator)),
    }
}

/// An answer's lines (rendered), whether some were left out, the cursor after them, and
/// whether lines may have been missed.
pub(super) type Selection = (Vec<String>, bool, LogCursor, bool);

/// The lines to answer with (rendered), whether some were left out, the cursor after them, and
/// whether lines may have been missed. Without a cursor: the newest lines that fit. With one:
/// the oldest unseen lines first, so a later call continues where this one stops. The cursor
/// counts raw lines, so folding progress records loses none for the next call.
pub(super) fn select_lines(
    text: &str,
    cursor: Option<LogCursor>,
    max_bytes: usize,
    query_parts: &[&str],
    component: &str,
) -> Selection {
    let all: Vec<&str> = text.lines().collect();
    // Only the lines that can reach the answer are rendered (a 5,000-line tail answers with a
    // few dozen): rendering parses each JSON record.
    let render = |i: usize| render_line(all[i], component);
    match cursor {
        None => {
            let (from, entries) = fit_from_end(all.len(), render, max_bytes);
            let mut next = LogCursor::new(query_parts);
            next.advance(&all[from..]);
            (fold_progress(&entries), from > 0, next, false)
        }
        Some(mut c) => {
            let (from, overlapped) = c.unseen_from(&all);
            let (to, entries) = fit_forward(all.len(), from, render, max_bytes);
            c.advance(&all[from..to]);
            (fold_progress(&entries), to < all.len(), c, !overlapped)
        }
    }
}

/// Reserve for the count a folded progress line carries.
const FOLD_SUFFIX: usize = 32;

/// What one rendered entry costs in an answer: its bytes, or nothing for a progress record
/// after the first one in the answer (they fold into one line).
fn cost(e: &Entry, progress_seen: &mut bool) -> usize {
    if e.progress {
        if *progress_seen {
            return 0;
        }
        *progress_seen = true;
        return e.text.len() + 1 + FOLD_SUFFIX;
    }
    e.text.len() + 1
}

/// Where the newest of `count` entries that fit in `max_bytes` begin (at least one entry when
/// any), and those entries oldest first; `entry(i)` renders entry `i`, called newest first and
/// only until one does not fit.
pub(super) fn fit_from_end(
    count: usize,
    mut entry: impl FnMut(usize) -> Entry,
    max_bytes: usize,
) -> (usize, Vec<Entry>) {
    let mut used = 0usize;
    let mut seen = false;
    let mut from = count;
    let mut kept = Vec::new();
    while from > 0 {
        let e = entry(from - 1);
        let c = cost(&e, &mut seen);
        if used + c > max_bytes && from < count {
            break;
        }
        used += c;
        from -= 1;
        kept.push(e);
    }
    kept.reverse();
    (from, kept)
}

/// Where the oldest entries from `from` that fit in `max_bytes` end (at least one when any),
/// and those entries; `entry(i)` renders entry `i`, called only until one does not fit.
fn fit_forward(
    count: usize,
    from: usize,
    mut entry: impl FnMut(usize) -> Entry,
    max_bytes: usize,
) -> (usize, Vec<Entry>) {
    let mut used = 0usize;
    let mut seen = false;
    let mut to = from;
    let mut kept = Vec::new();
    while to < count {
        let e = entry(to);
        let c = cost(&e, &mut seen);
        if used + c > max_bytes && to > from {
            break;
        }
        used += c;
        to += 1;
        kept.push(e);
    }
    (to, kept)
}

/// One log line as an assistant reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Entry {
    pub(crate) text: String,
    /// A `"type": "progress"` record (the CLI hides these; here they fold into one line).
    pub(crate) progress: bool,
    /// A warning, an error or an exception: progress records never fold across it, so the
    /// answer keeps what came before and after it in order.
    pub(crate) notable: bool,
}

/// Renders a raw (already redacted) line: a JSON record with `timestamp`, `level` and `message`
/// as `HH:MM:SS LEVEL [tag] message` (an exception's last line appended), another line as
/// `[component] text` with escape sequences removed. The result is one bounded line with
/// control, bidi and invisible characters neutralised.
pub(crate) fn render_line(raw: &str, component: &str) -> Entry {
    let body = strip_ansi(raw.trim_end());
    let is_text = |field: &Option<Shown>| field.as_ref().and_then(Shown::as_str).is_some();
    let record = body
        .trim_start()
        .starts_with('{')
        .then(|| LogRecord::read(body.trim()))
        .flatten()
        .filter(|r| is_text(&r.timestamp) && is_text(&r.level));
    let (text, progress, notable) = match record {
        Some(r) => {
            let time = r
                .timestamp
                .as_ref()
                .and_then(Shown::as_str)
                .map(clock_time)
                .unwrap_or_default();
            let level = r.level.as_ref().and_then(Shown::as_str).unwrap_or("");
            let tag = r.tag.as_ref().and_then(Shown::as_str).unwrap_or(component);
            if r.kind.as_ref().and_then(Shown::as_str) == Some("progress") {
                let of = match (&r.step, &r.total) {
                    (Some(s), Some(t)) => format!("step {s}/{t}"),
                    (Some(s), None) => format!("step {s}"),
                    _ => String::new(),
                };
                (format!("{time} PROGRESS [{tag}] {of}"), true, false)
            } else {
                let message = match &r.message {
                    Some(m) => m.as_str().map_or_else(|| m.to_string(), str::to_owned),
                    None => String::new(),
                };
                let mut line = format!("{time} {level} [{tag}] {message}");
                let mut notable = matches!(
                    level.to_ascii_uppercase().as_str(),
                    "WARNING" | "WARN" | "ERROR" | "CRITICAL"
                );
                if let Some(exc) = r.exception.as_ref().and_then(Shown::as_str)
                    && let Some(last) = exc.lines().rev().find(|l| !l.trim().is_empty())
                {
                    line.push_str(" | exception: ");
                    line.push_str(last.trim());
                    notable = true;
                }
                (line, false, notable)
            }
        }
        None => {
            let notable = ["Traceback", "ERROR", "Error:", "WARNING"]
                .iter()
                .any(|w| body.contains(w));
            (format!("[{component}] {body}"), false, notable)
        }
    };
    Entry {
        text: factory_policies::untrusted::one_line(&text, LINE_CHARS),
        progress,
        notable,
    }
}

/// `HH:MM:SS` of an ISO-8601 timestamp (the CLI's rendering), else the text cut short.
fn clock_time(ts: &str) -> String {
    match ts.split_once('T') {
        Some((_, t)) if t.len() >= 8 && t.is_char_boundary(8) => t[..8].to_string(),
        _ => ts.chars().take(19).collect(),
    }
}

/// The line without ANSI escape sequences (CSI `ESC [ … final`, and a lone ESC dropped).
fn strip_ansi(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut it = s.chars().peekable();
    while let Some(c) = it.next() {
        if c != '\u{1b}' {
            out.push(c);
            continue;
        }
        if it.peek() == Some(&'[') {
            it.next();
            for d in it.by_ref() {
                if ('@'..='~').contains(&d) {
                    break;
                }
            }
        }
    }
    out
}

/// The entries as answer lines: the progress records between two notable lines (warnings,
/// errors, exceptions) fold into one line, at the place of the newest of them, with the count
/// when more than one; other lines in between (the per-step summaries that interleave with
/// progress) stay as they are. Nothing moves across a notable line.
pub(crate) fn fold_progress(entries: &[Entry]) -> Vec<String> {
    let mut out = Vec::with_capacity(entries.len());
    for stretch in entries.split_inclusive(|e| e.notable) {
        let count = stretch.iter().filter(|e| e.progress).count();
        let last = stretch.iter().rposition(|e| e.progress);
        for (i, e) in stretch.iter().enumerate() {
            if e.progress && Some(i) != last {
                continue;
            }
            out.push(if e.progress && count > 1 {
                format!("{} ({count} progress records folded)", e.text)
            } else {
                e.text.clone()
            });
        }
    }
    out
}

// ---- the get_logs follow cursor -------------------------------------------------------------

/// Lines of history a cursor remembers (as hashes) to find where the next tail overlaps.
const CURSOR_LINES: usize = 16;
const CURSOR_PREFIX: &str = "lc1";

/// FNV-1a: stable across builds and processes, so a cursor survives a server restart. Hashes
/// of already-redacted lines only: a cursor carries nothing derived from a secret.
fn fnv(parts: &[&str]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for p in parts {
        for b in p.bytes().chain(std::iter::once(0xff)) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    h
}

/// What `get_logs` remembers between calls: which query, and the hashes of the last lines seen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogCursor {
    query: u64,
    seen: Vec<u64>,
}

impl LogCursor {
    /// A cursor for `query` (the component and filters, which a follow-up call must repeat).
    pub fn new(query_parts: &[&str]) -> Self {
        LogCursor {
            query: fnv(query_parts),
            seen: Vec::new(),
        }
    }

    /// Parse a cursor a previous answer gave, checking it belongs to the same query.
    pub fn parse(text: &str, query_parts: &[&str]) -> Result<Self, ToolError> {
        let bad = || {
            ToolError::new(
                "`cursor` is not one this server gave: pass the `cursor` of the previous get_logs answer unchanged, or drop it to read the tail.",
            )
        };
        let body = text.strip_prefix(CURSOR_PREFIX).ok_or_else(bad)?;
        if body.is_empty() || body.len() % 16 != 0 || body.len() > 16 * (CURSOR_LINES + 1) {
            return Err(bad());
        }
        let words: Vec<u64> = (0..body.len() / 16)
            .map(|i| u64::from_str_radix(body.get(i * 16..i * 16 + 16).unwrap_or(""), 16))
            .collect::<Result<_, _>>()
            .map_err(|_| bad())?;
        let cursor = LogCursor {
            query: words[0],
            seen: words[1..].to_vec(),
        };
        if cursor.query != fnv(query_parts) {
            return Err(ToolError::new(
                "This `cursor` belongs to another log query: repeat the same run, component, env and filters as the call that returned it, or drop the cursor.",
            ));
        }
        Ok(cursor)
    }

    pub fn encode(&self) -> String {
        let mut s = String::from(CURSOR_PREFIX);
        for w in std::iter::once(self.query).chain(self.seen.iter().copied()) {
            s.push_str(&format!("{w:016x}"));
        }
        s
    }

    /// Where the unseen lines of `lines` (a fresh tail, oldest first) begin, and whether the
    /// tail still overlaps what was seen (false: lines may have been missed in between). The
    /// API only returns tails, so this finds the overlap as the CLI's follow does: the earliest
    /// place where the remembered last lines end; else a tail that starts inside them.
    pub fn unseen_from<S: AsRef<str>>(&self, lines: &[S]) -> (usize, bool) {
        let k = self.seen.len();
        if k == 0 || lines.is_empty() {
            return (0, true);
        }
        let h: Vec<u64> = lines.iter().map(|l| fnv(&[l.as_ref()])).collect();
        if let Some(j) = (k..=h.len()).find(|&j| h[j - k..j] == self.seen[..]) {
            return (j, true);
        }
        if let Some(j) = (1..k.min(h.len() + 1))
            .rev()
            .find(|&j| h[..j] == self.seen[k - j..])
        {
            return (j, true);
        }
        (0, false)
    }

    /// Remember `returned` (raw lines) as the newest lines seen.
    pub fn advance<S: AsRef<str>>(&mut self, returned: &[S]) {
        // Only the last CURSOR_LINES can be remembered: the older ones are not hashed.
        let newest = &returned[returned.len().saturating_sub(CURSOR_LINES)..];
        self.seen.extend(newest.iter().map(|l| fnv(&[l.as_ref()])));
        let extra = self.seen.len().saturating_sub(CURSOR_LINES);
        self.seen.drain(..extra);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn since_parses_like_the_cli() {
        assert_eq!(parse_since("900").unwrap(), 900);
        assert_eq!(parse_since("15m").unwrap(), 900);
        assert_eq!(parse_since("1h").unwrap(), 3600);
        assert_eq!(parse_since("1d").unwrap(), 86400);
        assert!(parse_since("30").is_err());
        assert!(parse_since("2d").is_err());
        assert!(parse_since("abc").is_err());
        assert!(parse_since("99999999999999999999h").is_err());
    }

    fn lines(xs: &[&str]) -> Vec<String> {
        xs.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_cursor_returns_only_lines_after_the_overlap() {
        let q = ["run", "orchestrator"];
        let mut c = LogCursor::new(&q);
        let first = lines(&["a", "b", "c"]);
        assert_eq!(c.unseen_from(&first), (0, true));
        c.advance(&first);
        let c = LogCursor::parse(&c.encode(), &q).unwrap();
        // The tail moved on: "a" scrolled out, "d", "e" are new.
        assert_eq!(c.unseen_from(&lines(&["b", "c", "d", "e"])), (2, true));
        // Nothing new.
        assert_eq!(c.unseen_from(&lines(&["a", "b", "c"])), (3, true));
        // The window no longer overlaps: everything is returned and the gap is said.
        assert_eq!(c.unseen_from(&lines(&["x", "y"])), (0, false));
        // Repeated text is matched as a sequence, not line by line.
        assert_eq!(
            c.unseen_from(&lines(&["a", "b", "c", "a", "b", "c"])),
            (3, true)
        );
        // Another query's cursor is refused.
        assert!(LogCursor::parse(&c.encode(), &["run", "trainer"]).is_err());
        assert!(LogCursor::parse("lc1zz", &q).is_err());
    }

    #[test]
    fn entries_read_as_one_plain_line_each() {
        let e = render_line(
            r#"{"timestamp":"2026-12-01T10:11:12.345Z","level":"INFO","message":"Step 3 | loss 1.2","tag":"trainer","step":3}"#,
            "trainer",
        );
        assert_eq!(e.text, "10:11:12 INFO [trainer] Step 3 | loss 1.2");
        assert!(!e.progress);
        let e = render_line(
            r#"{"timestamp":"2026-12-01T10:11:12Z","level":"ERROR","message":"boom","exception":"Traceback\n  x\nOOM: out of memory\n"}"#,
            "trainer",
        );
        assert_eq!(
            e.text,
            "10:11:12 ERROR [trainer] boom | exception: OOM: out of memory"
        );
        // A plain line keeps its text, with escape sequences and bidi controls neutralised.
        let e = render_line("\u{1b}[31mred\u{1b}[0m \u{202e}txt\nmore", "inference");
        assert_eq!(e.text, "[inference] red ?txt more");
        let long = render_line(&"x".repeat(5000), "trainer");
        assert!(long.text.chars().count() <= LINE_CHARS + 1);
    }

    #[test]
    fn progress_records_fold_into_the_newest_with_their_count() {
        let p = |k: u32| {
            format!(
                r#"{{"timestamp":"2026-12-01T10:00:0{k}Z","level":"INFO","type":"progress","step":{k},"total":9}}"#
            )
        };
        let raw = [p(1), "plain".to_string(), p(2), p(3)];
        let entries: Vec<Entry> = raw.iter().map(|l| render_line(l, "orchestrator")).collect();
        assert_eq!(
            fold_progress(&entries),
            vec![
                "[orchestrator] plain".to_string(),
                "10:00:03 PROGRESS [orchestrator] step 3/9 (3 progress records folded)".to_string()
            ]
        );
        // The cursor still counts every raw line: a follow-up sees none of them again.
        let q = ["run", "orchestrator"];
        let (lines, truncated, cursor, _) =
            select_lines(&raw.join("\n"), None, 4096, &q, "orchestrator");
        assert_eq!((lines.len(), truncated), (2, false));
        let (again, _, _, missed) =
            select_lines(&raw.join("\n"), Some(cursor), 4096, &q, "orchestrator");
        assert!(again.is_empty() && !missed);
    }

    #[test]
    fn progress_never_folds_across_a_warning_or_an_error() {
        let p = |k: u32| {
            format!(
                r#"{{"timestamp":"2026-12-01T10:00:0{k}Z","level":"INFO","type":"progress","step":{k},"total":9}}"#
            )
        };
        let warn = r#"{"timestamp":"2026-12-01T10:00:03Z","level":"WARNING","message":"slow"}"#;
        let raw = [p(1), p(2), warn.to_string(), p(4), p(5)];
        let entries: Vec<Entry> = raw.iter().map(|l| render_line(l, "orchestrator")).collect();
        assert_eq!(
            fold_progress(&entries),
            vec![
                "10:00:02 PROGRESS [orchestrator] step 2/9 (2 progress records folded)".to_string(),
                "10:00:03 WARNING [orchestrator] slow".to_string(),
                "10:00:05 PROGRESS [orchestrator] step 5/9 (2 progress records folded)".to_string(),
            ]
        );
    }

    #[test]
    fn a_cursor_remembers_only_the_last_lines() {
        let mut c = LogCursor::new(&["q"]);
        let many: Vec<String> = (0..100).map(|i| format!("line {i}")).collect();
        c.advance(&many);
        assert_eq!(c.seen.len(), CURSOR_LINES);
        assert_eq!(c.unseen_from(&many[50..]), (50, true));
        assert!(c.encode().len() < 300);
    }
}
