//! Decisions: the secret guard, redaction, path containment, the policy file, plans and
//! digests, budgets, allowlists, confirmation rules and the duplicate decision (pure modules);
//! and, in their own modules, the durable journal and the audit log (the only I/O here).

mod detect;
pub mod launch;
pub mod mask;
pub mod paths;
pub mod policy;
pub mod redact;
mod secret;
pub mod secret_guard;
pub mod store;

pub use detect::{is_placeholder, looks_opaque};
pub use mask::mask_key;
pub use paths::{PathError, Workspace};
pub use policy::{ConfirmMode, GuardAction, GuardPolicy, Policy, PolicyError};
pub use redact::{REDACTED, Redactor};
pub use secret_guard::{
    EnvEntry, KnownSecrets, SecretFinding, SecretGuard, SecretKind, name_says_secret,
    parse_env_entry,
};
