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

/// Text to match, with `from[i]..to[i]` the source span of byte `i` (offsets into whatever the
/// pieces were read from: the body, or a decoded part). `u32` halves the map (eight bytes per
/// byte of text instead of sixteen): bodies are far below 4 GiB, and offsets past it saturate.
#[derive(Debug, Default, Clone)]
pub(super) struct Norm {
    pub(super) text: String,
    pub(super) from: Vec<u32>,
    pub(super) to: Vec<u32>,
}

impl Norm {
    /// Empties it, keeping its buffers.
    pub(super) fn clear(&mut self) {
        self.text.clear();
        self.from.clear();
        self.to.clear();
    }

    /// Appends `c`, read from source bytes `start..end`, normalised.
    fn push_char(&mut self, c: char, start: usize, end: usize) {
        if c.is_ascii() {
            self.text.push(c);
            self.from.push(off(start));
            self.to.push(off(end));
            return;
        }
        if DEFAULT_IGNORABLE.contains(c) {
            return;
        }
        let before = self.text.len();
        self.text.extend(std::iter::once(c).nfkc());
        let added = self.text.len() - before;
        self.from.extend(std::iter::repeat_n(off(start), added));
        self.to.extend(std::iter::repeat_n(off(end), added));
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
        let mut i = first;
        while i < close {
            // Plain ASCII (nearly all text) is copied in one go: NFKC leaves it as it is.
            let run = b
                .get(i..close.min(first.saturating_add(limit)))
                .unwrap_or_default()
                .iter()
                .take_while(|&&c| c.is_ascii() && c != b'\\')
                .count();
            if run > 0 {
                self.text.push_str(body.get(i..i + run).unwrap_or_default());
                self.from.extend(off(i)..off(i + run));
                self.to.extend(off(i + 1)..off(i + run + 1));
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

    /// The source span of normalised bytes `start..end` (`start < end`).
    pub(super) fn source(&self, start: usize, end: usize) -> Option<(usize, usize)> {
        let from = usize::try_from(*self.from.get(start)?).ok()?;
        let to = usize::try_from(*self.to.get(end.checked_sub(1)?)?).ok()?;
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
        assert_eq!(n.from.len(), n.text.len());
    }

    #[test]
    fn limit_stops_at_a_unit_boundary() {
        let body = "\"ab\\u0063d\"";
        let mut n = Norm::default();
        assert_eq!(n.push_literal(body, 0, body.len() - 1, 4), 2);
        assert_eq!(n.text, "ab");
    }
}
