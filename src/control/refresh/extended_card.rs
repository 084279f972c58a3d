//! The extended card step of a refresh (seed 000 "Public card, extended card"): ask with the
//! integration's credential, compile the answer as a whole replacement, keep it per credential
//! identity in memory and on disk (I/O).

use std::time::SystemTime;

use http::HeaderValue;

use super::{Worker, lock};
use crate::config::{Config, Credential};
use crate::control::extended::{CredentialIdentity, ExtendedOutcome, Fallback};
use crate::control::fetch::{FetchPolicy, Validators};
use crate::control::state::SavedCard;
use crate::profile::Profile;
use crate::profile::snapshot::ExtendedCardStatus;
use crate::proxy::upstream::read_secret;

impl Worker {
    /// Replaces the public profile with the extended card's, per seed 000, when the card offers one
    /// and the integration has a bearer credential.
    pub(super) async fn extended(
        &self,
        public: Profile,
        public_json: &serde_json::Value,
        config: &Config,
        policy: &FetchPolicy,
        online: bool,
    ) -> (Profile, serde_json::Value, Option<ExtendedCardStatus>) {
        let keep = |p: Profile| (p, public_json.clone());
        if !(public.usable && public.extended_card) {
            self.inner.extended.remove(self.name());
            if online {
                self.forget_extended();
            }
            let (p, j) = keep(public);
            return (p, j, None);
        }
        let Credential::Bearer(src) = &self.integration.credential else {
            let (p, j) = keep(public);
            return (p, j, None);
        };
        let secret = match read_secret(src) {
            Ok(s) => s,
            Err(e) => {
                tracing::warn!(integration = %self.name(), error = %e, "extended card not requested: the credential is unavailable");
                let (p, j) = keep(public);
                return (p, j, None);
            }
        };
        let Ok(mut auth) = HeaderValue::from_str(&format!("Bearer {secret}")) else {
            let (p, j) = keep(public);
            return (p, j, None);
        };
        auth.set_sensitive(true);
        let id = CredentialIdentity::of(&auth);
        let iface = public
            .interface
            .clone()
            .expect("usable profiles have an interface");
        let tenant = self.integration.tenant.clone().or(iface.tenant.clone());
        let status = |used: bool, fallback: Option<String>| ExtendedCardStatus {
            identity: id.as_str().to_owned(),
            used,
            fallback,
            at: SystemTime::now(),
        };
        let fetched = if online {
            Some(
                self.inner
                    .source
                    .extended(&iface, tenant.as_deref(), &auth, policy)
                    .await,
            )
        } else {
            None
        };
        let bytes = match fetched {
            Some(Ok(ExtendedOutcome::Card(b))) => b,
            Some(Ok(ExtendedOutcome::Fallback(f))) => {
                self.inner.extended.remove(self.name());
                self.forget_extended();
                let why = match f {
                    Fallback::UnsupportedOperation => "unsupported_operation",
                    Fallback::NotConfigured => "not_configured",
                };
                let (p, j) = keep(public);
                return (p, j, Some(status(false, Some(why.into()))));
            }
            Some(Err(e)) => match self.inner.extended.get(self.name(), &id) {
                // A transient failure keeps this identity's last extended card.
                Some(b) => {
                    tracing::warn!(integration = %self.name(), error = %e, "extended card fetch failed; using this credential's cached one");
                    b
                }
                None => {
                    let (p, j) = keep(public);
                    return (p, j, Some(status(false, Some(format!("error: {e}")))));
                }
            },
            None => match self.inner.extended.get(self.name(), &id) {
                Some(b) => b,
                None => {
                    let (p, j) = keep(public);
                    return (p, j, None);
                }
            },
        };
        let origin = url::Url::parse(&iface.url)
            .map(|u| u.origin().ascii_serialization())
            .unwrap_or_default();
        match crate::card::validate(&bytes, &config.card_policy, Some(&origin)) {
            Ok(v) => {
                if online {
                    self.persist_extended(&iface.url, &origin, &id, &bytes);
                }
                self.inner.extended.put(self.name(), id.clone(), bytes);
                let p = crate::profile::compile(&v, &config.caps);
                (p, v.json().clone(), Some(status(true, None)))
            }
            Err(e) => {
                let (p, j) = keep(public);
                let why = format!(
                    "error: extended card failed validation: {}",
                    e.to_string().replace('\n', "; ")
                );
                (p, j, Some(status(false, Some(why))))
            }
        }
    }

    /// The identity of the integration's bearer credential, when it has one that can be read.
    pub(super) fn credential_identity(&self) -> Option<CredentialIdentity> {
        let Credential::Bearer(src) = &self.integration.credential else {
            return None;
        };
        let secret = read_secret(src).ok()?;
        let auth = HeaderValue::from_str(&format!("Bearer {secret}")).ok()?;
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
        match saved.map(|c| dir.save_extended(&c, id.as_str())) {
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
            && let Err(e) = dir.remove_extended(self.name())
        {
            tracing::warn!(integration = %self.name(), error = %e, "cannot remove saved extended cards");
        }
    }
}
