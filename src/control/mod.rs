//! The control plane: card fetch, refresh scheduling and the arc-swap profile store (I/O).

pub mod fetch;
pub mod startup;
