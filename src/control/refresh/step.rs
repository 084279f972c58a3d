//! One refresh step: a conditional fetch, then validate, compile and install the new state on a
//! 200 (or rebuild on a 304 that needs it), recording success or failure (I/O: the card fetch, DNS
//! for the interface, the upstream's preparation).

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use bytes::Bytes;
use tokio::time::Instant;

use super::{Inner, InterfaceError, RefreshError, RefreshReport, Worker, fetch_policy};
use crate::card::CardErrors;
use crate::config::SecretError;
use crate::config::{Config, Integration};
use crate::control::fetch::{FetchOutcome, FetchPolicy, Validators, check_url};
use crate::control::schedule::{self, Last, RefreshResult};
use crate::state::{Degraded, Freshness, IntegrationState, ReasonCode};
use crate::state::{NoUpstream, Upstream};

/// The last good card of one integration, kept in memory by its worker.
#[derive(Debug, Clone)]
pub(super) struct CachedCard {
    pub(super) bytes: Bytes,
    pub(super) validators: Validators,
    pub(super) origin: String,
    pub(super) url: String,
    pub(super) max_age: Option<Duration>,
    pub(super) fetched_at: SystemTime,
}

/// Records a failed refresh (or a worker panic) of `integration`: counted by its kind, the degraded
/// gauge set, and `degraded` stored beside the last good profile. An integration that never had a
/// good profile gets a definite "unusable" verdict with the reason, so readiness can settle.
pub(super) fn record_degraded(
    inner: &Inner,
    integration: &Arc<Integration>,
    error: &RefreshError,
    degraded: &Degraded,
) {
    let name = integration.name.as_str();
    inner
        .metrics
        .failures
        .with_label_values(&[name, error.kind()])
        .inc();
    inner.metrics.degraded.with_label_values(&[name]).set(1);
    inner.store.rcu(|cur| match cur.get(name) {
        None => cur.clone(),
        Some(s) => {
            // A missing credential stays the reason (code, gauge, lock verdict) while it is
            // missing: a failed fetch says nothing about the credential.
            let keep = s.status.code() == Some(ReasonCode::CredentialMissing)
                || (s.profile().is_some() && !s.status.is_pending());
            let mut next = if !keep {
                IntegrationState::unusable(integration.clone(), None, degraded.reason.clone())
            } else {
                (**s).clone()
            };
            next.freshness = Freshness {
                degraded: Some(degraded.clone()),
                ..s.freshness.clone()
            };
            cur.with(next)
        }
    });
}

impl Worker {
    /// One refresh: conditional fetch, then validate, compile and install on a 200; counted by result.
    /// Every fetch answers the stale marks pending before it and restarts the periodic timer.
    pub(super) async fn refresh(&mut self) -> RefreshReport {
        let report = self.refresh_inner().await;
        self.stale_at = None;
        self.next = self.next_at();
        self.inner
            .metrics
            .refreshes
            .with_label_values(&[self.name(), report.result.as_str()])
            .inc();
        report
    }

    pub(super) async fn refresh_inner(&mut self) -> RefreshReport {
        self.last_fetch = Some(Instant::now());
        // Before any fetch: a credential that is not there is the reason whatever the agent
        // answers (an unreachable agent must not hide it), and the card is not asked for.
        if let Some(e) = self.missing_credential() {
            return self.credential_missing(&e);
        }
        let config = self.inner.config.load_full();
        let policy = match fetch_policy(&self.integration, &config) {
            Ok(p) => p,
            Err(e) => return self.fail(RefreshError::Origins(e)),
        };
        let validators = self.card.as_ref().map(|c| c.validators.clone());
        let fetched = self
            .inner
            .source
            .fetch(&self.integration.card, &policy, validators.as_ref())
            .await;
        match fetched {
            Err(e) => self.fail(RefreshError::Fetch(e)),
            Ok(FetchOutcome::NotModified {
                validators,
                max_age,
            }) => {
                self.not_modified(validators, max_age, &config, &policy)
                    .await
            }
            Ok(FetchOutcome::Fetched {
                bytes,
                validators,
                max_age,
                origin,
                url,
            }) => {
                let card = CachedCard {
                    bytes,
                    validators,
                    origin,
                    url,
                    max_age,
                    fetched_at: SystemTime::now(),
                };
                match self.build(&card, &config, &policy, true).await {
                    Ok(state) => {
                        self.card = Some(card);
                        self.from_disk = false;
                        self.succeed(max_age);
                        let result = self.install(state);
                        self.persist();
                        self.report(result, None, false)
                    }
                    Err(BuildError::Card(e)) => self.fail(RefreshError::InvalidCard(e)),
                    Err(BuildError::CredentialMissing(e)) => {
                        // The card itself was good: kept, so the next fetch can be a 304.
                        self.card = Some(card);
                        self.from_disk = false;
                        self.credential_missing(&e)
                    }
                }
            }
        }
    }

    /// A 304: the cached card confirmed, and built again when what it was built with moved
    /// (the disk copy, the credential, the lockfile).
    async fn not_modified(
        &mut self,
        validators: Validators,
        max_age: Option<Duration>,
        config: &Arc<Config>,
        policy: &FetchPolicy,
    ) -> RefreshReport {
        let now = SystemTime::now();
        if let Some(c) = &mut self.card {
            c.validators = validators;
            c.max_age = max_age.or(c.max_age);
            c.fetched_at = now;
        }
        let max_age = self.card.as_ref().and_then(|c| c.max_age);
        let rotated = self.built_for.as_ref() != Some(&self.credential_identity());
        // A re-pinned (or removed, or broken) lockfile is judged without a new card.
        // A state built while the credential was missing is rebuilt once it is back.
        if self.from_disk || rotated || self.credential_was_missing() || self.lock_moved() {
            // The disk copy is confirmed, or the credential changed: build once more with
            // the network available (the extended card is only fetched online, and
            // belongs to one identity).
            self.from_disk = false;
            if let Some(card) = self.card.clone() {
                match self.build(&card, config, policy, true).await {
                    Ok(state) => {
                        self.succeed(max_age);
                        let result = self.install(state);
                        self.persist();
                        return self.report(result, None, false);
                    }
                    Err(BuildError::Card(e)) => {
                        return self.fail(RefreshError::InvalidCard(e));
                    }
                    Err(BuildError::CredentialMissing(e)) => {
                        return self.credential_missing(&e);
                    }
                }
            }
        }
        self.succeed(max_age);
        self.touch_freshness();
        self.persist();
        self.report(RefreshResult::NotModified, None, false)
    }

    pub(super) fn succeed(&mut self, max_age: Option<Duration>) {
        self.last = Last::Ok { max_age };
        self.degraded = None;
        self.inner
            .metrics
            .degraded
            .with_label_values(&[self.name()])
            .set(0);
        self.inner.metrics.ages.set(self.name(), SystemTime::now());
    }

    /// Records a failure: the last good profile stays; without one the integration is unusable.
    pub(super) fn fail(&mut self, error: RefreshError) -> RefreshReport {
        use crate::card::sanitize::{MAX_REPORT_LINE_CHARS, MAX_REPORT_LINES, bounded_report};
        // Kept and served (`/readyz`, refresh answers): bounded, whatever the card or agent wrote.
        let reason = bounded_report(&error.to_string(), MAX_REPORT_LINE_CHARS, MAX_REPORT_LINES);
        let now = SystemTime::now();
        let failures = match self.last {
            Last::Failed { consecutive } => consecutive + 1,
            Last::Ok { .. } => 1,
        };
        self.last = Last::Failed {
            consecutive: failures,
        };
        let degraded = Degraded {
            reason: reason.clone(),
            since: self.degraded.as_ref().map_or(now, |d| d.since),
            failures,
        };
        self.degraded = Some(degraded.clone());
        // The same rule as `record_degraded`: a pending state or one without a profile has no
        // good profile to keep, and the log must not promise one (the first fetch failing).
        let kept = self
            .current()
            .is_some_and(|s| s.profile().is_some() && !s.status.is_pending());
        if kept {
            tracing::warn!(integration = %self.name(), failures, kind = error.kind(), %reason, "card refresh failed; keeping the last good profile");
        } else {
            tracing::warn!(integration = %self.name(), failures, kind = error.kind(), %reason, "card refresh failed; no good profile yet, the integration is unusable until a fetch succeeds");
        }
        record_degraded(&self.inner, &self.integration, &error, &degraded);
        self.report(RefreshResult::Failed, Some(reason), false)
    }

    /// Installs a freshly built state: a new profile (or status) replaces the old one and resets
    /// runtime overrides; an identical profile only refreshes strings and freshness.
    pub(super) fn install(&mut self, state: IntegrationState) -> RefreshResult {
        let mut state = self.judge(state);
        let old = self.current();
        let old_profile = old.as_ref().and_then(|s| s.profile().cloned());
        // A state without a profile (a missing credential) changes nothing when the last had
        // none either, and the same reason: no "profile changed" on every retry.
        let changed = match state.profile() {
            Some(p) => schedule::profile_changed(old_profile.as_deref(), p),
            None => old_profile.is_some(),
        } || old
            .as_ref()
            .is_none_or(|s| !s.status.same_verdict(&state.status));
        state.freshness.validated_at = Some(SystemTime::now());
        state.freshness.unrevalidated = false;
        state.freshness.degraded = None;
        if let Some(old) = &old {
            state.evidence = old.evidence.clone();
            state.probes = old.probes.clone();
            if !changed {
                state.overrides = old.overrides.clone();
                state.installed_at = old.installed_at;
            }
        }
        let name = self.name().to_owned();
        self.inner.store.rcu(|cur| match cur.get(&name) {
            Some(_) => cur.with(state.clone()),
            None => cur.clone(),
        });
        self.inner.metrics.swaps.with_label_values(&[&name]).inc();
        if changed {
            tracing::info!(integration = %name, status = state.status.as_str(), "profile changed");
            RefreshResult::Changed
        } else {
            RefreshResult::Unchanged
        }
    }

    /// Marks the current profile as confirmed (a 304), without touching the profile.
    pub(super) fn touch_freshness(&self) {
        let name = self.name().to_owned();
        self.inner.store.rcu(|cur| match cur.get(&name) {
            Some(s) => {
                let mut next = (**s).clone();
                next.freshness.validated_at = Some(SystemTime::now());
                next.freshness.unrevalidated = false;
                next.freshness.degraded = None;
                cur.with(next)
            }
            None => cur.clone(),
        });
    }

    /// Validates and compiles a card into a complete integration state (extended card, interface
    /// address check and upstream included). `Err` means the card itself failed.
    pub(super) async fn build(
        &mut self,
        card: &CachedCard,
        config: &Arc<Config>,
        policy: &FetchPolicy,
        online: bool,
    ) -> Result<IntegrationState, BuildError> {
        let public =
            super::compile::validate_and_compile(card.bytes.clone(), card.origin.clone(), config)
                .await
                .map_err(BuildError::Card)?;
        // Past the only failure: the state returned below is built for this identity.
        self.built_for = Some(self.credential_identity());
        // A credential that is not there is the deployment's problem, not the card's: no
        // extended card is asked for (the public card would pass for a changed one). Checked
        // again here: a rebuild from the cached card does not go through `refresh_inner`.
        if let Some(e) = self.missing_credential() {
            return Err(BuildError::CredentialMissing(e));
        }
        let public_digest = public.card_digest.clone();
        let mut warned = vec![public_digest.clone()];
        self.log_warnings(&public);
        let (profile, extended) = self.extended(public, config, policy, online).await;
        if profile.card_digest != public_digest {
            warned.push(profile.card_digest.clone());
            self.log_warnings(&profile);
        }
        self.warned = warned;
        let integration = self.integration.clone();
        let upstream = match profile.interface.as_ref().filter(|_| profile.is_usable()) {
            None => Err(InterfaceError::NoUsableInterface),
            Some(iface) => prepare_upstream(&iface.call_url(), &integration, policy).await,
        };
        if let Err(e) = &upstream {
            tracing::debug!(integration = %self.name(), kind = e.kind(), error = %e, "no upstream for the profile");
        }
        let upstream = upstream.map_err(|e| NoUpstream {
            kind: e.kind(),
            reason: e.to_string(),
        });
        let mut state = IntegrationState::from_profile(integration, profile, upstream);
        state.freshness.extended = extended;
        Ok(state)
    }

    /// Logs the card warnings of `profile`, unless the last build already logged this card's.
    fn log_warnings(&self, profile: &crate::profile::Profile) {
        if self.warned.contains(&profile.card_digest) {
            return;
        }
        for w in &profile.display.warnings {
            tracing::warn!(integration = %self.name(), card_digest = %profile.card_digest, warning = %w, "card warning");
        }
    }

    /// Rebuilds the state from the cached card with the current config (no fetch).
    pub(super) async fn rebuild_from_cache(&mut self) {
        let Some(card) = self.card.clone() else {
            return;
        };
        let config = self.inner.config.load_full();
        let Ok(policy) = fetch_policy(&self.integration, &config) else {
            return;
        };
        match self.build(&card, &config, &policy, false).await {
            Ok(state) => {
                self.install(state);
            }
            Err(BuildError::Card(e)) => {
                self.fail(RefreshError::InvalidCard(e));
            }
            Err(BuildError::CredentialMissing(e)) => {
                self.credential_missing(&e);
                // Retried on the failure backoff, not at the next periodic refresh.
                self.next = self.next_at();
            }
        }
    }

    /// The integration's credential, when it is configured and not there to read
    /// ([`SecretError::is_missing`]).
    pub(super) fn missing_credential(&self) -> Option<SecretError> {
        self.bearer_authorization()
            .err()
            .filter(SecretError::is_missing)
    }

    /// Whether the installed state is unusable for [`ReasonCode::CredentialMissing`].
    fn credential_was_missing(&self) -> bool {
        (self.current()).is_some_and(|s| s.status.code() == Some(ReasonCode::CredentialMissing))
    }

    /// Records a refresh that found the credential missing: the state says so
    /// ([`IntegrationState::credential_missing`]: no profile, the lock verdict kept), and the
    /// next refresh comes on the failure backoff (`[refresh] backoff_initial` doubling to
    /// `backoff_max`), so a credential file that comes back is picked up within it. It is not a
    /// failed refresh (no card fetch failed; `A2AEgressRefreshFailures` is for those) and, while
    /// the reason stays the same, not a change: logged once, the profile age untouched.
    pub(super) fn credential_missing(&mut self, e: &SecretError) -> RefreshReport {
        let consecutive = match self.last {
            Last::Failed { consecutive } => consecutive.saturating_add(1),
            Last::Ok { .. } => 1,
        };
        self.last = Last::Failed { consecutive };
        self.degraded = None;
        let degraded = &self.inner.metrics.degraded;
        degraded.with_label_values(&[self.name()]).set(0);
        let state = IntegrationState::credential_missing(self.integration.clone(), e);
        let reason = state.status.reason().map(str::to_owned);
        let again = (self.current()).is_some_and(|s| s.status.same_verdict(&state.status));
        if !again {
            tracing::warn!(integration = %self.name(), kind = e.kind(), error = %e, "CREDENTIAL_MISSING: the integration is unusable until its credential can be read; retried on the failure backoff");
        }
        self.install(state);
        self.report(RefreshResult::CredentialMissing, reason, false)
    }
}

/// Why a card could not be built into a state.
#[derive(Debug)]
pub(super) enum BuildError {
    /// The card itself failed.
    Card(CardErrors),
    /// The integration's credential is not there to read: nothing about the card is known.
    CredentialMissing(SecretError),
}

/// Prepares the upstream for an interface URL: the same address rules as the card itself (the
/// interface is where every call goes), then the upstream (DNS, TLS roots, credential; blocking,
/// so off the runtime), then the address it will connect to checked again.
async fn prepare_upstream(
    url: &str,
    integration: &Arc<Integration>,
    policy: &FetchPolicy,
) -> Result<Upstream, InterfaceError> {
    check_url(url, policy)
        .await
        .map_err(InterfaceError::Refused)?;
    let (owned, i) = (url.to_owned(), integration.clone());
    let upstream = tokio::task::spawn_blocking(move || Upstream::prepare(&owned, &i))
        .await
        .map_err(|e| InterfaceError::Panicked(e.to_string()))?
        .map_err(InterfaceError::Prepare)?;
    policy
        .check_addr(url, upstream.addr.ip())
        .map_err(InterfaceError::Refused)?;
    Ok(upstream)
}
