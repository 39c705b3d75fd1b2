//! Volume transfers over the route of §10: `POST /training/volumes/{name}/transfer` hands out
//! short-lived S3 credentials (`via: "r2"`) for a prefix of the volume, and the files move over
//! that S3-compatible endpoint — the `prime volumes get`/`put` path. The S3 protocol (SigV4,
//! ListObjectsV2, HeadObject, ranged GetObject, PutObject) is `object_store`'s; this module adds
//! what the CLI adds around it: credentials refreshed by calling the route again before
//! `expiresAt` (and at once when the store says they expired), downloads streamed to a temporary
//! file and renamed when complete, resumed with ranged reads after a cut, and the put lease.
//!
//! The credentials are secrets: they never appear in `Debug`, errors or logs. Every error text
//! that leaves this module has the current and past credential values scrubbed.
//!
//! `via: "session"` (or a 404 from an older backend) means SSH only; this client does not speak
//! SSH and reports [`RouteKind::SessionOnly`] so the caller can say what to run instead.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::Duration;

use chrono::{DateTime, Utc};
use futures::StreamExt;
use object_store::aws::{AmazonS3, AmazonS3Builder, AwsCredential};
use object_store::path::Path as ObjectPath;
use object_store::{
    ClientOptions, CredentialProvider, GetOptions, GetRange, ObjectStore, ObjectStoreExt,
    PutPayload, RetryConfig,
};
use reqwest::Method;
use secrecy::{ExposeSecret, SecretString};
use serde::Serialize;
use tokio::io::AsyncWriteExt;

use crate::client::{PlatformClient, TeamScope};
use crate::error::PlatformError;
use crate::http::{Call, Service, segment};
use crate::wire::volumes::{TransferMode, VolumeSession, VolumeTransferRoute};

/// Refresh the credentials this long before `expiresAt` (the CLI's advisory window).
const REFRESH_BEFORE: Duration = Duration::from_secs(5 * 60);
/// Bytes asked for by one ranged GET (the CLI's part size).
pub const PART_BYTES: u64 = 64 * 1024 * 1024;
/// Attempts per file: each cut or credential refusal costs one; progress resets nothing.
const MAX_ATTEMPTS: u32 = 6;
/// Largest file sent in one PutObject (read into memory); larger files are refused.
pub const MAX_PUT_BYTES: u64 = 256 * 1024 * 1024;
/// Per-request timeout on the storage endpoint (one part at most).
const STORAGE_TIMEOUT: Duration = Duration::from_secs(300);

/// Failures of a volume transfer. Messages never carry a credential value.
#[derive(Debug, thiserror::Error)]
pub enum TransferError {
    /// The platform refused or failed the route call.
    #[error("{0}")]
    Platform(#[from] PlatformError),
    /// The S3-compatible endpoint failed (after retries).
    #[error("storage: {0}")]
    Storage(String),
    /// The object does not exist.
    #[error("no such object on the volume: {0}")]
    NotFound(String),
    /// A local file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The local path.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// The route answered something this client cannot use.
    #[error("{0}")]
    Route(String),
}

/// What the transfer route offered.
#[derive(Debug)]
pub enum RouteKind {
    /// Direct S3 access with short-lived credentials.
    S3(S3Transfer),
    /// Only an SSH session (`via: "session"`, or a 404 from a backend without the route).
    SessionOnly {
        /// The session the route handed over, if any.
        session: Option<VolumeSession>,
    },
}

/// Body of a transfer-route call as the CLI sends it (`route_volume_transfer`):
/// `{"mode","path","entries"?,"leaseId"?,"teamId"?}`. `entries` only on a root put; `leaseId`
/// only on a put's refresh.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
struct RouteRequest {
    mode: TransferMode,
    path: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    entries: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    lease_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    team_id: Option<String>,
}

/// Body of `POST /training/volumes/{name}/transfer/release`: `{"leaseId","teamId"?}`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct ReleaseRequest {
    lease_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    team_id: Option<String>,
}

impl PlatformClient {
    /// Ask the transfer route where a get (`mode: "get"`, `path` the source) or a put (`path`
    /// the destination) should go, and open an S3 session when it says `r2`.
    pub async fn open_volume_transfer(
        &self,
        volume: &str,
        mode: TransferMode,
        path: &str,
        scope: &TeamScope,
    ) -> Result<RouteKind, TransferError> {
        let req = RouteRequest {
            mode,
            path: path.to_owned(),
            entries: None,
            lease_id: None,
            team_id: self.team_for(scope),
        };
        let route = match self.transfer_route_raw(volume, &req).await {
            Ok(r) => r,
            // A backend without the route answers FastAPI's bare 404 (§10: SSH only then); a
            // missing volume has a detail that names it.
            Err(PlatformError::NotFound { detail, .. })
                if detail.trim().eq_ignore_ascii_case("not found") =>
            {
                return Ok(RouteKind::SessionOnly { session: None });
            }
            Err(e) => return Err(e.into()),
        };
        if route.via != "r2" {
            return Ok(RouteKind::SessionOnly {
                session: route.session,
            });
        }
        let creds = Arc::new(RouteCredentials {
            client: self.clone(),
            volume: volume.to_owned(),
            request: tokio::sync::Mutex::new(RouteState {
                request: RouteRequest {
                    lease_id: route.lease_id.clone(),
                    ..req
                },
                current: None,
                expires_at: None,
                stale: false,
            }),
            seen: std::sync::Mutex::new(Vec::new()),
            refreshes: AtomicU32::new(0),
        });
        let (endpoint, bucket, prefix) = match (&route.endpoint, &route.bucket) {
            (Some(e), Some(b)) => (
                e.clone(),
                b.clone(),
                route.prefix.clone().unwrap_or_default(),
            ),
            _ => {
                return Err(TransferError::Route(
                    "the transfer route answered via r2 without an endpoint or bucket".into(),
                ));
            }
        };
        let lease_id = route.lease_id.clone();
        creds.install(route).await?;
        let _ = rustls::crypto::ring::default_provider().install_default();
        let options = ClientOptions::new()
            .with_allow_http(endpoint.starts_with("http://"))
            .with_timeout(STORAGE_TIMEOUT)
            .with_connect_timeout(Duration::from_secs(10))
            .with_user_agent(reqwest_s3::header::HeaderValue::from_static(
                crate::USER_AGENT,
            ));
        let store = AmazonS3Builder::new()
            .with_endpoint(endpoint.trim_end_matches('/'))
            .with_bucket_name(&bucket)
            .with_region("auto")
            .with_virtual_hosted_style_request(false)
            .with_credentials(creds.clone())
            .with_client_options(options)
            // Our own loop resumes cut bodies and refreshes refused credentials, so the
            // store itself does not retry (it would retry with the same expired credentials).
            .with_retry(RetryConfig {
                max_retries: 0,
                ..RetryConfig::default()
            })
            .build()
            .map_err(|e| TransferError::Route(creds.scrub(&e.to_string())))?;
        Ok(RouteKind::S3(S3Transfer {
            store: Arc::new(store),
            prefix,
            creds,
            lease_id,
            volume: volume.to_owned(),
            scope_team: self.team_for(scope),
            client: self.clone(),
        }))
    }

    async fn transfer_route_raw(
        &self,
        volume: &str,
        req: &RouteRequest,
    ) -> Result<VolumeTransferRoute, PlatformError> {
        let url_path = format!(
            "/training/volumes/{}/transfer",
            segment(volume, "volume name")?
        );
        let call =
            Call::new(Method::POST, Service::Platform, url_path, self.timeout()).json(req)?;
        self.http.json(call).await
    }

    /// `POST /training/volumes/{name}/transfer/release {"leaseId","teamId"?}`: end a put's
    /// upload lease (204). A backend without the route (404) lets the lease expire.
    pub async fn release_volume_transfer(
        &self,
        volume: &str,
        lease_id: &str,
        team_id: Option<String>,
    ) -> Result<(), PlatformError> {
        let url_path = format!(
            "/training/volumes/{}/transfer/release",
            segment(volume, "volume name")?
        );
        let body = ReleaseRequest {
            lease_id: lease_id.to_owned(),
            team_id,
        };
        let call =
            Call::new(Method::POST, Service::Platform, url_path, self.timeout()).json(&body)?;
        match self.http.json_object(call).await {
            Ok(_) | Err(PlatformError::NotFound { .. }) => Ok(()),
            Err(e) => Err(e),
        }
    }
}

struct RouteState {
    request: RouteRequest,
    current: Option<Arc<AwsCredential>>,
    expires_at: Option<DateTime<Utc>>,
    /// The store refused the current credentials: fetch new ones on the next request.
    stale: bool,
}

/// The route's credentials as an `object_store` credential provider: refreshed by calling the
/// route again shortly before `expiresAt`, or at once after the store refused them.
struct RouteCredentials {
    client: PlatformClient,
    volume: String,
    request: tokio::sync::Mutex<RouteState>,
    /// Every credential value handed out so far, for scrubbing error texts.
    seen: std::sync::Mutex<Vec<SecretString>>,
    refreshes: AtomicU32,
}

impl std::fmt::Debug for RouteCredentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RouteCredentials")
            .field("volume", &self.volume)
            .field("refreshes", &self.refreshes.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

impl RouteCredentials {
    async fn install(&self, route: VolumeTransferRoute) -> Result<(), TransferError> {
        let mut st = self.request.lock().await;
        self.install_locked(&mut st, route)
    }

    fn install_locked(
        &self,
        st: &mut RouteState,
        route: VolumeTransferRoute,
    ) -> Result<(), TransferError> {
        if route.via != "r2" {
            return Err(TransferError::Route(
                "the volume's transfer route switched to an SSH session (someone opened one); call again".into(),
            ));
        }
        let (Some(key_id), Some(secret)) = (route.access_key_id, route.secret_access_key) else {
            return Err(TransferError::Route(
                "the transfer route answered via r2 without credentials".into(),
            ));
        };
        {
            let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
            seen.push(SecretString::from(key_id.clone()));
            seen.push(secret.clone());
            if let Some(t) = &route.session_token {
                seen.push(t.clone());
            }
        }
        st.expires_at = route
            .expires_at
            .as_deref()
            .and_then(|s| DateTime::parse_from_rfc3339(s).ok())
            .map(|d| d.with_timezone(&Utc));
        if route.lease_id.is_some() {
            st.request.lease_id = route.lease_id;
        }
        st.current = Some(Arc::new(AwsCredential {
            key_id,
            secret_key: secret.expose_secret().to_owned(),
            token: route.session_token.map(|t| t.expose_secret().to_owned()),
        }));
        st.stale = false;
        Ok(())
    }

    fn needs_refresh(st: &RouteState) -> bool {
        st.stale
            || st.current.is_none()
            || st.expires_at.is_some_and(|exp| {
                let margin = chrono::Duration::from_std(REFRESH_BEFORE).unwrap_or_default();
                Utc::now() + margin >= exp
            })
    }

    async fn mark_stale(&self) {
        self.request.lock().await.stale = true;
    }

    /// Replace every credential value seen so far in `text`.
    fn scrub(&self, text: &str) -> String {
        let seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        let mut out = text.to_owned();
        for s in seen.iter() {
            let v = s.expose_secret();
            if !v.is_empty() {
                out = out.replace(v, "[REDACTED]");
            }
        }
        out
    }
}

#[async_trait::async_trait]
impl CredentialProvider for RouteCredentials {
    type Credential = AwsCredential;

    async fn get_credential(&self) -> object_store::Result<Arc<AwsCredential>> {
        let mut st = self.request.lock().await;
        if Self::needs_refresh(&st) {
            let fresh = self
                .client
                .transfer_route_raw(&self.volume, &st.request)
                .await
                .map_err(|e| object_store::Error::Generic {
                    store: "transfer-route",
                    source: Box::new(TransferError::Platform(e)),
                })?;
            self.install_locked(&mut st, fresh)
                .map_err(|e| object_store::Error::Generic {
                    store: "transfer-route",
                    source: Box::new(e),
                })?;
            self.refreshes.fetch_add(1, Ordering::Relaxed);
            tracing::debug!(volume = %self.volume, "volume transfer credentials refreshed");
        }
        st.current
            .clone()
            .ok_or_else(|| object_store::Error::Generic {
                store: "transfer-route",
                source: "no transfer credentials".into(),
            })
    }
}

/// One object under the transfer's prefix, with its key relative to the volume root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteObject {
    /// Volume-relative key (`runs/<id>/checkpoints/step_10/model.safetensors`).
    pub path: String,
    /// Size in bytes.
    pub size: u64,
    /// Entity tag, when the store sends one.
    pub etag: Option<String>,
    /// Last modification time.
    pub last_modified: DateTime<Utc>,
}

/// How a download went.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DownloadReport {
    /// Bytes of the complete file.
    pub bytes: u64,
    /// Bytes received by this call (less than `bytes` when it resumed).
    pub received: u64,
    /// Where this call started: non-zero when a partial file from earlier was continued.
    pub resumed_from: u64,
    /// Interruptions recovered within this call (cut bodies, refused credentials).
    pub recovered: u32,
}

/// An open S3 session on a volume (credentials refreshed as needed).
pub struct S3Transfer {
    store: Arc<AmazonS3>,
    prefix: String,
    creds: Arc<RouteCredentials>,
    lease_id: Option<String>,
    volume: String,
    scope_team: Option<String>,
    client: PlatformClient,
}

impl std::fmt::Debug for S3Transfer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("S3Transfer")
            .field("volume", &self.volume)
            .field("prefix", &self.prefix)
            .finish_non_exhaustive()
    }
}

/// Whether an object-store error means the credentials were refused (expired, unknown).
fn credentials_refused(e: &object_store::Error) -> bool {
    if matches!(
        e,
        object_store::Error::Unauthenticated { .. } | object_store::Error::PermissionDenied { .. }
    ) {
        return true;
    }
    let text = e.to_string();
    [
        "ExpiredToken",
        "InvalidAccessKeyId",
        "InvalidToken",
        "TokenRefreshRequired",
    ]
    .iter()
    .any(|m| text.contains(m))
}

impl S3Transfer {
    /// Times the credentials were fetched again (proactively or after a refusal).
    pub fn refreshes(&self) -> u32 {
        self.creds.refreshes.load(Ordering::Relaxed)
    }

    /// The put lease the route handed out, if any.
    pub fn lease_id(&self) -> Option<&str> {
        self.lease_id.as_deref()
    }

    /// End the put lease (best effort is the caller's choice).
    pub async fn release(&self) -> Result<(), PlatformError> {
        let lease = {
            let st = self.creds.request.lock().await;
            st.request.lease_id.clone()
        };
        match lease {
            Some(l) => {
                self.client
                    .release_volume_transfer(&self.volume, &l, self.scope_team.clone())
                    .await
            }
            None => Ok(()),
        }
    }

    fn key(&self, rel: &str) -> ObjectPath {
        ObjectPath::from(format!("{}{}", self.prefix, rel.trim_start_matches('/')))
    }

    fn storage_error(&self, e: &object_store::Error) -> TransferError {
        match e {
            object_store::Error::NotFound { path, .. } => {
                TransferError::NotFound(self.creds.scrub(path.trim_start_matches(&self.prefix)))
            }
            e => TransferError::Storage(self.creds.scrub(&e.to_string())),
        }
    }

    /// Run `op` again after a credential refusal (once per call, with fresh credentials).
    async fn with_refresh<T, F, Fut>(&self, op: F) -> Result<T, TransferError>
    where
        F: Fn() -> Fut,
        Fut: std::future::Future<Output = object_store::Result<T>>,
    {
        match op().await {
            Ok(v) => Ok(v),
            Err(e) if credentials_refused(&e) => {
                self.creds.mark_stale().await;
                op().await.map_err(|e| self.storage_error(&e))
            }
            Err(e) => Err(self.storage_error(&e)),
        }
    }

    /// Every object under the volume-relative directory `rel` (`""` = the transfer's root).
    pub async fn list(&self, rel: &str) -> Result<Vec<RemoteObject>, TransferError> {
        let dir = rel.trim_matches('/');
        let prefix = if dir.is_empty() {
            ObjectPath::from(self.prefix.trim_end_matches('/'))
        } else {
            self.key(dir)
        };
        let metas = self
            .with_refresh(|| async {
                let mut out = Vec::new();
                let mut stream = self.store.list(Some(&prefix));
                while let Some(item) = stream.next().await {
                    out.push(item?);
                }
                Ok(out)
            })
            .await?;
        let root = self.prefix.as_str();
        let mut objects: Vec<RemoteObject> = metas
            .into_iter()
            .map(|m| RemoteObject {
                path: m
                    .location
                    .as_ref()
                    .strip_prefix(root)
                    .unwrap_or(m.location.as_ref())
                    .to_owned(),
                size: m.size,
                etag: m.e_tag,
                last_modified: m.last_modified,
            })
            .collect();
        objects.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(objects)
    }

    /// The object at volume-relative `rel`, or `None`.
    pub async fn head(&self, rel: &str) -> Result<Option<RemoteObject>, TransferError> {
        let key = self.key(rel);
        match self.with_refresh(|| self.store.head(&key)).await {
            Ok(m) => Ok(Some(RemoteObject {
                path: rel.to_owned(),
                size: m.size,
                etag: m.e_tag,
                last_modified: m.last_modified,
            })),
            Err(TransferError::NotFound(_)) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Download `obj` to `dest`: bytes go to a temporary sibling (`.<name>.<etag>.part`) that
    /// survives interruptions and is continued with ranged reads (by this call after a cut, or
    /// by a later call), then fsynced and renamed onto `dest`. `progress` counts bytes received.
    pub async fn download(
        &self,
        obj: &RemoteObject,
        dest: &Path,
        progress: &AtomicU64,
    ) -> Result<DownloadReport, TransferError> {
        let io = |source| TransferError::Io {
            path: dest.to_path_buf(),
            source,
        };
        let part = partial_path(dest, obj.etag.as_deref());
        if let Some(parent) = dest.parent() {
            tokio::fs::create_dir_all(parent).await.map_err(io)?;
        }
        let mut offset = match tokio::fs::metadata(&part).await {
            Ok(m) if m.len() <= obj.size => m.len(),
            Ok(_) => {
                tokio::fs::remove_file(&part).await.map_err(io)?;
                0
            }
            Err(_) => 0,
        };
        let mut report = DownloadReport {
            bytes: obj.size,
            resumed_from: offset,
            ..DownloadReport::default()
        };
        let mut file = tokio::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&part)
            .await
            .map_err(io)?;
        let key = self.key(&obj.path);
        let mut failures = 0u32;
        while offset < obj.size {
            let end = (offset + PART_BYTES).min(obj.size);
            let opts = GetOptions {
                range: Some(GetRange::Bounded(offset..end)),
                if_match: obj.etag.clone(),
                ..GetOptions::default()
            };
            let result = match self.store.get_opts(&key, opts).await {
                Ok(r) => r,
                Err(e) => {
                    failures += 1;
                    if failures >= MAX_ATTEMPTS {
                        return Err(self.storage_error(&e));
                    }
                    if matches!(e, object_store::Error::Precondition { .. }) {
                        // The object changed since it was listed: start over.
                        file.set_len(0).await.map_err(io)?;
                        return Err(TransferError::Storage(format!(
                            "{} changed on the volume while it was downloaded; call again",
                            obj.path
                        )));
                    }
                    if credentials_refused(&e) {
                        self.creds.mark_stale().await;
                    } else if matches!(e, object_store::Error::NotFound { .. }) {
                        return Err(self.storage_error(&e));
                    }
                    report.recovered += 1;
                    tracing::debug!(path = %obj.path, offset, "ranged get failed; retrying");
                    continue;
                }
            };
            let mut stream = result.into_stream();
            let mut cut = false;
            while let Some(chunk) = stream.next().await {
                match chunk {
                    Ok(bytes) => {
                        file.write_all(&bytes).await.map_err(io)?;
                        let n = bytes.len() as u64;
                        offset += n;
                        report.received += n;
                        progress.fetch_add(n, Ordering::Relaxed);
                    }
                    Err(e) => {
                        tracing::debug!(path = %obj.path, offset, "transfer body cut: {}", self.creds.scrub(&e.to_string()));
                        cut = true;
                        break;
                    }
                }
            }
            if cut || offset < end {
                file.flush().await.map_err(io)?;
                failures += 1;
                if failures >= MAX_ATTEMPTS {
                    return Err(TransferError::Storage(format!(
                        "the download of {} kept being cut ({} of {} bytes are kept; call again to resume)",
                        obj.path, offset, obj.size
                    )));
                }
                report.recovered += 1;
            }
        }
        file.flush().await.map_err(io)?;
        file.sync_all().await.map_err(io)?;
        drop(file);
        tokio::fs::rename(&part, dest).await.map_err(io)?;
        Ok(report)
    }

    /// Upload the local file `src` to volume-relative `rel` in one PutObject.
    pub async fn upload(&self, src: &Path, rel: &str) -> Result<u64, TransferError> {
        let io = |source| TransferError::Io {
            path: src.to_path_buf(),
            source,
        };
        let len = tokio::fs::metadata(src).await.map_err(io)?.len();
        if len > MAX_PUT_BYTES {
            return Err(TransferError::Route(format!(
                "{} is {len} bytes; this server uploads files of at most {MAX_PUT_BYTES} bytes (use `prime volumes put` for larger files)",
                src.display()
            )));
        }
        let bytes = tokio::fs::read(src).await.map_err(io)?;
        let payload = PutPayload::from(bytes::Bytes::from(bytes));
        let key = self.key(rel);
        self.with_refresh(|| self.store.put(&key, payload.clone()))
            .await?;
        Ok(len)
    }
}

/// The temporary sibling a download writes into: hidden, tied to the object's entity tag so a
/// partial file of an older version is never continued.
pub fn partial_path(dest: &Path, etag: Option<&str>) -> PathBuf {
    let name = dest
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tag: String = etag
        .unwrap_or("noetag")
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .take(16)
        .collect();
    dest.with_file_name(format!(".{name}.{tag}.part"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partial_files_are_hidden_siblings_keyed_by_etag() {
        let p = partial_path(Path::new("/w/out/model.safetensors"), Some("\"abc123\""));
        assert_eq!(p, Path::new("/w/out/.model.safetensors.abc123.part"));
        assert_ne!(
            partial_path(Path::new("/w/x"), Some("\"a\"")),
            partial_path(Path::new("/w/x"), Some("\"b\""))
        );
    }

    #[test]
    fn route_requests_are_spelled_as_the_cli_sends_them() {
        let r = RouteRequest {
            mode: TransferMode::Put,
            path: "datasets/d".into(),
            entries: None,
            lease_id: Some("L1".into()),
            team_id: Some("t".into()),
        };
        assert_eq!(
            serde_json::to_value(&r).unwrap(),
            serde_json::json!({"mode": "put", "path": "datasets/d", "leaseId": "L1", "teamId": "t"})
        );
        let g = RouteRequest {
            mode: TransferMode::Get,
            path: "runs/x/".into(),
            entries: None,
            lease_id: None,
            team_id: None,
        };
        assert_eq!(
            serde_json::to_value(&g).unwrap(),
            serde_json::json!({"mode": "get", "path": "runs/x/"})
        );
    }
}
