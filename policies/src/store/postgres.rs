//! The state store on PostgreSQL: what a team gateway of several `serve --http` replicas
//! shares — plans and delete intents, decisions, page tokens, the dispatch and volume journal,
//! request-state nonces, the audit log, the request-state key and the run-list cache — in one
//! database, through an async driver (`tokio-postgres`, pooled by `deadpool-postgres`; TLS by
//! rustls on the `ring` provider already in the tree).
//!
//! Times are BIGINT milliseconds since the epoch, as in the SQLite schema, and every "now" that
//! a lease, an expiry or a nonce is compared with is the **database's** clock
//! (`factory_now_ms()`, over `clock_timestamp()`), never a replica's: replicas whose clocks
//! drift still agree on whether a lease has run out.
//!
//! # Why the guarantees hold across replicas
//!
//! Every statement below runs at PostgreSQL's default READ COMMITTED isolation. The argument
//! rests on two properties of PostgreSQL that hold at that level: a unique index admits one
//! row per key whatever the interleaving (a second inserter waits for the first's transaction
//! and then sees the conflict), and an `UPDATE … WHERE cond` (also the `DO UPDATE … WHERE` of
//! an upsert) that waited for another transaction's row lock re-evaluates `cond` on the row as
//! that transaction left it, so of two updaters racing on one row only one finds `cond` true.
//!
//! - **One dispatch per plan.** A claim is one statement: `INSERT INTO journal … ON CONFLICT
//!   (kind, key, sub) DO UPDATE … WHERE journal.state = 'failed' RETURNING …`. With no record,
//!   the primary key lets exactly one inserter through; the others conflict, and their
//!   `DO UPDATE` finds the winner's row `dispatching`, not `failed`, so nothing is returned and
//!   they read the record instead (`Claim::Existing`). After a definite failure, the row lock
//!   lets one re-claimer turn `failed` into `dispatching`; the rest re-check and see
//!   `dispatching`. A claim that returns a row is the only way to hold a dispatch.
//! - **Take-over** is one conditional `UPDATE … WHERE state = 'dispatching' AND lease_until <=
//!   factory_now_ms() RETURNING …`: the first taker writes a fresh lease, so every later (or
//!   waiting) taker re-evaluates against the fresh lease and gets nothing. The lease is read
//!   on the database's clock, so a replica with a fast clock cannot take a live lease.
//! - **Only the holder settles.** `mark_*` locks the row (`SELECT … FOR UPDATE`), checks that
//!   this process (`holder_id()`: pid + random bits, distinct per replica) still holds an
//!   in-progress record, and writes in the same transaction: a holder whose lease was taken
//!   over gets `LeaseLost` and cannot overwrite the new holder's outcome. (An `unknown`
//!   record may be settled by whoever finds its run. The holder is a process, not a task; an
//!   earlier attempt's late outcome cannot land on a retry because the retry waits out the
//!   settle window — the create timeout and a margin after that attempt's claim — by when
//!   the earlier attempt's request has ended.)
//! - **A retry after an ambiguous create** names the attempt it judged. The record is
//!   `unknown` or an expired `dispatching`; whichever replica's `launch_run` meets it (before
//!   its claim, or in the claim's answer) lists runs and records what it found. Finding none,
//!   it waits out that attempt's settle window, then retries with one conditional `UPDATE …
//!   WHERE attempts = <the attempt judged> AND started_at + <window> <= now AND (state =
//!   'unknown' OR (state = 'dispatching' AND lease_until <= now)) RETURNING …` (the window
//!   too on the database's clock), which also moves `started_at` and `attempts` on:
//!   one retrier wins, and a verdict about one attempt can never license a dispatch after
//!   another (a replica that judged attempt 1 and ran late finds attempt 2 and gets nothing).
//! - **Single-use nonces**: `INSERT … ON CONFLICT (nonce) DO NOTHING` — one inserter sees one
//!   row inserted; every other replica sees zero, at once or after waiting for the first.
//!   Expired nonces are refused on the database's clock before the insert, so pruning them is
//!   safe.
//! - **Page tokens** are spent by `UPDATE … WHERE used_at IS NULL AND expires_at > now`: once.
//! - **The request-state key** is made once in the database (`INSERT … ON CONFLICT DO NOTHING`
//!   on a one-row table, then read back): every replica seals and opens with the same key, and
//!   no key file needs to be handed to the replicas.
//! - **Migrations** run in one transaction under `pg_advisory_xact_lock`, so replicas starting
//!   at once apply each version once; a database newer than this build is refused.

use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use deadpool_postgres::GenericClient;
use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod};
use secrecy::{ExposeSecret, SecretSlice, SecretString};
use tokio::sync::OnceCell;
use tokio_postgres::Row as PgRow;

use super::backend::{StateStore, StoreFuture};
use super::journal::{
    self, Claim, DispatchRecord, Kind, Lease, Mark, VolumeRecord, describe, dispatch_record,
    lease_millis, may_mark, phase_of, volume_record,
};
use super::{
    AuditEntry, AuditEvent, Decision, DecisionRecord, KEY_LEN, KnownRun, KnownRunsQuery,
    PageTokenRecord, PlanRecord, StoreError, from_millis, holder_id, to_millis,
};
use crate::runs_cache::Mark as RunsMark;

/// The schema this build writes (its own numbering: PostgreSQL starts at 1 with everything the
/// SQLite schema 3 holds, plus the audit log's `subject`).
pub(crate) const PG_SCHEMA_VERSION: i64 = 1;

/// The advisory lock key migrations hold ("factmcp1" as a number): one migrator at a time.
const MIGRATION_LOCK: i64 = 0x6661_6374_6d63_7031;

/// Connections per replica.
const POOL_SIZE: usize = 16;

const V1: &str = r#"
CREATE FUNCTION factory_now_ms() RETURNS bigint LANGUAGE sql VOLATILE AS
    $$ SELECT floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint $$;

CREATE TABLE plans (
    id              text PRIMARY KEY,
    created_at      bigint NOT NULL,
    expires_at      bigint NOT NULL,
    request_digest  text NOT NULL,
    content_digest  text NOT NULL,
    owner           text,
    summary_text    text NOT NULL,
    body            text NOT NULL
);
CREATE INDEX plans_by_content_digest ON plans (content_digest);

CREATE TABLE decisions (
    plan_id         text PRIMARY KEY REFERENCES plans (id),
    decision        text NOT NULL CHECK (decision IN ('approved', 'refused')),
    via             text NOT NULL,
    decided_at      bigint NOT NULL,
    request_digest  text NOT NULL
);

CREATE TABLE journal (
    kind            text NOT NULL CHECK (kind IN ('dispatch', 'volume')),
    key             text NOT NULL,
    sub             text NOT NULL,
    state           text NOT NULL CHECK (state IN
                        ('dispatching', 'dispatched', 'creating', 'created', 'unknown', 'failed')),
    holder          text,
    lease_until     bigint,
    started_at      bigint NOT NULL,
    updated_at      bigint NOT NULL,
    run_id          text,
    reason          text,
    details         text,
    attempts        bigint NOT NULL,
    PRIMARY KEY (kind, key, sub)
);
CREATE INDEX journal_by_state ON journal (kind, state);

CREATE TABLE nonces (
    nonce           text PRIMARY KEY,
    expires_at      bigint NOT NULL,
    used_at         bigint NOT NULL
);
CREATE INDEX nonces_by_expiry ON nonces (expires_at);

CREATE TABLE audit (
    seq             bigserial PRIMARY KEY,
    at              bigint NOT NULL,
    pid             bigint NOT NULL,
    actor           text NOT NULL,
    action          text NOT NULL,
    plan_id         text,
    run_id          text,
    outcome         text NOT NULL,
    detail          text NOT NULL,
    -- The OAuth caller's `sub`, when the gateway knows one.
    subject         text
);
CREATE FUNCTION factory_audit_append_only() RETURNS trigger LANGUAGE plpgsql AS
    $$ BEGIN RAISE EXCEPTION 'the audit log is append-only'; END $$;
CREATE TRIGGER audit_no_update BEFORE UPDATE OR DELETE ON audit
    FOR EACH ROW EXECUTE FUNCTION factory_audit_append_only();

CREATE TABLE page_tokens (
    token_digest    text PRIMARY KEY,
    plan_id         text NOT NULL REFERENCES plans (id),
    request_digest  text NOT NULL,
    created_at      bigint NOT NULL,
    expires_at      bigint NOT NULL,
    used_at         bigint,
    cookie_digest   text
);
CREATE INDEX page_tokens_by_plan ON page_tokens (plan_id);

-- The request-state sealing key every replica shares: one row, made once.
CREATE TABLE request_state_key (
    id              integer PRIMARY KEY CHECK (id = 1),
    key             bytea NOT NULL CHECK (length(key) = 32),
    created_at      bigint NOT NULL
);

CREATE TABLE known_run_scopes (
    scope           text PRIMARY KEY,
    complete        boolean NOT NULL,
    watermark_ms    bigint NOT NULL,
    updated_ms      bigint NOT NULL
);
CREATE TABLE known_runs (
    scope           text NOT NULL,
    run_id          text NOT NULL,
    created_ms      bigint NOT NULL,
    status          text NOT NULL,
    watch           boolean NOT NULL,
    name            text,
    config_digest   text,
    body            text NOT NULL,
    checked_ms      bigint NOT NULL,
    PRIMARY KEY (scope, run_id)
);
CREATE INDEX known_runs_watched ON known_runs (scope, watch);
CREATE INDEX known_runs_by_name ON known_runs (scope, name);
CREATE INDEX known_runs_by_config ON known_runs (scope, config_digest);
"#;

/// Each version's SQL, in order (`MIGRATIONS[i]` brings the schema to version `i + 1`).
const MIGRATIONS: &[&str] = &[V1];

/// How to reach the database.
#[derive(Clone)]
pub struct PgOptions {
    /// `postgres://user@host:port/db?sslmode=…` (also the key=value form). Never a password.
    pub url: String,
    /// The password, from `[state] password_file` or the environment.
    pub password: Option<SecretString>,
    /// Connections this replica keeps.
    pub pool_size: usize,
}

impl std::fmt::Debug for PgOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgOptions")
            .field("url", &self.url)
            .field("password", &self.password.as_ref().map(|_| "[redacted]"))
            .finish()
    }
}

impl PgOptions {
    pub fn new(url: &str, password: Option<SecretString>) -> Self {
        PgOptions {
            url: url.to_owned(),
            password,
            pool_size: POOL_SIZE,
        }
    }
}

/// Whether a state URL names PostgreSQL (`postgres://`, `postgresql://`).
pub fn is_postgres_url(url: &str) -> bool {
    let lower = url.trim_start().to_ascii_lowercase();
    lower.starts_with("postgres://") || lower.starts_with("postgresql://")
}

/// Refuse a state URL that carries a password (it would sit in a config file, a process
/// list or a log line); say where the password goes instead. Also parses it.
pub fn check_url(url: &str) -> Result<tokio_postgres::Config, StoreError> {
    if !is_postgres_url(url) {
        return Err(StoreError::Config(
            "the state URL must start with postgres:// (e.g. postgres://factory@db:5432/factory)"
                .into(),
        ));
    }
    let config = tokio_postgres::Config::from_str(url).map_err(|_| {
        StoreError::Config(
            "the state URL is not a valid PostgreSQL URL (postgres://user@host:port/database)"
                .into(),
        )
    })?;
    if config.get_password().is_some() {
        return Err(StoreError::Config(
            "the state URL holds a password; remove it from the URL and put it in a file named \
             by [state] password_file (readable by the server's user only) or in the \
             FACTORY_MCP_STATE_PASSWORD environment variable"
                .into(),
        ));
    }
    if config.get_hosts().is_empty() {
        return Err(StoreError::Config(
            "the state URL names no host (postgres://user@host:port/database)".into(),
        ));
    }
    Ok(config)
}

/// The store on PostgreSQL. Cheap to share behind an `Arc`; a pool of connections.
pub struct PgStore {
    pool: Pool,
    /// The key, once read (it never changes).
    key: OnceCell<Arc<Vec<u8>>>,
    dispatch_lease: Option<Duration>,
}

impl std::fmt::Debug for PgStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgStore").finish_non_exhaustive()
    }
}

fn pg(e: tokio_postgres::Error) -> StoreError {
    // The server's message (and its detail) when there is one; never the connection string.
    let text = match e.as_db_error() {
        Some(db) => match db.detail() {
            Some(detail) => format!("{} ({detail})", db.message()),
            None => db.message().to_owned(),
        },
        None => e.to_string(),
    };
    StoreError::Postgres(text)
}

fn pool_err(e: deadpool_postgres::PoolError) -> StoreError {
    match e {
        deadpool_postgres::PoolError::Backend(e) => pg(e),
        other => StoreError::Postgres(format!("no connection to the database: {other}")),
    }
}

fn json_err(what: &'static str) -> impl FnOnce(serde_json::Error) -> StoreError {
    move |source| StoreError::Json { what, source }
}

/// TLS for `sslmode=prefer|require`: rustls on the `ring` provider, the web's root
/// certificates, the server's name verified.
fn tls_connector() -> Result<tokio_postgres_rustls::MakeRustlsConnect, StoreError> {
    let mut roots = rustls::RootCertStore::empty();
    roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| StoreError::Config(format!("TLS set-up for the state database: {e}")))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(tokio_postgres_rustls::MakeRustlsConnect::new(config))
}

impl PgStore {
    /// Connect, and create or migrate the schema. A password in the URL is refused
    /// ([`check_url`]); `sslmode=require` uses TLS with the web's root certificates.
    pub async fn connect(opts: &PgOptions) -> Result<PgStore, StoreError> {
        let mut config = check_url(&opts.url)?;
        if let Some(pw) = &opts.password {
            config.password(pw.expose_secret().as_bytes());
        }
        if config.get_application_name().is_none() {
            config.application_name("factory-mcp");
        }
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(Duration::from_secs(10));
        }
        let manager_config = ManagerConfig {
            recycling_method: RecyclingMethod::Fast,
        };
        let manager = match config.get_ssl_mode() {
            tokio_postgres::config::SslMode::Disable => {
                Manager::from_config(config, tokio_postgres::NoTls, manager_config)
            }
            _ => Manager::from_config(config, tls_connector()?, manager_config),
        };
        let pool = Pool::builder(manager)
            .max_size(opts.pool_size.max(1))
            .build()
            .map_err(|e| StoreError::Postgres(format!("cannot build the connection pool: {e}")))?;
        let store = PgStore {
            pool,
            key: OnceCell::new(),
            dispatch_lease: None,
        };
        store.migrate().await?;
        Ok(store)
    }

    /// Use this dispatch lease instead of the dispatcher's default (a test's short lease).
    pub fn with_dispatch_lease(mut self, lease: Option<Duration>) -> Self {
        self.dispatch_lease = lease;
        self
    }

    async fn client(&self) -> Result<deadpool_postgres::Object, StoreError> {
        self.pool.get().await.map_err(pool_err)
    }

    /// Bring the schema up to [`PG_SCHEMA_VERSION`]: one transaction, under an advisory lock
    /// (replicas starting at once wait for each other; the second finds the work done).
    async fn migrate(&self) -> Result<(), StoreError> {
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(pg)?;
        tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
            .await
            .map_err(pg)?;
        tx.batch_execute(
            "CREATE TABLE IF NOT EXISTS factory_mcp_schema (
                 version     bigint PRIMARY KEY,
                 applied_at  timestamptz NOT NULL DEFAULT now()
             )",
        )
        .await
        .map_err(pg)?;
        let found: i64 = tx
            .query_one(
                "SELECT coalesce(max(version), 0)::bigint FROM factory_mcp_schema",
                &[],
            )
            .await
            .map_err(pg)?
            .get(0);
        if found > PG_SCHEMA_VERSION {
            return Err(StoreError::NewerSchema {
                found,
                supported: PG_SCHEMA_VERSION,
            });
        }
        for (i, sql) in MIGRATIONS.iter().enumerate() {
            let version = i as i64 + 1;
            if version <= found {
                continue;
            }
            tx.batch_execute(sql).await.map_err(pg)?;
            tx.execute(
                "INSERT INTO factory_mcp_schema (version) VALUES ($1)",
                &[&version],
            )
            .await
            .map_err(pg)?;
        }
        tx.commit().await.map_err(pg)?;
        Ok(())
    }

    /// The schema version the database is at.
    pub async fn schema_version(&self) -> Result<i64, StoreError> {
        let client = self.client().await?;
        Ok(client
            .query_one(
                "SELECT coalesce(max(version), 0)::bigint FROM factory_mcp_schema",
                &[],
            )
            .await
            .map_err(pg)?
            .get(0))
    }

    /// Round trip to the database (for a readiness check).
    pub async fn ping(&self) -> Result<(), StoreError> {
        let client = self.client().await?;
        client.execute("SELECT 1", &[]).await.map_err(pg)?;
        Ok(())
    }

    // ----- plans -------------------------------------------------------------------------

    async fn put_plan_(&self, plan: &PlanRecord) -> Result<(), StoreError> {
        let body = serde_json::to_string(&plan.body).map_err(json_err("plan body"))?;
        let client = self.client().await?;
        let n = client
            .execute(
                "INSERT INTO plans (id, created_at, expires_at, request_digest, content_digest,
                                    owner, summary_text, body)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (id) DO NOTHING",
                &[
                    &plan.id,
                    &to_millis(plan.created_at),
                    &to_millis(plan.expires_at),
                    &plan.request_digest,
                    &plan.content_digest,
                    &plan.owner,
                    &plan.summary_text,
                    &body,
                ],
            )
            .await
            .map_err(pg)?;
        if n == 0 {
            return Err(StoreError::DuplicatePlan(plan.id.clone()));
        }
        Ok(())
    }

    async fn get_plan_(&self, plan_id: &str) -> Result<Option<PlanRecord>, StoreError> {
        let client = self.client().await?;
        let stmt = client
            .prepare_cached(&format!("SELECT {PLAN_COLUMNS} FROM plans WHERE id = $1"))
            .await
            .map_err(pg)?;
        client
            .query_opt(&stmt, &[&plan_id])
            .await
            .map_err(pg)?
            .map(|r| plan_row(&r))
            .transpose()
    }

    async fn plans_by_content_digest_(&self, digest: &str) -> Result<Vec<PlanRecord>, StoreError> {
        let client = self.client().await?;
        client
            .query(
                &format!(
                    "SELECT {PLAN_COLUMNS} FROM plans WHERE content_digest = $1
                     ORDER BY created_at, id"
                ),
                &[&digest],
            )
            .await
            .map_err(pg)?
            .iter()
            .map(plan_row)
            .collect()
    }

    async fn previous_related_plan_(
        &self,
        plan: &PlanRecord,
        config_path: Option<&str>,
        run_name: Option<&str>,
    ) -> Result<Option<PlanRecord>, StoreError> {
        if config_path.is_none() && run_name.is_none() {
            return Ok(None);
        }
        let client = self.client().await?;
        client
            .query_opt(
                &format!(
                    "SELECT {PLAN_COLUMNS} FROM plans
                     WHERE id <> $1 AND created_at <= $2
                       AND (($3::text IS NOT NULL AND body::jsonb ->> 'config_path' = $3)
                         OR ($4::text IS NOT NULL AND body::jsonb ->> 'run_name' = $4))
                     ORDER BY created_at DESC, id DESC LIMIT 1"
                ),
                &[
                    &plan.id,
                    &to_millis(plan.created_at),
                    &config_path,
                    &run_name,
                ],
            )
            .await
            .map_err(pg)?
            .map(|r| plan_row(&r))
            .transpose()
    }

    // ----- decisions, nonces, audit, key ---------------------------------------------------

    async fn record_decision_(
        &self,
        plan_id: &str,
        decision: Decision,
        via: &str,
        subject: Option<&str>,
    ) -> Result<(), StoreError> {
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(pg)?;
        let digest: Option<String> = tx
            .query_opt(
                "SELECT request_digest FROM plans WHERE id = $1",
                &[&plan_id],
            )
            .await
            .map_err(pg)?
            .map(|r| r.get(0));
        let Some(digest) = digest else {
            return Err(StoreError::UnknownPlan(plan_id.to_owned()));
        };
        let now: i64 = tx
            .query_one(
                "INSERT INTO decisions (plan_id, decision, via, decided_at, request_digest)
                 VALUES ($1, $2, $3, factory_now_ms(), $4)
                 ON CONFLICT (plan_id) DO UPDATE SET decision = excluded.decision,
                     via = excluded.via, decided_at = excluded.decided_at,
                     request_digest = excluded.request_digest
                 RETURNING decided_at",
                &[&plan_id, &decision.as_str(), &via, &digest],
            )
            .await
            .map_err(pg)?
            .get(0);
        insert_audit(
            &tx,
            &AuditEvent::new(via, "decide", decision.as_str())
                .plan(plan_id)
                .subject(subject)
                .detail(serde_json::json!({
                    "request_digest": digest,
                    "channel": via,
                    "decided_at": from_millis(now).to_rfc3339(),
                })),
        )
        .await?;
        tx.commit().await.map_err(pg)?;
        Ok(())
    }

    async fn decision_(&self, plan_id: &str) -> Result<Option<DecisionRecord>, StoreError> {
        let client = self.client().await?;
        Ok(client
            .query_opt(
                "SELECT plan_id, decision, via, decided_at, request_digest
                 FROM decisions WHERE plan_id = $1",
                &[&plan_id],
            )
            .await
            .map_err(pg)?
            .map(|r| DecisionRecord {
                plan_id: r.get(0),
                decision: if r.get::<_, &str>(1) == "approved" {
                    Decision::Approved
                } else {
                    Decision::Refused
                },
                via: r.get(2),
                decided_at: from_millis(r.get(3)),
                request_digest: r.get(4),
            }))
    }

    async fn use_nonce_(&self, nonce: &str, expires_at: DateTime<Utc>) -> Result<bool, StoreError> {
        let expires = to_millis(expires_at);
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(pg)?;
        tx.execute(
            "DELETE FROM nonces WHERE expires_at <= factory_now_ms()",
            &[],
        )
        .await
        .map_err(pg)?;
        // An expired nonce is never accepted (on the database's clock), so pruning is safe.
        let n = tx
            .execute(
                "INSERT INTO nonces (nonce, expires_at, used_at)
                 SELECT $1, $2, now_ms FROM (SELECT factory_now_ms() AS now_ms) t
                 WHERE $2 > now_ms
                 ON CONFLICT (nonce) DO NOTHING",
                &[&nonce, &expires],
            )
            .await
            .map_err(pg)?;
        tx.commit().await.map_err(pg)?;
        Ok(n == 1)
    }

    async fn audit_entries_(&self, limit: usize) -> Result<Vec<AuditEntry>, StoreError> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let client = self.client().await?;
        let rows = client
            .query(
                "SELECT seq, at, pid, actor, action, plan_id, run_id, outcome, detail, subject
                 FROM (SELECT * FROM audit ORDER BY seq DESC LIMIT $1) t ORDER BY seq",
                &[&limit],
            )
            .await
            .map_err(pg)?;
        rows.iter()
            .map(|r| {
                let detail: &str = r.get(8);
                Ok(AuditEntry {
                    seq: r.get(0),
                    at: from_millis(r.get(1)),
                    pid: u32::try_from(r.get::<_, i64>(2)).unwrap_or(0),
                    event: AuditEvent {
                        actor: r.get(3),
                        action: r.get(4),
                        plan_id: r.get(5),
                        run_id: r.get(6),
                        outcome: r.get(7),
                        detail: serde_json::from_str(detail).map_err(json_err("audit detail"))?,
                        subject: r.get(9),
                    },
                })
            })
            .collect()
    }

    async fn request_state_key_(&self) -> Result<SecretSlice<u8>, StoreError> {
        let key = self
            .key
            .get_or_try_init(|| async {
                let mut fresh = vec![0u8; KEY_LEN];
                {
                    use rand::TryRngCore;
                    rand::rngs::OsRng
                        .try_fill_bytes(&mut fresh)
                        .map_err(|e| StoreError::Random(e.to_string()))?;
                }
                let client = self.client().await?;
                // Made once: the first replica's insert wins; everyone reads that row.
                client
                    .execute(
                        "INSERT INTO request_state_key (id, key, created_at)
                         VALUES (1, $1, factory_now_ms()) ON CONFLICT (id) DO NOTHING",
                        &[&fresh],
                    )
                    .await
                    .map_err(pg)?;
                fresh.fill(0);
                let key: Vec<u8> = client
                    .query_one("SELECT key FROM request_state_key WHERE id = 1", &[])
                    .await
                    .map_err(pg)?
                    .get(0);
                if key.len() != KEY_LEN {
                    return Err(StoreError::Postgres(format!(
                        "the stored request-state key holds {} bytes, not {KEY_LEN}",
                        key.len()
                    )));
                }
                Ok(Arc::new(key))
            })
            .await?;
        Ok(SecretSlice::from(key.as_ref().clone()))
    }

    // ----- the journal ------------------------------------------------------------------------

    /// The record and the database's clock, read in one statement.
    async fn load(
        &self,
        c: &impl GenericClient,
        kind: Kind,
        key: &str,
        sub: &str,
        lock: bool,
    ) -> Result<Option<(journal::Row, i64)>, StoreError> {
        let sql = format!(
            "SELECT {JOURNAL_COLUMNS}, factory_now_ms() FROM journal
             WHERE kind = $1 AND key = $2 AND sub = $3{}",
            if lock { " FOR UPDATE" } else { "" }
        );
        Ok(c.query_opt(&sql, &[&kind.as_str(), &key, &sub])
            .await
            .map_err(pg)?
            .map(|r| (journal_row(&r), r.get(11))))
    }

    async fn claim(
        &self,
        kind: Kind,
        key: &str,
        sub: &str,
        lease: Duration,
    ) -> Result<Claim<(journal::Row, i64)>, StoreError> {
        let client = self.client().await?;
        let holder = holder_id();
        let granted = client
            .query_opt(
                "INSERT INTO journal (kind, key, sub, state, holder, lease_until, started_at,
                                      updated_at, attempts)
                 SELECT $1, $2, $3, $4, $5, now_ms + $6, now_ms, now_ms, 1
                 FROM (SELECT factory_now_ms() AS now_ms) t
                 ON CONFLICT (kind, key, sub) DO UPDATE SET state = excluded.state,
                     holder = excluded.holder, lease_until = excluded.lease_until,
                     started_at = excluded.started_at, updated_at = excluded.updated_at,
                     run_id = NULL, reason = NULL, details = NULL,
                     attempts = journal.attempts + 1
                 WHERE journal.state = 'failed'
                 RETURNING lease_until",
                &[
                    &kind.as_str(),
                    &key,
                    &sub,
                    &kind.in_progress(),
                    &holder,
                    &lease_millis(lease),
                ],
            )
            .await
            .map_err(pg)?;
        if let Some(r) = granted {
            return Ok(Claim::Claimed(Lease {
                holder: holder.to_owned(),
                lease_until: from_millis(r.get(0)),
            }));
        }
        match self.load(&client, kind, key, sub, false).await? {
            Some(found) => Ok(Claim::Existing(found)),
            // Deleted between the two statements: nothing deletes journal rows, so this is a
            // database edited by hand; say so rather than guess.
            None => Err(StoreError::Postgres(format!(
                "{} {} vanished from the journal during a claim",
                kind.what(),
                describe(kind, key, sub)
            ))),
        }
    }

    async fn take_over(
        &self,
        kind: Kind,
        key: &str,
        sub: &str,
        lease: Duration,
    ) -> Result<Claim<(journal::Row, i64)>, StoreError> {
        let client = self.client().await?;
        let holder = holder_id();
        let taken = client
            .query_opt(
                "UPDATE journal SET holder = $5, lease_until = factory_now_ms() + $6,
                        updated_at = factory_now_ms()
                 WHERE kind = $1 AND key = $2 AND sub = $3 AND state = $4
                   AND (lease_until IS NULL OR lease_until <= factory_now_ms())
                 RETURNING lease_until",
                &[
                    &kind.as_str(),
                    &key,
                    &sub,
                    &kind.in_progress(),
                    &holder,
                    &lease_millis(lease),
                ],
            )
            .await
            .map_err(pg)?;
        self.leased_or_found(&client, taken, kind, key, sub).await
    }

    /// A new attempt of a dispatch whose attempt `attempt` is in doubt and was judged to have
    /// created nothing (`journal::retry` on SQLite): one statement, so only while the record
    /// is still that attempt, `unknown` or in progress under an expired lease, and `settle`
    /// has passed since it was claimed on the database's clock.
    async fn retry(
        &self,
        kind: Kind,
        key: &str,
        sub: &str,
        attempt: u32,
        settle: Duration,
        lease: Duration,
    ) -> Result<Claim<(journal::Row, i64)>, StoreError> {
        let client = self.client().await?;
        let holder = holder_id();
        let retried = client
            .query_opt(
                "UPDATE journal SET state = $4, holder = $5, lease_until = factory_now_ms() + $6,
                        started_at = factory_now_ms(), updated_at = factory_now_ms(),
                        run_id = NULL, reason = NULL, details = NULL, attempts = attempts + 1
                 WHERE kind = $1 AND key = $2 AND sub = $3 AND attempts = $7
                   AND started_at + $8 <= factory_now_ms()
                   AND (state = 'unknown'
                        OR (state = $4 AND (lease_until IS NULL OR lease_until <= factory_now_ms())))
                 RETURNING lease_until",
                &[
                    &kind.as_str(),
                    &key,
                    &sub,
                    &kind.in_progress(),
                    &holder,
                    &lease_millis(lease),
                    &i64::from(attempt),
                    &lease_millis(settle),
                ],
            )
            .await
            .map_err(pg)?;
        self.leased_or_found(&client, retried, kind, key, sub).await
    }

    /// The answer of a conditional update that grants this process a lease: the lease when it
    /// wrote the row, else the record as it stands (none at all: `NotClaimed`).
    async fn leased_or_found(
        &self,
        client: &impl GenericClient,
        granted: Option<PgRow>,
        kind: Kind,
        key: &str,
        sub: &str,
    ) -> Result<Claim<(journal::Row, i64)>, StoreError> {
        if let Some(r) = granted {
            return Ok(Claim::Claimed(Lease {
                holder: holder_id().to_owned(),
                lease_until: from_millis(r.get(0)),
            }));
        }
        match self.load(client, kind, key, sub, false).await? {
            Some(found) => Ok(Claim::Existing(found)),
            None => Err(StoreError::NotClaimed {
                what: kind.what(),
                key: describe(kind, key, sub),
            }),
        }
    }

    async fn mark(&self, kind: Kind, key: &str, sub: &str, to: Mark<'_>) -> Result<(), StoreError> {
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(pg)?;
        let Some((r, _)) = self.load(&tx, kind, key, sub, true).await? else {
            return Err(StoreError::NotClaimed {
                what: kind.what(),
                key: describe(kind, key, sub),
            });
        };
        if !may_mark(kind, key, sub, &r, &to)? {
            return Ok(());
        }
        let (state, run_id, reason, details) = journal::mark_values(kind, &to);
        tx.execute(
            "UPDATE journal SET state = $4, holder = NULL, lease_until = NULL,
                    updated_at = factory_now_ms(), run_id = $5, reason = $6, details = $7
             WHERE kind = $1 AND key = $2 AND sub = $3",
            &[
                &kind.as_str(),
                &key,
                &sub,
                &state,
                &run_id,
                &reason,
                &details,
            ],
        )
        .await
        .map_err(pg)?;
        tx.commit().await.map_err(pg)?;
        Ok(())
    }

    async fn dispatch_(&self, plan_id: &str) -> Result<Option<DispatchRecord>, StoreError> {
        let client = self.client().await?;
        self.load(&client, Kind::Dispatch, plan_id, "", false)
            .await?
            .map(|(r, now)| dispatch_record(r, now))
            .transpose()
    }

    async fn dispatched_runs_(&self) -> Result<Vec<DispatchRecord>, StoreError> {
        let client = self.client().await?;
        let rows = client
            .query(
                &format!(
                    "SELECT {JOURNAL_COLUMNS}, factory_now_ms() FROM journal
                     WHERE kind = 'dispatch' AND state = 'dispatched' ORDER BY updated_at, key"
                ),
                &[],
            )
            .await
            .map_err(pg)?;
        rows.iter()
            .map(|r| dispatch_record(journal_row(r), r.get(11)))
            .collect()
    }

    // ----- page tokens -------------------------------------------------------------------------

    async fn put_page_token_(&self, digest: &str, t: &PageTokenRecord) -> Result<(), StoreError> {
        let client = self.client().await?;
        client
            .execute(
                "INSERT INTO page_tokens (token_digest, plan_id, request_digest, created_at,
                                          expires_at, used_at, cookie_digest)
                 VALUES ($1, $2, $3, $4, $5, NULL, NULL)",
                &[
                    &digest,
                    &t.plan_id,
                    &t.request_digest,
                    &to_millis(t.created_at),
                    &to_millis(t.expires_at),
                ],
            )
            .await
            .map_err(pg)?;
        Ok(())
    }

    async fn page_token_(&self, digest: &str) -> Result<Option<PageTokenRecord>, StoreError> {
        let client = self.client().await?;
        Ok(client
            .query_opt(
                "SELECT plan_id, request_digest, created_at, expires_at, used_at, cookie_digest
                 FROM page_tokens WHERE token_digest = $1",
                &[&digest],
            )
            .await
            .map_err(pg)?
            .map(|r| PageTokenRecord {
                plan_id: r.get(0),
                request_digest: r.get(1),
                created_at: from_millis(r.get(2)),
                expires_at: from_millis(r.get(3)),
                used_at: r.get::<_, Option<i64>>(4).map(from_millis),
                cookie_digest: r.get(5),
            }))
    }

    async fn bind_page_cookie_(&self, digest: &str, cookie: &str) -> Result<bool, StoreError> {
        let client = self.client().await?;
        Ok(client
            .execute(
                "UPDATE page_tokens SET cookie_digest = $2
                 WHERE token_digest = $1 AND used_at IS NULL",
                &[&digest, &cookie],
            )
            .await
            .map_err(pg)?
            == 1)
    }

    async fn spend_page_token_(&self, digest: &str) -> Result<bool, StoreError> {
        let client = self.client().await?;
        Ok(client
            .execute(
                "UPDATE page_tokens SET used_at = factory_now_ms()
                 WHERE token_digest = $1 AND used_at IS NULL AND expires_at > factory_now_ms()",
                &[&digest],
            )
            .await
            .map_err(pg)?
            == 1)
    }

    // ----- the run-list cache --------------------------------------------------------------------

    async fn known_runs_mark_(&self, scope: &str) -> Result<Option<RunsMark>, StoreError> {
        let client = self.client().await?;
        let stmt = client
            .prepare_cached("SELECT complete, watermark_ms FROM known_run_scopes WHERE scope = $1")
            .await
            .map_err(pg)?;
        Ok(client
            .query_opt(&stmt, &[&scope])
            .await
            .map_err(pg)?
            .map(|r| RunsMark {
                complete: r.get(0),
                watermark_ms: r.get(1),
            }))
    }

    async fn put_known_runs_(
        &self,
        scope: &str,
        runs: &[KnownRun],
        gone: &[String],
        mark: Option<RunsMark>,
    ) -> Result<(), StoreError> {
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(pg)?;
        if !runs.is_empty() {
            let up = tx
                .prepare_cached(
                    "INSERT INTO known_runs (scope, run_id, created_ms, status, watch, name,
                                             config_digest, body, checked_ms)
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, factory_now_ms())
                     ON CONFLICT (scope, run_id) DO UPDATE SET
                         created_ms = excluded.created_ms, status = excluded.status,
                         watch = excluded.watch, name = excluded.name,
                         config_digest = excluded.config_digest, body = excluded.body,
                         checked_ms = excluded.checked_ms
                     WHERE known_runs.watch OR excluded.watch
                        OR known_runs.body <> excluded.body",
                )
                .await
                .map_err(pg)?;
            for r in runs {
                tx.execute(
                    &up,
                    &[
                        &scope,
                        &r.run_id,
                        &r.created_ms,
                        &r.status,
                        &r.watch,
                        &r.name,
                        &r.config_digest,
                        &r.body,
                    ],
                )
                .await
                .map_err(pg)?;
            }
        }
        if !gone.is_empty() {
            tx.execute(
                "DELETE FROM known_runs WHERE scope = $1 AND run_id = ANY($2)",
                &[&scope, &gone],
            )
            .await
            .map_err(pg)?;
        }
        if let Some(m) = mark {
            tx.execute(
                "INSERT INTO known_run_scopes (scope, complete, watermark_ms, updated_ms)
                 VALUES ($1, $2, $3, factory_now_ms())
                 ON CONFLICT (scope) DO UPDATE SET complete = excluded.complete,
                     watermark_ms = excluded.watermark_ms, updated_ms = excluded.updated_ms
                 WHERE known_run_scopes.complete <> excluded.complete
                    OR known_run_scopes.watermark_ms <> excluded.watermark_ms",
                &[&scope, &m.complete, &m.watermark_ms],
            )
            .await
            .map_err(pg)?;
        }
        tx.commit().await.map_err(pg)?;
        Ok(())
    }

    async fn known_runs_(
        &self,
        scope: &str,
        q: &KnownRunsQuery,
    ) -> Result<Vec<KnownRun>, StoreError> {
        let mut selects = Vec::new();
        if q.watched {
            selects.push(format!(
                "SELECT {KNOWN_COLUMNS} FROM known_runs WHERE scope = $1 AND watch"
            ));
        }
        if q.dispatched {
            selects.push(format!(
                "SELECT {KNOWN_COLUMNS} FROM known_runs WHERE scope = $1 AND run_id IN
                     (SELECT run_id FROM journal
                      WHERE kind = 'dispatch' AND state = 'dispatched' AND run_id IS NOT NULL)"
            ));
        }
        for (column, values, n) in [
            ("name", &q.names, 2),
            ("config_digest", &q.config_digests, 3),
            ("run_id", &q.ids, 4),
        ] {
            if !values.is_empty() {
                selects.push(format!(
                    "SELECT {KNOWN_COLUMNS} FROM known_runs WHERE scope = $1 AND {column} = ANY(${n})"
                ));
            }
        }
        if selects.is_empty() {
            return Ok(Vec::new());
        }
        // Every parameter is declared (an unused one still needs a type).
        let sql = format!(
            "SELECT * FROM ({}) u WHERE $2::text[] IS NOT NULL AND $3::text[] IS NOT NULL
               AND $4::text[] IS NOT NULL",
            selects.join(" UNION ALL ")
        );
        let client = self.client().await?;
        let rows = client
            .query(&sql, &[&scope, &q.names, &q.config_digests, &q.ids])
            .await
            .map_err(pg)?;
        let mut out: Vec<KnownRun> = rows
            .iter()
            .map(|r| KnownRun {
                run_id: r.get(0),
                created_ms: r.get(1),
                status: r.get(2),
                watch: r.get(3),
                name: r.get(4),
                config_digest: r.get(5),
                body: r.get(6),
                checked_ms: r.get(7),
            })
            .collect();
        out.sort_by(|a, b| {
            b.created_ms
                .cmp(&a.created_ms)
                .then_with(|| b.run_id.cmp(&a.run_id))
        });
        out.dedup_by(|a, b| a.run_id == b.run_id);
        Ok(out)
    }
}

const PLAN_COLUMNS: &str =
    "id, created_at, expires_at, request_digest, content_digest, owner, summary_text, body";

const JOURNAL_COLUMNS: &str = "key, sub, state, holder, lease_until, started_at, updated_at, \
                               run_id, reason, details, attempts";

const KNOWN_COLUMNS: &str =
    "run_id, created_ms, status, watch, name, config_digest, body, checked_ms";

fn plan_row(r: &PgRow) -> Result<PlanRecord, StoreError> {
    let body: &str = r.get(7);
    Ok(PlanRecord {
        id: r.get(0),
        created_at: from_millis(r.get(1)),
        expires_at: from_millis(r.get(2)),
        request_digest: r.get(3),
        content_digest: r.get(4),
        owner: r.get(5),
        summary_text: r.get(6),
        body: serde_json::from_str(body).map_err(json_err("plan body"))?,
    })
}

fn journal_row(r: &PgRow) -> journal::Row {
    journal::Row {
        key: r.get(0),
        sub: r.get(1),
        phase: phase_of(r.get(2)),
        holder: r.get(3),
        lease_until: r.get(4),
        started_at: r.get(5),
        updated_at: r.get(6),
        run_id: r.get(7),
        reason: r.get(8),
        details: r.get(9),
        attempts: r.get(10),
    }
}

async fn insert_audit(c: &impl GenericClient, e: &AuditEvent) -> Result<(), StoreError> {
    let detail = serde_json::to_string(&e.detail).map_err(json_err("audit detail"))?;
    c.execute(
        "INSERT INTO audit (at, pid, actor, action, plan_id, run_id, outcome, detail, subject)
         VALUES (factory_now_ms(), $1, $2, $3, $4, $5, $6, $7, $8)",
        &[
            &i64::from(std::process::id()),
            &e.actor,
            &e.action,
            &e.plan_id,
            &e.run_id,
            &e.outcome,
            &detail,
            &e.subject,
        ],
    )
    .await
    .map_err(pg)?;
    Ok(())
}

fn to_dispatch_claim(c: Claim<(journal::Row, i64)>) -> Result<Claim, StoreError> {
    Ok(match c {
        Claim::Claimed(lease) => Claim::Claimed(lease),
        Claim::Existing((r, now)) => Claim::Existing(dispatch_record(r, now)?),
    })
}

fn to_volume_claim(c: Claim<(journal::Row, i64)>) -> Claim<VolumeRecord> {
    match c {
        Claim::Claimed(lease) => Claim::Claimed(lease),
        Claim::Existing((r, now)) => Claim::Existing(volume_record(r, now)),
    }
}

impl StateStore for PgStore {
    fn local_dir(&self) -> Option<&std::path::Path> {
        None
    }
    fn dispatch_lease(&self) -> Option<Duration> {
        self.dispatch_lease
    }
    fn put_plan<'a>(&'a self, plan: &'a PlanRecord) -> StoreFuture<'a, ()> {
        Box::pin(self.put_plan_(plan))
    }
    fn get_plan<'a>(&'a self, plan_id: &'a str) -> StoreFuture<'a, Option<PlanRecord>> {
        Box::pin(self.get_plan_(plan_id))
    }
    fn plans_by_content_digest<'a>(&'a self, digest: &'a str) -> StoreFuture<'a, Vec<PlanRecord>> {
        Box::pin(self.plans_by_content_digest_(digest))
    }
    fn record_decision<'a>(
        &'a self,
        plan_id: &'a str,
        decision: Decision,
        via: &'a str,
    ) -> StoreFuture<'a, ()> {
        Box::pin(self.record_decision_(plan_id, decision, via, None))
    }
    fn record_decision_as<'a>(
        &'a self,
        plan_id: &'a str,
        decision: Decision,
        via: &'a str,
        subject: Option<&'a str>,
    ) -> StoreFuture<'a, ()> {
        Box::pin(self.record_decision_(plan_id, decision, via, subject))
    }
    fn decision<'a>(&'a self, plan_id: &'a str) -> StoreFuture<'a, Option<DecisionRecord>> {
        Box::pin(self.decision_(plan_id))
    }
    fn use_nonce<'a>(&'a self, nonce: &'a str, expires_at: DateTime<Utc>) -> StoreFuture<'a, bool> {
        Box::pin(self.use_nonce_(nonce, expires_at))
    }
    fn request_state_key(&self) -> StoreFuture<'_, SecretSlice<u8>> {
        Box::pin(self.request_state_key_())
    }
    fn audit<'a>(&'a self, event: &'a AuditEvent) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let client = self.client().await?;
            insert_audit(&client, event).await
        })
    }
    fn audit_entries(&self, limit: usize) -> StoreFuture<'_, Vec<AuditEntry>> {
        Box::pin(self.audit_entries_(limit))
    }
    fn claim_dispatch<'a>(&'a self, plan_id: &'a str, lease: Duration) -> StoreFuture<'a, Claim> {
        Box::pin(
            async move { to_dispatch_claim(self.claim(Kind::Dispatch, plan_id, "", lease).await?) },
        )
    }
    fn take_over<'a>(&'a self, plan_id: &'a str, lease: Duration) -> StoreFuture<'a, Claim> {
        Box::pin(async move {
            to_dispatch_claim(self.take_over(Kind::Dispatch, plan_id, "", lease).await?)
        })
    }
    fn retry_dispatch<'a>(
        &'a self,
        plan_id: &'a str,
        attempt: u32,
        settle: Duration,
        lease: Duration,
    ) -> StoreFuture<'a, Claim> {
        Box::pin(async move {
            to_dispatch_claim(
                self.retry(Kind::Dispatch, plan_id, "", attempt, settle, lease)
                    .await?,
            )
        })
    }
    fn mark_dispatched<'a>(
        &'a self,
        plan_id: &'a str,
        run_id: &'a str,
        details: &'a serde_json::Value,
    ) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let details = serde_json::to_string(details).map_err(json_err("dispatch details"))?;
            self.mark(
                Kind::Dispatch,
                plan_id,
                "",
                Mark::Done {
                    run_id: Some(run_id),
                    details: Some(details),
                },
            )
            .await
        })
    }
    fn mark_unknown<'a>(&'a self, plan_id: &'a str, reason: &'a str) -> StoreFuture<'a, ()> {
        Box::pin(self.mark(Kind::Dispatch, plan_id, "", Mark::Unknown(reason)))
    }
    fn mark_failed<'a>(&'a self, plan_id: &'a str, reason: &'a str) -> StoreFuture<'a, ()> {
        Box::pin(self.mark(Kind::Dispatch, plan_id, "", Mark::Failed(reason)))
    }
    fn dispatch<'a>(&'a self, plan_id: &'a str) -> StoreFuture<'a, Option<DispatchRecord>> {
        Box::pin(self.dispatch_(plan_id))
    }
    fn dispatched_runs(&self) -> StoreFuture<'_, Vec<DispatchRecord>> {
        Box::pin(self.dispatched_runs_())
    }
    fn claim_volume_create<'a>(
        &'a self,
        owner_key: &'a str,
        volume: &'a str,
        lease: Duration,
    ) -> StoreFuture<'a, Claim<VolumeRecord>> {
        Box::pin(async move {
            Ok(to_volume_claim(
                self.claim(Kind::Volume, owner_key, volume, lease).await?,
            ))
        })
    }
    fn retry_volume_create<'a>(
        &'a self,
        owner_key: &'a str,
        volume: &'a str,
        attempt: u32,
        settle: Duration,
        lease: Duration,
    ) -> StoreFuture<'a, Claim<VolumeRecord>> {
        Box::pin(async move {
            Ok(to_volume_claim(
                self.retry(Kind::Volume, owner_key, volume, attempt, settle, lease)
                    .await?,
            ))
        })
    }
    fn mark_volume_created<'a>(
        &'a self,
        owner_key: &'a str,
        volume: &'a str,
    ) -> StoreFuture<'a, ()> {
        Box::pin(self.mark(
            Kind::Volume,
            owner_key,
            volume,
            Mark::Done {
                run_id: None,
                details: None,
            },
        ))
    }
    fn mark_volume_unknown<'a>(
        &'a self,
        owner_key: &'a str,
        volume: &'a str,
        reason: &'a str,
    ) -> StoreFuture<'a, ()> {
        Box::pin(self.mark(Kind::Volume, owner_key, volume, Mark::Unknown(reason)))
    }
    fn mark_volume_failed<'a>(
        &'a self,
        owner_key: &'a str,
        volume: &'a str,
        reason: &'a str,
    ) -> StoreFuture<'a, ()> {
        Box::pin(self.mark(Kind::Volume, owner_key, volume, Mark::Failed(reason)))
    }
    fn put_page_token<'a>(
        &'a self,
        digest: &'a str,
        token: &'a PageTokenRecord,
    ) -> StoreFuture<'a, ()> {
        Box::pin(self.put_page_token_(digest, token))
    }
    fn page_token<'a>(&'a self, digest: &'a str) -> StoreFuture<'a, Option<PageTokenRecord>> {
        Box::pin(self.page_token_(digest))
    }
    fn bind_page_cookie<'a>(
        &'a self,
        digest: &'a str,
        cookie_digest: &'a str,
    ) -> StoreFuture<'a, bool> {
        Box::pin(self.bind_page_cookie_(digest, cookie_digest))
    }
    fn spend_page_token<'a>(&'a self, digest: &'a str) -> StoreFuture<'a, bool> {
        Box::pin(self.spend_page_token_(digest))
    }
    fn previous_related_plan<'a>(
        &'a self,
        plan: &'a PlanRecord,
        config_path: Option<&'a str>,
        run_name: Option<&'a str>,
    ) -> StoreFuture<'a, Option<PlanRecord>> {
        Box::pin(self.previous_related_plan_(plan, config_path, run_name))
    }
    fn known_runs_mark<'a>(&'a self, scope: &'a str) -> StoreFuture<'a, Option<RunsMark>> {
        Box::pin(self.known_runs_mark_(scope))
    }
    fn put_known_runs<'a>(
        &'a self,
        scope: &'a str,
        runs: &'a [KnownRun],
        gone: &'a [String],
        mark: Option<RunsMark>,
    ) -> StoreFuture<'a, ()> {
        Box::pin(self.put_known_runs_(scope, runs, gone, mark))
    }
    fn known_runs<'a>(
        &'a self,
        scope: &'a str,
        query: &'a KnownRunsQuery,
    ) -> StoreFuture<'a, Vec<KnownRun>> {
        Box::pin(self.known_runs_(scope, query))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_password_in_the_url_is_refused_with_where_to_put_it() {
        let e = check_url("postgres://u:hunter2@db:5432/f")
            .unwrap_err()
            .to_string();
        assert!(e.contains("password_file"), "{e}");
        assert!(e.contains("FACTORY_MCP_STATE_PASSWORD"), "{e}");
        assert!(!e.contains("hunter2"), "{e}");
        assert!(check_url("postgres://u@db:5432/f?sslmode=require").is_ok());
        assert!(check_url("mysql://u@db/f").is_err());
        assert!(check_url("postgres://u@db/f?password=hunter2").is_err());
    }

    #[test]
    fn options_never_show_the_password() {
        let o = PgOptions::new("postgres://u@h/d", Some(SecretString::from("hunter2")));
        assert!(!format!("{o:?}").contains("hunter2"));
    }

    #[test]
    fn the_tls_connector_builds_on_ring() {
        assert!(tls_connector().is_ok());
    }
}
