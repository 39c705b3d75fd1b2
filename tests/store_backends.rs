//! One store test-suite, written once over `&dyn StateStore`, run against both backends: the
//! SQLite store in a temporary directory and the PostgreSQL store on a real PostgreSQL
//! started by the test (`common::postgres`). Each behaviour gets a fresh store (a fresh
//! directory, a fresh database); behaviours about several processes or replicas open a second
//! handle on the same state (`Backend::open` again): a second `Store` on the directory, a
//! second connection pool on the database.

mod common;

use std::sync::Arc;
use std::time::Duration;

use factory_policies::runs_cache::Mark;
use factory_policies::store::postgres::{PgOptions, PgStore};
use factory_policies::store::{
    AuditEvent, Claim, Decision, DispatchState, KnownRun, KnownRunsQuery, PageTokenRecord,
    PlanRecord, StateStore, Store, StoreError, Utc, VolumeState, secret_digest,
};
use futures::future::{BoxFuture, join_all};
use secrecy::ExposeSecret;
use serde_json::json;

enum Backend {
    Sqlite(tempfile::TempDir),
    Postgres(String),
}

impl Backend {
    /// A new handle on this backend's state (a second process, a second replica).
    async fn open(&self) -> Arc<dyn StateStore> {
        match self {
            Backend::Sqlite(dir) => Arc::new(Store::open(dir.path()).expect("open sqlite")),
            Backend::Postgres(url) => Arc::new(
                PgStore::connect(&PgOptions::new(url, None))
                    .await
                    .expect("connect postgres"),
            ),
        }
    }
}

fn plan(id: &str, content: &str, minutes_ago: u64, body: serde_json::Value) -> PlanRecord {
    let at = Utc::now() - Duration::from_secs(minutes_ago * 60);
    PlanRecord {
        id: id.into(),
        created_at: at,
        expires_at: at + Duration::from_secs(30 * 60),
        request_digest: format!("req-{id}"),
        content_digest: content.into(),
        owner: Some("team_1".into()),
        summary_text: format!("summary of {id}\nsecond line"),
        body,
    }
}

const LONG: Duration = Duration::from_secs(600);

const ZERO: Duration = Duration::ZERO;

/// How many of racing claims (or take-overs, or retries) won.
async fn winners<R>(
    calls: impl IntoIterator<Item = impl Future<Output = Result<Claim<R>, StoreError>>>,
) -> usize {
    join_all(calls)
        .await
        .into_iter()
        .filter(|c| c.as_ref().unwrap().is_claimed())
        .count()
}

type Behaviour = for<'a> fn(&'a Backend) -> BoxFuture<'a, ()>;

macro_rules! behaviours {
    ($($name:ident),* $(,)?) => {
        const BEHAVIOURS: &[(&str, Behaviour)] = &[
            $((stringify!($name), |b| Box::pin($name(b)))),*
        ];
    };
}

behaviours!(
    plans_come_back_as_stored_and_cannot_be_replaced,
    plans_are_found_by_digest_and_by_file_or_name,
    a_decision_needs_a_plan_the_latest_wins_and_each_is_audited,
    a_nonce_is_good_once_even_across_handles,
    the_request_state_key_is_one_for_every_handle,
    the_audit_log_reads_oldest_first_and_refuses_rewrites,
    racing_claims_of_one_plan_give_exactly_one_dispatch,
    a_dispatched_plan_keeps_its_run,
    a_failed_dispatch_can_be_claimed_again_an_unknown_one_cannot,
    take_over_needs_an_expired_lease_and_succeeds_once,
    a_doubtful_attempt_is_retried_once_and_only_as_judged,
    a_volume_is_created_at_most_once,
    a_page_token_is_spent_once,
    the_run_list_cache_keeps_what_was_read,
);

async fn run_suite(backend: impl Fn() -> BoxFuture<'static, Backend>) {
    for (name, behaviour) in BEHAVIOURS {
        eprintln!("-- {name}");
        let b = backend().await;
        behaviour(&b).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_store_suite_on_sqlite() {
    run_suite(|| Box::pin(async { Backend::Sqlite(tempfile::tempdir().unwrap()) })).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_store_suite_on_postgres() {
    let pg = Arc::new(common::postgres::Postgres::start());
    let p = pg.clone();
    run_suite(move || {
        let p = p.clone();
        Box::pin(async move { Backend::Postgres(p.database()) })
    })
    .await;
}

/// Replicas starting at once on an empty database migrate it once; a database newer than the
/// build is refused with what to do; a password in the URL is refused before connecting.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_migrations_are_safe_for_replicas_and_refuse_a_newer_schema() {
    let pg = common::postgres::Postgres::start();
    let url = pg.database();
    let opened = join_all((0..6).map(|_| {
        let url = url.clone();
        async move { PgStore::connect(&PgOptions::new(&url, None)).await }
    }))
    .await;
    for s in &opened {
        assert!(s.is_ok(), "{:?}", s.as_ref().err());
    }
    assert_eq!(
        pg.psql(&url, "SELECT count(*) FROM factory_mcp_schema"),
        "1"
    );
    assert_eq!(
        opened[0].as_ref().unwrap().schema_version().await.unwrap(),
        1
    );
    pg.psql(&url, "INSERT INTO factory_mcp_schema (version) VALUES (99)");
    let e = PgStore::connect(&PgOptions::new(&url, None))
        .await
        .unwrap_err();
    assert!(
        matches!(e, StoreError::NewerSchema { found: 99, .. }),
        "{e}"
    );
    assert!(e.to_string().contains("upgrade factory-mcp"), "{e}");
    let with_pw = format!(
        "postgres://{}:hunter2@127.0.0.1:{}/postgres",
        pg.user, pg.port
    );
    let e = PgStore::connect(&PgOptions::new(&with_pw, None))
        .await
        .unwrap_err()
        .to_string();
    assert!(e.contains("password_file") && !e.contains("hunter2"), "{e}");
}

// ----- the behaviours ----------------------------------------------------------------------

async fn plans_come_back_as_stored_and_cannot_be_replaced(b: &Backend) {
    let s = b.open().await;
    let p = plan(
        "plan_a",
        "c1",
        0,
        json!({"z": 1, "a": [1, 2], "config_path": "a.toml"}),
    );
    s.put_plan(&p).await.unwrap();
    let back = s.get_plan("plan_a").await.unwrap().unwrap();
    // Milliseconds are what both backends keep.
    assert_eq!(
        back.created_at.timestamp_millis(),
        p.created_at.timestamp_millis()
    );
    assert_eq!(
        (
            back.id.as_str(),
            back.summary_text.as_str(),
            &back.body,
            &back.owner
        ),
        ("plan_a", p.summary_text.as_str(), &p.body, &p.owner)
    );
    assert_eq!(
        serde_json::to_string(&back.body).unwrap(),
        serde_json::to_string(&p.body).unwrap(),
        "key order kept"
    );
    let again = s.put_plan(&p).await.unwrap_err();
    assert!(matches!(again, StoreError::DuplicatePlan(_)), "{again}");
    assert!(s.get_plan("plan_missing").await.unwrap().is_none());
    // Another handle (process, replica) sees it.
    let other = b.open().await;
    assert!(other.get_plan("plan_a").await.unwrap().is_some());
}

async fn plans_are_found_by_digest_and_by_file_or_name(b: &Backend) {
    let s = b.open().await;
    let body = |path: &str, name: &str| json!({"config_path": path, "run_name": name});
    s.put_plan(&plan("plan_3", "same", 1, body("c.toml", "x")))
        .await
        .unwrap();
    s.put_plan(&plan("plan_1", "same", 3, body("a.toml", "x")))
        .await
        .unwrap();
    s.put_plan(&plan("plan_2", "other", 2, body("b.toml", "y")))
        .await
        .unwrap();
    let now = plan("plan_4", "new", 0, body("a.toml", "z"));
    s.put_plan(&now).await.unwrap();
    let ids: Vec<String> = s
        .plans_by_content_digest("same")
        .await
        .unwrap()
        .into_iter()
        .map(|p| p.id)
        .collect();
    assert_eq!(ids, ["plan_1", "plan_3"], "oldest first");
    let prev = |path: &'static str, name: &'static str| {
        let s = s.clone();
        let now = now.clone();
        async move {
            s.previous_related_plan(&now, Some(path), Some(name))
                .await
                .unwrap()
                .map(|p| p.id)
        }
    };
    assert_eq!(prev("a.toml", "z").await.as_deref(), Some("plan_1"));
    assert_eq!(prev("q.toml", "x").await.as_deref(), Some("plan_3"));
    assert_eq!(prev("q.toml", "q").await, None);
    assert_eq!(
        s.previous_related_plan(&now, None, None).await.unwrap(),
        None
    );
}

async fn a_decision_needs_a_plan_the_latest_wins_and_each_is_audited(b: &Backend) {
    let s = b.open().await;
    let e = s
        .record_decision("plan_none", Decision::Approved, "terminal")
        .await
        .unwrap_err();
    assert!(matches!(e, StoreError::UnknownPlan(_)), "{e}");
    s.put_plan(&plan("plan_d", "c", 0, json!({})))
        .await
        .unwrap();
    assert!(s.decision("plan_d").await.unwrap().is_none());
    s.record_decision("plan_d", Decision::Refused, "form")
        .await
        .unwrap();
    s.record_decision_as("plan_d", Decision::Approved, "terminal", Some("person-7"))
        .await
        .unwrap();
    let d = b.open().await.decision("plan_d").await.unwrap().unwrap();
    assert_eq!(
        (d.decision, d.via.as_str(), d.request_digest.as_str()),
        (Decision::Approved, "terminal", "req-plan_d")
    );
    let log = s.audit_entries(10).await.unwrap();
    let decides: Vec<(&str, &str)> = log
        .iter()
        .filter(|e| e.event.action == "decide")
        .map(|e| (e.event.outcome.as_str(), e.event.actor.as_str()))
        .collect();
    assert_eq!(decides, [("refused", "form"), ("approved", "terminal")]);
    assert_eq!(log[1].event.detail["request_digest"], "req-plan_d");
    // Who decided: the signed-in person's `sub`, kept by both backends.
    let subjects: Vec<Option<&str>> = log.iter().map(|e| e.event.subject.as_deref()).collect();
    assert_eq!(subjects, [None, Some("person-7")]);
}

async fn a_nonce_is_good_once_even_across_handles(b: &Backend) {
    let s = b.open().await;
    let later = Utc::now() + Duration::from_secs(300);
    assert!(s.use_nonce("n1", later).await.unwrap());
    assert!(!s.use_nonce("n1", later).await.unwrap());
    assert!(!b.open().await.use_nonce("n1", later).await.unwrap());
    // An expired nonce is never accepted, so pruning it cannot bring it back.
    let past = Utc::now() - Duration::from_secs(1);
    assert!(!s.use_nonce("n_old", past).await.unwrap());
    assert!(!s.use_nonce("n_old", past).await.unwrap());
    // Eight handles race one nonce: one wins.
    let handles = join_all((0..8).map(|_| b.open())).await;
    let wins = join_all(handles.iter().map(|h| h.use_nonce("n_race", later)))
        .await
        .into_iter()
        .filter(|r| *r.as_ref().unwrap())
        .count();
    assert_eq!(wins, 1);
}

async fn the_request_state_key_is_one_for_every_handle(b: &Backend) {
    let handles = join_all((0..4).map(|_| b.open())).await;
    let keys = join_all(handles.iter().map(|h| h.request_state_key())).await;
    let keys: Vec<Vec<u8>> = keys
        .into_iter()
        .map(|k| k.unwrap().expose_secret().to_vec())
        .collect();
    assert_eq!(keys[0].len(), 32);
    assert!(keys.iter().all(|k| *k == keys[0]), "one key for all");
    assert!(keys[0].iter().any(|&x| x != 0));
    let again = b.open().await.request_state_key().await.unwrap();
    assert_eq!(again.expose_secret(), &keys[0][..], "stable");
}

async fn the_audit_log_reads_oldest_first_and_refuses_rewrites(b: &Backend) {
    let s = b.open().await;
    for i in 0..5 {
        s.audit(
            &AuditEvent::new("launch_run", "dispatch", &format!("o{i}"))
                .plan("plan_x")
                .run("run_y")
                .subject(Some("assistant-1").filter(|_| i % 2 == 0))
                .detail(json!({"i": i})),
        )
        .await
        .unwrap();
    }
    let last3 = s.audit_entries(3).await.unwrap();
    let outcomes: Vec<&str> = last3.iter().map(|e| e.event.outcome.as_str()).collect();
    assert_eq!(outcomes, ["o2", "o3", "o4"]);
    assert!(last3.windows(2).all(|w| w[0].seq < w[1].seq));
    assert_eq!(last3[2].event.detail, json!({"i": 4}));
    assert_eq!(last3[2].event.plan_id.as_deref(), Some("plan_x"));
    assert_eq!(last3[2].pid, std::process::id());
    let subjects: Vec<Option<&str>> = last3.iter().map(|e| e.event.subject.as_deref()).collect();
    assert_eq!(subjects, [Some("assistant-1"), None, Some("assistant-1")]);
}

async fn racing_claims_of_one_plan_give_exactly_one_dispatch(b: &Backend) {
    let handles = join_all((0..8).map(|_| b.open())).await;
    let claims = join_all(handles.iter().map(|h| h.claim_dispatch("plan_r", LONG))).await;
    let mut won = 0;
    for c in claims {
        match c.unwrap() {
            Claim::Claimed(lease) => {
                won += 1;
                assert!(lease.lease_until > Utc::now());
            }
            Claim::Existing(rec) => assert!(
                matches!(
                    rec.state,
                    DispatchState::Dispatching {
                        lease_expired: false,
                        ..
                    }
                ),
                "{rec:?}"
            ),
        }
    }
    assert_eq!(won, 1);
    let rec = handles[0].dispatch("plan_r").await.unwrap().unwrap();
    assert_eq!(rec.attempts, 1);
}

async fn a_dispatched_plan_keeps_its_run(b: &Backend) {
    let s = b.open().await;
    let e = s
        .mark_dispatched("plan_n", "run", &json!({}))
        .await
        .unwrap_err();
    assert!(matches!(e, StoreError::NotClaimed { .. }), "{e}");
    assert!(s.claim_dispatch("plan_k", LONG).await.unwrap().is_claimed());
    s.mark_dispatched("plan_k", "run_1", &json!({"price": 2.5}))
        .await
        .unwrap();
    // The same run again is harmless; a different outcome is refused.
    s.mark_dispatched("plan_k", "run_1", &json!({}))
        .await
        .unwrap();
    let e = s.mark_failed("plan_k", "late").await.unwrap_err();
    assert!(matches!(e, StoreError::Settled { .. }), "{e}");
    let e = s
        .mark_dispatched("plan_k", "run_2", &json!({}))
        .await
        .unwrap_err();
    assert!(e.to_string().contains("run_1"), "{e}");
    match b.open().await.claim_dispatch("plan_k", LONG).await.unwrap() {
        Claim::Existing(rec) => match rec.state {
            DispatchState::Dispatched { run_id, details } => {
                assert_eq!(
                    (run_id.as_str(), &details),
                    ("run_1", &json!({"price": 2.5}))
                );
            }
            other => panic!("{other:?}"),
        },
        other => panic!("{other:?}"),
    }
    let runs = s.dispatched_runs().await.unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].plan_id, "plan_k");
}

async fn a_failed_dispatch_can_be_claimed_again_an_unknown_one_cannot(b: &Backend) {
    let s = b.open().await;
    assert!(s.claim_dispatch("plan_f", LONG).await.unwrap().is_claimed());
    s.mark_failed("plan_f", "400 bad request").await.unwrap();
    let handles = join_all((0..4).map(|_| b.open())).await;
    let won = winners(handles.iter().map(|h| h.claim_dispatch("plan_f", LONG))).await;
    assert_eq!(won, 1, "one re-claim after a definite failure");
    assert_eq!(s.dispatch("plan_f").await.unwrap().unwrap().attempts, 2);
    s.mark_unknown("plan_f", "timeout").await.unwrap();
    match s.claim_dispatch("plan_f", LONG).await.unwrap() {
        Claim::Existing(rec) => assert!(
            matches!(rec.state, DispatchState::Unknown { ref reason } if reason == "timeout")
        ),
        other => panic!("{other:?}"),
    }
    // Reconciliation found nothing: failed, then claimable.
    s.mark_failed("plan_f", "reconciled").await.unwrap();
    assert!(s.claim_dispatch("plan_f", LONG).await.unwrap().is_claimed());
}

async fn take_over_needs_an_expired_lease_and_succeeds_once(b: &Backend) {
    let s = b.open().await;
    let e = s.take_over("plan_t0", LONG).await.unwrap_err();
    assert!(matches!(e, StoreError::NotClaimed { .. }), "{e}");
    // A live lease is not taken over.
    assert!(
        s.claim_dispatch("plan_live", LONG)
            .await
            .unwrap()
            .is_claimed()
    );
    assert!(!s.take_over("plan_live", LONG).await.unwrap().is_claimed());
    // An expired lease (a zero lease is over at once) is taken over by exactly one.
    assert!(
        s.claim_dispatch("plan_t", Duration::ZERO)
            .await
            .unwrap()
            .is_claimed()
    );
    match s.dispatch("plan_t").await.unwrap().unwrap().state {
        DispatchState::Dispatching { lease_expired, .. } => assert!(lease_expired),
        other => panic!("{other:?}"),
    }
    let handles = join_all((0..6).map(|_| b.open())).await;
    let won = winners(handles.iter().map(|h| h.take_over("plan_t", LONG))).await;
    assert_eq!(won, 1);
    match s.dispatch("plan_t").await.unwrap().unwrap().state {
        DispatchState::Dispatching { lease_expired, .. } => assert!(!lease_expired),
        other => panic!("{other:?}"),
    }
    // A settled record is not taken over.
    s.mark_dispatched("plan_t", "run_t", &json!({}))
        .await
        .unwrap();
    assert!(!s.take_over("plan_t", LONG).await.unwrap().is_claimed());
}

/// A retry names the attempt its caller judged (reconciled, settle window waited out): it wins
/// once among racing replicas, and never once the record has moved on to another attempt or
/// out of doubt — the judgement of one attempt never licenses a dispatch after another.
async fn a_doubtful_attempt_is_retried_once_and_only_as_judged(b: &Backend) {
    let s = b.open().await;
    let e = s
        .retry_dispatch("plan_r0", 1, ZERO, LONG)
        .await
        .unwrap_err();
    assert!(matches!(e, StoreError::NotClaimed { .. }), "{e}");
    // A live attempt is not retried, whatever its number.
    assert!(s.claim_dispatch("plan_r", LONG).await.unwrap().is_claimed());
    assert!(
        !s.retry_dispatch("plan_r", 1, ZERO, LONG)
            .await
            .unwrap()
            .is_claimed()
    );
    // Attempt 1's answer was lost: racing replicas retry it, exactly one wins.
    s.mark_unknown("plan_r", "answer lost").await.unwrap();
    let judged = s.dispatch("plan_r").await.unwrap().unwrap();
    assert_eq!(judged.attempts, 1);
    // Not before its settle window is over, on the store's clock.
    match s.retry_dispatch("plan_r", 1, LONG, LONG).await.unwrap() {
        Claim::Existing(rec) => assert_eq!(rec.attempts, 1),
        other => panic!("{other:?}"),
    }
    let handles = join_all((0..6).map(|_| b.open())).await;
    let won = winners(
        handles
            .iter()
            .map(|h| h.retry_dispatch("plan_r", 1, ZERO, LONG)),
    )
    .await;
    assert_eq!(won, 1);
    let now = s.dispatch("plan_r").await.unwrap().unwrap();
    assert_eq!(now.attempts, 2);
    assert!(now.started_at >= judged.started_at);
    assert!(matches!(
        now.state,
        DispatchState::Dispatching {
            lease_expired: false,
            ..
        }
    ));
    // Attempt 2's answer is lost too: a verdict about attempt 1 (a caller that judged it, then
    // ran late) retries nothing; a verdict about attempt 2 does.
    handles[0]
        .mark_unknown("plan_r", "lost again")
        .await
        .unwrap();
    match s.retry_dispatch("plan_r", 1, ZERO, LONG).await.unwrap() {
        Claim::Existing(rec) => {
            assert_eq!(rec.attempts, 2);
            assert!(matches!(rec.state, DispatchState::Unknown { .. }));
        }
        other => panic!("{other:?}"),
    }
    assert!(
        s.retry_dispatch("plan_r", 2, ZERO, LONG)
            .await
            .unwrap()
            .is_claimed()
    );
    // A holder that died (its lease is over) is retried the same way, once.
    assert!(
        s.claim_dispatch("plan_d", Duration::ZERO)
            .await
            .unwrap()
            .is_claimed()
    );
    let won = winners(
        handles
            .iter()
            .map(|h| h.retry_dispatch("plan_d", 1, ZERO, LONG)),
    )
    .await;
    assert_eq!(won, 1);
    // A settled record is never retried.
    s.mark_dispatched("plan_d", "run_d", &json!({}))
        .await
        .unwrap();
    match s.retry_dispatch("plan_d", 2, ZERO, LONG).await.unwrap() {
        Claim::Existing(rec) => assert!(matches!(rec.state, DispatchState::Dispatched { .. })),
        other => panic!("{other:?}"),
    }
}

async fn a_volume_is_created_at_most_once(b: &Backend) {
    let handles = join_all((0..4).map(|_| b.open())).await;
    let won = winners(
        handles
            .iter()
            .map(|h| h.claim_volume_create("team_1", "vol", LONG)),
    )
    .await;
    assert_eq!(won, 1);
    let s = &handles[0];
    s.mark_volume_created("team_1", "vol").await.unwrap();
    match s.claim_volume_create("team_1", "vol", LONG).await.unwrap() {
        Claim::Existing(r) => assert_eq!(r.state, VolumeState::Created),
        other => panic!("{other:?}"),
    }
    // Another owner's volume of the same name is another record.
    assert!(
        s.claim_volume_create("personal", "vol", Duration::ZERO)
            .await
            .unwrap()
            .is_claimed()
    );
    // Its creator died (a zero lease is over at once): one retry of attempt 1 wins.
    let won = winners(
        handles
            .iter()
            .map(|h| h.retry_volume_create("personal", "vol", 1, ZERO, LONG)),
    )
    .await;
    assert_eq!(won, 1);
    s.mark_volume_unknown("personal", "vol", "timeout")
        .await
        .unwrap();
    // Attempt 2's answer was lost: a verdict about attempt 1 retries nothing.
    match s
        .retry_volume_create("personal", "vol", 1, ZERO, LONG)
        .await
        .unwrap()
    {
        Claim::Existing(r) => {
            assert_eq!(r.attempts, 2);
            assert!(matches!(r.state, VolumeState::Unknown { .. }));
        }
        other => panic!("{other:?}"),
    }
    s.mark_volume_failed("personal", "vol", "none found")
        .await
        .unwrap();
    assert!(
        s.claim_volume_create("personal", "vol", LONG)
            .await
            .unwrap()
            .is_claimed()
    );
}

async fn a_page_token_is_spent_once(b: &Backend) {
    let s = b.open().await;
    s.put_plan(&plan("plan_p", "c", 0, json!({})))
        .await
        .unwrap();
    let now = Utc::now();
    let t = PageTokenRecord {
        plan_id: "plan_p".into(),
        request_digest: "req-plan_p".into(),
        created_at: now,
        expires_at: now + Duration::from_secs(300),
        used_at: None,
        cookie_digest: None,
    };
    let d = secret_digest("tok");
    s.put_page_token(&d, &t).await.unwrap();
    assert!(
        s.page_token(&secret_digest("other"))
            .await
            .unwrap()
            .is_none()
    );
    assert_eq!(s.page_token(&d).await.unwrap().unwrap().plan_id, "plan_p");
    assert!(s.bind_page_cookie(&d, "cookie").await.unwrap());
    assert_eq!(
        s.page_token(&d)
            .await
            .unwrap()
            .unwrap()
            .cookie_digest
            .as_deref(),
        Some("cookie")
    );
    let handles = join_all((0..4).map(|_| b.open())).await;
    let spent = join_all(handles.iter().map(|h| h.spend_page_token(&d)))
        .await
        .into_iter()
        .filter(|r| *r.as_ref().unwrap())
        .count();
    assert_eq!(spent, 1);
    assert!(!s.bind_page_cookie(&d, "again").await.unwrap());
    assert!(s.page_token(&d).await.unwrap().unwrap().used_at.is_some());
    let mut old = t.clone();
    old.expires_at = now - Duration::from_secs(1);
    let d2 = secret_digest("old");
    s.put_page_token(&d2, &old).await.unwrap();
    assert!(!s.spend_page_token(&d2).await.unwrap());
}

fn known(id: &str, created: i64, status: &str, name: &str, digest: &str) -> KnownRun {
    KnownRun {
        run_id: id.into(),
        created_ms: created,
        status: status.into(),
        watch: status != "COMPLETED",
        name: Some(name.into()),
        config_digest: Some(digest.into()),
        body: format!("{{\"id\":\"{id}\",\"status\":\"{status}\"}}"),
        checked_ms: 0,
    }
}

async fn the_run_list_cache_keeps_what_was_read(b: &Backend) {
    let s = b.open().await;
    assert!(s.known_runs_mark("scope").await.unwrap().is_none());
    let runs = [
        known("r1", 100, "COMPLETED", "alpha", "d1"),
        known("r2", 300, "RUNNING", "beta", "d2"),
        known("r3", 200, "COMPLETED", "gamma", "d1"),
    ];
    let mark = Mark {
        complete: true,
        watermark_ms: 50,
    };
    s.put_known_runs("scope", &runs, &[], Some(mark))
        .await
        .unwrap();
    s.put_known_runs(
        "other",
        &[known("r9", 1, "RUNNING", "alpha", "d1")],
        &[],
        None,
    )
    .await
    .unwrap();
    assert_eq!(s.known_runs_mark("scope").await.unwrap(), Some(mark));
    let ids = |v: Vec<KnownRun>| v.into_iter().map(|r| r.run_id).collect::<Vec<_>>();
    let q = |f: fn(&mut KnownRunsQuery)| {
        let mut q = KnownRunsQuery::default();
        f(&mut q);
        q
    };
    assert_eq!(
        ids(s
            .known_runs("scope", &q(|q| q.watched = true))
            .await
            .unwrap()),
        ["r2"]
    );
    assert_eq!(
        ids(s
            .known_runs("scope", &q(|q| q.config_digests = vec!["d1".into()]))
            .await
            .unwrap()),
        ["r3", "r1"],
        "newest first, this scope only"
    );
    assert_eq!(
        ids(s
            .known_runs(
                "scope",
                &q(|q| {
                    q.names = vec!["alpha".into(), "beta".into()];
                    q.ids = vec!["r1".into()];
                    q.watched = true;
                })
            )
            .await
            .unwrap()),
        ["r2", "r1"],
        "each run once"
    );
    assert!(
        s.known_runs("scope", &KnownRunsQuery::default())
            .await
            .unwrap()
            .is_empty()
    );
    // Runs this server dispatched.
    assert!(
        s.claim_dispatch("plan_kr", LONG)
            .await
            .unwrap()
            .is_claimed()
    );
    s.mark_dispatched("plan_kr", "r3", &json!({}))
        .await
        .unwrap();
    assert_eq!(
        ids(s
            .known_runs("scope", &q(|q| q.dispatched = true))
            .await
            .unwrap()),
        ["r3"]
    );
    // An update, a removal, and the mark moving.
    let mut done = known("r2", 300, "COMPLETED", "beta", "d2");
    done.watch = false;
    s.put_known_runs(
        "scope",
        &[done],
        &["r1".to_string()],
        Some(Mark {
            complete: false,
            watermark_ms: 70,
        }),
    )
    .await
    .unwrap();
    let all = s
        .known_runs(
            "scope",
            &q(|q| q.config_digests = vec!["d1".into(), "d2".into()]),
        )
        .await
        .unwrap();
    assert_eq!(ids(all.clone()), ["r2", "r3"]);
    assert_eq!(all[0].status, "COMPLETED");
    assert!(!all[0].watch);
    assert!(all[0].checked_ms > 0, "checked time set by the store");
    assert_eq!(
        s.known_runs_mark("scope").await.unwrap(),
        Some(Mark {
            complete: false,
            watermark_ms: 70
        })
    );
}
