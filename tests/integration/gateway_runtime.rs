//! `[runtime]` in a served process (a process boundary: its threads are the process's own).
//! Without work stealing, the data plane runs on `worker_threads` threads of its own (pingora's
//! no-steal runtime, named `a2a-egress-data`) and the control plane on the main thread: calls to
//! the official SDK agent go through, and SIGTERM still drains and exits cleanly. With the
//! default, one work-stealing runtime serves everything and no data-plane threads exist apart.

use std::time::Duration;

use crate::common::SdkAgent;
use crate::common::gateway::{GatewayProc, config_head, integration, send_request};

/// The names of a process's threads, from `/proc/PID/task/*/comm`.
fn thread_names(pid: u32) -> Vec<String> {
    let mut names = Vec::new();
    for task in std::fs::read_dir(format!("/proc/{pid}/task")).expect("the process's tasks") {
        let comm = task.expect("a task").path().join("comm");
        if let Ok(name) = std::fs::read_to_string(comm) {
            names.push(name.trim_end().to_owned());
        }
    }
    names
}

fn count(names: &[String], name: &str) -> usize {
    names.iter().filter(|n| *n == name).count()
}

async fn one_call(gw: &GatewayProc) {
    let (status, body) = gw
        .rpc("echo", &send_request("r1", "SendMessage", "hi"), &[])
        .await;
    assert_eq!(status, 200, "{body}");
    assert!(body["result"]["task"].is_object(), "{body}");
}

#[tokio::test]
async fn without_work_stealing_the_data_plane_runs_on_its_own_threads() {
    let agent = SdkAgent::start(&[]);
    let config = config_head(&[])
        + "[runtime]\nworker_threads = 3\nwork_stealing = false\n"
        + &integration("echo", &agent.card_url, "");
    let mut gw = GatewayProc::start(&config, &[]).await;
    one_call(&gw).await;
    let names = thread_names(gw.process.pid());
    assert_eq!(count(&names, "a2a-egress-data"), 3, "{names:?}");
    // The main thread (the control plane's runtime) carries the process's name; no
    // work-stealing workers beside it.
    assert_eq!(count(&names, "a2a-egress"), 1, "{names:?}");

    gw.process.terminate();
    let status = gw
        .process
        .wait_timeout(Duration::from_secs(30))
        .expect("the gateway exits after SIGTERM");
    assert!(status.success(), "{status:?}\n{}", gw.process.stderr_tail());
}

#[tokio::test]
async fn by_default_one_work_stealing_runtime_serves_everything() {
    let agent = SdkAgent::start(&[]);
    let config = config_head(&[]) + &integration("echo", &agent.card_url, "");
    let gw = GatewayProc::start(&config, &[("TOKIO_WORKER_THREADS", "2")]).await;
    one_call(&gw).await;
    let names = thread_names(gw.process.pid());
    // The main thread and the two workers (and any blocking-pool thread, named alike).
    assert!(count(&names, "a2a-egress") >= 3, "{names:?}");
    assert_eq!(count(&names, "a2a-egress-data"), 0, "{names:?}");
}
