//! Agent answers: `agent_error` and `send_succeeded` for both bindings at any status, and the
//! one-event SSE framing of a downgraded answer (`sse_event`).
//!
//! The SSE invariant is read with the WHATWG event-stream rules (lines end at CRLF, LF or a bare
//! CR): the framing yields exactly one event, dispatched at the very end, and when the answer is
//! JSON the event's data is the same JSON value (numbers compared as serde_json reads them).
#![no_main]

use a2a_egress::profile::Binding;
use a2a_egress::proxy::feedback::{agent_error, send_succeeded, sse_event};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

/// Splits an event stream into events (each the joined `data` of its lines), per the HTML
/// "event stream interpretation" rules; returns the events and whether bytes were left after
/// the last dispatch.
fn sse_events(stream: &str) -> (Vec<String>, bool) {
    let mut events = Vec::new();
    let mut data = String::new();
    let mut rest = stream;
    loop {
        let Some(end) = rest.find(['\r', '\n']) else {
            return (events, !rest.is_empty() || !data.is_empty());
        };
        let (line, tail) = rest.split_at(end);
        rest = tail.strip_prefix("\r\n").unwrap_or_else(|| &tail[1..]);
        if line.is_empty() {
            // Dispatch: an empty buffer dispatches nothing; else drop the last newline.
            if let Some(d) = data.strip_suffix('\n') {
                events.push(d.to_owned());
            }
            data.clear();
            continue;
        }
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line, ""),
        };
        if field == "data" {
            data.push_str(value);
            data.push('\n');
        }
    }
}

fuzz_target!(|data: &[u8]| {
    if data.len() < 2 {
        return;
    }
    let status = u16::from_be_bytes([data[0], data[1]]) % 600;
    let body = &data[2..];
    for binding in [Binding::JsonRpc, Binding::HttpJson] {
        if let Some(e) = agent_error(binding, status, body) {
            let _ = (e.stale_cause(), e.is_unsupported_operation());
        }
        let _ = send_succeeded(binding, status, body);
    }
    let framed = sse_event(body);
    // An event stream is decoded as UTF-8 with replacement (HTML, "Parsing an event stream").
    let text = String::from_utf8_lossy(&framed);
    let (events, leftover) = sse_events(&text);
    assert!(!leftover, "bytes after the last event: {text:?}");
    assert_eq!(events.len(), 1, "{} events from {text:?}", events.len());
    if let Ok(v) = serde_json::from_slice::<Value>(body) {
        let got: Value = serde_json::from_str(&events[0])
            .unwrap_or_else(|e| panic!("event data is not the JSON answer ({e}): {:?}", events[0]));
        assert_eq!(got, v);
    }
});
