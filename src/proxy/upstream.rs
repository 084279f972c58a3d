//! How the data plane connects to a prepared [`Upstream`]: the one pingora peer every call
//! uses, and the names of the TLS faults a failed handshake can have (pure).
//!
//! Every call is made by the gateway's own client ([`super::client`]) through [`peer`], so every
//! call trusts, verifies and times out the same way. Calls never go
//! through a proxy named by the environment (`HTTP_PROXY` and the like): pingora's connector does
//! not read them, and the address the control plane checked is the one connected to.

use std::time::Duration;

use pingora::prelude::HttpPeer;

use crate::seam::ALPN;
use crate::state::Upstream;

/// Longest silence tolerated between two reads from an agent.
pub const IDLE_READ_TIMEOUT: Duration = Duration::from_secs(300);

/// TCP connect timeout; with TLS the handshake has until [`TOTAL_CONNECT_TIMEOUT`].
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
const TOTAL_CONNECT_TIMEOUT: Duration = Duration::from_secs(15);
/// Per write: an agent that does not take a small request in this long is gone.
const WRITE_TIMEOUT: Duration = Duration::from_secs(30);
/// How long an idle pooled connection to an agent is kept.
pub const POOL_IDLE_TIMEOUT: Duration = Duration::from_secs(60);

/// The peer every call connects to: the pinned address, TLS with the upstream's
/// roots and full certificate and host name verification, HTTP/1.1, and the gateway's
/// timeouts. Pure: no DNS (the address is already resolved).
pub fn peer(up: &Upstream) -> HttpPeer {
    let mut peer = HttpPeer::new(up.addr, up.tls, up.sni.clone());
    let o = &mut peer.options;
    o.alpn = ALPN::H1;
    o.verify_cert = true;
    o.verify_hostname = true;
    o.connection_timeout = Some(CONNECT_TIMEOUT);
    o.total_connection_timeout = Some(TOTAL_CONNECT_TIMEOUT);
    // Per read, not per call: a blocking SendMessage or a quiet stream may legitimately run
    // for minutes, but an agent silent this long is gone (SDK agents ping SSE every 15 s).
    o.read_timeout = Some(IDLE_READ_TIMEOUT);
    o.write_timeout = Some(WRITE_TIMEOUT);
    o.idle_timeout = Some(POOL_IDLE_TIMEOUT);
    if let Some(roots) = &up.roots {
        o.ca = Some(roots.pingora.clone());
        // pingora's pool does not key connections by the CA: the trust group keeps a connection
        // verified against one set of roots from a peer that trusts another.
        crate::seam::set_trust_group(&mut peer, roots.id);
    }
    peer
}

/// The certificate problem behind a failed TLS handshake with an agent, as far as the gateway can
/// name it for the caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TlsFault {
    /// The chain does not lead to a trusted root (unknown or self-signed CA).
    UnknownIssuer,
    /// The certificate is valid, but not for the interface's host name.
    NameMismatch,
    /// The certificate has expired (or is not valid yet).
    Expired,
    /// Any other handshake failure (protocol versions, ciphers, a reset mid-handshake, …).
    Handshake,
}

impl TlsFault {
    /// Bounded label.
    pub fn as_str(self) -> &'static str {
        match self {
            TlsFault::UnknownIssuer => "certificate_unknown",
            TlsFault::NameMismatch => "certificate_name_mismatch",
            TlsFault::Expired => "certificate_expired",
            TlsFault::Handshake => "tls_handshake",
        }
    }
}

impl std::fmt::Display for TlsFault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            TlsFault::UnknownIssuer => "the agent's certificate is not signed by a trusted CA",
            TlsFault::NameMismatch => "the agent's certificate is not valid for its host name",
            TlsFault::Expired => "the agent's certificate has expired or is not valid yet",
            TlsFault::Handshake => "the TLS handshake with the agent failed",
        })
    }
}

/// Names the TLS fault behind a pingora connect error, or `None` when it is not a TLS failure.
///
/// Pingora's rustls connector keeps only the text of the rustls error (its `Display`), so that
/// text is what is matched; the unit tests below format real rustls errors, so a change in
/// rustls' wording fails them rather than silently turning every fault into `Handshake`.
pub fn tls_fault(e: &pingora::Error) -> Option<TlsFault> {
    use pingora::ErrorType;
    if !matches!(
        e.etype(),
        ErrorType::TLSHandshakeFailure | ErrorType::InvalidCert | ErrorType::HandshakeError
    ) {
        return None;
    }
    Some(classify_tls_text(&e.to_string()))
}

/// Names the TLS fault of a rustls error (the gRPC path's own connector keeps the error itself,
/// so its variant is read, not its text).
pub fn rustls_fault(e: &rustls::Error) -> TlsFault {
    use rustls::CertificateError as C;
    match e {
        rustls::Error::InvalidCertificate(C::UnknownIssuer | C::BadSignature) => {
            TlsFault::UnknownIssuer
        }
        rustls::Error::InvalidCertificate(
            C::NotValidForName | C::NotValidForNameContext { .. },
        ) => TlsFault::NameMismatch,
        rustls::Error::InvalidCertificate(
            C::Expired | C::ExpiredContext { .. } | C::NotValidYet | C::NotValidYetContext { .. },
        ) => TlsFault::Expired,
        _ => TlsFault::Handshake,
    }
}

fn classify_tls_text(text: &str) -> TlsFault {
    let has = |s: &str| text.contains(s);
    // `BadSignature`: a CA with a trusted CA's name but another key signed it (an impostor of a
    // trusted issuer): to the caller, as unknown as any other CA.
    if has("UnknownIssuer") || has("BadSignature") {
        TlsFault::UnknownIssuer
    } else if has("not valid for name") || has("NotValidForName") {
        TlsFault::NameMismatch
    } else if has("certificate expired") || has("not valid yet") || has("Expired") {
        TlsFault::Expired
    } else {
        TlsFault::Handshake
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustls::CertificateError;

    fn text(e: CertificateError) -> String {
        // What pingora's handshake error carries: the rustls error's Display inside its context.
        format!(
            "TLSHandshakeFailure context: TLS connect() failed: tls connect error cause: {}, SNI: a.example",
            rustls::Error::InvalidCertificate(e)
        )
    }

    #[test]
    fn rustls_certificate_errors_are_named() {
        assert_eq!(
            classify_tls_text(&text(CertificateError::UnknownIssuer)),
            TlsFault::UnknownIssuer
        );
        assert_eq!(
            classify_tls_text(&text(CertificateError::BadSignature)),
            TlsFault::UnknownIssuer
        );
        assert_eq!(
            classify_tls_text(&text(CertificateError::NotValidForName)),
            TlsFault::NameMismatch
        );
        assert_eq!(
            classify_tls_text(&text(CertificateError::NotValidForNameContext {
                expected: rustls::pki_types::ServerName::try_from("a.example")
                    .unwrap()
                    .to_owned(),
                presented: vec!["DnsName(\"b.example\")".into()],
            })),
            TlsFault::NameMismatch
        );
        assert_eq!(
            classify_tls_text(&text(CertificateError::Expired)),
            TlsFault::Expired
        );
        assert_eq!(
            classify_tls_text(&text(CertificateError::ExpiredContext {
                time: rustls::pki_types::UnixTime::since_unix_epoch(Duration::from_secs(2_000)),
                not_after: rustls::pki_types::UnixTime::since_unix_epoch(Duration::from_secs(
                    1_000
                )),
            })),
            TlsFault::Expired
        );
        assert_eq!(
            classify_tls_text("TLS connect() failed: received fatal alert: HandshakeFailure"),
            TlsFault::Handshake
        );
    }

    #[test]
    fn only_tls_errors_are_tls_faults() {
        let refused = pingora::Error::explain(pingora::ErrorType::ConnectRefused, "refused");
        assert_eq!(tls_fault(&refused), None);
        let tls = pingora::Error::explain(
            pingora::ErrorType::TLSHandshakeFailure,
            text(CertificateError::UnknownIssuer),
        );
        assert_eq!(tls_fault(&tls), Some(TlsFault::UnknownIssuer));
    }

    #[test]
    fn the_peer_pins_the_address_and_verifies() {
        let up = Upstream::for_tests("https://a.example:8443/a2a");
        let peer = peer(&up);
        assert_eq!(peer.sni, "a.example");
        assert!(peer.options.verify_cert && peer.options.verify_hostname);
        assert_eq!(peer.options.alpn, ALPN::H1);
        assert_eq!(peer.options.read_timeout, Some(IDLE_READ_TIMEOUT));
        assert_eq!(peer.group_key, 0, "the platform's roots: the default group");
    }

    #[test]
    fn a_peer_with_its_own_roots_is_in_their_trust_group() {
        let mut up = Upstream::for_tests("https://a.example:8443/a2a");
        up.roots = Some(crate::state::Roots {
            pingora: std::sync::Arc::from(Vec::new().into_boxed_slice()),
            id: 42,
        });
        let peer = peer(&up);
        assert_eq!(peer.group_key, 42);
        assert!(peer.options.ca.is_some());
    }
}
