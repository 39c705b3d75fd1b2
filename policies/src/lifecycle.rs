//! Preconditions of the lifecycle tools: which run status allows a pause, a restart, a resume,
//! a stop or a delete.

use factory_platform::wire::runs::RunStatus;

/// What a pause request meets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pause {
    /// Paused or pausing already: send nothing.
    AlreadyPaused,
    /// Running: pause it.
    Go,
    /// Any other status: refused.
    Refused,
}

/// A pause of a run in `status`.
pub fn pause(status: &RunStatus) -> Pause {
    match status {
        RunStatus::Paused | RunStatus::Pausing => Pause::AlreadyPaused,
        RunStatus::Running => Pause::Go,
        _ => Pause::Refused,
    }
}

/// Only a running run restarts from its last checkpoint.
pub fn may_restart(status: &RunStatus) -> bool {
    *status == RunStatus::Running
}

/// Only a paused run is resumed (as a new run).
pub fn may_resume(status: &RunStatus) -> bool {
    *status == RunStatus::Paused
}

/// A stop is sent only to a run that has not ended.
pub fn needs_stop(status: &RunStatus) -> bool {
    !status.is_terminal()
}

/// A run that holds GPUs is not deleted: it is stopped first.
pub fn may_delete(status: &RunStatus) -> bool {
    !status.is_active()
}

/// After the person's yes: the run is still the one shown (same name) and still deletable.
pub fn delete_still_valid(
    shown_name: Option<&str>,
    now_name: Option<&str>,
    now_status: &RunStatus,
) -> bool {
    shown_name == now_name && may_delete(now_status)
}

/// Whether a run's logs can still be saved (`export_logs`): the platform reads them from the
/// run's pods, which exist while the run is active and as long as it still lists them (its env
/// servers); a run that never started has none, and one whose pods are gone has nothing left.
pub fn logs_exportable(status: &RunStatus, started: bool, listed_pods: usize) -> bool {
    started && (status.is_active() || listed_pods > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn logs_are_exportable_while_pods_exist() {
        assert!(logs_exportable(&RunStatus::Running, true, 0));
        assert!(logs_exportable(&RunStatus::Completed, true, 2));
        assert!(!logs_exportable(&RunStatus::Completed, true, 0));
        assert!(!logs_exportable(&RunStatus::Queued, false, 0));
    }

    #[test]
    fn only_a_running_run_is_paused_or_restarted() {
        assert_eq!(pause(&RunStatus::Running), Pause::Go);
        assert_eq!(pause(&RunStatus::Pausing), Pause::AlreadyPaused);
        assert_eq!(pause(&RunStatus::Queued), Pause::Refused);
        assert!(may_restart(&RunStatus::Running));
        assert!(!may_restart(&RunStatus::Paused));
        assert!(may_resume(&RunStatus::Paused));
        assert!(!may_resume(&RunStatus::Other("PAUSED_ISH".into())));
    }

    #[test]
    fn delete_is_refused_while_active_and_rechecked_after_the_yes() {
        assert!(!may_delete(&RunStatus::Running));
        assert!(!may_delete(&RunStatus::Queued));
        assert!(may_delete(&RunStatus::Stopped));
        assert!(may_delete(&RunStatus::Other("ARCHIVED".into())));
        assert!(delete_still_valid(Some("a"), Some("a"), &RunStatus::Failed));
        assert!(!delete_still_valid(
            Some("a"),
            Some("b"),
            &RunStatus::Failed
        ));
        assert!(!delete_still_valid(
            Some("a"),
            Some("a"),
            &RunStatus::Pending
        ));
        assert!(needs_stop(&RunStatus::Running));
        assert!(!needs_stop(&RunStatus::Completed));
    }
}
