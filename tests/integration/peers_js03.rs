//! A real A2A 0.3 peer from the official JS SDK (`@a2a-js/sdk` 0.3.14, `tests/peers/js03/agent.mjs`)
//! behind the gateway: its card — the SDK's 0.3 shape, both bindings — is fetched, checked against
//! the pinned 0.3 schema and compiled (issue 20), with the chosen interface recorded as
//! `{"binding", "version": "0.3"}` in `/readyz` and the planner view, whichever binding the card
//! prefers.

use a2a_egress::card::CardPolicy;
use a2a_egress::profile::{self, ClientCaps};
use serde_json::{Value, json};

use crate::common::SdkAgent;
use crate::common::gateway::{InProcess, config_head, integration, write_secret};

const TOKEN: &str = "js03-admin-token-0123456789abcdef";

/// A gateway with one integration `js03` over `agent`; `[client] versions` gains "0.3" when
/// `with_03`.
async fn gateway(agent: &SdkAgent, with_03: bool) -> InProcess {
    let dir = tempfile::tempdir().unwrap();
    write_secret(dir.path(), "admin.token", TOKEN);
    let mut config = config_head(&[]);
    if with_03 {
        config = config.replace("versions = [\"1.0\"]", "versions = [\"1.0\", \"0.3\"]");
    }
    config += "[admin]\ntoken_file = \"admin.token\"\n";
    config += &integration("js03", &agent.card_url, "");
    InProcess::start_in(dir, &config).await
}

async fn planner_view(gw: &InProcess) -> Value {
    gw.admin_json("/v1/integrations/js03", TOKEN).await
}

/// The card the JS SDK serves for `--transport <transport>` compiles at 0.3 with `binding` chosen.
async fn compiles_with(transport: &str, binding: &str) {
    let agent = SdkAgent::start_js03(&["--transport", transport]);
    let card = agent.card().await;
    // The SDK's own 0.3 card, as served: no 1.0 interface list.
    assert_eq!(card["protocolVersion"], "0.3.0", "{card}");
    assert_eq!(card["preferredTransport"], binding, "{card}");
    assert!(card.get("supportedInterfaces").is_none(), "{card}");
    // Compiled directly: both bindings recorded at 0.3, in the card's order, the preferred chosen.
    let policy = CardPolicy {
        allow_plain_http: true,
        ..CardPolicy::default()
    };
    let v = a2a_egress::card::validate(card.to_string().as_bytes(), &policy, None)
        .unwrap_or_else(|e| panic!("{e}"));
    let caps = ClientCaps {
        versions: vec!["1.0".into(), "0.3".into()],
        ..ClientCaps::default()
    };
    let p = profile::compile(&v, &caps);
    let other = if binding == "JSONRPC" {
        "HTTP+JSON"
    } else {
        "JSONRPC"
    };
    let got: Vec<(&str, &str, bool)> = p
        .interfaces
        .iter()
        .map(|i| (i.binding.as_str(), i.version.as_str(), i.chosen))
        .collect();
    assert_eq!(got, [(binding, "0.3", true), (other, "0.3", false)]);
    let gw = gateway(&agent, true).await;
    let ready = gw.readyz().await;
    let e = &ready["integrations"]["js03"];
    assert_eq!(
        e["interface"],
        json!({"binding": binding, "version": "0.3"}),
        "{e}"
    );
    let v = planner_view(&gw).await;
    assert_eq!(
        v["interface"],
        json!({"binding": binding, "version": "0.3"}),
        "{v}"
    );
    // Nothing was refused on the way: a schema or validation problem would leave no interface.
    let reason = e["reason"].as_str().unwrap_or_default();
    assert!(!reason.contains("schema"), "{e}");
}

#[tokio::test]
async fn the_js_03_agent_compiles_on_json_rpc() {
    compiles_with("jsonrpc", "JSONRPC").await;
}

#[tokio::test]
async fn the_js_03_agent_compiles_on_http_json() {
    compiles_with("rest", "HTTP+JSON").await;
}

#[tokio::test]
async fn with_the_default_client_the_js_03_agent_is_recorded_but_never_chosen() {
    let agent = SdkAgent::start_js03(&[]);
    let gw = gateway(&agent, false).await;
    let ready = gw.readyz().await;
    let e = &ready["integrations"]["js03"];
    assert_eq!(e["status"], "unusable", "{e}");
    assert_eq!(e["interface"], Value::Null, "{e}");
    assert_eq!(
        e["reason"], "no mutually supported interface (card offers JSONRPC 0.3, HTTP+JSON 0.3)",
        "{e}"
    );
}
