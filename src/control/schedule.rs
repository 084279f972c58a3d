//! Pure refresh decisions under the `[refresh]` settings: the next refresh delay (max-age bounded
//! by min/max, jitter, exponential backoff), the stale-mark debounce, and what counts as a change of
//! the compiled profile (no I/O, no clock: every function takes the time it needs).

use std::time::Duration;

use serde::Serialize;

use crate::config::RefreshSettings;
use crate::profile::Profile;

/// How the previous refresh ended, as far as scheduling cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Last {
    /// A 200 or 304; `max_age` from its `Cache-Control`.
    Ok {
        /// The agent's `max-age`, if any.
        max_age: Option<Duration>,
    },
    /// `consecutive` failures in a row (at least 1).
    Failed {
        /// Number of consecutive failures.
        consecutive: u32,
    },
}

/// The delay until the next periodic refresh (pure). `unit` is a sample in `[-1.0, 1.0]` that
/// scales the jitter; tests pass fixed values.
///
/// After success: `max-age` (or `default`) clamped to `[min, max]`, jittered, clamped again.
/// After failures: `backoff_initial · 2^(n-1)` capped at `backoff_max` and at `max`, jittered; it is
/// deliberately not raised to `min`, so an agent that was down briefly is picked up again soon.
pub fn next_delay(s: &RefreshSettings, last: Last, unit: f64) -> Duration {
    let unit = unit.clamp(-1.0, 1.0);
    let jitter = |d: Duration| d.mul_f64((1.0 + s.jitter.clamp(0.0, 0.5) * unit).max(0.0));
    match last {
        Last::Ok { max_age } => {
            let base = max_age.unwrap_or(s.default).clamp(s.min, s.max);
            jitter(base).clamp(s.min, s.max)
        }
        Last::Failed { consecutive } => {
            let exp = consecutive.saturating_sub(1).min(30);
            let cap = s.backoff_max.min(s.max);
            let base = s
                .backoff_initial
                .checked_mul(1u32 << exp)
                .unwrap_or(cap)
                .min(cap);
            jitter(base).min(cap).max(Duration::from_millis(1))
        }
    }
}

/// When a stale mark received at `now` should trigger a refresh (pure): after the debounce, and no
/// earlier than `stale_min_interval` after the previous fetch of any kind (periodic, forced, stale
/// or retry hook), so an error storm costs at most one fetch per interval. A mark that arrives just
/// after a fetch is deferred to the end of the interval, never dropped.
///
/// `T` is any point in time that a duration can be added to: the worker passes
/// `tokio::time::Instant` (so paused-time tests control it), the unit tests plain offsets.
pub fn stale_deadline<T>(s: &RefreshSettings, now: T, last_fetch: Option<T>) -> T
where
    T: Copy + Ord + std::ops::Add<Duration, Output = T>,
{
    let debounced = now + s.stale_debounce;
    match last_fetch {
        Some(t) => debounced.max(t + s.stale_min_interval),
        None => debounced,
    }
}

/// The result of one refresh, as counted in `a2a_egress_refresh_total{result}` and answered by
/// `POST /v1/integrations/{name}/refresh`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RefreshResult {
    /// The compiled profile changed (a new snapshot was stored).
    Changed,
    /// A 200 whose compiled profile is the same as before (strings or digest may differ).
    Unchanged,
    /// A 304: nothing fetched, nothing recompiled.
    NotModified,
    /// Fetch, validation or compilation failed; the last good profile stays.
    Failed,
    /// The integration's credential is not there to read: unusable with reason
    /// `CREDENTIAL_MISSING`, nothing fetched, retried on the failure backoff.
    CredentialMissing,
}

impl RefreshResult {
    /// All results (for pre-registering metric series).
    pub const ALL: [RefreshResult; 5] = [
        RefreshResult::Changed,
        RefreshResult::Unchanged,
        RefreshResult::NotModified,
        RefreshResult::Failed,
        RefreshResult::CredentialMissing,
    ];

    /// Bounded metric label.
    pub fn as_str(self) -> &'static str {
        match self {
            RefreshResult::Changed => "changed",
            RefreshResult::Unchanged => "unchanged",
            RefreshResult::NotModified => "not_modified",
            RefreshResult::Failed => "failed",
            RefreshResult::CredentialMissing => "credential_missing",
        }
    }
}

/// Whether two compiled profiles differ in anything that affects calls (pure): everything except the
/// card digest and the provider-written display strings. A reordered or re-described card is not a
/// change; a dropped interface version, a removed skill or streaming switched off is.
pub fn profile_changed(old: Option<&Profile>, new: &Profile) -> bool {
    let Some(old) = old else { return true };
    old.verdict != new.verdict
        || old.agent_version != new.agent_version
        || old.interface != new.interface
        || old.offered != new.offered
        || old.streaming != new.streaming
        || old.push != new.push
        || old.extended_card != new.extended_card
        || old.extensions != new.extensions
        || old.required_extensions != new.required_extensions
        || old.skills != new.skills
}

/// A jitter sample in `[-1.0, 1.0]` from the standard library's randomly keyed hasher (jitter
/// needs spread, not unpredictability, so no RNG crate).
pub fn jitter_unit() -> f64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(0x9e37_79b9_7f4a_7c15);
    let x = h.finish() >> 11; // 53 random bits
    (x as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s() -> RefreshSettings {
        RefreshSettings {
            min: Duration::from_secs(30),
            max: Duration::from_secs(3600),
            default: Duration::from_secs(600),
            jitter: 0.1,
            backoff_initial: Duration::from_secs(1),
            backoff_max: Duration::from_secs(60),
            ..RefreshSettings::default()
        }
    }

    #[test]
    fn success_delay_follows_max_age_within_bounds() {
        let ok = |secs| Last::Ok {
            max_age: Some(Duration::from_secs(secs)),
        };
        assert_eq!(next_delay(&s(), ok(120), 0.0), Duration::from_secs(120));
        assert_eq!(
            next_delay(&s(), ok(5), 0.0),
            Duration::from_secs(30),
            "raised to min"
        );
        assert_eq!(
            next_delay(&s(), ok(0), 0.0),
            Duration::from_secs(30),
            "no-cache means min"
        );
        assert_eq!(
            next_delay(&s(), ok(86_400), 0.0),
            Duration::from_secs(3600),
            "cut to max"
        );
        assert_eq!(
            next_delay(&s(), Last::Ok { max_age: None }, 0.0),
            Duration::from_secs(600)
        );
        // Jitter moves the delay by at most the fraction and never leaves the bounds.
        assert_eq!(next_delay(&s(), ok(120), 1.0), Duration::from_secs(132));
        assert_eq!(next_delay(&s(), ok(120), -1.0), Duration::from_secs(108));
        assert_eq!(next_delay(&s(), ok(30), -1.0), Duration::from_secs(30));
        assert_eq!(next_delay(&s(), ok(3600), 1.0), Duration::from_secs(3600));
    }

    #[test]
    fn failures_back_off_exponentially_to_a_cap() {
        let f = |n| next_delay(&s(), Last::Failed { consecutive: n }, 0.0);
        assert_eq!(f(1), Duration::from_secs(1));
        assert_eq!(f(2), Duration::from_secs(2));
        assert_eq!(f(3), Duration::from_secs(4));
        assert_eq!(f(7), Duration::from_secs(60));
        assert_eq!(f(1000), Duration::from_secs(60));
        assert_eq!(
            next_delay(&s(), Last::Failed { consecutive: 3 }, 1.0),
            Duration::from_millis(4400)
        );
        assert_eq!(
            next_delay(&s(), Last::Failed { consecutive: 100 }, 1.0),
            Duration::from_secs(60)
        );
    }

    #[test]
    fn stale_marks_are_debounced_and_rate_limited() {
        let st = RefreshSettings {
            stale_debounce: Duration::from_millis(200),
            stale_min_interval: Duration::from_secs(10),
            ..s()
        };
        let at = Duration::from_secs;
        assert_eq!(
            stale_deadline(&st, at(100), None),
            Duration::from_millis(100_200)
        );
        assert_eq!(stale_deadline(&st, at(100), Some(at(95))), at(105));
        assert_eq!(
            stale_deadline(&st, at(100), Some(at(50))),
            Duration::from_millis(100_200)
        );
    }

    #[test]
    fn jitter_unit_stays_in_range_and_varies() {
        let xs: Vec<f64> = (0..200).map(|_| jitter_unit()).collect();
        assert!(xs.iter().all(|x| (-1.0..=1.0).contains(x)));
        assert!(xs.iter().any(|x| *x > 0.0) && xs.iter().any(|x| *x < 0.0));
    }

    fn profile() -> Profile {
        Profile::builder()
            .card_digest("sha256:aa")
            .url("http://127.0.0.1:1/")
            .streaming(true)
            .skill("echo")
            .build()
    }

    #[test]
    fn only_call_relevant_differences_are_changes() {
        let a = profile();
        assert!(profile_changed(None, &a));
        let mut b = a.clone();
        b.card_digest = "sha256:bb".into();
        b.display.description = "now with more words".into();
        assert!(
            !profile_changed(Some(&a), &b),
            "strings and digest are not a change"
        );
        let mut c = a.clone();
        c.streaming = false;
        assert!(profile_changed(Some(&a), &c));
        let mut d = a.clone();
        d.skills.clear();
        assert!(profile_changed(Some(&a), &d));
        let mut e = a.clone();
        e.interface.as_mut().unwrap().version = "1.1".into();
        assert!(profile_changed(Some(&a), &e));
    }
}
