//! The control plane: card fetch, refresh scheduling and the arc-swap profile store (I/O).

pub mod addr;
pub mod extended;
pub mod fetch;
pub mod grpc_call;
pub mod metrics;
pub mod refresh;
pub mod reload;
pub mod schedule;
pub mod state_dir;
