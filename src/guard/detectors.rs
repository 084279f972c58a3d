//! The detector table (built-ins and custom ones, compiled once per config) and the matcher of a
//! policy's selection: ONE multi-pattern regex pass plus one Aho-Corasick pass for word lists over
//! normalised text, each match checked by its detector's validator (pure).

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, MatchKind};
use regex_automata::Input;
use regex_automata::meta::Regex;

use super::validate;
use super::{DetectorSpec, GuardError, Source};
use crate::types::data_class::is_data_class;

/// Every built-in detector, in table order.
pub const BUILTIN_NAMES: &[&str] = &[
    "pci",
    "iban",
    "ssn",
    "email",
    "phone",
    "aws_key",
    "gcp_key",
    "github_token",
    "slack_token",
    "stripe_key",
    "azure_key",
    "bearer_token",
    "private_key",
    "jwt",
    "high_entropy",
];

/// A built-in's data class and pattern (on NFKC-normalised, JSON-unescaped text). ASCII word
/// boundaries (`(?-u:\b)`) keep the lazy DFA usable on non-ASCII text. `high_entropy` has no
/// pattern of its own: it judges the matcher's token runs (see [`TOKEN`]).
fn builtin(name: &str) -> Option<(&'static str, &'static str)> {
    Some(match name {
        // 13–19 digits with optional single spaces or dashes between them; the validator picks
        // the windows between group boundaries that pass Luhn.
        "pci" => ("pci", r"(?-u:\b)[0-9](?:[ -]?[0-9]){12,18}(?-u:\b)"),
        "iban" => (
            "financial",
            r"(?-u:\b)[A-Z]{2}[0-9]{2}(?:[ ]?[A-Z0-9]){11,30}(?-u:\b)",
        ),
        "ssn" => ("pii", r"(?-u:\b)[0-9]{3}[- ][0-9]{2}[- ][0-9]{4}(?-u:\b)"),
        "email" => (
            "pii",
            r"[A-Za-z0-9._%+-]{1,64}@[A-Za-z0-9-]{1,63}(?:\.[A-Za-z0-9-]{1,63})*\.[A-Za-z]{2,24}(?-u:\b)",
        ),
        // E.164-ish: a `+`, a country code and 7–14 more digits, optionally grouped.
        "phone" => ("pii", r"\+[1-9](?:[ .-]?\(?[0-9]\)?){7,14}(?-u:\b)"),
        "aws_key" => (
            "secret",
            r"(?-u:\b)(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA|ANPA)[A-Z0-9]{16}(?-u:\b)",
        ),
        "gcp_key" => ("secret", r"(?-u:\b)AIza[0-9A-Za-z_-]{35}"),
        "github_token" => (
            "secret",
            r"(?-u:\b)(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})",
        ),
        "slack_token" => (
            "secret",
            r"(?-u:\b)xox[abposr]-[A-Za-z0-9-]{10,250}|https://hooks\.slack\.com/services/[A-Za-z0-9/_-]{20,200}",
        ),
        "stripe_key" => (
            "secret",
            r"(?-u:\b)(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,247}(?-u:\b)",
        ),
        // A storage account key or a shared access key as connection strings carry them (the
        // key is 32 or 64 bytes, base64), and a SAS token's signature.
        "azure_key" => (
            "secret",
            r"(?i:AccountKey|SharedAccessKey)=[A-Za-z0-9+/]{43,86}={0,2}|(?-u:\b)sig=[A-Za-z0-9%+/]{40,100}(?:%3D|=){0,2}",
        ),
        // An `Authorization: Bearer` credential pasted into text (RFC 6750's token68).
        "bearer_token" => (
            "secret",
            r"(?-u:\b)[Bb]earer[ \t]+[A-Za-z0-9._~+/-]{20,4096}=*",
        ),
        // The BEGIN line is enough to know; the block (base64 body, END line) is redacted with it.
        "private_key" => (
            "secret",
            r"-----BEGIN [A-Z0-9 ]{0,32}PRIVATE KEY( BLOCK)?-----[A-Za-z0-9+/=\s:,]*(?:-----END [A-Z0-9 ]{0,32}PRIVATE KEY( BLOCK)?-----)?",
        ),
        // Found by a byte pass of its own ([`jwts`]), not a pattern: its segments are unbounded,
        // and in the combined regex a candidate kept the search alive to the end of the text
        // (quadratic) and, rejected, hid every other detector's match inside it.
        "jwt" => ("secret", ""),
        "high_entropy" => ("secret", ""),
        _ => return None,
    })
}

/// Largest compiled form of one custom regex (the regex crate's NFA size limit).
const NFA_LIMIT: usize = 2 << 20;

/// What a detector matches, compiled.
#[derive(Debug, Clone)]
enum Kind {
    Builtin,
    /// A custom pattern, and whether it may be matched over joined literals ([`joinable`]).
    Regex(String, bool),
    Words(Vec<String>),
}

#[derive(Debug, Clone)]
struct Entry {
    name: String,
    class: String,
    kind: Kind,
}

/// Every built-in (in [`BUILTIN_NAMES`] order) plus the custom detectors of one config. Send +
/// Sync; policies compile their own matcher from it.
#[derive(Debug, Clone)]
pub struct Detectors {
    /// Shared: a verdict that may redact keeps a handle for its rescans.
    table: std::sync::Arc<Vec<Entry>>,
    /// The matchers compiled so far, by selection: integrations that run the same detectors
    /// (the usual case: a platform's one policy) share one, so a config of a thousand guarded
    /// integrations compiles it once, not a thousand times.
    matchers: std::sync::Arc<std::sync::Mutex<MatcherCache>>,
}

type MatcherCache = std::collections::HashMap<Vec<usize>, std::sync::Arc<Matcher>>;

impl Detectors {
    /// The built-ins plus `custom`: fails on a regex that does not compile, a name taken (by a
    /// built-in or an earlier custom detector), an empty word list or word, a bad data class.
    pub fn compile(custom: Vec<DetectorSpec>) -> Result<Detectors, GuardError> {
        let mut table: Vec<Entry> = BUILTIN_NAMES
            .iter()
            .filter_map(|n| {
                builtin(n).map(|(class, _)| Entry {
                    name: (*n).to_owned(),
                    class: class.to_owned(),
                    kind: Kind::Builtin,
                })
            })
            .collect();
        for spec in custom {
            let entry = custom_entry(spec, &table)?;
            table.push(entry);
        }
        Ok(Detectors {
            table: std::sync::Arc::new(table),
            matchers: std::sync::Arc::default(),
        })
    }

    /// The data class of detector `name`.
    pub fn class_of(&self, name: &str) -> Option<&str> {
        self.index_of(name).map(|i| self.class_at(i))
    }

    /// Every detector's name, built-ins first.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.table.iter().map(|e| e.name.as_str())
    }

    pub(super) fn index_of(&self, name: &str) -> Option<usize> {
        self.table.iter().position(|e| e.name == name)
    }

    pub(super) fn name_at(&self, i: usize) -> &str {
        self.table.get(i).map_or("", |e| e.name.as_str())
    }

    pub(super) fn class_at(&self, i: usize) -> &str {
        self.table.get(i).map_or("", |e| e.class.as_str())
    }

    /// [`Detectors::matcher_for`], compiled once per selection of this table (the lock is not
    /// held while compiling: two threads may both compile one, and one result is kept).
    pub(super) fn shared_matcher(&self, selected: &[usize]) -> std::sync::Arc<Matcher> {
        let cache = || self.matchers.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(m) = cache().get(selected) {
            return m.clone();
        }
        let m = std::sync::Arc::new(self.matcher_for(selected));
        cache().entry(selected.to_vec()).or_insert(m).clone()
    }

    /// The matcher of the detectors at `selected` (table indexes, ascending).
    pub(super) fn matcher_for(&self, selected: &[usize]) -> Matcher {
        // (patterns, owners) of each group, by [`group_of`].
        let mut groups: [(Vec<&str>, Vec<Owner>); GROUPS] = Default::default();
        let mut words: Vec<&str> = Vec::new();
        let mut word_owner: Vec<usize> = Vec::new();
        let mut high_entropy = false;
        let mut jwt = None;
        let mut joinable = true;
        for &i in selected {
            let Some(e) = self.table.get(i) else { continue };
            match &e.kind {
                Kind::Builtin if e.name == "high_entropy" => high_entropy = true,
                Kind::Builtin if e.name == "jwt" => jwt = Some(i),
                Kind::Builtin => {
                    if let (Some((_, p)), Some(g)) =
                        (builtin(&e.name), groups.get_mut(group_of(Some(&e.name))))
                    {
                        g.0.push(p);
                        g.1.push(Owner::Detector(i, validate::for_builtin(&e.name)));
                    }
                }
                Kind::Regex(p, join) => {
                    if let Some(g) = groups.get_mut(group_of(None)) {
                        g.0.push(p);
                        g.1.push(Owner::Detector(i, validate::Check::None));
                    }
                    joinable &= *join;
                }
                Kind::Words(list) => {
                    for w in list {
                        words.push(w);
                        word_owner.push(i);
                    }
                }
            }
        }
        // Every pattern compiled alone in `compile` (custom) or is a constant (built-in).
        let regexes = groups
            .into_iter()
            .filter(|(patterns, _)| !patterns.is_empty())
            .filter_map(|(patterns, owners)| {
                let regex = Regex::builder()
                    .configure(
                        Regex::config()
                            .nfa_size_limit(Some(NFA_LIMIT * patterns.len()))
                            .hybrid_cache_capacity(HYBRID_CACHE),
                    )
                    .build_many(&patterns)
                    .ok()?;
                Some(Group { regex, owners })
            })
            .collect();
        let words = (!words.is_empty())
            .then(|| {
                AhoCorasickBuilder::new()
                    .ascii_case_insensitive(true)
                    .match_kind(MatchKind::LeftmostLongest)
                    .build(&words)
                    .ok()
            })
            .flatten();
        let high_entropy = high_entropy
            .then(|| self.index_of("high_entropy"))
            .flatten();
        Matcher {
            regexes,
            words,
            word_owner,
            high_entropy,
            jwt,
            joinable,
        }
    }
}

/// Checks one custom detector against the table so far.
fn custom_entry(spec: DetectorSpec, table: &[Entry]) -> Result<Entry, GuardError> {
    let DetectorSpec {
        name,
        class,
        source,
    } = spec;
    let name_ok = !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-');
    if !name_ok {
        return Err(GuardError::BadName { name });
    }
    if table.iter().any(|e| e.name == name) || name == URL_ORIGIN || name == UNSCANNED {
        return Err(GuardError::NameClash { name });
    }
    if !is_data_class(&class) {
        return Err(GuardError::BadClass { name, class });
    }
    let kind = match source {
        Source::Builtin => return Err(GuardError::NotBuiltin { name }),
        Source::Regex(p) => {
            if let Err(e) = Regex::builder()
                .configure(Regex::config().nfa_size_limit(Some(NFA_LIMIT)))
                .build(&p)
            {
                return Err(GuardError::BadRegex {
                    name,
                    reason: e.to_string(),
                });
            }
            let join = joinable(&p);
            Kind::Regex(p, join)
        }
        Source::Words(list) => {
            if list.is_empty() || list.iter().any(|w| w.trim().is_empty()) {
                return Err(GuardError::EmptyWords { name });
            }
            Kind::Words(list)
        }
    };
    Ok(Entry { name, class, kind })
}

/// The pseudo-detector of a budget overrun.
pub const UNSCANNED: &str = "unscanned";
/// The pseudo-detector of URL parts outside the allowed origins.
pub const URL_ORIGIN: &str = "url_origin";
/// Its data class.
pub(super) const URL_CLASS: &str = "url";

/// Who a regex pattern belongs to: a detector (table index) and its validator.
#[derive(Debug, Clone, Copy)]
enum Owner {
    Detector(usize, validate::Check),
}

/// One match in normalised text, validated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Hit {
    /// Detector (table index) found `start..end`.
    Detector {
        index: usize,
        start: usize,
        end: usize,
    },
    /// A base64/base64url run `start..end`: the scan decodes it or asks `high_entropy`.
    Token { start: usize, end: usize },
}

impl Hit {
    /// Its span in the text.
    pub(super) fn span(&self) -> (usize, usize) {
        match *self {
            Hit::Detector { start, end, .. } | Hit::Token { start, end } => (start, end),
        }
    }
}

/// How many regexes a matcher runs at most (see [`group_of`]).
const GROUPS: usize = 4;

/// Which of a matcher's regexes the pattern of built-in `name` (a custom one: `None`) joins.
/// One regex of every pattern made one lazy DFA whose states are the product of every
/// pattern's counted repetitions (an e-mail's local part, a card's digits and a bearer token's
/// run all counting at once over one word): many states, most of them met once, and a table too
/// big for the CPU's caches. Split by what starts a match, each regex stays small: the secrets'
/// patterns all begin with a literal (`AKIA`, `ghp_`, `-----BEGIN`…), so their regex is a
/// literal search that skips text holding none; the e-mail pattern is found from its `@`; the
/// digit patterns (card, IBAN, SSN, phone) share one DFA of digit runs; custom patterns, whose
/// shape is unknown, have one of their own.
fn group_of(builtin: Option<&str>) -> usize {
    match builtin {
        None => 3,
        Some("email") => 1,
        Some("pci" | "iban" | "ssn" | "phone") => 2,
        Some(_) => 0,
    }
}

/// One regex of a matcher and who owns each of its patterns.
#[derive(Debug)]
struct Group {
    regex: Regex,
    owners: Vec<Owner>,
}

/// One policy's compiled matcher.
#[derive(Debug)]
pub(super) struct Matcher {
    /// The regexes, one per group of patterns ([`group_of`]).
    regexes: Vec<Group>,
    words: Option<AhoCorasick>,
    word_owner: Vec<usize>,
    /// The table index of `high_entropy` when the policy runs it.
    pub(super) high_entropy: Option<usize>,
    /// The table index of `jwt` when the policy runs it.
    jwt: Option<usize>,
    /// Whether short literals may be matched as one text joined by [`SEPARATOR`]
    /// (`Scan::literals`): true unless a custom pattern is anchored or can match nothing.
    pub(super) joinable: bool,
}

impl Group {
    /// This regex's validated hits in `text`, in order of position (see [`Matcher::hits`]).
    fn hits(&self, text: &str, out: &mut Vec<Hit>) {
        let mut input = Input::new(text);
        let mut spans = Vec::new();
        while let Some(m) = self.regex.search(&input) {
            let (start, end) = (m.start(), m.end());
            // Where the search goes on: after the last finding, else (a rejected candidate)
            // one character after its start when the pattern is bounded.
            let mut resume = end;
            let mut inside = false;
            if let Some(Owner::Detector(index, check)) = self.owners.get(m.pattern().as_usize()) {
                spans.clear();
                check.spans(text, start, end, &mut spans);
                match spans.iter().map(|s| s.1).max() {
                    Some(last) => resume = last.max(start + 1),
                    None => inside = check.bounded(),
                }
                out.extend(spans.iter().map(|&(start, end)| Hit::Detector {
                    index: *index,
                    start,
                    end,
                }));
            }
            // An empty match (only a custom regex can give one) or a rejected bounded
            // candidate moves on by one character.
            let next = if end > start && !inside {
                resume
            } else {
                text.get(start..)
                    .and_then(|t| t.chars().next())
                    .map_or(text.len() + 1, |c| start + c.len_utf8())
            };
            if next > text.len() {
                break;
            }
            input.set_start(next);
        }
    }
}

impl Matcher {
    /// Every validated hit in `text`: regex hits in order of position, then word hits, then
    /// token runs. Linear: one pass of each group's regex, one Aho-Corasick pass, one byte pass
    /// for token runs. Within a group, a candidate its validator rejects resumes the search one
    /// character after its start when the pattern is bounded (at most a few hundred bytes, so it
    /// hides no other detector's match and the pass stays linear), after its end otherwise;
    /// matches of different groups may overlap (redaction merges them). JWTs are found by a pass
    /// of their own ([`jwts`]): unbounded and validated, in a regex a rejected one hid what it held.
    pub(super) fn hits(&self, text: &str, out: &mut Vec<Hit>) {
        let first = out.len();
        for group in &self.regexes {
            group.hits(text, out);
        }
        if self.regexes.len() > 1 {
            // Stable: one group's hits stay in their order, which is their position's.
            if let Some(regex_hits) = out.get_mut(first..) {
                regex_hits.sort_by_key(|h| h.span().0);
            }
        }
        if let Some(words) = &self.words {
            for m in words.find_iter(text) {
                if validate::whole_word(text, m.start(), m.end())
                    && let Some(&index) = self.word_owner.get(m.pattern().as_usize())
                {
                    out.push(Hit::Detector {
                        index,
                        start: m.start(),
                        end: m.end(),
                    });
                }
            }
        }
        if let Some(index) = self.jwt {
            jwts(text, index, out);
        }
        token_runs(text, out);
    }
}

/// The byte between literals matched as one text: in none of the built-in patterns' classes, a
/// non-word byte to `\b` (as a text's ends are), never part of a token run or a JWT segment, so
/// no built-in match reaches across it. One pass over the joined literals costs what one search
/// of them costs, where a search per literal paid the regex's fixed cost (its start state, the
/// cache's checkout) for every short key and value of a data part. A custom pattern's match may
/// reach across it (`.`, `[^a]`): the scan then matches the literals one by one instead.
pub(super) const SEPARATOR: char = '\0';

/// Whether a custom `pattern` finds in literals joined by [`SEPARATOR`] what it finds in each
/// alone, as far as its syntax decides: not when it is anchored (`^`, `$`, `\A`, `\z`, their
/// multi-line forms: in joined text they hold only at its ends or at line breaks, not at each
/// literal's) or can match the empty string (a match per literal, or per position). A match
/// that covers a separator is caught when it happens (`Scan::literals`).
fn joinable(pattern: &str) -> bool {
    regex_syntax::parse(pattern).is_ok_and(|hir| {
        let props = hir.properties();
        !props.look_set().contains_anchor() && props.minimum_len().is_some_and(|n| n > 0)
    })
}

/// Longest JWT header (its base64url) tried: real ones (`alg`, `typ`, `kid`, a `jku`) are tens
/// to hundreds of bytes. Bounds the decoding each candidate costs.
const JWT_HEADER_MAX: usize = 2048;

/// Header starts tried per `.eyJ`, nearest first: a decoy `eyJ…-` glued before a real header
/// is on the left, so the real one is tried first; the cap keeps the pass linear.
const JWT_STARTS: usize = 4;

/// Pushes every JWT of `text`: `header.payload.signature` where the header is base64url JSON
/// naming an `alg` (`validate::Check::Jwt`) and begins with `eyJ` at a word boundary (at least
/// 11 bytes), the payload begins with `eyJ` (at least 5), the signature may be empty. Driven by
/// each `.eyJ`: the header run before it and the segments after it are read once (runs between
/// dots do not overlap), at most [`JWT_STARTS`] header starts are decoded, each at most
/// [`JWT_HEADER_MAX`] bytes: linear in the text.
fn jwts(text: &str, index: usize, out: &mut Vec<Hit>) {
    let b = text.as_bytes();
    let seg = |i: usize| {
        b.get(i)
            .is_some_and(|&c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-'))
    };
    let word = |i: usize| {
        b.get(i)
            .is_some_and(|&c| c.is_ascii_alphanumeric() || c == b'_')
    };
    let run_end = |mut i: usize| {
        while seg(i) {
            i += 1;
        }
        i
    };
    let mut from = 0;
    while let Some(found) = memchr::memmem::find(b.get(from..).unwrap_or_default(), b".eyJ") {
        let dot = from + found;
        from = dot + 1;
        let payload_end = run_end(dot + 1);
        if payload_end - (dot + 1) < 5 || b.get(payload_end) != Some(&b'.') {
            continue;
        }
        let end = run_end(payload_end + 1);
        let floor = dot.saturating_sub(JWT_HEADER_MAX);
        let mut starts = 0;
        let mut p = dot;
        while p > floor && seg(p - 1) && starts < JWT_STARTS {
            p -= 1;
            let starts_here = b.get(p..p + 3) == Some(b"eyJ") && (p == 0 || !word(p - 1));
            if !starts_here || dot - p < 11 {
                continue;
            }
            starts += 1;
            let mut spans = Vec::new();
            validate::Check::Jwt.spans(text, p, end, &mut spans);
            if let Some(&(start, end)) = spans.first() {
                out.push(Hit::Detector { index, start, end });
                from = end;
                break;
            }
        }
    }
}

/// Room for the lazy DFA's states of one of a matcher's regexes, per thread that searches with
/// it (an upper bound, filled only as states are met). With every built-in in one regex, its
/// product of counted repetitions filled regex's default of 2 MiB and rebuilt it over and over
/// (8 MiB was needed); split into groups ([`group_of`]) the built-ins need a few dozen states
/// (73 for a SendMessage of prose and a sales table, against 312 combined), and four regexes at
/// 2 MiB bound a thread's share of a selection as the one at 8 MiB did.
const HYBRID_CACHE: usize = 2 << 20;

/// The bytes that can be part of a base64 or base64url run, as a table: [`token_runs`] reads
/// every byte of the text, and one load per byte is cheaper than the range tests.
const TOKEN_BYTE: [bool; 256] = {
    let mut t = [false; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        t[b] = c.is_ascii_alphanumeric() || matches!(c, b'+' | b'/' | b'_' | b'-');
        b += 1;
    }
    t
};

/// Pushes every run of base64/base64url characters (plus up to two `=`) at least
/// [`validate::BASE64_MIN`] long: the scan decodes one that holds text, else asks `high_entropy`.
/// A byte pass of its own rather than a regex pattern, so a run never hides a detector's match
/// inside it.
///
/// Only runs of at least [`TOKEN_MIN`] token bytes can qualify (two `=` at most make up the rest),
/// and every such run covers one of the positions `TOKEN_MIN - 1`, `2 × TOKEN_MIN - 1`, …: so only
/// those bytes are looked at first, and a run is measured only around one that is a token byte.
/// Prose has short words; this reads a fraction of its bytes instead of each one.
fn token_runs(text: &str, out: &mut Vec<Hit>) {
    let b = text.as_bytes();
    let token = |i: usize| b.get(i).is_some_and(|&c| TOKEN_BYTE[usize::from(c)]);
    // Bytes before `done` belong to a run already measured (and its padding).
    let mut done = 0;
    let mut i = TOKEN_MIN - 1;
    while i < b.len() {
        if !token(i) {
            i += TOKEN_MIN;
            continue;
        }
        let mut start = i;
        while start > done && token(start - 1) {
            start -= 1;
        }
        let mut end = i + 1;
        while token(end) {
            end += 1;
        }
        let mut pad = 0;
        while pad < 2 && b.get(end) == Some(&b'=') {
            end += 1;
            pad += 1;
        }
        if end - start >= validate::BASE64_MIN {
            out.push(Hit::Token { start, end });
        }
        done = end;
        i = end + TOKEN_MIN - 1;
    }
}

/// The fewest token bytes a run of [`validate::BASE64_MIN`] can have (the rest is `=` padding).
const TOKEN_MIN: usize = validate::BASE64_MIN - 2;

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The plain definition: every maximal run, with its padding, looked at byte by byte.
    fn token_runs_plain(text: &str) -> Vec<Hit> {
        let b = text.as_bytes();
        let token = |i: usize| b.get(i).is_some_and(|&c| TOKEN_BYTE[usize::from(c)]);
        let (mut i, mut out) = (0, Vec::new());
        while i < b.len() {
            if !token(i) {
                i += 1;
                continue;
            }
            let start = i;
            while token(i) {
                i += 1;
            }
            let mut pad = 0;
            while pad < 2 && b.get(i) == Some(&b'=') {
                i += 1;
                pad += 1;
            }
            if i - start >= validate::BASE64_MIN {
                out.push(Hit::Token { start, end: i });
            }
        }
        out
    }

    proptest! {
        /// Sampling finds exactly the runs the byte-by-byte definition finds, wherever they
        /// start and however long they are (around the minimum above all).
        #[test]
        fn sampled_token_runs_are_the_plain_ones(
            pieces in proptest::collection::vec(
                (
                    // Lengths around the minimum most of all: where sampling could miss a run.
                    prop_oneof![1 => 0usize..40, 3 => (TOKEN_MIN - 2)..(validate::BASE64_MIN + 3)],
                    prop_oneof![Just(' '), Just('='), Just('.'), Just('\u{e9}')],
                    0usize..3,
                ),
                0..12,
            ),
        ) {
            let mut text = String::new();
            for (run, sep, n) in pieces {
                text.extend((0..run).map(|k| if k % 7 == 3 { '_' } else { 'a' }));
                text.extend(std::iter::repeat_n(sep, n + 1));
            }
            let mut got = Vec::new();
            token_runs(&text, &mut got);
            prop_assert_eq!(got, token_runs_plain(&text));
        }
    }
}
