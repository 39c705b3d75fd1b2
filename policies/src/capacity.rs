//! Where a plan would run and whether its model's weights can get there, pure: the GPU types a
//! plan may use (on-demand offers ∪ `available-gpu-types` ∪ the model's clusters' types), the
//! capacity the platform would pick (on-demand or a reserved cluster), and the cached-model
//! rule (an uncached model downloads at start on on-demand capacity; reserved capacity never
//! downloads, so it needs the weights on a volume).
//!
//! Inferred (the reference shows the shapes only): a GPU type that the account sees in
//! `available-gpu-types` or on a model's cluster but that has no on-demand offer is reserved
//! capacity; without `gpu_type` the platform prefers a reserved cluster that caches the model.

use factory_platform::wire::account::AvailableModels;

/// Which kind of capacity a plan runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CapacityKind {
    /// An on-demand offer (published price).
    OnDemand,
    /// A cluster reserved for the owner (no published price).
    Reserved,
    /// A GPU type the account does not offer at all (the config check reports it).
    Unknown,
}

/// The capacity a plan would run on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Capacity {
    pub kind: CapacityKind,
    /// The GPU type asked for or, without one, the type the platform would pick (when known).
    pub gpu_type: Option<String>,
}

/// The GPU types a plan may use: on-demand offers, `available-gpu-types`, and the types of
/// the clusters serving any model, in that order, without repeats.
pub fn usable_gpu_types(models: &AvailableModels, gpu_types: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let clusters = models
        .models
        .iter()
        .flat_map(|m| &m.clusters)
        .filter_map(|c| c.gpu_type.clone());
    for t in models
        .on_demand
        .iter()
        .map(|o| o.gpu_type.clone())
        .chain(gpu_types.iter().cloned())
        .chain(clusters)
    {
        if !out.contains(&t) {
            out.push(t);
        }
    }
    out
}

/// The GPU types that are reserved capacity: usable, with no on-demand offer.
pub fn reserved_gpu_types(models: &AvailableModels, gpu_types: &[String]) -> Vec<String> {
    usable_gpu_types(models, gpu_types)
        .into_iter()
        .filter(|t| !models.on_demand.iter().any(|o| &o.gpu_type == t))
        .collect()
}

/// The capacity of a plan for `model` with `gpu_type` (as set, or `None`).
pub fn resolve(
    models: &AvailableModels,
    gpu_types: &[String],
    model: Option<&str>,
    gpu_type: Option<&str>,
) -> Capacity {
    let reserved = reserved_gpu_types(models, gpu_types);
    match gpu_type {
        Some(t) => Capacity {
            kind: if models.on_demand.iter().any(|o| o.gpu_type == t) {
                CapacityKind::OnDemand
            } else if reserved.iter().any(|r| r == t) {
                CapacityKind::Reserved
            } else {
                CapacityKind::Unknown
            },
            gpu_type: Some(t.to_string()),
        },
        None => {
            let cached_on_reserved = model
                .and_then(|m| models.models.iter().find(|x| x.name == m))
                .and_then(|m| {
                    m.clusters
                        .iter()
                        .filter_map(|c| c.gpu_type.as_deref())
                        .find(|t| reserved.iter().any(|r| r == t))
                });
            match cached_on_reserved {
                Some(t) => Capacity {
                    kind: CapacityKind::Reserved,
                    gpu_type: Some(t.to_string()),
                },
                None => Capacity {
                    kind: CapacityKind::OnDemand,
                    gpu_type: None,
                },
            }
        }
    }
}

/// What the cached-model rule says about a plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Weights {
    /// The model is cached where the plan runs (or there is no model to check).
    Cached,
    /// A warning: the plan runs, with this caveat.
    Warning(String),
    /// An error: the run cannot work.
    Error(String),
}

/// Whether `model`'s weights can reach the plan's capacity. `volume`: the plan's volume.
pub fn weights(
    models: &AvailableModels,
    model: Option<&str>,
    capacity: &Capacity,
    volume: Option<&str>,
) -> Weights {
    let Some(name) = model else {
        return Weights::Cached;
    };
    let entry = models.models.iter().find(|m| m.name == name);
    // Config text: shown on one bounded line.
    let model = crate::untrusted::one_line(name, 120);
    let volume = volume.map(|v| crate::untrusted::one_line(v, 80));
    let cached_here = entry.is_some_and(|m| match (&capacity.kind, &capacity.gpu_type) {
        (CapacityKind::Reserved, Some(t)) => m
            .clusters
            .iter()
            .any(|c| c.gpu_type.as_deref() == Some(t.as_str())),
        // On-demand: cached on a cluster of an on-demand type (a model listed only on a
        // reserved cluster is not cached on on-demand capacity).
        _ => m.clusters.iter().any(|c| {
            c.gpu_type
                .as_deref()
                .is_some_and(|t| models.on_demand.iter().any(|o| o.gpu_type == t))
        }),
    });
    if cached_here {
        return Weights::Cached;
    }
    if entry.is_none()
        && let Some(close) = models
            .models
            .iter()
            .find(|m| m.name.eq_ignore_ascii_case(name))
    {
        return Weights::Error(format!(
            "model {model} is not in the platform's list; names are case-sensitive: did you mean {}?",
            crate::untrusted::one_line(&close.name, 120)
        ));
    }
    match capacity.kind {
        CapacityKind::Reserved => {
            let on = crate::untrusted::one_line(
                capacity
                    .gpu_type
                    .as_deref()
                    .unwrap_or("the reserved cluster"),
                60,
            );
            match volume {
                Some(v) => Weights::Warning(format!(
                    "{model} is not cached on the reserved {on} capacity, which never downloads weights: the run loads them from volume {v} and fails at start if they are not there"
                )),
                None => Weights::Error(format!(
                    "{model} is not cached on the reserved {on} capacity, and reserved capacity never downloads weights: the run would fail at start. Put the weights on a volume and set `volume`, use a model the cluster caches (list_models), or choose an on-demand gpu_type"
                )),
            }
        }
        CapacityKind::OnDemand | CapacityKind::Unknown => Weights::Warning(format!(
            "{model} is not in the platform's cached models: weights download at start; gated repos need HF_TOKEN (pass env: [\"HF_TOKEN\"])"
        )),
    }
}

/// Refusal of on-demand capacity for an account without on-demand (beta) access.
pub fn on_demand_refusal(models: &AvailableModels, capacity: &Capacity) -> Option<String> {
    if capacity.kind != CapacityKind::OnDemand || models.on_demand_beta_access != Some(false) {
        return None;
    }
    Some(format!(
        "this owner has no on-demand (beta) access, and {} is on-demand capacity: the platform would refuse the run (403). Set gpu_type to a reserved type of the owner (list_gpus), or launch as a team that has access",
        capacity
            .gpu_type
            .as_deref()
            .map(|t| format!("gpu_type {}", crate::untrusted::one_line(t, 60)))
            .unwrap_or_else(|| "a plan without a reserved gpu_type".into())
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Team Gamma's view: shared models on H100/H200, a reserved A100 cluster caching one.
    fn gamma() -> (AvailableModels, Vec<String>) {
        let models: AvailableModels = serde_json::from_value(json!({
            "models": [
                {"name": "small", "clusters": [
                    {"clusterId": "c1", "clusterName": "h100", "gpuType": "H100_80GB"},
                    {"clusterId": "r1", "clusterName": "gamma", "gpuType": "A100_80GB"}]},
                {"name": "reserved-only", "clusters": [
                    {"clusterId": "r1", "clusterName": "gamma", "gpuType": "A100_80GB"}]},
                {"name": "shared", "clusters": [
                    {"clusterId": "c2", "clusterName": "h200", "gpuType": "H200_141GB"}]}
            ],
            "onDemand": [
                {"gpuType": "H100_80GB", "pricePerGpuHour": 2.49},
                {"gpuType": "H200_141GB", "pricePerGpuHour": 3.19}
            ],
            "onDemandBetaAccess": true
        }))
        .unwrap();
        let types = vec!["H100_80GB".into(), "H200_141GB".into(), "A100_80GB".into()];
        (models, types)
    }

    #[test]
    fn a_reserved_only_type_is_usable_and_reserved() {
        let (m, t) = gamma();
        assert_eq!(
            usable_gpu_types(&m, &t),
            vec!["H100_80GB", "H200_141GB", "A100_80GB"]
        );
        // Known from a model's cluster alone (available-gpu-types left out).
        assert!(usable_gpu_types(&m, &[]).contains(&"A100_80GB".to_string()));
        assert_eq!(reserved_gpu_types(&m, &t), vec!["A100_80GB"]);
        let c = resolve(&m, &t, Some("small"), Some("A100_80GB"));
        assert_eq!(c.kind, CapacityKind::Reserved);
        assert_eq!(
            resolve(&m, &t, Some("small"), Some("H100_80GB")).kind,
            CapacityKind::OnDemand
        );
        assert_eq!(
            resolve(&m, &t, Some("small"), Some("B200_180GB")).kind,
            CapacityKind::Unknown
        );
    }

    #[test]
    fn without_a_gpu_type_a_reserved_cluster_caching_the_model_is_preferred() {
        let (m, t) = gamma();
        let c = resolve(&m, &t, Some("reserved-only"), None);
        assert_eq!(
            (c.kind, c.gpu_type.as_deref()),
            (CapacityKind::Reserved, Some("A100_80GB"))
        );
        let c = resolve(&m, &t, Some("shared"), None);
        assert_eq!((c.kind, c.gpu_type), (CapacityKind::OnDemand, None));
        let c = resolve(&m, &t, Some("uncached"), None);
        assert_eq!(c.kind, CapacityKind::OnDemand);
    }

    #[test]
    fn an_uncached_model_warns_on_demand_and_fails_only_on_reserved_without_a_volume() {
        let (m, t) = gamma();
        let od = resolve(&m, &t, Some("uncached"), Some("H100_80GB"));
        match weights(&m, Some("uncached"), &od, None) {
            Weights::Warning(w) => assert!(
                w.contains("weights download at start") && w.contains("HF_TOKEN"),
                "{w}"
            ),
            other => panic!("{other:?}"),
        }
        let res = resolve(&m, &t, Some("uncached"), Some("A100_80GB"));
        match weights(&m, Some("uncached"), &res, None) {
            Weights::Error(e) => {
                assert!(e.contains("never downloads") && e.contains("volume"), "{e}")
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            weights(&m, Some("uncached"), &res, Some("gamma-weights")),
            Weights::Warning(w) if w.contains("gamma-weights")
        ));
        // A model cached on-demand but not on the reserved cluster is as uncached there.
        assert!(matches!(
            weights(&m, Some("shared"), &res, None),
            Weights::Error(_)
        ));
        assert_eq!(weights(&m, Some("small"), &res, None), Weights::Cached);
        assert!(matches!(
            weights(&m, Some("SMALL"), &od, None),
            Weights::Error(e) if e.contains("did you mean small")
        ));
        assert_eq!(weights(&m, Some("shared"), &od, None), Weights::Cached);
        // Listed only on the reserved cluster: not cached on on-demand capacity.
        assert!(matches!(
            weights(&m, Some("reserved-only"), &od, None),
            Weights::Warning(_)
        ));
    }

    #[test]
    fn on_demand_without_beta_access_is_refused_but_reserved_is_not() {
        let (mut m, t) = gamma();
        let od = resolve(&m, &t, Some("small"), Some("H100_80GB"));
        assert_eq!(on_demand_refusal(&m, &od), None);
        m.on_demand_beta_access = Some(false);
        assert!(on_demand_refusal(&m, &od).unwrap().contains("403"));
        let res = resolve(&m, &t, Some("small"), Some("A100_80GB"));
        assert_eq!(on_demand_refusal(&m, &res), None);
    }
}
