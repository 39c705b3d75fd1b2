//! Who confirms an action, through which channel it is asked, and which answers count as a
//! person's yes. A launch under `confirm = "plan"` needs nobody (the cost caps bound it); a
//! launch under `"human"` or `"out_of_band"`, and every delete, need a person. Under `"human"`
//! the client's form counts (the 2026-07-28 input-required round trip when the client speaks
//! it, the legacy elicitation request otherwise); under `"out_of_band"` a form answer never
//! counts — a client can answer its own form — and only an answer given outside the client
//! does (`factory-mcp approve` on a terminal). A client that cannot ask gets
//! [`Channel::ApproveCommand`].

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
    /// It declared the elicitation capability (form mode).
    pub can_elicit: bool,
}

/// How the confirmation is asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Channel {
    /// No person is asked.
    NotNeeded,
    /// The input-required round trip with a form (sealed request state, single-use nonce).
    InputRequired,
    /// The legacy `elicitation/create` request with a form.
    Elicitation,
    /// Outside the client: a person runs `factory-mcp approve <id>` in a terminal.
    ApproveCommand,
}

/// Through which channel an answer came: recorded with the decision and in the audit log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Via {
    /// `factory-mcp approve` on its controlling terminal.
    Terminal,
    /// The legacy `elicitation/create` form, answered in the client.
    Form,
    /// The input-required round trip's form, answered in the client.
    InputRequired,
}

impl Via {
    /// The name stored with a decision (`decisions.via`) and written to the audit log.
    pub fn as_str(self) -> &'static str {
        match self {
            Via::Terminal => "terminal",
            Via::Form => "form",
            Via::InputRequired => "input_required",
        }
    }

    /// A stored name back; `"elicitation"` is how form answers were recorded before.
    pub fn parse(s: &str) -> Option<Via> {
        match s {
            "terminal" => Some(Via::Terminal),
            "form" | "elicitation" => Some(Via::Form),
            "input_required" => Some(Via::InputRequired),
            _ => None,
        }
    }

    /// Whether the answer was given outside the MCP client (which could have answered a form
    /// in the client itself).
    pub fn out_of_band(self) -> bool {
        match self {
            Via::Terminal => true,
            Via::Form | Via::InputRequired => false,
        }
    }
}

/// Whether a person must confirm `action` under `mode`.
pub fn person_needed(mode: ConfirmMode, action: Action) -> bool {
    !(action == Action::Launch && mode == ConfirmMode::Plan)
}

/// Whether a yes that came through `via` (a stored name) is taken as a person's yes under
/// `mode`. Under `"out_of_band"` only answers given outside the client count; an unknown name
/// counts only where any answer does.
pub fn counts_as_yes(mode: ConfirmMode, via: &str) -> bool {
    match mode {
        ConfirmMode::OutOfBand => Via::parse(via).is_some_and(Via::out_of_band),
        ConfirmMode::Human | ConfirmMode::Plan => true,
    }
}

/// The channel for `action` under `mode` with this `client`.
pub fn channel(mode: ConfirmMode, action: Action, client: Client) -> Channel {
    if !person_needed(mode, action) {
        return Channel::NotNeeded;
    }
    if mode == ConfirmMode::OutOfBand {
        // A form would be asked in the client, whose answer does not count here.
        return Channel::ApproveCommand;
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

    #[test]
    fn out_of_band_never_asks_a_form_whatever_the_client_can_do() {
        let o = ConfirmMode::OutOfBand;
        for client in [MODERN, LEGACY, MUTE, Client::default()] {
            for action in [Action::Launch, Action::Delete] {
                assert_eq!(channel(o, action, client), Channel::ApproveCommand);
                assert!(person_needed(o, action));
            }
        }
    }

    #[test]
    fn out_of_band_takes_only_a_terminal_answer_as_a_persons_yes() {
        let o = ConfirmMode::OutOfBand;
        assert!(counts_as_yes(o, "terminal"));
        for via in ["form", "elicitation", "input_required", "kept", ""] {
            assert!(!counts_as_yes(o, via), "{via}");
        }
        // The default keeps today's behaviour: a form answer counts.
        for via in ["terminal", "form", "elicitation", "input_required"] {
            assert!(counts_as_yes(ConfirmMode::Human, via), "{via}");
        }
    }

    #[test]
    fn via_names_round_trip() {
        for v in [Via::Terminal, Via::Form, Via::InputRequired] {
            assert_eq!(Via::parse(v.as_str()), Some(v));
        }
        assert_eq!(Via::parse("elicitation"), Some(Via::Form));
        assert!(Via::Terminal.out_of_band());
        assert!(!Via::Form.out_of_band() && !Via::InputRequired.out_of_band());
    }
}
