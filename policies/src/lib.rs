//! Decisions: the secret guard, redaction, path containment, the policy file, plans and
//! digests, budgets, allowlists, confirmation rules and the duplicate decision (pure modules);
//! and, in their own modules, the durable journal and the audit log (the only I/O here).
