//! The data plane: pingora `ProxyHttp` that routes, enforces policy, shapes and downgrades calls (I/O).

pub mod card;
pub mod deny;
pub mod policy;
pub mod route;
pub mod shape;
pub mod upstream;
