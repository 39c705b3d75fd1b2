//! The Prime Traces client (§9): its own base URL, `X-Prime-Team-ID` when a team is active,
//! no `Content-Type` on reads, cursor pages, retried GETs, and raw downloads streamed chunk by
//! chunk to a temporary file beside the destination, fsynced and atomically renamed.

use std::path::Path;

use futures::StreamExt;
use tokio::io::AsyncWriteExt;

use crate::client::{PlatformClient, TeamScope};
use crate::error::PlatformError;
use crate::http::{Call, Service, segment};
use crate::wire::traces::{CursorPage, Episode, RunStepList, TraceRunSummary, TraceSummary};

/// Default page size (CLI `--limit`).
pub const DEFAULT_TRACES_LIMIT: u32 = 20;
/// Largest page size the service accepts.
pub const MAX_TRACES_LIMIT: u32 = 100;

/// Sort order of `GET /traces`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TraceSort {
    /// `created_at`.
    CreatedAt,
    /// `reward`.
    Reward,
    /// `duration_ms`.
    DurationMs,
}

impl TraceSort {
    fn wire(self) -> &'static str {
        match self {
            TraceSort::CreatedAt => "created_at",
            TraceSort::Reward => "reward",
            TraceSort::DurationMs => "duration_ms",
        }
    }
}

/// Filters of `GET /traces` and `GET /episodes/{id}/traces` (the latter ignores `sort`).
#[derive(Debug, Clone, PartialEq)]
pub struct TracesQuery {
    /// Page size, 1..=100 (default 20).
    pub limit: u32,
    /// Run id.
    pub run_id: Option<String>,
    /// Upload ids (repeated `upload_id`).
    pub upload_ids: Vec<String>,
    /// Environment id.
    pub environment_id: Option<String>,
    /// Task id.
    pub task_id: Option<String>,
    /// Model id.
    pub model_id: Option<String>,
    /// Outcome.
    pub outcome: Option<String>,
    /// Error filter (`has_error=true/false`).
    pub has_error: Option<bool>,
    /// Minimum reward.
    pub reward_min: Option<f64>,
    /// Maximum reward.
    pub reward_max: Option<f64>,
    /// Created after (ISO-8601).
    pub created_after: Option<String>,
    /// Created before (ISO-8601).
    pub created_before: Option<String>,
    /// Sort order.
    pub sort: Option<TraceSort>,
    /// Cursor from a previous page.
    pub cursor: Option<String>,
    /// Context filters (`context.<k>=<v>`).
    pub context: Vec<(String, String)>,
}

impl Default for TracesQuery {
    fn default() -> Self {
        TracesQuery {
            limit: DEFAULT_TRACES_LIMIT,
            run_id: None,
            upload_ids: Vec::new(),
            environment_id: None,
            task_id: None,
            model_id: None,
            outcome: None,
            has_error: None,
            reward_min: None,
            reward_max: None,
            created_after: None,
            created_before: None,
            sort: None,
            cursor: None,
            context: Vec::new(),
        }
    }
}

/// Filters of `GET /episodes` (the per-step episode view).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EpisodesQuery {
    /// Page size, 1..=100 (default 20).
    pub limit: u32,
    /// Run id.
    pub run_id: Option<String>,
    /// Upload id.
    pub upload_id: Option<String>,
    /// Environment id.
    pub environment_id: Option<String>,
    /// Outcome.
    pub outcome: Option<String>,
    /// Error filter.
    pub has_error: Option<bool>,
    /// Episodes having a trace from this training step.
    pub run_step: Option<i64>,
    /// Created after.
    pub created_after: Option<String>,
    /// Created before.
    pub created_before: Option<String>,
    /// Context filters.
    pub context: Vec<(String, String)>,
    /// Cursor.
    pub cursor: Option<String>,
}

impl Default for EpisodesQuery {
    fn default() -> Self {
        EpisodesQuery {
            limit: DEFAULT_TRACES_LIMIT,
            run_id: None,
            upload_id: None,
            environment_id: None,
            outcome: None,
            has_error: None,
            run_step: None,
            created_after: None,
            created_before: None,
            context: Vec::new(),
            cursor: None,
        }
    }
}

/// Filters of `GET /runs` on the traces service.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceRunsQuery {
    /// Page size, 1..=100 (default 20).
    pub limit: u32,
    /// Run types (`eval`, `train`, `unknown`; repeated `run_type`).
    pub run_types: Vec<String>,
    /// Created after.
    pub created_after: Option<String>,
    /// Created before.
    pub created_before: Option<String>,
    /// Cursor.
    pub cursor: Option<String>,
}

impl Default for TraceRunsQuery {
    fn default() -> Self {
        TraceRunsQuery {
            limit: DEFAULT_TRACES_LIMIT,
            run_types: Vec::new(),
            created_after: None,
            created_before: None,
            cursor: None,
        }
    }
}

fn check_limit(limit: u32) -> Result<(), PlatformError> {
    if (1..=MAX_TRACES_LIMIT).contains(&limit) {
        Ok(())
    } else {
        Err(PlatformError::InvalidArgument(format!(
            "limit must be between 1 and {MAX_TRACES_LIMIT}"
        )))
    }
}

fn with_context(mut call: Call, context: &[(String, String)]) -> Call {
    for (k, v) in context {
        call = call.query(format!("context.{k}"), v);
    }
    call
}

/// A handle on the traces service, scoped to one team (or none).
#[derive(Debug, Clone)]
pub struct TracesClient<'a> {
    client: &'a PlatformClient,
    team: Option<String>,
}

impl PlatformClient {
    /// The traces service for the active team.
    pub fn traces(&self) -> TracesClient<'_> {
        self.traces_scoped(&TeamScope::Active)
    }

    /// The traces service for a given team scope.
    pub fn traces_scoped(&self, scope: &TeamScope) -> TracesClient<'_> {
        TracesClient {
            client: self,
            team: self.team_for(scope),
        }
    }
}

impl TracesClient<'_> {
    fn get(&self, path: String) -> Call {
        let mut call = Call::get(
            Service::Traces,
            path,
            self.client.http.settings.timeouts.traces,
        );
        call.team_header = self.team.clone();
        call
    }

    /// The team sent as `X-Prime-Team-ID`, if any.
    pub fn team(&self) -> Option<&str> {
        self.team.as_deref()
    }

    fn trace_filters(&self, call: Call, q: &TracesQuery, with_sort: bool) -> Call {
        let mut call = call
            .query("limit", q.limit)
            .query_opt("run_id", q.run_id.as_deref());
        for u in &q.upload_ids {
            call = call.query("upload_id", u);
        }
        let call = call
            .query_opt("environment_id", q.environment_id.as_deref())
            .query_opt("task_id", q.task_id.as_deref())
            .query_opt("model_id", q.model_id.as_deref())
            .query_opt("outcome", q.outcome.as_deref())
            .query_opt("has_error", q.has_error)
            .query_opt("reward_min", q.reward_min)
            .query_opt("reward_max", q.reward_max)
            .query_opt("created_after", q.created_after.as_deref())
            .query_opt("created_before", q.created_before.as_deref())
            .query_opt("sort", q.sort.filter(|_| with_sort).map(TraceSort::wire))
            .query_opt("cursor", q.cursor.as_deref());
        with_context(call, &q.context)
    }

    /// `GET /traces?limit=…&filters…` → a cursor page of trace summaries.
    pub async fn list_traces(
        &self,
        query: &TracesQuery,
    ) -> Result<CursorPage<TraceSummary>, PlatformError> {
        check_limit(query.limit)?;
        let call = self.trace_filters(self.get("/traces".into()), query, true);
        self.client.http.json(call).await
    }

    /// `GET /traces/{id}` → a trace summary.
    pub async fn get_trace(&self, trace_id: &str) -> Result<TraceSummary, PlatformError> {
        let path = format!("/traces/{}", segment(trace_id, "trace id")?);
        self.client.http.json(self.get(path)).await
    }

    /// `GET /traces/{id}?raw=true`, streamed byte-exact to `dest`: chunks go to a temporary
    /// file in the destination's directory, which is fsynced and atomically renamed over `dest`.
    /// Retried only until a 2xx arrives, never once bytes flow; a body cut short is
    /// [`PlatformError::Truncated`] and leaves `dest` untouched. Returns the bytes written.
    pub async fn download_trace_raw(
        &self,
        trace_id: &str,
        dest: &Path,
    ) -> Result<u64, PlatformError> {
        let path = format!("/traces/{}", segment(trace_id, "trace id")?);
        self.download_raw(self.get(path).query("raw", "true"), dest)
            .await
    }

    /// `GET /traces/{id}?raw=true`, streamed byte-exact into `file` (already open, written from
    /// where it stands; `shown` names it in errors) through a buffer of [`STREAM_BUFFER`]
    /// bytes, flushed at the end — neither synced nor renamed: making it durable and giving it
    /// its final name is the caller's (`fetch_traces` syncs a batch of files off the runtime,
    /// then their directory once). Retried only until a 2xx arrives; a body cut short is
    /// [`PlatformError::Truncated`] and the file's contents are then to be discarded.
    pub async fn download_trace_into(
        &self,
        trace_id: &str,
        file: &mut tokio::fs::File,
        shown: &Path,
    ) -> Result<u64, PlatformError> {
        let path = format!("/traces/{}", segment(trace_id, "trace id")?);
        self.stream_into(self.get(path).query("raw", "true"), file, shown)
            .await
    }

    /// `GET /episodes?limit=…&filters…` → a cursor page of episodes.
    pub async fn list_episodes(
        &self,
        query: &EpisodesQuery,
    ) -> Result<CursorPage<Episode>, PlatformError> {
        check_limit(query.limit)?;
        let call = self
            .get("/episodes".into())
            .query("limit", query.limit)
            .query_opt("run_id", query.run_id.as_deref())
            .query_opt("upload_id", query.upload_id.as_deref())
            .query_opt("environment_id", query.environment_id.as_deref())
            .query_opt("outcome", query.outcome.as_deref())
            .query_opt("has_error", query.has_error)
            .query_opt("run_step", query.run_step)
            .query_opt("created_after", query.created_after.as_deref())
            .query_opt("created_before", query.created_before.as_deref());
        let call = with_context(call, &query.context).query_opt("cursor", query.cursor.as_deref());
        self.client.http.json(call).await
    }

    /// `GET /episodes/{id}` → the episode detail (with `traces` statistics).
    pub async fn get_episode(&self, episode_id: &str) -> Result<Episode, PlatformError> {
        let path = format!("/episodes/{}", segment(episode_id, "episode id")?);
        self.client.http.json(self.get(path)).await
    }

    /// `GET /episodes/{id}?raw=true`, streamed to `dest` like
    /// [`TracesClient::download_trace_raw`].
    pub async fn download_episode_raw(
        &self,
        episode_id: &str,
        dest: &Path,
    ) -> Result<u64, PlatformError> {
        let path = format!("/episodes/{}", segment(episode_id, "episode id")?);
        self.download_raw(self.get(path).query("raw", "true"), dest)
            .await
    }

    /// `GET /episodes/{id}/traces?…` (trace filters, no sort).
    pub async fn list_episode_traces(
        &self,
        episode_id: &str,
        query: &TracesQuery,
    ) -> Result<CursorPage<TraceSummary>, PlatformError> {
        check_limit(query.limit)?;
        let path = format!("/episodes/{}/traces", segment(episode_id, "episode id")?);
        let call = self.trace_filters(self.get(path), query, false);
        self.client.http.json(call).await
    }

    /// `GET /runs?limit=…[&run_type…][&created_after][&created_before][&cursor]`.
    pub async fn list_runs(
        &self,
        query: &TraceRunsQuery,
    ) -> Result<CursorPage<TraceRunSummary>, PlatformError> {
        check_limit(query.limit)?;
        let mut call = self.get("/runs".into()).query("limit", query.limit);
        for t in &query.run_types {
            call = call.query("run_type", t);
        }
        let call = call
            .query_opt("created_after", query.created_after.as_deref())
            .query_opt("created_before", query.created_before.as_deref())
            .query_opt("cursor", query.cursor.as_deref());
        self.client.http.json(call).await
    }

    /// `GET /runs/{id}` → the run summary.
    pub async fn get_run(&self, run_id: &str) -> Result<TraceRunSummary, PlatformError> {
        let path = format!("/runs/{}", segment(run_id, "run id")?);
        self.client.http.json(self.get(path)).await
    }

    /// `GET /runs/{id}/steps` (worth calling when the summary's `step_count > 0`).
    pub async fn get_run_steps(&self, run_id: &str) -> Result<RunStepList, PlatformError> {
        let path = format!("/runs/{}/steps", segment(run_id, "run id")?);
        self.client.http.json(self.get(path)).await
    }

    /// Stream a raw body to `dest`: a temporary file in the destination's directory receives
    /// each chunk as it arrives (never the whole body in memory), is fsynced, then renamed
    /// over `dest`. Retried (when allowed) only until a 2xx arrives, never once bytes flow. A
    /// body cut short (connection error, `Content-Length` mismatch, a chunk not arriving in
    /// time) is an error and leaves nothing at `dest`. Returns the bytes written.
    async fn download_raw(&self, call: Call, dest: &Path) -> Result<u64, PlatformError> {
        let file_name = dest.file_name().ok_or_else(|| {
            PlatformError::InvalidArgument(format!(
                "destination '{}' has no file name",
                dest.display()
            ))
        })?;
        let dir = match dest.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => std::path::PathBuf::from("."),
        };
        let mut prefix = std::ffi::OsString::from(".");
        prefix.push(file_name);
        prefix.push(".");
        let tmp = tempfile::Builder::new()
            .prefix(&prefix)
            .suffix(".part")
            .tempfile_in(&dir)
            .map_err(|e| io_error(&dir, e))?;
        // The TempPath deletes the partial file on every early return below.
        let (std_file, tmp_path) = tmp.into_parts();
        let mut file = tokio::fs::File::from_std(std_file);
        let written = self.stream_into(call, &mut file, &tmp_path).await?;
        file.sync_all().await.map_err(|e| io_error(&tmp_path, e))?;
        drop(file);
        tmp_path
            .persist(dest)
            .map_err(|e| io_error(dest, e.error))?;
        // Make the rename itself durable where the platform allows syncing a directory.
        if let Ok(d) = std::fs::File::open(&dir) {
            let _ = d.sync_all();
        }
        Ok(written)
    }

    /// Streams a raw body into `file` through a [`STREAM_BUFFER`]-byte buffer, flushed at the
    /// end; a body cut short (connection error, `Content-Length` mismatch, a chunk not arriving
    /// in time) is [`PlatformError::Truncated`]. Returns the bytes written.
    async fn stream_into(
        &self,
        call: Call,
        file: &mut tokio::fs::File,
        shown: &Path,
    ) -> Result<u64, PlatformError> {
        let endpoint = call.endpoint();
        let chunk_timeout = call.timeout;
        let response = self.client.http.stream(&call).await?;
        let expected = response.content_length();
        let mut out = tokio::io::BufWriter::with_capacity(
            expected.map_or(STREAM_BUFFER, |n| (n as usize).clamp(1, STREAM_BUFFER)),
            file,
        );
        let mut stream = response.bytes_stream();
        let mut written: u64 = 0;
        let truncated = |received| PlatformError::Truncated {
            endpoint: endpoint.clone(),
            received,
            expected,
        };
        loop {
            match tokio::time::timeout(chunk_timeout, stream.next()).await {
                Err(_) | Ok(Some(Err(_))) => return Err(truncated(written)),
                Ok(None) => break,
                Ok(Some(Ok(chunk))) => {
                    out.write_all(&chunk)
                        .await
                        .map_err(|e| io_error(shown, e))?;
                    written += chunk.len() as u64;
                }
            }
        }
        if expected.is_some_and(|n| n != written) {
            return Err(truncated(written));
        }
        out.flush().await.map_err(|e| io_error(shown, e))?;
        tracing::debug!(path = %call.path, bytes = written, "raw download complete");
        Ok(written)
    }
}

/// Bytes a raw download gathers before each write to its file (a small document is one write).
pub const STREAM_BUFFER: usize = 256 * 1024;

fn io_error(path: &Path, e: std::io::Error) -> PlatformError {
    PlatformError::Io {
        path: path.display().to_string(),
        message: e.to_string(),
    }
}
