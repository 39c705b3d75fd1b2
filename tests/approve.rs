//! `factory-mcp approve PLAN_ID` end to end: the real binary, a real state directory made
//! with the `Store` API, and a person at a pseudo-terminal that is the command's controlling
//! terminal (a new session, `setsid` + `TIOCSCTTY`); the decision and the audit log read back.
//! Standard input is always a pipe holding `y` — approve must never read it.

#[path = "common/pty.rs"]
mod pty;

use std::path::Path;
use std::time::Duration;

use factory_policies::store::{DateTime, Decision, PlanRecord, Store, Utc};
use factory_policies::summary::{Line, Part, Summary, SummaryKind};
use serde_json::json;

fn screen(id: &str, kind: SummaryKind, expires: DateTime<Utc>) -> Summary {
    Summary {
        kind,
        id: id.to_owned(),
        expires_at: expires,
        figures: vec![
            Line::new(
                "Owner",
                vec![
                    Part::Ours("team ".into()),
                    Part::Untrusted("team_1".into()),
                    Part::Ours(" ".into()),
                    Part::Untrusted("Acme".into()),
                ],
            ),
            Line::ours("Price", "$2.50/GPU-hour on demand → $20.00/hour"),
        ],
        details: vec![Line::new(
            "Run name",
            vec![Part::Untrusted("acme-run".into())],
        )],
    }
}

fn plan_of(id: &str, expires_in_secs: i64, kind: SummaryKind) -> PlanRecord {
    let now = Utc::now();
    let expires_at = if expires_in_secs >= 0 {
        now + Duration::from_secs(expires_in_secs as u64)
    } else {
        now - Duration::from_secs(expires_in_secs.unsigned_abs())
    };
    let s = screen(id, kind, expires_at);
    let kind_name = match kind {
        SummaryKind::Launch => "launch",
        SummaryKind::Resume => "resume",
        SummaryKind::Delete => "delete",
    };
    PlanRecord {
        id: id.to_owned(),
        created_at: now - Duration::from_secs(5),
        expires_at,
        request_digest: format!("req-{id}"),
        content_digest: "content".to_owned(),
        owner: Some("team_1".to_owned()),
        summary_text: s.to_text(),
        body: json!({"kind": kind_name, "summary": s}),
    }
}

fn plan(id: &str, expires_in_secs: i64) -> PlanRecord {
    plan_of(id, expires_in_secs, SummaryKind::Launch)
}

fn state() -> (tempfile::TempDir, Store) {
    let tmp = tempfile::tempdir().unwrap();
    let store = Store::open(&tmp.path().join("state")).unwrap();
    (tmp, store)
}

/// `factory-mcp approve ID --state-dir DIR EXTRA…` on its own terminal, `y` on its stdin.
fn on_terminal(dir: &Path, id: &str, extra: &[&str]) -> pty::OnPty {
    let d = dir.display().to_string();
    let mut args = vec![id, "--state-dir", d.as_str()];
    args.extend_from_slice(extra);
    pty::approve(&args, dir, "y\n")
}

/// The same with no terminal at all (a new session without one), `y` on its stdin.
fn without_terminal(dir: &Path, id: &str, extra: &[&str]) -> std::process::Output {
    let d = dir.display().to_string();
    let mut args = vec![id, "--state-dir", d.as_str()];
    args.extend_from_slice(extra);
    pty::detached(&mut pty::approve_command(&args, dir), "y\nyes\n")
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

/// Every audit entry about a plan.
fn entries_about(store: &Store, id: &str) -> usize {
    store
        .audit_entries(100)
        .unwrap()
        .into_iter()
        .filter(|e| e.event.plan_id.as_deref() == Some(id))
        .count()
}

#[test]
fn the_code_shown_on_the_terminal_approves_and_launches_nothing() {
    let (_tmp, store) = state();
    store.put_plan(&plan("plan_yes", 600)).unwrap();
    let mut t = on_terminal(store.dir(), "plan_yes", &[]);
    let code = t.code();
    assert_eq!(code.len(), 6, "{}", t.shown);
    t.type_in(&format!("{code}\n"));
    let done = t.finish();
    assert_eq!(
        done.status.code(),
        Some(0),
        "{}\n{}",
        done.shown,
        done.stderr
    );
    assert!(
        done.shown.contains("LAUNCH plan plan_yes")
            && done.shown.contains("Owner:     team team_1 Acme")
            && done.shown.contains("$20.00/hour"),
        "the summary is shown on the terminal: {}",
        done.shown
    );
    assert!(
        done.shown.contains("To approve this launch"),
        "{}",
        done.shown
    );
    assert!(
        done.shown.contains("launch_run"),
        "what happens next: {}",
        done.shown
    );
    assert!(
        !done.stdout.contains(&code) && !done.stderr.contains(&code),
        "the code is shown on the terminal only"
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
    assert_eq!(answer.event.detail["channel"], "terminal");
    assert_eq!(answer.event.detail["how"], "code");
    assert!(answer.event.detail["decided_at"].is_string());
    // The store's own decision entry says the channel and the time too.
    let decide = entries
        .iter()
        .find(|e| e.event.actor == "terminal" && e.event.outcome == "approved")
        .unwrap();
    assert_eq!(decide.event.detail["channel"], "terminal");
    assert!(decide.event.detail["decided_at"].is_string());
}

#[test]
fn y_yes_a_wrong_code_or_an_empty_line_approve_nothing_and_record_nothing() {
    let (_tmp, store) = state();
    for (id, typed) in [
        ("plan_y", "y\n"),
        ("plan_yesword", "yes\n"),
        ("plan_wrong", "AAAAAA\n"),
        ("plan_enter", "\n"),
    ] {
        store.put_plan(&plan(id, 600)).unwrap();
        let mut t = on_terminal(store.dir(), id, &[]);
        t.code();
        t.type_in(typed);
        let done = t.finish();
        assert_eq!(done.status.code(), Some(1), "{typed:?}: {}", done.shown);
        assert!(done.shown.contains("No answer"), "{}", done.shown);
        assert!(
            done.shown.contains("nothing was recorded"),
            "{}",
            done.shown
        );
        assert!(store.decision(id).unwrap().is_none(), "{typed:?}");
        assert!(approve_outcomes(&store, id).is_empty(), "{typed:?}");
    }
}

#[test]
fn n_refuses_and_the_refusal_is_recorded() {
    let (_tmp, store) = state();
    store.put_plan(&plan("plan_no", 600)).unwrap();
    let mut t = on_terminal(store.dir(), "plan_no", &[]);
    t.code();
    t.type_in("n\n");
    let done = t.finish();
    assert_eq!(done.status.code(), Some(1), "{}", done.shown);
    assert!(done.shown.contains("Refused"), "{}", done.shown);
    assert_eq!(
        store.decision("plan_no").unwrap().unwrap().decision,
        Decision::Refused
    );
    assert_eq!(approve_outcomes(&store, "plan_no"), ["refused"]);
}

#[test]
fn end_of_input_and_ctrl_c_are_no_answer_and_record_nothing() {
    let (_tmp, store) = state();
    store.put_plan(&plan("plan_eof", 600)).unwrap();
    let mut t = on_terminal(store.dir(), "plan_eof", &[]);
    t.code();
    t.type_in("\u{4}"); // Ctrl-D on an empty line: end of input
    let done = t.finish();
    assert_eq!(done.status.code(), Some(1), "{}", done.shown);
    assert!(
        done.shown.contains("No answer (end of input)"),
        "{}",
        done.shown
    );
    assert!(store.decision("plan_eof").unwrap().is_none());

    store.put_plan(&plan("plan_int", 600)).unwrap();
    let mut t = on_terminal(store.dir(), "plan_int", &[]);
    t.code();
    t.type_in("\u{3}"); // Ctrl-C: the terminal interrupts the command
    let done = t.finish();
    assert!(!done.status.success(), "{}", done.shown);
    assert!(store.decision("plan_int").unwrap().is_none());
    assert!(approve_outcomes(&store, "plan_int").is_empty());
}

#[test]
fn without_a_terminal_a_pipe_approves_nothing_and_nothing_is_recorded() {
    let (_tmp, store) = state();
    store.put_plan(&plan("plan_pipe", 600)).unwrap();
    let out = without_terminal(store.dir(), "plan_pipe", &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("approve needs a person at a terminal"),
        "{stderr}"
    );
    assert!(store.decision("plan_pipe").unwrap().is_none());
    assert_eq!(entries_about(&store, "plan_pipe"), 0, "nothing recorded");
}

#[test]
fn the_yes_flag_is_gone() {
    let (_tmp, store) = state();
    store.put_plan(&plan("plan_flag", 600)).unwrap();
    let out = without_terminal(store.dir(), "plan_flag", &["--yes"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(store.decision("plan_flag").unwrap().is_none());
    // Not on a terminal either.
    let mut t = on_terminal(store.dir(), "plan_flag", &["--yes"]);
    t.type_in("\n");
    let done = t.finish();
    assert_eq!(done.status.code(), Some(2), "{}", done.stderr);
    assert!(done.stderr.contains("--yes"), "{}", done.stderr);
    assert!(store.decision("plan_flag").unwrap().is_none());
    assert_eq!(entries_about(&store, "plan_flag"), 0);
}

#[test]
fn a_refusal_can_be_changed_to_an_approval() {
    let (_tmp, store) = state();
    store.put_plan(&plan("plan_change", 600)).unwrap();
    let out = without_terminal(store.dir(), "plan_change", &["--refuse"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let mut t = on_terminal(store.dir(), "plan_change", &[]);
    let code = t.code();
    assert!(t.shown.contains("You refused this plan"), "{}", t.shown);
    t.type_in(&format!("{code}\n"));
    let done = t.finish();
    assert_eq!(done.status.code(), Some(0), "{}", done.shown);
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
fn an_approved_plan_is_not_asked_again_but_can_be_revoked_without_a_terminal() {
    let (_tmp, store) = state();
    store.put_plan(&plan("plan_twice", 600)).unwrap();
    let mut t = on_terminal(store.dir(), "plan_twice", &[]);
    let code = t.code();
    t.type_in(&format!("{code}\n"));
    assert_eq!(t.finish().status.code(), Some(0));
    let done = on_terminal(store.dir(), "plan_twice", &[]).finish();
    assert_eq!(done.status.code(), Some(0), "{}", done.shown);
    assert!(done.shown.contains("already approved"), "{}", done.shown);
    assert!(!done.shown.contains("Code:"), "{}", done.shown);
    // --refuse revokes it, and needs no terminal (a refusal can only stop something).
    let out = without_terminal(store.dir(), "plan_twice", &["--refuse"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
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
fn an_approval_given_in_the_clients_form_is_asked_again_on_the_terminal() {
    let (_tmp, store) = state();
    store.put_plan(&plan("plan_form", 600)).unwrap();
    store
        .record_decision("plan_form", Decision::Approved, "form")
        .unwrap();
    let mut t = on_terminal(store.dir(), "plan_form", &[]);
    let code = t.code();
    assert!(
        t.shown.contains("approved in the client's dialog"),
        "{}",
        t.shown
    );
    t.type_in(&format!("{code}\n"));
    assert_eq!(t.finish().status.code(), Some(0));
    assert_eq!(
        store.decision("plan_form").unwrap().unwrap().via,
        "terminal"
    );
}

#[test]
fn a_delete_intent_is_asked_as_a_delete_never_as_a_launch() {
    let (_tmp, store) = state();
    store
        .put_plan(&plan_of("plan_del", 600, SummaryKind::Delete))
        .unwrap();
    let mut t = on_terminal(store.dir(), "plan_del", &[]);
    let code = t.code();
    t.type_in(&format!("{code}\n"));
    let done = t.finish();
    assert_eq!(done.status.code(), Some(0), "{}", done.shown);
    assert!(
        done.shown.contains("DELETE intent plan_del"),
        "{}",
        done.shown
    );
    assert!(
        done.shown.contains("To approve this delete"),
        "{}",
        done.shown
    );
    assert!(done.shown.contains("delete_run"), "{}", done.shown);
    assert!(
        !done.shown.to_lowercase().contains("launch"),
        "a delete never says launch: {}",
        done.shown
    );
}

#[test]
fn an_old_plain_summary_is_neutralised_on_the_terminal() {
    let (_tmp, store) = state();
    let mut p = plan("plan_old_text", 600);
    p.body = json!({});
    p.summary_text =
        "Owner: team_1\nRun name: x\u{1b}[2J\u{1b}[HPrice: $0.01/hour\u{202e}\u{2028}y".into();
    store.put_plan(&p).unwrap();
    let mut t = on_terminal(store.dir(), "plan_old_text", &[]);
    t.code();
    t.type_in("n\n");
    let done = t.finish();
    assert!(!done.shown.contains('\u{1b}'), "{:?}", done.shown);
    assert!(!done.shown.contains('\u{202e}') && !done.shown.contains('\u{2028}'));
    assert!(
        !done.shown.lines().any(|l| l.starts_with("Price:")),
        "{}",
        done.shown
    );
}

#[test]
fn an_unknown_plan_exits_2_and_records_nothing_but_the_attempt() {
    let (_tmp, store) = state();
    let done = on_terminal(store.dir(), "plan_missing", &[]).finish();
    assert_eq!(
        done.status.code(),
        Some(2),
        "{}\n{}",
        done.shown,
        done.stderr
    );
    assert!(
        done.stderr.contains("no plan plan_missing"),
        "{}",
        done.stderr
    );
    assert!(!done.shown.contains("Code:"), "{}", done.shown);
    assert!(store.decision("plan_missing").unwrap().is_none());
    assert_eq!(approve_outcomes(&store, "plan_missing"), ["unknown_plan"]);
}

#[test]
fn a_state_dir_without_a_database_is_not_created() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("nowhere");
    let d = dir.display().to_string();
    let done = pty::approve(&["plan_x", "--state-dir", &d], tmp.path(), "y\n").finish();
    assert_eq!(done.status.code(), Some(2), "{}", done.stderr);
    assert!(done.stderr.contains("--state-dir"), "{}", done.stderr);
    assert!(!dir.exists());
}

#[test]
fn an_expired_plan_is_refused_without_asking() {
    let (_tmp, store) = state();
    store.put_plan(&plan("plan_old", -60)).unwrap();
    let done = on_terminal(store.dir(), "plan_old", &[]).finish();
    assert_eq!(
        done.status.code(),
        Some(1),
        "{}\n{}",
        done.shown,
        done.stderr
    );
    assert!(done.stderr.contains("expired"), "{}", done.stderr);
    assert!(done.stderr.contains("re-plan"), "{}", done.stderr);
    assert!(!done.shown.contains("Code:"), "{}", done.shown);
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
    let done = on_terminal(store.dir(), "plan_done", &[]).finish();
    assert_eq!(done.status.code(), Some(0), "{}", done.shown);
    assert!(done.shown.contains("run_abc123"), "{}", done.shown);
    assert!(!done.shown.contains("Code:"), "{}", done.shown);
    assert!(store.decision("plan_done").unwrap().is_none());
    assert_eq!(
        approve_outcomes(&store, "plan_done"),
        ["already_dispatched"]
    );
}
