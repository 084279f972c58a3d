//! Supervision of one integration's refresh worker: a panic anywhere below it (card validation,
//! compilation, a card source) is caught, logged, counted in `a2a_egress_worker_panics_total`,
//! recorded as the integration's degraded reason, and the worker restarted after a bounded
//! exponential backoff (tokio timers; no other I/O).
//!
//! The command channel belongs to the supervisor, not to the worker, so it outlives a panic:
//! requests queued behind the one that panicked are not lost, and while the restart waits every
//! refresh request is answered at once with [`ControlError::Restarting`] instead of waiting.

use std::any::Any;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::SystemTime;

use futures::FutureExt as _;
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::{Cmd, ControlError, Inner, RefreshError, Worker, lock, record_degraded};
use crate::config::Integration;
use crate::control::schedule::{self, Last};
use crate::state::Degraded;

/// Runs the integration's worker until its command channel closes, restarting it after panics.
///
/// The backoff is `[refresh] backoff_initial · 2^(n-1)`, capped by `backoff_max` (the schedule's
/// failure backoff, [`schedule::next_delay`]), where `n` counts consecutive panics; a worker that
/// ran for `backoff_max` without panicking starts the count again. The restarted worker does not
/// reload the last-known-good file (the snapshot still holds what it served) and fetches at once.
pub(super) async fn supervise(
    inner: Arc<Inner>,
    integration: Arc<Integration>,
    mut rx: mpsc::Receiver<Cmd>,
) {
    let name = integration.name.clone();
    let mut worker = Worker::new(inner.clone(), integration);
    let mut load_disk = true;
    let mut panics: u32 = 0;
    loop {
        let started = Instant::now();
        let run = AssertUnwindSafe(worker.run(&mut rx, load_disk));
        let Err(payload) = run.catch_unwind().await else {
            return; // the channel closed: the worker was stopped
        };
        let settings = inner.config.load().refresh.clone();
        if started.elapsed() >= settings.backoff_max {
            panics = 0;
        }
        panics = panics.saturating_add(1);
        let reason = format!(
            "refresh worker panicked: {}",
            panic_message(payload.as_ref())
        );
        let delay = schedule::next_delay(
            &settings,
            Last::Failed {
                consecutive: panics,
            },
            schedule::jitter_unit(),
        );
        tracing::error!(
            integration = %name,
            %reason,
            consecutive = panics,
            restart_in_ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
            "refresh worker panicked; restarting it after a backoff"
        );
        inner
            .metrics
            .worker_panics
            .with_label_values(&[&name])
            .inc();
        // A reload may have changed the integration while the worker ran: restart with the
        // configured one.
        let current = lock(&inner.workers)
            .get(&name)
            .map(|w| w.integration.clone());
        let Some(integration) = current else {
            return; // removed meanwhile
        };
        let degraded = degraded_after_panic(&inner, &name, reason.clone());
        let error = RefreshError::WorkerPanicked(reason.clone());
        record_degraded(&inner, &integration, &error, &degraded);
        if !wait_out(&mut rx, &name, &reason, Instant::now() + delay).await {
            return;
        }
        worker = Worker::new(inner.clone(), integration);
        worker.last = Last::Failed {
            consecutive: degraded.failures,
        };
        worker.degraded = Some(degraded);
        load_disk = false;
    }
}

/// The degraded record after a panic: it continues the integration's current failure streak.
fn degraded_after_panic(inner: &Inner, name: &str, reason: String) -> Degraded {
    let previous = inner
        .store
        .load()
        .get(name)
        .and_then(|s| s.freshness.degraded.clone());
    Degraded {
        reason: crate::card::sanitize::bounded_report(
            &reason,
            crate::card::sanitize::MAX_REPORT_LINE_CHARS,
            crate::card::sanitize::MAX_REPORT_LINES,
        ),
        since: previous.as_ref().map_or_else(SystemTime::now, |d| d.since),
        failures: previous.map_or(1, |d| d.failures.saturating_add(1)),
    }
}

/// Waits until `until`, answering refresh requests with [`ControlError::Restarting`] meanwhile.
/// Stale marks, reconfigures and recompiles are dropped: the restarted worker starts with a fetch
/// under the integration and config current at that moment, which answers all of them. Returns
/// false when the channel closed (the worker was stopped).
async fn wait_out(rx: &mut mpsc::Receiver<Cmd>, name: &str, reason: &str, until: Instant) -> bool {
    loop {
        tokio::select! {
            () = tokio::time::sleep_until(until) => return true,
            cmd = rx.recv() => match cmd {
                None => return false,
                Some(Cmd::Refresh { reply, .. }) => reply.send(Err(ControlError::Restarting {
                    integration: name.to_owned(),
                    reason: reason.to_owned(),
                    retry_after: until.saturating_duration_since(Instant::now()),
                })),
                Some(Cmd::Stale | Cmd::Reconfigure { .. } | Cmd::Recompile) => {}
            },
        }
    }
}

/// The text of a panic payload (`panic!` with a literal or a formatted message), else a fixed text.
fn panic_message(payload: &(dyn Any + Send)) -> String {
    let text = if let Some(s) = payload.downcast_ref::<&'static str>() {
        s
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.as_str()
    } else {
        "a non-text panic payload"
    };
    // One line, bounded: the reason is shown on /readyz and in logs.
    text.replace(['\n', '\r'], " ").chars().take(300).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn panic_messages_are_one_bounded_line() {
        let p: Box<dyn Any + Send> = Box::new("boom");
        assert_eq!(panic_message(p.as_ref()), "boom");
        let p: Box<dyn Any + Send> = Box::new(format!("a\nb{}", "x".repeat(400)));
        let m = panic_message(p.as_ref());
        assert!(m.starts_with("a b") && m.chars().count() == 300, "{m}");
        let p: Box<dyn Any + Send> = Box::new(7_u32);
        assert_eq!(panic_message(p.as_ref()), "a non-text panic payload");
    }
}
