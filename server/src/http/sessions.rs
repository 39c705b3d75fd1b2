//! A cap on live MCP sessions (the 2025-11-25 era's `initialize` handshake; the 2026-07-28 era
//! is stateless and never gets here). rmcp's `LocalSessionManager` keeps every session until it
//! has been idle for its keep-alive (5 min), so a client looping on `initialize` grew the server
//! by ~55 KiB a session without bound. This wrapper admits a new session past the cap by
//! closing the session idle the longest; sessions with a request in flight are never closed,
//! and when every session is busy a new one is refused.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use futures::Stream;
use rmcp::{
    model::{ClientJsonRpcMessage, ServerJsonRpcMessage},
    transport::{
        WorkerTransport,
        streamable_http_server::{
            SessionId, SessionManager,
            session::{
                ServerSseMessage,
                local::{LocalSessionManager, LocalSessionManagerError, LocalSessionWorker},
            },
        },
    },
};

/// Why a session operation failed.
#[derive(Debug, thiserror::Error)]
pub enum SessionCapError {
    #[error(transparent)]
    Inner(#[from] LocalSessionManagerError),
    #[error(
        "{0} sessions are open and each has a request in progress; retry when one finishes (policy key http.max_sessions)"
    )]
    AllBusy(usize),
}

#[derive(Debug)]
struct Activity {
    /// When a request last started or finished in this session.
    last: Instant,
    /// Requests of this session whose answer stream is still open.
    in_flight: u32,
}

type Table = Arc<Mutex<HashMap<SessionId, Activity>>>;

/// [`LocalSessionManager`] with at most `cap` live sessions, evicting the oldest idle one.
#[derive(Debug)]
pub struct CappedSessions {
    inner: Arc<LocalSessionManager>,
    cap: usize,
    table: Table,
    /// Serialises creation, so the check against the cap and the insert are one step.
    creating: tokio::sync::Mutex<()>,
}

impl CappedSessions {
    pub fn new(inner: LocalSessionManager, cap: usize) -> Self {
        CappedSessions {
            inner: Arc::new(inner),
            cap: cap.max(1),
            table: Arc::default(),
            creating: tokio::sync::Mutex::new(()),
        }
    }

    /// Live sessions (as this wrapper counts them).
    pub fn live(&self) -> usize {
        lock(&self.table).len()
    }

    fn touch(&self, id: &SessionId) {
        if let Some(a) = lock(&self.table).get_mut(id) {
            a.last = Instant::now();
        }
    }

    /// Count a request as in flight until the returned guard drops.
    fn begin(&self, id: &SessionId) -> InFlight {
        if let Some(a) = lock(&self.table).get_mut(id) {
            a.in_flight += 1;
            a.last = Instant::now();
        }
        InFlight {
            table: self.table.clone(),
            id: id.clone(),
        }
    }
}

fn lock(table: &Table) -> std::sync::MutexGuard<'_, HashMap<SessionId, Activity>> {
    // The map holds plain counters: a panic elsewhere cannot leave it inconsistent.
    table.lock().unwrap_or_else(|p| p.into_inner())
}

/// Marks a session busy while an answer stream is open.
struct InFlight {
    table: Table,
    id: SessionId,
}

impl Drop for InFlight {
    fn drop(&mut self) {
        if let Some(a) = lock(&self.table).get_mut(&self.id) {
            a.in_flight = a.in_flight.saturating_sub(1);
            a.last = Instant::now();
        }
    }
}

/// A request's answer stream, counted in flight until it ends — which it does right after the
/// request's answer (its JSON-RPC response or error), without waiting for the session worker to
/// drop its sender. rmcp closes the channel after that message anyway; ending here means the
/// HTTP body's last chunk goes out in the same write as the answer, so a client that stops
/// reading once it has its answer still finds the body complete and keeps the connection for
/// its next call (otherwise each call cost a new TCP connection: accept, handshake, close).
fn guarded<S>(stream: S, guard: InFlight) -> impl Stream<Item = ServerSseMessage> + Send + Sync
where
    S: Stream<Item = ServerSseMessage> + Send + Sync,
{
    UntilAnswer {
        inner: Some(Box::pin(stream)),
        guard: Some(guard),
    }
}

/// See [`guarded`].
struct UntilAnswer<S> {
    inner: Option<std::pin::Pin<Box<S>>>,
    guard: Option<InFlight>,
}

/// Whether `m` is the answer that ends a request's stream.
fn is_answer(m: &ServerSseMessage) -> bool {
    matches!(
        m.message.as_deref(),
        Some(ServerJsonRpcMessage::Response(_) | ServerJsonRpcMessage::Error(_))
    )
}

impl<S: Stream<Item = ServerSseMessage>> Stream for UntilAnswer<S> {
    type Item = ServerSseMessage;

    fn poll_next(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<ServerSseMessage>> {
        use std::task::Poll;
        // Both fields are Unpin (a boxed stream and a guard).
        let this = self.get_mut();
        let Some(inner) = this.inner.as_mut() else {
            return Poll::Ready(None);
        };
        match inner.as_mut().poll_next(cx) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(Some(m)) => {
                if is_answer(&m) {
                    this.inner = None;
                    this.guard = None;
                }
                Poll::Ready(Some(m))
            }
            Poll::Ready(None) => {
                this.inner = None;
                this.guard = None;
                Poll::Ready(None)
            }
        }
    }
}

impl SessionManager for CappedSessions {
    type Error = SessionCapError;
    type Transport = WorkerTransport<LocalSessionWorker>;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        let _one_at_a_time = self.creating.lock().await;
        let victim = {
            let mut table = lock(&self.table);
            if table.len() < self.cap {
                None
            } else {
                let oldest_idle = table
                    .iter()
                    .filter(|(_, a)| a.in_flight == 0)
                    .min_by_key(|(_, a)| a.last)
                    .map(|(id, _)| id.clone());
                match oldest_idle {
                    Some(id) => {
                        table.remove(&id);
                        Some(id)
                    }
                    None => return Err(SessionCapError::AllBusy(table.len())),
                }
            }
        };
        if let Some(id) = victim {
            tracing::info!(session = %id, cap = self.cap, "session cap reached: closing the session idle the longest");
            // Closing waits on the session's worker; do not hold up the new session for it.
            let inner = self.inner.clone();
            tokio::spawn(async move {
                let _ = inner.close_session(&id).await;
            });
        }
        let (id, transport) = self.inner.create_session().await?;
        lock(&self.table).insert(
            id.clone(),
            Activity {
                last: Instant::now(),
                in_flight: 0,
            },
        );
        Ok((id, transport))
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        let _busy = self.begin(id);
        Ok(self.inner.initialize_session(id, message).await?)
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        // A session this wrapper evicted is gone even while its worker is still closing.
        if !lock(&self.table).contains_key(id) {
            return Ok(false);
        }
        Ok(self.inner.has_session(id).await?)
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        lock(&self.table).remove(id);
        Ok(self.inner.close_session(id).await?)
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        let busy = self.begin(id);
        let stream = self.inner.create_stream(id, message).await?;
        Ok(guarded(stream, busy))
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), Self::Error> {
        self.touch(id);
        Ok(self.inner.accept_message(id, message).await?)
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        // The standalone GET stream stays open for the session's life; it is not a request in
        // progress, so it does not protect the session from eviction.
        self.touch(id);
        Ok(self.inner.create_standalone_stream(id).await?)
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.touch(id);
        Ok(self.inner.resume(id, last_event_id).await?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_stream_ends_with_its_answer_and_stops_counting_it_in_flight() {
        use futures::{FutureExt, StreamExt};
        use rmcp::model::{EmptyResult, RequestId, ServerResult};
        let table: Table = Arc::default();
        let id: SessionId = Arc::from("s");
        lock(&table).insert(
            id.clone(),
            Activity {
                last: Instant::now(),
                in_flight: 1,
            },
        );
        let guard = InFlight {
            table: table.clone(),
            id: id.clone(),
        };
        let answer = ServerSseMessage::from_message(ServerJsonRpcMessage::response(
            ServerResult::EmptyResult(EmptyResult {}),
            RequestId::Number(1),
        ));
        // The session worker has not dropped its sender yet: the inner stream stays open.
        let inner = futures::stream::iter([ServerSseMessage::default(), answer])
            .chain(futures::stream::pending());
        let mut s = Box::pin(guarded(inner, guard));
        let first = s
            .next()
            .now_or_never()
            .flatten()
            .expect("the priming event");
        assert!(first.message.is_none());
        assert_eq!(lock(&table)[&id].in_flight, 1, "in flight until the answer");
        let second = s.next().now_or_never().flatten().expect("the answer");
        assert!(is_answer(&second));
        assert_eq!(lock(&table)[&id].in_flight, 0, "done once answered");
        assert!(
            matches!(s.next().now_or_never(), Some(None)),
            "the stream ends right after the answer, without waiting for the sender"
        );
    }

    #[tokio::test]
    async fn past_the_cap_the_oldest_idle_session_is_closed_and_busy_ones_are_kept() {
        let sessions = CappedSessions::new(LocalSessionManager::default(), 3);
        let mut ids = Vec::new();
        let mut transports = Vec::new();
        for _ in 0..3 {
            let (id, t) = sessions.create_session().await.unwrap();
            ids.push(id);
            transports.push(t);
        }
        // The first session has a request in flight: it is not idle.
        let busy = sessions.begin(&ids[0]);
        let (fourth, _t4) = sessions.create_session().await.unwrap();
        assert_eq!(sessions.live(), 3);
        assert!(sessions.has_session(&ids[0]).await.unwrap(), "busy kept");
        assert!(
            !sessions.has_session(&ids[1]).await.unwrap(),
            "oldest idle closed"
        );
        assert!(sessions.has_session(&ids[2]).await.unwrap());
        assert!(sessions.has_session(&fourth).await.unwrap());
        // Every session busy: a new one is refused rather than breaking work in progress.
        let _b2 = sessions.begin(&ids[2]);
        let _b4 = sessions.begin(&fourth);
        match sessions.create_session().await {
            Err(SessionCapError::AllBusy(3)) => {}
            Err(e) => panic!("wrong error: {e}"),
            Ok(_) => panic!("a fourth session while all three are busy"),
        }
        drop(busy);
        sessions.create_session().await.unwrap();
        assert!(!sessions.has_session(&ids[0]).await.unwrap());
    }
}
