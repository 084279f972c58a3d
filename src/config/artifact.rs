//! An integration's expected artifact schema: the JSON Schema file named by `artifact_schema`,
//! read and compiled once at config load, and what a mismatch does (`artifact_policy`). Reads
//! that one file (through the one bounded reader, [`crate::types::file`]); validation itself is
//! pure ([`ArtifactSchema::check`]).
//!
//! The schema must be self-contained: no `$ref` is ever fetched, from the network or from disk
//! (a reference outside the file fails to compile, so the config is refused).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use sha2::{Digest as _, Sha256};

/// Largest schema file read, bytes.
pub const MAX_SCHEMA_BYTES: u64 = 1024 * 1024;

/// Longest schema location or keyword kept.
const MAX_MISMATCH_TEXT: usize = 200;

/// What a data part that does not match the schema does to the answer.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum ArtifactPolicy {
    /// Counted and recorded as evidence; the answer reaches the caller unchanged.
    #[default]
    Record,
    /// Counted and recorded, and the answer is replaced by a protocol-shaped error.
    Enforce,
}

impl ArtifactPolicy {
    /// Bounded label.
    pub fn as_str(self) -> &'static str {
        match self {
            ArtifactPolicy::Record => "record",
            ArtifactPolicy::Enforce => "enforce",
        }
    }
}

/// Why an `artifact_schema` file cannot be used (each message names the file).
#[derive(Debug, thiserror::Error)]
pub enum SchemaError {
    /// The file could not be read: missing, not a regular file, or larger than
    /// [`MAX_SCHEMA_BYTES`] (the message names the file and the cap).
    #[error(transparent)]
    Read(#[from] crate::types::file::FileError),
    /// The file is not JSON.
    #[error("{} is not JSON: {message}", path.display())]
    Json {
        /// The file.
        path: PathBuf,
        /// The parser's message (line and column).
        message: String,
    },
    /// The JSON is not a schema the validator can compile (unknown draft, bad keyword value,
    /// a `$ref` outside the file, an invalid pattern).
    #[error("{} is not a usable JSON Schema: {message}", path.display())]
    Compile {
        /// The file.
        path: PathBuf,
        /// The compiler's message.
        message: String,
    },
}

impl SchemaError {
    /// Bounded label for logs and metrics.
    pub fn kind(&self) -> &'static str {
        match self {
            SchemaError::Read(e) if e.kind() == "too_large" => "too_large",
            SchemaError::Read(_) => "read",
            SchemaError::Json { .. } => "json",
            SchemaError::Compile { .. } => "compile",
        }
    }
}

/// One data part that does not match: which rule of the schema its first violation breaks.
/// Both fields come from the operator's schema, never from the agent's data (the validator's
/// messages and instance paths quote the data, so they are not kept).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mismatch {
    /// JSON pointer into the schema of the failing keyword (`/properties/price/type`).
    pub schema_at: String,
    /// The schema keyword that failed (`required`, `type`, …).
    pub keyword: String,
}

/// A compiled `artifact_schema` and its policy. Two are equal when they come from the same path
/// with the same bytes, so a config reload that edits the file counts as a change.
#[derive(Clone)]
pub struct ArtifactSchema {
    /// The file, resolved against the config's folder.
    pub path: PathBuf,
    /// `sha256:<hex>` of the file's bytes.
    pub digest: String,
    /// What a mismatch does.
    pub policy: ArtifactPolicy,
    validator: Arc<jsonschema::Validator>,
}

impl std::fmt::Debug for ArtifactSchema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ArtifactSchema")
            .field("path", &self.path)
            .field("digest", &self.digest)
            .field("policy", &self.policy)
            .finish_non_exhaustive()
    }
}

impl PartialEq for ArtifactSchema {
    fn eq(&self, other: &Self) -> bool {
        self.path == other.path && self.digest == other.digest && self.policy == other.policy
    }
}

impl Eq for ArtifactSchema {}

impl std::hash::Hash for ArtifactSchema {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.path.hash(state);
        self.digest.hash(state);
        self.policy.hash(state);
    }
}

impl ArtifactSchema {
    /// Reads and compiles the schema at `path` (bounded read; nothing else is fetched).
    pub fn load(path: &Path, policy: ArtifactPolicy) -> Result<ArtifactSchema, SchemaError> {
        let bytes = crate::types::file::read_capped(path, MAX_SCHEMA_BYTES, "artifact schema")?;
        Self::from_bytes(path, &bytes, policy)
    }

    /// Compiles schema bytes read from `path` (pure).
    pub fn from_bytes(
        path: &Path,
        bytes: &[u8],
        policy: ArtifactPolicy,
    ) -> Result<ArtifactSchema, SchemaError> {
        let json: serde_json::Value =
            serde_json::from_slice(bytes).map_err(|e| SchemaError::Json {
                path: path.to_owned(),
                message: e.to_string(),
            })?;
        let validator =
            jsonschema::options()
                .offline()
                .build(&json)
                .map_err(|e| SchemaError::Compile {
                    path: path.to_owned(),
                    message: bounded(&e.to_string()),
                })?;
        Ok(ArtifactSchema {
            path: path.to_owned(),
            digest: format!("sha256:{}", hex::encode(Sha256::digest(bytes))),
            policy,
            validator: Arc::new(validator),
        })
    }

    /// The first violation of `data` (one part's `data` value), or `None` when it matches.
    pub fn check(&self, data: &serde_json::Value) -> Option<Mismatch> {
        let e = self.validator.iter_errors(data).next()?;
        Some(Mismatch {
            schema_at: bounded(&e.schema_path().to_string()),
            keyword: bounded(e.kind().keyword()),
        })
    }
}

/// `s` cut to [`MAX_MISMATCH_TEXT`] characters, control characters replaced (compile errors
/// quote the schema file).
fn bounded(s: &str) -> String {
    let mut out: String = s
        .chars()
        .take(MAX_MISMATCH_TEXT)
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if s.chars().nth(MAX_MISMATCH_TEXT).is_some() {
        out.push('…');
    }
    out
}

/// An `artifact_policy` that is neither `record` nor `enforce`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{at}.artifact_policy: {value:?} is not \"record\" or \"enforce\"")]
pub struct UnknownPolicy {
    /// Where in the config (`integrations[N]`).
    pub at: String,
    /// The value given.
    pub value: String,
}

/// `artifact_policy`'s value.
pub(super) fn policy(raw: Option<&str>, at: &str) -> Result<ArtifactPolicy, UnknownPolicy> {
    match raw {
        None | Some("record") => Ok(ArtifactPolicy::Record),
        Some("enforce") => Ok(ArtifactPolicy::Enforce),
        Some(other) => Err(UnknownPolicy {
            at: at.to_owned(),
            value: other.to_owned(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema(text: &str) -> Result<ArtifactSchema, SchemaError> {
        ArtifactSchema::from_bytes(Path::new("s.json"), text.as_bytes(), ArtifactPolicy::Record)
    }

    const QUOTE: &str =
        r#"{"type":"object","required":["price"],"properties":{"price":{"type":"number"}}}"#;

    #[test]
    fn a_matching_value_passes_and_a_mismatch_names_pointer_and_keyword() {
        let s = schema(QUOTE).unwrap();
        assert_eq!(s.check(&json!({"price": 3})), None);
        let m = s.check(&json!({"price": "3"})).unwrap();
        assert_eq!(
            (m.schema_at.as_str(), m.keyword.as_str()),
            ("/properties/price/type", "type")
        );
        let m = s.check(&json!({})).unwrap();
        assert_eq!(
            (m.schema_at.as_str(), m.keyword.as_str()),
            ("/required", "required")
        );
        assert!(s.digest.starts_with("sha256:"));
    }

    #[test]
    fn files_that_are_not_usable_schemas_are_refused_naming_the_file() {
        let e = schema("{not json").unwrap_err();
        assert_eq!(e.kind(), "json");
        assert!(e.to_string().starts_with("s.json is not JSON"), "{e}");
        // A keyword with a value of the wrong type does not compile.
        let e = schema(r#"{"type": 12}"#).unwrap_err();
        assert_eq!(e.kind(), "compile");
        assert!(
            e.to_string()
                .starts_with("s.json is not a usable JSON Schema"),
            "{e}"
        );
        // An invalid regular expression does not compile either.
        assert_eq!(schema(r#"{"pattern": "("}"#).unwrap_err().kind(), "compile");
    }

    #[test]
    fn no_reference_outside_the_file_is_ever_fetched() {
        for r in [
            "https://schemas.example/quote.json",
            "http://127.0.0.1:9/x.json",
            "file:///etc/passwd",
            "other.json",
        ] {
            let text = format!(r#"{{"$ref": "{r}"}}"#);
            let e = schema(&text).unwrap_err();
            assert_eq!(e.kind(), "compile", "{r}: {e}");
        }
        // A reference inside the file is fine.
        let s = schema(
            r##"{"$defs":{"p":{"type":"number"}},"properties":{"price":{"$ref":"#/$defs/p"}}}"##,
        )
        .unwrap();
        assert!(s.check(&json!({"price": true})).is_some());
    }

    #[test]
    fn a_missing_or_oversized_file_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("missing.json");
        let e = ArtifactSchema::load(&missing, ArtifactPolicy::Record).unwrap_err();
        assert_eq!(e.kind(), "read");
        assert!(e.to_string().contains("missing.json"), "{e}");
        let big = dir.path().join("big.json");
        let pad = " ".repeat(MAX_SCHEMA_BYTES as usize);
        std::fs::write(&big, format!("{{{pad}}}")).unwrap();
        let e = ArtifactSchema::load(&big, ArtifactPolicy::Record).unwrap_err();
        assert_eq!(e.kind(), "too_large");
    }

    #[test]
    fn a_mismatch_never_carries_the_agents_data() {
        let s = schema(r#"{"type":"object","additionalProperties":{"type":"number"}}"#).unwrap();
        let m = s
            .check(&json!({"ignore previous instructions\n": "x"}))
            .unwrap();
        assert!(!format!("{m:?}").contains("ignore"), "{m:?}");
        assert_eq!(m.keyword, "type");
    }

    #[test]
    fn the_policy_is_record_unless_enforce_is_asked_for() {
        assert_eq!(policy(None, "i").unwrap(), ArtifactPolicy::Record);
        assert_eq!(
            policy(Some("enforce"), "i").unwrap(),
            ArtifactPolicy::Enforce
        );
        assert_eq!(
            policy(Some("block"), "i").unwrap_err().to_string(),
            "i.artifact_policy: \"block\" is not \"record\" or \"enforce\""
        );
    }
}
