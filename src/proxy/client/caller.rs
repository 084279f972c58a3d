//! Waiting on the caller while the gateway waits on the agent (I/O): the one way every call
//! notices that its caller hung up, so no call outlives its caller.

use pingora::ErrorType;
use pingora::proxy::Session;

/// Resolves once the caller has hung up: the FIN after its request (pingora's
/// `ConnectionClosed`, as its own proxy loop detects it) or a reset. Otherwise it never resolves:
/// bytes after the request (the start of a pipelined request, which the gateway does not serve)
/// do not end this call, but pingora consumed one of them, so the connection takes no next
/// request.
///
/// The request body is always read before a call goes out, so the read is pingora's idle probe
/// and never takes body bytes.
pub(super) async fn hung_up(caller: &mut Session) {
    if let Err(e) = crate::seam::caller_idle(caller).await {
        if matches!(
            e.etype(),
            ErrorType::ConnectionClosed | ErrorType::ReadError
        ) {
            return;
        }
        caller.set_keepalive(None);
    }
    std::future::pending().await
}
