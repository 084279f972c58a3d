//! Splits an agent's SSE byte stream into whole events, holding at most one event and never
//! more than a byte cap (pure). Used where each event must be looked at before it is passed on;
//! the bytes of each event are returned unchanged.
//!
//! Line ends are CR, LF or CRLF and an event ends at an empty line (the SSE rules A2A servers
//! follow: the Python SDK ends lines with CRLF and sends `: ping` comments). A CR that ends the
//! bytes read so far waits for the next byte, which may make it a CRLF.

use bytes::{Bytes, BytesMut};

/// The event being read grew past the cap without ending.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("an SSE event is larger than {limit} bytes")]
pub struct EventTooLarge {
    /// The cap, bytes.
    pub limit: usize,
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
}

impl Splitter {
    /// A splitter that holds at most `limit` bytes of one event.
    pub fn new(limit: usize) -> Splitter {
        Splitter {
            buf: BytesMut::new(),
            line: 0,
            scan: 0,
            limit,
        }
    }

    /// Adds `chunk` and returns the events it completed, in order (each with its terminating
    /// empty line).
    pub fn push(&mut self, chunk: &[u8]) -> Result<Vec<Bytes>, EventTooLarge> {
        self.buf.extend_from_slice(chunk);
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
            return Err(EventTooLarge { limit: self.limit });
        }
        Ok(out)
    }

    /// The bytes of an event the stream ended without finishing (an SSE reader drops them;
    /// they are handed back so a caller can decide).
    pub fn rest(self) -> Bytes {
        self.buf.freeze()
    }

    /// The next line end from `scan`: where the line's content ends and where the next line
    /// starts. `None` until one is complete (a final CR may still become CRLF).
    fn line_end(&self) -> Option<(usize, usize)> {
        let rest = self.buf.get(self.scan..)?;
        let i = rest.iter().position(|b| *b == b'\n' || *b == b'\r')? + self.scan;
        match (self.buf.get(i), self.buf.get(i + 1)) {
            (Some(b'\r'), Some(b'\n')) => Some((i, i + 2)),
            (Some(b'\r'), None) => None,
            _ => Some((i, i + 1)),
        }
    }
}

/// The data of one event: its `data:` lines joined with LF (one optional space after the colon
/// removed), or `None` for an event without data (a comment such as `: ping`).
pub fn data_of(event: &[u8]) -> Option<Vec<u8>> {
    let mut data: Option<Vec<u8>> = None;
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
            None => data = Some(v.to_vec()),
            Some(d) => {
                d.push(b'\n');
                d.extend_from_slice(v);
            }
        }
    }
    data
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
        assert_eq!(s.push(b"456789abcdef"), Err(EventTooLarge { limit: 16 }));
        // Many small events never add up.
        let mut s = Splitter::new(16);
        for _ in 0..100 {
            assert_eq!(s.push(b"data: 1\n\n").unwrap().len(), 1);
        }
    }

    #[test]
    fn data_lines_are_joined_and_comments_have_none() {
        assert_eq!(data_of(b"data: a\r\ndata:b\r\n\r\n").unwrap(), b"a\nb");
        assert_eq!(data_of(b"event: error\ndata: {}\n\n").unwrap(), b"{}");
        assert_eq!(data_of(b"data\n\n").unwrap(), b"");
        assert_eq!(data_of(b": ping\n\n"), None);
        assert_eq!(data_of(b"datax: 1\n\n"), None);
    }
}
