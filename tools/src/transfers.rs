//! The local side of transfers. Downloads (`fetch_traces`, `fetch_checkpoint`): the destination
//! directory is opened once, without following links, and every file is moved into it relative
//! to that handle (`factory_policies::files`); the platform client downloads into a private
//! staging directory in the state directory first, so a symlink swapped into the workspace
//! mid-download can redirect nothing. A trace's data is synced before its rename, and the
//! destination directory once per batch (`fetch_traces`), not once per file. Uploads
//! (`upload_to_volume`): every source file is read race-free, checked by
//! `factory_policies::upload` (secret files, secret contents) and staged, so what is sent is
//! exactly what was checked.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use factory_platform::TracesClient;
use factory_policies::files::{DestDir, Staging};
use factory_policies::upload::StagedUpload;

use crate::reply::ToolError;
use crate::state::AppState;

/// Opens (creating it) the destination `dest` — a path `resolve_for_write` returned — and its
/// staging directory.
pub fn open(state: &AppState, dest: &Path) -> Result<(DestDir, Staging), ToolError> {
    let dir = DestDir::open(state.workspace()?, dest)
        .map_err(|e| ToolError::new(format!("dest_dir: {e}")))?;
    let staging =
        Staging::for_dest(state.store().ok().and_then(|s| s.local_dir()), dest).map_err(|e| {
            ToolError::new(format!(
                "cannot create a staging directory for downloads: {e}"
            ))
        })?;
    Ok((dir, staging))
}

/// The directory handle and file name for `rel` (a safe relative path) under `dir`.
pub fn place(dir: &DestDir, rel: &Path) -> Result<(DestDir, PathBuf), ToolError> {
    let name = rel
        .file_name()
        .map(PathBuf::from)
        .ok_or_else(|| ToolError::new(format!("{} is not a file name", rel.display())))?;
    let parent = rel.parent().unwrap_or(Path::new(""));
    let sub = dir
        .sub(parent)
        .map_err(|e| ToolError::new(format!("dest_dir: {e}")))?;
    Ok((sub, name))
}

/// Moves a finished download from staging into `dir` as `name`.
pub fn publish(dir: &DestDir, staged: &Path, name: &Path) -> Result<u64, ToolError> {
    dir.publish(staged, name.as_os_str())
        .map_err(|e| ToolError::new(format!("cannot place the downloaded file: {e}")))
}

/// Writes an export (`bytes`) as the file `rel` (a safe relative path) under the workspace
/// directory `dest` — a path `resolve_for_write` returned — atomically and without following
/// links. Returns the path written and its bytes.
pub fn write_export(
    state: &AppState,
    dest: &Path,
    rel: &Path,
    bytes: &[u8],
) -> Result<(PathBuf, u64), ToolError> {
    let dir = DestDir::open(state.workspace()?, dest)
        .map_err(|e| ToolError::new(format!("dest_dir: {e}")))?;
    let (sub, name) = place(&dir, rel)?;
    let n = sub
        .write_bytes(name.as_os_str(), bytes)
        .map_err(|e| ToolError::new(format!("cannot write {}: {e}", rel.display())))?;
    Ok((sub.path().join(name), n))
}

/// File work off the async runtime (reads of large exports, synced writes): `work` runs on
/// the blocking pool with the shared state.
pub async fn blocking<T: Send + 'static>(
    state: &Arc<AppState>,
    work: impl FnOnce(&AppState) -> Result<T, ToolError> + Send + 'static,
) -> Result<T, ToolError> {
    let state = state.clone();
    tokio::task::spawn_blocking(move || work(&state))
        .await
        .map_err(|e| ToolError::new(format!("the export's file work failed: {e}")))?
}

/// Downloads one raw trace into a private temporary file in staging, then — on the blocking
/// pool, so the runtime keeps the other downloads flowing — syncs its data and renames it into
/// `dir` as `name` (through the directory handle). A file thus appears under its final name
/// only complete and with its data on disk; the renames become durable when the caller syncs
/// `dir` once after the batch ([`DestDir::sync`]). A failed or cut download leaves nothing
/// behind (the temporary file is removed).
pub async fn trace(
    traces: &TracesClient<'_>,
    trace_id: &str,
    staging: &Staging,
    dir: &Arc<DestDir>,
    name: &str,
) -> Result<u64, String> {
    let tmp = tempfile::Builder::new()
        .prefix(&format!(".{name}."))
        .suffix(".part")
        .tempfile_in(staging.path())
        .map_err(|e| format!("cannot create a file in the staging directory: {e}"))?;
    // The TempPath removes the partial file on every early return.
    let (file, staged) = tmp.into_parts();
    let mut file = tokio::fs::File::from_std(file);
    let n = traces
        .download_trace_into(trace_id, &mut file, &staged)
        .await
        .map_err(|e| e.to_string())?;
    let file = file.into_std().await;
    let dir = dir.clone();
    let name = name.to_string();
    tokio::task::spawn_blocking(move || {
        file.sync_data()
            .map_err(|e| format!("cannot sync the downloaded file: {e}"))?;
        drop(file);
        dir.publish(&staged, OsStr::new(&name))
            .map_err(|e| e.to_string())?;
        // Renamed away: nothing left to remove.
        let _ = staged.keep();
        Ok(n)
    })
    .await
    .map_err(|e| format!("the download's file work failed: {e}"))?
}

/// Reads, checks and stages the upload source `src` (a path `resolve_existing` returned).
pub async fn stage_upload(
    state: Arc<AppState>,
    src: PathBuf,
    max_files: usize,
) -> Result<StagedUpload, ToolError> {
    tokio::task::spawn_blocking(move || {
        factory_policies::upload::stage(
            state.workspace()?,
            &src,
            &state.secret_guard,
            state.policy.upload.allow_secret_files,
            factory_platform::transfer::MAX_PUT_BYTES,
            max_files,
        )
        .map_err(ToolError::new)
    })
    .await
    .map_err(|e| ToolError::new(format!("cannot read local_path: {e}")))?
}
