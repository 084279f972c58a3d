//! Criterion bench of the reference agent's per-request pure work on the sample registry: strict
//! parsing of SendMessage params, routing through the classifier, and generating the public and
//! an extended card (done per GetExtendedAgentCard call).
use std::collections::HashMap;
use std::hint::black_box;
use std::path::Path;

use a2a_agent::registry::{self, Secrets};
use a2a_agent::router::{RouteRequest, route};
use a2a_agent::{params, project};
use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;

struct Demo(HashMap<&'static str, &'static str>);

impl Secrets for Demo {
    fn env(&self, name: &str) -> Option<String> {
        self.0.get(name).map(|s| s.to_string())
    }
    fn file(&self, path: &Path) -> std::io::Result<String> {
        Err(std::io::Error::new(
            std::io::ErrorKind::NotFound,
            path.display().to_string(),
        ))
    }
}

fn bench(c: &mut Criterion) {
    let text = include_str!("../../config/agent/registry.toml");
    let secrets = Demo(HashMap::from([
        ("A2A_AGENT_TOKEN_PARTNER", "partner-demo-token"),
        ("A2A_AGENT_TOKEN_VIEWER", "viewer-demo-token"),
        ("A2A_AGENT_TOKEN_OTHER", "other-demo-token"),
    ]));
    let reg = registry::parse(text, Path::new("."), &secrets).expect("sample registry");
    let partner = reg
        .principals
        .authenticate("partner-demo-token")
        .unwrap()
        .clone();
    let base = "http://127.0.0.1:7400";

    let params = json!({"message": {"messageId": "m1", "role": "ROLE_USER",
        "parts": [{"text": "Reconcile invoice INV-20931 against its PO."}]},
        "configuration": {"acceptedOutputModes": ["application/json"]}});
    c.bench_function("agent/parse_send_message", |b| {
        b.iter(|| params::send_message(black_box(&params)).unwrap())
    });

    let req = RouteRequest {
        media_types: vec!["text/plain".into()],
        text: "Reconcile invoice INV-20931 against its PO.".into(),
        hint: None,
        accepted_output_modes: vec![],
    };
    c.bench_function("agent/route_classifier_partner", |b| {
        b.iter(|| route(black_box(&reg), Some(&partner), black_box(&req), None).unwrap())
    });
    c.bench_function("agent/public_card", |b| {
        b.iter(|| project::public_card(black_box(&reg), base).unwrap())
    });
    c.bench_function("agent/extended_card_partner", |b| {
        b.iter(|| project::extended_card(black_box(&reg), base, &partner).unwrap())
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
