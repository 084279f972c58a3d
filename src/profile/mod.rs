//! The compiled profile of one remote agent: the only view of a card the rest of the gateway reads (no I/O).
//!
//! A [`Profile`] is produced by [`compile()`] from a [`crate::card::ValidatedCard`] and never
//! mutated afterwards; runtime
//! evidence and overrides live beside it (see `control/`), and a new card means a new profile.
//! Field names of the JSON form (`usable`, `reason`, `agent_version`, `interface`,
//! `streaming`, `push`, `extended_card`, `extensions`, `skills`, `interfaces`) are stable: lockfiles and tools
//! rely on them.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// A protocol binding an agent's interface speaks, as far as the gateway knows it.
///
/// `Grpc` may be chosen when `[client] bindings` allows it; 1.0 gRPC is called through the
/// gateway's JSON-RPC face (see [`Interface::callable`]); custom bindings are never selected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Binding {
    /// JSON-RPC 2.0 over HTTP POST to the interface URL.
    #[serde(rename = "JSONRPC")]
    JsonRpc,
    /// The HTTP+JSON ("REST") binding: paths appended to the interface URL.
    #[serde(rename = "HTTP+JSON")]
    HttpJson,
    /// The gRPC binding (`lf.a2a.v1.A2AService`; `a2a.v1` for 0.3 agents).
    #[serde(rename = "GRPC")]
    Grpc,
}

impl Binding {
    /// The wire name used in `protocolBinding`.
    pub fn as_str(self) -> &'static str {
        match self {
            Binding::JsonRpc => "JSONRPC",
            Binding::HttpJson => "HTTP+JSON",
            Binding::Grpc => "GRPC",
        }
    }

    /// Parses a wire name; `None` for bindings this client does not know (custom ones).
    pub fn from_wire(s: &str) -> Option<Self> {
        match s {
            "JSONRPC" => Some(Binding::JsonRpc),
            "HTTP+JSON" => Some(Binding::HttpJson),
            "GRPC" => Some(Binding::Grpc),
            _ => None,
        }
    }
}

impl std::fmt::Display for Binding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The one interface chosen from `supportedInterfaces` (the first, in card order, that the client supports).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Interface {
    /// Absolute URL of the interface, as declared (validated: `https`, or `http` when allowed).
    pub url: String,
    /// The binding spoken on that URL.
    pub binding: Binding,
    /// `Major.Minor` protocol version, sent as `A2A-Version` on every call.
    pub version: String,
    /// Opaque tenant to copy into every request, when the interface declares one.
    pub tenant: Option<String>,
}

/// One interface of the card, in the card's preference order, and what the compiler made of it:
/// the profile's record of what the agent speaks where, and why an interface was not chosen.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InterfaceChoice {
    /// The interface's binding as the card writes it (`JSONRPC`, `HTTP+JSON`, `GRPC`, or custom).
    pub binding: String,
    /// Its `Major.Minor` protocol version (a 0.3 card's `protocolVersion` `0.3.x` is `0.3`).
    pub version: String,
    /// Its URL as declared.
    pub url: String,
    /// Whether this is [`Profile::interface`].
    pub chosen: bool,
    /// Why it was not chosen (`None` for the chosen one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_chosen: Option<String>,
}

/// A (binding, protocol version) pair: what an interface speaks, without where it is.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct BindingVersion {
    /// The binding.
    pub binding: Binding,
    /// `Major.Minor` protocol version.
    pub version: String,
}

impl std::fmt::Display for BindingVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.binding, self.version)
    }
}

impl Interface {
    /// What this interface speaks.
    pub fn binding_version(&self) -> BindingVersion {
        BindingVersion {
            binding: self.binding,
            version: self.version.clone(),
        }
    }

    /// Whether the gateway can send calls to this interface: 1.0 over JSON-RPC or HTTP+JSON as
    /// they come, 0.3 over either translated, gRPC at 1.0 (`lf.a2a.v1`) and 0.3 (`a2a.v1`)
    /// translated from the caller's binding; any other version is not. The one place of the
    /// rule: the compiler makes a chosen interface that is not callable unusable, and the data
    /// plane's translator reads its dialect only from callable ones.
    pub fn callable(&self) -> bool {
        matches!(self.version.as_str(), "1.0" | "0.3")
    }

    /// The URL calls go to. A gRPC interface is often written `host:port`, without a scheme (as
    /// the SDK samples do): that form means TLS (`https://host:port`), as a gRPC channel's
    /// default is; `http://` says plaintext. Every other URL is used as written.
    pub fn call_url(&self) -> std::borrow::Cow<'_, str> {
        if self.binding == Binding::Grpc && !self.url.contains("://") {
            return std::borrow::Cow::Owned(format!("https://{}", self.url));
        }
        std::borrow::Cow::Borrowed(&self.url)
    }
}

/// One alternative of a security requirement: scheme name → required scopes (all schemes together, AND).
pub type SecurityAlternative = BTreeMap<String, Vec<String>>;

/// What one skill accepts and produces, after the inheritance rules were applied.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkillProfile {
    /// Accepted input media types: the skill's `inputModes` if present, else the card default (replace, never merge).
    pub input: Vec<String>,
    /// Produced output media types: the skill's `outputModes` if present, else the card default.
    pub output: Vec<String>,
    /// Security requirements (OR of alternatives): the skill's own, else the card's.
    pub security: Vec<SecurityAlternative>,
    /// Routing tags (provider-written; sanitised and length-limited, never used in a hard decision).
    pub tags: Vec<String>,
}

/// Why a compiled card cannot be used by this client.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Unusable {
    /// No entry of `supportedInterfaces` has a (binding, version) the client implements.
    NoSupportedInterface {
        /// The (binding, version) pairs the card offered, in card order.
        offered: Vec<(String, String)>,
    },
    /// The chosen interface is at a protocol version the gateway records but cannot call (one
    /// other than 1.0 and 0.3, admitted by a `[client] versions` entry), so no call may leave
    /// for it.
    TranslationNotBuilt {
        /// The chosen interface's binding (wire name).
        binding: String,
        /// The chosen interface's `Major.Minor` version.
        version: String,
    },
    /// The card marks extensions `required` that the client does not know.
    RequiredExtensions {
        /// The unknown required extension URIs, sorted.
        uris: Vec<String>,
    },
}

impl std::fmt::Display for Unusable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unusable::NoSupportedInterface { offered } => {
                write!(f, "no mutually supported interface (card offers")?;
                if offered.is_empty() {
                    write!(f, " none")?;
                }
                for (i, (b, v)) in offered.iter().enumerate() {
                    write!(f, "{}{b} {v}", if i == 0 { " " } else { ", " })?;
                }
                write!(f, ")")
            }
            Unusable::TranslationNotBuilt { binding, version } => write!(
                f,
                "the chosen interface is {binding} {version}: the gateway calls A2A 1.0 and 0.3 \
                 only (JSON-RPC, HTTP+JSON and gRPC at each)"
            ),
            Unusable::RequiredExtensions { uris } => {
                write!(f, "required extensions not supported: {}", uris.join(", "))
            }
        }
    }
}

/// Whether a compiled card can be used by this client: usable, or unusable for one reason.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(into = "VerdictWire", try_from = "VerdictWire")]
pub enum Verdict {
    /// The client can talk to the agent.
    Usable,
    /// The client cannot, and this is why.
    Unusable(Unusable),
}

/// The serialised form of [`Verdict`]: `reason` is the human sentence of `unusable`, written for
/// readers of lockfiles and status output and ignored when read back.
#[derive(Serialize, Deserialize)]
struct VerdictWire {
    usable: bool,
    unusable: Option<Unusable>,
    #[serde(default)]
    reason: Option<String>,
}

/// A serialised verdict whose `usable` flag and `unusable` reason disagree.
#[derive(Debug, thiserror::Error)]
#[error("`usable` is {usable} but `unusable` is {}", if *.has_reason { "set" } else { "absent" })]
pub struct ContradictoryVerdict {
    usable: bool,
    has_reason: bool,
}

impl From<Verdict> for VerdictWire {
    fn from(v: Verdict) -> Self {
        match v {
            Verdict::Usable => VerdictWire {
                usable: true,
                unusable: None,
                reason: None,
            },
            Verdict::Unusable(u) => VerdictWire {
                usable: false,
                reason: Some(u.to_string()),
                unusable: Some(u),
            },
        }
    }
}

impl TryFrom<VerdictWire> for Verdict {
    type Error = ContradictoryVerdict;

    fn try_from(w: VerdictWire) -> Result<Self, Self::Error> {
        match (w.usable, w.unusable) {
            (true, None) => Ok(Verdict::Usable),
            (false, Some(u)) => Ok(Verdict::Unusable(u)),
            (usable, u) => Err(ContradictoryVerdict {
                usable,
                has_reason: u.is_some(),
            }),
        }
    }
}

/// Provider-written strings, kept apart from every compile decision: sanitised (control characters
/// removed, whitespace folded) and cut to a fixed length, for quoting to a planning model as data.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Display {
    /// The card's `name`.
    pub name: String,
    /// The card's `description`.
    pub description: String,
    /// Per skill id: its name, description and examples.
    pub skills: BTreeMap<String, SkillDisplay>,
    /// The card's validation warnings (`path: message`; e.g. a 0.3 card without
    /// `protocolVersion`, read as "0.3.0"), at most [`MAX_WARNINGS`] then one saying how many
    /// more: they name card fields and can quote card values, so they are display text, read by
    /// operators (`/readyz`, the planner view, the refresh log), never by a decision.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// Most card warnings a profile keeps.
pub const MAX_WARNINGS: usize = 32;

/// The untrusted, sanitised strings of one skill.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkillDisplay {
    /// The skill's `name`.
    pub name: String,
    /// The skill's `description`.
    pub description: String,
    /// The skill's `examples`.
    pub examples: Vec<String>,
}

/// A compiled Agent Card: the explicit answers to "can we talk to it" and "what will it accept".
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Profile {
    /// Whether the client can use this agent at all, and why not. Serialised as the stable
    /// `usable`, `unusable` and `reason` fields.
    #[serde(flatten)]
    pub verdict: Verdict,
    /// The card's `version` (the agent's version, not the protocol's).
    pub agent_version: String,
    /// `sha256:<hex>` of the RFC 8785 canonical form of the card (with `signatures` removed).
    pub card_digest: String,
    /// The `kid` of the card's own signature when one verified with a key trusted for the card's
    /// origin and covers every value that changes the card's meaning; `None` for an unsigned card,
    /// one whose signatures did not verify, or one whose signature leaves such empty values
    /// uncovered. The gateway signs its effective card under `sign = "verified-only"` only when
    /// this is set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verified_by: Option<String>,
    /// The card carried signatures and none verified: the gateway then signs its effective card
    /// under no `sign` mode (its signature would vouch for a card whose own author's did not).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub signature_failed: bool,
    /// The chosen interface; `None` exactly when no interface is supported.
    pub interface: Option<Interface>,
    /// Every (binding, version) of `supportedInterfaces` the client implements, in card order,
    /// without repeats; the first is `interface`'s. A lockfile's pinned pair is checked against
    /// it: still offered but no longer first is a different decision from no longer offered.
    #[serde(default)]
    pub offered: Vec<BindingVersion>,
    /// Every interface of the card in its preference order (for a 0.3 card: `url` +
    /// `preferredTransport` first, then `additionalInterfaces`), each with its binding and
    /// version, which one was chosen and why the others were not.
    #[serde(default)]
    pub interfaces: Vec<InterfaceChoice>,
    /// `capabilities.streaming` (absent means false).
    pub streaming: bool,
    /// `capabilities.pushNotifications` (absent means false).
    pub push: bool,
    /// `capabilities.extendedAgentCard` (absent means false).
    pub extended_card: bool,
    /// Extensions both sides know (declared by the card and listed in the client config), sorted.
    pub extensions: Vec<String>,
    /// The ones of `extensions` the card marks `required`, sorted: activated on every call.
    #[serde(default)]
    pub required_extensions: Vec<String>,
    /// Skill id → effective modes, security and tags.
    pub skills: BTreeMap<String, SkillProfile>,
    /// Untrusted strings, sanitised; never read by a decision.
    pub display: Display,
}

impl Profile {
    /// Whether the client can use this agent at all.
    pub fn is_usable(&self) -> bool {
        matches!(self.verdict, Verdict::Usable)
    }

    /// Why the client cannot use this agent; `None` when it can.
    pub fn unusable(&self) -> Option<&Unusable> {
        match &self.verdict {
            Verdict::Usable => None,
            Verdict::Unusable(u) => Some(u),
        }
    }

    /// The human sentence of [`Profile::unusable`].
    pub fn reason(&self) -> Option<String> {
        self.unusable().map(ToString::to_string)
    }
}

mod compile;

pub use compile::{ClientCaps, compile};
