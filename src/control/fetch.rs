//! Safe HTTP fetches for the control plane: Agent Cards and other small JSON documents from an
//! integration's approved origins, with an SSRF guard, a streaming size cap and timeouts (I/O).
//!
//! Every fetch follows the same steps, each of which can refuse with a typed [`FetchError`]:
//!
//! 1. the URL's origin must be one of the integration's approved origins (and `http` must be allowed);
//! 2. the host is resolved **once** and **every** address is classified; loopback, private, link-local,
//!    multicast, unspecified, CGNAT, reserved and cloud-metadata addresses are refused unless the
//!    approved origin names that address literally (`http://127.0.0.1:7400` allows loopback for that
//!    origin only; `http://localhost:7400` does not, because a name can be rebound);
//! 3. the request goes out on a client pinned to exactly the checked addresses (reqwest's
//!    `resolve_to_addrs`), so no second lookup can rebind the name; system proxies are ignored;
//! 4. redirects are never followed by reqwest: same-origin redirects are followed here, a few at most,
//!    and a redirect to any other origin is refused;
//! 5. the body is read chunk by chunk and the fetch aborts as soon as it exceeds the cap;
//! 6. connect and total timeouts bound the whole exchange, redirects included.
//!
//! The TLS configuration (the roots `state::trust` decides: the platform's plus the integration's
//! `ca_file`, the same ones its calls are verified against) is built once per trust set and shared; the reqwest `Client` itself is built per fetch because the pinned
//! addresses are part of it. Card fetches happen at refresh periods (seconds to hours), so losing
//! connection reuse costs nothing that matters, and a shared client could not pin per-fetch addresses.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::{Bytes, BytesMut};

pub use crate::control::addr::{AddrClass, ApprovedOrigin, classify};
#[cfg(doc)]
use crate::state::trust::TrustRoots;
use crate::state::trust::trust_roots;
use serde::{Deserialize, Serialize};

/// The protocol version sent as `A2A-Version` on every card fetch (the official JS SDK with 0.3
/// compatibility serves a 0.3-shaped card to a fetch without it).
pub const CARD_FETCH_A2A_VERSION: &str = "1.0";

/// Default connect timeout.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// Default total timeout for one fetch, redirects and body included.
pub const DEFAULT_TOTAL_TIMEOUT: Duration = Duration::from_secs(15);
/// Default number of same-origin redirects followed.
pub const DEFAULT_MAX_REDIRECTS: u8 = 3;

/// Why a fetch was refused or failed. Each variant names the rule or the step that failed.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum FetchError {
    /// The URL did not parse or is not an absolute http(s) URL with a host.
    #[error("invalid URL {url:?}: {reason}")]
    InvalidUrl {
        /// The URL as given.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The URL's origin is not one of the integration's approved origins.
    #[error("origin {origin} is not approved for this integration (approved: {})", approved.join(", "))]
    OriginNotApproved {
        /// The origin of the refused URL.
        origin: String,
        /// The approved origins.
        approved: Vec<String>,
    },
    /// `http://` was used while plain HTTP is not allowed (`[client] allow_plain_http = false`).
    #[error(
        "plain http is not allowed for {url} (set [client] allow_plain_http for loopback tests)"
    )]
    PlainHttpNotAllowed {
        /// The refused URL.
        url: String,
    },
    /// DNS resolution failed.
    #[error("cannot resolve {host}: {reason}")]
    Resolve {
        /// The host name.
        host: String,
        /// The resolver's message.
        reason: String,
    },
    /// DNS returned no address.
    #[error("{host} resolved to no address")]
    NoAddress {
        /// The host name.
        host: String,
    },
    /// One of the resolved addresses is in a range this origin may not reach.
    #[error("{host} resolves to {addr}, a {class} address, which origin {origin} may not reach")]
    AddressRefused {
        /// The host name (or literal).
        host: String,
        /// The refused address.
        addr: IpAddr,
        /// Its class.
        class: AddrClass,
        /// The origin being fetched.
        origin: String,
    },
    /// A redirect pointed at another origin.
    #[error("redirect from {from} to {to} leaves the origin; refused")]
    RedirectOffOrigin {
        /// The URL that answered with the redirect.
        from: String,
        /// Where it pointed.
        to: String,
    },
    /// A redirect had no usable `Location`.
    #[error("redirect from {from} has no valid Location header")]
    BadRedirect {
        /// The URL that answered with the redirect.
        from: String,
    },
    /// More redirects than allowed.
    #[error("more than {limit} redirects")]
    TooManyRedirects {
        /// The limit.
        limit: u8,
    },
    /// A redirect on a request that must not be redirected (authenticated calls).
    #[error("{url} answered with redirect {status}; authenticated calls never follow redirects")]
    RedirectNotAllowed {
        /// The URL.
        url: String,
        /// The status code.
        status: u16,
    },
    /// The body (or its declared length) exceeds the cap.
    #[error("response body exceeds the {limit}-byte limit")]
    TooLarge {
        /// The cap in bytes.
        limit: usize,
    },
    /// The whole exchange took longer than the total timeout.
    #[error("no complete response within {}s", after.as_secs_f64())]
    Timeout {
        /// The total timeout.
        after: Duration,
    },
    /// Connecting, TLS or the HTTP exchange failed.
    #[error("request to {url} failed: {reason}")]
    Transport {
        /// The URL.
        url: String,
        /// The transport error with its causes.
        reason: String,
    },
    /// The server answered with a status that is neither success, 304 nor a redirect.
    #[error("{url} answered HTTP {status}")]
    Status {
        /// The URL.
        url: String,
        /// The status code.
        status: u16,
    },
    /// A 304 arrived although no validators were sent.
    #[error("{url} answered 304 Not Modified to an unconditional request")]
    UnexpectedNotModified {
        /// The URL.
        url: String,
    },
    /// The integration's `ca_file` could not be loaded.
    #[error("ca_file {path}: {reason}")]
    CaFile {
        /// The file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
}

impl FetchError {
    /// Every value [`FetchError::kind`] returns (kept beside it), so the failure counters can
    /// exist at 0 before the first failure.
    pub const KINDS: [&'static str; 16] = [
        "invalid_url",
        "origin_not_approved",
        "plain_http_not_allowed",
        "resolve",
        "no_address",
        "address_refused",
        "redirect_off_origin",
        "bad_redirect",
        "too_many_redirects",
        "redirect_not_allowed",
        "too_large",
        "timeout",
        "transport",
        "status",
        "unexpected_not_modified",
        "ca_file",
    ];

    /// A bounded, machine-readable name for metric labels and evidence (one of [`Self::KINDS`]).
    pub fn kind(&self) -> &'static str {
        match self {
            FetchError::InvalidUrl { .. } => "invalid_url",
            FetchError::OriginNotApproved { .. } => "origin_not_approved",
            FetchError::PlainHttpNotAllowed { .. } => "plain_http_not_allowed",
            FetchError::Resolve { .. } => "resolve",
            FetchError::NoAddress { .. } => "no_address",
            FetchError::AddressRefused { .. } => "address_refused",
            FetchError::RedirectOffOrigin { .. } => "redirect_off_origin",
            FetchError::BadRedirect { .. } => "bad_redirect",
            FetchError::TooManyRedirects { .. } => "too_many_redirects",
            FetchError::RedirectNotAllowed { .. } => "redirect_not_allowed",
            FetchError::TooLarge { .. } => "too_large",
            FetchError::Timeout { .. } => "timeout",
            FetchError::Transport { .. } => "transport",
            FetchError::Status { .. } => "status",
            FetchError::UnexpectedNotModified { .. } => "unexpected_not_modified",
            FetchError::CaFile { .. } => "ca_file",
        }
    }
}

/// How one integration's fetches are constrained.
#[derive(Debug, Clone)]
pub struct FetchPolicy {
    /// Approved origins; every URL fetched (redirect targets included) must be on one of them.
    pub origins: Vec<ApprovedOrigin>,
    /// Accept `http://` URLs.
    pub allow_plain_http: bool,
    /// Body cap in bytes, enforced while streaming.
    pub max_bytes: usize,
    /// TCP (and TLS) connect timeout.
    pub connect_timeout: Duration,
    /// Bound on the whole exchange, redirects and body included.
    pub total_timeout: Duration,
    /// Same-origin redirects followed at most.
    pub max_redirects: u8,
    /// Extra PEM roots for this integration (absolute, or relative to the working directory).
    pub ca_file: Option<PathBuf>,
}

impl FetchPolicy {
    /// A policy with the defaults for timeouts and redirects.
    pub fn new(origins: Vec<ApprovedOrigin>, max_bytes: usize, allow_plain_http: bool) -> Self {
        FetchPolicy {
            origins,
            allow_plain_http,
            max_bytes,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            total_timeout: DEFAULT_TOTAL_TIMEOUT,
            max_redirects: DEFAULT_MAX_REDIRECTS,
            ca_file: None,
        }
    }

    /// Parses origin strings; `Err` names the first one that is not `scheme://host[:port]`.
    pub fn from_origin_strs<S: AsRef<str>>(
        origins: &[S],
        max_bytes: usize,
        allow_plain_http: bool,
    ) -> Result<Self, FetchError> {
        let mut parsed = Vec::new();
        for o in origins {
            parsed.push(ApprovedOrigin::parse(o.as_ref()).ok_or_else(|| {
                FetchError::InvalidUrl {
                    url: o.as_ref().to_owned(),
                    reason: "not a scheme://host[:port] origin".into(),
                }
            })?);
        }
        Ok(Self::new(parsed, max_bytes, allow_plain_http))
    }

    /// Checks that a connection to `ip` for `url` is allowed: the URL's origin is approved and the
    /// address is public or the one the origin names literally (pure). Used on the address the data
    /// plane actually resolved for an interface.
    pub fn check_addr(&self, url: &str, ip: IpAddr) -> Result<(), FetchError> {
        let u = url::Url::parse(url).map_err(|e| FetchError::InvalidUrl {
            url: url.to_owned(),
            reason: e.to_string(),
        })?;
        let origin = self.origin_for(&u)?;
        if origin.allows(ip) {
            Ok(())
        } else {
            Err(FetchError::AddressRefused {
                host: u.host_str().unwrap_or_default().to_owned(),
                addr: ip,
                class: classify(ip),
                origin: origin.serialized.clone(),
            })
        }
    }

    fn origin_for(&self, url: &url::Url) -> Result<&ApprovedOrigin, FetchError> {
        let origin = url.origin().ascii_serialization();
        self.origins
            .iter()
            .find(|o| o.serialized == origin)
            .ok_or_else(|| FetchError::OriginNotApproved {
                origin,
                approved: self.origins.iter().map(|o| o.serialized.clone()).collect(),
            })
    }
}

/// HTTP validators of a fetched document, sent back on the next conditional request.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Validators {
    /// `ETag` as received (weak or strong), for `If-None-Match`.
    pub etag: Option<String>,
    /// `Last-Modified` as received, for `If-Modified-Since`.
    pub last_modified: Option<String>,
}

impl Validators {
    /// Whether there is anything to send.
    pub fn is_empty(&self) -> bool {
        self.etag.is_none() && self.last_modified.is_none()
    }
}

/// The result of a successful fetch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FetchOutcome {
    /// A 200 with a body within the cap.
    Fetched {
        /// The body.
        bytes: Bytes,
        /// Validators from the response.
        validators: Validators,
        /// `Cache-Control: max-age` (0 for `no-cache`/`no-store`), if the server sent one.
        max_age: Option<Duration>,
        /// The origin the body came from (always an approved one).
        origin: String,
        /// The final URL after same-origin redirects.
        url: String,
    },
    /// A 304: the stored document is still current.
    NotModified {
        /// Validators from the 304 (updated ones win; else the ones sent).
        validators: Validators,
        /// `Cache-Control: max-age` from the 304, if any.
        max_age: Option<Duration>,
    },
}

/// Parses `max-age` from a `Cache-Control` value (pure). `no-store`/`no-cache` mean 0; duplicate or
/// malformed `max-age` values resolve to the smallest valid one (RFC 9111 §4.2.1 treats them as stale).
pub fn parse_max_age(cache_control: &str) -> Option<Duration> {
    let mut best: Option<u64> = None;
    let mut zero = false;
    for directive in cache_control.split(',') {
        let d = directive.trim();
        let (name, value) = match d.split_once('=') {
            Some((n, v)) => (n.trim(), Some(v.trim().trim_matches('"'))),
            None => (d, None),
        };
        if name.eq_ignore_ascii_case("no-store") || name.eq_ignore_ascii_case("no-cache") {
            zero = true;
        } else if name.eq_ignore_ascii_case("max-age") {
            match value.and_then(|v| v.parse::<u64>().ok()) {
                Some(secs) => best = Some(best.map_or(secs, |b| b.min(secs))),
                None => zero = true,
            }
        }
    }
    if zero {
        Some(Duration::ZERO)
    } else {
        best.map(Duration::from_secs)
    }
}

/// A request made by [`CardFetcher::send`].
#[derive(Debug, Clone)]
pub(crate) struct Outgoing {
    pub method: reqwest::Method,
    pub url: String,
    pub headers: reqwest::header::HeaderMap,
    pub body: Option<Bytes>,
    /// Follow same-origin redirects (only for unauthenticated GETs).
    pub follow_redirects: bool,
}

/// A response read within the cap.
#[derive(Debug)]
pub(crate) struct Incoming {
    pub status: reqwest::StatusCode,
    pub headers: reqwest::header::HeaderMap,
    pub body: Bytes,
    pub url: url::Url,
}

/// Fetches documents under a [`FetchPolicy`]. Cheap to clone; share one per process.
#[derive(Clone, Default)]
pub struct CardFetcher {
    /// TLS configurations by trust set ([`TrustRoots::id`]), built once each.
    tls: Arc<Mutex<HashMap<u64, rustls::ClientConfig>>>,
}

impl std::fmt::Debug for CardFetcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CardFetcher").finish_non_exhaustive()
    }
}

/// Installs the ring provider as the process default (idempotent); reqwest panics without one.
pub fn install_crypto_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

impl CardFetcher {
    /// A fetcher; installs the ring crypto provider if none is installed yet.
    pub fn new() -> Self {
        install_crypto_provider();
        CardFetcher::default()
    }

    /// Fetches a card (or any small JSON document) with `GET`, `A2A-Version: 1.0` and
    /// `Accept: application/json`, conditionally when validators are given.
    pub async fn fetch(
        &self,
        url: &str,
        policy: &FetchPolicy,
        validators: Option<&Validators>,
    ) -> Result<FetchOutcome, FetchError> {
        use reqwest::header::{ACCEPT, HeaderMap, HeaderValue, IF_MODIFIED_SINCE, IF_NONE_MATCH};
        let mut headers = HeaderMap::new();
        headers.insert(ACCEPT, HeaderValue::from_static("application/json"));
        headers.insert(
            "a2a-version",
            HeaderValue::from_static(CARD_FETCH_A2A_VERSION),
        );
        let conditional = validators.is_some_and(|v| !v.is_empty());
        if let Some(v) = validators {
            // Validators come from a server; a value that is not a valid header is dropped, not sent.
            if let Some(h) = v
                .etag
                .as_deref()
                .and_then(|e| HeaderValue::from_str(e).ok())
            {
                headers.insert(IF_NONE_MATCH, h);
            }
            if let Some(h) = v
                .last_modified
                .as_deref()
                .and_then(|e| HeaderValue::from_str(e).ok())
            {
                headers.insert(IF_MODIFIED_SINCE, h);
            }
        }
        let resp = self
            .send(
                Outgoing {
                    method: reqwest::Method::GET,
                    url: url.to_owned(),
                    headers,
                    body: None,
                    follow_redirects: true,
                },
                policy,
            )
            .await?;
        let max_age = resp
            .headers
            .get(reqwest::header::CACHE_CONTROL)
            .and_then(|v| v.to_str().ok())
            .and_then(parse_max_age);
        let got = validators_of(&resp.headers);
        match resp.status.as_u16() {
            200 => Ok(FetchOutcome::Fetched {
                bytes: resp.body,
                validators: got,
                max_age,
                origin: resp.url.origin().ascii_serialization(),
                url: resp.url.to_string(),
            }),
            304 if conditional => {
                let sent = validators.cloned().unwrap_or_default();
                Ok(FetchOutcome::NotModified {
                    validators: Validators {
                        etag: got.etag.or(sent.etag),
                        last_modified: got.last_modified.or(sent.last_modified),
                    },
                    max_age,
                })
            }
            304 => Err(FetchError::UnexpectedNotModified {
                url: resp.url.to_string(),
            }),
            status => Err(FetchError::Status {
                url: resp.url.to_string(),
                status,
            }),
        }
    }

    /// Sends one request under the policy: origin check, one checked DNS lookup, pinned connect,
    /// manual same-origin redirects, capped body, total timeout.
    pub(crate) async fn send(
        &self,
        req: Outgoing,
        policy: &FetchPolicy,
    ) -> Result<Incoming, FetchError> {
        let after = policy.total_timeout;
        match tokio::time::timeout(after, self.send_inner(req, policy)).await {
            Ok(r) => r,
            Err(_) => Err(FetchError::Timeout { after }),
        }
    }

    async fn send_inner(
        &self,
        req: Outgoing,
        policy: &FetchPolicy,
    ) -> Result<Incoming, FetchError> {
        let mut url = url::Url::parse(&req.url).map_err(|e| FetchError::InvalidUrl {
            url: req.url.clone(),
            reason: e.to_string(),
        })?;
        let (origin, host, addrs) = check_destination(&url, policy).await?;
        let client = self.client_for(&host, &addrs, policy)?;
        let mut redirects = 0u8;
        loop {
            let mut rb = client
                .request(req.method.clone(), url.clone())
                .headers(req.headers.clone());
            if let Some(b) = &req.body {
                rb = rb.body(b.clone());
            }
            let mut resp = rb.send().await.map_err(|e| transport(&url, &e, policy))?;
            let status = resp.status();
            if status.is_redirection() && status != reqwest::StatusCode::NOT_MODIFIED {
                if !req.follow_redirects {
                    return Err(FetchError::RedirectNotAllowed {
                        url: url.to_string(),
                        status: status.as_u16(),
                    });
                }
                let next = resp
                    .headers()
                    .get(reqwest::header::LOCATION)
                    .and_then(|l| l.to_str().ok())
                    .and_then(|l| url.join(l).ok())
                    .ok_or_else(|| FetchError::BadRedirect {
                        from: url.to_string(),
                    })?;
                if next.origin() != url.origin() {
                    return Err(FetchError::RedirectOffOrigin {
                        from: url.to_string(),
                        to: next.to_string(),
                    });
                }
                redirects += 1;
                if redirects > policy.max_redirects {
                    return Err(FetchError::TooManyRedirects {
                        limit: policy.max_redirects,
                    });
                }
                // Same origin means same host: the pinned, already checked addresses still apply.
                debug_assert!(policy.origin_for(&next).is_ok_and(|o| *o == origin));
                url = next;
                continue;
            }
            let limit = policy.max_bytes;
            if resp.content_length().is_some_and(|n| n > limit as u64) {
                return Err(FetchError::TooLarge { limit });
            }
            let mut body = BytesMut::new();
            while let Some(chunk) = resp
                .chunk()
                .await
                .map_err(|e| transport(&url, &e, policy))?
            {
                if body.len() + chunk.len() > limit {
                    return Err(FetchError::TooLarge { limit });
                }
                body.extend_from_slice(&chunk);
            }
            return Ok(Incoming {
                status,
                headers: resp.headers().clone(),
                body: body.freeze(),
                url,
            });
        }
    }

    fn client_for(
        &self,
        host: &str,
        addrs: &[SocketAddr],
        policy: &FetchPolicy,
    ) -> Result<reqwest::Client, FetchError> {
        let tls = self.tls_config(policy.ca_file.as_deref())?;
        let mut b = reqwest::Client::builder()
            .tls_backend_preconfigured(tls)
            .no_proxy()
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(policy.connect_timeout)
            .timeout(policy.total_timeout)
            .pool_max_idle_per_host(0);
        if !addrs.is_empty() {
            b = b.resolve_to_addrs(host, addrs);
        }
        b.build().map_err(|e| FetchError::Transport {
            url: host.to_owned(),
            reason: error_chain(&e),
        })
    }

    /// The TLS configuration for an integration's `ca_file`: the roots [`trust_roots`] decides,
    /// the same ones its calls are verified against.
    fn tls_config(&self, ca_file: Option<&Path>) -> Result<rustls::ClientConfig, FetchError> {
        // The CA file is read (and hashed) on every fetch, so a replaced file applies at once:
        // off the data plane's threads.
        let roots = crate::types::file::blocking(|| trust_roots(ca_file));
        let roots = roots.map_err(|e| FetchError::CaFile {
            path: e.path().to_owned(),
            reason: e.detail().to_owned(),
        })?;
        let mut cache = self.tls.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(c) = cache.get(&roots.id) {
            return Ok(c.clone());
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| FetchError::CaFile {
                path: ca_file.map(Path::to_path_buf).unwrap_or_default(),
                reason: e.to_string(),
            })?
            .with_root_certificates(roots.store())
            .with_no_client_auth();
        cache.insert(roots.id, config.clone());
        Ok(config)
    }
}

/// Checks that `url` may be reached under `policy`: approved origin, allowed scheme, one DNS lookup,
/// every address allowed. Returns the origin, the host as reqwest sees it, and the checked addresses
/// (empty for an IP literal, which needs no lookup).
pub(crate) async fn check_destination(
    url: &url::Url,
    policy: &FetchPolicy,
) -> Result<(ApprovedOrigin, String, Vec<SocketAddr>), FetchError> {
    match url.scheme() {
        "https" => {}
        "http" if policy.allow_plain_http => {}
        "http" => {
            return Err(FetchError::PlainHttpNotAllowed {
                url: url.to_string(),
            });
        }
        other => {
            return Err(FetchError::InvalidUrl {
                url: url.to_string(),
                reason: format!("scheme {other:?} is not http(s)"),
            });
        }
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(FetchError::InvalidUrl {
            url: url.to_string(),
            reason: "credentials in the URL are not allowed".into(),
        });
    }
    let origin = policy.origin_for(url)?.clone();
    let port = url.port_or_known_default().unwrap_or(443);
    let refuse = |host: &str, addr: IpAddr| FetchError::AddressRefused {
        host: host.to_owned(),
        addr,
        class: classify(addr),
        origin: origin.serialized.clone(),
    };
    match url.host() {
        Some(url::Host::Ipv4(a)) => {
            let ip = IpAddr::V4(a);
            if !origin.allows(ip) {
                return Err(refuse(&a.to_string(), ip));
            }
            Ok((origin.clone(), a.to_string(), Vec::new()))
        }
        Some(url::Host::Ipv6(a)) => {
            let ip = IpAddr::V6(a);
            if !origin.allows(ip) {
                return Err(refuse(&a.to_string(), ip));
            }
            Ok((origin.clone(), a.to_string(), Vec::new()))
        }
        Some(url::Host::Domain(d)) => {
            let host = d.to_owned();
            let addrs: Vec<SocketAddr> = tokio::net::lookup_host((host.as_str(), port))
                .await
                .map_err(|e| FetchError::Resolve {
                    host: host.clone(),
                    reason: e.to_string(),
                })?
                .collect();
            if addrs.is_empty() {
                return Err(FetchError::NoAddress { host });
            }
            // Every address must pass, not just the first: the connector may try any of them.
            if let Some(bad) = addrs.iter().find(|a| !origin.allows(a.ip())) {
                return Err(refuse(&host, bad.ip()));
            }
            Ok((origin, host, addrs))
        }
        None => Err(FetchError::InvalidUrl {
            url: url.to_string(),
            reason: "no host".into(),
        }),
    }
}

/// Checks that a URL (e.g. a card's interface URL) may be reached under `policy`, resolving it once.
/// The control plane uses this to vet an interface before a profile that routes to it is installed.
pub async fn check_url(url: &str, policy: &FetchPolicy) -> Result<(), FetchError> {
    let u = url::Url::parse(url).map_err(|e| FetchError::InvalidUrl {
        url: url.to_owned(),
        reason: e.to_string(),
    })?;
    check_destination(&u, policy).await.map(|_| ())
}

fn validators_of(h: &reqwest::header::HeaderMap) -> Validators {
    let get = |name| {
        h.get(name)
            .and_then(|v: &reqwest::header::HeaderValue| v.to_str().ok())
            .map(str::to_owned)
    };
    Validators {
        etag: get(reqwest::header::ETAG),
        last_modified: get(reqwest::header::LAST_MODIFIED),
    }
}

fn transport(url: &url::Url, e: &reqwest::Error, policy: &FetchPolicy) -> FetchError {
    // reqwest's own timer is the total timeout too (the connect timeout aside); when both fire
    // in one poll, the exchange's error comes first and must say what the outer timer says.
    if e.is_timeout() && !e.is_connect() {
        return FetchError::Timeout {
            after: policy.total_timeout,
        };
    }
    FetchError::Transport {
        url: url.to_string(),
        reason: error_chain(e),
    }
}

/// The error and its causes on one line (reqwest's top-level message alone hides the reason).
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        s.push_str(": ");
        s.push_str(&c.to_string());
        cur = c.source();
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn max_age_parsing() {
        assert_eq!(
            parse_max_age("public, max-age=3600"),
            Some(Duration::from_secs(3600))
        );
        assert_eq!(
            parse_max_age("MAX-AGE=\"60\""),
            Some(Duration::from_secs(60))
        );
        assert_eq!(
            parse_max_age("max-age=60, max-age=30"),
            Some(Duration::from_secs(30))
        );
        assert_eq!(parse_max_age("no-cache"), Some(Duration::ZERO));
        assert_eq!(parse_max_age("max-age=abc"), Some(Duration::ZERO));
        assert_eq!(parse_max_age("public"), None);
        assert_eq!(parse_max_age(""), None);
    }

    #[tokio::test]
    async fn refusals_before_any_connection() {
        let f = CardFetcher::new();
        let p = FetchPolicy::from_origin_strs(&["https://agent.example"], 1024, false).unwrap();
        let e = f
            .fetch("https://other.example/x", &p, None)
            .await
            .unwrap_err();
        assert_eq!(e.kind(), "origin_not_approved", "{e}");
        let e = f
            .fetch("http://agent.example/x", &p, None)
            .await
            .unwrap_err();
        assert_eq!(e.kind(), "plain_http_not_allowed", "{e}");
        let e = f
            .fetch("ftp://agent.example/x", &p, None)
            .await
            .unwrap_err();
        assert_eq!(e.kind(), "invalid_url", "{e}");
        let e = f.fetch("not a url", &p, None).await.unwrap_err();
        assert_eq!(e.kind(), "invalid_url", "{e}");
        let p = FetchPolicy::from_origin_strs(&["http://10.0.0.1"], 1024, true).unwrap();
        // The literal origin allows 10.0.0.1 itself, but an interface on 10.0.0.2 is another origin.
        let e = check_url("http://10.0.0.2/rpc", &p).await.unwrap_err();
        assert_eq!(e.kind(), "origin_not_approved", "{e}");
        let p = FetchPolicy::from_origin_strs(&["http://localhost:9"], 1024, true).unwrap();
        let e = check_url("http://localhost:9/", &p).await.unwrap_err();
        assert!(
            matches!(
                e,
                FetchError::AddressRefused {
                    class: AddrClass::Loopback,
                    ..
                }
            ),
            "{e}"
        );
        assert!(e.to_string().contains("loopback"), "{e}");
    }
}
