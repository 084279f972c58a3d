//! a2a-egress: an egress sidecar for the A2A (Agent2Agent) protocol 1.0.
//!
//! An orchestrator points its A2A traffic at the gateway on localhost. The gateway fetches and
//! validates each remote Agent Card, compiles it into an immutable [`profile::Profile`], and then
//! enforces, shapes and (when needed) downgrades every call from that one profile.
//!
//! The reference agent the README's quick start runs behind the gateway is its own crate
//! (`agent/`, `a2a-agent`), which uses this library; nothing here uses it.
//!
//! Components, top to bottom (a module uses only those below it; `scripts/check-layers.sh`):
//! - [`cli`]: the `a2a-egress` command line.
//! - [`server`]: the gateway core, `run(config, listeners, shutdown)` over bound sockets.
//! - [`admin`]: the admin listener (health, readiness, metrics, forced refresh, planner API).
//! - [`select`]: which integration can take a planner's need, with reasons for every candidate (pure).
//! - [`proxy`]: the pingora data plane.
//! - [`control`]: card fetch, refresh, reload and last-known-good state (I/O).
//! - [`probe`]: safe probes that verify card claims (pure plan and judgement; calls through a given transport).
//! - [`metrics`]: the one `Metrics` struct.
//! - [`telemetry`]: OpenTelemetry spans of the data plane's calls and their OTLP export.
//! - [`state`]: the runtime state every request reads (snapshots, the stale channel, prepared upstreams).
//! - [`config`]: the TOML configuration (`config/gateway.toml`) and its validation.
//! - [`lock`]: capability lockfiles, profile diffs and their classification (pure, besides the lockfile's own read/write).
//! - [`profile`]: the compiled profile and the pure compiler.
//! - [`guard`]: content guardrails: detectors, per-integration policy, request scan and redaction (pure).
//! - [`card`]: the Agent Card wire model, strict validation and JWS signatures.
//! - [`json`]: strict JSON reading shared by cards and requests (duplicate keys, safe paths).
//! - [`types`]: shared value types (origin, protocol version, duration, data class, error bodies), the leaf.
//!
//! With the `testkit` feature (and in unit tests), `testkit` holds the builders and hostile-input
//! generators every test uses; it is in no layer and not in the shipped binary.
#![forbid(unsafe_code)]

pub mod admin;
pub mod card;
pub mod cli;
pub mod config;
pub mod control;
pub mod guard;
pub mod json;
pub mod lock;
pub mod metrics;
pub mod probe;
pub mod profile;
pub mod proxy;
pub mod seam;
pub mod select;
pub mod server;
pub mod state;
pub mod telemetry;
#[cfg(any(test, feature = "testkit"))]
pub mod testkit;
pub mod translate;
pub mod types;
