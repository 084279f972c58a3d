//! Server-sent events for both bindings, one event per produced StreamResponse, flushed as
//! produced (I/O: the response body).
//!
//! JSON-RPC frames each event as a full JSON-RPC response envelope with the request's id; HTTP+JSON
//! sends the bare StreamResponse. An error after the stream started is an `event: error` frame.
//! The `drop_after` misbehaviour ends the body with an error once N events were sent and the next
//! one is due, which makes hyper abort the connection without the chunked-encoding terminator: a
//! mid-stream drop as a client sees it. A stream with no more than N events ends normally.

use std::convert::Infallible;

use a2a::{JsonRpcId, JsonRpcResponse};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;

use super::service::{EventStream, StreamItem};

/// How events are framed.
#[derive(Debug, Clone)]
pub enum Framing {
    /// JSON-RPC envelopes carrying this request id.
    JsonRpc(JsonRpcId),
    /// Bare StreamResponse objects (HTTP+JSON).
    Rest,
}

/// Error that cuts the connection on purpose (misbehaviour switch).
#[derive(Debug, thiserror::Error)]
#[error("stream dropped on purpose after {0} events (misbehave.drop_stream_after_events)")]
pub struct DroppedOnPurpose(u32);

fn frame(item: StreamItem, framing: &Framing) -> Event {
    let (is_error, data) = match (item, framing) {
        (StreamItem::Event(ev), Framing::JsonRpc(id)) => (
            false,
            serde_json::to_string(&JsonRpcResponse::success(
                id.clone(),
                serde_json::to_value(&ev).unwrap_or_default(),
            )),
        ),
        (StreamItem::Event(ev), Framing::Rest) => (false, serde_json::to_string(&ev)),
        (StreamItem::Error(e), Framing::JsonRpc(id)) => (
            true,
            serde_json::to_string(&JsonRpcResponse::error(id.clone(), e.jsonrpc_error())),
        ),
        (StreamItem::Error(e), Framing::Rest) => (true, serde_json::to_string(&e.rest_body())),
    };
    let event = Event::default().data(data.unwrap_or_else(|e| {
        format!(r#"{{"error":{{"code":-32603,"message":"cannot serialise event: {e}"}}}}"#)
    }));
    if is_error {
        event.event("error")
    } else {
        event
    }
}

/// The SSE response for an event stream.
pub fn response(events: EventStream, framing: Framing, drop_after: Option<u32>) -> Response {
    let framed = events.into_stream().map(move |item| frame(item, &framing));
    match drop_after {
        None => Sse::new(framed.map(Ok::<_, Infallible>))
            .keep_alive(KeepAlive::default())
            .into_response(),
        Some(n) => {
            // Cut when the event after the N-th is produced, and a moment later: hyper flushes
            // what it wrote while the body is pending, so the client really receives N events
            // even when the next one follows immediately.
            let cut = framed.enumerate().then(move |(i, ev)| async move {
                if i < n as usize {
                    Ok(ev)
                } else {
                    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                    Err(DroppedOnPurpose(n))
                }
            });
            Sse::new(cut)
                .keep_alive(KeepAlive::default())
                .into_response()
        }
    }
}
