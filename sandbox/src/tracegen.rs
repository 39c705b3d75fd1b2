//! Traces of hosted runs, as the traces service (§9) would hold them: a few per training step
//! for RL runs, and eval traces at the eval interval under a separate trace run
//! (`<run_id>-eval`, `context.run_type = "eval"`). The trace/run id mapping, the document
//! layout and the counts are inventions of the sandbox. Raw documents are generated on the fly;
//! a run seeded with `trace_bytes_total` gets padded documents streamed without being held.
//!
//! Failed rollouts and upload gaps (inventions, by run name like the lifecycle's triggers): a
//! run whose name contains `flaky` has about a quarter of its rollouts erroring; one whose name
//! contains `upload-gap` has no train traces at steps 6-8 and every 13th step, as if those
//! uploads were lost. Traces cycle through the run's environments, and tasks vary.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde_json::{Value, json};

use crate::clock::{iso_secs, plus_secs};
use crate::seed::Seed;
use crate::sim::{self, Phase, phase, unit};
use crate::wire::{TraceExecution, TraceModel, TraceScore, TraceSummary};
use crate::world::Run;

#[derive(Debug, Clone)]
pub(crate) struct TraceRec {
    pub(crate) summary: TraceSummary,
    pub(crate) step: u32,
    pub(crate) episode_index: u32,
    pub(crate) created: DateTime<Utc>,
    /// Exact size of the padded document, for runs seeded with `trace_bytes_total`.
    pub(crate) padded_size: Option<u64>,
}

pub(crate) fn eval_run_id(run_id: &str) -> String {
    format!("{run_id}-eval")
}

/// Where one trace of a run sits, before its record is built ([`build`]): its step, its index
/// in the step, train or eval, and its padded size. Cheap to list, so a request can page or
/// pick traces without building every record of the run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Slot {
    pub(crate) k: u32,
    pub(crate) i: u32,
    pub(crate) eval: bool,
    padded_size: Option<u64>,
}

impl Slot {
    /// Whether this slot's trace belongs to the trace run `trace_run` (`<run>` or `<run>-eval`).
    pub(crate) fn in_trace_run(&self, run: &Run, trace_run: &str) -> bool {
        if self.eval {
            trace_run.strip_suffix("-eval").is_some_and(|r| r == run.id)
        } else {
            trace_run == run.id
        }
    }

    /// The trace's id (as its record's `trace_id`).
    pub(crate) fn trace_id(&self, run: &Run) -> String {
        let (k, i) = (self.k, self.i);
        if self.eval {
            format!("tr-{}-eval-{k:05}-{i}", run.id)
        } else {
            format!("tr-{}-{k:05}-{i}", run.id)
        }
    }

    /// The trace's episode id (as its record's `episode_id`).
    pub(crate) fn episode_id(&self, run: &Run) -> String {
        let (k, e) = (self.k, self.i / 2);
        if self.eval {
            format!("ep-{}-eval-{k:05}-{e}", run.id)
        } else {
            format!("ep-{}-{k:05}-{e}", run.id)
        }
    }

    /// When the trace was created (as its record's `created`).
    pub(crate) fn created(&self, ph: &Phase, seed: &Seed) -> DateTime<Utc> {
        plus_secs(
            sim::step_time(ph, &seed.timings, self.k),
            f64::from(self.i) * 0.01,
        )
    }
}

/// A run's traces at an instant, as slots.
pub(crate) struct RunTraces {
    pub(crate) ph: Phase,
    pub(crate) slots: Vec<Slot>,
}

/// Every trace the run has produced by `now`, as slots in [`traces_for`]'s order.
pub(crate) fn slots_for(run: &Run, seed: &Seed, now: DateTime<Utc>) -> RunTraces {
    let t = &seed.timings;
    let ph = phase(run, t, now);
    let mut slots = Vec::new();
    if !run.sft {
        let per = t.traces_per_step.max(1);
        let padded = run.trace_bytes_total.map(|total| {
            let n = u64::from(sim::max_steps(run, t)) * u64::from(per);
            (total / n.max(1), total % n.max(1), n)
        });
        let gap = has_upload_gap(run);
        for k in 1..=ph.steps {
            if gap && upload_lost(k) {
                continue;
            }
            for i in 0..per {
                let padded_size = padded.map(|(each, rem, n)| {
                    let ordinal = u64::from(k - 1) * u64::from(per) + u64::from(i) + 1;
                    if ordinal == n { each + rem } else { each }
                });
                slots.push(Slot {
                    k,
                    i,
                    eval: false,
                    padded_size,
                });
            }
        }
    }
    if let Some(every) = sim::eval_interval(&run.config) {
        let mut k = every;
        while k <= ph.steps {
            for i in 0..t.eval_traces_per_step.max(1) {
                slots.push(Slot {
                    k,
                    i,
                    eval: true,
                    padded_size: None,
                });
            }
            k += every;
        }
    }
    RunTraces { ph, slots }
}

/// The record of the trace at `slot` of `run` (`ph`: the run's phase its slots were listed at).
pub(crate) fn build(run: &Run, seed: &Seed, ph: &Phase, slot: Slot) -> TraceRec {
    let run_type = if slot.eval { "eval" } else { "train" };
    make(run, seed, ph, slot.k, slot.i, run_type, slot.padded_size)
}

/// Every trace the run has produced by `now` (the routes build only what they answer with;
/// their tests compare with building everything).
#[cfg(test)]
pub(crate) fn traces_for(run: &Run, seed: &Seed, now: DateTime<Utc>) -> Vec<TraceRec> {
    let rt = slots_for(run, seed, now);
    rt.slots
        .iter()
        .map(|s| build(run, seed, &rt.ph, *s))
        .collect()
}

/// A run whose train uploads are lost at some steps (name contains `upload-gap`).
fn has_upload_gap(run: &Run) -> bool {
    run.name
        .as_deref()
        .is_some_and(|n| n.to_ascii_lowercase().contains("upload-gap"))
}

/// The steps whose train traces an `upload-gap` run never uploaded: 6-8 and every 13th.
pub(crate) fn upload_lost(k: u32) -> bool {
    (6..=8).contains(&k) || k.is_multiple_of(13)
}

/// A run with many failed rollouts (name contains `flaky`).
fn is_flaky(run: &Run) -> bool {
    run.name
        .as_deref()
        .is_some_and(|n| n.to_ascii_lowercase().contains("flaky"))
}

fn make(
    run: &Run,
    seed: &Seed,
    ph: &Phase,
    k: u32,
    i: u32,
    run_type: &'static str,
    padded_size: Option<u64>,
) -> TraceRec {
    let trace_run = if run_type == "eval" {
        eval_run_id(&run.id)
    } else {
        run.id.clone()
    };
    let created = plus_secs(sim::step_time(ph, &seed.timings, k), f64::from(i) * 0.01);
    let salt = u64::from(k) * 1000 + u64::from(i) + if run_type == "eval" { 500 } else { 0 };
    let reward = (unit(&run.id, "trace-reward", salt) * 0.6 + 0.4 * f64::from(k) / 20.0).min(1.0);
    let reward = (reward * 10_000.0).round() / 10_000.0;
    let has_error =
        (k == 4 && i == 1) || (is_flaky(run) && unit(&run.id, "trace-error", salt) < 0.25);
    let envs = sim::environments(&run.config);
    let env = (!envs.is_empty()).then(|| envs[((i / 2) as usize) % envs.len()].id.clone());
    let model = sim::model_name(&run.config);
    let mut context = BTreeMap::new();
    context.insert("run_type".to_string(), run_type.to_string());
    context.insert("step".to_string(), k.to_string());
    context.insert("platform_run_id".to_string(), run.id.clone());
    context.insert("source".to_string(), "hosted_training".to_string());
    let episode_index = i / 2;
    let mut summary = TraceSummary {
        trace_id: format!("tr-{trace_run}-{k:05}-{i}"),
        upload_id: sim::hex_digest(&["upload", &trace_run, &k.to_string()]),
        episode_id: Some(format!("ep-{trace_run}-{k:05}-{episode_index}")),
        created_at: iso_secs(created),
        ingested_at: iso_secs(plus_secs(created, 2.0)),
        run_id: Some(trace_run),
        environment_id: env,
        model: TraceModel {
            provider: Some("prime".into()),
            id: model,
        },
        task_id: Some(format!("task-{:03}", (k * 7 + i * 3) % 200)),
        agent_name: Some("prime-rl".into()),
        score: TraceScore {
            reward: (!has_error).then_some(reward).or(Some(0.0)),
            outcome: Some(
                if has_error {
                    "error"
                } else if reward >= 0.5 {
                    "success"
                } else {
                    "failure"
                }
                .into(),
            ),
        },
        execution: TraceExecution {
            has_error,
            is_truncated: unit(&run.id, "trunc", salt) < 0.05,
        },
        duration_ms: 800 + (unit(&run.id, "dur", salt) * 4000.0) as u64,
        total_tokens: 300 + (unit(&run.id, "tok", salt) * 900.0) as u64,
        size_bytes: 0,
        context,
        user_id: run.user_id.clone(),
    };
    let mut rec = TraceRec {
        summary: summary.clone(),
        step: k,
        episode_index,
        created,
        padded_size,
    };
    summary.size_bytes = padded_size.unwrap_or_else(|| base_document(&rec).len() as u64);
    rec.summary = summary;
    rec
}

/// The trace document without padding.
fn base_document(rec: &TraceRec) -> String {
    let s = &rec.summary;
    let prompt = format!(
        "Solve task {} (step {}).",
        s.task_id.clone().unwrap_or_default(),
        rec.step
    );
    let answer = format!(
        "Sandbox answer for {} with reward {:?}.",
        s.trace_id, s.score.reward
    );
    json!({
        "schema_version": 1,
        "trace_id": s.trace_id,
        "episode_id": s.episode_id,
        "run_id": s.run_id,
        "created_at": s.created_at,
        "environment_id": s.environment_id,
        "model": {"provider": s.model.provider, "id": s.model.id},
        "task_id": s.task_id,
        "agent_name": s.agent_name,
        "context": s.context,
        "score": {"reward": s.score.reward, "outcome": s.score.outcome},
        "execution": {"has_error": s.execution.has_error, "is_truncated": s.execution.is_truncated},
        "nodes": [
            {"node_idx": 0, "parent_idx": null, "sampled": false, "message": {"role": "system", "content": "You are a helpful assistant."}},
            {"node_idx": 1, "parent_idx": 0, "sampled": false, "message": {"role": "user", "content": prompt}},
            {"node_idx": 2, "parent_idx": 1, "sampled": true, "message": {"role": "assistant", "content": answer}},
        ],
        "usage": {"total_tokens": s.total_tokens, "duration_ms": s.duration_ms},
    })
    .to_string()
}

/// The raw document as (head, filler length, tail): head + `filler` bytes of padding + tail.
pub(crate) fn raw_parts(rec: &TraceRec) -> (Vec<u8>, u64, Vec<u8>) {
    let base = base_document(rec);
    match rec.padded_size {
        None => (base.into_bytes(), 0, Vec::new()),
        Some(target) => {
            let mut head = base;
            head.pop(); // the closing brace
            head.push_str(",\"padding\":\"");
            let tail = b"\"}".to_vec();
            let filler = target.saturating_sub((head.len() + tail.len()) as u64);
            (head.into_bytes(), filler, tail)
        }
    }
}

/// The raw episode document: the episode and its member trace ids.
pub(crate) fn episode_document(episode_id: &str, members: &[&TraceRec]) -> Value {
    let first = members.first();
    json!({
        "schema_version": 1,
        "episode_id": episode_id,
        "run_id": first.and_then(|r| r.summary.run_id.clone()),
        "environment_id": first.and_then(|r| r.summary.environment_id.clone()),
        "created_at": first.map(|r| r.summary.created_at.clone()),
        "traces": members.iter().map(|r| r.summary.trace_id.clone()).collect::<Vec<_>>(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_upload_gap_loses_steps_6_to_8_and_every_13th() {
        let lost: Vec<u32> = (1..=40).filter(|&k| upload_lost(k)).collect();
        assert_eq!(lost, vec![6, 7, 8, 13, 26, 39]);
    }
}
