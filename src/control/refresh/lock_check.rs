//! The lockfile step of an install: read the integration's lockfile, judge the new state against
//! it (`IntegrationState::with_lock`, pure), and log a changed verdict once (file I/O: the
//! lockfile is re-read on every install, so a re-pin applies at the next refresh).

use std::time::SystemTime;

use super::Worker;
use crate::lock::{Lock, UnreadableLock, file as lockfile};
use crate::state::{IntegrationState, LockState, LockVerdict, ReasonCode};

impl Worker {
    /// This integration's lockfile now: `Ok(None)` without one, `Err` (one line) when unreadable.
    fn read_lock(&self) -> Result<Option<Lock>, UnreadableLock> {
        let path = lockfile::path_for(&self.inner.config.load().path, self.name());
        // Re-read on every install: off the data plane's threads.
        crate::types::file::blocking(|| lockfile::read(&path))
    }

    /// `state` judged against the lockfile; an unchanged verdict keeps the time it was reached,
    /// a changed one is logged. A state whose credential is missing is not judged: nothing about
    /// the agent was learnt, so the verdict stays what it was; before the first one it is
    /// `not_judged` when a lockfile is there (`unpinned` was a claim about the pin, and wrong).
    pub(super) fn judge(&self, state: IntegrationState) -> IntegrationState {
        if state.status.code() == Some(ReasonCode::CredentialMissing) {
            let mut next = state;
            next.lock = match self.current() {
                Some(old) if !old.status.is_pending() => old.lock.clone(),
                _ => match self.read_lock() {
                    Ok(None) => LockState::unpinned(SystemTime::now()),
                    Ok(Some(l)) => LockState::not_judged(Some(l), SystemTime::now()),
                    Err(_) => LockState::not_judged(None, SystemTime::now()),
                },
            };
            return next;
        }
        let lock = self.read_lock();
        let mut next = state.with_lock(lock, SystemTime::now());
        match self.current() {
            Some(old) if old.lock.same_verdict(&next.lock) => next.lock.at = old.lock.at,
            _ => log_verdict(&next),
        }
        next
    }

    /// Whether the lockfile on disk no longer says what the installed verdict was judged
    /// against (re-pinned, removed, created or broken since): then a 304 rebuilds too.
    pub(super) fn lock_moved(&self) -> bool {
        let Some(cur) = self.current() else {
            return false;
        };
        match self.read_lock() {
            Ok(None) => cur.lock.verdict != LockVerdict::Unpinned,
            Ok(Some(l)) => cur.lock.lock.as_deref() != Some(&l),
            // An unreadable file judged as such has no lock recorded.
            Err(_) => cur.lock.lock.is_some() || cur.lock.verdict == LockVerdict::Unpinned,
        }
    }
}

fn log_verdict(state: &IntegrationState) {
    let (name, lock) = (state.integration.name.as_str(), &state.lock);
    let on_breaking = state.integration.lock.on_breaking.as_str();
    let findings: Vec<String> = lock.findings.iter().map(ToString::to_string).collect();
    let findings = findings.join("; ");
    let verdict = lock.verdict.as_str();
    match (lock.verdict, &lock.fallback) {
        (LockVerdict::Breaking, Some(to)) => {
            tracing::warn!(integration = %name, verdict, fallback = %to, %findings, "lockfile: breaking change; new delegations go to the fallback while it satisfies the lockfile")
        }
        (LockVerdict::Breaking, None) => {
            tracing::warn!(integration = %name, verdict, on_breaking, %findings, "lockfile: breaking change")
        }
        (LockVerdict::Review, _) => {
            tracing::warn!(integration = %name, verdict, %findings, "lockfile: change needs review")
        }
        _ => tracing::info!(integration = %name, verdict, %findings, "lockfile verdict"),
    }
}
