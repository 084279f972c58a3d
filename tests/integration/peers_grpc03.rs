//! A real A2A 0.3 gRPC-only peer (the official Python `a2a-sdk[grpc]` 0.3.26 `GrpcHandler`,
//! `tests/peers/sdk_agent_v03.py --transport grpc`) behind the gateway (issue 20, item 3's
//! `a2a.v1` service): its 0.3 card's only interface is `GRPC`, the effective card offers the
//! gateway's 1.0 JSON-RPC and HTTP+JSON, and every call the official 1.0 SDK clients (Python and
//! JS) make on either goes out as the 0.3 rpc (made from the 0.3 HTTP+JSON request, with the
//! types generated from the SDK's own schema), answered in 1.0; its errors, which the SDK names
//! only in the status message, keep their A2A meaning.

use serde_json::Value;

use crate::common::SdkAgent;
use crate::common::gateway::{InProcess, config_head, send_request};
use crate::common::sdk_client::{drives_tasks, js_client, sdk_client};
use a2a_egress::testkit::IntegrationToml;

/// The TOML of integration `g` over the 0.3 gRPC `agent` (its card's origin and its gRPC port's),
/// with `extra` lines, after a `[client]` that speaks gRPC and 0.3.
async fn config(agent: &SdkAgent, extra: &str) -> String {
    let card = agent.card().await;
    let grpc = card["url"].as_str().expect("the 0.3 card's url").to_owned();
    assert_eq!(card["preferredTransport"], "GRPC", "{card:#}");
    let origin = |u: &str| url::Url::parse(u).unwrap().origin().ascii_serialization();
    let head = config_head(&[])
        .replace(
            "bindings = [\"JSONRPC\", \"HTTP+JSON\"]",
            "bindings = [\"JSONRPC\", \"HTTP+JSON\", \"GRPC\"]",
        )
        .replace("versions = [\"1.0\"]", "versions = [\"1.0\", \"0.3\"]");
    head + &IntegrationToml::new("g", &agent.card_url)
        .origins(&[&origin(&agent.card_url), &origin(&grpc)])
        .extra(extra)
        .text()
}

/// Both official 1.0 SDK clients, on JSON-RPC and on HTTP+JSON, drive the 0.3 gRPC agent: a
/// message, tasks, a stream, reads, a cancel and the errors by their ErrorInfo reasons
/// (`TASK_NOT_CANCELABLE` comes from an UNIMPLEMENTED status whose message names the error).
#[tokio::test]
async fn the_1_0_sdk_clients_drive_a_0_3_grpc_agent_on_both_faces() {
    let agent = SdkAgent::start_v03(&["--transport", "grpc"]);
    let gw = InProcess::start(&config(&agent, "").await).await;
    let card = gw.effective_card("g").await;
    let offered: Vec<&str> = (card["supportedInterfaces"].as_array().unwrap().iter())
        .map(|i| i["protocolBinding"].as_str().unwrap())
        .collect();
    assert_eq!(offered, ["JSONRPC", "HTTP+JSON"], "{card:#}");
    let base = gw.agent_url("g");
    for binding in ["JSONRPC", "HTTP+JSON"] {
        for client in [sdk_client as fn(&[&str]) -> _, js_client] {
            let run = |args: &[&str]| {
                let mut all = vec!["--url", base.as_str(), "--binding", binding];
                all.extend_from_slice(args);
                client(&all)
            };
            drives_tasks(&run);
        }
    }
    let m = gw.metrics().await;
    let n = crate::common::gateway::metric(
        &m,
        "a2a_egress_upstream_duration_seconds_count",
        &[
            ("integration", "g"),
            ("protocol", "0.3"),
            ("binding", "GRPC"),
        ],
    );
    assert!(n >= 32.0, "{m}");
}

/// What 0.3 lacks is refused before anything leaves (ListTasks), a raw JSON-RPC call keeps its
/// id, and the probes speak the 0.3 service too (the version and extension claims have no
/// meaning in 0.3 and are not sent).
#[tokio::test]
async fn raw_calls_and_probes_reach_the_0_3_service() {
    let agent = SdkAgent::start_v03(&["--transport", "grpc"]);
    let text = config(&agent, "").await
        + "[integrations.probe]\nskill = \"echo\"\ntext = \"probe hello\"\n";
    let gw = InProcess::start(&text).await;
    let http = crate::common::http();
    let r = http
        .post(gw.agent_url("g"))
        .header("a2a-version", "1.0")
        .json(&send_request("id-77", "SendMessage", "task raw"))
        .send()
        .await
        .unwrap();
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["id"], "id-77", "{v:#}");
    assert_eq!(
        v["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{v:#}"
    );
    let r = http
        .get(format!("{}/tasks", gw.agent_url("g")))
        .header("a2a-version", "1.0")
        .send()
        .await
        .unwrap();
    let status = r.status();
    let v: Value = r.json().await.unwrap();
    assert_eq!(status, 400, "{v:#}");
    assert_eq!(
        v["error"]["details"][0]["reason"], "NOT_IN_AGENT_VERSION",
        "{v:#}"
    );

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("gateway.toml");
    std::fs::write(&path, &text).unwrap();
    let out = crate::common::gateway_cmd()
        .args(["probe", "g", "--config"])
        .arg(&path)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let all = format!("{stdout}{}", String::from_utf8_lossy(&out.stderr));
    assert!(
        stdout.contains("interface: ok (answered with error TASK_NOT_FOUND)"),
        "{all}"
    );
    assert!(stdout.contains("streaming: ok"), "{all}");
    assert!(stdout.contains("input:text/plain: ok"), "{all}");
}

/// A 0.3 gRPC agent's extended card is its `GetAgentCard` rpc (what the official 0.3 client
/// calls): with a credential, the proto card (security schemes as oneofs, requirements as
/// `schemes` maps) becomes the 0.3 JSON card, is validated strictly and compiled for that
/// credential, so its extra skill is in the profile; without one the public card is all there is.
#[tokio::test]
async fn the_extended_card_of_a_0_3_grpc_agent_is_its_get_agent_card_rpc() {
    use std::os::unix::fs::PermissionsExt;
    const TOKEN: &str = "grpc03-admin-token-0123456789abcdef";
    let agent = SdkAgent::start_v03(&["--transport", "grpc", "--extended"]);
    let view = |extra: &'static str| {
        let agent = &agent;
        async move {
            let dir = tempfile::tempdir().unwrap();
            for (name, text) in [("admin.token", TOKEN), ("partner.token", "partner-secret")] {
                let path = dir.path().join(name);
                std::fs::write(&path, format!("{text}\n")).unwrap();
                std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
            }
            let text = format!(
                "{}\n[admin]\ntoken_file = \"admin.token\"\n",
                config(agent, extra).await
            );
            let gw = InProcess::start_in(dir, &text).await;
            let r = crate::common::http()
                .get(gw.admin_url("/v1/integrations/g"))
                .bearer_auth(TOKEN)
                .send()
                .await
                .unwrap();
            r.json::<Value>().await.unwrap()
        }
    };
    let v = view("credential = { type = \"bearer\", file = \"partner.token\" }").await;
    assert_eq!(v["usable"], true, "{v:#}");
    // The card the SDK's proto carried (with its two security schemes and the skill's
    // requirement) passed the strict 0.3 schema, or its skill would not be here.
    let skills = |v: &Value| v["untrusted"]["other_skills"].clone();
    assert_eq!(skills(&v), serde_json::json!(["secret"]), "{v:#}");
    let v = view("").await;
    assert_eq!(v["usable"], true, "{v:#}");
    assert_eq!(skills(&v), serde_json::json!([]), "{v:#}");
}
