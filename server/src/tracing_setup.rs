//! Tracing to stderr only, through a layer that redacts every event.
