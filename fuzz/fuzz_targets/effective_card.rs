//! Card bytes (seeded with valid cards, which the fuzzer mutates) → validate → compile → an
//! integration's state → the effective card the gateway publishes at
//! `/agents/{name}/.well-known/agent-card.json`, with and without the refused-stream override.
//!
//! Invariant beyond "no panic": the effective card is itself a card this gateway's strict
//! validator accepts (A2A 1.0, plain http allowed for the gateway's own loopback URL), its
//! display strings are clean, and its one interface points at the gateway.
#![no_main]

use std::path::Path;
use std::sync::{Arc, OnceLock};

use a2a_egress::card;
use a2a_egress::config::{Config, StreamingMode};
use a2a_egress::proxy::card::effective_card;
use a2a_egress::state::IntegrationState;
use a2a_egress::state::Upstream;
use a2a_egress_fuzz::{check_errors, check_profile, is_control_or_bidi};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

const CONFIG: &str = r#"
[client]
bindings = ["JSONRPC", "HTTP+JSON"]
versions = ["1.0"]
extensions = ["https://example.com/ext/trace/v1", "https://example.com/ext/cost-estimate/v1"]
allow_plain_http = true

[[integrations]]
name = "fz"
card = "https://a.example/.well-known/agent-card.json"
origins = ["https://a.example"]
skills = ["echo"]
data_classes = ["internal"]
streaming = "preferred"
extensions = ["https://example.com/ext/trace/v1"]
credential = { type = "none" }
"#;

const PUBLIC_URL: &str = "http://127.0.0.1:7411";

fn config() -> &'static Config {
    static C: OnceLock<Config> = OnceLock::new();
    C.get_or_init(|| Config::parse(CONFIG, Path::new("/nonexistent/gateway.toml")).expect("config"))
}

fn check_effective(body: &[u8], name: &str) {
    let cfg = config();
    let v = match card::validate(body, &cfg.card_policy, None) {
        Ok(v) => v,
        Err(e) => {
            check_errors(e.iter());
            panic!("the effective card is not a valid card: {e}");
        }
    };
    let j = v.json();
    assert_eq!(
        j.pointer("/supportedInterfaces/0/url")
            .and_then(Value::as_str),
        Some(format!("{PUBLIC_URL}/agents/{name}").as_str())
    );
    assert!(j.get("signatures").is_none() && j.get("securitySchemes").is_none());
    for (_, s) in strings(j) {
        assert!(
            !s.chars().any(is_control_or_bidi),
            "effective card string {s:?}"
        );
    }
}

fn strings(v: &Value) -> Vec<(String, &str)> {
    let mut out = Vec::new();
    let mut stack = vec![(String::new(), v)];
    while let Some((at, v)) = stack.pop() {
        match v {
            Value::String(s) => out.push((at, s.as_str())),
            Value::Array(a) => {
                stack.extend(a.iter().enumerate().map(|(i, c)| (format!("{at}[{i}]"), c)))
            }
            Value::Object(m) => stack.extend(m.iter().map(|(k, c)| (format!("{at}.{k}"), c))),
            _ => {}
        }
    }
    out
}

fuzz_target!(|data: &[u8]| {
    let cfg = config();
    let Ok(v) = card::validate(data, &cfg.card_policy, None) else {
        return;
    };
    let profile = a2a_egress::profile::compile(&v, &cfg.caps);
    check_profile(&v, &profile);
    let Some(iface) = profile.interface.clone() else {
        return;
    };
    let Ok(url) = url::Url::parse(&iface.url) else {
        panic!("a compiled interface URL does not parse: {:?}", iface.url);
    };
    // The knobs come from the length, so every mutation of a seed still is the card it was.
    let knob = data.len();
    let mut integration = cfg.integrations[0].clone();
    integration.origins = vec![url.origin().ascii_serialization()];
    integration.skills = profile
        .skills
        .keys()
        .enumerate()
        .filter(|(i, _)| knob % 3 != 0 || i % 2 == 0)
        .map(|(_, id)| id.clone())
        .collect();
    integration.tenant = (knob % 5 == 0).then(|| "acme".to_string());
    integration.streaming = [
        StreamingMode::Preferred,
        StreamingMode::Required,
        StreamingMode::Off,
    ][knob % 3];
    let name = integration.name.clone();
    let mut state = IntegrationState::from_profile(
        Arc::new(integration),
        profile,
        Ok(Upstream::for_tests(&iface.url)),
    );
    for streaming_off in [false, true] {
        state.overrides.streaming_off = streaming_off;
        if let Some(c) = effective_card(&state, PUBLIC_URL) {
            assert!(c.etag.starts_with("W/\"") && c.etag.ends_with('"'));
            check_effective(&c.body, &name);
        }
    }
});
