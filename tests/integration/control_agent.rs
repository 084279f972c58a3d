//! The control plane against the real bundled reference agent (a child process on 127.0.0.1:0)
//! whose registry is edited while both run: the profile follows within the refresh period, and at
//! once after a stale mark (what the data plane sends on a runtime error); revalidation uses 304s
//! that the agent itself logs; two credentials with different scopes each see their own extended card.

use std::path::Path;
use std::sync::Arc;

use crate::common::control::start;
use crate::common::ref_agent::{PARTNER_TOKEN, RefAgent, VIEWER_TOKEN};
use a2a_egress::config::Config;
use a2a_egress::control::refresh::ControlHandle;
use a2a_egress::control::schedule::RefreshResult;
use a2a_egress::profile::Profile;
use a2a_egress::state::Status;

/// The sample registry with a 1-second card max-age (so the agent asks for fast revalidation).
fn registry_text() -> String {
    let t = RefAgent::sample_registry_text();
    assert!(
        t.contains("card_max_age_secs = 300"),
        "sample registry changed shape"
    );
    t.replace("card_max_age_secs = 300", "card_max_age_secs = 1")
}

fn gateway_config(dir: &Path, agent: &RefAgent, refresh: &str, integrations: &str) -> Config {
    gateway_config_for(dir, &agent.card_url, &agent.base_url, refresh, integrations)
}

fn gateway_config_for(
    dir: &Path,
    card: &str,
    origin: &str,
    refresh: &str,
    integrations: &str,
) -> Config {
    let text = format!(
        "[client]\nallow_plain_http = true\nextensions = [\"https://example.com/ext/trace/v1\"]\n\
         [refresh]\n{refresh}\njitter = 0.0\nstale_debounce = \"50ms\"\nstale_min_interval = \"100ms\"\n\
         {integrations}",
    )
    .replace("{card}", card)
    .replace("{origin}", origin);
    let path = dir.join("gateway.toml");
    std::fs::write(&path, &text).unwrap();
    Config::load(&path).expect("test gateway config")
}

const ECHO: &str = "[[integrations]]\nname = \"echo\"\ncard = \"{card}\"\norigins = [\"{origin}\"]\n\
                    skills = [\"echo\"]\ndata_classes = [\"internal\"]\n";

fn profile(h: &ControlHandle, name: &str) -> Option<Arc<Profile>> {
    h.store()
        .load()
        .get(name)
        .and_then(|s| s.profile().cloned())
}

/// Waits until the integration's profile satisfies `pred` (bounded; polls every 20 ms).
async fn until(
    h: &ControlHandle,
    name: &str,
    what: &str,
    pred: impl Fn(&Profile, &Status) -> bool,
) {
    crate::assert_eventually!(
        h.store()
            .load()
            .get(name)
            .is_some_and(|s| s.profile().is_some_and(|p| pred(p, &s.status))),
        "{name}: profile never became {what}: {:?}",
        h.store().load().get(name)
    );
}

/// Edits the registry file and makes the agent reload it now (SIGHUP), then waits until the
/// agent serves the change, so the test measures the gateway, not the agent's reload.
async fn edit(
    agent: &RefAgent,
    path: &Path,
    text: &str,
    served: impl Fn(&serde_json::Value) -> bool,
) {
    std::fs::write(path, text).unwrap();
    agent.sighup();
    agent.wait_for_card(served).await;
}

fn card_served_304s(agent: &RefAgent) -> usize {
    agent
        .process
        .stderr_tail()
        .lines()
        .filter(|l| l.contains("agent card served") && l.contains("304"))
        .count()
}

#[tokio::test]
async fn the_profile_follows_registry_changes_within_the_refresh_period() {
    let dir = tempfile::tempdir().unwrap();
    let mut text = registry_text();
    let reg = RefAgent::write_registry(dir.path(), "registry.toml", &text);
    let agent = RefAgent::start(&reg, &RefAgent::demo_envs());
    let h = start(gateway_config(
        dir.path(),
        &agent,
        "min = \"1s\"\nmax = \"2s\"",
        ECHO,
    ));
    until(&h, "echo", "usable", |p, s| s.is_usable() && p.streaming).await;
    let first = profile(&h, "echo").unwrap();
    assert!(first.skills.contains_key("lookup-invoice"));

    // Unchanged card: revalidated with If-None-Match, and the agent answers 304.
    crate::assert_eventually!(
        h.metrics()
            .refresh_count("echo", RefreshResult::NotModified)
            >= 1,
        "the unchanged card was never revalidated"
    );
    // The gateway counts the 304 before the agent's log line is written: wait for it.
    crate::assert_eventually!(
        card_served_304s(&agent) >= 1,
        "the agent logged no 304:\n{}",
        agent.process.stderr_tail()
    );
    assert!(
        Arc::ptr_eq(&first, &profile(&h, "echo").unwrap()),
        "a 304 recompiles nothing"
    );

    // 1. Streaming switched off.
    text = text.replacen("streaming = true", "streaming = false", 1);
    edit(&agent, &reg, &text, |c| {
        c["capabilities"]["streaming"] != true
    })
    .await;
    until(&h, "echo", "non-streaming", |p, _| !p.streaming).await;

    // 2. A skill removed (the registry requires a removed capability to name its replacement).
    assert!(first.skills.contains_key("stream-report"));
    text = text.replacen(
        "id = \"stream-report\"\nstate = \"ga\"",
        "id = \"stream-report\"\nstate = \"removed\"\nreplacement = \"echo\"",
        1,
    );
    edit(&agent, &reg, &text, |c| {
        !c["skills"].to_string().contains("stream-report")
    })
    .await;
    until(&h, "echo", "without stream-report", |p, _| {
        !p.skills.contains_key("stream-report")
    })
    .await;
    assert!(profile(&h, "echo").unwrap().skills.contains_key("echo"));

    // 3. The agent's version dropped back.
    text = text.replacen("version = \"1.4.0\"", "version = \"1.3.0\"", 1);
    edit(&agent, &reg, &text, |c| {
        c["version"]
            .as_str()
            .is_some_and(|v| v.starts_with("1.3.0"))
    })
    .await;
    until(&h, "echo", "at agent version 1.3.0", |p, _| {
        p.agent_version.starts_with("1.3.0")
    })
    .await;

    // 4. The JSON-RPC interface (the chosen one) dropped: the profile moves to HTTP+JSON.
    text = text.replacen(
        "[[agent.interfaces]]           # preference order: JSON-RPC first\nbinding = \"JSONRPC\"\npath = \"/a2a/jsonrpc\"\nprotocol_version = \"1.0\"\n",
        "",
        1,
    );
    edit(&agent, &reg, &text, |c| {
        !c["supportedInterfaces"].to_string().contains("JSONRPC")
    })
    .await;
    until(&h, "echo", "on HTTP+JSON", |p, _| {
        p.interface
            .as_ref()
            .is_some_and(|i| i.binding == a2a_egress::profile::Binding::HttpJson)
    })
    .await;

    // 5. A required extension the gateway does not know: the profile becomes unusable.
    text.push_str("\n[[extensions]]\nuri = \"https://example.com/ext/mandatory/v9\"\ndescription = \"must\"\nrequired = true\n");
    edit(&agent, &reg, &text, |c| {
        c.to_string().contains("mandatory/v9")
    })
    .await;
    until(&h, "echo", "unusable", |p, s| {
        !p.is_usable() && matches!(s, Status::Unusable { .. })
    })
    .await;
    assert!(h.metrics().refresh_count("echo", RefreshResult::Changed) >= 6);
    h.shutdown();
}

#[tokio::test]
async fn a_stale_mark_refreshes_at_once_despite_a_long_period() {
    let dir = tempfile::tempdir().unwrap();
    let text = registry_text();
    let reg = RefAgent::write_registry(dir.path(), "registry.toml", &text);
    let agent = RefAgent::start(&reg, &RefAgent::demo_envs());
    let h = start(gateway_config(
        dir.path(),
        &agent,
        "min = \"1h\"\nmax = \"2h\"",
        ECHO,
    ));
    until(&h, "echo", "usable", |p, _| p.streaming).await;
    let used = profile(&h, "echo").unwrap();

    let off = text.replacen("streaming = true", "streaming = false", 1);
    edit(&agent, &reg, &off, |c| {
        c["capabilities"]["streaming"] != true
    })
    .await;
    // Nothing refreshes on its own within the hour: the card's max-age of 1 s is raised to
    // `min`, so the next periodic fetch is an hour after the last one (the worker's own record
    // of the period it scheduled), and the profile the edit would change is still the old one.
    let period = h.metrics().interval.with_label_values(&["echo"]).get();
    assert_eq!(period, 3600.0, "the next periodic refresh is `min` away");
    assert_eq!(
        h.metrics().refresh_count("echo", RefreshResult::Changed),
        1,
        "only the first fetch installed a profile"
    );
    assert!(profile(&h, "echo").unwrap().streaming);

    // What the data plane does on -32004/-32005/-32008/-32009: a stale mark, then (for -32008 and
    // -32009) the retry hook, which reports whether the profile the call used is now outdated.
    h.mark_stale("echo");
    until(&h, "echo", "non-streaming", |p, _| !p.streaming).await;
    let r = h.refresh_after_error("echo", &used).await.unwrap();
    assert_eq!(r.result, RefreshResult::Changed, "{r:?}");
    h.shutdown();
}

#[tokio::test]
async fn two_credentials_see_their_own_extended_cards() {
    let dir = tempfile::tempdir().unwrap();
    let reg = RefAgent::write_registry(dir.path(), "registry.toml", &registry_text());
    let agent = RefAgent::start(&reg, &RefAgent::demo_envs());
    std::fs::write(dir.path().join("partner.token"), PARTNER_TOKEN).unwrap();
    std::fs::write(dir.path().join("viewer.token"), VIEWER_TOKEN).unwrap();
    let integrations = format!(
        "{}credential = {{ type = \"bearer\", file = \"partner.token\" }}\n{}credential = {{ type = \"bearer\", file = \"viewer.token\" }}\n",
        ECHO.replace("name = \"echo\"", "name = \"partner\""),
        ECHO.replace("name = \"echo\"", "name = \"viewer\""),
    );
    let h = start(gateway_config(
        dir.path(),
        &agent,
        "min = \"1h\"",
        &integrations,
    ));
    until(&h, "partner", "usable", |_, s| s.is_usable()).await;
    until(&h, "viewer", "usable", |_, s| s.is_usable()).await;

    let snap = h.store().load();
    let partner = snap.get("partner").unwrap();
    let viewer = snap.get("viewer").unwrap();
    let pe = partner
        .freshness
        .extended
        .as_ref()
        .expect("partner asked for the extended card");
    let ve = viewer
        .freshness
        .extended
        .as_ref()
        .expect("viewer asked for the extended card");
    assert!(pe.used && ve.used, "{pe:?} {ve:?}");
    assert_ne!(pe.identity, ve.identity, "identities differ");
    assert!(!pe.identity.contains(PARTNER_TOKEN) && !ve.identity.contains(VIEWER_TOKEN));
    let pskills = &partner.profile().unwrap().skills;
    let vskills = &viewer.profile().unwrap().skills;
    assert!(
        pskills.contains_key("reconcile-invoice"),
        "partner (scope recon.run) sees it: {:?}",
        pskills.keys()
    );
    assert!(
        !vskills.contains_key("reconcile-invoice"),
        "viewer (no scopes) must not: {:?}",
        vskills.keys()
    );
    assert!(pskills.contains_key("echo") && vskills.contains_key("echo"));
    // The public card does not list the partner-only skill at all.
    let public = agent.card().await;
    assert!(!public["skills"].to_string().contains("reconcile-invoice"));
    h.shutdown();
}

#[tokio::test]
async fn the_extended_card_over_http_json() {
    let dir = tempfile::tempdir().unwrap();
    // Only the HTTP+JSON interface: GetExtendedAgentCard is `GET {url}/extendedAgentCard`.
    let text = registry_text().replacen(
        "[[agent.interfaces]]           # preference order: JSON-RPC first\nbinding = \"JSONRPC\"\npath = \"/a2a/jsonrpc\"\nprotocol_version = \"1.0\"\n",
        "",
        1,
    );
    let reg = RefAgent::write_registry(dir.path(), "registry.toml", &text);
    let agent = RefAgent::start(&reg, &RefAgent::demo_envs());
    std::fs::write(dir.path().join("partner.token"), PARTNER_TOKEN).unwrap();
    let integrations = format!(
        "{}credential = {{ type = \"bearer\", file = \"partner.token\" }}\n",
        ECHO.replace("name = \"echo\"", "name = \"partner\""),
    );
    let h = start(gateway_config(
        dir.path(),
        &agent,
        "min = \"1h\"",
        &integrations,
    ));
    until(&h, "partner", "usable over HTTP+JSON", |p, s| {
        s.is_usable()
            && p.interface
                .as_ref()
                .is_some_and(|i| i.binding == a2a_egress::profile::Binding::HttpJson)
    })
    .await;
    let snap = h.store().load();
    let s = snap.get("partner").unwrap();
    assert!(
        s.freshness.extended.as_ref().is_some_and(|e| e.used),
        "{:?}",
        s.freshness.extended
    );
    assert!(
        s.profile()
            .unwrap()
            .skills
            .contains_key("reconcile-invoice")
    );

    h.shutdown();
}

#[tokio::test]
async fn a_restart_with_the_agent_down_keeps_this_credentials_extended_card() {
    let dir = tempfile::tempdir().unwrap();
    let reg = RefAgent::write_registry(dir.path(), "registry.toml", &registry_text());
    let agent = RefAgent::start(&reg, &RefAgent::demo_envs());
    std::fs::write(dir.path().join("partner.token"), PARTNER_TOKEN).unwrap();
    let integrations = format!(
        "[state]\ndir = \"state\"\n{}credential = {{ type = \"bearer\", file = \"partner.token\" }}\n",
        ECHO.replace("name = \"echo\"", "name = \"partner\""),
    );
    let config = gateway_config(dir.path(), &agent, "min = \"1h\"", &integrations);
    let h = start(config.clone());
    until(&h, "partner", "usable with the partner skill", |p, s| {
        s.is_usable() && p.skills.contains_key("reconcile-invoice")
    })
    .await;
    h.shutdown();
    let saved: Vec<String> = std::fs::read_dir(dir.path().join("state"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        saved.iter().any(|n| n.starts_with("partner.extended.")),
        "{saved:?}"
    );
    assert!(
        saved.iter().all(|n| !n.contains(PARTNER_TOKEN)),
        "file names carry a digest, never the token: {saved:?}"
    );

    let (card_url, base_url) = (agent.card_url.clone(), agent.base_url.clone());
    drop(agent); // the agent goes down
    let h = start(config);
    until(
        &h,
        "partner",
        "served from disk with the partner skill",
        |p, s| s.is_usable() && p.skills.contains_key("reconcile-invoice"),
    )
    .await;
    assert!(
        h.store()
            .load()
            .get("partner")
            .unwrap()
            .freshness
            .unrevalidated
    );

    // Another credential must not pick up the saved view.
    std::fs::write(dir.path().join("partner.token"), VIEWER_TOKEN).unwrap();
    let other = start(gateway_config_for(
        dir.path(),
        &card_url,
        &base_url,
        "min = \"1h\"",
        &integrations,
    ));
    until(
        &other,
        "partner",
        "served from disk without the partner skill",
        |p, s| s.is_usable() && !p.skills.contains_key("reconcile-invoice"),
    )
    .await;
    h.shutdown();
    other.shutdown();
}
