//! The lockfile's JSON form (pure: bytes in, [`Lock`] out, and back).
//!
//! Parsing is strict, as for cards: one JSON document, no key twice in an object, no unknown or
//! missing field, and every value checked ([`Lock`]'s rules); each problem names the field's
//! JSON path. Writing is stable so a lockfile diffs well in review: fields in a fixed order, maps
//! and lists sorted, two-space indentation and a trailing newline.

use std::collections::BTreeMap;

use chrono::{DateTime, SecondsFormat, Utc};
use serde::{Deserialize, Serialize};

use super::{Lock, LockError, Requires, SkillNeed};
use crate::profile::{Binding, BindingVersion};

/// The whole file.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct WireLock {
    agent: String,
    pinned_at: String,
    card_digest: String,
    agent_version: String,
    interface: WireInterface,
    requires: WireRequires,
    verified: BTreeMap<String, String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct WireInterface {
    binding: String,
    version: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct WireRequires {
    streaming: bool,
    skills: BTreeMap<String, WireSkill>,
    extensions: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct WireSkill {
    input: Vec<String>,
    output: Vec<String>,
    scopes: Vec<String>,
}

/// Largest lockfile read, in bytes: a lock lists a handful of skills, so anything near this is
/// not a lockfile.
pub const MAX_LOCK_BYTES: usize = 1024 * 1024;

/// Parses a lockfile; `source_name` (a path, or `-`) prefixes every message.
pub fn parse(bytes: &[u8], source_name: &str) -> Result<Lock, LockError> {
    let json_err = |message: String| LockError::Json {
        source_name: source_name.to_owned(),
        message,
    };
    if bytes.len() > MAX_LOCK_BYTES {
        return Err(json_err(format!(
            "{} bytes is more than the {MAX_LOCK_BYTES} a lockfile may have",
            bytes.len()
        )));
    }
    let parsed = crate::card::wire::parse(bytes).map_err(|e| json_err(e.to_string()))?;
    if let Some(dup) = parsed.duplicates.first() {
        return Err(json_err(format!("{dup}: key appears more than once")));
    }
    let wire: WireLock = serde_path_to_error::deserialize(parsed.value).map_err(|e| {
        let path = e.path().to_string();
        let at = if path == "." {
            String::new()
        } else {
            format!("{path}: ")
        };
        LockError::Invalid {
            source_name: source_name.to_owned(),
            problems: vec![format!("{at}{}", e.inner())],
        }
    })?;
    let mut problems = Vec::new();
    let lock = from_wire(wire, &mut problems);
    if problems.is_empty() {
        Ok(lock)
    } else {
        Err(LockError::Invalid {
            source_name: source_name.to_owned(),
            problems,
        })
    }
}

/// The lockfile text of `lock`: stable field order, sorted lists, trailing newline.
pub fn to_json(lock: &Lock) -> String {
    let sorted = |v: &[String]| {
        let mut v = v.to_vec();
        v.sort();
        v.dedup();
        v
    };
    let wire = WireLock {
        agent: lock.agent.clone(),
        pinned_at: lock.pinned_at.to_rfc3339_opts(SecondsFormat::Secs, true),
        card_digest: lock.card_digest.clone(),
        agent_version: lock.agent_version.clone(),
        interface: WireInterface {
            binding: lock.interface.binding.as_str().to_owned(),
            version: lock.interface.version.clone(),
        },
        requires: WireRequires {
            streaming: lock.requires.streaming,
            skills: lock
                .requires
                .skills
                .iter()
                .map(|(id, s)| {
                    let w = WireSkill {
                        input: sorted(&s.input),
                        output: sorted(&s.output),
                        scopes: sorted(&s.scopes),
                    };
                    (id.clone(), w)
                })
                .collect(),
            extensions: sorted(&lock.requires.extensions),
        },
        verified: lock.verified.clone(),
    };
    // Plain structs, string maps and lists: serialising cannot fail.
    let mut text = serde_json::to_string_pretty(&wire).unwrap_or_default();
    text.push('\n');
    text
}

fn from_wire(w: WireLock, problems: &mut Vec<String>) -> Lock {
    match url::Url::parse(&w.agent) {
        Ok(u) if matches!(u.scheme(), "http" | "https") && u.host().is_some() => {}
        _ => problems.push(format!(
            "agent: {:?} is not an absolute http(s) URL",
            w.agent
        )),
    }
    let pinned_at = match DateTime::parse_from_rfc3339(&w.pinned_at) {
        Ok(t) => t.with_timezone(&Utc),
        Err(e) => {
            problems.push(format!(
                "pinned_at: {:?} is not an RFC 3339 time ({e})",
                w.pinned_at
            ));
            DateTime::<Utc>::UNIX_EPOCH
        }
    };
    if !is_digest(&w.card_digest) {
        problems.push(format!(
            "card_digest: {:?} is not sha256: followed by 64 lowercase hex digits",
            w.card_digest
        ));
    }
    if w.agent_version.trim().is_empty() {
        problems.push("agent_version: must not be empty".into());
    }
    let binding = Binding::from_wire(&w.interface.binding).unwrap_or_else(|| {
        problems.push(format!(
            "interface.binding: {:?} is not \"JSONRPC\", \"HTTP+JSON\" or \"GRPC\"",
            w.interface.binding
        ));
        Binding::JsonRpc
    });
    if crate::types::ProtocolVersion::parse(&w.interface.version).is_err() {
        problems.push(format!(
            "interface.version: {:?} is not Major.Minor (e.g. \"1.0\")",
            w.interface.version
        ));
    }
    for (k, v) in &w.verified {
        if k.is_empty() || v.trim().is_empty() {
            problems.push(format!(
                "verified.{k}: claims and their evidence must not be empty"
            ));
        }
    }
    Lock {
        agent: w.agent,
        pinned_at,
        card_digest: w.card_digest,
        agent_version: w.agent_version,
        interface: BindingVersion {
            binding,
            version: w.interface.version,
        },
        requires: requires(w.requires, problems),
        verified: w.verified,
    }
}

fn requires(w: WireRequires, problems: &mut Vec<String>) -> Requires {
    if w.skills.is_empty() {
        problems.push("requires.skills: must name at least one skill".into());
    }
    let mut skills = BTreeMap::new();
    for (id, s) in w.skills {
        let at = format!("requires.skills.{id}");
        if id.is_empty() {
            problems.push(format!("{at}: a skill id must not be empty"));
        }
        let need = SkillNeed {
            input: list(
                s.input,
                &format!("{at}.input"),
                true,
                is_media_type,
                problems,
            ),
            output: list(
                s.output,
                &format!("{at}.output"),
                true,
                is_media_type,
                problems,
            ),
            scopes: list(s.scopes, &format!("{at}.scopes"), false, is_scope, problems),
        };
        skills.insert(id, need);
    }
    let extensions = list(
        w.extensions,
        "requires.extensions",
        false,
        |e| url::Url::parse(e).is_ok(),
        problems,
    );
    Requires {
        streaming: w.streaming,
        skills,
        extensions,
    }
}

/// A list of distinct, well-formed entries (`non_empty`: at least one), sorted.
fn list(
    mut v: Vec<String>,
    at: &str,
    non_empty: bool,
    ok: impl Fn(&str) -> bool,
    problems: &mut Vec<String>,
) -> Vec<String> {
    if non_empty && v.is_empty() {
        problems.push(format!("{at}: must list at least one entry"));
    }
    for (i, e) in v.iter().enumerate() {
        if !ok(e) {
            problems.push(format!("{at}[{i}]: {e:?} is not well-formed"));
        } else if v.get(..i).is_some_and(|before| before.contains(e)) {
            problems.push(format!("{at}[{i}]: {e:?} is listed twice"));
        }
    }
    v.sort();
    v.dedup();
    v
}

fn is_digest(s: &str) -> bool {
    s.strip_prefix("sha256:").is_some_and(|h| {
        h.len() == 64
            && h.bytes()
                .all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(&c))
    })
}

/// `type/subtype` (or a wildcard), token characters only.
fn is_media_type(s: &str) -> bool {
    let token = |t: &str| {
        !t.is_empty()
            && t.bytes()
                .all(|c| c.is_ascii_alphanumeric() || b"!#$&-^_.+*".contains(&c))
    };
    matches!(s.split_once('/'), Some((t, sub)) if token(t) && token(sub))
}

fn is_scope(s: &str) -> bool {
    !s.is_empty() && s.chars().all(|c| c.is_ascii_graphic())
}

#[cfg(test)]
mod tests {
    use super::*;

    const SEED: &str = r#"{
  "agent": "https://pricing.partner.example/.well-known/agent-card.json",
  "pinned_at": "2026-10-02T08:30:00Z",
  "card_digest": "sha256:6f1c0000000000000000000000000000000000000000000000000000000000e2",
  "agent_version": "3.2.0",
  "interface": {"binding": "JSONRPC", "version": "1.0"},
  "requires": {
    "streaming": true,
    "skills": {
      "itinerary-pricing": {
        "input":  ["application/json"],
        "output": ["application/json"],
        "scopes": ["pricing.quote"]
      }
    },
    "extensions": []
  },
  "verified": {"streaming": "probe ok 2026-10-02", "itinerary-pricing": "probe ok 2026-10-02"}
}"#;

    fn problems(text: &str) -> Vec<String> {
        match parse(text.as_bytes(), "t.json") {
            Err(LockError::Invalid { problems, .. }) => problems,
            other => panic!("expected Invalid, got {other:?}"),
        }
    }

    #[test]
    fn the_seed_example_parses() {
        let l = parse(SEED.as_bytes(), "seed.json").unwrap();
        assert_eq!(l.agent_version, "3.2.0");
        assert_eq!(l.interface.binding, Binding::JsonRpc);
        assert!(l.requires.streaming);
        let s = &l.requires.skills["itinerary-pricing"];
        assert_eq!(s.input, ["application/json"]);
        assert_eq!(s.scopes, ["pricing.quote"]);
        assert_eq!(l.verified.len(), 2);
        assert_eq!(l.pinned_at.to_rfc3339(), "2026-10-02T08:30:00+00:00");
    }

    #[test]
    fn writing_is_stable_sorted_and_ends_with_a_newline() {
        let mut l = parse(SEED.as_bytes(), "seed.json").unwrap();
        let s = l.requires.skills.get_mut("itinerary-pricing").unwrap();
        s.input = vec!["text/plain".into(), "application/json".into()];
        let text = to_json(&l);
        assert!(text.ends_with("}\n") && !text.ends_with("\n\n"), "{text}");
        let keys: Vec<&str> = text
            .lines()
            .filter(|l| l.starts_with("  \""))
            .map(|l| l.trim_start().split('"').nth(1).unwrap())
            .collect();
        assert_eq!(
            keys,
            [
                "agent",
                "pinned_at",
                "card_digest",
                "agent_version",
                "interface",
                "requires",
                "verified"
            ]
        );
        assert!(
            text.contains(
                "\"input\": [\n          \"application/json\",\n          \"text/plain\"\n        ]"
            ),
            "{text}"
        );
        // Round trip, and writing twice gives the same bytes.
        let back = parse(text.as_bytes(), "x").unwrap();
        assert_eq!(to_json(&back), text);
        assert_eq!(
            back.requires.skills["itinerary-pricing"].input[0],
            "application/json"
        );
    }

    #[test]
    fn unknown_missing_and_mistyped_fields_name_their_path() {
        let p = problems(&SEED.replace("\"scopes\"", "\"scope\""));
        assert_eq!(p.len(), 1);
        assert!(
            p[0].starts_with("requires.skills.itinerary-pricing.scope: unknown field `scope`"),
            "{p:?}"
        );
        let p = problems(&SEED.replace("\"agent_version\": \"3.2.0\",", ""));
        assert!(p[0].contains("missing field `agent_version`"), "{p:?}");
        let p = problems(&SEED.replace("\"streaming\": true", "\"streaming\": \"yes\""));
        assert!(
            p[0].starts_with("requires.streaming: invalid type"),
            "{p:?}"
        );
        let p = problems(&SEED.replace("\"verified\"", "\"evidence\""));
        assert!(p[0].contains("unknown field `evidence`"), "{p:?}");
    }

    #[test]
    fn every_bad_value_is_reported_with_its_field() {
        let bad = SEED
            .replace("https://pricing.partner.example/", "ftp://x/")
            .replace("2026-10-02T08:30:00Z", "yesterday")
            .replace("sha256:6f1c", "md5:6f1c")
            .replace("\"3.2.0\"", "\" \"")
            .replace("\"JSONRPC\"", "\"SOAP\"")
            .replace("\"version\": \"1.0\"", "\"version\": \"1\"")
            .replace(
                "\"input\":  [\"application/json\"]",
                "\"input\": [\"application/json\", \"json\", \"application/json\"]",
            )
            .replace("\"output\": [\"application/json\"]", "\"output\": []")
            .replace("\"extensions\": []", "\"extensions\": [\"not a uri\"]");
        let p = problems(&bad);
        let all = p.join("\n");
        for needle in [
            "agent: \"ftp://x/.well-known/agent-card.json\" is not an absolute http(s) URL",
            "pinned_at: \"yesterday\" is not an RFC 3339 time",
            "card_digest: \"md5:6f1c",
            "agent_version: must not be empty",
            "interface.binding: \"SOAP\" is not",
            "interface.version: \"1\" is not Major.Minor",
            "requires.skills.itinerary-pricing.input[1]: \"json\" is not well-formed",
            "requires.skills.itinerary-pricing.input[2]: \"application/json\" is listed twice",
            "requires.skills.itinerary-pricing.output: must list at least one entry",
            "requires.extensions[0]: \"not a uri\" is not well-formed",
        ] {
            assert!(all.contains(needle), "missing {needle:?} in:\n{all}");
        }
        assert_eq!(p.len(), 10, "{all}");
        let p = problems(&SEED.replace(
            "\"skills\": {\n      \"itinerary-pricing\"",
            "\"skills\": {}, \"x\": {\n      \"itinerary-pricing\"",
        ));
        assert!(p[0].contains("unknown field `x`"), "{p:?}");
    }

    #[test]
    fn no_skills_is_invalid() {
        let text = SEED.replace(
            r#""itinerary-pricing": {
        "input":  ["application/json"],
        "output": ["application/json"],
        "scopes": ["pricing.quote"]
      }"#,
            "",
        );
        assert_eq!(
            problems(&text),
            ["requires.skills: must name at least one skill"]
        );
    }

    #[test]
    fn syntax_errors_duplicates_and_size() {
        let e = parse(b"{\"agent\": ", "a.json").unwrap_err();
        assert!(matches!(e, LockError::Json { .. }), "{e}");
        assert!(e.to_string().starts_with("a.json: "), "{e}");
        let dup = SEED.replace(
            "\"agent_version\": \"3.2.0\",",
            "\"agent_version\": \"3.2.0\", \"agent_version\": \"9\",",
        );
        let e = parse(dup.as_bytes(), "a.json").unwrap_err().to_string();
        assert!(
            e.contains("agent_version: key appears more than once"),
            "{e}"
        );
        let e = parse(format!("{SEED} {{}}").as_bytes(), "a.json").unwrap_err();
        assert_eq!(e.kind(), "json");
        let big = vec![b' '; MAX_LOCK_BYTES + 1];
        assert_eq!(parse(&big, "a.json").unwrap_err().kind(), "json");
        let e = parse(b"[]", "a.json").unwrap_err();
        assert_eq!(e.kind(), "invalid", "{e}");
    }
}
