//! The admin listener: health, readiness, Prometheus metrics and the planner API (I/O).
