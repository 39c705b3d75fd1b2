//! `factory-mcp approve PLAN_ID` end to end: the real binary, a real state directory made
//! with the `Store` API, answers on stdin; the decision and the audit log read back.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use factory_policies::store::{Decision, PlanRecord, Store, Utc};
use serde_json::json;

const SUMMARY: &str = "Owner: team Acme (team_1)\nModel: Qwen/Qwen3-4B\nGPUs: 8 x H100 at $2.50/GPU-hour = $20.00/hour";

fn plan(id: &str, expires_in_secs: i64) -> PlanRecord {
    let now = Utc::now();
    PlanRecord {
        id: id.to_owned(),
        created_at: now - Duration::from_secs(5),
        expires_at: if expires_in_secs >= 0 {
            now + Duration::from_secs(expires_in_secs as u64)
        } else {
            now - Duration::from_secs(expires_in_secs.unsigned_abs())
        },
        request_digest: format!("req-{id}"),
        content_digest: "content".to_owned(),
        owner: Some("team_1".to_owned()),
        summary_text: SUMMARY.to_owned(),
        body: json!({}),
    }
}

fn state() -> (tempfile::TempDir, Store) {
    let tmp = tempfile::tempdir().unwrap();
    let store = Store::open(&tmp.path().join("state")).unwrap();
    (tmp, store)
}

/// Run `factory-mcp approve ID --state-dir DIR EXTRA…` with `stdin` as its input.
fn approve(dir: &Path, id: &str, extra: &[&str], stdin: &str) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_factory-mcp"))
        .arg("approve")
        .arg(id)
        .arg("--state-dir")
        .arg(dir)
        .args(extra)
        .env_remove("XDG_STATE_HOME")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Dropping stdin after writing closes it: "" means end of input at once.
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// The approve command's own audit outcomes for a plan, oldest first.
fn approve_outcomes(store: &Store, id: &str) -> Vec<String> {
    store
        .audit_entries(100)
        .unwrap()
        .into_iter()
        .filter(|e| e.event.actor == "approve" && e.event.plan_id.as_deref() == Some(id))
        .map(|e| e.event.outcome)
        .collect()
}

#[test]
fn y_approves_after_showing_the_summary_and_launches_nothing() {
    let (tmp, store) = state();
    store.put_plan(&plan("plan_yes", 600)).unwrap();
    let out = approve(store.dir(), "plan_yes", &[], "y\n");
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(stdout.contains(SUMMARY), "the summary is shown: {stdout}");
    assert!(stdout.contains("Approve this launch? [y/N]"), "{stdout}");
    assert!(
        stdout.contains("launch_run"),
        "says what happens next: {stdout}"
    );

    let d = store.decision("plan_yes").unwrap().unwrap();
    assert_eq!(d.decision, Decision::Approved);
    assert_eq!(d.via, "terminal");
    assert!(
        store.dispatch("plan_yes").unwrap().is_none(),
        "approve must not dispatch"
    );
    assert_eq!(approve_outcomes(&store, "plan_yes"), ["approved"]);
    let entries = store.audit_entries(100).unwrap();
    let answer = entries.iter().find(|e| e.event.actor == "approve").unwrap();
    assert_eq!(answer.event.detail["how"], "prompt");
    assert_eq!(answer.event.detail["answer"], "y");
    assert_eq!(answer.event.detail["stdin_is_terminal"], false);
    // The store's own decision entry is there too.
    assert!(
        entries
            .iter()
            .any(|e| e.event.actor == "terminal" && e.event.outcome == "approved")
    );
    drop(tmp);
}

#[test]
fn yes_in_full_and_in_capitals_also_approves() {
    let (_tmp, store) = state();
    store.put_plan(&plan("plan_cap", 600)).unwrap();
    let out = approve(store.dir(), "plan_cap", &[], "  YES \n");
    assert_eq!(out.status.code(), Some(0), "{:?}", text(&out));
    assert_eq!(
        store.decision("plan_cap").unwrap().unwrap().decision,
        Decision::Approved
    );
}

#[test]
fn n_refuses() {
    let (_tmp, store) = state();
    store.put_plan(&plan("plan_no", 600)).unwrap();
    let out = approve(store.dir(), "plan_no", &[], "n\n");
    let (stdout, _) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("Refused"), "{stdout}");
    assert_eq!(
        store.decision("plan_no").unwrap().unwrap().decision,
        Decision::Refused
    );
    assert_eq!(approve_outcomes(&store, "plan_no"), ["refused"]);
}

#[test]
fn end_of_input_or_any_other_answer_refuses() {
    let (_tmp, store) = state();
    for (id, input) in [
        ("plan_eof", ""),
        ("plan_enter", "\n"),
        ("plan_ok", "ok\n"),
        ("plan_yy", "yy\n"),
    ] {
        store.put_plan(&plan(id, 600)).unwrap();
        let out = approve(store.dir(), id, &[], input);
        assert_eq!(out.status.code(), Some(1), "{input:?}: {:?}", text(&out));
        assert_eq!(
            store.decision(id).unwrap().unwrap().decision,
            Decision::Refused,
            "{input:?}"
        );
    }
    let eof = store
        .audit_entries(100)
        .unwrap()
        .into_iter()
        .find(|e| e.event.actor == "approve" && e.event.plan_id.as_deref() == Some("plan_eof"))
        .unwrap();
    assert_eq!(eof.event.detail["answer"], "end of input");
}

#[test]
fn a_refusal_can_be_changed_to_an_approval() {
    let (_tmp, store) = state();
    store.put_plan(&plan("plan_change", 600)).unwrap();
    assert_eq!(
        approve(store.dir(), "plan_change", &[], "").status.code(),
        Some(1)
    );
    let out = approve(store.dir(), "plan_change", &[], "y\n");
    let (stdout, _) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(stdout.contains("You refused this plan"), "{stdout}");
    assert_eq!(
        store.decision("plan_change").unwrap().unwrap().decision,
        Decision::Approved
    );
    assert_eq!(
        approve_outcomes(&store, "plan_change"),
        ["refused", "approved"]
    );
}

#[test]
fn an_approved_plan_is_not_asked_again_but_can_be_revoked() {
    let (_tmp, store) = state();
    store.put_plan(&plan("plan_twice", 600)).unwrap();
    assert_eq!(
        approve(store.dir(), "plan_twice", &[], "y\n").status.code(),
        Some(0)
    );
    // Not asked again: even "n" on stdin changes nothing.
    let out = approve(store.dir(), "plan_twice", &[], "n\n");
    let (stdout, _) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(stdout.contains("already approved"), "{stdout}");
    assert!(!stdout.contains("[y/N]"), "{stdout}");
    assert_eq!(
        store.decision("plan_twice").unwrap().unwrap().decision,
        Decision::Approved
    );
    // --refuse revokes it.
    let out = approve(store.dir(), "plan_twice", &["--refuse"], "");
    assert_eq!(out.status.code(), Some(1), "{:?}", text(&out));
    assert_eq!(
        store.decision("plan_twice").unwrap().unwrap().decision,
        Decision::Refused
    );
    assert_eq!(
        approve_outcomes(&store, "plan_twice"),
        ["approved", "already_approved", "refused"]
    );
}

#[test]
fn yes_flag_approves_without_asking_and_the_audit_says_so() {
    let (_tmp, store) = state();
    store.put_plan(&plan("plan_flag", 600)).unwrap();
    let out = approve(store.dir(), "plan_flag", &["--yes"], "");
    let (stdout, _) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(!stdout.contains("[y/N]"), "{stdout}");
    assert_eq!(
        store.decision("plan_flag").unwrap().unwrap().decision,
        Decision::Approved
    );
    let entry = store
        .audit_entries(100)
        .unwrap()
        .into_iter()
        .find(|e| e.event.actor == "approve")
        .unwrap();
    assert_eq!(entry.event.detail["how"], "--yes");
    // --yes and --refuse together are a usage error, and decide nothing.
    store.put_plan(&plan("plan_both", 600)).unwrap();
    let out = approve(store.dir(), "plan_both", &["--yes", "--refuse"], "");
    assert_eq!(out.status.code(), Some(2));
    assert!(store.decision("plan_both").unwrap().is_none());
}

#[test]
fn an_unknown_plan_exits_2_and_records_nothing_but_the_attempt() {
    let (_tmp, store) = state();
    let out = approve(store.dir(), "plan_missing", &[], "y\n");
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(2), "{stdout}\n{stderr}");
    assert!(stderr.contains("no plan plan_missing"), "{stderr}");
    assert!(!stdout.contains("[y/N]"), "{stdout}");
    assert!(store.decision("plan_missing").unwrap().is_none());
    assert_eq!(approve_outcomes(&store, "plan_missing"), ["unknown_plan"]);
}

#[test]
fn a_state_dir_without_a_database_is_not_created() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("nowhere");
    let out = approve(&dir, "plan_x", &[], "y\n");
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--state-dir"), "{stderr}");
    assert!(!dir.exists());
}

#[test]
fn an_expired_plan_is_refused_without_asking() {
    let (_tmp, store) = state();
    store.put_plan(&plan("plan_old", -60)).unwrap();
    let out = approve(store.dir(), "plan_old", &[], "y\n");
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(stderr.contains("expired"), "{stderr}");
    assert!(stderr.contains("re-plan"), "{stderr}");
    assert!(!stdout.contains("[y/N]"), "{stdout}");
    assert!(store.decision("plan_old").unwrap().is_none());
    assert_eq!(approve_outcomes(&store, "plan_old"), ["expired"]);
}

#[test]
fn a_plan_already_launched_shows_its_run_without_asking() {
    let (_tmp, store) = state();
    store.put_plan(&plan("plan_done", 600)).unwrap();
    assert!(
        store
            .claim_dispatch("plan_done", Duration::from_secs(60))
            .unwrap()
            .is_claimed()
    );
    store
        .mark_dispatched("plan_done", "run_abc123", &json!({}))
        .unwrap();
    let out = approve(store.dir(), "plan_done", &[], "n\n");
    let (stdout, _) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(stdout.contains("run_abc123"), "{stdout}");
    assert!(!stdout.contains("[y/N]"), "{stdout}");
    assert!(store.decision("plan_done").unwrap().is_none());
    assert_eq!(
        approve_outcomes(&store, "plan_done"),
        ["already_dispatched"]
    );
}
