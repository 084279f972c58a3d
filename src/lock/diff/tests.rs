//! Table-driven tests of every classification rule, each with the exact finding text.

use std::collections::BTreeMap;

use super::*;
use crate::lock::{Manifest, StreamingNeed, pin};
use crate::profile::{Binding, Interface, Unusable};

const A: &str = "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
const B: &str = "sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";
const DIGEST_NOTE: &str = "compatible: card_digest: sha256:aaaaaaaaaaaa… -> sha256:bbbbbbbbbbbb… (the card changed; nothing the workflow needs did)";
const COST: &str = "https://example.com/ext/cost-estimate/v1";

/// The travel planner's pricing integration (the worked example of `tests/fixtures/lock`).
pub(crate) fn manifest() -> Manifest {
    Manifest {
        agent: "https://pricing.partner.example/.well-known/agent-card.json".into(),
        skills: vec!["itinerary-pricing".into()],
        scopes: vec!["pricing.quote".into()],
        streaming: StreamingNeed::Required,
        extensions: vec![],
        input_modes: vec!["application/json".into()],
        output_modes: vec!["application/json".into()],
    }
}

fn alt(scheme: &str, scopes: &[&str]) -> SecurityAlternative {
    [(
        scheme.to_string(),
        scopes.iter().map(|s| s.to_string()).collect(),
    )]
    .into()
}

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

fn bv(binding: Binding) -> BindingVersion {
    BindingVersion {
        binding,
        version: "1.0".into(),
    }
}

/// The partner's pricing agent as pinned.
pub(crate) fn pricing_profile() -> Profile {
    let example = ["Price LHR-JFK on 2026-10-02"];
    Profile::builder()
        .agent_version("3.2.0")
        .card_digest(A)
        .url("https://pricing.partner.example/a2a/jsonrpc")
        .offered(&[(Binding::JsonRpc, "1.0"), (Binding::HttpJson, "1.0")])
        .streaming(true)
        .extensions(&[COST])
        .skill_with(
            "itinerary-pricing",
            SkillProfile::builder()
                .input(&["application/json"])
                .output(&["application/json"])
                .security(vec![
                    alt("bearer", &["pricing.quote"]),
                    alt("bearer", &["pricing.admin"]),
                ])
                .tags(&["pricing", "travel"])
                .build(),
        )
        .skill_with(
            "fare-rules",
            SkillProfile::builder()
                .output(&["text/markdown", "text/plain"])
                .tags(&["rules"])
                .build(),
        )
        .named("Pricing Agent", "Quotes fares.")
        .skill_display(
            "itinerary-pricing",
            "Itinerary pricing",
            "Prices an itinerary.",
            &example,
        )
        .skill_display("fare-rules", "Fare rules", "Explains fare rules.", &example)
        .build()
}

fn lock() -> Lock {
    let at = chrono::DateTime::parse_from_rfc3339("2026-10-02T08:30:00Z")
        .unwrap()
        .to_utc();
    pin(&manifest(), &pricing_profile(), at, BTreeMap::new())
        .unwrap()
        .lock
}

fn lock_with(f: impl Fn(&mut Lock)) -> Lock {
    let mut l = lock();
    f(&mut l);
    l
}

fn skill<'a>(p: &'a mut Profile, id: &str) -> &'a mut SkillProfile {
    p.skills.get_mut(id).unwrap()
}

fn no_interface(p: &mut Profile) {
    let u = Unusable::NoSupportedInterface {
        offered: vec![("GRPC".into(), "1.0".into())],
    };
    p.verdict = crate::profile::Verdict::Unusable(u);
    p.interface = None;
    p.offered.clear();
}

fn prefer_rest(p: &mut Profile) {
    p.interface = Some(Interface {
        url: "https://pricing.partner.example/a2a/rest".into(),
        binding: Binding::HttpJson,
        version: "1.0".into(),
        tenant: None,
    });
    p.offered = vec![bv(Binding::HttpJson), bv(Binding::JsonRpc)];
}

type Mutation = for<'a> fn(&'a mut Profile);

fn lines(v: &Verdict) -> Vec<String> {
    v.findings.iter().map(ToString::to_string).collect()
}

fn run(table: &[(&str, Mutation, Class, &[&str])], classify: impl Fn(&Profile) -> Verdict) {
    for (name, mutate, class, expected) in table {
        let mut p = pricing_profile();
        mutate(&mut p);
        let v = classify(&p);
        assert_eq!(lines(&v), *expected, "rule {name:?}: findings");
        assert_eq!(v.class, *class, "rule {name:?}: class");
    }
}

#[test]
fn every_rule_against_the_lock() {
    let table: &[(&str, Mutation, Class, &[&str])] = &[
        ("unchanged", |_| {}, Class::Compatible, &[]),
        (
            "card changed, nothing needed did",
            |p| p.card_digest = B.into(),
            Class::Compatible,
            &[DIGEST_NOTE],
        ),
        (
            "text changes are invisible to the lock",
            |p| {
                p.card_digest = B.into();
                p.display.description = "Quotes fares, fast.".into();
                p.display.name = "Pricing".into();
            },
            Class::Compatible,
            &[DIGEST_NOTE],
        ),
        (
            "unusable: its reason, nothing else",
            |p| {
                no_interface(p);
                p.agent_version = "4.0.0".into();
                p.streaming = false;
            },
            Class::Breaking,
            &[
                "breaking: usable: true -> false (no mutually supported interface (card offers GRPC 1.0))",
            ],
        ),
        (
            "a required extension the client does not know",
            |p| {
                let u = Unusable::RequiredExtensions {
                    uris: vec!["https://example.com/ext/new/v1".into()],
                };
                p.verdict = crate::profile::Verdict::Unusable(u);
            },
            Class::Breaking,
            &[
                "breaking: usable: true -> false (required extensions not supported: https://example.com/ext/new/v1)",
            ],
        ),
        (
            "pinned interface still offered, another preferred",
            prefer_rest,
            Class::Review,
            &[
                "review: interface: JSONRPC 1.0 -> HTTP+JSON 1.0 (another interface is preferred; JSONRPC 1.0 is still offered; re-run probes)",
            ],
        ),
        (
            "pinned interface no longer offered",
            |p| {
                prefer_rest(p);
                p.offered = vec![bv(Binding::HttpJson)];
            },
            Class::Breaking,
            &[
                "breaking: interface: JSONRPC 1.0 -> HTTP+JSON 1.0 (JSONRPC 1.0 is no longer offered)",
            ],
        ),
        (
            "required streaming lost",
            |p| p.streaming = false,
            Class::Breaking,
            &[
                "breaking: streaming: true -> false (no longer advertised, and the workflow requires it)",
            ],
        ),
        (
            "pinned skill removed",
            |p| {
                p.skills.remove("itinerary-pricing");
            },
            Class::Breaking,
            &[
                "breaking: skills.itinerary-pricing: offered -> absent (removed, or hidden from this caller)",
            ],
        ),
        (
            "input narrowed",
            |p| skill(p, "itinerary-pricing").input = strings(&["application/pdf"]),
            Class::Breaking,
            &[
                "breaking: skills.itinerary-pricing.input: [application/json] -> [application/pdf] (no longer accepts application/json)",
            ],
        ),
        (
            "input widened",
            |p| skill(p, "itinerary-pricing").input = strings(&["application/json", "text/plain"]),
            Class::Compatible,
            &[],
        ),
        (
            "input by wildcard",
            |p| skill(p, "itinerary-pricing").input = strings(&["application/*"]),
            Class::Compatible,
            &[],
        ),
        (
            "none of our output modes",
            |p| skill(p, "itinerary-pricing").output = strings(&["text/csv"]),
            Class::Breaking,
            &[
                "breaking: skills.itinerary-pricing.output: [application/json] -> [text/csv] (none of the workflow's output modes is offered)",
            ],
        ),
        (
            "output changed, ours still offered",
            |p| skill(p, "itinerary-pricing").output = strings(&["text/csv", "application/json"]),
            Class::Compatible,
            &[],
        ),
        (
            "security needs a scope not held",
            |p| {
                skill(p, "itinerary-pricing").security =
                    vec![alt("bearer", &["pricing.quote", "pricing.v2"])]
            },
            Class::Breaking,
            &[
                "breaking: skills.itinerary-pricing.security: [pricing.quote] -> bearer[pricing.quote, pricing.v2] (every alternative needs a scope the integration does not hold: pricing.v2)",
            ],
        ),
        (
            "security changed, still satisfiable",
            |p| skill(p, "itinerary-pricing").security = vec![alt("oauth", &["pricing.quote"])],
            Class::Compatible,
            &[],
        ),
        (
            "security dropped",
            |p| skill(p, "itinerary-pricing").security.clear(),
            Class::Compatible,
            &[],
        ),
        (
            "agent version",
            |p| p.agent_version = "3.3.0".into(),
            Class::Review,
            &["review: agent_version: 3.2.0 -> 3.3.0 (agent version changed)"],
        ),
        (
            "a skill the workflow does not use removed",
            |p| {
                p.skills.remove("fare-rules");
            },
            Class::Compatible,
            &[],
        ),
        (
            "push lost is not the lock's business",
            |p| p.push = true,
            Class::Compatible,
            &[],
        ),
        (
            "several at once, in rule order",
            |p| {
                prefer_rest(p);
                p.streaming = false;
                skill(p, "itinerary-pricing").output = strings(&["text/csv"]);
                p.agent_version = "4.0.0".into();
            },
            Class::Breaking,
            &[
                "review: interface: JSONRPC 1.0 -> HTTP+JSON 1.0 (another interface is preferred; JSONRPC 1.0 is still offered; re-run probes)",
                "breaking: streaming: true -> false (no longer advertised, and the workflow requires it)",
                "breaking: skills.itinerary-pricing.output: [application/json] -> [text/csv] (none of the workflow's output modes is offered)",
                "review: agent_version: 3.2.0 -> 4.0.0 (agent version changed)",
            ],
        ),
    ];
    let l = lock();
    run(table, |p| check_against_lock(p, &l));
}

#[test]
fn a_pinned_extension_no_longer_offered_is_breaking() {
    let l = lock_with(|l| l.requires.extensions = vec![COST.into()]);
    let mut p = pricing_profile();
    p.extensions.clear();
    let v = check_against_lock(&p, &l);
    assert_eq!(v.class, Class::Breaking);
    assert_eq!(
        lines(&v),
        [format!(
            "breaking: extensions: [{COST}] -> [] (no longer offered: {COST})"
        )]
    );
}

#[test]
fn streaming_lost_is_breaking_only_when_required() {
    let mut p = pricing_profile();
    p.streaming = false;
    let optional = lock_with(|l| l.requires.streaming = false);
    assert_eq!(check_against_lock(&p, &optional).class, Class::Compatible);
    // Pinned (the integration streamed when it could) but not required: review.
    let v = check_against_lock_for(&p, &lock(), false);
    assert_eq!(
        lines(&v),
        [
            "review: streaming: true -> false (no longer advertised; streaming calls will be answered through SendMessage)"
        ]
    );
    assert_eq!(v.class, Class::Review);
    assert_eq!(
        check_against_lock_for(&p, &lock(), true).class,
        Class::Breaking
    );
    let old = pricing_profile();
    let v = diff_profiles(&old, &p, Some(&optional));
    assert_eq!(
        lines(&v),
        [
            "review: streaming: true -> false (no longer advertised; streaming calls will be answered through SendMessage)"
        ]
    );
    assert_eq!(v.class, Class::Review);
    // Required: one breaking line, not a second review line for the same field.
    let v = diff_profiles(&old, &p, Some(&lock()));
    assert_eq!(
        lines(&v),
        ["breaking: streaming: true -> false (no longer advertised, and the workflow requires it)"]
    );
}

#[test]
fn every_rule_between_two_profiles_without_a_lock() {
    let table: &[(&str, Mutation, Class, &[&str])] = &[
        ("identical", |_| {}, Class::Compatible, &[]),
        (
            "digest only",
            |p| p.card_digest = B.into(),
            Class::Compatible,
            &[DIGEST_NOTE],
        ),
        (
            "text",
            |p| {
                p.card_digest = B.into();
                p.display.name = "Pricing".into();
                p.display.description =
                    "Quotes fares and taxes for every itinerary you can imagine, quickly.".into();
                let s = p.display.skills.get_mut("itinerary-pricing").unwrap();
                s.name = "Pricing".into();
                s.description = "Prices it.".into();
                s.examples.push("Price CDG-NRT".into());
            },
            Class::Compatible,
            &[
                "compatible: name: \"Pricing Agent\" -> \"Pricing\" (display text only)",
                "compatible: description: \"Quotes fares.\" -> \"Quotes fares and taxes for every itinera\"… (display text only)",
                "compatible: skills.itinerary-pricing.name: \"Itinerary pricing\" -> \"Pricing\" (display text only)",
                "compatible: skills.itinerary-pricing.description: \"Prices an itinerary.\" -> \"Prices it.\" (display text only)",
                "compatible: skills.itinerary-pricing.examples: 1 examples -> 2 examples (display text only)",
            ],
        ),
        (
            "tags",
            |p| skill(p, "fare-rules").tags = strings(&["rules", "fares"]),
            Class::Compatible,
            &["compatible: skills.fare-rules.tags: [rules] -> [rules, fares] (routing tags only)"],
        ),
        (
            "unusable",
            no_interface,
            Class::Breaking,
            &[
                "breaking: usable: true -> false (no mutually supported interface (card offers GRPC 1.0))",
            ],
        ),
        (
            "streaming lost, not required",
            |p| p.streaming = false,
            Class::Review,
            &[
                "review: streaming: true -> false (no longer advertised; streaming calls will be answered through SendMessage)",
            ],
        ),
        (
            "interface preferred",
            prefer_rest,
            Class::Review,
            &[
                "review: interface: JSONRPC 1.0 -> HTTP+JSON 1.0 (another interface is preferred; JSONRPC 1.0 is still offered; re-run probes)",
                "review: interface.url: https://pricing.partner.example/a2a/jsonrpc -> https://pricing.partner.example/a2a/rest (calls go to another URL; re-run probes)",
            ],
        ),
        (
            "interface url",
            |p| p.interface.as_mut().unwrap().url = "https://pricing.partner.example/v2".into(),
            Class::Review,
            &[
                "review: interface.url: https://pricing.partner.example/a2a/jsonrpc -> https://pricing.partner.example/v2 (calls go to another URL; re-run probes)",
            ],
        ),
        (
            "interface tenant",
            |p| p.interface.as_mut().unwrap().tenant = Some("acme".into()),
            Class::Review,
            &["review: interface.tenant: none -> acme (calls carry another tenant)"],
        ),
        (
            "new skill",
            |p| {
                p.skills.insert(
                    "refunds".into(),
                    SkillProfile::builder().input(&[]).output(&[]).build(),
                );
            },
            Class::Compatible,
            &["compatible: skills.refunds: absent -> offered (new skill)"],
        ),
        (
            "any skill removed",
            |p| {
                p.skills.remove("fare-rules");
            },
            Class::Breaking,
            &[
                "breaking: skills.fare-rules: offered -> absent (removed, or hidden from this caller)",
            ],
        ),
        (
            "input narrowed",
            |p| skill(p, "fare-rules").input = strings(&["text/markdown"]),
            Class::Breaking,
            &[
                "breaking: skills.fare-rules.input: [text/plain] -> [text/markdown] (no longer accepts text/plain)",
            ],
        ),
        (
            "input widened",
            |p| skill(p, "fare-rules").input = strings(&["text/plain", "application/json"]),
            Class::Compatible,
            &[
                "compatible: skills.fare-rules.input: [text/plain] -> [text/plain, application/json] (still accepts what the workflow sends)",
            ],
        ),
        (
            "output narrowed",
            |p| skill(p, "fare-rules").output = strings(&["text/plain"]),
            Class::Review,
            &[
                "review: skills.fare-rules.output: [text/markdown, text/plain] -> [text/plain] (no longer produces text/markdown)",
            ],
        ),
        (
            "output gone",
            |p| skill(p, "fare-rules").output = strings(&["application/pdf"]),
            Class::Breaking,
            &[
                "breaking: skills.fare-rules.output: [text/markdown, text/plain] -> [application/pdf] (none of the workflow's output modes is offered)",
            ],
        ),
        (
            "security changed, satisfiable",
            |p| skill(p, "itinerary-pricing").security = vec![alt("bearer", &["pricing.admin"])],
            Class::Review,
            &[
                "review: skills.itinerary-pricing.security: bearer[pricing.quote] | bearer[pricing.admin] -> bearer[pricing.admin] (security requirements changed; the held scopes still satisfy one alternative)",
            ],
        ),
        (
            "security needs a scope never asked for",
            |p| skill(p, "fare-rules").security = vec![alt("oauth", &["fares.read"])],
            Class::Breaking,
            &[
                "breaking: skills.fare-rules.security: [] -> oauth[fares.read] (every alternative needs a scope the integration does not hold: fares.read)",
            ],
        ),
        (
            "extension removed",
            |p| p.extensions.clear(),
            Class::Review,
            &[
                "review: extensions: [https://example.com/ext/cost-estimate/v1] -> [] (an extension is no longer offered)",
            ],
        ),
        (
            "extension added",
            |p| p.extensions.push("https://example.com/ext/trace/v1".into()),
            Class::Compatible,
            &[
                "compatible: extensions: [https://example.com/ext/cost-estimate/v1] -> [https://example.com/ext/cost-estimate/v1, https://example.com/ext/trace/v1] (extensions added)",
            ],
        ),
        (
            "extended card flag",
            |p| p.extended_card = true,
            Class::Compatible,
            &[
                "compatible: extended_card: false -> true (the profile is compiled from whichever card this caller sees)",
            ],
        ),
        (
            "agent version",
            |p| p.agent_version = "3.2.1".into(),
            Class::Review,
            &["review: agent_version: 3.2.0 -> 3.2.1 (agent version changed)"],
        ),
    ];
    let old = pricing_profile();
    run(table, |p| diff_profiles(&old, p, None));
}

#[test]
fn push_lost_between_profiles_is_review() {
    let mut old = pricing_profile();
    old.push = true;
    let v = diff_profiles(&old, &pricing_profile(), None);
    assert_eq!(
        lines(&v),
        ["review: push: true -> false (push notifications no longer advertised)"]
    );
    let v = diff_profiles(&pricing_profile(), &old, None);
    assert_eq!(
        lines(&v),
        ["compatible: push: false -> true (now advertised)"]
    );
}

#[test]
fn with_a_lock_only_what_the_workflow_uses_can_break() {
    let old = pricing_profile();
    let l = lock();
    let table: &[(&str, Mutation, Class, &[&str])] = &[
        (
            "unused skill removed",
            |p| {
                p.skills.remove("fare-rules");
            },
            Class::Compatible,
            &["compatible: skills.fare-rules: offered -> absent (the workflow does not use it)"],
        ),
        (
            "unused output narrowed",
            |p| skill(p, "fare-rules").output = strings(&["text/plain"]),
            Class::Compatible,
            &[
                "compatible: skills.fare-rules.output: [text/markdown, text/plain] -> [text/plain] (still produces what the workflow reads)",
            ],
        ),
        (
            "pinned output gone",
            |p| skill(p, "itinerary-pricing").output = strings(&["text/csv"]),
            Class::Breaking,
            &[
                "breaking: skills.itinerary-pricing.output: [application/json] -> [text/csv] (none of the workflow's output modes is offered)",
            ],
        ),
    ];
    run(table, |p| diff_profiles(&old, p, Some(&l)));
}

#[test]
fn becoming_usable_is_review_and_staying_unusable_is_breaking() {
    let mut old = pricing_profile();
    no_interface(&mut old);
    let v = diff_profiles(&old, &pricing_profile(), None);
    assert_eq!(
        lines(&v),
        ["review: usable: false -> true (the agent became usable)"]
    );
    let v = diff_profiles(&old, &old.clone(), None);
    assert_eq!(
        lines(&v),
        [
            "breaking: usable: false -> false (no mutually supported interface (card offers GRPC 1.0))"
        ]
    );
}

#[test]
fn classes_order_and_exit_codes() {
    assert!(Class::Compatible < Class::Review && Class::Review < Class::Breaking);
    assert_eq!(
        [Class::Compatible, Class::Review, Class::Breaking].map(Class::exit_code),
        [0, 3, 4]
    );
    assert_eq!(
        render_security(&[
            alt("key", &[]),
            [("key".to_string(), vec![]), ("mtls".to_string(), vec![])].into()
        ]),
        "key[] | key[] + mtls[]"
    );
}

/// Seed 000's worked example: the pricing agent's card, pinned, then changed four times.
mod travel_pricing {
    use super::*;
    use crate::card::CardPolicy;
    use crate::profile::ClientCaps;

    fn card(name: &str) -> Profile {
        let path = format!(
            "{}/tests/fixtures/lock/{name}.json",
            env!("CARGO_MANIFEST_DIR")
        );
        let bytes = std::fs::read(&path).unwrap();
        let v = crate::card::validate(&bytes, &CardPolicy::default(), None)
            .unwrap_or_else(|e| panic!("{path}: {e}"));
        crate::profile::compile(&v, &ClientCaps::default())
    }

    fn pinned() -> Lock {
        let at = chrono::DateTime::parse_from_rfc3339("2026-10-02T08:30:00Z")
            .unwrap()
            .to_utc();
        pin(&manifest(), &card("pricing-0"), at, BTreeMap::new())
            .unwrap()
            .lock
    }

    fn digest(p: &Profile) -> String {
        p.card_digest.get(..19).unwrap().to_owned() + "…"
    }

    #[test]
    fn the_lock_records_what_the_planner_needs() {
        let l = pinned();
        assert_eq!(l.interface.to_string(), "JSONRPC 1.0");
        assert!(l.requires.streaming);
        assert_eq!(l.requires.skills.len(), 1);
        let s = &l.requires.skills["itinerary-pricing"];
        assert_eq!(
            (&s.input[..], &s.output[..], &s.scopes[..]),
            (
                &strings(&["application/json"])[..],
                &strings(&["application/json"])[..],
                &strings(&["pricing.quote"])[..]
            )
        );
        // The committed fixture lockfile is this lock (kept in sync by this test; set
        // A2A_EGRESS_BLESS=1 to rewrite it after an intended change).
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/lock/pricing.lock.json"
        );
        if std::env::var_os("A2A_EGRESS_BLESS").is_some() {
            std::fs::write(path, crate::lock::wire::to_json(&l)).unwrap();
        }
        let committed = std::fs::read(path).unwrap();
        assert_eq!(
            std::str::from_utf8(&committed).unwrap(),
            crate::lock::wire::to_json(&l)
        );
    }

    #[test]
    fn reordered_keys_are_no_change_at_all() {
        let (a, b) = (card("pricing-0"), card("pricing-0-reordered"));
        assert_eq!(a, b);
        let v = diff_profiles(&a, &b, None);
        assert_eq!((v.class, v.findings.len()), (Class::Compatible, 0));
        assert_eq!(check_against_lock(&b, &pinned()).findings, vec![]);
    }

    #[test]
    fn four_card_changes_against_the_lock() {
        let l = pinned();
        let v1 = card("pricing-1");
        let table: [(&str, Class, Vec<String>); 4] = [
            (
                "pricing-1",
                Class::Compatible,
                vec![format!(
                    "compatible: card_digest: {} -> {} (the card changed; nothing the workflow needs did)",
                    l.card_digest.get(..19).unwrap().to_owned() + "…",
                    digest(&v1)
                )],
            ),
            (
                "pricing-2",
                Class::Review,
                strings(&[
                    "review: interface: JSONRPC 1.0 -> HTTP+JSON 1.0 (another interface is preferred; JSONRPC 1.0 is still offered; re-run probes)",
                    "review: agent_version: 3.2.0 -> 3.3.0 (agent version changed)",
                ]),
            ),
            (
                "pricing-3",
                Class::Breaking,
                strings(&[
                    "review: interface: JSONRPC 1.0 -> HTTP+JSON 1.0 (another interface is preferred; JSONRPC 1.0 is still offered; re-run probes)",
                    "breaking: skills.itinerary-pricing.output: [application/json] -> [text/csv] (none of the workflow's output modes is offered)",
                    "review: agent_version: 3.2.0 -> 3.4.0 (agent version changed)",
                ]),
            ),
            (
                "pricing-4",
                Class::Breaking,
                strings(&[
                    "review: interface: JSONRPC 1.0 -> HTTP+JSON 1.0 (another interface is preferred; JSONRPC 1.0 is still offered; re-run probes)",
                    "breaking: streaming: true -> false (no longer advertised, and the workflow requires it)",
                    "breaking: skills.itinerary-pricing.security: [pricing.quote] -> bearer[pricing.quote.v2] (every alternative needs a scope the integration does not hold: pricing.quote.v2)",
                    "review: agent_version: 3.2.0 -> 4.0.0 (agent version changed)",
                ]),
            ),
        ];
        for (name, class, expected) in table {
            let v = check_against_lock(&card(name), &l);
            assert_eq!(lines(&v), expected, "{name}");
            assert_eq!(v.class, class, "{name}");
        }
    }

    #[test]
    fn each_change_against_the_card_before_it() {
        let l = pinned();
        let step = |from: &str, to: &str| diff_profiles(&card(from), &card(to), Some(&l));
        let v = step("pricing-0", "pricing-1");
        assert_eq!(
            lines(&v),
            [
                "compatible: description: \"Quotes fares for itineraries.\" -> \"Fast fare quotes for whole itineraries, \"… (display text only)",
                "compatible: skills.itinerary-pricing.description: \"Prices a whole itinerary, streaming part\"… -> \"Prices an itinerary end to end.\" (display text only)",
                "compatible: skills.itinerary-pricing.examples: 1 examples -> 2 examples (display text only)",
            ]
        );
        assert_eq!(v.class, Class::Compatible);
        assert_eq!(step("pricing-1", "pricing-2").class, Class::Review);
        assert_eq!(step("pricing-2", "pricing-3").class, Class::Breaking);
        let v = step("pricing-3", "pricing-4");
        assert_eq!(v.class, Class::Breaking);
        assert!(
            lines(&v).contains(&"breaking: streaming: true -> false (no longer advertised, and the workflow requires it)".to_string()),
            "{v:?}"
        );
    }
}

#[test]
fn unusable_and_invalid_lock_verdicts_are_one_breaking_line() {
    let v = unusable_verdict("credential env A2A_EGRESS_FINANCE_TOKEN is not set");
    assert_eq!(
        lines(&v),
        ["breaking: usable: true -> false (credential env A2A_EGRESS_FINANCE_TOKEN is not set)"]
    );
    let e = crate::lock::wire::parse(b"{\"agent\": 1}", "locks/x.json").unwrap_err();
    let v = invalid_lock_verdict(&e);
    assert_eq!(v.class, Class::Breaking);
    assert_eq!(
        lines(&v),
        [
            "breaking: lockfile: valid -> invalid (locks/x.json: invalid lockfile: - agent: invalid type: integer `1`, expected a string)"
        ]
    );
}

/// `tests/fixtures/lock/pricing-v03.json` (the pricing agent at A2A 0.3: `url` +
/// `preferredTransport` JSON-RPC, then HTTP+JSON) compiled for a client that allows 0.3, as
/// `compile` builds it: JSON-RPC 0.3 chosen, both bindings offered at 0.3, in the card's order.
fn compiled_pricing_03() -> Profile {
    let path = format!(
        "{}/tests/fixtures/lock/pricing-v03.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let bytes = std::fs::read(&path).unwrap();
    let v = crate::card::validate(&bytes, &crate::card::CardPolicy::default(), None)
        .unwrap_or_else(|e| panic!("{path}: {e}"));
    let caps = crate::profile::ClientCaps {
        versions: vec!["1.0".into(), "0.3".into()],
        ..Default::default()
    };
    crate::profile::compile(&v, &caps)
}

/// [`compiled_pricing_03`], checked usable: a chosen JSON-RPC 0.3 interface is callable
/// (translated), offering both 0.3 HTTP bindings.
fn pricing_profile_03() -> Profile {
    let p = compiled_pricing_03();
    assert!(p.is_usable(), "{:?}", p.verdict);
    assert_eq!(
        p.offered,
        [
            BindingVersion {
                binding: Binding::JsonRpc,
                version: "0.3".into()
            },
            BindingVersion {
                binding: Binding::HttpJson,
                version: "0.3".into()
            },
        ]
    );
    p
}

/// A 0.3 profile against the lock pinned on it (`pricing-v03.lock.json`) is compatible: the
/// gateway calls it through translation.
#[test]
fn a_0_3_profile_is_compatible_with_the_lock_pinned_on_it() {
    let path = format!(
        "{}/tests/fixtures/lock/pricing-v03.lock.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let l = crate::lock::wire::parse(&std::fs::read(&path).unwrap(), &path).unwrap();
    let v = check_against_lock(&pricing_profile_03(), &l);
    assert_eq!(v.class, Class::Compatible, "{:?}", lines(&v));
}

#[test]
fn a_protocol_version_move_is_review_while_the_pinned_binding_is_offered() {
    let on_03 = lock_with(|l| l.interface.version = "0.3".into());
    // 0.3 -> 1.0, JSON-RPC still offered: review, naming both versions.
    let v = check_against_lock(&pricing_profile(), &on_03);
    assert_eq!(
        lines(&v),
        [
            "review: interface: JSONRPC 0.3 -> JSONRPC 1.0 (the agent's protocol version moved 0.3 -> 1.0; the chosen interface is JSONRPC 1.0; re-run probes)"
        ]
    );
    assert_eq!(v.class, Class::Review);
    // And back (1.0 -> 0.3).
    let v = check_against_lock(&pricing_profile_03(), &lock());
    assert_eq!(v.class, Class::Review, "{:?}", lines(&v));
    assert!(lines(&v)[0].contains("moved 1.0 -> 0.3"), "{:?}", lines(&v));
    // The version moved and the pinned binding went away: breaking, as before.
    let mut rest_only = pricing_profile();
    prefer_rest(&mut rest_only);
    rest_only.offered = vec![bv(Binding::HttpJson)];
    let v = check_against_lock(&rest_only, &on_03);
    assert_eq!(
        lines(&v),
        ["breaking: interface: JSONRPC 0.3 -> HTTP+JSON 1.0 (JSONRPC 0.3 is no longer offered)"]
    );
    // The version moved but a skill the workflow needs went with it: the skill decides.
    let mut lost = pricing_profile();
    lost.skills.remove("itinerary-pricing");
    let v = check_against_lock(&lost, &on_03);
    assert_eq!(v.class, Class::Breaking, "{:?}", lines(&v));
}

/// `[client] versions = ["1.0", "0.3"]`, JSON-RPC 1.0 pinned; the new card offers HTTP+JSON 1.0
/// first and JSON-RPC 0.3 second. Calls go over HTTP+JSON, so the pinned binding listed at 0.3
/// is no protocol move: the pinned interface is gone, as it was before 0.3 existed.
#[test]
fn the_pinned_binding_at_another_version_but_not_chosen_is_breaking() {
    let mut p = pricing_profile();
    prefer_rest(&mut p);
    p.offered = vec![
        bv(Binding::HttpJson),
        BindingVersion {
            binding: Binding::JsonRpc,
            version: "0.3".into(),
        },
    ];
    let v = check_against_lock(&p, &lock());
    assert_eq!(
        lines(&v),
        ["breaking: interface: JSONRPC 1.0 -> HTTP+JSON 1.0 (JSONRPC 1.0 is no longer offered)"]
    );
    assert_eq!(v.class, Class::Breaking);
}

/// A 0.3 -> 1.0 move is when a tenant can first appear (0.3 interfaces have none), and the new
/// interface often has a new URL: both are reported beside the `interface` finding.
#[test]
fn a_protocol_version_move_still_reports_the_new_url_and_tenant() {
    let mut new = pricing_profile();
    let i = new.interface.as_mut().unwrap();
    i.url = "https://pricing.partner.example/a2a/v1".into();
    i.tenant = Some("acme".into());
    let v = diff_profiles(&pricing_profile_03(), &new, None);
    assert_eq!(
        interface_lines(&v),
        [
            "review: interface: JSONRPC 0.3 -> JSONRPC 1.0 (the agent's protocol version moved 0.3 -> 1.0; the chosen interface is JSONRPC 1.0; re-run probes)",
            "review: interface.url: https://pricing.partner.example/a2a/jsonrpc -> https://pricing.partner.example/a2a/v1 (calls go to another URL; re-run probes)",
            "review: interface.tenant: none -> acme (calls carry another tenant)",
        ]
    );
}

#[test]
fn between_profiles_a_0_3_agent_moving_to_1_0_is_review() {
    let v = diff_profiles(&pricing_profile_03(), &pricing_profile(), None);
    assert_eq!(v.class, Class::Review, "{:?}", lines(&v));
    // The 0.3 card was another card (version 3.1.0, other texts and security): those findings
    // are the other rules' business; none is breaking.
    assert_eq!(
        interface_lines(&v),
        [
            "review: interface: JSONRPC 0.3 -> JSONRPC 1.0 (the agent's protocol version moved 0.3 -> 1.0; the chosen interface is JSONRPC 1.0; re-run probes)"
        ]
    );
}

/// The findings about the interface (`interface`, `interface.url`, `interface.tenant`).
fn interface_lines(v: &Verdict) -> Vec<String> {
    (v.findings.iter())
        .filter(|f| f.field.starts_with("interface"))
        .map(ToString::to_string)
        .collect()
}

#[test]
fn the_lock_records_the_agents_protocol_version() {
    let l = pin(
        &manifest(),
        &pricing_profile_03(),
        chrono::DateTime::<chrono::Utc>::UNIX_EPOCH,
        BTreeMap::new(),
    )
    .unwrap()
    .lock;
    assert_eq!(l.interface.version, "0.3");
    let text = crate::lock::wire::to_json(&l);
    assert!(
        text.contains(
            "\"interface\": {\n    \"binding\": \"JSONRPC\",\n    \"version\": \"0.3\"\n  }"
        ),
        "{text}"
    );
}
