//! A plan's volume, created once: journalled so two calls (or a retry after a crash) never
//! create it twice, then waited for (bounded) until it is RUNNING.

use std::time::Duration;

use factory_platform::{PlatformClient, TeamScope};
use factory_policies::{
    dispatch,
    store::{Claim, StateStore, VolumeState},
};
use serde_json::json;

use super::{PlanBody, VolumePlan};
use crate::{
    audit::audit,
    error::ToolError,
    state::{AppState, platform_error},
};

fn refuse(msg: impl Into<String>) -> ToolError {
    ToolError::new(msg)
}

pub(super) async fn ensure_volume(
    state: &AppState,
    store: &dyn StateStore,
    platform: &PlatformClient,
    scope: &TeamScope,
    body: &PlanBody,
    v: &VolumePlan,
) -> Result<bool, ToolError> {
    let owner_key = body.team_id.clone().unwrap_or_else(|| "personal".into());
    let timeout = platform.settings().timeouts.request;
    let lease = timeout + Duration::from_secs(30);
    let list = |platform: &PlatformClient| {
        let scope = scope.clone();
        let platform = platform.clone();
        async move { platform.list_volumes(&scope).await }
    };
    let busy = || {
        refuse(format!(
            "Volume {} is being created by another call; call launch_run again in a moment. Nothing was dispatched.",
            v.name
        ))
    };
    let mut created = false;
    let existing = list(platform)
        .await
        .map_err(|e| platform_error("list volumes", &e))?;
    if !existing.iter().any(|x| x.name == v.name) {
        let journal_err = |e| {
            ToolError::unavailable(format!(
                "cannot write the volume journal ({e}); call launch_run again. Nothing was created or dispatched."
            ))
        };
        let claim = store
            .claim_volume_create(&owner_key, &v.name, lease)
            .await
            .map_err(journal_err)?;
        let go = match claim {
            Claim::Claimed(_) => true,
            Claim::Existing(rec) => match rec.state {
                VolumeState::Creating {
                    lease_expired: false,
                    ..
                } => return Err(busy()),
                // Created by an earlier call, or an earlier attempt's answer was lost, or its
                // creator died. The listing above came before this claim (another call may
                // have created it since): list again. Not there: a volume created earlier is
                // gone; otherwise wait out that attempt's settle window, then retry that very
                // attempt (atomic: of several callers one creates, none once it moved on).
                _ => {
                    let listed_at = chrono::Utc::now();
                    let now = list(platform)
                        .await
                        .map_err(|e| platform_error("list volumes", &e))?;
                    if now.iter().any(|x| x.name == v.name) {
                        let _ = store.mark_volume_created(&owner_key, &v.name).await;
                        false
                    } else if rec.state == VolumeState::Created {
                        return Err(refuse(format!(
                            "Volume {} was created for this owner earlier but is no longer listed (deleted?): re-plan with another volume name, or without `volume`. Nothing was dispatched.",
                            v.name
                        )));
                    } else if let Some(wait) =
                        dispatch::settle_wait(rec.started_at, listed_at, timeout)
                    {
                        return Err(refuse(format!(
                            "Creating volume {} had an unknown outcome and it is not listed yet; call launch_run again in {wait} s, when a late create would show. Nothing was dispatched.",
                            v.name
                        )));
                    } else {
                        let settle = dispatch::settle_window(timeout);
                        match store
                            .retry_volume_create(&owner_key, &v.name, rec.attempts, settle, lease)
                            .await
                            .map_err(journal_err)?
                        {
                            Claim::Claimed(_) => true,
                            // Created meanwhile: wait for it below.
                            Claim::Existing(r) if r.state == VolumeState::Created => false,
                            Claim::Existing(_) => return Err(busy()),
                        }
                    }
                }
            },
        };
        if go {
            match platform.create_volume(&v.name, &v.size, scope).await {
                Ok(_) => {
                    let _ = store.mark_volume_created(&owner_key, &v.name).await;
                    audit(
                        state,
                        "launch_run",
                        "volume_created",
                        None,
                        None,
                        json!({"volume": v.name, "size": v.size}),
                    )
                    .await;
                    created = true;
                }
                Err(e) if e.is_ambiguous() => {
                    let _ = store
                        .mark_volume_unknown(&owner_key, &v.name, &e.to_string())
                        .await;
                    // The volume may exist: look before saying anything.
                    let now = list(platform).await.unwrap_or_default();
                    if now.iter().any(|x| x.name == v.name) {
                        let _ = store.mark_volume_created(&owner_key, &v.name).await;
                        created = true;
                    } else {
                        return Err(refuse(format!(
                            "Creating volume {} had an unknown outcome ({e}); call launch_run again: it checks before creating. Nothing was dispatched.",
                            v.name
                        )));
                    }
                }
                Err(e) => {
                    let _ = store
                        .mark_volume_failed(&owner_key, &v.name, &e.to_string())
                        .await;
                    return Err(platform_error(&format!("create volume {}", v.name), &e));
                }
            }
        }
    }
    // Wait (bounded) for RUNNING.
    let deadline = tokio::time::Instant::now() + state.limits.volume_wait;
    loop {
        let vols = list(platform)
            .await
            .map_err(|e| platform_error("list volumes", &e))?;
        match vols
            .iter()
            .find(|x| x.name == v.name)
            .map(|x| x.status.as_str())
        {
            Some("RUNNING") => return Ok(created),
            Some(s @ ("FAILED" | "TOMBSTONED")) => {
                return Err(refuse(format!(
                    "Volume {} is {s}: choose another volume and re-plan. Nothing was dispatched.",
                    v.name
                )));
            }
            other => {
                if tokio::time::Instant::now() >= deadline {
                    return Err(refuse(format!(
                        "Volume {} is still being created ({}); call launch_run again in a minute — it continues from here. Nothing was dispatched yet.",
                        v.name,
                        other.unwrap_or("not listed yet")
                    )));
                }
            }
        }
        state.polls.pace(state.limits.volume_poll, deadline).await;
    }
}
