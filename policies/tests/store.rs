//! The state store in one process: plans, decisions, the dispatch and volume journals,
//! nonces, the audit log and the request-state key; racing threads on separate connections.

use std::os::unix::fs::PermissionsExt;
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::Duration;

use factory_policies::store::{
    AuditEvent, Claim, DB_FILE, Decision, DispatchState, KEY_FILE, PlanRecord, Store, StoreError,
    Utc, VolumeState,
};
use secrecy::ExposeSecret;
use serde_json::json;

const LONG: Duration = Duration::from_secs(600);

fn plan(id: &str, content_digest: &str) -> PlanRecord {
    let now = Utc::now();
    PlanRecord {
        id: id.to_owned(),
        created_at: now,
        expires_at: now + Duration::from_secs(3600),
        request_digest: format!("req-{id}"),
        content_digest: content_digest.to_owned(),
        owner: Some("team_1".to_owned()),
        summary_text: format!("Launch {id}: 8 x H100 at $20.00/h"),
        body: json!({ "model": "Qwen/Qwen3-4B", "gpus": 8, "secrets": ["WANDB_API_KEY"] }),
    }
}

fn store() -> (tempfile::TempDir, Store) {
    let tmp = tempfile::tempdir().unwrap();
    let store = Store::open(&tmp.path().join("state")).unwrap();
    (tmp, store)
}

fn mode(path: &std::path::Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[test]
fn a_plan_comes_back_as_stored_and_cannot_be_replaced() {
    let (_tmp, store) = store();
    let p = plan("plan_a", "content-1");
    store.put_plan(&p).unwrap();
    let back = store.get_plan("plan_a").unwrap().unwrap();
    // Times are kept to the millisecond.
    assert_eq!(
        back.created_at.timestamp_millis(),
        p.created_at.timestamp_millis()
    );
    assert_eq!(
        back.expires_at.timestamp_millis(),
        p.expires_at.timestamp_millis()
    );
    assert_eq!(back.body, p.body);
    assert_eq!(back.summary_text, p.summary_text);
    assert_eq!(back.owner.as_deref(), Some("team_1"));

    let mut other = plan("plan_a", "content-2");
    other.summary_text = "something else".into();
    let err = store.put_plan(&other).unwrap_err();
    assert!(
        matches!(err, StoreError::DuplicatePlan(ref id) if id == "plan_a"),
        "{err}"
    );
    assert_eq!(
        store.get_plan("plan_a").unwrap().unwrap().content_digest,
        "content-1"
    );
    assert!(store.get_plan("plan_missing").unwrap().is_none());
}

#[test]
fn plans_are_found_by_content_digest_oldest_first() {
    let (_tmp, store) = store();
    let mut first = plan("plan_2", "same");
    first.created_at = Utc::now() - Duration::from_secs(60);
    store.put_plan(&plan("plan_1", "same")).unwrap();
    store.put_plan(&first).unwrap();
    store.put_plan(&plan("plan_3", "different")).unwrap();
    let ids: Vec<_> = store
        .plans_by_content_digest("same")
        .unwrap()
        .into_iter()
        .map(|p| p.id)
        .collect();
    assert_eq!(ids, ["plan_2", "plan_1"]);
    assert!(store.plans_by_content_digest("none").unwrap().is_empty());
}

#[test]
fn the_default_dir_follows_xdg_then_home() {
    let env = |vars: &'static [(&'static str, &'static str)]| {
        move |k: &str| {
            vars.iter()
                .find(|(name, _)| *name == k)
                .map(|(_, v)| v.to_string())
        }
    };
    let both = env(&[("XDG_STATE_HOME", "/x/state"), ("HOME", "/home/u")]);
    assert_eq!(
        Store::default_dir(&both).unwrap(),
        std::path::Path::new("/x/state/factory-mcp")
    );
    let home = env(&[("HOME", "/home/u")]);
    assert_eq!(
        Store::default_dir(&home).unwrap(),
        std::path::Path::new("/home/u/.local/state/factory-mcp")
    );
    // A relative XDG_STATE_HOME is invalid per the spec and ignored.
    let relative = env(&[("XDG_STATE_HOME", "rel"), ("HOME", "/home/u")]);
    assert_eq!(
        Store::default_dir(&relative).unwrap(),
        std::path::Path::new("/home/u/.local/state/factory-mcp")
    );
    assert!(Store::default_dir(&env(&[])).is_none());
}

#[test]
fn the_state_dir_and_database_are_private_and_in_wal_mode() {
    let (tmp, store) = store();
    let dir = tmp.path().join("state");
    assert_eq!(store.dir(), dir);
    assert_eq!(mode(&dir), 0o700);
    assert_eq!(mode(&dir.join(DB_FILE)), 0o600);
    let raw = rusqlite::Connection::open(dir.join(DB_FILE)).unwrap();
    let journal: String = raw
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .unwrap();
    assert_eq!(journal, "wal");
    let version: i64 = raw
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    // Version 2 added the approval page's tokens, version 3 the run-list cache, version 4 the
    // audit log's subject.
    assert_eq!(version, 4);
    store.check_integrity().unwrap();
}

#[test]
fn state_survives_reopening() {
    let tmp = tempfile::tempdir().unwrap();
    {
        let store = Store::open(tmp.path()).unwrap();
        store.put_plan(&plan("plan_keep", "c")).unwrap();
        assert!(
            store
                .claim_dispatch("plan_keep", LONG)
                .unwrap()
                .is_claimed()
        );
        store
            .mark_dispatched("plan_keep", "run_9", &json!({"usd_per_hour": 20.0}))
            .unwrap();
    }
    let store = Store::open(tmp.path()).unwrap();
    assert!(store.get_plan("plan_keep").unwrap().is_some());
    match store.claim_dispatch("plan_keep", LONG).unwrap() {
        Claim::Existing(r) => assert!(
            matches!(r.state, DispatchState::Dispatched { ref run_id, .. } if run_id == "run_9")
        ),
        Claim::Claimed(_) => panic!("a dispatched plan was claimed again after reopening"),
    }
}

#[test]
fn a_database_from_a_newer_version_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    drop(Store::open(tmp.path()).unwrap());
    let raw = rusqlite::Connection::open(tmp.path().join(DB_FILE)).unwrap();
    raw.execute_batch("PRAGMA user_version = 99").unwrap();
    drop(raw);
    let err = Store::open(tmp.path()).unwrap_err();
    assert!(
        matches!(err, StoreError::NewerSchema { found: 99, .. }),
        "{err}"
    );
    assert!(err.to_string().contains("upgrade factory-mcp"), "{err}");
}

#[test]
fn a_damaged_database_is_reported_with_what_to_do() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join(DB_FILE), vec![0x5a; 8192]).unwrap();
    let err = Store::open(tmp.path()).unwrap_err();
    assert!(matches!(err, StoreError::Corrupt { .. }), "{err:?}");
    let text = err.to_string();
    assert!(text.contains("move it aside"), "{text}");
    assert!(text.contains(DB_FILE), "{text}");
}

#[test]
fn a_decision_needs_a_plan_and_the_latest_one_wins_with_every_one_audited() {
    let (_tmp, store) = store();
    let err = store
        .record_decision("plan_nope", Decision::Approved, "terminal")
        .unwrap_err();
    assert!(matches!(err, StoreError::UnknownPlan(_)), "{err}");
    assert!(
        store.audit_entries(10).unwrap().is_empty(),
        "a failed decision left an audit entry"
    );

    store.put_plan(&plan("plan_d", "c")).unwrap();
    assert!(store.decision("plan_d").unwrap().is_none());
    store
        .record_decision("plan_d", Decision::Refused, "terminal")
        .unwrap();
    assert_eq!(
        store.decision("plan_d").unwrap().unwrap().decision,
        Decision::Refused
    );
    store
        .record_decision("plan_d", Decision::Approved, "elicitation")
        .unwrap();
    let d = store.decision("plan_d").unwrap().unwrap();
    assert_eq!(d.decision, Decision::Approved);
    assert_eq!(d.via, "elicitation");
    assert_eq!(d.request_digest, "req-plan_d");

    let audit = store.audit_entries(10).unwrap();
    let outcomes: Vec<_> = audit
        .iter()
        .map(|e| (e.event.actor.as_str(), e.event.outcome.as_str()))
        .collect();
    assert_eq!(
        outcomes,
        [("terminal", "refused"), ("elicitation", "approved")]
    );
    assert!(
        audit
            .iter()
            .all(|e| e.event.plan_id.as_deref() == Some("plan_d"))
    );
    assert_eq!(audit[0].pid, std::process::id());
}

#[test]
fn threads_racing_to_claim_one_plan_get_exactly_one_claim() {
    let tmp = tempfile::tempdir().unwrap();
    Store::open(tmp.path())
        .unwrap()
        .put_plan(&plan("plan_race", "c"))
        .unwrap();
    const N: usize = 12;
    let barrier = Arc::new(Barrier::new(N));
    let handles: Vec<_> = (0..N)
        .map(|_| {
            let dir = tmp.path().to_path_buf();
            let barrier = barrier.clone();
            thread::spawn(move || {
                // One connection per thread, as separate sessions would have.
                let store = Store::open(&dir).unwrap();
                barrier.wait();
                store.claim_dispatch("plan_race", LONG).unwrap()
            })
        })
        .collect();
    let claims: Vec<Claim> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    assert_eq!(
        claims.iter().filter(|c| c.is_claimed()).count(),
        1,
        "{claims:?}"
    );
    for c in &claims {
        if let Claim::Existing(r) = c {
            assert!(
                matches!(
                    r.state,
                    DispatchState::Dispatching {
                        lease_expired: false,
                        ..
                    }
                ),
                "{r:?}"
            );
        }
    }
}

#[test]
fn a_shared_store_serialises_claims_too() {
    let (_tmp, store) = store();
    let store = Arc::new(store);
    let barrier = Arc::new(Barrier::new(8));
    let handles: Vec<_> = (0..8)
        .map(|_| {
            let (store, barrier) = (store.clone(), barrier.clone());
            thread::spawn(move || {
                barrier.wait();
                store
                    .claim_dispatch("plan_shared", LONG)
                    .unwrap()
                    .is_claimed()
            })
        })
        .collect();
    let claims = handles.into_iter().map(|h| h.join().unwrap());
    assert_eq!(claims.filter(|claimed| *claimed).count(), 1);
}

#[test]
fn a_dispatched_plan_returns_its_run_and_cannot_be_downgraded() {
    let (_tmp, store) = store();
    let Claim::Claimed(lease) = store.claim_dispatch("plan_x", LONG).unwrap() else {
        panic!("first claim refused");
    };
    assert_eq!(lease.holder, factory_policies::store::holder_id());
    store
        .mark_dispatched("plan_x", "run_1", &json!({"usd_per_hour": 12.5}))
        .unwrap();
    // Recording the same run again is harmless; a different one would lose a run.
    store
        .mark_dispatched("plan_x", "run_1", &json!({}))
        .unwrap();
    let err = store
        .mark_dispatched("plan_x", "run_2", &json!({}))
        .unwrap_err();
    assert!(matches!(err, StoreError::Settled { .. }), "{err}");
    assert!(err.to_string().contains("run_1"), "{err}");
    assert!(matches!(
        store.mark_unknown("plan_x", "timeout"),
        Err(StoreError::Settled { .. })
    ));
    assert!(matches!(
        store.mark_failed("plan_x", "400"),
        Err(StoreError::Settled { .. })
    ));

    match store.claim_dispatch("plan_x", LONG).unwrap() {
        Claim::Existing(r) => match r.state {
            DispatchState::Dispatched { run_id, details } => {
                assert_eq!(run_id, "run_1");
                assert_eq!(details, json!({"usd_per_hour": 12.5}));
            }
            other => panic!("{other:?}"),
        },
        Claim::Claimed(_) => panic!("a dispatched plan was claimed again"),
    }
    let runs = store.dispatched_runs().unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].plan_id, "plan_x");
    assert!(store.unsettled_dispatches().unwrap().is_empty());
}

#[test]
fn after_a_definite_failure_the_plan_can_be_dispatched_again() {
    let (_tmp, store) = store();
    assert!(store.claim_dispatch("plan_f", LONG).unwrap().is_claimed());
    store.mark_failed("plan_f", "422 invalid config").unwrap();
    match store.dispatch("plan_f").unwrap().unwrap().state {
        DispatchState::Failed { reason } => assert_eq!(reason, "422 invalid config"),
        other => panic!("{other:?}"),
    }
    assert!(store.claim_dispatch("plan_f", LONG).unwrap().is_claimed());
    let r = store.dispatch("plan_f").unwrap().unwrap();
    assert_eq!(r.attempts, 2);
    assert!(matches!(r.state, DispatchState::Dispatching { .. }));
    // ...but only once: the re-claim is itself exclusive.
    assert!(!store.claim_dispatch("plan_f", LONG).unwrap().is_claimed());
}

#[test]
fn an_unknown_outcome_blocks_new_claims_until_reconciled() {
    let (_tmp, store) = store();
    assert!(store.claim_dispatch("plan_u", LONG).unwrap().is_claimed());
    store.mark_unknown("plan_u", "timeout after POST").unwrap();
    match store.claim_dispatch("plan_u", LONG).unwrap() {
        Claim::Existing(r) => {
            assert!(
                matches!(r.state, DispatchState::Unknown { ref reason } if reason == "timeout after POST")
            )
        }
        Claim::Claimed(_) => panic!("an unknown dispatch was claimed again without reconciling"),
    }
    assert_eq!(store.unsettled_dispatches().unwrap().len(), 1);
    // Reconciliation found the run.
    store
        .mark_dispatched("plan_u", "run_found", &json!({}))
        .unwrap();
    assert!(store.unsettled_dispatches().unwrap().is_empty());
    assert_eq!(store.dispatched_runs().unwrap()[0].plan_id, "plan_u");
}

#[test]
fn marking_a_plan_never_claimed_is_an_error() {
    let (_tmp, store) = store();
    let err = store
        .mark_dispatched("plan_none", "run", &json!({}))
        .unwrap_err();
    assert!(matches!(err, StoreError::NotClaimed { .. }), "{err}");
    assert!(matches!(
        store.take_over("plan_none", LONG),
        Err(StoreError::NotClaimed { .. })
    ));
}

#[test]
fn take_over_needs_an_expired_lease_and_succeeds_once() {
    let (_tmp, store) = store();
    assert!(
        store
            .claim_dispatch("plan_t", Duration::from_millis(300))
            .unwrap()
            .is_claimed()
    );
    // A live lease is not taken over.
    match store.take_over("plan_t", LONG).unwrap() {
        Claim::Existing(r) => {
            assert!(matches!(
                r.state,
                DispatchState::Dispatching {
                    lease_expired: false,
                    ..
                }
            ))
        }
        Claim::Claimed(_) => panic!("a live lease was taken over"),
    }
    thread::sleep(Duration::from_millis(400));
    match store.claim_dispatch("plan_t", LONG).unwrap() {
        Claim::Existing(r) => {
            assert!(
                matches!(
                    r.state,
                    DispatchState::Dispatching {
                        lease_expired: true,
                        ..
                    }
                ),
                "{r:?}"
            )
        }
        Claim::Claimed(_) => panic!("an expired dispatch was silently re-claimed"),
    }
    let store = Arc::new(store);
    let barrier = Arc::new(Barrier::new(8));
    let handles: Vec<_> = (0..8)
        .map(|_| {
            let (store, barrier) = (store.clone(), barrier.clone());
            thread::spawn(move || {
                barrier.wait();
                store.take_over("plan_t", LONG).unwrap().is_claimed()
            })
        })
        .collect();
    let wins = handles
        .into_iter()
        .map(|h| h.join().unwrap())
        .filter(|w| *w)
        .count();
    assert_eq!(wins, 1);
    store
        .mark_dispatched("plan_t", "run_t", &json!({}))
        .unwrap();
    assert!(!store.take_over("plan_t", LONG).unwrap().is_claimed());
}

#[test]
fn a_volume_is_created_at_most_once() {
    let (_tmp, store) = store();
    assert!(
        store
            .claim_volume_create("team_1", "data", LONG)
            .unwrap()
            .is_claimed()
    );
    match store.claim_volume_create("team_1", "data", LONG).unwrap() {
        Claim::Existing(r) => {
            assert!(matches!(r.state, VolumeState::Creating { .. }));
            assert_eq!(
                (r.owner_key.as_str(), r.volume.as_str()),
                ("team_1", "data")
            );
        }
        Claim::Claimed(_) => panic!("volume claimed twice"),
    }
    // Another owner's volume of the same name is a different volume.
    assert!(
        store
            .claim_volume_create("personal", "data", LONG)
            .unwrap()
            .is_claimed()
    );
    // The volume journal is apart from the dispatch journal.
    assert!(store.dispatch("team_1").unwrap().is_none());

    store.mark_volume_created("team_1", "data").unwrap();
    assert!(matches!(
        store.claim_volume_create("team_1", "data", LONG).unwrap(),
        Claim::Existing(r) if r.state == VolumeState::Created
    ));
    store
        .mark_volume_unknown("personal", "data", "reset")
        .unwrap();
    assert!(
        !store
            .claim_volume_create("personal", "data", LONG)
            .unwrap()
            .is_claimed()
    );
    store
        .mark_volume_failed("personal", "data", "nothing there after all")
        .unwrap();
    assert!(
        store
            .claim_volume_create("personal", "data", LONG)
            .unwrap()
            .is_claimed()
    );
    assert!(matches!(
        store
            .volume_create("personal", "data")
            .unwrap()
            .unwrap()
            .state,
        VolumeState::Creating { .. }
    ));
}

#[test]
fn a_nonce_is_good_once() {
    let (_tmp, store) = store();
    let later = Utc::now() + Duration::from_secs(600);
    assert!(store.use_nonce("n1", later).unwrap());
    assert!(!store.use_nonce("n1", later).unwrap());
    assert!(store.use_nonce("n2", later).unwrap());
    // An expired nonce is never accepted, even the first time.
    assert!(
        !store
            .use_nonce("n3", Utc::now() - Duration::from_secs(1))
            .unwrap()
    );
}

#[test]
fn a_nonce_used_after_it_expires_and_is_pruned_is_still_refused() {
    let (_tmp, store) = store();
    let soon = Utc::now() + Duration::from_millis(200);
    assert!(store.use_nonce("n", soon).unwrap());
    thread::sleep(Duration::from_millis(300));
    // This prunes the expired row; the nonce must not come back to life.
    assert!(store.use_nonce("other", Utc::now() + LONG).unwrap());
    assert!(!store.use_nonce("n", soon).unwrap());
}

#[test]
fn threads_racing_one_nonce_get_one_true() {
    let tmp = tempfile::tempdir().unwrap();
    drop(Store::open(tmp.path()).unwrap());
    let barrier = Arc::new(Barrier::new(10));
    let later = Utc::now() + LONG;
    let handles: Vec<_> = (0..10)
        .map(|_| {
            let dir = tmp.path().to_path_buf();
            let barrier = barrier.clone();
            thread::spawn(move || {
                let store = Store::open(&dir).unwrap();
                barrier.wait();
                store.use_nonce("shared", later).unwrap()
            })
        })
        .collect();
    let trues = handles
        .into_iter()
        .map(|h| h.join().unwrap())
        .filter(|t| *t)
        .count();
    assert_eq!(trues, 1);
}

#[test]
fn the_audit_log_is_append_only_and_read_newest_last() {
    let (tmp, store) = store();
    for i in 0..5 {
        store
            .audit(
                &AuditEvent::new("launch_run", "dispatch", "dispatched")
                    .plan(&format!("plan_{i}"))
                    .run(&format!("run_{i}"))
                    .detail(json!({ "i": i })),
            )
            .unwrap();
    }
    let last3 = store.audit_entries(3).unwrap();
    let plans: Vec<_> = last3
        .iter()
        .map(|e| e.event.plan_id.clone().unwrap())
        .collect();
    assert_eq!(plans, ["plan_2", "plan_3", "plan_4"]);
    assert!(last3.windows(2).all(|w| w[0].seq < w[1].seq));
    assert_eq!(last3[2].event.detail, json!({ "i": 4 }));
    assert_eq!(last3[2].event.run_id.as_deref(), Some("run_4"));

    let raw = rusqlite::Connection::open(tmp.path().join("state").join(DB_FILE)).unwrap();
    let update = raw.execute("UPDATE audit SET outcome = 'forged'", []);
    assert!(update.unwrap_err().to_string().contains("append-only"));
    assert!(raw.execute("DELETE FROM audit", []).is_err());
    assert_eq!(store.audit_entries(100).unwrap().len(), 5);
}

#[test]
fn the_request_state_key_is_made_once_private_and_stable() {
    let (tmp, store) = store();
    let key = store.request_state_key().unwrap();
    assert_eq!(key.expose_secret().len(), 32);
    let path = tmp.path().join("state").join(KEY_FILE);
    assert_eq!(mode(&path), 0o600);
    let again = Store::open(store.dir())
        .unwrap()
        .request_state_key()
        .unwrap();
    assert_eq!(key.expose_secret(), again.expose_secret());
    assert_ne!(key.expose_secret(), &[0u8; 32][..]);
    // No temporary file is left behind, and the key is not in the database.
    let names: Vec<_> = std::fs::read_dir(store.dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert!(names.iter().all(|n| !n.ends_with(".tmp")), "{names:?}");
    let db = std::fs::read(store.db_path()).unwrap();
    assert!(!db.windows(32).any(|w| w == key.expose_secret()));
}

#[test]
fn a_key_file_others_can_read_is_refused_with_the_fix() {
    let (_tmp, store) = store();
    store.request_state_key().unwrap();
    let path = store.dir().join(KEY_FILE);
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    let err = store.request_state_key().unwrap_err();
    assert!(
        matches!(err, StoreError::KeyPermissions { mode: 0o644, .. }),
        "{err}"
    );
    assert!(err.to_string().contains("chmod 600"), "{err}");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    store.request_state_key().unwrap();
}

#[test]
fn a_truncated_key_file_is_refused() {
    let (_tmp, store) = store();
    let path = store.dir().join(KEY_FILE);
    std::fs::write(&path, [1u8; 16]).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    let err = store.request_state_key().unwrap_err();
    assert!(
        matches!(err, StoreError::KeyCorrupt { len: 16, .. }),
        "{err}"
    );
}

#[test]
fn threads_creating_the_key_at_once_all_get_the_same_key() {
    let tmp = tempfile::tempdir().unwrap();
    drop(Store::open(tmp.path()).unwrap());
    let barrier = Arc::new(Barrier::new(8));
    let handles: Vec<_> = (0..8)
        .map(|_| {
            let dir = tmp.path().to_path_buf();
            let barrier = barrier.clone();
            thread::spawn(move || {
                let store = Store::open(&dir).unwrap();
                barrier.wait();
                store.request_state_key().unwrap().expose_secret().to_vec()
            })
        })
        .collect();
    let keys: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    assert!(keys.windows(2).all(|w| w[0] == w[1]));
    assert_eq!(keys[0], std::fs::read(tmp.path().join(KEY_FILE)).unwrap());
}
