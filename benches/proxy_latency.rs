//! Added latency of the gateway: the same JSON-RPC `SendMessage` to the bundled reference agent,
//! sent directly and through `a2a-egress serve`, side by side in one run (spawns the agent's
//! binary, `a2a-agent`, and the gateway's on loopback port-0 listeners; process and network I/O;
//! the agent's binary is found, and built, as the integration tests find it).
//!
//! `cargo bench --bench proxy_latency`. The interesting number is the difference (and ratio) of the
//! two means: policy, shaping and one extra loopback hop. Both use one keep-alive HTTP/1.1 client.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};

#[path = "../tests/integration/common/agent_bin.rs"]
mod agent_bin;

struct Proc(Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Spawns `cmd`, returns it with its first stdout line parsed as JSON.
fn spawn(mut cmd: Command) -> (Proc, serde_json::Value) {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let mut child = cmd.spawn().expect("spawn");
    let out = child.stdout.take().expect("stdout");
    let mut line = String::new();
    BufReader::new(out)
        .read_line(&mut line)
        .expect("first line");
    (
        Proc(child),
        serde_json::from_str(&line).expect("first line is JSON"),
    )
}

fn body(id: u64) -> String {
    serde_json::json!({"jsonrpc": "2.0", "id": id, "method": "SendMessage", "params": {"message": {
        "messageId": format!("m{id}"), "role": "ROLE_USER", "parts": [{"text": "echo bench"}]}}})
    .to_string()
}

fn bench(c: &mut Criterion) {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let bin = env!("CARGO_BIN_EXE_a2a-egress");
    let root = env!("CARGO_MANIFEST_DIR");
    let mut agent_cmd = Command::new(agent_bin::agent_bin());
    agent_cmd
        .args(["--listen", "127.0.0.1:0", "--registry"])
        .arg(format!("{root}/config/agent/registry.toml"));
    let (_agent, first) = spawn(agent_cmd);
    let card_url = first["card_url"].as_str().expect("card_url").to_owned();
    let addr = first["addr"].as_str().expect("addr").to_owned();

    let dir = tempfile::tempdir().expect("temp dir");
    let config = format!(
        "[listen]\nproxy = \"127.0.0.1:0\"\nadmin = \"127.0.0.1:0\"\n[client]\nallow_plain_http = true\n\
         [[integrations]]\nname = \"finance\"\ncard = \"{card_url}\"\norigins = [\"http://{addr}\"]\n\
         skills = [\"echo\"]\ndata_classes = [\"internal\"]\n"
    );
    let path = dir.path().join("gateway.toml");
    std::fs::write(&path, config).expect("config");
    let mut gw_cmd = Command::new(bin);
    gw_cmd
        .arg("serve")
        .arg("--config")
        .arg(&path)
        .env("RUST_LOG", "warn");
    let (_gw, gfirst) = spawn(gw_cmd);
    let proxy = gfirst["proxy"].as_str().expect("proxy").to_owned();
    let admin = gfirst["admin"].as_str().expect("admin").to_owned();

    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let client = reqwest::Client::builder()
        .no_proxy()
        .pool_max_idle_per_host(1)
        .build()
        .expect("client");
    rt.block_on(async {
        for _ in 0..200 {
            if let Ok(r) = client.get(format!("http://{admin}/readyz")).send().await
                && r.status().is_success()
            {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("gateway not ready");
    });
    let direct = format!("http://{addr}/a2a/jsonrpc");
    let via = format!("http://{proxy}/agents/finance");
    let call = |url: &str, id: u64| {
        let req = client
            .post(url)
            .header("content-type", "application/json")
            .header("a2a-version", "1.0")
            .body(body(id));
        rt.block_on(async {
            let r = req.send().await.expect("call");
            assert!(r.status().is_success());
            let b = r.bytes().await.expect("body");
            assert!(b.windows(8).any(|w| w == b"\"result\""), "{b:?}");
        })
    };
    // Warm both connections before measuring.
    for i in 0..50 {
        call(&direct, i);
        call(&via, i);
    }
    let mut g = c.benchmark_group("send_message");
    g.measurement_time(Duration::from_secs(8));
    let mut id = 1000;
    g.bench_function("direct", |b| {
        b.iter(|| {
            id += 1;
            call(&direct, id)
        })
    });
    g.bench_function("via_gateway", |b| {
        b.iter(|| {
            id += 1;
            call(&via, id)
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
