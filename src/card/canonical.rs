//! RFC 8785 (JCS) canonical bytes of a card, the basis of both `card_digest` and the JWS payload (pure).

use serde_json::Value;
use sha2::{Digest, Sha256};

/// Errors canonicalising a card.
#[derive(Debug, thiserror::Error)]
pub enum CanonicalError {
    /// The value cannot be written as JCS (e.g. a number outside IEEE 754 double range).
    #[error("card cannot be canonicalised (RFC 8785): {0}")]
    Jcs(String),
}

/// The JCS bytes of `card` with its top-level `signatures` member removed (A2A §8.4 payload).
pub fn payload(card: &Value) -> Result<Vec<u8>, CanonicalError> {
    let bytes = match card {
        Value::Object(map) if map.contains_key("signatures") => {
            let mut m = map.clone();
            m.remove("signatures");
            serde_json_canonicalizer::to_vec(&Value::Object(m))
        }
        other => serde_json_canonicalizer::to_vec(other),
    };
    bytes.map_err(|e| CanonicalError::Jcs(e.to_string()))
}

/// `sha256:<lowercase hex>` of [`payload`]: stable under key order, whitespace and signature changes.
pub fn digest(card: &Value) -> Result<String, CanonicalError> {
    Ok(format!(
        "sha256:{}",
        hex::encode(Sha256::digest(payload(card)?))
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn key_order_and_signatures_do_not_change_the_digest() {
        let a = json!({"b": 1, "a": [1, 2], "signatures": [{"protected": "x", "signature": "y"}]});
        let b: Value = serde_json::from_str(r#"{ "a":[1,2], "b":1 }"#).unwrap();
        assert_eq!(digest(&a).unwrap(), digest(&b).unwrap());
        assert_eq!(payload(&b).unwrap(), br#"{"a":[1,2],"b":1}"#);
    }

    #[test]
    fn a_changed_value_changes_the_digest() {
        assert_ne!(
            digest(&json!({"a": 1})).unwrap(),
            digest(&json!({"a": 2})).unwrap()
        );
    }
}
