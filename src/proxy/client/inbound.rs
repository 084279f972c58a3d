//! The content guard on answers (`[guard] inbound = "record"`): the integration's detectors run
//! on each whole answer and each stream event the caller gets, and what they find is counted and
//! logged (detector and JSON path, never the text). Answers are never changed or refused here:
//! this is an egress boundary, and the evidence is what partners send back (no I/O of its own).

use crate::config::{Inbound, IntegrationGuard};
use crate::guard::{self, Shape};
use crate::profile::Binding;
use crate::proxy::call::Gateway;

/// The guard that scans this integration's answers, when `inbound = "record"`.
pub(super) fn guard_of(g: Option<&IntegrationGuard>) -> Option<&IntegrationGuard> {
    g.filter(|g| g.inbound == Inbound::Record)
}

/// Scans `body` (the 1.0 answer or event data the caller gets: a JSON-RPC response or an
/// HTTP+JSON body) and records its findings under `integration`.
pub(super) fn record(
    gw: &Gateway,
    integration: &str,
    g: &IntegrationGuard,
    binding: Binding,
    body: &[u8],
) {
    // Answers that are not UTF-8 JSON were refused before this point; nothing to scan otherwise.
    let Ok(text) = std::str::from_utf8(body) else {
        return;
    };
    let shape = match binding {
        Binding::JsonRpc => Shape::JsonRpc,
        Binding::HttpJson | Binding::Grpc => Shape::Rest,
    };
    let findings = guard::scan_answer(g.all(), g.policy(), text, shape);
    // The budget's pseudo-finding says only that the rest was not read: not evidence.
    let evidence = findings.iter().filter(|f| f.detector != guard::UNSCANNED);
    for (n, f) in evidence.enumerate() {
        gw.metrics
            .guard_inbound_findings
            .with_label_values(&[integration, &f.detector])
            .inc();
        if n == guard::LOGGED_FINDINGS {
            tracing::info!(
                integration,
                "more content guard findings in the agent's answer are counted, not logged"
            );
        }
        if n >= guard::LOGGED_FINDINGS {
            continue;
        }
        tracing::info!(
            integration,
            detector = f.detector.as_str(),
            class = f.class.as_str(),
            path = f.path.as_str(),
            "content guard finding in the agent's answer"
        );
    }
}
