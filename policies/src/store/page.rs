//! The approval page's tokens: single-use, bound to one plan, its request digest and an
//! expiry, stored by their SHA-256 digest only. Also the lookup of the plan a page compares
//! with (the most recent earlier plan of the same config file or run name).

use chrono::{DateTime, Utc};
use rusqlite::{OptionalExtension, params};
use sha2::{Digest, Sha256};

use super::{
    PLAN_COLUMNS, PlanRecord, Store, StoreError, finish_plan, from_millis, now_millis, plan_row,
    to_millis,
};

/// One page token as stored (the token itself is never stored).
#[derive(Debug, Clone, PartialEq)]
pub struct PageTokenRecord {
    pub plan_id: String,
    /// The plan's request digest when the token was made.
    pub request_digest: String,
    pub created_at: DateTime<Utc>,
    pub expires_at: DateTime<Utc>,
    /// When a decision used it; a used token is dead.
    pub used_at: Option<DateTime<Utc>>,
    /// Digest of the SameSite cookie the page set when it was shown.
    pub cookie_digest: Option<String>,
}

/// A new page token or cookie: 32 bytes from the operating system's CSPRNG (through `rand`'s
/// thread generator, a ChaCha CSPRNG seeded and reseeded from the OS), hex.
pub fn new_page_secret() -> String {
    hex::encode(rand::random::<[u8; 32]>())
}

/// The digest under which a token (or a page cookie) is stored and looked up.
pub fn secret_digest(secret: &str) -> String {
    hex::encode(Sha256::digest(secret.as_bytes()))
}

impl Store {
    /// Store a new page token under its digest.
    pub fn put_page_token(&self, digest: &str, t: &PageTokenRecord) -> Result<(), StoreError> {
        self.write(|tx| {
            tx.execute(
                "INSERT INTO page_tokens (token_digest, plan_id, request_digest, created_at,
                                          expires_at, used_at, cookie_digest)
                 VALUES (?1, ?2, ?3, ?4, ?5, NULL, NULL)",
                params![
                    digest,
                    t.plan_id,
                    t.request_digest,
                    to_millis(t.created_at),
                    to_millis(t.expires_at)
                ],
            )?;
            Ok(())
        })
    }

    /// The token stored under this digest.
    pub fn page_token(&self, digest: &str) -> Result<Option<PageTokenRecord>, StoreError> {
        self.read(|tx| {
            Ok(tx
                .query_row(
                    "SELECT plan_id, request_digest, created_at, expires_at, used_at, cookie_digest
                     FROM page_tokens WHERE token_digest = ?1",
                    [digest],
                    |r| {
                        Ok(PageTokenRecord {
                            plan_id: r.get(0)?,
                            request_digest: r.get(1)?,
                            created_at: from_millis(r.get(2)?),
                            expires_at: from_millis(r.get(3)?),
                            used_at: r.get::<_, Option<i64>>(4)?.map(from_millis),
                            cookie_digest: r.get(5)?,
                        })
                    },
                )
                .optional()?)
        })
    }

    /// Bind the page's cookie to an unused token (the latest showing wins).
    pub fn bind_page_cookie(&self, digest: &str, cookie_digest: &str) -> Result<bool, StoreError> {
        self.write(|tx| {
            Ok(tx.execute(
                "UPDATE page_tokens SET cookie_digest = ?2
                 WHERE token_digest = ?1 AND used_at IS NULL",
                params![digest, cookie_digest],
            )? == 1)
        })
    }

    /// Use a token: `true` the first time only (and only before its expiry).
    pub fn spend_page_token(&self, digest: &str) -> Result<bool, StoreError> {
        let now = now_millis();
        self.write(|tx| {
            Ok(tx.execute(
                "UPDATE page_tokens SET used_at = ?2
                 WHERE token_digest = ?1 AND used_at IS NULL AND expires_at > ?2",
                params![digest, now],
            )? == 1)
        })
    }

    /// The most recent plan made before `plan` with the same config file or the same run name
    /// (what the page shows the difference from).
    pub fn previous_related_plan(
        &self,
        plan: &PlanRecord,
        config_path: Option<&str>,
        run_name: Option<&str>,
    ) -> Result<Option<PlanRecord>, StoreError> {
        if config_path.is_none() && run_name.is_none() {
            return Ok(None);
        }
        self.read(|tx| {
            tx.query_row(
                &format!(
                    "SELECT {PLAN_COLUMNS} FROM plans
                     WHERE id <> ?1 AND created_at <= ?2
                       AND ((?3 IS NOT NULL AND json_extract(body, '$.config_path') = ?3)
                         OR (?4 IS NOT NULL AND json_extract(body, '$.run_name') = ?4))
                     ORDER BY created_at DESC, id DESC LIMIT 1"
                ),
                params![plan.id, to_millis(plan.created_at), config_path, run_name],
                plan_row,
            )
            .optional()?
            .map(finish_plan)
            .transpose()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Duration;

    fn plan(id: &str, at: DateTime<Utc>, path: &str, name: &str) -> PlanRecord {
        PlanRecord {
            id: id.into(),
            created_at: at,
            expires_at: at + Duration::minutes(30),
            request_digest: format!("r-{id}"),
            content_digest: "c".into(),
            owner: None,
            summary_text: String::new(),
            body: serde_json::json!({"config_path": path, "run_name": name}),
        }
    }

    #[test]
    fn a_page_token_is_spent_once_and_found_only_by_its_digest() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let now = Utc::now();
        store.put_plan(&plan("plan_a", now, "a.toml", "a")).unwrap();
        let t = PageTokenRecord {
            plan_id: "plan_a".into(),
            request_digest: "r-plan_a".into(),
            created_at: now,
            expires_at: now + Duration::minutes(5),
            used_at: None,
            cookie_digest: None,
        };
        let d = secret_digest("tok");
        store.put_page_token(&d, &t).unwrap();
        assert!(store.page_token(&secret_digest("other")).unwrap().is_none());
        assert_eq!(store.page_token(&d).unwrap().unwrap().plan_id, "plan_a");
        assert!(store.bind_page_cookie(&d, "cookie").unwrap());
        assert!(store.spend_page_token(&d).unwrap());
        assert!(!store.spend_page_token(&d).unwrap(), "a second use");
        assert!(!store.bind_page_cookie(&d, "again").unwrap());
        assert!(store.page_token(&d).unwrap().unwrap().used_at.is_some());
        // An expired token cannot be spent.
        let mut old = t.clone();
        old.expires_at = now - Duration::seconds(1);
        let d2 = secret_digest("old");
        store.put_page_token(&d2, &old).unwrap();
        assert!(!store.spend_page_token(&d2).unwrap());
    }

    #[test]
    fn the_previous_plan_is_the_latest_earlier_one_of_the_same_file_or_name() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let t0 = Utc::now() - Duration::minutes(10);
        store.put_plan(&plan("plan_1", t0, "a.toml", "x")).unwrap();
        store
            .put_plan(&plan("plan_2", t0 + Duration::minutes(1), "b.toml", "y"))
            .unwrap();
        store
            .put_plan(&plan("plan_3", t0 + Duration::minutes(2), "c.toml", "x"))
            .unwrap();
        let now = plan("plan_4", t0 + Duration::minutes(3), "a.toml", "z");
        store.put_plan(&now).unwrap();
        let prev = |p: &PlanRecord, path: &str, name: &str| {
            store
                .previous_related_plan(p, Some(path), Some(name))
                .unwrap()
                .map(|p| p.id)
        };
        assert_eq!(prev(&now, "a.toml", "z").as_deref(), Some("plan_1"));
        assert_eq!(prev(&now, "q.toml", "x").as_deref(), Some("plan_3"));
        assert_eq!(prev(&now, "q.toml", "q"), None);
    }
}
