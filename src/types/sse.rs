//! Splits an agent's SSE byte stream into whole events, holding at most one event and never
//! more than a byte cap (pure). Used where each event must be looked at before it is passed on;
//! the bytes of each event are returned unchanged.
//!
//! Line ends are CR, LF or CRLF and an event ends at an empty line (the SSE rules A2A servers
//! follow: the Python SDK ends lines with CRLF and sends `: ping` comments). A CR that ends the
//! bytes read so far waits for the next byte, which may make it a CRLF. Scanning resumes where
//! it stopped, so an event arriving in many small chunks is scanned once, not once per chunk.
//! A UTF-8 byte order mark that starts the stream is dropped, as an SSE reader drops it.

use std::borrow::Cow;

use bytes::{Buf, Bytes, BytesMut};

/// The UTF-8 byte order mark an SSE stream may start with.
const BOM: &[u8] = b"\xEF\xBB\xBF";

/// The event being read grew past the cap without ending.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("an SSE event is larger than {limit} bytes")]
pub struct EventTooLarge {
    /// The cap, bytes.
    pub limit: usize,
    /// The events the same chunk completed before the one that grew too large, in order: they
    /// are whole and are the caller's to judge and pass on.
    pub done: Vec<Bytes>,
}

/// Cuts a byte stream into events.
#[derive(Debug)]
pub struct Splitter {
    buf: BytesMut,
    /// Where the current line starts in `buf`.
    line: usize,
    /// Where scanning resumes (a CR at the end of `buf` waits for the next byte).
    scan: usize,
    limit: usize,
    /// Whether the stream's first bytes may still be a byte order mark.
    at_start: bool,
}

impl Splitter {
    /// A splitter that holds at most `limit` bytes of one event.
    pub fn new(limit: usize) -> Splitter {
        Splitter {
            buf: BytesMut::new(),
            line: 0,
            scan: 0,
            limit,
            at_start: true,
        }
    }

    /// Adds `chunk` and returns the events it completed, in order (each with its terminating
    /// empty line).
    pub fn push(&mut self, chunk: &[u8]) -> Result<Vec<Bytes>, EventTooLarge> {
        self.buf.extend_from_slice(chunk);
        if self.at_start {
            if self.buf.len() < BOM.len() && BOM.starts_with(&self.buf) {
                return Ok(Vec::new());
            }
            if self.buf.starts_with(BOM) {
                self.buf.advance(BOM.len());
            }
            self.at_start = false;
        }
        let mut out = Vec::new();
        while let Some((end, next)) = self.line_end() {
            let empty = end == self.line;
            self.line = next;
            self.scan = next;
            if empty {
                out.push(self.buf.split_to(next).freeze());
                self.line = 0;
                self.scan = 0;
            }
        }
        if self.buf.len() > self.limit {
            return Err(EventTooLarge {
                limit: self.limit,
                done: out,
            });
        }
        Ok(out)
    }

    /// The bytes of an event the stream ended without finishing (an SSE reader drops them;
    /// they are handed back so a caller can decide).
    pub fn rest(self) -> Bytes {
        self.buf.freeze()
    }

    /// The next line end from `scan`: where the line's content ends and where the next line
    /// starts. `None` until one is complete (a final CR may still become CRLF); `scan` then
    /// moves past what was scanned (onto that CR), so the next chunk's scan starts there.
    fn line_end(&mut self) -> Option<(usize, usize)> {
        let rest = self.buf.get(self.scan..)?;
        let Some(at) = memchr::memchr2(b'\n', b'\r', rest) else {
            self.scan = self.buf.len();
            return None;
        };
        let i = at + self.scan;
        match (self.buf.get(i), self.buf.get(i + 1)) {
            (Some(b'\r'), Some(b'\n')) => Some((i, i + 2)),
            (Some(b'\r'), None) => {
                self.scan = i;
                None
            }
            _ => Some((i, i + 1)),
        }
    }
}

/// The data of one event: its `data:` lines joined with LF (one optional space after the colon
/// removed), or `None` for an event without data (a comment such as `: ping`) or whose data is
/// empty or only whitespace (the JS SDK skips such events rather than parse them). One `data:`
/// line, the usual event, is borrowed, not copied.
pub fn data_of(event: &[u8]) -> Option<Cow<'_, [u8]>> {
    let mut data: Option<Cow<'_, [u8]>> = None;
    for line in event.split(|b| *b == b'\n' || *b == b'\r') {
        let Some(v) = line.strip_prefix(b"data") else {
            continue;
        };
        let v = match v {
            [] => v,
            [b':', b' ', rest @ ..] | [b':', rest @ ..] => rest,
            // `dataX: …` is another field.
            _ => continue,
        };
        match &mut data {
            None => data = Some(Cow::Borrowed(v)),
            Some(d) => {
                let d = d.to_mut();
                d.push(b'\n');
                d.extend_from_slice(v);
            }
        }
    }
    data.filter(|d| !d.trim_ascii().is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The events of `chunks`, the unfinished rest last (when there is one).
    fn all(chunks: &[&[u8]]) -> Vec<Vec<u8>> {
        let mut s = Splitter::new(1024);
        let mut out = Vec::new();
        for c in chunks {
            out.extend(s.push(c).unwrap().into_iter().map(|b| b.to_vec()));
        }
        let rest = s.rest();
        if !rest.is_empty() {
            out.push(rest.to_vec());
        }
        out
    }

    #[test]
    fn events_end_at_an_empty_line_with_any_line_end() {
        for end in ["\n", "\r", "\r\n"] {
            let e1 = format!("event: x{end}data: {{\"a\":1}}{end}{end}");
            let e2 = format!(": ping{end}{end}");
            let text = format!("{e1}{e2}");
            assert_eq!(
                all(&[text.as_bytes()]),
                [e1.as_bytes(), e2.as_bytes()],
                "{end:?}"
            );
            // Byte by byte gives the same events (a CR split from its LF included). With CR
            // line ends the last event waits for one more byte (it could be CRLF), so it comes
            // back as the rest.
            let bytes: Vec<&[u8]> = text.as_bytes().chunks(1).collect();
            assert_eq!(all(&bytes), [e1.as_bytes(), e2.as_bytes()], "{end:?}");
        }
    }

    #[test]
    fn an_unfinished_event_is_held_and_handed_back_at_the_end() {
        let mut s = Splitter::new(1024);
        assert!(s.push(b"data: {\"a\"").unwrap().is_empty());
        assert!(s.push(b":1}\n").unwrap().is_empty());
        assert_eq!(s.rest(), Bytes::from_static(b"data: {\"a\":1}\n"));
    }

    #[test]
    fn an_event_past_the_cap_is_refused_even_across_chunks() {
        let mut s = Splitter::new(16);
        assert!(s.push(b"data: 0123").is_ok());
        assert_eq!(
            s.push(b"456789abcdef"),
            Err(EventTooLarge {
                limit: 16,
                done: vec![]
            })
        );
        // Many small events never add up.
        let mut s = Splitter::new(16);
        for _ in 0..100 {
            assert_eq!(s.push(b"data: 1\n\n").unwrap().len(), 1);
        }
    }

    #[test]
    fn data_lines_are_joined_and_comments_and_empty_data_have_none() {
        let data = |e: &'static [u8]| data_of(e).map(Cow::into_owned);
        assert_eq!(data(b"data: a\r\ndata:b\r\n\r\n").unwrap(), b"a\nb");
        assert_eq!(data(b"event: error\ndata: {}\n\n").unwrap(), b"{}");
        assert!(matches!(
            data_of(b"data: {}\n\n"),
            Some(Cow::Borrowed(b"{}"))
        ));
        assert_eq!(data_of(b": ping\n\n"), None);
        assert_eq!(data_of(b"datax: 1\n\n"), None);
        // Empty or blank data is no data (the JS SDK skips the event).
        for e in [
            &b"data\n\n"[..],
            b"data:\n\n",
            b"data: \n\n",
            b"data:  \t \r\n\r\n",
            b"data:\ndata:\n\n",
        ] {
            assert_eq!(data_of(e), None, "{:?}", String::from_utf8_lossy(e));
        }
    }

    #[test]
    fn a_held_line_is_scanned_once_not_once_per_chunk() {
        let mut s = Splitter::new(1 << 20);
        assert!(s.push(b"data: ").unwrap().is_empty());
        for i in 1..=1000 {
            assert!(s.push(&[b'x'; 100]).unwrap().is_empty());
            // Scanning resumes at the end of what is held, not at the line's start.
            assert_eq!(s.scan, 6 + 100 * i);
        }
        // A CR at the end waits on itself: the LF in the next chunk makes it one CRLF.
        assert!(s.push(b"\r").unwrap().is_empty());
        assert_eq!(s.scan, s.buf.len() - 1);
        assert!(s.push(b"\n").unwrap().is_empty());
        let done = s.push(b"\r\n").unwrap();
        assert_eq!(done.len(), 1);
        assert_eq!(done[0].len(), 6 + 100_000 + 4);
        assert_eq!(s.scan, 0);
    }

    #[test]
    fn events_before_one_too_large_come_back_with_the_overflow() {
        let mut s = Splitter::new(16);
        let mut chunk = b"data: 1\n\n: ping\n\n".to_vec();
        chunk.extend_from_slice(&[b'x'; 40]);
        let e = s.push(&chunk).unwrap_err();
        assert_eq!(e.limit, 16);
        assert_eq!(e.done, [&b"data: 1\n\n"[..], b": ping\n\n"]);
        assert_eq!(s.rest(), vec![b'x'; 40]);
    }

    #[test]
    fn a_byte_order_mark_that_starts_the_stream_is_dropped() {
        let text = b"\xEF\xBB\xBFdata: 1\n\n\xEF\xBB\xBFdata: 2\n\n";
        let first: &[u8] = b"data: 1\n\n";
        // Only the first one: later it is data.
        let second: &[u8] = b"\xEF\xBB\xBFdata: 2\n\n";
        assert_eq!(all(&[text]), [first, second]);
        let bytes: Vec<&[u8]> = text.chunks(1).collect();
        assert_eq!(all(&bytes), [first, second]);
        // Something that only starts like one is kept.
        assert_eq!(all(&[b"\xEF\xBB", b"x\n\n"]), [b"\xEF\xBBx\n\n"]);
        assert_eq!(all(&[b"\xEF"]), [b"\xEF"]);
    }
}
