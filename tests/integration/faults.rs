//! Faults around the running gateway (`a2a-egress serve` as a child process, the bundled reference
//! agent as the remote agent), each with traffic flowing:
//! - the agent stops while calls are in flight and comes back on the same address: in-flight and
//!   later-while-down calls get a protocol-shaped 502, calls after the restart succeed, and the
//!   gateway is never restarted;
//! - the state directory is unusable from the start, or becomes unusable while serving (replaced by
//!   a file, which stops root as well as anyone else): serving continues and `/readyz` says why;
//! - the config file is overwritten with a truncated TOML: the file watch and SIGHUP both refuse
//!   it, the refusal is counted, and the old config keeps serving;
//! - 200 SIGHUPs in a tight loop while calls run: no call fails, the gateway stays up, and the
//!   signals are coalesced into fewer reloads;
//! - a reload that changes an integration (its card URL, so it is refetched, and its data classes)
//!   while calls run: no call fails and the new rules apply.

use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::Value;

use crate::common::gateway::{GatewayProc, config_head, integration, metric, send_request};
use crate::common::ref_agent::RefAgent;

/// A gateway config for one integration `ref` in front of `card_url` that refreshes only on demand.
fn config(card_url: &str, extra: &str) -> String {
    config_head(&[])
        + "[refresh]\nmin = \"1h\"\nmax = \"2h\"\n"
        + extra
        + &integration("ref", card_url, "")
}

async fn call(gw: &GatewayProc, id: &str) -> (u16, Value) {
    gw.rpc("ref", &send_request(id, "SendMessage", "echo hi"), &[])
        .await
}

fn ok(status: u16, body: &Value) -> bool {
    status == 200 && body["result"].is_object()
}

/// The gateway's own 502 for an unreachable agent, in the JSON-RPC shape.
fn assert_upstream_unavailable(status: u16, body: &Value, id: &str) {
    assert_eq!(status, 502, "{body}");
    assert_eq!(body["jsonrpc"], "2.0", "{body}");
    assert_eq!(body["id"], id, "{body}");
    assert_eq!(
        body["error"]["data"][0]["reason"], "UPSTREAM_UNAVAILABLE",
        "{body}"
    );
    assert_eq!(body["error"]["data"][0]["domain"], "a2a-egress", "{body}");
}

fn signal(pid: u32, sig: &str) {
    let ok = Command::new("kill")
        .args([sig, &pid.to_string()])
        .status()
        .expect("kill(1)")
        .success();
    assert!(ok, "kill {sig} {pid}");
}

/// Polls `f` every 50 ms for up to 20 s.
async fn eventually<F, Fut>(what: &str, gw: &GatewayProc, f: F)
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    crate::assert_eventually!(
        f().await,
        every = Duration::from_millis(50),
        "{what}\n--- gateway stderr ---\n{}",
        gw.process.stderr_tail()
    );
}

fn reloads(m: &str, result: &str) -> f64 {
    metric(m, "a2a_egress_config_reloads_total", &[("result", result)])
}

/// Calls `ref` in a loop on `workers` tasks until `stop`; counts calls and failures (printing the
/// first few failures).
struct Traffic {
    stop: Arc<AtomicBool>,
    calls: Arc<AtomicUsize>,
    failures: Arc<AtomicUsize>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Traffic {
    fn start(gw: &Arc<GatewayProc>, workers: usize) -> Traffic {
        let stop = Arc::new(AtomicBool::new(false));
        let calls = Arc::new(AtomicUsize::new(0));
        let failures = Arc::new(AtomicUsize::new(0));
        let tasks = (0..workers)
            .map(|w| {
                let (gw, stop, calls, failures) =
                    (gw.clone(), stop.clone(), calls.clone(), failures.clone());
                tokio::spawn(async move {
                    let mut n = 0;
                    while !stop.load(Ordering::SeqCst) {
                        n += 1;
                        let id = format!("w{w}-{n}");
                        let (status, body) = call(&gw, &id).await;
                        calls.fetch_add(1, Ordering::SeqCst);
                        if !ok(status, &body) && failures.fetch_add(1, Ordering::SeqCst) < 3 {
                            eprintln!("failed call {id}: HTTP {status} {body}");
                        }
                    }
                })
            })
            .collect();
        Traffic {
            stop,
            calls,
            failures,
            tasks,
        }
    }

    /// Calls answered so far (failed ones included).
    fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }

    /// Waits until `more` calls beyond those answered now have been answered: the traffic is
    /// running at this point of the test, whatever the machine's speed.
    async fn run_for(&self, more: usize, gw: &GatewayProc) {
        let target = self.calls() + more;
        eventually("traffic to flow", gw, || async { self.calls() >= target }).await;
    }

    /// Stops the traffic and returns (calls, failures).
    async fn finish(self) -> (usize, usize) {
        self.stop.store(true, Ordering::SeqCst);
        for t in self.tasks {
            t.await.unwrap();
        }
        (
            self.calls.load(Ordering::SeqCst),
            self.failures.load(Ordering::SeqCst),
        )
    }
}

#[tokio::test]
async fn the_agent_restarting_during_traffic_fails_in_flight_calls_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let text = RefAgent::sample_registry_text();
    assert!(
        text.contains("latency_ms = 0"),
        "sample registry changed shape"
    );
    // Every call takes 400 ms at the agent, so calls are still in flight when it stops.
    let slow = RefAgent::write_registry(
        dir.path(),
        "slow.toml",
        &text.replace("latency_ms = 0", "latency_ms = 400"),
    );
    let fast = RefAgent::write_registry(dir.path(), "fast.toml", &text);
    let agent = RefAgent::start(&slow, &RefAgent::demo_envs());
    let addr = agent.addr;
    let gw = Arc::new(GatewayProc::start(&config(&agent.card_url, ""), &[]).await);
    let (status, body) = call(&gw, "warm").await;
    assert!(ok(status, &body), "{body}");

    // Message sends take the gateway's own client, other calls pingora: both paths are in flight.
    let in_flight: Vec<_> = (0..6)
        .map(|i| {
            let gw = gw.clone();
            tokio::spawn(async move {
                let id = format!("inflight-{i}");
                let (status, body) = if i % 2 == 0 {
                    call(&gw, &id).await
                } else {
                    get_task(&gw, &id).await
                };
                (id, status, body)
            })
        })
        .collect();
    // Every one of them (and nothing else) is in flight at the gateway before the agent dies.
    eventually("six calls in flight", &gw, || async {
        metric(&gw.metrics().await, "a2a_egress_inflight_requests", &[]) >= 6.0
    })
    .await;
    drop(agent); // killed while those calls wait for their answers
    for c in in_flight {
        let (id, status, body) = c.await.unwrap();
        assert_upstream_unavailable(status, &body, &id);
    }
    let (status, body) = call(&gw, "down").await;
    assert_upstream_unavailable(status, &body, "down");
    let (status, body) = get_task(&gw, "down-get").await;
    assert_upstream_unavailable(status, &body, "down-get");

    // Back on the same address: the gateway needs no restart and no refresh.
    let _agent = RefAgent::start_on(&fast, &RefAgent::demo_envs(), addr);
    for i in 0..5 {
        let id = format!("after-{i}");
        let (status, body) = call(&gw, &id).await;
        assert!(
            ok(status, &body),
            "{id}: HTTP {status} {body}\n{}",
            gw.process.stderr_tail()
        );
    }
    let (status, body) = get_task(&gw, "after-get").await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["error"]["code"], -32001,
        "the agent's TaskNotFound: {body}"
    );
    let mut gw = Arc::into_inner(gw).expect("no other handle");
    assert!(gw.process.exited().is_none(), "the gateway kept running");
}

/// `GetTask` of a task that does not exist: a unary call whose answer is passed on as it arrives.
async fn get_task(gw: &GatewayProc, id: &str) -> (u16, Value) {
    let req = serde_json::json!({
        "jsonrpc": "2.0", "id": id, "method": "GetTask", "params": {"id": "no-such-task"}
    });
    gw.rpc("ref", &req, &[]).await
}

fn readiness_state_dir(r: &Value) -> Option<String> {
    r["control"]["state_dir"].as_str().map(str::to_owned)
}

#[tokio::test]
async fn a_state_dir_that_is_a_file_from_the_start_keeps_serving_and_readiness_says_why() {
    let agent = RefAgent::sample();
    let dir = tempfile::tempdir().unwrap();
    // A file where the directory should be: even root cannot create files under it.
    std::fs::write(dir.path().join("state"), "not a directory").unwrap();
    let gw = GatewayProc::start_in(
        dir,
        &config(&agent.card_url, "[state]\ndir = \"state\"\n"),
        &[],
    )
    .await;
    let (status, body) = call(&gw, "1").await;
    assert!(ok(status, &body), "{body}");
    let r = gw.readyz().await;
    let why = readiness_state_dir(&r).unwrap_or_else(|| panic!("no reason in /readyz: {r}"));
    assert!(why.contains("state directory is unusable"), "{why}");
    assert_eq!(r["ready"], true, "still ready: {r}");
}

async fn force_refresh(gw: &GatewayProc) -> Value {
    let r = crate::common::http()
        .post(format!("http://{}/v1/integrations/ref/refresh", gw.admin))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    r.json().await.unwrap()
}

#[tokio::test]
async fn a_state_dir_lost_while_serving_keeps_serving_and_readiness_says_why() {
    let agent = RefAgent::sample();
    // Two forced refreshes back to back: the admin rate limit is off for this test.
    let extra = "[state]\ndir = \"state\"\n[admin]\nrefresh_min_interval = \"0s\"\n";
    let gw = GatewayProc::start(&config(&agent.card_url, extra), &[]).await;
    let state = gw.dir.path().join("state");
    eventually("the card saved", &gw, || async {
        std::fs::read_dir(&state).is_ok_and(|mut d| d.next().is_some())
    })
    .await;
    assert_eq!(readiness_state_dir(&gw.readyz().await), None);

    std::fs::remove_dir_all(&state).unwrap();
    std::fs::write(&state, "not a directory").unwrap();
    let report = force_refresh(&gw).await;
    assert_ne!(report["result"], "failed", "{report}");
    let r = gw.readyz().await;
    let why = readiness_state_dir(&r).unwrap_or_else(|| panic!("no reason in /readyz: {r}"));
    assert!(why.contains("cannot be saved"), "{why}");
    assert_eq!(r["ready"], true, "{r}");
    let (status, body) = call(&gw, "1").await;
    assert!(ok(status, &body), "serving continues: {body}");
    let m = gw.metrics().await;
    assert!(
        metric(&m, "a2a_egress_state_write_failures_total", &[]) >= 1.0,
        "{m}"
    );

    // The directory comes back: the next save clears the reason.
    std::fs::remove_file(&state).unwrap();
    std::fs::create_dir(&state).unwrap();
    force_refresh(&gw).await;
    assert_eq!(readiness_state_dir(&gw.readyz().await), None);
}

#[tokio::test]
async fn a_half_written_config_is_refused_and_the_old_one_keeps_serving() {
    let agent = RefAgent::sample();
    let text = config(&agent.card_url, "");
    let gw = GatewayProc::start(&text, &[]).await;
    let path = gw.dir.path().join("gateway.toml");
    // Cut inside the card URL's string, as a writer that died mid-write would leave it.
    let cut = text.find("card = \"").expect("card line") + 15;
    std::fs::write(&path, &text[..cut]).unwrap();

    // The file watch sees the change, lets it settle, tries it and refuses it.
    eventually("the file watch's refusal", &gw, || async {
        reloads(&gw.metrics().await, "refused") == 1.0
    })
    .await;
    let r = gw.readyz().await;
    assert!(r["control"]["config_refused"].is_string(), "{r}");
    let (status, body) = call(&gw, "1").await;
    assert!(ok(status, &body), "the old config serves: {body}");

    // SIGHUP tries the same file again: refused again, still serving.
    signal(gw.process.pid(), "-HUP");
    eventually("the SIGHUP's refusal", &gw, || async {
        reloads(&gw.metrics().await, "refused") == 2.0
    })
    .await;
    let (status, body) = call(&gw, "2").await;
    assert!(ok(status, &body), "{body}");
    assert_eq!(reloads(&gw.metrics().await, "ok"), 0.0);

    // The complete file is accepted again.
    std::fs::write(&path, &text).unwrap();
    eventually("the good file", &gw, || async {
        gw.readyz().await["control"]["config_refused"].is_null()
    })
    .await;
}

#[tokio::test]
async fn a_sighup_storm_during_traffic_fails_no_request() {
    let agent = RefAgent::sample();
    let gw = Arc::new(GatewayProc::start(&config(&agent.card_url, ""), &[]).await);
    let traffic = Traffic::start(&gw, 4);
    traffic.run_for(20, &gw).await;
    let pid = gw.process.pid().to_string();
    // One shell, the builtin kill: 200 signals as fast as they can be sent.
    let storm = Command::new("bash")
        .args([
            "-c",
            "for i in $(seq 200); do kill -HUP \"$1\" || exit 1; done",
            "storm",
            &pid,
        ])
        .status()
        .expect("bash");
    assert!(storm.success());
    // The storm's reloads happen while calls keep flowing: at least one reload is done, and
    // more calls are answered after it.
    eventually("a reload after the storm", &gw, || async {
        reloads(&gw.metrics().await, "ok") >= 1.0
    })
    .await;
    traffic.run_for(20, &gw).await;
    let (calls, failures) = traffic.finish().await;
    assert!(calls > 0);
    assert_eq!(
        failures,
        0,
        "{failures} of {calls} calls failed\n{}",
        gw.process.stderr_tail()
    );
    let mut gw = Arc::into_inner(gw).expect("no other handle");
    assert!(gw.process.exited().is_none(), "the gateway survived");
    let m = gw.metrics().await;
    let (ok_reloads, refused) = (reloads(&m, "ok"), reloads(&m, "refused"));
    assert_eq!(refused, 0.0, "{m}");
    assert!(
        (1.0..200.0).contains(&ok_reloads),
        "200 signals, {ok_reloads} reloads"
    );
}

/// The config with `ref`'s card URL and data classes edited.
fn changed(text: &str, card_url: &str) -> String {
    let out = text
        .replace(
            &format!("card = \"{card_url}\""),
            &format!("card = \"{card_url}?rev=2\""),
        )
        .replace(
            "data_classes = [\"public\", \"internal\"]",
            "data_classes = [\"public\", \"internal\", \"confidential\"]",
        );
    assert_ne!(out, text);
    out
}

async fn confidential_call(gw: &GatewayProc) -> (u16, Value) {
    gw.rpc(
        "ref",
        &send_request("c", "SendMessage", "echo hi"),
        &[("A2A-Egress-Data-Class", "confidential")],
    )
    .await
}

#[tokio::test]
async fn a_reload_that_changes_an_integration_during_traffic_fails_no_request() {
    let agent = RefAgent::sample();
    let text = config(&agent.card_url, "");
    let gw = Arc::new(GatewayProc::start(&text, &[]).await);
    let (_, body) = confidential_call(&gw).await;
    assert_eq!(
        body["error"]["data"][0]["reason"], "POLICY_DENIED",
        "confidential is not allowed yet: {body}"
    );

    let traffic = Traffic::start(&gw, 4);
    traffic.run_for(20, &gw).await;
    let path = gw.dir.path().join("gateway.toml");
    write_atomically(&path, &changed(&text, &agent.card_url));
    signal(gw.process.pid(), "-HUP");
    eventually("the changed rules", &gw, || async {
        let (status, body) = confidential_call(&gw).await;
        ok(status, &body)
    })
    .await;
    traffic.run_for(20, &gw).await;
    let (calls, failures) = traffic.finish().await;
    assert!(calls > 0);
    assert_eq!(
        failures,
        0,
        "{failures} of {calls} calls failed\n{}",
        gw.process.stderr_tail()
    );
    let m = gw.metrics().await;
    assert!(reloads(&m, "ok") >= 1.0, "{m}");
    assert!(
        metric(
            &m,
            "a2a_egress_refresh_total",
            &[("integration", "ref"), ("result", "changed")]
        ) >= 1.0,
        "{m}"
    );
}

/// Saves `text` the way editors do: a temp file renamed over `path`.
fn write_atomically(path: &Path, text: &str) {
    let tmp = path.with_extension("toml.tmp");
    std::fs::write(&tmp, text).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}
