//! gRPC channels to an agent (no I/O until the first call on one): tonic's HTTP/2 client over
//! the gateway's own connector, which connects to the address the control plane checked (never
//! a second DNS lookup) and makes TLS with rustls on ring against the given roots, with full
//! certificate and host name verification and ALPN `h2`. The data plane keeps one channel per
//! upstream ([`super::Upstream::grpc`]); the control plane makes one per extended-card call.
//! Messages travel as bytes ([`Raw`]): the protobuf is made and read by
//! [`crate::translate::grpc`] with the generated types.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::{Buf, BufMut, Bytes};
use tokio::io::{AsyncRead, AsyncWrite};
use tonic::codec::{Codec, DecodeBuf, Decoder, EncodeBuf, Encoder};
use tonic::transport::{Channel, Endpoint};

use super::trust::TrustRoots;

/// TCP connect and TLS handshake, together.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(15);

/// How often an HTTP/2 PING checks an agent's connection, and how long its answer may take. Not
/// more often: gRPC servers (grpc-core, grpc-go) allow a PING without data every 5 minutes and
/// answer more with GOAWAY `too_many_pings`, which would close the streams on the connection.
pub const KEEP_ALIVE_INTERVAL: Duration = Duration::from_secs(310);
/// See [`KEEP_ALIVE_INTERVAL`].
pub const KEEP_ALIVE_TIMEOUT: Duration = Duration::from_secs(10);

/// Why a channel cannot be made (nothing was sent).
#[derive(Debug, thiserror::Error)]
pub enum ChannelError {
    /// The authority is no URI authority.
    #[error("the interface is no gRPC endpoint: {0}")]
    Authority(String),
    /// The TLS server name is no DNS name or IP address.
    #[error("TLS server name {0:?} is invalid")]
    ServerName(String),
    /// rustls refused the configuration.
    #[error("TLS configuration: {0}")]
    Tls(String),
}

/// Where a channel connects.
#[derive(Debug, Clone, Copy)]
pub struct Target<'a> {
    /// The checked address.
    pub addr: SocketAddr,
    /// `host[:port]` the requests name (`:authority`).
    pub authority: &'a str,
    /// TLS: the roots to trust and the server name to verify; `None`: plaintext.
    pub tls: Option<(&'a TrustRoots, &'a str)>,
}

/// A connection's stream, plaintext or TLS.
trait Io: AsyncRead + AsyncWrite + Send + Unpin {}
impl<T: AsyncRead + AsyncWrite + Send + Unpin> Io for T {}

/// A lazy channel to `target`: it connects on its first call, within [`CONNECT_TIMEOUT`].
pub fn channel(target: &Target<'_>) -> Result<Channel, ChannelError> {
    // The connector below makes the TLS (tonic's own would refuse an `https` endpoint without
    // its TLS feature): the endpoint is named `http`, the requests' origin says what it is.
    let scheme = if target.tls.is_some() {
        "https"
    } else {
        "http"
    };
    let authority = target.authority;
    let bad = |e: http::uri::InvalidUri| ChannelError::Authority(e.to_string());
    let origin: http::Uri = format!("{scheme}://{authority}").parse().map_err(bad)?;
    let endpoint = Endpoint::from_shared(format!("http://{authority}"))
        .map_err(|e| ChannelError::Authority(e.to_string()))?
        .origin(origin)
        .connect_timeout(CONNECT_TIMEOUT)
        // One HTTP/2 connection carries every call to the agent: a PING that goes unanswered
        // closes a connection that died silently (a node gone, a NAT that dropped the flow),
        // where every call on it would otherwise wait for its whole deadline.
        .http2_keep_alive_interval(KEEP_ALIVE_INTERVAL)
        .keep_alive_timeout(KEEP_ALIVE_TIMEOUT)
        .keep_alive_while_idle(true);
    let tls = match target.tls {
        None => None,
        Some((roots, sni)) => {
            let name = rustls::pki_types::ServerName::try_from(sni.to_owned())
                .map_err(|_| ChannelError::ServerName(sni.to_owned()))?;
            let provider = Arc::new(rustls::crypto::ring::default_provider());
            let mut config = rustls::ClientConfig::builder_with_provider(provider)
                .with_safe_default_protocol_versions()
                .map_err(|e| ChannelError::Tls(e.to_string()))?
                .with_root_certificates(roots.store())
                .with_no_client_auth();
            config.alpn_protocols = vec![b"h2".to_vec()];
            Some((tokio_rustls::TlsConnector::from(Arc::new(config)), name))
        }
    };
    let addr = target.addr;
    let connect = tower::service_fn(move |_: http::Uri| {
        let tls = tls.clone();
        async move {
            let tcp = tokio::net::TcpStream::connect(addr).await?;
            tcp.set_nodelay(true)?;
            let io: Box<dyn Io> = match tls {
                None => Box::new(tcp),
                Some((connector, name)) => Box::new(connector.connect(name, tcp).await?),
            };
            Ok::<_, std::io::Error>(hyper_util::rt::TokioIo::new(io))
        }
    });
    Ok(endpoint.connect_with_connector_lazy(connect))
}

/// Messages as bytes: tonic frames them, [`crate::translate::grpc`] makes and reads them.
#[derive(Debug, Clone, Copy, Default)]
pub struct Raw;

impl Codec for Raw {
    type Encode = Bytes;
    type Decode = Bytes;
    type Encoder = Raw;
    type Decoder = Raw;
    fn encoder(&mut self) -> Raw {
        Raw
    }
    fn decoder(&mut self) -> Raw {
        Raw
    }
}

impl Encoder for Raw {
    type Item = Bytes;
    type Error = tonic::Status;
    fn encode(&mut self, item: Bytes, dst: &mut EncodeBuf<'_>) -> Result<(), tonic::Status> {
        dst.put(item);
        Ok(())
    }
}

impl Decoder for Raw {
    type Item = Bytes;
    type Error = tonic::Status;
    fn decode(&mut self, src: &mut DecodeBuf<'_>) -> Result<Option<Bytes>, tonic::Status> {
        Ok(Some(src.copy_to_bytes(src.remaining())))
    }
}
