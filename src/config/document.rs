//! `gateway.toml` text to the raw model ([`RawConfig`]) with toml's own parser, on every core for
//! a large file, each error naming its line (no I/O).
//!
//! A large config is almost all `[[integrations]]` tables, and parsing and deserialising them is
//! most of what `validate` of a 100,000-integration file costs. So the text is cut before every
//! line that starts with exactly `[[integrations]]`, the pieces are grouped into batches of about
//! [`BATCH_BYTES`], and each batch is parsed and deserialised on its own, on all cores
//! ([`fast`]). This means the same as parsing the whole text when every batch parses:
//! - a cut that is not where a statement starts (inside a multi-line string, an array or an
//!   inline table, after `key =`) leaves the batch that holds the opening of that construct
//!   ending inside it, which toml refuses; the first such batch starts at a true statement (every
//!   cut before it is one), so it reads exactly as the whole text reads from there;
//! - a `[table]` header applies to the last `[[integrations]]` element above it, which is in its
//!   own batch; what could span two batches is a top-level key, so the pieces are joined only
//!   when no top-level key is in two of them and the part before the first cut has no
//!   `integrations` (else an `integrations = [...]` there would be silently extended).
//!
//! Whenever any of that does not hold, or anything fails, the text is parsed whole ([`whole`]) and
//! the errors reported are the whole file's: toml stops at the first unknown key, so to name every
//! one with its line, the document is walked one top-level key, and one integration, at a time in
//! the order serde reads them; an unknown key is removed from that part alone and the part read
//! again. That lists what removing each key from the whole document and reading it again would,
//! without reading the whole document up to 64 times.

use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use serde::Deserialize;
use toml::Spanned;
use toml::de::{DeString, DeTable, DeValue, Deserializer, ValueDeserializer};

use super::{RawConfig, RawIntegration, one_line};

/// Why the raw model could not be read: the message for `ConfigError::Parse`.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ParseError(pub String);

/// Text per batch of `[[integrations]]` tables: small enough that a batch's parsed tokens and
/// tree stay in cache and their memory is reused by the next batch, large enough that a batch
/// costs far more than handing it to a thread.
const BATCH_BYTES: usize = 64 * 1024;

/// The line that starts an integration, where the text is cut.
const CUT: &str = "[[integrations]]";

/// Most unknown keys listed for one file.
const MAX_UNKNOWN_KEYS_REPORTED: usize = 64;

/// Bytes of the offending line shown on each side of a parse error's position.
const EXCERPT_BYTES: usize = 40;

/// Deserialises the raw model from config text (see the module doc).
pub fn parse_raw(text: &str, threads: usize) -> Result<RawConfig, ParseError> {
    match fast(text, threads) {
        Some(raw) => Ok(raw),
        None => whole(text),
    }
}

/// Where the text is cut: the start of each line that starts with [`CUT`], grouped into batches
/// of at least [`BATCH_BYTES`] (the last may be shorter). Returns the head (text before the first
/// cut) and the batches' ranges.
fn batches(text: &str) -> (Range<usize>, Vec<Range<usize>>) {
    let mut cuts: Vec<usize> = text
        .match_indices(CUT)
        .map(|(i, _)| i)
        .filter(|&i| i == 0 || text.as_bytes()[i - 1] == b'\n')
        .collect();
    let head = 0..cuts.first().copied().unwrap_or(text.len());
    cuts.push(text.len());
    let mut out = Vec::new();
    let mut start = head.end;
    for &c in &cuts[1..] {
        if c - start >= BATCH_BYTES || c == text.len() {
            if c > start {
                out.push(start..c);
            }
            start = c;
        }
    }
    (head, out)
}

/// One batch, parsed and deserialised: its integrations and its other top-level keys.
type Batch<'i> = (
    Vec<RawIntegration>,
    Vec<(Spanned<DeString<'i>>, Spanned<DeValue<'i>>)>,
);

/// Parses one batch of `[[integrations]]` tables; `None` if it does not parse or deserialise.
fn batch(text: &str) -> Option<Batch<'_>> {
    let mut root = DeTable::parse(text).ok()?.into_inner();
    let key = root.keys().find(|k| k.get_ref() == "integrations")?.clone();
    let list = root.remove(&key)?;
    if !matches!(list.get_ref(), DeValue::Array(_)) {
        return None;
    }
    let integrations = Vec::<RawIntegration>::deserialize(ValueDeserializer::from(list)).ok()?;
    Some((integrations, root.into_iter().collect()))
}

/// The batched, parallel read (see the module doc); `None` means: read it whole.
fn fast(text: &str, threads: usize) -> Option<RawConfig> {
    let (head, ranges) = batches(text);
    let threads = threads.min(ranges.len()).max(1);
    let next = AtomicUsize::new(0);
    let failed = AtomicBool::new(false);
    let work = || {
        let mut done = Vec::new();
        while !failed.load(Ordering::Relaxed) {
            let i = next.fetch_add(1, Ordering::Relaxed);
            let Some(r) = ranges.get(i) else { break };
            match batch(&text[r.clone()]) {
                Some(b) => done.push((i, b)),
                None => failed.store(true, Ordering::Relaxed),
            }
        }
        done
    };
    let mut done: Vec<(usize, Batch<'_>)> = std::thread::scope(|s| {
        // A helper the system will not start (a pids or thread limit) only means fewer
        // helpers: the calling thread takes every batch nobody else took.
        let helpers: Vec<_> = (1..threads)
            .filter_map(|_| std::thread::Builder::new().spawn_scoped(s, work).ok())
            .collect();
        let mut done = work();
        for h in helpers {
            // A helper that panicked is a bug in a deserialiser; the whole read reports it.
            done.extend(h.join().ok()?);
        }
        Some(done)
    })?;
    if failed.load(Ordering::Relaxed) || done.len() != ranges.len() {
        return None;
    }
    done.sort_unstable_by_key(|(i, _)| *i);
    let mut root = DeTable::parse(&text[head.clone()]).ok()?;
    let top = root.get_mut();
    if top.keys().any(|k| k.get_ref() == "integrations") {
        return None;
    }
    let mut integrations = Vec::with_capacity(done.iter().map(|(_, b)| b.0.len()).sum());
    for (_, (list, others)) in done {
        integrations.extend(list);
        for (k, v) in others {
            if top.insert(k, v).is_some() {
                return None;
            }
        }
    }
    let mut raw = RawConfig::deserialize(Deserializer::from(root)).ok()?;
    raw.integrations = integrations;
    Some(raw)
}

/// Parses the whole text once and reads it part by part, so that every unknown key is named
/// with its line and any other error with its line, column and an excerpt (see the module doc).
fn whole(text: &str) -> Result<RawConfig, ParseError> {
    // Most texts that come here are valid (the batches declined them, e.g. a table after the
    // integrations): one read decides, and only an error pays for the part-by-part walk, which
    // needs the document parsed again.
    let doc = DeTable::parse(text).map_err(|e| ParseError(located(&e, text)))?;
    let span = doc.span();
    if let Ok(raw) = read_root(Spanned::new(span, DeValue::Table(doc.into_inner()))) {
        return Ok(raw);
    }
    let doc = DeTable::parse(text).map_err(|e| ParseError(located(&e, text)))?;
    let mut walk = Walk {
        text,
        lines: Vec::new(),
        rest: None,
        first: None,
    };
    let span = doc.span();
    for (key, value) in doc.get_ref() {
        let done = match value.get_ref() {
            DeValue::Array(items) if key.get_ref() == "integrations" => items
                .iter()
                .all(|item| walk.part(item.clone(), |t| read_integration(t).map(drop))),
            _ => {
                let mut one = DeTable::new();
                one.insert(key.clone(), value.clone());
                walk.part(Spanned::new(span.clone(), DeValue::Table(one)), |t| {
                    read_root(t).map(drop)
                })
            }
        };
        if !done {
            break;
        }
    }
    walk.finish()?;
    read_root(Spanned::new(span, DeValue::Table(doc.into_inner())))
        .map_err(|e| ParseError(located(&e, text)))
}

fn read_integration(v: Spanned<DeValue<'_>>) -> Result<RawIntegration, toml::de::Error> {
    RawIntegration::deserialize(ValueDeserializer::from(v))
}

/// The root table as the whole file's deserialiser reads it (a document, not a value).
fn read_root(v: Spanned<DeValue<'_>>) -> Result<RawConfig, toml::de::Error> {
    let span = v.span();
    match v.into_inner() {
        DeValue::Table(t) => RawConfig::deserialize(Deserializer::from(Spanned::new(span, t))),
        _ => unreachable!("read_root is given tables only"),
    }
}

/// The errors found so far while walking a document.
struct Walk<'t> {
    text: &'t str,
    /// Unknown keys: (line, message).
    lines: Vec<(usize, String)>,
    /// The error that ended the walk, when it is not an unknown key that could be removed.
    rest: Option<String>,
    /// The first error seen, reported with its position when no unknown key was listed.
    first: Option<toml::de::Error>,
}

impl Walk<'_> {
    /// Reads one part, removing each unknown key and reading it again; false once the walk is
    /// over (an error that is not a removable unknown key, or enough keys listed).
    fn part<'i>(
        &mut self,
        mut part: Spanned<DeValue<'i>>,
        read: impl Fn(Spanned<DeValue<'i>>) -> Result<(), toml::de::Error>,
    ) -> bool {
        while self.lines.len() < MAX_UNKNOWN_KEYS_REPORTED {
            let err = match read(part.clone()) {
                Ok(()) => return true,
                Err(e) => e,
            };
            let unknown = err.message().starts_with("unknown field");
            let removed = unknown
                && err
                    .span()
                    .is_some_and(|s| remove_in_value(part.get_mut(), &s));
            // Count bytes, not `&text[..start]`: a span is not promised to fall on a char boundary.
            let line = err.span().map(|s| {
                let b = self.text.as_bytes();
                let head = b.get(..s.start).unwrap_or(b);
                head.iter().filter(|&&c| c == b'\n').count() + 1
            });
            let at = line.map_or_else(String::new, |l| format!("line {l}: "));
            let msg = one_line(err.message().lines().next().unwrap_or_default());
            let first = self.first.is_none();
            if first {
                self.first = Some(err);
            }
            if first && !unknown {
                return false;
            }
            if !removed {
                self.rest = Some(format!("{at}{msg}"));
                return false;
            }
            self.lines.push((line.unwrap_or(0), format!("{at}{msg}")));
        }
        false
    }

    /// The walk's errors as one message, or `Ok` when it found none.
    fn finish(self) -> Result<(), ParseError> {
        let Some(first) = self.first else {
            return Ok(());
        };
        if self.lines.is_empty() {
            return Err(ParseError(located(&first, self.text)));
        }
        let mut lines = self.lines;
        lines.sort();
        let lines: Vec<String> = lines.into_iter().map(|(_, l)| l).collect();
        let mut out = format!(
            "{} unknown key(s):\n  - {}",
            lines.len(),
            lines.join("\n  - ")
        );
        if let Some(r) = self.rest {
            out.push_str(&format!("\n  - {r}"));
        }
        Err(ParseError(out))
    }
}

/// A parse error as `line L, column C: message`, then a short excerpt of the line around the
/// position. toml's own rendering quotes the offending line whole, which for a 30 MB line is a
/// 30 MB message.
fn located(err: &toml::de::Error, text: &str) -> String {
    let msg = one_line(err.message());
    let Some(span) = err.span() else {
        return msg;
    };
    let b = text.as_bytes();
    let at = span.start.min(b.len());
    let line_start = b[..at]
        .iter()
        .rposition(|&c| c == b'\n')
        .map_or(0, |p| p + 1);
    let line = b[..line_start].iter().filter(|&&c| c == b'\n').count() + 1;
    // Characters, not bytes: UTF-8 continuation bytes do not start one.
    let column = b[line_start..at]
        .iter()
        .filter(|&&c| c & 0xC0 != 0x80)
        .count()
        + 1;
    let line_end = b[at..]
        .iter()
        .position(|&c| c == b'\n')
        .map_or(b.len(), |p| at + p);
    let from = at.saturating_sub(EXCERPT_BYTES).max(line_start);
    let to = at.saturating_add(EXCERPT_BYTES).min(line_end);
    let near = one_line(&String::from_utf8_lossy(&b[from..to]));
    let (open, close) = (
        if from > line_start { "…" } else { "" },
        if to < line_end { "…" } else { "" },
    );
    format!("line {line}, column {column}: {msg}\n  near: {open}{near}{close}")
}

/// Removes the table key whose span is `span`, searching nested tables and arrays of tables.
fn remove_key_at(table: &mut DeTable<'_>, span: &Range<usize>) -> bool {
    let hit = table.keys().find(|k| k.span() == *span).cloned();
    if let Some(k) = hit {
        return table.remove(&k).is_some();
    }
    table
        .iter_mut()
        .any(|(_, v)| remove_in_value(v.get_mut(), span))
}

fn remove_in_value(v: &mut DeValue<'_>, span: &Range<usize>) -> bool {
    match v {
        DeValue::Table(t) => remove_key_at(t, span),
        DeValue::Array(a) => a.iter_mut().any(|e| remove_in_value(e.get_mut(), span)),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What `parse_raw` did before batches and the walk: deserialise the whole document, and on
    /// an unknown key remove it from the whole document and deserialise all of it again. The walk
    /// must report exactly what this did.
    fn reference(text: &str) -> Result<String, String> {
        let first = match toml::from_str::<RawConfig>(text) {
            Ok(raw) => return Ok(format!("{raw:?}")),
            Err(e) => e,
        };
        if !first.message().starts_with("unknown field") {
            return Err(located(&first, text));
        }
        let mut doc = DeTable::parse(text).unwrap();
        let mut walk = Walk {
            text,
            lines: Vec::new(),
            rest: None,
            first: None,
        };
        let span = doc.span();
        let part = Spanned::new(span, DeValue::Table(std::mem::take(doc.get_mut())));
        walk.part(part, |t| read_root(t).map(drop));
        Err(walk.finish().unwrap_err().0)
    }

    fn ours(text: &str) -> Result<String, String> {
        parse_raw(text, 4)
            .map(|r| format!("{r:?}"))
            .map_err(|e| e.0)
    }

    fn integration(i: usize, extra: &str) -> String {
        format!(
            "[[integrations]]\nname = \"a{i}\"\ncard = \"https://a{i}.example/c.json\"\n\
             origins = [\"https://a{i}.example\"]\nskills = [\"s\"]\ndata_classes = [\"public\"]\n{extra}"
        )
    }

    fn many(n: usize, extra: impl Fn(usize) -> String) -> String {
        let mut t = String::from("[client]\nallow_plain_http = true\n");
        for i in 0..n {
            t.push_str(&integration(i, &extra(i)));
        }
        t
    }

    #[test]
    fn a_large_file_read_in_batches_is_the_file_read_whole() {
        // Several batches (more than one thread's worth), probes and credentials as sub-tables,
        // a table after the integrations: all taken the fast way, and the same as one parse.
        let mut text = many(3000, |i| match i % 3 {
            0 => "[integrations.probe]\nskill = \"s\"\n".into(),
            1 => "credential = { type = \"bearer\", env = \"T\" }\n".into(),
            _ => String::new(),
        });
        text.push_str("[refresh]\nmin = \"5m\"\n");
        assert!(batches(&text).1.len() > 4, "the test needs several batches");
        let fast = fast(&text, 4).expect("a plain large file is read in batches");
        assert_eq!(fast.integrations.len(), 3000);
        assert_eq!(Ok(format!("{fast:?}")), reference(&text));
        // On one thread (a reload on a one-CPU gateway) the calling thread reads every batch.
        let alone = super::fast(&text, 1).expect("one thread reads the same batches");
        assert_eq!(format!("{alone:?}"), format!("{fast:?}"));
    }

    #[test]
    fn texts_the_batches_cannot_mean_the_same_as_whole_are_read_whole() {
        let cut_in_a_string = format!(
            "[listen]\npublic_url = \"\"\"\n{}\"\"\"\n{}",
            integration(0, ""),
            integration(1, "")
        );
        let cut_in_an_array = format!("[client]\nversions = [\n{}]\n", integration(0, ""));
        let list_before = format!("integrations = []\n{}", integration(0, ""));
        let spelled_otherwise = format!(
            "[[ integrations ]]\nname = \"x\"\ncard = \"https://x.example/c\"\n\
             origins = []\nskills = []\ndata_classes = []\n{}",
            integration(0, "")
        );
        let table_twice = format!(
            "[client]\n{}[[client.trusted_keys]]\norigin = \"https://a.example\"\njwks = \"k\"\n",
            integration(0, "")
        );
        let listen_twice = format!("[listen]\n{}[listen]\n", integration(0, ""));
        for (text, whole_ok) in [
            (cut_in_a_string, true),
            (cut_in_an_array, false),
            (list_before, false),
            (spelled_otherwise, true),
            (table_twice, true),
            (listen_twice, false),
        ] {
            assert!(fast(&text, 4).is_none(), "{text}");
            let want = reference(&text);
            assert_eq!(want.is_ok(), whole_ok, "{text}\n{want:?}");
            assert_eq!(ours(&text), want, "{text}");
        }
    }

    #[test]
    fn every_error_is_the_one_a_whole_file_read_reports() {
        let root_unknown = format!("{}[nonsense]\nx = 1\n", many(3, |_| String::new()));
        let seventy_unknown = many(70, |i| format!("bogus{i} = 1\n"));
        let unknown_then_type = many(5, |i| match i {
            1 => "bogus = 1\n".into(),
            3 => "max_body_bytes = \"big\"\n".into(),
            4 => "also_bogus = 1\n".into(),
            _ => String::new(),
        });
        let type_then_unknown = format!(
            "[client]\nmax_card_bytes = \"big\"\n{}",
            integration(0, "bogus = 1\n")
        );
        let missing_and_unknown = format!(
            "{}[[integrations]]\nname = \"x\"\nbogus = 2\n[state]\nwrong = 1\n",
            many(2, |_| String::new())
        );
        let nested = many(2, |_| {
            "[integrations.probe]\nskill = \"s\"\nkid = 1\n".into()
        });
        let syntax = many(4, |i| {
            if i == 2 {
                "x = \n".into()
            } else {
                String::new()
            }
        });
        for text in [
            root_unknown,
            seventy_unknown,
            unknown_then_type,
            type_then_unknown,
            missing_and_unknown,
            nested,
            syntax,
        ] {
            let want = reference(&text);
            assert!(want.is_err(), "{text}");
            assert_eq!(ours(&text), want, "{text}");
        }
    }
}
