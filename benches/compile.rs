//! Criterion bench: validate + compile + digest of a ~50 KB Agent Card, beside a bare
//! `serde_json::from_slice::<Value>` of the same bytes (goal: compile + digest at most 4× the
//! bare parse). `validate_compile_digest` is the whole path from bytes (strict parse with
//! duplicate-key detection, every rule, the a2a-lf typed parse, the JCS digest, compile);
//! `compile_and_digest` is the goal's literal terms; the `*_only` rows show where time goes.
//!
//! The card is generated deterministically (no randomness): many skills with tags, examples,
//! their own modes and security requirements, so every rule of the validator and compiler runs.
//!
//! `config/validate_100k_integrations` is what `a2a-egress validate --config` and a reload do
//! with a 100,000-integration file: read it (through the bounded reader), parse and validate it
//! (goal: well under a second; every check is linear).
//!
//! The bench runs on the gateway binary's allocator (mimalloc, `src/main.rs`), so its rows are
//! what the binary pays: on glibc malloc, freeing the 100,000 parsed tables and TOML tokens was a
//! third of the config row (`malloc_consolidate`), a cost `a2a-egress` never has.
use std::hint::black_box;

use a2a_egress::card;
use a2a_egress::card::CardPolicy;
use a2a_egress::profile::{self, ClientCaps};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use serde_json::{Value, json};

#[cfg(feature = "mimalloc")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// A card of at least `target` bytes of compact JSON.
fn card_of(target: usize) -> Vec<u8> {
    let mut card = json!({
        "name": "Bench Agent",
        "description": "A generated card for the compile benchmark. ".repeat(4),
        "version": "1.2.3",
        "supportedInterfaces": [
            {"url": "https://bench.example:50051", "protocolBinding": "GRPC", "protocolVersion": "1.0"},
            {"url": "https://bench.example/a2a", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
            {"url": "https://bench.example/rest", "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0", "tenant": "t1"}
        ],
        "provider": {"url": "https://bench.example", "organization": "Bench Inc."},
        "capabilities": {"streaming": true, "pushNotifications": false, "extensions": [
            {"uri": "https://example.com/ext/cost-estimate/v1", "required": false},
            {"uri": "https://example.com/ext/trace/v1", "required": true}
        ]},
        "securitySchemes": {
            "oauth": {"oauth2SecurityScheme": {"flows": {"clientCredentials": {
                "tokenUrl": "https://auth.bench.example/token",
                "scopes": {"read": "read things", "write": "write things"}}}}},
            "key": {"apiKeySecurityScheme": {"location": "header", "name": "X-API-Key"}}
        },
        "securityRequirements": [{"schemes": {"oauth": {"list": ["read"]}}}],
        "defaultInputModes": ["text/plain", "application/json"],
        "defaultOutputModes": ["application/json"],
        "skills": []
    });
    let mut i = 0;
    while serde_json::to_vec(&card).unwrap().len() < target {
        let mut skill = json!({
            "id": format!("skill-{i:04}"),
            "name": format!("Skill number {i}"),
            "description": format!("Does task {i} for the benchmark; handles inputs and outputs of several kinds."),
            "tags": ["bench", format!("group-{}", i % 7), "generated"],
            "examples": [format!("Run task {i} on the sample input"), "Another example request"],
        });
        if i % 2 == 0 {
            skill["inputModes"] = json!(["application/pdf", "image/png"]);
        }
        if i % 3 == 0 {
            skill["securityRequirements"] = json!([{"schemes": {"key": {}}}, {"schemes": {"oauth": {"list": ["read", "write"]}}}]);
        }
        card["skills"].as_array_mut().unwrap().push(skill);
        i += 1;
    }
    serde_json::to_vec(&card).unwrap()
}

fn bench(c: &mut Criterion) {
    let bytes = card_of(50 * 1024);
    let policy = CardPolicy::default();
    let caps = ClientCaps {
        extensions: vec!["https://example.com/ext/trace/v1".into()],
        ..ClientCaps::default()
    };
    // Sanity: the generated card is valid and usable, so the bench measures the full path.
    let v = card::validate(&bytes, &policy, None).expect("bench card must be valid");
    assert!(profile::compile(&v, &caps).is_usable());

    let mut g = c.benchmark_group("card_50k");
    g.throughput(Throughput::Bytes(bytes.len() as u64));
    g.bench_function("serde_json_from_slice_value", |b| {
        b.iter(|| serde_json::from_slice::<Value>(black_box(&bytes)).unwrap())
    });
    g.bench_function("validate_compile_digest", |b| {
        b.iter(|| {
            let v = card::validate(black_box(&bytes), &policy, None).unwrap();
            profile::compile(&v, &caps)
        })
    });
    // The goal's literal terms: compile + digest of an already parsed, validated card.
    let value: Value = serde_json::from_slice(&bytes).unwrap();
    g.bench_function("compile_and_digest", |b| {
        b.iter(|| {
            let d = card::canonical::digest(black_box(&value)).unwrap();
            (d, profile::compile(black_box(&v), &caps))
        })
    });
    // The parts, to see where the time goes.
    g.bench_function("validate_only", |b| {
        b.iter(|| card::validate(black_box(&bytes), &policy, None).unwrap())
    });
    g.bench_function("compile_only", |b| {
        b.iter(|| profile::compile(black_box(&v), &caps))
    });
    let value: Value = serde_json::from_slice(&bytes).unwrap();
    g.bench_function("digest_only", |b| {
        b.iter(|| card::canonical::digest(black_box(&value)).unwrap())
    });
    g.finish();
}

/// A config of `n` integrations, each as the README's example writes one.
fn config_of(n: usize) -> String {
    let mut t = String::from(
        "[listen]\nproxy = \"127.0.0.1:0\"\nadmin = \"127.0.0.1:0\"\n\
         [client]\nbindings = [\"JSONRPC\", \"HTTP+JSON\"]\nversions = [\"1.0\"]\n",
    );
    for i in 0..n {
        t.push_str(&format!(
            "[[integrations]]\nname = \"agent-{i}\"\n\
             card = \"https://agent-{i}.example/.well-known/agent-card.json\"\n\
             origins = [\"https://agent-{i}.example\"]\nskills = [\"echo\", \"summarize\"]\n\
             data_classes = [\"public\", \"internal\"]\n"
        ));
    }
    t
}

fn bench_config(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("gateway.toml");
    let text = config_of(100_000);
    std::fs::write(&path, &text).unwrap();
    let loaded = a2a_egress::config::Config::load(&path).expect("bench config must be valid");
    assert_eq!(loaded.integrations.len(), 100_000);
    let mut g = c.benchmark_group("config");
    g.sample_size(10);
    g.throughput(Throughput::Bytes(text.len() as u64));
    g.bench_function("validate_100k_integrations", |b| {
        b.iter(|| a2a_egress::config::Config::load(black_box(&path)).unwrap())
    });
    g.finish();
}

criterion_group!(benches, bench, bench_config);
criterion_main!(benches);
