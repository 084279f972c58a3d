//! The first load of every integration at start: fetch the card once, validate, compile, prepare
//! the upstream, and install the result in the snapshot store (I/O).
//!
//! A card that cannot be fetched, validated or compiled, or a profile that breaks the
//! integration's contract, leaves that integration unusable with its reason; it never stops the
//! gateway, and the other integrations load independently (concurrently).

use std::sync::Arc;

use crate::card;
use crate::config::{Config, Integration};
use crate::control::fetch::{CardFetcher, FetchOutcome, FetchPolicy};
use crate::metrics::Metrics;
use crate::profile::snapshot::{IntegrationState, Snapshot, Store};
use crate::proxy::upstream::Upstream;

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

/// The fetch policy of one integration (its approved origins, the card cap, its CA file).
pub fn fetch_policy(config: &Config, integration: &Integration) -> FetchPolicy {
    // Origins were validated when the config was loaded, so parsing cannot fail here; an origin
    // that somehow does not parse is dropped, which only narrows what may be fetched.
    let origins = integration
        .origins
        .iter()
        .filter_map(|o| crate::control::fetch::ApprovedOrigin::parse(o))
        .collect();
    let mut p = FetchPolicy::new(
        origins,
        config.card_policy.max_card_bytes,
        config.card_policy.allow_plain_http,
    );
    p.ca_file = integration.ca_file.clone();
    p
}

/// Builds the state of an integration from card bytes fetched from `origin` (validate, compile,
/// contract, upstream). Blocking only in [`Upstream::prepare`] (DNS, files), run off the runtime.
pub async fn state_from_card(
    config: &Config,
    integration: Arc<Integration>,
    bytes: &[u8],
    origin: &str,
) -> IntegrationState {
    let validated = match card::validate(bytes, &config.card_policy, Some(origin)) {
        Ok(v) => v,
        Err(e) => {
            return IntegrationState::unusable(
                integration,
                None,
                format!("card failed validation: {e}"),
            );
        }
    };
    let profile = card::compile(&validated, &config.caps);
    let upstream = match profile.interface.as_ref() {
        Some(iface) if profile.usable => {
            let url = iface.url.clone();
            let i = integration.clone();
            tokio::task::spawn_blocking(move || Upstream::prepare(&url, &i))
                .await
                .unwrap_or_else(|e| Err(format!("upstream preparation failed: {e}")))
        }
        _ => Err("no usable interface".into()),
    };
    IntegrationState::from_profile(integration, profile, validated.json(), upstream)
}

/// Fetches and installs one integration.
pub async fn load_integration(
    config: &Config,
    fetcher: &CardFetcher,
    integration: Arc<Integration>,
) -> IntegrationState {
    let policy = fetch_policy(config, &integration);
    match fetcher.fetch(&integration.card, &policy, None).await {
        Ok(FetchOutcome::Fetched { bytes, origin, .. }) => {
            state_from_card(config, integration, &bytes, &origin).await
        }
        Ok(FetchOutcome::NotModified { .. }) => IntegrationState::unusable(
            integration,
            None,
            "card fetch answered 304 to an unconditional request",
        ),
        Err(e) => IntegrationState::unusable(integration, None, format!("card fetch failed: {e}")),
    }
}

/// Loads every integration once, concurrently, installing each result as soon as it is ready.
pub async fn load_all(config: &Config, fetcher: &CardFetcher, store: &Store, metrics: &Metrics) {
    let tasks = config.integrations.iter().map(|i| {
        let integration = Arc::new(i.clone());
        async move {
            let state = load_integration(config, fetcher, integration).await;
            match &state.status {
                crate::profile::snapshot::Status::Usable => {
                    tracing::info!(integration = %state.integration.name, "profile usable")
                }
                s => tracing::warn!(integration = %state.integration.name, status = ?s, "integration not usable"),
            }
            store.rcu(|cur| cur.with(state.clone()));
            metrics.observe_snapshot(&store.load());
        }
    });
    futures::future::join_all(tasks).await;
}
