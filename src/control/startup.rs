//! The state the gateway serves before the control plane's first refresh of each integration (no I/O).
//!
//! Every integration starts `Pending` (calls are refused with `NO_USABLE_PROFILE` and `/readyz` is
//! false) until its worker in [`crate::control::refresh`] installs a profile, a last-known-good
//! one from disk, or a definite verdict.

use std::sync::Arc;

use crate::config::Config;
use crate::profile::snapshot::{IntegrationState, Snapshot};

/// A snapshot with every configured integration pending (served until the first loads finish).
pub fn pending_snapshot(config: &Config) -> Snapshot {
    Snapshot {
        version: 0,
        integrations: config
            .integrations
            .iter()
            .map(|i| {
                (
                    i.name.clone(),
                    Arc::new(IntegrationState::pending(Arc::new(i.clone()))),
                )
            })
            .collect(),
    }
}
