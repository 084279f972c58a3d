//! Upstream TLS: the official Python SDK agent serves HTTPS with a certificate generated at test
//! time (rcgen); the integration's `ca_file` makes the gateway trust it, for the card fetch and
//! for every call (unary and streaming, all through the gateway's one client on pingora's
//! connector).

use a2a_egress::testkit::IntegrationToml;

use crate::common::SdkAgent;
use crate::common::gateway::{
    GatewayProc, InProcess, config_head, integration, send_request, sse_events,
};
use crate::common::tls::TestPki;

async fn seen_over_tls(pki: &TestPki, agent: &SdkAgent) -> Vec<crate::common::Seen> {
    pki.client()
        .get(format!("https://{}/_test/seen", agent.addr))
        .send()
        .await
        .expect("GET /_test/seen over TLS")
        .json::<Vec<crate::common::Seen>>()
        .await
        .expect("seen list")
        .into_iter()
        .filter(|s| !s.is_card_fetch())
        .collect()
}

#[tokio::test]
async fn calls_reach_an_https_agent_trusted_through_ca_file() {
    let pki = TestPki::new(&["127.0.0.1", "localhost"]);
    let cert = pki.cert_path.display().to_string();
    let key = pki.key_path.display().to_string();
    let agent = SdkAgent::start(&[
        "--tls-cert",
        &cert,
        "--tls-key",
        &key,
        "--token",
        "tls-token",
    ]);
    assert!(agent.card_url.starts_with("https://"), "{}", agent.card_url);
    let config = config_head(&[])
        + &integration(
            "secure",
            &agent.card_url,
            &format!(
                "ca_file = \"{}\"\ncredential = {{ type = \"bearer\", env = \"TLS_TOKEN\" }}",
                pki.ca_path.display()
            ),
        )
        // The same agent without the CA: its certificate is not trusted, so it is unusable.
        + &integration("untrusted", &agent.card_url, "");
    let gw = GatewayProc::start(&config, &[("TLS_TOKEN", "tls-token")]).await;

    let ready = gw.readyz().await;
    assert_eq!(
        ready["integrations"]["secure"]["status"], "usable",
        "{ready}"
    );
    assert_eq!(
        ready["integrations"]["untrusted"]["status"], "unusable",
        "{ready}"
    );

    let (status, body) = gw
        .rpc(
            "secure",
            &send_request("t1", "SendMessage", "over tls"),
            &[],
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert!(body["result"]["task"].is_object(), "{body}");

    let (status, _, body) = gw
        .rpc_raw(
            "secure",
            &send_request("t2", "SendStreamingMessage", "stream over tls"),
            &[],
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert!(sse_events(&body).len() >= 2, "{body}");

    let seen = seen_over_tls(&pki, &agent).await;
    let methods: Vec<&str> = seen
        .iter()
        .filter_map(|s| s.rpc_method.as_deref())
        .collect();
    assert_eq!(methods, vec!["SendMessage", "SendStreamingMessage"]);
    assert!(
        seen.iter()
            .all(|s| s.authorization.as_deref() == Some("Bearer tls-token"))
    );

    let (_, body) = gw
        .rpc("untrusted", &send_request("t3", "SendMessage", "x"), &[])
        .await;
    assert_eq!(body["error"]["data"][0]["reason"], "NO_USABLE_PROFILE");
}

/// An integration whose card comes from `agent` (plain HTTP) and whose interface is the TLS
/// listener at `tls`, trusted through `ca`.
fn split_integration(
    name: &str,
    agent: &SdkAgent,
    tls: std::net::SocketAddr,
    ca: &TestPki,
) -> String {
    split_integration_trusting(name, agent, tls, Some(ca))
}

/// As [`split_integration`], with `ca_file` only when `ca` is given.
fn split_integration_trusting(
    name: &str,
    agent: &SdkAgent,
    tls: std::net::SocketAddr,
    ca: Option<&TestPki>,
) -> String {
    let ca_file = ca.map_or(String::new(), |ca| {
        format!("ca_file = \"{}\"\n", ca.ca_path.display())
    });
    IntegrationToml::new(name, &agent.card_url)
        .origins(&[&agent.base_url, &format!("https://{tls}")])
        .extra(&ca_file)
        .text()
}

/// One decision of which roots verify an agent, for its card fetches and its calls: with the
/// integration's `ca_file` the card fetch and calls on both forwarding paths reach the HTTPS
/// agent; without it the card fetch is refused (the integration is unusable) and, when the card
/// comes over plain HTTP, every call is refused with UPSTREAM_CERTIFICATE_UNKNOWN.
#[tokio::test]
async fn the_card_fetch_and_the_calls_trust_the_same_roots() {
    let pki = TestPki::new(&["127.0.0.1", "localhost"]);
    let (cert, key) = (
        pki.cert_path.display().to_string(),
        pki.key_path.display().to_string(),
    );
    let tls = SdkAgent::start(&["--tls-cert", &cert, "--tls-key", &key]);
    let tls_base = format!("https://{}", tls.addr);
    // Serves its card over plain HTTP, naming the TLS agent's interfaces.
    let plain = SdkAgent::start(&["--interface-base", &tls_base]);
    let ca = format!("ca_file = \"{}\"", pki.ca_path.display());
    let config = config_head(&[])
        + &integration("card_trusted", &tls.card_url, &ca)
        + &integration("card_untrusted", &tls.card_url, "")
        + &split_integration_trusting("calls_trusted", &plain, tls.addr, Some(&pki))
        + &split_integration_trusting("calls_untrusted", &plain, tls.addr, None);
    let gw = InProcess::start(&config).await;
    let ready = gw.readyz().await;
    for usable in ["card_trusted", "calls_trusted", "calls_untrusted"] {
        assert_eq!(ready["integrations"][usable]["status"], "usable", "{ready}");
    }
    assert_eq!(
        ready["integrations"]["card_untrusted"]["status"], "unusable",
        "{ready}"
    );
    let reason = ready["integrations"]["card_untrusted"]["reason"].to_string();
    assert!(
        reason.contains("certificate") || reason.contains("UnknownIssuer"),
        "{reason}"
    );

    let calls = [
        send_request("s", "SendMessage", "hi"),
        serde_json::json!({"jsonrpc": "2.0", "id": "g", "method": "GetTask", "params": {"id": "x"}}),
    ];
    for call in &calls {
        for name in ["card_trusted", "calls_trusted"] {
            let (status, _, body) = gw.rpc_raw(name, call, &[]).await;
            let what = format!("{name} {}: HTTP {status} {body}", call["method"]);
            assert_eq!(status, 200, "{what}");
            assert!(!body.contains("a2a-egress"), "the agent answered: {what}");
        }
        let (status, _, body) = gw.rpc_raw("calls_untrusted", call, &[]).await;
        let what = format!("calls_untrusted {}: HTTP {status} {body}", call["method"]);
        assert_eq!(status, 502, "{what}");
        let v: serde_json::Value = serde_json::from_str(&body).expect(&what);
        assert_eq!(
            v["error"]["data"][0]["reason"], "UPSTREAM_CERTIFICATE_UNKNOWN",
            "{what}"
        );
    }
}

/// A certificate the gateway must refuse (unknown CA, wrong name, expired) is a 502 in the
/// caller's protocol whose reason says which, for a call whose answer is passed on as it arrives
/// (GetTask), one whose answer is held whole (SendMessage) and a stream (SendStreamingMessage). The card comes over plain HTTP from an SDK agent
/// whose card points its interface at a TLS listener presenting the bad certificate.
#[tokio::test]
async fn each_certificate_fault_is_a_502_naming_it_for_every_kind_of_call() {
    use crate::common::tls::TlsListener;

    let pki = TestPki::new(&["127.0.0.1"]);
    let stranger = TestPki::with_ca_name("some other CA", &["127.0.0.1"]);
    let wrong_name = pki.leaf("wrong-name", &["other.example"], false);
    let expired = pki.leaf("expired", &["127.0.0.1"], true);
    let cases = [
        (
            "unknown",
            TlsListener::start(&crate::common::tls::Leaf {
                cert_path: stranger.cert_path.clone(),
                key_path: stranger.key_path.clone(),
            })
            .await,
            "UPSTREAM_CERTIFICATE_UNKNOWN",
        ),
        (
            "mismatch",
            TlsListener::start(&wrong_name).await,
            "UPSTREAM_CERTIFICATE_NAME_MISMATCH",
        ),
        (
            "expired",
            TlsListener::start(&expired).await,
            "UPSTREAM_CERTIFICATE_EXPIRED",
        ),
    ];
    let mut agents = Vec::new();
    let mut config = config_head(&[]);
    for (name, listener, _) in &cases {
        let base = format!("https://{}", listener.addr);
        let agent = SdkAgent::start(&["--interface-base", &base]);
        config += &split_integration(name, &agent, listener.addr, &pki);
        agents.push(agent);
    }
    let gw = InProcess::start(&config).await;
    let ready = gw.readyz().await;
    for (name, listener, reason) in &cases {
        assert_eq!(ready["integrations"][name]["status"], "usable", "{ready}");
        let calls = [
            send_request("s", "SendMessage", "hi"),
            send_request("t", "SendStreamingMessage", "hi"),
            serde_json::json!({"jsonrpc": "2.0", "id": "g", "method": "GetTask", "params": {"id": "x"}}),
        ];
        for call in &calls {
            let (status, _, body) = gw.rpc_raw(name, call, &[]).await;
            let what = format!("{name} {}: HTTP {status} {body}", call["method"]);
            assert_eq!(status, 502, "{what}");
            let v: serde_json::Value = serde_json::from_str(&body).expect(&what);
            assert_eq!(v["error"]["data"][0]["reason"], *reason, "{what}");
            assert_eq!(v["error"]["data"][0]["domain"], "a2a-egress", "{what}");
        }
        assert!(
            listener.accepted.load(std::sync::atomic::Ordering::SeqCst) >= 3,
            "{name}: every call tried the TLS interface"
        );
    }
}
