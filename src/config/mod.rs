//! The gateway configuration (`config/gateway.toml`): TOML model, defaults and validation (reads
//! files only, each through the one bounded reader, [`crate::types::file`]).
//!
//! Parsing is two steps, as in agentgateway and linkerd: a raw serde model that rejects unknown keys,
//! then [`Config::from_raw`] which checks every value and reports all problems at once. A config that
//! fails either step is never used; callers keep the one they had.
//!
//! The file is read with a cap (`[limits] max_config_bytes`; at start its default, on a reload the
//! running config's), and every line of a refusal is bounded and stripped of control characters
//! ([`crate::card::sanitize::bounded_report`]): a refused file's message never quotes more than a
//! short excerpt of it, whatever it holds. Validation is linear in the number of integrations
//! (names and fallbacks are checked against hash sets); a large file's `[[integrations]]` are
//! parsed (`document.rs`) and checked on every core.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::card::CardPolicy;
use crate::profile::ClientCaps;

mod artifact;
mod client;
mod document;
mod effective_card;
mod guard;
mod integrations;
mod listen;
mod log;
mod probes;
mod refresh;
mod runtime;
mod secret;
mod telemetry;
pub use artifact::{ArtifactPolicy, ArtifactSchema, MAX_SCHEMA_BYTES, Mismatch, SchemaError};
pub use client::{RawClient, RawTrustedKeys};
pub use effective_card::{CardSigning, RawEffectiveCard, RawPublicKey, SignMode};
pub use guard::{
    DEFAULT_GUARD_BUDGET_BYTES, GuardContext, Inbound, IntegrationGuard, RawDetector, RawGuard,
    RawIntegrationGuard,
};
pub use integrations::{
    Credential, DEFAULT_MAX_BODY_BYTES, Integration, LockPolicy, OnBreaking, Policy, ProbeSettings,
    RawCredential, RawIntegration, RawPolicy, RawProbe, SecretSource, StreamingMode,
    is_reserved_header,
};
pub use listen::{
    Admin, AdminToken, DEFAULT_MAX_CONFIG_BYTES, Limits, Listen, MAX_PRIVATE_FILE_BYTES,
    MIN_MAX_CONFIG_BYTES, PLACEHOLDER_TOKEN_PREFIX, PrivateFileError, RawAdmin, RawLimits,
    RawListen, TokenError, is_loopback, read_private_file,
};
pub use log::{
    AccessLog, DEFAULT_LOG_LEVEL, DirectiveError, LOG_LEVELS, Log, LogFormat, RawLog,
    check_directive,
};
pub use probes::{ProbeSchedule, RawProbes};
pub use refresh::{RawRefresh, RawState, RefreshSettings};
pub use runtime::{
    DEFAULT_WORK_STEALING, MAX_WORKER_THREADS, RawRuntime, Runtime, Threads, ThreadsFrom,
};
pub use secret::{MAX_SECRET_BYTES, SecretError, bearer_authorization, read_secret};
pub use telemetry::{
    DEFAULT_EXPORT_TIMEOUT, DEFAULT_GRPC_ENDPOINT, DEFAULT_HTTP_ENDPOINT, DEFAULT_SERVICE_NAME,
    OtlpProtocol, RawTelemetry, Telemetry,
};

use crate::card::sanitize::{MAX_REPORT_LINE_CHARS, bounded_report};

/// Errors loading or validating a configuration file.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read: missing, not a regular file, over its cap (named), not UTF-8.
    #[error(transparent)]
    Read(#[from] crate::types::file::FileError),
    /// The TOML did not parse, or had an unknown key or a wrongly typed value (the message names the line).
    #[error("{path}: {message}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// The parser's message, including line and column.
        message: String,
    },
    /// Values parsed but break a rule; every problem is listed.
    #[error("{path}: invalid configuration:\n  - {}", problems.join("\n  - "))]
    Invalid {
        /// The file.
        path: PathBuf,
        /// One line per problem, each naming its key.
        problems: Vec<String>,
    },
}

impl ConfigError {
    /// Bounded label for logs and metrics.
    pub fn kind(&self) -> &'static str {
        match self {
            ConfigError::Read(_) => "read",
            ConfigError::Parse { .. } => "parse",
            ConfigError::Invalid { .. } => "invalid",
        }
    }
}

/// The whole raw file. Tables are added here as the gateway grows; unknown tables are errors.
#[derive(Debug, Clone, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawConfig {
    /// `[client]`.
    #[serde(default)]
    pub client: RawClient,
    /// `[listen]`.
    #[serde(default)]
    pub listen: RawListen,
    /// `[admin]`: the admin listener's token and forced-refresh rate limit.
    #[serde(default)]
    pub admin: RawAdmin,
    /// `[limits]`: data-plane deadlines and caps.
    #[serde(default)]
    pub limits: RawLimits,
    /// `[policy]`.
    #[serde(default)]
    pub policy: RawPolicy,
    /// `[[integrations]]`.
    #[serde(default)]
    pub integrations: Vec<RawIntegration>,
    /// `[refresh]`: card refresh period bounds, backoff and stale-mark debounce.
    #[serde(default)]
    pub refresh: RawRefresh,
    /// `[state]`: where last-known-good cards are kept.
    #[serde(default)]
    pub state: RawState,
    /// `[effective_card]`: the gateway's own card signatures.
    #[serde(default)]
    pub effective_card: RawEffectiveCard,
    /// `[probes]`: the gateway's own probe runs (schedule and rate limits).
    #[serde(default)]
    pub probes: RawProbes,
    /// `[log]`: format, level and access log.
    #[serde(default)]
    pub log: RawLog,
    /// `[runtime]`: data-plane threads and work stealing.
    #[serde(default)]
    pub runtime: RawRuntime,
    /// `[telemetry]`: OpenTelemetry traces (off when absent).
    pub telemetry: Option<RawTelemetry>,
    /// `[[detectors]]`: custom content detectors for the integrations' guard policies.
    #[serde(default)]
    pub detectors: Vec<RawDetector>,
    /// `[guard]`: the content guard's scan budget and inbound recording.
    #[serde(default)]
    pub guard: RawGuard,
}

/// The JSON Schema of the config file (`a2a-egress config schema`, committed as
/// `schemas/config.schema.json`), derived from [`RawConfig`], the types the parser reads: the
/// keys, their types and the closed sets of values. Rules between values (durations in range,
/// names unique, files readable) are [`Config::from_raw`]'s; `config check` applies both.
pub fn schema() -> serde_json::Value {
    let mut schema = schemars::schema_for!(RawConfig).to_value();
    if let Some(o) = schema.as_object_mut() {
        o.insert("title".into(), "a2a-egress gateway.toml".into());
        o.insert(
            "description".into(),
            "The a2a-egress gateway configuration (config/gateway.toml): `a2a-egress config schema` prints this schema, `a2a-egress config check` applies it and every rule between values; the README's Configuration section explains each key.".into(),
        );
    }
    schema
}

/// A validated configuration.
#[derive(Debug, Clone)]
pub struct Config {
    /// The file it came from (relative paths in it resolve against its folder).
    pub path: PathBuf,
    /// What the client implements.
    pub caps: ClientCaps,
    /// How cards are read.
    pub card_policy: CardPolicy,
    /// Where the gateway listens.
    pub listen: Listen,
    /// The admin listener's protection (`[admin]`).
    pub admin: Admin,
    /// Data-plane deadlines and caps (`[limits]`).
    pub limits: Limits,
    /// Gateway-wide request policy.
    pub policy: Policy,
    /// The integrations, in file order (names are unique).
    pub integrations: Vec<Integration>,
    /// Refresh scheduling (`[refresh]`).
    pub refresh: RefreshSettings,
    /// The gateway's own probe runs (`[probes]`).
    pub probes: ProbeSchedule,
    /// Last-known-good directory (`[state] dir`, resolved against the config folder); `None` = off.
    pub state_dir: Option<PathBuf>,
    /// How the gateway signs its effective cards (`[effective_card]`); `None`: it does not.
    pub card_signing: Option<CardSigning>,
    /// Logging (`[log]`), read at start.
    pub log: Log,
    /// Threads and scheduling (`[runtime]`), read at start.
    pub runtime: Runtime,
    /// OpenTelemetry traces (`[telemetry]` with the `OTEL_*` variables), read at start; `None`:
    /// off.
    pub telemetry: Option<Telemetry>,
    /// The content guard's detectors and shared settings (`[[detectors]]`, `[guard]`); each
    /// integration's policy is compiled against them.
    pub guard: GuardContext,
}

/// Every CPU this process may use: the parallelism of a config read outside a running gateway
/// (`validate`, `check`, start-up).
fn all_cores() -> usize {
    std::thread::available_parallelism().map_or(1, std::num::NonZero::get)
}

impl Config {
    /// Reads, parses and validates a config file, read with the default cap
    /// ([`DEFAULT_MAX_CONFIG_BYTES`]: at start, before any `[limits]` is known).
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        Self::load_capped(path, DEFAULT_MAX_CONFIG_BYTES)
    }

    /// Reads (at most `cap` bytes, else refused naming the cap), parses and validates a config
    /// file. Blocking: callers on a runtime call it from a blocking thread.
    pub fn load_capped(path: &Path, cap: u64) -> Result<Config, ConfigError> {
        Self::load_capped_on(path, cap, all_cores())
    }

    /// [`Config::load_capped`] on at most `threads` threads, the calling one included (at least
    /// one). A running gateway reloads on one CPU fewer than it has, so a large file's parse
    /// never takes every CPU from the data plane.
    pub fn load_capped_on(path: &Path, cap: u64, threads: usize) -> Result<Config, ConfigError> {
        let text = crate::types::file::read_capped_string(path, cap, "config")?;
        Self::parse_on(&text, path, threads)
    }

    /// Parses and validates config text; `path` is used for messages and relative paths. A text
    /// longer than its own `[limits] max_config_bytes` is refused, so a config that starts is
    /// never one its own reload would refuse for its size.
    pub fn parse(text: &str, path: &Path) -> Result<Config, ConfigError> {
        Self::parse_on(text, path, all_cores())
    }

    /// [`Config::parse`] on at most `threads` threads, the calling one included.
    pub fn parse_on(text: &str, path: &Path, threads: usize) -> Result<Config, ConfigError> {
        Self::parse_with(text, path, threads, None)
    }

    /// Reads and validates a config file as [`Config::load`] does, for a machine that has no
    /// secrets (`a2a-egress config check` in CI): a secret file the config names that is not
    /// there (`[admin] token_file`, `[effective_card] signing_key`) is returned as a note instead
    /// of a problem, and the config then has no token or no signing key. A secret file that is
    /// there is checked as at start (mode, length, placeholder, key format). Every other file the
    /// config names (JWKS, artifact schemas) is part of the config and must be there.
    pub fn load_offline(path: &Path) -> Result<(Config, Vec<String>), ConfigError> {
        let text =
            crate::types::file::read_capped_string(path, DEFAULT_MAX_CONFIG_BYTES, "config")?;
        let mut notes = Vec::new();
        let config = Self::parse_with(&text, path, all_cores(), Some(&mut notes))?;
        Ok((config, notes))
    }

    /// [`Config::parse_on`], noting absent secret files in `notes` when given
    /// ([`Config::load_offline`]).
    fn parse_with(
        text: &str,
        path: &Path,
        threads: usize,
        notes: Option<&mut Vec<String>>,
    ) -> Result<Config, ConfigError> {
        let threads = threads.max(1);
        let raw = document::parse_raw(text, threads).map_err(|e| ConfigError::Parse {
            path: path.to_owned(),
            message: e.0,
        })?;
        let config = Self::from_raw_on(raw, path, threads, notes)?;
        let cap = config.limits.max_config_bytes;
        if text.len() as u64 > cap {
            return Err(ConfigError::Invalid {
                path: path.to_owned(),
                problems: vec![format!(
                    "limits.max_config_bytes: the file is {} bytes, more than its own cap of {cap}",
                    text.len()
                )],
            });
        }
        Ok(config)
    }

    /// Checks every value of a raw config, reporting all problems at once.
    pub fn from_raw(raw: RawConfig, path: &Path) -> Result<Config, ConfigError> {
        Self::from_raw_on(raw, path, all_cores(), None)
    }

    /// [`Config::from_raw`], checking the integrations on at most `threads` threads; with
    /// `notes`, absent secret files are notes ([`Config::load_offline`]).
    fn from_raw_on(
        raw: RawConfig,
        path: &Path,
        threads: usize,
        mut notes: Option<&mut Vec<String>>,
    ) -> Result<Config, ConfigError> {
        let mut problems = Vec::new();
        let base = path.parent().unwrap_or(Path::new("."));
        let c = raw.client;
        let caps = client::caps(&c, &mut problems);
        let card_policy = client::card_policy(&c, base, &mut problems);
        let listen = listen::listen(&raw.listen, &mut problems);
        let limits = listen::limits(&raw.limits, &mut problems);
        let admin = listen::admin(
            &raw.admin,
            &listen,
            base,
            &mut problems,
            notes.as_deref_mut(),
        );
        let policy = integrations::policy(&raw.policy, &mut problems);
        let guard = guard::context(&raw.detectors, &raw.guard, base, &mut problems);
        let integrations = integrations::integrations(
            raw.integrations,
            &integrations::Shared {
                client: &c,
                known_extensions: &caps.extensions,
                base,
                guard: &guard,
            },
            threads,
            &mut problems,
        );
        let refresh = RefreshSettings::from_raw(&raw.refresh, &mut problems);
        let probes = ProbeSchedule::from_raw(&raw.probes, &mut problems);
        let state_dir = raw.state.dir.as_ref().map(|d| base.join(d));
        let card_signing =
            effective_card::effective_card(&raw.effective_card, base, &mut problems, notes);
        let log = log::log(&raw.log, &mut problems);
        let runtime = runtime::runtime(&raw.runtime, &mut problems);
        let env = |k: &str| std::env::var(k).ok();
        let telemetry = telemetry::telemetry(raw.telemetry.as_ref(), &env, base, &mut problems);
        if !problems.is_empty() {
            // A problem may quote a value of any length: each is one bounded, printable line.
            let problems = problems.iter().map(|p| one_line(p)).collect();
            return Err(ConfigError::Invalid {
                path: path.to_owned(),
                problems,
            });
        }
        Ok(Config {
            refresh,
            probes,
            state_dir,
            log,
            runtime,
            telemetry,
            guard,
            listen,
            admin,
            limits,
            policy,
            integrations,
            path: path.to_owned(),
            caps,
            card_policy,
            card_signing,
        })
    }
}

/// `text` as one bounded line without control characters (a problem or a parser's message).
fn one_line(text: &str) -> String {
    bounded_report(&text.replace('\n', " "), MAX_REPORT_LINE_CHARS, 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trusted_jwks_files_are_loaded_with_the_config() {
        let dir = tempfile::tempdir().unwrap();
        let sdk = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sdk");
        std::fs::copy(sdk.join("python-signed.jwks"), dir.path().join("ok.jwks")).unwrap();
        std::fs::write(dir.path().join("bad.jwks"), "{\"keys\": 1}").unwrap();
        let text = "[client]\n\
            [[client.trusted_keys]]\norigin = \"https://a.example\"\njwks = \"ok.jwks\"\n\
            [[client.trusted_keys]]\norigin = \"https://b.example\"\njwks = \"missing.jwks\"\n\
            [[client.trusted_keys]]\norigin = \"https://c.example\"\njwks = \"bad.jwks\"\n";
        let Err(ConfigError::Invalid { problems, .. }) =
            Config::parse(text, &dir.path().join("g.toml"))
        else {
            panic!("expected invalid config")
        };
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(
            problems[0].starts_with("client.trusted_keys[1].jwks: cannot read "),
            "{problems:?}"
        );
        assert!(
            problems[1].starts_with("client.trusted_keys[2].jwks: JWKS "),
            "{problems:?}"
        );

        // A good file is loaded once: validation does not read it again.
        let good = "[client]\nallow_plain_http = true\nrequire_signatures = true\n\
            [[client.trusted_keys]]\norigin = \"ORIGIN\"\njwks = \"ok.jwks\"\n";
        let card = std::fs::read(sdk.join("python-signed.json")).unwrap();
        let v: serde_json::Value = serde_json::from_slice(&card).unwrap();
        let url = url::Url::parse(v["supportedInterfaces"][0]["url"].as_str().unwrap()).unwrap();
        let origin = url.origin().ascii_serialization();
        let cfg =
            Config::parse(&good.replace("ORIGIN", &origin), &dir.path().join("g.toml")).unwrap();
        assert!(cfg.card_policy.keys.is_some());
        std::fs::remove_file(dir.path().join("ok.jwks")).unwrap();
        let validated = crate::card::validate(&card, &cfg.card_policy, Some(&origin)).unwrap();
        assert!(matches!(
            validated.signature(),
            crate::card::SignatureStatus::Verified(_)
        ));
    }

    #[test]
    fn unknown_key_is_an_error_naming_its_line() {
        let err = Config::parse(
            "[client]\nbindings = [\"JSONRPC\"]\nbogus = 1\n",
            Path::new("g.toml"),
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("bogus"), "{err}");
        assert!(err.contains("line 3"), "{err}");
    }

    #[test]
    fn every_unknown_key_is_named_with_its_line() {
        let text = "[client]\nbindings = [\"JSONRPC\"]\nbogus = 1\nalso_bad = true\n\n[[client.trusted_keys]]\norigin = \"https://a.example\"\njwks = \"k.jwks\"\nkid = \"x\"\n\n[nonsense]\nx = 1\n";
        let err = Config::parse(text, Path::new("g.toml"))
            .unwrap_err()
            .to_string();
        for (key, line) in [("bogus", 3), ("also_bad", 4), ("kid", 9), ("nonsense", 11)] {
            assert!(
                err.contains(&format!("line {line}: unknown field `{key}`")),
                "{key} at line {line} missing from:\n{err}"
            );
        }
        assert!(err.contains("4 unknown key(s)"), "{err}");
    }

    #[test]
    fn unknown_keys_and_a_type_error_are_both_reported() {
        let err = Config::parse(
            "[client]\nbogus = 1\nmax_card_bytes = \"big\"\n",
            Path::new("g.toml"),
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("line 2: unknown field `bogus`"), "{err}");
        assert!(err.contains("line 3: "), "{err}");
    }

    #[test]
    fn all_problems_reported_at_once() {
        let err = Config::parse(
            "[client]\nbindings = [\"SOAP\"]\nversions = [\"1\"]\nmax_card_bytes = 0\n",
            Path::new("g.toml"),
        )
        .unwrap_err();
        let ConfigError::Invalid { problems, .. } = err else {
            panic!("expected Invalid, got {err}")
        };
        assert_eq!(problems.len(), 3, "{problems:?}");
    }

    #[test]
    fn non_loopback_listeners_need_an_explicit_opt_in() {
        for (key, text) in [
            ("listen.proxy", "[listen]\nproxy = \"0.0.0.0:7411\"\n"),
            ("listen.proxy", "[listen]\nproxy = \"[::]:7411\"\n"),
            ("listen.admin", "[listen]\nadmin = \"192.0.2.1:7412\"\n"),
        ] {
            let err = Config::parse(text, Path::new("g.toml"))
                .expect_err(text)
                .to_string();
            assert!(
                err.contains(key) && err.contains("listen.allow_non_loopback"),
                "{err}"
            );
        }
    }

    #[test]
    fn defaults() {
        let c = Config::parse("", Path::new("g.toml")).unwrap();
        assert_eq!(c.caps, ClientCaps::default());
        assert_eq!(
            c.card_policy.max_card_bytes,
            crate::card::DEFAULT_MAX_CARD_BYTES
        );
        assert!(!c.card_policy.allow_plain_http);
    }

    #[test]
    fn a_config_over_its_cap_or_not_a_regular_file_is_refused_naming_the_cap() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("g.toml");
        std::fs::write(&path, format!("# {}\n", "x".repeat(5000))).unwrap();
        assert!(Config::load_capped(&path, 6000).is_ok());
        let e = Config::load_capped(&path, 4096).unwrap_err();
        assert_eq!(e.kind(), "read");
        assert!(
            e.to_string().contains("larger than its cap of 4096 bytes"),
            "{e}"
        );
        let zero = dir.path().join("zero.toml");
        std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
        let e = Config::load(&zero).unwrap_err().to_string();
        assert!(e.contains("not a regular file"), "{e}");
    }

    #[test]
    fn max_config_bytes_is_checked_and_a_file_over_its_own_cap_is_refused() {
        let c = Config::parse("", Path::new("g.toml")).unwrap();
        assert_eq!(c.limits.max_config_bytes, DEFAULT_MAX_CONFIG_BYTES);
        for bad in [0, MIN_MAX_CONFIG_BYTES - 1, DEFAULT_MAX_CONFIG_BYTES + 1] {
            let e = Config::parse(
                &format!("[limits]\nmax_config_bytes = {bad}\n"),
                Path::new("g"),
            )
            .unwrap_err()
            .to_string();
            assert!(e.contains("limits.max_config_bytes"), "{e}");
        }
        let own = format!(
            "[limits]\nmax_config_bytes = 4096\n# {}\n",
            "x".repeat(4096)
        );
        let e = Config::parse(&own, Path::new("g")).unwrap_err().to_string();
        assert!(e.contains("more than its own cap of 4096"), "{e}");
    }

    #[test]
    fn a_refusal_quotes_only_a_short_printable_excerpt_of_any_line() {
        let nul = format!(
            "[listen]\nproxy = \"127.0.0.1:0\"\n{}",
            "\0".repeat(1 << 20)
        );
        let long_value = format!("[listen]\npublic_url = \"{}\"\n", "\u{1b}x".repeat(1 << 20));
        let long_key = format!("[listen]\n{} = 1\n", "k".repeat(1 << 20));
        for text in [nul, long_value, long_key] {
            let e = Config::parse(&text, Path::new("g.toml"))
                .unwrap_err()
                .to_string();
            assert!(e.len() < 2048, "{} bytes: {}", e.len(), &e[..200]);
            assert!(!e.chars().any(|c| c.is_control() && c != '\n'), "{e:?}");
        }
        let e = Config::parse("[listen]\nproxy = \"x\" x\n", Path::new("g.toml")).unwrap_err();
        assert!(e.to_string().contains("line 2, column"), "{e}");
    }

    #[test]
    fn duplicate_names_and_missing_fallbacks_are_found_among_many_integrations() {
        let mut text = String::from("[client]\nallow_plain_http = true\n");
        let one = |name: &str, extra: &str| {
            format!(
                "[[integrations]]\nname = \"{name}\"\ncard = \"http://a.example/c.json\"\n\
                 origins = [\"http://a.example\", \"http://a.example\"]\nskills = [\"s\"]\n\
                 data_classes = [\"internal\"]\n{extra}"
            )
        };
        for i in 0..20_000 {
            text.push_str(&one(&format!("i{i}"), ""));
        }
        text.push_str(&one("i7", "on_breaking = \"fallback:i19999\"\n"));
        text.push_str(&one("last", "on_breaking = \"fallback:nobody\"\n"));
        let problems = match Config::parse(&text, Path::new("g.toml")) {
            Err(ConfigError::Invalid { problems, .. }) => problems,
            other => panic!("expected an invalid config, got {other:?}"),
        };
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(
            problems[0].contains("duplicate integration name \"i7\""),
            "{problems:?}"
        );
        assert!(
            problems[1].contains("\"nobody\" is not configured"),
            "{problems:?}"
        );
    }
}
