//! The data plane: pingora `ProxyHttp` that routes, enforces policy, shapes and downgrades calls (I/O).
//!
//! [`access`] writes the access line (directly, in the log formatter's form) and [`log_sink`]
//! takes every log line off the request path (a bounded queue and a writer thread).
//! Pure parts (unit-tested with fixtures): [`route`] (paths and methods), [`body`] (request
//! bodies: facts and byte splices), [`policy`]
//! (allow/deny and the forwarding plan), [`shape`] (upstream headers), [`trace`] (request id and
//! trace context), [`card`] (the effective card), [`card_signer`] (the gateway's signature on it and its JWK
//! Set), [`artifact`] (answers against the
//! `artifact_schema`), [`deny`] (refusal rendering), [`feedback`]
//! (agent errors, SSE framing), [`answer`] (whether an agent's answer is A2A; decoding an
//! unasked-for gzip/deflate), [`headers`] (the one allowlist of headers crossing either way). I/O parts:
//! [`gateway`] (the `ProxyHttp` hooks), [`client`] (streaming and downgrade calls), [`retry`]
//! (refresh-and-retry after -32008/-32009), [`call`] (what those three share: the [`Gateway`], a
//! request's context and outcome), [`upstream`]
//! (the pingora peer of a prepared upstream, TLS fault names), [`limits`] (connection cap, idle and header deadlines),
//! [`keep_warm`] (a thread that keeps the CPU from halting while calls are in flight).

pub mod access;
pub mod answer;
pub mod artifact;
pub mod body;
pub mod call;
pub mod card;
pub mod card_signer;
pub mod client;
pub mod deny;
pub mod feedback;
pub mod gateway;
pub mod headers;
pub mod keep_warm;
pub mod limits;
pub mod log_sink;
pub mod policy;
pub mod retry;
pub mod route;
pub mod shape;
pub mod trace;
pub mod upstream;

pub use call::Gateway;
