//! The `[runtime]` table: how many threads the data plane runs on and whether work moves between
//! them (raw serde model and validation; no I/O). Read at start only.
//!
//! With work stealing, the data plane, the control plane and the admin listener share one
//! work-stealing tokio runtime of `worker_threads` workers. Without it, the data plane runs on
//! `worker_threads` single-threaded runtimes (pingora's no-steal runtime: each connection stays
//! on the thread it was given) and the control plane and the admin listener on one more
//! single-threaded runtime of their own — except on one thread, where there is nothing to steal
//! and everything shares one multi-thread runtime of one worker, as with work stealing, so
//! nothing of the gateway's competes with the data plane for the one CPU. `TOKIO_WORKER_THREADS`, when set,
//! overrides `worker_threads`; without either, `serve` takes the CPUs the process may use
//! (`types::cpus`).

use std::time::Duration;

use serde::Deserialize;

use crate::types::duration::parse_duration;

/// Most worker threads accepted.
pub const MAX_WORKER_THREADS: usize = 1024;
/// Whether work stealing is on when `[runtime] work_stealing` is not set.
pub const DEFAULT_WORK_STEALING: bool = true;
/// The pace `[runtime] keep_warm` suggests when it is turned on (it is off unless set): with a
/// busy process sharing the CPU, a waker every 0.5 ms held p99 at 4.5–5.8 ms where one every
/// 1 ms gave 8.8–9.0 ms (pinned, 10,000 req/s, access log off). Off by default because on a
/// CPU the gateway has to itself the waker only preempts the data plane: in the quiet
/// 2026-12-02 sitting p99 at half load was 6.9 ms without it and 24–28 ms with it.
pub const SUGGESTED_KEEP_WARM: Duration = Duration::from_micros(500);
/// Shortest `keep_warm` accepted: below it the thread nearly spins while calls are in flight.
pub const MIN_KEEP_WARM: Duration = Duration::from_micros(100);
/// Longest `keep_warm` accepted: beyond it the CPU's sleeps are already as long as the wake-ups
/// it meant to avoid.
pub const MAX_KEEP_WARM: Duration = Duration::from_millis(10);

/// The validated `[runtime]` table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Runtime {
    /// Threads serving the data plane (1..=[`MAX_WORKER_THREADS`]); `None`: as many as the CPUs
    /// the process may use (its affinity and cgroup CPU quota, rounded down, at least 1), which
    /// `serve` reads at start.
    pub worker_threads: Option<usize>,
    /// One work-stealing runtime for everything (true), or one single-threaded runtime per
    /// data-plane thread plus one for the control plane (false, on more than one thread; on one,
    /// the same as true).
    pub work_stealing: bool,
    /// While calls are in flight, a thread wakes this often (`None`: off, the default, or `"0s"`).
    pub keep_warm: Option<Duration>,
}

impl Default for Runtime {
    fn default() -> Self {
        Runtime {
            worker_threads: None,
            work_stealing: DEFAULT_WORK_STEALING,
            keep_warm: None,
        }
    }
}

/// Where the data plane's thread count came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ThreadsFrom {
    /// The `TOKIO_WORKER_THREADS` variable.
    Env,
    /// `[runtime] worker_threads`.
    Config,
    /// The CPUs the process may use (its affinity and cgroup CPU quota).
    Cpus,
}

impl ThreadsFrom {
    /// The name `serve`'s first line and `/readyz` give it.
    pub fn as_str(self) -> &'static str {
        match self {
            ThreadsFrom::Env => "TOKIO_WORKER_THREADS",
            ThreadsFrom::Config => "config",
            ThreadsFrom::Cpus => "cpus",
        }
    }
}

/// How many threads `serve` runs the data plane on and why, decided once at start (a changed
/// CPU quota or affinity takes effect at the next start).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Threads {
    /// The data plane's threads.
    pub worker_threads: usize,
    /// Where the count came from.
    pub from: ThreadsFrom,
    /// One sentence: the variable, the key, or the CPU limits read.
    pub why: String,
    /// `[runtime] work_stealing`.
    pub work_stealing: bool,
}

impl Threads {
    /// Whether the control plane and the admin listener run on a thread of their own (without
    /// work stealing, on more than one data-plane thread); otherwise everything shares one
    /// multi-thread runtime, so on one CPU nothing else of the gateway's competes with the data
    /// plane, and a blocking file read still hands its worker's tasks over.
    pub fn control_plane_apart(&self) -> bool {
        !self.work_stealing && self.worker_threads > 1
    }
}

/// `[runtime]` as written; every key is optional.
#[derive(Debug, Clone, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawRuntime {
    /// Data-plane threads (default: the CPUs the process may use; `TOKIO_WORKER_THREADS`
    /// overrides it).
    pub worker_threads: Option<usize>,
    /// Work stealing between the data plane's threads (default true).
    pub work_stealing: Option<bool>,
    /// How often a thread wakes while calls are in flight (default off; "0s": off).
    pub keep_warm: Option<String>,
}

/// Checks `[runtime]`; a thread count of 0 or over [`MAX_WORKER_THREADS`] is a problem.
pub fn runtime(raw: &RawRuntime, problems: &mut Vec<String>) -> Runtime {
    let d = Runtime::default();
    let worker_threads = match raw.worker_threads {
        None => d.worker_threads,
        Some(n) if (1..=MAX_WORKER_THREADS).contains(&n) => Some(n),
        Some(n) => {
            problems.push(format!(
                "runtime.worker_threads: {n} is not between 1 and {MAX_WORKER_THREADS}"
            ));
            d.worker_threads
        }
    };
    let keep_warm = match raw.keep_warm.as_deref().map(parse_duration) {
        None => d.keep_warm,
        Some(Ok(t)) if t.is_zero() => None,
        Some(Ok(t)) if (MIN_KEEP_WARM..=MAX_KEEP_WARM).contains(&t) => Some(t),
        Some(Ok(_)) => {
            problems.push(format!(
                "runtime.keep_warm: between {}us and {}ms (\"{}us\" is the suggested pace, \"0s\" off)",
                MIN_KEEP_WARM.as_micros(),
                MAX_KEEP_WARM.as_millis(),
                SUGGESTED_KEEP_WARM.as_micros()
            ));
            d.keep_warm
        }
        Some(Err(e)) => {
            problems.push(format!("runtime.keep_warm: {e}"));
            d.keep_warm
        }
    };
    Runtime {
        worker_threads,
        work_stealing: raw.work_stealing.unwrap_or(d.work_stealing),
        keep_warm,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_apply_to_an_absent_table() {
        let mut problems = Vec::new();
        assert_eq!(
            runtime(&RawRuntime::default(), &mut problems),
            Runtime::default()
        );
        assert!(problems.is_empty());
    }

    #[test]
    fn thread_counts_out_of_range_are_named() {
        for n in [0, MAX_WORKER_THREADS + 1] {
            let mut problems = Vec::new();
            let raw = RawRuntime {
                worker_threads: Some(n),
                work_stealing: Some(false),
                keep_warm: None,
            };
            let r = runtime(&raw, &mut problems);
            assert_eq!(problems.len(), 1, "{problems:?}");
            assert!(
                problems[0].starts_with("runtime.worker_threads"),
                "{problems:?}"
            );
            assert_eq!(r.worker_threads, None);
            assert!(!r.work_stealing);
        }
        let mut problems = Vec::new();
        let raw = RawRuntime {
            worker_threads: Some(2),
            work_stealing: None,
            keep_warm: None,
        };
        assert_eq!(runtime(&raw, &mut problems).worker_threads, Some(2));
        assert!(problems.is_empty());
    }

    #[test]
    fn keep_warm_is_off_unless_set_and_is_bounded() {
        let with = |v: &str| {
            let mut problems = Vec::new();
            let raw = RawRuntime {
                keep_warm: Some(v.to_string()),
                ..RawRuntime::default()
            };
            (runtime(&raw, &mut problems).keep_warm, problems)
        };
        assert_eq!(Runtime::default().keep_warm, None);
        assert_eq!(with("500us").0, Some(SUGGESTED_KEEP_WARM));
        assert_eq!(with("0s"), (None, vec![]));
        assert_eq!(with("2ms").0, Some(Duration::from_millis(2)));
        assert_eq!(with("250us").0, Some(Duration::from_micros(250)));
        let (kept, problems) = with("1s");
        assert_eq!(kept, None);
        assert!(
            problems[0].starts_with("runtime.keep_warm: between 100us and 10ms"),
            "{problems:?}"
        );
        let (kept, problems) = with("1us");
        assert_eq!(kept, None);
        assert!(
            problems[0].starts_with("runtime.keep_warm: between"),
            "{problems:?}"
        );
        let (_, problems) = with("soon");
        assert!(
            problems[0].starts_with("runtime.keep_warm:"),
            "{problems:?}"
        );
    }
}
