//! Property tests of the card pipeline against hostile values (generators from `a2a_egress::testkit::hostile`):
//! multi-byte, control and bidi text in every string a card holds (URLs around the scheme/host
//! boundary, ids, tenants, extension URIs, media types, keys), duplicate keys at any depth as raw
//! JSON text, deep nesting and huge numbers.
//!
//! Invariants: `validate` + `compile` never panic; a card with a duplicate key is always refused;
//! every problem message is one line without control or bidi characters; the compiled profile's
//! display strings and tags carry no control or bidi character; an accepted tenant is one
//! path-safe segment; the digest depends on the JSON value, not on its formatting, escapes or
//! member order.

use a2a_egress::card::CardPolicy;
use a2a_egress::card::{self, CardError};
use a2a_egress::profile::{self, ClientCaps, Profile};
use proptest::prelude::*;
use proptest::sample::Index;
use serde_json::Value;

use a2a_egress::testkit::hostile::{
    self, Raw, Style, deep_nesting, huge_number, is_control_or_bidi, with_duplicate_key,
};

fn policies() -> [CardPolicy; 2] {
    [
        CardPolicy::default(),
        CardPolicy {
            allow_plain_http: true,
            ..CardPolicy::default()
        },
    ]
}

fn caps() -> ClientCaps {
    ClientCaps {
        extensions: vec![
            "https://example.com/ext/cost-estimate/v1".into(),
            "https://example.com/ext/trace/v1".into(),
        ],
        ..ClientCaps::default()
    }
}

fn valid_cards() -> Vec<Value> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/cards/valid");
    let mut out: Vec<(String, Value)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .map(|p| {
            let v = serde_json::from_slice(&std::fs::read(&p).unwrap()).unwrap();
            (p.display().to_string(), v)
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    assert!(!out.is_empty());
    out.into_iter().map(|(_, v)| v).collect()
}

fn excerpt(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).chars().take(2000).collect()
}

/// Every display string and tag of a profile.
fn display_strings(p: &Profile) -> Vec<&str> {
    let d = &p.display;
    let mut out = vec![d.name.as_str(), d.description.as_str()];
    for s in d.skills.values() {
        out.push(&s.name);
        out.push(&s.description);
        out.extend(s.examples.iter().map(String::as_str));
    }
    for s in p.skills.values() {
        out.extend(s.tags.iter().map(String::as_str));
    }
    out
}

/// Runs validate + compile under both policies and checks every invariant that holds for any
/// input. Returns whether some policy accepted the card.
fn exercise(bytes: &[u8]) -> bool {
    let mut accepted = false;
    for policy in policies() {
        match card::validate(bytes, &policy, None) {
            Ok(v) => {
                accepted = true;
                let p = profile::compile(&v, &caps());
                assert_eq!(p.card_digest, v.digest());
                for s in display_strings(&p) {
                    assert!(
                        !s.chars().any(is_control_or_bidi),
                        "display string {s:?} from {}",
                        excerpt(bytes)
                    );
                }
                if let Some(t) = p.interface.as_ref().and_then(|i| i.tenant.as_deref()) {
                    assert!(
                        !t.is_empty()
                            && t != "."
                            && t != ".."
                            && !t.contains(['/', '\\', '%', '?', '#'])
                            && !t
                                .chars()
                                .any(|c| c.is_whitespace() || is_control_or_bidi(c)),
                        "accepted tenant {t:?}"
                    );
                }
                serde_json::to_vec(&p).unwrap();
            }
            Err(errs) => {
                assert!(!errs.0.is_empty());
                for e in errs.iter() {
                    let m = e.to_string();
                    // Messages go to logs and terminals one per line: hostile text is escaped.
                    assert!(
                        !m.chars().any(is_control_or_bidi),
                        "{m:?} from {}",
                        excerpt(bytes)
                    );
                    assert!(
                        !matches!(e, CardError::Model { .. }),
                        "strict rules accepted what a2a-lf refuses: {m}\n{}",
                        excerpt(bytes)
                    );
                }
            }
        }
    }
    accepted
}

/// Where each string leaf and each object key of a card is, as a path of child indexes into
/// its [`Raw`] form, with the member name that holds it (for arrays: the array's member name).
fn string_slots(raw: &Raw, at: &mut Vec<usize>, holder: &str, out: &mut Vec<(Vec<usize>, String)>) {
    match raw {
        Raw::Str(_) => out.push((at.clone(), holder.to_string())),
        Raw::Arr(items) => {
            for (i, v) in items.iter().enumerate() {
                at.push(i);
                string_slots(v, at, holder, out);
                at.pop();
            }
        }
        Raw::Obj(members) => {
            for (i, (k, v)) in members.iter().enumerate() {
                at.push(i);
                string_slots(v, at, k, out);
                at.pop();
            }
        }
        _ => {}
    }
}

/// One hostile value of each kind; the slot's member name picks which one is used.
#[derive(Debug, Clone)]
struct Candidates {
    url: String,
    tenant: String,
    uri: String,
    media: String,
    id: String,
    text: String,
}

fn candidates() -> impl Strategy<Value = Candidates> {
    (
        hostile::hostile_url(),
        hostile::hostile_tenant(),
        hostile::hostile_extension_uri(),
        hostile::hostile_media_type(),
        hostile::hostile_id(),
        hostile::hostile_string(),
    )
        .prop_map(|(url, tenant, uri, media, id, text)| Candidates {
            url,
            tenant,
            uri,
            media,
            id,
            text,
        })
}

impl Candidates {
    fn for_member(&self, member: &str) -> &str {
        match member {
            m if m == "url" || m.ends_with("Url") => &self.url,
            "tenant" => &self.tenant,
            "uri" => &self.uri,
            m if m.ends_with("Modes") => &self.media,
            "id" | "version" | "protocolBinding" | "protocolVersion" | "location" | "scheme"
            | "bearerFormat" | "list" | "protected" | "signature" => &self.id,
            _ => &self.text,
        }
    }
}

/// Replaces the string at `slot` (or renames the member that holds it, when `key`).
fn put(raw: &mut Raw, slot: &[usize], value: &str, key: bool) {
    if key && let Some((last, parent)) = slot.split_last() {
        if let Some(Raw::Obj(m)) = raw.at_mut(parent)
            && let Some(member) = m.get_mut(*last)
        {
            member.0 = value.to_string();
        }
        return;
    }
    if let Some(node) = raw.at_mut(slot) {
        *node = Raw::Str(value.to_string());
    }
}

/// Every object's members in reverse order, at every depth.
fn reversed(raw: &Raw) -> Raw {
    match raw {
        Raw::Arr(a) => Raw::Arr(a.iter().map(reversed).collect()),
        Raw::Obj(m) => Raw::Obj(
            m.iter()
                .rev()
                .map(|(k, v)| (k.clone(), reversed(v)))
                .collect(),
        ),
        other => other.clone(),
    }
}

fn card_raw(which: &Index) -> Raw {
    Raw::from_value(which.get(&valid_cards()))
}

/// The path of child indexes to `capabilities.extensions[0].params` in a card that has one,
/// created when missing (a place where any JSON value is allowed).
fn params_slot(raw: &mut Raw) -> Option<Vec<usize>> {
    let Raw::Obj(top) = raw else { return None };
    let ci = top.iter().position(|(k, _)| k == "capabilities")?;
    let Raw::Obj(caps) = &mut top[ci].1 else {
        return None;
    };
    let ei = match caps.iter().position(|(k, _)| k == "extensions") {
        Some(i) => i,
        None => {
            caps.push((
                "extensions".into(),
                Raw::Arr(vec![Raw::Obj(vec![(
                    "uri".into(),
                    Raw::Str("https://example.com/ext/trace/v1".into()),
                )])]),
            ));
            caps.len() - 1
        }
    };
    let Raw::Arr(exts) = &mut caps[ei].1 else {
        return None;
    };
    let Some(Raw::Obj(ext)) = exts.first_mut() else {
        return None;
    };
    let pi = match ext.iter().position(|(k, _)| k == "params") {
        Some(i) => i,
        None => {
            ext.push(("params".into(), Raw::Obj(Vec::new())));
            ext.len() - 1
        }
    };
    Some(vec![ci, ei, 0, pi])
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 384, ..ProptestConfig::default() })]

    /// Hostile text in any string or key of a valid card, chosen by what the member holds.
    #[test]
    fn hostile_strings_anywhere_never_panic(
        which in any::<Index>(),
        edits in prop::collection::vec((any::<Index>(), candidates(), prop::bool::weighted(0.15)), 1..4),
    ) {
        let mut raw = card_raw(&which);
        for (at, cand, key) in &edits {
            let mut slots = Vec::new();
            string_slots(&raw, &mut Vec::new(), "", &mut slots);
            let (slot, member) = at.get(&slots).clone();
            let value = if *key { &cand.text } else { cand.for_member(&member) };
            put(&mut raw, &slot, value, *key);
        }
        for style in [Style::Compact, Style::Escaped] {
            exercise(raw.render(style).as_bytes());
        }
    }

    /// Interface and security URLs replaced by hostile URLs: refused or accepted, never a panic;
    /// an accepted one starts with its literal `scheme://`.
    #[test]
    fn hostile_urls_in_url_members_never_panic(which in any::<Index>(), url in hostile::hostile_url()) {
        let mut raw = card_raw(&which);
        let mut slots = Vec::new();
        string_slots(&raw, &mut Vec::new(), "", &mut slots);
        for (slot, member) in &slots {
            if member == "url" || member.ends_with("Url") {
                put(&mut raw, slot, &url, false);
            }
        }
        let text = raw.text();
        if exercise(text.as_bytes()) {
            let lower = url.to_ascii_lowercase();
            // Or a gRPC interface's bare host:port (then no path at all).
            prop_assert!(
                lower.starts_with("https://") || lower.starts_with("http://")
                    || (!url.contains('/') && !url.contains('\\')),
                "accepted {url:?}"
            );
        }
    }

    /// A hostile tenant on every interface: an accepted card's tenant is one path-safe segment
    /// (checked in `exercise`), and path tricks are refused.
    #[test]
    fn hostile_tenants_are_refused_or_path_safe(which in any::<Index>(), tenant in hostile::hostile_tenant()) {
        let mut card = which.get(&valid_cards()).clone();
        if let Some(Value::Array(ifaces)) = card.get_mut("supportedInterfaces") {
            for i in ifaces.iter_mut().filter_map(Value::as_object_mut) {
                i.insert("tenant".into(), Value::String(tenant.clone()));
            }
        }
        let accepted = exercise(&serde_json::to_vec(&card).unwrap());
        if tenant == ".." || tenant.contains('/') || tenant.contains('%') {
            prop_assert!(!accepted, "accepted tenant {tenant:?}");
        }
    }

    /// A duplicate key anywhere (as text: serde_json::Value cannot hold one) is always refused.
    #[test]
    fn a_duplicate_key_at_any_depth_is_always_refused(
        (raw, style) in any::<Index>().prop_flat_map(|w| {
            (with_duplicate_key(card_raw(&w)),
             prop::sample::select(vec![Style::Compact, Style::Spaced, Style::Escaped]))
        })
    ) {
        prop_assert!(raw.has_duplicate_key());
        let text = raw.render(style);
        for policy in policies() {
            let Err(errs) = card::validate(text.as_bytes(), &policy, None) else {
                return Err(TestCaseError::fail(format!("accepted a duplicate key: {text}")));
            };
            prop_assert!(
                errs.iter().any(|e| matches!(e, CardError::DuplicateKey { .. })
                    || matches!(e, CardError::Json { message } if message.contains("out of range"))),
                "{errs}"
            );
        }
        exercise(text.as_bytes());
    }

    /// Arbitrary hostile JSON with duplicates (not card-shaped): refused, never a panic.
    #[test]
    fn arbitrary_json_with_duplicates_is_refused(
        raw in hostile::raw_json(vec!["name", "url", "skills", "id", "tenant", "capabilities"], 4)
            .prop_flat_map(with_duplicate_key)
    ) {
        let text = raw.text();
        prop_assert!(card::validate(text.as_bytes(), &policies()[1], None).is_err());
        exercise(text.as_bytes());
    }

    /// Huge and odd numbers and deep nesting where any JSON value is allowed (extension params)
    /// and in place of any string.
    #[test]
    fn huge_numbers_and_deep_nesting_never_panic(
        which in any::<Index>(),
        num in huge_number(),
        nested in deep_nesting(),
        at in any::<Index>(),
    ) {
        let mut raw = card_raw(&which);
        if let Some(slot) = params_slot(&mut raw)
            && let Some(Raw::Obj(params)) = raw.at_mut(&slot)
        {
            params.push(("n".into(), Raw::Num(num.clone())));
        }
        let text = raw.text();
        exercise(text.as_bytes());
        // The nested text spliced in as the value of a new member.
        let spliced = text.replacen("{", &format!("{{\"deep\":{nested},"), 1);
        exercise(spliced.as_bytes());
        // A number where a string was.
        let mut slots = Vec::new();
        string_slots(&raw, &mut Vec::new(), "", &mut slots);
        let (slot, _) = at.get(&slots).clone();
        if let Some(node) = raw.at_mut(&slot) {
            *node = Raw::Num(num);
        }
        exercise(raw.text().as_bytes());
    }

    /// The digest is of the JSON value: spacing, `\u` escapes, member order and hostile text in
    /// descriptive fields do not change it, and equal numbers written differently agree.
    #[test]
    fn digest_ignores_formatting_escapes_and_order(
        which in any::<Index>(),
        text in hostile::hostile_string(),
        n in prop::sample::select(vec![("0", "-0"), ("1", "1.0"), ("100", "1e2"), ("0.5", "5e-1")]),
    ) {
        let mut raw = card_raw(&which);
        if let Raw::Obj(top) = &mut raw
            && let Some(d) = top.iter_mut().find(|(k, _)| k == "description")
        {
            d.1 = Raw::Str(text);
        }
        let Some(slot) = params_slot(&mut raw) else { return Ok(()) };
        let mut other = raw.clone();
        if let Some(Raw::Obj(p)) = raw.at_mut(&slot) {
            p.push(("n".into(), Raw::Num(n.0.into())));
        }
        if let Some(Raw::Obj(p)) = other.at_mut(&slot) {
            p.push(("n".into(), Raw::Num(n.1.into())));
        }
        let policy = &policies()[1];
        let digest = |t: String| -> Result<String, TestCaseError> {
            card::validate(t.as_bytes(), policy, None)
                .map(|v| v.digest().to_owned())
                .map_err(|e| TestCaseError::fail(format!("{e}\n{t}")))
        };
        let d = digest(raw.text())?;
        prop_assert_eq!(&d, &digest(raw.render(Style::Spaced))?);
        prop_assert_eq!(&d, &digest(raw.render(Style::Escaped))?);
        prop_assert_eq!(&d, &digest(reversed(&raw).text())?);
        prop_assert_eq!(&d, &digest(other.render(Style::Spaced))?);
    }
}

#[test]
fn the_hostile_harness_reaches_valid_cards() {
    // Guard against a harness that only ever produces invalid input: the unmutated fixtures,
    // rendered by the harness in every style, pass.
    for c in valid_cards() {
        let raw = Raw::from_value(&c);
        for style in [Style::Compact, Style::Spaced, Style::Escaped] {
            assert!(exercise(raw.render(style).as_bytes()), "{}", raw.text());
        }
    }
}
