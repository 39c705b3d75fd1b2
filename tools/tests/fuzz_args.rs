//! Fuzz target (proptest) for tool-argument parsing through the real handler: an in-process
//! server with every tool enabled (no platform credentials, no workspace, no store, so nothing
//! leaves the process) answers arbitrary arguments for every tool with a tool result or a
//! protocol error, within a deadline, and keeps serving. Cases: 256 by default;
//! `PROPTEST_CASES=N` raises it (see `scripts/fuzz.sh`).

use std::{sync::Arc, time::Duration};

use factory_policies::{
    Policy, Redactor,
    secret_guard::{KnownSecrets, SecretGuard},
};
use factory_tools::{AppState, build_server, catalogue::CATALOGUE};
use proptest::prelude::*;
use rmcp::{RoleClient, ServiceExt, model::CallToolRequestParams, service::RunningService};
use serde_json::{Map, Value};

fn server_and_client(rt: &tokio::runtime::Runtime) -> RunningService<RoleClient, ()> {
    rt.block_on(async {
        let state = AppState::new(
            Err("no platform credentials in this test".into()),
            Policy::default(),
            SecretGuard::new(KnownSecrets::new()),
            Redactor::new(KnownSecrets::new()),
            Err("no workspace in this test".into()),
            false,
        );
        let server = build_server(Arc::new(state), |_| true);
        let (a, b) = tokio::io::duplex(1 << 20);
        tokio::spawn(async move {
            if let Ok(running) = server.serve(a).await {
                let _ = running.waiting().await;
            }
        });
        ().serve(b).await.expect("client connects")
    })
}

fn value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>().prop_map(|f| serde_json::Number::from_f64(f)
            .map(Value::Number)
            .unwrap_or(Value::Null)),
        "\\PC{0,40}".prop_map(Value::String),
        prop_oneof![
            Just("../../etc/passwd"),
            Just("/"),
            Just(""),
            Just("plan_x"),
            Just("RUNNING")
        ]
        .prop_map(|s| Value::String(s.into())),
    ];
    leaf.prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec(("\\PC{0,12}", inner), 0..6)
                .prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}

/// Argument names the tools actually use, so the fuzzer reaches past "unknown field".
const KEYS: &[&str] = &[
    "run_id",
    "team_id",
    "limit",
    "page",
    "tail",
    "step",
    "status",
    "cursor",
    "kind",
    "component",
    "level",
    "search",
    "regex",
    "since_seconds",
    "config_toml",
    "config_path",
    "plan_id",
    "dest_dir",
    "env",
    "run_name",
    "gpu_type",
    "volume",
    "wait",
    "timeout_s",
    "min_step",
    "max_step",
    "mine",
    "personal",
    "resume_from",
    "source",
    "name",
];

fn args() -> impl Strategy<Value = Map<String, Value>> {
    prop::collection::vec((prop::sample::select(KEYS), value()), 0..5)
        .prop_map(|kv| kv.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
}

proptest! {
    #[test]
    fn any_arguments_to_any_tool_get_an_answer(tool in 0..CATALOGUE.len(), a in args()) {
        thread_local! {
            static RT: tokio::runtime::Runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1).enable_all().build().unwrap();
        }
        RT.with(|rt| {
            let client = server_and_client(rt);
            let name = CATALOGUE[tool].name;
            let answer = rt.block_on(async {
                tokio::time::timeout(
                    Duration::from_secs(10),
                    client.call_tool(CallToolRequestParams::new(name).with_arguments(a.clone())),
                )
                .await
            });
            let answer = answer.unwrap_or_else(|_| panic!("{name} {a:?}: no answer within 10 s"));
            match answer {
                Ok(r) => {
                    let text: String = r.content.iter().filter_map(|c| c.as_text().map(|t| t.text.clone())).collect();
                    // Without credentials, workspace or store, nothing can succeed for real:
                    // whatever comes back is short and readable.
                    assert!(text.len() < 64 * 1024, "{name}: {} bytes", text.len());
                    assert!(!text.contains("panicked"), "{name}: {text}");
                }
                Err(e) => {
                    let s = e.to_string();
                    assert!(!s.contains("panicked") && !s.contains("closed"), "{name} {a:?}: {s}");
                }
            }
            // Still serving.
            let tools = rt.block_on(client.list_all_tools()).expect("server alive");
            assert_eq!(tools.len(), CATALOGUE.len());
            let _ = rt.block_on(client.cancel());
        });
    }
}
