//! Every HTTP call to the Prime platform API and the Prime Traces service: wire types exactly
//! as on the wire, credential and team resolution as the `prime` CLI 0.18.0 does it, and error
//! mapping. Nothing else in the workspace speaks HTTP to the platform.
