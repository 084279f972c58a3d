//! Pure refresh decisions: duration parsing for `[refresh]`, the next refresh delay (max-age bounded
//! by min/max, jitter, exponential backoff), the stale-mark debounce, and what counts as a change of
//! the compiled profile (no I/O, no clock: every function takes the time it needs).

use std::time::Duration;

use serde::Serialize;

use crate::profile::Profile;

/// A duration that did not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{input:?} is not a duration (use a number and a unit, e.g. \"500ms\", \"30s\", \"5m\", \"24h\", \"1d\", or \"1h30m\")"
)]
pub struct DurationError {
    /// The text.
    pub input: String,
}

/// Parses `"500ms"`, `"30s"`, `"5m"`, `"24h"`, `"1d"` and sums such as `"1h30m"` (pure).
///
/// A small local parser instead of `humantime`: the accepted grammar is exactly what the config
/// documents, no crate is added, and the unit tests below pin it down.
pub fn parse_duration(input: &str) -> Result<Duration, DurationError> {
    let err = || DurationError {
        input: input.to_owned(),
    };
    let s = input.trim();
    if s.is_empty() {
        return Err(err());
    }
    let mut total = Duration::ZERO;
    let mut rest = s;
    while !rest.is_empty() {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return Err(err());
        }
        let n: u64 = rest[..digits].parse().map_err(|_| err())?;
        rest = &rest[digits..];
        let unit_len = rest.bytes().take_while(u8::is_ascii_alphabetic).count();
        let unit = &rest[..unit_len];
        rest = &rest[unit_len..];
        let part = match unit {
            "ms" => Duration::from_millis(n),
            "s" => Duration::from_secs(n),
            "m" => Duration::from_secs(n.checked_mul(60).ok_or_else(err)?),
            "h" => Duration::from_secs(n.checked_mul(3600).ok_or_else(err)?),
            "d" => Duration::from_secs(n.checked_mul(86_400).ok_or_else(err)?),
            _ => return Err(err()),
        };
        total = total.checked_add(part).ok_or_else(err)?;
    }
    Ok(total)
}

/// Validated `[refresh]` settings.
#[derive(Debug, Clone, PartialEq)]
pub struct RefreshSettings {
    /// Lower bound of the refresh period (also used when the agent says `max-age=0`).
    pub min: Duration,
    /// Upper bound of the refresh period.
    pub max: Duration,
    /// Period when the agent sends no `max-age` (bounded by min/max).
    pub default: Duration,
    /// Jitter as a fraction of the delay (0.0..=0.5): spreads refreshes of many integrations.
    pub jitter: f64,
    /// First retry delay after a failure; doubles per consecutive failure.
    pub backoff_initial: Duration,
    /// Cap of the failure backoff.
    pub backoff_max: Duration,
    /// How long a stale mark waits for more marks before it triggers a refresh.
    pub stale_debounce: Duration,
    /// At most one stale-triggered refresh per integration per this interval.
    pub stale_min_interval: Duration,
}

impl Default for RefreshSettings {
    fn default() -> Self {
        RefreshSettings {
            min: Duration::from_secs(30),
            max: Duration::from_secs(24 * 3600),
            default: Duration::from_secs(3600),
            jitter: 0.1,
            backoff_initial: Duration::from_secs(1),
            backoff_max: Duration::from_secs(300),
            stale_debounce: Duration::from_millis(250),
            stale_min_interval: Duration::from_secs(10),
        }
    }
}

/// The raw `[refresh]` table (durations as text, e.g. `"30s"`, `"24h"`); every key is optional.
#[derive(Debug, Clone, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawRefresh {
    /// Lower bound of the period (default `"30s"`).
    pub min: Option<String>,
    /// Upper bound of the period (default `"24h"`).
    pub max: Option<String>,
    /// Period without `max-age` (default `"1h"`).
    pub default: Option<String>,
    /// Jitter fraction, 0.0..=0.5 (default 0.1).
    pub jitter: Option<f64>,
    /// First retry delay after a failure (default `"1s"`).
    pub backoff_initial: Option<String>,
    /// Cap of the failure backoff (default `"5m"`).
    pub backoff_max: Option<String>,
    /// Wait for more stale marks before refreshing (default `"250ms"`).
    pub stale_debounce: Option<String>,
    /// At most one stale-triggered refresh per integration per interval (default `"10s"`).
    pub stale_min_interval: Option<String>,
}

impl RefreshSettings {
    /// Validates a raw `[refresh]` table, appending one message per problem (each naming its key).
    pub fn from_raw(raw: &RawRefresh, problems: &mut Vec<String>) -> RefreshSettings {
        let d = RefreshSettings::default();
        let mut dur = |key: &str, v: &Option<String>, default: Duration| match v {
            None => default,
            Some(text) => parse_duration(text).unwrap_or_else(|e| {
                problems.push(format!("refresh.{key}: {e}"));
                default
            }),
        };
        let s = RefreshSettings {
            min: dur("min", &raw.min, d.min),
            max: dur("max", &raw.max, d.max),
            default: dur("default", &raw.default, d.default),
            jitter: raw.jitter.unwrap_or(d.jitter),
            backoff_initial: dur("backoff_initial", &raw.backoff_initial, d.backoff_initial),
            backoff_max: dur("backoff_max", &raw.backoff_max, d.backoff_max),
            stale_debounce: dur("stale_debounce", &raw.stale_debounce, d.stale_debounce),
            stale_min_interval: dur(
                "stale_min_interval",
                &raw.stale_min_interval,
                d.stale_min_interval,
            ),
        };
        if s.min.is_zero() {
            problems.push("refresh.min: must be more than 0s".into());
        }
        if s.min > s.max {
            problems.push(format!(
                "refresh.min: {:?} is above refresh.max {:?}",
                s.min, s.max
            ));
        }
        if !(0.0..=0.5).contains(&s.jitter) {
            problems.push(format!("refresh.jitter: {} is outside 0.0..=0.5", s.jitter));
        }
        if s.backoff_initial.is_zero() || s.backoff_initial > s.backoff_max {
            problems.push(
                "refresh.backoff_initial: must be more than 0s and at most refresh.backoff_max"
                    .into(),
            );
        }
        s
    }
}

/// The raw `[state]` table.
#[derive(Debug, Clone, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawState {
    /// Directory for last-known-good cards, relative to the config file's folder. Absent: cards
    /// are not persisted and a restart needs every agent up.
    pub dir: Option<std::path::PathBuf>,
}

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
}

impl RefreshResult {
    /// All results (for pre-registering metric series).
    pub const ALL: [RefreshResult; 4] = [
        RefreshResult::Changed,
        RefreshResult::Unchanged,
        RefreshResult::NotModified,
        RefreshResult::Failed,
    ];

    /// Bounded metric label.
    pub fn as_str(self) -> &'static str {
        match self {
            RefreshResult::Changed => "changed",
            RefreshResult::Unchanged => "unchanged",
            RefreshResult::NotModified => "not_modified",
            RefreshResult::Failed => "failed",
        }
    }
}

/// Whether two compiled profiles differ in anything that affects calls (pure): everything except the
/// card digest and the provider-written display strings. A reordered or re-described card is not a
/// change; a dropped interface version, a removed skill or streaming switched off is.
pub fn profile_changed(old: Option<&Profile>, new: &Profile) -> bool {
    let Some(old) = old else { return true };
    old.usable != new.usable
        || old.unusable != new.unusable
        || old.agent_version != new.agent_version
        || old.interface != new.interface
        || old.offered != new.offered
        || old.streaming != new.streaming
        || old.push != new.push
        || old.extended_card != new.extended_card
        || old.extensions != new.extensions
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
    use crate::profile::{Binding, Display, Interface, SkillProfile};

    #[test]
    fn durations_parse_and_reject() {
        assert_eq!(parse_duration("30s"), Ok(Duration::from_secs(30)));
        assert_eq!(parse_duration("24h"), Ok(Duration::from_secs(86_400)));
        assert_eq!(parse_duration("1d"), Ok(Duration::from_secs(86_400)));
        assert_eq!(parse_duration("5m"), Ok(Duration::from_secs(300)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration(" 1h30m "), Ok(Duration::from_secs(5400)));
        assert_eq!(parse_duration("0s"), Ok(Duration::ZERO));
        for bad in [
            "",
            "30",
            "s",
            "30 s",
            "1.5h",
            "-1s",
            "10y",
            "1h 30m",
            "99999999999999999999d",
            "1hh",
        ] {
            assert!(parse_duration(bad).is_err(), "{bad:?} should not parse");
        }
        assert!(
            parse_duration("10y")
                .unwrap_err()
                .to_string()
                .contains("\"10y\"")
        );
    }

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
    fn refresh_table_validates_every_key() {
        let mut p = Vec::new();
        let ok = RefreshSettings::from_raw(
            &RawRefresh {
                min: Some("1s".into()),
                max: Some("2s".into()),
                ..Default::default()
            },
            &mut p,
        );
        assert!(p.is_empty(), "{p:?}");
        assert_eq!(
            (ok.min, ok.max),
            (Duration::from_secs(1), Duration::from_secs(2))
        );
        let mut p = Vec::new();
        RefreshSettings::from_raw(
            &RawRefresh {
                min: Some("1h".into()),
                max: Some("1m".into()),
                default: Some("soon".into()),
                jitter: Some(2.0),
                ..Default::default()
            },
            &mut p,
        );
        assert_eq!(p.len(), 3, "{p:?}");
        assert!(p.iter().any(|m| m.starts_with("refresh.default")), "{p:?}");
    }

    #[test]
    fn jitter_unit_stays_in_range_and_varies() {
        let xs: Vec<f64> = (0..200).map(|_| jitter_unit()).collect();
        assert!(xs.iter().all(|x| (-1.0..=1.0).contains(x)));
        assert!(xs.iter().any(|x| *x > 0.0) && xs.iter().any(|x| *x < 0.0));
    }

    fn profile() -> Profile {
        Profile {
            usable: true,
            unusable: None,
            reason: None,
            agent_version: "1".into(),
            card_digest: "sha256:aa".into(),
            interface: Some(Interface {
                url: "http://127.0.0.1:1/".into(),
                binding: Binding::JsonRpc,
                version: "1.0".into(),
                tenant: None,
            }),
            offered: Vec::new(),
            streaming: true,
            push: false,
            extended_card: false,
            extensions: vec![],
            skills: [(
                "echo".to_string(),
                SkillProfile {
                    input: vec!["text/plain".into()],
                    output: vec!["text/plain".into()],
                    security: vec![],
                    tags: vec![],
                },
            )]
            .into(),
            display: Display::default(),
        }
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
