//! The access line of a data-plane call and the log formatter it must match (I/O: writes to
//! stderr once [`install`]ed by the binary's log set-up; the formatting itself is pure).
//!
//! The line is written straight into a per-thread buffer, in exactly the text or JSON form the
//! tracing formatter of [`fmt_layer`] gives an `info!` event with these fields (target
//! `a2a_egress::access`), and handed to stderr in one write. Going through tracing instead
//! visits every field through `fmt::Debug` and was about a tenth of a request's instructions.
//! Without [`install`] (an embedding process, a test, colour on a terminal) the line is an
//! ordinary tracing event, so whatever subscriber is set receives it.
//!
//! Only bounded values are written: integration names from the validated config, enum labels,
//! numbers and a checked request id, never a header value, a path or a body. A value outside
//! the plain printable ASCII set is escaped as the tracing formatter escapes it.

use std::cell::RefCell;
use std::io::Write as _;
use std::sync::OnceLock;
use std::time::{SystemTime, UNIX_EPOCH};

use tracing_subscriber::Layer;
use tracing_subscriber::registry::LookupSpan;

use crate::config::LogFormat;

/// The tracing target of access lines (a `RUST_LOG` directive can name it).
pub const TARGET: &str = "a2a_egress::access";

/// One access line's fields, in the order they are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AccessLine<'a> {
    /// The request id (caller's, trace id, or generated; always id characters).
    pub request_id: &'a str,
    /// The integration named by the route (`""` when none).
    pub integration: &'a str,
    /// The A2A method label.
    pub method: &'a str,
    /// The outcome label.
    pub outcome: &'a str,
    /// The refusal's `ErrorInfo` reason (`""` unless refused).
    pub reason: &'a str,
    /// Why a stream was answered through `SendMessage` (`""` when it was not).
    pub downgrade: &'a str,
    /// The content guard's detectors that found something in the request, comma-separated
    /// (config names; `""` when none).
    pub guard: &'a str,
    /// The status written to the caller (0: none).
    pub status: u16,
    /// The upstream's status (0: nothing went upstream).
    pub upstream_status: u16,
    /// Microseconds from the request's start.
    pub total_us: u64,
    /// Microseconds spent waiting on the upstream.
    pub upstream_us: u64,
    /// The snapshot version the call used.
    pub profile_version: u64,
}

/// The installed direct writer: its format, and whether the filter lets access lines through
/// (decided once: the filter does not change after start).
#[derive(Debug, Clone, Copy)]
struct Direct {
    format: LogFormat,
    enabled: bool,
}

static DIRECT: OnceLock<Direct> = OnceLock::new();

/// Writes access lines directly in `format` from now on, when the global tracing subscriber
/// (already set) lets them through; it must be a [`fmt_layer`] of `format` without colour
/// codes. The first call wins.
pub fn install(format: LogFormat) {
    let enabled = tracing::enabled!(target: TARGET, tracing::Level::INFO);
    let _ = DIRECT.set(Direct { format, enabled });
}

/// The subscriber layer that writes every other log line in `format` to `writer`; the access
/// line's direct form is byte for byte what this layer writes for it.
pub fn fmt_layer<S, W>(format: LogFormat, ansi: bool, writer: W) -> Box<dyn Layer<S> + Send + Sync>
where
    S: tracing::Subscriber + for<'a> LookupSpan<'a>,
    W: for<'w> tracing_subscriber::fmt::MakeWriter<'w> + Send + Sync + 'static,
{
    match format {
        LogFormat::Text => tracing_subscriber::fmt::layer()
            .with_writer(writer)
            .with_ansi(ansi)
            .boxed(),
        LogFormat::Json => tracing_subscriber::fmt::layer()
            .json()
            .flatten_event(true)
            // A call's lines carry its request id as `"span":{"request_id":…,"name":"call"}`
            // (the data plane's one span); the access line, written outside it, has none.
            .with_current_span(true)
            .with_span_list(false)
            .with_writer(writer)
            .boxed(),
    }
}

/// The seconds part of the last timestamp written, formatted once per second.
struct Clock {
    secs: u64,
    date: Vec<u8>,
}

impl Clock {
    fn new() -> Clock {
        Clock {
            secs: u64::MAX,
            date: Vec::with_capacity(32),
        }
    }
}

thread_local! {
    /// Each thread's line buffer and clock: a line allocates nothing once the buffer has grown.
    static BUF: RefCell<(Vec<u8>, Clock)> = RefCell::new((Vec::with_capacity(512), Clock::new()));
}

/// Writes `line`: directly when [`install`]ed, else as a tracing event.
pub fn emit(line: &AccessLine<'_>) {
    match DIRECT.get() {
        Some(d) if d.enabled => write_direct(d.format, line),
        Some(_) => {}
        None => line.via_tracing(),
    }
}

fn write_direct(format: LogFormat, line: &AccessLine<'_>) {
    let now = SystemTime::now();
    BUF.with(|b| {
        let Ok(mut b) = b.try_borrow_mut() else {
            return;
        };
        let (out, clock) = &mut *b;
        out.clear();
        write_line(out, clock, now, format, line);
        // Queued whole, beside the formatter's own lines (never blocking on stderr).
        super::log_sink::write(out);
    });
}

/// Appends the whole line for time `now`, newline included.
fn write_line(
    out: &mut Vec<u8>,
    clock: &mut Clock,
    now: SystemTime,
    format: LogFormat,
    l: &AccessLine<'_>,
) {
    if format == LogFormat::Json {
        out.extend_from_slice(b"{\"timestamp\":\"");
    }
    timestamp(out, clock, now);
    render(out, format, l);
}

impl AccessLine<'_> {
    /// The same line as an ordinary tracing event.
    fn via_tracing(&self) {
        tracing::info!(
            target: "a2a_egress::access",
            request_id = self.request_id,
            integration = self.integration,
            method = self.method,
            outcome = self.outcome,
            reason = self.reason,
            downgrade = self.downgrade,
            guard = self.guard,
            status = self.status,
            upstream_status = self.upstream_status,
            total_us = self.total_us,
            upstream_us = self.upstream_us,
            profile_version = self.profile_version,
            "request"
        );
    }
}

/// Appends the RFC 3339 UTC time `now` with microseconds, as the tracing formatter's default
/// timer writes it (`2026-12-01T12:34:56.123456Z`). The date and time to the second are formatted
/// once per second per thread and kept in `clock`.
fn timestamp(out: &mut Vec<u8>, clock: &mut Clock, now: SystemTime) {
    let since = now.duration_since(UNIX_EPOCH).unwrap_or_default();
    if since.as_secs() != clock.secs {
        clock.secs = since.as_secs();
        clock.date.clear();
        let t = i64::try_from(clock.secs)
            .ok()
            .and_then(|s| chrono::DateTime::<chrono::Utc>::from_timestamp(s, 0))
            .unwrap_or_default();
        let _ = write!(clock.date, "{}", t.format("%Y-%m-%dT%H:%M:%S"));
    }
    out.extend_from_slice(&clock.date);
    out.push(b'.');
    push_padded(out, u64::from(since.subsec_micros()), 6);
    out.push(b'Z');
}

/// Appends the line after its timestamp, newline included (the JSON form's opening
/// `{"timestamp":"` is written before the timestamp by [`write_line`]).
fn render(out: &mut Vec<u8>, format: LogFormat, l: &AccessLine<'_>) {
    let strs = [
        l.request_id,
        l.integration,
        l.method,
        l.outcome,
        l.reason,
        l.downgrade,
        l.guard,
    ];
    let nums = [
        u64::from(l.status),
        u64::from(l.upstream_status),
        l.total_us,
        l.upstream_us,
        l.profile_version,
    ];
    let keys = match format {
        LogFormat::Text => &TEXT_KEYS,
        LogFormat::Json => &JSON_KEYS,
    };
    out.extend_from_slice(keys.head);
    for (k, v) in keys.strs.iter().zip(strs) {
        out.extend_from_slice(k);
        quoted(out, v, format);
    }
    for (k, v) in keys.nums.iter().zip(nums) {
        out.extend_from_slice(k);
        push_padded(out, v, 1);
    }
    out.extend_from_slice(keys.tail);
}

/// The fixed bytes of one form: each field's name with what surrounds it, so a field costs one
/// copy of them.
struct Keys {
    head: &'static [u8],
    strs: [&'static [u8]; 7],
    nums: [&'static [u8]; 5],
    tail: &'static [u8],
}

const TEXT_KEYS: Keys = Keys {
    head: b"  INFO a2a_egress::access: request",
    strs: [
        b" request_id=",
        b" integration=",
        b" method=",
        b" outcome=",
        b" reason=",
        b" downgrade=",
        b" guard=",
    ],
    nums: [
        b" status=",
        b" upstream_status=",
        b" total_us=",
        b" upstream_us=",
        b" profile_version=",
    ],
    tail: b"\n",
};

const JSON_KEYS: Keys = Keys {
    head: b"\",\"level\":\"INFO\",\"message\":\"request\"",
    strs: [
        b",\"request_id\":",
        b",\"integration\":",
        b",\"method\":",
        b",\"outcome\":",
        b",\"reason\":",
        b",\"downgrade\":",
        b",\"guard\":",
    ],
    nums: [
        b",\"status\":",
        b",\"upstream_status\":",
        b",\"total_us\":",
        b",\"upstream_us\":",
        b",\"profile_version\":",
    ],
    tail: b",\"target\":\"a2a_egress::access\"}\n",
};

/// Printable ASCII that neither form escapes.
fn plain(b: u8) -> bool {
    matches!(b, 0x20..=0x7e) && b != b'"' && b != b'\\'
}

/// Appends `v` quoted: as is when every byte is printable ASCII other than `"` and `\` (which
/// neither form escapes), else escaped by the same code the tracing formatter uses (Rust's
/// `Debug` for text, serde_json for JSON).
fn quoted(out: &mut Vec<u8>, v: &str, format: LogFormat) {
    if v.bytes().all(plain) {
        out.push(b'"');
        out.extend_from_slice(v.as_bytes());
        out.push(b'"');
        return;
    }
    match format {
        LogFormat::Text => {
            let _ = write!(out, "{v:?}");
        }
        LogFormat::Json => {
            let _ = serde_json::to_writer(&mut *out, v);
        }
    }
}

/// Appends `v` in decimal, left-padded with zeros to at least `width` digits.
fn push_padded(out: &mut Vec<u8>, mut v: u64, width: usize) {
    let mut digits = [b'0'; 20];
    let mut n = 0;
    while v > 0 || n < width {
        if let Some(d) = digits.get_mut(n) {
            // `v % 10` is a single digit.
            *d = b'0' + (v % 10) as u8;
        }
        v /= 10;
        n += 1;
        if n >= digits.len() {
            break;
        }
    }
    out.extend(digits.iter().take(n).rev());
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    use tracing_subscriber::layer::SubscriberExt as _;

    use super::*;

    fn line<'a>(integration: &'a str, request_id: &'a str) -> AccessLine<'a> {
        AccessLine {
            request_id,
            integration,
            method: "SendMessage",
            outcome: "denied",
            reason: "POLICY_DENIED",
            downgrade: "",
            guard: "pci,jwt",
            status: 200,
            upstream_status: 0,
            total_us: 18_446_744_073_709_551_615,
            upstream_us: 0,
            profile_version: 7,
        }
    }

    /// What the tracing formatter of `format` writes for `l`.
    fn via_tracing(format: LogFormat, l: &AccessLine<'_>) -> String {
        let out = Arc::new(Mutex::new(Vec::<u8>::new()));
        let sink = out.clone();
        let writer = move || Capture(sink.clone());
        let subscriber = tracing_subscriber::registry().with(fmt_layer(format, false, writer));
        tracing::subscriber::with_default(subscriber, || l.via_tracing());
        let bytes = out.lock().unwrap().clone();
        String::from_utf8(bytes).unwrap()
    }

    struct Capture(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Capture {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn direct(format: LogFormat, l: &AccessLine<'_>, now: SystemTime) -> String {
        let mut out = Vec::new();
        write_line(&mut out, &mut Clock::new(), now, format, l);
        String::from_utf8(out).unwrap()
    }

    /// The line's timestamp and the rest of it.
    fn split(format: LogFormat, s: &str) -> (String, String) {
        let (ts, rest) = match format {
            LogFormat::Text => s.split_once(' ').unwrap(),
            LogFormat::Json => s
                .strip_prefix("{\"timestamp\":\"")
                .unwrap()
                .split_once('"')
                .unwrap(),
        };
        (ts.to_owned(), rest.to_owned())
    }

    #[test]
    fn the_direct_line_is_what_the_tracing_formatter_writes() {
        // Each character either form escapes, alone in a value, and plain values around them.
        let hostile = [
            "quote\"",
            "back\\slash",
            "new\nline",
            "tab\t",
            "esc\u{1b}[31m",
            "caf\u{e9}",
            "nul\u{0}",
            "del\u{7f}",
            "' single",
            "",
        ];
        for format in [LogFormat::Text, LogFormat::Json] {
            let lines = (hostile.iter().map(|h| line(h, "r")))
                .chain([line("echo", "caller-req-1"), line("a-b_c.d:e", "x")]);
            for l in lines {
                let want = via_tracing(format, &l);
                let got = direct(format, &l, SystemTime::now());
                let ((got_ts, got_rest), (want_ts, want_rest)) =
                    (split(format, &got), split(format, &want));
                assert_eq!(got_rest, want_rest, "{format:?}");
                // The same shape of timestamp (its value is checked below).
                let shape = |t: &str| t.replace(|c: char| c.is_ascii_digit(), "d");
                assert_eq!(shape(&got_ts), shape(&want_ts), "{got_ts} vs {want_ts}");
                assert!(
                    got.ends_with('\n') && got.matches('\n').count() == 1,
                    "{got:?}"
                );
                if format == LogFormat::Json {
                    let v: serde_json::Value = serde_json::from_str(&got).unwrap();
                    assert_eq!(v["integration"], l.integration);
                    assert_eq!(v["target"], TARGET);
                }
            }
        }
    }

    #[test]
    fn the_timestamp_is_rfc3339_utc_with_microseconds_as_the_tracing_timer_writes_it() {
        let at = |secs: u64, micros: u64| {
            let t = UNIX_EPOCH + Duration::from_secs(secs) + Duration::from_micros(micros);
            let (mut out, mut clock) = (Vec::new(), Clock::new());
            timestamp(&mut out, &mut clock, t);
            // The cached seconds part is reused within the same second.
            timestamp(&mut out, &mut clock, t + Duration::from_micros(1));
            String::from_utf8(out).unwrap()
        };
        assert_eq!(
            at(0, 0),
            "1970-01-01T00:00:00.000000Z1970-01-01T00:00:00.000001Z"
        );
        // 2024-02-29 (a leap day), one microsecond before the next second.
        assert_eq!(
            at(1_709_251_199, 999_998),
            "2024-02-29T23:59:59.999998Z2024-02-29T23:59:59.999999Z"
        );
    }

    #[test]
    fn numbers_are_written_in_full() {
        let mut out = Vec::new();
        for (v, width, want) in [
            (0, 1, "0"),
            (7, 1, "7"),
            (200, 1, "200"),
            (42, 6, "000042"),
            (999_999, 6, "999999"),
            (u64::MAX, 1, "18446744073709551615"),
        ] {
            out.clear();
            push_padded(&mut out, v, width);
            assert_eq!(std::str::from_utf8(&out).unwrap(), want);
        }
    }
}
