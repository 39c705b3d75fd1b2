//! `fetch_traces`: a run's raw traces (or one step's) into a workspace directory, byte-exact,
//! at most `limit` a call (a cursor continues), 8 downloads in flight, a manifest beside them.
//! Its steps: list this call's share, download it, merge the manifest, say what happened.

use super::*;
use factory_policies::files::{DestDir, Staging};

/// Default and largest number of traces one `fetch_traces` call downloads.
const FETCH_DEFAULT: u32 = 5_000;
const FETCH_MAX: u32 = 20_000;

/// Most `not_downloaded` entries listed (the summary counts all).
const MAX_LISTED_FAILURES: usize = 10;

/// The manifest `fetch_traces` keeps in its destination.
const MANIFEST: &str = "traces-manifest.jsonl";

/// Trace downloads in flight at once (`fetch_traces`).
const FETCH_CONCURRENCY: usize = 8;

/// The largest manifest read back when merging.
const MANIFEST_MAX_BYTES: u64 = 64 * 1024 * 1024;

/// One trace's download, as `fetch_traces` takes it in listing order.
enum Fetched {
    /// Cancelled before it started.
    Cancelled,
    /// Not downloaded, and why.
    Failed(String),
    /// Already complete on disk (name, bytes).
    Skipped(String, u64),
    /// Downloaded (name, bytes).
    Downloaded(String, u64),
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FetchTracesArgs {
    pub run_id: String,
    /// Directory under the workspace to write `<trace_id>.json` files into (created if absent).
    pub dest_dir: String,
    /// train (default) or eval.
    pub kind: Option<TraceKind>,
    /// Only traces of this training step.
    #[schemars(range(min = 0))]
    pub step: Option<i64>,
    /// Most traces fetched (default 5000).
    #[schemars(range(min = 1, max = 20000))]
    pub limit: Option<u32>,
    /// `next_cursor` of the previous call.
    pub cursor: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct NotDownloaded {
    pub trace_id: String,
    pub reason: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct FetchTracesOut {
    pub run_id: String,
    pub dest_dir: String,
    /// Traces this call handled (downloaded now or already complete).
    pub listed: usize,
    pub downloaded: usize,
    pub skipped: usize,
    /// Bytes on disk for the traces this call handled.
    pub bytes: u64,
    /// Traces handled by this call and the ones before it (the cursor's).
    pub fetched_so_far: u64,
    /// The run's traces of this kind (and step), by the service's counts; null if unknown.
    pub total: Option<u64>,
    /// Every file fetched into dest_dir, one JSON line each (trace_id, file, bytes); null if
    /// it could not be written (the summary says why).
    pub manifest: Option<String>,
    /// Traces remain: pass as `cursor` (same run_id, kind, step) to fetch them.
    pub next_cursor: Option<String>,
    pub not_downloaded_count: usize,
    /// Up to 10 of them.
    pub not_downloaded: Vec<NotDownloaded>,
    /// The call was cancelled before every trace was fetched; calling again resumes.
    pub cancelled: bool,
}

pub(super) fn safe_file_name(trace_id: &str) -> Option<String> {
    let ok = !trace_id.is_empty()
        && trace_id.len() <= 200
        && trace_id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.')
        && !trace_id.starts_with('.');
    ok.then(|| format!("{trace_id}.json"))
}

/// One line of the manifest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(super) struct ManifestEntry {
    pub(super) trace_id: String,
    pub(super) file: String,
    pub(super) bytes: u64,
}

/// The manifest after this call: the entries already in `existing` (a previous manifest's
/// text; lines that do not parse are dropped) with `new` ones added or replacing theirs, one
/// line per trace.
pub(super) fn merge_manifest(existing: &str, new: &[ManifestEntry]) -> String {
    let mut entries: Vec<ManifestEntry> = existing
        .lines()
        .filter_map(|l| serde_json::from_str::<ManifestEntry>(l).ok())
        .filter(|e| safe_file_name(&e.trace_id).as_deref() == Some(e.file.as_str()))
        .collect();
    let mut at: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    entries.retain(|e| at.insert(e.trace_id.clone(), 0).is_none());
    at = entries
        .iter()
        .enumerate()
        .map(|(i, e)| (e.trace_id.clone(), i))
        .collect();
    for e in new {
        match at.get(&e.trace_id) {
            Some(&i) => entries[i] = e.clone(),
            None => {
                at.insert(e.trace_id.clone(), entries.len());
                entries.push(e.clone());
            }
        }
    }
    let mut out = String::new();
    for e in &entries {
        if let Ok(line) = serde_json::to_string(e) {
            out.push_str(&line);
            out.push('\n');
        }
    }
    out
}

pub(crate) async fn fetch_traces(
    state: Arc<AppState>,
    args: FetchTracesArgs,
    call: Call,
) -> ToolResult<FetchTracesOut> {
    check_id("run", &args.run_id)?;
    let kind = args.kind.unwrap_or_default();
    if args.step.is_some_and(|s| s < 0) {
        return Err(ToolError::bad_argument("`step` must be 0 or more."));
    }
    let cap = args.limit.unwrap_or(FETCH_DEFAULT).clamp(1, FETCH_MAX) as usize;
    let filters = Filters::default();
    let query = cursor_query(&args.run_id, kind, args.step, &filters);
    let start = TraceCursor::start(args.cursor.as_deref(), query)?;
    let dest: PathBuf = state
        .workspace()?
        .resolve_for_write(&args.dest_dir)
        .map_err(|e| ToolError::bad_argument(format!("dest_dir: {e}")))?;
    let platform = state.platform()?;

    let scope = run_scope(&state, &args.run_id).await?;
    // The run exists: only now is dest_dir created, held open and written relative to.
    let (dest_dir, staging) = crate::transfers::open(&state, &dest)?;
    let dest_dir = Arc::new(dest_dir);
    let runs = trace_runs(platform, &scope, &args.run_id, kind).await?;
    let traces = platform.traces_scoped(&scope);
    let total = counts(&traces, &runs, args.step, false).await.total;
    let pager = Pager {
        traces: platform.traces_scoped(&scope),
        runs: &runs,
        step: args.step,
        filters: &filters,
    };
    let (all, next) = list_share(&pager, start.pos.clone(), cap, &args.run_id).await?;
    let count = all.len();
    let mut out = FetchTracesOut {
        run_id: args.run_id.clone(),
        dest_dir: dest.display().to_string(),
        listed: count,
        downloaded: 0,
        skipped: 0,
        bytes: 0,
        fetched_so_far: start.seen,
        total,
        manifest: None,
        next_cursor: None,
        not_downloaded_count: 0,
        not_downloaded: Vec::new(),
        cancelled: false,
    };
    let entries = download(&call, &traces, &staging, &dest_dir, &all, &mut out).await;
    let manifest_note = write_manifest(&state, &dest, &entries, &mut out)?;
    // One directory sync for the batch: every file's data was synced before its rename, so
    // this makes the files (and the manifest) durable together.
    let synced = {
        let dir = dest_dir.clone();
        tokio::task::spawn_blocking(move || dir.sync()).await
    };
    let sync_note = match synced.map_err(std::io::Error::other).and_then(|r| r) {
        Ok(()) => String::new(),
        Err(e) => format!(
            "; the directory could not be synced ({e}): the files may not survive a power loss"
        ),
    };

    let handled = (out.downloaded + out.skipped) as u64;
    if out.cancelled {
        // Resume from where this call started: what is complete on disk is skipped.
        out.next_cursor = Some(start.encode());
    }
    out.fetched_so_far = start.seen.saturating_add(handled);
    if !out.cancelled
        && let Some(pos) = next
    {
        out.next_cursor = Some(
            TraceCursor {
                query,
                seen: out.fetched_so_far,
                pos,
            }
            .encode(),
        );
    }
    let mut summary = fetch_summary(&out, handled, &manifest_note, count >= cap, cap);
    summary.push_str(&sync_note);
    Ok(Outcome::done(summary, out))
}

/// This call's share of the listing (at most about `cap`, listed first so progress has a
/// total), each id once, and where the listing goes on.
async fn list_share(
    pager: &Pager<'_>,
    from: Pos,
    cap: usize,
    run_id: &str,
) -> Result<(Vec<TraceSummary>, Option<Pos>), ToolError> {
    let mut all: Vec<TraceSummary> = Vec::new();
    let mut next = Some(from);
    // Pages that bring nothing (filters in a step, or a service that keeps answering empty
    // pages with a cursor) end the call after a while; the cursor still continues.
    let mut empty_pages = 0;
    while all.len() < cap && empty_pages < MAX_EMPTY_PAGES {
        let Some(pos) = next.take() else { break };
        let (items, after) = pager
            .page((cap - all.len()).min(100), pos)
            .await
            .map_err(|e| trace_error(run_id, e))?;
        empty_pages = if items.is_empty() { empty_pages + 1 } else { 0 };
        all.extend(items);
        next = after;
    }
    // An id listed twice (across episodes or pages) is handled once: two downloads of one id
    // would race in staging.
    let mut ids_seen = std::collections::HashSet::new();
    all.retain(|t| ids_seen.insert(t.trace_id.clone()));
    Ok((all, next))
}

/// Downloads `all` into `dest_dir`, `FETCH_CONCURRENCY` at a time over the client's pooled
/// connections, the answers taken in listing order, so progress, the manifest and the failures
/// read as if one file followed the other. Each file appears under its final name only once
/// complete and its data synced (a temporary file in staging, renamed: `transfers::trace`);
/// the caller syncs the directory once after the batch. Returns the manifest entries of the
/// files now complete; counts and failures go to `out`.
async fn download(
    call: &Call,
    traces: &TracesClient<'_>,
    staging: &Staging,
    dest_dir: &Arc<DestDir>,
    all: &[TraceSummary],
    out: &mut FetchTracesOut,
) -> Vec<ManifestEntry> {
    fn fail(out: &mut FetchTracesOut, trace_id: String, reason: String) {
        out.not_downloaded_count += 1;
        if out.not_downloaded.len() < MAX_LISTED_FAILURES {
            out.not_downloaded.push(NotDownloaded { trace_id, reason });
        }
    }
    let count = all.len();
    let progress = call.ctx.meta.get_progress_token();
    let ct = call.ctx.ct.clone();
    // Progress goes out from its own task, in order: a slow client holding a notification
    // must not stall the downloads in flight (they are polled only while the loop polls).
    let (progress_tx, progress_task) = if progress.is_some() {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<ProgressNotificationParam>();
        let peer = call.ctx.peer.clone();
        let task = tokio::spawn(async move {
            while let Some(p) = rx.recv().await {
                let _ = peer.notify_progress(p).await;
            }
        });
        (Some(tx), Some(task))
    } else {
        (None, None)
    };
    let mut entries = Vec::new();
    let mut downloads = futures::stream::iter((0..count).map(|k| {
        let t = &all[k];
        let ct = &ct;
        async move {
            if ct.is_cancelled() {
                return Fetched::Cancelled;
            }
            let Some(name) = safe_file_name(&t.trace_id) else {
                return Fetched::Failed("the id is not usable as a file name".into());
            };
            // Files appear under their final name only after a complete download whose data
            // is synced (a finished temporary file, renamed), so an existing file of the
            // advertised size is complete.
            match dest_dir.regular_len(name.as_ref()) {
                Some(len) if t.size_bytes.is_none_or(|s| s == len) => Fetched::Skipped(name, len),
                _ => match crate::transfers::trace(traces, &t.trace_id, staging, dest_dir, &name)
                    .await
                {
                    Ok(n) => Fetched::Downloaded(name, n),
                    Err(e) => Fetched::Failed(e),
                },
            }
        }
    }))
    .buffered(FETCH_CONCURRENCY);
    let mut i = 0;
    while let Some(fetched) = downloads.next().await {
        let t = &all[i];
        i += 1;
        let (name, bytes) = match fetched {
            Fetched::Cancelled => {
                out.cancelled = true;
                break;
            }
            Fetched::Failed(reason) => {
                let id = if safe_file_name(&t.trace_id).is_some() {
                    t.trace_id.clone()
                } else {
                    t.trace_id.chars().take(80).collect()
                };
                fail(out, id, reason);
                continue;
            }
            Fetched::Skipped(name, len) => {
                out.skipped += 1;
                (name, len)
            }
            Fetched::Downloaded(name, n) => {
                out.downloaded += 1;
                (name, n)
            }
        };
        out.bytes += bytes;
        entries.push(ManifestEntry {
            trace_id: t.trace_id.clone(),
            file: name,
            bytes,
        });
        if let (Some(token), Some(tx)) = (&progress, &progress_tx) {
            let _ = tx.send(
                ProgressNotificationParam::new(token.clone(), i as f64)
                    .with_total(count as f64)
                    .with_message(format!("{i} of {count} traces")),
            );
        }
    }
    drop(downloads);
    // Every progress notification is out before the result.
    drop(progress_tx);
    if let Some(task) = progress_task {
        let _ = task.await;
    }
    entries
}

/// Merges this call's files into the manifest in `dest` (what earlier calls fetched there
/// too). Not fatal: the files are in place whatever happens to their list; the returned note
/// says what went wrong, if anything.
fn write_manifest(
    state: &AppState,
    dest: &std::path::Path,
    entries: &[ManifestEntry],
    out: &mut FetchTracesOut,
) -> Result<String, ToolError> {
    let earlier = match factory_policies::files::read_file(
        state.workspace()?,
        &dest.join(MANIFEST),
        factory_policies::files::ReadLimits {
            max_bytes: MANIFEST_MAX_BYTES,
            refuse_hard_links: true,
        },
    ) {
        Ok(b) => String::from_utf8_lossy(&b).into_owned(),
        Err(factory_policies::files::FileError::Io { source, .. })
            if source.kind() == std::io::ErrorKind::NotFound =>
        {
            String::new()
        }
        // Unreadable (too large, a hard link, no permission): left as it is rather than
        // rewritten with this call's files alone.
        Err(_) => {
            return Ok(format!(
                "; the manifest {MANIFEST} exists but cannot be read, so it was left as it was"
            ));
        }
    };
    Ok(
        match crate::transfers::write_export(
            state,
            dest,
            std::path::Path::new(MANIFEST),
            merge_manifest(&earlier, entries).as_bytes(),
        ) {
            Ok((path, _)) => {
                out.manifest = Some(path.display().to_string());
                String::new()
            }
            Err(e) => format!("; the manifest was not written ({e})"),
        },
    )
}

/// The answer's summary line: what is on disk, how far the run's traces are fetched, and why
/// the call stopped where it did.
fn fetch_summary(
    out: &FetchTracesOut,
    handled: u64,
    manifest_note: &str,
    at_cap: bool,
    cap: usize,
) -> String {
    let of = match out.total {
        Some(t) => format!(" of {t}"),
        None if out.next_cursor.is_none() => format!(" of {}", out.fetched_so_far),
        None => " of an unknown total".into(),
    };
    format!(
        "{} trace file(s) in {} ({} downloaded, {} already complete, {} bytes); {}{} fetched so far{}{}{}",
        handled,
        out.dest_dir,
        out.downloaded,
        out.skipped,
        out.bytes,
        out.fetched_so_far,
        of,
        out.manifest
            .as_deref()
            .map(|m| format!("; manifest {m}"))
            .unwrap_or_else(|| manifest_note.to_string()),
        if out.not_downloaded_count == 0 {
            String::new()
        } else {
            format!("; {} not downloadable", out.not_downloaded_count)
        },
        if out.cancelled {
            "; cancelled: call again with cursor = next_cursor to resume".to_string()
        } else if out.next_cursor.is_some() && at_cap {
            format!(
                "; stopped at the cap of {cap}: call again with cursor = next_cursor for the rest"
            )
        } else if out.next_cursor.is_some() {
            "; stopped after pages without traces: call again with cursor = next_cursor for the rest"
                .to_string()
        } else {
            String::new()
        }
    )
}
