//! `a2a-egress guard test FILE --integration NAME [--config F]` run as the real binary, as a team
//! runs it in CI: the exit code says allow (0), redact (3) or refuse (4); the JSON report names
//! detectors and paths but never the matched text; a custom `words_file` detector is read beside
//! the config; bad input has its own codes (64 config or integration, 65 body, 66 missing file).

use std::path::Path;
use std::process::Output;

use serde_json::{Value, json};

use crate::common::gateway_cmd;

const CONFIG: &str = r#"
[[detectors]]
name = "customer_ids"
words_file = "customers.txt"
class = "confidential"

[[integrations]]
name = "finance"
card = "https://finance.example/.well-known/agent-card.json"
origins = ["https://finance.example"]
skills = ["echo"]
data_classes = ["internal", "pii"]
guard = { detectors = ["pci", "email", "customer_ids"], action = "refuse", actions = { pii = "record", pci = "redact" } }

[[integrations]]
name = "plain"
card = "https://plain.example/.well-known/agent-card.json"
origins = ["https://plain.example"]
skills = ["echo"]
data_classes = ["internal"]
"#;

fn dir() -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("gateway.toml"), CONFIG).unwrap();
    std::fs::write(d.path().join("customers.txt"), "# ids\nACME-0042\n").unwrap();
    d
}

fn send(text: &str) -> String {
    json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message":
        {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": text}]}}})
    .to_string()
}

fn run(dir: &Path, body: &str, integration: &str) -> Output {
    std::fs::write(dir.join("body.json"), body).unwrap();
    gateway_cmd()
        .args(["guard", "test", "body.json", "--integration", integration])
        .args(["--config", "gateway.toml"])
        .current_dir(dir)
        .env_remove("RUST_LOG")
        .output()
        .unwrap()
}

fn report(o: &Output) -> Value {
    serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&o.stdout)))
}

#[test]
fn exit_codes_say_allow_redact_and_refuse_and_reports_never_hold_the_match() {
    let d = dir();
    let p = d.path();

    let o = run(p, &send("hello, write to ann@example.com"), "finance");
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    let r = report(&o);
    assert_eq!(r["decision"], "allow");
    assert_eq!(
        r["findings"],
        json!([{"detector": "email", "class": "pii", "action": "record",
            "path": "params.message.parts[0].text"}])
    );

    let o = run(p, &send("card 4111-1111-1111-1111"), "finance");
    assert_eq!(o.status.code(), Some(3), "{o:?}");
    let r = report(&o);
    assert_eq!(r["decision"], "redact");
    let redacted: Value = serde_json::from_str(r["redacted_body"].as_str().unwrap()).unwrap();
    assert_eq!(
        redacted["params"]["message"]["parts"][0]["text"],
        "card [REDACTED:pci]"
    );

    // The custom word list, matched whatever the case.
    let o = run(p, &send("order for acme-0042"), "finance");
    assert_eq!(o.status.code(), Some(4), "{o:?}");
    let r = report(&o);
    assert_eq!(r["decision"], "refuse");
    let info = &r["refusal"]["error"]["details"][0];
    assert_eq!(info["reason"], "DATA_DETECTED", "{r}");
    assert_eq!(info["metadata"]["detector"], "customer_ids", "{r}");
    let out = String::from_utf8_lossy(&o.stdout).to_lowercase();
    assert!(!out.contains("acme-0042"), "{out}");
}

#[test]
fn bad_input_has_its_own_exit_codes() {
    let d = dir();
    let p = d.path();
    // No such integration, or one without a guard: 64.
    assert_eq!(run(p, &send("x"), "nope").status.code(), Some(64));
    let o = run(p, &send("x"), "plain");
    assert_eq!(o.status.code(), Some(64));
    assert!(String::from_utf8_lossy(&o.stderr).contains("has no guard"));
    // Not a request the gateway would scan: 65, saying why.
    let o = run(p, "{\"message\": ", "finance");
    assert_eq!(o.status.code(), Some(65), "{o:?}");
    let dup = r#"{"message":{"messageId":"m","messageId":"n","role":"ROLE_USER","parts":[]}}"#;
    let o = run(p, dup, "finance");
    assert_eq!(o.status.code(), Some(65), "{o:?}");
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("duplicate"),
        "{o:?}"
    );
    // Over the integration's body cap (1 MiB by default): 65, before anything is scanned.
    let o = run(p, &send(&"a".repeat(1 << 20)), "finance");
    assert_eq!(o.status.code(), Some(65), "{o:?}");
    assert!(String::from_utf8_lossy(&o.stderr).contains("BODY_TOO_LARGE"));
    // A missing body file, or config: 66.
    let o = gateway_cmd()
        .args([
            "guard",
            "test",
            "absent.json",
            "-i",
            "finance",
            "-c",
            "gateway.toml",
        ])
        .current_dir(p)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(66), "{o:?}");
    let o = gateway_cmd()
        .args([
            "guard",
            "test",
            "body.json",
            "-i",
            "finance",
            "-c",
            "absent.toml",
        ])
        .current_dir(p)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(66), "{o:?}");
}
