//! [`Integration::builder`]: validated `[[integrations]]` entries with defaults, for tests (no I/O).

use std::path::PathBuf;

use crate::config::{
    ArtifactSchema, Credential, Integration, IntegrationGuard, LockPolicy, StreamingMode,
};
use crate::profile::Binding;

use super::profile::strings;

impl Integration {
    /// Integration `name` with its card at `https://a.example/.well-known/agent-card.json`, origin
    /// `https://a.example`, no pins, skills, scopes or extensions, data class `internal`, streaming
    /// `preferred`, no credential, a 1024-byte body cap, no CA file, forwarded headers, lockfile
    /// policy or artifact schema.
    pub fn builder(name: impl Into<String>) -> IntegrationBuilder {
        IntegrationBuilder(Integration {
            name: name.into(),
            card: "https://a.example/.well-known/agent-card.json".into(),
            origins: strings(&["https://a.example"]),
            binding: None,
            version: None,
            skills: Vec::new(),
            scopes: Vec::new(),
            data_classes: strings(&["internal"]),
            streaming: StreamingMode::Preferred,
            extensions: Vec::new(),
            tenant: None,
            offer: Vec::new(),
            credential: Credential::None,
            max_body_bytes: 1024,
            ca_file: None,
            forward_headers: Vec::new(),
            lock: LockPolicy::default(),
            artifacts: None,
            guard: None,
        })
    }
}

/// Builds an [`Integration`]; see [`Integration::builder`] for the defaults.
#[derive(Debug, Clone)]
pub struct IntegrationBuilder(Integration);

impl IntegrationBuilder {
    /// The integration.
    pub fn build(self) -> Integration {
        self.0
    }

    /// The card URL and the one approved origin, `origin` + `/.well-known/agent-card.json`.
    pub fn origin(mut self, origin: &str) -> Self {
        self.0.card = format!("{origin}/.well-known/agent-card.json");
        self.0.origins = vec![origin.to_owned()];
        self
    }

    /// The bindings the effective card offers (`offer`).
    pub fn offer(mut self, bindings: &[Binding]) -> Self {
        self.0.offer = bindings.to_vec();
        self
    }

    /// The card URL (origins unchanged).
    pub fn card(mut self, url: impl Into<String>) -> Self {
        self.0.card = url.into();
        self
    }

    /// The approved origins (card URL unchanged).
    pub fn origins(mut self, origins: &[&str]) -> Self {
        self.0.origins = strings(origins);
        self
    }

    /// The pinned binding.
    pub fn binding(mut self, binding: Option<Binding>) -> Self {
        self.0.binding = binding;
        self
    }

    /// The pinned protocol version.
    pub fn version(mut self, version: Option<&str>) -> Self {
        self.0.version = version.map(str::to_owned);
        self
    }

    /// The accepted skill ids.
    pub fn skills(mut self, ids: &[&str]) -> Self {
        self.0.skills = strings(ids);
        self
    }

    /// The held scopes.
    pub fn scopes(mut self, scopes: &[&str]) -> Self {
        self.0.scopes = strings(scopes);
        self
    }

    /// The allowed data classes.
    pub fn data_classes(mut self, classes: &[&str]) -> Self {
        self.0.data_classes = strings(classes);
        self
    }

    /// The streaming requirement.
    pub fn streaming(mut self, mode: StreamingMode) -> Self {
        self.0.streaming = mode;
        self
    }

    /// The optional extensions to activate.
    pub fn extensions<S: AsRef<str>>(mut self, uris: &[S]) -> Self {
        self.0.extensions = uris.iter().map(|u| u.as_ref().to_owned()).collect();
        self
    }

    /// The tenant override.
    pub fn tenant(mut self, tenant: Option<&str>) -> Self {
        self.0.tenant = tenant.map(str::to_owned);
        self
    }

    /// The credential policy.
    pub fn credential(mut self, credential: Credential) -> Self {
        self.0.credential = credential;
        self
    }

    /// The body cap in bytes.
    pub fn max_body_bytes(mut self, cap: usize) -> Self {
        self.0.max_body_bytes = cap;
        self
    }

    /// Extra roots for the upstream.
    pub fn ca_file(mut self, path: Option<PathBuf>) -> Self {
        self.0.ca_file = path;
        self
    }

    /// Extra caller headers forwarded upstream (lowercase names).
    pub fn forward_headers(mut self, names: &[&'static str]) -> Self {
        self.0.forward_headers = names
            .iter()
            .map(|n| http::HeaderName::from_static(n))
            .collect();
        self
    }

    /// Lockfile inputs and the reaction to a breaking change.
    pub fn lock(mut self, lock: LockPolicy) -> Self {
        self.0.lock = lock;
        self
    }

    /// The compiled artifact schema.
    pub fn artifacts(mut self, artifacts: Option<ArtifactSchema>) -> Self {
        self.0.artifacts = artifacts;
        self
    }

    /// The content guard's policy.
    pub fn guard(mut self, guard: Option<IntegrationGuard>) -> Self {
        self.0.guard = guard;
        self
    }
}
