//! Behaviour a user notices beyond the labelled cases: hosted keys, practice warnings,
//! account facts, secrets never quoted, summaries.

use factory_config::account::{AccountFacts, apply, schema_drift};
use factory_config::{Options, Report, Severity, Source, validate};

const RL: &str = r#"
max_steps = 20
seq_len = 2048
[model]
name = "Qwen/Qwen3-0.6B"
[deployment]
num_train_gpus = 2
num_infer_gpus = 2
[orchestrator]
batch_size = 64
group_size = 8
[[orchestrator.train.source]]
name = "reverse-text"
[orchestrator.train.source.env.taskset]
id = "reverse-text"
[trainer]
[inference]
"#;

fn run(text: &str) -> Report {
    validate(text, &Options::default()).expect("parses")
}

fn has(r: &Report, sev: Severity, path: &str) -> bool {
    r.findings
        .iter()
        .any(|f| f.severity == sev && f.path == path)
}

#[test]
fn a_clean_config_is_valid_with_a_full_summary() {
    let r = run(&format!(
        "gpu_type = \"H200_141GB\"\nvolume = \"research\"\n{RL}"
    ));
    assert!(r.valid, "{:#?}", r.findings);
    let s = &r.summary;
    assert_eq!(s.model.as_deref(), Some("Qwen/Qwen3-0.6B"));
    assert_eq!((s.max_steps, s.seq_len), (Some(20), Some(2048)));
    assert_eq!(
        (s.gpus.trainer, s.gpus.inference, s.gpus.total),
        (Some(2), Some(2), Some(4))
    );
    assert_eq!(s.gpu_type.as_deref(), Some("H200_141GB"));
    assert_eq!(s.volume.as_deref(), Some("research"));
}

#[test]
fn hosted_key_rules_follow_the_cli() {
    let r = run(&format!("volume_size = \"500GB\"\n{RL}"));
    assert!(
        has(&r, Severity::Error, "volume_size"),
        "bad unit and no volume"
    );
    let r = run(&format!("source_ref = \"pull/12/head\"\n{RL}"));
    assert!(has(&r, Severity::Error, "source_ref"));
    let r = run(&format!("gpu_type = \"h100\"\n{RL}"));
    assert!(r.valid && has(&r, Severity::Warning, "gpu_type"));
    let r = run(&format!("env_files = [\"secrets.env\"]\n{RL}"));
    assert!(r.valid && has(&r, Severity::Warning, "env_files"));
}

#[test]
fn practice_warnings_do_not_change_the_verdict() {
    let text = RL
        .replace("max_steps = 20\n", "output_dir = \"/home/me/runs\"\n")
        .replace("[deployment]\nnum_train_gpus = 2\nnum_infer_gpus = 2\n", "")
        + "[ckpt]\n[slurm]\n[monitors.wandb]\nproject = \"x\"\n[trainer.model]\noptimization_dtype = \"bfloat16\"\n";
    let r = run(&text);
    assert!(r.valid, "{:#?}", r.findings);
    for path in [
        "output_dir",
        "max_steps",
        "deployment.num_train_gpus",
        "deployment.num_infer_gpus",
        "ckpt",
        "slurm",
        "trainer.model.optimization_dtype",
    ] {
        assert!(
            has(&r, Severity::Warning, path),
            "no warning at {path}: {:#?}",
            r.findings
        );
    }
    let forwarded = Options {
        forwarded_secrets: Some(vec!["HF_TOKEN".into()]),
        ..Options::default()
    };
    let r = validate(&text, &forwarded).expect("parses");
    assert!(
        r.findings
            .iter()
            .any(|f| f.message.contains("WANDB_API_KEY is not forwarded"))
    );
}

#[test]
fn eval_on_the_training_source_is_flagged() {
    let text = format!(
        "{RL}[orchestrator.eval]\n[[orchestrator.eval.source]]\nname = \"held\"\n[orchestrator.eval.source.env.taskset]\nid = \"reverse-text\"\n"
    );
    let r = run(&text);
    assert!(r.valid);
    assert!(has(
        &r,
        Severity::Warning,
        "orchestrator.eval.source.0.env.taskset"
    ));
}

#[test]
fn credentials_are_flagged_but_never_quoted() {
    let token = format!("ghp_{}", "A".repeat(36));
    let r = run(&format!(
        "{RL}[trainer.env_vars]\nGITHUB_TOKEN = \"{token}\"\n"
    ));
    let json = serde_json::to_string(&r).expect("serialises");
    assert!(!json.contains(&token));
    assert!(has(&r, Severity::Warning, "trainer.env_vars.GITHUB_TOKEN"));
    let r = run(&format!("{RL}[trainer.model]\nimpl = \"{token}\"\n"));
    let json = serde_json::to_string(&r).expect("serialises");
    assert!(!r.valid && !json.contains(&token), "{json}");
}

#[test]
fn account_facts_become_account_findings() {
    let mut r = run(&format!(
        "gpu_type = \"H200_141GB\"\nvolume = \"fresh\"\nmax_steps = 2000\n{}",
        RL.replace("max_steps = 20\n", "")
    ));
    let facts = AccountFacts {
        trainable_models: Some(vec!["Qwen/Qwen3-4B".into()]),
        gpu_types: Some(vec!["B200_180GB".into()]),
        volumes: Some(vec!["research".into()]),
        prepare_schema_commit: Some("feedface".repeat(5)),
        prior_runs: Some(0),
    };
    apply(&mut r, &facts);
    assert!(!r.valid);
    let account: Vec<_> = r
        .findings
        .iter()
        .filter(|f| f.source == Source::Account)
        .map(|f| f.path.as_str())
        .collect();
    for p in ["model.name", "gpu_type", "volume", "", "max_steps"] {
        assert!(
            account.contains(&p),
            "no account finding at {p:?}: {account:?}"
        );
    }
    assert!(r.checkers.iter().any(|c| c.name == "account"));
    assert!(
        schema_drift("559b4477").is_none(),
        "a prefix of our commit is no drift"
    );
}

#[test]
fn sft_rules_apply_in_sft_mode() {
    let r = run("[data]\nname = \"x\"\nbatch_size = 10\nmicro_batch_size = 3\n[inference]\n");
    assert_eq!(r.mode, factory_config::Mode::Sft);
    assert!(has(&r, Severity::Error, "data"));
    let r = run("[data]\nname = \"datasets/x\"\n[renderer]\nname = \"default\"\n");
    assert!(
        has(&r, Severity::Error, ""),
        "default renderer with real data"
    );
    let r = run("[data]\ntype = \"fake\"\n[renderer]\nname = \"default\"\n");
    assert!(
        !r.findings.iter().any(|f| f.severity == Severity::Error),
        "{:#?}",
        r.findings
    );
}
