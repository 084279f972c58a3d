//! The runtime state every request reads: an immutable [`Snapshot`] behind arc-swap, and the
//! stale-mark channel from the data plane to the control plane (no I/O).
//!
//! A request loads one `Arc<Snapshot>` in `early_request_filter` and uses it to the end, through
//! any retry, so no request ever mixes two profile versions. Changes (a new profile, a runtime
//! override after a refused stream, a blocked verdict) build a new `Snapshot` and swap it in whole
//! ([`Store::rcu`]); readers never see a half-built state.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use arc_swap::ArcSwap;
use serde::Serialize;
use tokio::sync::mpsc;

use crate::config::Integration;
use crate::profile::{Binding, Interface, Profile};
use crate::types::origin_of_url;

mod card_cache;
mod evidence;
pub mod grpc;
mod lock_state;
mod refresh_hook;
pub mod trust;
pub mod upstream;
pub use card_cache::{CardCache, CardContext};
pub use evidence::{
    Claim, Observer, ProbeRecord, ProbeRun, ProbeTrigger, ProbeVerdict, Source, claims,
};
pub use lock_state::{LockState, LockVerdict, manifest_of, satisfies};
pub use refresh_hook::{RefreshAnswer, RefreshHook, RefreshUnavailable};
pub use upstream::{NoUpstream, Roots, Upstream, UpstreamError};

/// Most evidence records kept per integration (oldest dropped first).
pub const MAX_EVIDENCE: usize = 32;

/// Whether an integration can take traffic, and why not. A usable integration carries its profile
/// and the upstream prepared for it together, so neither can be there without the other.
#[derive(Debug, Clone)]
pub enum Status {
    /// No verdict yet (first fetch not finished).
    Pending,
    /// A usable profile is loaded.
    Usable {
        /// The compiled profile, which met the integration's contract.
        profile: Arc<Profile>,
        /// The upstream prepared for the profile's interface.
        upstream: Arc<Upstream>,
    },
    /// No usable profile: fetch, validation or compilation failed, or the profile does not meet the
    /// integration's contract (origin, pins, skills, credential).
    Unusable {
        /// Human-readable reason (logged and shown on the admin API; never a metric label).
        reason: String,
        /// The compiled profile, when there is one, to explain the reason.
        profile: Option<Arc<Profile>>,
        /// The bounded code of the reason, when it has one (the reason then starts with it).
        code: Option<ReasonCode>,
    },
    /// Traffic stopped on purpose (e.g. a breaking change against the lockfile); calls on tasks
    /// the agent already holds still use the profile and upstream it had while usable.
    Blocked {
        /// Human-readable reason.
        reason: String,
        /// The profile that was usable.
        profile: Arc<Profile>,
        /// Its upstream.
        upstream: Arc<Upstream>,
    },
}

impl Status {
    /// Bounded label for metrics and logs.
    pub fn as_str(&self) -> &'static str {
        match self {
            Status::Pending => "pending",
            Status::Usable { .. } => "usable",
            Status::Unusable { .. } => "unusable",
            Status::Blocked { .. } => "blocked",
        }
    }

    /// Why the integration takes no (new) traffic, for unusable and blocked ones.
    pub fn reason(&self) -> Option<&str> {
        match self {
            Status::Unusable { reason, .. } | Status::Blocked { reason, .. } => Some(reason),
            Status::Pending | Status::Usable { .. } => None,
        }
    }

    /// The compiled profile, whatever the verdict (an unusable one may have one to explain why).
    pub fn profile(&self) -> Option<&Arc<Profile>> {
        match self {
            Status::Usable { profile, .. } | Status::Blocked { profile, .. } => Some(profile),
            Status::Unusable { profile, .. } => profile.as_ref(),
            Status::Pending => None,
        }
    }

    /// The bounded code of an unusable status's reason, when it has one.
    pub fn code(&self) -> Option<ReasonCode> {
        match self {
            Status::Unusable { code, .. } => *code,
            _ => None,
        }
    }

    /// Whether this is a verdict yet.
    pub fn is_pending(&self) -> bool {
        matches!(self, Status::Pending)
    }

    /// Whether the integration is usable.
    pub fn is_usable(&self) -> bool {
        matches!(self, Status::Usable { .. })
    }

    /// Whether `other` is the same verdict for the same reason (the profiles aside): what makes
    /// an install a change of status.
    pub fn same_verdict(&self, other: &Status) -> bool {
        self.as_str() == other.as_str() && self.reason() == other.reason()
    }
}

/// A bounded code for why an integration is unusable, where the cause is not the agent's card:
/// alerts, `check` and the lock verdict treat it apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum ReasonCode {
    /// The integration's credential cannot be read (variable unset or empty, file missing or
    /// unreadable): a deployment problem. The lock verdict stays as it was (nothing about the
    /// agent was learnt) and `a2a_egress_credential_missing{integration}` is 1.
    #[serde(rename = "CREDENTIAL_MISSING")]
    CredentialMissing,
}

impl ReasonCode {
    /// The code as shown (`CREDENTIAL_MISSING`).
    pub fn as_str(self) -> &'static str {
        match self {
            ReasonCode::CredentialMissing => "CREDENTIAL_MISSING",
        }
    }
}

/// Agent errors that mean the profile may be wrong for this deployment (a runtime error is evidence about the card).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StaleCause {
    /// -32004 on a call the profile allowed.
    UnsupportedOperation,
    /// -32005.
    ContentTypeNotSupported,
    /// -32008.
    ExtensionSupportRequired,
    /// -32009.
    VersionNotSupported,
    /// The agent's answer was not an A2A answer (the gateway's finding, answered to the caller as
    /// -32006): the interface in the card may no longer be the agent's. An agent's own -32006
    /// is not this: it says the agent got a bad answer elsewhere.
    InvalidAgentResponse,
}

impl StaleCause {
    /// All causes (for pre-registering metric series).
    pub const ALL: [StaleCause; 5] = [
        StaleCause::UnsupportedOperation,
        StaleCause::ContentTypeNotSupported,
        StaleCause::ExtensionSupportRequired,
        StaleCause::VersionNotSupported,
        StaleCause::InvalidAgentResponse,
    ];

    /// Bounded label, the A2A ErrorInfo reason.
    pub fn as_str(self) -> &'static str {
        match self {
            StaleCause::UnsupportedOperation => "UNSUPPORTED_OPERATION",
            StaleCause::ContentTypeNotSupported => "CONTENT_TYPE_NOT_SUPPORTED",
            StaleCause::ExtensionSupportRequired => "EXTENSION_SUPPORT_REQUIRED",
            StaleCause::VersionNotSupported => "VERSION_NOT_SUPPORTED",
            StaleCause::InvalidAgentResponse => "INVALID_AGENT_RESPONSE",
        }
    }

    /// The cause for an A2A error code, if the code means "the profile may be stale".
    /// -32004 is included; the caller decides whether the call was one the profile allowed.
    pub fn from_code(code: i64) -> Option<StaleCause> {
        match code {
            -32004 => Some(StaleCause::UnsupportedOperation),
            -32005 => Some(StaleCause::ContentTypeNotSupported),
            -32008 => Some(StaleCause::ExtensionSupportRequired),
            -32009 => Some(StaleCause::VersionNotSupported),
            _ => None,
        }
    }

    /// The cause for an A2A `ErrorInfo.reason` (HTTP+JSON errors carry no JSON-RPC code).
    /// The gateway's own finding ([`StaleCause::InvalidAgentResponse`]) is never read from an
    /// agent's error.
    pub fn from_reason(reason: &str) -> Option<StaleCause> {
        (Self::ALL.into_iter())
            .filter(|c| *c != StaleCause::InvalidAgentResponse)
            .find(|c| c.as_str() == reason)
    }
}

/// One "this profile may be stale" signal from the data plane.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StaleMark {
    /// Integration name.
    pub integration: String,
    /// Which agent error was seen.
    pub cause: StaleCause,
    /// When.
    pub at: SystemTime,
}

/// Sending half of the stale-mark channel (bounded; the data plane never waits on it).
pub type StaleSender = mpsc::Sender<StaleMark>;
/// Receiving half, consumed by the control plane.
pub type StaleReceiver = mpsc::Receiver<StaleMark>;

/// The stale-mark channel. Bounded so an error storm cannot grow memory: the data plane uses
/// `try_send` and counts what it drops (one queued mark per integration is enough to trigger a refresh).
pub fn stale_channel(capacity: usize) -> (StaleSender, StaleReceiver) {
    mpsc::channel(capacity)
}

/// What kind of runtime observation an evidence record is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EvidenceKind {
    /// The agent refused a streaming call with UnsupportedOperationError although the card claims streaming.
    StreamingRefused,
    /// After a refused stream, the same request as `SendMessage` succeeded (streaming forced off).
    StreamingDowngradeVerified,
    /// The agent answered with an error that marks the profile stale.
    StaleError(StaleCause),
    /// An answer's artifact data part did not match the integration's `artifact_schema`.
    ArtifactSchemaMismatch,
}

/// A timestamped runtime observation about an integration's agent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Evidence {
    /// When it was observed.
    #[serde(serialize_with = "crate::types::rfc3339::serialize")]
    pub at: SystemTime,
    /// What was observed.
    pub kind: EvidenceKind,
    /// Short gateway-written detail (never agent-supplied text).
    pub detail: String,
}

/// Runtime overrides of the compiled profile, valid until the next refresh replaces the state.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Overrides {
    /// Streaming is treated as off (the agent refused a stream the card claimed).
    pub streaming_off: bool,
}

/// Everything the data plane needs about one integration, immutable once built.
#[derive(Debug, Clone)]
pub struct IntegrationState {
    /// The validated `[[integrations]]` entry.
    pub integration: Arc<Integration>,
    /// Usable (with its profile and upstream), unusable, blocked or pending.
    pub status: Status,
    /// Runtime overrides.
    pub overrides: Overrides,
    /// Recent evidence, oldest first, at most [`MAX_EVIDENCE`].
    pub evidence: Vec<Evidence>,
    /// When this profile (not the overrides) was installed.
    pub installed_at: SystemTime,
    /// How current the profile is (maintained by the control plane's refresh).
    pub freshness: Freshness,
    /// The verdict against the integration's lockfile (`unpinned` without one).
    pub lock: LockState,
    /// The last probe run the gateway made by itself (kept across refreshes; [`claims`] reads
    /// only what it found since the current profile was installed).
    pub probes: Option<Arc<ProbeRun>>,
    /// The effective card rendered from this state, once (see [`Self::rendered_card`]).
    pub card: CardCache,
}

/// How current an integration's profile is: set by the control plane's refresh, shown on the admin API.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Freshness {
    /// Served from the last-known-good file on disk; no fetch has confirmed it since start.
    pub unrevalidated: bool,
    /// When a fetch (200 or 304) last confirmed the card.
    #[serde(serialize_with = "crate::types::rfc3339::option::serialize")]
    pub validated_at: Option<SystemTime>,
    /// The last refresh failed; the profile is the last good one.
    pub degraded: Option<Degraded>,
    /// The extended card's verdict for this integration's credential, when one was asked for.
    pub extended: Option<ExtendedCardStatus>,
}

/// A refresh failure kept beside the last good profile.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Degraded {
    /// Why the last refresh failed (gateway-written; never a metric label).
    pub reason: String,
    /// When the first of the consecutive failures happened.
    #[serde(serialize_with = "crate::types::rfc3339::serialize")]
    pub since: SystemTime,
    /// Consecutive failures.
    pub failures: u32,
}

/// What became of `GetExtendedAgentCard` for the integration's credential.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ExtendedCardStatus {
    /// `sha256:<hex>` of the credential (never the secret).
    pub identity: String,
    /// The extended card replaced the public one in the profile.
    pub used: bool,
    /// Why the public card is used instead.
    pub fallback: Option<ExtendedFallback>,
    /// When it was decided.
    #[serde(serialize_with = "crate::types::rfc3339::serialize")]
    pub at: SystemTime,
}

/// Why an integration's public card is used although the card offers an extended one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ExtendedFallback {
    /// The agent answered `UnsupportedOperationError`: it does not offer an extended card after all.
    UnsupportedOperation,
    /// The agent answered `ExtendedAgentCardNotConfiguredError`.
    NotConfigured,
    /// The call failed, or its answer did not validate (gateway-written detail).
    Error(String),
}

impl ExtendedFallback {
    /// Bounded label for logs and metrics.
    pub fn as_str(&self) -> &'static str {
        match self {
            ExtendedFallback::UnsupportedOperation => "unsupported_operation",
            ExtendedFallback::NotConfigured => "not_configured",
            ExtendedFallback::Error(_) => "error",
        }
    }
}

/// Why a compiled profile does not meet its integration's contract (the integration is then
/// unusable, with this as the reason).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ContractError {
    /// The profile itself is unusable (no supported interface, unknown required extensions).
    #[error("{0}")]
    ProfileUnusable(String),
    /// A usable profile without an interface (never produced by `compile`).
    #[error("profile has no interface")]
    NoInterface,
    /// The chosen interface is not on one of the approved origins.
    #[error("the card's interface origin {origin} is not in the integration's approved origins")]
    OriginNotApproved {
        /// The interface's origin, or `an unparsable URL`.
        origin: String,
    },
    /// `binding` is pinned and the profile chose another.
    #[error("binding pinned to {pinned} but the profile chose {chosen}")]
    BindingPinned {
        /// The configured binding.
        pinned: Binding,
        /// The profile's.
        chosen: Binding,
    },
    /// `version` is pinned and the profile chose another.
    #[error("protocol version pinned to {pinned} but the profile chose {chosen}")]
    VersionPinned {
        /// The configured version.
        pinned: String,
        /// The profile's.
        chosen: String,
    },
    /// The integration pins a `tenant` but the chosen interface speaks A2A 0.3, which has none.
    #[error(
        "the integration pins a tenant but its chosen interface speaks A2A 0.3, which has no tenant"
    )]
    TenantOn03,
    /// The card offers none of the integration's accepted skills.
    #[error("none of the accepted skills ({}) is offered by the card", skills.join(", "))]
    NoAcceptedSkill {
        /// The accepted skill ids.
        skills: Vec<String>,
    },
}

impl ContractError {
    /// Bounded label for logs and metrics.
    pub fn kind(&self) -> &'static str {
        match self {
            ContractError::ProfileUnusable(_) => "profile_unusable",
            ContractError::NoInterface => "no_interface",
            ContractError::OriginNotApproved { .. } => "origin_not_approved",
            ContractError::BindingPinned { .. } => "binding_pinned",
            ContractError::VersionPinned { .. } => "version_pinned",
            ContractError::TenantOn03 => "tenant_on_0_3",
            ContractError::NoAcceptedSkill { .. } => "no_accepted_skill",
        }
    }
}

impl IntegrationState {
    /// An integration with no verdict yet.
    pub fn pending(integration: Arc<Integration>) -> Self {
        IntegrationState {
            integration,
            status: Status::Pending,
            overrides: Overrides::default(),
            evidence: Vec::new(),
            installed_at: SystemTime::now(),
            freshness: Freshness::default(),
            lock: LockState::unpinned(SystemTime::now()),
            probes: None,
            card: CardCache::default(),
        }
    }

    /// An integration without a usable profile, for `reason` (fetch, validation or compile failure).
    /// The reason is kept bounded and without control characters: it may quote a card's or an
    /// agent's text, and it lives as long as the state and is served on `/readyz`.
    pub fn unusable(
        integration: Arc<Integration>,
        profile: Option<Arc<Profile>>,
        reason: impl Into<String>,
    ) -> Self {
        use crate::card::sanitize::{MAX_REPORT_LINE_CHARS, MAX_REPORT_LINES, bounded_report};
        IntegrationState {
            status: Status::Unusable {
                reason: bounded_report(&reason.into(), MAX_REPORT_LINE_CHARS, MAX_REPORT_LINES),
                profile,
                code: None,
            },
            ..Self::pending(integration)
        }
    }

    /// An integration whose credential cannot be read ([`ReasonCode::CredentialMissing`]): no
    /// profile (the extended card the credential would see is unknown), and the reason
    /// `CREDENTIAL_MISSING: <what is missing>`.
    pub fn credential_missing(
        integration: Arc<Integration>,
        error: &crate::config::SecretError,
    ) -> Self {
        let code = ReasonCode::CredentialMissing;
        let mut s = Self::unusable(integration, None, format!("{}: {error}", code.as_str()));
        if let Status::Unusable { code: c, .. } = &mut s.status {
            *c = Some(code);
        }
        s
    }

    /// A state of `integration` serving `profile`, its upstream prepared without I/O for the
    /// profile's interface URL ([`Upstream::for_tests`]); only in test builds.
    #[cfg(any(test, feature = "testkit"))]
    pub fn for_tests(integration: Integration, profile: Profile) -> Self {
        let url = profile
            .interface
            .as_ref()
            .map(|i| i.url.clone())
            .expect("a usable profile has an interface");
        Self::from_profile(
            Arc::new(integration),
            profile,
            Ok(Upstream::for_tests(&url)),
        )
    }

    /// Builds the state for a freshly compiled profile, checking it against the integration's
    /// contract (pure). `upstream` is the upstream prepared for the profile's interface, or why
    /// there is none.
    pub fn from_profile(
        integration: Arc<Integration>,
        profile: Profile,
        upstream: Result<Upstream, NoUpstream>,
    ) -> Self {
        let profile = Arc::new(profile);
        if let Err(e) = check_contract(&integration, &profile) {
            return Self::unusable(integration, Some(profile), e.to_string());
        }
        let upstream = match upstream {
            Ok(u) => Arc::new(u),
            Err(reason) => return Self::unusable(integration, Some(profile), reason.reason),
        };
        IntegrationState {
            integration,
            status: Status::Usable { profile, upstream },
            overrides: Overrides::default(),
            evidence: Vec::new(),
            installed_at: SystemTime::now(),
            freshness: Freshness::default(),
            lock: LockState::unpinned(SystemTime::now()),
            probes: None,
            card: CardCache::default(),
        }
    }

    /// The compiled profile, whatever the verdict (see [`Status::profile`]).
    pub fn profile(&self) -> Option<&Arc<Profile>> {
        self.status.profile()
    }

    /// The prepared upstream of a usable or blocked integration (see [`Self::serving`]).
    pub fn upstream(&self) -> Option<&Arc<Upstream>> {
        match &self.status {
            Status::Usable { upstream, .. } | Status::Blocked { upstream, .. } => Some(upstream),
            Status::Pending | Status::Unusable { .. } => None,
        }
    }

    /// The usable profile and upstream, or `None`.
    pub fn usable(&self) -> Option<(&Profile, &Upstream)> {
        match &self.status {
            Status::Usable { profile, upstream } => Some((profile, upstream)),
            _ => None,
        }
    }

    /// The profile and upstream that calls on existing tasks may use: the usable ones, or those of
    /// an integration blocked by a breaking change (its running tasks may still be read,
    /// cancelled and subscribed to).
    pub fn serving(&self) -> Option<(&Profile, &Upstream)> {
        match &self.status {
            Status::Usable { profile, upstream }
            | Status::Blocked {
                profile, upstream, ..
            } => Some((profile, upstream)),
            _ => None,
        }
    }

    /// Whether streaming may be used upstream: the profile claims it, no runtime override turned it
    /// off, and the integration does not forbid it.
    pub fn streaming_allowed(&self) -> bool {
        self.profile().is_some_and(|p| p.streaming)
            && !self.overrides.streaming_off
            && self.integration.streaming != crate::config::StreamingMode::Off
    }

    /// Extensions activated on every call: the card's required ones plus the integration's optional
    /// ones that the profile knows, sorted and deduplicated.
    pub fn activated_extensions(&self) -> Vec<String> {
        let Some(p) = self.profile() else {
            return Vec::new();
        };
        let mut v: Vec<String> = p
            .extensions
            .iter()
            .filter(|e| {
                p.required_extensions.contains(e) || self.integration.extensions.contains(e)
            })
            .cloned()
            .collect();
        v.sort();
        v.dedup();
        v
    }

    /// The effective card of this state under `context`, rendered by `render` on first use and
    /// kept: every later call is a pointer copy (see [`CardCache`]). `render` must depend only on
    /// this state's integration, usable profile and streaming override, and on `context`.
    pub fn rendered_card(
        &self,
        context: CardContext<'_>,
        render: impl Fn() -> Option<crate::types::etag::Tagged>,
    ) -> Option<crate::types::etag::Tagged> {
        self.card.get_or_render(self, context, render)
    }

    /// Whether evidence of `kind` was recorded less than `gap` before `now` (writers of
    /// frequent observations record one per gap).
    pub fn observed_within(&self, kind: EvidenceKind, now: SystemTime, gap: Duration) -> bool {
        self.evidence
            .iter()
            .rev()
            .find(|e| e.kind == kind)
            .is_some_and(|e| now.duration_since(e.at).map_or(true, |d| d < gap))
    }

    /// A copy with one more evidence record (bounded).
    pub fn with_evidence(&self, e: Evidence) -> Self {
        let mut s = self.clone();
        s.evidence.push(e);
        if s.evidence.len() > MAX_EVIDENCE {
            let extra = s.evidence.len() - MAX_EVIDENCE;
            s.evidence.drain(..extra);
        }
        s
    }
}

/// The integration's binding and version pins against the chosen interface, and its tenant
/// (A2A 0.3 has no tenant, so a pinned tenant cannot be sent to a 0.3 interface).
fn check_pins(integration: &Integration, iface: &Interface) -> Result<(), ContractError> {
    if let Some(b) = integration.binding
        && b != iface.binding
    {
        return Err(ContractError::BindingPinned {
            pinned: b,
            chosen: iface.binding,
        });
    }
    if let Some(v) = &integration.version
        && v != &iface.version
    {
        return Err(ContractError::VersionPinned {
            pinned: v.clone(),
            chosen: iface.version.clone(),
        });
    }
    if integration.tenant.is_some() && iface.version == "0.3" {
        return Err(ContractError::TenantOn03);
    }
    Ok(())
}

/// Checks a compiled profile against the integration contract.
pub fn check_contract(integration: &Integration, profile: &Profile) -> Result<(), ContractError> {
    // The pins are checked first: a pin that refuses the chosen interface says more than that
    // interface's own unusability (e.g. a `version = "1.0"` pin on a 0.3 agent).
    if let Some(iface) = &profile.interface {
        check_pins(integration, iface)?;
    }
    if !profile.is_usable() {
        return Err(ContractError::ProfileUnusable(
            profile
                .reason()
                .unwrap_or_else(|| "profile not usable".into()),
        ));
    }
    let Some(iface) = &profile.interface else {
        return Err(ContractError::NoInterface);
    };
    // The URL calls go to: a gRPC `host:port` is an https origin.
    let url = iface.call_url();
    if !integration.origin_allowed(&url) {
        return Err(ContractError::OriginNotApproved {
            origin: origin_of_url(&url).unwrap_or_else(|| "an unparsable URL".into()),
        });
    }
    if !integration
        .skills
        .iter()
        .any(|s| profile.skills.contains_key(s))
    {
        return Err(ContractError::NoAcceptedSkill {
            skills: integration.skills.clone(),
        });
    }
    Ok(())
}

/// The whole runtime state: one immutable value per version.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    /// Increases by one on every swap.
    pub version: u64,
    /// Integration name → state.
    pub integrations: BTreeMap<String, Arc<IntegrationState>>,
}

impl Snapshot {
    /// Every integration of `integrations` pending (calls are refused with `NO_USABLE_PROFILE`
    /// and `/readyz` is false until each one's worker installs a profile or a verdict); version 0.
    pub fn pending(integrations: &[Integration]) -> Snapshot {
        Snapshot {
            version: 0,
            integrations: integrations
                .iter()
                .map(|i| {
                    let state = IntegrationState::pending(Arc::new(i.clone()));
                    (i.name.clone(), Arc::new(state))
                })
                .collect(),
        }
    }

    /// The state of integration `name`.
    pub fn get(&self, name: &str) -> Option<&Arc<IntegrationState>> {
        self.integrations.get(name)
    }

    /// A copy with `name` replaced (or added), version bumped.
    pub fn with(&self, state: IntegrationState) -> Snapshot {
        let mut s = self.clone();
        s.version = self.version + 1;
        s.integrations
            .insert(state.integration.name.clone(), Arc::new(state));
        s
    }

    /// Whether every integration has a verdict (usable, unusable or blocked): the `/readyz` rule.
    pub fn ready(&self) -> bool {
        self.integrations.values().all(|s| !s.status.is_pending())
    }
}

/// The arc-swap store holding the current [`Snapshot`].
#[derive(Debug)]
pub struct Store {
    inner: ArcSwap<Snapshot>,
}

impl Store {
    /// A store starting at `snapshot`.
    pub fn new(snapshot: Snapshot) -> Self {
        Store {
            inner: ArcSwap::from_pointee(snapshot),
        }
    }

    /// The current snapshot; hold the `Arc` for the whole request.
    pub fn load(&self) -> Arc<Snapshot> {
        self.inner.load_full()
    }

    /// Read-copy-update: `f` builds the next snapshot from the current one; it may run more than
    /// once under contention, so it must be pure. The version is bumped for you.
    pub fn rcu(&self, mut f: impl FnMut(&Snapshot) -> Snapshot) -> Arc<Snapshot> {
        let prev = self.inner.rcu(|cur| {
            let mut next = f(cur);
            next.version = cur.version + 1;
            next
        });
        drop(prev);
        self.load()
    }

    /// Updates one integration's state with `f` if it exists (e.g. a runtime override), atomically.
    pub fn update_integration(
        &self,
        name: &str,
        mut f: impl FnMut(&IntegrationState) -> IntegrationState,
    ) {
        self.rcu(|cur| match cur.get(name) {
            Some(s) => cur.with(f(s)),
            None => cur.clone(),
        });
    }
}

impl Default for Store {
    fn default() -> Self {
        Store::new(Snapshot::default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::StreamingMode;
    use crate::profile::Binding;

    fn integration() -> Integration {
        Integration::builder("echo")
            .skills(&["echo"])
            .extensions(&["urn:opt"])
            .build()
    }

    pub(crate) fn profile(url: &str) -> Profile {
        Profile::builder()
            .url(url)
            .streaming(true)
            .extensions(&["urn:opt", "urn:other", "urn:req"])
            .skill("echo")
            .build()
    }

    fn upstream() -> Upstream {
        Upstream::for_tests("https://a.example/a2a")
    }

    #[test]
    fn contract_checks_origin_pins_and_skills() {
        let i = integration();
        assert!(check_contract(&i, &profile("https://a.example/a2a")).is_ok());
        let e = check_contract(&i, &profile("https://evil.example/a2a")).unwrap_err();
        assert_eq!(e.kind(), "origin_not_approved");
        assert!(e.to_string().contains("https://evil.example"), "{e}");
        let mut pinned = integration();
        pinned.binding = Some(Binding::HttpJson);
        assert!(matches!(
            check_contract(&pinned, &profile("https://a.example/a2a")),
            Err(ContractError::BindingPinned { .. })
        ));
        let mut v = integration();
        v.version = Some("1.1".into());
        assert!(matches!(
            check_contract(&v, &profile("https://a.example/a2a")),
            Err(ContractError::VersionPinned { .. })
        ));
        // A chosen 0.3 interface whose profile is unusable (built so here): a pinned tenant
        // cannot be sent; a 1.0 pin says why, before the profile's own reason.
        let v03 = Profile::builder()
            .url("https://a.example/a2a")
            .binding(Binding::Grpc)
            .version("0.3")
            .unusable(crate::profile::Unusable::TranslationNotBuilt {
                binding: "GRPC".into(),
                version: "0.3".into(),
            })
            .skill("echo")
            .build();
        let mut t = integration();
        t.tenant = Some("acme".into());
        assert_eq!(
            check_contract(&t, &v03).unwrap_err().kind(),
            "tenant_on_0_3"
        );
        let mut v = integration();
        v.version = Some("1.0".into());
        let e = check_contract(&v, &v03).unwrap_err();
        assert_eq!(
            e.to_string(),
            "protocol version pinned to 1.0 but the profile chose 0.3"
        );
        let e = check_contract(&integration(), &v03).unwrap_err();
        assert!(
            e.to_string()
                .contains("the gateway calls A2A 1.0 and 0.3 only"),
            "{e}"
        );
        let mut s = integration();
        s.skills = vec!["other".into()];
        assert!(
            check_contract(&s, &profile("https://a.example/a2a"))
                .unwrap_err()
                .to_string()
                .contains("other")
        );
    }

    #[test]
    fn activated_extensions_are_required_plus_configured_optional() {
        let mut p = profile("https://a.example/a2a");
        p.required_extensions = vec!["urn:req".into()];
        let s = IntegrationState::from_profile(Arc::new(integration()), p, Ok(upstream()));
        assert!(s.status.is_usable());
        assert_eq!(s.activated_extensions(), vec!["urn:opt", "urn:req"]);
    }

    #[test]
    fn unusable_when_upstream_cannot_be_prepared() {
        let s = IntegrationState::from_profile(
            Arc::new(integration()),
            profile("https://a.example/a2a"),
            Err(NoUpstream {
                kind: "credential_env_unset",
                reason: "credential env ECHO_TOKEN is not set".into(),
            }),
        );
        assert!(
            matches!(&s.status, Status::Unusable { reason, profile: Some(_), .. } if reason.contains("ECHO_TOKEN"))
        );
        assert!(s.usable().is_none());
    }

    #[test]
    fn an_unusable_reason_is_kept_bounded_and_without_control_characters() {
        let huge = format!("{}\u{0}\u{1b}[2J\n", "e".repeat(10_000)).repeat(100);
        let s = IntegrationState::unusable(Arc::new(integration()), None, huge);
        let reason = s.status.reason().unwrap();
        assert!(reason.len() < 4096, "{} bytes", reason.len());
        assert!(!reason.chars().any(|c| c.is_control() && c != '\n'));
        assert!(reason.ends_with("more line(s) not shown)"), "{reason:.300}");
    }

    #[test]
    fn streaming_override_and_mode() {
        let s = IntegrationState::from_profile(
            Arc::new(integration()),
            profile("https://a.example/a2a"),
            Ok(upstream()),
        );
        assert!(s.streaming_allowed());
        let mut off = s.clone();
        off.overrides.streaming_off = true;
        assert!(!off.streaming_allowed());
        let mut cfg_off = integration();
        cfg_off.streaming = StreamingMode::Off;
        let s = IntegrationState::from_profile(
            Arc::new(cfg_off),
            profile("https://a.example/a2a"),
            Ok(upstream()),
        );
        assert!(!s.streaming_allowed());
    }

    #[test]
    fn store_swaps_whole_snapshots_and_bumps_versions() {
        let store = Store::default();
        let first = store.load();
        store.rcu(|s| s.with(IntegrationState::pending(Arc::new(integration()))));
        let second = store.load();
        assert_eq!(first.version + 1, second.version);
        assert!(first.get("echo").is_none(), "an old snapshot never changes");
        assert!(!second.ready());
        store.update_integration("echo", |s| {
            IntegrationState::unusable(s.integration.clone(), None, "x")
        });
        assert!(store.load().ready());
        assert_eq!(store.load().version, second.version + 1);
    }

    #[test]
    fn a_pending_snapshot_holds_every_integration_without_a_verdict() {
        let mut other = integration();
        other.name = "other".into();
        let s = Snapshot::pending(&[integration(), other]);
        assert_eq!(s.version, 0);
        assert_eq!(s.integrations.len(), 2);
        assert!(s.integrations.values().all(|i| i.status.is_pending()));
        assert!(!s.ready());
        assert!(Snapshot::pending(&[]).ready());
    }

    #[test]
    fn evidence_is_bounded() {
        let mut s = IntegrationState::pending(Arc::new(integration()));
        for i in 0..(MAX_EVIDENCE + 5) {
            s = s.with_evidence(Evidence {
                at: SystemTime::now(),
                kind: EvidenceKind::StreamingRefused,
                detail: i.to_string(),
            });
        }
        assert_eq!(s.evidence.len(), MAX_EVIDENCE);
        assert_eq!(s.evidence[0].detail, "5");
    }

    #[test]
    fn stale_causes_map_codes_and_reasons() {
        assert_eq!(
            StaleCause::from_code(-32009),
            Some(StaleCause::VersionNotSupported)
        );
        assert_eq!(StaleCause::from_code(-32001), None);
        assert_eq!(StaleCause::from_code(-32006), None);
        assert_eq!(StaleCause::from_reason("INVALID_AGENT_RESPONSE"), None);
        assert_eq!(
            StaleCause::from_reason("EXTENSION_SUPPORT_REQUIRED"),
            Some(StaleCause::ExtensionSupportRequired)
        );
    }
}
