//! The deploy kit's boundary run for real: the shipped `deploy/boundary/a2a-egress-boundary.sh`
//! installs its table in a network namespace this test makes (a "pod", joined by a veth pair to
//! an "outside" namespace holding the listeners), and a process of another UID than the
//! gateway's cannot open a connection out of it, but to loopback and the allowlist, while the
//! gateway's UID can; the refusals are immediate (a reset, not a timeout) and counted. Also the
//! script's refusals, and the systemd files as systemd itself reads them.
//!
//! Needs root (namespaces, nft), `ip`, `nft`, `setpriv`, `timeout`, bash (its `/dev/tcp` is the
//! client), python3 (the listeners) and `systemd-analyze`: a missing one FAILS the test naming
//! it (scripts/test.sh installs nftables and systemd on Debian). Does process and network I/O
//! only inside the namespaces it creates, and deletes them (the host's is never touched).

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::Value;

use crate::common::ChildGuard;
use crate::common::eventually::eventually_blocking;
use crate::common::process::run_within;
use crate::deploy_kit::boundary::script;

/// The gateway's UID (the pod's `runAsUser` in deploy/kubernetes/sidecar.yaml).
const GATEWAY: u32 = 65532;
/// Another UID: the orchestrator's there.
const OTHER: u32 = 10001;
/// Bound on every command (`ip`, `nft`, the script, one client connection).
const COMMAND: Duration = Duration::from_secs(20);

/// The allowlist the test installs: one IPv4 and one IPv6 TCP host:port in the outside
/// namespace, and one UDP port.
const ALLOWLIST: &str = "\
# the test's allowlist (PROTO ADDRESS[/PREFIX] PORT)
tcp 10.254.0.3/32 7001      # allowed host and port
tcp fd00:a2a::3 7001        # the same over IPv6
udp 10.254.0.3 5353         # a UDP service
";

/// Fails (never skips) when the machine cannot run the test, naming what is missing.
fn require_tools() {
    let uid = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Uid:"))
                .and_then(|l| l.split_whitespace().nth(1).map(str::to_owned))
        })
        .unwrap_or_default();
    assert_eq!(
        uid, "0",
        "deploy_boundary needs root (network namespaces and nftables); run the suite as root"
    );
    for tool in ["ip", "nft", "setpriv", "timeout", "bash", "python3"] {
        let found = std::env::var_os("PATH")
            .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(tool).is_file()));
        assert!(
            found,
            "deploy_boundary needs `{tool}` on PATH (Debian: `apt-get install nftables iproute2 \
             util-linux coreutils python3`; scripts/test.sh installs nftables when nft is absent)"
        );
    }
}

/// A network namespace of this test's own, deleted on drop (with the veth end inside it).
struct Netns {
    name: String,
}

impl Netns {
    fn new(role: &str) -> Netns {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let name = format!("a2a-egress-{role}-{}-{n}", std::process::id());
        let out = run_within(
            "ip netns add",
            Command::new("ip").args(["netns", "add", &name]),
            COMMAND,
        );
        assert!(out.status.success(), "ip netns add {name}: {out:?}");
        Netns { name }
    }

    /// `args` run inside the namespace.
    fn cmd(&self, args: &[impl AsRef<OsStr>]) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.name]).args(args);
        c
    }

    fn run(&self, args: &[impl AsRef<OsStr>]) -> Output {
        run_within(&format!("in {}", self.name), &mut self.cmd(args), COMMAND)
    }

    /// Runs `args` inside the namespace; panics with its output when it fails.
    fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(
            out.status.success(),
            "{args:?} in {} failed: {}{}",
            self.name,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = run_within(
            "ip netns del",
            Command::new("ip").args(["netns", "del", &self.name]),
            COMMAND,
        );
    }
}

/// A Python listener in `ns` on each `addr:port`: every connection it accepts gets `ok\n`, so a
/// client that reads it reached this listener (not just a SYN-ACK). It announces itself with one
/// JSON line once every socket is bound.
fn listen(ns: &Netns, addrs: &[&str]) -> ChildGuard {
    const SERVER: &str = r#"
import json, socket, sys, threading
def serve(s):
    while True:
        c, _ = s.accept()
        c.sendall(b"ok\n")
        c.close()
for spec in sys.argv[1:]:
    host, port = spec.rsplit(":", 1)
    s = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((host.strip("[]"), int(port)))
    s.listen(64)
    threading.Thread(target=serve, args=(s,), daemon=True).start()
print(json.dumps({"event": "listening", "on": sys.argv[1:]}), flush=True)
sys.stdin.read()
"#;
    let mut cmd = ns.cmd(&["python3", "-c", SERVER]);
    cmd.args(addrs);
    ChildGuard::spawn(&format!("listener in {}", ns.name), cmd, COMMAND)
}

/// The test's world: the "pod" (lo, veth0 10.254.0.1/24 and fd00:a2a::1/64, default routes out
/// through the veth) and the "outside" (veth1 with 10.254.0.2-3 and fd00:a2a::2-3), with
/// listeners on both sides. The outside is dropped last: the veth pair goes with the pod.
struct World {
    pod: Netns,
    outside: Netns,
    _listeners: Vec<ChildGuard>,
}

impl World {
    fn new() -> World {
        let outside = Netns::new("outside");
        let pod = Netns::new("pod");
        pod.ok(&["ip", "link", "set", "lo", "up"]);
        outside.ok(&["ip", "link", "set", "lo", "up"]);
        let peer = ["peer", "name", "veth1", "netns", outside.name.as_str()];
        pod.ok(&[&["ip", "link", "add", "veth0", "type", "veth"][..], &peer].concat());
        for (ns, dev, addrs) in [
            (&pod, "veth0", &["10.254.0.1/24", "fd00:a2a::1/64"][..]),
            (
                &outside,
                "veth1",
                &[
                    "10.254.0.2/24",
                    "10.254.0.3/24",
                    "fd00:a2a::2/64",
                    "fd00:a2a::3/64",
                ][..],
            ),
        ] {
            for a in addrs {
                // nodad: an IPv6 address is usable at once instead of after duplicate detection.
                let nodad: &[&str] = if a.contains(':') { &["nodad"] } else { &[] };
                ns.ok(&[&["ip", "addr", "add", a, "dev", dev][..], nodad].concat());
            }
            ns.ok(&["ip", "link", "set", dev, "up"]);
        }
        // The extra routes: everything else leaves the pod through the veth, as from a real pod.
        pod.ok(&["ip", "route", "add", "default", "via", "10.254.0.2"]);
        pod.ok(&["ip", "-6", "route", "add", "default", "via", "fd00:a2a::2"]);
        let listeners = vec![
            listen(
                &outside,
                &[
                    "10.254.0.2:7000",
                    "10.254.0.3:7001",
                    "10.254.0.3:7002",
                    "[fd00:a2a::2]:7000",
                    "[fd00:a2a::3]:7001",
                ],
            ),
            listen(&pod, &["127.0.0.1:7000", "[::1]:7000", "10.254.0.1:7000"]),
        ];
        World {
            pod,
            outside,
            _listeners: listeners,
        }
    }
}

/// What one connection attempt from the pod came to.
#[derive(Debug, PartialEq)]
enum Outcome {
    /// Connected and read the listener's `ok`.
    Reached,
    /// connect() failed with ECONNREFUSED (the table's reset).
    Refused,
    /// Anything else (a timeout, another error), with the client's output.
    Other(String),
}

/// One TCP connection from the pod to `host` (an IPv6 one without brackets) and `port`, by a
/// process of `uid` (and the same gid, no supplementary groups), bounded by 5 s.
fn connect(pod: &Netns, uid: u32, host: &str, port: u16) -> Outcome {
    let mut args = as_uid(uid);
    args.extend(["timeout", "5", "bash", "-c"].map(String::from));
    args.push(r#"exec 3<>"/dev/tcp/$0/$1" && read -r -t 5 line <&3 && echo "$line""#.into());
    args.extend([host.to_owned(), port.to_string()]);
    let out = pod.run(&args);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    if out.status.success() && stdout.trim() == "ok" {
        Outcome::Reached
    } else if stderr.contains("Connection refused") {
        Outcome::Refused
    } else {
        Outcome::Other(format!("{:?} {stdout} {stderr}", out.status))
    }
}

/// One UDP datagram from the pod by `uid`: whether the kernel let it out (a refused one fails
/// the send with EPERM; UDP gives no other answer to wait for).
fn send_udp(pod: &Netns, uid: u32, host: &str, port: u16) -> Result<(), String> {
    let mut args = as_uid(uid);
    args.extend(["bash", "-c", r#"echo boundary >"/dev/udp/$0/$1""#].map(String::from));
    args.extend([host.to_owned(), port.to_string()]);
    let out = pod.run(&args);
    if out.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

/// `setpriv` arguments that run the rest as `uid`:`uid` with no supplementary groups.
fn as_uid(uid: u32) -> Vec<String> {
    let uid = uid.to_string();
    vec![
        "setpriv".into(),
        "--reuid".into(),
        uid.clone(),
        "--regid".into(),
        uid,
        "--clear-groups".into(),
    ]
}

/// Runs the shipped script in `ns` with gateway UID [`GATEWAY`], `allowlist` and `args`, as root
/// with no capability but NET_ADMIN (what the Kubernetes init container has).
fn run_script(ns: &Netns, allowlist: &Path, args: &[&str]) -> Output {
    run_script_with(ns, allowlist, &[], args)
}

/// [`run_script`] with more `NAME=value` settings in its environment.
fn run_script_with(ns: &Netns, allowlist: &Path, env: &[&str], args: &[&str]) -> Output {
    let script = script();
    let allow = format!("A2A_EGRESS_BOUNDARY_ALLOWLIST={}", allowlist.display());
    let uid = format!("A2A_EGRESS_GATEWAY_UID={GATEWAY}");
    let head = [
        "setpriv",
        "--bounding-set=-all,+net_admin",
        "--inh-caps=-all",
        "env",
        "-u",
        "A2A_EGRESS_EXEMPT_UIDS",
        &allow,
        &uid,
    ];
    ns.run(&[&head[..], env, &[script.to_str().unwrap()], args].concat())
}

/// Writes `text` as the allowlist file `name` in `dir`.
fn allowlist(dir: &tempfile::TempDir, name: &str, text: &str) -> PathBuf {
    let path = dir.path().join(name);
    std::fs::write(&path, text).unwrap();
    path
}

/// The table as nft lists it (JSON), `None` when there is none.
fn table(ns: &Netns) -> Option<Value> {
    let out = ns.run(&["nft", "-j", "list", "table", "inet", "a2a_egress"]);
    out.status
        .success()
        .then(|| serde_json::from_slice(&out.stdout).expect("nft -j output"))
}

/// The rules of the table's output chain, as nft's JSON (handles dropped, so two listings of the
/// same rules compare equal).
fn rules(ns: &Netns) -> Vec<Value> {
    let t = table(ns).expect("the table is installed");
    t["nftables"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|o| o.get("rule").cloned())
        .map(|mut r| {
            r.as_object_mut().unwrap().remove("handle");
            r
        })
        .collect()
}

/// Packets the table's `blocked` counter has counted.
fn blocked(ns: &Netns) -> u64 {
    let out = ns.ok(&[
        "nft",
        "-j",
        "list",
        "counter",
        "inet",
        "a2a_egress",
        "blocked",
    ]);
    let v: Value = serde_json::from_str(&out).expect("nft -j output");
    v["nftables"]
        .as_array()
        .and_then(|os| os.iter().find_map(|o| o["counter"]["packets"].as_u64()))
        .unwrap_or_else(|| panic!("no packets in {v}"))
}

/// Installs the shipped rules, twice (the second run must replace, not add).
fn install(world: &World, dir: &tempfile::TempDir) {
    let path = allowlist(dir, "boundary.allow", ALLOWLIST);
    let mut listed = Vec::new();
    for _ in 0..2 {
        let out = run_script(&world.pod, &path, &[]);
        assert!(out.status.success(), "the script failed: {out:?}");
        listed.push(rules(&world.pod));
    }
    assert!(
        listed[0] == listed[1],
        "the second run changed the rules: {} then {}",
        listed[0].len(),
        listed[1].len()
    );
    let tables = world.pod.ok(&["nft", "list", "tables"]);
    assert_eq!(tables.trim(), "table inet a2a_egress", "one table");
}

#[test]
fn only_the_gateways_uid_leaves_the_pod_but_to_loopback_and_the_allowlist() {
    require_tools();
    let world = World::new();
    let dir = tempfile::tempdir().unwrap();
    // The network works before the table: the gateway's UID reaches the outside (the veth may
    // take a moment to carry, so this positive check may retry).
    eventually_blocking(Duration::from_secs(10), "the outside is reachable", || {
        (connect(&world.pod, GATEWAY, "10.254.0.2", 7000) == Outcome::Reached).then_some(())
    });
    install(&world, &dir);
    let before = blocked(&world.pod);

    let reached = [
        ("127.0.0.1", 7000),
        ("::1", 7000),
        ("10.254.0.3", 7001),
        ("fd00:a2a::3", 7001),
    ];
    for (host, port) in reached {
        let got = connect(&world.pod, OTHER, host, port);
        assert_eq!(got, Outcome::Reached, "uid {OTHER} to {host} port {port}");
    }
    // Not allowlisted: another outside host, an allowlisted host's other port, the pod's own
    // address (not loopback), the IPv6 outside host, an address only routed out.
    let refused = [
        ("10.254.0.2", 7000),
        ("10.254.0.3", 7002),
        ("10.254.0.1", 7000),
        ("fd00:a2a::2", 7000),
        ("198.51.100.7", 443),
    ];
    for (host, port) in refused {
        let got = connect(&world.pod, OTHER, host, port);
        assert_eq!(got, Outcome::Refused, "uid {OTHER} to {host} port {port}");
    }
    let after = blocked(&world.pod);
    assert!(
        after >= before + refused.len() as u64,
        "the blocked counter went from {before} to {after} over {} refusals",
        refused.len()
    );
    // The gateway's UID reaches what the other UID could not (the first four have listeners).
    for (host, port) in &refused[..4] {
        let got = connect(&world.pod, GATEWAY, host, *port);
        assert_eq!(got, Outcome::Reached, "uid {GATEWAY} to {host} port {port}");
    }

    // UDP: the allowlisted port goes out, another is refused at the send; the gateway's goes.
    assert_eq!(send_udp(&world.pod, OTHER, "10.254.0.3", 5353), Ok(()));
    let err = send_udp(&world.pod, OTHER, "10.254.0.2", 5353).expect_err("a refused datagram");
    assert!(err.contains("Operation not permitted"), "{err}");
    assert_eq!(send_udp(&world.pod, GATEWAY, "10.254.0.2", 5353), Ok(()));
    assert!(
        blocked(&world.pod) > after,
        "the refused datagram is counted"
    );

    // The control: without the table the other UID reaches the same listener, so the refusals
    // above were the table's, not the network's.
    let out = run_script(
        &world.pod,
        &dir.path().join("boundary.allow"),
        &["--remove"],
    );
    assert!(out.status.success(), "{out:?}");
    assert!(table(&world.pod).is_none());
    let got = connect(&world.pod, OTHER, "10.254.0.2", 7000);
    assert_eq!(got, Outcome::Reached, "without the table");
    drop(world.outside);
}

#[test]
fn an_exempt_uid_goes_out_like_the_gateway_and_only_that_one() {
    require_tools();
    let world = World::new();
    let dir = tempfile::tempdir().unwrap();
    let path = allowlist(&dir, "boundary.allow", ALLOWLIST);
    let exempt = format!("A2A_EGRESS_EXEMPT_UIDS={OTHER} 4242");
    let out = run_script_with(&world.pod, &path, &[&exempt], &[]);
    assert!(out.status.success(), "{out:?}");
    eventually_blocking(Duration::from_secs(10), "the exempt UID gets out", || {
        (connect(&world.pod, OTHER, "10.254.0.2", 7000) == Outcome::Reached).then_some(())
    });
    let got = connect(&world.pod, OTHER + 1, "10.254.0.2", 7000);
    assert_eq!(got, Outcome::Refused, "a UID that is not listed");
}

#[test]
fn a_refused_allowlist_or_uid_leaves_the_installed_table_as_it_was() {
    require_tools();
    let pod = Netns::new("refusal");
    let dir = tempfile::tempdir().unwrap();
    let good = allowlist(&dir, "good.allow", ALLOWLIST);
    let out = run_script(&pod, &good, &[]);
    assert!(out.status.success(), "{out:?}");
    let installed = rules(&pod);

    for (line, why) in [
        ("tcp 10.254.0.0/0 443", "allows every address"),
        ("icmp 10.254.0.3 1", "tcp or udp"),
        ("tcp 10.254.0.300 7001", "not an IPv4 address"),
        ("tcp 10.254.0.3 70000", "not a port"),
        ("tcp 10.254.0.3", "want 'PROTO"),
    ] {
        let bad = allowlist(&dir, "bad.allow", &format!("{ALLOWLIST}{line}\n"));
        let out = run_script(&pod, &bad, &[]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(65), "{line}: {stderr}");
        assert!(
            stderr.contains(why) && stderr.contains(":5:"),
            "{line}: {stderr}"
        );
        assert_eq!(rules(&pod), installed, "{line}: the table changed");
    }
    // No gateway UID: refused before anything is read.
    let out = pod.run(&[
        "env",
        "-u",
        "A2A_EGRESS_GATEWAY_UID",
        &format!("A2A_EGRESS_BOUNDARY_ALLOWLIST={}", good.display()),
        script().to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(64), "{out:?}");
    assert_eq!(rules(&pod), installed);
    // The printed rule set is the one installed (what --print shows operators is the truth).
    let printed =
        crate::deploy_kit::boundary::print_rules(&good, &GATEWAY.to_string()).expect("--print");
    let check = run_script(&pod, &good, &["--check"]);
    assert!(check.status.success(), "nft -c refuses --print's rule set");
    assert!(printed.contains(&format!("meta skuid {GATEWAY} counter accept")));
}

#[test]
fn the_systemd_drop_in_and_boundary_unit_are_what_systemd_reads() {
    let found = std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join("systemd-analyze").is_file()));
    assert!(
        found,
        "`systemd-analyze` is missing (Debian: apt-get install systemd; scripts/test.sh does)"
    );
    let deploy = crate::common::repo_root().join("deploy/systemd");
    let dir = tempfile::tempdir().unwrap();
    // A stand-in orchestrator unit with the shipped drop-in, and the boundary unit pointing at
    // the repository's script instead of its installed path.
    std::fs::create_dir(dir.path().join("orchestrator.service.d")).unwrap();
    std::fs::write(
        dir.path().join("orchestrator.service"),
        "[Unit]\nDescription=stand-in orchestrator\n[Service]\nExecStart=/bin/true\n",
    )
    .unwrap();
    let drop_in = "orchestrator.service.d/a2a-egress-boundary.conf";
    std::fs::copy(deploy.join(drop_in), dir.path().join(drop_in)).unwrap();
    let unit = std::fs::read_to_string(deploy.join("a2a-egress-boundary.service")).unwrap();
    let unit = unit.replace(
        "/usr/local/sbin/a2a-egress-boundary",
        script().to_str().unwrap(),
    );
    std::fs::write(dir.path().join("a2a-egress-boundary.service"), unit).unwrap();

    let out = run_within(
        "systemd-analyze verify",
        Command::new("systemd-analyze")
            .arg("verify")
            .arg(dir.path().join("orchestrator.service"))
            .arg(dir.path().join("a2a-egress-boundary.service"))
            // The drop-in is found beside the unit; the trailing ':' keeps the built-in paths.
            .env("SYSTEMD_UNIT_PATH", format!("{}:", dir.path().display())),
        COMMAND,
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stderr.trim().is_empty(),
        "systemd-analyze verify: {:?}\n{stderr}",
        out.status
    );
}
