//! a2a-egress: an egress sidecar for the A2A (Agent2Agent) protocol 1.0.
//!
//! An orchestrator points its A2A traffic at the gateway on localhost. The gateway fetches and
//! validates each remote Agent Card, compiles it into an immutable [`profile::Profile`], and then
//! enforces, shapes and (when needed) downgrades every call from that one profile.
//!
//! Components, by folder:
//! - [`card`]: the Agent Card wire model, strict validation, JWS signatures, and the pure compiler.
//! - [`profile`]: the compiled profile and the snapshot every request reads.
//! - [`json`]: strict JSON reading shared by cards and requests (duplicate keys, safe paths).
//! - [`config`]: the TOML configuration (`config/gateway.toml`) and its validation.
//! - [`control`]: card fetch, refresh and the arc-swap store (I/O).
//! - [`lock`]: capability lockfiles, profile diffs and their classification (pure, besides the lockfile's own read/write).
//! - [`probe`]: safe probes that verify card claims (pure plan and judgement; calls through a given transport).
//! - [`proxy`]: the pingora data plane.
//! - [`admin`]: the admin listener (health, readiness, metrics, planner API).
//! - [`agent`]: the bundled reference A2A agent.
//! - [`server`]: the gateway core, `run(config, listeners, shutdown)` over bound sockets.
//! - [`cli`]: the `a2a-egress` command line.
//! - [`metrics`]: the one `Metrics` struct.
//! - [`types`]: shared value types (origin, protocol version, duration, data class), the leaf.
#![forbid(unsafe_code)]

pub mod admin;
pub mod agent;
pub mod card;
pub mod cli;
pub mod config;
pub mod control;
pub mod json;
pub mod lock;
pub mod metrics;
pub mod probe;
pub mod profile;
pub mod proxy;
pub mod server;
pub mod types;
