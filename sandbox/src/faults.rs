//! Fault injection: rules added with `POST /_sandbox/faults` (or the handle) that make matching
//! requests fail in the ways a client must survive — an error status with `Retry-After`, a delay
//! before or after the request is handled, a connection dropped after the work was committed,
//! a reset with no answer, a body cut half-way or held there. This module holds the rules; `api::layers`
//! applies them.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde::{Deserialize, Serialize};
use tokio::sync::{Notify, watch};

/// How a rule's path is compared with the request path (query string excluded).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FaultMatch {
    #[default]
    Exact,
    Prefix,
}

/// What a matching request suffers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FaultEffect {
    /// Answer `status` (default 503) without handling, with `Retry-After` when set.
    Status,
    /// Wait `delay_ms`, then handle normally.
    Delay,
    /// Handle (commit), wait `delay_ms`, then answer.
    DelayAfterCommit,
    /// Handle (commit), then close the connection without answering.
    DropAfterCommit,
    /// Close the connection without handling or answering.
    Reset,
    /// Handle, send the headers (full `Content-Length`) and half the body, then close.
    CutBody,
    /// Handle, send the headers and half the body, wait `delay_ms`, then send the rest: a
    /// download held half-way (a test kills the client there).
    StallBody,
    /// S3 endpoint only: the request's transfer credentials expire now (it is refused with
    /// `ExpiredToken`, and so is every later request with them).
    ExpireCredentials,
    /// Hold the request, unhandled, until released (`POST /_sandbox/faults/release`,
    /// `SandboxHandle::release_held`), then handle it normally: a test's gate between two steps
    /// of a client, with no clock involved.
    Hold,
}

/// One fault rule. `times` absent or 0 means the rule never runs out.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FaultRule {
    /// Assigned by the sandbox.
    #[serde(default)]
    pub id: u64,
    /// HTTP method; absent or `*` matches any.
    #[serde(default)]
    pub method: Option<String>,
    pub path: String,
    #[serde(default, rename = "match")]
    pub match_kind: FaultMatch,
    pub effect: FaultEffect,
    #[serde(default)]
    pub status: Option<u16>,
    #[serde(default)]
    pub retry_after_s: Option<u64>,
    #[serde(default)]
    pub delay_ms: Option<u64>,
    #[serde(default)]
    pub times: Option<u32>,
    /// How many requests this rule has hit (read-only).
    #[serde(default)]
    pub hits: u32,
}

impl FaultRule {
    /// A rule with no method filter, exact match, unlimited.
    pub fn new(path: impl Into<String>, effect: FaultEffect) -> Self {
        Self {
            id: 0,
            method: None,
            path: path.into(),
            match_kind: FaultMatch::Exact,
            effect,
            status: None,
            retry_after_s: None,
            delay_ms: None,
            times: None,
            hits: 0,
        }
    }

    fn matches(&self, method: &str, path: &str) -> bool {
        let method_ok = match self.method.as_deref() {
            None | Some("*") | Some("") => true,
            Some(m) => m.eq_ignore_ascii_case(method),
        };
        let path_ok = match self.match_kind {
            FaultMatch::Exact => self.path == path,
            FaultMatch::Prefix => path.starts_with(&self.path),
        };
        method_ok && path_ok
    }
}

#[derive(Debug, Default)]
pub(crate) struct Faults {
    rules: Vec<FaultRule>,
    next_id: u64,
}

impl Faults {
    pub(crate) fn add(&mut self, mut rule: FaultRule) -> FaultRule {
        self.next_id += 1;
        rule.id = self.next_id;
        rule.hits = 0;
        self.rules.push(rule.clone());
        rule
    }

    pub(crate) fn list(&self) -> Vec<FaultRule> {
        self.rules.clone()
    }

    pub(crate) fn clear(&mut self) {
        self.rules.clear();
    }

    /// The first rule matching the request, used up by one.
    pub(crate) fn take(&mut self, method: &str, path: &str) -> Option<FaultRule> {
        let idx = self.rules.iter().position(|r| r.matches(method, path))?;
        let rule = &mut self.rules[idx];
        rule.hits += 1;
        let fired = rule.clone();
        if let Some(t) = rule.times.as_mut()
            && *t > 0
        {
            *t -= 1;
            if *t == 0 {
                self.rules.remove(idx);
            }
        }
        Some(fired)
    }
}

/// Requests held by `hold` rules. A release lets go of every request held at that moment; a
/// request arriving later waits for the next release.
#[derive(Debug)]
pub(crate) struct Holds {
    releases: watch::Sender<u64>,
    held: AtomicUsize,
}

impl Default for Holds {
    fn default() -> Self {
        Self {
            releases: watch::channel(0).0,
            held: AtomicUsize::new(0),
        }
    }
}

impl Holds {
    /// Wait for the next release (or for the client to go away: the count follows the drop).
    pub(crate) async fn hold(&self) {
        struct Held<'a>(&'a AtomicUsize);
        impl Drop for Held<'_> {
            fn drop(&mut self) {
                self.0.fetch_sub(1, Ordering::SeqCst);
            }
        }
        let mut rx = self.releases.subscribe();
        let seen = *rx.borrow_and_update();
        self.held.fetch_add(1, Ordering::SeqCst);
        let _held = Held(&self.held);
        let _ = rx.wait_for(|n| *n != seen).await;
    }

    /// How many requests are held now.
    pub(crate) fn held(&self) -> usize {
        self.held.load(Ordering::SeqCst)
    }

    /// Let go of every request held now; returns how many there were.
    pub(crate) fn release(&self) -> usize {
        let n = self.held();
        self.releases.send_modify(|r| *r = r.wrapping_add(1));
        n
    }
}

/// Per-connection switch: notifying it makes the accept loop drop the connection unanswered.
#[derive(Clone, Debug)]
pub(crate) struct ConnKill(pub Arc<Notify>);
