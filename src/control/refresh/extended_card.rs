//! The extended card step of a refresh: ask with the integration's credential, compile the answer
//! as a whole replacement of the public card, keep it per credential identity in memory and on
//! disk (I/O).

use std::sync::Arc;
use std::time::SystemTime;

use bytes::Bytes;
use http::HeaderValue;

use super::{Worker, lock};
use crate::config::{Config, SecretError};
use crate::control::extended::{CredentialIdentity, ExtendedOutcome};
use crate::control::fetch::{FetchPolicy, Validators};
use crate::control::state_dir::SavedCard;
use crate::profile::{Interface, Profile};
use crate::state::{ExtendedCardStatus, ExtendedFallback};
use crate::types::origin_of_url;

impl Worker {
    /// Replaces the public profile with the extended card's (A2A specification, "Extended Agent
    /// Card": the extended card replaces the public one as a whole) when the card offers one and
    /// the integration has a bearer credential.
    pub(super) async fn extended(
        &self,
        public: Profile,
        config: &Arc<Config>,
        policy: &FetchPolicy,
        online: bool,
    ) -> (Profile, Option<ExtendedCardStatus>) {
        let Some((iface, auth)) = self.extended_request(&public, online) else {
            return (public, None);
        };
        let id = CredentialIdentity::of(&auth);
        let status = |fallback: Option<ExtendedFallback>| ExtendedCardStatus {
            identity: id.as_str().to_owned(),
            used: fallback.is_none(),
            fallback,
            at: SystemTime::now(),
        };
        let bytes = match self
            .extended_bytes(&iface, &auth, &id, policy, online)
            .await
        {
            Ok(b) => b,
            Err(fallback) => return (public, fallback.map(|f| status(Some(f)))),
        };
        let origin = origin_of_url(&iface.url).unwrap_or_default();
        match super::compile::validate_and_compile(bytes.clone(), origin.clone(), config).await {
            Ok(p) => {
                if online {
                    self.persist_extended(&iface.url, &origin, &id, &bytes);
                }
                self.inner.extended.put(self.name(), id.clone(), bytes);
                (p, Some(status(None)))
            }
            Err(e) => {
                let why = format!(
                    "extended card failed validation: {}",
                    e.to_string().replace('\n', "; ")
                );
                let fallback = ExtendedFallback::Error(why);
                (public, Some(status(Some(fallback))))
            }
        }
    }

    /// The interface and `Authorization` to ask for the extended card with, or `None` when it is
    /// not asked for: the profile offers none (then a kept one is forgotten), the integration has
    /// no bearer credential, or its secret cannot be read.
    fn extended_request(&self, public: &Profile, online: bool) -> Option<(Interface, HeaderValue)> {
        let offered = public.is_usable() && public.extended_card;
        let Some(iface) = public.interface.clone().filter(|_| offered) else {
            self.inner.extended.remove(self.name());
            if online {
                self.forget_extended();
            }
            return None;
        };
        match self.bearer_authorization() {
            Ok(auth) => auth.map(|a| (iface, a)),
            Err(e) => {
                tracing::warn!(integration = %self.name(), kind = e.kind(), error = %e, "extended card not requested: the credential is unavailable");
                None
            }
        }
    }

    /// The extended card's bytes: fetched when online, else this identity's cached copy. `Err`
    /// keeps the public card, with the fallback to record (`None`: nothing to record).
    async fn extended_bytes(
        &self,
        iface: &Interface,
        auth: &HeaderValue,
        id: &CredentialIdentity,
        policy: &FetchPolicy,
        online: bool,
    ) -> Result<Bytes, Option<ExtendedFallback>> {
        let cached = || self.inner.extended.get(self.name(), id);
        if !online {
            return cached().ok_or(None);
        }
        let tenant = self
            .integration
            .tenant
            .as_deref()
            .or(iface.tenant.as_deref());
        match self
            .inner
            .source
            .extended(iface, tenant, auth, policy)
            .await
        {
            Ok(ExtendedOutcome::Card(b)) => Ok(b),
            Ok(ExtendedOutcome::Fallback(f)) => {
                self.inner.extended.remove(self.name());
                self.forget_extended();
                Err(Some(f.into()))
            }
            // A transient failure keeps this identity's last extended card.
            Err(e) => match cached() {
                Some(b) => {
                    tracing::warn!(integration = %self.name(), error = %e, "extended card fetch failed; using this credential's cached one");
                    Ok(b)
                }
                None => Err(Some(ExtendedFallback::Error(e.to_string()))),
            },
        }
    }

    /// `Authorization: Bearer <secret>` of the integration's bearer credential, built as its
    /// calls build it; `Ok(None)` without one.
    pub(super) fn bearer_authorization(&self) -> Result<Option<HeaderValue>, SecretError> {
        // A credential file is read anew each time (a rotation applies at the next refresh):
        // off the data plane's threads.
        crate::types::file::blocking(|| {
            crate::config::bearer_authorization(&self.integration.credential)
        })
    }

    /// The identity of the integration's bearer credential, when it has one that can be read.
    pub(super) fn credential_identity(&self) -> Option<CredentialIdentity> {
        let auth = self.bearer_authorization().ok()??;
        Some(CredentialIdentity::of(&auth))
    }

    fn persist_extended(&self, url: &str, origin: &str, id: &CredentialIdentity, bytes: &[u8]) {
        let Some(dir) = lock(&self.inner.state_dir).clone() else {
            return;
        };
        let saved = SavedCard::new(
            self.name(),
            url,
            origin,
            SystemTime::now(),
            Validators::default(),
            None,
            bytes,
        );
        match saved.map(|c| crate::types::file::blocking(|| dir.save_extended(&c, id.as_str()))) {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                tracing::warn!(integration = %self.name(), error = %e, "cannot persist the extended card")
            }
            Err(e) => {
                tracing::warn!(integration = %self.name(), error = %e, "extended card is not UTF-8; not persisted")
            }
        }
    }

    fn forget_extended(&self) {
        if let Some(dir) = lock(&self.inner.state_dir).clone()
            && let Err(e) = crate::types::file::blocking(|| dir.remove_extended(self.name()))
        {
            tracing::warn!(integration = %self.name(), error = %e, "cannot remove saved extended cards");
        }
    }
}
