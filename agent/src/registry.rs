//! The capability registry: its TOML model, validation, and the principals' bearer tokens.
//!
//! I/O: [`load`] reads the registry file, and principal tokens from environment variables or token
//! files; [`parse`] is pure apart from that token lookup, which goes through a [`Secrets`] source so
//! tests can supply their own.
//!
//! The file is parsed into private `Raw*` wire structs (`deny_unknown_fields`), then converted once
//! into the validated [`Registry`]. Every problem is collected and reported together, each naming
//! where it is (`manifests[reconcile-invoice].skill.input_modes`) and what is wrong. Tokens never
//! live in the TOML; only the SHA-256 of each token is kept in memory.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use sha2::{Digest, Sha256};

use a2a_egress::profile::Binding;
use a2a_egress::types::file::{FileError, read_capped_string};

/// The built-in handlers a manifest's `handler` may name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HandlerKind {
    /// Repeats the text (and any data parts) it receives.
    Echo,
    /// Returns a JSON status for an invoice number.
    LookupInvoice,
    /// Reconciles an invoice against its purchase order (JSON output).
    ReconcileInvoice,
    /// Reconciliation in the v2 output shape (with a summary).
    ReconcileInvoiceV2,
    /// Streams a report in several artifact chunks, one per step.
    SlowReport,
}

impl HandlerKind {
    const ALL: [HandlerKind; 5] = [
        HandlerKind::Echo,
        HandlerKind::LookupInvoice,
        HandlerKind::ReconcileInvoice,
        HandlerKind::ReconcileInvoiceV2,
        HandlerKind::SlowReport,
    ];

    /// The name used in the registry.
    pub fn name(self) -> &'static str {
        match self {
            HandlerKind::Echo => "echo",
            HandlerKind::LookupInvoice => "lookup-invoice",
            HandlerKind::ReconcileInvoice => "reconcile-invoice",
            HandlerKind::ReconcileInvoiceV2 => "reconcile-invoice-v2",
            HandlerKind::SlowReport => "slow-report",
        }
    }

    /// Parses a registry name.
    pub fn from_name(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|h| h.name() == s)
    }

    /// All registry names.
    pub fn names() -> Vec<&'static str> {
        Self::ALL.iter().map(|h| h.name()).collect()
    }
}

/// Errors loading a registry.
#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    /// The file could not be read.
    #[error("cannot read registry {path}: {source}")]
    Read {
        /// The registry path.
        path: PathBuf,
        /// Why: an I/O error, not a regular file, or over [`MAX_REGISTRY_BYTES`].
        source: FileError,
    },
    /// The TOML is malformed, has an unknown key or a value of the wrong type.
    #[error("registry: {at}: {message}")]
    Syntax {
        /// Where (a table path such as `manifests[2] (id "echo")`, or `registry`).
        at: String,
        /// The TOML parser's message (includes line and column).
        message: String,
    },
    /// The registry parsed but breaks one or more rules.
    #[error("registry has {} problem(s):\n{}", .0.len(), .0.iter().map(|p| format!("  - {p}")).collect::<Vec<_>>().join("\n"))]
    Invalid(Vec<Problem>),
}

/// One validation problem: where it is and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// The field path, e.g. `manifests[reconcile-invoice].replacement`.
    pub at: String,
    /// What is wrong, in one sentence.
    pub message: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.at, self.message)
    }
}

/// Where principal tokens come from; the process environment and files in production.
pub trait Secrets {
    /// The value of an environment variable, if set.
    fn env(&self, name: &str) -> Option<String>;
    /// The contents of a token file.
    fn file(&self, path: &Path) -> std::io::Result<String>;
}

/// Largest registry file read, in bytes (the shipped sample is a few KiB).
pub const MAX_REGISTRY_BYTES: u64 = 4 * 1024 * 1024;
/// Largest token file read, in bytes.
pub const MAX_TOKEN_BYTES: u64 = 64 * 1024;

/// [`Secrets`] backed by the real process environment and file system.
pub struct ProcessSecrets;

impl Secrets for ProcessSecrets {
    fn env(&self, name: &str) -> Option<String> {
        std::env::var(name).ok()
    }
    fn file(&self, path: &Path) -> std::io::Result<String> {
        // Capped and regular files only: a token path that names a FIFO or a huge file must not
        // hang or fill the agent's memory.
        read_capped_string(path, MAX_TOKEN_BYTES, "token file").map_err(std::io::Error::other)
    }
}

// === validated model ===

/// A validated capability registry: the one source of every card, the router index and the policy.
#[derive(Debug, Clone)]
pub struct Registry {
    /// The card base: everything in the card that is not a skill.
    pub agent: AgentBase,
    /// Declared extensions, in file order.
    pub extensions: Vec<Extension>,
    /// Principals that hold a usable token, keyed by the SHA-256 of the token.
    pub principals: Principals,
    /// Capability manifests, in file order (the order skills appear in cards).
    pub manifests: Vec<Manifest>,
    /// Router settings.
    pub router: RouterSettings,
    /// Handler settings.
    pub handlers: HandlerSettings,
    /// Deliberate misbehaviour switches for gateway tests.
    pub misbehave: Misbehave,
    /// Non-fatal findings (e.g. a principal whose token variable is unset), for the log.
    pub warnings: Vec<Problem>,
}

/// Everything in the card that is not generated from manifests.
#[derive(Debug, Clone)]
pub struct AgentBase {
    /// `name` of the card.
    pub name: String,
    /// `description` of the card.
    pub description: String,
    /// Base version; the card `version` is this plus a digest of the generated skill list.
    pub version: String,
    /// Externally visible base URL (no trailing slash); `None` = `http://<bound address>`.
    pub public_url: Option<String>,
    /// `documentationUrl`.
    pub documentation_url: Option<String>,
    /// `iconUrl`.
    pub icon_url: Option<String>,
    /// `provider`.
    pub provider: Option<Provider>,
    /// `Cache-Control: max-age` for the cards, in seconds (default 300).
    pub card_max_age_secs: u64,
    /// Whether calls without a bearer token are served (as the anonymous caller).
    pub allow_anonymous: bool,
    /// `defaultInputModes`.
    pub default_input_modes: Vec<String>,
    /// `defaultOutputModes`.
    pub default_output_modes: Vec<String>,
    /// Upper bound on tasks kept in memory (default 1000).
    pub max_tasks: usize,
    /// Upper bound on a request body, in bytes (default 1 MiB).
    pub max_request_bytes: usize,
    /// Interfaces in preference order.
    pub interfaces: Vec<Interface>,
    /// Protocol capability switches.
    pub capabilities: Capabilities,
    /// Security schemes by name (bearer only: principals authenticate with static bearer tokens).
    pub security_schemes: BTreeMap<String, BearerScheme>,
}

/// `provider` of the card.
#[derive(Debug, Clone)]
pub struct Provider {
    /// `organization`.
    pub organization: String,
    /// `url`.
    pub url: String,
}

/// One served interface.
#[derive(Debug, Clone)]
pub struct Interface {
    /// The binding spoken at `path`.
    pub binding: Binding,
    /// Path below the base URL, starting with `/` (e.g. `/jsonrpc`).
    pub path: String,
    /// `Major.Minor`; only `1.0` is implemented.
    pub protocol_version: String,
    /// Optional tenant advertised on the interface.
    pub tenant: Option<String>,
}

/// Protocol capability switches.
#[derive(Debug, Clone, Copy)]
pub struct Capabilities {
    /// `capabilities.streaming`.
    pub streaming: bool,
    /// `capabilities.pushNotifications` (always false: push is not implemented).
    pub push_notifications: bool,
    /// `capabilities.extendedAgentCard`; `None` = true iff an extended or preview manifest exists.
    pub extended_agent_card: Option<bool>,
}

/// An HTTP bearer security scheme.
#[derive(Debug, Clone)]
pub struct BearerScheme {
    /// `description`.
    pub description: Option<String>,
    /// `bearerFormat`.
    pub bearer_format: Option<String>,
}

/// A declared extension.
#[derive(Debug, Clone)]
pub struct Extension {
    /// The extension URI (the URI is the version).
    pub uri: String,
    /// `description`.
    pub description: Option<String>,
    /// Whether callers must activate it.
    pub required: bool,
    /// `params`, as JSON.
    pub params: Option<serde_json::Map<String, serde_json::Value>>,
}

/// An authenticated caller: the identity, its scopes and tenant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    /// Stable name, used for task ownership and logs (never the token).
    pub name: String,
    /// Granted scopes.
    pub scopes: BTreeSet<String>,
    /// The tenant the principal belongs to, if any.
    pub tenant: Option<String>,
    /// Opted in to preview capabilities.
    pub preview: bool,
}

/// Principals by token digest.
#[derive(Debug, Clone, Default)]
pub struct Principals {
    by_token_sha256: HashMap<[u8; 32], Principal>,
}

impl Principals {
    /// The principal holding `token`, if any. Looks up by SHA-256 so no token is compared byte by byte.
    pub fn authenticate(&self, token: &str) -> Option<&Principal> {
        self.by_token_sha256.get(&token_digest(token))
    }

    /// The principal called `name` (for `--print-card extended:<name>`).
    pub fn by_name(&self, name: &str) -> Option<&Principal> {
        self.by_token_sha256.values().find(|p| p.name == name)
    }

    /// Number of principals with a usable token.
    pub fn len(&self) -> usize {
        self.by_token_sha256.len()
    }

    /// Whether no principal has a usable token.
    pub fn is_empty(&self) -> bool {
        self.by_token_sha256.is_empty()
    }
}

fn token_digest(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

/// Lifecycle state of a capability.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum State {
    /// Only in extended cards, for principals that opted in to previews.
    Preview,
    /// Generally available.
    Ga,
    /// Routable and advertised, with the replacement named in the description.
    Deprecated,
    /// Not advertised; its router entry fails clearly, naming the replacement.
    Removed,
}

/// Which card a capability may appear in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Visibility {
    /// The public card, for anyone.
    Public,
    /// Extended cards of entitled principals.
    Extended,
    /// Never advertised (routable only by continuing work; kept for completeness).
    Internal,
}

/// Which tenants may use a capability.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Tenants {
    /// Any tenant (`"*"`).
    Any,
    /// Only these.
    Only(BTreeSet<String>),
}

/// Relative cost of a capability (informational, shown in the router's explanation).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CostClass {
    /// Cheap.
    Low,
    /// Moderate.
    Medium,
    /// Expensive.
    High,
}

/// Limits enforced by the handler.
#[derive(Debug, Clone, Default)]
pub struct Limits {
    /// Maximum total size of a message's parts, in bytes (text, data JSON, raw bytes, URL string).
    pub max_input_bytes: Option<u64>,
    /// Maximum number of parts in a message.
    pub max_parts: Option<u32>,
    /// Cost class.
    pub cost_class: Option<CostClass>,
}

/// The skill block: the only part of a manifest that appears in a card.
#[derive(Debug, Clone)]
pub struct Skill {
    /// `name`.
    pub name: String,
    /// `description` (a deprecation note is appended when projected).
    pub description: String,
    /// `tags` (at least one).
    pub tags: Vec<String>,
    /// `examples`.
    pub examples: Vec<String>,
    /// `inputModes`; `None` = the card's defaults.
    pub input_modes: Option<Vec<String>>,
    /// `outputModes`; `None` = the card's defaults.
    pub output_modes: Option<Vec<String>>,
}

/// One capability manifest: the skill as published, who may see it, its lifecycle and limits.
#[derive(Debug, Clone)]
pub struct Manifest {
    /// Stable id; callers and registries key on it.
    pub id: String,
    /// Lifecycle state.
    pub state: State,
    /// Which card it may appear in.
    pub visibility: Visibility,
    /// What is advertised.
    pub skill: Skill,
    /// Scopes a principal must hold.
    pub requires_scopes: BTreeSet<String>,
    /// Tenants allowed.
    pub tenants: Tenants,
    /// The built-in handler that serves it.
    pub handler: HandlerKind,
    /// Limits the handler enforces.
    pub limits: Limits,
    /// Owning team.
    pub owner: String,
    /// The id that replaces a deprecated or removed capability.
    pub replacement: Option<String>,
}

impl Manifest {
    /// Input media types accepted, falling back to the card defaults.
    pub fn input_modes<'a>(&'a self, base: &'a AgentBase) -> &'a [String] {
        self.skill
            .input_modes
            .as_deref()
            .unwrap_or(&base.default_input_modes)
    }

    /// Output media types produced, falling back to the card defaults.
    pub fn output_modes<'a>(&'a self, base: &'a AgentBase) -> &'a [String] {
        self.skill
            .output_modes
            .as_deref()
            .unwrap_or(&base.default_output_modes)
    }
}

/// Router settings.
#[derive(Debug, Clone)]
pub struct RouterSettings {
    /// Below this classifier confidence the task asks which skill was meant (default 0.6).
    pub confidence_threshold: f64,
    /// Key in request or message `metadata` holding a preferred skill id (default `skillId`).
    pub skill_hint_key: String,
}

/// Handler settings.
#[derive(Debug, Clone)]
pub struct HandlerSettings {
    /// Delay between the slow streaming handler's steps, in milliseconds (default 200).
    pub slow_step_ms: u64,
}

/// Deliberate misbehaviour, so gateway tests can meet a faulty agent.
#[derive(Debug, Clone, Default)]
pub struct Misbehave {
    /// Advertise `streaming: true` but answer streaming calls with UnsupportedOperationError.
    pub refuse_streaming: bool,
    /// Declare extensions `required` but serve calls that do not activate them.
    pub ignore_required_extensions: bool,
    /// Added to every A2A call (not the card GET), in milliseconds.
    pub latency_ms: u64,
    /// Drop the connection after this many SSE events of a stream.
    pub drop_stream_after_events: Option<u32>,
}

impl Registry {
    /// The manifest with this id.
    pub fn manifest(&self, id: &str) -> Option<&Manifest> {
        self.manifests.iter().find(|m| m.id == id)
    }

    /// Whether `capabilities.extendedAgentCard` is advertised.
    pub fn extended_card_flag(&self) -> bool {
        self.agent
            .capabilities
            .extended_agent_card
            .unwrap_or_else(|| self.has_extended_content())
    }

    /// Whether any live manifest could appear only in an extended card.
    pub fn has_extended_content(&self) -> bool {
        self.manifests.iter().any(|m| {
            m.state != State::Removed
                && (m.visibility == Visibility::Extended || m.state == State::Preview)
        })
    }
}

mod validate;

use validate::{
    RawExtension, RawHandlers, RawManifest, RawMisbehave, RawPrincipal, RawRegistry, RawRouter,
    Validator, element_list,
};

// === loading and validation ===

/// Reads and validates the registry at `path`, resolving tokens from the process environment.
/// Relative `token_file` paths are resolved against the registry's directory.
pub fn load(path: &Path) -> Result<Registry, RegistryError> {
    let text = read_capped_string(path, MAX_REGISTRY_BYTES, "registry").map_err(|source| {
        RegistryError::Read {
            path: path.to_path_buf(),
            source,
        }
    })?;
    let dir = path.parent().unwrap_or(Path::new("."));
    parse(&text, dir, &ProcessSecrets)
}

/// Parses and validates registry TOML; `dir` anchors relative token files.
pub fn parse(text: &str, dir: &Path, secrets: &dyn Secrets) -> Result<Registry, RegistryError> {
    let raw: RawRegistry = toml::from_str(text).map_err(|e| RegistryError::Syntax {
        at: "registry".into(),
        message: e.to_string(),
    })?;
    let mut v = Validator::default();

    let agent = v.agent(raw.agent);
    let extensions = element_list::<RawExtension>(&raw.extensions, "extensions", "uri")?
        .into_iter()
        .enumerate()
        .filter_map(|(i, e)| v.extension(i, e))
        .collect::<Vec<_>>();
    let principals = element_list::<RawPrincipal>(&raw.principals, "principals", "name")?;
    let principals = v.principals(principals, dir, secrets);
    let manifests = element_list::<RawManifest>(&raw.manifests, "manifests", "id")?;
    let manifests = v.manifests(manifests);

    let router = router_settings(&mut v, raw.router);
    let handlers = handler_settings(&mut v, raw.handlers);
    let misbehave = misbehave(&mut v, raw.misbehave, &agent);
    if agent.capabilities.extended_agent_card == Some(false)
        && manifests
            .iter()
            .any(|m| m.state != State::Removed && m.visibility == Visibility::Extended)
    {
        v.bad(
            "agent.capabilities.extended_agent_card",
            "is false, but extended manifests exist and would be unreachable",
        );
    }

    if !v.problems.is_empty() {
        return Err(RegistryError::Invalid(v.problems));
    }
    Ok(Registry {
        agent,
        extensions,
        principals,
        manifests,
        router,
        handlers,
        misbehave,
        warnings: v.warnings,
    })
}

/// `[router]`, defaults filled in (threshold 0.6, hint key `skillId`).
fn router_settings(v: &mut Validator, raw: Option<RawRouter>) -> RouterSettings {
    let router = raw.map_or(
        RouterSettings {
            confidence_threshold: 0.6,
            skill_hint_key: "skillId".into(),
        },
        |r| RouterSettings {
            confidence_threshold: r.confidence_threshold.unwrap_or(0.6),
            skill_hint_key: r.skill_hint_key.unwrap_or_else(|| "skillId".into()),
        },
    );
    if !(router.confidence_threshold > 0.0 && router.confidence_threshold <= 1.0) {
        v.bad(
            "router.confidence_threshold",
            "must be greater than 0 and at most 1",
        );
    }
    if router.skill_hint_key.trim().is_empty() {
        v.bad("router.skill_hint_key", "must not be empty");
    }
    router
}

/// `[handlers]`, defaults filled in (slow steps of 200 ms).
fn handler_settings(v: &mut Validator, raw: Option<RawHandlers>) -> HandlerSettings {
    let handlers = HandlerSettings {
        slow_step_ms: raw.and_then(|h| h.slow_step_ms).unwrap_or(200),
    };
    if handlers.slow_step_ms > 60_000 {
        v.bad("handlers.slow_step_ms", "must be at most 60000");
    }
    handlers
}

/// `[misbehave]`: the faults the agent injects on purpose, for tests.
fn misbehave(v: &mut Validator, raw: Option<RawMisbehave>, agent: &AgentBase) -> Misbehave {
    let misbehave = raw.map_or_else(Misbehave::default, |m| Misbehave {
        refuse_streaming: m.refuse_streaming,
        ignore_required_extensions: m.ignore_required_extensions,
        latency_ms: m.latency_ms,
        drop_stream_after_events: m.drop_stream_after_events,
    });
    if misbehave.refuse_streaming && !agent.capabilities.streaming {
        v.bad(
            "misbehave.refuse_streaming",
            "only meaningful with agent.capabilities.streaming = true (advertise, then refuse)",
        );
    }
    if misbehave.drop_stream_after_events == Some(0) {
        v.bad(
            "misbehave.drop_stream_after_events",
            "must be at least 1 (omit it to never drop)",
        );
    }
    if misbehave.latency_ms > 600_000 {
        v.bad("misbehave.latency_ms", "must be at most 600000");
    }
    misbehave
}

fn is_skill_id(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_lowercase() || c.is_ascii_digit())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "-_.".contains(c))
}

/// `type/subtype` with an optional `;param`, or a wildcard such as `image/*`.
pub(crate) fn is_media_type(s: &str) -> bool {
    let essence = s.split(';').next().unwrap_or("").trim();
    let mut it = essence.splitn(2, '/');
    let (Some(t), Some(st)) = (it.next(), it.next()) else {
        return false;
    };
    let token = |x: &str| {
        !x.is_empty()
            && x.chars()
                .all(|c| c.is_ascii_alphanumeric() || "!#$&-^_.+*".contains(c))
    };
    token(t) && token(st)
}

#[cfg(test)]
pub(crate) mod tests;
