//! The control plane alone, as the `control_*` tests drive it: a [`ControlHandle`] started on a
//! config with a fresh store and metrics registry, fetching cards with the real fetcher (its
//! workers do loopback network I/O).

use std::sync::Arc;

use a2a_egress::config::Config;
use a2a_egress::control::fetch::CardFetcher;
use a2a_egress::control::metrics::ControlMetrics;
use a2a_egress::control::refresh::ControlHandle;
use a2a_egress::state::Store;

/// Starts the control plane for `cfg`: an empty store, metrics on a registry of its own, the
/// real card fetcher, no probe hook.
pub fn start(cfg: Config) -> ControlHandle {
    let metrics = ControlMetrics::register(&prometheus::Registry::new());
    ControlHandle::start(
        cfg,
        Arc::new(Store::default()),
        metrics,
        Arc::new(CardFetcher::new()),
        None,
    )
}
