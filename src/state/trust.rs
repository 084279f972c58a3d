//! Which roots verify an agent's certificate: one decision for its card fetches (reqwest) and
//! its calls (pingora's connector), so the same agent is trusted or refused the same way on both (file I/O:
//! the platform's store, once per process, and the integration's `ca_file`, through the one
//! bounded reader [`crate::types::file`]).
//!
//! The roots are the platform's as pingora's connector loads them by default (the system store,
//! `SSL_CERT_FILE` and `SSL_CERT_DIR` honoured) plus the integration's `ca_file`, which adds roots
//! and never narrows trust. Both paths verify with rustls' webpki verifier over these roots: the
//! full chain and the host name.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock, Mutex};

use rustls::RootCertStore;
use rustls::pki_types::{CertificateDer, pem::PemObject};

/// Cap on a `ca_file`: the whole Mozilla root bundle is about 220 KB of PEM.
pub const MAX_CA_FILE_BYTES: u64 = 4 * 1024 * 1024;

/// The roots one integration's agent is verified against.
#[derive(Debug)]
pub struct TrustRoots {
    /// The root certificates, platform's first, each accepted by rustls as a trust anchor.
    pub certs: Vec<CertificateDer<'static>>,
    /// `0` for the platform's roots alone; else derived from the `ca_file`'s content, so two
    /// trust sets that differ never share a cached TLS configuration or a pooled connection.
    pub id: u64,
    /// Whether a `ca_file` added roots (without one, pingora's connector already holds these
    /// roots and no per-peer list is needed).
    pub extra: bool,
}

impl TrustRoots {
    /// The roots as a rustls store (for a `ClientConfig`).
    pub fn store(&self) -> RootCertStore {
        let mut store = RootCertStore::empty();
        for c in &self.certs {
            // Every certificate was accepted into a store once already.
            let _ = store.add(c.clone());
        }
        store
    }
}

/// Why an integration's `ca_file` cannot extend the roots.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TrustError {
    /// The file cannot be read (missing, not a regular file, over [`MAX_CA_FILE_BYTES`]).
    #[error("ca_file {} cannot be used: {detail}", path.display())]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        detail: String,
    },
    /// The file is not a PEM list of CA certificates.
    #[error("ca_file {}: {detail}", path.display())]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        detail: String,
    },
}

impl TrustError {
    /// Bounded label for logs and metrics.
    pub fn kind(&self) -> &'static str {
        match self {
            TrustError::Unreadable { .. } => "ca_file_unreadable",
            TrustError::Invalid { .. } => "ca_file_invalid",
        }
    }

    /// The file.
    pub fn path(&self) -> &Path {
        match self {
            TrustError::Unreadable { path, .. } | TrustError::Invalid { path, .. } => path,
        }
    }

    /// What is wrong with it.
    pub fn detail(&self) -> &str {
        match self {
            TrustError::Unreadable { detail, .. } | TrustError::Invalid { detail, .. } => detail,
        }
    }
}

/// The platform's roots, read once: loading and parsing them costs far more than the rest of a
/// profile install (hundreds of milliseconds in a debug build).
static PLATFORM: LazyLock<Arc<TrustRoots>> = LazyLock::new(|| {
    let mut certs = Vec::new();
    let mut store = RootCertStore::empty();
    for c in crate::seam::load_native_certs().unwrap_or_default() {
        if store.add(c.clone()).is_ok() {
            certs.push(c);
        }
    }
    Arc::new(TrustRoots {
        certs,
        id: 0,
        extra: false,
    })
});

/// Trust sets with a `ca_file`, by file and content digest: a rotated file has a new digest, so
/// it is picked up at the next card fetch or profile install.
type Key = (PathBuf, [u8; 32]);
static WITH_CA_FILE: LazyLock<Mutex<HashMap<Key, Arc<TrustRoots>>>> =
    LazyLock::new(Default::default);

/// The roots for an integration with `ca_file` (none: the platform's alone).
pub fn trust_roots(ca_file: Option<&Path>) -> Result<Arc<TrustRoots>, TrustError> {
    use sha2::Digest;
    let Some(path) = ca_file else {
        return Ok(PLATFORM.clone());
    };
    let pem = crate::types::file::read_capped(path, MAX_CA_FILE_BYTES, "ca_file").map_err(|e| {
        TrustError::Unreadable {
            path: path.to_owned(),
            detail: e.to_string(),
        }
    })?;
    let digest: [u8; 32] = sha2::Sha256::digest(&pem).into();
    let key = (path.to_owned(), digest);
    let mut cache = WITH_CA_FILE.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(roots) = cache.get(&key) {
        return Ok(roots.clone());
    }
    let roots = Arc::new(with_ca_file(path, &pem, digest)?);
    cache.insert(key, roots.clone());
    Ok(roots)
}

fn with_ca_file(path: &Path, pem: &[u8], digest: [u8; 32]) -> Result<TrustRoots, TrustError> {
    let invalid = |detail: String| TrustError::Invalid {
        path: path.to_owned(),
        detail,
    };
    let mut store = RootCertStore::empty();
    let mut certs = PLATFORM.certs.clone();
    for c in &certs {
        let _ = store.add(c.clone());
    }
    let mut extra = 0;
    for c in CertificateDer::pem_slice_iter(pem) {
        let c = c.map_err(|e| invalid(e.to_string()))?;
        store.add(c.clone()).map_err(|e| invalid(e.to_string()))?;
        certs.push(c);
        extra += 1;
    }
    if extra == 0 {
        return Err(invalid("holds no certificate".into()));
    }
    let [a, b, c, d, e, f, g, h, ..] = digest;
    // Never 0, the platform set's id.
    let id = u64::from_be_bytes([a, b, c, d, e, f, g, h]).max(1);
    Ok(TrustRoots {
        certs,
        id,
        extra: true,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ca_file_adds_to_the_platform_roots_and_is_read_again_when_it_changes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ca.pem");
        let ca = |name: &str| {
            let mut p = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
            p.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
            p.distinguished_name
                .push(rcgen::DnType::CommonName, name.to_owned());
            let key = rcgen::KeyPair::generate().unwrap();
            p.self_signed(&key).unwrap().pem()
        };
        std::fs::write(&path, ca("one")).unwrap();
        let platform = trust_roots(None).unwrap();
        let one = trust_roots(Some(&path)).unwrap();
        assert_eq!(one.certs.len(), platform.certs.len() + 1);
        assert!(one.extra && !platform.extra);
        assert_ne!(one.id, platform.id);
        assert!(Arc::ptr_eq(&one, &trust_roots(Some(&path)).unwrap()));
        std::fs::write(&path, ca("two")).unwrap();
        assert_ne!(trust_roots(Some(&path)).unwrap().id, one.id);
        std::fs::write(&path, "not a certificate").unwrap();
        assert_eq!(
            trust_roots(Some(&path)).unwrap_err().kind(),
            "ca_file_invalid"
        );
        let missing = dir.path().join("missing.pem");
        assert_eq!(
            trust_roots(Some(&missing)).unwrap_err().kind(),
            "ca_file_unreadable"
        );
    }
}
