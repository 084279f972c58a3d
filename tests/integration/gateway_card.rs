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

/// An agent card of `n` skills, each with a name, a description holding an invisible format
/// character (U+13430, which the sanitiser removes), tags and an example.
fn card_of_skills(base: &str, n: usize) -> Value {
    let skills: Vec<Value> = (0..n)
        .map(|i| {
            json!({
                "id": format!("s{i}"),
                "name": format!("Skill {i}"),
                "description": format!("Does task {i}\u{13430} with inputs of several kinds."),
                "tags": ["bulk", format!("group-{}", i % 7)],
                "examples": [format!("Run task {i}")],
                "inputModes": ["text/plain"],
            })
        })
        .collect();
    json!({
        "name": "Bulk agent",
        "description": "An agent with very many skills.",
        "version": "1.0.0",
        "supportedInterfaces": [{"url": format!("{base}/jsonrpc"), "protocolBinding": "JSONRPC",
            "protocolVersion": "1.0"}],
        "capabilities": {"streaming": false},
        "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["application/json"],
        "skills": skills,
    })
}

/// A plain HTTP server on loopback serving `card` at `/.well-known/agent-card.json` (an agent
/// that is only a card: enough for the gateway to compile it and serve its effective card).
async fn card_only_agent(card: impl Fn(&str) -> Value) -> (String, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let body = card(&base).to_string();
    let app = axum::Router::new().route(
        "/.well-known/agent-card.json",
        axum::routing::get(move || {
            let body = body.clone();
            async move { ([("content-type", "application/json")], body) }
        }),
    );
    let task = tokio::spawn(async move {
        axum::serve(listener, app).await.unwrap();
    });
    (format!("{base}/.well-known/agent-card.json"), task)
}

/// A 10,000-skill effective card (once rendering it was paid on every GET) is served whole and
/// the same, bytes and ETag, on every GET, under concurrent GETs too; HEAD and 304 as usual.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ten_thousand_skill_card_is_served_the_same_on_every_get() {
    const SKILLS: usize = 10_000;
    let (card_url, agent) = card_only_agent(|base| card_of_skills(base, SKILLS)).await;
    let ids: Vec<String> = (0..SKILLS).map(|i| format!("s{i}")).collect();
    let config = config_head(&[]).replace("[client]\n", "[client]\nmax_card_bytes = 8388608\n")
        + &integration("bulk", &card_url, "").replace(
            "skills = [\"echo\"]",
            &format!("skills = {}", serde_json::to_string(&ids).unwrap()),
        );
    let gw = InProcess::start(&config).await;
    let url = gw.url("/agents/bulk/.well-known/agent-card.json");
    let get = |inm: Option<String>| {
        let mut req = crate::common::http().get(&url);
        if let Some(tag) = inm {
            req = req.header("if-none-match", tag);
        }
        async move {
            let resp = req.send().await.unwrap();
            let status = resp.status().as_u16();
            let etag = resp.headers()["etag"].to_str().unwrap().to_owned();
            (status, etag, resp.bytes().await.unwrap())
        }
    };

    let (status, etag, body) = get(None).await;
    assert_eq!(status, 200);
    let card: Value = serde_json::from_slice(&body).unwrap();
    let skills = card["skills"].as_array().unwrap();
    assert_eq!(skills.len(), SKILLS, "every accepted skill is published");
    assert_eq!(skills[9_999]["id"], "s9999");
    assert_eq!(
        skills[42]["description"], "Does task 42 with inputs of several kinds.",
        "the format character is removed"
    );
    let policy = a2a_egress::card::CardPolicy {
        allow_plain_http: true,
        max_card_bytes: 8 * 1024 * 1024,
        ..Default::default()
    };
    a2a_egress::card::validate(&body, &policy, None).expect("a valid A2A 1.0 card");

    // Many GETs, eight at a time: every one the same bytes and the same ETag.
    for _ in 0..8 {
        let round = futures::future::join_all((0..8).map(|_| get(None))).await;
        for (s, e, b) in round {
            assert_eq!((s, e.as_str()), (200, etag.as_str()));
            assert!(b == body, "the same bytes on every GET");
        }
    }
    let (s, e, b) = get(Some(etag.clone())).await;
    assert_eq!((s, e.as_str(), b.len()), (304, etag.as_str(), 0));
    let head = crate::common::http().head(&url).send().await.unwrap();
    assert_eq!(head.status().as_u16(), 200);
    assert_eq!(head.headers()["etag"].to_str().unwrap(), etag);
    assert!(head.bytes().await.unwrap().is_empty());
    agent.abort();
}
