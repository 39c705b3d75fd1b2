//! The volumes' S3 endpoint's memory: the credentials the transfer route issued, upload leases
//! and uploaded objects (in memory only, never in the state file).

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;

use bytes::Bytes;
use chrono::{DateTime, Utc};

use crate::clock::plus_secs;

/// Credentials the route issued, checked on every S3 request.
#[derive(Debug, Clone)]
pub(crate) struct Issued {
    pub(crate) secret: String,
    pub(crate) token: String,
    pub(crate) expires_at: DateTime<Utc>,
    /// `<pvc>/…`: keys must start with it.
    pub(crate) scope: String,
    pub(crate) write: bool,
}

#[derive(Debug, Clone)]
pub(crate) struct Lease {
    pub(crate) volume_pvc: String,
    pub(crate) expires_at: DateTime<Utc>,
}

#[derive(Debug, Clone)]
pub(crate) struct Stored {
    pub(crate) data: Bytes,
    pub(crate) etag: String,
    pub(crate) modified: DateTime<Utc>,
}

/// The endpoint's state: issued credentials, upload leases and uploaded objects (in memory).
#[derive(Debug, Default)]
pub(crate) struct S3State {
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
pub(crate) struct Inner {
    pub(crate) creds: HashMap<String, Issued>,
    pub(crate) leases: HashMap<String, Lease>,
    pub(crate) objects: BTreeMap<String, Stored>,
}

/// One set of transfer credentials the sandbox has issued (for leak checks in tests).
#[derive(Debug, Clone)]
pub struct IssuedCredential {
    pub access_key_id: String,
    pub secret_access_key: String,
    pub session_token: String,
}

/// A fault rule's mark: the credentials of this request expire now.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ExpireNow;

impl S3State {
    pub(crate) fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn issued(&self) -> Vec<IssuedCredential> {
        self.lock()
            .creds
            .iter()
            .map(|(k, v)| IssuedCredential {
                access_key_id: k.clone(),
                secret_access_key: v.secret.clone(),
                session_token: v.token.clone(),
            })
            .collect()
    }

    /// Make every issued credential expire (tests).
    pub(crate) fn expire_all(&self, now: DateTime<Utc>) {
        for c in self.lock().creds.values_mut() {
            c.expires_at = plus_secs(now, -1.0);
        }
    }
}
