//! The `[refresh]` and `[state]` tables: card refresh period bounds, failure backoff, stale-mark
//! debounce, and where last-known-good cards are kept (raw serde model and validation; no I/O).

use std::time::Duration;

use crate::types::parse_duration;

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
#[derive(Debug, Clone, Default, serde::Deserialize, schemars::JsonSchema)]
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
#[derive(Debug, Clone, Default, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawState {
    /// Directory for last-known-good cards, relative to the config file's folder. Absent: cards
    /// are not persisted and a restart needs every agent up.
    pub dir: Option<std::path::PathBuf>,
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
