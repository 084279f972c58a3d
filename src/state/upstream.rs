//! The prepared upstream of one integration: address, TLS roots, Host/SNI and credential
//! ([`Upstream::prepare`] does I/O; the rest does not).
//!
//! Everything here is computed once per installed profile, never per request: DNS is resolved
//! when the profile is installed (pingora's `HttpPeer::new` would resolve blocking and panic on
//! failure), and the CA file and the secret are read once. The roots are kept in the form
//! pingora's connector takes, so the data plane builds its peer from them without further work.

use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::Arc;

use http::HeaderValue;

use super::trust::{TrustError, TrustRoots, trust_roots};
use crate::config::{Credential, Integration, SecretError, bearer_authorization};

/// Root certificates for one upstream (pingora's per-peer CA list).
pub struct Roots {
    /// The list handed to pingora: the platform roots plus the integration's `ca_file`.
    pub pingora: Arc<crate::seam::CaType>,
    /// Identifies this trust set, so pooled connections verified under it are never reused by an
    /// upstream that trusts something else (pingora's `group_key`).
    pub id: u64,
}

impl std::fmt::Debug for Roots {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Roots({} certificates)", self.pingora.len())
    }
}

/// Why an interface cannot be prepared as an upstream (the integration is then unusable).
#[derive(Debug, thiserror::Error)]
pub enum UpstreamError {
    /// The interface URL does not parse.
    #[error("interface URL {url:?} does not parse: {source}")]
    Url {
        /// The URL as the card has it.
        url: String,
        /// The parse error.
        source: url::ParseError,
    },
    /// Not `http` or `https`.
    #[error("interface URL scheme {0:?} is not http(s)")]
    Scheme(String),
    /// No host, or no port and no scheme default.
    #[error("interface URL has no host or port")]
    NoHostOrPort,
    /// DNS failed or gave no address.
    #[error("cannot resolve {host}: {detail}")]
    Resolve {
        /// The host.
        host: String,
        /// What the resolver said.
        detail: String,
    },
    /// The credential cannot be read.
    #[error(transparent)]
    Secret(#[from] SecretError),
    /// `ca_file` cannot extend the roots.
    #[error(transparent)]
    Trust(#[from] TrustError),
}

impl UpstreamError {
    /// Bounded label for logs and metrics.
    pub fn kind(&self) -> &'static str {
        match self {
            UpstreamError::Url { .. } => "interface_url_invalid",
            UpstreamError::Scheme(_) => "interface_scheme",
            UpstreamError::NoHostOrPort => "interface_no_host",
            UpstreamError::Resolve { .. } => "interface_unresolvable",
            UpstreamError::Secret(e) => e.kind(),
            UpstreamError::Trust(e) => e.kind(),
        }
    }
}

/// Why a profile has no upstream (the integration is then unusable, with this as the reason):
/// whatever the control plane's preparation of the interface ran into.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{reason}")]
pub struct NoUpstream {
    /// Bounded label of the failure (the preparing module's error kind).
    pub kind: &'static str,
    /// Human-readable reason (never a metric label).
    pub reason: String,
}

impl NoUpstream {
    /// Bounded label for logs and metrics.
    pub fn kind(&self) -> &'static str {
        self.kind
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
    /// Extra roots (`ca_file` plus the platform's), when `ca_file` is set; otherwise the
    /// platform roots of pingora's connector are used.
    pub roots: Option<Roots>,
    /// The `Authorization` value to send (bearer credential), marked sensitive.
    pub authorization: Option<HeaderValue>,
    /// Forward the caller's `Authorization` unchanged.
    pub pass_through_auth: bool,
    /// The roots TLS trusts (the platform's, plus `ca_file`'s): what a gRPC call's own TLS
    /// configuration is built from, so it trusts exactly what every other call does.
    pub trust: Arc<TrustRoots>,
    /// The gRPC channels to this upstream, one per data-plane thread (`proxy::client::grpc`):
    /// each thread's calls do their I/O on that thread's runtime, over a connection of their
    /// own (a slow reader on one thread never holds another's HTTP/2 flow-control window), made
    /// on its first gRPC call and dropped with the upstream, so a new profile never reuses a
    /// channel of the old one.
    pub grpc: GrpcChannels,
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

/// The gRPC channels of one upstream, by the thread that calls (see [`Upstream::grpc`]).
#[derive(Default)]
pub struct GrpcChannels(std::sync::Mutex<Vec<(std::thread::ThreadId, tonic::transport::Channel)>>);

impl GrpcChannels {
    /// This thread's channel, made with `make` the first time (or after [`GrpcChannels::forget`]).
    pub fn get_or_make<E>(
        &self,
        make: impl FnOnce() -> Result<tonic::transport::Channel, E>,
    ) -> Result<tonic::transport::Channel, E> {
        let me = std::thread::current().id();
        let mut all = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((_, c)) = all.iter().find(|(t, _)| *t == me) {
            return Ok(c.clone());
        }
        let c = make()?;
        all.push((me, c.clone()));
        Ok(c)
    }

    /// Drops this thread's channel (its connection closes once no call holds it): the next
    /// call connects again. For a connection that let a deadline pass.
    pub fn forget(&self) {
        let me = std::thread::current().id();
        let mut all = self.0.lock().unwrap_or_else(|p| p.into_inner());
        all.retain(|(t, _)| *t != me);
    }
}

/// `host[:port]` of `u` as requests to it name it (the port only when the URL has one).
pub fn authority_of(u: &url::Url) -> Option<String> {
    let host = u.host_str()?;
    Some(match u.port() {
        Some(p) => format!("{host}:{p}"),
        None => host.to_owned(),
    })
}

impl Upstream {
    /// Resolves and prepares the upstream for `interface_url` under `integration`'s contract (I/O:
    /// DNS, the CA file, the credential). `Err` is the reason the integration is unusable.
    pub fn prepare(
        interface_url: &str,
        integration: &Integration,
    ) -> Result<Upstream, UpstreamError> {
        let url = url::Url::parse(interface_url).map_err(|source| UpstreamError::Url {
            url: interface_url.to_owned(),
            source,
        })?;
        let tls = match url.scheme() {
            "https" => true,
            "http" => false,
            s => return Err(UpstreamError::Scheme(s.to_owned())),
        };
        let (Some(host), Some(port)) = (url.host_str(), url.port_or_known_default()) else {
            return Err(UpstreamError::NoHostOrPort);
        };
        // IPv6 literals come bracketed from host_str; ToSocketAddrs wants them bare.
        let bare = host.trim_start_matches('[').trim_end_matches(']');
        let resolve = |detail: String| UpstreamError::Resolve {
            host: host.to_owned(),
            detail,
        };
        let addr = (bare, port)
            .to_socket_addrs()
            .map_err(|e| resolve(e.to_string()))?
            .next()
            .ok_or_else(|| resolve("no address".into()))?;
        let authorization = bearer_authorization(&integration.credential)?;
        let (roots, trust) = roots(integration)?;
        Ok(Upstream {
            authority: authority_of(&url).unwrap_or_default(),
            sni: bare.to_owned(),
            base_path: url.path().trim_end_matches('/').to_owned(),
            roots,
            url,
            addr,
            tls,
            authorization,
            pass_through_auth: integration.credential == Credential::PassThrough,
            trust,
            grpc: GrpcChannels::default(),
        })
    }

    /// A fixed upstream without I/O for unit tests (address 127.0.0.1 at the URL's port); only
    /// in test builds (`cfg(test)` or the `testkit` feature), so the shipped binary cannot build one.
    #[cfg(any(test, feature = "testkit"))]
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
            trust: trust_roots(None).expect("the platform's roots"),
            grpc: GrpcChannels::default(),
        }
    }
}

/// pingora's per-peer root lists, by trust set: building one parses every certificate, and the
/// control plane installs a new upstream on every profile change.
static PINGORA_ROOTS: std::sync::LazyLock<
    std::sync::Mutex<std::collections::HashMap<u64, Arc<crate::seam::CaType>>>,
> = std::sync::LazyLock::new(Default::default);

/// The upstream's roots, as [`trust_roots`] decides them for the integration: `None` without
/// `ca_file` (pingora's connector holds the platform's roots already), else the whole list.
fn roots(integration: &Integration) -> Result<(Option<Roots>, Arc<TrustRoots>), UpstreamError> {
    let trust = trust_roots(integration.ca_file.as_deref())?;
    if !trust.extra {
        return Ok((None, trust));
    }
    let mut cache = PINGORA_ROOTS.lock().unwrap_or_else(|p| p.into_inner());
    let list = cache
        .entry(trust.id)
        .or_insert_with(|| {
            // pingora replaces its default roots with a per-peer list, so the list carries the
            // platform roots too: ca_file adds roots, it does not narrow trust.
            let wrapped: Vec<crate::seam::WrappedX509> = trust
                .certs
                .iter()
                .map(|d| {
                    crate::seam::WrappedX509::new(d.as_ref().to_vec(), |raw| {
                        crate::seam::parse_x509(raw)
                    })
                })
                .collect();
            Arc::from(wrapped.into_boxed_slice())
        })
        .clone();
    let id = trust.id;
    Ok((Some(Roots { pingora: list, id }), trust))
}
