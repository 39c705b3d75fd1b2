//! The approval page's sign-in under OAuth (issue 21 §2): a person signs in with the issuer
//! (OpenID Connect authorization code with PKCE, as a public client) before the page shows a
//! plan, and approves in their own name.
//!
//! - A visitor without a session is sent to the issuer's `authorization_endpoint` (from its
//!   metadata) with `response_type=code`, the page's `client_id`, `redirect_uri` =
//!   `<page origin>/approve/callback`, `scope=openid <approving scope>`, `resource=<resource>`
//!   (RFC 8707: the access token's audience is this gateway), a PKCE S256 challenge, and a
//!   random `state` and `nonce`. Those three secrets and the page address to return to are
//!   held here, in memory, under a random id in a short-lived pre-login cookie.
//! - The callback needs that cookie, the same `state` and (when sent, RFC 9207) `iss` equal to
//!   the issuer; it exchanges the code with the verifier at the `token_endpoint`, validates the
//!   access token exactly as `/mcp` does ([`OAuth::validate`]: signature, issuer, audience =
//!   resource, expiry) and checks the ID token's `nonce` and `sub` against it (the ID token
//!   came straight from the token endpoint, so its transport vouches for it, OIDC Core
//!   3.1.3.7). The person's `sub` and granted scopes become a session: a random id in an
//!   HttpOnly, SameSite=Lax cookie on `/approve` (Secure when the page origin is https), the
//!   rest held here, for no longer than the access token lives (at most [`SESSION_MAX`]).
//! - Who may then see and decide is `factory_policies::scopes::page_visitor`.
//!
//! Sessions live in this process: behind several replicas, route `/approve/` stickily (or sign
//! in again on another replica).

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use axum::response::{IntoResponse, Response};
use base64::{Engine, engine::general_purpose::URL_SAFE_NO_PAD};
use factory_policies::scopes::{Access, Caller, page_redirect_uri};
use http::{HeaderValue, StatusCode, header};
use serde::Deserialize;
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::oauth::OAuth;

/// The session cookie (Path=/approve).
pub const SESSION_COOKIE: &str = "factory_mcp_session";
/// The pre-login cookie: which pending sign-in a callback belongs to.
pub const PRELOGIN_COOKIE: &str = "factory_mcp_signin";
/// How long a person has to sign in at the issuer.
const PRELOGIN_TTL: Duration = Duration::from_secs(10 * 60);
/// The longest a page session lasts (shorter when the access token expires sooner).
pub const SESSION_MAX: Duration = Duration::from_secs(8 * 3600);
/// At most this many sign-ins in flight and sessions held (the oldest goes first).
const MAX_ENTRIES: usize = 1024;

struct Pending {
    state: String,
    nonce: String,
    verifier: String,
    return_to: String,
    expires: Instant,
}

struct Session {
    caller: Caller,
    expires: Instant,
}

/// The page's sign-in: settings and the in-memory pending sign-ins and sessions.
pub struct SignIn {
    oauth: Arc<OAuth>,
    client_id: String,
    redirect_uri: String,
    secure: bool,
    pending: Mutex<HashMap<String, Pending>>,
    sessions: Mutex<HashMap<String, Session>>,
}

impl std::fmt::Debug for SignIn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SignIn")
            .field("client_id", &self.client_id)
            .field("redirect_uri", &self.redirect_uri)
            .finish_non_exhaustive()
    }
}

/// 256 random bits, base64url (43 characters: also a valid PKCE verifier).
fn random_secret() -> String {
    URL_SAFE_NO_PAD.encode(rand::random::<[u8; 32]>())
}

/// The PKCE S256 challenge of `verifier` (RFC 7636 §4.2).
pub fn pkce_challenge(verifier: &str) -> String {
    URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()))
}

/// Drop expired entries; past the cap, the ones closest to expiry.
fn prune<T>(map: &mut HashMap<String, T>, expires: impl Fn(&T) -> Instant, now: Instant) {
    map.retain(|_, v| expires(v) > now);
    while map.len() >= MAX_ENTRIES {
        let Some(k) = map
            .iter()
            .min_by_key(|(_, v)| expires(v))
            .map(|(k, _)| k.clone())
        else {
            break;
        };
        map.remove(&k);
    }
}

/// A cookie's value from the request's `Cookie` headers.
pub fn cookie<'a>(headers: &'a http::HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|kv| kv.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v)
}

/// The ID token's claims, unverified (see the module note: it came from the token endpoint).
fn id_token_claims(id_token: &str) -> Option<serde_json::Map<String, Value>> {
    let payload = id_token.split('.').nth(1)?;
    let bytes = URL_SAFE_NO_PAD.decode(payload.trim_end_matches('=')).ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// The callback's query (RFC 6749 §4.1.2, RFC 9207's `iss`).
#[derive(Debug, Default, Deserialize)]
pub struct CallbackQuery {
    #[serde(default)]
    pub code: Option<String>,
    #[serde(default)]
    pub state: Option<String>,
    #[serde(default)]
    pub iss: Option<String>,
    #[serde(default)]
    pub error: Option<String>,
}

/// Why a callback was refused (said on the page; never a secret).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SignInError {
    #[error("this sign-in was not started here, or took too long; open the page's address again")]
    NoPending,
    #[error(
        "the sign-in answer does not match the sign-in started here; open the page's address again"
    )]
    State,
    #[error("the sign-in answer came from another authorization server")]
    Issuer,
    #[error("the authorization server did not sign you in ({0})")]
    Refused(String),
    #[error("the authorization server's answer could not be used ({0})")]
    Exchange(String),
    #[error("the access token from the sign-in was not accepted ({0})")]
    Token(String),
}

impl SignIn {
    /// The sign-in, when `[oauth] page_client_id` is set.
    pub fn new(oauth: Arc<OAuth>) -> Option<SignIn> {
        let client_id = oauth.policy.page_client_id.clone()?;
        let redirect_uri = page_redirect_uri(&oauth.policy);
        Some(SignIn {
            secure: redirect_uri.starts_with("https://"),
            client_id,
            redirect_uri,
            oauth,
            pending: Mutex::new(HashMap::new()),
            sessions: Mutex::new(HashMap::new()),
        })
    }

    /// The page's public origin (where the issuer sends the person back).
    pub fn origin(&self) -> &str {
        self.redirect_uri
            .strip_suffix("/approve/callback")
            .unwrap_or(&self.redirect_uri)
    }

    /// The approving scope's name (for the refusal page).
    pub fn approve_scope(&self) -> &str {
        self.oauth.policy.scope_for(Access::Approve)
    }

    fn cookie_attrs(&self, max_age: Duration) -> String {
        format!(
            "Path=/approve; HttpOnly; SameSite=Lax; Max-Age={}{}",
            max_age.as_secs(),
            if self.secure { "; Secure" } else { "" }
        )
    }

    /// The signed-in person of a request's session cookie, if the session is live.
    pub fn session(&self, headers: &http::HeaderMap) -> Option<Caller> {
        let id = cookie(headers, SESSION_COOKIE)?;
        let mut sessions = self.sessions.lock().ok()?;
        let now = Instant::now();
        match sessions.get(id) {
            Some(s) if s.expires > now => Some(s.caller.clone()),
            Some(_) => {
                sessions.remove(id);
                None
            }
            None => None,
        }
    }

    /// Send the visitor to the issuer to sign in, coming back to `return_to` (a path on the
    /// page, built by the caller from checked parts).
    pub async fn begin(&self, return_to: String) -> Result<Response, String> {
        let meta = self.oauth.issuer_metadata().await?;
        let endpoint = meta
            .get("authorization_endpoint")
            .and_then(Value::as_str)
            .ok_or("the issuer's metadata has no authorization_endpoint")?;
        let (id, state, nonce, verifier) = (
            random_secret(),
            random_secret(),
            random_secret(),
            random_secret(),
        );
        let scope = format!("openid {}", self.approve_scope());
        let url = reqwest::Url::parse_with_params(
            endpoint,
            [
                ("response_type", "code"),
                ("client_id", self.client_id.as_str()),
                ("redirect_uri", self.redirect_uri.as_str()),
                ("scope", scope.as_str()),
                ("resource", self.oauth.policy.resource.as_str()),
                ("code_challenge", pkce_challenge(&verifier).as_str()),
                ("code_challenge_method", "S256"),
                ("state", state.as_str()),
                ("nonce", nonce.as_str()),
            ],
        )
        .map_err(|e| format!("the issuer's authorization_endpoint is not a URL: {e}"))?;
        if let Ok(mut pending) = self.pending.lock() {
            let now = Instant::now();
            prune(&mut pending, |p| p.expires, now);
            pending.insert(
                id.clone(),
                Pending {
                    state,
                    nonce,
                    verifier,
                    return_to,
                    expires: now + PRELOGIN_TTL,
                },
            );
        }
        let mut r = StatusCode::SEE_OTHER.into_response();
        let h = r.headers_mut();
        if let Ok(v) = HeaderValue::from_str(url.as_str()) {
            h.insert(header::LOCATION, v);
        }
        if let Ok(v) = HeaderValue::from_str(&format!(
            "{PRELOGIN_COOKIE}={id}; {}",
            self.cookie_attrs(PRELOGIN_TTL)
        )) {
            h.append(header::SET_COOKIE, v);
        }
        Ok(r)
    }

    /// The issuer sent the person back: on success a session and a redirect to the page.
    pub async fn callback(
        &self,
        query: &CallbackQuery,
        headers: &http::HeaderMap,
    ) -> Result<Response, SignInError> {
        let pending = cookie(headers, PRELOGIN_COOKIE)
            .and_then(|id| self.pending.lock().ok()?.remove(id))
            .filter(|p| p.expires > Instant::now())
            .ok_or(SignInError::NoPending)?;
        let state_ok = query
            .state
            .as_deref()
            .is_some_and(|s| super::constant_time_eq(s.as_bytes(), pending.state.as_bytes()));
        if !state_ok {
            return Err(SignInError::State);
        }
        if let Some(iss) = &query.iss
            && iss.trim_end_matches('/') != self.oauth.policy.issuer.trim_end_matches('/')
        {
            return Err(SignInError::Issuer);
        }
        if let Some(e) = &query.error {
            return Err(SignInError::Refused(factory_policies::untrusted::one_line(
                e, 60,
            )));
        }
        let code = query
            .code
            .as_deref()
            .filter(|c| !c.is_empty())
            .ok_or_else(|| SignInError::Refused("no code".into()))?;
        let meta = self
            .oauth
            .issuer_metadata()
            .await
            .map_err(|_| SignInError::Exchange("no metadata".into()))?;
        let token_endpoint = meta
            .get("token_endpoint")
            .and_then(Value::as_str)
            .ok_or_else(|| SignInError::Exchange("no token_endpoint".into()))?;
        let (status, answer) = self
            .oauth
            .post_form(
                token_endpoint,
                &[
                    ("grant_type", "authorization_code"),
                    ("code", code),
                    ("redirect_uri", &self.redirect_uri),
                    ("client_id", &self.client_id),
                    ("code_verifier", &pending.verifier),
                    ("resource", &self.oauth.policy.resource),
                ],
            )
            .await
            .map_err(|_| SignInError::Exchange("token endpoint unreachable".into()))?;
        let access_token = answer
            .get("access_token")
            .and_then(Value::as_str)
            .ok_or_else(|| {
                let e = answer
                    .get("error")
                    .and_then(Value::as_str)
                    .unwrap_or("no access_token");
                SignInError::Exchange(format!(
                    "HTTP {status}: {}",
                    factory_policies::untrusted::one_line(e, 60)
                ))
            })?;
        let caller = self
            .oauth
            .validate(access_token)
            .await
            .map_err(|e| SignInError::Token(e.to_string()))?;
        let id_claims = answer
            .get("id_token")
            .and_then(Value::as_str)
            .and_then(id_token_claims)
            .ok_or_else(|| SignInError::Exchange("no usable ID token".into()))?;
        let nonce_ok = id_claims
            .get("nonce")
            .and_then(Value::as_str)
            .is_some_and(|n| super::constant_time_eq(n.as_bytes(), pending.nonce.as_bytes()));
        if !nonce_ok {
            return Err(SignInError::Exchange("the ID token's nonce differs".into()));
        }
        if id_claims.get("sub").and_then(Value::as_str) != Some(caller.subject.as_str()) {
            return Err(SignInError::Exchange(
                "the ID token and the access token name different people".into(),
            ));
        }
        let lifetime = answer
            .get("expires_in")
            .and_then(Value::as_u64)
            .map_or(SESSION_MAX, |s| Duration::from_secs(s).min(SESSION_MAX));
        tracing::info!(subject = %caller.subject, "signed in on the approval page");
        let id = random_secret();
        if let Ok(mut sessions) = self.sessions.lock() {
            let now = Instant::now();
            prune(&mut sessions, |s| s.expires, now);
            sessions.insert(
                id.clone(),
                Session {
                    caller,
                    expires: now + lifetime,
                },
            );
        }
        let mut r = StatusCode::SEE_OTHER.into_response();
        let h = r.headers_mut();
        if let Ok(v) = HeaderValue::from_str(&pending.return_to) {
            h.insert(header::LOCATION, v);
        }
        for c in [
            format!("{SESSION_COOKIE}={id}; {}", self.cookie_attrs(lifetime)),
            format!("{PRELOGIN_COOKIE}=; {}", self.cookie_attrs(Duration::ZERO)),
        ] {
            if let Ok(v) = HeaderValue::from_str(&c) {
                h.append(header::SET_COOKIE, v);
            }
        }
        Ok(r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pkce_s256_is_base64url_of_the_sha256_without_padding() {
        // Computed independently: base64.urlsafe_b64encode(hashlib.sha256(v).digest()) in Python.
        assert_eq!(
            pkce_challenge("dBjftJeZ4CK-Y3gwnmUZTEzsgF3rIp5gEHR-1XiNGaQ"),
            "3Xe_n5j8iUvoFj5EWhQKbu_IhLZ_nWDhEBTtwXKHkOA"
        );
        let v = random_secret();
        assert_eq!(v.len(), 43);
        assert_ne!(v, random_secret());
    }

    #[test]
    fn cookies_are_read_by_name() {
        let mut h = http::HeaderMap::new();
        h.insert(
            header::COOKIE,
            HeaderValue::from_static("a=1; factory_mcp_session=s1"),
        );
        h.append(
            header::COOKIE,
            HeaderValue::from_static("factory_mcp_signin=p"),
        );
        assert_eq!(cookie(&h, SESSION_COOKIE), Some("s1"));
        assert_eq!(cookie(&h, PRELOGIN_COOKIE), Some("p"));
        assert_eq!(cookie(&h, "factory_mcp_page"), None);
    }

    #[test]
    fn the_id_token_payload_is_read() {
        let payload = URL_SAFE_NO_PAD.encode(br#"{"sub":"alice","nonce":"n"}"#);
        let c = id_token_claims(&format!("h.{payload}.s")).unwrap();
        assert_eq!(c["nonce"], "n");
        assert!(id_token_claims("garbage").is_none());
    }

    fn sign_in(page_origin: Option<&str>) -> SignIn {
        let policy = factory_policies::scopes::OAuthPolicy {
            issuer: "http://127.0.0.1:1".into(),
            resource: "http://127.0.0.1:2/mcp".into(),
            scopes: Default::default(),
            leeway_s: 0,
            jwks_min_refresh_s: 10,
            page_client_id: Some("page".into()),
            page_origin: page_origin.map(str::to_owned),
        };
        SignIn::new(Arc::new(OAuth::new(policy).unwrap())).unwrap()
    }

    #[test]
    fn cookies_are_secure_only_on_https_and_scoped_to_the_page() {
        let s = sign_in(None);
        assert_eq!(s.origin(), "http://127.0.0.1:2");
        let a = s.cookie_attrs(Duration::from_secs(5));
        assert!(
            a.contains("Path=/approve; HttpOnly; SameSite=Lax; Max-Age=5"),
            "{a}"
        );
        assert!(!a.contains("Secure"));
        let s = sign_in(Some("https://gw.example"));
        assert_eq!(s.origin(), "https://gw.example");
        assert!(s.cookie_attrs(Duration::ZERO).ends_with("; Secure"));
    }

    #[tokio::test]
    async fn a_callback_without_its_pre_login_cookie_or_state_is_refused() {
        let s = sign_in(None);
        let q = CallbackQuery {
            code: Some("c".into()),
            state: Some("x".into()),
            ..Default::default()
        };
        let h = http::HeaderMap::new();
        assert_eq!(
            s.callback(&q, &h).await.unwrap_err(),
            SignInError::NoPending
        );
        s.pending.lock().unwrap().insert(
            "p1".into(),
            Pending {
                state: "right".into(),
                nonce: "n".into(),
                verifier: "v".into(),
                return_to: "/approve/x".into(),
                expires: Instant::now() + PRELOGIN_TTL,
            },
        );
        let mut h = http::HeaderMap::new();
        h.insert(
            header::COOKIE,
            HeaderValue::from_static("factory_mcp_signin=p1"),
        );
        assert_eq!(s.callback(&q, &h).await.unwrap_err(), SignInError::State);
        // Spent: the same pre-login cookie does not work twice.
        let q = CallbackQuery {
            state: Some("right".into()),
            ..q
        };
        assert_eq!(
            s.callback(&q, &h).await.unwrap_err(),
            SignInError::NoPending
        );
        assert!(s.session(&h).is_none());
    }
}
