//! The effective card, and the official Python SDK client kept on the gateway by it: the client is
//! given only `http://GATEWAY/agents/{name}/`, and every request the agent sees comes from the
//! gateway.

use crate::common::SdkAgent;
use crate::common::gateway::{InProcess, config_head, integration, metric};
use crate::common::sdk_client::sdk_client;
use serde_json::{Value, json};

const OPT: &str = "urn:test:ext:optional";
const OTHER: &str = "urn:test:ext:other";

#[tokio::test]
async fn effective_card_is_a_projection_with_its_own_etag() {
    let agent = SdkAgent::start(&[
        "--skill",
        "echo:text/plain",
        "--skill",
        "internal-admin:text/plain",
        "--optional-extension",
        OPT,
        "--optional-extension",
        OTHER,
        "--tenant",
        "t9",
    ]);
    let config = config_head(&[OPT, OTHER])
        + &integration("c", &agent.card_url, &format!("extensions = [\"{OPT}\"]"));
    let gw = InProcess::start(&config).await;

    let url = gw.url("/agents/c/.well-known/agent-card.json");
    let resp = crate::common::http().get(&url).send().await.unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    let etag = resp.headers()["etag"].to_str().unwrap().to_owned();
    assert!(etag.starts_with("W/\""), "{etag}");
    assert!(
        resp.headers()["cache-control"]
            .to_str()
            .unwrap()
            .contains("max-age")
    );
    let card: Value = resp.json().await.unwrap();
    assert_eq!(
        card["supportedInterfaces"],
        json!([{"url": format!("{}/agents/c", gw.public_url), "protocolBinding": "JSONRPC",
                "protocolVersion": "1.0", "tenant": "t9"}])
    );
    let skills: Vec<&str> = card["skills"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        skills,
        vec!["echo"],
        "only the integration's accepted skills"
    );
    assert_eq!(card["capabilities"]["extensions"], json!([{"uri": OPT}]));
    assert!(card.get("signatures").is_none());
    assert!(card.get("securitySchemes").is_none());
    // The card validates with the project's own strict validator.
    let policy = a2a_egress::card::CardPolicy {
        allow_plain_http: true,
        ..Default::default()
    };
    a2a_egress::card::validate(card.to_string().as_bytes(), &policy, None)
        .expect("the effective card is a valid A2A 1.0 card");

    let resp = crate::common::http()
        .get(&url)
        .header("if-none-match", &etag)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 304);
    assert_eq!(resp.headers()["etag"].to_str().unwrap(), etag);
    assert!(resp.text().await.unwrap().is_empty());
}

#[tokio::test]
async fn the_sdk_client_given_the_gateway_url_never_reaches_the_agent_directly() {
    let agent = SdkAgent::start(&["--slow-stream", "2"]);
    let config = config_head(&[]) + &integration("echo", &agent.card_url, "");
    let gw = InProcess::start(&config).await;
    let before = agent.seen().await;
    assert_eq!(
        before.iter().filter(|s| s.is_card_fetch()).count(),
        1,
        "only the gateway's own card fetch at start"
    );
    agent.reset().await;

    let base = format!("{}/", gw.agent_url("echo"));
    let send = sdk_client(&["--url", &base, "--op", "send", "--text", "hello"]).ok();
    let iface = &send.of_kind("interface")[0];
    assert_eq!(iface["url"], gw.agent_url("echo"), "{send:#?}");
    let task = send.last_task();
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{send:#?}");

    let stream = sdk_client(&["--url", &base, "--op", "stream", "--text", "stream it"]).ok();
    assert!(stream.events().len() >= 3, "{stream:#?}");

    let seen = agent.seen().await;
    assert!(
        seen.iter().all(|s| !s.is_card_fetch()),
        "the SDK resolved the card from the gateway, not the agent: {seen:?}"
    );
    let methods: Vec<&str> = seen
        .iter()
        .filter_map(|s| s.rpc_method.as_deref())
        .collect();
    assert_eq!(methods, vec!["SendMessage", "SendStreamingMessage"]);
    // Every call the agent saw is one the gateway forwarded (same count in its metrics).
    let m = gw.metrics().await;
    assert_eq!(
        metric(
            &m,
            "a2a_egress_requests_total",
            &[("integration", "echo"), ("outcome", "ok")]
        ) - metric(
            &m,
            "a2a_egress_requests_total",
            &[("integration", "echo"), ("method", "agent-card")]
        ),
        2.0,
        "{m}"
    );
}

#[tokio::test]
async fn the_sdk_client_over_http_json_with_a_tenant() {
    let agent = SdkAgent::start(&["--binding", "rest", "--tenant", "acme"]);
    let config = config_head(&[]) + &integration("rest", &agent.card_url, "");
    let gw = InProcess::start(&config).await;
    agent.reset().await;
    let base = format!("{}/", gw.agent_url("rest"));
    let run = sdk_client(&["--url", &base, "--binding", "HTTP+JSON", "--op", "send"]).ok();
    assert_eq!(run.of_kind("interface")[0]["tenant"], "acme");
    assert_eq!(
        run.last_task()["status"]["state"],
        "TASK_STATE_COMPLETED",
        "{run:#?}"
    );
    let seen = agent.seen_calls().await;
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert_eq!(seen[0].path, "/rest/acme/message:send");
    assert_eq!(seen[0].tenant.as_deref(), Some("acme"));
}

#[tokio::test]
async fn sdk_client_streaming_to_a_non_streaming_agent_with_a_required_extension() {
    const REQ: &str = "urn:test:ext:required";
    let agent = SdkAgent::start(&["--streaming", "off", "--required-extension", REQ]);
    let config = config_head(&[REQ]) + &integration("plain", &agent.card_url, "");
    let gw = InProcess::start(&config).await;
    agent.reset().await;
    let base = format!("{}/", gw.agent_url("plain"));
    // The SDK client asks for a stream and does not activate the extension itself.
    let run = sdk_client(&["--url", &base, "--op", "stream", "--text", "hi"]).ok();
    let events = run.events();
    assert_eq!(
        events.len(),
        1,
        "one SSE event from the downgrade: {run:#?}"
    );
    assert_eq!(
        run.last_task()["status"]["state"],
        "TASK_STATE_COMPLETED",
        "{run:#?}"
    );
    let seen = agent.seen_calls().await;
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert_eq!(seen[0].rpc_method.as_deref(), Some("SendMessage"));
    assert_eq!(seen[0].a2a_extensions.as_deref(), Some(REQ));
    assert_eq!(seen[0].a2a_version.as_deref(), Some("1.0"));
}
