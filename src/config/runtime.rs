//! The `[runtime]` table: how many threads the data plane runs on and whether work moves between
//! them (raw serde model and validation; no I/O). Read at start only.
//!
//! With work stealing, the data plane, the control plane and the admin listener share one
//! work-stealing tokio runtime of `worker_threads` workers. Without it, the data plane runs on
//! `worker_threads` single-threaded runtimes (pingora's no-steal runtime: each connection stays
//! on the thread it was given) and the control plane and the admin listener on one more
//! single-threaded runtime of their own. `TOKIO_WORKER_THREADS`, when set, overrides
//! `worker_threads`.

use serde::Deserialize;

/// Data-plane threads when neither `[runtime] worker_threads` nor `TOKIO_WORKER_THREADS` is set:
/// two, even on a process pinned to one core. Measured side by side (README, performance): on a
/// quiet machine fewer threads cost fewer instructions and less memory (peak RSS under load 22.8,
/// 27.2 and 33.6 MB with one, two and four), but with one, every call in flight stalls whenever
/// the core is taken away (p50 several times higher on a loaded machine); two kept four's p50.
pub const DEFAULT_WORKER_THREADS: usize = 2;
/// Most worker threads accepted.
pub const MAX_WORKER_THREADS: usize = 1024;
/// Whether work stealing is on when `[runtime] work_stealing` is not set.
pub const DEFAULT_WORK_STEALING: bool = true;

/// The validated `[runtime]` table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Runtime {
    /// Threads serving the data plane (1..=[`MAX_WORKER_THREADS`]).
    pub worker_threads: usize,
    /// One work-stealing runtime for everything (true), or one single-threaded runtime per
    /// data-plane thread plus one for the control plane (false).
    pub work_stealing: bool,
}

impl Default for Runtime {
    fn default() -> Self {
        Runtime {
            worker_threads: DEFAULT_WORKER_THREADS,
            work_stealing: DEFAULT_WORK_STEALING,
        }
    }
}

/// `[runtime]` as written; every key is optional.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawRuntime {
    /// Data-plane threads (default 2; `TOKIO_WORKER_THREADS` overrides it).
    pub worker_threads: Option<usize>,
    /// Work stealing between the data plane's threads (default true).
    pub work_stealing: Option<bool>,
}

/// Checks `[runtime]`; a thread count of 0 or over [`MAX_WORKER_THREADS`] is a problem.
pub fn runtime(raw: &RawRuntime, problems: &mut Vec<String>) -> Runtime {
    let d = Runtime::default();
    let worker_threads = match raw.worker_threads {
        None => d.worker_threads,
        Some(n) if (1..=MAX_WORKER_THREADS).contains(&n) => n,
        Some(n) => {
            problems.push(format!(
                "runtime.worker_threads: {n} is not between 1 and {MAX_WORKER_THREADS}"
            ));
            d.worker_threads
        }
    };
    Runtime {
        worker_threads,
        work_stealing: raw.work_stealing.unwrap_or(d.work_stealing),
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
            };
            let r = runtime(&raw, &mut problems);
            assert_eq!(problems.len(), 1, "{problems:?}");
            assert!(
                problems[0].starts_with("runtime.worker_threads"),
                "{problems:?}"
            );
            assert_eq!(r.worker_threads, DEFAULT_WORKER_THREADS);
            assert!(!r.work_stealing);
        }
        let mut problems = Vec::new();
        let raw = RawRuntime {
            worker_threads: Some(2),
            work_stealing: None,
        };
        assert_eq!(runtime(&raw, &mut problems).worker_threads, 2);
        assert!(problems.is_empty());
    }
}
