//! Launch identities for the duplicate decision: the plan's own, and those of the runs this
//! server dispatched, read back from the journal (the plan each dispatch came from).

use factory_platform::wire::runs::RlRun;
use factory_policies::{duplicates::LaunchIdentity, store::DispatchState};

use super::{KIND_LAUNCH, PlanBody, request::ResolvedLaunch};
use crate::state::AppState;

/// The identity of the launch a plan resolves to.
pub(super) fn of_plan(resolved: &ResolvedLaunch) -> LaunchIdentity {
    LaunchIdentity {
        config_digest: resolved.config_digest.clone(),
        source_ref: resolved.source_ref.clone(),
        image_tag: resolved.image_tag.clone(),
        gpu_type: resolved.gpu_type.clone(),
        volume: resolved.volume_name.clone(),
        owner: resolved.spec.team_id.clone(),
    }
}

/// The identity of a stored plan body (launch plans only: a resume has no config of its own).
fn of_body(body: &PlanBody) -> Option<LaunchIdentity> {
    if body.kind != KIND_LAUNCH || body.config_digest.is_empty() {
        return None;
    }
    Some(LaunchIdentity {
        config_digest: body.config_digest.clone(),
        source_ref: body.request.source_ref().map(str::to_string),
        image_tag: body.request.image_tag().map(str::to_string),
        gpu_type: body.gpu_type.clone(),
        volume: body.volume.as_ref().map(|v| v.name.clone()),
        owner: body.team_id.clone(),
    })
}

/// The ids of every run this server dispatched (from the journal).
pub(super) async fn dispatched_ids(state: &AppState) -> Vec<String> {
    let Ok(store) = state.store() else {
        return Vec::new();
    };
    store
        .dispatched_runs()
        .await
        .unwrap_or_default()
        .into_iter()
        .filter_map(|d| match d.state {
            DispatchState::Dispatched { run_id, .. } => Some(run_id),
            _ => None,
        })
        .collect()
}

/// The journalled identities of those of `runs` this server dispatched. A journal that cannot
/// be read leaves them to be judged on what the run objects carry.
pub(super) async fn journalled(state: &AppState, runs: &[RlRun]) -> Vec<(String, LaunchIdentity)> {
    let Ok(store) = state.store() else {
        return Vec::new();
    };
    let dispatched = store.dispatched_runs().await.unwrap_or_default();
    let mut out = Vec::new();
    for d in dispatched {
        let DispatchState::Dispatched { run_id, .. } = d.state else {
            continue;
        };
        if !runs.iter().any(|r| r.id == run_id) {
            continue;
        }
        let body = match store.get_plan(&d.plan_id).await {
            Ok(Some(plan)) => serde_json::from_value::<PlanBody>(plan.body).ok(),
            _ => None,
        };
        if let Some(identity) = body.as_ref().and_then(of_body) {
            out.push((run_id, identity));
        }
    }
    out
}
