//! Smoke tests of the test peers themselves: the official-SDK agent (`tests/peers/sdk_agent.py`)
//! honours each flag, and records exactly what it received. Other integration tests rely on both.

use crate::common::SdkAgent;
use serde_json::{Value, json};

fn send_body(method: &str, tenant: Option<&str>, text: &str) -> Value {
    let mut params =
        json!({"message": {"messageId": "m-1", "role": "ROLE_USER", "parts": [{"text": text}]}});
    if let Some(t) = tenant {
        params["tenant"] = json!(t);
    }
    json!({"jsonrpc": "2.0", "id": "req-1", "method": method, "params": params})
}

async fn rpc(agent: &SdkAgent, body: &Value, headers: &[(&str, &str)]) -> reqwest::Response {
    let mut req = crate::common::http().post(agent.jsonrpc_url()).json(body);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    req.send().await.expect("JSON-RPC POST")
}

fn error_code(v: &Value) -> i64 {
    v["error"]["code"]
        .as_i64()
        .unwrap_or_else(|| panic!("not a JSON-RPC error: {v}"))
}

#[tokio::test]
async fn card_reflects_every_card_flag() {
    let agent = SdkAgent::start(&[
        "--binding",
        "rest-first",
        "--tenant",
        "t1",
        "--required-extension",
        "https://example.com/ext/req/v1",
        "--optional-extension",
        "https://example.com/ext/opt/v1",
        "--card-version",
        "2.3.4",
        "--extended-card",
        "--token",
        "s3cret",
        "--skill",
        "echo:text/plain",
        "--skill",
        "images:image/png,application/json",
        "--streaming",
        "off",
    ]);
    let card = agent.card().await;
    assert_eq!(card["version"], "2.3.4");
    let ifaces = card["supportedInterfaces"].as_array().unwrap();
    assert_eq!(ifaces.len(), 2);
    assert_eq!(ifaces[0]["protocolBinding"], "HTTP+JSON");
    assert_eq!(ifaces[0]["url"], agent.rest_url());
    assert_eq!(ifaces[1]["protocolBinding"], "JSONRPC");
    assert_eq!(ifaces[1]["url"], agent.jsonrpc_url());
    assert!(
        ifaces
            .iter()
            .all(|i| i["tenant"] == "t1" && i["protocolVersion"] == "1.0")
    );
    let caps = &card["capabilities"];
    assert_eq!(caps["streaming"], false);
    assert_eq!(caps["extendedAgentCard"], true);
    assert_eq!(
        caps["extensions"][0]["uri"],
        "https://example.com/ext/req/v1"
    );
    assert_eq!(caps["extensions"][0]["required"], true);
    assert_eq!(
        caps["extensions"][1]["uri"],
        "https://example.com/ext/opt/v1"
    );
    assert_ne!(caps["extensions"][1]["required"], true);
    assert_eq!(card["skills"][1]["id"], "images");
    assert_eq!(
        card["skills"][1]["inputModes"],
        json!(["image/png", "application/json"])
    );
    assert!(card["securitySchemes"]["bearer"]["httpAuthSecurityScheme"].is_object());

    // The extended card (REST, tenant prefix, token) carries the extra skill.
    let ext: Value = crate::common::http()
        .get(format!("{}/t1/extendedAgentCard", agent.rest_url()))
        .header("A2A-Version", "1.0")
        .bearer_auth("s3cret")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let ids: Vec<&str> = ext["skills"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["echo", "images", "extended-echo"]);
}

#[tokio::test]
async fn jsonrpc_send_is_answered_and_recorded() {
    let agent = SdkAgent::start(&[]);
    let resp = rpc(
        &agent,
        &send_body("SendMessage", None, "hello"),
        &[("A2A-Version", "1.0")],
    )
    .await;
    assert!(resp.status().is_success());
    let v: Value = resp.json().await.unwrap();
    assert_eq!(v["id"], "req-1");
    assert_eq!(
        v["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{v}"
    );
    assert_eq!(
        v["result"]["task"]["artifacts"][0]["parts"][0]["text"],
        "echo: hello"
    );

    let seen = agent.seen_calls().await;
    assert_eq!(seen.len(), 1, "{seen:?}");
    let s = &seen[0];
    assert_eq!(s.path, "/jsonrpc");
    assert_eq!(s.rpc_method.as_deref(), Some("SendMessage"));
    assert_eq!(s.a2a_version.as_deref(), Some("1.0"));
    assert_eq!(s.a2a_extensions, None);
    assert_eq!(s.authorization, None);
    assert_eq!(s.tenant, None);
    assert_eq!(s.content_type.as_deref(), Some("application/json"));
    assert_eq!(s.body["params"]["message"]["parts"][0]["text"], "hello");

    agent.reset().await;
    assert!(agent.seen().await.is_empty());

    // Without A2A-Version the SDK treats the call as 0.3 and refuses it (-32009); it is still recorded.
    let v: Value = rpc(&agent, &send_body("SendMessage", None, "x"), &[])
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(error_code(&v), -32009, "{v}");
    assert_eq!(agent.seen().await[0].a2a_version, None);
}

#[tokio::test]
async fn rest_tenant_is_enforced_and_recorded() {
    let agent = SdkAgent::start(&["--binding", "rest", "--tenant", "t1"]);
    let msg =
        json!({"message": {"messageId": "m-2", "role": "ROLE_USER", "parts": [{"text": "hi"}]}});
    let ok = crate::common::http()
        .post(format!("{}/t1/message:send", agent.rest_url()))
        .header("A2A-Version", "1.0")
        .json(&msg)
        .send()
        .await
        .unwrap();
    assert!(ok.status().is_success(), "{}", ok.status());
    let v: Value = ok.json().await.unwrap();
    assert_eq!(v["task"]["status"]["state"], "TASK_STATE_COMPLETED");

    let wrong = crate::common::http()
        .post(format!("{}/t2/message:send", agent.rest_url()))
        .header("A2A-Version", "1.0")
        .json(&msg)
        .send()
        .await
        .unwrap();
    assert_eq!(wrong.status(), 400);
    let none = crate::common::http()
        .post(format!("{}/message:send", agent.rest_url()))
        .header("A2A-Version", "1.0")
        .json(&msg)
        .send()
        .await
        .unwrap();
    assert_eq!(none.status(), 400);

    let seen = agent.seen_calls().await;
    let got: Vec<(Option<&str>, Option<&str>)> = seen
        .iter()
        .map(|s| (s.tenant.as_deref(), s.rest_route.as_deref()))
        .collect();
    assert_eq!(
        got,
        [
            (Some("t1"), Some("POST /message:send")),
            (Some("t2"), Some("POST /message:send")),
            (None, Some("POST /message:send")),
        ]
    );
}

#[tokio::test]
async fn required_extension_is_enforced_and_activated_ones_echoed() {
    let req = "https://example.com/ext/req/v1";
    let opt = "https://example.com/ext/opt/v1";
    let agent = SdkAgent::start(&["--required-extension", req, "--optional-extension", opt]);
    let body = send_body("SendMessage", None, "x");

    let missing = rpc(
        &agent,
        &body,
        &[("A2A-Version", "1.0"), ("A2A-Extensions", opt)],
    )
    .await;
    assert_eq!(missing.headers()["a2a-extensions"], opt);
    let v: Value = missing.json().await.unwrap();
    assert_eq!(error_code(&v), -32008, "{v}");
    assert_eq!(
        v["error"]["data"][0]["reason"],
        "EXTENSION_SUPPORT_REQUIRED"
    );

    let both = format!("{req}, {opt}, https://unknown.example/x");
    let ok = rpc(
        &agent,
        &body,
        &[("A2A-Version", "1.0"), ("A2A-Extensions", &both)],
    )
    .await;
    // Unknown extensions are ignored, known ones echoed (sorted).
    assert_eq!(ok.headers()["a2a-extensions"], format!("{opt}, {req}"));
    let v: Value = ok.json().await.unwrap();
    assert_eq!(
        v["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{v}"
    );
    assert_eq!(
        agent.seen_calls().await[1].a2a_extensions.as_deref(),
        Some(both.as_str())
    );
}

#[tokio::test]
async fn bearer_token_is_required_except_for_the_card() {
    let agent = SdkAgent::start(&["--token", "s3cret"]);
    agent.card().await;
    let body = send_body("SendMessage", None, "x");
    let denied = rpc(&agent, &body, &[("A2A-Version", "1.0")]).await;
    assert_eq!(denied.status(), 401);
    let wrong = rpc(
        &agent,
        &body,
        &[("A2A-Version", "1.0"), ("Authorization", "Bearer nope")],
    )
    .await;
    assert_eq!(wrong.status(), 401);
    let ok = rpc(
        &agent,
        &body,
        &[("A2A-Version", "1.0"), ("Authorization", "Bearer s3cret")],
    )
    .await;
    assert_eq!(ok.status(), 200);
    let auths: Vec<Option<String>> = agent
        .seen_calls()
        .await
        .into_iter()
        .map(|s| s.authorization)
        .collect();
    assert_eq!(
        auths,
        [
            None,
            Some("Bearer nope".into()),
            Some("Bearer s3cret".into())
        ]
    );
}

#[tokio::test]
async fn streaming_on_off_and_refused() {
    let body = send_body("SendStreamingMessage", None, "s");
    let v1 = [("A2A-Version", "1.0")];

    let on = SdkAgent::start(&["--slow-stream", "3"]);
    let resp = rpc(&on, &body, &v1).await;
    assert!(
        resp.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/event-stream")
    );
    let text = resp.text().await.unwrap();
    let events: Vec<Value> = text
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .map(|d| serde_json::from_str(d.trim()).unwrap())
        .collect();
    let kinds: Vec<&str> = events
        .iter()
        .map(|e| {
            e["result"]
                .as_object()
                .unwrap()
                .keys()
                .next()
                .unwrap()
                .as_str()
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "task",
            "statusUpdate",
            "artifactUpdate",
            "artifactUpdate",
            "artifactUpdate",
            "statusUpdate"
        ]
    );
    assert_eq!(
        events[4]["result"]["artifactUpdate"]["artifact"]["parts"][0]["text"],
        "echo: s [3/3]"
    );
    assert_eq!(
        events[5]["result"]["statusUpdate"]["status"]["state"],
        "TASK_STATE_COMPLETED"
    );

    // Declared off: the SDK itself refuses with -32004 as plain JSON.
    let off = SdkAgent::start(&["--streaming", "off"]);
    let v: Value = rpc(&off, &body, &v1).await.json().await.unwrap();
    assert_eq!(error_code(&v), -32004, "{v}");

    // Advertised but refused: same error shape, while the card still says streaming:true.
    let refuse = SdkAgent::start(&["--refuse-streaming"]);
    assert_eq!(refuse.card().await["capabilities"]["streaming"], true);
    let resp = rpc(&refuse, &body, &v1).await;
    assert!(
        resp.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("application/json")
    );
    let v: Value = resp.json().await.unwrap();
    assert_eq!(error_code(&v), -32004, "{v}");
    assert_eq!(v["error"]["data"][0]["reason"], "UNSUPPORTED_OPERATION");
    // A unary send still works there.
    let v: Value = rpc(&refuse, &send_body("SendMessage", None, "u"), &v1)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(
        v["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{v}"
    );
}

#[tokio::test]
async fn version_only_rejects_other_minor_versions() {
    let agent = SdkAgent::start(&["--version-only", "1.0"]);
    let body = send_body("SendMessage", None, "x");
    let v: Value = rpc(&agent, &body, &[("A2A-Version", "1.1")])
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(error_code(&v), -32009, "{v}");
    let v: Value = rpc(&agent, &body, &[("A2A-Version", "1.0")])
        .await
        .json()
        .await
        .unwrap();
    assert!(v.get("result").is_some(), "{v}");
}

#[test]
#[should_panic(expected = "invalid choice")]
fn a_peer_that_cannot_start_fails_with_its_stderr() {
    SdkAgent::start(&["--binding", "carrier-pigeon"]);
}

#[tokio::test]
async fn tls_agent_serves_https_under_a_test_ca() {
    let pki = crate::common::TestPki::new(&["127.0.0.1", "localhost"]);
    let agent = SdkAgent::start_tls(&["--binding", "both"], &pki);
    assert!(
        agent.base_url.starts_with("https://127.0.0.1:"),
        "{}",
        agent.base_url
    );
    let card = agent.card().await;
    assert_eq!(card["supportedInterfaces"][0]["url"], agent.jsonrpc_url());
    assert_eq!(card["supportedInterfaces"][1]["url"], agent.rest_url());

    let v: Value = agent
        .client
        .post(agent.jsonrpc_url())
        .header("A2A-Version", "1.0")
        .json(&send_body("SendMessage", None, "over tls"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        v["result"]["task"]["artifacts"][0]["parts"][0]["text"],
        "echo: over tls"
    );
    assert_eq!(agent.seen_calls().await.len(), 1);

    // A client without the test CA cannot connect: the certificate really is checked.
    let err = crate::common::http()
        .get(&agent.card_url)
        .send()
        .await
        .unwrap_err();
    assert!(err.is_connect() || err.is_request(), "{err:?}");
}

#[tokio::test]
async fn delay_holds_a2a_calls_but_not_the_card() {
    let agent = SdkAgent::start(&["--delay-ms", "30000"]);
    agent.card().await;
    let err = crate::common::http()
        .post(agent.jsonrpc_url())
        .header("A2A-Version", "1.0")
        .json(&send_body("SendMessage", None, "x"))
        .timeout(std::time::Duration::from_millis(300))
        .send()
        .await
        .unwrap_err();
    assert!(err.is_timeout(), "{err:?}");
    // The held call was still recorded on arrival.
    assert_eq!(
        agent.seen_calls().await[0].rpc_method.as_deref(),
        Some("SendMessage")
    );
}
