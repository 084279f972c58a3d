//! The `[telemetry]` table: where OpenTelemetry traces go, resolved with the standard
//! `OTEL_EXPORTER_OTLP_*` variables (raw serde model and validation; reads no file, and the
//! environment only through the lookup it is given). Read at start only.
//!
//! Off unless the table is present (an `OTEL_*` variable alone never turns it on: a pod's injected
//! variables must not make an egress gateway send data somewhere new), and `OTEL_SDK_DISABLED=true`
//! turns it off again. With it on, each setting comes from, in order: the file, the traces-specific
//! variable (`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, `…_TRACES_PROTOCOL`, `…_TRACES_TIMEOUT`), the
//! generic one (`OTEL_EXPORTER_OTLP_ENDPOINT`, `…_PROTOCOL`, `…_TIMEOUT`; `OTEL_SERVICE_NAME`), the
//! default — the order `opentelemetry-otlp` itself applies (programmatic configuration over the
//! environment). As the OTLP exporter specification says, a generic endpoint (and the file's
//! `otlp_endpoint`) is a base URL to which HTTP/protobuf appends `/v1/traces`; a traces-specific
//! one is used as it is. A bad value in any of them is a configuration problem.

use std::time::Duration;

use serde::Deserialize;

/// The OTLP/gRPC endpoint when none is configured.
pub const DEFAULT_GRPC_ENDPOINT: &str = "http://localhost:4317";
/// The OTLP/HTTP base endpoint when none is configured.
pub const DEFAULT_HTTP_ENDPOINT: &str = "http://localhost:4318";
/// The `service.name` resource attribute when none is configured.
pub const DEFAULT_SERVICE_NAME: &str = "a2a-egress";
/// The export timeout when none is configured (the OTLP specification's default).
pub const DEFAULT_EXPORT_TIMEOUT: Duration = Duration::from_secs(10);
/// Longest `service_name` accepted.
const MAX_SERVICE_NAME: usize = 255;

/// How spans travel to the collector.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum OtlpProtocol {
    /// OTLP/gRPC (`OTEL_EXPORTER_OTLP_PROTOCOL=grpc`).
    Grpc,
    /// OTLP/HTTP with protobuf bodies (`http/protobuf`).
    Http,
}

impl OtlpProtocol {
    /// The protocol as the configuration names it.
    pub fn as_str(self) -> &'static str {
        match self {
            OtlpProtocol::Grpc => "grpc",
            OtlpProtocol::Http => "http",
        }
    }
}

/// `[telemetry]` as written.
#[derive(Debug, Clone, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawTelemetry {
    /// The collector, `http://host:port` (gRPC) or an HTTP base URL.
    pub otlp_endpoint: Option<String>,
    /// `grpc` or `http`.
    pub protocol: Option<OtlpProtocol>,
    /// The share of new traces recorded, 0.0 to 1.0 (default 1.0); a caller's sampled flag is
    /// followed.
    pub sampling: Option<f64>,
    /// `service.name` of the gateway's spans.
    pub service_name: Option<String>,
    /// PEM file of root certificates trusted for an `https://` collector, besides the
    /// platform's (relative to the config's folder; `OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE` or
    /// `OTEL_EXPORTER_OTLP_CERTIFICATE` when not set here).
    pub ca_file: Option<std::path::PathBuf>,
}

/// The validated, resolved `[telemetry]` table (present only when tracing is on).
#[derive(Debug, Clone, PartialEq)]
pub struct Telemetry {
    /// The full export URL: gRPC's authority, or HTTP's URL with its path.
    pub endpoint: String,
    /// The protocol.
    pub protocol: OtlpProtocol,
    /// The ratio of root traces sampled.
    pub sampling: f64,
    /// `service.name`.
    pub service_name: String,
    /// The longest one export may take.
    pub timeout: Duration,
    /// Extra roots for an `https://` collector (read when the exporter starts).
    pub ca_file: Option<std::path::PathBuf>,
}

/// Checks `[telemetry]` (`None`: the table is absent) against the environment `env` (a lookup
/// of a variable's value); `None` when tracing is off.
pub fn telemetry(
    raw: Option<&RawTelemetry>,
    env: &dyn Fn(&str) -> Option<String>,
    base: &std::path::Path,
    problems: &mut Vec<String>,
) -> Option<Telemetry> {
    let raw = raw?;
    let var = |k: &str| env(k).filter(|v| !v.trim().is_empty());
    if var("OTEL_SDK_DISABLED").is_some_and(|v| v.trim().eq_ignore_ascii_case("true")) {
        return None;
    }
    let before = problems.len();
    let protocol = protocol(raw, &var, problems);
    let endpoint = endpoint(raw, protocol, &var, problems);
    let sampling = raw.sampling.unwrap_or(1.0);
    if !(0.0..=1.0).contains(&sampling) {
        problems.push(format!(
            "telemetry.sampling: {sampling} is not between 0.0 and 1.0"
        ));
    }
    let (service_name, from) = match &raw.service_name {
        Some(s) => (s.clone(), "telemetry.service_name"),
        None => match var("OTEL_SERVICE_NAME") {
            Some(s) => (s, "OTEL_SERVICE_NAME"),
            None => (DEFAULT_SERVICE_NAME.to_owned(), "telemetry.service_name"),
        },
    };
    let printable = service_name.chars().all(|c| !c.is_control());
    if service_name.trim().is_empty() || service_name.len() > MAX_SERVICE_NAME || !printable {
        problems.push(format!(
            "{from}: {service_name:?} is not a service name (1 to {MAX_SERVICE_NAME} printable bytes)"
        ));
    }
    let timeout = timeout(&var, problems);
    let ca_file = ca_file(raw, &var, base, &endpoint, problems);
    (problems.len() == before).then_some(Telemetry {
        endpoint,
        protocol,
        sampling,
        service_name,
        timeout,
        ca_file,
    })
}

/// The collector's extra roots: the file's `ca_file` (relative to `base`), else
/// `OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE`, else `OTEL_EXPORTER_OTLP_CERTIFICATE` (as given).
/// Refused beside a plain `http://` endpoint, where it would mean nothing.
fn ca_file(
    raw: &RawTelemetry,
    var: &dyn Fn(&str) -> Option<String>,
    base: &std::path::Path,
    endpoint: &str,
    problems: &mut Vec<String>,
) -> Option<std::path::PathBuf> {
    let (path, from) = match &raw.ca_file {
        Some(f) => (base.join(f), "telemetry.ca_file"),
        None => {
            let names = [
                "OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE",
                "OTEL_EXPORTER_OTLP_CERTIFICATE",
            ];
            let (name, v) = names.iter().find_map(|n| var(n).map(|v| (*n, v)))?;
            (std::path::PathBuf::from(v.trim()), name)
        }
    };
    if !endpoint.starts_with("https://") {
        problems.push(format!(
            "{from}: set, but the collector endpoint {endpoint:?} is not https://"
        ));
    }
    Some(path)
}

/// The protocol: the file's, else `OTEL_EXPORTER_OTLP_TRACES_PROTOCOL`, else
/// `OTEL_EXPORTER_OTLP_PROTOCOL`, else gRPC. `http/json` is refused by name (not built in).
fn protocol(
    raw: &RawTelemetry,
    var: &dyn Fn(&str) -> Option<String>,
    problems: &mut Vec<String>,
) -> OtlpProtocol {
    if let Some(p) = raw.protocol {
        return p;
    }
    for name in [
        "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
        "OTEL_EXPORTER_OTLP_PROTOCOL",
    ] {
        let Some(v) = var(name) else { continue };
        return match v.trim() {
            "grpc" => OtlpProtocol::Grpc,
            "http/protobuf" => OtlpProtocol::Http,
            other => {
                problems.push(format!(
                    "{name}: {other:?} is not a supported OTLP protocol (grpc or http/protobuf)"
                ));
                OtlpProtocol::Grpc
            }
        };
    }
    OtlpProtocol::Grpc
}

/// The export URL, checked to be `http://` or `https://` with a host.
fn endpoint(
    raw: &RawTelemetry,
    protocol: OtlpProtocol,
    var: &dyn Fn(&str) -> Option<String>,
    problems: &mut Vec<String>,
) -> String {
    let (value, from, base) = if let Some(e) = &raw.otlp_endpoint {
        (e.clone(), "telemetry.otlp_endpoint", true)
    } else if let Some(e) = var("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") {
        (e, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", false)
    } else if let Some(e) = var("OTEL_EXPORTER_OTLP_ENDPOINT") {
        (e, "OTEL_EXPORTER_OTLP_ENDPOINT", true)
    } else {
        let default = match protocol {
            OtlpProtocol::Grpc => DEFAULT_GRPC_ENDPOINT,
            OtlpProtocol::Http => DEFAULT_HTTP_ENDPOINT,
        };
        (default.to_owned(), "telemetry.otlp_endpoint", true)
    };
    let value = value.trim().to_owned();
    match url::Url::parse(&value) {
        Ok(u) if matches!(u.scheme(), "http" | "https") && u.host().is_some() => {}
        _ => {
            problems.push(format!(
                "{from}: {value:?} is not an http:// or https:// URL with a host"
            ));
            return value;
        }
    }
    if protocol == OtlpProtocol::Http && base {
        return traces_url(&value);
    }
    value
}

/// An OTLP/HTTP base URL with the traces path appended (unless it already ends with it).
fn traces_url(base: &str) -> String {
    let trimmed = base.trim_end_matches('/');
    if trimmed.ends_with("/v1/traces") {
        trimmed.to_owned()
    } else {
        format!("{trimmed}/v1/traces")
    }
}

/// `OTEL_EXPORTER_OTLP_TRACES_TIMEOUT`, else `OTEL_EXPORTER_OTLP_TIMEOUT` (milliseconds), else
/// [`DEFAULT_EXPORT_TIMEOUT`].
fn timeout(var: &dyn Fn(&str) -> Option<String>, problems: &mut Vec<String>) -> Duration {
    for name in [
        "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT",
        "OTEL_EXPORTER_OTLP_TIMEOUT",
    ] {
        let Some(v) = var(name) else { continue };
        return match v.trim().parse::<u64>() {
            Ok(ms) if ms > 0 => Duration::from_millis(ms),
            _ => {
                problems.push(format!(
                    "{name}: {v:?} is not a timeout in milliseconds (a whole number above 0)"
                ));
                DEFAULT_EXPORT_TIMEOUT
            }
        };
    }
    DEFAULT_EXPORT_TIMEOUT
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resolve(text: Option<&str>, env: &[(&str, &str)]) -> (Option<Telemetry>, Vec<String>) {
        let raw: Option<RawTelemetry> = text.map(|t| toml::from_str(t).expect("raw [telemetry]"));
        let env: Vec<(String, String)> = env
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        let lookup = move |k: &str| env.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
        let mut problems = Vec::new();
        (
            telemetry(
                raw.as_ref(),
                &lookup,
                std::path::Path::new("/etc/a2a-egress"),
                &mut problems,
            ),
            problems,
        )
    }

    #[test]
    fn absent_is_off_even_with_otel_variables() {
        let (t, p) = resolve(None, &[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4317")]);
        assert!(t.is_none() && p.is_empty(), "{t:?} {p:?}");
    }

    #[test]
    fn an_empty_table_is_on_with_the_defaults() {
        let (t, p) = resolve(Some(""), &[]);
        assert!(p.is_empty(), "{p:?}");
        let t = t.unwrap();
        assert_eq!(t.endpoint, DEFAULT_GRPC_ENDPOINT);
        assert_eq!(t.protocol, OtlpProtocol::Grpc);
        assert_eq!(t.sampling, 1.0);
        assert_eq!(t.service_name, DEFAULT_SERVICE_NAME);
        assert_eq!(t.timeout, DEFAULT_EXPORT_TIMEOUT);
        let (t, _) = resolve(Some("protocol = \"http\""), &[]);
        assert_eq!(t.unwrap().endpoint, "http://localhost:4318/v1/traces");
    }

    #[test]
    fn a_collector_ca_comes_from_the_file_or_the_certificate_variables_and_needs_https() {
        let https = "otlp_endpoint = \"https://otel.example:4317\"\n";
        let (t, p) = resolve(Some(&format!("{https}ca_file = \"otel-ca.pem\"")), &[]);
        assert!(p.is_empty(), "{p:?}");
        let want = std::path::Path::new("/etc/a2a-egress/otel-ca.pem");
        assert_eq!(t.unwrap().ca_file.as_deref(), Some(want));
        let env = [
            ("OTEL_EXPORTER_OTLP_CERTIFICATE", "/generic.pem"),
            ("OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE", "/traces.pem"),
        ];
        let (t, _) = resolve(Some(https), &env);
        let got = t.unwrap().ca_file;
        assert_eq!(got.as_deref(), Some(std::path::Path::new("/traces.pem")));
        let (t, _) = resolve(Some(https), &env[..1]);
        let got = t.unwrap().ca_file;
        assert_eq!(got.as_deref(), Some(std::path::Path::new("/generic.pem")));
        let (t, p) = resolve(Some("ca_file = \"ca.pem\""), &[]);
        assert!(t.is_none());
        assert!(p[0].starts_with("telemetry.ca_file: set, but"), "{p:?}");
    }

    #[test]
    fn the_file_wins_over_the_environment_and_traces_variables_over_generic_ones() {
        let env = [
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://generic:4318"),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"),
            ("OTEL_SERVICE_NAME", "from-env"),
            ("OTEL_EXPORTER_OTLP_TIMEOUT", "2500"),
        ];
        let (t, p) = resolve(Some(""), &env);
        assert!(p.is_empty(), "{p:?}");
        let t = t.unwrap();
        assert_eq!(t.endpoint, "http://generic:4318/v1/traces");
        assert_eq!(t.protocol, OtlpProtocol::Http);
        assert_eq!(t.service_name, "from-env");
        assert_eq!(t.timeout, Duration::from_millis(2500));
        let file = "otlp_endpoint = \"http://file:4317\"\nprotocol = \"grpc\"\n\
                    service_name = \"gw\"\nsampling = 0.25\n";
        let (t, _) = resolve(Some(file), &env);
        let t = t.unwrap();
        assert_eq!(
            (t.endpoint.as_str(), t.protocol, t.service_name.as_str()),
            ("http://file:4317", OtlpProtocol::Grpc, "gw")
        );
        assert_eq!(t.sampling, 0.25);
        // A traces-specific endpoint is used as it is, over the generic one.
        let mut env = env.to_vec();
        env.push(("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://t:1/custom"));
        env.push(("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "grpc"));
        let (t, _) = resolve(Some(""), &env);
        let t = t.unwrap();
        assert_eq!(t.endpoint, "http://t:1/custom");
        assert_eq!(t.protocol, OtlpProtocol::Grpc);
    }

    #[test]
    fn otel_sdk_disabled_turns_it_off() {
        let (t, p) = resolve(Some(""), &[("OTEL_SDK_DISABLED", "TRUE")]);
        assert!(t.is_none() && p.is_empty());
    }

    #[test]
    fn bad_values_are_problems_naming_their_source() {
        let (t, p) = resolve(
            Some("otlp_endpoint = \"collector:4317\"\nsampling = 1.5\nservice_name = \"\"\n"),
            &[
                ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json"),
                ("OTEL_EXPORTER_OTLP_TIMEOUT", "soon"),
            ],
        );
        assert!(t.is_none());
        let starts = [
            "OTEL_EXPORTER_OTLP_PROTOCOL: ",
            "telemetry.otlp_endpoint: ",
            "telemetry.sampling: ",
            "telemetry.service_name: ",
            "OTEL_EXPORTER_OTLP_TIMEOUT: ",
        ];
        assert_eq!(p.len(), starts.len(), "{p:?}");
        for (line, start) in p.iter().zip(starts) {
            assert!(line.starts_with(start), "{line}");
        }
        let (_, p) = resolve(
            Some(""),
            &[("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "ftp://x/")],
        );
        assert!(
            p.len() == 1 && p[0].starts_with("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "),
            "{p:?}"
        );
        assert!(toml::from_str::<RawTelemetry>("protocol = \"udp\"\n").is_err());
        assert!(toml::from_str::<RawTelemetry>("enabled = true\n").is_err());
    }

    #[test]
    fn an_http_base_that_names_the_traces_path_keeps_it() {
        assert_eq!(traces_url("http://c:4318/"), "http://c:4318/v1/traces");
        assert_eq!(
            traces_url("http://c:4318/v1/traces"),
            "http://c:4318/v1/traces"
        );
        assert_eq!(traces_url("http://c/otlp"), "http://c/otlp/v1/traces");
    }
}
