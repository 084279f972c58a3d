//! The data plane never sends calls through a proxy named by the environment: the gateway runs
//! with `HTTP_PROXY`/`HTTPS_PROXY`/`ALL_PROXY` (both spellings) pointing at a loopback listener
//! that records every connection, and a message send and a stream must still go straight to the
//! agent (the interface address the control plane checked and pinned), never to the listener.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::common::SdkAgent;
use crate::common::gateway::{GatewayProc, config_head, integration, send_request, sse_events};

/// Accepts and counts TCP connections, then closes them without a byte.
async fn recorder() -> (String, Arc<AtomicUsize>, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let count = Arc::new(AtomicUsize::new(0));
    let seen = count.clone();
    let task = tokio::spawn(async move {
        while let Ok((conn, _)) = listener.accept().await {
            seen.fetch_add(1, Ordering::SeqCst);
            drop(conn);
        }
    });
    (url, count, task)
}

#[tokio::test]
async fn calls_ignore_proxy_environment_variables() {
    let agent = SdkAgent::start(&[]);
    let (proxy, connections, task) = recorder().await;
    let env: Vec<(&str, &str)> = [
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "http_proxy",
        "https_proxy",
        "all_proxy",
    ]
    .iter()
    .map(|k| (*k, proxy.as_str()))
    .collect();
    let config = config_head(&[]) + &integration("direct", &agent.card_url, "");
    let gw = GatewayProc::start(&config, &env).await;
    agent.reset().await;

    let (status, body) = gw
        .rpc("direct", &send_request("1", "SendMessage", "hi"), &[])
        .await;
    assert_eq!(status, 200, "{body}");
    assert!(body["result"]["task"].is_object(), "{body}");
    let (status, _, body) = gw
        .rpc_raw(
            "direct",
            &send_request("2", "SendStreamingMessage", "hi"),
            &[],
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert!(sse_events(&body).len() >= 2, "{body}");

    assert_eq!(
        connections.load(Ordering::SeqCst),
        0,
        "the gateway connected to the proxy named in its environment"
    );
    let methods: Vec<_> = agent
        .seen_calls()
        .await
        .into_iter()
        .filter_map(|s| s.rpc_method)
        .collect();
    assert_eq!(methods, ["SendMessage", "SendStreamingMessage"]);
    task.abort();
}
