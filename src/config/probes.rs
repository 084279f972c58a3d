//! The `[probes]` table: how often the gateway runs every integration's safe probes by itself
//! and how it rate-limits them (raw serde model and validation; no I/O).

use std::time::Duration;

use crate::types::parse_duration;

/// Validated `[probes]` settings.
#[derive(Debug, Clone, PartialEq)]
pub struct ProbeSchedule {
    /// Whether the gateway probes on its own at all (after a review verdict and on schedule).
    pub enabled: bool,
    /// Period of the scheduled runs of one integration (each run jittered by up to a tenth).
    pub every: Duration,
    /// Least time between two runs for one integration, whatever triggers them.
    pub min_interval: Duration,
    /// Least time between two runs gateway-wide (runs of several integrations queue).
    pub spacing: Duration,
}

impl Default for ProbeSchedule {
    fn default() -> Self {
        ProbeSchedule {
            enabled: true,
            every: Duration::from_secs(6 * 3600),
            min_interval: Duration::from_secs(300),
            spacing: Duration::from_secs(10),
        }
    }
}

/// The raw `[probes]` table; every key is optional.
#[derive(Debug, Clone, Default, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawProbes {
    /// Probe on the gateway's own initiative (default true; `a2a-egress probe` and `lock`
    /// still probe on demand).
    pub enabled: Option<bool>,
    /// Period of scheduled runs (default `"6h"`, at least `"1m"`).
    pub every: Option<String>,
    /// Least time between two runs of one integration (default `"5m"`).
    pub min_interval: Option<String>,
    /// Least time between two runs gateway-wide (default `"10s"`).
    pub spacing: Option<String>,
}

impl ProbeSchedule {
    /// Validates a raw `[probes]` table, appending one message per problem (each naming its key).
    pub fn from_raw(raw: &RawProbes, problems: &mut Vec<String>) -> ProbeSchedule {
        let d = ProbeSchedule::default();
        let mut dur = |key: &str, v: &Option<String>, default: Duration| match v {
            None => default,
            Some(text) => parse_duration(text).unwrap_or_else(|e| {
                problems.push(format!("probes.{key}: {e}"));
                default
            }),
        };
        let s = ProbeSchedule {
            enabled: raw.enabled.unwrap_or(d.enabled),
            every: dur("every", &raw.every, d.every),
            min_interval: dur("min_interval", &raw.min_interval, d.min_interval),
            spacing: dur("spacing", &raw.spacing, d.spacing),
        };
        // A probe run every few seconds is load on the agent, not verification.
        if s.every < Duration::from_secs(60) {
            problems.push("probes.every: must be at least 1m".into());
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_every_key() {
        let mut p = Vec::new();
        assert_eq!(
            ProbeSchedule::from_raw(&RawProbes::default(), &mut p),
            ProbeSchedule::default()
        );
        let raw = RawProbes {
            enabled: Some(false),
            every: Some("1h".into()),
            min_interval: Some("0s".into()),
            spacing: Some("250ms".into()),
        };
        let s = ProbeSchedule::from_raw(&raw, &mut p);
        assert!(p.is_empty(), "{p:?}");
        assert_eq!(
            (s.enabled, s.every, s.min_interval, s.spacing),
            (
                false,
                Duration::from_secs(3600),
                Duration::ZERO,
                Duration::from_millis(250)
            )
        );
        let raw = RawProbes {
            every: Some("30s".into()),
            spacing: Some("soon".into()),
            ..RawProbes::default()
        };
        ProbeSchedule::from_raw(&raw, &mut p);
        assert_eq!(p.len(), 2, "{p:?}");
        assert!(p[0].starts_with("probes.spacing: "), "{p:?}");
        assert_eq!(p[1], "probes.every: must be at least 1m");
    }
}
