//! A stderr that never blocks a request: log lines are queued in memory (bounded) and written by
//! one thread of their own, so a slow or unread stderr pipe costs lines, never a stalled worker
//! (I/O: the writer thread writes to stderr).
//!
//! Written directly, a log line blocks the runtime worker that writes it once the pipe is full
//! (64 KiB on Linux, a few hundred access lines); with every worker blocked in turn the data
//! plane, the admin listener and the control plane all stop until somebody reads. Here a
//! producer only appends its whole line to the queue under a short lock; when
//! [`MAX_QUEUED`] bytes are waiting the line is dropped and counted, and the writer says how many
//! were lost (a `warn` line) once stderr takes lines again. Lines queued while the writer is busy
//! or gathering (a couple of milliseconds after the first) go out together in one write.

use std::io::Write as _;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

/// Most bytes waiting to be written: a burst of a few thousand lines; beyond it lines are lost.
pub const MAX_QUEUED: usize = 1 << 20;

/// Capacity a buffer keeps after a burst (it grows up to [`MAX_QUEUED`] meanwhile).
const KEEP_CAPACITY: usize = 64 << 10;

/// How long the writer, woken by a first line, lets more lines gather before it writes: under
/// load one wake-up and one write carry many lines instead of one each; a line reaches stderr
/// this much later at most (plus the write itself).
const GATHER: Duration = Duration::from_millis(2);

/// Queued bytes past which the writer writes at once instead of gathering.
const GATHER_BYTES: usize = 32 << 10;

#[derive(Default)]
struct State {
    queue: Vec<u8>,
    dropped: u64,
    /// The writer waits for lines (a producer wakes it).
    idle: bool,
}

struct Sink {
    state: Mutex<State>,
    ready: Condvar,
    written: Condvar,
}

static SINK: OnceLock<Arc<Sink>> = OnceLock::new();

fn lock(s: &Sink) -> MutexGuard<'_, State> {
    s.state.lock().unwrap_or_else(|e| e.into_inner())
}

/// Starts the writer thread (once); from then on [`write()`] and [`Writer`] queue lines. When the
/// thread cannot be started, lines go to stderr directly, as before.
pub fn start() {
    let sink = Arc::new(Sink {
        state: Mutex::new(State::default()),
        ready: Condvar::new(),
        written: Condvar::new(),
    });
    let writer = Arc::clone(&sink);
    let spawned = std::thread::Builder::new()
        .name("a2a-egress-log".into())
        .spawn(move || run(&writer));
    if spawned.is_ok() {
        let _ = SINK.set(sink);
    }
}

/// Queues one whole line (or several): never blocks on stderr.
pub fn write(line: &[u8]) {
    let Some(sink) = SINK.get() else {
        let _ = std::io::stderr().write_all(line);
        return;
    };
    let mut s = lock(sink);
    if s.queue.len() + line.len() > MAX_QUEUED {
        s.dropped += 1;
        return;
    }
    s.queue.extend_from_slice(line);
    if s.idle {
        s.idle = false;
        sink.ready.notify_one();
    }
}

/// Waits until every line queued so far has been written, at most `deadline` (stderr may be a
/// pipe nobody reads). For the end of the process.
pub fn flush(deadline: Duration) {
    let Some(sink) = SINK.get() else {
        return;
    };
    let until = Instant::now() + deadline;
    let mut s = lock(sink);
    // Lines queued now are out once the writer is idle again with an empty queue.
    while !(s.idle && s.queue.is_empty()) {
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return;
        }
        s = match sink.written.wait_timeout(s, left) {
            Ok((s, _)) => s,
            Err(e) => e.into_inner().0,
        };
    }
}

/// The writer thread: takes everything queued, writes it in one go, repeats.
fn run(sink: &Sink) {
    let mut batch = Vec::new();
    loop {
        let dropped = {
            let mut s = lock(sink);
            while s.queue.is_empty() && s.dropped == 0 {
                s.idle = true;
                sink.written.notify_all();
                s = sink.ready.wait(s).unwrap_or_else(|e| e.into_inner());
            }
            s.idle = false;
            if s.queue.len() < GATHER_BYTES {
                drop(s);
                std::thread::sleep(GATHER);
                s = lock(sink);
            }
            std::mem::swap(&mut batch, &mut s.queue);
            std::mem::take(&mut s.dropped)
        };
        if !batch.is_empty() {
            let _ = std::io::stderr().lock().write_all(&batch);
        }
        batch.clear();
        batch.shrink_to(KEEP_CAPACITY);
        if dropped > 0 {
            // Through the subscriber, so the line has the configured form; it is queued (or,
            // when the queue is full again, counted) like any other.
            tracing::warn!(
                dropped,
                "log lines dropped: stderr did not take them as fast as they came"
            );
        }
    }
}

/// A `MakeWriter` for the tracing formatter: each event's line goes to the queue.
#[derive(Debug, Clone, Copy, Default)]
pub struct Writer;

impl std::io::Write for Writer {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        write(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Writer {
    type Writer = Writer;

    fn make_writer(&'a self) -> Writer {
        Writer
    }
}
