//! The accept loop. It is ours rather than `axum::serve` so that each connection carries a
//! kill switch ([`ConnKill`]): a fault rule can then close a connection without answering.

use std::convert::Infallible;
use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use tokio::sync::Notify;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use tower_service::Service;

use crate::faults::ConnKill;

pub(crate) async fn serve(listener: TcpListener, router: Router, cancel: CancellationToken) {
    let mut connections = JoinSet::new();
    loop {
        let accepted = tokio::select! {
            () = cancel.cancelled() => break,
            accepted = listener.accept() => accepted,
            // Reap finished connection tasks so the set does not grow without bound.
            Some(_) = connections.join_next(), if !connections.is_empty() => continue,
        };
        let stream = match accepted {
            Ok((stream, _)) => stream,
            Err(e) => {
                tracing::debug!("accept failed: {e}");
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let kill = Arc::new(Notify::new());
        let router = router.clone();
        let conn_kill = kill.clone();
        let service = hyper::service::service_fn(move |mut req: http::Request<Incoming>| {
            req.extensions_mut().insert(ConnKill(conn_kill.clone()));
            let mut router = router.clone();
            async move {
                let resp: Result<axum::response::Response, Infallible> =
                    router.call(req.map(Body::new)).await;
                resp
            }
        });
        let cancel = cancel.clone();
        connections.spawn(async move {
            let conn = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service);
            tokio::select! {
                _ = conn => {}
                // Dropping the connection closes the socket with nothing more written.
                () = kill.notified() => {}
                () = cancel.cancelled() => {}
            }
        });
    }
    connections.shutdown().await;
}
