//! A card's validation warnings reach the operator from the running gateway, not only from the
//! CLI: a real 0.3 peer (the official JS SDK 0.3.14 agent, `tests/peers/js03/agent.mjs
//! --no-protocol-version`) serves a card without `protocolVersion`, which the gateway reads as
//! "0.3.0" with a warning; that warning is logged once per card at refresh (with the integration's
//! name) and shown in `/readyz`'s integration entry and the planner view (process and loopback I/O).

use serde_json::Value;

use crate::common::SdkAgent;
use crate::common::gateway::{GatewayProc, config_head, integration, write_secret};

const TOKEN: &str = "warnings-admin-token-0123456789abcdef";
const WARNING: &str = "protocolVersion: absent from a 0.3 card: read as \"0.3.0\"";

/// The `card warning` lines the gateway logged (JSON) for `name`.
fn warning_lines(gw: &GatewayProc, name: &str) -> Vec<String> {
    let (lines, dropped) = gw.process.stderr_all();
    assert_eq!(dropped, 0);
    lines
        .iter()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["integration"] == name && v["message"] == "card warning")
        .map(|v| v["warning"].as_str().unwrap_or("?").to_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_0_3_card_without_protocol_version_warns_in_the_log_readyz_and_the_planner_view() {
    let agent = SdkAgent::start_js03(&["--no-protocol-version"]);
    let card = agent.card().await;
    assert!(card.get("protocolVersion").is_none(), "{card}");
    assert_eq!(card["preferredTransport"], "JSONRPC", "{card}");

    let dir = tempfile::tempdir().unwrap();
    write_secret(dir.path(), "admin.token", TOKEN);
    let mut config =
        config_head(&[]).replace("versions = [\"1.0\"]", "versions = [\"1.0\", \"0.3\"]");
    config += "[admin]\ntoken_file = \"admin.token\"\n[log]\nformat = \"json\"\n";
    config += &integration("js03", &agent.card_url, "");
    let gw = GatewayProc::start_in(dir, &config, &[]).await;

    // /readyz: the entry lists the warning, and the interface was read at 0.3.
    let ready = gw.readyz().await;
    let e = &ready["integrations"]["js03"];
    assert_eq!(e["interface"]["version"], "0.3", "{e}");
    let warnings: Vec<&str> = (e["warnings"].as_array())
        .unwrap_or_else(|| panic!("no warnings in {e}"))
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        warnings.iter().any(|w| w.starts_with(WARNING)),
        "{warnings:?}"
    );

    // The planner view: under `untrusted` (a warning names card fields and may quote values).
    let view = planner_view(&gw).await;
    let listed = view["untrusted"]["warnings"].as_array().cloned();
    assert!(
        listed
            .unwrap_or_default()
            .iter()
            .any(|w| w.as_str().is_some_and(|w| w.starts_with(WARNING))),
        "{view}"
    );

    // The log: the warning with the integration's name, once for this card.
    crate::assert_eventually!(
        !warning_lines(&gw, "js03").is_empty(),
        within = crate::common::eventually::DEFAULT_WITHIN,
        "no card warning logged:\n{}",
        gw.process.stderr_tail()
    );
    // A config change that keeps the card rebuilds the profile from the cached card (no fetch,
    // so no 304 short cut): the same card, so nothing is logged again.
    let changed = config.replace(
        &integration("js03", &agent.card_url, ""),
        &integration("js03", &agent.card_url, "streaming = \"off\""),
    );
    assert_ne!(changed, config);
    std::fs::write(gw.dir.path().join("gateway.toml"), &changed).unwrap();
    let hup = std::process::Command::new("kill")
        .args(["-HUP", &gw.process.pid().to_string()])
        .status()
        .unwrap();
    assert!(hup.success());
    // The planner view shows the new mode once the rebuilt state is installed, which is after
    // its build would have logged.
    crate::assert_eventually!(
        planner_view(&gw).await["streaming"]["mode"] == "off",
        within = crate::common::eventually::DEFAULT_WITHIN,
        "the reload was never applied:\n{}",
        gw.process.stderr_tail()
    );
    let logged = warning_lines(&gw, "js03");
    assert_eq!(
        logged.len(),
        1,
        "logged again for the same card: {logged:?}"
    );
    assert!(logged[0].starts_with(WARNING), "{logged:?}");
}

async fn planner_view(gw: &GatewayProc) -> Value {
    gw.admin_json("/v1/integrations/js03", TOKEN).await
}
