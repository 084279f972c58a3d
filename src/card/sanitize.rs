//! Sanitising provider-written text before it is shown to a planner or an operator (pure).
//!
//! Card strings are a prompt-injection channel: card content is untrusted input.
//! The rule, applied to every string in the profile's `Display` and to skill tags:
//! 1. remove control characters (Unicode `Cc` other than whitespace) and every invisible format
//!    character: the general category `Cf` (bidi embeddings, overrides, isolates and marks,
//!    zero-width space and joiners, word joiner and invisible operators, BOM, soft hyphen,
//!    interlinear annotation, Egyptian hieroglyph and shorthand format controls, the "tag" block
//!    used to smuggle invisible text) and the property `Default_Ignorable_Code_Point` (variation
//!    selectors, Hangul fillers, combining grapheme joiner, the reserved ignorable ranges). Both
//!    come from the Unicode Character Database as ICU4X bakes it (`icu_properties`, already in
//!    the tree through `url` → `idna`), not from a list kept by hand, so a new Unicode version's
//!    format characters are removed once the crate is updated;
//! 2. fold every run of whitespace (including newlines and tabs) into one space, and trim;
//! 3. cut to a fixed number of characters; a cut string ends with `…` (counted in the limit).

use icu_properties::props::{DefaultIgnorableCodePoint, GeneralCategory};
use icu_properties::{
    CodePointMapData, CodePointMapDataBorrowed, CodePointSetData, CodePointSetDataBorrowed,
};

/// `Default_Ignorable_Code_Point`, from the compiled Unicode data (no allocation, no I/O).
const DEFAULT_IGNORABLE: CodePointSetDataBorrowed<'static> =
    CodePointSetData::new::<DefaultIgnorableCodePoint>();
/// `General_Category`, from the compiled Unicode data.
const CATEGORY: CodePointMapDataBorrowed<'static, GeneralCategory> =
    CodePointMapData::<GeneralCategory>::new();

/// Longest card or skill `name` kept, in characters.
pub const MAX_NAME_CHARS: usize = 128;
/// Longest card `description` kept, in characters.
pub const MAX_CARD_DESCRIPTION_CHARS: usize = 2048;
/// Longest skill `description` kept, in characters.
pub const MAX_SKILL_DESCRIPTION_CHARS: usize = 1024;
/// Longest example kept, in characters.
pub const MAX_EXAMPLE_CHARS: usize = 512;
/// Most examples kept per skill (the rest are dropped).
pub const MAX_EXAMPLES: usize = 10;
/// Longest tag kept, in characters.
pub const MAX_TAG_CHARS: usize = 64;
/// Most tags kept per skill (the rest are dropped).
pub const MAX_TAGS: usize = 32;

/// Whether `c` is removed by [`sanitize`]: a non-whitespace control character or an invisible
/// format character (`Cf` or `Default_Ignorable_Code_Point`, see the module docs). Also used by
/// validation to refuse such characters in identifiers, where removing them silently would
/// change meaning.
pub fn is_hidden(c: char) -> bool {
    if c.is_ascii() {
        // Fast path (most card text): ASCII controls except the whitespace ones. No ASCII
        // character is `Cf` or default-ignorable.
        return c.is_ascii_control() && !c.is_ascii_whitespace() && c != '\u{0B}';
    }
    // Whitespace is folded, never removed (neither property holds any, by their definitions).
    !c.is_whitespace()
        && (matches!(
            CATEGORY.get(c),
            GeneralCategory::Control | GeneralCategory::Format
        ) || DEFAULT_IGNORABLE.contains(c))
}

/// Applies the module's rule to `text`, keeping at most `max_chars` characters (`max_chars >= 1`).
pub fn sanitize(text: &str, max_chars: usize) -> String {
    let max_chars = max_chars.max(1);
    // Fast path: short printable ASCII with single inner spaces is already in its final form.
    let b = text.as_bytes();
    if b.len() <= max_chars
        && b.iter().all(|&c| (0x20..0x7f).contains(&c))
        && b.first() != Some(&b' ')
        && b.last() != Some(&b' ')
        && !b.windows(2).any(|w| w == b"  ")
    {
        return text.to_owned();
    }
    let mut out = String::with_capacity(text.len().min(max_chars * 4));
    let mut n = 0usize;
    let mut pending_space = false;
    for c in text.chars() {
        if c.is_whitespace() {
            pending_space = n > 0;
            continue;
        }
        if is_hidden(c) {
            continue;
        }
        let need = usize::from(pending_space) + 1;
        if n + need > max_chars {
            // Make room for the ellipsis inside the limit.
            while n >= max_chars {
                if out.pop().is_some() {
                    n -= 1;
                } else {
                    break;
                }
            }
            let trimmed = out.trim_end().len();
            out.truncate(trimmed);
            out.push('…');
            return out;
        }
        if pending_space {
            out.push(' ');
            n += 1;
            pending_space = false;
        }
        out.push(c);
        n += 1;
    }
    out
}

/// Longest line [`bounded_report`] keeps for the gateway's own error texts, in characters.
pub const MAX_REPORT_LINE_CHARS: usize = 240;
/// Most lines [`bounded_report`] keeps for an error text served back (`/readyz`).
pub const MAX_REPORT_LINES: usize = 12;

/// An error text the gateway keeps or serves (a refused config's message, a refresh failure),
/// bounded and safe to show: every character [`is_hidden`] removes is removed, other whitespace
/// controls (tab, CR) become a space, each line is cut to `max_line_chars` (ending with `…`),
/// and at most `max_lines` lines are kept, followed by one saying how many were left out.
///
/// Unlike [`sanitize`], spaces and line breaks are kept, so a parser's multi-line message (its
/// caret under the column) still reads. The work is linear in `text` and the result is at most
/// about `max_lines × max_line_chars` characters whatever `text` holds (a NUL-padded or a
/// 50 MB line included).
pub fn bounded_report(text: &str, max_line_chars: usize, max_lines: usize) -> String {
    let max_line_chars = max_line_chars.max(1);
    let mut out = String::new();
    let mut lines = text.split('\n');
    for line in lines.by_ref().take(max_lines.max(1)) {
        if !out.is_empty() {
            out.push('\n');
        }
        let shown = |c: char| if c.is_whitespace() { ' ' } else { c };
        let mut kept = line.chars().filter(|&c| !is_hidden(c));
        let mut n = 0usize;
        while let Some(c) = kept.next() {
            if n + 1 == max_line_chars {
                // The last place: the ellipsis when anything follows.
                out.push(if kept.next().is_some() {
                    '…'
                } else {
                    shown(c)
                });
                break;
            }
            out.push(shown(c));
            n += 1;
        }
        let kept = out.trim_end_matches(' ').len();
        out.truncate(kept);
    }
    let left = lines.count();
    if left > 0 {
        out.push_str(&format!("\n… ({left} more line(s) not shown)"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_bidi_and_zero_width_are_removed() {
        assert_eq!(
            sanitize("a\u{0007}b\u{202E}c\u{200B}d\u{FEFF}e\u{E0041}f", 100),
            "abcdef"
        );
        assert_eq!(sanitize("x\u{2066}y\u{2069}z\u{FE0F}", 100), "xyz");
    }

    #[test]
    fn whitespace_is_folded_and_trimmed() {
        assert_eq!(
            sanitize("  Ignore\n\n previous\t\tinstructions \r\n", 100),
            "Ignore previous instructions"
        );
        assert_eq!(sanitize(" \n\t ", 100), "");
    }

    #[test]
    fn long_text_is_cut_with_an_ellipsis_within_the_limit() {
        let s = sanitize(&"é".repeat(50), 10);
        assert_eq!(s.chars().count(), 10);
        assert!(s.ends_with('…'));
        assert_eq!(sanitize("abcd", 4), "abcd");
        let cut = sanitize("abc def", 5);
        assert_eq!(cut, "abc…");
        assert!(cut.chars().count() <= 5);
        assert_eq!(sanitize("abcdef", 1), "…");
    }

    #[test]
    fn fast_path_agrees_with_the_general_rule() {
        for t in [
            "plain",
            "two words",
            " lead",
            "trail ",
            "a  b",
            "x\ty",
            "",
            "abcdefghijk",
        ] {
            let slow: String = {
                // The general rule, spelled out: fold whitespace, drop hidden, cut.
                let folded = t.split_whitespace().collect::<Vec<_>>().join(" ");
                if folded.chars().count() <= 10 {
                    folded
                } else {
                    sanitize(&format!("{t}\u{200b}"), 10)
                }
            };
            assert_eq!(sanitize(t, 10), slow, "{t:?}");
        }
        // ASCII classification matches char's own.
        for b in 0u8..0x80 {
            let c = b as char;
            assert_eq!(is_hidden(c), c.is_control() && !c.is_whitespace(), "{b:#x}");
        }
    }

    #[test]
    fn hidden_chars_cover_the_documented_set() {
        for c in [
            '\u{0}',
            '\u{1b}',
            '\u{7f}',
            '\u{200d}',
            '\u{2067}',
            '\u{E0001}',
            '\u{00AD}',
        ] {
            assert!(is_hidden(c), "{:x}", c as u32);
        }
        for c in ['a', ' ', '\n', 'é', '中', '😀'] {
            assert!(!is_hidden(c), "{:x}", c as u32);
        }
    }

    #[test]
    fn format_characters_the_old_list_kept_are_removed() {
        // Egyptian hieroglyph format controls (Cf, not default-ignorable) and shorthand format
        // controls (both): the hand-written list kept them.
        for c in [
            '\u{13430}',
            '\u{13438}',
            '\u{1343F}',
            '\u{1BCA0}',
            '\u{1BCA1}',
            '\u{1BCA2}',
            '\u{1BCA3}',
        ] {
            assert!(is_hidden(c), "{:x}", c as u32);
            assert_eq!(sanitize(&format!("a{c}b"), 10), "ab", "{:x}", c as u32);
        }
        // Other Cf and default-ignorable characters outside the old list.
        for c in [
            '\u{0600}',
            '\u{070F}',
            '\u{110BD}',
            '\u{E0FFF}',
            '\u{FFF0}',
            '\u{2065}',
        ] {
            assert!(is_hidden(c), "{:x}", c as u32);
        }
        // Visible neighbours stay.
        for c in ['\u{13000}', '\u{1BC9C}', '\u{1BC00}', '\u{0627}'] {
            assert!(!is_hidden(c), "{:x}", c as u32);
        }
    }

    /// Characters a hostile card string is made of: controls, bidi and every other format
    /// character, the ignorable ranges, whitespace of every kind, multi-byte letters, and any
    /// character at all.
    fn hostile_char() -> impl proptest::strategy::Strategy<Value = char> {
        use proptest::char::range;
        use proptest::prelude::*;
        prop_oneof![
            any::<char>(),
            range('\u{0}', '\u{A0}'),
            range('\u{0600}', '\u{0605}'),
            range('\u{1680}', '\u{180F}'),
            range('\u{2000}', '\u{206F}'),
            range('\u{FE00}', '\u{FEFF}'),
            range('\u{FFF0}', '\u{FFFB}'),
            range('\u{13430}', '\u{1345F}'),
            range('\u{1BCA0}', '\u{1BCA3}'),
            range('\u{1D173}', '\u{1D17A}'),
            range('\u{E0000}', '\u{E01EF}'),
            Just('\u{3164}'),
            Just('\u{115F}'),
            range('a', 'e'),
            Just(' '),
            Just('é'),
            Just('中'),
            Just('😀'),
        ]
    }

    proptest::proptest! {
        /// Whatever the input, the output holds no control, format or default-ignorable
        /// character (checked against a second Unicode table, not only against `is_hidden`), no
        /// whitespace but single inner spaces, at most `max` characters, and every visible
        /// character of the input when it was not cut.
        #[test]
        fn output_has_no_hidden_character(
            chars in proptest::collection::vec(hostile_char(), 0..40),
            max in 1usize..50,
        ) {
            use unicode_general_category::{GeneralCategory as Gc, get_general_category};
            let text: String = chars.into_iter().collect();
            let out = sanitize(&text, max);
            for c in out.chars() {
                proptest::prop_assert!(!is_hidden(c), "{:x} in {:?}", c as u32, out);
                proptest::prop_assert!(!DEFAULT_IGNORABLE.contains(c), "{:x}", c as u32);
                proptest::prop_assert!(
                    !matches!(get_general_category(c), Gc::Format | Gc::Control),
                    "{:x} in {:?}", c as u32, out
                );
                proptest::prop_assert!(c == ' ' || !c.is_whitespace(), "{:x}", c as u32);
            }
            proptest::prop_assert!(out.chars().count() <= max);
            proptest::prop_assert!(!out.starts_with(' ') && !out.ends_with(' ') && !out.contains("  "));
            let visible: String = text
                .chars()
                .filter(|&c| !is_hidden(c))
                .collect::<String>()
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ");
            if visible.chars().count() <= max {
                proptest::prop_assert_eq!(out, visible);
            } else {
                proptest::prop_assert!(out.ends_with('…'));
            }
        }
    }

    #[test]
    fn a_report_is_bounded_and_keeps_no_control_character_whatever_the_text() {
        let nul_padded = format!("line 1: bad{}\nsecond\tline\r", "\0".repeat(5_000_000));
        let long_line = format!("a = \"{}\"", "x".repeat(50_000_000));
        let many = "problem\n".repeat(1000);
        for text in [nul_padded.as_str(), long_line.as_str(), many.as_str()] {
            let r = bounded_report(text, 40, 3);
            assert!(r.chars().count() <= 3 * 41 + 40, "{r}");
            assert!(!r.chars().any(|c| c.is_control() && c != '\n'), "{r:?}");
            assert!(!r.chars().any(is_hidden), "{r:?}");
        }
        assert_eq!(
            bounded_report(&nul_padded, 40, 3),
            "line 1: bad\nsecond line"
        );
        let cut = bounded_report(&long_line, 10, 3);
        assert_eq!(cut, "a = \"xxxx…");
        assert_eq!(cut.chars().count(), 10);
        assert_eq!(
            bounded_report(&many, 40, 2),
            "problem\nproblem\n… (999 more line(s) not shown)"
        );
        // Indentation and a parser's caret survive.
        assert_eq!(
            bounded_report("  |\n1 | a\n  |   ^", 40, 5),
            "  |\n1 | a\n  |   ^"
        );
    }
}
