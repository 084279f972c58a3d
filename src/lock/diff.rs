//! Classifying a compiled profile as compatible, review or breaking: against a lockfile
//! ([`check_against_lock`]), or against the profile it replaces (pure).
//!
//! Only compiled profiles are compared, never raw JSON, so reordered keys compile to the same
//! profile and change nothing, and provider-written text (names, descriptions, examples, tags)
//! can only ever be a compatible change. Each finding is one line naming the field and both
//! values: `breaking: skills.itinerary-pricing.output: [application/json] -> [text/csv] (…)`.
//!
//! Against a lock ([`check_against_lock`]):
//! - an unusable profile is breaking, with its reason, and nothing else is reported;
//! - the pinned (binding, version) no longer offered is breaking; still offered but another
//!   interface preferred is review (re-run probes); the chosen interface being the pinned binding
//!   at another protocol version (an agent moving 0.3 -> 1.0, or back) is review too: the binding
//!   and the skills are what the workflow needs. It is reached only for a usable profile: every
//!   chosen 0.3 interface is callable (translated, gRPC included), so both directions are review;
//! - pinned streaming lost is breaking when the integration requires streaming, else review;
//! - per pinned skill: removed (or hidden from this caller), an input type the workflow sends no
//!   longer accepted, none of its output types offered any more, or security that no alternative
//!   of the held scopes satisfies — each breaking;
//! - a pinned extension no longer offered is breaking (an unknown *required* one already made the
//!   profile unusable);
//! - another agent version is review.
//!
//! Against the previous profile ([`diff_profiles`]), the same rules run against the lock, or
//! without one against the lock the old profile implies (every skill it offered, its modes and
//! the scopes it asked for; streaming not required). Changes those rules do not decide are then
//! added: streaming lost when not required, push notifications lost, another interface URL or
//! tenant, narrowed outputs (without a lock), changed security, removed extensions — review;
//! anything else (new skills, widened modes, tags, text) — compatible.

use std::collections::BTreeSet;

use serde::Serialize;

use super::{Lock, Requires, SkillNeed};
use crate::profile::{BindingVersion, Profile, SecurityAlternative, SkillProfile};
use crate::types::media_type::media_type_accepted;

const STREAMING_LOST: &str =
    "no longer advertised; streaming calls will be answered through SendMessage";

/// How much a change matters to the workflow; ordered, so the worst of several is the `max`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Class {
    /// Nothing the workflow needs changed: swap in silently.
    Compatible,
    /// Swap in, but someone should look (and probes should run again).
    Review,
    /// The workflow would fail: stop new delegations (or fall back).
    Breaking,
}

impl Class {
    /// Bounded label.
    pub fn as_str(self) -> &'static str {
        match self {
            Class::Compatible => "compatible",
            Class::Review => "review",
            Class::Breaking => "breaking",
        }
    }

    /// The CLI's exit code for this class: 0, 3 or 4.
    pub fn exit_code(self) -> u8 {
        match self {
            Class::Compatible => 0,
            Class::Review => 3,
            Class::Breaking => 4,
        }
    }
}

impl std::fmt::Display for Class {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One change: which field, its value before and after, and why it has its class.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// The class of this one change.
    pub class: Class,
    /// The field, as a path into the profile (`streaming`, `skills.<id>.input`, …).
    pub field: String,
    /// The value the lock (or the old profile) has.
    pub was: String,
    /// The value the new profile has.
    pub now: String,
    /// Why it matters (gateway-written).
    pub why: String,
}

impl std::fmt::Display for Finding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: {}: {} -> {} ({})",
            self.class, self.field, self.was, self.now, self.why
        )
    }
}

/// The class of a whole change (the worst of its findings) and the findings, in rule order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Verdict {
    /// The worst finding's class; compatible without findings.
    pub class: Class,
    /// Every finding.
    pub findings: Vec<Finding>,
}

impl Verdict {
    fn of(findings: Vec<Finding>) -> Verdict {
        Verdict {
            class: findings
                .iter()
                .map(|f| f.class)
                .max()
                .unwrap_or(Class::Compatible),
            findings,
        }
    }
}

fn finding(
    class: Class,
    field: impl Into<String>,
    was: impl Into<String>,
    now: impl Into<String>,
    why: impl Into<String>,
) -> Finding {
    Finding {
        class,
        field: field.into(),
        was: was.into(),
        now: now.into(),
        why: why.into(),
    }
}

/// Classifies `profile` against what `lock` says the workflow needs.
/// Without the integration's manifest, pinned streaming is taken as required.
pub fn check_against_lock(profile: &Profile, lock: &Lock) -> Verdict {
    check_against_lock_for(profile, lock, true)
}

/// [`check_against_lock`] for an integration whose `streaming` setting is known: losing pinned
/// streaming is breaking when `streaming_required`, else review (calls downgrade to SendMessage).
pub fn check_against_lock_for(profile: &Profile, lock: &Lock, streaming_required: bool) -> Verdict {
    let mut f = lock_findings(profile, lock, streaming_required);
    digest_note(&lock.card_digest, &profile.card_digest, &mut f);
    Verdict::of(f)
}

/// The verdict for an integration that has no profile it can use (fetch, validation, compile or
/// contract failed): breaking, with `reason`.
pub fn unusable_verdict(reason: &str) -> Verdict {
    Verdict::of(vec![finding(
        Class::Breaking,
        "usable",
        "true",
        "false",
        reason,
    )])
}

/// The verdict for an integration whose lockfile exists but cannot be read or parsed: breaking
/// (the workflow asked to be pinned, and nothing can be checked), the error on one line.
pub fn invalid_lock_verdict(error: &dyn std::fmt::Display) -> Verdict {
    let text = error.to_string();
    let one_line: Vec<&str> = text.lines().map(str::trim).collect();
    Verdict::of(vec![finding(
        Class::Breaking,
        "lockfile",
        "valid",
        "invalid",
        one_line.join(" "),
    )])
}

/// Classifies the change from `old` to `new`: against `lock` when given, else against what `old`
/// offered; then the changes the lock rules do not decide.
pub fn diff_profiles(old: &Profile, new: &Profile, lock: Option<&Lock>) -> Verdict {
    let implied = lock.is_none().then(|| implied_lock(old)).flatten();
    let mut f = match (lock, &implied) {
        (Some(l), _) | (None, Some(l)) => lock_findings(new, l, true),
        (None, None) if new.is_usable() => vec![finding(
            Class::Review,
            "usable",
            "false",
            "true",
            "the agent became usable",
        )],
        (None, None) => vec![unusable(new, false)],
    };
    if new.is_usable() {
        extras(old, new, lock.is_some(), &mut f);
    }
    digest_note(&old.card_digest, &new.card_digest, &mut f);
    Verdict::of(f)
}

fn unusable(p: &Profile, was_usable: bool) -> Finding {
    let reason = p
        .reason()
        .unwrap_or_else(|| "profile not usable".to_owned());
    finding(
        Class::Breaking,
        "usable",
        was_usable.to_string(),
        "false",
        reason,
    )
}

/// The rules against a lock; an unusable profile stops at its reason.
fn lock_findings(p: &Profile, l: &Lock, streaming_required: bool) -> Vec<Finding> {
    if !p.is_usable() {
        return vec![unusable(p, true)];
    }
    let mut f = Vec::new();
    interface_rule(p, &l.interface, &mut f);
    if l.requires.streaming && !p.streaming {
        f.push(if streaming_required {
            finding(
                Class::Breaking,
                "streaming",
                "true",
                "false",
                "no longer advertised, and the workflow requires it",
            )
        } else {
            finding(Class::Review, "streaming", "true", "false", STREAMING_LOST)
        });
    }
    for (id, want) in &l.requires.skills {
        skill_rules(id, want, p.skills.get(id), &mut f);
    }
    let gone: Vec<&str> = l
        .requires
        .extensions
        .iter()
        .filter(|e| !p.extensions.contains(e))
        .map(String::as_str)
        .collect();
    if !gone.is_empty() {
        f.push(finding(
            Class::Breaking,
            "extensions",
            render_list(&l.requires.extensions),
            render_list(&p.extensions),
            format!("no longer offered: {}", gone.join(", ")),
        ));
    }
    if p.agent_version != l.agent_version {
        f.push(finding(
            Class::Review,
            "agent_version",
            &l.agent_version,
            &p.agent_version,
            "agent version changed",
        ));
    }
    f
}

fn interface_rule(p: &Profile, pin: &BindingVersion, f: &mut Vec<Finding>) {
    let Some(chosen) = p.interface.as_ref().map(|i| i.binding_version()) else {
        return;
    };
    if &chosen == pin {
        return;
    }
    // The pinned binding at another protocol version (an agent moving 0.3 -> 1.0) still
    // carries what the workflow needs, but only when calls actually go over it: the chosen
    // interface (usable, or `lock_findings` would have stopped) must be that binding. The pinned
    // binding merely listed at another version in `offered` proves nothing: `offered` holds every
    // pair the client supports, so calls may go over another binding entirely.
    let (class, why) = if p.offered.contains(pin) {
        (
            Class::Review,
            format!("another interface is preferred; {pin} is still offered; re-run probes"),
        )
    } else if chosen.binding == pin.binding {
        (
            Class::Review,
            format!(
                "the agent's protocol version moved {} -> {}; the chosen interface is {chosen}; \
                 re-run probes",
                pin.version, chosen.version
            ),
        )
    } else {
        (Class::Breaking, format!("{pin} is no longer offered"))
    };
    f.push(finding(
        class,
        "interface",
        pin.to_string(),
        chosen.to_string(),
        why,
    ));
}

fn skill_rules(id: &str, want: &SkillNeed, have: Option<&SkillProfile>, f: &mut Vec<Finding>) {
    let Some(have) = have else {
        f.push(finding(
            Class::Breaking,
            format!("skills.{id}"),
            "offered",
            "absent",
            "removed, or hidden from this caller",
        ));
        return;
    };
    let refused: Vec<&str> = want
        .input
        .iter()
        .filter(|m| !media_type_accepted(m, &have.input))
        .map(String::as_str)
        .collect();
    if !refused.is_empty() {
        f.push(finding(
            Class::Breaking,
            format!("skills.{id}.input"),
            render_list(&want.input),
            render_list(&have.input),
            format!("no longer accepts {}", refused.join(", ")),
        ));
    }
    if !overlaps(&want.output, &have.output) {
        f.push(finding(
            Class::Breaking,
            format!("skills.{id}.output"),
            render_list(&want.output),
            render_list(&have.output),
            "none of the workflow's output modes is offered",
        ));
    }
    if !satisfiable(&have.security, &want.scopes) {
        f.push(finding(
            Class::Breaking,
            format!("skills.{id}.security"),
            render_list(&want.scopes),
            render_security(&have.security),
            format!(
                "every alternative needs a scope the integration does not hold: {}",
                missing_scopes(&have.security, &want.scopes).join(", ")
            ),
        ));
    }
}

/// The lock an old profile implies when there is no lockfile: all of it is needed, except
/// streaming (not known to be required) and extensions (not known to be activated).
fn implied_lock(old: &Profile) -> Option<Lock> {
    let iface = old.interface.as_ref().filter(|_| old.is_usable())?;
    let skills = old
        .skills
        .iter()
        .map(|(id, s)| {
            let need = SkillNeed {
                input: s.input.clone(),
                output: s.output.clone(),
                scopes: all_scopes(&s.security),
            };
            (id.clone(), need)
        })
        .collect();
    Some(Lock {
        agent: String::new(),
        pinned_at: chrono::DateTime::<chrono::Utc>::UNIX_EPOCH,
        card_digest: old.card_digest.clone(),
        agent_version: old.agent_version.clone(),
        interface: iface.binding_version(),
        requires: Requires {
            streaming: false,
            skills,
            extensions: Vec::new(),
        },
        verified: Default::default(),
    })
}

/// Old → new changes the lock rules did not report.
fn extras(old: &Profile, new: &Profile, locked: bool, f: &mut Vec<Finding>) {
    let reported: BTreeSet<String> = f.iter().map(|x| x.field.clone()).collect();
    let seen = |field: &str| reported.contains(field);
    flag_extras(old, new, &seen, f);
    // Reported even beside an `interface` finding: that one names (binding, version) only, and a
    // move (0.3 -> 1.0 is when a tenant can first appear) also changes where calls go and what
    // tenant they carry.
    if let (Some(o), Some(n)) = (&old.interface, &new.interface) {
        if o.url != n.url {
            f.push(finding(
                Class::Review,
                "interface.url",
                &o.url,
                &n.url,
                "calls go to another URL; re-run probes",
            ));
        }
        if o.tenant != n.tenant {
            let t = |t: &Option<String>| t.clone().unwrap_or_else(|| "none".into());
            f.push(finding(
                Class::Review,
                "interface.tenant",
                t(&o.tenant),
                t(&n.tenant),
                "calls carry another tenant",
            ));
        }
    }
    let ids: BTreeSet<&String> = old.skills.keys().chain(new.skills.keys()).collect();
    for id in ids {
        let field = format!("skills.{id}");
        match (old.skills.get(id), new.skills.get(id)) {
            (None, Some(_)) => f.push(finding(
                Class::Compatible,
                field,
                "absent",
                "offered",
                "new skill",
            )),
            (Some(_), None) if !seen(&field) => f.push(finding(
                Class::Compatible,
                field,
                "offered",
                "absent",
                "the workflow does not use it",
            )),
            (Some(o), Some(n)) => skill_extras(id, o, n, locked, &seen, f),
            _ => {}
        }
    }
    if old.extensions != new.extensions && !seen("extensions") {
        let removed = old.extensions.iter().any(|e| !new.extensions.contains(e));
        let (class, why) = if removed {
            (Class::Review, "an extension is no longer offered")
        } else {
            (Class::Compatible, "extensions added")
        };
        f.push(finding(
            class,
            "extensions",
            render_list(&old.extensions),
            render_list(&new.extensions),
            why,
        ));
    }
    display_extras(old, new, f);
}

fn flag_extras(old: &Profile, new: &Profile, seen: &dyn Fn(&str) -> bool, f: &mut Vec<Finding>) {
    let flags = [
        ("streaming", old.streaming, new.streaming, STREAMING_LOST),
        (
            "push",
            old.push,
            new.push,
            "push notifications no longer advertised",
        ),
    ];
    for (field, was, now, lost) in flags {
        if was == now || seen(field) {
            continue;
        }
        let (class, why) = if was {
            (Class::Review, lost)
        } else {
            (Class::Compatible, "now advertised")
        };
        f.push(finding(class, field, was.to_string(), now.to_string(), why));
    }
    if old.extended_card != new.extended_card {
        f.push(finding(
            Class::Compatible,
            "extended_card",
            old.extended_card.to_string(),
            new.extended_card.to_string(),
            "the profile is compiled from whichever card this caller sees",
        ));
    }
}

fn skill_extras(
    id: &str,
    o: &SkillProfile,
    n: &SkillProfile,
    locked: bool,
    seen: &dyn Fn(&str) -> bool,
    f: &mut Vec<Finding>,
) {
    let at = |k: &str| format!("skills.{id}.{k}");
    if o.input != n.input && !seen(&at("input")) {
        f.push(finding(
            Class::Compatible,
            at("input"),
            render_list(&o.input),
            render_list(&n.input),
            "still accepts what the workflow sends",
        ));
    }
    if o.output != n.output && !seen(&at("output")) {
        let dropped: Vec<&str> = o
            .output
            .iter()
            .filter(|m| !n.output.contains(m))
            .map(String::as_str)
            .collect();
        let (class, why) = if !locked && !dropped.is_empty() {
            (
                Class::Review,
                format!("no longer produces {}", dropped.join(", ")),
            )
        } else {
            (
                Class::Compatible,
                "still produces what the workflow reads".to_owned(),
            )
        };
        f.push(finding(
            class,
            at("output"),
            render_list(&o.output),
            render_list(&n.output),
            why,
        ));
    }
    if o.security != n.security && !seen(&at("security")) {
        f.push(finding(
            Class::Review,
            at("security"),
            render_security(&o.security),
            render_security(&n.security),
            "security requirements changed; the held scopes still satisfy one alternative",
        ));
    }
    if o.tags != n.tags {
        f.push(finding(
            Class::Compatible,
            at("tags"),
            render_list(&o.tags),
            render_list(&n.tags),
            "routing tags only",
        ));
    }
}

/// Provider-written text: always compatible (it never feeds a decision).
fn display_extras(old: &Profile, new: &Profile, f: &mut Vec<Finding>) {
    let text = |field: String, was: &str, now: &str| {
        (was != now).then(|| {
            finding(
                Class::Compatible,
                field,
                quote(was),
                quote(now),
                "display text only",
            )
        })
    };
    let (o, n) = (&old.display, &new.display);
    f.extend(text("name".into(), &o.name, &n.name));
    f.extend(text("description".into(), &o.description, &n.description));
    for (id, os) in &o.skills {
        let Some(ns) = n.skills.get(id) else { continue };
        f.extend(text(format!("skills.{id}.name"), &os.name, &ns.name));
        f.extend(text(
            format!("skills.{id}.description"),
            &os.description,
            &ns.description,
        ));
        if os.examples != ns.examples {
            f.push(finding(
                Class::Compatible,
                format!("skills.{id}.examples"),
                format!("{} examples", os.examples.len()),
                format!("{} examples", ns.examples.len()),
                "display text only",
            ));
        }
    }
}

/// When nothing else was found but the card is not the same: one compatible line saying so.
fn digest_note(was: &str, now: &str, f: &mut Vec<Finding>) {
    if f.is_empty() && was != now {
        f.push(finding(
            Class::Compatible,
            "card_digest",
            short_digest(was),
            short_digest(now),
            "the card changed; nothing the workflow needs did",
        ));
    }
}

fn short_digest(d: &str) -> String {
    match d.get(..19) {
        Some(head) if d.len() > 19 => format!("{head}…"),
        _ => d.to_owned(),
    }
}

/// Whether some entry of `a` matches some entry of `b`, a wildcard on either side included.
fn overlaps(a: &[String], b: &[String]) -> bool {
    a.iter().any(|m| media_type_accepted(m, b)) || b.iter().any(|m| media_type_accepted(m, a))
}

/// Whether some alternative of `security` needs only scopes in `held` (no requirement: yes).
pub(crate) fn satisfiable(security: &[SecurityAlternative], held: &[String]) -> bool {
    security.is_empty()
        || security
            .iter()
            .any(|alt| alt.values().flatten().all(|s| held.contains(s)))
}

/// The held scopes that satisfiable alternatives use, sorted.
pub(crate) fn used_scopes(security: &[SecurityAlternative], held: &[String]) -> Vec<String> {
    let used: BTreeSet<String> = security
        .iter()
        .filter(|alt| alt.values().flatten().all(|s| held.contains(s)))
        .flat_map(|alt| alt.values().flatten().cloned())
        .collect();
    used.into_iter().collect()
}

fn all_scopes(security: &[SecurityAlternative]) -> Vec<String> {
    let all: BTreeSet<String> = security
        .iter()
        .flat_map(|alt| alt.values().flatten().cloned())
        .collect();
    all.into_iter().collect()
}

fn missing_scopes(security: &[SecurityAlternative], held: &[String]) -> Vec<String> {
    all_scopes(security)
        .into_iter()
        .filter(|s| !held.contains(s))
        .collect()
}

/// `[a, b]`.
pub(crate) fn render_list(v: &[String]) -> String {
    format!("[{}]", v.join(", "))
}

/// `bearer[pricing.quote] | key[] + mtls[]`; `none` without requirements.
pub(crate) fn render_security(security: &[SecurityAlternative]) -> String {
    if security.is_empty() {
        return "none".into();
    }
    security
        .iter()
        .map(|alt| {
            alt.iter()
                .map(|(scheme, scopes)| format!("{scheme}{}", render_list(scopes)))
                .collect::<Vec<_>>()
                .join(" + ")
        })
        .collect::<Vec<_>>()
        .join(" | ")
}

/// Provider text as a short quoted value (sanitised already; cut to keep the line short).
fn quote(s: &str) -> String {
    const MAX: usize = 40;
    if s.chars().count() > MAX {
        let head: String = s.chars().take(MAX).collect();
        format!("{head:?}…")
    } else {
        format!("{s:?}")
    }
}

#[cfg(test)]
pub(crate) mod tests;
