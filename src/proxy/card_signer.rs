//! The gateway's signature on its effective cards, and the JWK Set that verifies it (no I/O).
//!
//! A card is signed once per distinct content, not per request: the signed card is kept per
//! integration beside the unsigned card's ETag it was made from, and made again only when that
//! changes (a new profile, an override, a config change that alters the projection). Both
//! algorithms are deterministic (RFC 6979 nonces for ES256, Ed25519 by construction), so the same
//! card signed again, after a restart for instance, has the same bytes and the same ETag; the
//! ETag changes exactly when the card or its signature does.
//!
//! `jku` defaults to `/.well-known/jwks.json` under the data plane's public URL (`[listen]
//! public_url`, else the bound address): the base the orchestrator already reaches the effective
//! card at, so the key is published wherever the card is.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use prometheus::IntCounterVec;
use serde_json::Value;

use super::route::JWKS_PATH;
use crate::card::sign::{self, SigningKey};
use crate::config::{CardSigning, SignMode};
use crate::profile::Profile;
use crate::types::etag::Tagged;

/// `Cache-Control` of the JWK Set: keys change only with a restart, and a rotation keeps the
/// previous key published, so a few minutes of caching loses nothing.
pub const JWKS_CACHE_CONTROL: &str = "public, max-age=300";

/// Media type of a JWK Set (RFC 7517 §8.5).
pub const JWKS_CONTENT_TYPE: &str = "application/jwk-set+json";

/// Why the `jku` the gateway's signatures name may mislead an orchestrator that fetches keys
/// from it rather than holding the distributed public key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JkuRisk {
    /// Not https: anyone on the path can answer the fetch with their own key set.
    NotHttps,
    /// `[listen] public_url` is unset and `jku` defaulted: it names the bound address (perhaps
    /// `0.0.0.0`), which is not where orchestrators reach the gateway.
    PublicUrlUnset,
}

impl JkuRisk {
    /// Bounded label for logs.
    pub fn reason(self) -> &'static str {
        match self {
            JkuRisk::NotHttps => "jku_not_https",
            JkuRisk::PublicUrlUnset => "public_url_unset",
        }
    }

    /// What the operator should do.
    pub fn advice(self) -> &'static str {
        match self {
            JkuRisk::NotHttps => {
                "the jku of the gateway's card signatures is not https; orchestrators should trust the distributed public key, or set [listen] public_url or [effective_card] jku to an https URL"
            }
            JkuRisk::PublicUrlUnset => {
                "[listen] public_url is unset, so the jku of the gateway's card signatures names the bound address; set public_url to the address orchestrators use"
            }
        }
    }
}

/// The risks of `jku` (the one the signatures name); `jku_configured` is whether `[effective_card]
/// jku` set it, `public_url_configured` whether `[listen] public_url` is set. Pure.
pub fn jku_risks(jku: &str, jku_configured: bool, public_url_configured: bool) -> Vec<JkuRisk> {
    let mut risks = Vec::new();
    let https = url::Url::parse(jku).is_ok_and(|u| u.scheme() == "https");
    if !https {
        risks.push(JkuRisk::NotHttps);
    }
    if !jku_configured && !public_url_configured {
        risks.push(JkuRisk::PublicUrlUnset);
    }
    risks
}

/// The identity of the next signer made (see [`CardSigner::id`]); `0` means "no signer".
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// Signs effective cards with the configured key and serves its JWK Set.
pub struct CardSigner {
    /// This signer's identity, part of the key a state's rendered card is kept under.
    id: u64,
    key: Arc<SigningKey>,
    mode: SignMode,
    jku: String,
    jwks: Bytes,
    /// Integration name → (the unsigned card's ETag, the card served for it: signed, or the
    /// unsigned one when signing it failed, so a failure is logged and counted once per content).
    signed: Mutex<HashMap<String, (String, Tagged)>>,
    /// `a2a_egress_card_signatures_total{result}`, when the gateway's metrics are attached.
    counter: Option<IntCounterVec>,
}

impl std::fmt::Debug for CardSigner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CardSigner")
            .field("kid", &self.key.kid())
            .field("mode", &self.mode)
            .field("jku", &self.jku)
            .finish_non_exhaustive()
    }
}

impl CardSigner {
    /// The signer for `[effective_card]`; `public_url` is the data plane's base URL (no trailing
    /// slash), used for the default `jku`.
    pub fn new(config: &CardSigning, public_url: &str) -> CardSigner {
        let jku = config
            .jku
            .clone()
            .unwrap_or_else(|| format!("{public_url}{JWKS_PATH}"));
        let jwks = Bytes::from(sign::jwks(&config.published_keys()).to_string());
        CardSigner {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            key: config.key.clone(),
            mode: config.mode,
            jku,
            jwks,
            signed: Mutex::new(HashMap::new()),
            counter: None,
        }
    }

    /// The signer counting each signing (and each failure) on `counter`
    /// (`a2a_egress_card_signatures_total{result}`).
    pub fn counting(mut self, counter: IntCounterVec) -> CardSigner {
        self.counter = Some(counter);
        self
    }

    fn count(&self, result: &str) {
        if let Some(c) = &self.counter {
            c.with_label_values(&[result]).inc();
        }
    }

    /// This signer's identity (never `0`, never another signer's): a card a state kept for one
    /// signer is not served for another.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// The JWK Set body (public keys only: the current key, then the previous ones).
    pub fn jwks(&self) -> Bytes {
        self.jwks.clone()
    }

    /// The `jku` every signature names.
    pub fn jku(&self) -> &str {
        &self.jku
    }

    /// Whether the effective card projected from `profile` is signed: with `sign = "always"`,
    /// unless the agent's card carried signatures that failed (the gateway's signature then means
    /// only "the gateway served this projection", and must not paper over a failed one); with
    /// `verified-only`, only when the agent's own card signature verified.
    pub fn applies(&self, profile: &Profile) -> bool {
        match self.mode {
            SignMode::Always => !profile.signature_failed,
            SignMode::VerifiedOnly => profile.verified_by.is_some(),
        }
    }

    /// `card` (whose rendering is `unsigned`) with the gateway's signature, from the cache when
    /// this integration's card has not changed since it was last signed. A card that cannot be
    /// signed is served unsigned, with a warning once per card content (signing is
    /// deterministic, so trying the same content again would fail again).
    pub fn signed(&self, name: &str, card: &Value, unsigned: Tagged) -> Tagged {
        if let Some((etag, served)) = self.lock().get(name)
            && *etag == unsigned.etag
        {
            return served.clone();
        }
        let served = match sign::sign(card, &self.key, &self.jku) {
            Ok(v) => {
                let signed = Tagged::json(&v);
                tracing::info!(integration = %name, kid = %self.key.kid(), etag = %signed.etag, "effective card signed");
                self.count("signed");
                signed
            }
            Err(e) => {
                tracing::warn!(integration = %name, kind = e.kind(), error = %e, "effective card served unsigned: signing failed");
                self.count("failed");
                unsigned.clone()
            }
        };
        self.lock()
            .insert(name.to_owned(), (unsigned.etag, served.clone()));
        served
    }

    /// What `/readyz` shows: the key, the mode, the `jku`, and the integrations whose current
    /// card is served unsigned because signing it failed (sorted).
    pub fn readiness(&self) -> Value {
        let mut failed: Vec<String> = self
            .lock()
            .iter()
            .filter(|(_, (etag, served))| *etag == served.etag)
            .map(|(name, _)| name.clone())
            .collect();
        failed.sort();
        serde_json::json!({
            "kid": self.key.kid(),
            "alg": self.key.alg().as_str(),
            "mode": self.mode,
            "jku": self.jku,
            "failed": failed,
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, (String, Tagged)>> {
        // The map is only ever replaced entry by entry, so a panic elsewhere cannot leave it
        // half-updated.
        self.signed.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_jku_that_is_not_https_or_names_the_bound_address_is_a_risk() {
        use JkuRisk::*;
        let jwks = "/.well-known/jwks.json";
        assert_eq!(
            jku_risks(&format!("http://0.0.0.0:7411{jwks}"), false, false),
            [NotHttps, PublicUrlUnset]
        );
        assert_eq!(
            jku_risks(&format!("http://gw.internal{jwks}"), false, true),
            [NotHttps]
        );
        assert_eq!(jku_risks("https://gw.example/k", true, false), []);
        assert_eq!(jku_risks(&format!("https://gw{jwks}"), false, true), []);
        assert_eq!(jku_risks("not a url", true, true), [NotHttps]);
    }
    use crate::card::signature::{self, SigAlg, TrustedKeys};
    use crate::config::CardSigning;
    use std::path::PathBuf;

    fn signer(mode: SignMode, jku: Option<&str>) -> (CardSigner, SigningKey) {
        let (key, _) = SigningKey::generate(SigAlg::ES256, Some("gw")).unwrap();
        let (old, _) = SigningKey::generate(SigAlg::EdDSA, Some("gw-old")).unwrap();
        let config = CardSigning {
            key_file: PathBuf::from("k"),
            key: Arc::new(key.clone()),
            mode,
            previous: vec![old.public_jwk()],
            jku: jku.map(str::to_owned),
        };
        (CardSigner::new(&config, "http://127.0.0.1:7411"), key)
    }

    #[test]
    fn signs_once_per_distinct_card() {
        let (s, key) = signer(SignMode::Always, None);
        let metrics = crate::metrics::Metrics::new();
        let s = s.counting(metrics.card_signatures.clone());
        let signings = || metrics.card_signatures.with_label_values(&["signed"]).get();
        assert_eq!(s.jku(), "http://127.0.0.1:7411/.well-known/jwks.json");
        let card = serde_json::json!({"name": "a", "description": "d"});
        let first = s.signed("a", &card, Tagged::json(&card));
        assert_ne!(
            first,
            Tagged::json(&card),
            "the signature changes the body and the ETag"
        );
        let again = s.signed("a", &card, Tagged::json(&card));
        assert_eq!(again, first);
        assert_eq!(signings(), 1, "the same card is signed once");

        let changed = serde_json::json!({"name": "a", "description": "e"});
        let second = s.signed("a", &changed, Tagged::json(&changed));
        assert_ne!(second.etag, first.etag);
        assert_eq!(signings(), 2, "a changed card is signed again");
        s.signed("a", &changed, Tagged::json(&changed));
        assert_eq!(signings(), 2);
        assert_eq!(
            metrics.card_signatures.with_label_values(&["failed"]).get(),
            0
        );
        assert_eq!(
            s.readiness(),
            serde_json::json!({"kid": "gw", "alg": "ES256", "mode": "always",
                "jku": "http://127.0.0.1:7411/.well-known/jwks.json", "failed": []})
        );
        let v: Value = serde_json::from_slice(&second.body).unwrap();
        let mut keys = TrustedKeys::default();
        keys.add_jwks(
            "http://127.0.0.1:7411",
            &String::from_utf8_lossy(&s.jwks()),
            "jwks",
        )
        .unwrap();
        assert_eq!(
            signature::verify(&v, &keys, "http://127.0.0.1:7411")
                .unwrap()
                .kid,
            key.kid()
        );
    }

    #[test]
    fn the_jwks_holds_public_keys_only_current_first() {
        let (s, _) = signer(SignMode::VerifiedOnly, Some("https://gw.example/k"));
        assert_eq!(s.jku(), "https://gw.example/k");
        let v: Value = serde_json::from_slice(&s.jwks()).unwrap();
        let kids: Vec<_> = v["keys"]
            .as_array()
            .unwrap()
            .iter()
            .map(|k| k["kid"].as_str().unwrap())
            .collect();
        assert_eq!(kids, ["gw", "gw-old"]);
        assert!(
            v["keys"]
                .as_array()
                .unwrap()
                .iter()
                .all(|k| k.get("d").is_none())
        );
    }
}
