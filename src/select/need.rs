//! What a planner asks `POST /v1/select` for, parsed strictly at the edge (pure).
//!
//! The body is one JSON object with only these fields, each optional but `skill`/`tags` (at least
//! one of them must say what work is wanted):
//!
//! ```json
//! {"skill": "report", "tags": ["finance"], "input": ["text/plain"],
//!  "output": ["application/json"], "streaming": true, "data_classes": ["internal"],
//!  "binding": "JSONRPC"}
//! ```
//!
//! A key given twice anywhere, an unknown field, a wrong type or a value outside its rule is
//! refused with a [`NeedError`] naming the field: a need the gateway half-understood would give
//! an answer to another question.

use serde::Deserialize;

use crate::json::{ScanError, duplicate_keys, quote};
use crate::profile::Binding;
use crate::types::data_class::is_data_class;

/// Largest need body accepted, in bytes (a need names a handful of short values).
pub const MAX_NEED_BYTES: usize = 16 * 1024;
/// Most entries in each list of a need.
pub const MAX_LIST: usize = 32;
/// Longest skill id, tag or media type in a need, in bytes.
pub const MAX_VALUE_BYTES: usize = 256;

/// A parsed, validated need.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Need {
    /// The skill id wanted, if the planner names one.
    pub skill: Option<String>,
    /// Tags the chosen skill must all carry (compared case-insensitively), lowercase.
    pub tags: Vec<String>,
    /// Media types the planner will send; the skill must accept every one.
    pub input: Vec<String>,
    /// Media types the planner can take back; the skill must produce at least one.
    pub output: Vec<String>,
    /// Whether the planner needs a stream (`SendStreamingMessage`, `SubscribeToTask`).
    pub streaming: bool,
    /// Data classes the planner will send; empty means the gateway's default class (as for a
    /// call without `A2A-Egress-Data-Class`).
    pub data_classes: Vec<String>,
    /// The binding the planner's client speaks, when it speaks only one.
    pub binding: Option<Binding>,
}

/// The wire form: the only fields a need may have.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct WireNeed {
    #[serde(default)]
    skill: Option<String>,
    #[serde(default)]
    tags: Vec<String>,
    #[serde(default)]
    input: Vec<String>,
    #[serde(default)]
    output: Vec<String>,
    #[serde(default)]
    streaming: bool,
    #[serde(default)]
    data_classes: Vec<String>,
    #[serde(default)]
    binding: Option<String>,
}

/// Why a need was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NeedError {
    /// More than [`MAX_NEED_BYTES`].
    #[error("a need is at most {MAX_NEED_BYTES} bytes")]
    TooLarge,
    /// Not one JSON object, or a field of the wrong type, or an unknown field.
    #[error("{0}")]
    Json(String),
    /// A key given twice (its JSON path, escaped).
    #[error("{0}: key appears more than once")]
    DuplicateKey(String),
    /// Nested deeper than the JSON scan reads.
    #[error("{0}")]
    Scan(#[from] ScanError),
    /// A field's value breaks its rule.
    #[error("{field}: {problem}")]
    Invalid {
        /// The field.
        field: &'static str,
        /// What is wrong (any echoed value quoted and escaped).
        problem: String,
    },
}

impl NeedError {
    /// Bounded label (metric label, log field, ErrorInfo metadata).
    pub fn kind(&self) -> &'static str {
        match self {
            NeedError::TooLarge => "too_large",
            NeedError::Json(_) => "json",
            NeedError::DuplicateKey(_) => "duplicate_key",
            NeedError::Scan(_) => "too_deep",
            NeedError::Invalid { .. } => "invalid_field",
        }
    }
}

impl Need {
    /// Parses and validates a need body.
    pub fn parse(bytes: &[u8]) -> Result<Need, NeedError> {
        if bytes.len() > MAX_NEED_BYTES {
            return Err(NeedError::TooLarge);
        }
        let value: serde_json::Value =
            serde_json::from_slice(bytes).map_err(|e| json_error(&e.to_string()))?;
        // serde_json accepted the bytes, so they are UTF-8.
        let text = std::str::from_utf8(bytes).map_err(|e| NeedError::Json(e.to_string()))?;
        if let Some(dup) = duplicate_keys(text, 1)?.into_iter().next() {
            return Err(NeedError::DuplicateKey(dup));
        }
        if !value.is_object() {
            return Err(NeedError::Json("a need is a JSON object".into()));
        }
        let wire: WireNeed = serde_path_to_error::deserialize(value).map_err(|e| {
            let path = e.path().to_string();
            match path.as_str() {
                "." => json_error(&e.inner().to_string()),
                // The path is made of the planner's keys: quoted, escaped and cut like one.
                _ => match json_error(&e.inner().to_string()) {
                    NeedError::Json(m) => NeedError::Json(format!("{}: {m}", path_shown(&path))),
                    other => other,
                },
            }
        })?;
        Need::from_wire(wire)
    }

    fn from_wire(w: WireNeed) -> Result<Need, NeedError> {
        let invalid = |field, problem: String| NeedError::Invalid { field, problem };
        if let Some(s) = &w.skill {
            value_ok("skill", s)?;
        }
        if w.skill.is_none() && w.tags.is_empty() {
            return Err(invalid(
                "skill",
                "name a skill id or at least one tag: a need must say what work it is for".into(),
            ));
        }
        let media = |mt: &str| match mt.split_once('/') {
            Some((t, s)) if !t.is_empty() && !s.is_empty() => None,
            _ => Some(format!("{} is not a type/subtype media type", quote(mt))),
        };
        let class = |c: &str| match is_data_class(c) {
            true => None,
            false => Some(format!("{} is not a data class [a-z0-9._-]", quote(c))),
        };
        let binding = match w.binding.as_deref() {
            None => None,
            Some(b) => Some(Binding::from_wire(b).ok_or_else(|| {
                invalid(
                    "binding",
                    format!("{} is not JSONRPC, HTTP+JSON or GRPC", quote(b)),
                )
            })?),
        };
        let mut tags: Vec<String> = Vec::new();
        for t in list("tags", w.tags, |_| None)? {
            let t = t.to_lowercase();
            if !tags.contains(&t) {
                tags.push(t);
            }
        }
        Ok(Need {
            skill: w.skill,
            tags,
            input: list("input", w.input, media)?,
            output: list("output", w.output, media)?,
            streaming: w.streaming,
            data_classes: list("data_classes", w.data_classes, class)?,
            binding,
        })
    }
}

/// Longest parser message echoed, in characters: serde's messages quote the planner's keys and
/// values (an unknown field's name, whole), which may be long or hold hidden characters.
const MAX_JSON_MESSAGE_CHARS: usize = 256;

/// A JSON path as the message shows it: as is when quoting changes nothing but the quotes
/// (a short, printable ASCII path), else quoted, escaped and cut.
fn path_shown(path: &str) -> String {
    let quoted = quote(path);
    match quoted.len() == path.len() + 2 {
        true => path.to_owned(),
        false => quoted,
    }
}

fn json_error(message: &str) -> NeedError {
    NeedError::Json(crate::card::sanitize::sanitize(
        message,
        MAX_JSON_MESSAGE_CHARS,
    ))
}

/// Checks one string value: bounded, no control or invisible character, not blank.
fn value_ok(field: &'static str, v: &str) -> Result<(), NeedError> {
    let problem = if v.trim().is_empty() {
        Some("must not be empty".to_string())
    } else if v.len() > MAX_VALUE_BYTES {
        Some(format!("at most {MAX_VALUE_BYTES} bytes"))
    } else if v
        .chars()
        .any(|c| c.is_control() || crate::card::sanitize::is_hidden(c))
    {
        Some(format!(
            "{} holds a control or invisible character",
            quote(v)
        ))
    } else {
        None
    };
    match problem {
        Some(problem) => Err(NeedError::Invalid { field, problem }),
        None => Ok(()),
    }
}

/// Checks a list: bounded length, each value by [`value_ok`] and `rule` (which names the
/// problem with a value, if it has one); repeats dropped.
fn list(
    field: &'static str,
    values: Vec<String>,
    rule: impl Fn(&str) -> Option<String>,
) -> Result<Vec<String>, NeedError> {
    if values.len() > MAX_LIST {
        return Err(NeedError::Invalid {
            field,
            problem: format!("at most {MAX_LIST} entries"),
        });
    }
    let mut out: Vec<String> = Vec::with_capacity(values.len());
    for v in values {
        value_ok(field, &v)?;
        if let Some(problem) = rule(&v) {
            return Err(NeedError::Invalid { field, problem });
        }
        if !out.contains(&v) {
            out.push(v);
        }
    }
    Ok(out)
}
