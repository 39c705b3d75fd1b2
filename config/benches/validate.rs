//! Time to validate a typical config: the reverse-text RL example (parse + full native
//! pipeline), plus the SFT example and the pipeline without parsing.

use criterion::{Criterion, criterion_group, criterion_main};
use factory_config::{Options, validate, validate_table};

const RL: &str = r#"
max_steps = 20
seq_len = 2048

[model]
name = "PrimeIntellect/Qwen3-0.6B-Reverse-Text-SFT"

[monitors.wandb]
project = "reverse-text"
name = "reverse-text"

[orchestrator]
batch_size = 128
group_size = 16

[orchestrator.train.sampling]
max_completion_tokens = 128

[[orchestrator.train.source]]
name = "reverse-text"

[orchestrator.train.source.env.taskset]
id = "reverse-text"

[orchestrator.train.source.env.agent.harness]
id = "null"

[orchestrator.train.source.env.agent.runtime]
type = "subprocess"

[trainer.optim]
lr = 3e-6

[ckpt] # Checkpoint at the end of training

[inference]

[orchestrator.renderer]
name = "prime-qwen3"
"#;

const SFT: &str = r#"
max_steps = 20
[ckpt]
[model]
name = "PrimeIntellect/Qwen3-1.7B"
[data]
name = "willcb/V3-wordle"
seq_len = 1024
batch_size = 64
micro_batch_size = 1
[optim]
lr = 1e-5
"#;

fn bench(c: &mut Criterion) {
    let opts = Options::default();
    c.bench_function("validate reverse-text RL (parse + rules)", |b| {
        b.iter(|| validate(std::hint::black_box(RL), &opts))
    });
    c.bench_function("validate wordle SFT (parse + rules)", |b| {
        b.iter(|| validate(std::hint::black_box(SFT), &opts))
    });
    let doc: toml::Table = RL.parse().expect("parses");
    c.bench_function("validate reverse-text RL (rules only)", |b| {
        b.iter(|| validate_table(std::hint::black_box(doc.clone()), &opts))
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
