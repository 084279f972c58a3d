//! The control plane: card fetch, refresh scheduling and the arc-swap profile store (I/O).

pub mod extended;
pub mod fetch;
pub mod schedule;
pub mod state;
pub mod metrics;
