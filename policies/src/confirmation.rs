//! Who confirms an action, and through which channel: a launch under `confirm = "plan"` needs
//! nobody (the cost caps bound it); a launch under `confirm = "human"` and every delete need a
//! person — through the 2026-07-28 input-required round trip when the client speaks it, the
//! legacy elicitation request otherwise, and `factory-mcp approve` when the client cannot ask.

use crate::policy::ConfirmMode;

/// What is being confirmed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// A billable launch or resume.
    Launch,
    /// A permanent delete: always a person, whatever the policy's `confirm` says.
    Delete,
}

/// What the client can do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Client {
    /// It negotiated protocol 2026-07-28 or later (input-required results).
    pub modern: bool,
    /// It declared the elicitation capability.
    pub can_elicit: bool,
}

/// How the confirmation happens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Channel {
    /// No person is asked.
    NotNeeded,
    /// The input-required round trip (sealed request state, single-use nonce).
    InputRequired,
    /// The legacy `elicitation/create` request.
    Elicitation,
    /// The client cannot ask: a person runs `factory-mcp approve <id>`.
    ApproveCommand,
}

/// Whether a person must confirm `action` under `mode`.
pub fn person_needed(mode: ConfirmMode, action: Action) -> bool {
    !(action == Action::Launch && mode == ConfirmMode::Plan)
}

/// The channel for `action` under `mode` with this `client`.
pub fn channel(mode: ConfirmMode, action: Action, client: Client) -> Channel {
    if !person_needed(mode, action) {
        return Channel::NotNeeded;
    }
    match (client.modern, client.can_elicit) {
        (true, true) => Channel::InputRequired,
        (false, true) => Channel::Elicitation,
        (_, false) => Channel::ApproveCommand,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MODERN: Client = Client {
        modern: true,
        can_elicit: true,
    };
    const LEGACY: Client = Client {
        modern: false,
        can_elicit: true,
    };
    const MUTE: Client = Client {
        modern: true,
        can_elicit: false,
    };

    #[test]
    fn plan_mode_skips_a_person_for_launches_but_never_for_deletes() {
        assert_eq!(
            channel(ConfirmMode::Plan, Action::Launch, MODERN),
            Channel::NotNeeded
        );
        assert_eq!(
            channel(ConfirmMode::Plan, Action::Delete, MODERN),
            Channel::InputRequired
        );
    }

    #[test]
    fn the_channel_follows_what_the_client_can_do() {
        let h = ConfirmMode::Human;
        assert_eq!(channel(h, Action::Launch, LEGACY), Channel::Elicitation);
        assert_eq!(channel(h, Action::Launch, MUTE), Channel::ApproveCommand);
        assert_eq!(
            channel(h, Action::Delete, Client::default()),
            Channel::ApproveCommand
        );
    }
}
