//! The volumes' S3-compatible transfer endpoint (`<base>/_sandbox/s3`, bucket
//! `sandbox-volumes`, one key prefix per volume: `<pvcName>/`), and the transfer route that
//! hands out its credentials (§10 `POST /training/volumes/{name}/transfer`, plus the put lease
//! release the CLI calls).
//!
//! The S3 subset served: ListObjectsV2 (prefix, delimiter, max-keys, continuation-token,
//! start-after), HeadObject, GetObject (single `Range`, `If-Match`) and PutObject. Every request
//! must be SigV4-signed with credentials this sandbox issued: the access key id must be known,
//! `x-amz-security-token` must match it, it must not have expired (on the sandbox's clock), the
//! key must lie inside the prefix the route was asked for (a get's path; a put's destination),
//! and the signature itself is recomputed (HMAC-SHA256 over the canonical request) and compared.
//! The request time (`x-amz-date`) is not compared with the clock: a manual clock is not the
//! wall clock the client signs with.
//!
//! **Inventions** (the API documents none of this; clients must not rely on it; the file layout
//! the endpoint serves is `crate::outputs`'):
//! * credentials: random per route call, 1 h for gets, 15 min for puts (the CLI's comment),
//!   error codes and statuses (`ExpiredToken` 400, `InvalidAccessKeyId`/`AccessDenied`/
//!   `SignatureDoesNotMatch` 403, `NoSuchKey` 404);
//! * puts (inferred from the CLI's `commands/volumes.py`, `api/training.py`): the route takes
//!   `{"mode":"put","path","entries"?,"leaseId"?,"teamId"?}` and answers a `leaseId`; a put
//!   under `runs/` is refused (400), a root put needs `entries`; one live upload lease per
//!   volume (another is 409); `POST …/transfer/release {"leaseId"}` ends it (204). Uploaded
//!   objects live in memory only (not in the state file) and are lost on restart.

// Handlers return a ready-made error `Response` as their `Err`, as in `api`.
#![allow(clippy::result_large_err)]

use std::sync::Arc;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{DefaultBodyLimit, Path, Query, Request, State};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use chrono::{DateTime, Utc};
use http::{HeaderMap, HeaderValue, StatusCode, header};
use rand::Rng;
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::clock::{iso, plus_secs};
use crate::http::{Params, auth, check_team, detail, ok, parse_json_body};
use crate::outputs::{BLOCK, Content, Object, generated_block, run_objects, run_on_volume};
use crate::s3_store::{ExpireNow, Issued, Lease, Stored};
use crate::state::AppState;
use crate::wire::TransferRoute;
use crate::world::{Volume, World};

/// The bucket every volume lives in.
pub(crate) const BUCKET: &str = "sandbox-volumes";
/// Lifetime of get credentials (invented).
const GET_TTL_S: f64 = 3600.0;
/// Lifetime of put credentials and of the upload lease (the CLI's "15-minute put credentials").
const PUT_TTL_S: f64 = 900.0;
/// Largest PutObject body accepted.
const MAX_PUT: usize = 512 * 1024 * 1024;
fn random_token(prefix: &str, len: usize) -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    let mut rng = rand::rng();
    let mut s = String::from(prefix);
    for _ in 0..len {
        s.push(ALPHABET[rng.random_range(0..ALPHABET.len())] as char);
    }
    s
}

/// Normalise a volume-relative path like the CLI (`_remote_path`): `..` may not climb out,
/// `.`/empty segments go. Returns the segments and whether it named a directory.
fn normalise(path: &str) -> Result<(Vec<String>, bool), String> {
    let mut parts: Vec<String> = Vec::new();
    for p in path.split('/') {
        match p {
            ".." => {
                if parts.pop().is_none() {
                    return Err(format!(
                        "Invalid path '{path}': '..' climbs above the volume root"
                    ));
                }
            }
            "" | "." => {}
            p => parts.push(p.to_string()),
        }
    }
    let dir = path.ends_with('/') || path.is_empty();
    Ok((parts, dir))
}

/// §10 transfer route for `volume` (already authorised): new credentials scoped to `path`.
pub(crate) fn issue_route(
    st: &AppState,
    volume: &Volume,
    body: &Value,
    base_url: &str,
) -> Response {
    let mode = body.get("mode").and_then(Value::as_str).unwrap_or("get");
    let path = body.get("path").and_then(Value::as_str).unwrap_or("");
    let (parts, _) = match normalise(path) {
        Ok(p) => p,
        Err(m) => return detail(StatusCode::BAD_REQUEST, m),
    };
    let now = st.now();
    let write = mode == "put";
    let mut lease_id = None;
    let mut inner = st.s3.lock();
    if write {
        // (inferred) the platform refuses what the CLI refuses locally.
        let top: Vec<String> = if parts.is_empty() {
            match body.get("entries").and_then(Value::as_array) {
                Some(e) => e
                    .iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect(),
                None => {
                    return detail(
                        StatusCode::BAD_REQUEST,
                        "A put to the volume root must list its top-level entries",
                    );
                }
            }
        } else {
            vec![parts[0].clone()]
        };
        if top.iter().any(|t| t == "runs") {
            return detail(
                StatusCode::BAD_REQUEST,
                "runs/ holds run outputs and is read-only; put elsewhere",
            );
        }
        inner.leases.retain(|_, l| l.expires_at > now);
        let asked = body.get("leaseId").and_then(Value::as_str);
        let held = inner
            .leases
            .iter()
            .find(|(_, l)| l.volume_pvc == volume.pvc_name)
            .map(|(id, _)| id.clone());
        let id = match (held, asked) {
            (Some(h), Some(a)) if h == a => h,
            (Some(_), _) => {
                return detail(
                    StatusCode::CONFLICT,
                    format!(
                        "Volume '{}' has an upload in progress (one writer at a time); try again when it ends",
                        volume.name
                    ),
                );
            }
            (None, _) => format!("lease_{}", random_token("", 20)),
        };
        inner.leases.insert(
            id.clone(),
            Lease {
                volume_pvc: volume.pvc_name.clone(),
                expires_at: plus_secs(now, PUT_TTL_S),
            },
        );
        lease_id = Some(id);
    } else if mode != "get" {
        return detail(
            StatusCode::BAD_REQUEST,
            format!("Unknown transfer mode '{mode}'"),
        );
    }
    let ttl = if write { PUT_TTL_S } else { GET_TTL_S };
    // A get reaches its source path, a put its destination (a root put: the whole volume).
    let scope = if parts.is_empty() {
        format!("{}/", volume.pvc_name)
    } else {
        format!("{}/{}", volume.pvc_name, parts.join("/"))
    };
    let akid = random_token("SBXAK", 16).to_uppercase();
    let issued = Issued {
        secret: random_token("sbxsecret", 32),
        token: random_token("sbxsession", 48),
        expires_at: plus_secs(now, ttl),
        scope,
        write,
    };
    inner.creds.insert(akid.clone(), issued.clone());
    drop(inner);
    ok(TransferRoute {
        via: "r2",
        endpoint: format!("{base_url}/_sandbox/s3"),
        bucket: BUCKET.into(),
        prefix: format!("{}/", volume.pvc_name),
        access_key_id: akid,
        secret_access_key: issued.secret,
        session_token: issued.token,
        expires_at: iso(issued.expires_at),
        lease_id,
    })
}

pub(crate) fn routes() -> Router<Arc<AppState>> {
    Router::new()
        .route(
            "/api/v1/training/volumes/{name}/transfer/release",
            post(release),
        )
        .route("/_sandbox/s3/{bucket}", get(list_objects))
        .route(
            "/_sandbox/s3/{bucket}/{*key}",
            get(get_object).head(head_object).put(put_object),
        )
        .layer(DefaultBodyLimit::max(MAX_PUT))
}

/// `POST /training/volumes/{name}/transfer/release {"leaseId","teamId"?}` → 204 (idempotent).
async fn release(
    State(st): State<Arc<AppState>>,
    headers: HeaderMap,
    Path(name): Path<String>,
    body: Bytes,
) -> Response {
    let user = match auth(&st, &headers) {
        Ok(u) => u,
        Err(r) => return r,
    };
    let body = match parse_json_body(&body) {
        Ok(b) => b,
        Err(r) => return r,
    };
    let team = body
        .get("teamId")
        .and_then(Value::as_str)
        .map(str::to_string);
    let volume = st.with_world(|w| {
        check_team(&w.seed, &user, team.as_deref())?;
        w.volume_in_account(&user.id, team.as_deref(), &name)
            .cloned()
            .ok_or_else(|| detail(StatusCode::NOT_FOUND, format!("Volume '{name}' not found")))
    });
    let volume = match volume {
        Ok(v) => v,
        Err(r) => return r,
    };
    if let Some(id) = body.get("leaseId").and_then(Value::as_str) {
        let mut inner = st.s3.lock();
        if inner
            .leases
            .get(id)
            .is_some_and(|l| l.volume_pvc == volume.pvc_name)
        {
            inner.leases.remove(id);
            // Credentials of the lease stop working with it.
        }
    }
    StatusCode::NO_CONTENT.into_response()
}

/// Every object in the bucket whose key starts with `prefix`, sorted by key.
fn objects_under(st: &AppState, prefix: &str) -> Vec<Object> {
    let now = st.now();
    let mut out: Vec<Object> = st.with_world(|w: &World| {
        w.volumes
            .iter()
            .filter(|v| {
                let root = format!("{}/", v.pvc_name);
                root.starts_with(prefix) || prefix.starts_with(&root)
            })
            .flat_map(|v| {
                w.runs
                    .iter()
                    .filter(|r| run_on_volume(r, v))
                    .flat_map(|r| run_objects(r, &w.seed, now, &v.pvc_name))
                    .collect::<Vec<_>>()
            })
            .filter(|o| o.key.starts_with(prefix))
            .collect()
    });
    let inner = st.s3.lock();
    for (k, s) in inner.objects.range(prefix.to_string()..) {
        if !k.starts_with(prefix) {
            break;
        }
        out.push(Object {
            key: k.clone(),
            content: Content::Stored(s.data.clone()),
            etag: s.etag.clone(),
            modified: s.modified,
        });
    }
    out.sort_by(|a, b| a.key.cmp(&b.key));
    out.dedup_by(|a, b| a.key == b.key);
    out
}

fn find_object(st: &AppState, key: &str) -> Option<Object> {
    objects_under(st, key).into_iter().find(|o| o.key == key)
}

/// Feed the bytes of the object at volume-relative `path` on the volume named `volume` (the
/// first with that name) to `sink`, block by block; `None` when there is no such object.
pub(crate) fn read_volume_file(
    st: &AppState,
    volume: &str,
    path: &str,
    mut sink: impl FnMut(&[u8]),
) -> Option<u64> {
    let pvc = st.with_world(|w| {
        w.volumes
            .iter()
            .find(|v| v.name == volume)
            .map(|v| v.pvc_name.clone())
    })?;
    let o = find_object(st, &format!("{pvc}/{}", path.trim_start_matches('/')))?;
    match &o.content {
        Content::Inline(b) | Content::Stored(b) => sink(b),
        Content::Generated { header, seed, len } => {
            let mut pos = 0;
            while pos < *len {
                let block = generated_block(header, *seed, pos);
                let n = (*len - pos).min(BLOCK) as usize;
                sink(&block[..n]);
                pos += BLOCK;
            }
        }
    }
    Some(o.content.len())
}

/// Deterministic bytes of generated content in `[start, end)`, as a stream of blocks.
fn generated_stream(
    header: Bytes,
    seed: u64,
    start: u64,
    end: u64,
) -> impl futures::Stream<Item = Result<Bytes, std::io::Error>> + Send {
    futures::stream::unfold(start, move |pos| {
        let header = header.clone();
        async move {
            if pos >= end {
                return None;
            }
            let block_start = pos - pos % BLOCK;
            let block = generated_block(&header, seed, block_start);
            let from = (pos - block_start) as usize;
            let to = ((end - block_start).min(BLOCK)) as usize;
            let chunk = Bytes::from(block).slice(from..to);
            Some((Ok(chunk), block_start + to as u64))
        }
    })
}

// ---- errors and auth ------------------------------------------------------------------------

fn xml_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&apos;")
}

fn s3_error(status: StatusCode, code: &str, message: &str) -> Response {
    let body = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>{code}</Code><Message>{}</Message><RequestId>sandbox</RequestId></Error>",
        xml_escape(message)
    );
    (status, [(header::CONTENT_TYPE, "application/xml")], body).into_response()
}

/// The parts of a SigV4 `Authorization` header.
struct SigV4<'a> {
    access_key: &'a str,
    date: &'a str,
    region: &'a str,
    service: &'a str,
    signed_headers: &'a str,
    signature: &'a str,
}

fn parse_authorization(h: &str) -> Option<SigV4<'_>> {
    let rest = h.strip_prefix("AWS4-HMAC-SHA256")?.trim();
    let mut cred = None;
    let mut signed = None;
    let mut sig = None;
    for part in rest.split(',') {
        let (k, v) = part.trim().split_once('=')?;
        match k {
            "Credential" => cred = Some(v),
            "SignedHeaders" => signed = Some(v),
            "Signature" => sig = Some(v),
            _ => {}
        }
    }
    let mut c = cred?.split('/');
    let sv = SigV4 {
        access_key: c.next()?,
        date: c.next()?,
        region: c.next()?,
        service: c.next()?,
        signed_headers: signed?,
        signature: sig?,
    };
    (c.next()? == "aws4_request").then_some(sv)
}

fn hmac(key: &[u8], data: &[u8]) -> [u8; 32] {
    let mut k = [0u8; 64];
    if key.len() > 64 {
        k[..32].copy_from_slice(&Sha256::digest(key));
    } else {
        k[..key.len()].copy_from_slice(key);
    }
    let mut ipad = [0x36u8; 64];
    let mut opad = [0x5cu8; 64];
    for i in 0..64 {
        ipad[i] ^= k[i];
        opad[i] ^= k[i];
    }
    let inner = Sha256::new()
        .chain_update(ipad)
        .chain_update(data)
        .finalize();
    Sha256::new()
        .chain_update(opad)
        .chain_update(inner)
        .finalize()
        .into()
}

fn aws_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn percent_decode(s: &str) -> String {
    let hex = |b: u8| (b as char).to_digit(16).map(|d| d as u8);
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && let (Some(h), Some(l)) = (
                bytes.get(i + 1).copied().and_then(hex),
                bytes.get(i + 2).copied().and_then(hex),
            )
        {
            out.push(h * 16 + l);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn canonical_query(raw: Option<&str>) -> String {
    let mut pairs: Vec<(String, String)> = raw
        .unwrap_or("")
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (
                aws_encode(&percent_decode(k)),
                aws_encode(&percent_decode(v)),
            )
        })
        .collect();
    pairs.sort();
    pairs
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join("&")
}

/// Recompute the SigV4 signature of the request and compare.
fn signature_matches(
    method: &str,
    path: &str,
    query: Option<&str>,
    headers: &HeaderMap,
    sig: &SigV4<'_>,
    secret: &str,
) -> bool {
    let mut canonical_headers = String::new();
    for name in sig.signed_headers.split(';') {
        let value = headers
            .get_all(name)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .map(|v| v.split_whitespace().collect::<Vec<_>>().join(" "))
            .collect::<Vec<_>>()
            .join(",");
        canonical_headers.push_str(&format!("{name}:{value}\n"));
    }
    let payload = headers
        .get("x-amz-content-sha256")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("UNSIGNED-PAYLOAD");
    let canonical = format!(
        "{method}\n{path}\n{}\n{canonical_headers}\n{}\n{payload}",
        canonical_query(query),
        sig.signed_headers
    );
    let amz_date = headers
        .get("x-amz-date")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let scope = format!("{}/{}/{}/aws4_request", sig.date, sig.region, sig.service);
    let to_sign = format!(
        "AWS4-HMAC-SHA256\n{amz_date}\n{scope}\n{}",
        hex::encode(Sha256::digest(canonical.as_bytes()))
    );
    let k = hmac(format!("AWS4{secret}").as_bytes(), sig.date.as_bytes());
    let k = hmac(&k, sig.region.as_bytes());
    let k = hmac(&k, sig.service.as_bytes());
    let k = hmac(&k, b"aws4_request");
    hex::encode(hmac(&k, to_sign.as_bytes())) == sig.signature
}

/// Checks the request's credentials for an operation on `key` (a full key or list prefix).
fn authorise(st: &AppState, req: &RequestParts, key: &str, write: bool) -> Result<(), Response> {
    let denied = |code: &str, msg: &str| s3_error(StatusCode::FORBIDDEN, code, msg);
    let Some(auth) = req
        .headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
    else {
        return Err(denied("AccessDenied", "Anonymous access is not allowed"));
    };
    let Some(sig) = parse_authorization(auth) else {
        return Err(s3_error(
            StatusCode::BAD_REQUEST,
            "AuthorizationHeaderMalformed",
            "The authorization header is not SigV4",
        ));
    };
    let now = st.now();
    let mut inner = st.s3.lock();
    let Some(issued) = inner.creds.get_mut(sig.access_key) else {
        return Err(denied(
            "InvalidAccessKeyId",
            "The access key id does not exist in our records",
        ));
    };
    if req.expire_now {
        issued.expires_at = plus_secs(now, -1.0);
    }
    let token = req
        .headers
        .get("x-amz-security-token")
        .and_then(|v| v.to_str().ok());
    if token != Some(issued.token.as_str()) {
        return Err(denied(
            "InvalidToken",
            "The provided token is malformed or otherwise invalid",
        ));
    }
    if issued.expires_at <= now {
        return Err(s3_error(
            StatusCode::BAD_REQUEST,
            "ExpiredToken",
            "The provided token has expired",
        ));
    }
    if !signature_matches(
        &req.method,
        &req.path,
        req.query.as_deref(),
        &req.headers,
        &sig,
        &issued.secret,
    ) {
        return Err(denied(
            "SignatureDoesNotMatch",
            "The request signature we calculated does not match the signature you provided",
        ));
    }
    let scope = &issued.scope;
    let inside = if scope.ends_with('/') {
        key.starts_with(scope.as_str())
    } else {
        key == scope || key.starts_with(&format!("{scope}/"))
    };
    if !inside || (write && !issued.write) {
        return Err(denied("AccessDenied", "Access Denied"));
    }
    Ok(())
}

/// What the S3 handlers need of the request.
struct RequestParts {
    method: String,
    path: String,
    query: Option<String>,
    headers: HeaderMap,
    expire_now: bool,
}

fn parts_of(req: &Request) -> RequestParts {
    RequestParts {
        method: req.method().as_str().to_string(),
        path: req.uri().path().to_string(),
        query: req.uri().query().map(str::to_string),
        headers: req.headers().clone(),
        expire_now: req.extensions().get::<ExpireNow>().is_some(),
    }
}

fn check_bucket(bucket: &str) -> Result<(), Response> {
    if bucket == BUCKET {
        Ok(())
    } else {
        Err(s3_error(
            StatusCode::NOT_FOUND,
            "NoSuchBucket",
            "The specified bucket does not exist",
        ))
    }
}

fn http_date(t: DateTime<Utc>) -> String {
    t.format("%a, %d %b %Y %H:%M:%S GMT").to_string()
}

// ---- handlers -------------------------------------------------------------------------------

async fn list_objects(
    State(st): State<Arc<AppState>>,
    Path(bucket): Path<String>,
    Query(q): Query<Params>,
    req: Request,
) -> Response {
    if let Err(r) = check_bucket(&bucket) {
        return r;
    }
    if q.get("list-type").map(String::as_str) != Some("2") {
        return s3_error(
            StatusCode::NOT_IMPLEMENTED,
            "NotImplemented",
            "Only ListObjectsV2 (list-type=2) is served",
        );
    }
    let prefix = q.get("prefix").cloned().unwrap_or_default();
    let parts = parts_of(&req);
    if let Err(r) = authorise(&st, &parts, &prefix, false) {
        return r;
    }
    let delimiter = q.get("delimiter").filter(|d| !d.is_empty()).cloned();
    let max_keys = q
        .get("max-keys")
        .and_then(|v| v.parse::<usize>().ok())
        .unwrap_or(1000)
        .clamp(1, 1000);
    let after = q
        .get("continuation-token")
        .and_then(|t| hex::decode(t).ok())
        .and_then(|b| String::from_utf8(b).ok())
        .or_else(|| q.get("start-after").cloned())
        .unwrap_or_default();
    let mut contents = Vec::new();
    let mut prefixes: Vec<String> = Vec::new();
    let mut last = None;
    let mut truncated = false;
    for o in objects_under(&st, &prefix) {
        if o.key <= after {
            continue;
        }
        if let Some(d) = &delimiter
            && let Some(i) = o.key[prefix.len()..].find(d.as_str())
        {
            let p = o.key[..prefix.len() + i + d.len()].to_string();
            if prefixes.last() != Some(&p) && p > after {
                if contents.len() + prefixes.len() >= max_keys {
                    truncated = true;
                    break;
                }
                prefixes.push(p.clone());
                last = Some(p);
            }
            continue;
        }
        if contents.len() + prefixes.len() >= max_keys {
            truncated = true;
            break;
        }
        last = Some(o.key.clone());
        contents.push(o);
    }
    let mut xml = String::from(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<ListBucketResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">",
    );
    xml.push_str(&format!(
        "<Name>{BUCKET}</Name><Prefix>{}</Prefix><KeyCount>{}</KeyCount><MaxKeys>{max_keys}</MaxKeys><IsTruncated>{truncated}</IsTruncated>",
        xml_escape(&prefix),
        contents.len() + prefixes.len()
    ));
    if let Some(d) = &delimiter {
        xml.push_str(&format!("<Delimiter>{}</Delimiter>", xml_escape(d)));
    }
    for o in &contents {
        xml.push_str(&format!(
            "<Contents><Key>{}</Key><LastModified>{}</LastModified><ETag>{}</ETag><Size>{}</Size><StorageClass>STANDARD</StorageClass></Contents>",
            xml_escape(&o.key),
            iso(o.modified),
            xml_escape(&o.etag),
            o.content.len()
        ));
    }
    for p in &prefixes {
        xml.push_str(&format!(
            "<CommonPrefixes><Prefix>{}</Prefix></CommonPrefixes>",
            xml_escape(p)
        ));
    }
    if truncated && let Some(l) = last {
        xml.push_str(&format!(
            "<NextContinuationToken>{}</NextContinuationToken>",
            hex::encode(l)
        ));
    }
    xml.push_str("</ListBucketResult>");
    ([(header::CONTENT_TYPE, "application/xml")], xml).into_response()
}

fn object_headers(o: &Object, headers: &mut HeaderMap) {
    for (name, value) in [
        (header::ETAG, o.etag.clone()),
        (header::LAST_MODIFIED, http_date(o.modified)),
        (header::ACCEPT_RANGES, "bytes".to_string()),
        (header::CONTENT_TYPE, "application/octet-stream".to_string()),
    ] {
        if let Ok(v) = HeaderValue::from_str(&value) {
            headers.insert(name, v);
        }
    }
}

async fn head_object(
    State(st): State<Arc<AppState>>,
    Path((bucket, key)): Path<(String, String)>,
    req: Request,
) -> Response {
    if let Err(r) = check_bucket(&bucket) {
        return r;
    }
    if let Err(r) = authorise(&st, &parts_of(&req), &key, false) {
        return r;
    }
    let Some(o) = find_object(&st, &key) else {
        return StatusCode::NOT_FOUND.into_response();
    };
    let mut resp = Response::new(Body::empty());
    object_headers(&o, resp.headers_mut());
    resp.headers_mut()
        .insert(header::CONTENT_LENGTH, HeaderValue::from(o.content.len()));
    resp
}

/// A single `bytes=` range against `len`: `(start, end_exclusive)`.
fn parse_range(h: &str, len: u64) -> Option<(u64, u64)> {
    let spec = h.trim().strip_prefix("bytes=")?;
    if spec.contains(',') {
        return None;
    }
    let (a, b) = spec.split_once('-')?;
    if a.is_empty() {
        let n: u64 = b.parse().ok()?;
        return (n > 0 && len > 0).then(|| (len.saturating_sub(n), len));
    }
    let start: u64 = a.parse().ok()?;
    let end = if b.is_empty() {
        len
    } else {
        b.parse::<u64>().ok()?.saturating_add(1).min(len)
    };
    (start < len && start < end).then_some((start, end))
}

async fn get_object(
    State(st): State<Arc<AppState>>,
    Path((bucket, key)): Path<(String, String)>,
    req: Request,
) -> Response {
    if let Err(r) = check_bucket(&bucket) {
        return r;
    }
    let parts = parts_of(&req);
    if let Err(r) = authorise(&st, &parts, &key, false) {
        return r;
    }
    let Some(o) = find_object(&st, &key) else {
        return s3_error(
            StatusCode::NOT_FOUND,
            "NoSuchKey",
            "The specified key does not exist.",
        );
    };
    if let Some(m) = parts
        .headers
        .get(header::IF_MATCH)
        .and_then(|v| v.to_str().ok())
        && m.trim() != "*"
        && m.trim().trim_matches('"') != o.etag.trim_matches('"')
    {
        return s3_error(
            StatusCode::PRECONDITION_FAILED,
            "PreconditionFailed",
            "At least one of the pre-conditions you specified did not hold",
        );
    }
    let len = o.content.len();
    let range = parts
        .headers
        .get(header::RANGE)
        .and_then(|v| v.to_str().ok());
    let (start, end, status) = match range {
        None => (0, len, StatusCode::OK),
        Some(r) => match parse_range(r, len) {
            Some((s, e)) => (s, e, StatusCode::PARTIAL_CONTENT),
            None => {
                return s3_error(
                    StatusCode::RANGE_NOT_SATISFIABLE,
                    "InvalidRange",
                    "The requested range is not satisfiable",
                );
            }
        },
    };
    let body = match &o.content {
        Content::Inline(b) | Content::Stored(b) => {
            Body::from(b.slice(start as usize..end as usize))
        }
        Content::Generated { header, seed, .. } => {
            Body::from_stream(generated_stream(header.clone(), *seed, start, end))
        }
    };
    let mut resp = Response::new(body);
    *resp.status_mut() = status;
    object_headers(&o, resp.headers_mut());
    resp.headers_mut()
        .insert(header::CONTENT_LENGTH, HeaderValue::from(end - start));
    if status == StatusCode::PARTIAL_CONTENT
        && let Ok(v) = HeaderValue::from_str(&format!("bytes {start}-{}/{len}", end - 1))
    {
        resp.headers_mut().insert(header::CONTENT_RANGE, v);
    }
    resp
}

async fn put_object(
    State(st): State<Arc<AppState>>,
    Path((bucket, key)): Path<(String, String)>,
    req: Request,
) -> Response {
    if let Err(r) = check_bucket(&bucket) {
        return r;
    }
    let parts = parts_of(&req);
    if let Err(r) = authorise(&st, &parts, &key, true) {
        return r;
    }
    if parts
        .query
        .as_deref()
        .is_some_and(|q| q.contains("uploadId") || q.contains("partNumber"))
    {
        return s3_error(
            StatusCode::NOT_IMPLEMENTED,
            "NotImplemented",
            "Multipart uploads are not served by the sandbox",
        );
    }
    let data = match axum::body::to_bytes(req.into_body(), MAX_PUT).await {
        Ok(b) => b,
        Err(_) => {
            return s3_error(
                StatusCode::BAD_REQUEST,
                "EntityTooLarge",
                "Your proposed upload exceeds the maximum allowed size",
            );
        }
    };
    let claimed = parts
        .headers
        .get("x-amz-content-sha256")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("UNSIGNED-PAYLOAD");
    if claimed != "UNSIGNED-PAYLOAD" && claimed != hex::encode(Sha256::digest(&data)) {
        return s3_error(
            StatusCode::BAD_REQUEST,
            "XAmzContentSHA256Mismatch",
            "The provided 'x-amz-content-sha256' header does not match what was computed.",
        );
    }
    let etag = format!("\"{}\"", &hex::encode(Sha256::digest(&data))[..32]);
    let now = st.now();
    st.s3.lock().objects.insert(
        key,
        Stored {
            data,
            etag: etag.clone(),
            modified: now,
        },
    );
    let mut resp = StatusCode::OK.into_response();
    if let Ok(v) = HeaderValue::from_str(&etag) {
        resp.headers_mut().insert(header::ETAG, v);
    }
    resp
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outputs::safetensors_header;

    #[test]
    fn generated_content_is_the_same_whatever_the_range() {
        let header = safetensors_header(300_000);
        let whole: Vec<u8> = (0..300_000u64.div_ceil(BLOCK))
            .flat_map(|b| generated_block(&header, 7, b * BLOCK))
            .take(300_000)
            .collect();
        assert_eq!(&whole[..header.len()], &header[..]);
        let piece: Vec<u8> = futures::executor::block_on(async {
            use futures::StreamExt;
            generated_stream(header.clone(), 7, 70_001, 200_003)
                .map(|c| c.unwrap().to_vec())
                .concat()
                .await
        });
        assert_eq!(piece, whole[70_001..200_003]);
    }

    #[test]
    fn safetensors_header_is_well_formed() {
        let h = safetensors_header(3 * 1024 * 1024);
        let n = u64::from_le_bytes(h[..8].try_into().unwrap()) as usize;
        assert_eq!(n % 8, 0);
        assert_eq!(h.len(), 8 + n);
        let v: Value = serde_json::from_slice(&h[8..]).unwrap();
        let end = v["weight"]["data_offsets"][1].as_u64().unwrap();
        assert!(8 + n as u64 + end <= 3 * 1024 * 1024);
    }

    #[test]
    fn ranges_parse_like_s3() {
        assert_eq!(parse_range("bytes=0-9", 100), Some((0, 10)));
        assert_eq!(parse_range("bytes=90-", 100), Some((90, 100)));
        assert_eq!(parse_range("bytes=-5", 100), Some((95, 100)));
        assert_eq!(parse_range("bytes=95-200", 100), Some((95, 100)));
        assert_eq!(parse_range("bytes=100-", 100), None);
        assert_eq!(parse_range("bytes=0-1,5-6", 100), None);
    }

    #[test]
    fn hmac_matches_rfc_4231_case_2() {
        let mac = hmac(b"Jefe", b"what do ya want for nothing?");
        assert_eq!(
            hex::encode(mac),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }

    #[test]
    fn paths_normalise_like_the_cli() {
        assert_eq!(normalise("runs/a/../b/").unwrap().0, vec!["runs", "b"]);
        assert!(normalise("../x").is_err());
        assert!(normalise("").unwrap().1);
    }
}
