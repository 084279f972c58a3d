//! The control plane's metrics, registered on the one shared [`crate::metrics::Metrics`] registry
//! (no I/O). Label values are integration names from the validated config and bounded enums.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use prometheus::core::{Collector, Desc};
use prometheus::proto::MetricFamily;
use prometheus::{GaugeVec, IntCounter, IntCounterVec, IntGauge, IntGaugeVec, Opts};

use crate::control::fetch::FetchError;
use crate::control::schedule::RefreshResult;
use crate::metrics::{counter, counters, float_gauges, gauge, gauges, register};

/// `kind` of a refresh that failed because the card failed validation.
pub const INVALID_CARD: &str = "invalid_card";
/// `kind` of a refresh worker's panic.
pub const WORKER_PANIC: &str = "worker_panic";

/// Every `kind` of `a2a_egress_refresh_failures_total`: the fetch's, then the two above.
pub fn failure_kinds() -> impl Iterator<Item = &'static str> {
    FetchError::KINDS
        .into_iter()
        .chain([INVALID_CARD, WORKER_PANIC])
}

/// Metrics of refresh, swaps, stale marks and config reloads.
#[derive(Clone)]
pub struct ControlMetrics {
    /// `a2a_egress_refresh_total{integration, result}`: refreshes by result
    /// (`changed`, `unchanged`, `not_modified`, `failed`).
    pub refreshes: IntCounterVec,
    /// `a2a_egress_refresh_failures_total{integration, kind}`: failed refreshes by bounded kind.
    pub failures: IntCounterVec,
    /// `a2a_egress_profile_swaps_total{integration}`: new integration states stored in the snapshot.
    pub swaps: IntCounterVec,
    /// `a2a_egress_stale_marks_debounced_total{integration}`: stale marks merged into a pending refresh.
    pub stale_debounced: IntCounterVec,
    /// `a2a_egress_stale_refreshes_total{integration}`: refreshes triggered by stale marks.
    pub stale_refreshes: IntCounterVec,
    /// `a2a_egress_config_reloads_total{result}`: config reloads (`ok`, `refused`).
    pub reloads: IntCounterVec,
    /// `a2a_egress_config_refused`: 1 while the config file on disk is refused (the previous
    /// config keeps serving), 0 once a file is applied. A counter of refusals moves once per
    /// change of the file, so an alert on it clears while the bad file is still there.
    pub config_refused: IntGauge,
    /// `a2a_egress_config_reload_in_progress`: 1 while a config file is being read and validated
    /// (on a blocking thread, beside the calls the data plane serves), 0 otherwise.
    pub reload_in_progress: IntGauge,
    /// `a2a_egress_profile_degraded{integration}`: 1 while the last refresh failed.
    pub degraded: IntGaugeVec,
    /// `a2a_egress_worker_panics_total{integration}`: panics caught in an integration's refresh
    /// worker (each one restarts the worker after a backoff).
    pub worker_panics: IntCounterVec,
    /// `a2a_egress_state_write_failures_total`: last-known-good cards that could not be saved.
    pub state_write_failures: IntCounter,
    /// `a2a_egress_refresh_interval_seconds{integration}`: the periodic refresh interval the last
    /// successful fetch set (its `max-age` within `[refresh] min`/`max`, else `default`; before
    /// jitter), and `[refresh] default` from the worker's start until a fetch succeeds. Alerts compare the profile's age with it.
    pub interval: GaugeVec,
    /// Source of `a2a_egress_profile_age_seconds{integration}`, computed at scrape time.
    pub ages: ProfileAges,
}

impl std::fmt::Debug for ControlMetrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ControlMetrics")
    }
}

impl ControlMetrics {
    /// Creates and registers every control-plane metric on `registry`, the way every metric is
    /// registered ([`crate::metrics::counters`] and its siblings).
    pub fn register(registry: &prometheus::Registry) -> Self {
        let m = ControlMetrics {
            refreshes: counters(
                registry,
                "a2a_egress_refresh_total",
                "Card refreshes by integration and result (changed, unchanged, not_modified, failed).",
                &["integration", "result"],
            ),
            failures: counters(
                registry,
                "a2a_egress_refresh_failures_total",
                "Failed card refreshes by integration and kind of failure.",
                &["integration", "kind"],
            ),
            swaps: counters(
                registry,
                "a2a_egress_profile_swaps_total",
                "New integration states stored in the runtime snapshot.",
                &["integration"],
            ),
            stale_debounced: counters(
                registry,
                "a2a_egress_stale_marks_debounced_total",
                "Stale marks merged into an already pending refresh.",
                &["integration"],
            ),
            stale_refreshes: counters(
                registry,
                "a2a_egress_stale_refreshes_total",
                "Refreshes triggered by stale marks from the data plane.",
                &["integration"],
            ),
            reloads: counters(
                registry,
                "a2a_egress_config_reloads_total",
                "Configuration reloads by result (ok, refused).",
                &["result"],
            ),
            config_refused: gauge(
                registry,
                "a2a_egress_config_refused",
                "1 while the configuration file on disk is refused and the previous one serves.",
            ),
            reload_in_progress: gauge(
                registry,
                "a2a_egress_config_reload_in_progress",
                "1 while a configuration file is being read and validated, 0 otherwise.",
            ),
            degraded: gauges(
                registry,
                "a2a_egress_profile_degraded",
                "1 while an integration's last refresh failed and its last good profile is served.",
                &["integration"],
            ),
            worker_panics: counters(
                registry,
                "a2a_egress_worker_panics_total",
                "Panics caught in an integration's refresh worker; each restarts it after a backoff.",
                &["integration"],
            ),
            state_write_failures: counter(
                registry,
                "a2a_egress_state_write_failures_total",
                "Last-known-good cards that could not be written to the state directory.",
            ),
            interval: float_gauges(
                registry,
                "a2a_egress_refresh_interval_seconds",
                "The integration's periodic refresh interval after its last successful fetch, before jitter.",
                &["integration"],
            ),
            ages: register(registry, ProfileAges::new()),
        };
        for r in ReloadResult::ALL {
            m.reloads.with_label_values(&[r.as_str()]);
        }
        m
    }

    /// Pre-creates an integration's series so dashboards see zeros, not gaps.
    /// The refresh interval starts at `default_interval` (`[refresh] default`) so an alert on the
    /// profile's age has a period to compare with even when no fetch has succeeded since start
    /// (an agent down while the last-good card serves); a restarted worker keeps the value the
    /// last fetch set.
    pub fn init_integration(&self, name: &str, default_interval: std::time::Duration) {
        let interval = self.interval.with_label_values(&[name]);
        if interval.get() == 0.0 {
            interval.set(default_interval.as_secs_f64());
        }
        for r in RefreshResult::ALL {
            self.refreshes.with_label_values(&[name, r.as_str()]);
        }
        // Alerts take `increase()` of these: a series born at 1 would hide the first failure.
        for kind in failure_kinds() {
            self.failures.with_label_values(&[name, kind]);
        }
        self.swaps.with_label_values(&[name]);
        self.stale_debounced.with_label_values(&[name]);
        self.stale_refreshes.with_label_values(&[name]);
        self.worker_panics.with_label_values(&[name]);
        self.degraded.with_label_values(&[name]).set(0);
    }

    /// Drops an integration's series (it left the config).
    pub fn remove_integration(&self, name: &str) {
        for r in RefreshResult::ALL {
            let _ = self.refreshes.remove_label_values(&[name, r.as_str()]);
        }
        for kind in failure_kinds() {
            let _ = self.failures.remove_label_values(&[name, kind]);
        }
        let _ = self.swaps.remove_label_values(&[name]);
        let _ = self.stale_debounced.remove_label_values(&[name]);
        let _ = self.stale_refreshes.remove_label_values(&[name]);
        let _ = self.worker_panics.remove_label_values(&[name]);
        let _ = self.degraded.remove_label_values(&[name]);
        let _ = self.interval.remove_label_values(&[name]);
        self.ages.remove(name);
    }

    /// The counter value for one integration and result (tests and the admin API).
    pub fn refresh_count(&self, name: &str, result: RefreshResult) -> u64 {
        self.refreshes
            .with_label_values(&[name, result.as_str()])
            .get()
    }
}

/// `a2a_egress_profile_age_seconds{integration}`: seconds since the card behind the current profile
/// was last confirmed by a fetch (200 or 304). Computed when scraped, so it is exact without a timer.
#[derive(Clone)]
pub struct ProfileAges {
    desc: Desc,
    validated: Arc<Mutex<BTreeMap<String, SystemTime>>>,
}

impl ProfileAges {
    fn new() -> Result<Self, prometheus::Error> {
        Ok(ProfileAges {
            desc: Desc::new(
                "a2a_egress_profile_age_seconds".into(),
                "Seconds since the integration's card was last confirmed by a fetch.".into(),
                vec!["integration".into()],
                Default::default(),
            )?,
            validated: Arc::default(),
        })
    }

    /// Records that `name`'s card was confirmed at `at`.
    pub fn set(&self, name: &str, at: SystemTime) {
        self.lock().insert(name.to_owned(), at);
    }

    /// Forgets `name`.
    pub fn remove(&self, name: &str) {
        self.lock().remove(name);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, SystemTime>> {
        self.validated.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Collector for ProfileAges {
    fn desc(&self) -> Vec<&Desc> {
        vec![&self.desc]
    }

    fn collect(&self) -> Vec<MetricFamily> {
        let now = SystemTime::now();
        let gauges = IntGaugeVec::new(
            Opts::new(self.desc.fq_name.clone(), self.desc.help.clone()),
            &["integration"],
        )
        .expect("same descriptor as registered");
        for (name, at) in self.lock().iter() {
            let age = now.duration_since(*at).map_or(0, |d| d.as_secs());
            gauges
                .with_label_values(&[name.as_str()])
                .set(i64::try_from(age).unwrap_or(i64::MAX));
        }
        gauges.collect()
    }
}

/// The result of a config reload, as counted in `a2a_egress_config_reloads_total{result}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ReloadResult {
    /// The new config was applied.
    Ok,
    /// The new config was refused; the previous one keeps serving.
    Refused,
}

impl ReloadResult {
    /// All results (for pre-registering metric series).
    pub const ALL: [ReloadResult; 2] = [ReloadResult::Ok, ReloadResult::Refused];

    /// Bounded metric label.
    pub fn as_str(self) -> &'static str {
        match self {
            ReloadResult::Ok => "ok",
            ReloadResult::Refused => "refused",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// The families' names, help texts, types and label sets as `/metrics` shows them (alert
    /// rules and dashboards under `deploy/` name them).
    #[test]
    fn families_render_as_dashboards_know_them() {
        let registry = prometheus::Registry::new();
        let m = ControlMetrics::register(&registry);
        m.init_integration("a", Duration::from_secs(300));
        m.failures.with_label_values(&["a", "fetch"]).inc();
        m.ages.set("a", SystemTime::now());
        let mut out = Vec::new();
        prometheus::Encoder::encode(
            &prometheus::TextEncoder::new(),
            &registry.gather(),
            &mut out,
        )
        .expect("renders");
        let text = String::from_utf8(out).expect("UTF-8");
        // Every failure kind exists (at 0 but the one counted); the shape below lists only that one.
        for kind in failure_kinds() {
            let series =
                format!("a2a_egress_refresh_failures_total{{integration=\"a\",kind=\"{kind}\"}}");
            assert!(text.contains(&series), "{series}\n{text}");
        }
        let shape: Vec<String> = text
            .lines()
            .filter(|l| {
                !l.starts_with("a2a_egress_refresh_failures_total{") || l.contains("kind=\"fetch\"")
            })
            .map(|l| match l.rsplit_once(' ') {
                Some((series, _)) if !l.starts_with('#') => series.to_owned(),
                _ => l.to_owned(),
            })
            .collect();
        let want = [
            "# HELP a2a_egress_config_refused 1 while the configuration file on disk is refused and the previous one serves.",
            "# TYPE a2a_egress_config_refused gauge",
            "a2a_egress_config_refused",
            "# HELP a2a_egress_config_reload_in_progress 1 while a configuration file is being read and validated, 0 otherwise.",
            "# TYPE a2a_egress_config_reload_in_progress gauge",
            "a2a_egress_config_reload_in_progress",
            "# HELP a2a_egress_config_reloads_total Configuration reloads by result (ok, refused).",
            "# TYPE a2a_egress_config_reloads_total counter",
            "a2a_egress_config_reloads_total{result=\"ok\"}",
            "a2a_egress_config_reloads_total{result=\"refused\"}",
            "# HELP a2a_egress_profile_age_seconds Seconds since the integration's card was last confirmed by a fetch.",
            "# TYPE a2a_egress_profile_age_seconds gauge",
            "a2a_egress_profile_age_seconds{integration=\"a\"}",
            "# HELP a2a_egress_profile_degraded 1 while an integration's last refresh failed and its last good profile is served.",
            "# TYPE a2a_egress_profile_degraded gauge",
            "a2a_egress_profile_degraded{integration=\"a\"}",
            "# HELP a2a_egress_profile_swaps_total New integration states stored in the runtime snapshot.",
            "# TYPE a2a_egress_profile_swaps_total counter",
            "a2a_egress_profile_swaps_total{integration=\"a\"}",
            "# HELP a2a_egress_refresh_failures_total Failed card refreshes by integration and kind of failure.",
            "# TYPE a2a_egress_refresh_failures_total counter",
            "a2a_egress_refresh_failures_total{integration=\"a\",kind=\"fetch\"}",
            "# HELP a2a_egress_refresh_interval_seconds The integration's periodic refresh interval after its last successful fetch, before jitter.",
            "# TYPE a2a_egress_refresh_interval_seconds gauge",
            "a2a_egress_refresh_interval_seconds{integration=\"a\"}",
            "# HELP a2a_egress_refresh_total Card refreshes by integration and result (changed, unchanged, not_modified, failed).",
            "# TYPE a2a_egress_refresh_total counter",
        ];
        assert_eq!(shape.get(..want.len()), Some(&want.map(String::from)[..]));
        for family in [
            "a2a_egress_stale_marks_debounced_total",
            "a2a_egress_stale_refreshes_total",
            "a2a_egress_state_write_failures_total",
            "a2a_egress_worker_panics_total",
        ] {
            assert!(
                shape.contains(&format!("# TYPE {family} counter")),
                "{family}"
            );
        }
    }

    #[test]
    fn a_started_worker_has_a_refresh_interval_before_its_first_successful_fetch() {
        let m = ControlMetrics::register(&prometheus::Registry::new());
        m.init_integration("a", Duration::from_secs(300));
        let interval = || m.interval.with_label_values(&["a"]).get();
        assert_eq!(
            interval(),
            300.0,
            "the configured default, until a fetch says otherwise"
        );
        m.interval.with_label_values(&["a"]).set(60.0);
        m.init_integration("a", Duration::from_secs(300));
        assert_eq!(
            interval(),
            60.0,
            "a restarted worker keeps what the last fetch set"
        );
    }
}
