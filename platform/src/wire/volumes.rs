//! Volume wire types (camelCase): the volume object, list, create body, and the transfer
//! route of `POST /training/volumes/{name}/transfer` (§6.7, §10).

use std::fmt;

use secrecy::SecretString;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::null_default;

/// Volume status meaning "created and usable" (shown by the CLI as CREATED).
pub const VOLUME_READY: &str = "RUNNING";
/// Volume statuses that abort waiting for creation.
pub const VOLUME_FAILED_STATUSES: [&str; 2] = ["FAILED", "TOMBSTONED"];
/// Size the CLI gives a volume it creates during dispatch.
pub const DEFAULT_VOLUME_SIZE: &str = "5Ti";

/// A named volume. `name`, `status`, `clusterId` and `pvcName` are required.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Volume {
    /// Volume name.
    pub name: String,
    /// Size as sent (e.g. `"5Ti"`).
    #[serde(default)]
    pub size: Option<Value>,
    /// `RUNNING` (ready), `TERMINATING`, `TOMBSTONED`, `FAILED`, or a creating state.
    pub status: String,
    /// Cluster id.
    pub cluster_id: String,
    /// Cluster (opaque).
    #[serde(default)]
    pub cluster: Option<Value>,
    /// Kubernetes PVC name.
    pub pvc_name: String,
    /// Creator id.
    #[serde(default)]
    pub created_by: Option<String>,
    /// Creator name.
    #[serde(default)]
    pub created_by_name: Option<String>,
    /// Creator e-mail.
    #[serde(default)]
    pub created_by_email: Option<String>,
    /// Creation time, as sent.
    #[serde(default)]
    pub created_at: Option<String>,
    /// Other fields.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Volume {
    /// Whether the volume is ready (`RUNNING`).
    pub fn is_ready(&self) -> bool {
        self.status == VOLUME_READY
    }

    /// Whether creation failed for good (`FAILED`, `TOMBSTONED`).
    pub fn has_failed(&self) -> bool {
        VOLUME_FAILED_STATUSES.contains(&self.status.as_str())
    }
}

/// `GET /training/volumes` → `{"volumes": [...]}`.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
pub struct VolumeList {
    /// Volumes.
    #[serde(default, deserialize_with = "null_default")]
    pub volumes: Vec<Volume>,
}

/// Body of `POST /training/volumes`: `{"name","size","warm":true,"teamId"?}`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateVolumeRequest {
    /// Name.
    pub name: String,
    /// Size (e.g. `5Ti`, `500Gi`).
    pub size: String,
    /// Always `true` from the CLI.
    pub warm: bool,
    /// Owning team; omitted for the personal account.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub team_id: Option<String>,
}

/// Direction of a volume transfer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TransferMode {
    /// Download (`prime volumes get`).
    Get,
    /// Upload.
    Put,
}

/// Body of `POST /training/volumes/{name}/transfer`: `{"mode","path","teamId"?}`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct VolumeTransferRequest {
    /// `get` or `put`.
    pub mode: TransferMode,
    /// Volume-relative path (`runs/abc/`; `""` for the root).
    pub path: String,
    /// Owning team; omitted for the personal account.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub team_id: Option<String>,
}

/// A transfer route: direct S3 (`via: "r2"`) with short-lived credentials, or an SSH
/// session (`via: "session"`). `secretAccessKey` and `sessionToken` are secrets and never
/// shown by `Debug`.
#[derive(Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct VolumeTransferRoute {
    /// `r2` or `session`.
    pub via: String,
    /// SSH session, when `via == "session"`.
    #[serde(default)]
    pub session: Option<VolumeSession>,
    /// S3 endpoint URL.
    #[serde(default)]
    pub endpoint: Option<String>,
    /// Bucket.
    #[serde(default)]
    pub bucket: Option<String>,
    /// Key prefix of the volume.
    #[serde(default)]
    pub prefix: Option<String>,
    /// Access key id.
    #[serde(default)]
    pub access_key_id: Option<String>,
    /// Secret access key (secret).
    #[serde(default)]
    pub secret_access_key: Option<SecretString>,
    /// Session token (secret).
    #[serde(default)]
    pub session_token: Option<SecretString>,
    /// Expiry of the credentials, as sent.
    #[serde(default)]
    pub expires_at: Option<String>,
    /// Lease id (single writer).
    #[serde(default)]
    pub lease_id: Option<String>,
}

impl fmt::Debug for VolumeTransferRoute {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let redact = |s: &Option<SecretString>| s.as_ref().map(|_| "[REDACTED]");
        f.debug_struct("VolumeTransferRoute")
            .field("via", &self.via)
            .field("session", &self.session)
            .field("endpoint", &self.endpoint)
            .field("bucket", &self.bucket)
            .field("prefix", &self.prefix)
            .field("access_key_id", &self.access_key_id)
            .field("secret_access_key", &redact(&self.secret_access_key))
            .field("session_token", &redact(&self.session_token))
            .field("expires_at", &self.expires_at)
            .field("lease_id", &self.lease_id)
            .finish()
    }
}

/// An SSH transfer session (lenient: every field optional).
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct VolumeSession {
    /// Session id.
    #[serde(default)]
    pub id: Option<String>,
    /// Volume name.
    #[serde(default)]
    pub volume_name: Option<String>,
    /// Status.
    #[serde(default)]
    pub status: Option<String>,
    /// Read-only session.
    #[serde(default)]
    pub read_only: Option<bool>,
    /// `user@host[ -p port]` once ready.
    #[serde(default)]
    pub ssh_connection: Option<String>,
    /// TLS gateway relay `{host, port, certSha256}`.
    #[serde(default)]
    pub gateway: Option<Value>,
    /// Host public key.
    #[serde(default)]
    pub host_public_key: Option<String>,
    /// Error message.
    #[serde(default)]
    pub error_message: Option<String>,
    /// Other fields.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}
