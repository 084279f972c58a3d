//! The bundled reference A2A 1.0 agent, generated from one capability registry (I/O).
//!
//! One TOML registry ([`registry`]) of capability manifests is the single source of four
//! projections ([`project`]): the public card, each principal's extended card, the router index
//! ([`router`]) and the execution policy the built-in handlers ([`handlers`]) re-check. The
//! protocol is served over both HTTP bindings ([`jsonrpc`], [`rest`], streaming via [`sse`]) by
//! [`server`], on top of binding-independent operations ([`service`]) and a bounded in-memory task
//! store ([`tasks`]). Every error is the protocol's own, with its ErrorInfo reason ([`errors`]).
//!
//! Run it with `a2a-agent --registry config/agent/registry.toml [--listen 127.0.0.1:0]`.
//!
//! Its own crate beside the gateway (`a2a-egress`): what both need (canonical JSON digests, the
//! binding and protocol version types) comes from the gateway's library, which never depends on
//! this crate, so the gateway binary holds no agent code.
#![forbid(unsafe_code)]

pub mod errors;
pub mod handlers;
pub mod jsonrpc;
pub mod params;
pub mod project;
pub mod registry;
pub mod rest;
pub mod router;
pub mod server;
pub mod service;
pub mod sse;
pub mod tasks;

use std::net::SocketAddr;
use std::path::Path;

/// Errors of `--print-card`.
#[derive(Debug, thiserror::Error)]
pub enum PrintCardError {
    /// The registry is unreadable or invalid.
    #[error(transparent)]
    Registry(#[from] registry::RegistryError),
    /// The card could not be generated.
    #[error(transparent)]
    Project(#[from] project::ProjectError),
    /// The selector is neither `public` nor `extended:<principal>`.
    #[error("--print-card takes \"public\" or \"extended:<principal>\", not {0:?}")]
    Selector(String),
    /// No principal of that name has a usable token.
    #[error("no principal {0:?} with a usable token (is its token variable set?)")]
    UnknownPrincipal(String),
}

/// The projection `which` (`public` or `extended:<principal>`) as pretty JSON with sorted keys,
/// interface URLs built on the registry's `public_url` or `http://<listen>`. For CI diffs of the
/// public card against the last release.
pub fn print_card(path: &Path, listen: SocketAddr, which: &str) -> Result<String, PrintCardError> {
    let reg = registry::load(path)?;
    let base = server::base_url(&reg, listen);
    let card = match which.split_once(':') {
        None if which == "public" => project::public_card(&reg, &base)?,
        Some(("extended", name)) => {
            let p = reg
                .principals
                .by_name(name)
                .ok_or_else(|| PrintCardError::UnknownPrincipal(name.to_string()))?;
            project::extended_card(&reg, &base, p)?
        }
        _ => return Err(PrintCardError::Selector(which.to_string())),
    };
    Ok(serde_json::to_string_pretty(&card.json).unwrap_or_default())
}
