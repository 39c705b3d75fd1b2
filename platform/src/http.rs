//! The shared request core for both services: URL building (`{base}/api/v1{path}`), headers
//! (`Authorization: Bearer`, `Content-Type: application/json` on every platform request,
//! `User-Agent: factory-mcp/<version>`, `X-Prime-Team-ID` on traces), per-call timeouts, the
//! 2xx JSON-object check (204 → `{}`), error mapping and retries of idempotent GETs.
//!
//! Tracing events carry the method, the path and the status; never a header or a body.

use std::time::Duration;

use backon::{ExponentialBuilder, Retryable};
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use reqwest::header::{AUTHORIZATION, CONTENT_TYPE, HeaderMap, HeaderValue, RETRY_AFTER};
use reqwest::{Method, StatusCode};
use secrecy::{ExposeSecret, SecretString};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};
use url::Url;

use crate::error::{FieldError, PlatformError};
use crate::settings::{PlatformSettings, RetryPolicy};

/// The `User-Agent` of every request.
pub const USER_AGENT: &str = concat!("factory-mcp/", env!("CARGO_PKG_VERSION"));

/// Header carrying the team on traces-service calls.
pub const TEAM_HEADER: &str = "X-Prime-Team-ID";

/// Largest error body read to build a message; the rest is dropped.
const MAX_ERROR_BODY: usize = 64 * 1024;
/// Longest server detail quoted in an error message.
const MAX_DETAIL_CHARS: usize = 2000;

/// Everything in a path segment except RFC 3986 unreserved characters is percent-encoded.
const SEGMENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~');

/// Which service a call goes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Service {
    /// The platform API (`base_url`).
    Platform,
    /// Prime Traces (`traces_url`).
    Traces,
}

/// One HTTP call, described before it is sent.
#[derive(Debug)]
pub(crate) struct Call {
    pub method: Method,
    pub service: Service,
    /// Path after `/api/v1`, segments already encoded (see [`segment`]).
    pub path: String,
    pub query: Vec<(String, String)>,
    /// JSON body bytes. Can hold secrets (create/resume): never logged, never in an error.
    pub body: Option<Vec<u8>>,
    pub timeout: Duration,
    /// Retry on 429/502/503/504/timeout/transport. Only for idempotent reads.
    pub retry: bool,
    /// `X-Prime-Team-ID` (traces only).
    pub team_header: Option<String>,
}

impl Call {
    /// A call with no query, no body, the default timeout and no retry.
    pub fn new(method: Method, service: Service, path: String, timeout: Duration) -> Self {
        Call {
            method,
            service,
            path,
            query: Vec::new(),
            body: None,
            timeout,
            retry: false,
            team_header: None,
        }
    }

    /// A GET, retried on transient failures.
    pub fn get(service: Service, path: String, timeout: Duration) -> Self {
        Call {
            retry: true,
            ..Call::new(Method::GET, service, path, timeout)
        }
    }

    /// Add a query parameter.
    pub fn query(mut self, name: impl Into<String>, value: impl ToString) -> Self {
        self.query.push((name.into(), value.to_string()));
        self
    }

    /// Add a query parameter when the value is present.
    pub fn query_opt<V: ToString>(self, name: impl Into<String>, value: Option<V>) -> Self {
        match value {
            Some(v) => self.query(name, v),
            None => self,
        }
    }

    /// Serialise a JSON body.
    pub fn json<B: Serialize + ?Sized>(mut self, body: &B) -> Result<Self, PlatformError> {
        let bytes = serde_json::to_vec(body).map_err(|e| {
            PlatformError::InvalidArgument(format!("request body cannot be encoded: {e}"))
        })?;
        self.body = Some(bytes);
        Ok(self)
    }

    /// `METHOD /path`, for messages and logs.
    pub fn endpoint(&self) -> String {
        format!("{} {}", self.method, self.path)
    }
}

/// `base` (without trailing slashes) parsed, when a request URL can be made from it by setting
/// the path alone: no query, no fragment.
fn parsed_base(base: &str) -> Option<(String, Url)> {
    let base = base.trim_end_matches('/');
    let url = Url::parse(base).ok()?;
    // A base whose path ends in a dot segment normalises differently alone than with more
    // after it: such a base is parsed whole on every call, as before.
    let probe = Url::parse(&format!("{base}/api/v1/probe")).ok()?;
    (!url.cannot_be_a_base()
        && url.query().is_none()
        && url.fragment().is_none()
        && url_on(&url, "/probe") == probe)
        .then(|| (base.to_string(), url))
}

/// `base` with the API path `path` under it (`path` holds no `?` or `#`).
fn url_on(base: &Url, path: &str) -> Url {
    let mut url = base.clone();
    url.set_path(&format!(
        "{}/api/v1{path}",
        base.path().trim_end_matches('/')
    ));
    url
}

/// Encode one caller-supplied id as a path segment. Empty ids, ids containing `/`, and the
/// dot segments `.`/`..` are refused: URL parsers (WHATWG, so reqwest too) turn `%2E` back
/// into a dot segment, so they could only ever reach a different endpoint.
pub(crate) fn segment(value: &str, what: &str) -> Result<String, PlatformError> {
    if value.is_empty() {
        return Err(PlatformError::InvalidArgument(format!("{what} is empty")));
    }
    if value.contains('/') {
        return Err(PlatformError::InvalidArgument(format!(
            "{what} '{value}' contains '/', which no id can contain"
        )));
    }
    if value == "." || value == ".." {
        return Err(PlatformError::InvalidArgument(format!(
            "{what} '{value}' is not a valid id"
        )));
    }
    Ok(utf8_percent_encode(value, SEGMENT).to_string())
}

/// The request core shared by every endpoint module.
#[derive(Debug, Clone)]
pub(crate) struct Http {
    client: reqwest::Client,
    pub settings: PlatformSettings,
    /// The platform's clock as its last response's `Date` header gave it, with the local
    /// instant it arrived: elapsed-time decisions use the platform's time, not ours.
    server_clock: std::sync::Arc<std::sync::Mutex<Option<ServerClock>>>,
    /// The platform's and the traces service's base URLs parsed once, each with the string it
    /// came from: a request's URL is the base with its path set, not a whole new parse.
    bases: std::sync::Arc<[Option<(String, Url)>; 2]>,
}

/// The platform's `Date` and the local instant it arrived.
type ServerClock = (chrono::DateTime<chrono::Utc>, std::time::Instant);

impl Http {
    /// Build the reqwest client (rustls, connect timeout, redirects followed as httpx does).
    pub fn new(settings: PlatformSettings) -> Result<Self, PlatformError> {
        let client = reqwest::Client::builder()
            .user_agent(USER_AGENT)
            .connect_timeout(settings.timeouts.connect)
            .build()
            .map_err(|e| PlatformError::Transport {
                endpoint: "client set-up".to_owned(),
                message: error_chain(&e),
                maybe_sent: false,
            })?;
        let bases = std::sync::Arc::new([
            parsed_base(&settings.base_url),
            parsed_base(&settings.traces_url),
        ]);
        Ok(Http {
            client,
            settings,
            server_clock: Default::default(),
            bases,
        })
    }

    /// The platform's current time: its last `Date` header plus the time since it arrived.
    pub fn server_time(&self) -> Option<chrono::DateTime<chrono::Utc>> {
        let guard = self.server_clock.lock().ok()?;
        let (at, seen) = (*guard)?;
        chrono::Duration::from_std(seen.elapsed())
            .ok()
            .map(|d| at + d)
    }

    fn note_date(&self, headers: &reqwest::header::HeaderMap) {
        let parsed = headers
            .get(reqwest::header::DATE)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| httpdate::parse_http_date(v).ok())
            .map(chrono::DateTime::<chrono::Utc>::from);
        if let (Some(at), Ok(mut slot)) = (parsed, self.server_clock.lock()) {
            *slot = Some((at, std::time::Instant::now()));
        }
    }

    fn url(&self, call: &Call) -> Result<Url, PlatformError> {
        let base = match call.service {
            Service::Platform => &self.settings.base_url,
            Service::Traces => &self.settings.traces_url,
        };
        let base = base.trim_end_matches('/');
        let parsed = match call.service {
            Service::Platform => &self.bases[0],
            Service::Traces => &self.bases[1],
        };
        let mut url = match parsed {
            // The same URL as parsing the whole string (tests below): only the path is parsed.
            Some((from, url)) if from == base && !call.path.contains(['?', '#']) => {
                url_on(url, &call.path)
            }
            _ => {
                let raw = format!("{base}/api/v1{}", call.path);
                Url::parse(&raw).map_err(|e| {
                    PlatformError::InvalidArgument(format!("invalid service URL '{raw}': {e}"))
                })?
            }
        };
        if !call.query.is_empty() {
            let mut pairs = url.query_pairs_mut();
            for (k, v) in &call.query {
                pairs.append_pair(k, v);
            }
        }
        Ok(url)
    }

    fn headers(&self, call: &Call) -> Result<HeaderMap, PlatformError> {
        let key = self
            .settings
            .api_key
            .as_ref()
            .ok_or(PlatformError::MissingApiKey)?;
        let mut auth =
            HeaderValue::from_str(&format!("Bearer {}", key.expose_secret())).map_err(|_| {
                PlatformError::InvalidArgument(
                    "the API key contains characters not allowed in an HTTP header".to_owned(),
                )
            })?;
        auth.set_sensitive(true);
        let mut headers = HeaderMap::new();
        headers.insert(AUTHORIZATION, auth);
        // The platform client sends Content-Type on every request (even GETs, §1); the traces
        // client only with a body.
        if call.service == Service::Platform || call.body.is_some() {
            headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        }
        if let Some(team) = &call.team_header {
            let value = HeaderValue::from_str(team).map_err(|_| {
                PlatformError::InvalidArgument(format!("team id '{team}' is not a valid header"))
            })?;
            headers.insert(TEAM_HEADER, value);
        }
        Ok(headers)
    }

    /// Send once and return the response if it is 2xx; map anything else to an error, counted
    /// for the operators' metrics by service and status ([`PlatformError::metric_label`]).
    /// `whole_timeout`: apply the call's timeout to the whole exchange (JSON calls) or only to
    /// the wait for headers (streamed downloads).
    async fn send_once(
        &self,
        call: &Call,
        whole_timeout: bool,
    ) -> Result<reqwest::Response, PlatformError> {
        let sent = self.exchange(call, whole_timeout).await;
        if let Err(status) = sent.as_ref().map_err(PlatformError::metric_label)
            && let Some(status) = status
        {
            let service = match call.service {
                Service::Platform => "platform",
                Service::Traces => "traces",
            };
            metrics::counter!(crate::error::ERRORS_METRIC, "service" => service, "status" => status)
                .increment(1);
        }
        sent
    }

    async fn exchange(
        &self,
        call: &Call,
        whole_timeout: bool,
    ) -> Result<reqwest::Response, PlatformError> {
        let url = self.url(call)?;
        let headers = self.headers(call)?;
        let mut builder = self
            .client
            .request(call.method.clone(), url)
            .headers(headers);
        if let Some(body) = &call.body {
            builder = builder.body(body.clone());
        }
        // One timer per attempt: reqwest's own covers the whole exchange (its body read too);
        // a streamed download's only the wait for the headers. A second timer for the same
        // deadline cost a wake-up of the runtime's timer driver per call (a write to its
        // eventfd and a thread switch).
        let sent = if whole_timeout {
            builder.timeout(call.timeout).send().await.map_err(Some)
        } else {
            match tokio::time::timeout(call.timeout, builder.send()).await {
                Ok(sent) => sent.map_err(Some),
                Err(_) => Err(None),
            }
        };
        let response = match sent {
            Ok(r) => r,
            Err(None) => {
                return Err(PlatformError::Timeout {
                    endpoint: call.endpoint(),
                    after: call.timeout,
                });
            }
            Err(Some(e)) => return Err(self.map_reqwest(e, &call.endpoint(), call.timeout)),
        };
        let status = response.status();
        self.note_date(response.headers());
        tracing::debug!(method = %call.method, path = %call.path, status = status.as_u16(), "platform response");
        if status.is_success() {
            return Ok(response);
        }
        let headers = response.headers().clone();
        // A JSON call's timer still runs (reqwest's covers the body); a streamed download's
        // error body gets one of its own, so a platform that stalls after the headers cannot
        // hang the call.
        let body = if whole_timeout {
            read_limited(response, MAX_ERROR_BODY).await
        } else {
            tokio::time::timeout(call.timeout, read_limited(response, MAX_ERROR_BODY))
                .await
                .unwrap_or_default()
        };
        Err(self.map_status(status, &headers, &body, &call.endpoint()))
    }

    /// Run `op` with the retry policy when `retry` is set.
    async fn with_retry<T, F, Fut>(
        &self,
        retry: bool,
        path: &str,
        op: F,
    ) -> Result<T, PlatformError>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, PlatformError>>,
    {
        let policy: RetryPolicy = self.settings.retry;
        if !retry || policy.max_attempts <= 1 {
            let mut op = op;
            return op().await;
        }
        let backoff = ExponentialBuilder::default()
            .with_min_delay(policy.base_delay)
            .with_max_delay(policy.max_delay)
            .with_max_times(policy.max_attempts - 1)
            .with_jitter();
        op.retry(backoff)
            .when(PlatformError::is_retryable)
            .adjust(move |err, computed| {
                // `None` means the attempts are used up; keep it so.
                computed.map(|d| match err.retry_after() {
                    Some(asked) => asked.min(policy.retry_after_cap),
                    None => d.min(policy.max_delay),
                })
            })
            .notify(|err, delay| {
                tracing::info!(path, status = ?err.status(), delay_ms = delay.as_millis() as u64, "retrying idempotent request");
            })
            .await
    }

    /// Send a call and decode the 2xx JSON object into `T`: straight from the body's bytes
    /// (no intermediate `Value` tree); a body that does not decode so is read again through
    /// [`object_of`] and [`decode`], so every failure is reported as it always was.
    pub async fn json<T: DeserializeOwned>(&self, call: Call) -> Result<T, PlatformError> {
        self.json_fast(call, |_| None).await
    }

    /// [`Http::json`], trying `fast` on the 2xx body first: a decoder for one exact, common
    /// shape of the answer that says `None` for anything else, which then takes the usual path.
    pub(crate) async fn json_fast<T: DeserializeOwned>(
        &self,
        call: Call,
        fast: fn(&bytes::Bytes) -> Option<T>,
    ) -> Result<T, PlatformError> {
        let endpoint = call.endpoint();
        let (status, bytes) = self.json_bytes(&call, &endpoint).await?;
        if status != StatusCode::NO_CONTENT
            && let Some(t) = fast(&bytes)
        {
            return Ok(t);
        }
        if status != StatusCode::NO_CONTENT
            && bytes.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{')
            && let Ok(t) = read_json::<T>(&bytes)
        {
            return Ok(t);
        }
        let map = object_of(status, &bytes, &endpoint)?;
        decode(Value::Object(map), &endpoint)
    }

    /// Send a call and return the 2xx JSON object (204 or an empty body → `{}`).
    pub async fn json_object(&self, call: Call) -> Result<Map<String, Value>, PlatformError> {
        let endpoint = call.endpoint();
        let (status, bytes) = self.json_bytes(&call, &endpoint).await?;
        object_of(status, &bytes, &endpoint)
    }

    /// Send a call (retried when it allows) and read the whole 2xx body.
    async fn json_bytes(
        &self,
        call: &Call,
        endpoint: &str,
    ) -> Result<(StatusCode, bytes::Bytes), PlatformError> {
        self.with_retry(call.retry, &call.path, || async {
            let response = self.send_once(call, true).await?;
            let status = response.status();
            let bytes = response
                .bytes()
                .await
                .map_err(|e| self.map_reqwest(e, endpoint, call.timeout))?;
            Ok((status, bytes))
        })
        .await
    }

    /// Send a call and return the 2xx response unread, for streaming. Retried (when the call
    /// allows it) only until a 2xx arrives; the body is the caller's.
    pub async fn stream(&self, call: &Call) -> Result<reqwest::Response, PlatformError> {
        self.with_retry(call.retry, &call.path, || self.send_once(call, false))
            .await
    }

    /// Map a reqwest failure. Its text names the URL (no secret in it) but never headers.
    pub fn map_reqwest(&self, e: reqwest::Error, endpoint: &str, after: Duration) -> PlatformError {
        if e.is_timeout() {
            return PlatformError::Timeout {
                endpoint: endpoint.to_owned(),
                after,
            };
        }
        PlatformError::Transport {
            endpoint: endpoint.to_owned(),
            message: self.scrub(&error_chain(&e)),
            maybe_sent: !e.is_connect(),
        }
    }

    /// Remove the API key from text quoted from elsewhere (server details, error chains).
    pub fn scrub(&self, text: &str) -> String {
        match &self.settings.api_key {
            Some(key) if !key.expose_secret().is_empty() => {
                text.replace(key.expose_secret(), "[REDACTED]")
            }
            _ => text.to_owned(),
        }
    }

    fn map_status(
        &self,
        status: StatusCode,
        headers: &HeaderMap,
        body: &[u8],
        endpoint: &str,
    ) -> PlatformError {
        let parsed = ErrorBody::parse(body, status);
        let detail = self.scrub(&parsed.detail);
        let code = parsed.code;
        match status.as_u16() {
            401 => PlatformError::Unauthorized,
            402 => PlatformError::PaymentRequired,
            403 => PlatformError::Forbidden { detail, code },
            404 => PlatformError::NotFound { detail, code },
            409 => PlatformError::Conflict { detail, code },
            422 if parsed.field_errors.is_some() => PlatformError::Validation {
                errors: parsed
                    .field_errors
                    .unwrap_or_default()
                    .into_iter()
                    .map(|f| FieldError {
                        field: self.scrub(&f.field),
                        message: self.scrub(&f.message),
                    })
                    .collect(),
            },
            429 => PlatformError::RateLimited {
                detail,
                retry_after: parse_retry_after(headers),
            },
            s if s >= 500 => PlatformError::Server {
                status: s,
                detail,
                endpoint: endpoint.to_owned(),
                retry_after: parse_retry_after(headers),
            },
            s => PlatformError::Api {
                status: s,
                detail,
                code,
            },
        }
    }
}

/// `bytes` read as JSON into `T`: the body checked as UTF-8 once, then read as text (serde_json
/// reads a text's strings without checking each again), which is what reading the bytes gives
/// wherever they are UTF-8; bytes that are not are read as bytes, so the result is the same.
fn read_json<T: DeserializeOwned>(bytes: &[u8]) -> serde_json::Result<T> {
    match std::str::from_utf8(bytes) {
        Ok(text) => serde_json::from_str(text),
        Err(_) => serde_json::from_slice(bytes),
    }
}

/// A 2xx body as a JSON object (204 or an empty body → `{}`).
fn object_of(
    status: StatusCode,
    bytes: &[u8],
    endpoint: &str,
) -> Result<Map<String, Value>, PlatformError> {
    if status == StatusCode::NO_CONTENT || bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(Map::new());
    }
    match serde_json::from_slice::<Value>(bytes) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err(PlatformError::NotJsonObject {
            endpoint: endpoint.to_owned(),
        }),
        Err(e) => Err(PlatformError::Decode {
            endpoint: endpoint.to_owned(),
            message: format!("response body is not JSON ({e})"),
        }),
    }
}

/// Decode a JSON value into `T`, naming the endpoint on failure.
pub(crate) fn decode<T: DeserializeOwned>(
    value: Value,
    endpoint: &str,
) -> Result<T, PlatformError> {
    serde_json::from_value(value).map_err(|e| PlatformError::Decode {
        endpoint: endpoint.to_owned(),
        message: e.to_string(),
    })
}

/// Read at most `limit` bytes of a body; transport errors yield what was read.
async fn read_limited(mut response: reqwest::Response, limit: usize) -> Vec<u8> {
    let mut out = Vec::new();
    while out.len() < limit {
        match response.chunk().await {
            Ok(Some(chunk)) => out.extend_from_slice(&chunk),
            _ => break,
        }
    }
    out.truncate(limit);
    out
}

/// An error body as the CLI (FastAPI `{"detail"}`) and prime_traces (`{"error":{code,message}}`)
/// understand it.
struct ErrorBody {
    detail: String,
    code: Option<String>,
    field_errors: Option<Vec<FieldError>>,
}

impl ErrorBody {
    fn parse(body: &[u8], status: StatusCode) -> ErrorBody {
        let text = String::from_utf8_lossy(body);
        let fallback = || {
            let t = text.trim();
            if t.is_empty() {
                format!(
                    "{} {}",
                    status.as_u16(),
                    status.canonical_reason().unwrap_or("error")
                )
            } else {
                truncate(t)
            }
        };
        let Ok(Value::Object(map)) = serde_json::from_str::<Value>(&text) else {
            return ErrorBody {
                detail: fallback(),
                code: None,
                field_errors: None,
            };
        };
        if let Some(Value::Object(err)) = map.get("error") {
            let code = err.get("code").and_then(Value::as_str).map(str::to_owned);
            let detail = err
                .get("message")
                .and_then(Value::as_str)
                .map(truncate)
                .or_else(|| code.clone())
                .unwrap_or_else(fallback);
            return ErrorBody {
                detail,
                code,
                field_errors: None,
            };
        }
        match map.get("detail") {
            Some(Value::String(s)) => ErrorBody {
                detail: truncate(s),
                code: None,
                field_errors: None,
            },
            Some(Value::Array(items)) => ErrorBody {
                detail: truncate(&Value::Array(items.clone()).to_string()),
                code: None,
                field_errors: Some(items.iter().map(field_error).collect()),
            },
            Some(other) => ErrorBody {
                detail: truncate(&other.to_string()),
                code: None,
                field_errors: None,
            },
            None => ErrorBody {
                detail: fallback(),
                code: None,
                field_errors: None,
            },
        }
    }
}

/// One FastAPI validation item: `loc` joined by `.` without `body`, and `msg`.
fn field_error(item: &Value) -> FieldError {
    let field = item
        .get("loc")
        .and_then(Value::as_array)
        .map(|loc| {
            loc.iter()
                .filter(|p| p.as_str() != Some("body"))
                .map(|p| match p {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                })
                .collect::<Vec<_>>()
                .join(".")
        })
        .unwrap_or_default();
    let message = match item.get("msg") {
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
        None => item.to_string(),
    };
    FieldError {
        field,
        message: truncate(&message),
    }
}

fn truncate(s: &str) -> String {
    if s.chars().count() <= MAX_DETAIL_CHARS {
        return s.to_owned();
    }
    let mut out: String = s.chars().take(MAX_DETAIL_CHARS).collect();
    out.push('…');
    out
}

/// `Retry-After` as delta seconds or an HTTP-date (a date in the past gives zero).
pub(crate) fn parse_retry_after(headers: &HeaderMap) -> Option<Duration> {
    let raw = headers.get(RETRY_AFTER)?.to_str().ok()?.trim();
    if let Ok(secs) = raw.parse::<u64>() {
        return Some(Duration::from_secs(secs));
    }
    if let Ok(secs) = raw.parse::<f64>()
        && secs.is_finite()
        && secs >= 0.0
    {
        return Some(Duration::from_secs_f64(secs.min(86_400.0)));
    }
    let when = httpdate::parse_http_date(raw).ok()?;
    Some(
        when.duration_since(std::time::SystemTime::now())
            .unwrap_or(Duration::ZERO),
    )
}

/// A reqwest error with its sources, for a message that says what actually failed.
fn error_chain(e: &reqwest::Error) -> String {
    let mut out = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        out.push_str(": ");
        out.push_str(&s.to_string());
        source = s.source();
    }
    out
}

/// Expose an optional secret for a body field; used only by `Serialize` of request types
/// (callers skip `None`).
pub(crate) fn serialize_opt_secret<S: serde::Serializer>(
    secret: &Option<SecretString>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    match secret {
        Some(s) => serializer.serialize_str(s.expose_secret()),
        None => serializer.serialize_none(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reading a body as text after one UTF-8 check gives what reading its bytes gives: the
    /// same value, or the same failure. The valid bodies test that; the two with bytes that are
    /// not UTF-8 (in a skipped field, which a read of the bytes never checks, and in a read
    /// one) hold that such a body is read as bytes, as before.
    #[test]
    fn a_body_read_as_text_reads_as_its_bytes_do() {
        use crate::wire::runs::{RlRun, RunHead, RunPage};
        let run = r#"{"id": "r\u00e9", "userId": "u", "status": "RUNNING", "createdAt": "c",
            "updatedAt": "u", "name": "n\"\\ é 日本 😀", "runConfig": {"a": [1, 2.5, null]}}"#;
        let bodies: Vec<Vec<u8>> = vec![
            format!(r#"{{"runs": [{run}], "total": 1}}"#).into_bytes(),
            br#"{"runs": [{"id": "r"}]}"#.to_vec(),
            br#"{"runs": null, "total": 1e400}"#.to_vec(),
            b"{\"runs\": [], \"total\": 1,}".to_vec(),
            b"{\"runs\": [], \"x\": \"\xff\xfe\"}".to_vec(),
            b"{\"runs\": [{\"id\": \"\xc3\", \"userId\": \"u\", \"status\": \"s\", \"createdAt\": \"c\", \"updatedAt\": \"u\"}]}".to_vec(),
        ];
        for body in &bodies {
            let shown = String::from_utf8_lossy(body);
            let text = read_json::<RunPage<RunHead>>(body);
            let bytes = serde_json::from_slice::<RunPage<RunHead>>(body);
            assert_eq!(
                text.as_ref().map_err(ToString::to_string),
                bytes.as_ref().map_err(ToString::to_string),
                "{shown}"
            );
            let whole = read_json::<RunPage<RlRun>>(body).map_err(|e| e.to_string());
            assert_eq!(
                whole,
                serde_json::from_slice::<RunPage<RlRun>>(body).map_err(|e| e.to_string()),
                "{shown}"
            );
        }
        // The skipped field's bytes are not UTF-8, and the page still reads, as before.
        assert!(read_json::<RunPage<RunHead>>(&bodies[4]).is_ok());
        assert!(read_json::<RunPage<RunHead>>(&bodies[0]).is_ok());
    }

    /// A streamed download whose error answer stalls after its headers is answered by the
    /// call's timeout, with the status it had, instead of waiting for the rest of the body.
    #[tokio::test]
    async fn a_streamed_error_body_that_stalls_ends_at_the_call_timeout() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (held_tx, held_rx) = tokio::sync::oneshot::channel();
        tokio::spawn(async move {
            let (mut socket, _) = listener.accept().await.unwrap();
            let mut buf = [0u8; 4096];
            let _ = socket.read(&mut buf).await;
            let head = "HTTP/1.1 500 Internal Server Error\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"detail\":";
            socket.write_all(head.as_bytes()).await.unwrap();
            // The rest of the body never comes; the socket stays open until the test ends.
            let _ = held_tx.send(socket);
        });
        let mut settings = PlatformSettings::new(
            format!("http://{addr}"),
            SecretString::from("test-key-0001"),
        );
        settings.traces_url = format!("http://{addr}");
        let http = Http::new(settings).unwrap();
        let call = Call::new(
            Method::GET,
            Service::Traces,
            "/x".into(),
            Duration::from_millis(200),
        );
        let answered = tokio::time::timeout(Duration::from_secs(30), http.stream(&call))
            .await
            .expect("the call ends by its own timeout");
        let error = answered.expect_err("a 500 is an error");
        assert_eq!(error.status(), Some(500), "{error:?}");
        drop(held_rx);
    }

    #[test]
    fn retry_after_accepts_seconds_fractions_and_dates_and_ignores_garbage() {
        let mut h = HeaderMap::new();
        h.insert(RETRY_AFTER, HeaderValue::from_static("12"));
        assert_eq!(parse_retry_after(&h), Some(Duration::from_secs(12)));
        h.insert(RETRY_AFTER, HeaderValue::from_static("1.5"));
        assert_eq!(parse_retry_after(&h), Some(Duration::from_millis(1500)));
        h.insert(
            RETRY_AFTER,
            HeaderValue::from_static("Wed, 21 Oct 2015 07:28:00 GMT"),
        );
        assert_eq!(parse_retry_after(&h), Some(Duration::ZERO));
        h.insert(RETRY_AFTER, HeaderValue::from_static("soon"));
        assert_eq!(parse_retry_after(&h), None);
        h.insert(RETRY_AFTER, HeaderValue::from_static("-3"));
        assert_eq!(parse_retry_after(&h), None);
    }

    #[test]
    fn a_url_from_the_parsed_base_is_the_url_of_the_whole_string() {
        for base in [
            "http://127.0.0.1:8000",
            "http://127.0.0.1:8000/",
            "https://api.primeintellect.ai",
            "https://example.com/prefix/",
            "https://EXAMPLE.com:443/a%20b",
            "http://[::1]:9/x/y",
            "http://user:pw@h:81/p/",
            "http://h/a/..",
            "https://bücher.example/p",
        ] {
            let (from, parsed) = parsed_base(base).expect(base);
            for path in [
                "/rft/runs/abc",
                "/rft/runs/a%2Fb/logs",
                "/rft/runs/x y/é",
                "/rft/../runs/./z",
                "",
                "/",
                "//double",
                "/%zz/%41",
            ] {
                let whole = Url::parse(&format!("{from}/api/v1{path}")).unwrap();
                let fast = url_on(&parsed, path);
                assert_eq!(fast.as_str(), whole.as_str(), "{base} + {path}");
            }
        }
        assert!(parsed_base("https://example.com/?q=1").is_none());
        assert!(parsed_base("https://example.com/#f").is_none());
        assert!(parsed_base("mailto:x@example.com").is_none());
        assert!(parsed_base("not a url").is_none());
        // A dot segment at the end of the base's path: parsed whole each time instead.
        assert!(parsed_base("http://h/a//.").is_none());
    }

    #[test]
    fn segments_are_percent_encoded_and_dot_segments_refused() {
        assert_eq!(segment("c20a7a03", "id").unwrap(), "c20a7a03");
        assert_eq!(segment("a b?c#d", "id").unwrap(), "a%20b%3Fc%23d");
        assert_eq!(segment("run.v1~x_y-z", "id").unwrap(), "run.v1~x_y-z");
        assert_eq!(segment("é", "id").unwrap(), "%C3%A9");
        for bad in ["", ".", "..", "a/b", "/"] {
            assert!(segment(bad, "id").is_err(), "{bad:?}");
        }
        // Why `.`/`..` are refused rather than sent as `%2E`: the URL parser undoes it.
        let url = Url::parse("http://h/api/v1/traces/%2E%2E").unwrap();
        assert_eq!(url.path(), "/api/v1/");
    }

    #[test]
    fn error_bodies_fastapi_traces_and_text() {
        let b = ErrorBody::parse(br#"{"detail": {"k": 1}}"#, StatusCode::BAD_REQUEST);
        assert_eq!(b.detail, r#"{"k":1}"#);
        let b = ErrorBody::parse(br#"{"error": {"code": "c"}}"#, StatusCode::NOT_FOUND);
        assert_eq!((b.detail.as_str(), b.code.as_deref()), ("c", Some("c")));
        let b = ErrorBody::parse(b"", StatusCode::GATEWAY_TIMEOUT);
        assert_eq!(b.detail, "504 Gateway Timeout");
        let long = "x".repeat(5000);
        let b = ErrorBody::parse(long.as_bytes(), StatusCode::BAD_REQUEST);
        assert_eq!(b.detail.chars().count(), MAX_DETAIL_CHARS + 1);
    }
}
