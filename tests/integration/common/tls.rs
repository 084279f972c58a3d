//! Test-time TLS material: a throwaway CA and certificates it signed, written to a temp dir (file
//! I/O only), and a loopback TLS listener that presents a chosen certificate (network I/O). Peers
//! load the PEM files; Rust clients trust [`TestPki::ca_pem`].

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use rcgen::{
    BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose,
    date_time_ymd,
};

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
    issuer: Issuer<'static, KeyPair>,
}

/// A further leaf certificate of a [`TestPki`], as PEM files in its temp dir.
pub struct Leaf {
    /// Chain (leaf, then CA), PEM.
    pub cert_path: PathBuf,
    /// Private key (PKCS#8 PEM).
    pub key_path: PathBuf,
}

impl TestPki {
    /// Generates a fresh CA and a leaf for `names`, e.g. `&["127.0.0.1", "localhost"]`.
    pub fn new(names: &[&str]) -> TestPki {
        Self::with_ca_name("a2a-egress test CA", names)
    }

    /// As [`new`](Self::new), with the CA's common name `ca_name` (a different CA than another
    /// `TestPki` even by name).
    pub fn with_ca_name(ca_name: &str, names: &[&str]) -> TestPki {
        let ca_key = KeyPair::generate().expect("CA key");
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params
            .distinguished_name
            .push(DnType::CommonName, ca_name);
        ca_params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let ca_cert = ca_params.self_signed(&ca_key).expect("CA cert");
        let issuer = Issuer::new(ca_params, ca_key);

        let dir = tempfile::tempdir().expect("temp dir");
        let ca_pem = ca_cert.pem();
        let ca_path = dir.path().join("ca.pem");
        std::fs::write(&ca_path, &ca_pem).unwrap();
        let mut pki = TestPki {
            dir,
            ca_pem,
            ca_path,
            cert_path: PathBuf::new(),
            key_path: PathBuf::new(),
            issuer,
        };
        let leaf = pki.leaf("server", names, false);
        pki.cert_path = leaf.cert_path;
        pki.key_path = leaf.key_path;
        pki
    }

    /// Issues another leaf for `names` (files `{file}.pem`/`{file}.key`); `expired` makes it valid
    /// only in 2000–2001, so any verifier refuses it as expired.
    pub fn leaf(&self, file: &str, names: &[&str], expired: bool) -> Leaf {
        let key = KeyPair::generate().expect("leaf key");
        let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
        let mut params = CertificateParams::new(names).expect("leaf params");
        if expired {
            params.not_before = date_time_ymd(2000, 1, 1);
            params.not_after = date_time_ymd(2001, 1, 1);
        }
        let cert = params.signed_by(&key, &self.issuer).expect("leaf cert");
        let cert_path = self.dir.path().join(format!("{file}.pem"));
        let key_path = self.dir.path().join(format!("{file}.key"));
        std::fs::write(&cert_path, format!("{}{}", cert.pem(), self.ca_pem)).unwrap();
        std::fs::write(&key_path, key.serialize_pem()).unwrap();
        Leaf {
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
            .pool_idle_timeout(super::host::PEER_KEEP_ALIVE_MARGIN)
            .build()
            .expect("building a TLS reqwest client")
    }
}

/// A loopback TLS listener presenting one certificate and answering nothing: it exists so a
/// client's certificate check can fail on it. Counts the TCP connections it accepted; stops when
/// dropped.
pub struct TlsListener {
    /// Bound address (`127.0.0.1:PORT`).
    pub addr: std::net::SocketAddr,
    /// Connections accepted so far.
    pub accepted: Arc<AtomicUsize>,
    task: tokio::task::JoinHandle<()>,
}

impl TlsListener {
    /// Binds `127.0.0.1:0` and serves `leaf` (chain and key PEM files).
    pub async fn start(leaf: &Leaf) -> TlsListener {
        let acceptor =
            tokio_rustls::TlsAcceptor::from(server_config(&leaf.cert_path, &leaf.key_path));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("binding the TLS listener");
        let addr = listener.local_addr().expect("bound address");
        let accepted = Arc::new(AtomicUsize::new(0));
        let count = accepted.clone();
        let task = tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                count.fetch_add(1, Ordering::SeqCst);
                let acceptor = acceptor.clone();
                // The handshake is expected to fail on the client's side; nothing is served.
                tokio::spawn(async move { drop(acceptor.accept(tcp).await) });
            }
        });
        TlsListener {
            addr,
            accepted,
            task,
        }
    }
}

/// A rustls server configuration presenting the chain and key PEM files (ring).
fn server_config(
    cert_path: &std::path::Path,
    key_path: &std::path::Path,
) -> Arc<rustls::ServerConfig> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};

    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert_path)
        .expect("chain PEM")
        .collect::<Result<_, _>>()
        .expect("chain certificates");
    let key = PrivateKeyDer::from_pem_file(key_path).expect("key PEM");
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .expect("TLS versions")
    .with_no_client_auth()
    .with_single_cert(chain, key)
    .expect("server certificate");
    Arc::new(config)
}

impl TestPki {
    /// A rustls server configuration presenting this PKI's server certificate.
    pub fn server_config(&self) -> Arc<rustls::ServerConfig> {
        server_config(&self.cert_path, &self.key_path)
    }
}

impl Drop for TlsListener {
    fn drop(&mut self) {
        self.task.abort();
    }
}
