//! A real A2A 0.3 peer (the official Python `a2a-sdk` 0.3.26, `tests/peers/sdk_agent_v03.py`)
//! behind the gateway: its card is fetched, checked against the pinned 0.3 schema and compiled
//! (issue 20, item 1). Until 0.3 translation exists no call may reach it: the integration is
//! unusable with the translation reason, and the pins and the tenant rule say why first.

use std::os::unix::fs::PermissionsExt;

use serde_json::{Value, json};

use crate::common::SdkAgent;
use crate::common::gateway::{InProcess, config_head, integration, send_request};

const TOKEN: &str = "v03-admin-token-0123456789abcdef";

/// A gateway over `agent` with `[client]` as `client` (the test head's lines replaced) and the
/// admin token set, one integration per `(name, extra TOML lines)`.
async fn gateway(
    agent: &SdkAgent,
    client: Option<(&str, &str)>,
    ints: &[(&str, &str)],
) -> InProcess {
    let dir = tempfile::tempdir().unwrap();
    let token = dir.path().join("admin.token");
    std::fs::write(&token, format!("{TOKEN}\n")).unwrap();
    std::fs::set_permissions(&token, std::fs::Permissions::from_mode(0o600)).unwrap();
    let mut config = config_head(&[]);
    if let Some((bindings, versions)) = client {
        config = config
            .replace(
                "bindings = [\"JSONRPC\", \"HTTP+JSON\"]",
                &format!("bindings = {bindings}"),
            )
            .replace("versions = [\"1.0\"]", &format!("versions = {versions}"));
    }
    config += "[admin]\ntoken_file = \"admin.token\"\n";
    for (name, extra) in ints {
        config += &integration(name, &agent.card_url, extra);
    }
    InProcess::start_in(dir, &config).await
}

async fn view(gw: &InProcess, name: &str) -> Value {
    let r = crate::common::http()
        .get(gw.admin_url(&format!("/v1/integrations/{name}")))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    r.json().await.unwrap()
}

#[tokio::test]
async fn a_03_sdk_agent_compiles_with_its_binding_and_is_not_called_until_translation_exists() {
    let agent = SdkAgent::start_v03(&["--both"]);
    let gw = gateway(
        &agent,
        Some((
            "[\"JSONRPC\", \"HTTP+JSON\", \"GRPC\"]",
            "[\"1.0\", \"0.3\"]",
        )),
        &[
            ("v03", ""),
            ("pin10", "version = \"1.0\""),
            ("pin03", "version = \"0.3\"\nbinding = \"JSONRPC\""),
            ("tenant", "tenant = \"t1\""),
        ],
    )
    .await;
    let ready = gw.readyz().await;
    let entry = |n: &str| ready["integrations"][n].clone();
    // Compiled: the chosen interface is the card's `url` + `preferredTransport`, at 0.3.
    let v03 = entry("v03");
    assert_eq!(v03["status"], "unusable", "{v03}");
    assert_eq!(
        v03["interface"],
        json!({"binding": "JSONRPC", "version": "0.3"}),
        "{v03}"
    );
    let reason = v03["reason"].as_str().unwrap();
    assert!(
        reason.contains("JSONRPC 0.3") && reason.contains("translation, which is not built yet"),
        "{reason}"
    );
    // The pins that match still wait for translation; the one that does not says so.
    assert!(
        entry("pin03")["reason"]
            .as_str()
            .unwrap()
            .contains("not built yet")
    );
    assert_eq!(
        entry("pin10")["reason"],
        "protocol version pinned to 1.0 but the profile chose 0.3"
    );
    assert!(
        entry("tenant")["reason"]
            .as_str()
            .unwrap()
            .contains("0.3, which has no tenant"),
        "{}",
        entry("tenant")
    );
    // The planner view shows the same interface.
    let v = view(&gw, "v03").await;
    assert_eq!(
        v["interface"],
        json!({"binding": "JSONRPC", "version": "0.3"}),
        "{v}"
    );
    assert_eq!(v["usable"], false, "{v}");
    // No call leaves: the data plane refuses before any upstream is chosen.
    let (status, body) = gw
        .rpc("v03", &send_request("r1", "SendMessage", "hi"), &[])
        .await;
    // A JSON-RPC refusal is HTTP 200 with the error in the body.
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["error"]["data"][0]["reason"], "NO_USABLE_PROFILE",
        "{body}"
    );
}

#[tokio::test]
async fn with_the_default_client_a_03_agent_is_recorded_but_never_chosen() {
    let agent = SdkAgent::start_v03(&["--transport", "rest", "--both"]);
    let gw = gateway(&agent, None, &[("v03", "")]).await;
    let ready = gw.readyz().await;
    let e = &ready["integrations"]["v03"];
    assert_eq!(e["status"], "unusable", "{e}");
    assert_eq!(e["interface"], Value::Null, "{e}");
    assert_eq!(
        e["reason"], "no mutually supported interface (card offers HTTP+JSON 0.3, JSONRPC 0.3)",
        "{e}"
    );
}
