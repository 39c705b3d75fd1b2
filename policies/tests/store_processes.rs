//! The state store across processes: racing claims and nonces, the key made by several
//! processes at once, a lease lost to a take-over, and processes SIGKILLed mid-dispatch and
//! mid-transaction.
//!
//! Children are this test binary run again with `STORE_CHILD` set, filtered to the
//! `child_entry` test; they say `READY`, wait for `go` on stdin (so that they start together),
//! and print `RESULT <answer>`.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use factory_policies::store::{Claim, DB_FILE, DispatchState, Store, StoreError, Utc};
use secrecy::ExposeSecret;
use serde_json::json;
use sha2::{Digest, Sha256};

const LONG: Duration = Duration::from_secs(600);
/// The lease a child takes before it is killed.
const CHILD_LEASE: Duration = Duration::from_millis(2000);

/// What a child does, once told to go. Arguments come from `STORE_CHILD_ARG`.
fn child_main(role: &str, dir: &Path, arg: &str) -> String {
    let store = Store::open(dir).unwrap();
    match role {
        "claim" => match store.claim_dispatch(arg, LONG).unwrap() {
            Claim::Claimed(_) => "claimed".into(),
            Claim::Existing(_) => "existing".into(),
        },
        "nonce" => store.use_nonce(arg, Utc::now() + LONG).unwrap().to_string(),
        "key" => hex::encode(Sha256::digest(
            store.request_state_key().unwrap().expose_secret(),
        )),
        "take_over" => match store.take_over(arg, LONG).unwrap() {
            Claim::Claimed(_) => "claimed".into(),
            Claim::Existing(_) => "existing".into(),
        },
        // Claim with a short lease, then hang until killed.
        "claim_and_hang" => {
            assert!(store.claim_dispatch(arg, CHILD_LEASE).unwrap().is_claimed());
            println!("RESULT claimed");
            hang()
        }
        // Open a write transaction that journals a claim and never commits.
        "hang_in_transaction" => {
            let mut raw = rusqlite::Connection::open(dir.join(DB_FILE)).unwrap();
            let tx = raw
                .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
                .unwrap();
            tx.execute(
                "INSERT INTO journal (kind, key, sub, state, holder, lease_until, started_at,
                                      updated_at, attempts)
                 VALUES ('dispatch', ?1, '', 'dispatching', 'ghost', 0, 0, 0, 1)",
                [arg],
            )
            .unwrap();
            tx.execute(
                "INSERT INTO audit (at, pid, actor, action, outcome, detail)
                 VALUES (0, 0, 'ghost', 'dispatch', 'dispatching', 'null')",
                [],
            )
            .unwrap();
            println!("RESULT in_transaction");
            hang()
        }
        // Dispatch plan after plan as fast as possible until killed.
        "dispatch_forever" => {
            println!("RESULT started");
            for i in 0.. {
                let plan = format!("{arg}_{i}");
                assert!(store.claim_dispatch(&plan, LONG).unwrap().is_claimed());
                store
                    .mark_dispatched(&plan, &format!("run_{plan}"), &json!({ "i": i }))
                    .unwrap();
            }
            unreachable!()
        }
        other => panic!("unknown child role {other}"),
    }
}

fn hang() -> ! {
    loop {
        std::thread::sleep(Duration::from_secs(60));
    }
}

#[test]
fn child_entry() {
    let Ok(role) = std::env::var("STORE_CHILD") else {
        return; // An ordinary test run: nothing to do.
    };
    let dir = std::env::var("STORE_CHILD_DIR").unwrap();
    let arg = std::env::var("STORE_CHILD_ARG").unwrap_or_default();
    // Open the store before saying READY so that the race is over the call, not the open.
    drop(Store::open(Path::new(&dir)).unwrap());
    println!("READY");
    let mut line = String::new();
    std::io::stdin().read_line(&mut line).unwrap();
    let answer = child_main(&role, Path::new(&dir), &arg);
    println!("RESULT {answer}");
}

/// How long a child may take to say anything before the test fails instead of hanging.
const CHILD_SILENCE: Duration = Duration::from_secs(60);

struct Kid {
    child: Child,
    lines: mpsc::Receiver<String>,
}

impl Kid {
    fn spawn(role: &str, dir: &Path, arg: &str) -> Kid {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "child_entry", "--nocapture", "--test-threads=1"])
            .env("STORE_CHILD", role)
            .env("STORE_CHILD_DIR", dir)
            .env("STORE_CHILD_ARG", arg)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let out = BufReader::new(child.stdout.take().unwrap());
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in out.lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut kid = Kid { child, lines };
        kid.wait_for("READY");
        kid
    }

    /// Read stdout until a line holding `marker`; return the rest of that line.
    fn wait_for(&mut self, marker: &str) -> String {
        loop {
            let line = match self.lines.recv_timeout(CHILD_SILENCE) {
                Ok(line) => line,
                Err(e) => panic!("child gave no {marker}: {e:?}"),
            };
            // libtest prints "test child_entry ... " before the marker on the same line.
            if let Some(at) = line.find(marker) {
                return line[at + marker.len()..].trim().to_owned();
            }
        }
    }

    fn go(&mut self) {
        let stdin = self.child.stdin.as_mut().unwrap();
        stdin.write_all(b"go\n").unwrap();
        stdin.flush().unwrap();
    }

    fn result(&mut self) -> String {
        self.wait_for("RESULT")
    }

    /// SIGKILL: no destructors, no rollback, no unlock by the process itself.
    fn kill(mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }

    fn finish(mut self) -> String {
        let answer = self.result();
        assert!(self.child.wait().unwrap().success());
        answer
    }
}

impl Drop for Kid {
    /// A failing test must not leave children behind.
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Spawn `n` children, wait until all are ready, release them together, collect answers.
fn race(n: usize, role: &str, dir: &Path, arg: &str) -> Vec<String> {
    let mut kids: Vec<Kid> = (0..n).map(|_| Kid::spawn(role, dir, arg)).collect();
    for kid in &mut kids {
        kid.go();
    }
    kids.into_iter().map(Kid::finish).collect()
}

fn fresh() -> (tempfile::TempDir, std::path::PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("state");
    drop(Store::open(&dir).unwrap());
    (tmp, dir)
}

#[test]
fn processes_racing_to_claim_one_plan_get_exactly_one_claim() {
    let (_tmp, dir) = fresh();
    let answers = race(6, "claim", &dir, "plan_p");
    assert_eq!(
        answers.iter().filter(|a| *a == "claimed").count(),
        1,
        "{answers:?}"
    );
    assert_eq!(
        answers.iter().filter(|a| *a == "existing").count(),
        5,
        "{answers:?}"
    );
    let store = Store::open(&dir).unwrap();
    assert_eq!(store.dispatch("plan_p").unwrap().unwrap().attempts, 1);
}

#[test]
fn processes_racing_one_nonce_get_one_true_and_a_later_use_is_refused() {
    let (_tmp, dir) = fresh();
    let answers = race(6, "nonce", &dir, "nonce_1");
    assert_eq!(
        answers.iter().filter(|a| *a == "true").count(),
        1,
        "{answers:?}"
    );
    // Used in this process first, then in another: refused there.
    let store = Store::open(&dir).unwrap();
    assert!(store.use_nonce("nonce_2", Utc::now() + LONG).unwrap());
    assert_eq!(race(1, "nonce", &dir, "nonce_2"), ["false"]);
}

#[test]
fn processes_creating_the_key_at_once_all_read_the_same_key() {
    let (_tmp, dir) = fresh();
    let answers = race(6, "key", &dir, "");
    assert!(answers.windows(2).all(|w| w[0] == w[1]), "{answers:?}");
    let ours = Store::open(&dir).unwrap().request_state_key().unwrap();
    assert_eq!(
        answers[0],
        hex::encode(Sha256::digest(ours.expose_secret()))
    );
}

#[test]
fn a_process_whose_lease_was_taken_over_cannot_record_an_outcome() {
    let (_tmp, dir) = fresh();
    let store = Store::open(&dir).unwrap();
    assert!(
        store
            .claim_dispatch("plan_slow", Duration::from_millis(200))
            .unwrap()
            .is_claimed()
    );
    std::thread::sleep(Duration::from_millis(300));
    // Another process decides we died and takes over.
    assert_eq!(race(1, "take_over", &dir, "plan_slow"), ["claimed"]);
    let err = store
        .mark_dispatched("plan_slow", "run_late", &json!({}))
        .unwrap_err();
    assert!(matches!(err, StoreError::LeaseLost { .. }), "{err}");
    match store.dispatch("plan_slow").unwrap().unwrap().state {
        DispatchState::Dispatching {
            holder,
            lease_expired,
            ..
        } => {
            assert_ne!(holder, factory_policies::store::holder_id());
            assert!(!lease_expired);
        }
        other => panic!("the taken-over record changed: {other:?}"),
    }
}

#[test]
fn a_process_killed_mid_dispatch_leaves_a_claim_whose_lease_expires_for_take_over() {
    let (_tmp, dir) = fresh();
    let mut kid = Kid::spawn("claim_and_hang", &dir, "plan_k");
    kid.go();
    assert_eq!(kid.result(), "claimed");
    let claimed_at = Instant::now();
    kid.kill();

    let store = Store::open(&dir).unwrap();
    store.check_integrity().unwrap();
    // Until its lease runs out, the dead process's claim still blocks everyone. (Checked
    // only while the lease surely runs, so that a slow machine cannot fail the test.)
    let claim = store.claim_dispatch("plan_k", LONG).unwrap();
    let take = store.take_over("plan_k", LONG).unwrap();
    if claimed_at.elapsed() < CHILD_LEASE - Duration::from_millis(300) {
        for c in [claim, take] {
            match c {
                Claim::Existing(r) => match r.state {
                    DispatchState::Dispatching {
                        holder,
                        lease_expired,
                        ..
                    } => {
                        assert_ne!(holder, factory_policies::store::holder_id());
                        assert!(!lease_expired);
                    }
                    other => panic!("{other:?}"),
                },
                Claim::Claimed(_) => panic!("a live claim of a killed process was claimed"),
            }
        }
    }

    std::thread::sleep(
        (CHILD_LEASE + Duration::from_millis(100)).saturating_sub(claimed_at.elapsed()),
    );
    match store.claim_dispatch("plan_k", LONG).unwrap() {
        Claim::Existing(r) => assert!(
            matches!(
                r.state,
                DispatchState::Dispatching {
                    lease_expired: true,
                    ..
                }
            ),
            "{r:?}"
        ),
        Claim::Claimed(_) => panic!("an expired claim must go through take_over"),
    }
    assert_eq!(store.unsettled_dispatches().unwrap().len(), 1);
    assert!(store.take_over("plan_k", LONG).unwrap().is_claimed());
    assert!(!store.take_over("plan_k", LONG).unwrap().is_claimed());
    store
        .mark_dispatched("plan_k", "run_k", &json!({}))
        .unwrap();
}

#[test]
fn a_process_killed_mid_transaction_leaves_no_trace_and_no_lock() {
    let (_tmp, dir) = fresh();
    let mut kid = Kid::spawn("hang_in_transaction", &dir, "plan_torn");
    kid.go();
    assert_eq!(kid.result(), "in_transaction");
    kid.kill();

    let started = Instant::now();
    let store = Store::open(&dir).unwrap();
    // The write lock died with the process (no 10 s busy wait) and the uncommitted claim
    // and audit entry are gone.
    assert!(
        store
            .claim_dispatch("plan_torn", LONG)
            .unwrap()
            .is_claimed()
    );
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    assert!(store.audit_entries(10).unwrap().is_empty());
    store.check_integrity().unwrap();
}

#[test]
fn processes_killed_at_random_while_dispatching_leave_a_consistent_journal() {
    let (_tmp, dir) = fresh();
    for round in 0..4u64 {
        let mut kid = Kid::spawn("dispatch_forever", &dir, &format!("r{round}"));
        kid.go();
        assert_eq!(kid.result(), "started");
        // Different points in the loop each round.
        std::thread::sleep(Duration::from_millis(150 + 97 * round));
        kid.kill();

        let store = Store::open(&dir).unwrap();
        store.check_integrity().unwrap();
        let prefix = format!("r{round}_");
        let runs: Vec<_> = store
            .dispatched_runs()
            .unwrap()
            .into_iter()
            .filter(|r| r.plan_id.starts_with(&prefix))
            .collect();
        assert!(
            !runs.is_empty(),
            "round {round}: the child dispatched nothing"
        );
        for r in &runs {
            match &r.state {
                DispatchState::Dispatched { run_id, details } => {
                    assert_eq!(run_id, &format!("run_{}", r.plan_id));
                    assert!(details.get("i").is_some());
                }
                other => panic!("{other:?}"),
            }
        }
        // Plans 0..n-1 are all dispatched; at most the one in flight is still dispatching.
        let n = runs.len();
        for i in 0..n {
            assert!(store.dispatch(&format!("{prefix}{i}")).unwrap().is_some());
        }
        let unsettled: Vec<_> = store
            .unsettled_dispatches()
            .unwrap()
            .into_iter()
            .filter(|r| r.plan_id.starts_with(&prefix))
            .collect();
        assert!(unsettled.len() <= 1, "{unsettled:?}");
        if let Some(u) = unsettled.first() {
            assert_eq!(u.plan_id, format!("{prefix}{n}"));
        }
        assert!(
            store
                .dispatch(&format!("{prefix}{}", n + 1))
                .unwrap()
                .is_none()
        );
    }
}
