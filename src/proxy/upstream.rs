//! The prepared upstream of one integration: address, TLS roots, Host/SNI, credential and the
//! gateway's own HTTP client for streaming calls ([`Upstream::prepare`] does I/O; the rest does not).
//!
//! Everything here is computed once per installed profile, never per request: DNS is resolved
//! when the profile is installed (pingora's `HttpPeer::new` would resolve blocking and panic on
//! failure), the CA file and the secret are read once, and the rustls configuration is built once.

use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::Arc;

use http::HeaderValue;

use crate::config::{Credential, Integration, SecretSource};

/// Longest silence tolerated between two reads from an agent (both upstream paths).
pub const IDLE_READ_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(300);

/// Root certificates for one upstream, in both forms the data plane needs.
pub struct Roots {
    /// For pingora's per-peer CA list (unary calls).
    pub pingora: Arc<pingora::protocols::tls::CaType>,
}

impl std::fmt::Debug for Roots {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Roots({} certificates)", self.pingora.len())
    }
}

/// A resolved, ready-to-use upstream for one integration's chosen interface.
pub struct Upstream {
    /// The interface URL.
    pub url: url::Url,
    /// The address connected to (resolved when the profile was installed).
    pub addr: SocketAddr,
    /// `https` interface.
    pub tls: bool,
    /// TLS server name (the URL's host).
    pub sni: String,
    /// `Host` header sent upstream (host, plus the port when not the scheme default).
    pub authority: String,
    /// The interface URL's path without a trailing slash (`""` for the root).
    pub base_path: String,
    /// Extra roots (`ca_file` plus the platform's), when `ca_file` is set.
    pub roots: Option<Roots>,
    /// The `Authorization` value to send (bearer credential), marked sensitive.
    pub authorization: Option<HeaderValue>,
    /// Forward the caller's `Authorization` unchanged.
    pub pass_through_auth: bool,
    /// The gateway's own client, used for streaming calls whose first answer must be inspected.
    pub client: reqwest::Client,
}

impl std::fmt::Debug for Upstream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Upstream")
            .field("url", &self.url.as_str())
            .field("addr", &self.addr)
            .field("tls", &self.tls)
            .field("authority", &self.authority)
            .field("roots", &self.roots)
            .field(
                "authorization",
                &self.authorization.as_ref().map(|_| "<redacted>"),
            )
            .field("pass_through_auth", &self.pass_through_auth)
            .finish()
    }
}

/// Reads a secret from its source (trailing whitespace trimmed).
pub fn read_secret(source: &SecretSource) -> Result<String, String> {
    let raw = match source {
        SecretSource::Env(var) => std::env::var(var)
            .map_err(|_| format!("credential environment variable {var} is not set"))?,
        SecretSource::File(path) => std::fs::read_to_string(path)
            .map_err(|e| format!("credential file {} cannot be read: {e}", path.display()))?,
    };
    let s = raw.trim_end().to_owned();
    if s.is_empty() {
        return Err("credential is empty".into());
    }
    Ok(s)
}

fn authority_of(u: &url::Url) -> Option<String> {
    let host = u.host_str()?;
    Some(match u.port() {
        Some(p) => format!("{host}:{p}"),
        None => host.to_owned(),
    })
}

impl Upstream {
    /// Resolves and prepares the upstream for `interface_url` under `integration`'s contract (I/O:
    /// DNS, the CA file, the credential). `Err` is the reason the integration is unusable.
    pub fn prepare(interface_url: &str, integration: &Integration) -> Result<Upstream, String> {
        let url = url::Url::parse(interface_url)
            .map_err(|e| format!("interface URL {interface_url:?} does not parse: {e}"))?;
        let tls = match url.scheme() {
            "https" => true,
            "http" => false,
            s => return Err(format!("interface URL scheme {s:?} is not http(s)")),
        };
        let host = url
            .host_str()
            .ok_or_else(|| "interface URL has no host".to_string())?;
        let port = url
            .port_or_known_default()
            .ok_or_else(|| "interface URL has no port".to_string())?;
        // IPv6 literals come bracketed from host_str; ToSocketAddrs wants them bare.
        let bare = host.trim_start_matches('[').trim_end_matches(']');
        let addr = (bare, port)
            .to_socket_addrs()
            .map_err(|e| format!("cannot resolve {host}: {e}"))?
            .next()
            .ok_or_else(|| format!("{host} resolved to no address"))?;
        let authorization = match &integration.credential {
            Credential::Bearer(src) => {
                let token = read_secret(src)?;
                let mut v = HeaderValue::from_str(&format!("Bearer {token}")).map_err(|_| {
                    "credential contains characters not allowed in a header".to_string()
                })?;
                v.set_sensitive(true);
                Some(v)
            }
            Credential::None | Credential::PassThrough => None,
        };
        let (roots, config) = tls_setup(integration)?;
        let mut builder = reqwest::Client::builder()
            .tls_backend_preconfigured(config)
            // The gateway decides where calls go: never follow an agent's redirect elsewhere.
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(std::time::Duration::from_secs(10))
            .read_timeout(IDLE_READ_TIMEOUT)
            .pool_idle_timeout(std::time::Duration::from_secs(60));
        if bare.parse::<std::net::IpAddr>().is_err() {
            // Same address for both paths, resolved once above.
            builder = builder.resolve(bare, addr);
        }
        let client = builder
            .build()
            .map_err(|e| format!("HTTP client setup: {e}"))?;
        Ok(Upstream {
            authority: authority_of(&url).unwrap_or_default(),
            sni: bare.to_owned(),
            base_path: url.path().trim_end_matches('/').to_owned(),
            url,
            addr,
            tls,
            roots,
            authorization,
            pass_through_auth: integration.credential == Credential::PassThrough,
            client,
        })
    }

    /// A fixed upstream without I/O for unit tests (address 127.0.0.1 at the URL's port).
    pub fn for_tests(interface_url: &str) -> Upstream {
        let url = url::Url::parse(interface_url).expect("test URL");
        Upstream {
            addr: SocketAddr::from(([127, 0, 0, 1], url.port_or_known_default().unwrap_or(80))),
            tls: url.scheme() == "https",
            sni: url.host_str().unwrap_or_default().to_owned(),
            authority: authority_of(&url).unwrap_or_default(),
            base_path: url.path().trim_end_matches('/').to_owned(),
            url,
            roots: None,
            authorization: None,
            pass_through_auth: false,
            client: reqwest::Client::builder()
                .tls_backend_preconfigured(
                    rustls::ClientConfig::builder_with_provider(Arc::new(
                        rustls::crypto::ring::default_provider(),
                    ))
                    .with_safe_default_protocol_versions()
                    .expect("ring supports the default versions")
                    .with_root_certificates(rustls::RootCertStore::empty())
                    .with_no_client_auth(),
                )
                .build()
                .expect("client without I/O"),
        }
    }
}

/// Builds the root store (platform roots plus `ca_file`) and the gateway's own client.
/// TLS setups already built, by CA file and its content digest: loading and parsing the platform
/// roots costs far more than the rest of a profile install (hundreds of milliseconds in a debug
/// build), and the control plane installs a new upstream on every profile change. A rotated
/// `ca_file` has a new digest, so it is picked up; platform roots are read once per process.
type TlsKey = (Option<std::path::PathBuf>, Option<[u8; 32]>);
type TlsSetup = (
    Option<Arc<pingora::protocols::tls::CaType>>,
    rustls::ClientConfig,
);
static TLS_SETUPS: std::sync::LazyLock<
    std::sync::Mutex<std::collections::HashMap<TlsKey, TlsSetup>>,
> = std::sync::LazyLock::new(Default::default);

fn tls_setup(integration: &Integration) -> Result<(Option<Roots>, rustls::ClientConfig), String> {
    use sha2::Digest;
    let digest = match &integration.ca_file {
        Some(path) => Some(
            sha2::Sha256::digest(
                std::fs::read(path)
                    .map_err(|e| format!("ca_file {} cannot be read: {e}", path.display()))?,
            )
            .into(),
        ),
        None => None,
    };
    let key = (integration.ca_file.clone(), digest);
    let mut cache = TLS_SETUPS.lock().unwrap_or_else(|p| p.into_inner());
    if let Some((ca, config)) = cache.get(&key) {
        let roots = ca.clone().map(|pingora| Roots { pingora });
        return Ok((roots, config.clone()));
    }
    let (roots, config) = tls_setup_uncached(integration)?;
    cache.insert(
        key,
        (roots.as_ref().map(|r| r.pingora.clone()), config.clone()),
    );
    Ok((roots, config))
}

fn tls_setup_uncached(
    integration: &Integration,
) -> Result<(Option<Roots>, rustls::ClientConfig), String> {
    use rustls::pki_types::{CertificateDer, pem::PemObject};

    let mut store = rustls::RootCertStore::empty();
    let native = pingora::tls::load_native_certs();
    let mut ders: Vec<CertificateDer<'static>> = Vec::new();
    for c in native.unwrap_or_default() {
        if store.add(c.clone()).is_ok() {
            ders.push(c);
        }
    }
    let mut roots = None;
    if let Some(path) = &integration.ca_file {
        let pem = std::fs::read(path)
            .map_err(|e| format!("ca_file {} cannot be read: {e}", path.display()))?;
        let mut extra = 0;
        for c in CertificateDer::pem_slice_iter(&pem) {
            let c = c.map_err(|e| format!("ca_file {}: {e}", path.display()))?;
            store
                .add(c.clone())
                .map_err(|e| format!("ca_file {}: {e}", path.display()))?;
            ders.push(c);
            extra += 1;
        }
        if extra == 0 {
            return Err(format!("ca_file {} holds no certificate", path.display()));
        }
        // pingora replaces its default roots with a per-peer list, so the list carries the
        // platform roots too: ca_file adds roots, it does not narrow trust.
        let wrapped: Vec<pingora::utils::tls::WrappedX509> = ders
            .iter()
            .map(|d| {
                pingora::utils::tls::WrappedX509::new(d.as_ref().to_vec(), |raw| {
                    pingora::utils::tls::parse_x509(raw)
                })
            })
            .collect();
        roots = Some(Roots {
            pingora: Arc::from(wrapped.into_boxed_slice()),
        });
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS setup: {e}"))?
        .with_root_certificates(store)
        .with_no_client_auth();
    Ok((roots, config))
}
