//! Shutdown of the gateway core, in process: once the shutdown future completes, calls in flight
//! finish while new ones are refused with `GATEWAY_DRAINING` and `/readyz` says draining; the
//! core returns only after the drain, and then no longer listens. A relay in front of the official
//! SDK agent holds the agent's answer, so a call is in flight for exactly as long as the test
//! needs.

use serde_json::Value;

use crate::common::SdkAgent;
use a2a_egress::testkit::{ConfigToml, IntegrationToml};

use crate::common::gateway::{InProcess, metric, send_request};
use crate::common::relay::Relay;

#[tokio::test]
async fn shutdown_lets_calls_in_flight_finish_and_refuses_new_ones() {
    let mut relay = Relay::bind().await;
    let agent = SdkAgent::start(&["--interface-base", &relay.url]);
    relay.forward_to(agent.addr);
    let config = ConfigToml::new(&[])
        .integration(
            IntegrationToml::new("held", &agent.card_url).origins(&[&agent.base_url, &relay.url]),
        )
        .text();
    let mut gw = InProcess::start(&config).await;
    let endpoints = gw.endpoints.clone();

    relay.hold();
    let call = {
        let endpoints = endpoints.clone();
        tokio::spawn(async move {
            endpoints
                .rpc("held", &send_request("h1", "SendMessage", "hi"), &[])
                .await
        })
    };
    let mut inflight: f64;
    crate::assert_eventually!(
        {
            inflight = metric(
                &endpoints.metrics().await,
                "a2a_egress_inflight_requests",
                &[],
            );
            inflight >= 1.0
        },
        "the held call never reached the agent (in flight: {inflight})"
    );

    gw.shutdown();
    let mut readyz: Value;
    crate::assert_eventually!(
        {
            readyz = endpoints.readyz().await;
            readyz["draining"] == true
        },
        "/readyz never said draining: {readyz}"
    );
    assert_eq!(readyz["ready"], false, "{readyz}");
    let (status, body) = endpoints
        .rpc("held", &send_request("h2", "SendMessage", "hi"), &[])
        .await;
    assert_eq!(status, 503, "{body}");
    assert!(body.to_string().contains("GATEWAY_DRAINING"), "{body}");
    assert!(
        !call.is_finished(),
        "the held call is still in flight while the gateway drains"
    );

    relay.release();
    let (status, body) = call.await.expect("the held call");
    assert_eq!(status, 200, "the call in flight finished: {body}");
    assert!(body["result"]["task"].is_object(), "{body}");
    gw.stop().await.expect("a clean shutdown");
    assert!(
        tokio::net::TcpStream::connect(endpoints.proxy)
            .await
            .is_err(),
        "the data plane no longer listens"
    );
}
