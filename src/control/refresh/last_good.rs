//! Last-known-good at the worker level: load the saved card at start (served marked
//! unrevalidated) and save every good card after a fetch (file I/O through `control::state_dir`; the
//! saved files are read on a blocking thread).

use std::time::Duration;

use bytes::Bytes;

use super::step::{BuildError, CachedCard};
use super::{RefreshError, Worker, fetch_policy, lock};
use crate::control::state_dir::{SavedCard, StateError};

impl Worker {
    /// Loads and installs the last-known-good card, marked unrevalidated.
    pub(super) async fn load_last_known_good(&mut self) {
        let Some(dir) = lock(&self.inner.state_dir).clone() else {
            return;
        };
        // Up to `MAX_STATE_FILE_BYTES` read: on a blocking thread, not the runtime's.
        let (d, name) = (dir.clone(), self.name().to_owned());
        let Ok(loaded) = tokio::task::spawn_blocking(move || d.load(&name)).await else {
            return;
        };
        let saved = match loaded {
            Ok(Some(s)) => s,
            Ok(None) => return,
            Err(e @ StateError::Corrupt { .. }) | Err(e @ StateError::Io { .. }) => {
                tracing::warn!(integration = %self.name(), error = %e, "ignoring last-known-good state file");
                return;
            }
        };
        if saved.url != self.integration.card && !self.integration.origin_allowed(&saved.url) {
            tracing::warn!(integration = %self.name(), "last-known-good card is from another source; ignored");
            return;
        }
        let card = CachedCard {
            bytes: Bytes::from(saved.card.clone().into_bytes()),
            validators: saved.validators.clone(),
            origin: saved.origin.clone(),
            url: saved.url.clone(),
            max_age: saved.max_age.map(Duration::from_secs),
            fetched_at: saved.fetched_at(),
        };
        // This credential's extended card, if one was saved, so partner-only skills survive too.
        if let Some(id) = self.credential_identity() {
            let (d, name, key) = (dir.clone(), self.name().to_owned(), id.as_str().to_owned());
            let loaded = tokio::task::spawn_blocking(move || d.load_extended(&name, &key)).await;
            match loaded.unwrap_or(Ok(None)) {
                Ok(Some(ext)) => {
                    self.inner
                        .extended
                        .put(self.name(), id, Bytes::from(ext.card.into_bytes()));
                }
                Ok(None) => {}
                Err(e) => {
                    tracing::warn!(integration = %self.name(), error = %e, "ignoring the saved extended card")
                }
            }
        }
        let config = self.inner.config.load_full();
        let Ok(policy) = fetch_policy(&self.integration, &config) else {
            return;
        };
        match self.build(&card, &config, &policy, false).await {
            Ok(state) => {
                let mut state = self.judge(state);
                state.freshness.unrevalidated = true;
                state.freshness.validated_at = Some(card.fetched_at);
                let name = self.name().to_owned();
                self.inner.store.rcu(|cur| match cur.get(&name) {
                    Some(_) => cur.with(state.clone()),
                    None => cur.clone(),
                });
                self.inner.metrics.swaps.with_label_values(&[&name]).inc();
                self.inner.metrics.ages.set(&name, card.fetched_at);
                tracing::info!(integration = %name, "serving the last-known-good card until it is revalidated");
                self.card = Some(card);
                self.from_disk = true;
            }
            Err(BuildError::Card(e)) => {
                let reason = RefreshError::InvalidCard(e);
                tracing::warn!(integration = %self.name(), %reason, "last-known-good card no longer validates; ignored");
            }
            // The first refresh, which follows at once, says so; the card is kept for its 304.
            Err(BuildError::CredentialMissing(_)) => {
                self.card = Some(card);
                self.from_disk = true;
            }
        }
    }

    pub(super) fn persist(&self) {
        let Some(dir) = lock(&self.inner.state_dir).clone() else {
            return;
        };
        let Some(c) = &self.card else { return };
        match SavedCard::new(
            self.name(),
            &c.url,
            &c.origin,
            c.fetched_at,
            c.validators.clone(),
            c.max_age,
            &c.bytes,
        ) {
            // Written, fsynced and renamed after every refresh: off the data plane's threads.
            Ok(saved) => match crate::types::file::blocking(|| dir.save(&saved)) {
                Ok(()) => *lock(&self.inner.state_problem) = None,
                Err(e) => {
                    tracing::warn!(integration = %self.name(), error = %e, "cannot persist the last-known-good card");
                    self.inner.metrics.state_write_failures.inc();
                    *lock(&self.inner.state_problem) =
                        Some(format!("last-known-good cards cannot be saved: {e}"));
                }
            },
            Err(e) => {
                tracing::warn!(integration = %self.name(), error = %e, "card is not UTF-8; not persisted")
            }
        }
    }
}
