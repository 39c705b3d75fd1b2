//! A simulator of the Prime platform API and the Prime Traces service (axum), faithful enough
//! that the official `prime` CLI works against it. It keeps its own wire types, written from
//! `reference/platform-api.md`, so a naming error cannot hide by being wrong on both sides.

pub mod cli;
