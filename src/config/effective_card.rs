//! `[effective_card]`: the key the gateway signs its effective cards with, when it signs them,
//! and the previous keys it keeps publishing for rotation. Raw serde model and validation; reads
//! the key files (the private one only if group and others cannot).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Deserialize;
use serde_json::Value;

use crate::card::sign::{self, SigningKey};

use super::listen::read_private_file;

/// Raw `[effective_card]`.
#[derive(Debug, Clone, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawEffectiveCard {
    /// A private JWK file (ES256 or EdDSA), relative to the config folder.
    #[serde(default)]
    pub signing_key: Option<PathBuf>,
    /// Key id for the signatures, instead of the JWK's own `kid`.
    #[serde(default)]
    pub kid: Option<String>,
    /// `verified-only` (default) or `always`.
    #[serde(default)]
    pub sign: Option<SignMode>,
    /// Public keys kept in the JWK Set after a rotation: a file (a JWK or a JWK Set) or an
    /// inline JWK table.
    #[serde(default)]
    pub previous_keys: Vec<RawPublicKey>,
    /// Where the JWK Set is published, as named in each signature's `jku`
    /// [default: the public URL + `/.well-known/jwks.json`].
    #[serde(default)]
    pub jku: Option<String>,
}

/// One `previous_keys` entry.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(untagged)]
pub enum RawPublicKey {
    /// A file holding a public JWK or a JWK Set.
    File(PathBuf),
    /// The public JWK itself.
    Jwk(Value),
}

/// Which effective cards the gateway signs.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, serde::Serialize, schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum SignMode {
    /// Only cards compiled from an agent card whose own signature verified with a key trusted
    /// for its origin: the gateway vouches only for what it could check.
    #[default]
    VerifiedOnly,
    /// Every effective card but one compiled from an agent card whose signatures are present and
    /// failed: the signature then means "the gateway served this projection of what it fetched
    /// from that origin", not that the agent's content was authenticated.
    Always,
}

/// Validated `[effective_card]` signing settings (present only when a key is configured).
#[derive(Debug, Clone, PartialEq)]
pub struct CardSigning {
    /// The private key file it was read from.
    pub key_file: PathBuf,
    /// The signing key.
    pub key: Arc<SigningKey>,
    /// Which cards are signed.
    pub mode: SignMode,
    /// Public JWKs published besides the current key's, in config order.
    pub previous: Vec<Value>,
    /// `jku` override; `None` means the public URL + `/.well-known/jwks.json`.
    pub jku: Option<String>,
}

impl CardSigning {
    /// The keys the JWK Set publishes: the current key first, then the previous ones.
    pub fn published_keys(&self) -> Vec<Value> {
        let mut keys = vec![self.key.public_jwk()];
        keys.extend(self.previous.iter().cloned());
        keys
    }
}

/// Validates `[effective_card]`; `None` when no signing key is configured (nothing is signed).
/// With `notes` (an offline check), a signing key file that is not there is a note, not a problem.
pub(super) fn effective_card(
    raw: &RawEffectiveCard,
    base: &Path,
    problems: &mut Vec<String>,
    notes: Option<&mut Vec<String>>,
) -> Option<CardSigning> {
    let Some(file) = &raw.signing_key else {
        let set = [
            ("kid", raw.kid.is_some()),
            ("sign", raw.sign.is_some()),
            ("previous_keys", !raw.previous_keys.is_empty()),
            ("jku", raw.jku.is_some()),
        ];
        for (key, _) in set.iter().filter(|(_, on)| *on) {
            problems.push(format!(
                "effective_card.{key}: set without effective_card.signing_key"
            ));
        }
        return None;
    };
    let key_file = base.join(file);
    let key = match read_private_file(&key_file) {
        Err(e) if e.is_missing() && notes.is_some() => {
            if let Some(n) = notes {
                n.push(format!(
                    "effective_card.signing_key: not read ({e}); serve refuses to start without it"
                ));
            }
            // Still check the rest of the table.
            jku(raw, problems);
            previous_keys(&raw.previous_keys, base, problems);
            return None;
        }
        Err(e) => Err(e.to_string()),
        Ok(text) => SigningKey::from_jwk(&text, raw.kid.as_deref())
            .map_err(|e| format!("{}: {e}", key_file.display())),
    };
    let key = key
        .map_err(|e| problems.push(format!("effective_card.signing_key: {e}")))
        .ok();
    let jku = jku(raw, problems);
    let previous = previous_keys(&raw.previous_keys, base, problems);
    let key = key?;
    let mut kids = std::collections::HashSet::from([key.kid().to_owned()]);
    for k in &previous {
        let kid = k.get("kid").and_then(Value::as_str).unwrap_or_default();
        if !kids.insert(kid.to_owned()) {
            problems.push(format!(
                "effective_card.previous_keys: kid {kid:?} is published twice (every published key needs its own kid)"
            ));
        }
    }
    Some(CardSigning {
        key_file,
        key: Arc::new(key),
        mode: raw.sign.unwrap_or_default(),
        previous,
        jku,
    })
}

/// `jku`, checked to be an absolute http(s) URL without a fragment.
fn jku(raw: &RawEffectiveCard, problems: &mut Vec<String>) -> Option<String> {
    raw.jku.as_ref().and_then(|j| match url::Url::parse(j) {
        Ok(u) if matches!(u.scheme(), "https" | "http") && u.fragment().is_none() => {
            Some(j.clone())
        }
        _ => {
            problems.push(format!(
                "effective_card.jku: {j:?} is not an absolute http(s) URL without a fragment"
            ));
            None
        }
    })
}

/// The public JWKs of `previous_keys`, each checked to hold no private material.
fn previous_keys(raw: &[RawPublicKey], base: &Path, problems: &mut Vec<String>) -> Vec<Value> {
    let mut out = Vec::new();
    for (i, entry) in raw.iter().enumerate() {
        let at = format!("effective_card.previous_keys[{i}]");
        let keys = match entry {
            RawPublicKey::Jwk(v) => vec![v.clone()],
            RawPublicKey::File(f) => {
                let path = base.join(f);
                let doc = crate::card::signature::read_jwks(&path)
                    .map_err(|e| e.to_string())
                    .and_then(|t| {
                        serde_json::from_str::<Value>(&t)
                            .map_err(|e| format!("{}: not JSON: {e}", path.display()))
                    });
                match doc {
                    Ok(Value::Object(mut m)) => match m.remove("keys") {
                        Some(Value::Array(keys)) => keys,
                        Some(_) => {
                            problems.push(format!("{at}: `keys` is not an array"));
                            continue;
                        }
                        None => vec![Value::Object(m)],
                    },
                    Ok(_) => {
                        problems.push(format!("{at}: not a JWK or a JWK Set"));
                        continue;
                    }
                    Err(e) => {
                        problems.push(format!("{at}: {e}"));
                        continue;
                    }
                }
            }
        };
        for k in keys {
            match sign::public_jwk(&k) {
                Ok(k) => out.push(k),
                Err(e) => problems.push(format!("{at}: {e}")),
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::card::signature::SigAlg;
    use std::os::unix::fs::PermissionsExt as _;

    fn write_key(dir: &Path, name: &str, kid: &str, mode: u32) -> SigningKey {
        let (key, text) = SigningKey::generate(SigAlg::ES256, Some(kid)).unwrap();
        let p = dir.join(name);
        std::fs::write(&p, text.as_bytes()).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
        key
    }

    fn parse(dir: &Path, text: &str) -> Result<crate::config::Config, Vec<String>> {
        crate::config::Config::parse(text, &dir.join("g.toml")).map_err(|e| match e {
            crate::config::ConfigError::Invalid { problems, .. } => problems,
            other => vec![other.to_string()],
        })
    }

    #[test]
    fn no_key_means_no_signing() {
        let dir = tempfile::tempdir().unwrap();
        assert!(parse(dir.path(), "").unwrap().card_signing.is_none());
        let problems = parse(dir.path(), "[effective_card]\nsign = \"always\"\n").unwrap_err();
        assert_eq!(
            problems,
            ["effective_card.sign: set without effective_card.signing_key"]
        );
    }

    #[test]
    fn a_key_readable_by_group_or_others_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        write_key(dir.path(), "gw.jwk.json", "gw", 0o644);
        let problems = parse(
            dir.path(),
            "[effective_card]\nsigning_key = \"gw.jwk.json\"\n",
        )
        .unwrap_err();
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(
            problems[0].starts_with("effective_card.signing_key: ")
                && problems[0].contains("accessible by group or others (mode 644)"),
            "{problems:?}"
        );
    }

    #[test]
    fn a_full_table_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let key = write_key(dir.path(), "gw.jwk.json", "gw-2", 0o600);
        let (old, _) = SigningKey::generate(SigAlg::EdDSA, Some("gw-1")).unwrap();
        let (older, _) = SigningKey::generate(SigAlg::ES256, Some("gw-0")).unwrap();
        std::fs::write(
            dir.path().join("old.jwks"),
            sign::jwks(&[old.public_jwk()]).to_string(),
        )
        .unwrap();
        let older = older.public_jwk();
        let text = format!(
            "[effective_card]\nsigning_key = \"gw.jwk.json\"\nsign = \"always\"\n\
             jku = \"https://gw.example/keys.json\"\n\
             previous_keys = [\"old.jwks\", {{ kty = \"EC\", crv = \"P-256\", x = {:?}, y = {:?}, kid = \"gw-0\" }}]\n",
            older["x"].as_str().unwrap(),
            older["y"].as_str().unwrap()
        );
        let c = parse(dir.path(), &text).unwrap();
        let s = c.card_signing.unwrap();
        assert_eq!(*s.key, key);
        assert_eq!(s.mode, SignMode::Always);
        assert_eq!(s.jku.as_deref(), Some("https://gw.example/keys.json"));
        let kids: Vec<_> = s
            .published_keys()
            .iter()
            .map(|k| k["kid"].as_str().unwrap().to_owned())
            .collect();
        assert_eq!(kids, ["gw-2", "gw-1", "gw-0"]);
    }

    #[test]
    fn previous_keys_must_be_public_and_distinct() {
        let dir = tempfile::tempdir().unwrap();
        write_key(dir.path(), "gw.jwk.json", "gw", 0o600);
        write_key(dir.path(), "private.jwk.json", "old", 0o600);
        let text = "[effective_card]\nsigning_key = \"gw.jwk.json\"\nkid = \"gw\"\n\
                    previous_keys = [\"private.jwk.json\", \"missing.jwks\"]\njku = \"not a url\"\n";
        let problems = parse(dir.path(), text).unwrap_err();
        assert_eq!(problems.len(), 3, "{problems:?}");
        assert!(
            problems[0].starts_with("effective_card.jku: "),
            "{problems:?}"
        );
        assert!(
            problems[1].starts_with(
                "effective_card.previous_keys[0]: contains private key material (`d`)"
            ),
            "{problems:?}"
        );
        assert!(
            problems[2].starts_with("effective_card.previous_keys[1]: cannot read "),
            "{problems:?}"
        );
    }
}
