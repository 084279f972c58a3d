//! The content guard's configuration: `[[detectors]]` (custom detectors), `[guard]` (scan budget,
//! what an unscanned rest does, inbound recording) and each integration's `guard = { … }` policy
//! (raw serde models and validation; reads the detectors' word files, each through the one bounded
//! reader, [`crate::types::file`]).
//!
//! The detectors are compiled once per config ([`GuardContext`]) and every integration's policy
//! selects among them; a config that names an unknown detector, a regex that does not compile or a
//! word file that cannot be read is refused like any other bad value.

use std::collections::BTreeMap;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Deserialize;
use sha2::{Digest, Sha256};

use crate::guard::{self, Action, DetectorSpec, Detectors, OnUnscanned, Source};

/// Scan budget per request when `[guard] budget_bytes` is not set: the default body cap, so every
/// request of the default size is scanned whole.
pub const DEFAULT_GUARD_BUDGET_BYTES: usize = 1024 * 1024;
/// Largest `[guard] budget_bytes` accepted (the largest body cap).
pub const MAX_GUARD_BUDGET_BYTES: usize = 64 * 1024 * 1024;
/// Most `[[detectors]]` a config may declare.
pub const MAX_CUSTOM_DETECTORS: usize = 256;
/// Largest `words_file` read, in bytes.
pub const MAX_WORDS_FILE_BYTES: u64 = 4 * 1024 * 1024;
/// Most words one `words_file` may hold.
pub const MAX_WORDS: usize = 100_000;
/// Longest custom `regex`, in bytes (the `regex` crate bounds the compiled size too).
pub const MAX_REGEX_BYTES: usize = 4096;

/// The raw `[[detectors]]` table: a custom detector.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawDetector {
    /// Unique name (1..=64 of `[a-z0-9_-]`, not a built-in's); appears in findings, metrics,
    /// refusals and the redaction marker `[REDACTED:<name>]`.
    pub name: String,
    /// A regular expression (the `regex` crate's syntax), matched on NFKC-normalised text.
    #[serde(default)]
    pub regex: Option<String>,
    /// A file of literal words, one per line (relative to the config's folder; blank lines and
    /// lines starting with `#` ignored), matched case-insensitively as whole words.
    #[serde(default)]
    pub words_file: Option<PathBuf>,
    /// The data class of what it finds (e.g. `pii`, `secret`, `confidential`).
    pub class: String,
}

/// The raw `[guard]` table: settings shared by every integration's guard policy.
#[derive(Debug, Clone, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawGuard {
    /// Bytes of string content scanned per request at most (default 1 MiB).
    #[serde(default)]
    pub budget_bytes: Option<usize>,
    /// What a request whose content is longer than the budget does: `"refuse"` (default) or
    /// `"allow"` (the rest is forwarded unscanned, and counted).
    #[serde(default)]
    pub on_unscanned: Option<String>,
    /// `"off"` (default) or `"record"`: the integrations' detectors also run on the agents'
    /// answers, and findings are counted and logged (answers are never changed).
    #[serde(default)]
    pub inbound: Option<String>,
}

/// The raw `guard = { … }` of an integration.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawIntegrationGuard {
    /// Detectors that run on this integration's message sends: built-ins by name (`pci`,
    /// `iban`, `ssn`, `email`, `phone`, `aws_key`, `gcp_key`, `github_token`, `slack_token`,
    /// `stripe_key`, `azure_key`, `bearer_token`, `private_key`, `jwt`, `high_entropy`) and
    /// `[[detectors]]` names.
    pub detectors: Vec<String>,
    /// What a finding does: `"refuse"`, `"redact"` or `"record"`.
    pub action: String,
    /// Per data class override of `action`, e.g. `{ pci = "redact", secret = "refuse" }`.
    #[serde(default)]
    pub actions: BTreeMap<String, String>,
    /// Origins that `url` parts (`file.uri` in 0.3) may point at; a URL elsewhere is refused.
    /// Absent: URL parts are not checked.
    #[serde(default)]
    pub url_origins: Option<Vec<String>>,
}

/// Whether answers are scanned too (`[guard] inbound`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Inbound {
    /// Answers are not scanned.
    #[default]
    Off,
    /// Answers are scanned; findings are counted and logged, the answer passes unchanged.
    Record,
}

/// The detectors and shared settings of one config, compiled once.
#[derive(Debug, Clone)]
pub struct GuardContext {
    /// Every built-in plus the config's `[[detectors]]`.
    pub all: Detectors,
    /// `[guard] budget_bytes`.
    pub budget_bytes: usize,
    /// `[guard] on_unscanned`.
    pub on_unscanned: OnUnscanned,
    /// `[guard] inbound`.
    pub inbound: Inbound,
    /// `sha256` over the custom detectors as compiled (names, classes, regexes, words): two
    /// integrations' guards are equal only if their detectors are.
    fingerprint: [u8; 32],
}

impl GuardContext {
    /// The built-in detectors with the default settings (no `[[detectors]]`, no `[guard]`).
    pub fn builtin() -> GuardContext {
        GuardContext {
            all: Detectors::compile(Vec::new()).expect("the built-in detectors compile"),
            budget_bytes: DEFAULT_GUARD_BUDGET_BYTES,
            on_unscanned: OnUnscanned::Refuse,
            inbound: Inbound::Off,
            fingerprint: [0; 32],
        }
    }
}

/// One integration's validated guard policy, compiled against its config's detectors.
#[derive(Debug, Clone)]
pub struct IntegrationGuard {
    /// The detectors it runs, as the configuration names them (sorted, deduplicated).
    pub detectors: Vec<String>,
    /// The action of a finding whose class `actions` does not name.
    pub action: Action,
    /// Per data class actions.
    pub actions: BTreeMap<String, Action>,
    /// Whether answers are scanned (record only).
    pub inbound: Inbound,
    policy: Arc<guard::Policy>,
    all: Detectors,
    fingerprint: [u8; 32],
}

impl IntegrationGuard {
    /// Compiles a policy against `ctx`'s detectors; the error names the field that failed.
    pub fn compile(
        ctx: &GuardContext,
        detectors: &[String],
        action: Action,
        actions: BTreeMap<String, Action>,
        url_origins: Option<Vec<String>>,
    ) -> Result<IntegrationGuard, guard::GuardError> {
        let mut names = detectors.to_vec();
        names.sort();
        names.dedup();
        let policy = guard::Policy::new(
            &ctx.all,
            &names,
            action,
            &actions,
            url_origins,
            ctx.budget_bytes,
            ctx.on_unscanned,
        )?;
        Ok(IntegrationGuard {
            detectors: names,
            action,
            actions,
            inbound: ctx.inbound,
            policy: Arc::new(policy),
            all: ctx.all.clone(),
            fingerprint: ctx.fingerprint,
        })
    }

    /// The compiled policy.
    pub fn policy(&self) -> &guard::Policy {
        &self.policy
    }

    /// Every detector of the config (the scan looks names and classes up in it).
    pub fn all(&self) -> &Detectors {
        &self.all
    }

    /// Every (detector, action) a request's finding can be counted with under this policy, for
    /// the metrics created at 0: each detector's action, a refusal too where a redaction that
    /// cannot be made refuses, `url_origin` and `unscanned` (refuse only) where they apply.
    pub fn outcomes(&self) -> Vec<(&str, Action)> {
        let mut out = Vec::new();
        for name in self.policy.detector_names() {
            let action = match self.all.class_of(name) {
                Some(class) => self.policy.action_for(class),
                // `url_origin`: not a detector of the table; its findings always refuse.
                None => Action::Refuse,
            };
            out.push((name, action));
            if action == Action::Redact {
                out.push((name, Action::Refuse));
            }
        }
        if self.policy.on_unscanned() == OnUnscanned::Refuse {
            out.push((guard::UNSCANNED, Action::Refuse));
        }
        out
    }

    /// The detectors that run on answers when `inbound = "record"` (none otherwise).
    pub fn inbound_detectors(&self) -> Vec<&str> {
        match self.inbound {
            Inbound::Off => Vec::new(),
            Inbound::Record => (self.policy.detector_names().into_iter())
                .filter(|n| self.all.class_of(n).is_some())
                .collect(),
        }
    }
}

impl PartialEq for IntegrationGuard {
    fn eq(&self, other: &Self) -> bool {
        self.detectors == other.detectors
            && self.action == other.action
            && self.actions == other.actions
            && self.policy.url_origins() == other.policy.url_origins()
            && self.inbound == other.inbound
            && self.fingerprint == other.fingerprint
            && self.policy.budget_bytes() == other.policy.budget_bytes()
            && self.policy.on_unscanned() == other.policy.on_unscanned()
    }
}

impl Eq for IntegrationGuard {}

impl Hash for IntegrationGuard {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.detectors.hash(state);
        self.action.hash(state);
        self.actions.hash(state);
        self.policy.url_origins().hash(state);
        self.inbound.hash(state);
        self.fingerprint.hash(state);
        self.policy.budget_bytes().hash(state);
        (self.policy.on_unscanned() == OnUnscanned::Refuse).hash(state);
    }
}

/// Parses an action name.
pub fn action(raw: &str) -> Option<Action> {
    match raw {
        "refuse" => Some(Action::Refuse),
        "redact" => Some(Action::Redact),
        "record" => Some(Action::Record),
        _ => None,
    }
}

/// `[[detectors]]` and `[guard]`, compiled; every problem recorded (each naming its key). A
/// detector that fails is left out, so the integrations are still checked against the rest.
pub(super) fn context(
    raw_detectors: &[RawDetector],
    raw: &RawGuard,
    base: &Path,
    problems: &mut Vec<String>,
) -> GuardContext {
    let budget_bytes = raw.budget_bytes.unwrap_or(DEFAULT_GUARD_BUDGET_BYTES);
    if budget_bytes == 0 || budget_bytes > MAX_GUARD_BUDGET_BYTES {
        problems.push(format!(
            "guard.budget_bytes: {budget_bytes} is outside 1..={MAX_GUARD_BUDGET_BYTES}"
        ));
    }
    let on_unscanned = match raw.on_unscanned.as_deref() {
        None | Some("refuse") => OnUnscanned::Refuse,
        Some("allow") => OnUnscanned::Allow,
        Some(o) => {
            problems.push(format!(
                "guard.on_unscanned: {o:?} is not \"refuse\" or \"allow\""
            ));
            OnUnscanned::Refuse
        }
    };
    let inbound = match raw.inbound.as_deref() {
        None | Some("off") => Inbound::Off,
        Some("record") => Inbound::Record,
        Some(o) => {
            problems.push(format!("guard.inbound: {o:?} is not \"off\" or \"record\""));
            Inbound::Off
        }
    };
    if raw_detectors.len() > MAX_CUSTOM_DETECTORS {
        problems.push(format!(
            "detectors: {} detectors, more than {MAX_CUSTOM_DETECTORS}",
            raw_detectors.len()
        ));
    }
    let mut accepted: Vec<DetectorSpec> = Vec::new();
    for (i, d) in raw_detectors.iter().take(MAX_CUSTOM_DETECTORS).enumerate() {
        let Some(spec) = spec(i, d, base, problems) else {
            continue;
        };
        let mut trial = accepted.clone();
        trial.push(spec.clone());
        match Detectors::compile(trial) {
            Ok(_) => accepted.push(spec),
            Err(e) => problems.push(format!("detectors[{i}]: {e}")),
        }
    }
    let fingerprint = fingerprint(&accepted);
    let all = Detectors::compile(accepted).unwrap_or_else(|_| GuardContext::builtin().all);
    GuardContext {
        all,
        budget_bytes: budget_bytes.clamp(1, MAX_GUARD_BUDGET_BYTES),
        on_unscanned,
        inbound,
        fingerprint,
    }
}

/// One `[[detectors]]` table as a spec (its word file read), or `None` with the problem recorded.
fn spec(
    i: usize,
    d: &RawDetector,
    base: &Path,
    problems: &mut Vec<String>,
) -> Option<DetectorSpec> {
    let at = format!("detectors[{i}] ({})", d.name);
    let source = match (&d.regex, &d.words_file) {
        (Some(_), Some(_)) | (None, None) => {
            problems.push(format!("{at}: set exactly one of regex and words_file"));
            return None;
        }
        (Some(r), None) if r.len() > MAX_REGEX_BYTES => {
            problems.push(format!(
                "{at}.regex: {} bytes, more than {MAX_REGEX_BYTES}",
                r.len()
            ));
            return None;
        }
        (Some(r), None) => Source::Regex(r.clone()),
        (None, Some(f)) => Source::Words(words(&at, &base.join(f), problems)?),
    };
    Some(DetectorSpec {
        name: d.name.clone(),
        class: d.class.clone(),
        source,
    })
}

/// The words of a `words_file`: one per line, trimmed; blank lines and `#` comments skipped.
fn words(at: &str, path: &Path, problems: &mut Vec<String>) -> Option<Vec<String>> {
    let text = crate::types::file::read_capped_string(path, MAX_WORDS_FILE_BYTES, "words_file")
        .map_err(|e| problems.push(format!("{at}.words_file: {e}")))
        .ok()?;
    let words: Vec<String> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_owned)
        .collect();
    if words.len() > MAX_WORDS {
        problems.push(format!(
            "{at}.words_file: {} words, more than {MAX_WORDS}",
            words.len()
        ));
        return None;
    }
    Some(words)
}

fn fingerprint(specs: &[DetectorSpec]) -> [u8; 32] {
    let mut h = Sha256::new();
    for s in specs {
        // Length-prefixed fields, so no two different tables hash the same bytes.
        let mut field = |b: &[u8]| {
            h.update((b.len() as u64).to_be_bytes());
            h.update(b);
        };
        field(s.name.as_bytes());
        field(s.class.as_bytes());
        match &s.source {
            Source::Builtin => field(b"builtin"),
            Source::Regex(r) => {
                field(b"regex");
                field(r.as_bytes());
            }
            Source::Words(w) => {
                field(b"words");
                for word in w {
                    field(word.as_bytes());
                }
            }
        }
    }
    h.finalize().into()
}

/// An integration's `guard = { … }`, compiled against `ctx`; problems recorded under `at`.
pub(super) fn integration_guard(
    ctx: &GuardContext,
    raw: &RawIntegrationGuard,
    at: &str,
    problems: &mut Vec<String>,
) -> Option<IntegrationGuard> {
    let before = problems.len();
    let main = action(&raw.action).unwrap_or_else(|| {
        problems.push(format!(
            "{at}.guard.action: {:?} is not \"refuse\", \"redact\" or \"record\"",
            raw.action
        ));
        Action::Refuse
    });
    let mut actions = BTreeMap::new();
    for (class, a) in &raw.actions {
        match action(a) {
            Some(a) => {
                actions.insert(class.clone(), a);
            }
            None => problems.push(format!(
                "{at}.guard.actions.{class}: {a:?} is not \"refuse\", \"redact\" or \"record\""
            )),
        }
    }
    if raw.detectors.is_empty() && raw.url_origins.is_none() {
        problems.push(format!(
            "{at}.guard.detectors: names no detector (and url_origins is not set)"
        ));
    }
    if problems.len() > before {
        return None;
    }
    IntegrationGuard::compile(ctx, &raw.detectors, main, actions, raw.url_origins.clone())
        .map_err(|e| problems.push(format!("{at}.{e}")))
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(detectors: &[&str], action: &str) -> RawIntegrationGuard {
        RawIntegrationGuard {
            detectors: detectors.iter().map(|s| (*s).to_owned()).collect(),
            action: action.into(),
            actions: BTreeMap::new(),
            url_origins: None,
        }
    }

    #[test]
    fn an_integration_guard_compiles_against_builtins_and_refuses_unknown_names() {
        let ctx = GuardContext::builtin();
        let mut p = Vec::new();
        let g = integration_guard(&ctx, &raw(&["pci", "jwt", "pci"], "redact"), "i", &mut p)
            .expect("compiles");
        assert!(p.is_empty(), "{p:?}");
        assert_eq!(g.detectors, ["jwt", "pci"]);
        assert_eq!(g.action, Action::Redact);
        assert!(integration_guard(&ctx, &raw(&["nope"], "refuse"), "i", &mut p).is_none());
        assert!(p[0].contains("unknown detector \"nope\""), "{p:?}");
        p.clear();
        assert!(integration_guard(&ctx, &raw(&["pci"], "block"), "i", &mut p).is_none());
        assert!(p[0].contains("i.guard.action"), "{p:?}");
    }

    #[test]
    fn guards_differ_when_their_custom_detectors_do() {
        let dir = tempfile::tempdir().unwrap();
        let mk = |regex: &str| {
            let mut p = Vec::new();
            let d = RawDetector {
                name: "project".into(),
                regex: Some(regex.into()),
                words_file: None,
                class: "confidential".into(),
            };
            let ctx = context(&[d], &RawGuard::default(), dir.path(), &mut p);
            assert!(p.is_empty(), "{p:?}");
            integration_guard(&ctx, &raw(&["project"], "refuse"), "i", &mut p).unwrap()
        };
        assert_eq!(mk("ALPHA-[0-9]+"), mk("ALPHA-[0-9]+"));
        assert_ne!(mk("ALPHA-[0-9]+"), mk("BETA-[0-9]+"));
    }

    #[test]
    fn bad_detectors_and_settings_name_their_key() {
        let dir = tempfile::tempdir().unwrap();
        let both = RawDetector {
            name: "x".into(),
            regex: Some("a".into()),
            words_file: Some("w.txt".into()),
            class: "pii".into(),
        };
        let bad_regex = RawDetector {
            name: "y".into(),
            regex: Some("(".into()),
            words_file: None,
            class: "pii".into(),
        };
        let missing = RawDetector {
            name: "z".into(),
            regex: None,
            words_file: Some("absent.txt".into()),
            class: "pii".into(),
        };
        let clash = RawDetector {
            name: "pci".into(),
            regex: Some("a".into()),
            words_file: None,
            class: "pci".into(),
        };
        let g = RawGuard {
            budget_bytes: Some(0),
            on_unscanned: Some("maybe".into()),
            inbound: Some("yes".into()),
        };
        let mut p = Vec::new();
        let ctx = context(&[both, bad_regex, missing, clash], &g, dir.path(), &mut p);
        let all = p.join("\n");
        for want in [
            "guard.budget_bytes",
            "guard.on_unscanned",
            "guard.inbound",
            "detectors[0] (x): set exactly one",
            "detectors[1]: detector \"y\": regex does not compile",
            "detectors[2] (z).words_file",
            "detectors[3]: detector \"pci\": name already taken",
        ] {
            assert!(all.contains(want), "{want} missing from:\n{all}");
        }
        assert_eq!(ctx.all.names().count(), guard::BUILTIN_NAMES.len());
    }

    #[test]
    fn a_words_file_is_read_beside_the_config_skipping_comments() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("ids.txt"),
            "# customers\nACME-0042\n\n  ZETA-7  \n",
        )
        .unwrap();
        let d = RawDetector {
            name: "customer_ids".into(),
            regex: None,
            words_file: Some("ids.txt".into()),
            class: "confidential".into(),
        };
        let mut p = Vec::new();
        let ctx = context(&[d], &RawGuard::default(), dir.path(), &mut p);
        assert!(p.is_empty(), "{p:?}");
        assert_eq!(ctx.all.class_of("customer_ids"), Some("confidential"));
        let g = integration_guard(&ctx, &raw(&["customer_ids"], "refuse"), "i", &mut p).unwrap();
        let body = r#"{"params":{"message":{"parts":[{"text":"order for zeta-7 today"}]}}}"#;
        let v = guard::scan_request(g.all(), g.policy(), body, guard::Shape::JsonRpc);
        assert_eq!(
            v.refusal().map(|f| f.detector.as_str()),
            Some("customer_ids")
        );
    }
}
