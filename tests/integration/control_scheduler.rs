//! The refresh scheduler on paused tokio time, against a scripted card source: periods from
//! max-age, 304s without recompilation, exponential backoff, last-good-kept on failure, debounced
//! stale marks, coalesced forced refreshes, the retry hook, stale marks raised inside the rate limit
//! (deferred, never dropped), a panicking card source (the worker is restarted with backoff), and
//! config reload by difference.
//!
//! Paused time makes the schedule exact and instant; the scripted source stands in for the network
//! because real sockets and auto-advancing timers do not mix (a fetch timeout would fire while a
//! socket waits). The real-network behaviour is covered by `control_fetch` and `control_agent`.

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use a2a_egress::config::Config;
use a2a_egress::control::extended::{ExtendedError, ExtendedOutcome};
use a2a_egress::control::fetch::{FetchError, FetchOutcome, FetchPolicy, Validators};
use a2a_egress::control::metrics::ControlMetrics;
use a2a_egress::control::refresh::{CardSource, ControlError, ControlHandle};
use a2a_egress::control::schedule::RefreshResult;
use a2a_egress::profile::Interface;
use a2a_egress::state::{Status, Store};
use a2a_egress::testkit::{CardJson, IntegrationToml};
use http::HeaderValue;
use tokio::time::Instant;

fn card(streaming: bool, agent_version: &str) -> String {
    CardJson::new("http://127.0.0.1:9/")
        .version(agent_version)
        .streaming(streaming)
        .text()
}

/// A scripted agent: serves `body` with an ETag derived from it and answers matching
/// `If-None-Match` with 304; `down` makes every fetch fail; `delay` makes fetches slow.
struct Script {
    body: Mutex<String>,
    max_age: Option<Duration>,
    down: AtomicBool,
    delay: Mutex<Duration>,
    fetches: AtomicUsize,
    not_modified: AtomicUsize,
    times: Mutex<Vec<Instant>>,
    /// 1-based numbers of the fetches that panic (a bug anywhere below the worker).
    panics: Mutex<Vec<usize>>,
}

impl Script {
    fn new(body: String, max_age: Option<Duration>) -> Arc<Self> {
        Arc::new(Script {
            body: Mutex::new(body),
            max_age,
            down: AtomicBool::new(false),
            delay: Mutex::new(Duration::ZERO),
            fetches: AtomicUsize::new(0),
            not_modified: AtomicUsize::new(0),
            times: Mutex::new(Vec::new()),
            panics: Mutex::new(Vec::new()),
        })
    }
    fn set(&self, body: String) {
        *self.body.lock().unwrap() = body;
    }
    fn fetches(&self) -> usize {
        self.fetches.load(Ordering::SeqCst)
    }
}

fn etag(body: &str) -> String {
    use sha2::Digest;
    format!(
        "W/\"{}\"",
        hex::encode(&sha2::Sha256::digest(body.as_bytes())[..8])
    )
}

#[async_trait::async_trait]
impl CardSource for Script {
    async fn fetch(
        &self,
        url: &str,
        _policy: &FetchPolicy,
        validators: Option<&Validators>,
    ) -> Result<FetchOutcome, FetchError> {
        let n = self.fetches.fetch_add(1, Ordering::SeqCst) + 1;
        self.times.lock().unwrap().push(Instant::now());
        let panics = self.panics.lock().unwrap().contains(&n);
        if panics {
            panic!("scripted panic in fetch {n}");
        }
        let delay = *self.delay.lock().unwrap();
        if !delay.is_zero() {
            tokio::time::sleep(delay).await;
        }
        if self.down.load(Ordering::SeqCst) {
            return Err(FetchError::Transport {
                url: url.into(),
                reason: "connection refused".into(),
            });
        }
        let body = self.body.lock().unwrap().clone();
        let tag = etag(&body);
        if validators.and_then(|v| v.etag.as_deref()) == Some(tag.as_str()) {
            self.not_modified.fetch_add(1, Ordering::SeqCst);
            return Ok(FetchOutcome::NotModified {
                validators: Validators {
                    etag: Some(tag),
                    last_modified: None,
                },
                max_age: self.max_age,
            });
        }
        Ok(FetchOutcome::Fetched {
            bytes: body.into_bytes().into(),
            validators: Validators {
                etag: Some(tag),
                last_modified: None,
            },
            max_age: self.max_age,
            origin: "http://127.0.0.1:9".into(),
            url: url.into(),
        })
    }

    async fn extended(
        &self,
        _iface: &Interface,
        _tenant: Option<&str>,
        _authorization: &HeaderValue,
        _policy: &FetchPolicy,
    ) -> Result<ExtendedOutcome, ExtendedError> {
        unreachable!("these cards offer no extended card")
    }
}

fn config(extra: &str, integrations: &[&str]) -> Config {
    let mut text = format!(
        "[client]\nallow_plain_http = true\n[refresh]\nmin = \"10s\"\nmax = \"1h\"\ndefault = \"5m\"\njitter = 0.0\n\
         backoff_initial = \"1s\"\nbackoff_max = \"1m\"\nstale_debounce = \"200ms\"\nstale_min_interval = \"10s\"\n{extra}\n"
    );
    for name in integrations {
        let table = IntegrationToml::new(name, &format!("http://127.0.0.1:9/{name}/card.json"))
            .data_classes(&["internal"]);
        text.push_str(&table.text());
    }
    Config::parse(&text, Path::new("gateway.toml")).expect("test config")
}

fn start(cfg: Config, script: Arc<Script>) -> ControlHandle {
    let metrics = ControlMetrics::register(&prometheus::Registry::new());
    ControlHandle::start(cfg, Arc::new(Store::default()), metrics, script, None)
}

/// Lets the workers run until every integration has a verdict (paused time advances as needed).
async fn settle(h: &ControlHandle) {
    crate::assert_eventually!(
        h.store().load().ready(),
        within = Duration::from_secs(1),
        every = Duration::from_millis(1),
        "integrations never got a verdict: {:?}",
        h.readiness()
    );
}

fn streaming(h: &ControlHandle, name: &str) -> bool {
    h.store()
        .load()
        .get(name)
        .unwrap()
        .profile()
        .unwrap()
        .streaming
}

#[tokio::test(start_paused = true)]
async fn period_follows_max_age_and_304_does_not_recompile() {
    let script = Script::new(card(true, "1"), Some(Duration::from_secs(60)));
    let h = start(config("", &["echo"]), script.clone());
    settle(&h).await;
    assert_eq!(script.fetches(), 1);
    assert!(h.store().load().get("echo").unwrap().usable().is_some());
    let v1 = h.store().load().version;

    tokio::time::sleep(Duration::from_secs(61)).await;
    assert_eq!(script.fetches(), 2, "one refresh per max-age");
    assert_eq!(script.not_modified.load(Ordering::SeqCst), 1);
    let snap = h.store().load();
    let s = snap.get("echo").unwrap();
    assert!(s.freshness.validated_at.is_some());
    assert_eq!(
        h.metrics()
            .refresh_count("echo", RefreshResult::NotModified),
        1
    );
    // A 304 touches freshness only: the profile is the very same Arc.
    assert!(snap.version > v1);

    // The agent switches streaming off: the next period picks it up.
    script.set(card(false, "1"));
    tokio::time::sleep(Duration::from_secs(60)).await;
    assert_eq!(script.fetches(), 3);
    assert!(!streaming(&h, "echo"));
    assert_eq!(
        h.metrics().refresh_count("echo", RefreshResult::Changed),
        2,
        "first install + this change"
    );

    // Same semantics, different bytes (a reworded description): fetched, but not a change.
    script.set(card(false, "1").replace("echo agent", "an agent that echoes"));
    tokio::time::sleep(Duration::from_secs(60)).await;
    assert_eq!(
        h.metrics().refresh_count("echo", RefreshResult::Unchanged),
        1
    );
}

#[tokio::test(start_paused = true)]
async fn failures_back_off_exponentially_then_recover() {
    let script = Script::new(card(true, "1"), Some(Duration::from_secs(60)));
    script.down.store(true, Ordering::SeqCst);
    let h = start(config("", &["echo"]), script.clone());
    settle(&h).await;
    // No good profile ever: a definite verdict, so readiness settles.
    assert!(matches!(
        h.store().load().get("echo").unwrap().status,
        Status::Unusable { .. }
    ));
    tokio::time::sleep(Duration::from_secs(20)).await;
    let times = script.times.lock().unwrap().clone();
    let gaps: Vec<u64> = times
        .windows(2)
        .map(|w| (w[1] - w[0]).as_millis() as u64)
        .collect();
    assert_eq!(&gaps[..4], &[1000, 2000, 4000, 8000], "{gaps:?}");
    let r = h.readiness();
    assert_eq!(r.degraded.len(), 1, "{r:?}");
    assert!(r.degraded[0].reason.contains("connection refused"), "{r:?}");

    script.down.store(false, Ordering::SeqCst);
    tokio::time::sleep(Duration::from_secs(20)).await;
    let snap = h.store().load();
    let s = snap.get("echo").unwrap();
    assert!(s.usable().is_some(), "recovered: {:?}", s.status);
    assert!(s.freshness.degraded.is_none());
}

#[tokio::test(start_paused = true)]
async fn a_bad_card_keeps_the_last_good_profile_and_marks_degraded() {
    let script = Script::new(card(true, "1"), Some(Duration::from_secs(60)));
    let h = start(config("", &["echo"]), script.clone());
    settle(&h).await;
    let good = h
        .store()
        .load()
        .get("echo")
        .unwrap()
        .profile()
        .cloned()
        .unwrap();
    script.set("{\"name\": 1, truncated".into());
    let r = h.refresh_now("echo").await.unwrap();
    assert_eq!(r.result, RefreshResult::Failed);
    assert!(r.reason.as_deref().unwrap().contains("validation"), "{r:?}");
    assert_eq!(r.status.as_str(), "usable");
    let snap = h.store().load();
    let s = snap.get("echo").unwrap();
    assert!(
        Arc::ptr_eq(s.profile().unwrap(), &good),
        "the last good profile is still served"
    );
    let d = s.freshness.degraded.as_ref().expect("degraded");
    assert_eq!(d.failures, 1);
    assert!(d.reason.contains("validation"));
    assert_eq!(h.metrics().degraded.with_label_values(&["echo"]).get(), 1);
}

#[tokio::test(start_paused = true)]
async fn a_stale_mark_storm_causes_one_fetch_per_interval() {
    let script = Script::new(card(true, "1"), Some(Duration::from_secs(3600)));
    let h = start(config("", &["echo"]), script.clone());
    settle(&h).await;
    tokio::time::sleep(Duration::from_secs(11)).await; // past stale_min_interval since the first fetch
    assert_eq!(script.fetches(), 1);
    for _ in 0..1000 {
        h.mark_stale("echo");
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(script.fetches(), 2, "a storm of 1000 marks, one fetch");
    assert_eq!(
        h.metrics()
            .stale_refreshes
            .with_label_values(&["echo"])
            .get(),
        1
    );
    assert_eq!(
        h.metrics()
            .stale_debounced
            .with_label_values(&["echo"])
            .get(),
        999
    );

    // Another storm right away is held until stale_min_interval after the last fetch.
    for _ in 0..100 {
        h.mark_stale("echo");
    }
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_eq!(script.fetches(), 2, "rate-limited");
    tokio::time::sleep(Duration::from_secs(6)).await;
    assert_eq!(script.fetches(), 3);
}

#[tokio::test(start_paused = true)]
async fn forced_refreshes_during_a_fetch_share_the_next_one() {
    let script = Script::new(card(true, "1"), Some(Duration::from_secs(3600)));
    let h = start(config("", &["echo"]), script.clone());
    settle(&h).await;
    *script.delay.lock().unwrap() = Duration::from_secs(2);
    let mut calls = Vec::new();
    for _ in 0..10 {
        let h = h.clone();
        calls.push(tokio::spawn(async move { h.refresh_now("echo").await }));
    }
    for c in calls {
        let r = c.await.unwrap().unwrap();
        assert_eq!(r.result, RefreshResult::NotModified);
    }
    // The first request fetched; the nine that queued behind it were answered by one more fetch.
    assert!(
        script.fetches() <= 3,
        "{} fetches for 10 requests",
        script.fetches()
    );
    assert!(script.fetches() >= 2);
    assert!(matches!(
        h.refresh_now("nope").await,
        Err(a2a_egress::control::refresh::ControlError::UnknownIntegration(_))
    ));
}

#[tokio::test(start_paused = true)]
async fn retry_hook_answers_changed_only_for_a_different_profile() {
    let script = Script::new(card(true, "1"), Some(Duration::from_secs(3600)));
    let h = start(config("", &["echo"]), script.clone());
    settle(&h).await;
    tokio::time::sleep(Duration::from_secs(11)).await;
    let used = h
        .store()
        .load()
        .get("echo")
        .unwrap()
        .profile()
        .cloned()
        .unwrap();

    // Nothing changed on the agent: the hook fetches and says unchanged (a 304).
    let r = h.refresh_after_error("echo", &used).await.unwrap();
    assert_eq!(r.result, RefreshResult::NotModified);
    assert_eq!(script.fetches(), 2);

    // The agent changed, but a fetch just ran: rate-limited, no fetch, still not changed.
    script.set(card(false, "2"));
    let r = h.refresh_after_error("echo", &used).await.unwrap();
    assert!(r.coalesced);
    assert_eq!(r.result, RefreshResult::Unchanged);
    assert_eq!(script.fetches(), 2);

    tokio::time::sleep(Duration::from_secs(11)).await;
    let r = h.refresh_after_error("echo", &used).await.unwrap();
    assert_eq!(r.result, RefreshResult::Changed);
    assert_eq!(script.fetches(), 3);
    // A second caller holding the same old profile learns "changed" without another fetch.
    let r = h.refresh_after_error("echo", &used).await.unwrap();
    assert_eq!(r.result, RefreshResult::Changed);
    assert!(r.coalesced);
    assert_eq!(script.fetches(), 3);
}

/// The profile a call would be shaped from now.
fn used(h: &ControlHandle) -> Arc<a2a_egress::profile::Profile> {
    h.store()
        .load()
        .get("echo")
        .unwrap()
        .profile()
        .cloned()
        .unwrap()
}

fn gap(script: &Script, from: usize, to: usize) -> Duration {
    let t = script.times.lock().unwrap();
    t[to] - t[from]
}

#[tokio::test(start_paused = true)]
async fn a_retry_hook_inside_the_min_interval_defers_its_refresh() {
    let script = Script::new(card(true, "1"), Some(Duration::from_secs(3600)));
    let h = start(config("", &["echo"]), script.clone());
    settle(&h).await;
    tokio::time::sleep(Duration::from_secs(30)).await;
    let before = used(&h);
    // A forced refresh counts as a fetch for the rate limit.
    let r = h.refresh_now("echo").await.unwrap();
    assert_eq!(r.result, RefreshResult::NotModified);
    assert_eq!(script.fetches(), 2);

    // The agent changes and starts refusing calls one second later: the hook is rate-limited.
    script.set(card(false, "2"));
    tokio::time::sleep(Duration::from_secs(1)).await;
    let r = h.refresh_after_error("echo", &before).await.unwrap();
    assert!(r.coalesced, "{r:?}");
    assert_eq!(r.result, RefreshResult::Unchanged);
    assert_eq!(script.fetches(), 2);

    // No further traffic: the deferred mark still fetches, stale_min_interval after the last fetch.
    tokio::time::sleep(Duration::from_secs(15)).await;
    assert_eq!(script.fetches(), 3, "the deferred mark was dropped");
    assert_eq!(gap(&script, 1, 2), Duration::from_secs(10));
    assert!(!streaming(&h, "echo"), "the new profile is installed");
    tokio::time::sleep(Duration::from_secs(60)).await;
    assert_eq!(script.fetches(), 3, "one deferred fetch, not a loop");
}

#[tokio::test(start_paused = true)]
async fn a_stale_mark_survives_a_rate_limited_retry_hook() {
    let script = Script::new(card(true, "1"), Some(Duration::from_secs(3600)));
    let h = start(config("", &["echo"]), script.clone());
    settle(&h).await;
    tokio::time::sleep(Duration::from_secs(30)).await;
    let before = used(&h);
    h.refresh_now("echo").await.unwrap();
    script.set(card(false, "2"));
    // A stale mark from the channel (held for the rate limit), then a retry hook that is answered
    // without a fetch: the mark must still fire.
    tokio::time::sleep(Duration::from_secs(1)).await;
    h.mark_stale("echo");
    tokio::time::sleep(Duration::from_secs(1)).await;
    let r = h.refresh_after_error("echo", &before).await.unwrap();
    assert!(r.coalesced, "{r:?}");
    tokio::time::sleep(Duration::from_secs(15)).await;
    assert_eq!(
        script.fetches(),
        3,
        "the stale mark was dropped by the hook"
    );
    assert_eq!(gap(&script, 1, 2), Duration::from_secs(10));
    assert!(!streaming(&h, "echo"));
}

fn panic_count(h: &ControlHandle) -> u64 {
    h.metrics().worker_panics.with_label_values(&["echo"]).get()
}

#[tokio::test(start_paused = true)]
async fn a_panicking_worker_is_restarted_with_backoff_and_reported() {
    let script = Script::new(card(true, "1"), Some(Duration::from_secs(3600)));
    *script.panics.lock().unwrap() = vec![1, 2];
    let h = start(config("", &["echo"]), script.clone());
    // The first fetch panics: a definite verdict, with the reason, instead of pending forever.
    settle(&h).await;
    let r = h.readiness();
    assert_eq!(r.unusable.len(), 1, "{r:?}");
    assert!(
        r.unusable[0]
            .reason
            .contains("refresh worker panicked: scripted panic in fetch 1"),
        "{r:?}"
    );
    assert_eq!(panic_count(&h), 1);
    assert_eq!(h.metrics().degraded.with_label_values(&["echo"]).get(), 1);

    // While the worker waits to restart, a forced refresh is told so at once (no fetch, no wait).
    let e = h.refresh_now("echo").await.unwrap_err();
    assert!(matches!(e, ControlError::Restarting { .. }), "{e:?}: {e}");
    assert!(e.to_string().contains("restart"), "{e}");
    assert_eq!(e.reason(), "REFRESH_WORKER_RESTARTING");
    assert_eq!(script.fetches(), 1);

    // Restarts back off exponentially (1 s, then 2 s); the third fetch works.
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_eq!(script.fetches(), 3);
    assert_eq!(gap(&script, 0, 1), Duration::from_secs(1));
    assert_eq!(gap(&script, 1, 2), Duration::from_secs(2));
    assert_eq!(panic_count(&h), 2);
    let snap = h.store().load();
    let s = snap.get("echo").unwrap();
    assert!(s.usable().is_some(), "{:?}", s.status);
    assert!(s.freshness.degraded.is_none());
    assert_eq!(h.metrics().degraded.with_label_values(&["echo"]).get(), 0);

    // A panic during a forced refresh: that caller gets a clear error, the last good profile is
    // still served (marked degraded), and the restarted worker recovers it.
    let good = used(&h);
    script.panics.lock().unwrap().push(4);
    let e = h.refresh_now("echo").await.unwrap_err();
    assert!(matches!(e, ControlError::Panicked(_)), "{e:?}: {e}");
    assert_eq!(e.reason(), "REFRESH_WORKER_RESTARTING");
    let snap = h.store().load();
    let s = snap.get("echo").unwrap();
    assert!(Arc::ptr_eq(s.profile().unwrap(), &good));
    assert!(s.usable().is_some());
    let d = s.freshness.degraded.as_ref().expect("degraded");
    assert!(
        d.reason
            .contains("refresh worker panicked: scripted panic in fetch 4"),
        "{d:?}"
    );
    assert_eq!(panic_count(&h), 3);
    tokio::time::sleep(Duration::from_secs(10)).await;
    assert_eq!(script.fetches(), 5, "restarted and fetched again");
    let r = h.refresh_now("echo").await.unwrap();
    assert_ne!(r.result, RefreshResult::Failed, "{r:?}");
    assert!(
        h.store()
            .load()
            .get("echo")
            .unwrap()
            .freshness
            .degraded
            .is_none()
    );
}

#[tokio::test(start_paused = true)]
async fn reload_keeps_unchanged_integrations_and_fetches_new_ones() {
    let script = Script::new(card(true, "1"), Some(Duration::from_secs(3600)));
    let h = start(config("", &["a", "b"]), script.clone());
    settle(&h).await;
    assert_eq!(script.fetches(), 2);
    let a_profile = h
        .store()
        .load()
        .get("a")
        .unwrap()
        .profile()
        .cloned()
        .unwrap();

    let report = h.apply_config(config("", &["a", "c"]));
    assert_eq!(report.added, vec!["c"]);
    assert_eq!(report.removed, vec!["b"]);
    assert_eq!(report.unchanged, vec!["a"]);
    assert!(
        h.store().load().get("b").is_none(),
        "removed integrations stop routing at once"
    );
    settle(&h).await;
    assert_eq!(script.fetches(), 3, "only the new integration was fetched");
    let snap = h.store().load();
    assert!(Arc::ptr_eq(
        snap.get("a").unwrap().profile().unwrap(),
        &a_profile
    ));
    assert!(snap.get("c").unwrap().usable().is_some());

    // [client] changes recompile from the cached cards without fetching.
    let report = h.apply_config(config("", &["a", "c"]).clone_with_caps_extension());
    assert!(report.recompiled_all);
    tokio::time::sleep(Duration::from_millis(10)).await;
    assert_eq!(script.fetches(), 3);
    assert_eq!(h.metrics().reloads.with_label_values(&["ok"]).get(), 2);
}

trait WithCaps {
    fn clone_with_caps_extension(self) -> Config;
}

impl WithCaps for Config {
    fn clone_with_caps_extension(mut self) -> Config {
        self.caps
            .extensions
            .push("https://example.com/ext/new/v1".into());
        self
    }
}
