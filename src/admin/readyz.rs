//! One integration's `/readyz` entry, bounded whatever its state holds, and the runtime's (pure).
//!
//! A reason, a lock finding, an evidence detail or a probe message can carry text the gateway did
//! not write (a card's validation problems, an agent's error message) and the lists can grow with
//! a card's size, so every string goes through [`bounded_report`] and every list is cut to a fixed
//! number of entries followed by one saying how many were left out: the entry stays a few KiB and
//! free of control characters (issue 18, defect 4).

use serde_json::{Value, json};

use crate::card::sanitize::{MAX_REPORT_LINE_CHARS, bounded_report};
use crate::state::{IntegrationState, LockState};

/// Most lock findings and evidence entries listed per integration.
pub const MAX_LISTED: usize = 20;
/// Most claims and probe results listed per integration: they follow the configured skills and
/// the card's modes, so more than [`MAX_LISTED`] is ordinary, yet not without end.
pub const MAX_CLAIMS: usize = 64;
/// Lines of the status reason shown.
const MAX_REASON_LINES: usize = 4;

/// The `/readyz` `runtime` member: the data plane's threads, where the count came from, why,
/// and whether the control plane has a thread of its own.
pub fn runtime(t: &crate::config::Threads) -> Value {
    json!({
        "worker_threads": t.worker_threads,
        "from": t.from.as_str(),
        "why": t.why,
        "work_stealing": t.work_stealing,
        "control_plane_thread": if t.control_plane_apart() { "own" } else { "shared" },
        "read": "at start; a changed CPU quota or affinity takes effect at the next start",
    })
}

/// The `/readyz` entry of `st` for a reader without the admin token: its status only.
pub fn status_only(st: &IntegrationState) -> Value {
    json!({"status": st.status.as_str()})
}

/// The `/readyz` entry of `st`: status, reason, lock verdict and findings, evidence, last probe
/// run, claims and the card's warnings, each bounded.
pub fn entry(st: &IntegrationState) -> Value {
    let findings = st.lock.findings.len();
    // Only the listed findings are rendered: a thousand of them cost nothing here.
    let lock = LockState {
        findings: st.lock.findings.iter().take(MAX_LISTED).cloned().collect(),
        fallback: st.lock.fallback.clone(),
        lock: None,
        ..st.lock
    };
    let mut lock = serde_json::to_value(&lock).unwrap_or(Value::Null);
    if let Some(Value::Array(shown)) = lock.get_mut("findings") {
        more(shown, findings);
    }
    // The newest evidence is the one an operator looks for.
    let skip = st.evidence.len().saturating_sub(MAX_LISTED);
    let mut evidence = serde_json::to_value(&st.evidence[skip..]).unwrap_or(Value::Null);
    if let Value::Array(shown) = &mut evidence {
        shown.insert(0, Value::String(format!("… {skip} more (older)")));
        if skip == 0 {
            shown.remove(0);
        }
    }
    let mut probes = serde_json::to_value(st.probes.as_deref()).unwrap_or(Value::Null);
    if let Some(Value::Array(results)) = probes.get_mut("results") {
        cap(results, MAX_CLAIMS);
    }
    let mut claims = serde_json::to_value(crate::state::claims(st)).unwrap_or(Value::Null);
    if let Value::Array(c) = &mut claims {
        cap(c, MAX_CLAIMS);
    }
    // The chosen interface, as the planner view shows it (`{"binding", "version"}`); also for an
    // unusable profile, whose reason may be that interface (e.g. 0.3 before translation exists).
    let interface = st.profile().and_then(|p| p.interface.as_ref()).map_or(
        Value::Null,
        |i| json!({"binding": i.binding.as_str(), "version": i.version}),
    );
    // The card's validation warnings (already cut to `MAX_WARNINGS` by the compiler).
    let warnings = st
        .profile()
        .map_or(Vec::new(), |p| p.display.warnings.clone());
    // The content guard's policy (configuration: bounded by the config's own checks).
    let guard = (st.integration.guard.as_ref())
        .map_or(Value::Null, |g| json!(super::view::GuardView::of(g)));
    let mut v = json!({"status": st.status.as_str(), "interface": interface, "lock": lock,
        "evidence": evidence, "probes": probes, "claims": claims, "warnings": warnings,
        "guard": guard});
    bound_strings(&mut v);
    v["reason"] = st
        .status
        .reason()
        .map(|r| Value::String(bounded_report(r, MAX_REPORT_LINE_CHARS, MAX_REASON_LINES)))
        .unwrap_or(Value::Null);
    v
}

/// Cuts `list` to `max` entries, then one saying how many were left out.
fn cap(list: &mut Vec<Value>, max: usize) {
    let total = list.len();
    list.truncate(max);
    more(list, total);
}

/// Appends the "… N more" entry when `list` shows fewer than `total`.
fn more(list: &mut Vec<Value>, total: usize) {
    let left = total.saturating_sub(list.len());
    if left > 0 {
        list.push(Value::String(format!("… {left} more")));
    }
}

/// Every string of `v` as one bounded line without control characters.
fn bound_strings(v: &mut Value) {
    match v {
        Value::String(s) => *s = bounded_report(s, MAX_REPORT_LINE_CHARS, 1),
        Value::Array(a) => a.iter_mut().for_each(bound_strings),
        Value::Object(o) => o.values_mut().for_each(bound_strings),
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::SystemTime;

    use super::*;
    use crate::admin::view::tests::integration;
    use crate::lock::{Class, Finding};
    use crate::state::{Evidence, EvidenceKind, LockVerdict};

    fn has_control(v: &Value) -> bool {
        match v {
            Value::String(s) => s.chars().any(|c| c.is_control() && c != '\n'),
            Value::Array(a) => a.iter().any(has_control),
            Value::Object(o) => o.values().any(has_control),
            _ => false,
        }
    }

    #[test]
    fn a_huge_reason_and_a_thousand_findings_make_a_small_clean_entry() {
        let hostile = format!("{}\u{0}\u{1b}[31m\r\n", "x".repeat(1000)).repeat(1000);
        let mut st = IntegrationState::unusable(Arc::new(integration()), None, hostile.clone());
        let finding = |i: usize| Finding {
            class: Class::Breaking,
            field: format!("skills.s{i}.input"),
            was: "text/plain\u{7}".into(),
            now: hostile[..5000].into(),
            why: "the skill no longer accepts it".into(),
        };
        st.lock = LockState {
            verdict: LockVerdict::Breaking,
            findings: (0..1000).map(finding).collect(),
            at: SystemTime::now(),
            fallback: None,
            lock: None,
        };
        st.evidence = (0..100)
            .map(|_| Evidence {
                at: SystemTime::now(),
                kind: EvidenceKind::ArtifactSchemaMismatch,
                detail: hostile[..3000].into(),
            })
            .collect();
        let v = entry(&st);
        let text = v.to_string();
        assert!(text.len() < 16 * 1024, "{} bytes", text.len());
        assert!(!has_control(&v), "{text:.2000}");
        let findings = v["lock"]["findings"].as_array().unwrap();
        assert_eq!(findings.len(), MAX_LISTED + 1);
        assert_eq!(findings[MAX_LISTED], "… 980 more");
        let evidence = v["evidence"].as_array().unwrap();
        assert_eq!(evidence.len(), MAX_LISTED + 1);
        assert_eq!(evidence[0], "… 80 more (older)");
        assert!(v["reason"].as_str().unwrap().len() < 2048);
    }

    #[test]
    fn short_lists_are_shown_whole() {
        let st = IntegrationState::pending(Arc::new(integration()));
        let v = entry(&st);
        assert_eq!(v["lock"]["findings"], json!([]));
        assert_eq!(v["evidence"], json!([]));
        assert_eq!(v["reason"], Value::Null);
        assert_eq!(v["status"], "pending");
    }
}
