//! Waiting for something that happens asynchronously (a refresh, a reload, a metric, a process
//! exit) without timing assertions: [`assert_eventually!`](crate::assert_eventually) polls a
//! condition until it holds or a deadline passes, then fails with a message (no I/O of its own).
//!
//! Deadlines are generous upper bounds, never expectations: a test must not depend on how fast
//! something happens, only that it happens. On a slow or loaded machine scale every deadline with
//! `A2A_EGRESS_TEST_PATIENCE` (a factor, e.g. `3`). Deadlines are measured on tokio's clock, so in a
//! test on paused time the polling sleeps advance the clock and a deadline is virtual time.

use std::time::Duration;

/// The deadline when a call gives none.
pub const DEFAULT_WITHIN: Duration = Duration::from_secs(20);
/// The poll interval when a call gives none.
pub const DEFAULT_EVERY: Duration = Duration::from_millis(20);
/// The variable that scales every deadline (a positive factor; default 1).
pub const PATIENCE_VAR: &str = "A2A_EGRESS_TEST_PATIENCE";

/// `A2A_EGRESS_TEST_PATIENCE`, or 1. Panics on a value that is not a positive number, so a typo
/// does not silently shorten deadlines.
pub fn patience() -> f64 {
    match std::env::var(PATIENCE_VAR) {
        Err(_) => 1.0,
        Ok(v) => match v.trim().parse::<f64>() {
            Ok(f) if f.is_finite() && f > 0.0 => f,
            _ => panic!("{PATIENCE_VAR}={v:?} is not a positive number"),
        },
    }
}

/// One wait: its scaled deadline and its poll interval.
#[derive(Debug, Clone, Copy)]
pub struct Wait {
    start: tokio::time::Instant,
    within: Duration,
    every: Duration,
}

impl Wait {
    /// Starts a wait of `within` (scaled by [`patience`]) polling every `every`.
    pub fn new(within: Duration, every: Duration) -> Wait {
        Wait {
            start: tokio::time::Instant::now(),
            within: within.mul_f64(patience()),
            every,
        }
    }

    /// Whether the deadline has passed.
    pub fn expired(&self) -> bool {
        self.start.elapsed() >= self.within
    }

    /// Time waited so far.
    pub fn elapsed(&self) -> Duration {
        self.start.elapsed()
    }

    /// Sleeps one poll interval (on tokio's clock).
    pub async fn pause(&self) {
        tokio::time::sleep(self.every).await;
    }

    /// Sleeps one poll interval, blocking the thread (for waits outside a runtime).
    pub fn pause_blocking(&self) {
        std::thread::sleep(self.every);
    }
}

/// Polls `$cond` (an expression that may `.await`) until it is true; panics with the message
/// (format arguments, evaluated only on failure, so they can show the last value seen) once the
/// deadline passes. Options before the message: `within = DURATION` (default
/// [`DEFAULT_WITHIN`]), `every = DURATION` (default [`DEFAULT_EVERY`]).
///
/// ```ignore
/// let mut seen = 0.0;
/// assert_eventually!(
///     { seen = metric(&gw.metrics().await, "a2a_egress_inflight_requests", &[]); seen >= 1.0 },
///     within = Duration::from_secs(5),
///     "the stream never started (in flight: {seen})"
/// );
/// ```
#[macro_export]
macro_rules! assert_eventually {
    ($cond:expr, within = $within:expr, every = $every:expr, $($msg:tt)+) => {{
        let wait = $crate::common::eventually::Wait::new($within, $every);
        loop {
            if $cond {
                break;
            }
            if wait.expired() {
                panic!(
                    "still not true after {:?}: {}",
                    wait.elapsed(),
                    format_args!($($msg)+)
                );
            }
            wait.pause().await;
        }
    }};
    ($cond:expr, within = $within:expr, $($msg:tt)+) => {
        $crate::assert_eventually!(
            $cond,
            within = $within,
            every = $crate::common::eventually::DEFAULT_EVERY,
            $($msg)+
        )
    };
    ($cond:expr, every = $every:expr, $($msg:tt)+) => {
        $crate::assert_eventually!(
            $cond,
            within = $crate::common::eventually::DEFAULT_WITHIN,
            every = $every,
            $($msg)+
        )
    };
    ($cond:expr, $($msg:tt)+) => {
        $crate::assert_eventually!(
            $cond,
            within = $crate::common::eventually::DEFAULT_WITHIN,
            every = $crate::common::eventually::DEFAULT_EVERY,
            $($msg)+
        )
    };
    ($cond:expr $(,)?) => {
        $crate::assert_eventually!($cond, "{}", stringify!($cond))
    };
}

/// As [`assert_eventually!`](crate::assert_eventually), for synchronous code (no runtime):
/// polls `cond` on the thread, with the same deadline scaling. Returns the first `Some`.
pub fn eventually_blocking<T>(
    within: Duration,
    what: impl std::fmt::Display,
    mut cond: impl FnMut() -> Option<T>,
) -> T {
    let wait = Wait::new(within, DEFAULT_EVERY);
    loop {
        if let Some(v) = cond() {
            return v;
        }
        assert!(
            !wait.expired(),
            "still not true after {:?}: {what}",
            wait.elapsed()
        );
        wait.pause_blocking();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn polls_until_true_on_paused_time() {
        let start = tokio::time::Instant::now();
        let mut n = 0;
        crate::assert_eventually!(
            {
                n += 1;
                n == 5
            },
            every = Duration::from_secs(1),
            "n reached {n}"
        );
        assert_eq!(start.elapsed(), Duration::from_secs(4));
    }

    #[tokio::test(start_paused = true)]
    #[should_panic(expected = "still not true after")]
    async fn fails_once_the_deadline_passes() {
        crate::assert_eventually!(false, within = Duration::from_secs(1), "never");
    }
}
