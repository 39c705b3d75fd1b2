//! OAuth scopes (issue 21 §2): the `[oauth]` settings block, which scope a tool call needs,
//! and whether a caller's granted scopes cover it. Pure functions; the HTTP layer
//! (`factory_server::http::oauth`) validates the token and hands the granted scopes here.
//!
//! Three capabilities: reading (every read-only tool), acting (launch, resume, lifecycle, and
//! every tool that writes — a file in the workspace or a volume), approving (a launch or a
//! delete a person confirms). The scopes are independent: a token with `factory:launch` but
//! not `factory:read` cannot read, and neither reading nor acting lets a caller approve.

use serde::{Deserialize, Serialize};

use crate::confirmation::Channel;

/// What a caller must hold for one action.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Read-only tools.
    Read,
    /// Launch, resume, lifecycle, and tools that write.
    Act,
    /// Approving a launch or a delete (the approval page, a form answer).
    Approve,
}

/// `[oauth]`: the gateway as an OAuth 2.1 resource server. Absent: the static or default bearer
/// token is used instead.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OAuthPolicy {
    /// The authorization server's issuer identifier (`https://id.example.com`); its metadata is
    /// read from `/.well-known/oauth-authorization-server` (or `openid-configuration`) below it.
    pub issuer: String,
    /// The gateway's public resource URI (`https://factory.example.com/mcp`): tokens must carry
    /// it as their audience; Protected Resource Metadata names it.
    pub resource: String,
    #[serde(default)]
    pub scopes: ScopeNames,
    /// Clock skew allowed on `exp`/`nbf`, in seconds (at most 300).
    #[serde(default = "default_leeway")]
    pub leeway_s: u64,
    /// The shortest time between two fetches of the issuer's keys caused by a token signed
    /// with a key not yet seen (a rotation), in seconds.
    #[serde(default = "default_min_refresh")]
    pub jwks_min_refresh_s: u64,
    /// The approval page's OAuth client at the issuer (a public client: authorization code
    /// with PKCE, no secret). Set: the page is offered under OAuth and a person signs in with
    /// the issuer before seeing it. Unset: no page under OAuth (`factory-mcp approve`).
    #[serde(default)]
    pub page_client_id: Option<String>,
    /// The page's public origin (`https://factory.example.com`) when it differs from the
    /// resource URI's: the sign-in comes back to `<page_origin>/approve/callback`.
    #[serde(default)]
    pub page_origin: Option<String>,
}

fn default_min_refresh() -> u64 {
    OAuthPolicy::DEFAULT_JWKS_MIN_REFRESH_S
}

fn default_leeway() -> u64 {
    OAuthPolicy::DEFAULT_LEEWAY_S
}

impl OAuthPolicy {
    pub const DEFAULT_LEEWAY_S: u64 = 30;
    pub const MAX_LEEWAY_S: u64 = 300;
    pub const DEFAULT_JWKS_MIN_REFRESH_S: u64 = 10;

    /// The scope name a capability is granted by.
    pub fn scope_for(&self, access: Access) -> &str {
        match access {
            Access::Read => &self.scopes.read,
            Access::Act => &self.scopes.launch,
            Access::Approve => &self.scopes.approve,
        }
    }

    /// Every scope this resource knows, for `scopes_supported`.
    pub fn scopes_supported(&self) -> [&str; 3] {
        [&self.scopes.read, &self.scopes.launch, &self.scopes.approve]
    }

    /// A refusal for a key, or `None` when the block is sound.
    pub fn refusal(&self) -> Option<(&'static str, String)> {
        let url_ok = |u: &str| {
            (u.starts_with("https://") || u.starts_with("http://"))
                && !u.contains(char::is_whitespace)
                && !u.contains('#')
                && u.len() > "http://".len()
        };
        if !url_ok(&self.issuer) {
            return Some((
                "oauth.issuer",
                "must be an http(s) URL without a fragment (https on anything but loopback)".into(),
            ));
        }
        if !url_ok(&self.resource) {
            return Some((
                "oauth.resource",
                "must be the gateway's public http(s) URL, e.g. https://factory.example.com/mcp"
                    .into(),
            ));
        }
        let names = self.scopes_supported();
        for (key, name) in [
            "oauth.scopes.read",
            "oauth.scopes.launch",
            "oauth.scopes.approve",
        ]
        .into_iter()
        .zip(names)
        {
            if name.is_empty()
                || !name
                    .bytes()
                    .all(|b| b.is_ascii_graphic() && b != b'"' && b != b'\\')
            {
                return Some((key, "must be a non-empty scope token (printable ASCII, no space, quote or backslash)".into()));
            }
        }
        if names[0] == names[1] || names[0] == names[2] || names[1] == names[2] {
            return Some(("oauth.scopes", "the three scope names must differ".into()));
        }
        if let Some(id) = &self.page_client_id
            && (id.is_empty() || id.len() > 200 || !id.bytes().all(|b| b.is_ascii_graphic()))
        {
            return Some((
                "oauth.page_client_id",
                "must be the page's client id at the issuer (printable ASCII, no space)".into(),
            ));
        }
        if let Some(o) = &self.page_origin
            && (!url_ok(o) || crate::scopes::origin_of(o) != o.trim_end_matches('/'))
        {
            return Some((
                "oauth.page_origin",
                "must be an origin only, e.g. https://factory.example.com (no path)".into(),
            ));
        }
        if self.leeway_s > Self::MAX_LEEWAY_S {
            return Some((
                "oauth.leeway_s",
                format!("must be at most {} seconds", Self::MAX_LEEWAY_S),
            ));
        }
        None
    }
}

/// `https://host:port/path?q` → `https://host:port`.
pub fn origin_of(url: &str) -> &str {
    let after_scheme = url.find("://").map_or(0, |i| i + 3);
    match url[after_scheme..].find(['/', '?', '#']) {
        Some(i) => &url[..after_scheme + i],
        None => url,
    }
}

/// Where the issuer sends a person back after signing in for the approval page:
/// `<page_origin>/approve/callback`, the page origin defaulting to the resource URI's.
pub fn page_redirect_uri(policy: &OAuthPolicy) -> String {
    let origin = policy
        .page_origin
        .as_deref()
        .map(|o| o.trim_end_matches('/'))
        .unwrap_or_else(|| origin_of(&policy.resource));
    format!("{origin}/approve/callback")
}

/// What the approval page does for a visitor under OAuth sign-in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PageVisitor {
    /// No live session: send them to the issuer to sign in.
    SignIn,
    /// Signed in, but their token lacks the approving scope: refused, nothing shown.
    NotAnApprover,
    /// Signed in with the approving scope: the page, and its decision recorded in their name.
    Approver,
}

/// Who may see and decide on the approval page under OAuth: a signed-in person whose access
/// token (from the sign-in) holds the approving scope; no one else, whatever page token they
/// hold.
pub fn page_visitor(signed_in: Option<&Caller>) -> PageVisitor {
    match signed_in {
        None => PageVisitor::SignIn,
        Some(c) if c.may(Access::Approve) => PageVisitor::Approver,
        Some(_) => PageVisitor::NotAnApprover,
    }
}

/// `[oauth.scopes]`: the scope names of the three capabilities.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ScopeNames {
    pub read: String,
    pub launch: String,
    pub approve: String,
}

impl Default for ScopeNames {
    fn default() -> Self {
        ScopeNames {
            read: "factory:read".into(),
            launch: "factory:launch".into(),
            approve: "factory:approve".into(),
        }
    }
}

/// Which capability a tool needs, from its catalogue facts: the launch and lifecycle toolsets,
/// and any tool that is not read-only, need [`Access::Act`]; the rest [`Access::Read`].
/// (`plan_run` is read-only on the platform but belongs to the launch toolset: planning is
/// part of launching.)
pub fn tool_access(launch_or_lifecycle: bool, read_only: bool) -> Access {
    if launch_or_lifecycle || !read_only {
        Access::Act
    } else {
        Access::Read
    }
}

/// Who called, as the HTTP layer authenticated them. Put into the request's extensions by the
/// bearer check; absent over stdio and with a static token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    /// The token's `sub` (a person, or the client id for client credentials).
    pub subject: String,
    /// The granted scopes (the token's `scope`, space-separated, or `scp`).
    pub scopes: Vec<String>,
    /// The scope names in force, so a check needs no settings at hand.
    pub names: ScopeNames,
}

impl Caller {
    /// Whether this caller may do `access`.
    pub fn may(&self, access: Access) -> bool {
        let need = match access {
            Access::Read => &self.names.read,
            Access::Act => &self.names.launch,
            Access::Approve => &self.names.approve,
        };
        self.scopes.iter().any(|s| s == need)
    }

    /// The scope `access` needs, for an error message or `WWW-Authenticate`.
    pub fn needed(&self, access: Access) -> &str {
        match access {
            Access::Read => &self.names.read,
            Access::Act => &self.names.launch,
            Access::Approve => &self.names.approve,
        }
    }
}

/// The granted scopes of a token: `scope` (space-separated, RFC 9068) or `scp` (a list or a
/// string, as some issuers write it). Nothing else grants a scope.
pub fn granted_scopes(
    scope: Option<&serde_json::Value>,
    scp: Option<&serde_json::Value>,
) -> Vec<String> {
    let mut out = Vec::new();
    for v in [scope, scp].into_iter().flatten() {
        match v {
            serde_json::Value::String(s) => {
                out.extend(s.split(' ').filter(|t| !t.is_empty()).map(str::to_owned));
            }
            serde_json::Value::Array(items) => {
                out.extend(items.iter().filter_map(|i| i.as_str()).map(str::to_owned));
            }
            _ => {}
        }
    }
    out.sort();
    out.dedup();
    out
}

/// Whether a token's `aud` (a string or a list) names `resource`. Compared exactly, but a
/// trailing `/` on either side is not a difference.
pub fn audience_matches(aud: Option<&serde_json::Value>, resource: &str) -> bool {
    let want = resource.trim_end_matches('/');
    let same = |a: &str| a.trim_end_matches('/') == want;
    match aud {
        Some(serde_json::Value::String(a)) => same(a),
        Some(serde_json::Value::Array(items)) => items.iter().filter_map(|i| i.as_str()).any(same),
        _ => false,
    }
}

/// The confirmation channel for an OAuth caller. `may_approve`: `None` without OAuth (the
/// channel stands), else whether the caller's token holds the approving scope. An answer given
/// inside the client (a form, the input-required round trip) is the token holder's answer, so
/// it is asked only of a caller who may approve. Anyone else's launch or delete waits for a
/// person who approves with `factory-mcp approve` against the gateway's store, or on the
/// approval page when `page_sign_in` (`[oauth] page_client_id`): the page then asks the person
/// to sign in with the issuer and holds them to the approving scope ([`page_visitor`]), so its
/// address alone decides nothing. Without page sign-in the page is not offered under OAuth.
pub fn channel_for_caller(
    channel: Channel,
    may_approve: Option<bool>,
    page_sign_in: bool,
) -> Channel {
    let Some(may_approve) = may_approve else {
        return channel;
    };
    match channel {
        Channel::NotNeeded | Channel::ApproveCommand => channel,
        Channel::Page if page_sign_in => Channel::Page,
        Channel::Page => Channel::ApproveCommand,
        Channel::InputRequired | Channel::Elicitation if may_approve => channel,
        Channel::InputRequired | Channel::Elicitation => Channel::ApproveCommand,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_assistant_without_the_approving_scope_is_never_asked_in_band() {
        use Channel::*;
        for c in [NotNeeded, InputRequired, Elicitation, ApproveCommand, Page] {
            assert_eq!(channel_for_caller(c, None, false), c, "no OAuth: unchanged");
        }
        assert_eq!(
            channel_for_caller(InputRequired, Some(false), false),
            ApproveCommand
        );
        assert_eq!(
            channel_for_caller(Elicitation, Some(false), false),
            ApproveCommand
        );
        assert_eq!(channel_for_caller(Page, Some(false), false), ApproveCommand);
        assert_eq!(
            channel_for_caller(Page, Some(true), false),
            ApproveCommand,
            "no page under OAuth"
        );
        assert_eq!(
            channel_for_caller(InputRequired, Some(true), false),
            InputRequired
        );
        assert_eq!(
            channel_for_caller(Elicitation, Some(true), false),
            Elicitation
        );
        assert_eq!(channel_for_caller(NotNeeded, Some(false), false), NotNeeded);
        assert_eq!(
            channel_for_caller(ApproveCommand, Some(true), false),
            ApproveCommand
        );
    }

    #[test]
    fn with_page_sign_in_the_page_stays_for_every_oauth_caller() {
        use Channel::*;
        assert_eq!(channel_for_caller(Page, Some(false), true), Page);
        assert_eq!(channel_for_caller(Page, Some(true), true), Page);
        assert_eq!(channel_for_caller(Page, None, true), Page);
        assert_eq!(
            channel_for_caller(Elicitation, Some(false), true),
            ApproveCommand,
            "page sign-in does not let an assistant answer a form"
        );
        assert_eq!(channel_for_caller(Page, Some(true), false), ApproveCommand);
    }

    #[test]
    fn only_a_signed_in_approver_may_use_the_page() {
        assert_eq!(page_visitor(None), PageVisitor::SignIn);
        assert_eq!(
            page_visitor(Some(&caller(&["factory:read", "factory:launch"]))),
            PageVisitor::NotAnApprover
        );
        assert_eq!(
            page_visitor(Some(&caller(&["factory:approve"]))),
            PageVisitor::Approver
        );
        let mut renamed = caller(&["factory:approve"]);
        renamed.names.approve = "gw.approve".into();
        assert_eq!(page_visitor(Some(&renamed)), PageVisitor::NotAnApprover);
    }

    #[test]
    fn the_sign_in_comes_back_to_the_page_origin() {
        let mut p: OAuthPolicy = toml::from_str(
            "issuer = \"https://id.example\"\nresource = \"https://gw.example:8443/mcp\"",
        )
        .unwrap();
        assert_eq!(
            page_redirect_uri(&p),
            "https://gw.example:8443/approve/callback"
        );
        p.page_origin = Some("https://approve.example/".into());
        assert_eq!(
            page_redirect_uri(&p),
            "https://approve.example/approve/callback"
        );
        assert_eq!(p.refusal(), None);
        p.page_origin = Some("https://approve.example/x".into());
        assert_eq!(p.refusal().map(|r| r.0), Some("oauth.page_origin"));
        p.page_origin = None;
        p.page_client_id = Some("has space".into());
        assert_eq!(p.refusal().map(|r| r.0), Some("oauth.page_client_id"));
        assert_eq!(origin_of("http://127.0.0.1:9/mcp?x"), "http://127.0.0.1:9");
        assert_eq!(origin_of("http://h"), "http://h");
    }

    fn caller(scopes: &[&str]) -> Caller {
        Caller {
            subject: "alice".into(),
            scopes: scopes.iter().map(|s| (*s).to_owned()).collect(),
            names: ScopeNames::default(),
        }
    }

    #[test]
    fn reads_need_read_and_everything_that_acts_needs_launch() {
        assert_eq!(tool_access(false, true), Access::Read);
        assert_eq!(tool_access(true, true), Access::Act, "plan_run");
        assert_eq!(tool_access(true, false), Access::Act, "launch, lifecycle");
        assert_eq!(
            tool_access(false, false),
            Access::Act,
            "export_logs, uploads"
        );
    }

    #[test]
    fn scopes_are_independent() {
        let reader = caller(&["factory:read"]);
        assert!(reader.may(Access::Read));
        assert!(!reader.may(Access::Act));
        assert!(!reader.may(Access::Approve));
        let assistant = caller(&["factory:read", "factory:launch"]);
        assert!(assistant.may(Access::Act));
        assert!(
            !assistant.may(Access::Approve),
            "an assistant never approves"
        );
        let approver = caller(&["factory:approve"]);
        assert!(approver.may(Access::Approve));
        assert!(!approver.may(Access::Read));
        assert_eq!(approver.needed(Access::Act), "factory:launch");
    }

    #[test]
    fn renamed_scopes_are_the_ones_checked() {
        let mut c = caller(&["factory:read"]);
        c.names.read = "gw.read".into();
        assert!(!c.may(Access::Read));
        c.scopes.push("gw.read".into());
        assert!(c.may(Access::Read));
    }

    #[test]
    fn granted_scopes_read_scope_and_scp() {
        assert_eq!(
            granted_scopes(Some(&json!("a  b a")), None),
            vec!["a".to_owned(), "b".to_owned()]
        );
        assert_eq!(
            granted_scopes(None, Some(&json!(["x", 3, "y"]))),
            vec!["x", "y"]
        );
        assert!(granted_scopes(Some(&json!(7)), None).is_empty());
        assert!(granted_scopes(None, None).is_empty());
    }

    #[test]
    fn audience_is_compared_exactly_modulo_a_trailing_slash() {
        let r = "https://gw.example/mcp";
        assert!(audience_matches(Some(&json!("https://gw.example/mcp/")), r));
        assert!(audience_matches(
            Some(&json!(["x", "https://gw.example/mcp"])),
            r
        ));
        assert!(!audience_matches(
            Some(&json!("https://gw.example/mcp2")),
            r
        ));
        assert!(!audience_matches(Some(&json!("https://GW.example/mcp")), r));
        assert!(!audience_matches(Some(&json!(1)), r));
        assert!(!audience_matches(None, r));
    }

    #[test]
    fn the_block_is_checked() {
        let mut p = OAuthPolicy {
            issuer: "https://id.example".into(),
            resource: "https://gw.example/mcp".into(),
            scopes: ScopeNames::default(),
            leeway_s: 30,
            jwks_min_refresh_s: 10,
            page_client_id: None,
            page_origin: None,
        };
        assert_eq!(p.refusal(), None);
        p.scopes.approve = "factory:read".into();
        assert_eq!(p.refusal().map(|r| r.0), Some("oauth.scopes"));
        p.scopes.approve = "has space".into();
        assert_eq!(p.refusal().map(|r| r.0), Some("oauth.scopes.approve"));
        p.scopes = ScopeNames::default();
        p.leeway_s = 301;
        assert_eq!(p.refusal().map(|r| r.0), Some("oauth.leeway_s"));
        p.leeway_s = 0;
        p.resource = "gw.example".into();
        assert_eq!(p.refusal().map(|r| r.0), Some("oauth.resource"));
        p.issuer = "ftp://x".into();
        assert_eq!(p.refusal().map(|r| r.0), Some("oauth.issuer"));
    }
}

#[cfg(test)]
mod policy_file_tests {
    use crate::policy::Policy;

    #[test]
    fn the_oauth_block_reads_from_the_policy_file_with_defaults() {
        let p = Policy::from_toml_str(
            "[oauth]\nissuer = \"https://id.example\"\nresource = \"https://gw.example/mcp\"\n",
        )
        .unwrap();
        let o = p.oauth.expect("[oauth]");
        assert_eq!(
            o.scopes_supported(),
            ["factory:read", "factory:launch", "factory:approve"]
        );
        assert_eq!(o.leeway_s, 30);
        assert_eq!(o.jwks_min_refresh_s, 10);
        assert!(Policy::from_toml_str("").unwrap().oauth.is_none());
        let renamed = Policy::from_toml_str(
            "[oauth]\nissuer = \"https://id.example\"\nresource = \"https://gw.example/mcp\"\n\
             [oauth.scopes]\napprove = \"gw:approve\"\n",
        )
        .unwrap();
        assert_eq!(renamed.oauth.unwrap().scopes.approve, "gw:approve");
    }

    #[test]
    fn a_bad_oauth_block_names_its_key() {
        for (text, key) in [
            (
                "[oauth]\nissuer = \"id.example\"\nresource = \"https://gw/mcp\"\n",
                "oauth.issuer",
            ),
            (
                "[oauth]\nissuer = \"https://id\"\nresource = \"https://gw/mcp\"\nleeway_s = 900\n",
                "oauth.leeway_s",
            ),
            (
                "[oauth]\nissuer = \"https://id\"\nresource = \"https://gw/mcp\"\n[oauth.scopes]\nread = \"factory:launch\"\n",
                "oauth.scopes",
            ),
        ] {
            let e = Policy::from_toml_str(text).unwrap_err();
            assert_eq!(e.key(), Some(key), "{text}: {e}");
        }
        let e = Policy::from_toml_str("[oauth]\nissuer = \"https://id\"\n").unwrap_err();
        assert!(e.to_string().contains("resource"), "{e}");
        let e = Policy::from_toml_str(
            "[oauth]\nissuer = \"https://id\"\nresource = \"https://gw/mcp\"\nclient_secret = \"x\"\n",
        )
        .unwrap_err();
        assert!(e.to_string().contains("client_secret"), "{e}");
    }
}
