//! Volumes and artifacts end to end (issue 11): the real binary through rmcp's client against
//! the sandbox's transfer route and S3-compatible endpoint. A run is launched in plan mode, the
//! manual clock is advanced until it is COMPLETED (read with `get_run`: `watch_run` is another
//! issue), its latest checkpoint is fetched byte-identical, cut and expired transfers recover, a
//! dataset is uploaded and named by an SFT plan, and `run_report` says where everything is.
//! No transfer credential appears in any result, log or state file.

mod common;

use common::{plan_mode_args, rl_config};

use std::path::Path;

use common::{Client, Era, World, call, err, ok, text};
use factory_sandbox::{FaultEffect, FaultMatch, FaultRule, TEAM_ALPHA_ID};
use serde_json::{Value, json};

const TEAM: &str = TEAM_ALPHA_ID;
const OBJECTS: &str = "/_sandbox/s3/sandbox-volumes/";

/// Every result text a test saw, for the leak check.
#[derive(Default)]
struct Seen(Vec<String>);

impl Seen {
    async fn call(&mut self, c: &Client, tool: &str, args: Value) -> rmcp::model::CallToolResult {
        let r = call(c, tool, args).await;
        self.0.push(text(&r));
        if let Some(s) = &r.structured_content {
            self.0.push(s.to_string());
        }
        r
    }
}

async fn create_volume(w: &World, name: &str) {
    let resp = reqwest::Client::new()
        .post(format!("{}/api/v1/training/volumes", w.sandbox.base_url()))
        .bearer_auth(w.key(0))
        .json(&json!({"name": name, "size": "500Gi", "teamId": TEAM}))
        .send()
        .await
        .expect("volume create");
    assert!(resp.status().is_success(), "{}", resp.status());
    w.advance(5);
}

async fn run_to_completion(w: &World, seen: &mut Seen, c: &Client, run_id: &str) -> Value {
    for _ in 0..60 {
        w.advance(5);
        let r = ok(&seen.call(c, "get_run", json!({"run_id": run_id})).await);
        if r["run"]["terminal"] == true {
            assert_eq!(r["run"]["status"], "COMPLETED", "{r}");
            return r;
        }
    }
    panic!("run {run_id} never completed");
}

fn sha(bytes: &[u8]) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(bytes))
}

fn file_sha(path: &Path) -> (String, u64) {
    use sha2::Digest;
    use std::io::Read;
    let mut f = std::fs::File::open(path).expect("open");
    let mut h = sha2::Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    let mut n = 0u64;
    loop {
        let k = f.read(&mut buf).expect("read");
        if k == 0 {
            break;
        }
        h.update(&buf[..k]);
        n += k as u64;
    }
    (hex::encode(h.finalize()), n)
}

fn cut_rule(times: u32) -> FaultRule {
    FaultRule {
        method: Some("GET".into()),
        match_kind: FaultMatch::Prefix,
        times: Some(times),
        ..FaultRule::new(OBJECTS, FaultEffect::CutBody)
    }
}

/// Every file under `dir`, recursively.
fn files_under(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(files_under(&p));
        } else {
            out.push(p);
        }
    }
    out
}

#[tokio::test]
async fn checkpoints_out_datasets_in_and_the_report() {
    let w = World::new().await;
    let mut seen = Seen::default();
    create_volume(&w, "ckpts").await;
    let c = w.client(0, &plan_mode_args(), Era::Modern).await;

    // Launch (plan mode) on the volume and let it run to completion.
    let p = ok(&seen
        .call(
            &c,
            "plan_run",
            json!({"config_toml": rl_config("art-run", 10), "team_id": TEAM, "volume": "ckpts"}),
        )
        .await);
    let launched = ok(&seen
        .call(&c, "launch_run", json!({"plan_id": p["plan_id"]}))
        .await);
    let run_id = launched["run_id"].as_str().expect("run id").to_string();
    run_to_completion(&w, &mut seen, &c, &run_id).await;

    let vols = ok(&seen
        .call(&c, "list_volumes", json!({"team_id": TEAM}))
        .await);
    assert_eq!(vols["volumes"][0]["name"], "ckpts");
    assert_eq!(vols["volumes"][0]["status_label"], "CREATED");
    assert!(vols["volumes"][0]["created_by_name"].is_string());

    // The latest checkpoint, byte-identical to what the sandbox serves.
    let f = ok(&seen
        .call(
            &c,
            "fetch_checkpoint",
            json!({"run_id": run_id, "dest_dir": "ckpt"}),
        )
        .await);
    assert_eq!(f["step"], 10, "latest READY step: {f}");
    assert_eq!(
        f["volume_path"],
        format!("runs/{run_id}/checkpoints/step_10/")
    );
    assert_eq!(f["downloaded"], 2);
    let local = w.workspace_path().join("ckpt/step_10");
    for name in ["model.safetensors", "trainer_state.json"] {
        let served = w
            .sandbox
            .volume_file(
                "ckpts",
                &format!("runs/{run_id}/checkpoints/step_10/{name}"),
            )
            .expect("served");
        let got = std::fs::read(local.join(name)).expect("fetched file");
        assert!(served.len() > 100, "{name} is not trivially small");
        assert_eq!(
            sha(&got),
            sha(&served),
            "{name} differs from what the sandbox serves"
        );
    }
    // The checkpoints API's size is what is on the volume.
    let cks = ok(&seen
        .call(&c, "list_checkpoints", json!({"run_id": run_id}))
        .await);
    let step10 = cks["checkpoints"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["step"] == 10)
        .unwrap()
        .clone();
    assert_eq!(step10["size_bytes"], f["bytes"], "{step10} vs {f}");
    // Calling again downloads nothing.
    let again = ok(&seen
        .call(
            &c,
            "fetch_checkpoint",
            json!({"run_id": run_id, "dest_dir": "ckpt"}),
        )
        .await);
    assert_eq!(again["skipped"], 2);
    assert_eq!(again["received"], 0);

    // A transfer cut half-way resumes with a ranged read and completes.
    w.sandbox.add_fault(cut_rule(1));
    let cut = ok(&seen
        .call(&c, "fetch_checkpoint", json!({"run_id": run_id, "step": 5, "dest_dir": "ckpt", "paths": ["model.safetensors"]}))
        .await);
    assert_eq!(cut["files"][0]["recovered"], 1, "{cut}");
    let served = w
        .sandbox
        .volume_file(
            "ckpts",
            &format!("runs/{run_id}/checkpoints/step_5/model.safetensors"),
        )
        .unwrap();
    assert_eq!(
        sha(&std::fs::read(w.workspace_path().join("ckpt/step_5/model.safetensors")).unwrap()),
        sha(&served)
    );
    let ranged = w
        .sandbox
        .request_log()
        .iter()
        .filter(|r| {
            r.path
                .ends_with(&format!("{run_id}/checkpoints/step_5/model.safetensors"))
        })
        .count();
    assert_eq!(ranged, 2, "one cut request, one ranged resume");

    // Cut on every attempt: the call fails but keeps the partial file; the next call resumes it.
    w.sandbox.add_fault(cut_rule(6));
    let failed = seen
        .call(&c, "fetch_checkpoint", json!({"run_id": run_id, "step": 10, "dest_dir": "ckpt2", "paths": ["model.safetensors"]}))
        .await;
    assert!(
        err(&failed).contains("call again to resume"),
        "{}",
        text(&failed)
    );
    let resumed = ok(&seen
        .call(&c, "fetch_checkpoint", json!({"run_id": run_id, "step": 10, "dest_dir": "ckpt2", "paths": ["model.safetensors"]}))
        .await);
    let from = resumed["files"][0]["resumed_from"].as_u64().unwrap();
    assert!(from > 0, "resumed from the partial file: {resumed}");
    assert_eq!(
        resumed["received"].as_u64().unwrap() + from,
        resumed["bytes"].as_u64().unwrap()
    );
    let served10 = w
        .sandbox
        .volume_file(
            "ckpts",
            &format!("runs/{run_id}/checkpoints/step_10/model.safetensors"),
        )
        .unwrap();
    assert_eq!(
        sha(&std::fs::read(w.workspace_path().join("ckpt2/step_10/model.safetensors")).unwrap()),
        sha(&served10)
    );
    assert!(
        !files_under(&w.workspace_path().join("ckpt2"))
            .iter()
            .any(|p| p.to_string_lossy().ends_with(".part")),
        "no partial file left"
    );

    // Credentials that expire mid-transfer are refreshed from the route.
    let mut expire = FaultRule::new(OBJECTS, FaultEffect::ExpireCredentials);
    expire.match_kind = FaultMatch::Prefix;
    expire.times = Some(1);
    w.sandbox.add_fault(expire);
    let refreshed = ok(&seen
        .call(
            &c,
            "fetch_checkpoint",
            json!({"run_id": run_id, "step": 5, "dest_dir": "ckpt3"}),
        )
        .await);
    assert!(
        refreshed["credential_refreshes"].as_u64().unwrap() >= 1,
        "{refreshed}"
    );
    assert_eq!(refreshed["downloaded"], 2);
    // And so are credentials that expired on the sandbox's clock (1 h) before a list.
    w.sandbox.expire_transfer_credentials();
    let routes_before = w.sandbox.transfer_credentials().len();
    ok(&seen
        .call(
            &c,
            "fetch_checkpoint",
            json!({"run_id": run_id, "step": 5, "dest_dir": "ckpt4"}),
        )
        .await);
    assert!(w.sandbox.transfer_credentials().len() > routes_before);

    // A dataset goes onto the volume; an SFT plan names it.
    std::fs::create_dir_all(w.workspace_path().join("data/sub")).unwrap();
    let rows = "{\"prompt\": \"a\", \"completion\": \"b\"}\n".repeat(500);
    std::fs::write(w.workspace_path().join("data/train.jsonl"), &rows).unwrap();
    std::fs::write(w.workspace_path().join("data/sub/eval.jsonl"), "{}\n").unwrap();
    let up = ok(&seen
        .call(
            &c,
            "upload_to_volume",
            json!({"volume": "ckpts", "local_path": "data", "team_id": TEAM}),
        )
        .await);
    assert_eq!(up["remote_dir"], "datasets/data/");
    assert_eq!(up["files_total"], 2);
    assert_eq!(up["data_name"], "/volume/datasets/data");
    assert_eq!(
        w.sandbox
            .volume_file("ckpts", "datasets/data/train.jsonl")
            .unwrap(),
        rows.as_bytes()
    );
    assert_eq!(
        w.sandbox
            .volume_file("ckpts", "datasets/data/sub/eval.jsonl")
            .unwrap(),
        b"{}\n"
    );
    let again = seen
        .call(
            &c,
            "upload_to_volume",
            json!({"volume": "ckpts", "local_path": "data", "team_id": TEAM}),
        )
        .await;
    assert!(err(&again).contains("overwrite: true"), "{}", text(&again));
    std::fs::write(w.workspace_path().join("data/train.jsonl"), "{\"v\": 2}\n").unwrap();
    let over = ok(&seen
        .call(
            &c,
            "upload_to_volume",
            json!({"volume": "ckpts", "local_path": "data", "team_id": TEAM, "overwrite": true}),
        )
        .await);
    assert_eq!(over["files"][1]["replaced"], true, "{over}");
    assert_eq!(
        w.sandbox
            .volume_file("ckpts", "datasets/data/train.jsonl")
            .unwrap(),
        b"{\"v\": 2}\n"
    );
    let runs_refused = seen
        .call(&c, "upload_to_volume", json!({"volume": "ckpts", "local_path": "data", "team_id": TEAM, "remote_dir": "runs/x"}))
        .await;
    assert!(err(&runs_refused).contains("read-only"));

    let sft = format!(
        "name = \"sft-on-upload\"\nmax_steps = 5\n\n[model]\nname = \"PrimeIntellect/Qwen3-0.6B\"\n\n[data]\nname = \"{}\"\nseq_len = 1024\nbatch_size = 8\n\n[optim]\nlr = 2e-5\n\n[deployment]\nnum_train_gpus = 1\n",
        up["data_name"].as_str().unwrap()
    );
    let sft_plan = ok(&seen
        .call(
            &c,
            "plan_run",
            json!({"config_toml": sft, "team_id": TEAM, "volume": "ckpts"}),
        )
        .await);
    assert_eq!(sft_plan["mode"], "sft", "{sft_plan}");
    assert_eq!(
        sft_plan["request"]["config"]["data"]["name"],
        "/volume/datasets/data"
    );
    assert!(
        !sft_plan["checks"].to_string().contains("local path"),
        "the uploaded dataset's name is not a local path: {}",
        sft_plan["checks"]
    );

    // The report: outcome, steps, usage, where checkpoints and traces are, what to fetch next.
    let rep = ok(&seen
        .call(
            &c,
            "run_report",
            json!({"run_id": run_id, "checkpoints_dir": "ckpt"}),
        )
        .await);
    assert_eq!(rep["outcome"], "completed");
    assert_eq!(rep["completed_steps"], 10);
    assert_eq!(rep["max_steps"], 10);
    assert!(rep["dashboard_url"].as_str().unwrap().ends_with(&run_id));
    assert!(rep["duration_s"].as_f64().unwrap() >= 20.0, "{rep}");
    assert!(
        rep["usage"]["total_cost_usd"].as_f64().unwrap() > 0.0,
        "{rep}"
    );
    assert!(rep["usage"]["total_tokens"].as_u64().unwrap() > 0);
    assert_eq!(rep["outputs_synced"], true);
    assert_eq!(rep["volume_run_dir"], format!("runs/{run_id}/"));
    let cks = rep["checkpoints"].as_array().unwrap();
    assert_eq!(cks.len(), 2);
    for ck in cks {
        assert!(
            ck["volume_path"]
                .as_str()
                .unwrap()
                .starts_with(&format!("runs/{run_id}/checkpoints/step_"))
        );
        assert!(
            ck["local_dir"].is_string(),
            "both steps were fetched into ckpt/: {ck}"
        );
    }
    assert!(rep["traces"]["count"].as_u64().unwrap() > 0, "{rep}");
    assert_eq!(rep["traces"]["local"], 0);
    let next = rep["next_calls"].to_string();
    assert!(next.contains("fetch_traces"), "{next}");
    assert!(
        !next.contains("fetch_checkpoint"),
        "the latest checkpoint is local: {next}"
    );
    // Without the local directory, the report says how to fetch the latest checkpoint.
    let bare = ok(&seen.call(&c, "run_report", json!({"run_id": run_id})).await);
    assert!(bare["next_calls"].to_string().contains("fetch_checkpoint"));
    c.cancel().await.unwrap();

    // --disable-destructive refuses an overwrite.
    let safe = w.client(0, &["--disable-destructive"], Era::Legacy).await;
    let refused = seen
        .call(
            &safe,
            "upload_to_volume",
            json!({"volume": "ckpts", "local_path": "data", "team_id": TEAM, "overwrite": true}),
        )
        .await;
    assert!(err(&refused).contains("--disable-destructive"));
    safe.cancel().await.unwrap();

    // No transfer credential anywhere: results, the server log, state files, workspace files.
    let creds = w.sandbox.transfer_credentials();
    assert!(creds.len() >= 8, "{} route calls", creds.len());
    let mut haystacks = seen.0.clone();
    haystacks.push(std::fs::read_to_string(w.stderr_path()).unwrap_or_default());
    for f in files_under(&w.state_dir())
        .into_iter()
        .chain(files_under(&w.workspace_path()))
    {
        haystacks.push(String::from_utf8_lossy(&std::fs::read(&f).unwrap()).into_owned());
    }
    use base64::Engine;
    for cr in &creds {
        for secret in [&cr.access_key_id, &cr.secret_access_key, &cr.session_token] {
            let forms = [
                secret.clone(),
                base64::engine::general_purpose::STANDARD.encode(secret),
                base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(secret),
                hex::encode(secret),
                serde_json::to_string(secret).unwrap(),
            ];
            for h in &haystacks {
                for form in &forms {
                    assert!(
                        !h.contains(form.trim_matches('"')),
                        "a transfer credential leaked"
                    );
                }
            }
        }
    }
}

/// The pids of the `factory-mcp serve` children of this test process working in `cwd`.
fn server_pids(cwd: &Path) -> Vec<u32> {
    let me = std::process::id();
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // pid (comm) state ppid …
        let Some(after) = stat.rsplit_once(") ").map(|(_, a)| a) else {
            continue;
        };
        let ppid: u32 = after
            .split_whitespace()
            .nth(1)
            .and_then(|p| p.parse().ok())
            .unwrap_or(0);
        let here = std::fs::read_link(format!("/proc/{pid}/cwd")).ok();
        let cwd = cwd.canonicalize().ok();
        if ppid == me && stat.contains("(factory-mcp)") && here.is_some() && here == cwd {
            out.push(pid);
        }
    }
    out
}

fn vm_hwm_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// The 256 MiB file generated on the fly: streamed to disk with bounded memory. Prints MB/s and
/// the server's peak RSS (VmHWM).
#[tokio::test]
async fn a_256_mib_checkpoint_streams_to_disk_with_bounded_memory() {
    let w = World::new().await;
    create_volume(&w, "big").await;
    let resp = reqwest::Client::new()
        .post(format!("{}/api/v1/training/runs", w.sandbox.base_url()))
        .bearer_auth(w.key(0))
        .json(&json!({
            "name": "bigckpt-throughput", "teamId": TEAM, "volume": "big",
            "config": {"name": "bigckpt-throughput", "max_steps": 5, "model": {"name": "PrimeIntellect/Qwen3-0.6B"},
                       "orchestrator": {"batch_size": 8}, "trainer": {}, "inference": {}}
        }))
        .send()
        .await
        .unwrap();
    let run_id = resp.json::<Value>().await.unwrap()["runId"]
        .as_str()
        .unwrap()
        .to_string();
    w.advance(60);
    let c = w.client(0, &[], Era::Modern).await;
    let pids = server_pids(&w.workspace_path());
    assert_eq!(pids.len(), 1, "one server child: {pids:?}");
    let before = vm_hwm_kib(pids[0]);
    let f = ok(&call(
        &c,
        "fetch_checkpoint",
        json!({"run_id": run_id, "dest_dir": "big", "paths": ["model.safetensors"]}),
    )
    .await);
    let hwm = vm_hwm_kib(pids[0]);
    let path = w.workspace_path().join("big/step_5/model.safetensors");
    let (got, n) = file_sha(&path);
    let (served, m) = w
        .sandbox
        .volume_file_sha256(
            "big",
            &format!("runs/{run_id}/checkpoints/step_5/model.safetensors"),
        )
        .unwrap();
    assert_eq!(n, m);
    assert!(n >= 200_000_000, "{n} bytes");
    assert_eq!(got, served, "byte-identical");
    eprintln!(
        "THROUGHPUT: {} bytes in {:.2} s = {} MB/s; server VmHWM {} KiB (before the fetch {} KiB)",
        f["received"],
        f["seconds"].as_f64().unwrap(),
        f["mb_per_s"],
        hwm,
        before
    );
    assert!(
        hwm < 160 * 1024,
        "peak RSS {hwm} KiB: the file must not be held in memory"
    );
    c.cancel().await.unwrap();
}
