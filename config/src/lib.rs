//! The prime-rl config model and its validation rules: pure functions over a TOML document,
//! driven by field tables, with the hosted-run rules of Model Factory on top. No I/O.
