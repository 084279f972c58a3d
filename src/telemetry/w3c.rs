//! W3C Trace Context for the gateway's spans (pure, no I/O): a caller's checked `traceparent`
//! (and `tracestate`) as the remote parent span context, and a span context as the `traceparent`
//! sent upstream.

use http::HeaderValue;
use opentelemetry::trace::{SpanContext, SpanId, TraceFlags, TraceId, TraceState};

/// The span context of a version-00 `traceparent` (`00-<32 hex>-<16 hex>-<2 hex>`, already
/// checked by the data plane) with the caller's `tracestate` beside it; `None` when it does not
/// read as one. A `tracestate` the OpenTelemetry parser refuses is left off the span (it is still
/// passed upstream as it came).
pub fn remote_parent(traceparent: &[u8], tracestate: Option<&[u8]>) -> Option<SpanContext> {
    let text = std::str::from_utf8(traceparent).ok()?;
    let trace = TraceId::from_hex(text.get(3..35)?).ok()?;
    let span = SpanId::from_hex(text.get(36..52)?).ok()?;
    let flags = u8::from_str_radix(text.get(53..55)?, 16).ok()?;
    let state = tracestate
        .and_then(|s| std::str::from_utf8(s).ok())
        .and_then(|s| s.parse::<TraceState>().ok())
        .unwrap_or_default();
    let sc = SpanContext::new(trace, span, TraceFlags::new(flags), true, state);
    sc.is_valid().then_some(sc)
}

/// The version-00 `traceparent` naming span context `sc` as the parent (the ids' lower-case hex,
/// as W3C Trace Context writes them). Written by the `hex` crate into one buffer: `format!` of
/// the ids' `LowerHex` went digit by digit, a visible part of every traced call's cost.
pub fn traceparent(sc: &SpanContext) -> Option<HeaderValue> {
    let mut text = *b"00-00000000000000000000000000000000-0000000000000000-00";
    hex::encode_to_slice(sc.trace_id().to_bytes(), &mut text[3..35]).ok()?;
    hex::encode_to_slice(sc.span_id().to_bytes(), &mut text[36..52]).ok()?;
    hex::encode_to_slice([sc.trace_flags().to_u8()], &mut text[53..55]).ok()?;
    HeaderValue::from_bytes(&text).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    const TP: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn a_traceparent_reads_back_as_itself() {
        let sc = remote_parent(TP.as_bytes(), Some(b"k=v,a=b")).unwrap();
        assert!(sc.is_remote() && sc.is_sampled());
        assert_eq!(
            format!("{:032x}", sc.trace_id()),
            "4bf92f3577b34da6a3ce929d0e0e4736"
        );
        assert_eq!(sc.trace_state().get("k"), Some("v"));
        assert_eq!(traceparent(&sc).unwrap(), TP);
        let unsampled = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00";
        let sc = remote_parent(unsampled.as_bytes(), None).unwrap();
        assert!(!sc.is_sampled());
        assert_eq!(traceparent(&sc).unwrap(), unsampled);
    }

    #[test]
    fn zero_ids_and_garbage_are_no_parent_and_a_bad_tracestate_is_left_off() {
        let zero = "00-00000000000000000000000000000000-00f067aa0ba902b7-01";
        assert!(remote_parent(zero.as_bytes(), None).is_none());
        assert!(remote_parent(b"garbage", None).is_none());
        let sc = remote_parent(TP.as_bytes(), Some(b"not a list entry")).unwrap();
        assert_eq!(sc.trace_state().header(), "");
    }
}
