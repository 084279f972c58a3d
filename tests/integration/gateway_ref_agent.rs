//! The gateway in front of the bundled reference agent, driven by the official Python SDK client
//! pointed only at the gateway; plus graceful shutdown with a call in flight.

use std::time::Duration;

use a2a_egress::testkit::IntegrationToml;

use crate::common::gateway::{GatewayProc, config_head, metric, send_request, sse_events};
use crate::common::ref_agent::{PARTNER_TOKEN, RefAgent};
use crate::common::sdk_client::sdk_client;

fn ref_integration(name: &str, agent: &RefAgent, extra: &str) -> String {
    IntegrationToml::new(name, &agent.card_url)
        .skills(&["echo", "stream-report"])
        .extra(extra)
        .text()
}

#[tokio::test]
async fn sdk_client_through_the_gateway_to_the_reference_agent() {
    let agent = RefAgent::sample();
    let config = config_head(&["https://example.com/ext/trace/v1"])
        + &ref_integration(
            "finance",
            &agent,
            "extensions = [\"https://example.com/ext/trace/v1\"]\n\
             credential = { type = \"bearer\", env = \"FIN_TOKEN\" }",
        );
    let gw = GatewayProc::start(&config, &[("FIN_TOKEN", PARTNER_TOKEN)]).await;
    let base = format!("{}/", gw.agent_url("finance"));

    let card = sdk_client(&["--url", &base, "--op", "card"]).ok();
    let c = &card.of_kind("card")[0]["card"];
    let skills: Vec<&str> = c["skills"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap())
        .collect();
    assert_eq!(skills, vec!["echo", "stream-report"], "{c}");
    assert_eq!(
        c["supportedInterfaces"][0]["url"],
        gw.agent_url("finance"),
        "{c}"
    );

    let run = sdk_client(&[
        "--url",
        &base,
        "--op",
        "send",
        "--text",
        "echo hello gateway",
    ])
    .ok();
    let task = run.last_task();
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{run:#?}");
    assert!(
        task.to_string().contains("hello gateway"),
        "the echo came back: {task}"
    );
    // The trace extension was activated by the gateway (the reference agent echoes it back).
    let ext = run.of_kind("response_headers");
    assert!(
        ext.iter()
            .any(|l| l["a2a_extensions"] == "https://example.com/ext/trace/v1"),
        "{run:#?}"
    );

    let stream = sdk_client(&[
        "--url",
        &base,
        "--op",
        "stream",
        "--text",
        "stream a report in 3 parts",
    ])
    .ok();
    assert!(stream.events().len() >= 3, "{stream:#?}");

    let m = gw.metrics().await;
    assert_eq!(
        metric(
            &m,
            "a2a_egress_requests_total",
            &[
                ("integration", "finance"),
                ("method", "SendStreamingMessage"),
                ("outcome", "ok")
            ]
        ),
        1.0,
        "{m}"
    );
    assert!(
        metric(
            &m,
            "a2a_egress_upstream_duration_seconds_count",
            &[("integration", "finance")]
        ) >= 2.0
    );
}

#[tokio::test]
async fn sigterm_lets_an_in_flight_stream_finish_then_exits_cleanly() {
    let agent = RefAgent::sample();
    let config = config_head(&[]) + &ref_integration("finance", &agent, "");
    let mut gw = GatewayProc::start(&config, &[]).await;

    let url = gw.agent_url("finance");
    let call = tokio::spawn(async move {
        let resp = crate::common::http()
            .post(url)
            .header("content-type", "application/json")
            .body(
                send_request("g1", "SendStreamingMessage", "stream a report in 5 parts")
                    .to_string(),
            )
            .send()
            .await
            .expect("stream starts");
        resp.text().await.expect("stream completes")
    });
    // Wait until the call is in flight (the gauge says so), then ask the gateway to stop.
    let mut inflight: f64;
    crate::assert_eventually!(
        {
            inflight = metric(&gw.metrics().await, "a2a_egress_inflight_requests", &[]);
            inflight >= 1.0
        },
        every = Duration::from_millis(10),
        "the stream never started (in flight: {inflight})"
    );
    gw.process.terminate();

    let body = call.await.unwrap();
    let events = sse_events(&body);
    let last = events.last().expect("events");
    assert!(
        last.to_string().contains("TASK_STATE_COMPLETED"),
        "the stream ran to its end: {body}"
    );
    let status = gw
        .process
        .wait_timeout(Duration::from_secs(30))
        .expect("the gateway exits after draining");
    assert!(status.success(), "{status:?}\n{}", gw.process.stderr_tail());
}
