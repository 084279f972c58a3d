//! All integration tests in one binary (one link of pingora instead of one per file): real peers
//! (the official Python SDK agents, the bundled reference agent) on loopback port 0, driven over real
//! sockets. Each module is one area; `common` is the shared harness.
//!
//! The gateway runs in this process (`common::gateway::InProcess`, the library's `server::run` on
//! port-0 listeners) unless a test needs a process boundary: signals, environment variables such
//! as credentials or `HTTP_PROXY`, the log on stderr, exit codes, or the process's own memory; those
//! start the binary (`common::gateway::GatewayProc`). Waits use `assert_eventually!`, never a
//! fixed sleep or a timing assertion.

mod common;

mod admin_auth;
mod agent_cards_validate;
mod card_fixtures;
mod card_hostile;
mod card_props;
mod card_signature;
mod card_warnings;
mod cli_card;
mod cli_guard;
mod cli_lock;
mod config_cli;
mod control_admin;
mod control_agent;
mod control_fetch;
mod control_gateway;
mod control_lkg;
mod control_reload;
mod control_scheduler;
mod deploy_boundary;
mod deploy_kit;
mod faults;
mod fuzz_corpus;
mod gateway_answers;
mod gateway_artifacts;
mod gateway_card;
mod gateway_deadlines;
mod gateway_encoding;
mod gateway_guard;
mod gateway_headers;
mod gateway_hostile_requests;
mod gateway_limits;
mod gateway_policy;
mod gateway_pool;
mod gateway_proxy_env;
mod gateway_ref_agent;
mod gateway_retry;
mod gateway_runtime;
mod gateway_shaping;
mod gateway_shutdown;
mod gateway_signing;
mod gateway_streaming;
mod gateway_tls;
mod lock_runtime;
mod observability;
mod peers_binding;
mod peers_grpc;
mod peers_grpc03;
mod peers_js03;
mod peers_smoke;
mod peers_v03;
mod peers_v03_rest;
mod planner;
mod probe_agent;
mod probe_gateway;
mod probe_v03;
mod reliability_doc;
mod request_props;
mod sdk_fixtures;
mod security;
mod telemetry;
mod wire_fixtures;
