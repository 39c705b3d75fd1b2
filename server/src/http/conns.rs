//! The connection table behind the accept loop: at most `cap` connections, each either *busy*
//! (a request in progress) or *idle* (waiting for a request's headers: a new connection, a
//! keep-alive one between requests, or a half-sent header). Past the cap the connection idle
//! the longest is closed to admit the new one, so a flood of half-open connections cannot keep
//! a client with a valid token out; when every connection is busy a new one is refused.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use tokio_util::sync::CancellationToken;

#[derive(Debug)]
struct Entry {
    in_flight: u32,
    idle_since: Instant,
    close: CancellationToken,
}

#[derive(Debug, Default)]
struct Inner {
    next_id: u64,
    conns: HashMap<u64, Entry>,
}

/// Every open connection of one server.
#[derive(Debug, Clone)]
pub struct ConnTable {
    inner: Arc<Mutex<Inner>>,
    cap: usize,
}

/// Every connection is busy: the new one is refused.
#[derive(Debug, PartialEq, Eq)]
pub struct AllBusy;

impl ConnTable {
    pub fn new(cap: usize) -> Self {
        ConnTable {
            inner: Arc::default(),
            cap: cap.max(1),
        }
    }

    pub fn cap(&self) -> usize {
        self.cap
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // Plain counters: a panic elsewhere cannot leave them inconsistent.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Open connections.
    pub fn len(&self) -> usize {
        self.lock().conns.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Admit a new connection, closing the oldest idle one when at the cap.
    pub fn admit(&self) -> Result<Conn, AllBusy> {
        let mut inner = self.lock();
        if inner.conns.len() >= self.cap && !evict_oldest_idle(&mut inner) {
            return Err(AllBusy);
        }
        inner.next_id += 1;
        let id = inner.next_id;
        let close = CancellationToken::new();
        inner.conns.insert(
            id,
            Entry {
                in_flight: 0,
                idle_since: Instant::now(),
                close: close.clone(),
            },
        );
        Ok(Conn {
            table: self.clone(),
            id,
            close,
        })
    }

    /// Close the connection idle the longest (when the process runs out of file descriptors).
    pub fn evict_oldest_idle(&self) -> bool {
        evict_oldest_idle(&mut self.lock())
    }
}

fn evict_oldest_idle(inner: &mut Inner) -> bool {
    let victim = inner
        .conns
        .iter()
        .filter(|(_, e)| e.in_flight == 0)
        .min_by_key(|(_, e)| e.idle_since)
        .map(|(id, _)| *id);
    match victim.and_then(|id| inner.conns.remove(&id)) {
        Some(entry) => {
            entry.close.cancel();
            true
        }
        None => false,
    }
}

/// One admitted connection; dropping it removes it from the table.
#[derive(Debug)]
pub struct Conn {
    table: ConnTable,
    id: u64,
    close: CancellationToken,
}

impl Conn {
    /// Cancelled when the table evicts this connection.
    pub fn evicted(&self) -> CancellationToken {
        self.close.clone()
    }

    /// A handle for marking requests on this connection.
    pub fn requests(&self) -> Requests {
        Requests {
            table: self.table.clone(),
            id: self.id,
        }
    }
}

impl Drop for Conn {
    fn drop(&mut self) {
        self.table.lock().conns.remove(&self.id);
    }
}

/// Marks requests of one connection as in progress.
#[derive(Debug, Clone)]
pub struct Requests {
    table: ConnTable,
    id: u64,
}

impl Requests {
    /// The connection is busy until the returned guard drops (when the answer has been sent).
    pub fn begin(&self) -> Busy {
        if let Some(e) = self.table.lock().conns.get_mut(&self.id) {
            e.in_flight += 1;
        }
        Busy {
            requests: self.clone(),
        }
    }
}

/// A request in progress.
#[derive(Debug)]
pub struct Busy {
    requests: Requests,
}

impl Drop for Busy {
    fn drop(&mut self) {
        if let Some(e) = self.requests.table.lock().conns.get_mut(&self.requests.id) {
            e.in_flight = e.in_flight.saturating_sub(1);
            e.idle_since = Instant::now();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn past_the_cap_the_oldest_idle_connection_is_closed() {
        let table = ConnTable::new(2);
        let a = table.admit().unwrap();
        let b = table.admit().unwrap();
        let busy_a = a.requests().begin();
        // a is busy, b is idle: the third connection closes b.
        let c = table.admit().unwrap();
        assert!(b.evicted().is_cancelled());
        assert!(!a.evicted().is_cancelled());
        assert_eq!(table.len(), 2);
        // a and c busy: a fourth is refused.
        let _busy_c = c.requests().begin();
        assert_eq!(table.admit().unwrap_err(), AllBusy);
        // a finishes: it becomes the oldest idle one and gives way.
        drop(busy_a);
        let _d = table.admit().unwrap();
        assert!(a.evicted().is_cancelled());
        drop(b);
        assert_eq!(table.len(), 2);
    }
}
