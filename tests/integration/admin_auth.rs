//! Who may reach the gateway, through the real binary: listeners on a non-loopback interface need
//! an explicit opt-in (and the admin listener a token), the admin listener's mutating routes need
//! the bearer token when one is configured, and forced refreshes are rate-limited per integration.

use std::os::unix::fs::PermissionsExt as _;
use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;

use crate::common::RefAgent;
use crate::common::gateway::{Endpoints, InProcess, config_head, integration, metric};

const TOKEN: &str = "s3cret-admin-token-0123456789";

/// Runs `serve` with `config`; returns its exit code and stderr if it exits within 30 s, or
/// `None` (after killing it) if it started serving.
fn serve_refuses(config: &str) -> Option<(Option<i32>, String)> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("gateway.toml");
    std::fs::write(&path, config).unwrap();
    let mut child = crate::common::gateway_cmd()
        .arg("serve")
        .arg("--config")
        .arg(&path)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    if let Some(status) = crate::common::process::wait_exit(&mut child, Duration::from_secs(30)) {
        let mut err = String::new();
        use std::io::Read as _;
        let _ = child.stderr.take().unwrap().read_to_string(&mut err);
        return Some((status.code(), err));
    }
    let _ = child.kill();
    let _ = child.wait();
    None
}

#[test]
fn serve_refuses_a_non_loopback_listener_without_the_opt_in() {
    let (code, err) = serve_refuses("[listen]\nproxy = \"0.0.0.0:0\"\nadmin = \"127.0.0.1:0\"\n")
        .expect("serve started with listen.proxy on 0.0.0.0 and no opt-in");
    assert_ne!(code, Some(0), "{err}");
    assert!(err.contains("listen.allow_non_loopback"), "{err}");

    // With the opt-in, a non-loopback admin listener still needs a token.
    let (code, err) = serve_refuses(
        "[listen]\nallow_non_loopback = true\nproxy = \"127.0.0.1:0\"\nadmin = \"0.0.0.0:0\"\n",
    )
    .expect("serve started with listen.admin on 0.0.0.0 and no admin token");
    assert_ne!(code, Some(0), "{err}");
    assert!(err.contains("admin.token_file"), "{err}");
}

async fn gateway(admin: &str) -> (RefAgent, InProcess) {
    let agent = RefAgent::sample();
    let dir = tempfile::tempdir().unwrap();
    let token = dir.path().join("admin.token");
    std::fs::write(&token, format!("{TOKEN}\n")).unwrap();
    std::fs::set_permissions(&token, std::fs::Permissions::from_mode(0o600)).unwrap();
    let config = config_head(&[])
        + "[refresh]\nmin = \"1h\"\n"
        + admin
        + &integration("ref", &agent.card_url, "");
    let gw = InProcess::start_in(dir, &config).await;
    (agent, gw)
}

async fn post_refresh(gw: &Endpoints, auth: Option<&str>) -> reqwest::Response {
    let mut req =
        crate::common::http().post(format!("http://{}/v1/integrations/ref/refresh", gw.admin));
    if let Some(a) = auth {
        req = req.header("authorization", a);
    }
    req.send().await.unwrap()
}

fn assert_status_body(body: &Value, code: u16, status: &str, reason: &str) {
    assert_eq!(body["error"]["code"], code, "{body}");
    assert_eq!(body["error"]["status"], status, "{body}");
    let info = &body["error"]["details"][0];
    assert_eq!(
        info["@type"], "type.googleapis.com/google.rpc.ErrorInfo",
        "{body}"
    );
    assert_eq!(info["domain"], "a2a-egress", "{body}");
    assert_eq!(info["reason"], reason, "{body}");
}

#[tokio::test]
async fn mutating_admin_routes_need_the_bearer_token() {
    let (_agent, gw) =
        gateway("[admin]\ntoken_file = \"admin.token\"\nrefresh_min_interval = \"0s\"\n").await;
    for auth in [
        None,
        Some("Bearer wrong-token"),
        Some("Bearer s3cret-admin-token-012345678"),
        Some("Basic czNjcmV0LWFkbWluLXRva2VuLTAxMjM0NTY3ODk="),
        Some(TOKEN),
    ] {
        let r = post_refresh(&gw, auth).await;
        assert_eq!(r.status(), 401, "{auth:?}");
        let www = r
            .headers()
            .get("www-authenticate")
            .map(|v| v.to_str().unwrap().to_owned());
        assert!(
            www.as_deref().is_some_and(|v| v.starts_with("Bearer")),
            "{www:?}"
        );
        let body: Value = r.json().await.unwrap();
        assert_status_body(&body, 401, "UNAUTHENTICATED", "UNAUTHENTICATED");
    }
    let r = post_refresh(&gw, Some(&format!("Bearer {TOKEN}"))).await;
    assert_eq!(r.status(), 200);
    let r = post_refresh(&gw, Some(&format!("bearer {TOKEN}"))).await;
    assert_eq!(
        r.status(),
        200,
        "the scheme is case-insensitive (RFC 9110 11.1)"
    );

    // Reading stays open: health, readiness and metrics need no token.
    let m = gw.metrics().await;
    assert_eq!(gw.readyz().await["ready"], true);
    assert_eq!(
        metric(
            &m,
            "a2a_egress_admin_refusals_total",
            &[("reason", "UNAUTHENTICATED")]
        ),
        5.0,
        "{m}"
    );
}

#[tokio::test]
async fn forced_refreshes_are_rate_limited_per_integration() {
    let (_agent, gw) =
        gateway("[admin]\ntoken_file = \"admin.token\"\nrefresh_min_interval = \"1h\"\n").await;
    let auth = format!("Bearer {TOKEN}");
    let r = post_refresh(&gw, Some(&auth)).await;
    assert_eq!(r.status(), 200);
    let r = post_refresh(&gw, Some(&auth)).await;
    assert_eq!(r.status(), 429);
    let retry: u64 = r
        .headers()
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok())
        .expect("Retry-After in seconds");
    assert!(retry > 0 && retry <= 3600, "{retry}");
    let body: Value = r.json().await.unwrap();
    assert_status_body(&body, 429, "RESOURCE_EXHAUSTED", "REFRESH_RATE_LIMITED");
    // Unknown integrations are still 404, and are not remembered.
    let r = crate::common::http()
        .post(format!("http://{}/v1/integrations/nope/refresh", gw.admin))
        .header("authorization", &auth)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
    let m = gw.metrics().await;
    assert_eq!(
        metric(
            &m,
            "a2a_egress_admin_refusals_total",
            &[("reason", "REFRESH_RATE_LIMITED")]
        ),
        1.0,
        "{m}"
    );
}

/// `GET /readyz` with `[admin] token_file` set: without a token only readiness and each
/// integration's status; with a wrong one 401 (counted); with the token, the whole account (reasons, lock, evidence,
/// claims naming skills). The kubelet needs none of the detail, and off loopback the pod network
/// reaches the admin port (on main, everything was shown to anyone).
#[tokio::test]
async fn readyz_without_the_token_shows_readiness_and_status_only() {
    let (_agent, gw) = gateway("[admin]\ntoken_file = \"admin.token\"\n").await;
    let read = |auth: Option<String>| {
        let mut req = crate::common::http().get(format!("http://{}/readyz", gw.admin));
        if let Some(a) = auth {
            req = req.header("authorization", a);
        }
        async move {
            let r = req.send().await.unwrap();
            (r.status().as_u16(), r.text().await.unwrap())
        }
    };
    let (code, full) = read(Some(format!("Bearer {TOKEN}"))).await;
    assert_eq!(code, 200, "{full}");
    let full: Value = serde_json::from_str(&full).unwrap();
    let entry = &full["integrations"]["ref"];
    assert_eq!(entry["status"], "usable", "{full}");
    for detail in ["lock", "claims", "evidence", "probes", "interface"] {
        assert!(
            entry.get(detail).is_some(),
            "{detail} missing with the token: {full}"
        );
    }
    assert!(
        full.get("runtime").is_some() || full.get("control").is_some(),
        "{full}"
    );
    let skills: Vec<String> = entry["claims"]
        .as_array()
        .expect("claims")
        .iter()
        .filter_map(|c| {
            c["claim"]
                .as_str()
                .or(c["name"].as_str())
                .map(str::to_owned)
        })
        .collect();
    assert!(!skills.is_empty(), "no claims to look for: {full}");
    {
        let auth: Option<String> = None;
        let (code, text) = read(auth.clone()).await;
        assert_eq!(code, 200, "{auth:?}: {text}");
        let v: Value = serde_json::from_str(&text).unwrap();
        let mut keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
        keys.sort_unstable();
        assert_eq!(
            keys,
            ["detail", "draining", "integrations", "ready"],
            "{auth:?}: {v}"
        );
        assert_eq!(v["ready"], true, "{v}");
        assert_eq!(
            v["integrations"]["ref"],
            serde_json::json!({"status": "usable"}),
            "{v}"
        );
        for s in &skills {
            assert!(
                !text.contains(s.as_str()),
                "{auth:?}: {s:?} shown without the token: {text}"
            );
        }
    }
    // A probe without the token is no refusal: nothing counted.
    let m = gw.metrics().await;
    let refused = [("reason", "UNAUTHENTICATED")];
    assert_eq!(
        metric(&m, "a2a_egress_admin_refusals_total", &refused),
        0.0,
        "{m}"
    );
    // A wrong token is refused and counted: the page must not be a silent oracle for guessing.
    let (code, text) = read(Some("Bearer wrong-token-0123456789".to_owned())).await;
    assert_eq!(code, 401, "{text}");
    assert!(!text.contains("\"integrations\""), "{text}");
    let m = gw.metrics().await;
    assert_eq!(
        metric(&m, "a2a_egress_admin_refusals_total", &refused),
        1.0,
        "{m}"
    );
}
