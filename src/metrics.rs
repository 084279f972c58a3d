//! The one `Metrics` struct: a Prometheus registry and every metric the gateway exports (no I/O).
//!
//! Built once in `serve` and passed explicitly to the data plane, the control plane and the admin
//! listener. Names are `a2a_egress_<thing>_<unit>`; label values come only from enums and from
//! integration names in the validated config (unknown routes are labelled `""`), never from raw
//! paths or agent-supplied strings, so cardinality is bounded by the config.
//! Other components (the control plane's `ControlMetrics`, in `control::metrics`) register
//! their own metrics on [`Metrics::registry`] with the same naming rules and through the same
//! functions ([`counter`], [`counters`], [`gauge`], [`gauges`], [`float_gauges`], [`histograms`],
//! [`register`] for a collector of their own): one way to create and register a metric.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex, OnceLock};

use arc_swap::ArcSwap;
use prometheus::core::{Collector, MetricVec, MetricVecBuilder};
use prometheus::{
    Encoder, GaugeVec, Histogram, HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGauge,
    IntGaugeVec, Opts, Registry, TextEncoder,
};

use crate::state::{LockVerdict, ReasonCode, Snapshot, StaleCause};
use crate::translate::Dialect;

/// Upstream latency buckets, seconds: 1 ms .. 60 s. Twelve buckets per integration keeps the
/// series count small while covering both unary calls and long streams.
const LATENCY_BUCKETS: &[f64] = &[
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0, 60.0,
];

/// Gateway overhead buckets, seconds: 10 µs .. 100 ms. The gateway's own work per call is
/// tens to hundreds of microseconds; the top buckets catch a refresh-and-retry.
const OVERHEAD_BUCKETS: &[f64] = &[
    0.000_01, 0.000_025, 0.000_05, 0.000_1, 0.000_25, 0.000_5, 0.001, 0.002_5, 0.01, 0.1,
];

/// Values of the `status` label of `a2a_egress_integration_status` (the integration's state).
pub const STATUSES: [&str; 4] = ["pending", "usable", "unusable", "blocked"];

/// Values of the `check` label of `a2a_egress_probe_results_total`: the kind of claim a probe
/// checked (the claim's own argument, an extension URI or a media type, is never a label).
pub const PROBE_CHECKS: [&str; 5] = ["interface", "version", "extension", "streaming", "input"];

/// Values of the `result` label of `a2a_egress_probe_results_total`.
pub const PROBE_RESULTS: [&str; 3] = ["ok", "failed", "inconclusive"];

/// Values of the `phase` label of `a2a_egress_upstream_timeouts_total`: which deadline of a call to
/// an agent passed (`[limits] upstream_header_timeout`, `upstream_body_timeout`,
/// `upstream_idle_timeout`).
pub const UPSTREAM_TIMEOUT_PHASES: [&str; 3] = ["header", "body", "idle"];

/// The `cause` label values of `a2a_egress_downgrades_total` (the proxy's `DowngradeCause`,
/// whose tests hold the two equal), each created at 0 for every integration.
pub const DOWNGRADE_CAUSES: [&str; 4] = ["declared_off", "config_off", "override", "refused"];

/// The `limit` label values of `a2a_egress_overload_refusals_total` (the proxy's `Cap`).
pub const OVERLOAD_LIMITS: [&str; 2] = ["connections", "inflight"];

/// The `phase` label values of `a2a_egress_downstream_timeouts_total` (the proxy's `Phase`).
pub const DOWNSTREAM_TIMEOUT_PHASES: [&str; 4] = ["idle", "header", "body", "write"];

/// `result` values of `a2a_egress_card_signatures_total`: a new signature made for a card
/// content, or a card served unsigned because signing it failed.
pub const CARD_SIGNATURE_RESULTS: [&str; 2] = ["signed", "failed"];

/// `reason` values of `a2a_egress_telemetry_spans_dropped_total`: a span ended while the
/// export queue was full, or was in a batch the exporter could not deliver.
pub const SPANS_DROPPED_REASONS: [&str; 2] = ["queue_full", "export_failed"];

/// `reason` values of `a2a_egress_invalid_agent_answers_total`: what was wrong with an agent
/// answer that was not A2A (the labels of `proxy::answer::Invalid`, which a test holds equal).
pub const INVALID_ANSWER_REASONS: [&str; 9] = [
    "not_json",
    "truncated",
    "id_mismatch",
    "not_jsonrpc",
    "not_object",
    "encoding",
    "redirect",
    "untranslatable",
    "too_large",
];

/// Registers `metric` on `registry`. Every name and label is a constant of the code that
/// registers it, unique and valid, so neither step can fail at run time (the unit tests here and
/// in `control::metrics` register and render them all).
pub fn register<C>(registry: &Registry, metric: prometheus::Result<C>) -> C
where
    C: prometheus::core::Collector + Clone + 'static,
{
    let metric = metric.expect("valid metric");
    registry
        .register(Box::new(metric.clone()))
        .expect("metric names are unique");
    metric
}

/// A registered counter without labels.
pub fn counter(registry: &Registry, name: &str, help: &str) -> IntCounter {
    register(registry, IntCounter::new(name, help))
}

/// A registered counter family.
pub fn counters(registry: &Registry, name: &str, help: &str, labels: &[&str]) -> IntCounterVec {
    register(registry, IntCounterVec::new(Opts::new(name, help), labels))
}

/// A registered histogram family with `buckets` (seconds) by integration.
pub fn histograms(registry: &Registry, name: &str, help: &str, buckets: &[f64]) -> HistogramVec {
    let opts = HistogramOpts::new(name, help).buckets(buckets.to_vec());
    register(registry, HistogramVec::new(opts, &["integration"]))
}

/// `a2a_egress_upstream_duration_seconds{integration, protocol, binding}` (see
/// [`Metrics::upstream_duration`]).
fn upstream_histograms(registry: &Registry) -> HistogramVec {
    let opts = HistogramOpts::new(
        "a2a_egress_upstream_duration_seconds",
        "Time from sending a request upstream to its response header, by the A2A version and \
         the binding the call went out in.",
    )
    .buckets(LATENCY_BUCKETS.to_vec());
    register(
        registry,
        HistogramVec::new(opts, &["integration", "protocol", "binding"]),
    )
}

/// A registered gauge without labels.
pub fn gauge(registry: &Registry, name: &str, help: &str) -> IntGauge {
    register(registry, IntGauge::new(name, help))
}

/// A registered gauge family.
pub fn gauges(registry: &Registry, name: &str, help: &str, labels: &[&str]) -> IntGaugeVec {
    register(registry, IntGaugeVec::new(Opts::new(name, help), labels))
}

/// A registered family of gauges that hold fractions (seconds).
pub fn float_gauges(registry: &Registry, name: &str, help: &str, labels: &[&str]) -> GaugeVec {
    register(registry, GaugeVec::new(Opts::new(name, help), labels))
}

/// The evidence metrics: artifact schema mismatches and the gateway's own probe runs.
fn evidence_metrics(registry: &Registry) -> (IntCounterVec, IntCounterVec, IntGaugeVec) {
    (
        counters(
            registry,
            "a2a_egress_artifact_schema_mismatches_total",
            "Answers or stream events whose artifact data parts do not match the integration's artifact_schema.",
            &["integration"],
        ),
        counters(
            registry,
            "a2a_egress_probe_runs_total",
            "Probe runs the gateway made by itself, by trigger (review, scheduled).",
            &["integration", "trigger"],
        ),
        gauges(
            registry,
            "a2a_egress_probe_failed_claims",
            "Claims the integration's last probe run found false.",
            &["integration"],
        ),
    )
}

/// The content guard's findings: on requests (by action) and, with `[guard] inbound = "record"`,
/// on answers.
fn guard_metrics(registry: &Registry) -> (IntCounterVec, IntCounterVec, IntCounterVec) {
    (
        counters(
            registry,
            "a2a_egress_guard_findings_total",
            "Content guard findings in requests, by detector and the action taken (refuse, redact, record).",
            &["integration", "detector", "action"],
        ),
        counters(
            registry,
            "a2a_egress_guard_inbound_findings_total",
            "Content guard findings in agents' answers (guard inbound = \"record\"; answers are never changed).",
            &["integration", "detector"],
        ),
        counters(
            registry,
            "a2a_egress_guard_unscanned_bytes_total",
            "Bytes of request content the content guard did not scan (past its budget, or a textual file it could not decode) in requests it let leave (on_unscanned = \"allow\").",
            &["integration"],
        ),
    )
}

/// What the data plane finds wrong with agent answers: errors that mark a profile stale, answers
/// that are not A2A, headers over the cap.
fn answer_metrics(registry: &Registry) -> (IntCounterVec, IntCounterVec, IntCounterVec) {
    (
        counters(
            registry,
            "a2a_egress_stale_marks_total",
            "Agent errors that marked an integration's profile stale, by A2A error reason.",
            &["integration", "error"],
        ),
        counters(
            registry,
            "a2a_egress_invalid_agent_answers_total",
            "Agent answers or stream events that were not A2A answers, by what was wrong.",
            &["integration", "reason"],
        ),
        counters(
            registry,
            "a2a_egress_answer_headers_dropped_total",
            "Agent headers not passed to the caller because of the header count or size cap.",
            &["integration"],
        ),
    )
}

/// The per-integration state gauges: status, usable, lock verdict, credential missing.
fn state_gauges(registry: &Registry) -> (IntGaugeVec, IntGaugeVec, IntGaugeVec, IntGaugeVec) {
    let status = gauges(
        registry,
        "a2a_egress_integration_status",
        "1 for each integration's current status (pending, usable, unusable, blocked).",
        &["integration", "status"],
    );
    let usable = gauges(
        registry,
        "a2a_egress_profile_usable",
        "1 when the integration has a usable profile, else 0.",
        &["integration"],
    );
    let verdict = gauges(
        registry,
        "a2a_egress_lock_verdict",
        "1 for each integration's current verdict against its lockfile, 0 for the others.",
        &["integration", "verdict"],
    );
    let credential = gauges(
        registry,
        "a2a_egress_credential_missing",
        "1 while the integration's credential (env var or file) cannot be read: unusable with reason CREDENTIAL_MISSING.",
        &["integration"],
    );
    (status, usable, verdict, credential)
}

/// `a2a_egress_build_info`, set to 1 once: the crate version and the A2A protocol version it
/// speaks, constants of the build.
fn build_info(registry: &Registry) -> IntGaugeVec {
    let g = gauges(
        registry,
        "a2a_egress_build_info",
        "Always 1; the labels name the running build and the A2A protocol version it speaks.",
        &["version", "protocol"],
    );
    g.with_label_values(&[env!("CARGO_PKG_VERSION"), "1.0"])
        .set(1);
    g
}

/// Every metric of the gateway.
#[derive(Clone)]
pub struct Metrics {
    /// The registry everything is registered on (served at `/metrics`).
    pub registry: Registry,
    /// `a2a_egress_requests_total{integration, method, outcome}`: data-plane requests by outcome.
    pub requests: IntCounterVec,
    /// `a2a_egress_policy_denials_total{integration, reason}`: requests refused by policy.
    pub policy_denials: IntCounterVec,
    /// `a2a_egress_downgrades_total{integration, cause}`: streaming calls answered via `SendMessage`.
    pub downgrades: IntCounterVec,
    /// `a2a_egress_stale_marks_total{integration, error}`: agent errors that marked a profile stale.
    pub stale_marks: IntCounterVec,
    /// `a2a_egress_stale_marks_dropped_total`: stale marks not queued because the channel was full.
    pub stale_marks_dropped: IntCounter,
    /// `a2a_egress_invalid_agent_answers_total{integration, reason}`: agent answers (or stream
    /// events) that were not A2A answers, answered as InvalidAgentResponseError; `reason` is
    /// [`INVALID_ANSWER_REASONS`].
    pub invalid_answers: IntCounterVec,
    /// `a2a_egress_answer_headers_dropped_total{integration}`: allowlisted agent headers not
    /// passed to the caller because the answer's headers were over the count or size cap.
    pub answer_headers_dropped: IntCounterVec,
    /// `a2a_egress_upstream_duration_seconds{integration, protocol, binding}`: time to the
    /// upstream's response header; `protocol` is the A2A version the call went out in (`1.0`, or
    /// `0.3` for a translated call: [`crate::translate::Protocol`]), `binding` the agent's
    /// (`JSONRPC`, `HTTP+JSON`, `GRPC`), whatever the caller's.
    pub upstream_duration: HistogramVec,
    /// `a2a_egress_gateway_overhead_seconds{integration}`: the gateway's own time on a forwarded
    /// call: from the request's start until the upstream's answer was in hand, minus the time
    /// spent waiting on the upstream.
    pub overhead: HistogramVec,
    /// `a2a_egress_integration_status{integration, status}`: 1 for the integration's current
    /// status (`pending`, `usable`, `unusable`, `blocked`), 0 for the others.
    pub integration_status: IntGaugeVec,
    /// `a2a_egress_probe_results_total{integration, check, result}`: safe probe results by kind
    /// of claim ([`PROBE_CHECKS`]) and result ([`PROBE_RESULTS`]).
    pub probe_results: IntCounterVec,
    /// `a2a_egress_build_info{version, protocol}`: always 1; the labels say what is running.
    pub build_info: IntGaugeVec,
    /// `a2a_egress_profile_usable{integration}`: 1 when the integration has a usable profile.
    pub profile_usable: IntGaugeVec,
    /// `a2a_egress_lock_verdict{integration, verdict}`: 1 for the integration's current verdict
    /// against its lockfile (`unpinned`, `compatible`, `review`, `breaking`), 0 for the others.
    pub lock_verdict: IntGaugeVec,
    /// `a2a_egress_credential_missing{integration}`: 1 while the integration is unusable because
    /// its credential cannot be read (reason `CREDENTIAL_MISSING`), else 0.
    pub credential_missing: IntGaugeVec,
    /// `a2a_egress_inflight_requests`: data-plane requests in progress.
    pub inflight: IntGauge,
    /// `a2a_egress_downstream_connections`: open data-plane connections holding a slot of
    /// `[limits] max_connections`.
    pub downstream_connections: IntGauge,
    /// `a2a_egress_overload_refusals_total{limit}`: calls refused 503 because a cap was reached
    /// (`connections` or `inflight`).
    pub overload_refusals: IntCounterVec,
    /// `a2a_egress_downstream_timeouts_total{phase}`: data-plane connections cut off by a deadline
    /// (`idle` keep-alive, `header`, `body`).
    pub downstream_timeouts: IntCounterVec,
    /// `a2a_egress_upstream_timeouts_total{integration, phase}`: calls to an agent cut off by a
    /// deadline ([`UPSTREAM_TIMEOUT_PHASES`]), whether answered 504 or cut mid-answer.
    pub upstream_timeouts: IntCounterVec,
    /// `a2a_egress_admin_refusals_total{reason}`: admin requests refused (`UNAUTHENTICATED`,
    /// `REFRESH_RATE_LIMITED`).
    pub admin_refusals: IntCounterVec,
    /// `a2a_egress_artifact_schema_mismatches_total{integration}`: answers (or stream events)
    /// whose artifacts' data parts do not match the integration's `artifact_schema`.
    pub artifact_mismatches: IntCounterVec,
    /// `a2a_egress_guard_findings_total{integration, detector, action}`: the content guard's
    /// findings in requests (a refused request counts its refusing finding).
    pub guard_findings: IntCounterVec,
    /// `a2a_egress_guard_inbound_findings_total{integration, detector}`: findings in answers.
    pub guard_inbound_findings: IntCounterVec,
    /// `a2a_egress_guard_unscanned_bytes_total{integration}`: content that left unscanned.
    pub guard_unscanned_bytes: IntCounterVec,
    /// `a2a_egress_probe_runs_total{integration, trigger}`: probe runs the gateway made by
    /// itself (`review`, `scheduled`).
    pub probe_runs: IntCounterVec,
    /// `a2a_egress_probe_failed_claims{integration}`: claims the last probe run found false.
    pub probe_failed: IntGaugeVec,
    /// `a2a_egress_card_signatures_total{result}`: the gateway's signatures on effective cards,
    /// once per distinct card content ([`CARD_SIGNATURE_RESULTS`]).
    pub card_signatures: IntCounterVec,
    /// `a2a_egress_telemetry_spans_dropped_total{reason}`: spans that never reached the
    /// collector ([`SPANS_DROPPED_REASONS`]), with `[telemetry]` on.
    pub spans_dropped: IntCounterVec,
    /// The integrations of the last snapshot observed: one missing from the next one left the
    /// config, and its series go (else a `blocked` gauge of a removed integration alerts forever).
    known: Arc<Mutex<BTreeSet<String>>>,
    /// The request path's series of each known integration, resolved once (see [`Series`]).
    series: Arc<ArcSwap<BTreeMap<String, Arc<Series>>>>,
    /// The same for requests no configured integration answers (label `""`).
    unrouted: Arc<Series>,
}

/// Positions of label values in the bounded sets the request path counts by: the A2A method and
/// the outcome. Each integration's `Series` keeps one slot per pair.
pub const METHOD_SLOTS: usize = 14;
/// See [`METHOD_SLOTS`].
pub const OUTCOME_SLOTS: usize = 6;

/// A label value of a bounded set and its position in that set (below [`METHOD_SLOTS`] or
/// [`OUTCOME_SLOTS`]; a value past the end is counted without the cache).
#[derive(Debug, Clone, Copy)]
pub struct Label {
    /// Position in the set.
    pub slot: usize,
    /// The label value.
    pub value: &'static str,
}

/// One integration's request-path series, each resolved from its family on first use and then
/// held, so counting a call neither hashes label values nor takes the family's lock nor
/// allocates. A series is created on its first use, as before, so `/metrics` shows the same
/// series; the handles go with the integration when it leaves the config.
struct Series {
    name: String,
    /// By method, then outcome; a method's row is allocated on its first call (most
    /// integrations see a few methods).
    requests: [OnceLock<Box<Outcomes>>; METHOD_SLOTS],
    overhead: OnceLock<Histogram>,
    /// By protocol and binding ([`Dialect::slot`]).
    upstream: [OnceLock<Histogram>; 6],
}

type Outcomes = [OnceLock<IntCounter>; OUTCOME_SLOTS];

impl Series {
    fn new(name: &str) -> Arc<Series> {
        Arc::new(Series {
            name: name.to_owned(),
            requests: Default::default(),
            overhead: OnceLock::new(),
            upstream: Default::default(),
        })
    }
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Metrics")
    }
}

/// The data plane's load: requests in flight, connections held, and what the caps and deadlines
/// cut off.
fn load_metrics(registry: &Registry) -> (IntGauge, IntGauge, IntCounterVec, IntCounterVec) {
    let inflight = gauge(
        registry,
        "a2a_egress_inflight_requests",
        "Data-plane requests in progress.",
    );
    let connections = gauge(
        registry,
        "a2a_egress_downstream_connections",
        "Open data-plane connections holding a connection slot.",
    );
    let refusals = counters(
        registry,
        "a2a_egress_overload_refusals_total",
        "Calls refused with 503 because a connection or in-flight cap was reached.",
        &["limit"],
    );
    let timeouts = counters(
        registry,
        "a2a_egress_downstream_timeouts_total",
        "Data-plane connections cut off by the idle, header, body or write deadline.",
        &["phase"],
    );
    // At 0 from the start, so `rate()`/`increase()` see the first refusal or cut-off.
    for limit in OVERLOAD_LIMITS {
        refusals.with_label_values(&[limit]);
    }
    for phase in DOWNSTREAM_TIMEOUT_PHASES {
        timeouts.with_label_values(&[phase]);
    }
    (inflight, connections, refusals, timeouts)
}

/// `a2a_egress_upstream_timeouts_total` (its series are created per integration, by
/// [`Metrics::observe_snapshot`]).
fn upstream_timeouts(registry: &Registry) -> IntCounterVec {
    counters(
        registry,
        "a2a_egress_upstream_timeouts_total",
        "Calls to an agent cut off by the answer-head, body or idle deadline.",
        &["integration", "phase"],
    )
}

/// `a2a_egress_telemetry_spans_dropped_total`, every series present from the start (at 0).
fn spans_dropped(registry: &Registry) -> IntCounterVec {
    let c = counters(
        registry,
        "a2a_egress_telemetry_spans_dropped_total",
        "Trace spans that never reached the collector: the export queue was full, or the export failed.",
        &["reason"],
    );
    for reason in SPANS_DROPPED_REASONS {
        c.with_label_values(&[reason]);
    }
    c
}

/// `a2a_egress_card_signatures_total`, every series present from the start (at 0).
fn card_signatures(registry: &Registry) -> IntCounterVec {
    let c = counters(
        registry,
        "a2a_egress_card_signatures_total",
        "Effective cards the gateway signed (once per distinct content), or served unsigned because signing failed.",
        &["result"],
    );
    for result in CARD_SIGNATURE_RESULTS {
        c.with_label_values(&[result]);
    }
    c
}

/// `registry` with the standard `process_*` families (`process_cpu_seconds_total`,
/// `process_resident_memory_bytes`, `process_open_fds`, `process_max_fds`,
/// `process_start_time_seconds`, …), read from `/proc/self` when scraped. Off Linux there are
/// none (the collector exists only there).
fn with_process_metrics(registry: Registry) -> Registry {
    #[cfg(target_os = "linux")]
    registry
        .register(Box::new(
            prometheus::process_collector::ProcessCollector::for_self(),
        ))
        .expect("process_* names are unique");
    registry
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    /// Creates the registry and registers every data-plane metric.
    pub fn new() -> Self {
        let registry = Registry::new();
        let (artifact_mismatches, probe_runs, probe_failed) = evidence_metrics(&registry);
        let (guard_findings, guard_inbound_findings, guard_unscanned_bytes) =
            guard_metrics(&registry);
        let (stale_marks, invalid_answers, answer_headers_dropped) = answer_metrics(&registry);
        let (integration_status, profile_usable, lock_verdict, credential_missing) =
            state_gauges(&registry);
        let (inflight, downstream_connections, overload_refusals, downstream_timeouts) =
            load_metrics(&registry);
        Metrics {
            requests: counters(
                &registry,
                "a2a_egress_requests_total",
                "Data-plane requests by integration, A2A method and outcome.",
                &["integration", "method", "outcome"],
            ),
            policy_denials: counters(
                &registry,
                "a2a_egress_policy_denials_total",
                "Requests refused by gateway policy, by reason.",
                &["integration", "reason"],
            ),
            downgrades: counters(
                &registry,
                "a2a_egress_downgrades_total",
                "Streaming calls sent as SendMessage and answered as one SSE event, by cause.",
                &["integration", "cause"],
            ),
            stale_marks,
            stale_marks_dropped: counter(
                &registry,
                "a2a_egress_stale_marks_dropped_total",
                "Stale marks dropped because the control-plane channel was full.",
            ),
            invalid_answers,
            answer_headers_dropped,
            upstream_duration: upstream_histograms(&registry),
            overhead: histograms(
                &registry,
                "a2a_egress_gateway_overhead_seconds",
                "Gateway time on a forwarded call, not counting the wait for the upstream.",
                OVERHEAD_BUCKETS,
            ),
            integration_status,
            probe_results: counters(
                &registry,
                "a2a_egress_probe_results_total",
                "Safe probe results by integration, kind of claim and result.",
                &["integration", "check", "result"],
            ),
            build_info: build_info(&registry),
            profile_usable,
            lock_verdict,
            credential_missing,
            inflight,
            downstream_connections,
            overload_refusals,
            downstream_timeouts,
            upstream_timeouts: upstream_timeouts(&registry),
            admin_refusals: counters(
                &registry,
                "a2a_egress_admin_refusals_total",
                "Admin requests refused: missing or wrong token, or a forced refresh too soon.",
                &["reason"],
            ),
            artifact_mismatches,
            guard_findings,
            guard_inbound_findings,
            guard_unscanned_bytes,
            probe_runs,
            probe_failed,
            card_signatures: card_signatures(&registry),
            spans_dropped: spans_dropped(&registry),
            registry: with_process_metrics(registry),
            known: Arc::default(),
            series: Arc::default(),
            unrouted: Series::new(""),
        }
    }

    /// The cached series of integration `name` (`""`: none), when it is known.
    fn series_of(&self, name: &str, with: impl FnOnce(&Series)) -> bool {
        if name.is_empty() {
            with(&self.unrouted);
            return true;
        }
        match self.series.load().get(name) {
            Some(s) => {
                with(s);
                true
            }
            None => false,
        }
    }

    /// Counts one finished data-plane call of `integration` (`""` when the route named none) in
    /// `a2a_egress_requests_total` and, for a forwarded call, observes the gateway's own time on
    /// it (`a2a_egress_gateway_overhead_seconds`): one look-up of the cached series for both.
    pub fn record_call(
        &self,
        integration: &str,
        method: Label,
        outcome: Label,
        overhead: Option<f64>,
    ) {
        let seen = self.series_of(integration, |s| {
            let row = (s.requests.get(method.slot)).map(|r| r.get_or_init(Box::default));
            match row.and_then(|r| r.get(outcome.slot)) {
                Some(slot) => slot
                    .get_or_init(|| {
                        let labels = [s.name.as_str(), method.value, outcome.value];
                        self.requests.with_label_values(&labels)
                    })
                    .inc(),
                None => self.count_uncached(integration, method, outcome),
            }
            if let Some(seconds) = overhead {
                let h = (s.overhead).get_or_init(|| self.overhead.with_label_values(&[&s.name]));
                h.observe(seconds);
            }
        });
        if !seen {
            // Not (or no longer) in the snapshot the metrics saw: resolved each time.
            self.count_uncached(integration, method, outcome);
            if let Some(seconds) = overhead {
                (self.overhead.with_label_values(&[integration])).observe(seconds);
            }
        }
    }

    fn count_uncached(&self, integration: &str, method: Label, outcome: Label) {
        let labels = [integration, method.value, outcome.value];
        self.requests.with_label_values(&labels).inc();
    }

    /// Observes the time to an upstream's response header for `integration`
    /// (`a2a_egress_upstream_duration_seconds`).
    pub fn observe_upstream(&self, integration: &str, dialect: Dialect, seconds: f64) {
        let (protocol, binding) = (dialect.protocol.as_str(), dialect.binding.as_str());
        let seen = self.series_of(integration, |s| {
            if let Some(cell) = s.upstream.get(dialect.slot()) {
                let h = cell.get_or_init(|| {
                    (self.upstream_duration).with_label_values(&[&s.name, protocol, binding])
                });
                h.observe(seconds);
            }
        });
        if !seen {
            (self
                .upstream_duration
                .with_label_values(&[integration, protocol, binding]))
            .observe(seconds);
        }
    }

    /// Drops every data-plane series labelled with integration `name` (it left the config),
    /// the request path's handles on them first.
    pub fn remove_integration(&self, name: &str) {
        if self.series.load().contains_key(name) {
            self.series.rcu(|m| {
                let mut m = BTreeMap::clone(m);
                m.remove(name);
                m
            });
        }
        drop_series(&self.requests, name);
        drop_series(&self.policy_denials, name);
        drop_series(&self.downgrades, name);
        drop_series(&self.stale_marks, name);
        drop_series(&self.invalid_answers, name);
        drop_series(&self.answer_headers_dropped, name);
        drop_series(&self.upstream_duration, name);
        drop_series(&self.overhead, name);
        drop_series(&self.integration_status, name);
        drop_series(&self.probe_results, name);
        drop_series(&self.profile_usable, name);
        drop_series(&self.lock_verdict, name);
        drop_series(&self.credential_missing, name);
        drop_series(&self.artifact_mismatches, name);
        drop_series(&self.guard_findings, name);
        drop_series(&self.guard_inbound_findings, name);
        drop_series(&self.guard_unscanned_bytes, name);
        drop_series(&self.probe_runs, name);
        drop_series(&self.probe_failed, name);
        drop_series(&self.upstream_timeouts, name);
    }

    /// Names known before `snapshot` and missing from it; `snapshot`'s become the known ones,
    /// each with its request-path series (kept for the names known before).
    fn departed(&self, snapshot: &Snapshot) -> Vec<String> {
        let now: BTreeSet<String> = snapshot.integrations.keys().cloned().collect();
        let mut known = self.known.lock().unwrap_or_else(|e| e.into_inner());
        let gone = known.difference(&now).cloned().collect();
        let old = self.series.load();
        if old.len() != now.len() || !now.iter().all(|n| old.contains_key(n)) {
            let series = (now.iter())
                .map(|n| {
                    let s = old.get(n).cloned().unwrap_or_else(|| Series::new(n));
                    (n.clone(), s)
                })
                .collect();
            self.series.store(Arc::new(series));
        }
        *known = now;
        gone
    }

    /// The Prometheus text exposition of every registered metric.
    pub fn render(&self) -> String {
        let mut buf = Vec::new();
        let enc = TextEncoder::new();
        // Encoding into a Vec cannot fail for well-formed metrics.
        let _ = enc.encode(&self.registry.gather(), &mut buf);
        String::from_utf8(buf).unwrap_or_default()
    }

    /// Sets the usable, status and lock-verdict gauges of every integration from a snapshot, and
    /// creates its counters that alerts read with `rate()`/`increase()` (stale marks, invalid
    /// answers, probes, timeouts, downgrades) at 0, so dashboards and alerts see zeros, not gaps.
    /// Integrations the previous snapshot had and this one lacks lose their series.
    pub fn observe_snapshot(&self, snapshot: &Snapshot) {
        for gone in self.departed(snapshot) {
            self.remove_integration(&gone);
        }
        for (name, s) in &snapshot.integrations {
            let name = name.as_str();
            self.profile_usable
                .with_label_values(&[name])
                .set(i64::from(s.usable().is_some()));
            let status = s.status.as_str();
            for st in STATUSES {
                self.integration_status
                    .with_label_values(&[name, st])
                    .set(i64::from(status == st));
            }
            for v in LockVerdict::ALL {
                self.lock_verdict
                    .with_label_values(&[name, v.as_str()])
                    .set(i64::from(s.lock.verdict == v));
            }
            let missing = s.status.code() == Some(ReasonCode::CredentialMissing);
            self.credential_missing
                .with_label_values(&[name])
                .set(i64::from(missing));
            for c in StaleCause::ALL {
                self.stale_marks.with_label_values(&[name, c.as_str()]);
            }
            for r in INVALID_ANSWER_REASONS {
                self.invalid_answers.with_label_values(&[name, r]);
            }
            self.answer_headers_dropped.with_label_values(&[name]);
            for check in PROBE_CHECKS {
                for result in PROBE_RESULTS {
                    self.probe_results.with_label_values(&[name, check, result]);
                }
            }
            // The mismatch series exists (at 0) for every integration that names a schema.
            if s.integration.artifacts.is_some() {
                self.artifact_mismatches
                    .with_label_values(&[name])
                    .inc_by(0);
            }
            // Every finding a guard policy can count exists at 0, as its alert reads it.
            if let Some(g) = &s.integration.guard {
                for (detector, action) in g.outcomes() {
                    self.guard_findings
                        .with_label_values(&[name, detector, action.as_str()]);
                }
                for detector in g.inbound_detectors() {
                    self.guard_inbound_findings
                        .with_label_values(&[name, detector]);
                }
                self.guard_unscanned_bytes.with_label_values(&[name]);
            }
            // Probe series exist before the first run (no run yet: nothing failed).
            for t in crate::state::ProbeTrigger::ALL {
                self.probe_runs.with_label_values(&[name, t.as_str()]);
            }
            self.probe_failed.with_label_values(&[name]);
            for phase in UPSTREAM_TIMEOUT_PHASES {
                self.upstream_timeouts.with_label_values(&[name, phase]);
            }
            for cause in DOWNGRADE_CAUSES {
                self.downgrades.with_label_values(&[name, cause]);
            }
        }
    }
}

/// Removes every series of `vec` whose `integration` label is `name`, whatever its other labels.
fn drop_series<T: MetricVecBuilder>(vec: &MetricVec<T>, name: &str) {
    for family in vec.collect() {
        for m in family.get_metric() {
            let labels: HashMap<&str, &str> = (m.get_label().iter())
                .map(|l| (l.name(), l.value()))
                .collect();
            if labels.get("integration") == Some(&name) {
                let _ = vec.remove(&labels);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_convention_and_render() {
        let m = Metrics::new();
        m.requests
            .with_label_values(&["echo", "SendMessage", "ok"])
            .inc();
        m.upstream_duration
            .with_label_values(&["echo", "1.0", "JSONRPC"])
            .observe(0.01);
        let text = m.render();
        assert!(
            text.contains(&format!(
                "a2a_egress_build_info{{protocol=\"1.0\",version=\"{}\"}} 1",
                env!("CARGO_PKG_VERSION")
            )),
            "{text}"
        );
        assert!(text.contains("a2a_egress_requests_total{integration=\"echo\",method=\"SendMessage\",outcome=\"ok\"} 1"), "{text}");
        // Ours are `a2a_egress_*`; the only others are the standard `process_*` families.
        let mut process = 0;
        for fam in m.registry.gather() {
            if fam.name().starts_with("process_") {
                process += 1;
                continue;
            }
            assert!(fam.name().starts_with("a2a_egress_"), "{}", fam.name());
        }
        assert!(process >= 5, "process_* families: {process}\n{text}");
    }

    fn snapshot(names: &[&str]) -> Snapshot {
        let text: String = (names.iter())
            .map(|n| {
                format!(
                    "[[integrations]]\nname = \"{n}\"\ncard = \"https://a.example/c\"\n\
                     origins = [\"https://a.example\"]\nskills = [\"echo\"]\n\
                     data_classes = [\"internal\"]\n"
                )
            })
            .collect();
        let c = crate::config::Config::parse(&text, std::path::Path::new("g.toml")).unwrap();
        Snapshot::pending(&c.integrations)
    }

    #[test]
    fn an_integration_that_left_the_config_leaves_no_series_behind() {
        let m = Metrics::new();
        m.observe_snapshot(&snapshot(&["gone", "kept"]));
        for n in ["gone", "kept"] {
            m.requests
                .with_label_values(&[n, "SendMessage", "ok"])
                .inc();
            m.policy_denials
                .with_label_values(&[n, "POLICY_DENIED"])
                .inc();
            m.downgrades.with_label_values(&[n, "agent_refused"]).inc();
            m.upstream_duration
                .with_label_values(&[n, "0.3", "GRPC"])
                .observe(0.1);
            m.overhead.with_label_values(&[n]).observe(0.1);
            m.artifact_mismatches.with_label_values(&[n]).inc();
            m.upstream_timeouts.with_label_values(&[n, "body"]).inc();
        }
        let zero = "a2a_egress_upstream_timeouts_total{integration=\"kept\",phase=\"idle\"} 0";
        assert!(
            m.render().contains(zero),
            "created at 0 for every integration"
        );
        assert!(m.render().contains("integration=\"gone\""));
        m.observe_snapshot(&snapshot(&["kept"]));
        let text = m.render();
        let left: Vec<&str> = (text.lines())
            .filter(|l| l.contains("integration=\"gone\""))
            .collect();
        assert!(
            left.is_empty(),
            "series of a removed integration: {left:#?}"
        );
        assert!(text.contains("a2a_egress_integration_status{integration=\"kept\""));
        assert!(text.contains("a2a_egress_requests_total{integration=\"kept\""));
    }

    const SEND: Label = Label {
        slot: 0,
        value: "SendMessage",
    };
    const OK: Label = Label {
        slot: 0,
        value: "ok",
    };

    fn requests(m: &Metrics, name: &str) -> Option<u64> {
        let labels = [name, "SendMessage", "ok"];
        let text = m.render();
        let line = format!(
            "a2a_egress_requests_total{{integration=\"{}\",method=\"{}\",outcome=\"{}\"}} ",
            labels[0], labels[1], labels[2]
        );
        (text.lines())
            .find_map(|l| l.strip_prefix(&line))
            .map(|v| v.parse().unwrap())
    }

    #[test]
    fn cached_series_count_like_the_families_and_go_with_their_integration() {
        let m = Metrics::new();
        m.observe_snapshot(&snapshot(&["a", "b"]));
        for _ in 0..3 {
            m.record_call("a", SEND, OK, None);
        }
        m.record_call("", SEND, OK, None);
        // A name the metrics have not seen in a snapshot, and a slot past the cache's end.
        m.record_call("unseen", SEND, OK, None);
        let far = Label {
            slot: METHOD_SLOTS,
            value: "SendMessage",
        };
        m.record_call("b", far, OK, None);
        m.record_call("a", SEND, far, Some(0.001));
        use crate::profile::Binding;
        use crate::translate::Protocol;
        let dialect = |protocol, binding| Dialect { protocol, binding };
        m.observe_upstream("a", dialect(Protocol::V1_0, Binding::JsonRpc), 0.002);
        m.observe_upstream("a", dialect(Protocol::V0_3, Binding::HttpJson), 0.002);
        m.observe_upstream("a", dialect(Protocol::V1_0, Binding::Grpc), 0.002);
        assert_eq!(requests(&m, "a"), Some(3));
        let far_outcome = "a2a_egress_requests_total{integration=\"a\",method=\"SendMessage\",outcome=\"SendMessage\"} 1";
        assert!(m.render().contains(far_outcome));
        assert_eq!(requests(&m, ""), Some(1));
        assert_eq!(requests(&m, "unseen"), Some(1));
        assert_eq!(requests(&m, "b"), Some(1));
        let text = m.render();
        for family in [
            "a2a_egress_gateway_overhead_seconds_count{integration=\"a\"} 1",
            "a2a_egress_upstream_duration_seconds_count{binding=\"JSONRPC\",integration=\"a\",protocol=\"1.0\"} 1",
            "a2a_egress_upstream_duration_seconds_count{binding=\"HTTP+JSON\",integration=\"a\",protocol=\"0.3\"} 1",
            "a2a_egress_upstream_duration_seconds_count{binding=\"GRPC\",integration=\"a\",protocol=\"1.0\"} 1",
        ] {
            assert!(text.contains(family), "{family}: {text}");
        }
        // No series before its first use: the cache creates nothing by itself.
        assert!(!text.contains("a2a_egress_gateway_overhead_seconds_count{integration=\"b\""));

        // "a" leaves: no series, and the handles went with it, so when it comes back its
        // series starts again from zero and is exported (a kept handle would count into a
        // series the family no longer has).
        m.observe_snapshot(&snapshot(&["b"]));
        assert_eq!(requests(&m, "a"), None);
        assert!(!m.render().contains("integration=\"a\""));
        m.observe_snapshot(&snapshot(&["a", "b"]));
        m.record_call("a", SEND, OK, Some(0.001));
        assert_eq!(requests(&m, "a"), Some(1));
        assert!(
            (m.render()).contains("a2a_egress_gateway_overhead_seconds_count{integration=\"a\"} 1")
        );
    }
}
