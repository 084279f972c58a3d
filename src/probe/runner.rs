//! The gateway's own probe runs (I/O: a tokio task, calls through [`Connect`]): it watches the
//! snapshot, asks the [`Scheduler`] what is due, probes one integration at a time, and stores
//! the run in the integration's state (shown on `/readyz`, read by [`crate::state::claims`])
//! and in metrics. Never on the request path: the data plane only ever reads what a run stored.
//!
//! The transport comes from whoever starts the runner ([`Connect`]); the server gives it the
//! control plane's SSRF-checked card client, so probes reach only an integration's approved
//! origins, with its credential.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use tokio::time::Instant;

use super::schedule::{Next, POLL, Scheduler};
use super::{Outcome, ProbeResult, Transport, plan, run};
use crate::config::ProbeSchedule;
use crate::metrics::Metrics;
use crate::state::{IntegrationState, ProbeRecord, ProbeRun, ProbeTrigger, ProbeVerdict, Store};

/// Longest one probe run may take (its probes run one after another).
pub const RUN_DEADLINE: Duration = Duration::from_secs(120);

/// No transport can be built to an integration's agent (its origins or credential).
#[derive(Debug, thiserror::Error)]
#[error("no transport to the agent: {0}")]
pub struct NoTransport(pub String);

impl NoTransport {
    /// Bounded label for logs.
    pub fn kind(&self) -> &'static str {
        "no_transport"
    }
}

/// Builds the transport probes of one integration use.
pub trait Connect: Send + Sync {
    /// A transport to `state`'s agent: its approved origins, its credential.
    fn transport(&self, state: &IntegrationState) -> Result<Box<dyn Transport>, NoTransport>;
}

/// What a runner needs.
pub struct Runner {
    /// The runtime state: read for what to probe, written with each run.
    pub store: Arc<Store>,
    /// Where runs and results are counted.
    pub metrics: Metrics,
    /// Transports to the agents.
    pub connect: Arc<dyn Connect>,
    /// Schedule and rate limits.
    pub settings: ProbeSchedule,
}

impl Runner {
    /// Runs until the task is dropped.
    pub async fn run(self) {
        let mut schedule = Scheduler::new(self.settings.clone());
        loop {
            let now = Instant::now();
            schedule.observe(&self.store.load(), now);
            match schedule.next(now) {
                Next::Run { name, trigger } => {
                    self.probe(&name, trigger).await;
                    schedule.ran(&name, Instant::now());
                }
                Next::At(at) => tokio::time::sleep_until(at.min(now + POLL)).await,
                Next::Idle => tokio::time::sleep(POLL).await,
            }
        }
    }

    /// Probes integration `name` once, if its state has something to probe, and stores the run.
    pub async fn probe(&self, name: &str, trigger: ProbeTrigger) {
        let snapshot = self.store.load();
        let Some(state) = snapshot.get(name) else {
            return;
        };
        let Some((target, checks)) = plan(state) else {
            return;
        };
        let transport = match self.connect.transport(state) {
            Ok(t) => t,
            Err(e) => {
                tracing::warn!(integration = name, error = %e, kind = e.kind(), "probes not run");
                return;
            }
        };
        let at = SystemTime::now();
        let results = tokio::time::timeout(RUN_DEADLINE, run(&target, &checks, transport.as_ref()))
            .await
            .unwrap_or_default();
        let run = ProbeRun {
            trigger,
            at,
            results: results.iter().map(record).collect(),
        };
        self.count(name, &run, &results);
        let run = Arc::new(run);
        self.store.update_integration(name, |cur| IntegrationState {
            probes: Some(run.clone()),
            ..cur.clone()
        });
    }

    fn count(&self, name: &str, run: &ProbeRun, results: &[ProbeResult]) {
        let m = &self.metrics;
        m.probe_runs
            .with_label_values(&[name, run.trigger.as_str()])
            .inc();
        for r in results {
            m.probe_results
                .with_label_values(&[name, r.check.kind(), r.outcome.as_str()])
                .inc();
        }
        let failed = run.failed();
        m.probe_failed
            .with_label_values(&[name])
            .set(i64::try_from(failed).unwrap_or(i64::MAX));
        let lines: Vec<String> = run
            .results
            .iter()
            .map(|r| format!("{}: {}", r.claim, r.result.as_str()))
            .collect();
        let lines = lines.join("; ");
        let trigger = run.trigger.as_str();
        if failed > 0 {
            tracing::warn!(integration = name, trigger, failed, results = %lines, "probes: a claim of the card does not hold");
        } else {
            tracing::info!(integration = name, trigger, results = %lines, "probes ran");
        }
    }
}

/// A probe's result as the state keeps it.
fn record(r: &ProbeResult) -> ProbeRecord {
    let (verdict, detail) = match &r.outcome {
        Outcome::Ok(d) => (ProbeVerdict::Ok, d),
        Outcome::Failed(d) => (ProbeVerdict::Failed, d),
        Outcome::Inconclusive(d) => (ProbeVerdict::Inconclusive, d),
    };
    ProbeRecord::new(r.check.claim(), verdict, detail, r.at)
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use bytes::Bytes;

    use super::*;
    use crate::probe::{Request, Response, TransportError};
    use crate::profile::Binding;
    use crate::state::{LockState, LockVerdict, Snapshot};

    /// An agent that answers every probe at once: TaskNotFound at 1.0, VersionNotSupported at any
    /// other version (so `interface` and `version` hold and the required extension does not).
    struct Agent(Arc<AtomicUsize>);

    #[async_trait::async_trait]
    impl Transport for Agent {
        async fn send(&self, r: Request) -> Result<Response, TransportError> {
            self.0.fetch_add(1, Ordering::SeqCst);
            let v = r.headers.get("a2a-version").and_then(|v| v.to_str().ok());
            let (code, reason) = match v {
                Some("1.0") => (-32001, "TASK_NOT_FOUND"),
                _ => (-32009, "VERSION_NOT_SUPPORTED"),
            };
            let body = serde_json::json!({"jsonrpc": "2.0", "id": "x", "error": {"code": code, "message": "m",
                "data": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": reason, "domain": "a2a-protocol.org"}]}});
            Ok(Response {
                status: 200,
                content_type: Some("application/json".into()),
                body: Bytes::from(body.to_string()),
            })
        }
    }

    struct Connector(Arc<AtomicUsize>);

    impl Connect for Connector {
        fn transport(&self, _: &IntegrationState) -> Result<Box<dyn Transport>, NoTransport> {
            Ok(Box::new(Agent(self.0.clone())))
        }
    }

    fn with_verdict(store: &Store, verdict: LockVerdict) {
        store.update_integration("p", |cur| IntegrationState {
            lock: LockState {
                verdict,
                ..LockState::unpinned(SystemTime::now())
            },
            ..cur.clone()
        });
    }

    fn runs(m: &Metrics, trigger: &str) -> u64 {
        m.probe_runs.with_label_values(&["p", trigger]).get()
    }

    /// Paused time: the schedule's hours pass in milliseconds, and nothing depends on how fast
    /// the machine is.
    #[tokio::test(start_paused = true)]
    async fn the_runner_probes_on_schedule_and_after_a_review_and_stores_the_evidence() {
        let state = crate::probe::tests::state("", Binding::JsonRpc, false);
        let store = Arc::new(Store::new(Snapshot::default().with(state)));
        let calls = Arc::new(AtomicUsize::new(0));
        let metrics = Metrics::new();
        let settings = ProbeSchedule::default();
        let runner = Runner {
            store: store.clone(),
            metrics: metrics.clone(),
            connect: Arc::new(Connector(calls.clone())),
            settings: settings.clone(),
        };
        let task = tokio::spawn(runner.run());

        // Nothing at start; the first scheduled run within a tenth of `every`.
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert_eq!(calls.load(Ordering::SeqCst), 0);
        tokio::time::sleep(settings.every / 10).await;
        assert_eq!(runs(&metrics, "scheduled"), 1);
        let planned = calls.load(Ordering::SeqCst);
        assert_eq!(planned, 3, "interface, version, the required extension");
        let run = store.load().get("p").unwrap().probes.clone().unwrap();
        assert_eq!(run.trigger, ProbeTrigger::Scheduled);
        let results: Vec<(&str, ProbeVerdict)> = run
            .results
            .iter()
            .map(|r| (r.claim.as_str(), r.result))
            .collect();
        assert_eq!(results[0], ("interface", ProbeVerdict::Ok));
        assert_eq!(results[1], ("version", ProbeVerdict::Ok));
        assert_eq!(results[2].1, ProbeVerdict::Failed);
        assert_eq!(metrics.probe_failed.with_label_values(&["p"]).get(), 1);
        assert_eq!(
            metrics
                .probe_results
                .with_label_values(&["p", "extension", "failed"])
                .get(),
            1
        );

        // A review verdict: probed again once the per-integration limit allows, and only once.
        with_verdict(&store, LockVerdict::Review);
        tokio::time::sleep(settings.min_interval).await;
        assert_eq!(runs(&metrics, "review"), 1);
        tokio::time::sleep(settings.min_interval * 2).await;
        assert_eq!(runs(&metrics, "review"), 1);
        assert_eq!(runs(&metrics, "scheduled"), 1);
        // A new snapshot with the same verdict (a refresh that changed nothing the lock judges)
        // is not a new review: not probed again.
        store.update_integration("p", |cur| cur.clone());
        tokio::time::sleep(settings.min_interval * 2).await;
        assert_eq!(runs(&metrics, "review"), 1);
        assert_eq!(
            store
                .load()
                .get("p")
                .unwrap()
                .probes
                .as_ref()
                .unwrap()
                .trigger,
            ProbeTrigger::Review
        );

        // Then the slow schedule: about `every` later, not before.
        tokio::time::sleep(settings.every.mul_f64(0.8)).await;
        assert_eq!(runs(&metrics, "scheduled"), 1);
        tokio::time::sleep(settings.every.mul_f64(0.4)).await;
        assert_eq!(runs(&metrics, "scheduled"), 2);
        assert_eq!(calls.load(Ordering::SeqCst), 3 * planned);
        task.abort();
    }

    #[tokio::test(start_paused = true)]
    async fn nothing_is_probed_without_a_usable_profile() {
        let state = crate::probe::tests::state("", Binding::JsonRpc, false);
        let pending = IntegrationState::pending(state.integration.clone());
        let store = Arc::new(Store::new(Snapshot::default().with(pending)));
        let calls = Arc::new(AtomicUsize::new(0));
        let runner = Runner {
            store,
            metrics: Metrics::new(),
            connect: Arc::new(Connector(calls.clone())),
            settings: ProbeSchedule::default(),
        };
        runner.probe("p", ProbeTrigger::Scheduled).await;
        runner.probe("absent", ProbeTrigger::Scheduled).await;
        assert_eq!(calls.load(Ordering::SeqCst), 0);
    }
}
