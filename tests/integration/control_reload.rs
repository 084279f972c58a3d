//! Config hot reload from the file (content polling) and SIGHUP-equivalent direct reloads: a good
//! file is applied by difference, a bad one is refused while the old config keeps serving.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use a2a_egress::config::Config;
use a2a_egress::control::reload::spawn_reloader;
use a2a_egress::testkit::{CardJson, ConfigToml, IntegrationToml};

use crate::common::control::start;
use axum::Router;
use axum::http::header;
use axum::routing::get;

/// An agent serving one card per path `/{name}/card.json`, counting fetches.
async fn agent(fetches: Arc<AtomicUsize>) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let card = CardJson::new(&format!("http://{addr}/a2a")).text();
    let app = Router::new().route(
        "/{name}/card.json",
        get(move || {
            let card = card.clone();
            fetches.fetch_add(1, Ordering::SeqCst);
            async move { ([(header::CACHE_CONTROL, "max-age=3600")], card) }
        }),
    );
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    addr
}

fn text(addr: SocketAddr, names: &[&str]) -> String {
    names
        .iter()
        .fold(
            ConfigToml::bare().head("[client]\nallow_plain_http = true\n[refresh]\nmin = \"1h\""),
            |c, n| {
                c.integration(
                    IntegrationToml::new(n, &format!("http://{addr}/{n}/card.json"))
                        .data_classes(&["internal"]),
                )
            },
        )
        .text()
}

async fn eventually(what: &str, f: impl Fn() -> bool) {
    crate::assert_eventually!(f(), every = Duration::from_millis(10), "{what}");
}

#[tokio::test]
async fn file_changes_reload_by_difference_and_bad_files_are_refused() {
    let fetches = Arc::new(AtomicUsize::new(0));
    let addr = agent(fetches.clone()).await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("gateway.toml");
    std::fs::write(&path, text(addr, &["a", "b"])).unwrap();
    let h = start(Config::load(&path).unwrap());
    let reloader = spawn_reloader(h.clone(), path.clone(), Duration::from_millis(50));
    eventually("both usable", || {
        let s = h.store().load();
        ["a", "b"]
            .iter()
            .all(|n| s.get(n).is_some_and(|s| s.usable().is_some()))
    })
    .await;
    assert_eq!(fetches.load(Ordering::SeqCst), 2);
    let a_before = h
        .store()
        .load()
        .get("a")
        .unwrap()
        .profile()
        .cloned()
        .unwrap();

    // Saved the way editors do: a temp file renamed over the config.
    let tmp = dir.path().join(".gateway.toml.swp");
    std::fs::write(&tmp, text(addr, &["a", "c"])).unwrap();
    std::fs::rename(&tmp, &path).unwrap();
    eventually("c usable and b gone", || {
        let s = h.store().load();
        s.get("b").is_none() && s.get("c").is_some_and(|s| s.usable().is_some())
    })
    .await;
    assert_eq!(
        fetches.load(Ordering::SeqCst),
        3,
        "only the new integration was fetched"
    );
    assert!(Arc::ptr_eq(
        &a_before,
        h.store().load().get("a").unwrap().profile().unwrap()
    ));
    assert_eq!(h.metrics().reloads.with_label_values(&["ok"]).get(), 1);

    // A bad file (unknown key) is refused; the running config and profiles stay.
    std::fs::write(&path, format!("{}bogus = 1\n", text(addr, &["z"]))).unwrap();
    eventually("the refusal", || {
        h.metrics().reloads.with_label_values(&["refused"]).get() == 1
    })
    .await;
    let r = h.readiness();
    assert!(
        r.config_refused
            .as_deref()
            .is_some_and(|m| m.contains("bogus")),
        "{r:?}"
    );
    assert!(r.ready);
    assert_eq!(h.metrics().config_refused.get(), 1, "refused while on disk");
    let s = h.store().load();
    assert!(s.get("a").is_some() && s.get("c").is_some() && s.get("z").is_none());
    assert_eq!(h.config().integrations.len(), 2);

    // An invalid value is refused too; then a good file clears the refusal.
    std::fs::write(
        &path,
        text(addr, &["a"]).replace("min = \"1h\"", "min = \"soon\""),
    )
    .unwrap();
    eventually("the second refusal", || {
        h.metrics().reloads.with_label_values(&["refused"]).get() == 2
    })
    .await;
    assert!(
        h.readiness()
            .config_refused
            .unwrap()
            .contains("refresh.min")
    );
    std::fs::write(&path, text(addr, &["a"])).unwrap();
    eventually("the good file", || h.readiness().config_refused.is_none()).await;
    assert_eq!(
        h.metrics().config_refused.get(),
        0,
        "applied: no longer refused"
    );
    assert!(h.store().load().get("c").is_none());
    reloader.abort();
    h.shutdown();
}

#[tokio::test]
async fn reload_from_applies_at_once() {
    let fetches = Arc::new(AtomicUsize::new(0));
    let addr = agent(fetches.clone()).await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("gateway.toml");
    std::fs::write(&path, text(addr, &["a"])).unwrap();
    let h = start(Config::load(Path::new(&path)).unwrap());
    std::fs::write(&path, text(addr, &["a", "b"])).unwrap();
    // What SIGHUP triggers.
    let report = h.reload_from(&path).await.unwrap();
    assert_eq!(report.added, vec!["b"]);
    assert_eq!(report.unchanged, vec!["a"]);
    std::fs::write(&path, "[[integrations]]\nname = 1\n").unwrap();
    assert!(h.reload_from(&path).await.is_err());
    assert!(
        h.store().load().get("b").is_some(),
        "the old config keeps serving"
    );
    h.shutdown();
}

#[test]
fn the_sample_config_documents_the_refresh_defaults() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("config/gateway.toml");
    let c = Config::load(&path).expect("the sample config is valid");
    assert_eq!(
        c.refresh,
        a2a_egress::config::RefreshSettings::default(),
        "the sample's [refresh] values are the built-in defaults"
    );
    assert_eq!(c.state_dir, None);
}

/// The running config's `[limits] max_config_bytes` caps the next reload: a file over it is
/// refused naming the cap, unread, and the old config keeps serving.
#[tokio::test]
async fn the_running_configs_cap_refuses_a_larger_reload() {
    let fetches = Arc::new(AtomicUsize::new(0));
    let addr = agent(fetches.clone()).await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("gateway.toml");
    let small = format!("[limits]\nmax_config_bytes = 8192\n{}", text(addr, &["a"]));
    std::fs::write(&path, &small).unwrap();
    let h = start(Config::load(&path).unwrap());
    // Valid TOML a comment pads past the cap: only the cap refuses it.
    let padded = format!("{}\n#{}\n", text(addr, &["a", "b"]), "x".repeat(9000));
    std::fs::write(&path, &padded).unwrap();
    let e = h.reload_from(&path).await.unwrap_err().to_string();
    assert!(e.contains("larger than its cap of 8192 bytes"), "{e}");
    assert!(h.store().load().get("b").is_none(), "nothing of it applied");
    assert!(h.reload_refused().is_some_and(|r| r.contains("8192")));
    // Within the cap it applies, and its own (default) cap governs the reload after it.
    std::fs::write(&path, text(addr, &["a", "b"])).unwrap();
    assert_eq!(h.reload_from(&path).await.unwrap().added, vec!["b"]);
    std::fs::write(&path, &padded).unwrap();
    assert!(h.reload_from(&path).await.is_ok());
    h.shutdown();
}

mod files {
    //! The config file swapped for something hostile while the gateway serves, through the file
    //! watch of an in-process gateway in front of the reference agent.

    use std::time::Duration;

    use serde_json::Value;

    use crate::common::gateway::{InProcess, config_head, integration, metric, send_request};
    use crate::common::ref_agent::RefAgent;

    fn config(card_url: &str) -> String {
        config_head(&[])
            + "[refresh]\nmin = \"1h\"\nmax = \"2h\"\n"
            + &integration("ref", card_url, "")
    }

    async fn assert_serving(gw: &InProcess, id: &str) {
        let (status, body) = gw
            .rpc("ref", &send_request(id, "SendMessage", "echo hi"), &[])
            .await;
        assert!(
            status == 200 && body["result"].is_object(),
            "{status} {body}"
        );
    }

    async fn refused(gw: &InProcess) -> f64 {
        metric(
            &gw.metrics().await,
            "a2a_egress_config_reloads_total",
            &[("result", "refused")],
        )
    }

    async fn wait_refused(gw: &InProcess, n: f64, what: &str) {
        wait_refused_within(gw, n, what, Duration::from_secs(60)).await
    }

    async fn wait_refused_within(gw: &InProcess, n: f64, what: &str, within: Duration) {
        crate::assert_eventually!(
            refused(gw).await == n,
            within = within,
            every = Duration::from_millis(50),
            "refusal {n} ({what})"
        );
    }

    /// `/readyz` as raw bytes and as JSON.
    async fn readyz_raw(gw: &InProcess) -> (Vec<u8>, Value) {
        let body = crate::common::http()
            .get(gw.admin_url("/readyz"))
            .send()
            .await
            .expect("GET /readyz")
            .bytes()
            .await
            .expect("readyz body")
            .to_vec();
        let v = serde_json::from_slice(&body).expect("readyz JSON");
        (body, v)
    }

    /// Replaces the config by `f`'s doing, through a rename (as editors save), so the watch
    /// never sees half of it.
    fn replace(gw: &InProcess, f: impl FnOnce(&std::path::Path)) {
        let tmp = gw.dir.path().join("next");
        let _ = std::fs::remove_file(&tmp);
        f(&tmp);
        std::fs::rename(&tmp, gw.config_path()).unwrap();
    }

    #[tokio::test]
    async fn a_config_over_its_cap_or_not_a_regular_file_is_refused_unread_and_the_old_one_serves()
    {
        let agent = RefAgent::sample();
        let text = config(&agent.card_url);
        let gw = InProcess::start(&text).await;
        // Valid TOML padded past the default cap (32 MiB) by a comment: only the cap refuses it.
        let cap = a2a_egress::config::DEFAULT_MAX_CONFIG_BYTES as usize;
        replace(&gw, |p| {
            std::fs::write(p, format!("{text}\n#{}\n", "x".repeat(cap))).unwrap()
        });
        wait_refused(&gw, 1.0, "over the cap").await;
        let r = gw.readyz().await;
        let why = r["control"]["config_refused"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        assert!(
            why.contains(&format!("larger than its cap of {cap} bytes")),
            "{r}"
        );
        assert_serving(&gw, "1").await;

        // A link to /dev/zero: refused without a byte read (it would grow memory forever).
        replace(&gw, |p| std::os::unix::fs::symlink("/dev/zero", p).unwrap());
        wait_refused(&gw, 2.0, "/dev/zero").await;
        let r = gw.readyz().await;
        assert!(
            r["control"]["config_refused"]
                .as_str()
                .is_some_and(|w| w.contains("not a regular file")),
            "{r}"
        );
        assert_serving(&gw, "2").await;

        // A FIFO nobody writes to: refused at once, no reader left waiting on it.
        replace(&gw, |p| {
            let made = std::process::Command::new("mkfifo").arg(p).status();
            assert!(made.is_ok_and(|s| s.success()), "mkfifo");
        });
        wait_refused(&gw, 3.0, "a FIFO").await;
        assert_serving(&gw, "3").await;

        // The good file again is applied.
        replace(&gw, |p| std::fs::write(p, &text).unwrap());
        crate::assert_eventually!(
            gw.readyz().await["control"]["config_refused"].is_null(),
            within = Duration::from_secs(30),
            "the good file is applied"
        );
    }

    #[tokio::test]
    async fn a_refused_config_leaves_readyz_small_and_free_of_control_characters() {
        let agent = RefAgent::sample();
        let text = config(&agent.card_url);
        let gw = InProcess::start(&text).await;
        // A card value the refusal quotes (`… is not an absolute http(s) URL`).
        let line = |n: usize| {
            format!(
                "{text}\n[[integrations]]\nname = \"big\"\ncard = \"{}\"\norigins = [\"https://a.example\"]\n",
                "x".repeat(n)
            )
        };
        let hostile = [
            (
                "NUL-padded",
                format!("{text}\n{}", "\0".repeat(8 << 20)).into_bytes(),
            ),
            ("a 1 MB line", line(1 << 20).into_bytes()),
            // Under the config's 32 MiB size cap, so the message bounding is what is checked.
            ("a 20 MB line", line(20 << 20).into_bytes()),
        ];
        for (i, (what, bytes)) in hostile.iter().enumerate() {
            replace(&gw, |p| std::fs::write(p, bytes).unwrap());
            wait_refused(&gw, (i + 1) as f64, what).await;
            let (raw, r) = readyz_raw(&gw).await;
            assert!(raw.len() < 4096, "{what}: /readyz is {} bytes", raw.len());
            let why = r["control"]["config_refused"]
                .as_str()
                .expect("refusal shown");
            assert!(
                !why.chars().any(|c| c.is_control() && c != '\n'),
                "{what}: {why:?}"
            );
            assert!(
                !why.contains("larger than its cap"),
                "{what}: refused by the size cap, not by validation: {why:?}"
            );
            assert_serving(&gw, what).await;
        }
    }

    /// Validation of a 100,000-integration file runs on a blocking thread: on a gateway whose
    /// runtime has one thread, calls are answered while the reload is still in progress (the
    /// gauge is read after each answer), which validating on that thread would make impossible.
    #[tokio::test]
    async fn a_large_reload_is_validated_beside_the_calls_and_never_holds_them() {
        let agent = RefAgent::sample();
        let text = config(&agent.card_url);
        let dir = tempfile::tempdir().unwrap();
        let gw = InProcess::start_with_workers(dir, &text, 1).await;
        let mut big = text.clone();
        for i in 0..100_000 {
            let url = format!("http://127.0.0.1:9/i{i}/card.json");
            big.push_str(&integration(&format!("i{i}"), &url, ""));
        }
        // The last name repeats the first: the whole file is validated, then refused.
        big.push_str(&integration("i0", "http://127.0.0.1:9/again.json", ""));
        replace(&gw, |p| std::fs::write(p, &big).unwrap());
        let in_progress = |m: &str| metric(m, "a2a_egress_config_reload_in_progress", &[]);
        crate::assert_eventually!(
            in_progress(&gw.metrics().await) == 1.0,
            within = Duration::from_secs(120),
            every = Duration::from_millis(5),
            "the reload starts"
        );
        let mut answered_during = 0;
        for id in 0..5 {
            assert_serving(&gw, &format!("during-{id}")).await;
            if in_progress(&gw.metrics().await) != 1.0 {
                break;
            }
            answered_during += 1;
        }
        assert!(
            answered_during > 0,
            "no call was answered while the reload ran"
        );
        // A debug build on a loaded machine takes a while over 100,000 tables: a generous bound.
        let within = Duration::from_secs(600);
        wait_refused_within(&gw, 1.0, "the duplicate name", within).await;
        let r = gw.readyz().await;
        assert!(
            r["control"]["config_refused"]
                .as_str()
                .is_some_and(|w| w.contains("duplicate integration name \"i0\"")),
            "{r}"
        );
        assert_serving(&gw, "after").await;
    }
}
