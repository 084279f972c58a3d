//! `deploy/` checked against the gateway it deploys: every file parses (YAML, JSON, the
//! Dockerfiles, the systemd units and drop-ins, the boundary's shell script with its shell's
//! `-n` and its allowlists with the script itself; a file of a kind this module does not know
//! fails the test, so nothing in `deploy/` goes unchecked); the Dockerfile's, the Kubernetes
//! container's and the systemd unit's command lines parse with the real CLI definition; the
//! Kubernetes ConfigMap's
//! `gateway.toml` is a valid config whose admin port the probes use; and the Prometheus alert
//! rules, the Grafana dashboard and the runbook name only metrics that a live gateway's
//! `/metrics` exports (the scrape comes from [`crate::observability::exported_families`]).
//! The submodules check what a first deployment trips over: the image's build and the README's
//! `docker run` ([`image`]), the pod's shutdown, memory and scrape ([`pod`]), and each alert's
//! runbook ([`runbook`]), and the boundary that keeps the orchestrator from skipping the
//! gateway ([`boundary`]; `deploy_boundary` runs its rules in a network namespace).
//!
//! Docker itself is not needed: the image is not built here.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::repo_root;

pub(crate) mod boundary;
mod image;
mod pod;
mod runbook;

fn deploy_dir() -> PathBuf {
    repo_root().join("deploy")
}

/// Every file under `deploy/`, recursively, sorted.
fn deploy_files() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).expect("reading deploy/") {
            let p = e.expect("a directory entry").path();
            if p.is_dir() {
                walk(&p, out);
            } else {
                out.push(p);
            }
        }
    }
    let mut out = Vec::new();
    walk(&deploy_dir(), &mut out);
    out.sort();
    out
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Every YAML document of `text`, as JSON values.
fn yaml_docs(path: &Path, text: &str) -> Vec<Value> {
    use serde::Deserialize as _;
    serde_yaml_ng::Deserializer::from_str(text)
        .map(|d| {
            Value::deserialize(d)
                .unwrap_or_else(|e| panic!("{}: invalid YAML: {e}", path.display()))
        })
        .filter(|v| !v.is_null())
        .collect()
}

/// A Dockerfile's instructions (continuation lines joined), as (INSTRUCTION, arguments).
fn docker_instructions(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut cur = String::new();
    for line in text.lines() {
        let t = line.trim();
        if cur.is_empty() && (t.is_empty() || t.starts_with('#')) {
            continue;
        }
        if let Some(head) = t.strip_suffix('\\') {
            cur.push_str(head);
            cur.push(' ');
            continue;
        }
        cur.push_str(t);
        let (op, args) = cur.split_once(' ').unwrap_or((&cur, ""));
        out.push((op.to_ascii_uppercase(), args.trim().to_owned()));
        cur.clear();
    }
    assert!(
        cur.is_empty(),
        "the Dockerfile ends inside a continued line"
    );
    out
}

/// A systemd unit's `key=value` lines by section (comments and blank lines skipped).
fn unit_entries(path: &Path, text: &str) -> Vec<(String, String, String)> {
    let mut section = String::new();
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let t = line.trim();
        if t.is_empty() || t.starts_with('#') || t.starts_with(';') {
            continue;
        }
        if let Some(s) = t.strip_prefix('[').and_then(|s| s.strip_suffix(']')) {
            section = s.to_owned();
            continue;
        }
        let (k, v) = t
            .split_once('=')
            .unwrap_or_else(|| panic!("{}:{}: not key=value: {t}", path.display(), n + 1));
        assert!(
            !section.is_empty(),
            "{}:{}: key outside a section",
            path.display(),
            n + 1
        );
        out.push((section.clone(), k.trim().to_owned(), v.trim().to_owned()));
    }
    out
}

/// Parses `args` (without the program name) with the real command line; panics naming `what`.
fn assert_cli_accepts(what: &str, args: &[String]) {
    let argv = std::iter::once("a2a-egress".to_owned()).chain(args.iter().cloned());
    let m = a2a_egress::cli::command()
        .try_get_matches_from(argv)
        .unwrap_or_else(|e| {
            panic!("{what}: {args:?} is not a valid a2a-egress command line:\n{e}")
        });
    assert_eq!(m.subcommand_name(), Some("serve"), "{what}: {args:?}");
}

#[test]
fn every_file_in_deploy_parses() {
    let files = deploy_files();
    assert!(files.len() >= 6, "{files:?}");
    for f in &files {
        let name = f.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        let text = read(f);
        match f.extension().and_then(|e| e.to_str()) {
            Some("yaml" | "yml") => assert!(!yaml_docs(f, &text).is_empty(), "{name}: no document"),
            Some("json") => {
                let _: Value = serde_json::from_str(&text)
                    .unwrap_or_else(|e| panic!("{}: invalid JSON: {e}", f.display()));
            }
            Some("service") => assert!(!unit_entries(f, &text).is_empty(), "{name}"),
            // A systemd drop-in (`<unit>.service.d/*.conf`): the same syntax as a unit.
            Some("conf")
                if f.parent()
                    .is_some_and(|d| d.to_string_lossy().ends_with(".d")) =>
            {
                assert!(!unit_entries(f, &text).is_empty(), "{name}")
            }
            Some("sh") => boundary::assert_shell_parses(f, &text),
            // An allowlist of the boundary: the script itself reads it.
            Some("allow") => assert!(boundary::allow_entries(f) > 0, "{name}: no entry"),
            // The runbook: its sections are checked against the alerts in `runbook`.
            Some("md") => assert!(text.lines().any(|l| l.starts_with("## ")), "{name}"),
            None if name == "Dockerfile" => {
                const KNOWN: &[&str] = &[
                    "FROM",
                    "RUN",
                    "COPY",
                    "WORKDIR",
                    "USER",
                    "VOLUME",
                    "EXPOSE",
                    "ENTRYPOINT",
                    "CMD",
                    "ENV",
                    "ARG",
                    "LABEL",
                    "HEALTHCHECK",
                    "STOPSIGNAL",
                ];
                for (op, _) in docker_instructions(&text) {
                    assert!(
                        KNOWN.contains(&op.as_str()),
                        "Dockerfile: unknown instruction {op}"
                    );
                }
            }
            _ => panic!(
                "{}: a kind of file this test does not check; teach deploy_kit.rs to parse it",
                f.display()
            ),
        }
    }
}

/// The JSON array of an `ENTRYPOINT`/`CMD` (exec form; the shell form is refused: it would run
/// the gateway under `sh -c`, which the runtime image does not have).
fn exec_form(op: &str, args: &str) -> Vec<String> {
    serde_json::from_str(args)
        .unwrap_or_else(|e| panic!("{op} must be in exec form (a JSON array): {args} ({e})"))
}

#[test]
fn dockerfile_runs_the_cli_as_a_non_root_user_with_config_and_state_volumes() {
    let ins = docker_instructions(&read(&deploy_dir().join("Dockerfile")));
    let froms: Vec<usize> = (0..ins.len()).filter(|i| ins[*i].0 == "FROM").collect();
    assert!(froms.len() >= 2, "a multi-stage build: {ins:?}");
    let builder = &ins[..*froms.last().unwrap()];
    let runtime = &ins[*froms.last().unwrap()..];
    assert!(
        builder
            .iter()
            .any(|(op, a)| op == "RUN" && a.contains("cmake")),
        "the builder installs cmake"
    );
    assert!(
        builder
            .iter()
            .any(|(op, a)| op == "RUN" && a.contains("cargo build --release --locked")),
        "the builder builds with the lockfile"
    );
    let last = |op: &str| {
        runtime
            .iter()
            .rev()
            .find(|(o, _)| o == op)
            .map(|(_, a)| a.clone())
            .unwrap_or_else(|| panic!("the runtime stage has no {op}"))
    };
    let user = last("USER");
    let uid = user.split(':').next().unwrap_or_default();
    assert!(
        !matches!(uid, "0" | "root" | ""),
        "runs as root: USER {user}"
    );
    let entrypoint = exec_form("ENTRYPOINT", &last("ENTRYPOINT"));
    assert!(
        entrypoint
            .first()
            .is_some_and(|p| p.ends_with("/a2a-egress")),
        "{entrypoint:?}"
    );
    let cmd = exec_form("CMD", &last("CMD"));
    let args: Vec<String> = entrypoint.iter().skip(1).chain(&cmd).cloned().collect();
    assert_cli_accepts("Dockerfile ENTRYPOINT + CMD", &args);
    let volumes = exec_form("VOLUME", &last("VOLUME"));
    let config = args
        .iter()
        .skip_while(|a| *a != "--config")
        .nth(1)
        .expect("CMD names --config");
    assert!(
        volumes.iter().any(|v| Path::new(config).starts_with(v)),
        "the config {config} is on a volume {volumes:?}"
    );
    assert!(
        volumes.iter().any(|v| v.contains("/var/lib/")),
        "a state volume: {volumes:?}"
    );
    // The binary the ENTRYPOINT names is the one the build copies in.
    assert!(
        runtime
            .iter()
            .any(|(op, a)| op == "COPY" && a.ends_with(entrypoint[0].as_str())),
        "{runtime:?}"
    );
}

#[test]
fn systemd_unit_is_hardened_and_its_command_line_parses() {
    let path = deploy_dir().join("a2a-egress.service");
    let entries = unit_entries(&path, &read(&path));
    let get = |k: &str| {
        entries
            .iter()
            .filter(|(s, key, _)| s == "Service" && key == k)
            .map(|(_, _, v)| v.as_str())
            .collect::<Vec<_>>()
    };
    let exec = get("ExecStart");
    assert_eq!(exec.len(), 1, "{exec:?}");
    let mut words = exec[0].split_whitespace().map(str::to_owned);
    assert!(
        words.next().is_some_and(|p| p.ends_with("/a2a-egress")),
        "{exec:?}"
    );
    assert_cli_accepts("ExecStart", &words.collect::<Vec<_>>());
    for (k, v) in [
        ("NoNewPrivileges", "yes"),
        ("ProtectSystem", "strict"),
        ("ProtectHome", "yes"),
        ("PrivateTmp", "yes"),
        ("PrivateDevices", "yes"),
        ("DynamicUser", "yes"),
        ("CapabilityBoundingSet", ""),
        ("RestrictSUIDSGID", "yes"),
        ("MemoryDenyWriteExecute", "yes"),
        ("LockPersonality", "yes"),
    ] {
        assert_eq!(get(k), [v], "{k}");
    }
    assert!(get("SystemCallFilter").contains(&"@system-service"));
}

/// The documents of the Kubernetes example, by kind.
fn kube_docs() -> Vec<Value> {
    let path = deploy_dir().join("kubernetes/sidecar.yaml");
    yaml_docs(&path, &read(&path))
}

fn of_kind<'a>(docs: &'a [Value], kind: &str) -> &'a Value {
    docs.iter()
        .find(|d| d["kind"] == kind)
        .unwrap_or_else(|| panic!("no {kind} in the Kubernetes example"))
}

/// The ConfigMap's `gateway.toml`, validated as the gateway would at start.
fn kube_config(docs: &[Value]) -> a2a_egress::config::Config {
    let toml = of_kind(docs, "ConfigMap")["data"]["gateway.toml"]
        .as_str()
        .expect("the ConfigMap holds gateway.toml");
    // The admin token is written into the pod at run time; a private stand-in takes its place.
    let dir = tempfile::tempdir().unwrap();
    let token = dir.path().join("admin.token");
    std::fs::write(&token, "a-test-admin-token-of-enough-length").unwrap();
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(&token, std::fs::Permissions::from_mode(0o600)).unwrap();
    let toml = toml.replace("/run/a2a-egress/admin.token", token.to_str().unwrap());
    a2a_egress::config::Config::parse(&toml, &dir.path().join("gateway.toml"))
        .unwrap_or_else(|e| panic!("the ConfigMap's gateway.toml is refused: {e}"))
}

/// Every container of a pod spec, init containers (the native sidecar) first.
fn pod_containers(pod: &Value) -> Vec<&Value> {
    ["initContainers", "containers"]
        .iter()
        .flat_map(|k| pod[*k].as_array().into_iter().flatten())
        .collect()
}

/// The container running `a2a-egress serve`.
fn gateway_container(pod: &Value) -> &Value {
    pod_containers(pod)
        .into_iter()
        .find(|c| c["args"].get(0) == Some(&Value::from("serve")))
        .expect("a container running `a2a-egress serve`")
}

#[test]
fn kubernetes_example_runs_a_hardened_sidecar_probed_on_the_admin_listener() {
    let docs = kube_docs();
    let config_map = of_kind(&docs, "ConfigMap");
    let config = kube_config(&docs);

    let pod = &of_kind(&docs, "Deployment")["spec"]["template"]["spec"];
    let all = pod_containers(pod);
    let gateway = gateway_container(pod);
    let orchestrator = pod["containers"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["name"] == "orchestrator"))
        .expect("an orchestrator container beside it");
    assert!(
        orchestrator.to_string().contains("http://127.0.0.1:"),
        "the orchestrator reaches the gateway on loopback"
    );
    let args: Vec<String> = gateway["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap().to_owned())
        .collect();
    assert_cli_accepts("the sidecar's args", &args);

    // Probes on the admin listener's port (by name or number).
    let admin_port = config.listen.admin.port();
    let port_of = |p: &Value| -> u16 {
        match p {
            Value::Number(n) => n.as_u64().unwrap() as u16,
            Value::String(name) => gateway["ports"]
                .as_array()
                .and_then(|ps| ps.iter().find(|q| q["name"] == *name.as_str()))
                .and_then(|q| q["containerPort"].as_u64())
                .unwrap_or_else(|| panic!("no container port named {name}"))
                as u16,
            other => panic!("probe port {other}"),
        }
    };
    for (probe, path) in [("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")] {
        let get = &gateway[probe]["httpGet"];
        assert_eq!(get["path"], path, "{probe}");
        assert_eq!(
            port_of(&get["port"]),
            admin_port,
            "{probe} is on the admin listener"
        );
    }

    // Hardened: not root, no privilege escalation, no capabilities, read-only root filesystem.
    assert_eq!(pod["securityContext"]["runAsNonRoot"], true);
    assert_ne!(pod["securityContext"]["runAsUser"], 0);
    for c in &all {
        let sc = &c["securityContext"];
        assert_eq!(sc["allowPrivilegeEscalation"], false, "{}", c["name"]);
        assert_eq!(sc["readOnlyRootFilesystem"], true, "{}", c["name"]);
        assert!(
            sc["capabilities"]["drop"]
                .as_array()
                .is_some_and(|d| d.contains(&"ALL".into())),
            "{}",
            c["name"]
        );
    }

    // The config comes from the ConfigMap; each credential variable from the Secret.
    let config_volume = pod["volumes"]
        .as_array()
        .and_then(|vs| {
            vs.iter()
                .find(|v| v["configMap"]["name"] == config_map["metadata"]["name"])
        })
        .expect("a volume from the ConfigMap");
    let mounted = gateway["volumeMounts"]
        .as_array()
        .and_then(|ms| ms.iter().find(|m| m["name"] == config_volume["name"]))
        .expect("the ConfigMap volume is mounted in the gateway");
    assert!(
        args.iter()
            .any(|a| a.starts_with(mounted["mountPath"].as_str().unwrap()))
    );
    let secret = of_kind(&docs, "Secret")["metadata"]["name"].clone();
    for i in &config.integrations {
        if let a2a_egress::config::Credential::Bearer(a2a_egress::config::SecretSource::Env(var)) =
            &i.credential
        {
            let env = gateway["env"]
                .as_array()
                .and_then(|es| es.iter().find(|e| e["name"] == var.as_str()))
                .unwrap_or_else(|| panic!("{var} is not set in the gateway container"));
            assert_eq!(env["valueFrom"]["secretKeyRef"]["name"], secret, "{var}");
        }
    }
}

/// The `a2a_egress_*` names a text mentions (PromQL in rules and panels).
fn metric_names(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut rest = text;
    while let Some(at) = rest.find("a2a_egress_") {
        let tail = &rest[at..];
        let end = tail
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(tail.len());
        out.insert(tail[..end].to_owned());
        rest = &tail[end..];
    }
    out
}

/// Whether `name` is exported: a family, or a histogram family's `_bucket`/`_sum`/`_count`.
fn exported(families: &BTreeSet<String>, name: &str) -> bool {
    families.contains(name)
        || ["_bucket", "_sum", "_count"].iter().any(|s| {
            name.strip_suffix(s)
                .is_some_and(|base| families.contains(base))
        })
}

/// `(family, label)` → the values a scrape shows (histogram series count for their family).
fn scraped_label_values(text: &str) -> BTreeMap<(String, String), BTreeSet<String>> {
    let mut out: BTreeMap<(String, String), BTreeSet<String>> = BTreeMap::new();
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let Some((name, rest)) = line.split_once('{') else {
            continue;
        };
        let name = ["_bucket", "_sum", "_count"]
            .iter()
            .find_map(|s| name.strip_suffix(s))
            .unwrap_or(name);
        let labels = rest.split_once('}').map_or("", |(l, _)| l);
        for pair in labels.split("\",") {
            if let Some((k, v)) = pair.split_once("=\"") {
                let v = v.trim_end_matches('"');
                (out.entry((name.to_owned(), k.to_owned())).or_default()).insert(v.to_owned());
            }
        }
    }
    out
}

/// `(family, label)` → the values the README's metrics table documents (`label` (`a`, `b`)).
fn documented_label_values() -> BTreeMap<(String, String), BTreeSet<String>> {
    let readme = read(&Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md"));
    let mut out: BTreeMap<(String, String), BTreeSet<String>> = BTreeMap::new();
    for row in readme.lines().filter(|l| l.starts_with("| `a2a_egress_")) {
        let cells: Vec<&str> = row.split(" | ").collect();
        let (Some(name), Some(labels)) = (cells.first(), cells.get(2)) else {
            continue;
        };
        let name = name.trim_start_matches("| ").trim_matches('`');
        let mut rest = *labels;
        while let Some(at) = rest.find("` (") {
            let label = rest[..at].rsplit('`').next().unwrap_or_default();
            let inside = rest[at + 3..].split(')').next().unwrap_or_default();
            let values = inside.split('`').skip(1).step_by(2).map(str::to_owned);
            (out.entry((name.to_owned(), label.to_owned())).or_default()).extend(values);
            rest = &rest[at + 3..];
        }
    }
    out
}

/// Every `label="value"` (or `=~"a|b"`) matcher on an `a2a_egress_*` selector in `expr`:
/// `(family, label, value)`. Grafana variables (`$x`) and regexes with metacharacters are skipped.
fn matchers(expr: &str) -> Vec<(String, String, String)> {
    let mut out = Vec::new();
    let mut rest = expr;
    while let Some(at) = rest.find("a2a_egress_") {
        let tail = &rest[at..];
        let end = tail
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(tail.len());
        let (name, after) = tail.split_at(end);
        rest = after;
        let Some(inside) = after.strip_prefix('{').and_then(|a| a.split_once('}')) else {
            continue;
        };
        for m in inside.0.split(',') {
            let Some((label, value)) = m.split_once('=') else {
                continue;
            };
            let label = label.trim().trim_end_matches('!').trim();
            let value = value.trim_start_matches(['~']).trim().trim_matches('"');
            if value.contains('$') || value.contains(['.', '*', '+', '?', '(', '[']) {
                continue;
            }
            for v in value.split('|') {
                out.push((name.to_owned(), label.to_owned(), v.to_owned()));
            }
        }
    }
    out
}

#[tokio::test]
async fn alert_rules_and_dashboard_name_only_metrics_a_live_gateway_exports() {
    let scrape = crate::observability::live_scrape().await;
    let families = crate::observability::families(&scrape);
    let mut known = scraped_label_values(&scrape);
    for (k, v) in documented_label_values() {
        known.entry(k).or_default().extend(v);
    }
    let mut exprs: Vec<String> = Vec::new();

    let rules_path = deploy_dir().join("prometheus/alerts.yaml");
    let rules = yaml_docs(&rules_path, &read(&rules_path));
    let mut alerts = BTreeSet::new();
    let mut used = BTreeSet::new();
    for group in rules[0]["groups"].as_array().expect("rule groups") {
        for rule in group["rules"].as_array().expect("rules") {
            let name = rule["alert"].as_str().expect("an alert name");
            let expr = rule["expr"]
                .as_str()
                .unwrap_or_else(|| panic!("{name}: no expr"));
            assert!(rule["labels"]["severity"].is_string(), "{name}: severity");
            assert!(
                rule["annotations"]["summary"].is_string(),
                "{name}: summary"
            );
            let names = metric_names(expr);
            exprs.push(expr.to_owned());
            // The one kind of rule on no a2a_egress metric: Prometheus's own `up` of the job the
            // PodMonitor names, which is all there is when the gateway is down or gone.
            let up = format!("up{{job=\"{}\"}}", pod::podmonitor_job());
            assert!(
                !names.is_empty() || expr.contains(&up),
                "{name}: neither an a2a_egress metric nor {up} in {expr}"
            );
            used.extend(names);
            alerts.insert(name.to_owned());
        }
    }
    for want in [
        "A2AEgressIntegrationBlocked",
        "A2AEgressLockVerdictBreaking",
        "A2AEgressLockVerdictReview",
        "A2AEgressProfileStale",
        "A2AEgressDowngradeRate",
        "A2AEgressRefreshFailures",
        "A2AEgressConfigReloadRefused",
        "A2AEgressProbeClaimsFailed",
        "A2AEgressOverloadRefusals",
        "A2AEgressWorkerPanics",
        "A2AEgressDown",
        "A2AEgressAbsent",
    ] {
        assert!(alerts.contains(want), "alert {want} missing: {alerts:?}");
    }
    // The runbook's commands and checks name metrics too (its label values are examples).
    used.extend(metric_names(&read(&deploy_dir().join("RUNBOOK.md"))));

    let dash: Value = serde_json::from_str(&read(&deploy_dir().join("grafana/a2a-egress.json")))
        .expect("dashboard JSON");
    let panels = dash["panels"].as_array().expect("panels");
    assert!(!panels.is_empty());
    for p in panels {
        let targets = p["targets"].as_array().expect("targets");
        assert!(!targets.is_empty(), "{}", p["title"]);
        for t in targets {
            let expr = t["expr"].as_str().expect("a PromQL expr");
            assert!(!metric_names(expr).is_empty(), "{}: {expr}", p["title"]);
            exprs.push(expr.to_owned());
            used.extend(metric_names(expr));
        }
    }
    for t in dash["templating"]["list"].as_array().into_iter().flatten() {
        used.extend(metric_names(&t["query"].to_string()));
    }

    let missing: Vec<&String> = used.iter().filter(|n| !exported(&families, n)).collect();
    assert!(
        missing.is_empty(),
        "deploy/ names metrics the gateway does not export: {missing:?}\nexported: {families:?}"
    );

    // Each matcher's value is one the gateway really gives that label (in the scrape, or in
    // the README's documented set): a typo such as status="blockd" would never match.
    let mut checked = 0;
    for (family, label, value) in exprs.iter().flat_map(|e| matchers(e)) {
        if matches!(label.as_str(), "instance" | "job") {
            continue;
        }
        let base = ["_bucket", "_sum", "_count"]
            .iter()
            .find_map(|s| family.strip_suffix(s))
            .unwrap_or(&family);
        let values = known.get(&(base.to_owned(), label.clone()));
        assert!(
            values.is_some_and(|v| v.contains(&value)),
            "deploy/ matches {family}{{{label}=\"{value}\"}}, a value the gateway never gives \
             that label (known: {values:?})"
        );
        checked += 1;
    }
    assert!(checked > 0, "no label matcher checked");
}

/// The admin listener binds the pod's IP for the kubelet: a NetworkPolicy keeps other pods off
/// it, letting only the scraper in, and only to the admin port.
#[test]
fn kubernetes_example_fences_the_admin_listener_with_a_network_policy() {
    let docs = kube_docs();
    let policy = docs
        .iter()
        .find(|d| {
            d["kind"] == "NetworkPolicy"
                && d["spec"]["policyTypes"]
                    .as_array()
                    .is_some_and(|t| t.contains(&"Ingress".into()))
        })
        .expect("an ingress NetworkPolicy");
    let pod_labels = &of_kind(&docs, "Deployment")["spec"]["template"]["metadata"]["labels"];
    let selected = policy["spec"]["podSelector"]["matchLabels"]
        .as_object()
        .expect("the policy selects pods by label");
    for (k, v) in selected {
        assert_eq!(
            &pod_labels[k], v,
            "the policy selects the gateway's pod ({k})"
        );
    }
    let types = policy["spec"]["policyTypes"].as_array().unwrap();
    assert!(types.contains(&"Ingress".into()), "{types:?}");
    let rules = policy["spec"]["ingress"].as_array().expect("ingress rules");
    assert!(!rules.is_empty());
    for r in rules {
        let from = r["from"].as_array().map_or(0, Vec::len);
        assert!(from > 0, "an ingress rule open to every pod: {r}");
        let ports: Vec<&Value> = r["ports"].as_array().into_iter().flatten().collect();
        assert!(!ports.is_empty(), "an ingress rule open on every port: {r}");
        for p in ports {
            assert!(p["port"] == 7412 || p["port"] == "admin", "{p}");
        }
    }
}
