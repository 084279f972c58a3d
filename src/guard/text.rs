//! Normalised text with a map back to the source: JSON unescaping, NFKC of each character and
//! removal of default-ignorable characters (zero-width spaces, bidi controls, soft hyphens), every
//! output byte remembering the source bytes it came from (pure).
//!
//! NFKC runs per character (compatibility decomposition, then composition, of each character
//! alone): that maps full-width and other compatibility look-alikes to ASCII, which is what the
//! detectors' ASCII-shaped patterns need, and keeps the map exact (a match starting inside one
//! character's expansion maps back to the whole character).

use icu_properties::props::DefaultIgnorableCodePoint;
use icu_properties::{CodePointSetData, CodePointSetDataBorrowed};
use unicode_normalization::UnicodeNormalization as _;

const DEFAULT_IGNORABLE: CodePointSetDataBorrowed<'static> =
    CodePointSetData::new::<DefaultIgnorableCodePoint>();

/// Text to match, with a map from its bytes back to the source (offsets into whatever the pieces
/// were read from: the body, or a decoded part). The map is kept as runs, not per byte: nearly all
/// text is plain ASCII copied as it is, one run for a whole literal, and a per-byte map (two
/// offsets for every byte) cost more to build than the matching it served.
#[derive(Debug, Default, Clone)]
pub(super) struct Norm {
    pub(super) text: String,
    runs: Vec<Run>,
}

/// Normalised bytes `at..at + len` and where they came from: byte for byte from `src..` when
/// `same` (an ASCII run copied as it is), else all of them from the one source unit
/// `src..src_end` (an escape, or a character NFKC expanded).
#[derive(Debug, Clone, Copy)]
struct Run {
    at: u32,
    len: u32,
    src: u32,
    src_end: u32,
    same: bool,
}

impl Run {
    /// The source span of normalised byte `i` (inside the run).
    fn source_of(&self, i: usize) -> (usize, usize) {
        let (src, end) = (self.src as usize, self.src_end as usize);
        if self.same {
            let at = src + (i - self.at as usize);
            (at, at + 1)
        } else {
            (src, end)
        }
    }
}

impl Norm {
    /// Empties it, keeping its buffers.
    pub(super) fn clear(&mut self) {
        self.text.clear();
        self.runs.clear();
    }

    /// Room for about `n` more bytes of text.
    pub(super) fn reserve(&mut self, n: usize) {
        self.text.reserve(n);
    }

    /// Appends [`super::detectors::SEPARATOR`], mapped to no source byte (no match covers it).
    pub(super) fn separate(&mut self) {
        self.text.push(super::detectors::SEPARATOR);
    }

    /// Records that the last `added` bytes of text came from source `start..end`: byte for byte
    /// when `same`, merged into the last run when it goes on where that one stopped.
    fn mapped(&mut self, added: usize, start: usize, end: usize, same: bool) {
        if added == 0 {
            return;
        }
        let at = off(self.text.len() - added);
        if same
            && let Some(last) = self.runs.last_mut()
            && last.same
            && last.at.saturating_add(last.len) == at
            && last.src_end == off(start)
        {
            last.len = last.len.saturating_add(off(added));
            last.src_end = off(end);
            return;
        }
        self.runs.push(Run {
            at,
            len: off(added),
            src: off(start),
            src_end: off(end),
            same,
        });
    }

    /// Appends `c`, read from source bytes `start..end`, normalised.
    fn push_char(&mut self, c: char, start: usize, end: usize) {
        if c.is_ascii() {
            self.text.push(c);
            self.mapped(1, start, end, end - start == 1);
            return;
        }
        if DEFAULT_IGNORABLE.contains(c) {
            return;
        }
        let before = self.text.len();
        self.text.extend(std::iter::once(c).nfkc());
        self.mapped(self.text.len() - before, start, end, false);
    }

    /// Appends the JSON string literal of `body` whose quotes are at `open` and `close`,
    /// unescaped, stopping before the first source unit that would take it past `limit` source
    /// bytes. Returns the source bytes read (quotes not counted).
    pub(super) fn push_literal(
        &mut self,
        body: &str,
        open: usize,
        close: usize,
        limit: usize,
    ) -> usize {
        let b = body.as_bytes();
        let first = open + 1;
        let stop = close.min(first.saturating_add(limit));
        let mut i = first;
        // Where the next backslash is (or `stop`), found once per backslash: searched again at
        // every non-ASCII character, the rest of a long non-English literal was read once per
        // character (quadratic).
        let mut backslash = first;
        while i < close {
            if backslash < i || (backslash == i && b.get(i) != Some(&b'\\')) {
                let rest = b.get(i..stop).unwrap_or_default();
                backslash = i + memchr::memchr(b'\\', rest).unwrap_or(rest.len());
            }
            // Plain ASCII (nearly all text) is copied in one go: NFKC leaves it as it is. Up to
            // the next backslash, then up to the first non-ASCII byte before it (both read many
            // bytes at a time: memchr, and `is_ascii` on words).
            let plain = b.get(i..backslash.max(i)).unwrap_or_default();
            let run = if plain.is_ascii() {
                plain.len()
            } else {
                plain
                    .iter()
                    .position(|c| !c.is_ascii())
                    .unwrap_or(plain.len())
            };
            if run > 0 {
                self.text.push_str(body.get(i..i + run).unwrap_or_default());
                self.mapped(run, i, i + run, true);
                i += run;
                continue;
            }
            let (c, next) = if b.get(i) == Some(&b'\\') {
                escape(body, i)
            } else {
                match body.get(i..).and_then(|t| t.chars().next()) {
                    Some(c) => (c, i + c.len_utf8()),
                    None => break,
                }
            };
            if next - first > limit {
                break;
            }
            self.push_char(c, i, next.min(close));
            i = next;
        }
        i - first
    }

    /// Appends plain text (a decoded part), its offsets counted from `base`, up to `limit` bytes.
    /// Returns the bytes read.
    pub(super) fn push_plain(&mut self, text: &str, base: usize, limit: usize) -> usize {
        let mut read = 0;
        for (i, c) in text.char_indices() {
            let end = i + c.len_utf8();
            if end > limit {
                break;
            }
            self.push_char(c, base + i, base + end);
            read = end;
        }
        read
    }

    /// Appends decoded bytes (a `raw` part) as [`Norm::push_plain`] does, up to `limit` bytes:
    /// each invalid UTF-8 sequence becomes one U+FFFD mapped to its bytes, so the text after it
    /// is still scanned and every finding maps back to the bytes it came from. Returns the bytes
    /// read.
    pub(super) fn push_bytes(&mut self, bytes: &[u8], limit: usize) -> usize {
        let mut at = 0;
        for chunk in bytes.utf8_chunks() {
            let valid = chunk.valid();
            let read = self.push_plain(valid, at, limit.saturating_sub(at));
            if read < valid.len() {
                return at + read;
            }
            at += valid.len();
            let bad = chunk.invalid().len();
            if bad > 0 {
                if at + bad > limit {
                    return at;
                }
                self.push_char(char::REPLACEMENT_CHARACTER, at, at + bad);
                at += bad;
            }
        }
        at
    }

    /// The run holding normalised byte `i`.
    fn run_of(&self, i: usize) -> Option<&Run> {
        let n = self.runs.partition_point(|r| r.at as usize <= i);
        let run = self.runs.get(n.checked_sub(1)?)?;
        (i < run.at as usize + run.len as usize).then_some(run)
    }

    /// The source span of normalised bytes `start..end` (`start < end`).
    pub(super) fn source(&self, start: usize, end: usize) -> Option<(usize, usize)> {
        let last = end.checked_sub(1)?;
        let from = self.run_of(start)?.source_of(start).0;
        let to = self.run_of(last)?.source_of(last).1;
        Some((from, to))
    }
}

/// A source offset as stored in the map.
fn off(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// The character of the escape at `i` (a backslash) and where the next source unit begins. A
/// surrogate pair is one character; a lone surrogate reads as U+FFFD.
fn escape(body: &str, i: usize) -> (char, usize) {
    let b = body.as_bytes();
    let simple = |c: char| (c, i + 2);
    match b.get(i + 1) {
        Some(b'n') => simple('\n'),
        Some(b't') => simple('\t'),
        Some(b'r') => simple('\r'),
        Some(b'b') => simple('\u{8}'),
        Some(b'f') => simple('\u{c}'),
        Some(b'u') => {
            let Some(hi) = hex4(body, i + 2) else {
                return simple('\u{fffd}');
            };
            if (0xD800..0xDC00).contains(&hi)
                && b.get(i + 6) == Some(&b'\\')
                && b.get(i + 7) == Some(&b'u')
                && let Some(lo) = hex4(body, i + 8)
                && (0xDC00..0xE000).contains(&lo)
            {
                let c = 0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00);
                return (char::from_u32(c).unwrap_or('\u{fffd}'), i + 12);
            }
            (char::from_u32(hi).unwrap_or('\u{fffd}'), i + 6)
        }
        Some(&c) => simple(char::from(c)),
        None => ('\u{fffd}', i + 1),
    }
}

fn hex4(body: &str, at: usize) -> Option<u32> {
    u32::from_str_radix(body.get(at..at + 4)?, 16).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lit(json: &str) -> Norm {
        let mut n = Norm::default();
        n.push_literal(json, 0, json.len() - 1, usize::MAX);
        n
    }

    #[test]
    fn escapes_fullwidth_and_invisibles_map_back() {
        let body = "\"a\\u0034\u{ff11}\u{200b}\\ud83d\\ude00\\n\"";
        let n = lit(body);
        assert_eq!(n.text, "a41\u{1f600}\n");
        assert_eq!(n.source(1, 2), Some((2, 8)));
        assert_eq!(n.source(2, 3), Some((8, 11)));
        // The emoji's four bytes map to the twelve of its surrogate pair.
        assert_eq!(n.source(3, 7), Some((14, 26)));
        assert_eq!(n.source(0, n.text.len()), Some((1, 28)));
        assert_eq!(n.source(n.text.len(), n.text.len() + 1), None);
    }

    #[test]
    fn limit_stops_at_a_unit_boundary() {
        let body = "\"ab\\u0063d\"";
        let mut n = Norm::default();
        assert_eq!(n.push_literal(body, 0, body.len() - 1, 4), 2);
        assert_eq!(n.text, "ab");
    }
}
