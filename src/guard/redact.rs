//! Redaction: the scanned body with every Redact finding's source bytes replaced by
//! `[REDACTED:<detector>]`, and a `raw` part's decoded bytes redacted and re-encoded (pure).

use super::Action;
use super::GuardError;
use super::finding::{Finding, Span};
use super::validate::{decode_base64, encode_base64};
use crate::json;

/// See `Verdict::redact`.
pub(super) fn redact(findings: &[Finding], body: &str) -> Result<String, GuardError> {
    // Replacements over the body.
    let mut edits: Vec<Edit> = Vec::new();
    // (open, close) of a raw literal → replacements over its decoded bytes.
    let mut raws: Vec<((usize, usize), Vec<Edit>)> = Vec::new();
    for f in findings.iter().filter(|f| f.action == Action::Redact) {
        let marker = format!("[REDACTED:{}]", f.detector);
        for span in &f.spans {
            match *span {
                Span::Body { start, end } => edits.push((start, end, marker.clone())),
                Span::Raw {
                    open,
                    close,
                    start,
                    end,
                } => {
                    let entry = match raws.iter_mut().position(|r| r.0 == (open, close)) {
                        Some(i) => raws.get_mut(i),
                        None => {
                            raws.push(((open, close), Vec::new()));
                            raws.last_mut()
                        }
                    };
                    if let Some(entry) = entry {
                        entry.1.push((start, end, marker.clone()));
                    }
                }
            }
        }
    }
    for ((open, close), cuts) in raws {
        let value = json::unescape(body, open, close)?;
        let Some((bytes, alphabet)) = decode_base64(&value) else {
            continue;
        };
        let redacted = splice(&bytes, cuts);
        edits.push((
            open,
            close + 1,
            format!("\"{}\"", encode_base64(&redacted, alphabet)),
        ));
    }
    let out = String::from_utf8(splice(body.as_bytes(), edits))
        .map_err(|_| GuardError::Json(json::ScanError::Malformed))?;
    if let Some(path) = json::duplicate_keys(&out, 1)?.into_iter().next() {
        return Err(GuardError::DuplicateKey { path });
    }
    Ok(out)
}

/// Bytes `start..end` replaced by a text: (start, end, text).
type Edit = (usize, usize, String);

/// `bytes` with each edit's range replaced; overlapping edits merge (the first one's text wins).
fn splice(bytes: &[u8], mut edits: Vec<Edit>) -> Vec<u8> {
    edits.sort_by_key(|e| (e.0, std::cmp::Reverse(e.1)));
    let mut out = Vec::with_capacity(bytes.len());
    let mut at = 0;
    for (start, end, text) in edits {
        if end <= at {
            continue;
        }
        if start < at {
            // Overlaps the previous edit, whose marker now covers this one's tail too.
            at = end;
            continue;
        }
        out.extend_from_slice(bytes.get(at..start).unwrap_or_default());
        out.extend_from_slice(text.as_bytes());
        at = end;
    }
    out.extend_from_slice(bytes.get(at..).unwrap_or_default());
    out
}
