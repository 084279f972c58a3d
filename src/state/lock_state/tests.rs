//! The verdict and `on_breaking` applied to an integration's state.

use std::time::{Duration, SystemTime};

use super::*;
use crate::lock::diff::tests::pricing_profile;
use crate::profile::Profile;
use crate::state::{NoUpstream, Upstream};
use crate::testkit::{ConfigToml, IntegrationToml};

const URL: &str = "https://pricing.partner.example/a2a/jsonrpc";

fn integration(extra: &str) -> Arc<crate::config::Integration> {
    let c = ConfigToml::bare()
        .integration(
            IntegrationToml::new(
                "pricing",
                "https://pricing.partner.example/.well-known/agent-card.json",
            )
            .skills(&["itinerary-pricing"])
            .data_classes(&["internal"])
            .extra("scopes = [\"pricing.quote\"]")
            .extra("input_modes = [\"application/json\"]\noutput_modes = [\"application/json\"]")
            .extra(extra),
        )
        .integration(
            IntegrationToml::new("spare", "https://spare.example/c")
                .skills(&["itinerary-pricing"])
                .data_classes(&["internal"]),
        )
        .parse(std::path::Path::new("g.toml"))
        .unwrap();
    Arc::new(c.integrations[0].clone())
}

fn state(extra: &str, profile: Profile) -> IntegrationState {
    IntegrationState::from_profile(integration(extra), profile, Ok(Upstream::for_tests(URL)))
}

fn lock_of(extra: &str) -> Lock {
    let i = integration(extra);
    crate::lock::pin(
        &super::manifest_of(&i),
        &pricing_profile(),
        chrono::DateTime::UNIX_EPOCH,
        Default::default(),
    )
    .unwrap()
    .lock
}

fn at() -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000)
}

fn lines(s: &IntegrationState) -> Vec<String> {
    s.lock.findings.iter().map(ToString::to_string).collect()
}

fn csv(mut p: Profile) -> Profile {
    p.skills.get_mut("itinerary-pricing").unwrap().output = vec!["text/csv".into()];
    p
}

const CSV_FINDING: &str = "breaking: skills.itinerary-pricing.output: [application/json] -> [text/csv] (none of the workflow's output modes is offered)";

#[test]
fn without_a_lockfile_the_integration_is_unpinned_and_unchanged() {
    let s = state("", pricing_profile()).with_lock(Ok(None), at());
    assert_eq!(s.lock.verdict, LockVerdict::Unpinned);
    assert!(s.status.is_usable());
    assert!(s.lock.findings.is_empty() && s.lock.fallback.is_none());
}

#[test]
fn compatible_and_review_keep_serving() {
    let s = state("", pricing_profile()).with_lock(Ok(Some(lock_of(""))), at());
    assert_eq!(s.lock.verdict, LockVerdict::Compatible);
    assert!(s.status.is_usable());
    assert_eq!(s.lock.at, at());
    let mut p = pricing_profile();
    p.agent_version = "3.3.0".into();
    let s = state("", p).with_lock(Ok(Some(lock_of(""))), at());
    assert_eq!(s.lock.verdict, LockVerdict::Review);
    assert!(s.status.is_usable());
    assert_eq!(
        lines(&s),
        ["review: agent_version: 3.2.0 -> 3.3.0 (agent version changed)"]
    );
    assert!(s.usable().is_some());
}

#[test]
fn breaking_blocks_by_default_but_running_tasks_keep_their_upstream() {
    let s = state("", csv(pricing_profile())).with_lock(Ok(Some(lock_of(""))), at());
    assert_eq!(s.lock.verdict, LockVerdict::Breaking);
    assert!(matches!(s.status, Status::Blocked { .. }));
    assert_eq!(
        s.status.reason(),
        Some(format!("breaking change against the lockfile: {CSV_FINDING}").as_str())
    );
    assert!(s.usable().is_none());
    assert!(
        s.serving().is_some(),
        "GetTask/CancelTask/SubscribeToTask still have an upstream"
    );
    assert!(s.lock_breaking());
}

#[test]
fn breaking_with_fallback_or_warn_keeps_the_status() {
    let s = state("on_breaking = \"fallback:spare\"", csv(pricing_profile()))
        .with_lock(Ok(Some(lock_of(""))), at());
    assert!(s.status.is_usable());
    assert_eq!(s.lock.fallback.as_deref(), Some("spare"));
    assert_eq!(lines(&s), [CSV_FINDING]);
    let s = state("on_breaking = \"warn\"", csv(pricing_profile()))
        .with_lock(Ok(Some(lock_of(""))), at());
    assert_eq!(s.lock.verdict, LockVerdict::Breaking);
    assert!(s.status.is_usable());
    assert!(s.lock.fallback.is_none());
}

#[test]
fn an_unreadable_lockfile_is_breaking() {
    let s = state("", pricing_profile()).with_lock(
        Err(crate::lock::UnreadableLock::Read {
            path: "locks/pricing.json".into(),
            source: crate::types::file::FileError::Io {
                what: "lockfile",
                path: "locks/pricing.json".into(),
                source: std::io::Error::from(std::io::ErrorKind::PermissionDenied),
            },
        }),
        at(),
    );
    assert_eq!(s.lock.verdict, LockVerdict::Breaking);
    assert_eq!(
        lines(&s),
        [
            "breaking: lockfile: valid -> invalid (cannot read the lockfile locks/pricing.json: permission denied)"
        ]
    );
    assert!(matches!(s.status, Status::Blocked { .. }));
}

#[test]
fn an_unusable_profile_is_breaking_and_stays_unusable() {
    let s = IntegrationState::from_profile(
        integration(""),
        pricing_profile(),
        Err(NoUpstream {
            kind: "credential_env_unset",
            reason: "credential env X is not set".into(),
        }),
    )
    .with_lock(Ok(Some(lock_of(""))), at());
    assert_eq!(
        lines(&s),
        ["breaking: usable: true -> false (credential env X is not set)"]
    );
    assert!(matches!(s.status, Status::Unusable { .. }));
}

#[test]
fn losing_streaming_is_review_unless_required() {
    let mut p = pricing_profile();
    p.streaming = false;
    // Preferred: pinned because the card streamed, lost → review.
    let s = state("", p.clone()).with_lock(Ok(Some(lock_of(""))), at());
    assert_eq!(s.lock.verdict, LockVerdict::Review);
    let s = state("streaming = \"required\"", p)
        .with_lock(Ok(Some(lock_of("streaming = \"required\""))), at());
    assert_eq!(s.lock.verdict, LockVerdict::Breaking);
}

#[test]
fn a_fallback_must_satisfy_the_lock_itself() {
    let lock = lock_of("");
    assert!(satisfies(&state("", pricing_profile()), &lock, false));
    assert!(!satisfies(&state("", csv(pricing_profile())), &lock, false));
    let blocked = state("", csv(pricing_profile())).with_lock(Ok(Some(lock.clone())), at());
    assert!(!satisfies(&blocked, &lock, false));
}

#[test]
fn the_same_verdict_is_recognised_whatever_its_time() {
    let a = state("", pricing_profile()).with_lock(Ok(Some(lock_of(""))), at());
    let b = state("", pricing_profile()).with_lock(Ok(Some(lock_of(""))), SystemTime::now());
    assert!(a.lock.same_verdict(&b.lock));
    let c = state("", csv(pricing_profile())).with_lock(Ok(Some(lock_of(""))), at());
    assert!(!a.lock.same_verdict(&c.lock));
}

#[test]
fn the_verdict_time_is_shown_as_an_rfc3339_string() {
    let at = SystemTime::UNIX_EPOCH + Duration::from_millis(1_796_128_496_789);
    let v = serde_json::to_value(LockState::unpinned(at)).unwrap();
    assert_eq!(v["at"], "2026-12-01T12:34:56.789Z", "{v}");
}

#[test]
fn the_manifest_is_the_integrations_workflow() {
    use crate::lock::StreamingNeed;
    use crate::state::manifest_of;
    let text = "[[integrations]]\nname=\"a\"\ncard=\"https://a.example/c\"\norigins=[\"https://a.example\"]\nskills=[\"s\", \"t\"]\nscopes=[\"x\"]\ndata_classes=[\"p\"]\nstreaming=\"required\"\ninput_modes=[\"application/json\"]\n";
    let c = crate::config::Config::parse(text, std::path::Path::new("g.toml")).unwrap();
    let m = manifest_of(&c.integrations[0]);
    assert_eq!(m.agent, "https://a.example/c");
    assert_eq!(m.skills, ["s", "t"]);
    assert_eq!(m.scopes, ["x"]);
    assert_eq!(m.streaming, StreamingNeed::Required);
    assert_eq!(m.input_modes, ["application/json"]);
    assert!(m.output_modes.is_empty());
}
