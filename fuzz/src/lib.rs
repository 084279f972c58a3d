//! Shared invariants and fixtures of the fuzz targets (pure, no I/O).

use a2a_egress::card::{self, CardError, ValidatedCard};
use a2a_egress::config::{CardPolicy, ClientCaps};
use a2a_egress::profile::Profile;

/// Whether `c` must never reach a display string, a header or a log line: a control character,
/// a line/paragraph separator, a bidi control or an invisible formatting character.
pub fn is_control_or_bidi(c: char) -> bool {
    c.is_control()
        || matches!(c,
            '\u{2028}' | '\u{2029}' | '\u{061C}' | '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}'
            | '\u{2060}'..='\u{2069}' | '\u{FEFF}' | '\u{E0000}'..='\u{E007F}')
}

/// The card policies the targets run every input under: the default, plain http allowed, and
/// signatures required (no keys: every signed card is refused, through the JWS checks).
pub fn policies() -> [CardPolicy; 3] {
    [
        CardPolicy::default(),
        CardPolicy {
            allow_plain_http: true,
            ..CardPolicy::default()
        },
        CardPolicy {
            allow_plain_http: true,
            require_signatures: true,
            ..CardPolicy::default()
        },
    ]
}

/// Client capabilities: the defaults, and one that knows the fixtures' extensions.
pub fn caps() -> [ClientCaps; 2] {
    [
        ClientCaps::default(),
        ClientCaps {
            extensions: vec![
                "https://example.com/ext/cost-estimate/v1".into(),
                "https://example.com/ext/trace/v1".into(),
            ],
            ..ClientCaps::default()
        },
    ]
}

/// Every problem message is one line of text without control or bidi characters.
pub fn check_errors<'e>(errors: impl IntoIterator<Item = &'e CardError>) {
    for e in errors {
        let m = e.to_string();
        assert!(!m.chars().any(is_control_or_bidi), "message {m:?}");
    }
}

/// The invariants of a compiled profile.
pub fn check_profile(v: &ValidatedCard, p: &Profile) {
    assert_eq!(p.card_digest, v.digest());
    assert_eq!(p.usable, p.unusable.is_none());
    assert_eq!(p.usable, p.reason.is_none());
    assert_eq!(p.skills.len(), v.card().skills.len());
    let d = &p.display;
    let mut strings = vec![d.name.as_str(), d.description.as_str()];
    for s in d.skills.values() {
        strings.push(&s.name);
        strings.push(&s.description);
        strings.extend(s.examples.iter().map(String::as_str));
    }
    for s in p.skills.values() {
        strings.extend(s.tags.iter().map(String::as_str));
    }
    for s in strings {
        assert!(!s.chars().any(is_control_or_bidi), "display string {s:?}");
    }
    if let Some(t) = p.interface.as_ref().and_then(|i| i.tenant.as_deref()) {
        assert!(
            !t.is_empty() && t != "." && t != ".." && !t.contains(['/', '\\', '%', '?', '#']),
            "tenant {t:?}"
        );
    }
    serde_json::to_vec(p).expect("a profile serialises");
}

/// Validates under every policy and compiles under every capability set, checking invariants.
pub fn validate_and_compile(data: &[u8]) -> Option<(ValidatedCard, Profile)> {
    let mut first = None;
    for policy in policies() {
        match card::validate(data, &policy, None) {
            Ok(v) => {
                for c in caps() {
                    let p = card::compile(&v, &c);
                    check_profile(&v, &p);
                    if first.is_none() && policy.allow_plain_http {
                        first = Some((v.clone(), p));
                    }
                }
            }
            Err(errs) => {
                assert!(!errs.0.is_empty());
                check_errors(errs.iter());
            }
        }
    }
    first
}
