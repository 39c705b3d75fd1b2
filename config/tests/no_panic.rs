//! No TOML can make the validator panic: random documents, and example configs with random
//! edits (values replaced by other types, keys added, tables emptied), all come back as a
//! report or a syntax error.

use factory_config::{Options, validate, validate_table};
use proptest::prelude::*;
use toml::{Table, Value};

const BASE: &str = r#"
max_steps = 20
seq_len = 2048
[model]
name = "PrimeIntellect/Qwen3-0.6B-Reverse-Text-SFT"
[deployment]
num_train_gpus = 1
num_infer_gpus = 1
[orchestrator]
batch_size = 128
group_size = 16
[orchestrator.renderer]
name = "prime-qwen3"
[[orchestrator.train.source]]
name = "reverse-text"
[orchestrator.train.source.env.taskset]
id = "reverse-text"
[orchestrator.train.source.env.agent.runtime]
type = "subprocess"
[trainer.model.lora]
rank = 8
[trainer.optim]
type = "muon"
[trainer.scheduler]
type = "cosine"
[inference.vllm]
tensor_parallel_size = 2
[ckpt]
[data]
seq_len = 16
"#;

const KEYS: &[&str] = &[
    "type",
    "name",
    "model",
    "data",
    "trainer",
    "orchestrator",
    "inference",
    "deployment",
    "max_steps",
    "seq_len",
    "ckpt",
    "resume",
    "step",
    "dir",
    "lora",
    "rank",
    "batch_size",
    "group_size",
    "source",
    "env",
    "taskset",
    "id",
    "renderer",
    "weight_broadcast",
    "None",
    "num_train_nodes",
    "num_infer_gpus",
    "tensor_parallel_size",
    "k8s",
    "volume_size",
    "source_ref",
    "gpu_type",
    "full_offload",
    "cp",
    "vlm",
    "algo",
    "teacher",
    "sampling",
];

fn value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        any::<i64>().prop_map(Value::Integer),
        any::<f64>().prop_map(Value::Float),
        any::<bool>().prop_map(Value::Boolean),
        prop::sample::select(KEYS).prop_map(|s| Value::String(s.to_string())),
        ".{0,12}".prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(
                prop::sample::select(KEYS).prop_map(String::from),
                inner,
                0..4
            )
            .prop_map(|m| Value::Table(m.into_iter().collect())),
        ]
    })
}

/// Replace or insert `v` at a path chosen by `picks` in `doc`.
fn mutate(doc: &mut Table, picks: &[usize], key: &str, v: Value) {
    let Some((&p, rest)) = picks.split_first() else {
        doc.insert(key.to_string(), v);
        return;
    };
    let Some(k) = doc.keys().nth(p % doc.len().max(1)).cloned() else {
        doc.insert(key.to_string(), v);
        return;
    };
    match doc.get_mut(&k) {
        Some(Value::Table(t)) => mutate(t, rest, key, v),
        Some(Value::Array(items)) if !items.is_empty() => {
            let n = p % items.len();
            match &mut items[n] {
                Value::Table(t) => mutate(t, rest, key, v),
                other => *other = v,
            }
        }
        Some(other) => *other = v,
        None => {}
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn arbitrary_text_never_panics(text in "(?s).{0,400}") {
        let _ = validate(&text, &Options::default());
    }

    #[test]
    fn arbitrary_documents_never_panic(doc in prop::collection::btree_map(prop::sample::select(KEYS).prop_map(String::from), value(), 0..8), sft in any::<bool>()) {
        let table: Table = doc.into_iter().collect();
        let report = validate_table(table, &Options { sft, ..Options::default() });
        let _ = serde_json::to_string(&report);
    }

    #[test]
    fn mutated_examples_never_panic(edits in prop::collection::vec((prop::collection::vec(0usize..40, 0..5), prop::sample::select(KEYS), value()), 1..6), sft in any::<bool>()) {
        let mut doc: Table = BASE.parse().expect("base parses");
        for (picks, key, v) in edits {
            mutate(&mut doc, &picks, key, v);
        }
        let report = validate_table(doc, &Options { sft, ..Options::default() });
        prop_assert_eq!(report.valid, !report.findings.iter().any(|f| f.severity == factory_config::Severity::Error));
    }
}
