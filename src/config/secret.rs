//! Reading an integration's credential from its source, an environment variable or a file, and
//! the header it is sent in (I/O: the environment and the file system, through the one bounded
//! reader [`crate::types::file`]; nothing else).

use http::HeaderValue;

use super::{Credential, SecretSource};
use crate::types::file::{FileError, read_capped_string};

/// Cap on a credential file: a bearer token, even a large JWT, is a few KiB.
pub const MAX_SECRET_BYTES: u64 = 64 * 1024;

/// Why a secret could not be read.
#[derive(Debug, thiserror::Error)]
pub enum SecretError {
    /// The named environment variable is unset or not Unicode.
    #[error("credential environment variable {0} is not set")]
    EnvUnset(String),
    /// The named file cannot be read, is not a regular file, is over its cap or is not UTF-8.
    #[error(transparent)]
    Unreadable(#[from] FileError),
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
            SecretError::Unreadable(_) => "credential_file_unreadable",
            SecretError::Empty => "credential_empty",
            SecretError::NotAHeader => "credential_not_a_header",
        }
    }

    /// Whether the credential is not there to read: the variable unset or empty, the file
    /// missing, unreadable, not a regular file or empty. That is a deployment problem (a Secret
    /// not mounted, a variable not passed), not a change of the agent: reason
    /// `CREDENTIAL_MISSING`. A file over its cap or a secret that cannot be a header is there,
    /// and wrong.
    pub fn is_missing(&self) -> bool {
        match self {
            SecretError::EnvUnset(_) | SecretError::Empty => true,
            SecretError::Unreadable(e) => e.is_missing(),
            SecretError::NotAHeader => false,
        }
    }
}

/// Reads a secret from its source (trailing whitespace trimmed).
pub fn read_secret(source: &SecretSource) -> Result<String, SecretError> {
    let raw = match source {
        SecretSource::Env(var) => {
            std::env::var(var).map_err(|_| SecretError::EnvUnset(var.clone()))?
        }
        SecretSource::File(path) => read_capped_string(path, MAX_SECRET_BYTES, "credential file")?,
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
