//! The prime-rl config model and its validation rules: pure functions over a TOML document,
//! driven by field tables, with the hosted-run rules of Model Factory on top. No I/O: the
//! external checkers and the platform calls belong to the tool layer (`factory-tools`).
//!
//! What it owns:
//! - [`validate`] / [`validate_table`]: the native pipeline. It parses the TOML ([`parse`]),
//!   decides the mode as the `prime` CLI does ([`schema_input`]), checks and strips the
//!   hosted-only keys, propagates the shared keys, walks the document against the schema
//!   tables of [`schema`], applies the cross-field rules, the hosted policy and the platform's
//!   practice guidance, and returns a [`Report`].
//! - [`account`]: turns platform facts (models, GPU types, volumes, the prepare schema commit)
//!   into more findings, without doing any I/O itself.
//! - [`secrets::scrub`]: keeps credential-shaped text out of findings worded from elsewhere
//!   (the full secret guard is `factory-policies`'s).
//! - [`schema`]: the schema of prime-rl at [`SCHEMA_COMMIT`] as data.

pub mod account;
mod hosted;
pub mod local_paths;
mod practices;
mod propagate;
mod report;
mod rules;
pub mod schema;
pub mod secrets;
mod validate;
mod value;
mod walk;

pub use report::{
    CheckerRun, CheckerStatus, Finding, Gpus, Mode, Report, SCHEMA_COMMIT, Severity, Source,
    Summary,
};
pub use validate::{Options, SyntaxError, parse, schema_input, validate, validate_table};
