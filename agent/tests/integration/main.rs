//! The reference agent's own integration tests, in one binary: the real `a2a-agent` binary on
//! loopback port 0, driven over raw HTTP ([`http`]), by the official Python a2a-sdk client
//! ([`sdk`]) and on its command line ([`cli`]). Waits use `assert_eventually!`, never a fixed
//! sleep or a timing assertion. The gateway in front of this agent is tested in the gateway's
//! suite (`tests/integration/`, e.g. `gateway_ref_agent.rs`).

mod common;

mod cli;
mod http;
mod sdk;
