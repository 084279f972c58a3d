//! The gateway in front of the official Python SDK agent: what leaves the gateway is shaped from
//! the profile, asserted from the agent's side (`/_test/seen`), over real loopback sockets.

use crate::common::SdkAgent;
use crate::common::gateway::{
    GatewayProc, InProcess, config_head, integration, metric, send_request,
};
use serde_json::json;

const REQ: &str = "urn:test:ext:required";
const OPT: &str = "urn:test:ext:optional";
const UNUSED: &str = "urn:test:ext:unused";

#[tokio::test]
async fn jsonrpc_call_carries_version_activated_extensions_and_integration_credential() {
    let agent = SdkAgent::start(&[
        "--token",
        "s3cret",
        "--required-extension",
        REQ,
        "--optional-extension",
        OPT,
        "--optional-extension",
        UNUSED,
    ]);
    let config = config_head(&[REQ, OPT, UNUSED])
        + &integration(
            "echo",
            &agent.card_url,
            &format!(
                "extensions = [\"{OPT}\"]\ncredential = {{ type = \"bearer\", env = \"ECHO_TOKEN\" }}"
            ),
        );
    let gw = GatewayProc::start(&config, &[("ECHO_TOKEN", "s3cret")]).await;
    agent.reset().await;

    let (status, body) = gw
        .rpc(
            "echo",
            &send_request("1", "SendMessage", "hello"),
            // The caller's own credential and header must not leave; no A2A-Version sent.
            &[
                ("authorization", "Bearer caller-token"),
                ("a2a-egress-data-class", "public"),
                ("a2a-extensions", "urn:caller:ext"),
            ],
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["id"], "1");
    assert!(body["result"].is_object(), "{body}");

    let seen = agent.seen_calls().await;
    assert_eq!(seen.len(), 1, "{seen:?}");
    let s = &seen[0];
    assert_eq!(s.rpc_method.as_deref(), Some("SendMessage"));
    assert_eq!(s.a2a_version.as_deref(), Some("1.0"));
    assert_eq!(s.authorization.as_deref(), Some("Bearer s3cret"));
    let mut ext: Vec<&str> = s
        .a2a_extensions
        .as_deref()
        .unwrap_or("")
        .split(',')
        .map(str::trim)
        .collect();
    ext.sort();
    assert_eq!(ext, vec![OPT, REQ], "required + configured optional only");
    assert_eq!(s.path, "/jsonrpc");
    assert_eq!(s.tenant, None);

    let m = gw.metrics().await;
    assert_eq!(
        metric(
            &m,
            "a2a_egress_requests_total",
            &[
                ("integration", "echo"),
                ("method", "SendMessage"),
                ("outcome", "ok")
            ]
        ),
        1.0,
        "{m}"
    );
    assert_eq!(
        metric(&m, "a2a_egress_profile_usable", &[("integration", "echo")]),
        1.0
    );
}

#[tokio::test]
async fn missing_credential_env_makes_the_integration_unusable_not_the_gateway() {
    let agent = SdkAgent::start(&[]);
    let other = SdkAgent::start(&[]);
    let config = config_head(&[])
        + &integration(
            "nocred",
            &agent.card_url,
            "credential = { type = \"bearer\", env = \"A2A_EGRESS_TEST_UNSET_VAR\" }",
        )
        + &integration("fine", &other.card_url, "");
    let gw = InProcess::start(&config).await;
    let ready = gw.readyz().await;
    assert_eq!(ready["integrations"]["nocred"]["status"], "unusable");
    assert!(
        ready["integrations"]["nocred"]["reason"]
            .as_str()
            .unwrap()
            .contains("A2A_EGRESS_TEST_UNSET_VAR")
    );
    let (_, body) = gw
        .rpc("nocred", &send_request("x", "SendMessage", "hi"), &[])
        .await;
    assert_eq!(body["error"]["data"][0]["reason"], "NO_USABLE_PROFILE");
    assert_eq!(body["id"], "x");
    let (status, body) = gw
        .rpc("fine", &send_request("y", "SendMessage", "hi"), &[])
        .await;
    assert_eq!(status, 200);
    assert!(body["result"].is_object(), "{body}");
    assert!(agent.seen_calls().await.is_empty());
}

#[tokio::test]
async fn tenant_is_copied_into_params_and_a_different_caller_tenant_is_refused() {
    let agent = SdkAgent::start(&["--tenant", "t1"]);
    let config = config_head(&[]) + &integration("tenanted", &agent.card_url, "");
    let gw = InProcess::start(&config).await;
    agent.reset().await;

    let (status, body) = gw
        .rpc("tenanted", &send_request("1", "SendMessage", "hi"), &[])
        .await;
    assert_eq!(status, 200);
    assert!(body["result"].is_object(), "{body}");
    let seen = agent.seen_calls().await;
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].tenant.as_deref(), Some("t1"));

    let mut req = send_request("2", "SendMessage", "hi");
    req["params"]["tenant"] = json!("t2");
    let (_, body) = gw.rpc("tenanted", &req, &[]).await;
    assert_eq!(body["id"], "2");
    assert_eq!(body["error"]["data"][0]["reason"], "TENANT_MISMATCH");
    assert_eq!(body["error"]["data"][0]["domain"], "a2a-egress");
    assert_eq!(
        agent.seen_calls().await.len(),
        1,
        "nothing more reached the agent"
    );
}

#[tokio::test]
async fn rest_binding_gets_the_tenant_path_prefix() {
    let agent = SdkAgent::start(&["--binding", "rest", "--tenant", "acme"]);
    let config = config_head(&[]) + &integration("rest", &agent.card_url, "");
    let gw = InProcess::start(&config).await;
    agent.reset().await;
    let resp = crate::common::http()
        .post(gw.url("/agents/rest/message:send"))
        .header("content-type", "application/a2a+json")
        .body(
            json!({"message": {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "hi"}]}})
                .to_string(),
        )
        .send()
        .await
        .unwrap();
    let status = resp.status().as_u16();
    let body: serde_json::Value = resp.json().await.unwrap();
    assert_eq!(status, 200, "{body}");
    let task_id = body["task"]["id"].as_str().expect("a task").to_owned();
    let seen = agent.seen_calls().await;
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert_eq!(seen[0].path, "/rest/acme/message:send");
    assert_eq!(seen[0].tenant.as_deref(), Some("acme"));
    assert_eq!(seen[0].a2a_version.as_deref(), Some("1.0"));

    // GET with a query string keeps it; the tenant prefix is added.
    let resp = crate::common::http()
        .get(gw.url(&format!("/agents/rest/tasks/{task_id}?historyLength=1")))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    let seen = agent.seen_calls().await;
    assert_eq!(
        seen.last().unwrap().path,
        format!("/rest/acme/tasks/{task_id}")
    );

    // A REST error from the gateway is a google.rpc.Status body.
    let resp = crate::common::http()
        .post(gw.url("/agents/rest/other/message:send"))
        .header("content-type", "application/json")
        .body(json!({"message": {"parts": [{"text": "x"}]}}).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 403);
    let body: serde_json::Value = resp.json().await.unwrap();
    assert_eq!(body["error"]["status"], "PERMISSION_DENIED");
    assert_eq!(body["error"]["details"][0]["reason"], "TENANT_MISMATCH");
}

#[tokio::test]
async fn agent_errors_pass_through_unchanged_and_mark_the_profile_stale() {
    // The agent speaks only "9.9": the gateway's 1.0 gets VersionNotSupportedError from the agent.
    let agent = SdkAgent::start(&["--version-only", "9.9"]);
    let config = config_head(&[]) + &integration("picky", &agent.card_url, "");
    let gw = InProcess::start(&config).await;
    let (status, body) = gw
        .rpc("picky", &send_request("v", "SendMessage", "hi"), &[])
        .await;
    assert_eq!(status, 200);
    assert_eq!(body["error"]["code"], -32009, "{body}");
    assert!(
        body["error"]["message"].as_str().unwrap().contains("9.9"),
        "the agent's own message, unchanged: {body}"
    );
    let m = gw.metrics().await;
    assert_eq!(
        metric(
            &m,
            "a2a_egress_stale_marks_total",
            &[("integration", "picky"), ("error", "VERSION_NOT_SUPPORTED")]
        ),
        1.0,
        "{m}"
    );
    assert_eq!(
        metric(
            &m,
            "a2a_egress_requests_total",
            &[("integration", "picky"), ("outcome", "agent_error")]
        ),
        1.0
    );
}

#[tokio::test]
async fn a_body_larger_than_pingoras_replay_buffer_arrives_intact() {
    // 200 KB of text: above pingora's 64 KiB replay buffer, so the gateway's own client sends it.
    let agent = SdkAgent::start(&["--tenant", "big"]);
    let config = config_head(&[]) + &integration("big", &agent.card_url, "");
    let gw = InProcess::start(&config).await;
    agent.reset().await;
    let text = "0123456789".repeat(20_000);
    let (status, body) = gw
        .rpc("big", &send_request("L", "SendMessage", &text), &[])
        .await;
    assert_eq!(status, 200);
    assert!(body["result"]["task"].is_object(), "{body}");
    let seen = agent.seen_calls().await;
    assert_eq!(seen.len(), 1);
    assert_eq!(
        seen[0].body["params"]["message"]["parts"][0]["text"]
            .as_str()
            .map(str::len),
        Some(text.len())
    );
    assert_eq!(
        seen[0].tenant.as_deref(),
        Some("big"),
        "tenant injected too"
    );
    assert_eq!(seen[0].a2a_version.as_deref(), Some("1.0"));
}
