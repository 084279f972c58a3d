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

use serde::Deserialize;

/// Most worker threads accepted.
pub const MAX_WORKER_THREADS: usize = 1024;
/// Whether work stealing is on when `[runtime] work_stealing` is not set.
pub const DEFAULT_WORK_STEALING: bool = true;

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
}

impl Default for Runtime {
    fn default() -> Self {
        Runtime {
            worker_threads: None,
            work_stealing: DEFAULT_WORK_STEALING,
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
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawRuntime {
    /// Data-plane threads (default: the CPUs the process may use; `TOKIO_WORKER_THREADS`
    /// overrides it).
    pub worker_threads: Option<usize>,
    /// Work stealing between the data plane's threads (default true).
    pub work_stealing: Option<bool>,
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
            assert_eq!(r.worker_threads, None);
            assert!(!r.work_stealing);
        }
        let mut problems = Vec::new();
        let raw = RawRuntime {
            worker_threads: Some(2),
            work_stealing: None,
        };
        assert_eq!(runtime(&raw, &mut problems).worker_threads, Some(2));
        assert!(problems.is_empty());
    }
}
