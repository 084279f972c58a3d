//! An integration's standing against its lockfile, part of its state (pure): the verdict, its
//! findings and when it was reached, and what `on_breaking` made of a breaking one.
//!
//! - no lockfile → `unpinned`: the integration runs as it always did;
//! - compatible → nothing changes;
//! - review → the profile serves, flagged (readiness detail, `a2a_egress_lock_verdict`);
//! - breaking → `on_breaking`: `block` turns a usable status into [`Status::Blocked`] (the data
//!   plane refuses new delegations and lets running tasks be read, cancelled and subscribed to);
//!   `fallback:<name>` leaves the status and the data plane sends new delegations to that
//!   integration while its own profile satisfies this lockfile; `warn` only reports.
//!
//! A lockfile that exists but does not parse is breaking: the workflow asked to be pinned and
//! nothing can be checked.

use std::sync::Arc;
use std::time::SystemTime;

use serde::{Serialize, Serializer};

use super::{IntegrationState, Status};
use crate::config::{Integration, OnBreaking, StreamingMode};
use crate::lock::{self, Class, Finding, Lock, Manifest, StreamingNeed, UnreadableLock, Verdict};

/// The verdict of an integration against its lockfile.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LockVerdict {
    /// No lockfile: the integration is not pinned.
    #[default]
    Unpinned,
    /// Nothing the workflow needs changed.
    Compatible,
    /// Serving, but someone should look (and probes should run again).
    Review,
    /// The workflow would fail; `on_breaking` decides what happens.
    Breaking,
    /// A lockfile is there but no profile was ever judged against it: the integration's
    /// credential has been missing since start (`CREDENTIAL_MISSING`), so no card was built.
    NotJudged,
}

impl LockVerdict {
    /// Every verdict (for the metric's series).
    pub const ALL: [LockVerdict; 5] = [
        LockVerdict::Unpinned,
        LockVerdict::Compatible,
        LockVerdict::Review,
        LockVerdict::Breaking,
        LockVerdict::NotJudged,
    ];

    /// Bounded label.
    pub fn as_str(self) -> &'static str {
        match self {
            LockVerdict::Unpinned => "unpinned",
            LockVerdict::Compatible => "compatible",
            LockVerdict::Review => "review",
            LockVerdict::Breaking => "breaking",
            LockVerdict::NotJudged => "not_judged",
        }
    }

    fn of(class: Class) -> Self {
        match class {
            Class::Compatible => LockVerdict::Compatible,
            Class::Review => LockVerdict::Review,
            Class::Breaking => LockVerdict::Breaking,
        }
    }
}

/// What the lockfile says about the current profile.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LockState {
    /// The verdict.
    pub verdict: LockVerdict,
    /// One line per finding (`<class>: <field>: <old> -> <new> (<why>)`).
    #[serde(serialize_with = "finding_lines")]
    pub findings: Vec<Finding>,
    /// When this verdict was first reached (kept while it stays the same).
    #[serde(serialize_with = "crate::types::rfc3339::serialize")]
    pub at: SystemTime,
    /// The integration new delegations go to instead (`on_breaking = "fallback:<name>"`).
    pub fallback: Option<String>,
    /// The lock itself, to check a fallback's profile against.
    #[serde(skip)]
    pub lock: Option<Arc<Lock>>,
}

fn finding_lines<S: Serializer>(findings: &[Finding], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(findings.iter().map(ToString::to_string))
}

impl LockState {
    /// No lockfile.
    pub fn unpinned(at: SystemTime) -> Self {
        LockState {
            verdict: LockVerdict::Unpinned,
            findings: Vec::new(),
            at,
            fallback: None,
            lock: None,
        }
    }

    /// A lockfile that is there (or cannot be read) and was not judged: nothing was built to
    /// judge ([`LockVerdict::NotJudged`]).
    pub fn not_judged(lock: Option<Lock>, at: SystemTime) -> Self {
        LockState {
            verdict: LockVerdict::NotJudged,
            lock: lock.map(Arc::new),
            ..Self::unpinned(at)
        }
    }

    /// Whether this and `other` say the same (the time aside): a change is logged once.
    pub fn same_verdict(&self, other: &LockState) -> bool {
        self.verdict == other.verdict
            && self.findings == other.findings
            && self.fallback == other.fallback
    }
}

/// Whether `state`'s profile satisfies `lock` (usable, and not breaking against it) for a
/// workflow that requires streaming or not: what a fallback integration must meet (pure).
pub fn satisfies(state: &IntegrationState, lock: &Lock, streaming_required: bool) -> bool {
    match &state.status {
        Status::Usable { profile, .. } => {
            lock::check_against_lock_for(profile, lock, streaming_required).class != Class::Breaking
        }
        _ => false,
    }
}

impl IntegrationState {
    /// Judges this freshly built state against its lockfile (`Ok(None)`: none; `Err`: one that
    /// cannot be read, with why) and applies `on_breaking` (pure).
    pub fn with_lock(mut self, lock: Result<Option<Lock>, UnreadableLock>, at: SystemTime) -> Self {
        let streaming_required = self.integration.streaming == StreamingMode::Required;
        let (verdict, lock) = match lock {
            Ok(None) => {
                self.lock = LockState::unpinned(at);
                return self;
            }
            Err(why) => (lock::invalid_lock_verdict(&why), None),
            Ok(Some(l)) => (
                self.verdict_against(&l, streaming_required),
                Some(Arc::new(l)),
            ),
        };
        let mut fallback = None;
        if verdict.class == Class::Breaking {
            match &self.integration.lock.on_breaking {
                OnBreaking::Block => {
                    if let Status::Usable { profile, upstream } = &self.status {
                        self.status = Status::Blocked {
                            reason: blocked_reason(&verdict),
                            profile: profile.clone(),
                            upstream: upstream.clone(),
                        };
                    }
                }
                OnBreaking::Fallback(to) => fallback = Some(to.clone()),
                OnBreaking::Warn => {}
            }
        }
        self.lock = LockState {
            verdict: LockVerdict::of(verdict.class),
            findings: verdict.findings,
            at,
            fallback,
            lock,
        };
        self
    }

    fn verdict_against(&self, lock: &Lock, streaming_required: bool) -> Verdict {
        match &self.status {
            Status::Usable { profile, .. } => {
                lock::check_against_lock_for(profile, lock, streaming_required)
            }
            Status::Unusable { reason, .. } | Status::Blocked { reason, .. } => {
                lock::unusable_verdict(reason)
            }
            Status::Pending => lock::unusable_verdict("no profile yet"),
        }
    }

    /// Whether new delegations must be refused or rerouted because of a breaking verdict.
    pub fn lock_breaking(&self) -> bool {
        self.lock.verdict == LockVerdict::Breaking
    }
}

/// `breaking change against the lockfile: <first breaking finding>` (the status reason).
fn blocked_reason(v: &Verdict) -> String {
    let first = v
        .findings
        .iter()
        .find(|f| f.class == Class::Breaking)
        .map(ToString::to_string)
        .unwrap_or_default();
    format!("breaking change against the lockfile: {first}")
}

/// The lockfile-relevant part of an integration's config.
pub fn manifest_of(i: &Integration) -> Manifest {
    Manifest {
        agent: i.card.clone(),
        skills: i.skills.clone(),
        scopes: i.scopes.clone(),
        streaming: match i.streaming {
            StreamingMode::Required => StreamingNeed::Required,
            StreamingMode::Preferred => StreamingNeed::Preferred,
            StreamingMode::Off => StreamingNeed::Off,
        },
        extensions: i.extensions.clone(),
        input_modes: i.lock.input_modes.clone(),
        output_modes: i.lock.output_modes.clone(),
    }
}

#[cfg(test)]
mod tests;
