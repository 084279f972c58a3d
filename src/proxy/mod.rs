//! The data plane: pingora `ProxyHttp` that routes, enforces policy, shapes and downgrades calls (I/O).

pub mod upstream;
