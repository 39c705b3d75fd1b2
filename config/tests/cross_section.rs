//! Issue 18 §2, config side: a limit belonging to one section binds only where that section
//! is present (the validator never blocks what the schema accepts); a W&B key pasted into
//! `[monitors.wandb]` is an error while the same shape elsewhere (a commit SHA) is not; local
//! paths anywhere are warned about; unknown keys get a "did you mean" when one is close.

use factory_config::{Options, Report, Severity, validate};

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

const SFT: &str = r#"
max_steps = 20
[model]
name = "Qwen/Qwen3-0.6B"
[data]
type = "fake"
seq_len = 1024
[deployment]
num_train_gpus = 1
"#;

fn run(text: &str) -> Report {
    validate(text, &Options::default()).expect("parses")
}

fn sft(text: &str) -> Report {
    validate(
        text,
        &Options {
            sft: true,
            ..Options::default()
        },
    )
    .expect("parses")
}

fn errors(r: &Report) -> Vec<String> {
    r.findings
        .iter()
        .filter(|f| f.severity == Severity::Error)
        .map(|f| format!("{}: {}", f.path, f.message))
        .collect()
}

fn rank_errors(r: &Report) -> Vec<String> {
    errors(r)
        .into_iter()
        .filter(|e| e.contains("512") || e.contains("rank"))
        .collect()
}

#[test]
fn vllms_lora_rank_ceiling_binds_only_where_inference_is() {
    // With [inference], vLLM's max_lora_rank is the trainer rank: above 512 it fails (R14).
    let with_inference = format!("{RL}[trainer.model.lora]\nrank = 1024\n");
    assert!(!rank_errors(&run(&with_inference)).is_empty());
    // A trainer-only RL run (fake data, no [inference]) has no vLLM: the rank is the
    // trainer's own business (>= 1).
    let trainer_only = RL
        .replace("[inference]\n", "")
        .replace("num_infer_gpus = 2", "num_infer_gpus = 0")
        + "[trainer.data.fake]\n[trainer.model.lora]\nrank = 1024\n";
    let r = run(&trainer_only);
    assert!(rank_errors(&r).is_empty(), "{:#?}", errors(&r));
    // SFT without online eval has no inference at all.
    let r = sft(&format!("{SFT}[model.lora]\nrank = 1024\n"));
    assert!(rank_errors(&r).is_empty(), "{:#?}", errors(&r));
    assert!(r.valid, "{:#?}", errors(&r));
    // The limit is vLLM's: where [inference] sets max_lora_rank itself, it binds there.
    let r = run(&format!("{RL}[inference.vllm]\nmax_lora_rank = 1024\n"));
    assert!(
        errors(&r)
            .iter()
            .any(|e| e.starts_with("inference.vllm.max_lora_rank")),
        "{:#?}",
        errors(&r)
    );
}

#[test]
fn a_wandb_key_under_monitors_wandb_is_an_error_but_a_commit_sha_elsewhere_is_not() {
    let hex = "0123456789abcdef0123456789abcdef01234567";
    for table in ["monitors.wandb", "trainer.monitors.wandb"] {
        let text = format!("{RL}[{table}]\nproject = \"{hex}\"\n");
        let r = run(&text);
        let path = format!("{table}.project");
        let f = r
            .findings
            .iter()
            .find(|f| f.path == path && f.severity == Severity::Error)
            .unwrap_or_else(|| panic!("{table}: {:#?}", r.findings));
        assert!(f.message.contains("W&B API key"), "{}", f.message);
        // The value is never quoted in any finding.
        assert!(r.findings.iter().all(|f| !f.message.contains(hex)
            && !f.hint.as_deref().unwrap_or("").contains(hex)));
    }
    let text = RL.replace(
        "id = \"reverse-text\"\n",
        &format!("id = \"reverse-text\"\nrevision = \"{hex}\"\n"),
    );
    let r = run(&text);
    assert!(r.valid, "{:#?}", errors(&r));
}

#[test]
fn local_paths_anywhere_are_warned_about_volume_paths_are_not() {
    let text = RL.replace(
        "id = \"reverse-text\"\n",
        "id = \"reverse-text\"\ndataset_path = \"/home/me/data/train.jsonl\"\nsystem_prompt_file = \"./prompt.txt\"\nvolume_data = \"/volume/datasets/x\"\n",
    );
    let r = run(&text);
    let warned: Vec<&str> = r
        .findings
        .iter()
        .filter(|f| {
            f.severity == Severity::Warning
                && f.message
                    .contains("a path in TOML does not upload the file")
        })
        .map(|f| f.path.as_str())
        .collect();
    assert_eq!(
        warned,
        [
            "orchestrator.train.source.0.env.taskset.dataset_path",
            "orchestrator.train.source.0.env.taskset.system_prompt_file"
        ],
        "{:#?}",
        r.findings
    );
    assert!(r.valid);
}

#[test]
fn ckpt_without_a_volume_says_fetch_checkpoint_cannot_reach_it() {
    let r = run(&format!("{RL}[ckpt]\ninterval = 5\n"));
    let f = r
        .findings
        .iter()
        .find(|f| f.path == "ckpt")
        .unwrap_or_else(|| panic!("{:#?}", r.findings));
    assert_eq!(f.severity, Severity::Warning);
    assert!(f.message.contains("fetch_checkpoint"), "{}", f.message);
    let r = run(&format!(
        "volume = \"research\"\n{RL}[ckpt]\ninterval = 5\n"
    ));
    assert!(
        r.findings.iter().all(|f| f.path != "ckpt"),
        "{:#?}",
        r.findings
    );
}

#[test]
fn unknown_keys_get_a_did_you_mean_from_the_schema() {
    for (text, want) in [
        (format!("{RL}[trainer.optim]\nlrr = 1e-5\n"), "`lr`"),
        (
            RL.replace("batch_size = 64", "bacth_size = 64"),
            "`batch_size`",
        ),
        (
            format!("{RL}[trainer.model]\nseq_lenn = 2048\n"),
            "`seq_len`",
        ),
    ] {
        let r = run(&text);
        let hint = r
            .findings
            .iter()
            .filter(|f| f.message == "Extra inputs are not permitted")
            .filter_map(|f| f.hint.clone())
            .collect::<Vec<_>>()
            .join("\n");
        assert!(hint.contains(&format!("did you mean {want}")), "{hint}");
    }
}
