//! Agent Card signatures: JWS (RFC 7515) with detached payload over the JCS form of the card
//! (A2A §8.4), verified only with keys from configured, origin-scoped JWKS files. Pure, except
//! [`TrustedKeys::load`], which reads the JWKS files.
//!
//! # Rules
//! - Signing input = `protected || "." || BASE64URL(JCS(card without "signatures"))`; the
//!   `protected` text is used exactly as received.
//! - The protected header must carry `alg` and `kid`. `alg` must be one of ES256, RS256, PS256,
//!   EdDSA; `none`, HMAC and everything else are refused before any key is looked up.
//! - `crit` may only name parameters this verifier implements (`b64`), and must be protected;
//!   `b64: false` (RFC 7797 unencoded payload) is refused: the A2A payload is always base64url.
//! - Protected and unprotected (`header`) parameter names must be disjoint (RFC 7515 §7.2.1), so
//!   `alg`/`kid` can never come from the unprotected, unsigned part.
//! - The key is chosen by `kid` **within the keys configured for the card's origin only**. `jku`,
//!   `jwk`, `x5u` and `x5c` in a header are never used: a card cannot name its own trust anchor.
//! - The key must fit the algorithm: ES256 ⇔ EC P-256, RS256/PS256 ⇔ RSA of at least 2048 bits,
//!   EdDSA ⇔ OKP Ed25519; a JWK `alg` must equal the header's; `use` must be `sig` and `key_ops`
//!   must allow `verify` when present.
//! - One valid signature among several suffices (key rotation); otherwise every signature's
//!   failure is reported with its index and rule.
//!
//! # Which bytes are signed: as received, or with empty values dropped
//! The spec's worked example canonicalises the card as served (keeping e.g. `"description": ""`),
//! while both official SDKs (Python and JS 1.3.0) sign `JCS(strip_empty(card))`, where
//! [`strip_empty`] recursively drops empty strings, lists and objects. A card the Python SDK
//! serves with a scope-less security requirement (`{"bearer": {}}`) therefore does not verify
//! in its as-received form. We try the as-received form first and, only if it fails, the
//! empties-stripped form, and report which one matched in [`Verified::form`].
//!
//! Why accepting the stripped form is safe: a signature that verifies under it authenticates
//! exactly `strip_empty(card)`; the only freedom left to a tamperer is to add or remove empty
//! strings, lists and objects. Under ProtoJSON (A2A §5.6) an empty string, an empty repeated
//! field and an empty map are the default value, i.e. the same message as the absent field, so
//! for every card field the compiler decides on (interface url/binding/version/tenant, capability
//! booleans — `false` is not "empty" and is never dropped —, extension `required` flags, skill ids
//! and media types) the meaning is unchanged, provided the compiler treats `""`/`[]`/`{}` as
//! absent, which is ProtoJSON's own rule. Two places where emptiness can carry meaning are not
//! protected by an SDK-style signature: values inside `google.protobuf.Struct` (extension
//! `params`) and map entries whose value is an empty message (a security requirement naming a
//! scheme with no scopes, `{"bearer": {}}`), and more generally every empty list element (a
//! `{}` alternative in `securityRequirements` means "no auth needed"). So when the stripped form
//! is the one that matched, [`crate::card::validate()`] lists the empty list elements and map
//! entries the card holds and refuses the card under `require_signatures` (a warning otherwise).

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::jwk::Jwk;
use jsonwebtoken::{Algorithm, DecodingKey};
use serde_json::{Map, Value};

use super::canonical::{self, CanonicalError};

/// Smallest RSA modulus accepted, in bits (NIST SP 800-131A; RFC 7518 §3.3 requires ≥ 2048).
pub const MIN_RSA_BITS: usize = 2048;

/// Header parameters this verifier understands when listed in `crit`.
const UNDERSTOOD_CRIT: &[&str] = &["b64"];

/// Errors of signature verification and of loading trusted keys.
#[derive(Debug, thiserror::Error)]
pub enum SignatureError {
    /// The card carries no signature (`signatures` absent, `null` or `[]`).
    #[error("card is not signed (no `signatures`)")]
    Unsigned,
    /// `signatures` is present but is not an array.
    #[error("`signatures` must be an array of AgentCardSignature objects")]
    NotAnArray,
    /// No keys are configured for the card's origin, so no signature can be trusted.
    #[error("no trusted keys are configured for origin {origin}")]
    NoTrustedKeys {
        /// The card's origin.
        origin: String,
    },
    /// Every signature failed; one entry per signature, in card order.
    #[error("no valid signature: {}", rejections.iter().map(|r| r.to_string()).collect::<Vec<_>>().join("; "))]
    NoValidSignature {
        /// Why each signature was refused.
        rejections: Vec<Rejection>,
    },
    /// The card cannot be canonicalised, so nothing can be verified.
    #[error(transparent)]
    Canonical(#[from] CanonicalError),
    /// A JWKS file could not be read (missing, not a regular file, over [`MAX_JWKS_BYTES`]).
    #[error("{source}")]
    JwksRead {
        /// The file.
        path: PathBuf,
        /// Why it could not be read.
        source: crate::types::file::FileError,
    },
    /// A JWKS file is not usable; the message names the key index and rule.
    #[error("JWKS {source_name}: {reason}")]
    JwksInvalid {
        /// The file (or other source) it came from.
        source_name: String,
        /// What is wrong, naming `keys[i]` where it applies.
        reason: String,
    },
}

impl SignatureError {
    /// Whether the card simply is not signed (as opposed to signed wrongly or unverifiable).
    pub fn is_unsigned(&self) -> bool {
        matches!(self, SignatureError::Unsigned)
    }
}

/// Why one signature (`signatures[index]`) was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("signatures[{index}]: {rule}")]
pub struct Rejection {
    /// Position in the card's `signatures` array.
    pub index: usize,
    /// The rule it broke.
    pub rule: Rule,
}

/// The rule a signature broke.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Rule {
    /// The entry is not a JSON object.
    #[error("entry is not an object")]
    NotAnObject,
    /// `protected` is missing or not a string.
    #[error("`protected` is missing or not a string")]
    MissingProtected,
    /// `signature` is missing or not a string.
    #[error("`signature` is missing or not a string")]
    MissingSignature,
    /// `protected` is not unpadded base64url.
    #[error("`protected` is not base64url")]
    ProtectedNotBase64,
    /// The decoded protected header is not a JSON object.
    #[error("protected header is not a JSON object")]
    ProtectedNotObject,
    /// `header` (unprotected) is present but not an object.
    #[error("`header` is not a JSON object")]
    HeaderNotObject,
    /// A parameter appears in both the protected and the unprotected header.
    #[error("header parameter {0:?} appears in both the protected and the unprotected header")]
    DuplicateParameter(String),
    /// `crit` appears in the unprotected header.
    #[error("`crit` must be in the protected header")]
    UnprotectedCrit,
    /// `alg` is missing from the protected header.
    #[error("protected header has no `alg`")]
    MissingAlg,
    /// `kid` is missing from the protected header (or is not a non-empty string).
    #[error("protected header has no `kid`")]
    MissingKid,
    /// `alg` is not on the allowlist.
    #[error("algorithm {0:?} is not allowed (allowed: ES256, RS256, PS256, EdDSA)")]
    AlgorithmNotAllowed(String),
    /// `crit` is not a non-empty array of strings.
    #[error("`crit` must be a non-empty array of strings")]
    MalformedCrit,
    /// `crit` names parameters this verifier does not implement.
    #[error("unsupported critical header parameter(s) {0:?}")]
    UnknownCrit(Vec<String>),
    /// `b64` is not a boolean.
    #[error("`b64` must be a boolean")]
    MalformedB64,
    /// `b64: false` (RFC 7797) is not supported: the A2A payload is base64url-encoded.
    #[error("`b64: false` (unencoded payload) is not supported")]
    UnencodedPayload,
    /// No key with this `kid` is trusted for the origin.
    #[error("key id {kid:?} is not trusted for origin {origin}")]
    UnknownKid {
        /// The `kid` of the protected header.
        kid: String,
        /// The card's origin.
        origin: String,
    },
    /// The key exists but may not be used with this algorithm.
    #[error("key {kid:?} cannot verify {alg}: {why}")]
    KeyMismatch {
        /// The key id.
        kid: String,
        /// The header's algorithm.
        alg: SigAlg,
        /// What does not fit.
        why: String,
    },
    /// `signature` is not unpadded base64url.
    #[error("`signature` is not base64url")]
    SignatureNotBase64,
    /// The signature does not verify over the card (it was altered, or signed by another key).
    #[error("signature does not match the card")]
    BadSignature,
}

/// The allowlisted JWS algorithms.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum SigAlg {
    /// ECDSA P-256 with SHA-256.
    ES256,
    /// RSASSA-PKCS1-v1_5 with SHA-256.
    RS256,
    /// RSASSA-PSS with SHA-256.
    PS256,
    /// Ed25519.
    EdDSA,
}

impl SigAlg {
    /// Parses a JWS `alg` value; `None` for anything outside the allowlist.
    pub fn from_jws(alg: &str) -> Option<SigAlg> {
        match alg {
            "ES256" => Some(SigAlg::ES256),
            "RS256" => Some(SigAlg::RS256),
            "PS256" => Some(SigAlg::PS256),
            "EdDSA" => Some(SigAlg::EdDSA),
            _ => None,
        }
    }

    /// The JWS name.
    pub fn as_str(self) -> &'static str {
        match self {
            SigAlg::ES256 => "ES256",
            SigAlg::RS256 => "RS256",
            SigAlg::PS256 => "PS256",
            SigAlg::EdDSA => "EdDSA",
        }
    }

    fn jwt(self) -> Algorithm {
        match self {
            SigAlg::ES256 => Algorithm::ES256,
            SigAlg::RS256 => Algorithm::RS256,
            SigAlg::PS256 => Algorithm::PS256,
            SigAlg::EdDSA => Algorithm::EdDSA,
        }
    }
}

impl fmt::Display for SigAlg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Which canonical form of the card the valid signature covers (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PayloadForm {
    /// JCS of the card as received (the spec's worked example).
    AsReceived,
    /// JCS of [`strip_empty`] of the card (what the official SDKs sign).
    EmptiesStripped,
}

/// A successful verification.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Verified {
    /// The key id that verified.
    pub kid: String,
    /// Its algorithm.
    pub alg: SigAlg,
    /// Index of the valid signature in `signatures`.
    pub index: usize,
    /// The canonical form the signature covers.
    pub form: PayloadForm,
}

/// The kind of public key, as far as algorithm fitness is concerned.
#[derive(Debug, Clone, PartialEq, Eq)]
enum KeyKind {
    EcP256,
    Rsa { bits: usize },
    Ed25519,
}

/// One trusted verification key.
#[derive(Clone)]
struct TrustedKey {
    kid: String,
    kind: KeyKind,
    /// The JWK's own `alg`, if it declares one.
    alg: Option<String>,
    key: DecodingKey,
}

impl fmt::Debug for TrustedKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TrustedKey")
            .field("kid", &self.kid)
            .field("kind", &self.kind)
            .field("alg", &self.alg)
            .finish_non_exhaustive()
    }
}

/// Cap on a JWKS file: a key set of a few dozen RSA keys is tens of KiB.
pub const MAX_JWKS_BYTES: u64 = 1024 * 1024;

/// Reads a JWKS file through the one bounded reader (at most [`MAX_JWKS_BYTES`]).
pub fn read_jwks(path: &std::path::Path) -> Result<String, SignatureError> {
    crate::types::file::read_capped_string(path, MAX_JWKS_BYTES, "JWKS file").map_err(|source| {
        SignatureError::JwksRead {
            path: path.to_owned(),
            source,
        }
    })
}

/// Verification keys by origin, from the `[[client.trusted_keys]]` JWKS files.
///
/// A key is only ever looked up inside its origin's set, so a key trusted for one agent can
/// never vouch for another agent's card, whatever `kid` that card names.
#[derive(Debug, Clone, Default)]
pub struct TrustedKeys {
    by_origin: BTreeMap<String, Vec<TrustedKey>>,
}

impl TrustedKeys {
    /// Loads JWKS files, one `(origin, path)` per configured entry (several files may serve one
    /// origin). Origins are normalised like the config's (`scheme://host[:port]`, default port
    /// dropped). Fails on the first unreadable or unusable file, naming it and the key.
    pub fn load(entries: &[(String, PathBuf)]) -> Result<TrustedKeys, SignatureError> {
        let mut keys = TrustedKeys::default();
        for (origin, path) in entries {
            let text = read_jwks(path)?;
            keys.add_jwks(origin, &text, &path.display().to_string())?;
        }
        Ok(keys)
    }

    /// Adds the keys of one JWKS document (RFC 7517 `{"keys": [...]}`) for `origin`;
    /// `source_name` names the document in errors.
    ///
    /// Keys marked `"use": "enc"` are skipped (they cannot verify signatures). Every other key
    /// must be a public EC P-256, RSA (≥ 2048 bits) or Ed25519 key with a unique `kid`; private
    /// key material and symmetric (`oct`) keys are refused, since a trust file must only hold
    /// public keys and HMAC is not an allowed card-signature algorithm.
    pub fn add_jwks(
        &mut self,
        origin: &str,
        jwks: &str,
        source_name: &str,
    ) -> Result<(), SignatureError> {
        let invalid = |reason: String| SignatureError::JwksInvalid {
            source_name: source_name.to_owned(),
            reason,
        };
        let origin = normalise_origin(origin)
            .ok_or_else(|| invalid(format!("{origin:?} is not a scheme://host[:port] origin")))?;
        let doc: Value =
            serde_json::from_str(jwks).map_err(|e| invalid(format!("not JSON: {e}")))?;
        let list = doc
            .get("keys")
            .and_then(Value::as_array)
            .ok_or_else(|| invalid("no `keys` array (expected an RFC 7517 JWK Set)".into()))?;
        let mut parsed = Vec::new();
        for (i, raw) in list.iter().enumerate() {
            if raw.get("use").and_then(Value::as_str) == Some("enc") {
                continue;
            }
            let key = parse_jwk(raw).map_err(|why| invalid(format!("keys[{i}]: {why}")))?;
            parsed.push(key);
        }
        let set = self.by_origin.entry(origin.clone()).or_default();
        for key in parsed {
            if set.iter().any(|k| k.kid == key.kid) {
                return Err(invalid(format!(
                    "kid {:?} is configured twice for origin {origin}",
                    key.kid
                )));
            }
            set.push(key);
        }
        Ok(())
    }

    /// Whether any key is trusted for `origin`.
    pub fn has_origin(&self, origin: &str) -> bool {
        normalise_origin(origin)
            .and_then(|o| self.by_origin.get(&o))
            .is_some_and(|v| !v.is_empty())
    }

    /// The key ids trusted for `origin` (empty if none).
    pub fn kids_for_origin(&self, origin: &str) -> Vec<&str> {
        self.for_origin(origin)
            .map(|ks| ks.iter().map(|k| k.kid.as_str()).collect())
            .unwrap_or_default()
    }

    fn for_origin(&self, origin: &str) -> Option<&[TrustedKey]> {
        normalise_origin(origin)
            .and_then(|o| self.by_origin.get(&o))
            .map(Vec::as_slice)
    }
}

fn normalise_origin(origin: &str) -> Option<String> {
    crate::types::normalize_origin(origin)
}

/// Why a JWK of a trust file cannot be a trusted verification key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JwkError {
    /// The key is not a JSON object.
    #[error("not a JSON object")]
    NotAnObject,
    /// No non-empty `kid`.
    #[error("no `kid` (keys are selected by kid; every trusted key needs one)")]
    NoKid,
    /// No `kty`.
    #[error("no `kty`")]
    NoKty,
    /// An `oct` key.
    #[error("symmetric (`oct`) keys are not accepted: HMAC is not an allowed algorithm")]
    Symmetric,
    /// A private member (`d`, `p`, …) is present.
    #[error("contains private key material (`{0}`); a trust file must hold public keys only")]
    PrivateMaterial(&'static str),
    /// `use` is not `sig` (the JSON value as written).
    #[error("`use` is {0}, expected \"sig\"")]
    Use(String),
    /// `key_ops` does not allow `verify`.
    #[error("`key_ops` does not include \"verify\"")]
    KeyOps,
    /// `alg` is not a string (the JSON value as written).
    #[error("`alg` is {0}, expected a string")]
    Alg(String),
    /// A member the key type needs is missing.
    #[error("{kty} key without `{name}`")]
    Missing {
        /// The key type.
        kty: String,
        /// The member.
        name: &'static str,
    },
    /// A member is not base64url.
    #[error("`{0}` is not base64url")]
    NotBase64url(&'static str),
    /// A curve other than the one supported for the key type.
    #[error("{kty} curve {crv:?} is not supported (only {only})")]
    Curve {
        /// `EC` or `OKP`.
        kty: &'static str,
        /// The curve named.
        crv: String,
        /// The supported curve and its algorithm.
        only: &'static str,
    },
    /// Key material of the wrong length.
    #[error("{0}")]
    KeyLength(&'static str),
    /// An RSA modulus below the minimum.
    #[error("RSA modulus has {bits} bits; at least {MIN_RSA_BITS} are required")]
    RsaTooSmall {
        /// The modulus' bits.
        bits: usize,
    },
    /// A key type other than EC, RSA and OKP.
    #[error("key type {0:?} is not supported")]
    KeyType(String),
    /// jsonwebtoken's JWK model refuses it.
    #[error("not a valid JWK: {0}")]
    Jwk(String),
    /// jsonwebtoken cannot build a key from it.
    #[error("unusable key: {0}")]
    Unusable(String),
}

impl JwkError {
    /// Bounded label for logs and metrics.
    pub fn kind(&self) -> &'static str {
        match self {
            JwkError::NotAnObject => "not_an_object",
            JwkError::NoKid => "no_kid",
            JwkError::NoKty => "no_kty",
            JwkError::Symmetric => "symmetric",
            JwkError::PrivateMaterial(_) => "private_material",
            JwkError::Use(_) => "use",
            JwkError::KeyOps => "key_ops",
            JwkError::Alg(_) => "alg",
            JwkError::Missing { .. } => "missing_member",
            JwkError::NotBase64url(_) => "not_base64url",
            JwkError::Curve { .. } => "curve",
            JwkError::KeyLength(_) => "key_length",
            JwkError::RsaTooSmall { .. } => "rsa_too_small",
            JwkError::KeyType(_) => "key_type",
            JwkError::Jwk(_) => "jwk",
            JwkError::Unusable(_) => "unusable",
        }
    }
}

/// Why `raw` could not be a trusted verification key (the rules of [`TrustedKeys::add_jwks`]),
/// for keys the gateway publishes itself.
pub(crate) fn check_public_jwk(raw: &Value) -> Result<(), JwkError> {
    parse_jwk(raw).map(|_| ())
}

/// Parses one JWK into a trusted verification key, or says why it cannot be one.
fn parse_jwk(raw: &Value) -> Result<TrustedKey, JwkError> {
    let obj = raw.as_object().ok_or(JwkError::NotAnObject)?;
    let kid = match obj.get("kid") {
        Some(Value::String(k)) if !k.is_empty() => k.clone(),
        _ => return Err(JwkError::NoKid),
    };
    let kty = obj
        .get("kty")
        .and_then(Value::as_str)
        .ok_or(JwkError::NoKty)?;
    if kty == "oct" {
        return Err(JwkError::Symmetric);
    }
    check_public_verify_key(obj)?;
    let alg = match obj.get("alg") {
        None => None,
        Some(Value::String(a)) => Some(a.clone()),
        Some(other) => return Err(JwkError::Alg(other.to_string())),
    };
    let kind = key_kind(obj, kty)?;
    // Parse through jsonwebtoken's own JWK model so the DecodingKey is built the way it expects.
    // Unknown members (e.g. x5c) are ignored by it; `alg` is checked by us, above and at use.
    let mut clean = Map::new();
    for (k, v) in obj {
        if matches!(k.as_str(), "kty" | "crv" | "x" | "y" | "n" | "e" | "kid") {
            clean.insert(k.clone(), v.clone());
        }
    }
    let jwk: Jwk =
        serde_json::from_value(Value::Object(clean)).map_err(|e| JwkError::Jwk(e.to_string()))?;
    let key = DecodingKey::from_jwk(&jwk).map_err(|e| JwkError::Unusable(e.to_string()))?;
    Ok(TrustedKey {
        kid,
        kind,
        alg,
        key,
    })
}

/// No private member, and `use` / `key_ops`, when present, allow verifying signatures.
fn check_public_verify_key(obj: &Map<String, Value>) -> Result<(), JwkError> {
    if let Some(p) = ["d", "p", "q", "dp", "dq", "qi", "k"]
        .into_iter()
        .find(|p| obj.contains_key(*p))
    {
        return Err(JwkError::PrivateMaterial(p));
    }
    if let Some(u) = obj.get("use")
        && u != "sig"
    {
        return Err(JwkError::Use(u.to_string()));
    }
    if let Some(ops) = obj.get("key_ops") {
        let allows_verify = ops
            .as_array()
            .is_some_and(|a| a.iter().any(|o| o == "verify"));
        if !allows_verify {
            return Err(JwkError::KeyOps);
        }
    }
    Ok(())
}

/// The key's type and size, from its `kty` and public members.
fn key_kind(obj: &Map<String, Value>, kty: &str) -> Result<KeyKind, JwkError> {
    let field = |name: &'static str| -> Result<Vec<u8>, JwkError> {
        let s = obj
            .get(name)
            .and_then(Value::as_str)
            .ok_or_else(|| JwkError::Missing {
                kty: kty.to_owned(),
                name,
            })?;
        URL_SAFE_NO_PAD
            .decode(s)
            .map_err(|_| JwkError::NotBase64url(name))
    };
    let curve = |kty: &'static str, want: &str, only: &'static str| {
        let crv = obj.get("crv").and_then(Value::as_str).unwrap_or("");
        match crv == want {
            true => Ok(()),
            false => Err(JwkError::Curve {
                kty,
                crv: crv.to_owned(),
                only,
            }),
        }
    };
    match kty {
        "EC" => {
            curve("EC", "P-256", "P-256, for ES256")?;
            if field("x")?.len() != 32 || field("y")?.len() != 32 {
                return Err(JwkError::KeyLength(
                    "P-256 coordinates must be 32 bytes each",
                ));
            }
            Ok(KeyKind::EcP256)
        }
        "RSA" => {
            let n = field("n")?;
            field("e")?;
            let significant = n.iter().skip_while(|b| **b == 0).count();
            let bits = significant * 8
                - n.iter()
                    .find(|b| **b != 0)
                    .map_or(0, |b| b.leading_zeros() as usize);
            if bits < MIN_RSA_BITS {
                return Err(JwkError::RsaTooSmall { bits });
            }
            Ok(KeyKind::Rsa { bits })
        }
        "OKP" => {
            curve("OKP", "Ed25519", "Ed25519, for EdDSA")?;
            if field("x")?.len() != 32 {
                return Err(JwkError::KeyLength("Ed25519 public key must be 32 bytes"));
            }
            Ok(KeyKind::Ed25519)
        }
        other => Err(JwkError::KeyType(other.to_owned())),
    }
}

/// Verifies the card's `signatures` against the keys trusted for `origin` (the origin the card
/// was fetched from). Succeeds on the first valid signature.
///
/// Errors: [`SignatureError::Unsigned`] when there is nothing to verify (callers decide whether
/// that is acceptable, e.g. `require_signatures`), [`SignatureError::NoTrustedKeys`] when the
/// origin has no keys, [`SignatureError::NoValidSignature`] with one [`Rejection`] per signature.
pub fn verify(card: &Value, keys: &TrustedKeys, origin: &str) -> Result<Verified, SignatureError> {
    let sigs = match card.get("signatures") {
        None | Some(Value::Null) => return Err(SignatureError::Unsigned),
        Some(Value::Array(a)) if a.is_empty() => return Err(SignatureError::Unsigned),
        Some(Value::Array(a)) => a,
        Some(_) => return Err(SignatureError::NotAnArray),
    };
    let trusted = keys
        .for_origin(origin)
        .filter(|k| !k.is_empty())
        .ok_or_else(|| SignatureError::NoTrustedKeys {
            origin: normalise_origin(origin).unwrap_or_else(|| origin.to_owned()),
        })?;

    let as_received = URL_SAFE_NO_PAD.encode(canonical::payload(card)?);
    let stripped = match card {
        Value::Object(m) => {
            let mut m = m.clone();
            m.remove("signatures");
            strip_empty(&Value::Object(m)).unwrap_or(Value::Object(Map::new()))
        }
        other => other.clone(),
    };
    let stripped = URL_SAFE_NO_PAD.encode(canonical::payload(&stripped)?);
    let mut payloads = vec![(PayloadForm::AsReceived, as_received.as_str())];
    if stripped != as_received {
        payloads.push((PayloadForm::EmptiesStripped, stripped.as_str()));
    }

    let mut rejections = Vec::with_capacity(sigs.len());
    for (index, sig) in sigs.iter().enumerate() {
        match check_one(sig, trusted, origin, &payloads) {
            Ok((kid, alg, form)) => {
                return Ok(Verified {
                    kid,
                    alg,
                    index,
                    form,
                });
            }
            Err(rule) => rejections.push(Rejection { index, rule }),
        }
    }
    Err(SignatureError::NoValidSignature { rejections })
}

/// Checks a signature's JOSE header (the unprotected `header` and the protected parameters):
/// returns its algorithm and key id.
fn check_header(
    unprotected: Option<&Value>,
    protected: &Map<String, Value>,
) -> Result<(SigAlg, String), Rule> {
    match unprotected {
        None | Some(Value::Null) => {}
        Some(Value::Object(unprotected)) => {
            if unprotected.contains_key("crit") {
                return Err(Rule::UnprotectedCrit);
            }
            if let Some(dup) = unprotected.keys().find(|k| protected.contains_key(*k)) {
                return Err(Rule::DuplicateParameter(dup.clone()));
            }
        }
        Some(_) => return Err(Rule::HeaderNotObject),
    }
    let alg_name = protected
        .get("alg")
        .and_then(Value::as_str)
        .ok_or(Rule::MissingAlg)?;
    let alg =
        SigAlg::from_jws(alg_name).ok_or_else(|| Rule::AlgorithmNotAllowed(alg_name.into()))?;
    let kid = match protected.get("kid") {
        Some(Value::String(k)) if !k.is_empty() => k.clone(),
        _ => return Err(Rule::MissingKid),
    };
    if let Some(crit) = protected.get("crit") {
        let names: Vec<&str> = crit
            .as_array()
            .filter(|a| !a.is_empty())
            .and_then(|a| a.iter().map(Value::as_str).collect::<Option<Vec<_>>>())
            .ok_or(Rule::MalformedCrit)?;
        let unknown: Vec<String> = names
            .iter()
            .filter(|n| !UNDERSTOOD_CRIT.contains(n))
            .map(|n| n.to_string())
            .collect();
        if !unknown.is_empty() {
            return Err(Rule::UnknownCrit(unknown));
        }
    }
    match protected.get("b64") {
        None | Some(Value::Bool(true)) => Ok((alg, kid)),
        Some(Value::Bool(false)) => Err(Rule::UnencodedPayload),
        Some(_) => Err(Rule::MalformedB64),
    }
}

/// Checks one `AgentCardSignature`; returns the key id, algorithm and matching payload form.
fn check_one(
    sig: &Value,
    trusted: &[TrustedKey],
    origin: &str,
    payloads: &[(PayloadForm, &str)],
) -> Result<(String, SigAlg, PayloadForm), Rule> {
    let sig = sig.as_object().ok_or(Rule::NotAnObject)?;
    let protected_b64 = sig
        .get("protected")
        .and_then(Value::as_str)
        .ok_or(Rule::MissingProtected)?;
    let signature = sig
        .get("signature")
        .and_then(Value::as_str)
        .ok_or(Rule::MissingSignature)?;
    let protected_json = URL_SAFE_NO_PAD
        .decode(protected_b64)
        .map_err(|_| Rule::ProtectedNotBase64)?;
    let protected: Map<String, Value> =
        serde_json::from_slice(&protected_json).map_err(|_| Rule::ProtectedNotObject)?;
    let (alg, kid) = check_header(sig.get("header"), &protected)?;
    let key = trusted
        .iter()
        .find(|k| k.kid == kid)
        .ok_or_else(|| Rule::UnknownKid {
            kid: kid.clone(),
            origin: normalise_origin(origin).unwrap_or_else(|| origin.to_owned()),
        })?;
    let mismatch = |why: String| Rule::KeyMismatch {
        kid: kid.clone(),
        alg,
        why,
    };
    match (alg, &key.kind) {
        (SigAlg::ES256, KeyKind::EcP256)
        | (SigAlg::RS256 | SigAlg::PS256, KeyKind::Rsa { .. })
        | (SigAlg::EdDSA, KeyKind::Ed25519) => {}
        (_, kind) => return Err(mismatch(format!("the key is {kind:?}"))),
    }
    if let Some(key_alg) = &key.alg
        && key_alg != alg.as_str()
    {
        return Err(mismatch(format!(
            "the JWK is restricted to alg {key_alg:?}"
        )));
    }
    if URL_SAFE_NO_PAD.decode(signature).is_err() {
        return Err(Rule::SignatureNotBase64);
    }

    for (form, payload) in payloads {
        let input = format!("{protected_b64}.{payload}");
        match jsonwebtoken::crypto::verify(signature, input.as_bytes(), &key.key, alg.jwt()) {
            Ok(true) => return Ok((kid, alg, *form)),
            Ok(false) => {}
            // Malformed signature bytes for this algorithm (e.g. wrong length): not a match.
            Err(_) => {}
        }
    }
    Err(Rule::BadSignature)
}

/// Drops empty strings, empty arrays and empty objects recursively (an emptied container is
/// dropped too), as both official SDKs do before canonicalising a card for signing. Returns
/// `None` when the value itself is empty. Recursion depth is bounded by the input's nesting,
/// which serde_json's parser limits to 128.
pub fn strip_empty(v: &Value) -> Option<Value> {
    match v {
        Value::String(s) if s.is_empty() => None,
        Value::Array(a) => {
            let kept: Vec<Value> = a.iter().filter_map(strip_empty).collect();
            (!kept.is_empty()).then_some(Value::Array(kept))
        }
        Value::Object(m) => {
            let kept: Map<String, Value> = m
                .iter()
                .filter_map(|(k, v)| strip_empty(v).map(|v| (k.clone(), v)))
                .collect();
            (!kept.is_empty()).then_some(Value::Object(kept))
        }
        other => Some(other.clone()),
    }
}
