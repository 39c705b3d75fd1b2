//! A simulator of the Prime platform API and the Prime Traces service (axum), faithful enough
//! that the official `prime` CLI works against it. It keeps its own wire types, written from
//! `reference/platform-api.md`, so a naming error cannot hide by being wrong on both sides.
//!
//! Start it in-process with [`Sandbox::start`]; run it alone with `factory-mcp sandbox`
//! ([`cli`]). What lives where (each module depends only on those above it):
//!
//! | module | owns |
//! |---|---|
//! | `error` | [`SandboxError`] |
//! | `clock` | simulated time (real × speed, or manual) |
//! | `wire` | the platform's and the traces service's JSON shapes |
//! | `seed` | users, keys, teams, models, GPU types: the [`Seed`] and its file format |
//! | `world` | the mutable world: runs, volumes, counters; the state file |
//! | `sim` | what a run looks like at an instant: status, logs, metrics, samples, usage |
//! | `logcache` | generated log lines (and answers) kept per run, reused only for an equal run and phase |
//! | `outputs` | what a run writes: checkpoints and the files on its volume |
//! | `tracegen` | the traces a run produces |
//! | `builder` | run and volume records from requests and seeds; the first world |
//! | `faults`, `s3_store` | fault rules; the S3 endpoint's credentials, leases and uploads |
//! | `state` | what every route shares (world lock, clock, faults, request log, S3 store) |
//! | `http` | answers in the platform's shapes; auth, team checks, parsing |
//! | `s3` | the volumes' S3-compatible endpoint and the transfer route |
//! | `api` | the router: platform, traces and `/_sandbox/` control routes, fault layer |
//! | `server` | the accept loop (a fault may drop a connection unanswered) |
//! | `handle` | [`Sandbox::start`] and the [`SandboxHandle`] tests drive |

mod api;
mod builder;
pub mod cli;
mod clock;
mod error;
mod faults;
mod handle;
mod http;
mod logcache;
mod outputs;
mod s3;
mod s3_store;
mod seed;
mod server;
mod sim;
mod state;
mod tracegen;
mod wire;
mod world;

pub use clock::ClockMode;
pub use error::SandboxError;
pub use faults::{FaultEffect, FaultMatch, FaultRule};
pub use handle::{Sandbox, SandboxHandle, SandboxOptions, SeedSource, UserInfo};
pub use s3_store::IssuedCredential;
pub use seed::{
    ALICE_API_KEY, ALICE_USER_ID, BOB_API_KEY, BOB_USER_ID, CAROL_API_KEY, CAROL_USER_ID,
    DAVE_API_KEY, DAVE_USER_ID, GAMMA_CLUSTER_ID, GAMMA_VOLUME_MODEL, GAMMA_WEIGHTS_VOLUME,
    GATED_HUB_MODEL, HUB_MODEL, RESERVED_GPU_TYPE, Seed, SeedCluster, SeedGpu, SeedHubModel,
    SeedMember, SeedModel, SeedReservedCluster, SeedRun, SeedTeam, SeedUser, SeedVolume,
    TEAM_ALPHA_ID, TEAM_BETA_ID, TEAM_GAMMA_ID, Timings,
};
pub use state::RequestRecord;
