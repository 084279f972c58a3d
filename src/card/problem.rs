//! What card validation reports (pure, no I/O): each problem that makes a card invalid, named by
//! the JSON path of its field, the warnings about a card that is nevertheless valid, and the size
//! limits the rules apply. Its own file so the rules ([`super::rules`]) and their driver
//! ([`super::validate`]) both use it without using each other.

/// Longest identifier, version, scope, tenant or media type accepted, in bytes.
pub const MAX_ID_BYTES: usize = 256;
/// Longest URL or URI accepted, in bytes.
pub const MAX_URL_BYTES: usize = 2048;

/// One problem that makes a card invalid; the message starts with the JSON path of the field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CardError {
    /// Larger than `client.max_card_bytes` (refused before parsing).
    #[error(
        "$: card is larger than the {limit}-byte limit (client.max_card_bytes); {size} bytes or more"
    )]
    TooLarge {
        /// Bytes seen (at least this many).
        size: usize,
        /// The configured limit.
        limit: usize,
    },
    /// Not one valid JSON document.
    #[error("$: not valid JSON: {message}")]
    Json {
        /// serde_json's message, with line and column.
        message: String,
    },
    /// The same key appears twice in one object.
    #[error("{path}: duplicate key in a JSON object")]
    DuplicateKey {
        /// Path of the duplicated member.
        path: String,
    },
    /// An A2A 0.3 card that the pinned 0.3 JSON Schema refuses.
    #[error("{path}: A2A 0.3 card refused by the 0.3 schema: {message}")]
    Schema03 {
        /// Path of the offending value.
        path: String,
        /// The schema's message (masked: it quotes no card value).
        message: String,
    },
    /// A REQUIRED field is absent or `null`.
    #[error("{path}: required field is missing")]
    Missing {
        /// Path of the missing field.
        path: String,
    },
    /// A field is spelt with its proto (snake_case) name instead of its JSON name.
    #[error(
        "{path}: field is missing (found the proto field name `{proto}`; A2A JSON uses lowerCamelCase)"
    )]
    ProtoName {
        /// Path of the missing field (its JSON name).
        path: String,
        /// The snake_case key found instead.
        proto: String,
    },
    /// A field has the wrong JSON type.
    #[error("{path}: expected {expected}, found {found}")]
    WrongType {
        /// Path of the field.
        path: String,
        /// The JSON type the proto requires.
        expected: &'static str,
        /// The JSON type found.
        found: &'static str,
    },
    /// A REQUIRED string is empty or a REQUIRED repeated field has no element.
    #[error("{path}: must not be empty")]
    Empty {
        /// Path of the field.
        path: String,
    },
    /// An identifier, media type or URL is over its length limit.
    #[error("{path}: {len} bytes, over the {limit}-byte limit")]
    TooLong {
        /// Path of the field.
        path: String,
        /// Its length in bytes.
        len: usize,
        /// The limit.
        limit: usize,
    },
    /// An identifier or media type contains characters it must not.
    #[error("{path}: {value} contains {what}")]
    BadChars {
        /// Path of the field.
        path: String,
        /// The value, quoted and escaped.
        value: String,
        /// What was found.
        what: &'static str,
    },
    /// A URL is malformed or breaks the URL rules.
    #[error("{path}: {value}: {reason}")]
    BadUrl {
        /// Path of the field.
        path: String,
        /// The URL, quoted and escaped.
        value: String,
        /// Which rule it breaks.
        reason: String,
    },
    /// An interface's `tenant` is not one path-safe URL segment.
    #[error("{path}: {value} is not a path-safe tenant: {reason}")]
    BadTenant {
        /// Path of the field.
        path: String,
        /// The value, quoted and escaped.
        value: String,
        /// Which rule it breaks.
        reason: &'static str,
    },
    /// A protocol version is not `Major.Minor`.
    #[error("{path}: {value} is not a Major.Minor protocol version (e.g. \"1.0\")")]
    BadProtocolVersion {
        /// Path of the field.
        path: String,
        /// The value, quoted and escaped.
        value: String,
    },
    /// A closed enum has a value outside its set.
    #[error("{path}: {value} is not one of {allowed}")]
    UnknownEnum {
        /// Path of the field.
        path: String,
        /// The value, quoted and escaped.
        value: String,
        /// The allowed values.
        allowed: &'static str,
    },
    /// A oneof has no member or more than one.
    #[error("{path}: must have exactly one of {}; found {}", allowed.join(", "), if found.is_empty() { "none".to_string() } else { found.join(", ") })]
    OneOf {
        /// Path of the oneof's object.
        path: String,
        /// The known members found.
        found: Vec<String>,
        /// The members allowed.
        allowed: &'static [&'static str],
    },
    /// An object that admits only known members has another one.
    #[error("{path}: unknown member (only {allowed} is allowed here)")]
    UnknownMember {
        /// Path of the unknown member.
        path: String,
        /// The members allowed.
        allowed: &'static str,
    },
    /// Two skills share an id.
    #[error("{path}: duplicate skill id {id} (first used by skills[{first}])")]
    DuplicateSkillId {
        /// Path of the later skill's id.
        path: String,
        /// The id, quoted and escaped.
        id: String,
        /// Index of the first skill with that id.
        first: usize,
    },
    /// Two extensions share a URI.
    #[error("{path}: duplicate extension uri {uri}")]
    DuplicateExtension {
        /// Path of the later extension's uri.
        path: String,
        /// The URI, quoted and escaped.
        uri: String,
    },
    /// A security requirement names a scheme that `securitySchemes` does not declare.
    #[error("{path}: security scheme {scheme} is not declared in securitySchemes")]
    UndeclaredScheme {
        /// Path of the requirement's scheme entry.
        path: String,
        /// The scheme name, quoted and escaped.
        scheme: String,
    },
    /// A 0.3-shaped security object inside an otherwise 1.0 card.
    #[error("{path}: 0.3-style {what}; A2A 1.0 uses {expected}")]
    Security03 {
        /// Path of the object.
        path: String,
        /// What was found.
        what: &'static str,
        /// The 1.0 shape.
        expected: &'static str,
    },
    /// A JWS member is not base64url.
    #[error("{path}: not base64url (RFC 7515 §2, no padding)")]
    BadBase64Url {
        /// Path of the member.
        path: String,
    },
    /// Signature policy failed (unsigned, or no signature verified, while signatures are required).
    #[error("{path}: {reason}")]
    Signature {
        /// `signatures` or `signatures[i]`.
        path: String,
        /// Why.
        reason: String,
    },
    /// The typed `a2a-lf` model refused a card that passed every rule above (a gap in our rules).
    #[error("$: card does not fit the A2A 1.0 model: {message}")]
    Model {
        /// The deserializer's message.
        message: String,
    },
    /// The card cannot be canonicalised for its digest (RFC 8785), e.g. an out-of-range number.
    #[error("$: {message}")]
    Canonical {
        /// Why.
        message: String,
    },
}

/// Every problem found in one card, in document order; `Display` prints one per line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CardErrors(pub Vec<CardError>);

impl std::fmt::Display for CardErrors {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (i, e) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str("\n")?;
            }
            write!(f, "{e}")?;
        }
        Ok(())
    }
}

impl std::error::Error for CardErrors {}

impl CardErrors {
    /// The problems.
    pub fn iter(&self) -> std::slice::Iter<'_, CardError> {
        self.0.iter()
    }
}

/// Something worth telling an operator about a card that is nevertheless valid.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CardWarning {
    /// JSON path of the field.
    pub path: String,
    /// What is odd about it.
    pub message: String,
}

impl std::fmt::Display for CardWarning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.path, self.message)
    }
}
