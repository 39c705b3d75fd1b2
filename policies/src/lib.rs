//! Every allow/deny/which-path decision, as pure functions over typed inputs: the secret
//! guard, redaction, path containment, the policy file (`policy`), digests, prices and budgets
//! (`launch`), capacity and the cached-model rule (`capacity`), duplicates and repeated failures (`duplicates`), what the assistant may
//! override (`overrides`), which secrets a run may receive (`forwarding`), who confirms through
//! which channel (`confirmation`), the dispatch settle rules (`dispatch`) and the lifecycle
//! preconditions (`lifecycle`), the watchdog's stall, limit and action decisions (`watchdog`),
//! the character rules of the names a plan carries (`names`), and how the summary a person
//! approves is rendered (`summary`, over `untrusted`). Plus the state store (`store`: plans, approvals, the dispatch
//! and volume journal, nonces, the audit log), race-free reads and writes of the files tools
//! touch (`files`, `upload`), and who may run a config checker with which environment
//! (`checkers`) — the only I/O here.

pub mod approval_page;
pub mod capacity;
pub mod checkers;
pub mod confirmation;
mod detect;
pub mod dispatch;
pub mod duplicates;
pub mod files;
pub mod forwarding;
pub mod launch;
pub mod lifecycle;
pub mod mask;
pub mod names;
pub mod overrides;
pub mod paths;
pub mod policy;
pub mod redact;
pub mod runs_cache;
pub mod scopes;
mod secret;
pub mod secret_guard;
pub mod store;
pub mod summary;
pub mod untrusted;
pub mod upload;
pub mod watchdog;

pub use detect::{is_placeholder, looks_opaque};
pub use mask::mask_key;
pub use paths::{PathError, Workspace};
pub use policy::{ConfirmMode, GuardAction, GuardPolicy, Policy, PolicyError, ResultsPolicy};
pub use redact::{REDACTED, Redactor};
pub use secret_guard::{
    EnvEntry, KnownSecrets, SecretFinding, SecretGuard, SecretKind, name_says_secret,
    parse_env_entry,
};
