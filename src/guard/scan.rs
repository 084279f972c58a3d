//! The scan of a request (and, record-only, of an answer): which string literals of the body are
//! content (text, data, raw bytes, file names, URLs, metadata), their normalised text matched in
//! one pass per unit within the policy's byte budget, and the verdict (pure).
//!
//! Memory: an answer (up to 16 MiB) is scanned as its literals are met, one at a time, so nothing
//! is held per literal (`["","",…]` was ~90 bytes of sites per 3 bytes of text); a request's
//! literals are collected (text parts are scanned before the rest) only while the budget can
//! still reach them: past it only their length is counted, as unscanned.

use std::borrow::Cow;

use super::detectors::{Detectors, Hit, Matcher, UNSCANNED, URL_CLASS, URL_ORIGIN};
use super::finding::{Finding, Span};
use super::text::Norm;
use super::validate;
use super::{Action, GuardError, OnUnscanned, Policy, Shape};
use crate::json::{self, Seg};
use crate::types::origin::origin_of_plain_url;

/// The outcome of a scan.
#[derive(Debug, Clone, Default)]
pub struct Verdict {
    /// Every finding, in scan order.
    pub findings: Vec<Finding>,
    /// Bytes of content left unscanned because the budget ran out.
    pub unscanned_bytes: usize,
    /// What redaction rescans with; set only when a finding is to be redacted.
    rescan: Option<Box<(Detectors, Policy, Shape)>>,
}

/// Most rounds of redact-then-rescan before a redaction is given up on. Cutting a match out can
/// join what is left around it into a new one (`a.b@c.examp` + marker is an address again);
/// each round redacts what the last one exposed.
const REDACT_ROUNDS: usize = 4;

impl Verdict {
    /// `None` = nothing found (forward as is); else the strongest action among findings (a budget
    /// overrun under `on_unscanned = refuse` is a Refuse finding of detector `unscanned`, path `$`).
    pub fn action(&self) -> Option<Action> {
        self.findings.iter().map(|f| f.action).max()
    }

    /// The first refusing finding, for the error (detector and path; never the matched text).
    pub fn refusal(&self) -> Option<&Finding> {
        self.findings.iter().find(|f| f.action == Action::Refuse)
    }

    /// Data classes of findings that still leave (action Record), each once, in scan order.
    pub fn classes_leaving(&self) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        for f in self.findings.iter().filter(|f| f.action == Action::Record) {
            if !out.contains(&f.class.as_str()) {
                out.push(&f.class);
            }
        }
        out
    }

    /// The body with every Redact finding replaced by `[REDACTED:<detector>]`: valid JSON and
    /// UTF-8, every byte outside the replaced string literals unchanged. Errs when a redaction
    /// would give an object two equal keys (the caller then refuses). `body` must be the scanned one.
    pub fn redact(&self, body: &str) -> Result<String, GuardError> {
        let mut out = super::redact::redact(&self.findings, body)?;
        let Some(rescan) = &self.rescan else {
            return Ok(out);
        };
        let (all, policy, shape) = rescan.as_ref();
        for _ in 0..REDACT_ROUNDS {
            let mut again = scan_request(all, policy, &out, *shape);
            // The budget was judged on the caller's body; markers may make the copy a little longer.
            again.findings.retain(|f| f.detector != UNSCANNED);
            if let Some(f) = again.findings.iter().find(|f| f.action == Action::Refuse) {
                return Err(GuardError::RedactionExposed {
                    detector: f.detector.clone(),
                    path: f.path.clone(),
                });
            }
            if again.action().is_none() || again.findings.iter().all(|f| f.action == Action::Record)
            {
                // A recorded finding the redaction exposed (markers joining their surroundings)
                // of a class the caller's scan did not have would leave unjudged by the
                // integration's data classes: refuse it like an exposed refusal.
                let known = self.classes_leaving();
                if let Some(f) = again
                    .findings
                    .iter()
                    .find(|f| !known.contains(&f.class.as_str()))
                {
                    return Err(GuardError::RedactionExposed {
                        detector: f.detector.clone(),
                        path: f.path.clone(),
                    });
                }
                return Ok(out);
            }
            out = super::redact::redact(&again.findings, &out)?;
        }
        Err(GuardError::RedactionUnstable {
            rounds: REDACT_ROUNDS,
        })
    }
}

/// What part of the request a string literal is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    /// A text part's `text` (the message's text parts are scanned as one concatenation).
    Text,
    /// Any other scanned string: data, metadata, file name.
    Plain,
    /// A part's `raw` (base64) of part `n`.
    Raw(usize),
    /// A part's `url`.
    Url,
    /// A part's `mediaType` (not scanned; decides whether `raw` is text).
    MediaType(usize),
}

/// One string literal to scan.
#[derive(Debug)]
struct Site {
    role: Role,
    open: usize,
    close: usize,
    /// Where the segments of its finding path (for a key, the object holding it) are in
    /// [`Sites::segs`]; formatted by [`Sites::path`] only when a finding needs it: nearly every
    /// literal holds none, and formatting (or even allocating) each one's path cost more than
    /// matching it.
    segs: std::ops::Range<usize>,
}

/// The literals of a body to scan, and their paths' segments (borrowed from the body), one
/// vector for all.
#[derive(Debug, Default)]
struct Sites<'b> {
    list: Vec<Site>,
    segs: Vec<Seg<'b>>,
}

impl Sites<'_> {
    /// The finding path of `site` as callers and logs see it ([`finding_path`]).
    fn path(&self, site: &Site) -> String {
        finding_path(self.segs.get(site.segs.clone()).unwrap_or_default())
    }
}

/// Scans an A2A 1.0 SendMessage/SendStreamingMessage request: `body` is JSON already validated by
/// the data plane (no duplicate keys, UTF-8), the request object at `params` (JSON-RPC) or the
/// root (REST). Text parts first (as one concatenation), then every other scanned string in
/// document order, until the policy's budget is spent.
pub fn scan_request(all: &Detectors, policy: &Policy, body: &str, shape: Shape) -> Verdict {
    let prefix: &[&str] = match shape {
        Shape::JsonRpc => &["params"],
        Shape::Rest => &[],
    };
    let (sites, past_budget) = collect(body, prefix, classify_request, policy.budget_bytes);
    let path = |site: &Site| sites.path(site);
    let mut scan = Scan::new(all, policy, body, false);
    scan.verdict.unscanned_bytes = past_budget;
    let texts: Vec<&Site> = sites.list.iter().filter(|s| s.role == Role::Text).collect();
    scan.literals(&texts, false, &path);
    // Each part's media type, looked up once per `raw` (a search of every site for each was
    // quadratic in the parts).
    let media: std::collections::HashMap<usize, &Site> = sites
        .list
        .iter()
        .filter_map(|s| match s.role {
            Role::MediaType(part) => Some((part, s)),
            _ => None,
        })
        .collect();
    // Consecutive plain literals (a data part's keys and values) are matched together when the
    // matcher allows it, in document order with what lies between them, so the budget is spent
    // in the same order as one by one.
    let mut run: Vec<&Site> = Vec::with_capacity(sites.list.len());
    for site in &sites.list {
        if site.role == Role::Plain && scan.matcher.joinable {
            run.push(site);
            continue;
        }
        scan.plain_run(&mut run, &path);
        match site.role {
            Role::Text | Role::MediaType(_) => {}
            Role::Plain => {
                scan.literals(&[site], false, &path);
            }
            Role::Raw(part) => {
                let media = media.get(&part).map(|m| literal(body, m));
                scan.raw(site, media, &path);
            }
            Role::Url => scan.url(site, &path),
        }
    }
    scan.plain_run(&mut run, &path);
    let mut verdict = scan.finish();
    if verdict.findings.iter().any(|f| f.action == Action::Redact) {
        verdict.rescan = Some(Box::new((all.clone(), policy.clone(), shape)));
    }
    verdict
}

/// Record-only scan of an answer (JSON-RPC `result`, REST body, one SSE event's data; all 1.0):
/// every string (keys too) under the result, within the policy's budget. Findings' action is
/// Record.
pub fn scan_answer(all: &Detectors, policy: &Policy, body: &str, shape: Shape) -> Vec<Finding> {
    let prefix: &[&str] = match shape {
        Shape::JsonRpc => &["result"],
        Shape::Rest => &[],
    };
    let mut scan = Scan::new(all, policy, body, true);
    // The body was validated by the caller; on anything else nothing is scanned past the fault.
    let _ = json::visit_strings(body, |s| {
        // Past the budget nothing is read (an answer's unscanned bytes are not reported).
        if scan.left == 0 {
            return;
        }
        let Some(rel) = below(s.path, prefix) else {
            return;
        };
        if rel.is_empty() && s.key {
            return;
        }
        let path = finding_segs(s);
        let site = Site {
            role: Role::Plain,
            open: s.open,
            close: s.close,
            segs: 0..0,
        };
        scan.literals(&[&site], false, &|_| finding_path(path));
    });
    scan.verdict.findings
}

/// The path of a literal below `prefix`, if it is below it.
fn below<'p, 'b>(path: &'p [Seg<'b>], prefix: &[&str]) -> Option<&'p [Seg<'b>]> {
    let under = path.len() >= prefix.len()
        && path
            .iter()
            .zip(prefix)
            .all(|(seg, p)| matches!(seg, Seg::Key(k) if k == p));
    under.then(|| path.get(prefix.len()..).unwrap_or_default())
}

/// The segments a literal's finding names: a key's, the object holding it (the key itself may
/// be the secret).
fn finding_segs<'p, 'b>(s: &json::StringSite<'p, 'b>) -> &'p [Seg<'b>] {
    if s.key {
        s.path
            .get(..s.path.len().saturating_sub(1))
            .unwrap_or_default()
    } else {
        s.path
    }
}

/// Most sites [`collect`] reserves room for before it walks (a body with more grows the vectors).
const SITES_RESERVED: usize = 4096;

/// The sites of `body` under `prefix` that `classify` gives a role (path relative to the prefix),
/// and the bytes of the text and plain literals the scan's `budget` cannot reach, which are not
/// collected: text parts are scanned first, so a text literal is past it once the texts before
/// it fill it; any other once the texts and others before it do (each reads its length, or what
/// is left).
fn collect<'b>(
    body: &'b str,
    prefix: &[&str],
    classify: impl Fn(&[Seg<'_>], bool) -> Option<Role>,
    budget: usize,
) -> (Sites<'b>, usize) {
    let mut sites = Sites::default();
    // Room for every string the body can hold (a quote pair each) up to a cap, and a few path
    // segments for each: growing the two vectors push by push cost more than the walk.
    let strings = memchr::memchr_iter(b'"', body.as_bytes()).count() / 2;
    sites.list.reserve(strings.min(SITES_RESERVED));
    sites.segs.reserve(strings.min(SITES_RESERVED) * 6);
    let (mut texts, mut both, mut past) = (0usize, 0usize, 0usize);
    // The body was validated by the caller; on anything else nothing is collected past the fault.
    let _ = json::visit_strings(body, |s| {
        let Some(rel) = below(s.path, prefix) else {
            return;
        };
        if let Some(role) = classify(rel, s.key) {
            let len = s.close - s.open - 1;
            let reached = match role {
                Role::Text => texts < budget,
                Role::Plain => both < budget,
                Role::Raw(_) | Role::Url | Role::MediaType(_) => true,
            };
            if !reached {
                past += len;
                return;
            }
            if role == Role::Text {
                texts = texts.saturating_add(len);
            }
            if matches!(role, Role::Text | Role::Plain) {
                both = both.saturating_add(len);
            }
            let path = finding_segs(s);
            let first = sites.segs.len();
            sites.segs.extend_from_slice(path);
            sites.list.push(Site {
                role,
                open: s.open,
                close: s.close,
                segs: first..sites.segs.len(),
            });
        }
    });
    (sites, past)
}

/// A finding's JSON path as callers and logs see it: keys below a `data` or `metadata` member are
/// `*` (indices kept), because those keys are the caller's (or agent's) content and may be the
/// very secret found elsewhere under them (`data["4111…"].note`); the protocol's own members
/// above them are named.
fn finding_path(path: &[Seg<'_>]) -> String {
    let mut s = String::new();
    let mut content = false;
    for seg in path {
        match seg {
            Seg::Key(_) if content => {
                if !s.is_empty() {
                    s.push('.');
                }
                s.push('*');
            }
            Seg::Key(k) => {
                json::push_key(&mut s, k);
                content = k == "data" || k == "metadata";
            }
            Seg::Index(n) => {
                use std::fmt::Write as _;
                let _ = write!(s, "[{n}]");
            }
        }
    }
    if s.is_empty() { "$".into() } else { s }
}

/// The role of a string of a SendMessage request at `rel` (below the request object).
fn classify_request(rel: &[Seg<'_>], key: bool) -> Option<Role> {
    let k = |i: usize| match rel.get(i) {
        Some(Seg::Key(k)) => Some(k.as_ref()),
        _ => None,
    };
    // Everything below `anchor` segments (keys and values), and the anchor itself if a value.
    let tree = |anchor: usize| (rel.len() > anchor || !key).then_some(Role::Plain);
    // The data plane reads a message and a part as serde's derive does (the official Rust SDK's
    // types): an object, or an array by field position (`message: [parts]`, a part
    // `[mediaType, text, data]`). Both forms are scanned: an agent on those types reads both.
    let positional_parts = matches!(rel.get(1), Some(Seg::Index(0)));
    match (k(0), k(1)) {
        (Some("metadata"), _) => return tree(1),
        (Some("message"), Some("metadata")) => return tree(2),
        (Some("message"), Some("parts")) => {}
        (Some("message"), None) if positional_parts => {}
        _ => return None,
    }
    let Some(Seg::Index(part)) = rel.get(2) else {
        return None;
    };
    let leaf = rel.len() == 4 && !key;
    let field = match rel.get(3)? {
        Seg::Key(k) => k.as_ref(),
        Seg::Index(0) => "mediaType",
        Seg::Index(1) => "text",
        Seg::Index(2) => "data",
        Seg::Index(_) => return None,
    };
    match field {
        "data" | "metadata" => tree(4),
        "text" if leaf => Some(Role::Text),
        "filename" if leaf => Some(Role::Plain),
        "raw" if leaf => Some(Role::Raw(*part)),
        "url" if leaf => Some(Role::Url),
        // The proto3 JSON mapping accepts the field's own name too, and so do the SDKs' readers.
        "mediaType" | "media_type" if leaf => Some(Role::MediaType(*part)),
        _ => None,
    }
}

/// A literal's unescaped value.
fn literal<'b>(body: &'b str, site: &Site) -> Cow<'b, str> {
    json::unescape(body, site.open, site.close).unwrap_or_default()
}

/// Whether a media type's content is text worth decoding: `text/*`, JSON, XML (and `+json`,
/// `+xml`), CSV.
pub(super) fn textual(media: &str) -> bool {
    let essence = media
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    essence.starts_with("text/")
        || matches!(
            essence.as_str(),
            "application/json" | "application/xml" | "application/csv"
        )
        || essence.ends_with("+json")
        || essence.ends_with("+xml")
}

/// One scan in progress: the budget left, and the verdict so far.
struct Scan<'a> {
    all: &'a Detectors,
    policy: &'a Policy,
    matcher: &'a Matcher,
    body: &'a str,
    left: usize,
    answer: bool,
    verdict: Verdict,
    hits: Vec<Hit>,
    /// [`Scan::literals`]' normalised text, kept between calls for its buffers.
    norm: Norm,
}

impl<'a> Scan<'a> {
    fn new(all: &'a Detectors, policy: &'a Policy, body: &'a str, answer: bool) -> Self {
        Scan {
            all,
            policy,
            matcher: &policy.matcher,
            body,
            left: policy.budget_bytes,
            answer,
            verdict: Verdict::default(),
            hits: Vec::with_capacity(8),
            norm: Norm::default(),
        }
    }

    fn action(&self, class: &str) -> Action {
        if self.answer {
            Action::Record
        } else {
            self.policy.action_for(class)
        }
    }

    /// Scans the concatenation of `sites` (one literal, or a message's text parts), or with
    /// `joined` the literals `sites` each alone, matched as one text with a [`SEPARATOR`] between
    /// them; `path` gives a site's finding path. Returns false, having changed nothing, when a
    /// joined match covers a separator (only a custom pattern's can): the caller then scans
    /// the literals one by one.
    fn literals(
        &mut self,
        sites: &[&Site],
        joined: bool,
        path_of: &dyn Fn(&Site) -> String,
    ) -> bool {
        // The buffers of the last call, reused: most literals are short, and growing three fresh
        // vectors for each was a good part of the scan's cost.
        let mut norm = std::mem::take(&mut self.norm);
        norm.clear();
        let before = (self.left, self.verdict.unscanned_bytes);
        // (first normalised byte, site) of each piece.
        let mut pieces: Vec<(usize, &Site)> = Vec::with_capacity(sites.len());
        let total: usize = sites.iter().map(|s| s.close - s.open - 1).sum();
        norm.reserve(total.min(self.left) + sites.len());
        for site in sites {
            let len = site.close - site.open - 1;
            if joined && !pieces.is_empty() {
                norm.separate();
            }
            pieces.push((norm.text.len(), site));
            let read = norm.push_literal(self.body, site.open, site.close, self.left);
            self.left -= read;
            self.verdict.unscanned_bytes += len - read;
        }
        if norm.text.is_empty() {
            self.norm = norm;
            return true;
        }
        let mut hits = std::mem::take(&mut self.hits);
        hits.clear();
        self.matcher.hits(&norm.text, &mut hits);
        if joined {
            // The piece a position is in (a separator counts with the piece before it).
            let piece = |at: usize| pieces.partition_point(|p| p.0 <= at).saturating_sub(1);
            // Whether `start..end` covers the separator before the first piece after `start`.
            let covers = |(start, end): (usize, usize)| {
                let next = pieces.partition_point(|p| p.0 <= start);
                pieces.get(next).is_some_and(|p| p.0 - 1 < end)
            };
            if hits.iter().any(|h| covers(h.span())) {
                (self.left, self.verdict.unscanned_bytes) = before;
                self.norm = norm;
                self.hits = hits;
                return false;
            }
            // Findings in the order the literals scanned one by one give them: by literal,
            // and within one by kind of hit (the matcher's order).
            hits.sort_by_key(|h| piece(h.span().0));
        }
        let located = |a: usize, b: usize| -> (String, Vec<Span>) {
            let mut spans = Vec::new();
            let mut path = None;
            // The pieces `a..b` touches, found by binary search: a walk over every piece for each
            // hit was hits x parts.
            let first = pieces.partition_point(|p| p.0 <= a).saturating_sub(1);
            let touched = pieces.iter().enumerate().skip(first);
            for (n, (start, site)) in touched.take_while(|(_, p)| p.0 < b.max(a + 1)) {
                let end = pieces.get(n + 1).map_or(norm.text.len(), |p| p.0);
                let (x, y) = (a.max(*start), b.min(end));
                if x < y
                    && let Some((s, e)) = norm.source(x, y)
                {
                    spans.push(Span::Body { start: s, end: e });
                    path.get_or_insert_with(|| path_of(site));
                }
            }
            (path.unwrap_or_else(|| "$".into()), spans)
        };
        self.judged(&norm.text, &hits, &located);
        self.hits = hits;
        self.norm = norm;
        true
    }

    /// Scans the plain literals `run` collected (joined, or one by one when a match covered a
    /// separator) and empties it.
    fn plain_run(&mut self, run: &mut Vec<&Site>, path_of: &dyn Fn(&Site) -> String) {
        if !run.is_empty() && !self.literals(run, run.len() > 1, path_of) {
            for site in run.iter() {
                self.literals(&[site], false, path_of);
            }
        }
        run.clear();
    }

    /// Runs the matcher over `text` and judges its hits ([`Scan::judged`]).
    fn matched(&mut self, text: &str, located: &dyn Fn(usize, usize) -> (String, Vec<Span>)) {
        let mut hits = std::mem::take(&mut self.hits);
        hits.clear();
        self.matcher.hits(text, &mut hits);
        self.judged(text, &hits, located);
        self.hits = hits;
    }

    /// Turns the matcher's `hits` in `text` into findings; `located` turns a normalised span into
    /// (path, source spans). A base64 run holding text is decoded and scanned; a finding in it
    /// covers the whole run.
    fn judged(
        &mut self,
        text: &str,
        hits: &[Hit],
        located: &dyn Fn(usize, usize) -> (String, Vec<Span>),
    ) {
        let mut detectors: Option<DetectorSpans> = None;
        for &hit in hits {
            match hit {
                Hit::Detector { index, start, end } => {
                    let (path, spans) = located(start, end);
                    self.push(index, path, spans);
                }
                Hit::Token { start, end } => {
                    let run = text.get(start..end).unwrap_or("");
                    if let Some(decoded) = validate::base64_text(run) {
                        let mut inner = Vec::new();
                        self.matcher.hits(&decoded, &mut inner);
                        let mut found: Vec<usize> = inner
                            .iter()
                            .filter_map(|h| self.judge(&decoded, h))
                            .collect();
                        found.dedup();
                        for index in found {
                            let (path, spans) = located(start, end);
                            self.push(index, path, spans);
                        }
                    } else if let Some(index) = self.matcher.high_entropy
                        && !detectors
                            .get_or_insert_with(|| DetectorSpans::of(hits))
                            .overlap(start, end)
                        && validate::high_entropy(run)
                    {
                        let (path, spans) = located(start, end);
                        self.push(index, path, spans);
                    }
                }
            }
        }
    }

    /// The detector of a hit inside decoded base64 (no second level of decoding).
    fn judge(&self, text: &str, hit: &Hit) -> Option<usize> {
        match *hit {
            Hit::Detector { index, .. } => Some(index),
            Hit::Token { start, end } => self
                .matcher
                .high_entropy
                .filter(|_| validate::high_entropy(text.get(start..end).unwrap_or(""))),
        }
    }

    fn push(&mut self, index: usize, path: String, spans: Vec<Span>) {
        let class = self.all.class_at(index).to_owned();
        self.verdict.findings.push(Finding {
            detector: self.all.name_at(index).to_owned(),
            action: self.action(&class),
            class,
            path,
            spans,
        });
    }

    /// A file part's inline bytes: decoded and scanned when textual (or, without a media type,
    /// when they decode to text). Bytes that are not text are not content to scan: they neither
    /// spend the budget nor count as unscanned. A textual part whose base64 the gateway cannot
    /// decode (line breaks, stray characters: lenient readers such as Python's `b64decode` take
    /// them) is unscanned, so `on_unscanned` decides; invalid UTF-8 inside is read as U+FFFD,
    /// and the text after it is still scanned.
    fn raw(&mut self, site: &Site, media: Option<Cow<'_, str>>, path_of: &dyn Fn(&Site) -> String) {
        let len = site.close - site.open - 1;
        let value = literal(self.body, site);
        let decoded = validate::decode_base64(&value).map(|(bytes, _)| bytes);
        let declared = media.as_deref().map(textual);
        if decoded.is_none() && declared == Some(true) {
            self.verdict.unscanned_bytes += len;
            return;
        }
        let text = decoded.as_deref().and_then(|bytes| {
            let wanted = match declared {
                Some(textual) => textual,
                None => validate::base64_text(value.as_ref()).is_some(),
            };
            wanted.then_some(bytes)
        });
        let Some(text) = text else { return };
        let mut norm = Norm::default();
        // The budget counts the literal's (base64) bytes; the decoded text is read in proportion.
        let used = self.left.min(len);
        norm.push_bytes(text, used.saturating_mul(text.len()) / len.max(1));
        self.left -= used;
        self.verdict.unscanned_bytes += len - used;
        let (open, close) = (site.open, site.close);
        let located = |a: usize, b: usize| {
            let spans = norm
                .source(a, b)
                .map(|(start, end)| Span::Raw {
                    open,
                    close,
                    start,
                    end,
                })
                .into_iter()
                .collect();
            (path_of(site), spans)
        };
        self.matched(&norm.text, &located);
    }

    /// A URL part: its origin must be allowed (when the policy checks URLs).
    fn url(&mut self, site: &Site, path_of: &dyn Fn(&Site) -> String) {
        let Some(allowed) = &self.policy.url_origins else {
            return;
        };
        let url = literal(self.body, site);
        let origin = origin_of_plain_url(&url);
        if !origin.is_some_and(|o| allowed.contains(&o)) {
            self.verdict.findings.push(Finding {
                detector: URL_ORIGIN.into(),
                class: URL_CLASS.into(),
                path: path_of(site),
                action: if self.answer {
                    Action::Record
                } else {
                    Action::Refuse
                },
                spans: Vec::new(),
            });
        }
    }

    fn finish(mut self) -> Verdict {
        if self.verdict.unscanned_bytes > 0 && self.policy.on_unscanned == OnUnscanned::Refuse {
            self.verdict.findings.push(Finding {
                detector: UNSCANNED.into(),
                class: UNSCANNED.into(),
                path: "$".into(),
                action: Action::Refuse,
                spans: Vec::new(),
            });
        }
        self.verdict
    }
}

/// Whether a detector's hit overlaps `start..end` (that run is then a finding already).
/// The detector hits' spans of one text, sorted by start, each with the furthest end of it and
/// those before it: whether a token run overlaps one is a binary search (a walk over every hit
/// for each run was runs x hits).
struct DetectorSpans(Vec<(usize, usize)>);

impl DetectorSpans {
    fn of(hits: &[Hit]) -> Self {
        let mut v: Vec<(usize, usize)> = hits
            .iter()
            .filter_map(|h| match *h {
                Hit::Detector { start, end, .. } => Some((start, end)),
                Hit::Token { .. } => None,
            })
            .collect();
        v.sort_unstable();
        let mut furthest = 0;
        for span in &mut v {
            furthest = furthest.max(span.1);
            span.1 = furthest;
        }
        DetectorSpans(v)
    }

    /// Whether a detector hit overlaps `start..end`.
    fn overlap(&self, start: usize, end: usize) -> bool {
        let before = self.0.partition_point(|&(s, _)| s < end);
        before > 0 && self.0.get(before - 1).is_some_and(|&(_, e)| e > start)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_past_the_budget_are_counted_not_collected() {
        let data: Vec<String> = (0..1000)
            .map(|i| format!(r#"{{"data":"d{i:03}"}}"#))
            .collect();
        // A text part last in the document is still scanned first.
        let body = format!(
            r#"{{"params":{{"message":{{"parts":[{},{{"text":"0123456789"}},{{"url":"u"}}]}}}}}}"#,
            data.join(",")
        );
        let (sites, past) = collect(&body, &["params"], classify_request, 30);
        let roles: Vec<Role> = sites.list.iter().map(|s| s.role).collect();
        // Data literals (4 bytes each) are collected while they and the texts before them are
        // under the 30 bytes: 8 of them (0, 4, … 28); then the text and the URL.
        assert_eq!(roles.len(), 10, "{roles:?}");
        assert_eq!(roles.iter().filter(|r| **r == Role::Plain).count(), 8);
        assert!(roles.contains(&Role::Text) && roles.contains(&Role::Url));
        assert_eq!(past, 4 * (1000 - 8));
        // Without a budget everything is collected.
        let (all_sites, none) = collect(&body, &["params"], classify_request, usize::MAX);
        assert_eq!((all_sites.list.len(), none), (1002, 0));
    }
}
