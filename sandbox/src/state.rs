//! The shared state behind every route: the world (behind a lock, persisted after each change),
//! the clock, the fault rules, the request log and the volumes' S3 store.

use std::path::PathBuf;
use std::sync::Mutex;

use chrono::{DateTime, Utc};

use crate::clock::Clock;
use crate::faults::{Faults, Holds};
use crate::logcache::{LogCache, MetricsCache};
use crate::s3_store::S3State;
use crate::world::World;

/// One request the sandbox received (no bodies, no headers).
#[derive(Debug, Clone, serde::Serialize)]
pub struct RequestRecord {
    pub method: String,
    pub path: String,
    pub query: Option<String>,
}

pub(crate) struct AppState {
    world: Mutex<World>,
    pub(crate) clock: Clock,
    pub(crate) faults: Mutex<Faults>,
    /// Requests held by `hold` fault rules until released.
    pub(crate) holds: Holds,
    pub(crate) requests: Mutex<Vec<RequestRecord>>,
    /// The volumes' S3-compatible endpoint: issued credentials, leases, uploads.
    pub(crate) s3: S3State,
    /// Generated log lines per run (the sandbox's own cost, kept out of the floor).
    pub(crate) logs: LogCache,
    /// Metrics answers kept whole.
    pub(crate) metrics: MetricsCache,
    state_file: Option<PathBuf>,
    pub(crate) token_value: Option<String>,
    pub(crate) base_url: String,
}

impl AppState {
    pub(crate) fn new(
        world: World,
        clock: Clock,
        state_file: Option<PathBuf>,
        token_value: Option<String>,
        base_url: String,
    ) -> Self {
        Self {
            world: Mutex::new(world),
            clock,
            faults: Mutex::new(Faults::default()),
            holds: Holds::default(),
            requests: Mutex::new(Vec::new()),
            s3: S3State::default(),
            logs: LogCache::default(),
            metrics: MetricsCache::default(),
            state_file,
            token_value,
            base_url,
        }
    }

    pub(crate) fn with_world<T>(&self, f: impl FnOnce(&World) -> T) -> T {
        let w = self.world.lock().unwrap_or_else(|e| e.into_inner());
        f(&w)
    }

    /// Changes the world and persists it (when a state file is set).
    pub(crate) fn mutate<T>(&self, f: impl FnOnce(&mut World) -> T) -> T {
        let mut w = self.world.lock().unwrap_or_else(|e| e.into_inner());
        let out = f(&mut w);
        self.save_locked(&mut w);
        out
    }

    fn save_locked(&self, w: &mut World) {
        if let Some(path) = &self.state_file
            && let Err(e) = w.save(path, self.clock.now())
        {
            tracing::warn!("sandbox: {e}");
        }
    }

    pub(crate) fn persist(&self) {
        let mut w = self.world.lock().unwrap_or_else(|e| e.into_inner());
        self.save_locked(&mut w);
    }

    pub(crate) fn now(&self) -> DateTime<Utc> {
        self.clock.now()
    }

    pub(crate) fn log_request(&self, method: &str, path: &str, query: Option<&str>) {
        self.requests
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(RequestRecord {
                method: method.to_string(),
                path: path.to_string(),
                query: query.map(str::to_string),
            });
    }
}
