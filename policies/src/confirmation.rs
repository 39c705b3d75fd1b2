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
    /// URL-mode elicitation: the client opens the server's approval page; the person's
    /// decision is the page's Approve or Decline, never the elicitation's answer.
    Page,
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

/// The channel when the client's declared elicitation modes are known: a client that
/// declared URL mode (in either protocol era) is sent to the approval page whenever a person
/// is needed; form elicitation stays for clients that declared form and not URL.
pub fn channel_with_modes(
    mode: ConfirmMode,
    action: Action,
    client: Client,
    url_mode: bool,
) -> Channel {
    match channel(mode, action, client) {
        Channel::NotNeeded => Channel::NotNeeded,
        _ if url_mode => Channel::Page,
        other => other,
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

    #[test]
    fn a_client_that_declared_url_mode_gets_the_page_in_both_eras() {
        let h = ConfirmMode::Human;
        for client in [MODERN, LEGACY] {
            assert_eq!(
                channel_with_modes(h, Action::Launch, client, true),
                Channel::Page
            );
            assert_eq!(
                channel_with_modes(h, Action::Delete, client, true),
                Channel::Page
            );
        }
        // Form without URL keeps the form; no elicitation at all keeps the command.
        assert_eq!(
            channel_with_modes(h, Action::Launch, LEGACY, false),
            Channel::Elicitation
        );
        assert_eq!(
            channel_with_modes(h, Action::Launch, MUTE, false),
            Channel::ApproveCommand
        );
        // Plan mode still needs nobody for a launch.
        assert_eq!(
            channel_with_modes(ConfirmMode::Plan, Action::Launch, MODERN, true),
            Channel::NotNeeded
        );
    }
}
