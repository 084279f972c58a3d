//! [`Profile::builder`]: compiled profiles with defaults, for tests (no I/O).

use std::collections::BTreeMap;

use crate::profile::{
    Binding, BindingVersion, Display, Interface, Profile, SecurityAlternative, SkillDisplay,
    SkillProfile, Unusable, Verdict,
};

impl Profile {
    /// A usable profile speaking JSON-RPC 1.0 at `https://a.example/a2a`, agent version `1`,
    /// digest `sha256:00`, no streaming, push, extended card, extensions or skills, empty
    /// display strings; each method below changes one of these.
    pub fn builder() -> ProfileBuilder {
        ProfileBuilder(Profile {
            verdict: Verdict::Usable,
            agent_version: "1".into(),
            card_digest: "sha256:00".into(),
            verified_by: None,
            signature_failed: false,
            interface: Some(Interface {
                url: "https://a.example/a2a".into(),
                binding: Binding::JsonRpc,
                version: "1.0".into(),
                tenant: None,
            }),
            offered: Vec::new(),
            interfaces: Vec::new(),
            streaming: false,
            push: false,
            extended_card: false,
            extensions: Vec::new(),
            required_extensions: Vec::new(),
            skills: BTreeMap::new(),
            display: Display::default(),
        })
    }
}

impl SkillProfile {
    /// A skill accepting and producing `text/plain`, without security or tags.
    pub fn builder() -> SkillBuilder {
        SkillBuilder(SkillProfile {
            input: strings(&["text/plain"]),
            output: strings(&["text/plain"]),
            security: Vec::new(),
            tags: Vec::new(),
        })
    }
}

/// Builds a [`Profile`]; see [`Profile::builder`] for the defaults.
#[derive(Debug, Clone)]
pub struct ProfileBuilder(Profile);

impl ProfileBuilder {
    /// The profile.
    pub fn build(self) -> Profile {
        self.0
    }

    /// Unusable for `why` (the interface stays as set; clear it with [`no_interface`](Self::no_interface)).
    pub fn unusable(mut self, why: Unusable) -> Self {
        self.0.verdict = Verdict::Unusable(why);
        self
    }

    /// The card's `version`.
    pub fn agent_version(mut self, v: impl Into<String>) -> Self {
        self.0.agent_version = v.into();
        self
    }

    /// The card digest.
    pub fn card_digest(mut self, d: impl Into<String>) -> Self {
        self.0.card_digest = d.into();
        self
    }

    /// The `kid` of the card's own verified signature.
    pub fn verified_by(mut self, kid: Option<&str>) -> Self {
        self.0.verified_by = kid.map(str::to_owned);
        self
    }

    /// The chosen interface's URL.
    pub fn url(mut self, url: impl Into<String>) -> Self {
        self.interface_mut().url = url.into();
        self
    }

    /// The chosen interface's binding.
    pub fn binding(mut self, binding: Binding) -> Self {
        self.interface_mut().binding = binding;
        self
    }

    /// The chosen interface's protocol version.
    pub fn version(mut self, version: impl Into<String>) -> Self {
        self.interface_mut().version = version.into();
        self
    }

    /// The chosen interface's tenant.
    pub fn tenant(mut self, tenant: Option<&str>) -> Self {
        self.interface_mut().tenant = tenant.map(str::to_owned);
        self
    }

    /// No interface at all (as for a card without a supported one).
    pub fn no_interface(mut self) -> Self {
        self.0.interface = None;
        self
    }

    /// The (binding, version) pairs offered.
    pub fn offered(mut self, offered: &[(Binding, &str)]) -> Self {
        self.0.offered = offered
            .iter()
            .map(|(binding, version)| BindingVersion {
                binding: *binding,
                version: (*version).to_owned(),
            })
            .collect();
        self
    }

    /// `capabilities.streaming`.
    pub fn streaming(mut self, on: bool) -> Self {
        self.0.streaming = on;
        self
    }

    /// `capabilities.pushNotifications`.
    pub fn push(mut self, on: bool) -> Self {
        self.0.push = on;
        self
    }

    /// `capabilities.extendedAgentCard`.
    pub fn extended_card(mut self, on: bool) -> Self {
        self.0.extended_card = on;
        self
    }

    /// The extensions both sides know.
    pub fn extensions(mut self, uris: &[&str]) -> Self {
        self.0.extensions = strings(uris);
        self
    }

    /// The extensions the card marks `required`.
    pub fn required_extensions(mut self, uris: &[&str]) -> Self {
        self.0.required_extensions = strings(uris);
        self
    }

    /// Adds skill `id` with the defaults of [`SkillProfile::builder`].
    pub fn skill(self, id: impl Into<String>) -> Self {
        self.skill_with(id, SkillProfile::builder().build())
    }

    /// Adds (or replaces) skill `id`.
    pub fn skill_with(mut self, id: impl Into<String>, skill: SkillProfile) -> Self {
        self.0.skills.insert(id.into(), skill);
        self
    }

    /// The display strings.
    pub fn display(mut self, display: Display) -> Self {
        self.0.display = display;
        self
    }

    /// Display name and description.
    pub fn named(mut self, name: impl Into<String>, description: impl Into<String>) -> Self {
        self.0.display.name = name.into();
        self.0.display.description = description.into();
        self
    }

    /// Display strings of skill `id`.
    pub fn skill_display(
        mut self,
        id: impl Into<String>,
        name: impl Into<String>,
        description: impl Into<String>,
        examples: &[&str],
    ) -> Self {
        self.0.display.skills.insert(
            id.into(),
            SkillDisplay {
                name: name.into(),
                description: description.into(),
                examples: strings(examples),
            },
        );
        self
    }

    fn interface_mut(&mut self) -> &mut Interface {
        self.0
            .interface
            .as_mut()
            .expect("interface set (no_interface was called)")
    }
}

/// Builds a [`SkillProfile`]; see [`SkillProfile::builder`] for the defaults.
#[derive(Debug, Clone)]
pub struct SkillBuilder(SkillProfile);

impl SkillBuilder {
    /// The skill.
    pub fn build(self) -> SkillProfile {
        self.0
    }

    /// Accepted input media types.
    pub fn input(mut self, types: &[&str]) -> Self {
        self.0.input = strings(types);
        self
    }

    /// Produced output media types.
    pub fn output(mut self, types: &[&str]) -> Self {
        self.0.output = strings(types);
        self
    }

    /// Security requirements (OR of alternatives).
    pub fn security(mut self, alternatives: Vec<SecurityAlternative>) -> Self {
        self.0.security = alternatives;
        self
    }

    /// Routing tags.
    pub fn tags<S: AsRef<str>>(mut self, tags: &[S]) -> Self {
        self.0.tags = tags.iter().map(|t| t.as_ref().to_owned()).collect();
        self
    }
}

pub(super) fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| (*s).to_owned()).collect()
}
