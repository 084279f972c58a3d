//! Criterion bench of the content guard (pure, no I/O):
//!
//! - `guard/matcher/{1k,64k}`: the policy's matcher alone (one multi-pattern regex pass,
//!   validators, base64 runs) over realistic text, in bytes per second, beside
//!   `guard/memchr/{1k,64k}`, a plain `memchr` pass over the same bytes (the floor of any scan);
//! - `guard/scan_request/{1k,64k}`: the whole request scan of a JSON-RPC SendMessage of that size
//!   with every built-in detector on (walk, normalisation, matching, verdict).
//!
//! One group named `guard`, so benches/bench.py finds the figures as `guard/<what>/<size>` beside
//! the other benches' and turns them into MB/s (each declares its bytes).
use std::collections::BTreeMap;
use std::hint::black_box;

use a2a_egress::guard::{self, Action, Detectors, OnUnscanned, Policy, Shape};
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};

/// Prose with ids, numbers, a UUID, an e-mail-like handle and JSON-ish punctuation, none a finding.
const PROSE: &str = "Please summarise the quarterly report for account 7731-A and compare it with \
    the forecast in ticket 550e8400-e29b-41d4-a716-446655440000; the owner is ops-team at the \
    Berlin office (room 4.12), revenue grew 12.5% to 1,204,330 EUR, see section 3.2 \"Outlook\". ";

fn text_of(len: usize) -> String {
    let mut s = String::with_capacity(len + PROSE.len());
    while s.len() < len {
        s.push_str(PROSE);
    }
    s.truncate(len);
    s
}

fn send(len: usize) -> String {
    let t = serde_json::to_string(&text_of(len.saturating_sub(160))).unwrap_or_default();
    format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{{"message":{{"messageId":"m-1","role":"ROLE_USER","parts":[{{"text":{t}}}],"metadata":{{"trace":"abc"}}}}}}}}"#
    )
}

fn bench(c: &mut Criterion) {
    let all = Detectors::compile(Vec::new()).expect("built-ins");
    let names: Vec<String> = guard::BUILTIN_NAMES
        .iter()
        .map(|n| (*n).to_owned())
        .collect();
    let policy = Policy::new(
        &all,
        &names,
        Action::Redact,
        &BTreeMap::new(),
        None,
        1 << 20,
        OnUnscanned::Refuse,
    )
    .expect("policy");
    let mut g = c.benchmark_group("guard");
    for (label, len) in [("1k", 1024), ("64k", 64 * 1024)] {
        let text = text_of(len);
        let body = send(len);
        g.throughput(Throughput::Bytes(len as u64));
        g.bench_function(BenchmarkId::new("matcher", label), |b| {
            b.iter(|| guard::bench_matcher(&policy, black_box(&text)))
        });
        g.bench_function(BenchmarkId::new("memchr", label), |b| {
            b.iter(|| memchr::memchr_iter(b'@', black_box(text.as_bytes())).count())
        });
        g.throughput(Throughput::Bytes(body.len() as u64));
        g.bench_function(BenchmarkId::new("scan_request", label), |b| {
            b.iter(|| {
                guard::scan_request(&all, &policy, black_box(&body), Shape::JsonRpc)
                    .findings
                    .len()
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
