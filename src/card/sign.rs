//! The gateway's own Agent Card signatures: a private JWK (ES256 or EdDSA), the JWS with detached
//! payload over the card (A2A specification, "Agent Card Signing"), and the public JWK Set that
//! lets an orchestrator verify it. Pure: keys come in as text, and generating one reads only the
//! operating system's random source.
//!
//! # What is signed
//! The payload is RFC 8785 (JCS) of the card without `signatures`, after dropping empty strings,
//! lists and objects ([`super::signature::strip_empty`]): the form both official SDKs verify. For
//! a card without empty values it is byte for byte the form the specification's worked example
//! signs, so every verifier — this gateway's, the Python SDK's, the JS SDK's — rebuilds the same
//! bytes. The effective card never carries an empty value (its projection replaces a required
//! value that sanitises to nothing and leaves out an empty optional one), so for the cards the
//! gateway serves the two forms coincide; a card with empty values signed here would verify
//! only in the dropped form. The protected header is `{"alg", "kid", "jku", "typ":
//! "JOSE"}` (`typ` as the specification recommends); there is no unprotected header.
//!
//! # Keys
//! A signing key is a private JWK: `{"kty":"EC","crv":"P-256","d","x","y"}` for ES256 or
//! `{"kty":"OKP","crv":"Ed25519","d","x"}` for EdDSA. The public half in the file must be the
//! one `d` yields, so a file cannot publish one key and sign with another. The private scalar
//! lives only inside the [`SigningKey`]; its `Debug` and every error leave it out.

use std::fmt;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::EncodingKey;
use p256::elliptic_curve::Generate as _;
use p256::elliptic_curve::sec1::ToSec1Point as _;
use p256::elliptic_curve::zeroize::Zeroizing;
use p256::pkcs8::EncodePrivateKey as _;
use serde_json::{Map, Value, json};
use sha2::{Digest as _, Sha256};

use super::canonical::{self, CanonicalError};
use super::signature::{SigAlg, strip_empty};

/// Members of a JWK that carry private key material (RFC 7518 §6.2.2, §6.3.2, §6.4; RFC 8037).
const PRIVATE_MEMBERS: &[&str] = &["d", "p", "q", "dp", "dq", "qi", "oth", "k"];

/// Errors reading, generating or using the gateway's signing key. No message ever quotes `d`.
#[derive(Debug, thiserror::Error)]
pub enum SignError {
    /// The key text is not JSON.
    #[error("the key is not JSON: {0}")]
    NotJson(String),
    /// The JSON is not one JWK (an object).
    #[error("the key is not a JWK (a JSON object)")]
    NotAnObject,
    /// The key type or curve is not one the gateway signs with.
    #[error("unsupported key {0} (use an EC P-256 key for ES256 or an OKP Ed25519 key for EdDSA)")]
    Unsupported(String),
    /// A member is missing or malformed; names the member.
    #[error("`{member}`: {why}")]
    Member {
        /// The JWK member.
        member: &'static str,
        /// What is wrong with it.
        why: String,
    },
    /// The JWK has no private part (`d`), so it cannot sign.
    #[error("the key has no private part (`d`); a signing key must be a private JWK")]
    NotPrivate,
    /// A key meant to be published holds private material.
    #[error("contains private key material (`{0}`); a published key must be public only")]
    NotPublic(&'static str),
    /// The public members do not belong to the private key.
    #[error("the public key (`x`/`y`) does not belong to the private key `d`")]
    PublicMismatch,
    /// The key has no `kid` and none was given.
    #[error("no `kid`: give the key one (every signature names its key)")]
    MissingKid,
    /// The crypto backend refused the key or the signature.
    #[error("signing failed: {0}")]
    Crypto(String),
    /// The card cannot be canonicalised.
    #[error(transparent)]
    Canonical(#[from] CanonicalError),
}

impl SignError {
    /// Bounded label for logs and metrics.
    pub fn kind(&self) -> &'static str {
        match self {
            SignError::NotJson(_) => "not_json",
            SignError::NotAnObject => "not_an_object",
            SignError::Unsupported(_) => "unsupported",
            SignError::Member { .. } => "member",
            SignError::NotPrivate => "not_private",
            SignError::NotPublic(_) => "not_public",
            SignError::PublicMismatch => "public_mismatch",
            SignError::MissingKid => "missing_kid",
            SignError::Crypto(_) => "crypto",
            SignError::Canonical(_) => "canonical",
        }
    }
}

/// The gateway's signing key: algorithm, key id, the PKCS#8 document jsonwebtoken signs with,
/// and the public JWK to publish.
#[derive(Clone)]
pub struct SigningKey {
    kid: String,
    alg: SigAlg,
    encoding: EncodingKey,
    public: Map<String, Value>,
}

impl fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SigningKey")
            .field("kid", &self.kid)
            .field("alg", &self.alg)
            .finish_non_exhaustive()
    }
}

impl PartialEq for SigningKey {
    /// Two keys are the same when they publish the same public JWK (the private part follows).
    fn eq(&self, other: &Self) -> bool {
        self.public == other.public
    }
}

impl SigningKey {
    /// Reads a private JWK. `kid`, when given, names the key instead of the JWK's own `kid`.
    pub fn from_jwk(text: &str, kid: Option<&str>) -> Result<SigningKey, SignError> {
        let raw: Value =
            serde_json::from_str(text).map_err(|e| SignError::NotJson(e.to_string()))?;
        let obj = raw.as_object().ok_or(SignError::NotAnObject)?;
        let kid = match (kid, obj.get("kid")) {
            (Some(k), _) if !k.is_empty() => k.to_owned(),
            (_, Some(Value::String(k))) if !k.is_empty() => k.clone(),
            (_, None) => return Err(SignError::MissingKid),
            _ => return Err(member("kid", "must be a non-empty string")),
        };
        check_use(obj, "sign")?;
        let d = Zeroizing::new(b64_member(obj, "d").map_err(|e| match e {
            SignError::Member { why, .. } if why == "missing" => SignError::NotPrivate,
            other => other,
        })?);
        let (alg, pkcs8, public) = match (str_member(obj, "kty"), str_member(obj, "crv")) {
            (Some("EC"), Some("P-256")) => ec_from_private(&d, Some(obj))?,
            (Some("OKP"), Some("Ed25519")) => ed_from_private(&d, Some(obj))?,
            (kty, crv) => {
                return Err(SignError::Unsupported(format!(
                    "kty {:?}, crv {:?}",
                    kty.unwrap_or(""),
                    crv.unwrap_or("")
                )));
            }
        };
        if let Some(a) = obj.get("alg")
            && a.as_str() != Some(alg.as_str())
        {
            return Err(member("alg", &format!("is {a}, but the key is for {alg}")));
        }
        Ok(SigningKey::assemble(kid, alg, &pkcs8, public))
    }

    /// A new random key for `alg` (ES256 or EdDSA) and its private JWK text (zeroed on drop).
    /// Without `kid` the key is named by its RFC 7638 thumbprint.
    pub fn generate(
        alg: SigAlg,
        kid: Option<&str>,
    ) -> Result<(SigningKey, Zeroizing<String>), SignError> {
        let crypto = |e: &dyn fmt::Display| SignError::Crypto(e.to_string());
        let d: Zeroizing<Vec<u8>> = match alg {
            SigAlg::ES256 => {
                let secret = p256::SecretKey::try_generate().map_err(|e| crypto(&e))?;
                Zeroizing::new(secret.to_bytes().to_vec())
            }
            SigAlg::EdDSA => {
                let seed = Zeroizing::new(<[u8; 32]>::try_generate().map_err(|e| crypto(&e))?);
                Zeroizing::new(seed.to_vec())
            }
            other => return Err(SignError::Unsupported(format!("alg {other}"))),
        };
        let (alg, pkcs8, public) = match alg {
            SigAlg::ES256 => ec_from_private(&d, None)?,
            _ => ed_from_private(&d, None)?,
        };
        let kid = match kid {
            Some(k) if !k.is_empty() => k.to_owned(),
            _ => thumbprint(&public),
        };
        let key = SigningKey::assemble(kid, alg, &pkcs8, public);
        let mut private = key.public.clone();
        private.insert("d".into(), Value::String(URL_SAFE_NO_PAD.encode(&*d)));
        let text = Zeroizing::new(format!("{:#}\n", Value::Object(private)));
        Ok((key, text))
    }

    fn assemble(kid: String, alg: SigAlg, pkcs8: &[u8], mut public: Map<String, Value>) -> Self {
        let encoding = match alg {
            SigAlg::ES256 => EncodingKey::from_ec_der(pkcs8),
            _ => EncodingKey::from_ed_der(pkcs8),
        };
        public.insert("kid".into(), Value::String(kid.clone()));
        public.insert("alg".into(), Value::String(alg.as_str().into()));
        public.insert("use".into(), Value::String("sig".into()));
        SigningKey {
            kid,
            alg,
            encoding,
            public,
        }
    }

    /// The key id named in every signature.
    pub fn kid(&self) -> &str {
        &self.kid
    }

    /// The JWS algorithm.
    pub fn alg(&self) -> SigAlg {
        self.alg
    }

    /// The public JWK (`kty`, `crv`, `x`, `y` for EC, `kid`, `alg`, `use: "sig"`).
    pub fn public_jwk(&self) -> Value {
        Value::Object(self.public.clone())
    }
}

/// A key's algorithm, its PKCS#8 document (zeroed on drop) and its public JWK members.
type KeyParts = (SigAlg, Zeroizing<Vec<u8>>, Map<String, Value>);

/// `(alg, PKCS#8 DER, public members)` of a P-256 private scalar; `file`'s `x`/`y` (the JWK the
/// scalar came from, if any) must be its public point.
fn ec_from_private(d: &[u8], file: Option<&Map<String, Value>>) -> Result<KeyParts, SignError> {
    let secret = p256::SecretKey::from_slice(d).map_err(|_| {
        member(
            "d",
            "is not a P-256 private scalar (32 bytes, below the order)",
        )
    })?;
    let point = secret.public_key().to_sec1_point(false);
    let (Some(x), Some(y)) = (point.x(), point.y()) else {
        return Err(SignError::Crypto(
            "the public point has no coordinates".into(),
        ));
    };
    let (x, y) = (URL_SAFE_NO_PAD.encode(x), URL_SAFE_NO_PAD.encode(y));
    if let Some(obj) = file {
        same_public(obj, "x", &x)?;
        same_public(obj, "y", &y)?;
    }
    let der = secret
        .to_pkcs8_der()
        .map_err(|e| SignError::Crypto(e.to_string()))?;
    let public = json!({"kty": "EC", "crv": "P-256", "x": x, "y": y});
    Ok((
        SigAlg::ES256,
        Zeroizing::new(der.as_bytes().to_vec()),
        object(public),
    ))
}

/// `(alg, PKCS#8 DER, public members)` of an Ed25519 seed; `file`'s `x` (the JWK the seed came
/// from, if any) must be its public key.
fn ed_from_private(d: &[u8], file: Option<&Map<String, Value>>) -> Result<KeyParts, SignError> {
    let seed: &[u8; 32] = d
        .try_into()
        .map_err(|_| member("d", "is not a 32-byte Ed25519 seed"))?;
    let secret = ed25519_dalek::SigningKey::from_bytes(seed);
    let x = URL_SAFE_NO_PAD.encode(secret.verifying_key().to_bytes());
    if let Some(obj) = file {
        same_public(obj, "x", &x)?;
    }
    let der = ed25519_dalek::pkcs8::EncodePrivateKey::to_pkcs8_der(&secret)
        .map_err(|e| SignError::Crypto(e.to_string()))?;
    let public = json!({"kty": "OKP", "crv": "Ed25519", "x": x});
    Ok((
        SigAlg::EdDSA,
        Zeroizing::new(der.as_bytes().to_vec()),
        object(public),
    ))
}

/// RFC 7638 thumbprint (SHA-256, base64url) of a public EC or OKP JWK: JCS of its required
/// members is exactly the RFC's "lexicographic order, no whitespace" form.
pub fn thumbprint(public: &Map<String, Value>) -> String {
    let required: Map<String, Value> = ["crv", "kty", "x", "y"]
        .iter()
        .filter_map(|k| public.get(*k).map(|v| ((*k).to_owned(), v.clone())))
        .collect();
    let bytes = serde_json_canonicalizer::to_vec(&Value::Object(required)).unwrap_or_default();
    URL_SAFE_NO_PAD.encode(Sha256::digest(bytes))
}

/// Checks a key meant to be published (a previous signing key kept for rotation): public only,
/// with a `kid`, of a kind the gateway's verifier accepts. Returns it unchanged.
pub fn public_jwk(raw: &Value) -> Result<Value, SignError> {
    let obj = raw.as_object().ok_or(SignError::NotAnObject)?;
    if let Some(p) = PRIVATE_MEMBERS.iter().find(|p| obj.contains_key(**p)) {
        return Err(SignError::NotPublic(p));
    }
    if !matches!(obj.get("kid"), Some(Value::String(k)) if !k.is_empty()) {
        return Err(SignError::MissingKid);
    }
    check_use(obj, "verify")?;
    super::signature::check_public_jwk(raw).map_err(|e| SignError::Unsupported(e.to_string()))?;
    Ok(raw.clone())
}

/// The public JWK Set (RFC 7517) of `keys`, in order.
pub fn jwks(keys: &[Value]) -> Value {
    json!({ "keys": keys })
}

/// The bytes a card signature covers: JCS of the card without `signatures`, empties dropped.
pub fn payload(card: &Value) -> Result<Vec<u8>, SignError> {
    let mut card = card.clone();
    if let Value::Object(m) = &mut card {
        m.remove("signatures");
    }
    let stripped = strip_empty(&card).unwrap_or(Value::Object(Map::new()));
    Ok(canonical::payload(&stripped)?)
}

/// One `AgentCardSignature` over `card` (its `signatures`, if any, are not covered), made with
/// `key`; the protected header names `jku`, where the key's JWK Set is published.
pub fn signature(card: &Value, key: &SigningKey, jku: &str) -> Result<Value, SignError> {
    let header = json!({"alg": key.alg.as_str(), "kid": key.kid, "jku": jku, "typ": "JOSE"});
    let protected = URL_SAFE_NO_PAD.encode(header.to_string());
    let input = format!("{protected}.{}", URL_SAFE_NO_PAD.encode(payload(card)?));
    let alg = match key.alg {
        SigAlg::ES256 => jsonwebtoken::Algorithm::ES256,
        _ => jsonwebtoken::Algorithm::EdDSA,
    };
    let signature = jsonwebtoken::crypto::sign(input.as_bytes(), &key.encoding, alg)
        .map_err(|e| SignError::Crypto(e.to_string()))?;
    Ok(json!({"protected": protected, "signature": signature}))
}

/// `card` with its `signatures` replaced by the one gateway signature.
pub fn sign(card: &Value, key: &SigningKey, jku: &str) -> Result<Value, SignError> {
    let entry = signature(card, key, jku)?;
    let mut signed = card.clone();
    if let Value::Object(m) = &mut signed {
        m.insert("signatures".into(), Value::Array(vec![entry]));
    }
    Ok(signed)
}

/// The file's public member `name` must be `derived` (the value the private part yields).
fn same_public(
    obj: &Map<String, Value>,
    name: &'static str,
    derived: &str,
) -> Result<(), SignError> {
    match str_member(obj, name) {
        None => Err(member(name, "missing")),
        Some(v) if v == derived => Ok(()),
        Some(_) => Err(SignError::PublicMismatch),
    }
}

fn member(member: &'static str, why: &str) -> SignError {
    SignError::Member {
        member,
        why: why.to_owned(),
    }
}

fn str_member<'a>(obj: &'a Map<String, Value>, name: &str) -> Option<&'a str> {
    obj.get(name).and_then(Value::as_str)
}

/// The base64url-decoded bytes of a member.
fn b64_member(obj: &Map<String, Value>, name: &'static str) -> Result<Vec<u8>, SignError> {
    let s = match obj.get(name) {
        None => return Err(member(name, "missing")),
        Some(Value::String(s)) => s,
        Some(_) => return Err(member(name, "must be a base64url string")),
    };
    URL_SAFE_NO_PAD
        .decode(s)
        .map_err(|_| member(name, "is not unpadded base64url"))
}

/// `use`, when present, must be `sig`; `key_ops`, when present, must allow `op`.
fn check_use(obj: &Map<String, Value>, op: &str) -> Result<(), SignError> {
    if let Some(u) = obj.get("use")
        && u != "sig"
    {
        return Err(member("use", &format!("is {u}, expected \"sig\"")));
    }
    if let Some(ops) = obj.get("key_ops")
        && !ops.as_array().is_some_and(|a| a.iter().any(|o| o == op))
    {
        return Err(member("key_ops", &format!("does not include {op:?}")));
    }
    Ok(())
}

fn object(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

#[cfg(test)]
mod tests;
