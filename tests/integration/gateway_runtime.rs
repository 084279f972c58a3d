//! `[runtime]` in a served process (a process boundary: its threads are the process's own).
//! Without work stealing, the data plane runs on `worker_threads` threads of its own (pingora's
//! no-steal runtime, named `a2a-egress-data`) and the control plane on the main thread: calls to
//! the official SDK agent go through, and SIGTERM still drains and exits cleanly. With the
//! default, one work-stealing runtime serves everything and no data-plane threads exist apart.
//! Without `[runtime] worker_threads` the count follows the CPUs the process may use (its
//! affinity, its cgroup's CPU quota), and `serve`'s first line and `/readyz` say which and why.

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

#[tokio::test]
async fn without_work_stealing_one_thread_serves_the_control_plane_too() {
    let agent = SdkAgent::start(&[]);
    let config = config_head(&[])
        + "[runtime]\nworker_threads = 1\nwork_stealing = false\n"
        + &integration("echo", &agent.card_url, "");
    let gw = GatewayProc::start(&config, &[]).await;
    one_call(&gw).await;
    let names = thread_names(gw.process.pid());
    // No data-plane thread apart: one runtime, one worker, as with work stealing (the main
    // thread and that worker; blocking-pool threads, named alike, come and go).
    assert_eq!(count(&names, "a2a-egress-data"), 0, "{names:?}");
    assert!(count(&names, "a2a-egress") >= 2, "{names:?}");
    let first = gw.process.first();
    assert_eq!(first["worker_threads"], 1, "{first}");
    assert_eq!(first["worker_threads_from"], "config", "{first}");
    let ready = gw.readyz().await;
    assert_eq!(
        ready["runtime"]["control_plane_thread"], "shared",
        "{ready}"
    );
    assert_eq!(ready["runtime"]["work_stealing"], false, "{ready}");
}

/// The first line's and `/readyz`'s account of the threads, which must agree.
async fn threads_said(gw: &GatewayProc) -> (u64, String, String) {
    let first = gw.process.first().clone();
    let ready = gw.readyz().await;
    let rt = &ready["runtime"];
    assert_eq!(
        rt["worker_threads"], first["worker_threads"],
        "{ready}\n{first}"
    );
    assert_eq!(rt["from"], first["worker_threads_from"], "{ready}\n{first}");
    assert_eq!(rt["why"], first["worker_threads_why"], "{ready}\n{first}");
    (
        first["worker_threads"].as_u64().expect("a count"),
        first["worker_threads_from"]
            .as_str()
            .unwrap_or("")
            .to_owned(),
        first["worker_threads_why"]
            .as_str()
            .unwrap_or("")
            .to_owned(),
    )
}

/// The first CPU this test process may run on (from `Cpus_allowed_list`: CPU 0 may not be).
fn first_allowed_cpu() -> String {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    let list = status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .expect("Cpus_allowed_list");
    let first = list.trim().split([',', '-']).next().unwrap_or("0");
    first.to_owned()
}

#[tokio::test]
async fn by_default_the_threads_are_the_cpus_of_the_affinity_mask() {
    let agent = SdkAgent::start(&[]);
    let config = config_head(&[]) + &integration("echo", &agent.card_url, "");
    let dir = tempfile::tempdir().unwrap();
    let cpu = first_allowed_cpu();
    let gw = GatewayProc::start_wrapped(dir, &config, &[], &["taskset", "-c", &cpu]).await;
    one_call(&gw).await;
    let (n, from, why) = threads_said(&gw).await;
    assert_eq!((n, from.as_str()), (1, "cpus"), "{why}");
    assert!(why.starts_with("1 CPU in the affinity mask"), "{why}");
    // Work stealing on one worker: the main thread and that worker (blocking-pool threads,
    // named alike, come and go).
    let names = thread_names(gw.process.pid());
    assert!(count(&names, "a2a-egress") >= 2, "{names:?}");
    assert_eq!(count(&names, "a2a-egress-data"), 0, "{names:?}");

    // The variable still wins over the CPUs.
    let dir = tempfile::tempdir().unwrap();
    let env = [("TOKIO_WORKER_THREADS", "3")];
    let gw = GatewayProc::start_wrapped(dir, &config, &env, &["taskset", "-c", &cpu]).await;
    let (n, from, why) = threads_said(&gw).await;
    assert_eq!(
        (n, from.as_str(), why.as_str()),
        (3, "TOKIO_WORKER_THREADS", "TOKIO_WORKER_THREADS=3")
    );
}

/// A CPU cgroup of this test's own with a quota of half a CPU (cgroup v1's `cpu` controller or
/// v2's `cpu.max`), removed on drop once its process has gone.
struct QuotaGroup {
    dir: std::path::PathBuf,
}

impl QuotaGroup {
    /// Creates the group; `None` when this test may not (not root).
    fn half_cpu() -> Option<QuotaGroup> {
        let name = format!("a2a-egress-test-{}", std::process::id());
        let v1 = std::path::Path::new("/sys/fs/cgroup/cpu");
        let v2 = std::path::Path::new("/sys/fs/cgroup/cgroup.controllers");
        let dir = if v1.join("cpu.cfs_quota_us").exists() {
            v1.join(&name)
        } else if v2.exists() {
            std::path::Path::new("/sys/fs/cgroup").join(&name)
        } else {
            panic!("neither a cgroup v1 cpu controller nor cgroup v2 is mounted");
        };
        if let Err(e) = std::fs::create_dir(&dir) {
            use std::io::ErrorKind::{PermissionDenied, ReadOnlyFilesystem};
            // Not root, or a container's read-only cgroupfs: nothing here can make a quota.
            assert!(
                matches!(e.kind(), PermissionDenied | ReadOnlyFilesystem),
                "creating {} failed: {e}",
                dir.display()
            );
            eprintln!("SKIPPED: cannot create {} ({e})", dir.display());
            return None;
        }
        let group = QuotaGroup { dir };
        if v1.join("cpu.cfs_quota_us").exists() {
            std::fs::write(group.dir.join("cpu.cfs_period_us"), "100000").unwrap();
            std::fs::write(group.dir.join("cpu.cfs_quota_us"), "50000").unwrap();
        } else {
            std::fs::write(group.dir.join("cpu.max"), "50000 100000").unwrap();
        }
        Some(group)
    }

    /// A wrapper that moves the shell into the group, then runs the rest of its command line.
    fn wrapper(&self) -> Vec<String> {
        let procs = self.dir.join("cgroup.procs");
        vec![
            "sh".into(),
            "-c".into(),
            format!("echo $$ > '{}' && exec \"$@\"", procs.display()),
            "sh".into(),
        ]
    }
}

impl Drop for QuotaGroup {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir(&self.dir);
    }
}

#[tokio::test]
async fn under_a_half_cpu_quota_the_data_plane_gets_one_thread_and_says_why() {
    let Some(group) = QuotaGroup::half_cpu() else {
        return;
    };
    let agent = SdkAgent::start(&[]);
    let config = config_head(&[]) + &integration("echo", &agent.card_url, "");
    let wrapper = group.wrapper();
    let wrapper: Vec<&str> = wrapper.iter().map(String::as_str).collect();
    let dir = tempfile::tempdir().unwrap();
    let mut gw = GatewayProc::start_wrapped(dir, &config, &[], &wrapper).await;
    one_call(&gw).await;
    let (n, from, why) = threads_said(&gw).await;
    assert_eq!((n, from.as_str()), (1, "cpus"), "{why}");
    assert!(
        why.contains("a CPU quota of 0.5 CPU (50000 µs per 100000 µs"),
        "{why}"
    );
    assert!(
        !why.contains("standard library"),
        "std and the reading disagree: {why}"
    );
    // The group can go once its process has.
    gw.process.terminate();
    gw.process
        .wait_timeout(Duration::from_secs(30))
        .expect("the gateway exits after SIGTERM");
}

/// `[runtime] keep_warm`: off by default (no `a2a-egress-warm` thread); set, one thread runs.
#[tokio::test]
async fn the_keep_warm_thread_runs_only_when_set() {
    let agent = SdkAgent::start(&[]);
    let warm_threads = |gw: &GatewayProc| count(&thread_names(gw.process.pid()), "a2a-egress-warm");
    let on = GatewayProc::start(
        &(config_head(&[])
            + "[runtime]\nkeep_warm = \"500us\"\n"
            + &integration("echo", &agent.card_url, "")),
        &[],
    )
    .await;
    one_call(&on).await;
    // Started right after the data plane: wait for it rather than sleeping a fixed time.
    crate::assert_eventually!(
        warm_threads(&on) == 1,
        "{:?}",
        thread_names(on.process.pid())
    );
    let off = GatewayProc::start(
        &(config_head(&[]) + &integration("echo", &agent.card_url, "")),
        &[],
    )
    .await;
    one_call(&off).await;
    // "serving" is logged after the thread would have been started: once it is out, none can come.
    crate::assert_eventually!(
        off.process
            .stderr_all()
            .0
            .iter()
            .any(|l| l.contains("serving") && l.contains("keep_warm=off")),
        "{}",
        off.process.stderr_tail()
    );
    assert_eq!(
        warm_threads(&off),
        0,
        "{:?}",
        thread_names(off.process.pid())
    );
    assert!(
        on.process
            .stderr_all()
            .0
            .iter()
            .any(|l| l.contains("serving") && l.contains("keep_warm=every 500us while busy")),
        "{}",
        on.process.stderr_tail()
    );
}
