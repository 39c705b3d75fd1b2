//! The state store as a trait: what the tools need from durable state, whatever holds it.
//!
//! Every method returns a boxed future (`StoreFuture`), so the trait is object-safe (the
//! server holds an `Arc<dyn StateStore>`) and a networked backend — PostgreSQL, for a shared
//! gateway — can implement it without blocking the runtime and without touching a caller.
//! The SQLite [`Store`] answers at once: its transactions are short and local, so its futures
//! are already complete when returned (no thread hop per call).

use std::{future::Future, pin::Pin, time::Duration};

use chrono::{DateTime, Utc};
use secrecy::SecretSlice;

use super::{
    AuditEntry, AuditEvent, Claim, Decision, DecisionRecord, DispatchRecord, KnownRun,
    KnownRunsQuery, PageTokenRecord, PlanRecord, Store, StoreError, VolumeRecord,
};
use crate::runs_cache::Mark;

/// What every store method returns.
pub type StoreFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, StoreError>> + Send + 'a>>;

/// Durable state: plans and delete intents, approvals, single-use nonces, the request-state
/// key, the audit log, and the dispatch and volume-creation journal (leases included).
pub trait StateStore: Send + Sync {
    /// The store's directory on this machine, when it has one (staging space for downloads
    /// sits beside it); `None` for a networked backend.
    fn local_dir(&self) -> Option<&std::path::Path>;

    /// How long a dispatch claim holds before another process may take it over, when the
    /// settings say (`[state] dispatch_lease_seconds`); `None`: the dispatcher's default
    /// (the create timeout + 30 s).
    fn dispatch_lease(&self) -> Option<Duration> {
        None
    }

    /// Store a plan (or a delete intent).
    fn put_plan<'a>(&'a self, plan: &'a PlanRecord) -> StoreFuture<'a, ()>;
    /// A plan by id.
    fn get_plan<'a>(&'a self, plan_id: &'a str) -> StoreFuture<'a, Option<PlanRecord>>;
    /// The plans (or intents) with this content digest.
    fn plans_by_content_digest<'a>(&'a self, digest: &'a str) -> StoreFuture<'a, Vec<PlanRecord>>;

    /// Record a person's decision (audited in the same transaction).
    fn record_decision<'a>(
        &'a self,
        plan_id: &'a str,
        decision: Decision,
        via: &'a str,
    ) -> StoreFuture<'a, ()>;
    /// [`StateStore::record_decision`], the audit entry naming who decided (the signed-in
    /// person's `sub`). A backend that does not override this drops the subject.
    fn record_decision_as<'a>(
        &'a self,
        plan_id: &'a str,
        decision: Decision,
        via: &'a str,
        subject: Option<&'a str>,
    ) -> StoreFuture<'a, ()> {
        let _ = subject;
        self.record_decision(plan_id, decision, via)
    }
    /// The latest decision on a plan.
    fn decision<'a>(&'a self, plan_id: &'a str) -> StoreFuture<'a, Option<DecisionRecord>>;
    /// Spend a request-state nonce: `true` the first time only.
    fn use_nonce<'a>(&'a self, nonce: &'a str, expires_at: DateTime<Utc>) -> StoreFuture<'a, bool>;
    /// The per-install key that seals confirmation state.
    fn request_state_key(&self) -> StoreFuture<'_, SecretSlice<u8>>;

    /// Append to the audit log.
    fn audit<'a>(&'a self, event: &'a AuditEvent) -> StoreFuture<'a, ()>;
    /// The latest `limit` audit entries, oldest first.
    fn audit_entries(&self, limit: usize) -> StoreFuture<'_, Vec<AuditEntry>>;

    /// Claim a plan's dispatch for `lease`.
    fn claim_dispatch<'a>(&'a self, plan_id: &'a str, lease: Duration) -> StoreFuture<'a, Claim>;
    /// Take over a dispatch whose holder's lease expired, to record a run found by
    /// reconciliation; never followed by a create (that is `retry_dispatch`).
    fn take_over<'a>(&'a self, plan_id: &'a str, lease: Duration) -> StoreFuture<'a, Claim>;
    /// Claim attempt `attempt + 1` of a dispatch whose attempt `attempt` is in doubt (unknown,
    /// or in progress under an expired lease) and was settled as having created no run: only
    /// while the record is still that attempt in doubt and `settle` has passed since it was
    /// claimed, on the store's clock (`Existing` otherwise).
    fn retry_dispatch<'a>(
        &'a self,
        plan_id: &'a str,
        attempt: u32,
        settle: Duration,
        lease: Duration,
    ) -> StoreFuture<'a, Claim>;
    /// The platform created `run_id` for the plan.
    fn mark_dispatched<'a>(
        &'a self,
        plan_id: &'a str,
        run_id: &'a str,
        details: &'a serde_json::Value,
    ) -> StoreFuture<'a, ()>;
    /// The dispatch's outcome is not known.
    fn mark_unknown<'a>(&'a self, plan_id: &'a str, reason: &'a str) -> StoreFuture<'a, ()>;
    /// The dispatch definitely failed.
    fn mark_failed<'a>(&'a self, plan_id: &'a str, reason: &'a str) -> StoreFuture<'a, ()>;
    /// A plan's dispatch record.
    fn dispatch<'a>(&'a self, plan_id: &'a str) -> StoreFuture<'a, Option<DispatchRecord>>;
    /// Every dispatch that created a run.
    fn dispatched_runs(&self) -> StoreFuture<'_, Vec<DispatchRecord>>;

    /// Claim the creation of a volume for an owner.
    fn claim_volume_create<'a>(
        &'a self,
        owner_key: &'a str,
        volume: &'a str,
        lease: Duration,
    ) -> StoreFuture<'a, Claim<VolumeRecord>>;
    /// Claim attempt `attempt + 1` of a volume creation whose attempt `attempt` is in doubt and
    /// was settled as having created nothing (as `retry_dispatch`).
    fn retry_volume_create<'a>(
        &'a self,
        owner_key: &'a str,
        volume: &'a str,
        attempt: u32,
        settle: Duration,
        lease: Duration,
    ) -> StoreFuture<'a, Claim<VolumeRecord>>;
    fn mark_volume_created<'a>(
        &'a self,
        owner_key: &'a str,
        volume: &'a str,
    ) -> StoreFuture<'a, ()>;
    fn mark_volume_unknown<'a>(
        &'a self,
        owner_key: &'a str,
        volume: &'a str,
        reason: &'a str,
    ) -> StoreFuture<'a, ()>;
    fn mark_volume_failed<'a>(
        &'a self,
        owner_key: &'a str,
        volume: &'a str,
        reason: &'a str,
    ) -> StoreFuture<'a, ()>;

    // ----- the approval page (tokens stored by digest) -----
    /// Store a new page token under its digest.
    fn put_page_token<'a>(
        &'a self,
        digest: &'a str,
        token: &'a PageTokenRecord,
    ) -> StoreFuture<'a, ()>;
    /// The page token stored under this digest.
    fn page_token<'a>(&'a self, digest: &'a str) -> StoreFuture<'a, Option<PageTokenRecord>>;
    /// Bind the page's cookie (by digest) to an unused token.
    fn bind_page_cookie<'a>(
        &'a self,
        digest: &'a str,
        cookie_digest: &'a str,
    ) -> StoreFuture<'a, bool>;
    /// Use a page token: `true` the first time only, before its expiry.
    fn spend_page_token<'a>(&'a self, digest: &'a str) -> StoreFuture<'a, bool>;
    /// The latest earlier plan with the same config path or run name.
    fn previous_related_plan<'a>(
        &'a self,
        plan: &'a PlanRecord,
        config_path: Option<&'a str>,
        run_name: Option<&'a str>,
    ) -> StoreFuture<'a, Option<PlanRecord>>;

    // ----- the run-list cache (per owner scope; only a cache: the platform is the truth) -----
    /// How much of a scope's run history has been read.
    fn known_runs_mark<'a>(&'a self, scope: &'a str) -> StoreFuture<'a, Option<Mark>>;
    /// Record a read: runs upserted, runs the platform no longer has removed, the mark set.
    fn put_known_runs<'a>(
        &'a self,
        scope: &'a str,
        runs: &'a [KnownRun],
        gone: &'a [String],
        mark: Option<Mark>,
    ) -> StoreFuture<'a, ()>;
    /// The known runs of a scope matching any condition of the query, newest first.
    fn known_runs<'a>(
        &'a self,
        scope: &'a str,
        query: &'a KnownRunsQuery,
    ) -> StoreFuture<'a, Vec<KnownRun>>;
}

/// An answer that is already there.
fn done<'a, T: Send + 'a>(r: Result<T, StoreError>) -> StoreFuture<'a, T> {
    Box::pin(std::future::ready(r))
}

impl StateStore for Store {
    fn local_dir(&self) -> Option<&std::path::Path> {
        Some(self.dir())
    }
    fn dispatch_lease(&self) -> Option<Duration> {
        self.dispatch_lease
    }
    fn put_plan<'a>(&'a self, plan: &'a PlanRecord) -> StoreFuture<'a, ()> {
        done(Store::put_plan(self, plan))
    }
    fn get_plan<'a>(&'a self, plan_id: &'a str) -> StoreFuture<'a, Option<PlanRecord>> {
        done(Store::get_plan(self, plan_id))
    }
    fn plans_by_content_digest<'a>(&'a self, digest: &'a str) -> StoreFuture<'a, Vec<PlanRecord>> {
        done(Store::plans_by_content_digest(self, digest))
    }
    fn record_decision<'a>(
        &'a self,
        plan_id: &'a str,
        decision: Decision,
        via: &'a str,
    ) -> StoreFuture<'a, ()> {
        done(Store::record_decision(self, plan_id, decision, via))
    }
    fn record_decision_as<'a>(
        &'a self,
        plan_id: &'a str,
        decision: Decision,
        via: &'a str,
        subject: Option<&'a str>,
    ) -> StoreFuture<'a, ()> {
        done(Store::record_decision_as(
            self, plan_id, decision, via, subject,
        ))
    }
    fn decision<'a>(&'a self, plan_id: &'a str) -> StoreFuture<'a, Option<DecisionRecord>> {
        done(Store::decision(self, plan_id))
    }
    fn use_nonce<'a>(&'a self, nonce: &'a str, expires_at: DateTime<Utc>) -> StoreFuture<'a, bool> {
        done(Store::use_nonce(self, nonce, expires_at))
    }
    fn request_state_key(&self) -> StoreFuture<'_, SecretSlice<u8>> {
        done(Store::request_state_key(self))
    }
    fn audit<'a>(&'a self, event: &'a AuditEvent) -> StoreFuture<'a, ()> {
        done(Store::audit(self, event))
    }
    fn audit_entries(&self, limit: usize) -> StoreFuture<'_, Vec<AuditEntry>> {
        done(Store::audit_entries(self, limit))
    }
    fn claim_dispatch<'a>(&'a self, plan_id: &'a str, lease: Duration) -> StoreFuture<'a, Claim> {
        done(Store::claim_dispatch(self, plan_id, lease))
    }
    fn take_over<'a>(&'a self, plan_id: &'a str, lease: Duration) -> StoreFuture<'a, Claim> {
        done(Store::take_over(self, plan_id, lease))
    }
    fn retry_dispatch<'a>(
        &'a self,
        plan_id: &'a str,
        attempt: u32,
        settle: Duration,
        lease: Duration,
    ) -> StoreFuture<'a, Claim> {
        done(Store::retry_dispatch(self, plan_id, attempt, settle, lease))
    }
    fn mark_dispatched<'a>(
        &'a self,
        plan_id: &'a str,
        run_id: &'a str,
        details: &'a serde_json::Value,
    ) -> StoreFuture<'a, ()> {
        done(Store::mark_dispatched(self, plan_id, run_id, details))
    }
    fn mark_unknown<'a>(&'a self, plan_id: &'a str, reason: &'a str) -> StoreFuture<'a, ()> {
        done(Store::mark_unknown(self, plan_id, reason))
    }
    fn mark_failed<'a>(&'a self, plan_id: &'a str, reason: &'a str) -> StoreFuture<'a, ()> {
        done(Store::mark_failed(self, plan_id, reason))
    }
    fn dispatch<'a>(&'a self, plan_id: &'a str) -> StoreFuture<'a, Option<DispatchRecord>> {
        done(Store::dispatch(self, plan_id))
    }
    fn dispatched_runs(&self) -> StoreFuture<'_, Vec<DispatchRecord>> {
        done(Store::dispatched_runs(self))
    }
    fn claim_volume_create<'a>(
        &'a self,
        owner_key: &'a str,
        volume: &'a str,
        lease: Duration,
    ) -> StoreFuture<'a, Claim<VolumeRecord>> {
        done(Store::claim_volume_create(self, owner_key, volume, lease))
    }
    fn retry_volume_create<'a>(
        &'a self,
        owner_key: &'a str,
        volume: &'a str,
        attempt: u32,
        settle: Duration,
        lease: Duration,
    ) -> StoreFuture<'a, Claim<VolumeRecord>> {
        done(Store::retry_volume_create(
            self, owner_key, volume, attempt, settle, lease,
        ))
    }
    fn mark_volume_created<'a>(
        &'a self,
        owner_key: &'a str,
        volume: &'a str,
    ) -> StoreFuture<'a, ()> {
        done(Store::mark_volume_created(self, owner_key, volume))
    }
    fn mark_volume_unknown<'a>(
        &'a self,
        owner_key: &'a str,
        volume: &'a str,
        reason: &'a str,
    ) -> StoreFuture<'a, ()> {
        done(Store::mark_volume_unknown(self, owner_key, volume, reason))
    }
    fn mark_volume_failed<'a>(
        &'a self,
        owner_key: &'a str,
        volume: &'a str,
        reason: &'a str,
    ) -> StoreFuture<'a, ()> {
        done(Store::mark_volume_failed(self, owner_key, volume, reason))
    }
    fn put_page_token<'a>(
        &'a self,
        digest: &'a str,
        token: &'a PageTokenRecord,
    ) -> StoreFuture<'a, ()> {
        done(Store::put_page_token(self, digest, token))
    }
    fn page_token<'a>(&'a self, digest: &'a str) -> StoreFuture<'a, Option<PageTokenRecord>> {
        done(Store::page_token(self, digest))
    }
    fn bind_page_cookie<'a>(
        &'a self,
        digest: &'a str,
        cookie_digest: &'a str,
    ) -> StoreFuture<'a, bool> {
        done(Store::bind_page_cookie(self, digest, cookie_digest))
    }
    fn spend_page_token<'a>(&'a self, digest: &'a str) -> StoreFuture<'a, bool> {
        done(Store::spend_page_token(self, digest))
    }
    fn previous_related_plan<'a>(
        &'a self,
        plan: &'a PlanRecord,
        config_path: Option<&'a str>,
        run_name: Option<&'a str>,
    ) -> StoreFuture<'a, Option<PlanRecord>> {
        done(Store::previous_related_plan(
            self,
            plan,
            config_path,
            run_name,
        ))
    }
    fn known_runs_mark<'a>(&'a self, scope: &'a str) -> StoreFuture<'a, Option<Mark>> {
        done(Store::known_runs_mark(self, scope))
    }
    fn put_known_runs<'a>(
        &'a self,
        scope: &'a str,
        runs: &'a [KnownRun],
        gone: &'a [String],
        mark: Option<Mark>,
    ) -> StoreFuture<'a, ()> {
        done(Store::put_known_runs(self, scope, runs, gone, mark))
    }
    fn known_runs<'a>(
        &'a self,
        scope: &'a str,
        query: &'a KnownRunsQuery,
    ) -> StoreFuture<'a, Vec<KnownRun>> {
        done(Store::known_runs(self, scope, query))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    /// Callers hold the trait object; the SQLite store behind it answers through it.
    #[tokio::test]
    async fn the_sqlite_store_serves_through_the_trait_object() {
        let dir = tempfile::tempdir().unwrap();
        let store: Arc<dyn StateStore> = Arc::new(Store::open(dir.path()).unwrap());
        let now = Utc::now();
        let plan = PlanRecord {
            id: "plan_x".into(),
            created_at: now,
            expires_at: now + chrono::Duration::minutes(5),
            request_digest: "r".into(),
            content_digest: "c".into(),
            owner: None,
            summary_text: "s".into(),
            body: serde_json::json!({}),
        };
        store.put_plan(&plan).await.unwrap();
        let back = store.get_plan("plan_x").await.unwrap().unwrap();
        assert_eq!(
            (back.id, back.request_digest),
            (plan.id, plan.request_digest)
        );
        assert!(
            store
                .claim_dispatch("plan_x", Duration::from_secs(60))
                .await
                .unwrap()
                .is_claimed()
        );
        store
            .mark_dispatched("plan_x", "run1", &serde_json::json!({}))
            .await
            .unwrap();
        assert_eq!(store.dispatched_runs().await.unwrap().len(), 1);
        assert!(
            store
                .use_nonce("n", now + chrono::Duration::minutes(1))
                .await
                .unwrap()
        );
        assert!(
            !store
                .use_nonce("n", now + chrono::Duration::minutes(1))
                .await
                .unwrap()
        );
    }
}
