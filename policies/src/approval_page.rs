//! Whether the approval page may show a plan, and whether a Decline or Approve posted from it
//! counts: pure rules over the facts the page's handler gathered (the stored token, the plan,
//! the request's origin and cookie, the config file now). The token is single-use and bound to
//! one plan, that plan's request digest and an expiry; a post must come from the page itself.

use chrono::{DateTime, Utc};

use crate::store::{PageTokenRecord, PlanRecord};

/// Why the page refuses to show a plan or to take a decision. The text is for the person at
/// the browser; it never repeats the token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PageRefusal {
    /// The post did not come from this page (another site, a missing or wrong cookie).
    CrossSite,
    /// No such token (mistyped, or made by another installation).
    UnknownToken,
    /// The token was made for another plan.
    OtherPlan,
    /// The token was already used for a decision.
    Used,
    /// The token or the plan expired.
    Expired,
    /// The plan's request or its config file changed since the token was made.
    Changed,
    /// A decision on this plan was already recorded (through any channel).
    Decided,
}

impl PageRefusal {
    /// A short explanation and what to do, for the page.
    pub fn message(self) -> &'static str {
        match self {
            PageRefusal::CrossSite => {
                "This request did not come from the approval page itself, so it was ignored. Open the link your assistant's client showed you and use its buttons."
            }
            PageRefusal::UnknownToken => {
                "This approval link is not valid. Ask your assistant to call launch_run again for a new link."
            }
            PageRefusal::OtherPlan => {
                "This approval link belongs to another plan. Use the link shown for this plan."
            }
            PageRefusal::Used => {
                "This approval link was already used. A link decides once; ask your assistant for a new one if needed."
            }
            PageRefusal::Expired => {
                "This approval link or its plan expired. Ask your assistant to make a new plan (plan_run)."
            }
            PageRefusal::Changed => {
                "The plan's request or its config file changed after this page was made, so it cannot be approved. Ask your assistant to make a new plan (plan_run)."
            }
            PageRefusal::Decided => {
                "A decision on this plan was already recorded. Nothing more to do here."
            }
        }
    }

    /// A stable name for the audit log.
    pub fn as_str(self) -> &'static str {
        match self {
            PageRefusal::CrossSite => "cross_site",
            PageRefusal::UnknownToken => "unknown_token",
            PageRefusal::OtherPlan => "other_plan",
            PageRefusal::Used => "used",
            PageRefusal::Expired => "expired",
            PageRefusal::Changed => "changed",
            PageRefusal::Decided => "decided",
        }
    }
}

/// What the page's handler knows about a request for the page of plan `path_plan`.
#[derive(Debug, Clone, Copy)]
pub struct PageFacts<'a> {
    /// The plan id in the page's address.
    pub path_plan: &'a str,
    /// The stored token the request presented (looked up by its digest), if any.
    pub token: Option<&'a PageTokenRecord>,
    /// The plan the address names, if it exists.
    pub plan: Option<&'a PlanRecord>,
    pub now: DateTime<Utc>,
    /// A decision on the plan is already recorded.
    pub decided: bool,
    /// The plan's config file still has the digest the plan recorded (true when the plan has
    /// no config file).
    pub config_unchanged: bool,
}

/// Whether the page may show this plan (a GET: it changes nothing, so no origin check).
pub fn may_show(f: &PageFacts<'_>) -> Result<(), PageRefusal> {
    let token = f.token.ok_or(PageRefusal::UnknownToken)?;
    if token.plan_id != f.path_plan {
        return Err(PageRefusal::OtherPlan);
    }
    let plan = f.plan.ok_or(PageRefusal::UnknownToken)?;
    if token.used_at.is_some() {
        return Err(PageRefusal::Used);
    }
    if token.expires_at <= f.now || plan.is_expired(f.now) {
        return Err(PageRefusal::Expired);
    }
    if token.request_digest != plan.request_digest || !f.config_unchanged {
        return Err(PageRefusal::Changed);
    }
    if f.decided {
        return Err(PageRefusal::Decided);
    }
    Ok(())
}

/// Whether a decision posted from the page counts: it must come from the page itself
/// (`same_origin`: its `Origin` is this server's and its `Host` one of ours; `cookie_ok`: it
/// carries the SameSite cookie the page set), and the token must still let the page show the
/// plan. Cross-site first, so a forged post learns nothing about the token.
pub fn may_decide(
    f: &PageFacts<'_>,
    same_origin: bool,
    cookie_ok: bool,
) -> Result<(), PageRefusal> {
    if !same_origin || !cookie_ok {
        return Err(PageRefusal::CrossSite);
    }
    may_show(f)
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Duration;

    fn plan(now: DateTime<Utc>) -> PlanRecord {
        PlanRecord {
            id: "plan_a".into(),
            created_at: now,
            expires_at: now + Duration::minutes(10),
            request_digest: "d1".into(),
            content_digest: "c".into(),
            owner: None,
            summary_text: String::new(),
            body: serde_json::json!({}),
        }
    }

    fn token(now: DateTime<Utc>) -> PageTokenRecord {
        PageTokenRecord {
            plan_id: "plan_a".into(),
            request_digest: "d1".into(),
            created_at: now,
            expires_at: now + Duration::minutes(5),
            used_at: None,
            cookie_digest: None,
        }
    }

    fn facts<'a>(p: &'a PlanRecord, t: &'a PageTokenRecord, now: DateTime<Utc>) -> PageFacts<'a> {
        PageFacts {
            path_plan: "plan_a",
            token: Some(t),
            plan: Some(p),
            now,
            decided: false,
            config_unchanged: true,
        }
    }

    #[test]
    fn a_fresh_token_for_this_plan_shows_and_decides_from_the_page_only() {
        let now = Utc::now();
        let (p, t) = (plan(now), token(now));
        assert_eq!(may_show(&facts(&p, &t, now)), Ok(()));
        assert_eq!(may_decide(&facts(&p, &t, now), true, true), Ok(()));
        assert_eq!(
            may_decide(&facts(&p, &t, now), false, true),
            Err(PageRefusal::CrossSite)
        );
        assert_eq!(
            may_decide(&facts(&p, &t, now), true, false),
            Err(PageRefusal::CrossSite)
        );
    }

    #[test]
    fn used_foreign_expired_changed_or_decided_tokens_are_refused() {
        let now = Utc::now();
        let p = plan(now);
        let mut used = token(now);
        used.used_at = Some(now);
        assert_eq!(may_show(&facts(&p, &used, now)), Err(PageRefusal::Used));
        let t = token(now);
        let mut f = facts(&p, &t, now);
        f.path_plan = "plan_b";
        assert_eq!(may_show(&f), Err(PageRefusal::OtherPlan));
        let later = now + Duration::minutes(6);
        assert_eq!(may_show(&facts(&p, &t, later)), Err(PageRefusal::Expired));
        let mut short = plan(now);
        short.expires_at = now + Duration::minutes(1);
        assert_eq!(
            may_show(&facts(&short, &t, now + Duration::minutes(2))),
            Err(PageRefusal::Expired)
        );
        let mut other_digest = plan(now);
        other_digest.request_digest = "d2".into();
        assert_eq!(
            may_show(&facts(&other_digest, &t, now)),
            Err(PageRefusal::Changed)
        );
        let mut f = facts(&p, &t, now);
        f.config_unchanged = false;
        assert_eq!(may_show(&f), Err(PageRefusal::Changed));
        let mut f = facts(&p, &t, now);
        f.decided = true;
        assert_eq!(may_show(&f), Err(PageRefusal::Decided));
        let mut f = facts(&p, &t, now);
        f.token = None;
        assert_eq!(may_show(&f), Err(PageRefusal::UnknownToken));
    }
}
