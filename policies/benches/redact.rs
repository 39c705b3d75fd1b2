//! Redaction throughput on 1 MiB of log text shaped like the sandbox's (`sandbox/src/sim.rs`:
//! JSON lines with a timestamp, `Step k | reward … | n rollouts`, progress records, plain
//! `[trainer] step=k loss=… grad_norm=…` lines, a Hub URL), with three known values held, as
//! the server holds `PRIME_API_KEY`, `WANDB_API_KEY` and `HF_TOKEN`.
//!
//! Two texts: clean (nothing to redact) and with hits (every eighth step adds a line, about one
//! line in 35, that carries a known value, an `hf_` token, a `Bearer` header or a `HF_TOKEN=`
//! assignment). Each is timed with the one-pass [`Redactor`] and with the redactor it replaced
//! ([`LegacyRedactor`], exposed by the `bench-legacy` feature that this crate's dev-dependency
//! on itself turns on).
//!
//! Then an answer's tree shaped as `list_models`' (12 models with two clusters each, an
//! on-demand offer: 190 short strings and keys), redacted with its strings searched together
//! ([`Redactor::redact_json`]) and each on its own (`Redactor::redact_json_each`, the walk it
//! replaced), each from a fresh copy of the tree.

use std::fmt::Write as _;
use std::hint::black_box;

use criterion::{BatchSize, BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use factory_policies::redact::legacy::LegacyRedactor;
use factory_policies::{KnownSecrets, Redactor};
use secrecy::SecretString;
use serde_json::{Value, json};

const MIB: usize = 1 << 20;

const PRIME_KEY: &str = "pit_Xq8vR2mT5kL9wB3nZ7cY4dF6";
const WANDB_KEY: &str = "0f3a9c7e1b5d2468ace013579bdf2468ace01357";
const HF_TOKEN: &str = "hf_QwErTyUiOpAsDfGhJkLzXcVbNm0123456789";

fn known() -> KnownSecrets {
    KnownSecrets::new()
        .with("PRIME_API_KEY", &SecretString::from(PRIME_KEY))
        .with("WANDB_API_KEY", &SecretString::from(WANDB_KEY))
        .with("HF_TOKEN", &SecretString::from(HF_TOKEN))
}

/// One step's lines, as the sandbox writes them.
fn step_lines(out: &mut String, k: usize) {
    let (h, m, s) = (k / 3600 % 24, k / 60 % 60, k % 60);
    let ts = format!("2026-12-01T{h:02}:{m:02}:{s:02}.{:03}Z", k % 1000);
    let reward = (k % 97) as f64 / 97.0;
    let loss = 2.0 / (1.0 + k as f64 / 50.0);
    let _ = writeln!(
        out,
        "{{\"timestamp\":\"{ts}\",\"level\":\"INFO\",\"message\":\"Step {k} | reward {reward:.4} | 64 rollouts\",\"tag\":\"orchestrator\",\"step\":{k}}}"
    );
    let _ = writeln!(
        out,
        "{{\"timestamp\":\"{ts}\",\"level\":\"INFO\",\"type\":\"progress\",\"step\":{k},\"total\":1000}}"
    );
    let _ = writeln!(
        out,
        "{{\"timestamp\":\"{ts}\",\"level\":\"INFO\",\"message\":\"Step {k} | loss {loss:.4} | lr 3e-6\",\"tag\":\"trainer\",\"step\":{k}}}"
    );
    let _ = writeln!(
        out,
        "[trainer] step={k} loss={loss:.4} grad_norm=0.{:04}",
        k * 37 % 10000
    );
    if k.is_multiple_of(5) {
        let _ = writeln!(out, "step {k}: buffer full, {}% of max_steps", k / 10);
    }
    if k.is_multiple_of(50) {
        let _ = writeln!(
            out,
            "{{\"timestamp\":\"{ts}\",\"level\":\"INFO\",\"message\":\"Model Qwen/Qwen3-0.6B is not cached on this cluster; downloading weights from the Hugging Face Hub (https://huggingface.co/Qwen/Qwen3-0.6B)\",\"tag\":\"trainer\"}}"
        );
    }
}

/// 1 MiB of log text; with `hits`, every eighth step adds a line that carries a secret.
fn log_text(hits: bool) -> String {
    let mut out = String::with_capacity(MIB + 4096);
    let mut k = 0;
    let mut steps: usize = 0;
    while out.len() < MIB {
        k += 1;
        step_lines(&mut out, k);
        steps += 1;
        if hits && steps.is_multiple_of(8) {
            let _ = match k % 4 {
                0 => writeln!(out, "[trainer] using api key {PRIME_KEY} for uploads"),
                1 => writeln!(out, "wandb: login with {WANDB_KEY}"),
                2 => writeln!(out, "GET /models Authorization: Bearer {HF_TOKEN}"),
                _ => writeln!(
                    out,
                    "env HF_TOKEN=hf_AbCdEfGh12AbCdEfGh12AbCdEfGh12XyZw set"
                ),
            };
        }
    }
    let mut cut = MIB;
    while !out.is_char_boundary(cut) {
        cut -= 1;
    }
    out.truncate(cut);
    out
}

fn bench(c: &mut Criterion) {
    let new = Redactor::new(known());
    let old = LegacyRedactor::new(known());
    for (name, hits) in [("clean", false), ("hits", true)] {
        let text = log_text(hits);
        let changed = new.redact(&text) != text.as_str();
        assert_eq!(changed, hits, "the {name} text is {name}");
        assert_eq!(new.redact(&text), old.redact(&text), "both redactors agree");
        let mut group = c.benchmark_group(format!("redact 1 MiB of log text, {name}"));
        group.throughput(Throughput::Bytes(text.len() as u64));
        group.bench_with_input(BenchmarkId::new("one-pass", name), &text, |b, t| {
            b.iter(|| new.redact(black_box(t)).len())
        });
        group.bench_with_input(BenchmarkId::new("old", name), &text, |b, t| {
            b.iter(|| old.redact(black_box(t)).len())
        });
        group.finish();
    }
}

/// An answer shaped as `list_models`': names, ids and GPU types, most of them with digits (so the
/// clean cache keeps none of them).
fn models_answer() -> Value {
    let models: Vec<Value> = (0..12)
        .map(|i| {
            json!({
                "name": format!("Qwen/Qwen3-{i}B-Instruct-2507"),
                "clusters": [
                    {"cluster_id": format!("cl-{i}a9f3"), "cluster_name": format!("us-east-{i}"), "gpu_type": "H100_80GB"},
                    {"cluster_id": format!("cl-{i}b7e2"), "cluster_name": format!("eu-west-{i}"), "gpu_type": "A100_80GB"},
                ],
            })
        })
        .collect();
    json!({
        "models": models,
        "on_demand": [{"gpu_type": "H100_80GB", "price_per_gpu_hour": 2.49, "available_now": true, "is_beta": true, "discount_label": null}],
        "on_demand_beta_access": true,
        "notes": [],
    })
}

fn bench_tree(c: &mut Criterion) {
    let r = Redactor::new(known());
    let tree = models_answer();
    let (mut together, mut each) = (tree.clone(), tree.clone());
    r.redact_json(&mut together);
    r.redact_json_each(&mut each);
    assert_eq!(together, each, "both walks agree");
    assert_eq!(together, tree, "the answer is clean");
    let mut group = c.benchmark_group("redact list_models' answer (190 strings)");
    group.bench_function("searched together", |b| {
        b.iter_batched_ref(
            || tree.clone(),
            |t| r.redact_json(black_box(t)),
            BatchSize::SmallInput,
        )
    });
    group.bench_function("each on its own", |b| {
        b.iter_batched_ref(
            || tree.clone(),
            |t| r.redact_json_each(black_box(t)),
            BatchSize::SmallInput,
        )
    });
    group.finish();
}

criterion_group!(benches, bench, bench_tree);
criterion_main!(benches);
