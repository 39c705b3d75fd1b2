//! The artifacts toolset: `list_volumes`, `fetch_checkpoint` (a checkpoint's files from the
//! run's volume, over the S3-compatible transfer route, into the workspace), `upload_to_volume`
//! (an SFT dataset onto a volume, as `prime volumes put`), and `fetch_traces` (its code lives
//! with `list_traces` in `traces.rs`, which shares the traces client).
//!
//! Where checkpoint files sit on the volume (`runs/<run_id>/checkpoints/step_<n>/`) is taken
//! from the checkpoint's `storageUrl` when it names a `runs/…` path; the layout below that is
//! prime-rl's and is not documented by the API.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use factory_platform::transfer::{RemoteObject, RouteKind, S3Transfer};
use factory_platform::wire::runs::{Checkpoint, RlRun};
use factory_platform::wire::volumes::TransferMode;
use factory_platform::{PlatformClient, TeamScope};
use rmcp::model::ProgressNotificationParam;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{
    catalogue, owner,
    reply::{Outcome, ToolError, ToolResult},
    run_view::fetch_run,
    server::{Call, ServerTool},
    state::{AppState, check_id, platform_error},
};

pub(crate) fn tools() -> Vec<ServerTool<AppState>> {
    vec![
        ServerTool::new(&catalogue::LIST_VOLUMES, list_volumes),
        ServerTool::new(&catalogue::FETCH_CHECKPOINT, fetch_checkpoint),
        ServerTool::new(&catalogue::UPLOAD_TO_VOLUME, upload_to_volume),
        ServerTool::new(&catalogue::FETCH_TRACES, crate::traces::fetch_traces),
    ]
}

/// Most files one `fetch_checkpoint` or `upload_to_volume` call moves.
const MAX_FILES: usize = 10_000;
/// Most files listed in a result (the counts cover all of them).
const MAX_LISTED: usize = 200;

pub(crate) fn run_scope(run: &RlRun) -> TeamScope {
    match &run.team_id {
        Some(t) => TeamScope::Team(t.clone()),
        None => TeamScope::Personal,
    }
}

fn transfer_error(what: &str, e: factory_platform::transfer::TransferError) -> ToolError {
    use factory_platform::transfer::TransferError as T;
    match e {
        T::Platform(p) => platform_error(what, &p),
        other => ToolError::new(format!("Failed to {what}: {other}.")),
    }
}

// ---------------------------------------------------------------------------------------------
// list_volumes

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListVolumesArgs {
    /// The team whose volumes to list (default: the active team).
    pub team_id: Option<String>,
    /// List the personal account's volumes instead.
    pub personal: Option<bool>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct VolumeItem {
    pub name: String,
    pub size: Option<String>,
    pub status: String,
    pub status_label: String,
    pub cluster_id: String,
    pub created_by: Option<String>,
    pub created_by_name: Option<String>,
    pub created_at: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct ListVolumesOut {
    pub team_id: Option<String>,
    pub volumes: Vec<VolumeItem>,
}

fn status_label(status: &str) -> String {
    match status {
        "RUNNING" => "CREATED",
        "TERMINATING" => "DELETING",
        "TOMBSTONED" => "DELETE FAILED",
        s => s,
    }
    .to_string()
}

async fn list_volumes(
    state: Arc<AppState>,
    args: ListVolumesArgs,
    _call: Call,
) -> ToolResult<ListVolumesOut> {
    let scope = owner::scope(args.team_id.as_deref(), args.personal, &state.policy)?;
    let platform = state.platform()?;
    let team_id = platform.team_for(&scope);
    let vols = platform
        .list_volumes(&scope)
        .await
        .map_err(|e| platform_error("list volumes", &e))?;
    let volumes: Vec<VolumeItem> = vols
        .into_iter()
        .map(|v| VolumeItem {
            size: v.size.as_ref().map(|s| match s {
                serde_json::Value::String(s) => s.clone(),
                other => other.to_string(),
            }),
            status_label: status_label(&v.status),
            name: v.name,
            status: v.status,
            cluster_id: v.cluster_id,
            created_by: v.created_by,
            created_by_name: v.created_by_name,
            created_at: v.created_at,
        })
        .collect();
    let summary = format!(
        "{} volume(s) of {}",
        volumes.len(),
        team_id
            .as_deref()
            .map_or("the personal account".to_string(), |t| format!("team {t}"))
    );
    Ok(Outcome::done(summary, ListVolumesOut { team_id, volumes }))
}

// ---------------------------------------------------------------------------------------------
// fetch_checkpoint

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FetchCheckpointArgs {
    pub run_id: String,
    /// Checkpoint step (default: the latest READY one).
    #[schemars(range(min = 0))]
    pub step: Option<i64>,
    /// Directory under the workspace; files go to `<dest_dir>/step_<n>/`.
    pub dest_dir: String,
    /// Only these files (paths relative to the checkpoint directory, e.g. `model.safetensors`).
    pub paths: Option<Vec<String>>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct FetchedCheckpointFile {
    pub path: String,
    pub local_path: String,
    pub bytes: u64,
    pub skipped: bool,
    pub resumed_from: u64,
    pub recovered: u32,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct FetchCheckpointOut {
    pub run_id: String,
    pub step: i64,
    pub volume: String,
    pub volume_path: String,
    pub local_dir: String,
    pub files_total: usize,
    pub downloaded: usize,
    pub skipped: usize,
    pub bytes: u64,
    pub received: u64,
    pub seconds: f64,
    pub mb_per_s: f64,
    pub credential_refreshes: u32,
    pub files: Vec<FetchedCheckpointFile>,
    pub cancelled: bool,
}

/// The directory of a checkpoint on its volume: from `storageUrl` when it names `runs/…`,
/// otherwise prime-rl's usual layout.
pub fn checkpoint_volume_dir(run_id: &str, ck: &Checkpoint) -> String {
    let from_url = ck
        .storage_url
        .find(&format!("runs/{run_id}/"))
        .map(|i| ck.storage_url[i..].trim_end_matches('/').to_string());
    format!(
        "{}/",
        from_url.unwrap_or_else(|| format!("runs/{run_id}/checkpoints/step_{}", ck.step))
    )
}

/// A relative path that stays inside the directory it is joined to.
fn safe_relative(rel: &str) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for seg in rel.split('/') {
        if seg.is_empty() || seg == "." || seg == ".." || seg.contains('\\') || seg.contains('\0') {
            return None;
        }
        out.push(seg);
    }
    (!out.as_os_str().is_empty()).then_some(out)
}

fn ssh_only(volume: &str, remote: &str, local: &Path, put: bool) -> ToolError {
    let cmd = if put {
        format!("prime volumes put {volume} {} {remote}", local.display())
    } else {
        format!("prime volumes get {volume} {remote} {}", local.display())
    };
    ToolError::new(format!(
        "The platform offers only an SSH session for volume {volume} (no direct storage route), which this server does not open: it needs your SSH key and the session gateway. Run this in a terminal instead: `{cmd}` (the prime CLI checks the host key)."
    ))
}

/// Send a progress notification when the client asked for them.
async fn notify(call: &Call, done: u64, total: u64, message: String) {
    if let Some(token) = call.ctx.meta.get_progress_token() {
        let _ = call
            .ctx
            .peer
            .notify_progress(
                ProgressNotificationParam::new(token, done as f64)
                    .with_total(total as f64)
                    .with_message(message),
            )
            .await;
    }
}

async fn fetch_checkpoint(
    state: Arc<AppState>,
    args: FetchCheckpointArgs,
    call: Call,
) -> ToolResult<FetchCheckpointOut> {
    check_id("run", &args.run_id)?;
    let run = fetch_run(&state, &args.run_id).await?;
    let platform = state.platform()?;
    let Some(volume) = run.volume_name.clone() else {
        return Err(ToolError::new(format!(
            "Run {} has no volume, so its checkpoints cannot be fetched through the volume transfer route (list_checkpoints shows their storage URLs). Runs launched with `volume` set keep their outputs under runs/<run_id>/ on it.",
            run.id
        )));
    };
    let checkpoints = platform
        .list_checkpoints(&run.id, None)
        .await
        .map_err(|e| platform_error(&format!("list checkpoints of run {}", run.id), &e))?
        .checkpoints;
    let ck = pick_checkpoint(&run.id, &checkpoints, args.step)?;
    let dest_root = state
        .workspace()?
        .resolve_for_write(&args.dest_dir)
        .map_err(|e| ToolError::new(format!("dest_dir: {e}")))?;
    let local_dir = dest_root.join(format!("step_{}", ck.step));
    let remote_dir = checkpoint_volume_dir(&run.id, ck);

    let route = platform
        .open_volume_transfer(&volume, TransferMode::Get, &remote_dir, &run_scope(&run))
        .await
        .map_err(|e| transfer_error(&format!("open a transfer on volume {volume}"), e))?;
    let s3 = match route {
        RouteKind::S3(s3) => s3,
        RouteKind::SessionOnly { .. } => {
            return Err(ssh_only(&volume, &remote_dir, &local_dir, false));
        }
    };
    let listed = s3
        .list(&remote_dir)
        .await
        .map_err(|e| transfer_error(&format!("list {remote_dir} on volume {volume}"), e))?;
    let plan = files_to_fetch(listed, &remote_dir, &volume, args.paths.as_deref())?;
    let mut out = FetchCheckpointOut {
        run_id: run.id.clone(),
        step: ck.step,
        volume: volume.clone(),
        volume_path: remote_dir.clone(),
        local_dir: local_dir.display().to_string(),
        files_total: plan.len(),
        downloaded: 0,
        skipped: 0,
        bytes: 0,
        received: 0,
        seconds: 0.0,
        mb_per_s: 0.0,
        credential_refreshes: 0,
        files: Vec::new(),
        cancelled: false,
    };
    download_all(&state, &s3, &plan, &local_dir, ck.step, &call, &mut out).await?;
    out.credential_refreshes = s3.refreshes();
    let summary = format!(
        "Checkpoint step {} of run {}: {} file(s), {} bytes in {} ({} downloaded, {} already complete){}",
        ck.step,
        run.id,
        out.downloaded + out.skipped,
        out.bytes,
        out.local_dir,
        out.downloaded,
        out.skipped,
        if out.cancelled {
            "; cancelled, call again to resume"
        } else {
            ""
        }
    );
    Ok(Outcome::done(summary, out))
}

/// The checkpoint asked for: at `step`, or the newest READY one; it must be READY.
fn pick_checkpoint<'a>(
    run_id: &str,
    checkpoints: &'a [Checkpoint],
    step: Option<i64>,
) -> Result<&'a Checkpoint, ToolError> {
    let ck = match step {
        Some(step) => checkpoints.iter().find(|c| c.step == step).ok_or_else(|| {
            ToolError::new(format!(
                "Run {run_id} has no checkpoint at step {step}; it has {}.",
                steps_list(checkpoints)
            ))
        })?,
        None => checkpoints
            .iter()
            .filter(|c| c.status == "READY")
            .max_by_key(|c| c.step)
            .ok_or_else(|| {
                ToolError::new(format!(
                    "Run {run_id} has no READY checkpoint yet ({}); get_progress shows its steps — call again later.",
                    steps_list(checkpoints)
                ))
            })?,
    };
    if ck.status != "READY" {
        return Err(ToolError::new(format!(
            "The checkpoint at step {} of run {run_id} is {}, not READY; call again when it is (list_checkpoints shows it).",
            ck.step, ck.status
        )));
    }
    Ok(ck)
}

/// The files under `remote_dir` to fetch (relative path, object), narrowed by `paths`; at
/// least one and at most [`MAX_FILES`].
fn files_to_fetch(
    listed: Vec<RemoteObject>,
    remote_dir: &str,
    volume: &str,
    paths: Option<&[String]>,
) -> Result<Vec<(String, RemoteObject)>, ToolError> {
    let mut plan: Vec<(String, RemoteObject)> = Vec::new();
    for o in listed {
        let Some(rel) = o.path.strip_prefix(remote_dir).map(str::to_string) else {
            continue;
        };
        if rel.is_empty() || rel.ends_with('/') {
            continue;
        }
        if let Some(filter) = paths
            && !filter.iter().any(|p| {
                rel == p.trim_matches('/') || rel.starts_with(&format!("{}/", p.trim_matches('/')))
            })
        {
            continue;
        }
        plan.push((rel, o));
    }
    if plan.is_empty() {
        return Err(ToolError::new(format!(
            "No files{} under {remote_dir} on volume {volume}; list_checkpoints shows the run's checkpoints.",
            if paths.is_some() {
                " matching `paths`"
            } else {
                ""
            }
        )));
    }
    if plan.len() > MAX_FILES {
        return Err(ToolError::new(format!(
            "{} files under {remote_dir}: more than {MAX_FILES}; pass `paths` to fetch part of it.",
            plan.len()
        )));
    }
    Ok(plan)
}

/// Download every planned file into `local_dir` (staged, then published atomically), skipping
/// files already complete; stops early when the client cancels. Fills `out`'s counts.
async fn download_all(
    state: &AppState,
    s3: &S3Transfer,
    plan: &[(String, RemoteObject)],
    local_dir: &Path,
    step: i64,
    call: &Call,
    out: &mut FetchCheckpointOut,
) -> Result<(), ToolError> {
    let (dest_dir, staging) = crate::transfers::open(state, local_dir)?;
    let total: u64 = plan.iter().map(|(_, o)| o.size).sum();
    let started = Instant::now();
    let counter = AtomicU64::new(0);
    let mut skipped_bytes = 0u64;
    for (rel, obj) in plan {
        let Some(rel_path) = safe_relative(rel) else {
            continue;
        };
        let path = local_dir.join(&rel_path);
        let (file_dir, file_name) = crate::transfers::place(&dest_dir, &rel_path)?;
        let staged = staging.path().join(&rel_path);
        if file_dir.regular_len(file_name.as_os_str()) == Some(obj.size) {
            out.skipped += 1;
            out.bytes += obj.size;
            skipped_bytes += obj.size;
            push_file(&mut out.files, rel, &path, obj.size, true, 0, 0);
            continue;
        }
        let result =
            download_with_progress(s3, obj, &staged, &counter, call, skipped_bytes, total).await;
        match result {
            None => {
                out.cancelled = true;
                break;
            }
            Some(Err(e)) => {
                return Err(transfer_error(
                    &format!(
                        "download {rel} of step {step} (files finished so far are kept; call again to resume)"
                    ),
                    e,
                ));
            }
            Some(Ok(r)) => {
                crate::transfers::publish(&file_dir, &staged, &file_name)?;
                out.downloaded += 1;
                out.bytes += r.bytes;
                push_file(
                    &mut out.files,
                    rel,
                    &path,
                    r.bytes,
                    false,
                    r.resumed_from,
                    r.recovered,
                );
            }
        }
    }
    out.received = counter.load(Ordering::Relaxed);
    out.seconds = started.elapsed().as_secs_f64();
    out.mb_per_s = if out.seconds > 0.0 {
        (out.received as f64 / 1e6 / out.seconds * 10.0).round() / 10.0
    } else {
        0.0
    };
    Ok(())
}

fn push_file(
    files: &mut Vec<FetchedCheckpointFile>,
    rel: &str,
    path: &Path,
    bytes: u64,
    skipped: bool,
    resumed_from: u64,
    recovered: u32,
) {
    if files.len() < MAX_LISTED {
        files.push(FetchedCheckpointFile {
            path: rel.to_string(),
            local_path: path.display().to_string(),
            bytes,
            skipped,
            resumed_from,
            recovered,
        });
    }
}

/// Download one file, sending progress every quarter second; `None` when the call was cancelled
/// (the partial file stays for the next call).
async fn download_with_progress(
    s3: &S3Transfer,
    obj: &RemoteObject,
    path: &Path,
    counter: &AtomicU64,
    call: &Call,
    base: u64,
    total: u64,
) -> Option<
    Result<factory_platform::transfer::DownloadReport, factory_platform::transfer::TransferError>,
> {
    let dl = s3.download(obj, path, counter);
    tokio::pin!(dl);
    let mut tick = tokio::time::interval(Duration::from_millis(250));
    loop {
        tokio::select! {
            r = &mut dl => return Some(r),
            () = call.ctx.ct.cancelled() => return None,
            _ = tick.tick() => {
                let done = base + counter.load(Ordering::Relaxed);
                notify(call, done, total, format!("{} of {total} bytes", done)).await;
            }
        }
    }
}

fn steps_list(cks: &[Checkpoint]) -> String {
    if cks.is_empty() {
        return "no checkpoints".into();
    }
    cks.iter()
        .map(|c| format!("step {} {}", c.step, c.status))
        .collect::<Vec<_>>()
        .join(", ")
}

// ---------------------------------------------------------------------------------------------
// upload_to_volume

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UploadArgs {
    /// Volume name (list_volumes shows them).
    pub volume: String,
    /// A file or folder under the workspace.
    pub local_path: String,
    /// Directory on the volume (default `datasets/<name of local_path>`); not under `runs/`.
    pub remote_dir: Option<String>,
    /// Replace files that already exist there (refused under --disable-destructive).
    pub overwrite: Option<bool>,
    /// Team owning the volume (default: the active team).
    pub team_id: Option<String>,
    /// The volume belongs to the personal account.
    pub personal: Option<bool>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct UploadedFile {
    pub path: String,
    pub bytes: u64,
    pub replaced: bool,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct UploadOut {
    pub volume: String,
    pub remote_dir: String,
    pub files_total: usize,
    pub bytes: u64,
    pub files: Vec<UploadedFile>,
    pub data_name: String,
    pub note: String,
}

/// A volume-relative directory: normalised, not the root, not under `runs/`.
fn remote_dir_of(arg: &str) -> Result<String, ToolError> {
    let mut parts: Vec<&str> = Vec::new();
    for seg in arg.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                return Err(ToolError::new("`remote_dir` may not contain `..`."));
            }
            s if s
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "._-@%+=,:".contains(c)) =>
            {
                parts.push(s)
            }
            _ => {
                return Err(ToolError::new(
                    "`remote_dir` may use letters, digits and ._-@%+=,: only (as `prime volumes put`).",
                ));
            }
        }
    }
    match parts.first() {
        None => Err(ToolError::new(
            "Upload into a directory, e.g. `datasets/<name>`, not the volume root.",
        )),
        Some(&"runs") => Err(ToolError::new(
            "runs/ holds run outputs and is read-only; upload elsewhere, e.g. datasets/<name>.",
        )),
        Some(_) => Ok(parts.join("/")),
    }
}

async fn upload_to_volume(
    state: Arc<AppState>,
    args: UploadArgs,
    call: Call,
) -> ToolResult<UploadOut> {
    let overwrite = args.overwrite.unwrap_or(false);
    if overwrite && state.policy.disable_destructive {
        return Err(ToolError::new(
            "`overwrite: true` replaces files on the volume, and this server runs with --disable-destructive; upload to a new remote_dir instead.",
        ));
    }
    let scope = owner::scope(args.team_id.as_deref(), args.personal, &state.policy)?;
    let src = state
        .workspace()?
        .resolve_existing(&args.local_path)
        .map_err(|e| ToolError::new(format!("local_path: {e}")))?;
    let default_name = src
        .file_stem()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let remote_dir = remote_dir_of(
        args.remote_dir
            .as_deref()
            .unwrap_or(&format!("datasets/{default_name}")),
    )?;
    // Read race-free, refused on a secret file or content, staged: what is sent is what was checked.
    let staged = crate::transfers::stage_upload(state.clone(), src.clone(), MAX_FILES).await?;
    let plan: Vec<(PathBuf, String)> = staged
        .files
        .iter()
        .map(|(p, rel, _)| (p.clone(), rel.clone()))
        .collect();
    if plan.is_empty() {
        return Err(ToolError::new(format!(
            "{} holds no files to upload.",
            src.display()
        )));
    }
    let platform = state.platform()?;
    let volume = args.volume.as_str();
    // Reads (what exists already) go through a get route, as the CLI plans a put.
    let reads = s3_route(
        platform,
        volume,
        TransferMode::Get,
        &remote_dir,
        &scope,
        &src,
    )
    .await?;
    let existing: Vec<String> = reads
        .list(&remote_dir)
        .await
        .map_err(|e| transfer_error(&format!("list {remote_dir} on volume {volume}"), e))?
        .into_iter()
        .map(|o| o.path)
        .collect();
    let clashes: Vec<String> = plan
        .iter()
        .map(|(_, rel)| format!("{remote_dir}/{rel}"))
        .filter(|k| existing.contains(k))
        .collect();
    if !clashes.is_empty() && !overwrite {
        return Err(ToolError::new(format!(
            "{} file(s) already exist under {remote_dir}/ on volume {volume} (e.g. {}); pass `overwrite: true` to replace them, or choose another remote_dir.",
            clashes.len(),
            clashes[0]
        )));
    }
    let writes = s3_route(
        platform,
        volume,
        TransferMode::Put,
        &remote_dir,
        &scope,
        &src,
    )
    .await?;
    let sent = send_all(&writes, &plan, &remote_dir, &existing, volume, &call).await;
    // The lease is released however the upload ended (it would expire on its own).
    if let Err(e) = writes.release().await {
        tracing::debug!("upload lease not released: {e}");
    }
    let (done, files) = sent?;
    let out = UploadOut {
        volume: args.volume.clone(),
        remote_dir: format!("{remote_dir}/"),
        files_total: plan.len(),
        bytes: done,
        files,
        data_name: format!("/volume/{remote_dir}"),
        note: format!(
            "In the SFT config set `volume = \"{}\"` and `[data] name = \"/volume/{remote_dir}\"`; the volume is mounted at /volume.",
            args.volume
        ),
    };
    Ok(Outcome::done(
        format!(
            "Uploaded {} file(s), {} bytes, to {}:{}/ — use data.name = \"/volume/{}\"",
            out.files_total, out.bytes, args.volume, remote_dir, remote_dir
        ),
        out,
    ))
}

/// The S3 route of a transfer on `volume` under `remote_dir`; a volume that offers only an SSH
/// session is refused with the CLI command to use instead.
async fn s3_route(
    platform: &PlatformClient,
    volume: &str,
    mode: TransferMode,
    remote_dir: &str,
    scope: &TeamScope,
    src: &Path,
) -> Result<S3Transfer, ToolError> {
    let what = match mode {
        TransferMode::Put => "open an upload to",
        TransferMode::Get => "open a transfer on",
    };
    match platform
        .open_volume_transfer(volume, mode, remote_dir, scope)
        .await
        .map_err(|e| transfer_error(&format!("{what} volume {volume}"), e))?
    {
        RouteKind::S3(s) => Ok(s),
        RouteKind::SessionOnly { .. } => {
            Err(ssh_only(volume, &format!("{remote_dir}/"), src, true))
        }
    }
}

/// Upload every planned file under `remote_dir`, with progress; stops at the first failure or
/// when the client cancels. The bytes sent and the files listed.
async fn send_all(
    writes: &S3Transfer,
    plan: &[(PathBuf, String)],
    remote_dir: &str,
    existing: &[String],
    volume: &str,
    call: &Call,
) -> Result<(u64, Vec<UploadedFile>), ToolError> {
    let total: u64 = plan
        .iter()
        .filter_map(|(p, _)| std::fs::metadata(p).ok().map(|m| m.len()))
        .sum();
    let mut done = 0u64;
    let mut files = Vec::new();
    for (path, rel) in plan {
        if call.ctx.ct.is_cancelled() {
            return Err(ToolError::new(
                "The upload was cancelled; files sent so far stay on the volume. Call again with `overwrite: true` to finish it.",
            ));
        }
        let key = format!("{remote_dir}/{rel}");
        let n = writes
            .upload(path, &key)
            .await
            .map_err(|e| transfer_error(&format!("upload {rel} to volume {volume}"), e))?;
        done += n;
        if files.len() < MAX_LISTED {
            files.push(UploadedFile {
                replaced: existing.contains(&key),
                path: key,
                bytes: n,
            });
        }
        notify(call, done, total, format!("{done} of {total} bytes")).await;
    }
    Ok((done, files))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ck(step: i64, url: &str) -> Checkpoint {
        Checkpoint {
            id: "c".into(),
            rft_run_id: "r1".into(),
            step,
            storage_url: url.into(),
            status: "READY".into(),
            size_bytes: None,
            created_at: "2026-01-01T00:00:00Z".into(),
            uploaded_at: None,
        }
    }

    #[test]
    fn checkpoint_dirs_come_from_the_storage_url_when_it_names_runs() {
        assert_eq!(
            checkpoint_volume_dir("r1", &ck(5, "s3://b/vol/runs/r1/checkpoints/step_5")),
            "runs/r1/checkpoints/step_5/"
        );
        assert_eq!(
            checkpoint_volume_dir("r1", &ck(7, "s3://elsewhere/x")),
            "runs/r1/checkpoints/step_7/"
        );
    }

    #[test]
    fn remote_dirs_refuse_the_root_runs_and_climbing() {
        assert_eq!(
            remote_dir_of("datasets/my-data/").unwrap(),
            "datasets/my-data"
        );
        assert!(remote_dir_of("/").is_err());
        assert!(remote_dir_of("runs/x").is_err());
        assert!(remote_dir_of("datasets/../runs").is_err());
        assert!(remote_dir_of("data sets").is_err());
    }

    #[test]
    fn relative_paths_from_the_store_cannot_escape() {
        assert!(safe_relative("../x").is_none());
        assert!(safe_relative("a//b").is_none());
        assert_eq!(safe_relative("a/b").unwrap(), PathBuf::from("a/b"));
    }
}
