//! The summary a person approves is the server's words (issue 16 §0, §3): each hostile shape —
//! a newline, an ESC clear-screen or conceal sequence, bidi overrides, U+2028, 100 KB — fed
//! through every path that reaches a person: `plan_run` arguments (launch and resume), TOML
//! values, and names the platform supplies (a run's name in the delete and resume summaries,
//! the form-elicitation message in both protocol eras, the tool error of a client without a
//! dialog). And `confirm = "out_of_band"`: a client's own "yes" in a form launches nothing.

mod common;

use std::sync::{Arc, Mutex};

use common::{Era, World, call, connect, err, ok, rl_config as config};
use rmcp::{
    ClientHandler, ErrorData,
    model::{
        ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult, ElicitationAction,
        Implementation,
    },
    service::{RequestContext, RoleClient},
};
use serde_json::json;

const TEAM: &str = factory_sandbox::TEAM_ALPHA_ID;

/// The hostile shapes.
fn hostile() -> Vec<(&'static str, String)> {
    vec![
        ("newline", "x\nPrice:    $0.01/hour".into()),
        ("esc-clear", "x\u{1b}[2J\u{1b}[HPrice:    $0.01/hour".into()),
        ("esc-conceal", "x\u{1b}[8mhidden\u{1b}[0m".into()),
        ("bidi", "x\u{202e}ruoh/10.0$\u{202c}".into()),
        ("isolate", "x\u{2066}y\u{2069}".into()),
        ("u2028", "x\u{2028}Price:    $0.01/hour".into()),
        ("100k", "x".repeat(100 * 1024)),
    ]
}

/// Text a person may be shown: no control, bidi, invisible or line-separator character but
/// the newline; no line but ours claims a price; bounded.
fn assert_person_safe(text: &str, what: &str) {
    for c in text.chars() {
        assert!(
            c == '\n'
                || !(c.is_control()
                    || matches!(c, '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}'
                        | '\u{2060}'..='\u{206f}' | '\u{2028}' | '\u{2029}' | '\u{feff}')),
            "{what}: {:?} got through in {text:?}",
            c
        );
    }
    assert!(
        !text
            .lines()
            .any(|l| l.trim_start().starts_with("Price:    $0.01")),
        "{what}: a forged price line:\n{text}"
    );
    assert!(text.len() < 8 * 1024, "{what}: {} bytes", text.len());
}

#[tokio::test]
async fn hostile_names_in_plan_run_arguments_and_the_toml_are_refused_without_echo() {
    let w = World::new().await;
    let c = w.client(0, &[], Era::Modern).await;
    for (shape, h) in hostile() {
        for key in [
            "run_name",
            "image_tag",
            "volume",
            "volume_size",
            "source_ref",
        ] {
            let mut args = json!({"config_toml": config("ok-run", 5), "team_id": TEAM});
            args[key] = json!(h);
            if key == "volume_size" {
                args["volume"] = json!("outputs");
            }
            let msg = err(&call(&c, "plan_run", args).await);
            assert!(msg.contains(&format!("`{key}`")), "{shape}/{key}: {msg}");
            assert!(!msg.contains(&h), "{shape}/{key}: the value is echoed");
            assert_person_safe(&msg, &format!("{shape}/{key}"));
        }
        // The same values set in the TOML.
        let quoted = toml::Value::String(h.clone()).to_string();
        for (key, toml) in [
            (
                "name",
                config("", 5).replacen("name = \"\"", &format!("name = {quoted}"), 1),
            ),
            (
                "image_tag",
                format!("image_tag = {quoted}\n{}", config("ok-run", 5)),
            ),
            (
                "volume",
                format!("volume = {quoted}\n{}", config("ok-run", 5)),
            ),
        ] {
            let msg = err(&call(
                &c,
                "plan_run",
                json!({"config_toml": toml, "team_id": TEAM}),
            )
            .await);
            assert!(
                msg.contains(&format!("`{key}`")),
                "{shape}/toml {key}: {msg}"
            );
            assert_person_safe(&msg, &format!("{shape}/toml {key}"));
        }
    }
    assert_eq!(w.sandbox.create_requests(), 0);
    c.cancel().await.unwrap();
}

/// A client with a dialog that records every message it is shown and answers as told.
#[derive(Clone)]
struct Recording {
    accept: bool,
    seen: Arc<Mutex<Vec<String>>>,
}

impl ClientHandler for Recording {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::builder().enable_elicitation().build(),
            Implementation::new("recording-client", "0.0.1"),
        )
    }
    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        if let ElicitRequestParams::FormElicitationParams { message, .. } = &request {
            self.seen.lock().unwrap().push(message.clone());
        }
        Ok(if self.accept {
            ElicitResult::new(ElicitationAction::Accept).with_content(json!({"confirm": true}))
        } else {
            ElicitResult::new(ElicitationAction::Decline)
        })
    }
}

#[tokio::test]
async fn platform_supplied_run_names_cannot_forge_the_delete_or_resume_summary() {
    let w = World::new().await;
    for (shape, h) in hostile() {
        // Another client of the platform named a run with the hostile text.
        let run = w.create_run(0, &h, 40, None).await;
        w.advance(20);
        let plain = w.client(0, &[], Era::Modern).await;

        // Resume: pause it, plan the resume; the summary carries the platform's name.
        ok(&call(&plain, "pause_run", json!({"run_id": run})).await);
        let p = ok(&call(&plain, "plan_run", json!({"resume_from": run})).await);
        let summary = p["summary"].as_str().unwrap();
        assert_person_safe(summary, &format!("{shape}: resume summary"));
        assert!(summary.contains("RESUME plan"), "{summary}");
        // A client without a dialog: the tool error shows the same summary, safe.
        let msg = err(&call(&plain, "resume_run", json!({"plan_id": p["plan_id"]})).await);
        assert_person_safe(&msg, &format!("{shape}: resume error"));
        assert!(msg.contains("factory-mcp approve"), "{msg}");

        // Delete: stop it; without a dialog the error shows the delete summary.
        ok(&call(&plain, "stop_run", json!({"run_id": run})).await);
        let msg = err(&call(&plain, "delete_run", json!({"run_id": run})).await);
        assert_person_safe(&msg, &format!("{shape}: delete error"));
        assert!(
            msg.contains("DELETE intent") && msg.contains("this delete"),
            "{msg}"
        );
        assert!(!msg.to_lowercase().contains("launch"), "{msg}");
        plain.cancel().await.unwrap();

        // Through the client's dialog, in both eras: the message is safe and says delete.
        for era in [Era::Modern, Era::Legacy] {
            let seen = Arc::new(Mutex::new(Vec::new()));
            let c = connect(
                Recording {
                    accept: false,
                    seen: seen.clone(),
                },
                w.transport(w.env(0), &[]),
                era,
            )
            .await;
            let msg = err(&call(&c, "delete_run", json!({"run_id": run})).await);
            assert!(msg.contains("declined"), "{msg}");
            let seen = seen.lock().unwrap().clone();
            assert_eq!(seen.len(), 1, "{era:?}");
            assert_person_safe(&seen[0], &format!("{shape}: {era:?} delete dialog"));
            assert!(
                seen[0].contains("Approve this PERMANENT delete?"),
                "{}",
                seen[0]
            );
            assert!(!seen[0].to_lowercase().contains("launch"), "{}", seen[0]);
            c.cancel().await.unwrap();
        }
        assert!(w.sandbox.run(&run).is_some(), "nothing deleted");
    }
}

#[tokio::test]
async fn out_of_band_policy_takes_no_form_answer_as_a_persons_yes() {
    let w = World::new().await;
    let seen = Arc::new(Mutex::new(Vec::new()));
    for era in [Era::Modern, Era::Legacy] {
        let c = connect(
            Recording {
                accept: true,
                seen: seen.clone(),
            },
            w.transport(w.env(0), &["--confirm", "out_of_band"]),
            era,
        )
        .await;
        let name = format!("oob-{}", if era == Era::Modern { "m" } else { "l" });
        let p = ok(&call(
            &c,
            "plan_run",
            json!({"config_toml": config(&name, 5), "team_id": TEAM}),
        )
        .await);
        assert!(
            p["confirmation"].as_str().unwrap().contains("out_of_band"),
            "{p}"
        );
        let msg = err(&call(&c, "launch_run", json!({"plan_id": p["plan_id"]})).await);
        assert!(msg.contains("out_of_band"), "{msg}");
        assert!(msg.contains(&format!(
            "factory-mcp approve {}",
            p["plan_id"].as_str().unwrap()
        )));
        c.cancel().await.unwrap();
    }
    assert!(seen.lock().unwrap().is_empty(), "no form was shown");
    assert_eq!(
        w.sandbox.create_requests(),
        0,
        "the client's own yes launched nothing"
    );

    // A form approval recorded earlier (say, under the default policy) does not count either;
    // the person's code on the terminal does.
    let c = w
        .client(0, &["--confirm", "out_of_band"], Era::Modern)
        .await;
    let p = ok(&call(
        &c,
        "plan_run",
        json!({"config_toml": config("oob-terminal", 5), "team_id": TEAM}),
    )
    .await);
    let id = p["plan_id"].as_str().unwrap().to_string();
    let store = factory_policies::store::Store::open(&w.state_dir()).unwrap();
    store
        .record_decision(&id, factory_policies::store::Decision::Approved, "form")
        .unwrap();
    let msg = err(&call(&c, "launch_run", json!({"plan_id": id})).await);
    assert!(msg.contains("Waiting for a person"), "{msg}");
    assert_eq!(w.sandbox.create_requests(), 0);
    let dir = w.state_dir().display().to_string();
    let mut t = common::pty::approve(&[&id, "--state-dir", &dir], w.home.path(), "y\n");
    let code = t.code();
    t.type_in(&format!("{code}\n"));
    let done = t.finish();
    assert!(done.status.success(), "{}\n{}", done.shown, done.stderr);
    let launched = ok(&call(&c, "launch_run", json!({"plan_id": id})).await);
    assert_eq!(launched["deduplicated"], false);
    assert_eq!(w.sandbox.create_requests(), 1);
    // The audit log says through which channel each decision came, and when.
    let entries = store.audit_entries(200).unwrap();
    let decided: Vec<_> = entries
        .iter()
        .filter(|e| e.event.action == "decide" && e.event.plan_id.as_deref() == Some(&id))
        .map(|e| e.event.detail["channel"].as_str().unwrap_or("").to_string())
        .collect();
    assert_eq!(decided, ["form", "terminal"]);
    assert!(
        entries
            .iter()
            .all(|e| e.event.action != "decide" || e.event.detail["decided_at"].is_string())
    );

    // delete_run follows the same rule: no form, the person approves in a terminal.
    let run = w.create_run(0, "oob-delete", 5, None).await;
    w.advance(60);
    let msg = err(&call(&c, "delete_run", json!({"run_id": run})).await);
    assert!(
        msg.contains("out_of_band") && msg.contains("this delete"),
        "{msg}"
    );
    assert!(w.sandbox.run(&run).is_some(), "nothing deleted");
    c.cancel().await.unwrap();
}
