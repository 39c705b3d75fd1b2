//! The HTTP gateway as an OAuth 2.1 resource server (MCP authorization, issue 21 §2).
//!
//! - Protected Resource Metadata (RFC 9728) at `/.well-known/oauth-protected-resource` (and
//!   at the path-inserted form for the resource's path, `…/oauth-protected-resource/mcp`).
//! - A bearer token is a JWT access token (RFC 9068) signed by the configured issuer: its key is
//!   looked up by `kid` in the issuer's JWKS (found through the issuer's metadata, cached,
//!   fetched again on an unknown `kid` at most once per [`MIN_REFRESH`], and at least every
//!   [`MAX_AGE`]); the algorithm is the key's (asymmetric only: no `none`, no HS*); `iss`
//!   must be the issuer, `aud` must name the gateway's resource URI, `exp`/`nbf` hold within
//!   the configured leeway, and `sub` is present.
//! - 401 with `WWW-Authenticate: Bearer resource_metadata="…"` (plus `error="invalid_token"`
//!   when a token was presented); 403 with `error="insufficient_scope", scope="…"` when the
//!   token lacks the scope a `tools/call` needs (or holds none of this resource's scopes).
//!
//! The issuer is not the platform: fetching its metadata and keys from here (with `reqwest`)
//! does not break "only `platform/` speaks HTTP to the platform".

use std::{
    collections::HashMap,
    sync::Arc,
    time::{Duration, Instant},
};

use axum::{
    Json, Router,
    extract::{Request, State},
    middleware::Next,
    response::{IntoResponse, Response},
    routing::get,
};
use factory_policies::scopes::{
    Access, Caller, OAuthPolicy, audience_matches, granted_scopes, tool_access,
};
use http::{HeaderValue, StatusCode, header};
use http_body_util::BodyExt;
use jsonwebtoken::{Algorithm, DecodingKey, Validation, jwk::JwkSet};
use serde_json::{Map, Value, json};
use tokio::sync::Mutex;

/// The shortest time between two JWKS fetches caused by unknown `kid`s.
pub const MIN_REFRESH: Duration = Duration::from_secs(10);
/// Keys are fetched again after this long even when every `kid` is known (a revoked key goes).
pub const MAX_AGE: Duration = Duration::from_secs(3600);
/// Largest metadata or JWKS document read from the issuer.
const MAX_DOC_BYTES: usize = 256 * 1024;

/// Why a token was refused (said in `error_description`; never the token itself).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TokenError {
    #[error("malformed token")]
    Malformed,
    #[error("token algorithm not accepted")]
    Algorithm,
    #[error("token signed by an unknown key")]
    UnknownKey,
    #[error("bad token signature")]
    Signature,
    #[error("token expired")]
    Expired,
    #[error("token not yet valid")]
    NotYetValid,
    #[error("token issued by another issuer")]
    Issuer,
    #[error("token not issued for this resource")]
    Audience,
    #[error("token has no subject")]
    Subject,
    #[error("the authorization server's keys are unavailable")]
    KeysUnavailable,
}

/// The asymmetric algorithms accepted; never `none` (jsonwebtoken has no such variant) nor HS*.
fn accepted(alg: Algorithm) -> bool {
    !matches!(alg, Algorithm::HS256 | Algorithm::HS384 | Algorithm::HS512)
}

/// Whether an unknown `kid` may trigger a fetch now: only when the last fetch is at least
/// `min_refresh` old (an attacker sending made-up `kid`s gets at most one fetch per interval).
pub fn may_refetch(last_fetch: Option<Instant>, now: Instant, min_refresh: Duration) -> bool {
    last_fetch.is_none_or(|t| now.saturating_duration_since(t) >= min_refresh)
}

struct Keys {
    by_kid: HashMap<String, (DecodingKey, Option<Algorithm>)>,
    /// Keys without a `kid` (used only for a token without one).
    anonymous: Vec<(DecodingKey, Option<Algorithm>)>,
    fetched: Option<Instant>,
}

/// The resource server: settings, the issuer's keys, an HTTP client for the issuer.
pub struct OAuth {
    pub policy: OAuthPolicy,
    /// This resource's metadata URL (for `WWW-Authenticate`).
    pub metadata_url: String,
    client: reqwest::Client,
    keys: Mutex<Keys>,
    min_refresh: Duration,
    /// The issuer's metadata and when it was read (kept [`METADATA_MAX_AGE`]: the page's
    /// sign-in reads it on every visit without a session).
    metadata: Mutex<Option<(Instant, Value)>>,
}

/// How long the issuer's metadata is used before it is read again.
pub const METADATA_MAX_AGE: Duration = Duration::from_secs(300);

impl std::fmt::Debug for OAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuth")
            .field("issuer", &self.policy.issuer)
            .field("resource", &self.policy.resource)
            .finish_non_exhaustive()
    }
}

/// `https://host/path` → (`https://host`, `/path`).
fn split_origin(url: &str) -> (&str, &str) {
    let after_scheme = url.find("://").map_or(0, |i| i + 3);
    match url[after_scheme..].find('/') {
        Some(i) => url.split_at(after_scheme + i),
        None => (url, ""),
    }
}

/// The RFC 9728 metadata URL of `resource`: the well-known path inserted between the host and
/// the resource's path.
pub fn metadata_url(resource: &str) -> String {
    let (origin, path) = split_origin(resource);
    let path = path.trim_end_matches('/');
    format!("{origin}/.well-known/oauth-protected-resource{path}")
}

impl OAuth {
    pub fn new(policy: OAuthPolicy) -> Result<Self, String> {
        let client = reqwest::Client::builder()
            .timeout(Duration::from_secs(10))
            .connect_timeout(Duration::from_secs(5))
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| format!("cannot build the HTTP client for the OAuth issuer: {e}"))?;
        Ok(OAuth {
            metadata_url: metadata_url(&policy.resource),
            min_refresh: Duration::from_secs(policy.jwks_min_refresh_s),
            policy,
            client,
            keys: Mutex::new(Keys {
                by_kid: HashMap::new(),
                anonymous: Vec::new(),
                fetched: None,
            }),
            metadata: Mutex::new(None),
        })
    }

    /// The RFC 9728 document.
    pub fn resource_metadata(&self) -> Value {
        json!({
            "resource": self.policy.resource,
            "authorization_servers": [self.policy.issuer],
            "scopes_supported": self.policy.scopes_supported(),
            "bearer_methods_supported": ["header"],
            "resource_name": "factory-mcp",
        })
    }

    async fn get_json(&self, url: &str) -> Result<Value, String> {
        let mut response = self
            .client
            .get(url)
            .header(header::ACCEPT, "application/json")
            .send()
            .await
            .map_err(|e| format!("{url}: {}", e.without_url()))?;
        if !response.status().is_success() {
            return Err(format!("{url}: HTTP {}", response.status().as_u16()));
        }
        let mut body = Vec::new();
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| format!("{url}: {}", e.without_url()))?
        {
            if body.len() + chunk.len() > MAX_DOC_BYTES {
                return Err(format!("{url}: answer larger than {MAX_DOC_BYTES} bytes"));
            }
            body.extend_from_slice(&chunk);
        }
        serde_json::from_slice(&body).map_err(|e| format!("{url}: not JSON: {e}"))
    }

    /// The issuer's RFC 8414 metadata or, failing that, its OpenID configuration; the
    /// metadata's `issuer` must be the configured one.
    pub(crate) async fn issuer_metadata(&self) -> Result<Value, String> {
        let mut cached = self.metadata.lock().await;
        if let Some((at, doc)) = cached.as_ref()
            && at.elapsed() < METADATA_MAX_AGE
        {
            return Ok(doc.clone());
        }
        let doc = self.read_issuer_metadata().await?;
        *cached = Some((Instant::now(), doc.clone()));
        Ok(doc)
    }

    /// [`OAuth::issuer_metadata`], read from the issuer now.
    async fn read_issuer_metadata(&self) -> Result<Value, String> {
        let issuer = self.policy.issuer.trim_end_matches('/');
        let (origin, path) = split_origin(issuer);
        let candidates = [
            format!("{origin}/.well-known/oauth-authorization-server{path}"),
            format!("{issuer}/.well-known/openid-configuration"),
        ];
        let mut last = String::new();
        for url in candidates {
            match self.get_json(&url).await {
                Ok(doc) => {
                    let named = doc.get("issuer").and_then(Value::as_str).unwrap_or("");
                    if named.trim_end_matches('/') != issuer {
                        return Err(format!(
                            "{url} names issuer {named:?}, not the configured {issuer:?}"
                        ));
                    }
                    return Ok(doc);
                }
                Err(e) => last = e,
            }
        }
        Err(last)
    }

    /// The issuer's `jwks_uri`.
    async fn jwks_uri(&self) -> Result<String, String> {
        self.issuer_metadata()
            .await?
            .get("jwks_uri")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .ok_or_else(|| "the issuer's metadata has no jwks_uri".to_owned())
    }

    /// POST a form to the issuer (the token endpoint); its JSON answer, whatever the status
    /// (an OAuth error answer is JSON too).
    pub(crate) async fn post_form(
        &self,
        url: &str,
        form: &[(&str, &str)],
    ) -> Result<(u16, Value), String> {
        let response = self
            .client
            .post(url)
            .header(header::ACCEPT, "application/json")
            .form(form)
            .send()
            .await
            .map_err(|e| format!("{url}: {}", e.without_url()))?;
        let status = response.status().as_u16();
        let body = response
            .bytes()
            .await
            .map_err(|e| format!("{url}: {}", e.without_url()))?;
        if body.len() > MAX_DOC_BYTES {
            return Err(format!("{url}: answer larger than {MAX_DOC_BYTES} bytes"));
        }
        let v =
            serde_json::from_slice(&body).map_err(|_| format!("{url}: HTTP {status}, not JSON"))?;
        Ok((status, v))
    }

    async fn fetch_keys(&self, keys: &mut Keys) -> Result<(), String> {
        keys.fetched = Some(Instant::now());
        let uri = self.jwks_uri().await?;
        let doc = self.get_json(&uri).await?;
        let set: JwkSet =
            serde_json::from_value(doc).map_err(|e| format!("{uri}: not a JWK set: {e}"))?;
        let mut by_kid = HashMap::new();
        let mut anonymous = Vec::new();
        for jwk in &set.keys {
            // Only signing keys; symmetric keys are never accepted.
            if matches!(
                jwk.common.public_key_use,
                Some(jsonwebtoken::jwk::PublicKeyUse::Encryption)
            ) || matches!(
                jwk.algorithm,
                jsonwebtoken::jwk::AlgorithmParameters::OctetKey(_)
            ) {
                continue;
            }
            let Ok(key) = DecodingKey::from_jwk(jwk) else {
                continue;
            };
            let alg = jwk
                .common
                .key_algorithm
                .and_then(|a| a.to_string().parse::<Algorithm>().ok());
            match &jwk.common.key_id {
                Some(kid) => {
                    by_kid.insert(kid.clone(), (key, alg));
                }
                None => anonymous.push((key, alg)),
            }
        }
        keys.by_kid = by_kid;
        keys.anonymous = anonymous;
        tracing::info!(keys = set.keys.len(), "fetched the OAuth issuer's keys");
        Ok(())
    }

    /// The key for `kid`: from the cache; on a miss (or a stale cache) from the issuer, at most
    /// once per `min_refresh`.
    async fn key_for(
        &self,
        kid: Option<&str>,
    ) -> Result<(DecodingKey, Option<Algorithm>), TokenError> {
        let mut keys = self.keys.lock().await;
        let now = Instant::now();
        let stale = keys
            .fetched
            .is_none_or(|t| now.saturating_duration_since(t) >= MAX_AGE);
        let find = |keys: &Keys| match kid {
            Some(kid) => keys.by_kid.get(kid).cloned(),
            None if keys.anonymous.len() + keys.by_kid.len() == 1 => keys
                .anonymous
                .first()
                .cloned()
                .or_else(|| keys.by_kid.values().next().cloned()),
            None => None,
        };
        if !stale && let Some(found) = find(&keys) {
            return Ok(found);
        }
        if (stale || may_refetch(keys.fetched, now, self.min_refresh))
            && let Err(e) = self.fetch_keys(&mut keys).await
        {
            tracing::warn!(error = %e, "could not fetch the OAuth issuer's keys");
            if keys.by_kid.is_empty() && keys.anonymous.is_empty() {
                return Err(TokenError::KeysUnavailable);
            }
        }
        find(&keys).ok_or(TokenError::UnknownKey)
    }

    /// Validate a bearer token; the caller it stands for.
    pub async fn validate(&self, token: &str) -> Result<Caller, TokenError> {
        let header = jsonwebtoken::decode_header(token).map_err(|_| TokenError::Malformed)?;
        if !accepted(header.alg) {
            return Err(TokenError::Algorithm);
        }
        let (key, key_alg) = self.key_for(header.kid.as_deref()).await?;
        if key_alg.is_some_and(|a| a != header.alg) {
            return Err(TokenError::Algorithm);
        }
        let mut validation = Validation::new(header.alg);
        validation.leeway = self.policy.leeway_s;
        validation.validate_exp = true;
        validation.validate_nbf = true;
        validation.validate_aud = false; // checked below, tolerant of a trailing slash
        validation.set_issuer(&[self.policy.issuer.as_str()]);
        validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        let data =
            jsonwebtoken::decode::<Map<String, Value>>(token, &key, &validation).map_err(|e| {
                use jsonwebtoken::errors::ErrorKind as K;
                match e.kind() {
                    K::ExpiredSignature => TokenError::Expired,
                    K::ImmatureSignature => TokenError::NotYetValid,
                    K::InvalidIssuer => TokenError::Issuer,
                    K::InvalidSignature => TokenError::Signature,
                    K::InvalidAlgorithm | K::InvalidAlgorithmName => TokenError::Algorithm,
                    K::MissingRequiredClaim(c) if c == "sub" => TokenError::Subject,
                    K::MissingRequiredClaim(c) if c == "aud" => TokenError::Audience,
                    _ => TokenError::Malformed,
                }
            })?;
        let claims = data.claims;
        if !audience_matches(claims.get("aud"), &self.policy.resource) {
            return Err(TokenError::Audience);
        }
        let subject = claims
            .get("sub")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .ok_or(TokenError::Subject)?;
        Ok(Caller {
            subject: factory_policies::untrusted::one_line(subject, 200),
            scopes: granted_scopes(claims.get("scope"), claims.get("scp")),
            names: self.policy.scopes.clone(),
        })
    }

    /// `WWW-Authenticate` for a 401.
    fn challenge(&self, error: Option<&TokenError>) -> HeaderValue {
        let mut v = format!("Bearer resource_metadata=\"{}\"", self.metadata_url);
        if let Some(e) = error {
            v.push_str(&format!(
                ", error=\"invalid_token\", error_description=\"{e}\""
            ));
        }
        HeaderValue::from_str(&v).unwrap_or_else(|_| HeaderValue::from_static("Bearer"))
    }

    /// `WWW-Authenticate` for a 403: the scope(s) that would do.
    fn insufficient(&self, scope: &str) -> HeaderValue {
        let v = format!(
            "Bearer error=\"insufficient_scope\", scope=\"{scope}\", resource_metadata=\"{}\", error_description=\"the token lacks the scope this call needs\"",
            self.metadata_url
        );
        HeaderValue::from_str(&v).unwrap_or_else(|_| HeaderValue::from_static("Bearer"))
    }

    pub fn unauthorized(&self, error: Option<&TokenError>) -> Response {
        let text = match error {
            None => "401 Unauthorized: send `Authorization: Bearer <access token>` from the authorization server named in the resource metadata\n".to_owned(),
            Some(e) => format!("401 Unauthorized: {e}; get a new access token for this resource from the authorization server\n"),
        };
        let mut response = (StatusCode::UNAUTHORIZED, text).into_response();
        response
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, self.challenge(error));
        response
    }

    pub fn forbidden(&self, scope: &str) -> Response {
        let mut response = (
            StatusCode::FORBIDDEN,
            format!("403 Forbidden: this call needs the scope {scope}; ask the authorization server for a token that holds it\n"),
        )
            .into_response();
        response
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, self.insufficient(scope));
        response
    }
}

/// The metadata routes (unauthenticated).
pub fn metadata_router(oauth: Arc<OAuth>) -> Router {
    let (_, path) = split_origin(&oauth.policy.resource);
    let path = path.trim_end_matches('/').to_owned();
    let doc = move |State(o): State<Arc<OAuth>>| async move {
        let mut r = Json(o.resource_metadata()).into_response();
        r.headers_mut().insert(
            header::CACHE_CONTROL,
            HeaderValue::from_static("public, max-age=300"),
        );
        r
    };
    let mut router = Router::new().route("/.well-known/oauth-protected-resource", get(doc));
    if !path.is_empty() {
        router = router.route(
            &format!("/.well-known/oauth-protected-resource{path}"),
            get(doc),
        );
    }
    router.with_state(oauth)
}

/// The capability a JSON-RPC body asks for, when it is a `tools/call` of a known tool.
fn body_access(body: &[u8]) -> Option<Access> {
    let v: Value = serde_json::from_slice(body).ok()?;
    if v.get("method")?.as_str()? != "tools/call" {
        return None;
    }
    let name = v.get("params")?.get("name")?.as_str()?;
    let spec = factory_tools::catalogue::spec(name)?;
    Some(access_of(spec))
}

/// A catalogue record's capability (the decision is `policies::scopes::tool_access`).
pub fn access_of(spec: &factory_tools::catalogue::ToolSpec) -> Access {
    use factory_tools::catalogue::Toolset;
    tool_access(
        matches!(spec.toolset, Toolset::Launch | Toolset::Lifecycle),
        spec.hints.read_only,
    )
}

/// The bearer check under OAuth: a valid token, holding at least one of this resource's
/// scopes, and for a `tools/call` the tool's scope; the [`Caller`] is put into the request's
/// extensions (rmcp hands them to the tool through the request context).
pub async fn check(oauth: &OAuth, request: Request, max_body: usize) -> Result<Request, Response> {
    let presented = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim)
        .filter(|t| !t.is_empty());
    let Some(token) = presented else {
        return Err(oauth.unauthorized(None));
    };
    let caller = match oauth.validate(token).await {
        Ok(c) => c,
        Err(e) => {
            tracing::info!(reason = %e, "refused an access token");
            return Err(oauth.unauthorized(Some(&e)));
        }
    };
    if !(caller.may(Access::Read) || caller.may(Access::Act) || caller.may(Access::Approve)) {
        let any = format!(
            "{} {}",
            caller.needed(Access::Read),
            caller.needed(Access::Act)
        );
        return Err(oauth.forbidden(&any));
    }
    let (parts, body) = request.into_parts();
    let request = if parts.method == http::Method::POST {
        let limited = http_body_util::Limited::new(body, max_body);
        let bytes = match limited.collect().await {
            Ok(c) => c.to_bytes(),
            Err(_) => {
                return Err((
                    StatusCode::PAYLOAD_TOO_LARGE,
                    format!("413: request body over {max_body} bytes\n"),
                )
                    .into_response());
            }
        };
        if let Some(access) = body_access(&bytes)
            && !caller.may(access)
        {
            return Err(oauth.forbidden(caller.needed(access)));
        }
        Request::from_parts(parts, axum::body::Body::from(bytes))
    } else {
        Request::from_parts(parts, body)
    };
    let mut request = request;
    request.extensions_mut().insert(caller);
    Ok(request)
}

/// Middleware form of [`check`].
pub async fn middleware(
    State((oauth, max_body)): State<(Arc<OAuth>, usize)>,
    request: Request,
    next: Next,
) -> Response {
    match check(&oauth, request, max_body).await {
        Ok(request) => super::run_busy(request, next).await,
        Err(response) => response,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_url_inserts_the_well_known_path() {
        assert_eq!(
            metadata_url("https://gw.example/mcp"),
            "https://gw.example/.well-known/oauth-protected-resource/mcp"
        );
        assert_eq!(
            metadata_url("http://127.0.0.1:8080"),
            "http://127.0.0.1:8080/.well-known/oauth-protected-resource"
        );
        assert_eq!(
            metadata_url("https://gw.example/"),
            "https://gw.example/.well-known/oauth-protected-resource"
        );
    }

    #[test]
    fn only_asymmetric_algorithms_are_accepted() {
        assert!(!accepted(Algorithm::HS256));
        assert!(!accepted(Algorithm::HS512));
        assert!(accepted(Algorithm::RS256));
        assert!(accepted(Algorithm::ES256));
        assert!(accepted(Algorithm::EdDSA));
    }

    #[test]
    fn unknown_kids_refetch_at_most_once_per_interval() {
        let t0 = Instant::now();
        let ten = Duration::from_secs(10);
        assert!(may_refetch(None, t0, ten));
        assert!(!may_refetch(Some(t0), t0 + Duration::from_secs(9), ten));
        assert!(may_refetch(Some(t0), t0 + ten, ten));
        assert!(may_refetch(Some(t0), t0, Duration::ZERO));
    }

    #[test]
    fn a_tools_call_body_names_its_capability() {
        let call = |n: &str| {
            format!(r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"{n}"}}}}"#)
        };
        assert_eq!(body_access(call("get_run").as_bytes()), Some(Access::Read));
        assert_eq!(body_access(call("plan_run").as_bytes()), Some(Access::Act));
        assert_eq!(
            body_access(call("launch_run").as_bytes()),
            Some(Access::Act)
        );
        assert_eq!(
            body_access(call("delete_run").as_bytes()),
            Some(Access::Act)
        );
        assert_eq!(
            body_access(call("export_logs").as_bytes()),
            Some(Access::Act)
        );
        assert_eq!(body_access(call("no_such").as_bytes()), None);
        assert_eq!(body_access(br#"{"method":"tools/list"}"#), None);
        assert_eq!(body_access(b"not json"), None);
    }

    fn policy() -> OAuthPolicy {
        OAuthPolicy {
            issuer: "http://127.0.0.1:1".into(),
            resource: "http://127.0.0.1:2/mcp".into(),
            scopes: Default::default(),
            leeway_s: 0,
            jwks_min_refresh_s: 10,
            page_client_id: None,
            page_origin: None,
        }
    }

    #[tokio::test]
    async fn hs256_and_none_are_refused_before_any_key_is_fetched() {
        let oauth = OAuth::new(policy()).unwrap();
        let hs = jsonwebtoken::encode(
            &jsonwebtoken::Header::new(Algorithm::HS256),
            &json!({"sub": "x", "exp": 4_000_000_000u64}),
            &jsonwebtoken::EncodingKey::from_secret(b"public key bytes"),
        )
        .unwrap();
        assert_eq!(
            oauth.validate(&hs).await.unwrap_err(),
            TokenError::Algorithm
        );
        // {"alg":"none"}.{"sub":"x"}.
        let none = "eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.";
        assert_eq!(
            oauth.validate(none).await.unwrap_err(),
            TokenError::Malformed
        );
        assert_eq!(
            oauth.validate("garbage").await.unwrap_err(),
            TokenError::Malformed
        );
    }

    #[test]
    fn challenges_name_the_metadata_and_the_scope() {
        let oauth = OAuth::new(policy()).unwrap();
        let r = oauth.unauthorized(None);
        assert_eq!(
            r.headers()[header::WWW_AUTHENTICATE],
            "Bearer resource_metadata=\"http://127.0.0.1:2/.well-known/oauth-protected-resource/mcp\""
        );
        let r = oauth.unauthorized(Some(&TokenError::Expired));
        let v = r.headers()[header::WWW_AUTHENTICATE]
            .to_str()
            .unwrap()
            .to_owned();
        assert!(v.contains("error=\"invalid_token\""), "{v}");
        let r = oauth.forbidden("factory:approve");
        assert_eq!(r.status(), StatusCode::FORBIDDEN);
        let v = r.headers()[header::WWW_AUTHENTICATE]
            .to_str()
            .unwrap()
            .to_owned();
        assert!(
            v.contains("error=\"insufficient_scope\", scope=\"factory:approve\""),
            "{v}"
        );
    }
}
