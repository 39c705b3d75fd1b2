//! Every HTTP call to the Prime platform API and the Prime Traces service: wire types exactly
//! as on the wire, credential and team resolution as the `prime` CLI 0.18.0 does it, and error
//! mapping. Nothing else in the workspace speaks HTTP to the platform.
//!
//! Entry points: [`credentials::resolve_from_process_env`] (or [`credentials::resolve`]) gives
//! [`PlatformSettings`]; [`PlatformClient::new`] gives the client; its methods are one per
//! endpoint (account, runs, volumes) plus [`PlatformClient::traces`] for the traces service.
//! Every failure is a [`PlatformError`].

#![warn(missing_docs)]

pub mod account;
pub mod client;
pub mod credentials;
pub mod error;
mod http;
pub mod runs;
pub mod settings;
pub mod traces;
pub mod transfer;
pub mod volumes;
pub mod wire;

pub use client::{PlatformClient, TeamScope, ensure_tls_provider};
pub use credentials::{CredentialsError, resolve, resolve_from_process_env};
pub use error::{FieldError, PlatformError};
pub use http::{TEAM_HEADER, USER_AGENT};
pub use runs::{
    DistributionsQuery, ListRunsQuery, LogComponent, LogsQuery, MetricsQuery, PrepareOutcome,
    RunScan, SCAN_PAGE, SamplesQuery,
};
pub use settings::{ActiveTeam, PlatformSettings, RetryPolicy, SettingSource, Timeouts};
pub use traces::{EpisodesQuery, TraceRunsQuery, TraceSort, TracesClient, TracesQuery};
pub use volumes::{EnsureVolume, EnsureVolumeOutcome};
