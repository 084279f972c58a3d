//! When the gateway probes by itself (pure): after an integration reaches a new `review`
//! verdict, and on a slow jittered schedule, never more often than `[probes] min_interval` per
//! integration nor `[probes] spacing` gateway-wide. The runner ([`super::runner`]) asks
//! [`Scheduler::next`] what to do and reports each run with [`Scheduler::ran`].

use std::collections::BTreeMap;
use std::hash::{Hash as _, Hasher as _};
use std::time::{Duration, SystemTime};

use tokio::time::Instant;

use crate::config::ProbeSchedule;
use crate::state::{LockVerdict, ProbeTrigger, Snapshot};

/// What the runner should do now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Next {
    /// Probe this integration now.
    Run {
        /// The integration.
        name: String,
        /// Why.
        trigger: ProbeTrigger,
    },
    /// Nothing before this instant.
    At(Instant),
    /// No integration to probe.
    Idle,
}

/// One integration's schedule.
#[derive(Debug, Clone)]
struct Entry {
    /// When the next scheduled run is due.
    due: Instant,
    /// A review verdict was reached and not probed yet.
    review: bool,
    /// When the last review verdict seen was reached (a new one has another time).
    review_seen: Option<SystemTime>,
    /// When the last run started.
    last_run: Option<Instant>,
    /// Runs so far (varies the jitter).
    runs: u64,
    /// This integration's period (`[integrations.probe] every`, else `[probes] every`).
    every: Duration,
}

/// The probe schedule of every integration.
#[derive(Debug, Clone)]
pub struct Scheduler {
    settings: ProbeSchedule,
    entries: BTreeMap<String, Entry>,
    last_run: Option<Instant>,
}

impl Scheduler {
    /// An empty schedule.
    pub fn new(settings: ProbeSchedule) -> Scheduler {
        Scheduler {
            settings,
            entries: BTreeMap::new(),
            last_run: None,
        }
    }

    /// Takes in `snapshot`: a new integration gets its first scheduled run within the first
    /// tenth of `every` (spread by name), a removed one is dropped, and a review verdict reached
    /// since the last look queues a run.
    pub fn observe(&mut self, snapshot: &Snapshot, now: Instant) {
        self.entries
            .retain(|name, _| snapshot.integrations.contains_key(name));
        for (name, state) in &snapshot.integrations {
            let every = state
                .integration
                .lock
                .probe
                .as_ref()
                .and_then(|p| p.every)
                .unwrap_or(self.settings.every);
            let e = self.entries.entry(name.clone()).or_insert_with(|| Entry {
                due: now + every.mul_f64(unit(name, u64::MAX) / 10.0),
                review: false,
                review_seen: None,
                last_run: None,
                runs: 0,
                every,
            });
            e.every = every;
            if state.lock.verdict == LockVerdict::Review && e.review_seen != Some(state.lock.at) {
                e.review_seen = Some(state.lock.at);
                e.review = true;
            }
        }
    }

    /// The run to start at `now`, or when to ask again: reviews first, then due runs, each held
    /// back by the per-integration and the gateway-wide rate limits.
    pub fn next(&self, now: Instant) -> Next {
        let global = self
            .last_run
            .map_or(now, |t| (t + self.settings.spacing).max(now));
        let best = self
            .entries
            .iter()
            .map(|(name, e)| {
                let want = if e.review { now } else { e.due };
                let own = e
                    .last_run
                    .map_or(want, |t| want.max(t + self.settings.min_interval));
                (own.max(global), !e.review, name)
            })
            .min();
        match best {
            None => Next::Idle,
            Some((at, _, name)) if at <= now => Next::Run {
                name: name.clone(),
                trigger: match self.entries.get(name).is_some_and(|e| e.review) {
                    true => ProbeTrigger::Review,
                    false => ProbeTrigger::Scheduled,
                },
            },
            Some((at, _, _)) => Next::At(at),
        }
    }

    /// Records that `name` was probed (or found nothing to probe) at `now`: its review is done
    /// and its next scheduled run is its period later, jittered by up to a tenth either way.
    pub fn ran(&mut self, name: &str, now: Instant) {
        self.last_run = Some(now);
        if let Some(e) = self.entries.get_mut(name) {
            e.review = false;
            e.last_run = Some(now);
            e.runs += 1;
            let jitter = (unit(name, e.runs) - 0.5) / 5.0;
            e.due = now + e.every.mul_f64(1.0 + jitter);
        }
    }
}

/// A number in [0, 1) from `name` and `n`, the same every time (spreads integrations' runs
/// without a random source).
fn unit(name: &str, n: u64) -> f64 {
    let mut h = std::hash::DefaultHasher::new();
    name.hash(&mut h);
    n.hash(&mut h);
    (h.finish() >> 11) as f64 / (1u64 << 53) as f64
}

/// Longest a runner sleeps before looking at the snapshot again (a review verdict is noticed
/// within this).
pub const POLL: Duration = Duration::from_secs(1);

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::state::{IntegrationState, LockState};

    fn settings() -> ProbeSchedule {
        ProbeSchedule {
            enabled: true,
            every: Duration::from_secs(6 * 3600),
            min_interval: Duration::from_secs(300),
            spacing: Duration::from_secs(10),
        }
    }

    fn snapshot(names: &[(&str, LockVerdict, u64)]) -> Snapshot {
        snapshot_with(names, "")
    }

    fn snapshot_with(names: &[(&str, LockVerdict, u64)], extra: &str) -> Snapshot {
        let integrations = names
            .iter()
            .map(|(n, verdict, at)| {
                let text = format!(
                    "[[integrations]]\nname = \"{n}\"\ncard = \"https://a.example/c\"\norigins = [\"https://a.example\"]\nskills = [\"s\"]\ndata_classes = [\"p\"]\n{extra}\n"
                );
                let c = crate::config::Config::parse(&text, std::path::Path::new("g.toml")).unwrap();
                let mut s = IntegrationState::pending(Arc::new(c.integrations[0].clone()));
                s.lock = LockState {
                    verdict: *verdict,
                    ..LockState::unpinned(SystemTime::UNIX_EPOCH + Duration::from_secs(*at))
                };
                ((*n).to_owned(), Arc::new(s))
            })
            .collect();
        Snapshot {
            version: 1,
            integrations,
        }
    }

    fn run(name: &str, trigger: ProbeTrigger) -> Next {
        Next::Run {
            name: name.into(),
            trigger,
        }
    }

    #[test]
    fn the_first_scheduled_run_comes_within_a_tenth_of_the_period_then_every_period_jittered() {
        let t0 = Instant::now();
        let mut s = Scheduler::new(settings());
        s.observe(&snapshot(&[("a", LockVerdict::Unpinned, 0)]), t0);
        let Next::At(first) = s.next(t0) else {
            panic!("{:?}", s.next(t0))
        };
        assert!(first - t0 <= settings().every / 10, "{:?}", first - t0);
        assert_eq!(s.next(first), run("a", ProbeTrigger::Scheduled));
        s.ran("a", first);
        let Next::At(second) = s.next(first) else {
            panic!()
        };
        let gap = (second - first).as_secs_f64() / settings().every.as_secs_f64();
        assert!((0.9..=1.1).contains(&gap), "{gap}");
        assert_eq!(s.next(second - Duration::from_secs(1)), Next::At(second));
        assert_eq!(Scheduler::new(settings()).next(t0), Next::Idle);
    }

    #[test]
    fn a_new_review_verdict_runs_at_once_and_only_once() {
        let t0 = Instant::now();
        let mut s = Scheduler::new(settings());
        s.observe(&snapshot(&[("a", LockVerdict::Compatible, 1)]), t0);
        assert!(matches!(s.next(t0), Next::At(_)));
        s.observe(&snapshot(&[("a", LockVerdict::Review, 2)]), t0);
        assert_eq!(s.next(t0), run("a", ProbeTrigger::Review));
        s.ran("a", t0);
        // The same verdict seen again is not a new review.
        s.observe(&snapshot(&[("a", LockVerdict::Review, 2)]), t0);
        assert!(matches!(s.next(t0), Next::At(_)));
        // Another review (reached at another time) is, once the per-integration limit allows.
        let later = t0 + Duration::from_secs(60);
        s.observe(&snapshot(&[("a", LockVerdict::Review, 3)]), later);
        assert_eq!(s.next(later), Next::At(t0 + settings().min_interval));
        assert_eq!(
            s.next(t0 + settings().min_interval),
            run("a", ProbeTrigger::Review)
        );
    }

    #[test]
    fn runs_are_spaced_gateway_wide_and_reviews_go_first() {
        let t0 = Instant::now();
        let mut s = Scheduler::new(settings());
        let snap = snapshot(&[
            ("a", LockVerdict::Review, 1),
            ("b", LockVerdict::Review, 1),
            ("c", LockVerdict::Unpinned, 1),
        ]);
        s.observe(&snap, t0);
        // The reviews come first, in name order, one per spacing.
        assert_eq!(s.next(t0), run("a", ProbeTrigger::Review));
        s.ran("a", t0);
        assert_eq!(s.next(t0), Next::At(t0 + settings().spacing));
        assert_eq!(
            s.next(t0 + settings().spacing),
            run("b", ProbeTrigger::Review)
        );
        s.ran("b", t0 + settings().spacing);
        // c's first scheduled run is within a tenth of the period; a and b ran just now.
        let soon = t0 + settings().every / 10 + Duration::from_secs(60);
        assert_eq!(s.next(soon), run("c", ProbeTrigger::Scheduled));
    }

    #[test]
    fn an_integration_may_set_its_own_period() {
        let t0 = Instant::now();
        let mut s = Scheduler::new(settings());
        let hour = Duration::from_secs(3600);
        let snap = snapshot_with(
            &[("a", LockVerdict::Unpinned, 0)],
            "[integrations.probe]\nskill = \"s\"\nevery = \"1h\"",
        );
        s.observe(&snap, t0);
        let Next::At(first) = s.next(t0) else {
            panic!()
        };
        assert!(first - t0 <= hour / 10, "{:?}", first - t0);
        s.ran("a", first);
        let Next::At(second) = s.next(first) else {
            panic!()
        };
        let gap = (second - first).as_secs_f64() / hour.as_secs_f64();
        assert!((0.9..=1.1).contains(&gap), "{gap}");
    }

    #[test]
    fn removed_integrations_leave_the_schedule() {
        let t0 = Instant::now();
        let mut s = Scheduler::new(settings());
        s.observe(&snapshot(&[("a", LockVerdict::Review, 1)]), t0);
        s.observe(&snapshot(&[]), t0);
        assert_eq!(s.next(t0), Next::Idle);
    }
}
