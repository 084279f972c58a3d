//! Reading an integration's credential from its source, an environment variable or a file, and
//! the header it is sent in (I/O: the environment and the file system; nothing else).

use std::path::PathBuf;

use http::HeaderValue;

use super::{Credential, SecretSource};

/// Why a secret could not be read.
#[derive(Debug, thiserror::Error)]
pub enum SecretError {
    /// The named environment variable is unset or not Unicode.
    #[error("credential environment variable {0} is not set")]
    EnvUnset(String),
    /// The named file cannot be read.
    #[error("credential file {} cannot be read: {source}", path.display())]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The secret is empty once trailing whitespace is trimmed.
    #[error("credential is empty")]
    Empty,
    /// The secret cannot be sent in a header.
    #[error("credential contains characters not allowed in a header")]
    NotAHeader,
}

impl SecretError {
    /// Bounded label for logs and metrics.
    pub fn kind(&self) -> &'static str {
        match self {
            SecretError::EnvUnset(_) => "credential_env_unset",
            SecretError::Unreadable { .. } => "credential_file_unreadable",
            SecretError::Empty => "credential_empty",
            SecretError::NotAHeader => "credential_not_a_header",
        }
    }
}

/// Reads a secret from its source (trailing whitespace trimmed).
pub fn read_secret(source: &SecretSource) -> Result<String, SecretError> {
    let raw = match source {
        SecretSource::Env(var) => {
            std::env::var(var).map_err(|_| SecretError::EnvUnset(var.clone()))?
        }
        SecretSource::File(path) => {
            std::fs::read_to_string(path).map_err(|source| SecretError::Unreadable {
                path: path.clone(),
                source,
            })?
        }
    };
    let s = raw.trim_end().to_owned();
    if s.is_empty() {
        return Err(SecretError::Empty);
    }
    Ok(s)
}

/// The `Authorization` value of `credential`: `Bearer <secret>`, marked sensitive, for a bearer
/// credential; `None` for none and pass-through. The one builder of the header, so an agent's
/// card fetches and its calls carry the same credential.
pub fn bearer_authorization(credential: &Credential) -> Result<Option<HeaderValue>, SecretError> {
    let Credential::Bearer(src) = credential else {
        return Ok(None);
    };
    let token = read_secret(src)?;
    let mut v =
        HeaderValue::from_str(&format!("Bearer {token}")).map_err(|_| SecretError::NotAHeader)?;
    v.set_sensitive(true);
    Ok(Some(v))
}
