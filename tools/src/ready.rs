//! The facts behind `/readyz` (issue 21 §3): can the state store be read, and does the platform
//! answer, each said in one fixed word (no address, no error text, no secret). The HTTP side
//! (caching, status codes) is `factory_server::http::ops`.

use std::time::Duration;

use factory_platform::PlatformError;

use crate::state::AppState;

/// How long each probe may take before it counts as failed.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(3);

/// The store's and the platform's word, probed together.
pub async fn probe(state: &AppState) -> (&'static str, &'static str) {
    tokio::join!(probe_store(state), probe_platform(state))
}

/// One read of the store (a plan that cannot exist: nothing is written).
async fn probe_store(state: &AppState) -> &'static str {
    let Ok(store) = state.store() else {
        return "unavailable";
    };
    match tokio::time::timeout(PROBE_TIMEOUT, store.decision("readyz-probe")).await {
        Ok(Ok(_)) => "ok",
        Ok(Err(_)) => "error",
        Err(_) => "timeout",
    }
}

/// One cheap platform request, not retried: who the key belongs to.
async fn probe_platform(state: &AppState) -> &'static str {
    let Ok(platform) = state.platform() else {
        return "unconfigured";
    };
    // The client's own timeout, and ours around it (connection set-up included).
    match tokio::time::timeout(PROBE_TIMEOUT, platform.probe(PROBE_TIMEOUT)).await {
        Ok(Ok(_)) => "ok",
        Ok(Err(e)) => platform_word(&e),
        Err(_) => "timeout",
    }
}

/// The one word said about a failed platform probe.
fn platform_word(e: &PlatformError) -> &'static str {
    match e {
        PlatformError::Timeout { .. } => "timeout",
        PlatformError::Transport { .. } => "unreachable",
        PlatformError::MissingApiKey => "unconfigured",
        PlatformError::Unauthorized | PlatformError::Forbidden { .. } => "unauthorized",
        PlatformError::RateLimited { .. } => "rate_limited",
        e if e.status().is_some_and(|s| s >= 500) => "server_error",
        _ => "error",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn platform_words_say_what_failed_and_nothing_more() {
        let transport = PlatformError::Transport {
            endpoint: "GET /user/whoami".into(),
            message: "connection refused to https://secret.example".into(),
            maybe_sent: false,
        };
        assert_eq!(platform_word(&transport), "unreachable");
        assert_eq!(platform_word(&PlatformError::Unauthorized), "unauthorized");
        let server = PlatformError::Server {
            status: 502,
            detail: "bad gateway".into(),
            endpoint: "GET /user/whoami".into(),
            retry_after: None,
        };
        assert_eq!(platform_word(&server), "server_error");
        let timeout = PlatformError::Timeout {
            endpoint: "GET /user/whoami".into(),
            after: Duration::from_secs(3),
        };
        assert_eq!(platform_word(&timeout), "timeout");
    }
}
