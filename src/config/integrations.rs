//! The `[policy]` and `[[integrations]]` tables: raw serde model and validation (no I/O).
//!
//! An integration is the reviewed contract with one remote agent:
//! approved origins, card URL, pinned binding/version, accepted skills, scopes, data classes, the
//! streaming requirement, optional extensions to activate, tenant, credential, body cap and extra
//! TLS roots. Secrets never appear here: a credential names an environment variable or a file.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::RawClient;
use super::artifact::{self, ArtifactPolicy, ArtifactSchema};
use super::guard::{GuardContext, IntegrationGuard, RawIntegrationGuard};
use crate::profile::Binding;
use crate::types::data_class::is_data_class;
use crate::types::{ProtocolVersion, normalize_origin, origin_of_url, parse_duration};

/// Default cap on a request body sent to an agent, in bytes (1 MiB).
pub const DEFAULT_MAX_BODY_BYTES: usize = 1024 * 1024;
/// Upper bound accepted for `max_body_bytes` (64 MiB): bodies are held in memory while policy runs.
const MAX_MAX_BODY_BYTES: usize = 64 * 1024 * 1024;

/// Why a configured tenant cannot be used, or `None`. A tenant becomes the first path segment of
/// HTTP+JSON calls and `params.tenant` of JSON-RPC calls, so it must be one path-safe segment: the
/// same rule as for a tenant a card declares ([`crate::card::text::tenant_problem`]), plus
/// non-empty (omit the key for no tenant) and at most 256 bytes.
fn tenant_problem(t: &str) -> Option<&'static str> {
    if t.is_empty() {
        Some("must not be empty (omit `tenant` for no tenant)")
    } else if t.len() > 256 {
        Some("must be at most 256 bytes")
    } else {
        crate::card::text::tenant_problem(t)
    }
}

/// The raw `[policy]` table.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawPolicy {
    /// Data class assumed for requests without an `A2A-Egress-Data-Class` header (default `"internal"`).
    #[serde(default = "default_data_class")]
    pub default_data_class: String,
}

fn default_data_class() -> String {
    "internal".into()
}

impl Default for RawPolicy {
    fn default() -> Self {
        RawPolicy {
            default_data_class: default_data_class(),
        }
    }
}

/// Whether an integration's workflow needs streaming (a required feature is never silently
/// downgraded).
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    Default,
    Deserialize,
    serde::Serialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum StreamingMode {
    /// Streaming calls must stream; a profile without streaming is refused, never downgraded.
    Required,
    /// Stream when the profile allows it, otherwise downgrade to `SendMessage` answered as SSE.
    #[default]
    Preferred,
    /// Never stream upstream: streaming calls are always sent as `SendMessage`.
    Off,
}

impl StreamingMode {
    /// The config spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            StreamingMode::Required => "required",
            StreamingMode::Preferred => "preferred",
            StreamingMode::Off => "off",
        }
    }
}

/// The raw `credential` value of an integration.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(tag = "type", deny_unknown_fields)]
pub enum RawCredential {
    /// No `Authorization` header is sent upstream (the caller's is dropped).
    #[serde(rename = "none")]
    None,
    /// Forward the caller's own `Authorization` header unchanged.
    #[serde(rename = "pass-through")]
    PassThrough,
    /// `Authorization: Bearer <token>`, the token read from an environment variable or a file.
    #[serde(rename = "bearer")]
    Bearer {
        /// Environment variable holding the token.
        #[serde(default)]
        env: Option<String>,
        /// File holding the token (trailing whitespace trimmed), relative to the config folder.
        #[serde(default)]
        file: Option<PathBuf>,
    },
}

/// Where a secret is read from (never the secret itself).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum SecretSource {
    /// An environment variable.
    Env(String),
    /// A file (absolute, or resolved against the config folder).
    File(PathBuf),
}

/// The validated credential policy of an integration.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub enum Credential {
    /// Send no `Authorization`.
    #[default]
    None,
    /// Forward the caller's `Authorization` unchanged.
    PassThrough,
    /// A bearer token from this source.
    Bearer(SecretSource),
}

/// One raw `[[integrations]]` table.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawIntegration {
    /// Route name: `/agents/{name}/…`; `[A-Za-z0-9._-]`, 1..=64 characters, unique.
    pub name: String,
    /// URL of the agent's public card.
    pub card: String,
    /// Approved `scheme://host[:port]` origins; the card and the chosen interface must be on them.
    pub origins: Vec<String>,
    /// Pin the binding (`"JSONRPC"` or `"HTTP+JSON"`); default: whatever the profile chose.
    #[serde(default)]
    pub binding: Option<String>,
    /// Pin the protocol version (`Major.Minor`); default: whatever the profile chose.
    #[serde(default)]
    pub version: Option<String>,
    /// Accepted skill ids (at least one).
    pub skills: Vec<String>,
    /// Scopes the workflow's credential holds (informational until the extended-card work).
    #[serde(default)]
    pub scopes: Vec<String>,
    /// Data classes that may be sent to this agent (at least one).
    pub data_classes: Vec<String>,
    /// `"required"`, `"preferred"` (default) or `"off"`.
    #[serde(default)]
    pub streaming: StreamingMode,
    /// Optional extensions to activate (must also be in `[client] extensions`).
    #[serde(default)]
    pub extensions: Vec<String>,
    /// Tenant override; default: the interface's declared tenant.
    #[serde(default)]
    pub tenant: Option<String>,
    /// The bindings the effective card offers the orchestrator (`"JSONRPC"`, `"HTTP+JSON"`), in
    /// order; the gateway translates between either and the agent's. Default: the agent's own
    /// (JSON-RPC, then HTTP+JSON, in front of a gRPC agent).
    #[serde(default)]
    pub offer: Vec<String>,
    /// Credential; default none.
    #[serde(default)]
    pub credential: Option<RawCredential>,
    /// Largest request body forwarded, bytes (default 1 MiB).
    #[serde(default)]
    pub max_body_bytes: Option<usize>,
    /// PEM file of root certificates trusted for this upstream (relative to the config folder).
    #[serde(default)]
    pub ca_file: Option<PathBuf>,
    /// Headers that travel between this integration's callers and its agent besides the built-in
    /// allowlists, both ways: the caller's request headers to the agent, and the agent's answer
    /// headers to the caller (`proxy::headers::crosses`); names the gateway sets, frames or
    /// consumes itself are refused (and never cross either way).
    #[serde(default)]
    pub forward_headers: Vec<String>,
    /// Media types the workflow sends (e.g. `["application/json"]`). A lockfile records, per
    /// accepted skill, those the skill accepts. Default: every input mode the skill offers when
    /// the lockfile is written.
    #[serde(default)]
    pub input_modes: Vec<String>,
    /// Media types the workflow can read back. Default: every output mode the skill offers when
    /// the lockfile is written.
    #[serde(default)]
    pub output_modes: Vec<String>,
    /// What a card change that breaks the lockfile does: `"block"` (default: new delegations
    /// are refused, running tasks may still be read, cancelled and subscribed to),
    /// `"fallback:<integration>"` (new sends go to that integration while its own profile
    /// satisfies this lockfile) or `"warn"` (reported only).
    #[serde(default)]
    pub on_breaking: Option<String>,
    /// `[integrations.probe]`: the one skill probes may send trivial messages to (agreed with
    /// the provider as free of side effects). Without it, probes make side-effect-free calls only.
    #[serde(default)]
    pub probe: Option<RawProbe>,
    /// JSON Schema file (relative to the config's folder) that every `data` part of the
    /// artifacts in this agent's answers must match.
    #[serde(default)]
    pub artifact_schema: Option<PathBuf>,
    /// What a data part that does not match `artifact_schema` does: `"record"` (default:
    /// counted and recorded as evidence) or `"enforce"` (also replaced by an error).
    #[serde(default)]
    pub artifact_policy: Option<String>,
    /// The content guard: which detectors run on message sends and what a finding does, e.g.
    /// `guard = { detectors = ["pci", "private_key"], action = "refuse" }`.
    #[serde(default)]
    pub guard: Option<RawIntegrationGuard>,
}

/// The raw `[integrations.probe]` table.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawProbe {
    /// The safe skill's id (one of the integration's `skills`).
    pub skill: String,
    /// The text of probe messages (default `"a2a-egress probe"`).
    #[serde(default)]
    pub text: Option<String>,
    /// This integration's period of scheduled probe runs (default `[probes] every`).
    #[serde(default)]
    pub every: Option<String>,
}

/// The validated `[integrations.probe]`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ProbeSettings {
    /// The only skill message probes reach.
    pub skill: String,
    /// The text of probe messages.
    pub text: String,
    /// This integration's period of scheduled probe runs, when it has its own.
    pub every: Option<std::time::Duration>,
}

/// What a breaking change against the lockfile does to new delegations.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub enum OnBreaking {
    /// Refuse new delegations with `INTEGRATION_BLOCKED`.
    #[default]
    Block,
    /// Send new delegations to this other integration, when its profile satisfies the lockfile.
    Fallback(String),
    /// Keep going; the verdict is only reported.
    Warn,
}

impl OnBreaking {
    /// Bounded label (the fallback's name is not part of it).
    pub fn as_str(&self) -> &'static str {
        match self {
            OnBreaking::Block => "block",
            OnBreaking::Fallback(_) => "fallback",
            OnBreaking::Warn => "warn",
        }
    }
}

/// What an integration's lockfile is written from, how its claims are probed and how a breaking
/// change is handled.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct LockPolicy {
    /// Media types the workflow sends (empty: whatever each skill accepts when pinned).
    pub input_modes: Vec<String>,
    /// Media types the workflow reads back (empty: whatever each skill produces when pinned).
    pub output_modes: Vec<String>,
    /// Reaction to a breaking verdict.
    pub on_breaking: OnBreaking,
    /// The safe skill probes may send messages to (`[integrations.probe]`).
    pub probe: Option<ProbeSettings>,
}

/// Validated `[policy]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    /// Data class of unlabelled requests.
    pub default_data_class: String,
}

/// A validated integration.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Integration {
    /// Route name.
    pub name: String,
    /// Card URL (absolute).
    pub card: String,
    /// Normalised approved origins (`scheme://host[:port]`, default ports dropped).
    pub origins: Vec<String>,
    /// Pinned binding.
    pub binding: Option<Binding>,
    /// Pinned protocol version.
    pub version: Option<String>,
    /// Accepted skill ids.
    pub skills: Vec<String>,
    /// Scopes.
    pub scopes: Vec<String>,
    /// Allowed data classes (lowercase).
    pub data_classes: Vec<String>,
    /// Streaming requirement.
    pub streaming: StreamingMode,
    /// Optional extensions to activate.
    pub extensions: Vec<String>,
    /// Tenant override.
    pub tenant: Option<String>,
    /// The bindings the effective card offers, in order; empty: the default (see
    /// [`Integration::offered`]).
    pub offer: Vec<Binding>,
    /// Credential policy.
    pub credential: Credential,
    /// Body cap in bytes.
    pub max_body_bytes: usize,
    /// Extra roots for the upstream, resolved against the config folder.
    pub ca_file: Option<PathBuf>,
    /// Extra caller headers forwarded upstream (validated names, lowercase).
    pub forward_headers: Vec<http::HeaderName>,
    /// Lockfile inputs and the reaction to a breaking change.
    pub lock: LockPolicy,
    /// The expected artifact schema, compiled (`artifact_schema`, `artifact_policy`).
    pub artifacts: Option<ArtifactSchema>,
    /// The content guard's policy (`guard = { … }`); `None`: content is not scanned.
    pub guard: Option<IntegrationGuard>,
}

impl Integration {
    /// The bindings the effective card offers the orchestrator for an agent on `agent`, in
    /// order: `offer` when set, else the agent's own (JSON-RPC, then HTTP+JSON, in front of a
    /// gRPC agent, which the gateway serves on neither as it is).
    pub fn offered(&self, agent: Binding) -> &[Binding] {
        if !self.offer.is_empty() {
            return &self.offer;
        }
        match agent {
            Binding::JsonRpc => &[Binding::JsonRpc],
            Binding::HttpJson => &[Binding::HttpJson],
            Binding::Grpc => &[Binding::JsonRpc, Binding::HttpJson],
        }
    }

    /// Whether `url`'s origin is one of the approved origins.
    pub fn origin_allowed(&self, url: &str) -> bool {
        origin_of_url(url).is_some_and(|o| self.origins.contains(&o))
    }
}

/// Request headers the gateway sets, frames or consumes itself: an integration cannot ask for the
/// caller's copy of these to be forwarded. Hop-by-hop fields (RFC 9110 §7.6.1) never travel end to
/// end; `A2A-Version` and `A2A-Extensions` come from the profile; the credential comes from
/// `credential`; `Accept-Encoding` is always `identity` so the gateway can read agent errors; and
/// every `A2A-Egress-*` header (the data class among them) is for the gateway only.
pub fn is_reserved_header(name: &str) -> bool {
    const RESERVED: &[&str] = &[
        "connection",
        "keep-alive",
        "proxy-connection",
        "proxy-authorization",
        "proxy-authenticate",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "expect",
        "host",
        "content-length",
        "authorization",
        "accept-encoding",
        "a2a-version",
        "a2a-extensions",
        "x-a2a-extensions",
    ];
    let name = name.to_ascii_lowercase();
    name.starts_with("a2a-egress-") || RESERVED.contains(&name.as_str())
}

fn forward_headers(
    raw: &[String],
    at: &At<'_>,
    problems: &mut Vec<String>,
) -> Vec<http::HeaderName> {
    let mut out: Vec<http::HeaderName> = Vec::new();
    let mut seen = HashSet::new();
    for h in raw {
        match http::HeaderName::from_bytes(h.as_bytes()) {
            Err(_) => problems.push(format!("{at}.forward_headers: {h:?} is not a header name")),
            Ok(n) if is_reserved_header(n.as_str()) => problems.push(format!(
                "{at}.forward_headers: {h:?} is set or consumed by the gateway itself"
            )),
            Ok(n) => {
                if seen.insert(n.clone()) {
                    out.push(n);
                }
            }
        }
    }
    out
}

pub(super) fn policy(raw: &RawPolicy, problems: &mut Vec<String>) -> Policy {
    if !is_data_class(&raw.default_data_class) {
        problems.push(format!(
            "policy.default_data_class: {:?} must be a lowercase token [a-z0-9._-]",
            raw.default_data_class
        ));
    }
    Policy {
        default_data_class: raw.default_data_class.clone(),
    }
}

fn is_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 64
        && s.bytes()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
        && s != "."
        && s != ".."
}

/// `f(i, item)` for every item, on every core, the results in the items' order. Each item is
/// taken by whichever thread comes first; a helper the system will not start (a pids or thread
/// limit) only means the calling thread does more of them itself.
fn in_order_on_every_core<T: Send, R: Send>(
    items: Vec<T>,
    f: impl Fn(usize, T) -> R + Sync,
) -> Vec<R> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let slots: Vec<std::sync::Mutex<Option<T>>> = items
        .into_iter()
        .map(|t| std::sync::Mutex::new(Some(t)))
        .collect();
    let next = AtomicUsize::new(0);
    let work = || {
        let mut done = Vec::new();
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            let Some(slot) = slots.get(i) else { break };
            let taken = slot
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .take();
            if let Some(item) = taken {
                done.push((i, f(i, item)));
            }
        }
        done
    };
    let mut done = std::thread::scope(|s| {
        let helpers: Vec<_> = (1..slots.len())
            .filter_map(|_| std::thread::Builder::new().spawn_scoped(s, work).ok())
            .collect();
        let mut done = work();
        for h in helpers {
            done.extend(h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)));
        }
        done
    });
    done.sort_unstable_by_key(|(i, _)| *i);
    done.into_iter().map(|(_, r)| r).collect()
}

/// The validated integrations, in file order. The raw tables are consumed: their strings move
/// into the validated ones instead of being copied (at 100,000 integrations the copies and the
/// frees of the originals were a good part of `validate --config`'s time).
/// What every integration's check reads besides its own table.
pub(super) struct Shared<'a> {
    /// `[client]`.
    pub client: &'a RawClient,
    /// `[client] extensions`, sorted and deduplicated.
    pub known_extensions: &'a [String],
    /// The config's folder.
    pub base: &'a Path,
    /// The compiled detectors and `[guard]` settings.
    pub guard: &'a GuardContext,
}

pub(super) fn integrations(
    raws: Vec<RawIntegration>,
    shared: &Shared<'_>,
    threads: usize,
    problems: &mut Vec<String>,
) -> Vec<Integration> {
    let duplicate = duplicate_names(&raws);
    let check = |first: usize, raws: Vec<RawIntegration>, duplicate: &[bool]| {
        let mut found = Vec::new();
        let mut check = Check {
            client: shared.client,
            known_extensions: shared.known_extensions,
            base: shared.base,
            guard: shared.guard,
            problems: &mut found,
        };
        let out: Vec<Integration> = (first..)
            .zip(raws)
            .zip(duplicate)
            .map(|((i, r), &duplicate)| check.integration(i, duplicate, r))
            .collect();
        (out, found)
    };
    // Each table is checked on its own (names were compared above, fallbacks are below), so
    // runs of tables are checked on every core; the runs' results and problems are joined in
    // file order, as one pass would have written them.
    let per = raws.len().div_ceil(threads.max(1)).max(PARALLEL_CHECK_MIN);
    let mut runs = Vec::new();
    let mut rest = raws;
    while rest.len() > per {
        let tail = rest.split_off(per);
        runs.push(std::mem::replace(&mut rest, tail));
    }
    runs.push(rest);
    let mut starts = Vec::with_capacity(runs.len());
    let mut from = 0;
    for run in &runs {
        starts.push(from);
        from += run.len();
    }
    let done = in_order_on_every_core(runs, |i, run| {
        let (first, n) = (starts[i], run.len());
        check(first, run, &duplicate[first..first + n])
    });
    let mut out: Vec<Integration> = Vec::with_capacity(duplicate.len());
    for (run, found) in done {
        out.extend(run);
        problems.extend(found);
    }
    check_fallbacks(&out, problems);
    out
}

/// Fewest tables checked on a thread of their own: below this, starting a thread costs more
/// than it saves.
const PARALLEL_CHECK_MIN: usize = 2048;

fn duplicate_names(raws: &[RawIntegration]) -> Vec<bool> {
    let mut seen = HashSet::with_capacity(raws.len());
    raws.iter().map(|r| !seen.insert(r.name.as_str())).collect()
}

/// How messages name a table: `integrations[N] (name)`, or `integrations[N]` when the name is not
/// valid. Written only into a problem: formatting it for every table cost more than every check
/// of a valid one.
#[derive(Clone, Copy)]
struct At<'r> {
    index: usize,
    name: Option<&'r str>,
}

impl std::fmt::Display for At<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.name {
            Some(name) => write!(f, "integrations[{}] ({name})", self.index),
            None => write!(f, "integrations[{}]", self.index),
        }
    }
}

/// Checks one `[[integrations]]` table after another, appending one message per problem (each
/// starting with `at`, the table's place in the file).
struct Check<'a> {
    client: &'a RawClient,
    /// `[client] extensions`, sorted and deduplicated (looked up by binary search).
    known_extensions: &'a [String],
    base: &'a Path,
    guard: &'a GuardContext,
    problems: &'a mut Vec<String>,
}

impl Check<'_> {
    /// The name's rules (charset, and uniqueness: `duplicate` when an earlier table has it,
    /// [`duplicate_names`]); returns how messages name the table.
    fn name<'r>(&mut self, i: usize, r: &'r RawIntegration, duplicate: bool) -> At<'r> {
        let at = if is_name(&r.name) {
            At {
                index: i,
                name: Some(&r.name),
            }
        } else {
            self.problems.push(format!(
                "integrations[{i}].name: {:?} must be 1..=64 characters of [A-Za-z0-9._-]",
                r.name
            ));
            At {
                index: i,
                name: None,
            }
        };
        if duplicate {
            self.problems.push(format!(
                "{at}.name: duplicate integration name {:?}",
                r.name
            ));
        }
        at
    }

    /// The validated integration (every field checked; the problems recorded). Every check
    /// reads the raw table first; then its strings move into the result.
    fn integration(&mut self, i: usize, duplicate: bool, r: RawIntegration) -> Integration {
        let at = &self.name(i, &r, duplicate);
        let origins = self.origins(at, &r);
        self.card(at, &r, &origins);
        let binding = self.pins(at, &r);
        let offer = self.offer(at, &r);
        self.lists(at, &r);
        let credential = self.credential(at, &r);
        let max_body_bytes = r.max_body_bytes.unwrap_or(DEFAULT_MAX_BODY_BYTES);
        if max_body_bytes == 0 || max_body_bytes > MAX_MAX_BODY_BYTES {
            self.problems.push(format!(
                "{at}.max_body_bytes: {max_body_bytes} is outside 1..={MAX_MAX_BODY_BYTES}"
            ));
        }
        let ca_file = r.ca_file.as_ref().map(|f| self.base.join(f));
        let forward_headers = forward_headers(&r.forward_headers, at, self.problems);
        let lock = lock_policy(&r, at, self.problems);
        let artifacts = self.artifacts(at, &r);
        let guard = r.guard.as_ref().and_then(|g| {
            super::guard::integration_guard(self.guard, g, &at.to_string(), self.problems)
        });
        let mut skills = r.skills;
        skills.dedup();
        let mut data_classes = r.data_classes;
        data_classes.sort();
        data_classes.dedup();
        let mut extensions = r.extensions;
        extensions.sort();
        extensions.dedup();
        Integration {
            name: r.name,
            card: r.card,
            origins,
            binding,
            version: r.version,
            skills,
            scopes: r.scopes,
            data_classes,
            streaming: r.streaming,
            extensions,
            tenant: r.tenant,
            offer,
            credential,
            max_body_bytes,
            ca_file,
            forward_headers,
            lock,
            artifacts,
            guard,
        }
    }

    /// The compiled `artifact_schema`, read relative to the config's folder.
    fn artifacts(&mut self, at: &At<'_>, r: &RawIntegration) -> Option<ArtifactSchema> {
        let policy = match r.artifact_policy.as_deref() {
            None => ArtifactPolicy::default(),
            raw => artifact::policy(raw, &at.to_string())
                .map_err(|p| self.problems.push(p.to_string()))
                .unwrap_or_default(),
        };
        let Some(file) = &r.artifact_schema else {
            if r.artifact_policy.is_some() {
                self.problems
                    .push(format!("{at}.artifact_policy: set without artifact_schema"));
            }
            return None;
        };
        ArtifactSchema::load(&self.base.join(file), policy)
            .map_err(|e| self.problems.push(format!("{at}.artifact_schema: {e}")))
            .ok()
    }

    /// Approved origins, normalised and deduplicated (plain http only when the client allows it).
    fn origins(&mut self, at: &At<'_>, r: &RawIntegration) -> Vec<String> {
        let mut origins = Vec::new();
        let mut seen = HashSet::new();
        for o in &r.origins {
            match normalize_origin(o) {
                Some(n) if n.starts_with("http://") && !self.client.allow_plain_http => {
                    self.problems.push(format!(
                        "{at}.origins: {o:?} is plain http but [client] allow_plain_http is false"
                    ))
                }
                Some(n) => {
                    if seen.insert(n.clone()) {
                        origins.push(n)
                    }
                }
                None => self.problems.push(format!(
                    "{at}.origins: {o:?} is not a scheme://host[:port] origin"
                )),
            }
        }
        if r.origins.is_empty() {
            self.problems.push(format!(
                "{at}.origins: must list at least one approved origin"
            ));
        }
        origins
    }

    /// The card URL: absolute http(s), on one of the approved `origins`.
    fn card(&mut self, at: &At<'_>, r: &RawIntegration, origins: &[String]) {
        match url::Url::parse(&r.card) {
            Ok(u) if matches!(u.scheme(), "http" | "https") && u.host().is_some() => {
                if u.scheme() == "http" && !self.client.allow_plain_http {
                    self.problems.push(format!(
                        "{at}.card: {:?} is plain http but [client] allow_plain_http is false",
                        r.card
                    ));
                }
                let o = u.origin().ascii_serialization();
                if !r.origins.is_empty() && !origins.contains(&o) {
                    self.problems.push(format!(
                        "{at}.card: origin {o} is not in this integration's origins"
                    ));
                }
            }
            _ => self.problems.push(format!(
                "{at}.card: {:?} is not an absolute http(s) URL",
                r.card
            )),
        }
    }

    /// The bindings the effective card offers: each one the gateway serves (gRPC it does not),
    /// none twice.
    fn offer(&mut self, at: &At<'_>, r: &RawIntegration) -> Vec<Binding> {
        let mut out = Vec::new();
        for b in &r.offer {
            match Binding::from_wire(b) {
                Some(Binding::Grpc) => self.problems.push(format!(
                    "{at}.offer: the gateway serves JSON-RPC and HTTP+JSON, not gRPC"
                )),
                Some(parsed) if out.contains(&parsed) => {
                    self.problems
                        .push(format!("{at}.offer: {b:?} is named twice"));
                }
                Some(parsed) => out.push(parsed),
                None => self.problems.push(format!(
                    "{at}.offer: {b:?} is not \"JSONRPC\" or \"HTTP+JSON\""
                )),
            }
        }
        out
    }

    /// The binding and version pins, each one the client implements; returns the binding.
    fn pins(&mut self, at: &At<'_>, r: &RawIntegration) -> Option<Binding> {
        let binding = r.binding.as_ref().and_then(|b| {
            let parsed = Binding::from_wire(b);
            if parsed.is_none() {
                self.problems.push(format!(
                    "{at}.binding: {b:?} is not \"JSONRPC\", \"HTTP+JSON\" or \"GRPC\""
                ));
            }
            parsed
        });
        if let Some(b) = binding
            && !self.client.bindings.iter().any(|c| c == b.as_str())
        {
            self.problems
                .push(format!("{at}.binding: {b} is not in [client] bindings"));
        }
        if let Some(v) = &r.version {
            if ProtocolVersion::parse(v).is_err() {
                self.problems.push(format!(
                    "{at}.version: {v:?} is not Major.Minor (e.g. \"1.0\")"
                ));
            } else if !self.client.versions.contains(v) {
                self.problems
                    .push(format!("{at}.version: {v} is not in [client] versions"));
            }
            // Known before any card is read; a 0.3 interface chosen without a pin is refused by
            // the contract check (`state::check_contract`) instead.
            if v == "0.3" && r.tenant.is_some() {
                self.problems.push(format!(
                    "{at}.tenant: A2A 0.3 has no tenant, and version is pinned to \"0.3\""
                ));
            }
        }
        binding
    }

    /// Skills, data classes, extensions to activate and the tenant.
    fn lists(&mut self, at: &At<'_>, r: &RawIntegration) {
        if r.skills.is_empty() {
            self.problems.push(format!(
                "{at}.skills: must list at least one accepted skill id"
            ));
        }
        if r.skills.iter().any(|s| s.is_empty()) {
            self.problems
                .push(format!("{at}.skills: skill ids must not be empty"));
        }
        if r.data_classes.is_empty() {
            self.problems.push(format!(
                "{at}.data_classes: must list at least one allowed data class"
            ));
        }
        for d in &r.data_classes {
            if !is_data_class(d) {
                self.problems.push(format!(
                    "{at}.data_classes: {d:?} must be a lowercase token [a-z0-9._-]"
                ));
            }
        }
        for e in &r.extensions {
            if self.known_extensions.binary_search(e).is_err() {
                self.problems.push(format!(
                    "{at}.extensions: {e:?} is not in [client] extensions, so it cannot be activated"
                ));
            }
        }
        if let Some(t) = &r.tenant
            && let Some(why) = tenant_problem(t)
        {
            self.problems.push(format!("{at}.tenant: {t:?}: {why}"));
        }
    }

    /// The credential: none, pass-through, or a bearer token from exactly one source.
    fn credential(&mut self, at: &At<'_>, r: &RawIntegration) -> Credential {
        match &r.credential {
            None | Some(RawCredential::None) => Credential::None,
            Some(RawCredential::PassThrough) => Credential::PassThrough,
            Some(RawCredential::Bearer { env, file }) => match (env, file) {
                (Some(e), None) if !e.is_empty() && !e.contains('=') => {
                    Credential::Bearer(SecretSource::Env(e.clone()))
                }
                (None, Some(f)) => Credential::Bearer(SecretSource::File(self.base.join(f))),
                _ => {
                    self.problems.push(format!(
                        "{at}.credential: a bearer credential names exactly one of env = \"VAR\" or file = \"path\""
                    ));
                    Credential::None
                }
            },
        }
    }
}

/// `type/subtype` with token characters (RFC 9110 §8.3.1), parameters not allowed: a lockfile
/// compares media types by name.
fn is_media_type(s: &str) -> bool {
    let token = |t: &str| {
        !t.is_empty()
            && t.bytes()
                .all(|c| c.is_ascii_alphanumeric() || b"!#$&-^_.+*".contains(&c))
    };
    matches!(s.split_once('/'), Some((t, sub)) if token(t) && token(sub))
}

fn media_types(raw: &[String], key: &str, at: &At<'_>, problems: &mut Vec<String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for m in raw {
        if !is_media_type(m) {
            problems.push(format!(
                "{at}.{key}: {m:?} is not a type/subtype media type"
            ));
        } else {
            out.push(m.to_ascii_lowercase());
        }
    }
    out.sort();
    out.dedup();
    out
}

fn lock_policy(r: &RawIntegration, at: &At<'_>, problems: &mut Vec<String>) -> LockPolicy {
    let on_breaking = match r.on_breaking.as_deref() {
        None | Some("block") => OnBreaking::Block,
        Some("warn") => OnBreaking::Warn,
        Some(s) => match s.strip_prefix("fallback:") {
            Some(name) if is_name(name) => OnBreaking::Fallback(name.to_owned()),
            _ => {
                problems.push(format!(
                    "{at}.on_breaking: {s:?} is not \"block\", \"warn\" or \"fallback:<integration>\""
                ));
                OnBreaking::Block
            }
        },
    };
    let probe = r.probe.as_ref().map(|p| {
        if !r.skills.contains(&p.skill) {
            problems.push(format!(
                "{at}.probe.skill: {:?} is not one of the integration's skills",
                p.skill
            ));
        }
        let text = p.text.clone().unwrap_or_else(|| "a2a-egress probe".into());
        if text.is_empty() || text.len() > 256 || text.chars().any(char::is_control) {
            problems.push(format!(
                "{at}.probe.text: must be 1..=256 characters without control characters"
            ));
        }
        let every = p.every.as_deref().and_then(|t| match parse_duration(t) {
            Ok(d) if d >= std::time::Duration::from_secs(60) => Some(d),
            Ok(_) => {
                problems.push(format!("{at}.probe.every: must be at least 1m"));
                None
            }
            Err(e) => {
                problems.push(format!("{at}.probe.every: {e}"));
                None
            }
        });
        ProbeSettings {
            skill: p.skill.clone(),
            text,
            every,
        }
    });
    LockPolicy {
        input_modes: media_types(&r.input_modes, "input_modes", at, problems),
        output_modes: media_types(&r.output_modes, "output_modes", at, problems),
        on_breaking,
        probe,
    }
}

/// A fallback names another configured integration (one hop: its own fallback is not followed).
fn check_fallbacks(all: &[Integration], problems: &mut Vec<String>) {
    let names: HashSet<&str> = all.iter().map(|o| o.name.as_str()).collect();
    for (i, it) in all.iter().enumerate() {
        if let OnBreaking::Fallback(to) = &it.lock.on_breaking {
            let at = format!("integrations[{i}] ({})", it.name);
            if to == &it.name {
                problems.push(format!(
                    "{at}.on_breaking: an integration cannot fall back to itself"
                ));
            } else if !names.contains(to.as_str()) {
                problems.push(format!(
                    "{at}.on_breaking: fallback integration {to:?} is not configured"
                ));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::config::{Config, ConfigError, Credential, SecretSource, StreamingMode};
    use std::path::Path;

    const GOOD: &str = r#"
[listen]
proxy = "127.0.0.1:0"
admin = "127.0.0.1:0"
public_url = "http://gw.local:7411/"
[client]
bindings = ["JSONRPC", "HTTP+JSON"]
versions = ["1.0"]
extensions = ["https://example.com/ext/trace/v1"]
allow_plain_http = true
[policy]
default_data_class = "internal"
[[integrations]]
name = "echo"
card = "http://127.0.0.1:7400/.well-known/agent-card.json"
origins = ["http://127.0.0.1:7400"]
skills = ["echo"]
data_classes = ["public", "internal"]
streaming = "preferred"
extensions = ["https://example.com/ext/trace/v1"]
credential = { type = "bearer", env = "ECHO_TOKEN" }
[[integrations]]
name = "pricing"
card = "http://127.0.0.1:7401/.well-known/agent-card.json"
origins = ["http://127.0.0.1:7401"]
skills = ["quote"]
data_classes = ["public"]
streaming = "required"
credential = { type = "bearer", file = "secrets/pricing.token" }
max_body_bytes = 4096
ca_file = "ca.pem"
tenant = "acme"
forward_headers = ["X-Request-Id", "baggage", "x-request-id"]
"#;

    #[test]
    fn issue_example_parses_with_every_table() {
        let c = Config::parse(GOOD, Path::new("/etc/gw/gateway.toml")).unwrap();
        assert_eq!(c.listen.public_url.as_deref(), Some("http://gw.local:7411"));
        assert_eq!(c.policy.default_data_class, "internal");
        assert_eq!(c.integrations.len(), 2);
        let e = &c.integrations[0];
        assert_eq!(e.origins, vec!["http://127.0.0.1:7400".to_string()]);
        assert_eq!(e.streaming, StreamingMode::Preferred);
        assert_eq!(
            e.credential,
            Credential::Bearer(SecretSource::Env("ECHO_TOKEN".into()))
        );
        assert_eq!(e.max_body_bytes, super::DEFAULT_MAX_BODY_BYTES);
        let p = &c.integrations[1];
        assert_eq!(p.streaming, StreamingMode::Required);
        assert_eq!(
            p.credential,
            Credential::Bearer(SecretSource::File("/etc/gw/secrets/pricing.token".into()))
        );
        assert_eq!(p.ca_file.as_deref(), Some(Path::new("/etc/gw/ca.pem")));
        assert_eq!(p.forward_headers, ["x-request-id", "baggage"]);
        assert!(e.forward_headers.is_empty());
        assert_eq!(p.tenant.as_deref(), Some("acme"));
        assert!(p.origin_allowed("http://127.0.0.1:7401/a2a"));
        assert!(!p.origin_allowed("http://127.0.0.1:7402/a2a"));
    }

    #[test]
    fn every_integration_problem_is_reported() {
        let bad = r#"
[listen]
proxy = "nope"
[client]
allow_plain_http = false
[policy]
default_data_class = "Internal"
[[integrations]]
name = "a/b"
card = "http://127.0.0.1:7400/card"
origins = ["http://127.0.0.1:7400/path"]
skills = []
data_classes = []
streaming = "preferred"
extensions = ["https://unknown.example/ext"]
credential = { type = "bearer", env = "A", file = "b" }
max_body_bytes = 0
binding = "GRPC"
version = "1"
forward_headers = ["x-ok", "bad header", "A2A-Egress-Data-Class", "Cookie", "host", "Accept-Encoding"]
[[integrations]]
name = "x"
card = "https://b.example/card"
origins = ["https://a.example"]
skills = ["s"]
data_classes = ["public"]
[[integrations]]
name = "x"
card = "https://a.example/card"
origins = ["https://a.example"]
skills = ["s"]
data_classes = ["public"]
"#;
        let err = Config::parse(bad, Path::new("g.toml")).unwrap_err();
        let ConfigError::Invalid { problems, .. } = &err else {
            panic!("expected Invalid, got {err}")
        };
        let all = problems.join("\n");
        for needle in [
            "listen.proxy",
            "policy.default_data_class",
            "integrations[0].name",
            "integrations[0].origins",
            "integrations[0].card",
            "integrations[0].skills",
            "integrations[0].data_classes",
            "integrations[0].extensions",
            "integrations[0].credential",
            "integrations[0].max_body_bytes",
            "integrations[0].binding",
            "integrations[0].version",
            "integrations[0].forward_headers: \"bad header\" is not a header name",
            "integrations[0].forward_headers: \"A2A-Egress-Data-Class\" is set or consumed",
            "integrations[0].forward_headers: \"host\" is set or consumed",
            "integrations[0].forward_headers: \"Accept-Encoding\" is set or consumed",
            "integrations[1] (x).card: origin https://b.example",
            "integrations[2] (x).name: duplicate",
        ] {
            assert!(all.contains(needle), "missing {needle:?} in:\n{all}");
        }
    }

    #[test]
    fn tenants_must_be_path_safe() {
        let with_tenant = |t: &str| {
            format!(
                "[[integrations]]\nname = \"echo\"\ncard = \"https://a.example/card\"\n\
                 origins = [\"https://a.example\"]\nskills = [\"s\"]\ndata_classes = [\"public\"]\n\
                 tenant = {}\n",
                toml::Value::String(t.into())
            )
        };
        for bad in [
            "",
            "..",
            ".",
            "a/b",
            "a%2fb",
            "%2e%2e",
            "a\\b",
            "a b",
            " a",
            "a\tb",
            "a\u{7f}",
            "a\nb",
            "a\u{a0}b",
            "a?b",
            "a#b",
            "a\u{202e}b",
        ] {
            let err = Config::parse(&with_tenant(bad), Path::new("g.toml"))
                .err()
                .unwrap_or_else(|| panic!("tenant {bad:?} was accepted"));
            let ConfigError::Invalid { problems, .. } = &err else {
                panic!("expected Invalid, got {err}")
            };
            assert!(
                problems
                    .iter()
                    .any(|p| p.starts_with("integrations[0] (echo).tenant:")),
                "{bad:?}: {problems:?}"
            );
        }
        for good in ["t1", "acme-corp_2", "a.b", "...", "caf\u{e9}", "x:y@z"] {
            let c = Config::parse(&with_tenant(good), Path::new("g.toml"))
                .unwrap_or_else(|e| panic!("tenant {good:?} refused: {e}"));
            assert_eq!(c.integrations[0].tenant.as_deref(), Some(good));
        }
    }

    #[test]
    fn unknown_integration_key_and_bad_streaming_value_are_parse_errors() {
        let e = Config::parse(
            "[[integrations]]\nname=\"a\"\ncard=\"https://a.example/c\"\norigins=[\"https://a.example\"]\nskills=[\"s\"]\ndata_classes=[\"p\"]\nstreaming=\"maybe\"\n",
            Path::new("g.toml"),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("maybe") || e.contains("streaming"), "{e}");
        let e = Config::parse(
            "[[integrations]]\nname=\"a\"\ncard=\"https://a.example/c\"\norigins=[\"https://a.example\"]\nskills=[\"s\"]\ndata_classes=[\"p\"]\nsecret=\"x\"\n",
            Path::new("g.toml"),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("secret"), "{e}");
    }

    #[test]
    fn a_tenant_with_a_03_version_pin_is_a_config_error_and_grpc_and_03_pins_parse() {
        let one = |client: &str, extra: &str| {
            Config::parse(
                &format!(
                    "{client}[[integrations]]\nname=\"a\"\ncard=\"https://a.example/c\"\norigins=[\"https://a.example\"]\nskills=[\"s\"]\ndata_classes=[\"p\"]\n{extra}\n"
                ),
                Path::new("g.toml"),
            )
        };
        let client =
            "[client]\nbindings=[\"JSONRPC\",\"HTTP+JSON\",\"GRPC\"]\nversions=[\"1.0\",\"0.3\"]\n";
        let c = one(client, "version=\"0.3\"\nbinding=\"GRPC\"").unwrap();
        assert_eq!(
            c.integrations[0].binding,
            Some(crate::profile::Binding::Grpc)
        );
        assert_eq!(c.integrations[0].version.as_deref(), Some("0.3"));
        let e = one(client, "version=\"0.3\"\ntenant=\"t1\"")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("integrations[0]") && e.contains("tenant: A2A 0.3 has no tenant"),
            "{e}"
        );
        // The defaults stay 1.0, JSON-RPC and HTTP+JSON: the same pins are refused by them.
        let e = one("", "version=\"0.3\"\nbinding=\"GRPC\"")
            .unwrap_err()
            .to_string();
        assert!(e.contains("GRPC is not in [client] bindings"), "{e}");
        assert!(e.contains("0.3 is not in [client] versions"), "{e}");
    }

    /// `offer`: the bindings the gateway serves, in order, none twice; the default follows the
    /// agent's binding.
    #[test]
    fn offer_names_bindings_the_gateway_serves() {
        use crate::profile::Binding;
        let one = |extra: &str| {
            Config::parse(
                &format!(
                    "[[integrations]]\nname=\"a\"\ncard=\"https://a.example/c\"\norigins=[\"https://a.example\"]\nskills=[\"s\"]\ndata_classes=[\"p\"]\n{extra}\n"
                ),
                Path::new("g.toml"),
            )
        };
        let c = one("offer=[\"HTTP+JSON\",\"JSONRPC\"]").unwrap();
        let i = &c.integrations[0];
        assert_eq!(i.offer, [Binding::HttpJson, Binding::JsonRpc]);
        assert_eq!(
            i.offered(Binding::Grpc),
            [Binding::HttpJson, Binding::JsonRpc]
        );
        let plain = one("").unwrap();
        let i = &plain.integrations[0];
        assert_eq!(i.offered(Binding::HttpJson), [Binding::HttpJson]);
        assert_eq!(i.offered(Binding::JsonRpc), [Binding::JsonRpc]);
        assert_eq!(
            i.offered(Binding::Grpc),
            [Binding::JsonRpc, Binding::HttpJson]
        );
        let e = one("offer=[\"GRPC\",\"jsonrpc\",\"JSONRPC\",\"JSONRPC\"]")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("offer: the gateway serves JSON-RPC and HTTP+JSON, not gRPC"),
            "{e}"
        );
        assert!(
            e.contains("offer: \"jsonrpc\" is not \"JSONRPC\" or \"HTTP+JSON\""),
            "{e}"
        );
        assert!(e.contains("offer: \"JSONRPC\" is named twice"), "{e}");
    }

    #[test]
    fn pass_through_and_none_credentials() {
        let c = Config::parse(
            "[[integrations]]\nname=\"a\"\ncard=\"https://a.example/c\"\norigins=[\"https://a.example\"]\nskills=[\"s\"]\ndata_classes=[\"p\"]\ncredential={type=\"pass-through\"}\n[[integrations]]\nname=\"b\"\ncard=\"https://a.example/c\"\norigins=[\"https://a.example\"]\nskills=[\"s\"]\ndata_classes=[\"p\"]\ncredential={type=\"none\"}\n",
            Path::new("g.toml"),
        )
        .unwrap();
        assert_eq!(c.integrations[0].credential, Credential::PassThrough);
        assert_eq!(c.integrations[1].credential, Credential::None);
        assert_eq!(c.listen.proxy.to_string(), "127.0.0.1:7411");
        assert_eq!(c.listen.admin.to_string(), "127.0.0.1:7412");
    }
}

#[cfg(test)]
mod lock_keys {
    use crate::config::{Config, ConfigError, OnBreaking};
    use std::path::Path;

    fn two(a_extra: &str) -> String {
        format!(
            "[[integrations]]\nname=\"a\"\ncard=\"https://a.example/c\"\norigins=[\"https://a.example\"]\nskills=[\"s\"]\ndata_classes=[\"p\"]\n{a_extra}\n\
             [[integrations]]\nname=\"b\"\ncard=\"https://b.example/c\"\norigins=[\"https://b.example\"]\nskills=[\"s\"]\ndata_classes=[\"p\"]\n"
        )
    }

    #[test]
    fn on_breaking_and_media_types_parse() {
        let c = Config::parse(
            &two("on_breaking=\"fallback:b\"\ninput_modes=[\"Application/JSON\", \"application/json\", \"text/plain\"]\noutput_modes=[\"*/*\"]"),
            Path::new("g.toml"),
        )
        .unwrap();
        let a = &c.integrations[0].lock;
        assert_eq!(a.on_breaking, OnBreaking::Fallback("b".into()));
        assert_eq!(a.input_modes, ["application/json", "text/plain"]);
        assert_eq!(a.output_modes, ["*/*"]);
        assert_eq!(c.integrations[1].lock.on_breaking, OnBreaking::Block);
        let c = Config::parse(&two("on_breaking=\"warn\""), Path::new("g.toml")).unwrap();
        assert_eq!(c.integrations[0].lock.on_breaking.as_str(), "warn");
    }

    #[test]
    fn the_probe_table_names_one_of_the_skills() {
        let c = Config::parse(
            &two("[integrations.probe]\nskill = \"s\""),
            Path::new("g.toml"),
        )
        .unwrap();
        let p = c.integrations[0].lock.probe.as_ref().unwrap();
        assert_eq!(
            (p.skill.as_str(), p.text.as_str()),
            ("s", "a2a-egress probe")
        );
        assert!(c.integrations[1].lock.probe.is_none());
        let Err(ConfigError::Invalid { problems, .. }) = Config::parse(
            &two("[integrations.probe]\nskill = \"book\"\ntext = \"\""),
            Path::new("g.toml"),
        ) else {
            panic!("expected an invalid config")
        };
        assert_eq!(
            problems,
            [
                "integrations[0] (a).probe.skill: \"book\" is not one of the integration's skills",
                "integrations[0] (a).probe.text: must be 1..=256 characters without control characters"
            ]
        );
        let c = Config::parse(
            &two("[integrations.probe]\nskill = \"s\"\nevery = \"2h\""),
            Path::new("g.toml"),
        )
        .unwrap();
        let p = c.integrations[0].lock.probe.as_ref().unwrap();
        assert_eq!(p.every, Some(std::time::Duration::from_secs(7200)));
        for (every, problem) in [
            (
                "10s",
                "integrations[0] (a).probe.every: must be at least 1m",
            ),
            ("soon", "integrations[0] (a).probe.every: "),
        ] {
            let Err(ConfigError::Invalid { problems, .. }) = Config::parse(
                &two(&format!(
                    "[integrations.probe]\nskill = \"s\"\nevery = \"{every}\""
                )),
                Path::new("g.toml"),
            ) else {
                panic!("{every}: expected an invalid config")
            };
            assert!(problems[0].starts_with(problem), "{problems:?}");
        }
        let e = Config::parse(
            &two("[integrations.probe]\nskill = \"s\"\ntenant = \"t\""),
            Path::new("g.toml"),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("unknown field `tenant`"), "{e}");
    }

    #[test]
    fn the_artifact_schema_is_read_beside_the_config_and_compiled_at_load() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("schemas")).unwrap();
        std::fs::write(
            dir.path().join("schemas/quote.json"),
            r#"{"type":"object","required":["price"]}"#,
        )
        .unwrap();
        std::fs::write(dir.path().join("schemas/bad.json"), r#"{"type": 12}"#).unwrap();
        let path = dir.path().join("g.toml");
        let c = Config::parse(
            &two("artifact_schema = \"schemas/quote.json\"\nartifact_policy = \"enforce\""),
            &path,
        )
        .unwrap();
        let a = c.integrations[0].artifacts.as_ref().unwrap();
        assert_eq!(a.path, dir.path().join("schemas/quote.json"));
        assert_eq!(a.policy.as_str(), "enforce");
        assert!(a.check(&serde_json::json!({})).is_some());
        assert!(c.integrations[1].artifacts.is_none());
        let c = Config::parse(&two("artifact_schema = \"schemas/quote.json\""), &path).unwrap();
        assert_eq!(
            c.integrations[0]
                .artifacts
                .as_ref()
                .unwrap()
                .policy
                .as_str(),
            "record"
        );
        for (extra, needle) in [
            (
                "artifact_schema = \"schemas/bad.json\"",
                "integrations[0] (a).artifact_schema: ",
            ),
            (
                "artifact_schema = \"schemas/none.json\"",
                "integrations[0] (a).artifact_schema: cannot read ",
            ),
            (
                "artifact_policy = \"enforce\"",
                "integrations[0] (a).artifact_policy: set without artifact_schema",
            ),
            (
                "artifact_schema = \"schemas/quote.json\"\nartifact_policy = \"drop\"",
                "integrations[0] (a).artifact_policy: \"drop\" is not \"record\" or \"enforce\"",
            ),
        ] {
            let Err(ConfigError::Invalid { problems, .. }) = Config::parse(&two(extra), &path)
            else {
                panic!("{extra}: expected an invalid config")
            };
            assert!(problems[0].starts_with(needle), "{extra}: {problems:?}");
        }
        // The compile error names the file it came from.
        let Err(ConfigError::Invalid { problems, .. }) =
            Config::parse(&two("artifact_schema = \"schemas/bad.json\""), &path)
        else {
            panic!("expected an invalid config")
        };
        assert!(
            problems[0].contains("bad.json is not a usable JSON Schema"),
            "{problems:?}"
        );
    }

    #[test]
    fn bad_on_breaking_fallbacks_and_media_types_are_named() {
        for (extra, needle) in [
            (
                "on_breaking=\"stop\"",
                "integrations[0] (a).on_breaking: \"stop\" is not",
            ),
            (
                "on_breaking=\"fallback:\"",
                "integrations[0] (a).on_breaking: \"fallback:\" is not",
            ),
            (
                "on_breaking=\"fallback:a\"",
                "integrations[0] (a).on_breaking: an integration cannot fall back to itself",
            ),
            (
                "on_breaking=\"fallback:zz\"",
                "integrations[0] (a).on_breaking: fallback integration \"zz\" is not configured",
            ),
            (
                "input_modes=[\"json\"]",
                "integrations[0] (a).input_modes: \"json\" is not a type/subtype media type",
            ),
            (
                "output_modes=[\"text/plain; charset=utf-8\"]",
                "integrations[0] (a).output_modes: \"text/plain; charset=utf-8\" is not",
            ),
        ] {
            let Err(ConfigError::Invalid { problems, .. }) =
                Config::parse(&two(extra), Path::new("g.toml"))
            else {
                panic!("{extra}: expected an invalid config")
            };
            assert!(
                problems.iter().any(|p| p.starts_with(needle)),
                "{extra}: {problems:?}"
            );
        }
    }
}

#[cfg(test)]
mod sample {
    use crate::config::{Config, StreamingMode};
    use std::path::Path;

    /// The shipped sample config must stay valid (scripts/run.sh and the README rely on it).
    #[test]
    fn shipped_gateway_toml_is_valid() {
        let text = include_str!("../../config/gateway.toml");
        let c = Config::parse(text, Path::new("config/gateway.toml")).unwrap();
        assert_eq!(c.listen.proxy.to_string(), "127.0.0.1:7411");
        assert_eq!(c.listen.admin.to_string(), "127.0.0.1:7412");
        let f = &c.integrations[0];
        assert_eq!(f.name, "finance");
        assert_eq!(f.streaming, StreamingMode::Preferred);
    }
}
