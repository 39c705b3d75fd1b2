//! Volume endpoints: list, create (never retried), `ensure_volume` (the dispatch-time
//! auto-create of §6.7) and the transfer route of §10.

use std::time::Duration;

use reqwest::Method;

use crate::client::{PlatformClient, TeamScope};
use crate::error::PlatformError;
use crate::http::{Call, Service, segment};
use crate::wire::volumes::{
    CreateVolumeRequest, DEFAULT_VOLUME_SIZE, TransferMode, Volume, VolumeList,
    VolumeTransferRequest, VolumeTransferRoute,
};

/// Parameters of [`PlatformClient::ensure_volume`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnsureVolume {
    /// Volume name.
    pub name: String,
    /// Size for a new volume (default `5Ti`); ignored when the volume exists.
    pub size: Option<String>,
    /// Owner.
    pub team: TeamScope,
    /// Delay between polls (CLI: 3 s).
    pub poll_interval: Duration,
    /// How long to wait for `RUNNING` (CLI: 180 s).
    pub timeout: Duration,
}

impl EnsureVolume {
    /// CLI defaults: 5Ti, active team, 3 s polls for up to 180 s.
    pub fn new(name: impl Into<String>) -> Self {
        EnsureVolume {
            name: name.into(),
            size: None,
            team: TeamScope::Active,
            poll_interval: Duration::from_secs(3),
            timeout: Duration::from_secs(180),
        }
    }
}

/// What [`PlatformClient::ensure_volume`] did.
#[derive(Debug, Clone, PartialEq)]
pub enum EnsureVolumeOutcome {
    /// The volume already existed (any size given was ignored).
    Existing(Volume),
    /// It was created and is now `RUNNING`.
    Created(Volume),
}

impl EnsureVolumeOutcome {
    /// The volume.
    pub fn volume(&self) -> &Volume {
        match self {
            EnsureVolumeOutcome::Existing(v) | EnsureVolumeOutcome::Created(v) => v,
        }
    }
}

impl PlatformClient {
    /// `GET /training/volumes[?teamId=]`.
    pub async fn list_volumes(&self, scope: &TeamScope) -> Result<Vec<Volume>, PlatformError> {
        let call = Call::get(
            Service::Platform,
            "/training/volumes".into(),
            self.timeout(),
        )
        .query_opt("teamId", self.team_for(scope));
        Ok(self.http.json::<VolumeList>(call).await?.volumes)
    }

    /// `POST /training/volumes {"name","size","warm":true,"teamId"?}` → the volume. Never
    /// retried (billable, not idempotent).
    pub async fn create_volume(
        &self,
        name: &str,
        size: &str,
        scope: &TeamScope,
    ) -> Result<Volume, PlatformError> {
        let body = CreateVolumeRequest {
            name: name.to_owned(),
            size: size.to_owned(),
            warm: true,
            team_id: self.team_for(scope),
        };
        let call = Call::new(
            Method::POST,
            Service::Platform,
            "/training/volumes".into(),
            self.timeout(),
        )
        .json(&body)?;
        self.http.json(call).await
    }

    /// Make sure a volume exists, as `train run --volume` does: list; if absent, create it
    /// (once) and poll the list until its status is `RUNNING`. `FAILED`/`TOMBSTONED` abort;
    /// failed polls are retried until the timeout.
    pub async fn ensure_volume(
        &self,
        params: &EnsureVolume,
    ) -> Result<EnsureVolumeOutcome, PlatformError> {
        let existing = self.list_volumes(&params.team).await?;
        if let Some(v) = existing.into_iter().find(|v| v.name == params.name) {
            return Ok(EnsureVolumeOutcome::Existing(v));
        }
        let size = params.size.as_deref().unwrap_or(DEFAULT_VOLUME_SIZE);
        let created = self.create_volume(&params.name, size, &params.team).await?;
        if created.is_ready() {
            return Ok(EnsureVolumeOutcome::Created(created));
        }
        if created.has_failed() {
            return Err(PlatformError::VolumeFailed {
                name: params.name.clone(),
                status: created.status,
            });
        }
        let deadline = tokio::time::Instant::now() + params.timeout;
        let mut last_status = created.status;
        loop {
            if tokio::time::Instant::now() + params.poll_interval > deadline {
                return Err(PlatformError::VolumeTimeout {
                    name: params.name.clone(),
                    last_status,
                    waited: params.timeout,
                });
            }
            tokio::time::sleep(params.poll_interval).await;
            match self.list_volumes(&params.team).await {
                Ok(volumes) => {
                    if let Some(v) = volumes.into_iter().find(|v| v.name == params.name) {
                        if v.is_ready() {
                            return Ok(EnsureVolumeOutcome::Created(v));
                        }
                        if v.has_failed() {
                            return Err(PlatformError::VolumeFailed {
                                name: params.name.clone(),
                                status: v.status,
                            });
                        }
                        last_status = v.status;
                    }
                }
                Err(e) => {
                    tracing::debug!(volume = %params.name, error = %e, "volume poll failed; retrying");
                    last_status = format!("poll failed: {e}");
                }
            }
        }
    }

    /// `POST /training/volumes/{name}/transfer {"mode","path","teamId"?}` → a transfer route
    /// (S3 credentials are secrets). A 404 means an older backend (SSH sessions only).
    pub async fn volume_transfer_route(
        &self,
        volume: &str,
        mode: TransferMode,
        path: &str,
        scope: &TeamScope,
    ) -> Result<VolumeTransferRoute, PlatformError> {
        let body = VolumeTransferRequest {
            mode,
            path: path.to_owned(),
            team_id: self.team_for(scope),
        };
        let url_path = format!(
            "/training/volumes/{}/transfer",
            segment(volume, "volume name")?
        );
        let call =
            Call::new(Method::POST, Service::Platform, url_path, self.timeout()).json(&body)?;
        self.http.json(call).await
    }
}
