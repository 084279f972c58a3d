//! An opt-in waker for a data plane that shares its CPU with busy processes: one thread that
//! wakes every `[runtime] keep_warm` (off unless set; 0.5 ms suggested) while calls are in flight
//! and every [`IDLE_CHECK`] otherwise (I/O: none; the thread only sleeps and reads a gauge).
//!
//! Why it exists: with one data-plane thread pinned to a CPU that busy processes (here: compiles)
//! also ran on, p99 at 10,000 req/s with the access log off was 23–125 ms, and a thread merely
//! waking every 0.5 ms on the same CPU brought it to 3.1–5.8 ms (on the other CPU: no help): each
//! wake-up makes the scheduler look again, so a data-plane thread woken by a packet waits less
//! behind a process that holds the CPU. The access log's writer does this by accident (it wakes
//! every 2 ms while lines arrive). Why it is off by default: on a CPU the gateway has to itself,
//! the waker only preempts the data plane — in the quiet 2026-12-02 bench sitting p99 at half
//! load pinned was 6.9 ms without it and 24–28 ms with it (`benches/RESULTS.md`). A wake-up costs
//! a few microseconds; an idle gateway with it on adds [`IDLE_CHECK`]'s 50 a second.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use prometheus::IntGauge;

/// How often the thread looks at the gauge while no call has been in flight for [`LINGER`].
pub const IDLE_CHECK: Duration = Duration::from_millis(20);

/// How long after the last call in flight the thread keeps waking at the busy pace: calls at a
/// few hundred a second leave the gauge at zero most of the time between them.
pub const LINGER: Duration = Duration::from_millis(100);

/// The thread's pace: how long to sleep next, from whether a call is in flight now.
#[derive(Debug, Clone, Copy)]
pub struct Pace {
    every: Duration,
    idle: Duration,
}

impl Pace {
    /// A pace that wakes every `every` while busy.
    pub fn new(every: Duration) -> Self {
        Pace {
            every,
            // Starts idle: nothing is in flight before the first call.
            idle: LINGER,
        }
    }

    /// The next sleep: `every` while a call is in flight or was within [`LINGER`], else
    /// [`IDLE_CHECK`] (a call that starts meanwhile waits at most one idle check for the fast
    /// pace, and only the calls of that moment can meet a halted CPU).
    pub fn next(&mut self, busy: bool) -> Duration {
        if busy {
            self.idle = Duration::ZERO;
            return self.every;
        }
        if self.idle < LINGER {
            self.idle += self.every;
            return self.every;
        }
        IDLE_CHECK
    }
}

/// The running thread; dropping it stops the thread (within one sleep).
#[derive(Debug)]
pub struct KeepWarm {
    stop: Arc<AtomicBool>,
}

impl Drop for KeepWarm {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// Starts the thread (named `a2a-egress-warm`), pacing itself by `inflight` (the data plane's
/// `a2a_egress_inflight_requests`, which every call already moves: nothing is added to the
/// request path). `None` when the thread cannot be started: the gateway serves as before.
pub fn start(every: Duration, inflight: IntGauge) -> Option<KeepWarm> {
    let stop = Arc::new(AtomicBool::new(false));
    let seen = Arc::clone(&stop);
    let spawned = std::thread::Builder::new()
        .name("a2a-egress-warm".into())
        .spawn(move || {
            let mut pace = Pace::new(every);
            while !seen.load(Ordering::Relaxed) {
                std::thread::sleep(pace.next(inflight.get() > 0));
            }
        });
    match spawned {
        Ok(_) => Some(KeepWarm { stop }),
        Err(e) => {
            tracing::warn!(error = %e, "keep-warm thread not started: calls may wait for a sleeping CPU");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pace_is_fast_while_busy_and_lingers_before_slowing() {
        let every = Duration::from_millis(1);
        let mut pace = Pace::new(every);
        // Idle from the start: the slow check.
        assert_eq!(pace.next(false), IDLE_CHECK);
        assert_eq!(pace.next(true), every);
        // After the last call in flight, the fast pace holds for LINGER, then slows.
        let lingering = (0..200).take_while(|_| pace.next(false) == every).count();
        assert_eq!(lingering as u128, LINGER.as_millis());
        assert_eq!(pace.next(false), IDLE_CHECK);
        // One busy look brings the fast pace back at once.
        assert_eq!(pace.next(true), every);
        assert_eq!(pace.next(false), every);
    }

    /// Whether a thread of this process is named `a2a-egress-warm` now.
    fn warm_thread_runs() -> bool {
        std::fs::read_dir("/proc/self/task").unwrap().any(|t| {
            let comm = t.unwrap().path().join("comm");
            std::fs::read_to_string(comm).is_ok_and(|c| c.trim() == "a2a-egress-warm")
        })
    }

    /// Waits (bounded) until whether the thread runs is `want`; the answer at the deadline.
    fn warm_thread_becomes(want: bool) -> bool {
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while warm_thread_runs() != want && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        warm_thread_runs() == want
    }

    #[test]
    fn the_thread_runs_until_its_handle_drops() {
        let gauge = IntGauge::new("t_inflight", "test").unwrap();
        gauge.set(1);
        let warm = start(Duration::from_millis(1), gauge.clone()).unwrap();
        // The thread names itself once it runs: wait for that, then for its end.
        assert!(warm_thread_becomes(true));
        gauge.set(0);
        drop(warm);
        assert!(warm_thread_becomes(false));
    }
}
