//! The gateway's pod and unit against the gateway's own numbers: the stop grace against the
//! drain deadlines of `src/server.rs`, the memory limit against the in-flight bytes the
//! ConfigMap's `[limits]` allow and the parse trees its threads may hold, the PodMonitor against the Prometheus Operator's field set
//! (unknown fields are refused, as a strict apply would) and against the pod it scrapes, and
//! the systemd unit's stop timeout and restart policy.

use serde_json::Value;

use super::{
    deploy_dir, gateway_container, kube_config, kube_docs, of_kind, read, unit_entries, yaml_docs,
};

/// What the gateway takes from SIGTERM to exit, at most, in whole seconds.
fn drain_secs() -> u64 {
    let d = a2a_egress::server::DRAIN_DEADLINE + a2a_egress::server::CLOSE_DEADLINE;
    d.as_secs() + u64::from(d.subsec_nanos() > 0)
}

/// Seconds a container's preStop hook takes before SIGTERM (a `sleep` action; the image has no
/// shell, so an `exec` hook cannot run).
fn pre_stop_secs(container: &Value) -> u64 {
    let hook = &container["lifecycle"]["preStop"];
    assert!(
        hook["exec"].is_null(),
        "an exec preStop hook: the image has no shell"
    );
    hook["sleep"]["seconds"].as_u64().unwrap_or(0)
}

#[test]
fn the_pods_grace_period_covers_the_gateways_drain() {
    let docs = kube_docs();
    let pod = &of_kind(&docs, "Deployment")["spec"]["template"]["spec"];
    let grace = pod["terminationGracePeriodSeconds"].as_u64().expect(
        "terminationGracePeriodSeconds is set (the default, 30 s, is shorter than the drain)",
    );
    let need = drain_secs() + pre_stop_secs(gateway_container(pod));
    // Headroom for the orchestrator, which stops first and shares the pod's grace period.
    assert!(
        grace >= need + 10,
        "terminationGracePeriodSeconds {grace} leaves less than 10 s over the gateway's {need} s"
    );
}

/// A Kubernetes memory quantity in bytes (`768Mi`, `1Gi`, `512M`, `1000000`).
fn bytes(quantity: &str) -> u64 {
    let split = quantity
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(quantity.len());
    let (n, unit) = quantity.split_at(split);
    let n: u64 = n.parse().unwrap_or_else(|_| panic!("quantity {quantity}"));
    let scale: u64 = match unit {
        "" => 1,
        "Ki" => 1 << 10,
        "Mi" => 1 << 20,
        "Gi" => 1 << 30,
        "K" | "k" => 1_000,
        "M" => 1_000_000,
        "G" => 1_000_000_000,
        other => panic!("quantity unit {other}"),
    };
    n * scale
}

/// The data plane's threads in the pod: `[runtime] worker_threads`, else what `serve` takes from
/// the container's CPU limit (a CFS quota of that many CPUs per period), through the gateway's
/// own rule (`types::cpus::threads_for`, without an affinity, which a pod does not narrow).
fn data_plane_threads(config: &a2a_egress::config::Config, cpu_limit: &Value) -> usize {
    if let Some(n) = config.runtime.worker_threads {
        return n;
    }
    let limit = match cpu_limit {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        other => panic!("a CPU limit is due on the gateway's container: {other}"),
    };
    let millis: u64 = match limit.strip_suffix('m') {
        Some(m) => m.parse().unwrap(),
        None => (limit.parse::<f64>().unwrap() * 1000.0) as u64,
    };
    let period_us = 100_000;
    let quota = a2a_egress::types::cpus::Quota {
        quota_us: millis * period_us / 1000,
        period_us,
        file: "cpu.max".into(),
    };
    a2a_egress::types::cpus::threads_for(None, Some(&quota)).unwrap()
}

#[test]
fn the_sidecars_memory_limit_holds_every_call_in_flight() {
    let docs = kube_docs();
    let config = kube_config(&docs);
    let pod = &of_kind(&docs, "Deployment")["spec"]["template"]["spec"];
    let resources = &gateway_container(pod)["resources"];
    let limit = bytes(
        resources["limits"]["memory"]
            .as_str()
            .expect("a memory limit"),
    );
    let request = bytes(
        resources["requests"]["memory"]
            .as_str()
            .expect("a memory request"),
    );
    // Each call in flight: its request body, and its answer read whole up to the cap with one
    // more buffer of it (an unasked-for gzip decoded, or a 0.3 answer translated).
    let body = config
        .integrations
        .iter()
        .map(|i| i.max_body_bytes)
        .max()
        .unwrap() as u64;
    let answer = a2a_egress::proxy::client::MAX_ANSWER_BYTES as u64;
    let in_flight = config.limits.max_inflight as u64 * (body + 2 * answer);
    // The parse trees built from answers: each check that builds one runs without awaiting, so
    // at most one per thread that runs them (the data plane's, plus the control plane's own
    // when it has one) is alive, each within the budget.
    let threads = data_plane_threads(&config, &resources["limits"]["cpu"]);
    let apart = !config.runtime.work_stealing && threads > 1;
    let trees = (threads + usize::from(apart)) as u64 * a2a_egress::json::TREE_BUDGET as u64;
    // The process at rest (threads, connection buffers, profiles) and a quarter of headroom.
    let need = (64 << 20) + (in_flight + trees) * 5 / 4;
    assert!(
        limit >= need,
        "memory limit {limit} < {need}: {} calls x ({body} + 2 x {answer}) bytes in flight and \
         {threads} thread(s) x a tree budget",
        config.limits.max_inflight
    );
    assert!(
        limit <= 2 * need,
        "memory limit {limit} is far over what the config can hold ({need}): lower it or raise \
         max_inflight"
    );
    assert!(request <= limit);
}

/// What a field of the PodMonitor may hold: the CRD's schema (monitoring.coreos.com/v1), as
/// far as this example can use it.
enum Field {
    /// Any value (a known field whose inside this example does not use).
    Any,
    Str,
    /// One of these strings.
    OneOf(&'static [&'static str]),
    /// A Prometheus duration (`30s`, `1m30s`).
    Duration,
    /// A string-to-string map (labels).
    Labels,
    /// A list of objects of these fields.
    List(&'static [(&'static str, Field)]),
    /// An object of exactly these fields (others are refused).
    Object(&'static [(&'static str, Field)]),
}

const LABEL_SELECTOR: &[(&str, Field)] = &[
    ("matchLabels", Field::Labels),
    ("matchExpressions", Field::Any),
];

const RELABEL: &[(&str, Field)] = &[
    (
        "action",
        Field::OneOf(&[
            "replace",
            "keep",
            "drop",
            "hashmod",
            "labelmap",
            "labeldrop",
            "labelkeep",
            "lowercase",
            "uppercase",
            "keepequal",
            "dropequal",
        ]),
    ),
    ("modulus", Field::Any),
    ("regex", Field::Str),
    ("replacement", Field::Str),
    ("separator", Field::Str),
    ("sourceLabels", Field::Any),
    ("targetLabel", Field::Str),
];

const ENDPOINT: &[(&str, Field)] = &[
    ("authorization", Field::Any),
    ("basicAuth", Field::Any),
    ("bearerTokenSecret", Field::Any),
    ("enableHttp2", Field::Any),
    ("filterRunning", Field::Any),
    ("followRedirects", Field::Any),
    ("honorLabels", Field::Any),
    ("honorTimestamps", Field::Any),
    ("interval", Field::Duration),
    ("metricRelabelings", Field::List(RELABEL)),
    ("noProxy", Field::Any),
    ("oauth2", Field::Any),
    ("params", Field::Any),
    ("path", Field::Str),
    ("port", Field::Str),
    ("portNumber", Field::Any),
    ("proxyConnectHeader", Field::Any),
    ("proxyFromEnvironment", Field::Any),
    ("proxyUrl", Field::Any),
    ("relabelings", Field::List(RELABEL)),
    ("scheme", Field::OneOf(&["http", "https"])),
    ("scrapeTimeout", Field::Duration),
    ("targetPort", Field::Any),
    ("tlsConfig", Field::Any),
    ("trackTimestampsStaleness", Field::Any),
];

const SPEC: &[(&str, Field)] = &[
    ("attachMetadata", Field::Any),
    ("bodySizeLimit", Field::Any),
    ("convertClassicHistogramsToNHCB", Field::Any),
    ("fallbackScrapeProtocol", Field::Any),
    ("jobLabel", Field::Str),
    ("keepDroppedTargets", Field::Any),
    ("labelLimit", Field::Any),
    ("labelNameLengthLimit", Field::Any),
    ("labelValueLengthLimit", Field::Any),
    (
        "namespaceSelector",
        Field::Object(&[("any", Field::Any), ("matchNames", Field::Any)]),
    ),
    ("nativeHistogramBucketLimit", Field::Any),
    ("nativeHistogramMinBucketFactor", Field::Any),
    ("podMetricsEndpoints", Field::List(ENDPOINT)),
    ("podTargetLabels", Field::Any),
    ("sampleLimit", Field::Any),
    ("scrapeClass", Field::Any),
    ("scrapeClassicHistograms", Field::Any),
    ("scrapeProtocols", Field::Any),
    ("selector", Field::Object(LABEL_SELECTOR)),
    ("selectorMechanism", Field::Any),
    ("targetLimit", Field::Any),
];

const POD_MONITOR: &[(&str, Field)] = &[
    ("apiVersion", Field::OneOf(&["monitoring.coreos.com/v1"])),
    ("kind", Field::OneOf(&["PodMonitor"])),
    (
        "metadata",
        Field::Object(&[
            ("name", Field::Str),
            ("namespace", Field::Str),
            ("labels", Field::Labels),
            ("annotations", Field::Labels),
        ]),
    ),
    ("spec", Field::Object(SPEC)),
];

/// Whether a Prometheus duration: `<n><unit>` runs of y, w, d, h, m, s, ms.
fn is_duration(s: &str) -> bool {
    let mut rest = s;
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        let unit = ["ms", "y", "w", "d", "h", "m", "s"]
            .into_iter()
            .find(|u| rest[digits..].starts_with(u));
        let Some(u) = unit.filter(|_| digits > 0) else {
            return false;
        };
        rest = &rest[digits + u.len()..];
    }
    !s.is_empty()
}

/// `value` against `field`; panics naming the path of the first thing the CRD would refuse.
fn check(path: &str, value: &Value, field: &Field) {
    match field {
        Field::Any => {}
        Field::Str => assert!(value.is_string(), "{path}: not a string: {value}"),
        Field::OneOf(allowed) => assert!(
            value.as_str().is_some_and(|v| allowed.contains(&v)),
            "{path}: {value} is not one of {allowed:?}"
        ),
        Field::Duration => assert!(
            value.as_str().is_some_and(is_duration),
            "{path}: {value} is not a duration"
        ),
        Field::Labels => {
            let map = value
                .as_object()
                .unwrap_or_else(|| panic!("{path}: not a map"));
            for (k, v) in map {
                assert!(v.is_string(), "{path}.{k}: label values are strings: {v}");
            }
        }
        Field::List(fields) => {
            let items = value
                .as_array()
                .unwrap_or_else(|| panic!("{path}: not a list"));
            for (n, item) in items.iter().enumerate() {
                check(&format!("{path}[{n}]"), item, &Field::Object(fields));
            }
        }
        Field::Object(fields) => {
            let map = value
                .as_object()
                .unwrap_or_else(|| panic!("{path}: not an object"));
            for (k, v) in map {
                let (_, f) = fields
                    .iter()
                    .find(|(name, _)| name == k)
                    .unwrap_or_else(|| {
                        panic!("{path}.{k}: a field the PodMonitor CRD does not have")
                    });
                check(&format!("{path}.{k}"), v, f);
            }
        }
    }
}

fn podmonitor() -> Value {
    let path = deploy_dir().join("kubernetes/podmonitor.yaml");
    let mut docs = yaml_docs(&path, &read(&path));
    assert_eq!(docs.len(), 1, "one PodMonitor");
    docs.remove(0)
}

/// The `job` label the PodMonitor gives the gateway's series (a replace relabeling).
pub(super) fn podmonitor_job() -> String {
    let pm = podmonitor();
    pm["spec"]["podMetricsEndpoints"][0]["relabelings"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|r| r["targetLabel"] == "job")
        .and_then(|r| r["replacement"].as_str())
        .expect("the PodMonitor names its job")
        .to_owned()
}

#[test]
fn podmonitor_has_only_known_fields_and_scrapes_the_gateways_admin_port() {
    let pm = podmonitor();
    check("PodMonitor", &pm, &Field::Object(POD_MONITOR));
    for required in ["selector", "podMetricsEndpoints"] {
        assert!(!pm["spec"][required].is_null(), "spec.{required}");
    }
    let docs = kube_docs();
    let template = &of_kind(&docs, "Deployment")["spec"]["template"];
    for (k, v) in pm["spec"]["selector"]["matchLabels"].as_object().unwrap() {
        assert_eq!(
            &template["metadata"]["labels"][k], v,
            "selects the gateway's pod ({k})"
        );
    }
    let gateway = gateway_container(&template["spec"]);
    let admin = kube_config(&docs).listen.admin.port();
    let endpoints = pm["spec"]["podMetricsEndpoints"].as_array().unwrap();
    assert!(!endpoints.is_empty());
    for e in endpoints {
        let port = gateway["ports"]
            .as_array()
            .and_then(|ps| ps.iter().find(|p| p["name"] == e["port"]))
            .unwrap_or_else(|| panic!("the gateway has no port named {}", e["port"]));
        assert_eq!(port["containerPort"], admin, "scrapes the admin listener");
        assert_eq!(e["path"], "/metrics");
    }
    assert_eq!(podmonitor_job(), "a2a-egress");
}

#[test]
fn systemd_unit_outlasts_the_drain_and_does_not_restart_on_a_bad_config() {
    let path = deploy_dir().join("a2a-egress.service");
    let entries = unit_entries(&path, &read(&path));
    let get = |k: &str| {
        entries
            .iter()
            .find(|(s, key, _)| s == "Service" && key == k)
            .map(|(_, _, v)| v.as_str())
            .unwrap_or_else(|| panic!("no {k}"))
    };
    // Exit 64 is a bad config, 66 a missing config file: a restart cannot fix either
    // (src/cli/mod.rs documents the codes).
    assert_eq!(get("RestartPreventExitStatus"), "64 66");
    let stop: u64 = get("TimeoutStopSec")
        .strip_suffix('s')
        .and_then(|s| s.parse().ok())
        .expect("TimeoutStopSec in seconds (`35s`)");
    assert!(
        stop > drain_secs(),
        "TimeoutStopSec={stop}s: systemd kills the gateway before its {} s drain ends",
        drain_secs()
    );
}
