//! Building run and volume records: from a create request or a seed entry, a run gets its GPU
//! type, cluster, GPU counts and scenario; the world at first start holds the seeded volumes
//! and runs.

use chrono::{DateTime, Utc};
use serde_json::{Value, json};

use crate::clock::plus_secs;
use crate::error::SandboxError;
use crate::seed::{Seed, SeedReservedCluster, SeedUser};
use crate::sim;
use crate::world::{FailCause, Run, Volume, Weights, World, new_cuid, new_token};

/// What a new run needs besides the world.
pub(crate) struct NewRun {
    pub(crate) id: Option<String>,
    pub(crate) user_id: String,
    pub(crate) team_id: Option<String>,
    pub(crate) name: Option<String>,
    pub(crate) config: Value,
    pub(crate) create_body: Value,
    pub(crate) sft: bool,
    pub(crate) image_tag: Option<String>,
    pub(crate) source_ref: Option<String>,
    pub(crate) volume: Option<String>,
    pub(crate) resume_from: Option<String>,
    pub(crate) token_value: String,
    pub(crate) created_at: DateTime<Utc>,
    pub(crate) trace_bytes_total: Option<u64>,
    /// The request carried `hfToken` (gated Hub models need it).
    pub(crate) hf_token: bool,
}

/// Where a run runs: a cluster reserved for its team, or on-demand capacity.
#[derive(Debug, Clone)]
pub(crate) struct Capacity {
    pub(crate) gpu_type: String,
    pub(crate) cluster_id: Option<String>,
    /// The team's reserved cluster (`None`: on-demand).
    pub(crate) reserved: Option<SeedReservedCluster>,
}

/// Why no capacity fits a create (or resume) request.
#[derive(Debug, Clone)]
pub(crate) enum CapacityError {
    /// Neither offered on demand nor reserved for the account.
    UnknownGpu {
        gpu_type: String,
        known: Vec<String>,
    },
    /// On-demand capacity for an account without `onDemandBetaAccess`.
    NoOnDemandAccess,
}

impl CapacityError {
    /// The platform-shaped answer (the 403 text is the sandbox's own).
    pub(crate) fn status_and_detail(&self) -> (u16, String) {
        match self {
            CapacityError::UnknownGpu { gpu_type, known } => (
                400,
                format!(
                    "Unknown gpuType '{gpu_type}'. Available GPU types: {}",
                    known.join(", ")
                ),
            ),
            CapacityError::NoOnDemandAccess => (
                403,
                "On-demand capacity is in beta and this account has no on-demand access \
                 (onDemandBetaAccess is false); run on a reserved cluster or ask Prime for access"
                    .to_string(),
            ),
        }
    }
}

/// Picks the capacity of a run: with `gpu_type`, a reserved cluster of that type (one that
/// caches the model first), else that on-demand offer; without, a reserved cluster that caches
/// the model, else on-demand capacity as [`on_demand`] picks it.
pub(crate) fn resolve_capacity(
    seed: &Seed,
    user: &SeedUser,
    team_id: Option<&str>,
    model: Option<&str>,
    gpu_type: Option<&str>,
) -> Result<Capacity, CapacityError> {
    let reserved = seed.reserved_clusters(team_id);
    let caches =
        |c: &SeedReservedCluster| model.is_some_and(|m| c.cached_models.iter().any(|x| x == m));
    let of_type: Vec<&SeedReservedCluster> = reserved
        .iter()
        .filter(|c| gpu_type.is_none_or(|g| c.gpu_type == g))
        .collect();
    let pick = of_type
        .iter()
        .find(|c| caches(c))
        .or(if gpu_type.is_some() {
            of_type.first()
        } else {
            None
        });
    if let Some(c) = pick {
        return Ok(Capacity {
            gpu_type: c.gpu_type.clone(),
            cluster_id: Some(c.cluster_id.clone()),
            reserved: Some((*c).clone()),
        });
    }
    if let Some(g) = gpu_type
        && seed.gpu(g).is_none()
    {
        let mut known: Vec<String> = seed.gpus.iter().map(|g| g.gpu_type.clone()).collect();
        for c in reserved {
            if !known.contains(&c.gpu_type) {
                known.push(c.gpu_type.clone());
            }
        }
        return Err(CapacityError::UnknownGpu {
            gpu_type: g.to_string(),
            known,
        });
    }
    if !seed.on_demand_access(user, team_id) {
        return Err(CapacityError::NoOnDemandAccess);
    }
    Ok(on_demand(seed, model, gpu_type))
}

/// On-demand capacity: the type asked for, else the type of the model's first cluster, else
/// the first offer; on the model's cluster of that type when it has one.
pub(crate) fn on_demand(seed: &Seed, model: Option<&str>, gpu_type: Option<&str>) -> Capacity {
    let seed_model = model.and_then(|m| seed.model(m));
    let gpu_type = gpu_type
        .map(str::to_string)
        .or_else(|| seed_model.and_then(|m| m.clusters.first().map(|c| c.gpu_type.clone())))
        .or_else(|| seed.gpus.first().map(|g| g.gpu_type.clone()))
        .unwrap_or_else(|| "H100_80GB".to_string());
    let cluster_id = seed_model.and_then(|m| {
        m.clusters
            .iter()
            .find(|c| c.gpu_type == gpu_type)
            .or(m.clusters.first())
            .map(|c| c.cluster_id.clone())
    });
    Capacity {
        gpu_type,
        cluster_id,
        reserved: None,
    }
}

/// Where the run's weights come from, or why it cannot have them: cached on the cluster; on
/// its volume; downloaded from the Hub (on-demand only; a gated repo needs `HF_TOKEN`).
fn weights(
    w: &World,
    n: &NewRun,
    cap: &Capacity,
    model: &str,
) -> Result<Weights, (FailCause, String)> {
    let cached = match &cap.reserved {
        Some(c) => c.cached_models.iter().any(|m| m == model),
        None => w.seed.model(model).is_some(),
    };
    if cached {
        return Ok(Weights::Cached);
    }
    let on_volume = n.volume.as_deref().and_then(|v| {
        w.volume_in_account(&n.user_id, n.team_id.as_deref(), v)
            .filter(|vol| vol.models.iter().any(|m| m == model))
    });
    if let Some(v) = on_volume {
        return Ok(Weights::Volume {
            volume: v.name.clone(),
        });
    }
    if let Some(c) = &cap.reserved {
        return Err((
            FailCause::NoWeights,
            format!("{model} on reserved cluster {}", c.cluster_name),
        ));
    }
    match w.seed.hub_model(model) {
        Some(h) if h.gated && !n.hf_token => Err((FailCause::GatedModel, model.to_string())),
        Some(_) => Ok(Weights::Hub),
        None => Err((FailCause::UnknownModel, model.to_string())),
    }
}

/// Resolves GPU counts, weights and scenario on the given capacity, and builds the run record.
pub(crate) fn build_run(w: &World, n: NewRun, cap: Capacity) -> Run {
    let seed = &w.seed;
    let model = sim::model_name(&n.config).unwrap_or_default();
    let (train, infer) = sim::gpu_counts(&n.config, n.sft);
    let weights = weights(w, &n, &cap, &model);
    let gpu = seed.gpu(&cap.gpu_type).filter(|_| cap.reserved.is_none());
    let memory_gb = match &cap.reserved {
        Some(c) => c.memory_gb,
        None => gpu.map_or(80.0, |g| g.memory_gb),
    };
    let scenario = sim::classify(&sim::Launch {
        config: &n.config,
        name: n.name.as_deref(),
        gpu_type: &cap.gpu_type,
        train_gpus: train,
        memory_gb,
        available_now: gpu.is_none_or(|g| g.available_now),
        weights: weights.clone(),
        params_b: seed.params_b(&model),
        source_ref: n.source_ref.as_deref(),
    });
    let price = gpu.map(|g| g.price_per_gpu_hour);
    Run {
        id: n.id.unwrap_or_else(new_cuid),
        user_id: n.user_id,
        team_id: n.team_id,
        name: n.name,
        created_at: n.created_at,
        config: n.config,
        create_body: n.create_body,
        sft: n.sft,
        gpu_type: Some(cap.gpu_type),
        image_tag: n.image_tag,
        source_ref: n.source_ref,
        volume: n.volume,
        resume_from: n.resume_from,
        token_value: n.token_value,
        cluster_id: cap.cluster_id,
        train_gpus: train,
        infer_gpus: infer,
        on_demand: price.is_some(),
        price_per_gpu_hour: price,
        scenario,
        stopped_at: None,
        paused_at: None,
        restarts: Vec::new(),
        trace_bytes_total: n.trace_bytes_total,
        weights: weights.unwrap_or_default(),
        reserved: cap.reserved.is_some(),
    }
}

pub(crate) fn new_volume(
    seed: &Seed,
    name: &str,
    user: &SeedUser,
    team_id: Option<String>,
    size: String,
    now: DateTime<Utc>,
    ready_after_s: f64,
) -> Volume {
    // A team's volume lives on its reserved cluster when it has one (invention).
    let reserved = seed
        .reserved_clusters(team_id.as_deref())
        .first()
        .map(|c| (c.cluster_id.clone(), c.cluster_name.clone()));
    let public = seed
        .models
        .first()
        .and_then(|m| m.clusters.first())
        .map(|c| (c.cluster_id.clone(), c.cluster_name.clone()));
    let (cluster_id, cluster_name) = reserved
        .or(public)
        .unwrap_or_else(|| ("csandboxcluster".into(), "sandbox".into()));
    Volume {
        name: name.to_string(),
        user_id: user.id.clone(),
        team_id,
        size,
        created_at: now,
        ready_after_s,
        cluster_id,
        cluster_name,
        pvc_name: format!("vol-{}", &sim::hex_digest(&["pvc", name, &user.id])[..12]),
        models: Vec::new(),
    }
}

/// The world at first start: seeded volumes and runs on top of the seed.
pub(crate) fn seeded_world(seed: Seed, now: DateTime<Utc>) -> Result<World, SandboxError> {
    let mut world = World::new(seed.clone());
    for v in &seed.volumes {
        let user = seed.user(&v.user_id).ok_or_else(|| {
            SandboxError::Seed(format!("volume {}: unknown user {}", v.name, v.user_id))
        })?;
        let mut volume = new_volume(
            &seed,
            &v.name,
            user,
            v.team_id.clone(),
            v.size.clone(),
            plus_secs(now, -3600.0),
            0.0,
        );
        volume.models = v.models.clone();
        world.volumes.push(volume);
    }
    for r in &seed.runs {
        let Some(user) = seed.user(&r.user_id) else {
            return Err(SandboxError::Seed(format!(
                "run: unknown user {}",
                r.user_id
            )));
        };
        let name = r.name.clone().or_else(|| {
            r.config
                .get("name")
                .and_then(Value::as_str)
                .map(str::to_string)
        });
        let model = sim::model_name(&r.config);
        let team = r.team_id.as_deref();
        let gpu = r.gpu_type.as_deref();
        let cap = resolve_capacity(&seed, user, team, model.as_deref(), gpu)
            .unwrap_or_else(|_| on_demand(&seed, model.as_deref(), gpu));
        let run = build_run(
            &world,
            NewRun {
                id: r.id.clone(),
                user_id: r.user_id.clone(),
                team_id: r.team_id.clone(),
                name,
                config: r.config.clone(),
                create_body: json!({"seeded": true}),
                sft: r.sft,
                image_tag: None,
                source_ref: None,
                volume: r.volume.clone(),
                resume_from: None,
                token_value: new_token(),
                created_at: plus_secs(now, -r.age_s),
                trace_bytes_total: r.trace_bytes_total,
                hf_token: false,
            },
            cap,
        );
        world.runs.push(run);
    }
    Ok(world)
}
