//! Decisions: the secret guard, redaction, path containment, the policy file, plans and
//! digests, budgets, allowlists, confirmation rules and the duplicate decision (pure modules);
//! and, in their own modules, the I/O that must be decided here: the durable journal and the
//! audit log (`store`), race-free reads and writes of the files tools touch (`files`, `upload`),
//! and who may run a config checker with which environment (`checkers`).

pub mod checkers;
mod detect;
pub mod files;
pub mod launch;
pub mod mask;
pub mod paths;
pub mod policy;
pub mod redact;
mod secret;
pub mod secret_guard;
pub mod store;
pub mod untrusted;
pub mod upload;

pub use detect::{is_placeholder, looks_opaque};
pub use mask::mask_key;
pub use paths::{PathError, Workspace};
pub use policy::{ConfirmMode, GuardAction, GuardPolicy, Policy, PolicyError};
pub use redact::{REDACTED, Redactor};
pub use secret_guard::{
    EnvEntry, KnownSecrets, SecretFinding, SecretGuard, SecretKind, name_says_secret,
    parse_env_entry,
};
