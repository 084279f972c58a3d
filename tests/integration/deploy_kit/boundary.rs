//! The boundary's deploy files against each other: the Kubernetes pod runs the boundary init
//! container first, with NET_ADMIN only, and gives the orchestrator a UID of its own that is not
//! the one the rules let out; the allowlists (the example file and the pod's ConfigMap) are read
//! by the shipped script itself (`--print`, which needs neither root nor nft); the egress
//! NetworkPolicy opens every port the allowlist and the integrations need and nothing unbounded;
//! the systemd drop-in denies all but localhost and the same example addresses. Reads files and
//! runs the script and `sh -n`; no network. `deploy_boundary` runs the rules for real.

use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::Value;

use super::{
    deploy_dir, docker_instructions, exec_form, gateway_container, kube_config, kube_docs, of_kind,
    pod_containers, read, unit_entries,
};
use crate::common::process::run_within;

/// The shipped boundary script (the one file every check and the namespace test run).
pub(crate) fn script() -> PathBuf {
    deploy_dir().join("boundary/a2a-egress-boundary.sh")
}

/// Where the boundary image puts the script (its Dockerfile's `COPY` into `/usr/local/sbin`).
const IMAGE_SCRIPT: &str = "/usr/local/sbin/a2a-egress-boundary";

/// Parses a shell script with its own interpreter (the shebang's) and `-n`: syntax only, nothing
/// runs.
pub(super) fn assert_shell_parses(path: &Path, text: &str) {
    let shebang = text
        .lines()
        .next()
        .and_then(|l| l.strip_prefix("#!"))
        .unwrap_or_else(|| panic!("{}: no #! line", path.display()));
    let mut words = shebang.split_whitespace();
    let mut interpreter = words.next().unwrap_or_default();
    if interpreter.ends_with("/env") {
        interpreter = words.next().unwrap_or_default();
    }
    let out = run_within(
        "shell syntax check",
        Command::new(interpreter).arg("-n").arg(path),
        Duration::from_secs(10),
    );
    assert!(
        out.status.success(),
        "{}: {interpreter} -n refuses it:\n{}",
        path.display(),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The rule set the script prints for `allowlist` and gateway UID `uid`, or its exit code and
/// message when it refuses them.
pub(crate) fn print_rules(allowlist: &Path, uid: &str) -> Result<String, (Option<i32>, String)> {
    let out = run_within(
        "a2a-egress-boundary.sh --print",
        Command::new(script())
            .arg("--print")
            .env("A2A_EGRESS_GATEWAY_UID", uid)
            .env("A2A_EGRESS_BOUNDARY_ALLOWLIST", allowlist)
            .env_remove("A2A_EGRESS_EXEMPT_UIDS"),
        Duration::from_secs(10),
    );
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    if out.status.success() {
        Ok(String::from_utf8(out.stdout).expect("the rule set is UTF-8"))
    } else {
        Err((out.status.code(), stderr))
    }
}

/// The entries of an allowlist, as the script reads them: panics with its message when it
/// refuses the file, and when it makes a number of rules other than the file's entry lines.
pub(super) fn allow_entries(path: &Path) -> usize {
    let rules = print_rules(path, "65532")
        .unwrap_or_else(|e| panic!("{}: the boundary script refuses it: {e:?}", path.display()));
    let made = rules
        .lines()
        .filter(|l| l.contains("comment \"allowlist line "))
        .count();
    let written = entry_lines(&read(path)).len();
    assert_eq!(
        made,
        written,
        "{}: one rule per entry\n{rules}",
        path.display()
    );
    made
}

/// The entry lines of an allowlist's text (comments and blanks dropped), split into fields.
fn entry_lines(text: &str) -> Vec<Vec<String>> {
    text.lines()
        .map(|l| l.split('#').next().unwrap_or_default())
        .map(|l| l.split_whitespace().map(str::to_owned).collect::<Vec<_>>())
        .filter(|f| !f.is_empty())
        .collect()
}

/// A container's effective UID: its own `runAsUser`, else the pod's.
fn uid_of(pod: &Value, container: &Value) -> u64 {
    container["securityContext"]["runAsUser"]
        .as_u64()
        .or_else(|| pod["securityContext"]["runAsUser"].as_u64())
        .unwrap_or_else(|| panic!("{}: no runAsUser", container["name"]))
}

fn env_of<'a>(container: &'a Value, name: &str) -> &'a str {
    container["env"]
        .as_array()
        .and_then(|es| es.iter().find(|e| e["name"] == name))
        .and_then(|e| e["value"].as_str())
        .unwrap_or_else(|| panic!("{}: no {name}", container["name"]))
}

#[test]
fn kubernetes_boundary_runs_first_with_net_admin_only_and_the_orchestrator_has_its_own_uid() {
    let docs = kube_docs();
    let pod = &of_kind(&docs, "Deployment")["spec"]["template"]["spec"];
    assert_ne!(pod["hostNetwork"], true, "the rules would land on the node");
    let boundary = &pod["initContainers"][0];
    assert_eq!(
        boundary["name"], "a2a-egress-boundary",
        "the first init container"
    );
    let gateway = gateway_container(pod);
    let orchestrator = pod["containers"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["name"] == "orchestrator"))
        .expect("the orchestrator");

    // The UID the rules let out is the gateway's, and only the gateway's.
    let gateway_uid = uid_of(pod, gateway);
    assert_eq!(
        env_of(boundary, "A2A_EGRESS_GATEWAY_UID"),
        gateway_uid.to_string()
    );
    let orchestrator_uid = uid_of(pod, orchestrator);
    assert_ne!(orchestrator_uid, gateway_uid, "the orchestrator would pass");
    assert_ne!(orchestrator_uid, 0);

    // NET_ADMIN in the boundary container only (as UID 0: runtimes give added capabilities to
    // root only); every other container runs without any and not as root.
    let caps = &boundary["securityContext"]["capabilities"];
    assert_eq!(caps["add"], serde_json::json!(["NET_ADMIN"]));
    assert_eq!(uid_of(pod, boundary), 0);
    for c in pod_containers(pod).into_iter().skip(1) {
        let sc = &c["securityContext"];
        assert!(sc["capabilities"]["add"].is_null(), "{}", c["name"]);
        assert_ne!(uid_of(pod, c), 0, "{}", c["name"]);
        assert_ne!(sc["privileged"], true, "{}", c["name"]);
    }

    // It runs the image's script (no command of its own), built from deploy/boundary.
    assert!(boundary["command"].is_null() && boundary["args"].is_null());
    let dockerfile = read(&deploy_dir().join("boundary/Dockerfile"));
    let image = boundary["image"].as_str().unwrap();
    assert!(
        dockerfile.contains(&format!("docker build -t {image} deploy/boundary")),
        "the Dockerfile says how to build {image}"
    );
    let ins = docker_instructions(&dockerfile);
    let last = |op: &str| ins.iter().rev().find(|(o, _)| o == op).unwrap().1.clone();
    assert_eq!(exec_form("ENTRYPOINT", &last("ENTRYPOINT")), [IMAGE_SCRIPT]);
    assert!(
        ins.iter().any(|(op, a)| op == "COPY"
            && a.ends_with(&format!("a2a-egress-boundary.sh {IMAGE_SCRIPT}"))),
        "the image holds the shipped script: {ins:?}"
    );

    // The allowlist it reads is the ConfigMap's, and the script accepts it.
    let text = configmap_allowlist(&docs, pod, boundary);
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("boundary.allow"), &text).unwrap();
    assert!(allow_entries(&tmp.path().join("boundary.allow")) > 0);
    assert_egress_policy_opens(&docs, &entry_lines(&text));
}

/// The text of the allowlist the boundary container reads: the ConfigMap item mounted where
/// its `A2A_EGRESS_BOUNDARY_ALLOWLIST` points.
fn configmap_allowlist(docs: &[Value], pod: &Value, boundary: &Value) -> String {
    let path = env_of(boundary, "A2A_EGRESS_BOUNDARY_ALLOWLIST");
    let (dir, file) = path.rsplit_once('/').unwrap();
    let mount = boundary["volumeMounts"]
        .as_array()
        .and_then(|ms| ms.iter().find(|m| m["mountPath"] == dir))
        .unwrap_or_else(|| panic!("nothing mounted at {dir}"));
    let volume = pod["volumes"]
        .as_array()
        .and_then(|vs| vs.iter().find(|v| v["name"] == mount["name"]))
        .unwrap();
    let item = volume["configMap"]["items"]
        .as_array()
        .and_then(|is| is.iter().find(|i| i["path"] == file))
        .unwrap_or_else(|| panic!("{file} is not an item of {volume}"));
    let map = docs
        .iter()
        .find(|d| d["kind"] == "ConfigMap" && d["metadata"]["name"] == volume["configMap"]["name"])
        .expect("the boundary's ConfigMap");
    map["data"][item["key"].as_str().unwrap()]
        .as_str()
        .expect("the allowlist's text")
        .to_owned()
}

/// The egress NetworkPolicy selects the pod, bounds every rule (destinations and ports), and
/// opens each `(protocol, port)` the allowlist `entries` and the integrations' origins use: a
/// port missing there would drop, outside the pod, what the pod's table lets through.
fn assert_egress_policy_opens(docs: &[Value], entries: &[Vec<String>]) {
    let policy = docs
        .iter()
        .find(|d| {
            d["kind"] == "NetworkPolicy"
                && d["spec"]["policyTypes"]
                    .as_array()
                    .is_some_and(|t| t.contains(&"Egress".into()))
        })
        .expect("an egress NetworkPolicy");
    let labels = &of_kind(docs, "Deployment")["spec"]["template"]["metadata"]["labels"];
    for (k, v) in policy["spec"]["podSelector"]["matchLabels"]
        .as_object()
        .unwrap()
    {
        assert_eq!(&labels[k], v, "the policy selects the pod ({k})");
    }
    let mut open = Vec::new();
    for rule in policy["spec"]["egress"].as_array().expect("egress rules") {
        assert!(
            rule["to"].as_array().is_some_and(|t| !t.is_empty()),
            "an egress rule to everywhere: {rule}"
        );
        let ports = rule["ports"].as_array().expect("ports");
        assert!(!ports.is_empty(), "an egress rule on every port: {rule}");
        for p in ports {
            let proto = p["protocol"].as_str().unwrap_or("TCP").to_ascii_lowercase();
            open.push((proto, p["port"].as_u64().expect("a numeric port")));
        }
    }
    let mut want: Vec<(String, u64)> = entries
        .iter()
        .map(|e| {
            (
                e[0].clone(),
                e[2].parse().expect("single ports in the example"),
            )
        })
        .collect();
    for i in &kube_config(docs).integrations {
        for o in &i.origins {
            let (scheme, authority) = o.split_once("://").expect("scheme://host[:port]");
            let default = if scheme == "http" { 80 } else { 443 };
            let port = authority.rsplit_once(':').and_then(|(_, p)| p.parse().ok());
            want.push(("tcp".into(), port.unwrap_or(default)));
        }
    }
    for w in want {
        assert!(open.contains(&w), "the egress policy drops {w:?}: {open:?}");
    }
}

/// An address or prefix as systemd's `IPAddressAllow=` takes it, checked: `None` when not one.
fn prefix(value: &str) -> Option<(IpAddr, u8)> {
    let (addr, len) = value.split_once('/').unwrap_or((value, ""));
    let addr: IpAddr = addr.parse().ok()?;
    let max = if addr.is_ipv4() { 32 } else { 128 };
    let len = if len.is_empty() {
        max
    } else {
        len.parse().ok()?
    };
    (1..=max).contains(&len).then_some((addr, len))
}

#[test]
fn systemd_drop_in_denies_everything_but_localhost_and_the_example_allowlist() {
    let path = deploy_dir().join("systemd/orchestrator.service.d/a2a-egress-boundary.conf");
    let entries = unit_entries(&path, &read(&path));
    assert!(
        entries.iter().all(|(s, _, _)| s == "Service"),
        "{entries:?}"
    );
    let get = |k: &str| -> Vec<&str> {
        entries
            .iter()
            .filter(|(_, key, _)| key == k)
            .map(|(_, _, v)| v.as_str())
            .collect()
    };
    assert_eq!(get("IPAddressDeny"), ["any"]);
    let allow = get("IPAddressAllow");
    assert!(allow.contains(&"localhost"), "{allow:?}");
    let listed: Vec<&str> = allow.into_iter().filter(|a| *a != "localhost").collect();
    for a in &listed {
        assert!(
            prefix(a).is_some(),
            "IPAddressAllow={a}: not one address or prefix (systemd would ignore it, or open all)"
        );
    }
    // The same example dependencies as the nftables allowlist, so the two stay one example.
    let example = deploy_dir().join("boundary/boundary.allow");
    let mut in_example: Vec<String> = entry_lines(&read(&example))
        .into_iter()
        .map(|e| e[1].clone())
        .collect();
    in_example.dedup();
    assert_eq!(
        listed, in_example,
        "the drop-in's and boundary.allow's addresses"
    );
    // What could lift the filter is out of the unit's reach.
    let caps = get("CapabilityBoundingSet");
    let removed = caps[0]
        .strip_prefix('~')
        .expect("a set of removed capabilities");
    for cap in ["CAP_SYS_ADMIN", "CAP_NET_ADMIN", "CAP_BPF", "CAP_NET_RAW"] {
        assert!(removed.split_whitespace().any(|c| c == cap), "{cap}");
    }
    assert_eq!(get("NoNewPrivileges"), ["yes"]);

    // The host alternative: the same script, as a oneshot that stays active.
    let unit = deploy_dir().join("systemd/a2a-egress-boundary.service");
    let u = unit_entries(&unit, &read(&unit));
    let one = |k: &str| {
        u.iter()
            .find(|(_, key, _)| key == k)
            .map(|(_, _, v)| v.as_str())
            .unwrap_or_else(|| panic!("no {k}"))
    };
    assert_eq!(one("Type"), "oneshot");
    assert_eq!(one("RemainAfterExit"), "yes");
    assert_eq!(one("ExecStart"), IMAGE_SCRIPT);
    assert!(
        one("After").contains("nftables.service"),
        "after a ruleset flush"
    );
}
