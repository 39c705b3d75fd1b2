//! The prime-rl config model and its validation rules: pure functions over a TOML document,
//! driven by field tables, with the hosted-run rules of Model Factory on top. No I/O.
//!
//! The entry point is [`validate`]: it parses the TOML, decides the mode as the `prime` CLI
//! does, strips and checks the hosted-only keys, propagates the shared keys, walks the
//! document against the schema tables of [`schema`], applies the cross-field rules, the
//! hosted policy and the platform's practice guidance, and returns a [`Report`].
//! [`account`] turns platform facts (models, GPU types, volumes, the prepare schema commit)
//! into more findings, without doing any I/O itself.

pub mod account;
mod hosted;
mod practices;
mod propagate;
pub mod report;
mod rules;
pub mod schema;
pub mod secrets;
mod validate;
pub mod value;
mod walk;

pub use report::{
    CheckerRun, CheckerStatus, Finding, Gpus, Mode, Report, SCHEMA_COMMIT, Severity, Source,
    Summary,
};
pub use validate::{Options, SyntaxError, parse, schema_input, validate, validate_table};
