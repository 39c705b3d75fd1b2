//! Launch decisions, pure: canonical digests of a request, the price of a plan, budgets against
//! the policy, active spend, and whether a failed run failed for a reason that would repeat.
//! The tools gather the facts from the platform; this module decides.

use factory_platform::wire::{account::AvailableModels, runs::RlRun};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::capacity::{Capacity, CapacityKind};
use crate::policy::{ConfirmMode, Policy};

/// JSON with object keys sorted at every level and no insignificant whitespace, so equal
/// documents give equal digests whatever order their keys came in.
pub fn canonical_json(v: &Value) -> String {
    fn write(v: &Value, out: &mut String) {
        match v {
            Value::Object(m) => {
                let mut keys: Vec<&String> = m.keys().collect();
                keys.sort();
                out.push('{');
                for (i, k) in keys.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(&Value::String((*k).clone()).to_string());
                    out.push(':');
                    write(&m[*k], out);
                }
                out.push('}');
            }
            Value::Array(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    write(item, out);
                }
                out.push(']');
            }
            other => out.push_str(&other.to_string()),
        }
    }
    let mut out = String::new();
    write(v, &mut out);
    out
}

/// `sha256:<hex>` of the canonical form of `v`.
pub fn digest(v: &Value) -> String {
    let mut h = Sha256::new();
    h.update(canonical_json(v).as_bytes());
    format!("sha256:{}", hex::encode(h.finalize()))
}

/// `sha256:<hex>` of raw bytes (a config file as read).
pub fn digest_bytes(bytes: &[u8]) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(bytes)))
}

/// The digest of a run config without its name: equal for two submissions of the same config.
pub fn config_digest(config: &Map<String, Value>) -> String {
    let mut c = config.clone();
    c.remove("name");
    digest(&Value::Object(c))
}

/// Statuses of runs that hold (or will hold) GPUs.
pub fn is_active_status(status: &str) -> bool {
    factory_platform::wire::runs::RunStatus::parse(status).is_active()
}

/// What a plan costs per hour, and how that figure was reached.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Price {
    /// The GPU type priced: the one requested, or the dearest the model can run on.
    pub gpu_type: Option<String>,
    pub per_gpu_hour_usd: Option<f64>,
    pub gpus: Option<u64>,
    pub per_hour_usd: Option<f64>,
    /// How the figure was reached, or why there is none.
    pub basis: String,
    pub notes: Vec<String>,
    /// The plan runs on reserved capacity (no published price): the figure, when there is
    /// one, is the policy's `reserved_price_per_gpu_hour_usd`.
    #[serde(default)]
    pub reserved: bool,
}

/// What a person reads for an unpriced reserved plan.
pub const RESERVED_NOT_COUNTED: &str = "reserved — not counted in budgets";

/// Price a plan on its capacity: on-demand price × (trainer + inference GPUs), or, on reserved
/// capacity, the policy's `reserved_price` (none: not counted). Without a GPU type on
/// on-demand capacity, the highest on-demand price among the types the model can use (the
/// platform may pick any of them).
pub fn price(
    models: &AvailableModels,
    capacity: &Capacity,
    model: Option<&str>,
    gpus: Option<u64>,
    reserved_price: Option<f64>,
) -> Price {
    let mut notes = Vec::new();
    if models.on_demand_beta_access == Some(false) {
        notes.push("This owner has no on-demand (beta) access: the run needs reserved capacity, and on-demand prices are for reference only.".to_string());
    }
    let reserved = capacity.kind == CapacityKind::Reserved;
    let offer = |t: &str| models.on_demand.iter().find(|o| o.gpu_type == t);
    let (gpu, per_gpu, basis) = match (capacity.kind, capacity.gpu_type.as_deref()) {
        (CapacityKind::Reserved, t) => {
            let t = t.unwrap_or("a reserved cluster");
            match reserved_price {
                Some(p) => (
                    Some(t.to_string()),
                    Some(p),
                    format!(
                        "reserved capacity ({t}), counted at the policy's reserved_price_per_gpu_hour_usd"
                    ),
                ),
                None => (
                    Some(t.to_string()),
                    None,
                    format!(
                        "{RESERVED_NOT_COUNTED}: reserved capacity ({t}) has no published price; the policy key reserved_price_per_gpu_hour_usd counts it"
                    ),
                ),
            }
        }
        (_, Some(t)) => match offer(t) {
            Some(o) => (
                Some(t.to_string()),
                Some(o.price_per_gpu_hour),
                format!("on-demand price of {t}"),
            ),
            None => (
                Some(t.to_string()),
                None,
                format!("no on-demand price is listed for {t}"),
            ),
        },
        (_, None) => {
            let usable: Vec<&str> = model
                .and_then(|m| models.models.iter().find(|x| x.name == m))
                .map(|m| {
                    m.clusters
                        .iter()
                        .filter_map(|c| c.gpu_type.as_deref())
                        .collect()
                })
                .unwrap_or_default();
            let candidates: Vec<_> = models
                .on_demand
                .iter()
                .filter(|o| usable.is_empty() || usable.contains(&o.gpu_type.as_str()))
                .collect();
            match candidates
                .iter()
                .max_by(|a, b| a.price_per_gpu_hour.total_cmp(&b.price_per_gpu_hour))
            {
                Some(o) => (
                    Some(o.gpu_type.clone()),
                    Some(o.price_per_gpu_hour),
                    format!(
                        "no gpu_type set: the highest on-demand price among the types {} can use ({}); set gpu_type to pin it",
                        model.unwrap_or("the model"),
                        o.gpu_type
                    ),
                ),
                None => (
                    None,
                    None,
                    "no on-demand prices are listed for this owner".to_string(),
                ),
            }
        }
    };
    let per_hour = match (per_gpu, gpus) {
        (Some(p), Some(n)) => Some(round_cents(p * n as f64)),
        _ => None,
    };
    let basis = if gpus.is_none() {
        format!("{basis}; the GPU count is not derivable from the config (set [deployment] counts)")
    } else {
        basis
    };
    Price {
        gpu_type: gpu,
        per_gpu_hour_usd: per_gpu,
        gpus,
        per_hour_usd: per_hour,
        basis,
        notes,
        reserved,
    }
}

fn round_cents(x: f64) -> f64 {
    // `+ 0.0` turns a negative zero into zero, so no figure reads -0.00.
    (x * 100.0).round() / 100.0 + 0.0
}

/// An active run and its hourly rate.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ActiveRun {
    pub id: String,
    pub name: Option<String>,
    pub status: String,
    pub created_at: String,
    pub rate_per_hour_usd: Option<f64>,
    /// The rate is our estimate (GPU count × the price of its cluster's GPU type), not a
    /// figure journalled at launch.
    pub estimated: bool,
}

/// Estimate a run's hourly rate from its GPU count and its cluster's GPU type. Mapping
/// `primeClusterId` to the models' `clusterId` is our inference (undocumented); a cluster of a
/// type with no on-demand offer is reserved capacity, counted at `reserved_price` (none:
/// unknown); without a match, the highest on-demand price is used.
pub fn estimate_rate(
    run: &RlRun,
    models: &AvailableModels,
    reserved_price: Option<f64>,
) -> Option<f64> {
    let gpus = run.gpu_count? as f64;
    let gpu_type = run.prime_cluster_id.as_deref().and_then(|cid| {
        models
            .models
            .iter()
            .flat_map(|m| &m.clusters)
            .find(|c| c.cluster_id == cid)
            .and_then(|c| c.gpu_type.clone())
    });
    let price = match gpu_type {
        Some(t) => match models.on_demand.iter().find(|o| o.gpu_type == t) {
            Some(o) => Some(o.price_per_gpu_hour),
            None => reserved_price,
        },
        None => models
            .on_demand
            .iter()
            .map(|o| o.price_per_gpu_hour)
            .max_by(f64::total_cmp),
    }?;
    Some(round_cents(price * gpus))
}

/// The figures of a plan that budgets look at.
#[derive(Debug, Clone, Default)]
pub struct PlanFigures<'a> {
    pub team: Option<&'a str>,
    pub gpu_type: Option<&'a str>,
    pub gpus: Option<u64>,
    pub per_hour_usd: Option<f64>,
    pub max_steps: Option<i64>,
    /// Runs on reserved capacity (an unpriced one is not counted in the cost caps).
    pub reserved: bool,
}

/// A limit the plan would break, with the figures.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Violation {
    /// The policy key.
    pub key: &'static str,
    pub message: String,
}

/// Every policy limit the plan would break, given the owner's active runs.
pub fn check_budgets(
    policy: &Policy,
    plan: &PlanFigures<'_>,
    active: &[ActiveRun],
) -> Vec<Violation> {
    let mut v = Vec::new();
    if let Some(allowed) = &policy.allowed_teams
        && !policy.allows_team(plan.team)
    {
        v.push(Violation {
            key: "allowed_teams",
            message: format!(
                "{} is not in allowed_teams ({})",
                plan.team
                    .map(|t| format!("team {t}"))
                    .unwrap_or_else(|| "the personal account".into()),
                allowed.join(", ")
            ),
        });
    }
    if let Some(allowed) = &policy.allowed_gpu_types {
        match plan.gpu_type {
            Some(t) if policy.allows_gpu_type(t) => {}
            Some(t) => v.push(Violation {
                key: "allowed_gpu_types",
                message: format!("GPU type {t} is not in allowed_gpu_types ({})", allowed.join(", ")),
            }),
            None => v.push(Violation {
                key: "allowed_gpu_types",
                message: format!(
                    "no gpu_type is set, so the platform may pick one outside allowed_gpu_types ({}); set gpu_type",
                    allowed.join(", ")
                ),
            }),
        }
    }
    if let Some(max) = policy.max_gpus_per_run {
        match plan.gpus {
            Some(n) if n > u64::from(max) => v.push(Violation {
                key: "max_gpus_per_run",
                message: format!("the run uses {n} GPUs; max_gpus_per_run is {max}"),
            }),
            Some(_) => {}
            None => v.push(Violation {
                key: "max_gpus_per_run",
                message: format!("the GPU count is not derivable from the config, so max_gpus_per_run ({max}) cannot be checked; set [deployment] counts"),
            }),
        }
    }
    let unpriced_reserved = plan.reserved && plan.per_hour_usd.is_none();
    if unpriced_reserved && policy.confirm == ConfirmMode::Plan {
        v.push(Violation {
            key: "reserved_price_per_gpu_hour_usd",
            message: "the run uses reserved capacity, which has no published price, so the cost caps cannot be checked and confirm = \"plan\" would launch it unchecked; set reserved_price_per_gpu_hour_usd in the policy (or use confirm = \"human\")".to_string(),
        });
    }
    if let Some(max) = policy.max_cost_per_hour_usd {
        match plan.per_hour_usd {
            Some(p) if p > max => v.push(Violation {
                key: "max_cost_per_hour_usd",
                message: format!("the run costs ${p:.2}/h; max_cost_per_hour_usd is ${max:.2}"),
            }),
            Some(_) => {}
            None if unpriced_reserved => {}
            None => v.push(Violation {
                key: "max_cost_per_hour_usd",
                message: format!("the run's hourly price is unknown, so max_cost_per_hour_usd (${max:.2}) cannot be checked; set gpu_type and [deployment] counts"),
            }),
        }
    }
    if let Some(cap) = policy.max_steps {
        match plan.max_steps {
            None => v.push(Violation {
                key: "max_steps",
                message: format!("the config sets no max_steps, so the run would train until stopped; the policy caps steps at {cap}"),
            }),
            Some(s) if s < 0 || s as u64 > cap => v.push(Violation {
                key: "max_steps",
                message: format!("max_steps is {s}; the policy caps it at {cap}"),
            }),
            Some(_) => {}
        }
    }
    if let Some(max) = policy.max_active_runs
        && active.len() as u64 >= u64::from(max)
    {
        v.push(Violation {
            key: "max_active_runs",
            message: format!(
                "{} run(s) are already active for this owner; max_active_runs is {max}",
                active.len()
            ),
        });
    }
    if let Some(max) = policy.max_active_cost_per_hour_usd {
        let current: f64 = active.iter().filter_map(|r| r.rate_per_hour_usd).sum();
        let unknown = active
            .iter()
            .filter(|r| r.rate_per_hour_usd.is_none())
            .count();
        let estimated = active.iter().any(|r| r.estimated);
        match plan.per_hour_usd {
            Some(p) if current + p > max => v.push(Violation {
                key: "max_active_cost_per_hour_usd",
                message: format!(
                    "active runs cost ${current:.2}/h{}{}; with this run ${:.2}/h, over max_active_cost_per_hour_usd ${max:.2}",
                    if estimated { " (partly estimated)" } else { "" },
                    if unknown > 0 { format!(", plus {unknown} run(s) of unknown rate") } else { String::new() },
                    current + p
                ),
            }),
            Some(_) => {}
            None if unpriced_reserved => {}
            None => v.push(Violation {
                key: "max_active_cost_per_hour_usd",
                message: format!("the run's hourly price is unknown, so max_active_cost_per_hour_usd (${max:.2}) cannot be checked"),
            }),
        }
    }
    v
}

/// Whether a failed `POST /training/runs/prepare` stops a plan before a person is asked
/// (§6.2's table, as `prime train run` reacts): a malformed answer or a 4xx (a ref the team
/// may not use is 403) stops it; a 5xx, a timeout, a rate limit or no answer at all skips
/// (the platform still validates on submission). 404/405 never get here: they mean the
/// platform has no prepare, and the plan goes on.
pub fn prepare_failure_stops(status: Option<u16>, timed_out: bool, malformed: bool) -> bool {
    if malformed {
        return true;
    }
    !timed_out && matches!(status, Some(s) if (400..500).contains(&s) && s != 429)
}

/// Why a failed run would fail again with the same config, if it would: a config, import,
/// credential, setup or out-of-memory error in its failure analysis or error message.
pub fn deterministic_failure(run: &RlRun) -> Option<String> {
    if run.run_status() != factory_platform::wire::runs::RunStatus::Failed {
        return None;
    }
    let mut text = String::new();
    if let Some(f) = &run.failure_analysis {
        text.push_str(f.root_cause.as_deref().unwrap_or_default());
        for e in &f.evidence {
            text.push('\n');
            text.push_str(e);
        }
    }
    if let Some(m) = &run.error_message {
        text.push('\n');
        text.push_str(m);
    }
    let lower = text.to_lowercase();
    const TRANSIENT: &[&str] = &[
        "preempt",
        "node failure",
        "hardware",
        "capacity",
        "network",
        "timed out",
        "timeout",
        "interrupted",
    ];
    if TRANSIENT.iter().any(|t| lower.contains(t)) {
        return None;
    }
    const PATTERNS: &[(&str, &str)] = &[
        ("out of memory", "out of memory"),
        ("outofmemory", "out of memory"),
        ("importerror", "import error"),
        ("modulenotfounderror", "import error"),
        ("no module named", "import error"),
        ("validation error", "config error"),
        ("invalid config", "config error"),
        ("config error", "config error"),
        ("configuration", "config error"),
        ("unknown environment", "setup error"),
        ("environment not found", "setup error"),
        ("not found in registry", "setup error"),
        ("cannot fit", "config error"),
        ("does not fit", "config error"),
        ("unauthorized", "credential error"),
        ("invalid token", "credential error"),
        ("invalid api key", "credential error"),
        ("authentication", "credential error"),
        ("permission denied", "credential error"),
        ("keyerror", "config error"),
        ("setup failed", "setup error"),
    ];
    PATTERNS
        .iter()
        .find(|(p, _)| lower.contains(p))
        .map(|(_, kind)| {
            let cause = run
                .failure_analysis
                .as_ref()
                .and_then(|f| f.root_cause.clone())
                .or_else(|| run.error_message.clone())
                .unwrap_or_default();
            format!("{kind}: {}", cause.chars().take(300).collect::<String>())
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cents_never_read_negative_zero() {
        let z = round_cents(-0.001);
        assert_eq!(z, 0.0);
        assert!(z.is_sign_positive(), "{z}");
        assert_eq!(format!("{:.2}", round_cents(-0.004)), "0.00");
        assert_eq!(round_cents(-1.234), -1.23);
    }
    use factory_platform::wire::account::{FftModel, ModelCluster, OnDemandOffer};
    use serde_json::json;

    fn models() -> AvailableModels {
        AvailableModels {
            models: vec![FftModel {
                name: "m".into(),
                clusters: vec![
                    ModelCluster {
                        cluster_id: "c1".into(),
                        cluster_name: "a".into(),
                        gpu_type: Some("H100_80GB".into()),
                    },
                    ModelCluster {
                        cluster_id: "c2".into(),
                        cluster_name: "b".into(),
                        gpu_type: Some("H200_141GB".into()),
                    },
                ],
            }],
            on_demand: vec![
                OnDemandOffer {
                    gpu_type: "H100_80GB".into(),
                    price_per_gpu_hour: 2.0,
                    discount_label: None,
                    available_now: Some(true),
                    is_beta: None,
                },
                OnDemandOffer {
                    gpu_type: "H200_141GB".into(),
                    price_per_gpu_hour: 3.5,
                    discount_label: None,
                    available_now: Some(true),
                    is_beta: None,
                },
                OnDemandOffer {
                    gpu_type: "B200_180GB".into(),
                    price_per_gpu_hour: 6.0,
                    discount_label: None,
                    available_now: Some(true),
                    is_beta: None,
                },
            ],
            on_demand_beta_access: Some(false),
        }
    }

    #[test]
    fn canonical_json_ignores_key_order() {
        let a = json!({"b": 1, "a": {"y": [1, {"d": 2, "c": 3}], "x": null}});
        let b = json!({"a": {"x": null, "y": [1, {"c": 3, "d": 2}]}, "b": 1});
        assert_eq!(digest(&a), digest(&b));
        assert_ne!(digest(&a), digest(&json!({"b": 2})));
    }

    #[test]
    fn config_digest_ignores_the_run_name() {
        let a = json!({"name": "run-1", "max_steps": 5})
            .as_object()
            .unwrap()
            .clone();
        let b = json!({"max_steps": 5, "name": "run-2"})
            .as_object()
            .unwrap()
            .clone();
        assert_eq!(config_digest(&a), config_digest(&b));
    }

    fn on_demand(gpu_type: Option<&str>) -> Capacity {
        Capacity {
            kind: CapacityKind::OnDemand,
            gpu_type: gpu_type.map(str::to_string),
        }
    }

    #[test]
    fn price_without_gpu_type_is_the_dearest_type_the_model_can_use() {
        let p = price(&models(), &on_demand(None), Some("m"), Some(4), None);
        assert_eq!(p.gpu_type.as_deref(), Some("H200_141GB"));
        assert_eq!(p.per_hour_usd, Some(14.0));
        assert!(
            p.notes
                .iter()
                .any(|n| n.contains("no on-demand (beta) access"))
        );
        let p = price(
            &models(),
            &on_demand(Some("H100_80GB")),
            Some("m"),
            Some(3),
            None,
        );
        assert_eq!(p.per_hour_usd, Some(6.0));
        assert!(!p.reserved);
        let p = price(&models(), &on_demand(None), Some("m"), None, None);
        assert_eq!(p.per_hour_usd, None);
        assert!(p.basis.contains("not derivable"));
    }

    #[test]
    fn reserved_capacity_is_priced_only_by_the_policy_key() {
        let reserved = Capacity {
            kind: CapacityKind::Reserved,
            gpu_type: Some("A100_80GB".into()),
        };
        let p = price(&models(), &reserved, Some("m"), Some(2), None);
        assert!(p.reserved);
        assert_eq!((p.per_gpu_hour_usd, p.per_hour_usd), (None, None));
        assert!(p.basis.starts_with(RESERVED_NOT_COUNTED), "{}", p.basis);
        let p = price(&models(), &reserved, Some("m"), Some(2), Some(1.25));
        assert_eq!(p.per_hour_usd, Some(2.5));
        assert!(p.basis.contains("reserved_price_per_gpu_hour_usd"));
    }

    #[test]
    fn an_unpriced_reserved_plan_is_refused_in_plan_mode_and_not_counted_otherwise() {
        let figures = PlanFigures {
            gpu_type: Some("A100_80GB"),
            gpus: Some(2),
            max_steps: Some(10),
            reserved: true,
            ..PlanFigures::default()
        };
        let capped = |confirm| Policy {
            confirm,
            max_cost_per_hour_usd: Some(10.0),
            max_active_cost_per_hour_usd: Some(20.0),
            ..Policy::default()
        };
        let v = check_budgets(&capped(ConfirmMode::Plan), &figures, &[]);
        let keys: Vec<_> = v.iter().map(|x| x.key).collect();
        assert_eq!(keys, vec!["reserved_price_per_gpu_hour_usd"]);
        assert!(v[0].message.contains("cannot be checked"));
        assert!(check_budgets(&capped(ConfirmMode::Human), &figures, &[]).is_empty());
        // Priced by the policy key: counted like any other price.
        let priced = PlanFigures {
            per_hour_usd: Some(12.0),
            ..figures
        };
        let keys: Vec<_> = check_budgets(&capped(ConfirmMode::Plan), &priced, &[])
            .iter()
            .map(|x| x.key)
            .collect();
        assert_eq!(keys, vec!["max_cost_per_hour_usd"]);
    }

    #[test]
    fn budgets_name_the_key_and_the_figures() {
        let policy = Policy {
            max_gpus_per_run: Some(8),
            max_cost_per_hour_usd: Some(20.0),
            max_active_runs: Some(2),
            max_active_cost_per_hour_usd: Some(30.0),
            max_steps: Some(100),
            ..Policy::default()
        };
        let active = vec![
            ActiveRun {
                id: "r1".into(),
                name: None,
                status: "RUNNING".into(),
                created_at: String::new(),
                rate_per_hour_usd: Some(14.0),
                estimated: false,
            },
            ActiveRun {
                id: "r2".into(),
                name: None,
                status: "QUEUED".into(),
                created_at: String::new(),
                rate_per_hour_usd: Some(7.0),
                estimated: true,
            },
        ];
        let plan = PlanFigures {
            team: None,
            gpu_type: Some("H200_141GB"),
            gpus: Some(16),
            per_hour_usd: Some(56.0),
            max_steps: None,
            reserved: false,
        };
        let v = check_budgets(&policy, &plan, &active);
        let keys: Vec<_> = v.iter().map(|x| x.key).collect();
        assert_eq!(
            keys,
            vec![
                "max_gpus_per_run",
                "max_cost_per_hour_usd",
                "max_steps",
                "max_active_runs",
                "max_active_cost_per_hour_usd"
            ]
        );
        assert!(v[0].message.contains("16") && v[0].message.contains('8'));
        assert!(v[4].message.contains("$21.00") && v[4].message.contains("partly estimated"));
        let ok = PlanFigures {
            team: None,
            gpu_type: Some("H100_80GB"),
            gpus: Some(4),
            per_hour_usd: Some(8.0),
            max_steps: Some(50),
            reserved: false,
        };
        assert!(check_budgets(&policy, &ok, &active[..1]).is_empty());
    }

    #[test]
    fn a_prepare_refusal_stops_the_plan_and_an_outage_does_not() {
        assert!(prepare_failure_stops(Some(403), false, false));
        assert!(prepare_failure_stops(Some(422), false, false));
        assert!(prepare_failure_stops(None, false, true));
        assert!(!prepare_failure_stops(Some(503), false, false));
        assert!(!prepare_failure_stops(Some(429), false, false));
        assert!(!prepare_failure_stops(None, true, false));
        assert!(!prepare_failure_stops(None, false, false));
    }

    fn failed(root: &str) -> RlRun {
        serde_json::from_value(json!({
            "id": "r", "userId": "u", "status": "FAILED", "createdAt": "t", "updatedAt": "t",
            "failureAnalysis": {"rootCause": root, "evidence": [], "confidence": 0.9}
        }))
        .unwrap()
    }

    #[test]
    fn failures_that_would_repeat_are_told_from_transient_ones() {
        assert!(
            deterministic_failure(&failed("torch.OutOfMemoryError: CUDA out of memory"))
                .unwrap()
                .starts_with("out of memory")
        );
        assert!(
            deterministic_failure(&failed("ModuleNotFoundError: No module named 'foo'"))
                .unwrap()
                .starts_with("import error")
        );
        assert!(deterministic_failure(&failed("Unknown environment 'x'")).is_some());
        assert!(deterministic_failure(&failed("Node was preempted")).is_none());
        assert!(deterministic_failure(&failed("something odd")).is_none());
    }

    #[test]
    fn estimates_use_the_cluster_gpu_type_or_the_dearest() {
        let mut run = failed("x");
        run.gpu_count = Some(2);
        run.prime_cluster_id = Some("c1".into());
        assert_eq!(estimate_rate(&run, &models(), None), Some(4.0));
        run.prime_cluster_id = Some("elsewhere".into());
        assert_eq!(estimate_rate(&run, &models(), None), Some(12.0));
        // A reserved cluster (a type with no on-demand offer): the policy's rate, else unknown.
        let mut m = models();
        m.models[0].clusters.push(ModelCluster {
            cluster_id: "r1".into(),
            cluster_name: "reserved".into(),
            gpu_type: Some("A100_80GB".into()),
        });
        run.prime_cluster_id = Some("r1".into());
        assert_eq!(estimate_rate(&run, &m, None), None);
        assert_eq!(estimate_rate(&run, &m, Some(1.5)), Some(3.0));
    }
}
