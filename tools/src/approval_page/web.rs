//! The page's two requests, independent of the HTTP stack that carries them: [`show`] (GET:
//! the plan, and a fresh SameSite cookie bound to the token) and [`decide`] (POST: Approve or
//! Decline). What may be shown or decided is `factory_policies::approval_page`'s rule; the
//! decision is recorded with the channel `page` and wakes the call waiting for it.

use chrono::Utc;
use factory_policies::{
    approval_page::{PageFacts, PageRefusal, may_decide, may_show},
    store::{Decision, PlanRecord, StateStore, new_page_secret, secret_digest},
};
use serde::Deserialize;
use serde_json::json;

use super::{COOKIE, PATH_PREFIX, render};
use crate::{audit::audit, ids::PlanId, launch::PlanBody, state::AppState};

/// The page's Content-Security-Policy: nothing but this origin's stylesheet, forms posting to
/// this origin only, never framed, no scripts, no base, no images.
pub const CSP: &str = "default-src 'none'; style-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/// The page's stylesheet (served from the same origin, so the CSP needs no inline style).
pub const STYLE: &str = "body{font-family:system-ui,sans-serif;margin:2em;background:#fff;color:#111}\
main{max-width:60em}table{border-collapse:collapse;margin:1em 0}\
th,td{border:1px solid #bbb;padding:.4em .7em;text-align:left;vertical-align:top}\
th{background:#eef}pre{background:#f4f4f4;padding:.7em;overflow:auto;max-height:30em}\
.figures td{font-weight:bold}.figures th{background:#fde}\
code{background:#f4f4f4;border:1px solid #ddd;padding:0 .2em;font-weight:normal}\
.prose{font-style:italic}#question{font-size:1.2em}.buttons{display:flex;gap:1em;margin:1.5em 0}\
button{font-size:1.2em;padding:.5em 1.5em;border:0;border-radius:.3em;color:#fff}\
.approve{background:#1a7f37}.decline{background:#b42318}";

/// What the page answers: a status, the HTML, and a cookie to set.
#[derive(Debug, Clone, PartialEq)]
pub struct PageAnswer {
    pub status: u16,
    pub html: String,
    /// A complete `Set-Cookie` value.
    pub set_cookie: Option<String>,
}

impl PageAnswer {
    fn refusal(r: PageRefusal) -> Self {
        let status = match r {
            PageRefusal::CrossSite => 403,
            PageRefusal::UnknownToken | PageRefusal::OtherPlan => 404,
            PageRefusal::Used | PageRefusal::Expired | PageRefusal::Decided => 410,
            PageRefusal::Changed => 409,
        };
        PageAnswer {
            status,
            html: render::message("Not accepted", r.message()),
            set_cookie: None,
        }
    }

    fn unavailable(what: &str) -> Self {
        PageAnswer {
            status: 503,
            html: render::message(
                "Unavailable",
                &format!("The server cannot {what} right now; try again in a moment."),
            ),
            set_cookie: None,
        }
    }
}

/// The form a decision posts.
#[derive(Debug, Clone, Deserialize)]
pub struct PagePost {
    /// The page token.
    #[serde(default)]
    pub t: String,
    /// `approve` or `decline`.
    #[serde(default)]
    pub decision: String,
}

/// Everything the rules need, read from the store and the workspace.
struct Gathered {
    token: Option<factory_policies::store::PageTokenRecord>,
    plan: Option<PlanRecord>,
    decided: bool,
    config_unchanged: bool,
}

async fn gather(
    state: &AppState,
    store: &dyn StateStore,
    plan_id: &str,
    token: &str,
) -> Result<Gathered, factory_policies::store::StoreError> {
    let token = if token.is_empty() || token.len() > 128 {
        None
    } else {
        store.page_token(&secret_digest(token)).await?
    };
    let plan = match PlanId::parse_plan(plan_id) {
        Some(id) => store.get_plan(id.as_str()).await?,
        None => None,
    };
    let decided = match &plan {
        Some(p) => store.decision(&p.id).await?.is_some(),
        None => false,
    };
    let config_unchanged = plan.as_ref().is_none_or(|p| config_unchanged(state, p));
    Ok(Gathered {
        token,
        plan,
        decided,
        config_unchanged,
    })
}

/// The plan's config file still has the digest the plan recorded (true without a file).
fn config_unchanged(state: &AppState, plan: &PlanRecord) -> bool {
    let Ok(body) = serde_json::from_value::<PlanBody>(plan.body.clone()) else {
        return true;
    };
    let (Some(path), Some(sha)) = (&body.config_path, &body.config_sha256) else {
        return true;
    };
    let now = state.workspace().ok().and_then(|ws| {
        factory_policies::files::read_file(
            ws,
            std::path::Path::new(path),
            factory_policies::files::ReadLimits::CONFIG,
        )
        .ok()
    });
    now.map(|b| factory_policies::launch::digest_bytes(&b))
        .as_ref()
        == Some(sha)
}

fn facts<'a>(g: &'a Gathered, plan_id: &'a str) -> PageFacts<'a> {
    PageFacts {
        path_plan: plan_id,
        token: g.token.as_ref(),
        plan: g.plan.as_ref(),
        now: Utc::now(),
        decided: g.decided,
        config_unchanged: g.config_unchanged,
    }
}

async fn refused(state: &AppState, plan_id: &str, r: PageRefusal, what: &str) -> PageAnswer {
    let plan = PlanId::parse_plan(plan_id).map(|p| p.as_str().to_owned());
    audit(
        state,
        "page",
        what,
        plan.as_deref(),
        None,
        json!({"refused": r.as_str()}),
    )
    .await;
    PageAnswer::refusal(r)
}

/// GET `/approve/{plan_id}?t=TOKEN`: the plan, with Approve and Decline.
pub async fn show(state: &AppState, plan_id: &str, token: &str) -> PageAnswer {
    let Ok(store) = state.store() else {
        return PageAnswer::unavailable("read its state");
    };
    let g = match gather(state, store, plan_id, token).await {
        Ok(g) => g,
        Err(_) => return PageAnswer::unavailable("read its state"),
    };
    if let Err(r) = may_show(&facts(&g, plan_id)) {
        return refused(state, plan_id, r, "page_show_refused").await;
    }
    let Some(plan) = g.plan.as_ref() else {
        return PageAnswer::refusal(PageRefusal::UnknownToken);
    };
    let cookie = new_page_secret();
    match store
        .bind_page_cookie(&secret_digest(token), &secret_digest(&cookie))
        .await
    {
        Ok(true) => {}
        Ok(false) => return PageAnswer::refusal(PageRefusal::Used),
        Err(_) => return PageAnswer::unavailable("record the page"),
    }
    let body = serde_json::from_value::<PlanBody>(plan.body.clone()).ok();
    let prev = match &body {
        Some(b) => store
            .previous_related_plan(plan, b.config_path.as_deref(), Some(b.run_name.as_str()))
            .await
            .ok()
            .flatten()
            .and_then(|p| {
                let pb = serde_json::from_value::<PlanBody>(p.body.clone()).ok()?;
                Some((p, pb))
            }),
        None => None,
    };
    audit(state, "page", "page_shown", Some(&plan.id), None, json!({})).await;
    PageAnswer {
        status: 200,
        html: render::plan_page(
            plan,
            body.as_ref(),
            prev.as_ref().map(|(p, b)| (p, b)),
            token,
        ),
        set_cookie: Some(format!(
            "{COOKIE}={cookie}; Path={PATH_PREFIX}/; HttpOnly; SameSite=Strict"
        )),
    }
}

/// A plain message page (the sign-in's answers use it).
pub fn notice(status: u16, title: &str, text: &str) -> PageAnswer {
    PageAnswer {
        status,
        html: render::message(title, text),
        set_cookie: None,
    }
}

/// The page's answer to a person signed in with the issuer whose token lacks the approving
/// scope (under OAuth page sign-in): nothing about the plan is shown; the refusal is audited in
/// their name.
pub async fn not_an_approver(
    state: &AppState,
    plan_id: &str,
    subject: &str,
    scope: &str,
) -> PageAnswer {
    let plan = PlanId::parse_plan(plan_id).map(|p| p.as_str().to_owned());
    crate::audit::with_subject(
        Some(std::sync::Arc::from(subject)),
        audit(
            state,
            "page",
            "page_show_refused",
            plan.as_deref(),
            None,
            json!({"refused": "not_an_approver"}),
        ),
    )
    .await;
    let who = factory_policies::untrusted::one_line(subject, 80);
    PageAnswer {
        status: 403,
        html: render::message(
            "Not allowed to approve",
            &format!(
                "You are signed in as {who}, but your account does not hold the scope {scope}, which approving needs. Nothing was shown or recorded. Ask whoever runs the authorization server to grant it, or ask a person who holds it to approve."
            ),
        ),
        set_cookie: None,
    }
}

/// Run a page request (`show`, `decide`) for a signed-in person: its audit entries name them.
pub async fn signed_in_as<F: std::future::Future>(subject: Option<&str>, fut: F) -> F::Output {
    crate::audit::with_subject(subject.map(std::sync::Arc::from), fut).await
}

/// POST `/approve/{plan_id}`: a decision from the page. `same_origin`: the transport checked
/// that `Origin` is this server's own and `Host` one of ours; `cookie`: the page cookie sent;
/// `subject`: the signed-in person (OAuth page sign-in), recorded with the decision.
pub async fn decide(
    state: &AppState,
    plan_id: &str,
    post: &PagePost,
    cookie: Option<&str>,
    same_origin: bool,
    subject: Option<&str>,
) -> PageAnswer {
    let Ok(store) = state.store() else {
        return PageAnswer::unavailable("read its state");
    };
    let g = match gather(state, store, plan_id, &post.t).await {
        Ok(g) => g,
        Err(_) => return PageAnswer::unavailable("read its state"),
    };
    let cookie_ok = match (
        cookie,
        g.token.as_ref().and_then(|t| t.cookie_digest.as_deref()),
    ) {
        (Some(c), Some(bound)) => secret_digest(c) == bound,
        _ => false,
    };
    if let Err(r) = may_decide(&facts(&g, plan_id), same_origin, cookie_ok) {
        return refused(state, plan_id, r, "page_decision_refused").await;
    }
    let Some(plan) = g.plan.as_ref() else {
        return PageAnswer::refusal(PageRefusal::UnknownToken);
    };
    let decision = match post.decision.as_str() {
        "approve" => Decision::Approved,
        "decline" => Decision::Refused,
        _ => {
            return PageAnswer {
                status: 400,
                html: render::message("Not accepted", "Use the page's Approve or Decline button."),
                set_cookie: None,
            };
        }
    };
    match store.spend_page_token(&secret_digest(&post.t)).await {
        Ok(true) => {}
        Ok(false) => {
            return refused(state, plan_id, PageRefusal::Used, "page_decision_refused").await;
        }
        Err(_) => return PageAnswer::unavailable("record the decision"),
    }
    if store
        .record_decision_as(&plan.id, decision, "page", subject)
        .await
        .is_err()
    {
        return PageAnswer::unavailable("record the decision");
    }
    state.page.notify();
    let (title, text) = match decision {
        Decision::Approved => (
            "Approved",
            "Approved. Return to your assistant: its waiting call goes ahead (or its next call picks this up). The usual checks of the plan and the budgets still run before anything starts.",
        ),
        Decision::Refused => (
            "Declined",
            "Declined. Nothing will be done for this plan. You can close this page.",
        ),
    };
    PageAnswer {
        status: 200,
        html: render::message(title, text),
        set_cookie: None,
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use chrono::Duration;
    use factory_policies::store::{PageTokenRecord, Store};

    use super::*;

    fn state(store: Arc<Store>) -> AppState {
        AppState::without_platform(true).with_store(Ok(store))
    }

    /// A plan made at `made`, living `ttl`, with a page token minted at once (as `ask` does).
    fn plan_with_token(
        store: &Store,
        id: &str,
        made: chrono::DateTime<Utc>,
        ttl: Duration,
    ) -> String {
        store
            .put_plan(&PlanRecord {
                id: id.into(),
                created_at: made,
                expires_at: made + ttl,
                request_digest: "rd".into(),
                content_digest: "cd".into(),
                owner: None,
                summary_text: "Delete run x".into(),
                body: json!({"kind": "delete", "run_id": "x"}),
            })
            .unwrap();
        let token = new_page_secret();
        store
            .put_page_token(
                &secret_digest(&token),
                &PageTokenRecord {
                    plan_id: id.into(),
                    request_digest: "rd".into(),
                    created_at: made,
                    expires_at: made + Duration::minutes(15),
                    used_at: None,
                    cookie_digest: None,
                },
            )
            .unwrap();
        token
    }

    #[tokio::test]
    async fn an_expired_plan_is_neither_shown_nor_approved_and_a_live_one_is() {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(Store::open(dir.path()).unwrap());
        let st = state(store.clone());
        // Made 10 minutes ago with a 5-minute life: the token is younger than its plan allows.
        let old = "plan_expiredexpiredexpired";
        let t_old = plan_with_token(
            &store,
            old,
            Utc::now() - Duration::minutes(10),
            Duration::minutes(5),
        );
        let shown = show(&st, old, &t_old).await;
        assert_eq!(shown.status, 410, "{}", shown.html);
        assert!(shown.html.contains("expired"));
        // Even with a cookie bound before expiry, the post is refused and records nothing.
        store
            .bind_page_cookie(&secret_digest(&t_old), &secret_digest("c"))
            .unwrap();
        let post = PagePost {
            t: t_old.clone(),
            decision: "approve".into(),
        };
        let r = decide(&st, old, &post, Some("c"), true, None).await;
        assert_eq!(r.status, 410);
        assert!(store.decision(old).unwrap().is_none());

        // The same steps on a live plan approve it, once.
        let live = "plan_livelivelivelivelive0";
        let t = plan_with_token(&store, live, Utc::now(), Duration::minutes(30));
        let shown = show(&st, live, &t).await;
        assert_eq!(shown.status, 200, "{}", shown.html);
        assert!(shown.html.contains("Delete run x") && shown.html.contains("Delete (intent"));
        let cookie = shown
            .set_cookie
            .as_deref()
            .and_then(|c| c.split(';').next())
            .and_then(|c| c.split_once('='))
            .map(|(_, v)| v.to_owned())
            .unwrap();
        let post = PagePost {
            t,
            decision: "approve".into(),
        };
        assert_eq!(
            decide(&st, live, &post, Some(&cookie), false, None)
                .await
                .status,
            403
        );
        assert_eq!(
            decide(&st, live, &post, Some("wrong"), true, None)
                .await
                .status,
            403
        );
        assert_eq!(
            decide(&st, live, &post, Some(&cookie), true, None)
                .await
                .status,
            200
        );
        assert_eq!(
            store.decision(live).unwrap().map(|d| (d.decision, d.via)),
            Some((Decision::Approved, "page".to_string()))
        );
        assert_eq!(
            decide(&st, live, &post, Some(&cookie), true, None)
                .await
                .status,
            410
        );
    }
}
