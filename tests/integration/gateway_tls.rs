//! Upstream TLS: the official Python SDK agent serves HTTPS with a certificate generated at test
//! time (rcgen); the integration's `ca_file` makes the gateway trust it, for the card fetch, the
//! pingora path (unary calls) and the gateway's own client (streams).

use crate::common::SdkAgent;
use crate::common::gateway::{GatewayProc, config_head, integration, send_request, sse_events};
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
