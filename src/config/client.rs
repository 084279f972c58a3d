//! The `[client]` table: what this client implements (bindings, protocol versions, extensions)
//! and how strictly it reads cards (size cap, signatures, plain http, trusted keys). Raw serde
//! model and validation; reads the trusted JWKS files (through the one bounded reader), nothing
//! else.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Deserialize;

use crate::card::signature::TrustedKeys;
use crate::card::{CardPolicy, DEFAULT_MAX_CARD_BYTES};
use crate::profile::{Binding, ClientCaps};
use crate::types::{ProtocolVersion, normalize_origin};

/// Largest accepted `max_card_bytes` (16 MiB).
const MAX_MAX_CARD_BYTES: usize = 16 * 1024 * 1024;

/// The raw `[client]` table: what this client implements and how strictly it reads cards.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawClient {
    /// Bindings the client may choose (`"JSONRPC"`, `"HTTP+JSON"`, `"GRPC"`), default the first two.
    #[serde(default = "default_bindings")]
    pub bindings: Vec<String>,
    /// Protocol versions (`Major.Minor`: `"1.0"`, `"0.3"`), default `["1.0"]`.
    #[serde(default = "default_versions")]
    pub versions: Vec<String>,
    /// Extension URIs the client understands (and may activate).
    #[serde(default)]
    pub extensions: Vec<String>,
    /// Card size cap in bytes (default 262144).
    #[serde(default = "default_max_card_bytes")]
    pub max_card_bytes: usize,
    /// Reject unsigned or wrongly signed cards (default false).
    #[serde(default)]
    pub require_signatures: bool,
    /// Accept `http://` interface and card URLs (default false; for loopback tests and the demo).
    #[serde(default)]
    pub allow_plain_http: bool,
    /// JWKS files trusted for one origin each.
    #[serde(default)]
    pub trusted_keys: Vec<RawTrustedKeys>,
}

/// One `[[client.trusted_keys]]` entry.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawTrustedKeys {
    /// `scheme://host[:port]` whose cards these keys may sign.
    pub origin: String,
    /// Path of a JWKS (RFC 7517) file, relative to the config file's folder.
    pub jwks: PathBuf,
}

fn default_bindings() -> Vec<String> {
    vec!["JSONRPC".into(), "HTTP+JSON".into()]
}
fn default_versions() -> Vec<String> {
    vec!["1.0".into()]
}
fn default_max_card_bytes() -> usize {
    DEFAULT_MAX_CARD_BYTES
}

impl Default for RawClient {
    fn default() -> Self {
        RawClient {
            bindings: default_bindings(),
            versions: default_versions(),
            extensions: Vec::new(),
            max_card_bytes: DEFAULT_MAX_CARD_BYTES,
            require_signatures: false,
            allow_plain_http: false,
            trusted_keys: Vec::new(),
        }
    }
}

/// The validated capabilities of `[client]`, appending one message per problem.
pub(super) fn caps(c: &RawClient, problems: &mut Vec<String>) -> ClientCaps {
    let before = problems.len();
    let mut bindings = Vec::new();
    for b in &c.bindings {
        match Binding::from_wire(b) {
            Some(b) if !bindings.contains(&b) => bindings.push(b),
            Some(_) => {}
            None => problems.push(format!(
                "client.bindings: unsupported binding {b:?} (this client knows \"JSONRPC\", \"HTTP+JSON\" and \"GRPC\")"
            )),
        }
    }
    if bindings.is_empty() && problems.len() == before {
        problems.push("client.bindings: must name at least one binding".into());
    }
    for v in &c.versions {
        if ProtocolVersion::parse(v).is_err() {
            problems.push(format!(
                "client.versions: {v:?} is not a Major.Minor protocol version (e.g. \"1.0\")"
            ));
        }
    }
    if c.versions.is_empty() {
        problems.push("client.versions: must name at least one version".into());
    }
    for e in &c.extensions {
        if url::Url::parse(e).is_err() {
            problems.push(format!("client.extensions: {e:?} is not an absolute URI"));
        }
    }
    let mut extensions = c.extensions.clone();
    extensions.sort();
    extensions.dedup();
    ClientCaps {
        bindings,
        versions: c.versions.clone(),
        extensions,
    }
}

/// The validated card-reading policy of `[client]`, its JWKS files loaded once (a missing or
/// broken one is a config problem, so card validation does no file I/O).
pub(super) fn card_policy(c: &RawClient, base: &Path, problems: &mut Vec<String>) -> CardPolicy {
    if c.max_card_bytes == 0 || c.max_card_bytes > MAX_MAX_CARD_BYTES {
        problems.push(format!(
            "client.max_card_bytes: {} is outside 1..={MAX_MAX_CARD_BYTES}",
            c.max_card_bytes
        ));
    }
    let mut trusted = Vec::new();
    let mut keys = TrustedKeys::default();
    for (i, k) in c.trusted_keys.iter().enumerate() {
        let Some(origin) = normalize_origin(&k.origin) else {
            problems.push(format!(
                "client.trusted_keys[{i}].origin: {:?} is not a scheme://host[:port] origin",
                k.origin
            ));
            continue;
        };
        let file = base.join(&k.jwks);
        match crate::card::signature::read_jwks(&file) {
            Err(e) => problems.push(format!("client.trusted_keys[{i}].jwks: {e}")),
            Ok(text) => {
                if let Err(e) = keys.add_jwks(&origin, &text, &file.display().to_string()) {
                    problems.push(format!("client.trusted_keys[{i}].jwks: {e}"));
                }
            }
        }
        trusted.push((origin, file));
    }
    if c.require_signatures && trusted.is_empty() {
        problems.push(
            "client.require_signatures: true but no [[client.trusted_keys]] are configured".into(),
        );
    }
    CardPolicy {
        max_card_bytes: c.max_card_bytes,
        require_signatures: c.require_signatures,
        allow_plain_http: c.allow_plain_http,
        trusted_keys: trusted,
        keys: Some(Arc::new(keys)),
    }
}
