//! `export_logs`: every component's logs of a run written into the workspace, one file per
//! component, continued by later calls. The logs API answers only a time suffix of a log — the
//! newest `tail_lines` (≤ 5,000) of the lines at most `since_seconds` (60 s – 24 h) old — so an
//! export takes what one query reaches, and a later call asks for the window since the last
//! one (widened by a minute) and keeps only what follows the lines already written: the
//! overlap is found by content, whole lines, so identical lines in the same second are counted
//! as many times as they occur. What could not be reached is said, never papered over.
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use chrono::{DateTime, Utc};
use factory_platform::{LogComponent, LogsQuery, PlatformError};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::log_components;
use crate::{
    error::ToolError,
    reply::{Outcome, ToolResult},
    run_view::fetch_run,
    server::Call,
    state::{AppState, check_id, platform_error},
};

/// The most lines one logs query returns (§5.6).
pub(crate) const QUERY_LINES: u32 = 5000;
/// The longest look-back one logs query accepts (24 h).
pub(crate) const MAX_SINCE: u32 = 86_400;
/// The shortest look-back one logs query accepts.
pub(crate) const MIN_SINCE: u32 = 60;
/// Added to the time since the last export, so lines written around it are seen twice and
/// matched rather than missed (clock steps of the `Date` header are whole seconds).
const OVERLAP_SECS: u32 = 60;
/// The export's own record of what it wrote, beside the files.
const STATE_FILE: &str = ".export-state.json";
/// Largest log file read back to continue (bytes).
const MAX_FILE_BYTES: u64 = 512 * 1024 * 1024;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExportLogsArgs {
    pub run_id: String,
    /// Directory under the workspace (default `factory-exports/<run_id>/logs`).
    pub dest_dir: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct ExportLogsOut {
    pub run_id: String,
    pub dest_dir: String,
    pub files: Vec<ExportedLog>,
    /// Logs requests made by this call.
    pub requests: u32,
    /// Some lines could not be reached (see each file's `gap`).
    pub possible_gap: bool,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct ExportedLog {
    pub component: String,
    pub env: Option<String>,
    pub path: String,
    /// Lines in the file.
    pub lines: u64,
    /// Lines this call added.
    pub added: u64,
    /// Oldest line's time when it carries one, else the start of the first window read.
    pub from: Option<String>,
    /// The platform's time of the newest read.
    pub to: Option<String>,
    /// What may be missing, when something may be.
    pub gap: Option<String>,
}

/// What the export remembers per component between calls (the sidecar file).
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
struct ComponentState {
    /// The platform's time of the last read.
    last_read: Option<DateTime<Utc>>,
    from: Option<String>,
    gaps: Vec<String>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct ExportState {
    run_id: String,
    components: BTreeMap<String, ComponentState>,
}

// ---- the merge: pure, tested below ----------------------------------------------------------

/// How a fresh suffix of a log lines up with the lines already written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Overlap {
    /// Lines of the fresh read already written; the rest are new.
    pub new_from: usize,
    /// Another, shorter alignment also fits (long runs of identical lines at the seam): the
    /// longest is taken, so nothing is doubled, and lines may be missing.
    pub ambiguous: bool,
}

/// Lines up `fresh` (a suffix of the log now) with `written` (a prefix of it, or its tail):
/// the old part of `fresh` is its longest prefix that `written` ends with. Whole sequences are
/// compared, so a line repeated in the same second counts as often as it occurs.
pub(crate) fn overlap<S: AsRef<str>, T: AsRef<str>>(written: &[S], fresh: &[T]) -> Overlap {
    let fits = |j: usize| {
        let w = &written[written.len() - j..];
        w.iter()
            .zip(&fresh[..j])
            .all(|(a, b)| a.as_ref() == b.as_ref())
    };
    let max = written.len().min(fresh.len());
    let Some(last) = written.last() else {
        return Overlap {
            new_from: 0,
            ambiguous: false,
        };
    };
    // Cheap filter first: the old part of `fresh` ends with the last written line.
    let mut found = (1..=max)
        .rev()
        .filter(|&j| fresh[j - 1].as_ref() == last.as_ref())
        .filter(|&j| fits(j));
    match found.next() {
        Some(j) => Overlap {
            new_from: j,
            ambiguous: found.next().is_some(),
        },
        None => Overlap {
            new_from: 0,
            ambiguous: false,
        },
    }
}

/// The window of a read: 24 h for a first export; else the time since the last read plus a
/// minute, within 60 s – 24 h. The flag says whether the window reaches back to the last read
/// (false: more than 24 h passed, so lines may be out of reach).
pub(crate) fn window(last_read: Option<DateTime<Utc>>, now: Option<DateTime<Utc>>) -> (u32, bool) {
    match (last_read, now) {
        (Some(last), Some(now)) => {
            let elapsed = (now - last).num_seconds().max(0) as u64 + 1;
            let wanted = elapsed.saturating_add(u64::from(OVERLAP_SECS));
            let since = wanted.clamp(u64::from(MIN_SINCE), u64::from(MAX_SINCE)) as u32;
            (since, wanted <= u64::from(MAX_SINCE))
        }
        // No record of the last read (or no platform time): the whole look-back, and no claim
        // that it reaches back to where the file ends.
        _ => (MAX_SINCE, false),
    }
}

/// What may be missing after a read, in words (None: nothing).
pub(crate) fn gap_after(
    first: bool,
    read: usize,
    ov: Overlap,
    reaches_last: bool,
    log_start: Option<DateTime<Utc>>,
    now: Option<DateTime<Utc>>,
) -> Option<String> {
    let full = read >= QUERY_LINES as usize;
    if first {
        if full {
            return Some(format!(
                "the log holds more than the {QUERY_LINES} newest lines one query returns: older lines within the 24 h look-back were not reachable"
            ));
        }
        if let (Some(start), Some(now)) = (log_start, now)
            && now - start > chrono::Duration::seconds(i64::from(MAX_SINCE))
        {
            return Some(format!(
                "the run started at {}, more than 24 h before {}: lines older than 24 h are out of the API's reach",
                start.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
                now.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
            ));
        }
        return None;
    }
    if ov.ambiguous {
        return Some(
            "identical lines repeat across the seam with the previous export: the longest match was taken, so some repeats may be missing".into(),
        );
    }
    if ov.new_from > 0 || (!full && reaches_last) {
        return None;
    }
    Some(if full {
        format!(
            "more than {QUERY_LINES} lines were written since the previous export: lines between the two may be missing"
        )
    } else {
        "more than 24 h passed since the previous export: lines between the two may be missing"
            .into()
    })
}

/// The time a line carries (a JSON record's `timestamp`, or a leading ISO-8601 stamp).
pub(crate) fn line_time(line: &str) -> Option<String> {
    let t = line.trim_start();
    if t.starts_with('{') {
        let v: Value = serde_json::from_str(t).ok()?;
        return v
            .get("timestamp")?
            .as_str()
            .filter(|s| s.len() <= 40)
            .map(|s| factory_policies::untrusted::one_line(s, 40));
    }
    let head: String = t.chars().take(19).collect();
    DateTime::parse_from_rfc3339(&format!("{head}Z"))
        .ok()
        .map(|_| head)
}

/// The file name of a component's log: `orchestrator.log`, `env-server-<name>.log`. An env
/// name that is not already a plain file name (other characters, a leading dot, over 80
/// characters) is made one and given the first 8 hex digits of its digest, so two env servers
/// never share a file: `env-server-my_env-1a2b3c4d.log`.
pub(crate) fn file_name(component: &str, env: Option<&str>) -> String {
    match env {
        None => format!("{component}.log"),
        Some(e) => {
            let safe: String = e
                .chars()
                .take(80)
                .map(|c| {
                    if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                        c
                    } else {
                        '_'
                    }
                })
                .collect();
            let safe = safe.trim_start_matches('.');
            if safe == e && !safe.is_empty() {
                format!("{component}-{safe}.log")
            } else {
                let digest = factory_policies::store::secret_digest(e);
                format!("{component}-{safe}-{}.log", &digest[..8])
            }
        }
    }
}

// ---- the tool -------------------------------------------------------------------------------

fn read_back(state: &AppState, path: &Path) -> Result<Option<Vec<u8>>, ToolError> {
    let ws = state.workspace()?;
    let limits = factory_policies::files::ReadLimits {
        max_bytes: MAX_FILE_BYTES,
        refuse_hard_links: true,
    };
    match factory_policies::files::read_file(ws, path, limits) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(factory_policies::files::FileError::Io { source, .. })
            if source.kind() == std::io::ErrorKind::NotFound =>
        {
            Ok(None)
        }
        Err(e) => Err(ToolError::new(format!("cannot read back the export: {e}"))),
    }
}

pub(super) async fn export_logs(
    state: Arc<AppState>,
    args: ExportLogsArgs,
    _call: Call,
) -> ToolResult<ExportLogsOut> {
    check_id("run", &args.run_id)?;
    let dest_arg = args
        .dest_dir
        .clone()
        .unwrap_or_else(|| format!("factory-exports/{}/logs", args.run_id));
    let dest: PathBuf = state
        .workspace()?
        .resolve_for_write(&dest_arg)
        .map_err(|e| ToolError::new(format!("dest_dir: {e}")))?;
    let run = fetch_run(&state, &args.run_id).await?;
    let platform = state.platform()?;
    let servers = platform
        .list_env_servers(&run.id)
        .await
        .map_err(|e| platform_error(&format!("list env servers of run {}", run.id), &e))?;
    let envs: Vec<String> = servers
        .env_servers
        .iter()
        .filter_map(|s| s.env_name.clone())
        .collect();
    let online_eval = run
        .run_config
        .as_ref()
        .and_then(|c| c.get("eval"))
        .is_some_and(Value::is_object);
    let comps = log_components(run.is_sft(), online_eval, &envs);
    let log_start = run
        .started_at
        .as_deref()
        .and_then(factory_platform::wire::parse_wire_datetime)
        .or_else(|| run.created_at_utc());

    let state_path = dest.join(STATE_FILE);
    let mut saved: ExportState =
        crate::transfers::blocking(&state, move |st| read_back(st, &state_path))
            .await?
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default();
    if !saved.run_id.is_empty() && saved.run_id != run.id {
        return Err(ToolError::bad_argument(format!(
            "dest_dir holds the log export of another run ({}): give export_logs another dest_dir (the default is factory-exports/<run_id>/logs). Nothing was written.",
            factory_policies::untrusted::one_line(&saved.run_id, 40)
        )));
    }
    saved.run_id = run.id.clone();

    let mut requests = 0u32;
    let mut files = Vec::new();
    for c in comps {
        let key = file_name(&c.component, c.env.as_deref());
        let st = saved.components.get(&key).cloned().unwrap_or_default();
        requests += 1;
        let (log, st) = export_component(&state, &run, &dest, &c, st, log_start).await?;
        files.push(log);
        if let Some(st) = st {
            saved.components.insert(key, st);
        }
    }
    let state_bytes = serde_json::to_vec_pretty(&saved)
        .map_err(|e| ToolError::new(format!("cannot record the export's state: {e}")))?;
    let d = dest.clone();
    crate::transfers::blocking(&state, move |st| {
        crate::transfers::write_export(st, &d, Path::new(STATE_FILE), &state_bytes)
    })
    .await?;

    let possible_gap = files.iter().any(|f| f.gap.is_some());
    let added: u64 = files.iter().map(|f| f.added).sum();
    let parts: Vec<String> = files
        .iter()
        .map(|f| match &f.env {
            Some(e) => format!(
                "env-server {} {} (+{})",
                factory_policies::untrusted::one_line(e, 40),
                f.lines,
                f.added
            ),
            None => format!("{} {} (+{})", f.component, f.lines, f.added),
        })
        .collect();
    let summary = format!(
        "Exported {added} new log line(s) of run {} into {}: {}{}. Call again to add what follows.",
        run.id,
        dest.display(),
        parts.join(", "),
        if possible_gap {
            "; some lines were out of reach (see gap)"
        } else {
            ""
        }
    );
    Ok(Outcome::done(
        summary,
        ExportLogsOut {
            run_id: run.id.clone(),
            dest_dir: dest.display().to_string(),
            files,
            requests,
            possible_gap,
        },
    ))
}

/// One component's export: its file read back, what is new read from the platform and
/// appended, what may be missing said. The component's new state, or `None` when it could
/// not be read this time (its file and state stay as they were; the next call retries).
async fn export_component(
    state: &Arc<AppState>,
    run: &factory_platform::wire::runs::RlRun,
    dest: &Path,
    c: &super::LogComponentItem,
    mut st: ComponentState,
    log_start: Option<DateTime<Utc>>,
) -> Result<(ExportedLog, Option<ComponentState>), ToolError> {
    let platform = state.platform()?;
    let name = file_name(&c.component, c.env.as_deref());
    let file_path = dest.join(&name);
    let existing = crate::transfers::blocking(state, move |st| read_back(st, &file_path))
        .await?
        .unwrap_or_default();
    let existing = String::from_utf8_lossy(&existing).into_owned();
    let written: Vec<&str> = existing.lines().collect();
    let first = written.is_empty();
    let last_read = if first { None } else { st.last_read };
    let (since, reaches_last) = window(last_read, platform.server_time());
    let component = match c.component.as_str() {
        "trainer" => LogComponent::Trainer,
        "inference" => LogComponent::Inference,
        "env-server" => LogComponent::EnvServer,
        _ => LogComponent::Orchestrator,
    };
    let query = LogsQuery {
        tail_lines: QUERY_LINES,
        search: None,
        regex: false,
        level: None,
        since_seconds: Some(since),
        component,
        env_name: c.env.clone(),
        pod_index: None,
    };
    let text = match platform.get_logs(&run.id, &query).await {
        Ok(r) => state.redactor.redact(&r.logs).into_owned(),
        Err(PlatformError::NotStartedYet { .. }) => String::new(),
        Err(e) => {
            // One component out of reach (a pod already gone) must not cost the others:
            // its file stays as it was, the error is its gap, the next call retries it.
            let err = platform_error(&format!("get {} logs of run {}", c.component, run.id), &e);
            let log = ExportedLog {
                component: c.component.clone(),
                env: c.env.clone(),
                path: dest.join(&name).display().to_string(),
                lines: written.len() as u64,
                added: 0,
                from: st.from.clone(),
                to: st
                    .last_read
                    .map(|n| n.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)),
                gap: Some(format!("not read this time: {}", err.message)),
            };
            return Ok((log, None));
        }
    };
    let now = platform.server_time();
    let fresh: Vec<&str> = text.lines().collect();
    let mut ov = overlap(&written, &fresh);
    // A seam of one or two lines that carry no time may be chance (the component idle
    // for the minute before the last read, then writing the same line again): kept as
    // the match, but said to be uncertain.
    if ov.new_from > 0
        && ov.new_from < 3
        && fresh[..ov.new_from].iter().all(|l| line_time(l).is_none())
    {
        ov.ambiguous = true;
    }
    let gap = gap_after(first, fresh.len(), ov, reaches_last, log_start, now);
    let added = &fresh[ov.new_from..];
    if first && st.from.is_none() {
        st.from = fresh
            .iter()
            .take(50)
            .find_map(|l| line_time(l))
            .or_else(|| {
                (fresh.len() < QUERY_LINES as usize)
                    .then(|| {
                        now.map(|n| {
                            let start = n - chrono::Duration::seconds(i64::from(since));
                            log_start.map_or(start, |s| s.max(start))
                        })
                    })
                    .flatten()
                    .map(|d| d.to_rfc3339_opts(chrono::SecondsFormat::Secs, true))
            });
    }
    let total = written.len() + added.len();
    let path = if added.is_empty() && !first {
        dest.join(&name)
    } else {
        let mut out = existing.clone();
        if !out.is_empty() && !out.ends_with('\n') {
            out.push('\n');
        }
        for l in added {
            out.push_str(l);
            out.push('\n');
        }
        let (d, n) = (dest.to_path_buf(), name.clone());
        crate::transfers::blocking(state, move |st| {
            crate::transfers::write_export(st, &d, Path::new(&n), out.as_bytes())
        })
        .await?
        .0
    };
    if let Some(g) = &gap {
        st.gaps.push(format!(
            "{}: {g}",
            now.map(|n| n.to_rfc3339_opts(chrono::SecondsFormat::Secs, true))
                .unwrap_or_default()
        ));
        let extra = st.gaps.len().saturating_sub(20);
        st.gaps.drain(..extra);
    }
    st.last_read = now.or(st.last_read);
    let log = ExportedLog {
        component: c.component.clone(),
        env: c.env.clone(),
        path: path.display().to_string(),
        lines: total as u64,
        added: added.len() as u64,
        from: st.from.clone(),
        to: st
            .last_read
            .map(|n| n.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)),
        gap,
    };
    Ok((log, Some(st)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A platform's answer: the newest `tail` of the lines at most `since` old, at time `now`.
    fn answer(log: &[(i64, String)], now: i64, since: u32, tail: usize) -> Vec<String> {
        let kept: Vec<&String> = log
            .iter()
            .filter(|(t, _)| *t <= now && *t >= now - i64::from(since))
            .map(|(_, l)| l)
            .collect();
        kept[kept.len().saturating_sub(tail)..]
            .iter()
            .map(|s| s.to_string())
            .collect()
    }

    /// Exports at `times` against `log` (timestamp, line), as the tool does; the file.
    fn export_at(log: &[(i64, String)], times: &[i64]) -> (Vec<String>, Vec<Option<String>>) {
        let mut file: Vec<String> = Vec::new();
        let mut last: Option<i64> = None;
        let mut gaps = Vec::new();
        let at = |t: i64| DateTime::<Utc>::from_timestamp(t, 0);
        for &now in times {
            let first = file.is_empty();
            let (since, reaches) = window(if first { None } else { last.and_then(at) }, at(now));
            let fresh = answer(log, now, since, QUERY_LINES as usize);
            let ov = overlap(&file, &fresh);
            gaps.push(gap_after(first, fresh.len(), ov, reaches, at(0), at(now)));
            file.extend(fresh[ov.new_from..].iter().cloned());
            last = Some(now);
        }
        (file, gaps)
    }

    /// A busy log: `per_sec` lines a second, many identical within a second.
    fn busy_log(secs: i64, per_sec: usize) -> Vec<(i64, String)> {
        (0..secs)
            .flat_map(|t| {
                (0..per_sec).map(move |i| {
                    let text = if i % 3 == 0 {
                        "progress".to_string()
                    } else {
                        format!("t={t} line {}", i % 2)
                    };
                    (t, text)
                })
            })
            .collect()
    }

    #[test]
    fn the_overlap_is_the_longest_prefix_the_file_ends_with() {
        let w = ["a", "b", "c"];
        assert_eq!(overlap(&w, &["b", "c", "d"]).new_from, 2);
        assert_eq!(overlap(&w, &["a", "b", "c"]).new_from, 3);
        assert_eq!(overlap(&w, &["x", "y"]).new_from, 0);
        assert_eq!(overlap::<&str, &str>(&[], &["a"]).new_from, 0);
        // Identical lines at the seam are counted, not collapsed: two "x" were written, the
        // fresh read holds three, so one is new.
        let w = ["a", "x", "x"];
        let o = overlap(&w, &["a", "x", "x", "x"]);
        assert_eq!((o.new_from, o.ambiguous), (3, false));
        // A read that starts inside a run of identical lines cannot be placed for sure: the
        // longest fit is taken (nothing doubled) and the ambiguity said.
        let w = ["x", "x", "x", "x"];
        let o = overlap(&w, &["x", "x", "x", "x", "x"]);
        assert_eq!((o.new_from, o.ambiguous), (4, true));
    }

    #[test]
    fn windows_reach_back_past_the_last_read() {
        let at = |t: i64| DateTime::<Utc>::from_timestamp(t, 0);
        assert_eq!(window(None, at(100)), (MAX_SINCE, false));
        assert_eq!(window(at(0), None), (MAX_SINCE, false));
        assert_eq!(window(at(100), at(100)), (61, true));
        assert_eq!(window(at(0), at(3600)), (3661, true));
        assert_eq!(window(at(0), at(90_000)), (MAX_SINCE, false));
    }

    #[test]
    fn exports_over_time_hold_every_line_exactly_once() {
        // 12,000 lines in 4,000 s (three a second, identical ones within a second): more than
        // one query returns, exported every 1,000 s.
        let log = busy_log(4000, 3);
        let (file, gaps) = export_at(&log, &[999, 1999, 2999, 3999, 4500]);
        let all: Vec<String> = log.iter().map(|(_, l)| l.clone()).collect();
        assert_eq!(file.len(), all.len());
        assert_eq!(file, all);
        assert!(gaps.iter().all(Option::is_none), "{gaps:?}");
        // Calls after the log ended add nothing.
        let (again, _) = export_at(&log, &[999, 1999, 2999, 3999, 4500, 4600, 9000]);
        assert_eq!(again, all);
    }

    #[test]
    fn what_one_query_cannot_reach_is_reported_and_never_doubled() {
        let log = busy_log(4000, 3);
        // One export at the end: only the newest 5,000 lines, and the gap said.
        let (file, gaps) = export_at(&log, &[4000]);
        let all: Vec<String> = log.iter().map(|(_, l)| l.clone()).collect();
        assert_eq!(file, all[all.len() - 5000..]);
        assert!(gaps[0].as_deref().unwrap().contains("5000"), "{gaps:?}");
        // Too long between exports: the second says lines may be missing, and doubles none.
        let (file, gaps) = export_at(&log, &[100, 3999]);
        assert!(gaps[1].is_some(), "{gaps:?}");
        assert_eq!(file[file.len() - 5000..], all[all.len() - 5000..]);
        assert_eq!(file.len(), 303 + 5000);
        // A log that started more than 24 h ago: the gap is said even though the read is
        // short, since the start is out of reach.
        let sparse: Vec<(i64, String)> = (0..100).map(|i| (i * 1000, format!("l{i}"))).collect();
        let (file, gaps) = export_at(&sparse, &[99_000]);
        assert_eq!(file.len(), 87);
        assert!(gaps[0].as_deref().unwrap().contains("24 h"), "{gaps:?}");
        // Within 24 h, complete: no gap.
        let (file, gaps) = export_at(&sparse[..50], &[49_000]);
        assert_eq!(file.len(), 50);
        assert_eq!(gaps[0], None);
    }

    #[test]
    fn lines_carry_their_time_and_files_their_component() {
        assert_eq!(
            line_time(r#"{"timestamp":"2026-01-02T03:04:05Z","level":"INFO","message":"m"}"#)
                .as_deref(),
            Some("2026-01-02T03:04:05Z")
        );
        assert_eq!(
            line_time("2026-01-02T03:04:05 INFO x").as_deref(),
            Some("2026-01-02T03:04:05")
        );
        assert_eq!(line_time("plain"), None);
        assert_eq!(file_name("trainer", None), "trainer.log");
        assert_eq!(
            file_name("env-server", Some("wordle")),
            "env-server-wordle.log"
        );
        // A name that had to be made a file name carries a digest of the original, so names
        // that sanitise alike still get files of their own.
        let a = file_name("env-server", Some("../x/y z"));
        assert!(
            a.starts_with("env-server-_x_y_z-") && a.ends_with(".log") && a.len() == 30,
            "{a}"
        );
        let names: std::collections::HashSet<String> = ["my env", "my_env", "my/env", "a", ".a"]
            .iter()
            .map(|e| file_name("env-server", Some(e)))
            .collect();
        assert_eq!(names.len(), 5, "{names:?}");
    }
}
