//! Reading a `GET /rft/runs/{id}/metrics` answer as `get_metrics` does: the whole answer
//! read from its body into [`MetricsResponse`] (every record read as a tree would read it),
//! then every record's step and numbers ([`MetricRecord::fields`]). The answer is shaped like the
//! sandbox's (`sandbox/src/sim.rs`): records of eight fields, a timestamp among them; 200 of
//! them (the bench's run) and 2,000.

use std::fmt::Write as _;
use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use factory_platform::wire::runs::{MetricRecord, MetricsResponse};

/// The answer with `n` records.
fn answer(n: usize) -> String {
    let mut out = String::from("{\"metrics\":[");
    for k in 1..=n {
        if k > 1 {
            out.push(',');
        }
        let loss = 2.3 / (1.0 + k as f64 / 400.0) + (k % 7) as f64 * 0.0031;
        let _ = write!(
            out,
            "{{\"step\":{k},\"loss\":{loss:.4},\"entropy\":{:.4},\"grad_norm\":{:.4},\"learning_rate\":0.00001,\"tokens_per_second\":{}.0,\"rollouts\":16,\"timestamp\":\"2026-12-02T03:{:02}:{:02}.374Z\"}}",
            1.1 - (k % 13) as f64 * 0.0021,
            0.8 + (k % 29) as f64 * 0.013,
            4000 + k * 37 % 500,
            k / 60 % 60,
            k % 60
        );
    }
    out.push_str("]}");
    out
}

fn read(c: &mut Criterion) {
    let mut group = c.benchmark_group("metrics answer");
    for n in [200usize, 2000] {
        let body = answer(n);
        group.throughput(Throughput::Bytes(body.len() as u64));
        group.bench_with_input(
            BenchmarkId::new("decode and fields", n),
            &body,
            |b, body| {
                b.iter(|| {
                    let resp = MetricsResponse::from_body(body.as_bytes()).unwrap();
                    let fields: usize = resp
                        .metrics
                        .iter()
                        .map(MetricRecord::fields)
                        .map(|f| f.map_or(0, |f| f.values().filter(|(_, v)| v.is_some()).count()))
                        .sum();
                    black_box(fields)
                })
            },
        );
    }
    group.finish();
}

criterion_group!(benches, read);
criterion_main!(benches);
