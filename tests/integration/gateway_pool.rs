//! The gateway's own client reuses its connections to an agent: message sends and streams made one
//! after another travel over one pooled connection (pingora's connector), not one connection per
//! call. Connections are counted by a loopback TCP relay that the card's interface points at, in
//! front of the official SDK agent.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::common::SdkAgent;
use crate::common::gateway::{InProcess, config_head, send_request, sse_events};

/// Relays every connection accepted on `listener` to `to`, byte for byte, counting them.
fn relay(listener: tokio::net::TcpListener, to: std::net::SocketAddr) -> Arc<AtomicUsize> {
    relay_cutting_the_first(
        listener,
        to,
        Arc::new(std::sync::atomic::AtomicBool::new(false)),
    )
}

#[tokio::test]
async fn sends_and_streams_reuse_one_upstream_connection() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let relay_url = format!("http://{}", listener.local_addr().unwrap());
    let agent = SdkAgent::start(&["--interface-base", &relay_url]);
    let connections = relay(listener, agent.addr);
    let config = config_head(&[])
        + &format!(
            "\n[[integrations]]\nname = \"pooled\"\ncard = \"{}\"\norigins = [\"{}\", \"{relay_url}\"]\n\
             skills = [\"echo\"]\ndata_classes = [\"public\", \"internal\"]\n",
            agent.card_url, agent.base_url
        );
    let gw = InProcess::start(&config).await;

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
        connections.load(Ordering::SeqCst),
        1,
        "ten calls in a row, one upstream connection"
    );
}

/// Unary calls that are not message sends (here GetTask) and message sends share one pool: the
/// gateway has one HTTP stack to its agents, not pingora's proxy pool beside its own client's.
#[tokio::test]
async fn unary_calls_and_sends_share_one_upstream_connection() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let relay_url = format!("http://{}", listener.local_addr().unwrap());
    let agent = SdkAgent::start(&["--interface-base", &relay_url]);
    let connections = relay(listener, agent.addr);
    let config = config_head(&[])
        + &format!(
            "\n[[integrations]]\nname = \"pooled\"\ncard = \"{}\"\norigins = [\"{}\", \"{relay_url}\"]\n\
             skills = [\"echo\"]\ndata_classes = [\"public\", \"internal\"]\n",
            agent.card_url, agent.base_url
        );
    let gw = InProcess::start(&config).await;

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
        connections.load(Ordering::SeqCst),
        1,
        "GetTask and SendMessage alternating, one upstream connection"
    );
}

/// Relays like [`relay`], except that once `cut` is set the first connection is closed when the
/// next request arrives on it, without forwarding it: an agent that dropped a kept-alive
/// connection just as the gateway reused it.
fn relay_cutting_the_first(
    listener: tokio::net::TcpListener,
    to: std::net::SocketAddr,
    cut: Arc<std::sync::atomic::AtomicBool>,
) -> Arc<AtomicUsize> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let count = Arc::new(AtomicUsize::new(0));
    let seen = count.clone();
    tokio::spawn(async move {
        while let Ok((mut inbound, _)) = listener.accept().await {
            let first = seen.fetch_add(1, Ordering::SeqCst) == 0;
            let cut = cut.clone();
            tokio::spawn(async move {
                let Ok(mut outbound) = tokio::net::TcpStream::connect(to).await else {
                    return;
                };
                let (mut up, mut down) = ([0u8; 8192], [0u8; 8192]);
                loop {
                    tokio::select! {
                        n = inbound.read(&mut up) => match n {
                            Ok(0) | Err(_) => return,
                            // Dropping both sockets closes them: no answer to this request.
                            Ok(_) if first && cut.load(Ordering::SeqCst) => return,
                            Ok(n) => if outbound.write_all(&up[..n]).await.is_err() { return },
                        },
                        n = outbound.read(&mut down) => match n {
                            Ok(0) | Err(_) => return,
                            Ok(n) => if inbound.write_all(&down[..n]).await.is_err() { return },
                        },
                    }
                }
            });
        }
    });
    count
}

/// A gateway in front of the SDK agent through a relay that, once `cut` is set, closes its first
/// connection when the next request arrives on it (without forwarding it).
async fn gateway_with_a_cutting_relay() -> (
    InProcess,
    SdkAgent,
    Arc<std::sync::atomic::AtomicBool>,
    Arc<AtomicUsize>,
) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let relay_url = format!("http://{}", listener.local_addr().unwrap());
    let agent = SdkAgent::start(&["--interface-base", &relay_url]);
    let cut = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let connections = relay_cutting_the_first(listener, agent.addr, cut.clone());
    let config = config_head(&[])
        + &format!(
            "\n[[integrations]]\nname = \"pooled\"\ncard = \"{}\"\norigins = [\"{}\", \"{relay_url}\"]\n\
             skills = [\"echo\"]\ndata_classes = [\"public\", \"internal\"]\n",
            agent.card_url, agent.base_url
        );
    (InProcess::start(&config).await, agent, cut, connections)
}

fn get_task(id: &str) -> serde_json::Value {
    serde_json::json!({"jsonrpc": "2.0", "id": id, "method": "GetTask", "params": {"id": "no-such-task"}})
}

/// A pooled connection the agent closes when the next request arrives (before any answer) is
/// most often an agent closing an idle connection, and a read is then sent again, whole, on a
/// new connection: the caller gets the agent's answer.
#[tokio::test]
async fn a_read_whose_pooled_connection_closed_before_an_answer_is_retried_on_a_new_one() {
    let (gw, _agent, cut, connections) = gateway_with_a_cutting_relay().await;
    let (status, body) = gw.rpc("pooled", &get_task("g0"), &[]).await;
    assert_eq!(status, 200, "{body}");
    cut.store(true, Ordering::SeqCst);
    let (status, body) = gw.rpc("pooled", &get_task("g1"), &[]).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["id"], "g1", "the agent's answer: {body}");
    assert!(
        body.get("error").is_some() || body.get("result").is_some(),
        "{body}"
    );
    assert_eq!(
        connections.load(Ordering::SeqCst),
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
    let (gw, agent, cut, connections) = gateway_with_a_cutting_relay().await;
    let (status, body) = gw
        .rpc("pooled", &send_request("s0", "SendMessage", "hi"), &[])
        .await;
    assert_eq!(status, 200, "{body}");
    cut.store(true, Ordering::SeqCst);
    let (_, body) = gw
        .rpc("pooled", &send_request("s1", "SendMessage", "again"), &[])
        .await;
    assert_eq!(
        body["error"]["data"][0]["reason"], "UPSTREAM_UNAVAILABLE",
        "{body}"
    );
    assert_eq!(
        connections.load(Ordering::SeqCst),
        1,
        "no second connection"
    );
    assert_eq!(agent.seen_calls().await.len(), 1, "only the first send");
}
