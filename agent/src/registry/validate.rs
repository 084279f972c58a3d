//! The registry's TOML wire model (`deny_unknown_fields`) and its conversion into the validated
//! model, collecting every problem with the field it concerns (no I/O besides the [`Secrets`] source).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde::Deserialize;

use a2a_egress::profile::Binding;

use super::HandlerKind;
use super::*;

// === wire model (TOML) ===

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawRegistry {
    pub(super) agent: RawAgent,
    #[serde(default)]
    pub(super) router: Option<RawRouter>,
    #[serde(default)]
    pub(super) handlers: Option<RawHandlers>,
    #[serde(default)]
    pub(super) misbehave: Option<RawMisbehave>,
    #[serde(default)]
    pub(super) extensions: Vec<toml::Value>,
    #[serde(default)]
    pub(super) principals: Vec<toml::Value>,
    #[serde(default)]
    pub(super) manifests: Vec<toml::Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawAgent {
    pub(super) name: String,
    pub(super) description: String,
    pub(super) version: String,
    public_url: Option<String>,
    pub(super) documentation_url: Option<String>,
    pub(super) icon_url: Option<String>,
    pub(super) provider: Option<RawProvider>,
    pub(super) card_max_age_secs: Option<u64>,
    #[serde(default = "yes")]
    pub(super) allow_anonymous: bool,
    pub(super) default_input_modes: Vec<String>,
    pub(super) default_output_modes: Vec<String>,
    pub(super) max_tasks: Option<usize>,
    pub(super) max_request_bytes: Option<usize>,
    #[serde(default)]
    pub(super) interfaces: Vec<RawInterface>,
    #[serde(default)]
    pub(super) capabilities: RawCapabilities,
    #[serde(default)]
    pub(super) security_schemes: BTreeMap<String, RawBearer>,
}

fn yes() -> bool {
    true
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawProvider {
    pub(super) organization: String,
    pub(super) url: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawInterface {
    pub(super) binding: String,
    pub(super) path: String,
    pub(super) protocol_version: String,
    pub(super) tenant: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct RawCapabilities {
    #[serde(default)]
    pub(super) streaming: bool,
    #[serde(default)]
    pub(super) push_notifications: bool,
    pub(super) extended_agent_card: Option<bool>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawBearer {
    pub(super) scheme: String,
    pub(super) description: Option<String>,
    pub(super) bearer_format: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawRouter {
    pub(super) confidence_threshold: Option<f64>,
    pub(super) skill_hint_key: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawHandlers {
    pub(super) slow_step_ms: Option<u64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawMisbehave {
    #[serde(default)]
    pub(super) refuse_streaming: bool,
    #[serde(default)]
    pub(super) ignore_required_extensions: bool,
    #[serde(default)]
    pub(super) latency_ms: u64,
    pub(super) drop_stream_after_events: Option<u32>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawExtension {
    pub(super) uri: String,
    pub(super) description: Option<String>,
    #[serde(default)]
    pub(super) required: bool,
    pub(super) params: Option<toml::Table>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawPrincipal {
    pub(super) name: String,
    pub(super) token_env: Option<String>,
    pub(super) token_file: Option<PathBuf>,
    #[serde(default)]
    pub(super) scopes: Vec<String>,
    pub(super) tenant: Option<String>,
    #[serde(default)]
    pub(super) preview: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawManifest {
    pub(super) id: String,
    pub(super) state: State,
    pub(super) visibility: Visibility,
    pub(super) skill: RawSkill,
    #[serde(default)]
    pub(super) requires_scopes: Vec<String>,
    pub(super) tenants: RawTenants,
    pub(super) handler: String,
    #[serde(default)]
    pub(super) limits: RawLimits,
    pub(super) owner: String,
    pub(super) replacement: Option<String>,
}

#[derive(Deserialize)]
#[serde(untagged)]
pub(super) enum RawTenants {
    Star(String),
    List(Vec<String>),
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct RawLimits {
    pub(super) max_input_bytes: Option<u64>,
    pub(super) max_parts: Option<u32>,
    pub(super) cost_class: Option<CostClass>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawSkill {
    pub(super) name: String,
    pub(super) description: String,
    pub(super) tags: Vec<String>,
    #[serde(default)]
    pub(super) examples: Vec<String>,
    pub(super) input_modes: Option<Vec<String>>,
    pub(super) output_modes: Option<Vec<String>>,
}

/// Deserialises each element of an array of tables on its own, so a syntax error names the element.
pub(super) fn element_list<T: for<'de> Deserialize<'de>>(
    values: &[toml::Value],
    table: &str,
    key: &str,
) -> Result<Vec<T>, RegistryError> {
    values
        .iter()
        .enumerate()
        .map(|(i, value)| {
            T::deserialize(value.clone()).map_err(|e| {
                let name = value.get(key).and_then(|k| k.as_str());
                RegistryError::Syntax {
                    at: match name {
                        Some(n) => format!("{table}[{i}] ({key} {n:?})"),
                        None => format!("{table}[{i}]"),
                    },
                    message: e.to_string().trim().to_string(),
                }
            })
        })
        .collect()
}

#[derive(Default)]
pub(super) struct Validator {
    pub(super) problems: Vec<Problem>,
    pub(super) warnings: Vec<Problem>,
}

impl Validator {
    pub(super) fn bad(&mut self, at: impl Into<String>, message: impl Into<String>) {
        self.problems.push(Problem {
            at: at.into(),
            message: message.into(),
        });
    }

    pub(super) fn non_empty(&mut self, at: &str, s: &str) {
        if s.trim().is_empty() {
            self.bad(at, "must not be empty");
        }
    }

    pub(super) fn media_types(&mut self, at: &str, modes: &[String]) {
        if modes.is_empty() {
            self.bad(at, "must list at least one media type");
        }
        for (i, m) in modes.iter().enumerate() {
            if !is_media_type(m) {
                self.bad(
                    format!("{at}[{i}]"),
                    format!("{m:?} is not a media type (type/subtype)"),
                );
            }
        }
    }

    pub(super) fn url(&mut self, at: &str, s: &str) {
        match url::Url::parse(s) {
            Ok(u) if matches!(u.scheme(), "http" | "https") && u.host().is_some() => {}
            _ => self.bad(at, format!("{s:?} is not an absolute http(s) URL")),
        }
    }

    pub(super) fn agent(&mut self, raw: RawAgent) -> AgentBase {
        self.non_empty("agent.name", &raw.name);
        self.non_empty("agent.description", &raw.description);
        self.non_empty("agent.version", &raw.version);
        let public_url = raw.public_url.map(|u| {
            self.url("agent.public_url", &u);
            if u.contains('?') || u.contains('#') {
                self.bad("agent.public_url", "must not have a query or fragment");
            }
            u.trim_end_matches('/').to_string()
        });
        if let Some(u) = &raw.documentation_url {
            self.url("agent.documentation_url", u);
        }
        if let Some(u) = &raw.icon_url {
            self.url("agent.icon_url", u);
        }
        let provider = raw.provider.map(|p| {
            self.non_empty("agent.provider.organization", &p.organization);
            self.url("agent.provider.url", &p.url);
            Provider {
                organization: p.organization,
                url: p.url,
            }
        });
        self.media_types("agent.default_input_modes", &raw.default_input_modes);
        self.media_types("agent.default_output_modes", &raw.default_output_modes);
        let max_tasks = raw.max_tasks.unwrap_or(1000);
        if max_tasks == 0 {
            self.bad("agent.max_tasks", "must be at least 1");
        }
        let max_request_bytes = raw.max_request_bytes.unwrap_or(1 << 20);
        if max_request_bytes < 1024 {
            self.bad("agent.max_request_bytes", "must be at least 1024");
        }

        let interfaces = self.interfaces(raw.interfaces);
        if raw.capabilities.push_notifications {
            self.bad(
                "agent.capabilities.push_notifications",
                "push notifications are not implemented by the reference agent; set false",
            );
        }
        let security_schemes = self.security_schemes(raw.security_schemes, raw.allow_anonymous);
        AgentBase {
            name: raw.name,
            description: raw.description,
            version: raw.version,
            public_url,
            documentation_url: raw.documentation_url,
            icon_url: raw.icon_url,
            provider,
            card_max_age_secs: raw.card_max_age_secs.unwrap_or(300),
            allow_anonymous: raw.allow_anonymous,
            default_input_modes: raw.default_input_modes,
            default_output_modes: raw.default_output_modes,
            max_tasks,
            max_request_bytes,
            interfaces,
            capabilities: Capabilities {
                streaming: raw.capabilities.streaming,
                push_notifications: false,
                extended_agent_card: raw.capabilities.extended_agent_card,
            },
            security_schemes,
        }
    }

    /// The interfaces: at least one, each with its own path, none nested under another.
    fn interfaces(&mut self, raws: Vec<RawInterface>) -> Vec<Interface> {
        if raws.is_empty() {
            self.bad("agent.interfaces", "must declare at least one interface");
        }
        let mut paths = BTreeSet::new();
        let mut interfaces = Vec::new();
        for (i, ri) in raws.into_iter().enumerate() {
            interfaces.extend(self.interface(i, ri, &mut paths));
        }
        // Nested interface paths would make one prefix swallow the other's routes.
        for a in &paths {
            for b in &paths {
                if a != b && b.starts_with(&format!("{a}/")) {
                    self.bad(
                        "agent.interfaces",
                        format!("path {b:?} is nested under {a:?}"),
                    );
                }
            }
        }
        interfaces
    }

    /// One interface (binding, path, version, tenant); its path joins `paths`.
    fn interface(
        &mut self,
        i: usize,
        ri: RawInterface,
        paths: &mut BTreeSet<String>,
    ) -> Option<Interface> {
        let at = format!("agent.interfaces[{i}]");
        // The reference agent serves JSON-RPC and HTTP+JSON only.
        let binding = match Binding::from_wire(&ri.binding) {
            Some(b @ (Binding::JsonRpc | Binding::HttpJson)) => b,
            Some(Binding::Grpc) | None => {
                self.bad(
                    format!("{at}.binding"),
                    format!(
                        "{:?} is not served by this agent (use \"JSONRPC\" or \"HTTP+JSON\")",
                        ri.binding
                    ),
                );
                return None;
            }
        };
        if !ri.path.starts_with('/') || ri.path.len() < 2 || ri.path.ends_with('/') {
            self.bad(
                format!("{at}.path"),
                "must start with '/', not be '/' alone and not end with '/'",
            );
        } else if ri.path.starts_with("/.well-known") {
            self.bad(format!("{at}.path"), "must not be under /.well-known");
        } else if ri.path.contains(['?', '#', ' ', '{', '}', ':']) {
            self.bad(
                format!("{at}.path"),
                "must not contain '?', '#', ' ', ':', '{' or '}'",
            );
        }
        if !paths.insert(ri.path.clone()) {
            self.bad(
                format!("{at}.path"),
                format!("{:?} is used by another interface", ri.path),
            );
        }
        if ri.protocol_version != "1.0" {
            self.bad(
                format!("{at}.protocol_version"),
                format!(
                    "{:?} is not implemented (this agent speaks \"1.0\")",
                    ri.protocol_version
                ),
            );
        }
        if let Some(t) = &ri.tenant
            && (t.is_empty() || t.contains(['/', '?', '#']))
        {
            self.bad(
                format!("{at}.tenant"),
                "must be non-empty and free of '/', '?' and '#'",
            );
        }
        Some(Interface {
            binding,
            path: ri.path,
            protocol_version: ri.protocol_version,
            tenant: ri.tenant,
        })
    }

    /// The security schemes: at most one, a bearer scheme, required unless anonymous callers are allowed.
    fn security_schemes(
        &mut self,
        raws: BTreeMap<String, RawBearer>,
        allow_anonymous: bool,
    ) -> BTreeMap<String, BearerScheme> {
        let mut security_schemes = BTreeMap::new();
        for (name, s) in raws {
            let at = format!("agent.security_schemes.{name}");
            if !s.scheme.eq_ignore_ascii_case("bearer") {
                self.bad(
                    format!("{at}.scheme"),
                    format!(
                        "{:?} is not supported: principals authenticate with bearer tokens",
                        s.scheme
                    ),
                );
            }
            security_schemes.insert(
                name,
                BearerScheme {
                    description: s.description,
                    bearer_format: s.bearer_format,
                },
            );
        }
        if security_schemes.len() > 1 {
            self.bad(
                "agent.security_schemes",
                "declare one bearer scheme (every principal uses the same one)",
            );
        }
        if !allow_anonymous && security_schemes.is_empty() {
            self.bad(
                "agent.allow_anonymous",
                "is false, so a bearer security scheme must be declared",
            );
        }
        security_schemes
    }

    pub(super) fn extension(&mut self, i: usize, e: RawExtension) -> Option<Extension> {
        let at = format!("extensions[{i}]");
        match url::Url::parse(&e.uri) {
            Ok(u) if u.has_host() => {}
            _ => {
                self.bad(
                    format!("{at}.uri"),
                    format!("{:?} is not an absolute URI", e.uri),
                );
                return None;
            }
        }
        let params = match e.params {
            Some(t) => match serde_json::to_value(t) {
                Ok(serde_json::Value::Object(m)) => Some(m),
                _ => {
                    self.bad(format!("{at}.params"), "must be a table of JSON values");
                    None
                }
            },
            None => None,
        };
        Some(Extension {
            uri: e.uri,
            description: e.description,
            required: e.required,
            params,
        })
    }

    pub(super) fn principals(
        &mut self,
        raw: Vec<RawPrincipal>,
        dir: &Path,
        secrets: &dyn Secrets,
    ) -> Principals {
        let mut names = BTreeSet::new();
        let mut out = Principals::default();
        for p in raw {
            let at = format!("principals[{}]", p.name);
            if p.name.trim().is_empty() {
                self.bad("principals[]", "name must not be empty");
                continue;
            }
            if !names.insert(p.name.clone()) {
                self.bad(format!("{at}.name"), "is used by another principal");
            }
            for (i, s) in p.scopes.iter().enumerate() {
                if s.trim().is_empty() || s.contains(char::is_whitespace) {
                    self.bad(
                        format!("{at}.scopes[{i}]"),
                        "must be a non-empty word without spaces",
                    );
                }
            }
            if let Some(t) = &p.tenant
                && (t.is_empty() || t.contains(['/', '?', '#']))
            {
                self.bad(
                    format!("{at}.tenant"),
                    "must be non-empty and free of '/', '?' and '#'",
                );
            }
            let Some(token) = self.principal_token(&at, &p, dir, secrets) else {
                continue;
            };
            let principal = Principal {
                name: p.name.clone(),
                scopes: p.scopes.into_iter().collect(),
                tenant: p.tenant,
                preview: p.preview,
            };
            if out
                .by_token_sha256
                .insert(token_digest(&token), principal)
                .is_some()
            {
                self.bad(
                    format!("{at}.token"),
                    "the same token belongs to another principal",
                );
            }
        }
        out
    }

    /// A principal's token, read from exactly one of its sources and long enough; `None` (with the
    /// problem or warning recorded) disables the principal.
    fn principal_token(
        &mut self,
        at: &str,
        p: &RawPrincipal,
        dir: &Path,
        secrets: &dyn Secrets,
    ) -> Option<String> {
        let token = match (&p.token_env, &p.token_file) {
            (Some(var), None) => match secrets.env(var) {
                Some(t) => Some(t),
                None => {
                    // An unset variable disables the principal rather than failing the whole
                    // agent: the public card and anonymous calls still work.
                    self.warnings.push(Problem {
                        at: format!("{at}.token_env"),
                        message: format!(
                            "environment variable {var} is not set; principal disabled"
                        ),
                    });
                    None
                }
            },
            (None, Some(file)) => {
                let path = if file.is_absolute() {
                    file.clone()
                } else {
                    dir.join(file)
                };
                match secrets.file(&path) {
                    Ok(t) => Some(t),
                    Err(e) => {
                        self.bad(
                            format!("{at}.token_file"),
                            format!("cannot read {}: {e}", path.display()),
                        );
                        None
                    }
                }
            }
            _ => {
                self.bad(
                    at,
                    "set exactly one of token_env or token_file (tokens never go in the registry)",
                );
                None
            }
        };
        let token = token?.trim().to_string();
        if token.len() < 8 || token.contains(char::is_whitespace) {
            self.bad(
                format!("{at}.token"),
                "the token must be at least 8 characters without whitespace",
            );
            return None;
        }
        Some(token)
    }

    pub(super) fn manifests(&mut self, raw: Vec<RawManifest>) -> Vec<Manifest> {
        let mut ids = BTreeSet::new();
        let mut out = Vec::new();
        for m in raw {
            let at = format!("manifests[{}]", m.id);
            if !is_skill_id(&m.id) {
                self.bad(
                    format!("{at}.id"),
                    "must be lowercase letters, digits, '-', '_' or '.', starting with a letter or digit",
                );
            }
            if !ids.insert(m.id.clone()) {
                self.bad(format!("{at}.id"), "is used by another manifest");
            }
            out.push(self.manifest(&at, m));
        }
        self.replacements(&out);
        out
    }

    /// One manifest: its skill's text and modes, scopes, tenants, visibility, handler, state and limits.
    fn manifest(&mut self, at: &str, m: RawManifest) -> Manifest {
        self.non_empty(&format!("{at}.skill.name"), &m.skill.name);
        self.non_empty(&format!("{at}.skill.description"), &m.skill.description);
        self.non_empty(&format!("{at}.owner"), &m.owner);
        if m.skill.tags.is_empty() {
            self.bad(format!("{at}.skill.tags"), "must list at least one tag");
        }
        for (i, t) in m.skill.tags.iter().enumerate() {
            self.non_empty(&format!("{at}.skill.tags[{i}]"), t);
        }
        for (i, e) in m.skill.examples.iter().enumerate() {
            self.non_empty(&format!("{at}.skill.examples[{i}]"), e);
        }
        if let Some(modes) = &m.skill.input_modes {
            self.media_types(&format!("{at}.skill.input_modes"), modes);
        }
        if let Some(modes) = &m.skill.output_modes {
            self.media_types(&format!("{at}.skill.output_modes"), modes);
        }
        for (i, s) in m.requires_scopes.iter().enumerate() {
            if s.trim().is_empty() || s.contains(char::is_whitespace) {
                self.bad(
                    format!("{at}.requires_scopes[{i}]"),
                    "must be a non-empty word without spaces",
                );
            }
        }
        let tenants = self.tenants(at, m.tenants);
        if m.visibility == Visibility::Public
            && (!m.requires_scopes.is_empty() || tenants != Tenants::Any)
        {
            self.bad(
                format!("{at}.visibility"),
                "a public capability is for anyone: requires_scopes must be empty and tenants \"*\" (use visibility = \"extended\")",
            );
        }
        let handler = self.handler(at, &m.handler);
        match (m.state, &m.replacement) {
            (State::Deprecated | State::Removed, None) => self.bad(
                format!("{at}.replacement"),
                "a deprecated or removed capability must name its replacement",
            ),
            (State::Preview | State::Ga, Some(_)) => self.bad(
                format!("{at}.replacement"),
                "only deprecated or removed capabilities have a replacement",
            ),
            _ => {}
        }
        if let Some(0) = m.limits.max_parts {
            self.bad(format!("{at}.limits.max_parts"), "must be at least 1");
        }
        if let Some(0) = m.limits.max_input_bytes {
            self.bad(format!("{at}.limits.max_input_bytes"), "must be at least 1");
        }
        Manifest {
            id: m.id,
            state: m.state,
            visibility: m.visibility,
            skill: Skill {
                name: m.skill.name,
                description: m.skill.description,
                tags: m.skill.tags,
                examples: m.skill.examples,
                input_modes: m.skill.input_modes,
                output_modes: m.skill.output_modes,
            },
            requires_scopes: m.requires_scopes.into_iter().collect(),
            tenants,
            handler,
            limits: Limits {
                max_input_bytes: m.limits.max_input_bytes,
                max_parts: m.limits.max_parts,
                cost_class: m.limits.cost_class,
            },
            owner: m.owner,
            replacement: m.replacement,
        }
    }

    /// `tenants`: `"*"` or a non-empty list of non-empty names.
    fn tenants(&mut self, at: &str, raw: RawTenants) -> Tenants {
        match raw {
            RawTenants::Star(s) if s == "*" => Tenants::Any,
            RawTenants::Star(s) => {
                self.bad(
                    format!("{at}.tenants"),
                    format!("must be \"*\" or a list of tenants, not {s:?}"),
                );
                Tenants::Any
            }
            RawTenants::List(l) if l.is_empty() || l.iter().any(|t| t.is_empty()) => {
                self.bad(
                    format!("{at}.tenants"),
                    "a tenant list must be non-empty and hold non-empty names (use \"*\" for any)",
                );
                Tenants::Any
            }
            RawTenants::List(l) => Tenants::Only(l.into_iter().collect()),
        }
    }

    /// The built-in handler named `name` (echo, with the problem recorded, when there is none).
    fn handler(&mut self, at: &str, name: &str) -> HandlerKind {
        match HandlerKind::from_name(name) {
            Some(h) => h,
            None => {
                self.bad(
                    format!("{at}.handler"),
                    format!(
                        "{:?} is not a built-in handler (one of: {})",
                        name,
                        HandlerKind::names().join(", ")
                    ),
                );
                HandlerKind::Echo
            }
        }
    }

    /// Replacements must point at a live capability, or callers are sent nowhere.
    fn replacements(&mut self, out: &[Manifest]) {
        for m in out {
            let Some(r) = &m.replacement else { continue };
            let at = format!("manifests[{}].replacement", m.id);
            match out.iter().find(|o| &o.id == r) {
                None => self.bad(at, format!("names {r:?}, which is not a manifest")),
                Some(o) if o.id == m.id => self.bad(at, "names the capability itself"),
                Some(o) if o.state == State::Removed => {
                    self.bad(at, format!("names {r:?}, which is itself removed"))
                }
                Some(_) => {}
            }
        }
    }
}
