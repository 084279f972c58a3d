//! Validators where a pattern alone lies (Luhn for card numbers, mod-97 for IBANs, SSN shape
//! rules, JWT headers), the high-entropy judgement of token runs and the base64 reading of them
//! (pure), and the base64 of `raw` parts.

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};

/// The validator of one pattern.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Check {
    /// The match is the finding.
    None,
    /// Card numbers: the 13–19 digit windows of the run, between group boundaries, passing Luhn.
    Pci,
    /// IBAN: 15–34 characters after removing spaces, mod-97 = 1.
    Iban,
    /// US SSN: same separator twice; no area 000, 666 or 9xx, no group 00, no serial 0000.
    Ssn,
    /// E.164: 8–15 digits after the `+`.
    Phone,
    /// JWT: the first segment is base64url JSON naming an `alg`.
    Jwt,
}

/// The validator of built-in `name`.
pub(super) fn for_builtin(name: &str) -> Check {
    match name {
        "pci" => Check::Pci,
        "iban" => Check::Iban,
        "ssn" => Check::Ssn,
        "phone" => Check::Phone,
        "jwt" => Check::Jwt,
        _ => Check::None,
    }
}

impl Check {
    /// Whether the pattern's matches are short (tens of bytes), so a rejected candidate can be
    /// searched again from its second character without making the pass quadratic.
    pub(super) fn bounded(self) -> bool {
        matches!(self, Check::Pci | Check::Iban | Check::Ssn | Check::Phone)
    }

    /// Pushes the findings (byte spans of `text`) of the candidate `start..end`.
    pub(super) fn spans(self, text: &str, start: usize, end: usize, out: &mut Vec<(usize, usize)>) {
        let Some(m) = text.get(start..end) else {
            return;
        };
        let ok = match self {
            Check::None => true,
            Check::Pci => return card_windows(m, start, out),
            Check::Iban => iban(m),
            Check::Ssn => ssn(m),
            Check::Phone => (8..=15).contains(&m.bytes().filter(u8::is_ascii_digit).count()),
            Check::Jwt => jwt(m),
        };
        if ok {
            out.push((start, end));
        }
    }
}

/// Shortest and longest card number (ISO/IEC 7812 PANs).
const PAN_DIGITS: std::ops::RangeInclusive<usize> = 13..=19;

/// The windows of a digit run (13–19 digits with single spaces or dashes between) that are card
/// numbers: 13–19 digits starting and ending at group boundaries (the run's ends or next to a
/// separator) and passing Luhn. Without separators only the whole run counts, so an ordinary long
/// number is not searched for a lucky substring. At most 7 windows start at each boundary.
fn card_windows(run: &str, offset: usize, out: &mut Vec<(usize, usize)>) {
    // (byte offset of the group's first digit, index of that digit in the run's digits)
    let bytes = run.as_bytes();
    let mut digits: Vec<u8> = Vec::with_capacity(bytes.len());
    let mut digit_at: Vec<usize> = Vec::with_capacity(bytes.len());
    let mut starts: Vec<usize> = vec![0];
    let mut ends: Vec<bool> = Vec::new();
    for (i, &b) in bytes.iter().enumerate() {
        if b.is_ascii_digit() {
            digits.push(b - b'0');
            digit_at.push(i);
            ends.push(false);
        } else if let Some(last) = ends.last_mut() {
            *last = true;
            starts.push(digits.len());
        }
    }
    if let Some(last) = ends.last_mut() {
        *last = true;
    }
    let mut covered = 0;
    for &s in &starts {
        if s < covered {
            continue;
        }
        for len in PAN_DIGITS.rev() {
            let e = s + len;
            let boundary = e <= digits.len() && ends.get(e - 1).copied().unwrap_or(false);
            if boundary && digits.get(s..e).is_some_and(luhn) {
                if let (Some(&a), Some(&b)) = (digit_at.get(s), digit_at.get(e - 1)) {
                    out.push((offset + a, offset + b + 1));
                }
                covered = e;
                break;
            }
        }
    }
}

/// The Luhn check digit rule over decimal digits.
pub(super) fn luhn(digits: &[u8]) -> bool {
    let sum: u32 = digits
        .iter()
        .rev()
        .enumerate()
        .map(|(i, &d)| {
            let d = u32::from(d);
            if i % 2 == 1 {
                let x = d * 2;
                if x > 9 { x - 9 } else { x }
            } else {
                d
            }
        })
        .sum();
    sum.is_multiple_of(10)
}

/// ISO 13616: move the first four characters to the end, letters to 10..35, mod 97 = 1.
pub(super) fn iban(s: &str) -> bool {
    let compact: Vec<u8> = s.bytes().filter(|b| *b != b' ').collect();
    if !(15..=34).contains(&compact.len()) {
        return false;
    }
    let (head, tail) = compact.split_at(4);
    let mut rem: u32 = 0;
    for &b in tail.iter().chain(head) {
        let v = match b {
            b'0'..=b'9' => u32::from(b - b'0'),
            b'A'..=b'Z' => u32::from(b - b'A') + 10,
            _ => return false,
        };
        rem = if v >= 10 {
            (rem * 100 + v) % 97
        } else {
            (rem * 10 + v) % 97
        };
    }
    rem == 1
}

/// SSN shape rules (SSA): `AAA-GG-SSSS` with the same separator twice.
pub(super) fn ssn(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() != 11 || b.get(3) != b.get(6) {
        return false;
    }
    let (area, group, serial) = (&s[0..3], &s[4..6], &s[7..11]);
    area != "000" && area != "666" && !area.starts_with('9') && group != "00" && serial != "0000"
}

/// A JWT's header segment decodes (base64url) to a JSON object with an `alg`.
fn jwt(s: &str) -> bool {
    let head = s.split('.').next().unwrap_or("");
    URL_SAFE_NO_PAD
        .decode(head)
        .ok()
        .and_then(|h| serde_json::from_slice::<serde_json::Value>(&h).ok())
        .is_some_and(|v| v.get("alg").is_some())
}

/// Whether `start..end` of `text` is not glued to a letter or digit on either side.
pub(super) fn whole_word(text: &str, start: usize, end: usize) -> bool {
    let before = text.get(..start).and_then(|t| t.chars().next_back());
    let after = text.get(end..).and_then(|t| t.chars().next());
    !before.is_some_and(char::is_alphanumeric) && !after.is_some_and(char::is_alphanumeric)
}

/// Shortest base64 run inside text that is decoded and scanned (18 decoded bytes).
pub(super) const BASE64_MIN: usize = 24;

/// The text a base64 or base64url run decodes to, if it decodes to UTF-8 of which at least 90% are
/// printable (tab, newline and carriage return count as printable).
pub(super) fn base64_text(run: &str) -> Option<String> {
    if run.len() < BASE64_MIN {
        return None;
    }
    let body = run.trim_end_matches('=');
    let bytes = if body.contains(['-', '_']) {
        URL_SAFE_NO_PAD.decode(body).ok()?
    } else {
        STANDARD_NO_PAD.decode(body).ok()?
    };
    let text = String::from_utf8(bytes).ok()?;
    let total = text.chars().count().max(1);
    let printable = text
        .chars()
        .filter(|c| !c.is_control() || matches!(c, '\t' | '\n' | '\r'))
        .count();
    (printable * 10 >= total * 9).then_some(text)
}

/// Shortest token `high_entropy` judges.
pub(super) const ENTROPY_MIN_LEN: usize = 32;
/// Shannon entropy, in bits per character, above which a token is a secret. Hex (UUIDs, hashes)
/// has at most 4.0 bits per character, so it never reaches this; 32+ random base64 characters
/// average about 4.6–5.0.
pub(super) const ENTROPY_BITS: f64 = 4.3;

/// Whether a token run looks like a generated secret: at least [`ENTROPY_MIN_LEN`] characters,
/// upper- and lowercase letters and digits all present (ordinary ids and words lack one), and
/// Shannon entropy above [`ENTROPY_BITS`].
pub(super) fn high_entropy(token: &str) -> bool {
    let t = token.trim_end_matches('=');
    if t.len() < ENTROPY_MIN_LEN {
        return false;
    }
    let b = t.as_bytes();
    if !(b.iter().any(u8::is_ascii_uppercase)
        && b.iter().any(u8::is_ascii_lowercase)
        && b.iter().any(u8::is_ascii_digit))
    {
        return false;
    }
    let mut counts = [0u32; 256];
    for &c in b {
        if let Some(n) = counts.get_mut(usize::from(c)) {
            *n += 1;
        }
    }
    let len = b.len() as f64;
    let bits: f64 = counts
        .iter()
        .filter(|&&n| n > 0)
        .map(|&n| {
            let p = f64::from(n) / len;
            -p * p.log2()
        })
        .sum();
    bits > ENTROPY_BITS
}

/// Which base64 alphabet and padding a `raw` value used, so a redaction re-encodes it alike.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Alphabet {
    Standard,
    StandardNoPad,
    UrlSafe,
    UrlSafeNoPad,
}

/// Decodes a `raw` value, with the alphabet it used.
pub(super) fn decode_base64(value: &str) -> Option<(Vec<u8>, Alphabet)> {
    [
        (Alphabet::Standard, &STANDARD),
        (Alphabet::StandardNoPad, &STANDARD_NO_PAD),
        (Alphabet::UrlSafe, &URL_SAFE),
        (Alphabet::UrlSafeNoPad, &URL_SAFE_NO_PAD),
    ]
    .into_iter()
    .find_map(|(a, e)| e.decode(value).ok().map(|b| (b, a)))
}

/// Encodes bytes in `alphabet`.
pub(super) fn encode_base64(bytes: &[u8], alphabet: Alphabet) -> String {
    match alphabet {
        Alphabet::Standard => STANDARD.encode(bytes),
        Alphabet::StandardNoPad => STANDARD_NO_PAD.encode(bytes),
        Alphabet::UrlSafe => URL_SAFE.encode(bytes),
        Alphabet::UrlSafeNoPad => URL_SAFE_NO_PAD.encode(bytes),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn luhn_iban_ssn() {
        let d = |s: &str| s.bytes().map(|b| b - b'0').collect::<Vec<_>>();
        assert!(luhn(&d("4111111111111111")));
        assert!(!luhn(&d("4111111111111112")));
        assert!(iban("GB82 WEST 1234 5698 7654 32"));
        assert!(iban("DE89370400440532013000"));
        assert!(!iban("DE89370400440532013001"));
        assert!(ssn("123-45-6789"));
        for bad in [
            "000-12-3456",
            "666-12-3456",
            "912-12-3456",
            "123-00-4567",
            "123-45-0000",
            "123-45 6789",
        ] {
            assert!(!ssn(bad), "{bad}");
        }
    }

    #[test]
    fn card_windows_need_group_boundaries() {
        let mut out = Vec::new();
        card_windows("1234 4111 1111 1111 1111", 0, &mut out);
        assert_eq!(out, vec![(5, 24)]);
        out.clear();
        // No separators: only the whole run is a candidate.
        card_windows("12344111111111111111", 0, &mut out);
        assert!(out.is_empty());
    }

    #[test]
    fn entropy_spares_uuids_hashes_and_ids() {
        for ordinary in [
            "550e8400-e29b-41d4-a716-446655440000",
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
            "order_2024_11_30_customer_000123_line_0004",
            "ThisIsAVeryLongCamelCaseIdentifierName1",
            "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA1a",
        ] {
            assert!(!high_entropy(ordinary), "{ordinary}");
        }
        assert!(high_entropy("wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY9x"));
        assert!(high_entropy(
            "Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MGFiY2RlZmdoaWprbG1u"
        ));
    }
}
