//! Who confirms an action, through which channel it is asked, and which answers count as a
//! person's yes. A launch under `confirm = "plan"` needs nobody (the cost caps bound it); a
//! launch under `"human"` or `"out_of_band"`, and every delete, need a person. Under `"human"`
//! the client's form counts (the 2026-07-28 input-required round trip when the client speaks
//! it, the legacy elicitation request otherwise); under `"out_of_band"` a form answer never
//! counts — a client can answer its own form — and only an answer given outside the client
//! does (`factory-mcp approve` on a terminal, or the server's approval page opened with
//! `approve --page`). A client that declared URL-mode elicitation is sent to the page
//! ([`Channel::Page`]) except under `"out_of_band"`, where the client never gets its address;
//! a client that cannot ask gets [`Channel::ApproveCommand`].

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
    /// URL-mode elicitation: the client opens the server's approval page; the person's
    /// decision is the page's Approve or Decline, never the elicitation's answer.
    Page,
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
    /// The server's approval page, in the person's browser.
    Page,
}

impl Via {
    /// The name stored with a decision (`decisions.via`) and written to the audit log.
    pub fn as_str(self) -> &'static str {
        match self {
            Via::Terminal => "terminal",
            Via::Form => "form",
            Via::InputRequired => "input_required",
            Via::Page => "page",
        }
    }

    /// A stored name back; `"elicitation"` is how form answers were recorded before.
    pub fn parse(s: &str) -> Option<Via> {
        match s {
            "terminal" => Some(Via::Terminal),
            "form" | "elicitation" => Some(Via::Form),
            "input_required" => Some(Via::InputRequired),
            "page" => Some(Via::Page),
            _ => None,
        }
    }

    /// Whether the answer was given outside the MCP client (which could have answered a form
    /// in the client itself).
    pub fn out_of_band(self) -> bool {
        match self {
            Via::Terminal | Via::Page => true,
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

/// The channel when the client's declared elicitation modes are known: a client that
/// declared URL mode (in either protocol era) is sent to the approval page whenever a person
/// is needed; form elicitation stays for clients that declared form and not URL. Under
/// `"out_of_band"` the client is never handed the page's address: whoever holds it can decide
/// with it, and the client may be the assistant itself (the two-user recipe of
/// docs/SECURITY.md); the person opens the page with `factory-mcp approve ID --page` instead.
pub fn channel_with_modes(
    mode: ConfirmMode,
    action: Action,
    client: Client,
    url_mode: bool,
) -> Channel {
    match channel(mode, action, client) {
        Channel::NotNeeded => Channel::NotNeeded,
        _ if url_mode && mode != ConfirmMode::OutOfBand => Channel::Page,
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
    fn out_of_band_never_asks_a_form_whatever_the_client_can_do() {
        let o = ConfirmMode::OutOfBand;
        for client in [MODERN, LEGACY, MUTE, Client::default()] {
            for action in [Action::Launch, Action::Delete] {
                assert_eq!(channel(o, action, client), Channel::ApproveCommand);
                assert!(person_needed(o, action));
                // Not even a client that can open a URL gets the page's address: with it the
                // client could decide itself. The person runs `approve` (or `approve --page`).
                assert_eq!(
                    channel_with_modes(o, action, client, true),
                    Channel::ApproveCommand
                );
            }
        }
    }

    #[test]
    fn out_of_band_takes_only_a_terminal_answer_as_a_persons_yes() {
        let o = ConfirmMode::OutOfBand;
        assert!(counts_as_yes(o, "terminal"));
        assert!(counts_as_yes(o, "page"));
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
        for v in [Via::Terminal, Via::Form, Via::InputRequired, Via::Page] {
            assert_eq!(Via::parse(v.as_str()), Some(v));
        }
        assert_eq!(Via::parse("elicitation"), Some(Via::Form));
        assert!(Via::Terminal.out_of_band());
        assert!(!Via::Form.out_of_band() && !Via::InputRequired.out_of_band());
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
