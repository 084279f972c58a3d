//! The gateway's own client reuses its connections to an agent: message sends and streams made one
//! after another travel over one pooled connection (pingora's connector), not one connection per
//! call. Connections are counted by a loopback TCP relay that the card's interface points at, in
//! front of the official SDK agent.

use a2a_egress::testkit::{ConfigToml, IntegrationToml};

use crate::common::SdkAgent;
use crate::common::gateway::{InProcess, send_request, sse_events};
use crate::common::relay::Relay;

/// A gateway in front of the SDK agent through a relay (whose address the card's interface
/// names).
async fn gateway_through_a_relay() -> (InProcess, SdkAgent, Relay) {
    let mut relay = Relay::bind().await;
    let agent = SdkAgent::start(&["--interface-base", &relay.url]);
    relay.forward_to(agent.addr);
    let config = ConfigToml::new(&[])
        .integration(
            IntegrationToml::new("pooled", &agent.card_url).origins(&[&agent.base_url, &relay.url]),
        )
        .text();
    (InProcess::start(&config).await, agent, relay)
}

#[tokio::test]
async fn sends_and_streams_reuse_one_upstream_connection() {
    let (gw, agent, relay) = gateway_through_a_relay().await;

    for i in 0..5 {
        let (status, body) = gw
            .rpc(
                "pooled",
                &send_request(&format!("s{i}"), "SendMessage", "hi"),
                &[],
            )
            .await;
        assert_eq!(status, 200, "{body}");
        let (status, _, body) = gw
            .rpc_raw(
                "pooled",
                &send_request(&format!("t{i}"), "SendStreamingMessage", "hi"),
                &[],
            )
            .await;
        assert_eq!(status, 200, "{body}");
        assert!(sse_events(&body).len() >= 2, "{body}");
    }
    assert_eq!(
        agent.seen_calls().await.len(),
        10,
        "every call went through the relay to the agent"
    );
    assert_eq!(
        relay.connections(),
        1,
        "ten calls in a row, one upstream connection"
    );
}

/// Unary calls that are not message sends (here GetTask) and message sends share one pool: the
/// gateway has one HTTP stack to its agents, not pingora's proxy pool beside its own client's.
#[tokio::test]
async fn unary_calls_and_sends_share_one_upstream_connection() {
    let (gw, agent, relay) = gateway_through_a_relay().await;

    for i in 0..3 {
        let (status, body) = gw
            .rpc(
                "pooled",
                &send_request(&format!("s{i}"), "SendMessage", "hi"),
                &[],
            )
            .await;
        assert_eq!(status, 200, "{body}");
        let get = serde_json::json!({"jsonrpc": "2.0", "id": format!("g{i}"),
            "method": "GetTask", "params": {"id": "no-such-task"}});
        let (status, body) = gw.rpc("pooled", &get, &[]).await;
        assert_eq!(status, 200, "{body}");
        assert!(
            body.get("error").is_some(),
            "an unknown task is an error: {body}"
        );
    }
    assert_eq!(
        agent.seen_calls().await.len(),
        6,
        "every call went through the relay to the agent"
    );
    assert_eq!(
        relay.connections(),
        1,
        "GetTask and SendMessage alternating, one upstream connection"
    );
}

fn get_task(id: &str) -> serde_json::Value {
    serde_json::json!({"jsonrpc": "2.0", "id": id, "method": "GetTask", "params": {"id": "no-such-task"}})
}

/// A pooled connection the agent closes when the next request arrives (before any answer) is
/// most often an agent closing an idle connection, and a read is then sent again, whole, on a
/// new connection: the caller gets the agent's answer.
#[tokio::test]
async fn a_read_whose_pooled_connection_closed_before_an_answer_is_retried_on_a_new_one() {
    let (gw, _agent, relay) = gateway_through_a_relay().await;
    let (status, body) = gw.rpc("pooled", &get_task("g0"), &[]).await;
    assert_eq!(status, 200, "{body}");
    relay.cut_first();
    let (status, body) = gw.rpc("pooled", &get_task("g1"), &[]).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["id"], "g1", "the agent's answer: {body}");
    assert!(
        body.get("error").is_some() || body.get("result").is_some(),
        "{body}"
    );
    assert_eq!(
        relay.connections(),
        2,
        "the closed connection, then one new one"
    );
}

/// The same close for a message send is not retried: the gateway cannot tell an idle close from
/// an agent that acted on the message and then reset (RFC 9110 §9.2.2; Go's transport and nginx
/// refuse to replay a non-idempotent request the same way), and a second send would create a
/// second task. The caller gets `UPSTREAM_UNAVAILABLE` and decides.
#[tokio::test]
async fn a_message_send_whose_pooled_connection_closed_before_an_answer_is_not_sent_twice() {
    let (gw, agent, relay) = gateway_through_a_relay().await;
    let (status, body) = gw
        .rpc("pooled", &send_request("s0", "SendMessage", "hi"), &[])
        .await;
    assert_eq!(status, 200, "{body}");
    relay.cut_first();
    let (_, body) = gw
        .rpc("pooled", &send_request("s1", "SendMessage", "again"), &[])
        .await;
    assert_eq!(
        body["error"]["data"][0]["reason"], "UPSTREAM_UNAVAILABLE",
        "{body}"
    );
    assert_eq!(relay.connections(), 1, "no second connection");
    assert_eq!(agent.seen_calls().await.len(), 1, "only the first send");
}
