//! The integrations as the control plane builds them now, for `lock`, `check` and `probe`
//! (I/O: the config file, one refresh of each named integration on a runtime of its own).

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context as _;

use super::{DEFAULT_CONFIG, EXIT_USAGE};
use crate::config::{Config, Integration};
use crate::control::fetch::CardFetcher;
use crate::control::metrics::ControlMetrics;
use crate::control::refresh::ControlHandle;
use crate::state::{IntegrationState, Store};

/// One integration as the control plane built it just now.
pub(super) struct Current {
    pub(super) integration: Arc<Integration>,
    pub(super) state: Option<Arc<IntegrationState>>,
    /// Why the refresh failed, when it did.
    pub(super) failure: Option<String>,
}

pub(super) fn load(path: Option<PathBuf>, names: &[String]) -> Result<Config, ExitCode> {
    let path = path.unwrap_or_else(|| PathBuf::from(DEFAULT_CONFIG));
    let config = Config::load(&path).map_err(|e| super::config_refused(&e))?;
    for n in names {
        if !config.integrations.iter().any(|i| &i.name == n) {
            eprintln!("{}: no integration named {n:?}", path.display());
            return Err(ExitCode::from(EXIT_USAGE));
        }
    }
    Ok(config)
}

/// Refreshes `names` once through the control plane and returns what it built.
pub(super) fn current(config: &Config, names: &[String]) -> anyhow::Result<Vec<Current>> {
    crate::control::fetch::install_crypto_provider();
    let mut config = config.clone();
    config.state_dir = None;
    config.integrations.retain(|i| names.contains(&i.name));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the runtime")?;
    rt.block_on(async {
        let registry = prometheus::Registry::new();
        let metrics = ControlMetrics::register(&registry);
        let store = Arc::new(Store::default());
        let control = ControlHandle::start(
            config.clone(),
            store.clone(),
            metrics,
            Arc::new(CardFetcher::new()),
            None,
        );
        let mut out = Vec::new();
        for i in &config.integrations {
            let failure = match control.refresh_now(&i.name).await {
                Ok(r) => r.reason,
                Err(e) => Some(e.to_string()),
            };
            out.push(Current {
                integration: Arc::new(i.clone()),
                state: store.load().get(&i.name).cloned(),
                failure,
            });
        }
        control.shutdown();
        Ok(out)
    })
}
