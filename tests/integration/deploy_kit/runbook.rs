//! Every alert in `deploy/prometheus/alerts.yaml` has a `runbook_url` to a section of
//! `deploy/RUNBOOK.md` that exists and says what the alert means, how to confirm it and what to
//! do; the alerts an operator needs first (probe failures, overload refusals, worker panics, the
//! gateway down or gone) exist and watch the right series. (That every metric they and the
//! runbook name is exported is the live-scrape test's part.)

use std::collections::BTreeMap;

use serde_json::Value;

use super::{deploy_dir, metric_names, read, yaml_docs};

/// GitHub's anchor for a heading: lower case, spaces to `-`, other punctuation dropped.
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// The runbook's `## ` sections by anchor.
fn sections() -> BTreeMap<String, String> {
    let text = read(&deploy_dir().join("RUNBOOK.md"));
    let mut out = BTreeMap::new();
    for part in text.split("\n## ").skip(1) {
        let (heading, body) = part.split_once('\n').unwrap_or((part, ""));
        let previous = out.insert(anchor(heading), body.to_owned());
        assert!(previous.is_none(), "two sections named {heading}");
    }
    out
}

/// Every alert rule, by name.
fn alerts() -> BTreeMap<String, Value> {
    let path = deploy_dir().join("prometheus/alerts.yaml");
    let mut out = BTreeMap::new();
    for group in yaml_docs(&path, &read(&path))[0]["groups"]
        .as_array()
        .unwrap()
    {
        for rule in group["rules"].as_array().unwrap() {
            out.insert(rule["alert"].as_str().unwrap().to_owned(), rule.clone());
        }
    }
    out
}

#[test]
fn every_alert_links_a_runbook_section_that_says_what_it_means_how_to_confirm_and_what_to_do() {
    let sections = sections();
    let mut bases = Vec::new();
    for (name, rule) in alerts() {
        let url = rule["annotations"]["runbook_url"]
            .as_str()
            .unwrap_or_else(|| panic!("{name}: no runbook_url"));
        let (base, anchor) = url
            .split_once("deploy/RUNBOOK.md#")
            .unwrap_or_else(|| panic!("{name}: {url} is not a section of deploy/RUNBOOK.md"));
        bases.push(base.to_owned());
        let section = sections
            .get(anchor)
            .unwrap_or_else(|| panic!("{name}: RUNBOOK.md has no section #{anchor}"));
        for part in ["**What it means.**", "**Confirm.**", "**Do.**"] {
            assert!(
                section.contains(part),
                "{name}: the runbook section has no {part}"
            );
        }
        let confirm = section
            .split("**Confirm.**")
            .nth(1)
            .and_then(|c| c.split("**Do.**").next())
            .unwrap_or_default();
        assert!(
            !metric_names(confirm).is_empty() || confirm.contains("up{"),
            "{name}: the runbook's Confirm names no metric"
        );
    }
    bases.sort();
    bases.dedup();
    assert_eq!(
        bases.len(),
        1,
        "one place the runbook is published: {bases:?}"
    );
    // The runbook has no section that no alert links (a leftover placeholder, a renamed alert).
    let alerts = alerts();
    for anchor in sections.keys() {
        assert!(
            alerts.keys().any(|a| a.to_lowercase() == *anchor),
            "section {anchor:?} belongs to no alert"
        );
    }
}

#[test]
fn alerts_watch_probe_failures_overload_worker_panics_and_the_gateway_being_down() {
    let alerts = alerts();
    let expr = |name: &str| {
        alerts
            .get(name)
            .and_then(|r| r["expr"].as_str())
            .unwrap_or_else(|| panic!("no alert {name}"))
            .to_owned()
    };
    for (name, metric) in [
        (
            "A2AEgressProbeClaimsFailed",
            "a2a_egress_probe_failed_claims",
        ),
        (
            "A2AEgressOverloadRefusals",
            "a2a_egress_overload_refusals_total",
        ),
        ("A2AEgressWorkerPanics", "a2a_egress_worker_panics_total"),
        (
            "A2AEgressCredentialMissing",
            "a2a_egress_credential_missing",
        ),
    ] {
        assert!(
            metric_names(&expr(name)).contains(metric),
            "{name}: {}",
            expr(name)
        );
    }
    let job = super::pod::podmonitor_job();
    assert_eq!(expr("A2AEgressDown"), format!("up{{job=\"{job}\"}} == 0"));
    assert_eq!(
        expr("A2AEgressAbsent"),
        format!("absent(up{{job=\"{job}\"}})")
    );
    for name in ["A2AEgressDown", "A2AEgressAbsent"] {
        assert_eq!(alerts[name]["labels"]["severity"], "critical", "{name}");
    }
}
