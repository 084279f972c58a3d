//! Test-time TLS material: a throwaway CA and a server certificate it signed, written to a temp
//! dir (file I/O only). Peers load the PEM files; Rust clients trust [`TestPki::ca_pem`].

use std::path::PathBuf;

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose};

/// A CA plus one server certificate for `names` (DNS names or IP addresses), as PEM files.
pub struct TestPki {
    /// Keeps the files alive for the test.
    pub dir: tempfile::TempDir,
    /// The CA certificate (PEM): what clients should trust.
    pub ca_pem: String,
    /// Path of `ca_pem`.
    pub ca_path: PathBuf,
    /// Server certificate chain (leaf, then CA), PEM.
    pub cert_path: PathBuf,
    /// Server private key (PKCS#8 PEM).
    pub key_path: PathBuf,
}

impl TestPki {
    /// Generates a fresh CA and a leaf for `names`, e.g. `&["127.0.0.1", "localhost"]`.
    pub fn new(names: &[&str]) -> TestPki {
        let ca_key = KeyPair::generate().expect("CA key");
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params
            .distinguished_name
            .push(DnType::CommonName, "a2a-egress test CA");
        ca_params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let ca_cert = ca_params.self_signed(&ca_key).expect("CA cert");
        let issuer = Issuer::new(ca_params, ca_key);

        let leaf_key = KeyPair::generate().expect("leaf key");
        let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
        let leaf_params = CertificateParams::new(names).expect("leaf params");
        let leaf = leaf_params
            .signed_by(&leaf_key, &issuer)
            .expect("leaf cert");

        let dir = tempfile::tempdir().expect("temp dir");
        let ca_pem = ca_cert.pem();
        let ca_path = dir.path().join("ca.pem");
        let cert_path = dir.path().join("server.pem");
        let key_path = dir.path().join("server.key");
        std::fs::write(&ca_path, &ca_pem).unwrap();
        std::fs::write(&cert_path, format!("{}{}", leaf.pem(), ca_pem)).unwrap();
        std::fs::write(&key_path, leaf_key.serialize_pem()).unwrap();
        TestPki {
            dir,
            ca_pem,
            ca_path,
            cert_path,
            key_path,
        }
    }

    /// A reqwest client that trusts only this CA (plus nothing else), proxies ignored.
    pub fn client(&self) -> reqwest::Client {
        super::install_crypto_provider();
        let ca = reqwest::Certificate::from_pem(self.ca_pem.as_bytes()).expect("CA PEM");
        reqwest::Client::builder()
            .no_proxy()
            .tls_certs_only([ca])
            .build()
            .expect("building a TLS reqwest client")
    }
}
