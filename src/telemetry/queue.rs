//! The gateway's batch span processor (I/O: a thread of its own, which calls the exporter): a
//! bounded queue the data plane hands ended spans to without waiting, emptied in batches. It
//! takes the SDK batch processor's place because that one keeps its count of dropped spans
//! private; here every span that never reaches the collector is counted by why
//! ([`Dropped`]): the queue was full, or the export of its batch failed.
//!
//! Sizes and delay are the SDK's variables, read the same way: `OTEL_BSP_MAX_QUEUE_SIZE`
//! (default 2048), `OTEL_BSP_SCHEDULE_DELAY` (ms, default 5000), `OTEL_BSP_MAX_EXPORT_BATCH_SIZE`
//! (default 512, at most the queue). A span wakes nothing: the thread sleeps on its control
//! channel until the delay passes or a batch's worth is waiting (one message per full batch).

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender, TrySendError, sync_channel};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use opentelemetry::Context;
use opentelemetry_sdk::error::{OTelSdkError, OTelSdkResult};
use opentelemetry_sdk::trace::{Span, SpanData, SpanProcessor};
use prometheus::IntCounter;

/// Where dropped spans are counted (`a2a_egress_telemetry_spans_dropped_total{reason}`).
#[derive(Debug, Clone)]
pub struct Dropped {
    /// `reason="queue_full"`: ended while the queue was full (or after shutdown).
    pub queue_full: IntCounter,
    /// `reason="export_failed"`: in a batch the exporter could not deliver.
    pub export_failed: IntCounter,
}

/// The queue's sizes and delay.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sizes {
    /// Spans held at most.
    pub queue: usize,
    /// Spans per export at most.
    pub batch: usize,
    /// Longest a span waits before its batch leaves.
    pub delay: Duration,
}

impl Sizes {
    /// The SDK's `OTEL_BSP_*` variables as `var` reads them; a value that is not a positive
    /// number is its default, as in the SDK.
    pub fn from_env(var: impl Fn(&str) -> Option<String>) -> Sizes {
        let num = |k: &str| {
            var(k)
                .and_then(|v| v.trim().parse::<u64>().ok())
                .filter(|n| *n > 0)
        };
        let queue = num("OTEL_BSP_MAX_QUEUE_SIZE").map_or(2048, |n| n as usize);
        let batch = num("OTEL_BSP_MAX_EXPORT_BATCH_SIZE").map_or(512, |n| n as usize);
        Sizes {
            queue,
            batch: batch.min(queue),
            delay: Duration::from_millis(num("OTEL_BSP_SCHEDULE_DELAY").unwrap_or(5000)),
        }
    }
}

/// What the thread is told besides spans.
enum Control {
    /// A batch's worth is waiting.
    Batch,
    /// Export everything queued, then answer.
    Flush(SyncSender<OTelSdkResult>),
    /// Export what is queued until the instant, then stop and answer.
    Shutdown(Instant, SyncSender<OTelSdkResult>),
}

/// The processor the tracer provider calls.
#[derive(Debug)]
pub struct Queue {
    spans: SyncSender<SpanData>,
    control: SyncSender<Control>,
    waiting: Arc<AtomicUsize>,
    batch_told: Arc<AtomicBool>,
    batch: usize,
    dropped: Dropped,
    thread: Mutex<Option<std::thread::JoinHandle<()>>>,
}

impl std::fmt::Debug for Control {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Control::Batch => "Batch",
            Control::Flush(_) => "Flush",
            Control::Shutdown(..) => "Shutdown",
        })
    }
}

impl Queue {
    /// Starts the thread that hands batches to `export` (which blocks until the batch is sent
    /// or failed).
    pub fn start(
        sizes: Sizes,
        dropped: Dropped,
        export: impl FnMut(Vec<SpanData>) -> OTelSdkResult + Send + 'static,
    ) -> std::io::Result<Queue> {
        let (spans, span_rx) = sync_channel(sizes.queue);
        let (control, control_rx) = sync_channel(64);
        let waiting = Arc::new(AtomicUsize::new(0));
        let batch_told = Arc::new(AtomicBool::new(false));
        let worker = Worker {
            spans: span_rx,
            control: control_rx,
            waiting: waiting.clone(),
            batch_told: batch_told.clone(),
            sizes,
            dropped: dropped.clone(),
        };
        let thread = std::thread::Builder::new()
            .name("a2a-egress-spans".into())
            .spawn(move || worker.run(export))?;
        Ok(Queue {
            spans,
            control,
            waiting,
            batch_told,
            batch: sizes.batch,
            dropped,
            thread: Mutex::new(Some(thread)),
        })
    }

    /// Tells the thread `msg` and waits at most `timeout` for its answer.
    fn ask(
        &self,
        msg: impl FnOnce(SyncSender<OTelSdkResult>) -> Control,
        timeout: Duration,
    ) -> OTelSdkResult {
        let (tx, rx) = sync_channel(1);
        self.control
            .send(msg(tx))
            .map_err(|_| OTelSdkError::AlreadyShutdown)?;
        rx.recv_timeout(timeout)
            .map_err(|_| OTelSdkError::Timeout(timeout))?
    }
}

impl SpanProcessor for Queue {
    fn on_start(&self, _span: &mut Span, _cx: &Context) {}

    fn on_end(&self, span: SpanData) {
        match self.spans.try_send(span) {
            Ok(()) => {
                let n = self.waiting.fetch_add(1, Ordering::Relaxed) + 1;
                if n >= self.batch && !self.batch_told.swap(true, Ordering::Relaxed) {
                    // A full control channel already holds a message that wakes the thread.
                    let _ = self.control.try_send(Control::Batch);
                }
            }
            Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => {
                self.dropped.queue_full.inc();
            }
        }
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.ask(Control::Flush, Duration::from_secs(30))
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        let until = Instant::now() + timeout;
        let done = self.ask(|tx| Control::Shutdown(until, tx), timeout);
        if done.is_ok()
            && let Some(t) = self.thread.lock().ok().and_then(|mut t| t.take())
        {
            let _ = t.join();
        }
        done
    }
}

/// The thread's side of the queue.
struct Worker {
    spans: Receiver<SpanData>,
    control: Receiver<Control>,
    waiting: Arc<AtomicUsize>,
    batch_told: Arc<AtomicBool>,
    sizes: Sizes,
    dropped: Dropped,
}

impl Worker {
    fn run(self, mut export: impl FnMut(Vec<SpanData>) -> OTelSdkResult) {
        let mut next = Instant::now() + self.sizes.delay;
        loop {
            let wait = next.saturating_duration_since(Instant::now());
            match self.control.recv_timeout(wait) {
                Ok(Control::Batch) => {
                    self.batch_told.store(false, Ordering::Relaxed);
                    let _ = self.send(&mut export, None, true);
                }
                Err(RecvTimeoutError::Timeout) => {
                    let _ = self.send(&mut export, None, false);
                    next = Instant::now() + self.sizes.delay;
                }
                Ok(Control::Flush(reply)) => {
                    let _ = reply.send(self.send(&mut export, None, false));
                }
                Ok(Control::Shutdown(until, reply)) => {
                    let _ = reply.send(self.send(&mut export, Some(until), false));
                    return;
                }
                Err(RecvTimeoutError::Disconnected) => {
                    let _ = self.send(&mut export, Some(Instant::now()), false);
                    return;
                }
            }
        }
    }

    /// Exports what is queued in batches (`full_only`: only whole batches); past `until`, what
    /// is left is counted dropped instead. Answers the last failure, if any.
    fn send(
        &self,
        export: &mut impl FnMut(Vec<SpanData>) -> OTelSdkResult,
        until: Option<Instant>,
        full_only: bool,
    ) -> OTelSdkResult {
        let mut result = Ok(());
        loop {
            if full_only && self.waiting.load(Ordering::Relaxed) < self.sizes.batch {
                return result;
            }
            let batch: Vec<SpanData> = self.spans.try_iter().take(self.sizes.batch).collect();
            if batch.is_empty() {
                return result;
            }
            let n = batch.len();
            self.waiting.fetch_sub(n, Ordering::Relaxed);
            if until.is_some_and(|u| Instant::now() >= u) {
                self.dropped.export_failed.inc_by(n as u64);
                continue;
            }
            if let Err(e) = export(batch) {
                self.dropped.export_failed.inc_by(n as u64);
                tracing::debug!(error = %e, spans = n, "telemetry: a batch of spans was not exported");
                result = Err(e);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dropped() -> Dropped {
        Dropped {
            queue_full: IntCounter::new("q", "q").unwrap(),
            export_failed: IntCounter::new("e", "e").unwrap(),
        }
    }

    fn span() -> SpanData {
        use opentelemetry::trace::{SpanContext, SpanId, SpanKind, Status};
        SpanData {
            span_context: SpanContext::empty_context(),
            parent_span_id: SpanId::INVALID,
            parent_span_is_remote: false,
            span_kind: SpanKind::Internal,
            name: "s".into(),
            start_time: std::time::SystemTime::UNIX_EPOCH,
            end_time: std::time::SystemTime::UNIX_EPOCH,
            attributes: Vec::new(),
            dropped_attributes_count: 0,
            events: Default::default(),
            links: Default::default(),
            status: Status::Unset,
            instrumentation_scope: Default::default(),
        }
    }

    #[test]
    fn sizes_read_the_sdk_variables_and_keep_the_batch_within_the_queue() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |k: &str| {
                pairs
                    .iter()
                    .find(|(n, _)| *n == k)
                    .map(|(_, v)| (*v).to_owned())
            }
        };
        let d = Sizes::from_env(env(&[]));
        assert_eq!(
            (d.queue, d.batch, d.delay),
            (2048, 512, Duration::from_secs(5))
        );
        let s = Sizes::from_env(env(&[
            ("OTEL_BSP_MAX_QUEUE_SIZE", "100"),
            ("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "500"),
            ("OTEL_BSP_SCHEDULE_DELAY", "x"),
        ]));
        assert_eq!(
            (s.queue, s.batch, s.delay),
            (100, 100, Duration::from_secs(5))
        );
    }

    #[test]
    fn a_full_queue_and_a_failed_export_are_counted_and_the_rest_is_exported() {
        let d = dropped();
        let sizes = Sizes {
            queue: 4,
            batch: 2,
            delay: Duration::from_secs(3600),
        };
        let (gate_tx, gate_rx) = sync_channel::<()>(0);
        let (got_tx, got_rx) = sync_channel::<usize>(16);
        let mut first = true;
        let q = Queue::start(sizes, d.clone(), move |batch| {
            // The first batch waits for the test's word, so the queue fills behind it.
            if std::mem::take(&mut first) {
                gate_rx.recv().unwrap();
                got_tx.send(batch.len()).unwrap();
                return Err(OTelSdkError::InternalFailure("collector down".into()));
            }
            got_tx.send(batch.len()).unwrap();
            Ok(())
        })
        .unwrap();
        q.on_end(span());
        q.on_end(span());
        // The thread has taken the first two (it is waiting at the gate) when the queue has room
        // for four more; wait for that rather than for time.
        while q.waiting.load(Ordering::Relaxed) != 0 {
            std::thread::yield_now();
        }
        for _ in 0..6 {
            q.on_end(span());
        }
        assert_eq!(
            d.queue_full.get(),
            2,
            "four fit behind the gate, two do not"
        );
        gate_tx.send(()).unwrap();
        assert_eq!(got_rx.recv().unwrap(), 2);
        q.shutdown_with_timeout(Duration::from_secs(10)).unwrap();
        let exported: usize = got_rx.try_iter().sum();
        assert_eq!(exported, 4);
        assert_eq!(d.export_failed.get(), 2);
        q.on_end(span());
        assert_eq!(
            d.queue_full.get(),
            3,
            "a span after shutdown is counted too"
        );
    }
}
