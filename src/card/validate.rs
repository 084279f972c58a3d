//! Strict validation of A2A 1.0 Agent Cards (and of 0.3 cards, converted into the 1.0 model),
//! before anything is compiled (pure apart from the signature check, which reads JWKS files only
//! for a policy built without loaded keys).
//!
//! The official `a2a-lf` types are the typed parse layer, but they are lenient (missing
//! `description`/`defaultInputModes`/`defaultOutputModes`/`skills` default to empty, an empty
//! `supportedInterfaces` passes, a 0.3-shaped security requirement `{"name":["scope"]}` is accepted
//! as 1.0, a security scheme with two oneof members keeps the first, unknown fields vanish). So the
//! rules below are checked on the parsed JSON first, and every problem is collected with the JSON
//! path of the field, not just the first one.
//!
//! The rules, in order:
//! - **size**: more than `max_card_bytes` is refused before parsing;
//! - **JSON**: one valid JSON document, no duplicated object key anywhere;
//! - **0.3 cards**: no non-empty `supportedInterfaces` but a top-level `url`, `preferredTransport`,
//!   `additionalInterfaces` or `protocolVersion` is a 0.3 card (as both SDKs detect it). It must
//!   pass the pinned 0.3 JSON Schema (every violation reported, alone); it is then converted once
//!   into the 1.0 shape (`card::v03`) and every rule below runs on that form (so a message
//!   names the 1.0 path, e.g. `supportedInterfaces[0].url` for the 0.3 `url`). Its digest and
//!   signatures are over the card as received. A card with both shapes is read as 1.0
//!   (`supportedInterfaces` wins, as in the SDKs) with a warning per 0.3 member;
//! - **structure**: every REQUIRED field of the proto present, under its lowerCamelCase JSON
//!   name (a snake_case proto name is refused with a message saying so), with the right JSON type; REQUIRED
//!   repeated fields non-empty (A2A §5.7); `null` counts as absent (ProtoJSON); oneofs (security
//!   schemes, OAuth flows) carry exactly one member; the one closed enum (`apiKeySecurityScheme.location`)
//!   has a known value; unknown members are ignored (A2A §5.7);
//! - **identifiers** (agent `version`, skill ids, `protocolBinding`, `tenant`, security scheme
//!   names, scopes, `apiKeySecurityScheme.name`, `httpAuthSecurityScheme.scheme`/`bearerFormat`;
//!   tags are not identifiers): non-empty (`tenant` and `bearerFormat` may be empty), at most
//!   [`MAX_ID_BYTES`], no control character at all (CR, LF and TAB included), no bidi/zero-width
//!   character and no whitespace, since they end up in headers, URL paths and log lines. The one
//!   exception: a skill id may contain single U+0020 spaces between other characters (it is a key
//!   in the profile, never sent in a header or path); `protocolVersion` is `Major.Minor`;
//! - **tenants**: a non-empty interface `tenant` is also one path-safe URL segment: not `.` or
//!   `..`, and no `/`, `\`, `%`, `?` or `#` (it becomes the first path segment of HTTP+JSON calls);
//! - **URLs**: at most [`MAX_URL_BYTES`]; absolute, with no user name or password. The raw text is
//!   what is stored, so an interface or security URL must mean literally what its WHATWG parse means: it
//!   starts with `scheme://` (any case), has no `\`, no `@` in its authority (not even an empty
//!   userinfo), and a host written in canonical form (ASCII/`xn--`, no percent-encoding, IPv4 only
//!   dotted-decimal) — `https:a.example`, `https://%65vil.example`, `https://0x7f.1` are refused.
//!   Interface URLs and
//!   the URLs of security schemes must be `https` (`http` only with `allow_plain_http`); descriptive
//!   URLs that are never fetched (`provider.url`, `documentationUrl`, `iconUrl`) may be `http` or
//!   `https`. A gRPC interface may instead give a bare `host:port` (A2A spec, main branch);
//! - **media types**: non-empty, at most [`MAX_ID_BYTES`], no whitespace or control characters; a
//!   value without `/` (e.g. the pre-1.0 sample value `"text"`) is accepted with a warning;
//! - **scope lists** (`{"list":[…]}`) admit no member but `list`, since a misspelt key would
//!   otherwise read as "no scopes";
//! - **consistency**: skill ids unique; extension URIs unique; every scheme named by a security
//!   requirement is declared in `securitySchemes`;
//! - **descriptive text** (names, descriptions, examples, tags) is never refused for length (the
//!   size cap bounds it); it is sanitised and cut in the profile's display part instead
//!   ([`crate::card::sanitize`]);
//! - **signatures**: structure here; then JWS verification with [`crate::card::signature`]
//!   against the keys trusted for the card's origin (see [`SignatureStatus`] for the policy).
//!
//! Stricter than the proto, on purpose: an extension must have a `uri` (REQUIRED in 0.3; an
//! extension without one cannot be matched), and the deprecated `implicit`/`password` OAuth flows
//! need their `authorizationUrl`/`tokenUrl` and `scopes` as OAuth 2.0 itself requires.

use serde::Deserialize;
use serde_json::Value;

use super::policy::CardPolicy;
use super::rules::Checker;
use super::signature::{self, PayloadForm, SignatureError, TrustedKeys, Verified};
use super::wire;

pub use super::problem::{CardError, CardErrors, CardWarning, MAX_ID_BYTES, MAX_URL_BYTES};

/// What is known about a card's signatures after validation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SignatureStatus {
    /// The card carries no `signatures` (allowed only when signatures are not required).
    Unsigned,
    /// A signature verified with a key trusted for the card's origin. When it covers only the
    /// empties-stripped form ([`PayloadForm::EmptiesStripped`], what the official SDKs sign), the
    /// card is still compiled as received and a warning says that empty values are not
    /// authenticated: a tamperer could add or remove only such values, which under ProtoJSON mean
    /// "absent" except as list elements and map entries (a `{}` alternative in
    /// `securityRequirements`, a scope-less `{"bearer":{}}`, extension `params`). Such values,
    /// when present, are refused with `require_signatures` and warned about otherwise.
    Verified(Verified),
    /// Signatures are present but none verified (allowed only when signatures are not required;
    /// also reported as a warning).
    Unverified {
        /// Why not.
        reason: String,
    },
}

/// A card that passed every rule of this module: the only input the profile compiler accepts.
///
/// Fields are private so a `ValidatedCard` can only come from [`validate`].
#[derive(Debug, Clone)]
pub struct ValidatedCard {
    card: a2a::AgentCard,
    json: Value,
    interface_urls: Vec<String>,
    digest: String,
    signature: SignatureStatus,
    uncovered: Vec<String>,
    warnings: Vec<CardWarning>,
}

impl ValidatedCard {
    /// The typed card (`a2a-lf` model).
    pub fn card(&self) -> &a2a::AgentCard {
        &self.card
    }
    /// The card as parsed JSON (document order kept; unknown members kept).
    pub fn json(&self) -> &Value {
        &self.json
    }
    /// Each `supportedInterfaces` entry's `url` as the card wrote it (a 0.3 card's, as its
    /// conversion wrote it), in order.
    pub fn interface_urls(&self) -> &[String] {
        &self.interface_urls
    }
    /// `sha256:<hex>` of the RFC 8785 canonical card without `signatures`.
    pub fn digest(&self) -> &str {
        &self.digest
    }
    /// The signature verdict.
    pub fn signature(&self) -> &SignatureStatus {
        &self.signature
    }
    /// Non-fatal findings.
    pub fn warnings(&self) -> &[CardWarning] {
        &self.warnings
    }
    /// The paths of the empty values that change the card's meaning and that its verified
    /// signature does not cover (it covers only the empties-dropped form); empty otherwise.
    pub fn uncovered_empties(&self) -> &[String] {
        &self.uncovered
    }
}

/// A card is read up to `max_card_bytes` (at most 16 MiB): its tree is judged before it is
/// built, and a card the walk cannot read gets serde_json's message from a reading that keeps
/// nothing (a parse builds the prefix before the fault).
fn judge_tree(bytes: &[u8]) -> Result<(), CardErrors> {
    let Err(e) = crate::json::check_tree(bytes) else {
        return Ok(());
    };
    let message = match e {
        crate::json::ScanError::TooLarge { .. } => e.to_string(),
        _ => serde_json::from_slice::<serde::de::IgnoredAny>(bytes)
            .err()
            .map_or_else(|| e.to_string(), |e| e.to_string()),
    };
    Err(CardErrors(vec![CardError::Json { message }]))
}

/// Validates a card's bytes against the rules of this module and `policy`.
///
/// `origin` is the `scheme://host[:port]` the card was fetched from; it scopes which trusted keys
/// may verify its signatures (`None`: no origin, e.g. a local file, so no key applies). The keys
/// are `policy.keys` (loaded with the config); only a hand-built policy without them makes a
/// signed card read the JWKS files of `policy.trusted_keys`.
pub fn validate(
    bytes: &[u8],
    policy: &CardPolicy,
    origin: Option<&str>,
) -> Result<ValidatedCard, CardErrors> {
    match &policy.keys {
        Some(k) => validate_inner(bytes, policy, Keys::Given(k), origin),
        None => validate_inner(bytes, policy, Keys::FromPolicy, origin),
    }
}

/// [`validate`] with trusted keys already loaded (no file I/O at all).
pub fn validate_with_keys(
    bytes: &[u8],
    policy: &CardPolicy,
    keys: &TrustedKeys,
    origin: Option<&str>,
) -> Result<ValidatedCard, CardErrors> {
    validate_inner(bytes, policy, Keys::Given(keys), origin)
}

enum Keys<'k> {
    FromPolicy,
    Given(&'k TrustedKeys),
}

fn validate_inner(
    bytes: &[u8],
    policy: &CardPolicy,
    keys: Keys<'_>,
    origin: Option<&str>,
) -> Result<ValidatedCard, CardErrors> {
    if bytes.len() > policy.max_card_bytes {
        return Err(CardErrors(vec![CardError::TooLarge {
            size: bytes.len(),
            limit: policy.max_card_bytes,
        }]));
    }
    if bytes.starts_with(b"\xEF\xBB\xBF") {
        // serde_json would only say "expected value at line 1 column 1".
        return Err(CardErrors(vec![CardError::Json {
            message: "starts with a UTF-8 byte order mark (BOM), which JSON text must not (RFC 8259 §8.1)".into(),
        }]));
    }
    judge_tree(bytes)?;
    let parsed = wire::parse(bytes).map_err(|e| {
        CardErrors(vec![CardError::Json {
            message: e.to_string(),
        }])
    })?;
    let mut ck = Checker {
        policy,
        errors: parsed
            .duplicates
            .into_iter()
            .map(|path| CardError::DuplicateKey { path })
            .collect(),
        warnings: Vec::new(),
    };
    // A 0.3 card: the Python 0.3 SDK's default for an absent `protocolVersion` (with a warning),
    // the pinned 0.3 schema (strict), then its one conversion into the 1.0 shape, which every
    // other rule and the typed model read. Digest and signatures stay on the card as received.
    let converted = match parsed.value.as_object().filter(|m| super::v03::is_03(m)) {
        Some(m) => {
            // Copied only when a default was filled in; otherwise read as received.
            let (filled, defaulted) = super::v03::with_sdk_defaults(m);
            let card = filled.as_ref().unwrap_or(&parsed.value);
            ck.errors.extend(super::v03::schema_problems(card));
            if !ck.errors.is_empty() {
                return Err(CardErrors(ck.errors));
            }
            ck.warnings.extend(defaulted);
            let (v, notes) = super::v03::to_10(card.as_object().unwrap_or(m));
            ck.warnings.extend(notes);
            Some(v)
        }
        None => None,
    };
    let model = converted.as_ref().unwrap_or(&parsed.value);
    let interface_urls = written_urls(model);
    ck.card(model);
    if !ck.errors.is_empty() {
        return Err(CardErrors(ck.errors));
    }
    let digest = super::canonical::digest(&parsed.value).map_err(|e| {
        CardErrors(vec![CardError::Canonical {
            message: e.to_string(),
        }])
    })?;
    let signature = check_signatures(&parsed.value, policy, keys, origin)?;
    let card = a2a::AgentCard::deserialize(model).map_err(|e| {
        CardErrors(vec![CardError::Model {
            message: e.to_string(),
        }])
    })?;
    let uncovered = signature_notes(&signature, &parsed.value, policy, &mut ck.warnings)?;
    Ok(ValidatedCard {
        card,
        json: parsed.value,
        interface_urls,
        digest,
        signature,
        uncovered,
        warnings: ck.warnings,
    })
}

/// The interface URLs as written (in the 1.0 shape, a 0.3 card's converted): the typed model
/// reads a gRPC `http://host:port` as `host:port`, losing what says plaintext.
fn written_urls(model: &Value) -> Vec<String> {
    (model["supportedInterfaces"]
        .as_array()
        .into_iter()
        .flatten())
    .map(|i| i["url"].as_str().unwrap_or_default().to_owned())
    .collect()
}

/// What a verified or unverified signature leaves to say: the empty values its payload form did
/// not cover (refused when signatures are required), and the warnings the caller should read.
fn signature_notes(
    signature: &SignatureStatus,
    value: &Value,
    policy: &CardPolicy,
    warnings: &mut Vec<CardWarning>,
) -> Result<Vec<String>, CardErrors> {
    let mut uncovered = Vec::new();
    if let SignatureStatus::Verified(v) = signature
        && v.form == PayloadForm::EmptiesStripped
    {
        let unsigned = meaningful_empties(value);
        if policy.require_signatures && !unsigned.is_empty() {
            return Err(CardErrors(
                unsigned
                    .into_iter()
                    .map(|path| CardError::Signature {
                        path,
                        reason: "empty value not covered by the signature".into(),
                    })
                    .collect(),
            ));
        }
        uncovered.clone_from(&unsigned);
        for path in unsigned {
            warnings.push(CardWarning {
                path,
                message: "empty value not covered by the signature (it changes the card's meaning)"
                    .into(),
            });
        }
        warnings.push(CardWarning {
            path: format!("signatures[{}]", v.index),
            message: "verifies only the card with empty values dropped (as the official SDKs sign); \
                      empty values, e.g. a scope-less requirement {\"bearer\":{}}, are not authenticated"
                .into(),
        });
    }
    if let SignatureStatus::Unverified { reason } = signature {
        warnings.push(CardWarning {
            path: "signatures".into(),
            message: format!("present but not verified: {reason}"),
        });
    }
    Ok(uncovered)
}

/// Members whose values are protobuf maps (or `google.protobuf.Struct`): an entry is meaningful
/// even when its value is empty.
const MAP_FIELDS: &[&str] = &["securitySchemes", "schemes", "scopes", "params", "metadata"];

/// The JSON paths of the empty values that [`signature::strip_empty`] drops from `card` and
/// whose removal changes the card's meaning, so that a signature over the empties-stripped form
/// (what the SDKs sign) does not cover them.
///
/// Under ProtoJSON an empty string, list or object given as an ordinary field value is the
/// default, i.e. the same message as the absent field: dropping it changes nothing. But an empty
/// *list element* (a `{}` alternative in `securityRequirements` means "no auth needed") and an
/// empty *map entry value* (`{"bearer":{}}`: the scheme with no scopes; anything in a `Struct`)
/// exist in the message, so adding or removing them is a change the signature cannot see. Each
/// such value is reported once, at its outermost dropped position; `signatures` is skipped.
fn meaningful_empties(card: &Value) -> Vec<String> {
    /// Whether the members of an object are map entries (`is_map`), and whether we are inside a
    /// `Struct`, where every object is a map and every list element counts.
    fn walk(v: &Value, p: &wire::Path<'_>, is_map: bool, in_struct: bool, out: &mut Vec<String>) {
        match v {
            Value::Array(a) => {
                for (i, e) in a.iter().enumerate() {
                    let ep = p.index(i);
                    if signature::strip_empty(e).is_none() {
                        out.push(ep.to_string());
                    } else {
                        walk(e, &ep, in_struct, in_struct, out);
                    }
                }
            }
            Value::Object(m) => {
                for (k, e) in m {
                    member(k, e, p, is_map, in_struct, out);
                }
            }
            _ => {}
        }
    }
    fn member(
        k: &str,
        e: &Value,
        p: &wire::Path<'_>,
        is_map: bool,
        in_struct: bool,
        out: &mut Vec<String>,
    ) {
        let ep = p.key(k);
        if is_map && signature::strip_empty(e).is_none() {
            out.push(ep.to_string());
            return;
        }
        let child_struct = in_struct || (!is_map && matches!(k, "params" | "metadata"));
        let child_map = child_struct || (!is_map && MAP_FIELDS.contains(&k));
        walk(e, &ep, child_map, child_struct, out);
    }
    let mut out = Vec::new();
    if let Value::Object(m) = card {
        for (k, e) in m.iter().filter(|(k, _)| *k != "signatures") {
            member(k, e, &wire::Path::ROOT, false, false, &mut out);
        }
    }
    out
}

/// The integration point with [`crate::card::signature`] (JWS over the JCS payload, keys scoped
/// to the card's origin).
///
/// Policy: with `require_signatures`, an unsigned card, a card without an origin, unusable key
/// files, or signatures that all fail are errors (one per failed signature, naming
/// `signatures[i]` and the rule it broke); without it, a present-but-unverifiable signature is
/// [`SignatureStatus::Unverified`] (and a warning).
fn check_signatures(
    card: &Value,
    policy: &CardPolicy,
    keys: Keys<'_>,
    origin: Option<&str>,
) -> Result<SignatureStatus, CardErrors> {
    let fail = |errors: Vec<CardError>, reason: String| {
        if policy.require_signatures {
            Err(CardErrors(errors))
        } else {
            Ok(SignatureStatus::Unverified { reason })
        }
    };
    let at = |reason: &str| CardError::Signature {
        path: "signatures".into(),
        reason: reason.to_owned(),
    };
    let signed = card
        .get("signatures")
        .and_then(Value::as_array)
        .is_some_and(|a| !a.is_empty());
    if !signed {
        return if policy.require_signatures {
            Err(CardErrors(vec![at(
                "card is unsigned but client.require_signatures is true",
            )]))
        } else {
            Ok(SignatureStatus::Unsigned)
        };
    }
    let Some(origin) = origin else {
        let reason = "the card's origin is unknown, so no trusted key applies";
        return fail(vec![at(reason)], reason.into());
    };
    let loaded;
    let keys = match keys {
        Keys::Given(k) => k,
        Keys::FromPolicy => match TrustedKeys::load(&policy.trusted_keys) {
            Ok(k) => {
                loaded = k;
                &loaded
            }
            Err(e) => {
                let reason = format!("trusted keys unusable: {e}");
                return fail(vec![at(&reason)], reason);
            }
        },
    };
    match signature::verify(card, keys, origin) {
        Ok(v) => Ok(SignatureStatus::Verified(v)),
        Err(SignatureError::NoValidSignature { rejections }) => {
            let reason = rejections
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("; ");
            let errors = rejections
                .iter()
                .map(|r| CardError::Signature {
                    path: format!("signatures[{}]", r.index),
                    reason: r.rule.to_string(),
                })
                .collect();
            fail(errors, reason)
        }
        Err(e) => {
            let reason = e.to_string();
            fail(vec![at(&reason)], reason)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn minimal() -> Value {
        json!({"name":"Echo","description":"echo agent","version":"1.0.0",
            "supportedInterfaces":[{"url":"https://a.example/a2a","protocolBinding":"JSONRPC","protocolVersion":"1.0"}],
            "capabilities":{},
            "defaultInputModes":["text/plain"],"defaultOutputModes":["text/plain"],
            "skills":[{"id":"echo","name":"Echo","description":"echoes","tags":["demo"]}]})
    }

    fn check(card: &Value, policy: &CardPolicy) -> Result<ValidatedCard, CardErrors> {
        validate(&serde_json::to_vec(card).unwrap(), policy, None)
    }

    #[test]
    fn a_card_whose_tree_is_over_the_budget_or_cut_short_is_refused_before_a_tree_is_built() {
        let big = CardPolicy {
            max_card_bytes: 16 << 20,
            ..CardPolicy::default()
        };
        let mut card = minimal();
        card["pad"] = Value::Array(vec![Value::from(0); 1 << 20]);
        let err = check(&card, &big).unwrap_err();
        assert!(format!("{err:?}").contains("over the 64 MiB"), "{err:?}");
        // Cut short: serde_json's own message, from a reading that keeps nothing.
        let bytes = serde_json::to_vec(&minimal()).unwrap();
        let err = validate(&bytes[..bytes.len() - 1], &big, None).unwrap_err();
        assert!(format!("{err:?}").contains("EOF while parsing"), "{err:?}");
    }

    #[test]
    fn size_limit_is_checked_before_parsing() {
        let bytes = serde_json::to_vec(&minimal()).unwrap();
        let exact = CardPolicy {
            max_card_bytes: bytes.len(),
            ..CardPolicy::default()
        };
        assert!(validate(&bytes, &exact, None).is_ok());
        let under = CardPolicy {
            max_card_bytes: bytes.len() - 1,
            ..CardPolicy::default()
        };
        let err = validate(&bytes, &under, None).unwrap_err();
        assert_eq!(
            err.0,
            vec![CardError::TooLarge {
                size: bytes.len(),
                limit: bytes.len() - 1
            }]
        );
        // Refused before parsing: garbage over the limit is "too large", not "not JSON".
        let err = validate(
            &[b'{'; 300],
            &CardPolicy {
                max_card_bytes: 10,
                ..CardPolicy::default()
            },
            None,
        )
        .unwrap_err();
        assert!(matches!(err.0[..], [CardError::TooLarge { .. }]), "{err}");
        assert!(
            err.to_string()
                .starts_with("$: card is larger than the 10-byte limit")
        );
    }

    #[test]
    fn plain_http_interfaces_need_allow_plain_http_but_descriptive_urls_do_not() {
        let mut card = minimal();
        card["supportedInterfaces"][0]["url"] = json!("http://127.0.0.1:8080/a2a");
        card["documentationUrl"] = json!("http://docs.example");
        let err = check(&card, &CardPolicy::default()).unwrap_err();
        assert_eq!(err.0.len(), 1, "{err}");
        assert!(
            err.to_string().starts_with("supportedInterfaces[0].url: "),
            "{err}"
        );
        let allow = CardPolicy {
            allow_plain_http: true,
            ..CardPolicy::default()
        };
        assert!(check(&card, &allow).is_ok());
        // No other scheme, even when plain http is allowed.
        card["supportedInterfaces"][0]["url"] = json!("ws://127.0.0.1:8080/a2a");
        assert!(
            check(&card, &allow)
                .unwrap_err()
                .to_string()
                .contains("scheme \"ws\"")
        );
    }

    #[test]
    fn grpc_interfaces_may_be_host_port() {
        let mut card = minimal();
        card["supportedInterfaces"] = json!([
            {"url":"a.example:50051","protocolBinding":"GRPC","protocolVersion":"1.0"},
            {"url":"https://a.example/a2a","protocolBinding":"JSONRPC","protocolVersion":"1.0"}]);
        assert!(check(&card, &CardPolicy::default()).is_ok());
        // host:port is not accepted for the HTTP bindings.
        card["supportedInterfaces"][1]["url"] = json!("a.example:443");
        let err = check(&card, &CardPolicy::default()).unwrap_err();
        assert!(
            err.to_string().starts_with("supportedInterfaces[1].url: "),
            "{err}"
        );
    }

    #[test]
    fn every_problem_is_collected_not_only_the_first() {
        let mut card = minimal();
        card["name"] = json!(1);
        card["supportedInterfaces"][0]["url"] = json!("ftp://x");
        card["skills"][0]["tags"] = json!([]);
        let err = check(&card, &CardPolicy::default()).unwrap_err();
        let lines: Vec<String> = err.to_string().lines().map(str::to_owned).collect();
        assert_eq!(lines.len(), 3, "{lines:?}");
        assert!(lines[0].starts_with("name: "));
        assert!(lines[1].starts_with("supportedInterfaces[0].url: "));
        assert!(lines[2].starts_with("skills[0].tags: "));
    }

    #[test]
    fn unsigned_card_status_and_require_signatures() {
        let v = check(&minimal(), &CardPolicy::default()).unwrap();
        assert_eq!(v.signature(), &SignatureStatus::Unsigned);
        assert!(v.warnings().is_empty());
        let require = CardPolicy {
            require_signatures: true,
            ..CardPolicy::default()
        };
        let err = check(&minimal(), &require).unwrap_err();
        assert!(
            matches!(&err.0[..], [CardError::Signature { path, .. }] if path == "signatures"),
            "{err}"
        );
    }

    fn sdk(name: &str) -> (Vec<u8>, String, std::path::PathBuf) {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sdk");
        let bytes = std::fs::read(dir.join(format!("{name}.json"))).unwrap();
        let v: Value = serde_json::from_slice(&bytes).unwrap();
        let url = url::Url::parse(v["supportedInterfaces"][0]["url"].as_str().unwrap()).unwrap();
        (
            bytes,
            url.origin().ascii_serialization(),
            dir.join(format!("{name}.jwks")),
        )
    }

    fn trusting(origin: &str, jwks: &std::path::Path, require: bool) -> CardPolicy {
        CardPolicy {
            allow_plain_http: true,
            require_signatures: require,
            trusted_keys: vec![(origin.to_owned(), jwks.to_owned())],
            ..CardPolicy::default()
        }
    }

    #[test]
    fn sdk_signed_card_verifies_with_keys_trusted_for_its_origin() {
        let (bytes, origin, jwks) = sdk("python-signed");
        let v = validate(&bytes, &trusting(&origin, &jwks, true), Some(&origin)).unwrap();
        let SignatureStatus::Verified(ver) = v.signature() else {
            panic!("{:?}", v.signature())
        };
        assert_eq!(ver.index, 0);
        assert!(!ver.kid.is_empty());
        // Same with keys loaded once by the caller.
        let keys = TrustedKeys::load(&[(origin.clone(), jwks.clone())]).unwrap();
        let policy = CardPolicy {
            allow_plain_http: true,
            require_signatures: true,
            ..CardPolicy::default()
        };
        let v = validate_with_keys(&bytes, &policy, &keys, Some(&origin)).unwrap();
        assert!(matches!(v.signature(), SignatureStatus::Verified(_)));
    }

    #[test]
    fn sdk_form_signature_verifies_with_a_warning_and_compiles_as_received() {
        let (bytes, origin, jwks) = sdk("python-signed-secured");
        // The SDK serves a scope-less requirement {"bearer":{}} but signs the card with it
        // dropped: the signature does not cover it, so with require_signatures it is refused...
        let err = validate(&bytes, &trusting(&origin, &jwks, true), Some(&origin)).unwrap_err();
        assert_eq!(
            err.to_string(),
            "securityRequirements[0]: empty value not covered by the signature"
        );
        // ...and otherwise accepted with a warning naming it.
        let v = validate(&bytes, &trusting(&origin, &jwks, false), Some(&origin)).unwrap();
        assert!(
            v.warnings()
                .iter()
                .any(|w| w.path == "securityRequirements[0]"),
            "{:?}",
            v.warnings()
        );
        let SignatureStatus::Verified(ver) = v.signature() else {
            panic!("{:?}", v.signature())
        };
        assert_eq!(ver.form, PayloadForm::EmptiesStripped);
        assert!(
            v.warnings().iter().any(|w| w.path == "signatures[0]"),
            "{:?}",
            v.warnings()
        );
        // A value that changes the card's meaning is not covered (the profile's tests show what
        // compile makes of it).
        assert_eq!(v.uncovered_empties(), ["securityRequirements[0]"]);
    }

    #[test]
    fn tampered_signed_card_fails_when_required_and_warns_otherwise() {
        let (bytes, origin, jwks) = sdk("python-signed");
        let mut card: Value = serde_json::from_slice(&bytes).unwrap();
        card["capabilities"]["streaming"] =
            json!(!card["capabilities"]["streaming"].as_bool().unwrap_or(false));
        let tampered = serde_json::to_vec(&card).unwrap();
        let err = validate(&tampered, &trusting(&origin, &jwks, true), Some(&origin)).unwrap_err();
        assert_eq!(err.0.len(), 1, "{err}");
        assert!(err.to_string().starts_with("signatures[0]: "), "{err}");
        let v = validate(&tampered, &trusting(&origin, &jwks, false), Some(&origin)).unwrap();
        assert!(matches!(v.signature(), SignatureStatus::Unverified { .. }));
        assert!(v.warnings().iter().any(|w| w.path == "signatures"));
    }

    #[test]
    fn keys_of_another_origin_or_no_origin_never_verify() {
        let (bytes, origin, jwks) = sdk("python-signed");
        let other = "https://other.example";
        let err = validate(&bytes, &trusting(other, &jwks, true), Some(&origin)).unwrap_err();
        assert!(err.to_string().contains("no trusted keys"), "{err}");
        let err = validate(&bytes, &trusting(&origin, &jwks, true), None).unwrap_err();
        assert!(err.to_string().contains("origin is unknown"), "{err}");
        // A missing key file is reported, not ignored.
        let missing = std::path::Path::new("/nonexistent/keys.jwks");
        let err = validate(&bytes, &trusting(&origin, missing, true), Some(&origin)).unwrap_err();
        assert!(err.to_string().contains("trusted keys unusable"), "{err}");
    }

    #[test]
    fn unverifiable_signature_is_a_warning_unless_required() {
        let mut card = minimal();
        card["signatures"] = json!([{"protected":"eyJhbGciOiJFUzI1NiJ9","signature":"AAAA"}]);
        let v = check(&card, &CardPolicy::default()).unwrap();
        assert!(matches!(v.signature(), SignatureStatus::Unverified { .. }));
        assert!(v.warnings().iter().any(|w| w.path == "signatures"));
        // The digest ignores signatures.
        assert_eq!(
            v.digest(),
            check(&minimal(), &CardPolicy::default()).unwrap().digest()
        );
        let require = CardPolicy {
            require_signatures: true,
            ..CardPolicy::default()
        };
        assert!(check(&card, &require).is_err());
    }

    #[test]
    fn unknown_members_are_ignored_but_kept_in_the_json() {
        let mut card = minimal();
        card["futureField"] = json!({"x": 1});
        card["skills"][0]["futureSkillField"] = json!(true);
        let v = check(&card, &CardPolicy::default()).unwrap();
        assert_eq!(v.json()["futureField"]["x"], 1);
        assert_eq!(v.card().skills[0].id, "echo");
    }

    #[test]
    fn media_type_without_slash_is_a_warning() {
        let mut card = minimal();
        card["defaultInputModes"] = json!(["text"]);
        let v = check(&card, &CardPolicy::default()).unwrap();
        assert_eq!(v.warnings().len(), 1);
        assert_eq!(v.warnings()[0].path, "defaultInputModes[0]");
    }

    #[test]
    fn js_card_with_both_shapes_is_read_as_1_0_with_warnings() {
        let mut card = minimal();
        card["url"] = json!("https://a.example/a2a");
        card["protocolVersion"] = json!("0.3.0");
        let v = check(&card, &CardPolicy::default()).unwrap();
        let paths: Vec<&str> = v.warnings().iter().map(|w| w.path.as_str()).collect();
        assert_eq!(paths, vec!["url", "protocolVersion"]);
    }

    #[test]
    fn null_optional_fields_count_as_absent() {
        let mut card = minimal();
        card["provider"] = Value::Null;
        card["securitySchemes"] = Value::Null;
        card["skills"][0]["examples"] = Value::Null;
        card["supportedInterfaces"][0]["tenant"] = Value::Null;
        assert!(check(&card, &CardPolicy::default()).is_ok());
    }
}
