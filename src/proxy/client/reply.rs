//! Answering the caller from what the agent sent (I/O on the caller's session): a whole answer
//! passed through unchanged, an SSE stream or a large answer copied chunk by chunk as it arrives,
//! and a `SendMessage` answer framed as one SSE event.
//!
//! Which of the agent's headers the caller gets is decided before any of these run, by the one
//! allowlist of both directions ([`crate::proxy::headers::crosses`], applied in `vet`); here only
//! the framing the gateway writes itself for its own bytes is left out.
//!
//! An SSE answer has no length, so its framing follows the caller's HTTP version: chunked to an
//! HTTP/1.1 caller; to an HTTP/1.0 caller, which cannot read chunked (RFC 9112 §6.1), the body
//! ends when the connection closes (`Connection: close`, no `Transfer-Encoding`).

use bytes::Bytes;
use pingora::Result;
use pingora::http::ResponseHeader;
use pingora::proxy::Session;

use super::exchange::{Answer, Response};
use super::{ClientError, Tally};
use crate::proxy::call::Outcome;
use crate::proxy::feedback::sse_event;
use crate::proxy::headers::{FRAMING, is_framing};

/// Response headers never copied from the agent (framing is the gateway's, hop-by-hop never leaves).
const NOT_COPIED: [&str; FRAMING.len()] = FRAMING;

fn copyable(name: &str) -> bool {
    !is_framing(name)
}

/// A response header with `from`'s status and its copyable headers.
pub(super) fn copied(from: &ResponseHeader, status: u16, extra: usize) -> Result<ResponseHeader> {
    // Without a case map: names are lowercase `HeaderName`s, written as they are.
    let mut h = ResponseHeader::build_no_case(status, Some(from.headers.len() + extra))?;
    for (n, v) in &from.headers {
        if copyable(n.as_str()) {
            h.append_header(n.clone(), v.clone())?;
        }
    }
    Ok(h)
}

/// The agent's own header, made into the one [`copied`] would build for a body of `len` bytes:
/// the same status and copyable headers, the gateway's HTTP version and framing. Edited in place
/// rather than rebuilt, since most answers pass through whole.
///
/// Most answers carry one or two of the names never copied, so the header is looked through
/// once and only those are removed (each removal is a lookup in two maps, names and their case);
/// `content-length` is replaced by the insert rather than removed first.
fn reframed(mut head: Box<ResponseHeader>, len: usize) -> Result<Box<ResponseHeader>> {
    let mut found = [false; NOT_COPIED.len()];
    for name in head.headers.keys() {
        let i = NOT_COPIED.iter().position(|n| *n == name.as_str());
        if let Some(f) = i.and_then(|i| found.get_mut(i)) {
            *f = true;
        }
    }
    for (name, found) in NOT_COPIED.iter().zip(found) {
        if found && *name != "content-length" {
            head.remove_header(*name);
        }
    }
    head.set_version(http::Version::HTTP_11);
    head.set_reason_phrase(None)?;
    head.insert_header(http::header::CONTENT_LENGTH, len)?;
    Ok(head)
}

/// Passes a whole answer to the caller unchanged (status, headers, bytes).
pub(super) async fn pass_through(session: &mut Session, a: Answer) -> Result<()> {
    let Answer { head, body } = a;
    let empty = body.is_empty();
    session
        .write_response_header(reframed(head, body.len())?, empty)
        .await?;
    if !empty {
        session.write_response_body(Some(body), true).await?;
    }
    Ok(())
}

/// Writes the head of an SSE answer, with `from`'s copyable headers, framed for the caller's HTTP
/// version (see the module doc).
pub(super) async fn sse_header(session: &mut Session, from: Option<&ResponseHeader>) -> Result<()> {
    let mut h = match from {
        Some(from) => copied(from, 200, 3)?,
        None => ResponseHeader::build(200, Some(3))?,
    };
    h.insert_header("content-type", "text/event-stream")?;
    h.insert_header("cache-control", "no-cache")?;
    if session.req_header().version < http::Version::HTTP_11 {
        // Neither length nor chunked: pingora's writer then ends the body by closing, and with
        // keep-alive off it says `Connection: close` (even to a caller that asked to keep alive).
        session.set_keepalive(None);
    } else {
        // pingora frames a body without length only if told to: SSE needs chunked on HTTP/1.1.
        h.insert_header("transfer-encoding", "chunked")?;
    }
    session.write_response_header(Box::new(h), false).await
}

/// Passes a large non-SSE answer through chunk by chunk (status and headers unchanged).
pub(super) async fn pipe_large(
    session: &mut Session,
    resp: Response<'_>,
    tally: &Tally<'_>,
) -> Result<Outcome> {
    let mut h = copied(resp.head(), resp.status(), 1)?;
    if let Some(n) = resp.content_length() {
        h.insert_header("content-length", n.to_string())?;
    }
    let ok = resp.head().status.is_success();
    session.write_response_header(Box::new(h), false).await?;
    match copy_body(session, resp, "answer", tally).await? {
        Outcome::Ok if !ok => Ok(Outcome::AgentError),
        outcome => Ok(outcome),
    }
}

/// One step of copying an upstream body to a caller whose answer head went out.
pub(super) enum Piece {
    /// The next bytes.
    Chunk(Bytes),
    /// The body ended.
    End,
    /// The caller hung up: the answer ends here, quietly (nothing can reach the caller), and the
    /// agent's connection is dropped with the response.
    Gone,
}

/// The next [`Piece`] of `resp`; an upstream failure (a deadline included) is counted and
/// becomes the error that cuts the caller's answer ([`Tally::cut`]).
pub(super) async fn piece(
    session: &mut Session,
    resp: &mut Response<'_>,
    what: &str,
    tally: &Tally<'_>,
) -> Result<Piece> {
    match resp.chunk(session).await {
        Ok(Some(chunk)) => Ok(Piece::Chunk(chunk)),
        Ok(None) => Ok(Piece::End),
        Err(ClientError::CallerGone) => {
            session.set_keepalive(None);
            tally.gone(what);
            Ok(Piece::Gone)
        }
        Err(e) => Err(tally.cut(e, what)),
    }
}

/// Copies the rest of an upstream body to the caller chunk by chunk, then ends the response and
/// returns the agent's connection to the pool: `Ok` or, when the caller hung up, `ClientClosed`.
async fn copy_body(
    session: &mut Session,
    mut resp: Response<'_>,
    what: &str,
    tally: &Tally<'_>,
) -> Result<Outcome> {
    loop {
        match piece(session, &mut resp, what, tally).await? {
            Piece::Chunk(chunk) => session.write_response_body(Some(chunk), false).await?,
            Piece::End => break,
            Piece::Gone => return Ok(Outcome::ClientClosed),
        }
    }
    session.write_response_body(None, true).await?;
    resp.release().await;
    Ok(Outcome::Ok)
}

/// Answers a successful SendMessage as a one-event SSE stream.
pub(super) async fn one_event(session: &mut Session, a: &Answer) -> Result<()> {
    sse_header(session, None).await?;
    session
        .write_response_body(Some(sse_event(&a.body)), true)
        .await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn agent_header() -> Box<ResponseHeader> {
        let mut h = ResponseHeader::build(201, None).unwrap();
        h.set_version(http::Version::HTTP_10);
        h.set_reason_phrase(Some("Made It")).unwrap();
        for (n, v) in [
            ("Content-Type", "application/json"),
            ("Connection", "keep-alive"),
            ("Keep-Alive", "timeout=5"),
            ("Transfer-Encoding", "chunked"),
            ("Content-Length", "999"),
            ("X-Agent", "a"),
            ("X-Agent", "b"),
            ("Upgrade", "h2c"),
        ] {
            h.append_header(n, v).unwrap();
        }
        Box::new(h)
    }

    fn lines(h: &ResponseHeader) -> Vec<(String, String)> {
        let mut v: Vec<_> = h
            .headers
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_str().unwrap().to_owned()))
            .collect();
        v.sort();
        v
    }

    #[test]
    fn reframed_is_what_copied_builds() {
        let from = agent_header();
        let mut built = copied(&from, from.status.as_u16(), 1).unwrap();
        built.insert_header("content-length", "12").unwrap();
        let edited = reframed(from, 12).unwrap();
        assert_eq!(edited.status, built.status);
        assert_eq!(edited.version, http::Version::HTTP_11);
        assert_eq!(edited.get_reason_phrase(), built.get_reason_phrase());
        assert_eq!(lines(&edited), lines(&built));
        assert_eq!(
            lines(&edited),
            [
                ("content-length", "12"),
                ("content-type", "application/json"),
                ("x-agent", "a"),
                ("x-agent", "b"),
            ]
            .map(|(n, v)| (n.to_owned(), v.to_owned()))
        );
    }
}
