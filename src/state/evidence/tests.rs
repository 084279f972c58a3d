//! Claims and their sources, from hand-built states.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use super::*;
use crate::profile::{Profile, SkillProfile};
use crate::testkit::{ConfigToml, IntegrationToml};

const REQ: &str = "https://example.com/ext/req/v1";

fn state(extra: &str) -> IntegrationState {
    let c = ConfigToml::bare()
        .integration(
            IntegrationToml::new("p", "https://a.example/c")
                .skills(&["echo", "book"])
                .data_classes(&["internal"])
                .extra(extra),
        )
        .parse(std::path::Path::new("g.toml"))
        .unwrap();
    let mut p: Profile = crate::lock::diff::tests::pricing_profile();
    let iface = p.interface.as_mut().unwrap();
    iface.url = "https://a.example/a2a".into();
    p.streaming = true;
    p.extensions = vec![REQ.into()];
    p.required_extensions = vec![REQ.into()];
    let skill = |input: &[&str]| SkillProfile::builder().input(input).build();
    p.skills = [
        (
            "echo".to_string(),
            skill(&["text/plain", "application/json"]),
        ),
        ("book".to_string(), skill(&["text/plain"])),
    ]
    .into();
    crate::state::IntegrationState::for_tests(c.integrations[0].clone(), p)
}

fn source_of<'a>(claims: &'a [Claim], claim: &str) -> &'a Source {
    &claims
        .iter()
        .find(|c| c.claim == claim)
        .unwrap_or_else(|| panic!("no claim {claim}: {claims:?}"))
        .source
}

fn run(at: SystemTime, results: &[(&str, ProbeVerdict)]) -> Option<Arc<ProbeRun>> {
    Some(Arc::new(ProbeRun {
        trigger: ProbeTrigger::Scheduled,
        at,
        results: results
            .iter()
            .map(|(c, r)| ProbeRecord::new((*c).into(), *r, "seen", at))
            .collect(),
    }))
}

#[test]
fn every_claim_is_declared_until_something_is_observed() {
    let s = state("");
    let claims = claims(&s);
    let keys: Vec<&str> = claims.iter().map(|c| c.claim.as_str()).collect();
    assert_eq!(
        keys,
        [
            "interface",
            "version",
            "streaming",
            &format!("extension:{REQ}"),
            "extensions",
            "input:echo:text/plain",
            "input:echo:application/json",
            "input:book:text/plain",
            "input",
        ]
    );
    assert!(
        claims
            .iter()
            .all(|c| c.source == Source::Declared { at: s.installed_at })
    );
    assert_eq!(
        source_of(&claims, "streaming"),
        &Source::Declared { at: s.installed_at }
    );
    assert!(super::claims(&IntegrationState::pending(s.integration.clone())).is_empty());
}

#[test]
fn probes_verify_or_contradict_and_map_the_probe_skill_media_types() {
    let mut s = state("[integrations.probe]\nskill = \"echo\"");
    let t = s.installed_at + Duration::from_secs(5);
    s.probes = run(
        t,
        &[
            ("interface", ProbeVerdict::Ok),
            ("streaming", ProbeVerdict::Failed),
            (&format!("extension:{REQ}"), ProbeVerdict::Inconclusive),
            ("input:application/json", ProbeVerdict::Ok),
        ],
    );
    let c = claims(&s);
    assert!(matches!(source_of(&c, "interface"), Source::Verified { at, .. } if *at == t));
    assert!(matches!(
        source_of(&c, "streaming"),
        Source::Contradicted {
            by: Observer::Probe,
            ..
        }
    ));
    assert!(matches!(
        source_of(&c, &format!("extension:{REQ}")),
        Source::Inconclusive { .. }
    ));
    assert!(matches!(
        source_of(&c, "input:echo:application/json"),
        Source::Verified { .. }
    ));
    // The probe skill is echo: book's media types are not what the probe checked.
    assert!(matches!(
        source_of(&c, "input:book:text/plain"),
        Source::Declared { .. }
    ));
}

#[test]
fn runtime_evidence_contradicts_and_the_newest_observation_wins() {
    let mut s = state("");
    let t = s.installed_at + Duration::from_secs(5);
    s.probes = run(t, &[("streaming", ProbeVerdict::Ok)]);
    let refused = |at| Evidence {
        at,
        kind: EvidenceKind::StreamingRefused,
        detail: "SendStreamingMessage answered with UnsupportedOperationError".into(),
    };
    // Older than the probe: the probe's verification stands.
    s.evidence = vec![refused(t - Duration::from_secs(1))];
    assert!(matches!(
        source_of(&claims(&s), "streaming"),
        Source::Verified { .. }
    ));
    // Newer: contradicted at runtime.
    s.evidence.push(refused(t + Duration::from_secs(1)));
    assert!(matches!(
        source_of(&claims(&s), "streaming"),
        Source::Contradicted {
            by: Observer::Runtime,
            ..
        }
    ));
    for (cause, claim) in [
        (StaleCause::VersionNotSupported, "interface"),
        (StaleCause::ExtensionSupportRequired, "extensions"),
        (StaleCause::ContentTypeNotSupported, "input"),
    ] {
        s.evidence = vec![Evidence {
            at: t,
            kind: EvidenceKind::StaleError(cause),
            detail: cause.as_str().into(),
        }];
        assert!(
            matches!(
                source_of(&claims(&s), claim),
                Source::Contradicted {
                    by: Observer::Runtime,
                    ..
                }
            ),
            "{cause:?}"
        );
    }
}

#[test]
fn observations_from_before_the_profile_was_installed_say_nothing_about_it() {
    let mut s = state("");
    let before = s.installed_at - Duration::from_secs(60);
    s.probes = run(before, &[("interface", ProbeVerdict::Failed)]);
    s.evidence = vec![Evidence {
        at: before,
        kind: EvidenceKind::StreamingRefused,
        detail: "x".into(),
    }];
    let c = claims(&s);
    assert!(matches!(
        source_of(&c, "interface"),
        Source::Declared { .. }
    ));
    assert!(matches!(
        source_of(&c, "streaming"),
        Source::Declared { .. }
    ));
}

#[test]
fn an_artifact_schema_is_a_claim_runtime_mismatches_contradict() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("s.json"), r#"{"type":"object"}"#).unwrap();
    let path = dir.path().join("s.json");
    let mut s = state(&format!(
        "artifact_schema = {:?}",
        path.display().to_string()
    ));
    assert!(matches!(
        source_of(&claims(&s), "artifacts"),
        Source::Declared { .. }
    ));
    s.evidence = vec![Evidence {
        at: s.installed_at,
        kind: EvidenceKind::ArtifactSchemaMismatch,
        detail: "task.artifacts[0].parts[0].data fails `type`".into(),
    }];
    assert!(matches!(
        source_of(&claims(&s), "artifacts"),
        Source::Contradicted { .. }
    ));
}

#[test]
fn probe_details_are_bounded_printable_text_and_claims_serialise_flat() {
    let r = ProbeRecord::new(
        "interface".into(),
        ProbeVerdict::Ok,
        &format!("a\u{1b}[31m\n{}", "x".repeat(500)),
        SystemTime::UNIX_EPOCH,
    );
    assert!(
        r.detail.len() <= MAX_DETAIL && r.detail.starts_with("a[31m"),
        "{}",
        r.detail
    );
    let c = Claim {
        claim: "streaming".into(),
        declared: "true".into(),
        source: Source::Contradicted {
            at: SystemTime::UNIX_EPOCH,
            by: Observer::Runtime,
            detail: "refused".into(),
        },
    };
    let v = serde_json::to_value(&c).unwrap();
    assert_eq!(v["source"], "contradicted");
    assert_eq!(v["by"], "runtime");
    assert_eq!(v["claim"], "streaming");
}

#[test]
fn claim_times_are_shown_as_rfc3339_strings() {
    let shown = serde_json::to_string(&claims(&state(""))).unwrap();
    assert!(
        shown.contains("\"at\":\"") && !shown.contains("secs_since_epoch"),
        "{shown}"
    );
}
