//! What a run writes: its checkpoints (as the checkpoints API lists them) and the files under
//! `runs/<run_id>/` on its volume, computed from the run and the clock like everything else.
//!
//! **Inventions** (the API documents none of this; clients must not rely on it): the layout
//! `config.json`, `logs/trainer.log`, `checkpoints/step_<n>/model.safetensors` (a real
//! safetensors header, then deterministic bytes; 3 MiB + 4 KiB × n, or 256 MiB when the run's
//! name contains `bigckpt`) and `checkpoints/step_<n>/trainer_state.json`; checkpoint files
//! appear once READY; all bytes are generated on the fly from the run id and never held in
//! memory.

use bytes::Bytes;
use chrono::{DateTime, Utc};
use serde_json::{Value, json};

use crate::clock::{iso, plus_secs};
use crate::seed::Seed;
use crate::sim;
use crate::wire::Checkpoint;
use crate::world::{Run, Volume};

/// Size of a checkpoint's model file (invented): a few MB …
const MODEL_BASE_BYTES: u64 = 3 * 1024 * 1024;
/// … or this, for runs whose name contains `bigckpt` (the throughput case).
pub(crate) const BIG_MODEL_BYTES: u64 = 256 * 1024 * 1024;
/// Generated content comes in blocks of this size.
pub(crate) const BLOCK: u64 = 64 * 1024;

/// The run's checkpoints at `now`: every `[ckpt] interval` steps and at `max_steps`, UPLOADING
/// for half a step, then READY.
pub(crate) fn checkpoints(run: &Run, seed: &Seed, now: DateTime<Utc>) -> Vec<Checkpoint> {
    let t = &seed.timings;
    let ph = sim::phase(run, t, now);
    let max = sim::max_steps(run, t);
    let interval = sim::ckpt_interval(run, t);
    let mut steps: Vec<u32> = (1..=ph.steps)
        .filter(|k| k % interval == 0 || *k == max)
        .collect();
    if ph.status == "PAUSED" && ph.steps > 0 && !steps.contains(&ph.steps) {
        steps.push(ph.steps);
    }
    let bucket = run.volume.clone().unwrap_or_else(|| "run-outputs".into());
    steps
        .into_iter()
        .map(|k| {
            let created = sim::step_time(&ph, t, k);
            let ready_at = plus_secs(created, t.step_s / 2.0);
            let ready = ready_at <= ph.effective || ph.is_terminal();
            Checkpoint {
                id: format!("ckpt{}", &sim::hex_digest(&[&run.id, &k.to_string()])[..20]),
                rft_run_id: run.id.clone(),
                step: k,
                storage_url: format!(
                    "s3://sandbox-volumes/{bucket}/runs/{}/checkpoints/step_{k}",
                    run.id
                ),
                status: if ready { "READY" } else { "UPLOADING" },
                size_bytes: checkpoint_bytes(run, k),
                created_at: iso(created),
                uploaded_at: ready.then(|| iso(ready_at)),
            }
        })
        .collect()
}

/// What an object's bytes are.
#[derive(Debug, Clone)]
pub(crate) enum Content {
    /// Small generated text or JSON.
    Inline(Bytes),
    /// `header` then deterministic bytes seeded by `seed`, `len` in all.
    Generated { header: Bytes, seed: u64, len: u64 },
    /// Uploaded.
    Stored(Bytes),
}

impl Content {
    pub(crate) fn len(&self) -> u64 {
        match self {
            Content::Inline(b) | Content::Stored(b) => b.len() as u64,
            Content::Generated { len, .. } => *len,
        }
    }
}

#[derive(Debug, Clone)]
pub(crate) struct Object {
    /// Full key (`<pvc>/runs/…`).
    pub(crate) key: String,
    pub(crate) content: Content,
    pub(crate) etag: String,
    pub(crate) modified: DateTime<Utc>,
}

pub(crate) fn etag_of(parts: &[&str]) -> String {
    format!("\"{}\"", &sim::hex_digest(parts)[..32])
}

/// Size of the model file of checkpoint `step` (invented).
pub(crate) fn model_bytes(run: &Run, step: u32) -> u64 {
    if run.name.as_deref().is_some_and(|n| n.contains("bigckpt")) {
        BIG_MODEL_BYTES
    } else {
        MODEL_BASE_BYTES + 4096 * u64::from(step)
    }
}

pub(crate) fn trainer_state(run: &Run, step: u32) -> Bytes {
    Bytes::from(
        serde_json::to_vec_pretty(&json!({
            "_note": "invented by factory-sandbox: the real layout is prime-rl's",
            "run_id": run.id,
            "step": step,
            "model_file": "model.safetensors",
        }))
        .unwrap_or_default(),
    )
}

/// A safetensors header for one F32 tensor filling the rest of the file.
pub(crate) fn safetensors_header(total: u64) -> Bytes {
    // The JSON is padded to a multiple of 8 with spaces, as the format allows.
    let mut body_len = 0u64;
    let mut json = String::new();
    for _ in 0..2 {
        let data = total.saturating_sub(8 + body_len);
        let floats = data / 4;
        json = format!(
            "{{\"__metadata__\":{{\"format\":\"pt\",\"note\":\"invented by factory-sandbox\"}},\"weight\":{{\"dtype\":\"F32\",\"shape\":[{floats}],\"data_offsets\":[0,{}]}}}}",
            floats * 4
        );
        body_len = (json.len() as u64).div_ceil(8) * 8;
    }
    while (json.len() as u64) < body_len {
        json.push(' ');
    }
    let mut out = Vec::with_capacity(8 + json.len());
    out.extend_from_slice(&(json.len() as u64).to_le_bytes());
    out.extend_from_slice(json.as_bytes());
    Bytes::from(out)
}

/// Bytes on the volume of checkpoint `step` (what the checkpoints API reports as `sizeBytes`).
pub(crate) fn checkpoint_bytes(run: &Run, step: u32) -> u64 {
    model_bytes(run, step) + trainer_state(run, step).len() as u64
}

pub(crate) fn run_on_volume(run: &Run, v: &Volume) -> bool {
    run.volume.as_deref() == Some(v.name.as_str())
        && run.team_id == v.team_id
        && (v.team_id.is_some() || run.user_id == v.user_id)
}

/// The files a run has written under `runs/<run_id>/` (volume-relative keys), now.
pub(crate) fn run_objects(run: &Run, seed: &Seed, now: DateTime<Utc>, pvc: &str) -> Vec<Object> {
    let ph = sim::phase(run, &seed.timings, now);
    let mut out = Vec::new();
    if !ph.has_started() {
        return out;
    }
    let base = format!("{pvc}/runs/{}", run.id);
    let started = ph.started_at.unwrap_or(run.created_at);
    let config = Bytes::from(serde_json::to_vec_pretty(&run.config).unwrap_or_default());
    out.push(Object {
        key: format!("{base}/config.json"),
        etag: etag_of(&[&run.id, "config"]),
        content: Content::Inline(config),
        modified: started,
    });
    let mut log = String::new();
    for k in 0..=ph.steps {
        log.push_str(&format!(
            "{} INFO [trainer] step {k}/{} done (sandbox log)\n",
            iso(sim::step_time(&ph, &seed.timings, k)),
            sim::max_steps(run, &seed.timings)
        ));
    }
    out.push(Object {
        key: format!("{base}/logs/trainer.log"),
        etag: etag_of(&[&run.id, "log", &ph.steps.to_string()]),
        content: Content::Inline(Bytes::from(log)),
        modified: ph.last_step_at.unwrap_or(started),
    });
    for c in checkpoints(run, seed, now) {
        if c.status != "READY" {
            continue;
        }
        let k = c.step;
        let modified = c
            .uploaded_at
            .as_deref()
            .and_then(|s| DateTime::parse_from_rfc3339(s).ok())
            .map_or(now, |d| d.with_timezone(&Utc));
        let dir = format!("{base}/checkpoints/step_{k}");
        let len = model_bytes(run, k);
        let seed_n = u64::from_str_radix(&sim::hex_digest(&[&run.id, &k.to_string()])[..16], 16)
            .unwrap_or(u64::from(k));
        out.push(Object {
            key: format!("{dir}/model.safetensors"),
            etag: etag_of(&[&run.id, &k.to_string(), "model", &len.to_string()]),
            content: Content::Generated {
                header: safetensors_header(len),
                seed: seed_n,
                len,
            },
            modified,
        });
        out.push(Object {
            key: format!("{dir}/trainer_state.json"),
            etag: etag_of(&[&run.id, &k.to_string(), "state"]),
            content: Content::Inline(trainer_state(run, k)),
            modified,
        });
    }
    out
}

/// Files a run has written on its volume, as `/_sandbox/volumes/{name}/files` lists them.
pub(crate) fn volume_files(run: &Run, seed: &Seed, now: DateTime<Utc>) -> Vec<Value> {
    run_objects(run, seed, now, "")
        .into_iter()
        .map(|o| json!({"path": o.key.trim_start_matches('/'), "size": o.content.len()}))
        .collect()
}

/// One `BLOCK` of generated content starting at `block_start` (a multiple of `BLOCK`).
pub(crate) fn generated_block(header: &[u8], seed: u64, block_start: u64) -> Vec<u8> {
    let mut out = vec![0u8; BLOCK as usize];
    let mut state = seed ^ block_start.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    for chunk in out.chunks_exact_mut(8) {
        // splitmix64
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        chunk.copy_from_slice(&(z ^ (z >> 31)).to_le_bytes());
    }
    let h = header.len() as u64;
    if block_start < h {
        let n = (h - block_start).min(BLOCK) as usize;
        out[..n].copy_from_slice(&header[block_start as usize..block_start as usize + n]);
    }
    out
}
