//! The data plane: pingora `ProxyHttp` that routes, enforces policy, shapes and downgrades calls (I/O).
//!
//! Pure parts (unit-tested with fixtures): [`route`] (paths and methods), [`body`] (request
//! bodies: facts and byte splices), [`policy`]
//! (allow/deny and the forwarding plan), [`shape`] (upstream headers), [`card`] (the effective
//! card), [`artifact`] (answers against the `artifact_schema`), [`deny`] (refusal rendering), [`events`] (SSE event splitting), [`feedback`] (agent errors, SSE framing). I/O parts:
//! [`gateway`] (the `ProxyHttp` hooks), [`client`] (streaming and downgrade calls), [`retry`] (refresh-and-retry after -32008/-32009), [`upstream`]
//! (the pingora peer of a prepared upstream, TLS fault names), [`limits`] (connection cap, idle and header deadlines).

pub mod artifact;
pub mod body;
pub mod card;
pub mod client;
pub mod deny;
pub mod events;
pub mod feedback;
pub mod gateway;
pub mod limits;
pub mod policy;
pub mod retry;
pub mod route;
pub mod shape;
pub mod upstream;

pub use gateway::Gateway;
