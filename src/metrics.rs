//! The one `Metrics` struct: a Prometheus registry and every metric the gateway exports (no I/O).
